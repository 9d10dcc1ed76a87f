//! Signed receipts for proofgraph: DSSE envelopes, in-toto Statement v1 and
//! Ed25519 keys.
//!
//! The pieces, bottom up:
//!
//! - [`pae`]: the DSSE v1 pre-authentication encoding, the exact bytes that
//!   are signed.
//! - [`b64`]: base64 as DSSE uses it (standard or URL-safe, padded or not).
//! - [`keys`]: Ed25519 key generation, PKCS#8 PEM private keys, SPKI PEM
//!   public keys, key ids, and the import checks that turn common pasting
//!   mistakes into clear errors.
//! - [`envelope`]: the DSSE JSON envelope, [`envelope::sign`] and
//!   [`envelope::verify`].
//! - [`canonical`]: the canonical JSON encoding used for everything we sign.
//! - [`statement`]: in-toto Statement v1 types, building, checking, signing
//!   and verifying.
//!
//! The one rule callers must keep: after verification, use only the bytes
//! that [`envelope::verify`] returns (or the statement that
//! [`statement::verify_statement`] parsed from them); never read the payload
//! out of the envelope again.

pub mod b64;
pub mod canonical;
pub mod envelope;
pub mod keys;
pub mod pae;
pub mod statement;
#[cfg(test)]
pub(crate) mod testing;

pub use envelope::{
    Envelope, EnvelopeSignature, ThresholdVerified, TrustedKey, Verified, VerifyError, sign,
    verify, verify_threshold,
};
pub use keys::{KeyError, KeyKind};
pub use statement::{
    DigestSet, IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE_V1, Statement, StatementError, Subject,
    VerifiedStatement, sign_statement, verify_statement,
};
