//! The executor: runs the providers a `prove` needs, driven by the graph's
//! pure scheduler, inside one hermetic run (`proofgraph_sandbox::Run`), and
//! writes a signed receipt for every outcome it observes.
//!
//! It is a tokio current-thread loop over three sources: the run's events
//! (forwarded by the sandbox's reader thread), SIGINT/SIGTERM, and
//! nothing else. Each turn asks the scheduler what may start, starts it, and
//! waits for the next event. A finished provider is judged on the loop; its
//! receipts are signed and written by a writer thread (`Recorder`, `Writer`),
//! in the order they were judged. Identical executions (same argv, directory,
//! environment, timeout and network) in one run start once; every provider
//! sharing one is judged from that one execution.
//!
//! Receipts are written only for what was observed: a provider that ran
//! (pass, fail, inconclusive), one whose command could not start or whose
//! service never became ready (error). A provider blocked by a failed
//! dependency, or killed by an interrupt, gets none.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use proofgraph_graph::graph::{NodeKind, ProviderNode, ServiceNode};
use proofgraph_graph::schedule::{Action, Outcome as Step, Scheduler, State};
use proofgraph_graph::{Adapter, NodeId, RepoId, SealedGraph};
use proofgraph_sandbox::SandboxError;
use proofgraph_sandbox::evidence;
use proofgraph_sandbox::{Event, Isolation, JobId, Run, RunConfig, SandboxMode};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::decide::judge::{self, Ended, ReportFile};
use crate::proof::receipt::{self, Outcome, TestNames};

pub use super::plan::{Executed, Plan, Stopped};

use super::contract;
use super::ended::{self, Finished};
use super::events::{Line, Progress, ProviderAction, ProviderRun};
use super::evidence::{ArtifactKind, Kept, attachment, read_written};
use super::job::{self, ExecKey, Jobs};
use super::plan::diag;
use super::recorder::{Isolated, Persist, Persisted, Recorder};
use super::writer::{self, Writer};

/// How many providers the scheduler may hand to the run at once: the run itself holds
/// `jobs` of their commands at a time, and the rest wait in it for a slot.
fn admitted(jobs: NonZeroUsize) -> NonZeroUsize {
    jobs.saturating_add(jobs.get())
}

/// What a job is running for.
#[derive(Debug, Clone)]
enum Purpose {
    /// One execution shared by these providers.
    Providers {
        key: ExecKey,
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

/// Runs `wanted` (providers) and writes their receipts.
pub fn execute(plan: &Plan<'_>, wanted: &BTreeSet<NodeId>) -> Result<Executed, Stopped> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            vec![Diagnostic::error(
                Code::InternalError,
                format!("failed to start the executor: {e}"),
            )]
        })?;
    let writer = Writer::new(plan);
    std::thread::scope(|scope| {
        let recorder = writer::start(scope, writer).map_err(|e| vec![e])?;
        // The writer ends when the loop drops its sender (with `Recorder`).
        runtime.block_on(execute_async(plan, wanted, recorder))
    })
}

struct Sandboxes {
    dirs: BTreeMap<RepoId, PathBuf>,
    root: PathBuf,
    keep: bool,
}

impl Drop for Sandboxes {
    /// The run's directory (sandboxes and logs; the logs are in the store by
    /// now) goes with the run, unless `--keep-sandbox`.
    fn drop(&mut self) {
        if !self.keep {
            let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
            let _ = proofgraph_sandbox::materialize::remove(&self.root, threads);
        }
    }
}

/// Materialises one sandbox per repository the run needs, each checked byte for byte
/// against the snapshot its fingerprints were computed from.
fn sandboxes(
    plan: &Plan<'_>,
    repos: &BTreeSet<RepoId>,
    run_dir: &Path,
) -> Result<Sandboxes, Stopped> {
    let mut out = Sandboxes {
        dirs: BTreeMap::new(),
        root: run_dir.to_path_buf(),
        keep: plan.keep_sandbox,
    };
    for repo in repos {
        let Some(info) = plan.workspace.repositories.get(repo) else {
            continue;
        };
        if plan.mode == SandboxMode::None {
            out.dirs.insert(repo.clone(), info.dir.clone());
            continue;
        }
        let Some(snapshot) = plan.observed.snapshots.get(repo) else {
            continue;
        };
        let dest = run_dir.join("sandboxes").join(repo.as_str());
        let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
        snapshot.materialize(&dest, threads).map_err(|e| match e {
            SandboxError::Changed { .. } => Stopped::InputsChanged(vec![diag(
                Code::InputsChanged,
                format!(
                    "the inputs of repository `{repo}` changed while its {} sandbox was made: failed to {e}",
                    plan.mode.as_str()
                ),
                "Run prove again once the files stop changing (an editor, a build or a formatter was writing them).",
            )]),
            e => Stopped::Failed(vec![diag(
                Code::SandboxFailed,
                format!(
                    "the {} sandbox of repository `{repo}` could not be made: failed to {e}",
                    plan.mode.as_str()
                ),
                "Check the free space and permissions under .proofgraph/runs/.",
            )]),
        })?;
        out.dirs.insert(repo.clone(), dest);
    }
    Ok(out)
}

