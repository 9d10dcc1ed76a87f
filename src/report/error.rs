//! [`ReportError`]: why a report could not be read. Every message is a lowercase fragment
//! that reads after "failed to", e.g. "failed to parse JUnit XML at line 3: ...".

/// Why a report could not be parsed. A report that yields an error proves nothing: callers
/// must treat it like a missing report, never as a pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// The input has no content (or only whitespace).
    #[error("read test report: it is empty")]
    Empty,

    /// The input is larger than [`super::MAX_REPORT_BYTES`].
    #[error("read test report: {size} bytes is over the {limit}-byte limit")]
    TooLarge {
        /// Size of the input in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },

    /// No supported format matches the document.
    #[error("recognise test report: {reason}")]
    UnknownFormat {
        /// What was looked for and not found.
        reason: String,
    },

    /// The input is not valid UTF-8 where text was required.
    #[error("decode {format} report: invalid UTF-8 at byte {offset}")]
    Utf8 {
        /// The format being parsed.
        format: &'static str,
        /// Offset of the first invalid byte.
        offset: usize,
    },

    /// A JSON document (or one JSON line) is malformed or truncated.
    #[error("parse {format} JSON at line {line}, column {column}: {message}")]
    Json {
        /// The format being parsed (`json` while still sniffing).
        format: &'static str,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The JSON parser's message.
        message: String,
    },

    /// An XML document is malformed or truncated.
    #[error("parse JUnit XML at line {line}: {message}")]
    Xml {
        /// 1-based line of the error.
        line: u32,
        /// The XML parser's message.
        message: String,
    },

    /// The document is well-formed but does not have the shape of the format.
    #[error("read {format} report: {message}")]
    Shape {
        /// The format being parsed.
        format: &'static str,
        /// What is wrong with the shape.
        message: String,
    },
}

impl ReportError {
    /// A [`ReportError::Shape`] for `format`.
    pub(crate) fn shape(format: super::Format, message: impl Into<String>) -> ReportError {
        ReportError::Shape {
            format: format.as_str(),
            message: message.into(),
        }
    }

    /// A [`ReportError::Json`] from a serde_json error. `line_offset` is added to the
    /// line number (for JSON-lines input, where each line is parsed on its own).
    pub(crate) fn json(
        format: &'static str,
        err: &serde_json::Error,
        line_offset: usize,
    ) -> ReportError {
        ReportError::Json {
            format,
            line: err.line() + line_offset,
            column: err.column(),
            message: strip_position(&err.to_string()),
        }
    }
}

/// serde_json appends " at line L column C" to its messages; the position is already in
/// our own fields.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}
