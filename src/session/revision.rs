//! A change as it is at a revision (`plan --base/--head`): its files read from git's
//! objects in the repository that holds the OpenSpec root, its repositories' files from
//! theirs — nothing checked out. The workspace's catalog (`proofgraph.yaml`: repositories,
//! setup, trusted keys) is this checkout's: which keys are trusted is never taken from a
//! revision under review.

use std::collections::BTreeMap;

use proofgraph_graph::{ChangeName, RepoId};
use proofgraph_sandbox::SandboxMode;

use super::context::{Context, RootOutput};
use super::evaluate::{Evaluated, Keys, complete};
use super::load::Loaded;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::config::load::parse_bytes;
use crate::load::workspace::{Change, Workspace};
use crate::observe::revision::Revision;

/// One revision resolved in every git repository the workspace spans.
#[derive(Debug)]
pub struct Revisions {
    /// The revision as given.
    pub rev: String,
    /// Each git repository's resolution, one per work tree.
    resolved: Vec<Revision>,
    /// Which one each repository of the workspace reads.
    of_repo: BTreeMap<RepoId, usize>,
    /// The one the OpenSpec root (and so the change's files) lies in.
    root: usize,
}

impl Revisions {
    /// Resolves `rev` in the git repository of the OpenSpec root and of every repository
    /// of `workspace`; every repository that does not have it is one diagnostic.
    pub fn resolve(workspace: &Workspace, rev: &str) -> Result<Self, Vec<Diagnostic>> {
        let mut resolved: Vec<Revision> = Vec::new();
        // One diagnostic per git repository that lacks it, naming who reads from there.
        let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut index_of = |dir: &std::path::Path, what: String| -> Option<usize> {
            match Revision::resolve(dir, rev) {
                Ok(r) => Some(
                    match resolved.iter().position(|k| k.workdir() == r.workdir()) {
                        Some(i) => i,
                        None => {
                            resolved.push(r);
                            resolved.len() - 1
                        }
                    },
                ),
                Err(err) => {
                    failed.entry(err.to_string()).or_default().push(what);
                    None
                }
            }
        };
        let root = index_of(&workspace.root, "the OpenSpec root".to_owned());
        let mut of_repo = BTreeMap::new();
        for (id, repo) in &workspace.repositories {
            if let Some(i) = index_of(&repo.dir, format!("repository `{id}`")) {
                of_repo.insert(id.clone(), i);
            }
        }
        match root {
            Some(root) if failed.is_empty() => Ok(Self {
                rev: rev.to_owned(),
                resolved,
                of_repo,
                root,
            }),
            _ => Err(failed
                .into_iter()
                .map(|(err, who)| {
                    Diagnostic::error(
                        Code::UnknownRevision,
                        format!("{err} (read by {})", who.join(", ")),
                    )
                    .surface("cli.revision")
                    .fix(format!(
                        "Fetch it (`git fetch origin {rev}`), or name a revision every repository of the workspace has."
                    ))
                })
                .collect()),
        }
    }

    /// The revision repository `repo` reads.
    fn of(&self, repo: &RepoId) -> Option<&Revision> {
        self.of_repo.get(repo).map(|i| &self.resolved[*i])
    }

    /// Each repository's revision.
    pub fn by_repository(&self) -> BTreeMap<RepoId, &Revision> {
        self.of_repo
            .iter()
            .map(|(id, i)| (id.clone(), &self.resolved[*i]))
            .collect()
    }

    /// The commit each repository's revision names (`None`: a tree), by repository.
    pub fn commits(&self) -> BTreeMap<String, String> {
        self.of_repo
            .iter()
            .map(|(id, i)| {
                let r = &self.resolved[*i];
                let id_hex = r.commit.unwrap_or_else(|| r.tree_id()).to_hex().to_string();
                (id.to_string(), id_hex)
            })
            .collect()
    }

    /// The change's files at this revision (absent files give an empty change).
    pub fn change(&self, workspace: &Workspace, name: &ChangeName) -> Change {
        let revision = &self.resolved[self.root];
        let prefix = format!("{}:", self.rev);
        workspace.load_change_from(
            name,
            &|file: &str, shown: &str| {
                let path = format!("openspec/changes/{name}/{file}");
                match revision.read(&workspace.root, &path) {
                    Ok(Some((bytes, _))) => Some(parse_bytes(&bytes, shown)),
                    Ok(None) => None,
                    Err(err) => Some(Err(Diagnostic::error(
                        Code::UnknownRevision,
                        format!("{shown} cannot be read: {err}"),
                    )
                    .surface("cli.revision")
                    .fix("Check that the repository's objects are intact (`git fsck`)."))),
                }
            },
            &prefix,
        )
    }
}

/// A path escapes its repository through a link at the revision, as in a checkout of it.
impl crate::load::preflight::Links for Revisions {
    fn escape(
        &self,
        repo: &RepoId,
        dir: &std::path::Path,
        path: &str,
    ) -> Option<std::path::PathBuf> {
        self.of(repo)?.escape(dir, path)
    }
}

/// Loads, seals, observes and fingerprints a change as it is at `revisions` (its files and
/// its repositories' files), then opens the store and the remote as [`super::evaluate`]
/// does. Its fingerprints are those a checkout of the revision gives.
pub fn evaluate_at(
    ctx: &Context,
    workspace: Workspace,
    root: RootOutput,
    notes: Vec<Diagnostic>,
    name: &ChangeName,
    revisions: &Revisions,
    keys: Keys,
) -> Result<Evaluated, Vec<Diagnostic>> {
    let change = revisions.change(&workspace, name);
    if !change.has_evidence && !change.has_execution {
        return Err(vec![
            Diagnostic::error(
                Code::UnknownChange,
                format!(
                    "no change named `{name}` under openspec/changes/ at `{}`",
                    revisions.rev
                ),
            )
            .surface("change")
            .fix("Name the change as it is at the head revision, or a head that has it."),
        ]);
    }
    let (secrets, secret_warnings) = crate::load::secrets::of_change(&change, ctx.env());
    ctx.remember_secrets(&secrets);
    let prepared = crate::load::preflight::prepare_with(&workspace, &change, revisions)?;
    let loaded = Loaded {
        workspace,
        change,
        prepared,
        root,
        notes,
        secrets,
        secret_warnings,
    };
    let mode = super::evaluate::sandbox_mode(&loaded, None::<SandboxMode>);
    let observed = crate::observe::world::observe_at(
        &loaded.workspace,
        &loaded.change,
        &loaded.prepared.graph,
        ctx.path_var(),
        &revisions.by_repository(),
    )?;
    complete(ctx, loaded, mode, observed, keys)
}
