//! Judging a finished execution for one provider, on the loop: which report is read as
//! its evidence, the verdicts (with the discovery floor, a contract's reason, inputs that
//! moved while it ran in place), the evidence kept, the line printed — and the hand-over
//! to the receipt writer. Judging stays on the loop because it decides whether
//! dependents may start.

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::{Adapter, NodeId, SealedGraph};
use proofgraph_sandbox::SandboxMode;

use crate::base::diagnostic::Code;
use crate::decide::judge::{self, Ended, Judged, ReportFile};
use crate::proof::receipt::{Outcome, TestNames};

use super::contract;
use super::dispatch::Dispatcher;
use super::ended::Finished;
use super::events::{Line, ProviderAction, ProviderRun};
use super::evidence::{ArtifactKind, Kept, attachment, read_written};
use super::job;
use super::plan::diag;
use super::recorder::Persist;

/// Where a provider's report is read from once its execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReportSource<'p> {
    /// None: the adapter reads no report, or nothing ran.
    None,
    /// The declared report in its sandbox, whatever is there (or not) is evidence.
    Declared(&'p str),
    /// The declared report of a `command`, kept when it is there; never judged from.
    Kept(&'p str),
    /// The JSON Playwright wrote into the run's log directory (no `report` declared).
    PlaywrightLog,
    /// A `test-discovery` provider that declares none: a missing report.
    Undeclared,
}

/// Where `p`'s report is read from after its execution `ended`.
pub(super) fn report_source<'p>(p: &'p ProviderNode, ended: &Ended) -> ReportSource<'p> {
    let report = p.spec.report.as_ref().map(|r| r.value.as_str());
    match (ended, p.spec.adapter.value, report) {
        (Ended::Error(_), _, _) => ReportSource::None,
        (_, Adapter::Playwright, Some(report)) => ReportSource::Declared(report),
        (_, Adapter::Playwright, None) => ReportSource::PlaywrightLog,
        (_, Adapter::TestDiscovery, Some(report)) => ReportSource::Declared(report),
        (_, Adapter::TestDiscovery, None) => ReportSource::Undeclared,
        (_, Adapter::Command, Some(report)) => ReportSource::Kept(report),
        _ => ReportSource::None,
    }
}

/// The discovery floor: the stricter of `p`'s minimum and its declared receiver's.
pub(super) fn discovery_floor(graph: &SealedGraph, p: &ProviderNode) -> u64 {
    p.outputs
        .iter()
        .filter(|o| o.under != p.spec.id.value)
        .filter_map(|o| graph.provider(&o.under))
        .filter_map(|n| graph.node(n).provider())
        .map(judge::effective_minimum)
        .fold(judge::effective_minimum(p), u64::max)
}

/// The verdicts of `p`'s execution: judged from its report (a command's report does not
/// decide), every non-pass given the execution's own reason when it has one (a contract
/// mismatch), and all an error when inputs it binds moved while it ran in place (`moved`).
pub(super) fn judge_execution(
    graph: &SealedGraph,
    p: &ProviderNode,
    finished: &Finished,
    report_file: &ReportFile,
    moved: &[String],
) -> Judged {
    let mut judged = judge::judge_with_floor(
        p,
        graph.claims(),
        &finished.ended,
        report_file,
        job::timeout_ms(p),
        discovery_floor(graph, p),
    );
    if p.spec.adapter.value == Adapter::Command && !matches!(report_file, ReportFile::NotExpected) {
        // A command's report is kept as an artifact; it does not decide.
        judged.tests = TestNames::default();
    }
    if let Some(reason) = &finished.reason {
        for v in judged
            .verdicts
            .iter_mut()
            .filter(|v| v.outcome != Outcome::Pass)
        {
            v.reason = Some(reason.clone());
        }
    }
    if !moved.is_empty() {
        let shown: Vec<String> = moved.iter().take(5).map(|m| format!("`{m}`")).collect();
        let reason = format!(
            "its inputs changed while it ran in place ({}{}): what it observed is not what its fingerprint binds",
            shown.join(", "),
            if moved.len() > 5 { ", …" } else { "" }
        );
        judge::overrule(&mut judged, Outcome::Error, &reason);
    }
    judged
}

