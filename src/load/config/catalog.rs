//! `proofgraph.yaml`: the optional workspace catalog at the OpenSpec root.
//!
//! It names the repositories of the workspace (each a directory, possibly
//! outside the root), how a fresh sandbox of each is set up, the default
//! sandbox mode, the receipt keys the workspace trusts and the remote cache.
//! Without it the workspace is one repository, `root`, the directory that
//! holds `openspec/`.

use std::collections::BTreeMap;

use proofgraph_graph::{EnvName, RepoId};
use proofgraph_sandbox::SandboxMode;

use super::caches::{CacheKind, judged_by_mtime};
use super::decode::{
    self, Field, Sink, Spanned, fields, ident, ident_str, keys, list, missing, nonempty_string,
    one_of,
};
use super::execution::{argv, check_version};
use crate::base::diagnostic::Code;
use crate::syntax::node::Node;

/// The catalog's file name, at the OpenSpec root.
pub const FILE_NAME: &str = "proofgraph.yaml";

/// One repository of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The repository's id.
    pub id: Spanned<RepoId>,
    /// Its directory, relative to the OpenSpec root.
    pub path: Spanned<String>,
    /// Commands run once in each fresh sandbox of the repository.
    pub setup: Option<Vec<Spanned<Vec<String>>>>,
    /// Directories setup produces that the store keeps and restores.
    pub setup_cache: Option<Vec<Spanned<String>>>,
    /// The files a cached setup sees (patterns relative to the repository); `None`: the
    /// ecosystems' manifests and lockfiles (`run::setup::SETUP_INPUTS`).
    pub setup_inputs: Option<Vec<Spanned<String>>>,
    /// Build and download caches its jobs keep across runs (`caches`), each a tool's
    /// cache keyed by content ([`super::caches`]).
    pub caches: Vec<Spanned<CacheKind>>,
}

/// A receipt-signing key the workspace trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// A name for the key (`ci`).
    pub name: Spanned<String>,
    /// The Ed25519 public key, PEM (SPKI).
    pub public_key: Spanned<String>,
}

/// Access to one cache tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheAccess {
    /// Read and write.
    ReadWrite,
    /// Read only.
    Read,
    /// Write only.
    Write,
    /// Not used.
    Off,
}

/// The remote cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// The remote cache's URL: `grpc://host:port[/instance]`, `grpcs://…` (the Remote
    /// Execution API) or `http(s)://host[:port]/prefix` (the Bazel HTTP cache protocol).
    pub remote: Option<Spanned<String>>,
    /// The policy as written, when `policy` is given.
    pub policy: Option<Spanned<String>>,
    /// Access to the local store.
    pub local_access: CacheAccess,
    /// Access to the remote cache.
    pub remote_access: CacheAccess,
    /// Headers (gRPC metadata) to send, each with the environment variable holding its
    /// value: names only, never values.
    pub headers_from_env: Vec<(Spanned<String>, Spanned<EnvName>)>,
    /// How long to wait for a connection, in milliseconds.
    pub connect_timeout_ms: Option<Spanned<u64>>,
    /// How long one request (or one chunk of a stream) may take, in milliseconds.
    pub timeout_ms: Option<Spanned<u64>>,
    /// The slowest transfer waited for, in bytes per second: with the timeouts, the
    /// overall deadline of every operation on the remote.
    pub min_bytes_per_second: Option<Spanned<u64>>,
}

/// The remote executor (`executor`): a Remote Execution API engine that runs the
/// providers `prove --executor remote|auto` hands it (docs/remote-execution.md). Reached
/// with the cache's rules: the same `headersFromEnv`, deadlines, TLS and proxies
/// ([`crate::store::remote::Settings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executor {
    /// The engine's URL: `grpc://host:port[/instance]` or `grpcs://…` (required).
    pub remote: Spanned<String>,
    /// Platform properties every action asks for (`OSFamily: linux`), by name: what an
    /// engine matches workers by.
    pub platform: BTreeMap<String, Spanned<String>>,
    /// How many actions may be in flight on the engine at once (`--remote-jobs`
    /// overrides it), apart from `--jobs`.
    pub remote_jobs: Option<Spanned<u64>>,
    /// Headers (gRPC metadata) to send, each with the environment variable holding its
    /// value: names only, never values.
    pub headers_from_env: Vec<(Spanned<String>, Spanned<EnvName>)>,
    /// How long to wait for a connection, in milliseconds.
    pub connect_timeout_ms: Option<Spanned<u64>>,
    /// How long one request (or one chunk of a stream) may take, in milliseconds.
    pub timeout_ms: Option<Spanned<u64>>,
    /// The slowest transfer waited for, in bytes per second.
    pub min_bytes_per_second: Option<Spanned<u64>>,
}

/// How much of each job's log a receipt keeps (`logs`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Logs {
    /// A log longer than this many bytes is kept as its first and last halves of it, with
    /// the whole's size and SHA-256 (`run::kept_log`).
    pub keep_bytes: Option<Spanned<u64>>,
}

