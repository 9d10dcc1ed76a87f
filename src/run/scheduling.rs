//! The scheduling core: a state machine that is told what happened ([`Event`]) and
//! answers what to do ([`Command`]), as nextest's `DispatcherContext::handle_event` does.
//! It owns the graph's scheduler, the jobs in flight and the executor each runs on, the
//! identical executions providers share, the services up and why any failed.
//!
//! It does no I/O, reads no clock and starts no process. What needs the world — preparing a provider's
//! execution, turning a job's exit into a result, judging it, the end of a service's log —
//! it asks its [`Host`]; what is to be done it returns for the loop (`event_loop.rs`) to
//! carry out, and the loop feeds back what came of it. Its tests drive it with scripted
//! events (`scheduling/tests.rs`).
//!
//! Each provider's execution is routed to an executor ([`Where`]): the local run, with
//! `--jobs` (twice that admitted, see [`admitted`]) in flight, or a remote engine, with a
//! bound of its own. A job the remote executor loses runs again here, in the same
//! hermetic sandbox as any local job, with a line saying so ([`Fallback::Local`]), or
//! fails its providers with the reason ([`Fallback::Fail`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::num::NonZeroUsize;

use proofgraph_graph::NodeId;
use proofgraph_graph::SealedGraph;
use proofgraph_graph::graph::NodeKind;
use proofgraph_graph::schedule::{Action, Scheduler, State, Step};

use crate::decide::judge::{self, Ended};

use super::ended::Finished;
use super::executor::{Exit, JobRef, Where};

/// How many providers the local run is handed at once: it holds `jobs` of their commands
/// at a time, and the rest wait in it for a slot.
pub(super) fn admitted(jobs: NonZeroUsize) -> NonZeroUsize {
    jobs.saturating_add(jobs.get())
}

/// Whether the local run must be told to go on after an execution was judged: it held
/// the providers waiting in it because this one is judged from more than its exit status
/// (`hold`), or because it did not exit 0.
pub(super) fn resumes(hold: bool, ended: &Ended) -> bool {
    let exited_0 = matches!(ended, Ended::Exited(e) if judge::succeeded(e));
    hold || !exited_0
}

/// What the core asks of the world around it.
pub(super) trait Host {
    /// What makes two providers' executions one (`job::ExecKey`).
    type Key: Ord + Clone + std::fmt::Debug;
    /// A prepared execution, as the loop starts it (again, locally, after a loss).
    type Work: Clone + std::fmt::Debug;
    /// A judged result, for the receipt writer.
    type Record;

    /// Prepares provider `id`'s execution, or decides it without one.
    fn prepare(&mut self, id: NodeId) -> Prepared<Self::Key, Self::Work>;

    /// What a provider's execution `job`, which ended with `exit`, is judged from.
    fn finished(&mut self, job: JobRef, exit: Exit) -> Finished;

    /// What a provider whose execution could not run is judged from: an error, dated now
    /// (`not_started`: its command could not start, a configuration problem).
    fn error(&mut self, reason: String, not_started: bool) -> Finished;

    /// Judges provider `id` from `finished`: whether it passed, and its result.
    fn judge(&mut self, id: NodeId, finished: &Finished) -> (bool, Self::Record);

    /// The end of service `id`'s log, to say why its users fail.
    fn service_log_tail(&mut self, id: NodeId) -> String;
}

/// A provider, prepared.
#[derive(Debug)]
pub(super) enum Prepared<K, W> {
    /// Decided without running a command (judged in-process, or refused).
    Decided(Box<Finished>),
    /// To run: its execution's key, whether the run holds the providers waiting for a
    /// slot until it is judged, and what starts it.
    Run { key: K, hold: bool, work: W },
}

/// Where each provider's execution runs, and how many at once.
#[derive(Debug, Clone)]
pub(super) struct Routing {
    /// Providers in flight on the local run at once.
    pub(super) local: NonZeroUsize,
    /// Providers in flight on the remote executor at once.
    pub(super) remote: usize,
    /// The providers whose executions go to the remote executor.
    pub(super) remote_nodes: BTreeSet<NodeId>,
    /// What a job the remote executor lost becomes.
    pub(super) fallback: Fallback,
}

