//! Failures with their messages (issue 29): for each report format, a failing suite's
//! `prove` shows, after `failing:`, each failing test with the assertion its runner
//! reported, and `log` prints them after the log — also when the command's own log is
//! empty (go test and `node --test` write everything into their report). Real runners
//! where they are installed (go, cargo, pytest's JUnit from the Python test tools' venv,
//! `node --test`'s TAP); the real Jest and Vitest reports of `fixtures/reports/` where they
//! are not (`tools/package.json` installs neither). Each case is pinned by a snapshot of both
//! commands' output.

use crate::support::{Run, Sandbox, git_commit_all, repo_root, snapshot_settings, transcript};

/// A repository at the work tree's root whose `test` provider runs `command` and writes
/// `report` (`format`), with `files` beside it.
fn workspace(sb: &Sandbox, files: &[(&str, &str)], command: &str, report: &str, extra: &str) {
    sb.openspec_root("");
    for (path, text) in files {
        sb.write(path, text);
    }
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [test]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: {command}\n    report: {report}\n    timeoutMs: 600000\n{extra}"
        ),
    );
    git_commit_all(&sb.work());
}

/// `prove x` (which fails) and `log x test`, as the user reads them, pinned as `name`;
/// returns both runs.
fn snap(sb: &Sandbox, name: &str) -> (Run, Run) {
    snap_with(sb, name, &[])
}

/// [`snap`], with `vars` set for `prove`.
fn snap_with(sb: &Sandbox, name: &str, vars: &[(&str, &str)]) -> (Run, Run) {
    let prove_args = ["prove", "x"];
    let prove = sb.run_with_env(&sb.work(), &prove_args, vars);
    assert_eq!(
        prove.code,
        Some(1),
        "{name}: {}\n{}",
        prove.stdout,
        prove.stderr
    );
    let log_args = ["log", "x", "test"];
    let log = sb.run(&sb.work(), &log_args);
    log.expect_code(0);
    // What a run makes different every time: a thread's id in a Rust panic, a build's
    // time, a test runner's timings.
    let mut settings = snapshot_settings(sb);
    for (regex, replacement) in [
        (r"' \(\d+\) panicked", "' ([TID]) panicked"),
        (r"in \d+(?:\.\d+)?m?s\b", "in [DURATION]"),
        (r"\(\d+\.\d+s\)", "([DURATION])"),
        (r"duration_ms \d+(?:\.\d+)?", "duration_ms [DURATION]"),
    ] {
        settings.add_filter(regex, replacement);
    }
    // stdout only: the progress on stderr is pinned elsewhere, and holds timings.
    let text = format!(
        "{}\n{}",
        transcript(&prove_args, &stdout_only(&prove)),
        transcript(&log_args, &stdout_only(&log))
    );
    settings.bind(|| insta::assert_snapshot!(name, text));
    (prove, log)
}

fn stdout_only(run: &Run) -> Run {
    Run {
        code: run.code,
        stdout: run.stdout.clone(),
        stderr: String::new(),
    }
}

/// `prove x --json`'s failures of provider `test`: (test, message) pairs.
fn json_failures(sb: &Sandbox) -> Vec<(String, String)> {
    json_failures_with(sb, &[])
}

