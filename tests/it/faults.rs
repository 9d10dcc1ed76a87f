//! Faults: `prove` killed with SIGKILL at random moments, and interrupted
//! with SIGINT. The store stays usable, no pass is ever reported that was not
//! observed, and no process of a killed run survives.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Sandbox, assert_emits, git_commit_all};

/// A workspace whose providers take a while, log their completion (with the
/// run id) outside the store, and carry a marker in their command line.
fn slow_workspace(sb: &Sandbox, marker: &str) {
    sb.openspec_root("");
    let mut providers = String::from("version: 1\nproviders:\n");
    let mut claims = String::from("version: 2\nclaims:\n");
    for i in 0..4 {
        claims.push_str(&format!(
            "  - {{id: c{i}, scenario: s, capabilities: [integration]}}\n"
        ));
    }
    for i in 0..4 {
        providers.push_str(&format!(
            "  step{i}:\n    adapter: command\n    capability: integration\n    claims: [c{i}]\n    envFrom: [RUNS_LOG]\n    command: [sh, -c, \"sleep 0.{}; echo step{i} $PROOFGRAPH_RUN_ID done >> $RUNS_LOG # {marker}\"]\n",
            2 + i
        ));
    }
    sb.write("openspec/changes/slow/evidence.yaml", claims);
    sb.write("openspec/changes/slow/execution.yaml", providers);
    git_commit_all(&sb.work());
}

