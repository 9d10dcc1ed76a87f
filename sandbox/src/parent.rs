//! The parent-side handle of a run.
//!
//! [`Run::start`] starts the init from a dedicated thread of the caller's process, which then
//! reads the init's replies until the init exits. `PR_SET_PDEATHSIG` fires when the *thread*
//! that forked a process ends, not the process; since this thread lives exactly as long as
//! the init, the init dies when the caller's process dies and never earlier, whatever thread
//! (a short-lived worker included) called `start`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use crate::error::SandboxError;
use crate::probe::parse_url;
use crate::protocol::{
    ProbeRequest, Reply, Request, SpawnRequest, WireBytes, WireIsolation, WireIsolationRequest,
    WireNetwork, WireWorld, encode_line, nanos,
};
use crate::types::{
    Event, Isolation, IsolationRequest, JobId, JobSpec, Network, ProbeSpec, RunConfig,
};

/// How long the init may take to set up its namespaces and say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `shutdown` and `drop` wait for the init to end its jobs before killing it.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of the init's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// The parent-side handle of a proof run. Dropping it without [`Run::shutdown`] also ends
/// the run (closing the control pipe makes the init kill every job), waiting up to a few
/// seconds.
#[derive(Debug)]
pub struct Run {
    control: Mutex<Option<ChildStdin>>,
    events: Receiver<Event>,
    /// Where the reader thread delivers events: `events`' sender, or a forwarder.
    sink: Arc<Mutex<EventSink>>,
    init: Arc<InitProcess>,
    /// Signalled (or dropped) when the reader thread has reaped the init.
    done: Receiver<()>,
    reader: Option<JoinHandle<Result<(), String>>>,
    next_job: AtomicU64,
    isolation: Isolation,
}

/// Where the reader thread delivers events.
enum EventSink {
    /// The run's own channel (read through [`Run::events`]).
    Channel(Sender<Event>),
    /// A function given to [`Run::forward_events`].
    Forward(Box<dyn FnMut(Event) + Send>),
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EventSink::Channel(_) => "EventSink::Channel",
            EventSink::Forward(_) => "EventSink::Forward",
        })
    }
}

/// Delivers one event, in the order the init reported it.
fn deliver(sink: &Mutex<EventSink>, event: Event) {
    match &mut *sink.lock().unwrap_or_else(PoisonError::into_inner) {
        EventSink::Channel(sender) => {
            let _ = sender.send(event);
        }
        EventSink::Forward(forward) => forward(event),
    }
}

/// The init's PID, and whether it may still be signalled.
#[derive(Debug)]
struct InitProcess {
    pid: Pid,
    /// Set (under the lock) once the init has exited, just before it is reaped: while it is
    /// false, the PID is still the init's own.
    exited: Mutex<bool>,
}

impl InitProcess {
    fn kill(&self) {
        let exited = self.exited.lock().unwrap_or_else(PoisonError::into_inner);
        if !*exited {
            let _ = kill(self.pid, Signal::SIGKILL);
        }
    }
}

/// What the reader thread hands back to `start`.
struct Started {
    stdin: ChildStdin,
    pid: Pid,
}