/// The smallest `logs.keepBytes`: a few lines at each end.
pub const MIN_LOG_KEEP_BYTES: u64 = 1 << 10;

/// The largest `logs.keepBytes`: what is kept is held in memory (and redacted there)
/// before it is stored, which is what the bound is for.
pub const MAX_LOG_KEEP_BYTES: u64 = 64 << 20;

/// A decoded `proofgraph.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Catalog {
    /// The repositories, by id.
    pub repositories: BTreeMap<RepoId, Repository>,
    /// The default sandbox mode.
    pub sandbox: Option<Spanned<SandboxMode>>,
    /// Keys whose receipts are trusted, beside the workspace's own.
    pub trusted_keys: Vec<TrustedKey>,
    /// The remote cache, if any.
    pub cache: Option<Cache>,
    /// Host paths every job's world holds, read-only (`~/…` is the caller's home
    /// directory): toolchains installed outside the system's directories.
    pub host_paths: Vec<Spanned<String>>,
    /// How much of each job's log is kept.
    pub logs: Option<Logs>,
    /// The remote executor, if any.
    pub executor: Option<Executor>,
}

/// The fields of a repository of `repositories`.
pub const REPOSITORY_FIELDS: [Field; 5] = [
    Field::new(
        "path",
        "Its directory, relative to the OpenSpec root (required); it must lie in a git work tree, as the whole repository or a directory of one (docs/workspaces.md).",
    ),
    Field::new(
        "setup",
        "Commands (each an argv) run before any of its providers, in each fresh sandbox of the repository, with the outside network: to install dependencies (docs/setup.md).",
    ),
    Field::new(
        "setupCache",
        "Directories the setup makes that the store keeps, keyed by the setup's inputs, so that setup runs once per distinct input and sees only its inputs (docs/setup.md#two-kinds-of-setup).",
    ),
    Field::new(
        "setupInputs",
        "The files a cached setup sees, as `inputs` patterns relative to the repository (default: every manifest and lockfile of the repository).",
    ),
    Field::new(
        "caches",
        "Build and download caches its jobs keep across runs, each a directory of the store whose variable proofgraph sets (docs/setup.md#build-and-download-caches-caches).",
    ),
];
/// The keys of a repository of `repositories`.
pub(crate) const REPOSITORY_KEYS: [&str; 5] = keys(&REPOSITORY_FIELDS);
/// The fields of `cache`.
pub const CACHE_FIELDS: [Field; 6] = [
    Field::new(
        "remote",
        "The remote cache's URL: `grpc://host:port[/instance]` or `grpcs://…` (the Remote Execution API), `http://…` or `https://host[:port]/prefix` (the Bazel HTTP cache protocol); without it, no remote (docs/remote-cache.md).",
    ),
    Field::new(
        "policy",
        "Which tiers are read and written, `local:<access>,remote:<access>` with access `rw`, `r`, `w` or `off` (default `local:rw,remote:r`); `--cache` and `PROOFGRAPH_CACHE` override it.",
    ),
    Field::new(
        "headersFromEnv",
        "Headers (gRPC metadata) sent on every request, each with the environment variable that holds its value: names, never values.",
    ),
    Field::new(
        "connectTimeoutMs",
        "How long to wait for a connection, in milliseconds (default 3000).",
    ),
    Field::new(
        "timeoutMs",
        "How long one request, or one chunk of a stream, may take, in milliseconds (default 30000).",
    ),
    Field::new(
        "minBytesPerSecond",
        "The slowest transfer waited for, in bytes per second (default 1048576): with the timeouts, the deadline of every operation on the remote.",
    ),
];
/// The keys of `cache`.
pub(crate) const CACHE_KEYS: [&str; 6] = keys(&CACHE_FIELDS);
/// The fields of `executor`: its own three, then the connection's, as `cache` has them.
pub const EXECUTOR_FIELDS: [Field; 7] = [
    Field::new(
        "remote",
        "The engine's URL (required): `grpc://host:port[/instance]` or `grpcs://…`, a server of the Remote Execution API that executes actions (docs/remote-execution.md).",
    ),
    Field::new(
        "platform",
        "Platform properties every action asks for, names and values as strings (`{OSFamily: linux}`): the engine gives an action only to a worker that has them all.",
    ),
    Field::new(
        "remoteJobs",
        "How many actions may be in flight on the engine at once, apart from `--jobs` (default: `--jobs`); `--remote-jobs` overrides it.",
    ),
    Field::new(
        "headersFromEnv",
        "Headers (gRPC metadata) sent on every request to the engine, each with the environment variable that holds its value: names, never values.",
    ),
    Field::new(
        "connectTimeoutMs",
        "How long to wait for a connection to the engine, in milliseconds (default 3000).",
    ),
    Field::new(
        "timeoutMs",
        "How long one request to the engine, or one chunk of a stream, may take, in milliseconds (default 30000).",
    ),
    Field::new(
        "minBytesPerSecond",
        "The slowest transfer to or from the engine waited for, in bytes per second (default 1048576).",
    ),
];
/// The keys of `executor`.
pub(crate) const EXECUTOR_KEYS: [&str; 7] = keys(&EXECUTOR_FIELDS);
/// The fields of `logs`.
pub const LOGS_FIELDS: [Field; 1] = [Field::new(
    "keepBytes",
    "The most bytes of each job's log a receipt keeps (default 4194304, 4 MiB): a longer log is kept as its first and last halves of that, with the whole's size and SHA-256.",
)];
/// The keys of `logs`.
pub(crate) const LOGS_KEYS: [&str; 1] = keys(&LOGS_FIELDS);
/// The fields of an entry of `trustedKeys`.
pub const TRUSTED_KEY_FIELDS: [Field; 2] = [
    Field::new(
        "name",
        "A name for the key, shown where it is used (`ci`; required).",
    ),
    Field::new(
        "publicKey",
        "The Ed25519 public key (PEM) whose receipts count (required): `proofgraph key show` on the signing store prints it.",
    ),
];
/// The keys of an entry of `trustedKeys`.
pub(crate) const TRUSTED_KEY_KEYS: [&str; 2] = keys(&TRUSTED_KEY_FIELDS);
/// The document's fields.
pub const TOP_FIELDS: [Field; 8] = [
    Field::new("version", "The format's version: `1` (required)."),
    Field::new(
        "repositories",
        "The repositories of the workspace, by id (default: one, `root`, the git work tree that holds the OpenSpec root).",
    ),
    Field::new(
        "sandbox",
        "The default sandbox mode of `prove` (default `worktree`); `--sandbox` overrides it.",
    ),
    Field::new(
        "trustedKeys",
        "Keys whose receipts count beside the store's own (a CI's): a receipt they signed is reused when it binds the fingerprint computed here (docs/threat-model.md).",
    ),
    Field::new("cache", "The remote cache (docs/remote-cache.md)."),
    Field::new(
        "hostPaths",
        "Host paths every job's world holds, read-only (`~/…` is the caller's home): toolchains outside the system's directories, such as `~/.cargo` and `~/.rustup` (docs/execution.md).",
    ),
    Field::new("logs", "How much of each job's log a receipt keeps."),
    Field::new(
        "executor",
        "The remote executor `prove --executor remote|auto` hands eligible providers to (docs/remote-execution.md).",
    ),
];
/// The keys of the document.
pub(crate) const TOP_KEYS: [&str; 8] = keys(&TOP_FIELDS);

