//! `proofgraph hash <change> [<provider>]`: the binding hash an external
//! signer must sign (SHA-256, hex), with the BLAKE3 fingerprint beside it.

use std::fmt::Write as _;

use proofgraph_graph::ProviderId;
use proofgraph_sandbox::SandboxMode;
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Keys, evaluate};

/// One provider's binding.
#[derive(Debug, Clone, Serialize)]
pub struct BindingView {
    /// The provider.
    pub provider: String,
    /// The binding: SHA-256 over the provider's encoded components.
    pub sha256: String,
    /// The BLAKE3 fingerprint over the same components.
    pub fingerprint: String,
}

/// The payload of `hash`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HashPayload {
    /// The change.
    pub change: Option<String>,
    /// The bindings, by provider.
    pub bindings: Vec<BindingView>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for HashPayload {
    fn human(&self, out: &mut String) {
        if let [one] = self.bindings.as_slice() {
            let _ = writeln!(out, "{}", one.sha256);
            return;
        }
        for b in &self.bindings {
            let _ = writeln!(out, "{}  {}", b.sha256, b.provider);
        }
    }
}

/// Runs `hash`.
pub fn run(
    ctx: &Context,
    change: &str,
    provider: Option<&str>,
    mode: Option<SandboxMode>,
) -> Report<HashPayload> {
    let e = match evaluate(ctx, change, mode, Keys::Ignore) {
        Ok(e) => e,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let graph = &e.loaded.prepared.graph;
    let ids: Vec<ProviderId> = match provider {
        Some(name) => match crate::session::provider::find(graph, change, name) {
            Ok((id, _)) => vec![id],
            Err(unknown) => return Report::failed(vec![unknown], Verdict::Invalid),
        },
        None => graph.providers().map(|(id, _, _)| id.clone()).collect(),
    };
    let mut bindings = Vec::new();
    for id in ids {
        match graph.binding(&id, &e.observed.world, &e.fingerprints) {
            Ok(b) => bindings.push(BindingView {
                provider: id.to_string(),
                sha256: b.sha256_hex(),
                fingerprint: b.fingerprint.to_string(),
            }),
            Err(err) => {
                return Report::failed(
                    vec![Diagnostic::error(Code::InternalError, err.to_string())],
                    Verdict::Invalid,
                );
            }
        }
    }
    let mut status = e.loaded.notes;
    status.extend(e.loaded.prepared.warnings);
    status.extend(e.observed.warnings);
    Report {
        payload: Some(HashPayload {
            change: Some(e.loaded.change.name.to_string()),
            bindings,
            root: Some(e.loaded.root),
        }),
        status,
        verdict: Verdict::Success,
    }
}
