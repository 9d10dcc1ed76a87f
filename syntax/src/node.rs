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
}
