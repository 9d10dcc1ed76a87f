//! Where each requirement stands: claim × capability → passed, failed,
//! inconclusive, stale or pending, from the receipts in the store for the
//! current fingerprints.
//!
//! A requirement (a claim needing a capability) is met by the providers that
//! prove the capability and vouch for the claim; a claim that names
//! repositories needs one such provider per repository. A provider's receipt
//! counts only if it verifies against a trusted key and names the current
//! fingerprint; a receipt for another fingerprint makes the requirement
//! `stale`, none at all `pending`, and so does one for the current fingerprint
//! that no trusted key signed — with a reason naming the key it claims.

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::fingerprint::{Fingerprint, Fingerprints};
use proofgraph_graph::{CapabilityName, ChangeName, ProviderId, RepoId, SealedGraph};
use serde::Serialize;

use crate::attest::envelope::TrustedKey;
use crate::present::exit::Verdict;
use crate::proof::receipt::{self, Outcome, Verified};
use crate::store::{Sha256, Store};

/// A requirement's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// A current receipt passes.
    Passed,
    /// A current receipt fails (or is an error).
    Failed,
    /// A current receipt neither passes nor fails.
    Inconclusive,
    /// A receipt exists, but for another fingerprint.
    Stale,
    /// No receipt.
    Pending,
}

impl State {
    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Passed => "passed",
            State::Failed => "failed",
            State::Inconclusive => "inconclusive",
            State::Stale => "stale",
            State::Pending => "pending",
        }
    }
}

/// The receipt a provider would write for a capability, and what the store
/// holds for it.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    /// The provider whose run writes it.
    pub provider: String,
    /// The name it is stored under.
    pub receipt: String,
    /// Its state.
    pub state: State,
    /// The receipt's SHA-256, when there is a current one (or the stale one, or the
    /// one for this fingerprint that no trusted key signed).
    pub sha256: Option<Sha256>,
    /// Why it is not passed.
    pub reason: Option<String>,
    /// The test counts its current receipt records, when its report gave them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<receipt::Counts>,
    /// How long the run its current receipt records took (for CI reports; not in the
    /// JSON document, whose shape stays as it was).
    #[serde(skip)]
    pub duration_ms: Option<u64>,
}

/// One claim × capability.
#[derive(Debug, Clone, Serialize)]
pub struct Requirement {
    /// The claim.
    pub claim: String,
    /// The capability.
    pub capability: String,
    /// The combined state.
    pub state: State,
    /// The receipts that decide it.
    pub evidence: Vec<Evidence>,
    /// Why it is not passed, when no receipt says (unwired, a repository without a provider).
    pub reason: Option<String>,
}

impl Requirement {
    /// The test counts of the first of its receipts that records them, shown.
    pub fn counts_shown(&self) -> Option<String> {
        self.evidence
            .iter()
            .find_map(|e| e.counts.as_ref())
            .map(receipt::Counts::shown)
    }
}

/// What the store says about one receipt of one provider.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// The state it gives.
    pub state: State,
    /// The current receipt, verified.
    pub verified: Option<Verified>,
    /// The receipt found when none is current and verified: the stale one, or
    /// the one for this fingerprint that does not count.
    pub other: Option<Sha256>,
    /// Why a receipt for this fingerprint does not count (an untrusted signer).
    pub reason: Option<String>,
}

/// What the store says about one receipt of one provider. A receipt for the current
/// fingerprint that does not verify against a trusted key is no proof: the state is
/// `pending` and the reason says whose signature it carries, never `stale`.
pub fn lookup(
    store: &Store,
    trusted: &[TrustedKey],
    change: &ChangeName,
    fingerprint: &Fingerprint,
    receipt: &ProviderId,
    capability: &CapabilityName,
) -> Lookup {
    let key = Store::action_key(fingerprint, receipt, capability);
    if let Some(sha) = store.action(&key) {
        match receipt::check(store, &sha, trusted) {
            Ok(v)
                if v.proof.fingerprint == *fingerprint
                    && v.proof.capability == *capability
                    && v.proof.receipt == *receipt =>
            {
                return Lookup {
                    state: state_of(v.proof.outcome),
                    verified: Some(v),
                    other: None,
                    reason: None,
                };
            }
            Err(
                why @ (receipt::Unverified::Untrusted { .. } | receipt::Unverified::Invalid(_)),
            ) => {
                return Lookup {
                    state: State::Pending,
                    verified: None,
                    reason: Some(format!("the receipt for this fingerprint {}", why.reason())),
                    other: Some(sha),
                };
            }
            // A missing blob, or an entry naming another requirement's receipt: no
            // receipt for this fingerprint.
            Ok(_) | Err(receipt::Unverified::Missing) => {}
        }
    }
    match store.latest(change, receipt, capability) {
        Some(sha) => Lookup {
            state: State::Stale,
            verified: None,
            other: Some(sha),
            reason: None,
        },
        None => Lookup {
            state: State::Pending,
            verified: None,
            other: None,
            reason: None,
        },
    }
}