/// What a key of the catalog does to fingerprints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearing {
    /// It can change what a job sees or runs: it enters the fingerprint of every provider it
    /// concerns (`observe::world::catalog_fields`, and the setup component).
    Bound,
    /// It says where receipts go, whose signatures are trusted, how long the cache client
    /// waits, how a run is contained or how much of a log a receipt keeps: no job's result
    /// depends on it, so editing it leaves every receipt current.
    Unbound,
}

/// Every key the decoder reads, as a path (`repositories.*.setup`, `trustedKeys[].name`),
/// and what it does to fingerprints: the table of docs/workspaces.md. A unit test holds it
/// equal to the decoder's key lists, so a key added without a decision here fails it; a key
/// whose bearing is not known is `Bound`.
pub const BEARINGS: [(&str, Bearing); 24] = [
    ("version", Bearing::Unbound),
    ("repositories.*.path", Bearing::Bound),
    ("repositories.*.setup", Bearing::Bound),
    ("repositories.*.setupCache", Bearing::Bound),
    ("repositories.*.setupInputs", Bearing::Bound),
    ("repositories.*.caches", Bearing::Bound),
    ("sandbox", Bearing::Unbound),
    ("trustedKeys[].name", Bearing::Unbound),
    ("trustedKeys[].publicKey", Bearing::Unbound),
    ("cache.remote", Bearing::Unbound),
    ("cache.policy", Bearing::Unbound),
    ("cache.headersFromEnv", Bearing::Unbound),
    ("cache.connectTimeoutMs", Bearing::Unbound),
    ("cache.timeoutMs", Bearing::Unbound),
    ("cache.minBytesPerSecond", Bearing::Unbound),
    ("hostPaths", Bearing::Bound),
    ("logs.keepBytes", Bearing::Unbound),
    ("executor.remote", Bearing::Unbound),
    ("executor.platform", Bearing::Unbound),
    ("executor.remoteJobs", Bearing::Unbound),
    ("executor.headersFromEnv", Bearing::Unbound),
    ("executor.connectTimeoutMs", Bearing::Unbound),
    ("executor.timeoutMs", Bearing::Unbound),
    ("executor.minBytesPerSecond", Bearing::Unbound),
];

