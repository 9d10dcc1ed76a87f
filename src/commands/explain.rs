//! `proofgraph explain <change> <provider>`: which components of the
//! provider's fingerprint changed since its last receipt — "inputs:
//! api:src/app.rs changed", "env NODE_ENV: test → ci" — or that none did.

use std::fmt::Write as _;

use proofgraph_graph::ProviderId;
use proofgraph_graph::graph::ProviderNode;
use proofgraph_sandbox::SandboxMode;
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::decide::drift::{self, Candidate, Change, InputChanges, diff};
use crate::observe::listing::Listing;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::{Proof, Verified, components};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Evaluated, Keys, evaluate};

/// The payload of `explain`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExplainPayload {
    /// The change.
    pub change: Option<String>,
    /// The provider.
    pub provider: Option<String>,
    /// The fingerprint now.
    pub fingerprint: Option<String>,
    /// The latest receipt compared against (null when there is none).
    pub receipt: Option<String>,
    /// The fingerprint that receipt was for.
    pub receipt_fingerprint: Option<String>,
    /// Which receipt it is: the `latest` of the provider, or the `closest` to today's tree
    /// (the one whose inputs differ least; after a revert, the one that matches again).
    pub chosen: Option<&'static str>,
    /// The components that differ (empty when the receipt is current).
    pub changes: Vec<Change>,
    /// The input files that differ.
    pub inputs: Option<InputChanges>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for ExplainPayload {
    fn human(&self, out: &mut String) {
        let (Some(provider), Some(fp)) = (&self.provider, &self.fingerprint) else {
            return;
        };
        let Some(receipt) = &self.receipt else {
            let _ = writeln!(
                out,
                "{provider} has no receipt yet: it runs on the next prove (fingerprint {}).",
                &fp[..12]
            );
            return;
        };
        if self.changes.is_empty() {
            let which = if self.chosen == Some("closest") {
                " (an earlier receipt: today's tree is back to what it proved)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{provider} is current: receipt {} matches fingerprint {}{which}.",
                &receipt[..12],
                &fp[..12]
            );
            let _ = writeln!(
                out,
                "To check that it reproduces: proofgraph rerun {receipt}"
            );
            return;
        }
        let which = if self.chosen == Some("closest") {
            " (not its latest: the receipt whose inputs are closest to today's tree)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{provider} changed since receipt {}{which}:",
            &receipt[..12]
        );
        for c in &self.changes {
            if c.component == "inputs" {
                continue;
            }
            let _ = writeln!(
                out,
                "  {}: {} → {}",
                c.component,
                short(&c.before),
                short(&c.after)
            );
        }
        if let Some(i) = &self.inputs {
            for (what, files) in [
                ("added", &i.added),
                ("removed", &i.removed),
                ("changed", &i.changed),
            ] {
                for f in files {
                    let _ = writeln!(out, "  inputs: {f} {what}");
                }
            }
        }
        let _ = writeln!(
            out,
            "To re-execute what that receipt proved, from the inputs it bound: proofgraph rerun {receipt}"
        );
    }
}

