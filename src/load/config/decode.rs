//! Typed reading of a [`Node`] tree, reporting every problem with its position.
//!
//! Decoding never stops at the first mistake: each helper reports what is
//! wrong with the node it was given and returns `None`, and the caller goes on
//! with the next field. Unknown keys are warnings with a "did you mean"
//! suggestion; wrong types and missing required fields are errors.

pub use proofgraph_graph::span::Spanned;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::syntax::node::{Key, Node, Pos, Value, number_as_u64};

/// Collects the diagnostics of one file.
#[derive(Debug)]
pub struct Sink {
    file: String,
    diagnostics: Vec<Diagnostic>,
}

impl Sink {
    /// A sink for `file` (the path shown in diagnostics).
    pub fn new(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            diagnostics: Vec::new(),
        }
    }

    /// The file these diagnostics concern.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Records an error at `pos`.
    pub fn error(&mut self, code: Code, pos: Pos, message: String, fix: impl Into<String>) {
        let d = Diagnostic::error(code, message)
            .at(&self.file, pos)
            .fix(fix);
        self.diagnostics.push(d);
    }

    /// Records a warning at `pos`.
    pub fn warning(&mut self, code: Code, pos: Pos, message: String, fix: impl Into<String>) {
        let d = Diagnostic::warning(code, message)
            .at(&self.file, pos)
            .fix(fix);
        self.diagnostics.push(d);
    }

    /// Whether any error has been recorded.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The recorded diagnostics.
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        self.diagnostics
    }

    /// Reports that `node` (described as `what`) is not of the `expected` type.
    pub fn wrong_type(&mut self, node: &Node, what: &str, expected: &str) {
        self.error(
            Code::WrongType,
            node.pos,
            format!(
                "{what} must be {expected}, found {}",
                node.value.type_name()
            ),
            format!("Write {what} as {expected}."),
        );
    }
}

/// The closest of `candidates` to `word`, if it is close enough to be a
/// plausible typo.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let close = candidates
        .iter()
        .map(|c| {
            (
                strsim::damerau_levenshtein(&lower, &c.to_ascii_lowercase()),
                *c,
            )
        })
        .filter(|(distance, c)| *distance <= (c.len().max(word.len()) / 3).max(1))
        .min()
        .map(|(_, c)| c);
    // `minimumTests` means `minimum`: a known key extended by a suffix.
    close.or_else(|| {
        candidates
            .iter()
            .filter(|c| c.len() >= 4 && lower.starts_with(&c.to_ascii_lowercase()))
            .max_by_key(|c| c.len())
            .copied()
    })
}

/// The entries of a mapping whose unknown keys have been reported.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'n> {
    entries: &'n [(Key, Node)],
    /// Where the mapping starts.
    pub pos: Pos,
}

impl<'n> Fields<'n> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }

    /// All entries in source order.
    pub fn entries(&self) -> &'n [(Key, Node)] {
        self.entries
    }
}

/// A key a decoder reads, with what it means: one source for the decoder's key list, the
/// JSON Schema's `description` of the key (an editor shows it on hover) and the field
/// reference (`docs/reference/`), all generated from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The key, as written in the file.
    pub key: &'static str,
    /// What it means, its default and what it takes, in a sentence or two (Markdown).
    pub about: &'static str,
}

impl Field {
    /// The key `key`, meaning `about`.
    pub const fn new(key: &'static str, about: &'static str) -> Self {
        Self { key, about }
    }
}

/// The keys of `fields`, in order: what [`fields`] is given to read a mapping.
pub const fn keys<const N: usize>(fields: &[Field; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = fields[i].key;
        i += 1;
    }
    out
}

/// Reads `node` as a mapping with the given known keys, warning about the
/// others. Reports `wrong_type` and returns `None` if it is not a mapping.
pub fn fields<'n>(
    sink: &mut Sink,
    node: &'n Node,
    what: &str,
    known: &[&str],
) -> Option<Fields<'n>> {
    let Some(entries) = node.as_map() else {
        sink.wrong_type(node, what, "a mapping");
        return None;
    };
    for (key, _) in entries {
        if known.contains(&key.name.as_str()) {
            continue;
        }
        let (message, fix) = match did_you_mean(&key.name, known) {
            Some(suggestion) => (
                format!(
                    "unknown key `{}` in {what}; did you mean `{suggestion}`?",
                    key.name
                ),
                format!("Rename `{}` to `{suggestion}`, or remove it.", key.name),
            ),
            None => (
                format!("unknown key `{}` in {what}; it is ignored", key.name),
                format!(
                    "Remove `{}`; {what} accepts {}.",
                    key.name,
                    list_keys(known)
                ),
            ),
        };
        sink.warning(Code::UnknownKey, key.pos, message, fix);
    }
    Some(Fields {
        entries,
        pos: node.pos,
    })
}

