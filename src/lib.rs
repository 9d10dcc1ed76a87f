//! proofgraph proves the claims of a change in a spec-driven repository.
//!
//! This library is the application. Its modules are layers, listed here from the bottom
//! up; a module uses only the layers below its own (a test, `tests/it/layers.rs`, holds
//! the rule, and ARCHITECTURE.md draws the picture):
//!
//! - [`syntax`], [`attest`]: text into positioned trees; signatures and envelopes;
//! - [`base`]: the environment, diagnostics, secrets, CPU counts, signals;
//! - [`present`]: the only code that writes to the terminal, and exit codes;
//! - [`store`]: bytes and digests on disk;
//! - [`load`]: OpenSpec roots, configuration files, the workspace, preflight checks;
//! - [`observe`]: input snapshots, the watcher, the world a fingerprint reads;
//! - [`proof`]: receipts and the keys trusted to sign them;
//! - [`decide`]: reports, verdicts, statuses, external results;
//! - [`run`]: the executor and repository setup; [`worker`]: the Remote Workers API runner;
//! - [`session`]: loading and evaluating a change, shared by the commands;
//! - [`commands`]: one module per command, each a function from options to a report;
//! - [`cli`]: argv into options, and the dispatch to a command.
//!
//! The pure core lives in `proofgraph-graph`, sandboxes and process supervision in
//! `proofgraph-sandbox`, wiring bootstrap in `proofgraph-bootstrap`. The fuzz targets
//! are a crate of their own (`fuzz/targets`), which sees this one through its public API.

pub mod attest;
pub mod base;
pub mod cli;
pub mod commands;
pub mod decide;
pub mod load;
pub mod observe;
pub mod present;
pub mod proof;
pub mod run;
pub mod session;
pub mod store;
pub mod syntax;
pub mod worker;