/// Every key path the decoder reads, from its key lists: a key of a mapping below a top
/// key (`cache.timeoutMs`), of each repository (`repositories.*.path`) or of each trusted
/// key (`trustedKeys[].name`), and the other top keys themselves.
pub fn key_paths() -> Vec<String> {
    let mut out = Vec::new();
    for top in TOP_KEYS {
        let below: &[&str] = match top {
            "repositories" => &REPOSITORY_KEYS,
            "cache" => &CACHE_KEYS,
            "logs" => &LOGS_KEYS,
            "executor" => &EXECUTOR_KEYS,
            "trustedKeys" => &TRUSTED_KEY_KEYS,
            _ => {
                out.push(top.to_owned());
                continue;
            }
        };
        let join = match top {
            "repositories" => ".*.",
            "trustedKeys" => "[].",
            _ => ".",
        };
        out.extend(below.iter().map(|k| format!("{top}{join}{k}")));
    }
    out
}

/// Decodes a whole `proofgraph.yaml` document.
pub fn decode(sink: &mut Sink, root: &Node) -> Option<Catalog> {
    let top = fields(sink, root, FILE_NAME, &TOP_KEYS)?;
    match top.get("version") {
        None => missing(sink, top.pos, FILE_NAME, "version", "1"),
        Some(v) => {
            check_version(sink, v, FILE_NAME, &[1]);
        }
    }
    let repositories = top
        .get("repositories")
        .map(|n| repositories(sink, n))
        .unwrap_or_default();
    let modes: Vec<(&str, SandboxMode)> =
        SandboxMode::ALL.iter().map(|m| (m.as_str(), *m)).collect();
    let sandbox = top
        .get("sandbox")
        .and_then(|n| one_of(sink, n, "`sandbox`", Code::InvalidValue, &modes));
    let trusted_keys: Vec<TrustedKey> = top
        .get("trustedKeys")
        .and_then(|n| list(sink, n, "`trustedKeys`", trusted_key))
        .unwrap_or_default();
    if let Some(first) = trusted_keys.get(crate::store::remote::LOOKED_UP_TRUSTED_KEYS) {
        too_many_trusted_keys(sink, trusted_keys.len(), first);
    }
    let cache = top.get("cache").and_then(|n| cache(sink, n));
    let host_paths = top
        .get("hostPaths")
        .and_then(|n| super::decode::string_list(sink, n, "`hostPaths`"))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| host_path(sink, p))
        .collect();
    let logs = top.get("logs").and_then(|n| logs(sink, n));
    let executor = top.get("executor").and_then(|n| executor(sink, n));
    Some(Catalog {
        repositories,
        sandbox,
        trusted_keys,
        cache,
        host_paths,
        logs,
        executor,
    })
}

/// Whether a `hostPaths` entry names a host path as every machine can read it: absolute
/// (`/opt/toolchain`) or below the home directory (`~`, `~/.rustup`), without `.` or
/// `..` components and not the whole file system.
fn host_path(sink: &mut Sink, path: &Spanned<String>) -> bool {
    let text = path.value.as_str();
    let rest = if text == "~" {
        Some("")
    } else {
        text.strip_prefix("~/").or_else(|| text.strip_prefix('/'))
    };
    let why = match rest {
        None => Some("it is neither absolute nor below `~`"),
        Some(rest) if rest.split('/').any(|c| c == "." || c == "..") => {
            Some("it has a `.` or `..` component")
        }
        Some("") if text != "~" => Some("it is the whole file system"),
        Some(_) => None,
    };
    if let Some(why) = why {
        sink.error(
            Code::HostPathInvalid,
            path.pos,
            format!("`hostPaths` names `{text}`, which a job's world cannot hold: {why}"),
            "Name a directory by its absolute path (`/opt/toolchain`) or below the home directory (`~/.rustup`).",
        );
    }
    why.is_none()
}

fn logs(sink: &mut Sink, node: &Node) -> Option<Logs> {
    let f = fields(sink, node, "`logs`", &LOGS_KEYS)?;
    let keep_bytes = f.get("keepBytes").and_then(|n| {
        let n = decode::uint(sink, n, "`keepBytes` of `logs`", true)?;
        if !(MIN_LOG_KEEP_BYTES..=MAX_LOG_KEEP_BYTES).contains(&n.value) {
            sink.error(
                Code::InvalidValue,
                n.pos,
                format!(
                    "`keepBytes` of `logs` is {}, outside {MIN_LOG_KEEP_BYTES}..={MAX_LOG_KEEP_BYTES}",
                    n.value
                ),
                format!(
                    "Set `keepBytes` to a number of bytes from {MIN_LOG_KEEP_BYTES} (1 KiB) to {MAX_LOG_KEEP_BYTES} (64 MiB); a longer log keeps its first and last halves of it."
                ),
            );
            return None;
        }
        Some(n)
    });
    Some(Logs { keep_bytes })
}