struct Loop<'p, 'a> {
    plan: &'p Plan<'a>,
    scheduler: Scheduler<'a>,
    run: Option<Run>,
    sandboxes: Sandboxes,
    jobs: BTreeMap<JobId, Purpose>,
    /// Execution key → the job running it, or its finished result.
    executions: BTreeMap<ExecKey, Execution>,
    /// Providers attached to an execution, waiting for it.
    waiting: BTreeMap<ExecKey, Vec<NodeId>>,
    /// Per execution, the report paths (sandbox, path) of every wanted provider that may
    /// be judged from it: all emptied before it starts.
    reports: BTreeMap<ExecKey, Vec<(PathBuf, String)>>,
    services: BTreeMap<NodeId, JobId>,
    probe_failures: BTreeMap<NodeId, String>,
    service_logs: BTreeMap<NodeId, PathBuf>,
    /// Repositories whose sandbox setup failed, and why.
    setup_failures: BTreeMap<RepoId, String>,
    results: BTreeMap<NodeId, ProviderRun>,
    /// Where judged results go to have their receipts written.
    recorder: Recorder,
    /// Providers judged (their receipts may still be being written).
    recorded: usize,
    diagnostics: Vec<Diagnostic>,
    log_dir: PathBuf,
    next_log: usize,
    /// Providers running now (for progress).
    running: BTreeSet<String>,
    /// How many providers this run decides (for progress).
    total: usize,
}

#[derive(Debug, Clone)]
enum Execution {
    Running,
    Done(Finished),
}

