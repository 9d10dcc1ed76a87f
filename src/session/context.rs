//! What every command knows about its invocation: the process's environment, the global
//! options, the OpenSpec root they select, and the secrets learnt on the way.

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
}

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
