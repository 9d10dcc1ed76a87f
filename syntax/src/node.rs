//! The positioned document tree both parsers produce.
//!
//! JSON text and YAML text are read into the same [`Node`] tree, in which every
//! value and every mapping key knows the line and column it starts at (for
//! diagnostics) and the bytes it covers (for editing the text in place). The
//! application's typed decoders read only this tree, so a diagnostic about a
//! field always names where that field was written.

use std::ops::Range;

pub use proofgraph_graph::span::Pos;

/// The bytes of the text a node or key covers: `text[span.start..span.end]`.
///
/// For JSON, exactly the value or the key (a string's quotes included). For YAML, as the
/// node was written, with these exceptions, which follow the parser: an anchored node
/// (`&a x`) starts at its anchor; a block scalar (`|`, `>`) covers its content lines, not
/// its header; an empty value (the null of `key:`) is an empty span where the parser
/// places it; a block mapping or list starts at its first entry and ends where its last
/// entry does (trailing comments are not part of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// Just after the last byte.
    pub end: usize,
}

impl Span {
    /// The span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// The span as a range, to index the text with.
    pub fn range(self) -> Range<usize> {
        self.start..self.end
    }

    /// Whether the span covers no byte.
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }

    /// The span moved `by` bytes to the right.
    pub(crate) fn shifted(self, by: usize) -> Self {
        Self::new(self.start + by, self.end + by)
    }
}

/// A value in a parsed document, with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts.
    pub pos: Pos,
    /// The bytes it covers.
    pub span: Span,
    /// Whether it is a flow collection (`{…}`, `[…]`): every JSON mapping and list, and
    /// a YAML one written in brackets. `false` for scalars and YAML block collections.
    pub flow: bool,
}

/// A mapping key, with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key text.
    pub name: String,
    /// Where the key starts.
    pub pos: Pos,
    /// The bytes it covers.
    pub span: Span,
}

/// The value of a [`Node`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or an empty YAML value.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, kept as written so that nothing is lost to rounding.
    Number(String),
    /// A string.
    String(String),
    /// A sequence, in order.
    Seq(Vec<Node>),
    /// A mapping, in source order. Keys are unique (the parsers reject
    /// duplicates).
    Map(Vec<(Key, Node)>),
}

impl Value {
    /// The type name used in "expected X, found Y" messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// The entries if this is a mapping.
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The text if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// Looks up a key of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }
}

/// A number's text read as a non-negative integer, if it is one.
///
/// Accepts decimal integers and, as YAML's core schema does, `0x` and `0o`
/// forms. Fractions, exponents and signs other than `+` are refused.
pub fn number_as_u64(text: &str) -> Option<u64> {
    let text = text.strip_prefix('+').unwrap_or(text);
    if let Some(hex) = text.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok();
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return u64::from_str_radix(oct, 8).ok();
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    None
}

/// A number's text in JSON (RFC 8259) spelling, when it has one.
///
/// The YAML 1.2 core schema's forms are rewritten as what they mean: `+1` → `1`, `017` →
/// `17` (decimal, as in YAML 1.2), `.5` → `0.5`, `1.` → `1.0`, `0x1F` → `31`, `0o17` →
/// `15`. JSON text comes back unchanged. `None` for `.inf` and `.nan` (JSON has no
/// spelling for them), a hexadecimal or octal integer past 128 bits, and text that is no
/// number. Whether the value fits a given numeric type (`1e400` does not fit `f64`) is the
/// caller's question.
pub fn number_as_json(text: &str) -> Option<String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(hex) = text.strip_prefix("0x") {
        return u128::from_str_radix(hex, 16)
            .ok()
            .filter(|_| !hex.starts_with('+'))
            .map(|n| n.to_string());
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return u128::from_str_radix(oct, 8)
            .ok()
            .filter(|_| !oct.starts_with('+'))
            .map(|n| n.to_string());
    }
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i..])),
        None => (unsigned, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (mantissa, None),
    };
    let int_ok = digits(int) || (int.is_empty() && frac.is_some_and(digits));
    let frac_ok = frac.is_none_or(|f| f.is_empty() || digits(f));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = &e[1..];
        digits(e.strip_prefix(['-', '+']).unwrap_or(e))
    });
    if !(int_ok && frac_ok && exponent_ok) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 2);
    if negative {
        out.push('-');
    }
    let int = int.trim_start_matches('0');
    out.push_str(if int.is_empty() { "0" } else { int });
    if let Some(frac) = frac {
        out.push('.');
        out.push_str(if frac.is_empty() { "0" } else { frac });
    }
    if let Some(exponent) = exponent {
        out.push_str(exponent);
    }
    Some(out)
}

