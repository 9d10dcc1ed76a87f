//! `proofgraph prove <change>`: run exactly what is not yet proven, in
//! sandboxes, and write signed receipts. Running it again with nothing
//! changed runs nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::num::NonZeroUsize;

use proofgraph_sandbox::{IsolationRequest, SandboxMode};
use serde::Serialize;

use crate::base::interrupt::Interrupt;
use crate::decide::status::{self, Requirement};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::run::account;
use crate::run::execute::{self, Plan, Stopped};
use crate::run::{Progress, ProviderAction, ProviderRun};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Evaluated, Keys, evaluate};
use crate::session::failures;
use crate::store::Sha256;

/// Options of `prove`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProveOptions {
    /// The change.
    pub change: String,
    /// Providers at once (default: the CPU count).
    pub jobs: Option<NonZeroUsize>,
    /// The sandbox mode (default: the catalog's, else worktree).
    pub sandbox: Option<SandboxMode>,
    /// Ignore receipts: run everything.
    pub no_cache: bool,
    /// Go on after a failure.
    pub keep_going: bool,
    /// Keep the sandboxes after the run.
    pub keep_sandbox: bool,
    /// How much isolation to ask for.
    pub isolation: IsolationRequest,
    /// Run only shard `i` of `n`.
    pub shard: Option<(usize, NonZeroUsize)>,
    /// Seconds between lines naming the providers still running (0: none).
    pub heartbeat: u64,
    /// The provider whose output is passed through as it is written.
    pub stream: Option<String>,
    /// `--cache <policy>`.
    pub cache: Option<String>,
    /// `--executor`: where providers run.
    pub executor: ExecutorChoice,
    /// `--remote-jobs`: remote actions in flight at once (default: `executor.remoteJobs`,
    /// else `--jobs`).
    pub remote_jobs: Option<NonZeroUsize>,
}

pub use crate::decide::placement::ExecutorChoice;

/// The payload of `prove`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProvePayload {
    /// The change.
    pub change: Option<String>,
    /// This run's id.
    pub run_id: Option<String>,
    /// The sandbox mode.
    pub sandbox: Option<SandboxMode>,
    /// `namespaces`, `none`, or null when nothing ran.
    pub isolation: Option<RunIsolation>,
    /// What happened to each provider.
    pub providers: Vec<ProviderRun>,
    /// Every claim × capability afterwards.
    pub requirements: Vec<Requirement>,
    /// Counts: providers ran and reused, requirements by state.
    pub summary: BTreeMap<&'static str, usize>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for ProvePayload {
    fn human(&self, out: &mut String) {
        let Some(change) = &self.change else { return };
        let _ = writeln!(out, "prove {change}");
        for r in &self.requirements {
            let why = r
                .reason
                .clone()
                .or_else(|| r.evidence.iter().find_map(|e| e.reason.clone()));
            let why = if r.state == status::State::Passed {
                String::new()
            } else {
                why.map(|w| format!("  ({w})")).unwrap_or_default()
            };
            let counts = r
                .counts_shown()
                .map(|c| format!("  [{c}]"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:12} {} / {}{counts}{why}",
                r.state.as_str(),
                r.claim,
                r.capability
            );
        }
        for run in self
            .providers
            .iter()
            .filter(|p| !p.log_tail.is_empty() || !p.failures.is_empty())
        {
            let p = &run.provider;
            if !run.log_tail.is_empty() {
                let _ = writeln!(
                    out,
                    "{p} did not pass; the end of its log (all of it: proofgraph log {change} {p}):"
                );
                for line in &run.log_tail {
                    let _ = writeln!(out, "  | {line}");
                }
            }
            if !run.failures.is_empty() {
                if run.log_tail.is_empty() {
                    let _ = writeln!(
                        out,
                        "{p} did not pass; failing (again: proofgraph log {change} {p}):"
                    );
                } else {
                    let _ = writeln!(out, "{p} failing:");
                }
                crate::session::failures::show(out, &run.failures);
            }
        }
        let parts: Vec<String> = self
            .summary
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(out, "{}", parts.join(", "));
    }
}

