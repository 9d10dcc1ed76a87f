//! The code that runs in processes forked by the init: the job leader, the job's PID-1
//! reaper, the command itself up to `exec`, and the HTTP probe.
//!
//! With namespaces, a job is three processes:
//!
//! ```text
//! init ─┬─ leader (host PID namespace; the init's child; what the init waits for and signals)
//!       │    └─ reaper (PID 1 of the job's new PID namespace)
//!       │         └─ command (exec'd; its descendants stay in the namespace)
//! ```
//!
//! - The **leader** unshares a PID namespace and forks the reaper. On `SIGTERM` (the init's
//!   kill) it sends `SIGKILL` to the reaper, which is its own child, so the PID cannot have
//!   been reused. It exits once the reaper has been reaped, and by then the kernel has killed
//!   and reaped every process of the namespace, so when the init sees the leader exit the
//!   job's whole tree is gone.
//! - The **reaper** forks the command, reaps every orphan reparented to it, forwards
//!   `SIGTERM`, `SIGINT`, `SIGHUP` and `SIGQUIT` to the command, and when the command exits
//!   writes its status to the job's control pipe and exits, which kills the rest of the
//!   namespace.
//! - Both die with their parent (`PR_SET_PDEATHSIG`), so the chain parent → init → leader →
//!   reaper → namespace collapses when any link is killed.
//!
//! Without namespaces the command is the init's direct child, in its own session and
//! process group.
//!
//! Messages on a job's control pipe are lines: `error <code> <why>` (the command never started),
//! `exit <code>` or `signal <number>` (from the reaper).

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::stat::Mode;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{
    ForkResult, Pid, chdir, dup2_stderr, dup2_stdin, dup2_stdout, execve, getppid, pipe2, setsid,
};

use crate::isolation::describe;
use crate::probe::{self, Expectations, Target};
use crate::protocol::{ProbeOutcome, encode_line, nanos};
use crate::sys::{self, SingleThreaded};

/// Exit code of a command that was not found (as in a shell).
pub(crate) const NOT_FOUND: i32 = 127;
/// Exit code of a command that was found but could not be started (as in a shell).
pub(crate) const CANNOT_RUN: i32 = 126;

/// Everything `exec` needs, converted before forking.
#[derive(Debug)]
pub(crate) struct CommandPlan {
    argv: Vec<CString>,
    env: Vec<CString>,
    cwd: CString,
    cwd_display: String,
    /// Paths to try, in order.
    candidates: Vec<CString>,
    /// Why there is no candidate (a bare name and no `PATH`).
    no_candidate: Option<String>,
    program_display: String,
}

impl CommandPlan {
    /// Converts a job's argv, environment and working directory.
    pub(crate) fn new(
        argv: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        cwd: PathBuf,
    ) -> Result<Self, String> {
        let nul = |what: &str| format!("the {what} contains a NUL byte");
        let program = argv
            .first()
            .ok_or_else(|| "the argv is empty".to_owned())?
            .clone();
        let program_display = program.to_string_lossy().into_owned();
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
        let (candidates, no_candidate) = if program_bytes.contains(&b'/') {
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
        let cwd_display = cwd.display().to_string();
        let cwd = CString::new(cwd.into_os_string().into_encoded_bytes())
            .map_err(|_| nul("working directory"))?;
        Ok(CommandPlan {
            argv,
            env: env_strings,
            cwd,
            cwd_display,
            candidates,
            no_candidate,
            program_display,
        })
    }
}

/// How the command process must be set up before `exec`.
pub(crate) struct ExecSetup<'a> {
    /// The run's private network, to enter.
    pub(crate) private_net: Option<BorrowedFd<'a>>,
    /// Without namespaces: the init's pid. The command then starts its own session (and so
    /// its own process group) and dies with the init.
    pub(crate) fallback_parent: Option<Pid>,
}

/// Points stdin, stdout and stderr at `/dev/null`, so a forked helper holds none of the
/// init's control pipes.
pub(crate) fn detach_stdio() {
    if let Ok(null) = open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty()) {
        let _ = dup2_stdin(&null);
        let _ = dup2_stdout(&null);
        let _ = dup2_stderr(&null);
    }
}

