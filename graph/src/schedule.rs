//! The scheduler: a pure state machine over a sealed graph.
//!
//! It is told "node X finished with outcome R" and answers which nodes may
//! start (and which services may stop) now, given `--jobs N` and the resources
//! held. It starts nothing itself, reads no clock and spawns no process, so
//! every property can be tested without processes.
//!
//! Rules:
//! - A provider starts when it is wanted, every provider it depends on has
//!   succeeded (or is not wanted: its receipt is reused), every probe of a
//!   service it needs has observed the service ready, its resources conflict
//!   with nothing running, and fewer than `jobs` providers run.
//! - A service starts when the first wanted provider needing it has all its
//!   provider dependencies satisfied; its probe runs once it has started; it
//!   stops as soon as no wanted provider needing it is waiting or running,
//!   and always after a failure. Services and probes do not count against
//!   `jobs`: a service runs beside the providers that use it.
//! - A failed node's dependents are never started (they are `Blocked`).
//! - `halt` (no `--keep-going` after a failure, or an interrupt) blocks every
//!   node that has not started; running nodes finish and services stop.
//! - Equal choices are made in the graph's stable topological order.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use crate::graph::{EdgeKind, NodeId, NodeKind, SealedGraph};
use crate::resource;

/// Where a node is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Not started yet.
    Waiting,
    /// Started; not finished (for a service: being spawned).
    Running,
    /// A service that has started and not been stopped.
    Up,
    /// Finished successfully (a probe: the service was observed ready).
    Succeeded,
    /// Finished unsuccessfully.
    Failed,
    /// Will not start: a prerequisite failed, or the run was halted.
    Blocked,
    /// A service that was stopped.
    Stopped,
    /// Not part of this run (a provider whose receipt is reused, or a service
    /// no wanted provider needs).
    NotNeeded,
}

/// What a finished node reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// It did what it should (a service: it started).
    Succeeded,
    /// It did not.
    Failed,
}

/// What the executor should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Start this node.
    Start(NodeId),
    /// Stop this service (its whole process tree).
    Stop(NodeId),
}

/// The scheduler's state.
#[derive(Debug, Clone)]
pub struct Scheduler<'g> {
    graph: &'g SealedGraph,
    jobs: usize,
    states: Vec<State>,
    halted: bool,
}

impl<'g> Scheduler<'g> {
    /// A scheduler that will run the `wanted` providers with at most `jobs`
    /// providers at a time.
    pub fn new(graph: &'g SealedGraph, jobs: NonZeroUsize, wanted: &BTreeSet<NodeId>) -> Self {
        let mut states = vec![State::NotNeeded; graph.len()];
        for id in graph.order() {
            if graph.node(*id).provider().is_some() && wanted.contains(id) {
                states[id.get()] = State::Waiting;
            }
        }
        // A service (and its probe) is needed when a wanted provider needs it.
        for id in graph.order() {
            if states[id.get()] != State::Waiting {
                continue;
            }
            for service in graph.services_of(*id) {
                states[service.get()] = State::Waiting;
                for (probe, _) in graph.outgoing(service) {
                    states[probe.get()] = State::Waiting;
                }
            }
        }
        Self {
            graph,
            jobs: jobs.get(),
            states,
            halted: false,
        }
    }

    /// The state of a node.
    pub fn state(&self, id: NodeId) -> State {
        self.states[id.get()]
    }

    /// Every node's state, indexed by node.
    pub fn states(&self) -> &[State] {
        &self.states
    }

    fn is_provider(&self, id: NodeId) -> bool {
        self.graph.node(id).provider().is_some()
    }

    fn running_providers(&self) -> usize {
        self.graph
            .order()
            .iter()
            .filter(|id| self.is_provider(**id) && self.state(**id) == State::Running)
            .count()
    }

    /// Whether the providers this one depends on (not services) are satisfied.
    fn provider_deps_satisfied(&self, id: NodeId) -> bool {
        self.graph
            .incoming(id)
            .iter()
            .all(|(from, kind)| match kind {
                EdgeKind::DependsOn | EdgeKind::Discovery => {
                    matches!(self.state(*from), State::Succeeded | State::NotNeeded)
                }
                EdgeKind::Ready | EdgeKind::Starts => true,
            })
    }

    fn probes_ready(&self, id: NodeId) -> bool {
        self.graph
            .incoming(id)
            .iter()
            .filter(|(_, kind)| *kind == EdgeKind::Ready)
            .all(|(probe, _)| self.state(*probe) == State::Succeeded)
    }

