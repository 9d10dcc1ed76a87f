//! The scheduler as it was first written: every decision a scan of the whole graph. Kept,
//! for tests only, as the reference the indexed [`super::Scheduler`] must agree with action
//! for action.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use super::{Action, State, Step};
use crate::graph::{EdgeKind, NodeId, NodeKind, SealedGraph};
use crate::resource;

/// The scheduler's state.
#[derive(Debug, Clone)]
pub(super) struct Reference<'g> {
    graph: &'g SealedGraph,
    jobs: usize,
    states: Vec<State>,
    halted: bool,
}

impl<'g> Reference<'g> {
    /// A scheduler that will run the `wanted` providers with at most `jobs`
    /// providers at a time.
    pub(super) fn new(
        graph: &'g SealedGraph,
        jobs: NonZeroUsize,
        wanted: &BTreeSet<NodeId>,
    ) -> Self {
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
    pub(super) fn state(&self, id: NodeId) -> State {
        self.states[id.get()]
    }

    /// Every node's state, indexed by node.
    pub(super) fn states(&self) -> &[State] {
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
    pub(super) fn poll(&mut self) -> Vec<Action> {
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
    pub(super) fn complete(&mut self, id: NodeId, outcome: Step) {
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
    pub(super) fn withdraw(&mut self, id: NodeId) {
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
    pub(super) fn service_exited(&mut self, service: NodeId) {
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
    pub(super) fn halt(&mut self) {
        self.halted = true;
        for state in &mut self.states {
            if *state == State::Waiting {
                *state = State::Blocked;
            }
        }
    }

    /// Whether nothing runs, nothing can start and every service is stopped.
    pub(super) fn is_finished(&self) -> bool {
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
