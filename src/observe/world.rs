//! Observing the world a graph runs in: each repository's tracked files, the
//! files each provider reads, the programs their commands start, and the
//! platform. The graph crate reads no files; this is where its `World` comes
//! from.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use proofgraph_graph::fingerprint::{Digest, Inputs, Platform, World, inputs_digest};
use proofgraph_graph::preflight::split_scoped;
use proofgraph_graph::{Adapter, ProviderId, RepoId, SealedGraph, ServiceId};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::workspace::{Change, Workspace};
use crate::observe::inputs::{self, Pattern, Snapshot};
use crate::observe::programs::{Lookup, Programs, RepoFiles, WorkingTree, job_path};
use crate::observe::repo_at_revision::Revision;
use proofgraph_graph::pattern::{self, Sign};

pub use crate::observe::programs::Program;

/// The files one provider reads: `repo:path` and content identity.
pub type FileList = Vec<(String, Digest)>;

/// What was observed.
#[derive(Debug)]
pub struct Observed {
    /// The world, ready for fingerprinting.
    pub world: World,
    /// Each repository's snapshot.
    pub snapshots: BTreeMap<RepoId, Snapshot>,
    /// Each provider's input files.
    pub files: BTreeMap<ProviderId, FileList>,
    /// How many of each provider's input files git does not track (nor ignore).
    pub untracked: BTreeMap<ProviderId, usize>,
    /// Each provider's program, as its job will execute it (`None`: not found).
    pub programs: BTreeMap<ProviderId, Option<Program>>,
    /// Each service's program, likewise.
    pub service_programs: BTreeMap<ServiceId, Option<Program>>,
    /// What each repository's snapshot left out (change packets, the catalog), to take it
    /// again.
    pub excludes: BTreeMap<RepoId, Vec<String>>,
    /// The repositories each provider's job sees, for the part of the catalog it binds
    /// (providers that run a command).
    pub sees: BTreeMap<ProviderId, Sees>,
    /// Findings that do not stop planning (a program not found on PATH).
    pub warnings: Vec<Diagnostic>,
}

/// The repositories a provider's job sees: the one it runs in, those it binds files of and
/// those its services run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sees {
    /// The repository it runs in.
    pub runs_in: Option<RepoId>,
    /// Every repository its world holds (`runs_in` among them).
    pub repositories: BTreeSet<RepoId>,
}

/// What of the catalog `workspace` declares that can change the result of a job that sees
/// `sees`: its part as the fingerprint binds it (the `setup` of the repository it runs in,
/// as `setup`, and its `catalog` fields by their names) but without what was observed (a
/// setup's key, the tree an uncached setup saw). Two catalogs that give the same map for a
/// provider are the same to it: `plan --base` compares the catalog at the base with this
/// checkout's so.
pub fn declared_catalog_fields(workspace: &Workspace, sees: &Sees) -> BTreeMap<String, String> {
    let declared = setups(workspace, &BTreeMap::new(), &BTreeMap::new());
    let mut out = catalog_fields(
        workspace,
        &declared,
        sees.runs_in.as_ref(),
        &sees.repositories,
    );
    if let Some(setup) = sees.runs_in.as_ref().and_then(|r| declared.get(r)) {
        out.insert("setup".to_owned(), setup.join("\n"));
    }
    out
}

/// What a snapshot of a repository leaves out (relative to it: directories ending in `/`,
/// and one file; [`inputs::excluded`]), when the OpenSpec root is inside that repository:
/// where change packets live; the store (never an input, even before it has written the
/// `.gitignore` that keeps git out of it); and the workspace catalog (`proofgraph.yaml`),
/// whose fields enter fingerprints one by one, as far as they can change a result
/// ([`catalog_fields`]), never as a file.
pub(crate) fn excluded_paths(root: &Path, repo_dir: &Path) -> Vec<String> {
    let (Ok(root), Ok(repo)) = (fs_err::canonicalize(root), fs_err::canonicalize(repo_dir)) else {
        return Vec::new();
    };
    let Ok(rel) = root.strip_prefix(&repo) else {
        return Vec::new();
    };
    let rel = rel.to_string_lossy();
    let base = if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    };
    vec![
        format!("{base}openspec/changes/"),
        format!("{base}{}/", crate::store::DIR),
        format!("{base}{}", crate::load::config::catalog::FILE_NAME),
    ]
}

