//! `proofgraph plan <change>`: a dry run. Every node of the graph with its
//! kind, resources, dependencies and fingerprint, in the order it would run
//! with `--jobs N`. No process is started.

pub mod refs;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::num::NonZeroUsize;

use proofgraph_graph::schedule::{Action, Scheduler, Step};
use proofgraph_graph::{NodeId, NodeKind, SealedGraph};
use serde::Serialize;

pub use crate::decide::action::PlanAction;

use crate::decide::action::{Situation, decide};
use crate::observe::world::Observed;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};

/// Options of `plan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOptions {
    /// The change.
    pub change: String,
    /// How many providers may run at once (default: the CPU count).
    pub jobs: Option<NonZeroUsize>,
    /// `--cache <policy>`.
    pub cache: Option<String>,
    /// `--executor`: where providers would run.
    pub executor: ExecutorChoice,
    /// `--remote-jobs`: remote actions in flight at once.
    pub remote_jobs: Option<NonZeroUsize>,
}

pub use crate::decide::placement::ExecutorChoice;

/// The executor a plan assumes, when one other than local is asked for or configured.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutorView {
    /// `--executor`: `local`, `remote` or `auto`.
    pub choice: ExecutorChoice,
    /// The engine (`executor.remote`), when configured.
    pub remote: Option<String>,
    /// Remote actions in flight at once, when anything can run remotely.
    pub remote_jobs: Option<usize>,
}

/// Where a provider would run, and why not remotely.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementView {
    /// `local` or `remote`.
    pub runs: &'static str,
    /// Whether it could run remotely (under `--executor auto`).
    pub eligible: bool,
    /// Why it runs locally; `None` when remote.
    pub reason: Option<String>,
}

/// An edge into a node.
#[derive(Debug, Clone, Serialize)]
pub struct After {
    /// The node that comes first.
    pub node: String,
    /// Why.
    pub edge: proofgraph_graph::EdgeKind,
}

/// A provider's input files.
#[derive(Debug, Clone, Serialize)]
pub struct InputsView {
    /// How many files it reads.
    pub files: u64,
    /// How many of them git does not track (and does not ignore).
    pub untracked: u64,
    /// Their digest.
    pub digest: String,
}

/// A receipt a provider's run writes.
#[derive(Debug, Clone, Serialize)]
pub struct OutputView {
    /// The capability.
    pub capability: String,
    /// The provider name the receipt is stored under.
    pub receipt: String,
}

/// One node of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct PlanNode {
    /// Position in the stable order (1-based).
    pub order: usize,
    /// The wave it would start in with the given jobs (1-based).
    pub wave: usize,
    /// `provider`, `service` or `probe`.
    pub kind: proofgraph_graph::NodeRole,
    /// Its name.
    pub name: String,
    /// The repository it runs in.
    pub repository: Option<String>,
    /// The resources it holds while it runs.
    pub resources: Vec<String>,
    /// What must come first.
    pub after: Vec<After>,
    /// A provider's fingerprint, or a service's wiring fingerprint.
    pub fingerprint: Option<String>,
    /// A provider's inputs.
    pub inputs: Option<InputsView>,
    /// A provider's program (resolved path).
    pub executable: Option<String>,
    /// The claims a provider vouches for.
    pub claims: Vec<String>,
    /// The receipts a provider's run writes.
    pub outputs: Vec<OutputView>,
    /// `run`, `reuse`, or `wait` (external), for providers.
    pub action: Option<PlanAction>,
    /// Why it runs.
    pub reason: Option<String>,
    /// The receipts reused.
    pub receipts: Vec<crate::store::Sha256>,
    /// Where a provider would run, when an executor other than local is asked for or
    /// configured (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementView>,
}

