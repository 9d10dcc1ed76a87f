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

    /// A count is present but is not a non-negative integer of the format's type: a JSON
    /// string, float, negative number, boolean, `null`, array or object; an XML attribute or
    /// TAP plan that is not all ASCII digits. Never read as zero or skipped.
    #[error("read {format} report: the count {key} is {found}, not a non-negative integer")]
    BadCount {
        /// The format being parsed.
        format: &'static str,
        /// Where the count is, e.g. `` `summary.failed` ``.
        key: String,
        /// The value as the report writes it (shortened).
        found: String,
    },

    /// A count above [`super::MAX_COUNT`] (2^53-1), the largest integer every JSON reader
    /// and the receipts' canonical JSON can carry exactly.
    #[error("read {format} report: the count {key} is {found}, above the largest count 2^53-1")]
    CountTooLarge {
        /// The format being parsed.
        format: &'static str,
        /// Where the count is (a key, an attribute, or a sum of them).
        key: String,
        /// The value as the report writes it (shortened).
        found: String,
    },

    /// Two counts that must be equal disagree, e.g. a summary's `failed` and `failures`.
    #[error("read {format} report: {first} is {first_value} but {second} is {second_value}")]
    ConflictingCounts {
        /// The format being parsed.
        format: &'static str,
        /// The first count's key.
        first: String,
        /// Its value.
        first_value: u64,
        /// The second count's key.
        second: String,
        /// Its value.
        second_value: u64,
    },

    /// The same key twice in one JSON object or XML element, or two plans in one TAP block:
    /// readers disagree on which one holds, so the report means nothing.
    #[error("read {format} report: {key} appears twice (line {line}, column {column})")]
    DuplicateKey {
        /// The format being parsed (`test` while still sniffing).
        format: &'static str,
        /// 1-based line of the second occurrence.
        line: usize,
        /// 1-based column near the second occurrence.
        column: usize,
        /// The repeated key, e.g. `` `failed` `` or `a plan`.
        key: String,
    },

    /// A total the report declares that the tests it lists (or, for a report without a
    /// test list, its per-outcome counts) do not add up to, including a declared total with
    /// no test listed at all.
    #[error(
        "read {format} report: {declared_by} declares {declared} tests but {backed_by} {backed}"
    )]
    Unbacked {
        /// The format being parsed.
        format: &'static str,
        /// What declares the total, e.g. `` `numTotalTests` `` or `the TAP plan at the top level`.
        declared_by: String,
        /// The declared total.
        declared: u64,
        /// What should back it, e.g. `it lists`.
        backed_by: &'static str,
        /// What it adds up to.
        backed: u64,
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
