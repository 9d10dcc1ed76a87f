//! What `prove` would do with each provider, and why (`plan`): reuse its current receipts,
//! run it (itself or through the producer whose run writes its receipt), or wait for the
//! signed result of an `external` one. Why a provider runs is said from its latest
//! receipts: none yet, one that does not count (never "no receipt"), its last run's
//! outcome when its fingerprint is the same, else the components of the fingerprint that
//! changed since.

use proofgraph_graph::fingerprint::{Fingerprint, Fingerprints, World};
use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::{ChangeName, ProviderId, SealedGraph};
use serde::Serialize;

use crate::attest::envelope::TrustedKey;
use crate::decide::drift;
use crate::proof::receipt::{self, Component, Outcome, Unverified};
use crate::store::{Sha256, Store};

/// What `prove` would do with a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanAction {
    /// It runs (or runs through its producer).
    Run,
    /// Its receipts are current: reused.
    Reuse,
    /// An `external` provider: nothing runs, it waits for a signed result.
    Wait,
}

impl PlanAction {
    /// The word the output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanAction::Run => "run",
            PlanAction::Reuse => "reuse",
            PlanAction::Wait => "wait",
        }
    }
}

/// What the decision reads: the evaluated change and the store.
#[derive(Debug, Clone, Copy)]
pub struct Situation<'a> {
    /// The sealed graph.
    pub graph: &'a SealedGraph,
    /// Its fingerprints.
    pub fingerprints: &'a Fingerprints,
    /// The world they were computed from.
    pub world: &'a World,
    /// The store.
    pub store: &'a Store,
    /// The keys whose receipts count.
    pub trusted: &'a [TrustedKey],
    /// The change.
    pub change: &'a ChangeName,
    /// The receipts this evaluation pulled from the remote cache.
    pub pulled: &'a [Sha256],
}

/// What `prove` would do with one provider, why, and the receipts it would reuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Run, reuse or wait.
    pub action: PlanAction,
    /// Why (none for a reuse of local receipts).
    pub reason: Option<String>,
    /// The receipts reused.
    pub receipts: Vec<Sha256>,
}

/// What `prove` would do with `p`, given the receipts `decide::reuse::wanted` found
/// current for it (`reused`).
pub fn decide(s: &Situation<'_>, p: &ProviderNode, reused: Option<&Vec<Sha256>>) -> Decision {
    let run = |reason: String| Decision {
        action: PlanAction::Run,
        reason: Some(reason),
        receipts: Vec::new(),
    };
    if p.spec.adapter.value == proofgraph_graph::Adapter::External {
        return Decision {
            action: PlanAction::Wait,
            reason: Some("external: nothing runs; it takes a signed result (`proofgraph evidence verify-ci`)".to_owned()),
            receipts: Vec::new(),
        };
    }
    if let Some(receipts) = reused {
        return Decision {
            action: PlanAction::Reuse,
            reason: reuse_reason(receipts, s.pulled),
            receipts: receipts.clone(),
        };
    }
    let id = &p.spec.id.value;
    if let Some(producer) = s
        .graph
        .provider(id)
        .and_then(|n| s.graph.producers_of(n).first().copied())
        .and_then(|n| s.graph.node(n).provider())
    {
        let producer = &producer.spec.id.value;
        return run(format!(
            "through `{producer}`, whose run writes its receipt"
        ));
    }
    run(run_reason(s, id, p))
}

/// Why receipts are reused: said only of those pulled from the remote cache.
pub fn reuse_reason(receipts: &[Sha256], pulled: &[Sha256]) -> Option<String> {
    let remote: Vec<String> = receipts
        .iter()
        .filter(|sha| pulled.contains(sha))
        .map(|sha| sha.to_hex()[..12].to_owned())
        .collect();
    (!remote.is_empty()).then(|| {
        format!(
            "remote receipt {} (pulled from the remote cache)",
            remote.join(", ")
        )
    })
}

/// Why a provider that produces its own receipts runs, from each output's latest receipt.
fn run_reason(s: &Situation<'_>, id: &ProviderId, p: &ProviderNode) -> String {
    // Each output's latest receipt, judged against the fingerprint it is bound to.
    let checked: Vec<(ProviderId, Result<receipt::Verified, Unverified>)> = p
        .outputs
        .iter()
        .filter_map(|o| {
            let sha = s.store.latest(s.change, &o.under, &o.capability)?;
            let owner = if s.fingerprints.providers.contains_key(&o.under) {
                o.under.clone()
            } else {
                id.clone()
            };
            Some((owner, receipt::check(s.store, &sha, s.trusted)))
        })
        .collect();
    let last: Vec<Result<Last<'_>, &Unverified>> = checked
        .iter()
        .map(|(owner, c)| match c {
            Ok(r) => Ok(Last {
                owner,
                fingerprint: &r.proof.fingerprint,
                outcome: r.proof.outcome,
                manifest: &r.proof.manifest,
            }),
            Err(why) => Err(why),
        })
        .collect();
    why_it_runs(
        &last,
        &|owner, fingerprint| s.fingerprints.providers.get(owner) == Some(fingerprint),
        &|owner| {
            let manifest = s.graph.manifest(owner, s.world, s.fingerprints).ok()?;
            Some(receipt::components(&manifest))
        },
    )
}

/// An output's latest receipt, as far as the reason reads it.
#[derive(Debug, Clone, Copy)]
pub struct Last<'a> {
    /// The provider whose fingerprint it is bound to.
    pub owner: &'a ProviderId,
    /// That fingerprint.
    pub fingerprint: &'a Fingerprint,
    /// Its outcome.
    pub outcome: Outcome,
    /// The fingerprint's components it records.
    pub manifest: &'a [Component],
}

/// Why a provider runs, from its outputs' latest receipts (each one, or why it does not
/// count): the first that is not a current pass decides; `current` says whether a
/// fingerprint is the owner's now, `now` gives the owner's components now.
pub fn why_it_runs(
    checked: &[Result<Last<'_>, &Unverified>],
    current: &dyn Fn(&ProviderId, &Fingerprint) -> bool,
    now: &dyn Fn(&ProviderId) -> Option<Vec<Component>>,
) -> String {
    let verified = || checked.iter().filter_map(|c| c.as_ref().ok());
    let latest = verified()
        .find(|r| !(current(r.owner, r.fingerprint) && r.outcome == Outcome::Pass))
        .or_else(|| verified().next());
    // A receipt that does not count is named as such, never as "no receipt".
    let refused = checked.iter().find_map(|c| match c {
        Err(why @ (Unverified::Untrusted { .. } | Unverified::Invalid(_))) => Some(why),
        _ => None,
    });
    match latest {
        None => match refused {
            Some(why) => format!("its last receipt {}", why.reason()),
            None => "no receipt yet".to_owned(),
        },
        Some(r) if current(r.owner, r.fingerprint) => {
            format!("its last run was {}", r.outcome.as_str())
        }
        Some(r) => match now(r.owner) {
            Some(components) => {
                format!(
                    "{} changed",
                    drift::changed_components(r.manifest, &components).join(", ")
                )
            }
            None => "its fingerprint changed".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests;
