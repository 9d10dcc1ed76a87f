//! What a receipt records of the files it bound, so that they can be had again after the
//! working tree moved on (`rerun`): per repository, a git tree object of exactly those
//! files, written into that repository's object database and kept reachable under
//! `refs/proofgraph/inputs/<tree id>` so that `git gc` keeps it.
//!
//! A file whose blob the index already holds (every clean tracked file) costs a lookup:
//! nothing is written for it. A modified or untracked file is read again, checked against
//! the identity it was fingerprinted with, and written as a blob; a file that no longer has
//! that identity fails the recording (the receipt then records no tree, and says so),
//! never a tree of other content. Trees with the same files are the same object, written
//! once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use proofgraph_graph::RepoId;
use proofgraph_graph::fingerprint::Digest;

use crate::observe::git_id::GitId;
use crate::observe::inputs::{FileKind, bytes_identity, identity};

/// The namespace of the refs that keep recorded trees.
pub const REF_PREFIX: &str = "refs/proofgraph/inputs/";

/// What a receipt records of the files it bound, per repository (by its name in the
/// workspace): the tree, and the commit checked out when it was recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Per repository, the tree of exactly the bound files.
    pub trees: std::collections::BTreeMap<RepoId, GitId>,
    /// Per repository of `trees`, the commit its work tree had checked out.
    pub commits: std::collections::BTreeMap<RepoId, GitId>,
}

/// Why a tree could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The directory is not in a git repository.
    #[error("{} is not in a git repository: {message}", dir.display())]
    NotARepository {
        /// The directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
    /// A bound file no longer has the content it was fingerprinted with.
    #[error("`{path}` changed since it was fingerprinted")]
    Moved {
        /// The path, relative to the repository.
        path: String,
    },
    /// Git's object database or refs could not be written or read.
    #[error("the git repository at {} could not record the inputs: {message}", workdir.display())]
    Git {
        /// The work tree.
        workdir: PathBuf,
        /// Why.
        message: String,
    },
}

/// One git repository, opened once per recorder.
struct Git {
    repo: gix::Repository,
    workdir: PathBuf,
    /// The index's blob id of each path (relative to the work tree), read once.
    index: Option<HashMap<String, gix::ObjectId>>,
}

/// Records trees for the receipts of one run.
#[derive(Default)]
pub struct Recorder {
    repos: Vec<Git>,
    /// (work tree, prefix, files) digest → tree, for providers that bound the same files.
    done: HashMap<[u8; 32], gix::ObjectId>,
}

