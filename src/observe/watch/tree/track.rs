//! Keeping track of a work tree's directories and tracked files: an inotify
//! watch on each directory (noting the ones that are symbolic links) and on
//! each tracked file's inode, and a read-only descriptor held of each
//! tracked regular file, as many as the open-files limit allows.

use std::path::Path;

use rustix::fs::inotify::{self, WatchFlags};

use super::Watcher;
use super::events::lock;
use super::mounts::{below, below_any};
use super::worktree::Held;
use crate::observe::inputs;
use crate::observe::watch::lease;

/// Descriptors not used for held files: a probe batch, the socket, the
/// snapshot's directory descriptors, gix.
const FD_RESERVE: u64 = 512;

/// How many descriptors the watcher may hold for tracked files: the soft
/// limit of open files, raised to the hard one, less [`FD_RESERVE`].
pub(super) fn descriptor_budget() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.maximum != limit.current {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
    let current = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    usize::try_from(current.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX)
}

impl Watcher {
    /// Watches a directory of tree `t` (or, with `rel` `None`, the index's).
    pub(super) fn watch(&self, t: usize, path: &Path, rel: Option<String>) -> std::io::Result<i32> {
        let flags = WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR;
        let wd = inotify::add_watch(&*self.inotify, path, flags)?;
        lock(&self.shared.0).watches.insert(wd, (t, rel));
        Ok(wd)
    }

