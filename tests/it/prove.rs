//! `prove`, `status`, `explain` and `hash` on real git repositories built in
//! the test, with real processes: only what changed reruns, and nothing is a
//! pass that was not observed.

use std::path::Path;

use serde_json::Value;

use crate::support::{Run, Sandbox, assert_codes, assert_emits, git, git_commit_all, states};

/// A shell test suite that writes a TAP report of `n` passing tests (and
/// `fail` failing ones) to `out.tap`, and logs every run to `../runs.log`
/// outside the sandbox so the test can count executions.
fn suite(n: usize, fail: usize) -> String {
    let mut s =
        String::from("#!/bin/sh\nset -u\necho \"$0 $PROOFGRAPH_RUN_ID\" >> \"$RUNS_LOG\"\n");
    s.push_str(&format!(
        "{{ echo 'TAP version 13'; echo '1..{}';\n",
        n + fail
    ));
    for i in 1..=n {
        s.push_str(&format!("  echo 'ok {i} - case {i}';\n"));
    }
    for j in 1..=fail {
        s.push_str(&format!("  echo 'not ok {} - broken {j}';\n", n + j));
    }
    s.push_str("} > out.tap\n");
    if fail > 0 {
        s.push_str("exit 1\n");
    }
    s
}

/// Two repositories (`web`, `api`) in one git repository. `web` has a test
/// suite and a lint that depends on it; `api` has a test suite; a contract
/// is shared.
fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  web: {path: web}\n  api: {path: api}\n",
    );
    sb.write("web/tests.sh", suite(3, 0));
    sb.write("web/src/app.js", "app\n");
    sb.write("web/contract.json", "{\"v\": 1}\n");
    sb.write("api/tests.sh", suite(2, 0));
    sb.write("api/src/main.rs", "fn main() {}\n");
    sb.write("api/contract.json", "{\"v\": 1}\n");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        r#"version: 2
claims:
  - {id: web-works, scenario: The web app works, capabilities: [test, static-analysis], repositories: [web]}
  - {id: api-works, scenario: The api works, capabilities: [test], repositories: [api]}
  - {id: agree, scenario: They agree, capabilities: [cross-repo-contract]}
"#,
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        r#"version: 1
providers:
  test:
    adapter: test-discovery
    repository: web
    command: [sh, tests.sh]
    report: out.tap
    envFrom: [RUNS_LOG]
  lint:
    adapter: command
    capability: static-analysis
    repository: web
    command: [sh, -c, "echo \"lint $PROOFGRAPH_RUN_ID\" >> \"$RUNS_LOG\""]
    envFrom: [RUNS_LOG]
    dependsOn: [test]
  test-api:
    adapter: test-discovery
    capability: test
    repository: api
    command: [sh, tests.sh]
    report: out.tap
    discoveryProvider: discovery-api
    envFrom: [RUNS_LOG]
  discovery-api:
    adapter: test-discovery
    capability: discovery
    repository: api
    command: [sh, tests.sh]
    report: out.tap
    envFrom: [RUNS_LOG]
  cross-repo-contract:
    adapter: contract-digest
    contract: {web: contract.json, api: contract.json}
"#,
    );
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, extra: &[&str]) -> Run {
    let mut args = vec!["prove", "add-x", "--json"];
    args.extend(extra);
    sb.run_with_env(&sb.work(), &args, &[("RUNS_LOG", sb.channel("runs").env())])
}

/// Which providers ran (by action) in a prove document.
fn ran(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .filter(|p| p["action"] == "ran")
        .map(|p| p["provider"].as_str().unwrap_or("").to_owned())
        .collect();
    out.sort();
    out
}

fn executions(sb: &Sandbox) -> usize {
    sb.channel("runs").lines()
}

#[test]
fn a_second_prove_runs_nothing() {
    let sb = Sandbox::new();
    workspace(&sb);
    let first = prove(&sb, &[]);
    first.expect_code(0);
    let doc = first.json();
    assert_eq!(
        ran(&doc),
        vec!["cross-repo-contract", "lint", "test", "test-api"]
    );
    // The receiver is never run on its own: its producer's run wrote its receipt.
    let receiver = crate::support::provider(&doc, "discovery-api");
    assert_eq!(receiver["action"], "produced", "{doc:#}");
    assert_eq!(
        crate::support::receipt(&doc, "discovery-api", "discovery")["outcome"],
        "pass"
    );
    assert!(
        states(&doc).values().all(|s| s == "passed"),
        "{:#?}",
        states(&doc)
    );
    assert_eq!(executions(&sb), 3, "web tests, lint, api tests");
    let second = prove(&sb, &[]);
    second.expect_code(0);
    let doc = second.json();
    assert_eq!(ran(&doc), Vec::<String>::new());
    assert_eq!(doc["summary"]["reused"], 5);
    assert_eq!(executions(&sb), 3, "nothing executed the second time");
}

