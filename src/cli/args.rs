//! The command line, and the only module that knows clap.
//!
//! Parsed arguments are converted into the plain option structs of
//! [`crate::commands`] by destructuring every field, so that a flag added here
//! and not wired through is a compile error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use super::dispatch::{self, Command};
use crate::base::diagnostic::{Code, Diagnostic};
use crate::commands::{self, validate::ValidateOptions};
use crate::load::openspec::root::Env;
use crate::present::exit::{self, Verdict};
use crate::present::output::{Mode, Payload, Report, emit};
use crate::session::context::Global;

/// Proves the claims of a change in a spec-driven repository.
#[derive(Debug, Parser)]
#[command(
    name = "proofgraph",
    version,
    about = "Proves the claims of an OpenSpec change and keeps signed receipts of what was proven",
    after_help = "Exit codes: 0 proven/ok, 1 something failed, 2 not everything proven, 3 cannot evaluate, 130 interrupted.\nDiagnostics: docs/diagnostics.md"
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: CommandArgs,
}

#[derive(Debug, Args)]
struct GlobalArgs {
    /// Print exactly one JSON document on stdout (prose goes to stderr)
    #[arg(long, global = true)]
    json: bool,
    /// Run as if started in DIR
    #[arg(short = 'C', value_name = "DIR", global = true)]
    directory: Option<PathBuf>,
    /// Use the registered OpenSpec store ID as the root
    #[arg(long, value_name = "ID", global = true)]
    store: Option<String>,
}

