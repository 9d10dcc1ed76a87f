//! libtest's JSON event stream: `cargo test -- -Z unstable-options --format json` (stable
//! with `RUSTC_BOOTSTRAP=1`) and cargo-nextest's `--message-format libtest-json`.
//!
//! Events, one JSON object per line: `{"type":"suite","event":"started","test_count":N}`,
//! `{"type":"test","event":"started"|"ok"|"failed"|"ignored"|"timeout","name":...}`,
//! `{"type":"suite","event":"ok"|"failed",...}`, `{"type":"bench",...}`.
//! `ok`/bench → Passed, `failed` → Failed, `ignored` → Skipped; `timeout` is only a warning
//! (the test is still running). A test that started but never finished is Interrupted.
//!
//! cargo test writes one suite per test binary with bare test names, so names can repeat
//! across binaries; ids are de-duplicated by suffix. nextest names tests
//! `binary-id$test::path` and marks retries with a `#N` attempt suffix (only the last attempt
//! of a retried test is reported); the suffix is stripped from the id, `retries` is `N - 1`
//! and a retried test that passed is flaky. nextest may also report one binary as several
//! suites (a retried failure is reported in a suite of its own, seen in
//! `fixtures/libtest-json/nextest.jsonl`), so the declared total takes, per binary, the
//! largest `test_count` of its suites; for cargo test it is the sum of every suite's
//! `test_count`. `test_count` is read strictly, and the declared total must equal the tests
//! the stream reports (an error otherwise, also when it reports none).
//!
//! Lines that are not JSON objects (a test printing with `--nocapture`) are ignored. A line
//! that starts with `{` but is not valid JSON, or repeats a key, is an error. The closing
//! event's counts (`passed`, `failed`, `ignored`, `measured`, `filtered_out`) are read
//! strictly. Runner errors: a suite that never finished, a suite that failed with no failed
//! test, a suite whose closing event counts more failures than its failed tests, tests that
//! never finished.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::count;
use super::error::ReportError;
use super::json;
use super::model::{Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{check_declared_failures, check_declared_total, json_duration, str_key};

/// Whether a JSON object is a libtest event.
pub(crate) fn is_event(object: &Map<String, Value>) -> bool {
    match str_key(object, "type") {
        Some("suite" | "test") => object.get("event").is_some_and(Value::is_string),
        Some("bench") => object.contains_key("name"),
        _ => false,
    }
}

struct Suite {
    test_count: Option<u64>,
    finished: bool,
    failed: bool,
    /// Failed test events within the suite.
    failed_tests: u64,
    /// The `failed` count of the suite's closing event.
    declared_failed: Option<u64>,
    /// nextest binary id of the suite's tests (the part before `$`).
    binary: Option<String>,
}

/// Splits a nextest name `binary$path#N` into (`binary$path`, binary, attempt).
fn split_name(name: &str) -> (&str, Option<&str>, u32) {
    let Some(dollar) = name.find('$') else {
        return (name, None, 1);
    };
    let binary = &name[..dollar];
    if let Some(hash) = name.rfind('#') {
        let digits = &name[hash + 1..];
        if hash > dollar && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let attempt = digits.parse().unwrap_or(1);
            return (&name[..hash], Some(binary), attempt);
        }
    }
    (name, Some(binary), 1)
}

