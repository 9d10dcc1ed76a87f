//! The commands, each a function from plain options to a [`Report`].
//!
//! Commands never print: they return a payload, diagnostics and a verdict,
//! and [`crate::output`] renders them.

pub mod doctor;
pub mod evaluate;
pub mod evidence;
pub mod explain;
pub mod graph;
pub mod hash;
pub mod key;
pub mod list;
pub mod plan;
pub mod prove;
pub mod receipt;
pub mod show;
pub mod status;
pub mod validate;
pub mod verify_ci;
pub mod watch;

use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::diagnostic::{Code, Diagnostic};
use crate::openspec::root::{self, Env, Implicit, Resolution};
use crate::output::{Mode, emit_redacted};
use crate::redact::Secrets;

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

/// Options of `validate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateOptions {
    /// One change, or every change when `None`.
    pub change: Option<String>,
    /// Treat warnings as failures.
    pub strict: bool,
}

/// A command and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `list`.
    List,
    /// `show <change>`.
    Show {
        /// The change.
        change: String,
    },
    /// `validate`.
    Validate(ValidateOptions),
    /// `doctor`.
    Doctor,
    /// `plan <change>`.
    Plan(plan::PlanOptions),
    /// `prove <change>`.
    Prove(prove::ProveOptions),
    /// `status <change>`.
    Status {
        /// The change.
        change: String,
        /// The sandbox mode the fingerprints assume.
        sandbox: Option<proofgraph_sandbox::SandboxMode>,
    },
    /// `explain <change> <provider>`.
    Explain {
        /// The change.
        change: String,
        /// The provider.
        provider: String,
        /// The sandbox mode the fingerprints assume.
        sandbox: Option<proofgraph_sandbox::SandboxMode>,
    },
    /// `hash <change> [<provider>]`.
    Hash {
        /// The change.
        change: String,
        /// One provider, or all.
        provider: Option<String>,
        /// The sandbox mode the fingerprints assume.
        sandbox: Option<proofgraph_sandbox::SandboxMode>,
    },
    /// `evidence verify-ci <change> <provider> <envelope>`.
    VerifyCi {
        /// The change.
        change: String,
        /// The `external` provider.
        provider: String,
        /// The DSSE envelope.
        envelope: PathBuf,
    },
    /// `evidence detect <change>`.
    EvidenceDetect {
        /// The change.
        change: String,
    },
    /// `evidence init <change> [--write]`.
    EvidenceInit {
        /// The change.
        change: String,
        /// Write the file instead of previewing.
        write: bool,
    },
    /// `evidence doctor <change>`.
    EvidenceDoctor {
        /// The change.
        change: String,
    },
    /// `watch`.
    Watch,
    /// `receipt verify <file|sha256>`.
    ReceiptVerify {
        /// A receipt file, or the SHA-256 of one in the store.
        receipt: String,
    },
    /// `key show`.
    KeyShow,
    /// `key pin <key id>`.
    KeyPin {
        /// The key id the user checked.
        keyid: crate::trust::KeyId,
    },
    /// `graph <change> --format`.
    Graph {
        /// The change.
        change: String,
        /// The picture format.
        format: graph::Format,
    },
}

/// What every command knows about its invocation.
#[derive(Debug, Clone)]
pub struct Context {
    env: Env,
    store: Option<String>,
    directory: Option<PathBuf>,
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
            secrets: std::sync::Arc::default(),
        }
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

/// Runs a command and renders its report; returns the exit code.
pub fn run(env: Env, global: &Global, command: Command) -> u8 {
    let mode = if global.json { Mode::Json } else { Mode::Human };
    let ctx = Context::new(env, global);
    // The report first, then the secrets the command learnt while making it.
    macro_rules! emit {
        ($mode:expr, $report:expr) => {{
            let report = $report;
            emit_redacted($mode, report, &ctx.secrets())
        }};
    }
    match command {
        Command::List => emit!(mode, list::run(&ctx)),
        Command::Show { change } => emit!(mode, show::run(&ctx, &change)),
        Command::Validate(options) => emit!(mode, validate::run(&ctx, &options)),
        Command::Doctor => emit!(mode, doctor::run(&ctx)),
        Command::Plan(options) => emit!(mode, plan::run(&ctx, &options)),
        Command::Graph { change, format } => emit!(mode, graph::run(&ctx, &change, format)),
        Command::Prove(options) => emit!(mode, prove::run(&ctx, &options)),
        Command::Status { change, sandbox } => emit!(mode, status::run(&ctx, &change, sandbox)),
        Command::Explain {
            change,
            provider,
            sandbox,
        } => emit!(mode, explain::run(&ctx, &change, &provider, sandbox)),
        Command::Hash {
            change,
            provider,
            sandbox,
        } => emit!(mode, hash::run(&ctx, &change, provider.as_deref(), sandbox)),
        Command::VerifyCi {
            change,
            provider,
            envelope,
        } => emit!(mode, verify_ci::run(&ctx, &change, &provider, &envelope)),
        Command::ReceiptVerify { receipt } => emit!(mode, receipt::verify(&ctx, &receipt)),
        Command::KeyShow => emit!(mode, key::show(&ctx)),
        Command::KeyPin { keyid } => emit!(mode, key::pin(&ctx, keyid)),
        Command::Watch => emit!(mode, watch::run(&ctx)),
        Command::EvidenceDetect { change } => emit!(mode, evidence::detect(&ctx, &change)),
        Command::EvidenceInit { change, write } => {
            emit!(mode, evidence::init(&ctx, &change, write))
        }
        Command::EvidenceDoctor { change } => emit!(mode, evidence::doctor(&ctx, &change)),
    }
}

/// Serializes a path as a string (lossily for non-UTF-8 paths, which JSON
/// cannot carry).
pub fn lossy_path<S: Serializer>(path: &std::path::Path, serializer: S) -> Result<S::Ok, S::Error> {
    path.to_string_lossy().serialize(serializer)
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
