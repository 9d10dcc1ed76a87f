//! Data-driven diagnostics: every change under `fixtures/diagnostics/` is
//! named after the code it must trigger, and `validate` must report it.

use std::collections::BTreeSet;

use proofgraph::diagnostic::Code;
use serde_json::Value;

use crate::support::{Sandbox, codes, repo_root};

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
    for item in items {
        let id = item["id"].as_str().expect("id");
        let code = code_named(id);
        let found = codes(&item["issues"]);
        assert!(
            found.iter().any(|c| c == id),
            "{id}: expected `{id}` among {found:?}"
        );
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
    assert_eq!(issue["code"], "syntax_error");
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
    assert_eq!(
        codes(&catalog["issues"]),
        vec![
            "repository_path_missing",
            "invalid_value",
            "invalid_value",
            "missing_field",
            "trusted_key_invalid"
        ]
    );
    let message = catalog["issues"][4]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("\\n"),
        "a literal \\n in the PEM is named: {message}"
    );
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
    assert_eq!(
        crate::support::issue_codes(&run.json()),
        vec!["file_too_large"]
    );
}