fn processes_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir("/proc").expect("/proc").flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        if let Ok(cmdline) = fs_err::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            out.push(format!(
                "{}: {}",
                entry.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    out
}

fn wait_for_no_processes(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn_prove(sb: &Sandbox, runs_log: &str) -> std::process::Child {
    sb.proofgraph(&sb.work())
        .args(["prove", "slow", "--json", "--jobs", "2"])
        .env("RUNS_LOG", runs_log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prove")
}

/// Every pass the store reports must be backed by a completion the provider
/// itself logged in that run.
fn assert_every_pass_was_observed(sb: &Sandbox, runs_log: &str) {
    let status = sb.run_with_env(
        &sb.work(),
        &["status", "slow", "--json"],
        &[("RUNS_LOG", runs_log)],
    );
    assert!(
        matches!(status.code, Some(0 | 2)),
        "status after a kill: {}\n{}",
        status.stdout,
        status.stderr
    );
    let completions: BTreeSet<String> = sb
        .channel("runs")
        .read()
        .lines()
        .map(|l| l.trim_end_matches(" done").to_owned())
        .collect();
    let doc = status.json();
    for (sha, proof) in passed_receipts(sb, &doc) {
        let key = format!(
            "{} {}",
            proof["provider"].as_str().unwrap_or(""),
            proof["run_id"].as_str().unwrap_or("")
        );
        assert!(
            completions.contains(&key),
            "receipt {sha} reports a pass for `{key}`, which never completed"
        );
    }
}

/// The receipt (its digest and proof) behind each piece of evidence of each passed
/// requirement of a `status --json` document.
fn passed_receipts(sb: &Sandbox, doc: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for req in doc["requirements"].as_array().expect("requirements") {
        if req["state"] != "passed" {
            continue;
        }
        for evidence in req["evidence"].as_array().expect("evidence") {
            let sha = evidence["sha256"]
                .as_str()
                .expect("a passed requirement names its receipt");
            let proof = crate::support::statement(sb, sha)["predicate"]["proofgraph"].clone();
            out.push((sha.to_owned(), proof));
        }
    }
    out
}

/// A workspace whose four providers pass only when `flag.txt` says `good`, take a while,
/// log each completion (run id and what they read) outside the store, and carry a marker.
fn flag_workspace(sb: &Sandbox, marker: &str) {
    sb.openspec_root("");
    let mut providers = String::from("version: 1\nproviders:\n");
    let mut claims = String::from("version: 2\nclaims:\n");
    for i in 0..4 {
        claims.push_str(&format!(
            "  - {{id: c{i}, scenario: s, capabilities: [integration]}}\n"
        ));
        providers.push_str(&format!(
            "  step{i}:\n    adapter: command\n    capability: integration\n    claims: [c{i}]\n    envFrom: [RUNS_LOG]\n    command: [sh, -c, \"f=$(cat flag.txt); sleep 0.{}; echo step{i} $PROOFGRAPH_RUN_ID $f >> $RUNS_LOG; test $f = good # {marker}\"]\n",
            1 + i
        ));
    }
    sb.write("flag.txt", "good\n");
    sb.write("openspec/changes/slow/evidence.yaml", claims);
    sb.write("openspec/changes/slow/execution.yaml", providers);
    git_commit_all(&sb.work());
}

/// Flips `flag.txt` between `good` and `bad` (as editors save: a new file renamed into
/// place) until stopped; leaves it `bad`.
struct Editor {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Editor {
    fn start(sb: &Sandbox) -> Editor {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let path = sb.work().join("flag.txt");
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut flips = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let content: &[u8] = if flips.is_multiple_of(2) {
                    b"bad\n"
                } else {
                    b"good\n"
                };
                let tmp = path.with_extension("swp");
                fs_err::write(&tmp, content).expect("write");
                fs_err::rename(&tmp, &path).expect("rename");
                flips += 1;
                std::thread::sleep(Duration::from_millis(7));
            }
            fs_err::write(&path, b"bad\n").expect("leave it failing");
            flips
        });
        Editor {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread
            .take()
            .map_or(0, |t| t.join().expect("the editor thread"))
    }
}

/// The identity a receipt's input listing gives `content`, computed with git itself.
fn listed_id(content: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    fs_err::write(dir.path().join("f"), content).expect("write");
    let hex = crate::support::git(dir.path(), &["hash-object", "--no-filters", "f"]);
    let oid: Vec<u8> = (0..20)
        .map(|i| u8::from_str_radix(&hex.trim()[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let mut bytes = b"git:".to_vec();
    bytes.extend_from_slice(&oid);
    proofgraph_graph::fingerprint::Digest::of(&bytes).to_hex()
}

/// Every pass the store reports right now is backed by a completion its provider logged in
/// that run after reading `good`, and binds `flag.txt`'s good content.
fn assert_no_false_pass(sb: &Sandbox, runs_log: &str, good_id: &str) -> usize {
    let status = sb.run_with_env(
        &sb.work(),
        &["status", "slow", "--json"],
        &[("RUNS_LOG", runs_log)],
    );
    assert!(
        matches!(status.code, Some(0..=2)),
        "status after a kill: {}\n{}",
        status.stdout,
        status.stderr
    );
    let completions: BTreeSet<String> = sb
        .channel("runs")
        .read()
        .lines()
        .map(str::to_owned)
        .collect();
    let doc = status.json();
    let mut passes = 0;
    for (sha, proof) in passed_receipts(sb, &doc) {
        passes += 1;
        let key = format!(
            "{} {} good",
            proof["provider"].as_str().unwrap_or(""),
            proof["run_id"].as_str().unwrap_or("")
        );
        assert!(
            completions.contains(&key),
            "receipt {sha} reports a pass for `{key}`, which never completed reading good"
        );
        let listing = String::from_utf8(crate::support::cas(
            sb,
            proof["inputs"].as_str().expect("an input listing"),
        ))
        .expect("utf-8");
        let bound = listing
            .lines()
            .find_map(|l| l.strip_prefix("root:flag.txt\t"))
            .expect("flag.txt is bound");
        assert_eq!(
            bound, good_id,
            "receipt {sha} passes with the failing flag bound"
        );
    }
    passes
}

/// The store's integrity: every blob is named by its content's SHA-256, and every action
/// entry and ref is a whole file (a digest and a newline) naming a blob that is there.
fn assert_store_intact(sb: &Sandbox) -> usize {
    use sha2::Digest as _;
    let store = sb.work().join(".proofgraph");
    let mut blobs = BTreeSet::new();
    // Both proves may be killed before either made the store: no `cas/` yet is no blob yet
    // (and then any pointer below names a blob that is not there).
    for dir in fs_err::read_dir(store.join("cas"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for blob in fs_err::read_dir(dir.path()).expect("cas dir").flatten() {
            let name = format!(
                "{}{}",
                dir.file_name().to_string_lossy(),
                blob.file_name().to_string_lossy()
            );
            let bytes = fs_err::read(blob.path()).expect("blob");
            let digest: String = sha2::Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(digest, name, "a corrupt blob in the store");
            blobs.insert(name);
        }
    }
    let mut pointers = 0;
    let mut pending = vec![store.join("ac"), store.join("refs")];
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let meta = fs_err::symlink_metadata(&path).expect("lstat");
            if meta.is_dir() {
                pending.push(path);
                continue;
            }
            pointers += 1;
            assert!(
                meta.file_type().is_file(),
                "{} is not a regular file",
                path.display()
            );
            let text = fs_err::read_to_string(&path).expect("a pointer");
            let hex = text
                .strip_suffix('\n')
                .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .unwrap_or_else(|| panic!("{} holds {text:?}, not a digest", path.display()));
            assert!(
                blobs.contains(hex),
                "{} points at a blob that is not there",
                path.display()
            );
        }
    }
    pointers
}

/// `prove` killed with SIGKILL at random moments, 100 times, two proves of one change at
/// once each time, while an editor flips one of their inputs between a passing and a
/// failing version: no pass is ever recorded that was not observed with the passing
/// version, no process of a killed run survives, no store entry is corrupt or dangling.
#[test]
fn kill_9_at_random_moments_never_corrupts_or_lies() {
    let sb = Sandbox::new();
    let marker = format!("pg-fault-marker-{}", std::process::id());
    flag_workspace(&sb, &marker);
    let runs_log = sb.channel("runs").env().to_owned();
    let good_id = listed_id("good\n");
    let editor = Editor::start(&sb);
    // A small deterministic generator for the kill moments (0–900 ms).
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut passes = 0;
    for iteration in 0..100 {
        let first = Duration::from_millis(next() % 900);
        let second = Duration::from_millis(next() % 900);
        // Start from nothing proven a third of the time, so kills land in every phase.
        if iteration % 3 == 0 {
            let _ = fs_err::remove_dir_all(sb.work().join(".proofgraph/ac"));
        }
        let mut a = spawn_prove(&sb, &runs_log);
        let mut b = spawn_prove(&sb, &runs_log);
        let started = Instant::now();
        for (child, at) in [(&mut a, first.min(second)), (&mut b, first.max(second))] {
            std::thread::sleep(at.saturating_sub(started.elapsed()));
            let _ = child.kill();
        }
        let _ = a.wait();
        let _ = b.wait();
        let left = wait_for_no_processes(&marker);
        assert!(
            left.is_empty(),
            "iteration {iteration} ({first:?}, {second:?}): processes of a killed run survive: {left:?}"
        );
        assert_store_intact(&sb);
        passes += assert_no_false_pass(&sb, &runs_log, &good_id);
    }
    let flips = editor.stop();
    assert!(flips > 100, "the editor flipped the input {flips} times");
    // The failing version is in place: whatever passed is not reused.
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "slow", "--json"],
        &[("RUNS_LOG", runs_log.as_str())],
    );
    run.expect_code(1);
    assert!(
        run.json()["requirements"]
            .as_array()
            .expect("requirements")
            .iter()
            .all(|r| r["state"] != "passed"),
        "{}",
        run.stdout
    );
    // And put back, the store is used without error and everything is proven.
    fs_err::write(sb.work().join("flag.txt"), "good\n").expect("write");
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "slow", "--json"],
        &[("RUNS_LOG", runs_log.as_str())],
    );
    run.expect_code(0);
    assert_store_intact(&sb);
    assert!(assert_no_false_pass(&sb, &runs_log, &good_id) >= 4);
    assert!(passes > 0, "some iterations got as far as a pass");
}