    /// Watches a directory of tree `t`, noting whether it is a symbolic link
    /// (which a directory watch cannot follow soundly: what is below it is
    /// re-read at every query instead). Returns its watch, if it is a
    /// directory.
    pub(super) fn watch_dir(&mut self, t: usize, rel: &str) -> std::io::Result<Option<i32>> {
        let path = if rel.is_empty() {
            self.trees[t].workdir.clone()
        } else {
            self.trees[t].workdir.join(rel)
        };
        match self.watch(t, &path, Some(rel.to_owned())) {
            Ok(wd) => {
                self.trees[t].linked_dirs.remove(rel);
                Ok(Some(wd))
            }
            Err(e) if inputs::is_gone(&e) => {
                let linked = fs_err::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
                if linked {
                    self.trees[t].linked_dirs.insert(rel.to_owned());
                } else {
                    self.trees[t].linked_dirs.remove(rel);
                }
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Keeps track of a tracked file: holds a descriptor of it if it is a
    /// regular file (first, so that opening it makes no event on a new
    /// watch), then watches its inode. Returns whether it is a suspect: its
    /// held descriptor or its watch is new, so whatever had it open before is
    /// unknown.
    pub(super) fn track_file(&mut self, t: usize, rel: &str) -> std::io::Result<bool> {
        let path = self.trees[t].workdir.join(rel);
        let fresh = self.hold(t, rel, &path)?;
        let new = self.watch_file(t, rel, &path)?;
        Ok(fresh || new)
    }

    /// Holds a read-only descriptor of the regular file at `rel` — the one
    /// already held while the path still names that file — unless the
    /// budget is spent or it lies below a mount inside the work tree or a
    /// directory that is a symbolic link (where it may lie on any mount): a
    /// held file keeps its file system from being unmounted. Returns
    /// whether a descriptor was opened. A path that names another
    /// file between the `lstat` and the `open` made a directory event: the
    /// next query re-reads it.
    fn hold(&mut self, t: usize, rel: &str, path: &Path) -> std::io::Result<bool> {
        use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
        let st = match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => Some(st),
            Ok(_) => None,
            Err(e) if inputs::is_gone(&e.into()) => None,
            Err(e) => return Err(e.into()),
        };
        let tree = &mut self.trees[t];
        if let (Some(st), Some(h)) = (&st, tree.held.get(rel))
            && (h.dev, h.ino) == (st.st_dev, st.st_ino)
        {
            return Ok(false);
        }
        if tree.held.remove(rel).is_some() {
            self.held_count -= 1;
        }
        if st.is_none()
            || self.held_count >= self.held_limit
            || below_any(&tree.inner_mounts, rel)
            || tree.linked_dirs.iter().any(|d| below(d, rel))
        {
            return Ok(false);
        }
        let fd = match rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Ok(false);
        }
        lease::prepare(std::os::fd::AsFd::as_fd(&fd))?;
        tree.held.insert(
            rel.to_owned(),
            Held {
                fd,
                dev: st.st_dev,
                ino: st.st_ino,
            },
        );
        self.held_count += 1;
        Ok(true)
    }

    /// Whether `rel` has a live watch (and so, if it is a regular file
    /// within the budget, a held descriptor of the same inode).
    pub(super) fn watched(&self, t: usize, rel: &str) -> bool {
        self.trees[t]
            .file_wd
            .get(rel)
            .is_some_and(|wd| lock(&self.shared.0).files.contains_key(wd))
    }

    /// Stops holding `rel`'s descriptor.
    pub(super) fn release(&mut self, t: usize, rel: &str) {
        if self.trees[t].held.remove(rel).is_some() {
            self.held_count -= 1;
        }
    }

    /// Watches the inode of a tracked file: its content, mode and link count
    /// change, and it is opened, through whichever of its names (a hard link
    /// outside the work tree too). Returns whether this inode was not watched
    /// before (so whatever had it open before is unknown).
    fn watch_file(&mut self, t: usize, rel: &str, path: &Path) -> std::io::Result<bool> {
        let flags = WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::OPEN
            | WatchFlags::DONT_FOLLOW;
        let placed = inotify::add_watch(&*self.inotify, path, flags);
        let mut shared = lock(&self.shared.0);
        let old = match &placed {
            Ok(wd) => self.trees[t].file_wd.insert(rel.to_owned(), *wd),
            Err(_) => self.trees[t].file_wd.remove(rel),
        };
        // The path named another inode before: it no longer does.
        if let Some(old) = old
            && placed.as_ref().ok() != Some(&old)
            && let Some(paths) = shared.files.get_mut(&old)
        {
            paths.retain(|(tree, p)| !(*tree == t && p == rel));
            if paths.is_empty() {
                shared.files.remove(&old);
                shared.opened.remove(&old);
                let _ = inotify::remove_watch(&*self.inotify, old);
            }
        }
        let wd = placed?;
        let paths = shared.files.entry(wd).or_default();
        let new = paths.is_empty();
        if !paths.iter().any(|(tree, p)| *tree == t && p == rel) {
            paths.push((t, rel.to_owned()));
        }
        Ok(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{commit_all, git, write};

    fn repo(files: &[&str]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        git(tmp.path(), &["init", "-q"]);
        for f in files {
            write(tmp.path(), f, &format!("{f}\n"));
        }
        tmp
    }

    fn agrees(watcher: &mut Watcher, dir: &Path, step: &str) -> usize {
        let answered = watcher.snapshot(dir, &[]).expect("the watcher answers");
        let direct = inputs::snapshot(dir, &[]).expect("a snapshot");
        assert_eq!(answered.files, direct.files, "{step}");
        answered.rehashed
    }

    /// Two tracked names of one inode share one watch, so a write through
    /// either re-reads both; a name replaced by another file moves to a
    /// watch of its own, and the other keeps the old one.
    #[test]
    fn hard_links_in_the_tree_share_one_inode_watch() {
        let tmp = repo(&["a.txt"]);
        let dir = tmp.path();
        fs_err::hard_link(dir.join("a.txt"), dir.join("b.txt")).expect("ln");
        commit_all(dir);
        let mut watcher = Watcher::new(
            Box::new(|_| {}),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        agrees(&mut watcher, dir, "first");
        let wd = |watcher: &Watcher, rel: &str| watcher.trees[0].file_wd[rel];
        let paths = |watcher: &Watcher, wd: i32| lock(&watcher.shared.0).files[&wd].clone();
        let shared = wd(&watcher, "a.txt");
        assert_eq!(shared, wd(&watcher, "b.txt"));
        let mut both = paths(&watcher, shared);
        both.sort();
        assert_eq!(both, [(0, "a.txt".to_owned()), (0, "b.txt".to_owned())]);
        fs_err::write(dir.join("a.txt"), "written through a\n").expect("write");
        assert_eq!(agrees(&mut watcher, dir, "a write through one name"), 2);
        fs_err::write(dir.join("new"), "b alone\n").expect("write");
        fs_err::rename(dir.join("new"), dir.join("b.txt")).expect("mv");
        agrees(&mut watcher, dir, "one name replaced");
        assert_eq!(wd(&watcher, "a.txt"), shared, "a keeps its watch");
        assert_ne!(wd(&watcher, "b.txt"), shared);
        assert_eq!(paths(&watcher, shared), [(0, "a.txt".to_owned())]);
        fs_err::write(dir.join("a.txt"), "a again\n").expect("write");
        assert_eq!(agrees(&mut watcher, dir, "a alone"), 1, "b is not re-read");
    }

    /// No more descriptors are held than the budget allows; a held file
    /// replaced by another is held anew in its place, never twice.
    #[test]
    fn descriptors_are_held_within_the_budget_and_follow_a_replaced_file() {
        let tmp = repo(&["a.txt", "b.txt", "c.txt"]);
        let dir = tmp.path();
        commit_all(dir);
        let mut watcher = Watcher::new(
            Box::new(|_| {}),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        watcher.held_limit = 2;
        agrees(&mut watcher, dir, "first");
        assert_eq!(watcher.held_count, 2);
        assert_eq!(watcher.trees[0].held.len(), 2);
        let held = watcher.trees[0]
            .held
            .keys()
            .next()
            .expect("a held file")
            .clone();
        fs_err::write(dir.join("new"), "replaced\n").expect("write");
        fs_err::rename(dir.join("new"), dir.join(&held)).expect("mv");
        agrees(&mut watcher, dir, "a held file replaced");
        let st = rustix::fs::stat(dir.join(&held)).expect("stat");
        let h = &watcher.trees[0].held[&held];
        assert_eq!((h.dev, h.ino), (st.st_dev, st.st_ino), "the new file");
        assert_eq!(watcher.held_count, 2);
        assert_eq!(watcher.trees[0].held.len(), 2);
        fs_err::remove_file(dir.join(&held)).expect("rm");
        agrees(&mut watcher, dir, "a held file removed");
        assert!(!watcher.trees[0].held.contains_key(&held), "let go");
        assert_eq!(watcher.held_count, 1);
    }
}
