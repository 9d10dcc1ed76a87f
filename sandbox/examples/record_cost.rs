//! What recording a job's executions costs (`bench/exec-record.sh` runs it): one command,
//! run in a world `runs` times with recording and `runs` times without, alternating which
//! goes first, each in a fresh run; prints every time, the medians and their ratio.
//!
//! Usage: `record_cost <runs> <dir> <program> [args…]` — `dir` is the job's working
//! directory (writable in its world); `PATH` and `HOME` are the caller's.

#![expect(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proofgraph_sandbox::{
    Event, INIT_ARG, IsolationRequest, JobSpec, Network, Run, RunConfig, World,
};

fn once(record: bool, dir: &Path, argv: &[OsString]) -> (Duration, usize) {
    let config = RunConfig {
        record_executions: record,
        ..RunConfig::current_exe(IsolationRequest::Required)
    };
    let (run, _) = Run::start(&config).expect("start a run (namespaces required)");
    let mut env = vec![];
    for key in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(key) {
            env.push((OsString::from(key), value));
        }
    }
    let log = std::env::temp_dir().join(format!("record-cost-{}.log", std::process::id()));
    let spec = JobSpec {
        program: None,
        argv: argv.to_vec(),
        cwd: dir.to_path_buf(),
        env,
        network: Network::Private,
        timeout: None,
        log: log.clone(),
        redact: Vec::new(),
        limited: false,
        hold_after: false,
        world: World {
            writable: vec![dir.to_path_buf()],
            ..World::default()
        },
    };
    let started = Instant::now();
    let id = run.spawn(&spec).expect("spawn");
    let executed = loop {
        match run.recv_timeout(Duration::from_secs(3600)) {
            Some(Event::Exited {
                job,
                code,
                executed,
                ..
            }) if job == id => {
                assert_eq!(code, Some(0), "the command failed; see {}", log.display());
                break executed.map_or(0, |r| r.files.len());
            }
            Some(Event::InitFailed { reason }) => panic!("the init failed: {reason}"),
            Some(_) => {}
            None => panic!("no end within an hour"),
        }
    };
    let took = started.elapsed();
    run.shutdown().expect("shutdown");
    let _ = fs_err::remove_file(&log);
    (took, executed)
}

fn median(mut all: Vec<Duration>) -> Duration {
    all.sort();
    all[all.len() / 2]
}

fn main() {
    if std::env::args_os().nth(1).is_some_and(|a| a == INIT_ARG) {
        proofgraph_sandbox::init_main();
    }
    let mut args = std::env::args_os().skip(1);
    let runs: usize = args
        .next()
        .and_then(|r| r.to_str().and_then(|r| r.parse().ok()))
        .expect("usage: record_cost <runs> <dir> <program> [args…]");
    let dir = PathBuf::from(args.next().expect("a directory"));
    let argv: Vec<OsString> = args.collect();
    assert!(!argv.is_empty(), "a command");
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let mut files = 0;
    for i in 0..runs {
        for record in if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        } {
            let (took, executed) = once(record, &dir, &argv);
            println!(
                "run {i} {}: {:.2} s{}",
                if record { "recorded  " } else { "unrecorded" },
                took.as_secs_f64(),
                if record {
                    format!(" ({executed} programs)")
                } else {
                    String::new()
                }
            );
            if record {
                files = executed;
                with.push(took);
            } else {
                without.push(took);
            }
        }
    }
    let (w, wo) = (median(with), median(without));
    println!(
        "median recorded {:.2} s, unrecorded {:.2} s: ratio {:.3} ({files} distinct programs recorded)",
        w.as_secs_f64(),
        wo.as_secs_f64(),
        w.as_secs_f64() / wo.as_secs_f64()
    );
}
