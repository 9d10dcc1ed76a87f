//! Fuzz target `receipt`: any bytes as the statement inside a signed envelope, read back
//! as a receipt ([`proofgraph::proof::receipt::verify_bytes`], what `prove` and `status` trust) and as
//! a CI-signed external result ([`proofgraph::decide::external::verify`], what `evidence verify-ci`
//! accepts). The envelope is signed with a trusted test key, so the signature holds and
//! everything after it is exercised; the bytes are also tried as an envelope themselves.
//!
//! Invariants:
//!
//! - a receipt that reads names a trusted signer, and written again (statement, envelope)
//!   reads back as the same receipt;
//! - a rejection for the signature means the statement itself is unreadable (the
//!   signature was good), a rejection as "not a receipt" means it was readable;
//! - an accepted external result meets every condition, checked again on the raw JSON:
//!   test-result predicate, the expected issuer and binding, every claim, `PASSED`, no
//!   failed test; a rejected one says what to fix.

use serde_json::Value;

use proofgraph::attest::canonical::CanonicalJsonError;
use proofgraph::attest::envelope::{self, TrustedKey};
use proofgraph::attest::keys;
use proofgraph::attest::statement::{self, IN_TOTO_PAYLOAD_TYPE, Statement, StatementError};
use proofgraph::decide::external::{self, Expectation};
use proofgraph::proof::receipt::{self, PREDICATE_TYPE, Rejected, TestNames};

use super::envelope::test_keys;

/// The issuer an external result must name.
pub const ISSUER: &str = "https://ci.example/proofgraph";
/// The binding an external result must be for.
pub const BINDING: &str = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";
/// The claims an external result must cover.
pub const CLAIMS: [&str; 2] = ["claim-a", "claim-b"];

/// Runs one input; panics when an invariant does not hold.
pub fn run(data: &[u8]) {
    let [key, _] = test_keys();
    let keyid = keys::key_id(&key.verifying_key());
    let trusted = [TrustedKey::new(key.verifying_key())];
    if let Ok((proof, signer)) = receipt::verify_bytes(data, &trusted) {
        assert_eq!(signer, keyid);
        rewrite(&proof, &key, &trusted);
    }
    let signed = envelope::sign(IN_TOTO_PAYLOAD_TYPE, data, &key, Some(&keyid)).to_json();
    match receipt::verify_bytes(signed.as_bytes(), &trusted) {
        Ok((proof, signer)) => {
            assert_eq!(signer, keyid);
            rewrite(&proof, &key, &trusted);
        }
        Err(Rejected::Signature(why)) => assert!(
            Statement::parse(data).is_err(),
            "a good signature over a readable statement was refused: {why}"
        ),
        Err(Rejected::NotAReceipt(why)) => assert!(
            Statement::parse(data).is_ok(),
            "an unreadable statement was judged as a receipt: {why}"
        ),
    }
    let claims: Vec<String> = CLAIMS.iter().map(|c| (*c).to_owned()).collect();
    let public_key = keys::public_key_to_pem(&key.verifying_key());
    let expected = Expectation {
        issuer: ISSUER,
        public_key: &public_key,
        binding: BINDING,
        claims: &claims,
    };
    match external::verify(signed.as_bytes(), &expected) {
        Ok(accepted) => {
            assert_eq!(accepted.keyid, keyid);
            let raw: Value = serde_json::from_slice(data).expect("an accepted statement is JSON");
            check_accepted(&raw, &accepted.passed_tests);
        }
        Err(rejection) => assert!(
            !rejection.message.is_empty() && !rejection.fix.is_empty(),
            "a rejection that does not say what to fix: {rejection:?}"
        ),
    }
}

/// Writes a receipt read back once more and reads it again.
fn rewrite(proof: &receipt::Proof, key: &ed25519_dalek::SigningKey, trusted: &[TrustedKey]) {
    // A receipt with a number outside the canonical range (past 2^53 - 1) cannot be signed
    // again, and proofgraph never wrote one; everything else must survive the round trip.
    let statement = receipt::statement(proof, &TestNames::default())
        .expect("a receipt that was read makes a statement");
    let envelope = match statement::sign_statement(&statement, key, None) {
        Ok(envelope) => envelope,
        Err(StatementError::Canonical(CanonicalJsonError::Number { .. })) => return,
        Err(e) => panic!("a receipt that was read does not sign again: {e}"),
    };
    let (again, _) = receipt::verify_bytes(envelope.to_json().as_bytes(), trusted)
        .expect("a receipt written from one read back reads");
    assert_eq!(&again, proof, "the receipt changed on the way round");
}

/// Checks an accepted external result on the raw statement JSON.
fn check_accepted(raw: &Value, passed_tests: &[String]) {
    assert_eq!(raw["predicateType"], PREDICATE_TYPE);
    let predicate = &raw["predicate"];
    assert_eq!(predicate["issuer"], ISSUER);
    assert_eq!(predicate["result"], "PASSED");
    assert!(
        predicate
            .get("failedTests")
            .is_none_or(|f| f.as_array().is_some_and(Vec::is_empty) || !f.is_array()),
        "accepted with failed tests"
    );
    let claims: Vec<&str> = predicate["claims"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        CLAIMS.iter().all(|c| claims.contains(c)),
        "a claim is missing"
    );
    let subjects = raw["subject"]
        .as_array()
        .expect("an accepted statement has subjects");
    assert!(
        subjects.iter().any(|s| s["digest"]["sha256"] == BINDING),
        "accepted for another binding"
    );
    let listed: Vec<&str> = predicate["passedTests"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(listed, passed_tests);
}