impl Routing {
    /// Everything on the local run, `jobs` at a time.
    pub(super) fn local(jobs: NonZeroUsize) -> Self {
        Routing {
            local: admitted(jobs),
            remote: 0,
            remote_nodes: BTreeSet::new(),
            fallback: Fallback::Fail,
        }
    }

    fn bound(&self, on: Where) -> usize {
        match on {
            Where::Local => self.local.get(),
            Where::Remote => self.remote,
        }
    }
}

/// What a job the remote executor lost becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fallback {
    /// It runs here, sandboxed as any local job (`--executor auto`).
    Local,
    /// Its providers fail, saying why (`--executor remote`).
    Fail,
}

/// What happened.
#[derive(Debug)]
pub(super) enum Event {
    /// A job was handed to its executor.
    Started(JobRef),
    /// A job could not be handed to its executor: why, and whether its command could
    /// not start (`spawn`: a configuration problem, not a result).
    NotStarted {
        job: JobRef,
        reason: String,
        spawn: bool,
    },
    /// A job ended.
    Ended { job: JobRef, exit: Exit },
    /// A probe saw its service ready.
    Ready(JobRef),
    /// A probe gave up.
    NotReady { job: JobRef, reason: String },
    /// An executor cannot say how a job ended.
    Lost { job: JobRef, reason: String },
    /// The receipt writer persisted a result (`written`: every receipt of it).
    Persisted { written: bool },
    /// The receipt writer stopped.
    RecorderStopped,
    /// An executor failed: nothing more comes from it.
    ExecutorFailed,
    /// SIGINT or SIGTERM.
    Signal,
}

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Start<W> {
    /// A provider's execution (`node`: the first provider judged from it).
    Provider { node: NodeId, work: W },
    /// A service.
    Service(NodeId),
    /// A service's readiness probe.
    Probe { probe: NodeId, service: NodeId },
}

/// A line for a person that the core decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Note {
    /// SIGINT or SIGTERM stops the run.
    Interrupted,
    /// A service was started.
    ServiceStarted(NodeId),
    /// A service no longer needed is being stopped.
    ServiceStopping(NodeId),
    /// A service ended on its own, this way.
    ServiceEnded { service: NodeId, how: String },
    /// The remote executor lost a provider's execution: it runs here.
    RanLocally { node: NodeId, reason: String },
}

/// What to do.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Command<W, R> {
    /// Start `what` as `job` on `on`.
    Start {
        job: JobRef,
        on: Where,
        what: Start<W>,
    },
    /// Take back `job` if it has not started.
    Cancel { job: JobRef, on: Where },
    /// Stop `job` (a service, a probe, or anything on an interrupt).
    Kill { job: JobRef, on: Where },
    /// Let the jobs waiting on `on` start.
    Resume { on: Where },
    /// Hand a judged result to the receipt writer (and, `keep_artifacts`, keep what its
    /// passing execution wrote that its `artifacts` name).
    Record { record: R, keep_artifacts: bool },
    /// A provider was taken back before it ran: it is no longer running.
    Withdrawn(NodeId),
    /// Say this.
    Say(Note),
    /// End the loop: stop every executor.
    Halt,
}

/// What a job in flight runs for.
#[derive(Debug, Clone)]
enum Purpose<K, W> {
    /// One execution, shared by the providers waiting for it.
    Providers {
        key: K,
        node: NodeId,
        hold: bool,
        work: W,
    },
    Service(NodeId),
    Probe {
        probe: NodeId,
        service: NodeId,
    },
}

#[derive(Debug)]
struct InFlight<K, W> {
    purpose: Purpose<K, W>,
    on: Where,
}

/// Where one execution stands.
#[derive(Debug)]
enum Execution {
    Running,
    Done(Box<Finished>),
}

/// Why a wanted provider was left without a result when the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Leftover {
    /// A service it needs failed: an error receipt, with this reason.
    Error(String),
    /// The run was interrupted first.
    Interrupted,
    /// A dependency did not pass, or the run stopped after a failure.
    Blocked,
}

type Commands<H> = Vec<Command<<H as Host>::Work, <H as Host>::Record>>;

