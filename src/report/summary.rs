//! A JSON report that only gives totals: what a custom test script writes when it is not one
//! of the runner formats, e.g. `{"totalTests": 12, "failed": 0}`.
//!
//! The test count is the first non-negative JSON integer among [`TOTAL_KEYS`], looked up in
//! the document's root object, then in its `summary` object, then in its `stats` object (the
//! rule of the existing Node.js implementation). A value of another type — `"12"`, `12.0`,
//! `-1`, an array — is never coerced: it is skipped, and a summary where nothing counts is
//! refused as a report (so its suite is not a pass and its discovery is inconclusive). The
//! failed, passed and skipped totals are read the same way from the object that gave the
//! total, so a summary that reports failures fails the provider even when its command
//! exited 0.
//!
//! It is sniffed last among the JSON documents: only a JSON object that is none of the
//! runner formats and has one of [`TOTAL_KEYS`] (of any type) in one of those three places
//! is a summary.

use serde_json::{Map, Value};

use super::error::ReportError;
use super::model::{Counts, Format, Report};
use super::util::{count_key, root_object};

/// The keys a summary's total may have, in the order they are tried.
pub(crate) const TOTAL_KEYS: [&str; 5] = [
    "numTotalTests",
    "totalTests",
    "tests",
    "testCount",
    "expected",
];
const FAILED_KEYS: [&str; 4] = ["numFailedTests", "failedTests", "failed", "failures"];
const PASSED_KEYS: [&str; 4] = ["numPassedTests", "passedTests", "passed", "passes"];
const SKIPPED_KEYS: [&str; 4] = ["numPendingTests", "skippedTests", "skipped", "pending"];

/// The objects a total is looked up in, in order: the root, `summary`, `stats`.
fn places(root: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    std::iter::once(root).chain(
        ["summary", "stats"]
            .into_iter()
            .filter_map(|name| root.get(name).and_then(Value::as_object)),
    )
}

/// Whether `root` looks like a summary: one of [`TOTAL_KEYS`], whatever its value, at the
/// root or in `summary` or `stats`.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    places(root).any(|object| TOTAL_KEYS.iter().any(|k| object.contains_key(*k)))
}

/// The first non-negative integer among `keys` in `object`.
fn first_count(object: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| count_key(object, k))
}

/// Parses a summary document.
pub(crate) fn parse(value: &Value) -> Result<Report, ReportError> {
    let format = Format::Summary;
    let root = root_object(value, format)?;
    if !looks_like(root) {
        return Err(ReportError::shape(
            format,
            "the document has none of `numTotalTests`, `totalTests`, `tests`, `testCount`, \
             `expected` at its root or under `summary` or `stats`",
        ));
    }
    let (object, total) = places(root)
        .find_map(|object| first_count(object, &TOTAL_KEYS).map(|total| (object, total)))
        .ok_or_else(|| {
            // Without a count it says nothing that can be trusted, whatever else it holds
            // (a list of tests in an unknown shape, failures): not a report, never a pass.
            ReportError::shape(
                format,
                "none of its total keys holds a non-negative integer (strings, floats and \
                 lists are never read as counts)",
            )
        })?;
    let mut report = Report::empty(format);
    report.discovered = Some(total);
    report.counts = Some(Counts {
        total,
        passed: first_count(object, &PASSED_KEYS).unwrap_or(0),
        failed: first_count(object, &FAILED_KEYS).unwrap_or(0),
        skipped: first_count(object, &SKIPPED_KEYS).unwrap_or(0),
        ..Counts::default()
    });
    Ok(report)
}
