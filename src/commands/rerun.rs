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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::num::NonZeroUsize;

use proofgraph_graph::RepoId;
use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::workspace::Workspace;
use crate::observe::inputs::Snapshot;
use crate::observe::revision::Revision;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::receipt::{self, ArtifactKind, Counts, Outcome, Proof, TestNames};
use crate::run::Progress;
use crate::run::execute;
use crate::run::execute::{Plan, Stopped};
use crate::session::context::{Context, RootOutput};
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

/// What one run (or the receipt) says.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The run's id (the receipt's for the recorded one).
    pub run_id: String,
    /// The result.
    pub outcome: Outcome,
    /// The test counts.
    pub counts: Option<Counts>,
    /// Tests that passed.
    pub passed: Vec<String>,
    /// Tests that failed.
    pub failed: Vec<String>,
    /// Tests skipped or otherwise inconclusive.
    pub warned: Vec<String>,
    /// The SHA-256 of the structured report, when there is one.
    pub report: Option<String>,
}

/// The conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reproduced {
    /// Every run gave what the receipt records.
    Reproduced,
    /// Something differs.
    Differs,
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
    pub report: Option<String>,
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
        if self.report.as_deref() == Some("nondeterministic") {
            let _ = writeln!(
                out,
                "report: its bytes differ between runs with the same results (a nondeterministic report)"
            );
        }
    }
}

/// A diagnostic for inputs that cannot be had again.
fn unbuildable(message: String, fix: &str) -> Diagnostic {
    Diagnostic::error(Code::InputsNotRebuildable, message)
        .surface("rerun")
        .fix(fix)
}

/// A recorded tree to be had in a repository that lacks it.
struct Wanted<'a> {
    /// The repository's directory.
    dir: &'a std::path::Path,
    /// Its name in the workspace.
    repo: &'a str,
    /// The recorded tree.
    tree: &'a str,
    /// The commit the receipt names for it.
    commit: Option<&'a str>,
    /// The receipt's input listing (`repo:path` → identity).
    listed: &'a BTreeMap<String, String>,
    /// For a service's repository, recorded whole: the prefixes its snapshot leaves out.
    whole: Option<Vec<String>>,
}

/// Rebuilds a recorded tree that this repository lacks from the commit the receipt names
/// (then from the one checked out): the same selection of that commit's files, written as
/// a tree, must have exactly the recorded id — git's content addressing is the check, with
/// the listing's identities — and is then kept under `refs/proofgraph/inputs/` as a
/// recorded one. A run that bound a file no such commit holds (an uncommitted edit, an
/// untracked file) can only be rerun where it ran, and the error names that file.
fn rebuild(wanted: &Wanted<'_>) -> Result<Revision, Diagnostic> {
    let Wanted {
        dir,
        repo,
        tree,
        commit,
        listed,
        whole,
    } = wanted;
    let scope = format!("{repo}:");
    let bound: BTreeMap<&str, &str> = listed
        .iter()
        .filter_map(|(k, id)| Some((k.strip_prefix(&scope)?, id.as_str())))
        .collect();
    let mut candidates: Vec<&str> = commit.iter().copied().collect();
    candidates.push("HEAD");
    let mut why: Vec<String> = Vec::new();
    let mut tried: BTreeSet<String> = BTreeSet::new();
    for rev in candidates {
        let revision = match Revision::resolve(dir, rev) {
            Ok(revision) => revision,
            Err(_) => {
                if rev != "HEAD" {
                    why.push(format!(
                        "the commit it was recorded at, {rev}, is not in this repository"
                    ));
                }
                continue;
            }
        };
        let name = revision
            .commit
            .map_or_else(|| rev.to_owned(), |c| c.to_hex().to_string());
        if !tried.insert(name.clone()) {
            continue;
        }
        let keep = |path: &str| match whole {
            Some(exclude) => !crate::observe::inputs::excluded(path.as_bytes(), exclude),
            None => bound.contains_key(path),
        };
        let (rebuilt, files) = revision.extract(dir, &keep).map_err(|e| {
            unbuildable(
                format!("the input tree {tree} of repository `{repo}` could not be rebuilt from {name}: {e}"),
                "Check the repository's objects (`git fsck`).",
            )
        })?;
        if gix::ObjectId::from_hex(tree.as_bytes()).ok() == Some(rebuilt) {
            // The ref only spares the next rerun this work; without it the tree is had all
            // the same.
            let _ = crate::observe::record::keep(dir, rebuilt);
            return Revision::resolve(dir, tree).map_err(|e| {
                unbuildable(
                    format!("the input tree {tree} of repository `{repo}` was rebuilt from {name} but cannot be read: {e}"),
                    "Check the repository's objects (`git fsck`).",
                )
            });
        }
        let first = bound.iter().find_map(|(path, id)| {
            match files.binary_search_by(|f| f.path.as_str().cmp(path)) {
                Err(_) => Some(format!("`{path}` is not in {name}")),
                Ok(i) if files[i].id.to_hex() != *id => Some(format!(
                    "`{path}` in {name} is not the version the run bound"
                )),
                Ok(_) => None,
            }
        });
        why.push(first.unwrap_or_else(|| {
            format!("the repository's files in {name} are not those the run bound")
        }));
    }
    if why.is_empty() {
        why.push("no commit is checked out".to_owned());
    }
    let fix = match commit {
        Some(c) => format!(
            "Fetch the commit the receipt was recorded at (`git fetch origin {c}`) and rerun; inputs the run bound uncommitted can only be rerun in the workspace that proved it."
        ),
        None => "Rerun it in the workspace that proved it (this receipt names no commit to rebuild its inputs from).".to_owned(),
    };
    Err(unbuildable(
        format!(
            "the input tree {tree} of repository `{repo}` is not in this repository (a clone does not fetch `refs/proofgraph/inputs/`), and it cannot be rebuilt: {}",
            why.join("; ")
        ),
        &fix,
    ))
}

