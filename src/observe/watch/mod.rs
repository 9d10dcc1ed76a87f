//! A file-system watcher that answers snapshot requests without an `lstat`
//! per tracked file: `proofgraph watch` runs [`Watcher::serve`], and every
//! command that reads a worktree snapshot asks it first through [`query`].
//! A client that cannot reach a watcher, or gets no answer in time, takes
//! the snapshot itself: the watcher only ever saves time, it never decides
//! what a snapshot contains.
//!
//! - `protocol.rs`: the request and answer frames, the encoding of files,
//!   reaching the socket;
//! - `client.rs`: what the commands call ([`query`], [`is_served`], [`wake`]);
//! - `server.rs`: the daemon's loop on the socket ([`Watcher::serve`]);
//! - `tree/`: the snapshots, kept current from inotify events, and what
//!   events cannot see;
//! - `lease.rs`: asking the kernel whether a file is open for writing.

mod client;
mod lease;
mod protocol;
mod server;
#[cfg(test)]
mod testing;
mod tree;

pub use client::{is_served, query, wake};
pub use protocol::SOCKET;
pub use tree::{GitUserFiles, Served, Watcher};
