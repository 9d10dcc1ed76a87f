//! `init`: only high-confidence candidates are added; existing providers
//! keep every byte; JSON stays JSON and YAML stays YAML (comments included).

use bootstrap::{Detection, detect, init};
use proofgraph_graph::Adapter;

use crate::layouts::*;

/// The vite app's detection: `test`, `browser` and `static-analysis` are
/// high-confidence candidates.
fn vite_detection() -> Detection {
    let dir = temp();
    vite_app(dir.path());
    let claims = [claim(
        "profile-update",
        &["test", "browser", "static-analysis"],
        None,
    )];
    detect(&root(dir.path()), &claims, &[], &host())
}

/// Asserts that `after` is `before` with one contiguous insertion, and
/// returns the inserted text.
fn inserted<'a>(before: &str, after: &'a str) -> &'a str {
    let prefix = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = before[prefix..]
        .bytes()
        .rev()
        .zip(after[prefix..].bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    assert_eq!(
        prefix + suffix,
        before.len(),
        "the original text must survive as one prefix and one suffix"
    );
    &after[prefix..after.len() - suffix]
}

const JSON_EXECUTION: &str = r#"{
  "version": 1,
  "providers": {
    "static-analysis": {
      "adapter": "command",
      "command": ["npm", "run", "check"],
      "timeoutMs": 120000
    }
  },
  "services": {}
}
"#;

#[test]
fn json_stays_json_and_existing_providers_keep_their_bytes() {
    let out = init(Some(JSON_EXECUTION), &vite_detection()).expect("init");
    let added = inserted(JSON_EXECUTION, &out.text);
    assert!(added.starts_with(",\n    \"test\": {"), "{added}");
    let names: Vec<&str> = out.added.iter().map(|n| n.as_str()).collect();
    assert_eq!(names, ["test", "browser"]);
    let kept: Vec<&str> = out.kept.iter().map(|n| n.as_str()).collect();
    assert_eq!(kept, ["static-analysis"]);
    assert_eq!(out.skipped.len(), 1);
    assert!(
        out.skipped[0].reason.contains("already exists"),
        "{:?}",
        out.skipped
    );
    let value: serde_json::Value = serde_json::from_str(&out.text).expect("still JSON");
    assert_eq!(value["providers"]["test"]["reportFormat"], "vitest");
    insta::assert_snapshot!("init_json", out.text);
}

#[test]
fn minified_json_gets_minified_entries() {
    let before = r#"{"version":1,"providers":{"lint":{"adapter":"command","command":["npm","run","lint"],"capability":"static-analysis"}},"services":{}}"#;
    let out = init(Some(before), &vite_detection()).expect("init");
    let added = inserted(before, &out.text);
    assert!(
        added.starts_with(",\"test\":{\"adapter\":\"test-discovery\""),
        "{added}"
    );
    assert!(!added.contains('\n'));
    assert_eq!(out.skipped.len(), 1, "static-analysis is wired by `lint`");
    assert!(
        out.skipped[0].reason.contains("already wired"),
        "{:?}",
        out.skipped
    );
}

#[test]
fn empty_json_providers_become_an_indented_object() {
    let before = "{\n  \"version\": 1,\n  \"providers\": {},\n  \"services\": {}\n}\n";
    let out = init(Some(before), &vite_detection()).expect("init");
    assert!(out.text.starts_with("{\n  \"version\": 1,\n  \"providers\": {\n    \"test\": {\n      \"adapter\": \"test-discovery\",\n"));
    assert!(
        out.text.ends_with("\n  },\n  \"services\": {}\n}\n"),
        "{}",
        out.text
    );
    assert_eq!(out.added.len(), 3);
}

#[test]
fn json_without_providers_gets_the_key() {
    let before = "{\n    \"version\": 1\n}\n";
    let out = init(Some(before), &vite_detection()).expect("init");
    let added = inserted(before, &out.text);
    assert!(
        added.starts_with(",\n    \"providers\": {\n        \"test\": {\n"),
        "{added}"
    );
}

const YAML_EXECUTION: &str = "# Wiring for the profile change.
version: 1
providers:
  # Lint through the project's script.
  static-analysis:
    adapter: command
    command: [npm, run, check]   # keep in sync with CI
    timeoutMs: 120000

  # (more providers below)
