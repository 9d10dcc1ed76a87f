//! End-to-end tests of process supervision: real inits, real namespaces, real processes.
//!
//! They need `sh`, `bash`, `python3`, `unshare` and `setpriv` (util-linux), and run as root
//! (as CI does). A missing tool fails the test with the command that installs it.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use proofgraph_sandbox::{
    Event, INIT_ARG, Isolation, IsolationRequest, JobId, JobSpec, Network, OverlaySpec, ProbeSpec,
    Run, RunConfig, SandboxError, World,
};

const INIT: &str = env!("CARGO_BIN_EXE_proofgraph-sandbox-test-init");
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

// ---------------------------------------------------------------------------------------
// Helpers

/// A scratch directory under the host's `/tmp` (so that the bind of working directories
/// under `/tmp` into the run's private `/tmp` is exercised by every test), removed at the end.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "supervise-test-{}-{name}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        fs_err::create_dir_all(&dir).expect("create the scratch directory");
        Scratch { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str) -> String {
        fs_err::read_to_string(self.path(name)).unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs_err::remove_dir_all(&self.dir);
    }
}

fn config(isolation: IsolationRequest) -> RunConfig {
    RunConfig {
        program: PathBuf::from(INIT),
        args: vec![OsString::from(INIT_ARG)],
        isolation,
        job_limit: None,
        hidden: Vec::new(),
        record_executions: true,
    }
}

fn start(isolation: IsolationRequest) -> (Run, Isolation) {
    let (run, actual) = Run::start(&config(isolation)).expect("start a run");
    if isolation == IsolationRequest::Required {
        assert!(actual.is_isolated());
    }
    (run, actual)
}

/// A run that must have namespaces (these tests run as root).
fn isolated() -> Run {
    let (run, isolation) = start(IsolationRequest::Required);
    assert_eq!(
        isolation,
        Isolation::Namespaces {
            user_namespace: false
        },
        "as root, plain namespaces are expected"
    );
    run
}

fn job(scratch: &Scratch, log: &str, argv: &[&str]) -> JobSpec {
    JobSpec {
        program: None,
        argv: argv.iter().map(OsString::from).collect(),
        cwd: scratch.dir.clone(),
        env: vec![(OsString::from("PATH"), OsString::from(PATH))],
        network: Network::Private,
        timeout: None,
        log: scratch.path(log),
        redact: Vec::new(),
        limited: false,
        hold_after: false,
        world: World {
            writable: vec![scratch.dir.clone()],
            ..World::default()
        },
    }
}

fn sh(scratch: &Scratch, log: &str, script: &str) -> JobSpec {
    require("sh", "apt-get install -y dash");
    job(scratch, log, &["sh", "-c", script])
}

/// Waits for the next event about `id`, keeping the others for later calls.
struct Events<'a> {
    run: &'a Run,
    stash: Vec<Event>,
}

impl<'a> Events<'a> {
    fn new(run: &'a Run) -> Self {
        Events {
            run,
            stash: Vec::new(),
        }
    }

    fn wait(&mut self, id: JobId, within: Duration) -> Event {
        if let Some(i) = self.stash.iter().position(|e| e.job() == Some(id)) {
            return self.stash.remove(i);
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self
                .run
                .recv_timeout(left)
                .unwrap_or_else(|| panic!("no event for {id} within {within:?}"));
            if let Event::InitFailed { reason } = &event {
                panic!("the init failed: {reason}");
            }
            if event.job() == Some(id) {
                return event;
            }
            self.stash.push(event);
        }
    }
}

/// Runs a job to its end and returns its exit event.
fn run_to_end(run: &Run, spec: &JobSpec) -> Event {
    let id = run.spawn(spec).expect("spawn");
    Events::new(run).wait(id, Duration::from_secs(10))
}

fn exit_code(event: &Event) -> Option<i32> {
    match event {
        Event::Exited { code, .. } => *code,
        other => panic!("expected an exit, got {other:?}"),
    }
}

/// Fails (never skips) when a tool is missing, saying how to install it.
fn require(tool: &str, install: &str) -> PathBuf {
    for dir in PATH.split(':') {
        let candidate = Path::new(dir).join(tool);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!("`{tool}` is needed by this test and is not in {PATH}; install it with `{install}`");
}

/// The system's python3 interpreter, which every job's world holds (a pyenv or venv one
/// under a home directory is not in a world unless named).
fn python() -> PathBuf {
    let python = PathBuf::from("/usr/bin/python3");
    assert!(
        python.is_file(),
        "`/usr/bin/python3` is needed by this test and was not found; install it with `apt-get install -y python3`"
    );
    python
}

/// A unique number for `sleep`, to find the test's own processes in `/proc`.
fn marker(test: u32) -> String {
    format!("{}{}", 90_000 + test, std::process::id())
}

/// PIDs of live processes whose argv is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<u32> {
    let expected: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let mut found = Vec::new();
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = fs_err::read(format!("/proc/{pid}/cmdline"))
            && cmdline == expected
            && !is_zombie(pid)
        {
            found.push(pid);
        }
    }
    found
}

fn is_zombie(pid: u32) -> bool {
    match fs_err::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid)
}

/// Polls `condition` for up to `within`.
fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("find a free port")
}

