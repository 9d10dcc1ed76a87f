//! Each execution in a world of its own: what a job sees of the repositories it reads, and
//! where what it writes lands.
//!
//! A run materialises each repository it needs once, checked byte for byte against the
//! snapshot its fingerprints were computed from (`sandboxes.rs`): the *snapshot*, which no
//! job ever writes. An execution sees each repository it reads as layers, top first:
//!
//! 1. what its repository's setup made (a kept setup tree, or an uncached setup's writes);
//! 2. its *view* of the repository: the whole snapshot when the provider binds every file of
//!    it, else a tree of hard links to exactly the files it binds (made once per run for each
//!    such set of files), so a file its inputs leave out is not there.
//!
//! With a mount namespace each repository is an overlay at the repository's own directory
//! (the same path in every run: tools that key a cache by path find it again), whose
//! writable layer is the execution's alone (`<run>/worlds/<n>/<repo>/upper`): no job sees
//! another's writes, and what a job wrote is read from its layer, never from a shared
//! directory. Without one (namespaces unavailable, or `--isolation none`) each execution
//! gets a private copy of its layers (`<run>/copies/<n>/<repo>`). Running in place
//! (`--sandbox none`) the job writes into the repository itself.
//!
//! Every job's world also holds, read-only, the host paths the workspace names
//! (`hostPaths` in `proofgraph.yaml`, `PROOFGRAPH_HOST_PATHS`), and a private, empty home
//! directory at its `HOME`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proofgraph_graph::RepoId;
use proofgraph_sandbox::{OverlaySpec, SandboxMode, World};

use crate::load::config::caches::CacheKind;

use crate::run::setup::{Transfer, merge};
use crate::run::stamps::{Stamps, WHOLE};

/// What one execution sees of one repository: its layers, the top one first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Seen {
    pub(super) repo: RepoId,
    pub(super) layers: Vec<PathBuf>,
    /// What the layers are, the same in every run that sees the same layers: a kept setup
    /// tree's directory, `setup` for a setup run in this run, [`WHOLE`] for the whole
    /// snapshot, a narrowed view's key (what a kept cargo build directory is chosen by).
    pub(super) ids: Vec<String>,
}

impl Seen {
    /// Puts a layer kept in the store (a dependency's artifacts, found by its producer's
    /// fingerprint) over the others; its directory says what it is.
    pub(super) fn put_on_top(&mut self, dir: PathBuf) {
        self.ids.insert(0, dir.to_string_lossy().into_owned());
        self.layers.insert(0, dir);
    }
}

/// Where an execution saw one repository, and where what it wrote there is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ExecDir {
    /// The directory the job saw the repository at.
    pub(super) at: PathBuf,
    /// Where its writes are on the host: its overlay's writable layer, its private copy, or
    /// (in place) the repository itself.
    pub(super) written: PathBuf,
}

/// Where one execution's repositories were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ExecDirs {
    pub(super) repos: BTreeMap<RepoId, ExecDir>,
}

impl ExecDirs {
    /// The directory the job saw `repo` at and where what it wrote there is.
    pub(super) fn of(&self, repo: Option<&RepoId>) -> Option<&ExecDir> {
        repo.and_then(|r| self.repos.get(r))
    }
}

/// The worlds of one run's executions.
#[derive(Debug)]
pub(super) struct Worlds {
    mode: SandboxMode,
    /// Whether the run has mount namespaces (overlays), else copies.
    isolated: bool,
    run_dir: PathBuf,
    /// Each repository's snapshot (in place: the repository's own directory).
    snapshots: BTreeMap<RepoId, PathBuf>,
    /// Narrowed views made so far, by repository and set of files.
    views: BTreeMap<(RepoId, [u8; 32]), PathBuf>,
    /// What setup put on top of a repository.
    setup: BTreeMap<RepoId, PathBuf>,
    /// Host paths every job sees, read-only.
    host_paths: Vec<PathBuf>,
    /// `host_paths`, links resolved (computed once for the run).
    real_host_paths: Vec<PathBuf>,
    /// The private home directory of every job.
    home: Option<PathBuf>,
    /// Each repository's declared caches and their directories on the host: the only
    /// host directories a job writes besides its own layer.
    caches: BTreeMap<RepoId, Vec<(CacheKind, PathBuf)>>,
    /// Where a program a job runs is bound wherever it lies: the host paths (links
    /// resolved) and the declared caches.
    shared: Vec<PathBuf>,
    /// Where a job's world shows each repository (with a mount namespace): the
    /// repository's own directory, the same in every run, so that what a tool keys by
    /// path (sccache, Go without `-trimpath`, a test runner's cache) is found again; a
    /// repository missing here is shown at its snapshot's path.
    shown_at: BTreeMap<RepoId, PathBuf>,
    /// The times given to the snapshots' files when a repository keeps a cargo build
    /// directory (holding the store's lock until the run ends).
    stamps: Option<Stamps>,
    next: usize,
}

