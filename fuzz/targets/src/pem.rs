//! Fuzz target `pem`: any text as an Ed25519 public key (SubjectPublicKeyInfo PEM) and as
//! a private key (PKCS#8 PEM), as `trustedKeys`, `ci.publicKey` and the workspace key are
//! read.
//!
//! Invariants:
//!
//! - no text is both a public and a private key;
//! - a key that reads writes back out (our PEM) and reads again as the same key, with the
//!   same key id; a private key's public half reads as a public key;
//! - an error message never repeats a line of the PEM body (key material).

use proofgraph::attest::envelope::TrustedKey;
use proofgraph::attest::keys;

/// A body line shorter than this is too short to be key material worth hiding (an Ed25519
/// key's base64 is 64 characters or more), and could appear in a message by chance.
const MIN_SECRET_LINE: usize = 24;

/// Runs one input; panics when an invariant does not hold.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let public = keys::public_key_from_pem(&text);
    let private = keys::signing_key_from_pem(&text);
    assert!(
        public.is_err() || private.is_err(),
        "the same text reads as a public and as a private key"
    );
    match &public {
        Ok(key) => {
            let pem = keys::public_key_to_pem(key);
            assert_eq!(keys::public_key_from_pem(&pem).as_ref(), Ok(key));
            let trusted = TrustedKey::from_pem(&text).expect("the key read a moment ago");
            assert_eq!(trusted.keyid(), keys::key_id(key));
            assert_eq!(
                TrustedKey::from_pem(&pem).map(|t| t.keyid().to_owned()),
                Ok(keys::key_id(key))
            );
        }
        Err(e) => check_message(&e.to_string(), &text),
    }
    match &private {
        Ok(key) => {
            let pem = keys::signing_key_to_pem(key);
            let again = keys::signing_key_from_pem(&pem).expect("our own PEM reads");
            assert_eq!(again.to_bytes(), key.to_bytes());
            let public_pem = keys::public_key_to_pem(&key.verifying_key());
            assert_eq!(
                keys::public_key_from_pem(&public_pem),
                Ok(key.verifying_key())
            );
        }
        Err(e) => check_message(&e.to_string(), &text),
    }
}

/// Checks that `message` repeats no base64 line of the PEM body in `text` (one that does
/// not also appear in the label, which messages may name).
fn check_message(message: &str, text: &str) {
    let mut lines = text.lines().map(str::trim);
    let Some(begin) = lines.find(|l| l.starts_with("-----BEGIN")) else {
        return;
    };
    let base64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    for line in lines.take_while(|l| !l.starts_with("-----END")) {
        let secret = line.len() >= MIN_SECRET_LINE
            && line.bytes().all(base64)
            && line
                .bytes()
                .any(|b| b.is_ascii_digit() || b == b'+' || b == b'/')
            && !begin.contains(line);
        assert!(
            !(secret && message.contains(line)),
            "the error repeats a line of the key: {message}"
        );
    }
}
