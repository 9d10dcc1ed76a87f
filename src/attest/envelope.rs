//! DSSE v1 JSON envelopes: signing and verification with Ed25519.
//!
//! An envelope is
//! `{"payload": base64(body), "payloadType": type, "signatures": [{"keyid": id, "sig": base64(sig)}]}`
//! where each `sig` is an Ed25519 signature over [`crate::attest::pae::pae`]`(type, body)`.
//!
//! Verification rules (see [`verify`]):
//!
//! - the bytes must be one JSON object with `payloadType` (a string) and
//!   `signatures` (an array of objects with a string `sig` and an optional
//!   string `keyid`); `payload` may be omitted, as DSSE allows for an empty
//!   body; a field given twice is an error; unknown fields are ignored (they
//!   are not signed, and nothing here reads them);
//! - `payloadType` must equal the expected type exactly;
//! - there must be at least one signature;
//! - `payload` and every `sig` must decode as base64 ([`crate::attest::b64`]), and
//!   every signature must be 64 bytes: one malformed signature rejects the
//!   whole envelope, even if another one verifies;
//! - some signature must pass [`VerifyingKey::verify_strict`] under some
//!   trusted key. `keyid` is an unauthenticated hint and is not used to pick
//!   keys: every signature is tried against every trusted key.
//!
//! The verified body is returned, and callers must parse exactly those bytes.

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::attest::b64;
use crate::attest::keys::{self, KeyError};
use crate::attest::pae::pae;

/// The length of an Ed25519 signature in bytes.
const SIGNATURE_LENGTH: usize = 64;

/// A DSSE JSON envelope, as it appears on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The body, base64-encoded. DSSE lets an empty body be omitted.
    #[serde(default)]
    pub payload: String,
    /// How to interpret the body; covered by every signature.
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// The signatures over the PAE of type and body.
    pub signatures: Vec<EnvelopeSignature>,
}

/// One signature in an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// An unauthenticated hint naming the key; never used for trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyid: Option<String>,
    /// The signature, base64-encoded.
    pub sig: String,
}

impl Envelope {
    /// The envelope as compact JSON (`payload`, `payloadType`,
    /// `signatures`, in that order; standard padded base64).
    pub fn to_json(&self) -> String {
        // The same bytes as `serde_json::to_string(self)`, but base64 (the payload and the
        // signatures: most of an envelope) is copied as it is instead of being scanned for
        // characters to escape, since it has none.
        let mut out = String::with_capacity(self.payload.len() + 256);
        out.push_str("{\"payload\":");
        push_json_string(&mut out, &self.payload);
        out.push_str(",\"payloadType\":");
        push_json_string(&mut out, &self.payload_type);
        out.push_str(",\"signatures\":[");
        for (i, signature) in self.signatures.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            if let Some(keyid) = &signature.keyid {
                out.push_str("\"keyid\":");
                push_json_string(&mut out, keyid);
                out.push(',');
            }
            out.push_str("\"sig\":");
            push_json_string(&mut out, &signature.sig);
            out.push('}');
        }
        out.push_str("]}");
        out
    }
}

/// Appends `text` as a JSON string, as serde_json writes it.
fn push_json_string(out: &mut String, text: &str) {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"+/=-_:.@ ".contains(&b);
    if text.bytes().all(plain) {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(&serde_json::Value::from(text).to_string());
    }
}

/// A public key that signatures are checked against, with its key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// The Ed25519 public key.
    key: VerifyingKey,
    /// `sha256:<hex of its SubjectPublicKeyInfo DER>`.
    keyid: String,
}

impl TrustedKey {
    /// Trusts `key`.
    pub fn new(key: VerifyingKey) -> Self {
        let keyid = keys::key_id(&key);
        Self { key, keyid }
    }

    /// Trusts the key in SubjectPublicKeyInfo PEM text.
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        keys::public_key_from_pem(text).map(Self::new)
    }

    /// The public key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.key
    }

    /// The key id: `sha256:<hex of the SubjectPublicKeyInfo DER>`.
    pub fn keyid(&self) -> &str {
        &self.keyid
    }

    /// The key id, typed.
    pub fn id(&self) -> keys::KeyId {
        keys::KeyId::of(&self.key)
    }
}

/// A verified envelope's body and the trusted key that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The exact bytes the signature covers. Parse these, nothing else.
    pub body: Vec<u8>,
    /// The index in the trusted list of the key that verified.
    pub key_index: usize,
    /// That trusted key's id (computed from the key, not the envelope's
    /// unauthenticated `keyid` hint).
    pub keyid: String,
}