/// After a first prove: edits rerun exactly the providers whose inputs they
/// touch (and their dependents), and the change's prose reruns nothing.
fn edits_rerun_exactly_what_they_touch(sb: &Sandbox) {
    prove(sb, &[]).expect_code(0);
    assert_eq!(ran(&prove(sb, &[]).json()), Vec::<String>::new());
    // Editing the change's prose reruns nothing.
    sb.write(
        "openspec/changes/add-x/proposal.md",
        "# Add x\n\nMore words.\n",
    );
    assert_eq!(ran(&prove(sb, &[]).json()), Vec::<String>::new());
    // A file in api: exactly api's providers.
    sb.write("api/src/main.rs", "fn main() { println!(); }\n");
    let doc = prove(sb, &[]).json();
    assert_eq!(ran(&doc), vec!["test-api"]);
    assert_eq!(
        crate::support::provider(&doc, "discovery-api")["action"],
        "produced"
    );
    // A file in web: web's test and the lint that depends on it.
    sb.write("web/src/app.js", "app v2\n");
    assert_eq!(ran(&prove(sb, &[]).json()), vec!["lint", "test"]);
}

#[test]
fn only_what_changed_reruns() {
    let sb = Sandbox::new();
    workspace(&sb);
    edits_rerun_exactly_what_they_touch(&sb);
    // One provider's wiring: only it (and its dependents).
    let path = sb.work().join("openspec/changes/add-x/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replace("echo \\\"lint", "echo \\\"linting"),
    );
    assert_eq!(ran(&prove(&sb, &[]).json()), vec!["lint"]);
    // --no-cache: everything.
    assert_eq!(ran(&prove(&sb, &["--no-cache"]).json()).len(), 4);
}

#[test]
fn a_suite_below_its_minimum_fails_discovery_with_exit_1() {
    let sb = Sandbox::new();
    workspace(&sb);
    let path = sb.work().join("openspec/changes/add-x/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replacen(
            "    report: out.tap\n",
            "    report: out.tap\n    minimum: 5\n",
            1,
        ),
    );
    let run = prove(&sb, &["--keep-going"]);
    run.expect_code(1);
    let doc = run.json();
    let s = states(&doc);
    assert_eq!(s["web-works/discovery"], "failed");
    assert_eq!(s["web-works/test"], "passed");
    let reason = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["claim"] == "web-works" && r["capability"] == "discovery")
        .and_then(|r| r["evidence"][0]["reason"].as_str())
        .unwrap_or("")
        .to_owned();
    assert_eq!(reason, "the suite ran 3 tests, below its minimum of 5");
}

#[test]
fn exit_0_without_a_report_is_not_a_pass() {
    let sb = Sandbox::new();
    workspace(&sb);
    sb.write(
        "web/tests.sh",
        "#!/bin/sh\necho \"ran\" >> \"$RUNS_LOG\"\nexit 0\n",
    );
    git_commit_all(&sb.work());
    let run = prove(&sb, &["--keep-going"]);
    run.expect_code(2);
    let s = states(&run.json());
    assert_eq!(s["web-works/test"], "inconclusive");
    assert_eq!(s["web-works/discovery"], "inconclusive");
}

#[test]
fn a_failing_suite_fails_and_blocks_its_dependents() {
    let sb = Sandbox::new();
    workspace(&sb);
    sb.write("web/tests.sh", suite(2, 1));
    git_commit_all(&sb.work());
    let run = prove(&sb, &["--keep-going"]);
    run.expect_code(1);
    let doc = run.json();
    let lint = doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["provider"] == "lint")
        .cloned()
        .unwrap_or_default();
    assert_eq!(lint["action"], "blocked");
    assert_eq!(
        lint["reason"],
        "skipped: it depends on `test`, which did not pass"
    );
    assert_eq!(states(&doc)["web-works/test"], "failed");
    // A failure is not reused: it runs again next time.
    assert!(ran(&prove(&sb, &["--keep-going"]).json()).contains(&"test".to_owned()));
}

