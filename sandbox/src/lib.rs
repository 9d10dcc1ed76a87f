//! Sandboxes and process supervision for proofgraph.
//!
//! This crate will materialise `worktree` and `copy` sandboxes and run
//! commands inside them with hermetic isolation on Linux (private network,
//! PID namespace and `/tmp`). It knows nothing of graphs, providers or
//! receipts: it is given directories, file lists and argv, and it reports what
//! happened.
//!
//! Invariants:
//! - No user interaction: nothing here prints or parses arguments, and nothing
//!   depends on clap or anyhow. Errors are typed (`thiserror`) and name the
//!   path they concern.
//! - No knowledge of the graph: this crate does not depend on
//!   `proofgraph-graph`.

pub mod materialize;

/// Why a sandbox operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A file or directory could not be read or written.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A path to materialise was absolute or climbed out with `..`.
    #[error("materialise `{path}`: the path leaves the sandbox")]
    UnsafePath {
        /// The path.
        path: String,
    },
    /// A copying thread panicked.
    #[error("materialise a sandbox: a copying thread panicked")]
    Panicked,
}

/// How a sandbox presents a repository to the commands that run in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// Exactly the tracked files, with their current working-tree content.
    Worktree,
    /// The working tree minus ignored paths and regenerable output directories.
    Copy,
    /// Run in place; receipts say so.
    None,
}

impl SandboxMode {
    /// Every mode, in the order they are documented.
    pub const ALL: [SandboxMode; 3] = [SandboxMode::Worktree, SandboxMode::Copy, SandboxMode::None];

    /// The name used in configuration files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Worktree => "worktree",
            SandboxMode::Copy => "copy",
            SandboxMode::None => "none",
        }
    }

    /// Parses a mode name as written in `proofgraph.yaml` or on the command line.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == value)
    }
}
