//! Cross-checks with the `openssl` command (OpenSSL 3, Ed25519 "pure" mode).
//!
//! - An envelope we sign verifies with `openssl pkeyutl -verify -rawin`
//!   over the PAE bytes, using the public key PEM we export; a changed PAE
//!   does not (so the check is not vacuous).
//! - A PAE signed with `openssl pkeyutl -sign -rawin` by a key `openssl
//!   genpkey` made, put in an envelope, verifies with our code using the
//!   public key PEM `openssl pkey -pubout` wrote; our loader reads that
//!   private key PEM and signs identically (Ed25519 is deterministic).
//! - OpenSSL reads our PKCS#8 private key PEM and derives the same public
//!   key PEM we export.
//! - RSA, P-256 and Ed448 keys made by OpenSSL are refused as "not an
//!   Ed25519 key"; an OpenSSL private key given as a public key is named.

use std::path::Path;
use std::process::Command;

use proofgraph::attest::envelope::{
    Envelope, EnvelopeSignature, TrustedKey, VerifyError, sign, verify,
};
use proofgraph::attest::keys::{self, KeyError};
use proofgraph::attest::pae::pae;

use super::common::{self, OPENSSL_HINT};

const TYPE: &str = "application/vnd.in-toto+json";
const BODY: &[u8] = br#"{"_type":"https://in-toto.io/Statement/v1","n":1}"#;

fn openssl(args: &[&str], dir: &Path) -> std::process::Output {
    common::run(
        Command::new("openssl").args(args).current_dir(dir),
        OPENSSL_HINT,
    )
}

