//! Unit tests of [`super`].

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use proofgraph_graph::{Adapter, CapabilityName};

use super::*;
use crate::attest::envelope::TrustedKey;
use crate::decide::judge::{self, ReportFile};
use crate::proof::receipt::RunIsolation;
use crate::proof::receipt::{Exit, Outcome};
use crate::run::ended::Finished;
use crate::run::events::{ProviderAction, ProviderRun};
use crate::run::kept_evidence::Kept;
use crate::run::testing::{discovery_pair, node, observed, pid, provider, seal};
use crate::store::Sha256;

const SECRET: &str = "a-long-secret-value";
const TAP: &[u8] = b"TAP version 13\n1..2\nok 1 - a\nok 2 - b\n";

/// `unit` (a command) and the producer `test-web` with its receiver `discovery-web`.
fn graph() -> SealedGraph {
    let [producer, receiver] = discovery_pair(None);
    let unit = provider("unit", Adapter::Command, &["true"]);
    seal(vec![unit, producer, receiver], Vec::new())
}

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
    key: ed25519_dalek::SigningKey,
    graph: SealedGraph,
    observed: Observed,
    fingerprints: Fingerprints,
    secrets: Secrets,
    change: ChangeName,
}

impl Fixture {
    fn new(secret: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let graph = graph();
        let observed = observed(&graph);
        let fingerprints = graph.fingerprints(&observed.world).expect("fingerprints");
        Fixture {
            dir,
            store,
            key: crate::attest::keys::generate_signing_key().expect("key"),
            graph,
            observed,
            fingerprints,
            secrets: Secrets::new([secret.as_bytes().to_vec()]),
            change: ChangeName::parse("c").expect("a change name"),
        }
    }

    fn writer(&self) -> Writer<'_> {
        Writer {
            graph: &self.graph,
            change: &self.change,
            observed: &self.observed,
            fingerprints: &self.fingerprints,
            store: &self.store,
            key: &self.key,
            mode: SandboxMode::Worktree,
            run_id: "run9",
            secrets: &self.secrets,
            upload: None,
            trees: None,
        }
    }

    /// `provider`'s execution ended with `code` and `report`, its log holding `log`.
    fn persist(&self, provider: &str, code: i32, report: ReportFile, log: &str) -> Persist {
        let p = node(&self.graph, provider);
        let ended = Ended::Exited(Exit {
            code: Some(code),
            signal: None,
            timed_out: false,
        });
        let judged = judge::judge(p, &self.graph, &ended, &report, 1_000);
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        Persist {
            id: self.graph.provider(&pid(provider)).expect("node"),
            finished: Finished::ran(ended, PathBuf::from("/l"), Duration::from_secs(1), wall),
            judged: self.secrets.redact(judged),
            kept: vec![Kept::new(
                ArtifactKind::CommandLog,
                None,
                log.as_bytes().to_vec(),
            )],
            isolation: RunIsolation::Namespaces,
            run: ProviderRun {
                provider: provider.into(),
                action: ProviderAction::Ran,
                reason: None,
                duration_ms: Some(1_000),
                receipts: Vec::new(),
                log: None,
                log_tail: Vec::new(),
                failures: Default::default(),
                result: None,
            },
        }
    }

    fn read(&self, sha: &Sha256) -> std::sync::Arc<Proof> {
        let trusted = [TrustedKey::new(self.key.verifying_key())];
        receipt::read(&self.store, sha, &trusted)
            .expect("a verified receipt")
            .proof
    }
}