fn short(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "(unset)".to_owned(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs `explain`.
pub fn run(
    ctx: &Context,
    change: &str,
    provider: &str,
    mode: Option<SandboxMode>,
) -> Report<ExplainPayload> {
    let e = match evaluate(ctx, change, mode, Keys::Check) {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let graph = &e.loaded.prepared.graph;
    let (id, node) = match crate::session::provider::find(graph, change, provider) {
        Ok(found) => found,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let p = graph
        .node(node)
        .provider()
        .expect("provider ids map to provider nodes");
    let manifest = match graph.manifest(&id, &e.observed.world, &e.fingerprints) {
        Ok(m) => components(&m),
        Err(err) => {
            return Report::failed(
                vec![Diagnostic::error(Code::InternalError, err.to_string())],
                Verdict::Invalid,
            );
        }
    };
    let mut payload = ExplainPayload {
        change: Some(e.loaded.change.name.to_string()),
        provider: Some(id.to_string()),
        fingerprint: e.fingerprints.providers.get(&id).map(|f| f.to_string()),
        root: Some(e.loaded.root.clone()),
        ..ExplainPayload::default()
    };
    if let Some((owner, latest)) = latest(&e, &id, p) {
        let current =
            |proof: &Proof| e.fingerprints.providers.get(&owner) == Some(&proof.fingerprint);
        // Today's input listing of the receipt's owner, once: the search and the diff below.
        let now = (!current(&latest.proof)).then(|| listing_now(&e, &owner));
        let (chosen, receipt) = match now
            .as_ref()
            .and_then(|now| closest(&e, &owner, &latest, now))
        {
            Some(closer) => ("closest", closer),
            None => ("latest", latest),
        };
        payload.chosen = Some(chosen);
        payload.receipt = Some(receipt.sha256.to_hex());
        payload.receipt_fingerprint = Some(receipt.proof.fingerprint.to_string());
        if !current(&receipt.proof) {
            let manifest = if owner == id {
                manifest
            } else {
                graph
                    .manifest(&owner, &e.observed.world, &e.fingerprints)
                    .map(|m| components(&m))
                    .unwrap_or_default()
            };
            payload.changes = diff(&receipt.proof.manifest, &manifest);
            if payload.changes.iter().any(|c| c.component == "inputs") {
                let now = now.unwrap_or_else(|| listing_now(&e, &owner));
                let then = listing_of(&e, &receipt.proof);
                payload.inputs = Some(InputChanges::between(&now, &then));
            }
        }
    }
    let mut status = e.loaded.notes;
    status.extend(e.loaded.prepared.warnings);
    Report {
        payload: Some(payload),
        status,
        verdict: Verdict::Success,
    }
}

/// The newest receipt of the provider's outputs that verifies, and the provider whose
/// fingerprint it is bound to now: its own first, since a discovery producer also writes
/// its receiver's, bound to the receiver's fingerprint.
fn latest(e: &Evaluated, id: &ProviderId, p: &ProviderNode) -> Option<(ProviderId, Verified)> {
    let mut outputs: Vec<_> = p.outputs.iter().collect();
    outputs.sort_by_key(|o| o.under != *id && e.fingerprints.providers.contains_key(&o.under));
    outputs.iter().find_map(|o| {
        let sha = e
            .store
            .latest(&e.loaded.change.name, &o.under, &o.capability)?;
        let owner = if e.fingerprints.providers.contains_key(&o.under) {
            o.under.clone()
        } else {
            id.clone()
        };
        Some((
            owner,
            crate::proof::receipt::read(&e.store, &sha, &e.trusted)?,
        ))
    })
}

/// When the latest receipt is not for today's fingerprint, the one to compare with is
/// the receipt whose inputs are closest to today's tree `now` (after a revert, the older
/// one that matches again): any verified receipt of the same requirement in the store.
fn closest(
    e: &Evaluated,
    owner: &ProviderId,
    latest: &Verified,
    now: &Listing,
) -> Option<Verified> {
    let distance = |proof: &Proof| {
        let current = e.fingerprints.providers.get(owner) == Some(&proof.fingerprint);
        if current {
            return 0;
        }
        drift::distance(false, now, &listing_of(e, proof))
    };
    let targets = e.store.action_targets();
    let candidates = targets
        .iter()
        .filter_map(|sha| crate::proof::receipt::read(&e.store, sha, &e.trusted))
        .filter(|r| {
            r.proof.change == latest.proof.change
                && r.proof.receipt == latest.proof.receipt
                && r.proof.capability == latest.proof.capability
        })
        .map(|r| Candidate {
            distance: distance(&r.proof),
            finished_at: r.proof.finished_at.clone(),
            receipt: r,
        });
    drift::closest(distance(&latest.proof), candidates)
}

/// The input listing of `owner` today.
fn listing_now(e: &Evaluated, owner: &ProviderId) -> Listing {
    Listing::of(
        e.observed
            .files
            .get(owner)
            .map(Vec::as_slice)
            .unwrap_or_default(),
    )
}

/// The input listing a receipt binds (empty when the store lacks it or it does not read).
fn listing_of(e: &Evaluated, proof: &Proof) -> Listing {
    e.store
        .get(&proof.inputs)
        .and_then(|b| Listing::parse(&b).ok())
        .unwrap_or_default()
}
