//! Reading a configuration file from disk into a [`Node`] tree.
//!
//! Every way a file can be unusable (unreadable, too large, binary, malformed,
//! too deep) becomes one diagnostic with the file's position; nothing here
//! panics or allocates more than [`MAX_FILE_BYTES`] for a file.

use std::io::Read;
use std::path::Path;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::syntax::node::{Node, Pos};
use crate::syntax::parse::{
    MAX_DEPTH, MAX_FILE_BYTES, ParseErrorKind, Syntax, parse_document, utf8_error_pos,
};

/// A parsed document and the syntax it was read as.
#[derive(Debug)]
pub struct Document {
    /// The tree.
    pub root: Node,
    /// JSON or YAML.
    pub syntax: Syntax,
}

/// Reads and parses `path`; `shown` is how the file is named in diagnostics.
pub fn read_document(path: &Path, shown: &str) -> Result<Document, Diagnostic> {
    let file = fs_err::File::open(path).map_err(|err| unreadable(shown, &err))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| unreadable(shown, &err))?;
    parse_bytes(&bytes, shown)
}

/// Parses a file's bytes (read with at most [`MAX_FILE_BYTES`]` + 1` of them) as
/// [`read_document`] does; `shown` is how the file is named in diagnostics.
pub fn parse_bytes(bytes: &[u8], shown: &str) -> Result<Document, Diagnostic> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Diagnostic::error(
            Code::FileTooLarge,
            format!(
                "{shown} is larger than {} MiB, which no configuration file needs",
                MAX_FILE_BYTES >> 20
            ),
        )
        .at(shown, Pos::new(1, 1))
        .fix("Check that the file is the configuration you meant; it is not read."));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let pos = utf8_error_pos(bytes, err.valid_up_to());
            return Err(
                Diagnostic::error(Code::InvalidUtf8, format!("{shown} is not UTF-8 text"))
                    .at(shown, pos)
                    .fix("Save the file as UTF-8 text."),
            );
        }
    };
    let (syntax, parsed) = parse_document(text);
    let err = match parsed {
        Ok(root) => return Ok(Document { root, syntax }),
        Err(err) => err,
    };
    let (code, message, fix) = match err.kind {
        ParseErrorKind::Syntax(message) => (
            Code::SyntaxError,
            format!("{shown} is not valid {}: {message}", syntax.name()),
            format!("Fix the {} syntax at this position.", syntax.name()),
        ),
        ParseErrorKind::TooDeep => (
            Code::NestingTooDeep,
            format!("{shown} nests lists and mappings deeper than {MAX_DEPTH} levels"),
            "Flatten the file; no configuration needs this depth.".to_owned(),
        ),
        ParseErrorKind::DuplicateKey { key, first } => (
            Code::DuplicateKey,
            format!(
                "key `{key}` appears twice in one mapping (first at line {}, column {})",
                first.line, first.column
            ),
            format!("Keep one `{key}`; the file must say one thing."),
        ),
        ParseErrorKind::MultipleDocuments => (
            Code::MultipleDocuments,
            format!("{shown} holds more than one YAML document"),
            "Remove the `---` separator and keep a single document.".to_owned(),
        ),
        ParseErrorKind::Unsupported(message) => (
            Code::UnsupportedYaml,
            format!("{shown} uses a YAML feature proofgraph does not read: {message}"),
            "Write the value out plainly.".to_owned(),
        ),
    };
    Err(Diagnostic::error(code, message).at(shown, err.pos).fix(fix))
}

fn unreadable(shown: &str, err: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        Code::FileUnreadable,
        format!("{shown} cannot be read: {}", err.kind()),
    )
    .at(shown, Pos::new(1, 1))
    .fix("Check the file's permissions and that it is a regular file.")
}
