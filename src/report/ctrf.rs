//! Common Test Report Format (CTRF) JSON, as written by `jest-ctrf-json-reporter`,
//! `mocha-ctrf-json-reporter`, `playwright-ctrf-json-reporter` and friends.
//!
//! Shape: `{results: {tool: {name}, summary: {tests, passed, failed, pending, skipped, other},
//! tests: [{name, status, duration, suite, filePath, rawStatus, retries, flaky}]}}`.
//! Status mapping: `passed` → Passed, `failed` → Failed, `skipped` / `pending` → Skipped,
//! `other` → Todo when `rawStatus` is `todo`, else DidNotRun.

use serde_json::{Map, Value};

use super::error::ReportError;
use super::model::{Counts, Format, Outcome, Report, TestCase};
use super::util::{check_declared_total, count_key, join_id, json_duration, str_key};

/// Whether `root` looks like a CTRF report.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    let results = root.get("results").and_then(Value::as_object);
    results.is_some_and(|r| {
        r.get("tool").is_some_and(Value::is_object)
            && r.get("summary").is_some_and(Value::is_object)
    }) || (root.get("reportFormat").and_then(Value::as_str) == Some("CTRF") && results.is_some())
}

/// Parses a CTRF report.
pub(crate) fn parse(value: &Value) -> Result<Report, ReportError> {
    let format = Format::Ctrf;
    let results = value
        .get("results")
        .and_then(Value::as_object)
        .ok_or_else(|| ReportError::shape(format, "the document has no `results` object"))?;
    let summary = results.get("summary").and_then(Value::as_object);
    if summary.is_none() && !results.contains_key("tests") {
        return Err(ReportError::shape(
            format,
            "`results` has neither `summary` nor `tests`",
        ));
    }
    let mut report = Report::empty(format);
    let declared = summary.and_then(|s| count_key(s, "tests"));

    match results.get("tests") {
        None => {
            report.discovered = declared;
            report.counts = match (declared, summary) {
                (Some(total), Some(s)) => Some(Counts {
                    total,
                    passed: count_key(s, "passed").unwrap_or(0),
                    failed: count_key(s, "failed").unwrap_or(0),
                    skipped: count_key(s, "skipped")
                        .unwrap_or(0)
                        .saturating_add(count_key(s, "pending").unwrap_or(0)),
                    ..Counts::default()
                }),
                _ => None,
            };
        }
        Some(Value::Array(tests)) => {
            for (i, test) in tests.iter().enumerate() {
                let test = test.as_object().ok_or_else(|| {
                    ReportError::shape(format, format!("`results.tests[{i}]` is not an object"))
                })?;
                report.tests.push(parse_test(test));
            }
            report.discovered = declared.or(Some(report.tests.len() as u64));
            report.counts = Some(Counts::tally(&report.tests));
            check_declared_total(declared, &report.tests, &mut report.runner_errors);
        }
        Some(_) => {
            return Err(ReportError::shape(
                format,
                "`results.tests` is not an array",
            ));
        }
    }
    Ok(report)
}

fn parse_test(test: &Map<String, Value>) -> TestCase {
    let name = str_key(test, "name").unwrap_or("");
    let file = str_key(test, "filePath").unwrap_or("");
    let id = if file.is_empty() {
        join_id([str_key(test, "suite").unwrap_or(""), name])
    } else {
        join_id([file, name])
    };
    let outcome = match str_key(test, "status") {
        Some("passed") => Outcome::Passed,
        Some("failed") => Outcome::Failed,
        Some("skipped" | "pending") => Outcome::Skipped,
        Some("other") if str_key(test, "rawStatus") == Some("todo") => Outcome::Todo,
        _ => Outcome::DidNotRun,
    };
    let mut case = TestCase::new(id, name.to_string(), outcome);
    case.duration_ms = json_duration(test.get("duration"), 1.0);
    case.retries = count_key(test, "retries").map_or(0, |r| u32::try_from(r).unwrap_or(u32::MAX));
    case.flaky = outcome == Outcome::Passed && test.get("flaky") == Some(&Value::Bool(true));
    case
}
