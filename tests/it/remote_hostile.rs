//! A hostile remote cache can neither exhaust memory nor hold a run (issue 28): against a
//! Remote Execution API server and a Bazel HTTP cache that lie about sizes, stream without
//! end, trickle a byte a second or inject lines (tests/it/hostile_support.rs), `prove` keeps
//! its memory under 100 MB, gives up on the remote within its overall deadline, ends at
//! once with exit 130 and one document on SIGTERM, and runs every provider it could not
//! reuse. Both protocols keep one rule.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::hostile_support::{Fault, HostileHttp, HostileReapi, State, Target};
use crate::remote_http::{CHANGE, CI, ci_key, clone, install, origin, prove, runs, summary};
use crate::support::{Captured, Run, Sandbox, assert_emits, emitted, free_port, git_commit_all};

/// The most memory a `prove` may hold, whatever the server sends.
const PEAK_LIMIT_KIB: u64 = 100 * 1024;

/// The deadlines every test catalog sets: a connection in 1 s, a request (a chunk) in 3 s.
const DEADLINES: &str = "  connectTimeoutMs: 1000\n  timeoutMs: 3000\n";

/// A run of proofgraph, with the most memory it held and how long it took.
struct Measured {
    run: Run,
    /// Its peak resident set (`VmHWM`), in KiB, as last read before it exited.
    peak_kib: u64,
    took: Duration,
    /// From the signal to its exit, when it was sent one.
    after_signal: Option<Duration>,
}

