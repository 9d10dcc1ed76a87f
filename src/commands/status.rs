//! `proofgraph status <change>`: claim × capability → passed, failed,
//! inconclusive, stale or pending, from the receipts for the current
//! fingerprints. Runs nothing. Exit 0 when everything is passed, 1 when
//! something failed, 2 when something is not proven yet.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use proofgraph_sandbox::SandboxMode;
use serde::Serialize;

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

/// The verdict for a set of requirements: every one passed → success; any
/// failed → failed; otherwise not everything is proven.
pub fn verdict(requirements: &[Requirement]) -> Verdict {
    match status::overall(requirements) {
        State::Passed => Verdict::Success,
        State::Failed => Verdict::Failed,
        State::Inconclusive | State::Stale | State::Pending => Verdict::Unproven,
    }
}

/// Counts per state, every state present.
pub fn summary(requirements: &[Requirement]) -> BTreeMap<&'static str, usize> {
    let mut out: BTreeMap<&'static str, usize> = [
        State::Passed,
        State::Failed,
        State::Inconclusive,
        State::Stale,
        State::Pending,
    ]
    .iter()
    .map(|s| (s.as_str(), 0))
    .collect();
    for r in requirements {
        *out.entry(r.state.as_str()).or_default() += 1;
    }
    out
}

/// Runs `status`.
pub fn run(ctx: &Context, change: &str, mode: Option<SandboxMode>) -> Report<StatusPayload> {
    let mut evaluated = match evaluate(ctx, change, mode, Keys::Check) {
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