    fn holding(&self) -> Vec<NodeId> {
        self.graph
            .order()
            .iter()
            .copied()
            .filter(|id| matches!(self.state(*id), State::Running | State::Up))
            .collect()
    }

    fn resources_free(&self, id: NodeId, also: &[NodeId]) -> bool {
        let mine = self.graph.node(id).resources();
        if mine.is_empty() {
            return true;
        }
        self.holding()
            .iter()
            .chain(also)
            .filter(|other| **other != id)
            .all(|other| !resource::sets_conflict(mine, self.graph.node(*other).resources()))
    }

    /// The nodes that may start now, and the services that may stop, in
    /// stable order. The returned starts are marked running.
    pub fn poll(&mut self) -> Vec<Action> {
        let mut actions = self.stops();
        if self.halted {
            return actions;
        }
        let mut started: Vec<NodeId> = Vec::new();
        let mut providers = self.running_providers();
        for &id in self.graph.order() {
            if self.state(id) != State::Waiting {
                continue;
            }
            let ready = match &self.graph.node(id).kind {
                NodeKind::Provider(_) => {
                    providers < self.jobs
                        && self.provider_deps_satisfied(id)
                        && self.probes_ready(id)
                        && self.resources_free(id, &started)
                }
                NodeKind::Service(_) => {
                    self.service_wanted_now(id) && self.resources_free(id, &started)
                }
                NodeKind::Probe(_) => self
                    .graph
                    .incoming(id)
                    .iter()
                    .all(|(service, _)| self.state(*service) == State::Up),
            };
            if ready {
                if self.is_provider(id) {
                    providers += 1;
                }
                self.states[id.get()] = State::Running;
                started.push(id);
                actions.push(Action::Start(id));
            }
        }
        actions
    }

    /// A service starts once a wanted provider needing it could otherwise run.
    fn service_wanted_now(&self, service: NodeId) -> bool {
        self.dependents_of_service(service)
            .into_iter()
            .any(|p| self.state(p) == State::Waiting && self.provider_deps_satisfied(p))
    }

    fn dependents_of_service(&self, service: NodeId) -> Vec<NodeId> {
        self.graph
            .outgoing(service)
            .into_iter()
            .flat_map(|(probe, _)| self.graph.outgoing(probe).into_iter().map(|(p, _)| p))
            .collect()
    }

    /// Services that are up (or being started and now useless) and that no
    /// waiting or running provider needs any more.
    fn stops(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        for &id in self.graph.order() {
            if self.graph.node(id).service().is_none() || self.state(id) != State::Up {
                continue;
            }
            let needed = self
                .dependents_of_service(id)
                .into_iter()
                .any(|p| matches!(self.state(p), State::Waiting | State::Running));
            if !needed {
                self.states[id.get()] = State::Stopped;
                actions.push(Action::Stop(id));
            }
        }
        actions
    }

    /// Records that a started node finished.
    pub fn complete(&mut self, id: NodeId, outcome: Step) {
        let kind = &self.graph.node(id).kind;
        let next = match (kind, outcome) {
            (NodeKind::Service(_), Step::Succeeded) => State::Up,
            (_, Step::Succeeded) => State::Succeeded,
            (_, Step::Failed) => State::Failed,
        };
        self.states[id.get()] = next;
        if outcome == Step::Failed {
            self.block_dependents(id);
        }
    }

    /// Takes back a node that was started but never ran (it waited for a slot and was
    /// cancelled): it is blocked once the scheduler is halted, and may start again
    /// otherwise.
    pub fn withdraw(&mut self, id: NodeId) {
        if self.state(id) == State::Running {
            self.states[id.get()] = if self.halted {
                State::Blocked
            } else {
                State::Waiting
            };
        }
    }

    /// Records that a service which was up exited on its own: waiting
    /// providers that need it are blocked; it counts as stopped.
    pub fn service_exited(&mut self, service: NodeId) {
        if matches!(self.state(service), State::Up | State::Running) {
            self.states[service.get()] = State::Stopped;
            for p in self.dependents_of_service(service) {
                if self.state(p) == State::Waiting {
                    self.states[p.get()] = State::Blocked;
                    self.block_dependents(p);
                }
            }
        }
    }

    fn block_dependents(&mut self, id: NodeId) {
        let mut stack = vec![id];
        while let Some(node) = stack.pop() {
            for (next, _) in self.graph.outgoing(node) {
                if self.state(next) == State::Waiting {
                    self.states[next.get()] = State::Blocked;
                    stack.push(next);
                }
            }
        }
    }

