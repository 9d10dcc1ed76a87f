//! The receipt writer: on a thread of its own (`receipts`), it keeps a judged result's
//! artifacts in the store and writes one signed receipt per verdict, with its action-cache
//! entry and ref, in the order results were judged. Each receipt is bound to the
//! fingerprint of the provider it is stored under.

use std::collections::BTreeMap;
use std::sync::mpsc;

use proofgraph_graph::fingerprint::Fingerprints;
use proofgraph_graph::{ProviderId, SealedGraph};
use proofgraph_sandbox::SandboxMode;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::redact::Secrets;
use crate::decide::judge::Ended;
use crate::observe::world::Observed;
use crate::proof::receipt::{self, Artifact, Proof};
use crate::store::Store;

use super::events::ReceiptView;
use super::evidence::ArtifactKind;
use super::plan::{Plan, diag};
use super::recorder::{Persist, Persisted, Recorder};

/// Starts the receipt writer's thread in `scope`, writing with `writer`; it ends when the
/// returned [`Recorder`] is dropped.
pub(super) fn start<'scope, 'env: 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    writer: Writer<'env>,
) -> Result<Recorder, Diagnostic> {
    let (to_writer, jobs) = mpsc::channel::<Persist>();
    let (to_loop, from_writer) = mpsc::channel::<Persisted>();
    std::thread::Builder::new()
        .name("receipts".to_owned())
        .spawn_scoped(scope, move || {
            for job in jobs {
                if to_loop.send(writer.persist(job)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| {
            Diagnostic::error(
                Code::InternalError,
                format!("failed to start the receipt writer: {e}"),
            )
        })?;
    Ok(Recorder::new(to_writer, from_writer))
}

/// Writes receipts: what the receipt writer's thread needs of a [`Plan`].
pub(super) struct Writer<'a> {
    graph: &'a SealedGraph,
    change: &'a str,
    observed: &'a Observed,
    fingerprints: &'a Fingerprints,
    store: &'a Store,
    key: &'a ed25519_dalek::SigningKey,
    mode: SandboxMode,
    run_id: &'a str,
    secrets: &'a Secrets,
}

impl<'a> Writer<'a> {
    pub(super) fn new(plan: &Plan<'a>) -> Self {
        Writer {
            graph: plan.graph,
            change: plan.change,
            observed: plan.observed,
            fingerprints: plan.fingerprints,
            store: plan.store,
            key: plan.key,
            mode: plan.mode,
            run_id: plan.run_id,
            secrets: plan.secrets,
        }
    }

    /// Keeps the artifacts in the store and writes one signed receipt per
    /// verdict, with its action-cache entry and ref.
    fn persist(&self, job: Persist) -> Persisted {
        let Persist {
            id,
            finished,
            judged,
            kept,
            isolation,
            mut run,
        } = job;
        let mut diagnostics = Vec::new();
        let Some(p) = self.graph.node(id).provider() else {
            return Persisted {
                id,
                run,
                diagnostics,
                written: false,
            };
        };
        let pid = &p.spec.id.value;
        let store = self.store;
        let mut artifacts = Vec::new();
        for kept in kept {
            // What is stored holds no secret: logs were redacted as they were written, but
            // only of the forms a stream redactor knows; reports and attachments not yet.
            let bytes = self.secrets.bytes(&kept.bytes);
            match store.put(&bytes) {
                Ok(sha) => artifacts.push(Artifact {
                    kind: kept.kind.as_str().into(),
                    path: kept.path,
                    sha256: sha.to_hex(),
                    size: bytes.len() as u64,
                    name: kept.name,
                    content_type: kept.content_type,
                }),
                // The log matters most; a report or attachment that cannot be kept is
                // still judged from.
                Err(e) if kept.kind == ArtifactKind::CommandLog => {
                    diagnostics.push(crate::store::diagnostic(&e));
                }
                Err(_) => {}
            }
        }
        let files = self
            .observed
            .files
            .get(pid)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let listing = crate::observe::inputs::listing(files);
        // A receipt binds the listing of what the job saw: one that cannot be stored is no
        // receipt, never a receipt naming no inputs.
        let inputs = match store.put(&listing) {
            Ok(sha) => sha.to_hex(),
            Err(e) => {
                diagnostics.push(diag(
                    Code::StoreUnusable,
                    format!(
                        "the input listing of `{pid}` could not be stored, so its result was not recorded: failed to {e}"
                    ),
                    "Check that .proofgraph/ is writable; the provider runs again next time.",
                ));
                return Persisted {
                    id,
                    run,
                    diagnostics,
                    written: false,
                };
            }
        };
        // Each receipt is bound to the fingerprint of the provider it is stored under: a
        // discovery receiver's own (which includes this producer's), else this provider's.
        let mut bound: BTreeMap<ProviderId, (String, String, Vec<receipt::Component>)> =
            BTreeMap::new();
        let exit = match &finished.ended {
            Ended::Exited(e) => Some(e.clone()),
            Ended::Error(_) => None,
        };
        let mut written = true;
        for verdict in &judged.verdicts {
            let owner = if self
                .fingerprints
                .providers
                .contains_key(&verdict.output.under)
            {
                &verdict.output.under
            } else {
                pid
            };
            let (fingerprint, binding, manifest) = bound
                .entry(owner.clone())
                .or_insert_with(|| {
                    let fingerprint = self
                        .fingerprints
                        .providers
                        .get(owner)
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let (binding, manifest) = self
                        .graph
                        .binding_and_manifest(owner, &self.observed.world, self.fingerprints)
                        .map(|(b, m)| (b.sha256_hex(), crate::proof::receipt::components(&m)))
                        .unwrap_or_default();
                    (fingerprint, binding, manifest)
                })
                .clone();
            let proof = Proof {
                version: receipt::RECEIPT_VERSION,
                change: self.change.to_owned(),
                provider: pid.to_string(),
                receipt: verdict.output.under.to_string(),
                capability: verdict.output.capability.to_string(),
                claims: p.claims.iter().map(ToString::to_string).collect(),
                outcome: verdict.outcome,
                reason: verdict.reason.clone(),
                claim_outcomes: verdict.claims.clone(),
                critical_cases: verdict.critical_cases.clone(),
                adapter: p.spec.adapter.value.to_string(),
                counts: judged.counts.clone(),
                discovered: verdict.discovered,
                minimum: verdict.minimum,
                sandbox: self.mode.as_str().to_owned(),
                isolation: isolation.as_str().to_owned(),
                network: p
                    .spec
                    .network
                    .as_ref()
                    .map_or("private", |n| n.value.as_str())
                    .to_owned(),
                run_id: self.run_id.to_owned(),
                started_at: finished.started_at.clone(),
                finished_at: finished.finished_at.clone(),
                duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
                exit: exit.clone(),
                artifacts: artifacts.clone(),
                fingerprint: fingerprint.clone(),
                binding,
                manifest,
                inputs: inputs.clone(),
                input_files: files.len() as u64,
            };
            match receipt::write(store, self.key, proof, &judged.tests, self.secrets) {
                Ok((sha, proof)) => {
                    let key = Store::action_key(
                        &fingerprint,
                        proof.receipt.as_str(),
                        proof.capability.as_str(),
                    );
                    let stored = store.set_action(&key, &sha).and_then(|()| {
                        store.set_ref(self.change, &proof.receipt, &proof.capability, &sha)
                    });
                    if let Err(e) = stored {
                        diagnostics.push(crate::store::diagnostic(&e));
                    }
                    run.receipts.push(ReceiptView {
                        receipt: proof.receipt.clone(),
                        capability: proof.capability.clone(),
                        outcome: proof.outcome,
                        reason: proof.reason.clone(),
                        sha256: sha,
                    });
                }
                Err(receipt::ReceiptError::Store(e)) => {
                    written = false;
                    diagnostics.push(diag(
                        Code::StoreUnusable,
                        format!("the receipt of `{pid}` could not be written: failed to {e}"),
                        "Check that .proofgraph/ is writable.",
                    ));
                }
                // A secret as generic as a value the receipt must hold (an outcome name):
                // nothing is recorded rather than the secret.
                Err(e @ receipt::ReceiptError::Unredactable(_)) => {
                    written = false;
                    diagnostics.push(diag(
                        Code::SecretTooShort,
                        format!("the receipt of `{pid}` was not written: failed to {e}"),
                        "Give the `envFrom` variable a longer, distinctive value; the provider runs again next time.",
                    ));
                }
                // Nothing the store can do about it: a value the receipt cannot carry.
                Err(e @ receipt::ReceiptError::Statement(_)) => {
                    written = false;
                    diagnostics.push(diag(
                        Code::InternalError,
                        format!("the receipt of `{pid}` could not be encoded, so its result was not recorded: failed to {e}"),
                        "This is a bug: report it with the provider's report; the provider runs again next time.",
                    ));
                }
            }
        }
        Persisted {
            id,
            run,
            diagnostics,
            written,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::{Duration, SystemTime};

    use proofgraph_graph::Adapter;

    use super::*;
    use crate::attest::envelope::TrustedKey;
    use crate::decide::judge::{self, ReportFile};
    use crate::proof::receipt::{Exit, Outcome};
    use crate::run::ended::Finished;
    use crate::run::events::{ProviderAction, ProviderRun};
    use crate::run::evidence::Kept;
    use crate::run::recorder::Isolated;
    use crate::run::testing::{discovery_pair, node, observed, pid, provider, seal};
    use crate::store::Sha256;

    const SECRET: &str = "a-long-secret-value";
    const TAP: &[u8] = b"TAP version 13\n1..2\nok 1 - a\nok 2 - b\n";

    /// `unit` (a command) and the producer `test-web` with its receiver `discovery-web`.
    fn graph() -> SealedGraph {
        let [producer, receiver] = discovery_pair(None);
        let unit = provider("unit", Adapter::Command, &["true"]);
        seal(vec![unit, producer, receiver], Vec::new())
    }

    struct Fixture {
        dir: tempfile::TempDir,
        store: Store,
        key: ed25519_dalek::SigningKey,
        graph: SealedGraph,
        observed: Observed,
        fingerprints: Fingerprints,
        secrets: Secrets,
    }

    impl Fixture {
        fn new(secret: &str) -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(dir.path()).expect("store");
            let graph = graph();
            let observed = observed(&graph);
            let fingerprints = graph.fingerprints(&observed.world).expect("fingerprints");
            Fixture {
                dir,
                store,
                key: crate::attest::keys::generate_signing_key().expect("key"),
                graph,
                observed,
                fingerprints,
                secrets: Secrets::new([secret.as_bytes().to_vec()]),
            }
        }

        fn writer(&self) -> Writer<'_> {
            Writer {
                graph: &self.graph,
                change: "c",
                observed: &self.observed,
                fingerprints: &self.fingerprints,
                store: &self.store,
                key: &self.key,
                mode: SandboxMode::Worktree,
                run_id: "run9",
                secrets: &self.secrets,
            }
        }

        /// `provider`'s execution ended with `code` and `report`, its log holding `log`.
        fn persist(&self, provider: &str, code: i32, report: ReportFile, log: &str) -> Persist {
            let p = node(&self.graph, provider);
            let ended = Ended::Exited(Exit {
                code: Some(code),
                signal: None,
                timed_out: false,
            });
            let judged = judge::judge(p, self.graph.claims(), &ended, &report, 1_000);
            let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
            Persist {
                id: self.graph.provider(&pid(provider)).expect("node"),
                finished: Finished::ran(ended, PathBuf::from("/l"), Duration::from_secs(1), wall),
                judged: self.secrets.redact(judged),
                kept: vec![Kept::new(
                    ArtifactKind::CommandLog,
                    None,
                    log.as_bytes().to_vec(),
                )],
                isolation: Isolated::Namespaces,
                run: ProviderRun {
                    provider: provider.into(),
                    action: ProviderAction::Ran,
                    reason: None,
                    duration_ms: Some(1_000),
                    receipts: Vec::new(),
                },
            }
        }

        fn read(&self, sha: &Sha256) -> std::sync::Arc<Proof> {
            let trusted = [TrustedKey::new(self.key.verifying_key())];
            receipt::read(&self.store, sha, &trusted)
                .expect("a verified receipt")
                .proof
        }
    }

    #[test]
    fn a_pass_is_signed_and_found_by_its_fingerprint_with_its_log_redacted() {
        let f = Fixture::new(SECRET);
        let done = f.writer().persist(f.persist(
            "unit",
            0,
            ReportFile::NotExpected,
            &format!("token={SECRET}\n"),
        ));
        assert!(done.written, "{:?}", done.diagnostics);
        assert!(done.diagnostics.is_empty(), "{:?}", done.diagnostics);
        let [view] = done.run.receipts.as_slice() else {
            panic!("one receipt: {:?}", done.run.receipts);
        };
        assert_eq!(
            (
                view.receipt.as_str(),
                view.capability.as_str(),
                view.outcome
            ),
            ("unit", "integration", Outcome::Pass)
        );
        let fp = f.fingerprints.providers[&pid("unit")].to_string();
        let action = Store::action_key(&fp, "unit", "integration");
        assert_eq!(f.store.action(&action), Some(view.sha256));
        assert_eq!(
            f.store.latest("c", "unit", "integration"),
            Some(view.sha256)
        );
        let proof = f.read(&view.sha256);
        assert_eq!(proof.fingerprint, fp);
        assert_eq!(
            (
                proof.sandbox.as_str(),
                proof.isolation.as_str(),
                proof.network.as_str()
            ),
            ("worktree", "namespaces", "private")
        );
        assert_eq!((proof.run_id.as_str(), proof.duration_ms), ("run9", 1_000));
        assert_eq!(proof.started_at, "1970-01-01T00:16:39.000Z");
        assert_eq!(proof.exit.as_ref().and_then(|e| e.code), Some(0));
        let [log] = proof.artifacts.as_slice() else {
            panic!("one artifact: {:?}", proof.artifacts);
        };
        assert_eq!(log.kind, "command-log");
        let stored = f
            .store
            .get(&Sha256::parse(&log.sha256).expect("a digest"))
            .expect("the log is stored");
        let stored = String::from_utf8(stored).expect("utf-8");
        assert!(!stored.contains(SECRET), "{stored}");
        assert!(stored.starts_with("token="), "{stored}");
    }

    #[test]
    fn a_receivers_receipt_is_bound_to_the_receivers_fingerprint() {
        let f = Fixture::new(SECRET);
        let report = ReportFile::Bytes("web.tap".into(), TAP.to_vec());
        let done = f.writer().persist(f.persist("test-web", 0, report, "ok"));
        assert!(done.written, "{:?}", done.diagnostics);
        let by_receipt: BTreeMap<&str, &ReceiptView> = done
            .run
            .receipts
            .iter()
            .map(|v| (v.receipt.as_str(), v))
            .collect();
        assert_eq!(
            by_receipt.keys().copied().collect::<Vec<_>>(),
            ["discovery-web", "test-web"]
        );
        for (under, capability) in [("test-web", "test"), ("discovery-web", "discovery")] {
            let view = by_receipt[under];
            let fp = f.fingerprints.providers[&pid(under)].to_string();
            assert_eq!(f.read(&view.sha256).fingerprint, fp, "{under}");
            assert_eq!(f.read(&view.sha256).provider, "test-web", "{under}");
            let action = Store::action_key(&fp, under, capability);
            assert_eq!(f.store.action(&action), Some(view.sha256), "{under}");
        }
    }

    #[test]
    fn a_secret_that_is_an_outcome_name_leaves_the_result_unrecorded() {
        // Without a report a discovery provider is inconclusive, and "inconclusive" is
        // the secret: the receipt cannot hold its own outcome, so none is written.
        let f = Fixture::new("inconclusive");
        let done =
            f.writer()
                .persist(f.persist("test-web", 0, ReportFile::Missing("web.tap".into()), ""));
        assert!(!done.written);
        assert!(done.run.receipts.is_empty());
        let codes: Vec<Code> = done.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::SecretTooShort, Code::SecretTooShort]);
    }

    #[test]
    fn a_store_that_cannot_take_receipts_says_so_and_records_nothing() {
        let f = Fixture::new(SECRET);
        // Where every write goes first is no longer a directory.
        let tmp = f.dir.path().join(".proofgraph/tmp");
        fs_err::remove_dir_all(&tmp).expect("remove tmp");
        fs_err::write(&tmp, b"").expect("a file in its place");
        let done = f
            .writer()
            .persist(f.persist("unit", 1, ReportFile::NotExpected, "log"));
        assert!(!done.written);
        assert!(done.run.receipts.is_empty());
        let codes: Vec<Code> = done.diagnostics.iter().map(|d| d.code).collect();
        // The log that could not be kept, then the input listing (without which no receipt
        // is written, rather than one that names no inputs).
        assert_eq!(codes, [Code::StoreUnusable, Code::StoreUnusable]);
        assert!(
            done.diagnostics[1].message.starts_with(
                "the input listing of `unit` could not be stored, so its result was not recorded: failed to "
            ),
            "{}",
            done.diagnostics[1].message
        );
        assert!(
            !f.dir.path().join(".proofgraph/refs/c").exists(),
            "no entry points at a receipt"
        );
    }
}
