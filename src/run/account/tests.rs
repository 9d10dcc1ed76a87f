use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;

use proofgraph_graph::{Adapter, CapabilityName};

use super::*;
use crate::decide::status::{Evidence, State};
use crate::run::testing::{discovery_pair, pid, provider, seal};

fn sha(byte: u8) -> Sha256 {
    Sha256::from_bytes([byte; 32])
}

fn receipt(of: &str, outcome: Outcome) -> ReceiptView {
    ReceiptView {
        receipt: pid(of),
        capability: CapabilityName::test(),
        outcome,
        reason: None,
        sha256: sha(1),
    }
}

fn ran(name: &str, outcomes: &[(&str, Outcome)]) -> ProviderRun {
    let mut run = row(name.to_owned(), ProviderAction::Ran, None);
    run.receipts = outcomes.iter().map(|(r, o)| receipt(r, *o)).collect();
    run
}

fn requirement(state: State, providers: &[(&str, State)]) -> Requirement {
    Requirement {
        claim: "c".to_owned(),
        capability: "test".to_owned(),
        state,
        evidence: providers
            .iter()
            .map(|(p, s)| Evidence {
                provider: (*p).to_owned(),
                receipt: (*p).to_owned(),
                state: *s,
                sha256: None,
                reason: Some("an earlier receipt's reason".to_owned()),
                counts: None,
                duration_ms: None,
            })
            .collect(),
        reason: None,
    }
}

#[test]
fn every_wanted_provider_that_did_not_run_gets_a_row_saying_why() {
    let graph = seal(
        vec![
            provider("a", Adapter::Command, &["true"]),
            provider("b", Adapter::Command, &["true"]),
        ],
        vec![],
    );
    let wanted: BTreeSet<_> = graph.providers().map(|(_, node, _)| node).collect();
    let rows = not_run(
        &graph,
        &wanted,
        ProviderAction::Interrupted,
        INTERRUPTED_BEFORE_START,
    );
    let names: Vec<&str> = rows.iter().map(|r| r.provider.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(rows.iter().all(|r| r.action == ProviderAction::Interrupted
        && r.reason.as_deref() == Some(INTERRUPTED_BEFORE_START)
        && r.receipts.is_empty()));
}

#[test]
fn a_discovery_receiver_gets_its_receipt_from_its_producers_run_unless_it_was_reused() {
    let graph = seal(discovery_pair(None).into(), vec![]);
    let producer = ran(
        "test-web",
        &[
            ("test-web", Outcome::Pass),
            ("discovery-web", Outcome::Fail),
        ],
    );
    let rows = produced(&graph, &BTreeMap::new(), std::slice::from_ref(&producer));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].provider, "discovery-web");
    assert_eq!(rows[0].action, ProviderAction::Produced);
    assert_eq!(
        rows[0].reason.as_deref(),
        Some("its receipt comes from the run of `test-web`")
    );
    let got: Vec<(String, Outcome)> = rows[0]
        .receipts
        .iter()
        .map(|r| (r.receipt.to_string(), r.outcome))
        .collect();
    assert_eq!(got, [("discovery-web".to_owned(), Outcome::Fail)]);
    // Reused: the receiver is among the reused providers and gets no row of its own.
    let reused = BTreeMap::from([(pid("discovery-web"), vec![sha(2)])]);
    assert!(produced(&graph, &reused, &[producer]).is_empty());
}

#[test]
fn only_a_run_that_did_not_pass_shows_its_log() {
    assert!(!shows_log(&ran("a", &[("a", Outcome::Pass)])));
    assert!(shows_log(&ran(
        "a",
        &[("a", Outcome::Pass), ("b", Outcome::Fail)]
    )));
    assert!(shows_log(&ran("a", &[("a", Outcome::Inconclusive)])));
    let mut reused = ran("a", &[("a", Outcome::Fail)]);
    reused.action = ProviderAction::Reused;
    assert!(!shows_log(&reused), "only what this run ran");
}

#[test]
fn a_requirement_whose_providers_were_all_skipped_says_why_this_run_skipped_them() {
    let providers = vec![
        row(
            "a".to_owned(),
            ProviderAction::Blocked,
            Some("`dep` failed".to_owned()),
        ),
        row(
            "b".to_owned(),
            ProviderAction::Interrupted,
            Some("interrupted".to_owned()),
        ),
        ran("c", &[("c", Outcome::Fail)]),
    ];
    let mut requirements = vec![
        requirement(
            State::Pending,
            &[("a", State::Pending), ("b", State::Stale)],
        ),
        requirement(
            State::Pending,
            &[("a", State::Pending), ("c", State::Failed)],
        ),
        requirement(State::Passed, &[("a", State::Passed)]),
    ];
    explain_skipped(&mut requirements, &providers);
    assert_eq!(requirements[0].reason.as_deref(), Some("`dep` failed"));
    assert!(
        requirements[0]
            .evidence
            .iter()
            .all(|e| e.reason.as_deref() == Some("`dep` failed"))
    );
    // One of its providers ran: its own reasons stand.
    assert_eq!(requirements[1].reason, None);
    assert_eq!(
        requirements[1].evidence[0].reason.as_deref(),
        Some("an earlier receipt's reason")
    );
    // Passed: untouched.
    assert_eq!(requirements[2].reason, None);
}