/// `VmHWM` of `pid`, in KiB (`None` once it has exited).
fn high_water(pid: u32) -> Option<u64> {
    let status = fs_err::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs proofgraph with `args` from `cwd`, reading its peak memory every 10 ms; when
/// `signal_when` says so, sends it SIGTERM. Fails the test past `limit` (killing it).
fn measured(
    sb: &Sandbox,
    cwd: &Path,
    args: &[&str],
    limit: Duration,
    signal_when: Option<&dyn Fn() -> bool>,
) -> Measured {
    let Captured { mut child, output } = Captured::spawn(sb.proofgraph(cwd).args(args));
    let pid = child.id();
    let started = Instant::now();
    let mut peak_kib = 0;
    let mut signalled: Option<Instant> = None;
    let status = loop {
        if let Some(kib) = high_water(pid) {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait for proofgraph") {
            break status;
        }
        if signalled.is_none() && signal_when.is_some_and(|f| f()) {
            let pid =
                rustix::process::Pid::from_raw(i32::try_from(pid).expect("a pid")).expect("a pid");
            rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
            signalled = Some(Instant::now());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`proofgraph {}` did not finish within {limit:?} (peak {peak_kib} KiB); it was killed",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    let after_signal = signalled.map(|at| at.elapsed());
    Measured {
        run: output.into_run(status),
        peak_kib,
        took,
        after_signal,
    }
}

/// The origin with `url` as its remote (and `extra` catalog lines), each provider printing
/// a line (so its log, an artifact, is not empty), and a CI clone that proved the three
/// and pushed them while the server was honest.
fn pushed_by_ci(sb: &Sandbox, url: &str, extra: &str) {
    pushed_by_ci_with(sb, url, &format!("{DEADLINES}{extra}"));
}

/// [`pushed_by_ci`] with `cache` lines of the test's own instead of [`DEADLINES`].
fn pushed_by_ci_with(sb: &Sandbox, url: &str, cache: &str) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {url}\n{cache}"), &trusted);
    let execution = "openspec/changes/share/execution.yaml";
    let text = fs_err::read_to_string(sb.work().join(execution)).expect("the wiring");
    sb.write(
        execution,
        text.replace("\"echo ", "\"echo a log line; echo "),
    );
    git_commit_all(&sb.work());
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let run = prove(sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary(&run, "pushed"), 3, "{}", run.stdout);
    assert_eq!(runs(sb), 3);
}

/// How many times `code` is in the run's status.
fn count(run: &Run, code: &str) -> usize {
    run.status_codes().iter().filter(|c| *c == code).count()
}

/// A laptop's `prove --json` against the server in its fault: it must end with exit 0 by
/// running every provider (nothing pulled), under the memory limit, within `within`.
fn laptop_runs_everything(
    sb: &Sandbox,
    state: &State,
    name: &str,
    fault: Fault,
    within: Duration,
) -> Measured {
    state.set(fault.clone());
    let before = runs(sb);
    let laptop = clone(sb, name);
    let m = measured(
        sb,
        &laptop,
        &["prove", CHANGE, "--json"],
        Duration::from_secs(120),
        None,
    );
    let what = format!(
        "{fault:?}: exit {:?} in {:?}, peak {} KiB\n{}\n{}",
        m.run.code, m.took, m.peak_kib, m.run.stdout, m.run.stderr
    );
    assert_eq!(m.run.code, Some(0), "{what}");
    assert_eq!(summary(&m.run, "pulled"), 0, "nothing is kept: {what}");
    assert_eq!(runs(sb), before + 3, "every provider ran: {what}");
    assert!(m.peak_kib < PEAK_LIMIT_KIB, "memory: {what}");
    assert!(m.took < within, "time: {what}");
    m
}

/// The scenario of the declared sizes, against any server: 2^62 and 512 MiB on the
/// envelope, the input listing and an artifact. The envelope is refused before a byte
/// of it is asked for; the listing and the artifact are read under the size the signed
/// receipt records, so the endless stream is cut there.
fn declared_sizes(sb: &Sandbox, state: &State) {
    let mut i = 0;
    for size in [1i64 << 62, 512 << 20] {
        for target in Target::ALL {
            i += 1;
            let attacks = state.attacks.load(Ordering::SeqCst);
            let m = laptop_runs_everything(
                sb,
                state,
                &format!("laptop-{i}"),
                Fault::Declared(target, size),
                Duration::from_secs(60),
            );
            assert_emits!(
                m.run.status_codes(),
                "remote_cache_corrupt",
                "{target:?} {size}: {}",
                m.run.stdout
            );
            let read = state.attacks.load(Ordering::SeqCst) - attacks;
            if target == Target::Envelope {
                assert_eq!(
                    read, 0,
                    "the envelope is refused before a byte of it is read"
                );
            } else {
                assert!(
                    read > 0,
                    "{target:?}: the endless blob was asked for and cut"
                );
            }
        }
    }
}

/// The scenario of the trickles, against any server: one byte a second on the envelope,
/// the listing or an artifact is given up at the overall deadline (1 s to connect, 3 s, the
/// bytes at 1 MiB/s), long before the trickle would end, and the remote is down for the run.
fn trickles(sb: &Sandbox, state: &State) {
    for (i, target) in Target::ALL.into_iter().enumerate() {
        let attacks = state.attacks.load(Ordering::SeqCst);
        let m = laptop_runs_everything(
            sb,
            state,
            &format!("trickle-{i}"),
            Fault::Trickle(target),
            Duration::from_secs(40),
        );
        assert!(
            state.attacks.load(Ordering::SeqCst) > attacks,
            "{target:?} trickled"
        );
        assert_eq!(
            count(&m.run, "remote_cache_unavailable"),
            1,
            "{}",
            m.run.stdout
        );
        assert!(
            m.run.stdout.contains("was not done within"),
            "the overall deadline: {}",
            m.run.stdout
        );
    }
}

/// The deadlines of [`sigterm_during_a_trickle`]'s origin: a minute per chunk, so that
/// nothing but the signal ends the trickle.
const LONG: &str = "  connectTimeoutMs: 1000\n  timeoutMs: 60000\n";

/// SIGTERM while the envelope trickles in (with [`LONG`] deadlines): `prove` and `status`
/// end within a second, exit 130, one document.
fn sigterm_during_a_trickle(sb: &Sandbox, state: &State) {
    state.set(Fault::Trickle(Target::Envelope));
    for (i, command) in ["prove", "status"].into_iter().enumerate() {
        let laptop = clone(sb, &format!("signalled-{i}"));
        let attacks = state.attacks.load(Ordering::SeqCst);
        let trickling_since: std::cell::Cell<Option<Instant>> = std::cell::Cell::new(None);
        let when = || {
            if state.attacks.load(Ordering::SeqCst) == attacks {
                return false;
            }
            let since = trickling_since.get().unwrap_or_else(Instant::now);
            trickling_since.set(Some(since));
            since.elapsed() > Duration::from_millis(500)
        };
        let m = measured(
            sb,
            &laptop,
            &[command, CHANGE, "--json"],
            Duration::from_secs(60),
            Some(&when),
        );
        let after = m.after_signal.unwrap_or_else(|| {
            panic!(
                "{command} ended before it was signalled: exit {:?}\n{}\n{}",
                m.run.code, m.run.stdout, m.run.stderr
            )
        });
        let what = format!(
            "{command}: exit {:?} {after:?} after SIGTERM\n{}\n{}",
            m.run.code, m.run.stdout, m.run.stderr
        );
        assert_eq!(m.run.code, Some(130), "{what}");
        assert!(after < Duration::from_secs(1), "{what}");
        let documents = serde_json::Deserializer::from_str(&m.run.stdout)
            .into_iter::<serde_json::Value>()
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("{e}: {what}"));
        assert_eq!(documents.len(), 1, "one document: {what}");
        assert_emits!(m.run.status_codes(), "interrupted");
        assert!(m.peak_kib < PEAK_LIMIT_KIB, "{what}");
    }
}

#[test]
fn reapi_a_declared_size_past_every_cap_costs_a_warning_never_memory() {
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    pushed_by_ci(&sb, &server.url, "");
    declared_sizes(&sb, &server.state);
}

#[test]
fn reapi_a_trickle_is_given_up_at_the_overall_deadline() {
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    pushed_by_ci(&sb, &server.url, "");
    trickles(&sb, &server.state);
}

#[test]
fn reapi_sigterm_during_a_trickling_pull_ends_prove_and_status_at_once() {
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    pushed_by_ci_with(&sb, &server.url, LONG);
    sigterm_during_a_trickle(&sb, &server.state);
}

#[test]
fn http_a_declared_size_past_every_cap_costs_a_warning_never_memory() {
    let sb = Sandbox::new();
    let server = HostileHttp::start();
    pushed_by_ci(&sb, &server.url, "");
    declared_sizes(&sb, &server.state);
}

#[test]
fn http_a_trickle_is_given_up_at_the_overall_deadline() {
    let sb = Sandbox::new();
    let server = HostileHttp::start();
    pushed_by_ci(&sb, &server.url, "");
    trickles(&sb, &server.state);
}

#[test]
fn http_sigterm_during_a_trickling_pull_ends_prove_and_status_at_once() {
    let sb = Sandbox::new();
    let server = HostileHttp::start();
    pushed_by_ci_with(&sb, &server.url, LONG);
    sigterm_during_a_trickle(&sb, &server.state);
}

#[test]
fn a_slower_rate_allowed_waits_longer_for_a_trickle() {
    // `cache.minBytesPerSecond` is the rate: at 256 bytes a second, the ~4 KiB envelope
    // is given ~15 s more than the deadlines, so a byte-a-second trickle is cut later.
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    pushed_by_ci(&sb, &server.url, "  minBytesPerSecond: 256\n");
    server.state.set(Fault::Trickle(Target::Envelope));
    let laptop = clone(&sb, "slow");
    let m = measured(
        &sb,
        &laptop,
        &["prove", CHANGE, "--json"],
        Duration::from_secs(120),
        None,
    );
    assert_eq!(m.run.code, Some(0), "{}", m.run.stdout);
    assert_emits!(m.run.status_codes(), "remote_cache_unavailable");
    assert!(m.took > Duration::from_secs(10), "took {:?}", m.took);
}

#[test]
fn a_cache_that_takes_no_updates_gets_no_update_call_and_one_warning() {
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    server.state.read_only.store(true, Ordering::SeqCst);
    let (secret, trusted) = ci_key(&sb);
    origin(
        &sb,
        &format!("  remote: {}\n{DEADLINES}", server.url),
        &trusted,
    );
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let run = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(runs(&sb), 3);
    assert_eq!(
        server.state.updates.load(Ordering::SeqCst),
        0,
        "no UpdateActionResult"
    );
    assert_emits!(run.status_codes(), "remote_cache_read_only");
    assert_eq!(count(&run, "remote_cache_read_only"), 1, "{}", run.stdout);
    assert_eq!(count(&run, "remote_upload_failed"), 0, "{}", run.stdout);
    assert_eq!(summary(&run, "pushed"), 0);
}

#[test]
fn a_remote_down_before_the_run_is_reported_once_not_by_pull_and_push() {
    let sb = Sandbox::new();
    let (secret, trusted) = ci_key(&sb);
    let port = free_port();
    origin(
        &sb,
        &format!("  remote: grpc://127.0.0.1:{port}/main\n{DEADLINES}"),
        &trusted,
    );
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let run = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(count(&run, "remote_cache_unavailable"), 1, "{}", run.stdout);
    assert_eq!(summary(&run, "push_failed"), 3, "{}", run.stdout);
}

#[test]
fn a_server_message_cannot_add_a_line_to_the_human_output() {
    let injected = "passed unit (injected)";
    for http in [false, true] {
        let sb = Sandbox::new();
        let (url, state) = crate::hostile_support::start_either(http);
        pushed_by_ci(&sb, &url, "");
        state.set(Fault::Message(format!(
            "the cache is down\n{injected}\r\n\u{1b}[2J\u{7}"
        )));
        let laptop = clone(&sb, "laptop");
        let human = sb.run(&laptop, &["prove", CHANGE]);
        assert_eq!(human.code, Some(0), "{}", human.stderr);
        let all = format!("{}{}", human.stdout, human.stderr);
        assert!(
            all.lines().all(|l| !l.trim_start().starts_with(injected)),
            "a line of the server's: {all}"
        );
        assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all:?}");
        if !http {
            // HTTP shows the status, never the body; gRPC quotes the message, escaped.
            assert!(all.contains(&format!("\\n{injected}\\r\\n")), "{all}");
        }
        let json = sb.run(&clone(&sb, "json"), &["prove", CHANGE, "--json"]);
        assert_emits!(json.status_codes(), "remote_cache_unavailable");
    }
}

