//! The log a provider's receipt keeps (`proofgraph log`): which receipt — the one the user
//! names, else the latest, the provider's own before a discovery receiver's — and its kept
//! log and failing tests, or why there is none to show.

use proofgraph_graph::graph::Output;
use proofgraph_graph::{ChangeName, ProviderId};

use crate::attest::envelope::TrustedKey;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::proof::receipt::{self, Artifact, ArtifactKind, Failures, Verified};
use crate::store::{Sha256, Store};

/// A receipt's kept log, and its failing tests when it keeps them.
#[derive(Debug)]
pub struct Kept {
    /// The receipt.
    pub receipt: Verified,
    /// Its `command-log` artifact.
    pub log: Artifact,
    /// That log's bytes.
    pub bytes: Vec<u8>,
    /// Its `test-failures` artifact and what it holds.
    pub failures: Option<(Sha256, Failures)>,
}

/// Why there is no log to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// `--receipt` is not a SHA-256.
    NotADigest(String),
    /// No verified receipt has that digest.
    Unverified(Sha256),
    /// The receipt named records another provider's run.
    OtherProvider(Sha256, ProviderId),
    /// The provider has no receipt yet.
    NoReceipt,
    /// Its adapter runs no command.
    NoLogKept(String, Sha256),
    /// The log is not in the store (or no longer intact).
    LogGone(Sha256),
    /// The failing tests are not in the store (or no longer intact).
    FailuresGone(Sha256),
}

impl Unavailable {
    /// The diagnostic that says so for provider `id` of change `change`, with its fix.
    pub fn diagnostic(&self, change: &ChangeName, id: &ProviderId) -> Diagnostic {
        let (code, message, fix) = match self {
            Unavailable::NotADigest(text) => (
                Code::UsageError,
                format!("`{text}` is not a receipt's SHA-256 (64 lowercase hex digits)"),
                format!(
                    "Pass the `sha256` of one of `{id}`'s receipts, as `prove --json` or `status --json` show it."
                ),
            ),
            Unavailable::Unverified(sha) => (
                Code::NoLog,
                format!("no verified receipt `{sha}` is in the store"),
                "Check the digest (`proofgraph receipt verify <sha256>` says why one does not count).".to_owned(),
            ),
            Unavailable::OtherProvider(sha, other) => (
                Code::NoLog,
                format!("receipt `{sha}` records a run of `{other}`, not of `{id}`"),
                format!("Run `proofgraph log {change} {other}`, or pass a receipt of `{id}`."),
            ),
            Unavailable::NoReceipt => (
                Code::NoLog,
                format!("`{id}` has no receipt yet, so no log is kept"),
                format!("Run `proofgraph prove {change}`; its log is kept with its receipt."),
            ),
            Unavailable::NoLogKept(adapter, sha) => (
                Code::NoLog,
                format!(
                    "the receipt of `{id}` keeps no log: its `{adapter}` adapter runs no command"
                ),
                format!("Run `proofgraph receipt verify {sha}` to see what it records."),
            ),
            Unavailable::LogGone(sha) => (
                Code::NoLog,
                format!(
                    "the log `{sha}` of `{id}`'s receipt is not in the store (or no longer intact)"
                ),
                format!(
                    "Run `proofgraph prove {change} --no-cache` to run `{id}` again and keep a new log."
                ),
            ),
            Unavailable::FailuresGone(sha) => (
                Code::NoLog,
                format!(
                    "the failing tests `{sha}` of `{id}`'s receipt are not in the store (or no longer intact)"
                ),
                format!(
                    "Run `proofgraph prove {change} --no-cache` to run `{id}` again and keep them anew."
                ),
            ),
        };
        Diagnostic::error(code, message).surface("log").fix(fix)
    }
}

/// The receipt whose log `log` shows: the one `named` (its SHA-256, which must be a
/// verified receipt of provider `id`), else the latest of `outputs` that verifies, the
/// provider's own first (a discovery producer also writes its receiver's, from the same
/// run, with the same log).
pub fn receipt(
    store: &Store,
    trusted: &[TrustedKey],
    change: &ChangeName,
    id: &ProviderId,
    outputs: &[Output],
    named: Option<&str>,
) -> Result<Verified, Unavailable> {
    let Some(text) = named else {
        return own_first(outputs, id)
            .into_iter()
            .find_map(|o| {
                let sha = store.latest(change, &o.under, &o.capability)?;
                receipt::read(store, &sha, trusted)
            })
            .ok_or(Unavailable::NoReceipt);
    };
    let sha = Sha256::parse(text.trim()).ok_or_else(|| Unavailable::NotADigest(text.to_owned()))?;
    let verified = receipt::read(store, &sha, trusted).ok_or(Unavailable::Unverified(sha))?;
    if verified.proof.provider != *id {
        return Err(Unavailable::OtherProvider(
            sha,
            verified.proof.provider.clone(),
        ));
    }
    Ok(verified)
}

