//! One git work tree as the watcher keeps it ([`Tree`]): finding it for a
//! queried directory, the part of its snapshot below a directory, which of
//! its tracked files events name, and reading one by content.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use proofgraph_graph::fingerprint::Digest;

use super::Watcher;
use super::events::{Dirty, lock};
use super::mounts::{inner_mounts, mounts_of};
use crate::observe::inputs::{self, FileEntry, FileKind};

/// One git work tree the watcher keeps.
#[derive(Debug)]
pub(super) struct Tree {
    pub(super) workdir: PathBuf,
    pub(super) index_path: PathBuf,
    pub(super) hash_kind: gix::hash::Kind,
    /// The index's stat data when the snapshot was taken.
    pub(super) index_stamp: Option<Stamp>,
    /// The tracked paths (the index's entries a snapshot considers).
    pub(super) tracked: Vec<String>,
    /// The snapshot of the whole work tree.
    pub(super) files: Vec<FileEntry>,
    /// The file watch of each tracked path that has one.
    pub(super) file_wd: HashMap<String, i32>,
    /// The descriptor held for each tracked regular file that has one.
    pub(super) held: HashMap<String, Held>,
    /// Mount points strictly inside the work tree (relative): no descriptor
    /// is held below them, so that they can be unmounted.
    pub(super) inner_mounts: Vec<String>,
    /// Tracked files that may be open for writing without the watcher
    /// knowing (their watch or held descriptor is new, or they were opened):
    /// asked about at the next query.
    pub(super) suspects: BTreeSet<String>,
    /// Suspects of this query that may have been opened before its cookie
    /// and are asked only after it: whether one was closed after writing in
    /// between is looked up after a second cookie.
    pub(super) unsettled: BTreeSet<String>,
    /// Tracked files that were open for writing when last asked: a shared
    /// writable mapping changes them without any event, so they are re-read
    /// at every query until one after nothing has them open for writing.
    pub(super) writers: BTreeSet<String>,
    /// Files the query's early asking found open for writing (or open for
    /// writing until then): re-read by its refresh.
    pub(super) reread: BTreeSet<String>,
    /// Directories on a tracked path that are symbolic links: nothing
    /// watches what they point to, so the tracked files below them are
    /// re-read at every query.
    pub(super) linked_dirs: BTreeSet<String>,
    /// The mount points in, at or above the work tree (`/proc/self/mountinfo`
    /// lines: mount id and mount point).
    pub(super) mounts: Vec<String>,
    /// The untracked files git does not ignore, per queried directory and exclusions, as
    /// last walked; dropped when an event could have changed them (`untracked.rs`).
    pub(super) untracked: HashMap<(PathBuf, Vec<String>), Vec<FileEntry>>,
    /// The stat data of the files outside the work tree that decide what git ignores,
    /// when the untracked files were last walked.
    pub(super) ignore_stamps: Vec<Option<Stamp>>,
    /// The ignore file `core.excludesFile` names, if any.
    pub(super) excludes_file: Option<PathBuf>,
}

/// A read-only descriptor of a tracked regular file, held while the watcher
/// runs: the file is read and asked whether it is open for writing through
/// it, without an `open` (and so without an `IN_OPEN` of the watcher's own).
#[derive(Debug)]
pub(super) struct Held {
    pub(super) fd: rustix::fd::OwnedFd,
    /// The file's device and inode: a path that names another file now gets
    /// a new descriptor.
    pub(super) dev: u64,
    pub(super) ino: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) mtime: (i64, u64),
    pub(super) ctime: (i64, u64),
    pub(super) size: i64,
    pub(super) ino: u64,
}

pub(super) fn stamp(path: &Path) -> Option<Stamp> {
    let st = rustix::fs::stat(path).ok()?;
    Some(Stamp {
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
        size: st.st_size,
        ino: st.st_ino,
    })
}

