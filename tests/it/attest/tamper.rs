//! Every single-byte change to a small signed envelope is rejected.
//!
//! For each byte of the decoded payload and of the decoded signature, each
//! of [`MASKS`] (every single-bit flip, and inverting the whole byte) is
//! applied and the envelope re-encoded: verification must fail. For each
//! byte of the envelope's JSON text, the same changes must either fail to
//! parse, fail to verify, or verify with the original body; and the last
//! can only happen inside the unauthenticated `keyid` member.
//!
//! Nine masks rather than all 255 keep the run short in unoptimized test
//! builds, where one Ed25519 verification takes milliseconds.

use ed25519_dalek::SigningKey;
use proofgraph::attest::envelope::{Envelope, TrustedKey, VerifyError, sign, verify};
use proofgraph::attest::keys::key_id;

const TYPE: &str = "application/vnd.in-toto+json";
const BODY: &[u8] = br#"{"ok":true}"#;

/// The XOR masks applied to each byte: the eight single-bit flips and 0xff.
const MASKS: [u8; 9] = [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff];

fn fixture() -> (Envelope, Vec<TrustedKey>) {
    let key = SigningKey::from_bytes(&[42; 32]);
    let keyid = key_id(&key.verifying_key());
    let envelope = sign(TYPE, BODY, &key, Some(&keyid));
    (envelope, vec![TrustedKey::new(key.verifying_key())])
}

#[test]
fn the_untouched_envelope_verifies() {
    let (envelope, trusted) = fixture();
    let verified = verify(envelope.to_json().as_bytes(), TYPE, &trusted).expect("verifies");
    assert_eq!(verified.body, BODY);
}

#[test]
fn every_payload_byte_change_is_rejected() {
    let (envelope, trusted) = fixture();
    let body = proofgraph::attest::b64::decode(&envelope.payload).expect("payload");
    for position in 0..body.len() {
        for mask in MASKS {
            let mut changed = body.clone();
            changed[position] ^= mask;
            let mut tampered = envelope.clone();
            tampered.payload = proofgraph::attest::b64::encode(&changed);
            let result = verify(tampered.to_json().as_bytes(), TYPE, &trusted);
            assert!(
                matches!(result, Err(VerifyError::NoMatchingSignature { .. })),
                "payload byte {position} ^ {mask:#04x}: {result:?}"
            );
        }
    }
}

#[test]
fn payload_truncation_and_extension_are_rejected() {
    let (envelope, trusted) = fixture();
    let body = proofgraph::attest::b64::decode(&envelope.payload).expect("payload");
    let mut variants: Vec<Vec<u8>> = (0..body.len()).map(|n| body[..n].to_vec()).collect();
    variants.extend((0..=255u8).map(|b| [body.as_slice(), &[b]].concat()));
    variants.extend((0..=255u8).map(|b| [&[b], body.as_slice()].concat()));
    for changed in variants {
        let mut tampered = envelope.clone();
        tampered.payload = proofgraph::attest::b64::encode(&changed);
        assert!(
            verify(tampered.to_json().as_bytes(), TYPE, &trusted).is_err(),
            "{changed:?}"
        );
    }
}

#[test]
fn every_signature_byte_change_is_rejected() {
    let (envelope, trusted) = fixture();
    let sig = proofgraph::attest::b64::decode(&envelope.signatures[0].sig).expect("sig");
    assert_eq!(sig.len(), 64);
    for position in 0..sig.len() {
        for mask in MASKS {
            let mut changed = sig.clone();
            changed[position] ^= mask;
            let mut tampered = envelope.clone();
            tampered.signatures[0].sig = proofgraph::attest::b64::encode(&changed);
            let result = verify(tampered.to_json().as_bytes(), TYPE, &trusted);
            assert!(
                matches!(result, Err(VerifyError::NoMatchingSignature { .. })),
                "signature byte {position} ^ {mask:#04x}: {result:?}"
            );
        }
    }
}

#[test]
fn every_envelope_text_byte_change_fails_or_keeps_the_body() {
    let (envelope, trusted) = fixture();
    let text = envelope.to_json().into_bytes();
    // The only bytes whose change may still verify: the `"keyid":"..."`
    // member, which DSSE does not sign.
    let keyid_start = find(&text, b"\"keyid\"").expect("keyid member");
    let keyid_value = keyid_start + b"\"keyid\":".len();
    let keyid_end = keyid_value + 1 + find(&text[keyid_value + 1..], b"\"").expect("end") + 1;
    let (mut parse_failures, mut verify_failures, mut still_verified) = (0, 0, 0);
    for position in 0..text.len() {
        for mask in MASKS {
            let mut changed = text.clone();
            changed[position] ^= mask;
            match verify(&changed, TYPE, &trusted) {
                Err(VerifyError::NotAnEnvelope { .. }) => parse_failures += 1,
                Err(_) => verify_failures += 1,
                Ok(verified) => {
                    still_verified += 1;
                    assert_eq!(verified.body, BODY, "byte {position} ^ {mask:#04x}");
                    assert!(
                        (keyid_start..keyid_end).contains(&position),
                        "byte {position} ^ {mask:#04x} ({:?}) is outside the keyid member \
                         but still verified",
                        String::from_utf8_lossy(&changed)
                    );
                }
            }
        }
    }
    assert_eq!(
        parse_failures + verify_failures + still_verified,
        text.len() * MASKS.len()
    );
    assert!(verify_failures > 0 && parse_failures > 0);
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
