//! The test host of the sandbox init, and the reference for how an application hosts it.
//!
//! - `supervise-test-init __sandbox-init` runs [`proofgraph_sandbox::init_main`] (what `Run::start`
//!   executes in the tests).
//! - `supervise-test-init __threaded-init` starts a thread and then calls `init_main`, which
//!   must refuse to run in a multi-threaded process.
//! - `supervise-test-init hold-run <dir> <marker>` starts a run of its own (re-executing
//!   itself as the init), starts a job `sleep <marker>` in it, writes the init's PID to
//!   `<dir>/init.pid` once the job is running, and then waits forever: the parent-death test
//!   kills it with `SIGKILL` and checks that the init and the job die with it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let first = args.next();
    // The init must be entered before anything else happens in the process.
    if first.as_deref() == Some(std::ffi::OsStr::new(proofgraph_sandbox::INIT_ARG)) {
        proofgraph_sandbox::init_main();
    }
    if first.as_deref() == Some(std::ffi::OsStr::new("__threaded-init")) {
        std::thread::spawn(|| std::thread::sleep(Duration::from_secs(60)));
        proofgraph_sandbox::init_main();
    }
    if first.as_deref() == Some(std::ffi::OsStr::new("hold-run"))
        && let (Some(dir), Some(marker)) = (args.next(), args.next())
    {
        hold_run(PathBuf::from(dir), marker);
    }
    std::process::exit(2);
}

fn hold_run(dir: PathBuf, marker: OsString) -> ! {
    let config =
        proofgraph_sandbox::RunConfig::current_exe(proofgraph_sandbox::IsolationRequest::Auto);
    let Ok((run, _isolation)) = proofgraph_sandbox::Run::start(&config) else {
        std::process::exit(3);
    };
    let log = dir.join("hold.log");
    let job = proofgraph_sandbox::JobSpec {
        program: None,
        argv: vec![
            "sh".into(),
            "-c".into(),
            "echo up; exec sleep \"$1\"".into(),
            "sh".into(),
            marker,
        ],
        cwd: PathBuf::from("/"),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        network: proofgraph_sandbox::Network::Private,
        timeout: None,
        log: log.clone(),
        redact: Vec::new(),
        limited: false,
        hold_after: false,
        world: proofgraph_sandbox::World::default(),
    };
    if run.spawn(&job).is_err() {
        std::process::exit(4);
    }
    for _ in 0..500 {
        if fs_err::read_to_string(&log).is_ok_and(|text| text.contains("up")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if fs_err::write(dir.join("init.pid"), run.init_pid().to_string()).is_err() {
        std::process::exit(5);
    }
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}
