//! `proofgraph plan <change> --base <rev> [--head <rev>]`: the verification plan of a
//! diff (the markharness seed's Verification Plan). Which paths changed between two
//! revisions, in every repository of the workspace; which providers and claims that
//! affects and why; and, at the head, whether each is already proven — `status` at the
//! head, with fingerprints computed from git's objects (no checkout), so a reviewer sees
//! what must be proven again and what is proven already.
//!
//! A provider is affected when (`origin: derived`) a changed path is one of its inputs
//! (the same rules that select its input files), or it depends on (`dependsOn`, or writes
//! its receipt through) an affected provider; or when (`origin: stored`) its declaration
//! or a service it uses is new or differs in `execution.yaml`. A claim is affected when a
//! provider vouching for it is, or (`stored`) it is new or differs in `evidence.yaml`.
//! The change packet's prose is never a changed path (as it is never an input), nor is the
//! workspace catalog; a provider is affected (`stored`) when what of the catalog its
//! fingerprint binds (docs/workspaces.md) differs between the catalog at the base and this
//! checkout's, which both sides' fingerprints use.
//!
//! Exit codes are the seed's: 0 every requirement at the head is passed, 1 one failed,
//! 2 one is pending, stale or inconclusive, 3 the plan cannot be made.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use proofgraph_graph::{ChangeName, RepoId};
use serde::Serialize;

use crate::decide::affected;
use crate::decide::status::{self, State};
use crate::load::config::catalog::Catalog;
use crate::load::workspace::{Change, Workspace};
use crate::observe::changes::{self, Head};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::change_at_revision::{RevisionArgs, Revisions};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Evaluated, Keys};

pub use crate::decide::affected::{Origin, Removed};
pub use crate::observe::changes::{Changed, PathChange};

/// Options of `plan --base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefsOptions {
    /// The change.
    pub change: String,
    /// The base revisions (`--base`, repeatable): a plain one and `name=REV`.
    pub base: Vec<String>,
    /// The head revisions likewise; the working tree when there are none.
    pub head: Vec<String>,
}

/// One side of the diff.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Side {
    /// The revision as given; `null` for the working tree.
    #[serde(rename = "ref")]
    pub rev: Option<String>,
    /// Whether this side is the working tree (tracked and untracked files as `git status`
    /// shows them).
    pub working_tree: bool,
    /// The commit (or tree) it names, per repository.
    pub repositories: BTreeMap<String, String>,
    /// The revisions given for one repository (`--base api=REV`), by repository.
    pub named: BTreeMap<String, String>,
}

/// One provider of the change at the head.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedProvider {
    /// Its name.
    pub id: String,
    /// Its capability.
    pub capability: String,
    /// Whether the diff affects it.
    pub affected: bool,
    /// Why (`null` when not affected).
    pub reason: Option<String>,
    /// Through which relation (`null` when not affected).
    pub origin: Option<Origin>,
    /// Its status at the head, as `status` defines it (its receipts combined).
    pub status: State,
    /// Its fingerprint at the head.
    pub fingerprint: Option<String>,
    /// The receipt that gives the status (current, else the stale one).
    pub receipt: Option<String>,
}

/// One claim × capability at the head.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedClaim {
    /// The claim.
    pub id: String,
    /// The capability.
    pub capability: String,
    /// Whether the diff affects it.
    pub affected: bool,
    /// Why (`null` when not affected).
    pub reason: Option<String>,
    /// Through which relation (`null` when not affected).
    pub origin: Option<Origin>,
    /// Its status at the head.
    pub status: State,
    /// The providers that vouch for it.
    pub providers: Vec<String>,
}

/// Counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Repositories with at least one changed path.
    pub changed_repositories: usize,
    /// Changed paths.
    pub changed_paths: usize,
    /// Affected providers.
    pub affected_providers: usize,
    /// Affected claim × capability requirements.
    pub affected_claims: usize,
    /// Requirements passed at the head.
    pub passed: usize,
    /// Requirements failed at the head.
    pub failed: usize,
    /// Requirements inconclusive at the head.
    pub inconclusive: usize,
    /// Requirements pending at the head.
    pub pending: usize,
    /// Requirements stale at the head.
    pub stale: usize,
}

