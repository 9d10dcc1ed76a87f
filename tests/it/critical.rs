//! `criticalCases`: named cases must each be observed passing in the run's
//! report, on top of the run passing. A skipped or missing case fails the
//! provider and says which; rows come from the report's `criticalCases`,
//! else from the tests it lists.

use serde_json::Value;

use crate::support::{Sandbox, git_commit_all, statement};

fn workspace(sb: &Sandbox, report: &str, format: &str, cases: &str) {
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: saves, scenario: The profile saves, capabilities: [test]}\n",
    );
    sb.write("report.txt", report);
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [cp, report.txt, out.report]\n    report: out.report\n    reportFormat: {format}\n    criticalCases: {cases}\n"
        ),
    );
    git_commit_all(&sb.work());
}

/// (state, reason, critical_cases) of the `saves/test` requirement.
fn prove(sb: &Sandbox, code: i32) -> (String, String, Value) {
    let run = sb.run(&sb.work(), &["prove", "add-x", "--json"]);
    run.expect_code(code);
    let doc = run.json();
    let req = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["capability"] == "test")
        .cloned()
        .unwrap_or(Value::Null);
    let sha = req["evidence"][0]["sha256"].as_str().unwrap_or_default();
    let statement = statement(sb, sha);
    (
        req["state"].as_str().unwrap_or("").to_owned(),
        req["evidence"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        statement["predicate"]["proofgraph"]["critical_cases"].clone(),
    )
}

const TAP: &str = "TAP version 13\n1..3\nok 1 - CASE-1 loads the profile\nok 2 - CASE-2 saves the profile # SKIP flaky\nok 3 - renders\n";

#[test]
fn every_critical_case_listed_as_a_passing_test_passes() {
    let sb = Sandbox::new();
    workspace(&sb, TAP, "tap", "[CASE-1]");
    let (state, _, cases) = prove(&sb, 0);
    assert_eq!(state, "passed");
    assert_eq!(cases, serde_json::json!({"CASE-1": "passed"}));
}

#[test]
fn a_skipped_or_missing_critical_case_fails_the_run_naming_it() {
    let sb = Sandbox::new();
    workspace(&sb, TAP, "tap", "[CASE-1, CASE-2, CASE-9]");
    let (state, reason, cases) = prove(&sb, 1);
    assert_eq!(state, "failed");
    assert_eq!(
        reason,
        "critical case(s) not observed passing: `CASE-2` is `skipped` (as `CASE-2 saves the profile`); `CASE-9` is not in the report"
    );
    assert_eq!(
        cases,
        serde_json::json!({"CASE-1": "passed", "CASE-2": "skipped", "CASE-9": "missing"})
    );
}

#[test]
fn explicit_critical_case_rows_in_a_json_report_decide() {
    let sb = Sandbox::new();
    // A totals-only Jest document (a declared total with an empty `testResults` would not be
    // backed by its list).
    let report = r#"{"numTotalTests": 2, "numPassedTests": 2, "numFailedTests": 0,
"criticalCases": [{"id": "adapter-preflight", "status": "pass"}, {"id": "delivery-not-proof", "status": "fail"}]}"#;
    workspace(
        &sb,
        report,
        "json",
        "[adapter-preflight, delivery-not-proof]",
    );
    let (state, reason, cases) = prove(&sb, 1);
    assert_eq!(state, "failed");
    assert_eq!(
        reason,
        "critical case(s) not observed passing: `delivery-not-proof` is `fail`"
    );
    assert_eq!(
        cases,
        serde_json::json!({"adapter-preflight": "pass", "delivery-not-proof": "fail"})
    );
}
