//! One lease, start to end: the Action and its Command fetched from CAS and checked
//! against their digests, the input root materialised in a fresh directory, the command run
//! in a hermetic sandbox of its own, the declared outputs, stdout and stderr stored in CAS,
//! and the `ActionResult` that names them — built only once every blob it names is there.
//!
//! The sandbox is a [`Run`] per action, with namespaces required: a network of its own
//! (loopback only: no port of the worker's host, nor of another action, is reachable), a
//! PID namespace whose end kills every process the action started (at its exit, its
//! timeout, or a cancel), a private `/tmp`, and a world that shows the input root
//! (writable) and the system's read-only directories — nothing of the worker's home, its
//! other actions, or anything else of the host. stdout and stderr go to two files beside
//! the root, through `/bin/sh`'s redirections, before the command is executed in its place.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::protobuf::{Any, Timestamp};
use proofgraph_sandbox::{Event, IsolationRequest, JobSpec, Network, Run, RunConfig, World};
use prost::Message as _;

use super::input_root;
use super::outputs;
use crate::store::remote::{Backend, BlobDigest, Deadline, RemoteError, Settings};

/// The type of an `Any` holding an `Action`.
pub(super) const ACTION_TYPE: &str = "build.bazel.remote.execution.v2.Action";
/// The type of an `Any` holding a `Digest`.
pub(super) const DIGEST_TYPE: &str = "build.bazel.remote.execution.v2.Digest";
/// The type of an `Any` holding an `ActionResult`.
pub(super) const RESULT_TYPE: &str = "build.bazel.remote.execution.v2.ActionResult";

/// The shell that sends stdout and stderr to their files, then executes the command in its
/// own place (so the command is the PID 1 of the action's namespace): `$0` is the directory
/// of the two files, the arguments are the command's argv.
const REDIRECT: &str = r#"exec "$@" >"$0/stdout" 2>"$0/stderr""#;

/// Why a lease could not be carried out: each kind is a status the engine acts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The CAS could not be reached or failed: the engine may retry elsewhere
    /// (`UNAVAILABLE`).
    #[error("use the CAS: {0}")]
    Cas(RemoteError),
    /// A blob the Action needs is not in CAS (`FAILED_PRECONDITION`).
    #[error("find {0} in the CAS")]
    Missing(String),
    /// The Action, its Command or its input root is malformed or reaches out of its root
    /// (`INVALID_ARGUMENT`).
    #[error("accept the action: {0}")]
    Invalid(String),
    /// This machine failed (a file not written, a sandbox not started): `INTERNAL`, which
    /// the engine retries.
    #[error("run the action on this worker: {0}")]
    Local(String),
}

impl ActionError {
    /// A local I/O failure.
    pub(super) fn local(e: std::io::Error) -> Self {
        ActionError::Local(e.to_string())
    }

    /// The `google.rpc.Code` of the lease's status.
    pub fn code(&self) -> tonic::Code {
        match self {
            ActionError::Cas(_) => tonic::Code::Unavailable,
            ActionError::Missing(_) => tonic::Code::FailedPrecondition,
            ActionError::Invalid(_) => tonic::Code::InvalidArgument,
            ActionError::Local(_) => tonic::Code::Internal,
        }
    }
}

/// The engine's CAS, every read checked against its digest.
pub(super) struct Cas {
    backend: Arc<dyn Backend>,
    settings: Settings,
}

impl Cas {
    /// The CAS behind `backend`, with the deadlines of `settings`.
    pub(super) fn new(backend: Arc<dyn Backend>, settings: Settings) -> Self {
        Cas { backend, settings }
    }

    /// The bytes of `blob` (`what` it is, for messages), checked.
    pub(super) async fn read(&self, blob: BlobDigest, what: &str) -> Result<Vec<u8>, ActionError> {
        let until = Deadline::after(self.settings.deadline(blob.size));
        let bytes = self
            .backend
            .read_blob(blob, until)
            .await
            .map_err(ActionError::Cas)?
            .ok_or_else(|| ActionError::Missing(format!("{what} ({blob})")))?;
        if BlobDigest::of(&bytes) != blob {
            return Err(ActionError::Cas(RemoteError::Corrupt {
                remote: self.backend.name().to_owned(),
                reason: format!("the CAS served other bytes for {what} ({blob})"),
            }));
        }
        Ok(bytes)
    }

    /// Stores `blobs` (those the CAS lacks).
    pub(super) async fn write(&self, blobs: Vec<(BlobDigest, Vec<u8>)>) -> Result<(), ActionError> {
        let mut blobs = blobs;
        blobs.sort_by_key(|(d, _)| *d);
        blobs.dedup_by_key(|(d, _)| *d);
        let total: u64 = blobs.iter().map(|(d, _)| d.size).sum();
        let until = Deadline::after(self.settings.deadline(total));
        let missing = self
            .backend
            .find_missing(blobs.iter().map(|(d, _)| *d).collect(), until)
            .await
            .map_err(ActionError::Cas)?;
        let wanted: Vec<_> = blobs
            .into_iter()
            .filter(|(d, _)| missing.binary_search(d).is_ok())
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        self.backend
            .write_blobs(wanted, until)
            .await
            .map_err(ActionError::Cas)
    }
}

