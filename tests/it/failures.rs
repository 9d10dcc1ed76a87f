//! Failures a person can read: the end of the log under a failed prove, `log` for all of it,
//! and every path a run reports named relative to its repository — never inside the
//! sandbox the run deleted — whatever the sandbox mode and wherever the path appears.

use serde_json::Value;

use crate::support::{Sandbox, assert_emits, git_commit_all, provider};

/// A repository `web` whose suite writes a TAP report naming each test by its file's
/// absolute path (as vitest and others do), logs its working directory and a source path,
/// and fails one test; plus a passing lint and a contract.
fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  web: {path: web}\n",
    );
    sb.write(
        "web/suite.sh",
        r#"echo "running in $PWD"
echo "reading $PWD/src/app.js"
for i in $(seq 1 30); do echo "noise line $i"; done
{ echo 'TAP version 13'; echo '1..2'
  echo "ok 1 - $PWD/tests/a.test.js > adds"
  echo "not ok 2 - $PWD/tests/b.test.js > subtracts"
} > out.tap
echo "FAIL $PWD/tests/b.test.js:3:7 expected 1 to be 2"
exit 1
"#,
    );
    sb.write("web/src/app.js", "app\n");
    sb.write("web/contract.json", "{}\n");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [test, static-analysis], repositories: [web]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  suite:\n    adapter: test-discovery\n    capability: test\n    repository: web\n    command: [sh, suite.sh]\n    report: out.tap\n  lint:\n    adapter: command\n    capability: static-analysis\n    repository: web\n    command: [sh, -c, \"echo lint ok\"]\n",
    );
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, mode: &str) -> (i32, Value, String) {
    let run = sb.run(&sb.work(), &["prove", "x", "--sandbox", mode, "--json"]);
    let code = run.code.expect("an exit code");
    let doc = run.json();
    let human = sb.run(&sb.work(), &["prove", "x", "--sandbox", mode, "--no-cache"]);
    (code, doc, human.stdout)
}

#[test]
fn a_failure_shows_the_end_of_its_log_and_every_path_relative_to_the_repository() {
    for mode in ["worktree", "copy", "none"] {
        let sb = Sandbox::new();
        workspace(&sb);
        let (code, doc, human) = prove(&sb, mode);
        assert_eq!(code, 1, "{mode}: {doc}");
        let suite = provider(&doc, "suite");
        let tail: Vec<&str> = suite["log_tail"]
            .as_array()
            .expect("a failed provider's log tail")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(tail.len(), 15, "{mode}: the last 15 lines: {tail:?}");
        assert_eq!(
            tail.last(),
            Some(&"FAIL tests/b.test.js:3:7 expected 1 to be 2"),
            "{mode}"
        );
        assert!(
            provider(&doc, "lint").get("log_tail").is_none(),
            "{mode}: a pass shows no log"
        );
        assert!(
            human.contains(
                "suite did not pass; the end of its log (all of it: proofgraph log x suite):"
            ) && human.contains("  | FAIL tests/b.test.js:3:7 expected 1 to be 2"),
            "{mode}: {human}"
        );
        // The failing test is named as the repository names it.
        let reason = suite["receipts"][0]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("failing: tests/b.test.js > subtracts"),
            "{mode}: {reason}"
        );
        // `log` prints all of it, relative too: in a sandbox the working directory is the
        // repository (`.`); running in place it is the repository's real directory, which
        // is where the user's files are.
        let log = sb.run(&sb.work(), &["log", "x", "suite"]);
        log.expect_code(0);
        let web = sb.work().join("web");
        let cwd = if mode == "none" {
            web.display().to_string()
        } else {
            ".".to_owned()
        };
        assert!(
            log.stdout
                .starts_with(&format!("running in {cwd}\nreading src/app.js\n")),
            "{mode}: {}",
            log.stdout
        );
        assert!(log.stdout.contains("noise line 1\n"), "{mode}");
        // No absolute path into the run or the store anywhere derived, nor into the
        // repository but where a command printed its working directory as it is.
        let store = sb.work().join(".proofgraph");
        let log_text = log.stdout.replacen(&format!("running in {cwd}"), "", 1);
        for text in [doc.to_string(), human.clone(), log_text] {
            for forbidden in [store.display().to_string(), format!("{}/", web.display())] {
                assert!(!text.contains(&forbidden), "{mode}: {forbidden} in {text}");
            }
        }
    }
}

#[test]
fn log_says_why_it_has_nothing_to_print() {
    let sb = Sandbox::new();
    workspace(&sb);
    let nothing = sb.run(&sb.work(), &["log", "x", "suite", "--json"]);
    nothing.expect_code(3);
    assert_emits!(nothing.status_codes(), "no_log");
    let unknown = sb.run(&sb.work(), &["log", "x", "nope", "--json"]);
    unknown.expect_code(3);
    assert_emits!(unknown.status_codes(), "unknown_provider");
    let (_, doc, _) = prove(&sb, "worktree");
    let lint = provider(&doc, "lint")["receipts"][0]["sha256"]
        .as_str()
        .expect("lint's receipt")
        .to_owned();
    // A receipt of another provider is not this one's log.
    let other = sb.run(
        &sb.work(),
        &["log", "x", "suite", "--receipt", &lint, "--json"],
    );
    other.expect_code(3);
    assert_emits!(other.status_codes(), "no_log");
    let own = sb.run(&sb.work(), &["log", "x", "lint", "--receipt", &lint]);
    own.expect_code(0);
    assert_eq!(own.stdout, "lint ok\n");
    let garbage = sb.run(
        &sb.work(),
        &["log", "x", "lint", "--receipt", "not-a-digest", "--json"],
    );
    garbage.expect_code(3);
    assert_emits!(garbage.status_codes(), "usage_error");
}

