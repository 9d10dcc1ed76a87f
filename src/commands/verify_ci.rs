//! `proofgraph evidence verify-ci <change> <provider> <envelope>`: import a
//! signed result from CI (or any external system) for an `external`
//! provider. The envelope is checked completely (see [`crate::decide::external`])
//! before a receipt is written; a rejected envelope writes nothing.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use proofgraph_graph::{Adapter, ProviderId};
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::decide::external::{self, Expectation, MAX_ENVELOPE_BYTES};
use crate::observe::listing::Listing;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::components;
use crate::proof::receipt::{self, Artifact, Outcome, Proof, TestNames};
use crate::run::ReceiptView;
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Keys, evaluate};
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
    let e = match evaluate(ctx, change, None, Keys::Sign) {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let graph = &e.loaded.prepared.graph;
    let name = e.loaded.change.name.clone();
    let Some((id, p)) = ProviderId::parse(provider).ok().and_then(|id| {
        let node = graph.provider(&id)?;
        Some((id, graph.node(node).provider()?.clone()))
    }) else {
        let known: Vec<String> = graph.providers().map(|(id, _, _)| id.to_string()).collect();
        return Report::failed(
            vec![
                Diagnostic::error(
                    Code::UnknownProvider,
                    format!("change `{change}` has no provider `{provider}`"),
                )
                .surface("provider")
                .fix(format!("Use one of: {}.", known.join(", "))),
            ],
            Verdict::Invalid,
        );
    };
    let ci = match (&p.spec.ci, p.spec.adapter.value) {
        (Some(ci), Adapter::External) => ci.clone(),
        _ => {
            return Report::failed(
                vec![Diagnostic::error(
                    Code::NotExternal,
                    format!("provider `{id}` is not an `external` provider with `ci: {{issuer, publicKey}}`; only those accept signed results"),
                )
                .at(&p.file, p.spec.adapter.pos)
                .fix("Declare the provider with `adapter: external` and `ci: {issuer: <who signs>, publicKey: <Ed25519 PEM>}`.")],
                Verdict::Invalid,
            );
        }
    };
    if let Err(r) = external::ci_key(&ci.public_key.value) {
        return Report::failed(
            vec![
                Diagnostic::error(r.code, r.message)
                    .at(&p.file, ci.public_key.pos)
                    .fix(r.fix),
            ],
            Verdict::Invalid,
        );
    }
    let bytes = match read_envelope(envelope) {
        Ok(b) => b,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let binding = match graph.binding(&id, &e.observed.world, &e.fingerprints) {
        Ok(b) => b,
        Err(err) => {
            return Report::failed(
                vec![Diagnostic::error(Code::InternalError, err.to_string())],
                Verdict::Invalid,
            );
        }
    };
    let claims: Vec<String> = p.claims.iter().map(ToString::to_string).collect();
    let expected = Expectation {
        issuer: &ci.issuer.value,
        public_key: &ci.public_key.value,
        binding: &binding.sha256_hex(),
        claims: &claims,
    };
    let mut payload = VerifyPayload {
        change: Some(name.to_string()),
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
            return Report {
                payload: Some(payload),
                status: vec![d],
                verdict: Verdict::Failed,
            };
        }
    };
    let key = e
        .signing_key
        .clone()
        .expect("evaluate made or refused the signing key");
    let now = receipt::now_rfc3339();
    let envelope_sha = match e.store.put(&bytes) {
        Ok(s) => s,
        Err(err) => return Report::failed(vec![store_error(&err)], Verdict::Invalid),
    };
    let files = e
        .observed
        .files
        .get(&id)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let listing = Listing::write(files);
    let inputs = match e.store.put(&listing) {
        Ok(s) => s,
        Err(err) => return Report::failed(vec![store_error(&err)], Verdict::Invalid),
    };
    let manifest = graph
        .manifest(&id, &e.observed.world, &e.fingerprints)
        .map(|m| components(&m))
        .unwrap_or_default();
    let tests = TestNames {
        passed: accepted.passed_tests.clone(),
        ..TestNames::default()
    };
    for output in &p.outputs {
        let proof = Proof {
            version: receipt::RECEIPT_VERSION,
            change: name.clone(),
            provider: id.clone(),
            receipt: output.under.clone(),
            capability: output.capability.clone(),
            claims: claims.clone(),
            outcome: Outcome::Pass,
            reason: None,
            claim_outcomes: std::collections::BTreeMap::new(),
            critical_cases: std::collections::BTreeMap::new(),
            adapter: "external".to_owned(),
            counts: None,
            discovered: None,
            minimum: None,
            sandbox: proofgraph_sandbox::SandboxMode::None,
            isolation: receipt::RunIsolation::None,
            network: proofgraph_graph::model::Network::Private,
            run_id: format!("verify-ci:{}", accepted.keyid),
            started_at: now.clone(),
            finished_at: now.clone(),
            duration_ms: 0,
            exit: None,
            artifacts: vec![Artifact {
                kind: receipt::ArtifactKind::ExternalEvidence,
                path: Some(envelope.display().to_string()),
                sha256: envelope_sha,
                size: bytes.len() as u64,
                name: None,
                content_type: None,
                whole: None,
            }],
            fingerprint: binding.fingerprint,
            binding: crate::store::Sha256::from_bytes(binding.sha256),
            manifest: manifest.clone(),
            inputs,
            inputs_size: Some(listing.len() as u64),
            input_files: files.len() as u64,
            trees: std::collections::BTreeMap::new(),
            commits: std::collections::BTreeMap::new(),
            executed: None,
        };
        let written = receipt::write(&e.store, &key, proof, &tests, &e.loaded.secrets)
            .map_err(|err| err.to_string())
            .and_then(|(sha, proof)| {
                let action =
                    Store::action_key(&proof.fingerprint, &proof.receipt, &proof.capability);
                e.store
                    .set_action(&action, &sha)
                    .and_then(|()| {
                        e.store
                            .set_ref(&name, &proof.receipt, &proof.capability, &sha)
                    })
                    .map(|()| (sha, proof))
                    .map_err(|err| err.to_string())
            });
        match written {
            Ok((sha, proof)) => payload.receipts.push(ReceiptView {
                receipt: proof.receipt.clone(),
                capability: proof.capability.clone(),
                outcome: Outcome::Pass,
                reason: None,
                sha256: sha,
            }),
            Err(err) => {
                return Report::failed(
                    vec![
                        Diagnostic::error(
                            Code::StoreUnusable,
                            format!("the receipt could not be written: failed to {err}"),
                        )
                        .surface("store"),
                    ],
                    Verdict::Invalid,
                );
            }
        }
    }
    payload.accepted = Some(true);
    payload.keyid = Some(accepted.keyid);
    Report {
        payload: Some(payload),
        status: e.loaded.prepared.warnings,
        verdict: Verdict::Success,
    }
}
