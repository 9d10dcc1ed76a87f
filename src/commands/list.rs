//! `proofgraph list`: the changes under `openspec/changes/`, with their claim
//! and provider counts and which wiring files they have.

use std::fmt::Write as _;

use serde::Serialize;

use crate::load::workspace::Workspace;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};

/// One change in the listing.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeSummary {
    /// The change's directory name.
    pub name: String,
    /// Whether `evidence.yaml` exists.
    pub has_evidence: bool,
    /// Whether `execution.yaml` exists.
    pub has_execution: bool,
    /// The number of claims; null when evidence.yaml is absent or unreadable.
    pub claims: Option<usize>,
    /// The number of declared providers (embedded and execution.yaml).
    pub providers: usize,
    /// The number of declared services.
    pub services: usize,
}

/// The payload of `list`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListPayload {
    /// The changes, by name.
    pub changes: Vec<ChangeSummary>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for ListPayload {
    fn human(&self, out: &mut String) {
        if self.changes.is_empty() {
            out.push_str("No changes under openspec/changes/.\n");
            return;
        }
        let width = self.changes.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for c in &self.changes {
            let claims = c.claims.map_or_else(|| "-".to_owned(), |n| n.to_string());
            let files = match (c.has_evidence, c.has_execution) {
                (true, true) => "evidence + execution",
                (true, false) => "evidence",
                (false, true) => "execution only",
                (false, false) => "no evidence",
            };
            let _ = writeln!(
                out,
                "{:width$}  {claims:>3} claims  {:>3} providers  {files}",
                c.name, c.providers,
            );
        }
    }
}

/// Runs `list`.
pub fn run(ctx: &Context) -> Report<ListPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = Workspace::load(&resolution.root.path);
    let mut status = resolution.notes.clone();
    status.extend(
        workspace
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .cloned(),
    );
    let names = match workspace.change_names() {
        Ok(names) => names,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let mut changes = Vec::new();
    for name in names {
        let change = workspace.load_change(&name);
        let evidence_ok = change.evidence.is_some()
            && !change.diagnostics.iter().any(|d| {
                d.is_error()
                    && d.location()
                        .is_some_and(|l| l.file.ends_with("evidence.yaml"))
            });
        status.extend(change.diagnostics.iter().filter(|d| d.is_error()).cloned());
        changes.push(ChangeSummary {
            name: name.to_string(),
            has_evidence: change.has_evidence,
            has_execution: change.has_execution,
            claims: if evidence_ok {
                change.evidence.as_ref().map(|e| e.claims.len())
            } else {
                None
            },
            providers: change.providers.len(),
            services: change.services.len(),
        });
    }
    crate::base::diagnostic::sort(&mut status);
    Report {
        payload: Some(ListPayload {
            changes,
            root: Some(RootOutput::from(&resolution.root)),
        }),
        status,
        verdict: Verdict::Success,
    }
}
