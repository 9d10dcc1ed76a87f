//! Parsers for structured test reports: the evidence proofgraph reads to decide whether a
//! change's claims hold.
//!
//! [`parse`] turns a report's bytes into a format-independent [`Report`]; [`sniff`] only
//! detects the format. Supported: Jest, Vitest, Playwright and Mocha JSON, CTRF, JUnit XML
//! (pytest, cargo-nextest, Maven Surefire, gotestsum / go-junit-report), TAP 13/14,
//! `go test -json`, and libtest JSON (cargo test, nextest).
//!
//! Honesty guarantees (each has tests in `tests.rs`; the counting rules, for every format,
//! in the table of `strict_tests.rs`):
//! - **Counting is strict and total.** Every count goes through the `count` module: a non-negative
//!   integer of the format's type (a JSON integer; XML attribute or TAP plan digits) no
//!   larger than [`MAX_COUNT`] (2^53-1), or absent. A present count that is anything else —
//!   `"3"`, `3.0`, `-3`, `null`, `[3]`, `9007199254740992` — makes the report an `Err`, never
//!   a zero and never a key to skip; so no count a report yields can fail to encode in a
//!   receipt's canonical JSON. Numbers in output text are never counts.
//! - **No repeated keys.** Every JSON document and JSON line is read by the `json` module, which
//!   refuses an object naming a key twice (`{"failed": 3, "failed": 0}`); XML refuses a
//!   repeated attribute and TAP a second plan in one block ([`ReportError::DuplicateKey`]).
//! - **Declared totals are backed.** A total the report declares (`numTotalTests`,
//!   `stats.tests`, `results.summary.tests`, Playwright `stats`, JUnit `tests`, libtest
//!   `test_count`, a TAP plan) must equal the tests it lists — also when it lists none — and
//!   a report without a list must have outcome counts that add up to its total
//!   (`Counts::declared`); otherwise [`ReportError::Unbacked`].
//! - **One count model.** Every report has [`Counts`], tallied from its tests or built from
//!   its declared totals; [`Report::executed`] (passed + failed, a flaky test once) is what
//!   discovery counts, and a report in which nothing executed is for the judge never a pass.
//! - An empty, truncated, binary, oversized or unrecognised input is an `Err`: a missing or
//!   unreadable report is never a pass. No input makes the parsers panic.
//! - Failures that belong to no single test (suites that fail to load, pytest modules that
//!   fail to import, build failures, hook failures, `Bail out!`, declared failure counts
//!   above the listed failures, streams that end early) are reported in
//!   [`Report::runner_errors`].

mod count;
mod critical;
mod ctrf;
mod error;
mod go_test;
mod jest;
mod json;
mod junit;
mod libtest;
mod mocha;
mod model;
mod playwright;
mod sniff;
mod summary;
mod tap;
mod util;

#[cfg(test)]
mod strict_tests;
#[cfg(test)]
mod tests;

pub use count::MAX_COUNT;
pub use critical::{
    Finding as CriticalFinding, Row as CriticalRow, annotated_rows, check as check_critical,
    explicit_rows, test_rows,
};
pub use error::ReportError;
pub use model::{Annotation, Attachment, Counts, Declared, Format, Outcome, Report, TestCase};
pub use playwright::redact_inline_bodies;

/// Reports larger than this are refused (the caller should also bound what it reads).
pub const MAX_REPORT_BYTES: usize = 256 * 1024 * 1024;

/// Detects the format of a report without parsing it fully. See the `sniff` module docs for
/// the rules; Jest and Vitest are told apart by Vitest-only keys, Jest when in doubt.
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.len() > MAX_REPORT_BYTES {
        return None;
    }
    // As `parse` reads it: after a byte-order mark.
    sniff::detect(sniff::bytes_without_bom(bytes), false)
        .ok()
        .map(|d| d.format())
}

/// Parses a report. `declared` is what the configuration said: an exact format (the
/// document must have that format's shape), `"json"` (sniff among JSON formats) or
/// `"auto"` (sniff among all formats).
pub fn parse(bytes: &[u8], declared: Declared) -> Result<Report, ReportError> {
    if bytes.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            size: bytes.len(),
            limit: MAX_REPORT_BYTES,
        });
    }
    if sniff::trim_start(bytes).is_empty() {
        return Err(ReportError::Empty);
    }
    // A UTF-8 byte-order mark is not part of any format.
    let bytes = sniff::bytes_without_bom(bytes);
    let mut report = match declared {
        Declared::Exactly(format) => parse_as(format, bytes)?,
        Declared::AnyJson | Declared::Auto => {
            let json_only = declared == Declared::AnyJson;
            match sniff::detect(bytes, json_only) {
                Ok(sniff::Detected::Document(format, value)) => parse_value(format, &value)?,
                Ok(sniff::Detected::Stream(format)) => parse_as(format, bytes)?,
                Err(sniff::Miss::BadJson(err)) => return Err(err),
                Err(sniff::Miss::NoMatch) => {
                    return Err(ReportError::UnknownFormat {
                        reason: if json_only {
                            "the document matches none of the JSON report formats".to_string()
                        } else {
                            "the document matches none of the supported report formats".to_string()
                        },
                    });
                }
            }
        }
    };
    util::dedupe_ids(&mut report.tests);
    util::cap_runner_errors(&mut report.runner_errors);
    Ok(report)
}

/// Parses `bytes` as exactly `format`.
fn parse_as(format: Format, bytes: &[u8]) -> Result<Report, ReportError> {
    match format {
        Format::Junit => junit::parse(bytes),
        Format::Tap => tap::parse(bytes),
        Format::GoTestJson => go_test::parse(bytes),
        Format::LibtestJson => libtest::parse(bytes),
        Format::Jest
        | Format::Vitest
        | Format::Playwright
        | Format::Ctrf
        | Format::Mocha
        | Format::Summary => {
            let value = json::parse(sniff::bytes_without_bom(bytes), Some(format), 0)?;
            parse_value(format, &value)
        }
    }
}

/// Parses an already-parsed single JSON document as `format`.
fn parse_value(format: Format, value: &serde_json::Value) -> Result<Report, ReportError> {
    match format {
        Format::Jest | Format::Vitest => jest::parse(value, format),
        Format::Playwright => playwright::parse(value),
        Format::Ctrf => ctrf::parse(value),
        Format::Mocha => mocha::parse(value),
        Format::Summary => summary::parse(value),
        Format::Junit | Format::Tap | Format::GoTestJson | Format::LibtestJson => Err(
            ReportError::shape(format, "a single JSON document cannot hold this format"),
        ),
    }
}
