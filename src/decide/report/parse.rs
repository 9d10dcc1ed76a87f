//! From a report's bytes to a [`TestReport`]: the size and emptiness checks every format
//! shares, the format declared or sniffed, and the parser for that format.

use super::sniff as detect;
use super::{
    Declared, Format, ReportError, TestReport, ctrf, go_test, jest, json, junit, libtest, mocha,
    playwright, summary, tap, util,
};

/// Reports larger than this are refused (the caller should also bound what it reads).
pub const MAX_REPORT_BYTES: usize = 256 * 1024 * 1024;

/// Detects the format of a report without parsing it fully. See the `sniff` module docs for
/// the rules; Jest and Vitest are told apart by Vitest-only keys, Jest when in doubt.
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.len() > MAX_REPORT_BYTES {
        return None;
    }
    // As `parse` reads it: after a byte-order mark.
    detect::detect(detect::bytes_without_bom(bytes), false)
        .ok()
        .map(|d| d.format())
}

/// Parses a report. `declared` is what the configuration said: an exact format (the
/// document must have that format's shape), `"json"` (sniff among JSON formats) or
/// `"auto"` (sniff among all formats).
pub fn parse(bytes: &[u8], declared: Declared) -> Result<TestReport, ReportError> {
    parse_with(bytes, declared, &[])
}

/// [`parse`], with the names of cargo test's suites as the command announced them beside
/// its report ([`super::cargo_suites`] of its log): a libtest stream from cargo test names
/// no test binary, and only these tell its tests apart.
pub fn parse_with(
    bytes: &[u8],
    declared: Declared,
    cargo_suites: &[String],
) -> Result<TestReport, ReportError> {
    if bytes.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            size: bytes.len(),
            limit: MAX_REPORT_BYTES,
        });
    }
    if detect::trim_start(bytes).is_empty() {
        return Err(ReportError::Empty);
    }
    // A UTF-8 byte-order mark is not part of any format.
    let bytes = detect::bytes_without_bom(bytes);
    let mut report = match declared {
        Declared::Exactly(format) => parse_as(format, bytes, cargo_suites)?,
        Declared::AnyJson | Declared::Auto => {
            let json_only = declared == Declared::AnyJson;
            match detect::detect(bytes, json_only) {
                Ok(detect::Detected::Document(format, value)) => parse_value(format, &value)?,
                Ok(detect::Detected::Stream(format)) => parse_as(format, bytes, cargo_suites)?,
                Err(detect::Miss::BadJson(err)) => return Err(err),
                Err(detect::Miss::NoMatch) => {
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
fn parse_as(
    format: Format,
    bytes: &[u8],
    cargo_suites: &[String],
) -> Result<TestReport, ReportError> {
    match format {
        Format::Junit => junit::parse(bytes),
        Format::Tap => tap::parse(bytes),
        Format::GoTestJson => go_test::parse(bytes),
        Format::LibtestJson => libtest::parse(bytes, cargo_suites),
        Format::Jest
        | Format::Vitest
        | Format::Playwright
        | Format::Ctrf
        | Format::Mocha
        | Format::Summary => {
            let value = json::parse(detect::bytes_without_bom(bytes), Some(format), 0)?;
            parse_value(format, &value)
        }
    }
}

/// Parses an already-parsed single JSON document as `format`.
fn parse_value(format: Format, value: &serde_json::Value) -> Result<TestReport, ReportError> {
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
