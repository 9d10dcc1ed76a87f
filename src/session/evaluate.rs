//! What `prove`, `status`, `explain` and `hash` share: the change loaded and
//! sealed, the world observed, every fingerprint, the store and its trust list.

use proofgraph_graph::fingerprint::Fingerprints;
use proofgraph_sandbox::SandboxMode;

use super::context::Context;
use super::load::{Loaded, load};
use crate::attest::envelope::TrustedKey;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::observe::world::{Observed, observe};
use crate::store::Store;

/// What a command does with the store's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// It signs receipts (`prove`, `evidence verify-ci`): the store and its key are
    /// created (and the key pinned) if absent; a key that is not trusted stops it.
    Sign,
    /// As [`Keys::Sign`], reusing no receipt (`prove --no-cache`): nothing is pulled from
    /// the remote cache, since nothing pulled would be used.
    SignFresh,
    /// It reads receipts (`status`, `plan`, `explain`): the store is only read, and a
    /// store key that is not trusted stops it (exit 3) rather than showing every
    /// receipt as unproven without saying why.
    Check,
    /// It reads no receipt (`hash`, `receipt verify`'s binding check): the keys are
    /// not looked at, and nothing is trusted.
    Ignore,
}

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
    /// The workspace's signing key, for [`Keys::Sign`] and [`Keys::SignFresh`].
    pub signing_key: Option<ed25519_dalek::SigningKey>,
    /// The remote cache in use, if any (not for [`Keys::Ignore`]).
    pub remote: Option<super::remote_choice::Remote>,
    /// Receipts pulled from it into the local store by this evaluation.
    pub pulled: Vec<(crate::proof::travel::Wanted, crate::store::Sha256)>,
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

/// Loads, seals, observes and fingerprints a change, opens the store, and decides
/// which keys' receipts count (see [`Keys`] and [`crate::proof::trust`]). Notes about the
/// keys (a new key made in place of a pinned one) are added to `loaded.notes`.
pub fn evaluate(
    ctx: &Context,
    change: &str,
    mode: Option<SandboxMode>,
    keys: Keys,
) -> Result<Evaluated, Vec<Diagnostic>> {
    let loaded = load(ctx, change)?;
    let mode = sandbox_mode(&loaded, mode);
    let observed = observe(
        &loaded.workspace,
        &loaded.change,
        &loaded.prepared.graph,
        ctx.path_var(),
    )?;
    complete(ctx, loaded, mode, observed, keys)
}

