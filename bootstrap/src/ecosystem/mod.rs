//! Readers for each ecosystem's manifests. Each reads files only, never runs
//! anything, and turns what it reads into [`crate::proposal::Proposal`]s.

pub(crate) mod cargo;
pub(crate) mod go;
pub(crate) mod node;
pub(crate) mod playwright;
pub(crate) mod python;
