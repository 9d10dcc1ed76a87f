//! The event thread ([`read_events`]) and what it shares with the queries
//! ([`Shared`], [`Dirty`]); a query's cookie ([`Watcher::sync`]), after whose
//! event every earlier event has been read.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustix::fs::inotify::{self, ReadFlags};

use super::Watcher;

/// Cookie files are created next to the index with this prefix.
const COOKIE_PREFIX: &str = "proofgraph-watch-cookie-";

/// How long a query waits for its cookie before giving up (the client then
/// takes the snapshot itself).
const COOKIE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the events say has changed in one work tree since its snapshot.
#[derive(Debug, Default)]
pub(super) struct Dirty {
    /// Start over: the queue overflowed, or a watch was lost.
    pub(super) all: bool,
    /// Files (work-tree-relative) that an event named.
    pub(super) paths: BTreeSet<String>,
    /// Directories that were created, removed or moved: every tracked file
    /// below them is re-read.
    pub(super) prefixes: BTreeSet<String>,
}

/// What the event thread and the queries share.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// Per work tree (by index in `Watcher::trees`).
    pub(super) dirty: Vec<Dirty>,
    /// Directory watch descriptor → (work tree, directory relative to it, or
    /// `None` for the index's directory).
    pub(super) watches: HashMap<i32, (usize, Option<String>)>,
    /// File watch descriptor (one per inode) → the tracked paths of that
    /// inode, as (work tree, path relative to it).
    pub(super) files: HashMap<i32, Vec<(usize, String)>>,
    /// File watch descriptor → the number of the last `IN_OPEN` event on it:
    /// the file was opened (through any of its names) and may be open for
    /// writing.
    pub(super) opened: HashMap<i32, u64>,
    /// Events read so far: each event's number.
    pub(super) seq: u64,
    /// Cookie names seen since they were created, with their event's number.
    pub(super) cookies: HashMap<String, u64>,
}

