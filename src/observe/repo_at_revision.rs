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
        /// Whether the repository's history is shallow (a `--depth` clone), so the
        /// revision may exist beyond what it has.
        shallow: bool,
        /// The remotes the repository knows.
        remotes: Vec<String>,
    },
    /// A file at the revision has a name that is not UTF-8: it cannot be bound.
    #[error("`{name}` at `{rev}` has a name that is not UTF-8")]
    NameNotUtf8 {
        /// The revision as given.
        rev: String,
        /// The name relative to the tree, non-UTF-8 bytes escaped.
        name: String,
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
        let (repo, workdir) = Self::open(dir)?;
        let unknown = |message: String| RevisionError::Unknown {
            rev: rev.to_owned(),
            workdir: workdir.clone(),
            message,
            shallow: repo.is_shallow(),
            remotes: repo
                .remote_names()
                .into_iter()
                .map(|n| n.to_string())
                .collect(),
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

    /// The git repository that holds `dir`, and its work tree (canonical).
    fn open(dir: &Path) -> Result<(gix::Repository, PathBuf), RevisionError> {
        let repo = gix::discover(dir).map_err(|e| RevisionError::NotARepository {
            dir: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let workdir = repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| repo.git_dir().to_path_buf());
        let workdir = fs_err::canonicalize(&workdir).unwrap_or(workdir);
        Ok((repo, workdir))
    }

    /// The work tree (canonical) of the git repository that holds `dir`: a submodule's or
    /// a nested clone's own, not its parent's.
    pub fn work_tree(dir: &Path) -> Result<PathBuf, RevisionError> {
        Self::open(dir).map(|(_, workdir)| workdir)
    }

    /// The commit this revision records for the git repository whose work tree is `dir`
    /// (a directory of this repository's work tree): the gitlink a submodule, or a nested
    /// repository added as one, has at its path; `None` when there is none there.
    pub fn gitlink(&self, dir: &Path) -> Result<Option<gix::ObjectId>, RevisionError> {
        let prefix = self.prefix_of(dir)?;
        let prefix = prefix.trim_end_matches('/');
        if prefix.is_empty() {
            return Ok(None);
        }
        let root = self
            .repo
            .find_object(self.tree)
            .map_err(|e| self.read_error(e))?
            .into_tree();
        Ok(root
            .lookup_entry_by_path(prefix)
            .map_err(|e| self.read_error(e))?
            .filter(|entry| entry.mode().is_commit())
            .map(|entry| entry.object_id()))
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
        let mut out = Vec::new();
        for entry in recorder.records {
            let kind = match entry.mode.kind() {
                gix::object::tree::EntryKind::Blob => FileKind::File,
                gix::object::tree::EntryKind::BlobExecutable => FileKind::Executable,
                gix::object::tree::EntryKind::Link => FileKind::Symlink,
                gix::object::tree::EntryKind::Tree | gix::object::tree::EntryKind::Commit => {
                    continue;
                }
            };
            let bytes: &[u8] = entry.filepath.as_ref();
            if super::inputs::excluded(bytes, exclude) {
                continue;
            }
            // A name that is not UTF-8 cannot be bound: never a file silently left out.
            let Ok(path) = std::str::from_utf8(bytes).map(str::to_owned) else {
                return Err(RevisionError::NameNotUtf8 {
                    rev: self.rev.clone(),
                    name: bytes.escape_ascii().to_string(),
                });
            };
            out.push((path, kind, entry.oid));
        }
        Ok(out)
    }

    /// The blob ids of `paths` (relative to `dir`, a directory of this repository's work
    /// tree) at this revision, in their order: `None` for one that is no file there.
    pub fn blobs(
        &self,
        dir: &Path,
        paths: &[&str],
    ) -> Result<Vec<Option<gix::ObjectId>>, RevisionError> {
        let Some(tree) = self.subtree(dir)? else {
            return Ok(vec![None; paths.len()]);
        };
        // A few paths are looked up; many, in one traversal of the tree.
        if paths.len() <= 16 {
            return paths
                .iter()
                .map(|path| {
                    Ok(tree
                        .lookup_entry_by_path(path)
                        .map_err(|e| self.read_error(e))?
                        .filter(|entry| entry.mode().is_blob_or_symlink())
                        .map(|entry| entry.object_id()))
                })
                .collect();
        }
        let all: std::collections::HashMap<String, gix::ObjectId> = self
            .entries_of(&tree, &[])?
            .into_iter()
            .map(|(path, _, oid)| (path, oid))
            .collect();
        Ok(paths.iter().map(|path| all.get(*path).copied()).collect())
    }

    /// The git repository the revision is read from.
    pub fn repository(&self) -> &gix::Repository {
        &self.repo
    }

    /// Why reading from this revision failed.
    pub(crate) fn read_error(&self, message: impl ToString) -> RevisionError {
        RevisionError::Read {
            rev: self.rev.clone(),
            workdir: self.workdir.clone(),
            message: message.to_string(),
        }
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
    /// [`Recorder`](crate::observe::input_trees::Recorder) makes of the same files, and returns
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
            // Names as bytes: a checkout holds every file, whatever its name.
            let target = dest.join(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                    entry.filepath.as_ref(),
                ),
            );
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

    /// Where `path` (relative to `dir`) leads when an existing part of its literal prefix
    /// (up to the first glob character) resolves outside `dir` through a link at this
    /// revision — what a checkout of it would show (`preflight`'s working-tree check, read
    /// from objects). Links are followed as the file system would, forty deep.
    pub fn escape(&self, dir: &Path, path: &str) -> Option<PathBuf> {
        let prefix = self.prefix_of(dir).ok()?;
        let canonical = fs_err::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let root = self.repo.find_object(self.tree).ok()?.into_tree();
        let mut queue: std::collections::VecDeque<String> = Path::new(path)
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(part) => part.to_str().map(str::to_owned),
                _ => None,
            })
            .take_while(|part| !part.contains(['*', '?', '[', '{']))
            .collect();
        let mut at: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(part) = queue.pop_front() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if at.pop().is_none() {
                        let rest: Vec<String> = queue.into_iter().collect();
                        return Some(dir.join("..").join(rest.join("/")));
                    }
                    continue;
                }
                _ => at.push(part),
            }
            let full = format!("{prefix}{}", at.join("/"));
            let entry = root.lookup_entry_by_path(&full).ok()??;
            match entry.mode().kind() {
                gix::object::tree::EntryKind::Tree => {}
                gix::object::tree::EntryKind::Link => {
                    hops += 1;
                    if hops > 40 {
                        return None;
                    }
                    let target = String::from_utf8(entry.object().ok()?.detach().data).ok()?;
                    at.pop();
                    let target = if target.starts_with('/') {
                        // An absolute link is inside only when it names the checkout itself.
                        let Ok(inside) = Path::new(&target).strip_prefix(&canonical) else {
                            return Some(PathBuf::from(target));
                        };
                        at.clear();
                        inside.to_str()?.to_owned()
                    } else {
                        target
                    };
                    for part in target.split('/').rev() {
                        queue.push_front(part.to_owned());
                    }
                }
                // A file: nothing below it exists.
                _ => return None,
            }
        }
        None
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{commit_all, git, write};
    use crate::load::preflight::{Links, WorkingTree};

    /// A path escapes through a link at a revision exactly when it does in a checkout of
    /// it: links inside and out, relative and absolute, chained, dangling, looping, a
    /// directory of a monorepo, a glob after the literal prefix.
    #[test]
    fn a_link_escapes_at_a_revision_as_in_its_checkout() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = fs_err::canonicalize(tmp.path()).expect("canonical");
        let repo = top.join("repo");
        let dir = repo.join("pkg");
        fs_err::create_dir_all(top.join("outside/deep")).expect("mkdir");
        git(&top, &["init", "-q", "repo"]);
        write(&dir, "src/a.txt", "a\n");
        write(&dir, "src/deeper/b.txt", "b\n");
        write(&dir, "file.txt", "f\n");
        write(&repo, "sibling/c.txt", "c\n");
        let link = |name: &str, target: &str| {
            let at = dir.join(name);
            fs_err::create_dir_all(at.parent().expect("parent")).expect("mkdir");
            std::os::unix::fs::symlink(target, at).expect("symlink");
        };
        link("inside", "src");
        link("out", "../../outside");
        link("sibling", "../sibling");
        link("abs_in", dir.join("src").to_str().expect("utf-8"));
        link("abs_out", top.join("outside").to_str().expect("utf-8"));
        link("src/up", "../../../outside/deep");
        link("chain", "inside/up");
        link("dangling_out", "../../nowhere");
        link("dangling_in", "src/nowhere");
        link("loop1", "loop2");
        link("loop2", "loop1");
        link("dot", "./src/./deeper/..");
        commit_all(&repo);
        let revision = Revision::resolve(&dir, "HEAD").expect("HEAD");
        let id = proofgraph_graph::RepoId::parse("pkg").expect("id");
        for path in [
            "src/**",
            "inside/a.txt",
            "inside/deeper/**",
            "out/x",
            "out/**",
            "sibling/c.txt",
            "abs_in/a.txt",
            "abs_out/x",
            "src/up/x",
            "chain/x",
            "dangling_out/x",
            "dangling_in/x",
            "loop1/x",
            "dot/a.txt",
            "file.txt/x",
            "missing/x",
            "*.txt",
            "out",
        ] {
            let checkout = WorkingTree.escape(&id, &dir, path).is_some();
            let at = revision.escape(&dir, path).is_some();
            assert_eq!(
                at, checkout,
                "{path}: at the revision {at}, in the checkout {checkout}"
            );
        }
        // And what must be so, whatever the two say.
        for (path, escapes) in [
            ("inside/a.txt", false),
            ("out/x", true),
            ("sibling/c.txt", true),
            ("abs_in/a.txt", false),
            ("chain/x", true),
            ("dangling_out/x", true),
            ("dot/a.txt", false),
        ] {
            assert_eq!(revision.escape(&dir, path).is_some(), escapes, "{path}");
        }
    }
}