/// Observes every repository and provider of `graph`: in every sandbox mode, the tracked
/// files and the untracked files git does not ignore, as `git status` shows the tree.
pub fn observe(
    workspace: &Workspace,
    change: &Change,
    graph: &SealedGraph,
    path_var: Option<&OsString>,
) -> Result<Observed, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut snapshots = BTreeMap::new();
    let excludes: BTreeMap<&RepoId, Vec<String>> = workspace
        .repositories
        .iter()
        .map(|(id, repo)| (id, excluded_paths(&workspace.root, &repo.dir)))
        .collect();
    // A running `proofgraph watch` knows which tracked files changed; without one (or when
    // it cannot vouch for an answer), lstat every tracked file — the repositories of one
    // work tree together. Then the untracked files git does not ignore, in every mode: the
    // tree a provider reads is the one `git status` shows.
    let ids: Vec<&RepoId> = workspace.repositories.keys().collect();
    let requests: Vec<(&Path, &[String])> = workspace
        .repositories
        .iter()
        .map(|(id, repo)| (repo.dir.as_path(), excludes[id].as_slice()))
        .collect();
    let store_dir = workspace.root.join(crate::store::DIR);
    type Answered = Result<(inputs::Snapshot, Option<Vec<inputs::FileEntry>>), inputs::InputsError>;
    let tracked: Vec<Answered> = match crate::observe::watch::query(&store_dir, &requests) {
        Some(answered) => answered
            .into_iter()
            .map(|(s, u)| Ok((s, Some(u))))
            .collect(),
        None => inputs::snapshots(&requests)
            .into_iter()
            .map(|s| s.map(|s| (s, None)))
            .collect(),
    };
    let mut untracked: BTreeMap<RepoId, BTreeSet<String>> = BTreeMap::new();
    let mut taken: Vec<(&RepoId, Result<inputs::Snapshot, inputs::InputsError>)> = Vec::new();
    for (id, snapshot) in ids.into_iter().zip(tracked) {
        let snapshot = snapshot.and_then(|(mut s, answered)| {
            let extra = match answered {
                Some(extra) => extra,
                None => inputs::untracked(&s.dir, &excludes[id])?,
            };
            let added = inputs::add_untracked(&mut s, extra);
            untracked.insert(id.clone(), added.into_iter().collect());
            Ok(s)
        });
        taken.push((id, snapshot));
    }
    taken.sort_by(|a, b| a.0.cmp(b.0));
    for (id, snapshot) in taken {
        let repo = &workspace.repositories[id];
        match snapshot {
            Ok(s) => {
                snapshots.insert(id.clone(), s);
            }
            Err(inputs::InputsError::NameNotUtf8 { name, .. }) => errors.push(
                Diagnostic::error(
                    Code::InputNameNotUtf8,
                    format!("repository `{id}` ({}) holds `{name}`, whose name is not UTF-8: proofgraph cannot bind it as an input, and will not run a job without it", repo.path),
                )
                .surface("workspace.repositories")
                .fix("Rename the file to a UTF-8 name, or exclude it from the repository (.gitignore, or remove it from git's index)."),
            ),
            Err(err) => errors.push(
                Diagnostic::error(Code::NotAGitRepository, format!("repository `{id}` ({}) cannot be read as git: {err}", repo.path))
                    .surface("workspace.repositories")
                    .fix(format!("Run `git init` in {} and add its files, or point the repository at a git work tree.", repo.dir.display())),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let excludes = excludes
        .into_iter()
        .map(|(id, exclude)| (id.clone(), exclude))
        .collect();
    from_snapshots(
        workspace,
        change,
        graph,
        path_var,
        Taken {
            snapshots,
            untracked,
            excludes,
        },
        &WorkingTree,
    )
}

/// Observes every repository and provider of `graph` as they are at a revision: each
/// repository's files read from git's objects at the revision its git repository is given
/// in `revisions` (no untracked files: a checkout of a revision has none), and a program of
/// a repository read from there too. The fingerprints computed from it are those a
/// checkout of the revision gives.
pub fn observe_at(
    workspace: &Workspace,
    change: &Change,
    graph: &SealedGraph,
    path_var: Option<&OsString>,
    revisions: &BTreeMap<RepoId, &Revision>,
) -> Result<Observed, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut snapshots = BTreeMap::new();
    let mut excludes = BTreeMap::new();
    for (id, repo) in &workspace.repositories {
        let exclude = excluded_paths(&workspace.root, &repo.dir);
        let Some(revision) = revisions.get(id) else {
            continue;
        };
        match revision.snapshot(&repo.dir, &exclude) {
            Ok(s) => {
                snapshots.insert(id.clone(), s);
            }
            Err(super::repo_at_revision::RevisionError::NameNotUtf8 { rev, name }) => errors.push(
                Diagnostic::error(
                    Code::InputNameNotUtf8,
                    format!("repository `{id}` ({}) holds `{name}` at `{rev}`, whose name is not UTF-8: proofgraph cannot bind it as an input", repo.path),
                )
                .surface("workspace.repositories")
                .fix("Rename the file to a UTF-8 name in that revision's history, or compare revisions that do not hold it."),
            ),
            Err(err) => errors.push(
                Diagnostic::error(
                    Code::UnknownRevision,
                    format!("repository `{id}` ({}) cannot be read at `{}`: {err}", repo.path, revision.rev()),
                )
                .surface("workspace.repositories")
                .fix("Fetch the revision (`git fetch origin <ref>`) or name one this repository has."),
            ),
        }
        excludes.insert(id.clone(), exclude);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let dirs: BTreeMap<PathBuf, &Revision> = workspace
        .repositories
        .iter()
        .filter_map(|(id, repo)| Some((repo.dir.clone(), *revisions.get(id)?)))
        .collect();
    from_snapshots(
        workspace,
        change,
        graph,
        path_var,
        Taken {
            snapshots,
            untracked: BTreeMap::new(),
            excludes,
        },
        &AtRevision(dirs),
    )
}

/// Observes every provider of `graph` over snapshots the caller took (`rerun`: the files a
/// receipt recorded, written out where `workspace`'s repositories now point); programs of
/// a repository are read from those directories.
pub fn observe_snapshots(
    workspace: &Workspace,
    change: &Change,
    graph: &SealedGraph,
    path_var: Option<&OsString>,
    snapshots: BTreeMap<RepoId, Snapshot>,
) -> Result<Observed, Vec<Diagnostic>> {
    from_snapshots(
        workspace,
        change,
        graph,
        path_var,
        Taken {
            snapshots,
            untracked: BTreeMap::new(),
            excludes: BTreeMap::new(),
        },
        &WorkingTree,
    )
}

/// The snapshots an observation starts from.
struct Taken {
    snapshots: BTreeMap<RepoId, Snapshot>,
    /// Per repository, the paths of its snapshot git does not track.
    untracked: BTreeMap<RepoId, BTreeSet<String>>,
    excludes: BTreeMap<RepoId, Vec<String>>,
}

/// Each repository's directory at its revision.
struct AtRevision<'a>(BTreeMap<PathBuf, &'a Revision>);

impl AtRevision<'_> {
    fn file(&self, dir: &Path, rel: &Path) -> Option<(Vec<u8>, inputs::FileKind)> {
        let revision = self.0.get(dir)?;
        let rel = rel.to_str()?;
        // A link to a file of the repository is followed, a few levels deep, as the
        // checkout's file system would. One that leaves the repository (an absolute target,
        // or a `..` above its top) leads to no file of it at this revision.
        let mut path = crate::base::paths::normalize_beneath(Path::new(rel))?;
        for _ in 0..8 {
            let (bytes, kind) = revision.read(dir, path.to_str()?).ok()??;
            if kind != inputs::FileKind::Symlink {
                return Some((bytes, kind));
            }
            let target = PathBuf::from(String::from_utf8(bytes).ok()?);
            path = crate::base::paths::normalize_beneath(
                &path.parent().unwrap_or(Path::new("")).join(target),
            )?;
        }
        None
    }
}

