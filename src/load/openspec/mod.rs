//! The OpenSpec side of proofgraph: finding the root the way the `openspec`
//! CLI does, reading its store registry, and judging a root's health.

pub mod inspect;
pub mod root;
pub mod store;
