//! The public vocabulary of a run: what the caller asks for and what it is told.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The first argument with which the application re-executes itself to host a run's init.
///
/// `main` must call [`crate::init_main`] when it sees it, before anything else.
pub const INIT_ARG: &str = "__sandbox-init";

/// How much isolation the caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IsolationRequest {
    /// Namespaces when the system allows them, otherwise [`Isolation::None`] with the reason.
    Auto,
    /// Namespaces or nothing: [`crate::Run::start`] fails when they cannot be created.
    Required,
    /// No namespaces, as if they were unavailable (to test the fallback, or by choice).
    Disabled,
}

/// The isolation a run actually has, as reported by its init.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Isolation {
    /// Private network, mount (`/tmp`) and per-job PID namespaces.
    Namespaces {
        /// Whether a user namespace was needed (the caller was not root, or root lacked
        /// the capability to create namespaces directly).
        user_namespace: bool,
    },
    /// No namespaces: jobs share the host's network and `/tmp`, and are contained only by
    /// their process group.
    None {
        /// Why there is no isolation, e.g. the `unshare` error or "disabled by the caller".
        reason: String,
    },
}

impl Isolation {
    /// Whether the run has private namespaces.
    pub fn is_isolated(&self) -> bool {
        matches!(self, Isolation::Namespaces { .. })
    }
}

/// Which network namespace a job runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// The run's private network: loopback only, shared by the run's jobs and probes.
    Private,
    /// The host's network. Such a job can reach the host (and the host's loopback), but not
    /// the services of its own run, which listen in the run's private network. Without
    /// isolation every job is on the host's network whatever it asks for.
    Host,
}

/// How to start a run's init: a program that calls [`crate::init_main`] when given `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// The executable; usually the application itself (see [`RunConfig::current_exe`]).
    pub program: PathBuf,
    /// Its arguments; usually `[INIT_ARG]`.
    pub args: Vec<OsString>,
    /// How much isolation to create.
    pub isolation: IsolationRequest,
    /// How many [`JobSpec::limited`] jobs run at once; the others wait in the init, which
    /// starts the next as soon as one ends (without a round trip to the caller). `None`:
    /// no limit.
    pub job_limit: Option<std::num::NonZeroUsize>,
    /// Paths no job may see (absolute, without `..`, by their real path), whatever its
    /// [`World`] names: where one lies inside something a world shows (a read-only or
    /// writable directory, a private one), it is covered there by an empty read-only
    /// `tmpfs`, so a job can neither read nor change what is there. Without namespaces they
    /// stay visible (the run reports [`crate::Isolation::None`]).
    pub hidden: Vec<PathBuf>,
    /// Whether what jobs execute is recorded ([`Event::Exited`]'s `executed`): always, for
    /// a run whose receipts bind it; `false` only to measure what recording costs.
    pub record_executions: bool,
}

impl RunConfig {
    /// Re-executes the running binary as the init: `/proc/self/exe __sandbox-init`.
    ///
    /// `/proc/self/exe` names the running executable even when its file was replaced or
    /// deleted since it started (a rebuild), so the init is always the same code.
    pub fn current_exe(isolation: IsolationRequest) -> Self {
        RunConfig {
            program: PathBuf::from("/proc/self/exe"),
            args: vec![OsString::from(INIT_ARG)],
            isolation,
            job_limit: None,
            hidden: Vec::new(),
            record_executions: true,
        }
    }
}