fn repositories(sink: &mut Sink, node: &Node) -> BTreeMap<RepoId, Repository> {
    let Some(entries) = node.as_map() else {
        sink.wrong_type(
            node,
            "`repositories`",
            "a mapping of repository ids to repositories",
        );
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let Some(id) = ident_str(sink, &key.name, key.pos, RepoId::parse) else {
            continue;
        };
        let what = format!("repository `{}`", id.value);
        let Some(f) = fields(sink, value, &what, &REPOSITORY_KEYS) else {
            continue;
        };
        let path = match f.get("path") {
            Some(n) => nonempty_string(sink, n, &format!("`path` of {what}")),
            None => {
                missing(sink, f.pos, &what, "path", ".");
                None
            }
        };
        // A committed catalog is read wherever the workspace is checked out.
        let path = path.filter(|p| {
            let absolute = std::path::Path::new(&p.value).is_absolute();
            if absolute {
                sink.error(
                    Code::RepositoryPathAbsolute,
                    p.pos,
                    format!("`path` of {what} is the absolute path `{}`; a committed catalog must work wherever the workspace is checked out", p.value),
                    "Write `path` relative to the OpenSpec root (`.`, `web`, `..`, `../sibling-repo`).",
                );
            }
            !absolute
        });
        let setup = f.get("setup").and_then(|n| {
            list(sink, n, &format!("`setup` of {what}"), |s, item, i| {
                argv(s, item, &format!("`setup[{i}]` of {what}"))
            })
        });
        let setup_cache = f
            .get("setupCache")
            .and_then(|n| super::decode::string_list(sink, n, &format!("`setupCache` of {what}")));
        let setup_inputs = f
            .get("setupInputs")
            .and_then(|n| super::decode::string_list(sink, n, &format!("`setupInputs` of {what}")));
        if let (Some(setup), Some(_)) = (&setup, &setup_cache) {
            for argv in setup {
                if let Some(why) = installs_project(&argv.value) {
                    sink.error(
                        Code::SetupInstallsProject,
                        argv.pos,
                        format!("`setup` of {what} runs `{}`, which {why}; a cached setup sees only its `setupInputs` (manifests and lockfiles), so it can hold dependencies but never the project, whose code must come from each sandbox", argv.value.join(" ")),
                        "Install only the dependencies in `setup` (`pip install -r requirements.txt`, `pip install pytest`, `uv sync --no-install-project`, `poetry install --no-root`) and let the code come from the sandbox (`env: {PYTHONPATH: src}` on the provider, or a workspace link); see docs/setup.md.",
                    );
                }
            }
        }
        for dir in setup_cache.iter().flatten() {
            let last = dir
                .value
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default();
            if last == "target"
                && let Some((why, fix)) = judged_by_mtime(&dir.value)
            {
                sink.error(
                    Code::CacheJudgedByMtime,
                    dir.pos,
                    format!("`setupCache` of {what} keeps `{}`, a build directory: {why}, so a kept one can call a changed test up to date", dir.value),
                    fix,
                );
            }
        }
        let caches = f
            .get("caches")
            .and_then(|n| super::decode::string_list(sink, n, &format!("`caches` of {what}")))
            .unwrap_or_default();
        let mut kinds: Vec<Spanned<CacheKind>> = Vec::new();
        for name in caches {
            match CacheKind::parse(&name.value) {
                Some(kind) if kinds.iter().any(|k| k.value == kind) => sink.error(
                    Code::CacheKindUnknown,
                    name.pos,
                    format!("`caches` of {what} names `{}` twice", name.value),
                    "Name each cache once.",
                ),
                Some(kind) => kinds.push(Spanned {
                    value: kind,
                    pos: name.pos,
                }),
                None => match judged_by_mtime(&name.value) {
                    Some((why, fix)) => sink.error(
                        Code::CacheJudgedByMtime,
                        name.pos,
                        format!("`caches` of {what} names `{}`: {why}, so a cache of it can call a changed test up to date", name.value),
                        fix,
                    ),
                    None => sink.error(
                        Code::CacheKindUnknown,
                        name.pos,
                        format!("`caches` of {what} names `{}`, which is not a cache proofgraph knows to be keyed by content", name.value),
                        format!("Name one of {} (docs/setup.md#build-and-download-caches-caches).", CacheKind::ALL.map(|k| format!("`{}`", k.as_str())).join(", ")),
                    ),
                },
            }
        }
        if let Some(path) = path {
            out.insert(
                id.value.clone(),
                Repository {
                    id,
                    path,
                    setup,
                    setup_cache,
                    setup_inputs,
                    caches: kinds,
                },
            );
        }
    }
    out
}

/// Why a setup command installs the project itself (its own directory), if it does: what a
/// cached setup must never hold. Recognises pip (also `python -m pip`, `uv pip`) installing
/// `.` or a path below it, editable or not; `uv sync` without `--no-install-project`; and
/// `poetry install` without `--no-root`.
pub fn installs_project(argv: &[String]) -> Option<&'static str> {
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    let program = words
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or_default();
    let rest = &words[1.min(words.len())..];
    let local = |w: &&str| *w == "." || w.starts_with("./") || w.starts_with(".[");
    fn after<'a>(sub: &'a [&'a str], w: &str) -> Option<&'a [&'a str]> {
        sub.iter().position(|x| *x == w).map(|i| &sub[i + 1..])
    }
    let pip_args = match program {
        p if p.starts_with("pip") => Some(rest),
        p if p.starts_with("python") => after(rest, "-m")
            .filter(|r| r.first().is_some_and(|m| *m == "pip"))
            .map(|r| &r[1..]),
        "uv" => after(rest, "pip"),
        _ => None,
    };
    if let Some(args) = pip_args
        && let Some(installed) = after(args, "install")
        && installed.iter().any(local)
    {
        return Some("installs the project from its own directory");
    }
    if program == "uv"
        && rest.first() == Some(&"sync")
        && !rest
            .iter()
            .any(|w| *w == "--no-install-project" || *w == "--only-deps")
    {
        return Some("installs the project too unless given `--no-install-project`");
    }
    if program == "poetry"
        && rest.first() == Some(&"install")
        && !rest
            .iter()
            .any(|w| *w == "--no-root" || *w == "--only-root")
    {
        return Some("installs the project too unless given `--no-root`");
    }
    None
}