#[test]
fn status_explain_and_hash() {
    let sb = Sandbox::new();
    workspace(&sb);
    let status = sb.run(&sb.work(), &["status", "add-x", "--json"]);
    status.expect_code(2);
    assert!(states(&status.json()).values().all(|s| s == "pending"));
    prove(&sb, &[]).expect_code(0);
    sb.run(&sb.work(), &["status", "add-x", "--json"])
        .expect_code(0);
    sb.write("web/src/app.js", "edited\n");
    let status = sb.run(&sb.work(), &["status", "add-x", "--json"]);
    status.expect_code(2);
    assert_eq!(states(&status.json())["web-works/test"], "stale");
    let explain = sb.run(&sb.work(), &["explain", "add-x", "test", "--json"]);
    explain.expect_code(0);
    let doc = explain.json();
    assert_eq!(
        doc["inputs"]["changed"],
        serde_json::json!(["web:src/app.js"])
    );
    let components: Vec<&str> = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["component"].as_str())
        .collect();
    assert_eq!(components, vec!["inputs"]);
    // A wiring change is named by component.
    let path = sb.work().join("openspec/changes/add-x/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replacen(
            "    report: out.tap\n",
            "    report: out.tap\n    env: {NODE_ENV: ci}\n",
            1,
        ),
    );
    let doc = sb
        .run(&sb.work(), &["explain", "add-x", "test", "--json"])
        .json();
    let components: Vec<&str> = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["component"].as_str())
        .collect();
    assert_eq!(components, vec!["env", "inputs"]);
    // hash prints the binding; it is stable and names every provider.
    let one = sb.run(&sb.work(), &["hash", "add-x", "test"]);
    one.expect_code(0);
    assert_eq!(one.stdout.trim().len(), 64);
    let again = sb.run(&sb.work(), &["hash", "add-x", "test"]);
    assert_eq!(one.stdout, again.stdout);
    let all = sb.run(&sb.work(), &["hash", "add-x", "--json"]).json();
    assert_eq!(all["bindings"].as_array().map(Vec::len), Some(5));
    let unknown = sb.run(&sb.work(), &["hash", "add-x", "nope", "--json"]);
    unknown.expect_code(3);
    assert_codes!(unknown.status_codes(), ["unknown_provider"]);
}

#[test]
fn a_canary_secret_reaches_no_receipt_log_or_output() {
    let sb = Sandbox::new();
    workspace(&sb);
    let canary = "canary-7f3a9c1e-secret-value";
    let path = sb.work().join("openspec/changes/add-x/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replace(
            "    envFrom: [RUNS_LOG]\n    dependsOn: [test]",
            "    envFrom: [RUNS_LOG, API_TOKEN]\n    dependsOn: [test]",
        )
        .replace(
            "echo \\\"lint $PROOFGRAPH_RUN_ID\\\" >> \\\"$RUNS_LOG\\\"",
            "echo \\\"lint $API_TOKEN\\\" >> \\\"$RUNS_LOG\\\"; echo token=$API_TOKEN",
        ),
    );
    git_commit_all(&sb.work());
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "add-x", "--json"],
        &[
            ("RUNS_LOG", sb.channel("runs").env()),
            ("API_TOKEN", canary),
        ],
    );
    run.expect_code(0);
    assert!(
        !run.stdout.contains(canary) && !run.stderr.contains(canary),
        "the canary reached the output"
    );
    // The command really saw it (it wrote it to the test, outside the store).
    assert!(sb.channel("runs").read().contains(canary));
    let mut found = Vec::new();
    scan(
        &sb.work().join(".proofgraph"),
        canary.as_bytes(),
        &mut found,
    );
    assert!(found.is_empty(), "the canary is stored in {found:?}");
    // And the log that was stored shows where it was redacted.
    let mut redacted = Vec::new();
    scan(
        &sb.work().join(".proofgraph/cas"),
        b"token=[redacted]",
        &mut redacted,
    );
    assert_eq!(redacted.len(), 1, "the command log records the redaction");
}

fn scan(dir: &Path, needle: &[u8], found: &mut Vec<String>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            scan(&path, needle, found);
        } else if let Ok(bytes) = fs_err::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            found.push(path.display().to_string());
        }
    }
}

#[test]
fn receipts_are_signed_in_toto_statements_verifiable_by_openssl() {
    let sb = Sandbox::new();
    workspace(&sb);
    let doc = prove(&sb, &[]).json();
    let sha = doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["provider"] == "test")
        .and_then(|p| p["receipts"][0]["sha256"].as_str())
        .expect("a receipt")
        .to_owned();
    let envelope_path = sb
        .work()
        .join(".proofgraph/cas")
        .join(&sha[..2])
        .join(&sha[2..]);
    let envelope: Value =
        serde_json::from_slice(&fs_err::read(&envelope_path).expect("envelope")).expect("json");
    assert_eq!(envelope["payloadType"], "application/vnd.in-toto+json");
    let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let statement: Value = serde_json::from_slice(&body).expect("statement");
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        statement["predicateType"],
        "https://in-toto.io/attestation/test-result/v0.1"
    );
    assert_eq!(statement["predicate"]["result"], "PASSED");
    assert_eq!(
        statement["predicate"]["proofgraph"]["isolation"],
        "namespaces"
    );
    let binding = statement["subject"][0]["digest"]["sha256"]
        .as_str()
        .expect("sha256")
        .to_owned();
    let hash = sb.run(&sb.work(), &["hash", "add-x", "test"]);
    assert_eq!(
        hash.stdout.trim(),
        binding,
        "the subject is the provider's binding"
    );
    // Verify the signature with openssl over the DSSE PAE, independently.
    let pae = proofgraph::attest::pae::pae("application/vnd.in-toto+json", &body);
    let sig =
        proofgraph::attest::b64::decode(envelope["signatures"][0]["sig"].as_str().expect("sig"))
            .expect("base64");
    let dir = tempfile::tempdir().expect("tempdir");
    crate::support::write(&dir.path().join("pae.bin"), &pae);
    crate::support::write(&dir.path().join("sig.bin"), &sig);
    let public = sb.work().join(".proofgraph/keys/workspace.pub");
    let out = std::process::Command::new("openssl")
        .args(["pkeyutl", "-verify", "-pubin", "-inkey"])
        .arg(&public)
        .args(["-rawin", "-in"])
        .arg(dir.path().join("pae.bin"))
        .arg("-sigfile")
        .arg(dir.path().join("sig.bin"))
        .output()
        .unwrap_or_else(|e| {
            panic!("openssl is required ({e}); install it with `apt-get install openssl`")
        });
    assert!(
        out.status.success(),
        "openssl rejected our receipt: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The private key is not tracked and only its owner can read it.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = fs_err::metadata(sb.work().join(".proofgraph/keys/workspace.key"))
        .expect("key")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let tracked = git(
        &sb.work(),
        &["status", "--porcelain", "--ignored", ".proofgraph"],
    );
    assert!(
        tracked.lines().all(|l| l.starts_with("!!")),
        "the store must be ignored by git: {tracked}"
    );
}

