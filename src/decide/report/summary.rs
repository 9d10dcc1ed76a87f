//! A JSON report that only gives totals: what a custom test script writes when it is not one
//! of the runner formats, e.g. `{"totalTests": 12, "failed": 0}`.
//!
//! TestCounts are read from the document's root object and from its `summary` and `stats`
//! objects, in four groups: the total ([`TOTAL_KEYS`]), failed, passed and skipped (and
//! todo). Every key of a group that is present, in any of the three places, must hold a
//! count (see [`super::count`]: `"12"`, `12.0`, `-1`, a list or a number above 2^53-1 makes
//! the document not a report, never a zero), and the keys of one group must agree
//! (`{"failed": 0, "failures": 3}` is refused). The existing Node.js implementation took the
//! first integer among the total keys and skipped the rest; here a total key that holds
//! something else is an error, because whichever one a reader picks, the report says two
//! things.
//!
//! A summary needs a total. The outcome counts may not add up to more than it; when `passed`
//! is given they must add up to it exactly; when it is not, the tests the other counts do not
//! account for passed ([`TestCounts::declared`]). So `{"totalTests": 5, "skipped": 5}` executed
//! nothing, and a summary that reports failures fails the provider even when its command
//! exited 0.
//!
//! It is sniffed last among the JSON documents: only a JSON object that is none of the
//! runner formats and has one of [`TOTAL_KEYS`] (of any type) in one of those three places
//! is a summary.

use serde_json::{Map, Value};

use super::count;
use super::error::ReportError;
use super::model::{DeclaredOutcomes, Format, TestCounts, TestReport};
use super::util::root_object;

/// The keys a summary's total may have.
pub(crate) const TOTAL_KEYS: [&str; 5] = [
    "numTotalTests",
    "totalTests",
    "tests",
    "testCount",
    "expected",
];
const FAILED_KEYS: [&str; 5] = [
    "numFailedTests",
    "failedTests",
    "failed",
    "failures",
    "unexpected",
];
const PASSED_KEYS: [&str; 4] = ["numPassedTests", "passedTests", "passed", "passes"];
const SKIPPED_KEYS: [&str; 4] = ["numPendingTests", "skippedTests", "skipped", "pending"];
const TODO_KEYS: [&str; 3] = ["numTodoTests", "todoTests", "todo"];

/// The objects counts are looked up in, with the prefix that names them: the root,
/// `summary`, `stats`.
fn places(root: &Map<String, Value>) -> impl Iterator<Item = (&'static str, &Map<String, Value>)> {
    std::iter::once(("", root)).chain(
        [("summary.", "summary"), ("stats.", "stats")]
            .into_iter()
            .filter_map(|(prefix, name)| {
                root.get(name)
                    .and_then(Value::as_object)
                    .map(|object| (prefix, object))
            }),
    )
}

/// Whether `root` looks like a summary: one of [`TOTAL_KEYS`], whatever its value, at the
/// root or in `summary` or `stats`.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    places(root).any(|(_, object)| TOTAL_KEYS.iter().any(|k| object.contains_key(*k)))
}

/// The one value of a group of keys: `None` when no key of the group is present anywhere;
/// an error when one holds something other than a count, or two disagree. Also returns the
/// name of the key it came from.
fn group(root: &Map<String, Value>, keys: &[&str]) -> Result<Option<(u64, String)>, ReportError> {
    let format = Format::Summary;
    let mut found: Option<(u64, String)> = None;
    for (prefix, object) in places(root) {
        for key in keys {
            let Some(n) = count::key(object, key, format, prefix)? else {
                continue;
            };
            let name = format!("`{prefix}{key}`");
            match &found {
                Some((first, first_name)) if *first != n => {
                    return Err(ReportError::ConflictingCounts {
                        format: format.as_str(),
                        first: first_name.clone(),
                        first_value: *first,
                        second: name,
                        second_value: n,
                    });
                }
                Some(_) => {}
                None => found = Some((n, name)),
            }
        }
    }
    Ok(found)
}

/// Parses a summary document.
pub(crate) fn parse(value: &Value) -> Result<TestReport, ReportError> {
    let format = Format::Summary;
    let root = root_object(value, format)?;
    let (total, declared_by) = group(root, &TOTAL_KEYS)?.ok_or_else(|| {
        ReportError::shape(
            format,
            "the document has none of `numTotalTests`, `totalTests`, `tests`, `testCount`, \
             `expected` at its root or under `summary` or `stats`",
        )
    })?;
    let value = |keys: &[&str]| group(root, keys).map(|g| g.map(|(n, _)| n));
    let outcomes = DeclaredOutcomes {
        passed: value(&PASSED_KEYS)?,
        failed: value(&FAILED_KEYS)?,
        skipped: value(&SKIPPED_KEYS)?,
        todo: value(&TODO_KEYS)?,
        ..DeclaredOutcomes::default()
    };
    let mut report = TestReport::empty(format);
    report.counts = TestCounts::declared(format, &declared_by, total, outcomes)?;
    Ok(report)
}