/// The warning of a `trustedKeys` list of `count` keys, longer than a pull looks up, at
/// `first`, the first key left out.
fn too_many_trusted_keys(sink: &mut Sink, count: usize, first: &TrustedKey) {
    let limit = crate::store::remote::LOOKED_UP_TRUSTED_KEYS;
    sink.warning(
        Code::TrustedKeysTooMany,
        first.name.pos,
        format!(
            "`trustedKeys` lists {count} keys, and a pull looks a receipt up in the remote cache under the store's own key and the first {limit} of them only: receipts signed by `{}` (`trustedKeys[{limit}]`) and the keys after it count when they are in the local store, but never come from the remote cache",
            first.name.value
        ),
        format!(
            "Keep at most {limit} keys in `trustedKeys` (each is one lookup per receipt on every pull): the signers whose receipts should travel, such as CI's, first; remove keys no longer in use."
        ),
    );
}

fn trusted_key(sink: &mut Sink, node: &Node, index: usize) -> Option<TrustedKey> {
    let what = format!("`trustedKeys[{index}]`");
    let f = fields(sink, node, &what, &TRUSTED_KEY_KEYS)?;
    let name = match f.get("name") {
        Some(n) => nonempty_string(sink, n, &format!("`name` of {what}")),
        None => {
            missing(sink, f.pos, &what, "name", "ci");
            None
        }
    };
    let public_key = match f.get("publicKey") {
        Some(n) => nonempty_string(sink, n, &format!("`publicKey` of {what}")),
        None => {
            missing(
                sink,
                f.pos,
                &what,
                "publicKey",
                "\"-----BEGIN PUBLIC KEY-----\\n...\"",
            );
            None
        }
    };
    let public_key = public_key?;
    if let Err(e) = crate::attest::keys::public_key_from_pem(&public_key.value) {
        sink.error(
            Code::TrustedKeyInvalid,
            public_key.pos,
            format!("`publicKey` of {what} is not a usable Ed25519 public key: failed to {e}"),
            "Paste the signer's Ed25519 public key as SPKI PEM (`openssl pkey -in key.pem -pubout`), in a YAML block scalar (`publicKey: |`).",
        );
    }
    Some(TrustedKey {
        name: name?,
        public_key,
    })
}

fn cache(sink: &mut Sink, node: &Node) -> Option<Cache> {
    let f = fields(sink, node, "`cache`", &CACHE_KEYS)?;
    let remote = f
        .get("remote")
        .and_then(|n| nonempty_string(sink, n, "`remote` of `cache`"));
    if let Some(url) = &remote {
        remote_url(sink, url, "cache");
    }
    let Connection {
        headers_from_env,
        connect_timeout_ms,
        timeout_ms,
        min_bytes_per_second,
    } = connection(sink, &f, "cache");
    let mut cache = Cache {
        remote,
        policy: None,
        local_access: CacheAccess::ReadWrite,
        remote_access: CacheAccess::Read,
        headers_from_env,
        connect_timeout_ms,
        timeout_ms,
        min_bytes_per_second,
    };
    if let Some(policy) = f
        .get("policy")
        .and_then(|n| nonempty_string(sink, n, "`policy` of `cache`"))
    {
        match parse_policy(&policy.value) {
            Ok((local, remote)) => {
                cache.local_access = local.unwrap_or(CacheAccess::ReadWrite);
                cache.remote_access = remote.unwrap_or(CacheAccess::Read);
                cache.policy = Some(policy.clone());
            }
            Err(problem) => sink.error(
                Code::InvalidValue,
                policy.pos,
                format!("`policy` of `cache` is `{}`: {problem}", policy.value),
                "Write the policy as `local:rw,remote:r` (tiers `local`/`remote`; access `rw`, `r`, `w` or `off`).",
            ),
        }
    }
    Some(cache)
}

/// How a remote is reached besides its URL, as `cache` and `executor` both say it.
struct Connection {
    headers_from_env: Vec<(Spanned<String>, Spanned<EnvName>)>,
    connect_timeout_ms: Option<Spanned<u64>>,
    timeout_ms: Option<Spanned<u64>>,
    min_bytes_per_second: Option<Spanned<u64>>,
}

