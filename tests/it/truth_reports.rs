//! *Passed* means proven, for the structured-report layer: `prove` on a change whose
//! provider writes a report that proves nothing — every test skipped, a declared total with
//! no test behind it, a failure count of the wrong type or repeated, a count above 2^53-1 —
//! never passes it, and still writes its receipts, with the reason, through the store
//! (never `store_unusable`). Each class is attacked in several formats, sandbox modes and
//! with two providers sharing one execution.

use serde_json::Value;

use crate::support::{Run, Sandbox, git_commit_all, provider, statement};

/// How one variant runs.
struct Variant {
    /// What it is, for failure messages.
    name: &'static str,
    /// The report's bytes: committed as `report.src`, copied to `out` by the command.
    report: Vec<u8>,
    /// Where the command writes the report.
    out: &'static str,
    /// `reportFormat`, or `None` to sniff.
    format: Option<&'static str>,
    /// `--sandbox` mode, or `None` for the default (worktree).
    sandbox: Option<&'static str>,
    /// A second provider (`test-b`, discovery receiver `discovery-b`) with the identical
    /// command: one execution, judged for both.
    shared: bool,
    /// The discovery floor, when not the default.
    minimum: Option<u64>,
}

impl Variant {
    fn new(name: &'static str, report: impl Into<Vec<u8>>, out: &'static str) -> Self {
        Variant {
            name,
            report: report.into(),
            out,
            format: None,
            sandbox: None,
            shared: false,
            minimum: None,
        }
    }
    fn format(mut self, format: &'static str) -> Self {
        self.format = Some(format);
        self
    }
    fn sandbox(mut self, mode: &'static str) -> Self {
        self.sandbox = Some(mode);
        self
    }
    fn shared(mut self) -> Self {
        self.shared = true;
        self
    }
    fn minimum(mut self, minimum: u64) -> Self {
        self.minimum = Some(minimum);
        self
    }
}

/// A real report written by pytest 9.2.0 (see tools/report-fixtures/REGENERATE.md).
fn pytest_fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/fixtures/reports/junit/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    fs_err::read(&path).expect("a committed pytest fixture")
}

fn provider_yaml(name: &str, v: &Variant, extra: &str) -> String {
    let mut text = format!(
        "  {name}:\n    adapter: test-discovery\n    command: [sh, -c, \"echo run >> \\\"$RUNS_LOG\\\"; cp report.src {out}\"]\n    report: {out}\n    envFrom: [RUNS_LOG]\n",
        out = v.out
    );
    if let Some(format) = v.format {
        text.push_str(&format!("    reportFormat: {format}\n"));
    }
    if let Some(minimum) = v.minimum {
        text.push_str(&format!("    minimum: {minimum}\n"));
    }
    text.push_str(extra);
    text
}

fn workspace(sb: &Sandbox, v: &Variant) {
    sb.openspec_root("");
    sb.write("report.src", &v.report);
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [test]}\n",
    );
    let mut execution = String::from("version: 1\nproviders:\n");
    execution.push_str(&provider_yaml("test", v, ""));
    if v.shared {
        execution.push_str(&provider_yaml(
            "test-b",
            v,
            "    capability: test\n    discoveryProvider: discovery-b\n",
        ));
        execution.push_str(&provider_yaml(
            "discovery-b",
            v,
            "    capability: discovery\n",
        ));
    }
    sb.write("openspec/changes/add-x/execution.yaml", execution);
    git_commit_all(&sb.work());
}

/// Where each execution writes a line (a channel: a job's world lets it write nothing of
/// the host's).
fn runs_log(sb: &Sandbox) -> std::rc::Rc<crate::support::Channel> {
    sb.channel("runs")
}

fn prove(sb: &Sandbox, v: &Variant) -> Run {
    let mut args = vec!["prove", "add-x", "--json", "--keep-going"];
    if let Some(mode) = v.sandbox {
        args.extend(["--sandbox", mode]);
    }
    let log = runs_log(sb);
    sb.run_with_env(&sb.work(), &args, &[("RUNS_LOG", log.env())])
}

/// One receipt as the run reported it and as it is stored (signed) in the store.
#[derive(Debug)]
struct Written {
    outcome: String,
    reason: String,
    /// `predicate.proofgraph` of the stored statement.
    proof: Value,
}