pub use crate::proof::receipt::RunIsolation;

/// Runs `prove`. When a repository's files change between the snapshot and its sandbox
/// (the sandbox is checked byte for byte against what was fingerprinted), nothing is
/// judged: the world is observed again and the run retried once.
///
/// SIGINT and SIGTERM are recorded from the start ([`Interrupt`]): one that arrives before
/// anything runs stops `prove` there, with exit 130 and its document.
pub fn run(ctx: &Context, options: &ProveOptions) -> Report<ProvePayload> {
    let interrupt = Interrupt::install();
    match attempt(ctx, options, &interrupt, false) {
        Some(report) => report,
        None => attempt(ctx, options, &interrupt, true)
            .unwrap_or_else(|| unreachable!("the last attempt always answers")),
    }
}

/// One observation and run; `None` (only when not `last`) when the inputs changed under
/// it and it should be observed again.
fn attempt(
    ctx: &Context,
    options: &ProveOptions,
    interrupt: &Interrupt,
    last: bool,
) -> Option<Report<ProvePayload>> {
    let keys = if options.no_cache {
        Keys::SignFresh
    } else {
        Keys::Sign
    };
    let mut e = match evaluate(ctx, &options.change, options.sandbox, keys) {
        Ok(e) => e,
        Err(all) if interrupt.is_set() => return Some(interrupted_before(all)),
        Err(all) => return Some(Report::failed(all, Verdict::Invalid)),
    };
    if let Err(d) = executor(&e, options) {
        e.release();
        return Some(Report::failed(vec![d], Verdict::Invalid));
    }
    let name = e.loaded.change.name.clone();
    let stream = match stream_provider(&e.loaded.prepared.graph, options.stream.as_deref(), &name) {
        Ok(stream) => stream,
        Err(d) => return Some(Report::failed(vec![d], Verdict::Invalid)),
    };
    // Leftovers of runs killed long ago (never a live run's files).
    e.store.sweep(std::time::Duration::from_secs(24 * 3600));
    let (wanted, reused) = crate::decide::reuse::wanted(
        &e.loaded.prepared.graph,
        &e.fingerprints,
        &e.store,
        &e.trusted,
        &name,
        options.no_cache,
        options.shard,
    );
    let run_id = crate::run::new_run_id();
    let jobs = options
        .jobs
        .unwrap_or_else(crate::session::load::default_jobs);
    let remote = match offload(ctx, &mut e, options, &wanted, jobs) {
        Ok(remote) => remote,
        Err(d) => {
            e.release();
            return Some(Report::failed(vec![d], Verdict::Invalid));
        }
    };
    let bar = progress_bar(ctx, &e);
    bar.line(&format!(
        "prove {name}: {} to run, {} reused ({} sandbox, --jobs {jobs})",
        wanted.len(),
        reused.len(),
        e.mode.as_str()
    ));
    let uploader = start_uploads(ctx, &mut e, !wanted.is_empty(), interrupt);
    let run = Run {
        ctx,
        options,
        remote,
        e: &e,
        wanted: &wanted,
        run_id: &run_id,
        jobs,
        stream,
        upload: uploader.as_ref().and_then(|u| u.sender()),
        interrupt,
        bar: &bar,
    };
    let ran = match run.ran(last) {
        Ok(ran) => ran,
        Err(None) => {
            bar.line("prove: the inputs changed while the sandbox was made; observing them again");
            e.release();
            return None;
        }
        Err(Some(all)) => return Some(Report::failed(all, Verdict::Invalid)),
    };
    Some(finish(e, options, &reused, ran, uploader, run_id))
}

/// The progress lines on stderr, redacted with the change's secrets.
fn progress_bar(ctx: &Context, e: &Evaluated) -> crate::present::output::ProgressBar {
    crate::present::output::ProgressBar::new(
        crate::present::output::ProgressBar::stderr_is_terminal(ctx.env()),
        crate::present::output::ProgressBar::width(ctx.env()),
    )
    .with_secrets(e.loaded.secrets.clone())
}

