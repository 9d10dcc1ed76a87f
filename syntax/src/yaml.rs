//! YAML text to a positioned [`Node`] tree.
//!
//! Built on `saphyr-parser`'s event stream (a maintained YAML 1.2 parser that
//! reports line and column for every event) rather than a serde bridge, so
//! that every node keeps its position and the tree is assembled with an
//! explicit stack: nesting is bounded by [`MAX_DEPTH`] without recursion.
//! Plain scalars are resolved with YAML 1.2's core schema, as the `yaml` npm
//! package (used by OpenSpec) does. Aliases and tags are refused: no
//! configuration needs them, and aliases are how a small file becomes a huge
//! tree.

use saphyr_parser::{BufferedInput, Event, Marker, Parser, ScalarStyle, Span};

use crate::error::{ParseError, ParseErrorKind};
use crate::node::{Key, KeyIndex, MAX_DEPTH, Node, Pos, Value, saturate};

/// Parses one YAML document. An empty stream is `null`.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    // Read as characters: saphyr's `&str` input counts some runs (a directive's name and
    // parameters) in bytes where positions are in characters, so an error after a
    // non-ASCII directive was placed past the end of its line. Its character input counts
    // characters everywhere, and is no slower.
    for item in Parser::new(BufferedInput::new(text.chars())) {
        let (event, span) = item.map_err(|err| {
            // The parser bounds its own flow nesting; that is our TooDeep too.
            let kind = if err.info().contains("recursion limit") {
                ParseErrorKind::TooDeep
            } else {
                ParseErrorKind::Syntax(err.info().to_owned())
            };
            ParseError {
                kind,
                pos: pos(*err.marker()),
            }
        })?;
        let at = start(span);
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(ParseError {
                        kind: ParseErrorKind::MultipleDocuments,
                        pos: at,
                    });
                }
            }
            Event::Alias(_) => {
                return Err(unsupported(
                    at,
                    "YAML aliases (`*name`) are not read; write the value out in full",
                ));
            }
            Event::Scalar(text, style, _, tag) => {
                if tag.is_some() {
                    return Err(unsupported(
                        at,
                        "YAML tags (`!name`) are not read; remove the tag",
                    ));
                }
                let value = resolve_scalar(&text, style);
                attach(&mut stack, &mut root, Node { value, pos: at })?;
            }
            Event::SequenceStart(_, tag) | Event::MappingStart(_, tag) if tag.is_some() => {
                return Err(unsupported(
                    at,
                    "YAML tags (`!name`) are not read; remove the tag",
                ));
            }
            Event::SequenceStart(..) => {
                push(
                    &mut stack,
                    Frame::Seq {
                        pos: at,
                        items: Vec::new(),
                    },
                    at,
                )?;
            }
            Event::MappingStart(..) => {
                push(
                    &mut stack,
                    Frame::Map {
                        pos: at,
                        entries: Vec::new(),
                        index: KeyIndex::default(),
                        key: None,
                    },
                    at,
                )?;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match stack.pop() {
                    Some(Frame::Seq { pos, items }) => Node {
                        value: Value::Seq(items),
                        pos,
                    },
                    Some(Frame::Map { pos, entries, .. }) => Node {
                        value: Value::Map(entries),
                        pos,
                    },
                    None => return Err(unsupported(at, "unbalanced YAML collection")),
                };
                attach(&mut stack, &mut root, node)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
    Ok(root.unwrap_or(Node {
        value: Value::Null,
        pos: Pos::new(1, 1),
    }))
}

enum Frame {
    Seq {
        pos: Pos,
        items: Vec<Node>,
    },
    Map {
        pos: Pos,
        entries: Vec<(Key, Node)>,
        index: KeyIndex,
        key: Option<Key>,
    },
}

fn pos(marker: Marker) -> Pos {
    Pos::new(saturate(marker.line()), saturate(marker.col() + 1))
}

fn start(span: Span) -> Pos {
    pos(span.start)
}

fn unsupported(pos: Pos, message: &str) -> ParseError {
    ParseError {
        kind: ParseErrorKind::Unsupported(message.to_owned()),
        pos,
    }
}

fn push(stack: &mut Vec<Frame>, frame: Frame, at: Pos) -> Result<(), ParseError> {
    if stack.len() >= MAX_DEPTH {
        return Err(ParseError {
            kind: ParseErrorKind::TooDeep,
            pos: at,
        });
    }
    stack.push(frame);
    Ok(())
}

