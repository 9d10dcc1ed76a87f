//! What the run leaves: once the loop ends, every wanted provider that got no result is
//! accounted for. One that never started because its service was never ready gets an
//! error receipt (that was observed); one blocked by a dependency that did not pass, or
//! stopped by an interrupt, gets none — only a line saying why.

use proofgraph_graph::schedule::{Scheduler, State};
use proofgraph_graph::{NodeId, SealedGraph};

use super::ended::Finished;
use super::events::{ProviderAction, ProviderRun};
use super::scheduling::Leftover;
use super::shell::Shell;

impl Shell<'_, '_> {
    /// Accounts for each wanted provider left without a result (`leftovers`, from the
    /// core): providers never started because a probe failed get an error receipt; those
    /// blocked by a failed dependency or an interrupt get none.
    pub(super) fn conclude(
        &mut self,
        leftovers: Vec<(NodeId, Leftover)>,
        scheduler: &Scheduler<'_>,
    ) {
        let graph = self.plan.graph;
        for (id, left) in leftovers {
            match left {
                Leftover::Error(reason) => {
                    if let (_, Some(persist)) = self.judged(id, &Finished::error_now(reason)) {
                        // After the loop: nothing is left to halt.
                        let _ = self.record(*persist, false);
                    }
                }
                Leftover::Interrupted => {
                    let run = not_run(
                        graph,
                        id,
                        ProviderAction::Interrupted,
                        "the run was interrupted before it finished",
                    );
                    self.results.insert(id, run);
                }
                Leftover::Blocked => {
                    let reason = blocked_reason(graph, scheduler, id);
                    let run = not_run(graph, id, ProviderAction::Blocked, &reason);
                    self.results.insert(id, run);
                }
            }
        }
    }
}

/// A provider that got no result, and why.
fn not_run(graph: &SealedGraph, id: NodeId, action: ProviderAction, reason: &str) -> ProviderRun {
    super::account::row(graph.node(id).name.clone(), action, Some(reason.to_owned()))
}

/// Why a provider never started: the dependencies that did not pass, or the stop after a
/// failure elsewhere.
fn blocked_reason(graph: &SealedGraph, scheduler: &Scheduler<'_>, id: NodeId) -> String {
    let failed: Vec<String> = graph
        .incoming(id)
        .into_iter()
        .filter(|(from, _)| matches!(scheduler.state(*from), State::Failed | State::Blocked))
        .map(|(from, _)| format!("`{}`", graph.node(from).name))
        .collect();
    if !failed.is_empty() {
        return format!(
            "skipped: it depends on {}, which did not pass",
            failed.join(", ")
        );
    }
    // Fail-fast: the run stopped at the first failure, which this provider does not need.
    let first = graph
        .order()
        .iter()
        .find(|n| scheduler.state(**n) == State::Failed)
        .map(|n| format!("`{}`", graph.node(*n).name));
    match first {
        Some(first) => format!("skipped: after {first} failed (--keep-going runs them)"),
        None => "skipped: the run stopped after a failure (--keep-going runs them)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::num::NonZeroUsize;

    use proofgraph_graph::Adapter;
    use proofgraph_graph::schedule::{Action, Step};

    use super::*;
    use crate::run::testing::{at, pid, provider, seal};

    #[test]
    fn a_provider_left_over_says_which_dependency_did_not_pass_or_that_the_run_stopped() {
        // `b` needs `a`; `c` needs nothing but waits for the one slot.
        let a = provider("a", Adapter::Command, &["a"]);
        let mut b = provider("b", Adapter::Command, &["b"]);
        b.depends_on = Some(vec![at(pid("a"))]);
        let c = provider("c", Adapter::Command, &["c"]);
        let graph = seal(vec![a, b, c], Vec::new());
        let id = |name: &str| graph.provider(&pid(name)).expect("provider");
        let wanted: BTreeSet<NodeId> = [id("a"), id("b"), id("c")].into();
        let mut scheduler = Scheduler::new(&graph, NonZeroUsize::MIN, &wanted);
        assert_eq!(scheduler.poll(), [Action::Start(id("a"))]);
        scheduler.complete(id("a"), Step::Failed);
        scheduler.halt();
        assert_eq!(
            blocked_reason(&graph, &scheduler, id("b")),
            "skipped: it depends on `a`, which did not pass"
        );
        assert_eq!(
            blocked_reason(&graph, &scheduler, id("c")),
            "skipped: after `a` failed (--keep-going runs them)"
        );
        let run = not_run(
            &graph,
            id("b"),
            ProviderAction::Blocked,
            "not run: `a` did not pass",
        );
        assert_eq!(run.provider, "b");
        assert_eq!(run.action, ProviderAction::Blocked);
        assert_eq!(run.reason.as_deref(), Some("not run: `a` did not pass"));
        assert_eq!((run.duration_ms, run.receipts.len()), (None, 0));
    }
}
