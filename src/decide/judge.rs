//! Adapters' verdicts: from what a run produced (exit status, structured
//! report) to one outcome per receipt the provider writes.
//!
//! The rules are the product's honesty guarantees:
//! - `command`: pass iff it exited 0 within its timeout.
//! - `test-discovery`: the test receipt passes iff the command exited 0 and
//!   its structured report parsed, shows no failure and no runner error, and
//!   at least one test executed (passed or failed): a suite in which every
//!   test was skipped, todo or never run, or that lists none (`pytest --co`),
//!   is `inconclusive`, never a pass. A missing or unreadable report — and a
//!   report whose counts are malformed, out of range, repeated or not backed
//!   by its tests is unreadable — is never a pass (`inconclusive` after exit
//!   0, `fail` otherwise). The discovery receipt counts the tests that
//!   executed, passed or failed (so a failing run still discovers its tests):
//!   no readable report → `inconclusive`; below `minimum` (absent or 0 means
//!   1) → `fail`, whatever the exit code.
//! - **A replay is not a run.** Tests a runner replayed from its result cache (go test's
//!   `(cached)` packages) did not execute: a test receipt that would otherwise pass is
//!   `inconclusive` with a reason that names the fix (`-count=1`), and so is a discovery
//!   receipt below its minimum because of them. The receipt's counts say `replayed`, never
//!   `passed`.
//! - `playwright`: as a test run, and every claim needs a passing test
//!   annotated `{type: claim, description: <id>}`; skipped, interrupted and
//!   never-run tests do not count; a claim without one makes an otherwise
//!   passing run `inconclusive`, never `pass`.
//! - A command that could not be started, or a service it needed that never
//!   became ready, is an `error` (infrastructure), not a `fail`.

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::graph::{Claims, Output, ProviderNode};
use proofgraph_graph::{Adapter, CapabilityName};

use crate::base::redact::{Redact, Secrets};
use crate::decide::report::{self, Declared, TestReport};
use crate::proof::receipt::{ClaimOutcome, Counts, Exit, Failures, Outcome, TestNames};

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The command ran and ended.
    Exited(Exit),
    /// It could not run (not started, or a prerequisite service failed).
    Error(String),
}

/// What the report file held, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportFile {
    /// The adapter reads no report.
    NotExpected,
    /// No file where the report should be.
    Missing(String),
    /// The file's bytes.
    Bytes(String, Vec<u8>),
    /// A file is there, but it is not evidence (a link, a FIFO, over the size bound,
    /// written before the run): the path and why.
    Refused(String, String),
}

/// The verdict for one receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptVerdict {
    /// Which receipt.
    pub output: Output,
    /// Its outcome.
    pub outcome: Outcome,
    /// Why (always set unless it passed).
    pub reason: Option<String>,
    /// Tests discovered (discovery receipts).
    pub discovered: Option<u64>,
    /// The effective minimum (discovery receipts).
    pub minimum: Option<u64>,
    /// Per claim, when claims are judged separately (Playwright).
    pub claims: BTreeMap<String, ClaimOutcome>,
    /// The provider's critical cases and the status each was observed with.
    pub critical_cases: BTreeMap<String, String>,
}

/// Everything the run established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// One verdict per output, in output order.
    pub verdicts: Vec<ReceiptVerdict>,
    /// Test counts from the report.
    pub counts: Option<Counts>,
    /// Test names by result.
    pub tests: TestNames,
    /// What the tests attached (Playwright screenshots, traces, inline
    /// bodies), as the report lists them.
    pub attachments: Vec<report::Attachment>,
    /// The failing tests with what their runner attached to each, bounded.
    pub failures: Failures,
}

impl Redact for ReportFile {
    /// The bytes before they are parsed (every reading of them, see [`crate::base::redact`]),
    /// and the path and reason shown.
    fn redact(&mut self, secrets: &Secrets) {
        match self {
            ReportFile::NotExpected => {}
            ReportFile::Missing(path) => path.redact(secrets),
            ReportFile::Bytes(path, bytes) => {
                path.redact(secrets);
                bytes.redact(secrets);
                // Base64 is an encoding the product decodes too (inline attachments).
                if let Some(rewritten) = report::redact_inline_bodies(bytes, secrets) {
                    *bytes = rewritten;
                }
            }
            ReportFile::Refused(path, why) => {
                path.redact(secrets);
                why.redact(secrets);
            }
        }
    }
}

impl Redact for ReceiptVerdict {
    fn redact(&mut self, secrets: &Secrets) {
        let ReceiptVerdict {
            output: _,
            outcome: _,
            reason,
            discovered: _,
            minimum: _,
            claims,
            critical_cases,
        } = self;
        reason.redact(secrets);
        claims.redact(secrets);
        critical_cases.redact(secrets);
    }
}

