//! Configuration text into positioned trees: the one JSON and YAML reader of proofgraph.
//!
//! `validate` (and everything else the application reads: `evidence.yaml`,
//! `execution.yaml`, `proofgraph.yaml`, OpenSpec's store files) and the wiring bootstrap's
//! `init` (the text it edits, and the same text again after its edit) read through this
//! crate, so a file means one thing to both.
//!
//! - [`parse`]: the entry point. Text whose first non-blank character is `{` is JSON,
//!   anything else YAML.
//! - [`json`]: a strict RFC 8259 parser that keeps positions.
//! - [`yaml`]: a tree built from `saphyr-parser`'s events, plain scalars resolved with the
//!   YAML 1.2 core schema.
//! - [`node`]: the tree both build; [`error`]: what can go wrong, and where.
//!
//! Invariants:
//! - No I/O: text in, tree or error out. Nothing here reads a file, prints or looks at the
//!   environment; callers bound the size of what they read ([`node::MAX_FILE_BYTES`]).
//! - No recursion on input depth without a bound: nesting past [`node::MAX_DEPTH`] is an
//!   error, and the YAML tree is built with an explicit stack.
//! - No repeated key reaches a tree: both parsers refuse it.
//! - No `unsafe`.

#![forbid(unsafe_code)]

pub mod error;
pub mod json;
pub mod node;
pub mod parse;
pub mod yaml;