/// A body verified by a threshold of distinct trusted keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdVerified {
    /// The exact bytes the signatures cover. Parse these, nothing else.
    pub body: Vec<u8>,
    /// The indices in the trusted list of the distinct keys that verified,
    /// ascending.
    pub key_indices: Vec<usize>,
}

/// An envelope that is not acceptable.
///
/// Every message reads after "failed to".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// No trusted keys were given, so nothing could verify.
    #[error("verify envelope: no trusted keys were given")]
    NoTrustedKeys,
    /// A threshold of zero would accept anything.
    #[error("verify envelope: the signature threshold must be at least 1")]
    ZeroThreshold,
    /// The bytes are not a DSSE JSON envelope.
    #[error("parse envelope: {detail}")]
    NotAnEnvelope {
        /// What the JSON parser said.
        detail: String,
    },
    /// The envelope's payload type is not the one expected.
    #[error("verify envelope: payload type is {found:?}, expected {expected:?}")]
    PayloadType {
        /// The type in the envelope.
        found: String,
        /// The type the caller accepts.
        expected: String,
    },
    /// The envelope carries no signatures.
    #[error("verify envelope: it has no signatures")]
    NoSignatures,
    /// The payload is not base64.
    #[error("decode envelope payload: {problem}")]
    Payload {
        /// What is wrong with the base64.
        problem: String,
    },
    /// A signature is not base64.
    #[error("decode envelope signature {index}: {problem}")]
    SignatureEncoding {
        /// The signature's position in the envelope, from 0.
        index: usize,
        /// What is wrong with the base64.
        problem: String,
    },
    /// A signature has the wrong length for Ed25519.
    #[error("decode envelope signature {index}: it is {length} bytes, an Ed25519 signature is 64")]
    SignatureLength {
        /// The signature's position in the envelope, from 0.
        index: usize,
        /// Its decoded length.
        length: usize,
    },
    /// No signature verifies under any trusted key.
    #[error("verify envelope signature: no signature matches the trusted key{}", plural(*trusted))]
    NoMatchingSignature {
        /// How many trusted keys were tried.
        trusted: usize,
    },
    /// Fewer distinct trusted keys signed than the threshold requires.
    #[error(
        "verify envelope signatures: {found} distinct trusted key{} signed, {threshold} required",
        plural(*found)
    )]
    BelowThreshold {
        /// Distinct trusted keys with a valid signature.
        found: usize,
        /// Distinct trusted keys required.
        threshold: usize,
    },
}

/// "s" unless `count` is one.
fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Signs `body` as `payload_type` with `key`, giving a one-signature
/// envelope. `keyid` is written as the signature's unauthenticated hint
/// (use [`keys::key_id`] for the standard id).
pub fn sign(payload_type: &str, body: &[u8], key: &SigningKey, keyid: Option<&str>) -> Envelope {
    let signature: Signature = key.sign(&pae(payload_type, body));
    Envelope {
        payload: b64::encode(body),
        payload_type: payload_type.to_owned(),
        signatures: vec![EnvelopeSignature {
            keyid: keyid.map(str::to_owned),
            sig: b64::encode(&signature.to_bytes()),
        }],
    }
}

/// Verifies envelope JSON and returns the signed body and the trusted key
/// that signed it. See the module documentation for the exact rules.
pub fn verify(
    envelope_bytes: &[u8],
    expected_payload_type: &str,
    trusted: &[TrustedKey],
) -> Result<Verified, VerifyError> {
    let decoded = decode(envelope_bytes, expected_payload_type, trusted)?;
    let message = pae(expected_payload_type, &decoded.body);
    for signature in &decoded.signatures {
        for (key_index, key) in trusted.iter().enumerate() {
            if key.key.verify_strict(&message, signature).is_ok() {
                return Ok(Verified {
                    body: decoded.body,
                    key_index,
                    keyid: key.keyid.clone(),
                });
            }
        }
    }
    Err(VerifyError::NoMatchingSignature {
        trusted: trusted.len(),
    })
}