#[test]
fn without_isolation_the_run_says_so() {
    let sb = Sandbox::new();
    workspace(&sb);
    let run = prove(&sb, &["--isolation", "none"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["isolation"], "none");
    assert_codes!(run.status_codes(), ["isolation_unavailable"]);
    assert_eq!(doc["status"][0]["severity"], "warning");
    // Asked for: the fix is to stop asking, not to become root.
    let fix = doc["status"][0]["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains("Drop `--isolation none`") && !fix.contains("root"),
        "{fix}"
    );
}

#[test]
fn an_unusable_store_or_run_directory_is_reported() {
    let sb = Sandbox::new();
    workspace(&sb);
    // A store written by a newer proofgraph is never overwritten.
    sb.write(
        ".proofgraph/store.json",
        r#"{"format": "proofgraph-store", "version": 99}"#,
    );
    let run = prove(&sb, &[]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["store_unusable"]);
    fs_err::remove_dir_all(sb.work().join(".proofgraph")).expect("remove store");
    // A run directory that cannot be created (even as root: /proc is not writable).
    prove(&sb, &[]).expect_code(0);
    fs_err::remove_dir_all(sb.work().join(".proofgraph/runs")).expect("remove runs");
    std::os::unix::fs::symlink("/proc/1", sb.work().join(".proofgraph/runs")).expect("symlink");
    let run = prove(&sb, &["--no-cache"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["sandbox_failed"]);
}

/// A change whose one provider needs a service on `port`.
fn service_workspace(sb: &Sandbox, service_command: &str, port: u16) {
    sb.openspec_root("");
    sb.write(
        "openspec/changes/svc/evidence.yaml",
        "version: 2\nclaims:\n  - {id: up, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/svc/execution.yaml",
        format!(
            "version: 1\nproviders:\n  integration:\n    adapter: command\n    service: web\n    command: [sh, -c, \"exit 0\"]\nservices:\n  web:\n    command: [sh, -c, \"{service_command}\"]\n    readiness: {{url: \"http://127.0.0.1:{port}/health\", expectBody: \"run=${{PROOFGRAPH_RUN_ID}}\", timeoutMs: 20000}}\n"
        ),
    );
    git_commit_all(&sb.work());
}

#[test]
fn without_isolation_a_service_whose_port_already_answers_is_refused() {
    let sb = Sandbox::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    service_workspace(&sb, "sleep 30", port);
    let run = sb.run(
        &sb.work(),
        &["prove", "svc", "--isolation", "none", "--json"],
    );
    run.expect_code(1);
    let doc = run.json();
    assert_emits!(run.status_codes(), "readiness_port_in_use");
    let receipt = &doc["providers"][0]["receipts"][0];
    assert_eq!(receipt["outcome"], "error");
    assert!(
        receipt["reason"]
            .as_str()
            .unwrap_or("")
            .contains("readiness_port_in_use"),
        "{receipt}"
    );
    drop(listener);
}

#[test]
fn a_service_that_crashes_on_start_fails_its_users_fast_with_its_last_lines() {
    let sb = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    service_workspace(&sb, "echo booting; echo fatal: no config >&2; exit 3", port);
    let started = std::time::Instant::now();
    let run = sb.run(&sb.work(), &["prove", "svc", "--json"]);
    run.expect_code(1);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "it waited for the readiness timeout"
    );
    let reason = run.json()["providers"][0]["receipts"][0]["reason"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        reason.contains("exited with code 3 before it was ready"),
        "{reason}"
    );
    assert!(reason.contains("fatal: no config"), "{reason}");
}

#[test]
fn setup_runs_in_fresh_sandboxes_and_its_cache_is_reused() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"mkdir -p deps && echo installed > deps/lib.txt && echo setup >> {}\"]]\n    setupCache: [deps]\n", sb.channel("setups").env()),
    );
    sb.write("app/src/main.txt", "v1\n");
    sb.write("app/package-lock.json", "{\"lockfileVersion\": 3}\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  integration:\n    adapter: command\n    repository: app\n    command: [sh, -c, \"grep -q installed deps/lib.txt\"]\n",
    );
    git_commit_all(&sb.work());
    let setups = || sb.channel("setups").lines();
    sb.run(&sb.work(), &["prove", "x", "--json"]).expect_code(0);
    assert_eq!(setups(), 1);
    // A source edit reruns the provider; setup comes from the cache.
    sb.write("app/src/main.txt", "v2\n");
    let run = sb.run(&sb.work(), &["prove", "x", "--json"]);
    run.expect_code(0);
    assert_eq!(ran(&run.json()), vec!["integration"]);
    assert_eq!(setups(), 1, "setup was restored from its cache");
    assert!(
        run.stderr.contains("restored 1 files from the setup cache"),
        "{}",
        run.stderr
    );
    // A lockfile edit invalidates the cache: setup runs again.
    sb.write(
        "app/package-lock.json",
        "{\"lockfileVersion\": 3, \"changed\": true}\n",
    );
    sb.run(&sb.work(), &["prove", "x", "--json"]).expect_code(0);
    assert_eq!(setups(), 2);
    // A failing setup makes the repository's providers `error`, with its log.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"echo cannot install >&2; exit 4\"]]\n",
    );
    let run = sb.run(&sb.work(), &["prove", "x", "--json"]);
    run.expect_code(1);
    let reason = run.json()["providers"][0]["receipts"][0]["reason"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        reason.contains("the setup of its repository failed") && reason.contains("cannot install"),
        "{reason}"
    );
}

