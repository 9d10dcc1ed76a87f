//! The executor: runs the providers a `prove` needs, driven by the graph's
//! pure scheduler, inside one hermetic run (`proofgraph_sandbox::Run`), and
//! writes a signed receipt for every outcome it observes.
//!
//! [`execute`] makes the run's directory and sandboxes, starts the run, and hands them to
//! the dispatcher (`event_loop.rs`): a tokio loop, on the calling thread, over the
//! executors' events (the local run's forwarded by the sandbox's reader thread,
//! `local_run.rs`) and SIGINT/SIGTERM, which feeds them to the scheduling core
//! (`scheduling.rs`, a state machine doing no I/O) and carries out what it answers (`shell.rs`). A finished provider is
//! judged on the loop (`finished.rs`); its receipts are signed and written by a writer
//! thread (`recorder.rs`, `writer.rs`), in the order they were judged. Identical
//! executions (same argv, directory, environment, timeout and network; `job.rs`) in one
//! run start once; every provider sharing one is judged from that one execution.
//!
//! Receipts are written only for what was observed: a provider that ran
//! (pass, fail, inconclusive), one whose command could not start or whose
//! service never became ready (error). A provider blocked by a failed
//! dependency, or killed by an interrupt, gets none.

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::{NodeId, RepoId};
use proofgraph_sandbox::{Isolation, Run, RunConfig};

use crate::base::diagnostic::{Code, Diagnostic};

pub use super::handoff::{Executed, Offload, Plan, Stopped};

use super::event_loop::{Dispatched, Dispatcher};
use super::events::{Line, Progress};
use super::handoff::diag;
use super::layers::Worlds;
use super::local_run::LocalRun;
use super::recorder::Recorder;
use super::sandboxes;
use super::stamps::Stamps;
use super::writer::{self, Writer};
use crate::proof::receipt::RunIsolation;

