//! The init process of a run: a single-threaded `poll(2)` loop.
//!
//! It reads control requests on stdin, writes replies on stdout, reads every job's output
//! pipe (redacting it into the job's log), learns of child exits through a `signalfd`
//! (`SIGCHLD`) and a `waitid(WNOWAIT)` sweep on every wake-up, and enforces timeouts by
//! computing the nearest deadline before each `poll` (runs have few jobs; a scan is enough).
//!
//! It dies with its parent (`PR_SET_PDEATHSIG`), and when its stdin closes, when it is asked
//! to shut down, or on `SIGTERM`/`SIGINT`/`SIGHUP`, it kills every job, waits for them, and
//! exits. It never starts a thread: forking relies on that (see `sys.rs`).

#![expect(
    clippy::disallowed_types,
    reason = "logs are opened with openat relative to the host's /tmp and wrapped in std File; their errors already name the path"
)]

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl, open};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{SigSet, Signal, kill, killpg};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use nix::sys::stat::Mode;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::{ForkResult, Pid, getpid, getppid, pipe2};

use crate::child::{self, CommandPlan, ExecSetup, ProbePlan, SpawnFailure};
use crate::exec_record::{Digests, ExecFilter, Recorder};
use crate::isolation::{self, Namespaces};
use crate::probe::{Expectations, parse_url};
use crate::protocol::{
    ProbeOutcome, ProbeRequest, Reply, Request, SpawnRequest, WireBytes, WireIsolation,
    WireIsolationRequest, WireNetwork, WireRecorded, encode_line, nanos,
};
use crate::redact::{Redactor, redact_text};
use crate::sys::{self, SingleThreaded, describe};
use crate::world::WorldPlan;

/// Stack size for a command's process between `clone` and `exec` (its parent is suspended
/// meanwhile and the init waits for it, so one stack serves every job).
const EXEC_STACK: usize = 256 * 1024;
/// How long a probe process may overrun its own timeout before it is killed.
const PROBE_GRACE: Duration = Duration::from_secs(3);
/// The longest control request accepted.
const MAX_REQUEST: usize = 16 * 1024 * 1024;
/// The most output drained from a job after it ended (without namespaces, an escaped
/// process could keep writing forever).
const MAX_FINAL_DRAIN: usize = 64 * 1024 * 1024;

/// The entry point of the init process of a run. Never returns.
///
/// Call it from `main` when the first argument is [`crate::INIT_ARG`], before starting any
/// thread or async runtime: it checks that the process is single-threaded and refuses to
/// run otherwise. Its stdin and stdout must be the pipes of [`crate::Run::start`].
pub fn init_main() -> ! {
    let code = match run() {
        Ok(()) => 0,
        Err(reason) => {
            write_reply(&Reply::Fatal { reason });
            1
        }
    };
    std::process::exit(code)
}

/// Writes a reply line on stdout; false when the parent is gone.
fn write_reply(reply: &Reply) -> bool {
    let line = encode_line(reply);
    let mut out = std::io::stdout().lock();
    out.write_all(&line).and_then(|()| out.flush()).is_ok()
}

