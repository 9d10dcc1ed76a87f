//! Choosing where providers run: `executor:` of `proofgraph.yaml` (every bad value refused
//! at its position), `--executor local|remote|auto` and `--remote-jobs` on `prove` and
//! `plan`, and `plan` saying per provider where it would run and why not remotely.

use serde_json::Value;

use crate::support::{Sandbox, assert_codes, assert_emits, located};

/// The messages of every finding of a `validate --json` document.
fn messages(doc: &Value) -> String {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .flat_map(|item| item["issues"].as_array().into_iter().flatten())
        .map(|issue| format!("{} | {}\n", issue["message"], issue["fix"]))
        .collect()
}

fn validate(sb: &Sandbox, catalog: &str) -> Value {
    sb.write("proofgraph.yaml", catalog);
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    run.json()
}

#[test]
fn a_well_formed_executor_validates() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    let doc = validate(
        &sb,
        "version: 1\nexecutor:\n  remote: grpcs://engine.example.com:443/main\n  platform: {OSFamily: linux, ISA: x86-64, cores: \"4\"}\n  remoteJobs: 16\n  headersFromEnv: {Authorization: ENGINE_TOKEN}\n  connectTimeoutMs: 1000\n  timeoutMs: 9000\n  minBytesPerSecond: 1024\n",
    );
    assert_eq!(located(&doc, None), Vec::<(String, String)>::new(), "{doc}");
}

/// Each bad value of `executor` is refused where it is written, with the code the same
/// mistake has under `cache` where there is one.
#[test]
fn every_bad_executor_value_is_refused_at_its_position() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    for (yaml, code, at, said) in [
        (
            "executor:\n  platform: {OSFamily: linux}\n",
            "missing_field",
            "2:3",
            "missing the required field `remote`",
        ),
        (
            "executor:\n  remote: https://engine.example.com/main\n",
            "invalid_value",
            "2:11",
            "gRPC only",
        ),
        (
            "executor:\n  remote: s3://bucket/x\n",
            "invalid_value",
            "2:11",
            "`s3` is not a remote cache protocol",
        ),
        (
            "executor:\n  remote: grpc://user:secret@engine:50051\n",
            "invalid_value",
            "2:11",
            "holds credentials",
        ),
        (
            "executor:\n  remote: grpc://engine:50051/a/../main\n",
            "remote_instance_dot_segment",
            "2:11",
            "`remote` of `executor`",
        ),
        (
            "executor:\n  remote: \"grpc://engine:50051/a b\"\n",
            "invalid_value",
            "2:11",
            "the character ` ` (U+0020)",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  platform: {cores: 4}\n",
            "wrong_type",
            "3:21",
            "`cores` of `platform` of `executor` must be a string",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  platform: {OSFamily: \"\"}\n",
            "invalid_value",
            "3:24",
            "must not be empty",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  platform: [linux]\n",
            "wrong_type",
            "3:13",
            "a mapping of property names to strings",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  remoteJobs: 0\n",
            "invalid_value",
            "3:15",
            "`remoteJobs` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  remoteJobs: many\n",
            "wrong_type",
            "3:15",
            "`remoteJobs` of `executor` must be a non-negative integer",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  headersFromEnv: {\"bad header\": TOKEN}\n",
            "invalid_value",
            "3:20",
            "`bad header` in `headersFromEnv` of `executor` is not a header name",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  headersFromEnv: {Authorization: not-a-var}\n",
            "invalid_id",
            "3:35",
            "`not-a-var` is not a valid environment variable name",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  timeoutMs: 0\n",
            "invalid_value",
            "3:14",
            "`timeoutMs` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  connectTimeoutMs: 0\n",
            "invalid_value",
            "3:21",
            "`connectTimeoutMs` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  minBytesPerSecond: 0\n",
            "invalid_value",
            "3:22",
            "`minBytesPerSecond` of `executor` must be positive",
        ),
        (
            "executor:\n  remote: grpc://engine:50051\n  remoteJob: 4\n",
            "unknown_key",
            "3:3",
            "did you mean `remoteJobs`",
        ),
        (
            "executor: grpc://engine:50051\n",
            "wrong_type",
            "1:11",
            "`executor` must be a mapping",
        ),
    ] {
        let doc = validate(&sb, &format!("version: 1\n{yaml}"));
        // The document's own line 1 is `version: 1`.
        let (line, column) = at.split_once(':').expect("line:column");
        let at = format!("{}:{column}", line.parse::<u64>().expect("a line") + 1);
        let found = located(&doc, None);
        assert_eq!(
            found,
            vec![(code.to_owned(), at.clone())],
            "{yaml}\n{}",
            messages(&doc)
        );
        let codes: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
        assert_codes!(codes, [code], "{yaml}");
        assert!(messages(&doc).contains(said), "{yaml}\n{}", messages(&doc));
        assert!(!messages(&doc).contains("secret"), "{}", messages(&doc));
    }
}

/// A one-repository change whose providers cover each reason to stay local: `lint` and
/// `test` can run remotely; `integration` uses a service, `deploy` reads a secret through
/// `envFrom`, `smoke` runs on the host network. `catalog` is `proofgraph.yaml`.
fn workspace(sb: &Sandbox, catalog: &str) {
    sb.openspec_root("");
    sb.write("proofgraph.yaml", catalog);
    sb.write("src/app.sh", "echo app\n");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: app-works, scenario: s, capabilities: [static-analysis, test, integration, deployment, resilience]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        r#"version: 1
providers:
  lint:
    adapter: command
    capability: static-analysis
    command: [sh, -c, "exit 0"]
  test:
    adapter: test-discovery
    command: [sh, -c, "printf 'TAP version 13\n1..1\nok 1 - a\n' > out.tap"]
    report: out.tap
  integration:
    adapter: command
    service: db
    command: [sh, -c, "exit 0"]
  deploy:
    adapter: command
    capability: deployment
    envFrom: [DEPLOY_TOKEN]
    command: [sh, -c, "exit 0"]
  smoke:
    adapter: command
    capability: resilience
    network: host
    command: [sh, -c, "exit 0"]
services:
  db:
    command: [sh, -c, "sleep 60"]
    readiness: {url: "http://127.0.0.1:4183/health", expectBody: ok}
"#,
    );
    crate::support::git_commit_all(&sb.work());
}