/// An HTTP server on the host's loopback that answers every request with `body` and an
/// identity header: what a stale server left from an earlier run would look like.
fn host_http_server(port: u16, body: &'static str) -> TcpListener {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the host server");
    let server = listener.try_clone().expect("clone the listener");
    std::thread::spawn(move || {
        for stream in server.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let response = format!(
                "HTTP/1.1 200 OK\r\nX-Proofgraph-Identity: host\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    listener
}

fn http_get(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

// ---------------------------------------------------------------------------------------
// 1. Network isolation

#[test]
fn private_network_cannot_reach_the_host_but_host_network_can() {
    require("bash", "apt-get install -y bash");
    let scratch = Scratch::new("net");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind on the host");
    let port = listener.local_addr().expect("address").port();
    let run = isolated();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let private = job(&scratch, "private.log", &["bash", "-c", &connect]);
    let event = run_to_end(&run, &private);
    assert_ne!(
        exit_code(&event),
        Some(0),
        "{event:?}: {}",
        scratch.read("private.log")
    );
    assert!(
        scratch.read("private.log").contains("refused"),
        "{}",
        scratch.read("private.log")
    );

    let host = JobSpec {
        network: Network::Host,
        log: scratch.path("host.log"),
        ..private
    };
    let event = run_to_end(&run, &host);
    assert_eq!(
        exit_code(&event),
        Some(0),
        "{event:?}: {}",
        scratch.read("host.log")
    );
    assert!(scratch.read("host.log").contains("connected"));
    run.shutdown().expect("shutdown");
}

#[test]
fn two_runs_listen_on_the_same_port_as_the_host() {
    let scratch = Scratch::new("port");
    // The host already listens on the port, and so will both runs, at the same time.
    let host = TcpListener::bind("127.0.0.1:0").expect("bind on the host");
    let port = host.local_addr().expect("address").port();
    let serve = format!(
        "import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', {port}))\ns.listen()\nprint('bound', flush=True)\ntime.sleep(60)"
    );
    let python = python();
    let python = python.to_string_lossy();
    let run_a = isolated();
    let run_b = isolated();
    let a = run_a
        .spawn(&job(&scratch, "a.log", &[&python, "-c", &serve]))
        .expect("spawn a");
    let b = run_b
        .spawn(&job(&scratch, "b.log", &[&python, "-c", &serve]))
        .expect("spawn b");
    assert!(
        eventually(Duration::from_secs(5), || scratch
            .read("a.log")
            .contains("bound")
            && scratch.read("b.log").contains("bound")),
        "a: {}\nb: {}",
        scratch.read("a.log"),
        scratch.read("b.log")
    );
    // Both are still listening: neither has exited.
    assert!(run_a.events().try_recv().is_err());
    assert!(run_b.events().try_recv().is_err());
    let events_a = run_a.shutdown().expect("shutdown a");
    let events_b = run_b.shutdown().expect("shutdown b");
    assert!(matches!(events_a.as_slice(), [Event::Exited { job, killed: true, .. }] if *job == a));
    assert!(matches!(events_b.as_slice(), [Event::Exited { job, killed: true, .. }] if *job == b));
}

// ---------------------------------------------------------------------------------------
// 2. No process left behind

#[test]
fn background_children_die_when_the_job_exits() {
    let scratch = Scratch::new("bg");
    let run = isolated();
    let m = marker(1);
    let event = run_to_end(
        &run,
        &sh(
            &scratch,
            "bg.log",
            &format!("sleep {m} & sleep 0.1; echo started"),
        ),
    );
    assert_eq!(exit_code(&event), Some(0));
    assert!(scratch.read("bg.log").contains("started"));
    assert_eq!(
        processes(&["sleep", &m]),
        Vec::<u32>::new(),
        "a `sleep {m}` survived"
    );
    run.shutdown().expect("shutdown");
}

#[test]
fn each_job_has_its_own_pid_namespace() {
    let scratch = Scratch::new("pidns");
    let run = isolated();
    // The command is PID 1 of a namespace of its own, in every job; its child is PID 2.
    for name in ["a.log", "b.log"] {
        let event = run_to_end(&run, &sh(&scratch, name, "echo $$; sh -c 'echo $$'; true"));
        assert_eq!(exit_code(&event), Some(0));
        assert_eq!(scratch.read(name), "1\n2\n", "{}", scratch.read(name));
    }
    run.shutdown().expect("shutdown");
}

#[test]
fn orphans_of_a_job_are_re_parented_to_its_command() {
    let scratch = Scratch::new("orphan");
    let run = isolated();
    // `/proc` is the job's own, so PIDs read there are the namespace's: the command's own
    // (1), and the parent of a subshell whose parent (`sh -c ... & exit 0`) has exited. PID
    // 1 of the namespace, the command itself, adopts it (see the crate's limitations).
    let script = "read -r me _ < /proc/self/stat; \
        sh -c '(sleep 0.2; read -r _ _ _ ppid _ < /proc/self/stat; echo \"$ppid\" > /tmp/ppid) & exit 0'; \
        sleep 1; read -r ppid < /tmp/ppid; echo \"command $me, orphan's parent $ppid\"; \
        test \"$ppid\" = \"$me\"";
    let event = run_to_end(&run, &sh(&scratch, "o.log", script));
    let log = scratch.read("o.log");
    assert_eq!(exit_code(&event), Some(0), "{log}");
    // Two PIDs were read, not two empty strings.
    assert_eq!(log, "command 1, orphan's parent 1\n");
    run.shutdown().expect("shutdown");
}

#[test]
fn a_timeout_kills_the_whole_tree() {
    let scratch = Scratch::new("timeout");
    let run = isolated();
    let m = marker(2);
    let spec = JobSpec {
        timeout: Some(Duration::from_millis(300)),
        ..sh(&scratch, "t.log", &format!("sleep {m} & sleep {m}"))
    };
    let started = Instant::now();
    let event = run_to_end(&run, &spec);
    let Event::Exited {
        timed_out,
        killed,
        signal,
        duration,
        ..
    } = event
    else {
        panic!("expected an exit, got {event:?}");
    };
    assert!(timed_out && !killed);
    assert_eq!(signal, Some(9));
    assert!(duration >= Duration::from_millis(300) && started.elapsed() < Duration::from_secs(3));
    assert_eq!(processes(&["sleep", &m]), Vec::<u32>::new());
    run.shutdown().expect("shutdown");
}

#[test]
fn setsid_and_double_fork_do_not_escape() {
    require("setsid", "apt-get install -y util-linux");
    let scratch = Scratch::new("setsid");
    let run = isolated();
    let m = marker(3);
    let script = format!("setsid sleep {m} & (sleep {m} &) ; sleep 0.2; echo started");
    let event = run_to_end(&run, &sh(&scratch, "s.log", &script));
    assert_eq!(exit_code(&event), Some(0), "{}", scratch.read("s.log"));
    assert_eq!(processes(&["sleep", &m]), Vec::<u32>::new());
    run.shutdown().expect("shutdown");
}

#[test]
fn shutdown_and_kill_end_running_services() {
    let scratch = Scratch::new("shutdown");
    let run = isolated();
    let m = marker(4);
    let killed_one = run
        .spawn(&sh(
            &scratch,
            "k.log",
            &format!("sleep {m} & exec sleep {m}"),
        ))
        .expect("spawn");
    let service = run
        .spawn(&sh(
            &scratch,
            "svc.log",
            &format!("sleep {m} & echo serving; exec sleep {m}"),
        ))
        .expect("spawn");
    assert!(eventually(Duration::from_secs(5), || processes(&[
        "sleep", &m
    ])
    .len()
        == 4));
    run.kill(killed_one).expect("kill");
    let event = Events::new(&run).wait(killed_one, Duration::from_secs(5));
    assert!(
        matches!(
            event,
            Event::Exited {
                killed: true,
                timed_out: false,
                signal: Some(9),
                ..
            }
        ),
        "{event:?}"
    );
    assert_eq!(
        processes(&["sleep", &m]).len(),
        2,
        "only the service's processes are left"
    );
    let events = run.shutdown().expect("shutdown");
    assert!(
        matches!(events.as_slice(), [Event::Exited { job, killed: true, .. }] if *job == service),
        "{events:?}"
    );
    assert_eq!(processes(&["sleep", &m]), Vec::<u32>::new());
}

#[test]
fn dropping_the_run_ends_it_too() {
    let scratch = Scratch::new("drop");
    let m = marker(5);
    let run = isolated();
    let init = run.init_pid();
    run.spawn(&sh(&scratch, "d.log", &format!("exec sleep {m}")))
        .expect("spawn");
    assert!(eventually(Duration::from_secs(5), || !processes(&[
        "sleep", &m
    ])
    .is_empty()));
    drop(run);
    assert!(!alive(init));
    assert_eq!(processes(&["sleep", &m]), Vec::<u32>::new());
}

// ---------------------------------------------------------------------------------------
// 3. Parent death

#[test]
fn the_init_and_its_jobs_die_with_the_parent() {
    let scratch = Scratch::new("parent");
    let m = marker(6);
    let mut holder = Command::new(INIT)
        .arg("hold-run")
        .arg(&scratch.dir)
        .arg(&m)
        .spawn()
        .expect("start the holder");
    let pid_file = scratch.path("init.pid");
    assert!(
        eventually(Duration::from_secs(10), || pid_file.exists()),
        "the holder never started its run (log: {})",
        scratch.read("hold.log")
    );
    let init: u32 = scratch.read("init.pid").trim().parse().expect("a pid");
    assert!(alive(init));
    // The pid file can appear before the job has exec'd `sleep`.
    assert!(
        eventually(Duration::from_secs(10), || processes(&["sleep", &m]).len()
            == 1),
        "the job is running"
    );
    holder.kill().expect("kill -9 the holder");
    let _ = holder.wait();
    assert!(
        eventually(Duration::from_secs(3), || !alive(init)),
        "the init outlived its parent"
    );
    assert!(
        eventually(Duration::from_secs(3), || processes(&["sleep", &m])
            .is_empty()),
        "the job outlived its run's parent"
    );
}

// ---------------------------------------------------------------------------------------
// 4. Redaction

#[test]
fn secrets_are_redacted_even_when_split_across_writes() {
    require("bash", "apt-get install -y bash");
    let secret = "s3cr3t-Value-9f2c";
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("redact");
        let (run, _) = start(isolation);
        // The secret reaches the job only through its environment; the script prints it
        // whole, then in two halves with a pause between the writes.
        let script = r#"echo "token=$SECRET;"; printf '%s' "${SECRET:0:7}"; sleep 0.3; printf '%s\n' "${SECRET:7}"; echo done"#;
        let spec = JobSpec {
            env: vec![
                (OsString::from("PATH"), OsString::from(PATH)),
                (OsString::from("SECRET"), OsString::from(secret)),
            ],
            redact: vec![secret.as_bytes().to_vec()],
            ..job(&scratch, "r.log", &["bash", "-c", script])
        };
        let event = run_to_end(&run, &spec);
        assert_eq!(exit_code(&event), Some(0));
        let log = scratch.read("r.log");
        assert_eq!(
            log, "token=[redacted];\n[redacted]\ndone\n",
            "{isolation:?}"
        );
        assert!(!log.contains(secret));
        run.shutdown().expect("shutdown");
    }
}

// ---------------------------------------------------------------------------------------
// 5. Environment and /tmp

#[test]
fn a_program_found_in_path_once_is_found_again_where_it_went() {
    use std::os::unix::fs::PermissionsExt as _;
    require("sh", "apt-get install -y dash");
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("path-search");
        let tool = |dir: &str| {
            let path = scratch.path(dir).join("tool");
            fs_err::create_dir_all(scratch.path(dir)).expect("mkdir");
            fs_err::write(&path, format!("#!/bin/sh\necho {dir}\n")).expect("write tool");
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        };
        fs_err::create_dir_all(scratch.path("a")).expect("mkdir a");
        tool("b");
        tool("c");
        let search = format!(
            "{}:{}:{}:{PATH}",
            scratch.path("a").display(),
            scratch.path("b").display(),
            scratch.path("c").display()
        );
        let spec = |log: &str| JobSpec {
            env: vec![(OsString::from("PATH"), OsString::from(&search))],
            ..job(&scratch, log, &["tool"])
        };
        let (run, _) = start(isolation);
        // The first job searches `PATH` (a has no `tool`) and finds b's.
        assert_eq!(exit_code(&run_to_end(&run, &spec("1.log"))), Some(0));
        assert_eq!(scratch.read("1.log"), "b\n", "{isolation:?}");
        // Later jobs try b's first; once it is gone, the search goes on in `PATH` order.
        fs_err::remove_file(scratch.path("b").join("tool")).expect("remove b/tool");
        assert_eq!(exit_code(&run_to_end(&run, &spec("2.log"))), Some(0));
        assert_eq!(scratch.read("2.log"), "c\n", "{isolation:?}");
        // And with none left, the job says it was not found in its PATH.
        fs_err::remove_file(scratch.path("c").join("tool")).expect("remove c/tool");
        let spec3 = JobSpec {
            env: vec![(
                OsString::from("PATH"),
                OsString::from(format!(
                    "{}:{}:{}",
                    scratch.path("a").display(),
                    scratch.path("b").display(),
                    scratch.path("c").display()
                )),
            )],
            ..job(&scratch, "3.log", &["tool"])
        };
        match run_to_end(&run, &spec3) {
            Event::Exited {
                code, spawn_error, ..
            } => {
                assert_eq!(code, Some(127), "{isolation:?}");
                let why = spawn_error.expect("a reason");
                assert!(why.contains("not found in the job's PATH"), "{why}");
            }
            other => panic!("expected an exit, got {other:?}"),
        }
        run.shutdown().expect("shutdown");
    }
}

#[test]
fn a_job_sees_exactly_its_environment() {
    let env = require("env", "apt-get install -y coreutils");
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("env");
        let (run, _) = start(isolation);
        let spec = JobSpec {
            env: vec![
                (OsString::from("ONLY_THIS"), OsString::from("yes")),
                (OsString::from("AND_THAT"), OsString::from("a b=c")),
            ],
            ..job(&scratch, "env.log", &[&env.to_string_lossy()])
        };
        let event = run_to_end(&run, &spec);
        assert_eq!(exit_code(&event), Some(0));
        let mut lines: Vec<String> = scratch.read("env.log").lines().map(str::to_owned).collect();
        lines.sort();
        assert_eq!(
            lines,
            vec!["AND_THAT=a b=c", "ONLY_THIS=yes"],
            "{isolation:?}"
        );
        run.shutdown().expect("shutdown");
    }
}

#[test]
fn tmp_is_private_to_each_job() {
    let scratch = Scratch::new("tmp");
    let file = format!("/tmp/supervise-private-{}", std::process::id());
    let run_a = isolated();
    let run_b = isolated();
    let write = run_to_end(
        &run_a,
        &sh(
            &scratch,
            "w.log",
            &format!("echo mine > {file} && cat {file}"),
        ),
    );
    assert_eq!(exit_code(&write), Some(0), "{}", scratch.read("w.log"));
    assert_eq!(scratch.read("w.log"), "mine\n");
    // Another job of the same run does not see it, nor does another run, nor the host.
    for (run, log) in [(&run_a, "same.log"), (&run_b, "other.log")] {
        let other = run_to_end(run, &sh(&scratch, log, &format!("test ! -e {file}")));
        assert_eq!(exit_code(&other), Some(0), "{log}");
    }
    assert!(!Path::new(&file).exists());
    // The job's working directory, a writable directory of its world under the host's
    // /tmp, stays the host's.
    let cwd = run_to_end(
        &run_b,
        &sh(&scratch, "cwd.log", "echo from-the-job > made-by-job"),
    );
    assert_eq!(exit_code(&cwd), Some(0), "{}", scratch.read("cwd.log"));
    assert_eq!(scratch.read("made-by-job"), "from-the-job\n");
    run_a.shutdown().expect("shutdown a");
    run_b.shutdown().expect("shutdown b");
}

/// A job sees the system's directories, what its world names and nothing else of the
/// host: not a directory beside its own, not the caller's home, not another job's files
/// — whether the job names the path in its argv, its environment or a script.
#[test]
fn a_job_sees_its_world_and_nothing_else_of_the_host() {
    let scratch = Scratch::new("world");
    let tools = Scratch::new("world-tools");
    let beside = Scratch::new("world-beside");
    fs_err::write(tools.path("tool.sh"), "echo tool-ran\n").expect("write");
    fs_err::write(beside.path("secret.txt"), "not yours\n").expect("write");
    let run = isolated();
    let script = format!(
        "sh \"$1\" && test ! -e {beside} && test ! -e {beside_dir} && ls /usr/bin/env >/dev/null \
         && ! touch {tool_copy} 2>/dev/null && ! touch /usr/x 2>/dev/null && ! touch /etc/x 2>/dev/null \
         && test -z \"$(ls -A \"$HOME\")\" && touch \"$HOME/mine\" && echo ok",
        beside = beside.path("secret.txt").display(),
        beside_dir = beside.dir.display(),
        tool_copy = tools.path("new").display(),
    );
    let home = PathBuf::from("/root");
    let mut spec = job(
        &scratch,
        "world.log",
        &[
            "sh",
            "-c",
            &script,
            "sh",
            &tools.path("tool.sh").display().to_string(),
        ],
    );
    spec.world.read_only.push(tools.dir.clone());
    spec.world.private.push(home.clone());
    spec.env.push(("HOME".into(), home.clone().into()));
    spec.env.push(("SEE".into(), beside.dir.clone().into()));
    let ended = run_to_end(&run, &spec);
    assert_eq!(exit_code(&ended), Some(0), "{}", scratch.read("world.log"));
    assert_eq!(scratch.read("world.log"), "tool-ran\nok\n");
    // The private home was the job's alone.
    assert!(!home.join("mine").exists());
    run.shutdown().expect("shutdown");
}

/// A job holds no capability and runs with `no_new_privs`, so it can undo nothing of its
/// world: no unmount, no remount, no new mount, no way back to the host's root.
#[test]
fn a_job_holds_no_privilege_and_cannot_undo_its_world() {
    let scratch = Scratch::new("undo");
    let tools = Scratch::new("undo-ro");
    fs_err::write(tools.path("kept.txt"), "kept\n").expect("write");
    let run = isolated();
    let ro = tools.dir.display().to_string();
    let script = format!(
        "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status; \
         grep '^NoNewPrivs:' /proc/self/status; \
         umount {ro} 2>/dev/null && echo UNMOUNTED; \
         mount -o remount,rw,bind {ro} 2>/dev/null && echo REMOUNTED; \
         mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED; \
         test -e /.old/usr && echo OLDROOT; \
         cat {ro}/kept.txt"
    );
    let mut spec = sh(&scratch, "undo.log", &script);
    spec.world.read_only.push(tools.dir.clone());
    let ended = run_to_end(&run, &spec);
    assert_eq!(exit_code(&ended), Some(0), "{}", scratch.read("undo.log"));
    let log = scratch.read("undo.log");
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            log.contains(&format!("{set}:\t0000000000000000")),
            "{set} is not empty: {log}"
        );
    }
    assert!(log.contains("NoNewPrivs:\t1"), "{log}");
    for undone in ["UNMOUNTED", "REMOUNTED", "MOUNTED", "OLDROOT"] {
        assert!(!log.contains(undone), "{undone}: {log}");
    }
    assert!(log.ends_with("kept\n"), "{log}");
    run.shutdown().expect("shutdown");
}

