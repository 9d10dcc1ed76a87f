//! `contract-digest`: two repositories' copies of a contract must be the
//! same bytes; a one-byte difference fails naming both digests, and a
//! missing copy fails naming where.

use serde_json::Value;

use crate::support::{Sandbox, git_commit_all, statement};

const CONTRACT: &str = "{\"name\": \"profile\", \"version\": 1}\n";

fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  web: {path: web}\n  api: {path: api}\n",
    );
    sb.write("web/src/contracts/profile.v1.json", CONTRACT);
    sb.write("api/contracts/profile.v1.json", CONTRACT);
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: agree, scenario: Web and api agree on the profile, capabilities: [cross-repo-contract]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  cross-repo-contract:\n    adapter: contract-digest\n    contract:\n      web: src/contracts/profile.v1.json\n      api: contracts/profile.v1.json\n",
    );
    git_commit_all(&sb.work());
}

/// (state, reason) of the `agree` requirement after a prove.
fn prove(sb: &Sandbox, code: i32) -> (String, String) {
    let run = sb.run(&sb.work(), &["prove", "add-x", "--json"]);
    run.expect_code(code);
    let doc = run.json();
    let req = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["claim"] == "agree")
        .cloned()
        .unwrap_or(Value::Null);
    (
        req["state"].as_str().unwrap_or("").to_owned(),
        req["evidence"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// (path, sha256, size) of each contract artifact in the latest receipt.
fn artifacts(sb: &Sandbox) -> Vec<(String, String, u64)> {
    let doc = sb.run(&sb.work(), &["status", "add-x", "--json"]).json();
    let sha = doc["requirements"][0]["evidence"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    let statement = statement(sb, &sha);
    statement["predicate"]["proofgraph"]["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter(|a| a["kind"] == "contract-artifact")
        .map(|a| {
            (
                a["path"].as_str().unwrap_or("").to_owned(),
                a["sha256"].as_str().unwrap_or("").to_owned(),
                a["size"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn sha256(bytes: &[u8]) -> String {
    proofgraph::store::sha256_hex(bytes)
}

#[test]
fn identical_contracts_pass_and_one_differing_byte_fails_naming_both_digests() {
    let sb = Sandbox::new();
    workspace(&sb);
    assert_eq!(prove(&sb, 0).0, "passed");
    // The receipt records each side's digest and size.
    let mut sides = artifacts(&sb);
    sides.sort();
    let digest = sha256(CONTRACT.as_bytes());
    assert_eq!(
        sides,
        vec![
            (
                "api:contracts/profile.v1.json".to_owned(),
                digest.clone(),
                CONTRACT.len() as u64
            ),
            (
                "web:src/contracts/profile.v1.json".to_owned(),
                digest,
                CONTRACT.len() as u64
            ),
        ]
    );
    let edited = CONTRACT.replace("1}", "2}");
    assert_eq!(edited.len(), CONTRACT.len(), "one byte differs");
    sb.write("api/contracts/profile.v1.json", &edited);
    git_commit_all(&sb.work());
    let (state, reason) = prove(&sb, 1);
    assert_eq!(state, "failed");
    assert_eq!(
        reason,
        format!(
            "the contracts differ: api:contracts/profile.v1.json is sha256:{} ({} bytes); web:src/contracts/profile.v1.json is sha256:{} ({} bytes)",
            sha256(edited.as_bytes()),
            edited.len(),
            sha256(CONTRACT.as_bytes()),
            CONTRACT.len()
        )
    );
    // Putting the byte back passes again (a failure is never reused).
    sb.write("api/contracts/profile.v1.json", CONTRACT);
    git_commit_all(&sb.work());
    assert_eq!(prove(&sb, 0).0, "passed");
}

#[test]
fn a_missing_copy_fails_naming_where() {
    let sb = Sandbox::new();
    workspace(&sb);
    fs_err::remove_file(sb.work().join("api/contracts/profile.v1.json")).expect("remove");
    git_commit_all(&sb.work());
    let (state, reason) = prove(&sb, 1);
    assert_eq!(state, "failed");
    assert_eq!(
        reason,
        "the contract is missing at api:contracts/profile.v1.json"
    );
}
