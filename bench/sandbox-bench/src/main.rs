//! Times proofgraph's worktree sandbox exactly as `prove` makes one (see
//! `src/world.rs` `observe` and `src/execute.rs` `sandboxes`): a snapshot of
//! the repository's tracked files through the git index (`inputs::snapshot`,
//! excluding the change packets under `openspec/changes/`), then every file
//! copied into a fresh directory and checked against the snapshot in the same
//! pass (`Snapshot::materialize`, on as many threads as the machine has CPUs).
//!
//! ```text
//! sandbox-bench materialize <repo> <dest>   one snapshot + materialize (timed from outside, by hyperfine);
//!                                           prints the in-process split on stderr
//! sandbox-bench phases <repo> <n> [<patterns-per-package-dir>]
//!                                           in-process medians of the phases of a no-op prove's observation:
//!                                           the snapshot, and matching `pkgNN/**` globs (and literal `pkgNN`)
//!                                           against it, for every top-level directory pkgNN
//! sandbox-bench jobs <n> <jobs> <log-dir> [none]
//!                                           the sandbox layer alone, as `prove` uses it: one run (namespaces,
//!                                           or none), n jobs `sh -c "exit 0 # K"`, `jobs` at a time, each
//!                                           started as soon as one ends; no graph, receipts or store
//! ```

use std::num::NonZeroUsize;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use proofgraph::observe::inputs::{self, Pattern, Snapshot};
use proofgraph_sandbox::{
    Event, IsolationRequest, JobSpec, Network, Run, RunConfig, World, materialize,
};

type Error = Box<dyn std::error::Error>;

/// As `world::observe` excludes change packets when the OpenSpec root is the repository.
fn take_snapshot(repo: &Path) -> Result<Snapshot, Error> {
    Ok(inputs::snapshot(repo, &["openspec/changes/".to_owned()])?)
}

/// As `execute::sandboxes` materialises a worktree sandbox: every file checked against
/// the snapshot's identity as it is copied.
fn materialize_snapshot(
    snapshot: &Snapshot,
    dest: &Path,
) -> Result<materialize::Materialized, Error> {
    let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
    Ok(snapshot.materialize(dest, threads)?)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn run() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("materialize") if args.len() == 4 => {
            let t0 = Instant::now();
            let snapshot = take_snapshot(Path::new(&args[2]))?;
            let t1 = Instant::now();
            let m = materialize_snapshot(&snapshot, Path::new(&args[3]))?;
            let t2 = Instant::now();
            eprintln!(
                "snapshot {} ({} files, {} rehashed), materialize {} ({} files, {} bytes)",
                ms(t1 - t0),
                snapshot.files.len(),
                snapshot.rehashed,
                ms(t2 - t1),
                m.files,
                m.bytes
            );
            Ok(())
        }
        Some("phases") if args.len() == 4 => {
            let repo = Path::new(&args[2]);
            let n: usize = args[3].parse()?;
            let mut snap_times = Vec::new();
            let mut snapshot = take_snapshot(repo)?;
            for _ in 0..n {
                let t = Instant::now();
                snapshot = take_snapshot(repo)?;
                snap_times.push(t.elapsed());
            }
            let mut dirs: Vec<String> = snapshot
                .files
                .iter()
                .filter_map(|f| f.path.split_once('/').map(|(d, _)| d.to_owned()))
                .filter(|d| d.starts_with("pkg"))
                .collect();
            dirs.dedup();
            let time_patterns = |patterns: &[Pattern]| -> Result<(Vec<Duration>, usize), Error> {
                let mut times = Vec::new();
                let mut selected = 0;
                for _ in 0..n {
                    let t = Instant::now();
                    selected = 0;
                    for p in patterns {
                        selected += snapshot.files.iter().filter(|f| p.matches(&f.path)).count();
                    }
                    times.push(t.elapsed());
                }
                Ok((times, selected))
            };
            let globs: Vec<Pattern> = dirs
                .iter()
                .map(|d| Pattern::new(&format!("{d}/**")).ok_or("bad glob"))
                .collect::<Result<_, _>>()?;
            let literals: Vec<Pattern> = dirs
                .iter()
                .map(|d| Pattern::new(d).ok_or("bad literal"))
                .collect::<Result<_, _>>()?;
            let (g, gsel) = time_patterns(&globs)?;
            let (l, lsel) = time_patterns(&literals)?;
            let show = |label: &str, v: Vec<Duration>| {
                let (med, min, max) = median(v);
                println!("{label:58} median {:>10}  min {:>10}  max {:>10}", ms(med), ms(min), ms(max));
            };
            println!(
                "{} tracked files, {} rehashed, {} package directories, {n} iterations each",
                snapshot.files.len(),
                snapshot.rehashed,
                dirs.len()
            );
            show("inputs::snapshot (index + one lstat per file)", snap_times);
            show(&format!("{} globs `pkgNN/**` x every file ({gsel} selected)", globs.len()), g);
            show(&format!("{} literals `pkgNN` x every file ({lsel} selected)", literals.len()), l);
            Ok(())
        }
        Some("jobs") if args.len() == 5 || args.len() == 6 => {
            let n: usize = args[2].parse()?;
            let jobs: usize = args[3].parse()?;
            let isolation = match args.get(5).map(String::as_str) {
                None => IsolationRequest::Auto,
                Some("none") => IsolationRequest::Disabled,
                Some(other) => return Err(format!("unknown isolation `{other}`").into()),
            };
            run_jobs(n, jobs, Path::new(&args[4]), isolation)
        }
        _ => Err(
            "usage: sandbox-bench materialize <repo> <dest> | phases <repo> <n> | jobs <n> <jobs> <log-dir> [none]"
                .into(),
        ),
    }
}