/// The files of `repo` an execution binds: every one of its snapshot, or these.
#[derive(Debug, Clone, Copy)]
pub(super) enum Files<'a> {
    All,
    Only(&'a [&'a str]),
}

impl Worlds {
    pub(super) fn new(
        mode: SandboxMode,
        isolated: bool,
        run_dir: &Path,
        snapshots: BTreeMap<RepoId, PathBuf>,
        host_paths: Vec<PathBuf>,
        home: Option<PathBuf>,
    ) -> Self {
        let real_host_paths: Vec<PathBuf> = host_paths
            .iter()
            .map(|p| fs_err::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect();
        Worlds {
            mode,
            isolated,
            run_dir: run_dir.to_path_buf(),
            snapshots,
            views: BTreeMap::new(),
            setup: BTreeMap::new(),
            shared: real_host_paths.clone(),
            real_host_paths,
            host_paths,
            home,
            caches: BTreeMap::new(),
            shown_at: BTreeMap::new(),
            stamps: None,
            next: 0,
        }
    }

    /// Shows each repository at `dirs` (its own directory) in the worlds of a run with a
    /// mount namespace, instead of at its snapshot's path: the snapshot, never the work
    /// tree, is what lies there.
    pub(super) fn showing_repositories_at(mut self, dirs: BTreeMap<RepoId, PathBuf>) -> Self {
        self.shown_at = dirs;
        self
    }

    /// Where a job's world shows `repo`, with a mount namespace.
    fn shown_at(&self, repo: &RepoId, snapshot: &Path) -> PathBuf {
        self.shown_at
            .get(repo)
            .cloned()
            .unwrap_or_else(|| snapshot.to_path_buf())
    }

    /// Gives the jobs of each repository its declared caches (made if missing).
    pub(super) fn with_caches(
        mut self,
        caches: BTreeMap<RepoId, Vec<(CacheKind, PathBuf)>>,
    ) -> Result<Self, String> {
        for (kind, dir) in caches.values().flatten() {
            fs_err::create_dir_all(dir)
                .map_err(|e| format!("the `{}` cache could not be made: {e}", kind.as_str()))?;
        }
        self.caches = caches;
        self.shared = self
            .real_host_paths
            .iter()
            .cloned()
            .chain(self.caches.values().flatten().map(|(_, d)| d.clone()))
            .collect();
        Ok(self)
    }

    /// The directories a program a job runs is bound in wherever it lies (not the run's
    /// own): the host paths, links resolved, and the declared caches.
    pub(super) fn shared(&self) -> &[PathBuf] {
        &self.shared
    }

    /// Each repository's declared caches, with their directories.
    pub(super) fn all_caches(&self) -> &BTreeMap<RepoId, Vec<(CacheKind, PathBuf)>> {
        &self.caches
    }

    /// The declared caches of `repo`, with their directories.
    fn caches(&self, repo: Option<&RepoId>) -> &[(CacheKind, PathBuf)] {
        repo.and_then(|r| self.caches.get(r))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Every job of `repo` may write its declared caches; a setup (`setup`) only those that
    /// hold downloads ([`CacheKind::downloads_only`]).
    fn add_caches(&self, world: &mut World, repo: Option<&RepoId>, setup: bool) {
        world.writable.extend(
            self.caches(repo)
                .iter()
                .filter(|(kind, _)| !setup || kind.downloads_only())
                .map(|(_, dir)| dir.clone()),
        );
    }

    /// Whether a repository's jobs get a kept cargo build directory: one declares it and
    /// the run's files get their times from their content (never in place, where the work
    /// tree's own times are all there is).
    pub(super) fn stamps_times(&self) -> bool {
        self.stamps.is_some()
    }

    /// Gives every file of every snapshot a time that changes exactly when its content does
    /// (`files`: each repository's paths and contents), holding `stamps` until the run
    /// ends: what a kept cargo build directory needs.
    pub(super) fn stamp<'a>(
        &mut self,
        mut stamps: Stamps,
        files: impl Fn(&RepoId) -> Vec<(&'a str, String, bool)>,
    ) -> Result<(), String> {
        if self.in_place() {
            return Ok(());
        }
        for (repo, dir) in &self.snapshots {
            stamps
                .snapshot(repo, dir, &files(repo))
                .map_err(|e| format!("the times of `{repo}`'s files could not be set: {e}"))?;
        }
        self.stamps = Some(stamps);
        Ok(())
    }

    /// Where each repository is seen (its snapshot's path, or in place its own).
    pub(super) fn snapshots(&self) -> &BTreeMap<RepoId, PathBuf> {
        &self.snapshots
    }

    /// The host paths every job sees.
    pub(super) fn host_paths(&self) -> &[PathBuf] {
        &self.host_paths
    }

    /// The private home directory of every job.
    pub(super) fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Whether executions see their repositories through overlays (else private copies).
    pub(super) fn isolated(&self) -> bool {
        self.isolated
    }

    /// Whether jobs run in place.
    pub(super) fn in_place(&self) -> bool {
        self.mode == SandboxMode::None
    }

    /// Puts what setup made on top of `repo` for every execution from now on.
    pub(super) fn set_up(&mut self, repo: &RepoId, layer: PathBuf) {
        self.setup.insert(repo.clone(), layer);
    }

    /// What an execution binding `files` of `repo` sees of it: its setup's layer over its
    /// view (the snapshot, or the hard-linked tree of exactly those files, made here the
    /// first time it is asked for).
    pub(super) fn seen(&mut self, repo: &RepoId, files: Files<'_>) -> Result<Seen, String> {
        let Some(snapshot) = self.snapshots.get(repo).cloned() else {
            return Err(format!("repository `{repo}` has no sandbox in this run"));
        };
        let (view, id) = match files {
            _ if self.in_place() => (snapshot, WHOLE.to_owned()),
            Files::All => (snapshot, WHOLE.to_owned()),
            Files::Only(paths) => self.narrowed(repo, &snapshot, paths)?,
        };
        let mut layers: Vec<PathBuf> = self.setup.get(repo).cloned().into_iter().collect();
        let mut ids: Vec<String> = layers
            .iter()
            .map(|layer| {
                if layer.starts_with(&self.run_dir) {
                    "setup".to_owned()
                } else {
                    layer.to_string_lossy().into_owned()
                }
            })
            .collect();
        layers.push(view);
        ids.push(id);
        Ok(Seen {
            repo: repo.clone(),
            layers,
            ids,
        })
    }

    /// The view of `repo` holding only `paths`, and its key (hex).
    fn narrowed(
        &mut self,
        repo: &RepoId,
        snapshot: &Path,
        paths: &[&str],
    ) -> Result<(PathBuf, String), String> {
        let mut hasher = blake3::Hasher::new();
        for path in paths {
            hasher.update(path.as_bytes());
            hasher.update(b"\0");
        }
        let key = *hasher.finalize().as_bytes();
        let id = proofgraph_graph::fingerprint::hex(&key);
        if let Some(dir) = self.views.get(&(repo.clone(), key)) {
            return Ok((dir.clone(), id));
        }
        let dest = self
            .run_dir
            .join("views")
            .join(format!("{}", self.views.len() + 1))
            .join(repo.as_str());
        let failed = |e: std::io::Error| {
            format!("the view of `{repo}` holding only its inputs could not be made: {e}")
        };
        fs_err::create_dir_all(&dest).map_err(failed)?;
        for path in paths {
            let target = dest.join(path);
            if let Some(parent) = target.parent() {
                fs_err::create_dir_all(parent).map_err(failed)?;
            }
            // A hard link of the checked snapshot's file (a link's own inode for a link):
            // nothing writes either, jobs see both through their overlays only.
            fs_err::hard_link(snapshot.join(path), &target).map_err(failed)?;
        }
        // Its files are the snapshot's (stamped with it); its directories are its own.
        if let Some(stamps) = &mut self.stamps {
            stamps.view(repo, &id, &dest, paths).map_err(failed)?;
        }
        self.views.insert((repo.clone(), key), dest.clone());
        Ok((dest, id))
    }

    /// The world of a new execution that sees `seen` (`out`: a directory of its own it
    /// may write, for a report the runner writes outside the sandbox; `runs_in`: the
    /// repository whose declared caches it writes), and where its repositories are.
    pub(super) fn world(
        &mut self,
        seen: &[Seen],
        out: Option<&Path>,
        runs_in: Option<&RepoId>,
    ) -> Result<(World, ExecDirs), String> {
        self.next += 1;
        let n = self.next;
        let mut world = World {
            read_only: self.host_paths.clone(),
            private: self.home.iter().cloned().collect(),
            ..World::default()
        };
        if let Some(out) = out {
            fs_err::create_dir_all(out).map_err(|e| e.to_string())?;
            world.writable.push(out.to_path_buf());
        }
        self.add_caches(&mut world, runs_in, false);
        let mut dirs = ExecDirs::default();
        for Seen { repo, layers, .. } in seen {
            let Some(at) = self.snapshots.get(repo).cloned() else {
                return Err(format!("repository `{repo}` has no sandbox in this run"));
            };
            let written = if self.in_place() {
                world.writable.push(at.clone());
                at.clone()
            } else if self.isolated {
                let scratch = self
                    .run_dir
                    .join(WORLDS)
                    .join(n.to_string())
                    .join(repo.as_str());
                fs_err::create_dir_all(&scratch).map_err(|e| e.to_string())?;
                let shown = self.shown_at(repo, &at);
                world.overlays.push(OverlaySpec {
                    target: shown.clone(),
                    layers: layers.clone(),
                    scratch: scratch.clone(),
                });
                dirs.repos.insert(
                    repo.clone(),
                    ExecDir {
                        at: shown,
                        written: scratch.join("upper"),
                    },
                );
                continue;
            } else {
                let copy = copy_dir(&self.run_dir, n, repo);
                for layer in layers.iter().rev() {
                    merge(layer, &copy, Transfer::Copy).map_err(|e| {
                        format!("the private copy of `{repo}` could not be made: {e}")
                    })?;
                }
                world.writable.push(copy.clone());
                dirs.repos.insert(
                    repo.clone(),
                    ExecDir {
                        at: copy.clone(),
                        written: copy,
                    },
                );
                continue;
            };
            dirs.repos.insert(repo.clone(), ExecDir { at, written });
        }
        Ok((world, dirs))
    }

    /// A new, empty directory of this run where what a remote execution of `repo` sends
    /// back lands (`<run>/remote/<n>/<repo>`): no local world is made for it.
    pub(super) fn remote_dir(&mut self, repo: &RepoId) -> Result<PathBuf, String> {
        self.next += 1;
        let dir = self
            .run_dir
            .join("remote")
            .join(self.next.to_string())
            .join(repo.as_str());
        fs_err::create_dir_all(&dir).map_err(|e| e.to_string())?;
        Ok(dir)
    }

    /// The world a repository's uncached setup runs in: the repository's snapshot under a
    /// layer of its own (`<run>/setup-layers/<repo>`), which becomes every later
    /// execution's top layer of that repository (`set_up`); without a mount namespace,
    /// the snapshot itself, in place.
    pub(super) fn setup_world(
        &mut self,
        repo: &RepoId,
    ) -> Result<(World, PathBuf, Option<PathBuf>), String> {
        let Some(at) = self.snapshots.get(repo).cloned() else {
            return Err(format!("repository `{repo}` has no sandbox in this run"));
        };
        let mut world = World {
            read_only: self.host_paths.clone(),
            private: self.home.iter().cloned().collect(),
            ..World::default()
        };
        self.add_caches(&mut world, Some(repo), true);
        if !self.isolated {
            world.writable.push(at.clone());
            return Ok((world, at, None));
        }
        let scratch = self.run_dir.join(SETUP_LAYERS).join(repo.as_str());
        fs_err::create_dir_all(&scratch).map_err(|e| e.to_string())?;
        let shown = self.shown_at(repo, &at);
        world.overlays.push(OverlaySpec {
            target: shown.clone(),
            layers: vec![at.clone()],
            scratch: scratch.clone(),
        });
        Ok((world, shown, Some(scratch.join("upper"))))
    }

    /// The world of a cached setup of `repo`: the directory holding exactly its inputs,
    /// writable, and the repository's declared caches (download caches keyed by content).
    pub(super) fn derivation_world(&self, repo: &RepoId, dir: &Path) -> World {
        let mut world = World {
            read_only: self.host_paths.clone(),
            writable: vec![dir.to_path_buf()],
            private: self.home.iter().cloned().collect(),
            ..World::default()
        };
        self.add_caches(&mut world, Some(repo), true);
        world
    }
}

/// The run's directory of each execution's overlay scratch, `worlds/<n>/<repo>`.
const WORLDS: &str = "worlds";
/// The run's directory of each uncached setup's overlay scratch, `setup-layers/<repo>`.
const SETUP_LAYERS: &str = "setup-layers";

/// The overlays' scratch directories ([`OverlaySpec::scratch`]) the run in `run_dir` made.
pub(super) fn overlay_scratches(run_dir: &Path) -> Vec<PathBuf> {
    let subdirs = |dir: &Path| -> Vec<PathBuf> {
        fs_err::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect()
    };
    let mut out = subdirs(&run_dir.join(SETUP_LAYERS));
    for n in subdirs(&run_dir.join(WORLDS)) {
        out.extend(subdirs(&n));
    }
    out.sort();
    out
}

/// Where execution `n`'s private copy of `repo` is made when the run has no mount
/// namespace (its jobs' paths there are rewritten as the snapshot's are).
pub(super) fn copy_dir(run_dir: &Path, n: usize, repo: &RepoId) -> PathBuf {
    run_dir
        .join("copies")
        .join(n.to_string())
        .join(repo.as_str())
}

/// The host paths every job of the workspace sees read-only: the catalog's `hostPaths`
/// and `PROOFGRAPH_HOST_PATHS` (`:`-separated), `~` being the caller's home directory.
/// A `~` path without a home directory to expand it to is left out.
pub(super) fn host_paths(
    declared: &[String],
    variable: Option<&std::ffi::OsStr>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let from_env = variable
        .map(|v| {
            std::env::split_paths(v)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| p.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    declared
        .iter()
        .chain(&from_env)
        .filter_map(|text| crate::base::paths::expand_home(text, home))
        .collect()
}

/// Whether a program's file lies outside every job's world (the system's directories and
/// `host_paths`), as found and where its links lead: `None` when it lies inside, else the
/// host path to name for it (`~/<dir>` below the home directory, else its directory).
pub(super) fn outside_world(
    program: &Path,
    host_paths: &[PathBuf],
    home: Option<&Path>,
) -> Option<String> {
    let real_host_paths: Vec<PathBuf> = host_paths
        .iter()
        .filter_map(|p| fs_err::canonicalize(p).ok())
        .collect();
    let inside = |path: &Path| {
        World::SYSTEM.iter().any(|dir| path.starts_with(dir))
            || host_paths
                .iter()
                .chain(&real_host_paths)
                .any(|dir| path.starts_with(dir))
    };
    let real = fs_err::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    if inside(program) && inside(&real) {
        return None;
    }
    let outside = if inside(program) { &real } else { program };
    if let Some(home) = home
        && let Ok(rest) = outside.strip_prefix(home)
        && let Some(first) = rest.components().next()
    {
        return Some(format!("~/{}", first.as_os_str().to_string_lossy()));
    }
    Some(outside.parent().unwrap_or(outside).display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(id: &str) -> RepoId {
        RepoId::parse(id).expect("valid")
    }

    #[test]
    fn host_paths_expand_the_home_directory_and_keep_absolute_paths() {
        let home = Path::new("/home/u");
        let got = host_paths(
            &[
                "~/.rustup".to_owned(),
                "/opt/x".to_owned(),
                "rel".to_owned(),
                "~".to_owned(),
            ],
            Some(std::ffi::OsStr::new("/nix/var:~/.pyenv::")),
            Some(home),
        );
        assert_eq!(
            got,
            [
                "/home/u/.rustup",
                "/opt/x",
                "/home/u",
                "/nix/var",
                "/home/u/.pyenv"
            ]
            .map(PathBuf::from)
        );
        assert_eq!(
            host_paths(&["~/.x".to_owned()], None, None),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn a_narrowed_view_holds_exactly_its_files_and_is_made_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let snapshot = dir.path().join("sandboxes/root");
        fs_err::create_dir_all(snapshot.join("src")).expect("mkdir");
        for f in ["a.txt", "src/b.txt", "src/c.txt"] {
            fs_err::write(snapshot.join(f), f).expect("write");
        }
        let mut worlds = Worlds::new(
            SandboxMode::Worktree,
            true,
            dir.path(),
            BTreeMap::from([(repo("root"), snapshot.clone())]),
            Vec::new(),
            None,
        );
        let seen = worlds
            .seen(&repo("root"), Files::Only(&["src/b.txt"]))
            .expect("seen");
        let view = &seen.layers[0];
        assert_ne!(view, &snapshot);
        assert!(view.join("src/b.txt").is_file());
        assert!(!view.join("src/c.txt").exists() && !view.join("a.txt").exists());
        let again = worlds
            .seen(&repo("root"), Files::Only(&["src/b.txt"]))
            .expect("seen");
        assert_eq!(again, seen);
        // Every file: the snapshot itself; setup's layer on top of it from then on.
        let all = worlds.seen(&repo("root"), Files::All).expect("seen");
        assert_eq!(all.layers, std::slice::from_ref(&snapshot));
        worlds.set_up(&repo("root"), dir.path().join("tree"));
        let all = worlds.seen(&repo("root"), Files::All).expect("seen");
        assert_eq!(all.layers, [dir.path().join("tree"), snapshot.clone()]);
    }

    #[test]
    fn each_execution_writes_into_a_layer_or_a_copy_of_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let snapshot = dir.path().join("sandboxes/root");
        fs_err::create_dir_all(&snapshot).expect("mkdir");
        fs_err::write(snapshot.join("a.txt"), "a").expect("write");
        for isolated in [true, false] {
            let mut worlds = Worlds::new(
                SandboxMode::Copy,
                isolated,
                &dir.path().join(format!("run-{isolated}")),
                BTreeMap::from([(repo("root"), snapshot.clone())]),
                vec![PathBuf::from("/opt/tools")],
                Some(PathBuf::from("/home/u")),
            );
            let seen = [worlds.seen(&repo("root"), Files::All).expect("seen")];
            let (one, dirs_one) = worlds.world(&seen, None, None).expect("world");
            let (_, dirs_two) = worlds.world(&seen, None, None).expect("world");
            let (a, b) = (
                &dirs_one.repos[&repo("root")],
                &dirs_two.repos[&repo("root")],
            );
            assert_ne!(a.written, b.written, "isolated: {isolated}");
            assert_eq!(one.read_only, [PathBuf::from("/opt/tools")]);
            assert_eq!(one.private, [PathBuf::from("/home/u")]);
            if isolated {
                assert_eq!(a.at, snapshot);
                assert_eq!(one.overlays.len(), 1);
            } else {
                assert_eq!(a.at, a.written);
                assert_eq!(
                    fs_err::read_to_string(a.at.join("a.txt")).expect("copied"),
                    "a"
                );
                assert_eq!(one.writable, std::slice::from_ref(&a.at));
            }
        }
    }
}
