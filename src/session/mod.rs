//! What every command shares, below the commands: the invocation's context, loading a
//! change, and evaluating it (observations, fingerprints, verified receipts), showing a
//! run's failing tests, and finding the log a provider's receipt keeps.

pub mod change_at_revision;
pub mod context;
pub mod evaluate;
pub mod failures;
pub mod gc_roots;
pub mod load;
pub mod provider;
pub mod provider_log;
pub mod receipt_file;
pub mod remote_choice;
pub mod rerun_world;
