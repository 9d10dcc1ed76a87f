//! Looking at the working tree: input snapshots, the watcher that answers for them, and
//! the world a fingerprint is computed from.

pub mod inputs;
pub mod watch;
pub mod world;
