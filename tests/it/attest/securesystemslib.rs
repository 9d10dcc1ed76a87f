//! Cross-checks with Python securesystemslib (`securesystemslib.dsse`),
//! an independent DSSE implementation, through `interop/sslib_verify.py`
//! and `interop/sslib_sign.py`.
//!
//! securesystemslib matches signatures to keys by `keyid` and requires it,
//! so the envelopes here carry our standard key id.

use std::ffi::OsStr;
use std::path::Path;

use proofgraph::attest::envelope::{TrustedKey, sign, verify};
use proofgraph::attest::keys;
use proofgraph::attest::statement::{
    DigestSet, IN_TOTO_PAYLOAD_TYPE, Statement, Subject, sign_statement, verify_statement,
};
use serde_json::{Value, json};

use super::common::{self, hex};

const MODULES: &[&str] = &[
    "securesystemslib.dsse",
    "securesystemslib.signer",
    "cryptography",
];

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    fs_err::write(&path, bytes).expect("write temp file");
    path
}

/// Runs `sslib_verify.py`; returns (exit code, parsed stdout).
fn sslib_verify(
    dir: &Path,
    envelope: &[u8],
    public_pem: &str,
    keyid: &str,
    ty: &str,
) -> (i32, Value) {
    let envelope_path = write(dir, "envelope.json", envelope);
    let public_path = write(dir, "pub.pem", public_pem.as_bytes());
    let output = common::python(
        "sslib_verify.py",
        &[
            envelope_path.as_os_str(),
            public_path.as_os_str(),
            OsStr::new(keyid),
            OsStr::new(ty),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let parsed = serde_json::from_str(&stdout).unwrap_or_else(|err| {
        panic!(
            "sslib_verify.py printed no JSON ({err}):\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), parsed)
}

#[test]
fn securesystemslib_verifies_our_envelope() {
    common::require_python(MODULES);
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let key = keys::generate_signing_key().expect("rng");
    let keyid = keys::key_id(&key.verifying_key());
    let public_pem = keys::public_key_to_pem(&key.verifying_key());
    let body = "{\"héllo\":\"wörld\",\"bytes\":\"\\u0000\"}".as_bytes();
    let envelope = sign(IN_TOTO_PAYLOAD_TYPE, body, &key, Some(&keyid));

    let (code, result) = sslib_verify(
        dir,
        envelope.to_json().as_bytes(),
        &public_pem,
        &keyid,
        IN_TOTO_PAYLOAD_TYPE,
    );
    assert_eq!(code, 0, "{result}");
    assert_eq!(result["payload_hex"], hex(body));

    // A changed payload is rejected by securesystemslib too.
    let mut tampered = envelope.clone();
    tampered.payload = proofgraph::attest::b64::encode(b"{\"hello\":\"world\"}");
    let (code, result) = sslib_verify(
        dir,
        tampered.to_json().as_bytes(),
        &public_pem,
        &keyid,
        IN_TOTO_PAYLOAD_TYPE,
    );
    assert_eq!(code, 1, "{result}");
    assert_eq!(result["ok"], false);

    // So is a signature by another key.
    let other = keys::generate_signing_key().expect("rng");
    let forged = sign(IN_TOTO_PAYLOAD_TYPE, body, &other, Some(&keyid));
    let (code, result) = sslib_verify(
        dir,
        forged.to_json().as_bytes(),
        &public_pem,
        &keyid,
        IN_TOTO_PAYLOAD_TYPE,
    );
    assert_eq!(code, 1, "{result}");
}

#[test]
fn securesystemslib_verifies_our_signed_statement() {
    common::require_python(MODULES);
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let key = keys::generate_signing_key().expect("rng");
    let keyid = keys::key_id(&key.verifying_key());
    let statement = Statement::new(
        vec![Subject::new(
            "README.md",
            DigestSet::sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        )],
        "https://example.com/proofgraph/receipt/v0",
        json!({"claims": [{"id": "a", "status": "proved"}]}),
    )
    .expect("valid");
    let envelope = sign_statement(&statement, &key, Some(&keyid)).expect("signs");
    let (code, result) = sslib_verify(
        dir,
        envelope.to_json().as_bytes(),
        &keys::public_key_to_pem(&key.verifying_key()),
        &keyid,
        IN_TOTO_PAYLOAD_TYPE,
    );
    assert_eq!(code, 0, "{result}");
    assert_eq!(
        result["payload_hex"],
        hex(&statement.to_canonical_json().expect("canonical"))
    );
}

#[test]
fn we_verify_a_securesystemslib_envelope() {
    common::require_python(MODULES);
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    // A statement formatted the way Python writes JSON (not canonical).
    let body = br#"{"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "a.txt", "digest": {"sha256": "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}}], "predicateType": "https://example.com/p/v1", "predicate": {"x": [1, 2]}}"#;
    let payload_path = write(dir, "payload.bin", body);
    let output = common::python(
        "sslib_sign.py",
        &[
            dir.as_os_str(),
            OsStr::new(IN_TOTO_PAYLOAD_TYPE),
            payload_path.as_os_str(),
        ],
    );
    assert!(
        output.status.success(),
        "sslib_sign.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let envelope = fs_err::read(dir.join("envelope.json")).expect("envelope");
    let public_pem = fs_err::read_to_string(dir.join("public.pem")).expect("public key");
    let python_keyid = fs_err::read_to_string(dir.join("keyid.txt")).expect("keyid");
    let trusted = [TrustedKey::from_pem(&public_pem).expect("pyca public key imports")];
    // Python computed the key id independently; it matches ours.
    assert_eq!(trusted[0].keyid(), python_keyid);

    let verified = verify(&envelope, IN_TOTO_PAYLOAD_TYPE, &trusted).expect("verifies");
    assert_eq!(verified.body, body);
    let statement = verify_statement(&envelope, &trusted).expect("statement verifies");
    assert_eq!(statement.statement.subject()[0].name, "a.txt");
    assert_eq!(statement.body, body);

    // A key that did not sign is refused.
    let stranger = TrustedKey::new(keys::generate_signing_key().expect("rng").verifying_key());
    assert!(verify(&envelope, IN_TOTO_PAYLOAD_TYPE, &[stranger]).is_err());
}

#[test]
fn securesystemslib_signs_identically_with_our_private_key() {
    common::require_python(MODULES);
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let key = keys::generate_signing_key().expect("rng");
    let key_path = dir.join("key.pem");
    keys::write_signing_key(&key_path, &key).expect("write");
    let body = b"arbitrary bytes \x00\xff";
    let payload_path = write(dir, "payload.bin", body);
    let output = common::python(
        "sslib_sign.py",
        &[
            dir.as_os_str(),
            OsStr::new("application/vnd.example+octets"),
            payload_path.as_os_str(),
            key_path.as_os_str(),
        ],
    );
    assert!(
        output.status.success(),
        "sslib_sign.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: Value =
        serde_json::from_slice(&fs_err::read(dir.join("envelope.json")).expect("envelope"))
            .expect("json");
    let keyid = keys::key_id(&key.verifying_key());
    let ours = sign("application/vnd.example+octets", body, &key, Some(&keyid));
    assert_eq!(theirs, serde_json::to_value(&ours).expect("json"));
    assert_eq!(
        fs_err::read_to_string(dir.join("public.pem")).expect("public"),
        keys::public_key_to_pem(&key.verifying_key())
    );
}
