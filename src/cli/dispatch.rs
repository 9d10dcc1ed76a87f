//! From a parsed command to its report on the terminal: the one place that knows every
//! command.

use std::path::PathBuf;

use crate::commands::validate::ValidateOptions;
use crate::commands::{
    cache, doctor, evidence, explain, graph, hash, key, list, log, plan, prove, receipt, rerun,
    schema, shell, show, status, validate, verify_ci, watch, worker,
};
use crate::load::openspec::root::Env;
use crate::present::output::{Mode, emit_redacted};
use crate::session::context::{Context, Global};

/// A command and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `list`.
    List,
    /// `completions <shell>`: the script, made by the command line.
    Completions {
        /// The shell.
        shell: String,
        /// The script, or why it could not be made.
        script: Result<String, String>,
    },
    /// `schema <kind>`.
    Schema(crate::load::config::schema::Kind),
    /// `man [<command>]`: the page, made by the command line.
    Man {
        /// The command whose page it is.
        command: Option<String>,
        /// The page, or why it could not be made.
        page: Result<String, String>,
    },
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
    /// `plan --base`: the verification plan of a diff.
    PlanRefs {
        /// What to compare.
        options: plan::refs::RefsOptions,
        /// `--cache <policy>`.
        cache: Option<String>,
        /// `--format markdown`.
        markdown: bool,
    },
    /// `prove <change>`.
    Prove(prove::ProveOptions),
    /// `status <change>`.
    Status {
        /// The change.
        change: String,
        /// The sandbox mode the fingerprints assume.
        sandbox: Option<proofgraph_sandbox::SandboxMode>,
        /// `--cache <policy>`.
        cache: Option<String>,
        /// `--format markdown|junit`: a CI report instead of the text or JSON.
        format: Option<status::Format>,
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
    /// `log <change> <provider> [--receipt <sha256>]`.
    Log {
        /// The change.
        change: String,
        /// The provider.
        provider: String,
        /// A receipt's SHA-256 (default: the provider's latest).
        receipt: Option<String>,
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
    /// `evidence init <change> [--write] [--claims-from-specs]`.
    EvidenceInit {
        /// The change.
        change: String,
        /// Write the file instead of previewing.
        write: bool,
        /// Draft `evidence.yaml` from the delta specs when there is none.
        claims_from_specs: bool,
    },
    /// `evidence doctor <change>`.
    EvidenceDoctor {
        /// The change.
        change: String,
    },
    /// `watch`.
    Watch,
    /// `worker --server URL ...`.
    Worker(worker::WorkerCommandOptions),
    /// `rerun <receipt>`.
    Rerun(rerun::RerunOptions),
    /// `receipt verify <file|sha256>`.
    ReceiptVerify {
        /// A receipt file, or the SHA-256 of one in the store.
        receipt: String,
    },
    /// `key show`.
    KeyShow,
    /// `cache push <change>`.
    CachePush {
        /// The change.
        change: String,
    },
    /// `cache pull <change>`.
    CachePull {
        /// The change.
        change: String,
    },
    /// `cache stats`.
    CacheStats,
    /// `cache gc [--keep D] [--max-size B]`.
    CacheGc {
        /// Blobs younger than this stay.
        keep: std::time::Duration,
        /// The most the kept blobs may weigh.
        max_size: Option<u64>,
    },
    /// `key pin <key id>`.
    KeyPin {
        /// The key id the user checked.
        keyid: crate::proof::trust::KeyId,
    },
    /// `graph <change> --format`.
    Graph {
        /// The change.
        change: String,
        /// The picture format.
        format: graph::Format,
    },
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
        Command::Completions { shell, script } => {
            emit!(mode, shell::completions(&shell, script))
        }
        Command::Man { command, page } => emit!(mode, shell::man(command, page)),
        Command::Schema(kind) => emit!(mode, schema::run(kind)),
        Command::Show { change } => emit!(mode, show::run(&ctx, &change)),
        Command::Validate(options) => emit!(mode, validate::run(&ctx, &options)),
        Command::Doctor => emit!(mode, doctor::run(&ctx)),
        Command::Plan(options) => {
            let ctx = ctx.clone().with_cache_policy(options.cache.clone());
            emit!(mode, plan::run(&ctx, &options))
        }
        Command::PlanRefs {
            options,
            cache,
            markdown: false,
        } => {
            let ctx = ctx.clone().with_cache_policy(cache);
            emit!(mode, plan::refs::run(&ctx, &options))
        }
        Command::PlanRefs {
            options,
            cache,
            markdown: true,
        } => {
            let ctx = ctx.clone().with_cache_policy(cache);
            let report = plan::refs::run(&ctx, &options);
            emit!(mode, plan::refs::document(report, &ctx.secrets()))
        }
        Command::Graph { change, format } => emit!(mode, graph::run(&ctx, &change, format)),
        Command::Prove(options) => {
            let ctx = ctx.clone().with_cache_policy(options.cache.clone());
            emit!(mode, prove::run(&ctx, &options))
        }
        Command::Status {
            change,
            sandbox,
            cache,
            format: None,
        } => {
            let ctx = ctx.clone().with_cache_policy(cache);
            emit!(mode, status::run(&ctx, &change, sandbox))
        }
        Command::Status {
            change,
            sandbox,
            cache,
            format: Some(format),
        } => {
            let ctx = ctx.clone().with_cache_policy(cache);
            emit!(
                mode,
                status::document(&ctx, &change, format, status::run(&ctx, &change, sandbox))
            )
        }
        Command::Explain {
            change,
            provider,
            sandbox,
        } => emit!(mode, explain::run(&ctx, &change, &provider, sandbox)),
        Command::Log {
            change,
            provider,
            receipt,
        } => emit!(mode, log::run(&ctx, &change, &provider, receipt.as_deref())),
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
        Command::Rerun(options) => emit!(mode, rerun::run(&ctx, &options)),
        Command::KeyShow => emit!(mode, key::show(&ctx)),
        Command::CachePush { change } => emit!(mode, cache::push(&ctx, &change)),
        Command::CachePull { change } => emit!(mode, cache::pull(&ctx, &change)),
        Command::CacheStats => emit!(mode, cache::stats(&ctx)),
        Command::CacheGc { keep, max_size } => emit!(mode, cache::gc(&ctx, keep, max_size)),
        Command::KeyPin { keyid } => emit!(mode, key::pin(&ctx, keyid)),
        Command::Watch => emit!(mode, watch::run(&ctx)),
        Command::Worker(options) => emit!(mode, worker::run(&ctx, &options)),
        Command::EvidenceDetect { change } => emit!(mode, evidence::detect(&ctx, &change)),
        Command::EvidenceInit {
            change,
            write,
            claims_from_specs,
        } => emit!(
            mode,
            evidence::init(&ctx, &change, write, claims_from_specs)
        ),
        Command::EvidenceDoctor { change } => emit!(mode, evidence::doctor(&ctx, &change)),
    }
}
