//! Format detection. Rules, in order:
//!
//! 1. A document whose first non-blank byte is `<` is JUnit when its first element is
//!    `<testsuites>` or `<testsuite>`.
//! 2. A document that parses as one JSON object is, by its keys:
//!    Playwright (`suites` array + `config` object or `stats.expected`), then CTRF
//!    (`results.tool` + `results.summary`), then Mocha (`stats` + `tests`/`passes`/`failures`/
//!    `pending` arrays), then Jest/Vitest (`testResults` or `numTotalTests`; Vitest vs Jest per
//!    [`super::jest::is_vitest`], Jest when in doubt); a lone go test or libtest event object
//!    is that stream with one line; any other object with a total key (`totalTests`, `tests`,
//!    `testCount`, `expected`, at its root or under `summary` or `stats`) is a summary.
//! 3. Text whose lines are JSON objects: the first JSON-object line (among the first lines,
//!    so leading noise such as Go's `FAIL pkg [build failed]` is allowed) decides:
//!    `Action` (+ `Package`/`Time`) → go test JSON; `type` `suite`/`test` + `event` → libtest.
//! 4. Other text is TAP when it has a `TAP version N` line near the top, or starts with a
//!    plan `1..N` or an `ok`/`not ok` test point.
//!
//! Anything else matches no format.

use serde_json::Value;

use super::error::ReportError;
use super::json;
use super::model::Format;
use super::{ctrf, go_test, jest, junit, libtest, mocha, playwright, summary, tap};

/// How many leading lines are searched for the first JSON event of a JSON-lines stream.
const SNIFF_LINES: usize = 200;

/// What detection found, with the parsed JSON document kept so it is not parsed twice.
pub(crate) enum Detected {
    /// A single JSON document of the given format.
    Document(Format, Value),
    /// A line-oriented or XML format, parsed from the bytes.
    Stream(Format),
}

impl Detected {
    pub(crate) fn format(&self) -> Format {
        match self {
            Detected::Document(f, _) | Detected::Stream(f) => *f,
        }
    }
}

/// Why detection found nothing.
pub(crate) enum Miss {
    /// The input looked like one JSON document but did not parse (malformed, truncated, or
    /// a key repeated).
    BadJson(ReportError),
    /// Nothing matched.
    NoMatch,
}

/// The bytes after a UTF-8 byte-order mark and leading whitespace.
pub(crate) fn trim_start(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

/// Classifies one parsed JSON document.
pub(crate) fn classify_document(value: &Value) -> Option<Format> {
    let root = value.as_object()?;
    if playwright::looks_like(root) {
        Some(Format::Playwright)
    } else if ctrf::looks_like(root) {
        Some(Format::Ctrf)
    } else if mocha::looks_like(root) {
        Some(Format::Mocha)
    } else if jest::looks_like(root) {
        Some(if jest::is_vitest(root) {
            Format::Vitest
        } else {
            Format::Jest
        })
    } else if go_test::is_event(root) {
        Some(Format::GoTestJson)
    } else if libtest::is_event(root) {
        Some(Format::LibtestJson)
    } else if summary::looks_like(root) {
        Some(Format::Summary)
    } else {
        None
    }
}

/// The JSON-lines format of `text`, judged by its first JSON-object line. Only classifies:
/// the format's parser reads every line again, strictly.
fn classify_lines(text: &[u8]) -> Option<Format> {
    for line in text.split(|b| *b == b'\n').take(SNIFF_LINES) {
        let line = trim_start(line);
        if !line.starts_with(b"{") {
            continue;
        }
        let value: Value = serde_json::from_slice(line).ok()?;
        let object = value.as_object()?;
        return if go_test::is_event(object) {
            Some(Format::GoTestJson)
        } else if libtest::is_event(object) {
            Some(Format::LibtestJson)
        } else {
            None
        };
    }
    None
}

/// Detects the format of `bytes`, considering only JSON formats when `json_only`.
pub(crate) fn detect(bytes: &[u8], json_only: bool) -> Result<Detected, Miss> {
    let body = trim_start(bytes);
    match body.first() {
        None => Err(Miss::NoMatch),
        Some(b'<') => {
            if !json_only && junit::looks_like(body) {
                Ok(Detected::Stream(Format::Junit))
            } else {
                Err(Miss::NoMatch)
            }
        }
        Some(b'{' | b'[') => match json::parse(bytes_without_bom(bytes), None, 0) {
            Ok(value) => match classify_document(&value) {
                Some(Format::GoTestJson) => Ok(Detected::Stream(Format::GoTestJson)),
                Some(Format::LibtestJson) => Ok(Detected::Stream(Format::LibtestJson)),
                Some(format) => Ok(Detected::Document(format, value)),
                None => Err(Miss::NoMatch),
            },
            // A repeated key is refused here, whatever the format would have been.
            Err(err @ ReportError::DuplicateKey { .. }) => Err(Miss::BadJson(err)),
            Err(err) => classify_lines(body)
                .map(Detected::Stream)
                .ok_or(Miss::BadJson(err)),
        },
        Some(_) => {
            if !json_only && tap::looks_like(utf8_prefix(body)) {
                return Ok(Detected::Stream(Format::Tap));
            }
            classify_lines(body)
                .map(Detected::Stream)
                .ok_or(Miss::NoMatch)
        }
    }
}

/// The longest valid UTF-8 text within the first 64 KiB of `bytes` (enough to sniff TAP;
/// invalid bytes further on are reported by the parser, not here).
fn utf8_prefix(bytes: &[u8]) -> &str {
    let prefix = &bytes[..bytes.len().min(64 * 1024)];
    match std::str::from_utf8(prefix) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&prefix[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// The bytes after a UTF-8 byte-order mark (JSON parsers reject a BOM).
pub(crate) fn bytes_without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}
