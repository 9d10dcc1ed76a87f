//! What every command shares, below the commands: the invocation's context, loading a
//! change, and evaluating it (observations, fingerprints, verified receipts), and showing a
//! run's failing tests.

pub mod context;
pub mod evaluate;
pub mod failures;
pub mod load;
pub mod provider;
pub mod receipt_file;
pub mod remote;
pub mod rerun_world;
pub mod revision;
