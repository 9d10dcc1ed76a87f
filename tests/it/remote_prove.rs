//! `prove --executor remote|auto` end to end: a real engine (BuildGrid with execution on a
//! PostgreSQL of its own, `engine_support.rs`) and two `proofgraph worker` processes
//! (`worker.rs`). Eligible providers run on the workers, each exactly once, with the
//! results and test counts a local prove gives; a second prove reuses everything and
//! contacts no worker; a provider with `envFrom` runs here and its value never reaches the
//! engine; an engine gone before the run fails `remote` and runs `auto` here.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::engine_support::Engine;
use crate::support::{Sandbox, assert_codes, assert_emits, git_commit_all};
use crate::worker::WorkerProcess;

/// How many providers run remotely.
const REMOTE: usize = 12;

/// A change of [`REMOTE`] eligible providers (8 `test-discovery` suites of 1..=8 tests,
/// each writing its own TAP report, and 4 `command`s) and one
/// `deploy` that reads `CANARY` through `envFrom`; `executor:` names `engine`.
fn workspace(sb: &Sandbox, engine: &str) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nexecutor:\n  remote: {engine}\n  platform: {{OSFamily: linux}}\n  remoteJobs: 4\n  connectTimeoutMs: 1000\n  timeoutMs: 5000\n"),
    );
    sb.write(
        "tests.sh",
        "#!/bin/sh\nset -eu\nn=$1\nout=$2\nmkdir -p \"$(dirname \"$out\")\"\n{ echo 'TAP version 13'; echo \"1..$n\"; i=1; while [ \"$i\" -le \"$n\" ]; do echo \"ok $i - case $i of $n\"; i=$((i + 1)); done; } > \"$out\"\necho \"suite $n wrote $out in $(pwd) as HOME=$HOME\"\n",
    );
    sb.write("src/app.txt", "the app\n");
    let mut claims = String::from("version: 2\nclaims:\n");
    let mut providers = String::from("version: 1\nproviders:\n");
    for i in 1..=8 {
        claims.push_str(&format!(
            "  - {{id: suite-{i}, scenario: s, capabilities: [test]}}\n"
        ));
        providers.push_str(&format!(
            "  suite-{i}:\n    adapter: test-discovery\n    capability: test\n    claims: [suite-{i}]\n    command: [sh, tests.sh, \"{i}\", reports/suite-{i}.tap]\n    report: reports/suite-{i}.tap\n"
        ));
    }
    for i in 1..=4 {
        claims.push_str(&format!(
            "  - {{id: check-{i}, scenario: s, capabilities: [static-analysis]}}\n"
        ));
        providers.push_str(&format!(
            "  check-{i}:\n    adapter: command\n    capability: static-analysis\n    claims: [check-{i}]\n    command: [sh, -c, \"cat src/app.txt; echo check {i}\"]\n"
        ));
    }
    claims.push_str("  - {id: deployed, scenario: s, capabilities: [deployment]}\n");
    providers.push_str(
        "  deploy:\n    adapter: command\n    capability: deployment\n    claims: [deployed]\n    envFrom: [CANARY]\n    command: [sh, -c, \"test -n \\\"$CANARY\\\"\"]\n",
    );
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write("openspec/changes/add-x/evidence.yaml", claims);
    sb.write("openspec/changes/add-x/execution.yaml", providers);
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, extra: &[&str], canary: &str) -> crate::support::Run {
    let mut args = vec!["prove", "add-x", "--keep-going", "--json"];
    args.extend(extra);
    crate::support::run_bounded(
        sb,
        &sb.work(),
        &args,
        &[("CANARY", canary)],
        std::time::Duration::from_secs(300),
    )
}

/// Per provider: what prove did, its result, and its test counts.
fn outcomes(doc: &Value) -> BTreeMap<String, (String, String)> {
    doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| {
            (
                p["provider"].as_str().unwrap_or_default().to_owned(),
                (p["action"].to_string(), p["result"].to_string()),
            )
        })
        .collect()
}

