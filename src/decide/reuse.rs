//! Reuse planning: which providers a `prove` runs, and which reuse the receipts the store
//! already holds. `plan` shows the same decision, and `prove` hands it to the executor.
//!
//! A provider is reused only when every receipt it writes is a verified, trusted pass for
//! its current fingerprint ([`crate::decide::status::is_proven`]): a stale, missing,
//! failing or untrusted receipt makes it run. The decision reads the store and runs
//! nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;

use proofgraph_graph::fingerprint::Fingerprints;
use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::{Adapter, ChangeName, NodeId, ProviderId, SealedGraph};

use crate::attest::envelope::TrustedKey;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::store::{Sha256, Store};

/// Which providers to run: those whose receipts are not all current passes
/// (every one with `no_cache`), minus those that run nothing in `prove`
/// (`external`), restricted to a shard when asked. Beside them, the providers reused,
/// each with the receipts (their SHA-256) that prove it.
pub fn wanted(
    graph: &SealedGraph,
    fingerprints: &Fingerprints,
    store: &Store,
    trusted: &[TrustedKey],
    change: &ChangeName,
    no_cache: bool,
    shard: Option<(usize, NonZeroUsize)>,
) -> (BTreeSet<NodeId>, BTreeMap<ProviderId, Vec<Sha256>>) {
    let in_shard: Option<BTreeSet<NodeId>> =
        shard.map(|(i, n)| proofgraph_graph::schedule::shard(graph, i, n));
    // A discovery receiver with a producer is never run on its own: its producer's run
    // writes its receipt, and the producer reruns while that receipt is not proven (it is
    // one of the producer's outputs). It is listed as reused when it is proven.
    let candidates: Vec<_> = graph
        .providers()
        .filter(|(_, node, p)| {
            p.spec.adapter.value != Adapter::External
                && in_shard.as_ref().is_none_or(|s| s.contains(node))
        })
        .collect();
    let programs = crate::observe::programs::CurrentPrograms::load(store);
    let proven = |(_, _, p): &(&ProviderId, NodeId, &ProviderNode)| {
        crate::decide::status::is_proven(p, fingerprints, store, trusted, change, &programs)
    };
    // Reading and verifying each provider's receipts (an Ed25519 signature
    // check each) is most of a no-op prove after the snapshot: on every core.
    // A check that panicked proves nothing: its providers run.
    let results: Vec<Option<Vec<Sha256>>> = if no_cache {
        vec![None; candidates.len()]
    } else {
        crate::base::cores::map(&candidates, 8, proven)
            .into_iter()
            .map(Option::flatten)
            .collect()
    };
    programs.save();
    let mut run = BTreeSet::new();
    let mut reused = BTreeMap::new();
    for ((id, node, _), proven) in candidates.iter().zip(results) {
        match proven {
            Some(receipts) => {
                reused.insert((*id).clone(), receipts);
            }
            None if !graph.producers_of(*node).is_empty() => {}
            None => {
                run.insert(*node);
            }
        }
    }
    // A provider that runs sees the artifacts of those it depends on: one whose artifacts
    // the store no longer holds runs again to make them (and so on, up the chain).
    let mut todo: Vec<NodeId> = run.iter().copied().collect();
    while let Some(node) = todo.pop() {
        for source in graph.artifact_sources(node) {
            let Some(p) = graph.node(source).provider() else {
                continue;
            };
            let kept = fingerprints
                .providers
                .get(&p.spec.id.value)
                .is_some_and(|f| store.artifact_tree(f).is_dir());
            // A receiver runs through its producer, which is among the sources.
            if kept || run.contains(&source) || !graph.producers_of(source).is_empty() {
                continue;
            }
            reused.remove(&p.spec.id.value);
            run.insert(source);
            todo.push(source);
        }
    }
    (run, reused)
}

/// Whether `receipt` was made by a job that ran a command whose executions were not
/// recorded (no namespaces): its reuse rests on the programs its command names.
pub fn executions_unrecorded(receipt: &crate::proof::receipt::Verified) -> bool {
    receipt.proof.executed.is_none()
        && Adapter::ALL
            .into_iter()
            .find(|a| a.as_str() == receipt.proof.adapter)
            .is_some_and(Adapter::runs_command)
}

