//! Bringing a work tree's snapshot up to date: re-reading the files events
//! name ([`Watcher::refresh`]), or taking the whole snapshot anew
//! ([`Watcher::full`]) when the events cannot vouch for it.

use std::collections::BTreeSet;
use std::time::Instant;

use rustix::fs::inotify;

use super::Watcher;
use super::events::{Dirty, lock};
use super::worktree::{named, parent_dirs, read_file, read_held, stamp, tracked_paths};
use crate::observe::inputs::{self, FileEntry};

impl Watcher {
    /// Brings a work tree's snapshot up to date; returns how many files were
    /// read. Files the early asking found open for writing (or open for
    /// writing until then) are re-read too.
    pub(super) fn refresh(&mut self, t: usize) -> Result<usize, String> {
        let dirty = std::mem::take(&mut lock(&self.shared.0).dirty[t]);
        let now = stamp(&self.trees[t].index_path);
        let (mut read, mut targets) =
            if dirty.all || now.is_none() || now != self.trees[t].index_stamp {
                (self.full(t, &dirty)?, BTreeSet::new())
            } else if let Some(targets) = self.changed(t, &dirty) {
                (0, targets)
            } else {
                (self.full(t, &dirty)?, BTreeSet::new())
            };
        // Kept until they are read: a query that fails re-reads them next
        // time.
        targets.extend(self.trees[t].reread.iter().cloned());
        read += targets.len();
        self.reread(t, targets)?;
        self.trees[t].reread.clear();
        Ok(read)
    }

    /// The tracked files that events say changed, their directories watched
    /// anew; `None` when a directory cannot be watched.
    fn changed(&mut self, t: usize, dirty: &Dirty) -> Option<BTreeSet<String>> {
        let (targets, dirs) = named(&self.trees[t], dirty);
        for d in dirs {
            if self.watch_dir(t, &d).is_err() {
                return None;
            }
        }
        Some(targets)
    }

    /// Re-reads tracked files by content (through the held descriptor when
    /// there is one), tracking them anew first: a file replaced by another is
    /// a new inode, whose openers are not known.
    pub(super) fn reread(&mut self, t: usize, targets: BTreeSet<String>) -> Result<(), String> {
        for rel in targets {
            match self.track_file(t, &rel) {
                Ok(true) => {
                    self.trees[t].suspects.insert(rel.clone());
                }
                Ok(false) => {}
                Err(e) if inputs::is_gone(&e) => {}
                Err(e) => return Err(format!("watch {rel}: {e}")),
            }
            let tree = &mut self.trees[t];
            let read = match tree.held.get(&rel) {
                Some(held) => read_held(held, tree.hash_kind).map(Some),
                None => read_file(&tree.workdir, &rel, tree.hash_kind),
            }
            .map_err(|e| format!("read {rel}: {e}"))?;
            let at = tree.files.binary_search_by(|f| f.path.as_str().cmp(&rel));
            match (read, at) {
                (Some((id, kind)), Ok(i)) => {
                    tree.files[i].id = id;
                    tree.files[i].kind = kind;
                }
                (Some((id, kind)), Err(i)) => tree.files.insert(
                    i,
                    FileEntry {
                        path: rel.clone(),
                        id,
                        kind,
                    },
                ),
                (None, Ok(i)) => {
                    tree.files.remove(i);
                }
                (None, Err(_)) => {}
            }
        }
        Ok(())
    }