/// Per requirement: its state, and each evidence's provider, state and test counts.
fn requirements(doc: &Value) -> BTreeMap<String, (String, Vec<String>)> {
    doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .map(|r| {
            let evidence = r["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| format!("{} {} {}", e["provider"], e["state"], e["counts"]))
                .collect();
            (
                format!("{} / {}", r["claim"], r["capability"]),
                (r["state"].to_string(), evidence),
            )
        })
        .collect()
}

/// The `predicate.proofgraph` of every receipt of a prove document, by provider.
fn proofs(sb: &Sandbox, doc: &Value) -> BTreeMap<String, Value> {
    doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .flat_map(|p| {
            p["receipts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |r| (p, r))
        })
        .map(|(p, r)| {
            let sha = r["sha256"].as_str().expect("a stored receipt");
            (
                p["provider"].as_str().unwrap_or_default().to_owned(),
                crate::support::statement(sb, sha)["predicate"]["proofgraph"].clone(),
            )
        })
        .collect()
}

/// Whether `needle` occurs in any file under `dir`.
fn found_under(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        let bytes = fs_err::read(&entry).unwrap_or_default();
        if bytes.windows(needle.len()).any(|w| w == needle) {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Every eligible provider executes exactly once across two workers and is judged as a
/// local prove judges it; its receipt says where it ran. A second prove reuses all and
/// contacts no worker. The `envFrom` provider runs here, and its value is nowhere in the
/// engine's CAS.
#[test]
fn twelve_providers_prove_remotely_once_each_as_a_local_prove_would() {
    let engine = Engine::start();
    let a = WorkerProcess::start(&engine, "worker-a", 3);
    let b = WorkerProcess::start(&engine, "worker-b", 3);
    let canary = format!("canary-{}", crate::support::unique_marker("secret"));

    let local = Sandbox::new();
    workspace(&local, &engine.url);
    let local_run = prove(&local, &[], &canary);
    let local_doc = local_run.json();

    let sb = Sandbox::new();
    workspace(&sb, &engine.url);
    let run = prove(&sb, &["--executor", "remote"], &canary);
    let doc = run.json();
    assert_eq!(
        run.code, local_run.code,
        "{local_doc:#}\n{}",
        local_run.stderr
    );
    // Every suite passes; no provider proves `discovery`, so the claims stay pending.
    assert_eq!(run.code, Some(2), "{doc:#}\n{}", run.stderr);
    assert_eq!(outcomes(&doc), outcomes(&local_doc), "{doc:#}");
    assert_eq!(requirements(&doc), requirements(&local_doc), "{doc:#}");
    // The suites' test counts came back from the workers' reports.
    let counts = &crate::support::requirement(&doc, "suite-8", "test")["evidence"][0]["counts"];
    assert_eq!(counts["passed"], 8, "{doc:#}");
    assert!(
        run.stderr.contains("remote  suite-1: executing on worker-"),
        "{}",
        run.stderr
    );

    // Each ran once, on one of the two workers, as its receipt says.
    let done = |w: &WorkerProcess| w.log().matches(": done, exit code").count();
    assert_eq!(done(&a) + done(&b), REMOTE, "{}\n{}", a.log(), b.log());
    let by_receipt = proofs(&sb, &doc);
    let mut per_worker: BTreeMap<String, usize> = BTreeMap::new();
    for (provider, proof) in &by_receipt {
        if provider == "deploy" {
            assert!(proof.get("executor").is_none(), "{proof:#}");
            assert!(proof.get("worker").is_none(), "{proof:#}");
            continue;
        }
        assert_eq!(proof["executor"], "remote", "{provider}: {proof:#}");
        assert_eq!(
            proof["engine"],
            engine.url.as_str(),
            "{provider}: {proof:#}"
        );
        let worker = proof["worker"].as_str().unwrap_or_default().to_owned();
        assert!(
            worker == "worker-a" || worker == "worker-b",
            "{provider}: {proof:#}"
        );
        *per_worker.entry(worker).or_default() += 1;
    }
    assert_eq!(per_worker.values().sum::<usize>(), REMOTE, "{per_worker:?}");
    assert_eq!(
        per_worker.get("worker-a").copied().unwrap_or(0),
        a.log().matches(": done, exit code").count(),
        "the receipts name the workers that ran them"
    );
    // `receipt verify` says where a remote receipt ran.
    let sha = crate::support::receipt(&doc, "suite-2", "test")["sha256"]
        .as_str()
        .expect("stored")
        .to_owned();
    let verified = sb.run(&sb.work(), &["receipt", "verify", &sha]);
    verified.expect_code(0);
    assert!(
        verified.stdout.contains("ran: remote, on worker `worker-")
            && verified.stdout.contains(&engine.url),
        "{}",
        verified.stdout
    );
    let json = sb
        .run(&sb.work(), &["receipt", "verify", &sha, "--json"])
        .json();
    assert_eq!(json["executor"], "remote", "{json}");
    // A local receipt records nothing of an executor (its bytes are what they were).
    for proof in proofs(&local, &local_doc).values() {
        assert!(proof.get("executor").is_none(), "{proof:#}");
    }
    // The log of a remote provider is where a local one's is, and said where it ran.
    let log = crate::support::run_bounded(
        &sb,
        &sb.work(),
        &["log", "add-x", "suite-3"],
        &[],
        std::time::Duration::from_secs(60),
    );
    assert!(
        log.stdout.contains("suite 3 wrote reports/suite-3.tap")
            && log.stdout.contains("HOME=/tmp"),
        "{}{}",
        log.stdout,
        log.stderr
    );

    // The secret of the `envFrom` provider never reached the engine.
    assert_eq!(
        found_under(&engine.cas_dir(), canary.as_bytes()),
        Vec::<String>::new()
    );
    assert!(
        !found_under(&engine.cas_dir(), b"suite $n wrote").is_empty(),
        "the engine's CAS is where this test looks: it holds the actions' inputs"
    );

    // Again: everything is reused, no worker is asked.
    let leases = |w: &WorkerProcess| w.log().matches("lease ").count();
    let before = (leases(&a), leases(&b));
    let again = prove(&sb, &["--executor", "remote"], &canary);
    again.expect_code(2);
    let again_doc = again.json();
    for (provider, (action, _)) in outcomes(&again_doc) {
        assert_eq!(action, "\"reused\"", "{provider}: {again_doc:#}");
    }
    assert_eq!(done(&a) + done(&b), REMOTE, "{}\n{}", a.log(), b.log());
    assert_eq!((leases(&a), leases(&b)), before);
}

/// The engine stopped before a prove: under `auto` every provider runs here, sandboxed,
/// with the exit code a local prove has; under `remote` nothing runs, exit 3.
#[test]
fn an_engine_stopped_before_the_run_runs_auto_here_and_fails_remote() {
    let mut engine = Engine::start();
    let canary = "canary-value-not-used-remotely";
    let local = Sandbox::new();
    workspace(&local, &engine.url);
    let local_run = prove(&local, &[], canary);
    let sb = Sandbox::new();
    workspace(&sb, &engine.url);
    engine.kill();
    let run = prove(&sb, &["--executor", "remote"], canary);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["remote_executor_unreachable"]);
    let run = prove(&sb, &["--executor", "auto"], canary);
    assert_eq!(run.code, local_run.code, "{}", run.stderr);
    assert_emits!(run.status_codes(), "remote_executor_unreachable");
    let doc = run.json();
    assert_eq!(outcomes(&doc), outcomes(&local_run.json()), "{doc:#}");
    assert_eq!(doc["isolation"], local_run.json()["isolation"]);
    for proof in proofs(&sb, &doc).values() {
        assert!(proof.get("executor").is_none(), "{proof:#}");
    }
}

/// A change `name` of `n` `command` providers `slow-1`…, provider `i` running
/// `script` with `{i}` replaced by its number, and `executor:` naming `engine`; committed.
/// Spawns `prove name --executor remote --json` (and `extra`) on it.
fn spawn_slow_change(
    sb: &Sandbox,
    engine: &str,
    name: &str,
    n: usize,
    script: &str,
    extra: &[&str],
) -> crate::support::Captured {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nexecutor:\n  remote: {engine}\n  platform: {{OSFamily: linux}}\n"),
    );
    let mut claims = String::from("version: 2\nclaims:\n");
    let mut providers = String::from("version: 1\nproviders:\n");
    for i in 1..=n {
        let command = script.replace("{i}", &i.to_string());
        claims.push_str(&format!(
            "  - {{id: slow-{i}, scenario: s, capabilities: [static-analysis]}}\n"
        ));
        providers.push_str(&format!(
            "  slow-{i}:\n    adapter: command\n    capability: static-analysis\n    claims: [slow-{i}]\n    command: [sh, -c, \"{command}\"]\n"
        ));
    }
    sb.write(&format!("openspec/changes/{name}/proposal.md"), "# Slow\n");
    sb.write(&format!("openspec/changes/{name}/evidence.yaml"), claims);
    sb.write(
        &format!("openspec/changes/{name}/execution.yaml"),
        providers,
    );
    git_commit_all(&sb.work());
    let mut args = vec!["prove", name, "--executor", "remote", "--json"];
    args.extend(extra);
    crate::support::Captured::spawn(sb.proofgraph(&sb.work()).args(args))
}

/// SIGINT to a prove whose actions run on the workers: each action is cancelled on the
/// engine, the workers kill its processes, and prove exits 130.
#[test]
fn an_interrupted_prove_cancels_its_actions_and_leaves_no_process_on_the_workers() {
    use std::time::{Duration, Instant};
    let engine = Engine::start();
    let a = WorkerProcess::start(&engine, "worker-a", 2);
    let b = WorkerProcess::start(&engine, "worker-b", 2);
    let marker = crate::support::unique_marker("remote-sigint");
    let sb = Sandbox::new();
    let crate::support::Captured { mut child, output } = spawn_slow_change(
        &sb,
        &engine.url,
        "slow",
        3,
        &format!("sleep 120; echo {{i}} {marker}"),
        &["--keep-going"],
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    // Both workers are running one of its actions.
    let executing = |w: &WorkerProcess| w.log().matches(": executing").count();
    while executing(&a) == 0
        || executing(&b) == 0
        || crate::support::processes_marked(&marker).len() < executing(&a) + executing(&b)
    {
        assert!(
            Instant::now() < deadline,
            "the actions never started on both workers; workers:\n{}\n{}",
            a.log(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid =
        rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("a pid")).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll prove") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("prove did not end after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = output.into_run(status);
    assert_eq!(run.code, Some(130), "{}\n{}", run.stdout, run.stderr);
    // Each action was cancelled on the engine, and its worker killed its processes.
    let cancelled = |w: &WorkerProcess| w.log().matches(": cancelled").count();
    let leased = executing(&a) + executing(&b);
    let deadline = Instant::now() + Duration::from_secs(60);
    while cancelled(&a) + cancelled(&b) < leased {
        assert!(
            Instant::now() < deadline,
            "the workers were not told to cancel:\n{}\n{}",
            a.log(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    crate::support::assert_no_process_marked(&marker);
    assert_eq!(
        a.log().matches(": done, exit code").count() + b.log().matches(": done, exit code").count(),
        0,
        "no action ran to its end"
    );
}

/// A worker killed with SIGKILL in the middle of a prove's action: the engine gives the
/// action to the other worker once the dead one's session lapses, and the prove tells the
/// truth — every provider passes, judged from the run that finished, and each receipt
/// names the worker that really ran it (the survivor, for the action that was moved).
#[test]
fn a_worker_killed_mid_prove_hands_its_action_over_and_the_receipts_say_who_ran_it() {
    use std::time::{Duration, Instant};
    let engine = Engine::start();
    let a = WorkerProcess::start(&engine, "worker-a", 1);
    let marker = crate::support::unique_marker("remote-sigkill");
    let sb = Sandbox::new();
    let crate::support::Captured { mut child, output } = spawn_slow_change(
        &sb,
        &engine.url,
        "moved",
        1,
        &format!("sleep 3; echo finished {marker}"),
        &[],
    );
    // Only worker-a is there: the action starts on it.
    let deadline = Instant::now() + Duration::from_secs(120);
    while crate::support::processes_marked(&marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the action never started on worker-a:\n{}",
            a.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    a.signal(rustix::process::Signal::KILL);
    // The action's processes die with their worker (PID namespace, parent-death signal).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !crate::support::processes_marked(&marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the killed worker's action lives on"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let b = WorkerProcess::start(&engine, "worker-b", 1);
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll prove") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "prove never ended after its worker died; worker-b:\n{}\nengine:\n{}",
                b.log(),
                engine.log()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let run = output.into_run(status);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).expect("prove's JSON");
    let proofs = proofs(&sb, &doc);
    let slow = &proofs["slow-1"];
    assert_eq!(slow["outcome"], "pass", "{slow:#}");
    assert_eq!(slow["executor"], "remote", "{slow:#}");
    assert_eq!(slow["worker"], "worker-b", "the survivor ran it: {slow:#}");
    assert_eq!(
        b.log().matches(": done, exit code 0").count(),
        1,
        "worker-b ran the action to its end, once:\n{}",
        b.log()
    );
    assert!(
        !a.log().contains(": done"),
        "worker-a died before it finished:\n{}",
        a.log()
    );
}