/// The state of one run's scheduling.
pub(super) struct Core<'g, H: Host> {
    graph: &'g SealedGraph,
    scheduler: Scheduler<'g>,
    keep_going: bool,
    routing: Routing,
    next_job: u64,
    jobs: BTreeMap<JobRef, InFlight<H::Key, H::Work>>,
    /// Provider jobs per executor: in flight, and waiting for one of its slots.
    in_flight: BTreeMap<Where, usize>,
    queued: VecDeque<JobRef>,
    executions: BTreeMap<H::Key, Execution>,
    waiting: BTreeMap<H::Key, Vec<NodeId>>,
    services: BTreeMap<NodeId, JobRef>,
    /// Per service, why it failed its users.
    probe_failures: BTreeMap<NodeId, String>,
    out: Commands<H>,
}

impl<'g, H: Host> Core<'g, H> {
    /// The core of a run of `wanted` in `graph`.
    pub(super) fn new(
        graph: &'g SealedGraph,
        wanted: &BTreeSet<NodeId>,
        keep_going: bool,
        routing: Routing,
    ) -> Self {
        // Local only, the scheduler admits what the local run is handed. With a remote
        // executor, each executor's slots bound what runs and the core holds what waits
        // for one: the scheduler admits every provider, so a full executor never keeps
        // the other's providers from starting.
        let admitted = if routing.remote == 0 {
            routing.local
        } else {
            NonZeroUsize::MAX
        };
        Core {
            graph,
            scheduler: Scheduler::new(graph, admitted, wanted),
            keep_going,
            routing,
            next_job: 0,
            jobs: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            queued: VecDeque::new(),
            executions: BTreeMap::new(),
            waiting: BTreeMap::new(),
            services: BTreeMap::new(),
            probe_failures: BTreeMap::new(),
            out: Vec::new(),
        }
    }

    /// What the scheduler lets start now (starting one node can make others startable:
    /// it is asked until it has nothing more), and the services it stops.
    pub(super) fn poll(&mut self, host: &mut H) -> Commands<H> {
        loop {
            let actions = self.scheduler.poll();
            if actions.is_empty() {
                break;
            }
            for action in actions {
                match action {
                    Action::Start(id) => self.start(id, host),
                    Action::Stop(id) => self.stop_service(id),
                }
            }
        }
        std::mem::take(&mut self.out)
    }

    /// Takes in what happened; what to do about it.
    pub(super) fn handle(&mut self, event: Event, host: &mut H) -> Commands<H> {
        match event {
            Event::Started(job) => self.started(job),
            Event::NotStarted { job, reason, spawn } => self.not_started(job, reason, spawn, host),
            Event::Ended { job, exit } => self.ended(job, exit, host),
            Event::Ready(job) => {
                if let Some(Purpose::Probe { probe, .. }) = self.take(job) {
                    self.scheduler.complete(probe, Step::Succeeded);
                }
            }
            Event::NotReady { job, reason } => {
                if let Some(Purpose::Probe { probe, .. }) = self.take(job) {
                    self.probe_failed(probe, &reason);
                }
            }
            Event::Lost { job, reason } => self.lost(job, reason, host),
            Event::Persisted { written } => {
                // The store cannot take receipts: running more would prove nothing that
                // could be kept.
                if !written && !self.keep_going {
                    self.halt();
                }
            }
            Event::RecorderStopped => self.halt(),
            Event::ExecutorFailed => self.scheduler.halt(),
            Event::Signal => self.interrupt(),
        }
        std::mem::take(&mut self.out)
    }

    /// Whether nothing runs and nothing can start.
    pub(super) fn is_finished(&self) -> bool {
        self.scheduler.is_finished()
    }

    /// Whether no job is in flight: nothing to wait for.
    pub(super) fn is_idle(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The scheduler, as the run ends it.
    pub(super) fn scheduler(&self) -> &Scheduler<'g> {
        &self.scheduler
    }