# Services start on demand.
services:
  web:
    command: [npm, run, dev]
    readiness:
      url: http://127.0.0.1:5173/
      expectBody: profile
";

#[test]
fn yaml_stays_yaml_with_its_comments() {
    let out = init(Some(YAML_EXECUTION), &vite_detection()).expect("init");
    let added = inserted(YAML_EXECUTION, &out.text);
    assert!(
        added.starts_with("  # added by proofgraph evidence init: "),
        "{added}"
    );
    assert!(
        out.text
            .contains("  # (more providers below)\n  # added by"),
        "new entries go after the indented comment"
    );
    assert!(
        out.text
            .contains("# Services start on demand.\nservices:\n"),
        "the top-level comment stays with `services`"
    );
    let names: Vec<&str> = out.added.iter().map(|n| n.as_str()).collect();
    assert_eq!(names, ["test", "browser"]);
    insta::assert_snapshot!("init_yaml", out.text);
}

#[test]
fn yaml_flow_and_empty_providers() {
    let detection = vite_detection();
    let out = init(
        Some("version: 1\nproviders: {}  # none yet\nservices: {}\n"),
        &detection,
    )
    .expect("init");
    assert!(
        out.text
            .starts_with("version: 1\nproviders: # none yet\n  # added by"),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("services: {}\n"));
    let out = init(Some("version: 1\nproviders:\nservices: {}\n"), &detection).expect("init");
    assert!(
        out.text.starts_with("version: 1\nproviders:\n  # added by"),
        "{}",
        out.text
    );
    let before = "version: 1\nproviders: {lint: {adapter: command, capability: static-analysis, command: [npm, run, lint]}}\n";
    let out = init(Some(before), &detection).expect("init");
    let added = inserted(before, &out.text);
    assert!(
        added.starts_with(", test: {adapter: test-discovery, command: [npm, run, test, --, --run"),
        "{added}"
    );
    let out = init(Some("version: 1\n"), &detection).expect("init");
    assert!(
        out.text.starts_with("version: 1\nproviders:\n  # added by"),
        "{}",
        out.text
    );
}

#[test]
fn crlf_yaml_keeps_crlf() {
    let before = "version: 1\r\nproviders:\r\n  lint:\r\n    adapter: command\r\n    capability: static-analysis\r\n    command: [npm, run, lint]\r\nservices: {}\r\n";
    let out = init(Some(before), &vite_detection()).expect("init");
    let added = inserted(before, &out.text);
    assert!(added.contains("\r\n") && !added.replace("\r\n", "").contains('\n'));
}

#[test]
fn no_file_gives_a_version_1_yaml_file() {
    let out = init(None, &vite_detection()).expect("init");
    assert!(out.text.starts_with("version: 1\nproviders:\n"));
    assert!(out.text.ends_with("services: {}\n"));
    insta::assert_snapshot!("init_new_file", out.text);
}

#[test]
fn nothing_is_added_when_the_capability_is_already_wired() {
    let dir = temp();
    vite_app(dir.path());
    let claims = [claim("c", &["test"], None)];
    // The file wires test under another name; the detection did not know.
    let before = "version: 1\nproviders:\n  unit:\n    adapter: test-discovery\n    capability: test\n    discoveryProvider: discovery\n    command: [npm, test]\n    report: r.json\n";
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    let out = init(Some(before), &detection).expect("init");
    assert_eq!(out.text, before);
    assert!(out.added.is_empty());
    assert!(
        out.skipped[0]
            .reason
            .contains("already wired for `root` by `unit`"),
        "{:?}",
        out.skipped
    );
    // With the existing provider known to detect, there is no candidate at all.
    let mut unit = with_capability(
        provider("unit", Adapter::TestDiscovery, &["npm", "test"]),
        "test",
    );
    unit.discovery_provider = Some(proofgraph_graph::span::Spanned::new(
        proofgraph_graph::ProviderId::parse("discovery").expect("valid"),
        proofgraph_graph::span::Pos::default(),
    ));
    let detection = detect(&root(dir.path()), &claims, &[unit], &host());
    assert!(detection.candidates.is_empty());
    assert_eq!(init(Some(before), &detection).expect("init").text, before);
}