// ---------------------------------------------------------------------------------------
// 6. Probes

const IDENTITY_SERVER: &str = r#"
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("identity=" + sys.argv[2] + " token=" + sys.argv[3]).encode()
        self.send_response(200)
        self.send_header("X-Proofgraph-Identity", sys.argv[2])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

fn probe_spec(scratch: &Scratch, log: &str, port: u16) -> ProbeSpec {
    ProbeSpec {
        url: format!("http://127.0.0.1:{port}/"),
        expect_status: Some(200),
        expect_headers: Vec::new(),
        expect_body: None,
        timeout: Duration::from_secs(5),
        log: scratch.path(log),
        redact: Vec::new(),
    }
}

#[test]
fn a_probe_sees_the_runs_service_and_not_a_stale_host_server() {
    let scratch = Scratch::new("probe");
    let port = free_port();
    // A stale server on the host, on the same port, that would satisfy the probe.
    let _stale = host_http_server(port, "identity=build-42 token=none");
    assert!(http_get(port).contains("identity=build-42"));
    let run = isolated();
    let mut events = Events::new(&run);

    let early = run
        .probe(&ProbeSpec {
            expect_body: Some("identity=build-42".to_owned()),
            timeout: Duration::from_millis(400),
            ..probe_spec(&scratch, "early.log", port)
        })
        .expect("probe");
    let event = events.wait(early, Duration::from_secs(5));
    let Event::NotReady {
        attempts, reason, ..
    } = &event
    else {
        panic!("the probe saw the host's server: {event:?}");
    };
    assert!(*attempts >= 3, "{event:?}");
    assert!(reason.contains("refused"), "{reason}");
    assert!(scratch.read("early.log").contains("attempt 1 at +"));

    let python = python();
    let service = run
        .spawn(&job(
            &scratch,
            "svc.log",
            &[
                &python.to_string_lossy(),
                "-c",
                IDENTITY_SERVER,
                &port.to_string(),
                "build-42",
                "tok-SECRET-77",
            ],
        ))
        .expect("spawn the service");
    let ready = run
        .probe(&ProbeSpec {
            expect_headers: vec![("x-proofgraph-IDENTITY".to_owned(), "build-42".to_owned())],
            expect_body: Some("identity=build-42".to_owned()),
            redact: vec![b"tok-SECRET-77".to_vec()],
            ..probe_spec(&scratch, "ready.log", port)
        })
        .expect("probe");
    let event = events.wait(ready, Duration::from_secs(10));
    assert!(
        matches!(event, Event::Ready { attempts, .. } if attempts >= 1),
        "{event:?}"
    );
    let log = scratch.read("ready.log");
    assert!(log.contains("ready") && log.contains("[redacted]"), "{log}");
    assert!(!log.contains("tok-SECRET-77"), "{log}");

    let wrong = run
        .probe(&ProbeSpec {
            expect_body: Some("identity=build-43".to_owned()),
            timeout: Duration::from_millis(400),
            redact: vec![b"tok-SECRET-77".to_vec()],
            ..probe_spec(&scratch, "wrong.log", port)
        })
        .expect("probe");
    let event = events.wait(wrong, Duration::from_secs(5));
    let Event::NotReady { reason, .. } = &event else {
        panic!("a wrong expectation was met: {event:?}");
    };
    assert!(
        reason.contains("does not contain `identity=build-43`"),
        "{reason}"
    );
    assert!(
        reason.contains("identity=build-42") && !reason.contains("tok-SECRET-77"),
        "{reason}"
    );

    let wrong_header = run
        .probe(&ProbeSpec {
            expect_headers: vec![("X-Missing".to_owned(), "x".to_owned())],
            timeout: Duration::from_millis(300),
            ..probe_spec(&scratch, "header.log", port)
        })
        .expect("probe");
    let event = events.wait(wrong_header, Duration::from_secs(5));
    assert!(
        matches!(&event, Event::NotReady { reason, .. } if reason.contains("no `X-Missing` header")),
        "{event:?}"
    );
    let rest = run.shutdown().expect("shutdown");
    assert!(rest.iter().any(|e| e.job() == Some(service)));
}