impl Watcher {
    /// The work tree of a directory, watching it on first use.
    pub(super) fn tree_for(&mut self, dir: &Path) -> Result<usize, String> {
        if let Some(t) = self.tree_of.get(dir) {
            return Ok(*t);
        }
        let repo = gix::discover(dir).map_err(|e| e.to_string())?;
        let workdir = repo
            .workdir()
            .ok_or_else(|| "a bare repository".to_owned())
            .and_then(|w| fs_err::canonicalize(w).map_err(|e| e.to_string()))?;
        let index_path = repo.index_path();
        let t = match self.trees.iter().position(|t| t.workdir == workdir) {
            Some(t) => t,
            None => {
                let index_dir = index_path
                    .parent()
                    .ok_or_else(|| "the index has no directory".to_owned())?;
                if self.mountinfo.is_none() {
                    return Err("`/proc/self/mountinfo` cannot be read".to_owned());
                }
                let mountinfo =
                    fs_err::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
                let t = self.trees.len();
                let mounts = mounts_of(&mountinfo, &workdir);
                let excludes_file = super::untracked::excludes_file(&workdir);
                self.trees.push(Tree {
                    inner_mounts: inner_mounts(&mounts, &workdir),
                    mounts,
                    workdir,
                    index_path: index_path.clone(),
                    hash_kind: repo.object_hash(),
                    index_stamp: None,
                    tracked: Vec::new(),
                    files: Vec::new(),
                    file_wd: HashMap::new(),
                    held: HashMap::new(),
                    suspects: BTreeSet::new(),
                    unsettled: BTreeSet::new(),
                    writers: BTreeSet::new(),
                    reread: BTreeSet::new(),
                    linked_dirs: BTreeSet::new(),
                    untracked: HashMap::new(),
                    ignore_stamps: Vec::new(),
                    excludes_file,
                });
                lock(&self.shared.0).dirty.push(Dirty {
                    all: true,
                    ..Dirty::default()
                });
                self.watch(t, index_dir, None)
                    .map_err(|e| format!("watch {}: {e}", index_dir.display()))?;
                t
            }
        };
        self.tree_of.insert(dir.to_path_buf(), t);
        Ok(t)
    }

    /// A directory's part of its work tree's snapshot: each file's path
    /// relative to the directory, and the file.
    pub(in crate::observe::watch) fn files_below<'a>(
        &'a self,
        t: usize,
        canonical_dir: &Path,
        exclude: &'a [String],
    ) -> Result<impl Iterator<Item = (&'a str, &'a FileEntry)> + 'a, String> {
        let tree = &self.trees[t];
        let prefix = match canonical_dir.strip_prefix(&tree.workdir) {
            Ok(rel) if rel.as_os_str().is_empty() => String::new(),
            Ok(rel) => format!("{}/", rel.to_string_lossy()),
            Err(_) => return Err("the directory left its work tree".to_owned()),
        };
        let start = tree
            .files
            .partition_point(|f| f.path.as_str() < prefix.as_str());
        let len = prefix.len();
        Ok(tree.files[start..]
            .iter()
            .take_while(move |f| f.path.starts_with(prefix.as_str()))
            .filter_map(move |f| {
                let rel = &f.path[len..];
                (!inputs::excluded(rel.as_bytes(), exclude)).then_some((rel, f))
            }))
    }
}

/// The tracked files of `tree` that `dirty`'s events name: the files named,
/// and those below a directory named, or below a directory that is a
/// symbolic link (no event covers those); and the directories from each
/// named directory down to those files (a directory that was removed and
/// created anew is a new inode, to be watched again).
pub(super) fn named(tree: &Tree, dirty: &Dirty) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut targets: BTreeSet<String> = BTreeSet::new();
    let mut prefixes: BTreeSet<&str> = dirty.prefixes.iter().map(String::as_str).collect();
    for p in &dirty.paths {
        if tree
            .tracked
            .binary_search_by(|x| x.as_str().cmp(p.as_str()))
            .is_ok()
        {
            targets.insert(p.clone());
        } else {
            // Not a tracked file, but perhaps a directory on a tracked
            // path that became (or stopped being) a symbolic link or a
            // file: an event names it without `IN_ISDIR`.
            prefixes.insert(p.as_str());
        }
    }
    prefixes.extend(tree.linked_dirs.iter().map(String::as_str));
    let mut dirs = BTreeSet::new();
    for prefix in prefixes {
        let below = format!("{prefix}/");
        let start = tree
            .tracked
            .partition_point(|x| x.as_str() < below.as_str());
        for p in tree.tracked[start..]
            .iter()
            .take_while(|x| x.starts_with(below.as_str()))
        {
            targets.insert(p.clone());
            for d in parent_dirs(p).take_while(|d| d.len() >= prefix.len()) {
                if !dirs.insert(d.to_owned()) {
                    break;
                }
            }
        }
    }
    (targets, dirs)
}

