//! A file-system watcher that answers snapshot requests without an `lstat`
//! per tracked file: `proofgraph watch` runs [`Watcher::serve`], and every
//! command that reads a worktree snapshot asks it first through [`query`].
//!
//! The watcher keeps, per git work tree, the full snapshot as
//! [`inputs::snapshot`] takes it and an inotify watch on every directory that
//! holds a tracked file and on the directory of the git index. Events mark
//! paths (or, for directories, whole prefixes) dirty; a query first makes sure
//! every event that happened before it has been read — it creates a *cookie*
//! file next to the index and waits for its event, as watchman does — then
//! re-reads only the dirty tracked files, by content. Anything it cannot
//! vouch for starts over from a full snapshot: the index changed (its stat
//! data differ from the snapshot's), the kernel's event queue overflowed, or
//! this is the first query. A client that cannot reach a watcher, or gets no
//! answer in time, takes the snapshot itself: the watcher only ever saves
//! time, it never decides what a snapshot contains.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use proofgraph_graph::fingerprint::Digest;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use serde::{Deserialize, Serialize};

use crate::inputs::{self, FileEntry, FileKind, Snapshot};

/// The socket's name in the store directory.
pub const SOCKET: &str = "watch.sock";
/// The protocol: a change in what a snapshot means, or in the framing,
/// changes it, and a client and a watcher that disagree do not talk.
const PROTOCOL: &str = concat!("proofgraph-watch/1 ", env!("CARGO_PKG_VERSION"));
/// Cookie files are created next to the index with this prefix.
const COOKIE_PREFIX: &str = "proofgraph-watch-cookie-";
/// How long a query waits for its cookie before giving up (the client then
/// takes the snapshot itself).
const COOKIE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a client waits for an answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// One query: the snapshots of several directories, answered together
/// after one synchronisation.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    protocol: String,
    wanted: Vec<Wanted>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Wanted {
    dir: PathBuf,
    exclude: Vec<String>,
}

/// The answer's first line; the snapshots' files follow, encoded, in order.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    ok: bool,
    reason: Option<String>,
    snapshots: Vec<SnapshotHeader>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SnapshotHeader {
    dir: PathBuf,
    files: usize,
    rehashed: usize,
}

/// Asks the watcher serving the store at `store_dir` for the snapshots of
/// `wanted` directories (each as [`inputs::snapshot`]`(dir, exclude)` would
/// take it), in order. `None` when no watcher answers, or it cannot vouch for
/// all of them: take the snapshots directly.
pub fn query(store_dir: &Path, wanted: &[(&Path, &[String])]) -> Option<Vec<Snapshot>> {
    let socket = store_dir.join(SOCKET);
    if wanted.is_empty() || !socket.exists() {
        return None;
    }
    let stream = connect(&socket).ok()?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT)).ok()?;
    let request = Request {
        protocol: PROTOCOL.to_owned(),
        wanted: wanted
            .iter()
            .map(|(dir, exclude)| Wanted {
                dir: dir.to_path_buf(),
                exclude: exclude.to_vec(),
            })
            .collect(),
    };
    let mut line = serde_json::to_vec(&request).ok()?;
    line.push(b'\n');
    (&stream).write_all(&line).ok()?;
    let mut reader = BufReader::with_capacity(256 * 1024, &stream);
    let mut header = String::new();
    reader.read_line(&mut header).ok()?;
    let header: Header = serde_json::from_str(&header).ok()?;
    if !header.ok || header.snapshots.len() != wanted.len() {
        return None;
    }
    let mut body = Vec::new();
    reader.read_to_end(&mut body).ok()?;
    let mut rest = body.as_slice();
    let mut out = Vec::with_capacity(header.snapshots.len());
    for h in header.snapshots {
        let (files, after) = decode(rest, h.files)?;
        rest = after;
        out.push(Snapshot {
            dir: h.dir,
            files,
            rehashed: h.rehashed,
        });
    }
    rest.is_empty().then_some(out)
}

/// Whether a watcher answers on `socket`.
pub fn is_served(socket: &Path) -> bool {
    socket.exists() && connect(socket).is_ok()
}

/// Wakes a watcher blocked waiting for a query (to see its stop flag).
pub fn wake(socket: &Path) -> std::io::Result<()> {
    connect(socket).map(drop)
}