/// Runs `rerun`.
pub fn run(ctx: &Context, options: &RerunOptions) -> Report<RerunPayload> {
    match rerun(ctx, options) {
        Ok(report) => report,
        Err(all) => Report::failed(all, Verdict::Invalid),
    }
}

/// What a receipt (or a run's) says, as compared.
fn view(run_id: &str, proof: &Proof, tests: TestNames) -> RunView {
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    RunView {
        run_id: run_id.to_owned(),
        outcome: proof.outcome,
        counts: proof.counts.clone(),
        passed: sorted(tests.passed),
        failed: sorted(tests.failed),
        warned: sorted(tests.warned),
        report: proof
            .artifacts
            .iter()
            .find(|a| a.kind == ArtifactKind::StructuredReport)
            .map(|a| a.sha256.to_hex()),
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
    let proof = match receipt::verify_bytes(&bytes, &inspection.trusted) {
        Ok((proof, _)) => proof,
        Err(rejected) => {
            // A receipt not believed is not rerun; when the store's own key is not
            // trusted, that is why.
            let mut all = vec![crate::session::receipt_file::rejected(&bytes, rejected)];
            all.extend(inspection.diagnostic());
            return Err(all);
        }
    };
    let recorded = view(&proof.run_id, &proof, receipt::tests_of(&bytes));

    // The change as it is declared now, and the provider in it.
    let loaded = crate::session::load::load(ctx, proof.change.as_str())?;
    let graph = &loaded.prepared.graph;
    let Some(node) = graph.provider(&proof.provider) else {
        return Err(vec![unbuildable(
            format!(
                "provider `{}` is no longer in change `{}`, so its wiring cannot be had",
                proof.provider, proof.change
            ),
            "Rerun it where the change still declares the provider (check out that revision).",
        )]);
    };

    // The recorded inputs: every tree, checked against the receipt's input listing.
    if proof.trees.is_empty() {
        return Err(vec![unbuildable(
            "the receipt records no input trees (it was written before receipts recorded them, or they could not be recorded)".to_owned(),
            "Prove the provider again (`prove --no-cache`); its new receipt records them.",
        )]);
    }
    let listing = store.get(&proof.inputs).ok_or_else(|| {
        vec![unbuildable(
            "the receipt's input listing is not in the store".to_owned(),
            "Rerun it in the workspace that proved it, or `cache pull` its change first.",
        )]
    })?;
    let listed: BTreeMap<String, String> = String::from_utf8_lossy(&listing)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, id)| (p.to_owned(), id.to_owned()))
        .collect();
    let writable = Store::open(&workspace.root).map_err(|e| vec![crate::store::diagnostic(&e)])?;
    let scratch = tempfile::Builder::new()
        .prefix("rerun-")
        .tempdir_in(writable.dir().join("tmp"))
        .map_err(|e| {
            vec![
                Diagnostic::error(
                    Code::StoreUnusable,
                    format!("a directory for the rerun could not be made in .proofgraph/tmp: {e}"),
                )
                .fix("Check that .proofgraph/ is writable."),
            ]
        })?;
    let service_repos: BTreeSet<&str> = graph
        .services_of(node)
        .into_iter()
        .filter_map(|s| graph.node(s).service()?.runs_in.as_ref())
        .map(RepoId::as_str)
        .collect();
    let mut rebuilt = loaded.workspace.clone();
    let mut snapshots: BTreeMap<RepoId, Snapshot> = BTreeMap::new();
    let mut covered: BTreeSet<String> = BTreeSet::new();
    for (repo, tree) in &proof.trees {
        let Some((id, r)) = loaded
            .workspace
            .repositories
            .iter()
            .find(|(id, _)| id.as_str() == repo)
        else {
            return Err(vec![unbuildable(
                format!(
                    "the receipt's inputs lie in repository `{repo}`, which this workspace no longer has"
                ),
                "Add the repository back to proofgraph.yaml, or rerun where it is.",
            )]);
        };
        let revision = match Revision::resolve(&r.dir, tree) {
            Ok(revision) => revision,
            // Not here (a clone does not fetch `refs/proofgraph/inputs/`): rebuilt from the
            // commit the receipt names, or the one checked out, when it holds the same files.
            Err(_) => rebuild(&Wanted {
                dir: &r.dir,
                repo,
                tree,
                commit: proof.commits.get(repo).map(String::as_str),
                listed: &listed,
                whole: service_repos
                    .contains(repo.as_str())
                    .then(|| crate::observe::world::excluded_paths(&workspace.root, &r.dir)),
            })
            .map_err(|d| vec![d])?,
        };
        let files = revision.files().map_err(|e| {
            vec![unbuildable(
                format!("the input tree {tree} of repository `{repo}` cannot be read: {e}"),
                "Check the repository's objects (`git fsck`).",
            )]
        })?;
        for f in &files {
            let scoped = format!("{repo}:{}", f.path);
            // A service's repository is recorded whole; only the bound files are listed.
            if !listed.contains_key(&scoped) && service_repos.contains(repo.as_str()) {
                continue;
            }
            if listed.get(&scoped) != Some(&f.id.to_hex()) {
                return Err(vec![unbuildable(
                    format!(
                        "the input tree {tree} of repository `{repo}` does not hold what the receipt bound (`{}`)",
                        f.path
                    ),
                    "The ref was changed after the receipt was written; it cannot be rerun from it.",
                )]);
            }
            covered.insert(scoped);
        }
        let dir = scratch.path().join("src").join(repo);
        fs_err::create_dir_all(&dir).map_err(|e| {
            vec![unbuildable(
                format!("the inputs could not be written out: {e}"),
                "Check that .proofgraph/ is writable.",
            )]
        })?;
        revision.write_to(&dir).map_err(|e| {
            vec![unbuildable(
                format!("the input tree {tree} of repository `{repo}` could not be written out: {e}"),
                "Check that .proofgraph/ is writable and the repository's objects are intact (`git fsck`).",
            )]
        })?;
        if let Some(target) = rebuilt.repositories.get_mut(id) {
            target.dir = dir.clone();
        }
        snapshots.insert(
            id.clone(),
            Snapshot {
                dir,
                files,
                rehashed: 0,
            },
        );
    }
    if let Some(missing) = listed.keys().find(|k| !covered.contains(*k)) {
        return Err(vec![unbuildable(
            format!("the receipt bound `{missing}`, which no recorded tree holds"),
            "Prove the provider again; its new receipt records every input.",
        )]);
    }
    // Repositories the receipt bound nothing of are empty here.
    for (id, r) in rebuilt.repositories.iter_mut() {
        if !snapshots.contains_key(id) {
            let dir = scratch.path().join("src").join(id.as_str());
            fs_err::create_dir_all(&dir).map_err(|e| {
                vec![unbuildable(
                    format!("the inputs could not be written out: {e}"),
                    "Check that .proofgraph/ is writable.",
                )]
            })?;
            r.dir = dir.clone();
            snapshots.insert(
                id.clone(),
                Snapshot {
                    dir,
                    files: Vec::new(),
                    rehashed: 0,
                },
            );
        }
    }
    let observed = crate::observe::world::observe_snapshots(
        &rebuilt,
        &loaded.change,
        graph,
        ctx.path_var(),
        snapshots,
    )?;
    let fingerprints = graph
        .fingerprints_with(&observed.world, crate::session::load::default_jobs())
        .map_err(|e| vec![Diagnostic::error(Code::InternalError, e.to_string())])?;
    // The wiring now against the wiring recorded, component by component, and a map's
    // entry by entry (`catalog.hostPaths`, `env.NODE_ENV`), as `explain` names them.
    let now = graph
        .manifest(&proof.provider, &observed.world, &fingerprints)
        .map(|m| receipt::components(&m))
        .map_err(|e| vec![Diagnostic::error(Code::InternalError, e.to_string())])?;
    let gone = proof
        .manifest
        .iter()
        .filter(|c| !c.value.is_null() && !now.iter().any(|n| n.name == c.name))
        .map(|c| c.name.clone());
    let differing: Vec<String> = super::explain::diff(&proof.manifest, &now)
        .into_iter()
        .map(|c| c.component)
        .chain(gone)
        .filter(|name| name != "depends_on" && !name.starts_with("depends_on."))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !differing.is_empty() {
        return Err(vec![unbuildable(
            format!(
                "provider `{}` is not wired as the receipt records ({} differ), so re-executing it now would prove something else",
                proof.provider,
                differing.join(", ")
            ),
            "Rerun where the change declares the provider as it was (check out that revision); `proofgraph explain` names what changed.",
        )]);
    }

    // The runs: fresh run ids, fresh sandboxes, a scratch store unless --record.
    let interrupt = crate::base::interrupt::Interrupt::install();
    let (run_store, key) = if options.record {
        let signing = crate::proof::trust::signing_key(
            &pins,
            &writable,
            &workspace.root,
            workspace.catalog.as_ref(),
        )?;
        (writable.clone(), signing.key)
    } else {
        let key = crate::attest::keys::generate_signing_key().map_err(|e| {
            vec![Diagnostic::error(
                Code::InternalError,
                format!("no key for the scratch store: {e}"),
            )]
        })?;
        let store = Store::open(&scratch.path().join("store"))
            .map_err(|e| vec![crate::store::diagnostic(&e)])?;
        (store, key)
    };
    let own = crate::attest::envelope::TrustedKey::new(key.verifying_key());
    let wanted: BTreeSet<proofgraph_graph::NodeId> = [node].into_iter().collect();
    let recorded_inputs = crate::observe::record::Recorded {
        trees: proof.trees.clone(),
        commits: proof.commits.clone(),
    };
    let mut runs = Vec::new();
    let mut diagnostics = Vec::new();
    let bar = crate::present::output::ProgressBar::new(
        crate::present::output::ProgressBar::stderr_is_terminal(ctx.env()),
        crate::present::output::ProgressBar::width(ctx.env()),
    )
    .with_secrets(loaded.secrets.clone());
    for _ in 0..options.times.get() {
        let run_id = crate::run::new_run_id();
        let shown = loaded.secrets.with_rewrites(crate::run::path_rewrites(
            &run_store,
            &run_id,
            &rebuilt,
            proof.sandbox,
            wanted.len() + graph.services().count(),
        ));
        let plan = Plan {
            graph,
            change: &proof.change,
            workspace: &rebuilt,
            observed: &observed,
            fingerprints: &fingerprints,
            store: &run_store,
            key: &key,
            mode: proof.sandbox,
            jobs: NonZeroUsize::MIN,
            keep_going: false,
            keep_sandbox: false,
            isolation: proofgraph_sandbox::IsolationRequest::Auto,
            env: ctx.env(),
            interrupt: &interrupt,
            run_id: &run_id,
            secrets: &shown,
            progress: &|p: Progress<'_>| {
                if let Progress::Line(line) = p {
                    bar.line(&line.to_string());
                }
            },
            heartbeat: None,
            stream: None,
            upload: None,
            trees: Some(&recorded_inputs),
        };
        let executed = match execute::execute(&plan, &wanted) {
            Ok(executed) => executed,
            Err(Stopped::InputsChanged(all) | Stopped::Failed(all)) => return Err(all),
        };
        diagnostics.extend(executed.diagnostics);
        if executed.interrupted {
            return Ok(Report::failed(
                vec![
                    Diagnostic::error(Code::Interrupted, "the rerun was interrupted".to_owned())
                        .surface("rerun")
                        .fix("Run it again."),
                ],
                Verdict::Interrupted,
            ));
        }
        let written = executed
            .providers
            .iter()
            .flat_map(|p| p.receipts.iter())
            .find(|r| r.receipt == proof.receipt && r.capability == proof.capability)
            .map(|r| r.sha256);
        let Some(bytes) = written.and_then(|sha| run_store.get(&sha)) else {
            let why = executed
                .providers
                .iter()
                .find_map(|p| p.reason.clone())
                .unwrap_or_else(|| "it wrote no receipt".to_owned());
            return Err(vec![unbuildable(
                format!("the rerun of `{}` gave no result: {why}", proof.provider),
                "Look at the diagnostics above; `--times 1` shows one run's progress.",
            )]);
        };
        let trusted = [own.clone()];
        let Ok((got, _)) = receipt::verify_bytes(
            &bytes,
            if options.record {
                &inspection.trusted
            } else {
                &trusted
            },
        ) else {
            return Err(vec![Diagnostic::error(
                Code::InternalError,
                "the rerun's own receipt does not verify".to_owned(),
            )]);
        };
        runs.push(view(&run_id, &got, receipt::tests_of(&bytes)));
    }
    drop(scratch);

    let (verdict, differences, flaky, report) = compare(&recorded, &runs);
    Ok(Report {
        payload: Some(RerunPayload {
            sha256: Some(sha256),
            change: Some(proof.change.to_string()),
            provider: Some(proof.provider.to_string()),
            receipt: Some(proof.receipt.to_string()),
            capability: Some(proof.capability.to_string()),
            recorded: Some(recorded),
            runs,
            verdict: Some(verdict),
            differences,
            flaky,
            report: Some(report),
            root: Some(root),
        }),
        status: diagnostics,
        verdict: match verdict {
            Reproduced::Reproduced => Verdict::Success,
            Reproduced::Differs => Verdict::Failed,
        },
    })
}

