//! A strict JSON (RFC 8259) parser that keeps positions.
//!
//! `serde_json` reports a position only for the first error; proofgraph needs
//! the position of every value and key to point diagnostics at them, so this
//! small recursive-descent parser builds a [`Node`] tree directly. Recursion is
//! bounded by [`MAX_DEPTH`]; duplicate keys are errors.
//!
//! Positions cost O(1) amortised each, so a parse is linear in the text however long its
//! lines: the column (in characters, as every diagnostic counts them) is counted on from
//! where the last position on the same line was taken, never again from the line's start.
//! A one-line file near [`crate::node::MAX_FILE_BYTES`] can hold two million values;
//! counting each one's column from the start of the line made its parse quadratic.

use std::cell::Cell;

use crate::error::{ParseError, ParseErrorKind};
use crate::node::{Key, KeyIndex, MAX_DEPTH, Node, Pos, Span, Value, saturate};

/// Parses one JSON document; trailing non-whitespace is an error.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        text,
        at: 0,
        line: 1,
        line_start: 0,
        counted: Cell::new((0, 0)),
    };
    parser.skip_ws();
    let node = parser.value(0)?;
    parser.skip_ws();
    if parser.at < parser.bytes.len() {
        return Err(parser.error("unexpected text after the document"));
    }
    Ok(node)
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    line: usize,
    line_start: usize,
    /// `(byte, characters)`: the characters from `line_start` to `byte`, where the last
    /// position was taken. Positions are taken at increasing offsets, so each one counts
    /// only the characters since the last.
    counted: Cell<(usize, usize)>,
}

