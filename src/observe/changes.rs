//! The paths that changed in one repository between a revision and a head (another
//! revision, or the working tree): what `plan --base` compares.
//!
//! Which paths are compared is exactly what the two snapshots hold (the same exclusions,
//! no submodule, the working tree's untracked files), walked once side by side. Renames
//! are gix's rewrite tracking (`gix_diff::rewrites::Tracker`, the one its tree diff with
//! `track_rewrites` uses) over the deleted and the added files: first by identical
//! content, in one sorted pass (never every addition against every deletion), then by
//! similarity (at least 50 %, git's `-M` default) while the pairs left to compare are
//! within gix's limit (1 000). Copies are not tracked: a copy leaves its source as it was,
//! so it is an added file, and the source no changed path. Empty files are never paired
//! (as in git: every empty file has the same content).
//!
//! gix's tree diff itself needs a tree on both sides, and the default head, the working
//! tree, is none: its modified and untracked files are not in the object database. Their
//! content is read for the similarity only when they were added (written into an
//! in-memory object store, never the repository's), and only when it still is what the
//! snapshot hashed.

use std::ops::ControlFlow;
use std::path::Path;

use gix::bstr::BStr;
use gix::diff::rewrites::tracker::{Change as Tracked, ChangeKind};
use serde::Serialize;

use crate::observe::inputs::{FileEntry, FileKind, identity};
use crate::observe::repo_at_revision::{Revision, RevisionError};

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PathChange {
    /// New at the head.
    Added,
    /// Gone at the head.
    Deleted,
    /// Other content, or another kind (executable bit, link).
    Modified,
    /// Moved, with its content unchanged or at least 50 % similar (`from` says where from):
    /// for the inputs it reaches, a deletion at `from` and an addition at `path`.
    Renamed,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Changed {
    /// The repository.
    pub repository: String,
    /// The path at the head (at the base when deleted), relative to the repository.
    pub path: String,
    /// How it changed.
    pub change: PathChange,
    /// Where a renamed file was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

impl Changed {
    /// Whether the change touches a path `selects` selects: its path, or where a renamed
    /// file was (a rename is a deletion there and an addition here).
    pub fn touches(&self, selects: impl Fn(&str) -> bool) -> bool {
        selects(&self.path) || self.from.as_deref().is_some_and(selects)
    }
}

/// Where the head's files are read from.
#[derive(Debug, Clone, Copy)]
pub enum Head<'a> {
    /// A revision of the same git repository as the base.
    Revision(&'a Revision),
    /// The working tree: the directory the files are relative to.
    WorkTree,
}

/// What the rename tracking did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracking {
    /// Pairs of files whose contents were compared for similarity.
    pub similarity_checks: usize,
    /// Pairs left uncompared because there were more than the limit (then only identical
    /// contents are renames).
    pub skipped: usize,
}

/// The changes between two snapshots of one repository, each sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The changed paths, sorted.
    pub changed: Vec<Changed>,
    /// What the rename tracking did.
    pub tracking: Tracking,
}

/// gix's rewrite tracking as the plan uses it: renames only, 50 % similar, at most 1 000
/// pairs compared, empty files left out (gix's and git's defaults).
pub fn rewrites() -> gix::diff::Rewrites {
    gix::diff::Rewrites {
        copies: None,
        percentage: Some(0.5),
        limit: 1000,
        track_empty: false,
    }
}

/// The changed paths of `repository` (files under `dir`) from `base` (the files of a
/// revision) to `head` (its files, read where `head`'s kind says).
pub fn between(
    repository: &str,
    dir: &Path,
    base: (&Revision, &[FileEntry]),
    head: (Head<'_>, &[FileEntry]),
) -> Result<Changes, RevisionError> {
    let walk = walk(base.1, head.1);
    let mut changed: Vec<Changed> = walk
        .modified
        .iter()
        .map(|f| change(repository, &f.path, PathChange::Modified, None))
        .collect();
    let mut tracking = Tracking::default();
    if walk.added.is_empty() || walk.deleted.is_empty() {
        changed.extend(
            walk.added
                .iter()
                .map(|f| change(repository, &f.path, PathChange::Added, None)),
        );
        changed.extend(
            walk.deleted
                .iter()
                .map(|f| change(repository, &f.path, PathChange::Deleted, None)),
        );
    } else {
        tracking = renames(repository, dir, base.0, head.0, &walk, &mut changed)?;
    }
    changed.sort();
    Ok(Changes { changed, tracking })
}

fn change(repository: &str, path: &str, how: PathChange, from: Option<&str>) -> Changed {
    Changed {
        repository: repository.to_owned(),
        path: path.to_owned(),
        change: how,
        from: from.map(str::to_owned),
    }
}

/// The two snapshots walked side by side.
struct Walk<'a> {
    modified: Vec<&'a FileEntry>,
    added: Vec<&'a FileEntry>,
    deleted: Vec<&'a FileEntry>,
}

fn walk<'a>(base: &'a [FileEntry], head: &'a [FileEntry]) -> Walk<'a> {
    let mut out = Walk {
        modified: Vec::new(),
        added: Vec::new(),
        deleted: Vec::new(),
    };
    let (mut i, mut j) = (0, 0);
    loop {
        match (base.get(i), head.get(j)) {
            (Some(b), Some(h)) if b.path == h.path => {
                if b.id != h.id || b.kind != h.kind {
                    out.modified.push(h);
                }
                i += 1;
                j += 1;
            }
            (Some(b), Some(h)) if b.path < h.path => {
                out.deleted.push(b);
                i += 1;
            }
            (Some(b), None) => {
                out.deleted.push(b);
                i += 1;
            }
            (_, Some(h)) => {
                out.added.push(h);
                j += 1;
            }
            (None, None) => return out,
        }
    }
}