/// Writes all of `data`, retrying on `EINTR`.
pub(crate) fn write_all_fd(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match nix::unistd::write(fd, data) {
            Ok(0) => return Err(Errno::EPIPE),
            Ok(n) => data = &data[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads until end of file (or `limit` bytes), blocking.
pub(crate) fn read_to_end_blocking(fd: BorrowedFd<'_>, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < limit {
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    out
}

/// Reports on the control pipe that the command could not start, and exits.
fn fail(ctl: BorrowedFd<'_>, code: i32, why: &str) -> ! {
    let line = format!("error {code} {}\n", why.replace('\n', " "));
    let _ = write_all_fd(ctl, line.as_bytes());
    sys::exit_now(code)
}

/// The job leader (namespaces only). Runs in the init's child; never returns.
pub(crate) fn job_leader(
    token: &SingleThreaded,
    plan: &CommandPlan,
    out: OwnedFd,
    ctl: OwnedFd,
    init: Pid,
    private_net: Option<BorrowedFd<'_>>,
) -> ! {
    detach_stdio();
    if set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != init {
        sys::exit_now(1);
    }
    if let Err(e) = unshare(CloneFlags::CLONE_NEWPID) {
        fail(
            ctl.as_fd(),
            CANNOT_RUN,
            &format!("create the job's PID namespace: {}", describe(e)),
        );
    }
    let (alive_read, alive_write) = match pipe2(OFlag::O_CLOEXEC) {
        Ok(pair) => pair,
        Err(e) => fail(
            ctl.as_fd(),
            CANNOT_RUN,
            &format!("create a pipe: {}", describe(e)),
        ),
    };
    match sys::fork(token) {
        Err(e) => fail(
            ctl.as_fd(),
            CANNOT_RUN,
            &format!("fork the job's reaper: {}", describe(e)),
        ),
        Ok(ForkResult::Child) => {
            drop(alive_write);
            reaper(token, plan, out, ctl, alive_read, private_net)
        }
        Ok(ForkResult::Parent { child: reaper }) => {
            drop(alive_read);
            drop(out);
            drop(ctl);
            // `alive_write` stays open for as long as the leader lives.
            let mut signals = SigSet::empty();
            for signal in [
                Signal::SIGCHLD,
                Signal::SIGTERM,
                Signal::SIGINT,
                Signal::SIGHUP,
            ] {
                signals.add(signal);
            }
            let _ = signals.thread_block();
            loop {
                match signals.wait() {
                    Ok(Signal::SIGCHLD) => match waitpid(reaper, Some(WaitPidFlag::WNOHANG)) {
                        Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..))
                        | Err(Errno::ECHILD) => {
                            drop(alive_write);
                            sys::exit_now(0);
                        }
                        _ => {}
                    },
                    Ok(_) => {
                        // The reaper is our child and not yet reaped: its PID is still its own.
                        let _ = kill(reaper, Signal::SIGKILL);
                    }
                    Err(_) => {}
                }
            }
        }
    }
}

/// PID 1 of the job's namespace. Never returns.
fn reaper(
    token: &SingleThreaded,
    plan: &CommandPlan,
    out: OwnedFd,
    ctl: OwnedFd,
    alive: OwnedFd,
    private_net: Option<BorrowedFd<'_>>,
) -> ! {
    if set_pdeathsig(Signal::SIGKILL).is_err() {
        sys::exit_now(1);
    }
    // If the leader died before the line above, nobody would kill us: check it is alive
    // (its end of the `alive` pipe is still open).
    let mut fds = [PollFd::new(alive.as_fd(), PollFlags::POLLIN)];
    if poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0) {
        sys::exit_now(1);
    }
    drop(alive);
    let mut signals = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        signals.add(signal);
    }
    let _ = signals.thread_block();
    let command = match sys::fork(token) {
        Err(e) => fail(
            ctl.as_fd(),
            CANNOT_RUN,
            &format!("fork the command: {}", describe(e)),
        ),
        Ok(ForkResult::Child) => exec_command(
            plan,
            out,
            ctl.as_fd(),
            ExecSetup {
                private_net,
                fallback_parent: None,
            },
        ),
        Ok(ForkResult::Parent { child }) => child,
    };
    drop(out);
    let status = loop {
        match signals.wait() {
            Ok(Signal::SIGCHLD) => {
                let mut done = None;
                loop {
                    match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                        Ok(WaitStatus::Exited(pid, code)) if pid == command => {
                            done = Some((format!("exit {code}\n"), code));
                        }
                        Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                            let number = signal as i32;
                            done = Some((format!("signal {number}\n"), 128 + number));
                        }
                        Ok(WaitStatus::StillAlive) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                if let Some(status) = done {
                    break status;
                }
            }
            Ok(signal) => {
                let _ = kill(command, signal);
            }
            Err(_) => {}
        }
    };
    let (line, code) = status;
    let _ = write_all_fd(ctl.as_fd(), line.as_bytes());
    // Exiting as PID 1 makes the kernel kill whatever is left in the namespace. The exit code
    // mirrors the command's (128 + signal for a signal, as a shell does); the exact status
    // went through the control pipe.
    sys::exit_now(code)
}

