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

use saphyr_parser::{BufferedInput, Event, Marker, Parser, ScalarStyle};

use crate::error::{ParseError, ParseErrorKind};
use crate::node::{Key, KeyIndex, MAX_DEPTH, Node, Pos, Span, Value, saturate};

/// Parses one YAML document. An empty stream (nothing but blank lines and comments) is
/// `null` at 1:1 with an empty span at 0.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    Ok(parse_stream(text)?.unwrap_or_else(empty))
}

/// The node of an empty stream.
pub(crate) fn empty() -> Node {
    Node {
        value: Value::Null,
        pos: Pos::new(1, 1),
        span: Span::default(),
        flow: false,
    }
}

/// Parses one YAML document; `None` when the stream holds none (nothing but blank lines
/// and comments), which [`parse`] reads as `null`.
pub fn parse_stream(text: &str) -> Result<Option<Node>, ParseError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    let mut bytes = Offsets::new(text);
    // Read as characters: saphyr's `&str` input counts some runs (a directive's name and
    // parameters) in bytes where positions are in characters, so an error after a
    // non-ASCII directive was placed past the end of its line. Its character input counts
    // characters everywhere, and is no slower; `Offsets` turns its character indexes into
    // byte offsets.
    for item in Parser::new(BufferedInput::new(text.chars())) {
        let (event, marks) = item.map_err(|err| {
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
        let at = pos(marks.start);
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
            Event::Scalar(value, style, _, tag) => {
                if tag.is_some() {
                    return Err(unsupported(
                        at,
                        "YAML tags (`!name`) are not read; remove the tag",
                    ));
                }
                let start = bytes.of(marks.start);
                let end = match style {
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => {
                        // The parser's end is past the blanks and comment after the
                        // closing quote; the quote is found from the opening one.
                        quoted_end(text, start).unwrap_or_else(|| bytes.of(marks.end))
                    }
                    _ => bytes.of(marks.end),
                };
                let node = Node {
                    value: resolve_scalar(&value, style),
                    pos: at,
                    span: Span::new(start, end.max(start)),
                    flow: false,
                };
                attach(&mut stack, &mut root, node)?;
            }
            Event::SequenceStart(_, tag) | Event::MappingStart(_, tag) if tag.is_some() => {
                return Err(unsupported(
                    at,
                    "YAML tags (`!name`) are not read; remove the tag",
                ));
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                let map = matches!(event, Event::MappingStart(..));
                let start = bytes.of(marks.start);
                // A flow collection's start event ends just after its bracket (after its
                // anchor and the bracket, when anchored); a block one's at its first entry.
                let opened = bytes.of(marks.end);
                let flow = opened > start && text[..opened].ends_with(['{', '[']);
                let open = Open {
                    pos: at,
                    start,
                    flow,
                };
                let frame = if map {
                    Frame::Map {
                        open,
                        entries: Vec::new(),
                        index: KeyIndex::default(),
                        key: None,
                    }
                } else {
                    Frame::Seq {
                        open,
                        items: Vec::new(),
                    }
                };
                push(&mut stack, frame, at)?;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (open, value, last) = match stack.pop() {
                    Some(Frame::Seq { mut open, items }) => {
                        if !open.flow
                            && let Some(first) = items.first()
                            && let Some(dash) = dash_before(text, open.start, first.span.start)
                        {
                            open.start = dash;
                        }
                        let last = items.iter().map(|n| n.span.end).max();
                        (open, Value::Seq(items), last)
                    }
                    Some(Frame::Map { open, entries, .. }) => {
                        let last = entries
                            .iter()
                            .map(|(k, v)| k.span.end.max(v.span.end))
                            .max();
                        (open, Value::Map(entries), last)
                    }
                    None => return Err(unsupported(at, "unbalanced YAML collection")),
                };
                // A flow collection ends after its closing bracket (the end event starts at
                // it; its end runs on past blanks and a comment); a block one where the
                // last of its entries does.
                let end = if open.flow {
                    bytes.of(marks.start) + 1
                } else {
                    last.unwrap_or(open.start)
                };
                let node = Node {
                    value,
                    pos: open.pos,
                    span: Span::new(open.start, end.max(open.start)),
                    flow: open.flow,
                };
                attach(&mut stack, &mut root, node)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
    Ok(root)
}

/// Where a collection was opened.
struct Open {
    pos: Pos,
    start: usize,
    flow: bool,
}

enum Frame {
    Seq {
        open: Open,
        items: Vec<Node>,
    },
    Map {
        open: Open,
        entries: Vec<(Key, Node)>,
        index: KeyIndex,
        key: Option<Key>,
    },
}

/// Byte offsets of the parser's character indexes, in amortised constant time: events
/// come in text order (give or take a few characters), so a cursor walks on from the last
/// one; ASCII text needs no walk at all.
struct Offsets<'t> {
    text: &'t str,
    ascii: bool,
    /// A character index and its byte offset.
    chars: usize,
    byte: usize,
}

impl<'t> Offsets<'t> {
    fn new(text: &'t str) -> Self {
        Self {
            text,
            ascii: text.is_ascii(),
            chars: 0,
            byte: 0,
        }
    }

    /// The byte offset of `marker`'s character index (the text's length past its end).
    fn of(&mut self, marker: Marker) -> usize {
        let index = marker.index();
        if self.ascii {
            return index.min(self.text.len());
        }
        while self.chars < index {
            let Some(c) = self.text[self.byte..].chars().next() else {
                break;
            };
            self.byte += c.len_utf8();
            self.chars += 1;
        }
        while self.chars > index {
            let Some(c) = self.text[..self.byte].chars().next_back() else {
                break;
            };
            self.byte -= c.len_utf8();
            self.chars -= 1;
        }
        self.byte
    }
}

/// The `-` of a block list's first entry, which starts at `first`: the parser places the
/// start of a list written at its key's indentation (`key:\n- a`) at its first entry, not
/// at the dash. `None` (keep `start`) when the list starts at its anchor, or when what
/// stands between the dash and the entry is not blank (a comment).
fn dash_before(text: &str, start: usize, first: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(start) == Some(&b'&') {
        return None;
    }
    let mut at = first.min(bytes.len());
    while at > 0 && matches!(bytes[at - 1], b' ' | b'\t' | b'\r' | b'\n') {
        at -= 1;
    }
    let dash = at.checked_sub(1).filter(|&d| bytes[d] == b'-')?;
    // Only blanks and other dashes (`- - a`) stand before a dash on its line.
    let line_start = text[..dash].rfind('\n').map_or(0, |i| i + 1);
    bytes[line_start..dash]
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'-'))
        .then_some(dash)
}