    /// Each wanted provider left without a result, in graph order, and why.
    pub(super) fn leftovers(
        &self,
        wanted: &BTreeSet<NodeId>,
        interrupted: bool,
    ) -> Vec<(NodeId, Leftover)> {
        let graph = self.graph;
        graph
            .order()
            .iter()
            .copied()
            .filter(|id| {
                wanted.contains(id)
                    && matches!(
                        self.scheduler.state(*id),
                        State::Blocked | State::Waiting | State::Running
                    )
            })
            .map(|id| {
                let probe_reason = graph
                    .services_of(id)
                    .into_iter()
                    .find_map(|s| self.probe_failures.get(&s).cloned());
                let left = match (interrupted, probe_reason) {
                    (false, Some(reason)) => Leftover::Error(reason),
                    (true, _) => Leftover::Interrupted,
                    (false, None) => Leftover::Blocked,
                };
                (id, left)
            })
            .collect()
    }

    fn job(&mut self, purpose: Purpose<H::Key, H::Work>, on: Where) -> JobRef {
        self.next_job += 1;
        let job = JobRef(self.next_job);
        self.jobs.insert(job, InFlight { purpose, on });
        job
    }

    fn take(&mut self, job: JobRef) -> Option<Purpose<H::Key, H::Work>> {
        self.jobs.remove(&job).map(|f| f.purpose)
    }

    fn start(&mut self, id: NodeId, host: &mut H) {
        let graph = self.graph;
        match &graph.node(id).kind {
            NodeKind::Provider(_) => self.start_provider(id, host),
            NodeKind::Service(_) => {
                let job = self.job(Purpose::Service(id), Where::Local);
                self.command_start(job, Where::Local, Start::Service(id));
            }
            NodeKind::Probe(probe) => {
                let Some(service) = graph.service(&probe.service) else {
                    return;
                };
                let purpose = Purpose::Probe { probe: id, service };
                let job = self.job(purpose, Where::Local);
                let what = Start::Probe { probe: id, service };
                self.command_start(job, Where::Local, what);
            }
        }
    }

    fn command_start(&mut self, job: JobRef, on: Where, what: Start<H::Work>) {
        self.out.push(Command::Start { job, on, what });
    }

    /// A provider is decided now, attached to an identical execution (running, or
    /// finished: judged from it), or started as a new one where it is routed.
    fn start_provider(&mut self, id: NodeId, host: &mut H) {
        let (key, hold, work) = match host.prepare(id) {
            Prepared::Decided(finished) => {
                let ok = self.record(id, &finished, false, host);
                return self.finish(id, ok);
            }
            Prepared::Run { key, hold, work } => (key, hold, work),
        };
        match self.executions.get(&key) {
            Some(Execution::Running) => {
                self.waiting.entry(key).or_default().push(id);
                return;
            }
            Some(Execution::Done(finished)) => {
                let finished = (**finished).clone();
                let ok = self.record(id, &finished, false, host);
                return self.finish(id, ok);
            }
            None => {}
        }
        let on = if self.routing.remote_nodes.contains(&id) {
            Where::Remote
        } else {
            Where::Local
        };
        self.executions.insert(key.clone(), Execution::Running);
        self.waiting.entry(key.clone()).or_default().push(id);
        let purpose = Purpose::Providers {
            key,
            node: id,
            hold,
            work,
        };
        let job = self.job(purpose, on);
        self.launch(job);
    }

    /// Starts a provider job on its executor when it has a slot; else it waits for one.
    fn launch(&mut self, job: JobRef) {
        let Some(InFlight {
            purpose: Purpose::Providers { node, work, .. },
            on,
        }) = self.jobs.get(&job)
        else {
            return;
        };
        let (on, node, work) = (*on, *node, work.clone());
        let count = self.in_flight.entry(on).or_default();
        if *count >= self.routing.bound(on) {
            self.queued.push_back(job);
            return;
        }
        *count += 1;
        self.command_start(job, on, Start::Provider { node, work });
    }

    /// A slot of `on` is free: the first job waiting for one starts.
    fn slot_freed(&mut self, on: Where) {
        if let Some(count) = self.in_flight.get_mut(&on) {
            *count = count.saturating_sub(1);
        }
        let next = self
            .queued
            .iter()
            .position(|job| self.jobs.get(job).is_some_and(|f| f.on == on));
        if let Some(at) = next
            && let Some(job) = self.queued.remove(at)
        {
            self.launch(job);
        }
    }

    /// Judges `id` from `finished` and hands the result on; whether it passed.
    fn record(&mut self, id: NodeId, finished: &Finished, fresh: bool, host: &mut H) -> bool {
        let (ok, record) = host.judge(id, finished);
        self.out.push(Command::Record {
            record,
            keep_artifacts: ok && fresh,
        });
        ok
    }

