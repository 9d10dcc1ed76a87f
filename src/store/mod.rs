//! The store: where proofs are kept, in two tiers behind one vocabulary of blobs (by
//! SHA-256) and action-cache entries (a key → a blob).
//!
//! - `local.rs`: `.proofgraph/` at the OpenSpec root, the first tier; every read and
//!   write of a run goes through it.
//! - `remote/`: a shared cache other machines read and write — the Remote Execution API
//!   over gRPC or the Bazel HTTP cache protocol — behind the `Backend` trait, one file per
//!   protocol. It moves bytes and entries; what they mean (receipts, trust) is decided
//!   above, in `proof/`.

mod local;
pub mod remote;

pub use local::*;