/// The receipt `provider` wrote for `capability`: it must be listed, stored, and say the
/// same in both places.
fn written(sb: &Sandbox, doc: &Value, name: &str, capability: &str) -> Written {
    let view = provider(doc, name)["receipts"]
        .as_array()
        .expect("receipts")
        .iter()
        .find(|r| r["capability"] == capability)
        .unwrap_or_else(|| panic!("{name} wrote no {capability} receipt: {doc:#}"))
        .clone();
    let sha = view["sha256"].as_str().expect("a stored receipt");
    let proof = statement(sb, sha)["predicate"]["proofgraph"].clone();
    let outcome = view["outcome"].as_str().unwrap_or_default().to_owned();
    let reason = view["reason"].as_str().unwrap_or_default().to_owned();
    assert_eq!(proof["outcome"], view["outcome"], "{name}: stored outcome");
    assert_eq!(proof["reason"], view["reason"], "{name}: stored reason");
    Written {
        outcome,
        reason,
        proof,
    }
}

/// Runs `v` and returns, per provider that judged the run (`test`, and `test-b` when
/// shared), its (test, discovery) receipts. Checks what holds for every variant: the run
/// executed the command once, nothing passed, every receipt was written, the store was
/// never blamed, and `status` reads the same receipts back.
fn run(v: &Variant, code: i32) -> Vec<(Written, Written)> {
    let sb = Sandbox::new();
    workspace(&sb, v);
    let run = prove(&sb, v);
    let ctx = v.name;
    run.expect_code(code);
    let doc = run.json();
    assert!(
        !run.status_codes().iter().any(|c| c == "store_unusable"),
        "{ctx}: {:?}",
        run.status_codes()
    );
    let executions = runs_log(&sb).lines();
    assert_eq!(executions, 1, "{ctx}: the shared command runs once");
    let pairs: Vec<(&str, &str)> = if v.shared {
        vec![("test", "discovery"), ("test-b", "discovery-b")]
    } else {
        vec![("test", "discovery")]
    };
    let mut out = Vec::new();
    for (test, discovery) in pairs {
        assert_eq!(provider(&doc, test)["action"], "ran", "{ctx}");
        assert!(
            !run.stderr.contains(&format!("  passed  {test} ")),
            "{ctx}: progress printed a pass: {}",
            run.stderr
        );
        let t = written(&sb, &doc, test, "test");
        let d = written(&sb, &doc, test, "discovery");
        assert_eq!(d.proof["receipt"], discovery, "{ctx}: the receiver's name");
        assert_ne!(t.outcome, "pass", "{ctx}: {t:?}");
        assert_ne!(d.outcome, "pass", "{ctx}: {d:?}");
        out.push((t, d));
    }
    // What `status` reads from the store is what `prove` wrote: not pending, not passed.
    let status = sb.run(&sb.work(), &["status", "add-x", "--json"]);
    let states = crate::support::states(&status.json());
    for requirement in ["works/test", "works/discovery"] {
        let state = states.get(requirement).map(String::as_str);
        assert!(
            matches!(state, Some("failed" | "inconclusive")),
            "{ctx}: {requirement} is {state:?}"
        );
    }
    out
}

/// Every variant of a class: the same outcomes and a reason containing `test_reason` /
/// `discovery_reason`.
fn expect_all(
    variants: Vec<Variant>,
    code: i32,
    (test_outcome, test_reason): (&str, &str),
    (discovery_outcome, discovery_reason): (&str, &str),
) {
    for v in variants {
        for (t, d) in run(&v, code) {
            assert_eq!(t.outcome, test_outcome, "{}: {t:?}", v.name);
            assert!(t.reason.contains(test_reason), "{}: {t:?}", v.name);
            assert_eq!(d.outcome, discovery_outcome, "{}: {d:?}", v.name);
            assert!(d.reason.contains(discovery_reason), "{}: {d:?}", v.name);
        }
    }
}

#[test]
fn a_suite_where_every_test_was_skipped_is_never_a_test_pass() {
    let variants = vec![
        Variant::new(
            "tap, every test skipped or todo",
            "TAP version 13\n1..3\nok 1 - a # SKIP no db\nok 2 - b # skip\nnot ok 3 - c # TODO later\n",
            "out.tap",
        ),
        Variant::new(
            "junit, pytest's skips and xfail, copy sandbox",
            pytest_fixture("pytest-all-skipped.xml"),
            "out.xml",
        )
        .format("junit")
        .sandbox("copy"),
        Variant::new(
            "mocha, all pending, shared execution",
            r#"{"stats":{"tests":2,"passes":0,"pending":2,"failures":0},"tests":[{"title":"a","fullTitle":"s a"},{"title":"b","fullTitle":"s b"}],"pending":[{"title":"a","fullTitle":"s a"},{"title":"b","fullTitle":"s b"}],"passes":[],"failures":[]}"#,
            "out.json",
        )
        .shared(),
        Variant::new(
            "summary, 5 skipped, no sandbox",
            r#"{"totalTests":5,"passed":0,"skipped":5}"#,
            "out.json",
        )
        .sandbox("none"),
    ];
    // The test is inconclusive (nothing executed), discovery fails (0 below 1): exit 1.
    expect_all(
        variants,
        1,
        ("inconclusive", "no test executed: the report lists "),
        ("fail", "the suite ran 0 tests ("),
    );
}