/// Receipts this run writes are uploaded while it goes on, when the policy writes the
/// remote and something `runs` (a no-op starts no upload thread).
fn start_uploads(
    ctx: &Context,
    e: &mut Evaluated,
    runs: bool,
    interrupt: &Interrupt,
) -> Option<crate::proof::travel::Uploader> {
    let remote = e
        .remote
        .take()
        .filter(|r| r.policy.pushes() && runs && !interrupt.is_set())?;
    let runtime = match ctx.runtime() {
        Ok(runtime) => runtime,
        Err(d) => {
            e.loaded.notes.push(d);
            return None;
        }
    };
    Some(crate::proof::travel::Uploader::start(
        runtime,
        remote.cache,
        e.store.clone(),
        e.trusted.clone(),
        Some(interrupt.clone()),
    ))
}

/// The report once the run is over (the evaluation released): every provider accounted
/// for, the requirements afterwards, the summary, the verdict, and what was found on the
/// way, in order: loading, reuse, the run, the uploads, an interrupt.
fn finish(
    e: Evaluated,
    options: &ProveOptions,
    reused: &BTreeMap<proofgraph_graph::ProviderId, Vec<Sha256>>,
    ran: Ran,
    uploader: Option<crate::proof::travel::Uploader>,
    run_id: String,
) -> Report<ProvePayload> {
    let pulled: Vec<Sha256> = e.pulled.iter().map(|(_, sha)| *sha).collect();
    let account::Reused {
        runs: mut providers,
        unrecorded,
    } = account::reused(&e.store, &e.trusted, &pulled, reused);
    let mut diagnostics = e.loaded.notes.clone();
    diagnostics.extend(e.loaded.secret_warnings.clone());
    diagnostics.extend(e.loaded.prepared.warnings.clone());
    diagnostics.extend(e.observed.warnings.clone());
    diagnostics.extend(crate::decide::reuse::unrecorded_executions(&unrecorded));
    providers.extend(ran.providers);
    diagnostics.extend(ran.diagnostics);
    let ending = account::Ending {
        interrupted: ran.interrupted,
        inputs_changed: ran.inputs_changed,
        shard: options.shard,
    };
    let traffic = account::Traffic {
        pulled: pulled.len(),
        pushed: uploader.map(|uploader| {
            let pushed = uploader.finish();
            diagnostics.extend(pushed.warnings);
            (pushed.receipts, pushed.failed)
        }),
    };
    let payload = conclude(&e, reused, providers, traffic);
    let graph = &e.loaded.prepared.graph;
    let verdict = account::verdict(graph, &payload.providers, &payload.requirements, ending);
    if ending.interrupted {
        diagnostics.push(
            crate::base::diagnostic::Diagnostic::error(
                crate::base::diagnostic::Code::Interrupted,
                "prove was interrupted; every process of the run was stopped",
            )
            .surface("prove")
            .fix("Run prove again; finished receipts are kept and reused."),
        );
    }
    e.release();
    Report {
        payload: Some(ProvePayload {
            run_id: Some(run_id),
            isolation: ran.isolation,
            ..payload
        }),
        status: diagnostics,
        verdict,
    }
}

/// `--stream <provider>`, when given: a provider of the change, or the diagnostic naming
/// the ones it has.
fn stream_provider(
    graph: &proofgraph_graph::SealedGraph,
    wanted: Option<&str>,
    change: &proofgraph_graph::ChangeName,
) -> Result<Option<proofgraph_graph::ProviderId>, crate::base::diagnostic::Diagnostic> {
    let Some(wanted) = wanted else {
        return Ok(None);
    };
    match proofgraph_graph::ProviderId::parse(wanted)
        .ok()
        .filter(|id| graph.provider(id).is_some())
    {
        Some(id) => Ok(Some(id)),
        None => {
            let known: Vec<String> = graph.providers().map(|(id, _, _)| id.to_string()).collect();
            Err(crate::base::diagnostic::Diagnostic::error(
                crate::base::diagnostic::Code::UnknownProvider,
                format!("`--stream {wanted}`: change `{change}` has no provider `{wanted}`"),
            )
            .surface("prove.stream")
            .fix(format!("Use one of: {}.", known.join(", "))))
        }
    }
}

