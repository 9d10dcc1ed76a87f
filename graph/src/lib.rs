//! The pure core of proofgraph.
//!
//! This crate holds what can be decided without touching the world: the typed
//! identities of claims, providers, services and repositories, and (as the
//! graph lands) the provider DAG, resource locks, preflight, fingerprints and
//! the scheduler state machine.
//!
//! Invariants:
//! - No I/O: nothing here reads a file, spawns a process, reads a clock or an
//!   environment variable. Inputs that come from the world (file digests,
//!   platform facts) are passed in as values.
//! - No user interaction: nothing here prints, and nothing depends on clap or
//!   anyhow. Errors are typed (`thiserror`).
//! - Identities are validated once, when they are constructed; a value of an
//!   identity type is always well formed.

pub mod adapter;
pub mod fingerprint;
pub mod graph;
pub mod id;
pub mod model;
pub mod pattern;
pub mod preflight;
pub mod resource;
pub mod schedule;
pub mod span;

pub use adapter::Adapter;
pub use graph::{EdgeKind, GraphBuilder, NodeId, NodeKind, Repositories, SealedGraph};
pub use preflight::{Check, Finding};

pub use id::{
    CapabilityName, ChangeName, ClaimId, EnvName, IdError, IdKind, KNOWN_CAPABILITIES, ProviderId,
    RepoId, ResourceName, ServiceId,
};

#[cfg(test)]
mod testing;