/// The payload of `plan --base`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RefsPayload {
    /// The change.
    pub change: Option<String>,
    /// The base.
    pub base: Option<Side>,
    /// The head.
    pub head: Option<Side>,
    /// The counts.
    pub summary: Option<Summary>,
    /// Every changed path, by repository and path.
    pub changed: Vec<Changed>,
    /// Every provider at the head.
    pub providers: Vec<PlannedProvider>,
    /// Every claim × capability at the head.
    pub claims: Vec<PlannedClaim>,
    /// What the head no longer declares.
    pub removed: Removed,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

fn side_name(side: &Option<Side>) -> String {
    match side {
        Some(Side {
            rev: Some(r),
            named,
            ..
        }) => {
            let mut text = r.clone();
            let named: Vec<String> = named.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if !named.is_empty() {
                let _ = write!(text, " ({})", named.join(", "));
            }
            text
        }
        _ => "the working tree".to_owned(),
    }
}

impl RefsPayload {
    fn line(out: &mut String, p: &PlannedProvider) {
        let why = p.reason.as_deref().unwrap_or("unaffected");
        let _ = writeln!(
            out,
            "  {:10} {:24} {:12}  {why}",
            p.status.as_str(),
            p.id,
            p.fingerprint
                .as_deref()
                .map_or("-", |f| &f[..12.min(f.len())]),
        );
    }

    /// The plan as Markdown, for a pull request comment.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let Some(change) = &self.change else {
            return out;
        };
        let s = self.summary.clone().unwrap_or_default();
        let _ = writeln!(
            out,
            "### Verification plan: `{}` — `{}`..`{}`\n",
            md(change),
            md(&side_name(&self.base)),
            md(&side_name(&self.head))
        );
        let _ = writeln!(
            out,
            "{} changed paths in {} repositories; {} affected providers, {} affected requirements. At the head: {} passed, {} failed, {} inconclusive, {} stale, {} pending.\n",
            s.changed_paths,
            s.changed_repositories,
            s.affected_providers,
            s.affected_claims,
            s.passed,
            s.failed,
            s.inconclusive,
            s.stale,
            s.pending
        );
        let _ = writeln!(out, "| claim | capability | status | affected |");
        let _ = writeln!(out, "|---|---|---|---|");
        for c in &self.claims {
            let _ = writeln!(
                out,
                "| `{}` | `{}` | {} | {} |",
                md(&c.id),
                md(&c.capability),
                c.status.as_str(),
                c.reason.as_deref().map_or_else(|| "no".to_owned(), md)
            );
        }
        let _ = writeln!(out, "\n| provider | status | affected | fingerprint |");
        let _ = writeln!(out, "|---|---|---|---|");
        for p in &self.providers {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | `{}` |",
                md(&p.id),
                p.status.as_str(),
                p.reason.as_deref().map_or_else(|| "no".to_owned(), md),
                p.fingerprint
                    .as_deref()
                    .map_or("-", |f| &f[..12.min(f.len())])
            );
        }
        out
    }
}

/// Text in a Markdown table cell.
fn md(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('`', "'")
        .replace(['\n', '\r'], " ")
}

impl Payload for RefsPayload {
    fn human(&self, out: &mut String) {
        let Some(change) = &self.change else { return };
        let s = self.summary.clone().unwrap_or_default();
        let _ = writeln!(
            out,
            "Plan for {change}: {}..{}",
            side_name(&self.base),
            side_name(&self.head)
        );
        let _ = writeln!(
            out,
            "  {} changed paths in {} repositories; {} affected providers, {} affected requirements",
            s.changed_paths, s.changed_repositories, s.affected_providers, s.affected_claims
        );
        let affected: Vec<&PlannedProvider> =
            self.providers.iter().filter(|p| p.affected).collect();
        if !affected.is_empty() {
            let _ = writeln!(out, "affected");
            for p in affected {
                Self::line(out, p);
            }
        }
        let rest: Vec<&PlannedProvider> = self.providers.iter().filter(|p| !p.affected).collect();
        if !rest.is_empty() {
            let _ = writeln!(out, "unaffected");
            for p in rest {
                Self::line(out, p);
            }
        }
        if !self.removed.providers.is_empty() {
            let _ = writeln!(out, "removed: {}", self.removed.providers.join(", "));
        }
        let _ = writeln!(
            out,
            "at the head: {} passed, {} failed, {} inconclusive, {} stale, {} pending",
            s.passed, s.failed, s.inconclusive, s.stale, s.pending
        );
    }
}