/// Whether `--executor` can be honoured: `remote` and `auto` need `executor:` in
/// proofgraph.yaml ([`crate::decide::placement::check`]).
fn executor(
    e: &Evaluated,
    options: &ProveOptions,
) -> Result<(), crate::base::diagnostic::Diagnostic> {
    crate::decide::placement::check(options.executor, e.loaded.workspace.catalog.as_ref())
}

/// The remote engine the eligible `wanted` providers run on under `--executor
/// remote|auto`, reached and checked (`GetCapabilities`) before anything runs; `None` when
/// everything runs here: `--executor local`, no wanted provider is eligible, or (under
/// `auto`, with a warning in `e`'s notes) the engine cannot be used. Under `remote` an
/// engine that cannot be used is an error: nothing runs.
fn offload(
    ctx: &Context,
    e: &mut Evaluated,
    options: &ProveOptions,
    wanted: &std::collections::BTreeSet<proofgraph_graph::NodeId>,
    jobs: NonZeroUsize,
) -> Result<Option<execute::Offload>, crate::base::diagnostic::Diagnostic> {
    use crate::decide::placement::{Placement, Surroundings, placements, remote_jobs};
    let catalog = e.loaded.workspace.catalog.as_ref();
    let Some(configured) = catalog.and_then(|c| c.executor.as_ref()) else {
        return Ok(None);
    };
    if options.executor == ExecutorChoice::Local {
        return Ok(None);
    }
    let graph = &e.loaded.prepared.graph;
    let home = ctx
        .env()
        .var("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute());
    let host_paths = Surroundings::host_paths(
        catalog,
        ctx.env()
            .var("PROOFGRAPH_HOST_PATHS")
            .map(|v| v.as_os_str()),
        home.as_deref(),
    );
    let around = Surroundings {
        catalog,
        host_paths: &host_paths,
        in_place: e.mode == SandboxMode::None,
    };
    let programs = e
        .observed
        .world
        .executables
        .iter()
        .map(|(id, x)| (id.clone(), std::path::PathBuf::from(&x.path)))
        .collect();
    let providers: std::collections::BTreeSet<proofgraph_graph::ProviderId> =
        placements(options.executor, graph, &programs, &around)
            .into_iter()
            .filter(|(id, placed)| {
                *placed == Placement::Remote
                    && graph.provider(id).is_some_and(|n| wanted.contains(&n))
            })
            .map(|(id, _)| id)
            .collect();
    if providers.is_empty() {
        return Ok(None);
    }
    let falls_back = options.executor == ExecutorChoice::Auto;
    let engine = match reach_engine(ctx, catalog, &mut e.loaded.notes) {
        Ok(engine) => engine,
        Err(reason) => {
            let choice = options.executor.as_str();
            let fix = if falls_back {
                "Start the engine (or fix `executor.remote`) to run eligible providers on it; this run's results are local and as valid."
            } else {
                "Start the engine or fix `executor.remote` in proofgraph.yaml, or run with `--executor auto` (runs everything here when the engine cannot be reached) or `--executor local`."
            };
            let diagnostic = if falls_back {
                crate::base::diagnostic::Diagnostic::warning(
                    crate::base::diagnostic::Code::RemoteExecutorUnreachable,
                    format!(
                        "`--executor {choice}`: the remote engine cannot be used ({reason}); every provider runs on this machine, in the same sandbox as ever"
                    ),
                )
            } else {
                crate::base::diagnostic::Diagnostic::error(
                    crate::base::diagnostic::Code::RemoteExecutorUnreachable,
                    format!(
                        "`--executor {choice}`: the remote engine cannot be used ({reason}), and no provider runs on this machine in its place"
                    ),
                )
            };
            let diagnostic = diagnostic.surface("executor.remote").fix(fix);
            if falls_back {
                e.loaded.notes.push(diagnostic);
                return Ok(None);
            }
            return Err(diagnostic);
        }
    };
    Ok(Some(execute::Offload {
        engine: std::sync::Arc::new(engine),
        providers,
        jobs: remote_jobs(options.remote_jobs, Some(configured), jobs),
        falls_back,
        platform: configured
            .platform
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
    }))
}

/// The workspace's engine, opened by the cache's rules and asked for its capabilities
/// (execution enabled, SHA-256), on the invocation's runtime; else why it cannot be used.
fn reach_engine(
    ctx: &Context,
    catalog: Option<&crate::load::config::catalog::Catalog>,
    notes: &mut Vec<crate::base::diagnostic::Diagnostic>,
) -> Result<crate::run::remote::Engine, String> {
    let settings = crate::session::remote_choice::executor_settings(ctx, catalog, notes)
        .ok_or_else(|| "its connection settings cannot be used (see above)".to_owned())?;
    let engine = crate::run::remote::Engine::open(&settings).map_err(|e| e.to_string())?;
    let runtime = ctx.runtime().map_err(|d| d.message.clone())?;
    runtime
        .block_on(engine.check())
        .map_err(|e| format!("failed to {e}"))?;
    Ok(engine)
}

/// What running the wanted providers gave.
#[derive(Default)]
struct Ran {
    isolation: Option<RunIsolation>,
    interrupted: bool,
    inputs_changed: bool,
    providers: Vec<ProviderRun>,
    diagnostics: Vec<crate::base::diagnostic::Diagnostic>,
}

/// What the executor is handed for one attempt.
struct Run<'a> {
    ctx: &'a Context,
    options: &'a ProveOptions,
    remote: Option<execute::Offload>,
    e: &'a Evaluated,
    wanted: &'a std::collections::BTreeSet<proofgraph_graph::NodeId>,
    run_id: &'a str,
    jobs: NonZeroUsize,
    stream: Option<proofgraph_graph::ProviderId>,
    upload: Option<tokio::sync::mpsc::UnboundedSender<Sha256>>,
    interrupt: &'a Interrupt,
    bar: &'a crate::present::output::ProgressBar,
}

