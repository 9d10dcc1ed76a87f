//! Which providers and claims a diff affects, and why (`plan --base`; docs/plan.md).
//!
//! A provider is affected when (`stored`) its declaration, a service it uses, or what of
//! the catalog its fingerprint binds is new or differs at the base; or when (`derived`) a
//! changed path is one of its inputs or its program, or it depends on (`dependsOn`, or
//! writes its receipt through) an affected provider. A claim is affected when it is new or
//! differs in `evidence.yaml` (`stored`), or when a provider vouching for it is (`stored`
//! when one of those is, else `derived`). A renamed path is a deletion at its old path and
//! an addition at its new one ([`Changed::touches`]).

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::model::{Claim, compare};
use proofgraph_graph::{ChangeName, EdgeKind, ProviderId, RepoId, SealedGraph};
use serde::Serialize;

use crate::decide::status::{self, State};
use crate::load::workspace::{Change, Workspace};
use crate::observe::changes::Changed;
use crate::observe::world::{Observed, Program, declared_catalog_fields, report_paths, rules};

/// Why something is in the plan: through a relation the files declare (`stored`: the
/// wiring or the claim itself changed) or one derived from the diff (`derived`: a changed
/// input, a dependency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The declaration changed.
    Stored,
    /// Derived from the changed paths.
    Derived,
}

/// The reasons something is affected, in the order found (none: it is not).
pub type Reasons = Vec<(Origin, String)>;

/// What the head no longer has.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Removed {
    /// Providers declared at the base only.
    pub providers: Vec<String>,
    /// Claims declared at the base only.
    pub claims: Vec<String>,
}

/// What a plan compares: the change and the catalog at the base and at the head, the
/// head's graph and observation, and the paths that changed.
#[derive(Debug, Clone, Copy)]
pub struct Diff<'a> {
    /// The workspace (this checkout's catalog).
    pub workspace: &'a Workspace,
    /// The workspace as the catalog at the base describes it (`None`: it cannot be read,
    /// and nothing is said of the catalog).
    pub base_workspace: Option<&'a Workspace>,
    /// The change at the base.
    pub base: &'a Change,
    /// The change at the head.
    pub head: &'a Change,
    /// The head's graph.
    pub graph: &'a SealedGraph,
    /// The head's observation.
    pub observed: &'a Observed,
    /// The changed paths.
    pub changed: &'a [Changed],
}

/// Why each provider of the head is affected (an empty list: it is not).
pub fn providers(d: &Diff<'_>) -> BTreeMap<ProviderId, Reasons> {
    let services = changed_services(d.base, d.head);
    let reports = report_paths(d.graph);
    let mut why: BTreeMap<ProviderId, Reasons> = BTreeMap::new();
    for (id, _, p) in d.graph.providers() {
        let mut reasons = declared(d, id, p, &services);
        reasons.extend(derived(d, id, p, &reports));
        why.insert(id.clone(), reasons);
    }
    // Dependents, in the graph's order (dependencies first): `dependsOn`, and a receiver
    // whose receipt its producer's run writes.
    for node in d.graph.order() {
        let Some(p) = d.graph.node(*node).provider() else {
            continue;
        };
        let upstream = d
            .graph
            .incoming(*node)
            .into_iter()
            .filter(|(_, kind)| matches!(kind, EdgeKind::DependsOn | EdgeKind::Discovery))
            .filter_map(|(from, _)| d.graph.node(from).provider())
            .map(|u| u.spec.id.value.clone());
        propagate(&p.spec.id.value, upstream, &mut why);
    }
    why
}

/// The services of the head that are new or differ at the base, with the fields that do.
fn changed_services(base: &Change, head: &Change) -> BTreeMap<String, Vec<&'static str>> {
    head.services
        .iter()
        .filter_map(|(id, s)| {
            let fields = match base.services.get(id) {
                Some(b) => compare::service_fields(b, s),
                None => vec!["added"],
            };
            (!fields.is_empty()).then(|| (id.to_string(), fields))
        })
        .collect()
}

