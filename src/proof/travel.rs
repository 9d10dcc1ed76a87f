//! Receipts that travel: pulling the receipts a change needs from the remote cache into
//! the local store, and pushing the receipts a run wrote.
//!
//! Entries are kept per signer: a receipt is pushed under its fingerprint, name, capability
//! *and* the key id of the key that signed it (`encoding::action`), and a pull asks only for
//! the entries of the keys this workspace trusts ([`Signers`]: the store's own key, then
//! `trustedKeys` in order, at most [`LOOKED_UP_TRUSTED_KEYS`] of them), all at once, and
//! takes the first, in that order, that counts. A writer nobody here trusts can only push
//! under its own key id, where no reader of this workspace looks.
//!
//! A pulled receipt counts only when its envelope verifies against a key this workspace
//! trusts *and* it answers exactly what was asked — the fingerprint computed here, now, for
//! the same receipt name and capability. Its blobs are checked against their digests
//! before a byte is kept (`RemoteCache::blob`), and what is fetched besides the envelope is
//! what the *signed* receipt names (its input listing and artifacts), never only what the
//! unsigned entry lists. Every blob is read under a size decided before its first byte —
//! the envelope and an old receipt's input listing under fixed limits, the rest under the
//! size the signed receipt records, never under a size only the entry states — and every
//! call under an overall deadline. Anything else is a warning and the provider runs: a
//! remote is never a pass on its own word, and its health never changes a verdict. A
//! SIGINT or SIGTERM ends a pull or a push at once.

use std::sync::Arc;

use proofgraph_graph::fingerprint::Fingerprint;
use proofgraph_graph::{CapabilityName, ProviderId};

use crate::attest::envelope::TrustedKey;
use crate::attest::keys::KeyId;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::interrupt::Interrupt;
use crate::load::config::catalog::Catalog;
use crate::proof::receipt;
use crate::store::remote::encoding::Outputs;
use crate::store::remote::{
    BlobDigest, LOOKED_UP_TRUSTED_KEYS, RemoteCache, RemoteError, Uploaded, encoding,
};
use crate::store::{Sha256, Store};

/// What a receipt answers: the action-cache triple.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Wanted {
    /// The provider's fingerprint, computed here.
    pub fingerprint: Fingerprint,
    /// The name the receipt is kept under.
    pub receipt: ProviderId,
    /// The capability it vouches for.
    pub capability: CapabilityName,
}

/// How many receipts are fetched at once.
const IN_FLIGHT: usize = 8;

/// Whose entries a pull looks up, and the keys a pulled receipt is verified against.
#[derive(Debug, Clone)]
pub struct Signers {
    /// The keys whose receipts count.
    trusted: Vec<TrustedKey>,
    /// The key ids a receipt is looked up under, in the order a pull takes their entries:
    /// the store's own key (trusted, and not listed in `trustedKeys`: CI's key, listed
    /// there, is looked up where the list puts it), then the first
    /// [`LOOKED_UP_TRUSTED_KEYS`] entries of `trustedKeys`, each once.
    looked_up: Vec<KeyId>,
    /// Whether `trustedKeys` lists a usable key: without one, only what this store's own
    /// key pushed can come back.
    listed: bool,
}

impl Signers {
    /// The signers of a workspace that trusts `trusted` (the store's key when it is
    /// trusted, and every usable `trustedKeys` entry of `catalog`).
    pub fn new(trusted: &[TrustedKey], catalog: Option<&Catalog>) -> Self {
        let listed: Vec<KeyId> = catalog
            .iter()
            .flat_map(|c| &c.trusted_keys)
            .filter_map(|k| TrustedKey::from_pem(&k.public_key.value).ok())
            .map(|k| k.id())
            .collect();
        let mut looked_up: Vec<KeyId> = trusted
            .iter()
            .map(TrustedKey::id)
            .filter(|id| !listed.contains(id))
            .collect();
        let trusted_ids: Vec<KeyId> = trusted.iter().map(TrustedKey::id).collect();
        for id in listed.iter().take(LOOKED_UP_TRUSTED_KEYS) {
            if trusted_ids.contains(id) && !looked_up.contains(id) {
                looked_up.push(*id);
            }
        }
        Signers {
            trusted: trusted.to_vec(),
            looked_up,
            listed: !listed.is_empty(),
        }
    }

