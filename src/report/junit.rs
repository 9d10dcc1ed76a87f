//! JUnit XML, in the dialects of pytest, cargo-nextest, Maven Surefire and gotestsum
//! (go-junit-report documents the same `<testsuites><testsuite><testcase>` shape; no real
//! go-junit-report output could be produced here to test against).
//!
//! XML is read with `roxmltree`: a small, maintained, dependency-free DOM parser that
//! rejects malformed and truncated documents with a line/column position and refuses DTDs by
//! default (no entity-expansion attacks). JUnit reports are read whole anyway, so a read-only
//! tree is the simplest correct fit; quick-xml's streaming API would only add state-machine
//! code here.
//!
//! Outcome of a `<testcase>`: `<failure>` or `<error>` → Failed; otherwise `<skipped>` →
//! Skipped (pytest's xfail is a `<skipped>` too); otherwise Passed. Retries: Surefire and
//! nextest record earlier attempts as `<flakyFailure>`/`<flakyError>` (the test then passed:
//! `flaky: true`) and later failed attempts as `<rerunFailure>`/`<rerunError>` next to the
//! `<failure>`; the outcome is the last run's, `retries` counts those elements.
//!
//! `discovered` is the root's integer `tests` attribute (the `<testsuites>` element, or the sum
//! over its `<testsuite>` children when it has none, or a lone `<testsuite>`), falling back to
//! the number of `<testcase>` elements. When the report contains retry elements the attribute
//! is not used: Surefire 2.22 counts every rerun in `tests`/`failures`/`errors` (seen in
//! `fixtures/junit/surefire-rerun.xml`: 6 test cases, `tests="9"`).
//!
//! Runner errors: a declared total that disagrees with the listed test cases; more
//! `failures + errors` declared than failed test cases (gotestsum's build failures are only
//! counted in the root's `errors`); `<failure>`/`<error>` elements directly under a
//! `<testsuite>`.

use roxmltree::{Document, Node};

use super::error::ReportError;
use super::model::{Counts, Format, Outcome, Report, TestCase};
use super::util::{check_declared_total, duration_ms, first_line, join_id, text_count};

/// Nesting deeper than this is refused.
const MAX_DEPTH: usize = 256;

/// Whether the document's root element is `<testsuites>` or `<testsuite>`, found by a cheap
/// scan of the first element name (the document is not fully parsed).
pub(crate) fn looks_like(text: &[u8]) -> bool {
    matches!(first_element_name(text), Some(b"testsuites" | b"testsuite"))
}

