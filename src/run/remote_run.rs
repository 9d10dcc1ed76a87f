//! The remote executor: a Remote Execution API engine (`run::remote::Engine`) behind
//! [`Executor`]. Each job it is given is a provider's action ([`Work::Action`]), run as a
//! task of the invocation's runtime: encoded (off the loop: it reads and hashes every
//! input file), executed on the engine, its result fetched and checked whole, its outputs
//! written where the local judge reads them and its stdout and stderr, redacted, where a
//! local job's log would be. What came of it comes back as [`ExecEvent`]s through one
//! channel: each stage the engine reports, then how it ended — or [`ExecEvent::Lost`]
//! when the engine failed in a way that lets the job run elsewhere
//! (`ExecError::may_run_elsewhere`). A result that failed its checks, or that the engine
//! answered from its cache though asked not to, never counts: the job ends in an error.
//!
//! Cancelling (a failure without `--keep-going`) and killing (SIGINT, SIGTERM) trigger the
//! job's [`Cancel`], which sends `CancelOperation` for its operation; [`RemoteRun::shutdown`]
//! does it for every job left and waits, a bounded time, for the engine to be told.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::executor::{ExecEvent, Executor, Exit, JobRef, NextEvent, RanOn, RemoteJob, Work};
use crate::run::remote::{Cancel, Engine, ExecError, Outcome};

/// How long the run waits, as it ends, for the engine to be told of every cancelled action.
const SHUTDOWN_WITHIN: Duration = Duration::from_secs(20);

/// One job in flight: its cancel handle, whether it was killed, its task.
struct InFlight {
    cancel: Cancel,
    killed: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

/// The engine, as an executor.
pub(super) struct RemoteRun {
    engine: Arc<Engine>,
    runtime: tokio::runtime::Handle,
    tx: UnboundedSender<(JobRef, ExecEvent)>,
    events: UnboundedReceiver<(JobRef, ExecEvent)>,
    jobs: BTreeMap<JobRef, InFlight>,
}

impl RemoteRun {
    /// Runs jobs on `engine`, as tasks of `runtime`.
    pub(super) fn new(engine: Arc<Engine>, runtime: tokio::runtime::Handle) -> Self {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        RemoteRun {
            engine,
            runtime,
            tx,
            events,
            jobs: BTreeMap::new(),
        }
    }

    /// Cancels every job left (the engine is sent `CancelOperation` for each that it
    /// named) and waits for their tasks, at most [`SHUTDOWN_WITHIN`].
    pub(super) async fn shutdown(self) {
        let jobs: Vec<InFlight> = self.jobs.into_values().collect();
        for job in &jobs {
            job.cancel.cancel();
        }
        let all = async {
            for job in jobs {
                let _ = job.task.await;
            }
        };
        let _ = tokio::time::timeout(SHUTDOWN_WITHIN, all).await;
    }
}

impl Executor for RemoteRun {
    fn start(&mut self, job: JobRef, work: &Work) -> Result<(), String> {
        let Work::Action(action) = work else {
            return Err("hand a job to the remote engine: it runs provider actions only".into());
        };
        let cancel = Cancel::new();
        let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let task = self.runtime.spawn(run(
            Arc::clone(&self.engine),
            job,
            (**action).clone(),
            cancel.clone(),
            Arc::clone(&killed),
            self.tx.clone(),
        ));
        self.jobs.insert(
            job,
            InFlight {
                cancel,
                killed,
                task,
            },
        );
        Ok(())
    }

    fn cancel(&mut self, job: JobRef) {
        if let Some(f) = self.jobs.get(&job) {
            f.cancel.cancel();
        }
    }

    fn kill(&mut self, job: JobRef) {
        if let Some(f) = self.jobs.get(&job) {
            f.killed.store(true, std::sync::atomic::Ordering::SeqCst);
            f.cancel.cancel();
        }
    }

    fn resume(&mut self) {}

    fn next_event(&mut self) -> NextEvent<'_> {
        Box::pin(async move {
            let (job, event) = self.events.recv().await?;
            // A job reports once it ended (or was lost); a stage is not an end.
            if !matches!(event, ExecEvent::Stage { .. }) {
                self.jobs.remove(&job);
            }
            Some(event)
        })
    }
}

/// Runs one action and reports what came of it.
async fn run(
    engine: Arc<Engine>,
    job: JobRef,
    action: RemoteJob,
    cancel: Cancel,
    killed: Arc<std::sync::atomic::AtomicBool>,
    tx: UnboundedSender<(JobRef, ExecEvent)>,
) {
    let began = Instant::now();
    let RemoteJob {
        provider,
        execution,
        layers,
        outputs,
        log,
        redact,
    } = action;
    let encoded = tokio::task::spawn_blocking(move || {
        let execution = super::offload::with_files(execution, &layers)?;
        crate::run::remote::encode(&execution).map_err(|e| e.to_string())
    })
    .await;
    let encoded = match encoded.map_err(|e| e.to_string()).and_then(|e| e) {
        Ok(encoded) => encoded,
        Err(e) => {
            // Nothing was sent: it may run here.
            let reason = format!("its action could not be described: failed to {e}");
            let _ = tx.send((job, ExecEvent::Lost { job, reason }));
            return;
        }
    };
    let stages = tx.clone();
    let mut progress = move |stage| {
        let event = ExecEvent::Stage {
            provider: provider.clone(),
            stage,
        };
        let _ = stages.send((job, event));
    };
    let executed = engine
        .execute(&encoded, &outputs, &mut progress, &cancel)
        .await;
    let event = ended(job, executed, &log, &redact, began.elapsed(), &killed);
    let _ = tx.send((job, event));
}

/// What an action that ran (or did not) is for the core.
fn ended(
    job: JobRef,
    executed: Result<Outcome, ExecError>,
    log: &std::path::Path,
    redact: &[Vec<u8>],
    duration: Duration,
    killed: &std::sync::atomic::AtomicBool,
) -> ExecEvent {
    let ran = |exit: Exit| ExecEvent::Ended { job, exit };
    match executed {
        Ok(outcome) => {
            let ran_on = Some(RanOn {
                engine: outcome.engine.clone(),
                worker: outcome.metadata.worker.clone(),
            });
            let mut bytes = outcome.stdout;
            bytes.extend_from_slice(&outcome.stderr);
            let written = fs_err::write(log, proofgraph_sandbox::redact_all(redact, &bytes));
            let refused = if outcome.cached {
                Some(format!(
                    "the engine {} answered from its cache though asked to run it (`skip_cache_lookup`), so its result does not count",
                    outcome.engine
                ))
            } else {
                written
                    .err()
                    .map(|e| format!("its log could not be written: {e}"))
            };
            ran(Exit {
                code: Some(outcome.exit_code),
                duration,
                started: true,
                ran_on,
                refused,
                ..Exit::default()
            })
        }
        Err(ExecError::Cancelled { .. }) => ran(Exit {
            killed: true,
            started: killed.load(std::sync::atomic::Ordering::SeqCst),
            duration,
            ..Exit::default()
        }),
        Err(e) if e.may_run_elsewhere() => ExecEvent::Lost {
            job,
            reason: e.to_string(),
        },
        Err(e) => ran(Exit {
            duration,
            started: true,
            refused: Some(format!("failed to {e}")),
            ..Exit::default()
        }),
    }
}
