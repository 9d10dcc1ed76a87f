//! The inputs every fuzz run starts from: the project's own fixtures (among them the
//! compatibility fixtures, `fixtures/compat/changeloop/`), the shared compatibility corpus
//! (real `evidence.yaml`/`execution.yaml` files) when the caller has it, inputs built with
//! the code that writes them (signed envelopes, receipts, keys, store entries), and every
//! input a fuzzer ever failed on (`fixtures/fuzz/<target>/`, kept as regression tests).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use proofgraph_graph::fingerprint::Fingerprint;
use proofgraph_graph::{CapabilityName, ChangeName, ProviderId};
use serde_json::json;

use super::Target;
use super::config::SEPARATOR;
use super::envelope::test_keys;
use super::receipt::{BINDING, CLAIMS, ISSUER};
use proofgraph::attest::envelope;
use proofgraph::attest::keys;
use proofgraph::attest::statement::{
    DigestSet, IN_TOTO_PAYLOAD_TYPE, Statement, Subject, sign_statement,
};
use proofgraph::proof::receipt::{self, Outcome, PREDICATE_TYPE, Proof, TestNames};
use proofgraph::store::{self, Sha256};

/// The directory of inputs kept for `target` (regressions and hand-made seeds).
pub fn regression_dir(repo: &Path, target: Target) -> PathBuf {
    repo.join("fixtures/fuzz").join(target.name())
}

/// The seeds of `target`. `repo` is the project's checkout, whose `fixtures/` already
/// hold the compatibility fixtures; `shared_compat`, when given, the shared corpus
/// directory (`compat/changeloop` of the shared folder), which lies outside it, so no
/// change is seeded twice.
pub fn seeds(
    target: Target,
    repo: &Path,
    shared_compat: Option<&Path>,
) -> io::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let kept = regression_dir(repo, target);
    if kept.is_dir() {
        for file in files(&kept)? {
            out.push(fs_err::read(file)?);
        }
    }
    match target {
        Target::Config => {
            let dirs = [repo.join("fixtures"), repo.join("examples")];
            for dir in dirs.iter().map(PathBuf::as_path).chain(shared_compat) {
                config_seeds(dir, &mut out)?;
            }
        }
        Target::Report => {
            for file in files(&repo.join("fixtures/reports"))? {
                if file.extension().is_none_or(|e| e != "md") {
                    out.push(fs_err::read(file)?);
                }
            }
        }
        Target::Envelope => {
            let vectors: serde_json::Value = serde_json::from_slice(&fs_err::read(
                repo.join("fixtures/attest/dsse-vectors.json"),
            )?)
            .map_err(io::Error::other)?;
            for vector in vectors["vectors"].as_array().into_iter().flatten() {
                out.push(vector["envelope"].to_string().into_bytes());
            }
            let [a, b] = test_keys();
            let body = receipt_statement()
                .to_canonical_json()
                .map_err(io::Error::other)?;
            out.push(
                envelope::sign(IN_TOTO_PAYLOAD_TYPE, &body, &a, None)
                    .to_json()
                    .into_bytes(),
            );
            out.push(
                envelope::sign("text/plain", b"", &b, Some("B"))
                    .to_json()
                    .into_bytes(),
            );
            let mut typed = b"application/vnd.in-toto+json\n".to_vec();
            typed.extend_from_slice(&body);
            out.push(typed);
        }
        Target::Pem => {
            use ed25519_dalek::pkcs8::EncodePrivateKey as _;
            use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
            for key in test_keys() {
                out.push(keys::public_key_to_pem(&key.verifying_key()).into_bytes());
                out.push(keys::signing_key_to_pem(&key).as_bytes().to_vec());
                // PKCS#8 v2: the private key with its public key embedded.
                let v2 = key
                    .to_pkcs8_pem(LineEnding::CRLF)
                    .map_err(io::Error::other)?;
                out.push(v2.as_bytes().to_vec());
            }
        }
        Target::Store => {
            for bytes in [
                &[0u8; 32][..],
                &[0xff; 32],
                b"0123456789abcdef0123456789abcdef",
            ] {
                let hex = proofgraph_graph::fingerprint::hex(bytes);
                let target = store::pointer_target(&hex).ok_or_else(|| io::Error::other("hex"))?;
                out.push(target.into_bytes());
                out.push(format!("{hex}\n").into_bytes());
            }
        }
        Target::Receipt => {
            let [a, _] = test_keys();
            let statement = receipt_statement();
            let body = statement.to_canonical_json().map_err(io::Error::other)?;
            out.push(body);
            let signed = sign_statement(&statement, &a, None).map_err(io::Error::other)?;
            out.push(signed.to_json().into_bytes());
            for result in ["PASSED", "FAILED"] {
                let external = external_statement(result);
                out.push(external.to_canonical_json().map_err(io::Error::other)?);
            }
        }
    }
    Ok(out)
}

