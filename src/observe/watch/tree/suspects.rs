//! Asking whether files are open for writing — what no event shows: a write
//! through a shared mapping — before a query's cookie and after it.
//!
//! A query asks about the suspects the events read so far name *before* its
//! cookie: a writer that closes after the ask was seen by it, and one that
//! closed before left its `IN_CLOSE_WRITE` ahead of the cookie, so the
//! refresh re-reads the file. Suspects the events name only up to the cookie
//! are asked after it, and a second cookie then shows whether one of them was
//! closed after writing in between.

use std::collections::{BTreeMap, BTreeSet};

use super::Watcher;
use super::events::lock;
use crate::observe::inputs::FileKind;
use crate::observe::watch::lease;

/// How many files without a held descriptor are opened at once to be asked
/// whether they are open for writing (each holds a descriptor until its
/// batch is answered).
const PROBE_BATCH: usize = 256;

impl Watcher {
    /// Takes the files that events say were opened since: each with its
    /// work tree, and whether it was opened up to `cookie` (when given).
    fn drain_opened(&mut self, cookie: Option<u64>) -> Vec<(usize, String, bool)> {
        let mut shared = lock(&self.shared.0);
        let mut out = Vec::with_capacity(shared.opened.len());
        for (wd, seq) in std::mem::take(&mut shared.opened) {
            for (t, rel) in shared.files.get(&wd).into_iter().flatten() {
                out.push((*t, rel.clone(), cookie.is_some_and(|c| seq <= c)));
            }
        }
        out
    }

    /// Before the query's cookie: asks whether the suspects the events read
    /// so far name, and the files open for writing last time, are open for
    /// writing, through their held descriptors. One whose writer closes
    /// after this is seen open for writing; one whose writer closed before
    /// left an `IN_CLOSE_WRITE` ahead of the cookie. Either way the refresh
    /// re-reads it. Files without a held descriptor are asked after the
    /// cookie, unsettled.
    pub(super) fn ask_early(&mut self, queried: &BTreeSet<usize>) -> Result<(), String> {
        // After a tool read every file these are all of them: they go to the
        // asking as they come, not through a set.
        let opened = self.drain_opened(None);
        self.at("drained");
        let mut wanted: Vec<(usize, String)> = Vec::new();
        for &t in queried {
            let tree = &mut self.trees[t];
            // Left by a query that failed.
            tree.unsettled.clear();
            wanted.extend(
                std::mem::take(&mut tree.suspects)
                    .into_iter()
                    .map(|rel| (t, rel)),
            );
            wanted.extend(tree.writers.iter().map(|rel| (t, rel.clone())));
        }
        wanted.extend(opened.into_iter().map(|(t, rel, _)| (t, rel)));
        let mut asked: Vec<(usize, String)> = Vec::with_capacity(wanted.len());
        for (t, rel) in wanted {
            let tree = &mut self.trees[t];
            if !queried.contains(&t) {
                tree.suspects.insert(rel);
            } else if tree.held.contains_key(&rel) {
                asked.push((t, rel));
            } else {
                tree.unsettled.insert(rel.clone());
                tree.suspects.insert(rel);
            }
        }
        // (One named twice, say a writer opened again, is asked twice: a
        // lease costs less than making the names unique.)
        let answers = self.ask_held(&asked);
        if let Some(((_, rel), Err(e))) = asked.iter().zip(&answers).find(|(_, a)| a.is_err()) {
            let e = format!("ask whether {rel} is open for writing: {e}");
            for (t, rel) in asked {
                self.trees[t].suspects.insert(rel);
            }
            return Err(e);
        }
        for ((t, rel), writing) in asked.into_iter().zip(answers) {
            let writing = writing.unwrap_or(true);
            let tree = &mut self.trees[t];
            if writing || tree.writers.contains(&rel) {
                tree.reread.insert(rel.clone());
            }
            if writing {
                tree.writers.insert(rel);
            } else {
                tree.writers.remove(&rel);
            }
        }
        Ok(())
    }

