//! Whether re-executions reproduce a receipt (`rerun`): each run against the receipt —
//! result, counts, per-test outcomes — and the runs against each other. A test whose
//! outcome is not the same in every rerun is flaky; one that differs from the receipt the
//! same way in every rerun is a difference (it reproduces otherwise here); a report whose
//! bytes differ while the results do not is nondeterministic, and still reproduces.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::proof::receipt::{ArtifactKind, Counts, Outcome, Proof, TestNames};

/// What one run (or the receipt) says, as compared.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The run's id (the receipt's for the recorded one).
    pub run_id: String,
    /// The result.
    pub outcome: Outcome,
    /// The test counts.
    pub counts: Option<Counts>,
    /// Tests that passed.
    pub passed: Vec<String>,
    /// Tests that failed.
    pub failed: Vec<String>,
    /// Tests skipped or otherwise inconclusive.
    pub warned: Vec<String>,
    /// The SHA-256 of the structured report, when there is one.
    pub report: Option<String>,
}

impl RunView {
    /// What `proof` (written by run `run_id`, listing `tests`) says, names sorted.
    pub fn of(run_id: &str, proof: &Proof, tests: TestNames) -> Self {
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        Self {
            run_id: run_id.to_owned(),
            outcome: proof.outcome,
            counts: proof.counts.clone(),
            passed: sorted(tests.passed),
            failed: sorted(tests.failed),
            warned: sorted(tests.warned),
            report: proof
                .artifacts
                .iter()
                .find(|a| a.kind == ArtifactKind::StructuredReport)
                .map(|a| a.sha256.to_hex()),
        }
    }

    /// What became of test `name` in this run.
    fn outcome_of(&self, name: &str) -> &'static str {
        if self.passed.iter().any(|x| x == name) {
            "passed"
        } else if self.failed.iter().any(|x| x == name) {
            "failed"
        } else if self.warned.iter().any(|x| x == name) {
            "skipped"
        } else {
            "absent"
        }
    }
}

/// The conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reproduced {
    /// Every run gave what the receipt records.
    Reproduced,
    /// Something differs.
    Differs,
}

/// What became of the structured report's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportBytes {
    /// Neither the receipt nor a run has one.
    None,
    /// Every run wrote the recorded bytes.
    Identical,
    /// Its bytes differ, as the results do.
    Differs,
    /// Its bytes differ while the results do not.
    Nondeterministic,
}

/// Every run compared with the receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The conclusion.
    pub verdict: Reproduced,
    /// What differs, one sentence each.
    pub differences: Vec<String>,
    /// Tests whose outcome was not the same in every rerun.
    pub flaky: Vec<String>,
    /// What became of the report's bytes.
    pub report: ReportBytes,
}

/// Compares every run with the receipt: the verdict, what differs, the flaky tests, and
/// what became of the report's bytes.
pub fn compare(recorded: &RunView, runs: &[RunView]) -> Comparison {
    let mut differences = result_differences(recorded, runs);
    let (tests, flaky) = test_differences(recorded, runs);
    let results_differ = !differences.is_empty() || !tests.is_empty();
    differences.extend(tests);
    let report = if recorded.report.is_none() && runs.iter().all(|r| r.report.is_none()) {
        ReportBytes::None
    } else if runs.iter().all(|r| r.report == recorded.report) {
        ReportBytes::Identical
    } else if results_differ {
        // The bytes differ because the results do: nothing to say of the report itself.
        ReportBytes::Differs
    } else {
        ReportBytes::Nondeterministic
    };
    let verdict = if differences.is_empty() {
        Reproduced::Reproduced
    } else {
        Reproduced::Differs
    };
    Comparison {
        verdict,
        differences,
        flaky,
        report,
    }
}

/// Each run whose result or counts are not the receipt's, one sentence each.
fn result_differences(recorded: &RunView, runs: &[RunView]) -> Vec<String> {
    let shown = |c: &Option<Counts>| c.as_ref().map_or_else(|| "none".to_owned(), Counts::shown);
    let mut differences = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let n = i + 1;
        if r.outcome != recorded.outcome {
            differences.push(format!(
                "result: {} recorded, {} in run {n}",
                recorded.outcome.as_str(),
                r.outcome.as_str()
            ));
        }
        if r.counts != recorded.counts {
            differences.push(format!(
                "counts: {} recorded, {} in run {n}",
                shown(&recorded.counts),
                shown(&r.counts)
            ));
        }
    }
    differences
}