/// Every regular file under `dir`, sorted (none when `dir` does not exist).
fn files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        if !dir.is_dir() {
            continue;
        }
        for entry in fs_err::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One seed per change directory under `dir` (its `evidence.yaml`, `execution.yaml` and
/// the nearest `proofgraph.yaml` above it, joined), and one per other YAML file (as a
/// `proofgraph.yaml`).
fn config_seeds(dir: &Path, out: &mut Vec<Vec<u8>>) -> io::Result<()> {
    let mut changes: BTreeMap<PathBuf, [Option<Vec<u8>>; 2]> = BTreeMap::new();
    for file in files(dir)? {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let slot = match name {
            "evidence.yaml" => 0,
            "execution.yaml" => 1,
            _ if name.ends_with(".yaml") || name.ends_with(".yml") => {
                let mut seed = SEPARATOR.repeat(2);
                seed.extend(fs_err::read(&file)?);
                out.push(seed);
                continue;
            }
            _ => continue,
        };
        let parent = file.parent().unwrap_or(dir).to_owned();
        changes.entry(parent).or_default()[slot] = Some(fs_err::read(&file)?);
    }
    for (change, [evidence, execution]) in changes {
        let mut seed = evidence.unwrap_or_default();
        seed.extend_from_slice(SEPARATOR);
        seed.extend(execution.unwrap_or_default());
        let catalog = change
            .ancestors()
            .take_while(|a| a.starts_with(dir))
            .map(|a| a.join("proofgraph.yaml"))
            .find(|c| c.is_file());
        if let Some(catalog) = catalog {
            seed.extend_from_slice(SEPARATOR);
            seed.extend(fs_err::read(catalog)?);
        }
        out.push(seed);
    }
    Ok(())
}

/// A receipt's statement as `prove` writes it, with every optional part filled.
fn receipt_statement() -> Statement {
    let hex = |byte: u8| proofgraph_graph::fingerprint::hex(&[byte; 32]);
    let proof = Proof {
        version: receipt::RECEIPT_VERSION,
        change: ChangeName::parse("add-profile").expect("a change name"),
        provider: ProviderId::parse("e2e").expect("a provider id"),
        receipt: ProviderId::parse("e2e").expect("a provider id"),
        capability: CapabilityName::parse("e2e").expect("a capability"),
        claims: CLAIMS.iter().map(|c| (*c).to_owned()).collect(),
        outcome: Outcome::Fail,
        reason: Some("1 test failed".to_owned()),
        claim_outcomes: BTreeMap::from([(
            "claim-a".to_owned(),
            receipt::ClaimOutcome {
                outcome: Outcome::Inconclusive,
                reason: Some("no annotated test".to_owned()),
            },
        )]),
        critical_cases: BTreeMap::from([("login".to_owned(), "passed".to_owned())]),
        adapter: "playwright".to_owned(),
        counts: Some(receipt::Counts {
            total: 3,
            passed: 1,
            failed: 1,
            skipped: 1,
            todo: 0,
            replayed: 0,
        }),
        discovered: Some(3),
        minimum: Some(1),
        sandbox: proofgraph_sandbox::SandboxMode::Worktree,
        isolation: receipt::RunIsolation::Namespaces,
        network: proofgraph_graph::model::Network::Private,
        run_id: "run-1".to_owned(),
        started_at: "2026-01-01T00:00:00.000Z".to_owned(),
        finished_at: "2026-01-01T00:00:01.000Z".to_owned(),
        duration_ms: 1000,
        exit: Some(receipt::Exit {
            code: Some(1),
            signal: None,
            timed_out: false,
        }),
        artifacts: vec![receipt::Artifact {
            kind: receipt::ArtifactKind::StructuredReport,
            path: Some("results.json".to_owned()),
            sha256: Sha256::parse(&hex(2)).expect("a digest"),
            size: 10,
            name: Some("trace".to_owned()),
            content_type: Some("application/zip".to_owned()),
            whole: None,
        }],
        fingerprint: Fingerprint::from_hex(&hex(3)).expect("a fingerprint"),
        binding: Sha256::parse(BINDING).expect("a digest"),
        manifest: vec![receipt::Component {
            tag: 1,
            name: "argv".to_owned(),
            value: json!(["npx", "playwright", "test"]),
        }],
        inputs: Sha256::parse(&hex(4)).expect("a digest"),
        input_files: 12,
        inputs_size: Some(600),
        trees: std::collections::BTreeMap::new(),
        commits: std::collections::BTreeMap::new(),
        executed: Some(vec![receipt::ExecutedProgram {
            path: "/usr/bin/node".to_owned(),
            digest: hex(5),
        }]),
        executor: None,
        engine: None,
        worker: None,
    };
    let tests = TestNames {
        passed: vec!["a > passes".to_owned()],
        warned: vec!["a > skipped".to_owned()],
        failed: vec!["a > fails".to_owned()],
    };
    receipt::statement(&proof, &tests).expect("the sample receipt is valid")
}

/// An external CI result for the [`super::receipt`] target's expectation.
fn external_statement(result: &str) -> Statement {
    Statement::new(
        vec![Subject::new(
            "proofgraph:add-profile/e2e",
            DigestSet::sha256(BINDING),
        )],
        PREDICATE_TYPE,
        json!({
            "issuer": ISSUER,
            "result": result,
            "claims": CLAIMS,
            "passedTests": ["a > passes"],
            "failedTests": [],
        }),
    )
    .expect("the sample external result is valid")
}