impl RepoFiles for AtRevision<'_> {
    fn is_executable(&self, dir: &Path, rel: &Path) -> bool {
        matches!(self.file(dir, rel), Some((_, inputs::FileKind::Executable)))
    }
    fn read(&self, dir: &Path, rel: &Path) -> Option<Vec<u8>> {
        self.file(dir, rel).map(|(bytes, _)| bytes)
    }
    fn link(&self, dir: &Path, rel: &Path) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStringExt as _;
        let revision = self.0.get(dir)?;
        match revision.read(dir, rel.to_str()?).ok()?? {
            (bytes, inputs::FileKind::Symlink) => {
                Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
            }
            _ => None,
        }
    }
}

/// How many files the links among one provider's inputs may add (a link to a huge
/// directory is bound whole up to this, then refused).
const LINK_TARGETS_MAX: usize = 1_000_000;

/// What the links among `selected` lead to: a link binds the bytes it resolves to, so its
/// target — a file, or every file below a directory, of a repository of the workspace — is
/// an input too, followed through further links eight levels deep. A target outside every
/// repository adds nothing (the sandbox refuses such a link when it is made).
fn link_targets(
    selected: &FileList,
    snapshots: &BTreeMap<RepoId, Snapshot>,
    workspace: &Workspace,
    repo_files: &dyn RepoFiles,
) -> FileList {
    let repo_of = |name: &str| snapshots.keys().find(|r| r.as_str() == name).cloned();
    let kind_of = |repo: &RepoId, path: &str| {
        let files = &snapshots.get(repo)?.files;
        let at = files.binary_search_by(|f| f.path.as_str().cmp(path)).ok()?;
        Some(files[at].kind)
    };
    let mut seen: BTreeSet<String> = selected.iter().map(|(p, _)| p.clone()).collect();
    let mut todo: Vec<(RepoId, String, usize)> = selected
        .iter()
        .filter_map(|(scoped, _)| {
            let (repo, path) = scoped.split_once(':')?;
            let repo = repo_of(repo)?;
            (kind_of(&repo, path) == Some(inputs::FileKind::Symlink))
                .then(|| (repo, path.to_owned(), 0))
        })
        .collect();
    let mut out = FileList::new();
    while let Some((repo, path, depth)) = todo.pop() {
        let Some(dir) = workspace.repositories.get(&repo).map(|r| r.dir.as_path()) else {
            continue;
        };
        let Some(target) = repo_files.link(dir, Path::new(&path)) else {
            continue;
        };
        let parent = Path::new(&path).parent().unwrap_or(Path::new(""));
        let resolved = crate::base::paths::normalize(&if target.is_absolute() {
            target
        } else {
            dir.join(parent).join(target)
        });
        // The repository that holds it (the innermost, when one is nested in another).
        let Some((owner, rel)) = workspace
            .repositories
            .iter()
            .filter_map(|(id, r)| {
                let rel = resolved.strip_prefix(&r.dir).ok()?.to_str()?.to_owned();
                Some((id.clone(), rel, r.dir.components().count()))
            })
            .max_by_key(|(_, _, depth)| *depth)
            .map(|(id, rel, _)| (id, rel))
        else {
            continue;
        };
        let Some(snapshot) = snapshots.get(&owner) else {
            continue;
        };
        let files = &snapshot.files;
        // `rel` itself and every file below it: they sort between `rel` and `rel0` (`0`
        // follows `/`), among names such as `rel-x` that are left out.
        let below = format!("{rel}/");
        let (start, end) = if rel.is_empty() {
            (0, files.len())
        } else {
            let end_key = format!("{rel}0");
            (
                files.partition_point(|f| f.path.as_str() < rel.as_str()),
                files.partition_point(|f| f.path.as_str() < end_key.as_str()),
            )
        };
        for f in files[start..end]
            .iter()
            .filter(|f| rel.is_empty() || f.path == rel || f.path.starts_with(&below))
        {
            let scoped = format!("{owner}:{}", f.path);
            if out.len() >= LINK_TARGETS_MAX || !seen.insert(scoped.clone()) {
                continue;
            }
            if f.kind == inputs::FileKind::Symlink && depth < 8 {
                todo.push((owner.clone(), f.path.clone(), depth + 1));
            }
            out.push((scoped, f.id));
        }
    }
    out
}

/// How a provider selects its input files: the same rules whether they are applied to a
/// snapshot or asked about one changed path (`plan --base`), so both agree on what an
/// excluded path affects (nothing).
///
/// Its `inputs` entries in order, each adding (or, `!`, removing) what it matches in the
/// repositories it applies to; the last entry matching a file decides
/// ([`proofgraph_graph::pattern`]). Without `inputs`, or when the first entry excludes, the
/// list starts from the provider's base: what it reads without `inputs` (a contract's
/// files, else every file of its repositories).
#[derive(Debug, Clone)]
pub struct Rules {
    /// The `inputs` entries, in order.
    entries: Vec<Entry>,
    /// What the provider reads without `inputs`.
    base: Vec<Base>,
    /// Whether the entries start from the base (no entries, or the first excludes).
    from_base: bool,
}

/// One `inputs` entry.
#[derive(Debug, Clone)]
struct Entry {
    sign: Sign,
    /// The repositories it applies to (its scope, else the provider's own).
    repos: Vec<RepoId>,
    pattern: Pattern,
    /// Its position in `inputs`.
    index: usize,
}

/// What a provider reads without `inputs`.
#[derive(Debug, Clone)]
enum Base {
    /// One file of a repository (a contract).
    Exact(RepoId, String),
    /// Every file of a repository.
    All(RepoId),
}

impl Base {
    fn repo(&self) -> &RepoId {
        match self {
            Base::Exact(r, _) | Base::All(r) => r,
        }
    }

    fn selects(&self, repo: &RepoId, path: &str) -> bool {
        match self {
            Base::Exact(r, e) => r == repo && e == path,
            Base::All(r) => r == repo,
        }
    }
}

/// A provider's input files as its rules select them from each repository's snapshot.
pub struct Selected {
    /// `repo:path` and identity, sorted.
    pub files: FileList,
    /// The `!` entries (their positions in `inputs`) that keep no file out.
    pub excluded_nothing: Vec<usize>,
}

