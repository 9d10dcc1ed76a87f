//! `evidence verify-ci`: a result CI signed with openssl (not with our own
//! code) is accepted for an `external` provider exactly when it verifies,
//! names the provider's current binding and says PASSED; anything else is
//! rejected with a stable code and writes nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use proofgraph::decide::external::{self, Expectation};

use crate::support::{Emitted, Sandbox, assert_codes, emitted, git_commit_all};

const ISSUER: &str = "https://ci.example/proofgraph";

fn openssl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("openssl is required ({e}); install it with `apt-get install openssl`")
        });
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// An Ed25519 key pair made by openssl: (private key path, public PEM).
fn keypair(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(format!("{name}.pem"));
    let key_str = key.to_str().expect("utf-8 path");
    openssl(&["genpkey", "-algorithm", "ed25519", "-out", key_str]);
    let public = openssl(&["pkey", "-in", key_str, "-pubout"]);
    (key, String::from_utf8(public).expect("pem"))
}

/// The DSSE PAE, spelled out here rather than taken from the crate.
fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// Signs `statement` with the private key at `key` using openssl and
/// returns the envelope's bytes.
fn sign(dir: &Path, key: &Path, statement: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(statement).expect("json");
    let pae_path = dir.join("pae.bin");
    crate::support::write(&pae_path, pae("application/vnd.in-toto+json", &body));
    let sig = openssl(&[
        "pkeyutl",
        "-sign",
        "-rawin",
        "-inkey",
        key.to_str().expect("utf-8 path"),
        "-in",
        pae_path.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(sig.len(), 64, "an Ed25519 signature");
    serde_json::to_vec(&json!({
        "payloadType": "application/vnd.in-toto+json",
        "payload": proofgraph::attest::b64::encode(&body),
        "signatures": [{"keyid": "ci", "sig": proofgraph::attest::b64::encode(&sig)}],
    }))
    .expect("json")
}

/// What CI signs for `binding`, as docs/external.md describes it.
fn statement(binding: &str, result: &str, failed: &[&str], issuer: &str) -> Value {
    json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "proofgraph:add-x/ci-e2e", "digest": {"sha256": binding}}],
        "predicateType": "https://in-toto.io/attestation/test-result/v0.1",
        "predicate": {
            "result": result,
            "passedTests": ["e2e: profile saves"],
            "failedTests": failed,
            "issuer": issuer,
            "claims": ["e2e-works"],
        },
    })
}

/// A repository whose change has a local test and an `external` provider
/// vouching for `e2e-works`, trusting `public_pem`.
fn workspace(sb: &Sandbox, public_pem: &str) {
    sb.openspec_root("");
    sb.write("src/app.js", "app\n");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: e2e-works, scenario: The profile saves end to end, capabilities: [integration]}\n",
    );
    let key: String = public_pem
        .lines()
        .map(|l| format!("        {l}\n"))
        .collect();
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  ci-e2e:\n    adapter: external\n    capability: integration\n    inputs: [\"src/**\"]\n    claims: [e2e-works]\n    ci:\n      issuer: {ISSUER}\n      publicKey: |\n{key}  local:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"true\"]\n"
        ),
    );
    git_commit_all(&sb.work());
}

/// A sandbox holding [`workspace`], which trusts CI's key; the directory of the keys, and
/// two private keys in it: CI's and another's.
fn signing() -> (Sandbox, tempfile::TempDir, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    let keys = tempfile::tempdir().expect("tempdir");
    let (ci, public) = keypair(keys.path(), "ci");
    let (other, _) = keypair(keys.path(), "other");
    workspace(&sb, &public);
    (sb, keys, ci, other)
}

fn binding(sb: &Sandbox) -> String {
    let run = sb.run(&sb.work(), &["hash", "add-x", "ci-e2e"]);
    run.expect_code(0);
    run.stdout.trim().to_owned()
}

fn e2e_state(sb: &Sandbox) -> String {
    let doc = sb.run(&sb.work(), &["status", "add-x", "--json"]).json();
    doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["claim"] == "e2e-works" && r["capability"] == "integration")
        .and_then(|r| r["state"].as_str())
        .expect("the e2e requirement")
        .to_owned()
}

fn verify(sb: &Sandbox, envelope: &Path) -> crate::support::Run {
    sb.run(
        &sb.work(),
        &[
            "evidence",
            "verify-ci",
            "add-x",
            "ci-e2e",
            envelope.to_str().expect("utf-8 path"),
            "--json",
        ],
    )
}