fn openssl_ok(args: &[&str], dir: &Path) -> std::process::Output {
    common::run_ok(
        Command::new("openssl").args(args).current_dir(dir),
        OPENSSL_HINT,
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs_err::write(dir.join(name), bytes).expect("write temp file");
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    fs_err::read(dir.join(name)).expect("read temp file")
}

#[test]
fn openssl_verifies_our_envelope() {
    common::require_openssl();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let key = keys::generate_signing_key().expect("rng");
    keys::write_public_key(&dir.join("pub.pem"), &key.verifying_key()).expect("write");
    let envelope = sign(TYPE, BODY, &key, None);

    // Take PAE and signature from the envelope JSON, as a third party would.
    let parsed: Envelope = serde_json::from_str(&envelope.to_json()).expect("json");
    let body = proofgraph::attest::b64::decode(&parsed.payload).expect("payload");
    let sig = proofgraph::attest::b64::decode(&parsed.signatures[0].sig).expect("sig");
    write(dir, "pae.bin", &pae(&parsed.payload_type, &body));
    write(dir, "sig.bin", &sig);
    let out = openssl_ok(
        &[
            "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "pae.bin",
            "-sigfile", "sig.bin",
        ],
        dir,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signature Verified Successfully"));

    // The body alone, or a changed PAE, must not verify.
    write(dir, "body.bin", &body);
    let out = openssl(
        &[
            "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "body.bin",
            "-sigfile", "sig.bin",
        ],
        dir,
    );
    assert!(!out.status.success(), "openssl accepted the bare body");
    write(dir, "pae2.bin", &pae("application/json", &body));
    let out = openssl(
        &[
            "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "pae2.bin",
            "-sigfile", "sig.bin",
        ],
        dir,
    );
    assert!(
        !out.status.success(),
        "openssl accepted another payload type"
    );
}

#[test]
fn we_verify_an_openssl_signature() {
    common::require_openssl();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    openssl_ok(
        &["genpkey", "-algorithm", "ed25519", "-out", "key.pem"],
        dir,
    );
    openssl_ok(
        &["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
        dir,
    );
    write(dir, "pae.bin", &pae(TYPE, BODY));
    openssl_ok(
        &[
            "pkeyutl", "-sign", "-rawin", "-inkey", "key.pem", "-in", "pae.bin", "-out", "sig.bin",
        ],
        dir,
    );
    let sig = read(dir, "sig.bin");
    assert_eq!(sig.len(), 64);
    // Encode with OpenSSL's own base64 too.
    let b64 = openssl_ok(&["base64", "-A", "-in", "sig.bin"], dir);
    let sig_b64 = String::from_utf8(b64.stdout)
        .expect("ascii")
        .trim()
        .to_owned();
    let envelope = Envelope {
        payload: proofgraph::attest::b64::encode(BODY),
        payload_type: TYPE.to_owned(),
        signatures: vec![EnvelopeSignature {
            keyid: None,
            sig: sig_b64.clone(),
        }],
    };
    let public_pem = String::from_utf8(read(dir, "pub.pem")).expect("utf8");
    let trusted = [TrustedKey::from_pem(&public_pem).expect("openssl public key imports")];
    let verified = verify(envelope.to_json().as_bytes(), TYPE, &trusted).expect("verifies");
    assert_eq!(verified.body, BODY);

    // URL-safe, unpadded spelling of the same signature also verifies.
    let mut url = envelope.clone();
    url.signatures[0].sig = sig_b64
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned();
    url.payload = url
        .payload
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned();
    assert!(verify(url.to_json().as_bytes(), TYPE, &trusted).is_ok());

    // Our loader reads OpenSSL's private key and signs the same bytes.
    let private_pem = String::from_utf8(read(dir, "key.pem")).expect("utf8");
    let key = keys::signing_key_from_pem(&private_pem).expect("openssl private key imports");
    assert_eq!(key.verifying_key(), *trusted[0].verifying_key());
    let ours = sign(TYPE, BODY, &key, None);
    assert_eq!(ours.signatures[0].sig, sig_b64);

    // And a changed body is rejected.
    let mut tampered = envelope;
    tampered.payload = proofgraph::attest::b64::encode(b"{}");
    assert!(matches!(
        verify(tampered.to_json().as_bytes(), TYPE, &trusted),
        Err(VerifyError::NoMatchingSignature { .. })
    ));
}

#[test]
fn openssl_reads_our_key_files() {
    common::require_openssl();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let key = keys::generate_signing_key().expect("rng");
    keys::write_signing_key(&dir.join("key.pem"), &key).expect("write");
    let out = openssl_ok(&["pkey", "-in", "key.pem", "-pubout"], dir);
    assert_eq!(
        String::from_utf8(out.stdout).expect("utf8"),
        keys::public_key_to_pem(&key.verifying_key())
    );
    // OpenSSL re-encodes our private key to the same bytes.
    let out = openssl_ok(&["pkey", "-in", "key.pem"], dir);
    assert_eq!(
        String::from_utf8(out.stdout).expect("utf8"),
        keys::signing_key_to_pem(&key).as_str()
    );
    // OpenSSL's DER of our public key hashes to our key id.
    let out = openssl_ok(
        &["pkey", "-in", "key.pem", "-pubout", "-outform", "DER"],
        dir,
    );
    write(dir, "pub.der", &out.stdout);
    let digest = openssl_ok(&["dgst", "-sha256", "-r", "pub.der"], dir);
    let hex = String::from_utf8(digest.stdout).expect("ascii");
    let hex = hex.split_whitespace().next().expect("digest");
    assert_eq!(keys::key_id(&key.verifying_key()), format!("sha256:{hex}"));
}

#[test]
fn keys_of_other_algorithms_are_named() {
    common::require_openssl();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                "k.pem",
            ],
            "an RSA key",
        ),
        (
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                "k.pem",
            ],
            "an ECDSA P-256 key",
        ),
        (
            &["genpkey", "-algorithm", "ed448", "-out", "k.pem"],
            "an Ed448 key",
        ),
    ];
    for (generate, algorithm) in cases {
        let _ = fs_err::remove_file(dir.join("k.pem"));
        openssl_ok(generate, dir);
        let public = openssl_ok(&["pkey", "-in", "k.pem", "-pubout"], dir);
        let public = String::from_utf8(public.stdout).expect("utf8");
        let err = keys::public_key_from_pem(&public).expect_err(algorithm);
        assert_eq!(
            err.to_string(),
            format!("read public key: not an Ed25519 key (it is {algorithm})")
        );
        let private = String::from_utf8(read(dir, "k.pem")).expect("utf8");
        let err = keys::signing_key_from_pem(&private).expect_err(algorithm);
        assert_eq!(
            err.to_string(),
            format!("read private key: not an Ed25519 key (it is {algorithm})")
        );
        // A private key pasted where the public key belongs.
        assert!(matches!(
            keys::public_key_from_pem(&private),
            Err(KeyError::PrivateKeyGiven { .. })
        ));
    }
    // A traditional (PKCS#1) RSA public key.
    openssl_ok(
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "rsa.pem",
        ],
        dir,
    );
    let pkcs1 = openssl_ok(&["rsa", "-in", "rsa.pem", "-RSAPublicKey_out"], dir);
    let err = keys::public_key_from_pem(&String::from_utf8(pkcs1.stdout).expect("utf8"))
        .expect_err("pkcs1");
    assert!(matches!(err, KeyError::NotEd25519 { .. }), "{err}");
    // An encrypted Ed25519 private key.
    openssl_ok(&["genpkey", "-algorithm", "ed25519", "-out", "ed.pem"], dir);
    let encrypted = openssl_ok(
        &[
            "pkcs8",
            "-topk8",
            "-in",
            "ed.pem",
            "-v2",
            "aes-256-cbc",
            "-passout",
            "pass:secret",
        ],
        dir,
    );
    let err = keys::signing_key_from_pem(&String::from_utf8(encrypted.stdout).expect("utf8"))
        .expect_err("encrypted");
    assert_eq!(err, KeyError::EncryptedPrivateKey);
}