/// The `stored` reasons: its wiring, a service it uses, its part of the catalog.
fn declared(
    d: &Diff<'_>,
    id: &ProviderId,
    p: &ProviderNode,
    services: &BTreeMap<String, Vec<&'static str>>,
) -> Reasons {
    let mut reasons = Vec::new();
    match d.base.providers.get(id) {
        None => reasons.push((Origin::Stored, "added to the change's wiring".to_owned())),
        Some(b) => {
            let fields = compare::provider_fields(&b.provider, &p.spec);
            if !fields.is_empty() {
                let line = format!("wiring changed: {}", fields.join(", "));
                reasons.push((Origin::Stored, line));
            }
        }
    }
    for s in p.spec.services.iter().flatten() {
        if let Some(fields) = services.get(s.value.as_str()) {
            let line = format!("service `{}` changed: {}", s.value, fields.join(", "));
            reasons.push((Origin::Stored, line));
        }
    }
    // What of the catalog its fingerprint binds, at the base and here.
    if let (Some(base_ws), Some(sees)) = (d.base_workspace, d.observed.sees.get(id)) {
        let fields = changed_keys(
            &declared_catalog_fields(base_ws, sees),
            &declared_catalog_fields(d.workspace, sees),
        );
        if !fields.is_empty() {
            reasons.push((Origin::Stored, format!("catalog changed: {}", few(&fields))));
        }
    }
    reasons
}

/// The `derived` reasons: a changed input, a changed program.
fn derived(d: &Diff<'_>, id: &ProviderId, p: &ProviderNode, reports: &BTreeSet<String>) -> Reasons {
    let mut reasons = Vec::new();
    if let Ok(rules) = rules(d.workspace, d.head, p) {
        // By its rules, or bound another way: a link's target among its files.
        let bound = d.observed.files.get(id);
        let hit = inputs_hit(d.changed, |repo, path| {
            let scoped = format!("{repo}:{path}");
            !reports.contains(&scoped)
                && (rules.selects(repo, path)
                    || bound.is_some_and(|f| f.iter().any(|(p, _)| *p == scoped)))
        });
        if !hit.is_empty() {
            reasons.push((Origin::Derived, format!("inputs changed: {}", few(&hit))));
        }
    }
    // A program of the repository is part of the fingerprint whether or not it is among
    // the inputs.
    if let (Some(Some(Program::InRepository(relative))), Some(repo)) =
        (d.observed.programs.get(id), p.runs_in.as_ref())
    {
        let path = relative.to_string_lossy();
        if program_changed(d.changed, repo, &path) {
            reasons.push((Origin::Derived, format!("program changed: {repo}:{path}")));
        }
    }
    reasons
}

