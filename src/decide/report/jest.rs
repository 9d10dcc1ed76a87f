//! Jest (`jest --json`) and Vitest (`vitest --reporter=json`) reports. Vitest writes the
//! Jest-compatible shape, so one parser reads both; only the reported [`Format`] differs.
//!
//! Shape: `{numTotalTests, numPassedTests, numFailedTests, numPendingTests, numTodoTests,
//! testResults: [{name, status, message, assertionResults: [{ancestorTitles, title, status,
//! duration, invocations}]}]}`. A summary-only document (count keys, no `testResults`) is
//! valid and yields no tests; its counts must back `numTotalTests` ([`TestCounts::declared`]).
//! With `testResults`, `numTotalTests` must equal the assertions listed (an error otherwise,
//! also for an empty list). Every `num*Tests` key and `invocations` is read strictly.
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure) is its `failureMessages`
//! (each the assertion's message and its stack), one after the other.
//!
//! Runner errors: a test file that failed with no failing test (it failed to load, or a hook
//! failed), `numFailedTests` above the failed assertions, `wasInterrupted: true`, and
//! `success: false` with nothing failed.
//!
//! Telling them apart ([`is_vitest`]): Vitest writes a `meta` object on every assertion
//! result, and never writes the keys Jest always writes (`numRuntimeErrorTestSuites`,
//! `openHandles`, `wasInterrupted`). A document is Vitest when an assertion result has `meta`,
//! or when it has Vitest's `snapshot` summary but none of Jest's always-written keys
//! (Vitest's zero-test report). Everything else — including hand-written summaries — is Jest.

use serde_json::{Map, Value};

use super::count;
use super::error::ReportError;
use super::failure;
use super::model::{DeclaredOutcomes, Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{
    check_declared_failures, check_declared_total, first_line, join_id, json_duration, root_object,
    str_key,
};

/// Keys every Jest `--json` report has and no Vitest report has.
const JEST_ONLY_KEYS: [&str; 3] = ["numRuntimeErrorTestSuites", "openHandles", "wasInterrupted"];

/// Whether `root` looks like a Jest/Vitest report at all.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    root.contains_key("testResults") || root.contains_key("numTotalTests")
}

/// Whether a Jest-shaped document was written by Vitest (see the module docs).
pub(crate) fn is_vitest(root: &Map<String, Value>) -> bool {
    let has_meta = root
        .get("testResults")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|file| file.get("assertionResults").and_then(Value::as_array))
        .flatten()
        .any(|assertion| assertion.get("meta").is_some_and(Value::is_object));
    if has_meta {
        return true;
    }
    root.get("snapshot").is_some_and(Value::is_object)
        && !JEST_ONLY_KEYS.iter().any(|k| root.contains_key(*k))
}

/// Parses a Jest-shaped document as `format` ([`Format::Jest`] or [`Format::Vitest`]).
pub(crate) fn parse(value: &Value, format: Format) -> Result<TestReport, ReportError> {
    let root = root_object(value, format)?;
    let mut report = TestReport::empty(format);
    let declared = count::key(root, "numTotalTests", format, "")?;
    let outcomes = DeclaredOutcomes {
        passed: count::key(root, "numPassedTests", format, "")?,
        failed: count::key(root, "numFailedTests", format, "")?,
        skipped: count::key(root, "numPendingTests", format, "")?,
        todo: count::key(root, "numTodoTests", format, "")?,
        ..DeclaredOutcomes::default()
    };

    match (root.get("testResults"), declared) {
        (Some(Value::Array(files)), _) => {
            for (i, file) in files.iter().enumerate() {
                let file = file.as_object().ok_or_else(|| {
                    ReportError::shape(format, format!("`testResults[{i}]` is not an object"))
                })?;
                parse_file(file, i, format, &mut report)?;
            }
            check_declared_total(format, "`numTotalTests`", declared, report.tests.len())?;
            report.counts = TestCounts::tally(&report.tests);
            check_declared_failures(
                "`numFailedTests`",
                outcomes.failed,
                report.counts.failed,
                &mut report.runner_errors,
            );
        }
        (Some(_), _) => return Err(ReportError::shape(format, "`testResults` is not an array")),
        // A summary-only document: the totals are all there is.
        (None, Some(total)) => {
            report.counts = TestCounts::declared(format, "`numTotalTests`", total, outcomes)?;
        }
        (None, None) => {
            return Err(ReportError::shape(
                format,
                "the document has neither `testResults` nor `numTotalTests`",
            ));
        }
    }

    if root.get("wasInterrupted") == Some(&Value::Bool(true)) {
        report
            .runner_errors
            .push("the run was interrupted".to_string());
    }
    // `success: false` with nothing failed and nothing else wrong: a failure the report does
    // not attribute (coverage threshold, open handles, obsolete snapshots in CI, ...).
    if root.get("success") == Some(&Value::Bool(false))
        && report.runner_errors.is_empty()
        && report.counts.failed == 0
    {
        report
            .runner_errors
            .push("the runner reported `success: false` without a failing test".to_string());
    }
    Ok(report)
}

