//! Helpers shared by the parsers: a JSON report's root object, durations, identity joining
//! and de-duplication, and the declared-versus-listed checks. TestCounts are read by
//! [`super::count`], never here.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::error::ReportError;
use super::model::{Format, TestCase};

/// Separator between the parts of a [`TestCase::id`].
pub(crate) const ID_SEPARATOR: &str = " > ";

/// A JSON report's root object, or the shape error every JSON format gives when the
/// document is something else.
pub(crate) fn root_object(
    value: &Value,
    format: Format,
) -> Result<&Map<String, Value>, ReportError> {
    value
        .as_object()
        .ok_or_else(|| ReportError::shape(format, "the document is not a JSON object"))
}

/// A duration in milliseconds from a finite, non-negative number of `unit_ms` milliseconds.
/// Durations are informational, so fractional values are rounded (counts never are).
pub(crate) fn duration_ms(value: f64, unit_ms: f64) -> Option<u64> {
    let ms = value * unit_ms;
    if (0.0..1.0e15).contains(&ms) {
        Some(ms.round() as u64)
    } else {
        None
    }
}

/// [`duration_ms`] of a JSON number.
pub(crate) fn json_duration(value: Option<&Value>, unit_ms: f64) -> Option<u64> {
    value
        .and_then(Value::as_f64)
        .and_then(|v| duration_ms(v, unit_ms))
}

/// The string at `object[key]`, if it is a string.
pub(crate) fn str_key<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

/// Joins the non-empty parts with [`ID_SEPARATOR`].
pub(crate) fn join_id<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut id = String::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        if !id.is_empty() {
            id.push_str(ID_SEPARATOR);
        }
        id.push_str(part);
    }
    id
}

/// Makes ids unique: the second and later occurrences of an id get `" [2]"`, `" [3]"`, ...
/// in report order, so the same report always yields the same ids.
pub(crate) fn dedupe_ids(tests: &mut [TestCase]) {
    let mut seen: HashSet<String> = tests.iter().map(|t| t.id.clone()).collect();
    if seen.len() == tests.len() {
        return;
    }
    let mut first: HashSet<String> = HashSet::new();
    let mut next_suffix: HashMap<String, u32> = HashMap::new();
    for test in tests.iter_mut() {
        if first.insert(test.id.clone()) {
            continue;
        }
        let n = next_suffix.entry(test.id.clone()).or_insert(1);
        // A literal "x [2]" id could already exist; keep counting until unique.
        let candidate = loop {
            *n += 1;
            let candidate = format!("{} [{}]", test.id, n);
            if !seen.contains(&candidate) {
                break candidate;
            }
        };
        seen.insert(candidate.clone());
        test.id = candidate;
    }
}

/// Checks a total the report declares against the tests it lists: they must be equal, also
/// when it lists none. A declared total the list does not back is
/// [`ReportError::Unbacked`]: which of the two is right is unknowable, so the report is not
/// evidence.
pub(crate) fn check_declared_total(
    format: Format,
    declared_by: &str,
    declared: Option<u64>,
    listed: usize,
) -> Result<(), ReportError> {
    let listed = listed as u64;
    match declared {
        Some(declared) if declared != listed => Err(ReportError::Unbacked {
            format: format.as_str(),
            declared_by: declared_by.to_owned(),
            declared,
            backed_by: "it lists",
            backed: listed,
        }),
        _ => Ok(()),
    }
}

/// Records a runner error when the report declares more failures than its listed tests show:
/// a failure it does not attribute to a test is still a failure. (Fewer is harmless: the
/// listed failures fail the run.)
pub(crate) fn check_declared_failures(
    declared_by: &str,
    declared: Option<u64>,
    listed: u64,
    runner_errors: &mut Vec<String>,
) {
    if let Some(declared) = declared.filter(|d| *d > listed) {
        runner_errors.push(format!(
            "{declared_by} counts {declared} failures but only {listed} listed tests failed"
        ));
    }
}

/// Shortens a multi-line message to its first non-empty line (at most 500 characters),
/// for runner-error strings.
pub(crate) fn first_line(message: &str) -> String {
    let line = message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line.chars().take(500).collect();
    if out.len() < line.len() {
        out.push('…');
    }
    out
}

/// At most this many distinct runner errors are kept; the rest are summarised in one line.
pub(crate) const MAX_RUNNER_ERRORS: usize = 200;

/// The line that stands for runner errors beyond [`MAX_RUNNER_ERRORS`].
const MORE_ERRORS: &str = "more runner errors were not recorded";

/// Appends `message` unless an identical runner error is already recorded, keeping at most
/// [`MAX_RUNNER_ERRORS`] (so the duplicate check stays cheap on hostile input).
pub(crate) fn push_unique(runner_errors: &mut Vec<String>, message: String) {
    if runner_errors.len() >= MAX_RUNNER_ERRORS {
        if runner_errors.last().is_none_or(|last| last != MORE_ERRORS) {
            runner_errors.push(MORE_ERRORS.to_string());
        }
        return;
    }
    if !runner_errors.contains(&message) {
        runner_errors.push(message);
    }
}

/// Applies the [`MAX_RUNNER_ERRORS`] cap to a finished list.
pub(crate) fn cap_runner_errors(runner_errors: &mut Vec<String>) {
    let capped = runner_errors.len() > MAX_RUNNER_ERRORS + 1
        || (runner_errors.len() == MAX_RUNNER_ERRORS + 1
            && runner_errors.last().is_none_or(|last| last != MORE_ERRORS));
    if capped {
        runner_errors.truncate(MAX_RUNNER_ERRORS);
        runner_errors.push(MORE_ERRORS.to_string());
    }
}