const WITH_EXECUTOR: &str = "version: 1\nexecutor:\n  remote: grpc://127.0.0.1:50051/main\n  platform: {OSFamily: linux}\n  remoteJobs: 6\n";

/// `name → (runs, eligible, reason)` of every provider of a `plan --json` document.
fn placements(doc: &Value) -> Vec<(String, String, bool, Option<String>)> {
    doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["kind"] == "provider")
        .map(|n| {
            let p = &n["placement"];
            (
                n["name"].as_str().unwrap_or_default().to_owned(),
                p["runs"].as_str().unwrap_or_default().to_owned(),
                p["eligible"].as_bool().unwrap_or_default(),
                p["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[test]
fn plan_says_where_each_provider_would_run_and_why_not_remotely() {
    let sb = Sandbox::new();
    workspace(&sb, WITH_EXECUTOR);
    let run = sb.run_with_env(
        &sb.work(),
        &["plan", "add-x", "--executor", "auto", "--json"],
        &[("DEPLOY_TOKEN", "a-deploy-token-value")],
    );
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["executor"]["choice"], "auto", "{doc}");
    assert_eq!(doc["executor"]["remote"], "grpc://127.0.0.1:50051/main");
    // `executor.remoteJobs`, and `--remote-jobs` over it.
    assert_eq!(doc["executor"]["remote_jobs"], 6);
    let mut got = placements(&doc);
    got.sort();
    let local = |why: &str| Some(why.to_owned());
    assert_eq!(
        got,
        vec![
            (
                "deploy".to_owned(),
                "local".to_owned(),
                false,
                local(
                    "reads `DEPLOY_TOKEN` from this machine's environment through `envFrom`, which never leaves it"
                )
            ),
            (
                "integration".to_owned(),
                "local".to_owned(),
                false,
                local("uses service `db`, started on this machine")
            ),
            ("lint".to_owned(), "remote".to_owned(), true, None),
            (
                "smoke".to_owned(),
                "local".to_owned(),
                false,
                local("needs the host network (`network: host`)")
            ),
            ("test".to_owned(), "remote".to_owned(), true, None),
        ],
        "{doc}"
    );
    let bounded = sb.run(
        &sb.work(),
        &[
            "plan",
            "add-x",
            "--executor",
            "remote",
            "--remote-jobs",
            "2",
            "--json",
        ],
    );
    bounded.expect_code(0);
    assert_eq!(bounded.json()["executor"]["remote_jobs"], 2);
    assert_eq!(placements(&bounded.json()).len(), 5);
    // Configured but not asked for: every provider here, saying which could go.
    let asked_local = sb.run(&sb.work(), &["plan", "add-x", "--json"]);
    asked_local.expect_code(0);
    let doc = asked_local.json();
    assert_eq!(doc["executor"]["choice"], "local", "{doc}");
    assert!(doc["executor"]["remote_jobs"].is_null(), "{doc}");
    let lint = placements(&doc)
        .into_iter()
        .find(|(name, ..)| name == "lint")
        .expect("lint");
    assert_eq!(
        lint,
        (
            "lint".to_owned(),
            "local".to_owned(),
            true,
            local("`--executor local`")
        )
    );
}

/// Without an executor asked for or configured, `plan` prints what it always has: no
/// `executor`, no `placement`, no `runs:` line.
#[test]
fn a_plan_without_an_executor_says_nothing_of_one() {
    let sb = Sandbox::new();
    workspace(&sb, "version: 1\n");
    let run = sb.run(&sb.work(), &["plan", "add-x", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert!(doc.get("executor").is_none(), "{doc}");
    for node in doc["nodes"].as_array().expect("nodes") {
        assert!(node.get("placement").is_none(), "{node}");
    }
    let human = sb.run(&sb.work(), &["plan", "add-x"]);
    human.expect_code(0);
    assert!(
        human.stdout.contains("Plan for add-x (--jobs "),
        "{}",
        human.stdout
    );
    assert!(!human.stdout.contains("runs:"), "{}", human.stdout);
    assert!(!human.stdout.contains("--executor"), "{}", human.stdout);
}

/// The human plan with an executor, pinned.
#[test]
fn plan_with_an_executor_snapshot() {
    let sb = Sandbox::new();
    workspace(&sb, WITH_EXECUTOR);
    let args = ["plan", "add-x", "--jobs", "1", "--executor", "auto"];
    let run = sb.run(&sb.work(), &args);
    run.expect_code(0);
    let text = crate::support::transcript(&args, &run);
    let mut settings = crate::support::snapshot_settings(&sb);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!("plan_with_an_executor", text));
}

/// `--executor remote|auto` without `executor:` is refused by `plan` and `prove` alike,
/// before anything runs.
#[test]
fn remote_or_auto_without_an_executor_is_refused() {
    let sb = Sandbox::new();
    workspace(&sb, "version: 1\n");
    for (command, choice) in [("plan", "auto"), ("prove", "remote"), ("prove", "auto")] {
        let run = sb.run(
            &sb.work(),
            &[command, "add-x", "--executor", choice, "--json"],
        );
        run.expect_code(3);
        let doc = run.json();
        assert_emits!(
            run.status_codes(),
            "executor_not_configured",
            "{command} {choice}: {doc}"
        );
        let said = doc["status"].to_string();
        assert!(said.contains(&format!("--executor {choice}")), "{said}");
        assert!(said.contains("executor.remote"), "{said}");
    }
    // Nothing ran: every provider would still run.
    let plan = sb.run(&sb.work(), &["plan", "add-x", "--json"]);
    for node in plan.json()["nodes"].as_array().expect("nodes") {
        if node["kind"] == "provider" {
            assert_eq!(node["action"], "run", "{node}");
        }
    }
}

/// An engine that cannot be reached before the run: under `remote` nothing runs and
/// `prove` exits 3 saying why; under `auto` every provider runs here, in the same sandbox,
/// with one warning and the exit code a local prove has.
#[test]
fn an_engine_unreachable_before_the_run_fails_remote_and_runs_auto_here() {
    let port = crate::support::free_port();
    let catalog = format!(
        "version: 1\nexecutor:\n  remote: grpc://127.0.0.1:{port}/main\n  platform: {{OSFamily: linux}}\n  connectTimeoutMs: 500\n  timeoutMs: 2000\n"
    );
    let token = [("DEPLOY_TOKEN", "a-deploy-token-value")];
    let local = Sandbox::new();
    workspace(&local, &catalog);
    let local_run = local.run_with_env(&local.work(), &["prove", "add-x", "--json"], &token);
    let local_doc = local_run.json();
    let sb = Sandbox::new();
    workspace(&sb, &catalog);
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "add-x", "--executor", "remote", "--json"],
        &token,
    );
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["remote_executor_unreachable"]);
    let doc = run.json();
    let said = doc["status"].to_string();
    assert!(said.contains(&format!("127.0.0.1:{port}")), "{said}");
    assert!(
        doc["providers"].as_array().is_none_or(Vec::is_empty),
        "{doc}"
    );
    let plan = sb.run(&sb.work(), &["plan", "add-x", "--json"]);
    for node in plan.json()["nodes"].as_array().expect("nodes") {
        if node["kind"] == "provider" {
            assert_eq!(node["action"], "run", "nothing ran: {node}");
        }
    }
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "add-x", "--executor", "auto", "--json"],
        &token,
    );
    assert_eq!(run.code, local_run.code, "{}", run.stderr);
    assert_emits!(run.status_codes(), "remote_executor_unreachable");
    let doc = run.json();
    let outcomes = |doc: &Value| -> Vec<(String, String, String)> {
        let mut all: Vec<_> = doc["providers"]
            .as_array()
            .expect("providers")
            .iter()
            .map(|p| {
                (
                    p["provider"].as_str().unwrap_or_default().to_owned(),
                    p["action"].as_str().unwrap_or_default().to_owned(),
                    p["result"].to_string(),
                )
            })
            .collect();
        all.sort();
        all
    };
    assert_eq!(outcomes(&doc), outcomes(&local_doc), "{doc:#}");
    // Sandboxed as any local run, and no receipt says it ran remotely.
    assert_eq!(doc["isolation"], local_doc["isolation"]);
    let sha = crate::support::receipt(&doc, "test", "test")["sha256"]
        .as_str()
        .expect("stored")
        .to_owned();
    let proof = crate::support::statement(&sb, &sha)["predicate"]["proofgraph"].clone();
    assert!(
        proof.get("executor").is_none() && proof.get("worker").is_none(),
        "{proof:#}"
    );
}