#[test]
fn a_probe_reaches_python_http_server_serving_a_directory() {
    let scratch = Scratch::new("httpserver");
    fs_err::create_dir_all(scratch.path("site")).expect("mkdir");
    fs_err::write(scratch.path("site/index.html"), "<p>identity: run-7</p>").expect("write");
    let port = free_port();
    let run = isolated();
    let python = python();
    let site = scratch.path("site");
    let _server = run
        .spawn(&job(
            &scratch,
            "server.log",
            &[
                &python.to_string_lossy(),
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--directory",
                &site.to_string_lossy(),
            ],
        ))
        .expect("spawn");
    let probe = run
        .probe(&ProbeSpec {
            url: format!("http://localhost:{port}/index.html"),
            expect_body: Some("identity: run-7".to_owned()),
            ..probe_spec(&scratch, "p.log", port)
        })
        .expect("probe");
    let event = Events::new(&run).wait(probe, Duration::from_secs(10));
    assert!(
        matches!(event, Event::Ready { .. }),
        "{event:?}: {}",
        scratch.read("p.log")
    );
    run.shutdown().expect("shutdown");
}

// ---------------------------------------------------------------------------------------
// 7. Fallback

#[test]
fn the_fallback_reports_why_and_still_contains_process_groups() {
    let scratch = Scratch::new("fallback");
    let (run, isolation) = start(IsolationRequest::Disabled);
    assert_eq!(
        isolation,
        Isolation::None {
            reason: "isolation was disabled by the caller".to_owned()
        }
    );
    let hello = run_to_end(&run, &sh(&scratch, "hi.log", "echo hi"));
    assert_eq!(exit_code(&hello), Some(0));
    assert_eq!(scratch.read("hi.log"), "hi\n");

    let m = marker(7);
    let spec = JobSpec {
        timeout: Some(Duration::from_millis(300)),
        ..sh(&scratch, "t.log", &format!("sleep {m} & sleep {m}"))
    };
    let event = run_to_end(&run, &spec);
    assert!(
        matches!(
            event,
            Event::Exited {
                timed_out: true,
                signal: Some(9),
                ..
            }
        ),
        "{event:?}"
    );
    assert!(eventually(Duration::from_secs(2), || processes(&[
        "sleep", &m
    ])
    .is_empty()));

    let m = marker(8);
    let event = run_to_end(
        &run,
        &sh(
            &scratch,
            "bg.log",
            &format!("sleep {m} & sleep 0.1; echo started"),
        ),
    );
    assert_eq!(exit_code(&event), Some(0));
    assert!(eventually(Duration::from_secs(2), || processes(&[
        "sleep", &m
    ])
    .is_empty()));
    run.shutdown().expect("shutdown");
}

#[test]
fn in_the_fallback_setsid_escapes_as_documented() {
    require("setsid", "apt-get install -y util-linux");
    let scratch = Scratch::new("escape");
    let (run, _) = start(IsolationRequest::Disabled);
    let m = marker(9);
    let event = run_to_end(
        &run,
        &sh(&scratch, "e.log", &format!("setsid sleep {m} & sleep 0.2")),
    );
    assert_eq!(exit_code(&event), Some(0));
    let escaped = processes(&["sleep", &m]);
    // The documented limitation: without namespaces a new session leaves the process group.
    assert_eq!(
        escaped.len(),
        1,
        "expected the escape the fallback cannot prevent"
    );
    for pid in escaped {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    run.shutdown().expect("shutdown");
}

#[test]
fn required_isolation_fails_and_auto_falls_back_when_namespaces_are_unavailable() {
    let unshare = require("unshare", "apt-get install -y util-linux");
    // In a user namespace where the init's uid is unmapped, it has no capability and
    // cannot create a nested user namespace: namespaces are unavailable.
    let unavailable = |isolation| RunConfig {
        program: unshare.clone(),
        args: vec!["--user".into(), "--".into(), INIT.into(), INIT_ARG.into()],
        isolation,
        job_limit: None,
        hidden: Vec::new(),
        record_executions: true,
    };
    match Run::start(&unavailable(IsolationRequest::Required)) {
        Err(SandboxError::IsolationUnavailable { reason }) => {
            assert!(reason.contains("unshare("), "{reason}");
        }
        other => panic!("expected IsolationUnavailable, got {other:?}"),
    }
    let (run, isolation) = Run::start(&unavailable(IsolationRequest::Auto)).expect("start");
    let Isolation::None { reason } = &isolation else {
        panic!("expected no isolation, got {isolation:?}");
    };
    assert!(
        reason.starts_with("namespaces are unavailable: unshare("),
        "{reason}"
    );
    let scratch = Scratch::new("unavailable");
    let event = run_to_end(&run, &sh(&scratch, "x.log", "echo still works"));
    assert_eq!(exit_code(&event), Some(0));
    assert_eq!(scratch.read("x.log"), "still works\n");
    run.shutdown().expect("shutdown");
}

/// A run whose init is started as `nobody` (so it needs a user namespace); `scratch` is
/// made writable for it.
fn as_nobody(scratch: &Scratch) -> RunConfig {
    let setpriv = require("setpriv", "apt-get install -y util-linux");
    // `nobody` must be able to write the logs and reach the test binary.
    let mut permissions = fs_err::metadata(&scratch.dir).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o777);
    fs_err::set_permissions(&scratch.dir, permissions).expect("chmod");
    let probe_access = Command::new(&setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            INIT,
            "--version",
        ])
        .status()
        .expect("run setpriv");
    assert_eq!(
        probe_access.code(),
        Some(2),
        "`nobody` cannot execute {INIT}; the test needs the target directory to be world-readable"
    );
    RunConfig {
        program: setpriv,
        args: vec![
            "--reuid=65534".into(),
            "--regid=65534".into(),
            "--clear-groups".into(),
            INIT.into(),
            INIT_ARG.into(),
        ],
        isolation: IsolationRequest::Required,
        job_limit: None,
        hidden: Vec::new(),
        record_executions: true,
    }
}