/// On a terminal, progress is a bar redrawn in place under the lines (run
/// under a pseudo-terminal with util-linux `script`); in a pipe or log it is
/// plain lines without one escape code.
#[test]
fn progress_is_a_bar_on_a_terminal_and_plain_lines_otherwise() {
    let sb = Sandbox::new();
    workspace(&sb);
    let plain = prove(&sb, &["--no-cache"]);
    plain.expect_code(0);
    assert!(!plain.stderr.contains('\u{1b}'), "{:?}", plain.stderr);
    assert!(
        plain.stderr.contains("  passed  test ("),
        "{}",
        plain.stderr
    );
    let command = format!(
        "{} prove add-x --no-cache",
        env!("CARGO_BIN_EXE_proofgraph")
    );
    let runs = sb.channel("runs");
    let tty = sb.command_with_env(
        "script",
        &sb.work(),
        &["-qec", &command, "/dev/null"],
        &[("RUNS_LOG", runs.env()), ("COLUMNS", "100")],
    );
    assert_eq!(
        tty.code,
        Some(0),
        "`script` (util-linux, `apt-get install bsdutils`) runs prove under a terminal: {}{}",
        tty.stdout,
        tty.stderr
    );
    assert!(tty.stdout.contains("\r\u{1b}[2K[#"), "{:?}", tty.stdout);
    assert!(tty.stdout.contains("] 4/4"), "{:?}", tty.stdout);
    assert!(tty.stdout.contains("running: "), "{:?}", tty.stdout);
    assert!(tty.stdout.contains("  passed  test ("), "{:?}", tty.stdout);
}

