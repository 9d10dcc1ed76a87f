//! A run's account of every provider, besides what the executor ran (`prove`): the reused
//! ones with their verified receipts, the discovery receivers whose receipt a producer's run
//! wrote, the wanted ones that never ran (interrupted before the start, inputs that changed
//! twice), which show the end of their log; then the requirements' reasons for what this run
//! skipped, the summary's counts and the verdict.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;

use proofgraph_graph::{NodeId, ProviderId, SealedGraph};

use super::events::{Mark, ProviderAction, ProviderRun, ReceiptView};
use crate::attest::envelope::TrustedKey;
use crate::decide::status::{self, Requirement};
use crate::present::exit::Verdict;
use crate::proof::receipt::Outcome;
use crate::store::{Sha256, Store};

/// The reason a provider reused from the remote cache gets.
const FROM_REMOTE: &str = "its receipt came from the remote cache";

/// A provider with no execution and nothing else to say: `action` and why.
pub fn row(provider: String, action: ProviderAction, reason: Option<String>) -> ProviderRun {
    ProviderRun {
        provider,
        action,
        reason,
        duration_ms: None,
        receipts: Vec::new(),
        log: None,
        log_tail: Vec::new(),
        failures: Default::default(),
        result: None,
    }
}

/// The providers that reuse a current receipt, with the receipts that still verify, and
/// those among them whose receipt does not record its executions (an older proofgraph's).
#[derive(Debug, Default)]
pub struct Reused {
    /// One row per reused provider.
    pub runs: Vec<ProviderRun>,
    /// The providers whose receipt records no executions.
    pub unrecorded: Vec<ProviderId>,
}

/// The rows of the providers `reused` names (provider → its current receipts): a receipt
/// that no longer verifies is left out; one `pulled` from the remote cache says so.
pub fn reused(
    store: &Store,
    trusted: &[TrustedKey],
    pulled: &[Sha256],
    reused: &BTreeMap<ProviderId, Vec<Sha256>>,
) -> Reused {
    let mut out = Reused::default();
    for (id, receipts) in reused {
        let verified: Vec<_> = receipts
            .iter()
            .filter_map(|sha| crate::proof::receipt::read(store, sha, trusted))
            .collect();
        if verified
            .iter()
            .any(crate::decide::reuse::executions_unrecorded)
        {
            out.unrecorded.push(id.clone());
        }
        let from_remote = receipts.iter().any(|sha| pulled.contains(sha));
        let mut run = row(
            id.to_string(),
            ProviderAction::Reused,
            from_remote.then(|| FROM_REMOTE.to_owned()),
        );
        run.receipts = verified
            .into_iter()
            .map(|v| ReceiptView {
                receipt: v.proof.receipt.clone(),
                capability: v.proof.capability.clone(),
                outcome: v.proof.outcome,
                reason: v.proof.reason.clone(),
                sha256: v.sha256,
            })
            .collect();
        out.runs.push(run);
    }
    out
}

/// One row per wanted provider, none of which ran: `action`, because of `reason`.
pub fn not_run(
    graph: &SealedGraph,
    wanted: &BTreeSet<NodeId>,
    action: ProviderAction,
    reason: &str,
) -> Vec<ProviderRun> {
    wanted
        .iter()
        .map(|id| {
            row(
                graph.node(*id).name.clone(),
                action,
                Some(reason.to_owned()),
            )
        })
        .collect()
}

/// Why nothing ran when a signal came before the run started.
pub const INTERRUPTED_BEFORE_START: &str = "the run was interrupted before it started";

/// Why nothing ran when the inputs changed under the sandbox on both attempts.
pub const INPUTS_CHANGED_TWICE: &str = "error: its inputs changed while its sandbox was made, twice; nothing was judged against a fingerprint they no longer have";

/// The discovery receivers: never run on their own, their receipt comes from their
/// producers' run (when that ran; when it was reused, so was the receiver, which is among
/// `reused` and gets no row here). Each gets the receipts under its name that `providers`
/// (the rows so far) wrote.
pub fn produced(
    graph: &SealedGraph,
    reused: &BTreeMap<ProviderId, Vec<Sha256>>,
    providers: &[ProviderRun],
) -> Vec<ProviderRun> {
    let mut out = Vec::new();
    for (id, node, _) in graph.providers() {
        let producers: Vec<String> = graph
            .producers_of(node)
            .into_iter()
            .map(|n| graph.node(n).name.clone())
            .collect();
        if producers.is_empty() || reused.contains_key(id) {
            continue;
        }
        let via: Vec<String> = producers.iter().map(|p| format!("`{p}`")).collect();
        let mut run = row(
            id.to_string(),
            ProviderAction::Produced,
            Some(format!(
                "its receipt comes from the run of {}",
                via.join(", ")
            )),
        );
        run.receipts = providers
            .iter()
            .filter(|run| producers.contains(&run.provider))
            .flat_map(|run| run.receipts.iter())
            .filter(|r| r.receipt == *id)
            .cloned()
            .collect();
        out.push(run);
    }
    out
}

