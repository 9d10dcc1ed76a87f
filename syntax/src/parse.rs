//! Text to [`Node`] tree: the entry point shared by every configuration file.
//!
//! Text whose first non-blank character is `{` is parsed as JSON (some JSON escapes, such
//! as `\/`, are not YAML), anything else as YAML. Both paths keep line and column and
//! byte spans, reject duplicate keys and refuse nesting deeper than [`MAX_DEPTH`], so a
//! hostile file can neither exhaust the stack nor smuggle a second value past a first. A
//! leading byte order mark is skipped; spans still index the text as given.

pub use crate::error::{ParseError, ParseErrorKind, utf8_error_pos};
use crate::json;
use crate::node::Node;
pub use crate::node::{MAX_DEPTH, MAX_FILE_BYTES, saturate};
use crate::yaml;

/// Which syntax a document was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// JSON text (the first non-blank character was `{`).
    Json,
    /// YAML text.
    Yaml,
}

impl Syntax {
    /// The syntax's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Syntax::Json => "JSON",
            Syntax::Yaml => "YAML",
        }
    }
}

/// Parses configuration text, choosing JSON or YAML by its first character. A YAML stream
/// with no document is `null` (see [`read_document`] to tell it apart).
pub fn parse_document(text: &str) -> (Syntax, Result<Node, ParseError>) {
    let (syntax, read) = read_document(text);
    (syntax, read.map(|node| node.unwrap_or_else(yaml::empty)))
}

/// Parses configuration text as [`parse_document`] does, with `Ok(None)` for a YAML stream
/// that holds no document at all (nothing but blank lines and comments): a file an editor
/// may append a document to, unlike one that says `null`.
pub fn read_document(text: &str) -> (Syntax, Result<Option<Node>, ParseError>) {
    const BOM: char = '\u{feff}';
    let body = text.strip_prefix(BOM).unwrap_or(text);
    let first = body.trim_start().chars().next();
    let (syntax, read) = if first == Some('{') {
        (Syntax::Json, json::parse(body).map(Some))
    } else {
        (Syntax::Yaml, yaml::parse_stream(body))
    };
    let skipped = text.len() - body.len();
    let read = read.map(|node| {
        node.map(|mut node| {
            if skipped > 0 {
                shift(&mut node, skipped);
            }
            node
        })
    });
    (syntax, read)
}