/// A command to run inside a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// The command and its arguments. Unless [`JobSpec::program`] is given, a program name
    /// without `/` is looked up in the `PATH` of [`JobSpec::env`] (not the caller's),
    /// relative to [`JobSpec::cwd`], in the job's world.
    pub argv: Vec<OsString>,
    /// The file to execute (absolute, without `..`), when the caller resolved `argv[0]`
    /// itself: exactly that file is executed (as the job's world shows it), with `argv`
    /// unchanged (its `argv[0]` is the name the program sees), and nothing is searched. A
    /// file that is not there is a job that could not start, never another program of the
    /// same name.
    pub program: Option<PathBuf>,
    /// The working directory; absolute, without `..`. With namespaces it must lie in the
    /// job's [`World`].
    pub cwd: PathBuf,
    /// What the job sees of the file system when the run has namespaces: a root built for
    /// it from these and the system's read-only directories, and nothing else of the host.
    /// Ignored without namespaces (the job then sees the host as it is).
    pub world: World,
    /// The job's entire environment; nothing is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// The network namespace it runs in.
    pub network: Network,
    /// After this long the job's whole process tree is killed and its exit says `timed_out`.
    pub timeout: Option<Duration>,
    /// Where its stdout and stderr go, merged and redacted; absolute, created or truncated.
    pub log: PathBuf,
    /// Byte patterns to hide, each replaced by `[redacted]` in the log even when split
    /// across writes: the caller lists every form it wants hidden (a secret and its escaped
    /// forms; this crate decodes nothing).
    pub redact: Vec<Vec<u8>>,
    /// Counts against [`RunConfig::job_limit`]: it starts when fewer than that many limited
    /// jobs run, in the order they were spawned. A job that must start at once (a service)
    /// is not limited. When a limited job ends without exiting 0 (a failure, a signal, a
    /// timeout, a command that could not start), the waiting ones are held until
    /// [`crate::Run::resume`] or [`crate::Run::cancel`]: the caller decides whether a
    /// failure stops the run before anything else starts.
    pub limited: bool,
    /// When this limited job ends, even with exit status 0, the waiting ones are held
    /// until [`crate::Run::resume`]: for a job whose result the caller judges from more
    /// than its exit status, or whose files must be read before the next job can start
    /// in the same directory.
    pub hold_after: bool,
}

/// An HTTP readiness probe, run inside the run's private network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    /// `http://host[:port][/path]`; no TLS, no user info, no fragment.
    pub url: String,
    /// The status to expect; `None` accepts any 2xx.
    pub expect_status: Option<u16>,
    /// Headers to expect: the name is compared without regard to case, the value must
    /// contain the given text.
    pub expect_headers: Vec<(String, String)>,
    /// Text the body must contain.
    pub expect_body: Option<String>,
    /// How long to keep trying: attempts back off from 10 ms, doubling, to 250 ms.
    pub timeout: Duration,
    /// What each attempt saw (status, headers, first bytes of the body), redacted.
    pub log: PathBuf,
    /// Byte patterns to hide (as [`JobSpec::redact`]), replaced by `[redacted]` in the log
    /// and in the reason of `NotReady` before what they quote of a response is cut short or
    /// escaped.
    pub redact: Vec<Vec<u8>>,
}

/// A directory a job sees as read-only layers under a writable one: an overlay mount in
/// the job's own mount namespace, so the job reads the layers' files where
/// [`OverlaySpec::target`] is, and what it writes there goes to
/// [`OverlaySpec::scratch`]`/upper`, never into a layer. Nobody else sees the overlay: the
/// host (and the caller) keep seeing `target` as it was, and read what the job wrote in
/// the scratch directory (deleted files there are whiteouts: character devices 0/0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlaySpec {
    /// The directory the jobs see the overlay at; it must exist. Absolute, without `..`.
    pub target: PathBuf,
    /// The read-only layers (host directories), the first one on top: where two layers
    /// have a file of the same path, the job sees the first one's, and directories of the
    /// same path are merged. `target` itself may be a layer (what is there shows through).
    pub layers: Vec<PathBuf>,
    /// A directory on a file system that is not itself an overlay, for what the job writes
    /// (`upper/`) and the overlay's work directory (`work/`), both created in it; a job
    /// given an `upper/` that holds files sees them as its own earlier writes.
    pub scratch: PathBuf,
}

impl OverlaySpec {
    /// The overlay's work directory in `scratch`: the kernel's own, which it leaves
    /// unreadable (mode 000, holding whiteouts) and of no use once the overlay is gone.
    pub fn work_dir(scratch: &std::path::Path) -> PathBuf {
        scratch.join("work")
    }
}

