//! Fuzz target `report`: any bytes through [`proofgraph::decide::report::parse`] as every declared
//! format (`auto`, `json` and each format by name) and through [`proofgraph::decide::report::sniff`].
//!
//! Invariants, beyond "never panics":
//!
//! - a report parsed as exactly format `f` says it is `f`;
//! - `auto` and `sniff` agree, and an `auto` report is the report its format gives when
//!   declared by name (sniffing never changes what a report says); where `auto` finds a
//!   JSON format, `json` finds the same report;
//! - test ids are unique; there are no more tests than input bytes, and at most the capped
//!   number of runner errors;
//! - counts tallied from a test list match it, and a declared total that disagrees with
//!   the list is a runner error;
//! - every count is at most 2^53 - 1, the largest a receipt (RFC 8785 canonical JSON)
//!   can carry exactly;
//! - critical cases are judged from the first source that has rows (explicit rows, then
//!   annotations, then tests), one finding per required id, an exact id before an embedded
//!   one, and only a passing row passes.

use std::collections::BTreeSet;

use proofgraph::decide::report::{
    self, CriticalFinding, CriticalRow, Declared, Format, TestCounts, TestReport,
};

/// The largest integer a signed receipt can hold exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Most runner errors a report keeps: the cap and the line that says more were dropped.
const MAX_RUNNER_ERRORS: usize = 201;

/// Runs one input; panics when an invariant does not hold.
pub fn run(data: &[u8]) {
    let sniffed = report::sniff(data);
    let auto = report::parse(data, Declared::Auto);
    let any_json = report::parse(data, Declared::AnyJson);
    for format in Format::ALL {
        if let Ok(report) = report::parse(data, Declared::Exactly(format)) {
            assert_eq!(report.format, format, "declared {format}");
            check(&report, data);
        }
    }
    if let Ok(report) = &auto {
        check(report, data);
        critical(report, data);
        assert_eq!(sniffed, Some(report.format), "sniff and parse disagree");
        let declared = report::parse(data, Declared::Exactly(report.format));
        assert_eq!(
            declared.as_ref(),
            Ok(report),
            "auto and `{}` read the report differently",
            report.format
        );
    }
    if let Ok(report) = &any_json {
        check(report, data);
        assert!(report.format.is_json(), "`json` gave {}", report.format);
    }
    // Where `auto` finds a JSON format, `json` finds the same report. (Not the other way:
    // text with TAP markers is TAP to `auto` even when JSON event lines follow, while
    // `json`, told the report is JSON, reads those lines.)
    if let Ok(report) = &auto
        && report.format.is_json()
    {
        assert_eq!(any_json.as_ref(), Ok(report), "`json` and `auto` disagree");
    }
}

fn check(report: &TestReport, data: &[u8]) {
    let format = report.format;
    let mut ids = BTreeSet::new();
    for test in &report.tests {
        assert!(
            ids.insert(&test.id),
            "{format}: test id `{}` twice",
            test.id
        );
    }
    assert!(
        report.tests.len() <= data.len(),
        "{format}: {} tests from {} bytes",
        report.tests.len(),
        data.len()
    );
    assert!(
        report.runner_errors.len() <= MAX_RUNNER_ERRORS,
        "{format}: {} runner errors",
        report.runner_errors.len()
    );
    if !report.tests.is_empty() {
        // A listed test list is what counts; its declared totals were checked against it.
        assert_eq!(
            report.counts,
            TestCounts::tally(&report.tests),
            "{format}: counts that are not the listed tests'"
        );
    }
    let counts = report.counts;
    let all = [
        counts.total,
        counts.passed,
        counts.failed,
        counts.skipped,
        counts.todo,
        counts.flaky,
        counts.interrupted,
        counts.did_not_run,
    ];
    assert!(
        all.iter().all(|&n| n <= MAX_SAFE_INTEGER),
        "{format}: a count above 2^53 - 1: {counts:?}"
    );
    assert!(
        counts.executed() <= counts.total,
        "{format}: more executed than counted: {counts:?}"
    );
}

/// Judges critical cases named after the report's own rows (and one it does not have).
fn critical(report: &TestReport, data: &[u8]) {
    let sources = [
        report::explicit_rows(data),
        report::annotated_rows(report),
        report::test_rows(report),
    ];
    let rows: &[CriticalRow] = sources.iter().find(|s| !s.is_empty()).map_or(&[], |s| s);
    let mut required: Vec<String> = sources
        .iter()
        .flat_map(|s| s.iter().take(3).map(|r| r.id.clone()))
        .collect();
    required.push("no-such-critical-case".to_owned());
    let findings = report::check_critical(&required, &sources);
    assert_eq!(
        findings.len(),
        required.len(),
        "one finding per required case"
    );
    for ((id, finding), wanted) in findings.iter().zip(&required) {
        assert_eq!(id, wanted, "findings out of order");
        let exact = rows.iter().find(|r| r.id == *id);
        match finding {
            CriticalFinding::Passed(row) | CriticalFinding::NotPassed(row) => {
                assert!(
                    rows.contains(row),
                    "case `{id}` judged by a row of another source"
                );
                assert_eq!(matches!(finding, CriticalFinding::Passed(_)), row.passed());
                if let Some(exact) = exact {
                    assert_eq!(row, exact, "case `{id}` judged by another row than its own");
                }
            }
            CriticalFinding::Missing => {
                assert!(exact.is_none(), "case `{id}` has a row but is missing");
            }
        }
    }
    // One required case and one row: that row judges it, whatever its id.
    let lone = ["no-such-critical-case".to_owned()];
    let findings = report::check_critical(&lone, &sources);
    if let [row] = rows {
        assert!(
            matches!(&findings[..], [(_, CriticalFinding::Passed(r) | CriticalFinding::NotPassed(r))] if r == row),
            "the only row did not judge the only case: {findings:?}"
        );
    }
}
