//! What git shows of a repository directory, read from the git index and
//! the ignore rules (gix, as the application reads them; no `git` process).
//! A repository may be a directory inside a larger git work tree (a
//! monorepo): its entries are those under its prefix.
//!
//! A sandbox holds the tree `git status` shows — tracked files, and
//! untracked ones git does not ignore — minus `node_modules`, `coverage`,
//! `test-results`, `playwright-report` and `target` unless git tracks them
//! (ARCHITECTURE.md, `sandbox/materialize.rs`). [`Tree::seen`] answers
//! whether a file is in it.

use std::collections::BTreeSet;
use std::path::Path;

/// Directories a sandbox leaves out unless git tracks them (the sandbox
/// crate's list).
pub(crate) const LEFT_OUT: [&str; 5] = [
    "node_modules",
    "coverage",
    "test-results",
    "playwright-report",
    "target",
];

/// How a file of the repository reaches a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Git tracks it.
    Tracked,
    /// Untracked and not ignored: `git status` shows it, so it is an input.
    Untracked,
    /// Git ignores it: no sandbox has it.
    Ignored,
    /// It lies in a directory sandboxes leave out (`node_modules`, …).
    LeftOut(&'static str),
}

/// A repository directory's index and ignore rules.
pub(crate) struct Tree {
    repo: gix::Repository,
    index: gix::worktree::Index,
    /// The directory's path in the work tree, with a trailing `/` (empty at
    /// the top).
    prefix: String,
    tracked: BTreeSet<String>,
}

impl Tree {
    /// Reads `dir`'s work tree; `None` when `dir` is not inside one or its
    /// index cannot be read.
    pub(crate) fn read(dir: &Path) -> Option<Self> {
        let repo = gix::discover(dir).ok()?;
        let workdir = fs_err::canonicalize(repo.workdir()?).ok()?;
        let dir = fs_err::canonicalize(dir).ok()?;
        let prefix = match dir.strip_prefix(&workdir).ok()?.to_str()? {
            "" => String::new(),
            rel => format!("{rel}/"),
        };
        let index = repo.index_or_empty().ok()?;
        let mut tracked = BTreeSet::new();
        for entry in index.entries() {
            let path = entry.path(&index);
            if let Some(rel) = std::str::from_utf8(path.as_ref())
                .ok()
                .and_then(|p| p.strip_prefix(prefix.as_str()))
            {
                tracked.insert(rel.to_owned());
            }
        }
        Some(Self {
            repo,
            index,
            prefix,
            tracked,
        })
    }

    /// Whether git tracks `rel` (relative to the directory).
    /// Every tracked file below the directory, by its path relative to it.
    pub(crate) fn tracked(&self) -> impl Iterator<Item = &str> {
        self.tracked.iter().map(String::as_str)
    }

    pub(crate) fn is_tracked(&self, rel: &str) -> bool {
        self.tracked.contains(rel)
    }

    /// Whether git tracks anything under directory `rel`.
    pub(crate) fn tracks_under(&self, rel: &str) -> bool {
        let dir = format!("{}/", rel.trim_end_matches('/'));
        self.tracked
            .range(dir.clone()..)
            .next()
            .is_some_and(|t| t.starts_with(&dir))
    }

    /// How file `rel` (relative to the directory) reaches a sandbox.
    pub(crate) fn seen(&self, rel: &str) -> Seen {
        if self.is_tracked(rel) {
            return Seen::Tracked;
        }
        if let Some(dir) = rel
            .split('/')
            .collect::<Vec<_>>()
            .split_last()
            .and_then(|(_, dirs)| dirs.iter().find_map(|d| LEFT_OUT.iter().find(|l| *l == d)))
        {
            return Seen::LeftOut(dir);
        }
        if self.ignores(rel) {
            Seen::Ignored
        } else {
            Seen::Untracked
        }
    }

    /// Whether git's ignore rules (`.gitignore` files, `.git/info/exclude`,
    /// `core.excludesFile`) exclude file `rel` or a directory above it.
    fn ignores(&self, rel: &str) -> bool {
        let Ok(mut stack) = self.repo.excludes(
            &self.index,
            None,
            gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
        ) else {
            return false;
        };
        let path = format!("{}{rel}", self.prefix);
        stack
            .at_path(Path::new(&path), Some(gix::index::entry::Mode::FILE))
            .is_ok_and(|p| p.is_excluded())
    }
}
