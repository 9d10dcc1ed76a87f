//! Cross-checks against the DSSE specification's published test data.
//!
//! - The PAE example in secure-systems-lab/dsse `protocol.md`
//!   ("DSSEv1 29 http://example.com/HelloWorld 11 hello world"), and the
//!   ECDSA P-256 envelope signature published with it, verified over our
//!   PAE bytes by pyca/cryptography (`interop/ecdsa_spec_vector.py`).
//! - The Ed25519 vectors in secure-systems-lab/dsse
//!   `testvectors/vectors.json` (copied to `tests/fixtures/dsse-vectors.json`,
//!   see `tests/fixtures/README.md`): keys from RFC 8032 section 7.1, one
//!   expected PAE and an accept/reject verdict per envelope.

use ed25519_dalek::SigningKey;
use proofgraph::attest::envelope::{TrustedKey, VerifyError, verify, verify_threshold};
use proofgraph::attest::pae::pae;
use serde_json::Value;

use super::common::{self, hex, unhex};

fn vectors() -> Value {
    let path = common::crate_dir().join("fixtures/attest/dsse-vectors.json");
    let text = fs_err::read_to_string(path).expect("fixture is readable");
    serde_json::from_str(&text).expect("fixture is JSON")
}

#[test]
fn protocol_pae_example() {
    let bytes = pae("http://example.com/HelloWorld", b"hello world");
    assert_eq!(
        bytes,
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    );
}

