//! A file-system watcher that answers snapshot requests without an `lstat`
//! per tracked file: `proofgraph watch` runs [`Watcher::serve`], and every
//! command that reads a worktree snapshot asks it first through [`query`].
//!
//! The watcher keeps, per git work tree, the full snapshot as
//! [`inputs::snapshot`] takes it, an inotify watch on every directory that
//! holds a tracked file and on the directory of the git index, and one on
//! every tracked file's inode. Events mark paths (or, for directories, whole
//! prefixes) dirty; a query first makes sure every event that happened before
//! it has been read — it creates a *cookie* file next to the index and waits
//! for its event, as watchman does — then re-reads only the dirty tracked
//! files, by content. Anything it cannot vouch for starts over from a full
//! snapshot: the index changed (its stat data differ from the snapshot's),
//! the kernel's event queue overflowed, the mount table changed in, at or
//! above a work tree, or this is the first query. A client that cannot reach
//! a watcher, or gets no answer in time, takes the snapshot itself: the
//! watcher only ever saves time, it never decides what a snapshot contains.
//!
//! What a directory watch does not see, and what covers it:
//! - a write, `chmod` or new link through a hard link outside the watched
//!   directories: the file's own inode watch (`IN_MODIFY`, `IN_ATTRIB`);
//! - a write through a shared writable mapping, which makes no event at all
//!   and, while the page stays dirty, does not even change the file's mtime:
//!   the inode watch's `IN_OPEN` makes the file a *suspect*, and the next
//!   query asks the kernel (a read lease, [`lease`]) whether anything has it
//!   open for writing; while something does, the file is re-read at every
//!   query, and once more after (`IN_CLOSE_WRITE` comes only when the last
//!   mapping is gone). A newly watched inode is a suspect too: it may have
//!   been opened before its watch was placed. Counting `IN_OPEN` against
//!   `IN_CLOSE_*` cannot replace the lease: inotify merges an event with an
//!   identical one still queued, so two opens can arrive as one `IN_OPEN`
//!   (one read-only open closed and one writable mapping kept then look like
//!   nothing open);
//! - a mount over a tracked path or a directory: `/proc/self/mountinfo` is
//!   polled at every query, and a client in another mount namespace is
//!   refused;
//! - files below a directory that is a symbolic link (a directory watch
//!   cannot follow it soundly): re-read at every query.
//!
//! Asking is cheap because the watcher holds a read-only descriptor of every
//! tracked regular file ([`Held`], as many as the descriptor limit allows,
//! none below a mount inside the work tree): it asks and re-reads through
//! it, which costs two `fcntl`s and makes no `IN_OPEN` of its own. A file it
//! holds no descriptor for is opened to be asked, behind a cookie that
//! separates the watcher's own `IN_OPEN`s from others'.
//!
//! A query asks about the suspects the events read so far name *before* its
//! cookie: a writer that closes after the ask was seen by it, and one that
//! closed before left its `IN_CLOSE_WRITE` ahead of the cookie, so the
//! refresh re-reads the file. Suspects the events name only up to the cookie
//! are asked after it, and a second cookie then shows whether one of them was
//! closed after writing in between.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use proofgraph_graph::fingerprint::Digest;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use serde::Serialize;

use crate::observe::inputs::{self, FileEntry, FileKind, Snapshot};

mod client;
mod lease;
mod protocol;

pub use client::{is_served, query, wake};
pub use protocol::SOCKET;
use protocol::{
    CLIENT_TIMEOUT, SnapshotHeader, accept_request, answer_frame, bind, encode, mount_namespace,
    refusal_frame,
};

/// Cookie files are created next to the index with this prefix.
const COOKIE_PREFIX: &str = "proofgraph-watch-cookie-";
/// How long a query waits for its cookie before giving up (the client then
/// takes the snapshot itself).
const COOKIE_TIMEOUT: Duration = Duration::from_secs(2);
/// How many files without a held descriptor are opened at once to be asked
/// whether they are open for writing (each holds a descriptor until its
/// batch is answered).
const PROBE_BATCH: usize = 256;
/// Descriptors not used for held files: a probe batch, the socket, the
/// snapshot's directory descriptors, gix.
const FD_RESERVE: u64 = 512;

/// What the events say has changed in one work tree since its snapshot.
#[derive(Debug, Default)]
struct Dirty {
    /// Start over: the queue overflowed, or a watch was lost.
    all: bool,
    /// Files (work-tree-relative) that an event named.
    paths: BTreeSet<String>,
    /// Directories that were created, removed or moved: every tracked file
    /// below them is re-read.
    prefixes: BTreeSet<String>,
}