/// What a lease is given to run.
pub(super) struct Assignment {
    /// The bot id, recorded as the worker in the result.
    pub(super) worker: String,
    /// The lease's payload: an `Action` or its digest.
    pub(super) payload: Option<Any>,
    /// A directory of its own, made and removed here.
    pub(super) dir: PathBuf,
    /// Raised to cancel: the action's processes are killed.
    pub(super) cancel: Arc<AtomicBool>,
}

/// How a lease ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The command ran (or timed out): its result, every blob of it in CAS.
    Ran {
        /// The result.
        result: Box<reapi::ActionResult>,
        /// Whether its timeout killed it.
        timed_out: bool,
    },
    /// Cancelled before it ended.
    Cancelled,
    /// It could not be carried out.
    Failed(ActionError),
}

fn timestamp(at: SystemTime) -> Timestamp {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    Timestamp {
        seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(since.subsec_nanos()).unwrap_or(0),
    }
}

/// The Action a payload holds or names.
async fn action_of(cas: &Cas, payload: Option<&Any>) -> Result<reapi::Action, ActionError> {
    let payload = payload.ok_or_else(|| ActionError::Invalid("the lease has no payload".into()))?;
    let kind = payload.type_url.rsplit('/').next().unwrap_or_default();
    match kind {
        ACTION_TYPE => reapi::Action::decode(payload.value.as_slice())
            .map_err(|e| ActionError::Invalid(format!("the lease's Action: {e}"))),
        DIGEST_TYPE => {
            let digest = reapi::Digest::decode(payload.value.as_slice())
                .map_err(|e| ActionError::Invalid(format!("the lease's Digest: {e}")))?;
            let digest = input_root::digest(Some(&digest), "lease's Action")?;
            let bytes = cas.read(digest, "the Action").await?;
            reapi::Action::decode(bytes.as_slice())
                .map_err(|e| ActionError::Invalid(format!("the Action {digest}: {e}")))
        }
        other => Err(ActionError::Invalid(format!(
            "the lease holds a `{}`, not an Action",
            crate::store::remote::escaped(other)
        ))),
    }
}

/// Carries out `assignment`: the outcome, its directory removed.
pub(super) async fn carry_out(cas: &Cas, assignment: Assignment) -> Outcome {
    let outcome = attempt(cas, &assignment).await;
    let _ = fs_err::remove_dir_all(&assignment.dir);
    match outcome {
        Ok(outcome) => outcome,
        Err(e) => Outcome::Failed(e),
    }
}

async fn attempt(cas: &Cas, assignment: &Assignment) -> Result<Outcome, ActionError> {
    let started = SystemTime::now();
    let action = action_of(cas, assignment.payload.as_ref()).await?;
    let command_digest = input_root::digest(action.command_digest.as_ref(), "Action's Command")?;
    let command = reapi::Command::decode(cas.read(command_digest, "the Command").await?.as_slice())
        .map_err(|e| ActionError::Invalid(format!("the Command {command_digest}: {e}")))?;
    if command.arguments.is_empty() {
        return Err(ActionError::Invalid("the Command has no arguments".into()));
    }
    let root_digest = input_root::digest(action.input_root_digest.as_ref(), "Action's input root")?;
    let tree = input_root::fetch_tree(cas, root_digest).await?;
    let root = assignment.dir.join("root");
    let io = assignment.dir.join("io");
    for dir in [&root, &io] {
        fs_err::create_dir_all(dir).map_err(ActionError::local)?;
    }
    input_root::materialise(cas, &tree, root_digest, &root).await?;
    let working = if command.working_directory.is_empty() {
        root.clone()
    } else {
        let rel = outputs::relative(&command.working_directory).ok_or_else(|| {
            ActionError::Invalid("the working directory is not a path inside the root".into())
        })?;
        root.join(rel)
    };
    fs_err::create_dir_all(&working).map_err(ActionError::local)?;
    #[expect(
        deprecated,
        reason = "older clients declare files and directories apart"
    )]
    let declared = command
        .output_paths
        .iter()
        .chain(&command.output_files)
        .chain(&command.output_directories);
    for path in declared {
        // The directories above each output are made before the command runs (REAPI).
        if let Some(parent) = outputs::relative(path).and_then(Path::parent) {
            fs_err::create_dir_all(working.join(parent)).map_err(ActionError::local)?;
        }
    }
    let fetched = SystemTime::now();
    let timeout = action
        .timeout
        .as_ref()
        .map(|d| {
            Duration::new(
                u64::try_from(d.seconds).unwrap_or(0),
                u32::try_from(d.nanos).unwrap_or(0),
            )
        })
        .filter(|d| !d.is_zero());
    let job = Job {
        root: root.clone(),
        io: io.clone(),
        working: working.clone(),
        argv: command.arguments.clone(),
        env: command
            .environment_variables
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect(),
        timeout,
        cancel: Arc::clone(&assignment.cancel),
    };
    let ran = tokio::task::spawn_blocking(move || job.run())
        .await
        .map_err(|e| ActionError::Local(format!("the action's thread: {e}")))??;
    let executed = SystemTime::now();
    if ran.killed || assignment.cancel.load(Ordering::SeqCst) {
        return Ok(Outcome::Cancelled);
    }
    let collected = outputs::collect(&command, &working)?;
    let stdout = fs_err::read(io.join("stdout")).unwrap_or_default();
    let mut stderr = fs_err::read(io.join("stderr")).unwrap_or_default();
    // What the sandbox itself said (the shell failing to open the files, a command that
    // could not start) belongs to stderr.
    stderr.extend(fs_err::read(io.join("sandbox.log")).unwrap_or_default());
    if let Some(why) = &ran.spawn_error {
        stderr.extend(format!("proofgraph worker: the command did not start: {why}\n").bytes());
    }
    let stdout_digest = BlobDigest::of(&stdout);
    let stderr_digest = BlobDigest::of(&stderr);
    let mut blobs = collected.blobs;
    blobs.push((stdout_digest, stdout));
    blobs.push((stderr_digest, stderr));
    cas.write(blobs).await?;
    let uploaded = SystemTime::now();
    let result = reapi::ActionResult {
        output_files: collected.files,
        output_directories: collected.directories,
        output_symlinks: collected.symlinks,
        exit_code: ran.exit_code,
        stdout_digest: Some(stdout_digest.to_reapi()),
        stderr_digest: Some(stderr_digest.to_reapi()),
        execution_metadata: Some(reapi::ExecutedActionMetadata {
            worker: assignment.worker.clone(),
            worker_start_timestamp: Some(timestamp(started)),
            input_fetch_start_timestamp: Some(timestamp(started)),
            input_fetch_completed_timestamp: Some(timestamp(fetched)),
            execution_start_timestamp: Some(timestamp(fetched)),
            execution_completed_timestamp: Some(timestamp(executed)),
            output_upload_start_timestamp: Some(timestamp(executed)),
            output_upload_completed_timestamp: Some(timestamp(uploaded)),
            worker_completed_timestamp: Some(timestamp(uploaded)),
            ..Default::default()
        }),
        ..Default::default()
    };
    Ok(Outcome::Ran {
        result: Box::new(result),
        timed_out: ran.timed_out,
    })
}