/// [`json_failures`], with `vars` set.
fn json_failures_with(sb: &Sandbox, vars: &[(&str, &str)]) -> Vec<(String, String)> {
    let run = sb.run_with_env(&sb.work(), &["prove", "x", "--no-cache", "--json"], vars);
    let doc = run.json();
    crate::support::provider(&doc, "test")["failures"]["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("no failures: {doc:#}"))
        .iter()
        .map(|f| {
            (
                f["test"].as_str().unwrap_or_default().to_owned(),
                f["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn require(program: &str, install: &str) {
    let ok = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        || std::process::Command::new(program)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success());
    assert!(ok, "this test needs `{program}`; install it with {install}");
}

#[test]
fn go_test_s_failing_assertion_is_shown_though_its_log_is_empty() {
    require("go", "`apt-get install golang-go`");
    let sb = Sandbox::new();
    workspace(
        &sb,
        &[
            ("go.mod", "module example.com/add\n\ngo 1.18\n"),
            (
                "add.go",
                "package add\n\nfunc Add(a, b int) int { return a - b }\n",
            ),
            (
                "add_test.go",
                "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tt.Log(\"adding 2 and 2\")\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(\"zero\")\n\t}\n}\n",
            ),
            (".gitignore", "test-results/\n"),
        ],
        "[sh, -c, 'mkdir -p test-results && exec \"$@\" > test-results/go-test.json', sh, go, test, -json, -count=1, ./...]",
        "test-results/go-test.json",
        "    reportFormat: go-test-json\n",
    );
    let (_, log) = snap(&sb, "failure_messages_go_test");
    assert!(
        log.stdout
            .starts_with("failing (as the report of this run attached it to each test):\n"),
        "the log itself is empty: {}",
        log.stdout
    );
    assert_eq!(
        json_failures(&sb),
        [(
            "example.com/add > TestAdd".to_owned(),
            "add_test.go:6: adding 2 and 2\nadd_test.go:8: Add(2, 2) = 0, want 4".to_owned()
        )]
    );
}

#[test]
fn cargo_test_s_assertion_left_and_right_under_the_binary_s_name() {
    require("cargo", "rustup (https://rustup.rs)");
    let sb = Sandbox::new();
    workspace(
        &sb,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
            ),
            (
                "Cargo.lock",
                "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"adder\"\nversion = \"0.1.0\"\n",
            ),
            (
                "src/lib.rs",
                "pub fn add(a: u64, b: u64) -> u64 {\n    a * b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn test_eq() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n",
            ),
            (
                "tests/version.rs",
                "#[test]\nfn test_eq() {\n    println!(\"comparing 1 + 3\");\n    assert_eq!(adder::add(1, 3), 4, \"one plus three\");\n}\n",
            ),
            (
                "tests/version_req.rs",
                "#[test]\nfn test_eq() {\n    assert_eq!(adder::add(0, 0), 0);\n}\n",
            ),
            (".gitignore", "target/\ntest-results/\n"),
        ],
        "[sh, -c, 'mkdir -p test-results && exec \"$@\" > test-results/cargo-test.json', sh, cargo, test, --offline, --no-fail-fast, --, -Z, unstable-options, --format, json]",
        "test-results/cargo-test.json",
        "    reportFormat: libtest-json\n    env: {RUSTC_BOOTSTRAP: \"1\"}\n",
    );
    // rustup finds its toolchains through the real home, as the evidence tests' cargo does.
    let home = std::env::var("HOME").expect("HOME");
    let vars = [("HOME", home.as_str())];
    let (prove, _) = snap_with(&sb, "failure_messages_cargo_test", &vars);
    // Named by the binary cargo announced, never `test_eq [2]`.
    assert!(
        prove.stdout.contains("failing: tests/version.rs > test_eq")
            && !prove.stdout.contains("[2]"),
        "{}",
        prove.stdout
    );
    let failures = json_failures_with(&sb, &vars);
    assert_eq!(
        failures.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["tests/version.rs > test_eq"]
    );
    assert!(
        failures[0]
            .1
            .contains("assertion `left == right` failed: one plus three\n  left: 3\n right: 4"),
        "{}",
        failures[0].1
    );
}

#[test]
fn pytest_s_junit_failure_and_output() {
    let sb = Sandbox::new();
    // The real pytest, the Python test tools' (pinned): `python3` is their venv's.
    let path = sb.path_with_python_tools();
    let vars = [("PATH", path.as_str())];
    workspace(
        &sb,
        &[
            ("calc.py", "def add(a, b):\n    return a - b\n"),
            (
                "test_calc.py",
                "from calc import add\n\n\ndef test_add():\n    print(\"adding 2 and 2\")\n    assert add(2, 2) == 4\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
            ),
            (".gitignore", "pytest.xml\n__pycache__/\n"),
        ],
        "[python3, -m, pytest, -q, -p, no:cacheprovider, --junitxml=pytest.xml, -o, junit_logging=system-out]",
        "pytest.xml",
        "    reportFormat: junit\n",
    );
    snap_with(&sb, "failure_messages_junit", &vars);
    let failures = json_failures_with(&sb, &vars);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let (test, message) = &failures[0];
    assert_eq!(test, "test_calc > test_add");
    for part in ["assert 0 == 4", "--- system-out", "adding 2 and 2"] {
        assert!(message.contains(part), "{part}: {message}");
    }
}

#[test]
fn node_test_s_tap_diagnostics() {
    require("node", "Node.js 20");
    let sb = Sandbox::new();
    workspace(
        &sb,
        &[
            ("calc.mjs", "export const add = (a, b) => a - b;\n"),
            (
                "test/calc.test.mjs",
                "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../calc.mjs';\n\ntest('adds', () => {\n  assert.equal(add(2, 2), 4);\n});\n\ntest('zero', () => {\n  assert.equal(add(0, 0), 0);\n});\n",
            ),
            (".gitignore", "out.tap\n"),
        ],
        "[node, --test, --test-reporter=tap, --test-reporter-destination=out.tap, test/]",
        "out.tap",
        "    reportFormat: tap\n",
    );
    snap(&sb, "failure_messages_tap");
    let failures = json_failures(&sb);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].0, "adds");
    assert!(
        failures[0].1.contains("4 !== 0") || failures[0].1.contains("0 !== 4"),
        "{}",
        failures[0].1
    );
}

/// A provider that hands in a real report (`fixtures/reports/<rel>`) and fails as its runner
/// did.
fn from_fixture(sb: &Sandbox, rel: &str, format: &str) {
    let report = fs_err::read_to_string(repo_root().join("fixtures/reports").join(rel))
        .expect("a real report");
    workspace(
        sb,
        &[("report.src", &report), (".gitignore", "out.json\n")],
        "[sh, -c, 'cp report.src out.json; echo \"1 failed\"; exit 1']",
        "out.json",
        &format!("    reportFormat: {format}\n"),
    );
}

#[test]
fn jest_s_failure_messages() {
    let sb = Sandbox::new();
    from_fixture(&sb, "jest/basic.json", "jest");
    snap(&sb, "failure_messages_jest");
    let failures = json_failures(&sb);
    assert!(
        failures[0].1.contains("Expected: 5\nReceived: 4"),
        "{failures:?}"
    );
}

#[test]
fn vitest_s_failure_messages() {
    let sb = Sandbox::new();
    from_fixture(&sb, "vitest/basic.json", "vitest");
    snap(&sb, "failure_messages_vitest");
    let failures = json_failures(&sb);
    assert!(
        failures[0].1.contains("AssertionError: expected 4 to be 5"),
        "{failures:?}"
    );
}

#[test]
fn a_secret_in_a_failure_message_never_reaches_the_output_or_the_store() {
    let sb = Sandbox::new();
    let secret = "s3cr3t-token-value-29";
    let report = "TAP version 13\n1..1\nnot ok 1 - logs in\n  ---\n  message: 'login failed for TOKEN'\n  ...\n";
    workspace(
        &sb,
        &[("report.src", report), (".gitignore", "out.tap\n")],
        "[sh, -c, 'sed \"s/TOKEN/$API_TOKEN/\" report.src > out.tap; exit 1']",
        "out.tap",
        "    envFrom: [API_TOKEN]\n",
    );
    let env = [("API_TOKEN", secret)];
    let prove = sb.run_with_env(&sb.work(), &["prove", "x", "--json"], &env);
    let log = sb.run_with_env(&sb.work(), &["log", "x", "test", "--json"], &env);
    let doc = log.json();
    let message = doc["failures"]["tests"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.starts_with("message: 'login failed for "),
        "{doc:#}"
    );
    let blob = crate::support::cas(&sb, doc["failures_sha256"].as_str().expect("kept"));
    for (what, text) in [
        ("prove", prove.stdout.as_str()),
        ("log", log.stdout.as_str()),
        ("the kept failures", &String::from_utf8_lossy(&blob)),
    ] {
        assert!(!text.contains(secret), "{what}: {text}");
    }
}