/// Whether every verdict passed, the mark printed (`pass`, else the worst outcome), and
/// the first reason a verdict gives.
pub(super) fn summary(judged: &Judged) -> (bool, Outcome, Option<String>) {
    let passed = judged.verdicts.iter().all(|v| v.outcome == Outcome::Pass);
    let worst = judged
        .verdicts
        .iter()
        .map(|v| v.outcome)
        .max()
        .unwrap_or(Outcome::Error);
    let mark = if passed { Outcome::Pass } else { worst };
    let reason = judged.verdicts.iter().find_map(|v| v.reason.clone());
    (passed, mark, reason)
}

impl Dispatcher<'_, '_> {
    /// Judges a provider's execution and hands its receipts to the writer; returns
    /// whether every receipt passed.
    pub(super) fn record(&mut self, id: NodeId, finished: &Finished) -> bool {
        let plan = self.plan;
        let graph = plan.graph;
        let Some(p) = graph.node(id).provider() else {
            return false;
        };
        let pid = &p.spec.id.value;
        let declared = |report: &str| {
            self.cwd(p.runs_in.as_ref())
                .map_or(ReportFile::NotExpected, |d| {
                    read_written(&d, report, finished.started)
                })
        };
        let report_file = match report_source(p, &finished.ended) {
            ReportSource::None => ReportFile::NotExpected,
            ReportSource::Declared(report) => declared(report),
            ReportSource::Kept(report) => match declared(report) {
                ReportFile::Bytes(path, bytes) => ReportFile::Bytes(path, bytes),
                _ => ReportFile::NotExpected,
            },
            ReportSource::PlaywrightLog => read_written(
                &self.log_dir,
                &format!("{pid}.playwright.json"),
                finished.started,
            ),
            ReportSource::Undeclared => ReportFile::Missing("(no `report` declared)".to_owned()),
        };
        // No report is parsed, kept or quoted with a secret in it (raw or escaped).
        let report_file = plan.secrets.redact(report_file).into_inner();
        // Running in place, nothing copied the inputs: the files the fingerprint binds are
        // read again, and if any moved while the command ran, what it observed is not what
        // the receipt would bind — an error, never a pass.
        let moved = if plan.mode == SandboxMode::None && matches!(finished.ended, Ended::Exited(_))
        {
            plan.observed.moved_inputs(plan.workspace, pid)
        } else {
            Vec::new()
        };
        let mut judged = judge_execution(graph, p, finished, &report_file, &moved);
        // Everything the run established is redacted once, here: what is printed, signed
        // and stored below is derived from this.
        let attachments = plan
            .secrets
            .redact(std::mem::take(&mut judged.attachments))
            .into_inner();
        let judged = plan.secrets.redact(judged);
        // What is kept as evidence is read now, before the next job can start
        // (it may run in the same sandbox and rewrite the same files); the writer
        // only stores it. The command log, the structured report, attachments
        // (inline, or files the run wrote inside its own directories, never
        // from elsewhere) and a contract's artifacts, in that order.
        let mut kept = Vec::new();
        if let Some(log) = &finished.log
            && let Ok(bytes) = fs_err::read(log)
        {
            kept.push(Kept::new(ArtifactKind::CommandLog, None, bytes));
        }
        if let ReportFile::Bytes(_, bytes) = report_file
            && !bytes.is_empty()
        {
            let path = p.spec.report.as_ref().map(|r| r.value.clone());
            kept.push(Kept::new(ArtifactKind::StructuredReport, path, bytes));
        }
        kept.extend(
            attachments
                .into_iter()
                .filter_map(|a| attachment(a, self.sandboxes.dirs.values(), &self.sandboxes.root)),
        );
        if p.spec.adapter.value == Adapter::ContractDigest {
            for (shown, bytes) in contract::artifacts(p, plan.workspace) {
                let artifact = Kept::new(ArtifactKind::ContractArtifact, Some(shown), bytes);
                kept.push(artifact);
            }
        }
        let (passed, mark, reason) = summary(&judged);
        self.progress(Line::Judged {
            provider: pid,
            mark,
            duration_ms: finished.duration.as_millis(),
            reason: reason.as_deref(),
        });
        let run = ProviderRun {
            provider: pid.to_string(),
            action: ProviderAction::Ran,
            reason,
            duration_ms: Some(u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX)),
            receipts: Vec::new(),
        };
        let sent = self.recorder.send(Persist {
            id,
            finished: finished.clone(),
            judged,
            kept,
            isolation: self.isolation,
            run,
        });
        if let Err(unwritten) = sent {
            // The writer ended (it cannot, short of a bug): say so, keep the result
            // without receipts, and start nothing more.
            self.diagnostics.push(diag(
                Code::InternalError,
                format!("the receipt of `{pid}` was not written: the receipt writer stopped"),
                "Rerun; if it persists, report it with the output of `proofgraph doctor`.",
            ));
            self.results.insert(id, unwritten);
            self.halt();
        }
        self.recorded += 1;
        self.collect(false);
        self.running.remove(pid.as_str());
        self.status();
        passed
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::{Duration, SystemTime};

