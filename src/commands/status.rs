//! `proofgraph status <change>`: claim × capability → passed, failed,
//! inconclusive, stale or pending, from the receipts for the current
//! fingerprints. Runs nothing. Exit 0 when everything is passed, 1 when
//! something failed, 2 when something is not proven yet.
//!
//! `--format markdown|junit` renders the same requirements as a CI report
//! ([`markdown`], [`junit`]) instead of text; the exit code does not change.

pub mod junit;
pub mod markdown;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use proofgraph_sandbox::SandboxMode;
use serde::Serialize;

use crate::base::redact::Secrets;
use crate::decide::status::{self, Requirement, State};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::Context;
use crate::session::context::RootOutput;
use crate::session::evaluate::{Keys, evaluate};

/// The payload of `status`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusPayload {
    /// The change.
    pub change: Option<String>,
    /// Every claim × capability.
    pub requirements: Vec<Requirement>,
    /// How many requirements are in each state.
    pub summary: BTreeMap<&'static str, usize>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for StatusPayload {
    fn human(&self, out: &mut String) {
        let Some(change) = &self.change else { return };
        let _ = writeln!(out, "Status of {change}");
        let mut claim = "";
        for r in &self.requirements {
            if r.claim != claim {
                claim = &r.claim;
                let _ = writeln!(out, "  {claim}");
            }
            let by: Vec<String> = r.evidence.iter().map(|e| e.provider.clone()).collect();
            let why = r
                .reason
                .clone()
                .or_else(|| r.evidence.iter().find_map(|e| e.reason.clone()))
                .unwrap_or_default();
            let counts = r
                .counts_shown()
                .map(|c| format!(" [{c}]"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {:20} {:12} {}{counts} {}",
                r.capability,
                r.state.as_str(),
                by.join(", "),
                if r.state == State::Passed { "" } else { &why }
            );
        }
        let parts: Vec<String> = self
            .summary
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(out, "{}", parts.join(", "));
    }
}

pub use crate::decide::status::{summary, verdict};

/// Runs `status`.
///
/// SIGINT and SIGTERM are recorded from the start: one that comes while the remote cache
/// is read ends the pull at once, and `status` with exit 130 and its document.
pub fn run(ctx: &Context, change: &str, mode: Option<SandboxMode>) -> Report<StatusPayload> {
    let interrupt = crate::base::interrupt::Interrupt::install();
    let evaluated = evaluate(ctx, change, mode, Keys::Check);
    if interrupt.is_set() {
        let notes = evaluated.map_or_else(|all| all, |e| e.loaded.notes);
        return crate::session::evaluate::interrupted("status", notes);
    }
    let mut evaluated = match evaluated {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let name = evaluated.loaded.change.name.clone();
    status::verify_current(
        &evaluated.loaded.prepared.graph,
        &evaluated.fingerprints,
        &evaluated.store,
        &evaluated.trusted,
    );
    let requirements = status::requirements(
        &evaluated.loaded.prepared.graph,
        &evaluated.fingerprints,
        &evaluated.store,
        &evaluated.trusted,
        &name,
    );
    let verdict = verdict(&requirements);
    let mut diagnostics = std::mem::take(&mut evaluated.loaded.notes);
    diagnostics.append(&mut evaluated.loaded.prepared.warnings);
    diagnostics.append(&mut evaluated.observed.warnings);
    let root = evaluated.loaded.root.clone();
    evaluated.release();
    Report {
        payload: Some(StatusPayload {
            change: Some(name.to_string()),
            summary: summary(&requirements),
            requirements,
            root: Some(root),
        }),
        status: diagnostics,
        verdict,
    }
}

/// The CI report formats of `status --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Markdown table, for a CI job summary (`$GITHUB_STEP_SUMMARY`).
    Markdown,
    /// JUnit XML, for CI test dashboards.
    Junit,
}

/// A CI report: rendered text, written to stdout as it is (diagnostics still go to
/// stderr).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusDocument {
    /// The Markdown or XML text.
    pub text: String,
}

impl Payload for StatusDocument {
    fn raw(&self) -> bool {
        true
    }

    fn human(&self, out: &mut String) {
        out.push_str(&self.text);
    }
}

/// Renders `status`'s report as a CI report in `format`, keeping its diagnostics and its
/// verdict (so the exit code is the one `status` gives without `--format`). A change that
/// cannot be evaluated still yields a well-formed document that says so, so a CI step that
/// publishes it shows the error rather than an empty or unreadable file.
///
/// Every string taken from the change goes through the invocation's secrets before it is
/// escaped: an escape a redactor cannot see through (Markdown's `\|`) never hides one.
pub fn document(
    ctx: &Context,
    change: &str,
    format: Format,
    report: Report<StatusPayload>,
) -> Report<StatusDocument> {
    let secrets = ctx.secrets();
    let text = render(change, format, &report, &secrets);
    Report {
        payload: Some(StatusDocument { text }),
        status: report.status,
        verdict: report.verdict,
    }
}

/// The text of [`document`].
pub fn render(
    change: &str,
    format: Format,
    report: &Report<StatusPayload>,
    secrets: &Secrets,
) -> String {
    match (&report.payload, format) {
        (Some(payload), Format::Markdown) => markdown::render(payload, secrets),
        (Some(payload), Format::Junit) => junit::render(payload, secrets),
        (None, Format::Markdown) => markdown::refused(change, &report.status, secrets),
        (None, Format::Junit) => junit::refused(change, &report.status, secrets),
    }
}

/// Why a requirement is not passed, as `status` says it: its own reason, else the first
/// its receipts give. `None` for a passed one.
pub fn reason_of(requirement: &Requirement) -> Option<&str> {
    if requirement.state == State::Passed {
        return None;
    }
    requirement.reason.as_deref().or_else(|| {
        requirement
            .evidence
            .iter()
            .find_map(|e| e.reason.as_deref())
    })
}

/// `1 failed, 5 passed` (the states with a count, in the order of `summary`), or
/// `nothing to prove`.
pub fn totals(summary: &BTreeMap<&'static str, usize>) -> String {
    let parts: Vec<String> = summary
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    if parts.is_empty() {
        "nothing to prove".to_owned()
    } else {
        parts.join(", ")
    }
}
