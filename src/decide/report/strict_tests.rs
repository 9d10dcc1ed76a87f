//! The counting rules, one table: every rule × every format, each cell stating the exact
//! outcome — the [`ReportError`] kind, or "nothing executed" — or, where a rule cannot apply
//! to a format, why. [`cell`] matches on both enums without a wildcard, so a new rule or
//! format does not compile until every cell of it is written.
//!
//! Each cell is checked at two levels: the parser (`parse` with the format declared exactly
//! and sniffed) and the judge (a `test-discovery` provider that exited 0, and one that
//! exited 1): an unreadable report is never a pass and gives no discovery count; a report in
//! which nothing executed is an inconclusive test and a discovery below its minimum.

use proofgraph_graph::{Adapter, CapabilityName};

use super::{Declared, Format, ReportError, parse};
use crate::decide::judge::tests::{exit, node};
use crate::decide::judge::{self, Judged, ReportFile};
use crate::proof::receipt::Outcome as Verdict;

/// One counting rule of the issue (plus a control row: the same documents, well formed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The documents the other rows break, intact: they pass.
    Control,
    /// A failure count written as a JSON string (`"3"`); for XML and TAP, a count that is
    /// not digits.
    CountAsString,
    /// A count written as a float (`3.0`).
    CountAsFloat,
    /// A negative count (`-3`).
    CountNegative,
    /// A count above 2^53-1.
    CountAboveMax,
    /// A key (attribute, plan) given twice.
    DuplicateKey,
    /// Every test skipped or todo.
    AllSkipped,
    /// A declared total the listed tests do not add up to.
    DeclaredNotBacked,
    /// A declared total with no test listed at all.
    DeclaredWithNoCases,
    /// A suite in which nothing executed: no test at all (`pytest --co`, an empty run).
    NothingExecuted,
}

impl Rule {
    const ALL: [Rule; 10] = [
        Rule::Control,
        Rule::CountAsString,
        Rule::CountAsFloat,
        Rule::CountNegative,
        Rule::CountAboveMax,
        Rule::DuplicateKey,
        Rule::AllSkipped,
        Rule::DeclaredNotBacked,
        Rule::DeclaredWithNoCases,
        Rule::NothingExecuted,
    ];
}

/// The [`ReportError`] kinds a rule leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    BadCount,
    CountTooLarge,
    DuplicateKey,
    Unbacked,
}

fn kind(err: &ReportError) -> Option<Kind> {
    match err {
        ReportError::BadCount { .. } => Some(Kind::BadCount),
        ReportError::CountTooLarge { .. } => Some(Kind::CountTooLarge),
        ReportError::DuplicateKey { .. } => Some(Kind::DuplicateKey),
        ReportError::Unbacked { .. } => Some(Kind::Unbacked),
        _ => None,
    }
}

/// What a cell expects.
enum Expect {
    /// The report parses, at least one test executed, and the provider passes.
    Pass,
    /// The report is not evidence: this error kind.
    Error(Kind),
    /// The report parses and no test executed.
    NothingExecuted,
}

