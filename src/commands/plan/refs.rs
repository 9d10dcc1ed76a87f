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

use proofgraph_graph::model::compare;
use proofgraph_graph::{ChangeName, EdgeKind, ProviderId, RepoId};
use serde::Serialize;

use crate::decide::status::{self, State};
use crate::load::config::catalog::Catalog;
use crate::load::workspace::{Change, Workspace};
use crate::observe::changes::{self, Head};
use crate::observe::world::{Program, declared_catalog_fields, report_paths, rules};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};
use crate::session::evaluate::{Evaluated, Keys};
use crate::session::revision::{RevisionArgs, Revisions};

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

/// Why something is in the plan: through a relation the files declare (`stored`: the
/// wiring or the claim itself changed) or one derived from the diff (`derived`: a changed
/// input, a dependency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The declaration changed.
    Stored,
    /// Derived from the changed paths.
    Derived,
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

/// What the head no longer has.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Removed {
    /// Providers declared at the base only.
    pub providers: Vec<String>,
    /// Claims declared at the base only.
    pub claims: Vec<String>,
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

/// Names a few paths: `a, b and 3 more`.
fn few(paths: &[String]) -> String {
    match paths.len() {
        0 => String::new(),
        1..=3 => paths.join(", "),
        n => format!("{} and {} more", paths[..3].join(", "), n - 3),
    }
}

