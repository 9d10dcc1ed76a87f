//! Looking at the working tree: input snapshots, the watcher that answers for them, and
//! the world a fingerprint is computed from — or at a revision, from git's objects.

pub mod changes;
pub mod git_id;
pub mod input_trees;
pub mod inputs;
pub mod interpreters;
pub mod listing;
pub mod programs;
pub mod rebuild;
pub mod repo_at_revision;
pub mod setup_inputs;
pub mod watch;
pub mod world;