    /// Takes the whole work tree's snapshot anew, watching every directory
    /// that holds a tracked file first, then holding and watching the
    /// tracked files (so no change after the snapshot's reads goes unseen).
    /// A file already held and watched that no event named since (`dirty`,
    /// the events the refresh took) is still the same inode at the same
    /// path: replacing or removing it, or a directory above it, makes a
    /// directory event, and a mount change or lost events make `dirty.all`.
    /// Events that arrive meanwhile stay for the next query. With
    /// `dirty.all` (events were lost, or nothing was watched yet), who opened
    /// which file is not known either: every file is tracked anew and asked
    /// about.
    fn full(&mut self, t: usize, dirty: &Dirty) -> Result<usize, String> {
        let started = Instant::now();
        let workdir = self.trees[t].workdir.clone();
        let index_stamp = stamp(&self.trees[t].index_path);
        let tracked = tracked_paths(&workdir)?;
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        dirs.insert(String::new());
        for p in &tracked {
            for d in parent_dirs(p) {
                if !dirs.insert(d.to_owned()) {
                    break;
                }
            }
        }
        // Every directory is watched (again: a directory still watched
        // keeps its watch, so no event between the two is missed), then the
        // watches of directories no tracked file is in any more are removed.
        self.trees[t].linked_dirs.clear();
        let mut placed = std::collections::HashSet::new();
        for d in &dirs {
            match self.watch_dir(t, d) {
                Ok(wd) => placed.extend(wd),
                Err(e) => {
                    return Err(format!(
                        "watch {}: {e} (raise fs.inotify.max_user_watches?)",
                        workdir.join(d).display()
                    ));
                }
            }
        }
        {
            let mut shared = lock(&self.shared.0);
            let stale: Vec<i32> = shared
                .watches
                .iter()
                .filter(|(wd, (tree, rel))| *tree == t && rel.is_some() && !placed.contains(*wd))
                .map(|(wd, _)| *wd)
                .collect();
            for wd in stale {
                shared.watches.remove(&wd);
                let _ = inotify::remove_watch(&*self.inotify, wd);
            }
        }
        // Files no longer tracked are no longer held or watched.
        let untracked: Vec<String> = self.trees[t]
            .file_wd
            .keys()
            .chain(self.trees[t].held.keys())
            .filter(|p| tracked.binary_search(p).is_err())
            .cloned()
            .collect();
        for rel in untracked {
            self.release(t, &rel);
            if let Some(wd) = self.trees[t].file_wd.remove(&rel) {
                let mut shared = lock(&self.shared.0);
                if let Some(paths) = shared.files.get_mut(&wd) {
                    paths.retain(|(tree, p)| !(*tree == t && *p == rel));
                    if paths.is_empty() {
                        shared.files.remove(&wd);
                        shared.opened.remove(&wd);
                        let _ = inotify::remove_watch(&*self.inotify, wd);
                    }
                }
            }
            self.trees[t].writers.remove(&rel);
        }
        self.trees[t].tracked = tracked;
        let (named, _) = named(&self.trees[t], dirty);
        let tracked = std::mem::take(&mut self.trees[t].tracked);
        let mut unknown = BTreeSet::new();
        let mut anew = 0;
        for rel in &tracked {
            if !dirty.all && !named.contains(rel) && self.watched(t, rel) {
                continue;
            }
            anew += 1;
            match self.track_file(t, rel) {
                Ok(true) => {
                    unknown.insert(rel.clone());
                }
                Ok(false) => {}
                Err(e) if inputs::is_gone(&e) => {}
                Err(e) => {
                    return Err(format!(
                        "watch {}: {e} (raise fs.inotify.max_user_watches or the open files limit?)",
                        workdir.join(rel).display()
                    ));
                }
            }
        }
        let snapshot = inputs::snapshot(&workdir, &[]).map_err(|e| e.to_string())?;
        // The queue overflowed while the watches were placed (the next query
        // starts over again).
        let lost = lock(&self.shared.0).dirty[t].all;
        let tree = &mut self.trees[t];
        tree.index_stamp = index_stamp;
        tree.tracked = tracked;
        tree.files = snapshot.files;
        tree.suspects.extend(unknown);
        if dirty.all || lost {
            // Events were lost (before this snapshot, or while its watches
            // were placed): who opened what is not known for any file.
            tree.suspects.extend(tree.file_wd.keys().cloned());
        }
        self.served.full_snapshots += 1;
        (self.log)(&format!(
            "full snapshot of {}: {} files ({anew} tracked anew), {} directories watched, {} files held ({:.1} ms)",
            workdir.display(),
            self.trees[t].files.len(),
            dirs.len(),
            self.trees[t].held.len(),
            started.elapsed().as_secs_f64() * 1000.0
        ));
        Ok(snapshot.rehashed)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
    use std::time::Duration;

    use super::super::tests::nothing_is_asked_twice;
    use super::*;
    use crate::base::testing::{commit_all, git, write};
    use crate::observe::watch::testing::Mapping;

    /// A changed index makes the watcher take a full snapshot, but it keeps
    /// the descriptors and watches of the files that are still the same, so
    /// it asks only about what was opened or replaced; what is no longer
    /// tracked or there is let go.
    #[test]
    fn a_full_snapshot_keeps_what_it_holds() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        for i in 0..20 {
            let path = format!("f{i}.txt");
            write(dir, &path, &format!("{i}\n"));
            // Older than the index, so no snapshot re-reads (opens) it as
            // racily clean.
            fs_err::File::options()
                .append(true)
                .open(dir.join(&path))
                .expect("open")
                .file()
                .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
                .expect("set the mtime");
        }
        commit_all(dir);
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let lines = Arc::clone(&log);
        let mut watcher = Watcher::new(
            Box::new(move |line| {
                lock_log(&lines).push(line.to_owned());
            }),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        let check = |watcher: &mut Watcher, step: &str| {
            let answered = watcher.snapshot(dir, &[]).expect("the watcher answers");
            let direct = inputs::snapshot(dir, &[]).expect("a snapshot");
            assert_eq!(answered.files, direct.files, "{step}");
        };
        check(&mut watcher, "first");
        assert_eq!(watcher.asked, 20);
        assert!(
            lock_log(&log)
                .iter()
                .any(|l| l.contains("20 files (20 tracked anew)")),
            "{:?}",
            lock_log(&log)
        );
        nothing_is_asked_twice(&mut watcher, dir);
        // Edited in place (opened), replaced by a file renamed over it, and
        // the index rewritten with its own content (new stat data).
        write(dir, "f1.txt", "one, edited\n");
        fs_err::write(dir.join("new.txt"), "new\n").expect("write");
        fs_err::rename(dir.join("new.txt"), dir.join("f2.txt")).expect("mv");
        let index = dir.join(".git/index");
        let bytes = fs_err::read(&index).expect("read the index");
        fs_err::write(&index, bytes).expect("rewrite the index");
        let full = watcher.served().full_snapshots;
        check(&mut watcher, "after the index changed");
        assert_eq!(watcher.served().full_snapshots, full + 1);
        assert!(
            lock_log(&log)
                .last()
                .is_some_and(|l| l.contains("20 files (2 tracked anew)")),
            "only the files events named are looked at again: {:?}",
            lock_log(&log)
        );
        // The replaced file is watched and held as the new inode.
        let mut mapping = Mapping::new(&dir.join("f2.txt"));
        mapping.write(0, b"N");
        check(
            &mut watcher,
            "a write through a mapping of the replaced file",
        );
        mapping.finish();
        check(&mut watcher, "that mapping gone");
        assert_eq!(
            watcher.asked_paths,
            BTreeSet::from(["f1.txt".to_owned(), "f2.txt".to_owned()]),
            "only the opened and the replaced file (the opened one perhaps twice: \
             opened by the edit, and by the snapshot that re-hashed it)"
        );
        assert_eq!(watcher.held_count, 20);
        git(dir, &["rm", "-q", "--cached", "f3.txt"]);
        check(&mut watcher, "a file no longer tracked");
        assert!(!watcher.trees[0].held.contains_key("f3.txt"), "let go");
        assert_eq!(watcher.held_count, 19);
        fs_err::remove_file(dir.join("f4.txt")).expect("rm");
        check(&mut watcher, "a deleted file");
        assert!(!watcher.trees[0].held.contains_key("f4.txt"), "let go");
        assert_eq!(watcher.held_count, 18);
    }

    fn lock_log(log: &Mutex<Vec<String>>) -> MutexGuard<'_, Vec<String>> {
        log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