    use proofgraph_graph::CapabilityName;

    use super::*;
    use crate::proof::receipt::Exit;
    use crate::run::testing::{at, discovery_pair, node, provider, seal};

    const TAP_3: &[u8] = b"TAP version 13\n1..3\nok 1 - a\nok 2 - b\nok 3 - c\n";

    fn exited(code: i32) -> Ended {
        Ended::Exited(Exit {
            code: Some(code),
            signal: None,
            timed_out: false,
        })
    }

    fn finished(ended: Ended, reason: Option<&str>) -> Finished {
        Finished {
            reason: reason.map(str::to_owned),
            ..Finished::ran(
                ended,
                PathBuf::from("/l"),
                Duration::ZERO,
                SystemTime::now(),
            )
        }
    }

    /// `unit` (a command with a report), `pw` (Playwright, none declared), `test-web`
    /// (discovery, declared) with its receiver `discovery-web` (minimum 5), `bare`
    /// (discovery, none declared), `lint` (a command without a report).
    fn graph() -> SealedGraph {
        let mut unit = provider("unit", Adapter::Command, &["make", "test"]);
        unit.report = Some(at("out/unit.tap".to_owned()));
        let mut pw = provider("pw", Adapter::Playwright, &["playwright", "test"]);
        pw.capability = Some(at(CapabilityName::parse("browser").expect("valid")));
        let [producer, receiver] = discovery_pair(Some(5));
        let mut bare = provider("bare", Adapter::TestDiscovery, &["sh"]);
        bare.capability = Some(at(CapabilityName::test()));
        let lint = provider("lint", Adapter::Command, &["lint"]);
        seal(vec![unit, pw, producer, receiver, bare, lint], Vec::new())
    }

    #[test]
    fn each_adapter_reads_its_report_from_where_it_is_written() {
        let g = graph();
        let ok = exited(0);
        let source = |id: &str, ended: &Ended| report_source(node(&g, id), ended);
        assert_eq!(source("unit", &ok), ReportSource::Kept("out/unit.tap"));
        assert_eq!(source("pw", &ok), ReportSource::PlaywrightLog);
        assert_eq!(source("test-web", &ok), ReportSource::Declared("web.tap"));
        assert_eq!(source("bare", &ok), ReportSource::Undeclared);
        assert_eq!(source("lint", &ok), ReportSource::None);
        // A failed exit still reads what was written; nothing ran, nothing is read.
        assert_eq!(
            source("test-web", &exited(1)),
            ReportSource::Declared("web.tap")
        );
        let error = Ended::Error("could not start".into());
        for id in ["unit", "pw", "test-web", "bare", "lint"] {
            assert_eq!(source(id, &error), ReportSource::None, "{id}");
        }
    }