/// Every file under `.proofgraph/refs`, to show a rejection wrote nothing.
fn refs(sb: &Sandbox) -> Vec<PathBuf> {
    let root = sb.work().join(".proofgraph/refs");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_result_ci_signed_with_openssl_proves_the_claim_until_the_code_changes() {
    let (sb, keys, private, _) = signing();
    assert_eq!(e2e_state(&sb), "pending");
    // prove runs the local provider and nothing for the external one.
    let prove = sb.run(&sb.work(), &["prove", "add-x", "--json"]);
    prove.expect_code(2);
    assert_eq!(e2e_state(&sb), "pending");

    let envelope = sb.path().join("ci-result.dsse.json");
    let bound = binding(&sb);
    crate::support::write(
        &envelope,
        sign(
            keys.path(),
            &private,
            &statement(&bound, "PASSED", &[], ISSUER),
        ),
    );
    let run = verify(&sb, &envelope);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["accepted"], true);
    assert_eq!(doc["binding"], bound.as_str());
    assert_eq!(doc["receipts"].as_array().map(Vec::len), Some(1));
    assert_eq!(e2e_state(&sb), "passed");
    sb.run(&sb.work(), &["status", "add-x"]).expect_code(0);

    // The imported receipt is one of ours: signed by the workspace key and
    // bound to the same binding, with the envelope kept as evidence.
    let sha = doc["receipts"][0]["sha256"].as_str().expect("sha");
    let path = sb
        .work()
        .join(".proofgraph/cas")
        .join(&sha[..2])
        .join(&sha[2..]);
    let receipt: Value =
        serde_json::from_slice(&fs_err::read(path).expect("receipt")).expect("json");
    let body = proofgraph::attest::b64::decode(receipt["payload"].as_str().expect("payload"))
        .expect("base64");
    let inner: Value = serde_json::from_slice(&body).expect("statement");
    assert_eq!(inner["subject"][0]["digest"]["sha256"], bound.as_str());
    assert_eq!(inner["predicate"]["result"], "PASSED");

    // Editing an input makes the result stale, and the old envelope no
    // longer verifies for the new binding.
    sb.write("src/app.js", "edited\n");
    git_commit_all(&sb.work());
    assert_eq!(e2e_state(&sb), "stale");
    let before = refs(&sb);
    let stale = verify(&sb, &envelope);
    stale.expect_code(1);
    assert_codes!(stale.status_codes(), ["envelope_stale"]);
    assert!(stale.stderr.is_empty() || !stale.stderr.contains("panicked"));
    assert_eq!(refs(&sb), before, "a rejected envelope writes nothing");
    assert_ne!(binding(&sb), bound);
}