impl Rules {
    /// The entries that apply to `repo`, in order.
    fn entries_of<'a>(&'a self, repo: &RepoId) -> Vec<(Sign, &'a Pattern)> {
        self.entries
            .iter()
            .filter(|e| e.repos.contains(repo))
            .map(|e| (e.sign, &e.pattern))
            .collect()
    }

    /// Whether these rules select `path` of `repo`.
    pub fn selects(&self, repo: &RepoId, path: &str) -> bool {
        match pattern::decides(&self.entries_of(repo), path) {
            Some(sign) => sign == Sign::Include,
            None => self.from_base && self.base.iter().any(|b| b.selects(repo, path)),
        }
    }

    /// The files these rules select from each repository's files (sorted by path).
    pub fn select<'f>(&self, files_of: impl Fn(&RepoId) -> &'f [inputs::FileEntry]) -> Selected {
        let mut repos: BTreeSet<&RepoId> = self.entries.iter().flat_map(|e| &e.repos).collect();
        repos.extend(self.base.iter().map(Base::repo));
        let mut files = Vec::new();
        let mut kept_out: BTreeMap<usize, usize> = BTreeMap::new();
        for repo in repos {
            let all = files_of(repo);
            let base: Vec<&Base> = if self.from_base {
                self.base.iter().filter(|b| b.repo() == repo).collect()
            } else {
                Vec::new()
            };
            let in_base = all
                .iter()
                .enumerate()
                .filter(|(_, f)| base.iter().any(|b| b.selects(repo, &f.path)))
                .map(|(i, _)| i);
            let applying: Vec<&Entry> = self
                .entries
                .iter()
                .filter(|e| e.repos.contains(repo))
                .collect();
            if applying.is_empty() {
                // No `inputs` here (the common case): the base, without building a set.
                files.extend(in_base.map(|i| (format!("{repo}:{}", all[i].path), all[i].id)));
                continue;
            }
            let entries: Vec<(Sign, &Pattern)> =
                applying.iter().map(|e| (e.sign, &e.pattern)).collect();
            let selection = pattern::apply(&entries, all, |f| f.path.as_str(), in_base);
            for (e, n) in applying.iter().zip(&selection.kept_out) {
                if e.sign == Sign::Exclude {
                    *kept_out.entry(e.index).or_default() += n;
                }
            }
            files.extend(
                selection
                    .selected
                    .into_iter()
                    .map(|i| (format!("{repo}:{}", all[i].path), all[i].id)),
            );
        }
        // An exclude whose scope names no repository of the workspace applies nowhere.
        for e in &self.entries {
            if e.sign == Sign::Exclude {
                kept_out.entry(e.index).or_default();
            }
        }
        files.sort();
        Selected {
            files,
            excluded_nothing: kept_out
                .into_iter()
                .filter(|(_, n)| *n == 0)
                .map(|(i, _)| i)
                .collect(),
        }
    }
}

/// A provider's input rules (its `inputs`, over its base: a contract's files, or its
/// repositories' files), or the diagnostic for an input that is not a valid glob.
pub fn rules(
    workspace: &Workspace,
    change: &Change,
    provider: &proofgraph_graph::graph::ProviderNode,
) -> Result<Rules, Diagnostic> {
    let spec = &provider.spec;
    let id = &spec.id.value;
    let base = match spec.adapter.value {
        Adapter::ContractDigest => spec
            .contract
            .iter()
            .flatten()
            .map(|(repo, path)| {
                Base::Exact(repo.clone(), path.value.trim_start_matches("./").to_owned())
            })
            .collect(),
        _ => {
            let repos: Vec<&RepoId> = if provider.repositories.is_empty() {
                workspace.repositories.keys().collect()
            } else {
                provider.repositories.iter().collect()
            };
            repos.into_iter().map(|r| Base::All(r.clone())).collect()
        }
    };
    let mut entries = Vec::new();
    let home: Vec<RepoId> = match &provider.runs_in {
        Some(r) => vec![r.clone()],
        None => provider.repositories.iter().cloned().collect(),
    };
    for (index, input) in spec.inputs.iter().flatten().enumerate() {
        let (sign, entry) = pattern::split_sign(&input.value);
        let (scope, text) = split_scoped(entry);
        let repos: Vec<RepoId> = match scope {
            Some(r) => workspace
                .repositories
                .keys()
                .filter(|k| k.as_str() == r)
                .cloned()
                .collect(),
            None => home.clone(),
        };
        let Some(pattern) = Pattern::new(text) else {
            return Err(Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "input `{}` of provider `{id}` is not a valid glob",
                    input.value
                ),
            )
            .at(&change.execution_file, input.pos)
            .fix("Fix the glob (`src/**`, `*.json`), or write a plain path."));
        };
        entries.push(Entry {
            sign,
            repos,
            pattern,
            index,
        });
    }
    let from_base = pattern::starts_from_base(&entries, |e| e.sign);
    Ok(Rules {
        entries,
        base,
        from_base,
    })
}

/// Report paths (`repo:path`) are what commands write, emptied before each run: never
/// inputs (a leftover report in the working tree would otherwise be an input to its own
/// run).
pub fn report_paths(graph: &SealedGraph) -> BTreeSet<String> {
    graph
        .providers()
        .filter_map(|(_, _, p)| {
            let repo = p.runs_in.as_ref()?;
            let report = p.spec.report.as_ref()?;
            Some(format!("{repo}:{}", report.value.trim_start_matches("./")))
        })
        .collect()
}