/// What the event thread and the queries share.
#[derive(Debug, Default)]
struct Shared {
    /// Per work tree (by index in `Watcher::trees`).
    dirty: Vec<Dirty>,
    /// Directory watch descriptor → (work tree, directory relative to it, or
    /// `None` for the index's directory).
    watches: HashMap<i32, (usize, Option<String>)>,
    /// File watch descriptor (one per inode) → the tracked paths of that
    /// inode, as (work tree, path relative to it).
    files: HashMap<i32, Vec<(usize, String)>>,
    /// File watch descriptor → the number of the last `IN_OPEN` event on it:
    /// the file was opened (through any of its names) and may be open for
    /// writing.
    opened: HashMap<i32, u64>,
    /// Events read so far: each event's number.
    seq: u64,
    /// Cookie names seen since they were created, with their event's number.
    cookies: HashMap<String, u64>,
}

/// One git work tree the watcher keeps.
#[derive(Debug)]
struct Tree {
    workdir: PathBuf,
    index_path: PathBuf,
    hash_kind: gix::hash::Kind,
    /// The index's stat data when the snapshot was taken.
    index_stamp: Option<Stamp>,
    /// The tracked paths (the index's entries a snapshot considers).
    tracked: Vec<String>,
    /// The snapshot of the whole work tree.
    files: Vec<FileEntry>,
    /// The file watch of each tracked path that has one.
    file_wd: HashMap<String, i32>,
    /// The descriptor held for each tracked regular file that has one.
    held: HashMap<String, Held>,
    /// Mount points strictly inside the work tree (relative): no descriptor
    /// is held below them, so that they can be unmounted.
    inner_mounts: Vec<String>,
    /// Tracked files that may be open for writing without the watcher
    /// knowing (their watch or held descriptor is new, or they were opened):
    /// asked about at the next query.
    suspects: BTreeSet<String>,
    /// Suspects of this query that may have been opened before its cookie
    /// and are asked only after it: whether one was closed after writing in
    /// between is looked up after a second cookie.
    unsettled: BTreeSet<String>,
    /// Tracked files that were open for writing when last asked: a shared
    /// writable mapping changes them without any event, so they are re-read
    /// at every query until one after nothing has them open for writing.
    writers: BTreeSet<String>,
    /// Files the query's early asking found open for writing (or open for
    /// writing until then): re-read by its refresh.
    reread: BTreeSet<String>,
    /// Directories on a tracked path that are symbolic links: nothing
    /// watches what they point to, so the tracked files below them are
    /// re-read at every query.
    linked_dirs: BTreeSet<String>,
    /// The mount points in, at or above the work tree (`/proc/self/mountinfo`
    /// lines: mount id and mount point).
    mounts: Vec<String>,
}

/// A read-only descriptor of a tracked regular file, held while the watcher
/// runs: the file is read and asked whether it is open for writing through
/// it, without an `open` (and so without an `IN_OPEN` of the watcher's own).
#[derive(Debug)]
struct Held {
    fd: rustix::fd::OwnedFd,
    /// The file's device and inode: a path that names another file now gets
    /// a new descriptor.
    dev: u64,
    ino: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: (i64, u64),
    ctime: (i64, u64),
    size: i64,
    ino: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let st = rustix::fs::stat(path).ok()?;
    Some(Stamp {
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
        size: st.st_size,
        ino: st.st_ino,
    })
}

/// What a watcher has done, for its final report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Served {
    /// Queries answered with a snapshot.
    pub answered: u64,
    /// Queries refused (the client took the snapshot itself).
    pub refused: u64,
    /// Full snapshots taken.
    pub full_snapshots: u64,
    /// The work trees watched.
    pub work_trees: Vec<String>,
}

/// The watcher: one inotify instance, an event thread, and the queries.
pub struct Watcher {
    inotify: Arc<rustix::fd::OwnedFd>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    trees: Vec<Tree>,
    /// Queried directory → its work tree.
    tree_of: HashMap<PathBuf, usize>,
    cookie_counter: u64,
    /// `/proc/self/mountinfo`, polled for a change of the mount table.
    mountinfo: Option<rustix::fd::OwnedFd>,
    /// This process's mount namespace: a client in another one sees other
    /// files under the same paths.
    mount_namespace: Option<String>,
    served: Served,
    log: Box<dyn FnMut(&str) + Send>,
    /// Descriptors held, and how many may be.
    held_count: usize,
    held_limit: usize,
    /// Files asked whether they are open for writing in this query.
    asked: usize,
    /// Which, in tests.
    #[cfg(test)]
    asked_paths: BTreeSet<String>,
    /// Called at named points of a query, to change files exactly there.
    #[cfg(test)]
    hook: Option<Box<dyn FnMut(&'static str) + Send>>,
}

/// How many descriptors the watcher may hold for tracked files: the soft
/// limit of open files, raised to the hard one, less [`FD_RESERVE`].
fn descriptor_budget() -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.maximum != limit.current {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
    let current = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    usize::try_from(current.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX)
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lines of `/proc/self/mountinfo` whose mount point is `workdir`, below
/// it or above it (mount id and mount point): a mount there changes what a
/// path in the work tree names without an inotify event.
fn mounts_of(mountinfo: &str, workdir: &Path) -> Vec<String> {
    let mut out: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let id = fields.next()?;
            let point = PathBuf::from(unescape_mount_point(fields.nth(3)?));
            (point.starts_with(workdir) || workdir.starts_with(&point))
                .then(|| format!("{id} {}", point.display()))
        })
        .collect();
    out.sort();
    out
}

