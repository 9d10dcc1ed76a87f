//! A replay is not a run (issue 29): a real Go module whose provider runs `go test -json
//! ./...` with go's test cache warm — in place, the cache its first run filled; in a
//! sandbox, the cache the job filled itself (a job's home starts empty, and go cannot use a
//! read-only cache named in `hostPaths`) — is replayed by go (`ok  <pkg> (cached)`), and
//! proofgraph never records it as a pass: the receipt is `inconclusive`, names `-count=1`,
//! and counts the tests as replayed, never passed. With `-count=1` every run runs the tests
//! and passes.

use serde_json::Value;

use crate::support::{Sandbox, git_commit_all, provider, statement};

const ADD_GO: &str =
    "package add\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a + b }\n";

const ADD_TEST_GO: &str = "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"1+2 != 3\")\n\t}\n}\n\nfunc TestTable(t *testing.T) {\n\tfor _, c := range []struct{ a, b, w int }{{1, 2, 3}, {-1, -2, -3}} {\n\t\tt.Run(\"case\", func(t *testing.T) {\n\t\t\tif got := Add(c.a, c.b); got != c.w {\n\t\t\t\tt.Errorf(\"Add(%d, %d) = %d, want %d\", c.a, c.b, got, c.w)\n\t\t\t}\n\t\t})\n\t}\n}\n";

/// Go (Debian's `golang-go`). Missing, the test fails saying how to install it.
fn require_go() {
    let ok = std::process::Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the replay tests need `go`; install it with `apt-get install golang-go`"
    );
}

/// A Go module at the work tree's root, wired as `test` with `go test -json <count> ./...`
/// (bootstrap's wrapper) and `env`.
fn workspace(sb: &Sandbox, count: &str, env: &str) {
    sb.openspec_root("");
    sb.write("go.mod", "module example.com/add\n\ngo 1.18\n");
    sb.write("add.go", ADD_GO);
    sb.write("add_test.go", ADD_TEST_GO);
    sb.write(".gitignore", "test-results/\n.gocache/\n");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: adds, scenario: It adds, capabilities: [test]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, -c, 'mkdir -p test-results && exec \"$@\" > test-results/go-test.json', sh, go, test, -json, {count}./...]\n    report: test-results/go-test.json\n    reportFormat: go-test-json\n    timeoutMs: 300000\n    env: {{{env}}}\n"
        ),
    );
    git_commit_all(&sb.work());
}

/// `prove x --json` in `mode`: its exit code and document.
fn prove(sb: &Sandbox, mode: &str) -> (i32, Value) {
    let run = sb.run(&sb.work(), &["prove", "x", "--sandbox", mode, "--json"]);
    (run.code.expect("an exit code"), run.json())
}

/// The outcome, reason and stored counts of the `capability` receipt `prove` wrote.
fn receipt(sb: &Sandbox, doc: &Value, capability: &str) -> (String, String, Value, Value) {
    let view = provider(doc, "test")["receipts"]
        .as_array()
        .expect("receipts")
        .iter()
        .find(|r| r["capability"] == capability)
        .unwrap_or_else(|| panic!("no {capability} receipt: {doc:#}"))
        .clone();
    let stored = statement(sb, view["sha256"].as_str().expect("stored"));
    (
        view["outcome"].as_str().unwrap_or_default().to_owned(),
        view["reason"].as_str().unwrap_or_default().to_owned(),
        stored["predicate"]["proofgraph"]["counts"].clone(),
        stored["predicate"]["passedTests"].clone(),
    )
}

/// What holds of a run go replayed: nothing passed, in the output, the receipts and the
/// store, and the reason names the fix.
fn assert_replayed(sb: &Sandbox, code: i32, doc: &Value, ctx: &str) {
    assert_eq!(code, 2, "{ctx}: inconclusive, not proven: {doc:#}");
    let (outcome, reason, counts, passed) = receipt(sb, doc, "test");
    assert_eq!(outcome, "inconclusive", "{ctx}: {reason}");
    assert_eq!(
        reason,
        "go test replayed 4 tests from its test cache instead of running them (the result line of package `example.com/add` says `(cached)`); a replay is not a run: add `-count=1` to the `go test` command",
        "{ctx}"
    );
    assert_eq!(counts["passed"], 0, "{ctx}: {counts}");
    assert_eq!(counts["replayed"], 4, "{ctx}: {counts}");
    assert_eq!(passed, serde_json::json!([]), "{ctx}: passedTests");
    let (outcome, reason, _, _) = receipt(sb, doc, "discovery");
    assert_eq!(outcome, "inconclusive", "{ctx}: {reason}");
    assert!(reason.contains("-count=1"), "{ctx}: {reason}");
    // What `status` reads back is not a pass either, and nothing reuses it.
    let status = sb.run(&sb.work(), &["status", "x", "--json"]);
    let states = crate::support::states(&status.json());
    assert_eq!(
        states.get("adds/test").map(String::as_str),
        Some("inconclusive"),
        "{ctx}: {states:?}"
    );
}

