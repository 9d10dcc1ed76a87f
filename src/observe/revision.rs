//! A repository's files at a revision, read from git's object database (gix): no
//! checkout, no working tree, no index. What `plan --base --head` compares, and what its
//! fingerprints at a revision are computed from.
//!
//! A file's identity is its blob id, exactly as a snapshot of a clean checkout of the
//! revision gives it ([`crate::observe::inputs`] trusts the index, whose ids are the
//! tree's), so a fingerprint computed here equals the one computed in such a checkout.
//! Submodules (gitlinks) are not files, as in a snapshot; what a checkout would not hold
//! either (untracked files) does not exist at a revision.

use std::path::{Path, PathBuf};

use crate::observe::inputs::{FileEntry, FileKind, Snapshot, identity};

/// Why a revision cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// The directory is not in a git repository.
    #[error("{} is not in a git repository: {message}", dir.display())]
    NotARepository {
        /// The directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
    /// The revision names nothing in that repository.
    #[error("`{rev}` names no commit or tree in the git repository at {}: {message}", workdir.display())]
    Unknown {
        /// The revision as given.
        rev: String,
        /// The repository's work tree.
        workdir: PathBuf,
        /// Why.
        message: String,
    },
    /// An object could not be read.
    #[error("the git repository at {} cannot be read at `{rev}`: {message}", workdir.display())]
    Read {
        /// The revision as given.
        rev: String,
        /// The repository's work tree.
        workdir: PathBuf,
        /// Why.
        message: String,
    },
}

/// A revision of the git repository that holds a directory: the tree it names, and where
/// the directory lies in it.
pub struct Revision {
    repo: gix::Repository,
    rev: String,
    workdir: PathBuf,
    /// The tree the revision names.
    tree: gix::ObjectId,
    /// The commit it names, when it names one.
    pub commit: Option<gix::ObjectId>,
}

impl std::fmt::Debug for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revision")
            .field("rev", &self.rev)
            .field("workdir", &self.workdir)
            .field("tree", &self.tree)
            .finish_non_exhaustive()
    }
}

impl Revision {
    /// Resolves `rev` (a branch, tag, `origin/main`, `HEAD~3`, an object id) in the git
    /// repository that holds `dir`.
    pub fn resolve(dir: &Path, rev: &str) -> Result<Self, RevisionError> {
        let repo = gix::discover(dir).map_err(|e| RevisionError::NotARepository {
            dir: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let workdir = repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| repo.git_dir().to_path_buf());
        let workdir = fs_err::canonicalize(&workdir).unwrap_or(workdir);
        let unknown = |message: String| RevisionError::Unknown {
            rev: rev.to_owned(),
            workdir: workdir.clone(),
            message,
        };
        let id = repo
            .rev_parse_single(rev)
            .map_err(|e| unknown(e.to_string()))?;
        let object = id.object().map_err(|e| unknown(e.to_string()))?;
        let commit = (object.kind == gix::object::Kind::Commit).then_some(object.id);
        let tree = object
            .peel_to_tree()
            .map_err(|e| unknown(format!("it is not a commit or a tree ({e})")))?
            .id;
        Ok(Self {
            rev: rev.to_owned(),
            workdir,
            tree,
            commit,
            repo,
        })
    }

    /// The revision as given.
    pub fn rev(&self) -> &str {
        &self.rev
    }

    /// The repository's work tree (canonical).
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The tree the revision names.
    pub fn tree_id(&self) -> gix::ObjectId {
        self.tree
    }

    fn read_error(&self, message: impl ToString) -> RevisionError {
        RevisionError::Read {
            rev: self.rev.clone(),
            workdir: self.workdir.clone(),
            message: message.to_string(),
        }
    }

    /// Where `dir` lies in the work tree: `""` for its top, else `a/b/`.
    fn prefix_of(&self, dir: &Path) -> Result<String, RevisionError> {
        let dir = fs_err::canonicalize(dir).map_err(|e| self.read_error(e))?;
        let rel = dir
            .strip_prefix(&self.workdir)
            .map_err(|_| self.read_error(format!("{} is outside it", dir.display())))?;
        let rel = rel.to_string_lossy();
        Ok(if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        })
    }

