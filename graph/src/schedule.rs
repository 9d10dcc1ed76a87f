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
///
/// Every decision costs what it touches, never a walk over the whole graph: the graph's
/// shape is read once into adjacency lists, and each change of a node's state (all go
/// through one method) keeps the derived sets and counts current — which providers are
/// waiting with every dependency satisfied, which services and probes wait, which nodes
/// hold resources, how many providers run, and per service how many users could still
/// want it. A run of N providers therefore costs O(N log N) in the scheduler, whatever
/// `--jobs` is; the one exception is a provider that waits for a resource another holds,
/// which is looked at again at each poll until it starts.
#[derive(Debug, Clone)]
pub struct Scheduler<'g> {
    graph: &'g SealedGraph,
    jobs: usize,
    states: Vec<State>,
    halted: bool,
    /// Each node's place in the stable order.
    position: Vec<u32>,
    /// Per node: the providers it depends on (`dependsOn` and discovery edges).
    needs: Vec<Vec<NodeId>>,
    /// Per node: the nodes that list it in `needs`.
    unlocks: Vec<Vec<NodeId>>,
    /// Per provider: the probes of the services it needs.
    probes: Vec<Vec<NodeId>>,
    /// Per probe: its services.
    probed: Vec<Vec<NodeId>>,
    /// Per provider: the services it needs; per service: the providers needing it.
    services_of: Vec<Vec<NodeId>>,
    users: Vec<Vec<NodeId>>,
    /// Per node: every node an edge leads to (what a failure blocks).
    outgoing: Vec<Vec<NodeId>>,
    /// Every service, in order.
    services: Vec<NodeId>,
    /// Per node: how many of its `needs` are not satisfied yet.
    unmet: Vec<u32>,
    /// Positions of the waiting providers whose `needs` are all satisfied.
    ready: BTreeSet<u32>,
    /// Positions of the waiting services and probes.
    waiting_others: BTreeSet<u32>,
    /// Nodes running or up (they hold their resources).
    holding: BTreeSet<NodeId>,
    /// Providers running.
    running_providers: usize,
    /// Per service: its users waiting with their `needs` satisfied (it is wanted now).
    ready_users: Vec<u32>,
    /// Per service: its users waiting or running (it must stay up).
    live_users: Vec<u32>,
}

/// Whether a dependency in this state lets its dependents start.
fn satisfies(state: State) -> bool {
    matches!(state, State::Succeeded | State::NotNeeded)
}

