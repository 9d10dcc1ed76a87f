//! Data-driven diagnostics: every change under `fixtures/diagnostics/` is
//! named after the code it must trigger, and `validate` must report it.

use std::collections::BTreeSet;

use proofgraph::base::diagnostic::Code;
use serde_json::Value;

use crate::support::{Sandbox, assert_codes, assert_emits, codes, repo_root, snapshot_settings};

fn validate_fixture(root: &str, strict: bool) -> Value {
    let sb = Sandbox::new();
    let dir = repo_root().join("fixtures").join(root);
    let mut args = vec!["validate", "--all", "--json"];
    if strict {
        args.push("--strict");
    }
    sb.run(&dir, &args).json()
}

fn code_named(name: &str) -> Code {
    *Code::ALL
        .iter()
        .find(|c| c.as_str() == name)
        .unwrap_or_else(|| panic!("no code named {name}"))
}

#[test]
fn every_fixture_change_triggers_the_code_it_is_named_after() {
    let doc = validate_fixture("diagnostics", false);
    let items = doc["items"].as_array().expect("items");
    assert!(
        items.len() >= 25,
        "fixtures/diagnostics has {} changes",
        items.len()
    );
    // Every fixture change is an item checked below (the catalog test counts each
    // fixture's name as a code asserted emitted).
    let dirs: BTreeSet<String> =
        fs_err::read_dir(repo_root().join("fixtures/diagnostics/openspec/changes"))
            .expect("read fixtures")
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
    let ids: BTreeSet<String> = items
        .iter()
        .filter_map(|i| i["id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids, dirs, "every fixture change is validated");
    for item in items {
        let id = item["id"].as_str().expect("id");
        let code = code_named(id);
        assert_emits!(item["issues"], id, "{id}");
        let severity = item["issues"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| i["code"] == id)
            .and_then(|i| i["level"].as_str())
            .expect("level");
        // An error makes the item invalid; a warning alone does not.
        assert_eq!(item["valid"], severity != "ERROR", "{id} ({code:?}): valid");
    }
}

/// One item's whole diagnostic list, as text: `valid`, then per issue its
/// level, code and `path:line:col`, its message and its fix (and any other
/// field, so that a new one shows up in the diff).
fn render_item(item: &Value) -> String {
    let mut out = format!(
        "{} {}: valid {}\n",
        item["type"].as_str().unwrap_or("?"),
        item["id"].as_str().unwrap_or("?"),
        item["valid"]
    );
    for issue in item["issues"].as_array().into_iter().flatten() {
        let text = |key: &str| issue[key].as_str().unwrap_or("-").to_owned();
        let position = match (issue["line"].as_u64(), issue["column"].as_u64()) {
            (Some(line), Some(column)) => format!(":{line}:{column}"),
            (Some(line), None) => format!(":{line}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "\n{} {} {}{position}\n  {}\n  fix: {}\n",
            text("level"),
            text("code"),
            text("path"),
            text("message"),
            text("fix"),
        ));
        let known = ["level", "code", "path", "line", "column", "message", "fix"];
        for (key, value) in issue.as_object().into_iter().flatten() {
            if !known.contains(&key.as_str()) {
                out.push_str(&format!("  {key}: {value}\n"));
            }
        }
    }
    out
}

/// Every fixture's whole diagnostic list — code, file:line:col, message and
/// fix of each finding, in order — pinned by a snapshot per fixture item
/// (`snapshots/it__diagnostics__fixture@<root>-<item>.snap`), so that a new
/// finding, a moved position or a reworded message or fix is a visible diff.
#[test]
fn each_fixture_snapshots_its_whole_diagnostic_list() {
    let mut pinned = 0;
    for root in ["diagnostics", "preflight", "catalog-invalid", "multi-repo"] {
        let sb = Sandbox::new();
        let run = sb.run(
            &repo_root().join("fixtures").join(root),
            &["validate", "--all", "--json"],
        );
        let doc = run.json();
        for item in doc["items"].as_array().expect("items") {
            let id = item["id"].as_str().expect("id");
            let mut settings = snapshot_settings(&sb);
            settings.set_snapshot_suffix(format!("{root}-{id}"));
            settings.set_omit_expression(true);
            settings.bind(|| insta::assert_snapshot!("fixture", render_item(item)));
            pinned += 1;
        }
    }
    assert!(pinned >= 45, "{pinned} fixture items pinned");
}

#[test]
fn strict_mode_fails_items_with_warnings() {
    let lenient = validate_fixture("diagnostics", false);
    let strict = validate_fixture("diagnostics", true);
    let valid = |doc: &Value| -> BTreeSet<String> {
        doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["valid"] == true)
            .filter_map(|i| i["id"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(valid(&lenient).contains("unknown_key"));
    assert!(
        valid(&strict).is_empty(),
        "every fixture has at least a warning: {:?}",
        valid(&strict)
    );
}

#[test]
fn a_validation_failure_exits_1_with_the_full_report() {
    let sb = Sandbox::new();
    let dir = repo_root().join("fixtures/diagnostics");
    let run = sb.run(&dir, &["validate", "syntax_error", "--json"]);
    run.expect_code(1);
    let doc = run.json();
    assert_eq!(doc["summary"]["totals"]["failed"], 1);
    let issue = &doc["items"][0]["issues"][0];
    assert_emits!(issue, "syntax_error");
    assert_eq!(issue["path"], "openspec/changes/syntax_error/evidence.yaml");
    assert_eq!(
        (issue["line"].as_u64(), issue["column"].as_u64()),
        (Some(3), Some(1))
    );
    assert!(issue["fix"].as_str().is_some_and(|f| !f.is_empty()));
}

#[test]
fn catalog_mistakes_are_reported_together() {
    let doc = validate_fixture("catalog-invalid", false);
    let catalog = &doc["items"][0];
    assert_eq!(catalog["type"], "catalog");
    assert_codes!(
        codes(&catalog["issues"]),
        [
            "repository_path_missing",
            "invalid_value",
            "invalid_value",
            "missing_field",
            "trusted_key_invalid",
            "host_path_invalid",
            "host_path_invalid",
            "host_path_invalid"
        ]
    );
    let message = catalog["issues"][4]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\\n"),
        "a literal \\n in the PEM is named: {message}"
    );
    // Each refused host path is named with its reason, and the one below `~` passes.
    let reasons: Vec<&str> = catalog["issues"].as_array().expect("issues")[5..]
        .iter()
        .map(|i| i["message"].as_str().unwrap_or_default())
        .collect();
    for (issue, (path, why)) in reasons.iter().zip([
        ("relative/toolchain", "neither absolute nor below `~`"),
        ("/", "the whole file system"),
        ("~/a/../b", "`..` component"),
    ]) {
        assert!(issue.contains(path) && issue.contains(why), "{issue}");
    }
    assert_eq!(reasons.len(), 3, "{reasons:?}");
}

#[test]
fn the_valid_fixture_uses_every_field_and_passes_strict() {
    let doc = validate_fixture("valid", true);
    assert_eq!(doc["summary"]["totals"]["failed"], 0, "{doc:#}");
    assert_eq!(doc["summary"]["totals"]["items"], 2);
    for item in doc["items"].as_array().expect("items") {
        assert_eq!(item["issues"], Value::Array(Vec::new()), "{}", item["id"]);
    }
}

#[test]
fn a_file_larger_than_the_limit_is_refused_unread() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    let mut big = String::from("version: 2\nclaims: []\n# ");
    big.push_str(&"x".repeat(5 * 1024 * 1024));
    sb.write("openspec/changes/big/evidence.yaml", big);
    let run = sb.run(&sb.work(), &["validate", "big", "--json"]);
    run.expect_code(1);
    assert_codes!(crate::support::issue_codes(&run.json()), ["file_too_large"]);
}

/// The issues of `validate --all --json` as (item, code, line, column).
fn issues(doc: &Value) -> Vec<(String, String, u64, u64)> {
    let mut out = Vec::new();
    for item in doc["items"].as_array().expect("items") {
        for issue in item["issues"].as_array().into_iter().flatten() {
            out.push((
                item["id"].as_str().unwrap_or_default().to_owned(),
                issue["code"].as_str().unwrap_or_default().to_owned(),
                issue["line"].as_u64().unwrap_or(0),
                issue["column"].as_u64().unwrap_or(0),
            ));
        }
    }
    out
}

/// Values that cannot reach `execve` — a NUL byte in an argv element (a
/// provider's command, a service's, a repository's `setup`) or in an `env`
/// value, `=` in an environment variable's name — are preflight errors at
/// their position: `validate` exits 1 and `prove` exits 3 before anything
/// runs, instead of a run-time failure with no code.
#[test]
fn values_no_process_can_receive_are_preflight_errors() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: .\n    setup: [[sh, \"-c\\0\"]]\n",
    );
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        r#"version: 1
providers:
  lint:
    adapter: command
    capability: static-analysis
    command: [sh, "-c", "echo \0"]
    env: {GOOD: "a\u0000b", "A=B": x}
    service: db
services:
  db:
    command: ["db\0"]
    readiness: {url: "http://127.0.0.1:4599/"}
"#,
    );
    crate::support::git_commit_all(&sb.work());
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    run.expect_code(1);
    let found = issues(&run.json());
    for expected in [
        ("proofgraph.yaml", "nul_in_value", 5, 18),
        ("x", "nul_in_value", 6, 25),
        ("x", "nul_in_value", 7, 17),
        ("x", "invalid_id", 7, 29),
        ("x", "nul_in_value", 11, 15),
    ] {
        assert!(
            found
                .iter()
                .any(|(i, c, l, col)| (i.as_str(), c.as_str(), *l, *col) == expected),
            "{expected:?} among {found:#?}"
        );
    }
    let prove = sb.run(&sb.work(), &["prove", "x", "--json"]);
    prove.expect_code(3);
    assert_codes!(
        prove.status_codes(),
        [
            "nul_in_value",
            "nul_in_value",
            "invalid_id",
            "nul_in_value",
            "nul_in_value"
        ]
    );
}

/// `command: [true]`: YAML reads `true` as a boolean. One finding says so at
/// the element, not also that the list is empty.
#[test]
fn an_argv_element_yaml_reads_as_a_boolean_is_one_clear_finding() {
    let sb = Sandbox::new();
    sb.lint_change("[true]");
    let run = sb.run(&sb.work(), &["validate", "add-x", "--json"]);
    run.expect_code(1);
    let doc = run.json();
    let found = doc["items"][0]["issues"]
        .as_array()
        .expect("issues")
        .clone();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_emits!(found[0], "wrong_type");
    let message = found[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("is the boolean `true`, not a string"),
        "{message}"
    );
    assert_eq!(found[0]["fix"], "Quote it: \"true\".");
    // Quoted, it is the program `true`.
    let sb = Sandbox::new();
    sb.lint_change("[\"true\", \"1\"]");
    sb.run(&sb.work(), &["validate", "add-x", "--json"])
        .expect_code(0);
    let sb = Sandbox::new();
    sb.lint_change("[sleep, 1]");
    let run = sb.run(&sb.work(), &["prove", "add-x", "--json"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["wrong_type"]);
}

/// A catalog repository's `path` is relative (a committed catalog is read
/// wherever the workspace is checked out) and names a directory inside a git
/// work tree: a sibling repository (`../api`) and the monorepo above an
/// OpenSpec root in a subdirectory (`..`) are fine; `/etc`, a `..` that
/// leaves every git work tree, a path inside `.git` and a missing directory
/// are refused at the path.
#[test]
fn catalog_repository_paths_are_relative_directories_of_git_work_trees() {
    let sb = Sandbox::new();
    // The OpenSpec root in `work/specs`, the git work tree at `work`, and a
    // sibling repository next to `work`.
    sb.openspec_root("specs");
    sb.write("specs/openspec/changes/x/proposal.md", "# x\n");
    sb.write("app.txt", "app\n");
    let sibling = sb.path().join("api");
    crate::support::write(&sibling.join("main.rs"), "fn main() {}\n");
    crate::support::git_commit_all(&sibling);
    crate::support::git_commit_all(&sb.work());
    let root = sb.work().join("specs");
    let validate = |catalog: &str| {
        sb.write("specs/proofgraph.yaml", catalog);
        let run = sb.run(&root, &["validate", "--all", "--json"]);
        (run.code, issues(&run.json()))
    };
    let (code, found) = validate(
        "version: 1\nrepositories:\n  mono: {path: ..}\n  api: {path: ../../api}\n  specs: {path: .}\n",
    );
    assert_eq!(code, Some(0), "{found:#?}");
    assert!(
        found.iter().all(|(item, ..)| item != "proofgraph.yaml"),
        "{found:#?}"
    );
    let (code, found) = validate(
        "version: 1\nrepositories:\n  etc: {path: /etc}\n  up: {path: ../..}\n  git: {path: ../.git}\n  gone: {path: nowhere}\n",
    );
    assert_eq!(code, Some(1));
    let at = |c: &str| -> Vec<(u64, u64)> {
        found
            .iter()
            .filter(|(i, code, ..)| i == "proofgraph.yaml" && code == c)
            .map(|(_, _, l, col)| (*l, *col))
            .collect()
    };
    let catalog: Vec<&str> = found
        .iter()
        .filter(|(i, ..)| i == "proofgraph.yaml")
        .map(|(_, code, ..)| code.as_str())
        .collect();
    assert_codes!(
        catalog,
        [
            "repository_path_absolute",
            "not_a_git_repository",
            "not_a_git_repository",
            "repository_path_missing"
        ]
    );
    assert_eq!(at("repository_path_absolute"), [(3, 15)], "{found:#?}");
    assert_eq!(at("not_a_git_repository"), [(4, 14), (5, 15)], "{found:#?}");
    assert_eq!(at("repository_path_missing"), [(6, 16)], "{found:#?}");
    let prove = sb.run(&root, &["prove", "x", "--json"]);
    prove.expect_code(3);
}

/// A cached setup that would install the project itself (what let a broken library pass
/// through a cached venv) is refused at the command, in each spelling; installing only the
/// dependencies, or installing the project without a cache, is fine.
#[test]
fn a_cached_setup_that_installs_the_project_is_refused_at_the_command() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    crate::support::git_commit_all(&sb.work());
    let validate = |catalog: &str| {
        sb.write("proofgraph.yaml", catalog);
        let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
        (run.code, issues(&run.json()))
    };
    let (code, found) = validate(
        "version: 1\nrepositories:\n  lib:\n    path: .\n    setupCache: [.venv]\n    setup:\n      - [python3, -m, venv, .venv]\n      - [.venv/bin/pip, install, -e, .]\n      - [pip, install, \".[test]\"]\n      - [uv, sync]\n      - [poetry, install]\n      - [python3, -m, pip, install, ./]\n      - [pip, install, -r, requirements.txt]\n      - [uv, sync, --no-install-project]\n",
    );
    assert_eq!(code, Some(1), "{found:#?}");
    let refused: Vec<(String, u64, u64)> = found
        .iter()
        .filter(|(i, ..)| i == "proofgraph.yaml")
        .map(|(_, code, line, column)| (code.clone(), *line, *column))
        .collect();
    let codes: Vec<&str> = refused.iter().map(|(c, ..)| c.as_str()).collect();
    assert_codes!(
        codes,
        [
            "setup_installs_project",
            "setup_installs_project",
            "setup_installs_project",
            "setup_installs_project",
            "setup_installs_project"
        ]
    );
    let lines: Vec<(u64, u64)> = refused.iter().map(|(_, l, c)| (*l, *c)).collect();
    assert_eq!(lines, [(8, 9), (9, 9), (10, 9), (11, 9), (12, 9)]);
    // Without a cache, setup runs in each sandbox with the code as it is: honest.
    let (code, found) = validate(
        "version: 1\nrepositories:\n  lib:\n    path: .\n    setup:\n      - [pip, install, -e, .]\n",
    );
    assert_eq!(code, Some(0), "{found:#?}");
}