/// Parses a libtest JSON stream.
pub(crate) fn parse(bytes: &[u8]) -> Result<TestReport, ReportError> {
    let format = Format::LibtestJson;
    let text = std::str::from_utf8(bytes).map_err(|e| ReportError::Utf8 {
        format: format.as_str(),
        offset: e.valid_up_to(),
    })?;
    let mut report = TestReport::empty(format);
    let mut suites: Vec<Suite> = Vec::new();
    // Test slots per suite-group: cargo test ids are scoped per suite, nextest ids globally.
    let mut index: HashMap<(Option<usize>, String), usize> = HashMap::new();
    let mut attempts: Vec<u32> = Vec::new();
    let mut nextest = false;
    let mut events = 0usize;

    for (line_no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !line.starts_with('{') {
            continue;
        }
        let value = json::parse(line.as_bytes(), Some(format), line_no)?;
        let Some(event) = value.as_object().filter(|o| is_event(o)) else {
            continue;
        };
        events += 1;
        let kind = str_key(event, "type").unwrap_or("");
        let action = str_key(event, "event").unwrap_or("");
        if kind == "suite" {
            match action {
                "started" => suites.push(Suite {
                    test_count: count::json(event.get("test_count"), format, || {
                        format!("`test_count` at line {}", line_no + 1)
                    })?,
                    finished: false,
                    failed: false,
                    failed_tests: 0,
                    declared_failed: None,
                    binary: None,
                }),
                "ok" | "failed" => {
                    // The closing event's counts are counts too: read strictly, and the
                    // failures it declares must show as failed tests.
                    let read = |key: &str| {
                        count::json(event.get(key), format, || {
                            format!("`{key}` at line {}", line_no + 1)
                        })
                    };
                    let declared_failed = read("failed")?;
                    for key in ["passed", "ignored", "measured", "filtered_out"] {
                        read(key)?;
                    }
                    if let Some(suite) = suites.last_mut() {
                        suite.finished = true;
                        suite.failed = action == "failed";
                        suite.declared_failed = declared_failed;
                    }
                }
                _ => {}
            }
            continue;
        }

        let Some(name) = str_key(event, "name") else {
            continue;
        };
        let (base, binary, attempt) = split_name(name);
        nextest |= binary.is_some();
        let current_suite = suites.len().checked_sub(1);
        if let (Some(s), Some(b)) = (current_suite, binary) {
            suites[s].binary.get_or_insert_with(|| b.to_string());
        }
        let scope = if binary.is_some() {
            None
        } else {
            current_suite
        };
        let slot = *index.entry((scope, base.to_string())).or_insert_with(|| {
            report.tests.push(TestCase::new(
                base.to_string(),
                base.to_string(),
                TestOutcome::Interrupted,
            ));
            attempts.push(attempt);
            report.tests.len() - 1
        });
        attempts[slot] = attempts[slot].max(attempt);
        let outcome = match (kind, action) {
            ("bench", _) | (_, "ok") => Some(TestOutcome::Passed),
            (_, "failed") => Some(TestOutcome::Failed),
            (_, "ignored") => Some(TestOutcome::Skipped),
            _ => None,
        };
        if let Some(outcome) = outcome {
            let test = &mut report.tests[slot];
            test.outcome = outcome;
            test.duration_ms = json_duration(event.get("exec_time"), 1000.0).or(test.duration_ms);
            if outcome == TestOutcome::Failed
                && let Some(s) = current_suite
            {
                suites[s].failed_tests += 1;
            }
        }
    }

    if events == 0 {
        return Err(ReportError::shape(
            format,
            "the stream has no libtest JSON events",
        ));
    }

    for (test, attempt) in report.tests.iter_mut().zip(&attempts) {
        if *attempt > 1 {
            test.retries = attempt - 1;
            test.flaky = test.outcome == TestOutcome::Passed;
        }
    }
    for (i, suite) in suites.iter().enumerate() {
        let label = suite
            .binary
            .as_deref()
            .map_or_else(|| format!("#{}", i + 1), str::to_string);
        if !suite.finished {
            report
                .runner_errors
                .push(format!("test suite {label} started but never finished"));
        } else if suite.failed && suite.failed_tests == 0 && !nextest {
            report
                .runner_errors
                .push(format!("test suite {label} failed without a failing test"));
        } else {
            check_declared_failures(
                &format!("test suite {label}"),
                suite.declared_failed,
                suite.failed_tests,
                &mut report.runner_errors,
            );
        }
    }
    report.flag_unfinished();

    let declared = declared_total(&suites, nextest)?;
    check_declared_total(
        format,
        "the suites' `test_count`",
        declared,
        report.tests.len(),
    )?;
    report.counts = TestCounts::tally(&report.tests);
    Ok(report)
}

/// The suites' own test count (see the module docs), `None` if any suite does not give one
/// or there are no suites.
fn declared_total(suites: &[Suite], nextest: bool) -> Result<Option<u64>, ReportError> {
    if suites.is_empty() {
        return Ok(None);
    }
    let format = Format::LibtestJson;
    let sum = || "the sum of the suites' `test_count`".to_owned();
    let mut total = 0u64;
    let mut per_binary: HashMap<&str, u64> = HashMap::new();
    for suite in suites {
        let Some(count) = suite.test_count else {
            return Ok(None);
        };
        match suite.binary.as_deref().filter(|_| nextest) {
            Some(binary) => {
                let max = per_binary.entry(binary).or_insert(0);
                *max = (*max).max(count);
            }
            None => total = count::add(total, count, format, sum)?,
        }
    }
    for n in per_binary.values() {
        total = count::add(total, *n, format, sum)?;
    }
    Ok(Some(total))
}
