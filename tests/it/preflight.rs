//! Preflight through the command line: all findings at once, sorted, each
//! with its position; and the checks that only the library API can reach
//! (the decoder already refuses those inputs).

use std::sync::Arc;

use proofgraph_graph::model::Provider;
use proofgraph_graph::{Adapter, GraphBuilder, ProviderId, RepoId, Repositories};

use crate::support::{Sandbox, assert_codes, issue_codes, repo_root};

#[test]
fn five_different_mistakes_are_reported_at_once() {
    let sb = Sandbox::new();
    let run = sb.run(
        &repo_root().join("fixtures/preflight"),
        &["validate", "five-mistakes", "--json"],
    );
    run.expect_code(1);
    let doc = run.json();
    let issues = doc["items"][0]["issues"].as_array().expect("issues");
    let found: Vec<(u64, String)> = issues
        .iter()
        .map(|i| {
            (
                i["line"].as_u64().unwrap_or(0),
                i["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            (6, "report_path_collision".to_owned()),
            (8, "secret_in_env".to_owned()),
            (13, "dependency_cycle".to_owned()),
            (14, "unknown_service".to_owned()),
            (19, "report_path_collision".to_owned()),
            (24, "readiness_port_missing".to_owned()),
        ]
    );
    let cycle = issues
        .iter()
        .find(|i| i["code"] == "dependency_cycle")
        .expect("cycle");
    assert_eq!(
        cycle["message"],
        "dependency cycle `build` → `test` → `build`: `build` runs before `test`, `test` runs before `build`"
    );
}

#[test]
fn a_multi_repository_workspace_requires_repositories() {
    let sb = Sandbox::new();
    let run = sb.run(
        &repo_root().join("fixtures/multi-repo"),
        &["validate", "--all", "--json"],
    );
    run.expect_code(1);
    assert_codes!(
        issue_codes(&run.json()),
        ["repository_required", "repository_required"]
    );
}

#[test]
fn a_symlink_out_of_the_repository_is_an_escape() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.mkdir("outside");
    std::os::unix::fs::symlink(sb.work().join("outside"), sb.work().join("vendor"))
        .expect("symlink");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  integration:\n    adapter: command\n    command: [make, check]\n    inputs: [src/**, vendor/lib/**]\n",
    );
    // The repository is the OpenSpec root, so `outside/` is inside it; the
    // symlink must point outside the root to escape.
    let run = sb.run(&sb.work(), &["validate", "x", "--json"]);
    run.expect_code(0);
    fs_err::remove_file(sb.work().join("vendor")).expect("remove link");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(elsewhere.path(), sb.work().join("vendor")).expect("symlink");
    let run = sb.run(&sb.work(), &["validate", "x", "--json"]);
    run.expect_code(1);
    let doc = run.json();
    assert_codes!(issue_codes(&doc), ["path_outside_repository"]);
    assert_eq!(doc["items"][0]["issues"][0]["line"], 6);
}

#[test]
fn checks_the_decoder_makes_unreachable_still_hold_in_the_library() {
    let repos = Repositories {
        ids: [RepoId::root()].into(),
    };
    let file: Arc<str> = Arc::from("execution.yaml");
    let mut builder = GraphBuilder::new(repos);
    // A name that is not a capability, and no `capability`.
    builder.provider(
        Provider::new(
            ProviderId::parse("unit.tests").expect("valid"),
            Adapter::External,
        ),
        file.clone(),
    );
    // A running adapter without a command.
    builder.provider(
        Provider::new(ProviderId::parse("test").expect("valid"), Adapter::Command),
        file,
    );
    let findings = builder.seal().expect_err("invalid");
    let codes: Vec<&str> = findings.iter().map(|f| f.check.as_str()).collect();
    assert_codes!(codes, ["provider_without_capability", "missing_command"]);
}
