//! `proofgraph rerun <receipt> [--times N] [--record]`: re-executes the proof a receipt
//! records — from exactly the input files it bound (the git trees it recorded, never
//! today's working tree), in fresh hermetic runs — and says whether it reproduces (Nix's
//! `--rebuild --check`).
//!
//! The receipt must verify against a trusted key. Its wiring must still be what the
//! change declares: every component of its fingerprint but `depends_on` (dependencies are
//! not re-executed) is recomputed from the rebuilt files and the change now, and a
//! difference is named and refused (exit 3) rather than re-executing something else. Each
//! run writes into a scratch store that is thrown away, unless `--record`.
//!
//! Exit 0: every run gave the recorded result, counts and per-test outcomes (a report
//! whose bytes differ with all of that equal is `nondeterministic`, and still
//! reproduces). Exit 1: something differs — the result, the counts, a test whose outcome
//! differs from the receipt's in every rerun, or one whose outcome flipped between the
//! reruns (`flaky`). Exit 3: the receipt or its recorded inputs cannot be had.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::num::NonZeroUsize;

use proofgraph_graph::NodeId;
use serde::Serialize;

use crate::attest::envelope::TrustedKey;
use crate::base::diagnostic::{Code, Diagnostic};
pub use crate::decide::reproduce::{ReportBytes, Reproduced, RunView};
use crate::load::workspace::Workspace;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::{self, Proof};
use crate::run::Progress;
use crate::run::execute;
use crate::run::execute::{Plan, Stopped};
use crate::session::context::{Context, RootOutput};
use crate::session::load::Loaded;
use crate::session::rerun_world::{self, RecordedWorld, unbuildable};
use crate::store::Store;

/// Options of `rerun`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerunOptions {
    /// The receipt: a SHA-256 of the store, or a file.
    pub receipt: String,
    /// How many runs.
    pub times: NonZeroUsize,
    /// Write the runs' receipts into the store (signed with the workspace key).
    pub record: bool,
}

/// The payload of `rerun`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RerunPayload {
    /// The receipt's SHA-256.
    pub sha256: Option<String>,
    /// Its change.
    pub change: Option<String>,
    /// The provider re-executed.
    pub provider: Option<String>,
    /// The receipt's name and capability.
    pub receipt: Option<String>,
    /// Its capability.
    pub capability: Option<String>,
    /// What the receipt records.
    pub recorded: Option<RunView>,
    /// What each run gave.
    pub runs: Vec<RunView>,
    /// The conclusion.
    pub verdict: Option<Reproduced>,
    /// What differs, one sentence each.
    pub differences: Vec<String>,
    /// Tests whose outcome was not the same in every run (the receipt's included).
    pub flaky: Vec<String>,
    /// `identical`, `nondeterministic` (its bytes differ while the results do not),
    /// `differs` (its bytes differ, as the results do) or `none`.
    pub report: Option<ReportBytes>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for RerunPayload {
    fn human(&self, out: &mut String) {
        let (Some(sha), Some(provider)) = (&self.sha256, &self.provider) else {
            return;
        };
        let _ = writeln!(
            out,
            "rerun of receipt {} ({} / {} @ {}): {} run(s)",
            &sha[..12.min(sha.len())],
            self.change.as_deref().unwrap_or(""),
            provider,
            self.capability.as_deref().unwrap_or(""),
            self.runs.len()
        );
        let line = |out: &mut String, name: &str, r: &RunView| {
            let counts = r
                .counts
                .as_ref()
                .map(|c| format!(" [{}]", c.shown()))
                .unwrap_or_default();
            let _ = writeln!(out, "  {name:10} {}{counts}", r.outcome.as_str());
        };
        if let Some(r) = &self.recorded {
            line(out, "recorded", r);
        }
        for (i, r) in self.runs.iter().enumerate() {
            line(out, &format!("run {}", i + 1), r);
        }
        match self.verdict {
            Some(Reproduced::Reproduced) => {
                let _ = writeln!(out, "reproduced");
            }
            Some(Reproduced::Differs) => {
                let _ = writeln!(out, "differs:");
                for d in &self.differences {
                    let _ = writeln!(out, "  - {d}");
                }
            }
            None => {}
        }
        if !self.flaky.is_empty() {
            let _ = writeln!(out, "flaky: {}", self.flaky.join(", "));
        }
        if self.report == Some(ReportBytes::Nondeterministic) {
            let _ = writeln!(
                out,
                "report: its bytes differ between runs with the same results (a nondeterministic report)"
            );
        }
    }
}

/// Runs `rerun`.
pub fn run(ctx: &Context, options: &RerunOptions) -> Report<RerunPayload> {
    match rerun(ctx, options) {
        Ok(report) => report,
        Err(all) => Report::failed(all, Verdict::Invalid),
    }
}