fn run() -> Result<(), String> {
    set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| format!("set the parent-death signal: {}", describe(e)))?;
    let token = SingleThreaded::check()?;
    // Descriptors the init inherited beyond stdio must not reach the commands.
    let _ = sys::mark_inherited_fds_cloexec();
    // Neither must signals it inherited ignored (commands restore `SIGPIPE` themselves).
    sys::reset_signal_dispositions();
    let mut mask = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        mask.add(signal);
    }
    mask.thread_block()
        .map_err(|e| format!("block signals: {}", describe(e)))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("create a signalfd: {}", describe(e)))?;
    let mut control = Control::new()?;
    let Some(line) = control.read_line_blocking()? else {
        // The parent went away before saying hello.
        return Ok(());
    };
    let paths = |all: Vec<WireBytes>| -> Vec<PathBuf> {
        all.into_iter().map(WireBytes::into_path).collect()
    };
    let (requested, parent_pid, job_limit, hidden, record_executions) =
        match serde_json::from_slice::<Request>(&line) {
            Ok(Request::Hello {
                isolation,
                parent_pid,
                job_limit,
                hidden,
                record_executions,
            }) => (
                isolation,
                parent_pid,
                job_limit,
                paths(hidden),
                record_executions,
            ),
            Ok(_) => return Err("the first request was not a hello".to_owned()),
            Err(e) => return Err(format!("malformed hello: {e}")),
        };
    if getppid().as_raw() != parent_pid {
        // The parent that said hello is gone (or this is not its child): nobody to serve.
        return Err(format!(
            "the init's parent is {} but the hello came from {parent_pid}",
            getppid()
        ));
    }
    let (mode, isolation) = match requested {
        WireIsolationRequest::Disabled => (
            None,
            WireIsolation::None {
                reason: "isolation was disabled by the caller".to_owned(),
            },
        ),
        WireIsolationRequest::Auto => match isolation::trial(&token) {
            Err(reason) => (
                None,
                WireIsolation::None {
                    reason: format!("namespaces are unavailable: {reason}"),
                },
            ),
            Ok(()) => match isolation::setup(&token) {
                Ok(ns) => {
                    let user_namespace = ns.user_namespace;
                    (Some(ns), WireIsolation::Namespaces { user_namespace })
                }
                Err(reason) => {
                    write_reply(&Reply::HelloFailed {
                        isolation_unavailable: false,
                        reason: format!("set up namespaces (a trial had succeeded): {reason}"),
                    });
                    return Ok(());
                }
            },
        },
        WireIsolationRequest::Required => match isolation::setup(&token) {
            Ok(ns) => {
                let user_namespace = ns.user_namespace;
                (Some(ns), WireIsolation::Namespaces { user_namespace })
            }
            Err(reason) => {
                write_reply(&Reply::HelloFailed {
                    isolation_unavailable: true,
                    reason,
                });
                return Ok(());
            }
        },
    };
    // The directory each job's root is built on, in its own mount namespace.
    let staging = match &mode {
        Some(_) => match isolation::staging_dir() {
            Ok(dir) => Some(dir),
            Err(reason) => {
                write_reply(&Reply::HelloFailed {
                    isolation_unavailable: false,
                    reason,
                });
                return Ok(());
            }
        },
        None => None,
    };
    if !write_reply(&Reply::Hello { isolation }) {
        return Ok(());
    }
    let exec_stack = sys::Stack::new(EXEC_STACK)
        .map_err(|e| format!("map the stack for starting commands: {}", describe(e)))?;
    let mut init = Init {
        token,
        pid: getpid(),
        exec_stack,
        found: std::collections::HashMap::new(),
        job_limit: job_limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX).max(1)),
        waiting: std::collections::VecDeque::new(),
        limited_running: 0,
        held: false,
        namespaces: mode,
        hidden,
        staging,
        signals,
        control,
        jobs: BTreeMap::new(),
        used_ids: HashSet::new(),
        digests: Digests::default(),
        record_executions,
        stopping: false,
        bye: false,
    };
    let result = init.serve();
    if result.is_err() {
        init.abort_all();
    }
    if let Some(dir) = &init.staging {
        let _ = fs_err::remove_dir(dir);
    }
    result
}

/// The control pipe (stdin), read in pieces and split into lines.
struct Control {
    /// A close-on-exec duplicate of stdin. Reads go through `read(2)` directly (never
    /// through `std::io::Stdin`'s buffer), so no data is ever buffered where `poll` cannot
    /// see it.
    fd: OwnedFd,
    buf: Vec<u8>,
    closed: bool,
}