#[test]
fn a_pass_is_signed_and_found_by_its_fingerprint_with_its_log_redacted() {
    let f = Fixture::new(SECRET);
    let done = f.writer().persist(f.persist(
        "unit",
        0,
        ReportFile::NotExpected,
        &format!("token={SECRET}\n"),
    ));
    assert!(done.written, "{:?}", done.diagnostics);
    assert!(done.diagnostics.is_empty(), "{:?}", done.diagnostics);
    let [view] = done.run.receipts.as_slice() else {
        panic!("one receipt: {:?}", done.run.receipts);
    };
    assert_eq!(
        (
            view.receipt.as_str(),
            view.capability.as_str(),
            view.outcome
        ),
        ("unit", "integration", Outcome::Pass)
    );
    let fp = f.fingerprints.providers[&pid("unit")];
    let integration = CapabilityName::parse("integration").expect("a capability");
    let action = Store::action_key(&fp, &pid("unit"), &integration);
    assert_eq!(f.store.action(&action), Some(view.sha256));
    assert_eq!(
        f.store.latest(&f.change, &pid("unit"), &integration),
        Some(view.sha256)
    );
    let proof = f.read(&view.sha256);
    assert_eq!(proof.fingerprint, fp);
    assert_eq!(
        (
            proof.sandbox.as_str(),
            proof.isolation.as_str(),
            proof.network.as_str()
        ),
        ("worktree", "namespaces", "private")
    );
    assert_eq!((proof.run_id.as_str(), proof.duration_ms), ("run9", 1_000));
    assert_eq!(proof.started_at, "1970-01-01T00:16:39.000Z");
    assert_eq!(proof.exit.as_ref().and_then(|e| e.code), Some(0));
    let [log] = proof.artifacts.as_slice() else {
        panic!("one artifact: {:?}", proof.artifacts);
    };
    assert_eq!(log.kind, ArtifactKind::CommandLog);
    let stored = f.store.get(&log.sha256).expect("the log is stored");
    let stored = String::from_utf8(stored).expect("utf-8");
    assert!(!stored.contains(SECRET), "{stored}");
    assert!(stored.starts_with("token="), "{stored}");
}

#[test]
fn a_receivers_receipt_is_bound_to_the_receivers_fingerprint() {
    let f = Fixture::new(SECRET);
    let report = ReportFile::Bytes("web.tap".into(), TAP.to_vec());
    let done = f.writer().persist(f.persist("test-web", 0, report, "ok"));
    assert!(done.written, "{:?}", done.diagnostics);
    let by_receipt: BTreeMap<&str, &ReceiptView> = done
        .run
        .receipts
        .iter()
        .map(|v| (v.receipt.as_str(), v))
        .collect();
    assert_eq!(
        by_receipt.keys().copied().collect::<Vec<_>>(),
        ["discovery-web", "test-web"]
    );
    for (under, capability) in [("test-web", "test"), ("discovery-web", "discovery")] {
        let view = by_receipt[under];
        let fp = f.fingerprints.providers[&pid(under)];
        assert_eq!(f.read(&view.sha256).fingerprint, fp, "{under}");
        assert_eq!(f.read(&view.sha256).provider, pid("test-web"), "{under}");
        let capability = CapabilityName::parse(capability).expect("a capability");
        let action = Store::action_key(&fp, &pid(under), &capability);
        assert_eq!(f.store.action(&action), Some(view.sha256), "{under}");
    }
}

#[test]
fn a_secret_that_is_an_outcome_name_leaves_the_result_unrecorded() {
    // Without a report a discovery provider is inconclusive, and "inconclusive" is
    // the secret: the receipt cannot hold its own outcome, so none is written.
    let f = Fixture::new("inconclusive");
    let done =
        f.writer()
            .persist(f.persist("test-web", 0, ReportFile::Missing("web.tap".into()), ""));
    assert!(!done.written);
    assert!(done.run.receipts.is_empty());
    let codes: Vec<Code> = done.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, [Code::SecretTooShort, Code::SecretTooShort]);
}

#[test]
fn a_store_that_cannot_take_receipts_says_so_and_records_nothing() {
    let f = Fixture::new(SECRET);
    // Where every write goes first is no longer a directory.
    let tmp = f.dir.path().join(".proofgraph/tmp");
    fs_err::remove_dir_all(&tmp).expect("remove tmp");
    fs_err::write(&tmp, b"").expect("a file in its place");
    let done = f
        .writer()
        .persist(f.persist("unit", 1, ReportFile::NotExpected, "log"));
    assert!(!done.written);
    assert!(done.run.receipts.is_empty());
    let codes: Vec<Code> = done.diagnostics.iter().map(|d| d.code).collect();
    // The log that could not be kept, then the input listing (without which no receipt
    // is written, rather than one that names no inputs).
    assert_eq!(codes, [Code::StoreUnusable, Code::StoreUnusable]);
    assert!(
        done.diagnostics[1].message.starts_with(
            "the input listing of `unit` could not be stored, so its result was not recorded: failed to "
        ),
        "{}",
        done.diagnostics[1].message
    );
    assert!(
        !f.dir.path().join(".proofgraph/refs/c").exists(),
        "no entry points at a receipt"
    );
}
