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
use crate::observe::revision::Revision;
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
    /// What each repository's snapshot left out (change packets), to take it again.
    pub excludes: BTreeMap<RepoId, Vec<String>>,
    /// Findings that do not stop planning (a program not found on PATH).
    pub warnings: Vec<Diagnostic>,
}

/// The prefixes (relative to a repository) a snapshot leaves out, when the OpenSpec root is
/// inside that repository: where change packets live, and the store (never an input, even
/// before it has written the `.gitignore` that keeps git out of it).
pub(crate) fn excluded_prefixes(root: &Path, repo_dir: &Path) -> Vec<String> {
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
        .map(|(id, repo)| (id, excluded_prefixes(&workspace.root, &repo.dir)))
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
        let exclude = excluded_prefixes(&workspace.root, &repo.dir);
        let Some(revision) = revisions.get(id) else {
            continue;
        };
        match revision.snapshot(&repo.dir, &exclude) {
            Ok(s) => {
                snapshots.insert(id.clone(), s);
            }
            Err(super::revision::RevisionError::NameNotUtf8 { rev, name }) => errors.push(
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
        // checkout's file system would.
        let mut path = crate::base::paths::normalize(Path::new(rel));
        for _ in 0..8 {
            let (bytes, kind) = revision.read(dir, path.to_str()?).ok()??;
            if kind != inputs::FileKind::Symlink {
                return Some((bytes, kind));
            }
            let target = PathBuf::from(String::from_utf8(bytes).ok()?);
            if target.is_absolute() {
                return None;
            }
            path =
                crate::base::paths::normalize(&path.parent().unwrap_or(Path::new("")).join(target));
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
    let mut programs = Programs::new(Some(&workspace.root.join(crate::store::DIR)));
    let reports = report_paths(graph);
    for (id, _, provider) in graph.providers() {
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
    let world = World {
        platform: Platform {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
        },
        inputs,
        executables,
        service_executables,
        setups: setups(workspace, &snapshots, &repositories),
        repositories,
    };
    Ok(Observed {
        world,
        snapshots,
        files,
        untracked: untracked_bound,
        programs: resolved,
        service_programs,
        excludes,
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