#[test]
fn protocol_ecdsa_signature_covers_our_pae() {
    let version = common::require_python(&["cryptography"]);
    let bytes = pae("http://example.com/HelloWorld", b"hello world");
    let output = common::run(
        common::python3()
            .arg(common::interop_script("ecdsa_spec_vector.py"))
            .arg(hex(&bytes)),
        common::PYTHON_HINT,
    );
    assert!(
        output.status.success(),
        "python {version}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The same check must fail for a different PAE, or it proves nothing.
    let wrong = pae("http://example.com/HelloWorld", b"hello world!");
    let output = common::run(
        common::python3()
            .arg(common::interop_script("ecdsa_spec_vector.py"))
            .arg(hex(&wrong)),
        common::PYTHON_HINT,
    );
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn rfc8032_keys_match_the_vector_file() {
    let vectors = vectors();
    for (name, key) in vectors["keys"].as_object().expect("keys") {
        let seed: [u8; 32] = unhex(key["seed"].as_str().expect("seed"))
            .try_into()
            .expect("32-byte seed");
        let public = SigningKey::from_bytes(&seed).verifying_key();
        assert_eq!(hex(public.as_bytes()), key["public"], "key {name}");
    }
}

#[test]
fn every_published_vector() {
    let vectors = vectors();
    let keys = vectors["keys"].as_object().expect("keys");
    let list = vectors["vectors"].as_array().expect("vectors");
    assert_eq!(list.len(), 9, "the fixture has nine vectors");
    for vector in list {
        let id = vector["id"].as_str().expect("id");
        let envelope = &vector["envelope"];
        let envelope_bytes = serde_json::to_vec(envelope).expect("json");
        let trusted: Vec<TrustedKey> = vector["trustedKeys"]
            .as_array()
            .expect("trustedKeys")
            .iter()
            .map(|name| {
                let seed: [u8; 32] = unhex(
                    keys[name.as_str().expect("name")]["seed"]
                        .as_str()
                        .expect("seed"),
                )
                .try_into()
                .expect("32-byte seed");
                TrustedKey::new(SigningKey::from_bytes(&seed).verifying_key())
            })
            .collect();
        let threshold = usize::try_from(vector["threshold"].as_u64().expect("threshold"))
            .expect("small threshold");
        let supported: Vec<&str> = vector["supportedPayloadTypes"]
            .as_array()
            .expect("types")
            .iter()
            .map(|t| t.as_str().expect("type"))
            .collect();

        // The PAE we build from the envelope's own type and body matches.
        let claimed_type = envelope["payloadType"].as_str().expect("payloadType");
        let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
            .expect("payload decodes");
        let expected_pae = vector["pae"].as_str().expect("pae");
        if id == "payload-type-swapped" {
            // Its PAE is the one the signature covers, not the claimed type's.
            assert_ne!(hex(&pae(claimed_type, &body)), expected_pae, "{id}");
            assert_eq!(
                hex(&pae("application/vnd.in-toto+json", &body)),
                expected_pae,
                "{id}"
            );
        } else {
            assert_eq!(hex(&pae(claimed_type, &body)), expected_pae, "{id}");
        }

        // A verifier that supports several types is one call per type.
        let results: Vec<Result<Vec<u8>, VerifyError>> = supported
            .iter()
            .map(|ty| verify_threshold(&envelope_bytes, ty, &trusted, threshold).map(|ok| ok.body))
            .collect();
        let accepted: Vec<&Vec<u8>> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        match vector["expect"].as_str().expect("expect") {
            "accept" => {
                assert_eq!(accepted.len(), 1, "{id}: {results:?}");
                assert_eq!(accepted[0], &body, "{id}");
                if threshold == 1 {
                    let one = verify(&envelope_bytes, supported[0], &trusted).expect(id);
                    assert_eq!(one.body, body, "{id}");
                    assert_eq!(one.key_index, 0, "{id}");
                }
            }
            "reject" => assert!(accepted.is_empty(), "{id}: {results:?}"),
            other => panic!("{id}: unknown expectation {other}"),
        }
    }
}

#[test]
fn vector_rejections_have_the_right_reasons() {
    let vectors = vectors();
    let list = vectors["vectors"].as_array().expect("vectors");
    let find = |id: &str| {
        let vector = list.iter().find(|v| v["id"] == id).expect("vector exists");
        serde_json::to_vec(&vector["envelope"]).expect("json")
    };
    let key_a = SigningKey::from_bytes(
        &unhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .try_into()
            .expect("seed"),
    );
    let key_b = SigningKey::from_bytes(
        &unhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
            .try_into()
            .expect("seed"),
    );
    let a = TrustedKey::new(key_a.verifying_key());
    let b = TrustedKey::new(key_b.verifying_key());

    // Claimed type is not what we expect.
    assert!(matches!(
        verify(
            &find("payload-type-swapped"),
            "application/vnd.in-toto+json",
            std::slice::from_ref(&a)
        ),
        Err(VerifyError::PayloadType { .. })
    ));
    // We accept the claimed type, but the signature covers another one.
    assert!(matches!(
        verify(
            &find("payload-type-swapped"),
            "application/vnd.example.other+json",
            std::slice::from_ref(&a)
        ),
        Err(VerifyError::NoMatchingSignature { .. })
    ));
    assert!(matches!(
        verify(
            &find("empty-payload-type"),
            "application/vnd.in-toto+json",
            std::slice::from_ref(&a)
        ),
        Err(VerifyError::PayloadType { .. })
    ));
    assert_eq!(
        verify_threshold(
            &find("threshold-two-one-key-twice"),
            "application/vnd.in-toto+json",
            &[a, b],
            2
        ),
        Err(VerifyError::BelowThreshold {
            found: 1,
            threshold: 2
        })
    );
    // Our own signatures with the RFC 8032 keys are the published ones
    // (Ed25519 is deterministic).
    let ours = proofgraph::attest::envelope::sign(
        "application/vnd.in-toto+json",
        br#"{"_type":"https://in-toto.io/Statement/v1"}"#,
        &key_a,
        Some("A"),
    );
    let published: Value = serde_json::from_slice(&find("single-signature")).expect("json");
    assert_eq!(serde_json::to_value(&ours).expect("json"), published);
    let ours_b = proofgraph::attest::envelope::sign(
        "application/vnd.in-toto+json",
        br#"{"_type":"https://in-toto.io/Statement/v1"}"#,
        &key_b,
        None,
    );
    let both: Value = serde_json::from_slice(&find("threshold-two-without-keyids")).expect("json");
    assert_eq!(both["signatures"][1]["sig"], ours_b.signatures[0].sig);
}