/// The requirement state a receipt's outcome gives.
fn state_of(outcome: Outcome) -> State {
    match outcome {
        Outcome::Pass => State::Passed,
        Outcome::Fail | Outcome::Error => State::Failed,
        Outcome::Inconclusive => State::Inconclusive,
    }
}

/// Combines several states: any failure fails; else any inconclusive; else
/// all passed passes; else stale before pending.
pub fn combine(states: impl IntoIterator<Item = State>) -> State {
    let all: Vec<State> = states.into_iter().collect();
    if all.is_empty() {
        return State::Pending;
    }
    for s in [State::Failed, State::Inconclusive] {
        if all.contains(&s) {
            return s;
        }
    }
    if all.iter().all(|s| *s == State::Passed) {
        return State::Passed;
    }
    if all.contains(&State::Stale) {
        State::Stale
    } else {
        State::Pending
    }
}

/// Every requirement of the change, in claim order.
pub fn requirements(
    graph: &SealedGraph,
    fingerprints: &Fingerprints,
    store: &Store,
    trusted: &[TrustedKey],
    change: &ChangeName,
) -> Vec<Requirement> {
    // One lookup (and one signature check) per receipt, however many claims it answers for.
    let mut cache: BTreeMap<(ProviderId, String, String), Lookup> = BTreeMap::new();
    let mut out = Vec::new();
    for claim in graph.claims() {
        for capability in claim.required_capabilities() {
            let provers: Vec<(&ProviderId, &proofgraph_graph::graph::ProviderNode)> = graph
                .provers_of(&claim.id.value)
                .filter(|(_, p)| p.outputs.iter().any(|o| o.capability == capability))
                .collect();
            let mut evidence = Vec::new();
            // One row per receipt: a receiver's receipt is its producer's output too.
            let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
            for (id, p) in &provers {
                for output in p.outputs.iter().filter(|o| o.capability == capability) {
                    let Some(fp) = fingerprints.of_receipt(id, &output.under) else {
                        continue;
                    };
                    if !seen.insert((output.under.to_string(), capability.to_string())) {
                        continue;
                    }
                    // The provider whose run writes it: a receiver's producer.
                    let writer = writer_of(graph, id, &output.under);
                    let key = (
                        writer.clone(),
                        output.under.to_string(),
                        capability.to_string(),
                    );
                    let Lookup {
                        mut state,
                        verified,
                        other,
                        reason: refused,
                    } = cache
                        .entry(key)
                        .or_insert_with(|| {
                            lookup(store, trusted, change, fp, &output.under, &capability)
                        })
                        .clone();
                    // A receipt that judged claims separately answers for this claim alone.
                    let own = verified
                        .as_ref()
                        .and_then(|v| v.proof.claim_outcomes.get(claim.id.value.as_str()));
                    if let Some(own) = own {
                        state = state_of(own.outcome);
                    }
                    let reason = match (&verified, state) {
                        (Some(_), State::Failed | State::Inconclusive) if own.is_some() => {
                            own.and_then(|o| o.reason.clone())
                        }
                        (Some(v), State::Failed | State::Inconclusive) => v.proof.reason.clone(),
                        (None, _) if refused.is_some() => refused,
                        (None, State::Stale) => {
                            Some("the receipt is for an earlier fingerprint".to_owned())
                        }
                        (None, State::Pending) => Some("not proven yet".to_owned()),
                        _ => None,
                    };
                    evidence.push(Evidence {
                        provider: writer.to_string(),
                        receipt: output.under.to_string(),
                        state,
                        counts: verified.as_ref().and_then(|v| v.proof.counts.clone()),
                        duration_ms: verified.as_ref().map(|v| v.proof.duration_ms),
                        sha256: verified.map(|v| v.sha256).or(other),
                        reason,
                    });
                }
            }
            let mut state = combine(evidence.iter().map(|e| e.state));
            let mut reason = None;
            if provers.is_empty() {
                state = State::Pending;
                reason = Some(format!("no provider proves `{capability}`"));
            } else if let Some(repos) = &claim.repositories {
                let covered: BTreeSet<&RepoId> = provers
                    .iter()
                    .flat_map(|(_, p)| p.repositories.iter())
                    .collect();
                let missing: Vec<String> = repos
                    .iter()
                    .filter(|r| !covered.contains(&r.value))
                    .map(|r| format!("`{}`", r.value))
                    .collect();
                if !missing.is_empty() {
                    if state == State::Passed {
                        state = State::Pending;
                    }
                    reason = Some(format!(
                        "no provider of repository {} proves `{capability}`",
                        missing.join(", ")
                    ));
                }
            }
            out.push(Requirement {
                claim: claim.id.value.to_string(),
                capability: capability.to_string(),
                state,
                evidence,
                reason,
            });
        }
    }
    out
}