/// What a list of reasons makes of a provider or claim: whether it is affected, the reasons
/// in one sentence, and its origin (`stored` when any reason is).
fn conclude(reasons: &[(Origin, String)]) -> (bool, Option<String>, Option<Origin>) {
    if reasons.is_empty() {
        return (false, None, None);
    }
    let text = reasons
        .iter()
        .map(|(_, r)| r.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let origin = if reasons.iter().any(|(o, _)| *o == Origin::Stored) {
        Origin::Stored
    } else {
        Origin::Derived
    };
    (true, Some(text), Some(origin))
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
            let e = crate::session::revision::evaluate_at(
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
    let base_change = base.change(&workspace, &name);
    let changed = changed_paths(&workspace, &base, head_revisions.as_ref(), &e.observed)?;
    // The catalog is this checkout's on both sides (trust is never a revision's), but what
    // of it can change a result is compared with the base's.
    let base_catalog = base
        .catalog(&workspace)
        .ok()
        .map(|c| as_catalog_says(&workspace, c));
    let payload = assemble(
        &workspace,
        &e,
        &Base {
            change: &base_change,
            workspace: base_catalog.as_ref(),
        },
        changed,
        &name,
    );
    let verdict = match status::combine(payload.claims.iter().map(|c| c.status)) {
        _ if payload.claims.is_empty() => Verdict::Success,
        State::Passed => Verdict::Success,
        State::Failed => Verdict::Failed,
        State::Inconclusive | State::Stale | State::Pending => Verdict::Unproven,
    };
    let mut diagnostics = e.loaded.notes.clone();
    diagnostics.extend(e.loaded.prepared.warnings.iter().cloned());
    diagnostics.extend(e.observed.warnings.iter().cloned());
    let payload = RefsPayload {
        change: Some(name.to_string()),
        base: Some(Side {
            rev: Some(base.rev.clone()),
            working_tree: false,
            repositories: base.commits(),
            named: base.named.clone(),
        }),
        head: Some(match &head_revisions {
            Some(h) => Side {
                rev: Some(h.rev.clone()),
                working_tree: false,
                repositories: h.commits(),
                named: h.named.clone(),
            },
            None => Side {
                rev: None,
                working_tree: true,
                repositories: BTreeMap::new(),
                named: BTreeMap::new(),
            },
        }),
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
        let unreadable = |err: crate::observe::revision::RevisionError| {
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
/// catalog can change a result ([`declared_catalog_fields`]).
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

/// The base side: its change, and the workspace as its catalog describes it (`None` when the
/// catalog there cannot be read: nothing is said of the catalog then).
struct Base<'a> {
    change: &'a Change,
    workspace: Option<&'a Workspace>,
}

/// The affected providers and claims, and their statuses at the head.
fn assemble(
    workspace: &Workspace,
    e: &Evaluated,
    base_side: &Base<'_>,
    changed: Vec<Changed>,
    name: &ChangeName,
) -> RefsPayload {
    let base = base_side.change;
    let graph = &e.loaded.prepared.graph;
    let head = &e.loaded.change;
    let reports = report_paths(graph);
    // Why each provider is affected: (origin, reason), in the order found.
    let mut why: BTreeMap<ProviderId, Vec<(Origin, String)>> = BTreeMap::new();
    let changed_services: BTreeMap<String, Vec<&'static str>> = head
        .services
        .iter()
        .filter_map(|(id, s)| {
            let fields = match base.services.get(id) {
                Some(b) => compare::service_fields(b, s),
                None => vec!["added"],
            };
            (!fields.is_empty()).then(|| (id.to_string(), fields))
        })
        .collect();
    for (id, _, p) in graph.providers() {
        let reasons = why.entry(id.clone()).or_default();
        match base.providers.get(id) {
            None => reasons.push((Origin::Stored, "added to the change's wiring".to_owned())),
            Some(b) => {
                let fields = compare::provider_fields(&b.provider, &p.spec);
                if !fields.is_empty() {
                    reasons.push((
                        Origin::Stored,
                        format!("wiring changed: {}", fields.join(", ")),
                    ));
                }
            }
        }
        for s in p.spec.services.iter().flatten() {
            if let Some(fields) = changed_services.get(s.value.as_str()) {
                reasons.push((
                    Origin::Stored,
                    format!("service `{}` changed: {}", s.value, fields.join(", ")),
                ));
            }
        }
        // What of the catalog its fingerprint binds, at the base and here.
        if let (Some(base_ws), Some(sees)) = (base_side.workspace, e.observed.sees.get(id)) {
            let (was, now) = (
                declared_catalog_fields(base_ws, sees),
                declared_catalog_fields(workspace, sees),
            );
            let fields: Vec<String> = was
                .keys()
                .chain(now.keys())
                .filter(|k| was.get(*k) != now.get(*k))
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if !fields.is_empty() {
                reasons.push((Origin::Stored, format!("catalog changed: {}", few(&fields))));
            }
        }
        if let Ok(rules) = rules(workspace, head, p) {
            let hit: Vec<String> = changed
                .iter()
                .filter(|c| {
                    let Ok(repo) = RepoId::parse(&c.repository) else {
                        return false;
                    };
                    // By its rules, or bound another way: a link's target among its files.
                    let bound = e.observed.files.get(id);
                    let selects = |path: &str| {
                        let scoped = format!("{repo}:{path}");
                        !reports.contains(&scoped)
                            && (rules.selects(&repo, path)
                                || bound.is_some_and(|f| f.iter().any(|(p, _)| *p == scoped)))
                    };
                    selects(&c.path) || c.from.as_deref().is_some_and(selects)
                })
                .map(|c| format!("{}:{}", c.repository, c.path))
                .collect();
            if !hit.is_empty() {
                reasons.push((Origin::Derived, format!("inputs changed: {}", few(&hit))));
            }
        }
        // A program of the repository is part of the fingerprint whether or not it is
        // among the inputs.
        if let (Some(Some(Program::InRepository(relative))), Some(repo)) =
            (e.observed.programs.get(id), p.runs_in.as_ref())
        {
            let path = relative.to_string_lossy();
            if changed.iter().any(|c| {
                c.repository == repo.as_str()
                    && (c.path == path || c.from.as_deref() == Some(&*path))
            }) {
                reasons.push((Origin::Derived, format!("program changed: {repo}:{path}")));
            }
        }
    }
    // Dependents, in the graph's order (dependencies first): `dependsOn`, and a receiver
    // whose receipt its producer's run writes.
    for node in graph.order() {
        let Some(p) = graph.node(*node).provider() else {
            continue;
        };
        let mut upstream: Vec<String> = graph
            .incoming(*node)
            .into_iter()
            .filter(|(_, kind)| matches!(kind, EdgeKind::DependsOn | EdgeKind::Discovery))
            .filter_map(|(from, _)| graph.node(from).provider())
            .map(|d| d.spec.id.value.clone())
            .filter(|d| why.get(d).is_some_and(|r| !r.is_empty()))
            .map(|d| d.to_string())
            .collect();
        upstream.sort();
        upstream.dedup();
        if !upstream.is_empty() {
            let line = format!("depends on affected {}", few(&upstream));
            why.entry(p.spec.id.value.clone())
                .or_default()
                .push((Origin::Derived, line));
        }
    }
    let mut providers = Vec::new();
    for (id, _, p) in graph.providers() {
        let mut states = Vec::new();
        let mut receipt = None;
        for o in &p.outputs {
            let Some(fp) = e.fingerprints.of_receipt(id, &o.under) else {
                continue;
            };
            let l = status::lookup(&e.store, &e.trusted, name, fp, &o.under, &o.capability);
            states.push(l.state);
            if receipt.is_none() {
                receipt = l
                    .verified
                    .as_ref()
                    .map(|v| v.sha256.to_hex())
                    .or_else(|| l.other.map(|s| s.to_hex()));
            }
        }
        let state = status::combine(states);
        let reasons = why.get(id).cloned().unwrap_or_default();
        let (affected, reason, origin) = conclude(&reasons);
        providers.push(PlannedProvider {
            id: id.to_string(),
            capability: p.capability.to_string(),
            affected,
            reason,
            origin,
            status: state,
            fingerprint: e.fingerprints.providers.get(id).map(|f| f.0.to_hex()),
            receipt,
        });
    }
    // Claims: the requirements `status` gives at the head.
    let base_claims: BTreeMap<String, &proofgraph_graph::model::Claim> = base
        .evidence
        .iter()
        .flat_map(|ev| ev.claims.iter())
        .map(|c| (c.id.value.to_string(), c))
        .collect();
    let head_claims: BTreeMap<String, &proofgraph_graph::model::Claim> = head
        .evidence
        .iter()
        .flat_map(|ev| ev.claims.iter())
        .map(|c| (c.id.value.to_string(), c))
        .collect();
    let requirements = status::requirements(graph, &e.fingerprints, &e.store, &e.trusted, name);
    let mut claims = Vec::new();
    for r in &requirements {
        let mut reasons: Vec<(Origin, String)> = Vec::new();
        match (base_claims.get(&r.claim), head_claims.get(&r.claim)) {
            (None, Some(_)) => reasons.push((Origin::Stored, "claim added".to_owned())),
            (Some(b), Some(h)) => {
                let fields = compare::claim_fields(b, h);
                if !fields.is_empty() {
                    reasons.push((
                        Origin::Stored,
                        format!("claim changed: {}", fields.join(", ")),
                    ));
                }
            }
            _ => {}
        }
        let mut by: Vec<String> = r.evidence.iter().map(|ev| ev.provider.clone()).collect();
        by.sort();
        by.dedup();
        let affected_by: Vec<&String> = by
            .iter()
            .filter(|p| providers.iter().any(|pp| &pp.id == *p && pp.affected))
            .collect();
        if !affected_by.is_empty() {
            let origin = if affected_by.iter().any(|p| {
                providers
                    .iter()
                    .any(|pp| &pp.id == *p && pp.origin == Some(Origin::Stored))
            }) {
                Origin::Stored
            } else {
                Origin::Derived
            };
            let names: Vec<String> = affected_by.iter().map(|s| (*s).clone()).collect();
            reasons.push((origin, format!("provider {} affected", few(&names))));
        }
        let (affected, reason, origin) = conclude(&reasons);
        claims.push(PlannedClaim {
            id: r.claim.clone(),
            capability: r.capability.clone(),
            affected,
            reason,
            origin,
            status: r.state,
            providers: by,
        });
    }
    let head_providers: BTreeSet<&ProviderId> = head.providers.keys().collect();
    let removed = Removed {
        providers: base
            .providers
            .keys()
            .filter(|p| !head_providers.contains(p))
            .map(ToString::to_string)
            .collect(),
        claims: base_claims
            .keys()
            .filter(|c| !head_claims.contains_key(*c))
            .cloned()
            .collect(),
    };
    let count = |s: State| claims.iter().filter(|c| c.status == s).count();
    let summary = Summary {
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
    };
    RefsPayload {
        summary: Some(summary),
        changed,
        providers,
        claims,
        removed,
        ..RefsPayload::default()
    }
}