fn rerun(ctx: &Context, options: &RerunOptions) -> Result<Report<RerunPayload>, Vec<Diagnostic>> {
    let resolution = ctx.resolve_root().map_err(|d| vec![d])?;
    let root = RootOutput::from(&resolution.root);
    let workspace = Workspace::load(&resolution.root.path);
    let store = Store::open_read_only(&workspace.root);
    let pins = crate::proof::trust::Pins::new(ctx.env());
    let inspection =
        crate::proof::trust::inspect(&pins, &workspace.root, workspace.catalog.as_ref());
    let bytes =
        crate::session::receipt_file::read(ctx, &store, &options.receipt).map_err(|d| vec![d])?;
    let sha256 = crate::store::sha256_hex(&bytes);
    let proof = believed(&bytes, &inspection)?;
    let recorded = RunView::of(&proof.run_id, &proof, receipt::tests_of(&bytes));

    // The change as it is declared now, and the provider in it.
    let loaded = crate::session::load::load(ctx, proof.change.as_str())?;
    let node = provider_node(&loaded, &proof)?;
    // The recorded inputs, written out, observed and checked in a scratch directory.
    let listing = rerun_world::listing(&store, &proof).map_err(|d| vec![d])?;
    let writable = Store::open(&workspace.root).map_err(|e| vec![crate::store::diagnostic(&e)])?;
    let scratch = scratch_dir(&writable)?;
    let world = rerun_world::make(
        ctx.path_var(),
        &loaded,
        node,
        &proof,
        &listing,
        scratch.path(),
    )?;

    // The runs: fresh run ids, fresh sandboxes, a scratch store unless --record.
    let interrupt = crate::base::interrupt::Interrupt::install();
    let (store, key, trusted) = if options.record {
        let signing = crate::proof::trust::signing_key(
            &pins,
            &writable,
            &workspace.root,
            workspace.catalog.as_ref(),
        )?;
        (writable.clone(), signing.key, inspection.trusted.clone())
    } else {
        scratch_store(scratch.path())?
    };
    let runner = Runner {
        ctx,
        loaded: &loaded,
        node,
        proof: &proof,
        world: &world,
        store: &store,
        key: &key,
        trusted: &trusted,
        interrupt: &interrupt,
        recorded_inputs: crate::observe::input_trees::Recorded {
            trees: proof.trees.clone(),
            commits: proof.commits.clone(),
        },
        bar: crate::present::output::ProgressBar::new(
            crate::present::output::ProgressBar::stderr_is_terminal(ctx.env()),
            crate::present::output::ProgressBar::width(ctx.env()),
        )
        .with_secrets(loaded.secrets.clone()),
    };
    let mut runs = Vec::new();
    let mut diagnostics = Vec::new();
    for _ in 0..options.times.get() {
        let Some((view, found)) = runner.once()? else {
            return Ok(interrupted());
        };
        runs.push(view);
        diagnostics.extend(found);
    }
    drop(scratch);
    Ok(report(sha256, &proof, recorded, runs, diagnostics, root))
}

/// The receipt `bytes` hold, when a key the workspace trusts signed it.
fn believed(
    bytes: &[u8],
    inspection: &crate::proof::trust::Inspection,
) -> Result<Proof, Vec<Diagnostic>> {
    match receipt::verify_bytes(bytes, &inspection.trusted) {
        Ok((proof, _)) => Ok(proof),
        Err(rejected) => {
            // A receipt not believed is not rerun; when the store's own key is not
            // trusted, that is why.
            let mut all = vec![crate::session::receipt_file::rejected(bytes, rejected)];
            all.extend(inspection.diagnostic());
            Err(all)
        }
    }
}

/// The receipt's provider in the change as declared now.
fn provider_node(loaded: &Loaded, proof: &Proof) -> Result<NodeId, Vec<Diagnostic>> {
    loaded
        .prepared
        .graph
        .provider(&proof.provider)
        .ok_or_else(|| {
            vec![unbuildable(
                format!(
                    "provider `{}` is no longer in change `{}`, so its wiring cannot be had",
                    proof.provider, proof.change
                ),
                "Rerun it where the change still declares the provider (check out that revision).",
            )]
        })
}

/// A directory for the rerun in the store's `tmp/`, removed when dropped.
fn scratch_dir(store: &Store) -> Result<tempfile::TempDir, Vec<Diagnostic>> {
    tempfile::Builder::new()
        .prefix("rerun-")
        .tempdir_in(store.dir().join("tmp"))
        .map_err(|e| {
            vec![
                Diagnostic::error(
                    Code::StoreUnusable,
                    format!("a directory for the rerun could not be made in .proofgraph/tmp: {e}"),
                )
                .fix("Check that .proofgraph/ is writable."),
            ]
        })
}

/// A store in the scratch directory with a key of its own, which alone is trusted there.
fn scratch_store(
    scratch: &std::path::Path,
) -> Result<(Store, ed25519_dalek::SigningKey, Vec<TrustedKey>), Vec<Diagnostic>> {
    let key = crate::attest::keys::generate_signing_key().map_err(|e| {
        vec![Diagnostic::error(
            Code::InternalError,
            format!("no key for the scratch store: {e}"),
        )]
    })?;
    let store =
        Store::open(&scratch.join("store")).map_err(|e| vec![crate::store::diagnostic(&e)])?;
    let own = TrustedKey::new(key.verifying_key());
    Ok((store, key, vec![own]))
}

