//! The positioned document tree both parsers produce.
//!
//! JSON text and YAML text are read into the same [`Node`] tree, in which every
//! value and every mapping key knows the line and column it came from. The
//! typed decoders in this module's siblings read only this tree, so a
//! diagnostic about a field always names where that field was written.

pub use proofgraph_graph::span::Pos;

/// A value in a parsed document, with where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts.
    pub pos: Pos,
}

/// A mapping key, with where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key text.
    pub name: String,
    /// Where the key starts.
    pub pos: Pos,
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
}
