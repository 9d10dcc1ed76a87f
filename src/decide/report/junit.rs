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
//! TestOutcome of a `<testcase>`: `<failure>` or `<error>` → Failed; otherwise `<skipped>` →
//! Skipped (pytest's xfail is a `<skipped>` too); otherwise Passed. Retries: Surefire and
//! nextest record earlier attempts as `<flakyFailure>`/`<flakyError>` (the test then passed:
//! `flaky: true`) and later failed attempts as `<rerunFailure>`/`<rerunError>` next to the
//! `<failure>`; the outcome is the last run's, `retries` counts those elements.
//!
//! pytest writes a module it could not import as `<testcase classname="" name="pkg.mod">
//! <error message="collection failure">` (and counts it in `tests` and `errors`): that is a
//! runner error, not a test (`fixtures/reports/junit/pytest-collection-error.xml`).
//!
//! TestCounts: the `tests`, `failures`, `errors` and `skipped` attributes of every
//! `<testsuites>`/`<testsuite>` are read strictly (all digits, at most 2^53-1). The declared
//! total is the root's `tests` (the `<testsuites>` element, or the sum over its `<testsuite>`
//! children when it has none, or a lone `<testsuite>`), minus pytest's collection failures;
//! it must equal the number of test cases, also when there are none. Surefire 2.22 also
//! counts every rerun in `tests`/`failures`/`errors` (`fixtures/reports/junit/
//! surefire-rerun.xml`: 6 test cases and 3 reruns, `tests="9"`), so with retry elements a
//! total of test cases plus reruns is accepted too. A repeated attribute is
//! [`ReportError::DuplicateKey`].
//!
//! A failed test's [`TestCase::failure`](super::TestCase::failure): each `<failure>`/`<error>`'s
//! `message` and text (the text alone when it starts with the message, as nextest and
//! Surefire write it), then the test case's own `<system-out>` and `<system-err>` (each
//! under a `--- system-out` / `--- system-err` line, left out when what came before
//! already holds it: nextest repeats the panic there).
//!
//! Runner errors: more `failures + errors` declared than failed test cases (gotestsum's build
//! failures are only counted in the root's `errors`), unless the report has reruns;
//! `<failure>`/`<error>` elements directly under a `<testsuite>`; collection failures.

use roxmltree::{Document, Node};

use super::count;
use super::error::ReportError;
use super::failure;
use super::model::{Format, TestCase, TestCounts, TestOutcome, TestReport};
use super::util::{
    check_declared_failures, check_declared_total, duration_ms, first_line, join_id, push_unique,
};

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
pub(crate) fn parse(bytes: &[u8]) -> Result<TestReport, ReportError> {
    let format = Format::Junit;
    let text = std::str::from_utf8(bytes).map_err(|e| ReportError::Utf8 {
        format: format.as_str(),
        offset: e.valid_up_to(),
    })?;
    let doc = Document::parse(text).map_err(|e| match e {
        // Two equal attributes: readers disagree on which holds, like a repeated JSON key.
        roxmltree::Error::DuplicatedAttribute(name, pos) => ReportError::DuplicateKey {
            format: format.as_str(),
            line: pos.row as usize,
            column: pos.col as usize,
            key: format!("the attribute `{name}`"),
        },
        e => ReportError::Xml {
            line: e.pos().row,
            message: e.to_string(),
        },
    })?;
    let root = doc.root_element();
    let root_name = root.tag_name().name();
    if root_name != "testsuites" && root_name != "testsuite" {
        return Err(ReportError::shape(
            format,
            format!("the root element is <{root_name}>, not <testsuites> or <testsuite>"),
        ));
    }

    let mut report = TestReport::empty(format);
    let mut walked = Walked::default();
    let mut path = Vec::new();
    walk(&doc, root, &mut path, &mut report, &mut walked, 0)?;

    let (declared_tests, declared_failed) = declared_totals(&doc, root)?;
    let listed = report.tests.len() as u64;
    // pytest counts a module it could not collect among `tests` and `errors`; it is a runner
    // error here, not a test.
    let declared_tests = declared_tests.map(|d| d.saturating_sub(walked.collection_failures));
    let declared_failed = declared_failed.map(|d| d.saturating_sub(walked.collection_failures));
    // Surefire 2.22 also counts every rerun in `tests` (`fixtures/reports/junit/
    // surefire-rerun.xml`: 6 test cases and 3 reruns, `tests="9"`); nextest does not.
    let counts_reruns = walked.retries > 0 && declared_tests == Some(listed + walked.retries);
    if !counts_reruns {
        check_declared_total(
            format,
            "the root's `tests` attribute",
            declared_tests,
            report.tests.len(),
        )?;
    }
    report.counts = TestCounts::tally(&report.tests);
    if walked.retries == 0 {
        check_declared_failures(
            "the root's `failures` + `errors`",
            declared_failed,
            walked.failed_cases,
            &mut report.runner_errors,
        );
    }
    Ok(report)
}

