//! Signed external results: what `proofgraph evidence verify-ci` accepts for
//! an `external` provider, and nothing else.
//!
//! An envelope is accepted only when every check holds, in this order, and
//! before any receipt is written:
//! 1. the provider's `ci.publicKey` is an Ed25519 public key (SPKI PEM);
//! 2. the file is a DSSE envelope of type `application/vnd.in-toto+json`
//!    whose signature verifies under that key (`verify_strict`; standard or
//!    URL-safe base64);
//! 3. the verified bytes (never re-read from the envelope) parse as an in-toto
//!    Statement v1 with predicate type `https://in-toto.io/attestation/test-result/v0.1`;
//! 4. the predicate's `issuer` is the provider's `ci.issuer`;
//! 5. a subject's `sha256` digest is the provider's current binding
//!    (`proofgraph hash <change> <provider>`): a result for other code is stale;
//! 6. the predicate's `claims` cover every claim the provider vouches for;
//! 7. `result` is `PASSED` and `failedTests` is empty or absent (anything but a list there
//!    is refused, never read as no failure).

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::graph::{Output, ProviderNode};
use proofgraph_graph::model::{CiVerification, Network};
use proofgraph_graph::{Adapter, ChangeName, ProviderId};

use crate::attest::envelope::{self, TrustedKey};
use crate::attest::keys;
use crate::attest::statement::{IN_TOTO_PAYLOAD_TYPE, Statement};
use crate::base::diagnostic::Code;
use crate::proof::receipt::{
    self, Artifact, ArtifactKind, Component, Outcome, PREDICATE_TYPE, Proof, RunIsolation,
    TestNames,
};
use crate::store::Sha256;

/// The largest envelope read.
pub const MAX_ENVELOPE_BYTES: usize = 16 * 1024 * 1024;

/// Why an envelope was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The diagnostic code.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub fix: String,
}

fn reject(code: Code, message: impl Into<String>, fix: impl Into<String>) -> Rejection {
    Rejection {
        code,
        message: message.into(),
        fix: fix.into(),
    }
}

/// What the provider expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation<'a> {
    /// `ci.issuer`.
    pub issuer: &'a str,
    /// `ci.publicKey` (PEM).
    pub public_key: &'a str,
    /// The provider's current binding (SHA-256 hex).
    pub binding: &'a str,
    /// The claims the provider vouches for.
    pub claims: &'a [String],
}

/// An accepted envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The verified statement.
    pub statement: Statement,
    /// The verifying key's id.
    pub keyid: String,
    /// Tests the predicate lists as passed.
    pub passed_tests: Vec<String>,
}

/// Reads a provider's `ci.publicKey`, with the import's own diagnosis of
/// common mistakes (a private key, a literal `\n`, malformed PEM, another
/// algorithm).
pub fn ci_key(public_key: &str) -> Result<TrustedKey, Rejection> {
    keys::public_key_from_pem(public_key).map(TrustedKey::new).map_err(|e| {
        reject(
            Code::CiKeyInvalid,
            format!("`ci.publicKey` is not a usable Ed25519 public key: failed to {e}"),
            "Paste the CI's Ed25519 public key as SPKI PEM (`openssl pkey -in key.pem -pubout`), in a YAML block scalar (`publicKey: |`).",
        )
    })
}