#[test]
fn an_unprivileged_caller_gets_a_user_namespace() {
    let scratch = Scratch::new("userns");
    let config = as_nobody(&scratch);
    let (run, isolation) = Run::start(&config).expect("start as nobody");
    assert_eq!(
        isolation,
        Isolation::Namespaces {
            user_namespace: true
        }
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind on the host");
    let port = listener.local_addr().expect("address").port();
    let script = format!(
        "id -u; echo x > /tmp/userns-$$ && echo tmp-ok; (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo isolated"
    );
    require("bash", "apt-get install -y bash");
    let event = run_to_end(&run, &job(&scratch, "u.log", &["bash", "-c", &script]));
    assert_eq!(
        exit_code(&event),
        Some(0),
        "{event:?}: {}",
        scratch.read("u.log")
    );
    assert_eq!(scratch.read("u.log"), "65534\ntmp-ok\nisolated\n");
    // What it executed is recorded as for root (`id` through bash).
    let ran = executed(&event).expect("recorded in a user namespace too");
    let id = fs_err::canonicalize(require("id", "apt-get install -y coreutils"))
        .expect("id")
        .display()
        .to_string();
    assert!(ran.iter().any(|(p, _)| *p == id), "{ran:?}");
    let host = JobSpec {
        network: Network::Host,
        ..job(&scratch, "h.log", &["bash", "-c", &script])
    };
    let event = run_to_end(&run, &host);
    assert_eq!(
        exit_code(&event),
        Some(0),
        "{event:?}: {}",
        scratch.read("h.log")
    );
    assert!(
        scratch.read("h.log").ends_with("reached\n"),
        "{}",
        scratch.read("h.log")
    );
    run.shutdown().expect("shutdown");
}

// ---------------------------------------------------------------------------------------
// 8. Exit statuses

#[test]
fn exit_codes_signals_and_commands_that_cannot_start() {
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("status");
        let (run, _) = start(isolation);
        let code = run_to_end(&run, &sh(&scratch, "c.log", "exit 7"));
        assert!(
            matches!(
                code,
                Event::Exited {
                    code: Some(7),
                    signal: None,
                    spawn_error: None,
                    ..
                }
            ),
            "{isolation:?}: {code:?}"
        );
        let signal = run_to_end(&run, &sh(&scratch, "s.log", "kill -TERM $$; exit 3"));
        if isolation == IsolationRequest::Disabled {
            assert!(
                matches!(
                    signal,
                    Event::Exited {
                        code: None,
                        signal: Some(15),
                        killed: false,
                        ..
                    }
                ),
                "{isolation:?}: {signal:?}"
            );
        } else {
            // PID 1 of its namespace: a signal it has no handler for, sent from inside
            // the namespace, is ignored (as in a container without an init).
            assert_eq!(exit_code(&signal), Some(3), "{isolation:?}: {signal:?}");
        }
        // A command's child dies of a signal; the command reports it, as a shell does.
        let child = run_to_end(
            &run,
            &sh(&scratch, "k.log", "sh -c 'kill -TERM $$'; exit $?"),
        );
        assert_eq!(
            exit_code(&child),
            Some(128 + 15),
            "{isolation:?}: {child:?}"
        );
        let missing = run_to_end(
            &run,
            &job(&scratch, "m.log", &["no-such-command-xyz", "arg"]),
        );
        let Event::Exited {
            code, spawn_error, ..
        } = &missing
        else {
            panic!("{missing:?}");
        };
        assert_eq!(*code, Some(127), "{isolation:?}: {missing:?}");
        let why = spawn_error.as_deref().unwrap_or_default();
        assert!(
            why.contains("`no-such-command-xyz`") && why.contains("not found"),
            "{why}"
        );
        let absolute = run_to_end(&run, &job(&scratch, "a.log", &["/no/such/program"]));
        assert_eq!(exit_code(&absolute), Some(127), "{absolute:?}");
        fs_err::write(scratch.path("not-executable"), "#!/bin/sh\n").expect("write");
        let denied = run_to_end(
            &run,
            &job(
                &scratch,
                "n.log",
                &[&scratch.path("not-executable").to_string_lossy()],
            ),
        );
        assert!(
            matches!(&denied, Event::Exited { code: Some(126), spawn_error: Some(why), .. } if why.contains("EACCES")),
            "{denied:?}"
        );
        let no_cwd = JobSpec {
            cwd: scratch.path("does-not-exist"),
            ..sh(&scratch, "w.log", "true")
        };
        let event = run_to_end(&run, &no_cwd);
        assert!(
            matches!(&event, Event::Exited { code: Some(127), spawn_error: Some(why), .. } if why.contains("working directory")),
            "{event:?}"
        );
        let no_log = JobSpec {
            log: scratch.path("no-such-dir/x.log"),
            ..sh(&scratch, "unused.log", "true")
        };
        let event = run_to_end(&run, &no_log);
        assert!(
            matches!(&event, Event::Exited { code: None, spawn_error: Some(why), .. } if why.contains("open the log")),
            "{event:?}"
        );
        run.shutdown().expect("shutdown");
    }
}

#[test]
fn invalid_requests_are_refused_before_reaching_the_init() {
    let scratch = Scratch::new("invalid");
    let (run, _) = start(IsolationRequest::Disabled);
    let relative = JobSpec {
        cwd: PathBuf::from("relative/dir"),
        ..sh(&scratch, "x.log", "true")
    };
    assert!(matches!(
        run.spawn(&relative),
        Err(SandboxError::InvalidPath { .. })
    ));
    let empty = JobSpec {
        argv: Vec::new(),
        ..sh(&scratch, "x.log", "true")
    };
    assert!(matches!(
        run.spawn(&empty),
        Err(SandboxError::InvalidJob { .. })
    ));
    let bad_url = ProbeSpec {
        url: "https://example.invalid/".to_owned(),
        ..probe_spec(&scratch, "p.log", 1)
    };
    let error = run.probe(&bad_url).expect_err("https is refused");
    assert_eq!(
        error.to_string(),
        "probe `https://example.invalid/`: only `http://` URLs are supported"
    );
    let id = run.spawn(&sh(&scratch, "ok.log", "true")).expect("spawn");
    let event = Events::new(&run).wait(id, Duration::from_secs(5));
    assert_eq!(exit_code(&event), Some(0));
    assert!(run.kill(id).is_ok(), "killing an ended job is not an error");
    run.shutdown().expect("shutdown");
}

// ---------------------------------------------------------------------------------------
// Robustness

#[test]
fn large_output_is_logged_completely_and_sigpipe_is_default() {
    let scratch = Scratch::new("large");
    let run = isolated();
    let spec = JobSpec {
        redact: vec![b"zz-not-there".to_vec()],
        ..sh(
            &scratch,
            "big.log",
            "head -c 3000000 /dev/zero | tr '\\0' a; echo",
        )
    };
    let event = run_to_end(&run, &spec);
    assert_eq!(exit_code(&event), Some(0));
    let log = scratch.read("big.log");
    assert_eq!(log.len(), 3_000_001);
    assert!(log.bytes().take(3_000_000).all(|b| b == b'a'));
    // With SIGPIPE ignored (as Rust leaves it), `yes` would complain of a broken pipe.
    let event = run_to_end(&run, &sh(&scratch, "pipe.log", "yes | head -n 1"));
    assert_eq!(exit_code(&event), Some(0));
    assert_eq!(scratch.read("pipe.log"), "y\n");
    run.shutdown().expect("shutdown");
}

#[test]
#[expect(
    unsafe_code,
    reason = "ignoring a signal in this test's own process needs sigaction"
)]
fn a_command_inherits_no_ignored_signal() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // As a `nohup` or a shell's `trap '' INT QUIT` would leave the caller (nextest runs
    // each test in a process of its own). Rust's runtime already ignores SIGPIPE.
    for ignored in [Signal::SIGINT, Signal::SIGQUIT] {
        // SAFETY: `SIG_IGN` installs no handler, so no code runs at a signal.
        unsafe { signal(ignored, SigHandler::SigIgn) }.expect("ignore a signal");
    }
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("sigign");
        let (run, _) = start(isolation);
        let spec = sh(&scratch, "status.log", "grep '^SigIgn' /proc/self/status");
        let event = run_to_end(&run, &spec);
        assert_eq!(exit_code(&event), Some(0), "{isolation:?}: {event:?}");
        // No signal ignored: not SIGINT or SIGQUIT from the caller, not SIGPIPE from Rust.
        // (Signals 32 and 33 are the C library's own, set up by its start-up in each
        // program; they are left out.)
        let status = scratch.read("status.log");
        let mask = status
            .strip_prefix("SigIgn:\t")
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or_else(|| panic!("unexpected status line {status:?}"));
        assert_eq!(mask & !(0b11 << 31), 0, "{isolation:?}: {status:?}");
        run.shutdown().expect("shutdown");
    }
}

#[test]
fn a_command_holds_only_its_standard_streams() {
    let ls = require("ls", "apt-get install -y coreutils");
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("fds");
        let (run, _) = start(isolation);
        // Other jobs' pipes and logs are open in the init while this one starts.
        let busy: Vec<JobId> = (0..3)
            .map(|i| {
                run.spawn(&sh(&scratch, &format!("busy-{i}.log"), "sleep 2"))
                    .expect("spawn")
            })
            .collect();
        let spec = job(
            &scratch,
            "fds.log",
            &[&ls.to_string_lossy(), "/proc/self/fd"],
        );
        let event = run_to_end(&run, &spec);
        assert_eq!(exit_code(&event), Some(0), "{isolation:?}: {event:?}");
        // stdin, stdout, stderr, and the directory `ls` itself opened to list them.
        let fds: Vec<String> = scratch
            .read("fds.log")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert_eq!(fds, ["0", "1", "2", "3"], "{isolation:?}");
        // stdin is `/dev/null`, open and readable (end of file at once).
        let event = run_to_end(
            &run,
            &sh(
                &scratch,
                "stdin.log",
                "readlink /proc/self/fd/0; cat; echo done",
            ),
        );
        assert_eq!(exit_code(&event), Some(0), "{isolation:?}: {event:?}");
        assert_eq!(
            scratch.read("stdin.log"),
            "/dev/null\ndone\n",
            "{isolation:?}"
        );
        for id in busy {
            let _ = run.kill(id);
        }
        run.shutdown().expect("shutdown");
    }
}