/// Verifies envelope JSON and requires valid signatures from at least
/// `threshold` distinct trusted keys (the DSSE `(t, n)` rule). The same key
/// listed twice in `trusted`, or signing twice, counts once.
pub fn verify_threshold(
    envelope_bytes: &[u8],
    expected_payload_type: &str,
    trusted: &[TrustedKey],
    threshold: usize,
) -> Result<ThresholdVerified, VerifyError> {
    if threshold == 0 {
        return Err(VerifyError::ZeroThreshold);
    }
    let decoded = decode(envelope_bytes, expected_payload_type, trusted)?;
    let message = pae(expected_payload_type, &decoded.body);
    let mut key_indices: Vec<usize> = Vec::new();
    for (key_index, key) in trusted.iter().enumerate() {
        let duplicate = key_indices.iter().any(|&seen| trusted[seen].key == key.key);
        if duplicate {
            continue;
        }
        let signed = decoded
            .signatures
            .iter()
            .any(|signature| key.key.verify_strict(&message, signature).is_ok());
        if signed {
            key_indices.push(key_index);
        }
    }
    if key_indices.len() < threshold {
        return Err(VerifyError::BelowThreshold {
            found: key_indices.len(),
            threshold,
        });
    }
    Ok(ThresholdVerified {
        body: decoded.body,
        key_indices,
    })
}

/// An envelope whose structure, type and encodings have been checked, but
/// whose signatures have not.
struct Decoded {
    /// The decoded body.
    body: Vec<u8>,
    /// The decoded signatures, each 64 bytes.
    signatures: Vec<Signature>,
}

