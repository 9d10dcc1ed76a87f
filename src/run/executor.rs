//! What executes a job, behind one trait ([`Executor`]): start a job, cancel or kill it,
//! and the events it reports. The scheduling core (`scheduling.rs`) names jobs by its own
//! [`JobRef`] and routes each to an executor ([`Where`]); the loop (`event_loop.rs`)
//! carries the core's commands to the executor and its events back.
//!
//! Implemented by the local sandbox run (`local_run.rs`) and by a remote engine
//! (`remote_run.rs`): the engine is given provider actions only ([`Work::Action`], never a
//! service or a probe, which need the run's network), reports where each stands
//! ([`ExecEvent::Stage`]), and reports a job [`ExecEvent::Lost`] when it cannot say how
//! the job ended (the engine went away, refused it, or lost it); the core then runs the
//! job here or fails it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use proofgraph_sandbox::{JobSpec, ProbeSpec, Recorded};

/// A job as the core names it, whatever executes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct JobRef(pub(super) u64);

/// Which executor a job runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Where {
    /// The run's own sandbox, on this machine.
    Local,
    /// A remote execution engine.
    Remote,
}

/// What an executor is asked to run.
#[derive(Debug)]
pub(super) enum Work {
    /// A provider's execution: what a remote executor may be given.
    Provider(JobSpec),
    /// A service, beside the providers that need it (local only).
    Service(JobSpec),
    /// A service's readiness probe, inside the run's network (local only).
    Probe(ProbeSpec),
    /// A provider's execution as an action for a remote engine (remote only).
    Action(Box<RemoteJob>),
}

/// A provider's execution as a remote engine runs it: the action, and where what comes
/// back lands on this machine.
#[derive(Debug, Clone)]
pub(super) struct RemoteJob {
    /// The provider (for progress lines).
    pub(super) provider: String,
    /// The action: its argv, working directory, environment, outputs (its files are
    /// read from `layers` when it is encoded).
    pub(super) execution: crate::run::remote::Execution,
    /// Each layer of its input root, under its place there, top first.
    pub(super) layers: Vec<(crate::run::remote::RelPath, std::path::PathBuf)>,
    /// Where its declared outputs are written (its working directory's `written`
    /// directory: where the local judge reads a report).
    pub(super) outputs: std::path::PathBuf,
    /// Where its stdout and stderr are written, redacted, as a local job's log.
    pub(super) log: std::path::PathBuf,
    /// What the log is redacted of.
    pub(super) redact: Vec<Vec<u8>>,
}

/// Where a job that a remote engine ran ran: what its receipt records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RanOn {
    /// The engine's address.
    pub(super) engine: String,
    /// The worker, as the engine's `ExecutedActionMetadata` names it.
    pub(super) worker: String,
}

/// How a job ended, as its executor saw it.
#[derive(Debug, Clone, Default)]
pub(super) struct Exit {
    /// Its exit code, when it exited normally.
    pub(super) code: Option<i32>,
    /// The signal that killed it, when one did.
    pub(super) signal: Option<i32>,
    /// Whether its timeout killed it.
    pub(super) timed_out: bool,
    /// Whether it was killed on request.
    pub(super) killed: bool,
    /// From its start to the end of its process tree.
    pub(super) duration: Duration,
    /// Why its command never started, when it did not.
    pub(super) spawn_error: Option<String>,
    /// False when it was cancelled before it started (it never ran).
    pub(super) started: bool,
    /// What its processes executed, when that was recorded.
    pub(super) executed: Option<Recorded>,
    /// Where it ran, when a remote engine ran it.
    pub(super) ran_on: Option<RanOn>,
    /// Why what came back does not count (a remote result that failed its checks, or
    /// that the engine answered from its cache): the job ended in an error.
    pub(super) refused: Option<String>,
}

/// What an executor reports.
#[derive(Debug)]
pub(super) enum ExecEvent {
    /// A job ended.
    Ended {
        /// The job.
        job: JobRef,
        /// How.
        exit: Exit,
    },
    /// A probe saw its service ready.
    Ready(JobRef),
    /// A probe gave up.
    NotReady {
        /// The probe.
        job: JobRef,
        /// What its last attempt saw.
        reason: String,
    },
    /// Where a remote job stands (`queued`, `executing on <worker>`), for a line.
    Stage {
        /// The provider.
        provider: String,
        /// What the engine said.
        stage: crate::run::remote::Stage,
    },
    /// The executor cannot say how a job ended (a remote engine went away).
    Lost {
        /// The job.
        job: JobRef,
        /// Why.
        reason: String,
    },
    /// The executor itself failed; nothing more comes from it.
    Failed {
        /// Why.
        reason: String,
    },
}

/// The next event of an executor; `None` once it reports nothing more.
pub(super) type NextEvent<'e> = Pin<Box<dyn Future<Output = Option<ExecEvent>> + 'e>>;

/// What executes jobs.
pub(super) trait Executor {
    /// Starts `work` as `job`; its end is reported as an event. An error says why it
    /// could not be handed over (nothing follows).
    fn start(&mut self, job: JobRef, work: &Work) -> Result<(), String>;

    /// Takes back a job that has not started yet (an `Ended` with `started: false`
    /// follows); one that started finishes.
    fn cancel(&mut self, job: JobRef);

    /// Stops a job, its whole process tree (an `Ended` with `killed` follows, or for a
    /// probe a `NotReady`).
    fn kill(&mut self, job: JobRef);

    /// Goes on starting the jobs that wait, after a job held them.
    fn resume(&mut self);

    /// The next event.
    fn next_event(&mut self) -> NextEvent<'_>;
}