    #[test]
    fn a_producer_is_held_to_its_receivers_stricter_minimum() {
        let g = graph();
        assert_eq!(discovery_floor(&g, node(&g, "test-web")), 5);
        assert_eq!(discovery_floor(&g, node(&g, "bare")), 1);
        let judged = judge_execution(
            &g,
            node(&g, "test-web"),
            &finished(exited(0), None),
            &ReportFile::Bytes("web.tap".into(), TAP_3.to_vec()),
            &[],
        );
        let discovery: Vec<Outcome> = judged
            .verdicts
            .iter()
            .filter(|v| v.output.capability == CapabilityName::discovery())
            .map(|v| v.outcome)
            .collect();
        assert_eq!(
            discovery,
            [Outcome::Fail],
            "3 tests, below the receiver's 5"
        );
    }

    #[test]
    fn a_commands_report_is_kept_but_never_decides() {
        let g = graph();
        let report = ReportFile::Bytes("out/unit.tap".into(), TAP_3.to_vec());
        let p = node(&g, "unit");
        let raw = judge::judge(p, g.claims(), &exited(0), &report, 1_000);
        assert!(!raw.tests.passed.is_empty(), "the report names its tests");
        let judged = judge_execution(&g, p, &finished(exited(0), None), &report, &[]);
        assert_eq!(judged.tests, TestNames::default());
        assert_eq!(summary(&judged), (true, Outcome::Pass, None));
    }

    #[test]
    fn an_executions_reason_replaces_only_the_reasons_of_what_did_not_pass() {
        let g = graph();
        let p = node(&g, "lint");
        let why = "the contracts differ: a is sha256:1; b is sha256:2";
        let failed = judge_execution(
            &g,
            p,
            &finished(exited(1), Some(why)),
            &ReportFile::NotExpected,
            &[],
        );
        assert_eq!(
            summary(&failed),
            (false, Outcome::Fail, Some(why.to_owned()))
        );
        let passed = judge_execution(
            &g,
            p,
            &finished(exited(0), Some(why)),
            &ReportFile::NotExpected,
            &[],
        );
        assert_eq!(summary(&passed), (true, Outcome::Pass, None));
    }

    #[test]
    fn inputs_that_moved_while_it_ran_in_place_make_every_verdict_an_error() {
        let g = graph();
        let moved: Vec<String> = (1..=6).map(|i| format!("root:src/{i}.rs")).collect();
        let judged = judge_execution(
            &g,
            node(&g, "lint"),
            &finished(exited(0), None),
            &ReportFile::NotExpected,
            &moved,
        );
        let (passed, mark, reason) = summary(&judged);
        assert_eq!((passed, mark), (false, Outcome::Error));
        assert_eq!(
            reason.as_deref(),
            Some(
                "its inputs changed while it ran in place (`root:src/1.rs`, `root:src/2.rs`, `root:src/3.rs`, `root:src/4.rs`, `root:src/5.rs`, …): what it observed is not what its fingerprint binds"
            )
        );
    }

    #[test]
    fn the_mark_is_pass_or_the_worst_outcome_and_the_reason_the_first_given() {
        let g = graph();
        // No report where one is declared: both of the producer's receipts inconclusive.
        let judged = judge_execution(
            &g,
            node(&g, "test-web"),
            &finished(exited(0), None),
            &ReportFile::Missing("web.tap".into()),
            &[],
        );
        let (passed, mark, reason) = summary(&judged);
        assert_eq!((passed, mark), (false, Outcome::Inconclusive));
        assert_eq!(reason, judged.verdicts[0].reason);
        let mut mixed = judged.clone();
        mixed.verdicts[1].outcome = Outcome::Error;
        mixed.verdicts[1].reason = Some("second".into());
        mixed.verdicts[0].outcome = Outcome::Pass;
        mixed.verdicts[0].reason = None;
        assert_eq!(
            summary(&mixed),
            (false, Outcome::Error, Some("second".to_owned()))
        );
        // Nothing to judge is not a failure of anything.
        mixed.verdicts.clear();
        assert_eq!(summary(&mixed), (true, Outcome::Pass, None));
    }
}