/// Parses and checks everything but the signatures themselves.
fn decode(
    envelope_bytes: &[u8],
    expected_payload_type: &str,
    trusted: &[TrustedKey],
) -> Result<Decoded, VerifyError> {
    if trusted.is_empty() {
        return Err(VerifyError::NoTrustedKeys);
    }
    let envelope: Envelope =
        serde_json::from_slice(envelope_bytes).map_err(|err| VerifyError::NotAnEnvelope {
            detail: err.to_string(),
        })?;
    if envelope.payload_type != expected_payload_type {
        return Err(VerifyError::PayloadType {
            found: envelope.payload_type,
            expected: expected_payload_type.to_owned(),
        });
    }
    if envelope.signatures.is_empty() {
        return Err(VerifyError::NoSignatures);
    }
    let body = b64::decode(&envelope.payload).map_err(|err| VerifyError::Payload {
        problem: err.problem,
    })?;
    let mut signatures = Vec::with_capacity(envelope.signatures.len());
    for (index, entry) in envelope.signatures.iter().enumerate() {
        let bytes = b64::decode(&entry.sig).map_err(|err| VerifyError::SignatureEncoding {
            index,
            problem: err.problem,
        })?;
        let array: [u8; SIGNATURE_LENGTH] =
            bytes
                .as_slice()
                .try_into()
                .map_err(|_| VerifyError::SignatureLength {
                    index,
                    length: bytes.len(),
                })?;
        signatures.push(Signature::from_bytes(&array));
    }
    Ok(Decoded { body, signatures })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPE: &str = "application/vnd.in-toto+json";

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn signed(body: &[u8]) -> (SigningKey, Vec<u8>) {
        let signer = key(7);
        let keyid = keys::key_id(&signer.verifying_key());
        let envelope = sign(TYPE, body, &signer, Some(&keyid));
        (signer, envelope.to_json().into_bytes())
    }

    #[test]
    fn sign_then_verify_returns_the_body_and_key() {
        let (signer, bytes) = signed(b"{\"a\":1}");
        let trusted = [
            TrustedKey::new(key(1).verifying_key()),
            TrustedKey::new(signer.verifying_key()),
        ];
        let verified = verify(&bytes, TYPE, &trusted).expect("verifies");
        assert_eq!(verified.body, b"{\"a\":1}");
        assert_eq!(verified.key_index, 1);
        assert_eq!(verified.keyid, keys::key_id(&signer.verifying_key()));
    }

    #[test]
    fn envelope_json_shape() {
        let envelope = sign(TYPE, b"hi", &key(7), None);
        let json: serde_json::Value = serde_json::from_str(&envelope.to_json()).expect("json");
        assert_eq!(json["payload"], "aGk=");
        assert_eq!(json["payloadType"], TYPE);
        assert!(json["signatures"][0].get("keyid").is_none());
        assert_eq!(
            json["signatures"][0]["sig"].as_str().map(str::len),
            Some(88)
        );
    }

    #[test]
    fn rejects_each_kind_of_bad_envelope() {
        let (signer, bytes) = signed(b"body");
        let trusted = [TrustedKey::new(signer.verifying_key())];
        let good: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut value = good.clone();
            f(&mut value);
            serde_json::to_vec(&value).expect("json")
        };

        let err = verify(b"[1,2]", TYPE, &trusted).expect_err("array");
        assert!(matches!(err, VerifyError::NotAnEnvelope { .. }), "{err}");
        let err = verify(b"not json", TYPE, &trusted).expect_err("text");
        assert!(matches!(err, VerifyError::NotAnEnvelope { .. }), "{err}");
        let no_sigs_field = edit(&|v| {
            v.as_object_mut().map(|o| o.remove("signatures"));
        });
        let err = verify(&no_sigs_field, TYPE, &trusted).expect_err("missing");
        assert!(matches!(err, VerifyError::NotAnEnvelope { .. }), "{err}");

        let err = verify(&bytes, "application/json", &trusted).expect_err("type");
        assert_eq!(
            err.to_string(),
            "verify envelope: payload type is \"application/vnd.in-toto+json\", expected \
             \"application/json\""
        );

        let none = edit(&|v| v["signatures"] = serde_json::json!([]));
        assert_eq!(
            verify(&none, TYPE, &trusted),
            Err(VerifyError::NoSignatures)
        );

        let bad_payload = edit(&|v| v["payload"] = "a$==".into());
        assert!(matches!(
            verify(&bad_payload, TYPE, &trusted),
            Err(VerifyError::Payload { .. })
        ));

        let bad_sig = edit(&|v| v["signatures"][0]["sig"] = "%%%%".into());
        assert!(matches!(
            verify(&bad_sig, TYPE, &trusted),
            Err(VerifyError::SignatureEncoding { index: 0, .. })
        ));

        let short = edit(&|v| v["signatures"][0]["sig"] = b64::encode(&[0u8; 63]).into());
        assert_eq!(
            verify(&short, TYPE, &trusted),
            Err(VerifyError::SignatureLength {
                index: 0,
                length: 63
            })
        );
        let long = edit(&|v| v["signatures"][0]["sig"] = b64::encode(&[0u8; 65]).into());
        assert_eq!(
            verify(&long, TYPE, &trusted).map_err(|e| e.to_string()),
            Err("decode envelope signature 0: it is 65 bytes, an Ed25519 signature is 64".into())
        );

        let other = [TrustedKey::new(key(9).verifying_key())];
        let err = verify(&bytes, TYPE, &other).expect_err("untrusted");
        assert_eq!(
            err.to_string(),
            "verify envelope signature: no signature matches the trusted key"
        );

        assert_eq!(verify(&bytes, TYPE, &[]), Err(VerifyError::NoTrustedKeys));
    }

    #[test]
    fn a_malformed_second_signature_rejects_the_envelope() {
        let (signer, bytes) = signed(b"body");
        let trusted = [TrustedKey::new(signer.verifying_key())];
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        if let Some(list) = value["signatures"].as_array_mut() {
            list.push(serde_json::json!({"sig": "AAAA"}));
        }
        let bytes = serde_json::to_vec(&value).expect("json");
        assert_eq!(
            verify(&bytes, TYPE, &trusted),
            Err(VerifyError::SignatureLength {
                index: 1,
                length: 3
            })
        );
    }

    #[test]
    fn duplicate_fields_and_trailing_data_are_rejected() {
        let (signer, bytes) = signed(b"body");
        let trusted = [TrustedKey::new(signer.verifying_key())];
        let text = String::from_utf8(bytes).expect("utf8");
        let duplicated = text.replacen("{\"payload\":", "{\"payload\":\"eA==\",\"payload\":", 1);
        let err = verify(duplicated.as_bytes(), TYPE, &trusted).expect_err("duplicate");
        assert!(err.to_string().contains("duplicate field"), "{err}");
        let trailing = format!("{text} {{}}");
        assert!(matches!(
            verify(trailing.as_bytes(), TYPE, &trusted),
            Err(VerifyError::NotAnEnvelope { .. })
        ));
        let whitespace = format!("\n {text} \n");
        assert!(verify(whitespace.as_bytes(), TYPE, &trusted).is_ok());
    }

    #[test]
    fn keyid_is_only_a_hint() {
        let (signer, bytes) = signed(b"body");
        let trusted = [TrustedKey::new(signer.verifying_key())];
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        value["signatures"][0]["keyid"] = "someone else".into();
        let bytes = serde_json::to_vec(&value).expect("json");
        let verified = verify(&bytes, TYPE, &trusted).expect("verifies");
        assert_eq!(verified.keyid, keys::key_id(&signer.verifying_key()));
    }

    #[test]
    fn omitted_payload_is_the_empty_body() {
        let signer = key(3);
        let envelope = sign(TYPE, b"", &signer, None);
        let text = format!(
            "{{\"payloadType\":\"{TYPE}\",\"signatures\":[{{\"sig\":\"{}\"}}]}}",
            envelope.signatures[0].sig
        );
        let trusted = [TrustedKey::new(signer.verifying_key())];
        let verified = verify(text.as_bytes(), TYPE, &trusted).expect("verifies");
        assert!(verified.body.is_empty());
    }

    #[test]
    fn payload_and_sig_in_every_base64_spelling_verify() {
        // Bytes chosen so both alphabets' special characters appear.
        let body = [0xfb, 0xff, 0xbf, 0x3e, 0x3f, 0x00];
        let signer = key(4);
        let trusted = [TrustedKey::new(signer.verifying_key())];
        let envelope = sign(TYPE, &body, &signer, None);
        let spellings = |text: &str| {
            let url = text.replace('+', "-").replace('/', "_");
            vec![
                text.to_owned(),
                text.trim_end_matches('=').to_owned(),
                url.clone(),
                url.trim_end_matches('=').to_owned(),
            ]
        };
        let mut checked = 0;
        for payload in spellings(&envelope.payload) {
            for sig in spellings(&envelope.signatures[0].sig) {
                let mut variant = envelope.clone();
                variant.payload = payload.clone();
                variant.signatures[0].sig = sig;
                let verified = verify(variant.to_json().as_bytes(), TYPE, &trusted)
                    .expect("every spelling verifies");
                assert_eq!(verified.body, body);
                checked += 1;
            }
        }
        assert_eq!(checked, 16);
    }

    #[test]
    fn threshold_counts_distinct_keys() {
        let (a, b) = (key(1), key(2));
        let mut envelope = sign(TYPE, b"x", &a, None);
        let second = sign(TYPE, b"x", &b, None);
        envelope.signatures.extend(second.signatures);
        let bytes = envelope.to_json().into_bytes();
        let trusted = [
            TrustedKey::new(a.verifying_key()),
            TrustedKey::new(a.verifying_key()),
            TrustedKey::new(b.verifying_key()),
        ];
        let ok = verify_threshold(&bytes, TYPE, &trusted, 2).expect("two keys");
        assert_eq!(ok.key_indices, vec![0, 2]);
        assert_eq!(
            verify_threshold(&bytes, TYPE, &trusted, 3),
            Err(VerifyError::BelowThreshold {
                found: 2,
                threshold: 3
            })
        );
        assert_eq!(
            verify_threshold(&bytes, TYPE, &trusted, 0),
            Err(VerifyError::ZeroThreshold)
        );
    }

    proptest::proptest! {
        #![proptest_config(crate::attest::testing::beside_source(proptest::test_runner::Config::with_cases(32)))]
        #[test]
        fn any_type_and_body_round_trip(
            ty in ".{0,24}",
            body in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..200),
        ) {
            let signer = key(11);
            let bytes = sign(&ty, &body, &signer, None).to_json().into_bytes();
            let trusted = [TrustedKey::new(signer.verifying_key())];
            let verified = verify(&bytes, &ty, &trusted).expect("verifies");
            proptest::prop_assert_eq!(verified.body, body);
            let other = format!("{ty}x");
            proptest::prop_assert!(verify(&bytes, &other, &trusted).is_err());
        }

        #[test]
        fn the_json_is_what_serde_json_writes(
            payload in "[A-Za-z0-9+/=]{0,40}|[a-z+/=\"\\\\\n\t\u{1}é ]{0,24}",
            ty in "[a-z/.+\"\\\\\n\u{7f}é ]{0,24}",
            keyid in proptest::option::of("[a-f0-9:\"\\\\\t ]{0,24}"),
            sig in "[A-Za-z0-9+/=]{0,20}|[a-z\"\\\\\r]{0,12}",
            count in 0..3usize,
        ) {
            let envelope = Envelope {
                payload,
                payload_type: ty,
                signatures: vec![EnvelopeSignature { keyid, sig }; count],
            };
            let expected = serde_json::to_string(&envelope).expect("serializes");
            proptest::prop_assert_eq!(envelope.to_json(), expected);
        }
    }
}