/// Runs `wanted` (providers) and writes their receipts, its loop driven on the calling
/// thread by `runtime` (the invocation's: its timers, signals and I/O).
pub fn execute(
    plan: &Plan<'_>,
    wanted: &BTreeSet<NodeId>,
    runtime: &tokio::runtime::Handle,
) -> Result<Executed, Stopped> {
    let writer = Writer::new(plan);
    std::thread::scope(|scope| {
        let recorder = writer::start(scope, writer).map_err(|e| vec![e])?;
        // The writer ends when the loop drops its sender (with `Recorder`).
        runtime.block_on(execute_async(plan, wanted, recorder))
    })
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
    let sandboxes = sandboxes::make(
        plan.workspace,
        &plan.observed.snapshots,
        plan.mode,
        plan.keep_sandbox,
        &repos,
        &run_dir,
    )?;
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
        let (run, isolation) = start(plan)?;
        (Some(run), Some(isolation))
    } else {
        (None, None)
    };
    let home = plan
        .env
        .var("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute() && h.parent().is_some());
    let worlds = Worlds::new(
        plan.mode,
        isolation.as_ref().is_some_and(Isolation::is_isolated),
        &run_dir,
        sandboxes.dirs.clone(),
        crate::run::layers::host_paths(
            &plan
                .workspace
                .catalog
                .as_ref()
                .map(|c| {
                    c.host_paths
                        .iter()
                        .map(|p| p.value.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default(),
            plan.env.var("PROOFGRAPH_HOST_PATHS").map(|v| v.as_os_str()),
            home.as_deref(),
        ),
        home,
    )
    .showing_repositories_at(
        plan.workspace
            .repositories
            .iter()
            .map(|(id, r)| {
                let dir = fs_err::canonicalize(&r.dir).unwrap_or_else(|_| r.dir.clone());
                (id.clone(), dir)
            })
            .collect(),
    )
    .with_caches(declared_caches(plan))
    .map_err(|e| {
        vec![diag(
            Code::SandboxFailed,
            e,
            "Check permissions under .proofgraph/caches/.",
        )]
    })?;
    let mut worlds = worlds;
    // A kept cargo build directory serves only files whose times follow their content.
    if plan.mode != proofgraph_sandbox::SandboxMode::None
        && worlds
            .all_caches()
            .values()
            .flatten()
            .any(|(kind, _)| *kind == crate::load::config::caches::CacheKind::CargoBuild)
    {
        let stamped = Stamps::acquire(
            &plan.store.dir().join("caches"),
            worlds.snapshots().keys(),
            || (plan.progress)(Progress::Line(Line::WaitingForBuildCache)),
        )
        .map_err(|e| e.to_string())
        .and_then(|stamps| {
            worlds.stamp(stamps, |repo| {
                plan.observed
                    .snapshots
                    .get(repo)
                    .map(|s| {
                        s.files
                            .iter()
                            .map(|f| {
                                (
                                    f.path.as_str(),
                                    format!("{}{:?}", f.id.to_hex(), f.kind),
                                    f.kind == crate::observe::inputs::FileKind::Symlink,
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            })
        });
        stamped.map_err(|e| {
            vec![diag(
                Code::SandboxFailed,
                format!("the kept cargo build directories could not be used: {e}"),
                "Check permissions under .proofgraph/caches/.",
            )]
        })?;
    }
    let mut diagnostics = Vec::new();
    if let Some(Isolation::None { reason }) = &isolation {
        // Asked for, the fix is to stop asking; otherwise, what the machine lacks.
        let fix = if plan.isolation == proofgraph_sandbox::IsolationRequest::Disabled {
            "Drop `--isolation none` for hermetic runs; receipts record `isolation: none`."
        } else {
            "Run as root or allow unprivileged user namespaces for hermetic runs; receipts record `isolation: none`."
        };
        diagnostics.push(
            Diagnostic::warning(Code::IsolationUnavailable, format!("this run is not isolated ({reason}): its commands share the host's network, PIDs and /tmp"))
                .surface("prove.isolation")
                .fix(fix),
        );
    }
    // Contract digests and other commandless providers are judged in-process.
    let dispatcher = Dispatcher::new(
        plan,
        wanted,
        run.map(LocalRun::new),
        RunIsolation::of(isolation.as_ref()),
        sandboxes,
        worlds,
        log_dir,
        recorder,
        diagnostics,
    );
    let Dispatched {
        providers,
        interrupted,
        diagnostics,
    } = dispatcher.drive(wanted).await;
    Ok(Executed {
        isolation,
        providers,
        interrupted,
        diagnostics,
    })
}

/// Starts the run. It holds `--jobs` providers' commands at a time and starts the next one
/// itself as soon as one ends; the scheduler admits up to twice as many, so one is always
/// waiting there instead of a round trip through the loop. Each job's world is built for
/// it and holds no part of the store: the store (its keys, receipts, setup trees, other
/// runs) and the pins that make the key trusted are hidden wherever a host path a job sees
/// would show them, so no provider reads the key, moves a pin or rewrites what proves it.
fn start(plan: &Plan<'_>) -> Result<(Run, Isolation), Vec<Diagnostic>> {
    let hidden = [
        plan.store.dir().to_path_buf(),
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
    Run::start(&config).map_err(|e| {
        vec![diag(Code::IsolationUnavailable, format!("the run could not be started: failed to {e}"), "Run `proofgraph doctor` to see what isolation this machine allows, or pass --isolation none.")]
    })
}

/// Each repository's declared caches (`caches` in proofgraph.yaml) and where each is kept:
/// `<store>/caches/<repository>/<kind>`, outside every run, so a warm cache outlives it.
fn declared_caches(
    plan: &Plan<'_>,
) -> BTreeMap<RepoId, Vec<(crate::load::config::caches::CacheKind, std::path::PathBuf)>> {
    let dir = plan.store.dir().join("caches");
    plan.workspace
        .catalog
        .iter()
        .flat_map(|c| &c.repositories)
        .filter(|(_, r)| !r.caches.is_empty())
        .map(|(id, r)| {
            let caches = r
                .caches
                .iter()
                .map(|k| (k.value, dir.join(id.as_str()).join(k.value.as_str())))
                .collect();
            (id.clone(), caches)
        })
        .collect()
}
