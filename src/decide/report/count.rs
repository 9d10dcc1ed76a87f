//! The one way a parser reads a count: strict and total.
//!
//! A count is a non-negative integer of the type the format declares — a JSON integer, an
//! XML attribute or TAP plan of ASCII digits — no larger than [`MAX_COUNT`], or it is
//! absent. Anything else that is present (`"3"`, `3.0`, `-3`, `true`, `null`, `[3]`,
//! `" 3"`, `3e0`, `9007199254740992`) is a [`ReportError`], never zero and never skipped:
//! a report whose counts cannot be read is not evidence. Sums of counts are checked against
//! the same bound, so no count a report yields can fail to encode in a receipt.

use serde_json::{Map, Value};

use super::error::ReportError;
use super::format::Format;

/// The largest count: 2^53-1, the largest integer an IEEE double (so every JSON reader) and
/// the receipts' RFC 8785 canonical JSON carry exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// How much of a malformed value an error message quotes.
const QUOTE_CHARS: usize = 40;

/// A JSON count: `None` when `value` is absent, an error when it is present and not a
/// non-negative integer no larger than [`MAX_COUNT`]. `key` names it in the error (lazily,
/// so reading a count allocates nothing).
pub(crate) fn json(
    value: Option<&Value>,
    format: Format,
    key: impl FnOnce() -> String,
) -> Result<Option<u64>, ReportError> {
    let Some(value) = value else {
        return Ok(None);
    };
    if let Some(n) = value.as_u64() {
        return bounded(n, format, key).map(Some);
    }
    let too_large = value
        .as_f64()
        .is_some_and(|f| f.fract() == 0.0 && f >= u64::MAX as f64);
    let found = quote(&value.to_string());
    Err(if too_large {
        // An integer literal beyond u64 reaches us as a float; it is still too large.
        ReportError::CountTooLarge {
            format: format.as_str(),
            key: key(),
            found,
        }
    } else {
        ReportError::BadCount {
            format: format.as_str(),
            key: key(),
            found,
        }
    })
}

/// [`json`] of `object[name]`, named `` `{prefix}{name}` `` in errors.
pub(crate) fn key(
    object: &Map<String, Value>,
    name: &str,
    format: Format,
    prefix: &str,
) -> Result<Option<u64>, ReportError> {
    json(object.get(name), format, || format!("`{prefix}{name}`"))
}

/// A count written as text (an XML attribute, a TAP plan): ASCII digits only — no sign, no
/// spaces, no decimal point, not empty — no larger than [`MAX_COUNT`].
pub(crate) fn text(
    text: &str,
    format: Format,
    key: impl FnOnce() -> String,
) -> Result<u64, ReportError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ReportError::BadCount {
            format: format.as_str(),
            key: key(),
            found: quote(&format!("{text:?}")),
        });
    }
    match text.parse::<u64>() {
        Ok(n) => bounded(n, format, key),
        Err(_) => Err(ReportError::CountTooLarge {
            format: format.as_str(),
            key: key(),
            found: quote(text),
        }),
    }
}

/// `n`, or [`ReportError::CountTooLarge`] when it is above [`MAX_COUNT`].
pub(crate) fn bounded(
    n: u64,
    format: Format,
    key: impl FnOnce() -> String,
) -> Result<u64, ReportError> {
    if n <= MAX_COUNT {
        Ok(n)
    } else {
        Err(ReportError::CountTooLarge {
            format: format.as_str(),
            key: key(),
            found: n.to_string(),
        })
    }
}

/// `a + b`, bounded like every count; `key` names the sum.
pub(crate) fn add(
    a: u64,
    b: u64,
    format: Format,
    key: impl FnOnce() -> String,
) -> Result<u64, ReportError> {
    match a.checked_add(b) {
        Some(sum) => bounded(sum, format, key),
        None => Err(ReportError::CountTooLarge {
            format: format.as_str(),
            key: key(),
            found: format!("{a} + {b}"),
        }),
    }
}

/// The first [`QUOTE_CHARS`] characters of `text`, with `…` when cut.
fn quote(text: &str) -> String {
    let mut out: String = text.chars().take(QUOTE_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}