/// `n` trivial jobs through one run, `jobs` at a time: what `prove` costs without its own
/// loop, graph, receipts and store. As `prove` does, the run holds `jobs` slots and twice
/// as many jobs are handed to it, so the next one waits there. Fails unless every job
/// exits 0.
fn run_jobs(n: usize, jobs: usize, logs: &Path, isolation: IsolationRequest) -> Result<(), Error> {
    std::fs::create_dir_all(logs)?;
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let spec = |k: usize| JobSpec {
        program: None,
        argv: vec!["sh".into(), "-c".into(), format!("exit 0 # {k}").into()],
        cwd: logs.to_path_buf(),
        env: vec![("PATH".into(), path.clone())],
        network: Network::Private,
        timeout: None,
        log: logs.join(format!("{k}.log")),
        redact: Vec::new(),
        limited: true,
        hold_after: false,
        // The job's world: the system's directories and its working directory, as a
        // provider's holds its repository.
        world: World {
            writable: vec![logs.to_path_buf()],
            ..World::default()
        },
    };
    let slots = std::num::NonZeroUsize::new(jobs.max(1)).ok_or("no slot")?;
    let config = RunConfig {
        job_limit: Some(slots),
        ..RunConfig::current_exe(isolation)
    };
    let (run, actual) = Run::start(&config)?;
    let mut started = 0;
    while started < n.min(2 * slots.get()) {
        started += 1;
        run.spawn(&spec(started))?;
    }
    let mut ended = 0;
    while ended < n {
        match run.events().recv()? {
            Event::Exited { code: Some(0), .. } => ended += 1,
            other => return Err(format!("a job did not exit 0: {other:?}").into()),
        }
        if started < n {
            started += 1;
            run.spawn(&spec(started))?;
        }
    }
    run.shutdown()?;
    eprintln!("{n} jobs exited 0 ({actual:?})");
    Ok(())
}

fn main() -> ExitCode {
    // `Run::start` re-executes this binary as the run's init.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == proofgraph_sandbox::INIT_ARG)
    {
        proofgraph_sandbox::init_main();
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sandbox-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