#[test]
fn wrong_signer_issuer_or_result_is_rejected_and_writes_nothing() {
    let (sb, keys, private, other) = signing();
    let bound = binding(&sb);
    let cases: Vec<(&str, Vec<u8>, Emitted<'_>)> = vec![
        (
            "another key",
            sign(
                keys.path(),
                &other,
                &statement(&bound, "PASSED", &[], ISSUER),
            ),
            emitted("envelope_rejected"),
        ),
        (
            "another issuer",
            sign(
                keys.path(),
                &private,
                &statement(&bound, "PASSED", &[], "https://elsewhere.example"),
            ),
            emitted("statement_invalid"),
        ),
        (
            "a failed result",
            sign(
                keys.path(),
                &private,
                &statement(&bound, "FAILED", &["e2e: profile saves"], ISSUER),
            ),
            emitted("external_result_not_passed"),
        ),
        (
            "PASSED with a failed test",
            sign(
                keys.path(),
                &private,
                &statement(&bound, "PASSED", &["e2e: profile saves"], ISSUER),
            ),
            emitted("external_result_not_passed"),
        ),
        (
            "failedTests that is not a list",
            sign(keys.path(), &private, &{
                let mut s = statement(&bound, "PASSED", &[], ISSUER);
                s["predicate"]["failedTests"] = json!("e2e: profile saves");
                s
            }),
            emitted("statement_invalid"),
        ),
        (
            "failedTests that is a number",
            sign(keys.path(), &private, &{
                let mut s = statement(&bound, "PASSED", &[], ISSUER);
                s["predicate"]["failedTests"] = json!(3);
                s
            }),
            emitted("statement_invalid"),
        ),
        (
            "failedTests that is null",
            sign(keys.path(), &private, &{
                let mut s = statement(&bound, "PASSED", &[], ISSUER);
                s["predicate"]["failedTests"] = serde_json::Value::Null;
                s
            }),
            emitted("statement_invalid"),
        ),
        (
            "failedTests that is an object",
            sign(keys.path(), &private, &{
                let mut s = statement(&bound, "PASSED", &[], ISSUER);
                s["predicate"]["failedTests"] = json!({"e2e: profile saves": "failed"});
                s
            }),
            emitted("statement_invalid"),
        ),
        (
            "another binding",
            sign(
                keys.path(),
                &private,
                &statement(&"0".repeat(64), "PASSED", &[], ISSUER),
            ),
            emitted("envelope_stale"),
        ),
        (
            "not an envelope",
            b"{\"hello\": 1}".to_vec(),
            emitted("envelope_rejected"),
        ),
    ];
    for (what, bytes, code) in cases {
        let path = sb.path().join("envelope.json");
        crate::support::write(&path, bytes);
        let run = verify(&sb, &path);
        run.expect_code(1);
        assert_codes!(run.status_codes(), [code], "{what}");
        assert!(
            refs(&sb).is_empty(),
            "{what}: a rejected envelope writes nothing"
        );
    }
    assert_eq!(e2e_state(&sb), "pending");

    let missing = verify(&sb, &sb.path().join("no-such-envelope.json"));
    missing.expect_code(3);
    assert_codes!(missing.status_codes(), ["envelope_unreadable"]);

    let local = sb.run(
        &sb.work(),
        &[
            "evidence",
            "verify-ci",
            "add-x",
            "local",
            "x.json",
            "--json",
        ],
    );
    local.expect_code(3);
    assert_codes!(local.status_codes(), ["not_external"]);
}

#[test]
fn a_private_key_pasted_as_the_ci_key_is_diagnosed_at_its_line() {
    let sb = Sandbox::new();
    let keys = tempfile::tempdir().expect("tempdir");
    let (private, _) = keypair(keys.path(), "ci");
    let private_pem = fs_err::read_to_string(&private).expect("key");
    workspace(&sb, &private_pem);
    let run = verify(&sb, &sb.path().join("whatever.json"));
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["ci_key_invalid"]);
    let doc = run.json();
    let target = doc["status"][0]["target"].as_str().unwrap_or_default();
    assert!(
        target.contains("execution.yaml:"),
        "the diagnostic points into execution.yaml: {target}"
    );
}

/// Any change to the signed payload or to the signature is rejected; a
/// change anywhere else in the file is either rejected or leaves the
/// verified statement exactly as signed (the unauthenticated `keyid` hint).
#[test]
fn every_single_byte_change_is_rejected() {
    let keys = tempfile::tempdir().expect("tempdir");
    let (private, public) = keypair(keys.path(), "ci");
    let bound = "ab".repeat(32);
    let claims = vec!["e2e-works".to_owned()];
    let expected = Expectation {
        issuer: ISSUER,
        public_key: &public,
        binding: &bound,
        claims: &claims,
    };
    let signed = statement(&bound, "PASSED", &[], ISSUER);
    let bytes = sign(keys.path(), &private, &signed);
    let accepted = external::verify(&bytes, &expected).expect("the untouched envelope verifies");
    let envelope: Value = serde_json::from_slice(&bytes).expect("json");
    let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let sig =
        proofgraph::attest::b64::decode(envelope["signatures"][0]["sig"].as_str().expect("sig"))
            .expect("base64");
    let rebuild = |body: &[u8], sig: &[u8]| {
        serde_json::to_vec(&json!({
            "payloadType": "application/vnd.in-toto+json",
            "payload": proofgraph::attest::b64::encode(body),
            "signatures": [{"keyid": "ci", "sig": proofgraph::attest::b64::encode(sig)}],
        }))
        .expect("json")
    };
    assert!(external::verify(&rebuild(&body, &sig), &expected).is_ok());
    let mut checked = 0;
    for i in 0..body.len() {
        for flip in [0x01u8, 0x80] {
            let mut b = body.clone();
            b[i] ^= flip;
            assert!(
                external::verify(&rebuild(&b, &sig), &expected).is_err(),
                "payload byte {i} ^ {flip:#x} was accepted"
            );
            checked += 1;
        }
    }
    for i in 0..sig.len() {
        for flip in [0x01u8, 0x80] {
            let mut s = sig.clone();
            s[i] ^= flip;
            let err = external::verify(&rebuild(&body, &s), &expected)
                .expect_err("a changed signature byte");
            assert_codes!(err.code, ["envelope_rejected"]);
            checked += 1;
        }
    }
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        if let Ok(other) = external::verify(&b, &expected) {
            assert_eq!(
                other.statement, accepted.statement,
                "file byte {i} changed what was accepted"
            );
        }
        checked += 1;
    }
    assert!(checked > 2 * 64 + 2 * 200, "{checked} variants checked");
}