impl Parser<'_> {
    fn pos(&self) -> Pos {
        Pos::new(saturate(self.line), saturate(self.column()))
    }

    /// The 1-based column of `at` in characters, counted on from the last one taken.
    fn column(&self) -> usize {
        if !self.text.is_char_boundary(self.at) {
            // Not reached (positions are taken between characters); 1, as before.
            return 1;
        }
        let (mut byte, mut chars) = self.counted.get();
        if byte < self.line_start || byte > self.at {
            (byte, chars) = (self.line_start, 0);
        }
        // A character is every byte that is not a UTF-8 continuation byte (`10xxxxxx`).
        chars += self.bytes[byte..self.at]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        self.counted.set((self.at, chars));
        chars + 1
    }

    fn error(&self, message: &str) -> ParseError {
        ParseError {
            kind: ParseErrorKind::Syntax(format!("invalid JSON: {message}")),
            pos: self.pos(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn bump(&mut self) {
        if self.peek() == Some(b'\n') {
            self.line += 1;
            self.line_start = self.at + 1;
        }
        self.at += 1;
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.bump();
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), ParseError> {
        if self.peek() == Some(byte) {
            self.bump();
            Ok(())
        } else {
            Err(self.error(&format!("expected {what}")))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        let pos = self.pos();
        let start = self.at;
        let value = match self.peek() {
            Some(b'{') => self.object(depth + 1)?,
            Some(b'[') => self.array(depth + 1)?,
            Some(b'"') => Value::String(self.string()?),
            Some(b't') => self.literal("true", Value::Bool(true))?,
            Some(b'f') => self.literal("false", Value::Bool(false))?,
            Some(b'n') => self.literal("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.error("expected a value")),
            None => return Err(self.error("unexpected end of input, expected a value")),
        };
        let flow = matches!(value, Value::Map(_) | Value::Seq(_));
        Ok(Node {
            value,
            pos,
            span: Span::new(start, self.at),
            flow,
        })
    }

    fn too_deep(&self, depth: usize) -> Result<(), ParseError> {
        if depth > MAX_DEPTH {
            Err(ParseError {
                kind: ParseErrorKind::TooDeep,
                pos: self.pos(),
            })
        } else {
            Ok(())
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.too_deep(depth)?;
        self.bump();
        let mut entries: Vec<(Key, Node)> = Vec::new();
        let mut index = KeyIndex::default();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.bump();
            return Ok(Value::Map(entries));
        }
        loop {
            self.skip_ws();
            let key_pos = self.pos();
            let key_start = self.at;
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let name = self.string()?;
            let key_span = Span::new(key_start, self.at);
            if let Some(first) = index.first(&entries, &name) {
                return Err(ParseError {
                    kind: ParseErrorKind::DuplicateKey { key: name, first },
                    pos: key_pos,
                });
            }
            self.skip_ws();
            self.expect(b':', "`:` after a key")?;
            self.skip_ws();
            let value = self.value(depth)?;
            let key = Key {
                name,
                pos: key_pos,
                span: key_span,
            };
            entries.push((key, value));
            index.added(&entries);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b'}') => {
                    self.bump();
                    return Ok(Value::Map(entries));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.too_deep(depth)?;
        self.bump();
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.bump();
            return Ok(Value::Seq(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b']') => {
                    self.bump();
                    return Ok(Value::Seq(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.bump();
        }
        match self.peek() {
            Some(b'0') => self.bump(),
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.bump();
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("expected a digit after `.`"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.bump();
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.bump();
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("expected a digit in the exponent"));
            }
            self.digits();
        }
        Ok(Value::Number(self.text[start..self.at].to_owned()))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.bump();
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.bump();
        let mut out = String::new();
        loop {
            let run_start = self.at;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.push_str(&self.text[run_start..self.at]);
            match self.peek() {
                Some(b'"') => {
                    self.bump();
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.bump();
                    self.escape(&mut out)?;
                }
                Some(_) => return Err(self.error("control character in a string")),
                None => return Err(self.error("unterminated string")),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.bump();
                let high = self.hex4()?;
                let c = if (0xD800..0xDC00).contains(&high) {
                    if !self.bytes[self.at..].starts_with(b"\\u") {
                        return Err(self.error("unpaired surrogate in `\\u` escape"));
                    }
                    self.at += 2;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error("unpaired surrogate in `\\u` escape"));
                    }
                    char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                } else {
                    char::from_u32(high)
                };
                let c = c.ok_or_else(|| self.error("unpaired surrogate in `\\u` escape"))?;
                out.push(c);
                return Ok(());
            }
            _ => return Err(self.error("unknown escape")),
        };
        self.bump();
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        let value = digits
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("expected four hex digits after `\\u`"))?;
        self.at += 4;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_point_at_values_and_keys() {
        let node = parse("{\n  \"a\": {\"b\": [true, null]},\n  \"é\": \"x\"\n}").expect("valid");
        let Value::Map(entries) = &node.value else {
            panic!("map")
        };
        assert_eq!(entries[0].0.pos, Pos::new(2, 3));
        assert_eq!(entries[0].1.pos, Pos::new(2, 8));
        assert_eq!(entries[1].0.pos, Pos::new(3, 3));
        assert_eq!(entries[1].1.pos, Pos::new(3, 8));
    }

    /// A one-line document just under [`crate::node::MAX_FILE_BYTES`], with multi-byte
    /// characters throughout: every value's column is its character offset, checked for
    /// the last values (where a wrong count would have piled up) and a sample before them.
    #[test]
    fn a_four_mib_single_line_document_has_exact_positions_to_its_end() {
        let limit = usize::try_from(crate::node::MAX_FILE_BYTES).expect("fits");
        let mut text = String::from("{\"pad\": [");
        let mut chars = text.chars().count();
        // (character column, what the value is) of every value of the list.
        let mut expected: Vec<(usize, Value)> = Vec::new();
        let items = ["\"é😀x\"", "12345", "{\"k\": \"ü\"}", "-0.5e3", "\"plain\""];
        let mut i = 0;
        while text.len() + 64 < limit {
            if i > 0 {
                text.push_str(", ");
                chars += 2;
            }
            let item = items[i % items.len()];
            let value = match i % items.len() {
                0 => Value::String("é😀x".into()),
                1 => Value::Number("12345".into()),
                2 => Value::Map(Vec::new()),
                3 => Value::Number("-0.5e3".into()),
                _ => Value::String("plain".into()),
            };
            expected.push((chars + 1, value));
            text.push_str(item);
            chars += item.chars().count();
            i += 1;
        }
        let last_key_column = chars + 4;
        text.push_str("], \"last\": true}");
        assert!(
            text.len() as u64 <= crate::node::MAX_FILE_BYTES,
            "{}",
            text.len()
        );
        assert!(text.len() as u64 > crate::node::MAX_FILE_BYTES - 128);
        assert!(!text.contains('\n'));

        let node = parse(&text).expect("valid");
        let Value::Map(top) = &node.value else {
            panic!("a mapping")
        };
        assert_eq!(top[1].0.name, "last");
        assert_eq!(top[1].0.pos, Pos::new(1, saturate(last_key_column)));
        assert_eq!(top[1].1.pos, Pos::new(1, saturate(last_key_column + 8)));
        let Value::Seq(list) = &top[0].1.value else {
            panic!("a list")
        };
        assert_eq!(list.len(), expected.len());
        let checked = (0..list.len())
            .rev()
            .take(1000)
            .chain((0..list.len()).step_by(997));
        for n in checked {
            let (column, value) = &expected[n];
            assert_eq!(list[n].pos, Pos::new(1, saturate(*column)), "value {n}");
            match (&list[n].value, value) {
                (Value::Map(entries), Value::Map(_)) => {
                    assert_eq!(entries[0].0.pos, Pos::new(1, saturate(column + 1)));
                    assert_eq!(entries[0].1.pos, Pos::new(1, saturate(column + 6)));
                }
                (found, value) => assert_eq!(found, value, "value {n}"),
            }
        }
        // JSON is YAML: the YAML reader gives the same positions and spans, as fast.
        let yaml = crate::yaml::parse(&text).expect("JSON is YAML");
        let Value::Map(yaml_top) = &yaml.value else {
            panic!("a mapping")
        };
        assert_eq!(yaml_top[1].0.pos, top[1].0.pos);
        assert_eq!(yaml_top[1].0.span, top[1].0.span);
        let Value::Seq(yaml_list) = &yaml_top[0].1.value else {
            panic!("a list")
        };
        assert_eq!(yaml_list.len(), list.len());
        for n in (0..list.len())
            .rev()
            .take(1000)
            .chain((0..list.len()).step_by(997))
        {
            assert_eq!(
                (yaml_list[n].pos, yaml_list[n].span),
                (list[n].pos, list[n].span),
                "value {n}"
            );
        }
        // An error at the very end is placed by the same count.
        let mut broken = text.clone();
        broken.pop();
        let err = parse(&broken).expect_err("unterminated");
        assert_eq!(
            err.pos,
            Pos::new(1, saturate(text.chars().count())),
            "{err:?}"
        );
    }

    #[test]
    fn columns_count_characters_across_lines_and_after_errors() {
        // The count restarts on each line, and keeps counting within one.
        let node = parse("{\"é\": [\"ü\",\n \"😀\", {\"a\":\n1}], \"b\": 2}").expect("valid");
        let list = node.get("é").expect("é");
        let Value::Seq(items) = &list.value else {
            panic!("a list")
        };
        assert_eq!(list.pos, Pos::new(1, 7));
        assert_eq!(items[0].pos, Pos::new(1, 8));
        assert_eq!(items[1].pos, Pos::new(2, 2));
        assert_eq!(items[2].pos, Pos::new(2, 7));
        assert_eq!(items[2].get("a").map(|n| n.pos), Some(Pos::new(3, 1)));
        let Value::Map(top) = &node.value else {
            panic!("a mapping")
        };
        assert_eq!(top[1].0.pos, Pos::new(3, 6));
        let err = parse("{\"é\": \"ü\", \"x\": [1,\n  2,, 3]}").expect_err("two commas");
        assert_eq!(err.pos, Pos::new(2, 5));
    }

    #[test]
    fn spans_cover_each_value_and_key_exactly() {
        let text =
            "{\n  \"é\" : [1, -2.5e3 ,\"x\\\"ü\", {}, [true, null]],\n  \"k\":{\"n\":false}}";
        let node = parse(text).expect("valid");
        assert_eq!(node.span.range(), 0..text.len());
        assert!(node.flow);
        let Value::Map(top) = &node.value else {
            panic!("a mapping")
        };
        let at = |span: Span| &text[span.range()];
        assert_eq!(at(top[0].0.span), "\"é\"");
        let Value::Seq(items) = &top[0].1.value else {
            panic!("a list")
        };
        let shown: Vec<&str> = items.iter().map(|n| at(n.span)).collect();
        assert_eq!(shown, ["1", "-2.5e3", "\"x\\\"ü\"", "{}", "[true, null]"]);
        assert_eq!(
            items.iter().map(|n| n.flow).collect::<Vec<_>>(),
            [false, false, false, true, true]
        );
        assert_eq!(at(top[1].0.span), "\"k\"");
        assert_eq!(at(top[1].1.span), "{\"n\":false}");
        // Every value's text, read again, is the same value.
        for item in items {
            let again = parse(&format!("{{\"v\": {}}}", at(item.span))).expect("valid");
            let (a, b) = (&again.get("v").expect("v").value, &item.value);
            match (a, b) {
                (Value::Seq(x), Value::Seq(y)) => assert_eq!(x.len(), y.len()),
                _ => assert_eq!(a, b),
            }
        }
    }

    #[test]
    fn escapes_decode_including_surrogate_pairs() {
        let node = parse(r#"{"s": "a\"\\\/\n\u00e9\ud83d\ude00"}"#).expect("valid");
        assert_eq!(node.get("s").and_then(Node::as_str), Some("a\"\\/\né😀"));
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let err = parse("{\"a\": 1,\n \"a\": 2}").expect_err("duplicate");
        assert_eq!(
            err.kind,
            ParseErrorKind::DuplicateKey {
                key: "a".into(),
                first: Pos::new(1, 2)
            }
        );
        assert_eq!(err.pos, Pos::new(2, 2));
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(
            parse(&deep).expect_err("too deep").kind,
            ParseErrorKind::TooDeep
        );
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn malformed_text_is_an_error_with_a_position() {
        for (text, pos) in [
            ("{\"a\": }", Pos::new(1, 7)),
            ("{\"a\": 1,}", Pos::new(1, 9)),
            ("{\"a\": 01}", Pos::new(1, 8)),
            ("{\"a\": \"x}", Pos::new(1, 10)),
            ("{\"a\": 1} x", Pos::new(1, 10)),
            ("{\"a\": tru}", Pos::new(1, 7)),
            ("{\"a\": \"\\q\"}", Pos::new(1, 9)),
            ("{\"a\": \"\\ud800\"}", Pos::new(1, 14)),
        ] {
            let err = parse(text).expect_err(text);
            assert!(matches!(err.kind, ParseErrorKind::Syntax(_)), "{text}");
            assert_eq!(err.pos, pos, "{text}");
        }
    }
}