/// The connection keys of `section` (`cache`, `executor`): `headersFromEnv`,
/// `connectTimeoutMs`, `timeoutMs` and `minBytesPerSecond`.
fn connection(sink: &mut Sink, f: &decode::Fields<'_>, section: &str) -> Connection {
    let headers_from_env = f
        .get("headersFromEnv")
        .and_then(|n| headers(sink, n, section))
        .unwrap_or_default();
    let millis = |sink: &mut Sink, key: &str| {
        let n = decode::uint(sink, f.get(key)?, &format!("`{key}` of `{section}`"), true)?;
        if n.value == 0 {
            sink.error(
                Code::InvalidValue,
                n.pos,
                format!("`{key}` of `{section}` must be positive"),
                format!("Set `{key}` to a number of milliseconds greater than 0."),
            );
            return None;
        }
        Some(n)
    };
    let connect_timeout_ms = millis(sink, "connectTimeoutMs");
    let timeout_ms = millis(sink, "timeoutMs");
    let min_bytes_per_second = f.get("minBytesPerSecond").and_then(|node| {
        let n = decode::uint(sink, node, &format!("`minBytesPerSecond` of `{section}`"), true)?;
        if n.value == 0 {
            sink.error(
                Code::InvalidValue,
                n.pos,
                format!("`minBytesPerSecond` of `{section}` must be positive"),
                "Set `minBytesPerSecond` to the slowest transfer rate to wait for, in bytes per second (the default is 1048576, 1 MiB/s).",
            );
            return None;
        }
        Some(n)
    });
    Connection {
        headers_from_env,
        connect_timeout_ms,
        timeout_ms,
        min_bytes_per_second,
    }
}

/// Checks the `remote` URL of `section`: a protocol proofgraph speaks (for `executor`,
/// gRPC only: the Remote Execution API), no credentials, and an instance name sent as
/// written.
fn remote_url(sink: &mut Sink, url: &Spanned<String>, section: &str) {
    use crate::store::remote::{InstanceProblem, Protocol};
    let executor = section == "executor";
    let protocol_fix = if executor {
        "Write `grpc://host:port[/instance]` (or `grpcs://`), the engine's Remote Execution API endpoint; credentials go in `headersFromEnv`."
    } else {
        "Write `grpc://host:port[/instance]` (or `grpcs://`) for a Remote Execution API cache, or `http(s)://host[:port]/prefix` for a Bazel HTTP cache; credentials go in `headersFromEnv`."
    };
    let protocol = match Protocol::of(&url.value) {
        Ok((protocol, _)) => protocol,
        Err(problem) => {
            sink.error(
                Code::InvalidValue,
                url.pos,
                format!("`remote` of `{section}`: {problem}"),
                protocol_fix,
            );
            return;
        }
    };
    if protocol != Protocol::Grpc {
        if executor {
            sink.error(
                Code::InvalidValue,
                url.pos,
                format!(
                    "`remote` of `executor` is `{}`, but remote execution is spoken over gRPC only (the Bazel HTTP cache protocol executes nothing)",
                    url.value
                ),
                protocol_fix,
            );
        }
        return;
    }
    let Err(problem) = crate::store::remote::instance(&url.value) else {
        return;
    };
    let (code, fix) = match &problem {
        InstanceProblem::DotSegment { .. } => (
            Code::RemoteInstanceDotSegment,
            "Write the instance name without `.` or `..` segments, exactly as the server names it (`grpc://host:port/team/ci`).",
        ),
        InstanceProblem::Character { .. } => (
            Code::InvalidValue,
            "Write the instance name with letters, digits and `-._~` only (and `/` between segments), as the server names it.",
        ),
        InstanceProblem::PercentEscape { .. } => (
            Code::InvalidValue,
            "Write the instance name as it is, without percent escapes.",
        ),
        InstanceProblem::Reserved { .. } | InstanceProblem::QueryOrFragment => (
            Code::InvalidValue,
            "Write the instance name as `/segment[/segment…]`, with no empty segment, no query or fragment, and none of the segments resource names reserve (`blobs`, `uploads`, `actions`, `actionResults`, `operations`, `capabilities`, `compressed-blobs`).",
        ),
    };
    sink.error(
        code,
        url.pos,
        format!("`remote` of `{section}`: {problem}"),
        fix,
    );
}

fn executor(sink: &mut Sink, node: &Node) -> Option<Executor> {
    let f = fields(sink, node, "`executor`", &EXECUTOR_KEYS)?;
    let remote = match f.get("remote") {
        Some(n) => nonempty_string(sink, n, "`remote` of `executor`"),
        None => {
            missing(
                sink,
                f.pos,
                "`executor`",
                "remote",
                "grpc://buildgrid.example.com:50051/main",
            );
            None
        }
    };
    if let Some(url) = &remote {
        remote_url(sink, url, "executor");
    }
    let platform = f
        .get("platform")
        .map(|n| platform(sink, n))
        .unwrap_or_default();
    let remote_jobs = f.get("remoteJobs").and_then(|node| {
        let n = decode::uint(sink, node, "`remoteJobs` of `executor`", false)?;
        if n.value == 0 {
            sink.error(
                Code::InvalidValue,
                n.pos,
                "`remoteJobs` of `executor` must be positive".to_owned(),
                "Set `remoteJobs` to how many actions may run on the engine at once (at least 1), or leave it out to use `--jobs`.",
            );
            return None;
        }
        Some(n)
    });
    let Connection {
        headers_from_env,
        connect_timeout_ms,
        timeout_ms,
        min_bytes_per_second,
    } = connection(sink, &f, "executor");
    Some(Executor {
        remote: remote?,
        platform,
        remote_jobs,
        headers_from_env,
        connect_timeout_ms,
        timeout_ms,
        min_bytes_per_second,
    })
}