/// Three proves of one change at once, sharing one store: each finishes,
/// every pass it reports was observed, and afterwards nothing reruns.
#[test]
fn concurrent_proves_share_the_store_without_corrupting_it() {
    let sb = Sandbox::new();
    let marker = format!("pg-concurrent-marker-{}", std::process::id());
    slow_workspace(&sb, &marker);
    let runs_log = sb.channel("runs").env().to_owned();
    let children: Vec<_> = (0..3).map(|_| spawn_prove(&sb, &runs_log)).collect();
    for child in children {
        let out = child.wait_with_output().expect("wait for prove");
        assert_eq!(
            out.status.code(),
            Some(0),
            "a concurrent prove failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert!(
            doc["requirements"]
                .as_array()
                .expect("requirements")
                .iter()
                .all(|r| r["state"] == "passed")
        );
    }
    assert_every_pass_was_observed(&sb, &runs_log);
    let before = sb.channel("runs").read();
    let again = sb.run_with_env(
        &sb.work(),
        &["prove", "slow", "--json"],
        &[("RUNS_LOG", runs_log.as_str())],
    );
    again.expect_code(0);
    assert_eq!(
        sb.channel("runs").read(),
        before,
        "after concurrent proves, a fourth reruns nothing"
    );
    assert!(
        fs_err::read_dir(sb.work().join(".proofgraph/tmp"))
            .map(|d| d.count() == 0)
            .unwrap_or(true),
        "no temporary files are left in the store"
    );
}