    /// The files under `dir` (a directory of this repository's work tree) at this
    /// revision, as a snapshot of a checkout of it sees them: paths relative to `dir`,
    /// sorted, leaving out any path under one of `exclude` (prefixes relative to `dir`).
    pub fn snapshot(&self, dir: &Path, exclude: &[String]) -> Result<Snapshot, RevisionError> {
        let mut files = match self.subtree(dir)? {
            Some(tree) => self.files_of(&tree, exclude)?,
            // Not a directory at this revision: no files.
            None => Vec::new(),
        };
        files.sort();
        Ok(Snapshot {
            dir: dir.to_path_buf(),
            files,
            rehashed: 0,
        })
    }

    /// The files of `tree` (paths relative to it), leaving out any under `exclude`.
    fn files_of(
        &self,
        tree: &gix::Tree<'_>,
        exclude: &[String],
    ) -> Result<Vec<FileEntry>, RevisionError> {
        Ok(self
            .entries_of(tree, exclude)?
            .into_iter()
            .map(|(path, kind, oid)| FileEntry {
                path,
                id: identity(&oid),
                kind,
            })
            .collect())
    }

    /// The files of `tree` with their blob ids (paths relative to it), leaving out any
    /// under `exclude`.
    fn entries_of(
        &self,
        tree: &gix::Tree<'_>,
        exclude: &[String],
    ) -> Result<Vec<(String, FileKind, gix::ObjectId)>, RevisionError> {
        let mut recorder = gix::traverse::tree::Recorder::default();
        tree.traverse()
            .breadthfirst(&mut recorder)
            .map_err(|e| self.read_error(e))?;
        Ok(recorder
            .records
            .into_iter()
            .filter_map(|entry| {
                let kind = match entry.mode.kind() {
                    gix::object::tree::EntryKind::Blob => FileKind::File,
                    gix::object::tree::EntryKind::BlobExecutable => FileKind::Executable,
                    gix::object::tree::EntryKind::Link => FileKind::Symlink,
                    gix::object::tree::EntryKind::Tree | gix::object::tree::EntryKind::Commit => {
                        return None;
                    }
                };
                let path = String::from_utf8(entry.filepath.into()).ok()?;
                if exclude.iter().any(|e| path.starts_with(e.as_str())) {
                    return None;
                }
                Some((path, kind, entry.oid))
            })
            .collect())
    }