fn parse_file(
    file: &Map<String, Value>,
    index: usize,
    format: Format,
    report: &mut TestReport,
) -> Result<(), ReportError> {
    let name = str_key(file, "name").unwrap_or("");
    let assertions = match file.get("assertionResults") {
        None => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => {
            return Err(ReportError::shape(
                format,
                format!("`testResults[{index}].assertionResults` is not an array"),
            ));
        }
    };
    let mut any_failed = false;
    for (j, assertion) in assertions.iter().enumerate() {
        let assertion = assertion.as_object().ok_or_else(|| {
            ReportError::shape(
                format,
                format!("`testResults[{index}].assertionResults[{j}]` is not an object"),
            )
        })?;
        let test = parse_assertion(assertion, name, format, || {
            format!("`testResults[{index}].assertionResults[{j}].invocations`")
        })?;
        any_failed |= test.outcome == TestOutcome::Failed;
        report.tests.push(test);
    }

    // A test file that failed without any failing test failed to run (syntax error,
    // import error, hook failure): a runner error, not a test failure.
    let status = str_key(file, "status");
    if status == Some("failed") && !any_failed {
        let message = str_key(file, "failureMessage")
            .or_else(|| str_key(file, "message"))
            .map(first_line)
            .filter(|m| !m.is_empty() && m != "● Test suite failed to run")
            .or_else(|| str_key(file, "message").and_then(second_meaningful_line))
            .unwrap_or_else(|| "no message".to_string());
        let file_label = if name.is_empty() {
            format!("test file #{index}")
        } else {
            name.to_string()
        };
        report
            .runner_errors
            .push(format!("{file_label} failed to run: {message}"));
    }
    Ok(())
}

/// Jest's suite-failure message starts with a "● Test suite failed to run" heading; the
/// useful text is on the next non-empty line.
fn second_meaningful_line(message: &str) -> Option<String> {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .nth(1)
        .map(first_line)
}

fn parse_assertion(
    assertion: &Map<String, Value>,
    file: &str,
    format: Format,
    invocations_key: impl FnOnce() -> String,
) -> Result<TestCase, ReportError> {
    let title = str_key(assertion, "title").unwrap_or("").to_string();
    let ancestors: Vec<&str> = assertion
        .get("ancestorTitles")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let id = join_id(
        std::iter::once(file)
            .chain(ancestors)
            .chain(std::iter::once(title.as_str())),
    );
    let outcome = match str_key(assertion, "status") {
        Some("passed") => TestOutcome::Passed,
        Some("failed") => TestOutcome::Failed,
        Some("pending" | "skipped" | "disabled") => TestOutcome::Skipped,
        Some("todo") => TestOutcome::Todo,
        _ => TestOutcome::DidNotRun,
    };
    let mut test = TestCase::new(id, title, outcome);
    if outcome == TestOutcome::Failed {
        let messages: Vec<&str> = assertion
            .get("failureMessages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        test.failure = failure::message(&messages.join("\n\n"));
    }
    test.duration_ms = json_duration(assertion.get("duration"), 1.0);
    // Jest's `invocations` counts attempts under `jest.retryTimes`.
    let invocations = count::json(assertion.get("invocations"), format, invocations_key)?;
    if let Some(invocations) = invocations.filter(|n| *n > 1) {
        test.retries = u32::try_from(invocations - 1).unwrap_or(u32::MAX);
        test.flaky = outcome == TestOutcome::Passed;
    }
    Ok(test)
}