/// The warning for reused passes whose job's executions were not recorded (they were made
/// without namespaces: `--isolation none`, or a machine that has none): their reuse rests
/// on the programs the command names, not on what ran. One warning naming the first few.
pub fn unrecorded_executions(providers: &[ProviderId]) -> Option<Diagnostic> {
    let (first, rest) = (providers.iter().take(5), providers.len().saturating_sub(5));
    let mut named: Vec<String> = first.map(|p| format!("`{p}`")).collect();
    if named.is_empty() {
        return None;
    }
    if rest > 0 {
        named.push(format!("{rest} more"));
    }
    Some(
        Diagnostic::warning(
            Code::ExecutionsNotRecorded,
            format!(
                "reused {}: made where the programs a job executed could not be recorded, so reuse checks only the programs its command names",
                named.join(", ")
            ),
        )
        .fix("Run `proofgraph prove --no-cache` with namespaces (the default `--isolation auto` on a machine that allows them) to record what runs."),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proofgraph_graph::fingerprint::{Digest, Fingerprint};
    use proofgraph_graph::model::Provider;
    use proofgraph_graph::span::{Pos, Spanned};
    use proofgraph_graph::{CapabilityName, GraphBuilder, RepoId, Repositories};

    use super::*;
    use crate::base::redact::Secrets;
    use crate::proof::receipt::{self, Outcome, Proof, TestNames};

    fn at<T>(value: T) -> Spanned<T> {
        Spanned::new(value, Pos::default())
    }

    fn pid(s: &str) -> ProviderId {
        ProviderId::parse(s).expect("valid provider id")
    }

    fn command(id: &str) -> Provider {
        let mut p = Provider::new(pid(id), Adapter::Command);
        p.capability = Some(at(CapabilityName::parse("integration").expect("valid")));
        p.command = Some(at(vec![id.to_owned()]));
        p
    }

    /// `unit` and `lint` (commands), `ci` (external), and the producer `test-web` with its
    /// declared discovery receiver `discovery-web`.
    fn graph() -> SealedGraph {
        let mut ci = Provider::new(pid("ci"), Adapter::External);
        ci.capability = Some(at(CapabilityName::parse("integration").expect("valid")));
        let mut producer = Provider::new(pid("test-web"), Adapter::TestDiscovery);
        producer.capability = Some(at(CapabilityName::test()));
        producer.command = Some(at(vec!["sh".to_owned()]));
        producer.report = Some(at("web.tap".to_owned()));
        producer.discovery_provider = Some(at(pid("discovery-web")));
        let mut receiver = Provider::new(pid("discovery-web"), Adapter::TestDiscovery);
        receiver.capability = Some(at(CapabilityName::discovery()));
        receiver.command = Some(at(vec!["sh".to_owned()]));
        receiver.report = Some(at("web.tap".to_owned()));
        let mut b = GraphBuilder::new(Repositories {
            ids: [RepoId::root()].into(),
        });
        for p in [command("unit"), command("lint"), ci, producer, receiver] {
            b.provider(p, Arc::from("execution.yaml"));
        }
        b.seal().expect("seal")
    }

    fn change() -> ChangeName {
        ChangeName::parse("c").expect("a change name")
    }

    fn fingerprint(seed: &str) -> Fingerprint {
        Fingerprint(Digest::of(seed.as_bytes()))
    }

    /// Every provider of `graph` fingerprinted from its name and `generation`.
    fn fingerprints(graph: &SealedGraph, generation: &str) -> Fingerprints {
        Fingerprints {
            providers: graph
                .providers()
                .map(|(id, _, _)| (id.clone(), fingerprint(&format!("{id}{generation}"))))
                .collect(),
            services: BTreeMap::new(),
        }
    }

    struct World {
        _dir: tempfile::TempDir,
        store: Store,
        key: ed25519_dalek::SigningKey,
        graph: SealedGraph,
    }

    impl World {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(dir.path()).expect("store");
            let key = crate::attest::keys::generate_signing_key().expect("key");
            World {
                _dir: dir,
                store,
                key,
                graph: graph(),
            }
        }

        fn trusted(&self) -> Vec<TrustedKey> {
            vec![TrustedKey::new(self.key.verifying_key())]
        }

        /// Writes, signed by `key`, the receipt `provider`'s run writes for each of its
        /// outputs, bound to the fingerprint `fingerprints` gives it, with `outcome`;
        /// their SHA-256.
        fn prove(
            &self,
            provider: &str,
            fingerprints: &Fingerprints,
            outcome: Outcome,
            key: &ed25519_dalek::SigningKey,
        ) -> Vec<Sha256> {
            let node = self.graph.provider(&pid(provider)).expect("provider");
            let p = self.graph.node(node).provider().expect("a provider");
            let mut written = Vec::new();
            for output in &p.outputs {
                let fp = fingerprints
                    .of_receipt(&p.spec.id.value, &output.under)
                    .expect("fingerprinted");
                let proof = proof(provider, output.under.as_str(), &output.capability, fp);
                let proof = Proof { outcome, ..proof };
                let (sha, _) = receipt::write(
                    &self.store,
                    key,
                    proof,
                    &TestNames::default(),
                    &Secrets::none(),
                )
                .expect("write");
                let action = Store::action_key(fp, &output.under, &output.capability);
                self.store.set_action(&action, &sha).expect("action");
                self.store
                    .set_ref(&change(), &output.under, &output.capability, &sha)
                    .expect("ref");
                written.push(sha);
            }
            written
        }

        fn wanted(
            &self,
            fingerprints: &Fingerprints,
            no_cache: bool,
        ) -> (Vec<String>, BTreeMap<String, Vec<Sha256>>) {
            let (run, reused) = wanted(
                &self.graph,
                fingerprints,
                &self.store,
                &self.trusted(),
                &change(),
                no_cache,
                None,
            );
            let mut run: Vec<String> = run
                .into_iter()
                .map(|n| self.graph.node(n).name.clone())
                .collect();
            run.sort();
            let reused = reused
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            (run, reused)
        }
    }

    fn proof(provider: &str, under: &str, capability: &CapabilityName, fp: &Fingerprint) -> Proof {
        Proof {
            provider: pid(provider),
            receipt: pid(under),
            capability: capability.clone(),
            claims: Vec::new(),
            adapter: "command".into(),
            counts: None,
            discovered: None,
            minimum: None,
            finished_at: receipt::rfc3339(std::time::Duration::from_secs(1)),
            duration_ms: 1000,
            fingerprint: *fp,
            input_files: 1,
            trees: std::collections::BTreeMap::new(),
            commits: std::collections::BTreeMap::new(),
            ..Proof::sample()
        }
    }

    fn names(all: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = all.iter().map(|s| (*s).to_owned()).collect();
        out.sort();
        out
    }

    #[test]
    fn with_no_receipt_every_runnable_provider_runs_and_externals_and_receivers_do_not() {
        let w = World::new();
        let (run, reused) = w.wanted(&fingerprints(&w.graph, "1"), false);
        // `ci` runs nothing in prove; `discovery-web` is written by `test-web`'s run.
        assert_eq!(run, names(&["lint", "test-web", "unit"]));
        assert!(reused.is_empty(), "{reused:?}");
    }

    #[test]
    fn a_current_trusted_pass_is_reused_with_its_receipts() {
        let w = World::new();
        let fps = fingerprints(&w.graph, "1");
        let receipts = w.prove("unit", &fps, Outcome::Pass, &w.key);
        let (run, reused) = w.wanted(&fps, false);
        assert_eq!(run, names(&["lint", "test-web"]));
        assert_eq!(reused.get("unit"), Some(&receipts));
        assert_eq!(reused.len(), 1);
        // --no-cache: the same pass is not reused.
        let (run, reused) = w.wanted(&fps, true);
        assert_eq!(run, names(&["lint", "test-web", "unit"]));
        assert!(reused.is_empty());
    }

    #[test]
    fn a_stale_pass_a_failure_or_an_untrusted_pass_runs_again() {
        let w = World::new();
        let old = fingerprints(&w.graph, "1");
        let new = fingerprints(&w.graph, "2");
        // Stale: a pass for the fingerprint `unit` had before.
        w.prove("unit", &old, Outcome::Pass, &w.key);
        // A failure for the current fingerprint.
        w.prove("lint", &new, Outcome::Fail, &w.key);
        // A pass for the current fingerprint, signed by a key nothing trusts.
        let stranger = crate::attest::keys::generate_signing_key().expect("key");
        w.prove("test-web", &new, Outcome::Pass, &stranger);
        let (run, reused) = w.wanted(&new, false);
        assert_eq!(run, names(&["lint", "test-web", "unit"]));
        assert!(reused.is_empty(), "{reused:?}");
        // The same receipts, read for the fingerprints they name and trusted: only the
        // failure still runs.
        let (run, _) = w.wanted(&old, false);
        assert!(!run.contains(&"unit".to_owned()), "{run:?}");
        assert!(run.contains(&"lint".to_owned()), "{run:?}");
    }

    #[test]
    fn a_producer_is_reused_only_when_its_receivers_receipt_passes_too() {
        let w = World::new();
        let fps = fingerprints(&w.graph, "1");
        // Both of the producer's receipts (its own and the receiver's) pass: both reused.
        w.prove("test-web", &fps, Outcome::Pass, &w.key);
        let (run, reused) = w.wanted(&fps, false);
        assert!(!run.contains(&"test-web".to_owned()), "{run:?}");
        assert!(reused.contains_key("test-web"), "{reused:?}");
        assert!(reused.contains_key("discovery-web"), "{reused:?}");
        // The receiver's fingerprint moved alone: the producer runs to write it again,
        // and the receiver never runs on its own.
        let mut moved = fps.clone();
        moved
            .providers
            .insert(pid("discovery-web"), fingerprint("moved"));
        let (run, reused) = w.wanted(&moved, false);
        assert!(run.contains(&"test-web".to_owned()), "{run:?}");
        assert!(!run.contains(&"discovery-web".to_owned()), "{run:?}");
        assert!(!reused.contains_key("discovery-web"), "{reused:?}");
    }

    #[test]
    fn a_shard_decides_only_its_own_providers() {
        let w = World::new();
        let fps = fingerprints(&w.graph, "1");
        let two = NonZeroUsize::new(2).expect("two");
        let mut all = BTreeSet::new();
        for i in 0..2 {
            let (run, _) = wanted(
                &w.graph,
                &fps,
                &w.store,
                &w.trusted(),
                &change(),
                false,
                Some((i, two)),
            );
            let shard = proofgraph_graph::schedule::shard(&w.graph, i, two);
            assert!(run.is_subset(&shard), "{run:?} outside {shard:?}");
            assert!(all.is_disjoint(&run), "a provider in two shards");
            all.extend(run);
        }
        let (everything, _) = wanted(
            &w.graph,
            &fps,
            &w.store,
            &w.trusted(),
            &change(),
            false,
            None,
        );
        assert_eq!(all, everything);
    }
}
