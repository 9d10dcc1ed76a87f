//! Playwright's JSON reporter (`--reporter=json`).
//!
//! Shape: `{config, suites: [{title, file, specs: [{title, annotations?, tests: [{projectName,
//! status, expectedStatus, annotations, results: [{status, retry, duration, annotations?,
//! attachments}]}]}], suites: [...]}], errors: [{message}], stats: {expected, unexpected,
//! flaky, skipped}}`.
//!
//! TestOutcome of a test, from its `status` and its `results`:
//! - `expected` → Passed (this includes `test.fail()` tests that failed as declared; their
//!   `fail` annotation is kept so callers can tell);
//! - `flaky` → Passed with `flaky: true` (failed, then passed on a retry);
//! - `unexpected` → from the last result: `interrupted` → Interrupted, anything else (`failed`,
//!   `timedOut`, a `passed` that should have failed) → Failed;
//! - `skipped` → Skipped, or DidNotRun when it has no result at all (never scheduled, e.g.
//!   after `maxFailures` or an interrupted run).
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure) is what its last result
//! says: each of its `errors`' `message` (Playwright's includes the source snippet and the
//! location), or its `error`'s `stack` or `message` when it lists none, then its `stdout`
//! and `stderr` (the entries that are `text`).
//!
//! Annotations are collected from the spec, the test and every result, de-duplicated by
//! `(type, description)` in first-seen order; attachments from every result.
//! The four `stats` counts are read strictly. When `stats.expected` is given, the declared
//! total `expected + unexpected + flaky + skipped` (absent ones 0) must equal the listed tests
//! (an error otherwise, also for an empty list), and `stats.unexpected` above the failed and
//! interrupted tests is a runner error. A document with `stats` and no `suites` is read from
//! its counts alone.

use serde_json::{Map, Value};

use super::count;
use super::error::ReportError;
use super::failure;
use super::model::{
    Annotation, Attachment, DeclaredOutcomes, Format, TestCase, TestCounts, TestOutcome, TestReport,
};
use super::util::{
    check_declared_failures, check_declared_total, first_line, join_id, json_duration, root_object,
    str_key,
};

/// Nesting deeper than this is refused (Playwright nests one level per `describe`).
const MAX_DEPTH: usize = 256;

/// Whether `root` looks like a Playwright JSON report.
pub(crate) fn looks_like(root: &Map<String, Value>) -> bool {
    root.get("suites").is_some_and(Value::is_array)
        && (root.get("config").is_some_and(Value::is_object)
            || root.get("stats").and_then(|s| s.get("expected")).is_some())
}

/// Parses a Playwright JSON report.
pub(crate) fn parse(value: &Value) -> Result<TestReport, ReportError> {
    let format = Format::Playwright;
    let root = root_object(value, format)?;
    let stats = root.get("stats").and_then(Value::as_object);
    let mut report = TestReport::empty(format);
    match root.get("suites") {
        None => {}
        Some(Value::Array(suites)) => {
            let mut path = Vec::new();
            for suite in suites {
                walk_suite(suite, &mut path, &mut report.tests, 0)?;
            }
        }
        Some(_) => return Err(ReportError::shape(format, "`suites` is not an array")),
    }

    if let Some(errors) = root.get("errors").and_then(Value::as_array) {
        for error in errors {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .or_else(|| error.as_str())
                .map(first_line)
                .unwrap_or_else(|| "error without a message".to_string());
            let location = error
                .get("location")
                .and_then(|l| l.get("file"))
                .and_then(Value::as_str);
            report.runner_errors.push(match location {
                Some(file) => format!("{file}: {message}"),
                None => message,
            });
        }
    }

    let read = |name: &str| match stats {
        Some(s) => count::key(s, name, format, "stats."),
        None => Ok(None),
    };
    let expected = read("expected")?;
    let unexpected = read("unexpected")?;
    let flaky = read("flaky")?;
    let skipped = read("skipped")?;
    // The declared total is the sum of the four, when `expected` is given (the others count
    // 0 when absent).
    let declared = match expected {
        Some(expected) => {
            let mut total = expected;
            for n in [unexpected, flaky, skipped].into_iter().flatten() {
                total = count::add(total, n, format, || {
                    "the sum of `stats.expected`, `stats.unexpected`, `stats.flaky` and \
                     `stats.skipped`"
                        .to_owned()
                })?;
            }
            Some(total)
        }
        None => None,
    };
    let declared_by = "`stats` (`expected` + `unexpected` + `flaky` + `skipped`)";
    if root.contains_key("suites") {
        check_declared_total(format, declared_by, declared, report.tests.len())?;
        report.counts = TestCounts::tally(&report.tests);
        // `unexpected` counts failed, interrupted and never-finished tests alike.
        let listed_unexpected = report.counts.failed + report.counts.interrupted;
        check_declared_failures(
            "`stats.unexpected`",
            unexpected,
            listed_unexpected,
            &mut report.runner_errors,
        );
    } else {
        let total = declared.ok_or_else(|| {
            ReportError::shape(
                format,
                "the document has neither `suites` nor `stats.expected`",
            )
        })?;
        let expected = expected.unwrap_or(0);
        let flaky_n = flaky.unwrap_or(0);
        let passed = count::add(expected, flaky_n, format, || {
            "`stats.expected` + `stats.flaky`".to_owned()
        })?;
        report.counts = TestCounts::declared(
            format,
            declared_by,
            total,
            DeclaredOutcomes {
                passed: Some(passed),
                failed: Some(unexpected.unwrap_or(0)),
                skipped: Some(skipped.unwrap_or(0)),
                flaky,
                ..DeclaredOutcomes::default()
            },
        )?;
    }
    Ok(report)
}

