//! The dispatcher: one loop, on the thread that calls `execute` (driving the invocation's
//! runtime with `Handle::block_on`), over the executors' events, SIGINT/SIGTERM and the
//! heartbeat's ticks. It is thin: each turn it asks the scheduling core (`scheduling.rs`) what
//! may start, has the shell (`shell.rs`) carry out the commands the core returns, feeding
//! what came of them back, and waits for the next event; when the core has nothing left,
//! the shell accounts for every wanted provider that never got a result (`conclude.rs`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use proofgraph_graph::NodeId;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::proof::receipt::RunIsolation;

use super::events::ProviderRun;
use super::executor::{ExecEvent, Executor};
use super::handoff::{Plan, diag};
use super::heartbeat::Heartbeat;
use super::layers::Worlds;
use super::local_run::LocalRun;
use super::recorder::Recorder;
use super::remote_run::RemoteRun;
use super::sandboxes::Sandboxes;
use super::scheduling::{Core, Event, Fallback, Routing, admitted};
use super::shell::{Shell, ShellCommand};
use super::signals::Signals;

/// The loop of one run: its core and what surrounds it.
pub(super) struct Dispatcher<'p, 'a> {
    core: Core<'a, Shell<'p, 'a>>,
    shell: Shell<'p, 'a>,
}

/// What the loop leaves: each wanted provider's result in graph order, whether it was
/// interrupted, and its findings.
pub(super) struct Dispatched {
    pub(super) providers: Vec<ProviderRun>,
    pub(super) interrupted: bool,
    pub(super) diagnostics: Vec<Diagnostic>,
}

impl<'p, 'a> Dispatcher<'p, 'a> {
    /// The loop for `wanted` on `local` (absent when nothing runs a command), with the
    /// sandboxes made and the findings so far.
    #[expect(clippy::too_many_arguments, reason = "the pieces a run is made of")]
    pub(super) fn new(
        plan: &'p Plan<'a>,
        wanted: &BTreeSet<NodeId>,
        local: Option<LocalRun>,
        isolation: RunIsolation,
        sandboxes: Sandboxes,
        worlds: Worlds,
        log_dir: PathBuf,
        recorder: Recorder,
        diagnostics: Vec<Diagnostic>,
    ) -> Self {
        let (routing, remote) = match &plan.remote {
            Some(offload) => (
                routing(plan, offload),
                Some(RemoteRun::new(
                    std::sync::Arc::clone(&offload.engine),
                    tokio::runtime::Handle::current(),
                )),
            ),
            None => (Routing::local(plan.jobs), None),
        };
        Dispatcher {
            core: Core::new(plan.graph, wanted, plan.keep_going, routing),
            shell: Shell {
                plan,
                local,
                remote,
                isolation,
                sandboxes,
                worlds,
                started: Default::default(),
                reports: Default::default(),
                service_logs: Default::default(),
                setup_failures: Default::default(),
                results: Default::default(),
                recorder,
                recorded: 0,
                diagnostics,
                log_dir,
                next_log: 0,
                running: BTreeSet::new(),
                total: wanted.len(),
                heartbeat: Heartbeat::new(plan.heartbeat, plan.stream.clone()),
                stopping: false,
            },
        }
    }

    /// Runs the setup commands, then every wanted provider the core lets start, until
    /// nothing is left or a signal stops it; then accounts for the ones left over.
    pub(super) async fn drive(mut self, wanted: &BTreeSet<NodeId>) -> Dispatched {
        let mut signals = Signals::listen(self.shell.plan.interrupt);
        let mut interrupted = signals.early.is_set() || !self.shell.setup(&mut signals).await;
        if interrupted {
            self.feed(Event::Signal);
        } else {
            self.shell.plan_reports(wanted);
            interrupted = self.dispatch(&mut signals).await;
        }
        if let Some(local) = self.shell.local.take() {
            local.shutdown();
        }
        // Every action still on the engine is cancelled there.
        if let Some(remote) = self.shell.remote.take() {
            remote.shutdown().await;
        }
        let leftovers = self.core.leftovers(wanted, interrupted);
        self.shell.conclude(leftovers, self.core.scheduler());
        // After the loop: nothing is left to halt.
        let _ = self.shell.collect(true);
        let graph = self.shell.plan.graph;
        let providers = graph
            .order()
            .iter()
            .filter_map(|id| self.shell.results.remove(id))
            .collect();
        Dispatched {
            providers,
            interrupted,
            diagnostics: self.shell.diagnostics,
        }
    }