impl Redact for Judged {
    /// Every string a run established: reasons, claim and critical-case outcomes, test
    /// names, attachments (names, paths, types and inline bodies), failure messages.
    fn redact(&mut self, secrets: &Secrets) {
        let Judged {
            verdicts,
            counts: _,
            tests,
            attachments,
            failures,
        } = self;
        verdicts.redact(secrets);
        tests.redact(secrets);
        attachments.redact(secrets);
        failures.redact(secrets);
    }
}

fn describe_exit(exit: &Exit, timeout_ms: u64) -> String {
    if exit.timed_out {
        return format!("timed out after {timeout_ms} ms");
    }
    match (exit.code, exit.signal) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended without an exit status".to_owned(),
    }
}

/// Replaces every verdict (and every claim's within it) that is not already an `error`
/// with `outcome` and `reason`: what was observed cannot be judged at all.
pub fn overrule(judged: &mut Judged, outcome: Outcome, reason: &str) {
    for verdict in &mut judged.verdicts {
        if verdict.outcome != Outcome::Error {
            verdict.outcome = outcome;
            verdict.reason = Some(reason.to_owned());
        }
        for claim in verdict.claims.values_mut() {
            if claim.outcome != Outcome::Error {
                claim.outcome = outcome;
                claim.reason = Some(reason.to_owned());
            }
        }
    }
}

/// Whether a command's exit is a success: code 0, not timed out.
pub fn succeeded(exit: &Exit) -> bool {
    exit.code == Some(0) && !exit.timed_out
}