/// Just after the closing quote of the quoted scalar that starts at byte `start` (at its
/// anchor, if it has one); `None` if no quoted scalar starts there (not reached).
fn quoted_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = start;
    // Skip an anchor (`&name`), and the blanks and comments between it and the scalar.
    loop {
        match bytes.get(at)? {
            b'&' => {
                while bytes.get(at).is_some_and(|b| !b.is_ascii_whitespace()) {
                    at += 1;
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' => at += 1,
            b'#' => {
                while bytes.get(at).is_some_and(|&b| b != b'\n') {
                    at += 1;
                }
            }
            _ => break,
        }
    }
    let quote = *bytes.get(at)?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    at += 1;
    loop {
        match (bytes.get(at)?, quote) {
            // `\x` in a double-quoted scalar: the escaped byte cannot close it.
            (b'\\', b'"') => at += 2,
            // `''` in a single-quoted scalar is one quote.
            (b'\'', b'\'') if bytes.get(at + 1) == Some(&b'\'') => at += 2,
            (&b, _) if b == quote => return Some(at + 1),
            _ => at += 1,
        }
    }
}

fn pos(marker: Marker) -> Pos {
    Pos::new(saturate(marker.line()), saturate(marker.col() + 1))
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
                    span: node.span,
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
    resolve_plain(text)
}

/// What a plain (unquoted) scalar means under YAML 1.2's core schema, as the `yaml` npm
/// package reads it: `null`, `~` and the empty text are null; `true`/`false` (also
/// capitalised or upper case) booleans; integers (decimal, `0x`, `0o`), decimals with an
/// optional exponent, `.inf` and `.nan` numbers; anything else (`yes`, `on`, `0X1F`,
/// `1_000`, `2001-12-14`) a string.
pub fn resolve_plain(text: &str) -> Value {
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

    /// The text each node and key of `text` covers, depth first.
    fn spans(text: &str) -> Vec<String> {
        fn walk<'t>(text: &'t str, node: &Node, out: &mut Vec<&'t str>) {
            out.push(&text[node.span.range()]);
            match &node.value {
                Value::Seq(items) => items.iter().for_each(|n| walk(text, n, out)),
                Value::Map(entries) => {
                    for (k, v) in entries {
                        out.push(&text[k.span.range()]);
                        walk(text, v, out);
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(text, &parse(text).expect(text), &mut out);
        out.into_iter().map(str::to_owned).collect()
    }

    #[test]
    fn spans_cover_what_was_written_in_bytes() {
        // Non-ASCII before and inside values: spans are bytes, columns characters.
        let text = "é: \"ü\" # ¿\nb: 'it''s'   # c\nc: [1, \"x\\\"y\" ,ø]\nd: {k: v}\nplain: two words  # c\n";
        assert_eq!(
            spans(text),
            [
                text.trim_end_matches("  # c\n"),
                "é",
                "\"ü\"",
                "b",
                "'it''s'",
                "c",
                "[1, \"x\\\"y\" ,ø]",
                "1",
                "\"x\\\"y\"",
                "ø",
                "d",
                "{k: v}",
                "k",
                "v",
                "plain",
                "two words",
            ]
        );
        let node = parse(text).expect("valid");
        assert_eq!(node.get("b").map(|n| n.pos), Some(Pos::new(2, 4)));
        assert_eq!(node.get("c").map(|n| n.flow), Some(true));
        // A comment after a flow collection is not part of it.
        assert_eq!(
            spans("a: {}  # none\nb: [x, [y] ]   # c\n")[2..],
            ["{}", "b", "[x, [y] ]", "x", "[y]", "y"]
        );
        assert_eq!(node.get("d").map(|n| n.flow), Some(true));
        assert!(!node.flow);
    }

    #[test]
    fn spans_of_anchors_block_scalars_and_empty_values() {
        let text = "a: &x \"q\"  # c\nb: &y\n  c: 1\nd: &z [1]\ne: |\n  lit\n\nf:\n- - g\n";
        assert_eq!(
            spans(text),
            [
                "a: &x \"q\"  # c\nb: &y\n  c: 1\nd: &z [1]\ne: |\n  lit\n\nf:\n- - g",
                "a",
                "&x \"q\"",
                "b",
                "&y\n  c: 1",
                "c",
                "1",
                "d",
                "&z [1]",
                "1",
                "e",
                // A block scalar covers its content lines (and the kept blank one).
                "lit\n\n",
                "f",
                "- - g",
                "- g",
                "g",
            ]
        );
        // A list at its key's indentation starts at its dash; so does one whose dash is
        // followed by a comment (ending in a dash) when the parser places it there.
        assert_eq!(spans("f:\n- g\n")[2], "- g");
        assert_eq!(spans("f:\n  -   g\n")[2], "-   g");
        assert_eq!(spans("- # c-\n  x\n")[0], "- # c-\n  x");
        let node = parse(text).expect("valid");
        // An anchored block mapping is no flow mapping; an anchored flow list is one.
        assert_eq!(node.get("b").map(|n| n.flow), Some(false));
        assert_eq!(node.get("d").map(|n| n.flow), Some(true));
        // An empty value is an empty span, where the parser places it (at the `:`).
        let empty = parse("k: v\nproviders:\n").expect("valid");
        let value = empty.get("providers").expect("providers");
        assert_eq!(value.value, Value::Null);
        assert!(value.span.is_empty());
        assert_eq!(value.span.start, "k: v\nproviders".len());
    }

    #[test]
    fn an_empty_stream_is_no_document_and_null_is_one() {
        for text in ["", "\n\n", "# only a comment\n"] {
            assert_eq!(parse_stream(text), Ok(None), "{text:?}");
            assert_eq!(parse(text), Ok(empty()), "{text:?}");
        }
        for text in ["null\n", "~", "---\n"] {
            let node = parse_stream(text).expect(text).expect("a document");
            assert_eq!(node.value, Value::Null, "{text:?}");
        }
    }

    #[test]
    fn plain_scalars_read_as_numbers_have_a_json_spelling_unless_infinite() {
        for text in [
            "0", "+12", "017", "-1.5e3", ".5", "1.", "0x1F", "0o17", "1e400",
        ] {
            let Value::Number(n) = resolve_plain(text) else {
                panic!("{text} is a number");
            };
            assert!(crate::node::number_as_json(&n).is_some(), "{text}");
        }
        for text in [".inf", "-.Inf", "+.INF", ".nan", ".NaN"] {
            assert_eq!(resolve_plain(text), Value::Number(text.into()));
            assert_eq!(crate::node::number_as_json(text), None, "{text}");
        }
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