/// The rest of an observation, from each repository's snapshot.
fn from_snapshots(
    workspace: &Workspace,
    change: &Change,
    graph: &SealedGraph,
    path_var: Option<&OsString>,
    taken: Taken,
    repo_files: &dyn RepoFiles,
) -> Result<Observed, Vec<Diagnostic>> {
    let Taken {
        snapshots,
        untracked,
        excludes,
    } = taken;
    let mut errors = Vec::new();
    let mut files = BTreeMap::new();
    let mut untracked_bound = BTreeMap::new();
    let mut inputs = BTreeMap::new();
    let mut executables = BTreeMap::new();
    let mut service_executables = BTreeMap::new();
    let mut resolved = BTreeMap::new();
    let mut service_programs = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut programs = Programs::new(Some(&crate::store::Store::open_read_only(&workspace.root)));
    let reports = report_paths(graph);
    // The repositories each provider's job sees (where it runs, those it binds files of,
    // those of the services it talks to), for its part of the catalog.
    let mut sees: BTreeMap<ProviderId, Sees> = BTreeMap::new();
    for (id, node, provider) in graph.providers() {
        let spec = &provider.spec;
        let mut selected: FileList = Vec::new();
        let repo_files_of = |repo: &RepoId| {
            snapshots
                .get(repo)
                .map(|s| s.files.as_slice())
                .unwrap_or_default()
        };
        match rules(workspace, change, provider) {
            Ok(rules) => {
                let chosen = rules.select(repo_files_of);
                selected = chosen.files;
                for index in chosen.excluded_nothing {
                    let Some(input) = spec.inputs.as_ref().and_then(|i| i.get(index)) else {
                        continue;
                    };
                    warnings.push(
                        Diagnostic::warning(
                            Code::InputExcludesNothing,
                            format!(
                                "input `{}` of provider `{id}` excludes nothing: it matches no file the entries before it select, or a later entry adds back what it matches",
                                input.value
                            ),
                        )
                        .at(&provider.file, input.pos)
                        .fix("Fix the pattern, move it after the entries that select its files, or remove it (docs/inputs.md: the last entry that matches a file decides)."),
                    );
                }
            }
            Err(d) => errors.push(d),
        }
        selected.retain(|(path, _)| !reports.contains(path));
        let targets = link_targets(&selected, &snapshots, workspace, repo_files);
        selected.extend(targets);
        selected.retain(|(path, _)| !reports.contains(path));
        selected.sort();
        selected.dedup();
        inputs.insert(
            id.clone(),
            inputs_digest(selected.iter().map(|(p, d)| (p.as_str(), d))),
        );
        let not_tracked = selected
            .iter()
            .filter(|(scoped, _)| {
                scoped.split_once(':').is_some_and(|(repo, path)| {
                    untracked.get(repo).is_some_and(|u| u.contains(path))
                })
            })
            .count();
        untracked_bound.insert(id.clone(), not_tracked);
        if spec.command.is_some() {
            let mut repos: BTreeSet<RepoId> = provider.runs_in.iter().cloned().collect();
            repos.extend(
                selected
                    .iter()
                    .filter_map(|(scoped, _)| RepoId::parse(scoped.split_once(':')?.0).ok()),
            );
            repos.extend(
                graph
                    .services_of(node)
                    .into_iter()
                    .filter_map(|s| graph.node(s).service()?.runs_in.clone()),
            );
            sees.insert(
                id.clone(),
                Sees {
                    runs_in: provider.runs_in.clone(),
                    repositories: repos,
                },
            );
        }
        files.insert(id.clone(), selected);
        if let Some(program) = spec.command.as_ref().and_then(|c| c.value.first()) {
            let repo_dir = provider
                .runs_in
                .as_ref()
                .and_then(|r| workspace.repositories.get(r))
                .map(|r| r.dir.as_path());
            let path = job_path(spec.env.as_ref(), path_var);
            let at = Lookup {
                repo_dir,
                path: path.as_ref(),
                files: repo_files,
            };
            let found = programs.find(program, at);
            match &found {
                Some(found) => {
                    let argv = spec.command.as_ref().map(|c| c.value.as_slice()).unwrap_or_default();
                    executables.insert(id.clone(), programs.identify(found, argv, at));
                }
                None => warnings.push(
                    Diagnostic::warning(
                        Code::ExecutableNotFound,
                        format!("provider `{id}` runs `{program}`, which is not on its PATH (or in its repository)"),
                    )
                    .at(&provider.file, spec.command.as_ref().map_or(spec.id.pos, |c| c.pos))
                    .fix(format!("Install `{program}`, or fix the command; running it would fail.")),
                ),
            }
            resolved.insert(id.clone(), found);
        }
    }
    for (id, _, service) in graph.services() {
        let Some(program) = service.spec.command.as_ref().and_then(|c| c.value.first()) else {
            continue;
        };
        let repo_dir = service
            .runs_in
            .as_ref()
            .and_then(|r| workspace.repositories.get(r))
            .map(|r| r.dir.as_path());
        let path = job_path(service.spec.env.as_ref(), path_var);
        let at = Lookup {
            repo_dir,
            path: path.as_ref(),
            files: repo_files,
        };
        let found = programs.find(program, at);
        if let Some(found) = &found {
            let argv = service
                .spec
                .command
                .as_ref()
                .map(|c| c.value.as_slice())
                .unwrap_or_default();
            service_executables.insert(id.clone(), programs.identify(found, argv, at));
        }
        service_programs.insert(id.clone(), found);
    }
    programs.finish();
    if !errors.is_empty() {
        return Err(errors);
    }
    let repositories = snapshots
        .iter()
        .map(|(id, s)| {
            (
                id.clone(),
                inputs_digest(s.files.iter().map(|f| (f.path.as_str(), &f.id))),
            )
        })
        .collect::<BTreeMap<RepoId, Inputs>>();
    let setups = setups(workspace, &snapshots, &repositories);
    let catalog = sees
        .iter()
        .map(|(id, seen)| {
            let fields = catalog_fields(
                workspace,
                &setups,
                seen.runs_in.as_ref(),
                &seen.repositories,
            );
            (id.clone(), fields)
        })
        .collect();
    let world = World {
        platform: Platform {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
        },
        inputs,
        executables,
        service_executables,
        setups,
        repositories,
        catalog,
    };
    Ok(Observed {
        world,
        snapshots,
        files,
        untracked: untracked_bound,
        programs: resolved,
        service_programs,
        excludes,
        sees,
        warnings,
    })
}

impl Observed {
    /// The files of `provider`'s input list whose identity is no longer the one it was
    /// fingerprinted with, read again now from the working tree (as `copy`/`none` snapshot
    /// it: tracked files by the index's stat data, the others by content). Deleted files
    /// count as moved; files that appeared do not (they change the next fingerprint).
    pub fn moved_inputs(&self, workspace: &Workspace, provider: &ProviderId) -> Vec<String> {
        let Some(bound) = self.files.get(provider) else {
            return Vec::new();
        };
        let mut now: BTreeMap<&str, Option<BTreeMap<String, Digest>>> = BTreeMap::new();
        let mut moved = Vec::new();
        for (scoped, id) in bound {
            let Some((repo, path)) = scoped.split_once(':') else {
                continue;
            };
            let files = now.entry(repo).or_insert_with(|| {
                let (id, dir) = workspace
                    .repositories
                    .iter()
                    .find(|(id, _)| id.as_str() == repo)
                    .map(|(id, r)| (id, &r.dir))?;
                let exclude = self.excludes.get(id).map(Vec::as_slice).unwrap_or_default();
                let snapshot = inputs::snapshot(dir, exclude).ok()?;
                let snapshot = inputs::with_untracked(snapshot, exclude).ok()?;
                Some(snapshot.files.into_iter().map(|f| (f.path, f.id)).collect())
            });
            match files {
                Some(files) if files.get(path) == Some(id) => {}
                _ => moved.push(scoped.clone()),
            }
        }
        moved
    }
}