impl Recorder {
    /// A recorder with nothing opened yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn git_for(&mut self, dir: &Path) -> Result<(usize, String), RecordError> {
        let canonical = fs_err::canonicalize(dir).map_err(|e| RecordError::NotARepository {
            dir: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let known = self.repos.iter().position(|g| {
            canonical.starts_with(&g.workdir)
                && !canonical
                    .ancestors()
                    .take_while(|a| *a != g.workdir)
                    .any(|a| a.join(".git").exists())
        });
        let i = match known {
            Some(i) => i,
            None => {
                let repo = gix::discover(&canonical).map_err(|e| RecordError::NotARepository {
                    dir: dir.to_path_buf(),
                    message: e.to_string(),
                })?;
                let workdir = repo.workdir().map(Path::to_path_buf).ok_or_else(|| {
                    RecordError::NotARepository {
                        dir: dir.to_path_buf(),
                        message: "it is a bare repository".to_owned(),
                    }
                })?;
                let workdir = fs_err::canonicalize(&workdir).unwrap_or(workdir);
                self.repos.push(Git {
                    repo,
                    workdir,
                    index: None,
                });
                self.repos.len() - 1
            }
        };
        let rel = canonical
            .strip_prefix(&self.repos[i].workdir)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        Ok((i, prefix))
    }

    /// Writes the tree of `files` (paths relative to `dir`, a repository of the workspace,
    /// with their kind and the identity they were fingerprinted with) into the object
    /// database of the git repository holding `dir`, keeps it under a ref, and returns
    /// its id. The tree's paths are relative to `dir`.
    pub fn record(
        &mut self,
        dir: &Path,
        files: &[(&str, FileKind, Digest)],
    ) -> Result<gix::ObjectId, RecordError> {
        let (i, prefix) = self.git_for(dir)?;
        let mut key = blake3::Hasher::new();
        key.update(self.repos[i].workdir.as_os_str().as_encoded_bytes());
        key.update(&[0]);
        key.update(prefix.as_bytes());
        for (path, kind, id) in files {
            key.update(&[0]);
            key.update(path.as_bytes());
            key.update(&[*kind as u8]);
            key.update(&id.0);
        }
        let key: [u8; 32] = key.finalize().into();
        if let Some(tree) = self.done.get(&key) {
            return Ok(*tree);
        }
        let git = &mut self.repos[i];
        let fail = |message: String| RecordError::Git {
            workdir: git.workdir.clone(),
            message,
        };
        if git.index.is_none() {
            let index = git.repo.index_or_empty().map_err(|e| fail(e.to_string()))?;
            let map = index
                .entries()
                .iter()
                .filter(|e| e.stage_raw() == 0)
                .map(|e| (e.path(&index).to_string(), e.id))
                .collect();
            git.index = Some(map);
        }
        let repo = &git.repo;
        let index = git.index.as_ref().expect("read above");
        let hash_kind = repo.object_hash();
        let mut editor = repo
            .edit_tree(gix::ObjectId::empty_tree(hash_kind))
            .map_err(|e| fail(e.to_string()))?;
        for (path, kind, id) in files {
            let full = format!("{prefix}{path}");
            let known = index
                .get(&full)
                .filter(|oid| identity(oid) == *id && repo.has_object(*oid))
                .copied();
            let oid = match known {
                Some(oid) => oid,
                None => {
                    let file = dir.join(path);
                    let content = if *kind == FileKind::Symlink {
                        fs_err::read_link(&file).map(|t| t.into_os_string().into_encoded_bytes())
                    } else {
                        fs_err::read(&file)
                    }
                    .map_err(|_| RecordError::Moved {
                        path: (*path).to_owned(),
                    })?;
                    if bytes_identity(&content, hash_kind).ok() != Some(*id) {
                        return Err(RecordError::Moved {
                            path: (*path).to_owned(),
                        });
                    }
                    repo.write_blob(&content)
                        .map_err(|e| fail(e.to_string()))?
                        .detach()
                }
            };
            let entry = match kind {
                FileKind::File => gix::object::tree::EntryKind::Blob,
                FileKind::Executable => gix::object::tree::EntryKind::BlobExecutable,
                FileKind::Symlink => gix::object::tree::EntryKind::Link,
            };
            editor
                .upsert(*path, entry, oid)
                .map_err(|e| fail(e.to_string()))?;
        }
        let tree = editor.write().map_err(|e| fail(e.to_string()))?.detach();
        keep_in(repo, tree).map_err(fail)?;
        self.done.insert(key, tree);
        Ok(tree)
    }

    /// The commit checked out in the git repository holding `dir` (its `HEAD`), which a
    /// receipt names beside its tree so that a clone elsewhere can rebuild the tree from
    /// it; `None` for an unborn branch or a directory in no repository.
    pub fn head(&mut self, dir: &Path) -> Option<gix::ObjectId> {
        let (i, _) = self.git_for(dir).ok()?;
        self.repos[i].repo.head_id().ok().map(gix::Id::detach)
    }
}

/// Keeps `tree` reachable under `refs/proofgraph/inputs/<tree>` in `repo`.
fn keep_in(repo: &gix::Repository, tree: gix::ObjectId) -> Result<(), String> {
    let name = format!("{REF_PREFIX}{}", tree.to_hex());
    let exists = repo
        .try_find_reference(name.as_str())
        .map_err(|e| e.to_string())?
        .is_some();
    if !exists {
        repo.reference(
            name.as_str(),
            tree,
            gix::refs::transaction::PreviousValue::Any,
            "proofgraph: the inputs a receipt bound",
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Keeps `tree` (already in its object database) reachable under
/// `refs/proofgraph/inputs/<tree>` in the git repository holding `dir`, as a recorded tree
/// is: `rerun` keeps a tree it rebuilt from a commit so.
pub fn keep(dir: &Path, tree: gix::ObjectId) -> Result<(), RecordError> {
    let repo = gix::discover(dir).map_err(|e| RecordError::NotARepository {
        dir: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    keep_in(&repo, tree).map_err(|message| RecordError::Git {
        workdir: dir.to_path_buf(),
        message,
    })
}

/// The git directory of the repository holding `dir`, to visit each repository once.
pub fn git_dir_of(dir: &Path) -> Option<PathBuf> {
    let repo = gix::discover(dir).ok()?;
    Some(fs_err::canonicalize(repo.git_dir()).unwrap_or_else(|_| repo.git_dir().to_path_buf()))
}

/// Deletes the refs under [`REF_PREFIX`] of the git repository holding `dir` whose tree is
/// not in `keep` and whose loose ref file is older than `min_age` (a run may have just
/// made it, its receipt not yet written); returns how many were deleted. The trees go
/// with git's own `gc` once nothing else reaches them.
pub fn prune(
    dir: &Path,
    keep: &std::collections::HashSet<String>,
    min_age: std::time::Duration,
) -> Result<usize, RecordError> {
    let repo = gix::discover(dir).map_err(|e| RecordError::NotARepository {
        dir: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let fail = |message: String| RecordError::Git {
        workdir: dir.to_path_buf(),
        message,
    };
    let now = std::time::SystemTime::now();
    let mut gone = Vec::new();
    let platform = repo.references().map_err(|e| fail(e.to_string()))?;
    let refs = platform
        .prefixed(REF_PREFIX)
        .map_err(|e| fail(e.to_string()))?;
    for r in refs {
        let r = r.map_err(|e| fail(e.to_string()))?;
        let name = r.name().as_bstr().to_string();
        let Some(tree) = name.strip_prefix(REF_PREFIX) else {
            continue;
        };
        if keep.contains(tree) {
            continue;
        }
        let loose = repo.git_dir().join(&name);
        let young = fs_err::symlink_metadata(&loose)
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age < min_age);
        if !young {
            gone.push(r.detach());
        }
    }
    let count = gone.len();
    if count > 0 {
        use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
        let edits = gone.into_iter().map(|r| RefEdit {
            change: Change::Delete {
                expected: PreviousValue::MustExistAndMatch(r.target.clone()),
                log: RefLog::AndReference,
            },
            name: r.name,
            deref: false,
        });
        repo.edit_references(edits)
            .map_err(|e| fail(e.to_string()))?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{commit_all, git, write};
    use crate::observe::repo_at_revision::Revision;

    /// A tree rebuilt from a commit (`rerun` in a clone that lacks the recorded one) is the
    /// very tree the recorder made of the same files, in a directory of a monorepo, with an
    /// executable and a link; a selection that differs by one file is another tree.
    #[test]
    fn a_tree_rebuilt_from_a_commit_is_the_recorded_one() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path();
        git(top, &["init", "-q"]);
        write(top, "pkg/src/a.txt", "a\n");
        write(top, "pkg/src/b.txt", "b\n");
        write(top, "pkg/run.sh", "echo run\n");
        fs_err::set_permissions(
            top.join("pkg/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        std::os::unix::fs::symlink("src/a.txt", top.join("pkg/link")).expect("symlink");
        write(top, "other/x.txt", "x\n");
        commit_all(top);
        let dir = top.join("pkg");
        let snapshot = crate::observe::inputs::snapshot(&dir, &[]).expect("snapshot");
        let bound: Vec<(&str, FileKind, Digest)> = snapshot
            .files
            .iter()
            .filter(|f| f.path != "src/b.txt")
            .map(|f| (f.path.as_str(), f.kind, f.id))
            .collect();
        assert_eq!(bound.len(), 3, "{:?}", snapshot.files);
        let recorded = Recorder::new().record(&dir, &bound).expect("record");

        let revision = Revision::resolve(&dir, "HEAD").expect("HEAD");
        let selected: Vec<&str> = bound.iter().map(|(p, _, _)| *p).collect();
        let (rebuilt, files) = revision
            .extract(&dir, &|p| selected.contains(&p))
            .expect("extract");
        assert_eq!(rebuilt, recorded);
        assert_eq!(
            files, snapshot.files,
            "every file of the directory, as a snapshot sees it"
        );
        let (other, _) = revision.extract(&dir, &|_| true).expect("extract");
        assert_ne!(other, recorded);
        // The recorder names the commit it was checked out at.
        let head = git(top, &["rev-parse", "HEAD"]);
        assert_eq!(
            Recorder::new().head(&dir).map(|c| c.to_hex().to_string()),
            Some(head.trim().to_owned())
        );
    }
}