/// What every run shares.
struct Runner<'a> {
    ctx: &'a Context,
    loaded: &'a Loaded,
    node: NodeId,
    proof: &'a Proof,
    world: &'a RecordedWorld,
    store: &'a Store,
    key: &'a ed25519_dalek::SigningKey,
    /// The keys the runs' receipts are verified with.
    trusted: &'a [TrustedKey],
    interrupt: &'a crate::base::interrupt::Interrupt,
    recorded_inputs: crate::observe::input_trees::Recorded,
    bar: crate::present::output::ProgressBar,
}

impl Runner<'_> {
    /// One run: what it gave and its findings, or `None` when it was interrupted.
    fn once(&self) -> Result<Option<(RunView, Vec<Diagnostic>)>, Vec<Diagnostic>> {
        let graph = &self.loaded.prepared.graph;
        let run_id = crate::run::new_run_id();
        let wanted: BTreeSet<NodeId> = [self.node].into_iter().collect();
        let shown = self.loaded.secrets.with_rewrites(crate::run::path_rewrites(
            self.store,
            &run_id,
            &self.world.workspace,
            self.proof.sandbox,
            wanted.len() + graph.services().count(),
        ));
        let plan = Plan {
            graph,
            change: &self.proof.change,
            workspace: &self.world.workspace,
            observed: &self.world.observed,
            fingerprints: &self.world.fingerprints,
            store: self.store,
            key: self.key,
            mode: self.proof.sandbox,
            jobs: NonZeroUsize::MIN,
            keep_going: false,
            keep_sandbox: false,
            isolation: proofgraph_sandbox::IsolationRequest::Auto,
            env: self.ctx.env(),
            interrupt: self.interrupt,
            run_id: &run_id,
            secrets: &shown,
            progress: &|p: Progress<'_>| {
                if let Progress::Line(line) = p {
                    self.bar.line(&line.to_string());
                }
            },
            heartbeat: None,
            stream: None,
            upload: None,
            trees: Some(&self.recorded_inputs),
            // A receipt is re-executed here, whatever ran it.
            remote: None,
        };
        let runtime = self.ctx.runtime().map_err(|d| vec![d])?;
        let mut executed = match execute::execute(&plan, &wanted, &runtime) {
            Ok(executed) => executed,
            Err(Stopped::InputsChanged(all) | Stopped::Failed(all)) => return Err(all),
        };
        if executed.interrupted {
            return Ok(None);
        }
        let bytes = self.written(&executed)?;
        let Ok((got, _)) = receipt::verify_bytes(&bytes, self.trusted) else {
            return Err(vec![Diagnostic::error(
                Code::InternalError,
                "the rerun's own receipt does not verify".to_owned(),
            )]);
        };
        let view = RunView::of(&run_id, &got, receipt::tests_of(&bytes));
        Ok(Some((view, std::mem::take(&mut executed.diagnostics))))
    }

    /// The bytes of the receipt a run wrote for the rerun one, or why it wrote none.
    fn written(&self, executed: &execute::Executed) -> Result<Vec<u8>, Vec<Diagnostic>> {
        let written = executed
            .providers
            .iter()
            .flat_map(|p| p.receipts.iter())
            .find(|r| r.receipt == self.proof.receipt && r.capability == self.proof.capability)
            .map(|r| r.sha256);
        written.and_then(|sha| self.store.get(&sha)).ok_or_else(|| {
            let why = executed
                .providers
                .iter()
                .find_map(|p| p.reason.clone())
                .unwrap_or_else(|| "it wrote no receipt".to_owned());
            vec![unbuildable(
                format!(
                    "the rerun of `{}` gave no result: {why}",
                    self.proof.provider
                ),
                "Look at the diagnostics above; `--times 1` shows one run's progress.",
            )]
        })
    }
}

/// The report of an interrupted rerun.
fn interrupted() -> Report<RerunPayload> {
    Report::failed(
        vec![
            Diagnostic::error(Code::Interrupted, "the rerun was interrupted".to_owned())
                .surface("rerun")
                .fix("Run it again."),
        ],
        Verdict::Interrupted,
    )
}

/// The report: the receipt, each run, and how they compare.
fn report(
    sha256: String,
    proof: &Proof,
    recorded: RunView,
    runs: Vec<RunView>,
    diagnostics: Vec<Diagnostic>,
    root: RootOutput,
) -> Report<RerunPayload> {
    let compared = crate::decide::reproduce::compare(&recorded, &runs);
    Report {
        payload: Some(RerunPayload {
            sha256: Some(sha256),
            change: Some(proof.change.to_string()),
            provider: Some(proof.provider.to_string()),
            receipt: Some(proof.receipt.to_string()),
            capability: Some(proof.capability.to_string()),
            recorded: Some(recorded),
            runs,
            verdict: Some(compared.verdict),
            differences: compared.differences,
            flaky: compared.flaky,
            report: Some(compared.report),
            root: Some(root),
        }),
        status: diagnostics,
        verdict: match compared.verdict {
            Reproduced::Reproduced => Verdict::Success,
            Reproduced::Differs => Verdict::Failed,
        },
    }
}