impl Control {
    fn new() -> Result<Self, String> {
        let fd = nix::unistd::dup(std::io::stdin())
            .and_then(|fd| {
                fcntl(&fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
                Ok(fd)
            })
            .map_err(|e| format!("duplicate stdin: {}", describe(e)))?;
        Ok(Control {
            fd,
            buf: Vec::new(),
            closed: false,
        })
    }

    /// One `read(2)`.
    fn read_some(&mut self) -> Result<(), String> {
        let read = with_chunk(|chunk| {
            let read = nix::unistd::read(&self.fd, chunk);
            if let Ok(n) = read {
                self.buf.extend_from_slice(&chunk[..n]);
            }
            read
        });
        match read {
            Ok(0) => self.closed = true,
            Ok(_) => {}
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(e) => return Err(format!("read the control pipe: {}", describe(e))),
        }
        if self.buf.len() > MAX_REQUEST {
            return Err(format!("a request is longer than {MAX_REQUEST} bytes"));
        }
        Ok(())
    }

    fn next_line(&mut self) -> Option<Vec<u8>> {
        let end = self.buf.iter().position(|b| *b == b'\n')?;
        let mut line: Vec<u8> = self.buf.drain(..=end).collect();
        line.pop();
        Some(line)
    }

    fn read_line_blocking(&mut self) -> Result<Option<Vec<u8>>, String> {
        loop {
            if let Some(line) = self.next_line() {
                return Ok(Some(line));
            }
            if self.closed {
                return Ok(None);
            }
            self.read_some()?;
        }
    }
}

/// A running job or probe.
struct Job {
    /// The init's child: the command (PID 1 of its own namespace, or without namespaces
    /// the leader of its own session) or the probe.
    pid: Pid,
    /// Whether it holds one of the limited slots.
    limited: bool,
    /// When it ends, the jobs waiting for a slot wait for the parent's resume.
    hold_after: bool,
    started: Instant,
    deadline: Option<Instant>,
    timed_out: bool,
    killed: bool,
    kill_sent: bool,
    secrets: Vec<Vec<u8>>,
    kind: Kind,
    /// What the job executes, recorded (with a world, where the kernel allowed the filter).
    recorder: Option<Recorder>,
    /// The listener hung up (every process of the job is gone): not polled any more.
    recorder_closed: bool,
}

enum Kind {
    Command {
        out: Option<OwnedFd>,
        /// Why the command could not start (the code it exited with, and the reason).
        spawn_failure: Option<(i32, String)>,
        log: File,
        log_path: PathBuf,
        redactor: Box<Redactor>,
        log_error: Option<String>,
    },
    Probe {
        result: Option<OwnedFd>,
        result_buf: Vec<u8>,
    },
}

/// Something `poll` said is ready.
#[derive(Debug, Clone, Copy)]
enum Source {
    Control,
    Signals,
    Out(u64),
    Result(u64),
    /// An exec notification of a job, or (`false`) its listener hung up.
    Exec(u64, bool),
}

struct Init {
    token: SingleThreaded,
    pid: Pid,
    /// Where a command's process runs between `clone` and `exec`.
    exec_stack: sys::Stack,
    /// How many limited jobs may run at once (`None`: no limit).
    job_limit: Option<usize>,
    /// Limited jobs waiting for a slot, in the order they came.
    waiting: std::collections::VecDeque<SpawnRequest>,
    /// Limited jobs running now.
    limited_running: usize,
    /// A limited job ended without exiting 0, or one spawned `hold_after` ended: waiting
    /// limited jobs stay until the parent resumes (or cancels) them.
    held: bool,
    /// Where a `PATH` search found a program (by `PATH` value and name: the candidate's
    /// index), so that later jobs try it first instead of every `PATH` entry before it.
    found: std::collections::HashMap<Vec<u8>, usize>,
    /// `None` without isolation.
    namespaces: Option<Namespaces>,
    /// Paths covered wherever a job's world would show them (see `RunConfig::hidden`).
    hidden: Vec<PathBuf>,
    /// The empty directory jobs build their roots on (with namespaces).
    staging: Option<PathBuf>,
    signals: SignalFd,
    control: Control,
    jobs: BTreeMap<u64, Job>,
    used_ids: HashSet<u64>,
    /// The digests of executed files, for every job of the run.
    digests: Digests,
    /// Whether jobs' executions are recorded (`RunConfig::record_executions`).
    record_executions: bool,
    /// Every job is being killed; the init exits when none is left.
    stopping: bool,
    /// A shutdown was requested: say `bye` before exiting.
    bye: bool,
}

impl Init {
    fn serve(&mut self) -> Result<(), String> {
        loop {
            if self.stopping && self.jobs.is_empty() {
                if self.bye {
                    write_reply(&Reply::Bye);
                }
                return Ok(());
            }
            self.enforce_deadlines();
            let timeout = self.next_wakeup();
            for source in self.wait(timeout)? {
                self.handle(source)?;
            }
            // Cheap, and immune to coalesced or missed SIGCHLDs.
            self.reap();
        }
    }

    fn reply(&mut self, reply: &Reply) {
        if !write_reply(reply) {
            // The parent is gone: nobody will read events; stop everything.
            self.begin_stop();
        }
    }