/// Moves every span of the tree `by` bytes on (past a byte order mark the parsers did
/// not see). Recursion is bounded by the tree's depth, at most [`MAX_DEPTH`].
fn shift(node: &mut Node, by: usize) {
    node.span = node.span.shifted(by);
    match &mut node.value {
        crate::node::Value::Seq(items) => items.iter_mut().for_each(|n| shift(n, by)),
        crate::node::Value::Map(entries) => {
            for (key, value) in entries {
                key.span = key.span.shifted(by);
                shift(value, by);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{Pos, Value};

    /// A mapping of `n` keys `k0`..`k{n-1}`, one per line, in YAML or JSON, with `extra`
    /// appended as one more key: line `i + 2` holds `k{i}` in JSON, line `i + 1` in YAML.
    fn mapping(syntax: Syntax, n: usize, extra: &str) -> String {
        let keys = (0..n).map(|i| format!("k{i}")).chain([extra.to_owned()]);
        match syntax {
            Syntax::Json => {
                let body: Vec<String> = keys.map(|k| format!("\"{k}\": 1")).collect();
                format!("{{\n{}\n}}\n", body.join(",\n"))
            }
            Syntax::Yaml => keys.map(|k| format!("{k}: 1\n")).collect(),
        }
    }

    #[test]
    fn repeated_keys_are_found_before_and_after_a_mapping_is_indexed() {
        for syntax in [Syntax::Json, Syntax::Yaml] {
            let line_of = |i: u32| match syntax {
                Syntax::Json => i + 2,
                Syntax::Yaml => i + 1,
            };
            // The repeated key comes before the index exists (3 keys), right when it is built
            // (16), and long after (500), repeating the first, a middle and the last key.
            for (n, repeated) in [
                (3, 0),
                (3, 2),
                (16, 15),
                (17, 0),
                (500, 0),
                (500, 257),
                (500, 499),
            ] {
                let text = mapping(syntax, n, &format!("k{repeated}"));
                let (read_as, result) = parse_document(&text);
                assert_eq!(read_as, syntax);
                let err = result.expect_err(&text);
                let ParseErrorKind::DuplicateKey { key, first } = err.kind else {
                    panic!("{syntax:?} {n} keys: {:?}", err.kind);
                };
                assert_eq!(key, format!("k{repeated}"), "{syntax:?} {n}");
                assert_eq!(first.line, line_of(repeated as u32), "{syntax:?} {n}");
                assert_eq!(err.pos.line, line_of(n as u32), "{syntax:?} {n}");
            }
            // Distinct keys, however many, are read in order.
            let (_, ok) = parse_document(&mapping(syntax, 500, "last"));
            let node = ok.expect("distinct keys");
            let Value::Map(entries) = &node.value else {
                panic!("not a mapping");
            };
            assert_eq!(entries.len(), 501);
            assert_eq!(entries[257].0.name, "k257");
            assert!(node.get("last").is_some());
        }
    }

    #[test]
    fn json_and_yaml_give_the_same_tree_shape() {
        let (syntax, json) = parse_document("{\"a\": [1, \"x\"]}\n");
        assert_eq!(syntax, Syntax::Json);
        let (syntax, yaml) = parse_document("a: [1, \"x\"]\n");
        assert_eq!(syntax, Syntax::Yaml);
        let (json, yaml) = (json.expect("json"), yaml.expect("yaml"));
        let shape = |n: &Node| match n.get("a").map(|a| &a.value) {
            Some(Value::Seq(items)) => items.iter().map(|i| i.value.clone()).collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(shape(&json), shape(&yaml));
        assert_eq!(
            shape(&json),
            vec![Value::Number("1".into()), Value::String("x".into())]
        );
    }

    #[test]
    fn a_leading_bom_is_ignored() {
        let (syntax, node) = parse_document("\u{feff}{\"a\": 1}");
        assert_eq!(syntax, Syntax::Json);
        assert!(node.is_ok());
    }

    #[test]
    fn after_a_bom_spans_still_index_the_text_and_columns_do_not_count_it() {
        for (text, syntax) in [
            ("\u{feff}{\"a\": [1]}", Syntax::Json),
            ("\u{feff}a: [1]\n", Syntax::Yaml),
        ] {
            let (read_as, node) = parse_document(text);
            assert_eq!(read_as, syntax);
            let node = node.expect("valid");
            let Value::Map(entries) = &node.value else {
                panic!("a mapping")
            };
            let (key, value) = &entries[0];
            assert_eq!(
                &text[key.span.range()].trim_matches('"'),
                &"a",
                "{syntax:?}"
            );
            assert_eq!(&text[value.span.range()], "[1]", "{syntax:?}");
            let Value::Seq(items) = &value.value else {
                panic!("a list")
            };
            assert_eq!(&text[items[0].span.range()], "1", "{syntax:?}");
            assert_eq!(key.pos.line, 1);
            assert!(key.pos.column <= 2, "{syntax:?}: {}", key.pos);
        }
        assert_eq!(read_document("\u{feff}# c\n").1, Ok(None));
    }

    #[test]
    fn only_a_yaml_stream_without_a_document_reads_as_none() {
        assert_eq!(read_document("").1, Ok(None));
        assert_eq!(read_document("  # c\n\n").1, Ok(None));
        for text in ["null\n", "~\n", "---\n", "{}", "[]\n"] {
            assert!(
                matches!(read_document(text).1, Ok(Some(_))),
                "{text:?} holds a document"
            );
        }
        // parse_document reads no document as null at the start.
        let (_, node) = parse_document("# c\n");
        assert_eq!(node.expect("valid").pos, Pos::new(1, 1));
    }

    #[test]
    fn utf8_error_positions_count_characters() {
        let bytes = b"a: 1\nb: \xc3\xa9\xff";
        // Valid up to the 10th byte: the 0xff after `é` on line 2.
        assert_eq!(utf8_error_pos(bytes, 10), Pos::new(2, 5));
    }
}
