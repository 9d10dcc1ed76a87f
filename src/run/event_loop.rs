//! The dispatcher: one loop, on the thread that calls `execute` (driving the invocation's
//! runtime with `Handle::block_on`), over the run's events and
//! SIGINT/SIGTERM. Each turn asks the graph's pure scheduler what may start, starts it
//! (providers: `provider.rs`; services and probes: `services.rs`), and waits for the next
//! event; when the scheduler has nothing left, it accounts for every wanted provider that
//! never got a result (blocked, interrupted, or an error receipt when a service failed).
//!
//! The loop owns every piece of the run's state ([`Dispatcher`]); the files beside it add
//! its methods for one kind of work each, and judging a finished execution is in
//! `finished.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;
use std::path::PathBuf;

use proofgraph_graph::graph::NodeKind;
use proofgraph_graph::schedule::{Action, Scheduler, Step};
use proofgraph_graph::{NodeId, RepoId};
use proofgraph_sandbox::{Event, JobId, Run};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::base::diagnostic::{Code, Diagnostic};

use super::ended::{self, Finished};
use super::events::{Line, Progress, ProviderRun};
use super::handoff::{Plan, diag};
use super::heartbeat::Heartbeat;
use super::job::{ExecKey, Jobs};
use super::layers::{ExecDirs, Files, Seen, Worlds};
use super::recorder::{Persisted, Recorder};
use super::sandboxes::Sandboxes;
use super::signals::Signals;
use crate::proof::receipt::RunIsolation;

/// How many providers the scheduler may hand to the run at once: the run itself holds
/// `jobs` of their commands at a time, and the rest wait in it for a slot.
pub(super) fn admitted(jobs: NonZeroUsize) -> NonZeroUsize {
    jobs.saturating_add(jobs.get())
}

/// What a job is running for.
#[derive(Debug, Clone)]
pub(super) enum Purpose {
    /// One execution shared by these providers.
    Providers {
        key: ExecKey,
        /// Where its repositories were, and where what it wrote is.
        dirs: ExecDirs,
        log: PathBuf,
        /// Whether the run holds the providers waiting for a slot when it ends, even
        /// with exit status 0, until this loop has judged it and resumes them.
        hold: bool,
    },
    /// A service.
    Service(NodeId),
    /// A service's probe.
    Probe(NodeId),
}

/// Where one execution stands.
#[derive(Debug, Clone)]
pub(super) enum Execution {
    Running,
    Done(Box<Finished>),
}

/// The state of one run, owned by its loop.
pub(super) struct Dispatcher<'p, 'a> {
    pub(super) plan: &'p Plan<'a>,
    pub(super) scheduler: Scheduler<'a>,
    pub(super) run: Option<Run>,
    /// How isolated the run is (what receipts record; whether a port in use is refused).
    pub(super) isolation: RunIsolation,
    pub(super) sandboxes: Sandboxes,
    /// Each execution's own world.
    pub(super) worlds: Worlds,
    pub(super) jobs: BTreeMap<JobId, Purpose>,
    /// Execution key → the job running it, or its finished result.
    pub(super) executions: BTreeMap<ExecKey, Execution>,
    /// Providers attached to an execution, waiting for it.
    pub(super) waiting: BTreeMap<ExecKey, Vec<NodeId>>,
    /// Per execution, the report paths (repository, path) of every wanted provider that
    /// may be judged from it: all emptied where it writes before it starts.
    pub(super) reports: BTreeMap<ExecKey, Vec<(Option<RepoId>, String)>>,
    pub(super) services: BTreeMap<NodeId, JobId>,
    pub(super) probe_failures: BTreeMap<NodeId, String>,
    pub(super) service_logs: BTreeMap<NodeId, PathBuf>,
    /// Repositories whose sandbox setup failed, and why.
    pub(super) setup_failures: BTreeMap<RepoId, String>,
    pub(super) results: BTreeMap<NodeId, ProviderRun>,
    /// Where judged results go to have their receipts written.
    pub(super) recorder: Recorder,
    /// Providers judged (their receipts may still be being written).
    pub(super) recorded: usize,
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) log_dir: PathBuf,
    next_log: usize,
    /// Providers running now (for progress).
    pub(super) running: BTreeSet<String>,
    /// How many providers this run decides (for progress).
    total: usize,
    /// What is said between events (`--heartbeat`, `--stream`).
    pub(super) heartbeat: Heartbeat,
}

