//! What every command knows about its invocation: the process's environment, the global
//! options, the OpenSpec root they select, the secrets learnt on the way, and the one tokio
//! runtime of the invocation (the remote cache's calls, the executor's loop).

use std::path::PathBuf;

use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::paths::lossy_path;
use crate::base::redact::Secrets;
use crate::load::openspec::root::{self, Env, Implicit, Resolution};

/// Options every command takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    /// `--json`.
    pub json: bool,
    /// `-C <dir>`.
    pub directory: Option<PathBuf>,
    /// `--store <id>`.
    pub store: Option<String>,
}

/// What every command knows about its invocation.
#[derive(Debug, Clone)]
pub struct Context {
    env: Env,
    store: Option<String>,
    directory: Option<PathBuf>,
    /// `--cache <policy>` of the command, when it takes one.
    cache: Option<String>,
    /// The secrets of every change this invocation loaded: nothing it prints holds one.
    secrets: std::sync::Arc<std::sync::Mutex<Secrets>>,
    /// The invocation's runtime, made at its first use (a command that neither runs nor
    /// reaches a remote starts no thread). Every clone of the context shares it.
    runtime: std::sync::Arc<std::sync::OnceLock<Result<Shared, String>>>,
}

/// The invocation's runtime. When the last clone of the context goes (the report is out),
/// it is shut down without waiting for a blocking task still going (a name lookup past its
/// deadline, say): nothing is left that needs it.
#[derive(Debug)]
struct Shared(Option<tokio::runtime::Runtime>);

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Worker threads of the invocation's runtime.
///
/// Multi-thread, so that tonic's connection tasks (and the upload tasks of a run) progress
/// on the workers while any other thread is blocked in `Handle::block_on`: the executor's
/// loop, a pull, the upload thread. One gRPC channel then serves them all (a channel's
/// connection is a task of the runtime that made it, and a current-thread runtime drives
/// its tasks only while its own `block_on` runs). Two workers: the work on them is network
/// I/O and hashing of blobs being sent, and the machine is left to the providers.
const WORKERS: usize = 2;

impl Context {
    /// Builds the context from the process facts and the global options.
    pub fn new(mut env: Env, global: &Global) -> Self {
        if let Some(dir) = &global.directory {
            env.cwd = env.cwd.join(dir);
        }
        Self {
            env,
            store: global.store.clone(),
            directory: global.directory.clone(),
            cache: None,
            secrets: std::sync::Arc::default(),
            runtime: std::sync::Arc::default(),
        }
    }

    /// The invocation's tokio runtime, made once, at the first call; the layers below are
    /// handed its handle and never build one of their own.
    pub fn runtime(&self) -> Result<tokio::runtime::Handle, Diagnostic> {
        let made = self.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .thread_name("proofgraph-io")
                .enable_all()
                .build()
                .map(|runtime| Shared(Some(runtime)))
                .map_err(|e| e.to_string())
        });
        match made {
            Ok(Shared(Some(runtime))) => Ok(runtime.handle().clone()),
            Ok(Shared(None)) => Err(Diagnostic::error(
                Code::InternalError,
                "failed to start the async runtime: it was shut down",
            )),
            Err(e) => Err(Diagnostic::error(
                Code::InternalError,
                format!("failed to start the async runtime: {e}"),
            )),
        }
    }

    /// The context of a command given `--cache <policy>` (or not).
    pub fn with_cache_policy(mut self, policy: Option<String>) -> Self {
        self.cache = policy;
        self
    }

    /// `--cache <policy>`, when the command was given one.
    pub fn cache_policy(&self) -> Option<&str> {
        self.cache.as_deref()
    }

    /// Adds the secrets of a change this invocation loaded to those its output is
    /// redacted with.
    pub fn remember_secrets(&self, secrets: &Secrets) {
        self.secrets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .merge(secrets);
    }

    /// The secrets of every change this invocation loaded.
    pub fn secrets(&self) -> Secrets {
        self.secrets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The process's environment.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// `$PATH`, where commands' programs are found.
    pub fn path_var(&self) -> Option<&std::ffi::OsString> {
        self.env.path.as_ref()
    }

    /// Resolves the OpenSpec root; proofgraph's commands inspect and never
    /// create roots, so the current directory never stands in for one.
    pub fn resolve_root(&self) -> Result<Resolution, Diagnostic> {
        if let Some(dir) = &self.directory
            && !self.env.cwd.is_dir()
        {
            return Err(Diagnostic::error(
                Code::UsageError,
                format!("-C {}: not a directory", dir.display()),
            )
            .surface("cli.directory")
            .fix("Pass an existing directory to -C."));
        }
        root::resolve(&self.env, self.store.as_deref(), Implicit::Refused)
    }
}

/// The `root` object embedded in payloads, as OpenSpec prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootOutput {
    /// The root directory.
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// How it was chosen.
    pub source: root::Source,
    /// The store id when a store was selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_id: Option<String>,
}

impl From<&root::Root> for RootOutput {
    fn from(root: &root::Root) -> Self {
        Self {
            path: root.path.clone(),
            source: root.source,
            store_id: root.store_id.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        let env = Env {
            cwd: PathBuf::from("/nonexistent"),
            home: PathBuf::from("/nonexistent"),
            xdg_data_home: None,
            xdg_config_home: None,
            path: None,
            vars: std::collections::BTreeMap::new(),
        };
        let global = Global {
            json: false,
            directory: None,
            store: None,
        };
        Context::new(env, &global)
    }

    #[test]
    fn every_clone_of_a_context_shares_one_runtime() {
        let ctx = context();
        let first = ctx.runtime().expect("a runtime").id();
        let clone = ctx.clone().with_cache_policy(Some("local:rw".to_owned()));
        assert_eq!(clone.runtime().expect("a runtime").id(), first);
        assert_eq!(ctx.runtime().expect("a runtime").id(), first);
        assert_ne!(
            context().runtime().expect("a runtime").id(),
            first,
            "another invocation, another runtime"
        );
    }

    #[test]
    fn its_tasks_progress_while_no_thread_drives_it() {
        // What one gRPC channel for the whole invocation rests on: the connection's task
        // moves on while every caller's thread is busy elsewhere (a current-thread runtime
        // would leave it, and this task, waiting).
        let ctx = context();
        let handle = ctx.runtime().expect("a runtime");
        let (tx, rx) = std::sync::mpsc::channel();
        handle.spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let _ = tx.send(7);
        });
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)), Ok(7));
    }
}
