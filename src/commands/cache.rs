//! `cache push|pull|stats|gc`: the remote cache by hand, and the local store's size. `push` uploads a change's current
//! receipts (whatever the policy says of automatic pushes: asking is writing, unless the
//! remote is `off`); `pull` fetches what the remote has for the change's current
//! fingerprints; `stats` counts what the local store holds and says which remote is used;
//! `gc` removes from the local store what no change of the workspace needs.

use std::fmt::Write as _;

use serde::Serialize;

use crate::load::config::catalog::CacheAccess;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Keys, evaluate};
use crate::session::gc_roots;
use crate::store::{Sha256, Store};

/// The payload of `cache push`, `cache pull` and `cache stats`.
#[derive(Debug, Default, Serialize)]
pub struct CachePayload {
    /// The change (push, pull).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// The remote, without credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// Receipts uploaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushed: Option<usize>,
    /// Blobs and bytes sent (the others were there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploaded_blobs: Option<usize>,
    /// Bytes sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploaded_bytes: Option<u64>,
    /// Receipts that could not be uploaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<usize>,
    /// Receipts pulled, by their SHA-256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pulled: Option<Vec<Sha256>>,
    /// `gc`: what was removed and kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collected: Option<crate::store::Collected>,
    /// `stats`: what the local store holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalStats>,
    /// The OpenSpec root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<RootOutput>,
}

/// What the local store holds.
#[derive(Debug, Default, Serialize)]
pub struct LocalStats {
    /// Blobs (receipts, logs, reports, input listings).
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Action-cache entries (receipts by what they answer).
    pub receipts: u64,
    /// Kept setup outputs.
    pub setup_trees: u64,
}

impl Payload for CachePayload {
    fn human(&self, out: &mut String) {
        if let Some(remote) = &self.remote {
            let _ = writeln!(out, "remote cache: {remote}");
        }
        if let Some(n) = self.pushed {
            let _ = writeln!(
                out,
                "pushed {n} receipt{} ({} blobs, {} bytes sent)",
                if n == 1 { "" } else { "s" },
                self.uploaded_blobs.unwrap_or(0),
                self.uploaded_bytes.unwrap_or(0)
            );
        }
        if let Some(failed) = self.failed.filter(|n| *n > 0) {
            let _ = writeln!(out, "{failed} not pushed (they stay local)");
        }
        if let Some(pulled) = &self.pulled {
            let _ = writeln!(out, "pulled {} receipt(s)", pulled.len());
        }
        if let Some(c) = &self.collected {
            let _ = writeln!(
                out,
                "removed {} blobs ({} bytes), {} entries, {} input-tree refs and {} setup trees ({} bytes); kept {} blobs ({} bytes)",
                c.removed,
                c.freed,
                c.entries_removed,
                c.trees_removed,
                c.setup_trees_removed,
                c.setup_bytes_freed,
                c.kept,
                c.kept_bytes
            );
        }
        if let Some(l) = &self.local {
            let _ = writeln!(
                out,
                "local store: {} receipts, {} blobs ({} bytes), {} setup trees",
                l.receipts, l.blobs, l.blob_bytes, l.setup_trees
            );
        }
    }
}

/// The current receipts of the change `e` evaluated: one per requirement that has one.
/// The policy as asked for: `tier` read or written on purpose, unless `off`.
fn asking(ctx: &Context, policy: &str) -> Context {
    ctx.clone().with_cache_policy(Some(policy.to_owned()))
}

fn no_remote() -> Report<CachePayload> {
    Report::failed(
        vec![
            crate::base::diagnostic::Diagnostic::error(
                crate::base::diagnostic::Code::InvalidValue,
                "no remote cache is configured (or the policy turns it off)",
            )
            .surface("cache.remote")
            .fix("Add `cache: {remote: grpc://host:port}` (or an http(s):// URL) to proofgraph.yaml."),
        ],
        Verdict::Invalid,
    )
}

/// Runs `cache push <change>`.
///
/// SIGINT and SIGTERM end the pull or push at once (exit 130, one document).
pub fn push(ctx: &Context, change: &str) -> Report<CachePayload> {
    let interrupt = crate::base::interrupt::Interrupt::install();
    let ctx = asking(ctx, "local:rw,remote:rw");
    let evaluated = evaluate(&ctx, change, None, Keys::Check);
    if interrupt.is_set() {
        let notes = evaluated.map_or_else(|all| all, |e| e.loaded.notes);
        return crate::session::evaluate::interrupted("cache push", notes);
    }
    let mut e = match evaluated {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let Some(remote) = e.remote.take() else {
        return no_remote();
    };
    if remote.policy.remote == CacheAccess::Off {
        return no_remote();
    }
    let shas = gc_roots::current_receipts(&e);
    let name = remote.cache.name().to_owned();
    let runtime = match ctx.runtime() {
        Ok(runtime) => runtime,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let pushed = crate::proof::travel::push(
        &runtime,
        remote.cache,
        &e.store,
        &e.trusted,
        shas,
        Some(&interrupt),
    );
    let mut status = e.loaded.notes.clone();
    status.extend(pushed.warnings);
    if interrupt.is_set() {
        return crate::session::evaluate::interrupted("cache push", status);
    }
    let verdict = if pushed.failed > 0 {
        Verdict::Failed
    } else {
        Verdict::Success
    };
    Report {
        payload: Some(CachePayload {
            change: Some(e.loaded.change.name.to_string()),
            remote: Some(name),
            pushed: Some(pushed.receipts),
            uploaded_blobs: Some(pushed.uploaded.blobs),
            uploaded_bytes: Some(pushed.uploaded.bytes),
            failed: Some(pushed.failed),
            root: Some(e.loaded.root.clone()),
            ..CachePayload::default()
        }),
        status,
        verdict,
    }
}

/// Runs `cache pull <change>`.
///
/// SIGINT and SIGTERM end the pull at once (exit 130, one document).
pub fn pull(ctx: &Context, change: &str) -> Report<CachePayload> {
    let interrupt = crate::base::interrupt::Interrupt::install();
    let ctx = asking(ctx, "local:rw,remote:r");
    let evaluated = evaluate(&ctx, change, None, Keys::Check);
    if interrupt.is_set() {
        let notes = evaluated.map_or_else(|all| all, |e| e.loaded.notes);
        return crate::session::evaluate::interrupted("cache pull", notes);
    }
    let e = match evaluated {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let Some(remote) = &e.remote else {
        return no_remote();
    };
    Report {
        payload: Some(CachePayload {
            change: Some(e.loaded.change.name.to_string()),
            remote: Some(remote.cache.name().to_owned()),
            pulled: Some(e.pulled.iter().map(|(_, sha)| *sha).collect()),
            root: Some(e.loaded.root.clone()),
            ..CachePayload::default()
        }),
        status: e.loaded.notes.clone(),
        verdict: Verdict::Success,
    }
}

fn count_files(dir: &std::path::Path) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(_) => {
                    files += 1;
                    bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
                }
                Err(_) => {}
            }
        }
    }
    (files, bytes)
}