fn walk_suite<'a>(
    suite: &'a Value,
    path: &mut Vec<&'a str>,
    tests: &mut Vec<TestCase>,
    depth: usize,
) -> Result<(), ReportError> {
    let format = Format::Playwright;
    if depth > MAX_DEPTH {
        return Err(ReportError::shape(format, "suites are nested too deeply"));
    }
    let suite = suite
        .as_object()
        .ok_or_else(|| ReportError::shape(format, "a suite is not an object"))?;
    let title = str_key(suite, "title").unwrap_or("");
    path.push(title);
    if let Some(specs) = suite.get("specs") {
        let specs = specs
            .as_array()
            .ok_or_else(|| ReportError::shape(format, "`specs` is not an array"))?;
        for spec in specs {
            let spec = spec
                .as_object()
                .ok_or_else(|| ReportError::shape(format, "a spec is not an object"))?;
            parse_spec(spec, path, tests)?;
        }
    }
    if let Some(children) = suite.get("suites") {
        let children = children
            .as_array()
            .ok_or_else(|| ReportError::shape(format, "`suites` is not an array"))?;
        for child in children {
            walk_suite(child, path, tests, depth + 1)?;
        }
    }
    path.pop();
    Ok(())
}

fn parse_spec(
    spec: &Map<String, Value>,
    path: &[&str],
    tests: &mut Vec<TestCase>,
) -> Result<(), ReportError> {
    let format = Format::Playwright;
    let title = str_key(spec, "title").unwrap_or("");
    let entries = match spec.get("tests") {
        None => &[][..],
        Some(Value::Array(t)) => t.as_slice(),
        Some(_) => return Err(ReportError::shape(format, "`tests` is not an array")),
    };
    for entry in entries {
        let entry = entry
            .as_object()
            .ok_or_else(|| ReportError::shape(format, "a test is not an object"))?;
        let results: &[Value] = entry
            .get("results")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let last_status = results
            .last()
            .and_then(|r| r.get("status"))
            .and_then(Value::as_str);
        let (outcome, flaky) = match str_key(entry, "status") {
            Some("expected") => (TestOutcome::Passed, false),
            Some("flaky") => (TestOutcome::Passed, true),
            Some("unexpected") => match last_status {
                Some("interrupted") => (TestOutcome::Interrupted, false),
                None => (TestOutcome::DidNotRun, false),
                Some(_) => (TestOutcome::Failed, false),
            },
            Some("skipped") if results.is_empty() => (TestOutcome::DidNotRun, false),
            Some("skipped") => (TestOutcome::Skipped, false),
            _ => (TestOutcome::DidNotRun, false),
        };

        let project = str_key(entry, "projectName").unwrap_or("");
        let mut id = join_id(path.iter().copied().chain(std::iter::once(title)));
        if !project.is_empty() {
            id = format!("[{project}] {id}");
        }
        let mut test = TestCase::new(id, title.to_string(), outcome);
        if outcome == TestOutcome::Failed {
            test.failure = results.last().and_then(result_failure);
        }
        test.flaky = flaky;
        test.retries = u32::try_from(results.len().saturating_sub(1)).unwrap_or(u32::MAX);
        test.duration_ms = results
            .last()
            .and_then(|r| json_duration(r.get("duration"), 1.0));

        let mut annotations = Vec::new();
        collect_annotations(spec.get("annotations"), &mut annotations);
        collect_annotations(entry.get("annotations"), &mut annotations);
        for result in results {
            collect_annotations(result.get("annotations"), &mut annotations);
            collect_attachments(result.get("attachments"), &mut test.attachments);
        }
        test.annotations = annotations;
        tests.push(test);
    }
    Ok(())
}