/// The plan as Markdown: rendered text, written to stdout as it is.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RefsDocument {
    /// The Markdown text.
    pub text: String,
}

impl Payload for RefsDocument {
    fn raw(&self) -> bool {
        true
    }

    fn human(&self, out: &mut String) {
        out.push_str(&self.text);
    }
}

/// `plan --base … --format markdown`: the same plan and verdict, as Markdown; a plan that
/// cannot be made says so in the document.
pub fn document(
    report: Report<RefsPayload>,
    secrets: &crate::base::redact::Secrets,
) -> Report<RefsDocument> {
    let text = match &report.payload {
        Some(p) => p.markdown(),
        None => {
            let mut out = "### Verification plan: cannot be made\n\n".to_owned();
            for d in &report.status {
                let _ = writeln!(out, "- `{}`: {}", d.code.as_str(), md(&d.message));
            }
            out
        }
    };
    let text = String::from_utf8_lossy(&secrets.bytes(text.as_bytes())).into_owned();
    Report {
        payload: Some(RefsDocument { text }),
        status: report.status,
        verdict: report.verdict,
    }
}

/// Runs `plan --base`. SIGINT and SIGTERM end a pull from the remote cache at once, and
/// the command with exit 130 and its document.
pub fn run(ctx: &Context, options: &RefsOptions) -> Report<RefsPayload> {
    let interrupt = crate::base::interrupt::Interrupt::install();
    let report = plan(ctx, options);
    if interrupt.is_set() {
        let notes = report.map_or_else(|all| all, |r| r.status);
        return crate::session::evaluate::interrupted("plan", notes);
    }
    match report {
        Ok(report) => report,
        Err(all) => Report::failed(all, Verdict::Invalid),
    }
}

fn plan(
    ctx: &Context,
    options: &RefsOptions,
) -> Result<Report<RefsPayload>, Vec<crate::base::diagnostic::Diagnostic>> {
    let resolution = ctx.resolve_root().map_err(|d| vec![d])?;
    let workspace = Workspace::load(&resolution.root.path);
    let root = RootOutput::from(&resolution.root);
    let name = workspace
        .change_name(&options.change)
        .map_err(|d| vec![d])?;
    let base_args = RevisionArgs::parse("--base", &options.base);
    let head_args = RevisionArgs::parse("--head", &options.head);
    let (base_args, head_args) = match (base_args, head_args) {
        (Ok(b), Ok(h)) => (b, h),
        (b, h) => {
            return Err([b.err(), h.err()].into_iter().flatten().flatten().collect());
        }
    };
    let base = Revisions::resolve(&workspace, &base_args, "--base")?;
    let (head_revisions, e) = match head_args.is_empty() {
        false => {
            let head = Revisions::resolve(&workspace, &head_args, "--head")?;
            let e = crate::session::change_at_revision::evaluate_at(
                ctx,
                workspace.clone(),
                root,
                resolution.notes,
                &name,
                &head,
                Keys::Check,
            )?;
            (Some(head), e)
        }
        true => {
            let e = crate::session::evaluate::evaluate(ctx, &options.change, None, Keys::Check)?;
            (None, e)
        }
    };
    let changed = changed_paths(&workspace, &base, head_revisions.as_ref(), &e.observed)?;
    let payload = assemble(&workspace, &e, &base, changed, &name);
    let verdict = verdict(&payload.claims);
    let mut diagnostics = e.loaded.notes.clone();
    diagnostics.extend(e.loaded.prepared.warnings.iter().cloned());
    diagnostics.extend(e.observed.warnings.iter().cloned());
    let payload = RefsPayload {
        change: Some(name.to_string()),
        base: Some(side(&base)),
        head: Some(
            head_revisions
                .as_ref()
                .map_or_else(Side::working_tree, side),
        ),
        root: Some(e.loaded.root.clone()),
        ..payload
    };
    e.release();
    Ok(Report {
        payload: Some(payload),
        status: diagnostics,
        verdict,
    })
}

