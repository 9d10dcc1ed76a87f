//! `proofgraph evidence verify-ci <change> <provider> <envelope>`: import a
//! signed result from CI (or any external system) for an `external`
//! provider. The envelope is checked completely (see [`crate::decide::external`])
//! before a receipt is written; a rejected envelope writes nothing.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use proofgraph_graph::ProviderId;
use proofgraph_graph::fingerprint::Binding;
use proofgraph_graph::graph::ProviderNode;
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::decide::external::{self, Accepted, Expectation, Imported, MAX_ENVELOPE_BYTES};
use crate::observe::listing::Listing;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::{self, Outcome, Proof, TestNames, components};
use crate::run::ReceiptView;
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Evaluated, Keys, evaluate};
use crate::store::Store;
use crate::store::diagnostic as store_error;

/// The payload of `evidence verify-ci`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyPayload {
    /// The change.
    pub change: Option<String>,
    /// The provider.
    pub provider: Option<String>,
    /// Whether the envelope was accepted.
    pub accepted: Option<bool>,
    /// The provider's current binding.
    pub binding: Option<String>,
    /// The id of the key that signed it.
    pub keyid: Option<String>,
    /// The receipts written.
    pub receipts: Vec<ReceiptView>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for VerifyPayload {
    fn human(&self, out: &mut String) {
        let (Some(provider), Some(accepted)) = (&self.provider, self.accepted) else {
            return;
        };
        if accepted {
            let _ = writeln!(
                out,
                "accepted: {provider} is proven by the signed result ({} receipts)",
                self.receipts.len()
            );
        } else {
            let _ = writeln!(out, "rejected: no receipt was written for {provider}");
        }
    }
}