/// The payload of `plan`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanPayload {
    /// The change.
    pub change: Option<String>,
    /// The jobs the order assumes.
    pub jobs: Option<usize>,
    /// The nodes, in the order they would start.
    pub nodes: Vec<PlanNode>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
    /// The executor, when one other than local is asked for or configured (absent
    /// otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor: Option<ExecutorView>,
}

impl Payload for PlanPayload {
    fn human(&self, out: &mut String) {
        let Some(change) = &self.change else { return };
        let executor = self
            .executor
            .as_ref()
            .map(|e| {
                let on = e
                    .remote
                    .as_deref()
                    .map(|r| format!(" on {r}"))
                    .unwrap_or_default();
                let bound = e
                    .remote_jobs
                    .map(|n| format!(", --remote-jobs {n}"))
                    .unwrap_or_default();
                format!(", --executor {}{on}{bound}", e.choice.as_str())
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Plan for {change} (--jobs {}{executor})",
            self.jobs.unwrap_or(1)
        );
        let mut wave = 0;
        for node in &self.nodes {
            if node.wave != wave || node.order == 1 {
                wave = node.wave;
                if wave == 0 {
                    let _ = writeln!(out, "not run");
                } else {
                    let _ = writeln!(out, "wave {wave}");
                }
            }
            let fp = node
                .fingerprint
                .as_deref()
                .map(|f| &f[..12.min(f.len())])
                .unwrap_or("-");
            let after: Vec<String> = node
                .after
                .iter()
                .map(|a| format!("{} ({})", a.node, a.edge.as_str()))
                .collect();
            let what = match (node.action, &node.reason) {
                (Some(action), Some(reason)) => format!("{}: {reason}", action.as_str()),
                (Some(action), None) => action.as_str().to_owned(),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:8} {:24} {fp}  {what}",
                node.kind.as_str(),
                node.name
            );
            if let Some(inputs) = &node.inputs {
                match inputs.untracked {
                    0 => {
                        let _ = writeln!(out, "           inputs: {} files", inputs.files);
                    }
                    n => {
                        let _ = writeln!(
                            out,
                            "           inputs: {} files ({n} untracked)",
                            inputs.files
                        );
                    }
                }
            }
            if let Some(placement) = &node.placement {
                let why = match (&placement.reason, placement.eligible) {
                    (Some(reason), true) => format!(" ({reason}; it could run remotely)"),
                    (Some(reason), false) => format!(" ({reason})"),
                    (None, _) => String::new(),
                };
                let _ = writeln!(out, "           runs: {}{why}", placement.runs);
            }
            if !node.resources.is_empty() {
                let _ = writeln!(out, "           locks: {}", node.resources.join(", "));
            }
            if !after.is_empty() {
                let _ = writeln!(out, "           after: {}", after.join(", "));
            }
        }
    }
}

/// The wave each node would start in: simulate the scheduler with every
/// node succeeding, completing each wave before the next.
pub fn waves(
    graph: &SealedGraph,
    jobs: NonZeroUsize,
    wanted: &BTreeSet<NodeId>,
) -> Vec<(NodeId, usize)> {
    let mut scheduler = Scheduler::new(graph, jobs, wanted);
    let mut out = Vec::new();
    let mut wave = 0;
    loop {
        let started: Vec<NodeId> = scheduler
            .poll()
            .into_iter()
            .filter_map(|a| match a {
                Action::Start(id) => Some(id),
                Action::Stop(_) => None,
            })
            .collect();
        if started.is_empty() {
            break;
        }
        wave += 1;
        for id in &started {
            out.push((*id, wave));
        }
        for id in started {
            scheduler.complete(id, Step::Succeeded);
        }
    }
    out
}