#[test]
fn validate_refuses_dot_segments_and_names_a_character_an_instance_cannot_hold() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    let dot = emitted("remote_instance_dot_segment");
    let invalid = emitted("invalid_value");
    for (instance, code, said) in [
        ("/a/..", dot, "dot segment `..`"),
        ("/..", dot, "dot segment `..`"),
        ("/.", dot, "dot segment `.`"),
        ("/%2e%2e", dot, "dot segment `%2e%2e`"),
        ("/a/../main", dot, "dot segment `..`"),
        ("/a/./b", dot, "dot segment `.`"),
        ("/\u{2026}", invalid, "the character `\u{2026}` (U+2026)"),
        ("/a b", invalid, "the character ` ` (U+0020)"),
    ] {
        sb.write(
            "proofgraph.yaml",
            format!("version: 1\ncache:\n  remote: \"grpc://127.0.0.1:9092{instance}\"\n"),
        );
        let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
        let doc = run.json();
        let text = doc.to_string();
        assert_ne!(run.code, Some(0), "{instance}: {text}");
        assert_eq!(doc["items"][0]["valid"], false, "{instance}: {text}");
        assert!(text.contains(said), "{instance}: {text}");
        assert!(!text.contains("percent escape"), "{instance}: {text}");
        let mut found = crate::support::issue_codes(&doc);
        found.extend(crate::support::codes(&doc["status"]));
        assert_emits!(found, code, "{instance}: {text}");
    }
}
