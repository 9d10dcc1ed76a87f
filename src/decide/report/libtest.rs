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
//! **Names.** cargo test's stream names no test binary, so one test name can stand for
//! tests of several binaries (`test_eq` in `tests/version.rs` and `tests/version_req.rs`).
//! cargo announces each binary on its standard error before running it (`Running
//! tests/version.rs (target/debug/deps/version-1a2b…)`, `Doc-tests semver`; [`cargo_suites`]
//! reads them, from the command's log or from the report when cargo's standard error went
//! there too): when the announcements are as many as the stream's suites, each test is named
//! `<file> > <name>` (`<file> (<binary>) > <name>` when two binaries share a file name, as
//! two crates' `src/lib.rs` do). Without them, a name found in more than one suite is named
//! `suite <n> > <name>`. nextest's names carry their binary already (`crate::binary$name`).
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure) is its event's `message`
//! (a `should_panic` test that did not panic) and `stdout` (what the test printed and its
//! panic: the assertion's `left`/`right`).
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
use super::failure::{self, without_escapes};
use super::json;
use super::model::{Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{check_declared_failures, check_declared_total, join_id, json_duration, str_key};

/// The test binaries cargo announced, in order, as the names of their suites (see the
/// module docs): `text` is what the command wrote besides its JSON (its log, or the report
/// itself); anything but cargo's `Running …` and `Doc-tests …` lines is ignored.
pub fn cargo_suites(text: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let announced: Vec<(String, String)> = text.lines().filter_map(announcement).collect();
    announced
        .iter()
        .map(|(file, binary)| {
            let shared = announced.iter().filter(|(f, _)| f == file).count() > 1;
            if shared && binary != file {
                format!("{file} ({binary})")
            } else {
                file.clone()
            }
        })
        .collect()
}

/// A line of cargo's announcing the next test binary: (its source file, its name).
/// `     Running unittests src/lib.rs (target/debug/deps/semver-0a1b2c3d)`,
/// `     Running tests/version.rs (target/debug/deps/version-0a1b2c3d)`, `   Doc-tests semver`,
/// and with `--verbose` ``     Running `/…/deps/version-0a1b2c3d --format json` ``.
fn announcement(line: &str) -> Option<(String, String)> {
    let line = without_escapes(line);
    let line = line.trim();
    if let Some(krate) = line.strip_prefix("Doc-tests ") {
        let krate = krate.trim();
        return (!krate.is_empty()).then(|| (format!("doc-tests {krate}"), krate.to_owned()));
    }
    let rest = line.strip_prefix("Running ")?.trim();
    let (file, exe) = if let Some(command) = rest.strip_prefix('`') {
        let exe = command.split([' ', '`']).next()?;
        (None, exe)
    } else {
        let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
        let (file, exe) = rest.strip_suffix(')')?.rsplit_once(" (")?;
        (Some(file), exe)
    };
    let stem = exe.rsplit(['/', '\\']).next()?.trim_end_matches(".exe");
    // `--verbose` shows the rustdoc command of doctests too, after their `Doc-tests` line.
    if file.is_none() && stem == "rustdoc" {
        return None;
    }
    let binary = match stem.rsplit_once('-') {
        Some((name, hash))
            if !name.is_empty()
                && !hash.is_empty()
                && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            name
        }
        _ => stem,
    };
    if binary.is_empty() {
        return None;
    }
    Some((file.unwrap_or(binary).to_owned(), binary.to_owned()))
}

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

/// Parses a libtest JSON stream; `suites` names cargo test's suites in order when the
/// report does not (see the module docs).
pub(crate) fn parse(bytes: &[u8], suites_named: &[String]) -> Result<TestReport, ReportError> {
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
    // The suite of each test, parallel to `report.tests`.
    let mut suite_of: Vec<Option<usize>> = Vec::new();
    let mut nextest = false;
    let mut events = 0usize;
    // cargo's announcements of its test binaries, when they are in the report too.
    let mut announced: Vec<u8> = Vec::new();

    for (line_no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !line.starts_with('{') {
            if announcement(line).is_some() {
                announced.extend_from_slice(line.as_bytes());
                announced.push(b'\n');
            }
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
            suite_of.push(current_suite);
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
            test.failure = None;
            if outcome == TestOutcome::Failed {
                let attached: Vec<&str> = ["message", "stdout"]
                    .iter()
                    .filter_map(|k| str_key(event, k))
                    .collect();
                test.failure = failure::message(&attached.join("\n"));
                if let Some(s) = current_suite {
                    suites[s].failed_tests += 1;
                }
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
    if !nextest {
        let from_report = cargo_suites(&announced);
        let labels = [from_report.as_slice(), suites_named]
            .into_iter()
            .find(|l| l.len() == suites.len() && !l.is_empty());
        name_by_suite(&mut report.tests, &suite_of, labels);
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

/// Names cargo test's tests by their suite (see the module docs): every test by its suite's
/// label when there are `labels`, else a name that more than one suite holds by the
/// suite's number.
fn name_by_suite(tests: &mut [TestCase], suite_of: &[Option<usize>], labels: Option<&[String]>) {
    let mut suites_of_name: HashMap<&str, std::collections::BTreeSet<Option<usize>>> =
        HashMap::new();
    if labels.is_none() {
        for (test, suite) in tests.iter().zip(suite_of) {
            suites_of_name
                .entry(test.title.as_str())
                .or_default()
                .insert(*suite);
        }
    }
    let shared: std::collections::HashSet<String> = suites_of_name
        .into_iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(name, _)| name.to_owned())
        .collect();
    for (test, suite) in tests.iter_mut().zip(suite_of) {
        let Some(suite) = suite else { continue };
        match labels {
            Some(labels) => test.id = join_id([labels[*suite].as_str(), test.title.as_str()]),
            None if shared.contains(&test.title) => {
                test.id = join_id([format!("suite {}", suite + 1).as_str(), test.title.as_str()]);
            }
            None => {}
        }
    }
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
