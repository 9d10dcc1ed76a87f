//! `go test -json` event streams (test2json): one JSON object per line,
//! `{Time, Action, Package, Test?, Elapsed?, Output?}`.
//!
//! Every test that gets a `run` (or any event) is a test, subtests (`TestX/sub`) included,
//! and so are their parents — the way gotestsum and go-junit-report count. TestOutcome from the
//! test's last terminal action: `pass` → Passed, `fail` → Failed, `skip` → Skipped; a test
//! with no terminal action is Interrupted (binary panicked, timed out, or stream cut off).
//!
//! Runner errors: a package-level `fail` with no failed test in it (build failure, `TestMain`
//! failure, panic outside a test); Go 1.24+ `build-fail` events; a package with events but no
//! package-level result (stream cut off); tests that never finished; and any stdout line that
//! is not JSON — before Go 1.24, `go test -json` reports a build failure only as a plain
//! `FAIL\tpkg [build failed]` line (see `fixtures/go-test-json/build-failure.jsonl`).
//! A line that starts with `{` but is not a valid JSON object, or repeats a key, is an error
//! (corrupt or cut off mid-line). The format declares no count: tests are counted from events.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::error::ReportError;
use super::json;
use super::model::{Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{first_line, join_id, json_duration, push_unique, str_key};

/// At most this many non-JSON lines are copied into runner errors.
const MAX_NOISE_LINES: usize = 20;

/// Whether a JSON object is a test2json event.
pub(crate) fn is_event(object: &Map<String, Value>) -> bool {
    object.get("Action").is_some_and(Value::is_string)
        && ["Package", "ImportPath", "Time", "Test"]
            .iter()
            .any(|k| object.contains_key(*k))
}

#[derive(Default)]
struct Package {
    /// `Some(true)` once a package-level `fail` is seen, `Some(false)` for `pass`/`skip`.
    failed: Option<bool>,
    /// Last package-level output line (e.g. `FAIL\tpkg\t0.01s` or a panic message).
    last_output: Option<String>,
}

/// Parses a `go test -json` stream.
pub(crate) fn parse(bytes: &[u8]) -> Result<TestReport, ReportError> {
    let format = Format::GoTestJson;
    let text = std::str::from_utf8(bytes).map_err(|e| ReportError::Utf8 {
        format: format.as_str(),
        offset: e.valid_up_to(),
    })?;
    let mut report = TestReport::empty(format);
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut packages: Vec<(String, Package)> = Vec::new();
    let mut package_index: HashMap<String, usize> = HashMap::new();
    let mut events = 0usize;
    let mut noise = Vec::new();
    let mut noise_total = 0usize;
    // The package slot of each test, parallel to `report.tests`.
    let mut test_package: Vec<usize> = Vec::new();

    for (line_no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if !line.starts_with('{') {
            noise_total += 1;
            if noise.len() < MAX_NOISE_LINES {
                noise.push(first_line(line));
            }
            continue;
        }
        let value = json::parse(line.as_bytes(), Some(format), line_no)?;
        let Some(event) = value.as_object().filter(|o| is_event(o)) else {
            return Err(ReportError::shape(
                format,
                format!("line {} is JSON but not a go test event", line_no + 1),
            ));
        };
        events += 1;
        let action = str_key(event, "Action").unwrap_or("");
        let package = str_key(event, "Package")
            .or_else(|| str_key(event, "ImportPath"))
            .unwrap_or("")
            .to_string();

        if action == "build-fail" {
            push_unique(
                &mut report.runner_errors,
                format!("package {package} failed to build"),
            );
            continue;
        }
        if action == "build-output" {
            continue;
        }

        let pkg_slot = *package_index.entry(package.clone()).or_insert_with(|| {
            packages.push((package.clone(), Package::default()));
            packages.len() - 1
        });

        match str_key(event, "Test") {
            None => {
                let pkg = &mut packages[pkg_slot].1;
                match action {
                    "fail" => pkg.failed = Some(true),
                    "pass" | "skip" => pkg.failed = Some(false),
                    "output" => {
                        if let Some(out) = str_key(event, "Output")
                            .map(first_line)
                            .filter(|o| !o.is_empty())
                        {
                            pkg.last_output = Some(out);
                        }
                    }
                    _ => {}
                }
            }
            Some(test_name) => {
                let key = (package.clone(), test_name.to_string());
                let slot = *index.entry(key).or_insert_with(|| {
                    let id = join_id([package.as_str(), test_name]);
                    report.tests.push(TestCase::new(
                        id,
                        test_name.to_string(),
                        TestOutcome::Interrupted,
                    ));
                    test_package.push(pkg_slot);
                    report.tests.len() - 1
                });
                let test = &mut report.tests[slot];
                let outcome = match action {
                    "pass" | "bench" => Some(TestOutcome::Passed),
                    "fail" => Some(TestOutcome::Failed),
                    "skip" => Some(TestOutcome::Skipped),
                    _ => None,
                };
                if let Some(outcome) = outcome {
                    test.outcome = outcome;
                    test.duration_ms =
                        json_duration(event.get("Elapsed"), 1000.0).or(test.duration_ms);
                }
            }
        }
    }

    if events == 0 {
        return Err(ReportError::shape(
            format,
            "the stream has no go test JSON events",
        ));
    }
    for line in noise {
        push_unique(
            &mut report.runner_errors,
            format!("go test printed a non-JSON line: {line}"),
        );
    }
    if noise_total > MAX_NOISE_LINES {
        report.runner_errors.push(format!(
            "go test printed {} more non-JSON lines",
            noise_total - MAX_NOISE_LINES
        ));
    }

    let mut package_has_failed_test = vec![false; packages.len()];
    for (test, slot) in report.tests.iter().zip(&test_package) {
        if test.outcome == TestOutcome::Failed {
            package_has_failed_test[*slot] = true;
        }
    }
    for ((name, package), any_test_failed) in packages.iter().zip(package_has_failed_test) {
        match package.failed {
            Some(true) if !any_test_failed => {
                let detail = package.last_output.as_deref().unwrap_or("no output");
                report.runner_errors.push(format!(
                    "package {name} failed without a failing test: {detail}"
                ));
            }
            None => report.runner_errors.push(format!(
                "package {name} has no result (the stream may be cut off)"
            )),
            _ => {}
        }
    }
    report.flag_unfinished();
    report.counts = TestCounts::tally(&report.tests);
    Ok(report)
}
