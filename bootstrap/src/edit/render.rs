//! Writing new provider entries in the style of the file they join: JSON
//! with nested objects on their own lines and short arrays on one line (as
//! the real `execution.yaml` files are written), or YAML in block style
//! with flow sequences, quoting every string a YAML reader could take for
//! something else.

use proofgraph_syntax::node::Value as Read;
use proofgraph_syntax::yaml::resolve_plain;
use serde_json::Value;

/// The JSON text of a scalar, array or small object on one line, with a
/// space after each separator (`["a", "b"]`, `{"K": "v"}`).
fn json_inline(value: &Value) -> String {
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(json_inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), json_inline(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        scalar => scalar.to_string(),
    }
}

/// One provider member, `"name": {…}`, pretty: its fields one per line at
/// `indent` + `unit`, the closing brace at `indent`. The first line has no
/// indentation (the caller places it).
pub(crate) fn json_member(
    name: &str,
    value: &Value,
    indent: &str,
    unit: &str,
    newline: &str,
) -> String {
    let key = Value::String(name.to_owned());
    let Value::Object(map) = value else {
        return format!("{key}: {}", json_inline(value));
    };
    if map.is_empty() {
        return format!("{key}: {{}}");
    }
    let fields: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            format!(
                "{indent}{unit}{}: {}",
                Value::String(k.clone()),
                json_inline(v)
            )
        })
        .collect();
    format!(
        "{key}: {{{newline}{}{newline}{indent}}}",
        fields.join(&format!(",{newline}"))
    )
}

/// One provider member on one line, without spaces (for minified files).
pub(crate) fn json_member_compact(name: &str, value: &Value) -> String {
    format!("{}:{value}", Value::String(name.to_owned()))
}

/// Whether a string may be written as a plain YAML scalar and read back as
/// the same string. Conservative: anything doubtful is quoted.
fn plain_ok(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s.chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'' || c == '\\')
    {
        return false;
    }
    if "!&*|>%@`#{}[],?:".contains(first) {
        return false;
    }
    if first == '-' && s.len() == 1 {
        return false;
    }
    if s.contains(": ") || s.ends_with(':') || s.contains(" #") {
        return false;
    }
    if flow && s.contains([',', '[', ']', '{', '}']) {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "null"
            | "~"
            | "true"
            | "false"
            | "yes"
            | "no"
            | "on"
            | "off"
            | "y"
            | "n"
            | ".inf"
            | "-.inf"
            | "+.inf"
            | ".nan"
    ) {
        return false;
    }
    if s.parse::<f64>().is_ok() || lower.starts_with("0x") || lower.starts_with("0o") {
        return false;
    }
    // What the reader `validate` uses makes of it, to be sure.
    matches!(resolve_plain(s), Read::String(_))
}

fn yaml_scalar(value: &Value, flow: bool) -> String {
    match value {
        Value::String(s) if plain_ok(s, flow) => s.clone(),
        // A JSON string is a valid YAML double-quoted scalar (serde_json
        // never writes the `\/` escape YAML lacks).
        Value::String(s) => Value::String(s.clone()).to_string(),
        other => other.to_string(),
    }
}

/// A value in YAML flow style (`[a, b]`, `{K: "1"}`).
pub(crate) fn yaml_flow(value: &Value) -> String {
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(yaml_flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    yaml_scalar(&Value::String(k.clone()), true),
                    yaml_flow(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        scalar => yaml_scalar(scalar, true),
    }
}

/// One provider entry in YAML block style: an optional comment line, then
/// `name:` at `indent` and its fields at `indent` + `unit`, each line ended
/// by `newline`.
pub(crate) fn yaml_entry(
    name: &str,
    value: &Value,
    comment: Option<&str>,
    indent: &str,
    unit: &str,
    newline: &str,
) -> String {
    let mut out = String::new();
    if let Some(c) = comment {
        let one_line: String = c
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        out.push_str(&format!("{indent}# {one_line}{newline}"));
    }
    let key = yaml_scalar(&Value::String(name.to_owned()), false);
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push_str(&format!("{indent}{key}:{newline}"));
            for (k, v) in map {
                let k = yaml_scalar(&Value::String(k.clone()), false);
                let v = match v {
                    Value::Array(_) | Value::Object(_) => yaml_flow(v),
                    scalar => yaml_scalar(scalar, false),
                };
                out.push_str(&format!("{indent}{unit}{k}: {v}{newline}"));
            }
        }
        other => out.push_str(&format!("{indent}{key}: {}{newline}", yaml_flow(other))),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_what_yaml_would_misread() {
        for s in [
            "", "-", "true", "no", "1", "1.5", "0x1F", "a: b", "#x", "a b", "{x}", "*a", "null",
        ] {
            assert!(!plain_ok(s, false), "{s:?} must be quoted");
        }
        for s in [
            "npm",
            "--run",
            "--reporter=json",
            "test-results/vitest.json",
            "./...",
            "go-test-json",
        ] {
            assert!(plain_ok(s, true), "{s:?} may be plain");
        }
        assert!(!plain_ok("a,b", true));
        assert!(plain_ok("a,b", false));
    }

    #[test]
    fn renders_entries() {
        let value = json!({"adapter": "test-discovery", "command": ["npm", "run", "test", "--", "--run"], "env": {"RUSTC_BOOTSTRAP": "1"}, "minimum": 1});
        assert_eq!(
            yaml_entry("test", &value, Some("why"), "  ", "  ", "\n"),
            "  # why\n  test:\n    adapter: test-discovery\n    command: [npm, run, test, --, --run]\n    env: {RUSTC_BOOTSTRAP: \"1\"}\n    minimum: 1\n"
        );
        assert_eq!(
            json_member("test", &value, "    ", "  ", "\n"),
            "\"test\": {\n      \"adapter\": \"test-discovery\",\n      \"command\": [\"npm\", \"run\", \"test\", \"--\", \"--run\"],\n      \"env\": {\"RUSTC_BOOTSTRAP\": \"1\"},\n      \"minimum\": 1\n    }"
        );
    }
}
