//! `plan` and `graph`: a dry run over real git repositories. Fingerprints
//! move exactly when what a provider reads or how it is wired moves.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::support::{Sandbox, assert_codes, git_commit_all, repo_root};

/// A two-repository workspace in one git repository: `web` (two providers,
/// one depending on the other) and `api` (one provider and a service).
fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  web: {path: web}\n  api: {path: api}\n",
    );
    sb.write("web/src/app.js", "console.log('web');\n");
    sb.write("web/package.json", "{}\n");
    sb.write("api/src/main.rs", "fn main() {}\n");
    sb.write("api/marker-not-created-by-plan.txt.template", "");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: web-works, scenario: s, capabilities: [test], repositories: [web]}\n  - {id: api-works, scenario: s, capabilities: [integration], repositories: [api]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        r#"version: 1
providers:
  build:
    adapter: command
    capability: static-analysis
    repository: web
    command: [sh, -c, "touch created-by-plan"]
  test:
    adapter: test-discovery
    repository: web
    command: [sh, -c, "exit 0"]
    report: out.tap
    dependsOn: [build]
  integration:
    adapter: command
    repository: api
    service: api
    command: [sh, -c, "exit 0"]
services:
  api:
    repository: api
    command: [sh, -c, "sleep 60"]
    readiness: {url: "http://127.0.0.1:4181/health", expectBody: ok}
"#,
    );
    git_commit_all(&sb.work());
}

