//! The code that runs in processes started by the init: the command up to `exec`, and the
//! HTTP probe.
//!
//! A job is one process, the command, started like `posix_spawn` does (`CLONE_VM |
//! CLONE_VFORK`: it shares the init's memory, so no page tables are copied, and its parent
//! is suspended until it has exec'd). The code below that runs before `exec` allocates
//! nothing and reports a failure through memory the init reads afterwards
//! ([`SpawnFailure`]).
//!
//! With namespaces the command is **PID 1 of a new PID namespace** (`CLONE_NEWPID`), as a
//! Nix builder is, the init's child:
//!
//! ```text
//! init ─── command  (PID 1 of the job's namespace; its descendants stay in the namespace)
//! ```
//!
//! When the command exits, the kernel kills every process left in its namespace, including
//! those that called `setsid` or double-forked, and reaps them before the init can reap the
//! command; so once the init has reaped it, the job's whole tree is gone. The init kills a
//! job by sending `SIGKILL` to the command, its unreaped child (so the PID cannot have been
//! reused). Being PID 1 means, as in a container started without an init: orphans of the
//! job are re-parented to the command (a command that does not reap them leaves zombies
//! until it exits), and signals sent from inside the namespace that the command has no
//! handler for are ignored (`kill $$` does nothing). It dies with the init
//! (`PR_SET_PDEATHSIG`), unless it execs a set-user-ID program (which clears that).
//!
//! Without namespaces the command is the init's direct child, started the same way, in its
//! own session and process group.

#![expect(
    clippy::disallowed_types,
    reason = "the log and result descriptors are opened with openat in the run's namespaces and wrapped in std File; their errors already name the path"
)]

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd, IntoRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl, open};
use nix::sched::{CloneFlags, setns};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::stat::Mode;
use nix::unistd::{Pid, chdir, dup2_stderr, dup2_stdin, dup2_stdout, getppid, setsid};

use crate::probe::{self, Expectations, Target};
use crate::protocol::{ProbeOutcome, encode_line, nanos};
use crate::sys::{self, describe, detach_stdio, write_all_fd};
use crate::world::WorldPlan;

/// Exit code of a command that was not found (as in a shell).
pub(crate) const NOT_FOUND: i32 = 127;
/// Exit code of a command that was found but could not be started (as in a shell).
pub(crate) const CANNOT_RUN: i32 = 126;

/// Everything `exec` needs, converted before forking.
#[derive(Debug)]
pub(crate) struct CommandPlan {
    /// Owns the strings `argv_ptrs` points at.
    _argv: Vec<CString>,
    /// Owns the strings `env_ptrs` points at.
    _env: Vec<CString>,
    /// `argv` and the environment as the null-terminated pointer arrays `execve` takes, built in
    /// advance so that nothing is allocated between `clone` and `exec`.
    argv_ptrs: Vec<*const libc::c_char>,
    env_ptrs: Vec<*const libc::c_char>,
    cwd: CString,
    cwd_display: String,
    /// Paths to try, in order.
    candidates: Vec<CString>,
    /// Why there is no candidate (a bare name and no `PATH`).
    no_candidate: Option<String>,
    /// For a bare name looked up in `PATH`: the `PATH` value and the name, which
    /// decide the candidates (see [`CommandPlan::search_key`]).
    search: Option<Vec<u8>>,
    program_display: String,
}