#[test]
fn pytest_collect_only_runs_nothing_and_proves_nothing() {
    // `pytest --co --junitxml` exits 0 having collected 8 tests and run none.
    let variants = vec![
        Variant::new(
            "pytest --co, sniffed",
            pytest_fixture("pytest-collect-only.xml"),
            "out.xml",
        ),
        Variant::new(
            "pytest --co, junit, shared execution, copy sandbox",
            pytest_fixture("pytest-collect-only.xml"),
            "out.xml",
        )
        .format("junit")
        .shared()
        .sandbox("copy"),
    ];
    expect_all(
        variants,
        1,
        ("inconclusive", "no test executed: the report lists no test"),
        ("fail", "the suite ran 0 tests, below its minimum of 1"),
    );
}

#[test]
fn modules_pytest_could_not_import_are_not_discovered_tests() {
    // Two modules that fail to import beside one passing test: pytest declares tests="3".
    let variants = vec![
        Variant::new(
            "pytest collection errors",
            pytest_fixture("pytest-collection-error.xml"),
            "out.xml",
        )
        .minimum(2),
        Variant::new(
            "pytest collection errors, shared, no sandbox",
            pytest_fixture("pytest-collection-error.xml"),
            "out.xml",
        )
        .minimum(2)
        .shared()
        .sandbox("none"),
    ];
    for v in variants {
        for (t, d) in run(&v, 1) {
            assert_eq!(t.outcome, "fail", "{t:?}");
            assert!(
                t.reason.contains(
                    "runner error: pytest could not collect broken.test_import_error: ModuleNotFoundError"
                ),
                "{t:?}"
            );
            assert_eq!(d.outcome, "fail", "{d:?}");
            assert_eq!(d.proof["discovered"], 1, "{d:?}");
            assert_eq!(
                d.reason, "the suite ran 1 tests, below its minimum of 2",
                "{d:?}"
            );
        }
    }
}

#[test]
fn a_declared_total_with_no_test_behind_it_is_not_evidence() {
    let variants = vec![
        Variant::new(
            "junit tests=5 with no testcase",
            r#"<testsuite name="s" tests="5" failures="0"></testsuite>"#,
            "out.xml",
        ),
        Variant::new(
            "ctrf summary.tests 5 with an empty list, copy sandbox",
            r#"{"results":{"tool":{"name":"jest"},"summary":{"tests":5,"passed":5,"failed":0},"tests":[]}}"#,
            "out.json",
        )
        .sandbox("copy"),
        Variant::new(
            "libtest test_count 5 and no test, no sandbox",
            "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 5 }\n{ \"type\": \"suite\", \"event\": \"ok\", \"passed\": 5, \"failed\": 0 }\n",
            "out.jsonl",
        )
        .format("libtest-json")
        .sandbox("none"),
        Variant::new(
            "vitest numTotalTests 5 and no test file, shared execution",
            r#"{"numTotalTests":5,"numPassedTests":5,"numFailedTests":0,"testResults":[],"snapshot":{"total":0}}"#,
            "out.json",
        )
        .shared(),
        Variant::new(
            "tap plan 1..5 with no test point",
            "TAP version 14\n1..5\n",
            "out.tap",
        ),
    ];
    // The command exited 0 and its report is unreadable: inconclusive, no count: exit 2.
    expect_all(
        variants,
        2,
        ("inconclusive", "declares 5 tests but "),
        ("inconclusive", "no test count: "),
    );
}