/// A side of the plan as the payload shows it.
fn side(revisions: &Revisions) -> Side {
    Side {
        rev: Some(revisions.rev.clone()),
        working_tree: false,
        repositories: revisions.commits(),
        named: revisions.named.clone(),
    }
}

impl Side {
    fn working_tree() -> Self {
        Side {
            rev: None,
            working_tree: true,
            repositories: BTreeMap::new(),
            named: BTreeMap::new(),
        }
    }
}

/// The exit code: 0 every requirement at the head is passed (or there is none), 1 one
/// failed, 2 one is pending, stale or inconclusive.
fn verdict(claims: &[PlannedClaim]) -> Verdict {
    match status::combine(claims.iter().map(|c| c.status)) {
        _ if claims.is_empty() => Verdict::Success,
        State::Passed => Verdict::Success,
        State::Failed => Verdict::Failed,
        State::Inconclusive | State::Stale | State::Pending => Verdict::Unproven,
    }
}

/// The changed paths of every repository the head observed, from its files at the base
/// to the head's (a revision's, else the working tree's).
fn changed_paths(
    workspace: &Workspace,
    base: &Revisions,
    head: Option<&Revisions>,
    observed: &crate::observe::world::Observed,
) -> Result<Vec<Changed>, Vec<crate::base::diagnostic::Diagnostic>> {
    let heads = head.map(Revisions::by_repository).unwrap_or_default();
    let mut changed = Vec::new();
    for (id, revision) in base.by_repository() {
        let Some(head_snapshot) = observed.snapshots.get(&id) else {
            continue;
        };
        let repo = &workspace.repositories[&id];
        let exclude = observed.excludes.get(&id).cloned().unwrap_or_default();
        let unreadable = |err: crate::observe::repo_at_revision::RevisionError| {
            vec![
                crate::base::diagnostic::Diagnostic::error(
                    crate::base::diagnostic::Code::UnknownRevision,
                    format!(
                        "repository `{id}` cannot be read at `{}`: {err}",
                        revision.rev()
                    ),
                )
                .surface("cli.revision")
                .fix("Check that the repository's objects are intact (`git fsck`)."),
            ]
        };
        let base_snapshot = revision.snapshot(&repo.dir, &exclude).map_err(unreadable)?;
        let head = heads.get(&id).map_or(Head::WorkTree, |r| Head::Revision(r));
        let changes = changes::between(
            id.as_str(),
            &repo.dir,
            (revision, &base_snapshot.files),
            (head, &head_snapshot.files),
        )
        .map_err(unreadable)?;
        changed.extend(changes.changed);
    }
    Ok(changed)
}

/// The workspace as the catalog at the base describes it (its repositories' paths, setup
/// and `hostPaths`; a repository it does not name is not there), for comparing what of the
/// catalog can change a result ([`declared_catalog_fields`](crate::observe::world::declared_catalog_fields)).
fn as_catalog_says(workspace: &Workspace, catalog: Option<Catalog>) -> Workspace {
    let mut out = workspace.clone();
    match &catalog {
        Some(c) if !c.repositories.is_empty() => {
            out.repositories
                .retain(|id, _| c.repositories.contains_key(id));
            for (id, r) in out.repositories.iter_mut() {
                if let Some(declared) = c.repositories.get(id) {
                    r.path.clone_from(&declared.path.value);
                }
            }
        }
        _ => {
            out.repositories.retain(|id, _| *id == RepoId::root());
            for r in out.repositories.values_mut() {
                r.path = ".".to_owned();
            }
        }
    }
    out.catalog = catalog;
    out
}