/// One cell: a document and what it must give, or why the rule cannot apply.
enum Cell {
    Doc(String, Expect),
    NotApplicable(&'static str),
}

fn doc(text: impl Into<String>, expect: Expect) -> Cell {
    Cell::Doc(text.into(), expect)
}

/// Jest/Vitest: `numFailedTests` is the count the bad values go in (the issue's "failure
/// count of the wrong type"); Vitest marks its assertions with `meta`.
fn jest(vitest: bool, rule: Rule) -> Cell {
    let meta = if vitest { r#","meta":{}"# } else { "" };
    let test = |status: &str| {
        format!(r#"{{"ancestorTitles":[],"title":"t {status}","status":"{status}"{meta}}}"#)
    };
    // Vitest writes a `snapshot` summary and none of Jest's always-written keys.
    let snapshot = if vitest {
        r#","snapshot":{"total":0}"#
    } else {
        ""
    };
    let with = |total: &str, failed: &str, tests: &[String]| {
        format!(
            r#"{{"numTotalTests":{total},"numFailedTests":{failed},"testResults":[{{"name":"a.test.js","assertionResults":[{}]}}]{snapshot}}}"#,
            tests.join(",")
        )
    };
    let one = [test("passed")];
    match rule {
        Rule::Control => doc(with("1", "0", &one), Expect::Pass),
        Rule::CountAsString => doc(with("1", r#""3""#, &one), Expect::Error(Kind::BadCount)),
        Rule::CountAsFloat => doc(with("1", "3.0", &one), Expect::Error(Kind::BadCount)),
        Rule::CountNegative => doc(with("1", "-3", &one), Expect::Error(Kind::BadCount)),
        Rule::CountAboveMax => doc(
            with("1", "9007199254740992", &one),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            with("1", r#"3,"numFailedTests":0"#, &one),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with("3", "0", &[test("pending"), test("skipped"), test("todo")]),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(with("5", "0", &one), Expect::Error(Kind::Unbacked)),
        Rule::DeclaredWithNoCases => doc(with("5", "0", &[]), Expect::Error(Kind::Unbacked)),
        Rule::NothingExecuted => doc(with("0", "0", &[]), Expect::NothingExecuted),
    }
}

/// Playwright: `stats.unexpected` holds the bad values; the total is the sum of `stats`.
fn playwright(rule: Rule) -> Cell {
    let test = |status: &str, result: &str| {
        format!(
            r#"{{"title":"t","tests":[{{"projectName":"p","status":"{status}","results":[{{"status":"{result}","retry":0}}]}}]}}"#
        )
    };
    let with = |stats: &str, specs: &[String]| {
        format!(
            r#"{{"config":{{}},"suites":[{{"title":"a.spec.ts","specs":[{}]}}],"stats":{{{stats}}}}}"#,
            specs.join(",")
        )
    };
    let one = [test("expected", "passed")];
    let stats = |unexpected: &str| {
        format!(r#""expected":1,"unexpected":{unexpected},"flaky":0,"skipped":0"#)
    };
    match rule {
        Rule::Control => doc(with(&stats("0"), &one), Expect::Pass),
        Rule::CountAsString => doc(with(&stats(r#""3""#), &one), Expect::Error(Kind::BadCount)),
        Rule::CountAsFloat => doc(with(&stats("3.0"), &one), Expect::Error(Kind::BadCount)),
        Rule::CountNegative => doc(with(&stats("-3"), &one), Expect::Error(Kind::BadCount)),
        Rule::CountAboveMax => doc(
            with(&stats("9007199254740992"), &one),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            with(&format!(r#"{},"unexpected":3"#, stats("0")), &one),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with(
                r#""expected":0,"unexpected":0,"flaky":0,"skipped":2"#,
                &[test("skipped", "skipped"), test("skipped", "skipped")],
            ),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(
            with(r#""expected":5,"unexpected":0,"flaky":0,"skipped":0"#, &one),
            Expect::Error(Kind::Unbacked),
        ),
        Rule::DeclaredWithNoCases => doc(
            with(r#""expected":5,"unexpected":0,"flaky":0,"skipped":0"#, &[]),
            Expect::Error(Kind::Unbacked),
        ),
        Rule::NothingExecuted => doc(
            with(r#""expected":0,"unexpected":0,"flaky":0,"skipped":0"#, &[]),
            Expect::NothingExecuted,
        ),
    }
}

/// JUnit: the `failures` attribute holds the bad values (XML attributes are text, so "a
/// string" is text that is not digits).
fn junit(rule: Rule) -> Cell {
    let with = |attrs: &str, cases: &str| {
        format!(
            r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" {attrs}>{cases}</testsuite></testsuites>"#
        )
    };
    let one = r#"<testcase classname="m" name="t"/>"#;
    let attrs = |failures: &str| format!(r#"tests="1" errors="0" failures="{failures}""#);
    match rule {
        Rule::Control => doc(with(&attrs("0"), one), Expect::Pass),
        Rule::CountAsString => doc(with(&attrs("three"), one), Expect::Error(Kind::BadCount)),
        Rule::CountAsFloat => doc(with(&attrs("3.0"), one), Expect::Error(Kind::BadCount)),
        Rule::CountNegative => doc(with(&attrs("-3"), one), Expect::Error(Kind::BadCount)),
        Rule::CountAboveMax => doc(
            with(&attrs("9007199254740992"), one),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            with(&format!(r#"{} failures="3""#, attrs("0")), one),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with(
                r#"tests="2" errors="0" failures="0" skipped="2""#,
                r#"<testcase classname="m" name="a"><skipped message="no"/></testcase><testcase classname="m" name="b"><skipped type="pytest.xfail" message="x"/></testcase>"#,
            ),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(
            with(r#"tests="5" errors="0" failures="0""#, one),
            Expect::Error(Kind::Unbacked),
        ),
        Rule::DeclaredWithNoCases => doc(
            with(r#"tests="5" errors="0" failures="0""#, ""),
            Expect::Error(Kind::Unbacked),
        ),
        // What `pytest --co --junitxml` writes (fixtures/reports/junit/pytest-collect-only.xml).
        Rule::NothingExecuted => doc(
            with(r#"errors="0" failures="0" skipped="0" tests="0""#, ""),
            Expect::NothingExecuted,
        ),
    }
}

/// TAP: the plan is the format's only count.
fn tap(rule: Rule) -> Cell {
    let with = |plan: &str, points: &str| format!("TAP version 13\n{points}1..{plan}\n");
    let one = "ok 1 - a\n";
    match rule {
        Rule::Control => doc(with("1", one), Expect::Pass),
        Rule::CountAsString => doc(with("three", one), Expect::Error(Kind::BadCount)),
        Rule::CountAsFloat => doc(with("1.0", one), Expect::Error(Kind::BadCount)),
        Rule::CountNegative => doc(with("-1", one), Expect::Error(Kind::BadCount)),
        Rule::CountAboveMax => doc(
            with("9007199254740992", one),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            format!("TAP version 13\n1..1\n{one}1..1\n"),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with("2", "ok 1 - a # SKIP no db\nnot ok 2 - b # TODO later\n"),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(with("5", one), Expect::Error(Kind::Unbacked)),
        Rule::DeclaredWithNoCases => doc(with("5", ""), Expect::Error(Kind::Unbacked)),
        Rule::NothingExecuted => doc(with("0 # SKIP nothing to do", ""), Expect::NothingExecuted),
    }
}

/// `go test -json`: events only, no declared count anywhere in the format.
fn go_test(rule: Rule) -> Cell {
    const NO_COUNTS: &str = "test2json events carry no count: tests are counted from their events, so there is \
         no count to malform and no declared total to back";
    let event = |action: &str, test: Option<&str>| match test {
        Some(t) => format!(r#"{{"Action":"{action}","Package":"p","Test":"{t}"}}"#),
        None => format!(r#"{{"Action":"{action}","Package":"p"}}"#),
    };
    let lines = |events: &[String]| events.join("\n") + "\n";
    match rule {
        Rule::Control => doc(
            lines(&[
                event("run", Some("TestA")),
                event("pass", Some("TestA")),
                event("pass", None),
            ]),
            Expect::Pass,
        ),
        Rule::CountAsString
        | Rule::CountAsFloat
        | Rule::CountNegative
        | Rule::CountAboveMax
        | Rule::DeclaredNotBacked
        | Rule::DeclaredWithNoCases => Cell::NotApplicable(NO_COUNTS),
        Rule::DuplicateKey => doc(
            lines(&[
                event("run", Some("TestA")),
                r#"{"Action":"fail","Package":"p","Test":"TestA","Action":"pass"}"#.to_owned(),
                event("pass", None),
            ]),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            lines(&[
                event("run", Some("TestA")),
                event("skip", Some("TestA")),
                event("run", Some("TestB")),
                event("skip", Some("TestB")),
                event("pass", None),
            ]),
            Expect::NothingExecuted,
        ),
        Rule::NothingExecuted => doc(
            lines(&[
                r#"{"Action":"output","Package":"p","Output":"?   \tp\t[no test files]\n"}"#
                    .to_owned(),
                event("skip", None),
            ]),
            Expect::NothingExecuted,
        ),
    }
}

/// libtest JSON: the suite's `test_count` is the count.
fn libtest(rule: Rule) -> Cell {
    let with = |count: &str, tests: &[(&str, &str)]| {
        let mut text =
            format!(r#"{{ "type": "suite", "event": "started", "test_count": {count} }}"#);
        text.push('\n');
        for (name, event) in tests {
            text.push_str(&format!(
                "{{ \"type\": \"test\", \"event\": \"started\", \"name\": \"{name}\" }}\n{{ \"type\": \"test\", \"name\": \"{name}\", \"event\": \"{event}\" }}\n"
            ));
        }
        text.push_str(r#"{ "type": "suite", "event": "ok", "passed": 0, "failed": 0 }"#);
        text.push('\n');
        text
    };
    let one = [("a", "ok")];
    match rule {
        Rule::Control => doc(with("1", &one), Expect::Pass),
        Rule::CountAsString => doc(with(r#""1""#, &one), Expect::Error(Kind::BadCount)),
        Rule::CountAsFloat => doc(with("1.0", &one), Expect::Error(Kind::BadCount)),
        Rule::CountNegative => doc(with("-1", &one), Expect::Error(Kind::BadCount)),
        Rule::CountAboveMax => doc(
            with("9007199254740992", &one),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            with(r#"1, "test_count": 5"#, &one),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with("2", &[("a", "ignored"), ("b", "ignored")]),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(with("5", &one), Expect::Error(Kind::Unbacked)),
        Rule::DeclaredWithNoCases => doc(with("5", &[]), Expect::Error(Kind::Unbacked)),
        Rule::NothingExecuted => doc(with("0", &[]), Expect::NothingExecuted),
    }
}

/// CTRF: `results.summary.failed` holds the bad values.
fn ctrf(rule: Rule) -> Cell {
    let with = |summary: &str, tests: &[&str]| {
        let tests: Vec<String> = tests
            .iter()
            .enumerate()
            .map(|(i, status)| format!(r#"{{"name":"t{i}","status":"{status}","duration":1}}"#))
            .collect();
        format!(
            r#"{{"results":{{"tool":{{"name":"jest"}},"summary":{{{summary}}},"tests":[{}]}}}}"#,
            tests.join(",")
        )
    };
    let summary =
        |tests: &str, failed: &str| format!(r#""tests":{tests},"passed":1,"failed":{failed}"#);
    match rule {
        Rule::Control => doc(with(&summary("1", "0"), &["passed"]), Expect::Pass),
        Rule::CountAsString => doc(
            with(&summary("1", r#""3""#), &["passed"]),
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountAsFloat => doc(
            with(&summary("1", "3.0"), &["passed"]),
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountNegative => doc(
            with(&summary("1", "-3"), &["passed"]),
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountAboveMax => doc(
            with(&summary("1", "9007199254740992"), &["passed"]),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            with(&format!(r#"{},"failed":3"#, summary("1", "0")), &["passed"]),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with(
                r#""tests":2,"skipped":1,"pending":1"#,
                &["skipped", "pending"],
            ),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(
            with(&summary("5", "0"), &["passed"]),
            Expect::Error(Kind::Unbacked),
        ),
        Rule::DeclaredWithNoCases => {
            doc(with(&summary("5", "0"), &[]), Expect::Error(Kind::Unbacked))
        }
        Rule::NothingExecuted => doc(with(r#""tests":0"#, &[]), Expect::NothingExecuted),
    }
}

/// Mocha: `stats.failures` holds the bad values.
fn mocha(rule: Rule) -> Cell {
    let entry = |title: &str| {
        format!(r#"{{"title":"{title}","fullTitle":"s {title}","file":"/t.js","duration":1}}"#)
    };
    let with = |stats: &str, passes: &[&str], pending: &[&str]| {
        let passes: Vec<String> = passes.iter().map(|t| entry(t)).collect();
        let pending: Vec<String> = pending.iter().map(|t| entry(t)).collect();
        let all: Vec<String> = passes.iter().chain(&pending).cloned().collect();
        format!(
            r#"{{"stats":{{{stats}}},"tests":[{}],"pending":[{}],"failures":[],"passes":[{}]}}"#,
            all.join(","),
            pending.join(","),
            passes.join(",")
        )
    };
    let stats = |tests: &str, failures: &str| {
        format!(r#""suites":1,"tests":{tests},"passes":1,"pending":0,"failures":{failures}"#)
    };
    match rule {
        Rule::Control => doc(with(&stats("1", "0"), &["a"], &[]), Expect::Pass),
        Rule::CountAsString => doc(
            with(&stats("1", r#""3""#), &["a"], &[]),
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountAsFloat => doc(
            with(&stats("1", "3.0"), &["a"], &[]),
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountNegative => doc(
            with(&stats("1", "-3"), &["a"], &[]),
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountAboveMax => doc(
            with(&stats("1", "9007199254740992"), &["a"], &[]),
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            with(&format!(r#"{},"failures":3"#, stats("1", "0")), &["a"], &[]),
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            with(
                r#""tests":2,"passes":0,"pending":2,"failures":0"#,
                &[],
                &["a", "b"],
            ),
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(
            with(&stats("5", "0"), &["a"], &[]),
            Expect::Error(Kind::Unbacked),
        ),
        Rule::DeclaredWithNoCases => doc(
            with(&stats("5", "0"), &[], &[]),
            Expect::Error(Kind::Unbacked),
        ),
        Rule::NothingExecuted => doc(
            with(r#""tests":0,"passes":0,"pending":0,"failures":0"#, &[], &[]),
            Expect::NothingExecuted,
        ),
    }
}

/// The generic summary: no test list, so "declared total not backed" is a breakdown that
/// does not add up to the total.
fn summary(rule: Rule) -> Cell {
    match rule {
        Rule::Control => doc(r#"{"totalTests":5,"passed":5,"failed":0}"#, Expect::Pass),
        Rule::CountAsString => doc(
            r#"{"totalTests":5,"failed":"3"}"#,
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountAsFloat => doc(
            r#"{"totalTests":5,"failed":3.0}"#,
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountNegative => doc(
            r#"{"totalTests":5,"failed":-3}"#,
            Expect::Error(Kind::BadCount),
        ),
        Rule::CountAboveMax => doc(
            r#"{"totalTests":9007199254740993,"failed":0}"#,
            Expect::Error(Kind::CountTooLarge),
        ),
        Rule::DuplicateKey => doc(
            r#"{"totalTests":5,"failed":3,"failed":0}"#,
            Expect::Error(Kind::DuplicateKey),
        ),
        Rule::AllSkipped => doc(
            r#"{"totalTests":5,"passed":0,"skipped":5}"#,
            Expect::NothingExecuted,
        ),
        Rule::DeclaredNotBacked => doc(
            r#"{"totalTests":5,"passed":2,"failed":0}"#,
            Expect::Error(Kind::Unbacked),
        ),
        Rule::DeclaredWithNoCases => doc(
            r#"{"totalTests":5,"passed":0,"failed":0}"#,
            Expect::Error(Kind::Unbacked),
        ),
        Rule::NothingExecuted => doc(r#"{"totalTests":0}"#, Expect::NothingExecuted),
    }
}

/// The table.
fn cell(rule: Rule, format: Format) -> Cell {
    match format {
        Format::Jest => jest(false, rule),
        Format::Vitest => jest(true, rule),
        Format::Playwright => playwright(rule),
        Format::Junit => junit(rule),
        Format::Tap => tap(rule),
        Format::GoTestJson => go_test(rule),
        Format::LibtestJson => libtest(rule),
        Format::Ctrf => ctrf(rule),
        Format::Mocha => mocha(rule),
        Format::Summary => summary(rule),
    }
}

fn verdict(judged: &Judged, capability: &CapabilityName) -> (Verdict, String) {
    let v = judged
        .verdicts
        .iter()
        .find(|v| &v.output.capability == capability)
        .expect("a verdict per output");
    (v.outcome, v.reason.clone().unwrap_or_default())
}

fn judge(text: &str, code: i32) -> Judged {
    judge::judge(
        &node(Adapter::TestDiscovery, None),
        &judge::tests::NO_CLAIMS,
        &exit(code),
        &ReportFile::Bytes("report".into(), text.as_bytes().to_vec()),
        1,
    )
}

#[test]
fn every_counting_rule_holds_for_every_format() {
    let (test, discovery) = (CapabilityName::test(), CapabilityName::discovery());
    let mut checked = 0;
    let mut not_applicable = Vec::new();
    for format in Format::ALL {
        for rule in Rule::ALL {
            let ctx = format!("{rule:?} × {format}");
            let (text, expect) = match cell(rule, format) {
                Cell::Doc(text, expect) => (text, expect),
                Cell::NotApplicable(why) => {
                    assert!(!why.is_empty(), "{ctx}");
                    not_applicable.push(ctx);
                    continue;
                }
            };
            let exact = parse(text.as_bytes(), Declared::Exactly(format));
            let sniffed = parse(text.as_bytes(), Declared::Auto);
            let passed = judge(&text, 0);
            let failed = judge(&text, 1);
            match expect {
                Expect::Pass => {
                    for result in [&exact, &sniffed] {
                        let report = result.as_ref().unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert!(report.executed() >= 1, "{ctx}: {report:?}");
                        assert!(report.runner_errors.is_empty(), "{ctx}: {report:?}");
                    }
                    assert_eq!(
                        sniffed.as_ref().map(|r| r.format).ok(),
                        Some(format),
                        "{ctx}"
                    );
                    assert_eq!(verdict(&passed, &test).0, Verdict::Pass, "{ctx}");
                    assert_eq!(verdict(&passed, &discovery).0, Verdict::Pass, "{ctx}");
                }
                Expect::Error(expected) => {
                    for result in [&exact, &sniffed] {
                        match result {
                            Err(e) => assert_eq!(kind(e), Some(expected), "{ctx}: {e}"),
                            Ok(r) => panic!("{ctx}: parsed as {r:?}"),
                        }
                    }
                    let message = sniffed.as_ref().err().map(ToString::to_string);
                    let message = message.unwrap_or_default();
                    // Exit 0 with an unreadable report: never a pass, never a count.
                    let (outcome, reason) = verdict(&passed, &test);
                    assert_eq!(outcome, Verdict::Inconclusive, "{ctx}: {reason}");
                    assert!(reason.contains(&message), "{ctx}: {reason} / {message}");
                    let (outcome, reason) = verdict(&passed, &discovery);
                    assert_eq!(outcome, Verdict::Inconclusive, "{ctx}: {reason}");
                    assert!(reason.contains(&message), "{ctx}: {reason}");
                    assert_eq!(passed.verdicts.iter().find_map(|v| v.discovered), None);
                    // Exit 1: the test fails, discovery still has no count.
                    assert_eq!(verdict(&failed, &test).0, Verdict::Fail, "{ctx}");
                    assert_eq!(
                        verdict(&failed, &discovery).0,
                        Verdict::Inconclusive,
                        "{ctx}"
                    );
                }
                Expect::NothingExecuted => {
                    for result in [&exact, &sniffed] {
                        let report = result.as_ref().unwrap_or_else(|e| panic!("{ctx}: {e}"));
                        assert_eq!(report.executed(), 0, "{ctx}: {report:?}");
                        assert!(report.runner_errors.is_empty(), "{ctx}: {report:?}");
                    }
                    assert_eq!(
                        sniffed.as_ref().map(|r| r.format).ok(),
                        Some(format),
                        "{ctx}"
                    );
                    let (outcome, reason) = verdict(&passed, &test);
                    assert_eq!(outcome, Verdict::Inconclusive, "{ctx}: {reason}");
                    assert!(
                        reason.starts_with("no test executed: the report "),
                        "{ctx}: {reason}"
                    );
                    let (outcome, reason) = verdict(&passed, &discovery);
                    assert_eq!(outcome, Verdict::Fail, "{ctx}: {reason}");
                    assert!(
                        reason.starts_with("the suite ran 0 tests"),
                        "{ctx}: {reason}"
                    );
                    assert_eq!(verdict(&failed, &test).0, Verdict::Fail, "{ctx}");
                    assert_eq!(verdict(&failed, &discovery).0, Verdict::Fail, "{ctx}");
                }
            }
            checked += 1;
        }
    }
    // 10 formats × 10 rows; go test JSON has no counts (6 rows stated not applicable).
    assert_eq!(checked, 94, "{not_applicable:?}");
    assert_eq!(not_applicable.len(), 6, "{not_applicable:?}");
}