/// The part of the workspace catalog (`proofgraph.yaml`) that can change the result of a
/// job that runs in `runs_in` and sees `repos` (its world holds them) and that no other
/// component of its fingerprint binds: the fingerprint's `catalog` component, field by
/// field. The file itself is never an input ([`excluded_paths`]); which of its keys can
/// change a result is decided in `catalog::BEARINGS` (docs/workspaces.md), and here each
/// bound key enters where it applies:
///
/// - `hostPaths`, which every job's world holds: the entries as a sorted set (order and a
///   trailing `/` mean nothing), as JSON text;
/// - `repositories.<id>.path` of each repository seen, written canonically (`./web/` is
///   `web`), since where the repositories lie beside each other is what a job sees;
/// - `repositories.<id>.setup` of each repository seen but not run in: its setup as the
///   `setup` component gives it for the one run in (commands, `caches`, `setupCache`,
///   `setupInputs` and what the setup saw), since a job sees each repository under the
///   tree its setup made.
///
/// A repository without a catalog is `root` at `.`, as the workspace resolves it, so a
/// catalog that says only that changes nothing.
pub(crate) fn catalog_fields(
    workspace: &Workspace,
    setups: &BTreeMap<RepoId, Vec<String>>,
    runs_in: Option<&RepoId>,
    repos: &BTreeSet<RepoId>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(catalog) = &workspace.catalog
        && !catalog.host_paths.is_empty()
    {
        let paths: BTreeSet<&str> = catalog
            .host_paths
            .iter()
            .map(|p| match p.value.trim_end_matches('/') {
                "" => "/",
                trimmed => trimmed,
            })
            .collect();
        let paths: Vec<&str> = paths.into_iter().collect();
        out.insert(
            "hostPaths".to_owned(),
            serde_json::Value::from(paths).to_string(),
        );
    }
    for repo in repos {
        if let Some(r) = workspace.repositories.get(repo) {
            out.insert(format!("repositories.{repo}.path"), canonical_path(&r.path));
        }
        if Some(repo) != runs_in
            && let Some(setup) = setups.get(repo)
        {
            out.insert(format!("repositories.{repo}.setup"), setup.join("\n"));
        }
    }
    out
}

