//! `proofgraph receipt verify <file|sha256>`: check a receipt on its own —
//! that a key this workspace trusts signed it, that it is a proofgraph
//! receipt, what it proves, and whether it still holds for the code as it is.

use std::fmt::Write as _;

use serde::Serialize;

use crate::load::workspace::Workspace;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::{self, Outcome};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Keys, evaluate};
use crate::store::{self, Store};

/// The payload of `receipt verify`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReceiptPayload {
    /// Whether a trusted key signed it and it is a proofgraph receipt.
    pub valid: Option<bool>,
    /// The SHA-256 of the envelope's bytes.
    pub sha256: Option<String>,
    /// The id of the key that signed it.
    pub keyid: Option<String>,
    /// The change.
    pub change: Option<String>,
    /// The provider.
    pub provider: Option<String>,
    /// The receipt's name (the provider, or a discovery receiver).
    pub receipt: Option<String>,
    /// The capability it vouches for.
    pub capability: Option<String>,
    /// Its outcome.
    pub outcome: Option<Outcome>,
    /// The binding it was made for.
    pub binding: Option<String>,
    /// Whether that is the provider's binding now (null when the change or
    /// provider is not in this workspace).
    pub current: Option<bool>,
    /// Where its command ran, when not on the machine that signed it (`remote`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executor: Option<&'static str>,
    /// The remote engine that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The engine's worker that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for ReceiptPayload {
    fn human(&self, out: &mut String) {
        let Some(true) = self.valid else { return };
        let _ = writeln!(
            out,
            "valid: {} / {} @ {} — {} (signed by {})",
            self.change.as_deref().unwrap_or(""),
            self.receipt.as_deref().unwrap_or(""),
            self.capability.as_deref().unwrap_or(""),
            self.outcome.map_or("", Outcome::as_str),
            self.keyid.as_deref().unwrap_or("")
        );
        let _ = match self.current {
            Some(true) => writeln!(out, "current: the binding is the provider's binding now"),
            Some(false) => writeln!(
                out,
                "stale: the provider's binding has changed since (`proofgraph explain` says why)"
            ),
            None => writeln!(
                out,
                "current: unknown (the change or provider is not in this workspace)"
            ),
        };
        if let Some(executor) = self.executor {
            let _ = writeln!(
                out,
                "ran: {executor}, on worker `{}` of {} (as trustworthy as that engine and its workers)",
                self.worker.as_deref().unwrap_or(""),
                self.engine.as_deref().unwrap_or("")
            );
        }
        if let Some(sha) = &self.sha256 {
            let _ = writeln!(
                out,
                "rerun: `proofgraph rerun {sha}` re-executes it from the inputs it bound"
            );
        }
    }
}

/// Runs `receipt verify`: exit 0 for a valid receipt, 1 for one no trusted
/// key signed or that is not a receipt, 3 when it cannot be read.
pub fn verify(ctx: &Context, what: &str) -> Report<ReceiptPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = Workspace::load(&resolution.root.path);
    let store = Store::open_read_only(&workspace.root);
    let inspection = crate::proof::trust::inspect(
        &crate::proof::trust::Pins::new(ctx.env()),
        &workspace.root,
        workspace.catalog.as_ref(),
    );
    let trusted = &inspection.trusted;
    let bytes = match crate::session::receipt_file::read(ctx, &store, what) {
        Ok(b) => b,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let mut payload = ReceiptPayload {
        valid: Some(false),
        sha256: Some(store::sha256_hex(&bytes)),
        root: Some(RootOutput::from(&resolution.root)),
        ..ReceiptPayload::default()
    };
    let (proof, keyid) = match receipt::verify_bytes(&bytes, trusted) {
        Ok(v) => v,
        Err(rejected) => {
            let d = crate::session::receipt_file::rejected(&bytes, rejected);
            // When the store's own key is not trusted, that is why its receipts are not.
            let mut status = vec![d];
            status.extend(inspection.diagnostic());
            return Report {
                payload: Some(payload),
                status,
                verdict: Verdict::Failed,
            };
        }
    };
    payload.current = current(ctx, &proof);
    payload.valid = Some(true);
    payload.keyid = Some(keyid);
    payload.change = Some(proof.change.to_string());
    payload.provider = Some(proof.provider.to_string());
    payload.receipt = Some(proof.receipt.to_string());
    payload.capability = Some(proof.capability.to_string());
    payload.outcome = Some(proof.outcome);
    payload.binding = Some(proof.binding.to_hex());
    payload.executor = proof.executor.map(receipt::RanBy::as_str);
    payload.engine = proof.engine.clone();
    payload.worker = proof.worker.clone();
    Report {
        payload: Some(payload),
        status: Vec::new(),
        verdict: Verdict::Success,
    }
}

/// Whether the receipt's binding is the provider's binding now.
fn current(ctx: &Context, proof: &receipt::Proof) -> Option<bool> {
    let e = evaluate(
        ctx,
        proof.change.as_str(),
        Some(proof.sandbox),
        Keys::Ignore,
    )
    .ok()?;
    let binding = e
        .loaded
        .prepared
        .graph
        .binding(&proof.provider, &e.observed.world, &e.fingerprints)
        .ok()?;
    Some(binding.sha256 == *proof.binding.as_bytes())
}