#[derive(Debug, Subcommand)]
enum CommandArgs {
    /// List the changes with their claim counts and wiring files
    #[command(after_help = "Example:\n  proofgraph list --json")]
    List,
    /// Show a change's claims, providers and services
    #[command(after_help = "Example:\n  proofgraph show add-profile-page")]
    Show {
        /// The change (a directory under openspec/changes/)
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
    },
    /// Check a change's evidence.yaml and execution.yaml (and proofgraph.yaml)
    #[command(
        after_help = "Examples:\n  proofgraph validate add-profile-page\n  proofgraph validate --all --strict --json"
    )]
    Validate {
        /// The change to validate
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: Option<String>,
        /// Validate every change
        #[arg(long)]
        all: bool,
        /// Treat warnings as failures
        #[arg(long)]
        strict: bool,
    },
    /// Report the health of the OpenSpec root, its store and the workspace
    #[command(after_help = "Example:\n  proofgraph doctor --json")]
    Doctor,
    /// Keep the workspace's file snapshots current from file-system events until stopped, so commands started meanwhile skip an lstat per tracked file
    #[command(
        after_help = "Example:\n  proofgraph watch &          # then prove, plan, status ... as usual\n\nSIGINT or SIGTERM stops it; commands work the same without it. See docs/inputs.md."
    )]
    Watch,
    /// Run a Remote Execution API engine's actions (Remote Workers API), each in a hermetic sandbox, until stopped
    #[command(
        after_help = "Example:\n  proofgraph worker --server grpc://127.0.0.1:50051 --instance main --capacity 4\n\nAny engine's actions, not only proofgraph's: each in its own network, PID and mount namespaces, seeing its input root and the system's read-only directories. SIGINT or SIGTERM stops it (BOT_TERMINATING; running actions are killed and handed back). docs/remote-execution.md."
    )]
    Worker {
        /// The engine: grpc://host:port (or grpcs://), with the instance as its path or --instance
        #[arg(long, value_name = "URL")]
        server: String,
        /// The engine's instance name
        #[arg(long, value_name = "NAME")]
        instance: Option<String>,
        /// How many actions run at once
        #[arg(long, value_name = "N", default_value = "1")]
        capacity: std::num::NonZeroUsize,
        /// The bot id, stable across restarts [default: the host's name and a suffix kept in $XDG_STATE_HOME/proofgraph/worker]
        #[arg(long = "bot-id", value_name = "ID")]
        bot_id: Option<String>,
        /// A platform property actions are matched on (repeatable) [default: OSFamily and ISA of this host]
        #[arg(long = "property", value_name = "KEY=VALUE")]
        properties: Vec<String>,
    },
    /// Dry run: every node, its locks, dependencies, fingerprint and order
    #[command(
        after_help = "Examples:\n  proofgraph plan add-profile-page\n  proofgraph plan add-profile-page --jobs 1 --json\n  proofgraph plan add-profile-page --base origin/main            # the diff to the working tree\n  proofgraph plan add-profile-page --base origin/main --head HEAD --format markdown\n  proofgraph plan add-profile-page --base HEAD~1 --base api=origin/main   # api: a repository the parent does not record\n\nWith --base: the verification plan of a diff (affected providers and claims, and their status at the head); exit 0 all passed, 1 failed, 2 pending or stale, 3 cannot plan. docs/plan.md."
    )]
    Plan {
        /// The change to plan
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// How many providers may run at once [default: the number of CPUs]
        #[arg(long, short = 'j', value_name = "N", conflicts_with = "base")]
        jobs: Option<std::num::NonZeroUsize>,
        /// Which cache tiers to read and write, e.g. `local:rw,remote:r` [default: PROOFGRAPH_CACHE, else proofgraph.yaml's cache.policy, else local:rw,remote:r]
        #[arg(long, value_name = "POLICY")]
        cache: Option<String>,
        /// Plan the diff from this revision (a branch, tag, commit) of the OpenSpec root's repository, each submodule at the commit it records; `NAME=REV` gives repository NAME its own (repeatable)
        #[arg(long, value_name = "REV", action = clap::ArgAction::Append)]
        base: Vec<String>,
        /// The head revision, read from git's objects without a checkout, as --base [default: the working tree]
        #[arg(long, value_name = "REV", requires = "base", action = clap::ArgAction::Append)]
        head: Vec<String>,
        /// Print the plan of a diff as Markdown (a pull request comment)
        #[arg(
            long,
            value_enum,
            value_name = "FORMAT",
            conflicts_with = "json",
            requires = "base"
        )]
        format: Option<PlanFormatArg>,
        /// Where providers would run: `local`, `remote` (every eligible provider on proofgraph.yaml's executor) or `auto` (the same, falling back to local on a fault of the engine); the plan says where each would run and why not remotely
        #[arg(long, value_enum, default_value = "local", conflicts_with = "base")]
        executor: ExecutorArg,
        /// How many actions may be in flight on the engine at once, apart from --jobs (only with --executor remote or auto) [default: executor.remoteJobs, else --jobs]
        #[arg(long, value_name = "N", conflicts_with = "base")]
        remote_jobs: Option<std::num::NonZeroUsize>,
    },
    /// Run what is not yet proven, in sandboxes, and write signed receipts
    #[command(
        after_help = "Examples:\n  proofgraph prove add-profile-page\n  proofgraph prove add-profile-page --jobs 4 --sandbox copy --json\n  proofgraph prove add-profile-page --shard 1/3   # CI matrix: this job's third"
    )]
    Prove {
        /// The change to prove
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// How many providers may run at once [default: the number of CPUs]
        #[arg(long, short = 'j', value_name = "N")]
        jobs: Option<std::num::NonZeroUsize>,
        /// How each repository is presented to its commands [default: proofgraph.yaml's, else worktree]
        #[arg(long, value_enum)]
        sandbox: Option<SandboxArg>,
        /// Ignore existing receipts and run every provider
        #[arg(long)]
        no_cache: bool,
        /// Keep running independent providers after one fails
        #[arg(long)]
        keep_going: bool,
        /// Keep the sandboxes (under .proofgraph/runs/) after the run
        #[arg(long)]
        keep_sandbox: bool,
        /// Namespaces: `auto` uses them when the system allows, `required` refuses to run without, `none` runs unisolated
        #[arg(long, value_enum, default_value = "auto")]
        isolation: IsolationArg,
        /// Run only shard I of N (1-based), for a CI matrix sharing receipts
        #[arg(long, value_name = "I/N", value_parser = parse_shard)]
        shard: Option<(usize, std::num::NonZeroUsize)>,
        /// Say which providers are still running every SECONDS (0: never)
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        heartbeat: u64,
        /// Pass PROVIDER's output through to stderr as its command writes it
        #[arg(long, value_name = "PROVIDER")]
        stream: Option<String>,
        /// Which cache tiers to read and write, e.g. `local:rw,remote:r` [default: PROOFGRAPH_CACHE, else proofgraph.yaml's cache.policy, else local:rw,remote:r]
        #[arg(long, value_name = "POLICY")]
        cache: Option<String>,
        /// Where providers run: `local`, `remote` (every eligible provider on proofgraph.yaml's executor; a fault of the engine fails the run) or `auto` (the same, running a provider locally on a fault of the engine); see `plan --executor`
        #[arg(long, value_enum, default_value = "local")]
        executor: ExecutorArg,
        /// How many actions may be in flight on the engine at once, apart from --jobs (only with --executor remote or auto) [default: executor.remoteJobs, else --jobs]
        #[arg(long, value_name = "N")]
        remote_jobs: Option<std::num::NonZeroUsize>,
    },
    /// Claim × capability: passed, failed, inconclusive, stale or pending
    #[command(
        after_help = "Examples:\n  proofgraph status add-profile-page\n  proofgraph status add-profile-page --json\n  proofgraph status add-profile-page --format markdown >> \"$GITHUB_STEP_SUMMARY\"\n  proofgraph status add-profile-page --format junit > \"$RUNNER_TEMP/proofgraph.xml\"\n\nThe exit code is the same with or without --format. Write the JUnit file outside the checkout: an untracked file there is an input. CI reports: docs/ci.md."
    )]
    Status {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// The sandbox mode the fingerprints assume [default: proofgraph.yaml's, else worktree]
        #[arg(long, value_enum)]
        sandbox: Option<SandboxArg>,
        /// Which cache tiers to read and write, e.g. `local:rw,remote:r` [default: PROOFGRAPH_CACHE, else proofgraph.yaml's cache.policy, else local:rw,remote:r]
        #[arg(long, value_name = "POLICY")]
        cache: Option<String>,
        /// Print a CI report instead of text: a Markdown table (a job summary) or JUnit XML (test dashboards)
        #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
        format: Option<StatusFormatArg>,
    },
    /// Which components of a provider's fingerprint changed since its last receipt
    #[command(after_help = "Example:\n  proofgraph explain add-profile-page test")]
    Explain {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// The provider
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(provider_names))]
        provider: String,
        /// The sandbox mode the fingerprints assume
        #[arg(long, value_enum)]
        sandbox: Option<SandboxArg>,
    },
    /// Print the log a provider's command wrote, as its latest receipt keeps it
    #[command(
        after_help = "Examples:\n  proofgraph log add-profile-page e2e\n  proofgraph log add-profile-page e2e --receipt 07262d20d484f42f3fa9056836cd0b70938a0222f397250ac81007babba30540 --json"
    )]
    Log {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// The provider
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(provider_names))]
        provider: String,
        /// The receipt (its SHA-256) whose log to print [default: the provider's latest]
        #[arg(long, value_name = "SHA256")]
        receipt: Option<String>,
    },
    /// The binding hash an external signer must sign (SHA-256, hex)
    #[command(
        after_help = "Examples:\n  proofgraph hash add-profile-page review\n  proofgraph hash add-profile-page --json"
    )]
    Hash {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// One provider [default: every provider]
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(provider_names))]
        provider: Option<String>,
        /// The sandbox mode the fingerprints assume
        #[arg(long, value_enum)]
        sandbox: Option<SandboxArg>,
    },
    /// Wire a change from its repositories' manifests, and import results CI signed
    #[command(subcommand)]
    Evidence(EvidenceArgs),
    /// Check receipts on their own
    #[command(subcommand)]
    Receipt(ReceiptArgs),
    /// Re-execute the proof a receipt records, from the inputs it bound, and compare
    #[command(
        after_help = "Examples:\n  proofgraph rerun 07262d20d484f42f3fa9056836cd0b70938a0222f397250ac81007babba30540\n  proofgraph rerun receipt.dsse.json --times 5 --json\n\nExit 0 reproduced, 1 differs (result, counts, or flaky tests named), 3 when the receipt or its recorded inputs cannot be had. Writes no receipt unless --record. docs/rerun.md."
    )]
    Rerun {
        /// A receipt file, or the SHA-256 of a receipt in .proofgraph/
        receipt: String,
        /// How many fresh runs
        #[arg(long, value_name = "N", default_value = "1")]
        times: std::num::NonZeroUsize,
        /// Keep the runs' receipts in the store (signed with the workspace key)
        #[arg(long)]
        record: bool,
    },
    /// The store's signing key, and the pin outside the store that makes it trusted
    #[command(subcommand)]
    Key(KeyArgs),
    /// The remote cache by hand: upload or fetch a change's receipts; what the store holds
    #[command(subcommand)]
    Cache(CacheArgs),
    /// Draw the change's graph: providers, services, probes and their edges
    #[command(
        after_help = "Examples:\n  proofgraph graph add-profile-page --format dot | dot -Tsvg > graph.svg\n  proofgraph graph add-profile-page --format mermaid"
    )]
    Graph {
        /// The change to draw
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// The picture format
        #[arg(long, value_enum, default_value = "dot")]
        format: GraphFormat,
    },
    /// Print the shell completion script (subcommands, options, and the changes of the OpenSpec root you are in)
    #[command(
        after_help = "Install:\n  bash:  echo 'source <(proofgraph completions bash)' >> ~/.bashrc\n  zsh:   proofgraph completions zsh > \"${fpath[1]}/_proofgraph\"\n  fish:  proofgraph completions fish > ~/.config/fish/completions/proofgraph.fish\n\nThe script asks proofgraph at each TAB (PROOFGRAPH_COMPLETE=<shell> proofgraph -- <words>), so it stays true across upgrades."
    )]
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: ShellName,
    },
    /// Print the JSON Schema of execution.yaml, evidence.yaml or proofgraph.yaml, for an editor
    #[command(
        after_help = "Examples:\n  proofgraph schema execution > .vscode/proofgraph-execution.schema.json\n  # then, first line of execution.yaml:\n  # yaml-language-server: $schema=../../../.vscode/proofgraph-execution.schema.json\n\nThe shape only: what needs the whole change (a dependsOn naming no provider, a cycle) is `validate`'s."
    )]
    Schema {
        /// The file
        #[arg(value_enum)]
        kind: SchemaKind,
    },
    /// Print the man page (roff) of proofgraph, or of one of its commands
    #[command(
        after_help = "Examples:\n  proofgraph man | man -l -\n  proofgraph man prove | man -l -"
    )]
    Man {
        /// A command (its own page, `proofgraph-<command>(1)`)
        command: Option<String>,
    },
}

