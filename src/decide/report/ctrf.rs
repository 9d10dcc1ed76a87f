//! Common Test TestReport Format (CTRF) JSON, as written by `jest-ctrf-json-reporter`,
//! `mocha-ctrf-json-reporter`, `playwright-ctrf-json-reporter` and friends.
//!
//! Shape: `{results: {tool: {name}, summary: {tests, passed, failed, pending, skipped, other},
//! tests: [{name, status, duration, suite, filePath, rawStatus, retries, flaky}]}}`.
//! Status mapping: `passed` → Passed, `failed` → Failed, `skipped` / `pending` → Skipped,
//! `other` → Todo when `rawStatus` is `todo`, else DidNotRun.
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure): its `message` (unless the
//! `trace` repeats it, as Node.js stacks do), its `trace`, then its `stdout` and `stderr`
//! lines.
//!
//! The summary's counts and each test's `retries` are read strictly. With a `tests` list,
//! `summary.tests` must equal it (an error otherwise, also for an empty list) and
//! `summary.failed` above the failed tests is a runner error; without one, the summary's
//! outcome counts must back `summary.tests` (`other` counts as never run).

use serde_json::{Map, Value};

use super::count;
use super::error::ReportError;
use super::failure;
use super::model::{DeclaredOutcomes, Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{check_declared_failures, check_declared_total, join_id, json_duration, str_key};

/// Whether `root` looks like a CTRF report.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    let results = root.get("results").and_then(Value::as_object);
    results.is_some_and(|r| {
        r.get("tool").is_some_and(Value::is_object)
            && r.get("summary").is_some_and(Value::is_object)
    }) || (root.get("reportFormat").and_then(Value::as_str) == Some("CTRF") && results.is_some())
}

/// Parses a CTRF report.
pub(crate) fn parse(value: &Value) -> Result<TestReport, ReportError> {
    let format = Format::Ctrf;
    let results = value
        .get("results")
        .and_then(Value::as_object)
        .ok_or_else(|| ReportError::shape(format, "the document has no `results` object"))?;
    let summary = results.get("summary").and_then(Value::as_object);
    let mut report = TestReport::empty(format);
    let (declared, outcomes) = match summary {
        Some(s) => {
            let read = |key: &str| count::key(s, key, format, "results.summary.");
            let skipped = match (read("skipped")?, read("pending")?) {
                (None, None) => None,
                (a, b) => Some(count::add(a.unwrap_or(0), b.unwrap_or(0), format, || {
                    "`results.summary.skipped` + `results.summary.pending`".to_owned()
                })?),
            };
            let outcomes = DeclaredOutcomes {
                passed: read("passed")?,
                failed: read("failed")?,
                skipped,
                did_not_run: read("other")?,
                ..DeclaredOutcomes::default()
            };
            (read("tests")?, outcomes)
        }
        None => (None, DeclaredOutcomes::default()),
    };

    match (results.get("tests"), declared) {
        (Some(Value::Array(tests)), _) => {
            for (i, test) in tests.iter().enumerate() {
                let test = test.as_object().ok_or_else(|| {
                    ReportError::shape(format, format!("`results.tests[{i}]` is not an object"))
                })?;
                report.tests.push(parse_test(test, i)?);
            }
            check_declared_total(
                format,
                "`results.summary.tests`",
                declared,
                report.tests.len(),
            )?;
            report.counts = TestCounts::tally(&report.tests);
            check_declared_failures(
                "`results.summary.failed`",
                outcomes.failed,
                report.counts.failed,
                &mut report.runner_errors,
            );
        }
        (Some(_), _) => {
            return Err(ReportError::shape(
                format,
                "`results.tests` is not an array",
            ));
        }
        (None, Some(total)) => {
            report.counts =
                TestCounts::declared(format, "`results.summary.tests`", total, outcomes)?;
        }
        (None, None) => {
            return Err(ReportError::shape(
                format,
                "`results` has neither `tests` nor a `summary.tests` count",
            ));
        }
    }
    Ok(report)
}

/// What a failed CTRF test carries (see the module docs).
fn failure_text(test: &Map<String, Value>) -> Option<String> {
    let message = str_key(test, "message").unwrap_or("").trim_end();
    let trace = str_key(test, "trace").unwrap_or("").trim_end();
    let mut parts: Vec<String> = Vec::new();
    // Reporters write the error's name before its message (`AssertionError Expected …`)
    // or not; the trace repeats it either way in Node.js.
    let repeated = |m: &str| !m.is_empty() && trace.contains(m);
    let without_name = message
        .trim()
        .split_once(' ')
        .map_or("", |(_, rest)| rest.trim());
    if !message.trim().is_empty() && !repeated(message.trim()) && !repeated(without_name) {
        parts.push(message.to_owned());
    }
    if !trace.trim().is_empty() {
        parts.push(trace.to_owned());
    }
    for (key, heading) in [("stdout", "--- stdout"), ("stderr", "--- stderr")] {
        let lines: Vec<&str> = test
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !lines.is_empty() {
            parts.push(heading.to_owned());
            parts.push(lines.join("\n"));
        }
    }
    failure::message(&parts.join("\n"))
}

fn parse_test(test: &Map<String, Value>, index: usize) -> Result<TestCase, ReportError> {
    let name = str_key(test, "name").unwrap_or("");
    let file = str_key(test, "filePath").unwrap_or("");
    let id = if file.is_empty() {
        join_id([str_key(test, "suite").unwrap_or(""), name])
    } else {
        join_id([file, name])
    };
    let outcome = match str_key(test, "status") {
        Some("passed") => TestOutcome::Passed,
        Some("failed") => TestOutcome::Failed,
        Some("skipped" | "pending") => TestOutcome::Skipped,
        Some("other") if str_key(test, "rawStatus") == Some("todo") => TestOutcome::Todo,
        _ => TestOutcome::DidNotRun,
    };
    let mut case = TestCase::new(id, name.to_string(), outcome);
    if outcome == TestOutcome::Failed {
        case.failure = failure_text(test);
    }
    case.duration_ms = json_duration(test.get("duration"), 1.0);
    let retries = count::json(test.get("retries"), Format::Ctrf, || {
        format!("`results.tests[{index}].retries`")
    })?;
    case.retries = retries.map_or(0, |r| u32::try_from(r).unwrap_or(u32::MAX));
    case.flaky = outcome == TestOutcome::Passed && test.get("flaky") == Some(&Value::Bool(true));
    Ok(case)
}