    /// The key ids a receipt is looked up under, in order.
    pub fn looked_up(&self) -> &[KeyId] {
        &self.looked_up
    }
}

/// The most bytes a pulled receipt's envelope may have: what a receipt read from a file
/// may (`receipt verify`); a real one holds a few KiB, or a few MiB with every test named.
pub const MAX_ENVELOPE_BYTES: u64 = 16 << 20;

/// The most bytes the input listing of a pulled receipt that does not record its size
/// (`inputs_size`, made before it was recorded) may have: some 600 000 files. A receipt
/// that records it is read at exactly that size.
pub const MAX_INPUTS_BYTES: u64 = 64 << 20;

/// How often a pull or a push looks for a signal.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Returns when `interrupt` is set (never without one).
async fn signalled(interrupt: Option<&Interrupt>) {
    let Some(interrupt) = interrupt else {
        return std::future::pending().await;
    };
    while !interrupt.is_set() {
        tokio::time::sleep(SIGNAL_POLL).await;
    }
}

/// What pulling found.
#[derive(Debug, Default)]
pub struct Pulled {
    /// Receipts now in the local store, each with what it answers.
    pub imported: Vec<(Wanted, Sha256)>,
    /// Why entries were ignored, and whether the remote failed.
    pub warnings: Vec<Diagnostic>,
}

/// The diagnostic of a remote failure, while it was to `what` (`pull`, `push`, `be
/// checked`), reported at `cache.<surface>`.
pub fn diagnostic(e: &RemoteError, what: &str, surface: &str) -> Diagnostic {
    let (code, fix) = match e {
        RemoteError::Unavailable { .. } => (
            Code::RemoteCacheUnavailable,
            "Nothing was lost: the run used the local store. Check that the cache is up (`proofgraph doctor`), or raise `cache.timeoutMs`.",
        ),
        RemoteError::Proxy { .. } => (
            Code::RemoteProxyUnavailable,
            "Nothing was lost: the run used the local store. Check that the proxy the message names is up and lets the cache's host and port through, or list the cache's host in `NO_PROXY` if it is reached directly.",
        ),
        RemoteError::Refused { .. } => (
            Code::RemoteCacheRefused,
            "Set the environment variables `cache.headersFromEnv` names to credentials the cache accepts.",
        ),
        RemoteError::Unsupported { .. } => (
            Code::RemoteCacheUnsupported,
            "Point `cache.remote` at a Remote Execution API cache that offers SHA-256, or at a Bazel HTTP cache.",
        ),
        RemoteError::Corrupt { .. } => (
            Code::RemoteCacheCorrupt,
            "The entry was ignored and the provider runs; remove the damaged blob from the cache (its digest is in the message).",
        ),
    };
    Diagnostic::warning(
        code,
        format!("the remote cache could not {what}: failed to {e}"),
    )
    .surface(&format!("cache.{surface}"))
    .fix(fix)
}

/// Why `missed` receipts were not found: the workspace trusts no key but its store's own
/// (`own` of them: 0 or 1), and entries are kept per signer.
fn unlisted(missed: usize, own: usize) -> Diagnostic {
    let looked = if own == 0 {
        "no key was looked up (this store has no key of its own yet)"
    } else {
        "only this store's own key was looked up"
    };
    Diagnostic::warning(
        Code::RemoteReceiptUntrusted,
        format!(
            "{missed} receipt{} not found in the remote cache: `trustedKeys` in proofgraph.yaml lists no key, so {looked}; the remote keeps each receipt under the key id of its signer, and one that CI or another clone pushed is looked up only under a key this workspace trusts",
            if missed == 1 { " was" } else { "s were" }
        ),
    )
    .surface("cache.pull")
    .fix("Nothing to do if you do not know the signer: the provider runs here. If CI signs with a key this workspace should trust, add CI's public key to `trustedKeys` of proofgraph.yaml as CI prints it (`proofgraph key show` on CI), never one taken from the receipt.")
}