/// A file whose JSON Schema `schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SchemaKind {
    /// execution.yaml
    Execution,
    /// evidence.yaml
    Evidence,
    /// proofgraph.yaml
    Catalog,
}

/// A shell whose completion script `completions` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ShellName {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// The environment variable that makes proofgraph answer a completion request.
const COMPLETE_VAR: &str = "PROOFGRAPH_COMPLETE";

/// The completion script for `shell`: it calls `completer` back at each TAB.
fn completion_script(shell: ShellName, completer: &str) -> Result<String, String> {
    let name = match shell {
        ShellName::Bash => "bash",
        ShellName::Zsh => "zsh",
        ShellName::Fish => "fish",
        ShellName::Elvish => "elvish",
        ShellName::Powershell => "powershell",
    };
    let shells = clap_complete::env::Shells::builtins();
    let adapter = shells
        .completer(name)
        .ok_or_else(|| format!("no completion adapter for {name}"))?;
    let mut buf = Vec::new();
    adapter
        .write_registration(
            COMPLETE_VAR,
            "proofgraph",
            "proofgraph",
            completer,
            &mut buf,
        )
        .map_err(|e| e.to_string())?;
    String::from_utf8(buf).map_err(|e| e.to_string())
}

/// The program a completion script calls back: as it was started when that was by a path
/// (made absolute), else by name on `PATH`.
fn completer_path() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let path = std::path::Path::new(&argv0);
    if path.components().count() > 1 {
        std::path::absolute(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .to_string_lossy()
            .into_owned()
    } else {
        "proofgraph".to_owned()
    }
}