#[test]
fn in_place_the_second_run_is_a_replay_and_never_a_pass() {
    require_go();
    let sb = Sandbox::new();
    // The cache in the work tree, where a job that runs in place can write it.
    let cache = sb.work().join(".gocache");
    workspace(&sb, "", &format!("GOCACHE: {}", cache.display()));
    let (code, doc) = prove(&sb, "none");
    assert_eq!(code, 0, "the first run runs the tests: {doc:#}");
    let (outcome, _, counts, _) = receipt(&sb, &doc, "test");
    assert_eq!(
        (outcome.as_str(), &counts["passed"]),
        ("pass", &Value::from(4))
    );
    // A receipt made in place is never reused: the provider runs again, and go replays.
    let (code, doc) = prove(&sb, "none");
    assert_replayed(&sb, code, &doc, "in place");
    // The human output says it too.
    let human = sb.run(&sb.work(), &["prove", "x", "--sandbox", "none"]);
    assert!(
        human
            .stdout
            .contains("[4 tests: 0 passed, 4 replayed, not run]")
            && human
                .stdout
                .contains("add `-count=1` to the `go test` command"),
        "{}",
        human.stdout
    );
}

#[test]
fn in_a_sandbox_a_cache_the_job_filled_itself_is_a_replay_and_never_a_pass() {
    require_go();
    let sb = Sandbox::new();
    // A job's home is its own, empty at every start, and a cache named in `hostPaths` is
    // read-only (go refuses to use one), so in a sandbox the test cache is warm only when
    // the job filled it: a script that runs the suite twice (a check, then the report).
    // go replays the second run (a cache entry is keyed by the flags too: both use -json).
    workspace(&sb, "", "");
    let execution = sb.work().join("openspec/changes/x/execution.yaml");
    let text = fs_err::read_to_string(&execution).expect("execution.yaml");
    fs_err::write(
        &execution,
        text.replace(
            "command: [sh, -c, 'mkdir -p test-results && exec \"$@\" > test-results/go-test.json', sh, go, test, -json, ./...]",
            "command: [sh, -c, 'go test -json ./... >/dev/null && mkdir -p test-results && exec go test -json ./... > test-results/go-test.json']",
        ),
    )
    .expect("rewire");
    git_commit_all(&sb.work());
    for mode in ["worktree", "copy"] {
        let (code, doc) = prove(&sb, mode);
        assert_replayed(&sb, code, &doc, mode);
    }
}

#[test]
fn with_count_1_every_run_runs_the_tests() {
    require_go();
    for mode in ["none", "worktree"] {
        let sb = Sandbox::new();
        let cache = sb.work().join(".gocache");
        workspace(&sb, "-count=1, ", &format!("GOCACHE: {}", cache.display()));
        for attempt in ["first", "second"] {
            let run = sb.run(
                &sb.work(),
                &["prove", "x", "--sandbox", mode, "--no-cache", "--json"],
            );
            let doc = run.json();
            assert_eq!(run.code, Some(0), "{mode}, {attempt}: {doc:#}");
            let (outcome, _, counts, passed) = receipt(&sb, &doc, "test");
            assert_eq!(outcome, "pass", "{mode}, {attempt}");
            assert_eq!(counts["passed"], 4, "{mode}, {attempt}: {counts}");
            assert!(counts.get("replayed").is_none(), "{mode}: {counts}");
            assert_eq!(passed.as_array().map(Vec::len), Some(4));
        }
        if mode == "none" {
            // The second run had the cache the first one filled, and still ran the tests.
            assert!(cache.is_dir(), "{mode}: go's cache is in the work tree");
        }
    }
}