/// The signing script docs/external.md gives CI authors produces an
/// envelope `verify-ci` accepts.
#[test]
fn the_documented_signing_script_is_accepted() {
    let (sb, _keys, private, _) = signing();
    let script = crate::support::repo_root().join("scripts/sign-ci-result.sh");
    let signed = sb.command_with_env(
        "sh",
        &sb.work(),
        &[
            script.to_str().expect("utf-8 path"),
            "add-x",
            "ci-e2e",
            ISSUER,
            private.to_str().expect("utf-8 path"),
            "e2e-works",
        ],
        &[("PROOFGRAPH", env!("CARGO_BIN_EXE_proofgraph"))],
    );
    signed.expect_code(0);
    let envelope = sb.path().join("result.dsse.json");
    crate::support::write(&envelope, &signed.stdout);
    verify(&sb, &envelope).expect_code(0);
    assert_eq!(e2e_state(&sb), "passed");
}

/// The securesystemslib example in docs/external.md, run as written,
/// produces an envelope `verify-ci` accepts.
#[test]
fn the_documented_securesystemslib_example_is_accepted() {
    let doc = fs_err::read_to_string(crate::support::repo_root().join("docs/external.md"))
        .expect("docs/external.md");
    let python = doc
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a python example in docs/external.md");
    let (sb, _keys, private, _) = signing();
    // The example's names: change add-profile-page, provider ci-e2e, claim
    // profile-saves, issuer https://ci.example/proofgraph, key ci-signing.pem.
    let python = python
        .replace("add-profile-page", "add-x")
        .replace("profile-saves", "e2e-works")
        .replace("https://ci.example/proofgraph", ISSUER)
        .replace("ci-signing.pem", private.to_str().expect("utf-8 path"));
    // The example's `python3` and its securesystemslib are the Python test tools' (pinned).
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_proofgraph"));
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        sb.path_with_python_tools()
    );
    let signed = sb.command_with_env(
        crate::support::python_tool("python3"),
        &sb.work(),
        &["-c", &python],
        &[("PATH", &path)],
    );
    assert_eq!(
        signed.code,
        Some(0),
        "the example failed: {}",
        signed.stderr
    );
    let envelope = sb.path().join("result.dsse.json");
    crate::support::write(&envelope, &signed.stdout);
    verify(&sb, &envelope).expect_code(0);
    assert_eq!(e2e_state(&sb), "passed");
}

/// What `evidence verify-ci` prints, pinned by snapshots: a result another key signed
/// (refused, exit 1) and one CI signed (accepted), each as text and as a document.
#[test]
fn verify_ci_output_is_pinned() {
    let (sb, keys, private, other) = signing();
    let bound = binding(&sb);
    let signed = |key: &Path, name: &str| {
        let path = sb.path().join(name);
        crate::support::write(
            &path,
            sign(keys.path(), key, &statement(&bound, "PASSED", &[], ISSUER)),
        );
        path.to_str().expect("utf-8 path").to_owned()
    };
    let forged = signed(&other, "forged.dsse.json");
    let good = signed(&private, "ci-result.dsse.json");
    let cases = [
        ("verify_ci_another_key", &forged, false, 1),
        ("verify_ci_another_key_json", &forged, true, 1),
        ("verify_ci_accepted", &good, false, 0),
        ("verify_ci_accepted_again_json", &good, true, 0),
    ];
    for (name, envelope, json, code) in cases {
        let mut args = vec![
            "evidence",
            "verify-ci",
            "add-x",
            "ci-e2e",
            envelope.as_str(),
        ];
        if json {
            args.push("--json");
        }
        let run = sb.run(&sb.work(), &args);
        run.expect_code(code);
        let text = crate::support::transcript(&args, &run);
        let mut settings = crate::support::snapshot_settings(&sb);
        settings.set_omit_expression(true);
        settings.bind(|| insta::assert_snapshot!(name, text));
    }
}
