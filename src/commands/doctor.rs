//! `proofgraph doctor`: the health of the OpenSpec root, the selected store
//! and the workspace. Findings never change the exit code (0); only a root
//! that cannot be resolved does (3).
//!
//! The `root` and `store` objects have the shape `openspec doctor --json`
//! prints, so the two tools can be compared directly.

pub mod machine;

use std::fmt::Write as _;

use serde::Serialize;

use crate::base::diagnostic::{self, Diagnostic};
use crate::load::openspec::{inspect, store};
use crate::load::workspace::Workspace;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::trust::{KeyStatus, PinnedBy};
use crate::session::context::{Context, RootOutput};

/// The root's health.
#[derive(Debug, Clone, Serialize)]
pub struct RootHealth {
    /// The root, as embedded elsewhere.
    #[serde(flatten)]
    pub root: RootOutput,
    /// Whether it is a usable OpenSpec root.
    pub healthy: bool,
    /// What is wrong with it.
    pub status: Vec<Diagnostic>,
}

/// Whether the store's identity file is present and valid.
#[derive(Debug, Clone, Serialize)]
pub struct StoreMetadata {
    /// The file exists.
    pub present: bool,
    /// The file reads as metadata.
    pub valid: bool,
    /// The canonical remote it records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

/// The selected store, when the root is a store.
#[derive(Debug, Clone, Serialize)]
pub struct StoreHealth {
    /// The store id.
    pub id: String,
    /// Its identity file.
    pub metadata: StoreMetadata,
    /// Findings about it.
    pub status: Vec<Diagnostic>,
}

/// A repository of the workspace.
#[derive(Debug, Clone, Serialize)]
pub struct RepositoryHealth {
    /// The id.
    pub id: String,
    /// The path as written.
    pub path: String,
    /// Whether the directory exists.
    pub exists: bool,
}

/// The workspace's health.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceHealth {
    /// `proofgraph.yaml` when it exists.
    pub catalog: Option<&'static str>,
    /// The repositories.
    pub repositories: Vec<RepositoryHealth>,
    /// The number of active changes.
    pub changes: usize,
    /// Findings about the catalog.
    pub status: Vec<Diagnostic>,
}

/// The payload of `doctor`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DoctorPayload {
    /// The root's health.
    pub root: Option<RootHealth>,
    /// The store's health, when the root is a store.
    pub store: Option<StoreHealth>,
    /// The workspace's health.
    pub workspace: Option<WorkspaceHealth>,
    /// Whether runs can be isolated on this machine.
    pub isolation: Option<machine::IsolationHealth>,
    /// The proof store (`.proofgraph/`) and the keys it trusts.
    pub proof_store: Option<machine::ProofStoreHealth>,
    /// The remote cache, when `proofgraph.yaml` names one.
    pub cache: Option<machine::CacheHealth>,
}

impl Payload for DoctorPayload {
    fn human(&self, out: &mut String) {
        let Some(root) = &self.root else { return };
        root_lines(out, root, self.store.as_ref());
        if let Some(ws) = &self.workspace {
            workspace_lines(out, ws);
        }
        if let Some(iso) = &self.isolation {
            isolation_lines(out, iso);
        }
        if let Some(ps) = &self.proof_store {
            proof_store_lines(out, ps);
        }
        if let Some(cache) = &self.cache {
            let _ = writeln!(out, "Remote cache");
            let _ = writeln!(
                out,
                "  {} ({}, {}): {}",
                cache.remote, cache.protocol, cache.policy, cache.detail
            );
            let _ = match &cache.proxy.via {
                Some(via) => writeln!(out, "  Proxy: {via} ({})", cache.proxy.reason),
                None => writeln!(out, "  Proxy: none ({})", cache.proxy.reason),
            };
        }
    }
}

/// The `Root` section, with the store when the root is one.
fn root_lines(out: &mut String, root: &RootHealth, store: Option<&StoreHealth>) {
    let _ = writeln!(out, "Root");
    let _ = writeln!(out, "  Location: {}", root.root.path.display());
    let _ = writeln!(
        out,
        "  OpenSpec root: {}",
        if root.healthy { "ok" } else { "unhealthy" }
    );
    for d in &root.status {
        let _ = writeln!(out, "  - {}", d.message);
    }
    if let Some(store) = store {
        let note = if store.metadata.valid {
            "metadata ok"
        } else {
            "metadata invalid"
        };
        let _ = writeln!(out, "  Store: {} ({note})", store.id);
    }
}

/// The `Workspace` section.
fn workspace_lines(out: &mut String, ws: &WorkspaceHealth) {
    let _ = writeln!(out, "Workspace");
    let _ = writeln!(
        out,
        "  Catalog: {}",
        ws.catalog.unwrap_or("(none: one repository, `root`)")
    );
    for r in &ws.repositories {
        let state = if r.exists { "ok" } else { "missing" };
        let _ = writeln!(out, "  Repository {}: {} ({state})", r.id, r.path);
    }
    let _ = writeln!(out, "  Changes: {}", ws.changes);
    for d in &ws.status {
        let _ = writeln!(out, "  - {}", d.message);
    }
}