/// Whether a provider's verdict follows from its command's exit status alone (a command
/// without critical cases): exit 0 is a pass, anything else a failure. Every other
/// provider is judged from a report too.
pub fn judged_by_exit_status(provider: &ProviderNode) -> bool {
    provider.spec.adapter.value == Adapter::Command
        && provider
            .spec
            .critical_cases
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// The effective discovery floor: absent or 0 means 1.
pub fn effective_minimum(provider: &ProviderNode) -> u64 {
    provider.spec.minimum.as_ref().map_or(1, |m| m.value).max(1)
}

/// Judges one provider's execution.
///
/// `claims` are the change's claims: a Playwright output judges, per claim
/// of the provider that requires the output's capability, whether a passing
/// test is annotated with it.
pub fn judge(
    provider: &ProviderNode,
    claims: &dyn Claims,
    ended: &Ended,
    report_file: &ReportFile,
    timeout_ms: u64,
) -> Judged {
    judge_with_floor(
        provider,
        claims,
        ended,
        report_file,
        timeout_ms,
        effective_minimum(provider),
        &[],
    )
}

/// [`judge`], with the discovery floor given — for a producer whose discovery receipt goes
/// to a declared receiver, the stricter of the two providers' minimums — and the command's
/// `log` (as kept): read only for what its report does not say of itself, the test binaries
/// cargo announced ([`report::cargo_suites`]), which name a cargo test stream's tests.
pub fn judge_with_floor(
    provider: &ProviderNode,
    claims: &dyn Claims,
    ended: &Ended,
    report_file: &ReportFile,
    timeout_ms: u64,
    floor: u64,
    log: &[u8],
) -> Judged {
    let exit = match ended {
        Ended::Exited(exit) => exit,
        Ended::Error(reason) => {
            let verdicts = provider
                .outputs
                .iter()
                .map(|o| ReceiptVerdict {
                    output: o.clone(),
                    outcome: Outcome::Error,
                    reason: Some(reason.clone()),
                    discovered: None,
                    minimum: None,
                    claims: BTreeMap::new(),
                    critical_cases: BTreeMap::new(),
                })
                .collect();
            return Judged {
                verdicts,
                counts: None,
                tests: TestNames::default(),
                attachments: Vec::new(),
                failures: Failures::default(),
            };
        }
    };
    let ran = describe_exit(exit, timeout_ms);
    let parsed: Option<Result<TestReport, String>> = match report_file {
        ReportFile::NotExpected => None,
        ReportFile::Missing(path) if provider.spec.adapter.value == Adapter::Playwright => {
            Some(Err(format!(
                "it wrote no Playwright JSON report at `{path}`; a wrapper command (such as `npm run e2e`) must run `playwright test --reporter=json` (PLAYWRIGHT_JSON_OUTPUT_FILE is set for it) or write the provider's `report`"
            )))
        }
        ReportFile::Missing(path) => Some(Err(format!("it wrote no report at `{path}`"))),
        ReportFile::Refused(path, why) => {
            Some(Err(format!("its report `{path}` is not evidence: {why}")))
        }
        ReportFile::Bytes(path, bytes) => {
            let declared = provider
                .spec
                .report_format
                .as_ref()
                .and_then(|f| Declared::from_config(Some(f.value.as_str())))
                .unwrap_or(Declared::Auto);
            let libtest = report::Format::LibtestJson;
            let suites = if declared == Declared::Exactly(libtest)
                || (declared == Declared::Auto && report::sniff(bytes) == Some(libtest))
            {
                report::cargo_suites(log)
            } else {
                Vec::new()
            };
            Some(
                report::parse_with(bytes, declared, &suites)
                    .map_err(|e| format!("its report `{path}` could not be read: failed to {e}")),
            )
        }
    };
    let report = parsed.as_ref().and_then(|r| r.as_ref().ok());
    let counts = report.map(|r| {
        let c = r.counts;
        Counts {
            total: c.total,
            passed: c.passed,
            failed: c.failed,
            skipped: c.skipped,
            todo: c.todo,
            replayed: c.replayed,
        }
    });
    let tests = report.map(test_names).unwrap_or_default();
    let adapter = provider.spec.adapter.value;
    let annotated = report.map(annotated_claims).unwrap_or_default();
    let required_cases: Vec<String> = provider
        .spec
        .critical_cases
        .iter()
        .flatten()
        .map(|c| c.value.trim().to_owned())
        .collect();
    let critical_sources = if required_cases.is_empty() {
        Vec::new()
    } else {
        let explicit = match report_file {
            ReportFile::Bytes(_, bytes) => report::explicit_rows(bytes),
            _ => Vec::new(),
        };
        let annotated = report.map(report::annotated_rows).unwrap_or_default();
        let tests = report.map(report::test_rows).unwrap_or_default();
        vec![explicit, annotated, tests]
    };
    let verdicts = provider
        .outputs
        .iter()
        .map(|output| {
            let discovery = output.capability == CapabilityName::discovery()
                && adapter == Adapter::TestDiscovery;
            if discovery {
                return discovery_verdict(floor, output, parsed.as_ref());
            }
            let (outcome, reason) = match adapter {
                Adapter::Command | Adapter::ContractDigest => {
                    if succeeded(exit) {
                        (Outcome::Pass, None)
                    } else {
                        (Outcome::Fail, Some(format!("the command {ran}")))
                    }
                }
                Adapter::TestDiscovery | Adapter::Playwright => {
                    test_outcome(exit, &ran, parsed.as_ref())
                }
                Adapter::External => (
                    Outcome::Error,
                    Some("the external adapter runs nothing; it takes a signed result".to_owned()),
                ),
            };
            let mut verdict = ReceiptVerdict {
                output: output.clone(),
                outcome,
                reason,
                discovered: None,
                minimum: None,
                claims: BTreeMap::new(),
                critical_cases: BTreeMap::new(),
            };
            if !required_cases.is_empty() && verdict.outcome == Outcome::Pass {
                judge_critical_cases(&mut verdict, &required_cases, &critical_sources);
            }
            if adapter == Adapter::Playwright {
                judge_claims(&mut verdict, provider, claims, &annotated);
            }
            verdict
        })
        .collect();
    let attachments = report
        .map(|r| {
            r.tests
                .iter()
                .flat_map(|t| t.attachments.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    let failures = report.map(failures_of).unwrap_or_default();
    Judged {
        verdicts,
        counts,
        tests,
        attachments,
        failures,
    }
}

/// The report's failing tests and their messages, as a receipt keeps them.
fn failures_of(report: &TestReport) -> Failures {
    Failures::bounded(
        report
            .tests
            .iter()
            .filter(|t| t.outcome == report::TestOutcome::Failed)
            .map(|t| (t.id.clone(), t.failure.clone())),
    )
}

/// Why replayed results are not a pass: what replayed how many tests, and the fix.
fn replay_reason(report: &TestReport) -> String {
    let n = report.counts.replayed;
    let tests = if n == 1 { "test" } else { "tests" };
    let mut parts: Vec<String> = report
        .replays
        .iter()
        .take(3)
        .map(|p| format!("`{p}`"))
        .collect();
    if report.replays.len() > 3 {
        parts.push(format!("{} more", report.replays.len() - 3));
    }
    match report.format {
        report::Format::GoTestJson => {
            let lines = if report.replays.len() == 1 {
                "the result line of package"
            } else {
                "the result lines of packages"
            };
            let say = if report.replays.len() == 1 {
                "says"
            } else {
                "say"
            };
            format!(
                "go test replayed {n} {tests} from its test cache instead of running them ({lines} {} {say} `(cached)`); a replay is not a run: add `-count=1` to the `go test` command",
                parts.join(", ")
            )
        }
        _ => format!(
            "the runner replayed {n} {tests} from its result cache instead of running them; a replay is not a run: run them without the cache"
        ),
    }
}

fn test_outcome(
    exit: &Exit,
    ran: &str,
    parsed: Option<&Result<TestReport, String>>,
) -> (Outcome, Option<String>) {
    let report = match parsed {
        None | Some(Err(_)) => {
            let why = match parsed {
                Some(Err(e)) => e.clone(),
                _ => "it declares no report".to_owned(),
            };
            return if succeeded(exit) {
                (
                    Outcome::Inconclusive,
                    Some(format!(
                        "the command exited 0 but {why}; a run without a structured report is not a pass"
                    )),
                )
            } else {
                (Outcome::Fail, Some(format!("the command {ran}, and {why}")))
            };
        }
        Some(Ok(r)) => r,
    };
    let failed: Vec<&str> = report
        .tests
        .iter()
        .filter(|t| t.outcome == report::TestOutcome::Failed)
        .map(|t| t.id.as_str())
        .take(5)
        .collect();
    let counts = report.counts;
    let failed_count = counts.failed;
    if !succeeded(exit) {
        let detail = if failed.is_empty() {
            String::new()
        } else {
            format!("; failing: {}", failed.join(", "))
        };
        return (Outcome::Fail, Some(format!("the command {ran}{detail}")));
    }
    if failed_count > 0 {
        return (
            Outcome::Fail,
            Some(format!(
                "the report shows {failed_count} failed tests ({}) although the command exited 0",
                failed.join(", ")
            )),
        );
    }
    if let Some(first) = report.runner_errors.first() {
        return (
            Outcome::Fail,
            Some(format!("the report records a runner error: {first}")),
        );
    }
    if counts.replayed > 0 {
        return (Outcome::Inconclusive, Some(replay_reason(report)));
    }
    if counts.executed() == 0 {
        return (
            Outcome::Inconclusive,
            Some(format!(
                "no test executed: the report {}; a run in which no test passed or failed is not a pass",
                describe_unexecuted(&counts)
            )),
        );
    }
    (Outcome::Pass, None)
}

/// What a report that executed nothing holds, e.g. `lists 5 tests, 4 skipped and 1 todo`.
fn describe_unexecuted(counts: &report::TestCounts) -> String {
    if counts.total == 0 {
        return "lists no test".to_owned();
    }
    let parts: Vec<String> = [
        (counts.skipped, "skipped"),
        (counts.todo, "todo"),
        (counts.interrupted, "interrupted"),
        (counts.did_not_run, "never run"),
        (counts.replayed, "replayed"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let tests = if counts.total == 1 { "test" } else { "tests" };
    match parts.split_last() {
        None => format!("lists {} {tests}", counts.total),
        Some((last, [])) => format!("lists {} {tests}, {last}", counts.total),
        Some((last, rest)) => format!(
            "lists {} {tests}, {} and {last}",
            counts.total,
            rest.join(", ")
        ),
    }
}

fn discovery_verdict(
    minimum: u64,
    output: &Output,
    parsed: Option<&Result<TestReport, String>>,
) -> ReceiptVerdict {
    let (outcome, reason, discovered) = match parsed {
        None => (
            Outcome::Inconclusive,
            Some("the provider declares no report to count tests from".to_owned()),
            None,
        ),
        Some(Err(e)) => (
            Outcome::Inconclusive,
            Some(format!("no test count: {e}")),
            None,
        ),
        // Discovery counts the tests that executed, passed or failed: skipped, todo and
        // never-run tests are not discovered, and a failing run still discovers its tests.
        Some(Ok(report)) => match report.executed() {
            // Replayed tests did not run: below the floor because of them, the count says
            // nothing of the suite.
            n if n < minimum && report.counts.replayed > 0 => (
                Outcome::Inconclusive,
                Some(format!(
                    "the suite ran {n} tests, below its minimum of {minimum}, and {}",
                    replay_reason(report)
                )),
                Some(n),
            ),
            n if n < minimum => {
                let listed = report.counts.total;
                let detail = if listed == n {
                    String::new()
                } else {
                    format!(" ({listed} listed; skipped, todo and unrun tests do not count)")
                };
                (
                    Outcome::Fail,
                    Some(format!(
                        "the suite ran {n} tests{detail}, below its minimum of {minimum}"
                    )),
                    Some(n),
                )
            }
            n => (Outcome::Pass, None, Some(n)),
        },
    };
    ReceiptVerdict {
        output: output.clone(),
        outcome,
        reason,
        discovered,
        minimum: Some(minimum),
        claims: BTreeMap::new(),
        critical_cases: BTreeMap::new(),
    }
}

fn test_names(report: &TestReport) -> TestNames {
    let mut names = TestNames::default();
    for t in &report.tests {
        match t.outcome {
            report::TestOutcome::Passed => names.passed.push(t.id.clone()),
            report::TestOutcome::Failed => names.failed.push(t.id.clone()),
            _ => names.warned.push(t.id.clone()),
        }
    }
    names
}

/// Applies the provider's critical cases to a passing verdict: each must be
/// observed passing in the report, or the verdict fails naming the cases.
fn judge_critical_cases(
    verdict: &mut ReceiptVerdict,
    required: &[String],
    sources: &[Vec<report::CriticalRow>],
) {
    let mut problems = Vec::new();
    for (id, finding) in report::check_critical(required, sources) {
        let status = match &finding {
            report::CriticalFinding::Passed(row) | report::CriticalFinding::NotPassed(row) => {
                row.status.clone()
            }
            report::CriticalFinding::Missing => "missing".to_owned(),
        };
        match &finding {
            report::CriticalFinding::Passed(_) => {}
            report::CriticalFinding::NotPassed(row) if row.id != id => {
                problems.push(format!("`{id}` is `{status}` (as `{}`)", row.id));
            }
            report::CriticalFinding::NotPassed(_) => problems.push(format!("`{id}` is `{status}`")),
            report::CriticalFinding::Missing => {
                problems.push(format!("`{id}` is not in the report"));
            }
        }
        verdict.critical_cases.insert(id, status);
    }
    if !problems.is_empty() {
        verdict.outcome = Outcome::Fail;
        verdict.reason = Some(format!(
            "critical case(s) not observed passing: {}",
            problems.join("; ")
        ));
    }
}

/// The claims named by `{type: "claim", description: <id>}` annotations of
/// passing tests. Skipped, failed and unrun tests prove nothing.
fn annotated_claims(report: &TestReport) -> BTreeSet<String> {
    report
        .tests
        .iter()
        .filter(|t| t.outcome == report::TestOutcome::Passed)
        .flat_map(|t| t.annotations.iter())
        .filter(|a| a.kind == "claim")
        .filter_map(|a| a.description.as_deref().map(|d| d.trim().to_owned()))
        .collect()
}

/// Judges a Playwright output claim by claim: each claim of the provider
/// that requires the output's capability shares the run's outcome when the
/// run did not pass, and otherwise passes only when a passing test is
/// annotated with it. The output's outcome is then the worst claim's.
fn judge_claims(
    verdict: &mut ReceiptVerdict,
    provider: &ProviderNode,
    claims: &dyn Claims,
    annotated: &BTreeSet<String>,
) {
    let capability = &verdict.output.capability;
    let relevant: Vec<String> = provider
        .claims
        .iter()
        .filter(|id| {
            claims
                .claim(id)
                .is_none_or(|c| c.required_capabilities().contains(capability))
        })
        .map(ToString::to_string)
        .collect();
    if verdict.outcome != Outcome::Pass {
        for claim in relevant {
            verdict.claims.insert(
                claim,
                ClaimOutcome {
                    outcome: verdict.outcome,
                    reason: verdict.reason.clone(),
                },
            );
        }
        return;
    }
    let mut gaps = Vec::new();
    for claim in relevant {
        let outcome = if annotated.contains(&claim) {
            ClaimOutcome {
                outcome: Outcome::Pass,
                reason: None,
            }
        } else {
            gaps.push(claim.clone());
            ClaimOutcome {
                outcome: Outcome::Inconclusive,
                reason: Some(format!(
                    "no passing test is annotated {{type: \"claim\", description: \"{claim}\"}}; skipped and unrun tests do not count"
                )),
            }
        };
        verdict.claims.insert(claim, outcome);
    }
    if !gaps.is_empty() {
        verdict.outcome = Outcome::Inconclusive;
        verdict.reason = Some(format!(
            "no passing test is annotated {{type: \"claim\", description: …}} for claim(s) {}; skipped and unrun tests do not count",
            gaps.join(", ")
        ));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use proofgraph_graph::model::{Claim, Provider};
    use proofgraph_graph::span::{Pos, Spanned};
    use proofgraph_graph::{ClaimId, GraphBuilder, ProviderId, RepoId, Repositories};

    use super::*;

    /// No claims: a provider judged on its own.
    pub(crate) static NO_CLAIMS: Vec<Claim> = Vec::new();

    /// A provider `test` of `adapter` (reportFormat absent, so reports are sniffed).
    pub(crate) fn node(adapter: Adapter, minimum: Option<u64>) -> ProviderNode {
        let mut p = Provider::new(ProviderId::parse("test").expect("valid"), adapter);
        p.command = Some(Spanned::new(vec!["t".into()], Pos::default()));
        p.minimum = minimum.map(|m| Spanned::new(m, Pos::default()));
        let mut b = GraphBuilder::new(Repositories {
            ids: [RepoId::root()].into(),
        });
        b.claims([Claim::new(
            ClaimId::parse("c").expect("valid"),
            [CapabilityName::test()],
        )]);
        b.provider(p, Arc::from("x"));
        let g = b.seal().expect("seal");
        let id = g
            .provider(&ProviderId::parse("test").expect("valid"))
            .expect("node");
        g.node(id).provider().expect("provider").clone()
    }

    /// A command that exited with `code`.
    pub(crate) fn exit(code: i32) -> Ended {
        Ended::Exited(Exit {
            code: Some(code),
            signal: None,
            timed_out: false,
        })
    }

    fn outcomes(j: &Judged) -> Vec<(String, Outcome)> {
        j.verdicts
            .iter()
            .map(|v| (v.output.capability.to_string(), v.outcome))
            .collect()
    }

    const TAP_3: &[u8] = b"TAP version 13\n1..3\nok 1 - a\nok 2 - b\nok 3 - c\n";

    #[test]
    fn a_suite_below_its_minimum_fails_discovery_even_when_it_passes() {
        let j = judge(
            &node(Adapter::TestDiscovery, Some(5)),
            &NO_CLAIMS,
            &exit(0),
            &ReportFile::Bytes("r.tap".into(), TAP_3.to_vec()),
            1,
        );
        assert_eq!(
            outcomes(&j),
            vec![
                ("discovery".into(), Outcome::Fail),
                ("test".into(), Outcome::Pass)
            ]
        );
        assert_eq!(
            j.verdicts[0].reason.as_deref(),
            Some("the suite ran 3 tests, below its minimum of 5")
        );
        assert_eq!(j.verdicts[0].discovered, Some(3));
    }

    #[test]
    fn exit_0_without_a_report_is_not_a_pass() {
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(0),
            &ReportFile::Missing("r.json".into()),
            1,
        );
        assert_eq!(
            outcomes(&j),
            vec![
                ("discovery".into(), Outcome::Inconclusive),
                ("test".into(), Outcome::Inconclusive)
            ]
        );
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(0),
            &ReportFile::Bytes("r.json".into(), b"not a report".to_vec()),
            1,
        );
        assert_eq!(
            outcomes(&j),
            vec![
                ("discovery".into(), Outcome::Inconclusive),
                ("test".into(), Outcome::Inconclusive)
            ]
        );
    }

    /// Judges `report` for a `test-discovery` provider with `minimum` after `code`; returns
    /// (discovery, test) as (outcome, reason, discovered).
    fn judged(
        report: &[u8],
        code: i32,
        minimum: Option<u64>,
    ) -> [(Outcome, String, Option<u64>); 2] {
        let j = judge(
            &node(Adapter::TestDiscovery, minimum),
            &NO_CLAIMS,
            &exit(code),
            &ReportFile::Bytes("r".into(), report.to_vec()),
            1,
        );
        assert_eq!(outcomes(&j)[0].0, "discovery");
        assert_eq!(outcomes(&j)[1].0, "test");
        [0, 1].map(|i| {
            let v = &j.verdicts[i];
            (
                v.outcome,
                v.reason.clone().unwrap_or_default(),
                v.discovered,
            )
        })
    }

    #[test]
    fn a_count_that_is_not_a_count_makes_the_report_not_evidence() {
        // A count written as a string is never coerced, skipped or read as zero: the whole
        // report is unreadable, so the test is not a pass and discovery has no count.
        for report in [
            &br#"{"numTotalTests": "5", "numPassedTests": 5, "numFailedTests": 0}"#[..],
            br#"{"numTotalTests": "5", "testResults": []}"#,
            br#"{"totalTests": 5, "failed": "3"}"#,
            br#"{"totalTests": 5, "failed": 3.0}"#,
            br#"{"totalTests": 5, "failed": -3}"#,
            br#"{"totalTests": 5, "failed": 3, "failed": 0}"#,
        ] {
            let text = String::from_utf8_lossy(report);
            let [discovery, test] = judged(report, 0, None);
            assert_eq!(discovery.0, Outcome::Inconclusive, "{text}: {discovery:?}");
            assert!(discovery.1.starts_with("no test count: "), "{discovery:?}");
            assert_eq!(discovery.2, None);
            assert_eq!(test.0, Outcome::Inconclusive, "{text}: {test:?}");
            assert!(
                test.1.contains("could not be read") && test.1.contains("is not a pass"),
                "{test:?}"
            );
        }
    }

    #[test]
    fn a_count_above_2_53_is_refused_and_2_53_minus_1_encodes() {
        let [discovery, test] = judged(br#"{"totalTests": 9007199254740992}"#, 0, None);
        assert_eq!(
            (discovery.0, test.0),
            (Outcome::Inconclusive, Outcome::Inconclusive)
        );
        assert!(
            test.1.contains("above the largest count 2^53-1"),
            "{test:?}"
        );
        // The largest count is judged, and what the receipt carries of it encodes as
        // canonical JSON: no report can make the receipt writer fail.
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(0),
            &ReportFile::Bytes(
                "r".into(),
                br#"{"totalTests": 9007199254740991, "failed": 0}"#.to_vec(),
            ),
            1,
        );
        assert_eq!(outcomes(&j)[1].1, Outcome::Pass);
        assert_eq!(j.verdicts[0].discovered, Some(report::MAX_COUNT));
        let value = serde_json::json!({
            "counts": serde_json::to_value(&j.counts).expect("counts"),
            "discovered": j.verdicts[0].discovered,
        });
        let bytes = crate::attest::canonical::to_canonical_json(&value).expect("encodes");
        assert!(
            String::from_utf8_lossy(&bytes).contains("9007199254740991"),
            "{bytes:?}"
        );
    }

    #[test]
    fn a_suite_where_nothing_executed_is_never_a_test_pass() {
        let cases: [(&[u8], &str, &str); 4] = [
            (
                b"TAP version 13\n1..3\nok 1 - a # SKIP\nok 2 - b # skip\nnot ok 3 - c # TODO\n",
                "no test executed: the report lists 3 tests, 2 skipped and 1 todo",
                "the suite ran 0 tests (3 listed; skipped, todo and unrun tests do not count), below its minimum of 1",
            ),
            (
                br#"<testsuite name="s" tests="2"><testcase name="a"><skipped/></testcase><testcase name="b"><skipped/></testcase></testsuite>"#,
                "no test executed: the report lists 2 tests, 2 skipped",
                "the suite ran 0 tests (2 listed; skipped, todo and unrun tests do not count), below its minimum of 1",
            ),
            (
                br#"{"totalTests": 5, "passed": 0, "skipped": 5}"#,
                "no test executed: the report lists 5 tests, 5 skipped",
                "the suite ran 0 tests (5 listed; skipped, todo and unrun tests do not count), below its minimum of 1",
            ),
            // `pytest --co --junitxml`: collected tests, ran none.
            (
                br#"<testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="0"/></testsuites>"#,
                "no test executed: the report lists no test",
                "the suite ran 0 tests, below its minimum of 1",
            ),
        ];
        for (report, test_reason, discovery_reason) in cases {
            let [discovery, test] = judged(report, 0, None);
            assert_eq!(test.0, Outcome::Inconclusive, "{test:?}");
            assert_eq!(
                test.1,
                format!("{test_reason}; a run in which no test passed or failed is not a pass")
            );
            assert_eq!(discovery.0, Outcome::Fail, "{discovery:?}");
            assert_eq!(discovery.1, discovery_reason);
            assert_eq!(discovery.2, Some(0));
        }
    }

    #[test]
    fn discovery_counts_executed_tests_and_a_failing_run_still_proves_it() {
        // 3 passed, 2 failed, 4 skipped: 5 executed.
        let report = b"TAP version 13\n1..9\nok 1\nok 2\nok 3\nnot ok 4\nnot ok 5\nok 6 # SKIP\nok 7 # SKIP\nok 8 # SKIP\nnot ok 9 # TODO\n";
        let [discovery, test] = judged(report, 1, Some(5));
        assert_eq!(
            (discovery.0, discovery.2),
            (Outcome::Pass, Some(5)),
            "{discovery:?}"
        );
        assert_eq!(test.0, Outcome::Fail);
        let [discovery, _] = judged(report, 1, Some(6));
        assert_eq!(discovery.0, Outcome::Fail);
        assert_eq!(
            discovery.1,
            "the suite ran 5 tests (9 listed; skipped, todo and unrun tests do not count), below its minimum of 6"
        );
    }

    #[test]
    fn pytest_collection_errors_are_runner_errors_not_tests() {
        let bytes = fs_err::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/reports/junit/pytest-collection-error.xml"
        ))
        .expect("fixture");
        // pytest exits 1 with --continue-on-collection-errors (2 without).
        for code in [0, 1, 2] {
            let [discovery, test] = judged(&bytes, code, Some(2));
            assert_eq!(test.0, Outcome::Fail, "{test:?}");
            // Only the one test that ran is discovered, not the two broken modules.
            assert_eq!(discovery.0, Outcome::Fail, "{discovery:?}");
            assert_eq!(discovery.2, Some(1));
        }
        let [_, test] = judged(&bytes, 0, None);
        assert_eq!(
            test.1,
            "the report records a runner error: pytest could not collect broken.test_import_error: ModuleNotFoundError: No module named 'module_that_does_not_exist'"
        );
    }

    #[test]
    fn a_declared_total_with_nothing_behind_it_is_not_evidence() {
        for report in [
            &br#"<testsuite name="s" tests="5"></testsuite>"#[..],
            br#"<testsuite name="s" tests="5"><testcase name="a"/></testsuite>"#,
            br#"{"numTotalTests": 5, "testResults": []}"#,
            b"TAP version 13\n1..5\n",
        ] {
            let [discovery, test] = judged(report, 0, None);
            assert_eq!(discovery.0, Outcome::Inconclusive, "{discovery:?}");
            assert_eq!(discovery.2, None);
            assert_eq!(test.0, Outcome::Inconclusive, "{test:?}");
            assert!(test.1.contains("declares 5 tests but"), "{test:?}");
        }
    }

    #[test]
    fn failures_and_exit_codes() {
        let failing = b"TAP version 13\n1..2\nok 1 - a\nnot ok 2 - b\n";
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(1),
            &ReportFile::Bytes("r.tap".into(), failing.to_vec()),
            1,
        );
        assert_eq!(
            outcomes(&j),
            vec![
                ("discovery".into(), Outcome::Pass),
                ("test".into(), Outcome::Fail)
            ]
        );
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(0),
            &ReportFile::Bytes("r.tap".into(), failing.to_vec()),
            1,
        );
        assert_eq!(
            j.verdicts[1].outcome,
            Outcome::Fail,
            "a failing report is a failure even after exit 0"
        );
        let j = judge(
            &node(Adapter::Command, None),
            &NO_CLAIMS,
            &exit(2),
            &ReportFile::NotExpected,
            1,
        );
        assert_eq!(
            j.verdicts[0].reason.as_deref(),
            Some("the command exited with code 2")
        );
        let timed = Ended::Exited(Exit {
            code: None,
            signal: Some(9),
            timed_out: true,
        });
        let j = judge(
            &node(Adapter::Command, None),
            &NO_CLAIMS,
            &timed,
            &ReportFile::NotExpected,
            1500,
        );
        assert_eq!(
            j.verdicts[0].reason.as_deref(),
            Some("the command timed out after 1500 ms")
        );
        let j = judge(
            &node(Adapter::Command, None),
            &NO_CLAIMS,
            &Ended::Error("not found".into()),
            &ReportFile::NotExpected,
            1,
        );
        assert_eq!(j.verdicts[0].outcome, Outcome::Error);
    }

    fn fixture(rel: &str) -> Vec<u8> {
        fs_err::read(format!(
            "{}/fixtures/reports/{rel}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture")
    }

    #[test]
    fn a_replay_from_go_s_test_cache_is_never_a_pass_and_names_the_fix() {
        // A real second `go test -json ./...`: every test replayed from the cache.
        let cached = fixture("go-test-json/cached.jsonl");
        let fix = "go test replayed 4 tests from its test cache instead of running them (the result line of package `example.com/proofgraphcached/cachedpkg` says `(cached)`); a replay is not a run: add `-count=1` to the `go test` command";
        let [discovery, test] = judged(&cached, 0, None);
        assert_eq!((test.0, test.1.as_str()), (Outcome::Inconclusive, fix));
        assert_eq!(discovery.0, Outcome::Inconclusive, "{discovery:?}");
        assert_eq!(
            discovery.1,
            format!("the suite ran 0 tests, below its minimum of 1, and {fix}")
        );
        assert_eq!(discovery.2, Some(0));
        // The receipt's counts say what happened: nothing passed.
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(0),
            &ReportFile::Bytes("r".into(), cached.clone()),
            1,
        );
        let counts = j.counts.expect("counts");
        assert_eq!((counts.passed, counts.replayed, counts.skipped), (0, 4, 1));
        assert_eq!(
            counts.shown(),
            "5 tests: 0 passed, 1 skipped, 4 replayed, not run"
        );
        assert!(j.tests.passed.is_empty(), "{:?}", j.tests);
        // A replay beside a failure is a failure; the same package run is a pass.
        let [_, test] = judged(&cached, 1, None);
        assert_eq!(test.0, Outcome::Fail);
        let [discovery, test] = judged(&fixture("go-test-json/basic.jsonl"), 1, None);
        assert_eq!((discovery.0, test.0), (Outcome::Pass, Outcome::Fail));
    }

    #[test]
    fn failing_tests_are_kept_with_their_messages_within_bounds() {
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(1),
            &ReportFile::Bytes("r".into(), fixture("go-test-json/basic.jsonl")),
            1,
        );
        let kept: Vec<(&str, Option<&str>)> = j
            .failures
            .tests
            .iter()
            .map(|f| (f.test.as_str(), f.message.as_deref()))
            .collect();
        assert_eq!(
            kept,
            [
                (
                    "example.com/proofgraphfixture/mathpkg > TestFailsOnPurpose",
                    Some("math_test.go:12: about to fail\nmath_test.go:14: Add(2, 2) = 4, want 5")
                ),
                ("example.com/proofgraphfixture/mathpkg > TestTable", None),
                (
                    "example.com/proofgraphfixture/mathpkg > TestTable/wrong_on_purpose",
                    Some("math_test.go:34: Add(0, 0) = 0, want 1")
                ),
            ]
        );
        assert_eq!(j.failures.left_out, 0);
        // 60 failing tests with 1 KiB messages: the first ones up to 16 KiB, the rest
        // counted.
        let mut tap = String::from("TAP version 13\n1..60\n");
        for i in 0..60 {
            tap.push_str(&format!(
                "not ok {} - t{i}\n# {}\n",
                i + 1,
                "x".repeat(1000)
            ));
        }
        let j = judge(
            &node(Adapter::TestDiscovery, None),
            &NO_CLAIMS,
            &exit(1),
            &ReportFile::Bytes("r".into(), tap.into_bytes()),
            1,
        );
        let bytes: usize = j
            .failures
            .tests
            .iter()
            .map(|f| f.test.len() + f.message.as_ref().map_or(0, String::len))
            .sum();
        assert!(
            bytes <= crate::proof::receipt::MAX_FAILURES_BYTES,
            "{bytes}"
        );
        assert_eq!(j.failures.tests.len(), 16);
        assert_eq!(j.failures.tests[0].test, "t0");
        assert_eq!(j.failures.left_out, 44);
        // A secret in a message is redacted with the rest of what was judged.
        let secret = "s3cr3t-value-for-test";
        let mut leaky = Failures::default();
        leaky.tests.push(crate::proof::receipt::Failure {
            test: "t".into(),
            message: Some(format!("token={secret}")),
        });
        let judged = Judged {
            failures: leaky,
            ..j
        };
        let redacted = Secrets::new([secret.as_bytes().to_vec()]).redact(judged);
        let message = redacted.into_inner().failures.tests[0].message.clone();
        assert!(message.is_some_and(|m| !m.contains(secret)));
    }
}