pub(super) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Watcher {
    /// Makes sure every event that happened before now has been read: a
    /// cookie file is created next to the first work tree's index, and its
    /// event comes after every earlier one in the queue. Returns the cookie
    /// event's number.
    pub(super) fn sync(&mut self) -> Result<u64, String> {
        let Some(tree) = self.trees.first() else {
            return Ok(0);
        };
        self.cookie_counter += 1;
        let name = format!(
            "{COOKIE_PREFIX}{}-{}",
            std::process::id(),
            self.cookie_counter
        );
        let path = tree
            .index_path
            .parent()
            .unwrap_or(Path::new("/"))
            .join(&name);
        fs_err::write(&path, b"").map_err(|e| format!("create a cookie: {e}"))?;
        let deadline = Instant::now() + COOKIE_TIMEOUT;
        let (mutex, condvar) = &*self.shared;
        let mut shared = lock(mutex);
        let seen = loop {
            if let Some(seq) = shared.cookies.remove(&name) {
                break Some(seq);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break None;
            }
            shared = condvar
                .wait_timeout(shared, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        drop(shared);
        let _ = fs_err::remove_file(&path);
        seen.ok_or_else(|| "the cookie's event did not arrive in time".to_owned())
    }
}

/// The event thread: reads the inotify queue for the life of the process.
pub(super) fn read_events(fd: &rustix::fd::OwnedFd, shared: &(Mutex<Shared>, Condvar)) {
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut reader = inotify::Reader::new(fd, &mut buf);
    loop {
        let event = match reader.next() {
            Ok(e) => e,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(_) => {
                // The queue cannot be read: nothing can be vouched for.
                let mut s = lock(&shared.0);
                for d in &mut s.dirty {
                    d.all = true;
                }
                drop(s);
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let flags = event.events();
        // A name that is not UTF-8 cannot be listed: its directory is marked whole below, so
        // the next query walks it again (and the walk refuses the name).
        let unnamed = event.file_name().is_some_and(|n| n.to_str().is_err());
        let name = event
            .file_name()
            .and_then(|n| n.to_str().ok())
            .map(str::to_owned);
        let mut s = lock(&shared.0);
        s.seq += 1;
        let seq = s.seq;
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            for d in &mut s.dirty {
                d.all = true;
            }
            continue;
        }
        if let Some(paths) = s.files.get(&event.wd()) {
            // A tracked file's inode, whichever name it was reached by.
            if flags.contains(ReadFlags::IGNORED) {
                // Its last link is gone: the directory events say so.
                s.files.remove(&event.wd());
                s.opened.remove(&event.wd());
                continue;
            }
            let paths = paths.clone();
            if flags.contains(ReadFlags::OPEN) {
                s.opened.insert(event.wd(), seq);
            }
            if flags.intersects(ReadFlags::MODIFY | ReadFlags::ATTRIB | ReadFlags::CLOSE_WRITE) {
                for (t, rel) in paths {
                    if let Some(d) = s.dirty.get_mut(t) {
                        d.paths.insert(rel);
                    }
                }
            }
            continue;
        }
        let Some((t, rel)) = s.watches.get(&event.wd()).cloned() else {
            continue;
        };
        if flags.contains(ReadFlags::IGNORED) {
            // The watched directory is gone (or was unwatched on purpose).
            s.watches.remove(&event.wd());
        }
        match rel {
            // The index's directory: cookies, and the index itself (whose
            // stat data are compared at every query anyway).
            None => {
                if let Some(name) = name
                    && name.starts_with(COOKIE_PREFIX)
                    && flags.contains(ReadFlags::CREATE)
                {
                    s.cookies.insert(name, seq);
                    drop(s);
                    shared.1.notify_all();
                }
            }
            Some(dir) => {
                let Some(d) = s.dirty.get_mut(t) else {
                    continue;
                };
                let join = |name: &str| {
                    if dir.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{dir}/{name}")
                    }
                };
                match name {
                    Some(name) if flags.contains(ReadFlags::ISDIR) => {
                        d.prefixes.insert(join(&name));
                    }
                    Some(name) => {
                        d.paths.insert(join(&name));
                    }
                    // The watched directory itself was removed or moved.
                    None if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) => {
                        if dir.is_empty() {
                            d.all = true;
                        } else {
                            d.prefixes.insert(dir);
                        }
                    }
                    None if unnamed => {
                        if dir.is_empty() {
                            d.all = true;
                        } else {
                            d.prefixes.insert(dir);
                        }
                    }
                    None => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{commit_all, git, write};

    /// A cookie's event comes after every earlier one: once `sync` returns,
    /// a file created and a directory made before it are marked, and the
    /// cookie file is gone again.
    #[test]
    fn after_the_cookie_every_earlier_event_is_read() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        write(dir, "d/a.txt", "a\n");
        commit_all(dir);
        let mut watcher = Watcher::new(
            Box::new(|_| {}),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        assert_eq!(watcher.sync(), Ok(0), "no work tree: nothing to wait for");
        watcher.snapshot(dir, &[]).expect("the watcher answers");
        write(dir, "new.txt", "new\n");
        fs_err::create_dir(dir.join("d/sub")).expect("mkdir");
        let first = watcher.sync().expect("a cookie");
        {
            let shared = lock(&watcher.shared.0);
            assert!(shared.dirty[0].paths.contains("new.txt"), "{shared:?}");
            assert!(shared.dirty[0].prefixes.contains("d/sub"), "{shared:?}");
            assert!(shared.cookies.is_empty(), "the cookie was taken");
            assert!(shared.seq >= first);
        }
        fs_err::remove_dir(dir.join("d/sub")).expect("rmdir");
        let second = watcher.sync().expect("a cookie");
        assert!(second > first);
        let left: Vec<_> = fs_err::read_dir(dir.join(".git"))
            .expect("ls .git")
            .map(|e| e.expect("an entry").file_name())
            .filter(|n| n.to_string_lossy().starts_with(COOKIE_PREFIX))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