#[test]
fn the_summary_counts_states_traffic_and_what_ran() {
    let providers = vec![
        ran("a", &[("a", Outcome::Pass)]),
        row("b".to_owned(), ProviderAction::Reused, None),
        row("c".to_owned(), ProviderAction::Reused, None),
    ];
    let requirements = vec![requirement(State::Passed, &[("a", State::Passed)])];
    let quiet = summary(&requirements, &providers, Traffic::default());
    assert_eq!(quiet["ran"], 1);
    assert_eq!(quiet["reused"], 2);
    assert_eq!(quiet["passed"], 1);
    assert!(!quiet.contains_key("pulled") && !quiet.contains_key("pushed"));
    let busy = summary(
        &requirements,
        &providers,
        Traffic {
            pulled: 2,
            pushed: Some((1, 0)),
        },
    );
    assert_eq!((busy["pulled"], busy["pushed"]), (2, 1));
    assert!(!busy.contains_key("push_failed"));
    let failing = summary(
        &requirements,
        &providers,
        Traffic {
            pulled: 0,
            pushed: Some((0, 3)),
        },
    );
    assert_eq!((failing["pushed"], failing["push_failed"]), (0, 3));
    assert!(!failing.contains_key("pulled"));
}

#[test]
fn the_verdict_puts_interrupts_first_then_commands_that_could_not_start_then_failures() {
    let graph = seal(vec![provider("a", Adapter::Command, &["true"])], vec![]);
    let passed = vec![requirement(State::Passed, &[("a", State::Passed)])];
    let pending = vec![requirement(State::Pending, &[("a", State::Pending)])];
    let mut could_not_start = ran("a", &[("a", Outcome::Error)]);
    could_not_start.result = Some(Mark::CouldNotStart);
    let failed = ran("a", &[("a", Outcome::Fail)]);
    let end = Ending::default();
    let interrupted = Ending {
        interrupted: true,
        ..end
    };
    assert_eq!(
        verdict(&graph, &[could_not_start.clone()], &passed, interrupted),
        Verdict::Interrupted
    );
    assert_eq!(
        verdict(&graph, &[could_not_start, failed.clone()], &passed, end),
        Verdict::Invalid
    );
    assert_eq!(verdict(&graph, &[failed], &passed, end), Verdict::Failed);
    let changed = Ending {
        inputs_changed: true,
        ..end
    };
    assert_eq!(verdict(&graph, &[], &passed, changed), Verdict::Failed);
    assert_eq!(verdict(&graph, &[], &passed, end), Verdict::Success);
    assert_eq!(verdict(&graph, &[], &pending, end), Verdict::Unproven);
}

#[test]
fn a_shard_answers_for_its_own_providers_only() {
    let graph = seal(
        vec![
            provider("a", Adapter::Command, &["true"]),
            provider("b", Adapter::Command, &["true"]),
        ],
        vec![],
    );
    let two = NonZeroUsize::new(2).expect("two");
    let mine = |i| -> String {
        let ids = proofgraph_graph::schedule::shard(&graph, i, two);
        assert_eq!(ids.len(), 1, "two providers over two shards");
        let id = ids.into_iter().next().expect("one");
        graph.node(id).name.clone()
    };
    let (first, second) = (mine(0), mine(1));
    // The first shard's provider passed, the second's is pending.
    let requirements = vec![requirement(
        State::Pending,
        &[
            (first.as_str(), State::Passed),
            (second.as_str(), State::Pending),
        ],
    )];
    let shard = |i| Ending {
        shard: Some((i, two)),
        ..Ending::default()
    };
    assert_eq!(
        verdict(&graph, &[], &requirements, shard(0)),
        Verdict::Success
    );
    assert_eq!(
        verdict(&graph, &[], &requirements, shard(1)),
        Verdict::Unproven
    );
    assert_eq!(
        verdict(&graph, &[], &requirements, Ending::default()),
        Verdict::Unproven
    );
}

#[test]
fn a_reused_provider_keeps_only_receipts_that_verify_and_says_when_one_was_pulled() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Store::open(dir.path()).expect("a store");
    let reused_map = BTreeMap::from([(pid("a"), vec![sha(7)]), (pid("b"), vec![sha(8)])]);
    let out = reused(&store, &[], &[sha(8)], &reused_map);
    assert!(out.unrecorded.is_empty());
    let rows: Vec<(&str, Option<&str>, usize)> = out
        .runs
        .iter()
        .map(|r| (r.provider.as_str(), r.reason.as_deref(), r.receipts.len()))
        .collect();
    // Neither receipt is in the store, so none verifies.
    assert_eq!(rows, [("a", None, 0), ("b", Some(FROM_REMOTE), 0)]);
    assert!(out.runs.iter().all(|r| r.action == ProviderAction::Reused));
}