/// One vocabulary: what progress, the summary and the document say of a provider agree, and
/// a command that cannot start is a configuration problem (exit 3) while one that runs out
/// of time is a failure (exit 1), each named as what happened.
#[test]
fn progress_summary_and_document_use_one_vocabulary_for_how_a_run_ended() {
    for (command, timeout, code, result) in [
        (
            "[definitely-not-installed-xyz, --version]",
            "",
            3,
            "could not start",
        ),
        ("[sleep, \"5\"]", "\n    timeoutMs: 300", 1, "timed out"),
        ("[sh, -c, \"exit 1\"]", "", 1, "failed"),
        ("[\"true\"]", "", 0, "passed"),
    ] {
        let sb = Sandbox::new();
        sb.openspec_root("");
        sb.write("openspec/changes/x/proposal.md", "# x\n");
        sb.write(
            "openspec/changes/x/evidence.yaml",
            "version: 2\nclaims:\n  - {id: lints, scenario: It lints, capabilities: [static-analysis]}\n",
        );
        sb.write(
            "openspec/changes/x/execution.yaml",
            format!("version: 1\nproviders:\n  lint:\n    adapter: command\n    capability: static-analysis\n    command: {command}{timeout}\n"),
        );
        git_commit_all(&sb.work());
        let run = sb.run(&sb.work(), &["prove", "x", "--json"]);
        assert_eq!(run.code, Some(code), "{result}: {}", run.stdout);
        let doc = run.json();
        assert_eq!(provider(&doc, "lint")["result"], result, "{doc}");
        assert!(
            run.stderr.contains(&format!("  {result:7} lint (")),
            "{result}: {}",
            run.stderr
        );
        let state = &doc["requirements"][0]["state"];
        let expected = if result == "passed" {
            "passed"
        } else {
            "failed"
        };
        assert_eq!(state, expected, "{result}: the summary agrees");
    }
}

/// The test counts a report gave are in `prove` and `status`, as text and as documents.
#[test]
fn test_counts_are_shown_by_prove_and_status() {
    let sb = Sandbox::new();
    workspace(&sb);
    let (_, doc, human) = prove(&sb, "worktree");
    let status = sb.run(&sb.work(), &["status", "x", "--json"]).json();
    let status_human = sb.run(&sb.work(), &["status", "x"]).stdout;
    for (what, d) in [("prove", &doc), ("status", &status)] {
        let test = d["requirements"]
            .as_array()
            .expect("requirements")
            .iter()
            .find(|r| r["capability"] == "test")
            .expect("the test requirement");
        assert_eq!(
            test["evidence"][0]["counts"],
            serde_json::json!({"total": 2, "passed": 1, "failed": 1, "skipped": 0, "todo": 0}),
            "{what}: {test}"
        );
    }
    for text in [&human, &status_human] {
        assert!(text.contains("[2 tests: 1 passed, 1 failed]"), "{text}");
    }
}

/// A long run says which providers are still running, and `--stream` passes one
/// provider's output through as it is written — before its verdict, relative and redacted.
#[test]
fn a_long_run_says_it_is_running_and_streams_what_it_is_asked_to() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: lints, scenario: It lints, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  slow:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"echo first in $PWD; printf '%0300d\\\\n' 0; sleep 2.5; printf 'no end of line'\"]\n    envFrom: [TOKEN]\n",
    );
    git_commit_all(&sb.work());
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "x", "--heartbeat", "1", "--stream", "slow"],
        &[("TOKEN", "a-token-that-is-long")],
    );
    run.expect_code(0);
    // The sandbox holds back what could be the start of a secret; the 300 zeros after
    // the first line release it while the command still runs.
    let err = &run.stderr;
    let first = err
        .find("  slow | first in .")
        .expect("the first line, streamed");
    let last = err
        .find("  slow | no end of line")
        .expect("the last line, streamed");
    let beat = err
        .find("  ...     slow still running (")
        .expect("a heartbeat");
    let verdict = err.find("  passed  slow (").expect("the verdict");
    assert!(first < beat && beat < verdict && last < verdict, "{err}");
    // Nothing of the kind without the flags, and a provider that does not exist is refused.
    let quiet = sb.run_with_env(
        &sb.work(),
        &["prove", "x", "--no-cache", "--heartbeat", "0"],
        &[("TOKEN", "a-token-that-is-long")],
    );
    quiet.expect_code(0);
    assert!(
        !quiet.stderr.contains("still running") && !quiet.stderr.contains(" | "),
        "{}",
        quiet.stderr
    );
    let wrong = sb.run(&sb.work(), &["prove", "x", "--stream", "nope", "--json"]);
    wrong.expect_code(3);
    assert_emits!(wrong.status_codes(), "unknown_provider");
}

