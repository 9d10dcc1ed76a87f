//! Critical cases: stable case ids a provider requires to have passed.
//!
//! A provider's `criticalCases` name cases that must each be observed
//! passing in the run's report, on top of the run passing as a whole. The
//! rows a report offers, in order of precedence:
//!
//! 1. explicit rows `criticalCases: [{id, status}]` at the root of a JSON
//!    report, else under `foundation.criticalCases` (the form projects using
//!    this format already write);
//! 2. tests annotated `{type: "critical-case", description: <id>}`
//!    (Playwright), with the test's outcome;
//! 3. every listed test, by its id.
//!
//! A required id matches a row whose id is equal; failing that, a row whose
//! id contains it at a boundary (the neighbouring characters are not
//! `[A-Za-z0-9_-]`); failing that, when exactly one case is required and the
//! source offers exactly one row, that row. Only `pass`, `passed`,
//! `success` and `ok` (any case) pass; anything else, and a missing row, fails.

use serde_json::Value;

use super::model::{TestOutcome, TestReport};

/// One row a report offers for a critical case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The case id as the report gives it.
    pub id: String,
    /// The status as the report gives it (`passed`, `fail`, `skipped`, …).
    pub status: String,
}

impl Row {
    /// Whether the status is one of the pass words.
    pub fn passed(&self) -> bool {
        matches!(
            self.status.to_ascii_lowercase().as_str(),
            "pass" | "passed" | "success" | "ok"
        )
    }
}

/// What became of one required case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A row matched and passed.
    Passed(Row),
    /// A row matched and did not pass.
    NotPassed(Row),
    /// No row matched.
    Missing,
}

fn outcome_word(outcome: TestOutcome) -> &'static str {
    match outcome {
        TestOutcome::Passed => "passed",
        TestOutcome::Failed => "failed",
        TestOutcome::Skipped => "skipped",
        TestOutcome::Todo => "todo",
        TestOutcome::Interrupted => "interrupted",
        TestOutcome::DidNotRun => "did-not-run",
        TestOutcome::Replayed => "replayed",
    }
}

/// Explicit `criticalCases` rows of a JSON report (root, else
/// `foundation.criticalCases`); empty for anything else.
pub fn explicit_rows(bytes: &[u8]) -> Vec<Row> {
    let Ok(value) = super::json::parse(super::sniff::bytes_without_bom(bytes), None, 0) else {
        return Vec::new();
    };
    let rows = value
        .get("criticalCases")
        .or_else(|| value.get("foundation")?.get("criticalCases"))
        .and_then(Value::as_array);
    rows.into_iter()
        .flatten()
        .filter_map(|r| {
            Some(Row {
                id: r.get("id")?.as_str()?.to_owned(),
                status: r
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("missing")
                    .to_owned(),
            })
        })
        .collect()
}

/// Rows from `critical-case` annotations of the report's tests.
pub fn annotated_rows(report: &TestReport) -> Vec<Row> {
    report
        .tests
        .iter()
        .flat_map(|t| {
            t.annotations
                .iter()
                .filter(|a| a.kind == "critical-case")
                .filter_map(|a| a.description.as_deref())
                .map(|d| Row {
                    id: d.trim().to_owned(),
                    status: outcome_word(t.outcome).to_owned(),
                })
        })
        .collect()
}

/// Rows from every listed test.
pub fn test_rows(report: &TestReport) -> Vec<Row> {
    report
        .tests
        .iter()
        .map(|t| Row {
            id: t.id.clone(),
            status: outcome_word(t.outcome).to_owned(),
        })
        .collect()
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `needle` occurs in `hay` with no word character on either side.
fn embedded(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// Matches each required id against the first source that offers rows.
pub fn check(required: &[String], sources: &[Vec<Row>]) -> Vec<(String, Finding)> {
    let rows: &[Row] = sources
        .iter()
        .find(|s| !s.is_empty())
        .map_or(&[], Vec::as_slice);
    required
        .iter()
        .map(|id| {
            let row = rows
                .iter()
                .find(|r| r.id == *id)
                .or_else(|| rows.iter().find(|r| embedded(&r.id, id)))
                .or(match (required.len(), rows) {
                    (1, [only]) => Some(only),
                    _ => None,
                });
            let finding = match row {
                Some(r) if r.passed() => Finding::Passed(r.clone()),
                Some(r) => Finding::NotPassed(r.clone()),
                None => Finding::Missing,
            };
            (id.clone(), finding)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, status: &str) -> Row {
        Row {
            id: id.to_owned(),
            status: status.to_owned(),
        }
    }

    #[test]
    fn exact_then_embedded_at_a_boundary_then_the_only_row() {
        let rows = vec![
            row("CASE-1", "pass"),
            row("suite > CASE-2 saves the profile", "passed"),
            row("CASE-30", "failed"),
        ];
        let got = check(
            &["CASE-1".into(), "CASE-2".into(), "CASE-3".into()],
            &[rows],
        );
        assert_eq!(got[0].1, Finding::Passed(row("CASE-1", "pass")));
        assert_eq!(
            got[1].1,
            Finding::Passed(row("suite > CASE-2 saves the profile", "passed"))
        );
        // CASE-3 is inside CASE-30 but not at a boundary.
        assert_eq!(got[2].1, Finding::Missing);
        let only = check(&["X".into()], &[vec![row("whatever", "ok")]]);
        assert_eq!(only[0].1, Finding::Passed(row("whatever", "ok")));
    }

    #[test]
    fn only_pass_words_pass() {
        for s in ["pass", "PASSED", "success", "ok"] {
            assert!(row("a", s).passed(), "{s}");
        }
        for s in ["fail", "skip", "todo", "missing", "skipped", ""] {
            assert!(!row("a", s).passed(), "{s}");
        }
    }

    #[test]
    fn explicit_rows_come_from_the_root_or_foundation() {
        assert_eq!(
            explicit_rows(br#"{"criticalCases": [{"id": "a", "status": "pass"}, {"id": "b"}]}"#),
            vec![row("a", "pass"), row("b", "missing")]
        );
        assert_eq!(
            explicit_rows(br#"{"foundation": {"criticalCases": [{"id": "c", "status": "fail"}]}}"#),
            vec![row("c", "fail")]
        );
        assert!(explicit_rows(b"TAP version 13\n").is_empty());
    }

    #[test]
    fn the_first_source_with_rows_decides() {
        let explicit = vec![row("a", "fail")];
        let tests = vec![row("a", "passed")];
        let got = check(&["a".into()], &[explicit, tests]);
        assert_eq!(got[0].1, Finding::NotPassed(row("a", "fail")));
    }
}