fn list_keys(known: &[&str]) -> String {
    known
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reports a missing required field of the mapping at `pos`.
pub fn missing(sink: &mut Sink, pos: Pos, what: &str, key: &str, example: &str) {
    sink.error(
        Code::MissingField,
        pos,
        format!("{what} is missing the required field `{key}`"),
        format!("Add `{key}: {example}` to {what}."),
    );
}

/// Reports a NUL byte in a string: no argument, environment value or path
/// can carry one, so it would only fail when the command runs.
fn refuse_nul(sink: &mut Sink, text: &str, pos: Pos, what: &str) -> bool {
    if !text.contains('\0') {
        return false;
    }
    sink.error(
        Code::NulInValue,
        pos,
        format!("{what} holds a NUL byte, which no program argument, environment value or path can carry"),
        format!("Remove the NUL (`\\0`, `\\u0000`) from {what}."),
    );
    true
}

/// Reads a string (never one holding a NUL byte).
pub fn string(sink: &mut Sink, node: &Node, what: &str) -> Option<Spanned<String>> {
    match &node.value {
        Value::String(s) if refuse_nul(sink, s, node.pos, what) => None,
        Value::String(s) => Some(Spanned::new(s.clone(), node.pos)),
        _ => {
            sink.wrong_type(node, what, "a string");
            None
        }
    }
}

/// Reads a non-empty string.
pub fn nonempty_string(sink: &mut Sink, node: &Node, what: &str) -> Option<Spanned<String>> {
    let s = string(sink, node, what)?;
    if s.value.trim().is_empty() {
        sink.error(
            Code::InvalidValue,
            node.pos,
            format!("{what} must not be empty"),
            format!("Give {what} a value, or remove it."),
        );
        return None;
    }
    Some(s)
}

/// Reads a list, calling `item` for each element (with its index). Elements
/// that fail to decode are dropped after being reported.
pub fn list<T>(
    sink: &mut Sink,
    node: &Node,
    what: &str,
    mut item: impl FnMut(&mut Sink, &Node, usize) -> Option<T>,
) -> Option<Vec<T>> {
    let Value::Seq(items) = &node.value else {
        sink.wrong_type(node, what, "a list");
        return None;
    };
    Some(
        items
            .iter()
            .enumerate()
            .filter_map(|(i, n)| item(sink, n, i))
            .collect(),
    )
}

/// Reads a list of strings, or (when `single_ok`) one string standing for a
/// one-element list.
pub fn string_list(sink: &mut Sink, node: &Node, what: &str) -> Option<Vec<Spanned<String>>> {
    list(sink, node, what, |sink, n, i| {
        nonempty_string(sink, n, &format!("{what}[{i}]"))
    })
}

/// Reads a typed identity from a string, reporting `invalid_id` when it breaks
/// the grammar.
pub fn ident<T>(
    sink: &mut Sink,
    node: &Node,
    what: &str,
    parse: impl Fn(&str) -> Result<T, proofgraph_graph::IdError>,
) -> Option<Spanned<T>> {
    let s = string(sink, node, what)?;
    ident_str(sink, &s.value, s.pos, parse)
}

/// Reads a typed identity from text already extracted (a mapping key).
pub fn ident_str<T>(
    sink: &mut Sink,
    text: &str,
    pos: Pos,
    parse: impl Fn(&str) -> Result<T, proofgraph_graph::IdError>,
) -> Option<Spanned<T>> {
    match parse(text) {
        Ok(value) => Some(Spanned::new(value, pos)),
        Err(err) => {
            sink.error(
                Code::InvalidId,
                pos,
                format!(
                    "`{}` is not a valid {}: {}",
                    err.value,
                    err.kind.noun(),
                    err.problem
                ),
                format!(
                    "Rename it so that it follows the {} grammar.",
                    err.kind.noun()
                ),
            );
            None
        }
    }
}

/// The largest integer a configuration value may hold: 2^53-1. Every integer
/// of the configuration can reach a receipt (a provider's `minimum`, its
/// `timeoutMs` in the fingerprint manifest), and receipts are RFC 8785
/// canonical JSON, which carries no integer above it: a larger value would
/// make the receipt unwritable after the provider ran.
pub const MAX_INTEGER: u64 = (1 << 53) - 1;

/// Reads a non-negative integer no larger than [`MAX_INTEGER`]. When
/// `numeric_string` is set, a string of digits is accepted too (the existing
/// implementation accepts `"300000"`).
pub fn uint(
    sink: &mut Sink,
    node: &Node,
    what: &str,
    numeric_string: bool,
) -> Option<Spanned<u64>> {
    let text = match &node.value {
        Value::Number(n) => n.as_str(),
        Value::String(s) if numeric_string => s.trim(),
        _ => {
            sink.wrong_type(node, what, "a non-negative integer");
            return None;
        }
    };
    match number_as_u64(text) {
        Some(n) if n <= MAX_INTEGER => Some(Spanned::new(n, node.pos)),
        Some(_) => {
            sink.error(
                Code::InvalidValue,
                node.pos,
                format!("{what} must be at most {MAX_INTEGER} (2^53-1), found `{text}`"),
                format!("Write {what} as a whole number no larger than {MAX_INTEGER}."),
            );
            None
        }
        None => {
            sink.error(
                Code::InvalidValue,
                node.pos,
                format!("{what} must be a non-negative integer, found `{text}`"),
                format!("Write {what} as a whole number such as `1`."),
            );
            None
        }
    }
}

/// Reads one of a closed set of words, suggesting the closest on a miss.
pub fn one_of<T: Copy>(
    sink: &mut Sink,
    node: &Node,
    what: &str,
    code: Code,
    choices: &[(&str, T)],
) -> Option<Spanned<T>> {
    let s = string(sink, node, what)?;
    if let Some((_, value)) = choices.iter().find(|(name, _)| *name == s.value) {
        return Some(Spanned::new(*value, s.pos));
    }
    let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
    let fix = match did_you_mean(&s.value, &names) {
        Some(suggestion) => format!("Did you mean `{suggestion}`?"),
        None => format!("Use one of {}.", list_keys(&names)),
    };
    sink.error(
        code,
        s.pos,
        format!(
            "{what} is `{}`, which is not one of {}",
            s.value,
            list_keys(&names)
        ),
        fix,
    );
    None
}

/// Reads a scalar as text: strings as they are, numbers as written, booleans
/// as `true`/`false`. Used for `env` values, which Change Loop's Node.js runtime
/// accepts as any scalar.
pub fn scalar_text(sink: &mut Sink, node: &Node, what: &str) -> Option<Spanned<String>> {
    let text = match &node.value {
        Value::String(s) | Value::Number(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        _ => {
            sink.wrong_type(node, what, "a string, number or boolean");
            return None;
        }
    };
    if refuse_nul(sink, &text, node.pos, what) {
        return None;
    }
    Some(Spanned::new(text, node.pos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse::parse_document;

    #[test]
    fn suggestions_catch_typos_not_strangers() {
        let known = ["adapter", "command", "timeoutMs", "minimum"];
        assert_eq!(did_you_mean("adaptr", &known), Some("adapter"));
        assert_eq!(did_you_mean("timeoutms", &known), Some("timeoutMs"));
        assert_eq!(did_you_mean("minimumTests", &known), Some("minimum"));
        assert_eq!(did_you_mean("requirementKey", &known), None);
    }

    #[test]
    fn unknown_keys_warn_with_position() {
        let (_, node) = parse_document("adaptr: command\nextra: 1\n");
        let node = node.expect("valid");
        let mut sink = Sink::new("x.yaml");
        let f = fields(&mut sink, &node, "provider `test`", &["adapter", "command"]).expect("map");
        assert!(f.get("adapter").is_none());
        let d = sink.into_diagnostics();
        assert_eq!(d.len(), 2);
        assert_eq!(
            d[0].message,
            "unknown key `adaptr` in provider `test`; did you mean `adapter`?"
        );
        assert_eq!(
            d[0].target.as_ref().map(ToString::to_string).as_deref(),
            Some("x.yaml:1:1")
        );
        assert_eq!(
            d[1].target.as_ref().map(ToString::to_string).as_deref(),
            Some("x.yaml:2:1")
        );
    }

    #[test]
    fn integers_accept_numeric_strings_only_when_asked() {
        let (_, node) = parse_document("{\"a\": \"300000\", \"b\": 1.5, \"c\": 7}");
        let node = node.expect("valid");
        let mut sink = Sink::new("x");
        let get = |k: &str| node.get(k).expect("present");
        assert_eq!(
            uint(&mut sink, get("a"), "a", true).map(|s| s.value),
            Some(300_000)
        );
        assert_eq!(uint(&mut sink, get("a"), "a", false), None);
        assert_eq!(uint(&mut sink, get("b"), "b", true), None);
        assert_eq!(
            uint(&mut sink, get("c"), "c", false).map(|s| s.value),
            Some(7)
        );
        let codes: Vec<Code> = sink.into_diagnostics().iter().map(|d| d.code).collect();
        assert_eq!(codes, vec![Code::WrongType, Code::InvalidValue]);
    }

    #[test]
    fn integers_stop_at_2_53_minus_1_so_every_receipt_can_carry_them() {
        let (_, node) = parse_document(
            "{\"a\": 9007199254740991, \"b\": 9007199254740992, \"c\": \"18446744073709551615\"}",
        );
        let node = node.expect("valid");
        let mut sink = Sink::new("x");
        let get = |k: &str| node.get(k).expect("present");
        assert_eq!(
            uint(&mut sink, get("a"), "a", false).map(|s| s.value),
            Some(MAX_INTEGER)
        );
        assert_eq!(uint(&mut sink, get("b"), "b", false), None);
        assert_eq!(uint(&mut sink, get("c"), "c", true), None);
        let d = sink.into_diagnostics();
        assert_eq!(
            d.iter().map(|d| d.code).collect::<Vec<_>>(),
            vec![Code::InvalidValue, Code::InvalidValue]
        );
        assert_eq!(
            d[0].message,
            "b must be at most 9007199254740991 (2^53-1), found `9007199254740992`"
        );
    }
}
