//! A provider's job on a Remote Execution API engine: the job described without providers
//! (`input.rs`), encoded as an `Action` with its Merkle input root (`action.rs`), and run
//! on an engine — the input blobs it lacks uploaded, `Execute` followed to the end, the
//! result's blobs fetched and checked before anything of it is returned (`engine.rs`,
//! `outcome.rs`).
//!
//! A library: nothing here prints, parses arguments or decides an exit code; the caller
//! gets a typed outcome or a typed error saying what it must do.

mod action;
mod engine;
mod input;
mod outcome;

pub use action::{Encoded, encode};
pub use engine::{Cancel, Engine, ExecError, Stage};
pub use input::{
    Content, Entry, Environment, Execution, Files, InputError, RelPath, symlink_stays_inside,
};
pub use outcome::{MAX_BLOB_BYTES, Metadata, Outcome, Output};