#[test]
fn sigint_stops_every_process_and_exits_130() {
    let sb = Sandbox::new();
    let marker = format!("pg-sigint-marker-{}", std::process::id());
    slow_workspace(&sb, &marker);
    let runs_log = sb.channel("runs").env().to_owned();
    let child = spawn_prove(&sb, &runs_log);
    let started = Instant::now();
    while !catches_sigint(&child) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "prove never began"
        );
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = nix_pid(&child);
    let status = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let codes: Vec<&str> = doc["status"]
        .as_array()
        .expect("status")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_emits!(codes, "interrupted");
    let left = wait_for_no_processes(&marker);
    assert!(left.is_empty(), "processes survive SIGINT: {left:?}");
    assert_every_pass_was_observed(&sb, &runs_log);
}

/// Whether a process catches SIGINT yet (bit 2 of `SigCgt`): before `prove` began, the
/// signal's default action applies, as for any program.
fn catches_sigint(child: &std::process::Child) -> bool {
    fs_err::read_to_string(format!("/proc/{}/status", child.id()))
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|mask| mask & (1 << 1) != 0)
}

fn nix_pid(child: &std::process::Child) -> String {
    child.id().to_string()
}

/// A signal is never lost and never hangs `prove`: sent at once (before the executor
/// listens), during a setup command that would run for a minute, or twice while it stops.
#[test]
fn a_signal_at_any_moment_gives_130_and_one_document() {
    let sb = Sandbox::new();
    let marker = format!("pg-early-signal-{}", std::process::id());
    slow_workspace(&sb, &marker);
    let runs_log = sb.channel("runs").env().to_owned();
    let signal = |child: &std::process::Child, name: &str| {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &nix_pid(child)])
            .status()
            .expect("kill");
        assert!(status.success());
    };
    for (name, delay) in [
        ("INT", 0),
        ("TERM", 0),
        ("INT", 5),
        ("TERM", 20),
        ("INT", 60),
    ] {
        let child = spawn_prove(&sb, &runs_log);
        let started = Instant::now();
        while !catches_sigint(&child) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "prove never began"
            );
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(delay));
        signal(&child, name);
        let out = child.wait_with_output().expect("wait");
        assert_eq!(
            out.status.code(),
            Some(130),
            "SIG{name} after {delay} ms: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert!(
            doc["status"].to_string().contains("\"interrupted\""),
            "{doc:#}"
        );
        assert!(wait_for_no_processes(&marker).is_empty());
    }
    // A setup command that would run for a minute stops at the first signal.
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nrepositories:\n  root:\n    path: .\n    setup: [[sh, -c, 'sleep 60 # {marker}']]\n"),
    );
    git_commit_all(&sb.work());
    let child = spawn_prove(&sb, &runs_log);
    let started = Instant::now();
    while processes_with(&format!("sleep 60 # {marker}")).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "setup never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, "INT");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the setup command held prove past SIGINT"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert!(
        doc["status"].to_string().contains("\"interrupted\""),
        "{doc:#}"
    );
    assert!(wait_for_no_processes(&marker).is_empty());
}