/// `outputs` in the order their latest receipts are looked at: those stored under `id`
/// first, the others after, each group in its order.
pub fn own_first<'o>(outputs: &'o [Output], id: &ProviderId) -> Vec<&'o Output> {
    let mut ordered: Vec<&Output> = outputs.iter().collect();
    ordered.sort_by_key(|o| o.under != *id);
    ordered
}

/// The log `found` keeps, and its failing tests, both read from the store and checked
/// against their digests.
pub fn kept(store: &Store, found: Verified) -> Result<Kept, Unavailable> {
    let artifact = |kind| found.proof.artifacts.iter().find(|a| a.kind == kind);
    let Some(log) = artifact(ArtifactKind::CommandLog).cloned() else {
        return Err(Unavailable::NoLogKept(
            found.proof.adapter.to_string(),
            found.sha256,
        ));
    };
    let bytes = store
        .get(&log.sha256)
        .ok_or(Unavailable::LogGone(log.sha256))?;
    let failures = match artifact(ArtifactKind::TestFailures) {
        None => None,
        Some(a) => Some((
            a.sha256,
            store
                .get(&a.sha256)
                .and_then(|b| Failures::from_bytes(&b))
                .ok_or(Unavailable::FailuresGone(a.sha256))?,
        )),
    };
    Ok(Kept {
        receipt: found,
        log,
        bytes,
        failures,
    })
}

#[cfg(test)]
mod tests {
    use proofgraph_graph::CapabilityName;

    use super::*;

    fn pid(s: &str) -> ProviderId {
        ProviderId::parse(s).expect("a valid provider id")
    }

    fn output(under: &str) -> Output {
        Output {
            capability: CapabilityName::test(),
            under: pid(under),
        }
    }

    #[test]
    fn the_providers_own_receipt_is_looked_at_before_its_receivers() {
        let outputs = [output("discovery"), output("test"), output("other")];
        let order: Vec<String> = own_first(&outputs, &pid("test"))
            .iter()
            .map(|o| o.under.to_string())
            .collect();
        assert_eq!(order, ["test", "discovery", "other"]);
    }

    #[test]
    fn a_named_receipt_must_be_a_digest_in_the_store_and_a_provider_without_one_has_none() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Store::open(dir.path()).expect("a store");
        let change = ChangeName::parse("c").expect("a valid change name");
        let id = pid("test");
        let outputs = [output("test")];
        let ask = |named| receipt(&store, &[], &change, &id, &outputs, named).map(|_| ());
        assert_eq!(
            ask(Some("nope")),
            Err(Unavailable::NotADigest("nope".to_owned()))
        );
        let hex = "ab".repeat(32);
        let sha = Sha256::parse(&hex).expect("a digest");
        let padded = format!(" {hex}\n");
        assert_eq!(ask(Some(&padded)), Err(Unavailable::Unverified(sha)));
        assert_eq!(ask(None), Err(Unavailable::NoReceipt));
    }

    #[test]
    fn each_reason_names_the_provider_and_a_fix() {
        let change = ChangeName::parse("c").expect("a valid change name");
        let id = pid("test");
        let sha = Sha256::from_bytes([1; 32]);
        let all = [
            Unavailable::NotADigest("x".to_owned()),
            Unavailable::Unverified(sha),
            Unavailable::OtherProvider(sha, pid("lint")),
            Unavailable::NoReceipt,
            Unavailable::NoLogKept("external".to_owned(), sha),
            Unavailable::LogGone(sha),
            Unavailable::FailuresGone(sha),
        ];
        for reason in &all {
            let d = reason.diagnostic(&change, &id);
            assert!(d.is_error(), "{reason:?}");
            let text = format!("{} {}", d.message, d.fix.clone().unwrap_or_default());
            assert!(
                text.contains("`test`") || text.contains("`x`") || text.contains(&sha.to_hex()),
                "{reason:?}: {text}"
            );
            assert!(d.fix.is_some(), "{reason:?}");
        }
        let usage = all[0].diagnostic(&change, &id);
        assert_eq!(usage.code, Code::UsageError);
        assert!(
            all[1..]
                .iter()
                .all(|r| r.diagnostic(&change, &id).code == Code::NoLog)
        );
        assert!(
            all[2]
                .diagnostic(&change, &id)
                .fix
                .is_some_and(|f| f.contains("proofgraph log c lint"))
        );
    }
}