/// What a job sees of the file system when its run has namespaces: a root built for the
/// job (a fresh `tmpfs`, entered with `pivot_root`) holding
///
/// - the system's directories ([`World::SYSTEM`]), read-only;
/// - a private `/tmp` and `/run` (empty `tmpfs`), a minimal `/dev` (`null`, `zero`,
///   `full`, `random`, `urandom`, `tty`, its own `pts` and `shm`), a `/proc` of its own PID
///   namespace (with `sys`, `sysrq-trigger`, `irq`, `bus` and `fs` read-only) and `/sys`,
///   read-only;
/// - what the fields below name, each at its own path;
///
/// and nothing else of the host. Everything is mounted before the job's command starts,
/// in the order of path depth (a directory before what lies in it); [`RunConfig::hidden`]
/// paths inside any of it are covered. The job then holds no capability (every one is
/// dropped from its bounding set, as root or in a user namespace) and runs with
/// `no_new_privs`, so it can undo none of it: no `umount`, no remount, no set-user-ID
/// program that gains privileges.
///
/// A path given here that does not exist on the host is left out; one that is a symbolic
/// link is shown where it leads (its real path), with the link recreated at the given
/// path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct World {
    /// Files and directories the job reads, at the same path, and cannot change.
    pub read_only: Vec<PathBuf>,
    /// Directories the job reads and changes, at the same path (running in place, a
    /// directory it writes its results to).
    pub writable: Vec<PathBuf>,
    /// Directories the job sees as read-only layers under a writable one of its own.
    pub overlays: Vec<OverlaySpec>,
    /// Empty private directories (`tmpfs`) at these paths, writable, gone with the job
    /// (its `HOME`, say); what the other fields place inside one is mounted in it.
    pub private: Vec<PathBuf>,
}

impl World {
    /// The system's read-only directories, in every world (those the host has): programs,
    /// libraries and configuration, never a home directory or a place for data.
    pub const SYSTEM: &'static [&'static str] = &[
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/etc",
        "/opt",
        "/nix/store",
    ];
}

/// Identifies a job or a probe within its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub(crate) u64);

impl JobId {
    /// The number of the job within its run, from 1.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job {}", self.0)
    }
}

/// A file a job executed, with its content digest (BLAKE3, hex) when the kernel was about to
/// run it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Executed {
    /// Where the job's world had it (links resolved).
    pub path: PathBuf,
    /// BLAKE3 of its content, hex.
    pub digest: String,
}

/// What a job executed: each file once (a script's interpreters and a program's loader
/// included), in the order first seen, and what could not be recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The files executed.
    pub files: Vec<Executed>,
    /// Executions that could not be recorded (a path that could not be read), described.
    pub gaps: Vec<String>,
}

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A job ended; with namespaces, every process it started is gone by now.
    Exited {
        /// The job.
        job: JobId,
        /// Its exit code, when it exited normally. A command that could not be started
        /// exits with 127 (not found) or 126 (found but not executable), as in a shell.
        code: Option<i32>,
        /// The signal that killed it, when a signal did.
        signal: Option<i32>,
        /// Whether it was killed because its timeout passed.
        timed_out: bool,
        /// Whether it was killed on request ([`crate::Run::kill`] or shutdown).
        killed: bool,
        /// From the start of the job to the end of its process tree.
        duration: Duration,
        /// Why the command never started (not found, missing working directory, unwritable
        /// log...), redacted; `None` when it did start.
        spawn_error: Option<String>,
        /// Why some output could not be written to the log, when that happened.
        log_error: Option<String>,
        /// False when a [`JobSpec::limited`] job never started: cancelled
        /// ([`crate::Run::cancel`]) or stopped while it waited for a slot.
        started: bool,
        /// What its process tree executed after its own command (every `execve`), when
        /// the job ran in a world (namespaces) on an architecture where that is recorded;
        /// `None` when nothing was recorded.
        executed: Option<Recorded>,
    },
    /// A probe saw what it expected.
    Ready {
        /// The probe.
        job: JobId,
        /// How many requests it made.
        attempts: u32,
        /// From the start of the probe to the matching response.
        duration: Duration,
    },
    /// A probe gave up: its timeout passed, or it was killed.
    NotReady {
        /// The probe.
        job: JobId,
        /// How many requests it made.
        attempts: u32,
        /// What the last attempt saw (connection refused, wrong status, missing text...).
        reason: String,
    },
    /// The init died or broke the protocol; no further event will come.
    InitFailed {
        /// What happened, with the end of the init's stderr when it wrote any.
        reason: String,
    },
}

impl Event {
    /// The job or probe the event is about, if any.
    pub fn job(&self) -> Option<JobId> {
        match self {
            Event::Exited { job, .. } | Event::Ready { job, .. } | Event::NotReady { job, .. } => {
                Some(*job)
            }
            Event::InitFailed { .. } => None,
        }
    }
}