#[test]
fn only_high_confidence_candidates_are_written() {
    let dir = temp();
    write(
        dir.path(),
        &[(
            "package.json",
            r#"{"scripts": {"test": "node scripts/t.mjs", "lint": "eslint .", "typecheck": "tsc"}, "devDependencies": {"jest": "29", "vitest": "3"}}"#,
        )],
    );
    let detection = detect(
        &root(dir.path()),
        &[claim("c", &["test", "static-analysis"], None)],
        &[],
        &host(),
    );
    assert!(!detection.candidates.is_empty());
    assert!(detection.candidates.iter().all(|c| !c.recommended));
    let out = init(Some(JSON_EXECUTION), &detection).expect("init");
    assert_eq!(out.text, JSON_EXECUTION);
    assert!(out.added.is_empty());
    let out = init(None, &detection).expect("init");
    assert_eq!(out.text, "version: 1\nproviders: {}\nservices: {}\n");
}

#[test]
fn a_monorepo_adds_test_providers_with_their_discovery_receivers() {
    let dir = temp();
    let web = sub(dir.path(), "web");
    let api = sub(dir.path(), "api");
    vite_app(&web);
    cargo_crate(&api);
    let repos = [repo("web", &web), repo("api", &api)];
    let detection = detect(
        &repos,
        &[claim("c", &["test"], Some(&["web", "api"]))],
        &[],
        &host(),
    );
    // The file already has a `discovery-api` of its own: `test-api` and its
    // receiver are skipped together.
    let before = "version: 1\nproviders:\n  discovery-api:\n    adapter: external\n    capability: integration\n";
    let out = init(Some(before), &detection).expect("init");
    let names: Vec<&str> = out.added.iter().map(|n| n.as_str()).collect();
    assert_eq!(names, ["test-web", "discovery-web"]);
    let skipped: Vec<&str> = out.skipped.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skipped, ["discovery-api", "test-api"]);
    assert!(out.text.contains(
        "  test-web:\n    adapter: test-discovery\n    capability: test\n    repository: web\n"
    ));
    assert!(out.text.contains("    discoveryProvider: discovery-web\n"));
    assert!(out.text.contains(
        "  discovery-web:\n    adapter: test-discovery\n    capability: discovery\n    repository: web\n"
    ));
}

#[test]
fn unreadable_files_are_errors_not_rewrites() {
    let detection = vite_detection();
    assert!(init(Some("{ \"version\": 1, "), &detection).is_err());
    assert!(init(Some("providers: [a, b]\n"), &detection).is_err());
    assert!(init(Some("- a\n- b\n"), &detection).is_err());
    assert!(init(Some("a: [\n"), &detection).is_err());
}

#[test]
fn yaml_entries_go_after_the_last_provider_not_after_a_top_level_comment() {
    let before = "version: 1
providers:
  a:
    adapter: command
    capability: integration
    command: [make, a]
# a column-0 comment between providers
  b:
    adapter: command
    capability: performance
    command: [make, b]   # trailing
    # an indented comment after the last field

# the services
services: {}
";
    let out = init(Some(before), &vite_detection()).expect("init");
    let added = inserted(before, &out.text);
    assert!(added.starts_with("  # added by"), "{added}");
    assert!(
        out.text
            .contains("    # an indented comment after the last field\n  # added by")
    );
    assert!(out.text.contains("static-analysis:\n    adapter: command\n    command: [npm, run, lint]\n\n# the services\nservices: {}\n"));
}

#[test]
fn an_edit_that_would_change_an_existing_value_is_refused() {
    // A keep-chomped block scalar owns the blank line after it; inserting
    // there would change its value, and the read-back check says so.
    let before = "version: 1\nproviders:\n  a:\n    adapter: command\n    capability: integration\n    command: [make]\n    note: |+\n      kept\n\nservices: {}\n";
    let err = init(Some(before), &vite_detection()).expect_err("refused");
    assert!(
        matches!(&err, bootstrap::InitError::Verification(m) if m.contains("provider `a` would change")),
        "{err}"
    );
}

