//! Strict JSON for reports: every JSON document and every JSON line a parser reads comes
//! through [`parse`], which refuses an object that names a key twice.
//!
//! `serde_json::Value` silently keeps the last of two equal keys (other readers keep the
//! first), so `{"failed": 3, "failed": 0}` would read as no failure here and as three
//! elsewhere. A report that means different things to different readers is not evidence:
//! a repeated key is a [`ReportError::DuplicateKey`].

use serde_json::Value;

use super::error::ReportError;
use super::model::Format;
use crate::attest::canonical;

/// Parses one JSON document (or one JSON line: `line_offset` is added to the error's line),
/// refusing repeated keys. `format` names the format in errors; `None` while sniffing.
pub(crate) fn parse(
    bytes: &[u8],
    format: Option<Format>,
    line_offset: usize,
) -> Result<Value, ReportError> {
    canonical::parse_strict(bytes).map_err(|err| error(&err, format, line_offset))
}

/// The [`ReportError`] for a failed [`parse`].
fn error(err: &serde_json::Error, format: Option<Format>, line_offset: usize) -> ReportError {
    if let Some(key) = canonical::duplicate_key(err) {
        return ReportError::DuplicateKey {
            format: format.map_or("test", Format::as_str),
            line: err.line() + line_offset,
            column: err.column(),
            key: format!("the key `{key}`"),
        };
    }
    ReportError::json(format.map_or("report", Format::as_str), err, line_offset)
}