/// A relative path written one way: no `.` or empty components, `x/..` taken away, `.` for
/// the directory itself (`./web/` is `web`, `a/../b` is `b`).
fn canonical_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// Each repository's sandbox setup, as fingerprinted: one entry per command
/// (its argv as JSON), per declared cache (`caches`), per cached directory and per
/// `setupInputs` pattern, and what the
/// setup sees — a cached one, the key it is kept under (the identity of every input it
/// sees); an uncached one, which runs over the whole repository, that repository's digest —
/// so a lockfile edit reruns every provider of the repository, even one whose `inputs`
/// leave the lockfile out.
fn setups(
    workspace: &Workspace,
    snapshots: &BTreeMap<RepoId, Snapshot>,
    repositories: &BTreeMap<RepoId, Inputs>,
) -> BTreeMap<RepoId, Vec<String>> {
    let Some(catalog) = &workspace.catalog else {
        return BTreeMap::new();
    };
    catalog
        .repositories
        .iter()
        .filter_map(|(id, repo)| {
            // A declared cache changes how the tools run (their variables), never what the
            // cache holds: its kind is bound, its content is not.
            let caches = repo
                .caches
                .iter()
                .map(|c| format!("caches {}", c.value.as_str()));
            let Some(commands) = repo.setup.as_ref() else {
                let caches: Vec<String> = caches.collect();
                return (!caches.is_empty()).then(|| (id.clone(), caches));
            };
            let mut out: Vec<String> = commands
                .iter()
                .map(|c| format!("run {}", serde_json::Value::from(c.value.clone())))
                .collect();
            out.extend(caches);
            out.extend(
                repo.setup_cache
                    .iter()
                    .flatten()
                    .map(|d| format!("cache {}", d.value)),
            );
            out.extend(
                repo.setup_inputs
                    .iter()
                    .flatten()
                    .map(|p| format!("inputs {}", p.value)),
            );
            let cache_dirs: Vec<String> = repo
                .setup_cache
                .iter()
                .flatten()
                .map(|d| d.value.clone())
                .collect();
            if !cache_dirs.is_empty()
                && let Some(snapshot) = snapshots.get(id)
            {
                let patterns: Option<Vec<String>> = repo
                    .setup_inputs
                    .as_ref()
                    .map(|all| all.iter().map(|p| p.value.clone()).collect());
                let argvs: Vec<Vec<String>> = commands.iter().map(|c| c.value.clone()).collect();
                let seen = super::setup_inputs::inputs(patterns.as_deref(), snapshot);
                let key =
                    super::setup_inputs::cache_key(&argvs, &cache_dirs, patterns.as_deref(), &seen);
                out.push(format!("key {key}"));
            } else if let Some(whole) = repositories.get(id) {
                out.push(format!("sees {}", whole.digest));
            }
            Some((id.clone(), out))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::config::catalog::{self, BEARINGS, Bearing};
    use crate::load::config::decode::Sink;
    use crate::load::workspace::Repository;

    /// A catalog that sets every key the decoder reads; `{key}` is the trusted key's PEM.
    const EVERY_KEY: &str = r#"version: 1
repositories:
  app:
    path: .
    setup: [[npm, ci]]
    setupCache: [node_modules]
    setupInputs: [package-lock.json]
    caches: [npm]
  api:
    path: api
    setup: [[go, mod, download]]
    setupCache: [vendor]
    setupInputs: [go.sum]
    caches: [go-mod]
sandbox: worktree
trustedKeys:
  - name: ci
    publicKey: "{key}"
cache:
  remote: grpc://127.0.0.1:9092
  policy: local:rw,remote:r
  headersFromEnv: {Authorization: CACHE_TOKEN}
  connectTimeoutMs: 1000
  timeoutMs: 5000
  minBytesPerSecond: 1000
hostPaths: [/opt/tool, "~/.cargo"]
logs: {keepBytes: 4096}
executor:
  remote: grpc://127.0.0.1:50051/main
  platform: {OSFamily: linux}
  remoteJobs: 8
  headersFromEnv: {Authorization: ENGINE_TOKEN}
  connectTimeoutMs: 1500
  timeoutMs: 6000
  minBytesPerSecond: 2000
"#;

    fn pem(seed: u8) -> String {
        let key = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        crate::attest::keys::public_key_to_pem(&key.verifying_key()).replace('\n', "\\n")
    }

    fn workspace(text: &str) -> Workspace {
        let doc = crate::load::config::load::parse_bytes(text.as_bytes(), catalog::FILE_NAME)
            .expect("the catalog parses");
        let mut sink = Sink::new(catalog::FILE_NAME);
        let decoded = catalog::decode(&mut sink, &doc.root).expect("the catalog decodes");
        assert!(!sink.has_errors(), "{text}\n{:?}", sink.into_diagnostics());
        let repositories = decoded
            .repositories
            .values()
            .map(|r| {
                (
                    r.id.value.clone(),
                    Repository {
                        id: r.id.value.clone(),
                        path: r.path.value.clone(),
                        dir: PathBuf::from("/w").join(&r.path.value),
                    },
                )
            })
            .collect();
        Workspace {
            root: PathBuf::from("/w"),
            catalog: Some(decoded),
            has_catalog: true,
            repositories,
            diagnostics: Vec::new(),
        }
    }

    /// What the catalog puts into the fingerprint of a provider that runs in `app` and
    /// sees `app` and `api`: the setup component and the catalog component.
    fn bound(text: &str) -> (Option<Vec<String>>, BTreeMap<String, String>) {
        let ws = workspace(text);
        let setups = setups(&ws, &BTreeMap::new(), &BTreeMap::new());
        let app = RepoId::parse("app").expect("valid");
        let repos: BTreeSet<RepoId> = ws.repositories.keys().cloned().collect();
        let fields = catalog_fields(&ws, &setups, Some(&app), &repos);
        (setups.get(&app).cloned(), fields)
    }

    /// Each key the decoder reads, with an edit of it in [`EVERY_KEY`] (for a key of a
    /// repository, one in each repository: the one the provider runs in, and the other).
    fn edits(key: &str) -> Vec<(&'static str, &'static str)> {
        match key {
            "version" => vec![],
            "repositories.*.path" => vec![("path: api", "path: services/api")],
            "repositories.*.setup" => vec![
                ("[[npm, ci]]", "[[npm, install]]"),
                ("[[go, mod, download]]", "[[go, mod, vendor]]"),
            ],
            "repositories.*.setupCache" => vec![
                ("[node_modules]", "[node_modules, .cache]"),
                ("[vendor]", "[third_party]"),
            ],
            "repositories.*.setupInputs" => vec![
                ("[package-lock.json]", "[package-lock.json, .npmrc]"),
                ("[go.sum]", "[go.mod, go.sum]"),
            ],
            "repositories.*.caches" => vec![("[npm]", "[]"), ("[go-mod]", "[]")],
            "sandbox" => vec![("sandbox: worktree", "sandbox: copy")],
            "trustedKeys[].name" => vec![("name: ci", "name: release")],
            "trustedKeys[].publicKey" => vec![("{key}", "{other}")],
            "cache.remote" => vec![("grpc://127.0.0.1:9092", "http://127.0.0.1:8080/c")],
            "cache.policy" => vec![("local:rw,remote:r", "local:rw,remote:rw")],
            "cache.headersFromEnv" => vec![("CACHE_TOKEN", "OTHER_TOKEN")],
            "cache.connectTimeoutMs" => vec![("connectTimeoutMs: 1000", "connectTimeoutMs: 2")],
            "cache.timeoutMs" => vec![("timeoutMs: 5000", "timeoutMs: 90000")],
            "cache.minBytesPerSecond" => vec![("minBytesPerSecond: 1000", "minBytesPerSecond: 7")],
            "hostPaths" => vec![("/opt/tool", "/opt/other")],
            "logs.keepBytes" => vec![("keepBytes: 4096", "keepBytes: 8192")],
            "executor.remote" => vec![("grpc://127.0.0.1:50051/main", "grpcs://engine:443")],
            "executor.platform" => vec![("{OSFamily: linux}", "{OSFamily: linux, ISA: x86-64}")],
            "executor.remoteJobs" => vec![("remoteJobs: 8", "remoteJobs: 64")],
            "executor.headersFromEnv" => vec![("ENGINE_TOKEN", "OTHER_ENGINE_TOKEN")],
            "executor.connectTimeoutMs" => {
                vec![("connectTimeoutMs: 1500", "connectTimeoutMs: 3")]
            }
            "executor.timeoutMs" => vec![("timeoutMs: 6000", "timeoutMs: 60000")],
            "executor.minBytesPerSecond" => {
                vec![("minBytesPerSecond: 2000", "minBytesPerSecond: 9")]
            }
            other => panic!("`{other}` has no edit here: add one"),
        }
    }

    fn with_keys(text: &str) -> String {
        text.replace("{key}", &pem(1)).replace("{other}", &pem(2))
    }

    #[test]
    fn every_key_the_decoder_reads_is_classified_once() {
        let keys: BTreeSet<String> = catalog::key_paths().into_iter().collect();
        let classified: Vec<&str> = BEARINGS.iter().map(|(k, _)| *k).collect();
        let unique: BTreeSet<String> = classified.iter().map(|k| (*k).to_owned()).collect();
        assert_eq!(unique.len(), classified.len(), "a key classified twice");
        assert_eq!(
            keys, unique,
            "catalog::BEARINGS must classify exactly the keys the decoder reads (a new key: decide whether it can change a result, and document it in docs/workspaces.md)"
        );
    }

    /// The projection follows the classification: editing a bound key changes what the
    /// catalog puts into a provider's fingerprint, editing any other key does not.
    #[test]
    fn a_bound_key_moves_the_fingerprint_and_no_other_does() {
        let base = with_keys(EVERY_KEY);
        let before = bound(&base);
        assert!(before.0.is_some() && !before.1.is_empty(), "{before:?}");
        for (key, bearing) in BEARINGS {
            for (from, to) in edits(key) {
                let edited = with_keys(&EVERY_KEY.replacen(from, to, 1));
                assert_ne!(edited, base, "the edit of `{key}` edits nothing");
                let after = bound(&edited);
                match bearing {
                    Bearing::Bound => assert_ne!(after, before, "editing `{key}` ({from} → {to})"),
                    Bearing::Unbound => {
                        assert_eq!(after, before, "editing `{key}` ({from} → {to})")
                    }
                }
            }
        }
        // The one key with no edit: only `1` decodes.
        assert!(edits("version").is_empty());
    }

    /// Order of keys, comments, whitespace, quoting, a trailing `/` and the order of
    /// `hostPaths` mean nothing.
    #[test]
    fn how_the_catalog_is_written_is_not_bound() {
        let rewritten = r#"# the workspace
hostPaths:
  - "~/.cargo/"   # rust
  - '/opt/tool'
logs: {keepBytes: 4096}
cache: {timeoutMs: 5000, remote: "grpc://127.0.0.1:9092", connectTimeoutMs: 1000, minBytesPerSecond: 1000, headersFromEnv: {Authorization: CACHE_TOKEN}, policy: "local:rw,remote:r"}
trustedKeys: [{publicKey: "{key}", name: ci}]
repositories:
  api: {caches: [go-mod], setupInputs: [go.sum], setupCache: [vendor], setup: [[go, mod, download]], path: ./api/}

  app:
    caches: [npm]
    path: "."
    setupInputs: [package-lock.json]
    setupCache: [node_modules]
    setup:
      - [npm, ci]
version: 1
sandbox: worktree
"#;
        assert_eq!(bound(&with_keys(rewritten)), bound(&with_keys(EVERY_KEY)));
    }

    #[test]
    fn a_catalog_that_names_only_the_default_repository_changes_nothing() {
        let implicit = Workspace {
            root: PathBuf::from("/w"),
            catalog: None,
            has_catalog: false,
            repositories: BTreeMap::from([(
                RepoId::root(),
                Repository {
                    id: RepoId::root(),
                    path: ".".to_owned(),
                    dir: PathBuf::from("/w"),
                },
            )]),
            diagnostics: Vec::new(),
        };
        let explicit = workspace("version: 1\nrepositories:\n  root: {path: ./}\n");
        let root = BTreeSet::from([RepoId::root()]);
        let fields = |ws: &Workspace| {
            let setups = setups(ws, &BTreeMap::new(), &BTreeMap::new());
            (
                setups.clone(),
                catalog_fields(ws, &setups, Some(&RepoId::root()), &root),
            )
        };
        assert_eq!(fields(&implicit), fields(&explicit));
    }

    #[test]
    fn paths_are_written_one_way() {
        for (written, canonical) in [
            (".", "."),
            ("./", "."),
            ("", "."),
            ("web/", "web"),
            ("./web", "web"),
            ("a/../b", "b"),
            ("../api", "../api"),
            ("../../x/./y", "../../x/y"),
            ("a//b", "a/b"),
        ] {
            assert_eq!(canonical_path(written), canonical, "{written}");
        }
    }

    /// The catalog file is left out of a snapshot alone: not a file named like it, nor one
    /// below a directory of its name, nor the catalog of an OpenSpec root elsewhere.
    #[test]
    fn only_the_catalog_itself_is_left_out() {
        let exclude = ["openspec/changes/".to_owned(), "proofgraph.yaml".to_owned()];
        for (path, out) in [
            ("proofgraph.yaml", true),
            ("proofgraph.yaml.orig", false),
            ("proofgraph.yaml/x", false),
            ("sub/proofgraph.yaml", false),
            ("openspec/changes", true),
            ("openspec/changes/a/proposal.md", true),
            ("openspec/changesx", false),
        ] {
            assert_eq!(inputs::excluded(path.as_bytes(), &exclude), out, "{path}");
        }
    }

    /// At a revision a program's links are followed as a checkout's file system follows
    /// them, inside the repository; a link that leaves it — above its top, however far, or
    /// absolute — leads to no file of it, never to the file of the same name inside (the
    /// lexical `..` once popped a `..` it had kept, so `../../x` read the repository's `x`).
    #[test]
    fn a_link_that_leaves_the_repository_at_a_revision_reads_nothing() {
        use crate::base::testing::{commit_all, git, write};
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = fs_err::canonicalize(tmp.path()).expect("canonical");
        git(&top, &["init", "-q", "repo"]);
        let dir = top.join("repo");
        write(&dir, "x", "inside\n");
        write(&dir, "bin/tool", "#!/bin/sh\n");
        write(&top, "x", "outside\n");
        for (name, target) in [
            ("tool", "bin/tool"),
            ("bin/x", "../x"),
            ("bin/via", "../tool"),
            ("up", "../x"),
            ("leave", "../../x"),
            ("bin/leave", "../../../x"),
            ("bin/back", "../../repo/x"),
            ("abs", "/etc/hostname"),
            ("chain", "bin/leave"),
        ] {
            std::os::unix::fs::symlink(target, dir.join(name)).expect("symlink");
        }
        commit_all(&dir);
        let revision = Revision::resolve(&dir, "HEAD").expect("HEAD");
        let at = AtRevision([(dir.clone(), &revision)].into());
        let read = |rel: &str| {
            at.read(&dir, Path::new(rel))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        };
        assert_eq!(read("tool").as_deref(), Some("#!/bin/sh\n"));
        assert_eq!(read("bin/x").as_deref(), Some("inside\n"));
        assert_eq!(read("bin/via").as_deref(), Some("#!/bin/sh\n"));
        // `bin/back` comes back in through the checkout's own name: at a revision no
        // checkout exists, so it has left the repository all the same.
        for rel in [
            "up",
            "leave",
            "bin/leave",
            "bin/back",
            "abs",
            "chain",
            "../x",
        ] {
            assert_eq!(read(rel), None, "{rel}");
        }
    }
}
