//! `proofgraph worker` against a real engine (BuildGrid with execution on its own
//! PostgreSQL, `engine_support.rs`), as two worker processes of the real binary: actions
//! submitted with a small REAPI client come back with their outputs, each executes exactly
//! once across the workers, nothing of the worker's host is reachable from one, and a
//! worker killed or stopped mid-action hands it to the other.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use prost::Message as _;

use crate::engine_support::{Engine, client};
use crate::remote_support::runtime;
use crate::support::{
    Sandbox, assert_codes, assert_no_process_marked, processes_marked, unique_marker,
};

/// A `proofgraph worker` process with a home of its own, its stderr (the log) in a file.
pub(crate) struct WorkerProcess {
    bot_id: String,
    child: Option<Child>,
    log: PathBuf,
    sb: Sandbox,
}

impl WorkerProcess {
    pub(crate) fn start(engine: &Engine, bot_id: &str, capacity: usize) -> Self {
        let sb = Sandbox::new();
        let log = sb.path().join("worker.log");
        let out = fs_err::File::create(&log).expect("the worker's log");
        let child = sb
            .proofgraph(&sb.work())
            .args(["worker", "--server", &engine.address, "--instance", "main"])
            .args(["--bot-id", bot_id, "--capacity", &capacity.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::from(out.into_parts().0))
            .spawn()
            .expect("start the worker");
        let worker = WorkerProcess {
            bot_id: bot_id.to_owned(),
            child: Some(child),
            log,
            sb,
        };
        worker.wait_for("session ", Duration::from_secs(60));
        worker
    }

    pub(crate) fn log(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log holds `text`.
    #[track_caller]
    fn wait_for(&self, text: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.log().contains(text) {
            assert!(
                Instant::now() < deadline,
                "the worker {} never logged {text:?}; its log:\n{}",
                self.bot_id,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn signal(&self, signal: rustix::process::Signal) {
        let child = self.child.as_ref().expect("running");
        let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("a pid"))
            .expect("a pid");
        rustix::process::kill_process(pid, signal).expect("signal the worker");
    }

    /// Waits for it to exit: its exit code.
    fn wait(&mut self, within: Duration) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait().expect("poll the worker") {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the worker did not exit in {within:?}; its log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The worker that ran it, and its exit code, from the result.
fn ran_by(response: &reapi::ExecuteResponse) -> (&str, i32) {
    let result = response.result.as_ref().expect("a result");
    let worker = result
        .execution_metadata
        .as_ref()
        .map_or("", |m| m.worker.as_str());
    (worker, result.exit_code)
}

/// Starts an action that sleeps `secs`, then writes its one output `out`, its command line
/// carrying `marker`; returns once `worker` executes it and its command runs: the
/// operation's stream.
#[track_caller]
fn start_running(
    rt: &tokio::runtime::Runtime,
    channel: &tonic::transport::Channel,
    worker: &WorkerProcess,
    marker: &str,
    secs: u32,
) -> tonic::Streaming<bazel_remote_apis::google::longrunning::Operation> {
    let mut spec = client::Spec::new(&[
        "/bin/sh",
        "-c",
        &format!("sleep {secs}; echo finished > out; : {marker}"),
    ]);
    spec.outputs = vec!["out".into()];
    let (action, blobs) = client::action(&spec);
    let stream = rt.block_on(async {
        client::upload(channel, blobs).await;
        client::start(channel, &action).await.1
    });
    worker.wait_for(": executing", Duration::from_secs(60));
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_marked(marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the action's command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    stream
}

/// Outputs, stdout and stderr come back through CAS, each action executes exactly once
/// across two workers, and the result names the worker.
#[test]
fn two_workers_run_each_action_once_and_return_its_outputs() {
    let engine = Engine::start();
    let a = WorkerProcess::start(&engine, "worker-a", 2);
    let b = WorkerProcess::start(&engine, "worker-b", 2);
    let rt = runtime();
    const N: usize = 8;
    let responses = rt.block_on(async {
        let channel = client::connect(engine.port).await;
        let mut started = Vec::new();
        for i in 0..N {
            let mut spec = client::Spec::new(&[
                "/bin/sh",
                "-c",
                "sleep 1; mkdir -p out/deep; tr a-z A-Z < in/text > out/upper; cp tool out/deep/; echo stdout-$0; echo stderr-$0 >&2; exit 3",
            ]);
            spec.argv.push(i.to_string());
            spec.files = vec![
                ("in/text".into(), format!("hello {i}").into_bytes(), false),
                ("tool".into(), b"#!/bin/sh\n".to_vec(), true),
            ];
            spec.outputs = vec!["out/upper".into(), "out/deep".into(), "absent".into()];
            let (action, blobs) = client::action(&spec);
            client::upload(&channel, blobs).await;
            started.push(client::start(&channel, &action).await.1);
        }
        let mut responses = Vec::new();
        for stream in started {
            responses.push(client::finish(stream).await);
        }
        for (i, response) in responses.iter().enumerate() {
            let status = response.status.as_ref().map_or(0, |s| s.code);
            assert_eq!(status, 0, "{response:?}");
            let result = response.result.as_ref().expect("a result");
            assert_eq!(result.exit_code, 3);
            let stdout = client::read(&channel, result.stdout_digest.as_ref().expect("stdout")).await;
            assert_eq!(stdout, format!("stdout-{i}\n").as_bytes());
            let stderr = client::read(&channel, result.stderr_digest.as_ref().expect("stderr")).await;
            assert_eq!(stderr, format!("stderr-{i}\n").as_bytes());
            assert_eq!(result.output_files.len(), 1, "{result:?}");
            let upper = &result.output_files[0];
            assert_eq!(upper.path, "out/upper");
            assert!(!upper.is_executable);
            let text = client::read(&channel, upper.digest.as_ref().expect("a digest")).await;
            assert_eq!(text, format!("HELLO {i}").as_bytes());
            assert_eq!(result.output_directories.len(), 1);
            let tree = client::read(
                &channel,
                result.output_directories[0].tree_digest.as_ref().expect("a tree"),
            )
            .await;
            let tree = reapi::Tree::decode(tree.as_slice()).expect("a Tree");
            let root = tree.root.expect("a root");
            assert_eq!(root.files[0].name, "tool");
            assert!(root.files[0].is_executable, "the executable bit travels");
        }
        responses
    });
    let mut by = std::collections::BTreeMap::<String, usize>::new();
    for response in &responses {
        *by.entry(ran_by(response).0.to_owned()).or_default() += 1;
    }
    assert_eq!(by.values().sum::<usize>(), N);
    assert!(
        by.keys().all(|w| w == "worker-a" || w == "worker-b") && by.len() == 2,
        "both workers ran actions: {by:?}"
    );
    // Exactly once: the workers' logs hold N executions between them, no more.
    let done = |w: &WorkerProcess| w.log().matches(": done, exit code 3").count();
    assert_eq!(done(&a) + done(&b), N, "{}\n{}", a.log(), b.log());
    assert_eq!(done(&a), by["worker-a"]);
}

/// An action reaches no port listening on the worker's host, reads nothing outside its
/// input root, and leaves no process behind.
#[test]
fn an_action_sees_only_its_input_root_and_leaves_nothing_running() {
    let engine = Engine::start();
    let worker = WorkerProcess::start(&engine, "isolated", 2);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("an address").port();
    let canary = unique_marker("worker-canary");
    let secret = worker.sb.home().join("secret.txt");
    fs_err::write(&secret, &canary).expect("write the canary");
    let marker = unique_marker("worker-bg");
    let rt = runtime();
    rt.block_on(async {
        let channel = client::connect(engine.port).await;
        let script = format!(
            "if echo hi > /dev/tcp/127.0.0.1/{port}; then echo reached; fi; \
             cat {secret} /root/.bashrc 2>&1; ls / ; \
             /bin/sh -c 'sleep 300; : {marker}' & echo forked",
            secret = secret.display()
        );
        let response =
            client::execute(&channel, &client::Spec::new(&["/bin/bash", "-c", &script])).await;
        let result = response.result.as_ref().expect("a result");
        let stdout = client::read(&channel, result.stdout_digest.as_ref().expect("stdout")).await;
        let stdout = String::from_utf8_lossy(&stdout);
        assert!(stdout.contains("forked"), "{stdout}");
        assert!(
            !stdout.contains("reached"),
            "a host port was reached: {stdout}"
        );
        assert!(
            !stdout.contains(&canary),
            "a file of the worker's home was read: {stdout}"
        );
        assert!(stdout.contains("No such file"), "{stdout}");
        assert!(
            !stdout.lines().any(|l| l == "root"),
            "/root is not in its world: {stdout}"
        );
    });
    assert!(
        matches!(listener.accept(), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the host's listener was connected to"
    );
    // The background process died with the action.
    assert_no_process_marked(&marker);
    drop(worker);
}

/// A worker killed with SIGKILL mid-action: its action dies with it, the engine gives
/// the job to the other worker after the session's keepalive, and it completes there.
#[test]
fn a_worker_killed_mid_action_hands_it_to_the_other() {
    let engine = Engine::start();
    let mut first = WorkerProcess::start(&engine, "doomed", 1);
    let marker = unique_marker("worker-kill");
    let rt = runtime();
    let channel = rt.block_on(client::connect(engine.port));
    let stream = start_running(&rt, &channel, &first, &marker, 4);
    first.signal(rustix::process::Signal::KILL);
    first.wait(Duration::from_secs(10));
    // Its action died with it (the sandbox's init has a parent-death signal).
    assert_no_process_marked(&marker);
    let second = WorkerProcess::start(&engine, "heir", 1);
    let response = rt.block_on(client::finish(stream));
    assert_eq!(ran_by(&response), ("heir", 0), "{response:?}");
    let out = &response.result.as_ref().expect("a result").output_files[0];
    let text = rt.block_on(client::read(
        &channel,
        out.digest.as_ref().expect("a digest"),
    ));
    assert_eq!(text, b"finished\n");
    assert!(
        second.log().contains(": done, exit code 0"),
        "{}",
        second.log()
    );
}

/// SIGTERM: the worker says BOT_TERMINATING, kills its running action's processes, hands
/// it back (the engine runs it on the other worker) and exits 0.
#[test]
fn sigterm_terminates_the_session_and_kills_the_running_action() {
    let engine = Engine::start();
    let mut first = WorkerProcess::start(&engine, "leaving", 1);
    let marker = unique_marker("worker-term");
    let rt = runtime();
    let channel = rt.block_on(client::connect(engine.port));
    let stream = start_running(&rt, &channel, &first, &marker, 3);
    first.signal(rustix::process::Signal::TERM);
    assert_eq!(
        first.wait(Duration::from_secs(20)),
        Some(0),
        "{}",
        first.log()
    );
    assert!(first.log().contains("BOT_TERMINATING"), "{}", first.log());
    assert!(first.log().contains(": cancelled") || first.log().contains("stopping"));
    // Nothing of its action is left, at once.
    assert!(
        processes_marked(&marker).is_empty(),
        "{:?}",
        processes_marked(&marker)
    );
    let second = WorkerProcess::start(&engine, "stays", 1);
    let response = rt.block_on(client::finish(stream));
    assert_eq!(ran_by(&response), ("stays", 0), "{response:?}");
    drop(second);
}

/// An address that is not gRPC is refused before anything is contacted.
#[test]
fn a_worker_refuses_an_address_that_is_not_grpc() {
    let sb = Sandbox::new();
    let run = sb.run(
        &sb.work(),
        &["worker", "--server", "http://127.0.0.1:1", "--json"],
    );
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["worker_unusable"]);
    let run = sb.run(
        &sb.work(),
        &[
            "worker",
            "--server",
            "grpc://127.0.0.1:1",
            "--property",
            "x",
            "--json",
        ],
    );
    assert_codes!(run.status_codes(), ["worker_unusable"]);
}

/// Debian's Bazel, a real Remote Execution API client, builds a `genrule` on the engine and
/// `proofgraph worker` executes it: `scripts/bazel-interop.sh` checks that the action ran
/// remotely (`1 remote`), that its output is right, and that the build after `bazel clean`
/// is a remote cache hit; the worker's log shows it ran the action, once.
#[test]
fn bazel_builds_a_genrule_that_the_worker_executes() {
    let engine = Engine::start();
    let worker = WorkerProcess::start(&engine, "worker-bazel", 1);
    let scratch = tempfile::tempdir().expect("a scratch directory");
    // `timeout`: Bazel 4.2.3 waits forever for an action no worker takes.
    let out = std::process::Command::new("timeout")
        .args(["--kill-after=10", "300"])
        .arg(crate::support::repo_root().join("scripts/bazel-interop.sh"))
        .arg(&engine.url)
        .env("TMPDIR", scratch.path())
        .env("HOME", scratch.path())
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/bazel-interop.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bazel-interop failed ({:?}):\n{stdout}\n{stderr}\nworker:\n{}\nengine:\n{}",
        out.status,
        worker.log(),
        engine.log()
    );
    assert!(stdout.contains("1 remote"), "{stdout}");
    assert!(stdout.contains("remote cache hit"), "{stdout}");
    assert_eq!(
        worker.log().matches(": done, exit code 0").count(),
        1,
        "the worker ran Bazel's one action, once:\n{}",
        worker.log()
    );
}