/// `init` reads through the reader `validate` uses: what `validate` refuses, `init`
/// refuses at the same place, rather than editing a file it reads differently.
#[test]
fn a_file_validate_refuses_is_refused_at_the_same_position() {
    let detection = vite_detection();
    for (text, syntax, line, column, says) in [
        // A repeated provider: the old YAML reader kept the last one and edited the file.
        (
            "version: 1\nproviders:\n  a:\n    adapter: command\n  a:\n    adapter: external\n",
            "YAML",
            5,
            3,
            "key `a` appears twice in one mapping (first at line 3, column 3)",
        ),
        (
            "{\"version\": 1,\n \"providers\": {}, \"version\": 2}",
            "JSON",
            2,
            19,
            "key `version` appears twice",
        ),
        (
            "version: 1\n---\nproviders: {}\n",
            "YAML",
            2,
            1,
            "more than one YAML document",
        ),
        ("a: &x 1\nb: *x\n", "YAML", 2, 4, "aliases"),
        ("version: !!int 1\n", "YAML", 1, 10, "tags"),
        (
            "? [a]\n: 1\n",
            "YAML",
            1,
            3,
            "mapping keys must be plain text",
        ),
    ] {
        match init(Some(text), &detection) {
            Err(bootstrap::InitError::Syntax {
                syntax: s,
                line: l,
                column: c,
                message,
            }) => {
                assert_eq!((s, l, c), (syntax, line, column), "{text:?}: {message}");
                assert!(message.contains(says), "{text:?}: {message}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// A number with no exact JSON value cannot be compared before and after the edit; the
/// old YAML reader took `.inf` and `1e400` for strings and edited the file.
#[test]
fn a_number_without_a_json_value_is_refused_not_read_as_a_string() {
    let detection = vite_detection();
    for (text, number, line, column) in [
        ("version: 1\nx-budget: .inf\nproviders: {}\n", ".inf", 2, 11),
        ("version: 1\nx-budget: [-.Inf, .NaN]\n", "-.Inf", 2, 12),
        ("version: 1\nx-budget: 1e400\n", "1e400", 2, 11),
        ("{\"version\": 1, \"x-budget\": 1e400}", "1e400", 1, 28),
    ] {
        match init(Some(text), &detection) {
            Err(bootstrap::InitError::Number {
                number: n,
                line: l,
                column: c,
            }) => assert_eq!((n.as_str(), l, c), (number, line, column), "{text:?}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
    // The same words quoted are strings, and the file is edited.
    let out = init(
        Some("version: 1\nx-budget: \".inf\"\nproviders: {}\n"),
        &detection,
    )
    .expect("init");
    assert!(
        out.text
            .starts_with("version: 1\nx-budget: \".inf\"\nproviders:\n  # added by")
    );
}

/// A JSON file behind a byte order mark is read as JSON, as `validate` reads it (the old
/// reader took it for YAML and refused it), and edited in place behind the mark.
#[test]
fn a_json_file_behind_a_byte_order_mark_stays_json() {
    let before = format!("\u{feff}{JSON_EXECUTION}");
    let out = init(Some(&before), &vite_detection()).expect("init");
    let added = inserted(&before, &out.text);
    assert!(added.starts_with(",\n    \"test\": {\n"), "{added}");
    let again = bootstrap::read(&out.text).expect("reads back");
    assert_eq!(
        again["providers"]["static-analysis"]["timeoutMs"],
        serde_json::json!(120000)
    );
    assert!(again["providers"]["test"].is_object());
}

/// Spans are bytes: an anchored empty `providers`, a flow mapping after non-ASCII text
/// and a trailing comment are all spliced at the right byte.
#[test]
fn edits_land_on_the_right_bytes_around_anchors_and_non_ascii_text() {
    let detection = vite_detection();
    // The whole `&p ~` goes (the old reader removed one character: `&`).
    let out = init(
        Some("version: 1\nproviders: &p ~  # ¿\nservices: {}\n"),
        &detection,
    )
    .expect("init");
    assert!(
        out.text
            .starts_with("version: 1\nproviders:  # ¿\n  # added by"),
        "{}",
        out.text
    );
    let before = "version: 1\nproviders: {ñandú: {adapter: command, capability: integration, command: [echo, \"ü\"]}}  # é\n";
    let out = init(Some(before), &detection).expect("init");
    let added = inserted(before, &out.text);
    assert!(
        added.starts_with(", test: {adapter: test-discovery"),
        "{added}"
    );
    assert!(out.text.ends_with("]}}  # é\n"), "{}", out.text);
}