/// What the loop leaves: each wanted provider's result in graph order, whether it was
/// interrupted, and its findings.
pub(super) struct Dispatched {
    pub(super) providers: Vec<ProviderRun>,
    pub(super) interrupted: bool,
    pub(super) diagnostics: Vec<Diagnostic>,
}

impl<'p, 'a> Dispatcher<'p, 'a> {
    /// The loop for `wanted` in `run` (absent when nothing runs a command), with the
    /// sandboxes made and the findings so far.
    #[expect(clippy::too_many_arguments, reason = "the pieces a run is made of")]
    pub(super) fn new(
        plan: &'p Plan<'a>,
        wanted: &BTreeSet<NodeId>,
        run: Option<Run>,
        isolation: RunIsolation,
        sandboxes: Sandboxes,
        worlds: Worlds,
        log_dir: PathBuf,
        recorder: Recorder,
        diagnostics: Vec<Diagnostic>,
    ) -> Self {
        Dispatcher {
            plan,
            scheduler: Scheduler::new(plan.graph, admitted(plan.jobs), wanted),
            run,
            isolation,
            sandboxes,
            worlds,
            jobs: BTreeMap::new(),
            executions: BTreeMap::new(),
            waiting: BTreeMap::new(),
            reports: BTreeMap::new(),
            services: BTreeMap::new(),
            probe_failures: BTreeMap::new(),
            service_logs: BTreeMap::new(),
            setup_failures: BTreeMap::new(),
            results: BTreeMap::new(),
            recorder,
            recorded: 0,
            diagnostics,
            log_dir,
            next_log: 0,
            running: BTreeSet::new(),
            total: wanted.len(),
            heartbeat: Heartbeat::new(plan.heartbeat, plan.stream.clone()),
        }
    }

    /// What provider `id` sees of each repository it reads (its own, and those its inputs
    /// name): the files its fingerprint binds, under its repository's setup.
    pub(super) fn seen_of(&mut self, id: NodeId) -> Result<Vec<Seen>, String> {
        let Some(p) = self.plan.graph.node(id).provider() else {
            return Ok(Vec::new());
        };
        let mut by_repo: BTreeMap<RepoId, BTreeSet<String>> = BTreeMap::new();
        if let Some(repo) = &p.runs_in {
            by_repo.entry(repo.clone()).or_default();
        }
        for (scoped, _) in self
            .plan
            .observed
            .files
            .get(&p.spec.id.value)
            .into_iter()
            .flatten()
        {
            if let Some((repo, path)) = scoped.split_once(':')
                && let Ok(repo) = RepoId::parse(repo)
            {
                by_repo.entry(repo).or_default().insert(path.to_owned());
            }
        }
        // A program of the repository is bound by its fingerprint (its digest), whatever
        // the provider's `inputs` say: it is in the world the provider runs in.
        if let (Some(repo), Some(Some(crate::observe::world::Program::InRepository(rel)))) = (
            &p.runs_in,
            self.plan.observed.programs.get(&p.spec.id.value),
        ) {
            let rel = rel.to_string_lossy();
            let rel = rel.trim_start_matches("./");
            let known = self
                .plan
                .observed
                .snapshots
                .get(repo)
                .is_some_and(|s| s.files.iter().any(|f| f.path == rel));
            if known {
                by_repo
                    .entry(repo.clone())
                    .or_default()
                    .insert(rel.to_owned());
            }
        }
        let mut seen = Vec::new();
        for (repo, paths) in by_repo {
            let all = self
                .plan
                .observed
                .snapshots
                .get(&repo)
                .is_some_and(|s| s.files.len() == paths.len());
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            let files = if all { Files::All } else { Files::Only(&paths) };
            seen.push(self.worlds.seen(&repo, files)?);
        }
        self.with_artifacts(id, seen)
    }

    /// The report paths each execution of `wanted` empties before it starts.
    fn plan_reports(&mut self, wanted: &BTreeSet<NodeId>) {
        let mut seen = BTreeMap::new();
        for id in wanted {
            if let Ok(s) = self.seen_of(*id) {
                seen.insert(*id, s);
            }
        }
        self.reports = self
            .builder()
            .reports_by_execution(self.plan.graph, wanted, &seen);
    }

