//! Fuzz target `envelope`: any bytes as a DSSE envelope, verified under the two RFC 8032
//! test keys the DSSE specification's vectors are signed with; and the same bytes as a
//! payload type and body, signed and read back.
//!
//! Invariants:
//!
//! - an envelope that parses re-encodes ([`Envelope::to_json`]) to exactly what
//!   `serde_json` writes;
//! - an envelope that verifies re-encodes to one that verifies to the same body; signing
//!   that body again gives a signature the envelope holds (Ed25519 is deterministic), so
//!   what was accepted is what was signed; a threshold of one accepts it too, and another
//!   payload type does not;
//! - any payload type and body signed and encoded verify back to exactly that body.

use ed25519_dalek::SigningKey;

use proofgraph::attest::b64;
use proofgraph::attest::envelope::{self, Envelope, TrustedKey, VerifyError};
use proofgraph::attest::statement::IN_TOTO_PAYLOAD_TYPE;

/// The RFC 8032 section 7.1 TEST 1 and TEST 2 secret keys (keys `A` and `B` of
/// `fixtures/attest/dsse-vectors.json`).
const SEEDS: [[u8; 32]; 2] = [
    [
        0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c,
        0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae,
        0x7f, 0x60,
    ],
    [
        0x4c, 0xcd, 0x08, 0x9b, 0x28, 0xff, 0x96, 0xda, 0x9d, 0xb6, 0xc3, 0x46, 0xec, 0x11, 0x4e,
        0x0f, 0x5b, 0x8a, 0x31, 0x9f, 0x35, 0xab, 0xa6, 0x24, 0xda, 0x8c, 0xf6, 0xed, 0x4f, 0xb8,
        0xa6, 0xfb,
    ],
];

/// The RFC 8032 test keys `A` and `B`: published secrets, for fuzzing and tests only.
pub fn test_keys() -> [SigningKey; 2] {
    SEEDS.map(|seed| SigningKey::from_bytes(&seed))
}

/// Runs one input; panics when an invariant does not hold.
pub fn run(data: &[u8]) {
    let keys = test_keys();
    let trusted: Vec<TrustedKey> = keys
        .iter()
        .map(|k| TrustedKey::new(k.verifying_key()))
        .collect();
    if let Ok(parsed) = serde_json::from_slice::<Envelope>(data) {
        let json = serde_json::to_string(&parsed).expect("an envelope serializes");
        assert_eq!(parsed.to_json(), json, "to_json differs from serde_json");
    }
    for payload_type in [IN_TOTO_PAYLOAD_TYPE, "application/vnd.example.other+json"] {
        let verified = envelope::verify(data, payload_type, &trusted);
        let threshold = envelope::verify_threshold(data, payload_type, &trusted, 1);
        match &verified {
            Ok(v) => {
                let t = threshold.as_ref().expect("verified, so one key is enough");
                assert_eq!(t.body, v.body);
                assert!(t.key_indices.contains(&v.key_index));
                accepted(data, payload_type, v, &keys, &trusted);
            }
            Err(e) => assert!(
                threshold.is_err(),
                "verify refused ({e}) what a threshold of one accepts"
            ),
        }
    }
    round_trip(data, &keys[0], &trusted);
}

/// Checks an accepted envelope against what its key signs.
fn accepted(
    data: &[u8],
    payload_type: &str,
    verified: &envelope::Verified,
    keys: &[SigningKey],
    trusted: &[TrustedKey],
) {
    let parsed: Envelope = serde_json::from_slice(data).expect("a verified envelope parses");
    assert_eq!(
        b64::decode(&parsed.payload).as_deref(),
        Ok(verified.body.as_slice()),
        "the verified body is not the payload"
    );
    let again = envelope::verify(parsed.to_json().as_bytes(), payload_type, trusted)
        .expect("a verified envelope re-encoded verifies");
    assert_eq!(again.body, verified.body);
    let signer = &keys[verified.key_index];
    assert_eq!(trusted[verified.key_index].keyid(), verified.keyid);
    let resigned = envelope::sign(payload_type, &verified.body, signer, None);
    let expected = b64::decode(&resigned.signatures[0].sig).expect("our own base64");
    let held = parsed
        .signatures
        .iter()
        .filter_map(|s| b64::decode(&s.sig).ok())
        .any(|sig| sig == expected);
    assert!(
        held,
        "the accepted envelope holds no signature its key makes"
    );
    let other = format!("{payload_type}.other");
    assert!(
        matches!(
            envelope::verify(data, &other, trusted),
            Err(VerifyError::PayloadType { .. })
        ),
        "accepted under another payload type"
    );
}

/// Signs the input (a first line naming the payload type, when it is UTF-8, then the
/// body) and reads it back.
fn round_trip(data: &[u8], key: &SigningKey, trusted: &[TrustedKey]) {
    let (payload_type, body) = match data.iter().position(|&b| b == b'\n') {
        Some(at) => match std::str::from_utf8(&data[..at]) {
            Ok(t) => (t, &data[at + 1..]),
            Err(_) => (IN_TOTO_PAYLOAD_TYPE, data),
        },
        None => (IN_TOTO_PAYLOAD_TYPE, data),
    };
    let signed = envelope::sign(payload_type, body, key, Some("fuzz"));
    let json = signed.to_json();
    assert_eq!(
        serde_json::to_string(&signed).expect("an envelope serializes"),
        json
    );
    let verified =
        envelope::verify(json.as_bytes(), payload_type, trusted).expect("what we sign verifies");
    assert_eq!(verified.body, body);
    assert_eq!(verified.key_index, 0);
}
