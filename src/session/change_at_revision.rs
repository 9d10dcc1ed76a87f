//! A change as it is at a revision (`plan --base/--head`): its files read from git's
//! objects in the repository that holds the OpenSpec root, its repositories' files from
//! theirs — nothing checked out. The workspace's catalog (`proofgraph.yaml`: repositories,
//! setup, trusted keys) is this checkout's: which keys are trusted is never taken from a
//! revision under review.

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::{ChangeName, RepoId};
use proofgraph_sandbox::SandboxMode;

use super::context::{Context, RootOutput};
use super::evaluate::{Evaluated, Keys, complete};
use super::load::Loaded;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::config::catalog::{self, Catalog};
use crate::load::config::decode::Sink;
use crate::load::config::load::parse_bytes;
use crate::load::workspace::{Change, Workspace};
use crate::observe::repo_at_revision::{Revision, RevisionError};

/// The revisions one side of `plan` names (`--base`, `--head`, each repeatable): at most
/// one plain revision, and `name=REV` for a repository. Parsed from the words alone; which
/// repositories there are is checked when they are resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevisionArgs {
    /// The plain revision: the OpenSpec root's repository's, which each repository follows
    /// (the same git repository reads it; a submodule, the commit it records).
    pub plain: Option<String>,
    /// A repository's own revision, by its name as written.
    pub named: BTreeMap<String, String>,
}

