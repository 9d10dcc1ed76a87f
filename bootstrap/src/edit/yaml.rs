//! Where things are in YAML text: a positioned tree built from
//! `saphyr-parser`'s event stream (the parser the application uses), plus
//! the YAML 1.2 core-schema reading of plain scalars, so that a file before
//! and after an edit can be compared as data.
//!
//! Positions are 1-based lines and 0-based character columns, as the parser
//! reports them. Aliases and tags are refused, as the application refuses
//! them.

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

/// A line and a character column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct At {
    /// 1-based line.
    pub(crate) line: usize,
    /// 0-based column, in characters.
    pub(crate) col: usize,
}

/// A YAML node and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Where it starts (for a flow collection: its opening bracket).
    pub(crate) start: At,
    /// For a flow collection, its closing bracket.
    pub(crate) end: At,
    /// Whether it is a flow collection (`{…}`, `[…]`).
    pub(crate) flow: bool,
    /// What it is.
    pub(crate) kind: Kind,
}

/// The kind of a YAML node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// A mapping: (key, value) pairs in order.
    Map(Vec<(Node, Node)>),
    /// A sequence.
    Seq(Vec<Node>),
    /// A scalar, with whether it was plain.
    Scalar(String, bool),
}

/// A YAML text that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    /// Where.
    pub(crate) at: At,
    /// Why, as a fragment.
    pub(crate) message: String,
}

enum Frame {
    Map(Node, Vec<(Node, Node)>, Option<Node>),
    Seq(Node, Vec<Node>),
}

fn at(span: Span, end: bool) -> At {
    let m = if end { span.end } else { span.start };
    At {
        line: m.line(),
        col: m.col(),
    }
}

fn flow_of(span: Span) -> bool {
    span.end.index() > span.start.index()
}

/// Parses one YAML document; `None` for an empty stream.
pub(crate) fn parse(text: &str) -> Result<Option<Node>, YamlError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| YamlError {
            at: At {
                line: e.marker().line(),
                col: e.marker().col(),
            },
            message: e.info().to_owned(),
        })?;
        let start = at(span, false);
        let refuse = |message: &str| YamlError {
            at: start,
            message: message.to_owned(),
        };
        let done = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(refuse("the file holds more than one YAML document"));
                }
                None
            }
            Event::Alias(_) => return Err(refuse("YAML aliases are not read")),
            Event::Scalar(_, _, _, Some(_))
            | Event::MappingStart(_, Some(_))
            | Event::SequenceStart(_, Some(_)) => return Err(refuse("YAML tags are not read")),
            Event::Scalar(value, style, _, None) => Some(Node {
                start,
                end: start,
                flow: false,
                kind: Kind::Scalar(value.into_owned(), style == ScalarStyle::Plain),
            }),
            Event::MappingStart(..) => {
                let node = Node {
                    start,
                    end: start,
                    flow: flow_of(span),
                    kind: Kind::Map(Vec::new()),
                };
                stack.push(Frame::Map(node, Vec::new(), None));
                None
            }
            Event::SequenceStart(..) => {
                let node = Node {
                    start,
                    end: start,
                    flow: flow_of(span),
                    kind: Kind::Seq(Vec::new()),
                };
                stack.push(Frame::Seq(node, Vec::new()));
                None
            }
            Event::MappingEnd | Event::SequenceEnd => match stack.pop() {
                Some(Frame::Map(mut node, entries, _)) => {
                    node.end = if node.flow { start } else { at(span, true) };
                    node.kind = Kind::Map(entries);
                    Some(node)
                }
                Some(Frame::Seq(mut node, items)) => {
                    node.end = if node.flow { start } else { at(span, true) };
                    node.kind = Kind::Seq(items);
                    Some(node)
                }
                None => return Err(refuse("unbalanced YAML collection")),
            },
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => None,
        };
        if let Some(node) = done {
            match stack.last_mut() {
                Some(Frame::Map(_, entries, key)) => match key.take() {
                    Some(k) => entries.push((k, node)),
                    None => *key = Some(node),
                },
                Some(Frame::Seq(_, items)) => items.push(node),
                None => root = Some(node),
            }
        }
    }
    Ok(root)
}

impl Node {
    /// The scalar text of a key.
    pub(crate) fn key_text(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    /// The value of `key` in a mapping (the last, as JSON readers keep).
    #[cfg(test)]
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .rev()
                .find(|(k, _)| k.key_text() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The node as data, plain scalars read with the YAML 1.2 core schema.
    pub(crate) fn to_json(&self) -> Value {
        match &self.kind {
            Kind::Map(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    let key = match &k.kind {
                        Kind::Scalar(s, _) => s.clone(),
                        _ => k.to_json().to_string(),
                    };
                    map.insert(key, v.to_json());
                }
                Value::Object(map)
            }
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Scalar(s, true) => resolve_plain(s),
            Kind::Scalar(s, false) => Value::String(s.clone()),
        }
    }
}

/// A plain scalar under the YAML 1.2 core schema.
pub(crate) fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = s.trim_start_matches('+').parse::<i64>() {
            return Value::Number(n.into());
        }
        if let Ok(n) = s.trim_start_matches('+').parse::<u64>() {
            return Value::Number(n.into());
        }
    }
    if let Some(hex) = s.strip_prefix("0x")
        && let Ok(n) = u64::from_str_radix(hex, 16)
    {
        return Value::Number(n.into());
    }
    if let Some(oct) = s.strip_prefix("0o")
        && let Ok(n) = u64::from_str_radix(oct, 8)
    {
        return Value::Number(n.into());
    }
    let float_like = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
        && digits.chars().any(|c| c.is_ascii_digit());
    if float_like
        && let Ok(f) = s.parse::<f64>()
        && let Some(n) = Number::from_f64(f)
    {
        return Value::Number(n);
    }
    Value::String(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_positioned_tree() {
        let text =
            "version: 1\nproviders:\n  # c\n  test:\n    command: [a, \"b\"]\nservices: {}\n";
        let root = parse(text).expect("valid").expect("a document");
        let providers = root.get("providers").expect("providers");
        assert!(!providers.flow);
        let Kind::Map(entries) = &providers.kind else {
            panic!("a mapping");
        };
        assert_eq!(entries[0].0.start, At { line: 4, col: 2 });
        let services = root.get("services").expect("services");
        assert!(services.flow);
        assert_eq!(services.start, At { line: 6, col: 10 });
        assert_eq!(services.end, At { line: 6, col: 11 });
        assert_eq!(
            root.to_json(),
            serde_json::json!({"version": 1, "providers": {"test": {"command": ["a", "b"]}}, "services": {}})
        );
    }

    #[test]
    fn plain_scalars_follow_the_core_schema() {
        assert_eq!(resolve_plain("12"), Value::from(12));
        assert_eq!(resolve_plain("1.5"), serde_json::json!(1.5));
        assert_eq!(resolve_plain("~"), Value::Null);
        assert_eq!(resolve_plain("TRUE"), Value::Bool(true));
        assert_eq!(resolve_plain("yes"), Value::from("yes"));
        assert_eq!(resolve_plain("--run"), Value::from("--run"));
        assert_eq!(resolve_plain("1.2.3"), Value::from("1.2.3"));
    }
}