    /// Whether each of `files` (each held) is open for writing, asked
    /// through its held descriptor. (Not on several threads: leases of
    /// different files serialise in the kernel; two threads took as long as
    /// one.)
    fn ask_held(&mut self, files: &[(usize, String)]) -> Vec<std::io::Result<bool>> {
        use std::os::fd::AsFd as _;
        self.asked += files.len();
        #[cfg(test)]
        self.asked_paths
            .extend(files.iter().map(|(_, rel)| rel.clone()));
        let fds: Vec<Option<std::os::fd::BorrowedFd<'_>>> = files
            .iter()
            .map(|(t, rel)| self.trees[*t].held.get(rel).map(|held| held.fd.as_fd()))
            .collect();
        fds.iter()
            .map(|fd| match fd {
                Some(fd) => lease::open_for_writing(*fd),
                None => Err(std::io::Error::other("no descriptor is held")),
            })
            .collect()
    }

    /// After the refresh: asks about the remaining suspects (opened before
    /// the cookie but read after the early asking, newly held or watched, or
    /// without a held descriptor), and re-reads those open for writing (or
    /// until now). An unsettled one found not open for writing may have been
    /// closed after writing since the cookie: a second cookie makes sure its
    /// `IN_CLOSE_WRITE` has been read, and then it is re-read. Returns how
    /// many files of each work tree were read.
    pub(super) fn ask_late(
        &mut self,
        queried: &BTreeSet<usize>,
        cookie: u64,
    ) -> Result<Vec<(usize, usize)>, String> {
        for (t, rel, before_cookie) in self.drain_opened(Some(cookie)) {
            let tree = &mut self.trees[t];
            if before_cookie && queried.contains(&t) {
                tree.unsettled.insert(rel.clone());
            }
            tree.suspects.insert(rel);
        }
        let wanted: Vec<(usize, String)> = queried
            .iter()
            .flat_map(|&t| {
                self.trees[t]
                    .suspects
                    .iter()
                    .map(move |rel| (t, rel.clone()))
            })
            .collect();
        let writing = self.ask(&wanted)?;
        let mut reread: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        let mut settle: Vec<(usize, String)> = Vec::new();
        for ((t, rel), writing) in wanted.into_iter().zip(writing) {
            let tree = &mut self.trees[t];
            if writing || tree.writers.contains(&rel) {
                reread.entry(t).or_default().insert(rel.clone());
            } else if tree.unsettled.contains(&rel) {
                settle.push((t, rel.clone()));
            }
            if writing {
                tree.writers.insert(rel);
            } else {
                tree.writers.remove(&rel);
            }
        }
        if !settle.is_empty() {
            self.sync()?;
            let shared = lock(&self.shared.0);
            for (t, rel) in settle {
                let dirty = &shared.dirty[t];
                if dirty.all || dirty.paths.contains(&rel) {
                    reread.entry(t).or_default().insert(rel);
                }
            }
        }
        let mut out = Vec::new();
        for &t in queried {
            let tree = &mut self.trees[t];
            tree.suspects.clear();
            tree.unsettled.clear();
            let targets = reread.remove(&t).unwrap_or_default();
            out.push((t, targets.len()));
            self.reread(t, targets)?;
        }
        Ok(out)
    }