    /// The tree under `dir` (a directory of this repository's work tree) at this revision;
    /// `None` when it is not a directory there.
    fn subtree(&self, dir: &Path) -> Result<Option<gix::Tree<'_>>, RevisionError> {
        let prefix = self.prefix_of(dir)?;
        let root = self
            .repo
            .find_object(self.tree)
            .map_err(|e| self.read_error(e))?
            .into_tree();
        if prefix.is_empty() {
            return Ok(Some(root));
        }
        match root
            .lookup_entry_by_path(prefix.trim_end_matches('/'))
            .map_err(|e| self.read_error(e))?
        {
            Some(entry) if entry.mode().is_tree() => Ok(Some(
                entry.object().map_err(|e| self.read_error(e))?.into_tree(),
            )),
            _ => Ok(None),
        }
    }

    /// Writes into the repository's object database the tree of the files under `dir` at
    /// this revision that `keep` selects (by their path relative to `dir`), the tree a
    /// [`Recorder`](crate::observe::record::Recorder) makes of the same files, and returns
    /// its id with every file under `dir` at this revision (selected or not).
    pub fn extract(
        &self,
        dir: &Path,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<(gix::ObjectId, Vec<FileEntry>), RevisionError> {
        let entries = match self.subtree(dir)? {
            Some(tree) => self.entries_of(&tree, &[])?,
            None => Vec::new(),
        };
        let mut editor = self
            .repo
            .edit_tree(gix::ObjectId::empty_tree(self.repo.object_hash()))
            .map_err(|e| self.read_error(e))?;
        for (path, kind, oid) in entries.iter().filter(|(p, _, _)| keep(p)) {
            let kind = match kind {
                FileKind::File => gix::object::tree::EntryKind::Blob,
                FileKind::Executable => gix::object::tree::EntryKind::BlobExecutable,
                FileKind::Symlink => gix::object::tree::EntryKind::Link,
            };
            editor
                .upsert(path.as_str(), kind, *oid)
                .map_err(|e| self.read_error(e))?;
        }
        let tree = editor.write().map_err(|e| self.read_error(e))?.detach();
        let mut files: Vec<FileEntry> = entries
            .into_iter()
            .map(|(path, kind, oid)| FileEntry {
                path,
                id: identity(&oid),
                kind,
            })
            .collect();
        files.sort();
        Ok((tree, files))
    }

    /// Every file of the whole tree the revision names (paths relative to its top), sorted.
    pub fn files(&self) -> Result<Vec<FileEntry>, RevisionError> {
        let root = self
            .repo
            .find_object(self.tree)
            .map_err(|e| self.read_error(e))?
            .into_tree();
        let mut files = self.files_of(&root, &[])?;
        files.sort();
        Ok(files)
    }

    /// Writes every file of the whole tree into `dest` (an empty directory): contents,
    /// executable bits and links as a checkout makes them.
    pub fn write_to(&self, dest: &Path) -> Result<(), RevisionError> {
        use std::os::unix::fs::PermissionsExt as _;
        let root = self
            .repo
            .find_object(self.tree)
            .map_err(|e| self.read_error(e))?
            .into_tree();
        let mut recorder = gix::traverse::tree::Recorder::default();
        root.traverse()
            .breadthfirst(&mut recorder)
            .map_err(|e| self.read_error(e))?;
        for entry in recorder.records {
            let Ok(path) = String::from_utf8(entry.filepath.into()) else {
                continue;
            };
            let target = dest.join(&path);
            let kind = entry.mode.kind();
            if matches!(kind, gix::object::tree::EntryKind::Commit) {
                continue;
            }
            if matches!(kind, gix::object::tree::EntryKind::Tree) {
                fs_err::create_dir_all(&target).map_err(|e| self.read_error(e))?;
                continue;
            }
            if let Some(parent) = target.parent() {
                fs_err::create_dir_all(parent).map_err(|e| self.read_error(e))?;
            }
            let data = self
                .repo
                .find_object(entry.oid)
                .map_err(|e| self.read_error(e))?
                .detach()
                .data;
            match kind {
                gix::object::tree::EntryKind::Link => {
                    let link = String::from_utf8(data).map_err(|e| self.read_error(e))?;
                    std::os::unix::fs::symlink(link, &target).map_err(|e| self.read_error(e))?;
                }
                _ => {
                    fs_err::write(&target, &data).map_err(|e| self.read_error(e))?;
                    if matches!(kind, gix::object::tree::EntryKind::BlobExecutable) {
                        fs_err::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                            .map_err(|e| self.read_error(e))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The bytes and kind of `path` (relative to `dir`) at this revision, following no
    /// link; `None` when there is no such file.
    pub fn read(
        &self,
        dir: &Path,
        path: &str,
    ) -> Result<Option<(Vec<u8>, FileKind)>, RevisionError> {
        let prefix = self.prefix_of(dir)?;
        let full = format!("{prefix}{path}");
        let root = self
            .repo
            .find_object(self.tree)
            .map_err(|e| self.read_error(e))?
            .into_tree();
        let Some(entry) = root
            .lookup_entry_by_path(&full)
            .map_err(|e| self.read_error(e))?
        else {
            return Ok(None);
        };
        let kind = match entry.mode().kind() {
            gix::object::tree::EntryKind::Blob => FileKind::File,
            gix::object::tree::EntryKind::BlobExecutable => FileKind::Executable,
            gix::object::tree::EntryKind::Link => FileKind::Symlink,
            gix::object::tree::EntryKind::Tree | gix::object::tree::EntryKind::Commit => {
                return Ok(None);
            }
        };
        let object = entry.object().map_err(|e| self.read_error(e))?;
        Ok(Some((object.detach().data, kind)))
    }
}