/// The mount points strictly inside `workdir`, relative to it, from the
/// lines [`mounts_of`] keeps.
fn inner_mounts(mounts: &[String], workdir: &Path) -> Vec<String> {
    mounts
        .iter()
        .filter_map(|line| {
            let (_, point) = line.split_once(' ')?;
            let rel = Path::new(point).strip_prefix(workdir).ok()?;
            (!rel.as_os_str().is_empty()).then(|| rel.to_string_lossy().into_owned())
        })
        .collect()
}

/// Whether the relative path `rel` is at or below one of `mounts`.
fn below_any(mounts: &[String], rel: &str) -> bool {
    mounts.iter().any(|m| below(m, rel))
}

/// Whether the relative path `rel` is `dir` or below it.
fn below(dir: &str, rel: &str) -> bool {
    rel.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `/proc/self/mountinfo` writes space, tab, newline and backslash in a
/// mount point as `\ooo`.
fn unescape_mount_point(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(((d[0] - b'0') << 6) | ((d[1] - b'0') << 3) | (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Watcher {
    /// Creates the inotify instance and starts the thread that reads it.
    /// `log` receives one line per query and per full snapshot.
    pub fn new(log: Box<dyn FnMut(&str) + Send>) -> std::io::Result<Self> {
        let fd = Arc::new(inotify::init(CreateFlags::CLOEXEC)?);
        let shared: Arc<(Mutex<Shared>, Condvar)> = Arc::default();
        {
            let fd = Arc::clone(&fd);
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("watch-events".to_owned())
                .spawn(move || read_events(&fd, &shared))?;
        }
        let mountinfo = rustix::fs::open(
            "/proc/self/mountinfo",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok();
        Ok(Watcher {
            inotify: fd,
            shared,
            trees: Vec::new(),
            tree_of: HashMap::new(),
            cookie_counter: 0,
            mountinfo,
            mount_namespace: mount_namespace(),
            served: Served::default(),
            log,
            held_count: 0,
            held_limit: descriptor_budget(),
            asked: 0,
            #[cfg(test)]
            asked_paths: BTreeSet::new(),
            #[cfg(test)]
            hook: None,
        })
    }

    /// Runs the test hook at `point`.
    #[cfg(test)]
    fn at(&mut self, point: &'static str) {
        if let Some(hook) = &mut self.hook {
            hook(point);
        }
    }

    #[cfg(not(test))]
    fn at(&mut self, _point: &'static str) {}

    /// What it has done so far.
    pub fn served(&self) -> Served {
        let mut served = self.served.clone();
        served.work_trees = self
            .trees
            .iter()
            .map(|t| t.workdir.display().to_string())
            .collect();
        served
    }

    /// Listens on `socket` (removing a stale one; refusing when another
    /// watcher answers there) and answers queries until the process ends.
    pub fn serve(
        &mut self,
        socket: &Path,
        stop: &std::sync::atomic::AtomicBool,
    ) -> std::io::Result<()> {
        if socket.exists() {
            if is_served(socket) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!("another watcher already serves {}", socket.display()),
                ));
            }
            fs_err::remove_file(socket)?;
        }
        let listener = bind(socket)?;
        for stream in listener.incoming() {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            self.answer(&stream);
        }
        Ok(())
    }

    fn answer(&mut self, stream: &UnixStream) {
        let _ = stream.set_read_timeout(Some(CLIENT_TIMEOUT));
        let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
        let mut line = String::new();
        // A connection that says nothing (a liveness check, a wake-up) gets
        // nothing.
        if BufReader::new(stream).read_line(&mut line).is_err() || line.trim().is_empty() {
            return;
        }
        let started = Instant::now();
        let result = accept_request(&line, &self.mount_namespace).and_then(|r| {
            let wanted: Vec<(&Path, &[String])> = r
                .wanted
                .iter()
                .map(|w| (w.dir.as_path(), w.exclude.as_slice()))
                .collect();
            // Encoded straight from the work trees' snapshots: no copy
            // of 20 000 paths per answer.
            let mut headers = Vec::with_capacity(wanted.len());
            let mut body = Vec::new();
            for ((dir, t, rehashed), (_, exclude)) in
                self.refreshed(&wanted)?.into_iter().zip(&wanted)
            {
                let mut files = 0;
                for (path, f) in self.files_below(t, &dir, exclude)? {
                    encode(path, f, &mut body);
                    files += 1;
                }
                headers.push(SnapshotHeader {
                    dir,
                    files,
                    rehashed,
                });
            }
            Ok((headers, body))
        });
        let out = match result {
            Ok((snapshots, body)) => {
                self.served.answered += 1;
                let (files, rehashed) = snapshots
                    .iter()
                    .fold((0, 0), |(f, r), s| (f + s.files, r + s.rehashed));
                let count = snapshots.len();
                let out = answer_frame(snapshots, &body);
                (self.log)(&format!(
                    "answered {count} director{}: {files} files, {rehashed} re-read, {} asked whether open for writing ({:.1} ms)",
                    if count == 1 { "y" } else { "ies" },
                    self.asked,
                    started.elapsed().as_secs_f64() * 1000.0
                ));
                out
            }
            Err(reason) => {
                self.served.refused += 1;
                (self.log)(&format!("refused a query: {reason}"));
                refusal_frame(reason)
            }
        };
        let _ = (&*stream).write_all(&out);
    }

    /// The snapshots of several directories after one synchronisation, as
    /// `inputs::snapshots` takes them.
    pub fn snapshots(&mut self, wanted: &[(&Path, &[String])]) -> Result<Vec<Snapshot>, String> {
        let mut out = Vec::with_capacity(wanted.len());
        for ((dir, t, rehashed), (_, exclude)) in self.refreshed(wanted)?.into_iter().zip(wanted) {
            let files = self
                .files_below(t, &dir, exclude)?
                .map(|(path, f)| FileEntry {
                    path: path.to_owned(),
                    id: f.id,
                    kind: f.kind,
                })
                .collect();
            out.push(Snapshot {
                dir,
                files,
                rehashed,
            });
        }
        Ok(out)
    }

    /// Brings the work trees of several directories up to date after one
    /// synchronisation: each directory (canonical), its work tree, and how
    /// many files were read (counted for a work tree's first directory).
    fn refreshed(
        &mut self,
        wanted: &[(&Path, &[String])],
    ) -> Result<Vec<(PathBuf, usize, usize)>, String> {
        let mut trees = Vec::with_capacity(wanted.len());
        for (dir, _) in wanted {
            let canonical_dir = fs_err::canonicalize(dir).map_err(|e| e.to_string())?;
            let t = self.tree_for(&canonical_dir)?;
            trees.push((canonical_dir, t));
        }
        let queried: BTreeSet<usize> = trees.iter().map(|(_, t)| *t).collect();
        self.asked = 0;
        #[cfg(test)]
        self.asked_paths.clear();
        // What events cannot vouch for: files that may be written through a
        // shared mapping. Those the events read so far name are asked about
        // before the cookie, the rest after the refresh.
        self.ask_early(&queried)?;
        let cookie = self.sync()?;
        self.check_mounts()?;
        let mut rehashed: HashMap<usize, usize> = HashMap::new();
        for &t in &queried {
            let n = self.refresh_or_forget(t)?;
            rehashed.insert(t, n);
        }
        self.at("refreshed");
        for (t, n) in self.ask_late(&queried, cookie)? {
            *rehashed.entry(t).or_default() += n;
        }
        let mut counted = BTreeSet::new();
        Ok(trees
            .into_iter()
            .map(|(canonical_dir, t)| {
                let read = if counted.insert(t) { rehashed[&t] } else { 0 };
                (canonical_dir, t, read)
            })
            .collect())
    }

    /// Refreshes a work tree; on failure it is snapshotted anew next time
    /// (what was dirty has been taken).
    fn refresh_or_forget(&mut self, t: usize) -> Result<usize, String> {
        self.refresh(t).inspect_err(|_| {
            lock(&self.shared.0).dirty[t].all = true;
        })
    }

    /// The snapshot of `dir`, as `inputs::snapshot(dir, exclude)` takes it.
    pub fn snapshot(&mut self, dir: &Path, exclude: &[String]) -> Result<Snapshot, String> {
        self.snapshots(&[(dir, exclude)])?
            .pop()
            .ok_or_else(|| "no snapshot".to_owned())
    }

    /// A directory's part of its work tree's snapshot: each file's path
    /// relative to the directory, and the file.
    fn files_below<'a>(
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
                (!exclude.iter().any(|e| rel.starts_with(e.as_str()))).then_some((rel, f))
            }))
    }

    /// The work tree of a directory, watching it on first use.
    fn tree_for(&mut self, dir: &Path) -> Result<usize, String> {
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

    /// Watches a directory of tree `t` (or, with `rel` `None`, the index's).
    fn watch(&self, t: usize, path: &Path, rel: Option<String>) -> std::io::Result<i32> {
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
    fn watch_dir(&mut self, t: usize, rel: &str) -> std::io::Result<Option<i32>> {
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
    fn track_file(&mut self, t: usize, rel: &str) -> std::io::Result<bool> {
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
    fn watched(&self, t: usize, rel: &str) -> bool {
        self.trees[t]
            .file_wd
            .get(rel)
            .is_some_and(|wd| lock(&self.shared.0).files.contains_key(wd))
    }

    /// Stops holding `rel`'s descriptor.
    fn release(&mut self, t: usize, rel: &str) {
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

    /// Makes sure every event that happened before now has been read: a
    /// cookie file is created next to the first work tree's index, and its
    /// event comes after every earlier one in the queue. Returns the cookie
    /// event's number.
    fn sync(&mut self) -> Result<u64, String> {
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

    /// A mount or unmount in, at or above a work tree changes what its paths
    /// name without an inotify event: such a tree starts over from a full
    /// snapshot (whose watches are then placed through the new mounts).
    fn check_mounts(&mut self) -> Result<(), String> {
        let Some(fd) = &self.mountinfo else {
            return Err("`/proc/self/mountinfo` cannot be read".to_owned());
        };
        let mut fds = [rustix::event::PollFd::new(
            fd,
            rustix::event::PollFlags::PRI,
        )];
        let changed = match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default()))
        {
            Ok(0) => false,
            Ok(_) => true,
            Err(e) => return Err(format!("poll `/proc/self/mountinfo`: {e}")),
        };
        if !changed {
            return Ok(());
        }
        let mountinfo =
            fs_err::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let mut shared = lock(&self.shared.0);
        for (t, tree) in self.trees.iter_mut().enumerate() {
            let now = mounts_of(&mountinfo, &tree.workdir);
            if now != tree.mounts {
                tree.inner_mounts = inner_mounts(&now, &tree.workdir);
                tree.mounts = now;
                shared.dirty[t].all = true;
            }
        }
        Ok(())
    }

    /// Brings a work tree's snapshot up to date; returns how many files were
    /// read. Files the early asking found open for writing (or open for
    /// writing until then) are re-read too.
    fn refresh(&mut self, t: usize) -> Result<usize, String> {
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
    fn reread(&mut self, t: usize, targets: BTreeSet<String>) -> Result<(), String> {
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
    fn ask_early(&mut self, queried: &BTreeSet<usize>) -> Result<(), String> {
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
    fn ask_late(
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

/// The tracked files of `tree` that `dirty`'s events name: the files named,
/// and those below a directory named, or below a directory that is a
/// symbolic link (no event covers those); and the directories from each
/// named directory down to those files (a directory that was removed and
/// created anew is a new inode, to be watched again).
fn named(tree: &Tree, dirty: &Dirty) -> (BTreeSet<String>, BTreeSet<String>) {
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
fn parent_dirs(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(path.rsplit_once('/').map(|(d, _)| d), |d| {
        d.rsplit_once('/').map(|(parent, _)| parent)
    })
}

/// The tracked paths a snapshot considers, sorted.
fn tracked_paths(workdir: &Path) -> Result<Vec<String>, String> {
    let repo = gix::discover(workdir).map_err(|e| e.to_string())?;
    let index = repo.index_or_empty().map_err(|e| e.to_string())?;
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
fn read_file(
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
fn read_held(held: &Held, hash_kind: gix::hash::Kind) -> std::io::Result<(Digest, FileKind)> {
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

/// The event thread: reads the inotify queue for the life of the process.
fn read_events(fd: &rustix::fd::OwnedFd, shared: &(Mutex<Shared>, Condvar)) {
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

    /// After every kind of change a user makes, the watcher's snapshot is the
    /// one an lstat of every file gives, for the whole tree and for a
    /// directory inside it (with an exclusion), and it re-reads only what
    /// changed.
    #[test]
    fn the_watcher_agrees_with_a_full_snapshot_after_every_change() {
        agrees_after_every_change(None);
    }

    /// The same with no descriptor held: every suspect is opened to be
    /// asked, behind a cookie.
    #[test]
    fn the_watcher_agrees_with_a_full_snapshot_holding_no_descriptor() {
        agrees_after_every_change(Some(0));
    }

    fn agrees_after_every_change(held_limit: Option<usize>) {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        for (path, content) in [
            ("a/one.txt", "one\n"),
            ("a/two.txt", "two\n"),
            ("a/deep/three.txt", "three\n"),
            ("b/four.txt", "four\n"),
            ("openspec/changes/c/proposal.md", "why\n"),
            ("top.txt", "top\n"),
        ] {
            write(dir, path, content);
        }
        commit_all(dir);
        let mut watcher = Watcher::new(Box::new(|_| {})).expect("inotify is usable");
        if let Some(limit) = held_limit {
            watcher.held_limit = limit;
        }
        let exclude = ["changes/".to_owned()];
        let openspec = dir.join("openspec");
        let check = |watcher: &mut Watcher, step: &str| -> usize {
            // One query for the whole tree and a directory inside it, as
            // `prove` asks for all of a workspace's repositories at once.
            let wanted: [(&Path, &[String]); 2] = [(dir, &[]), (&openspec, &exclude)];
            let answered = watcher.snapshots(&wanted).expect("the watcher answers");
            let direct = inputs::snapshots(&wanted);
            assert_eq!(answered.len(), 2);
            for (a, d) in answered.iter().zip(direct) {
                let d = d.expect("a snapshot");
                assert_eq!(a.dir, d.dir, "{step}");
                assert_eq!(a.files, d.files, "{step}: {}", d.dir.display());
            }
            answered[0].rehashed
        };
        check(&mut watcher, "first (a full snapshot)");
        assert_eq!(check(&mut watcher, "nothing changed"), 0);

        write(dir, "a/one.txt", "one, edited\n");
        assert_eq!(check(&mut watcher, "an edit"), 1, "only the edited file");
        fs_err::remove_file(dir.join("a/two.txt")).expect("rm");
        check(&mut watcher, "a deletion");
        write(dir, "a/two.txt", "two again\n");
        check(&mut watcher, "re-created");
        fs_err::set_permissions(dir.join("top.txt"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        check(&mut watcher, "made executable");
        fs_err::remove_file(dir.join("b/four.txt")).expect("rm");
        std::os::unix::fs::symlink("../top.txt", dir.join("b/four.txt")).expect("symlink");
        check(&mut watcher, "a file replaced by a link");
        fs_err::rename(dir.join("a"), dir.join("a-moved")).expect("mv");
        check(&mut watcher, "a directory moved away");
        fs_err::rename(dir.join("a-moved"), dir.join("a")).expect("mv back");
        check(&mut watcher, "and back");
        write(
            dir,
            "a/deep/three.txt",
            "three, edited in a directory moved back\n",
        );
        check(&mut watcher, "an edit below the moved directory");
        fs_err::remove_dir_all(dir.join("a/deep")).expect("rm -r");
        write(dir, "a/deep/three.txt", "three, in a new directory\n");
        check(&mut watcher, "a directory removed and made anew");
        write(
            dir,
            "a/deep/three.txt",
            "three, edited in the new directory\n",
        );
        assert_eq!(
            check(&mut watcher, "an edit in the new directory"),
            1,
            "the new directory is watched"
        );
        write(dir, "untracked.txt", "not tracked\n");
        assert_eq!(check(&mut watcher, "an untracked file"), 0);
        write(dir, "c/new.txt", "new\n");
        git(dir, &["add", "c/new.txt"]);
        check(&mut watcher, "a file added to the index");
        write(dir, "c/new.txt", "new, edited after it was added\n");
        assert_eq!(
            check(&mut watcher, "an edit in a newly tracked directory"),
            1
        );
        git(dir, &["rm", "-q", "--cached", "top.txt"]);
        check(&mut watcher, "a file removed from the index");
        write(dir, "openspec/changes/c/proposal.md", "why, edited\n");
        check(&mut watcher, "an edit in the excluded packet");
        fs_err::remove_file(dir.join("b/four.txt")).expect("rm link");
        fs_err::remove_dir(dir.join("b")).expect("rmdir");
        write(dir, "b", "a file where a directory was\n");
        check(&mut watcher, "a directory replaced by a file");

        // What happens to a tracked file without an event in its directory.
        let outside = tempfile::tempdir().expect("tempdir");
        let out = outside.path();
        // A hard link outside the work tree: the link itself changes only
        // the inode's link count, then the file is written through it.
        fs_err::hard_link(dir.join("a/two.txt"), out.join("x")).expect("ln");
        check(&mut watcher, "a hard link made outside the tree");
        fs_err::write(out.join("x"), "two, written through an outside link\n").expect("write");
        assert_eq!(
            check(&mut watcher, "a write through the outside link"),
            1,
            "the file's own watch saw it"
        );
        fs_err::set_permissions(out.join("x"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        check(&mut watcher, "made executable through the outside link");
        // A shared writable mapping: no event for its writes, and a second
        // write while the page is still dirty does not change the mtime.
        let mut mapping = Mapping::new(&dir.join("a/one.txt"));
        check(&mut watcher, "mapped, not written yet");
        mapping.write(0, b"O");
        check(&mut watcher, "a first write through a shared mapping");
        mapping.write(1, b"N");
        check(&mut watcher, "a second write in the same mapping");
        mapping.write(2, b"E");
        mapping.finish();
        check(&mut watcher, "a write, then the mapping is gone");
        assert_eq!(
            check(&mut watcher, "nothing changed after the mapping"),
            0,
            "a file nothing writes any more is not re-read"
        );
        // The same through a mapping of the outside link.
        let mut mapping = Mapping::new(&out.join("x"));
        mapping.write(0, b"T");
        check(
            &mut watcher,
            "a write through a mapping of the outside link",
        );
        mapping.write(1, b"W");
        check(&mut watcher, "a second write through that mapping");
        mapping.finish();
        fs_err::remove_file(out.join("x")).expect("rm the outside link");
        check(&mut watcher, "the outside link removed");
        // A file replaced by one renamed in from outside the tree.
        fs_err::write(out.join("new.txt"), "one, renamed in from outside\n").expect("write");
        fs_err::rename(out.join("new.txt"), dir.join("a/one.txt")).expect("mv");
        check(&mut watcher, "a file renamed in from outside");
        // A directory replaced by a symbolic link to a directory outside:
        // its files are read through the link, and changed where it points.
        fs_err::create_dir(out.join("deep")).expect("mkdir");
        fs_err::write(out.join("deep/three.txt"), "three, outside\n").expect("write");
        fs_err::remove_dir_all(dir.join("a/deep")).expect("rm -r");
        std::os::unix::fs::symlink(out.join("deep"), dir.join("a/deep")).expect("symlink");
        check(
            &mut watcher,
            "a directory replaced by a link to one outside",
        );
        let held = |watcher: &Watcher| watcher.trees[0].held.contains_key("a/deep/three.txt");
        assert!(
            !held(&watcher),
            "nothing is held where a linked directory points (it may be another mount)"
        );
        fs_err::write(out.join("deep/three.txt"), "three, edited outside\n").expect("write");
        check(&mut watcher, "an edit where the linked directory points");
        fs_err::write(out.join("deep/tmp"), "three, renamed over outside\n").expect("write");
        fs_err::rename(out.join("deep/tmp"), out.join("deep/three.txt")).expect("mv");
        check(&mut watcher, "a rename where the linked directory points");
        fs_err::create_dir(out.join("deep2")).expect("mkdir");
        fs_err::write(out.join("deep2/three.txt"), "three, elsewhere\n").expect("write");
        fs_err::rename(out.join("deep"), out.join("deep-old")).expect("mv");
        fs_err::rename(out.join("deep2"), out.join("deep")).expect("mv");
        check(
            &mut watcher,
            "the linked directory's target replaced outside",
        );
        fs_err::remove_file(dir.join("a/deep")).expect("rm link");
        write(dir, "a/deep/three.txt", "three, a directory again\n");
        check(&mut watcher, "the link replaced by a directory again");
        assert_eq!(held(&watcher), held_limit.is_none());
        write(dir, "a/deep/three.txt", "three, edited once more\n");
        assert_eq!(
            check(&mut watcher, "an edit in the directory that was a link"),
            1,
            "it is watched again, and nothing else is re-read"
        );
        assert!(
            watcher.served().full_snapshots >= 3,
            "{:?}",
            watcher.served()
        );
        let held: usize = watcher.trees.iter().map(|t| t.held.len()).sum();
        assert_eq!(held, watcher.held_count, "every held descriptor is counted");
        assert!(held <= watcher.held_limit);
        nothing_is_asked_twice(&mut watcher, dir);
    }

    /// The query after one with nothing new asks about no file and reads
    /// none: the watcher's own reads and asks made no file a suspect.
    fn nothing_is_asked_twice(watcher: &mut Watcher, dir: &Path) {
        // This one asks about what the test's own snapshots opened.
        watcher.snapshot(dir, &[]).expect("the watcher answers");
        let again = watcher.snapshot(dir, &[]).expect("the watcher answers");
        assert_eq!((again.rehashed, watcher.asked), (0, 0));
    }

    /// Another process holding a shared writable mapping of a file (Python's
    /// `mmap`), writing through it on request.
    struct Mapping {
        child: std::process::Child,
        lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    }

    impl Mapping {
        fn new(path: &Path) -> Self {
            let mut child = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import mmap, os, sys\n\
                     fd = os.open(sys.argv[1], os.O_RDWR)\n\
                     m = mmap.mmap(fd, 0)\n\
                     os.close(fd)\n\
                     print('mapped', flush=True)\n\
                     for line in sys.stdin:\n\
                     \x20   at, byte = line.split()\n\
                     \x20   m[int(at)] = ord(byte)\n\
                     \x20   print('written', flush=True)\n\
                     m.close()\n",
                ])
                .arg(path)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("python3 runs (install python3)");
            let stdout = child.stdout.take().expect("stdout");
            let mut lines = BufReader::new(stdout).lines();
            assert_eq!(
                lines.next().map(|l| l.expect("a line")).as_deref(),
                Some("mapped")
            );
            Mapping { child, lines }
        }

        fn write(&mut self, at: usize, byte: &[u8]) {
            let stdin = self.child.stdin.as_mut().expect("stdin");
            writeln!(stdin, "{at} {}", String::from_utf8_lossy(byte)).expect("ask");
            assert_eq!(
                self.lines.next().map(|l| l.expect("a line")).as_deref(),
                Some("written")
            );
        }

        /// Unmaps and exits.
        fn finish(mut self) {
            drop(self.child.stdin.take());
            assert!(self.child.wait().expect("wait").success());
        }
    }

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
        let mut watcher = Watcher::new(Box::new(|_| {})).expect("inotify is usable");
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
        let mut watcher = Watcher::new(Box::new(move |line| {
            lock_log(&lines).push(line.to_owned());
        }))
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
        let mut watcher = Watcher::new(Box::new(|_| {})).expect("inotify is usable");
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

    /// Why the watcher asks the kernel instead of counting `IN_OPEN`s
    /// against `IN_CLOSE_*`: inotify drops an event identical to the last one
    /// still queued, so a read-only open and a writable one in a row arrive
    /// as one `IN_OPEN`; when the read-only one is closed, the counts say
    /// nothing is open while a writable mapping is. The lease says so.
    #[test]
    fn inotify_merges_opens_so_counting_them_cannot_replace_the_lease() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("f");
        fs_err::write(&path, "content\n").expect("write");
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).expect("inotify");
        let flags = WatchFlags::OPEN | WatchFlags::CLOSE_WRITE | WatchFlags::CLOSE_NOWRITE;
        inotify::add_watch(&fd, &path, flags).expect("watch");
        let reading = fs_err::File::open(&path).expect("open read-only");
        // Opens it read-write, maps it shared, closes the descriptor: the
        // mapping keeps the file open for writing.
        let mapping = Mapping::new(&path);
        drop(reading);
        let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&fd, &mut buf);
        let (mut opens, mut closes) = (0, 0);
        while let Ok(event) = reader.next() {
            if event.events().contains(ReadFlags::OPEN) {
                opens += 1;
            }
            if event
                .events()
                .intersects(ReadFlags::CLOSE_WRITE | ReadFlags::CLOSE_NOWRITE)
            {
                closes += 1;
            }
        }
        assert_eq!((opens, closes), (1, 1), "two opens arrived as one");
        let asked = fs_err::File::open(&path).expect("open");
        let asked = std::os::fd::AsFd::as_fd(asked.file());
        lease::prepare(asked).expect("prepare");
        assert!(lease::open_for_writing(asked).expect("a lease answer"));
        mapping.finish();
    }

    #[test]
    fn inner_mounts_are_below_the_work_tree() {
        let mounts = [
            "22 /".to_owned(),
            "30 /w/t/web/src".to_owned(),
            "31 /w/t".to_owned(),
        ];
        let inner = inner_mounts(&mounts, Path::new("/w/t"));
        assert_eq!(inner, ["web/src"]);
        assert!(below_any(&inner, "web/src"));
        assert!(below_any(&inner, "web/src/app.js"));
        assert!(!below_any(&inner, "web/srcs/app.js"));
        assert!(!below_any(&inner, "web/app.js"));
    }

    #[test]
    fn mounts_in_at_or_above_a_work_tree_are_its_own() {
        let mountinfo = "22 1 8:1 / / rw - ext4 /dev/vda rw\n\
                         30 22 8:1 /src /w/my\\040tree/web/src rw - ext4 /dev/vda rw\n\
                         31 22 0:5 / /w/other rw - tmpfs tmpfs rw\n\
                         32 22 0:6 / /w/my\\040tree2 rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mounts_of(mountinfo, Path::new("/w/my tree")),
            ["22 /", "30 /w/my tree/web/src"],
            "a sibling whose name only starts the same is not in the tree"
        );
        assert_eq!(unescape_mount_point("a\\011b\\134c\\9"), "a\tb\\c\\9");
    }
}
