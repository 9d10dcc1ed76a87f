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
//!
//! # Decisions
//!
//! Before this crate, the wiring bootstrap had readers of its own, and they disagreed with
//! the application's. Each point is now decided once, for both; the reference is the
//! OpenSpec CLI's reader, the `yaml` npm package (2.9.1, YAML 1.2 core schema), and where
//! proofgraph departs from it, it refuses with a diagnostic rather than read differently.
//! `tests/it/syntax.rs` runs each row through `validate`'s reader and `init`'s and checks
//! that they agree.
//!
//! | text | read as | `yaml` npm | bootstrap's old reader |
//! |---|---|---|---|
//! | `.inf`, `-.Inf`, `+.INF`, `.nan`, `.NaN` | a number (its text kept) | ±Infinity, NaN | a string |
//! | `1e400` (past `f64`) | a number (its text kept) | Infinity | a string (YAML), refused (JSON) |
//! | `~`, `null`, `Null`, `NULL`, nothing | null | null | null |
//! | `yes`, `no`, `on`, `off`, `y`, `n` | strings (YAML 1.1 booleans are not 1.2's) | strings | strings |
//! | `true`, `True`, `TRUE` (not `tRUE`) | booleans | booleans | booleans |
//! | `0o17`, `0x1F` | numbers: 15, 31 | 15, 31 | 15, 31 |
//! | `017` | a number: 17 (decimal in YAML 1.2) | 17 | 17 |
//! | `0X1F`, `-0o17`, `0b101`, `1_000`, `2001-12-14` | strings | strings | strings |
//! | `+12`, `1.`, `.5`, `1e3` | numbers | numbers | numbers |
//! | a repeated key (YAML or JSON) | refused (`duplicate_key`) | refused ("Map keys must be unique") | the last one kept |
//! | `true:` and `True:` in one mapping | one key twice: refused | refused | two keys |
//! | more than one document (`---`) | refused (`multiple_documents`) | refused | refused |
//! | an alias (`*a`) | refused (`unsupported_yaml`): how a small file becomes a huge tree | expanded | refused |
//! | an anchor (`&a`) no alias uses | read, the anchor ignored | the same | the same |
//! | a tag (`!!str`, `!foo`) | refused (`unsupported_yaml`) | applied, or warned about | refused |
//! | a list or mapping as a key (`? [a]`) | refused (`unsupported_yaml`) | its text as the key | read |
//! | scalar keys `True:`, `~:`, `1.0:` | `true`, `null`, `1.0`: booleans and null as JSON spells them, numbers as written | `true`, the empty key, `1` | as written |
//! | a byte order mark | skipped; JSON or YAML by what follows it | skipped | JSON behind it read as YAML |
//! | only blank lines and comments | no document: null ([`parse::read_document`] says which) | null | no document |
//!
//! Two consequences for callers that want `serde_json` data (the bootstrap compares its
//! edit as such): [`node::number_as_json`] gives each number's JSON spelling, and `.inf`,
//! `.nan` and a number out of `f64`'s range have no exact JSON value; the bootstrap
//! refuses to edit a file holding one rather than guess. The two known departures from
//! `yaml` that read something rather than refuse it (the null key is `null`, not the
//! empty text; a number key keeps its spelling, `1.0` not `1`) are kept because
//! `validate` has always read them so.

#![forbid(unsafe_code)]

pub mod error;
pub mod json;
pub mod node;
pub mod parse;
pub mod yaml;