/// The provider whose run writes the receipt `provider` has under `under`: the producer
/// of a discovery receiver (which never runs on its own), else `provider` itself.
pub fn writer_of(graph: &SealedGraph, provider: &ProviderId, under: &ProviderId) -> ProviderId {
    if provider == under
        && let Some(node) = graph.provider(provider)
        && let Some(producer) = graph
            .producers_of(node)
            .first()
            .and_then(|n| graph.node(*n).provider())
    {
        return producer.spec.id.value.clone();
    }
    provider.clone()
}

/// Whether every receipt a provider writes is a current, verified pass (each bound to the
/// fingerprint [`Fingerprints::of_receipt`] gives it).
pub fn is_proven(
    provider: &proofgraph_graph::graph::ProviderNode,
    fingerprints: &Fingerprints,
    store: &Store,
    trusted: &[TrustedKey],
    change: &ChangeName,
    programs: &crate::observe::programs::CurrentPrograms,
) -> Option<Vec<Sha256>> {
    let mut receipts = Vec::new();
    for output in &provider.outputs {
        let fingerprint = fingerprints.of_receipt(&provider.spec.id.value, &output.under)?;
        let found = lookup(
            store,
            trusted,
            change,
            fingerprint,
            &output.under,
            &output.capability,
        );
        if found.state != State::Passed {
            return None;
        }
        // A pass made in place is never reused (its job could see and change everything);
        // an imported CI result (`external`) ran elsewhere and says so.
        if let Some(v) = &found.verified
            && v.proof.sandbox == proofgraph_sandbox::SandboxMode::None
            && v.proof.adapter != "external"
        {
            return None;
        }
        // Every program its job executed is still the file that ran.
        if let Some(executed) = found
            .verified
            .as_ref()
            .and_then(|v| v.proof.executed.as_ref())
            && programs
                .first_changed(
                    executed
                        .iter()
                        .map(|e| (e.path.as_str(), e.digest.as_str())),
                )
                .is_some()
        {
            return None;
        }
        receipts.extend(found.verified.map(|v| v.sha256));
    }
    Some(receipts)
}

/// Reads and verifies, on every core, the receipt the action cache names for each output of
/// each provider's current fingerprint, so that the lookups after it find them verified (the
/// store remembers every receipt this process verified). Verifying receipts (an Ed25519
/// signature each) is most of a `status` of a large change. (`prove` needs none of this: its
/// reuse check has verified the receipts on every core, and the rest it wrote itself.)
pub fn verify_current(
    graph: &SealedGraph,
    fingerprints: &Fingerprints,
    store: &Store,
    trusted: &[TrustedKey],
) {
    let keys: Vec<Sha256> = graph
        .providers()
        .flat_map(|(id, _, p)| {
            p.outputs.iter().filter_map(move |o| {
                let fp = fingerprints.of_receipt(id, &o.under)?;
                Some(Store::action_key(fp, &o.under, &o.capability))
            })
        })
        .collect();
    crate::base::cores::map(&keys, 8, |key| {
        if let Some(sha) = store.action(key) {
            receipt::read(store, &sha, trusted);
        }
    });
}

/// The state of the whole change, for the exit code.
pub fn overall(requirements: &[Requirement]) -> State {
    combine(requirements.iter().map(|r| r.state))
}

/// The verdict for a set of requirements: every one passed → success; any
/// failed → failed; otherwise not everything is proven.
pub fn verdict(requirements: &[Requirement]) -> Verdict {
    match overall(requirements) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(state: State) -> Requirement {
        Requirement {
            claim: "c".to_owned(),
            capability: "test".to_owned(),
            state,
            evidence: Vec::new(),
            reason: None,
        }
    }

    #[test]
    fn the_verdict_is_success_only_when_every_requirement_passed() {
        let of =
            |states: &[State]| verdict(&states.iter().map(|s| requirement(*s)).collect::<Vec<_>>());
        assert_eq!(of(&[State::Passed, State::Passed]), Verdict::Success);
        assert_eq!(of(&[State::Passed, State::Failed]), Verdict::Failed);
        assert_eq!(of(&[State::Failed, State::Pending]), Verdict::Failed);
        for unproven in [State::Inconclusive, State::Stale, State::Pending] {
            assert_eq!(of(&[State::Passed, unproven]), Verdict::Unproven);
        }
    }

    #[test]
    fn the_summary_counts_every_state_and_names_them_all() {
        let counts = summary(&[
            requirement(State::Passed),
            requirement(State::Passed),
            requirement(State::Stale),
        ]);
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            [
                ("failed", 0),
                ("inconclusive", 0),
                ("passed", 2),
                ("pending", 0),
                ("stale", 1)
            ]
        );
    }
}