/// The tests whose outcome differs, one sentence each, and those of them that flipped
/// between the reruns (one machine, the same trees, one after the other): flaky.
fn test_differences(recorded: &RunView, runs: &[RunView]) -> (Vec<String>, Vec<String>) {
    let all: Vec<&RunView> = std::iter::once(recorded).chain(runs.iter()).collect();
    let names: BTreeSet<&String> = all
        .iter()
        .flat_map(|v| v.passed.iter().chain(&v.failed).chain(&v.warned))
        .collect();
    let mut differences = Vec::new();
    let mut flaky = Vec::new();
    for name in names {
        let in_runs: BTreeSet<&str> = runs.iter().map(|v| v.outcome_of(name)).collect();
        let was = recorded.outcome_of(name);
        if in_runs.len() > 1 {
            let per: Vec<String> = all
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let who = if i == 0 {
                        "recorded".to_owned()
                    } else {
                        format!("run {i}")
                    };
                    format!("{who} {}", v.outcome_of(name))
                })
                .collect();
            differences.push(format!("test `{name}` flipped: {}", per.join(", ")));
            flaky.push(name.clone());
        } else if let Some(now) = in_runs.first()
            && *now != was
        {
            let every = if runs.len() == 1 {
                "in the rerun".to_owned()
            } else {
                format!("in all {} reruns", runs.len())
            };
            differences.push(format!("test `{name}`: {was} recorded, {now} {every}"));
        }
    }
    (differences, flaky)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, outcome: Outcome, passed: &[&str], failed: &[&str], report: &str) -> RunView {
        RunView {
            run_id: id.to_owned(),
            outcome,
            counts: None,
            passed: passed.iter().map(|t| (*t).to_owned()).collect(),
            failed: failed.iter().map(|t| (*t).to_owned()).collect(),
            warned: Vec::new(),
            report: Some(report.to_owned()),
        }
    }

    #[test]
    fn a_test_is_flaky_only_when_the_reruns_disagree() {
        let recorded = run("r", Outcome::Pass, &["coin", "value"], &[], "a");
        // One rerun that fails it: a difference, not flakiness, and the report differs
        // because the results do.
        let once = [run("1", Outcome::Fail, &["value"], &["coin"], "b")];
        let c = compare(&recorded, &once);
        assert_eq!(c.verdict, Reproduced::Differs);
        assert!(c.flaky.is_empty(), "{:?}", c.differences);
        assert_eq!(
            c.differences,
            [
                "result: pass recorded, fail in run 1",
                "test `coin`: passed recorded, failed in the rerun"
            ]
        );
        assert_eq!(c.report, ReportBytes::Differs);
        // Reruns that disagree among themselves: flaky.
        let twice = [
            run("1", Outcome::Fail, &["value"], &["coin"], "b"),
            run("2", Outcome::Pass, &["coin", "value"], &[], "c"),
        ];
        let c = compare(&recorded, &twice);
        assert_eq!(c.flaky, ["coin"]);
        assert!(
            c.differences.contains(
                &"test `coin` flipped: recorded passed, run 1 failed, run 2 passed".to_owned()
            ),
            "{:?}",
            c.differences
        );
        // The same results with other bytes: a nondeterministic report, reproduced.
        let same = [run("1", Outcome::Pass, &["coin", "value"], &[], "d")];
        let c = compare(&recorded, &same);
        assert_eq!(c.verdict, Reproduced::Reproduced, "{:?}", c.differences);
        assert!(c.flaky.is_empty());
        assert_eq!(c.report, ReportBytes::Nondeterministic);
    }

    #[test]
    fn a_test_that_differs_in_every_rerun_is_a_difference_not_flakiness() {
        let recorded = run("r", Outcome::Pass, &["a", "b"], &[], "x");
        let runs = [
            run("1", Outcome::Pass, &["a"], &[], "x"),
            run("2", Outcome::Pass, &["a"], &[], "x"),
        ];
        let c = compare(&recorded, &runs);
        assert_eq!(c.verdict, Reproduced::Differs);
        assert!(c.flaky.is_empty());
        assert_eq!(
            c.differences,
            ["test `b`: passed recorded, absent in all 2 reruns"]
        );
        assert_eq!(c.report, ReportBytes::Identical);
    }

    #[test]
    fn counts_and_missing_reports_are_compared() {
        let mut recorded = run("r", Outcome::Pass, &["a"], &[], "x");
        recorded.report = None;
        let mut same = recorded.clone();
        same.run_id = "1".to_owned();
        let c = compare(&recorded, std::slice::from_ref(&same));
        assert_eq!(c.verdict, Reproduced::Reproduced);
        assert_eq!(c.report, ReportBytes::None);
        let mut counted = same.clone();
        counted.counts = Some(Counts::default());
        let c = compare(&recorded, &[counted]);
        assert_eq!(c.verdict, Reproduced::Differs);
        assert_eq!(c.differences.len(), 1);
        assert!(
            c.differences[0].starts_with("counts: none recorded, "),
            "{:?}",
            c.differences
        );
    }

    #[test]
    fn report_states_are_named_as_payloads_always_named_them() {
        let named: Vec<serde_json::Value> = [
            ReportBytes::None,
            ReportBytes::Identical,
            ReportBytes::Differs,
            ReportBytes::Nondeterministic,
        ]
        .iter()
        .map(|r| serde_json::to_value(r).expect("serializes"))
        .collect();
        assert_eq!(
            named,
            ["none", "identical", "differs", "nondeterministic"].map(serde_json::Value::from)
        );
    }
}
