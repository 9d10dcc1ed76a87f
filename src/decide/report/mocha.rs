//! Mocha's `json` reporter.
//!
//! Shape: `{stats: {tests, passes, pending, failures}, tests: [...], passes: [...],
//! pending: [...], failures: [...]}`, each entry `{title, fullTitle, file, duration,
//! currentRetry, err}`. `tests` lists every test; a test's outcome is found by looking it up
//! (by file and full title) in `failures`, then `pending`, then `passes`. A `failures` entry
//! that is not a listed test is a hook failure (`"before all" hook ...`): a runner error.
//! Mocha has no separate todo state: pending tests (`it.skip`, `it('no body')`) are Skipped.
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure) is its `err`: the `stack`
//! (which starts with the message in Node.js), or the `message` and the `stack`.
//!
//! `stats` counts and `currentRetry` are read strictly. With test lists, `stats.tests` must
//! equal the listed tests (an error otherwise, also for none) and `stats.failures` above the
//! failed tests plus hook failures is a runner error; with `stats` alone, its outcome counts
//! must back `stats.tests`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::count;
use super::error::ReportError;
use super::failure;
use super::model::{DeclaredOutcomes, Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{
    check_declared_failures, check_declared_total, first_line, join_id, json_duration, root_object,
    str_key,
};

const LISTS: [&str; 4] = ["tests", "passes", "failures", "pending"];

/// Whether `root` looks like a Mocha JSON report.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    root.get("stats").is_some_and(Value::is_object)
        && LISTS
            .iter()
            .any(|k| root.get(*k).is_some_and(Value::is_array))
}

type Key<'a> = (&'a str, &'a str);

fn key(entry: &Map<String, Value>) -> Key<'_> {
    (
        str_key(entry, "file").unwrap_or(""),
        str_key(entry, "fullTitle").unwrap_or(""),
    )
}

fn list<'a>(
    root: &'a Map<String, Value>,
    name: &str,
) -> Result<Vec<&'a Map<String, Value>>, ReportError> {
    match root.get(name) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_object().ok_or_else(|| {
                    ReportError::shape(Format::Mocha, format!("`{name}[{i}]` is not an object"))
                })
            })
            .collect(),
        Some(_) => Err(ReportError::shape(
            Format::Mocha,
            format!("`{name}` is not an array"),
        )),
    }
}

/// What an `err` object says: its `stack` when that starts with its `message` (as Node.js
/// writes it), else the message and then the stack.
fn error_text(err: &Value) -> Option<String> {
    let message = err.get("message").and_then(Value::as_str).unwrap_or("");
    let stack = err.get("stack").and_then(Value::as_str).unwrap_or("");
    let text = if message.trim().is_empty() || stack.contains(message.trim()) {
        stack.to_owned()
    } else if stack.trim().is_empty() {
        message.to_owned()
    } else {
        format!("{message}\n{stack}")
    };
    failure::message(&text)
}

/// Parses a Mocha JSON report.
pub(crate) fn parse(value: &Value) -> Result<TestReport, ReportError> {
    let format = Format::Mocha;
    let root = root_object(value, format)?;
    let stats = root.get("stats").and_then(Value::as_object);
    if stats.is_none() && !LISTS.iter().any(|k| root.contains_key(*k)) {
        return Err(ReportError::shape(
            format,
            "the document has neither `stats` nor test lists",
        ));
    }
    let tests = list(root, "tests")?;
    let passes = list(root, "passes")?;
    let failures = list(root, "failures")?;
    let pending = list(root, "pending")?;

    let failed: HashSet<Key<'_>> = failures.iter().map(|e| key(e)).collect();
    let errors: std::collections::HashMap<Key<'_>, &Value> = failures
        .iter()
        .filter_map(|e| Some((key(e), e.get("err")?)))
        .collect();
    let skipped: HashSet<Key<'_>> = pending.iter().map(|e| key(e)).collect();
    let passed: HashSet<Key<'_>> = passes.iter().map(|e| key(e)).collect();

    // Without a `tests` list (some reporters omit it), the outcome lists are the tests.
    let has_list = root.contains_key("tests");
    let entries: Vec<&Map<String, Value>> = if has_list {
        tests
    } else {
        passes
            .iter()
            .chain(&failures)
            .chain(&pending)
            .copied()
            .collect()
    };
    let listed: HashSet<Key<'_>> = entries.iter().map(|e| key(e)).collect();

    let mut report = TestReport::empty(format);
    for (i, entry) in entries.iter().enumerate() {
        let k = key(entry);
        let outcome = if failed.contains(&k) {
            TestOutcome::Failed
        } else if skipped.contains(&k) {
            TestOutcome::Skipped
        } else if passed.contains(&k) {
            TestOutcome::Passed
        } else {
            TestOutcome::DidNotRun
        };
        let title = str_key(entry, "title").unwrap_or("");
        let mut test = TestCase::new(join_id([k.0, k.1]), title.to_string(), outcome);
        if outcome == TestOutcome::Failed {
            test.failure = errors
                .get(&k)
                .copied()
                .or_else(|| entry.get("err"))
                .and_then(error_text);
        }
        test.duration_ms = json_duration(entry.get("duration"), 1.0);
        let retry = count::json(entry.get("currentRetry"), format, || {
            if has_list {
                format!("`tests[{i}].currentRetry`")
            } else {
                format!("`currentRetry` of test {}", join_id([k.0, k.1]))
            }
        })?;
        if let Some(retry) = retry.filter(|r| *r > 0) {
            test.retries = u32::try_from(retry).unwrap_or(u32::MAX);
            test.flaky = outcome == TestOutcome::Passed;
        }
        report.tests.push(test);
    }

    let mut hook_failures = 0u64;
    for failure in &failures {
        let k = key(failure);
        if listed.contains(&k) {
            continue;
        }
        hook_failures += 1;
        let message = failure
            .get("err")
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .map(first_line)
            .unwrap_or_default();
        let label = join_id([k.0, k.1]);
        report.runner_errors.push(if message.is_empty() {
            format!("{label} failed")
        } else {
            format!("{label} failed: {message}")
        });
    }

    let read = |name: &str| match stats {
        Some(s) => count::key(s, name, format, "stats."),
        None => Ok(None),
    };
    let declared = read("tests")?;
    let outcomes = DeclaredOutcomes {
        passed: read("passes")?,
        failed: read("failures")?,
        skipped: read("pending")?,
        ..DeclaredOutcomes::default()
    };
    if LISTS.iter().any(|k| root.contains_key(*k)) {
        check_declared_total(format, "`stats.tests`", declared, report.tests.len())?;
        report.counts = TestCounts::tally(&report.tests);
        // Mocha counts a failed hook among `stats.failures`; it is a runner error above.
        check_declared_failures(
            "`stats.failures`",
            outcomes.failed,
            report.counts.failed.saturating_add(hook_failures),
            &mut report.runner_errors,
        );
    } else {
        let total = declared.ok_or_else(|| {
            ReportError::shape(
                format,
                "the document lists no tests and has no `stats.tests` count",
            )
        })?;
        report.counts = TestCounts::declared(format, "`stats.tests`", total, outcomes)?;
    }
    Ok(report)
}
