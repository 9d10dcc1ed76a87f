//! Integration tests and independent cross-checks, in one test binary.
//!
//! - `dsse_vectors`: the DSSE specification's PAE example, its ECDSA
//!   envelope signature, and its Ed25519 test vectors.
//! - `tamper`: every single-byte change to a signed envelope is rejected.
//! - `openssl`: envelopes and keys checked with the `openssl` command.
//! - `securesystemslib`: envelopes checked with Python securesystemslib.
//! - `jcs`: canonical JSON checked with Python `rfc8785`.
//!
//! The cross-checks need `openssl` (3.0+) and the Python test tools' venv
//! (`tools/interop/.venv`, holding `tools/interop/requirements.txt`, made by
//! `./scripts/test.sh`); when one is missing its tests fail and say how to
//! install it.

mod common;
mod dsse_vectors;
mod jcs;
mod openssl;
mod securesystemslib;
mod tamper;
