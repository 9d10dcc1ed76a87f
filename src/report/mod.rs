//! Parsers for structured test reports: the evidence proofgraph reads to decide whether a
//! change's claims hold.
//!
//! [`parse`] turns a report's bytes into a format-independent [`Report`]; [`sniff`] only
//! detects the format. Supported: Jest, Vitest, Playwright and Mocha JSON, CTRF, JUnit XML
//! (pytest, cargo-nextest, Maven Surefire, gotestsum / go-junit-report), TAP 13/14,
//! `go test -json`, and libtest JSON (cargo test, nextest).
//!
//! Honesty guarantees (each has tests in `tests.rs`):
//! - Counts come only from JSON integers / all-digit XML attributes, or from counting parsed
//!   tests. A string `"5"`, a float `5.0`, a negative number, an array, or numbers in output
//!   text are never counts; a report with no count and no test list has `discovered: None`.
//! - An empty, truncated, binary, oversized or unrecognised input is an `Err`: a missing or
//!   unreadable report is never a pass. No input makes the parsers panic.
//! - Failures that belong to no single test (suites that fail to load, build failures, hook
//!   failures, `Bail out!`, declared totals that disagree with the listed tests, streams that
//!   end early) are reported in [`Report::runner_errors`].

mod critical;
mod ctrf;
mod error;
mod go_test;
mod jest;
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
mod tests;

pub use critical::{
    Finding as CriticalFinding, Row as CriticalRow, annotated_rows, check as check_critical,
    explicit_rows, test_rows,
};
pub use error::ReportError;
pub use model::{Annotation, Attachment, Counts, Declared, Format, Outcome, Report, TestCase};

/// Reports larger than this are refused (the caller should also bound what it reads).
pub const MAX_REPORT_BYTES: usize = 256 * 1024 * 1024;

/// The largest count a report may give: 2^53 - 1, the largest integer a receipt (canonical
/// JSON, RFC 8785) carries exactly. A report that counts more is refused, not rounded.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

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
                Err(sniff::Miss::BadJson(err)) => return Err(ReportError::json("report", &err, 0)),
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
    let counts = report.counts.unwrap_or_default();
    let largest = [
        report.discovered.unwrap_or(0),
        counts.total,
        counts.passed,
        counts.failed,
        counts.skipped,
        counts.todo,
        counts.flaky,
        counts.interrupted,
        counts.did_not_run,
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    if largest > MAX_COUNT {
        return Err(ReportError::shape(
            report.format,
            format!("it counts {largest} tests, more than 2^53 - 1 (the most a receipt holds)"),
        ));
    }
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
            let value: serde_json::Value = serde_json::from_slice(sniff::bytes_without_bom(bytes))
                .map_err(|e| ReportError::json(format.as_str(), &e, 0))?;
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