impl CommandPlan {
    /// Converts a job's argv, the program to execute when the caller resolved it (else
    /// `argv[0]` is searched for in the environment's `PATH`), environment and working
    /// directory.
    pub(crate) fn new(
        argv: Vec<OsString>,
        program: Option<PathBuf>,
        env: Vec<(OsString, OsString)>,
        cwd: PathBuf,
    ) -> Result<Self, String> {
        let nul = |what: &str| format!("the {what} contains a NUL byte");
        let resolved = program;
        let program = argv
            .first()
            .ok_or_else(|| "the argv is empty".to_owned())?
            .clone();
        let program_display = match &resolved {
            Some(path) => path.display().to_string(),
            None => program.to_string_lossy().into_owned(),
        };
        let argv: Vec<CString> = argv
            .into_iter()
            .map(|arg| CString::new(arg.into_encoded_bytes()).map_err(|_| nul("argv")))
            .collect::<Result<_, _>>()?;
        let mut path_value: Option<Vec<u8>> = None;
        let mut env_strings = Vec::with_capacity(env.len());
        for (key, value) in env {
            let key = key.into_encoded_bytes();
            if key.is_empty() || key.contains(&b'=') {
                return Err(format!(
                    "the environment variable name {:?} is empty or contains `=`",
                    String::from_utf8_lossy(&key)
                ));
            }
            let value = value.into_encoded_bytes();
            if key == b"PATH" {
                path_value = Some(value.clone());
            }
            let mut entry = key;
            entry.push(b'=');
            entry.extend_from_slice(&value);
            env_strings.push(CString::new(entry).map_err(|_| nul("environment"))?);
        }
        let program_bytes = program.as_bytes();
        let resolved = match resolved {
            Some(path) => Some(
                CString::new(path.into_os_string().into_encoded_bytes())
                    .map_err(|_| nul("program"))?,
            ),
            None => None,
        };
        let (candidates, no_candidate) = if let Some(exact) = &resolved {
            (vec![exact.clone()], None)
        } else if program_bytes.contains(&b'/') {
            (vec![argv[0].clone()], None)
        } else {
            match &path_value {
                None => (
                    Vec::new(),
                    Some(format!(
                        "`{program_display}` is not a path and the job's environment has no PATH to look it up in"
                    )),
                ),
                Some(path) => {
                    let mut candidates = Vec::new();
                    for dir in path.split(|b| *b == b':') {
                        let mut candidate = if dir.is_empty() {
                            b".".to_vec()
                        } else {
                            dir.to_vec()
                        };
                        candidate.push(b'/');
                        candidate.extend_from_slice(program_bytes);
                        candidates.push(CString::new(candidate).map_err(|_| nul("PATH"))?);
                    }
                    (candidates, None)
                }
            }
        };
        let search = match (
            &path_value,
            program_bytes.contains(&b'/') || resolved.is_some(),
        ) {
            (Some(path), false) => {
                let mut key = path.clone();
                key.push(0);
                key.extend_from_slice(program_bytes);
                Some(key)
            }
            _ => None,
        };
        let cwd_display = cwd.display().to_string();
        let cwd = CString::new(cwd.into_os_string().into_encoded_bytes())
            .map_err(|_| nul("working directory"))?;
        let pointers = |strings: &[CString]| {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        Ok(CommandPlan {
            argv_ptrs: pointers(&argv),
            env_ptrs: pointers(&env_strings),
            _argv: argv,
            _env: env_strings,
            cwd,
            cwd_display,
            candidates,
            no_candidate,
            search,
            program_display,
        })
    }
}

impl CommandPlan {
    /// The addresses of the prepared `argv` and environment arrays, as `execve` is given
    /// them (the exec filter lets exactly this call through unrecorded).
    pub(crate) fn exec_arrays(&self) -> (u64, u64) {
        (
            self.argv_ptrs.as_ptr() as u64,
            self.env_ptrs.as_ptr() as u64,
        )
    }

    /// What a `PATH` search depends on (the `PATH` value and the bare name), when the
    /// program is searched for at all.
    pub(crate) fn search_key(&self) -> Option<&[u8]> {
        self.search.as_deref()
    }

    /// The first candidate that is an executable regular file now, as `exec` would find
    /// it, if every candidate is an absolute path (a relative `PATH` entry depends on the
    /// working directory).
    pub(crate) fn find_executable(&self) -> Option<usize> {
        use nix::sys::stat::{SFlag, stat};
        use nix::unistd::{AccessFlags, access};
        if self
            .candidates
            .iter()
            .any(|c| !c.as_bytes().starts_with(b"/"))
        {
            return None;
        }
        self.candidates.iter().position(|candidate| {
            stat(candidate.as_c_str()).is_ok_and(|st| {
                SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG
            }) && access(candidate.as_c_str(), AccessFlags::X_OK).is_ok()
        })
    }

