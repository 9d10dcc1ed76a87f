//! `go test -json` event streams (test2json): one JSON object per line,
//! `{Time, Action, Package, Test?, Elapsed?, Output?}`.
//!
//! Every test that gets a `run` (or any event) is a test, subtests (`TestX/sub`) included,
//! and so are their parents — the way gotestsum and go-junit-report count. TestOutcome from the
//! test's last terminal action: `pass` → Passed, `fail` → Failed, `skip` → Skipped; a test
//! with no terminal action is Interrupted (binary panicked, timed out, or stream cut off).
//!
//! A failed test's [`TestCase::failure`] is its output lines (`t.Errorf`, `t.Log`, a panic),
//! without go test's framing lines (`=== RUN`, `=== PAUSE`, `=== CONT`, `=== NAME`,
//! `--- FAIL: …`) and the indentation go test gives them.
//!
//! **Replays.** Without `-count=1`, go test serves a package whose inputs it has seen pass
//! from its test cache: it prints the earlier run's events again and ends the package with
//! `ok  \t<pkg>\t(cached)` (an `output` event of the package, then its `pass`; checked with
//! go 1.19: nothing else in the stream tells a replay from a run). Every test of such a
//! package is [`TestOutcome::Replayed`], never passed, and the package is named in
//! [`TestReport::replays`].
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
use super::failure::Collector;
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
    /// Its result line says `(cached)`: go test replayed it from its test cache.
    cached: bool,
}

/// Whether `line` is go test's result line for a package served from its test cache:
/// `ok  \t<pkg>\t(cached)` (possibly followed by `\tcoverage: …` or ` [no tests to run]`).
fn is_cached_result(line: &str, package: &str) -> bool {
    let mut fields = line.trim_end().split('\t');
    fields.next().map(str::trim) == Some("ok")
        && fields.next() == Some(package)
        && fields.next().is_some_and(|f| f.starts_with("(cached)"))
}

/// Whether an output line is go test's framing of a test rather than the test's own output.
fn is_framing(line: &str) -> bool {
    let line = line.trim_start();
    ["=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "]
        .iter()
        .any(|p| line.starts_with(p))
        || ["--- FAIL: ", "--- PASS: ", "--- SKIP: ", "--- BENCH: "]
            .iter()
            .any(|p| line.starts_with(p))
}

/// A running test's output, kept only until it passes or is skipped.
#[derive(Default)]
struct Output {
    collected: Collector,
    /// The indentation of its first line, taken off every line that has it.
    indent: Option<String>,
}

impl Output {
    fn push(&mut self, text: &str) {
        for line in text.split_inclusive('\n') {
            if is_framing(line) {
                continue;
            }
            let indent = self.indent.get_or_insert_with(|| {
                line[..line.len() - line.trim_start_matches([' ', '\t']).len()].to_owned()
            });
            self.collected
                .push(line.strip_prefix(indent.as_str()).unwrap_or(line));
        }
    }
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
    // The output of each test still running, by slot.
    let mut outputs: HashMap<usize, Output> = HashMap::new();

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
                        let text = str_key(event, "Output").unwrap_or("");
                        pkg.cached |= is_cached_result(text, &package);
                        if let Some(out) = Some(first_line(text)).filter(|o| !o.is_empty()) {
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
                if action == "output" {
                    outputs
                        .entry(slot)
                        .or_default()
                        .push(str_key(event, "Output").unwrap_or(""));
                }
                if let Some(outcome) = outcome {
                    test.outcome = outcome;
                    test.duration_ms =
                        json_duration(event.get("Elapsed"), 1000.0).or(test.duration_ms);
                    let output = outputs.remove(&slot);
                    if outcome == TestOutcome::Failed {
                        test.failure = output.and_then(|o| o.collected.finish());
                    }
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
    // What the test cache served was not run: its tests are replays, not passes.
    for (test, slot) in report.tests.iter_mut().zip(&test_package) {
        if packages[*slot].1.cached && test.outcome == TestOutcome::Passed {
            test.outcome = TestOutcome::Replayed;
        }
    }
    report.replays = packages
        .iter()
        .filter(|(_, p)| p.cached)
        .map(|(name, _)| name.clone())
        .collect();
    report.flag_unfinished();
    report.counts = TestCounts::tally(&report.tests);
    Ok(report)
}
