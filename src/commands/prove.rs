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
use crate::proof::receipt::Outcome;
use crate::run::execute::{self, Plan, Stopped};
use crate::run::{Progress, ProviderAction, ProviderRun, ReceiptView};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Keys, evaluate};

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
}

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

/// How many lines of a provider's log `prove` shows when it did not pass.
const LOG_TAIL_LINES: usize = 15;

/// The last `n` lines of a log that hold anything, each cut to 240 characters (a minified
/// bundle's one line must not fill the terminal), as text.
pub fn log_tail(log: &[u8], n: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(log);
    let mut lines: Vec<String> = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(crate::session::failures::cut_line)
        .collect();
    lines.reverse();
    lines
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
    let name = e.loaded.change.name.clone();
    let graph = &e.loaded.prepared.graph;
    let stream = match &options.stream {
        None => None,
        Some(wanted) => {
            match proofgraph_graph::ProviderId::parse(wanted)
                .ok()
                .filter(|id| graph.provider(id).is_some())
            {
                Some(id) => Some(id),
                None => {
                    let known: Vec<String> =
                        graph.providers().map(|(id, _, _)| id.to_string()).collect();
                    return Some(Report::failed(
                    vec![
                        crate::base::diagnostic::Diagnostic::error(
                            crate::base::diagnostic::Code::UnknownProvider,
                            format!("`--stream {wanted}`: change `{name}` has no provider `{wanted}`"),
                        )
                        .surface("prove.stream")
                        .fix(format!("Use one of: {}.", known.join(", "))),
                    ],
                    Verdict::Invalid,
                ));
                }
            }
        }
    };
    let key = e
        .signing_key
        .clone()
        .expect("evaluate made or refused the signing key");
    // Leftovers of runs killed long ago (never a live run's files).
    e.store.sweep(std::time::Duration::from_secs(24 * 3600));
    let (wanted, reused) = crate::decide::reuse::wanted(
        graph,
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
    let bar = crate::present::output::ProgressBar::new(
        crate::present::output::ProgressBar::stderr_is_terminal(ctx.env()),
        crate::present::output::ProgressBar::width(ctx.env()),
    )
    .with_secrets(e.loaded.secrets.clone());
    bar.line(&format!(
        "prove {name}: {} to run, {} reused ({} sandbox, --jobs {jobs})",
        wanted.len(),
        reused.len(),
        e.mode.as_str()
    ));
    let mut providers: Vec<ProviderRun> = Vec::new();
    let mut unrecorded = Vec::new();
    for (id, receipts) in &reused {
        let verified: Vec<_> = receipts
            .iter()
            .filter_map(|sha| crate::proof::receipt::read(&e.store, sha, &e.trusted))
            .collect();
        if verified
            .iter()
            .any(crate::decide::reuse::executions_unrecorded)
        {
            unrecorded.push(id.clone());
        }
        let views = verified
            .into_iter()
            .map(|v| ReceiptView {
                receipt: v.proof.receipt.clone(),
                capability: v.proof.capability.clone(),
                outcome: v.proof.outcome,
                reason: v.proof.reason.clone(),
                sha256: v.sha256,
            })
            .collect();
        let from_remote = receipts
            .iter()
            .any(|sha| e.pulled.iter().any(|(_, pulled)| pulled == sha));
        providers.push(ProviderRun {
            provider: id.to_string(),
            action: ProviderAction::Reused,
            reason: from_remote.then(|| "its receipt came from the remote cache".to_owned()),
            duration_ms: None,
            receipts: views,
            log: None,
            log_tail: Vec::new(),
            failures: Default::default(),
            result: None,
        });
    }
    let pulled = e.pulled.len();
    // Receipts this run writes are uploaded while it goes on, when the policy writes the
    // remote and something runs (a no-op starts no upload thread).
    let uploader = e
        .remote
        .take()
        .filter(|r| r.policy.pushes() && !wanted.is_empty() && !interrupt.is_set())
        .map(|r| {
            crate::proof::remote::Uploader::start(
                r.cache,
                e.store.clone(),
                e.trusted.clone(),
                Some(interrupt.clone()),
            )
        });
    let mut diagnostics = e.loaded.notes.clone();
    diagnostics.extend(e.loaded.secret_warnings.clone());
    diagnostics.extend(e.loaded.prepared.warnings.clone());
    diagnostics.extend(e.observed.warnings.clone());
    diagnostics.extend(crate::decide::reuse::unrecorded_executions(&unrecorded));
    let mut isolation = None;
    let mut interrupted = interrupt.is_set();
    let mut inputs_changed = false;
    if interrupted {
        // A signal before anything started: nothing ran.
        for id in &wanted {
            providers.push(ProviderRun {
                provider: graph.node(*id).name.clone(),
                action: ProviderAction::Interrupted,
                reason: Some("the run was interrupted before it started".to_owned()),
                duration_ms: None,
                receipts: Vec::new(),
                log: None,
                log_tail: Vec::new(),
                failures: Default::default(),
                result: None,
            });
        }
    } else if !wanted.is_empty() {
        // What a run derives from its jobs names files relative to their repository, never
        // inside this run's sandboxes.
        let shown = e.loaded.secrets.with_rewrites(crate::run::path_rewrites(
            &e.store,
            &run_id,
            &e.loaded.workspace,
            e.mode,
            wanted.len() + graph.services().count(),
        ));
        let plan = Plan {
            graph,
            change: &name,
            workspace: &e.loaded.workspace,
            observed: &e.observed,
            fingerprints: &e.fingerprints,
            store: &e.store,
            key: &key,
            mode: e.mode,
            jobs,
            keep_going: options.keep_going,
            keep_sandbox: options.keep_sandbox,
            isolation: options.isolation,
            env: ctx.env(),
            interrupt,
            run_id: &run_id,
            secrets: &shown,
            heartbeat: Some(std::time::Duration::from_secs(options.heartbeat)),
            stream: stream.clone(),
            upload: uploader.as_ref().and_then(|u| u.sender()),
            trees: None,
            progress: &|p: Progress<'_>| match p {
                Progress::Line(line) => bar.line(&line.to_string()),
                Progress::Status {
                    done,
                    total,
                    running,
                } => bar.status(done, total, running),
            },
        };
        let executed = execute::execute(&plan, &wanted);
        bar.finish();
        match executed {
            Ok(executed) => {
                isolation = executed.isolation.as_ref().map(|i| {
                    if i.is_isolated() {
                        RunIsolation::Namespaces
                    } else {
                        RunIsolation::None
                    }
                });
                interrupted = executed.interrupted;
                providers.extend(executed.providers);
                diagnostics.extend(executed.diagnostics);
            }
            Err(Stopped::InputsChanged(_)) if !last => {
                bar.line(
                    "prove: the inputs changed while the sandbox was made; observing them again",
                );
                e.release();
                return None;
            }
            Err(Stopped::InputsChanged(all)) => {
                inputs_changed = true;
                diagnostics.extend(all);
                for id in &wanted {
                    providers.push(ProviderRun {
                        provider: graph.node(*id).name.clone(),
                        action: ProviderAction::NotRun,
                        reason: Some(
                            "error: its inputs changed while its sandbox was made, twice; nothing was judged against a fingerprint they no longer have".to_owned(),
                        ),
                        duration_ms: None,
                        receipts: Vec::new(),
                        log: None,
                        log_tail: Vec::new(),
                        failures: Default::default(),
                        result: None,
                    });
                }
            }
            Err(Stopped::Failed(all)) => return Some(Report::failed(all, Verdict::Invalid)),
        }
    }
    // A discovery receiver is never run on its own: its receipt comes from its producer's
    // run (when that ran; when it was reused, so was the receiver).
    for (id, node, _) in graph.providers() {
        let producers: Vec<String> = graph
            .producers_of(node)
            .into_iter()
            .map(|n| graph.node(n).name.clone())
            .collect();
        if producers.is_empty() || reused.contains_key(id) {
            continue;
        }
        let receipts: Vec<ReceiptView> = providers
            .iter()
            .filter(|run| producers.contains(&run.provider))
            .flat_map(|run| run.receipts.iter())
            .filter(|r| r.receipt == *id)
            .cloned()
            .collect();
        let via: Vec<String> = producers.iter().map(|p| format!("`{p}`")).collect();
        providers.push(ProviderRun {
            provider: id.to_string(),
            action: ProviderAction::Produced,
            reason: Some(format!(
                "its receipt comes from the run of {}",
                via.join(", ")
            )),
            duration_ms: None,
            receipts,
            log: None,
            log_tail: Vec::new(),
            failures: Default::default(),
            result: None,
        });
    }
    providers.sort_by(|a, b| a.provider.cmp(&b.provider));
    // What a person reads first about a failure: the end of its log.
    for run in &mut providers {
        let passed = run.receipts.iter().all(|r| r.outcome == Outcome::Pass);
        if run.action == ProviderAction::Ran
            && !passed
            && let Some(log) = run.log.and_then(|sha| e.store.get(&sha))
        {
            run.log_tail = log_tail(&log, LOG_TAIL_LINES);
        }
    }
    let mut requirements =
        status::requirements(graph, &e.fingerprints, &e.store, &e.trusted, &name);
    // A requirement none of whose providers got to run in this prove says why this run
    // skipped them, not what an earlier receipt was for.
    for r in &mut requirements {
        if r.state == status::State::Passed || r.evidence.is_empty() {
            continue;
        }
        let skipped: Option<Vec<&str>> = r
            .evidence
            .iter()
            .map(|ev| {
                providers
                    .iter()
                    .find(|p| p.provider == ev.provider)
                    .filter(|p| {
                        matches!(
                            p.action,
                            ProviderAction::Blocked | ProviderAction::Interrupted
                        )
                    })
                    .and_then(|p| p.reason.as_deref())
            })
            .collect();
        if let Some(first) = skipped.and_then(|reasons| reasons.first().copied()) {
            r.reason = Some(first.to_owned());
            for ev in &mut r.evidence {
                ev.reason = Some(first.to_owned());
            }
        }
    }
    let mut summary = super::status::summary(&requirements);
    if pulled > 0 {
        summary.insert("pulled", pulled);
    }
    if let Some(uploader) = uploader {
        let pushed = uploader.finish();
        summary.insert("pushed", pushed.receipts);
        if pushed.failed > 0 {
            summary.insert("push_failed", pushed.failed);
        }
        diagnostics.extend(pushed.warnings);
    }
    summary.insert(
        "ran",
        providers
            .iter()
            .filter(|p| p.action == ProviderAction::Ran)
            .count(),
    );
    summary.insert(
        "reused",
        providers
            .iter()
            .filter(|p| p.action == ProviderAction::Reused)
            .count(),
    );
    let verdict = if interrupted {
        diagnostics.push(
            crate::base::diagnostic::Diagnostic::error(
                crate::base::diagnostic::Code::Interrupted,
                "prove was interrupted; every process of the run was stopped",
            )
            .surface("prove")
            .fix("Run prove again; finished receipts are kept and reused."),
        );
        Verdict::Interrupted
    } else if providers
        .iter()
        .any(|p| p.result == Some(crate::run::Mark::CouldNotStart))
    {
        // A command that cannot start is a configuration problem, not a result.
        Verdict::Invalid
    } else if inputs_changed
        || providers
            .iter()
            .flat_map(|p| &p.receipts)
            .any(|r| matches!(r.outcome, Outcome::Fail | Outcome::Error))
    {
        Verdict::Failed
    } else if let Some((i, n)) = options.shard {
        // A shard answers for its own providers: the others are other jobs' to run, and
        // `status` after every shard gives the change's verdict.
        let mine: std::collections::BTreeSet<String> =
            proofgraph_graph::schedule::shard(graph, i, n)
                .into_iter()
                .map(|id| graph.node(id).name.clone())
                .collect();
        let unproven = requirements
            .iter()
            .flat_map(|r| &r.evidence)
            .filter(|ev| mine.contains(&ev.provider))
            .any(|ev| ev.state != status::State::Passed);
        if unproven {
            Verdict::Unproven
        } else {
            Verdict::Success
        }
    } else {
        super::status::verdict(&requirements)
    };
    let sandbox = e.mode;
    let root = e.loaded.root.clone();
    e.release();
    Some(Report {
        payload: Some(ProvePayload {
            change: Some(name.to_string()),
            run_id: Some(run_id),
            sandbox: Some(sandbox),
            isolation,
            providers,
            requirements,
            summary,
            root: Some(root),
        }),
        status: diagnostics,
        verdict,
    })
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