/// Verifies an envelope against a provider's expectation.
pub fn verify(bytes: &[u8], expected: &Expectation<'_>) -> Result<Accepted, Rejection> {
    let key = ci_key(expected.public_key)?;
    let verified = envelope::verify(bytes, IN_TOTO_PAYLOAD_TYPE, std::slice::from_ref(&key)).map_err(|e| {
        reject(
            Code::EnvelopeRejected,
            format!("the envelope does not verify under `ci.publicKey`: failed to {e}"),
            "Sign the DSSE PAE of the exact payload with the CI's private key (see docs/external.md); a changed byte or another key is rejected.",
        )
    })?;
    let statement = Statement::parse(&verified.body).map_err(|e| {
        reject(
            Code::StatementInvalid,
            format!("the signed payload is not an in-toto Statement v1: failed to {e}"),
            "Sign an in-toto Statement v1 (see docs/external.md).",
        )
    })?;
    if statement.predicate_type() != PREDICATE_TYPE {
        return Err(reject(
            Code::StatementInvalid,
            format!(
                "the statement's predicate type is `{}`, not `{PREDICATE_TYPE}`",
                statement.predicate_type()
            ),
            format!("Use predicateType `{PREDICATE_TYPE}`."),
        ));
    }
    let predicate = statement.predicate();
    let issuer = predicate
        .get("issuer")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    if issuer != expected.issuer {
        return Err(reject(
            Code::StatementInvalid,
            format!(
                "the statement's issuer is `{issuer}`, but the provider accepts `{}`",
                expected.issuer
            ),
            format!(
                "Set `predicate.issuer` to `{}` when signing, or fix `ci.issuer`.",
                expected.issuer
            ),
        ));
    }
    if !statement
        .subject()
        .iter()
        .any(|s| s.digest.sha256 == expected.binding)
    {
        let found: Vec<&str> = statement
            .subject()
            .iter()
            .map(|s| s.digest.sha256.as_str())
            .collect();
        return Err(reject(
            Code::EnvelopeStale,
            format!(
                "the envelope is for binding {}, but the provider's binding is now {}: it proves other code or wiring",
                found.join(", "),
                expected.binding
            ),
            "Have CI sign the current `proofgraph hash <change> <provider>` after running on this exact revision.",
        ));
    }
    let signed: BTreeSet<&str> = predicate
        .get("claims")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|c| c.as_str()).collect())
        .unwrap_or_default();
    let missing: Vec<&str> = expected
        .claims
        .iter()
        .map(String::as_str)
        .filter(|c| !signed.contains(c))
        .collect();
    if !missing.is_empty() {
        return Err(reject(
            Code::StatementInvalid,
            format!("the signed claims do not cover {}", missing.join(", ")),
            "List every claim the provider vouches for in `predicate.claims` when signing.",
        ));
    }
    let result = predicate
        .get("result")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    // Absent or a list: anything else (`"x"`, `3`, `null`, an object) is never read as no
    // failure.
    let failed = match predicate.get("failedTests") {
        None => 0,
        Some(serde_json::Value::Array(list)) => list.len(),
        Some(other) => {
            let kind = match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::String(_) => "a string",
                serde_json::Value::Array(_) | serde_json::Value::Object(_) => "an object",
            };
            return Err(reject(
                Code::StatementInvalid,
                format!("`failedTests` is {kind}, not a list of the failed tests"),
                "Sign `failedTests` as a list (empty when nothing failed), or leave it out.",
            ));
        }
    };
    if result != "PASSED" || failed > 0 {
        return Err(reject(
            Code::ExternalResultNotPassed,
            format!(
                "the signed result is `{result}` with {failed} failed tests; only a PASSED result with no failed tests is accepted"
            ),
            "Fix what failed in CI and sign the new result.",
        ));
    }
    let passed_tests = predicate
        .get("passedTests")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(Accepted {
        statement,
        keyid: verified.keyid,
        passed_tests,
    })
}

/// The provider's `ci` verification, when it is an `external` provider that declares one:
/// only those accept signed results.
pub fn declared_ci(p: &ProviderNode) -> Result<&CiVerification, Rejection> {
    match (&p.spec.ci, p.spec.adapter.value) {
        (Some(ci), Adapter::External) => Ok(ci),
        _ => Err(reject(
            Code::NotExternal,
            format!(
                "provider `{}` is not an `external` provider with `ci: {{issuer, publicKey}}`; only those accept signed results",
                p.spec.id.value
            ),
            "Declare the provider with `adapter: external` and `ci: {issuer: <who signs>, publicKey: <Ed25519 PEM>}`.",
        )),
    }
}

