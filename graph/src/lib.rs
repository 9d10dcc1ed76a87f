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
pub mod builder;
pub mod fingerprint;
pub mod graph;
pub mod id;
pub mod model;
pub mod pattern;
pub mod resource;
pub mod schedule;
pub mod span;
pub mod validate;

/// The checks under the name the application and the bootstrap import them by
/// (`proofgraph_graph::preflight::split_scoped`).
pub use validate as preflight;

pub use adapter::Adapter;
pub use builder::GraphBuilder;
pub use graph::{EdgeKind, NodeId, NodeKind, SealedGraph};
pub use model::Repositories;
pub use validate::{Check, Finding};

pub use id::{
    CapabilityName, ChangeName, ClaimId, EnvName, IdError, IdKind, KNOWN_CAPABILITIES, ProviderId,
    RepoId, ResourceName, ServiceId,
};

#[cfg(test)]
mod testing;