    /// Tells the scheduler a provider finished; a failure stops new starts unless
    /// `--keep-going`.
    fn finish(&mut self, id: NodeId, ok: bool) {
        self.scheduler
            .complete(id, if ok { Step::Succeeded } else { Step::Failed });
        if !ok && !self.keep_going {
            self.halt();
        }
    }

    /// Starts nothing more: blocks what has not started, and takes back the provider jobs
    /// still waiting for a slot (the ones running finish).
    fn halt(&mut self) {
        self.scheduler.halt();
        let queued: Vec<JobRef> = self.queued.drain(..).collect();
        for job in queued {
            if let Some(Purpose::Providers { key, .. }) = self.take(job) {
                self.withdraw(&key);
            }
        }
        for (job, f) in &self.jobs {
            if matches!(f.purpose, Purpose::Providers { .. }) {
                self.out.push(Command::Cancel {
                    job: *job,
                    on: f.on,
                });
            }
        }
    }

    /// SIGINT or SIGTERM: nothing more starts, every job in flight is stopped, the loop
    /// ends; the providers left get no result.
    fn interrupt(&mut self) {
        self.scheduler.halt();
        self.out.push(Command::Say(Note::Interrupted));
        for (job, f) in &self.jobs {
            self.out.push(Command::Kill {
                job: *job,
                on: f.on,
            });
        }
        self.out.push(Command::Halt);
    }

    /// An execution was taken back before it ran: it proves nothing either way.
    fn withdraw(&mut self, key: &H::Key) {
        self.executions.remove(key);
        for id in self.waiting.remove(key).unwrap_or_default() {
            self.scheduler.withdraw(id);
            self.out.push(Command::Withdrawn(id));
        }
    }

    fn started(&mut self, job: JobRef) {
        if let Some(InFlight {
            purpose: Purpose::Service(id),
            ..
        }) = self.jobs.get(&job)
        {
            let id = *id;
            self.services.insert(id, job);
            self.out.push(Command::Say(Note::ServiceStarted(id)));
            self.scheduler.complete(id, Step::Succeeded);
        }
    }

    fn not_started(&mut self, job: JobRef, reason: String, spawn: bool, host: &mut H) {
        let Some(InFlight { purpose, on }) = self.jobs.remove(&job) else {
            return;
        };
        match purpose {
            Purpose::Providers { key, .. } => {
                self.executions.remove(&key);
                let finished = host.error(reason, spawn);
                for id in self.waiting.remove(&key).unwrap_or_default() {
                    self.record(id, &finished, false, host);
                    self.finish(id, false);
                }
                self.slot_freed(on);
            }
            Purpose::Service(id) => {
                self.probe_failures.insert(id, reason);
                self.scheduler.complete(id, Step::Failed);
            }
            Purpose::Probe { probe, service } => {
                self.probe_failures.insert(service, reason);
                self.scheduler.complete(probe, Step::Failed);
            }
        }
    }

    fn ended(&mut self, job: JobRef, exit: Exit, host: &mut H) {
        let Some(InFlight { purpose, on }) = self.jobs.remove(&job) else {
            return;
        };
        match purpose {
            Purpose::Providers { key, hold, .. } => {
                if exit.started {
                    let finished = host.finished(job, exit);
                    self.execution_ended(key, &finished, hold, on, host);
                } else {
                    self.withdraw(&key);
                }
                self.slot_freed(on);
            }
            Purpose::Service(id) => self.service_exited(id, &exit, host),
            Purpose::Probe { .. } => {}
        }
    }

    /// An execution ended: every provider waiting for it is judged from it, and the run
    /// goes on unless it is stopping.
    fn execution_ended(
        &mut self,
        key: H::Key,
        finished: &Finished,
        hold: bool,
        on: Where,
        host: &mut H,
    ) {
        self.executions
            .insert(key.clone(), Execution::Done(Box::new(finished.clone())));
        for id in self.waiting.remove(&key).unwrap_or_default() {
            let ok = self.record(id, finished, true, host);
            self.finish(id, ok);
        }
        // The local run held the providers waiting in it (this one is judged from more
        // than its exit status, or did not exit 0): judged and read, they may start
        // unless the run is stopping (then `halt` took them back).
        if on == Where::Local && resumes(hold, &finished.ended) && !self.scheduler.is_halted() {
            self.out.push(Command::Resume { on });
        }
    }