/// The man page of `proofgraph`, or of one of its commands (`proofgraph-prove`), as git
/// has `git-commit(1)`.
fn man_page(command: Option<&str>) -> Result<String, String> {
    use clap::CommandFactory as _;
    let mut top = Cli::command();
    top.build();
    let page = match command {
        None => top,
        Some(name) => top
            .get_subcommands()
            .find(|c| c.get_name() == name && !c.is_hide_set())
            .cloned()
            .ok_or_else(|| format!("there is no command `{name}`"))?
            .name(format!("proofgraph-{name}"))
            .bin_name(format!("proofgraph {name}"))
            .version(env!("CARGO_PKG_VERSION")),
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut buf)
        .map_err(|e| e.to_string())?;
    String::from_utf8(buf).map_err(|e| e.to_string())
}

/// The words of the command line being completed (what the shell passed after `--`).
fn completion_words() -> Vec<String> {
    std::env::args().skip_while(|a| a != "--").skip(1).collect()
}

/// The OpenSpec root the line being completed will run in, found as the command will find
/// it (`root::resolve`, the one root finder): from the working directory or the one its
/// `-C <dir>` names, with the store its `--store <id>` names. None when the command would
/// find none.
fn completion_root() -> Option<PathBuf> {
    let mut env = process_env().ok()?;
    let mut store = None;
    let words = completion_words();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let dir = match word.strip_prefix("-C") {
            Some("") => words.next().map(String::as_str),
            Some(dir) => Some(dir),
            None => None,
        };
        if let Some(dir) = dir {
            env.cwd = env.cwd.join(dir);
        } else if word == "--store" {
            store = words.next().cloned();
        } else if let Some(id) = word.strip_prefix("--store=") {
            store = Some(id.to_owned());
        }
    }
    crate::load::openspec::root::resolve(
        &env,
        store.as_deref(),
        crate::load::openspec::root::Implicit::Refused,
    )
    .ok()
    .map(|resolution| resolution.root.path)
}

/// The changes of the OpenSpec root the line being completed runs in, for completion
/// (`archive/` and hidden directories left out).
fn change_names() -> Vec<clap_complete::engine::CompletionCandidate> {
    changes_here()
        .into_iter()
        .map(clap_complete::engine::CompletionCandidate::new)
        .collect()
}