/// The heartbeat of a runner that reports each test as it goes (TAP here; libtest, `go
/// test -v`, `pytest -v` and the JSON event streams alike) says how many it has seen.
#[test]
fn a_heartbeat_counts_the_tests_a_runner_has_reported_so_far() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: lints, scenario: It lints, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  slow:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"printf 'TAP version 13\\\\nok 1 - a\\\\nok 2 - b\\\\nnot ok 3 - c\\\\n    ok 1 - nested\\\\n'; sleep 2.5; echo done\"]\n",
    );
    git_commit_all(&sb.work());
    let run = sb.run(&sb.work(), &["prove", "x", "--heartbeat", "1"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("; so far 3 tests: 2 passed, 1 failed)"),
        "{}",
        run.stderr
    );
}

/// After a revert, `explain` compares with the receipt whose inputs are closest to today's
/// tree — the older one that matches again — and says which it chose, instead of blaming a
/// file that is back to its old content.
#[test]
fn explain_compares_with_the_closest_receipt_and_says_so() {
    let sb = Sandbox::new();
    sb.write("a.txt", "one\n");
    sb.write("b.txt", "b\n");
    sb.lint_change("[\"true\"]");
    let explain = |sb: &Sandbox| {
        let run = sb.run(&sb.work(), &["explain", "add-x", "lint", "--json"]);
        run.expect_code(0);
        run.json()
    };
    sb.run(&sb.work(), &["prove", "add-x"]).expect_code(0);
    sb.write("a.txt", "two\n");
    sb.run(&sb.work(), &["prove", "add-x"]).expect_code(0);
    // Back to the first content: the latest receipt is for `two`, the first matches again.
    sb.write("a.txt", "one\n");
    let doc = explain(&sb);
    assert_eq!(doc["chosen"], "closest", "{doc}");
    assert_eq!(doc["changes"], serde_json::json!([]), "{doc}");
    let human = sb.run(&sb.work(), &["explain", "add-x", "lint"]).stdout;
    assert!(
        human.contains("lint is current") && human.contains("an earlier receipt"),
        "{human}"
    );
    // One more edit elsewhere: compared with the closest, only that file is named.
    sb.write("b.txt", "changed\n");
    let doc = explain(&sb);
    assert_eq!(doc["chosen"], "closest", "{doc}");
    assert_eq!(
        doc["inputs"]["changed"],
        serde_json::json!(["root:b.txt"]),
        "{doc}"
    );
    // With the tree at the latest receipt's inputs, it is the latest again.
    sb.write("b.txt", "b\n");
    sb.write("a.txt", "two\n");
    let doc = explain(&sb);
    assert_eq!(doc["chosen"], "latest", "{doc}");
}

/// What the new ways of reading a failure show never holds a secret: the log's tail under
/// `prove`, `--stream` while it runs, and `log`, as text and as a document — raw, and in the
/// JSON-escaped form a runner writes into a report.
#[test]
fn a_secret_never_leaves_through_a_log_tail_a_stream_or_log() {
    const SECRET: &str = "sw0rdfish-\"and-more";
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: lints, scenario: It lints, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  lint:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"echo \\\"token: $TOKEN\\\"; printf '%0300d\\\\n' 0; sleep 0.5; echo \\\"again $TOKEN at the end\\\"; exit 1\"]\n    envFrom: [TOKEN]\n",
    );
    git_commit_all(&sb.work());
    let env = [("TOKEN", SECRET)];
    let human = sb.run_with_env(&sb.work(), &["prove", "x", "--stream", "lint"], &env);
    human.expect_code(1);
    assert!(
        human.stderr.contains("  lint | token: "),
        "{}",
        human.stderr
    );
    assert!(human.stdout.contains("  | again "), "{}", human.stdout);
    let json = sb.run_with_env(&sb.work(), &["prove", "x", "--no-cache", "--json"], &env);
    json.expect_code(1);
    assert!(
        !provider(&json.json(), "lint")["log_tail"]
            .as_array()
            .expect("a tail")
            .is_empty()
    );
    let log = sb.run_with_env(&sb.work(), &["log", "x", "lint"], &env);
    log.expect_code(0);
    assert!(log.stdout.contains("token: "), "{}", log.stdout);
    let log_json = sb.run_with_env(&sb.work(), &["log", "x", "lint", "--json"], &env);
    log_json.expect_code(0);
    let escaped = serde_json::to_string(SECRET).expect("JSON");
    let escaped = escaped.trim_matches('"');
    for text in [
        &human.stdout,
        &human.stderr,
        &json.stdout,
        &json.stderr,
        &log.stdout,
        &log_json.stdout,
    ] {
        assert!(!text.contains(SECRET) && !text.contains(escaped), "{text}");
        assert!(!text.contains("sw0rdfish"), "{text}");
    }
}