    /// The remote executor lost a job: it runs here, or its providers fail, by the
    /// routing's fallback; once the run stops starting things, it is taken back.
    fn lost(&mut self, job: JobRef, reason: String, host: &mut H) {
        let Some(InFlight { purpose, on }) = self.jobs.remove(&job) else {
            return;
        };
        let Purpose::Providers {
            key,
            node,
            hold,
            work,
        } = purpose
        else {
            return;
        };
        self.slot_freed(on);
        if self.scheduler.is_halted() {
            return self.withdraw(&key);
        }
        match self.routing.fallback {
            Fallback::Local => {
                self.out
                    .push(Command::Say(Note::RanLocally { node, reason }));
                let purpose = Purpose::Providers {
                    key,
                    node,
                    hold,
                    work,
                };
                let job = self.job(purpose, Where::Local);
                self.launch(job);
            }
            Fallback::Fail => {
                let why = format!(
                    "the remote executor lost its execution ({reason}); with `--executor remote` it does not run on this machine"
                );
                let finished = host.error(why, false);
                self.execution_ended(key, &finished, hold, on, host);
            }
        }
    }

    fn stop_service(&mut self, id: NodeId) {
        if let Some(job) = self.services.get(&id) {
            let job = *job;
            self.out.push(Command::Say(Note::ServiceStopping(id)));
            self.out.push(Command::Kill {
                job,
                on: Where::Local,
            });
        }
    }

    /// A service's process ended: unless the run stopped it, the providers that need it
    /// fail, saying how, and its probe stops waiting.
    fn service_exited(&mut self, id: NodeId, exit: &Exit, host: &mut H) {
        self.services.remove(&id);
        if exit.killed {
            return;
        }
        let graph = self.graph;
        let how = how_ended(exit.spawn_error.as_deref(), exit.code, exit.signal);
        let name = &graph.node(id).name;
        let ready = graph
            .outgoing(id)
            .iter()
            .any(|(probe, _)| self.scheduler.state(*probe) == State::Succeeded);
        let tail = host.service_log_tail(id);
        self.probe_failures
            .insert(id, ended_reason(name, &how, ready, &tail));
        self.out
            .push(Command::Say(Note::ServiceEnded { service: id, how }));
        // Its probe cannot succeed now: stop waiting for it.
        for (job, f) in &self.jobs {
            if let Purpose::Probe { probe, .. } = f.purpose
                && graph.incoming(probe).iter().any(|(s, _)| *s == id)
            {
                self.out.push(Command::Kill {
                    job: *job,
                    on: f.on,
                });
            }
        }
        self.scheduler.service_exited(id);
    }

    /// A probe gave up: its service was never seen ready (the first reason stands).
    fn probe_failed(&mut self, probe: NodeId, reason: &str) {
        for (service, _) in self.graph.incoming(probe) {
            let name = &self.graph.node(service).name;
            self.probe_failures
                .entry(service)
                .or_insert_with(|| format!("{name} was never observed ready: {reason}"));
        }
        self.scheduler.complete(probe, Step::Failed);
    }
}

/// How a service that the run did not stop ended.
pub(super) fn how_ended(
    spawn_error: Option<&str>,
    code: Option<i32>,
    signal: Option<i32>,
) -> String {
    match (spawn_error, code, signal) {
        (Some(e), _, _) => format!("could not start: {e}"),
        (None, Some(c), _) => format!("exited with code {c}"),
        (None, None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".to_owned(),
    }
}

/// Why the providers that need a service that ended on its own fail: how and when it
/// ended (`ready`: after its probe saw it ready), and the end of its log.
pub(super) fn ended_reason(name: &str, how: &str, ready: bool, tail: &str) -> String {
    let when = if ready {
        "before its users finished"
    } else {
        "before it was ready"
    };
    let tail = if tail.is_empty() {
        String::new()
    } else {
        format!("; its log ends with: {tail}")
    };
    format!("{name} {how} {when}{tail}")
}

#[cfg(test)]
mod tests;
