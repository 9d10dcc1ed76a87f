//! proofgraph proves the claims of a change in a spec-driven repository.
//!
//! This library is the application: the command line ([`cli`]), the commands
//! ([`commands`]), configuration files ([`config`]), OpenSpec root resolution
//! ([`openspec`]), the workspace on disk ([`workspace`]), the diagnostic
//! envelope ([`diagnostic`]) and the only code that writes to the terminal
//! ([`output`]). The pure core lives in `proofgraph-graph`, sandboxes and
//! process supervision in `proofgraph-sandbox`.

pub mod attest;
pub mod cli;
pub mod commands;
pub mod config;
pub mod cores;
pub mod diagnostic;
pub mod env;
pub mod execute;
pub mod exit;
pub mod external;
pub mod fuzz;
pub mod inputs;
pub mod interrupt;
pub mod judge;
pub mod openspec;
pub mod output;
pub mod preflight;
pub mod receipt;
pub mod redact;
pub mod report;
pub mod setup;
pub mod status;
pub mod store;
#[cfg(test)]
pub(crate) mod testing;
pub mod trust;
pub mod watch;
pub mod workspace;
pub mod world;