    /// Polls every open descriptor; returns the ready ones.
    fn wait(&self, timeout: PollTimeout) -> Result<Vec<Source>, String> {
        let mut fds = Vec::new();
        let mut sources = Vec::new();
        if !self.control.closed {
            fds.push(PollFd::new(self.control.fd.as_fd(), PollFlags::POLLIN));
            sources.push(Source::Control);
        }
        fds.push(PollFd::new(self.signals.as_fd(), PollFlags::POLLIN));
        sources.push(Source::Signals);
        for (id, job) in &self.jobs {
            match &job.kind {
                Kind::Command { out, .. } => {
                    if let Some(fd) = out {
                        fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
                        sources.push(Source::Out(*id));
                    }
                }
                Kind::Probe { result, .. } => {
                    if let Some(fd) = result {
                        fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
                        sources.push(Source::Result(*id));
                    }
                }
            }
            if let Some(recorder) = &job.recorder
                && !job.recorder_closed
            {
                fds.push(PollFd::new(recorder.listener(), PollFlags::POLLIN));
                sources.push(Source::Exec(*id, true));
            }
        }
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(format!("poll: {}", describe(e))),
        }
        Ok(fds
            .iter()
            .zip(sources)
            .filter_map(|(fd, source)| {
                let revents = fd.revents().filter(|r| !r.is_empty())?;
                Some(match source {
                    // A listener with no notification but a hang-up: the job is gone.
                    Source::Exec(id, _) if !revents.contains(PollFlags::POLLIN) => {
                        Source::Exec(id, false)
                    }
                    other => other,
                })
            })
            .collect())
    }