/// The affected providers and claims, and their statuses at the head.
fn assemble(
    workspace: &Workspace,
    e: &Evaluated,
    base: &Revisions,
    changed: Vec<Changed>,
    name: &ChangeName,
) -> RefsPayload {
    let base_change = base.change(workspace, name);
    // The catalog is this checkout's on both sides (trust is never a revision's), but what
    // of it can change a result is compared with the base's.
    let base_workspace = base
        .catalog(workspace)
        .ok()
        .map(|c| as_catalog_says(workspace, c));
    let why = affected::providers(&affected::Diff {
        workspace,
        base_workspace: base_workspace.as_ref(),
        base: &base_change,
        head: &e.loaded.change,
        graph: &e.loaded.prepared.graph,
        observed: &e.observed,
        changed: &changed,
    });
    let providers: Vec<PlannedProvider> = e
        .loaded
        .prepared
        .graph
        .providers()
        .map(|(id, _, p)| {
            let (status, receipt) =
                affected::provider_status(&e.store, &e.trusted, name, &e.fingerprints, id, p);
            let (affected, reason, origin) = affected::conclude(&why[id]);
            PlannedProvider {
                id: id.to_string(),
                capability: p.capability.to_string(),
                affected,
                reason,
                origin,
                status,
                fingerprint: e.fingerprints.providers.get(id).map(|f| f.0.to_hex()),
                receipt,
            }
        })
        .collect();
    let claims = planned_claims(e, &base_change, name, &providers);
    RefsPayload {
        summary: Some(summary(&changed, &providers, &claims)),
        removed: affected::removed(&base_change, &e.loaded.change),
        changed,
        providers,
        claims,
        ..RefsPayload::default()
    }
}

/// Claims: the requirements `status` gives at the head, each affected or not.
fn planned_claims(
    e: &Evaluated,
    base: &Change,
    name: &ChangeName,
    providers: &[PlannedProvider],
) -> Vec<PlannedClaim> {
    let (base_claims, head_claims) = (
        affected::claims_of(base),
        affected::claims_of(&e.loaded.change),
    );
    let graph = &e.loaded.prepared.graph;
    let requirements = status::requirements(graph, &e.fingerprints, &e.store, &e.trusted, name);
    requirements
        .iter()
        .map(|r| {
            let mut by: Vec<String> = r.evidence.iter().map(|ev| ev.provider.clone()).collect();
            by.sort();
            by.dedup();
            let vouching: Vec<(&str, Option<affected::Origin>)> = by
                .iter()
                .map(|p| {
                    let planned = providers.iter().find(|pp| &pp.id == p && pp.affected);
                    (p.as_str(), planned.and_then(|pp| pp.origin))
                })
                .collect();
            let reasons = affected::claim_reasons(
                base_claims.get(&r.claim).copied(),
                head_claims.get(&r.claim).copied(),
                &vouching,
            );
            let (affected, reason, origin) = affected::conclude(&reasons);
            PlannedClaim {
                id: r.claim.clone(),
                capability: r.capability.clone(),
                affected,
                reason,
                origin,
                status: r.state,
                providers: by,
            }
        })
        .collect()
}

/// The counts.
fn summary(changed: &[Changed], providers: &[PlannedProvider], claims: &[PlannedClaim]) -> Summary {
    let count = |s: State| claims.iter().filter(|c| c.status == s).count();
    Summary {
        changed_repositories: changed
            .iter()
            .map(|c| c.repository.as_str())
            .collect::<BTreeSet<_>>()
            .len(),
        changed_paths: changed.len(),
        affected_providers: providers.iter().filter(|p| p.affected).count(),
        affected_claims: claims.iter().filter(|c| c.affected).count(),
        passed: count(State::Passed),
        failed: count(State::Failed),
        inconclusive: count(State::Inconclusive),
        pending: count(State::Pending),
        stale: count(State::Stale),
    }
}