/// What an imported result's receipts record besides the accepted envelope.
#[derive(Debug, Clone)]
pub struct Imported<'a> {
    /// The change.
    pub change: &'a ChangeName,
    /// The provider.
    pub provider: &'a ProviderId,
    /// The receipts its run writes.
    pub outputs: &'a [Output],
    /// The claims it vouches for.
    pub claims: &'a [String],
    /// Its current binding.
    pub binding: &'a proofgraph_graph::fingerprint::Binding,
    /// Its fingerprint's components.
    pub manifest: &'a [Component],
    /// The input listing's SHA-256 and size, and how many files it lists.
    pub inputs: (Sha256, u64, u64),
    /// The envelope as the user named it, its SHA-256 in the store and its size.
    pub envelope: (String, Sha256, u64),
    /// When it was imported (RFC 3339).
    pub now: &'a str,
}

/// The receipts an accepted result makes: one pass per output of the provider, run by
/// nothing here (no sandbox, no isolation, no exit), the envelope its evidence, and the
/// tests the predicate lists as passed.
pub fn receipts(accepted: &Accepted, imported: &Imported<'_>) -> (Vec<Proof>, TestNames) {
    let (inputs, inputs_size, input_files) = imported.inputs;
    let (path, envelope_sha, size) = &imported.envelope;
    let proof = |output: &Output| Proof {
        version: receipt::RECEIPT_VERSION,
        change: imported.change.clone(),
        provider: imported.provider.clone(),
        receipt: output.under.clone(),
        capability: output.capability.clone(),
        claims: imported.claims.to_vec(),
        outcome: Outcome::Pass,
        reason: None,
        claim_outcomes: BTreeMap::new(),
        critical_cases: BTreeMap::new(),
        adapter: "external".to_owned(),
        counts: None,
        discovered: None,
        minimum: None,
        sandbox: proofgraph_sandbox::SandboxMode::None,
        isolation: RunIsolation::None,
        network: Network::Private,
        run_id: format!("verify-ci:{}", accepted.keyid),
        started_at: imported.now.to_owned(),
        finished_at: imported.now.to_owned(),
        duration_ms: 0,
        exit: None,
        artifacts: vec![Artifact {
            kind: ArtifactKind::ExternalEvidence,
            path: Some(path.clone()),
            sha256: *envelope_sha,
            size: *size,
            name: None,
            content_type: None,
            whole: None,
        }],
        fingerprint: imported.binding.fingerprint,
        binding: Sha256::from_bytes(imported.binding.sha256),
        manifest: imported.manifest.to_vec(),
        inputs,
        inputs_size: Some(inputs_size),
        input_files,
        trees: BTreeMap::new(),
        commits: BTreeMap::new(),
        executed: None,
        executor: None,
        engine: None,
        worker: None,
    };
    let tests = TestNames {
        passed: accepted.passed_tests.clone(),
        ..TestNames::default()
    };
    (imported.outputs.iter().map(proof).collect(), tests)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proofgraph_graph::fingerprint::{Binding, Digest, Fingerprint};
    use proofgraph_graph::model::Provider;
    use proofgraph_graph::span::{Pos, Spanned};
    use proofgraph_graph::{CapabilityName, GraphBuilder, RepoId, Repositories, SealedGraph};

    use super::*;
    use crate::attest::statement::{DigestSet, Subject};

    fn at<T>(value: T) -> Spanned<T> {
        Spanned::new(value, Pos::default())
    }

    fn pid(s: &str) -> ProviderId {
        ProviderId::parse(s).expect("a provider id")
    }

    /// `ci` (external, with `ci:`), `bare` (external without it) and `unit` (a command).
    fn graph() -> SealedGraph {
        let integration = || Some(at(CapabilityName::parse("integration").expect("valid")));
        let mut ci = Provider::new(pid("ci"), Adapter::External);
        ci.capability = integration();
        ci.ci = Some(CiVerification {
            issuer: at("github-actions".to_owned()),
            public_key: at("PEM".to_owned()),
        });
        let mut bare = Provider::new(pid("bare"), Adapter::External);
        bare.capability = integration();
        let mut unit = Provider::new(pid("unit"), Adapter::Command);
        unit.capability = integration();
        unit.command = Some(at(vec!["true".to_owned()]));
        let mut b = GraphBuilder::new(Repositories {
            ids: [RepoId::root()].into(),
        });
        for p in [ci, bare, unit] {
            b.provider(p, Arc::from("execution.yaml"));
        }
        b.seal().expect("seal")
    }

    fn node<'a>(graph: &'a SealedGraph, id: &str) -> &'a ProviderNode {
        let n = graph.provider(&pid(id)).expect("a provider");
        graph.node(n).provider().expect("a provider node")
    }

    #[test]
    fn only_an_external_provider_with_ci_accepts_signed_results() {
        let graph = graph();
        let ci = declared_ci(node(&graph, "ci")).expect("declared");
        assert_eq!(ci.issuer.value, "github-actions");
        for id in ["bare", "unit"] {
            let r = declared_ci(node(&graph, id)).expect_err("refused");
            assert_eq!(r.code, Code::NotExternal);
            assert!(
                r.message
                    .starts_with(&format!("provider `{id}` is not an `external` provider")),
                "{}",
                r.message
            );
        }
    }

    #[test]
    fn an_accepted_result_is_a_pass_per_output_that_nothing_here_ran() {
        let graph = graph();
        let p = node(&graph, "ci");
        let statement = Statement::new(
            vec![Subject::new("ci", DigestSet::sha256("b".repeat(64)))],
            "https://in-toto.io/attestation/test-result/v0.1",
            serde_json::json!({}),
        )
        .expect("a statement");
        let accepted = Accepted {
            statement,
            keyid: "SHA256:key".to_owned(),
            passed_tests: vec!["t1".to_owned(), "t2".to_owned()],
        };
        let binding = Binding {
            sha256: [0xbb; 32],
            fingerprint: Fingerprint(Digest([0xaa; 32])),
        };
        let change = ChangeName::parse("c").expect("a change");
        let claims = ["claim-a".to_owned()];
        let imported = Imported {
            change: &change,
            provider: &p.spec.id.value,
            outputs: &p.outputs,
            claims: &claims,
            binding: &binding,
            manifest: &[],
            inputs: (Sha256::of(b"listing"), 7, 1),
            envelope: ("ci.json".to_owned(), Sha256::of(b"envelope"), 8),
            now: "2026-01-01T00:00:00.000Z",
        };
        let (proofs, tests) = receipts(&accepted, &imported);
        assert_eq!(tests.passed, ["t1", "t2"]);
        assert!(tests.failed.is_empty() && tests.warned.is_empty());
        assert_eq!(proofs.len(), p.outputs.len());
        assert!(!proofs.is_empty());
        for (proof, output) in proofs.iter().zip(&p.outputs) {
            assert_eq!(proof.receipt, output.under);
            assert_eq!(proof.capability, output.capability);
            assert_eq!(proof.outcome, Outcome::Pass);
            assert_eq!(proof.run_id, "verify-ci:SHA256:key");
            assert_eq!(proof.sandbox, proofgraph_sandbox::SandboxMode::None);
            assert_eq!(proof.isolation, RunIsolation::None);
            assert_eq!(proof.exit, None);
            assert_eq!(proof.fingerprint, binding.fingerprint);
            assert_eq!(proof.binding, Sha256::from_bytes([0xbb; 32]));
            assert_eq!(proof.claims, claims);
            assert_eq!((proof.inputs_size, proof.input_files), (Some(7), 1));
            assert!(proof.trees.is_empty() && proof.executed.is_none());
            let [evidence] = proof.artifacts.as_slice() else {
                panic!("{:?}", proof.artifacts);
            };
            assert_eq!(evidence.kind, ArtifactKind::ExternalEvidence);
            assert_eq!(evidence.path.as_deref(), Some("ci.json"));
            assert_eq!(
                (evidence.sha256, evidence.size),
                (Sha256::of(b"envelope"), 8)
            );
        }
    }
}