fn untrusted(wanted: &Wanted, why: String) -> Diagnostic {
    Diagnostic::warning(
        Code::RemoteReceiptUntrusted,
        format!(
            "the remote receipt for `{}` ({}) was not used: {why}",
            wanted.receipt, wanted.capability
        ),
    )
    .surface("cache.pull")
    .fix("Nothing to do if you do not know the signer: the provider runs here. If CI signs with a key this workspace should trust, add CI's public key to `trustedKeys` of proofgraph.yaml as CI prints it (`proofgraph key show` on CI), never one taken from the receipt.")
}

/// Fetches the receipt that answers `wanted`, checks it, and keeps it in `store` (and its
/// input listing and artifacts, so `explain` and `log` work as for a local one). Every
/// signer's entry is asked for at once (one round trip, however many keys are trusted);
/// the first, in [`Signers::looked_up`]'s order, that counts is taken. `None`: the remote
/// has none, or none this workspace uses (a warning in `warnings` for each it found and
/// refused). A corrupt entry or blob is a warning too, and the next signer's entry is
/// tried; a remote that fails otherwise ends the lookup.
async fn pull_one(
    cache: &RemoteCache,
    store: &Store,
    signers: &Signers,
    wanted: &Wanted,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Sha256>, RemoteError> {
    let keys: Vec<BlobDigest> = signers
        .looked_up
        .iter()
        .map(|signer| {
            encoding::action(
                &wanted.fingerprint,
                &wanted.receipt,
                &wanted.capability,
                signer,
            )
            .key
        })
        .collect();
    let entries =
        futures_util::future::join_all(keys.into_iter().map(|key| cache.entry(key))).await;
    for entry in entries {
        let taken = match entry {
            Ok(Some(outputs)) => {
                take(cache, store, &signers.trusted, wanted, outputs, warnings).await
            }
            Ok(None) => continue,
            Err(e) => Err(e),
        };
        match taken {
            Ok(Some(sha)) => return Ok(Some(sha)),
            Ok(None) => {}
            Err(e @ RemoteError::Corrupt { .. }) => warnings.push(diagnostic(&e, "pull", "pull")),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Checks the receipt of the entry `outputs` (found for `wanted`) and keeps it in `store`;
/// `None` (with a warning) when it does not count.
async fn take(
    cache: &RemoteCache,
    store: &Store,
    trusted: &[TrustedKey],
    wanted: &Wanted,
    outputs: Outputs,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Sha256>, RemoteError> {
    let Some(envelope) = cache.blob(outputs.envelope, MAX_ENVELOPE_BYTES).await? else {
        warnings.push(untrusted(
            wanted,
            format!(
                "its entry names an envelope ({}) the cache does not have",
                outputs.envelope
            ),
        ));
        return Ok(None);
    };
    let proof = match receipt::verify_bytes(&envelope, trusted) {
        Ok((proof, _keyid)) => proof,
        Err(receipt::Rejected::Signature(why)) => {
            let named = receipt::named_keys(&envelope);
            warnings.push(untrusted(
                wanted,
                format!(
                    "no key this workspace trusts signed it (it names {}): {why}",
                    if named.is_empty() {
                        "no key".to_owned()
                    } else {
                        named.join(", ")
                    }
                ),
            ));
            return Ok(None);
        }
        Err(receipt::Rejected::NotAReceipt(why)) => {
            warnings.push(untrusted(wanted, format!("it is not a receipt: {why}")));
            return Ok(None);
        }
    };
    if proof.fingerprint != wanted.fingerprint
        || proof.receipt != wanted.receipt
        || proof.capability != wanted.capability
    {
        warnings.push(untrusted(
            wanted,
            format!(
                "it answers `{}` ({}) at fingerprint {}, not this one ({})",
                proof.receipt, proof.capability, proof.fingerprint, wanted.fingerprint
            ),
        ));
        return Ok(None);
    }
    // What the signed receipt names, each blob read under the size it records (the input
    // listing of an old receipt under a fixed limit), checked, and kept as it comes.
    let mut named: Vec<(BlobDigest, u64)> = proof
        .artifacts
        .iter()
        .map(|a| {
            let digest = BlobDigest {
                sha256: a.sha256,
                size: a.size,
            };
            (digest, a.size)
        })
        .collect();
    if !store.has(&proof.inputs) {
        match proof.inputs_size {
            Some(size) => named.push((
                BlobDigest {
                    sha256: proof.inputs,
                    size,
                },
                size,
            )),
            None => match outputs.all().into_iter().find(|d| d.sha256 == proof.inputs) {
                Some(d) => named.push((d, MAX_INPUTS_BYTES)),
                None => {
                    warnings.push(untrusted(
                        wanted,
                        "its entry does not list the input listing the receipt names".to_owned(),
                    ));
                    return Ok(None);
                }
            },
        }
    }
    for (digest, limit) in named {
        if store.has(&digest.sha256) {
            continue;
        }
        match cache.blob(digest, limit).await? {
            Some(bytes) => {
                // Kept at once, so what a receipt names never piles up in memory (a blob
                // of a receipt refused later is left for `cache gc`).
                if let Err(e) = store.put(&bytes) {
                    warnings.push(crate::store::diagnostic(&e));
                    return Ok(None);
                }
            }
            None => {
                warnings.push(untrusted(
                    wanted,
                    format!("a blob it names ({digest}) is not in the cache"),
                ));
                return Ok(None);
            }
        }
    }
    let kept = (|| {
        let sha = store.put(&envelope)?;
        let key = Store::action_key(&wanted.fingerprint, &wanted.receipt, &wanted.capability);
        store.set_action(&key, &sha)?;
        store.set_ref(&proof.change, &proof.receipt, &proof.capability, &sha)?;
        Ok::<_, crate::store::StoreError>(sha)
    })();
    match kept {
        Ok(sha) => Ok(Some(sha)),
        Err(e) => {
            warnings.push(crate::store::diagnostic(&e));
            Ok(None)
        }
    }
}

/// The remote's first call (capabilities), and how long it took: what `doctor` shows.
pub fn check(
    runtime: &tokio::runtime::Handle,
    cache: &RemoteCache,
) -> (
    Result<crate::store::remote::Capabilities, RemoteError>,
    std::time::Duration,
) {
    let started = std::time::Instant::now();
    let answer = runtime.block_on(cache.capabilities());
    (answer, started.elapsed())
}

/// Pulls the receipt of each of `wanted` (those the local store lacks: the caller says
/// which), at most [`IN_FLIGHT`] at a time. A remote that fails is tried no further. When
/// `interrupt` is set (SIGINT, SIGTERM), the pull ends at once with what it has; the
/// caller sees the signal and stops.
pub fn pull(
    runtime: &tokio::runtime::Handle,
    cache: &RemoteCache,
    store: &Store,
    signers: &Signers,
    wanted: Vec<Wanted>,
    interrupt: Option<&Interrupt>,
) -> Pulled {
    if wanted.is_empty() {
        return Pulled::default();
    }
    let work = async {
        let mut pulled = Pulled::default();
        if let Err(e) = cache.capabilities().await {
            pulled.warnings.push(diagnostic(&e, "pull", "pull"));
            return pulled;
        }
        for chunk in wanted.chunks(IN_FLIGHT) {
            let mut calls = Vec::new();
            for w in chunk {
                calls.push(async move {
                    let mut warnings = Vec::new();
                    let got = pull_one(cache, store, signers, w, &mut warnings).await;
                    (w, got, warnings)
                });
            }
            let mut failed = None;
            for (w, got, warnings) in futures_util::future::join_all(calls).await {
                pulled.warnings.extend(warnings);
                match got {
                    Ok(Some(sha)) => pulled.imported.push((w.clone(), sha)),
                    Ok(None) => {}
                    Err(e @ RemoteError::Corrupt { .. }) => {
                        pulled.warnings.push(diagnostic(&e, "pull", "pull"));
                    }
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failed {
                pulled.warnings.push(diagnostic(&e, "pull", "pull"));
                return pulled;
            }
        }
        let missed = wanted.len() - pulled.imported.len();
        if missed > 0 && !signers.listed {
            pulled
                .warnings
                .push(unlisted(missed, signers.looked_up.len()));
        }
        pulled
    };
    runtime.block_on(async {
        tokio::select! {
            pulled = work => pulled,
            () = signalled(interrupt) => Pulled::default(),
        }
    })
}

/// What pushing did.
#[derive(Debug, Default)]
pub struct Pushed {
    /// Receipts whose entry is now in the remote.
    pub receipts: usize,
    /// What was sent.
    pub uploaded: Uploaded,
    /// Receipts that could not be pushed, and why (the first failure of the remote stops
    /// the rest; they stay local).
    pub warnings: Vec<Diagnostic>,
    /// Receipts not pushed.
    pub failed: usize,
    /// Receipts kept on this machine by rule: made in place (`--sandbox none`), where the
    /// job could see and change anything, they never leave it.
    pub kept_local: usize,
}

/// Uploads the receipt `sha` of `store` with everything it names (`None`: kept on this
/// machine by rule, see [`Pushed::kept_local`]).
async fn push_one(
    cache: &RemoteCache,
    store: &Store,
    trusted: &[TrustedKey],
    sha: &Sha256,
) -> Result<Option<Uploaded>, String> {
    let verified = receipt::read(store, sha, trusted)
        .ok_or_else(|| format!("receipt {sha} does not verify here; it is not pushed"))?;
    let proof = &verified.proof;
    if proof.sandbox == proofgraph_sandbox::SandboxMode::None && proof.adapter != "external" {
        return Ok(None);
    }
    let envelope = store
        .get(sha)
        .ok_or_else(|| format!("receipt {sha} is gone from the store"))?;
    let mut blobs = Vec::new();
    let mut artifacts = Vec::new();
    for a in &proof.artifacts {
        if let Some(bytes) = store.get(&a.sha256) {
            artifacts.push(BlobDigest::of(&bytes));
            blobs.push(bytes);
        }
    }
    let inputs = store.get(&proof.inputs).map(|bytes| {
        let d = BlobDigest::of(&bytes);
        blobs.push(bytes);
        d
    });
    blobs.push(envelope.clone());
    let outputs = encoding::Outputs {
        envelope: BlobDigest::of(&envelope),
        inputs,
        artifacts,
    };
    // Under the key that signed it (the one it verified against here), whoever pushes it.
    let signer = KeyId::parse(&verified.keyid)
        .map_err(|why| format!("receipt {sha}'s signer cannot be named: {why}"))?;
    let encoded = encoding::action(
        &proof.fingerprint,
        &proof.receipt,
        &proof.capability,
        &signer,
    );
    cache
        .put(&encoded, &outputs, blobs)
        .await
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The warning of a remote whose capabilities say it takes no action-cache updates.
fn read_only(cache: &RemoteCache) -> Diagnostic {
    Diagnostic::warning(
        Code::RemoteCacheReadOnly,
        format!(
            "the remote cache {} does not accept action-cache updates (its capabilities say `update_enabled: false`): pushes are off for this run, and its receipts stay in the local store",
            cache.name()
        ),
    )
    .surface("cache.push")
    .fix("Point `cache.remote` at an instance that accepts updates from this client, or set the remote's policy to `r` where only reading is meant.")
}

/// Uploads every receipt `rx` brings, [`IN_FLIGHT`] at a time, as they come. The server's
/// capabilities are asked once, at the first receipt: one that takes no action-cache
/// updates gets no call at all (one warning). A remote that was down before the push
/// began is not reported again (the pull said so); a signal ends it at once.
async fn push_all(
    cache: Arc<RemoteCache>,
    store: Store,
    trusted: Arc<Vec<TrustedKey>>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Sha256>,
    interrupt: Option<Interrupt>,
) -> Pushed {
    // Per receipt: what was sent, or why not (`None`: the remote was down already).
    type Done = (Sha256, Result<Option<Uploaded>, Option<String>>);
    let down_before = cache.down().is_some();
    let mut tasks: tokio::task::JoinSet<Done> = tokio::task::JoinSet::new();
    let mut done: Vec<Done> = Vec::new();
    // Receipts not even tried: the remote takes no updates, or cannot say what it takes.
    let mut off: Option<Option<Diagnostic>> = None;
    let mut skipped = 0usize;
    let work = async {
        loop {
            while tasks.len() >= IN_FLIGHT {
                if let Some(Ok(d)) = tasks.join_next().await {
                    done.push(d);
                }
            }
            let Some(sha) = rx.recv().await else {
                break;
            };
            if off.is_none() && !down_before {
                off = Some(match cache.capabilities().await {
                    Ok(c) if c.updates_action_cache => None,
                    Ok(_) => Some(read_only(&cache)),
                    // Down now: reported below, with the receipts it cost.
                    Err(
                        RemoteError::Unavailable { .. }
                        | RemoteError::Refused { .. }
                        | RemoteError::Proxy { .. },
                    ) => None,
                    Err(e) => Some(diagnostic(&e, "push", "push")),
                });
            }
            if matches!(off, Some(Some(_))) {
                skipped += 1;
                continue;
            }
            let (cache, store, trusted) = (Arc::clone(&cache), store.clone(), Arc::clone(&trusted));
            tasks.spawn(async move {
                if cache.down().is_some() {
                    return (sha, Err(None));
                }
                let result = push_one(&cache, &store, &trusted, &sha).await.map_err(Some);
                (sha, result)
            });
        }
        while let Some(d) = tasks.join_next().await {
            if let Ok(d) = d {
                done.push(d);
            }
        }
    };
    let interrupted = tokio::select! {
        () = work => false,
        () = signalled(interrupt.as_ref()) => true,
    };
    let mut pushed = Pushed {
        failed: skipped,
        ..Pushed::default()
    };
    if let Some(Some(warning)) = off {
        pushed.warnings.push(warning);
    }
    for (sha, result) in done {
        match result {
            Ok(None) => pushed.kept_local += 1,
            Ok(Some(up)) => {
                pushed.receipts += 1;
                pushed.uploaded.blobs += up.blobs;
                pushed.uploaded.bytes += up.bytes;
            }
            Err(why) => {
                pushed.failed += 1;
                if let Some(why) = why
                    && cache.down().is_none()
                {
                    pushed.warnings.push(
                        Diagnostic::warning(
                            Code::RemoteUploadFailed,
                            format!("receipt {sha} was not uploaded: {why}"),
                        )
                        .surface("cache.push")
                        .fix("It stays in the local store; `proofgraph cache push <change>` uploads it later."),
                    );
                }
            }
        }
    }
    if let Some(e) = cache.down()
        && pushed.failed > 0
        && !down_before
        && !interrupted
    {
        pushed.warnings.push(diagnostic(&e, "push", "push"));
    }
    pushed
}

/// Uploads each receipt of `shas` (a command's `cache push`).
pub fn push(
    runtime: &tokio::runtime::Handle,
    cache: RemoteCache,
    store: &Store,
    trusted: &[TrustedKey],
    shas: Vec<Sha256>,
    interrupt: Option<&Interrupt>,
) -> Pushed {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for sha in shas {
        let _ = tx.send(sha);
    }
    drop(tx);
    runtime.block_on(push_all(
        Arc::new(cache),
        store.clone(),
        Arc::new(trusted.to_vec()),
        rx,
        interrupt.cloned(),
    ))
}

/// Uploads receipts while a run goes on: a thread of its own takes each receipt as it is
/// written, so uploading never waits on the run and the run never waits on it until it
/// ends ([`Uploader::finish`]).
pub struct Uploader {
    tx: Option<tokio::sync::mpsc::UnboundedSender<Sha256>>,
    thread: Option<std::thread::JoinHandle<Pushed>>,
}

impl Uploader {
    /// Starts uploading to `cache` what `store` holds; `interrupt` (set by SIGINT or
    /// SIGTERM) ends the uploads at once. The thread drives them on `runtime` (the
    /// invocation's, whose workers move the uploads on while the run's loop blocks
    /// another thread in it).
    pub fn start(
        runtime: tokio::runtime::Handle,
        cache: RemoteCache,
        store: Store,
        trusted: Vec<TrustedKey>,
        interrupt: Option<Interrupt>,
    ) -> Self {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Sha256>();
        let thread = std::thread::Builder::new()
            .name("upload".to_owned())
            .spawn(move || {
                runtime.block_on(push_all(
                    Arc::new(cache),
                    store,
                    Arc::new(trusted),
                    rx,
                    interrupt,
                ))
            })
            .ok();
        Uploader {
            tx: Some(tx),
            thread,
        }
    }

    /// Where the run sends each receipt it writes.
    pub fn sender(&self) -> Option<tokio::sync::mpsc::UnboundedSender<Sha256>> {
        self.tx.clone()
    }

    /// Waits for what was sent to be uploaded (or to fail).
    pub fn finish(mut self) -> Pushed {
        drop(self.tx.take());
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use proofgraph_graph::span::{Pos, Spanned};

    use super::*;
    use crate::load::config::catalog;

    fn key(seed: u8) -> TrustedKey {
        TrustedKey::new(ed25519_dalek::SigningKey::from_bytes(&[seed; 32]).verifying_key())
    }

    /// A catalog whose `trustedKeys` lists the keys of `seeds`, in that order.
    fn listing(seeds: &[u8]) -> Catalog {
        Catalog {
            trusted_keys: seeds
                .iter()
                .map(|s| catalog::TrustedKey {
                    name: Spanned::new(format!("k{s}"), Pos::default()),
                    public_key: Spanned::new(
                        crate::attest::keys::public_key_to_pem(key(*s).verifying_key()),
                        Pos::default(),
                    ),
                })
                .collect(),
            ..Catalog::default()
        }
    }

    #[test]
    fn the_store_s_own_key_is_looked_up_first_then_trusted_keys_in_their_order() {
        // As `trust::inspect` lists them: the store's key (pinned), then `trustedKeys`.
        let trusted = [key(9), key(3), key(1), key(2)];
        let signers = Signers::new(&trusted, Some(&listing(&[3, 1, 2])));
        assert_eq!(
            signers.looked_up(),
            [key(9).id(), key(3).id(), key(1).id(), key(2).id()]
        );
        assert!(signers.listed);
        // CI: its store's key is the one `trustedKeys` lists; it is looked up once, where
        // the list puts it.
        let trusted = [key(2), key(1)];
        let signers = Signers::new(&trusted, Some(&listing(&[1, 2])));
        assert_eq!(signers.looked_up(), [key(1).id(), key(2).id()]);
    }

    #[test]
    fn a_workspace_that_lists_no_key_looks_up_its_own_or_nothing() {
        let signers = Signers::new(&[key(9)], Some(&Catalog::default()));
        assert_eq!(signers.looked_up(), [key(9).id()]);
        assert!(!signers.listed);
        let signers = Signers::new(&[], None);
        assert!(signers.looked_up().is_empty());
        assert!(!signers.listed);
    }

    #[test]
    fn no_more_than_the_limit_of_trusted_keys_is_looked_up() {
        let seeds: Vec<u8> = (1..=40).collect();
        let mut trusted = vec![key(99)];
        trusted.extend(seeds.iter().map(|s| key(*s)));
        let signers = Signers::new(&trusted, Some(&listing(&seeds)));
        assert_eq!(signers.looked_up().len(), 1 + LOOKED_UP_TRUSTED_KEYS);
        assert_eq!(
            signers.looked_up()[0],
            key(99).id(),
            "the store's own first"
        );
        let listed: Vec<KeyId> = seeds[..LOOKED_UP_TRUSTED_KEYS]
            .iter()
            .map(|s| key(*s).id())
            .collect();
        assert_eq!(
            signers.looked_up()[1..],
            listed,
            "then the first of the list"
        );
        // Every trusted key still verifies: the limit is on lookups, never on trust.
        assert_eq!(signers.trusted.len(), trusted.len());
    }

    #[test]
    fn the_warning_of_a_workspace_that_lists_no_key_says_what_was_looked_up() {
        let own = unlisted(3, 1);
        assert_eq!(own.code, Code::RemoteReceiptUntrusted);
        assert!(
            own.message.contains("3 receipts were not found")
                && own
                    .message
                    .contains("only this store's own key was looked up"),
            "{}",
            own.message
        );
        let none = unlisted(1, 0);
        assert!(
            none.message.contains("1 receipt was not found")
                && none.message.contains("no key was looked up"),
            "{}",
            none.message
        );
    }
}
