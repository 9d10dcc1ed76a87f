//! Sandboxes and hermetic process supervision for proofgraph.
//!
//! Three parts: [`materialize`] copies exactly the given files of a repository into a fresh
//! directory (a `worktree` or `copy` sandbox); the rest of this crate runs commands in it
//! with hermetic isolation on Linux; and [`beneath`] reads what a job wrote there (beneath
//! a directory of the run, never through a link, bounded). The crate knows nothing of
//! graphs, providers or receipts: it is given directories, file lists and argv, and reports
//! what happened.
//!
//! # Hermetic process supervision
//!
//! A *proof run* is one private network shared by its jobs, and one world per job:
//!
//! - a private **network namespace** with only the loopback interface, brought up, so a test
//!   reaches a service of the same run on `127.0.0.1` and nothing on the host's loopback, and
//!   two runs can both listen on the same port;
//! - per job, a **mount namespace whose root is built for it** ([`World`], `world.rs`): the
//!   system's directories read-only, the binds, overlays and private directories the caller
//!   names, a private `/tmp`, `/run`, minimal `/dev`, fresh `/proc`; an empty read-only cover
//!   over every [`RunConfig::hidden`] path a bind would show; then `pivot_root`, the old root
//!   detached, every capability dropped and `no_new_privs`. Nothing of the host is reachable
//!   but what the world names, and a job can unmount nothing of it;
//! - per job, a **PID namespace** whose PID 1 is the job's command (as a Nix builder is):
//!   when the command exits, is killed or times out, every descendant of the job dies,
//!   including those that called `setsid` or double-forked.
//!
//! Namespaces must not be entered from a multi-threaded process, so a run is hosted by a
//! single-threaded **init process**: the application re-executes itself with
//! [`INIT_ARG`] as its first argument and calls [`init_main`] from `main` before doing
//! anything else (before starting threads or an async runtime):
//!
//! ```no_run
//! // First thing in the application's `main`:
//! if std::env::args_os().nth(1).is_some_and(|arg| arg == proofgraph_sandbox::INIT_ARG) {
//!     proofgraph_sandbox::init_main(); // never returns
//! }
//! // ... the rest of the application; later, from any thread:
//! let config = proofgraph_sandbox::RunConfig::current_exe(proofgraph_sandbox::IsolationRequest::Auto);
//! let (run, isolation) = proofgraph_sandbox::Run::start(&config)?;
//! # drop((run, isolation));
//! # Ok::<(), proofgraph_sandbox::SandboxError>(())
//! ```
//!
//! The parent-side handle, [`Run`], talks to the init over a JSON-lines control protocol on
//! the init's stdin and stdout (see `protocol.rs`). Secrets to redact travel only over that
//! pipe: never in argv, never in a file.
//!
//! When namespaces cannot be created (no privilege, no user namespaces, seccomp), a run
//! still works, but never silently: [`Isolation::None`] carries the reason, and jobs are
//! then contained only by their process group (a descendant that calls `setsid` escapes).
//!
//! # Limitations
//!
//! - Without namespaces ([`Isolation::None`]): jobs share the host's network (whatever
//!   [`Network`] they ask for) and `/tmp`; a job is its own session and process group, which
//!   is killed on timeout, on kill and when the job's main process exits, but a descendant
//!   that calls `setsid` (or otherwise leaves the group) escapes and survives; if the init
//!   itself is killed, the command dies (parent-death signal) but its descendants do not.
//! - Namespaces need root (with `CAP_SYS_ADMIN`) or unprivileged user namespaces. In a user
//!   namespace only the caller's own uid and gid are mapped; files of other owners appear as
//!   `nobody`.
//! - The isolation guards against accidents and against a job reaching what its world does
//!   not name. Jobs of one run share its loopback network. There are no UTS, IPC or cgroup
//!   namespaces and no resource limits. A Unix-domain socket is reachable only when the
//!   world names a directory holding it.
//! - Mounts made on the host after a job started are not seen by it; a bind shows the
//!   mounts below its source (recursive binds).
//! - Killing is immediate (`SIGKILL` to the job's namespace): there is no grace period for
//!   a service to flush its output.
//! - With namespaces a job's command is PID 1 of its namespace, with what that means in a
//!   container started without an init: orphaned descendants are re-parented to the
//!   command, and stay zombies until it exits if it does not reap them (a descendant that
//!   waits for an orphan to disappear with `kill -0` waits until the job ends); signals
//!   sent from inside the job that the command has no handler for are ignored (`kill $$`
//!   in a shell command does nothing; `SIGKILL` from the init always works). A job that
//!   needs an ordinary PID 1 runs its command under a small init (`tini`, `dumb-init`, or
//!   `sh -c 'cmd; exit $?'` for the signal case). The command dies with the init
//!   (`PR_SET_PDEATHSIG`) unless it is itself a set-user-ID program, which clears that.
//! - The start of a job's command shares the init's memory (`CLONE_VM`, see `sys.rs` for
//!   the rules that make it safe). Within one run a program is looked up in `PATH` once, as
//!   a shell's hash table does: a program put earlier in `PATH` during the run is not seen.
//! - [`Run`] is `Send` but not `Sync` (its event receiver is not): keep it on one thread.
//!
//! Invariants: nothing here prints, parses command-line arguments or knows about graphs,
//! providers or receipts. Errors are typed ([`SandboxError`]) and read after "failed to".
//! No `unsafe` code exists outside `sys.rs`, each block there with its `SAFETY` argument;
//! `sys.rs` imports nothing of the crate, so the namespaces (`isolation.rs`) and the job
//! processes (`child.rs`) share its helpers without depending on each other.

pub mod beneath;
mod child;
mod error;
mod exec_record;
mod init;
mod isolation;
pub mod materialize;
mod parent;
mod probe;
mod protocol;
mod redact;
mod sys;
mod types;
mod world;

pub use error::SandboxError;
pub use init::init_main;
pub use parent::Run;
pub use probe::usable_url;
pub use redact::{MARKER, MIN_PREFIX, Redactor, redact_all};
pub use types::{
    Event, Executed, INIT_ARG, Isolation, IsolationRequest, JobId, JobSpec, Network, OverlaySpec,
    ProbeSpec, Recorded, RunConfig, World,
};

/// How a sandbox presents a repository to the commands that run in it. Serialized as its
/// name ([`SandboxMode::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Exactly the tracked files, with their current working-tree content.
    Worktree,
    /// The working tree minus ignored paths and regenerable output directories.
    Copy,
    /// Run in place; receipts say so.
    None,
}

impl SandboxMode {
    /// Every mode, in the order they are documented.
    pub const ALL: [SandboxMode; 3] = [SandboxMode::Worktree, SandboxMode::Copy, SandboxMode::None];

    /// The name used in configuration files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Worktree => "worktree",
            SandboxMode::Copy => "copy",
            SandboxMode::None => "none",
        }
    }

    /// Parses a mode name as written in `proofgraph.yaml` or on the command line.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == value)
    }
}
