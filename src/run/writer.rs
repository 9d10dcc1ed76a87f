//! The receipt writer: on a thread of its own (`receipts`), it keeps a judged result's
//! artifacts in the store and writes one signed receipt per verdict, with its action-cache
//! entry and ref, in the order results were judged. Each receipt is bound to the
//! fingerprint of the provider it is stored under.

use std::collections::BTreeMap;
use std::sync::mpsc;

use proofgraph_graph::fingerprint::{Fingerprint, Fingerprints};
use proofgraph_graph::model::Network;
use proofgraph_graph::{ChangeName, ProviderId, SealedGraph};
use proofgraph_sandbox::SandboxMode;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::redact::Secrets;
use crate::decide::judge::Ended;
use crate::observe::world::Observed;
use crate::proof::receipt::{self, Artifact, Proof};
use crate::store::{Sha256, Store};

use super::events::ReceiptView;
use super::handoff::{Plan, diag};
use super::kept_evidence::{ArtifactKind, Kept};
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
            // Git repositories are opened on this thread, and stay on it.
            let mut trees = crate::observe::input_trees::Recorder::new();
            for job in jobs {
                if to_loop.send(writer.persist_with(job, &mut trees)).is_err() {
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
    change: &'a ChangeName,
    observed: &'a Observed,
    fingerprints: &'a Fingerprints,
    store: &'a Store,
    key: &'a ed25519_dalek::SigningKey,
    mode: SandboxMode,
    run_id: &'a str,
    secrets: &'a Secrets,
    upload: Option<tokio::sync::mpsc::UnboundedSender<crate::store::Sha256>>,
    trees: Option<&'a crate::observe::input_trees::Recorded>,
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
            upload: plan.upload.clone(),
            trees: plan.trees,
        }
    }

    /// Records, per repository, the git tree of the files `files` (`repo:path` and
    /// identity) names, and the commit checked out there, for `rerun`. A repository whose
    /// tree cannot be recorded is left out with a warning: the receipt still holds, it just
    /// cannot be re-executed there.
    fn record_trees(
        &self,
        node: proofgraph_graph::NodeId,
        pid: &ProviderId,
        files: &[(String, proofgraph_graph::fingerprint::Digest)],
        recorder: &mut crate::observe::input_trees::Recorder,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> crate::observe::input_trees::Recorded {
        use crate::observe::inputs::FileKind;
        let snapshots: BTreeMap<&str, &crate::observe::inputs::Snapshot> = self
            .observed
            .snapshots
            .iter()
            .map(|(r, s)| (r.as_str(), s))
            .collect();
        let mut by_repo: BTreeMap<
            &str,
            Vec<(&str, FileKind, proofgraph_graph::fingerprint::Digest)>,
        > = BTreeMap::new();
        for (scoped, id) in files {
            let Some((repo, path)) = scoped.split_once(':') else {
                continue;
            };
            // Every bound file is a file of its repository's snapshot.
            let kind = snapshots
                .get(repo)
                .and_then(|s| {
                    s.files
                        .binary_search_by(|f| f.path.as_str().cmp(path))
                        .ok()
                        .map(|i| s.files[i].kind)
                })
                .unwrap_or(FileKind::File);
            by_repo.entry(repo).or_default().push((path, kind, *id));
        }
        // A service the provider needs reads its whole repository (its digest is in the
        // provider's fingerprint): those files are recorded too, so a rerun can start it.
        for service in self.graph.services_of(node) {
            let Some((repo, snapshot)) = self
                .graph
                .node(service)
                .service()
                .and_then(|s| s.runs_in.as_ref())
                .and_then(|r| snapshots.get_key_value(r.as_str()))
            else {
                continue;
            };
            let entry = by_repo.entry(repo).or_default();
            let bound: std::collections::BTreeSet<&str> =
                entry.iter().map(|(p, _, _)| *p).collect();
            let extra: Vec<_> = snapshot
                .files
                .iter()
                .filter(|f| !bound.contains(f.path.as_str()))
                .map(|f| (f.path.as_str(), f.kind, f.id))
                .collect();
            entry.extend(extra);
        }
        let mut out = crate::observe::input_trees::Recorded::default();
        for (repo, files) in by_repo {
            let Some((id, snapshot)) = self
                .observed
                .snapshots
                .iter()
                .find(|(id, _)| id.as_str() == repo)
            else {
                continue;
            };
            match recorder.record(&snapshot.dir, &files) {
                Ok(tree) => {
                    out.trees.insert(id.clone(), tree.into());
                    if let Some(commit) = recorder.head(&snapshot.dir) {
                        out.commits.insert(id.clone(), commit.into());
                    }
                }
                Err(e) => diagnostics.push(
                    Diagnostic::warning(
                        Code::InputsNotRecorded,
                        format!("the inputs `{pid}` bound in repository `{repo}` were not recorded as a git tree, so its receipt cannot be re-executed there: {e}"),
                    )
                    .fix("Keep the files still while a provider runs; the next run records them."),
                ),
            }
        }
        out
    }

    /// Keeps the artifacts in the store and writes one signed receipt per
    /// verdict, with its action-cache entry and ref.
    #[cfg(test)]
    fn persist(&self, job: Persist) -> Persisted {
        self.persist_with(job, &mut crate::observe::input_trees::Recorder::new())
    }

    /// [`Writer::persist`], recording input trees with `trees` (opened on this thread).
    fn persist_with(
        &self,
        job: Persist,
        trees: &mut crate::observe::input_trees::Recorder,
    ) -> Persisted {
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
        let artifacts = self.keep(pid, kept, &mut diagnostics);
        run.log = artifacts
            .iter()
            .find(|a| a.kind == ArtifactKind::CommandLog)
            .map(|a| a.sha256);
        let files = self
            .observed
            .files
            .get(pid)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let listing = crate::observe::listing::Listing::write(files);
        // A receipt binds the listing of what the job saw: one that cannot be stored is no
        // receipt, never a receipt naming no inputs.
        let inputs = match store.put(&listing) {
            Ok(sha) => sha,
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
        let trees = match self.trees {
            Some(known) => known.clone(),
            None => self.record_trees(id, pid, files, trees, &mut diagnostics),
        };
        // Each receipt is bound to the fingerprint of the provider it is stored under: a
        // discovery receiver's own (which includes this producer's), else this provider's.
        let mut bound: BTreeMap<ProviderId, Option<Bound>> = BTreeMap::new();
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
            let Some(Bound {
                fingerprint,
                binding,
                manifest,
            }) = bound
                .entry(owner.clone())
                .or_insert_with(|| self.bound(owner))
                .clone()
            else {
                // Every provider of a sealed graph has a fingerprint: a bug, never a
                // receipt bound to nothing.
                written = false;
                diagnostics.push(diag(
                    Code::InternalError,
                    format!("the receipt of `{pid}` has no fingerprint to be bound to, so its result was not recorded"),
                    "This is a bug: report it with the change's execution.yaml; the provider runs again next time.",
                ));
                continue;
            };
            let proof = Proof {
                version: receipt::RECEIPT_VERSION,
                change: self.change.clone(),
                provider: pid.clone(),
                receipt: verdict.output.under.clone(),
                capability: verdict.output.capability.clone(),
                claims: p.claims.iter().map(ToString::to_string).collect(),
                outcome: verdict.outcome,
                reason: verdict.reason.clone(),
                claim_outcomes: verdict.claims.clone(),
                critical_cases: verdict.critical_cases.clone(),
                adapter: p.spec.adapter.value.to_string(),
                counts: judged.counts.clone(),
                discovered: verdict.discovered,
                minimum: verdict.minimum,
                sandbox: self.mode,
                isolation,
                network: p
                    .spec
                    .network
                    .as_ref()
                    .map_or(Network::Private, |n| n.value),
                run_id: self.run_id.to_owned(),
                started_at: finished.started_at.clone(),
                finished_at: finished.finished_at.clone(),
                duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
                exit: exit.clone(),
                artifacts: artifacts.clone(),
                fingerprint,
                binding,
                manifest,
                inputs,
                inputs_size: Some(listing.len() as u64),
                input_files: files.len() as u64,
                trees: trees.trees.clone(),
                commits: trees.commits.clone(),
                executed: finished.executed.clone(),
                executor: finished
                    .ran_on
                    .as_ref()
                    .map(|_| crate::proof::receipt::RanBy::Remote),
                engine: finished.ran_on.as_ref().map(|r| r.engine.clone()),
                worker: finished.ran_on.as_ref().map(|r| r.worker.clone()),
            };
            match receipt::write(store, self.key, proof, &judged.tests, self.secrets) {
                Ok((sha, proof)) => {
                    let key = Store::action_key(&fingerprint, &proof.receipt, &proof.capability);
                    let stored = store.set_action(&key, &sha).and_then(|()| {
                        store.set_ref(self.change, &proof.receipt, &proof.capability, &sha)
                    });
                    match stored {
                        Err(e) => diagnostics.push(crate::store::diagnostic(&e)),
                        Ok(()) => {
                            if let Some(upload) = &self.upload {
                                // The uploader may be gone (it stopped); the receipt is local.
                                let _ = upload.send(sha);
                            }
                        }
                    }
                    run.receipts.push(ReceiptView {
                        receipt: proof.receipt.clone(),
                        capability: proof.capability.clone(),
                        outcome: proof.outcome,
                        reason: proof.reason.clone(),
                        sha256: sha,
                    });
                }
                Err(e) => {
                    written = false;
                    diagnostics.push(not_written(pid, &e));
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

    /// Keeps each artifact in the store, redacted; a log that cannot be kept is reported
    /// (a report or attachment that cannot be kept is still judged from).
    fn keep(
        &self,
        pid: &ProviderId,
        kept: Vec<Kept>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<Artifact> {
        let mut artifacts = Vec::new();
        for kept in kept {
            // A secret's base64 is replaced below like any form of it, but a job that
            // prints one is encoding the secret itself: the next encoding would pass.
            if kept.base64 || self.secrets.base64_in(&kept.bytes) {
                let what = match kept.kind {
                    ArtifactKind::CommandLog => "output".to_owned(),
                    kind => match &kept.path {
                        Some(path) => format!("{} `{path}`", kind.as_str()),
                        None => kind.as_str().to_owned(),
                    },
                };
                diagnostics.push(
                    Diagnostic::warning(
                        Code::SecretEncodedBase64,
                        format!("the {what} of `{pid}` holds the base64 of a secret (an `envFrom` value); a job that encodes a secret can encode it in ways no redaction follows (a log's is replaced by the marker; a report keeps its base64, which its reader decodes)"),
                    )
                    .fix("Find where the command prints or reports an encoded credential (an `Authorization: Basic` header, a dumped config) and stop it; see docs/execution.md#secrets."),
                );
            }
            // What is stored holds no secret: logs were redacted as they were written, but
            // only of the forms a stream redactor knows; reports and attachments not yet.
            // A log's base64 of a secret goes too (nothing decodes a log).
            let bytes = self.secrets.bytes(&kept.bytes);
            let bytes = if kept.kind == ArtifactKind::CommandLog {
                std::borrow::Cow::Owned(self.secrets.without_base64(&bytes).into_owned())
            } else {
                bytes
            };
            match self.store.put(&bytes) {
                Ok(sha) => artifacts.push(Artifact {
                    kind: kept.kind,
                    path: kept.path,
                    sha256: sha,
                    size: bytes.len() as u64,
                    name: kept.name,
                    content_type: kept.content_type,
                    whole: kept.whole,
                }),
                Err(e) if kept.kind == ArtifactKind::CommandLog => {
                    diagnostics.push(crate::store::diagnostic(&e));
                }
                Err(_) => {}
            }
        }
        artifacts
    }

    /// What a receipt stored under `owner` is bound to: its fingerprint, binding and
    /// manifest now.
    fn bound(&self, owner: &ProviderId) -> Option<Bound> {
        let (binding, manifest) = self
            .graph
            .binding_and_manifest(owner, &self.observed.world, self.fingerprints)
            .ok()?;
        Some(Bound {
            fingerprint: *self.fingerprints.providers.get(owner)?,
            binding: Sha256::from_bytes(binding.sha256),
            manifest: crate::proof::receipt::components(&manifest),
        })
    }
}

/// Why a receipt was not written, as a diagnostic; the provider runs again next time.
fn not_written(pid: &ProviderId, e: &receipt::ReceiptError) -> Diagnostic {
    match e {
        receipt::ReceiptError::Store(e) => diag(
            Code::StoreUnusable,
            format!("the receipt of `{pid}` could not be written: failed to {e}"),
            "Check that .proofgraph/ is writable.",
        ),
        // A secret as generic as a value the receipt must hold (an outcome name):
        // nothing is recorded rather than the secret.
        receipt::ReceiptError::Unredactable(_) => diag(
            Code::SecretTooShort,
            format!("the receipt of `{pid}` was not written: failed to {e}"),
            "Give the `envFrom` variable a longer, distinctive value; the provider runs again next time.",
        ),
        // Nothing the store can do about it: a value the receipt cannot carry.
        receipt::ReceiptError::Statement(_) => diag(
            Code::InternalError,
            format!(
                "the receipt of `{pid}` could not be encoded, so its result was not recorded: failed to {e}"
            ),
            "This is a bug: report it with the provider's report; the provider runs again next time.",
        ),
    }
}

/// What a receipt stored under one provider is bound to.
#[derive(Clone)]
struct Bound {
    fingerprint: Fingerprint,
    binding: Sha256,
    manifest: Vec<receipt::Component>,
}

#[cfg(test)]
mod tests;
