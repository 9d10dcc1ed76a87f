//! `evidence detect|init|doctor` through the CLI: `init --write` followed by
//! `prove` proves the test claim with the real runners (cargo, pytest,
//! vitest); existing wiring keeps its bytes; `doctor` points at the file,
//! line and column of what stands in the way.
//!
//! The library's own tests (`bootstrap/tests/`) cover the rule table on
//! generated layouts with snapshots; these prove the wiring it writes runs.

use serde_json::Value;

use crate::support::{
    Run, Sandbox, assert_codes, assert_emits, git_commit_all, repo_root, statement, states,
};

/// The real HOME: rustup, pyenv and npm find their toolchains and caches
/// through it, as they do for a user. (The sandbox's isolated HOME only
/// matters for OpenSpec's global registry, which these tests do not use.)
fn real_home() -> String {
    std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned())
}

fn run(sb: &Sandbox, args: &[&str]) -> Run {
    let home = real_home();
    sb.run_with_env(&sb.work(), args, &[("HOME", home.as_str())])
}

/// A change whose one claim needs the `test` capability (and so `discovery`).
fn change(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: The code works, capabilities: [test]}\n",
    );
}

/// `init --write`, commit, `prove`: the claim is proven by the runner's
/// own report, with at least `tests` tests discovered.
fn init_then_prove(sb: &Sandbox, tests: u64) {
    let preview = run(sb, &["evidence", "init", "add-x", "--json"]);
    preview.expect_code(0);
    assert_eq!(preview.json()["written"], false);
    assert!(
        !sb.work()
            .join("openspec/changes/add-x/execution.yaml")
            .exists(),
        "a preview writes nothing"
    );
    let init = run(sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(0);
    let doc = init.json();
    assert_eq!(doc["written"], true);
    assert_eq!(doc["added"], serde_json::json!(["test"]), "{doc:#}");
    run(sb, &["validate", "add-x", "--strict"]).expect_code(0);
    let doctor = run(sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(0);
    git_commit_all(&sb.work());
    let prove = run(sb, &["prove", "add-x", "--json"]);
    assert_eq!(
        prove.code,
        Some(0),
        "prove after init --write:\n{}\n{}",
        prove.stdout,
        prove.stderr
    );
    let doc = prove.json();
    let s = states(&doc);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s["works/discovery"], "passed");
    assert_eq!(s["works/test"], "passed");
    let sha = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["capability"] == "discovery")
        .and_then(|r| r["evidence"][0]["sha256"].as_str())
        .expect("a discovery receipt")
        .to_owned();
    let statement = statement(sb, &sha);
    let discovered = statement["predicate"]["proofgraph"]["discovered"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        discovered >= tests,
        "the runner's report counts {discovered} tests, expected at least {tests}: {doc:#}"
    );
}

#[test]
fn init_write_then_prove_a_cargo_crate() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    sb.write(
        "src/lib.rs",
        "pub fn sum(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::sum(1, 2), 3); }\n    #[test]\n    fn adds_negatives() { assert_eq!(super::sum(-1, -2), -3); }\n}\n",
    );
    sb.write(".gitignore", "target/\n");
    git_commit_all(&sb.work());
    init_then_prove(&sb, 2);
}

#[test]
fn init_write_then_prove_a_pytest_project() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write(
        "pyproject.toml",
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
    );
    sb.write("demo/__init__.py", "def sum(a, b):\n    return a + b\n");
    sb.write(
        "tests/test_sum.py",
        "from demo import sum\n\n\ndef test_adds():\n    assert sum(1, 2) == 3\n\n\ndef test_adds_negatives():\n    assert sum(-1, -2) == -3\n",
    );
    git_commit_all(&sb.work());
    let probe = std::process::Command::new("python3")
        .args(["-c", "import pytest"])
        .status();
    assert!(
        probe.is_ok_and(|s| s.success()),
        "this test runs the real pytest: `python3 -m pip install -r tools/interop/requirements.txt`"
    );
    init_then_prove(&sb, 2);
}

/// Vitest comes from npm: the repository's `setup` runs `npm ci` in each
/// fresh sandbox (as a user's would), from the committed lockfile in
/// `fixtures/bootstrap/vitest`, and `setupCache` keeps `node_modules`.
#[test]
fn init_write_then_prove_a_vitest_project() {
    let sb = Sandbox::new();
    change(&sb);
    let fixture = repo_root().join("fixtures/bootstrap/vitest");
    for rel in [
        "package.json",
        "package-lock.json",
        "src/sum.js",
        "src/sum.test.js",
    ] {
        sb.write(rel, fs_err::read(fixture.join(rel)).expect("fixture"));
    }
    sb.write(".gitignore", "node_modules/\ntest-results/\n");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  root:\n    path: .\n    setup: [[npm, ci, --no-audit, --no-fund]]\n    setupCache: [node_modules]\n",
    );
    git_commit_all(&sb.work());
    init_then_prove(&sb, 2);
}

