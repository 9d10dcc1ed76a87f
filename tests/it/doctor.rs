//! `doctor` beyond the root: isolation on this machine, the proof store and
//! its keys, and a configured remote cache's reachability.

use std::io::{Read as _, Write as _};
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

/// A one-connection HTTP server answering `HEAD` with 200.
fn http_once() -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 1024];
        let n = stream.read(&mut buf).unwrap_or(0);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    });
    (port, handle)
}

#[test]
fn a_configured_remote_cache_is_checked_and_said_to_be_unused() {
    let sb = Sandbox::new();
    tiny_change(&sb);
    let (port, server) = http_once();
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: http://127.0.0.1:{port}/cache\n"),
    );
    let doc = sb.run(&sb.work(), &["doctor", "--json"]).json();
    let request = server.join().expect("server");
    assert!(request.starts_with("HEAD /cache HTTP/1.1\r\n"), "{request}");
    assert_eq!(doc["cache"]["reachable"], true);
    assert_eq!(doc["cache"]["detail"], "HTTP/1.1 200 OK");
    assert_eq!(doc["cache"]["used"], false);
    assert_codes!(crate::support::codes(&doc["status"]), ["cache_not_used"]);

    // A port nobody listens on.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: http://127.0.0.1:{port}/cache\n"),
    );
    let run = sb.run(&sb.work(), &["doctor", "--json"]);
    run.expect_code(0);
    assert_codes!(run.status_codes(), ["cache_unreachable", "cache_not_used"]);
    let doc = run.json();
    assert_eq!(doc["cache"]["reachable"], false);
    let target = doc["status"][0]["target"].as_str().unwrap_or_default();
    assert!(target.starts_with("proofgraph.yaml:3:"), "{target}");
}