fn fingerprints(sb: &Sandbox) -> BTreeMap<String, String> {
    let run = sb.run(&sb.work(), &["plan", "add-x", "--json"]);
    run.expect_code(0);
    run.json()["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| {
            Some((
                n["name"].as_str()?.to_owned(),
                n["fingerprint"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

fn changed(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    before
        .keys()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}

#[test]
fn plan_orders_nodes_by_waves_and_starts_nothing() {
    let sb = Sandbox::new();
    workspace(&sb);
    let run = sb.run(&sb.work(), &["plan", "add-x", "--jobs", "1", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    let nodes = doc["nodes"].as_array().expect("nodes");
    let order: Vec<(&str, &str, u64)> = nodes
        .iter()
        .map(|n| {
            (
                n["kind"].as_str().unwrap_or(""),
                n["name"].as_str().unwrap_or(""),
                n["wave"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("provider", "build", 1),
            ("service", "service:api", 1),
            ("probe", "probe:api", 2),
            ("provider", "test", 2),
            ("provider", "integration", 3),
        ]
    );
    let test = &nodes[3];
    assert_eq!(test["resources"], serde_json::json!(["workspace-read:web"]));
    assert_eq!(
        test["after"],
        serde_json::json!([{"node": "build", "edge": "dependsOn"}])
    );
    assert_eq!(test["claims"], serde_json::json!(["web-works"]));
    assert_eq!(
        test["outputs"],
        serde_json::json!([{"capability": "discovery", "receipt": "discovery"}, {"capability": "test", "receipt": "test"}])
    );
    assert_eq!(test["inputs"]["files"], 2);
    assert!(
        !sb.work().join("web/created-by-plan").exists(),
        "plan ran a command"
    );
    // With more jobs, independent providers share a wave.
    let doc = sb
        .run(&sb.work(), &["plan", "add-x", "--jobs", "4", "--json"])
        .json();
    assert_eq!(doc["nodes"][0]["wave"], doc["nodes"][1]["wave"]);
}

#[test]
fn editing_the_change_packet_changes_no_fingerprint() {
    let sb = Sandbox::new();
    workspace(&sb);
    let before = fingerprints(&sb);
    sb.write(
        "openspec/changes/add-x/proposal.md",
        "# Add x\n\nReworded.\n",
    );
    sb.write("openspec/changes/add-x/tasks.md", "- [ ] new task\n");
    assert_eq!(changed(&before, &fingerprints(&sb)), Vec::<String>::new());
    git_commit_all(&sb.work());
    assert_eq!(changed(&before, &fingerprints(&sb)), Vec::<String>::new());
}

#[test]
fn editing_a_file_in_one_repository_changes_exactly_its_providers() {
    let sb = Sandbox::new();
    workspace(&sb);
    let before = fingerprints(&sb);
    sb.write("api/src/main.rs", "fn main() { println!(\"changed\"); }\n");
    // `integration` reads api; the api service's code changed too.
    assert_eq!(
        changed(&before, &fingerprints(&sb)),
        vec!["integration", "service:api"]
    );
    let before = fingerprints(&sb);
    sb.write("web/src/app.js", "console.log('changed');\n");
    // `test` depends on `build`, so it moves with it.
    assert_eq!(changed(&before, &fingerprints(&sb)), vec!["build", "test"]);
}

#[test]
fn a_wiring_change_moves_only_that_provider_and_its_dependents() {
    let sb = Sandbox::new();
    workspace(&sb);
    let before = fingerprints(&sb);
    let path = sb.work().join("openspec/changes/add-x/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replace("touch created-by-plan", "touch other"),
    );
    assert_eq!(changed(&before, &fingerprints(&sb)), vec!["build", "test"]);
    let before = fingerprints(&sb);
    let text = fs_err::read_to_string(&path).expect("read");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        text.replace("report: out.tap", "report: out.tap\n    timeoutMs: 5000"),
    );
    assert_eq!(changed(&before, &fingerprints(&sb)), vec!["test"]);
}

#[test]
fn an_untracked_file_is_an_input_and_staging_it_changes_nothing() {
    let sb = Sandbox::new();
    workspace(&sb);
    let before = fingerprints(&sb);
    // What `git status` shows counts: the new file moves what reads `web`.
    sb.write("web/src/new.js", "new\n");
    let untracked = fingerprints(&sb);
    assert_eq!(changed(&before, &untracked), vec!["build", "test"]);
    // Its identity is the blob `git add` gives it: staging it moves nothing.
    crate::support::git(&sb.work(), &["add", "web/src/new.js"]);
    assert_eq!(
        changed(&untracked, &fingerprints(&sb)),
        Vec::<String>::new()
    );
}

#[test]
fn preflight_failures_exit_3_with_every_finding() {
    let sb = Sandbox::new();
    for command in ["plan", "graph"] {
        let run = sb.run(
            &repo_root().join("fixtures/preflight"),
            &[command, "five-mistakes", "--json"],
        );
        run.expect_code(3);
        let mut codes = run.status_codes();
        codes.sort();
        codes.dedup();
        assert_eq!(
            codes,
            vec![
                "dependency_cycle",
                "readiness_port_missing",
                "report_path_collision",
                "secret_in_env",
                "unknown_service"
            ],
            "{command}"
        );
    }
}

#[test]
fn a_workspace_outside_git_cannot_be_planned() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  integration: {adapter: command, command: [make]}\n",
    );
    let run = sb.run(&sb.work(), &["plan", "x", "--json"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["not_a_git_repository"]);
}

#[test]
fn a_missing_program_is_a_warning_in_the_plan() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  integration: {adapter: command, command: [no-such-program-anywhere]}\n",
    );
    git_commit_all(&sb.work());
    let run = sb.run(&sb.work(), &["plan", "x", "--json"]);
    run.expect_code(0);
    assert_codes!(run.status_codes(), ["executable_not_found"]);
}

#[test]
fn graph_renders_with_graphviz_and_mermaid() {
    let sb = Sandbox::new();
    workspace(&sb);
    let run = sb.run(&sb.work(), &["graph", "add-x", "--format", "dot"]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("\"build\" -> \"test\" [label=\"dependsOn\", style=solid];"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("locks: workspace-read:web"),
        "{}",
        run.stdout
    );
    let dot = std::process::Command::new("dot")
        .args(["-Tsvg"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| {
            panic!("Graphviz `dot` is required ({err}); install it with `apt-get install graphviz`")
        });
    use std::io::Write as _;
    dot.stdin
        .as_ref()
        .expect("stdin")
        .write_all(run.stdout.as_bytes())
        .expect("write dot");
    let out = dot.wait_with_output().expect("dot");
    assert!(
        out.status.success(),
        "dot rejected the graph: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("<svg"),
        "no SVG"
    );
    let run = sb.run(&sb.work(), &["graph", "add-x", "--format", "mermaid"]);
    run.expect_code(0);
    assert!(run.stdout.starts_with("flowchart LR\n"), "{}", run.stdout);
    assert!(run.stdout.contains("-.->|ready|"), "{}", run.stdout);
    let doc = sb
        .run(
            &sb.work(),
            &["graph", "add-x", "--format", "json", "--json"],
        )
        .json();
    assert_eq!(doc["text"], Value::Null);
    let edges: Vec<(String, String, String)> = doc["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            (
                e["from"].to_string(),
                e["to"].to_string(),
                e["kind"].to_string(),
            )
        })
        .collect();
    assert_eq!(edges.len(), 3);
    assert!(edges.contains(&(
        "\"probe:api\"".into(),
        "\"integration\"".into(),
        "\"ready\"".into()
    )));
}