/// The local name of the first element, skipping the XML declaration, comments,
/// processing instructions and a doctype.
fn first_element_name(text: &[u8]) -> Option<&[u8]> {
    let mut rest = text;
    loop {
        let start = rest.iter().position(|&b| b == b'<')?;
        rest = &rest[start + 1..];
        match rest.first()? {
            b'?' | b'!' => {
                let end = if rest.starts_with(b"!--") {
                    find(rest, b"-->")? + 3
                } else {
                    rest.iter().position(|&b| b == b'>')? + 1
                };
                rest = &rest[end..];
            }
            _ => {
                let end = rest
                    .iter()
                    .position(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
                    .unwrap_or(rest.len());
                let name = &rest[..end];
                let local = match name.iter().rposition(|&b| b == b':') {
                    Some(i) => &name[i + 1..],
                    None => name,
                };
                return Some(local);
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses a JUnit XML report.
pub(crate) fn parse(bytes: &[u8]) -> Result<Report, ReportError> {
    let format = Format::Junit;
    let text = std::str::from_utf8(bytes).map_err(|e| ReportError::Utf8 {
        format: format.as_str(),
        offset: e.valid_up_to(),
    })?;
    let doc = Document::parse(text).map_err(|e| ReportError::Xml {
        line: e.pos().row,
        message: e.to_string(),
    })?;
    let root = doc.root_element();
    let root_name = root.tag_name().name();
    if root_name != "testsuites" && root_name != "testsuite" {
        return Err(ReportError::shape(
            format,
            format!("the root element is <{root_name}>, not <testsuites> or <testsuite>"),
        ));
    }

    let mut report = Report::empty(format);
    let mut failed_cases = 0u64;
    let mut has_retries = false;
    let mut path = Vec::new();
    walk(
        root,
        &mut path,
        &mut report,
        &mut failed_cases,
        &mut has_retries,
        0,
    )?;

    let (declared_tests, declared_failed) = declared_totals(root);
    let declared = if has_retries { None } else { declared_tests };
    report.discovered = declared.or(Some(report.tests.len() as u64));
    report.counts = Some(Counts::tally(&report.tests));
    if !has_retries {
        check_declared_total(declared, &report.tests, &mut report.runner_errors);
        if let Some(declared_failed) = declared_failed.filter(|d| *d > failed_cases) {
            report.runner_errors.push(format!(
                "the report counts {declared_failed} failures and errors but only {failed_cases} test cases failed"
            ));
        }
    }
    Ok(report)
}

/// `(tests, failures + errors)` as the root declares them, each `None` when not given as
/// integers. A `<testsuites>` root without attributes sums its direct `<testsuite>` children
/// (only when every child gives the attribute).
fn declared_totals(root: Node<'_, '_>) -> (Option<u64>, Option<u64>) {
    let own_failed = |node: Node<'_, '_>| -> Option<u64> {
        let failures = node.attribute("failures").and_then(text_count);
        let errors = node.attribute("errors").and_then(text_count);
        match (failures, errors) {
            (None, None) => None,
            (f, e) => Some(f.unwrap_or(0).saturating_add(e.unwrap_or(0))),
        }
    };
    let tests = root.attribute("tests").and_then(text_count);
    let failed = own_failed(root);
    if root.tag_name().name() == "testsuite" || (tests.is_some() && failed.is_some()) {
        return (tests, failed);
    }
    let suites: Vec<Node<'_, '_>> = root
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "testsuite")
        .collect();
    let sum = |get: &dyn Fn(Node<'_, '_>) -> Option<u64>| -> Option<u64> {
        if suites.is_empty() {
            return None;
        }
        suites
            .iter()
            .map(|s| get(*s))
            .try_fold(0u64, |acc, v| v.map(|v| acc.saturating_add(v)))
    };
    (
        tests.or_else(|| sum(&|s: Node<'_, '_>| s.attribute("tests").and_then(text_count))),
        failed.or_else(|| sum(&own_failed)),
    )
}

fn walk<'a>(
    node: Node<'a, 'a>,
    path: &mut Vec<&'a str>,
    report: &mut Report,
    failed_cases: &mut u64,
    has_retries: &mut bool,
    depth: usize,
) -> Result<(), ReportError> {
    if depth > MAX_DEPTH {
        return Err(ReportError::shape(
            Format::Junit,
            "test suites are nested too deeply",
        ));
    }
    let is_suite = node.tag_name().name() == "testsuite";
    if is_suite {
        path.push(node.attribute("name").unwrap_or(""));
    }
    for child in node.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "testsuite" => walk(child, path, report, failed_cases, has_retries, depth + 1)?,
            "testcase" => {
                let test = parse_case(child, path, has_retries);
                if test.outcome == Outcome::Failed {
                    *failed_cases += 1;
                }
                report.tests.push(test);
            }
            "failure" | "error" if is_suite => {
                let suite = path.last().copied().unwrap_or("");
                let message = child
                    .attribute("message")
                    .map(first_line)
                    .or_else(|| child.text().map(first_line))
                    .unwrap_or_default();
                report.runner_errors.push(format!(
                    "test suite {suite} reported an {}: {message}",
                    child.tag_name().name()
                ));
            }
            _ => {}
        }
    }
    if is_suite {
        path.pop();
    }
    Ok(())
}

fn parse_case(node: Node<'_, '_>, path: &[&str], has_retries: &mut bool) -> TestCase {
    let name = node.attribute("name").unwrap_or("");
    // The class (pytest module, Surefire class, nextest binary, Go package) identifies the
    // test's home; without one, the enclosing suite does.
    let home = match node.attribute("classname").filter(|c| !c.is_empty()) {
        Some(class) => class,
        None => path.last().copied().unwrap_or(""),
    };
    let id = join_id([home, name]);

    let (mut failed, mut skipped, mut flaky, mut retries) = (false, false, false, 0u32);
    for child in node.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "failure" | "error" => failed = true,
            "skipped" => skipped = true,
            "flakyFailure" | "flakyError" => {
                flaky = true;
                retries = retries.saturating_add(1);
            }
            // A rerun element without a <failure>/<error> still means the last run failed.
            "rerunFailure" | "rerunError" => {
                failed = true;
                retries = retries.saturating_add(1);
            }
            _ => {}
        }
    }
    *has_retries |= retries > 0;
    let outcome = if failed {
        Outcome::Failed
    } else if skipped {
        Outcome::Skipped
    } else {
        Outcome::Passed
    };
    let mut test = TestCase::new(id, name.to_string(), outcome);
    test.duration_ms = node
        .attribute("time")
        .and_then(|t| t.parse::<f64>().ok())
        .and_then(|s| duration_ms(s, 1000.0));
    test.flaky = flaky && outcome == Outcome::Passed;
    test.retries = retries;
    test
}