async fn execute_async(
    plan: &Plan<'_>,
    wanted: &BTreeSet<NodeId>,
    recorder: Recorder,
) -> Result<Executed, Stopped> {
    let graph = plan.graph;
    // By its real path: a store reached through a link (into /tmp, say) is named to the
    // run's processes where it really is, which is what an isolated run exposes to them.
    let run_dir = plan
        .store
        .run_dir(plan.run_id)
        .and_then(|dir| {
            fs_err::canonicalize(&dir).map_err(|source| crate::store::StoreError::Io {
                action: "resolve",
                path: dir.clone(),
                source,
            })
        })
        .map_err(|e| {
            vec![diag(
                Code::SandboxFailed,
                format!("the run's directory could not be made: failed to {e}"),
                "Check that .proofgraph/runs/ is a writable directory.",
            )]
        })?;
    // The repositories that wanted providers and their services run in.
    let mut repos: BTreeSet<RepoId> = BTreeSet::new();
    for id in wanted {
        if let Some(p) = graph.node(*id).provider() {
            repos.extend(p.runs_in.iter().cloned());
            for s in graph.services_of(*id) {
                repos.extend(graph.node(s).service().and_then(|s| s.runs_in.clone()));
            }
        }
    }
    let sandboxes = sandboxes(plan, &repos, &run_dir)?;
    let log_dir = run_dir.join("logs");
    fs_err::create_dir_all(&log_dir).map_err(|e| {
        vec![diag(
            Code::SandboxFailed,
            format!("failed to create `{}`: {e}", log_dir.display()),
            "Check permissions under .proofgraph/runs/.",
        )]
    })?;
    let needs_run = wanted.iter().any(|id| {
        graph
            .node(*id)
            .provider()
            .is_some_and(|p| p.spec.adapter.value.runs_command())
    });
    let (run, isolation) = if needs_run {
        // The run holds `--jobs` providers' commands at a time and starts the next one
        // itself as soon as one ends; the scheduler admits up to twice as many, so one is
        // always waiting there instead of a round trip through this loop.
        // The signing key and the pins that make it trusted are no job's business: an
        // isolated run covers them, so a provider can neither read the key nor move a pin.
        let hidden = [
            plan.store.dir().join("keys"),
            crate::proof::trust::Pins::new(plan.env).dir().to_path_buf(),
        ]
        .iter()
        .filter_map(|dir| fs_err::canonicalize(dir).ok())
        .collect();
        let config = RunConfig {
            job_limit: Some(plan.jobs),
            hidden,
            ..RunConfig::current_exe(plan.isolation)
        };
        let (run, isolation) = Run::start(&config).map_err(|e| {
            vec![diag(Code::IsolationUnavailable, format!("the run could not be started: failed to {e}"), "Run `proofgraph doctor` to see what isolation this machine allows, or pass --isolation none.")]
        })?;
        (Some(run), Some(isolation))
    } else {
        (None, None)
    };
    let mut diagnostics = Vec::new();
    if let Some(Isolation::None { reason }) = &isolation {
        diagnostics.push(
            Diagnostic::warning(Code::IsolationUnavailable, format!("this run is not isolated ({reason}): its commands share the host's network, PIDs and /tmp"))
                .surface("prove.isolation")
                .fix("Run as root or allow unprivileged user namespaces for hermetic runs; receipts record `isolation: none`."),
        );
    }
    let scheduler = Scheduler::new(graph, admitted(plan.jobs), wanted);
    let mut state = Loop {
        plan,
        scheduler,
        run,
        sandboxes,
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
    };
    state.reports = state.builder().reports_by_execution(graph, wanted);
    // Contract digests and other commandless providers are judged in-process.
    let isolation_name = Isolated::of(isolation.as_ref());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    if let Some(run) = &mut state.run {
        run.forward_events(move |event| {
            // Nobody is listening any more once the loop has ended.
            let _ = tx.send(event);
        });
    }
    let mut signals = Signals {
        int: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        // One that came before these listened, since `prove` began.
        early: plan.interrupt.clone(),
    };
    let mut interrupted = signals.early.is_set() || !state.setup(&mut rx, &mut signals).await;
    while !interrupted {
        // Starting one node can make others startable at once (a service
        // marked up makes its probe startable): poll until nothing changes
        // before waiting for an event.
        loop {
            let actions = state.scheduler.poll();
            if actions.is_empty() {
                break;
            }
            for action in actions {
                match action {
                    Action::Start(id) => state.start(id, isolation_name),
                    Action::Stop(id) => state.stop_service(id),
                }
            }
        }
        if state.scheduler.is_finished() {
            break;
        }
        let running_jobs = !state.jobs.is_empty();
        if !running_jobs {
            // Nothing to wait for: every start was resolved in-process.
            continue;
        }
        tokio::select! {
            event = rx.recv() => match event {
                Some(event) => state.on_event(event, isolation_name),
                None => {
                    state.diagnostics.push(diag(Code::IsolationUnavailable, "the run's init stopped reporting".to_owned(), "Rerun; if it persists, run `proofgraph doctor`."));
                    state.scheduler.halt();
                    break;
                }
            },
            _ = signals.recv() => { interrupted = true; break; }
        }
    }
    if interrupted {
        state.scheduler.halt();
        state.progress(Line::Interrupted);
    }
    if let Some(run) = state.run.take() {
        let _ = run.shutdown();
    }
    // Providers never started because a probe failed get an error receipt;
    // those blocked by a failed dependency or an interrupt get none.
    let blocked: Vec<NodeId> = graph
        .order()
        .iter()
        .copied()
        .filter(|id| {
            wanted.contains(id)
                && matches!(
                    state.scheduler.state(*id),
                    State::Blocked | State::Waiting | State::Running
                )
        })
        .collect();
    for id in blocked {
        let probe_reason = graph
            .services_of(id)
            .into_iter()
            .find_map(|s| state.probe_failures.get(&s).cloned());
        match (interrupted, probe_reason) {
            (false, Some(reason)) => {
                state.record(id, &Finished::error_now(reason), isolation_name);
            }
            (true, _) => {
                state.results.insert(
                    id,
                    not_run(
                        graph,
                        id,
                        ProviderAction::Interrupted,
                        "the run was interrupted before it finished",
                    ),
                );
            }
            (false, None) => {
                let reason = blocked_reason(graph, &state.scheduler, id);
                state
                    .results
                    .insert(id, not_run(graph, id, ProviderAction::Blocked, &reason));
            }
        }
    }
    state.collect(true);
    let providers = graph
        .order()
        .iter()
        .filter_map(|id| state.results.remove(id))
        .collect();
    Ok(Executed {
        isolation,
        providers,
        interrupted,
        diagnostics: state.diagnostics,
    })
}

/// Whether something answers on `url`'s host and `port` (a TCP connect
/// within 300 ms).
fn answers(url: &str, port: u16) -> bool {
    use std::net::ToSocketAddrs as _;
    let host = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .rsplit_once(':')
        .map_or("127.0.0.1", |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|addr| std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok())
}

