//! What can go wrong reading a document into a tree, and where.

use std::fmt;

use crate::node::{MAX_DEPTH, Pos, saturate};

/// Why a document could not be read into a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The text is not valid JSON or YAML; the message says what the parser
    /// expected.
    Syntax(String),
    /// Mappings and sequences nest deeper than [`crate::node::MAX_DEPTH`].
    TooDeep,
    /// A mapping repeats a key.
    DuplicateKey {
        /// The repeated key.
        key: String,
        /// Where it was first written.
        first: Pos,
    },
    /// A YAML stream holds more than one document.
    MultipleDocuments,
    /// A YAML feature proofgraph does not read (aliases, tags, complex keys).
    Unsupported(String),
}

/// A document that could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Where it went wrong.
    pub pos: Pos,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::Syntax(message) | ParseErrorKind::Unsupported(message) => {
                f.write_str(message)
            }
            ParseErrorKind::TooDeep => {
                write!(f, "lists and mappings nest deeper than {MAX_DEPTH} levels")
            }
            ParseErrorKind::DuplicateKey { key, first } => write!(
                f,
                "key `{key}` appears twice in one mapping (first at line {}, column {})",
                first.line, first.column
            ),
            ParseErrorKind::MultipleDocuments => {
                f.write_str("the text holds more than one YAML document")
            }
        }
    }
}

/// `<what> at line <l>, column <c>`.
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {}, column {}",
            self.kind, self.pos.line, self.pos.column
        )
    }
}

impl std::error::Error for ParseError {}

/// The position of the first byte that is not valid UTF-8, for a diagnostic
/// about binary or mis-encoded files.
pub fn utf8_error_pos(bytes: &[u8], valid_up_to: usize) -> Pos {
    let prefix = &bytes[..valid_up_to];
    let line = prefix.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = prefix
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&prefix[line_start..])
        .chars()
        .count()
        + 1;
    Pos::new(saturate(line), saturate(column))
}