impl RevisionArgs {
    /// Reads the values of `flag` (`--base`): `name=REV` when the words before the first
    /// `=` are a repository name's grammar, else a plain revision. Two plain revisions, or
    /// one repository named twice, are usage errors.
    pub fn parse(flag: &str, values: &[String]) -> Result<Self, Vec<Diagnostic>> {
        let mut out = Self::default();
        let mut errors = Vec::new();
        for value in values {
            match value.split_once('=') {
                Some((name, rev)) if RepoId::parse(name).is_ok() => {
                    if rev.is_empty() {
                        errors.push(usage(
                            format!("`{flag} {value}` names no revision for repository `{name}`"),
                            format!("Write `{flag} {name}=<rev>`."),
                        ));
                    } else if let Some(first) = out.named.insert(name.to_owned(), rev.to_owned()) {
                        errors.push(usage(
                            format!("`{flag}` names two revisions for repository `{name}` (`{first}` and `{rev}`)"),
                            format!("Give `{flag} {name}=<rev>` once."),
                        ));
                    }
                }
                _ => {
                    if let Some(first) = out.plain.replace(value.clone()) {
                        errors.push(usage(
                            format!("`{flag}` names two plain revisions (`{first}` and `{value}`)"),
                            format!(
                                "Give one plain `{flag} <rev>` (the OpenSpec root's repository's); a repository's own is `{flag} <name>=<rev>`."
                            ),
                        ));
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// Whether any revision was given (else the side is the working tree).
    pub fn is_empty(&self) -> bool {
        self.plain.is_none() && self.named.is_empty()
    }
}

fn usage(message: String, fix: String) -> Diagnostic {
    Diagnostic::error(Code::UsageError, message)
        .surface("cli.revision")
        .fix(fix)
}

/// The fix for a revision a repository does not have: what is true of that repository. A
/// remote's branch is fetched from that remote; in a shallow clone the revision may lie
/// beyond its history (deepen it); otherwise it does not exist there. Never `git fetch
/// origin <rev>` for a revision such as `HEAD~1`, which names nothing on a remote.
fn unknown_fix(err: &RevisionError) -> String {
    let RevisionError::Unknown {
        rev,
        workdir,
        shallow,
        remotes,
        ..
    } = err
    else {
        return "Check that the repository's objects are intact (`git fsck`).".to_owned();
    };
    let dir = workdir.display();
    let remote = rev
        .split_once('/')
        .map(|(remote, _)| remote)
        .filter(|remote| remotes.iter().any(|r| r == remote));
    match (remote, shallow) {
        (Some(remote), _) => {
            format!(
                "Fetch it (`git -C {dir} fetch {remote}`), or name a revision that repository has."
            )
        }
        (None, true) => format!(
            "The clone at {dir} is shallow, so `{rev}` may lie beyond the history it has: deepen it (`git -C {dir} fetch --deepen={}`) or fetch all of it (`git -C {dir} fetch --unshallow`).",
            ancestry_steps(rev).max(1)
        ),
        (None, false) => format!(
            "`{rev}` does not exist in that repository: name a branch, tag or commit it has (`git -C {dir} log --oneline --all`)."
        ),
    }
}

/// How many commits back a revision reaches past its base name (`HEAD~3` is 3, `main^^`
/// 2): how far a shallow history must be deepened, at least, for it.
fn ancestry_steps(rev: &str) -> usize {
    let mut steps = 0;
    let mut chars = rev.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '~' | '^' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                let n = digits.parse::<usize>().unwrap_or(1);
                // `x^2` is the second parent, one step back; `x~2` two.
                steps += if c == '~' { n } else { 1 };
            }
            _ => {}
        }
    }
    steps
}

/// The revisions resolved so far, one per git repository and revision, and those that
/// could not be: one diagnostic per error and fix, naming who reads from there.
#[derive(Default)]
struct Found {
    resolved: Vec<Revision>,
    failed: BTreeMap<(String, String), Vec<String>>,
}

impl Found {
    fn index_of(
        &mut self,
        dir: &std::path::Path,
        rev: &str,
        who: String,
        fix: &dyn Fn(&RevisionError) -> String,
    ) -> Option<usize> {
        match Revision::resolve(dir, rev) {
            Ok(r) => Some(
                match self
                    .resolved
                    .iter()
                    .position(|k| k.workdir() == r.workdir() && k.rev() == r.rev())
                {
                    Some(i) => i,
                    None => {
                        self.resolved.push(r);
                        self.resolved.len() - 1
                    }
                },
            ),
            Err(err) => {
                let fix = fix(&err);
                self.failed
                    .entry((err.to_string(), fix))
                    .or_default()
                    .push(who);
                None
            }
        }
    }
}

/// One side of the plan resolved in every git repository the workspace spans.
#[derive(Debug)]
pub struct Revisions {
    /// The OpenSpec root's repository's revision, as given (or taken from a repository's
    /// `name=REV` in that git repository).
    pub rev: String,
    /// The `name=REV` revisions given.
    pub named: BTreeMap<String, String>,
    /// The resolutions, one per git repository and revision.
    resolved: Vec<Revision>,
    /// Which one each repository of the workspace reads.
    of_repo: BTreeMap<RepoId, usize>,
    /// The one the OpenSpec root (and so the change's files) lies in.
    root: usize,
}

impl Revisions {
    /// Resolves one side (`flag`: `--base` or `--head`) in every git repository of
    /// `workspace` (docs/workspaces.md). A named repository reads its own revision; any
    /// other reads its git repository's: the OpenSpec root's reads the plain revision
    /// (else the one the repositories named in it share), another git repository the one
    /// the repositories named in it share, else the commit the innermost enclosing one's
    /// revision records for it (a submodule's gitlink). One that none of these reaches (a
    /// nested clone the parent ignores, a sibling checkout) must be named: `--base
    /// api=REV`. A plain revision is never resolved in each repository separately
    /// (`HEAD~1` of another repository is another history). Every problem is one
    /// diagnostic.
    pub fn resolve(
        workspace: &Workspace,
        args: &RevisionArgs,
        flag: &str,
    ) -> Result<Self, Vec<Diagnostic>> {
        let mut errors: Vec<Diagnostic> = Vec::new();
        let mut named: BTreeMap<&RepoId, &str> = BTreeMap::new();
        for (name, rev) in &args.named {
            match workspace.repositories.keys().find(|k| k.as_str() == name) {
                Some(id) => {
                    named.insert(id, rev.as_str());
                }
                None => errors.push(
                    Diagnostic::error(
                        Code::UnknownRepository,
                        format!(
                            "`{flag} {name}={rev}` names a repository the workspace does not have"
                        ),
                    )
                    .surface("cli.revision")
                    .fix(format!(
                        "Name one of proofgraph.yaml's repositories: {}.",
                        workspace
                            .repositories
                            .keys()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                ),
            }
        }
        // Each repository's git work tree.
        let not_a_repo = |err: RevisionError| {
            Diagnostic::error(Code::UnknownRevision, err.to_string())
                .surface("cli.revision")
                .fix("Make it a git repository (`git init`), or fix its `path` in proofgraph.yaml.")
        };
        let root_tree = match Revision::work_tree(&workspace.root) {
            Ok(t) => t,
            Err(err) => return Err(vec![not_a_repo(err)]),
        };
        let mut trees: BTreeMap<&RepoId, std::path::PathBuf> = BTreeMap::new();
        for (id, repo) in &workspace.repositories {
            match Revision::work_tree(&repo.dir) {
                Ok(t) => {
                    trees.insert(id, t);
                }
                Err(err) => errors.push(not_a_repo(err)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // The root's revision: the plain one, else the one its repositories are named at.
        let in_root: BTreeSet<&str> = named
            .iter()
            .filter(|(id, _)| trees[*id] == root_tree)
            .map(|(_, rev)| *rev)
            .collect();
        let root_rev = match (&args.plain, in_root.len()) {
            (Some(plain), _) => plain.clone(),
            (None, 1) => in_root
                .iter()
                .next()
                .map(|r| (*r).to_owned())
                .unwrap_or_default(),
            (None, 2..) => {
                return Err(vec![usage(
                    format!(
                        "`{flag}` names repositories of the OpenSpec root's git repository ({}) at different revisions ({}), and gives it none of its own",
                        root_tree.display(),
                        in_root
                            .iter()
                            .map(|r| format!("`{r}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    format!("Give the OpenSpec root's repository its revision: `{flag} <rev>`."),
                )]);
            }
            (None, 0) => {
                return Err(vec![
                    Diagnostic::error(
                        Code::RevisionMissing,
                        format!(
                            "`{flag}` gives no revision of the OpenSpec root's git repository ({}), where the change's files are",
                            root_tree.display()
                        ),
                    )
                    .surface("cli.revision")
                    .fix(format!(
                        "Give it one: `{flag} <rev>` (each repository in it, and each submodule, follows)."
                    )),
                ]);
            }
        };
        let mut found = Found::default();
        let plain_fix = |err: &RevisionError| unknown_fix(err);
        let root = found.index_of(
            &workspace.root,
            &root_rev,
            "the OpenSpec root".to_owned(),
            &plain_fix,
        );
        let mut of_repo: BTreeMap<RepoId, usize> = BTreeMap::new();
        // The revision each git work tree reads for its repositories that are not named:
        // the root's; for another, outermost first, the one its named repositories share,
        // else the commit the innermost enclosing one's revision records for it.
        let mut follows: BTreeMap<std::path::PathBuf, Option<usize>> = BTreeMap::new();
        follows.insert(root_tree.clone(), root);
        let mut by_depth: Vec<&std::path::PathBuf> = trees
            .values()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        by_depth.sort_by_key(|t| t.components().count());
        let mut unrecorded: BTreeMap<&std::path::PathBuf, Vec<&RepoId>> = BTreeMap::new();
        for tree in by_depth {
            if follows.contains_key(tree) {
                continue;
            }
            let in_tree = |id: &RepoId| trees.get(id) == Some(tree);
            let unnamed: Vec<&RepoId> = trees
                .keys()
                .copied()
                .filter(|id| in_tree(id) && !named.contains_key(id))
                .collect();
            let shared: BTreeSet<&str> = named
                .iter()
                .filter(|(id, _)| in_tree(id))
                .map(|(_, rev)| *rev)
                .collect();
            let who = |ids: &[&RepoId]| {
                ids.iter()
                    .map(|id| format!("repository `{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if let (1, Some(rev)) = (shared.len(), shared.first()) {
                let ids: Vec<&RepoId> = named.keys().copied().filter(|id| in_tree(id)).collect();
                let i = found.index_of(tree, rev, who(&ids), &plain_fix);
                follows.insert(tree.clone(), i);
                continue;
            }
            // The innermost enclosing work tree that has a revision.
            let enclosing = follows
                .iter()
                .filter(|(outer, _)| tree.starts_with(outer) && *outer != tree)
                .max_by_key(|(outer, _)| outer.components().count())
                .and_then(|(_, i)| *i);
            let recorded = enclosing.and_then(|i| {
                found.resolved[i]
                    .gitlink(tree)
                    .ok()
                    .flatten()
                    .map(|c| (i, c))
            });
            let followed = match recorded {
                Some((outer, commit)) if !unnamed.is_empty() => {
                    let at = format!(
                        "`{}` of {}",
                        found.resolved[outer].rev(),
                        found.resolved[outer].workdir().display()
                    );
                    let fix = |_: &RevisionError| {
                        format!(
                            "The submodule does not have the commit {at} records for it: fetch it (`git -C {} fetch`, or `git submodule update --init` in the parent), or give its revision (`{flag} <name>=<rev>`).",
                            tree.display()
                        )
                    };
                    found.index_of(tree, &commit.to_hex().to_string(), who(&unnamed), &fix)
                }
                _ => {
                    // Nothing records it (an enclosing one that failed is said already).
                    if !unnamed.is_empty() && (enclosing.is_some() || !tree.starts_with(&root_tree))
                    {
                        unrecorded.insert(tree, unnamed);
                    }
                    None
                }
            };
            follows.insert(tree.clone(), followed);
        }
        for (id, repo) in &workspace.repositories {
            let i = match named.get(id) {
                Some(rev) => {
                    found.index_of(&repo.dir, rev, format!("repository `{id}`"), &plain_fix)
                }
                None => follows.get(&trees[id]).copied().flatten(),
            };
            if let Some(i) = i {
                of_repo.insert(id.clone(), i);
            }
        }
        for (tree, ids) in unrecorded {
            let names: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
            errors.push(
                Diagnostic::error(
                    Code::RevisionMissing,
                    format!(
                        "{} {} {} a git repository of {} own ({}) that `{root_rev}` of the OpenSpec root's repository does not record (no submodule there), so `{flag} {root_rev}` does not say which of its commits to read",
                        if ids.len() == 1 { "repository" } else { "repositories" },
                        names.join(", "),
                        if ids.len() == 1 { "is" } else { "are in" },
                        if ids.len() == 1 { "its" } else { "their" },
                        tree.display()
                    ),
                )
                .surface("cli.revision")
                .fix(format!(
                    "Give {} its revision: {}.",
                    if ids.len() == 1 { "it" } else { "each" },
                    ids.iter()
                        .map(|id| format!("`{flag} {id}=<rev>`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            );
        }
        for ((err, fix), who) in found.failed {
            errors.push(
                Diagnostic::error(
                    Code::UnknownRevision,
                    format!("{err} (read by {})", who.join(", ")),
                )
                .surface("cli.revision")
                .fix(fix),
            );
        }
        match root {
            Some(root) if errors.is_empty() => Ok(Self {
                rev: root_rev,
                named: args.named.clone(),
                resolved: found.resolved,
                of_repo,
                root,
            }),
            _ => Err(errors),
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

    /// The workspace catalog as it is at this revision, in the OpenSpec root's repository
    /// (`None` when it has none), or why it cannot be read or decoded there. Only for what of
    /// it can change a result (`plan --base` compares it with this checkout's): which keys are
    /// trusted is never taken from a revision.
    pub fn catalog(&self, workspace: &Workspace) -> Result<Option<Catalog>, String> {
        let revision = &self.resolved[self.root];
        let Some((bytes, _)) = revision
            .read(&workspace.root, catalog::FILE_NAME)
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let doc = parse_bytes(&bytes, catalog::FILE_NAME).map_err(|d| d.message.clone())?;
        let mut sink = Sink::new(catalog::FILE_NAME);
        let decoded = catalog::decode(&mut sink, &doc.root);
        match decoded {
            Some(decoded) if !sink.has_errors() => Ok(Some(decoded)),
            _ => Err("it does not decode".to_owned()),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn a_side_is_one_plain_revision_and_a_revision_per_repository() {
        let args = RevisionArgs::parse("--base", &strings(&["web=HEAD~1", "HEAD@{1}"]));
        assert_eq!(
            args.expect("valid"),
            RevisionArgs {
                plain: Some("HEAD@{1}".to_owned()),
                named: BTreeMap::from([("web".to_owned(), "HEAD~1".to_owned())]),
            }
        );
        let args =
            RevisionArgs::parse("--base", &strings(&["origin/main", "api=v1.2"])).expect("valid");
        assert_eq!(args.plain.as_deref(), Some("origin/main"));
        assert_eq!(args.named["api"], "v1.2");
        assert!(!args.is_empty());
        assert!(RevisionArgs::parse("--head", &[]).expect("none").is_empty());
        // What is not a repository's name before `=` is a revision (`:/fix=1` searches
        // commit messages); `api==x` names `=x`.
        let args = RevisionArgs::parse("--base", &strings(&[":/fix=1", "api==x"])).expect("valid");
        assert_eq!(args.plain.as_deref(), Some(":/fix=1"));
        assert_eq!(args.named["api"], "=x");
        for bad in [
            &["main", "HEAD"][..],
            &["api=a", "api=b"][..],
            &["api="][..],
        ] {
            let errors = RevisionArgs::parse("--base", &strings(bad)).expect_err("refused");
            assert_eq!(errors.len(), 1, "{bad:?}: {errors:?}");
            assert_eq!(errors[0].code, Code::UsageError, "{bad:?}");
        }
    }

    #[test]
    fn ancestry_steps_count_how_far_back_a_revision_reaches() {
        for (rev, steps) in [
            ("HEAD", 0),
            ("HEAD~1", 1),
            ("HEAD~", 1),
            ("HEAD~3", 3),
            ("main^^", 2),
            ("HEAD^2", 1),
            ("v1.2~2^", 3),
        ] {
            assert_eq!(ancestry_steps(rev), steps, "{rev}");
        }
    }
}