    fn handle(&mut self, source: Source) -> Result<(), String> {
        match source {
            Source::Control => {
                self.control.read_some()?;
                while let Some(line) = self.control.next_line() {
                    let request = serde_json::from_slice::<Request>(&line)
                        .map_err(|e| format!("malformed request: {e}"))?;
                    self.request(request)?;
                }
                if self.control.closed {
                    self.begin_stop();
                }
            }
            Source::Signals => {
                while let Ok(Some(info)) = self.signals.read_signal() {
                    let signo = i32::try_from(info.ssi_signo).unwrap_or(0);
                    if [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP]
                        .iter()
                        .any(|s| *s as i32 == signo)
                    {
                        self.begin_stop();
                    }
                }
            }
            Source::Out(id) => {
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.read_output(false);
                }
            }
            Source::Result(id) => {
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.read_status(false);
                }
            }
            Source::Exec(id, notified) => {
                if let Some(job) = self.jobs.get_mut(&id) {
                    match (&mut job.recorder, notified) {
                        (Some(recorder), true) => recorder.on_notification(&mut self.digests),
                        _ => job.recorder_closed = true,
                    }
                }
            }
        }
        Ok(())
    }

    fn request(&mut self, request: Request) -> Result<(), String> {
        match request {
            Request::Hello { .. } => return Err("a second hello".to_owned()),
            Request::Spawn(spawn) => self.admit(spawn),
            Request::Cancel { job } => self.cancel(job),
            Request::Resume => {
                self.held = false;
                self.start_waiting();
            }
            Request::Probe(probe) => self.probe(probe),
            Request::Kill { job } => {
                if let Some(entry) = self.jobs.get_mut(&job) {
                    entry.killed = true;
                    self.kill_job(job);
                } else {
                    // Killing a job that waits for a slot drops it.
                    self.cancel(job);
                }
            }
            Request::Shutdown => {
                self.bye = true;
                self.begin_stop();
            }
        }
        Ok(())
    }

    /// Starts a job, or queues it while every limited slot is taken.
    fn admit(&mut self, request: SpawnRequest) {
        let id = request.job;
        if !self.used_ids.insert(id) {
            let why = format!("job id {id} was already used in this run");
            return self.refuse(&request, why);
        }
        if self.stopping {
            return self.refuse(&request, "the run is shutting down".to_owned());
        }
        if request.limited {
            self.waiting.push_back(request);
            self.start_waiting();
        } else {
            // A service or setup command starts at once, whatever waits for a slot.
            self.spawn(request);
        }
    }

    /// Starts waiting jobs, in order, while a slot is free and nothing holds them.
    fn start_waiting(&mut self) {
        while !self.held
            && self
                .job_limit
                .is_none_or(|limit| self.limited_running < limit)
        {
            let Some(request) = self.waiting.pop_front() else {
                return;
            };
            self.spawn(request);
        }
    }

    /// Drops a job still waiting for a slot.
    fn cancel(&mut self, id: u64) {
        if let Some(at) = self.waiting.iter().position(|r| r.job == id)
            && let Some(request) = self.waiting.remove(at)
        {
            self.never_started(&request);
        }
    }

    /// Says that a waiting job was dropped before it started.
    fn never_started(&mut self, request: &SpawnRequest) {
        self.reply(&Reply::Exited {
            job: request.job,
            code: None,
            signal: None,
            timed_out: false,
            killed: true,
            duration_ns: 0,
            spawn_error: None,
            log_error: None,
            started: false,
            executed: None,
        });
    }

    /// Refuses a job before it started anything.
    fn refuse(&mut self, request: &SpawnRequest, why: String) {
        let secrets: Vec<Vec<u8>> = request
            .redact
            .iter()
            .cloned()
            .map(WireBytes::into_bytes)
            .collect();
        self.reply(&refusal(request.job, &secrets, &why));
    }

    /// Kills every job; the loop ends when they are all gone.
    fn begin_stop(&mut self) {
        self.stopping = true;
        for request in std::mem::take(&mut self.waiting) {
            self.never_started(&request);
        }
        let ids: Vec<u64> = self.jobs.keys().copied().collect();
        for id in ids {
            if let Some(job) = self.jobs.get_mut(&id) {
                job.killed = true;
            }
            self.kill_job(id);
        }
    }

    /// On a fatal error: kill everything at once, without waiting.
    fn abort_all(&mut self) {
        for job in self.jobs.values() {
            let _ = kill(job.pid, Signal::SIGKILL);
            if self.namespaces.is_none() {
                let _ = killpg(job.pid, Signal::SIGKILL);
            }
        }
    }

    fn kill_job(&mut self, id: u64) {
        let isolated = self.namespaces.is_some();
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.kill_sent {
            return;
        }
        job.kill_sent = true;
        // Every PID here is the init's unreaped child, so it cannot have been reused.
        match (&job.kind, isolated) {
            (Kind::Probe { .. }, _) => {
                let _ = kill(job.pid, Signal::SIGKILL);
            }
            (Kind::Command { .. }, true) => {
                // The command, PID 1 of the job's namespace: the kernel kills the rest.
                let _ = kill(job.pid, Signal::SIGKILL);
            }
            (Kind::Command { .. }, false) => {
                // Its process group (which exists once it called setsid) and itself (in case
                // it had not yet).
                let _ = killpg(job.pid, Signal::SIGKILL);
                let _ = kill(job.pid, Signal::SIGKILL);
            }
        }
    }

    fn enforce_deadlines(&mut self) {
        let now = Instant::now();
        let mut expired = Vec::new();
        for (id, job) in &mut self.jobs {
            if job.deadline.is_some_and(|d| now >= d) && !job.kill_sent {
                job.timed_out = true;
                expired.push(*id);
            }
        }
        for id in expired {
            self.kill_job(id);
        }
    }

    fn next_wakeup(&self) -> PollTimeout {
        let now = Instant::now();
        let next = self
            .jobs
            .values()
            .filter_map(|job| job.deadline.filter(|_| !job.kill_sent))
            .min();
        match next {
            None => PollTimeout::NONE,
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                // Round up, so that the loop does not spin before a deadline.
                let millis = wait.as_micros().div_ceil(1000);
                PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX)
            }
        }
    }

    /// Collects every exited child.
    fn reap(&mut self) {
        loop {
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            let pid = match waitid(Id::All, flags) {
                Ok(status) => match status.pid() {
                    Some(pid) => pid,
                    None => return,
                },
                Err(Errno::EINTR) => continue,
                Err(_) => return,
            };
            let id = self
                .jobs
                .iter()
                .find(|(_, job)| job.pid == pid)
                .map(|(id, _)| *id);
            if let Some(job) = id.and_then(|id| self.jobs.get(&id))
                && self.namespaces.is_none()
                && matches!(job.kind, Kind::Command { .. })
            {
                // Without namespaces, a job's process group dies with its main process.
                // The main process is not reaped yet, so the group id is still its own.
                let _ = killpg(pid, Signal::SIGKILL);
            }
            let status = loop {
                match waitpid(pid, None) {
                    Err(Errno::EINTR) => {}
                    other => break other,
                }
            };
            let reaped = status.is_ok();
            if let Some(id) = id {
                self.finish(id, status.ok());
            }
            if !reaped {
                // Cannot happen for a zombie child; never spin on it.
                return;
            }
        }
    }

    fn finish(&mut self, id: u64, status: Option<WaitStatus>) {
        let Some(mut job) = self.jobs.remove(&id) else {
            return;
        };
        let duration = job.started.elapsed();
        job.read_output(true);
        job.read_status(true);
        let executed = job.recorder.take().map(|recorder| {
            let (files, gaps) = recorder.into_parts();
            WireRecorded {
                files: files
                    .into_iter()
                    .map(|e| (WireBytes::from_os(e.path.as_os_str()), e.digest))
                    .collect(),
                gaps: gaps.iter().map(|g| redact_text(&job.secrets, g)).collect(),
            }
        });
        let reply = match job.kind {
            Kind::Command {
                spawn_failure,
                log_error,
                ..
            } => {
                let (code, signal) = match status {
                    Some(WaitStatus::Exited(_, code)) => (Some(code), None),
                    Some(WaitStatus::Signaled(_, signal, _)) => (None, Some(signal as i32)),
                    _ => (None, None),
                };
                Reply::Exited {
                    job: id,
                    code,
                    signal,
                    timed_out: job.timed_out,
                    killed: job.killed && !job.timed_out,
                    duration_ns: nanos(duration),
                    spawn_error: spawn_failure.map(|(_, why)| redact_text(&job.secrets, &why)),
                    log_error,
                    started: true,
                    executed,
                }
            }
            Kind::Probe { result_buf, .. } => {
                let text = String::from_utf8_lossy(&result_buf);
                match serde_json::from_str::<ProbeOutcome>(text.trim()) {
                    Ok(outcome) if outcome.ready => Reply::Ready {
                        job: id,
                        attempts: outcome.attempts,
                        duration_ns: outcome.duration_ns,
                    },
                    Ok(outcome) => Reply::NotReady {
                        job: id,
                        attempts: outcome.attempts,
                        reason: outcome.reason,
                    },
                    Err(_) => Reply::NotReady {
                        job: id,
                        attempts: 0,
                        reason: if job.timed_out {
                            "the probe process overran its timeout and was killed".to_owned()
                        } else if job.killed {
                            "the probe was stopped before it finished".to_owned()
                        } else {
                            format!("the probe process ended without a result ({status:?})")
                        },
                    },
                }
            }
        };
        if job.limited {
            self.limited_running -= 1;
            // The next waiting job starts now, without a round trip to the parent, unless
            // this one failed or asked to hold them: then the parent first judges it (and
            // reads what it left behind) and decides whether the run goes on.
            let exited_0 = matches!(
                reply,
                Reply::Exited {
                    code: Some(0),
                    timed_out: false,
                    spawn_error: None,
                    ..
                }
            );
            self.held |= job.hold_after || !exited_0;
            self.start_waiting();
        }
        self.reply(&reply);
    }

    fn spawn(&mut self, request: SpawnRequest) {
        let id = request.job;
        let secrets: Vec<Vec<u8>> = request
            .redact
            .into_iter()
            .map(WireBytes::into_bytes)
            .collect();
        let limited = request.limited;
        let hold_after = request.hold_after;
        let refuse = |this: &mut Self, why: String| {
            // A limited job that could not start holds the waiting ones as a failure does.
            this.held |= limited;
            this.reply(&refusal(id, &secrets, &why));
        };
        let log_path = request.log.into_path();
        let log = match self.open_log(&log_path) {
            Ok(log) => log,
            Err(why) => return refuse(self, why),
        };
        let cwd = request.cwd.into_path();
        let argv: Vec<OsString> = request.argv.into_iter().map(WireBytes::into_os).collect();
        let program: Option<PathBuf> = request.program.map(WireBytes::into_path);
        let env: Vec<(OsString, OsString)> = request
            .env
            .into_iter()
            .map(|(k, v)| (k.into_os(), v.into_os()))
            .collect();
        // Its world, planned before its process exists (which may not allocate).
        let world = match (&self.namespaces, &self.staging) {
            (Some(ns), Some(staging)) => {
                match WorldPlan::new(
                    &request.world.into_world(),
                    &self.hidden,
                    staging,
                    ns.user_namespace,
                ) {
                    Ok(plan) => Some(plan),
                    Err(why) => return refuse(self, format!("plan the job's world: {why}")),
                }
            }
            _ => None,
        };
        let mut plan = match CommandPlan::new(argv, program, env, cwd.clone()) {
            Ok(plan) => plan,
            Err(why) => return refuse(self, why),
        };
        if let Some(key) = plan.search_key() {
            let found = match self.found.get(key) {
                Some(index) => Some(*index),
                None => {
                    let found = plan.find_executable();
                    if let Some(index) = found {
                        self.found.insert(key.to_vec(), index);
                    }
                    found
                }
            };
            if let Some(index) = found {
                plan.try_first(index);
            }
        }
        let (out_read, out_write) = match pipe2(OFlag::O_CLOEXEC) {
            Ok(pipe) => pipe,
            Err(e) => return refuse(self, format!("create a pipe: {}", describe(e))),
        };
        if let Err(e) = set_nonblocking(&out_read) {
            return refuse(self, format!("configure a pipe: {}", describe(e)));
        }
        // With a world, what the job executes is recorded: its process hands the init a
        // seccomp listener over this socket before it execs.
        let (argv_at, env_at) = plan.exec_arrays();
        let filter = world
            .as_ref()
            .filter(|_| self.record_executions)
            .and_then(|_| ExecFilter::new(argv_at, env_at));
        let record_socket = match &filter {
            Some(_) => match socketpair(
                AddressFamily::Unix,
                SockType::SeqPacket,
                None,
                SockFlag::SOCK_CLOEXEC,
            ) {
                Ok(pair) => Some(pair),
                Err(e) => return refuse(self, format!("create a socket: {}", describe(e))),
            },
            None => None,
        };
        let setup = ExecSetup {
            private_net: match &self.namespaces {
                Some(ns) if request.network == WireNetwork::Private => Some(ns.private_net.as_fd()),
                _ => None,
            },
            fallback_parent: self.namespaces.is_none().then_some(self.pid),
            world: world.as_ref(),
            record: filter
                .as_ref()
                .zip(record_socket.as_ref())
                .map(|(f, (_, child_end))| (f, child_end.as_fd())),
        };
        let mut failure = SpawnFailure::new();
        let started = Instant::now();
        let spawned = sys::spawn_vfork(
            &self.token,
            &self.exec_stack,
            self.namespaces.is_some(),
            &mut || child::exec_command(&plan, out_write.as_fd(), &mut failure, &setup),
        );
        drop(out_write);
        // The job has exec'd (or failed to start): its listener, if its process made one,
        // is waiting in the socket.
        let recorder = record_socket.and_then(|(init_end, child_end)| {
            drop(child_end);
            sys::recv_fd(init_end.as_fd()).map(Recorder::new)
        });
        let child = match spawned {
            Ok(child) => child,
            Err(e) => return refuse(self, format!("start the job: {}", describe(e))),
        };
        let deadline = request
            .timeout_ns
            .map(|ns| started + Duration::from_nanos(ns));
        if limited {
            self.limited_running += 1;
        }
        self.jobs.insert(
            id,
            Job {
                pid: child,
                limited,
                hold_after,
                started,
                deadline,
                timed_out: false,
                killed: false,
                kill_sent: false,
                kind: Kind::Command {
                    out: Some(out_read),
                    spawn_failure: failure.reported(),
                    log,
                    log_path,
                    redactor: Box::new(Redactor::new(&secrets)),
                    log_error: None,
                },
                secrets,
                recorder_closed: recorder.is_none(),
                recorder,
            },
        );
    }

    fn probe(&mut self, request: ProbeRequest) {
        let id = request.job;
        let secrets: Vec<Vec<u8>> = request
            .redact
            .into_iter()
            .map(WireBytes::into_bytes)
            .collect();
        let refuse = |this: &mut Self, why: String| {
            this.reply(&Reply::NotReady {
                job: id,
                attempts: 0,
                reason: redact_text(&secrets, &why),
            });
        };
        if !self.used_ids.insert(id) {
            return refuse(self, format!("job id {id} was already used in this run"));
        }
        if self.stopping {
            return refuse(self, "the run is shutting down".to_owned());
        }
        let target = match parse_url(&request.url) {
            Ok(target) => target,
            Err(why) => return refuse(self, format!("probe `{}`: {why}", request.url)),
        };
        let log_path = request.log.into_path();
        let log = match self.open_log(&log_path) {
            Ok(log) => log,
            Err(why) => return refuse(self, why),
        };
        let timeout = Duration::from_nanos(request.timeout_ns);
        let plan = ProbePlan {
            target,
            expect: Expectations {
                status: request.expect_status,
                headers: request.expect_headers,
                body: request.expect_body,
            },
            timeout,
            secrets: secrets.clone(),
        };
        let (result_read, result_write) = match pipe2(OFlag::O_CLOEXEC) {
            Ok(pair) => pair,
            Err(e) => return refuse(self, format!("create a pipe: {}", describe(e))),
        };
        if let Err(e) = set_nonblocking(&result_read) {
            return refuse(self, format!("configure a pipe: {}", describe(e)));
        }
        let started = Instant::now();
        match sys::fork(&self.token) {
            Err(e) => refuse(self, format!("fork: {}", describe(e))),
            Ok(ForkResult::Child) => {
                drop(result_read);
                let net = self.namespaces.as_ref().map(|ns| ns.private_net.as_fd());
                child::probe_process(&plan, log, result_write, self.pid, net)
            }
            Ok(ForkResult::Parent { child }) => {
                drop(result_write);
                drop(log);
                self.jobs.insert(
                    id,
                    Job {
                        pid: child,
                        limited: false,
                        hold_after: false,
                        started,
                        deadline: Some(started + timeout + PROBE_GRACE),
                        timed_out: false,
                        killed: false,
                        kill_sent: false,
                        secrets,
                        kind: Kind::Probe {
                            result: Some(result_read),
                            result_buf: Vec::new(),
                        },
                        recorder: None,
                        recorder_closed: true,
                    },
                );
            }
        }
    }

    /// Opens (creating or truncating) a log file of the host.
    fn open_log(&self, path: &Path) -> Result<File, String> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
        let mode = Mode::from_bits_truncate(0o644);
        open(path, flags, mode)
            .map(File::from)
            .map_err(|e| format!("open the log `{}`: {}", path.display(), describe(e)))
    }
}