impl Run<'_> {
    /// What running the wanted providers gave: nothing when a signal came first (each
    /// wanted provider says so) or nothing is wanted, else [`Run::execute`].
    fn ran(self, last: bool) -> Result<Ran, Option<Vec<crate::base::diagnostic::Diagnostic>>> {
        if self.interrupt.is_set() {
            return Ok(Ran {
                interrupted: true,
                providers: account::not_run(
                    &self.e.loaded.prepared.graph,
                    self.wanted,
                    ProviderAction::Interrupted,
                    account::INTERRUPTED_BEFORE_START,
                ),
                ..Ran::default()
            });
        }
        if self.wanted.is_empty() {
            return Ok(Ran::default());
        }
        self.execute(last)
    }

    /// Runs the wanted providers. `Err(None)`: the inputs changed under the sandbox and
    /// this is not the `last` attempt; `Err(Some(_))`: the run could not be made.
    fn execute(self, last: bool) -> Result<Ran, Option<Vec<crate::base::diagnostic::Diagnostic>>> {
        let e = self.e;
        let graph = &e.loaded.prepared.graph;
        // What a run derives from its jobs names files relative to their repository, never
        // inside this run's sandboxes.
        let shown = e.loaded.secrets.with_rewrites(crate::run::path_rewrites(
            &e.store,
            self.run_id,
            &e.loaded.workspace,
            e.mode,
            self.wanted.len() + graph.services().count(),
        ));
        let bar = self.bar;
        let plan = Plan {
            graph,
            change: &e.loaded.change.name,
            workspace: &e.loaded.workspace,
            observed: &e.observed,
            fingerprints: &e.fingerprints,
            store: &e.store,
            key: e
                .signing_key
                .as_ref()
                .expect("evaluate made or refused the signing key"),
            mode: e.mode,
            jobs: self.jobs,
            keep_going: self.options.keep_going,
            keep_sandbox: self.options.keep_sandbox,
            isolation: self.options.isolation,
            env: self.ctx.env(),
            interrupt: self.interrupt,
            run_id: self.run_id,
            secrets: &shown,
            heartbeat: Some(std::time::Duration::from_secs(self.options.heartbeat)),
            stream: self.stream,
            upload: self.upload,
            trees: None,
            remote: self.remote,
            progress: &|p: Progress<'_>| match p {
                Progress::Line(line) => bar.line(&line.to_string()),
                Progress::Status {
                    done,
                    total,
                    running,
                } => bar.status(done, total, running),
            },
        };
        let executed = match self.ctx.runtime() {
            Ok(runtime) => execute::execute(&plan, self.wanted, &runtime),
            Err(d) => Err(Stopped::Failed(vec![d])),
        };
        bar.finish();
        match executed {
            Ok(executed) => Ok(Ran {
                isolation: executed.isolation.as_ref().map(|i| {
                    if i.is_isolated() {
                        RunIsolation::Namespaces
                    } else {
                        RunIsolation::None
                    }
                }),
                interrupted: executed.interrupted,
                inputs_changed: false,
                providers: executed.providers,
                diagnostics: executed.diagnostics,
            }),
            Err(Stopped::InputsChanged(_)) if !last => Err(None),
            Err(Stopped::InputsChanged(all)) => Ok(Ran {
                inputs_changed: true,
                providers: account::not_run(
                    graph,
                    self.wanted,
                    ProviderAction::NotRun,
                    account::INPUTS_CHANGED_TWICE,
                ),
                diagnostics: all,
                ..Ran::default()
            }),
            Err(Stopped::Failed(all)) => Err(Some(all)),
        }
    }
}

