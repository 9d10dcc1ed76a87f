//! `proofgraph log <change> <provider> [--receipt <sha256>]`: the log a provider's command
//! wrote, as its receipt keeps it in the store (redacted, with paths relative to the
//! repository; a log longer than `logs.keepBytes` as its head and tail, with the whole's size
//! and SHA-256) — by default the one of its latest receipt, its own before a discovery
//! receiver's.

use proofgraph_graph::ProviderId;
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::{self, ArtifactKind, Verified};
use crate::session::context::{Context, RootOutput};
use crate::store::Sha256;

/// The payload of `log`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LogPayload {
    /// The change.
    pub change: Option<String>,
    /// The provider.
    pub provider: Option<String>,
    /// The receipt whose log this is (its envelope's SHA-256).
    pub receipt: Option<String>,
    /// That receipt's outcome.
    pub outcome: Option<receipt::Outcome>,
    /// When the run it records finished.
    pub finished_at: Option<String>,
    /// The log's SHA-256 in the store.
    pub sha256: Option<String>,
    /// The log, as text (invalid UTF-8 shown as U+FFFD).
    pub log: Option<String>,
    /// Its size in bytes.
    pub bytes: Option<u64>,
    /// When the log was longer than `logs.keepBytes`, so that `log` is its head and tail:
    /// the whole log's size and SHA-256, as the receipt records them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole: Option<receipt::Whole>,
    /// The failing tests and their messages, when the receipt keeps them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<receipt::Failures>,
    /// Their SHA-256 in the store (the receipt's `test-failures` artifact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures_sha256: Option<String>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for LogPayload {
    fn raw(&self) -> bool {
        true
    }

    fn human(&self, out: &mut String) {
        if let Some(log) = &self.log {
            out.push_str(log);
            if !log.is_empty() && !log.ends_with('\n') {
                out.push('\n');
            }
        }
        if let Some(failures) = self.failures.as_ref().filter(|f| !f.is_empty()) {
            out.push_str("failing (as the report of this run attached it to each test):\n");
            crate::session::failures::show(out, failures);
        }
    }
}

fn failed(code: Code, message: String, fix: String) -> Report<LogPayload> {
    Report::failed(
        vec![Diagnostic::error(code, message).surface("log").fix(fix)],
        Verdict::Invalid,
    )
}

/// Runs `log`.
pub fn run(
    ctx: &Context,
    change: &str,
    provider: &str,
    receipt: Option<&str>,
) -> Report<LogPayload> {
    // The change and its store, nothing observed: a log is found by name, not by
    // fingerprint, so the repositories' files need not be read.
    let loaded = match crate::session::load::load(ctx, change) {
        Ok(loaded) => loaded,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let (store, trusted) = match crate::session::evaluate::checked_store(ctx, &loaded) {
        Ok(found) => found,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let graph = &loaded.prepared.graph;
    let Some((id, p)) = ProviderId::parse(provider).ok().and_then(|id| {
        let node = graph.provider(&id)?;
        Some((id, graph.node(node).provider()?))
    }) else {
        let known: Vec<String> = graph.providers().map(|(id, _, _)| id.to_string()).collect();
        return failed(
            Code::UnknownProvider,
            format!("change `{change}` has no provider `{provider}`"),
            format!("Use one of: {}.", known.join(", ")),
        );
    };
    let name = &loaded.change.name;
    let found: Option<Verified> = match receipt {
        Some(text) => {
            let Some(sha) = Sha256::parse(text.trim()) else {
                return failed(
                    Code::UsageError,
                    format!("`{text}` is not a receipt's SHA-256 (64 lowercase hex digits)"),
                    format!(
                        "Pass the `sha256` of one of `{id}`'s receipts, as `prove --json` or `status --json` show it."
                    ),
                );
            };
            let Some(verified) = receipt::read(&store, &sha, &trusted) else {
                return failed(
                    Code::NoLog,
                    format!("no verified receipt `{sha}` is in the store"),
                    "Check the digest (`proofgraph receipt verify <sha256>` says why one does not count).".to_owned(),
                );
            };
            if verified.proof.provider != id {
                return failed(
                    Code::NoLog,
                    format!(
                        "receipt `{sha}` records a run of `{}`, not of `{id}`",
                        verified.proof.provider
                    ),
                    format!(
                        "Run `proofgraph log {name} {}`, or pass a receipt of `{id}`.",
                        verified.proof.provider
                    ),
                );
            }
            Some(verified)
        }
        // Its own receipt first: a discovery producer also writes its receiver's, from the
        // same run, with the same log.
        None => {
            let mut outputs: Vec<_> = p.outputs.iter().collect();
            outputs.sort_by_key(|o| o.under != id);
            outputs.iter().find_map(|o| {
                let sha = store.latest(name, &o.under, &o.capability)?;
                receipt::read(&store, &sha, &trusted)
            })
        }
    };
    let Some(found) = found else {
        return failed(
            Code::NoLog,
            format!("`{id}` has no receipt yet, so no log is kept"),
            format!("Run `proofgraph prove {name}`; its log is kept with its receipt."),
        );
    };
    let Some(artifact) = found
        .proof
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::CommandLog)
    else {
        return failed(
            Code::NoLog,
            format!(
                "the receipt of `{id}` keeps no log: its `{}` adapter runs no command",
                found.proof.adapter
            ),
            format!(
                "Run `proofgraph receipt verify {}` to see what it records.",
                found.sha256
            ),
        );
    };
    let Some(bytes) = store.get(&artifact.sha256) else {
        return failed(
            Code::NoLog,
            format!(
                "the log `{}` of `{id}`'s receipt is not in the store (or no longer intact)",
                artifact.sha256
            ),
            format!(
                "Run `proofgraph prove {name} --no-cache` to run `{id}` again and keep a new log."
            ),
        );
    };
    // The failing tests' messages, bound by the receipt's digest like the log.
    let kept_failures = found
        .proof
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::TestFailures);
    let failures = match kept_failures {
        None => None,
        Some(artifact) => {
            match store
                .get(&artifact.sha256)
                .and_then(|b| receipt::Failures::from_bytes(&b))
            {
                Some(failures) => Some(failures),
                None => {
                    return failed(
                        Code::NoLog,
                        format!(
                            "the failing tests `{}` of `{id}`'s receipt are not in the store (or no longer intact)",
                            artifact.sha256
                        ),
                        format!(
                            "Run `proofgraph prove {name} --no-cache` to run `{id}` again and keep them anew."
                        ),
                    );
                }
            }
        }
    };
    Report {
        payload: Some(LogPayload {
            change: Some(name.to_string()),
            provider: Some(id.to_string()),
            receipt: Some(found.sha256.to_hex()),
            outcome: Some(found.proof.outcome),
            finished_at: Some(found.proof.finished_at.clone()),
            sha256: Some(artifact.sha256.to_hex()),
            bytes: Some(bytes.len() as u64),
            whole: artifact.whole,
            log: Some(String::from_utf8_lossy(&bytes).into_owned()),
            failures_sha256: kept_failures.map(|a| a.sha256.to_hex()),
            failures,
            root: Some(loaded.root.clone()),
        }),
        status: Vec::new(),
        verdict: Verdict::Success,
    }
}
