//! One syntax layer: `validate` and `evidence init` read configuration text through
//! `proofgraph-syntax`, so they agree on every point where their readers used to differ.
//!
//! Each row of the table is one decision (recorded in `syntax/src/lib.rs` and
//! docs/diagnostics.md). The same text goes through what `validate` reads a file with
//! (`load::config::load::parse_bytes`) and what `init` reads and checks its edit with
//! (`bootstrap::read`); the test states what each must make of it, and checks that the two
//! agree: the same value, or a refusal at the same line and column.

use proofgraph::load::config::load::parse_bytes;
use proofgraph::syntax::node::{Node, Value};
use serde_json::json;

use crate::support::{Sandbox, git_commit_all};

/// What `init` makes of a text.
#[derive(Debug)]
enum Init {
    /// This data.
    Reads(serde_json::Value),
    /// A refusal of the text (`validate` refuses it too, with this code).
    Refused(&'static str),
    /// A refusal of a number with no exact JSON value (`validate` reads a number).
    NoJsonValue,
}

/// A tree in a compact notation: `null`, `true`, `num(0x1F)`, `"text"`, `[…]`, `{key: …}`.
fn shown(node: &Node) -> String {
    match &node.value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("num({n})"),
        Value::String(s) => format!("{s:?}"),
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(shown).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{:?}: {}", k.name, shown(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Whether `validate`'s tree and `init`'s data say the same thing: the same kinds, keys
/// in the same order, the same strings, and numbers of the same value.
fn agree(node: &Node, data: &serde_json::Value) -> bool {
    match (&node.value, data) {
        (Value::Null, serde_json::Value::Null) => true,
        (Value::Bool(a), serde_json::Value::Bool(b)) => a == b,
        (Value::String(a), serde_json::Value::String(b)) => a == b,
        (Value::Number(text), serde_json::Value::Number(n)) => {
            let spelled = proofgraph::syntax::node::number_as_json(text);
            let value = spelled.and_then(|s| s.parse::<f64>().ok());
            value.is_some() && value == n.as_f64()
        }
        (Value::Seq(items), serde_json::Value::Array(values)) => {
            items.len() == values.len() && items.iter().zip(values).all(|(i, v)| agree(i, v))
        }
        (Value::Map(entries), serde_json::Value::Object(map)) => {
            entries.len() == map.len()
                && entries
                    .iter()
                    .zip(map)
                    .all(|((k, v), (name, value))| k.name == *name && agree(v, value))
        }
        _ => false,
    }
}

/// Every number in the tree, with its position.
fn numbers(node: &Node, out: &mut Vec<(String, u32, u32)>) {
    match &node.value {
        Value::Number(n) => out.push((n.clone(), node.pos.line, node.pos.column)),
        Value::Seq(items) => items.iter().for_each(|n| numbers(n, out)),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| numbers(v, out)),
        _ => {}
    }
}

#[test]
fn validate_and_init_read_every_decision_alike() {
    use Init::*;
    // (decision, text, what `validate` reads — a tree, or the code and position of its
    // refusal — and what `init` reads.)
    let table: &[(&str, &str, &str, Init)] = &[
        // Scalars: the YAML 1.2 core schema, as the `yaml` npm package reads them.
        (
            "infinity is a number",
            "a: .inf\n",
            "{\"a\": num(.inf)}",
            NoJsonValue,
        ),
        (
            "signed infinity",
            "a: [-.Inf, +.INF]\n",
            "{\"a\": [num(-.Inf), num(+.INF)]}",
            NoJsonValue,
        ),
        (
            "not a number is a number",
            "a: .nan\n",
            "{\"a\": num(.nan)}",
            NoJsonValue,
        ),
        (
            "out of f64's range",
            "a: 1e400\n",
            "{\"a\": num(1e400)}",
            NoJsonValue,
        ),
        (
            "out of range in JSON",
            "{\"a\": 1e400}",
            "{\"a\": num(1e400)}",
            NoJsonValue,
        ),
        (
            "quoted infinity is text",
            "a: '.inf'\n",
            "{\"a\": \".inf\"}",
            Reads(json!({"a": ".inf"})),
        ),
        (
            "tilde is null",
            "a: ~\n",
            "{\"a\": null}",
            Reads(json!({"a": null})),
        ),
        (
            "nothing is null",
            "a:\nb: Null\n",
            "{\"a\": null, \"b\": null}",
            Reads(json!({"a": null, "b": null})),
        ),
        (
            "YAML 1.1 booleans are text",
            "a: [yes, no, on, off, y, n]\n",
            "{\"a\": [\"yes\", \"no\", \"on\", \"off\", \"y\", \"n\"]}",
            Reads(json!({"a": ["yes", "no", "on", "off", "y", "n"]})),
        ),
        (
            "core booleans",
            "a: [True, FALSE, tRUE]\n",
            "{\"a\": [true, false, \"tRUE\"]}",
            Reads(json!({"a": [true, false, "tRUE"]})),
        ),
        (
            "octal with 0o",
            "a: 0o17\n",
            "{\"a\": num(0o17)}",
            Reads(json!({"a": 15})),
        ),
        (
            "a leading zero is decimal",
            "a: 017\n",
            "{\"a\": num(017)}",
            Reads(json!({"a": 17})),
        ),
        (
            "hexadecimal",
            "a: 0x1F\n",
            "{\"a\": num(0x1F)}",
            Reads(json!({"a": 31})),
        ),
        (
            "other radix spellings are text",
            "a: [0X1F, -0o17, 0b101, 1_000]\n",
            "{\"a\": [\"0X1F\", \"-0o17\", \"0b101\", \"1_000\"]}",
            Reads(json!({"a": ["0X1F", "-0o17", "0b101", "1_000"]})),
        ),
        (
            "decimal forms",
            "a: [+12, 1., .5, 1e3, -0.25]\n",
            "{\"a\": [num(+12), num(1.), num(.5), num(1e3), num(-0.25)]}",
            Reads(json!({"a": [12, 1.0, 0.5, 1000.0, -0.25]})),
        ),
        (
            "dates are text",
            "a: 2001-12-14\n",
            "{\"a\": \"2001-12-14\"}",
            Reads(json!({"a": "2001-12-14"})),
        ),
        // Keys: the text of a scalar key; booleans and null as JSON spells them.
        (
            "scalar keys",
            "True: 1\n~: 2\n1.0: 3\n'x': 4\n",
            "{\"true\": num(1), \"null\": num(2), \"1.0\": num(3), \"x\": num(4)}",
            Reads(json!({"true": 1, "null": 2, "1.0": 3, "x": 4})),
        ),
        // Refusals: what `validate` will not read, `init` will not edit.
        (
            "a repeated key",
            "a: 1\nb: 2\na: 3\n",
            "duplicate_key 3:1",
            Refused("duplicate_key"),
        ),
        (
            "a repeated key in JSON",
            "{\"a\": 1,\n \"a\": 2}",
            "duplicate_key 2:2",
            Refused("duplicate_key"),
        ),
        (
            "true and True are one key",
            "true: 1\nTrue: 2\n",
            "duplicate_key 2:1",
            Refused("duplicate_key"),
        ),
        (
            "two documents",
            "a: 1\n---\nb: 2\n",
            "multiple_documents 2:1",
            Refused("multiple_documents"),
        ),
        (
            "an alias",
            "a: &x 1\nb: *x\n",
            "unsupported_yaml 2:4",
            Refused("unsupported_yaml"),
        ),
        (
            "an anchor alone is read",
            "a: &x 1\n",
            "{\"a\": num(1)}",
            Reads(json!({"a": 1})),
        ),
        (
            "a standard tag",
            "a: !!str 1\n",
            "unsupported_yaml 1:4",
            Refused("unsupported_yaml"),
        ),
        (
            "a local tag",
            "a: !foo 1\n",
            "unsupported_yaml 1:4",
            Refused("unsupported_yaml"),
        ),
        (
            "a complex key",
            "? [a]\n: 1\n",
            "unsupported_yaml 1:3",
            Refused("unsupported_yaml"),
        ),
        (
            "JSON is strict",
            "{\"a\": 1,}",
            "syntax_error 1:9",
            Refused("syntax_error"),
        ),
        // Documents.
        (
            "a byte order mark before JSON",
            "\u{feff}{\"a\": 1}",
            "{\"a\": num(1)}",
            Reads(json!({"a": 1})),
        ),
        (
            "no document is null",
            "# only a comment\n",
            "null",
            Reads(json!(null)),
        ),
        ("null is null", "null\n", "null", Reads(json!(null))),
    ];
    for (decision, text, validate, init) in table {
        let read = parse_bytes(text.as_bytes(), "execution.yaml");
        let data = bootstrap::read(text);
        match (&read, init) {
            (Ok(doc), Reads(expected)) => {
                assert_eq!(shown(&doc.root), *validate, "{decision}: validate");
                let data = data.unwrap_or_else(|e| panic!("{decision}: init refused: {e}"));
                assert_eq!(&data, expected, "{decision}: init");
                assert!(agree(&doc.root, &data), "{decision}: they disagree");
            }
            (Ok(doc), NoJsonValue) => {
                assert_eq!(shown(&doc.root), *validate, "{decision}: validate");
                let mut found = Vec::new();
                numbers(&doc.root, &mut found);
                match data {
                    Err(bootstrap::InitError::Number {
                        number,
                        line,
                        column,
                    }) => assert!(
                        found.contains(&(number.clone(), line, column)),
                        "{decision}: init refused `{number}` at {line}:{column}, which validate \
                         did not read as a number there: {found:?}"
                    ),
                    other => panic!("{decision}: init read {other:?}"),
                }
            }
            (Err(diagnostic), Refused(code)) => {
                let location = diagnostic.location().expect("a position");
                let at = format!(
                    "{} {}:{}",
                    diagnostic.code, location.pos.line, location.pos.column
                );
                assert_eq!(at, *validate, "{decision}: validate");
                assert_eq!(diagnostic.code.as_str(), *code, "{decision}");
                match data {
                    Err(bootstrap::InitError::Syntax { line, column, .. }) => assert_eq!(
                        (line, column),
                        (location.pos.line, location.pos.column),
                        "{decision}: init refused elsewhere"
                    ),
                    other => panic!("{decision}: validate refused, init read {other:?}"),
                }
            }
            (read, _) => panic!("{decision}: validate read {read:?}, expected {validate}"),
        }
    }
}

/// Through the CLI: a file `validate` accepts with a number that has no JSON value is
/// refused by `evidence init` at that number's position, and left as it was (the old
/// reader took `.inf` for a string and rewrote the file); a repeated provider is refused
/// by both at the same position.
#[test]
fn validate_and_evidence_init_agree_through_the_cli() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: The code works, capabilities: [test]}\n",
    );
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    sb.write("src/lib.rs", "#[test]\nfn t() {}\n");
    let file = "openspec/changes/add-x/execution.yaml";
    let infinite = "version: 1\nx-budget: .inf\nproviders: {}\n";
    sb.write(file, infinite);
    git_commit_all(&sb.work());
    let validate = sb.run(&sb.work(), &["validate", "add-x", "--json"]);
    validate.expect_code(0);
    let init = sb.run(
        &sb.work(),
        &["evidence", "init", "add-x", "--write", "--json"],
    );
    init.expect_code(3);
    assert_eq!(init.status_codes(), vec!["init_refused"]);
    let message = init.json()["status"][0]["message"].clone();
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains("`.inf` at line 2, column 11")),
        "{message}"
    );
    assert_eq!(
        fs_err::read_to_string(sb.work().join(file)).expect("file"),
        infinite
    );

    let repeated = "version: 1\nproviders:\n  a:\n    adapter: external\n    capability: test\n  a:\n    adapter: external\n    capability: test\n";
    sb.write(file, repeated);
    let validate = sb.run(&sb.work(), &["validate", "add-x", "--json"]);
    validate.expect_code(1);
    let init = sb.run(
        &sb.work(),
        &["evidence", "init", "add-x", "--write", "--json"],
    );
    init.expect_code(3);
    let target = |doc: &serde_json::Value, code: &str| -> Vec<String> {
        let mut found = Vec::new();
        let mut walk = vec![doc.clone()];
        while let Some(v) = walk.pop() {
            match v {
                serde_json::Value::Object(map) => {
                    if map.get("code").and_then(|c| c.as_str()) == Some(code) {
                        let at = match (map.get("target"), map.get("line"), map.get("column")) {
                            (Some(t), _, _) => t.as_str().unwrap_or_default().to_owned(),
                            (None, Some(l), Some(c)) => format!(
                                "{}:{l}:{c}",
                                map.get("path").and_then(|p| p.as_str()).unwrap_or_default()
                            ),
                            _ => String::new(),
                        };
                        found.push(at);
                    }
                    walk.extend(map.into_iter().map(|(_, v)| v));
                }
                serde_json::Value::Array(items) => walk.extend(items),
                _ => {}
            }
        }
        found
    };
    let by_validate = target(&validate.json(), "duplicate_key");
    let by_init = target(&init.json(), "duplicate_key");
    assert!(
        by_validate.iter().any(|t| t.ends_with(":6:3")),
        "{by_validate:?}\n{}",
        validate.stdout
    );
    assert!(
        by_init.iter().any(|t| t.ends_with("execution.yaml:6:3")),
        "{by_init:?}\n{}",
        init.stdout
    );
    assert_eq!(
        fs_err::read_to_string(sb.work().join(file)).expect("file"),
        repeated
    );
}
