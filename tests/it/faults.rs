//! Faults: `prove` killed with SIGKILL at random moments, and interrupted
//! with SIGINT. The store stays usable, no pass is ever reported that was not
//! observed, and no process of a killed run survives.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Sandbox, git_commit_all};

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
    Command::new(env!("CARGO_BIN_EXE_proofgraph"))
        .args(["prove", "slow", "--json", "--jobs", "2"])
        .current_dir(sb.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .env("RUNS_LOG", runs_log)
        .stdin(Stdio::null())
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
    let completions: BTreeSet<String> = fs_err::read_to_string(runs_log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim_end_matches(" done").to_owned())
        .collect();
    let doc = status.json();
    for req in doc["requirements"].as_array().expect("requirements") {
        if req["state"] != "passed" {
            continue;
        }
        for evidence in req["evidence"].as_array().expect("evidence") {
            let sha = evidence["sha256"]
                .as_str()
                .expect("a passed requirement names its receipt");
            let proof = receipt_proof(sb, sha);
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
}

fn receipt_proof(sb: &Sandbox, sha: &str) -> Value {
    crate::support::statement(sb, sha)["predicate"]["proofgraph"].clone()
}

#[test]
fn kill_9_at_random_moments_never_corrupts_or_lies() {
    let sb = Sandbox::new();
    let marker = format!("pg-fault-marker-{}", std::process::id());
    slow_workspace(&sb, &marker);
    let runs_log = sb.path().join("runs.log").display().to_string();
    // A small deterministic generator for the kill moments (0–900 ms).
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for iteration in 0..20 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(seed % 900);
        // Start from nothing proven half of the time, so kills land in every phase.
        if iteration % 2 == 0 {
            let _ = fs_err::remove_dir_all(sb.work().join(".proofgraph/ac"));
        }
        let mut child = spawn_prove(&sb, &runs_log);
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let left = wait_for_no_processes(&marker);
        assert!(
            left.is_empty(),
            "iteration {iteration} ({delay:?}): processes of the killed run survive: {left:?}"
        );
        assert_every_pass_was_observed(&sb, &runs_log);
    }
    // Afterwards the store is used without error and everything is proven.
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "slow", "--json"],
        &[("RUNS_LOG", runs_log.as_str())],
    );
    run.expect_code(0);
    assert!(
        run.json()["requirements"]
            .as_array()
            .expect("requirements")
            .iter()
            .all(|r| r["state"] == "passed")
    );
    assert_every_pass_was_observed(&sb, &runs_log);
}

/// Three proves of one change at once, sharing one store: each finishes,
/// every pass it reports was observed, and afterwards nothing reruns.
#[test]
fn concurrent_proves_share_the_store_without_corrupting_it() {
    let sb = Sandbox::new();
    let marker = format!("pg-concurrent-marker-{}", std::process::id());
    slow_workspace(&sb, &marker);
    let runs_log = sb.path().join("runs.log").display().to_string();
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
    let before = fs_err::read_to_string(&runs_log).expect("runs log");
    let again = sb.run_with_env(
        &sb.work(),
        &["prove", "slow", "--json"],
        &[("RUNS_LOG", runs_log.as_str())],
    );
    again.expect_code(0);
    assert_eq!(
        fs_err::read_to_string(&runs_log).expect("runs log"),
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
    let runs_log = sb.path().join("runs.log").display().to_string();
    let child = spawn_prove(&sb, &runs_log);
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
    assert!(codes.contains(&"interrupted"), "{codes:?}");
    let left = wait_for_no_processes(&marker);
    assert!(left.is_empty(), "processes survive SIGINT: {left:?}");
    assert_every_pass_was_observed(&sb, &runs_log);
}

fn nix_pid(child: &std::process::Child) -> String {
    child.id().to_string()
}