/// The directories above a relative path, nearest first (`a/b` and `a` for
/// `a/b/c`).
pub(super) fn parent_dirs(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(path.rsplit_once('/').map(|(d, _)| d), |d| {
        d.rsplit_once('/').map(|(parent, _)| parent)
    })
}

/// The tracked paths a snapshot considers, sorted.
pub(super) fn tracked_paths(workdir: &Path) -> Result<Vec<String>, String> {
    let repo = gix::discover(workdir).map_err(|e| e.to_string())?;
    let index = repo.index_or_empty().map_err(|e| e.to_string())?;
    // A name that is not UTF-8 cannot be listed: the client's own snapshot then says so.
    if let Some(name) = inputs::tracked_non_utf8(&index, "", &[]) {
        return Err(format!(
            "the tracked file `{name}` has a name that is not UTF-8"
        ));
    }
    let mut out: Vec<String> = inputs::tracked_entries(&index)
        .into_iter()
        .map(|(_, path)| path.to_owned())
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// A tracked file's identity and kind from its content; `None` when it is
/// not a file or link any more.
pub(super) fn read_file(
    workdir: &Path,
    rel: &str,
    hash_kind: gix::hash::Kind,
) -> std::io::Result<Option<(Digest, FileKind)>> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = workdir.join(rel);
    let meta = match fs_err::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if inputs::is_gone(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let kind = if meta.file_type().is_symlink() {
        FileKind::Symlink
    } else if !meta.is_file() {
        return Ok(None);
    } else if meta.permissions().mode() & 0o100 != 0 {
        FileKind::Executable
    } else {
        FileKind::File
    };
    match inputs::content_identity(&path, kind, hash_kind) {
        Ok(id) => Ok(Some((id, kind))),
        // Gone between the two reads: the next event says what it became.
        Err(e) if inputs::is_gone(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A held file's identity and kind from its content, read through its
/// descriptor (no `open`, so no `IN_OPEN`).
pub(super) fn read_held(
    held: &Held,
    hash_kind: gix::hash::Kind,
) -> std::io::Result<(Digest, FileKind)> {
    let st = rustix::fs::fstat(&held.fd)?;
    let kind = if st.st_mode & 0o100 != 0 {
        FileKind::Executable
    } else {
        FileKind::File
    };
    let mut content = Vec::with_capacity(usize::try_from(st.st_size).unwrap_or(0));
    let mut buf = vec![0; 64 * 1024];
    loop {
        let offset = u64::try_from(content.len()).unwrap_or(u64::MAX);
        match rustix::io::pread(&held.fd, &mut buf, offset) {
            Ok(0) => break,
            Ok(n) => content.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((inputs::bytes_identity(&content, hash_kind)?, kind))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::base::testing::{commit_all, git, write};

    fn tree(tracked: &[&str], linked_dirs: &[&str]) -> Tree {
        Tree {
            workdir: PathBuf::from("/w"),
            index_path: PathBuf::from("/w/.git/index"),
            hash_kind: gix::hash::Kind::Sha1,
            index_stamp: None,
            tracked: tracked.iter().map(|p| (*p).to_owned()).collect(),
            files: Vec::new(),
            file_wd: HashMap::new(),
            held: HashMap::new(),
            inner_mounts: Vec::new(),
            suspects: BTreeSet::new(),
            unsettled: BTreeSet::new(),
            writers: BTreeSet::new(),
            reread: BTreeSet::new(),
            linked_dirs: linked_dirs.iter().map(|p| (*p).to_owned()).collect(),
            mounts: Vec::new(),
            untracked: HashMap::new(),
            ignore_stamps: Vec::new(),
            excludes_file: None,
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn parent_dirs_go_up_to_the_top_nearest_first() {
        assert_eq!(parent_dirs("a/b/c.txt").collect::<Vec<_>>(), ["a/b", "a"]);
        assert_eq!(parent_dirs("top.txt").count(), 0);
    }

    /// What events name becomes the tracked files to re-read — a file
    /// named, every file below a directory named (with or without
    /// `IN_ISDIR`) or below a linked directory, never one whose path only
    /// starts the same — and the directories down to them, to watch anew.
    #[test]
    fn events_name_files_directories_and_what_is_below_a_link() {
        let tree = tree(
            &[
                "a/b/one.txt",
                "a/b/two.txt",
                "a/bc/five.txt",
                "a/c/d/three.txt",
                "l/x/four.txt",
                "top.txt",
            ],
            &["l"],
        );
        let dirty = Dirty {
            all: false,
            paths: set(&["top.txt", "a/c", "untracked.txt"]),
            prefixes: set(&["a/b"]),
        };
        let (targets, dirs) = named(&tree, &dirty);
        assert_eq!(
            targets,
            set(&[
                "a/b/one.txt",
                "a/b/two.txt",
                "a/c/d/three.txt",
                "l/x/four.txt",
                "top.txt"
            ])
        );
        assert_eq!(dirs, set(&["a/b", "a/c", "a/c/d", "l", "l/x"]));
        let (targets, dirs) = named(&tree, &Dirty::default());
        assert_eq!(targets, set(&["l/x/four.txt"]), "a link is always read");
        assert_eq!(dirs, set(&["l", "l/x"]));
    }

    /// A file is read as git hashes it, by path and through a held
    /// descriptor alike (one larger than a read's buffer too), with its
    /// kind; what is no file or link, or is gone, is nothing.
    #[test]
    fn a_file_is_read_as_git_hashes_it_by_path_and_by_descriptor() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        write(dir, "f.txt", "content\n");
        write(dir, "big.bin", &"0123456789abcdef".repeat(12 * 1024));
        write(dir, "run.sh", "echo\n");
        fs_err::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::os::unix::fs::symlink("f.txt", dir.join("l")).expect("symlink");
        write(dir, "d/inside.txt", "inside\n");
        commit_all(dir);
        let git_id = |path: &str| {
            let hex = git(dir, &["rev-parse", &format!("HEAD:{path}")]);
            inputs::identity(&gix::ObjectId::from_hex(hex.trim().as_bytes()).expect("an id"))
        };
        let sha1 = gix::hash::Kind::Sha1;
        for (path, kind) in [
            ("f.txt", FileKind::File),
            ("big.bin", FileKind::File),
            ("run.sh", FileKind::Executable),
            ("l", FileKind::Symlink),
        ] {
            let read = read_file(dir, path, sha1).expect("read");
            assert_eq!(read, Some((git_id(path), kind)), "{path}");
            if kind == FileKind::Symlink {
                continue;
            }
            let fd = rustix::fs::open(
                dir.join(path),
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .expect("open");
            let st = rustix::fs::fstat(&fd).expect("fstat");
            let held = Held {
                fd,
                dev: st.st_dev,
                ino: st.st_ino,
            };
            assert_eq!(
                read_held(&held, sha1).expect("read"),
                (git_id(path), kind),
                "{path}"
            );
        }
        assert_eq!(read_file(dir, "d", sha1).expect("a directory"), None);
        assert_eq!(read_file(dir, "gone.txt", sha1).expect("gone"), None);
        assert_eq!(
            read_file(dir, "f.txt/below", sha1).expect("below a file"),
            None
        );
    }
}