    /// The loop proper; whether a signal stopped it.
    async fn dispatch(&mut self, signals: &mut Signals) -> bool {
        loop {
            // What is started can make more startable once the core hears of it (a
            // service up makes its probe startable): ask until it has nothing more.
            loop {
                let commands = self.core.poll(&mut self.shell);
                if commands.is_empty() {
                    break;
                }
                self.carry(commands);
            }
            if self.core.is_finished() {
                return false;
            }
            if self.core.is_idle() {
                // Nothing to wait for: every start was resolved in-process.
                continue;
            }
            let tick = self.shell.heartbeat.tick();
            let quiet = async move {
                match tick {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let woke = {
                let Shell { local, remote, .. } = &mut self.shell;
                tokio::select! {
                    () = quiet => Woke::Tick,
                    event = next_event(local.as_mut(), remote.as_mut()) => Woke::Event(event),
                    () = signals.recv() => Woke::Signal,
                }
            };
            match woke {
                Woke::Tick => self.shell.beat(),
                Woke::Event(Some(event)) => self.on_executor_event(event),
                Woke::Event(None) => {
                    self.shell.diagnostics.push(diag(
                        Code::IsolationUnavailable,
                        "the run's init stopped reporting".to_owned(),
                        "Rerun; if it persists, run `proofgraph doctor`.",
                    ));
                    self.feed(Event::ExecutorFailed);
                    return false;
                }
                Woke::Signal => {
                    self.feed(Event::Signal);
                    return true;
                }
            }
            if self.shell.stopping {
                return true;
            }
        }
    }

    /// An executor's event, for the core.
    fn on_executor_event(&mut self, event: ExecEvent) {
        let event = match event {
            ExecEvent::Ended { job, exit } => Event::Ended { job, exit },
            ExecEvent::Ready(job) => Event::Ready(job),
            ExecEvent::NotReady { job, reason } => Event::NotReady { job, reason },
            ExecEvent::Lost { job, reason } => Event::Lost { job, reason },
            ExecEvent::Stage { provider, stage } => {
                return self.shell.remote_stage(&provider, &stage);
            }
            ExecEvent::Failed { reason } => {
                self.shell.diagnostics.push(diag(
                    Code::IsolationUnavailable,
                    format!("the run's init failed: {reason}"),
                    "Rerun; if it persists, run `proofgraph doctor`.",
                ));
                Event::ExecutorFailed
            }
        };
        self.feed(event);
    }

    /// Tells the core what happened and carries out what it answers.
    fn feed(&mut self, event: Event) {
        let commands = self.core.handle(event, &mut self.shell);
        self.carry(commands);
    }

    /// Carries out `commands` in order, each one's consequences told to the core before
    /// the next is carried out.
    fn carry(&mut self, commands: Vec<ShellCommand>) {
        for command in commands {
            for event in self.shell.carry(command) {
                self.feed(event);
            }
        }
    }
}

/// What ended a wait.
enum Woke {
    /// The heartbeat is due.
    Tick,
    /// An executor reported (`None`: it reports nothing more).
    Event(Option<ExecEvent>),
    /// SIGINT or SIGTERM.
    Signal,
}

/// The next event of either executor (the remote one, when there is one, too).
async fn next_event(
    local: Option<&mut LocalRun>,
    remote: Option<&mut RemoteRun>,
) -> Option<ExecEvent> {
    async fn one(executor: Option<&mut (dyn Executor + 'static)>) -> Option<ExecEvent> {
        match executor {
            Some(executor) => executor.next_event().await,
            None => std::future::pending().await,
        }
    }
    tokio::select! {
        event = one(local.map(|l| l as &mut (dyn Executor + 'static))) => event,
        event = one(remote.map(|r| r as &mut (dyn Executor + 'static))) => event,
    }
}

/// Where each provider's execution runs when `offload` takes the eligible ones: those it
/// names on the engine, at most its `jobs` at once, the rest here.
fn routing(plan: &Plan<'_>, offload: &super::handoff::Offload) -> Routing {
    Routing {
        local: admitted(plan.jobs),
        remote: offload.jobs.get(),
        remote_nodes: offload
            .providers
            .iter()
            .filter_map(|id| plan.graph.provider(id))
            .collect(),
        fallback: if offload.falls_back {
            Fallback::Local
        } else {
            Fallback::Fail
        },
    }
}
