//! Judging a finished execution for one provider, on the loop: which report is read as
//! its evidence, the verdicts (with the discovery floor, a contract's reason, inputs that
//! moved while it ran in place), the evidence kept — what the core hands the receipt
//! writer (`Persist`). Judging stays on the loop because it decides whether dependents
//! may start; the line printed and the hand-over are the loop's (`shell.rs`).

use std::path::PathBuf;

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::{Adapter, NodeId, SealedGraph};
use proofgraph_sandbox::SandboxMode;

use crate::decide::judge::{self, Ended, Judged, ReportFile};
use crate::proof::receipt::{Failures, Outcome, TestNames};

use super::contract;
use super::ended::Finished;
use super::events::{Mark, ProviderAction, ProviderRun};
use super::job;
use super::kept_evidence::{ArtifactKind, Kept, attachment, read_written};
use super::kept_log;
use super::recorder::Persist;
use super::shell::Shell;

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
/// decide) and, for what the report does not name, its `log` as kept; every non-pass given
/// the execution's own reason when it has one (a contract mismatch), and all an error when
/// inputs it binds moved while it ran in place (`moved`).
pub(super) fn judge_execution(
    graph: &SealedGraph,
    p: &ProviderNode,
    finished: &Finished,
    report_file: &ReportFile,
    moved: &[String],
    log: &[u8],
) -> Judged {
    let mut judged = judge::judge_with_floor(
        p,
        graph,
        &finished.ended,
        report_file,
        job::timeout_ms(p),
        discovery_floor(graph, p),
        log,
    );
    if p.spec.adapter.value == Adapter::Command && !matches!(report_file, ReportFile::NotExpected) {
        // A command's report is kept as an artifact; it does not decide.
        judged.tests = TestNames::default();
        judged.failures = Failures::default();
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

/// How much of the end of a log is searched for the names of left-out files.
const LOG_TAIL: u64 = 256 * 1024;

/// The files of the repositories (`repo:path`) that the end of `log` names — as a path
/// relative to the repository, or below the directory the job saw it at — and that are not
/// among `bound` (the provider's inputs), at most three.
fn left_out_named(
    log: &std::path::Path,
    dirs: &super::layers::ExecDirs,
    snapshots: &std::collections::BTreeMap<
        proofgraph_graph::RepoId,
        crate::observe::inputs::Snapshot,
    >,
    bound: &[(String, proofgraph_graph::fingerprint::Digest)],
) -> Vec<String> {
    use std::io::{Read as _, Seek as _};
    let Ok(mut file) = fs_err::File::open(log) else {
        return Vec::new();
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(std::io::SeekFrom::Start(size.saturating_sub(LOG_TAIL)));
    let mut tail = Vec::new();
    let _ = file.take(LOG_TAIL).read_to_end(&mut tail);
    let text = String::from_utf8_lossy(&tail);
    let bound: std::collections::BTreeSet<&str> = bound.iter().map(|(p, _)| p.as_str()).collect();
    let mut out: Vec<String> = Vec::new();
    for token in text.split(|c: char| c.is_whitespace() || "'\"`()[]{},;<>=".contains(c)) {
        let token = token.trim_end_matches([':', '.']);
        if token.is_empty() || out.len() >= 3 {
            continue;
        }
        for (repo, snapshot) in snapshots {
            let at = dirs
                .repos
                .get(repo)
                .map(|d| d.at.to_string_lossy().into_owned());
            let rel = match at.as_deref().and_then(|at| token.strip_prefix(at)) {
                Some(rest) => rest.trim_start_matches('/'),
                None => token.trim_start_matches("./"),
            };
            let scoped = format!("{repo}:{rel}");
            if !rel.is_empty()
                && !bound.contains(scoped.as_str())
                && !out.contains(&scoped)
                && snapshot
                    .files
                    .binary_search_by(|f| f.path.as_str().cmp(rel))
                    .is_ok()
            {
                out.push(scoped);
            }
        }
    }
    out
}

/// Whether every verdict passed, the mark printed (`pass`, else the worst outcome), and
/// the first reason a verdict gives.
pub(super) fn summary(judged: &Judged, finished: &Finished) -> (bool, Mark, Option<String>) {
    let passed = judged.verdicts.iter().all(|v| v.outcome == Outcome::Pass);
    let timed_out = matches!(&finished.ended, Ended::Exited(e) if e.timed_out);
    let mark = Mark::of(
        judged.verdicts.iter().map(|v| v.outcome),
        timed_out,
        finished.not_started,
    );
    let reason = judged.verdicts.iter().find_map(|v| v.reason.clone());
    (passed, mark, reason)
}

impl Shell<'_, '_> {
    /// Judges a provider's execution: whether every receipt passed, and what the receipt
    /// writer is handed (`None`: `id` is no provider).
    pub(super) fn judged(
        &mut self,
        id: NodeId,
        finished: &Finished,
    ) -> (bool, Option<Box<Persist>>) {
        let plan = self.plan;
        let graph = plan.graph;
        let Some(p) = graph.node(id).provider() else {
            return (false, None);
        };
        let pid = &p.spec.id.value;
        // What the execution wrote is read where it landed: its own layer (or copy, or in
        // place the repository), never a directory another job could have written.
        let written = finished.dirs.of(p.runs_in.as_ref());
        let declared = |report: &str| {
            written.map_or(ReportFile::NotExpected, |d| {
                read_written(&d.written, report, finished.started)
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
                &self.sandboxes.out.join(pid.as_str()),
                "playwright.json",
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
        // The log as its receipt keeps it, read once: the judge reads in it what the report
        // does not say of itself (the test binaries cargo announced).
        let log = finished
            .log
            .as_ref()
            .and_then(|log| kept_log::read(log, self.log_keep_bytes(), plan.secrets).ok());
        let log_bytes = log.as_ref().map_or(&[][..], |l| l.bytes.as_slice());
        let mut judged = judge_execution(graph, p, finished, &report_file, &moved, log_bytes);
        // A provider whose narrowed `inputs` leave out a file it needs does not see it: when
        // it did not pass and its log names such a file, the reason says so.
        if p.spec.inputs.is_some()
            && judged.verdicts.iter().any(|v| v.outcome != Outcome::Pass)
            && let Some(log) = &finished.log
        {
            let bound = plan
                .observed
                .files
                .get(pid)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let named = left_out_named(log, &finished.dirs, &plan.observed.snapshots, bound);
            if !named.is_empty() {
                let shown: Vec<String> = named.iter().map(|n| format!("`{n}`")).collect();
                let hint = format!(
                    "its log names {}, which its `inputs` leave out, so its world does not hold it: list every file it reads in `inputs`",
                    shown.join(", ")
                );
                for v in judged
                    .verdicts
                    .iter_mut()
                    .filter(|v| v.outcome != Outcome::Pass)
                {
                    v.reason = Some(match v.reason.take() {
                        Some(r) => format!("{r}; {hint}"),
                        None => hint.clone(),
                    });
                }
            }
        }
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
        // from elsewhere), the failing tests' messages and a contract's artifacts, in
        // that order.
        let mut kept = Vec::new();
        if let Some(log) = log {
            let mut artifact = Kept::new(ArtifactKind::CommandLog, None, log.bytes);
            artifact.whole = log.whole;
            artifact.base64 = log.base64;
            kept.push(artifact);
        }
        if let ReportFile::Bytes(_, bytes) = report_file
            && !bytes.is_empty()
        {
            let path = p.spec.report.as_ref().map(|r| r.value.clone());
            kept.push(Kept::new(ArtifactKind::StructuredReport, path, bytes));
        }
        let dirs: Vec<(PathBuf, PathBuf)> = finished
            .dirs
            .repos
            .values()
            .map(|d| (d.at.clone(), d.written.clone()))
            .collect();
        let home = written.map(|d| d.written.as_path());
        kept.extend(
            attachments
                .into_iter()
                .filter_map(|a| attachment(a, home, &dirs, &self.sandboxes.out)),
        );
        // The failing tests' messages, which `prove` shows and `log` prints: kept beside the
        // receipt, which binds them by digest, so the receipt stays small.
        if !judged.failures.is_empty() {
            kept.push(Kept::new(
                ArtifactKind::TestFailures,
                None,
                judged.failures.to_bytes(),
            ));
        }
        if p.spec.adapter.value == Adapter::ContractDigest {
            for (shown, bytes) in contract::artifacts(p, plan.workspace) {
                let artifact = Kept::new(ArtifactKind::ContractArtifact, Some(shown), bytes);
                kept.push(artifact);
            }
        }
        let (passed, mark, reason) = summary(&judged, finished);
        let run = ProviderRun {
            provider: pid.to_string(),
            action: ProviderAction::Ran,
            reason,
            duration_ms: Some(u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX)),
            receipts: Vec::new(),
            log: None,
            log_tail: Vec::new(),
            failures: judged.failures.clone(),
            result: Some(mark),
        };
        let persist = Persist {
            id,
            finished: finished.clone(),
            judged,
            kept,
            isolation: self.isolation,
            run,
        };
        (passed, Some(Box::new(persist)))
    }
}

#[cfg(test)]
mod tests;