/// A run whose limited jobs run one at a time.
fn one_slot(isolation: IsolationRequest) -> Run {
    let config = RunConfig {
        job_limit: std::num::NonZeroUsize::new(1),
        ..config(isolation)
    };
    Run::start(&config).expect("start a run").0
}

#[test]
fn limited_jobs_wait_for_a_slot_and_start_in_order() {
    require("sh", "apt-get install -y dash");
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("slots");
        let run = one_slot(isolation);
        let trace = scratch.path("trace");
        let limited = |i: usize| JobSpec {
            limited: true,
            ..sh(
                &scratch,
                &format!("{i}.log"),
                &format!(
                    "echo start {i} >> {t}; sleep 0.3; echo end {i} >> {t}",
                    t = trace.display()
                ),
            )
        };
        let ids: Vec<JobId> = (0..3)
            .map(|i| run.spawn(&limited(i)).expect("spawn"))
            .collect();
        // Not limited: starts at once, beside the limited job that runs and before those
        // that wait.
        let free = run
            .spawn(&sh(
                &scratch,
                "free.log",
                &format!("echo free >> {}", trace.display()),
            ))
            .expect("spawn");
        let mut events = Events::new(&run);
        let free_event = events.wait(free, Duration::from_secs(5));
        assert_eq!(exit_code(&free_event), Some(0));
        for id in &ids {
            let event = events.wait(*id, Duration::from_secs(10));
            assert_eq!(exit_code(&event), Some(0), "{isolation:?}: {event:?}");
            assert!(matches!(event, Event::Exited { started: true, .. }));
        }
        let trace = scratch.read("trace");
        let lines: Vec<&str> = trace.lines().collect();
        // The unlimited one ran while the first limited one did (which of the two wrote
        // first is a race), so before the first limited one ended...
        let at = |line: &str| lines.iter().position(|l| *l == line);
        assert!(
            at("free").is_some() && at("free") < at("end 0"),
            "{isolation:?}: the unlimited job waited: {trace}"
        );
        // ...and the limited ones ran one at a time, in order.
        let limited: Vec<&str> = lines.iter().copied().filter(|l| *l != "free").collect();
        assert_eq!(
            limited,
            ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"],
            "{isolation:?}: one at a time, in order"
        );
        run.shutdown().expect("shutdown");
    }
}

/// A limited job that does not exit 0, or that was spawned `hold_after` (even when it
/// exits 0), holds the waiting ones until the caller resumes; one that exits 0 does not.
#[test]
fn a_failed_or_holding_job_holds_the_waiting_ones_until_resumed() {
    require("sh", "apt-get install -y dash");
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        for (script, hold_after, code) in [("exit 3", false, 3), ("echo a", true, 0)] {
            let scratch = Scratch::new("hold");
            let run = one_slot(isolation);
            let limited = |log: &str, script: &str| JobSpec {
                limited: true,
                ..sh(&scratch, log, script)
            };
            let first = run
                .spawn(&JobSpec {
                    hold_after,
                    ..limited("a.log", script)
                })
                .expect("spawn");
            let waiting = run.spawn(&limited("b.log", "echo b")).expect("spawn");
            let after = run.spawn(&limited("c.log", "echo c")).expect("spawn");
            let mut events = Events::new(&run);
            let event = events.wait(first, Duration::from_secs(5));
            assert_eq!(exit_code(&event), Some(code), "{isolation:?} {script}");
            // Held: the caller has not said whether the run goes on.
            std::thread::sleep(Duration::from_millis(300));
            assert!(run.recv_timeout(Duration::ZERO).is_none(), "{isolation:?}");
            assert_eq!(
                scratch.read("b.log"),
                "",
                "{isolation:?} {script}: started while held"
            );
            run.resume().expect("resume");
            // One resume: `b` exits 0 and holds nothing, so `c` follows on its own.
            for id in [waiting, after] {
                let event = events.wait(id, Duration::from_secs(5));
                assert_eq!(exit_code(&event), Some(0), "{isolation:?}: {event:?}");
            }
            assert_eq!(scratch.read("c.log"), "c\n", "{isolation:?} {script}");
            run.shutdown().expect("shutdown");
        }
    }
}

#[test]
fn a_waiting_job_can_be_cancelled_and_a_running_one_cannot() {
    require("sh", "apt-get install -y dash");
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("cancel");
        let run = one_slot(isolation);
        let running = run
            .spawn(&JobSpec {
                limited: true,
                ..sh(&scratch, "a.log", "sleep 0.3; echo a")
            })
            .expect("spawn");
        let waiting = run
            .spawn(&JobSpec {
                limited: true,
                ..sh(&scratch, "b.log", "echo b")
            })
            .expect("spawn");
        run.cancel(waiting).expect("cancel");
        run.cancel(running).expect("cancel");
        let mut events = Events::new(&run);
        match events.wait(waiting, Duration::from_secs(5)) {
            Event::Exited {
                started,
                killed,
                code,
                ..
            } => assert!(!started && killed && code.is_none(), "{isolation:?}"),
            other => panic!("{other:?}"),
        }
        let event = events.wait(running, Duration::from_secs(5));
        assert_eq!(exit_code(&event), Some(0), "{isolation:?}: {event:?}");
        assert_eq!(scratch.read("a.log"), "a\n");
        assert_eq!(scratch.read("b.log"), "", "the cancelled job never ran");
        run.shutdown().expect("shutdown");
    }
}

#[test]
fn many_jobs_run_at_once() {
    let scratch = Scratch::new("many");
    let run = isolated();
    let ids: Vec<(usize, JobId)> = (0..30)
        .map(|i| {
            let spec = sh(
                &scratch,
                &format!("{i}.log"),
                &format!("sleep 0.1; echo job-{i}"),
            );
            (i, run.spawn(&spec).expect("spawn"))
        })
        .collect();
    let mut events = Events::new(&run);
    for (i, id) in ids {
        let event = events.wait(id, Duration::from_secs(10));
        assert_eq!(exit_code(&event), Some(0), "{event:?}");
        assert_eq!(scratch.read(&format!("{i}.log")), format!("job-{i}\n"));
    }
    run.shutdown().expect("shutdown");
}