/// `platform` of `executor`: property names to values, both non-empty strings (an
/// engine compares them as strings, so `cores: 4` must be written `cores: "4"`).
fn platform(sink: &mut Sink, node: &Node) -> BTreeMap<String, Spanned<String>> {
    let what = "`platform` of `executor`";
    let Some(entries) = node.as_map() else {
        sink.wrong_type(node, what, "a mapping of property names to strings");
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        if key.name.trim().is_empty() || key.name.chars().any(char::is_control) {
            sink.error(
                Code::InvalidValue,
                key.pos,
                format!(
                    "{what} names the property `{}`, which is not a property name",
                    crate::store::remote::escaped(&key.name)
                ),
                "Name each platform property as the engine's workers declare it (`OSFamily`, `ISA`), without control characters.",
            );
            continue;
        }
        let value = match &value.value {
            crate::syntax::node::Value::String(_) => {
                nonempty_string(sink, value, &format!("`{}` of {what}", key.name))
            }
            _ => {
                sink.error(
                    Code::WrongType,
                    value.pos,
                    format!(
                        "`{}` of {what} must be a string, found {}",
                        key.name,
                        value.value.type_name()
                    ),
                    format!(
                        "Quote the value (`{}: \"…\"`): an engine matches platform properties as strings.",
                        key.name
                    ),
                );
                None
            }
        };
        let Some(value) = value else { continue };
        if value.value.chars().any(char::is_control) {
            sink.error(
                Code::InvalidValue,
                value.pos,
                format!("`{}` of {what} holds a control character", key.name),
                "Write the value as the engine's workers declare it, on one line.",
            );
            continue;
        }
        out.insert(key.name.clone(), value);
    }
    out
}

/// `headersFromEnv` of `section`: a mapping of header names to the environment variables
/// that hold their values.
fn headers(
    sink: &mut Sink,
    node: &Node,
    section: &str,
) -> Option<Vec<(Spanned<String>, Spanned<EnvName>)>> {
    let what = &format!("`headersFromEnv` of `{section}`");
    let Some(entries) = node.as_map() else {
        sink.wrong_type(
            node,
            what,
            "a mapping of header names to environment variable names",
        );
        return None;
    };
    let mut out = Vec::new();
    for (key, value) in entries {
        let valid = !key.name.is_empty()
            && key
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            sink.error(
                Code::InvalidValue,
                key.pos,
                format!("`{}` in {what} is not a header name", key.name),
                "Name the header with letters, digits, `-` and `_` (e.g. `Authorization`).",
            );
            continue;
        }
        if let Some(env) = ident(
            sink,
            value,
            &format!("`{}` of {what}", key.name),
            EnvName::parse,
        ) {
            out.push((
                Spanned {
                    value: key.name.clone(),
                    pos: key.pos,
                },
                env,
            ));
        }
    }
    Some(out)
}

/// Parses a cache policy such as `local:rw,remote:r`.
pub fn parse_policy(text: &str) -> Result<(Option<CacheAccess>, Option<CacheAccess>), String> {
    let mut local = None;
    let mut remote = None;
    for part in text.split(',').map(str::trim) {
        let Some((tier, access)) = part.split_once(':') else {
            return Err(format!("`{part}` is not `tier:access`"));
        };
        let access = match access {
            "rw" => CacheAccess::ReadWrite,
            "r" => CacheAccess::Read,
            "w" => CacheAccess::Write,
            "off" => CacheAccess::Off,
            other => return Err(format!("`{other}` is not one of `rw`, `r`, `w`, `off`")),
        };
        let slot = match tier {
            "local" => &mut local,
            "remote" => &mut remote,
            other => {
                return Err(format!(
                    "`{other}` is not a cache tier (`local` or `remote`)"
                ));
            }
        };
        if slot.replace(access).is_some() {
            return Err(format!("`{tier}` is given twice"));
        }
    }
    Ok((local, remote))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_policies() {
        assert_eq!(
            parse_policy("local:rw,remote:r"),
            Ok((Some(CacheAccess::ReadWrite), Some(CacheAccess::Read)))
        );
        assert_eq!(
            parse_policy("remote:off"),
            Ok((None, Some(CacheAccess::Off)))
        );
        assert!(parse_policy("local:x").is_err());
        assert!(parse_policy("disk:r").is_err());
        assert!(parse_policy("local:r,local:w").is_err());
        assert!(parse_policy("local").is_err());
    }
}