#[test]
fn a_failure_count_of_the_wrong_type_or_given_twice_is_not_evidence() {
    let variants = vec![
        Variant::new(
            "summary failed \"3\"",
            r#"{"totalTests":5,"failed":"3"}"#,
            "out.json",
        ),
        Variant::new(
            "playwright stats.unexpected 3.0, copy sandbox",
            r#"{"config":{},"suites":[{"title":"a.spec.ts","specs":[{"title":"t","tests":[{"status":"expected","results":[{"status":"passed"}]}]}]}],"stats":{"expected":1,"unexpected":3.0,"flaky":0,"skipped":0}}"#,
            "out.json",
        )
        .format("playwright")
        .sandbox("copy"),
        Variant::new(
            "junit failures=-3, no sandbox",
            r#"<testsuite name="s" tests="1" failures="-3"><testcase name="a"/></testsuite>"#,
            "out.xml",
        )
        .sandbox("none"),
        Variant::new(
            "mocha stats.failures given twice, shared execution",
            r#"{"stats":{"tests":1,"passes":1,"failures":3,"failures":0},"tests":[{"title":"a","fullTitle":"a"}],"passes":[{"title":"a","fullTitle":"a"}],"failures":[],"pending":[]}"#,
            "out.json",
        )
        .shared(),
        Variant::new(
            "go test -json event with Action twice",
            "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}\n{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestA\",\"Action\":\"pass\"}\n{\"Action\":\"pass\",\"Package\":\"p\"}\n",
            "out.jsonl",
        ),
    ];
    for v in variants {
        for (t, d) in run(&v, 2) {
            assert_eq!(
                (t.outcome.as_str(), d.outcome.as_str()),
                ("inconclusive", "inconclusive"),
                "{}",
                v.name
            );
            assert!(
                t.reason.contains("not a non-negative integer")
                    || t.reason.contains("appears twice"),
                "{}: {t:?}",
                v.name
            );
            assert!(d.reason.starts_with("no test count: "), "{}: {d:?}", v.name);
            assert_eq!(d.proof["discovered"], Value::Null, "{}", v.name);
            assert_eq!(t.proof["counts"], Value::Null, "{}", v.name);
        }
    }
}

#[test]
fn a_count_above_2_53_is_a_recorded_inconclusive_never_a_store_failure() {
    let variants = vec![
        Variant::new(
            "summary totalTests 2^53",
            r#"{"totalTests":9007199254740992,"failed":0}"#,
            "out.json",
        ),
        Variant::new(
            "tap plan 2^53, no sandbox",
            "TAP version 13\nok 1 - a\n1..9007199254740992\n",
            "out.tap",
        )
        .sandbox("none"),
        Variant::new(
            "libtest test_count u64::MAX, copy sandbox",
            "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 18446744073709551615 }\n{ \"type\": \"test\", \"event\": \"ok\", \"name\": \"a\" }\n{ \"type\": \"suite\", \"event\": \"ok\" }\n",
            "out.jsonl",
        )
        .sandbox("copy"),
        Variant::new(
            "jest numTotalTests beyond u64, shared execution",
            r#"{"numTotalTests":99999999999999999999,"numFailedTests":0,"testResults":[]}"#,
            "out.json",
        )
        .format("jest")
        .shared(),
        Variant::new(
            "junit tests 2^60",
            r#"<testsuite name="s" tests="1152921504606846976"><testcase name="a"/></testsuite>"#,
            "out.xml",
        ),
    ];
    expect_all(
        variants,
        2,
        ("inconclusive", "above the largest count 2^53-1"),
        ("inconclusive", "no test count: "),
    );
}

#[test]
fn a_minimum_or_timeout_no_receipt_can_carry_is_refused_before_anything_runs() {
    // A discovery floor above 2^53-1 used to let the provider run and then fail to encode
    // its receipt (`store_unusable`, "check that .proofgraph/ is writable").
    for (key, value, line) in [
        ("minimum", "9007199254740993", 8),
        ("timeoutMs", "\"18446744073709551615\"", 8),
    ] {
        let v = Variant::new(key, "TAP version 13\n1..1\nok 1 - a\n", "out.tap");
        let sb = Sandbox::new();
        workspace(&sb, &v);
        let path = sb.work().join("openspec/changes/add-x/execution.yaml");
        let mut text = fs_err::read_to_string(&path).expect("read");
        text.push_str(&format!("    {key}: {value}\n"));
        sb.write("openspec/changes/add-x/execution.yaml", text);
        git_commit_all(&sb.work());
        let run = prove(&sb, &v);
        run.expect_code(3);
        let status = &run.json()["status"];
        let finding = status
            .as_array()
            .expect("status")
            .iter()
            .find(|d| d["code"] == "invalid_value")
            .unwrap_or_else(|| panic!("{key}: {status:#}"));
        assert_eq!(
            finding["target"],
            format!(
                "openspec/changes/add-x/execution.yaml:{line}:{}",
                key.len() + 7
            ),
            "{finding:#}"
        );
        assert!(
            finding["message"]
                .as_str()
                .is_some_and(|m| m.contains("must be at most 9007199254740991 (2^53-1)")),
            "{finding:#}"
        );
        assert_eq!(runs_log(&sb).lines(), 0, "{key}: nothing ran");
    }
}