/// An addition or a deletion handed to gix's tracker: its blob, and which file it is.
#[derive(Debug, Clone)]
struct Item {
    id: gix::ObjectId,
    mode: gix::objs::tree::EntryMode,
    kind: ChangeKind,
    /// Its index among the walk's added or deleted files.
    index: usize,
}

impl Tracked for Item {
    fn id(&self) -> &gix::oid {
        &self.id
    }

    fn relation(&self) -> Option<gix::diff::tree::visit::Relation> {
        None
    }

    fn kind(&self) -> ChangeKind {
        self.kind
    }

    fn entry_mode(&self) -> gix::objs::tree::EntryMode {
        self.mode
    }

    fn id_and_entry_mode(&self) -> (&gix::oid, gix::objs::tree::EntryMode) {
        (&self.id, self.mode)
    }
}

fn mode(kind: FileKind) -> gix::objs::tree::EntryMode {
    match kind {
        FileKind::File => gix::objs::tree::EntryKind::Blob,
        FileKind::Executable => gix::objs::tree::EntryKind::BlobExecutable,
        FileKind::Symlink => gix::objs::tree::EntryKind::Link,
    }
    .into()
}

/// Pairs the walk's deletions with its additions through gix's tracker, pushing every
/// addition and deletion into `out` (renamed, or as it is).
fn renames(
    repository: &str,
    dir: &Path,
    base: &Revision,
    head: Head<'_>,
    walk: &Walk<'_>,
    out: &mut Vec<Changed>,
) -> Result<Tracking, RevisionError> {
    // Objects written here (the working tree's added files) stay in memory.
    let repo = base.repository().clone().with_object_memory();
    fn paths<'a>(files: &[&'a FileEntry]) -> Vec<&'a str> {
        files.iter().map(|f| f.path.as_str()).collect()
    }
    let deleted_ids = base.blobs(dir, &paths(&walk.deleted))?;
    let added_ids = match head {
        Head::Revision(r) => r.blobs(dir, &paths(&walk.added))?,
        Head::WorkTree => walk
            .added
            .iter()
            .map(|f| worktree_blob(&repo, dir, f))
            .collect(),
    };
    let mut tracker = gix::diff::rewrites::Tracker::new(rewrites());
    let sides = [
        (
            &walk.deleted,
            deleted_ids,
            ChangeKind::Deletion,
            PathChange::Deleted,
        ),
        (
            &walk.added,
            added_ids,
            ChangeKind::Addition,
            PathChange::Added,
        ),
    ];
    for (files, ids, kind, as_is) in sides {
        for (index, (file, id)) in files.iter().zip(ids).enumerate() {
            // Only a blob that is what the snapshot holds can be paired.
            match id.filter(|id| identity(id) == file.id) {
                Some(id) => {
                    let item = Item {
                        id,
                        mode: mode(file.kind),
                        kind,
                        index,
                    };
                    let _accepted = tracker.try_push_change(item, BStr::new(file.path.as_bytes()));
                }
                None => out.push(change(repository, &file.path, as_is, None)),
            }
        }
    }
    let mut cache = repo
        .diff_resource_cache_for_tree_diff()
        .map_err(|e| base.read_error(e))?;
    let outcome = tracker
        .emit(
            |destination, source| {
                let file = match destination.change.kind {
                    ChangeKind::Deletion => walk.deleted[destination.change.index],
                    _ => walk.added[destination.change.index],
                };
                out.push(match (destination.change.kind, source) {
                    (ChangeKind::Deletion, _) => {
                        change(repository, &file.path, PathChange::Deleted, None)
                    }
                    (_, Some(from)) => change(
                        repository,
                        &file.path,
                        PathChange::Renamed,
                        Some(&walk.deleted[from.change.index].path),
                    ),
                    (_, None) => change(repository, &file.path, PathChange::Added, None),
                });
                ControlFlow::Continue(())
            },
            &mut cache,
            &repo.objects,
            |_| Ok::<(), std::convert::Infallible>(()),
        )
        .map_err(|e| base.read_error(e))?;
    Ok(Tracking {
        similarity_checks: outcome.num_similarity_checks,
        skipped: outcome.num_similarity_checks_skipped_for_rename_tracking_due_to_limit,
    })
}

/// The blob of an added file of the working tree, written into `repo`'s in-memory objects
/// (its content, or a link's target); `None` when it cannot be read.
fn worktree_blob(repo: &gix::Repository, dir: &Path, file: &FileEntry) -> Option<gix::ObjectId> {
    let path = dir.join(&file.path);
    let bytes = match file.kind {
        FileKind::Symlink => {
            use std::os::unix::ffi::OsStrExt as _;
            fs_err::read_link(&path)
                .ok()?
                .as_os_str()
                .as_bytes()
                .to_vec()
        }
        FileKind::File | FileKind::Executable => fs_err::read(&path).ok()?,
    };
    repo.write_blob(bytes).ok().map(gix::Id::detach)
}

#[cfg(test)]
mod tests;