/// The providers of the change the command line being completed names (the words the
/// shell passed after `--`): the keys of `providers` in its `execution.yaml` and
/// `evidence.yaml`, as written (providers derived from manifests are `show`'s to list).
fn provider_names() -> Vec<clap_complete::engine::CompletionCandidate> {
    let Some(root) = completion_root() else {
        return Vec::new();
    };
    let changes = changes_here();
    let words = completion_words();
    let Some(change) = words.iter().find(|w| changes.contains(w)) else {
        return Vec::new();
    };
    let mut names = std::collections::BTreeSet::new();
    for file in ["execution.yaml", "evidence.yaml"] {
        let path = root.join("openspec/changes").join(change).join(file);
        if let Ok(doc) = crate::load::config::load::read_document(&path, file)
            && let Some(entries) = doc.root.get("providers").and_then(|n| n.as_map())
        {
            names.extend(entries.iter().map(|(key, _)| key.name.clone()));
        }
    }
    names
        .into_iter()
        .map(clap_complete::engine::CompletionCandidate::new)
        .collect()
}

/// The names of the changes of the OpenSpec root the line being completed runs in, sorted.
fn changes_here() -> Vec<String> {
    let Some(root) = completion_root() else {
        return Vec::new();
    };
    let mut names: Vec<String> = fs_err::read_dir(root.join("openspec/changes"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n != "archive" && !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[derive(Debug, Subcommand)]
enum ReceiptArgs {
    /// Verify a receipt: signed by a trusted key, what it proves, and whether it still holds
    #[command(
        after_help = "Examples:\n  proofgraph receipt verify receipt.dsse.json\n  proofgraph receipt verify 07262d20d484f42f3fa9056836cd0b70938a0222f397250ac81007babba30540 --json"
    )]
    Verify {
        /// A receipt file, or the SHA-256 of a receipt in .proofgraph/
        receipt: String,
    },
}

#[derive(Debug, Subcommand)]
enum CacheArgs {
    /// Upload the change's current receipts (with their logs, reports and input listings) to the remote cache
    #[command(
        after_help = "Example:\n  PROOFGRAPH_CACHE_AUTH=... proofgraph cache push add-profile-page"
    )]
    Push {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
    },
    /// Fetch the receipts the remote cache has for the change's current fingerprints (checked before they are kept)
    #[command(
        after_help = "Example:\n  proofgraph cache pull add-profile-page && proofgraph status add-profile-page"
    )]
    Pull {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
    },
    /// Count what the local store holds, and name the remote cache
    #[command(after_help = "Example:\n  proofgraph cache stats --json")]
    Stats,
    /// Remove from the local store what no change needs: never a receipt current (or latest) for some change, nor a blob it names
    #[command(
        after_help = "Examples:\n  proofgraph cache gc\n  proofgraph cache gc --keep 7d --max-size 2G\n\nA blob younger than an hour is never removed: a prove running now writes its blobs before the entries that name them."
    )]
    Gc {
        /// Keep blobs younger than this (`30d`, `12h`, `45m`, `90s`; at least 1h)
        #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = commands::cache::parse_duration)]
        keep: std::time::Duration,
        /// Then remove the oldest removable blobs until the rest weigh at most this (`500M`, `2G`, bytes)
        #[arg(long, value_name = "BYTES", value_parser = commands::cache::parse_size)]
        max_size: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
enum KeyArgs {
    /// Print the store's key id, public key and whether it is trusted (pinned)
    #[command(
        after_help = "Examples:\n  proofgraph key show\n  proofgraph key show --json\n\nThe threat model: docs/threat-model.md."
    )]
    Show,
    /// Trust the store's key after checking it: pins its id in ~/.config/proofgraph (XDG_CONFIG_HOME)
    #[command(
        after_help = "Example:\n  proofgraph key pin sha256:3f1c...   # the id `proofgraph key show` printed, once you checked it\n\nOnly the store's key is pinned, and only when its id is the one given."
    )]
    Pin {
        /// The store key's id, `sha256:<64 hex digits>`, as `key show` prints it
        #[arg(value_name = "KEY_ID", value_parser = parse_key_id)]
        keyid: crate::proof::trust::KeyId,
    },
}

/// Parses a key id argument (`sha256:<hex>`).
fn parse_key_id(text: &str) -> Result<crate::proof::trust::KeyId, String> {
    crate::proof::trust::KeyId::parse(text)
}