/// Sets the command process up and executes the command. Never returns.
pub(crate) fn exec_command(
    plan: &CommandPlan,
    out: OwnedFd,
    ctl: BorrowedFd<'_>,
    setup: ExecSetup<'_>,
) -> ! {
    let _ = SigSet::empty().thread_set_mask();
    sys::reset_signal_dispositions();
    if let Some(init) = setup.fallback_parent {
        if let Err(e) = setsid() {
            fail(
                ctl,
                CANNOT_RUN,
                &format!("start a new session: {}", describe(e)),
            );
        }
        if set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != init {
            sys::exit_now(1);
        }
    }
    if let Some(net) = setup.private_net
        && let Err(e) = setns(net, CloneFlags::CLONE_NEWNET)
    {
        fail(
            ctl,
            CANNOT_RUN,
            &format!("enter the run's private network: {}", describe(e)),
        );
    }
    if let Err(e) = chdir(plan.cwd.as_c_str()) {
        fail(
            ctl,
            if e == Errno::ENOENT {
                NOT_FOUND
            } else {
                CANNOT_RUN
            },
            &format!(
                "change to the working directory `{}`: {}",
                plan.cwd_display,
                describe(e)
            ),
        );
    }
    match open(
        "/dev/null",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(null) => {
            if let Err(e) = dup2_stdin(&null) {
                fail(ctl, CANNOT_RUN, &format!("redirect stdin: {}", describe(e)));
            }
        }
        Err(e) => fail(
            ctl,
            CANNOT_RUN,
            &format!("open `/dev/null`: {}", describe(e)),
        ),
    }
    if let Err(e) = dup2_stdout(&out).and_then(|()| dup2_stderr(&out)) {
        fail(
            ctl,
            CANNOT_RUN,
            &format!("redirect stdout and stderr: {}", describe(e)),
        );
    }
    drop(out);
    if let Some(why) = &plan.no_candidate {
        fail(ctl, NOT_FOUND, why);
    }
    let mut denied = None;
    let mut other = None;
    for candidate in &plan.candidates {
        let Err(e) = execve(candidate.as_c_str(), &plan.argv, &plan.env);
        match e {
            Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP | Errno::ENAMETOOLONG => {}
            Errno::EACCES => denied = Some((candidate, e)),
            _ => {
                other = Some((candidate, e));
                break;
            }
        }
    }
    let path_note = if plan.candidates.len() > 1 || plan.candidates.first() != plan.argv.first() {
        " in the job's PATH"
    } else {
        ""
    };
    match other.or(denied) {
        Some((candidate, e)) => fail(
            ctl,
            CANNOT_RUN,
            &format!(
                "execute `{}`: {}",
                String::from_utf8_lossy(candidate.as_bytes()),
                describe(e)
            ),
        ),
        None => fail(
            ctl,
            NOT_FOUND,
            &format!(
                "execute `{}`: not found{path_note} (no such file, or its interpreter is missing)",
                plan.program_display
            ),
        ),
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