/// Compares every run with the receipt: the verdict, what differs, the flaky tests, and
/// what became of the report's bytes.
pub fn compare(
    recorded: &RunView,
    runs: &[RunView],
) -> (Reproduced, Vec<String>, Vec<String>, String) {
    let mut differences = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let n = i + 1;
        if r.outcome != recorded.outcome {
            differences.push(format!(
                "result: {} recorded, {} in run {n}",
                recorded.outcome.as_str(),
                r.outcome.as_str()
            ));
        }
        if r.counts != recorded.counts {
            let shown =
                |c: &Option<Counts>| c.as_ref().map_or_else(|| "none".to_owned(), Counts::shown);
            differences.push(format!(
                "counts: {} recorded, {} in run {n}",
                shown(&recorded.counts),
                shown(&r.counts)
            ));
        }
    }
    // A test is flaky when its outcome is not the same in every rerun (one machine, the
    // same trees, one after the other). One that differs from the receipt the same way in
    // every rerun is a difference, not flakiness: it reproduces otherwise here.
    let outcome = |v: &RunView, t: &str| -> &'static str {
        if v.passed.iter().any(|x| x == t) {
            "passed"
        } else if v.failed.iter().any(|x| x == t) {
            "failed"
        } else if v.warned.iter().any(|x| x == t) {
            "skipped"
        } else {
            "absent"
        }
    };
    let all: Vec<&RunView> = std::iter::once(recorded).chain(runs.iter()).collect();
    let names: BTreeSet<&String> = all
        .iter()
        .flat_map(|v| {
            v.passed
                .iter()
                .chain(v.failed.iter())
                .chain(v.warned.iter())
        })
        .collect();
    let mut flaky = Vec::new();
    let mut results_differ = !differences.is_empty();
    for name in names {
        let in_runs: BTreeSet<&str> = runs.iter().map(|v| outcome(v, name)).collect();
        let was = outcome(recorded, name);
        if in_runs.len() > 1 {
            let per: Vec<String> = all
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let who = if i == 0 {
                        "recorded".to_owned()
                    } else {
                        format!("run {i}")
                    };
                    format!("{who} {}", outcome(v, name))
                })
                .collect();
            differences.push(format!("test `{name}` flipped: {}", per.join(", ")));
            flaky.push(name.clone());
            results_differ = true;
        } else if let Some(now) = in_runs.first()
            && *now != was
        {
            let every = if runs.len() == 1 {
                "in the rerun".to_owned()
            } else {
                format!("in all {} reruns", runs.len())
            };
            differences.push(format!("test `{name}`: {was} recorded, {now} {every}"));
            results_differ = true;
        }
    }
    let report = if recorded.report.is_none() && runs.iter().all(|r| r.report.is_none()) {
        "none"
    } else if runs.iter().all(|r| r.report == recorded.report) {
        "identical"
    } else if results_differ {
        // The bytes differ because the results do: nothing to say of the report itself.
        "differs"
    } else {
        "nondeterministic"
    };
    let verdict = if differences.is_empty() {
        Reproduced::Reproduced
    } else {
        Reproduced::Differs
    };
    (verdict, differences, flaky, report.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, outcome: Outcome, passed: &[&str], failed: &[&str], report: &str) -> RunView {
        RunView {
            run_id: id.to_owned(),
            outcome,
            counts: None,
            passed: passed.iter().map(|t| (*t).to_owned()).collect(),
            failed: failed.iter().map(|t| (*t).to_owned()).collect(),
            warned: Vec::new(),
            report: Some(report.to_owned()),
        }
    }

    #[test]
    fn a_test_is_flaky_only_when_the_reruns_disagree() {
        let recorded = run("r", Outcome::Pass, &["coin", "value"], &[], "a");
        // One rerun that fails it: a difference, not flakiness, and the report differs
        // because the results do.
        let once = [run("1", Outcome::Fail, &["value"], &["coin"], "b")];
        let (verdict, differences, flaky, report) = compare(&recorded, &once);
        assert_eq!(verdict, Reproduced::Differs);
        assert!(flaky.is_empty(), "{differences:?}");
        assert!(
            differences.contains(&"test `coin`: passed recorded, failed in the rerun".to_owned()),
            "{differences:?}"
        );
        assert_eq!(report, "differs");
        // Reruns that disagree among themselves: flaky.
        let twice = [
            run("1", Outcome::Fail, &["value"], &["coin"], "b"),
            run("2", Outcome::Pass, &["coin", "value"], &[], "c"),
        ];
        let (_, differences, flaky, _) = compare(&recorded, &twice);
        assert_eq!(flaky, ["coin"]);
        assert!(
            differences
                .iter()
                .any(|d| d.starts_with("test `coin` flipped: recorded passed, run 1 failed")),
            "{differences:?}"
        );
        // The same results with other bytes: a nondeterministic report, reproduced.
        let same = [run("1", Outcome::Pass, &["coin", "value"], &[], "d")];
        let (verdict, differences, flaky, report) = compare(&recorded, &same);
        assert_eq!(verdict, Reproduced::Reproduced, "{differences:?}");
        assert!(flaky.is_empty());
        assert_eq!(report, "nondeterministic");
    }
}
