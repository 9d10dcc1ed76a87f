//! Errors of the sandbox crate (materialising and supervising). Each message is a
//! lowercase fragment that reads after "failed to", and names the path it concerns in
//! backticks.

use std::path::PathBuf;

use crate::types::JobId;

/// Why a request to a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The init process could not be started at all.
    #[error("start the sandbox init `{program}`: {source}")]
    SpawnInit {
        /// The program that was executed.
        program: PathBuf,
        /// What `exec` said.
        source: std::io::Error,
    },
    /// The init started but did not complete its handshake.
    #[error("start the sandbox init `{program}`: {reason}")]
    Handshake {
        /// The program that was executed.
        program: PathBuf,
        /// What went wrong (the init's own words when it said any).
        reason: String,
    },
    /// [`crate::IsolationRequest::Required`] was asked for and namespaces are unavailable.
    #[error("create the private namespaces the run requires: {reason}")]
    IsolationUnavailable {
        /// Why, e.g. the errors of each `unshare` that was tried.
        reason: String,
    },
    /// A request could not be written to the init (it is gone).
    #[error("send a request to the sandbox init: {source}")]
    Control {
        /// The write error.
        source: std::io::Error,
    },
    /// A job or probe description was refused before reaching the init.
    #[error("accept the job: {reason}")]
    InvalidJob {
        /// What is wrong with it.
        reason: String,
    },
    /// A path that must be absolute and without `..` was not.
    #[error("use `{path}` as the {what}: it must be absolute and contain no `..`")]
    InvalidPath {
        /// Which path (working directory, log).
        what: &'static str,
        /// The path given.
        path: PathBuf,
    },
    /// A probe URL is not of the form `http://host:port/path`.
    #[error("probe `{url}`: {reason}")]
    InvalidProbeUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `kill` was given an id this run never issued.
    #[error("kill {job}: this run never started it")]
    UnknownJob {
        /// The id given.
        job: JobId,
    },
    /// The init died or broke the protocol.
    #[error("supervise the run: {reason}")]
    InitFailed {
        /// What happened.
        reason: String,
    },
    /// A file or directory could not be read or written while materialising.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
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
    /// Files were not what the caller expected as they were copied (their content or
    /// kind changed since the caller's snapshot).
    #[error("materialise a sandbox: {} changed since the snapshot ({})", plural(paths.len()), shown(paths))]
    Changed {
        /// The files, relative to the source, sorted.
        paths: Vec<String>,
    },
    /// A copying thread panicked.
    #[error("materialise a sandbox: a copying thread panicked")]
    Panicked,
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 file".to_owned()
    } else {
        format!("{n} files")
    }
}

/// The first few paths in backticks.
fn shown(paths: &[String]) -> String {
    let mut out: Vec<String> = paths.iter().take(5).map(|p| format!("`{p}`")).collect();
    if paths.len() > 5 {
        out.push(format!("and {} more", paths.len() - 5));
    }
    out.join(", ")
}