fn read_envelope(path: &Path) -> Result<Vec<u8>, Diagnostic> {
    let unreadable = |e: String| {
        Diagnostic::error(
            Code::EnvelopeUnreadable,
            format!("the envelope `{}` cannot be read: {e}", path.display()),
        )
        .surface("envelope")
        .fix("Pass the path of the DSSE envelope (JSON) the CI produced.")
    };
    let file = fs_err::File::open(path).map_err(|e| unreadable(e.kind().to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_ENVELOPE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(e.kind().to_string()))?;
    if bytes.len() > MAX_ENVELOPE_BYTES {
        return Err(unreadable(format!(
            "it is larger than {} MiB",
            MAX_ENVELOPE_BYTES >> 20
        )));
    }
    Ok(bytes)
}

/// Runs `evidence verify-ci`.
pub fn run(ctx: &Context, change: &str, provider: &str, envelope: &Path) -> Report<VerifyPayload> {
    match verify_ci(ctx, change, provider, envelope) {
        Ok(report) => report,
        Err(all) => Report::failed(all, Verdict::Invalid),
    }
}

fn verify_ci(
    ctx: &Context,
    change: &str,
    provider: &str,
    envelope: &Path,
) -> Result<Report<VerifyPayload>, Vec<Diagnostic>> {
    let e = evaluate(ctx, change, None, Keys::Sign)?;
    let graph = &e.loaded.prepared.graph;
    let (id, node) =
        crate::session::provider::find(graph, change, provider).map_err(|d| vec![d])?;
    let p = graph
        .node(node)
        .provider()
        .expect("provider ids map to provider nodes");
    let ci = external::declared_ci(p).map_err(|r| {
        vec![
            Diagnostic::error(r.code, r.message)
                .at(&p.file, p.spec.adapter.pos)
                .fix(r.fix),
        ]
    })?;
    external::ci_key(&ci.public_key.value).map_err(|r| {
        vec![
            Diagnostic::error(r.code, r.message)
                .at(&p.file, ci.public_key.pos)
                .fix(r.fix),
        ]
    })?;
    let bytes = read_envelope(envelope).map_err(|d| vec![d])?;
    let binding = graph
        .binding(&id, &e.observed.world, &e.fingerprints)
        .map_err(|err| vec![Diagnostic::error(Code::InternalError, err.to_string())])?;
    let claims: Vec<String> = p.claims.iter().map(ToString::to_string).collect();
    let expected = Expectation {
        issuer: &ci.issuer.value,
        public_key: &ci.public_key.value,
        binding: &binding.sha256_hex(),
        claims: &claims,
    };
    let mut payload = VerifyPayload {
        change: Some(e.loaded.change.name.to_string()),
        provider: Some(id.to_string()),
        accepted: Some(false),
        binding: Some(binding.sha256_hex()),
        root: Some(e.loaded.root.clone()),
        ..VerifyPayload::default()
    };
    let accepted = match external::verify(&bytes, &expected) {
        Ok(a) => a,
        Err(r) => {
            let d = Diagnostic::error(r.code, r.message)
                .surface("envelope")
                .fix(r.fix);
            return Ok(Report {
                payload: Some(payload),
                status: vec![d],
                verdict: Verdict::Failed,
            });
        }
    };
    payload.receipts = import(
        &e,
        (&id, p),
        &accepted,
        &binding,
        &claims,
        (envelope, &bytes),
    )?;
    payload.accepted = Some(true);
    payload.keyid = Some(accepted.keyid);
    Ok(Report {
        payload: Some(payload),
        status: e.loaded.prepared.warnings,
        verdict: Verdict::Success,
    })
}

/// Keeps the accepted envelope and the provider's input listing in the store, and writes
/// the receipts the result makes (`external::receipts`), each with its action-cache entry
/// and ref.
fn import(
    e: &Evaluated,
    (id, p): (&ProviderId, &ProviderNode),
    accepted: &Accepted,
    binding: &Binding,
    claims: &[String],
    (envelope, bytes): (&Path, &[u8]),
) -> Result<Vec<ReceiptView>, Vec<Diagnostic>> {
    let key = e
        .signing_key
        .clone()
        .expect("evaluate made or refused the signing key");
    let now = receipt::now_rfc3339();
    let envelope_sha = e.store.put(bytes).map_err(|err| vec![store_error(&err)])?;
    let files = e
        .observed
        .files
        .get(id)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let listing = Listing::write(files);
    let inputs = e
        .store
        .put(&listing)
        .map_err(|err| vec![store_error(&err)])?;
    let manifest = e
        .loaded
        .prepared
        .graph
        .manifest(id, &e.observed.world, &e.fingerprints)
        .map(|m| components(&m))
        .unwrap_or_default();
    let imported = Imported {
        change: &e.loaded.change.name,
        provider: id,
        outputs: &p.outputs,
        claims,
        binding,
        manifest: &manifest,
        inputs: (inputs, listing.len() as u64, files.len() as u64),
        envelope: (
            envelope.display().to_string(),
            envelope_sha,
            bytes.len() as u64,
        ),
        now: &now,
    };
    let (proofs, tests) = external::receipts(accepted, &imported);
    proofs
        .into_iter()
        .map(|proof| written(e, &key, proof, &tests))
        .collect()
}

/// A receipt written with its action-cache entry and ref.
fn written(
    e: &Evaluated,
    key: &ed25519_dalek::SigningKey,
    proof: Proof,
    tests: &TestNames,
) -> Result<ReceiptView, Vec<Diagnostic>> {
    let (sha, proof) = receipt::write(&e.store, key, proof, tests, &e.loaded.secrets)
        .map_err(|err| err.to_string())
        .and_then(|(sha, proof)| {
            let action = Store::action_key(&proof.fingerprint, &proof.receipt, &proof.capability);
            e.store
                .set_action(&action, &sha)
                .and_then(|()| {
                    e.store.set_ref(
                        &e.loaded.change.name,
                        &proof.receipt,
                        &proof.capability,
                        &sha,
                    )
                })
                .map(|()| (sha, proof))
                .map_err(|err| err.to_string())
        })
        .map_err(|err| {
            vec![
                Diagnostic::error(
                    Code::StoreUnusable,
                    format!("the receipt could not be written: failed to {err}"),
                )
                .surface("store"),
            ]
        })?;
    Ok(ReceiptView {
        receipt: proof.receipt.clone(),
        capability: proof.capability.clone(),
        outcome: Outcome::Pass,
        reason: None,
        sha256: sha,
    })
}