/// The last `n` non-empty lines of a log, joined with ` | `.
fn last_lines(log: &Path, n: usize) -> String {
    let text = fs_err::read(log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// SIGINT and SIGTERM, as the executor listens for them.
struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
    early: crate::base::interrupt::Interrupt,
}

impl Signals {
    /// The next SIGINT or SIGTERM.
    async fn recv(&mut self) {
        async fn one(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = one(&mut self.int) => {}
            () = one(&mut self.term) => {}
        }
    }
}

fn not_run(graph: &SealedGraph, id: NodeId, action: ProviderAction, reason: &str) -> ProviderRun {
    ProviderRun {
        provider: graph.node(id).name.clone(),
        action,
        reason: Some(reason.to_owned()),
        duration_ms: None,
        receipts: Vec::new(),
    }
}

fn blocked_reason(graph: &SealedGraph, scheduler: &Scheduler<'_>, id: NodeId) -> String {
    let failed: Vec<String> = graph
        .incoming(id)
        .into_iter()
        .filter(|(from, _)| matches!(scheduler.state(*from), State::Failed | State::Blocked))
        .map(|(from, _)| format!("`{}`", graph.node(from).name))
        .collect();
    if failed.is_empty() {
        "not run: the run stopped after a failure (use --keep-going to run everything)".to_owned()
    } else {
        format!("not run: {} did not pass", failed.join(", "))
    }
}

impl Loop<'_, '_> {
    /// Runs each fresh sandbox's `setup` commands (from the catalog), with
    /// the outside network, before anything else runs in it; restores them
    /// from the setup cache when `setupCache` is declared and the cache holds
    /// this setup.
    /// Returns `false` when SIGINT or SIGTERM stopped it (the setup command was killed).
    async fn setup(
        &mut self,
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>,
        signals: &mut Signals,
    ) -> bool {
        if self.plan.mode == SandboxMode::None {
            return true;
        }
        let Some(catalog) = &self.plan.workspace.catalog else {
            return true;
        };
        let dirs: Vec<(RepoId, PathBuf)> = self
            .sandboxes
            .dirs
            .iter()
            .map(|(r, d)| (r.clone(), d.clone()))
            .collect();
        for (repo, dir) in dirs {
            let Some(entry) = catalog.repositories.get(&repo) else {
                continue;
            };
            let Some(commands) = &entry.setup else {
                continue;
            };
            let commands: Vec<Vec<String>> = commands.iter().map(|c| c.value.clone()).collect();
            if commands.is_empty() {
                continue;
            }
            let cache_dirs: Vec<String> = entry
                .setup_cache
                .iter()
                .flatten()
                .map(|c| c.value.clone())
                .collect();
            let key = self
                .plan
                .observed
                .snapshots
                .get(&repo)
                .map(|s| crate::run::setup::cache_key(&commands, &cache_dirs, s));
            if !cache_dirs.is_empty()
                && let Some(key) = &key
                && let Some(files) = crate::run::setup::restore(self.plan.store, key, &dir)
            {
                self.progress(Line::SetupRestored { repo: &repo, files });
                continue;
            }
            if self.run.is_none() {
                return true;
            }
            let mut failed = None;
            for argv in &commands {
                let log = self.log_path(&format!("setup-{repo}"));
                let spec = self.builder().setup_job(argv, &dir, log.clone());
                self.progress(Line::SetupCommand { repo: &repo, argv });
                let spawned = match &self.run {
                    Some(run) => run.spawn(&spec),
                    None => return true,
                };
                let job = match spawned {
                    Ok(job) => job,
                    Err(e) => {
                        failed = Some(format!(
                            "`{}` could not start: failed to {e}",
                            argv.join(" ")
                        ));
                        break;
                    }
                };
                let result = loop {
                    tokio::select! {
                        event = rx.recv() => match event {
                            Some(Event::Exited {
                                job: j,
                                code,
                                signal,
                                spawn_error,
                                ..
                            }) if j == job => break (code, signal, spawn_error),
                            Some(_) => {}
                            None => break (None, None, Some("the run's init stopped".to_owned())),
                        },
                        () = signals.recv() => {
                            if let Some(run) = &self.run {
                                let _ = run.kill(job);
                            }
                            return false;
                        }
                    }
                };
                if result.0 != Some(0) {
                    let how = match result {
                        (_, _, Some(e)) => format!("could not start: {e}"),
                        (Some(c), _, _) => format!("exited with code {c}"),
                        (None, Some(s), _) => format!("was killed by signal {s}"),
                        _ => "failed".to_owned(),
                    };
                    failed = Some(format!(
                        "`{}` {how}; its log ends with: {}",
                        argv.join(" "),
                        last_lines(&log, 5)
                    ));
                    break;
                }
            }
            match failed {
                Some(reason) => {
                    self.progress(Line::SetupFailed {
                        repo: &repo,
                        reason: &reason,
                    });
                    self.setup_failures.insert(repo, reason);
                }
                None => {
                    if !cache_dirs.is_empty()
                        && let Some(key) = &key
                        && let Err(e) =
                            crate::run::setup::save(self.plan.store, key, &dir, &cache_dirs)
                    {
                        self.diagnostics.push(
                            Diagnostic::warning(Code::StoreUnusable, format!("the setup cache of `{repo}` could not be saved: {e}"))
                                .surface("prove.setup")
                                .fix("Check free space under .proofgraph/; setup will run again next time."),
                        );
                    }
                }
            }
        }
        true
    }

    /// Tells the scheduler a provider finished; a failure stops new starts
    /// unless `--keep-going`.
    fn finish(&mut self, id: NodeId, ok: bool) {
        self.scheduler
            .complete(id, if ok { Step::Succeeded } else { Step::Failed });
        if !ok && !self.plan.keep_going {
            self.halt();
        }
    }

    /// Starts nothing more: blocks what has not started, and takes back the providers
    /// still waiting in the run for a slot (the ones running finish).
    fn halt(&mut self) {
        self.scheduler.halt();
        if let Some(run) = &self.run {
            for (job, purpose) in &self.jobs {
                if matches!(purpose, Purpose::Providers { .. }) {
                    let _ = run.cancel(*job);
                }
            }
        }
    }

    fn progress(&self, line: Line<'_>) {
        (self.plan.progress)(Progress::Line(line));
    }

    fn status(&self) {
        let running: Vec<&str> = self.running.iter().map(String::as_str).collect();
        (self.plan.progress)(Progress::Status {
            done: self.recorded,
            total: self.total,
            running: &running,
        });
    }

    fn log_path(&mut self, name: &str) -> PathBuf {
        self.next_log += 1;
        self.log_dir
            .join(format!("{:04}-{name}.log", self.next_log))
    }

    fn cwd(&self, repo: Option<&RepoId>) -> Option<PathBuf> {
        self.builder().cwd(repo)
    }

    /// What building a job reads, for this run.
    fn builder(&self) -> Jobs<'_> {
        Jobs {
            env: self.plan.env,
            run_id: self.plan.run_id,
            secrets: self.plan.secrets,
            programs: &self.plan.observed.programs,
            service_programs: &self.plan.observed.service_programs,
            sandboxes: &self.sandboxes.dirs,
            log_dir: &self.log_dir,
        }
    }

    fn start(&mut self, id: NodeId, isolation: Isolated) {
        let graph = self.plan.graph;
        match &graph.node(id).kind {
            NodeKind::Provider(p) => self.start_provider(id, p, isolation),
            NodeKind::Service(s) => self.start_service(id, s, isolation),
            NodeKind::Probe(probe) => {
                let Some(service) = graph.service(&probe.service) else {
                    return;
                };
                self.start_probe(id, service);
            }
        }
    }

    fn start_provider(&mut self, id: NodeId, p: &ProviderNode, isolation: Isolated) {
        if p.spec.adapter.value == Adapter::ContractDigest {
            let started_at = receipt::now_rfc3339();
            let started = Instant::now();
            let (ended, reason) =
                contract::contract_digest(p, self.plan.workspace, &self.plan.observed.snapshots);
            let finished = Finished {
                ended,
                reason,
                log: None,
                duration: started.elapsed(),
                started: None,
                started_at,
                finished_at: receipt::now_rfc3339(),
            };
            let ok = self.record(id, &finished, isolation);
            self.finish(id, ok);
            return;
        }
        if !p.spec.adapter.value.runs_command() {
            let finished = Finished::error_now(format!(
                "the {} adapter runs nothing in `prove`",
                p.spec.adapter.value
            ));
            self.record(id, &finished, isolation);
            self.finish(id, false);
            return;
        }
        let fail_now = |this: &mut Self, reason: String| {
            this.record(id, &Finished::error_now(reason), isolation);
            this.finish(id, false);
        };
        if p.spec.inputs.is_some()
            && self
                .plan
                .observed
                .files
                .get(&p.spec.id.value)
                .is_none_or(Vec::is_empty)
        {
            return fail_now(
                self,
                "its declared `inputs` match no file, so a pass would prove nothing about the code"
                    .to_owned(),
            );
        }
        if let Some(reason) = p.runs_in.as_ref().and_then(|r| self.setup_failures.get(r)) {
            let reason = format!("the setup of its repository failed: {reason}");
            return fail_now(self, reason);
        }
        let prepared = match self.builder().prepare(p) {
            Ok(prepared) => prepared,
            Err(reason) => return fail_now(self, reason),
        };
        match self.executions.get(&prepared.key) {
            Some(Execution::Running) => {
                self.waiting.entry(prepared.key).or_default().push(id);
                return;
            }
            Some(Execution::Done(finished)) => {
                let finished = finished.clone();
                let ok = self.record(id, &finished, isolation);
                self.finish(id, ok);
                return;
            }
            None => {}
        }
        // Nothing left where a report of this execution goes — from an earlier run, a
        // tracked file, another command — may be read as what it wrote: the report path of
        // every provider that may be judged from it is emptied before it starts (without
        // following a link). Removing them while other jobs run is safe: no two different
        // commands declare one report path (preflight's `report_path_collision`).
        for (dir, report) in self.reports.get(&prepared.key).into_iter().flatten() {
            let _ = evidence::remove_beneath(dir, Path::new(report));
        }
        if let Some(path) = &prepared.playwright_report {
            let _ = fs_err::remove_file(path);
        }
        let log = self.log_path(p.spec.id.value.as_str());
        // Whether the next provider may start the moment this one exits 0, or only once
        // it is judged: a verdict that may fail despite exit status 0 (reports, critical
        // cases) decides whether the run goes on, and attachments are read before the
        // next job can start in the same sandbox. (A provider sharing an execution started
        // for another inherits that one's choice; at worst, one more provider starts after
        // a failure judged from a report: it runs and is recorded as usual.)
        let hold = !judge::judged_by_exit_status(p);
        let (key, spec) = prepared.into_job(log.clone(), hold);
        let Some(run) = &self.run else {
            return fail_now(self, "no run was started".to_owned());
        };
        match run.spawn(&spec) {
            Ok(job) => {
                self.progress(Line::Started {
                    provider: &p.spec.id.value,
                });
                self.running.insert(p.spec.id.value.to_string());
                self.status();
                self.jobs.insert(
                    job,
                    Purpose::Providers {
                        key: key.clone(),
                        log,
                        hold,
                    },
                );
                self.executions.insert(key.clone(), Execution::Running);
                self.waiting.entry(key).or_default().push(id);
            }
            Err(e) => fail_now(
                self,
                format!("its command could not be started: failed to {e}"),
            ),
        }
    }

    fn start_service(&mut self, id: NodeId, s: &ServiceNode, isolation: Isolated) {
        // Without a private network, a server already answering on the
        // service's URL would answer its probe: refuse instead.
        if isolation == Isolated::None
            && let Some(url) = s.spec.readiness.as_ref().and_then(|r| r.url.as_ref())
            && let Some(port) = s.port
            && answers(&url.value, port)
        {
            let name = &s.spec.id.value;
            self.diagnostics.push(
                Diagnostic::error(
                    Code::ReadinessPortInUse,
                    format!("service `{name}` was not started: {} already answers, and without isolation its probe could not tell this run's server from the one already there", url.value),
                )
                .at(&s.file, url.pos)
                .fix(format!("Stop whatever listens on port {port}, or run with namespaces (root or unprivileged user namespaces) so the run gets its own network.")),
            );
            self.probe_failures.insert(id, format!("service `{name}` was not started: port {port} is already in use outside the run (readiness_port_in_use)"));
            self.scheduler.complete(id, Step::Failed);
            return;
        }
        let Some(cwd) = self.cwd(s.runs_in.as_ref()) else {
            self.probe_failures
                .insert(id, format!("service `{}` has no sandbox", s.spec.id.value));
            self.scheduler.complete(id, Step::Failed);
            return;
        };
        let env = match self.builder().service_env(s) {
            Ok(env) => env,
            Err(reason) => {
                self.probe_failures.insert(id, reason);
                self.scheduler.complete(id, Step::Failed);
                return;
            }
        };
        let log = self.log_path(&format!("service-{}", s.spec.id.value));
        self.service_logs.insert(id, log.clone());
        let program = match self.builder().service_program(s, &cwd) {
            Ok(program) => program,
            Err(reason) => {
                self.probe_failures.insert(id, reason);
                self.scheduler.complete(id, Step::Failed);
                return;
            }
        };
        let spec = self.builder().service_job(s, cwd, env, program, log);
        let Some(run) = &self.run else { return };
        match run.spawn(&spec) {
            Ok(job) => {
                self.progress(Line::ServiceStarted {
                    service: &s.spec.id.value,
                });
                self.jobs.insert(job, Purpose::Service(id));
                self.services.insert(id, job);
                self.scheduler.complete(id, Step::Succeeded);
            }
            Err(e) => {
                self.probe_failures.insert(
                    id,
                    format!(
                        "service `{}` could not be started: failed to {e}",
                        s.spec.id.value
                    ),
                );
                self.scheduler.complete(id, Step::Failed);
            }
        }
    }

    fn start_probe(&mut self, probe: NodeId, service: NodeId) {
        let Some(s) = self.plan.graph.node(service).service() else {
            return;
        };
        if s.spec.readiness.is_none() {
            return;
        }
        let log = self.log_path(&format!("probe-{}", s.spec.id.value));
        let Some(spec) = self.builder().probe(s, log) else {
            return;
        };
        let Some(run) = &self.run else { return };
        match run.probe(&spec) {
            Ok(job) => {
                self.jobs.insert(job, Purpose::Probe(probe));
            }
            Err(e) => {
                self.probe_failures.insert(
                    service,
                    format!(
                        "the readiness probe of `{}` could not start: failed to {e}",
                        s.spec.id.value
                    ),
                );
                self.scheduler.complete(probe, Step::Failed);
            }
        }
    }

    fn stop_service(&mut self, id: NodeId) {
        if let (Some(job), Some(run)) = (self.services.get(&id), &self.run) {
            self.progress(Line::ServiceStopping {
                name: &self.plan.graph.node(id).name,
            });
            let _ = run.kill(*job);
        }
    }

    fn on_event(&mut self, event: Event, isolation: Isolated) {
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
                // Cancelled while it waited in the run for a slot (the run is stopping
                // after a failure): it never ran, so it proves nothing either way.
                self.executions.remove(&key);
                for id in self.waiting.remove(&key).unwrap_or_default() {
                    self.scheduler.withdraw(id);
                    if let Some(p) = self.plan.graph.node(id).provider() {
                        self.running.remove(p.spec.id.value.as_str());
                    }
                }
            }
            (
                Purpose::Providers { key, log, hold },
                Event::Exited {
                    code,
                    signal,
                    timed_out,
                    killed,
                    duration,
                    spawn_error,
                    ..
                },
            ) => {
                let ended = ended::ended(code, signal, timed_out, killed, spawn_error);
                // The run measured the command from its start, which may have come
                // after a wait for a slot.
                let finished = Finished::ran(ended, log, duration, SystemTime::now());
                self.executions
                    .insert(key.clone(), Execution::Done(finished.clone()));
                for id in self.waiting.remove(&key).unwrap_or_default() {
                    let ok = self.record(id, &finished, isolation);
                    self.finish(id, ok);
                }
                // The run held the providers waiting in it (this one is judged from more
                // than its exit status, or did not exit 0): judged and read, they may start
                // unless the run is stopping (then `halt` took them back).
                let exited_0 = matches!(&finished.ended, Ended::Exited(e) if judge::succeeded(e));
                if (hold || !exited_0)
                    && !self.scheduler.is_halted()
                    && let Some(run) = &self.run
                {
                    let _ = run.resume();
                }
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
            ) => {
                self.services.remove(&id);
                if !killed {
                    let how = match (spawn_error, code, signal) {
                        (Some(e), _, _) => format!("could not start: {e}"),
                        (None, Some(c), _) => format!("exited with code {c}"),
                        (None, None, Some(s)) => format!("was killed by signal {s}"),
                        _ => "ended".to_owned(),
                    };
                    let name = self.plan.graph.node(id).name.clone();
                    let ready = self
                        .plan
                        .graph
                        .outgoing(id)
                        .iter()
                        .any(|(probe, _)| self.scheduler.state(*probe) == State::Succeeded);
                    let when = if ready {
                        "before its users finished"
                    } else {
                        "before it was ready"
                    };
                    let tail = self
                        .service_logs
                        .get(&id)
                        .map(|log| last_lines(log, 5))
                        .unwrap_or_default();
                    let tail = if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its log ends with: {tail}")
                    };
                    self.probe_failures
                        .insert(id, format!("{name} {how} {when}{tail}"));
                    self.progress(Line::ServiceEnded {
                        name: &name,
                        how: &how,
                    });
                    // Its probe cannot succeed now: stop waiting for it.
                    let probes: Vec<JobId> = self
                        .jobs
                        .iter()
                        .filter(|(_, purpose)| matches!(purpose, Purpose::Probe(p) if self.plan.graph.incoming(*p).iter().any(|(s, _)| *s == id)))
                        .map(|(job, _)| *job)
                        .collect();
                    if let Some(run) = &self.run {
                        for job in probes {
                            let _ = run.kill(job);
                        }
                    }
                    self.scheduler.service_exited(id);
                }
            }
            (Purpose::Probe(probe), Event::Ready { .. }) => {
                self.scheduler.complete(probe, Step::Succeeded);
            }
            (Purpose::Probe(probe), Event::NotReady { reason, .. }) => {
                for (service, _) in self.plan.graph.incoming(probe) {
                    let name = self.plan.graph.node(service).name.clone();
                    self.probe_failures
                        .entry(service)
                        .or_insert_with(|| format!("{name} was never observed ready: {reason}"));
                }
                self.scheduler.complete(probe, Step::Failed);
            }
            (_, _) => {}
        }
    }

    /// Judges a provider's execution and writes its receipts; returns
    /// whether every receipt passed.
    fn record(&mut self, id: NodeId, finished: &Finished, isolation: Isolated) -> bool {
        let plan = self.plan;
        let graph = plan.graph;
        let Some(p) = graph.node(id).provider() else {
            return false;
        };
        let pid = &p.spec.id.value;
        let report_file = match (&finished.ended, p.spec.adapter.value) {
            (Ended::Error(_), _) => ReportFile::NotExpected,
            (_, Adapter::Playwright) => match &p.spec.report {
                Some(report) => self.read_report(p, &report.value, finished),
                None => read_written(
                    &self.log_dir,
                    &format!("{pid}.playwright.json"),
                    finished.started,
                ),
            },
            (_, Adapter::TestDiscovery) | (_, Adapter::Command) => match &p.spec.report {
                Some(report) if p.spec.adapter.value == Adapter::TestDiscovery => {
                    self.read_report(p, &report.value, finished)
                }
                Some(report) => match self.read_report(p, &report.value, finished) {
                    ReportFile::Bytes(path, bytes) => ReportFile::Bytes(path, bytes),
                    _ => ReportFile::NotExpected,
                },
                None if p.spec.adapter.value == Adapter::TestDiscovery => {
                    ReportFile::Missing("(no `report` declared)".to_owned())
                }
                None => ReportFile::NotExpected,
            },
            _ => ReportFile::NotExpected,
        };
        // No report is parsed, kept or quoted with a secret in it (raw or escaped).
        let report_file = plan.secrets.redact(report_file).into_inner();
        let timeout = job::timeout_ms(p);
        // The discovery floor: the stricter of this provider's and its declared receiver's.
        let floor = p
            .outputs
            .iter()
            .filter(|o| o.under != *pid)
            .filter_map(|o| graph.provider(&o.under))
            .filter_map(|n| graph.node(n).provider())
            .map(judge::effective_minimum)
            .fold(judge::effective_minimum(p), u64::max);
        let mut judged = judge::judge_with_floor(
            p,
            plan.graph.claims(),
            &finished.ended,
            &report_file,
            timeout,
            floor,
        );
        if p.spec.adapter.value == Adapter::Command
            && !matches!(report_file, ReportFile::NotExpected)
        {
            // A command's report is kept as an artifact; it does not decide.
            judged.tests = TestNames::default();
        }
        if let Some(reason) = &finished.reason {
            for v in judged
                .verdicts
                .iter_mut()
                .filter(|v| v.outcome != Outcome::Pass)
            {
                v.reason = Some(reason.clone());
            }
        }
        // Running in place, nothing copied the inputs: the files the fingerprint binds are
        // read again, and if any moved while the command ran, what it observed is not what
        // the receipt would bind — an error, never a pass.
        if plan.mode == SandboxMode::None && matches!(finished.ended, Ended::Exited(_)) {
            let moved = plan.observed.moved_inputs(plan.workspace, pid);
            if !moved.is_empty() {
                let shown: Vec<String> = moved.iter().take(5).map(|m| format!("`{m}`")).collect();
                let reason = format!(
                    "its inputs changed while it ran in place ({}{}): what it observed is not what its fingerprint binds",
                    shown.join(", "),
                    if moved.len() > 5 { ", …" } else { "" }
                );
                judge::overrule(&mut judged, Outcome::Error, &reason);
            }
        }
        // Everything the run established is redacted once, here: what is printed, signed
        // and stored below is derived from this.
        let attachments = plan
            .secrets
            .redact(std::mem::take(&mut judged.attachments))
            .into_inner();
        let judged = plan.secrets.redact(judged);
        // What is kept as evidence is read now, before the next job can start
        // (it may run in the same sandbox and rewrite the same files); the writer
        // only stores it. The command log, the structured report, attachments
        // (inline, or files the run wrote inside its own directories, never
        // from elsewhere) and a contract's artifacts, in that order.
        let mut kept = Vec::new();
        if let Some(log) = &finished.log
            && let Ok(bytes) = fs_err::read(log)
        {
            kept.push(Kept::new(ArtifactKind::CommandLog, None, bytes));
        }
        if let ReportFile::Bytes(_, bytes) = report_file
            && !bytes.is_empty()
        {
            let path = p.spec.report.as_ref().map(|r| r.value.clone());
            kept.push(Kept::new(ArtifactKind::StructuredReport, path, bytes));
        }
        kept.extend(
            attachments
                .into_iter()
                .filter_map(|a| attachment(a, self.sandboxes.dirs.values(), &self.sandboxes.root)),
        );
        if p.spec.adapter.value == Adapter::ContractDigest {
            for (shown, bytes) in contract::artifacts(p, plan.workspace) {
                kept.push(Kept::new(
                    ArtifactKind::ContractArtifact,
                    Some(shown),
                    bytes,
                ));
            }
        }
        let passed = judged.verdicts.iter().all(|v| v.outcome == Outcome::Pass);
        let worst = judged
            .verdicts
            .iter()
            .map(|v| v.outcome)
            .max()
            .unwrap_or(Outcome::Error);
        let mark = if passed { Outcome::Pass } else { worst };
        let reason = judged.verdicts.iter().find_map(|v| v.reason.clone());
        self.progress(Line::Judged {
            provider: pid,
            mark,
            duration_ms: finished.duration.as_millis(),
            reason: reason.as_deref(),
        });
        let run = ProviderRun {
            provider: pid.to_string(),
            action: ProviderAction::Ran,
            reason,
            duration_ms: Some(u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX)),
            receipts: Vec::new(),
        };
        let sent = self.recorder.send(Persist {
            id,
            finished: finished.clone(),
            judged,
            kept,
            isolation,
            run,
        });
        if let Err(unwritten) = sent {
            // The writer ended (it cannot, short of a bug): say so, keep the result
            // without receipts, and start nothing more.
            self.diagnostics.push(diag(
                Code::InternalError,
                format!("the receipt of `{pid}` was not written: the receipt writer stopped"),
                "Rerun; if it persists, report it with the output of `proofgraph doctor`.",
            ));
            self.results.insert(id, unwritten);
            self.halt();
        }
        self.recorded += 1;
        self.collect(false);
        self.running.remove(pid.as_str());
        self.status();
        passed
    }

    /// A provider's declared report, in its sandbox, as evidence of this execution.
    fn read_report(&self, p: &ProviderNode, report: &str, finished: &Finished) -> ReportFile {
        self.cwd(p.runs_in.as_ref())
            .map_or(ReportFile::NotExpected, |d| {
                read_written(&d, report, finished.started)
            })
    }

    /// Takes in what the receipt writer has finished: what is there, or (`wait`) every
    /// receipt sent to it.
    fn collect(&mut self, wait: bool) {
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