/// A command to run in a sandbox of its own.
struct Job {
    root: PathBuf,
    io: PathBuf,
    working: PathBuf,
    argv: Vec<String>,
    env: Vec<(String, String)>,
    timeout: Option<Duration>,
    cancel: Arc<AtomicBool>,
}

/// How the command ended.
struct Ran {
    exit_code: i32,
    timed_out: bool,
    killed: bool,
    spawn_error: Option<String>,
}

/// How often a running action looks at its cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

impl Job {
    fn run(self) -> Result<Ran, ActionError> {
        let config = RunConfig {
            record_executions: false,
            ..RunConfig::current_exe(IsolationRequest::Required)
        };
        let (run, _isolation) = Run::start(&config)
            .map_err(|e| ActionError::Local(format!("the sandbox did not start: failed to {e}")))?;
        let mut argv: Vec<std::ffi::OsString> = vec![
            "/bin/sh".into(),
            "-c".into(),
            REDIRECT.into(),
            self.io.clone().into_os_string(),
        ];
        let mut args = self.argv.iter();
        if let Some(first) = args.next() {
            // A relative path with a `/` is relative to the working directory (REAPI's
            // `Command.arguments`); a bare name is looked up in the action's PATH by the
            // shell.
            if first.contains('/') && !first.starts_with('/') {
                argv.push(self.working.join(first).into_os_string());
            } else {
                argv.push(first.into());
            }
        }
        argv.extend(args.map(Into::into));
        let spec = JobSpec {
            argv,
            program: None,
            cwd: self.working.clone(),
            world: World {
                writable: vec![self.root.clone(), self.io.clone()],
                ..World::default()
            },
            env: self.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            network: Network::Private,
            timeout: self.timeout,
            log: self.io.join("sandbox.log"),
            redact: Vec::new(),
            limited: false,
            hold_after: false,
        };
        let job = run
            .spawn(&spec)
            .map_err(|e| ActionError::Local(format!("the action did not start: failed to {e}")))?;
        let mut kill_sent = false;
        loop {
            if self.cancel.load(Ordering::SeqCst) && !kill_sent {
                let _ = run.kill(job);
                kill_sent = true;
            }
            match run.recv_timeout(CANCEL_POLL) {
                Some(Event::Exited {
                    job: ended,
                    code,
                    signal,
                    timed_out,
                    killed,
                    spawn_error,
                    ..
                }) if ended == job => {
                    let _ = run.shutdown();
                    return Ok(Ran {
                        exit_code: code.unwrap_or_else(|| 128 + signal.unwrap_or(0)),
                        timed_out,
                        killed,
                        spawn_error,
                    });
                }
                Some(Event::InitFailed { reason }) => {
                    return Err(ActionError::Local(format!("the sandbox failed: {reason}")));
                }
                _ => {}
            }
        }
    }
}
