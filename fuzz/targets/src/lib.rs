//! Fuzz targets: one function per input format proofgraph reads from outside, each
//! checking invariants (not only that nothing panics), and the seeds they start from.
//!
//! A target panics when an invariant does not hold; that is how a fuzzer sees a failure.
//! They run in two ways (docs/fuzzing.md): a bounded smoke run under `cargo test`
//! (`tests/it/fuzz.rs`, a structure-aware mutator driven by proptest) and a coverage-guided
//! run with libFuzzer (`fuzz/`, `scripts/fuzz.sh`).

pub mod config;
pub mod envelope;
pub mod pem;
pub mod receipt;
pub mod report;
pub mod seeds;
pub mod store;
mod target;

pub use target::Target;