#[test]
fn a_broken_init_fails_the_start_quickly_and_clearly() {
    let started = Instant::now();
    let threaded = RunConfig {
        args: vec!["__threaded-init".into()],
        ..config(IsolationRequest::Auto)
    };
    match Run::start(&threaded) {
        Err(SandboxError::Handshake { reason, .. }) => {
            assert!(reason.contains("the init has 2 threads"), "{reason}");
        }
        other => panic!("a multi-threaded init was accepted: {other:?}"),
    }
    let not_an_init = RunConfig {
        program: require("cat", "apt-get install -y coreutils"),
        args: Vec::new(),
        isolation: IsolationRequest::Auto,
        job_limit: None,
        hidden: Vec::new(),
        record_executions: true,
    };
    assert!(matches!(
        Run::start(&not_an_init),
        Err(SandboxError::Handshake { .. })
    ));
    let missing = RunConfig {
        program: PathBuf::from("/no/such/init"),
        ..config(IsolationRequest::Auto)
    };
    let error = Run::start(&missing).expect_err("a missing init");
    assert!(
        error
            .to_string()
            .starts_with("start the sandbox init `/no/such/init`: "),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

// ---------------------------------------------------------------------------------------
// The program that runs is the program the caller resolved

/// A directory of tools under the host's `/tmp` holding an `env` that says who it is.
fn tool_dir(scratch: &Scratch) -> PathBuf {
    let dir = scratch.path("tools");
    fs_err::create_dir_all(&dir).expect("mkdir");
    let tool = dir.join("env");
    fs_err::write(&tool, "#!/bin/sh\necho \"the /tmp env, called $0\"\n").expect("write");
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

#[test]
fn a_resolved_program_runs_exactly_under_every_isolation() {
    for isolation in [IsolationRequest::Required, IsolationRequest::Disabled] {
        let scratch = Scratch::new("exact");
        let tools = tool_dir(&scratch);
        let (run, _) = start(isolation);
        let mut events = Events::new(&run);
        // PATH would find /usr/bin/env first: the resolved file is what runs.
        let spec = JobSpec {
            program: Some(tools.join("env")),
            ..job(&scratch, "exact.log", &["env"])
        };
        let id = run.spawn(&spec).expect("spawn");
        let event = events.wait(id, Duration::from_secs(10));
        assert!(
            matches!(event, Event::Exited { code: Some(0), .. }),
            "{isolation:?}: {event:?}"
        );
        // (A script sees its own path as `$0`, whatever argv[0] was.)
        assert!(
            scratch
                .read("exact.log")
                .starts_with("the /tmp env, called "),
            "{isolation:?}: {}",
            scratch.read("exact.log")
        );
        // Not there: a job that could not start, never `/usr/bin/env` in its place.
        let spec = JobSpec {
            program: Some(tools.join("gone")),
            ..job(&scratch, "gone.log", &["env"])
        };
        let id = run.spawn(&spec).expect("spawn");
        match events.wait(id, Duration::from_secs(10)) {
            Event::Exited {
                code: Some(127),
                spawn_error: Some(why),
                ..
            } => assert!(why.contains("/tools/gone`: not found"), "{why}"),
            other => panic!("{isolation:?}: {other:?}"),
        }
        // A relative program is refused before it reaches the init.
        let spec = JobSpec {
            program: Some(PathBuf::from("tools/env")),
            ..job(&scratch, "rel.log", &["env"])
        };
        assert!(matches!(
            run.spawn(&spec),
            Err(SandboxError::InvalidPath {
                what: "program",
                ..
            })
        ));
        drop(run);
    }
}

/// A `PATH` entry of the job's world is searched as the job sees it.
#[test]
fn a_path_entry_of_the_world_is_searched() {
    let scratch = Scratch::new("path-tmp");
    let tools = tool_dir(&scratch);
    let run = isolated();
    let mut events = Events::new(&run);
    let spec = JobSpec {
        env: vec![(
            OsString::from("PATH"),
            OsString::from(format!("{}:{PATH}", tools.display())),
        )],
        // The working directory is elsewhere: the root of the job's world.
        cwd: PathBuf::from("/"),
        ..job(&scratch, "path.log", &["env"])
    };
    let id = run.spawn(&spec).expect("spawn");
    let event = events.wait(id, Duration::from_secs(10));
    assert!(
        matches!(event, Event::Exited { code: Some(0), .. }),
        "{event:?}"
    );
    assert!(
        scratch
            .read("path.log")
            .starts_with("the /tmp env, called "),
        "{}",
        scratch.read("path.log")
    );
}

// ---------------------------------------------------------------------------------------
// What the run hides from its jobs

#[test]
fn hidden_directories_are_empty_and_read_only_where_a_world_would_show_them() {
    let scratch = Scratch::new("hidden");
    // One inside a read-only directory of the world, one inside a writable one.
    let shown = scratch.path("shown");
    let outside = shown.join("store/keys");
    let under_writable = scratch.path("store/keys");
    for dir in [&outside, &under_writable] {
        fs_err::create_dir_all(dir).expect("mkdir");
        fs_err::write(dir.join("workspace.key"), "SECRET KEY\n").expect("write");
    }
    let config = RunConfig {
        hidden: vec![
            outside.clone(),
            under_writable.clone(),
            scratch.path("absent"),
        ],
        ..config(IsolationRequest::Required)
    };
    let (run, isolation) = Run::start(&config).expect("start");
    assert!(isolation.is_isolated());
    let mut events = Events::new(&run);
    let script = format!(
        "for d in '{}' '{}'; do ls -A \"$d\"; cat \"$d/workspace.key\"; touch \"$d/new\" && echo wrote; done; echo end",
        outside.display(),
        under_writable.display()
    );
    let mut spec = sh(&scratch, "h.log", &script);
    spec.world.read_only.push(shown.clone());
    let id = run.spawn(&spec).expect("spawn");
    let event = events.wait(id, Duration::from_secs(10));
    assert!(matches!(event, Event::Exited { .. }), "{event:?}");
    let log = scratch.read("h.log");
    assert!(!log.contains("SECRET KEY"), "{log}");
    assert!(!log.contains("wrote"), "{log}");
    assert!(log.ends_with("end\n"), "{log}");
    // A world that would show a hidden directory itself cannot be built.
    let mut spec = sh(&scratch, "bad.log", "true");
    spec.world.read_only.push(outside.clone());
    let id = run.spawn(&spec).expect("spawn");
    match events.wait(id, Duration::from_secs(10)) {
        Event::Exited {
            spawn_error: Some(why),
            ..
        } => assert!(why.contains("hidden"), "{why}"),
        other => panic!("{other:?}"),
    }
    drop(run);
    // Outside the run, nothing changed.
    for dir in [&outside, &under_writable] {
        assert_eq!(
            fs_err::read_to_string(dir.join("workspace.key")).expect("read"),
            "SECRET KEY\n"
        );
        assert!(!dir.join("new").exists());
    }
}

// ---------------------------------------------------------------------------------------
// Overlays: each job's own writable layer

/// A store layer (`store/node_modules`) and a sandbox whose `node_modules` already holds a
/// file of its own and one of the same name as the store's; the job's scratch is `scratch`.
fn overlay_world(scratch: &Scratch, job_scratch: &str) -> OverlaySpec {
    let store = scratch.path("store/node_modules");
    let target = scratch.path("sandbox/node_modules");
    fs_err::create_dir_all(store.join("pkg")).expect("mkdir");
    fs_err::create_dir_all(&target).expect("mkdir");
    fs_err::write(store.join("a"), "store\n").expect("write");
    fs_err::write(store.join("pkg/index.js"), "module.exports = 1;\n").expect("write");
    fs_err::write(target.join("a"), "sandbox\n").expect("write");
    fs_err::write(target.join("tracked"), "tracked\n").expect("write");
    OverlaySpec {
        target: target.clone(),
        layers: vec![store.clone(), target],
        scratch: scratch.path(job_scratch),
    }
}

/// A job whose world is the overlay alone (and the system), working in the sandbox.
fn overlay_job(scratch: &Scratch, log: &str, script: &str, overlay: &OverlaySpec) -> JobSpec {
    let mut spec = sh(scratch, log, script);
    spec.cwd = overlay.target.clone();
    spec.world = World {
        overlays: vec![overlay.clone()],
        ..World::default()
    };
    spec
}

/// What a job sees through the overlay and whether its writes (through the overlay, and
/// straight into the store by its own path, which its world does not hold) land.
fn through_the_overlay(store: &Path) -> String {
    format!(
        "cat a tracked pkg/index.js && echo job > a && echo new > n && rm pkg/index.js && cat a n && \
         (echo forged > '{store}/a') 2>/dev/null && echo store-written || echo store-unreachable; \
         (rm '{store}/pkg/index.js') 2>/dev/null && echo store-removed || echo store-kept",
        store = store.display()
    )
}

fn overlays_keep_each_jobs_writes_its_own(run: &Run, scratch: &Scratch) {
    let first = overlay_world(scratch, "job-1");
    let script = through_the_overlay(&first.layers[0]);
    let event = run_to_end(run, &overlay_job(scratch, "o.log", &script, &first));
    assert_eq!(exit_code(&event), Some(0), "{}", scratch.read("o.log"));
    assert_eq!(
        scratch.read("o.log"),
        "store\ntracked\nmodule.exports = 1;\njob\nnew\nstore-unreachable\nstore-kept\n",
        "the first layer wins, the last shows through, writes go to the job's layer"
    );
    // Another job of the run, with a layer of its own, sees none of the first one's writes.
    let second = overlay_world(scratch, "job-2");
    let event = run_to_end(
        run,
        &overlay_job(
            scratch,
            "p.log",
            "cat a; ls pkg | wc -l; test ! -e n && echo no-n",
            &second,
        ),
    );
    assert_eq!(exit_code(&event), Some(0), "{}", scratch.read("p.log"));
    assert_eq!(scratch.read("p.log"), "store\n1\nno-n\n");
    // The store and the sandbox are as they were; the first job's writes are in its layer.
    let store = &first.layers[0];
    assert_eq!(
        fs_err::read_to_string(store.join("a")).expect("read"),
        "store\n"
    );
    assert!(store.join("pkg/index.js").is_file());
    assert_eq!(
        fs_err::read_to_string(first.target.join("a")).expect("read"),
        "sandbox\n"
    );
    assert!(!first.target.join("n").exists());
    assert_eq!(
        fs_err::read_to_string(first.scratch.join("upper/a")).expect("read"),
        "job\n"
    );
    // A job given the first one's layer again sees what it wrote.
    let event = run_to_end(run, &overlay_job(scratch, "q.log", "cat a n", &first));
    assert_eq!(exit_code(&event), Some(0), "{}", scratch.read("q.log"));
    assert_eq!(scratch.read("q.log"), "job\nnew\n");
}

#[test]
fn each_job_writes_into_an_overlay_layer_of_its_own() {
    let scratch = Scratch::new("overlay");
    let run = isolated();
    overlays_keep_each_jobs_writes_its_own(&run, &scratch);
    run.shutdown().expect("shutdown");
}

#[test]
fn each_job_writes_into_an_overlay_layer_of_its_own_in_a_user_namespace() {
    let scratch = Scratch::new("overlay-userns");
    let config = as_nobody(&scratch);
    overlay_world(&scratch, "job-1");
    // `nobody` made the store, as the user who runs proofgraph does: only the world keeps
    // its jobs from writing there.
    let status = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&scratch.dir)
        .status()
        .expect("run chown");
    assert!(status.success());
    let (run, isolation) = Run::start(&config).expect("start as nobody");
    assert_eq!(
        isolation,
        Isolation::Namespaces {
            user_namespace: true
        }
    );
    overlays_keep_each_jobs_writes_its_own(&run, &scratch);
    run.shutdown().expect("shutdown");
}

#[test]
fn an_overlay_it_cannot_name_or_make_is_a_job_that_could_not_start() {
    let scratch = Scratch::new("overlay-refused");
    let spec = overlay_world(&scratch, "job");
    let run = isolated();
    let mut events = Events::new(&run);
    let odd = scratch.path("odd:layer");
    fs_err::create_dir_all(&odd).expect("mkdir");
    for (overlay, expected) in [
        (
            OverlaySpec {
                layers: vec![odd],
                ..spec.clone()
            },
            "cannot be an overlay layer",
        ),
        (
            OverlaySpec {
                layers: vec![scratch.path("absent")],
                ..spec.clone()
            },
            "an overlay layer is missing",
        ),
        (
            OverlaySpec {
                layers: Vec::new(),
                ..spec.clone()
            },
            "has no layer",
        ),
    ] {
        let id = run
            .spawn(&overlay_job(&scratch, "x.log", "true", &overlay))
            .expect("spawn");
        match events.wait(id, Duration::from_secs(10)) {
            Event::Exited {
                spawn_error: Some(why),
                ..
            } => assert!(why.contains(expected), "{why}"),
            other => panic!("{expected}: {other:?}"),
        }
    }
    match run.spawn(&overlay_job(
        &scratch,
        "x.log",
        "true",
        &OverlaySpec {
            target: PathBuf::from("relative"),
            ..spec
        },
    )) {
        Err(SandboxError::InvalidPath { .. }) => {}
        other => panic!("a relative target must be refused before the init: {other:?}"),
    }
    run.shutdown().expect("shutdown");
}

#[test]
fn read_only_paths_can_be_read_and_not_changed_by_jobs() {
    let scratch = Scratch::new("read-only");
    // One under /tmp, one elsewhere: /var/tmp, since the target directory itself may lie
    // under /tmp (a clone there); and a single file.
    let outside = PathBuf::from("/var/tmp").join(format!("read-only-{}", std::process::id()));
    let under_tmp = scratch.path("store/trees");
    for dir in [&outside, &under_tmp] {
        fs_err::create_dir_all(dir).expect("mkdir");
        fs_err::write(dir.join("kept"), "kept\n").expect("write");
    }
    let single = scratch.path("single.txt");
    fs_err::write(&single, "single\n").expect("write");
    let run = isolated();
    let script = format!(
        "for d in '{}' '{}'; do cat \"$d/kept\"; (echo x > \"$d/kept\") 2>/dev/null && echo wrote; (touch \"$d/new\") 2>/dev/null && echo made; (rm \"$d/kept\") 2>/dev/null && echo removed; done; cat '{single}'; (echo x > '{single}') 2>/dev/null && echo wrote-single; echo x > beside && echo beside",
        outside.display(),
        under_tmp.display(),
        single = single.display(),
    );
    let mut spec = sh(&scratch, "r.log", &script);
    spec.cwd = scratch.path("out");
    fs_err::create_dir_all(&spec.cwd).expect("mkdir");
    spec.world = World {
        read_only: vec![
            outside.clone(),
            under_tmp.clone(),
            single.clone(),
            scratch.path("absent"),
        ],
        writable: vec![spec.cwd.clone()],
        ..World::default()
    };
    let event = run_to_end(&run, &spec);
    assert_eq!(exit_code(&event), Some(0), "{}", scratch.read("r.log"));
    assert_eq!(scratch.read("r.log"), "kept\nkept\nsingle\nbeside\n");
    run.shutdown().expect("shutdown");
    for dir in [&outside, &under_tmp] {
        assert_eq!(
            fs_err::read_to_string(dir.join("kept")).expect("read"),
            "kept\n"
        );
        assert!(!dir.join("new").exists());
    }
    assert_eq!(fs_err::read_to_string(&single).expect("read"), "single\n");
    let _ = fs_err::remove_dir_all(&outside);
}

// ---------------------------------------------------------------------------------------
// Recording what a job executes.

fn executed(event: &Event) -> Option<Vec<(String, String)>> {
    match event {
        Event::Exited { executed, .. } => executed.as_ref().map(|r| {
            r.files
                .iter()
                .map(|e| (e.path.display().to_string(), e.digest.clone()))
                .collect()
        }),
        other => panic!("expected an exit, got {other:?}"),
    }
}

fn blake3_hex(path: &Path) -> String {
    blake3::hash(&fs_err::read(path).expect("read"))
        .to_hex()
        .to_string()
}

/// Every program the job's tree executes after its own command is recorded with the digest
/// of what ran — through a shell, `env`, a relative path, `execveat` via a descriptor, a
/// script's `#!` interpreter — and the job's own first exec is not (its caller knows it).
#[test]
fn every_exec_of_a_jobs_tree_is_recorded_with_its_digest() {
    let scratch = Scratch::new("exec-record");
    let script = scratch.path("tool.sh");
    fs_err::write(&script, "#!/bin/sh\nexit 0\n").expect("write");
    fs_err::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let python = python();
    let run = isolated();
    let mut spec = sh(
        &scratch,
        "exec.log",
        &format!(
            "/usr/bin/env true; cd {dir} && ./tool.sh; \
             {py} -c 'import os; fd = os.open(\"/usr/bin/true\", os.O_RDONLY); os.execve(fd, [\"true\"], {{}})'",
            dir = scratch.dir.display(),
            py = python.display()
        ),
    );
    spec.world.read_only.push(scratch.dir.clone());
    let ended = run_to_end(&run, &spec);
    assert_eq!(exit_code(&ended), Some(0), "{}", scratch.read("exec.log"));
    let files = executed(&ended).expect("recorded in a world");
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let real = |p: &str| {
        fs_err::canonicalize(p)
            .expect("exists")
            .display()
            .to_string()
    };
    for wanted in [
        real("/usr/bin/env"),
        real("/usr/bin/true"),
        script.display().to_string(),
        real("/bin/sh"),
        real(&python.display().to_string()),
    ] {
        assert!(paths.contains(&wanted.as_str()), "{wanted} in {paths:?}");
    }
    // A dynamically linked program's loader is recorded too.
    assert!(
        paths.iter().any(|p| p.contains("ld-linux")),
        "the loader in {paths:?}"
    );
    // The digest is of the bytes that ran.
    let (_, digest) = files
        .iter()
        .find(|(p, _)| *p == script.display().to_string())
        .expect("the script");
    assert_eq!(*digest, blake3_hex(&script));
    // The job's own command (`sh -c`, started by the init) is not among them unless the
    // script executed it again: it is the caller's resolved program.
    assert_eq!(
        files.iter().filter(|(p, _)| *p == real("/bin/sh")).count(),
        1,
        "{paths:?}"
    );
    run.shutdown().expect("shutdown");
}

/// A program replaced while the run goes on is recorded as what ran each time.
#[test]
fn a_program_replaced_between_two_execs_is_recorded_twice() {
    let scratch = Scratch::new("exec-replace");
    let tool = scratch.path("tool");
    fs_err::write(&tool, "#!/bin/sh\necho one\n").expect("write");
    fs_err::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let run = isolated();
    let first = blake3_hex(&tool);
    // Run from a shell (a job's own first exec is its caller's to record).
    let mut spec = sh(&scratch, "two.log", &format!("{} && true", tool.display()));
    spec.world.read_only.push(scratch.dir.clone());
    let ended = run_to_end(&run, &spec);
    let one = executed(&ended).expect("recorded");
    fs_err::write(&tool, "#!/bin/sh\necho two\n").expect("write");
    let ended = run_to_end(&run, &spec);
    let two = executed(&ended).expect("recorded");
    let digest_of = |files: &[(String, String)]| {
        files
            .iter()
            .find(|(p, _)| *p == tool.display().to_string())
            .map(|(_, d)| d.clone())
    };
    assert_eq!(digest_of(&one), Some(first));
    assert_eq!(digest_of(&two), Some(blake3_hex(&tool)));
    run.shutdown().expect("shutdown");
}

/// Without a world nothing is recorded, and the event says so (`None`), never an empty list
/// that would read as "ran nothing".
#[test]
fn without_namespaces_nothing_is_claimed_recorded() {
    let scratch = Scratch::new("exec-none");
    let (run, isolation) = start(IsolationRequest::Disabled);
    assert!(!isolation.is_isolated());
    let ended = run_to_end(&run, &sh(&scratch, "none.log", "/usr/bin/env true"));
    assert_eq!(exit_code(&ended), Some(0));
    assert_eq!(executed(&ended), None);
    run.shutdown().expect("shutdown");
}