/// Runs `plan`.
///
/// SIGINT and SIGTERM are recorded from the start: one that comes while the remote cache
/// is read ends the pull at once, and `plan` with exit 130 and its document.
pub fn run(ctx: &Context, options: &PlanOptions) -> Report<PlanPayload> {
    let interrupt = crate::base::interrupt::Interrupt::install();
    let evaluated = crate::session::evaluate::evaluate(
        ctx,
        &options.change,
        None,
        crate::session::evaluate::Keys::Check,
    );
    if interrupt.is_set() {
        let notes = evaluated.map_or_else(|all| all, |e| e.loaded.notes);
        return crate::session::evaluate::interrupted("plan", notes);
    }
    let e = match evaluated {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let graph = &e.loaded.prepared.graph;
    let name = e.loaded.change.name.clone();
    let catalog = e.loaded.workspace.catalog.as_ref();
    let configured = catalog.and_then(|c| c.executor.as_ref());
    if let Err(d) = crate::decide::placement::check(options.executor, catalog) {
        return Report::failed(vec![d], Verdict::Invalid);
    }
    let (wanted, reused) = crate::decide::reuse::wanted(
        graph,
        &e.fingerprints,
        &e.store,
        &e.trusted,
        &name,
        false,
        None,
    );
    let jobs = options
        .jobs
        .unwrap_or_else(crate::session::load::default_jobs);
    let mut order: Vec<(NodeId, usize)> = waves(graph, jobs, &wanted);
    // Providers whose receipts are reused, and those that run nothing, come first (wave 0).
    let scheduled: BTreeSet<NodeId> = order.iter().map(|(id, _)| *id).collect();
    let idle: Vec<(NodeId, usize)> = graph
        .order()
        .iter()
        .filter(|id| graph.node(**id).provider().is_some() && !scheduled.contains(id))
        .map(|id| (*id, 0))
        .collect();
    order.splice(0..0, idle);
    let pulled: Vec<crate::store::Sha256> = e.pulled.iter().map(|(_, sha)| *sha).collect();
    let situation = Situation {
        graph,
        fingerprints: &e.fingerprints,
        world: &e.observed.world,
        store: &e.store,
        trusted: &e.trusted,
        change: &name,
        pulled: &pulled,
    };
    // Where each provider would run: said only when an executor other than local is asked
    // for or configured, so a plan without one reads as it always has.
    let shows_placement = options.executor != ExecutorChoice::Local || configured.is_some();
    let home = ctx
        .env()
        .var("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute());
    let host_paths = crate::decide::placement::Surroundings::host_paths(
        e.loaded.workspace.catalog.as_ref(),
        ctx.env()
            .var("PROOFGRAPH_HOST_PATHS")
            .map(|v| v.as_os_str()),
        home.as_deref(),
    );
    let around = crate::decide::placement::Surroundings {
        catalog: e.loaded.workspace.catalog.as_ref(),
        host_paths: &host_paths,
        in_place: e.mode == proofgraph_sandbox::SandboxMode::None,
    };
    let nodes = order
        .into_iter()
        .enumerate()
        .map(|(i, (id, wave))| {
            let mut node = plan_node(graph, &e.observed, &e.fingerprints, id, i + 1, wave);
            if let Some(p) = graph.node(id).provider() {
                let decision = decide(&situation, p, reused.get(&p.spec.id.value));
                node.action = Some(decision.action);
                node.reason = decision.reason;
                node.receipts = decision.receipts;
                if shows_placement {
                    let program = e
                        .observed
                        .world
                        .executables
                        .get(&p.spec.id.value)
                        .map(|x| std::path::Path::new(&x.path));
                    node.placement = Some(placement_view(options.executor, p, program, &around));
                }
            }
            node
        })
        .collect();
    let executor = shows_placement.then(|| ExecutorView {
        choice: options.executor,
        remote: configured.map(|c| c.remote.value.clone()),
        remote_jobs: (options.executor != ExecutorChoice::Local).then(|| {
            crate::decide::placement::remote_jobs(options.remote_jobs, configured, jobs).get()
        }),
    });
    let mut status = e.loaded.notes;
    status.extend(e.loaded.prepared.warnings);
    status.extend(e.observed.warnings);
    Report {
        payload: Some(PlanPayload {
            change: Some(name.to_string()),
            jobs: Some(jobs.get()),
            nodes,
            root: Some(e.loaded.root),
            executor,
        }),
        status,
        verdict: Verdict::Success,
    }
}

/// Where `provider` would run under `choice`, whether it could run remotely, and why not.
fn placement_view(
    choice: ExecutorChoice,
    provider: &proofgraph_graph::graph::ProviderNode,
    program: Option<&std::path::Path>,
    around: &crate::decide::placement::Surroundings<'_>,
) -> PlacementView {
    use crate::decide::placement::{Placement, eligibility, place};
    let eligible = eligibility(provider, program, around);
    let could = eligible == Placement::Remote;
    let placed = place(choice, eligible);
    PlacementView {
        runs: placed.as_str(),
        eligible: could,
        reason: placed.reason(),
    }
}

fn plan_node(
    graph: &SealedGraph,
    observed: &Observed,
    fingerprints: &proofgraph_graph::fingerprint::Fingerprints,
    id: NodeId,
    order: usize,
    wave: usize,
) -> PlanNode {
    let node = graph.node(id);
    let after = graph
        .incoming(id)
        .into_iter()
        .map(|(from, kind)| After {
            node: graph.node(from).name.clone(),
            edge: kind,
        })
        .collect();
    let mut view = PlanNode {
        order,
        wave,
        kind: node.kind.role(),
        name: node.name.clone(),
        repository: None,
        resources: node.resources().iter().map(ToString::to_string).collect(),
        after,
        fingerprint: None,
        inputs: None,
        executable: None,
        claims: Vec::new(),
        outputs: Vec::new(),
        action: None,
        reason: None,
        receipts: Vec::new(),
        placement: None,
    };
    match &node.kind {
        NodeKind::Provider(p) => {
            let pid = &p.spec.id.value;
            view.repository = p.runs_in.as_ref().map(ToString::to_string);
            view.fingerprint = fingerprints.providers.get(pid).map(ToString::to_string);
            view.inputs = observed.world.inputs.get(pid).map(|i| InputsView {
                files: i.files,
                untracked: observed.untracked.get(pid).copied().unwrap_or_default() as u64,
                digest: i.digest.to_hex(),
            });
            view.executable = observed.world.executables.get(pid).map(|e| e.path.clone());
            view.claims = p.claims.iter().map(ToString::to_string).collect();
            view.outputs = p
                .outputs
                .iter()
                .map(|o| OutputView {
                    capability: o.capability.to_string(),
                    receipt: o.under.to_string(),
                })
                .collect();
        }
        NodeKind::Service(s) => {
            view.repository = s.runs_in.as_ref().map(ToString::to_string);
            view.fingerprint = fingerprints
                .services
                .get(&s.spec.id.value)
                .map(ToString::to_string);
        }
        NodeKind::Probe(_) => {}
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON names are the words the human output and the docs use (`plan --json` and
    /// `prove --json` are pinned by snapshots; `wait` needs an external provider, so every
    /// name is held here).
    #[test]
    fn typed_fields_serialize_as_their_words() {
        for action in [PlanAction::Run, PlanAction::Reuse, PlanAction::Wait] {
            assert_eq!(
                serde_json::to_value(action).ok(),
                Some(serde_json::Value::from(action.as_str()))
            );
        }
        let prove = [
            (
                serde_json::to_value(super::super::prove::RunIsolation::Namespaces),
                "namespaces",
            ),
            (
                serde_json::to_value(super::super::prove::RunIsolation::None),
                "none",
            ),
        ];
        for (value, word) in prove {
            assert_eq!(value.ok(), Some(serde_json::Value::from(word)));
        }
        for mode in proofgraph_sandbox::SandboxMode::ALL {
            assert_eq!(
                serde_json::to_value(mode).ok(),
                Some(serde_json::Value::from(mode.as_str()))
            );
        }
    }
}