impl<'g> Scheduler<'g> {
    /// A scheduler that will run the `wanted` providers with at most `jobs`
    /// providers at a time.
    pub fn new(graph: &'g SealedGraph, jobs: NonZeroUsize, wanted: &BTreeSet<NodeId>) -> Self {
        let n = graph.len();
        let mut position = vec![0u32; n];
        for (i, id) in graph.order().iter().enumerate() {
            position[id.get()] = u32::try_from(i).expect("fewer than 2^32 nodes");
        }
        let mut needs = vec![Vec::new(); n];
        let mut unlocks = vec![Vec::new(); n];
        let mut probes = vec![Vec::new(); n];
        let mut probed = vec![Vec::new(); n];
        let mut outgoing = vec![Vec::new(); n];
        for (from, to, kind) in graph.edges() {
            outgoing[from.get()].push(to);
            match kind {
                EdgeKind::DependsOn | EdgeKind::Discovery => {
                    needs[to.get()].push(from);
                    unlocks[from.get()].push(to);
                }
                EdgeKind::Ready => probes[to.get()].push(from),
                EdgeKind::Starts => probed[to.get()].push(from),
            }
        }
        // `edges` is sorted by (from, to, kind): two kinds between one pair count once.
        for list in needs.iter_mut().chain(&mut unlocks).chain(&mut outgoing) {
            list.dedup();
        }
        let mut services_of = vec![Vec::new(); n];
        let mut users = vec![Vec::new(); n];
        for (_, id, _) in graph.providers() {
            let mut mine = graph.services_of(id);
            mine.sort();
            mine.dedup();
            for service in &mine {
                users[service.get()].push(id);
            }
            services_of[id.get()] = mine;
        }
        let services: Vec<NodeId> = graph
            .order()
            .iter()
            .copied()
            .filter(|id| graph.node(*id).service().is_some())
            .collect();
        let mut states = vec![State::NotNeeded; n];
        for id in graph.order() {
            if graph.node(*id).provider().is_some() && wanted.contains(id) {
                states[id.get()] = State::Waiting;
            }
        }
        // A service (and its probe) is needed when a wanted provider needs it.
        for id in graph.order() {
            if states[id.get()] != State::Waiting || graph.node(*id).provider().is_none() {
                continue;
            }
            for service in &services_of[id.get()] {
                states[service.get()] = State::Waiting;
                for probe in &outgoing[service.get()] {
                    states[probe.get()] = State::Waiting;
                }
            }
        }
        let mut s = Self {
            graph,
            jobs: jobs.get(),
            states,
            halted: false,
            position,
            needs,
            unlocks,
            probes,
            probed,
            services_of,
            users,
            outgoing,
            services,
            unmet: vec![0; n],
            ready: BTreeSet::new(),
            waiting_others: BTreeSet::new(),
            holding: BTreeSet::new(),
            running_providers: 0,
            ready_users: vec![0; n],
            live_users: vec![0; n],
        };
        for id in graph.order() {
            let i = id.get();
            s.unmet[i] = u32::try_from(
                s.needs[i]
                    .iter()
                    .filter(|d| !satisfies(s.states[d.get()]))
                    .count(),
            )
            .expect("fewer than 2^32 edges");
            if s.states[i] != State::Waiting {
                continue;
            }
            if s.is_provider(*id) {
                if s.unmet[i] == 0 {
                    s.ready.insert(s.position[i]);
                }
                let ready = s.unmet[i] == 0;
                for service in &s.services_of[i] {
                    s.live_users[service.get()] += 1;
                    s.ready_users[service.get()] += u32::from(ready);
                }
            } else {
                s.waiting_others.insert(s.position[i]);
            }
        }
        s
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

    /// The one way a node's state changes: every set and count derived from the states is
    /// brought up to date here.
    fn set(&mut self, id: NodeId, next: State) {
        let i = id.get();
        let before = self.states[i];
        if before == next {
            return;
        }
        let provider = self.is_provider(id);
        let was_ready = provider && before == State::Waiting && self.unmet[i] == 0;
        let was_live = provider && matches!(before, State::Waiting | State::Running);
        self.states[i] = next;
        let is_ready = provider && next == State::Waiting && self.unmet[i] == 0;
        let is_live = provider && matches!(next, State::Waiting | State::Running);
        if provider {
            self.user_changed(id, was_ready, is_ready, was_live, is_live);
            if before == State::Running {
                self.running_providers -= 1;
            }
            if next == State::Running {
                self.running_providers += 1;
            }
        } else if before == State::Waiting {
            self.waiting_others.remove(&self.position[i]);
        } else if next == State::Waiting {
            self.waiting_others.insert(self.position[i]);
        }
        let holds = |s: State| matches!(s, State::Running | State::Up);
        if holds(before) && !holds(next) {
            self.holding.remove(&id);
        } else if !holds(before) && holds(next) {
            self.holding.insert(id);
        }
        if satisfies(before) != satisfies(next) {
            let now = satisfies(next);
            for k in 0..self.unlocks[i].len() {
                let dependent = self.unlocks[i][k];
                let d = dependent.get();
                let waiting = self.states[d] == State::Waiting && self.is_provider(dependent);
                let was = waiting && self.unmet[d] == 0;
                if now {
                    self.unmet[d] -= 1;
                } else {
                    self.unmet[d] += 1;
                }
                let is = waiting && self.unmet[d] == 0;
                self.user_changed(dependent, was, is, waiting, waiting);
            }
        }
    }

    /// Keeps `ready` and the per-service counts of a provider current.
    fn user_changed(
        &mut self,
        id: NodeId,
        was_ready: bool,
        is_ready: bool,
        was_live: bool,
        is_live: bool,
    ) {
        let i = id.get();
        if was_ready != is_ready {
            if is_ready {
                self.ready.insert(self.position[i]);
            } else {
                self.ready.remove(&self.position[i]);
            }
        }
        for service in &self.services_of[i] {
            let s = service.get();
            match (was_ready, is_ready) {
                (false, true) => self.ready_users[s] += 1,
                (true, false) => self.ready_users[s] -= 1,
                _ => {}
            }
            match (was_live, is_live) {
                (false, true) => self.live_users[s] += 1,
                (true, false) => self.live_users[s] -= 1,
                _ => {}
            }
        }
    }

    fn probes_ready(&self, id: NodeId) -> bool {
        self.probes[id.get()]
            .iter()
            .all(|probe| self.state(*probe) == State::Succeeded)
    }

    fn resources_free(&self, id: NodeId) -> bool {
        let mine = self.graph.node(id).resources();
        mine.is_empty()
            || self
                .holding
                .iter()
                .filter(|other| **other != id)
                .all(|other| !resource::sets_conflict(mine, self.graph.node(*other).resources()))
    }

    /// Whether the waiting node `id` may start now.
    fn startable(&self, id: NodeId) -> bool {
        match &self.graph.node(id).kind {
            NodeKind::Provider(_) => {
                self.running_providers < self.jobs
                    && self.probes_ready(id)
                    && self.resources_free(id)
            }
            NodeKind::Service(_) => self.ready_users[id.get()] > 0 && self.resources_free(id),
            NodeKind::Probe(_) => self.probed[id.get()]
                .iter()
                .all(|service| self.state(*service) == State::Up),
        }
    }

    /// The next candidate at or after `from`, in order: a waiting service or probe, or
    /// (while a provider slot is free) a waiting provider with its dependencies satisfied.
    fn next_candidate(&self, from: u32) -> Option<u32> {
        let other = self.waiting_others.range(from..).next().copied();
        let provider = if self.running_providers < self.jobs {
            self.ready.range(from..).next().copied()
        } else {
            None
        };
        match (other, provider) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The nodes that may start now, and the services that may stop, in
    /// stable order. The returned starts are marked running.
    pub fn poll(&mut self) -> Vec<Action> {
        let mut actions = self.stops();
        if self.halted {
            return actions;
        }
        let mut from = 0;
        while let Some(at) = self.next_candidate(from) {
            let id = self.graph.order()[at as usize];
            if self.startable(id) {
                self.set(id, State::Running);
                actions.push(Action::Start(id));
            }
            from = at + 1;
        }
        actions
    }

    /// Services that are up (or being started and now useless) and that no
    /// waiting or running provider needs any more.
    fn stops(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        for k in 0..self.services.len() {
            let id = self.services[k];
            if self.state(id) == State::Up && self.live_users[id.get()] == 0 {
                self.set(id, State::Stopped);
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
        self.set(id, next);
        if outcome == Step::Failed {
            self.block_dependents(id);
        }
    }

    /// Takes back a node that was started but never ran (it waited for a slot and was
    /// cancelled): it is blocked once the scheduler is halted, and may start again
    /// otherwise.
    pub fn withdraw(&mut self, id: NodeId) {
        if self.state(id) == State::Running {
            let next = if self.halted {
                State::Blocked
            } else {
                State::Waiting
            };
            self.set(id, next);
        }
    }

    /// Records that a service which was up exited on its own: waiting
    /// providers that need it are blocked; it counts as stopped.
    pub fn service_exited(&mut self, service: NodeId) {
        if matches!(self.state(service), State::Up | State::Running) {
            self.set(service, State::Stopped);
            for k in 0..self.users[service.get()].len() {
                let p = self.users[service.get()][k];
                if self.state(p) == State::Waiting {
                    self.set(p, State::Blocked);
                    self.block_dependents(p);
                }
            }
        }
    }

    fn block_dependents(&mut self, id: NodeId) {
        let mut stack = vec![id];
        while let Some(node) = stack.pop() {
            for k in 0..self.outgoing[node.get()].len() {
                let next = self.outgoing[node.get()][k];
                if self.state(next) == State::Waiting {
                    self.set(next, State::Blocked);
                    stack.push(next);
                }
            }
        }
    }

    /// Stops starting anything new: every node that has not started is
    /// blocked. Running nodes finish; services stop when idle.
    pub fn halt(&mut self) {
        self.halted = true;
        let graph = self.graph;
        for id in graph.order() {
            if self.state(*id) == State::Waiting {
                self.set(*id, State::Blocked);
            }
        }
    }

    /// Whether [`Scheduler::halt`] was called: nothing new starts.
    pub fn is_halted(&self) -> bool {
        self.halted
    }

    /// Whether nothing runs, nothing can start and every service is stopped.
    pub fn is_finished(&self) -> bool {
        self.holding.is_empty() && (self.halted || !self.has_startable())
    }

    /// Whether a poll would start something. Only asked when nothing holds a resource, so
    /// the stops a poll makes first would change nothing.
    fn has_startable(&self) -> bool {
        let mut from = 0;
        while let Some(at) = self.next_candidate(from) {
            if self.startable(self.graph.order()[at as usize]) {
                return true;
            }
            from = at + 1;
        }
        false
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
mod reference;

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
        #![proptest_config(crate::testing::beside_source(ProptestConfig::with_cases(256)))]

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

        /// The indexed scheduler decides exactly as the scan of the whole graph it replaced
        /// (`reference`), action for action and state for state, whatever happens: random
        /// shapes, `--jobs`, wanted sets, failures, withdrawals, services exiting, a halt.
        #[test]
        fn the_indexed_scheduler_agrees_with_the_whole_graph_scan(
            g in random_graph(24),
            jobs in 1..5usize,
            mask in proptest::collection::vec(proptest::bool::weighted(0.8), 24),
            events in proptest::collection::vec((0..8u8, 0..64usize), 1..80),
        ) {
            let graph = g.seal();
            let wanted: BTreeSet<NodeId> = all_providers(&graph)
                .into_iter()
                .filter(|id| mask.get(id.get() % mask.len()).copied().unwrap_or(true))
                .collect();
            let jobs = NonZeroUsize::new(jobs).expect("non-zero");
            let mut fast = Scheduler::new(&graph, jobs, &wanted);
            let mut slow = reference::Reference::new(&graph, jobs, &wanted);
            prop_assert_eq!(fast.states(), slow.states());
            for (kind, pick) in events {
                prop_assert_eq!(fast.poll(), slow.poll());
                prop_assert_eq!(fast.states(), slow.states());
                prop_assert_eq!(fast.is_finished(), slow.is_finished());
                let live: Vec<NodeId> = graph
                    .order()
                    .iter()
                    .copied()
                    .filter(|id| matches!(fast.state(*id), State::Running | State::Up))
                    .collect();
                let Some(&id) = live.get(pick % live.len().max(1)) else {
                    if kind == 7 {
                        fast.halt();
                        slow.halt();
                    }
                    continue;
                };
                match kind {
                    0..=3 if fast.state(id) == State::Running => {
                        fast.complete(id, Step::Succeeded);
                        slow.complete(id, Step::Succeeded);
                    }
                    4 if fast.state(id) == State::Running => {
                        fast.complete(id, Step::Failed);
                        slow.complete(id, Step::Failed);
                    }
                    5 => {
                        fast.withdraw(id);
                        slow.withdraw(id);
                    }
                    6 if graph.node(id).service().is_some() => {
                        fast.service_exited(id);
                        slow.service_exited(id);
                    }
                    7 => {
                        fast.halt();
                        slow.halt();
                    }
                    _ => {
                        fast.complete(id, Step::Succeeded);
                        slow.complete(id, Step::Succeeded);
                    }
                }
                prop_assert_eq!(fast.states(), slow.states());
            }
            prop_assert_eq!(fast.poll(), slow.poll());
            prop_assert_eq!(fast.is_finished(), slow.is_finished());
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