/// The keys whose values differ between two maps (one missing on a side differs), sorted.
pub fn changed_keys(was: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    was.keys()
        .chain(now.keys())
        .filter(|k| was.get(*k) != now.get(*k))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The changed paths (`repo:path`) that touch what `selects` selects: a renamed file at
/// either of its paths.
pub fn inputs_hit(changed: &[Changed], selects: impl Fn(&RepoId, &str) -> bool) -> Vec<String> {
    changed
        .iter()
        .filter(|c| {
            RepoId::parse(&c.repository).is_ok_and(|repo| c.touches(|path| selects(&repo, path)))
        })
        .map(|c| format!("{}:{}", c.repository, c.path))
        .collect()
}

/// Whether `path` of `repo` (a provider's program) changed, or was renamed.
pub fn program_changed(changed: &[Changed], repo: &RepoId, path: &str) -> bool {
    changed
        .iter()
        .any(|c| c.repository == repo.as_str() && c.touches(|p| p == path))
}

/// Adds to `id`'s reasons the affected providers among `upstream` (those it depends on).
pub fn propagate(
    id: &ProviderId,
    upstream: impl IntoIterator<Item = ProviderId>,
    why: &mut BTreeMap<ProviderId, Reasons>,
) {
    let mut affected: Vec<String> = upstream
        .into_iter()
        .filter(|u| why.get(u).is_some_and(|r| !r.is_empty()))
        .map(|u| u.to_string())
        .collect();
    affected.sort();
    affected.dedup();
    if !affected.is_empty() {
        let line = format!("depends on affected {}", few(&affected));
        why.entry(id.clone())
            .or_default()
            .push((Origin::Derived, line));
    }
}

/// The claims a change declares, by id.
pub fn claims_of(change: &Change) -> BTreeMap<String, &Claim> {
    change
        .evidence
        .iter()
        .flat_map(|ev| ev.claims.iter())
        .map(|c| (c.id.value.to_string(), c))
        .collect()
}

/// Why a claim × capability is affected: it is new or differs (`stored`), or providers
/// vouching for it are affected (`vouching`: each with its origin, `None` when not
/// affected; `stored` when one of the affected is).
pub fn claim_reasons(
    base: Option<&Claim>,
    head: Option<&Claim>,
    vouching: &[(&str, Option<Origin>)],
) -> Reasons {
    let mut reasons = Vec::new();
    match (base, head) {
        (None, Some(_)) => reasons.push((Origin::Stored, "claim added".to_owned())),
        (Some(b), Some(h)) => {
            let fields = compare::claim_fields(b, h);
            if !fields.is_empty() {
                let line = format!("claim changed: {}", fields.join(", "));
                reasons.push((Origin::Stored, line));
            }
        }
        _ => {}
    }
    let affected: Vec<String> = vouching
        .iter()
        .filter(|(_, o)| o.is_some())
        .map(|(p, _)| (*p).to_owned())
        .collect();
    if !affected.is_empty() {
        let origin = if vouching.iter().any(|(_, o)| *o == Some(Origin::Stored)) {
            Origin::Stored
        } else {
            Origin::Derived
        };
        reasons.push((origin, format!("provider {} affected", few(&affected))));
    }
    reasons
}

/// The providers and claims the base declares and the head does not.
pub fn removed(base: &Change, head: &Change) -> Removed {
    let head_claims = claims_of(head);
    Removed {
        providers: base
            .providers
            .keys()
            .filter(|p| !head.providers.contains_key(*p))
            .map(ToString::to_string)
            .collect(),
        claims: claims_of(base)
            .into_keys()
            .filter(|c| !head_claims.contains_key(c))
            .collect(),
    }
}

/// A provider's status at the head (its receipts combined, as `status` defines it) and
/// the receipt that gives it (the current one, else the stale one).
pub fn provider_status(
    store: &crate::store::Store,
    trusted: &[crate::attest::envelope::TrustedKey],
    name: &ChangeName,
    fingerprints: &proofgraph_graph::fingerprint::Fingerprints,
    id: &ProviderId,
    p: &ProviderNode,
) -> (State, Option<String>) {
    let mut states = Vec::new();
    let mut receipt = None;
    for o in &p.outputs {
        let Some(fp) = fingerprints.of_receipt(id, &o.under) else {
            continue;
        };
        let l = status::lookup(store, trusted, name, fp, &o.under, &o.capability);
        states.push(l.state);
        if receipt.is_none() {
            receipt = l
                .verified
                .as_ref()
                .map(|v| v.sha256.to_hex())
                .or_else(|| l.other.map(|s| s.to_hex()));
        }
    }
    (status::combine(states), receipt)
}

/// Names a few paths: `a, b and 3 more`.
pub fn few(paths: &[String]) -> String {
    match paths.len() {
        0 => String::new(),
        1..=3 => paths.join(", "),
        n => format!("{} and {} more", paths[..3].join(", "), n - 3),
    }
}

/// What a list of reasons makes of a provider or claim: whether it is affected, the reasons
/// in one sentence, and its origin (`stored` when any reason is).
pub fn conclude(reasons: &[(Origin, String)]) -> (bool, Option<String>, Option<Origin>) {
    if reasons.is_empty() {
        return (false, None, None);
    }
    let text = reasons
        .iter()
        .map(|(_, r)| r.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let origin = if reasons.iter().any(|(o, _)| *o == Origin::Stored) {
        Origin::Stored
    } else {
        Origin::Derived
    };
    (true, Some(text), Some(origin))
}

#[cfg(test)]
mod tests;