/// The `Isolation` section.
fn isolation_lines(out: &mut String, iso: &machine::IsolationHealth) {
    let _ = writeln!(out, "Isolation");
    let _ = match (&iso.reason, iso.user_namespace) {
        (Some(reason), _) => writeln!(out, "  none: {reason}"),
        (None, true) => writeln!(
            out,
            "  namespaces (network, PID, /tmp) via a user namespace"
        ),
        (None, false) => writeln!(out, "  namespaces (network, PID, /tmp)"),
    };
}

/// The `Proof store` section: where, what it holds, the watcher and the keys.
fn proof_store_lines(out: &mut String, ps: &machine::ProofStoreHealth) {
    let _ = writeln!(out, "Proof store");
    let _ = writeln!(
        out,
        "  Location: {}{}",
        ps.path.display(),
        if ps.exists { "" } else { " (not created yet)" }
    );
    let _ = writeln!(out, "  Receipts: {}", ps.receipts);
    let _ = writeln!(
        out,
        "  Watcher: {}",
        if ps.watcher {
            "answering (`proofgraph watch`)"
        } else {
            "none (snapshots lstat every tracked file; `proofgraph watch` avoids that)"
        }
    );
    let _ = writeln!(out, "  Signing key: {}", signing_key(&ps.trust));
    for k in &ps.trusted_keys {
        let _ = writeln!(
            out,
            "  Trusted key {}: {}",
            k.name,
            k.keyid.as_deref().unwrap_or("invalid")
        );
    }
}

/// The signing key and whether this store trusts it.
fn signing_key(t: &crate::proof::trust::KeyReport) -> String {
    let show = |k: Option<crate::proof::trust::KeyId>| k.map(|k| k.to_string()).unwrap_or_default();
    match (t.state, &t.pinned_by) {
        (KeyStatus::Pinned, Some(PinnedBy::TrustedKey { name })) => format!(
            "{} (trusted: `{name}` in trustedKeys of proofgraph.yaml)",
            show(t.keyid)
        ),
        (KeyStatus::Pinned, _) => format!(
            "{} (trusted: pinned in {})",
            show(t.keyid),
            t.pin_file.display()
        ),
        (KeyStatus::Mismatch, _) => format!(
            "{} NOT TRUSTED: the key pinned for this store is {}",
            show(t.keyid),
            show(t.pinned_keyid)
        ),
        (KeyStatus::Unpinned, _) => format!(
            "{} NOT TRUSTED: not pinned (`proofgraph key pin {}` once you checked it)",
            show(t.keyid),
            show(t.keyid)
        ),
        (KeyStatus::Unreadable, _) => "unreadable".to_owned(),
        (KeyStatus::Absent, _) => "none yet (the first prove makes one and pins it)".to_owned(),
    }
}

/// Runs `doctor`.
pub fn run(ctx: &Context) -> Report<DoctorPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let resolved = &resolution.root;
    let inspection = inspect::inspect(&resolved.path);
    let store = resolved.store_id.as_ref().map(|id| {
        let metadata = store::read_metadata(&resolved.path).ok().flatten();
        StoreHealth {
            id: id.clone(),
            metadata: StoreMetadata {
                present: metadata.is_some(),
                valid: metadata.is_some(),
                remote: metadata.and_then(|m| m.remote),
            },
            status: Vec::new(),
        }
    });
    let mut status = resolution.notes.clone();
    let workspace = Workspace::load(&resolved.path);
    let isolation = machine::isolation(&mut status);
    let proof_store = machine::proof_store(
        &workspace,
        &crate::proof::trust::Pins::new(ctx.env()),
        &mut status,
    );
    let cache = machine::cache(ctx, &workspace, &mut status);
    let mut ws_status = workspace.diagnostics.clone();
    diagnostic::sort(&mut ws_status);
    let workspace_health = WorkspaceHealth {
        catalog: workspace
            .has_catalog
            .then_some(crate::load::config::catalog::FILE_NAME),
        repositories: workspace
            .repositories
            .values()
            .map(|r| RepositoryHealth {
                id: r.id.to_string(),
                path: r.path.clone(),
                exists: r.dir.is_dir(),
            })
            .collect(),
        changes: workspace.change_names().map(|n| n.len()).unwrap_or(0),
        status: ws_status,
    };
    Report {
        payload: Some(DoctorPayload {
            root: Some(RootHealth {
                root: RootOutput::from(resolved),
                healthy: inspection.healthy,
                status: inspection.diagnostics,
            }),
            store,
            workspace: Some(workspace_health),
            isolation: Some(isolation),
            proof_store: Some(proof_store),
            cache,
        }),
        status,
        verdict: Verdict::Success,
    }
}