/// The deepest nesting of mappings and sequences a configuration file may use.
pub const MAX_DEPTH: usize = 64;

/// The largest configuration file read, in bytes. Real files are a few
/// kilobytes; anything near this is a mistake, not a configuration.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The keys of one mapping being read, for refusing a repeated key. A scan of the entries
/// so far is fastest for the few keys most mappings have; from [`KeyIndex::FROM`] keys on
/// (a change wiring hundreds of providers) a hash index keeps a file's parse linear instead
/// of quadratic in its number of keys.
#[derive(Debug, Default)]
pub(crate) struct KeyIndex(Option<std::collections::HashMap<String, Pos>>);

impl KeyIndex {
    /// How many keys a mapping has before it is indexed.
    const FROM: usize = 16;

    /// Where `name` was first written among `entries` (the mapping's entries so far, which
    /// this index has seen every one of through [`KeyIndex::added`]), if it was.
    pub(crate) fn first(&self, entries: &[(Key, Node)], name: &str) -> Option<Pos> {
        match &self.0 {
            Some(index) => index.get(name).copied(),
            None => entries
                .iter()
                .find(|(k, _)| k.name == name)
                .map(|(k, _)| k.pos),
        }
    }

    /// Takes note of the entry just pushed onto `entries`.
    pub(crate) fn added(&mut self, entries: &[(Key, Node)]) {
        match &mut self.0 {
            Some(index) => {
                if let Some((k, _)) = entries.last() {
                    index.entry(k.name.clone()).or_insert(k.pos);
                }
            }
            None if entries.len() >= Self::FROM => {
                let mut index = std::collections::HashMap::with_capacity(entries.len() * 2);
                for (k, _) in entries {
                    index.entry(k.name.clone()).or_insert(k.pos);
                }
                self.0 = Some(index);
            }
            None => {}
        }
    }
}

/// Converts a count to `u32`, saturating (positions past 4 billion do not
/// occur in files under [`MAX_FILE_BYTES`]).
pub fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_every_core_schema_form() {
        assert_eq!(number_as_u64("120000"), Some(120_000));
        assert_eq!(number_as_u64("+7"), Some(7));
        assert_eq!(number_as_u64("0x1F"), Some(31));
        assert_eq!(number_as_u64("0o17"), Some(15));
        assert_eq!(number_as_u64("1.5"), None);
        assert_eq!(number_as_u64("-1"), None);
        assert_eq!(number_as_u64("1e3"), None);
        assert_eq!(number_as_u64("99999999999999999999999"), None);
    }

    #[test]
    fn numbers_in_json_spelling() {
        let json = |text: &str| number_as_json(text);
        for same in [
            "0",
            "-0",
            "12",
            "-1.5",
            "1e3",
            "1E-3",
            "0.25e+10",
            "123456789012345678901234567890",
        ] {
            assert_eq!(json(same).as_deref(), Some(same), "JSON text is kept");
        }
        for (yaml, spelled) in [
            ("+12", "12"),
            ("017", "17"),
            ("-007", "-7"),
            (".5", "0.5"),
            ("-.5E2", "-0.5E2"),
            ("1.", "1.0"),
            ("1.e5", "1.0e5"),
            ("0x1F", "31"),
            ("0o17", "15"),
            ("0x", "-"),
            ("0o8", "-"),
            ("0x+1", "-"),
            (".inf", "-"),
            ("-.Inf", "-"),
            (".nan", "-"),
            ("1e", "-"),
            (".", "-"),
            ("", "-"),
            ("1.2.3", "-"),
            ("0X1F", "-"),
            ("1_000", "-"),
        ] {
            assert_eq!(
                json(yaml).as_deref(),
                (spelled != "-").then_some(spelled),
                "{yaml}"
            );
        }
    }
}