/// Whether a row's log is what a person reads first about it: it ran, and not every
/// receipt passed.
pub fn shows_log(run: &ProviderRun) -> bool {
    run.action == ProviderAction::Ran && !run.receipts.iter().all(|r| r.outcome == Outcome::Pass)
}

/// A requirement none of whose providers got to run in this run (blocked, interrupted)
/// says why this run skipped them — the first provider's reason — not what an earlier
/// receipt was for. A passed requirement keeps its reasons.
pub fn explain_skipped(requirements: &mut [Requirement], providers: &[ProviderRun]) {
    for r in requirements {
        if r.state == status::State::Passed || r.evidence.is_empty() {
            continue;
        }
        let skipped: Option<Vec<&str>> = r
            .evidence
            .iter()
            .map(|ev| {
                providers
                    .iter()
                    .find(|p| p.provider == ev.provider)
                    .filter(|p| {
                        matches!(
                            p.action,
                            ProviderAction::Blocked | ProviderAction::Interrupted
                        )
                    })
                    .and_then(|p| p.reason.as_deref())
            })
            .collect();
        if let Some(first) = skipped.and_then(|reasons| reasons.first().copied()) {
            r.reason = Some(first.to_owned());
            for ev in &mut r.evidence {
                ev.reason = Some(first.to_owned());
            }
        }
    }
}

/// What the remote cache did during a run, for its summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Receipts pulled before the run.
    pub pulled: usize,
    /// When uploads ran: receipts pushed and receipts that could not be.
    pub pushed: Option<(usize, usize)>,
}

/// The summary's counts: the requirements per state, what the remote cache did (pulled
/// only when something was, pushed when uploads ran, push_failed when some failed), and the
/// providers that ran and were reused.
pub fn summary(
    requirements: &[Requirement],
    providers: &[ProviderRun],
    traffic: Traffic,
) -> BTreeMap<&'static str, usize> {
    let mut summary = status::summary(requirements);
    if traffic.pulled > 0 {
        summary.insert("pulled", traffic.pulled);
    }
    if let Some((pushed, failed)) = traffic.pushed {
        summary.insert("pushed", pushed);
        if failed > 0 {
            summary.insert("push_failed", failed);
        }
    }
    let count = |action| providers.iter().filter(|p| p.action == action).count();
    summary.insert("ran", count(ProviderAction::Ran));
    summary.insert("reused", count(ProviderAction::Reused));
    summary
}

/// How the run ended, as the verdict needs it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ending {
    /// A signal stopped it (or came before it started).
    pub interrupted: bool,
    /// The inputs changed under the sandbox on every attempt: nothing was judged.
    pub inputs_changed: bool,
    /// Only shard `i` of `n` ran.
    pub shard: Option<(usize, NonZeroUsize)>,
}

/// The run's verdict: interrupted; else invalid when a command could not start (a
/// configuration problem, not a result); else failed when the inputs changed twice or a
/// receipt failed; else a shard answers for its own providers (the others are other jobs'
/// to run, and `status` after every shard gives the change's verdict); else the
/// requirements' verdict.
pub fn verdict(
    graph: &SealedGraph,
    providers: &[ProviderRun],
    requirements: &[Requirement],
    ending: Ending,
) -> Verdict {
    if ending.interrupted {
        return Verdict::Interrupted;
    }
    if providers
        .iter()
        .any(|p| p.result == Some(Mark::CouldNotStart))
    {
        return Verdict::Invalid;
    }
    let failed = providers
        .iter()
        .flat_map(|p| &p.receipts)
        .any(|r| matches!(r.outcome, Outcome::Fail | Outcome::Error));
    if ending.inputs_changed || failed {
        return Verdict::Failed;
    }
    let Some((i, n)) = ending.shard else {
        return status::verdict(requirements);
    };
    let mine: BTreeSet<String> = proofgraph_graph::schedule::shard(graph, i, n)
        .into_iter()
        .map(|id| graph.node(id).name.clone())
        .collect();
    let unproven = requirements
        .iter()
        .flat_map(|r| &r.evidence)
        .filter(|ev| mine.contains(&ev.provider))
        .any(|ev| ev.state != status::State::Passed);
    if unproven {
        Verdict::Unproven
    } else {
        Verdict::Success
    }
}

#[cfg(test)]
mod tests;