    /// Stops starting anything new: every node that has not started is
    /// blocked. Running nodes finish; services stop when idle.
    pub fn halt(&mut self) {
        self.halted = true;
        for state in &mut self.states {
            if *state == State::Waiting {
                *state = State::Blocked;
            }
        }
    }

    /// Whether [`Scheduler::halt`] was called: nothing new starts.
    pub fn is_halted(&self) -> bool {
        self.halted
    }

    /// Whether nothing runs, nothing can start and every service is stopped.
    pub fn is_finished(&self) -> bool {
        !self
            .states
            .iter()
            .any(|s| matches!(s, State::Running | State::Up))
            && (self.halted || !self.has_startable())
    }

    fn has_startable(&self) -> bool {
        let mut probe = self.clone();
        probe.poll().iter().any(|a| matches!(a, Action::Start(_)))
    }
}

/// A deterministic partition of the providers into `count` shards, stable under edits to
/// other providers: weakly connected groups of providers (a dependency chain, or providers
/// sharing a service, stay together) are each assigned by the BLAKE3 hash of the
/// group's first provider name (in byte order), modulo `count`. A provider moves to another
/// shard only when its own group changes (an edge added or removed, a member renamed) or
/// `count` does — never because another provider's inputs, wiring or presence changed.
/// The balance is that of a hash: even over many groups, not exact over a few.
pub fn shard(graph: &SealedGraph, index: usize, count: NonZeroUsize) -> BTreeSet<NodeId> {
    let providers: Vec<NodeId> = graph
        .order()
        .iter()
        .copied()
        .filter(|id| graph.node(*id).provider().is_some())
        .collect();
    // Union-find over provider-to-provider edges and shared services.
    let mut parent: Vec<usize> = (0..graph.len()).collect();
    fn find(parent: &mut [usize], x: usize) -> usize {
        let mut root = x;
        while parent[root] != root {
            root = parent[root];
        }
        let mut at = x;
        while parent[at] != root {
            let next = parent[at];
            parent[at] = root;
            at = next;
        }
        root
    }
    for (from, to, _) in graph.edges() {
        let (a, b) = (find(&mut parent, from.get()), find(&mut parent, to.get()));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<NodeId>> =
        std::collections::BTreeMap::new();
    for p in &providers {
        let root = find(&mut parent, p.get());
        groups.entry(root).or_default().push(*p);
    }
    let mut out = BTreeSet::new();
    for group in groups.into_values() {
        let Some(first) = group.iter().map(|id| graph.node(*id).name.as_str()).min() else {
            continue;
        };
        let hash = blake3::hash(first.as_bytes());
        let mut word = [0u8; 8];
        word.copy_from_slice(&hash.as_bytes()[..8]);
        let target = u64::from_le_bytes(word) % count.get() as u64;
        if target == index as u64 {
            out.extend(group);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;
    use crate::testing::{RandomGraph, random_graph};

    /// What happened in one simulated run.
    struct Trace {
        started: Vec<NodeId>,
        finished: bool,
        failed: BTreeSet<NodeId>,
    }

    /// Runs the scheduler to the end, completing one running node per step
    /// (chosen by `picks`), failing the nodes in `fail`, and checking the
    /// invariants at every step.
    fn simulate(
        graph: &SealedGraph,
        jobs: usize,
        wanted: &BTreeSet<NodeId>,
        fail: &BTreeSet<NodeId>,
        picks: &[usize],
    ) -> Trace {
        let jobs = NonZeroUsize::new(jobs).expect("jobs > 0");
        let mut s = Scheduler::new(graph, jobs, wanted);
        let mut started = Vec::new();
        let mut failed = BTreeSet::new();
        let mut step = 0usize;
        let limit = 20 * (graph.len() + 1);
        while step < limit {
            for action in s.poll() {
                if let Action::Start(id) = action {
                    assert!(!started.contains(&id), "{} started twice", graph.node(id));
                    started.push(id);
                    if graph.node(id).provider().is_some() {
                        for (from, kind) in graph.incoming(id) {
                            let ok = match kind {
                                EdgeKind::DependsOn | EdgeKind::Discovery => {
                                    matches!(s.state(from), State::Succeeded | State::NotNeeded)
                                }
                                EdgeKind::Ready => s.state(from) == State::Succeeded,
                                EdgeKind::Starts => true,
                            };
                            assert!(ok, "{} started before {}", graph.node(id), graph.node(from));
                        }
                    }
                }
            }
            // Invariants: jobs and resources.
            let live: Vec<NodeId> = graph
                .order()
                .iter()
                .copied()
                .filter(|id| matches!(s.state(*id), State::Running | State::Up))
                .collect();
            let providers = live
                .iter()
                .filter(|id| {
                    graph.node(**id).provider().is_some() && s.state(**id) == State::Running
                })
                .count();
            assert!(
                providers <= jobs.get(),
                "{providers} providers run with --jobs {jobs}"
            );
            for (i, a) in live.iter().enumerate() {
                for b in &live[i + 1..] {
                    assert!(
                        !resource::sets_conflict(
                            graph.node(*a).resources(),
                            graph.node(*b).resources()
                        ),
                        "{} and {} run together with conflicting resources",
                        graph.node(*a),
                        graph.node(*b)
                    );
                }
            }
            let running: Vec<NodeId> = graph
                .order()
                .iter()
                .copied()
                .filter(|id| s.state(*id) == State::Running)
                .collect();
            if running.is_empty() {
                if s.is_finished() {
                    return Trace {
                        started,
                        finished: true,
                        failed,
                    };
                }
                step += 1;
                continue;
            }
            let pick =
                running[picks.get(step % picks.len().max(1)).copied().unwrap_or(0) % running.len()];
            if fail.contains(&pick) {
                failed.insert(pick);
                s.complete(pick, Step::Failed);
            } else {
                s.complete(pick, Step::Succeeded);
            }
            step += 1;
        }
        Trace {
            started,
            finished: s.is_finished(),
            failed,
        }
    }

    fn all_providers(graph: &SealedGraph) -> BTreeSet<NodeId> {
        graph.providers().map(|(_, id, _)| id).collect()
    }

    fn dependents(graph: &SealedGraph, from: NodeId) -> BTreeSet<NodeId> {
        let mut out = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for (next, _) in graph.outgoing(n) {
                if out.insert(next) {
                    stack.push(next);
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn topological_order_respects_every_edge(g in random_graph(25)) {
            let graph = g.seal();
            let position: BTreeMap<NodeId, usize> = graph.order().iter().enumerate().map(|(i, n)| (*n, i)).collect();
            prop_assert_eq!(position.len(), graph.len());
            for (from, to, kind) in graph.edges() {
                prop_assert!(position[&from] < position[&to], "{:?} edge {} -> {}", kind, graph.node(from), graph.node(to));
            }
        }

        #[test]
        fn everything_runs_exactly_once_when_nothing_fails(
            g in random_graph(20),
            jobs in 1..5usize,
            picks in proptest::collection::vec(0..64usize, 1..32),
        ) {
            let graph = g.seal();
            let wanted = all_providers(&graph);
            let trace = simulate(&graph, jobs, &wanted, &BTreeSet::new(), &picks);
            prop_assert!(trace.finished, "the scheduler did not finish");
            let started_providers: BTreeSet<NodeId> = trace.started.iter().copied().filter(|id| graph.node(*id).provider().is_some()).collect();
            prop_assert_eq!(started_providers, wanted);
        }

        #[test]
        fn failed_nodes_block_their_dependents(
            g in random_graph(20),
            jobs in 1..4usize,
            picks in proptest::collection::vec(0..64usize, 1..32),
            fail_mask in proptest::collection::vec(proptest::bool::weighted(0.25), 40),
        ) {
            let graph = g.seal();
            let wanted = all_providers(&graph);
            let fail: BTreeSet<NodeId> = graph.order().iter().copied().filter(|id| fail_mask.get(id.get()).copied().unwrap_or(false)).collect();
            let trace = simulate(&graph, jobs, &wanted, &fail, &picks);
            prop_assert!(trace.finished, "the scheduler did not finish");
            for f in &trace.failed {
                for d in dependents(&graph, *f) {
                    prop_assert!(!trace.started.contains(&d) || graph.node(d).service().is_some(),
                        "{} started although {} failed", graph.node(d), graph.node(*f));
                }
            }
        }

        #[test]
        fn only_wanted_providers_run_and_reused_ones_satisfy_dependents(
            g in random_graph(15),
            mask in proptest::collection::vec(any::<bool>(), 15),
        ) {
            let graph = g.seal();
            let wanted: BTreeSet<NodeId> = all_providers(&graph).into_iter().filter(|id| mask.get(id.get() % mask.len()).copied().unwrap_or(true)).collect();
            let trace = simulate(&graph, 2, &wanted, &BTreeSet::new(), &[0]);
            prop_assert!(trace.finished);
            let started: BTreeSet<NodeId> = trace.started.iter().copied().filter(|id| graph.node(*id).provider().is_some()).collect();
            prop_assert_eq!(started, wanted);
        }

        #[test]
        fn halting_starts_nothing_new_and_finishes(
            g in random_graph(15),
            halt_after in 0..5usize,
        ) {
            let graph = g.seal();
            let mut s = Scheduler::new(&graph, NonZeroUsize::new(2).expect("non-zero"), &all_providers(&graph));
            let mut steps = 0;
            let mut halted = false;
            loop {
                let actions = s.poll();
                if halted {
                    prop_assert!(actions.iter().all(|a| matches!(a, Action::Stop(_))), "started after halt");
                }
                let running: Vec<NodeId> = graph.order().iter().copied().filter(|id| s.state(*id) == State::Running).collect();
                if running.is_empty() && s.is_finished() {
                    break;
                }
                if steps == halt_after && !halted {
                    s.halt();
                    halted = true;
                }
                if let Some(first) = running.first() {
                    s.complete(*first, Step::Succeeded);
                }
                steps += 1;
                prop_assert!(steps < 1000, "did not finish");
            }
            prop_assert!(!s.states().contains(&State::Up), "a service was left up");
        }

        #[test]
        fn withdrawn_providers_are_blocked_after_a_halt_and_start_again_before(
            g in random_graph(15),
        ) {
            let graph = g.seal();
            let wanted = all_providers(&graph);
            let mut s = Scheduler::new(&graph, NonZeroUsize::new(4).expect("non-zero"), &wanted);
            let running = |s: &Scheduler<'_>| -> Vec<NodeId> {
                graph.order().iter().copied().filter(|id| s.state(*id) == State::Running && graph.node(*id).provider().is_some()).collect()
            };
            // Before a halt, a withdrawn provider waits again and is started again.
            let _ = s.poll();
            if let Some(first) = running(&s).first().copied() {
                s.withdraw(first);
                prop_assert_eq!(s.state(first), State::Waiting);
                let again = s.poll();
                prop_assert!(again.contains(&Action::Start(first)), "not started again");
            }
            // After a halt, every provider taken back is blocked, and the rest finishes.
            s.halt();
            let taken_back = running(&s);
            for id in &taken_back {
                s.withdraw(*id);
                prop_assert_eq!(s.state(*id), State::Blocked);
            }
            let mut steps = 0;
            loop {
                let actions = s.poll();
                prop_assert!(actions.iter().all(|a| matches!(a, Action::Stop(_))), "started after halt");
                let left: Vec<NodeId> = graph.order().iter().copied().filter(|id| s.state(*id) == State::Running).collect();
                if left.is_empty() && s.is_finished() {
                    break;
                }
                if let Some(first) = left.first() {
                    s.complete(*first, Step::Succeeded);
                }
                steps += 1;
                prop_assert!(steps < 1000, "did not finish");
            }
        }

        #[test]
        fn shards_cover_every_provider_exactly_once(g in random_graph(30), n in 1..6usize) {
            let graph = g.seal();
            let count = NonZeroUsize::new(n).expect("non-zero");
            let mut seen = BTreeSet::new();
            for i in 0..n {
                for id in shard(&graph, i, count) {
                    prop_assert!(graph.node(id).provider().is_some());
                    prop_assert!(seen.insert(id), "{} is in two shards", graph.node(id));
                }
            }
            prop_assert_eq!(seen, all_providers(&graph));
        }
    }

    #[test]
    fn a_provider_keeps_its_shard_when_other_providers_come_and_go() {
        use crate::testing::{at, pid, provider, seal};
        let where_is = |graph: &SealedGraph, name: &str, n: usize| -> usize {
            let count = NonZeroUsize::new(n).expect("non-zero");
            let id = graph.provider(&pid(name)).expect("provider");
            (0..n)
                .find(|i| shard(graph, *i, count).contains(&id))
                .expect("in a shard")
        };
        let names = ["api", "cli", "docs", "e2e", "lint", "unit", "web"];
        let all = seal(names.iter().map(|n| provider(n)).collect(), Vec::new());
        // Two providers fewer, and one more, elsewhere in the change.
        let mut fewer: Vec<_> = names
            .iter()
            .filter(|n| !matches!(**n, "docs" | "lint"))
            .map(|n| provider(n))
            .collect();
        fewer.push(provider("zz-new"));
        let other = seal(fewer, Vec::new());
        for n in [2, 3, 5] {
            for name in ["api", "cli", "e2e", "unit", "web"] {
                assert_eq!(
                    where_is(&all, name, n),
                    where_is(&other, name, n),
                    "`{name}` moved among {n} shards"
                );
            }
        }
        // A provider joined to another by `dependsOn` goes where the pair's first name is.
        let mut unit = provider("unit");
        unit.depends_on = Some(vec![at(pid("api"))]);
        let joined = seal(vec![provider("api"), unit, provider("web")], Vec::new());
        for n in [2, 3, 5] {
            assert_eq!(where_is(&joined, "unit", n), where_is(&joined, "api", n));
            assert_eq!(where_is(&joined, "api", n), where_is(&all, "api", n));
        }
    }

    #[test]
    fn services_start_for_their_first_user_and_stop_after_the_last() {
        use crate::testing::{at, provider, seal, service, sid};
        let mut a = provider("a");
        a.services = Some(vec![at(sid("web"))]);
        let mut b = provider("b");
        b.services = Some(vec![at(sid("web"))]);
        b.depends_on = Some(vec![at(crate::testing::pid("a"))]);
        let graph = seal(vec![a, b], vec![service("web", 4173)]);
        let all = all_providers(&graph);
        let mut s = Scheduler::new(&graph, NonZeroUsize::new(4).expect("non-zero"), &all);
        let web = graph.service(&sid("web")).expect("service");
        let probe = graph.probe(&sid("web")).expect("probe");
        let a = graph.provider(&crate::testing::pid("a")).expect("a");
        let b = graph.provider(&crate::testing::pid("b")).expect("b");
        assert_eq!(s.poll(), vec![Action::Start(web)]);
        s.complete(web, Step::Succeeded);
        assert_eq!(s.poll(), vec![Action::Start(probe)]);
        s.complete(probe, Step::Succeeded);
        assert_eq!(s.poll(), vec![Action::Start(a)]);
        s.complete(a, Step::Succeeded);
        assert_eq!(s.poll(), vec![Action::Start(b)]);
        s.complete(b, Step::Succeeded);
        assert_eq!(s.poll(), vec![Action::Stop(web)]);
        assert!(s.is_finished());
    }

    #[test]
    fn a_probe_never_ready_blocks_its_users_and_stops_the_service() {
        use crate::testing::{at, provider, seal, service, sid};
        let mut a = provider("a");
        a.services = Some(vec![at(sid("web"))]);
        let graph = seal(vec![a, provider("other")], vec![service("web", 4173)]);
        let mut s = Scheduler::new(
            &graph,
            NonZeroUsize::new(1).expect("non-zero"),
            &all_providers(&graph),
        );
        let web = graph.service(&sid("web")).expect("service");
        let probe = graph.probe(&sid("web")).expect("probe");
        let a = graph.provider(&crate::testing::pid("a")).expect("a");
        let other = graph
            .provider(&crate::testing::pid("other"))
            .expect("other");
        assert_eq!(s.poll(), vec![Action::Start(other), Action::Start(web)]);
        s.complete(web, Step::Succeeded);
        assert_eq!(s.poll(), vec![Action::Start(probe)]);
        s.complete(probe, Step::Failed);
        assert_eq!(s.state(a), State::Blocked);
        assert_eq!(s.poll(), vec![Action::Stop(web)]);
        s.complete(other, Step::Succeeded);
        assert!(s.poll().is_empty());
        assert!(s.is_finished());
    }

    #[test]
    fn equal_choices_follow_the_stable_order() {
        let g = RandomGraph {
            deps: vec![vec![], vec![], vec![]],
            resources: vec![vec![1], vec![1], vec![1]],
            service: vec![None; 3],
            services: 0,
        };
        let graph = g.seal();
        let mut s = Scheduler::new(
            &graph,
            NonZeroUsize::new(3).expect("non-zero"),
            &all_providers(&graph),
        );
        let names = |actions: Vec<Action>| -> Vec<String> {
            actions
                .into_iter()
                .map(|a| match a {
                    Action::Start(id) | Action::Stop(id) => graph.node(id).name.clone(),
                })
                .collect()
        };
        // All three write `root`: one at a time, in name order.
        assert_eq!(names(s.poll()), ["p000"]);
        s.complete(
            graph.provider(&crate::testing::pid("p000")).expect("p000"),
            Step::Succeeded,
        );
        assert_eq!(names(s.poll()), ["p001"]);
    }
}