    /// Whether each of `wanted` is open for writing, asked through its held
    /// descriptor; one without is opened to be asked, in batches, each behind
    /// a cookie after which the watcher's own `IN_OPEN`s are forgotten (the
    /// leases, asked after it, answer for every open before it). A link, or
    /// a path the snapshot has no file at, is not asked: it is no regular
    /// file, or it became one since with a directory event, which re-reads
    /// and asks about it.
    fn ask(&mut self, wanted: &[(usize, String)]) -> Result<Vec<bool>, String> {
        let mut out = vec![false; wanted.len()];
        let mut held: Vec<usize> = Vec::new();
        let mut unheld: Vec<usize> = Vec::new();
        for (i, (t, rel)) in wanted.iter().enumerate() {
            let tree = &self.trees[*t];
            if tree.held.contains_key(rel) {
                held.push(i);
            } else if tree
                .files
                .binary_search_by(|f| f.path.as_str().cmp(rel))
                .is_ok_and(|at| tree.files[at].kind != FileKind::Symlink)
            {
                unheld.push(i);
            }
        }
        let files: Vec<(usize, String)> = held.iter().map(|&i| wanted[i].clone()).collect();
        for (&i, answer) in held.iter().zip(self.ask_held(&files)) {
            out[i] = answer
                .map_err(|e| format!("ask whether {} is open for writing: {e}", wanted[i].1))?;
        }
        // A batch's descriptors are open together (for one cookie), so a
        // batch stays far below the descriptor limit.
        for batch in unheld.chunks(PROBE_BATCH) {
            let mut asked: Vec<(usize, Option<rustix::fd::OwnedFd>)> =
                Vec::with_capacity(batch.len());
            for &i in batch {
                use rustix::fs::{Mode, OFlags};
                let (t, rel) = &wanted[i];
                let opened = rustix::fs::open(
                    self.trees[*t].workdir.join(rel),
                    OFlags::RDONLY
                        | OFlags::NONBLOCK
                        | OFlags::NOFOLLOW
                        | OFlags::NOCTTY
                        | OFlags::CLOEXEC,
                    Mode::empty(),
                );
                match opened {
                    // Only a regular file can be mapped and leased; anything
                    // else there was put there by an event's change.
                    Ok(fd)
                        if rustix::fs::fstat(&fd).is_ok_and(|st| {
                            rustix::fs::FileType::from_raw_mode(st.st_mode)
                                == rustix::fs::FileType::RegularFile
                        }) =>
                    {
                        asked.push((i, Some(fd)));
                    }
                    Ok(_) => asked.push((i, None)),
                    // Gone, a link, or under a path that is no directory now:
                    // the event that made it so re-reads it.
                    Err(
                        rustix::io::Errno::NOENT
                        | rustix::io::Errno::NOTDIR
                        | rustix::io::Errno::LOOP,
                    ) => {
                        asked.push((i, None));
                    }
                    Err(e) => return Err(format!("open {rel} to ask who writes it: {e}")),
                }
            }
            // Our own opens made `IN_OPEN` events: every one up to this
            // cookie is answered by the leases asked below, which come after
            // it.
            let until = self.sync()?;
            {
                let mut shared = lock(&self.shared.0);
                for (i, _) in &asked {
                    let (t, rel) = &wanted[*i];
                    if let Some(wd) = self.trees[*t].file_wd.get(rel)
                        && shared.opened.get(wd).is_some_and(|seq| *seq <= until)
                    {
                        shared.opened.remove(wd);
                    }
                }
            }
            for (i, fd) in &asked {
                if let Some(fd) = fd {
                    let rel = &wanted[*i].1;
                    let fd = std::os::fd::AsFd::as_fd(fd);
                    lease::prepare(fd)
                        .and_then(|()| lease::open_for_writing(fd))
                        .map(|writing| out[*i] = writing)
                        .map_err(|e| format!("ask whether {rel} is open for writing: {e}"))?;
                    self.asked += 1;
                    #[cfg(test)]
                    self.asked_paths.insert(rel.clone());
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::nothing_is_asked_twice;
    use super::*;
    use crate::base::testing::{commit_all, git, write};
    use crate::observe::inputs;
    use crate::observe::watch::testing::Mapping;

    /// More files than one probe batch, and more than the descriptors the
    /// watcher may hold: every one is asked about after the first snapshot
    /// (its watches are new) and after all were opened, those not held in
    /// batches; a mapped file among the held ones and one among the others
    /// are still seen, and the query after asks nothing.
    #[test]
    fn files_are_asked_about_in_batches() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        let count = PROBE_BATCH * 2 + 7;
        let name = |i: usize| format!("d{}/f{i:04}.txt", i % 3);
        for i in 0..count {
            write(dir, &name(i), &format!("{i}\n"));
        }
        commit_all(dir);
        let mut watcher = Watcher::new(
            Box::new(|_| {}),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        watcher.held_limit = 100;
        let check = |watcher: &mut Watcher, step: &str| {
            let answered = watcher.snapshot(dir, &[]).expect("the watcher answers");
            let direct = inputs::snapshot(dir, &[]).expect("a snapshot");
            assert_eq!(answered.files, direct.files, "{step}");
        };
        check(&mut watcher, "first");
        assert!(
            watcher.trees[0].suspects.is_empty(),
            "every new watch was asked about"
        );
        assert_eq!(watcher.asked, count);
        assert_eq!(watcher.held_count, 100);
        let held: Vec<usize> = (0..count)
            .filter(|i| watcher.trees[0].held.contains_key(&name(*i)))
            .collect();
        let unheld = (0..count)
            .find(|i| !held.contains(i))
            .expect("a file not held");
        for i in 0..count {
            let _ = fs_err::read(dir.join(name(i))).expect("read");
        }
        let mut one = Mapping::new(&dir.join(name(held[0])));
        one.write(0, b"X");
        let mut other = Mapping::new(&dir.join(name(unheld)));
        other.write(0, b"Y");
        check(&mut watcher, "every file opened, two mapped and written");
        assert_eq!(watcher.asked, count);
        one.write(0, b"Z");
        other.write(0, b"W");
        check(&mut watcher, "written again through both mappings");
        one.finish();
        other.finish();
        check(&mut watcher, "the mappings gone");
        nothing_is_asked_twice(&mut watcher, dir);
    }

    /// Holds a mapping of `path` written before a query, and closes it at
    /// the query's point `close_at` — where the old order (cookie, refresh,
    /// then asking) missed it: the file was no longer open for writing when
    /// asked, and its `IN_CLOSE_WRITE` came after the refresh took the
    /// events. With `open_at`, the mapping is made at that point of the
    /// query (after it took the events read so far) instead of before it.
    fn close_during_a_query(open_at: Option<&'static str>, held_limit: usize) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        git(&dir, &["init", "-q"]);
        write(&dir, "a.txt", "aaaa\n");
        write(&dir, "b.txt", "bbbb\n");
        commit_all(&dir);
        let mut watcher = Watcher::new(
            Box::new(|_| {}),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        watcher.held_limit = held_limit;
        let check = |watcher: &mut Watcher, step: &str| {
            let answered = watcher.snapshot(&dir, &[]).expect("the watcher answers");
            let direct = inputs::snapshot(&dir, &[]).expect("a snapshot");
            assert_eq!(answered.files, direct.files, "{step}");
        };
        check(&mut watcher, "first");
        let path = dir.join("a.txt");
        let mut mapping = match open_at {
            Some(_) => None,
            None => {
                let mut m = Mapping::new(&path);
                m.write(0, b"X");
                // Its `IN_OPEN` has been read before the query.
                watcher.sync().expect("a cookie");
                Some(m)
            }
        };
        watcher.hook = Some(Box::new(move |point| {
            if Some(point) == open_at {
                let mut m = Mapping::new(&path);
                m.write(0, b"X");
                mapping = Some(m);
            } else if point == "refreshed"
                && let Some(m) = mapping.take()
            {
                m.finish();
            }
        }));
        check(
            &mut watcher,
            "a mapping written before, closed during the query",
        );
        watcher.hook = None;
        check(&mut watcher, "after");
    }

    #[test]
    fn a_writer_closed_during_a_query_is_seen() {
        close_during_a_query(None, usize::MAX);
    }

    #[test]
    fn a_writer_opened_after_the_early_asking_and_closed_during_the_query_is_seen() {
        close_during_a_query(Some("drained"), usize::MAX);
    }

    #[test]
    fn a_writer_of_a_file_not_held_closed_during_a_query_is_seen() {
        close_during_a_query(None, 0);
    }
}