#[derive(Debug, Subcommand)]
enum EvidenceArgs {
    /// Propose providers from package.json, Cargo.toml, pyproject.toml, go.mod and Playwright configs, running nothing
    #[command(after_help = "Example:\n  proofgraph evidence detect add-profile-page --json")]
    Detect {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
    },
    /// Preview (or with --write, add) the high-confidence providers; existing ones keep every byte
    #[command(
        after_help = "Examples:\n  proofgraph evidence init add-profile-page\n  proofgraph evidence init add-profile-page --write && proofgraph prove add-profile-page\n  proofgraph evidence init add-profile-page --claims-from-specs --write\n\nThe evidence.yaml format and the capability names are in docs/evidence.md."
    )]
    Init {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// Write execution.yaml (and, with --claims-from-specs, create evidence.yaml) instead of previewing
        #[arg(long)]
        write: bool,
        /// Without evidence.yaml, draft one claim per scenario of the change's delta specs (specs/**/spec.md), each requiring `test`; an existing evidence.yaml is never changed
        #[arg(long)]
        claims_from_specs: bool,
    },
    /// What still stands between the change and a proof run, each with its fix
    #[command(after_help = "Example:\n  proofgraph evidence doctor add-profile-page")]
    Doctor {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
    },
    /// Accept a signed CI result for an `external` provider, after checking it completely
    #[command(
        name = "verify-ci",
        after_help = "Example:\n  proofgraph evidence verify-ci add-profile-page ci-e2e ci-result.dsse.json\n\nWhat CI must sign is described in docs/external.md."
    )]
    VerifyCi {
        /// The change
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(change_names))]
        change: String,
        /// The `external` provider the result is for
        #[arg(add = clap_complete::engine::ArgValueCandidates::new(provider_names))]
        provider: String,
        /// The DSSE envelope (JSON) CI produced
        envelope: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum IsolationArg {
    Auto,
    Required,
    None,
}