    /// Tries candidate `index` first (found by [`CommandPlan::find_executable`] for an
    /// earlier job with the same search), then the others in `PATH` order, so that a
    /// program found once is not searched for again in every `PATH` entry before it.
    pub(crate) fn try_first(&mut self, index: usize) {
        if index < self.candidates.len() {
            let found = self.candidates.remove(index);
            self.candidates.insert(0, found);
        }
    }
}

/// How the command process must be set up before `exec`.
pub(crate) struct ExecSetup<'a> {
    /// The run's private network, to enter.
    pub(crate) private_net: Option<BorrowedFd<'a>>,
    /// The job's world, to build and enter (with namespaces).
    pub(crate) world: Option<&'a WorldPlan>,
    /// Without namespaces: the init's pid. The command then starts its own session (and so
    /// its own process group) and dies with the init.
    pub(crate) fallback_parent: Option<Pid>,
    /// With a world: the filter that records the job's executions, and the socket its
    /// listener is handed to the init on (see `exec_record.rs`).
    pub(crate) record: Option<(&'a crate::exec_record::ExecFilter, BorrowedFd<'a>)>,
}

/// Why a command could not be started, written by the command's process before it exits
/// (into memory it shares with the suspended init) and read by the init afterwards.
pub(crate) struct SpawnFailure {
    code: i32,
    len: usize,
    message: [u8; 1024],
}

impl SpawnFailure {
    pub(crate) fn new() -> Self {
        SpawnFailure {
            code: 0,
            len: 0,
            message: [0; 1024],
        }
    }

    /// The exit code and the reason, if the command failed to start.
    pub(crate) fn reported(&self) -> Option<(i32, String)> {
        (self.code != 0).then(|| {
            (
                self.code,
                String::from_utf8_lossy(&self.message[..self.len]).into_owned(),
            )
        })
    }

    /// Records why the command cannot start, and exits with `code`.
    fn fail(&mut self, code: i32, why: std::fmt::Arguments<'_>) -> ! {
        use std::fmt::Write as _;
        self.code = code;
        self.len = 0;
        let _ = self.write_fmt(why);
        sys::exit_now(code)
    }
}

/// Appends what fits; line breaks become spaces (the reason is one line).
impl std::fmt::Write for SpawnFailure {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for byte in text.bytes() {
            if self.len == self.message.len() {
                break;
            }
            self.message[self.len] = if byte == b'\n' { b' ' } else { byte };
            self.len += 1;
        }
        Ok(())
    }
}

/// Bytes shown as UTF-8 with replacement characters, without allocating.
struct Lossy<'a>(&'a [u8]);

impl std::fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }
}

/// An errno as [`sys::describe`] shows it, without allocating.
struct Described(Errno);

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.0, self.0.desc())
    }
}