fn attach(stack: &mut [Frame], root: &mut Option<Node>, node: Node) -> Result<(), ParseError> {
    match stack.last_mut() {
        None => *root = Some(node),
        Some(Frame::Seq { items, .. }) => items.push(node),
        Some(Frame::Map {
            entries,
            index,
            key,
            ..
        }) => match key.take() {
            Some(k) => {
                entries.push((k, node));
                index.added(entries);
            }
            None => {
                let name = match node.value {
                    Value::String(s) | Value::Number(s) => s,
                    Value::Bool(b) => b.to_string(),
                    Value::Null => "null".to_owned(),
                    Value::Seq(_) | Value::Map(_) => {
                        return Err(unsupported(
                            node.pos,
                            "mapping keys must be plain text, not lists or mappings",
                        ));
                    }
                };
                if let Some(first) = index.first(entries, &name) {
                    return Err(ParseError {
                        kind: ParseErrorKind::DuplicateKey { key: name, first },
                        pos: node.pos,
                    });
                }
                *key = Some(Key {
                    name,
                    pos: node.pos,
                });
            }
        },
    }
    Ok(())
}

/// Resolves a scalar with YAML 1.2's core schema: only plain scalars can be
/// null, booleans or numbers.
fn resolve_scalar(text: &str, style: ScalarStyle) -> Value {
    if style != ScalarStyle::Plain {
        return Value::String(text.to_owned());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ if is_core_number(text) => Value::Number(text.to_owned()),
        _ => Value::String(text.to_owned()),
    }
}

fn is_core_number(text: &str) -> bool {
    if let Some(hex) = text.strip_prefix("0x") {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return !oct.is_empty() && oct.bytes().all(|b| matches!(b, b'0'..=b'7'));
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    // [0-9]+ ( . [0-9]* )? | . [0-9]+, then an optional exponent.
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()),
        Some((int, frac)) => {
            !int.is_empty()
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Value {
        parse(text).expect("valid").value
    }

    #[test]
    fn core_schema_scalars() {
        assert_eq!(value("~"), Value::Null);
        assert_eq!(value("yes"), Value::String("yes".into()));
        assert_eq!(value("True"), Value::Bool(true));
        assert_eq!(value("0x1F"), Value::Number("0x1F".into()));
        assert_eq!(value("-1.5e3"), Value::Number("-1.5e3".into()));
        assert_eq!(value(".inf"), Value::Number(".inf".into()));
        assert_eq!(value("1.2.3"), Value::String("1.2.3".into()));
        assert_eq!(value("'123'"), Value::String("123".into()));
        assert_eq!(value(""), Value::Null);
    }

    #[test]
    fn keys_and_values_keep_positions() {
        let node = parse("version: 1\nproviders:\n  test:\n    adapter: command\n").expect("valid");
        let Value::Map(top) = &node.value else {
            panic!("map")
        };
        assert_eq!(top[1].0.pos, Pos::new(2, 1));
        let test = node
            .get("providers")
            .and_then(|p| p.get("test"))
            .expect("test");
        let Value::Map(fields) = &test.value else {
            panic!("map")
        };
        assert_eq!(fields[0].0.pos, Pos::new(4, 5));
        assert_eq!(fields[0].1.pos, Pos::new(4, 14));
    }

    #[test]
    fn empty_values_are_null() {
        let node = parse("store:\nother: x\n").expect("valid");
        assert_eq!(node.get("store").map(|n| &n.value), Some(&Value::Null));
    }

    #[test]
    fn refusals() {
        let kind = |text: &str| parse(text).expect_err(text).kind;
        assert!(matches!(
            kind("a: &x 1\nb: *x\n"),
            ParseErrorKind::Unsupported(_)
        ));
        assert!(matches!(
            kind("a: !!str 1\n"),
            ParseErrorKind::Unsupported(_)
        ));
        assert!(matches!(
            kind("? [a]\n: 1\n"),
            ParseErrorKind::Unsupported(_)
        ));
        assert!(matches!(
            kind("a: 1\n---\nb: 2\n"),
            ParseErrorKind::MultipleDocuments
        ));
        assert!(matches!(
            kind("a: 1\na: 2\n"),
            ParseErrorKind::DuplicateKey { .. }
        ));
        assert!(matches!(kind("a: [1, 2\n"), ParseErrorKind::Syntax(_)));
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(kind(&deep), ParseErrorKind::TooDeep);
    }

    /// Found by the `config` fuzz target (`fixtures/fuzz/config/directive-column`).
    #[test]
    fn an_error_after_a_non_ascii_directive_is_placed_by_characters() {
        // `%é\u{10d68f}` is a directive name of 3 characters and 7 bytes; the NUL after it
        // is the error, at character column 5.
        let err = parse("%é\u{10d68f} \0\n").expect_err("a NUL in a directive");
        assert_eq!(err.pos, Pos::new(1, 5), "{err:?}");
    }

    #[test]
    fn very_deep_nesting_fails_without_overflowing_the_stack() {
        let deep = "[".repeat(200_000);
        assert_eq!(
            parse(&deep).expect_err("deep").kind,
            ParseErrorKind::TooDeep
        );
        let deep_block = (0..10_000)
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect::<String>();
        assert!(parse(&deep_block).is_err());
    }
}