/// What a failed result says (see the module docs).
fn result_failure(result: &Value) -> Option<String> {
    let mut parts: Vec<String> = result
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("message").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    if parts.is_empty()
        && let Some(error) = result.get("error")
    {
        parts.extend(
            ["stack", "message"]
                .iter()
                .find_map(|k| error.get(*k).and_then(Value::as_str))
                .map(str::to_owned),
        );
    }
    for (key, heading) in [("stdout", "--- stdout"), ("stderr", "--- stderr")] {
        let text: String = result
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("text").and_then(Value::as_str).or_else(|| e.as_str()))
            .collect();
        if !text.trim().is_empty() {
            parts.push(heading.to_owned());
            parts.push(text);
        }
    }
    failure::message(&parts.join("\n"))
}

fn collect_annotations(value: Option<&Value>, out: &mut Vec<Annotation>) {
    for item in value.and_then(Value::as_array).into_iter().flatten() {
        let Some(kind) = item.get("type").and_then(Value::as_str) else {
            continue;
        };
        let annotation = Annotation {
            kind: kind.to_string(),
            description: item
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        if !out.contains(&annotation) {
            out.push(annotation);
        }
    }
}

fn collect_attachments(value: Option<&Value>, out: &mut Vec<Attachment>) {
    for item in value.and_then(Value::as_array).into_iter().flatten() {
        let Some(item) = item.as_object() else {
            continue;
        };
        out.push(Attachment {
            name: str_key(item, "name").unwrap_or("").to_string(),
            content_type: str_key(item, "contentType").unwrap_or("").to_string(),
            path: str_key(item, "path").map(str::to_string),
            body_len: str_key(item, "body").map(base64_decoded_len),
            body: str_key(item, "body").and_then(|b| crate::attest::b64::decode(b).ok()),
        });
    }
}

/// A Playwright report whose inline attachment bodies (base64, which the product decodes
/// and keeps) hold a secret, with those bodies re-encoded from their redacted bytes;
/// `None` when no body holds one (the document is then kept byte for byte). A rewritten
/// document is serialized anew, so its layout changes.
pub fn redact_inline_bodies(
    bytes: &[u8],
    secrets: &crate::base::redact::Secrets,
) -> Option<Vec<u8>> {
    if secrets.is_empty() || memchr::memmem::find(bytes, b"\"body\"").is_none() {
        return None;
    }
    let mut value: Value = serde_json::from_slice(bytes).ok()?;
    let mut changed = false;
    redact_bodies(&mut value, secrets, &mut changed, 0);
    changed.then(|| serde_json::to_vec(&value).ok()).flatten()
}

fn redact_bodies(
    value: &mut Value,
    secrets: &crate::base::redact::Secrets,
    changed: &mut bool,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(items)) = map.get_mut("attachments") {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    let Some(Value::String(body)) = item.get_mut("body") else {
                        continue;
                    };
                    let Ok(decoded) = crate::attest::b64::decode(body) else {
                        continue;
                    };
                    if secrets.occur_in(&decoded) {
                        *body = crate::attest::b64::encode(&secrets.bytes(&decoded));
                        *changed = true;
                    }
                }
            }
            for v in map.values_mut() {
                redact_bodies(v, secrets, changed, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                redact_bodies(v, secrets, changed, depth + 1);
            }
        }
        _ => {}
    }
}

/// Decoded length of a base64 string (Playwright stores inline bodies as base64).
fn base64_decoded_len(encoded: &str) -> u64 {
    let trimmed = encoded.trim_end_matches('=');
    let padding = (encoded.len() - trimmed.len()) as u64;
    let len = encoded.len() as u64;
    if len.is_multiple_of(4) {
        (len / 4 * 3).saturating_sub(padding)
    } else {
        // Unpadded base64: every 4 characters carry 3 bytes; a partial group of n carries n-1.
        len / 4 * 3 + (len % 4).saturating_sub(1)
    }
}
