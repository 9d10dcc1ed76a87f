use super::*;

fn id(s: &str) -> ProviderId {
    ProviderId::parse(s).expect("valid provider id")
}

fn fp(n: u8) -> Fingerprint {
    Fingerprint(proofgraph_graph::fingerprint::Digest([n; 32]))
}

fn component(name: &str, value: serde_json::Value) -> Component {
    Component {
        tag: 0,
        name: name.to_owned(),
        value,
    }
}

#[test]
fn a_reuse_names_only_the_receipts_pulled_from_the_remote_cache() {
    let (local, remote) = (Sha256::of(b"local"), Sha256::of(b"remote"));
    assert_eq!(reuse_reason(&[local], &[remote]), None);
    assert_eq!(
        reuse_reason(&[local, remote], &[remote]),
        Some(format!(
            "remote receipt {} (pulled from the remote cache)",
            &remote.to_hex()[..12]
        ))
    );
}

#[test]
fn a_provider_runs_for_its_first_receipt_that_is_not_a_current_pass() {
    let owner = id("test");
    let manifest = [component("command", serde_json::json!(["npm", "test"]))];
    let last = |fingerprint, outcome| Last {
        owner: &owner,
        fingerprint,
        outcome,
        manifest: &manifest,
    };
    let current = |_: &ProviderId, f: &Fingerprint| *f == fp(1);
    let now = |_: &ProviderId| Some(vec![component("command", serde_json::json!(["npm", "t"]))]);
    let (now_fp, old_fp) = (fp(1), fp(2));
    assert_eq!(why_it_runs(&[], &current, &now), "no receipt yet");
    let passed = last(&now_fp, Outcome::Pass);
    let failed = last(&now_fp, Outcome::Fail);
    assert_eq!(
        why_it_runs(&[Ok(passed), Ok(failed)], &current, &now),
        "its last run was fail"
    );
    let stale = last(&old_fp, Outcome::Pass);
    assert_eq!(why_it_runs(&[Ok(stale)], &current, &now), "command changed");
    assert_eq!(
        why_it_runs(&[Ok(stale)], &current, &|_| None),
        "its fingerprint changed"
    );
    // A receipt that does not count is said so, unless one that counts decides.
    let untrusted = Unverified::Untrusted {
        named: vec!["k1".to_owned()],
    };
    assert_eq!(
        why_it_runs(
            &[Err(&Unverified::Missing), Err(&untrusted)],
            &current,
            &now
        ),
        format!("its last receipt {}", untrusted.reason())
    );
    assert_eq!(
        why_it_runs(&[Err(&Unverified::Missing)], &current, &now),
        "no receipt yet"
    );
    assert_eq!(
        why_it_runs(&[Err(&untrusted), Ok(failed)], &current, &now),
        "its last run was fail"
    );
}
