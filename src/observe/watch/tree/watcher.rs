//! [`Watcher`]: the work trees it keeps and the state it shares with the
//! event thread, and a query's steps in order ([`Watcher::snapshots`]): ask
//! early, wait for the cookie, check the mounts, refresh, ask late.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use rustix::fs::inotify::{self, CreateFlags};
use serde::Serialize;

use super::events::{Shared, lock, read_events};
use super::track::descriptor_budget;
use super::untracked::GitUserFiles;
use super::worktree::Tree;
use crate::observe::inputs::{FileEntry, Snapshot};
use crate::observe::watch::protocol::mount_namespace;

/// What a watcher has done, for its final report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Served {
    /// Queries answered with a snapshot.
    pub answered: u64,
    /// Queries refused (the client took the snapshot itself).
    pub refused: u64,
    /// Full snapshots taken.
    pub full_snapshots: u64,
    /// Walks for untracked files (each after an event that could have changed them).
    pub untracked_walks: u64,
    /// The work trees watched.
    pub work_trees: Vec<String>,
}

/// The watcher: one inotify instance, an event thread, and the queries.
pub struct Watcher {
    pub(super) inotify: Arc<rustix::fd::OwnedFd>,
    pub(super) shared: Arc<(Mutex<Shared>, Condvar)>,
    pub(super) trees: Vec<Tree>,
    /// Queried directory → its work tree.
    pub(super) tree_of: HashMap<PathBuf, usize>,
    pub(super) cookie_counter: u64,
    /// `/proc/self/mountinfo`, polled for a change of the mount table.
    pub(super) mountinfo: Option<rustix::fd::OwnedFd>,
    /// This process's mount namespace: a client in another one sees other
    /// files under the same paths.
    pub(in crate::observe::watch) mount_namespace: Option<String>,
    pub(in crate::observe::watch) served: Served,
    pub(in crate::observe::watch) log: Box<dyn FnMut(&str) + Send>,
    /// The user's own git files, whose changes may change what git ignores.
    pub(super) user_files: GitUserFiles,
    /// Descriptors held, and how many may be.
    pub(super) held_count: usize,
    pub(super) held_limit: usize,
    /// Files asked whether they are open for writing in this query.
    pub(in crate::observe::watch) asked: usize,
    /// Which, in tests.
    #[cfg(test)]
    pub(super) asked_paths: BTreeSet<String>,
    /// Called at named points of a query, to change files exactly there.
    #[cfg(test)]
    pub(super) hook: Option<Box<dyn FnMut(&'static str) + Send>>,
}

impl Watcher {
    /// Creates the inotify instance and starts the thread that reads it.
    /// `log` receives one line per query and per full snapshot; `user_files` are where the
    /// user's git configuration and ignore file are (the CLI's `Env` says).
    pub fn new(
        log: Box<dyn FnMut(&str) + Send>,
        user_files: GitUserFiles,
    ) -> std::io::Result<Self> {
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
            user_files,
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
    pub(super) fn at(&mut self, point: &'static str) {
        if let Some(hook) = &mut self.hook {
            hook(point);
        }
    }

    #[cfg(not(test))]
    pub(super) fn at(&mut self, _point: &'static str) {}

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
    pub(in crate::observe::watch) fn refreshed(
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
            self.check_untracked(t);
            let full = self.served.full_snapshots;
            let n = self.refresh_or_forget(t)?;
            if self.served.full_snapshots != full {
                self.forget_untracked(t);
            }
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
}
