//! Signed external results: what `proofgraph evidence verify-ci` accepts for
//! an `external` provider, and nothing else.
//!
//! An envelope is accepted only when every check holds, in this order, and
//! before any receipt is written:
//! 1. the provider's `ci.publicKey` is an Ed25519 public key (SPKI PEM);
//! 2. the file is a DSSE envelope of type `application/vnd.in-toto+json`
//!    whose signature verifies under that key (`verify_strict`; standard or
//!    URL-safe base64);
//! 3. the verified bytes (never re-read from the envelope) parse as an in-toto
//!    Statement v1 with predicate type `https://in-toto.io/attestation/test-result/v0.1`;
//! 4. the predicate's `issuer` is the provider's `ci.issuer`;
//! 5. a subject's `sha256` digest is the provider's current binding
//!    (`proofgraph hash <change> <provider>`): a result for other code is stale;
//! 6. the predicate's `claims` cover every claim the provider vouches for;
//! 7. `result` is `PASSED` and `failedTests` is empty or absent (anything but a list there
//!    is refused, never read as no failure).

use std::collections::BTreeSet;

use crate::attest::envelope::{self, TrustedKey};
use crate::attest::keys;
use crate::attest::statement::{IN_TOTO_PAYLOAD_TYPE, Statement};
use crate::base::diagnostic::Code;
use crate::proof::receipt::PREDICATE_TYPE;

/// The largest envelope read.
pub const MAX_ENVELOPE_BYTES: usize = 16 * 1024 * 1024;

/// Why an envelope was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The diagnostic code.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub fix: String,
}

fn reject(code: Code, message: impl Into<String>, fix: impl Into<String>) -> Rejection {
    Rejection {
        code,
        message: message.into(),
        fix: fix.into(),
    }
}

/// What the provider expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation<'a> {
    /// `ci.issuer`.
    pub issuer: &'a str,
    /// `ci.publicKey` (PEM).
    pub public_key: &'a str,
    /// The provider's current binding (SHA-256 hex).
    pub binding: &'a str,
    /// The claims the provider vouches for.
    pub claims: &'a [String],
}

/// An accepted envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The verified statement.
    pub statement: Statement,
    /// The verifying key's id.
    pub keyid: String,
    /// Tests the predicate lists as passed.
    pub passed_tests: Vec<String>,
}

/// Reads a provider's `ci.publicKey`, with the import's own diagnosis of
/// common mistakes (a private key, a literal `\n`, malformed PEM, another
/// algorithm).
pub fn ci_key(public_key: &str) -> Result<TrustedKey, Rejection> {
    keys::public_key_from_pem(public_key).map(TrustedKey::new).map_err(|e| {
        reject(
            Code::CiKeyInvalid,
            format!("`ci.publicKey` is not a usable Ed25519 public key: failed to {e}"),
            "Paste the CI's Ed25519 public key as SPKI PEM (`openssl pkey -in key.pem -pubout`), in a YAML block scalar (`publicKey: |`).",
        )
    })
}

/// Verifies an envelope against a provider's expectation.
pub fn verify(bytes: &[u8], expected: &Expectation<'_>) -> Result<Accepted, Rejection> {
    let key = ci_key(expected.public_key)?;
    let verified = envelope::verify(bytes, IN_TOTO_PAYLOAD_TYPE, std::slice::from_ref(&key)).map_err(|e| {
        reject(
            Code::EnvelopeRejected,
            format!("the envelope does not verify under `ci.publicKey`: failed to {e}"),
            "Sign the DSSE PAE of the exact payload with the CI's private key (see docs/external.md); a changed byte or another key is rejected.",
        )
    })?;
    let statement = Statement::parse(&verified.body).map_err(|e| {
        reject(
            Code::StatementInvalid,
            format!("the signed payload is not an in-toto Statement v1: failed to {e}"),
            "Sign an in-toto Statement v1 (see docs/external.md).",
        )
    })?;
    if statement.predicate_type() != PREDICATE_TYPE {
        return Err(reject(
            Code::StatementInvalid,
            format!(
                "the statement's predicate type is `{}`, not `{PREDICATE_TYPE}`",
                statement.predicate_type()
            ),
            format!("Use predicateType `{PREDICATE_TYPE}`."),
        ));
    }
    let predicate = statement.predicate();
    let issuer = predicate
        .get("issuer")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    if issuer != expected.issuer {
        return Err(reject(
            Code::StatementInvalid,
            format!(
                "the statement's issuer is `{issuer}`, but the provider accepts `{}`",
                expected.issuer
            ),
            format!(
                "Set `predicate.issuer` to `{}` when signing, or fix `ci.issuer`.",
                expected.issuer
            ),
        ));
    }
    if !statement
        .subject()
        .iter()
        .any(|s| s.digest.sha256 == expected.binding)
    {
        let found: Vec<&str> = statement
            .subject()
            .iter()
            .map(|s| s.digest.sha256.as_str())
            .collect();
        return Err(reject(
            Code::EnvelopeStale,
            format!(
                "the envelope is for binding {}, but the provider's binding is now {}: it proves other code or wiring",
                found.join(", "),
                expected.binding
            ),
            "Have CI sign the current `proofgraph hash <change> <provider>` after running on this exact revision.",
        ));
    }
    let signed: BTreeSet<&str> = predicate
        .get("claims")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|c| c.as_str()).collect())
        .unwrap_or_default();
    let missing: Vec<&str> = expected
        .claims
        .iter()
        .map(String::as_str)
        .filter(|c| !signed.contains(c))
        .collect();
    if !missing.is_empty() {
        return Err(reject(
            Code::StatementInvalid,
            format!("the signed claims do not cover {}", missing.join(", ")),
            "List every claim the provider vouches for in `predicate.claims` when signing.",
        ));
    }
    let result = predicate
        .get("result")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    // Absent or a list: anything else (`"x"`, `3`, `null`, an object) is never read as no
    // failure.
    let failed = match predicate.get("failedTests") {
        None => 0,
        Some(serde_json::Value::Array(list)) => list.len(),
        Some(other) => {
            let kind = match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::String(_) => "a string",
                serde_json::Value::Array(_) | serde_json::Value::Object(_) => "an object",
            };
            return Err(reject(
                Code::StatementInvalid,
                format!("`failedTests` is {kind}, not a list of the failed tests"),
                "Sign `failedTests` as a list (empty when nothing failed), or leave it out.",
            ));
        }
    };
    if result != "PASSED" || failed > 0 {
        return Err(reject(
            Code::ExternalResultNotPassed,
            format!(
                "the signed result is `{result}` with {failed} failed tests; only a PASSED result with no failed tests is accepted"
            ),
            "Fix what failed in CI and sign the new result.",
        ));
    }
    let passed_tests = predicate
        .get("passedTests")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(Accepted {
        statement,
        keyid: verified.keyid,
        passed_tests,
    })
}