impl Job {
    /// Reads the job's output into its log: one read, or (`all`) until nothing is left.
    fn read_output(&mut self, all: bool) {
        let Kind::Command {
            out,
            log,
            log_path,
            redactor,
            log_error,
            ..
        } = &mut self.kind
        else {
            return;
        };
        let mut redacted = Vec::new();
        if let Some(fd) = out.as_ref() {
            let (data, eof) = read_available(fd.as_fd(), all);
            redactor.push(&data, &mut redacted);
            if eof || all {
                *out = None;
            }
        }
        if all {
            redactor.finish(&mut redacted);
        }
        if !redacted.is_empty()
            && let Err(e) = log.write_all(&redacted)
        {
            log_error.get_or_insert_with(|| format!("write the log `{}`: {e}", log_path.display()));
        }
    }

    /// Reads a probe's result pipe.
    fn read_status(&mut self, all: bool) {
        let Kind::Probe {
            result: fd,
            result_buf: buf,
        } = &mut self.kind
        else {
            return;
        };
        if let Some(pipe) = fd.as_ref() {
            let (data, eof) = read_available(pipe.as_fd(), all);
            buf.extend_from_slice(&data);
            if eof || all {
                *fd = None;
            }
        }
    }
}

/// The reply to a job that could not start: why, with its secrets redacted.
fn refusal(job: u64, secrets: &[Vec<u8>], why: &str) -> Reply {
    Reply::Exited {
        job,
        code: None,
        signal: None,
        timed_out: false,
        killed: false,
        duration_ns: 0,
        spawn_error: Some(redact_text(secrets, why)),
        log_error: None,
        started: true,
        executed: None,
    }
}

/// Reads from a non-blocking pipe: once, or (`all`) until it would block or ends.
/// Returns the data and whether the pipe reached end of file.
fn read_available(fd: BorrowedFd<'_>, all: bool) -> (Vec<u8>, bool) {
    let mut data = Vec::new();
    with_chunk(|chunk| {
        loop {
            match nix::unistd::read(fd, chunk) {
                Ok(0) => return (data, true),
                Ok(n) => {
                    data.extend_from_slice(&chunk[..n]);
                    if !all || data.len() >= MAX_FINAL_DRAIN {
                        return (data, false);
                    }
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return (data, false),
                Err(_) => return (data, true),
            }
        }
    })
}

/// Runs `f` with the init's one read buffer (the init is single-threaded; a fresh 64 KiB
/// buffer zeroed for every read of a pipe cost more than most reads).
fn with_chunk<T>(f: impl FnOnce(&mut [u8]) -> T) -> T {
    thread_local! {
        static CHUNK: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 64 * 1024]);
    }
    CHUNK.with(|chunk| f(&mut chunk.borrow_mut()))
}

fn set_nonblocking(fd: &OwnedFd) -> Result<(), Errno> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).map(drop)
}