/// Parses `--shard I/N` (1-based on the command line, 0-based inside).
fn parse_shard(text: &str) -> Result<(usize, std::num::NonZeroUsize), String> {
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("`{text}` is not I/N (for example 1/3)"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("`{i}` is not a number"))?;
    let n: std::num::NonZeroUsize = n
        .trim()
        .parse()
        .map_err(|_| format!("`{n}` is not a positive number"))?;
    if i == 0 || i > n.get() {
        return Err(format!("shard {i} is not between 1 and {n}"));
    }
    Ok((i - 1, n))
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SandboxArg {
    Worktree,
    Copy,
    None,
}

impl SandboxArg {
    fn mode(self) -> proofgraph_sandbox::SandboxMode {
        match self {
            SandboxArg::Worktree => proofgraph_sandbox::SandboxMode::Worktree,
            SandboxArg::Copy => proofgraph_sandbox::SandboxMode::Copy,
            SandboxArg::None => proofgraph_sandbox::SandboxMode::None,
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum StatusFormatArg {
    Markdown,
    Junit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExecutorArg {
    Local,
    Remote,
    Auto,
}

impl ExecutorArg {
    fn choice(self) -> commands::prove::ExecutorChoice {
        match self {
            ExecutorArg::Local => commands::prove::ExecutorChoice::Local,
            ExecutorArg::Remote => commands::prove::ExecutorChoice::Remote,
            ExecutorArg::Auto => commands::prove::ExecutorChoice::Auto,
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PlanFormatArg {
    Markdown,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum GraphFormat {
    Dot,
    Mermaid,
    Json,
}

impl Cli {
    /// Refuses what clap's own checks let through: `--json` written before the
    /// subcommand with `status --format` after it (clap checks a subcommand's
    /// `conflicts_with` only against arguments given after the subcommand).
    fn checked(self) -> Result<Self, clap::Error> {
        use clap::CommandFactory as _;
        if let CommandArgs::Status {
            format: Some(_), ..
        }
        | CommandArgs::Plan {
            format: Some(_), ..
        } = &self.command
            && self.global.json
        {
            return Err(Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "the argument '--format <FORMAT>' cannot be used with '--json'",
            ));
        }
        // `--remote-jobs` bounds remote actions: with `--executor local` (the default) there
        // are none, and a bound that bounds nothing is refused rather than ignored.
        if let CommandArgs::Prove {
            executor: ExecutorArg::Local,
            remote_jobs: Some(_),
            ..
        }
        | CommandArgs::Plan {
            executor: ExecutorArg::Local,
            remote_jobs: Some(_),
            ..
        } = &self.command
        {
            return Err(Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "the argument '--remote-jobs <N>' needs '--executor remote' or '--executor auto'",
            ));
        }
        if let CommandArgs::Man {
            command: Some(name),
        } = &self.command
        {
            let mut command = Cli::command();
            let names: Vec<String> = command
                .get_subcommands()
                .filter(|c| !c.is_hide_set() && c.get_name() != "help")
                .map(|c| c.get_name().to_owned())
                .collect();
            if !names.contains(name) {
                return Err(command.error(
                    clap::error::ErrorKind::InvalidValue,
                    format!(
                        "there is no command `{name}` (one of: {})",
                        names.join(", ")
                    ),
                ));
            }
        }
        Ok(self)
    }

    /// Converts parsed arguments into the options the commands take.
    fn into_command(self) -> (Global, Command) {
        let Cli {
            global:
                GlobalArgs {
                    json,
                    directory,
                    store,
                },
            command,
        } = self;
        let global = Global {
            json,
            directory,
            store,
        };
        let command = match command {
            CommandArgs::List => Command::List,
            CommandArgs::Show { change } => Command::Show { change },
            CommandArgs::Validate {
                change,
                all,
                strict,
            } => Command::Validate(ValidateOptions {
                change: if all { None } else { change },
                strict,
            }),
            CommandArgs::Doctor => Command::Doctor,
            CommandArgs::Plan {
                change,
                jobs,
                cache,
                base,
                executor,
                remote_jobs,
                ..
            } if base.is_empty() => Command::Plan(commands::plan::PlanOptions {
                change,
                jobs,
                cache,
                executor: executor.choice(),
                remote_jobs,
            }),
            // clap refuses `--jobs`, `--executor` and `--remote-jobs` with `--base`.
            CommandArgs::Plan {
                change,
                jobs: _,
                cache,
                base,
                head,
                format,
                executor: _,
                remote_jobs: _,
            } => Command::PlanRefs {
                options: commands::plan::refs::RefsOptions { change, base, head },
                cache,
                markdown: matches!(format, Some(PlanFormatArg::Markdown)),
            },
            CommandArgs::Prove {
                change,
                jobs,
                sandbox,
                no_cache,
                keep_going,
                keep_sandbox,
                isolation,
                shard,
                heartbeat,
                stream,
                cache,
                executor,
                remote_jobs,
            } => Command::Prove(commands::prove::ProveOptions {
                change,
                jobs,
                sandbox: sandbox.map(SandboxArg::mode),
                no_cache,
                keep_going,
                keep_sandbox,
                isolation: match isolation {
                    IsolationArg::Auto => proofgraph_sandbox::IsolationRequest::Auto,
                    IsolationArg::Required => proofgraph_sandbox::IsolationRequest::Required,
                    IsolationArg::None => proofgraph_sandbox::IsolationRequest::Disabled,
                },
                shard,
                heartbeat,
                stream,
                cache,
                executor: executor.choice(),
                remote_jobs,
            }),
            CommandArgs::Status {
                change,
                sandbox,
                cache,
                format,
            } => Command::Status {
                change,
                sandbox: sandbox.map(SandboxArg::mode),
                cache,
                format: format.map(|f| match f {
                    StatusFormatArg::Markdown => commands::status::Format::Markdown,
                    StatusFormatArg::Junit => commands::status::Format::Junit,
                }),
            },
            CommandArgs::Explain {
                change,
                provider,
                sandbox,
            } => Command::Explain {
                change,
                provider,
                sandbox: sandbox.map(SandboxArg::mode),
            },
            CommandArgs::Log {
                change,
                provider,
                receipt,
            } => Command::Log {
                change,
                provider,
                receipt,
            },
            CommandArgs::Hash {
                change,
                provider,
                sandbox,
            } => Command::Hash {
                change,
                provider,
                sandbox: sandbox.map(SandboxArg::mode),
            },
            CommandArgs::Watch => Command::Watch,
            CommandArgs::Worker {
                server,
                instance,
                capacity,
                bot_id,
                properties,
            } => Command::Worker(commands::worker::WorkerCommandOptions {
                server,
                instance,
                capacity,
                bot_id,
                properties,
            }),
            CommandArgs::Receipt(ReceiptArgs::Verify { receipt }) => {
                Command::ReceiptVerify { receipt }
            }
            CommandArgs::Rerun {
                receipt,
                times,
                record,
            } => Command::Rerun(commands::rerun::RerunOptions {
                receipt,
                times,
                record,
            }),
            CommandArgs::Cache(CacheArgs::Push { change }) => Command::CachePush { change },
            CommandArgs::Cache(CacheArgs::Pull { change }) => Command::CachePull { change },
            CommandArgs::Cache(CacheArgs::Stats) => Command::CacheStats,
            CommandArgs::Cache(CacheArgs::Gc { keep, max_size }) => {
                Command::CacheGc { keep, max_size }
            }
            CommandArgs::Key(KeyArgs::Show) => Command::KeyShow,
            CommandArgs::Key(KeyArgs::Pin { keyid }) => Command::KeyPin { keyid },
            CommandArgs::Evidence(EvidenceArgs::Detect { change }) => {
                Command::EvidenceDetect { change }
            }
            CommandArgs::Evidence(EvidenceArgs::Init {
                change,
                write,
                claims_from_specs,
            }) => Command::EvidenceInit {
                change,
                write,
                claims_from_specs,
            },
            CommandArgs::Evidence(EvidenceArgs::Doctor { change }) => {
                Command::EvidenceDoctor { change }
            }
            CommandArgs::Evidence(EvidenceArgs::VerifyCi {
                change,
                provider,
                envelope,
            }) => Command::VerifyCi {
                change,
                provider,
                envelope,
            },
            CommandArgs::Completions { shell } => Command::Completions {
                shell: format!("{shell:?}").to_lowercase(),
                script: completion_script(shell, &completer_path()),
            },
            CommandArgs::Schema { kind } => Command::Schema(match kind {
                SchemaKind::Execution => crate::load::config::schema::Kind::Execution,
                SchemaKind::Evidence => crate::load::config::schema::Kind::Evidence,
                SchemaKind::Catalog => crate::load::config::schema::Kind::Catalog,
            }),
            CommandArgs::Man { command } => Command::Man {
                page: man_page(command.as_deref()),
                command,
            },
            CommandArgs::Graph { change, format } => Command::Graph {
                change,
                format: match format {
                    GraphFormat::Dot => commands::graph::Format::Dot,
                    GraphFormat::Mermaid => commands::graph::Format::Mermaid,
                    GraphFormat::Json => commands::graph::Format::Json,
                },
            },
        };
        (global, command)
    }
}

/// The whole program: parse, run, and return the exit code.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Re-executed as a run's init: nothing else happens in this process.
    if args
        .get(1)
        .is_some_and(|a| a == proofgraph_sandbox::INIT_ARG)
    {
        proofgraph_sandbox::init_main();
    }
    // A completion request (`PROOFGRAPH_COMPLETE=<shell> proofgraph -- <words>`, from the
    // script `completions` prints) is answered and nothing else happens.
    {
        use clap::CommandFactory as _;
        clap_complete::CompleteEnv::with_factory(Cli::command)
            .var(COMPLETE_VAR)
            .complete();
    }
    let json = args.iter().skip(1).any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args).and_then(Cli::checked) {
        Ok(cli) => cli,
        Err(err) => return ExitCode::from(usage_error(&err, json)),
    };
    let (global, command) = cli.into_command();
    let env = match process_env() {
        Ok(env) => env,
        Err(d) => {
            return ExitCode::from(emit(
                mode(global.json),
                Report::<Empty>::failed(vec![d], Verdict::Invalid),
            ));
        }
    };
    let code = std::panic::catch_unwind(|| {
        // Debug builds can be made to fail here, so that the test suite
        // proves a panic still yields one JSON document and exit 3.
        #[cfg(debug_assertions)]
        if std::env::var_os("PROOFGRAPH_DEBUG_PANIC").is_some() {
            panic!("PROOFGRAPH_DEBUG_PANIC is set");
        }
        dispatch::run(env, &global, command)
    })
    .unwrap_or_else(|_| {
        let d = Diagnostic::error(
            Code::InternalError,
            "proofgraph failed unexpectedly; this is a bug",
        )
        .fix("Report the command and its input; the panic message above says where it failed.");
        emit(
            mode(global.json),
            Report::<Empty>::failed(vec![d], Verdict::Invalid),
        )
    });
    ExitCode::from(code)
}

fn mode(json: bool) -> Mode {
    if json { Mode::Json } else { Mode::Human }
}

/// The payload of a document that has nothing but `status`.
#[derive(Debug, Default, serde::Serialize)]
struct Empty {}

impl Payload for Empty {
    fn human(&self, _out: &mut String) {}
}

/// Reports a command line clap could not parse. `--help` and `--version` are
/// not errors: clap prints them and proofgraph exits 0.
fn usage_error(err: &clap::Error, json: bool) -> u8 {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        // Help asked for is a success; help shown because a subcommand is missing is a
        // command line that cannot be evaluated.
        return exit::process_exit_code(
            if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                Verdict::Invalid
            } else {
                Verdict::Success
            },
        );
    }
    if !json {
        let _ = err.print();
        return exit::process_exit_code(Verdict::Invalid);
    }
    let rendered = err.render().to_string();
    let message = rendered
        .lines()
        .next()
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_owned();
    let d = Diagnostic::error(Code::UsageError, message)
        .surface("cli")
        .fix("Run `proofgraph --help` for usage.");
    emit(
        Mode::Json,
        Report::<Empty>::failed(vec![d], Verdict::Invalid),
    )
}

/// Reads the facts about the process that commands depend on, once.
fn process_env() -> Result<Env, Diagnostic> {
    let cwd = std::env::current_dir().map_err(|err| {
        Diagnostic::error(
            Code::UsageError,
            format!("failed to read the current directory: {err}"),
        )
        .surface("cli.directory")
        .fix("Run proofgraph from an existing directory, or pass -C <dir>.")
    })?;
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME")
        .or_else(std::env::home_dir)
        .unwrap_or_else(|| PathBuf::from("/"));
    Ok(Env {
        cwd,
        home,
        xdg_data_home: var("XDG_DATA_HOME"),
        xdg_config_home: var("XDG_CONFIG_HOME"),
        path: std::env::var_os("PATH"),
        vars: std::env::vars_os().collect(),
    })
}