/// With `proofgraph watch` running, prove reads its snapshots (no lstat per
/// file) and reruns exactly what it reruns without it; a second watcher is
/// refused; SIGTERM stops the watcher cleanly and removes its socket.
#[test]
fn with_a_watcher_only_what_changed_reruns_too() {
    use std::io::Read as _;
    let sb = Sandbox::new();
    workspace(&sb);
    let socket = sb.work().join(".proofgraph/watch.sock");
    let mut watcher = sb
        .proofgraph(&sb.work())
        .args(["watch", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start proofgraph watch");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !socket.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the watcher did not start answering"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    edits_rerun_exactly_what_they_touch(&sb);
    // A new tracked file in a new directory of web.
    sb.write("web/src/lib/util.js", "util\n");
    git(&sb.work(), &["add", "web/src/lib/util.js"]);
    assert_eq!(ran(&prove(&sb, &[]).json()), vec!["lint", "test"]);
    sb.write("web/src/lib/util.js", "util v2\n");
    assert_eq!(ran(&prove(&sb, &[]).json()), vec!["lint", "test"]);
    assert_eq!(ran(&prove(&sb, &[]).json()), Vec::<String>::new());

    let doctor = sb.run(&sb.work(), &["doctor", "--json"]);
    assert_eq!(doctor.json()["proof_store"]["watcher"], true);
    // One watcher per workspace.
    let second = sb.run(&sb.work(), &["watch", "--json"]);
    second.expect_code(3);
    assert_codes!(second.status_codes(), ["watch_unavailable"]);

    let pid = watcher.id().to_string();
    // The shell's own `kill` (no procps needed).
    let killed = std::process::Command::new("sh")
        .args(["-c", &format!("kill -TERM {pid}")])
        .status()
        .expect("run sh");
    assert!(killed.success());
    let status = watcher.wait().expect("wait for the watcher");
    let mut stdout = String::new();
    let mut stderr = String::new();
    watcher
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    watcher
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert_eq!(status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(doc["served"]["refused"], 0, "{stderr}");
    assert_eq!(
        doc["served"]["answered"], 8,
        "each of the 8 proves asked the watcher once, for both repositories: {doc:#}\n{stderr}"
    );
    assert!(!socket.exists(), "the socket is removed");
    let doctor = sb.run(&sb.work(), &["doctor", "--json"]);
    assert_eq!(doctor.json()["proof_store"]["watcher"], false);
    assert_eq!(prove(&sb, &[]).json()["summary"]["reused"], 5);
}

/// What `prove --json` says it did with a provider (`ran`, `blocked`, ...).
fn action_of(doc: &Value, name: &str) -> String {
    doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["provider"] == name)
        .map(|p| p["action"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("no {name} in {doc}"))
}

/// A workspace whose change `add-x` has one claim needing `capabilities` (a YAML list's
/// items); the test writes its `execution.yaml`.
fn one_claim_change(capabilities: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        format!(
            "version: 2\nclaims:\n  - {{id: works, scenario: It works, capabilities: [{capabilities}]}}\n"
        ),
    );
    sb
}

/// Without `--keep-going` a failure stops the run: with `--jobs 1` the run already
/// holds the next provider, waiting for the slot; it is taken back, never executed,
/// and reported blocked like the ones not handed to the run yet.
#[test]
fn after_a_failure_the_provider_waiting_in_the_run_never_runs() {
    let sb = one_claim_change("static-analysis");
    let provider = |name: &str, script: &str| {
        format!(
            "  {name}:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"echo {name} >> \\\"$RUNS_LOG\\\"; {script}\"]\n    envFrom: [RUNS_LOG]\n"
        )
    };
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n{}{}{}",
            provider("a-fails", "sleep 0.3; exit 1"),
            provider("b-waits", "exit 0"),
            provider("c-later", "exit 0"),
        ),
    );
    git_commit_all(&sb.work());
    let run = prove(&sb, &["--jobs", "1"]);
    run.expect_code(1);
    let doc = run.json();
    let action = |name: &str| action_of(&doc, name);
    assert_eq!(action("a-fails"), "ran", "{doc}");
    assert_eq!(action("b-waits"), "blocked", "{doc}");
    assert_eq!(action("c-later"), "blocked", "{doc}");
    // Only the failing one ever executed.
    assert_eq!(sb.channel("runs").read(), "a-fails\n");
}

/// A provider judged from its report holds the one waiting in the run even when its
/// command exits 0: here the report shows fewer tests than `minimum`, the verdict fails,
/// and without `--keep-going` the provider waiting for the slot never runs.
#[test]
fn a_failure_judged_from_a_report_stops_the_run_before_the_waiting_provider_starts() {
    let sb = one_claim_change("discovery, static-analysis");
    sb.write(
        "tests.sh",
        "echo a-short >> \"$RUNS_LOG\"\nprintf 'TAP version 13\\n1..1\\nok 1 - only one\\n' > out.tap\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  a-short:\n    adapter: test-discovery\n    capability: discovery\n    command: [sh, tests.sh]\n    report: out.tap\n    minimum: 5\n    envFrom: [RUNS_LOG]\n  b-waits:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"echo b-waits >> \\\"$RUNS_LOG\\\"\"]\n    envFrom: [RUNS_LOG]\n",
    );
    git_commit_all(&sb.work());
    let run = prove(&sb, &["--jobs", "1"]);
    run.expect_code(1);
    let doc = run.json();
    let action = |name: &str| action_of(&doc, name);
    assert_eq!(action("a-short"), "ran", "{doc}");
    assert_eq!(action("b-waits"), "blocked", "{doc}");
    let log = sb.channel("runs").take();
    assert_eq!(log, "a-short\n", "only the short suite executed");
    // With --keep-going the run goes on after judging it.
    let run = prove(&sb, &["--jobs", "1", "--keep-going"]);
    run.expect_code(1);
    assert_eq!(sb.channel("runs").read(), "a-short\nb-waits\n");
}