/// Sets the command process up and executes the command. Never returns.
///
/// Runs in a `vfork`-like child of the init (see the module documentation): it allocates
/// nothing, and a failure is written to `failure` before the process exits.
pub(crate) fn exec_command(
    plan: &CommandPlan,
    out: BorrowedFd<'_>,
    failure: &mut SpawnFailure,
    setup: &ExecSetup<'_>,
) -> ! {
    let _ = SigSet::empty().thread_set_mask();
    // The init reset every other disposition when it started.
    sys::restore_sigpipe();
    if let Some(init) = setup.fallback_parent {
        if let Err(e) = setsid() {
            failure.fail(
                CANNOT_RUN,
                format_args!("start a new session: {}", Described(e)),
            );
        }
        if set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != init {
            sys::exit_now(1);
        }
    } else {
        // PID 1 of its own namespace, where its parent's PID reads as 0: whether the init
        // died before the death signal was set is read from the output pipe instead, whose
        // read end only the init holds.
        if set_pdeathsig(Signal::SIGKILL).is_err() || !has_reader(out) {
            sys::exit_now(1);
        }
    }
    if let Some(net) = setup.private_net
        && let Err(e) = setns(net, CloneFlags::CLONE_NEWNET)
    {
        failure.fail(
            CANNOT_RUN,
            format_args!("enter the run's private network: {}", Described(e)),
        );
    }
    if let Some(world) = setup.world
        && let Err((what, e)) = world.build()
    {
        failure.fail(
            CANNOT_RUN,
            format_args!("build the job's world: {what}: {}", Described(e)),
        );
    }
    if let Err(e) = chdir(plan.cwd.as_c_str()) {
        failure.fail(
            if e == Errno::ENOENT {
                NOT_FOUND
            } else {
                CANNOT_RUN
            },
            format_args!(
                "change to the working directory `{}`: {}",
                plan.cwd_display,
                Described(e)
            ),
        );
    }
    match open(
        c"/dev/null",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(null) if null.as_raw_fd() == 0 => {
            // Descriptor 0 was free, so `/dev/null` landed on it: it is stdin already, and
            // must only survive `exec` (dropping it would close it).
            let _stdin = null.into_raw_fd();
            if let Err(e) = fcntl(std::io::stdin(), FcntlArg::F_SETFD(FdFlag::empty())) {
                failure.fail(CANNOT_RUN, format_args!("redirect stdin: {}", Described(e)));
            }
        }
        Ok(null) => {
            if let Err(e) = dup2_stdin(&null) {
                failure.fail(CANNOT_RUN, format_args!("redirect stdin: {}", Described(e)));
            }
        }
        Err(e) => failure.fail(
            CANNOT_RUN,
            format_args!("open `/dev/null`: {}", Described(e)),
        ),
    }
    if let Err(e) = dup2_stdout(out).and_then(|()| dup2_stderr(out)) {
        failure.fail(
            CANNOT_RUN,
            format_args!("redirect stdout and stderr: {}", Described(e)),
        );
    }
    if let Some(why) = &plan.no_candidate {
        failure.fail(NOT_FOUND, format_args!("{why}"));
    }
    // Last before `exec`: from here on every `execve` of the job but its own first one is
    // stopped until the init has recorded it. Where the kernel refuses the filter, the job
    // runs unrecorded and the init, given no listener, says so.
    if let Some((filter, socket)) = setup.record
        && let Ok(listener) = sys::seccomp_listener(filter.program())
    {
        let _ = sys::send_fd(socket, listener);
    }
    let mut denied = None;
    let mut other = None;
    for candidate in &plan.candidates {
        let e = sys::execve_prepared(candidate, &plan.argv_ptrs, &plan.env_ptrs);
        match e {
            Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP | Errno::ENAMETOOLONG => {}
            Errno::EACCES => denied = Some((candidate, e)),
            _ => {
                other = Some((candidate, e));
                break;
            }
        }
    }
    let path_note = if plan.search.is_some() {
        " in the job's PATH"
    } else {
        ""
    };
    match other.or(denied) {
        Some((candidate, e)) => failure.fail(
            CANNOT_RUN,
            format_args!(
                "execute `{}`: {}",
                Lossy(candidate.as_bytes()),
                Described(e)
            ),
        ),
        None => failure.fail(
            NOT_FOUND,
            format_args!(
                "execute `{}`: not found{path_note} (no such file, or its interpreter is missing)",
                plan.program_display
            ),
        ),
    }
}

/// Whether a pipe's read end is still open somewhere: a pipe without readers polls as an
/// error. Allocates nothing.
fn has_reader(pipe: BorrowedFd<'_>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(pipe, PollFlags::POLLOUT)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(_) => !fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLERR)),
        Err(_) => false,
    }
}

/// What a probe process needs.
pub(crate) struct ProbePlan {
    pub(crate) target: Target,
    pub(crate) expect: Expectations,
    pub(crate) timeout: Duration,
    pub(crate) secrets: Vec<Vec<u8>>,
}

/// The probe process. Never returns.
pub(crate) fn probe_process(
    plan: &ProbePlan,
    mut log: File,
    result: OwnedFd,
    init: Pid,
    private_net: Option<BorrowedFd<'_>>,
) -> ! {
    detach_stdio();
    if set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != init {
        sys::exit_now(1);
    }
    let outcome = match private_net.map(|net| setns(net, CloneFlags::CLONE_NEWNET)) {
        Some(Err(e)) => ProbeOutcome {
            ready: false,
            attempts: 0,
            duration_ns: 0,
            reason: format!("enter the run's private network: {}", describe(e)),
        },
        _ => {
            let outcome = probe::run(
                &plan.target,
                &plan.expect,
                plan.timeout,
                &plan.secrets,
                &mut log,
            );
            ProbeOutcome {
                ready: outcome.ready,
                attempts: outcome.attempts,
                duration_ns: nanos(outcome.duration),
                reason: outcome.reason,
            }
        }
    };
    let _ = log.flush();
    let _ = write_all_fd(result.as_fd(), &encode_line(&outcome));
    sys::exit_now(0)
}