/// What the walk over the document found besides the tests.
#[derive(Default)]
struct Walked {
    /// Test cases that failed.
    failed_cases: u64,
    /// Retry elements (`<flakyFailure>`, `<rerunFailure>`, ...) in all test cases.
    retries: u64,
    /// pytest's `<error message="collection failure">` entries.
    collection_failures: u64,
}

/// The count attributes of a `<testsuites>`/`<testsuite>` element, each read strictly
/// (see [`count::text`]).
struct SuiteCounts {
    tests: Option<u64>,
    /// `failures + errors`, when either is given.
    failed: Option<u64>,
}

/// Reads a suite element's `tests`, `failures`, `errors` and `skipped` attributes: each
/// must be a count when present.
fn suite_counts(doc: &Document<'_>, node: Node<'_, '_>) -> Result<SuiteCounts, ReportError> {
    let format = Format::Junit;
    let read = |name: &str| -> Result<Option<u64>, ReportError> {
        node.attribute(name)
            .map(|value| {
                count::text(value, format, || {
                    let pos = doc.text_pos_at(node.range().start);
                    format!(
                        "`{name}` of <{}> at line {}",
                        node.tag_name().name(),
                        pos.row
                    )
                })
            })
            .transpose()
    };
    let tests = read("tests")?;
    let failures = read("failures")?;
    let errors = read("errors")?;
    read("skipped")?;
    let failed = match (failures, errors) {
        (None, None) => None,
        (f, e) => Some(count::add(f.unwrap_or(0), e.unwrap_or(0), format, || {
            "`failures` + `errors`".to_owned()
        })?),
    };
    Ok(SuiteCounts { tests, failed })
}

/// `(tests, failures + errors)` as the root declares them, each `None` when not given. A
/// `<testsuites>` root without them sums its direct `<testsuite>` children (only when every
/// child gives the attribute).
fn declared_totals(
    doc: &Document<'_>,
    root: Node<'_, '_>,
) -> Result<(Option<u64>, Option<u64>), ReportError> {
    let own = suite_counts(doc, root)?;
    if root.tag_name().name() == "testsuite" || (own.tests.is_some() && own.failed.is_some()) {
        return Ok((own.tests, own.failed));
    }
    let suites = root
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "testsuite")
        .map(|suite| suite_counts(doc, suite))
        .collect::<Result<Vec<SuiteCounts>, ReportError>>()?;
    let sum =
        |get: fn(&SuiteCounts) -> Option<u64>, what: &str| -> Result<Option<u64>, ReportError> {
            if suites.is_empty() {
                return Ok(None);
            }
            let mut total = 0u64;
            for suite in &suites {
                let Some(n) = get(suite) else {
                    return Ok(None);
                };
                total = count::add(total, n, Format::Junit, || {
                    format!("the sum of the suites' {what}")
                })?;
            }
            Ok(Some(total))
        };
    let tests = match own.tests {
        Some(n) => Some(n),
        None => sum(|s| s.tests, "`tests`")?,
    };
    let failed = match own.failed {
        Some(n) => Some(n),
        None => sum(|s| s.failed, "`failures` + `errors`")?,
    };
    Ok((tests, failed))
}