/// A custom script's summary-only JSON report (no runner format) is sniffed: its integer
/// total counts for discovery; a string never does, and a summary without an integer total
/// is no report (neither receipt passes); failures it reports fail the suite even when the
/// script exits 0.
#[test]
fn a_summary_only_json_report_counts_for_discovery_and_is_never_coerced() {
    let sb = Sandbox::new();
    workspace(&sb);
    let path = sb.work().join("openspec/changes/add-x/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replacen("    report: out.tap\n", "    report: out.json\n", 1),
    );
    let script = |json: &str| format!("#!/bin/sh\nprintf '%s\\n' '{json}' > out.json\n");
    let cases = [
        (r#"{"totalTests": 3, "failed": 0}"#, "passed", "passed", 0),
        (
            r#"{"summary": {"totalTests": "3"}}"#,
            "inconclusive",
            "inconclusive",
            2,
        ),
        (r#"{"totalTests": 3, "failed": 1}"#, "failed", "passed", 1),
    ];
    for (json, test, discovery, code) in cases {
        sb.write("web/tests.sh", script(json));
        git_commit_all(&sb.work());
        let run = prove(&sb, &["--keep-going"]);
        run.expect_code(code);
        let s = states(&run.json());
        assert_eq!(s["web-works/test"], test, "{json}");
        assert_eq!(s["web-works/discovery"], discovery, "{json}");
    }
}

/// Starts `proofgraph watch` in the sandbox's workspace and waits for its
/// socket.
pub(crate) fn start_watcher(sb: &Sandbox) -> std::process::Child {
    let socket = sb.work().join(".proofgraph/watch.sock");
    let watcher = sb
        .proofgraph(&sb.work())
        .args(["watch", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start proofgraph watch");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !socket.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the watcher did not start answering"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    watcher
}

/// Stops a watcher with SIGTERM; its JSON document and its log.
pub(crate) fn stop_watcher(watcher: std::process::Child) -> (Value, String) {
    let killed = std::process::Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", watcher.id())])
        .status()
        .expect("run sh");
    assert!(killed.success());
    let out = watcher.wait_with_output().expect("wait for the watcher");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = serde_json::from_slice(&out.stdout).expect("one JSON document");
    (doc, stderr)
}

/// Another process holding a shared writable mapping of a file (Python's
/// `mmap`), writing through it on request: its writes make no inotify event.
struct Mapping {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Mapping {
    fn new(path: &Path) -> Self {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import mmap, os, sys\n\
                 fd = os.open(sys.argv[1], os.O_RDWR)\n\
                 m = mmap.mmap(fd, 0)\n\
                 os.close(fd)\n\
                 print('mapped', flush=True)\n\
                 for line in sys.stdin:\n\
                 \x20   at, byte = line.split()\n\
                 \x20   m[int(at)] = ord(byte)\n\
                 \x20   print('written', flush=True)\n\
                 m.close()\n",
            ])
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs (install python3)");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = std::io::BufReader::new(stdout).lines();
        assert_eq!(
            lines.next().map(|l| l.expect("a line")).as_deref(),
            Some("mapped")
        );
        Mapping { child, lines }
    }

    fn write(&mut self, at: usize, byte: char) {
        use std::io::Write as _;
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{at} {byte}").expect("ask");
        assert_eq!(
            self.lines.next().map(|l| l.expect("a line")).as_deref(),
            Some("written")
        );
    }

    /// Unmaps and exits.
    fn finish(mut self) {
        drop(self.child.stdin.take());
        assert!(self.child.wait().expect("wait").success());
    }
}

/// SIGTERM stops a watcher whose store directory was deleted under it: its
/// socket is gone, so nothing can wake the accept loop by connecting to it,
/// and the watcher still stops, cleanly, with its report.
#[test]
fn sigterm_stops_a_watcher_whose_socket_was_deleted() {
    let sb = Sandbox::new();
    workspace(&sb);
    let mut watcher = start_watcher(&sb);
    fs_err::remove_dir_all(sb.work().join(".proofgraph")).expect("rm -r .proofgraph");
    let killed = std::process::Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", watcher.id())])
        .status()
        .expect("run sh");
    assert!(killed.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while watcher.try_wait().expect("try_wait").is_none() {
        if std::time::Instant::now() > deadline {
            watcher.kill().expect("kill -9");
            let out = watcher.wait_with_output().expect("wait");
            panic!(
                "SIGTERM did not stop the watcher in 10 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = watcher.wait_with_output().expect("wait for the watcher");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["served"]["refused"], 0, "{stderr}");
    assert!(
        doc["served"]["work_trees"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{doc:#}"
    );
}

/// With `proofgraph watch` running, a tracked file changed in a way that
/// makes no inotify event in its directory — through a hard link outside the
/// work tree, through a shared writable mapping (twice in one mapping), by a
/// rename from outside, below a directory that is a symbolic link — still
/// reruns its providers, as without a watcher; and what the watcher last
/// answered is what a prove without it sees.
#[test]
fn with_a_watcher_changes_no_directory_event_names_rerun_too() {
    let sb = Sandbox::new();
    workspace(&sb);
    let outside = sb.path().join("outside");
    fs_err::create_dir_all(&outside).expect("mkdir");
    let watcher = start_watcher(&sb);
    prove(&sb, &[]).expect_code(0);
    assert_eq!(ran(&prove(&sb, &[]).json()), Vec::<String>::new());
    let app = sb.work().join("web/src/app.js");
    let web = vec!["lint".to_owned(), "test".to_owned()];

    fs_err::hard_link(&app, outside.join("x")).expect("ln");
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        Vec::<String>::new(),
        "a new link changes no content"
    );
    fs_err::write(outside.join("x"), "bad\n").expect("write through the link");
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        web,
        "written through a hard link"
    );

    let mut mapping = Mapping::new(&app);
    mapping.write(0, 'B');
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        web,
        "a write through a mapping"
    );
    mapping.write(1, 'A');
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        web,
        "a second write through the same mapping"
    );
    mapping.finish();
    assert_eq!(ran(&prove(&sb, &[]).json()), Vec::<String>::new());

    fs_err::write(outside.join("new.js"), "renamed in\n").expect("write");
    fs_err::rename(outside.join("new.js"), &app).expect("mv");
    assert_eq!(ran(&prove(&sb, &[]).json()), web, "renamed in from outside");

    fs_err::rename(sb.work().join("web/src"), outside.join("src")).expect("mv");
    std::os::unix::fs::symlink(outside.join("src"), sb.work().join("web/src")).expect("ln -s");
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        Vec::<String>::new(),
        "the same files through a linked directory"
    );
    fs_err::write(outside.join("src/app.js"), "edited where the link points\n").expect("write");
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        web,
        "edited where a linked directory points"
    );

    let (doc, stderr) = stop_watcher(watcher);
    assert_eq!(doc["served"]["refused"], 0, "{stderr}");
    assert_eq!(doc["served"]["answered"], 10, "{doc:#}\n{stderr}");
    assert_eq!(
        ran(&prove(&sb, &[]).json()),
        Vec::<String>::new(),
        "without the watcher, nothing is new"
    );
}

/// A bind mount over a tracked directory makes no inotify event: the watcher
/// sees the mount table change, and prove reruns what reads the mounted
/// files (then, unmounted, reuses the earlier receipts). Runs in a mount
/// namespace of its own (`unshare`, util-linux; root, or a user namespace).
#[test]
fn with_a_watcher_a_bind_mount_over_a_tracked_directory_reruns() {
    let sb = Sandbox::new();
    workspace(&sb);
    prove(&sb, &[]).expect_code(0);
    let script = r#"set -eu
pg="$1"
"$pg" watch --json > ../watch.json 2> ../watch.log &
w=$!
i=0
while [ ! -S .proofgraph/watch.sock ]; do i=$((i+1)); [ $i -lt 1000 ] || exit 9; sleep 0.02; done
"$pg" prove add-x --json > ../before.json || true
mkdir -p ../mounted
printf 'mounted\n' > ../mounted/app.js
mount --bind ../mounted web/src
"$pg" prove add-x --json > ../mounted.json || true
umount web/src
"$pg" prove add-x --json > ../unmounted.json || true
kill -TERM $w
wait $w
"#;
    // `/proc/self` belongs to the effective user.
    let root =
        std::os::unix::fs::MetadataExt::uid(&fs_err::metadata("/proc/self").expect("proc")) == 0;
    let unshare: &[&str] = if root {
        &["--mount", "--propagation", "private"]
    } else {
        &[
            "--user",
            "--map-root-user",
            "--mount",
            "--propagation",
            "private",
        ]
    };
    let mut args: Vec<&str> = unshare.to_vec();
    args.extend(["sh", "-c", script, "sh", env!("CARGO_BIN_EXE_proofgraph")]);
    let runs = sb.channel("runs");
    let run = sb.command_with_env("unshare", &sb.work(), &args, &[("RUNS_LOG", runs.env())]);
    let log = fs_err::read_to_string(sb.path().join("watch.log")).unwrap_or_default();
    assert_eq!(
        run.code,
        Some(0),
        "`unshare` (util-linux) and `mount` run the scenario in a mount namespace: {}{}\n{log}",
        run.stdout,
        run.stderr
    );
    let doc = |name: &str| -> Value {
        let text = fs_err::read_to_string(sb.path().join(name)).expect("a prove document");
        serde_json::from_str(&text).expect("one JSON document")
    };
    assert_eq!(ran(&doc("before.json")), Vec::<String>::new());
    assert_eq!(
        ran(&doc("mounted.json")),
        vec!["lint", "test"],
        "the mounted directory's files are read"
    );
    assert_eq!(ran(&doc("unmounted.json")), Vec::<String>::new(), "{log}");
    let watch = doc("watch.json");
    assert_eq!(watch["served"]["answered"], 3, "{log}");
    assert!(
        log.contains("full snapshot of"),
        "the mount made the watcher start over: {log}"
    );
}