/// Runs `cache stats`.
pub fn stats(ctx: &Context) -> Report<CachePayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = crate::load::workspace::Workspace::load(&resolution.root.path);
    let dir = workspace.root.join(crate::store::DIR);
    let (blobs, blob_bytes) = count_files(&dir.join("cas"));
    let (receipts, _) = count_files(&dir.join("ac"));
    let setup_trees = fs_err::read_dir(crate::run::setup::trees(&Store::open_read_only(
        &workspace.root,
    )))
    .map(|all| {
        all.flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count() as u64
    })
    .unwrap_or(0);
    let remote = workspace
        .catalog
        .as_ref()
        .and_then(|c| c.cache.as_ref())
        .and_then(|c| c.remote.as_ref())
        .map(|r| r.value.clone());
    Report {
        payload: Some(CachePayload {
            remote,
            local: Some(LocalStats {
                blobs,
                blob_bytes,
                receipts,
                setup_trees,
            }),
            root: Some(RootOutput::from(&resolution.root)),
            ..CachePayload::default()
        }),
        status: Vec::new(),
        verdict: Verdict::Success,
    }
}

/// `--keep` and `--max-size` as given: `30d`, `12h`, `45m`, `90s`; `500M`, `2G`, `1024`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like `30d`, `12h`, `45m` or `90s`"))?;
    let secs = match unit {
        "d" => n.checked_mul(86_400),
        "h" => n.checked_mul(3_600),
        "m" => n.checked_mul(60),
        "s" | "" => Some(n),
        _ => None,
    }
    .ok_or_else(|| format!("`{text}` is not a duration like `30d`, `12h`, `45m` or `90s`"))?;
    Ok(std::time::Duration::from_secs(secs))
}

/// A size in bytes, with an optional `K`, `M` or `G` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size like `500M`, `2G` or `1048576`"))?;
    match unit {
        "" => Some(n),
        "K" => n.checked_mul(1 << 10),
        "M" => n.checked_mul(1 << 20),
        "G" => n.checked_mul(1 << 30),
        _ => None,
    }
    .ok_or_else(|| format!("`{text}` is not a size like `500M`, `2G` or `1048576`"))
}

/// Runs `cache gc`: removes from the local store what no change needs, keeping every
/// receipt that is current (or the latest) for some change of the workspace, with the
/// blobs it names. A change that cannot be evaluated stops it before anything is removed.
pub fn gc(ctx: &Context, keep: std::time::Duration, max_size: Option<u64>) -> Report<CachePayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = crate::load::workspace::Workspace::load(&resolution.root.path);
    let names = match workspace.change_names() {
        Ok(names) => names,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    // Only the local store: a remote is not consulted to decide what is current here.
    let local = asking(ctx, "local:rw,remote:off");
    let mut roots = gc_roots::Roots::default();
    for name in &names {
        match evaluate(&local, name.as_str(), None, Keys::Check) {
            Ok(e) => roots.add(&e),
            Err(mut all) => {
                all.push(gc_roots::unevaluated(name.as_str()));
                return Report::failed(all, Verdict::Invalid);
            }
        }
    }
    let store = Store::open_read_only(&workspace.root);
    let mut collected = match store.collect(&roots.blobs, keep, max_size) {
        Ok(collected) => collected,
        Err(e) => return Report::failed(vec![crate::store::diagnostic(&e)], Verdict::Invalid),
    };
    if let Some(keys) = &roots.setup_keys {
        let (n, bytes) = crate::run::setup::collect(&store, keys, keep);
        collected.setup_trees_removed = n;
        collected.setup_bytes_freed = bytes;
    }
    let (trees_removed, status) = gc_roots::prune_input_trees(&store, &workspace, &roots);
    collected.trees_removed += trees_removed;
    Report {
        payload: Some(CachePayload {
            collected: Some(collected),
            root: Some(RootOutput::from(&resolution.root)),
            ..CachePayload::default()
        }),
        status,
        verdict: Verdict::Success,
    }
}