/// The rest of an evaluation once the change is loaded and observed (in the working tree,
/// or at a revision): its fingerprints, the store, the trusted keys, and what the remote
/// cache has for fingerprints the store has no entry for.
///
/// [`checked_store`] is the part of it a command that reads stored receipts by name, and
/// needs no fingerprint, uses alone (`log`).
pub fn complete(
    ctx: &Context,
    mut loaded: Loaded,
    mode: SandboxMode,
    observed: Observed,
    keys: Keys,
) -> Result<Evaluated, Vec<Diagnostic>> {
    let fingerprints = loaded
        .prepared
        .graph
        .fingerprints_with(&observed.world, super::load::default_jobs())
        .map_err(|e| vec![Diagnostic::error(Code::InternalError, e.to_string())])?;
    let pins = crate::proof::trust::Pins::new(ctx.env());
    let root = loaded.workspace.root.clone();
    let catalog = loaded.workspace.catalog.as_ref();
    let (store, trusted, signing_key) = match keys {
        Keys::Sign | Keys::SignFresh => {
            let store = Store::open(&root).map_err(|e| vec![crate::store::diagnostic(&e)])?;
            let signing = crate::proof::trust::signing_key(&pins, &store, &root, catalog)?;
            loaded.notes.extend(signing.notes);
            (store, signing.inspection.trusted, Some(signing.key))
        }
        Keys::Check => {
            let (store, trusted) = checked_store(ctx, &loaded)?;
            (store, trusted, None)
        }
        Keys::Ignore => (Store::open_read_only(&root), Vec::new(), None),
    };
    let remote = match keys {
        Keys::Ignore => None,
        Keys::Sign | Keys::SignFresh | Keys::Check => super::remote_choice::open(
            ctx,
            loaded.workspace.catalog.as_ref(),
            ctx.cache_policy(),
            &mut loaded.notes,
        )
        .map_err(|d| vec![d])?,
    };
    let mut pulled = Vec::new();
    if let Some(r) = &remote
        && r.policy.pulls()
        && keys != Keys::SignFresh
    {
        let wanted = missing(&loaded, &fingerprints, &store);
        if !wanted.is_empty() {
            // Pulled receipts are kept: a store only read so far is made a real one.
            match Store::open(&root)
                .map_err(|e| crate::store::diagnostic(&e))
                .and_then(|writable| ctx.runtime().map(|runtime| (writable, runtime)))
            {
                Ok((writable, runtime)) => {
                    let interrupt = crate::base::interrupt::Interrupt::installed();
                    let signers = crate::proof::travel::Signers::new(
                        &trusted,
                        loaded.workspace.catalog.as_ref(),
                    );
                    let p = crate::proof::travel::pull(
                        &runtime,
                        &r.cache,
                        &writable,
                        &signers,
                        wanted,
                        interrupt.as_ref(),
                    );
                    loaded.notes.extend(p.warnings);
                    pulled = p.imported;
                }
                Err(d) => loaded.notes.push(d),
            }
        }
    }
    Ok(Evaluated {
        loaded,
        mode,
        observed,
        fingerprints,
        store,
        trusted,
        signing_key,
        remote,
        pulled,
    })
}

/// The answer of a command that reads a remote cache (`status`, `plan`, `cache pull`,
/// `cache push`) when SIGINT or SIGTERM came while it worked: the pull or push ended at
/// once, and the command ends with its one document (exit 130), `status` carrying what it
/// had to say so far.
pub fn interrupted<P>(
    command: &str,
    mut status: Vec<Diagnostic>,
) -> crate::present::output::Report<P> {
    status.push(
        Diagnostic::error(
            Code::Interrupted,
            format!(
                "`{command}` was interrupted; what the remote cache had not yet given was left"
            ),
        )
        .surface(command)
        .fix(format!("Run `{command}` again.")),
    );
    crate::present::output::Report::failed(status, crate::present::exit::Verdict::Interrupted)
}

/// What each receipt of the change answers, for those the local store has no entry for.
fn missing(
    loaded: &Loaded,
    fingerprints: &Fingerprints,
    store: &Store,
) -> Vec<crate::proof::travel::Wanted> {
    let mut out = Vec::new();
    for (id, _, p) in loaded.prepared.graph.providers() {
        for o in &p.outputs {
            let Some(fp) = fingerprints.of_receipt(id, &o.under) else {
                continue;
            };
            if store
                .action(&Store::action_key(fp, &o.under, &o.capability))
                .is_none()
            {
                out.push(crate::proof::travel::Wanted {
                    fingerprint: *fp,
                    receipt: o.under.clone(),
                    capability: o.capability.clone(),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The store, read only, and the keys whose receipts are trusted, as [`Keys::Check`] has
/// them: a store key that is not trusted stops the command (exit 3) rather than showing
/// every receipt as unverified without saying why.
pub fn checked_store(
    ctx: &Context,
    loaded: &Loaded,
) -> Result<(Store, Vec<crate::attest::envelope::TrustedKey>), Vec<Diagnostic>> {
    let pins = crate::proof::trust::Pins::new(ctx.env());
    let root = &loaded.workspace.root;
    let inspection = crate::proof::trust::inspect(&pins, root, loaded.workspace.catalog.as_ref());
    if let Some(d) = inspection.diagnostic() {
        return Err(vec![d]);
    }
    Ok((Store::open_read_only(root), inspection.trusted))
}