impl Run {
    /// Starts the init, waits for its hello, and returns the run with its actual isolation.
    ///
    /// Fails with [`SandboxError::IsolationUnavailable`] when isolation is
    /// [`IsolationRequest::Required`] and namespaces cannot be created.
    pub fn start(config: &RunConfig) -> Result<(Run, Isolation), SandboxError> {
        let (started_tx, started_rx) = mpsc::channel::<std::io::Result<Started>>();
        let (hello_tx, hello_rx) = mpsc::channel::<Reply>();
        let (event_tx, event_rx) = mpsc::channel::<Event>();
        let sink = Arc::new(Mutex::new(EventSink::Channel(event_tx)));
        let reader_sink = Arc::clone(&sink);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (init_tx, init_rx) = mpsc::channel::<Arc<InitProcess>>();
        let program = config.program.clone();
        let args = config.args.clone();
        let spawn_error = |source| SandboxError::SpawnInit {
            program: config.program.clone(),
            source,
        };
        let reader = std::thread::Builder::new()
            .name("sandbox-init".to_owned())
            .spawn(move || {
                let mut command = Command::new(&program);
                // Its own process group: a Ctrl-C on the caller's terminal goes to the
                // caller, which decides when the run ends (and if the caller dies of it, the
                // init follows through its parent-death signal).
                command
                    .process_group(0)
                    .args(&args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut child = match command.spawn() {
                    Ok(child) => child,
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return Ok(());
                    }
                };
                let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
                let (Some(stdin), Some(stdout), Some(stderr)) =
                    (child.stdin.take(), child.stdout.take(), child.stderr.take())
                else {
                    let _ = child.kill();
                    let _ = child.wait();
                    let _ = started_tx.send(Err(std::io::Error::other("no pipes to the init")));
                    return Ok(());
                };
                let _ = started_tx.send(Ok(Started { stdin, pid }));
                let Ok(init) = init_rx.recv() else {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(());
                };
                let stderr_reader = std::thread::Builder::new()
                    .name("sandbox-init-stderr".to_owned())
                    .spawn(move || stderr_tail(stderr));
                let result = read_replies(stdout, hello_tx, &reader_sink);
                // The init closed its stdout: wait for its exit without reaping it, so that
                // `InitProcess::kill` never signals a reused PID, then reap it.
                while let Err(nix::errno::Errno::EINTR) =
                    waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
                {
                }
                *init.exited.lock().unwrap_or_else(PoisonError::into_inner) = true;
                let status = child.wait();
                let tail = stderr_reader
                    .ok()
                    .and_then(|handle| handle.join().ok())
                    .unwrap_or_default();
                let outcome = match result {
                    ReaderEnd::Bye => Ok(()),
                    ReaderEnd::Ended(why) => {
                        let mut reason = why;
                        if let Ok(status) = status {
                            reason.push_str(&format!(" (the init {status})"));
                        }
                        if !tail.trim().is_empty() {
                            reason.push_str(&format!("; its stderr ends with: {}", tail.trim()));
                        }
                        deliver(
                            &reader_sink,
                            Event::InitFailed {
                                reason: reason.clone(),
                            },
                        );
                        Err(reason)
                    }
                };
                drop(done_tx);
                outcome
            })
            .map_err(spawn_error)?;
        let started = match started_rx.recv() {
            Ok(Ok(started)) => started,
            Ok(Err(e)) => {
                let _ = reader.join();
                return Err(spawn_error(e));
            }
            Err(_) => {
                let _ = reader.join();
                return Err(SandboxError::Handshake {
                    program: config.program.clone(),
                    reason: "the thread hosting the init ended".to_owned(),
                });
            }
        };
        let init = Arc::new(InitProcess {
            pid: started.pid,
            exited: Mutex::new(false),
        });
        let _ = init_tx.send(Arc::clone(&init));
        let mut run = Run {
            control: Mutex::new(Some(started.stdin)),
            events: event_rx,
            sink,
            init,
            done: done_rx,
            reader: Some(reader),
            next_job: AtomicU64::new(1),
            isolation: Isolation::None {
                reason: String::new(),
            },
        };
        let requested = match config.isolation {
            IsolationRequest::Auto => WireIsolationRequest::Auto,
            IsolationRequest::Required => WireIsolationRequest::Required,
            IsolationRequest::Disabled => WireIsolationRequest::Disabled,
        };
        let hello = Request::Hello {
            isolation: requested,
            parent_pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX),
            job_limit: config.job_limit.map(|n| n.get() as u64),
            hidden: config
                .hidden
                .iter()
                .map(|p| WireBytes::from_os(p.as_os_str()))
                .collect(),
            record_executions: config.record_executions,
        };
        let handshake = |reason: String| SandboxError::Handshake {
            program: config.program.clone(),
            reason,
        };
        if let Err(e) = run.send(&hello) {
            let failure = run.end_now().err().unwrap_or_else(|| e.to_string());
            return Err(handshake(failure));
        }
        let isolation = match hello_rx.recv_timeout(HELLO_TIMEOUT) {
            Ok(Reply::Hello { isolation }) => match isolation {
                WireIsolation::Namespaces { user_namespace } => {
                    Isolation::Namespaces { user_namespace }
                }
                WireIsolation::None { reason } => Isolation::None { reason },
            },
            Ok(Reply::HelloFailed {
                isolation_unavailable,
                reason,
            }) => {
                let _ = run.end_now();
                return Err(if isolation_unavailable {
                    SandboxError::IsolationUnavailable { reason }
                } else {
                    handshake(reason)
                });
            }
            Ok(other) => {
                let _ = run.end_now();
                return Err(handshake(format!("unexpected first reply {other:?}")));
            }
            Err(RecvTimeoutError::Timeout) => {
                run.init.kill();
                let _ = run.end_now();
                return Err(handshake(format!(
                    "no hello within {}s",
                    HELLO_TIMEOUT.as_secs()
                )));
            }
            Err(RecvTimeoutError::Disconnected) => {
                run.init.kill();
                let failure = run.end_now().err().unwrap_or_default();
                return Err(handshake(format!("no hello from the init: {failure}")));
            }
        };
        run.isolation = isolation.clone();
        Ok((run, isolation))
    }

    /// The isolation the run has.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// The PID of the init process (for diagnostics).
    pub fn init_pid(&self) -> u32 {
        u32::try_from(self.init.pid.as_raw()).unwrap_or(0)
    }

    /// Starts a job. Its end is reported by an [`Event::Exited`]; a job that cannot start
    /// (command not found, missing working directory, unwritable log) is reported the same
    /// way, with `spawn_error` set.
    pub fn spawn(&self, job: &JobSpec) -> Result<JobId, SandboxError> {
        if job.argv.is_empty() {
            return Err(SandboxError::InvalidJob {
                reason: "the argv is empty".to_owned(),
            });
        }
        check_path("working directory", &job.cwd)?;
        check_path("log", &job.log)?;
        if let Some(program) = &job.program {
            check_path("program", program)?;
        }
        for path in job
            .world
            .read_only
            .iter()
            .chain(&job.world.writable)
            .chain(&job.world.private)
        {
            check_path("path of the job's world", path)?;
        }
        for overlay in &job.world.overlays {
            check_path("overlay target", &overlay.target)?;
            check_path("overlay scratch directory", &overlay.scratch)?;
            for layer in &overlay.layers {
                check_path("overlay layer", layer)?;
            }
        }
        let id = self.next_id();
        let request = Request::Spawn(SpawnRequest {
            job: id.0,
            argv: job.argv.iter().map(|a| WireBytes::from_os(a)).collect(),
            program: job
                .program
                .as_deref()
                .map(|p| WireBytes::from_os(p.as_os_str())),
            cwd: WireBytes::from_os(job.cwd.as_os_str()),
            env: job
                .env
                .iter()
                .map(|(k, v)| (WireBytes::from_os(k), WireBytes::from_os(v)))
                .collect(),
            network: match job.network {
                Network::Private => WireNetwork::Private,
                Network::Host => WireNetwork::Host,
            },
            timeout_ns: job.timeout.map(nanos),
            log: WireBytes::from_os(job.log.as_os_str()),
            redact: job
                .redact
                .iter()
                .map(|s| WireBytes::from_bytes(s))
                .collect(),
            limited: job.limited,
            hold_after: job.hold_after,
            world: WireWorld::from_world(&job.world),
        });
        self.send(&request)?;
        Ok(id)
    }

    /// Drops a [`JobSpec::limited`] job that still waits for a slot: an [`Event::Exited`]
    /// with `started: false` and `killed: true` follows. A job that already started is not
    /// affected (and no event is added for it).
    pub fn cancel(&self, job: JobId) -> Result<(), SandboxError> {
        if job.0 == 0 || job.0 >= self.next_job.load(Ordering::SeqCst) {
            return Err(SandboxError::UnknownJob { job });
        }
        self.send(&Request::Cancel { job: job.0 })
    }

    /// Starts the [`JobSpec::limited`] jobs that wait, after a limited job held them (it
    /// did not exit 0, or was spawned with [`JobSpec::hold_after`]). Harmless when nothing
    /// is held.
    pub fn resume(&self) -> Result<(), SandboxError> {
        self.send(&Request::Resume)
    }

    /// Starts an HTTP readiness probe inside the run's network. Its end is reported by an
    /// [`Event::Ready`] or [`Event::NotReady`].
    pub fn probe(&self, probe: &ProbeSpec) -> Result<JobId, SandboxError> {
        parse_url(&probe.url).map_err(|reason| SandboxError::InvalidProbeUrl {
            url: probe.url.clone(),
            reason,
        })?;
        check_path("log", &probe.log)?;
        let id = self.next_id();
        let request = Request::Probe(ProbeRequest {
            job: id.0,
            url: probe.url.clone(),
            expect_status: probe.expect_status,
            expect_headers: probe.expect_headers.clone(),
            expect_body: probe.expect_body.clone(),
            timeout_ns: nanos(probe.timeout),
            log: WireBytes::from_os(probe.log.as_os_str()),
            redact: probe
                .redact
                .iter()
                .map(|s| WireBytes::from_bytes(s))
                .collect(),
        });
        self.send(&request)?;
        Ok(id)
    }

    /// Kills a job's whole process tree (or stops a probe). An [`Event::Exited`] with
    /// `killed: true` follows (for a probe, an [`Event::NotReady`]), unless the job had
    /// already ended; killing an ended job does nothing. A job still waiting for a slot
    /// is dropped, as by [`Run::cancel`].
    pub fn kill(&self, job: JobId) -> Result<(), SandboxError> {
        if job.0 == 0 || job.0 >= self.next_job.load(Ordering::SeqCst) {
            return Err(SandboxError::UnknownJob { job });
        }
        self.send(&Request::Kill { job: job.0 })
    }

    /// Hands every event, from now on and in order, to `forward`, called on the thread
    /// that reads the init's replies (an async executor sends them into its own channel;
    /// keep it short). Events already received but not yet taken go first. Afterwards
    /// [`Run::events`], [`Run::recv_timeout`] and the leftovers of [`Run::shutdown`] are
    /// empty.
    pub fn forward_events(&mut self, mut forward: impl FnMut(Event) + Send + 'static) {
        // Holding the lock keeps the reader from delivering meanwhile, so what is already
        // in the channel is older than anything it delivers next.
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        for event in self.events.try_iter() {
            forward(event);
        }
        *sink = EventSink::Forward(Box::new(forward));
    }

    /// The events of the run, in the order the init reported them.
    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// Waits up to `timeout` for the next event.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Event> {
        self.events.recv_timeout(timeout).ok()
    }

    /// Kills every job, waits for them, ends the init and waits for it.
    ///
    /// Returns the events not yet received, including the `Exited { killed: true }` of
    /// every job that was still running.
    pub fn shutdown(mut self) -> Result<Vec<Event>, SandboxError> {
        let _ = self.send(&Request::Shutdown);
        let result = self.end_now();
        let events: Vec<Event> = self.events.try_iter().collect();
        match result {
            Ok(()) => Ok(events),
            Err(reason) => Err(SandboxError::InitFailed { reason }),
        }
    }

    fn next_id(&self) -> JobId {
        JobId(self.next_job.fetch_add(1, Ordering::SeqCst))
    }

    fn send(&self, request: &Request) -> Result<(), SandboxError> {
        let line = encode_line(request);
        let mut control = self.control.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stdin) = control.as_mut() else {
            return Err(SandboxError::Control {
                source: std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the run was shut down",
                ),
            });
        };
        stdin
            .write_all(&line)
            .and_then(|()| stdin.flush())
            .map_err(|source| SandboxError::Control { source })
    }

    /// Closes the control pipe, waits (bounded) for the init to end, kills it otherwise,
    /// and joins the reader thread. Returns the reader's verdict.
    fn end_now(&mut self) -> Result<(), String> {
        drop(
            self.control
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let Some(reader) = self.reader.take() else {
            return Ok(());
        };
        if matches!(
            self.done.recv_timeout(SHUTDOWN_TIMEOUT),
            Err(RecvTimeoutError::Timeout)
        ) {
            self.init.kill();
        }
        match reader.join() {
            Ok(result) => result,
            Err(_) => Err("the thread hosting the init panicked".to_owned()),
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.end_now();
    }
}

/// How the reply stream ended.
enum ReaderEnd {
    /// The init said bye.
    Bye,
    /// Anything else, and why.
    Ended(String),
}

/// Reads reply lines until the init closes its stdout.
fn read_replies(
    stdout: std::process::ChildStdout,
    hello: Sender<Reply>,
    events: &Mutex<EventSink>,
) -> ReaderEnd {
    let mut reader = BufReader::new(stdout);
    let mut hello = Some(hello);
    let mut fatal = None;
    let mut bye = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                fatal.get_or_insert(format!("read the init's replies: {e}"));
                break;
            }
        }
        let reply = match serde_json::from_slice::<Reply>(&line) {
            Ok(reply) => reply,
            Err(e) => {
                fatal.get_or_insert(format!(
                    "the init sent a malformed reply ({e}): {}",
                    String::from_utf8_lossy(&line).trim()
                ));
                // Not an init speaking this protocol: let `start` fail now, not at its timeout.
                drop(hello.take());
                continue;
            }
        };
        match reply {
            Reply::Hello { .. } | Reply::HelloFailed { .. } => {
                if let Some(sender) = hello.take() {
                    let _ = sender.send(reply);
                }
            }
            Reply::Exited {
                job,
                code,
                signal,
                timed_out,
                killed,
                duration_ns,
                spawn_error,
                log_error,
                started,
                executed,
            } => {
                deliver(
                    events,
                    Event::Exited {
                        job: JobId(job),
                        code,
                        signal,
                        timed_out,
                        killed,
                        duration: Duration::from_nanos(duration_ns),
                        spawn_error,
                        log_error,
                        started,
                        executed: executed.map(crate::protocol::WireRecorded::into_recorded),
                    },
                );
            }
            Reply::Ready {
                job,
                attempts,
                duration_ns,
            } => {
                deliver(
                    events,
                    Event::Ready {
                        job: JobId(job),
                        attempts,
                        duration: Duration::from_nanos(duration_ns),
                    },
                );
            }
            Reply::NotReady {
                job,
                attempts,
                reason,
            } => {
                deliver(
                    events,
                    Event::NotReady {
                        job: JobId(job),
                        attempts,
                        reason,
                    },
                );
            }
            Reply::Fatal { reason } => {
                fatal.get_or_insert(format!("the init failed: {reason}"));
            }
            Reply::Bye => bye = true,
        }
    }
    // Dropping `hello` unanswered tells `start` the init ended first.
    drop(hello);
    match (bye, fatal) {
        (_, Some(why)) => ReaderEnd::Ended(why),
        (true, None) => ReaderEnd::Bye,
        (false, None) => ReaderEnd::Ended("the init exited without being asked to".to_owned()),
    }
}

/// Keeps the last bytes the init wrote on stderr (a panic message, normally nothing).
fn stderr_tail(mut stderr: std::process::ChildStderr) -> String {
    let mut tail = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stderr.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > STDERR_TAIL {
                    let cut = tail.len() - STDERR_TAIL;
                    tail.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// Paths handed to the init must be absolute and free of `..`.
fn check_path(what: &'static str, path: &std::path::Path) -> Result<(), SandboxError> {
    let normal = path.is_absolute()
        && !path
            .components()
            .any(|c| c == std::path::Component::ParentDir);
    if normal {
        Ok(())
    } else {
        Err(SandboxError::InvalidPath {
            what,
            path: path.to_path_buf(),
        })
    }
}
