//! `doctor` beyond the root: isolation on this machine, the proof store and
//! its keys, and a configured remote cache's reachability.

use std::net::TcpListener;
use std::process::Command;

use crate::support::{Sandbox, assert_codes};

fn tiny_change(sb: &Sandbox) {
    sb.lint_change(r#"[sh, -c, "true"]"#);
}

#[test]
fn doctor_reports_isolation_and_the_store_key_by_its_spki_digest() {
    let sb = Sandbox::new();
    tiny_change(&sb);
    let before = sb.run(&sb.work(), &["doctor", "--json"]);
    before.expect_code(0);
    let doc = before.json();
    // CI runs as root on Linux, where namespaces are available; prove's own
    // tests assert `isolation: namespaces` on the same machines.
    assert_eq!(doc["isolation"]["available"], true, "{doc:#}");
    assert_eq!(doc["proof_store"]["exists"], false);
    assert!(
        !sb.work().join(".proofgraph").exists(),
        "doctor creates nothing"
    );
    sb.run(&sb.work(), &["prove", "add-x"]).expect_code(0);
    let doc = sb.run(&sb.work(), &["doctor", "--json"]).json();
    assert_eq!(doc["proof_store"]["exists"], true);
    assert_eq!(doc["proof_store"]["receipts"], 1);
    // The key id is the SHA-256 of the SPKI DER, as openssl computes it.
    let der = Command::new("openssl")
        .args(["pkey", "-pubin", "-outform", "DER", "-in"])
        .arg(sb.work().join(".proofgraph/keys/workspace.pub"))
        .output()
        .unwrap_or_else(|e| panic!("openssl is required ({e}); apt-get install openssl"));
    assert!(der.status.success());
    assert_eq!(
        doc["proof_store"]["signing_key"]["keyid"],
        format!("sha256:{}", proofgraph::store::sha256_hex(&der.stdout))
    );
    assert!(
        doc["status"].as_array().expect("status").is_empty(),
        "{doc:#}"
    );
    // A key others can read is named.
    use std::os::unix::fs::PermissionsExt as _;
    let key = sb.work().join(".proofgraph/keys/workspace.key");
    fs_err::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let run = sb.run(&sb.work(), &["doctor", "--json"]);
    run.expect_code(0);
    assert_codes!(run.status_codes(), ["signing_key_exposed"]);
}

#[test]
fn a_configured_remote_cache_is_called_timed_and_its_policy_shown() {
    let sb = Sandbox::new();
    tiny_change(&sb);
    let nginx = crate::remote_http::Nginx::start(&sb, None);
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: {}\n", nginx.url),
    );
    let run = sb.run(&sb.work(), &["doctor", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["cache"]["reachable"], true, "{doc}");
    assert_eq!(doc["cache"]["protocol"], "http");
    assert_eq!(
        doc["cache"]["policy"], "local:rw,remote:r",
        "laptops read by default"
    );
    assert!(doc["cache"]["latency_ms"].as_u64().is_some());
    assert_codes!(run.status_codes(), []);
    let ci = sb.run_with_env(
        &sb.work(),
        &["doctor", "--json"],
        &[("PROOFGRAPH_CACHE", "local:rw,remote:rw")],
    );
    assert_eq!(ci.json()["cache"]["policy"], "local:rw,remote:rw");

    // A port nobody listens on: unreachable, said at `cache.remote`, exit 0 still.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: http://127.0.0.1:{port}/cache\n"),
    );
    let run = sb.run(&sb.work(), &["doctor", "--json"]);
    run.expect_code(0);
    assert_codes!(run.status_codes(), ["remote_cache_unavailable"]);
    let doc = run.json();
    assert_eq!(doc["cache"]["reachable"], false);
    let target = doc["status"][0]["target"].as_str().unwrap_or_default();
    assert!(target.starts_with("proofgraph.yaml:3:"), "{target}");
}