    /// Runs the setup commands, then every wanted provider the scheduler lets start, until
    /// nothing is left or a signal stops it; then accounts for the ones left over.
    pub(super) async fn drive(mut self, wanted: &BTreeSet<NodeId>) -> Dispatched {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
        if let Some(run) = &mut self.run {
            run.forward_events(move |event| {
                // Nobody is listening any more once the loop has ended.
                let _ = tx.send(event);
            });
        }
        let mut signals = Signals::listen(self.plan.interrupt);
        let mut interrupted = signals.early.is_set() || !self.setup(&mut rx, &mut signals).await;
        if !interrupted {
            self.plan_reports(wanted);
            interrupted = self.dispatch(&mut rx, &mut signals).await;
        }
        if interrupted {
            self.scheduler.halt();
            self.progress(Line::Interrupted);
        }
        if let Some(run) = self.run.take() {
            let _ = run.shutdown();
        }
        self.conclude(wanted, interrupted);
        self.collect(true);
        let graph = self.plan.graph;
        let providers = graph
            .order()
            .iter()
            .filter_map(|id| self.results.remove(id))
            .collect();
        Dispatched {
            providers,
            interrupted,
            diagnostics: self.diagnostics,
        }
    }

    /// The loop proper; whether a signal stopped it.
    async fn dispatch(&mut self, rx: &mut UnboundedReceiver<Event>, signals: &mut Signals) -> bool {
        loop {
            // Starting one node can make others startable at once (a service
            // marked up makes its probe startable): poll until nothing changes
            // before waiting for an event.
            loop {
                let actions = self.scheduler.poll();
                if actions.is_empty() {
                    break;
                }
                for action in actions {
                    match action {
                        Action::Start(id) => self.start(id),
                        Action::Stop(id) => self.stop_service(id),
                    }
                }
            }
            if self.scheduler.is_finished() {
                return false;
            }
            if self.jobs.is_empty() {
                // Nothing to wait for: every start was resolved in-process.
                continue;
            }
            let tick = self.heartbeat.tick();
            let quiet = async move {
                match tick {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = quiet => self.beat(),
                event = rx.recv() => match event {
                    Some(event) => self.on_event(event),
                    None => {
                        self.diagnostics.push(diag(Code::IsolationUnavailable, "the run's init stopped reporting".to_owned(), "Rerun; if it persists, run `proofgraph doctor`."));
                        self.scheduler.halt();
                        return false;
                    }
                },
                _ = signals.recv() => return true,
            }
        }
    }

    fn start(&mut self, id: NodeId) {
        let graph = self.plan.graph;
        match &graph.node(id).kind {
            NodeKind::Provider(p) => self.start_provider(id, p),
            NodeKind::Service(s) => self.start_service(id, s),
            NodeKind::Probe(probe) => {
                let Some(service) = graph.service(&probe.service) else {
                    return;
                };
                self.start_probe(id, service);
            }
        }
    }

    fn on_event(&mut self, event: Event) {
        let Some(job) = event.job() else {
            if let Event::InitFailed { reason } = event {
                self.diagnostics.push(diag(
                    Code::IsolationUnavailable,
                    format!("the run's init failed: {reason}"),
                    "Rerun; if it persists, run `proofgraph doctor`.",
                ));
                self.scheduler.halt();
            }
            return;
        };
        let Some(purpose) = self.jobs.remove(&job) else {
            return;
        };
        match (purpose, event) {
            (Purpose::Providers { key, .. }, Event::Exited { started: false, .. }) => {
                self.withdraw(&key);
            }
            (
                Purpose::Providers {
                    key,
                    dirs,
                    log,
                    hold,
                },
                Event::Exited {
                    code,
                    signal,
                    timed_out,
                    killed,
                    duration,
                    spawn_error,
                    executed,
                    ..
                },
            ) => {
                let not_started = spawn_error.is_some();
                let ended = ended::ended(code, signal, timed_out, killed, spawn_error);
                // The repositories where the world showed them are the run's own too.
                let own: Vec<&std::path::Path> = [self.sandboxes.root.as_path()]
                    .into_iter()
                    .chain(self.worlds.home())
                    .chain(dirs.repos.values().map(|d| d.at.as_path()))
                    .collect();
                // What a job runs from a declared cache is bound like a host's program.
                let executed = executed
                    .as_ref()
                    .map(|r| ended::executed(r, &own, self.worlds.shared()));
                // The run measured the command from its start, which may have come
                // after a wait for a slot.
                let finished = Finished {
                    not_started,
                    dirs,
                    executed,
                    ..Finished::ran(ended, log, duration, std::time::SystemTime::now())
                };
                self.execution_ended(key, &finished, hold);
            }
            (
                Purpose::Service(id),
                Event::Exited {
                    code,
                    signal,
                    spawn_error,
                    killed,
                    ..
                },
            ) => self.service_exited(id, code, signal, spawn_error, killed),
            (Purpose::Probe(probe), Event::Ready { .. }) => {
                self.scheduler.complete(probe, Step::Succeeded);
            }
            (Purpose::Probe(probe), Event::NotReady { reason, .. }) => {
                self.probe_failed(probe, &reason);
            }
            (_, _) => {}
        }
    }

    /// Tells the scheduler a provider finished; a failure stops new starts
    /// unless `--keep-going`.
    pub(super) fn finish(&mut self, id: NodeId, ok: bool) {
        self.scheduler
            .complete(id, if ok { Step::Succeeded } else { Step::Failed });
        if !ok && !self.plan.keep_going {
            self.halt();
        }
    }

    /// Starts nothing more: blocks what has not started, and takes back the providers
    /// still waiting in the run for a slot (the ones running finish).
    pub(super) fn halt(&mut self) {
        self.scheduler.halt();
        if let Some(run) = &self.run {
            for (job, purpose) in &self.jobs {
                if matches!(purpose, Purpose::Providers { .. }) {
                    let _ = run.cancel(*job);
                }
            }
        }
    }

    pub(super) fn progress(&self, line: Line<'_>) {
        (self.plan.progress)(Progress::Line(line));
    }

    pub(super) fn status(&self) {
        let running: Vec<&str> = self.running.iter().map(String::as_str).collect();
        (self.plan.progress)(Progress::Status {
            done: self.recorded,
            total: self.total,
            running: &running,
        });
    }

    pub(super) fn log_path(&mut self, name: &str) -> PathBuf {
        self.next_log += 1;
        self.log_dir
            .join(format!("{:04}-{name}.log", self.next_log))
    }

    /// How many bytes of a job's log its receipt keeps (`logs.keepBytes` of the catalog).
    pub(super) fn log_keep_bytes(&self) -> u64 {
        self.plan
            .workspace
            .catalog
            .as_ref()
            .and_then(|c| c.logs.as_ref())
            .and_then(|l| l.keep_bytes.as_ref())
            .map_or(super::kept_log::DEFAULT_KEEP_BYTES, |k| k.value)
    }

    /// What building a job reads, for this run.
    pub(super) fn builder(&self) -> Jobs<'_> {
        Jobs {
            env: self.plan.env,
            run_id: self.plan.run_id,
            secrets: self.plan.secrets,
            programs: &self.plan.observed.programs,
            service_programs: &self.plan.observed.service_programs,
            sandboxes: self.worlds.snapshots(),
            out_dir: &self.sandboxes.out,
            host_paths: self.worlds.host_paths(),
            home: self.worlds.home(),
            caches: self.worlds.all_caches(),
            stamped: self.worlds.stamps_times(),
        }
    }

    /// Takes in what the receipt writer has finished: what is there, or (`wait`) every
    /// receipt sent to it.
    pub(super) fn collect(&mut self, wait: bool) {
        while let Some(persisted) = self.recorder.next(wait) {
            self.take_persisted(persisted);
        }
    }

    fn take_persisted(&mut self, persisted: Persisted) {
        if !persisted.written {
            // The line printed when it was judged is not a record: say so.
            self.progress(Line::Unrecorded {
                provider: &persisted.run.provider,
            });
        }
        self.diagnostics.extend(persisted.diagnostics);
        if !persisted.written && !self.plan.keep_going {
            // The store cannot take receipts: running more would prove nothing
            // that could be kept.
            self.halt();
        }
        self.results.insert(persisted.id, persisted.run);
    }
}

#[cfg(test)]
mod tests;