/// Unix socket paths are limited to 108 bytes; a longer one is reached
/// through the `/proc/self/fd` link of its open directory.
fn connect(socket: &Path) -> std::io::Result<UnixStream> {
    with_short_path(socket, |p| UnixStream::connect(p))
}

fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    with_short_path(socket, |p| UnixListener::bind(p))
}

fn with_short_path<T>(
    socket: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    if socket.as_os_str().len() < 100 {
        return f(socket);
    }
    let parent = socket.parent().unwrap_or(Path::new("/"));
    let name = socket.file_name().unwrap_or_default();
    let dir = fs_err::File::open(parent)?;
    let short = PathBuf::from(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&dir)
    ))
    .join(name);
    f(&short)
}

fn encode(files: &[FileEntry], out: &mut Vec<u8>) {
    for f in files {
        out.push(match f.kind {
            FileKind::File => 0,
            FileKind::Executable => 1,
            FileKind::Symlink => 2,
        });
        out.extend_from_slice(
            &u32::try_from(f.path.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        out.extend_from_slice(f.path.as_bytes());
        out.extend_from_slice(&f.id.0);
    }
}

/// Decodes `count` files from the front of `body`; the files and what
/// follows them.
fn decode(mut body: &[u8], count: usize) -> Option<(Vec<FileEntry>, &[u8])> {
    let mut files = Vec::with_capacity(count);
    for _ in 0..count {
        let (&kind, rest) = body.split_first()?;
        let kind = match kind {
            0 => FileKind::File,
            1 => FileKind::Executable,
            2 => FileKind::Symlink,
            _ => return None,
        };
        let len = usize::try_from(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
        let path = std::str::from_utf8(rest.get(4..4 + len)?).ok()?.to_owned();
        let id: [u8; 32] = rest.get(4 + len..4 + len + 32)?.try_into().ok()?;
        body = &rest[4 + len + 32..];
        files.push(FileEntry {
            path,
            id: Digest(id),
            kind,
        });
    }
    Some((files, body))
}

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
    /// Watch descriptor → (work tree, directory relative to it, or `None`
    /// for the index's directory).
    watches: HashMap<i32, (usize, Option<String>)>,
    /// Cookie names seen since they were created.
    cookies: BTreeSet<String>,
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
    served: Served,
    log: Box<dyn FnMut(&str) + Send>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
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
        Ok(Watcher {
            inotify: fd,
            shared,
            trees: Vec::new(),
            tree_of: HashMap::new(),
            cookie_counter: 0,
            served: Served::default(),
            log,
        })
    }

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
        let result = serde_json::from_str::<Request>(&line)
            .map_err(|e| format!("malformed request: {e}"))
            .and_then(|r| {
                if r.protocol == PROTOCOL {
                    Ok(r)
                } else {
                    Err(format!(
                        "the client speaks `{}`, this watcher `{PROTOCOL}`",
                        r.protocol
                    ))
                }
            })
            .and_then(|r| {
                let wanted: Vec<(&Path, &[String])> = r
                    .wanted
                    .iter()
                    .map(|w| (w.dir.as_path(), w.exclude.as_slice()))
                    .collect();
                self.snapshots(&wanted)
            });
        let mut out = Vec::new();
        match result {
            Ok(snapshots) => {
                self.served.answered += 1;
                let header = Header {
                    ok: true,
                    reason: None,
                    snapshots: snapshots
                        .iter()
                        .map(|s| SnapshotHeader {
                            dir: s.dir.clone(),
                            files: s.files.len(),
                            rehashed: s.rehashed,
                        })
                        .collect(),
                };
                out.extend(serde_json::to_vec(&header).unwrap_or_default());
                out.push(b'\n');
                for snapshot in &snapshots {
                    encode(&snapshot.files, &mut out);
                }
                (self.log)(&format!(
                    "answered {} director{}: {} files, {} re-read ({:.1} ms)",
                    snapshots.len(),
                    if snapshots.len() == 1 { "y" } else { "ies" },
                    snapshots.iter().map(|s| s.files.len()).sum::<usize>(),
                    snapshots.iter().map(|s| s.rehashed).sum::<usize>(),
                    started.elapsed().as_secs_f64() * 1000.0
                ));
            }
            Err(reason) => {
                self.served.refused += 1;
                (self.log)(&format!("refused a query: {reason}"));
                let header = Header {
                    ok: false,
                    reason: Some(reason),
                    snapshots: Vec::new(),
                };
                out.extend(serde_json::to_vec(&header).unwrap_or_default());
                out.push(b'\n');
            }
        }
        let _ = (&*stream).write_all(&out);
    }

    /// The snapshots of several directories after one synchronisation, as
    /// `inputs::snapshots` takes them.
    pub fn snapshots(&mut self, wanted: &[(&Path, &[String])]) -> Result<Vec<Snapshot>, String> {
        let mut trees = Vec::with_capacity(wanted.len());
        for (dir, _) in wanted {
            let canonical_dir = fs_err::canonicalize(dir).map_err(|e| e.to_string())?;
            let t = self.tree_for(&canonical_dir)?;
            trees.push((canonical_dir, t));
        }
        self.sync()?;
        let mut rehashed: HashMap<usize, usize> = HashMap::new();
        let mut out = Vec::with_capacity(wanted.len());
        for ((canonical_dir, t), (_, exclude)) in trees.into_iter().zip(wanted) {
            let read = match rehashed.get(&t) {
                // Refreshed for an earlier directory of this query.
                Some(_) => 0,
                None => {
                    let n = self.refresh_or_forget(t)?;
                    rehashed.insert(t, n);
                    n
                }
            };
            out.push(self.filtered(t, canonical_dir, exclude, read)?);
        }
        Ok(out)
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

    /// A directory's part of its work tree's snapshot.
    fn filtered(
        &self,
        t: usize,
        canonical_dir: PathBuf,
        exclude: &[String],
        rehashed: usize,
    ) -> Result<Snapshot, String> {
        let tree = &self.trees[t];
        let prefix = match canonical_dir.strip_prefix(&tree.workdir) {
            Ok(rel) if rel.as_os_str().is_empty() => String::new(),
            Ok(rel) => format!("{}/", rel.to_string_lossy()),
            Err(_) => return Err("the directory left its work tree".to_owned()),
        };
        let start = tree
            .files
            .partition_point(|f| f.path.as_str() < prefix.as_str());
        let files: Vec<FileEntry> = tree.files[start..]
            .iter()
            .take_while(|f| f.path.starts_with(prefix.as_str()))
            .filter_map(|f| {
                let rel = &f.path[prefix.len()..];
                (!exclude.iter().any(|e| rel.starts_with(e.as_str()))).then(|| FileEntry {
                    path: rel.to_owned(),
                    id: f.id,
                    kind: f.kind,
                })
            })
            .collect();
        Ok(Snapshot {
            dir: canonical_dir,
            files,
            rehashed,
        })
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
                let t = self.trees.len();
                self.trees.push(Tree {
                    workdir,
                    index_path: index_path.clone(),
                    hash_kind: repo.object_hash(),
                    index_stamp: None,
                    tracked: Vec::new(),
                    files: Vec::new(),
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

    fn watch(&self, t: usize, path: &Path, rel: Option<String>) -> std::io::Result<()> {
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
        Ok(())
    }

    /// Makes sure every event that happened before now has been read: a
    /// cookie file is created next to the first work tree's index, and its
    /// event comes after every earlier one in the queue.
    fn sync(&mut self) -> Result<(), String> {
        let Some(tree) = self.trees.first() else {
            return Ok(());
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
            if shared.cookies.remove(&name) {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            shared = condvar
                .wait_timeout(shared, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        drop(shared);
        let _ = fs_err::remove_file(&path);
        if seen {
            Ok(())
        } else {
            Err("the cookie's event did not arrive in time".to_owned())
        }
    }

    /// Brings a work tree's snapshot up to date; returns how many files were
    /// read.
    fn refresh(&mut self, t: usize) -> Result<usize, String> {
        let dirty = std::mem::take(&mut lock(&self.shared.0).dirty[t]);
        let now = stamp(&self.trees[t].index_path);
        if dirty.all || now.is_none() || now != self.trees[t].index_stamp {
            return self.full(t);
        }
        let mut targets: BTreeSet<&str> = BTreeSet::new();
        let tree = &self.trees[t];
        for p in &dirty.paths {
            if tree
                .tracked
                .binary_search_by(|x| x.as_str().cmp(p.as_str()))
                .is_ok()
            {
                targets.insert(p.as_str());
            }
        }
        let mut dirs = BTreeSet::new();
        for prefix in &dirty.prefixes {
            let below = format!("{prefix}/");
            let start = tree
                .tracked
                .partition_point(|x| x.as_str() < below.as_str());
            for p in tree.tracked[start..]
                .iter()
                .take_while(|x| x.starts_with(below.as_str()))
            {
                targets.insert(p.as_str());
                // Its directories are watched again (a directory that was
                // removed and created anew is a new inode).
                for d in parent_dirs(p).take_while(|d| d.len() >= prefix.len()) {
                    if !dirs.insert(d.to_owned()) {
                        break;
                    }
                }
            }
        }
        let targets: Vec<String> = targets.into_iter().map(str::to_owned).collect();
        for d in dirs {
            let path = self.trees[t].workdir.join(&d);
            if let Err(e) = self.watch(t, &path, Some(d))
                && !inputs::is_gone(&e)
            {
                return self.full(t);
            }
        }
        let tree = &mut self.trees[t];
        for rel in &targets {
            let read = read_file(&tree.workdir, rel, tree.hash_kind)
                .map_err(|e| format!("read {rel}: {e}"))?;
            let at = tree.files.binary_search_by(|f| f.path.as_str().cmp(rel));
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
        Ok(targets.len())
    }

    /// Takes the whole work tree's snapshot anew, watching every directory
    /// that holds a tracked file first (so no change after the snapshot's
    /// reads goes unseen).
    fn full(&mut self, t: usize) -> Result<usize, String> {
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
        // Watches from an earlier snapshot may name directories that are
        // gone: keep only the index's, then watch the directories anew.
        {
            let mut shared = lock(&self.shared.0);
            let stale: Vec<i32> = shared
                .watches
                .iter()
                .filter(|(_, (tree, rel))| *tree == t && rel.is_some())
                .map(|(wd, _)| *wd)
                .collect();
            for wd in stale {
                shared.watches.remove(&wd);
                let _ = inotify::remove_watch(&*self.inotify, wd);
            }
        }
        for d in &dirs {
            let path = if d.is_empty() {
                workdir.clone()
            } else {
                workdir.join(d)
            };
            if let Err(e) = self.watch(t, &path, Some(d.clone()))
                && !inputs::is_gone(&e)
            {
                return Err(format!(
                    "watch {}: {e} (raise fs.inotify.max_user_watches?)",
                    path.display()
                ));
            }
        }
        // Events about the old state are moot now.
        std::mem::take(&mut lock(&self.shared.0).dirty[t]);
        let snapshot = inputs::snapshot(&workdir, &[]).map_err(|e| e.to_string())?;
        let tree = &mut self.trees[t];
        tree.index_stamp = index_stamp;
        tree.tracked = tracked;
        tree.files = snapshot.files;
        self.served.full_snapshots += 1;
        (self.log)(&format!(
            "full snapshot of {}: {} files, {} directories watched ({:.1} ms)",
            workdir.display(),
            self.trees[t].files.len(),
            dirs.len(),
            started.elapsed().as_secs_f64() * 1000.0
        ));
        Ok(snapshot.rehashed)
    }
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
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            for d in &mut s.dirty {
                d.all = true;
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
                    s.cookies.insert(name);
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
    use crate::testing::{commit_all, git, write};

    /// After every kind of change a user makes, the watcher's snapshot is the
    /// one an lstat of every file gives, for the whole tree and for a
    /// directory inside it (with an exclusion), and it re-reads only what
    /// changed.
    #[test]
    fn the_watcher_agrees_with_a_full_snapshot_after_every_change() {
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
        assert!(
            watcher.served().full_snapshots >= 3,
            "{:?}",
            watcher.served()
        );
    }

    #[test]
    fn snapshots_cross_the_socket_unchanged() {
        let files = vec![
            FileEntry {
                path: "a/b.txt".to_owned(),
                id: Digest([7; 32]),
                kind: FileKind::File,
            },
            FileEntry {
                path: "l".to_owned(),
                id: Digest([1; 32]),
                kind: FileKind::Symlink,
            },
            FileEntry {
                path: "run.sh".to_owned(),
                id: Digest([2; 32]),
                kind: FileKind::Executable,
            },
        ];
        let mut bytes = Vec::new();
        encode(&files, &mut bytes);
        assert_eq!(decode(&bytes, files.len()), Some((files.clone(), &[][..])));
        // A truncated body is refused, never half-read; what follows is left.
        assert_eq!(decode(&bytes[..bytes.len() - 1], files.len()), None);
        bytes.push(9);
        assert_eq!(
            decode(&bytes, files.len()),
            Some((files.clone(), &[9u8][..]))
        );
    }
}
