//! The command-line contract: JSON documents, null shapes, exit codes, help,
//! and the human rendering (snapshots).

use serde_json::json;

use crate::support::{Sandbox, assert_codes, assert_emits, repo_root, snapshot_settings};

#[test]
fn every_command_has_help_with_an_example() {
    let sb = Sandbox::new();
    for command in ["list", "show", "validate", "doctor"] {
        let run = sb.run(&sb.work(), &[command, "--help"]);
        run.expect_code(0);
        assert!(
            run.stdout.contains("Example"),
            "{command} --help has no example:\n{}",
            run.stdout
        );
    }
    let run = sb.run(&sb.work(), &["--help"]);
    run.expect_code(0);
    assert!(run.stdout.contains("Exit codes"), "{}", run.stdout);
}

#[test]
fn a_bad_command_line_under_json_is_one_document_with_exit_3() {
    let sb = Sandbox::new();
    for args in [
        &["frobnicate", "--json"][..],
        &["validate", "--json"],
        &["show", "--json", "--bogus", "x"],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        let doc = run.json();
        assert_eq!(doc["schema_version"], 1);
        assert_codes!(
            crate::support::codes(&doc["status"]),
            ["usage_error"],
            "{args:?}"
        );
    }
}

#[test]
fn unknown_and_invalid_change_names() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "openspec/changes/add-profile/evidence.yaml",
        "version: 2\nclaims: []\n",
    );
    let run = sb.run(&sb.work(), &["show", "add-profil", "--json"]);
    run.expect_code(3);
    let doc = run.json();
    assert_emits!(doc["status"][0], "unknown_change");
    assert_eq!(doc["status"][0]["fix"], "Did you mean `add-profile`?");
    let run = sb.run(&sb.work(), &["validate", "../etc", "--json"]);
    run.expect_code(3);
    assert_emits!(run.json()["status"][0], "invalid_change_name");
    let run = sb.run(&sb.work(), &["show", "archive", "--json"]);
    run.expect_code(3);
    assert_emits!(run.json()["status"][0], "unknown_change");
}

#[test]
fn a_panic_still_yields_one_document_and_exit_3() {
    let sb = Sandbox::new();
    let run = sb.run_with_env(
        &sb.work(),
        &["list", "--json"],
        &[("PROOFGRAPH_DEBUG_PANIC", "1")],
    );
    run.expect_code(3);
    let doc = run.json();
    assert_emits!(doc["status"][0], "internal_error");
}

#[test]
fn dash_c_runs_as_if_started_there() {
    let sb = Sandbox::new();
    sb.openspec_root("proj");
    let run = sb.run(&sb.work(), &["-C", "proj", "list", "--json"]);
    run.expect_code(0);
    assert_eq!(
        run.json()["root"],
        json!({"path": sb.work().join("proj"), "source": "nearest"})
    );
    let run = sb.run(&sb.work(), &["-C", "nowhere", "list", "--json"]);
    run.expect_code(3);
    assert_emits!(run.json()["status"][0], "usage_error");
}

#[test]
fn list_counts_claims_and_tolerates_a_broken_change() {
    let sb = Sandbox::new();
    let fixture = repo_root().join("fixtures/valid");
    let run = sb.run(&fixture, &["list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(
        doc["changes"],
        json!([{"name": "add-profile", "has_evidence": true, "has_execution": true, "claims": 2, "providers": 5, "services": 1}])
    );
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "openspec/changes/broken/evidence.yaml",
        "version: 2\nclaims: [\n",
    );
    let run = sb.run(&sb.work(), &["list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["changes"][0]["claims"], serde_json::Value::Null);
    assert_codes!(crate::support::codes(&doc["status"]), ["syntax_error"]);
}

#[test]
fn show_json_of_the_valid_fixture() {
    let sb = Sandbox::new();
    let fixture = repo_root().join("fixtures/valid");
    let run = sb.run(&fixture, &["show", "add-profile", "--json"]);
    run.expect_code(0);
    snapshot_settings(&sb).bind(|| insta::assert_snapshot!("show_valid_json", run.stdout));
}

#[test]
fn human_output_of_each_command() {
    let sb = Sandbox::new();
    let fixture = repo_root().join("fixtures/valid");
    let mut out = String::new();
    for args in [
        &["list"][..],
        &["show", "add-profile"],
        &["validate", "--all"],
        &["doctor"],
    ] {
        let run = sb.run(&fixture, args);
        run.expect_code(0);
        out.push_str(&format!("$ proofgraph {}\n{}", args.join(" "), run.stdout));
        if !run.stderr.is_empty() {
            out.push_str(&format!("[stderr]\n{}", run.stderr));
        }
        out.push('\n');
    }
    snapshot_settings(&sb).bind(|| insta::assert_snapshot!("human_valid", out));
}

#[test]
fn human_diagnostics_go_to_stderr_and_json_prose_nowhere() {
    let sb = Sandbox::new();
    let dir = repo_root().join("fixtures/diagnostics");
    let run = sb.run(&dir, &["validate", "unknown_key"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("unknown key `minimumTests`"),
        "{}",
        run.stdout
    );
    let run = sb.run(&dir, &["show", "unknown_key"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("warning[unknown_key]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("--> openspec/changes/unknown_key/execution.yaml:7:5"),
        "{}",
        run.stderr
    );
    let run = sb.run(&dir, &["show", "unknown_key", "--json"]);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert_emits!(run.json()["status"][0], "unknown_key");
}

#[test]
fn the_example_workspace_validates_cleanly_under_strict() {
    let sb = Sandbox::new();
    let example = repo_root().join("examples/profile");
    let run = sb.run(&example, &["validate", "--all", "--strict", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(
        doc["summary"]["totals"]["items"], 3,
        "the catalog and two changes"
    );
    assert_eq!(crate::support::issue_codes(&doc), Vec::<String>::new());
}