/// The payload once the run is over: every provider accounted for (the discovery
/// receivers' rows, the end of each failed log), the requirements afterwards and the
/// summary.
fn conclude(
    e: &Evaluated,
    reused: &BTreeMap<proofgraph_graph::ProviderId, Vec<Sha256>>,
    mut providers: Vec<ProviderRun>,
    traffic: account::Traffic,
) -> ProvePayload {
    let graph = &e.loaded.prepared.graph;
    let name = &e.loaded.change.name;
    let produced = account::produced(graph, reused, &providers);
    providers.extend(produced);
    providers.sort_by(|a, b| a.provider.cmp(&b.provider));
    // What a person reads first about a failure: the end of its log.
    for run in providers.iter_mut().filter(|run| account::shows_log(run)) {
        if let Some(log) = run.log.and_then(|sha| e.store.get(&sha)) {
            run.log_tail = failures::log_tail(&log, failures::LOG_TAIL_LINES);
        }
    }
    let mut requirements = status::requirements(graph, &e.fingerprints, &e.store, &e.trusted, name);
    account::explain_skipped(&mut requirements, &providers);
    let summary = account::summary(&requirements, &providers, traffic);
    ProvePayload {
        change: Some(name.to_string()),
        run_id: None,
        sandbox: Some(e.mode),
        isolation: None,
        providers,
        requirements,
        summary,
        root: Some(e.loaded.root.clone()),
    }
}

/// The document of a `prove` interrupted before it could evaluate the change.
fn interrupted_before(mut all: Vec<crate::base::diagnostic::Diagnostic>) -> Report<ProvePayload> {
    all.push(
        crate::base::diagnostic::Diagnostic::error(
            crate::base::diagnostic::Code::Interrupted,
            "prove was interrupted before anything ran",
        )
        .surface("prove")
        .fix("Run prove again."),
    );
    Report::failed(all, Verdict::Interrupted)
}
