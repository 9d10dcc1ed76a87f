//! What `prove`, `status`, `explain` and `hash` share: the change loaded and
//! sealed, the world observed, every fingerprint, the store and its trust list.

use proofgraph_graph::fingerprint::{Fingerprints, Manifest, Value};
use proofgraph_sandbox::SandboxMode;

use super::Context;
use super::plan::{Loaded, load};
use crate::attest::envelope::TrustedKey;
use crate::diagnostic::{Code, Diagnostic};
use crate::receipt::Component;
use crate::store::Store;
use crate::world::{Observed, observe};

/// A change, evaluated against the world and the store.
pub struct Evaluated {
    /// The change and its sealed graph.
    pub loaded: Loaded,
    /// The sandbox mode the fingerprints assume.
    pub mode: SandboxMode,
    /// What was observed.
    pub observed: Observed,
    /// Every fingerprint.
    pub fingerprints: Fingerprints,
    /// The store.
    pub store: Store,
    /// The keys whose receipts are trusted.
    pub trusted: Vec<TrustedKey>,
}

impl Evaluated {
    /// Frees the evaluation on a thread of its own, for a command that has its answer: a
    /// large change's graph, snapshots and the receipts verified on the way are tens of
    /// thousands of allocations, milliseconds that the answer need not wait for. When the
    /// process exits first, the memory goes with it; nothing here does I/O when dropped.
    pub fn release(self) {
        let spawned = std::thread::Builder::new()
            .name("release".to_owned())
            .spawn(move || drop(self));
        // Without a thread (resources exhausted), the evaluation was dropped with the
        // failed closure: nothing is lost either way.
        drop(spawned);
    }
}

/// The sandbox mode: the flag, else the catalog's default, else `worktree`.
pub fn sandbox_mode(loaded: &Loaded, flag: Option<SandboxMode>) -> SandboxMode {
    flag.or_else(|| {
        loaded
            .workspace
            .catalog
            .as_ref()
            .and_then(|c| c.sandbox.as_ref())
            .map(|m| m.value)
    })
    .unwrap_or(SandboxMode::Worktree)
}

/// Loads, seals, observes and fingerprints a change, and opens the store.
/// With `create_key` (for `prove`), the store and the workspace's signing key
/// are created if absent; otherwise the store is only read.
pub fn evaluate(
    ctx: &Context,
    change: &str,
    mode: Option<SandboxMode>,
    create_key: bool,
) -> Result<Evaluated, Vec<Diagnostic>> {
    let loaded = load(ctx, change)?;
    let mode = sandbox_mode(&loaded, mode);
    let observed = observe(
        &loaded.workspace,
        &loaded.change,
        &loaded.prepared.graph,
        ctx.path_var(),
        mode,
    )?;
    let fingerprints = loaded
        .prepared
        .graph
        .fingerprints_with(&observed.world, super::plan::default_jobs())
        .map_err(|e| vec![Diagnostic::error(Code::InternalError, e.to_string())])?;
    let store = if create_key {
        let store = Store::open(&loaded.workspace.root).map_err(|e| vec![store_error(&e)])?;
        store.signing_key().map_err(|e| vec![store_error(&e)])?;
        store
    } else {
        Store::open_read_only(&loaded.workspace.root)
    };
    let trusted = crate::receipt::trusted_keys(&store, loaded.workspace.catalog.as_ref());
    Ok(Evaluated {
        loaded,
        mode,
        observed,
        fingerprints,
        store,
        trusted,
    })
}

/// A store failure as a diagnostic.
pub fn store_error(err: &crate::store::StoreError) -> Diagnostic {
    Diagnostic::error(Code::StoreUnusable, format!("the store cannot be used: failed to {err}"))
        .surface("store")
        .fix("Check that .proofgraph/ at the OpenSpec root is writable; it can be deleted to start afresh (receipts are lost).")
}

/// A manifest's components as stored in receipts.
pub fn components(manifest: &Manifest) -> Vec<Component> {
    manifest
        .components
        .iter()
        .map(|(tag, name, value)| Component {
            tag: *tag,
            name: (*name).to_owned(),
            value: value_json(value),
        })
        .collect()
}

fn value_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Absent => serde_json::Value::Null,
        Value::Text(s) => serde_json::Value::from(s.as_str()),
        Value::Number(n) => serde_json::Value::from(*n),
        Value::List(items) => serde_json::Value::from(items.clone()),
        Value::Map(entries) => serde_json::Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect(),
        ),
    }
}

/// The input listing of a provider: `repo:path<TAB>identity` lines, sorted.
pub fn listing(files: &[(String, proofgraph_graph::fingerprint::Digest)]) -> Vec<u8> {
    let mut out = String::with_capacity(files.len() * 64);
    for (path, id) in files {
        out.push_str(path);
        out.push('\t');
        out.push_str(&id.to_hex());
        out.push('\n');
    }
    out.into_bytes()
}