#[test]
fn init_keeps_an_existing_json_file_json_and_its_providers_byte_for_byte() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: The code works, capabilities: [test, static-analysis]}\n",
    );
    let existing = "{\n  \"version\": 1,\n  \"providers\": {\n    \"lint\": {\"adapter\": \"command\", \"capability\": \"static-analysis\", \"command\": [\"sh\", \"-c\", \"true\"]}\n  }\n}\n";
    sb.write("openspec/changes/add-x/execution.yaml", existing);
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    sb.write("src/lib.rs", "#[test]\nfn t() {}\n");
    git_commit_all(&sb.work());
    let init = run(&sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(0);
    assert_eq!(init.json()["kept"], serde_json::json!(["lint"]));
    let text = fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
        .expect("execution.yaml");
    assert!(text.starts_with('{'), "JSON stays JSON: {text}");
    let lint_line = existing.lines().nth(3).expect("the lint line");
    assert!(
        text.contains(lint_line),
        "the existing provider keeps its bytes: {text}"
    );
    serde_json::from_str::<Value>(&text).expect("still JSON");
    run(&sb, &["validate", "add-x", "--strict"]).expect_code(0);
}

#[test]
fn doctor_names_the_helper_script_inputs_do_not_cover_at_its_line() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write(
        "scripts/test.sh",
        "#!/bin/sh\necho 'TAP version 13'; echo '1..1'; echo 'ok 1 - works'\n",
    );
    sb.write("src/app.sh", "echo app\n");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, scripts/test.sh]\n    inputs: [\"src/**\"]\n    report: out.tap\n",
    );
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    assert_codes!(doctor.status_codes(), ["command_file_not_in_inputs"]);
    let doc = doctor.json();
    let d = &doc["status"][0];
    assert!(
        d["message"]
            .as_str()
            .unwrap_or_default()
            .contains("scripts/test.sh"),
        "{d:#}"
    );
    assert_eq!(
        d["target"], "openspec/changes/add-x/execution.yaml:3:3",
        "{d:#}"
    );
    assert!(d["fix"].as_str().is_some_and(|f| !f.is_empty()));
    // Covering the script clears it.
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, scripts/test.sh]\n    inputs: [\"src/**\", scripts/test.sh]\n    report: out.tap\n",
    );
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);
}

#[test]
fn doctor_reports_each_wiring_problem_with_its_code() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write("run-tests.sh", "echo ok\n");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        r#"version: 1
providers:
  unit:
    adapter: test-discovery
    capability: test
    command: [sh, run-tests.sh]
  e2e:
    adapter: test-discovery
    capability: test
    command: [./missing.sh]
    report: out/report.xml
    inputs: ["out/**"]
"#,
    );
    git_commit_all(&sb.work());
    // run-tests.sh stays in the working tree but git stops tracking it.
    crate::support::git(&sb.work(), &["rm", "-q", "--cached", "run-tests.sh"]);
    crate::support::git(&sb.work(), &["commit", "-q", "-m", "untrack"]);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    let codes = doctor.status_codes();
    assert_emits!(codes, "command_file_untracked");
    assert_emits!(codes, "missing_discovery_provider");
    assert_emits!(codes, "test_report_missing");
    assert_emits!(codes, "executable_not_found");
    assert_emits!(codes, "report_inside_inputs");
}

#[test]
fn detect_names_a_manifest_it_cannot_read() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write("package.json", "{\"name\": \"broken\",");
    git_commit_all(&sb.work());
    let detect = run(&sb, &["evidence", "detect", "add-x", "--json"]);
    detect.expect_code(0);
    assert_codes!(
        detect.status_codes(),
        ["manifest_unreadable"],
        "{}",
        detect.stdout
    );
    assert!(
        detect.json()["unresolved"]
            .as_array()
            .is_some_and(|u| !u.is_empty())
    );
}

/// A file `validate` accepts (RFC 8259 sets no limit on numbers) that the
/// editor cannot read back exactly is refused, not rewritten.
#[test]
fn init_refuses_a_file_it_cannot_edit_without_changing_it() {
    let sb = Sandbox::new();
    change(&sb);
    let existing = "{\"version\": 1, \"x-budget\": 1e400, \"providers\": {}}\n";
    sb.write("openspec/changes/add-x/execution.yaml", existing);
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    sb.write("src/lib.rs", "#[test]\nfn t() {}\n");
    git_commit_all(&sb.work());
    let init = run(&sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(3);
    assert_codes!(init.status_codes(), ["init_refused"]);
    assert_eq!(
        fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
            .expect("file"),
        existing,
        "a refused edit leaves the file as it was"
    );
}
