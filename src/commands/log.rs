//! `proofgraph log <change> <provider> [--receipt <sha256>]`: the log a provider's command
//! wrote, as its receipt keeps it in the store (redacted, with paths relative to the
//! repository; a log longer than `logs.keepBytes` as its head and tail, with the whole's size
//! and SHA-256) — by default the one of its latest receipt, its own before a discovery
//! receiver's.

use serde::Serialize;

use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt;
use crate::session::context::{Context, RootOutput};
use crate::session::provider_log;

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
    // The same refusal as every command's, but aimed at `log`.
    let (id, node) = match crate::session::provider::find(graph, change, provider) {
        Ok(found) => found,
        Err(unknown) => return Report::failed(vec![unknown.surface("log")], Verdict::Invalid),
    };
    let p = graph
        .node(node)
        .provider()
        .expect("provider ids map to provider nodes");
    let name = &loaded.change.name;
    let kept = provider_log::receipt(&store, &trusted, name, &id, &p.outputs, receipt)
        .and_then(|found| provider_log::kept(&store, found));
    let kept = match kept {
        Ok(kept) => kept,
        Err(why) => return Report::failed(vec![why.diagnostic(name, &id)], Verdict::Invalid),
    };
    let (failures_sha256, failures) = kept.failures.unzip();
    Report {
        payload: Some(LogPayload {
            change: Some(name.to_string()),
            provider: Some(id.to_string()),
            receipt: Some(kept.receipt.sha256.to_hex()),
            outcome: Some(kept.receipt.proof.outcome),
            finished_at: Some(kept.receipt.proof.finished_at.clone()),
            sha256: Some(kept.log.sha256.to_hex()),
            bytes: Some(kept.bytes.len() as u64),
            whole: kept.log.whole,
            log: Some(String::from_utf8_lossy(&kept.bytes).into_owned()),
            failures_sha256: failures_sha256.map(|sha| sha.to_hex()),
            failures,
            root: Some(loaded.root.clone()),
        }),
        status: Vec::new(),
        verdict: Verdict::Success,
    }
}