fn walk<'a>(
    doc: &Document<'_>,
    node: Node<'a, 'a>,
    path: &mut Vec<&'a str>,
    report: &mut TestReport,
    walked: &mut Walked,
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
        // Every suite's counts must be counts, whether or not the total comes from them.
        suite_counts(doc, node)?;
    }
    for child in node.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "testsuite" => walk(doc, child, path, report, walked, depth + 1)?,
            "testcase" => match parse_case(child, path) {
                Case::Test(test, retries) => {
                    if test.outcome == TestOutcome::Failed {
                        walked.failed_cases += 1;
                    }
                    walked.retries += u64::from(retries);
                    report.tests.push(test);
                }
                Case::CollectionFailure(name, message) => {
                    walked.collection_failures += 1;
                    push_unique(
                        &mut report.runner_errors,
                        format!("pytest could not collect {name}: {message}"),
                    );
                }
            },
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

/// What a `<testcase>` element is.
enum Case {
    /// A test, and how many retry elements it has.
    Test(TestCase, u32),
    /// pytest's entry for a module it could not import (`<testcase classname="" name="pkg.
    /// test_mod"><error message="collection failure">`): no test ran; it is a runner error.
    CollectionFailure(String, String),
}

/// All the text directly inside `node` (its text and CDATA children).
fn own_text(node: Node<'_, '_>) -> String {
    node.children()
        .filter(Node::is_text)
        .filter_map(|t| t.text())
        .collect()
}

/// What a failed `<testcase>` attached (see the module docs).
fn failure_text(case: Node<'_, '_>) -> Option<String> {
    let mut text = String::new();
    let add = |part: &str, text: &mut String| {
        let part = part.trim_matches('\n');
        if part.trim().is_empty() {
            return;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(part);
    };
    for child in case.children().filter(Node::is_element) {
        if !matches!(child.tag_name().name(), "failure" | "error") {
            continue;
        }
        let message = child.attribute("message").unwrap_or("").trim();
        let body = own_text(child);
        if !message.is_empty() && !body.trim_start().starts_with(message) {
            add(message, &mut text);
        }
        add(&body, &mut text);
    }
    for (element, heading) in [
        ("system-out", "--- system-out"),
        ("system-err", "--- system-err"),
    ] {
        for child in case
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == element)
        {
            let body = own_text(child);
            let body = body.trim_matches('\n');
            if body.trim().is_empty() || text.contains(body.trim()) {
                continue;
            }
            add(heading, &mut text);
            add(body, &mut text);
        }
    }
    failure::message(&text)
}

/// The message pytest's JUnit writer gives a module it failed to collect
/// (`_pytest/junitxml.py`, `append_collect_error`).
const PYTEST_COLLECTION_FAILURE: &str = "collection failure";

fn parse_case(node: Node<'_, '_>, path: &[&str]) -> Case {
    let name = node.attribute("name").unwrap_or("");
    let collection_failure = node.children().filter(Node::is_element).find(|c| {
        c.tag_name().name() == "error" && c.attribute("message") == Some(PYTEST_COLLECTION_FAILURE)
    });
    if let Some(error) = collection_failure {
        // pytest writes the traceback as the text; its last `E   ` line says why.
        let text = error.text().unwrap_or("");
        let why = text
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with("E ") && l.len() > 2)
            .map(|l| l[1..].trim())
            .or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()))
            .map(first_line)
            .unwrap_or_else(|| PYTEST_COLLECTION_FAILURE.to_owned());
        return Case::CollectionFailure(name.to_owned(), why);
    }
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
    let outcome = if failed {
        TestOutcome::Failed
    } else if skipped {
        TestOutcome::Skipped
    } else {
        TestOutcome::Passed
    };
    let mut test = TestCase::new(id, name.to_string(), outcome);
    if outcome == TestOutcome::Failed {
        test.failure = failure_text(node);
    }
    test.duration_ms = node
        .attribute("time")
        .and_then(|t| t.parse::<f64>().ok())
        .and_then(|s| duration_ms(s, 1000.0));
    test.flaky = flaky && outcome == TestOutcome::Passed;
    test.retries = retries;
    Case::Test(test, retries)
}
