//! `proofgraph explain <change> <provider>`: which components of the
//! provider's fingerprint changed since its last receipt — "inputs:
//! api:src/app.rs changed", "env NODE_ENV: test → ci" — or that none did.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use proofgraph_graph::ProviderId;
use proofgraph_sandbox::SandboxMode;
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::observe::inputs::listing;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::Component;
use crate::proof::receipt::components;
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Keys, evaluate};

/// One component that differs.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The component (`argv`, `env`, `inputs`, …), or `env.NODE_ENV` for one
    /// entry of a map.
    pub component: String,
    /// Its value in the receipt (null when absent).
    pub before: serde_json::Value,
    /// Its value now.
    pub after: serde_json::Value,
}

/// Input files that differ.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InputChanges {
    /// Files read now and not then.
    pub added: Vec<String>,
    /// Files read then and not now.
    pub removed: Vec<String>,
    /// Files whose content changed.
    pub changed: Vec<String>,
}

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

/// The differences between two component lists, maps entry by entry.
pub fn diff(before: &[Component], after: &[Component]) -> Vec<Change> {
    let old: BTreeMap<&str, &serde_json::Value> =
        before.iter().map(|c| (c.name.as_str(), &c.value)).collect();
    let mut out = Vec::new();
    for c in after {
        let was = old
            .get(c.name.as_str())
            .copied()
            .unwrap_or(&serde_json::Value::Null);
        if was == &c.value {
            continue;
        }
        match (was, &c.value) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) if c.name != "inputs" => {
                let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let (x, y) = (
                        a.get(k).cloned().unwrap_or_default(),
                        b.get(k).cloned().unwrap_or_default(),
                    );
                    if x != y {
                        out.push(Change {
                            component: format!("{}.{k}", c.name),
                            before: x,
                            after: y,
                        });
                    }
                }
            }
            _ => out.push(Change {
                component: c.name.clone(),
                before: was.clone(),
                after: c.value.clone(),
            }),
        }
    }
    out
}

fn parse_listing(bytes: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| {
            l.split_once('\t')
                .map(|(p, d)| (p.to_owned(), d.to_owned()))
        })
        .collect()
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
    let Some((id, node)) = ProviderId::parse(provider)
        .ok()
        .and_then(|id| graph.provider(&id).map(|n| (id, n)))
    else {
        let known: Vec<String> = graph.providers().map(|(id, _, _)| id.to_string()).collect();
        return Report::failed(
            vec![
                Diagnostic::error(
                    Code::UnknownProvider,
                    format!("change `{change}` has no provider `{provider}`"),
                )
                .surface("provider")
                .fix(format!("Use one of: {}.", known.join(", "))),
            ],
            Verdict::Invalid,
        );
    };
    let name = e.loaded.change.name.to_string();
    let p = graph
        .node(node)
        .provider()
        .expect("provider ids map to provider nodes");
    let fingerprint = e.fingerprints.providers.get(&id);
    let manifest = match graph.manifest(&id, &e.observed.world, &e.fingerprints) {
        Ok(m) => components(&m),
        Err(err) => {
            return Report::failed(
                vec![Diagnostic::error(Code::InternalError, err.to_string())],
                Verdict::Invalid,
            );
        }
    };
    // The newest receipt of the provider's outputs that verifies: its own first, since a
    // discovery producer also writes its receiver's, bound to the receiver's fingerprint.
    // Each is compared with the fingerprint it is bound to now.
    let mut outputs: Vec<_> = p.outputs.iter().collect();
    outputs.sort_by_key(|o| o.under != id && e.fingerprints.providers.contains_key(&o.under));
    let latest = outputs.iter().find_map(|o| {
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
    });
    // When the latest receipt is not for today's fingerprint, the one to compare with is the
    // receipt whose inputs are closest to today's tree (after a revert, the older one that
    // matches again): any verified receipt of the same requirement in the store.
    let mut chosen = "latest";
    let files_now = |owner: &ProviderId| {
        parse_listing(&listing(
            e.observed
                .files
                .get(owner)
                .map(Vec::as_slice)
                .unwrap_or_default(),
        ))
    };
    // Today's input listing of the receipt's owner, once: the search and the diff below.
    let mut now_listing = None;
    let latest = latest.map(|(owner, latest)| {
        if e.fingerprints.providers.get(&owner) == Some(&latest.proof.fingerprint) {
            return (owner, latest);
        }
        let now = now_listing.insert(files_now(&owner));
        let distance = |r: &crate::proof::receipt::Verified| -> usize {
            if e.fingerprints.providers.get(&owner) == Some(&r.proof.fingerprint) {
                return 0;
            }
            let then = e
                .store
                .get(&r.proof.inputs)
                .map(|b| parse_listing(&b))
                .unwrap_or_default();
            let differ = now.iter().filter(|(p, d)| then.get(*p) != Some(*d)).count();
            1 + differ + then.keys().filter(|p| !now.contains_key(*p)).count()
        };
        let best = e
            .store
            .action_targets()
            .iter()
            .filter_map(|sha| crate::proof::receipt::read(&e.store, sha, &e.trusted))
            .filter(|r| {
                r.proof.change == latest.proof.change
                    && r.proof.receipt == latest.proof.receipt
                    && r.proof.capability == latest.proof.capability
            })
            .map(|r| {
                (
                    distance(&r),
                    std::cmp::Reverse(r.proof.finished_at.clone()),
                    r,
                )
            })
            .min_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        match best {
            Some((d, _, r)) if d < distance(&latest) && r.sha256 != latest.sha256 => {
                chosen = "closest";
                (owner, r)
            }
            _ => (owner, latest),
        }
    });
    let mut payload = ExplainPayload {
        change: Some(name),
        provider: Some(id.to_string()),
        fingerprint: fingerprint.map(|f| f.to_string()),
        root: Some(e.loaded.root.clone()),
        ..ExplainPayload::default()
    };
    if let Some((owner, receipt)) = latest {
        payload.chosen = Some(chosen);
        payload.receipt = Some(receipt.sha256.to_hex());
        payload.receipt_fingerprint = Some(receipt.proof.fingerprint.to_string());
        if e.fingerprints.providers.get(&owner) != Some(&receipt.proof.fingerprint) {
            let manifest = if owner == id {
                manifest
            } else {
                match graph.manifest(&owner, &e.observed.world, &e.fingerprints) {
                    Ok(m) => components(&m),
                    Err(_) => Vec::new(),
                }
            };
            payload.changes = diff(&receipt.proof.manifest, &manifest);
            if payload.changes.iter().any(|c| c.component == "inputs") {
                let now = now_listing.take().unwrap_or_else(|| files_now(&owner));
                let then = e
                    .store
                    .get(&receipt.proof.inputs)
                    .map(|b| parse_listing(&b))
                    .unwrap_or_default();
                let mut changes = InputChanges::default();
                for (path, digest) in &now {
                    match then.get(path) {
                        None => changes.added.push(path.clone()),
                        Some(d) if d != digest => changes.changed.push(path.clone()),
                        Some(_) => {}
                    }
                }
                changes.removed = then
                    .keys()
                    .filter(|p| !now.contains_key(*p))
                    .cloned()
                    .collect();
                payload.inputs = Some(changes);
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
