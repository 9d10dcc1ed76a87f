//! The pure core of proofgraph.
//!
//! This crate holds what can be decided without touching the world: the typed
//! identities of claims, providers, services and repositories (`id`), the model the
//! application decodes a change into (`model`), the provider graph — collected and sealed
//! by `builder`, checked by `validate` (preflight), queried as `graph::SealedGraph` —,
//! resource locks (`resource`), the `inputs` pattern language (`pattern`), the written-down
//! fingerprint encoding (`fingerprint`) and the scheduler state machine (`schedule`).
//!
//! Where these docs say *Change Loop's Node.js runtime*, they mean the runtime of Change
//! Loop, the Node.js workflow whose `evidence.yaml`/`execution.yaml` proofgraph reads
//! unchanged (`.claude/harness/runtime/evidence/` of `Maximumsoft-Co-LTD/claude-foundation`).
//!
//! Invariants:
//! - No I/O: nothing here reads a file, spawns a process, reads a clock or an
//!   environment variable. Inputs that come from the world (file digests,
//!   platform facts) are passed in as values.
//! - No user interaction: nothing here prints, and nothing depends on clap or
//!   anyhow. Errors are typed (`thiserror`).
//! - Identities are validated once, when they are constructed; a value of an
//!   identity type is always well formed.
//! - Nothing is scheduled or fingerprinted unsealed: only a `SealedGraph`, which exists
//!   only once preflight found nothing, has an order, fingerprints and a scheduler.
//! - Modules depend on each other one way (`builder` → `validate`, `builder` → `graph`;
//!   `fingerprint` and `schedule` → `graph`); this file only declares and re-exports.

pub mod adapter;
pub mod builder;
pub mod fingerprint;
pub mod graph;
pub mod id;
pub mod model;
pub mod pattern;
pub mod readiness;
pub mod resource;
pub mod schedule;
pub mod span;
pub mod validate;

/// The checks under the name the application and the bootstrap import them by
/// (`proofgraph_graph::preflight::split_scoped`).
pub use validate as preflight;

pub use adapter::Adapter;
pub use builder::GraphBuilder;
pub use graph::{EdgeKind, NodeId, NodeKind, NodeRole, SealedGraph};
pub use model::Repositories;
pub use validate::{Check, Finding};

pub use id::{
    CapabilityName, ChangeName, ClaimId, EnvName, IdError, IdKind, KNOWN_CAPABILITIES, ProviderId,
    RepoId, ResourceName, ServiceId,
};

#[cfg(test)]
mod testing;
