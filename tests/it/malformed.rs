//! Malformed input of every kind: truncated, binary, huge and deeply nested
//! files give exit 1 from `validate` and exit 3 from `show`, one JSON document
//! with the command's null shape, and never a panic.

use serde_json::{Value, json};

use crate::support::{Sandbox, issue_codes, repo_root};

const VALID_EXECUTION: &str = "fixtures/valid/openspec/changes/add-profile/execution.yaml";

/// Every way to spoil an `execution.yaml`, with the code it must produce.
fn spoiled() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let valid = fs_err::read(repo_root().join(VALID_EXECUTION)).expect("read the valid fixture");
    let mut cases: Vec<(&'static str, Vec<u8>, &'static str)> = Vec::new();
    cases.push((
        "truncated in a flow list",
        valid[..valid.len() / 3].to_vec(),
        "syntax_error",
    ));
    let json =
        b"{\"version\": 1, \"providers\": {\"test\": {\"adapter\": \"command\", \"comm".to_vec();
    cases.push(("truncated JSON", json, "syntax_error"));
    let mut binary: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    binary[0] = 0xff;
    cases.push(("binary", binary, "invalid_utf8"));
    cases.push((
        "nul bytes",
        b"version: 1\0\0\0providers: {}\n".to_vec(),
        "syntax_error",
    ));
    cases.push(("huge (50 MB)", huge(50 * 1024 * 1024), "file_too_large"));
    cases.push((
        "deep JSON",
        deep("{\"a\":", "}", 100_000),
        "nesting_too_deep",
    ));
    cases.push((
        "deep YAML flow",
        deep("[", "]", 100_000),
        "nesting_too_deep",
    ));
    let block: String = (0..200)
        .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
        .collect();
    cases.push(("deep YAML block", block.into_bytes(), "nesting_too_deep"));
    cases.push(("empty", Vec::new(), "wrong_type"));
    cases.push(("a bare scalar", b"42\n".to_vec(), "wrong_type"));
    cases
}

fn huge(size: usize) -> Vec<u8> {
    let mut out = b"version: 1\nproviders: {}\n".to_vec();
    while out.len() < size {
        out.extend_from_slice(
            b"# padding padding padding padding padding padding padding padding\n",
        );
    }
    out
}

fn deep(open: &str, close: &str, depth: usize) -> Vec<u8> {
    let mut out = String::with_capacity(depth * (open.len() + close.len()));
    out.push_str(&open.repeat(depth));
    out.push_str(&close.repeat(depth));
    out.into_bytes()
}

fn tree_with(sb: &Sandbox, execution: &[u8]) {
    sb.openspec_root("");
    sb.write(
        "openspec/changes/demo/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [test]}\n",
    );
    sb.write("openspec/changes/demo/execution.yaml", execution);
}

#[test]
fn validate_reports_each_malformed_file_with_exit_1() {
    for (name, bytes, code) in spoiled() {
        let sb = Sandbox::new();
        tree_with(&sb, &bytes);
        let run = sb.run(&sb.work(), &["validate", "demo", "--json"]);
        assert_eq!(run.code, Some(1), "{name}: exit code\n{}", run.stderr);
        assert!(
            !run.stderr.contains("panicked"),
            "{name}: panicked\n{}",
            run.stderr
        );
        let doc = run.json();
        assert_eq!(doc["schema_version"], 1, "{name}");
        assert!(
            issue_codes(&doc).iter().any(|c| c == code),
            "{name}: {code} not in {:?}",
            issue_codes(&doc)
        );
    }
}

#[test]
fn show_prints_the_null_shape_with_exit_3() {
    for (name, bytes, code) in spoiled() {
        let sb = Sandbox::new();
        tree_with(&sb, &bytes);
        let run = sb.run(&sb.work(), &["show", "demo", "--json"]);
        assert_eq!(run.code, Some(3), "{name}: exit code\n{}", run.stderr);
        assert!(
            !run.stderr.contains("panicked"),
            "{name}: panicked\n{}",
            run.stderr
        );
        let mut doc = run.json();
        let status = doc["status"].take();
        assert!(
            crate::support::codes(&status).iter().any(|c| c == code),
            "{name}: {code} not in {status}"
        );
        assert_eq!(
            doc,
            json!({"schema_version": 1, "change": null, "repositories": [], "root": null, "status": null}),
            "{name}: null shape"
        );
    }
}

#[test]
fn a_malformed_catalog_does_not_stop_validation_of_changes() {
    let sb = Sandbox::new();
    tree_with(
        &sb,
        b"version: 1\nproviders:\n  test: {adapter: test-discovery, command: [t]}\n",
    );
    sb.write("proofgraph.yaml", b"\xff\xfe binary");
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    run.expect_code(1);
    let doc = run.json();
    let kinds: Vec<(&str, bool)> = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap_or(""),
                i["valid"] == Value::Bool(true),
            )
        })
        .collect();
    assert_eq!(kinds, vec![("catalog", false), ("change", true)]);
}
