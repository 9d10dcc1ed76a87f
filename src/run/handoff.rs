//! What the executor is given ([`Plan`]) and what it gives back ([`Executed`], or why
//! nothing ran: [`Stopped`]).

use std::num::NonZeroUsize;

use proofgraph_graph::fingerprint::Fingerprints;
use proofgraph_graph::{ChangeName, SealedGraph};
use proofgraph_sandbox::{Isolation, IsolationRequest, SandboxMode};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::env::Env;
use crate::base::redact::Secrets;
use crate::load::workspace::Workspace;
use crate::observe::world::Observed;
use crate::store::Store;

use super::events::{Progress, ProviderRun};

/// Everything the executor needs.
pub struct Plan<'a> {
    /// The sealed graph.
    pub graph: &'a SealedGraph,
    /// The change's name.
    pub change: &'a ChangeName,
    /// The workspace.
    pub workspace: &'a Workspace,
    /// What was observed (snapshots, input files).
    pub observed: &'a Observed,
    /// Every fingerprint.
    pub fingerprints: &'a Fingerprints,
    /// The store.
    pub store: &'a Store,
    /// The signing key.
    pub key: &'a ed25519_dalek::SigningKey,
    /// The sandbox mode.
    pub mode: SandboxMode,
    /// How many providers at once.
    pub jobs: NonZeroUsize,
    /// Go on after a failure.
    pub keep_going: bool,
    /// Keep the sandboxes after the run.
    pub keep_sandbox: bool,
    /// How much isolation to ask for.
    pub isolation: IsolationRequest,
    /// The caller's environment.
    pub env: &'a Env,
    /// SIGINT or SIGTERM since `prove` began.
    pub interrupt: &'a crate::base::interrupt::Interrupt,
    /// This run's id.
    pub run_id: &'a str,
    /// The change's secrets: redacted from every job's log and probe, every report before
    /// it is parsed, every judged result and every stored artifact.
    pub secrets: &'a Secrets,
    /// Where progress goes.
    pub progress: &'a dyn Fn(Progress<'_>),
    /// How often to say which providers are still running (none: never).
    pub heartbeat: Option<std::time::Duration>,
    /// The provider whose command's output is passed through as it is written.
    pub stream: Option<proofgraph_graph::ProviderId>,
    /// Where each receipt goes once written, to be uploaded to the remote cache while
    /// the run goes on (none: no remote is written).
    pub upload: Option<tokio::sync::mpsc::UnboundedSender<crate::store::Sha256>>,
    /// The input trees every receipt names, when they are known already (`rerun`: the
    /// sandboxes were rebuilt from exactly these); `None` records each receipt's own into
    /// its repositories' git (see [`crate::observe::record`]).
    pub trees: Option<&'a crate::observe::input_trees::Recorded>,
    /// The remote engine eligible providers are handed to (`--executor remote|auto`),
    /// reached and checked before the run; none: everything runs here.
    pub remote: Option<Offload>,
}

/// Which providers a remote engine runs, how many at once, and what a fault of it
/// becomes.
pub struct Offload {
    /// The engine, its capabilities checked.
    pub engine: std::sync::Arc<crate::run::remote::Engine>,
    /// The providers placed on it (`decide::placement`).
    pub providers: std::collections::BTreeSet<proofgraph_graph::ProviderId>,
    /// How many of its actions may be in flight at once (`--remote-jobs`).
    pub jobs: NonZeroUsize,
    /// Whether a job it loses runs here, sandboxed as any local job (`auto`), instead of
    /// failing its providers (`remote`).
    pub falls_back: bool,
    /// The platform properties every action asks for (`executor.platform`).
    pub platform: Vec<(String, String)>,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Executed {
    /// The isolation the run had (absent when nothing needed a run).
    pub isolation: Option<Isolation>,
    /// Per provider that was wanted.
    pub providers: Vec<ProviderRun>,
    /// Whether SIGINT/SIGTERM stopped it.
    pub interrupted: bool,
    /// Findings (isolation fallback, receipts that could not be written).
    pub diagnostics: Vec<Diagnostic>,
}

/// Why a run stopped before anything ran.
#[derive(Debug)]
pub enum Stopped {
    /// A repository's files changed between the snapshot its fingerprints were computed
    /// from and the copy of its sandbox (which checks every byte against the snapshot):
    /// nothing ran, and nothing may be judged against those fingerprints. Observe again.
    InputsChanged(Vec<Diagnostic>),
    /// The run could not start.
    Failed(Vec<Diagnostic>),
}

impl From<Vec<Diagnostic>> for Stopped {
    fn from(all: Vec<Diagnostic>) -> Self {
        Stopped::Failed(all)
    }
}

/// A new run's id: 16 random hex digits (the clock and the process id when the system has
/// no randomness to give).
pub fn new_run_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (nanos as u64 ^ u64::from(std::process::id())).to_be_bytes();
    }
    proofgraph_graph::fingerprint::hex(&bytes)
}

/// An error of `prove` with its fix.
pub(super) fn diag(code: Code, message: String, fix: &str) -> Diagnostic {
    Diagnostic::error(code, message).surface("prove").fix(fix)
}

/// The rewrites that make what a run derives from its jobs (reasons, test ids, logs,
/// reports) name files relative to their repository: each repository's sandbox of run
/// `run_id` (`<store>/runs/<run>/sandboxes/<repo>/`, by its path and its real path), the
/// directory its cached setup runs in and the repository's own directory (where a job
/// runs in place, and where an isolated job's world shows the snapshot) become nothing. A sandbox's path without the slash (a command that prints its working
/// directory) becomes `.`.
pub fn path_rewrites(
    store: &crate::store::Store,
    run_id: &str,
    workspace: &crate::load::workspace::Workspace,
    mode: proofgraph_sandbox::SandboxMode,
    executions: usize,
) -> Vec<(String, String)> {
    let mut stores = vec![store.dir().to_path_buf()];
    stores.extend(fs_err::canonicalize(store.dir()).ok());
    let mut out = Vec::new();
    for base in stores {
        let run = base.join("runs").join(run_id);
        for repo in workspace.repositories.keys() {
            // Without a mount namespace each execution works in a copy of its own.
            let copies = (1..=executions).map(|n| super::layers::copy_dir(&run, n, repo));
            for dir in [
                run.join("sandboxes").join(repo.as_str()),
                run.join("setup").join(repo.as_str()),
            ]
            .into_iter()
            .chain(copies)
            {
                let dir = dir.display().to_string();
                out.push((format!("{dir}/"), String::new()));
                out.push((dir, ".".to_owned()));
            }
        }
    }
    // Each repository's own directory: where a job runs in place (its working directory
    // printed as it is, which is where the user's files are), and where an isolated job's
    // world shows the repository's snapshot (the sandbox's, so `.`).
    for repo in workspace.repositories.values() {
        let mut dirs = vec![repo.dir.clone()];
        dirs.extend(fs_err::canonicalize(&repo.dir).ok());
        for dir in dirs {
            out.push((format!("{}/", dir.display()), String::new()));
            if mode != proofgraph_sandbox::SandboxMode::None {
                out.push((dir.display().to_string(), ".".to_owned()));
            }
        }
    }
    out
}