/// `--remote-jobs` bounds remote actions: with `--executor local` it bounds nothing and is
/// refused; `--executor` and `--remote-jobs` do not go with `plan --base`; an unknown
/// executor and a zero bound are refused by the parser.
#[test]
fn executor_flags_that_mean_nothing_are_refused() {
    let sb = Sandbox::new();
    workspace(&sb, WITH_EXECUTOR);
    for args in [
        &["prove", "add-x", "--remote-jobs", "4", "--json"][..],
        &[
            "plan",
            "add-x",
            "--executor",
            "local",
            "--remote-jobs",
            "4",
            "--json",
        ],
        &[
            "plan",
            "add-x",
            "--base",
            "HEAD",
            "--executor",
            "auto",
            "--json",
        ],
        &[
            "plan",
            "add-x",
            "--base",
            "HEAD",
            "--remote-jobs",
            "2",
            "--json",
        ],
        &["prove", "add-x", "--executor", "cloud", "--json"],
        &[
            "prove",
            "add-x",
            "--executor",
            "remote",
            "--remote-jobs",
            "0",
            "--json",
        ],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["usage_error"], "{args:?}");
    }
    let run = sb.run(&sb.work(), &["prove", "add-x", "--remote-jobs", "4"]);
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("'--remote-jobs <N>' needs '--executor remote' or '--executor auto'"),
        "{}",
        run.stderr
    );
}
