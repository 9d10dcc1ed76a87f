//! Modification times that change exactly when content does: what lets a kept cargo
//! build directory (`caches: [cargo-build]`) serve a warm build without ever serving a
//! stale one.
//!
//! cargo decides that a unit is fresh when none of the files it was built from is newer
//! than what it built. A sandbox copied with the work tree's times (as `cp -p` would) lets
//! a file change with its time put back (`rsync -t`, `tar`, `cp -p`) and cargo rebuild
//! nothing. So, in a run that gives any repository a cargo build directory, proofgraph
//! sets the time of every file and directory of every repository's snapshot itself, from
//! a ledger kept per repository outside every job's world
//! (`.proofgraph/caches/<repo>/.cargo-build-stamps.json`):
//!
//! - a path whose content (file: its identity and kind; directory: its listing) is the one
//!   the ledger holds gets the time the ledger holds for it;
//! - any other gets this run's *stamp*: a time later than everything any earlier run built
//!   (it is taken after the previous holder of the lock ended, and later than every time
//!   the ledger ever gave).
//!
//! Why that is enough: a unit built from content X of a path at time t was built by a run
//! that held the lock, so the ledger held X for that path then (the ledger is written as
//! soon as a run has stamped). If the path later holds Y ≠ X, the run that first stamped Y
//! did so after t, with a later time, and every run since keeps that time while Y stays
//! (any other content gets a newer stamp still). So the path is always newer than the
//! unit, and cargo rebuilds it. A crash after stamping leaves a ledger that describes
//! what the crashed run built from, which is what the argument needs.
//!
//! One lock for the whole store (`.proofgraph/caches/.cargo-build.lock`), held from before
//! stamping to the end of the run: runs of one workspace that use a cargo build directory
//! take turns, so no stamp is decided while another run is building.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use proofgraph_graph::RepoId;
use serde::{Deserialize, Serialize};

/// The ledger's file name, in `<store>/caches/<repo>/`.
const LEDGER: &str = ".cargo-build-stamps.json";
/// The lock's file name, in `<store>/caches/`.
const LOCK: &str = ".cargo-build.lock";
/// The format of a ledger this code reads; any other is read as empty (every path then
/// gets the run's stamp: slower, never stale).
const VERSION: u32 = 1;
/// The ledger's owner of the directories of a repository's whole snapshot (a narrowed
/// view's directories are kept under the view's key: the same path lists other names
/// there).
pub(super) const WHOLE: &str = "all";

/// A point in time, as a file system keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) struct Time {
    pub(super) secs: i64,
    pub(super) nanos: u32,
}

impl Time {
    fn now() -> Time {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Time {
            secs: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            nanos: since.subsec_nanos(),
        }
    }

    /// A millisecond later: more than any file system's granularity that cargo reads.
    fn later(self) -> Time {
        let nanos = u64::from(self.nanos) + 1_000_000;
        Time {
            secs: self.secs + i64::try_from(nanos / 1_000_000_000).unwrap_or(0),
            nanos: u32::try_from(nanos % 1_000_000_000).unwrap_or(0),
        }
    }
}

/// What a path held and the time it was given for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stamp {
    /// The content: a file's identity and kind, a directory's listing, as hex.
    pub(super) id: String,
    pub(super) at: Time,
    /// For a symbolic link: the path below the repository it led to (cargo records the
    /// file a link led to when it built, not the link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) leads_to: Option<String>,
}

/// One repository's ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Ledger {
    version: u32,
    /// Each file of the snapshot stamped last.
    files: BTreeMap<String, Stamp>,
    /// Each directory, by owner ([`WHOLE`] or a narrowed view's key).
    dirs: BTreeMap<String, BTreeMap<String, Stamp>>,
    /// When the last run holding the lock ended (none: it did not end cleanly).
    ended: Option<Time>,
}

impl Ledger {
    /// The latest time it holds.
    fn latest(&self) -> Option<Time> {
        self.files
            .values()
            .chain(self.dirs.values().flat_map(BTreeMap::values))
            .map(|s| s.at)
            .chain(self.ended)
            .max()
    }
}

/// The times of `current` (path → content), given the times `old` held: a path keeps its
/// time while its content is the one `old` holds for it; any other gets `stamp`.
pub(super) fn decide(
    old: &BTreeMap<String, Stamp>,
    current: impl IntoIterator<Item = (String, String)>,
    stamp: Time,
) -> BTreeMap<String, Stamp> {
    current
        .into_iter()
        .map(|(path, id)| {
            let at = match old.get(&path) {
                Some(kept) if kept.id == id => kept.at,
                _ => stamp,
            };
            (
                path,
                Stamp {
                    id,
                    at,
                    leads_to: None,
                },
            )
        })
        .collect()
}

/// Each directory of a tree of `files` (the root being `""`) with its listing's digest:
/// its entries' names, a directory's marked as one.
pub(super) fn listings<'a>(files: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let mut children: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    children.entry(String::new()).or_default();
    for path in files {
        let mut parent = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let name = if last {
                (*part).to_owned()
            } else {
                format!("{part}/")
            };
            children.entry(parent.clone()).or_default().insert(name);
            if !last {
                parent = if parent.is_empty() {
                    (*part).to_owned()
                } else {
                    format!("{parent}/{part}")
                };
                children.entry(parent.clone()).or_default();
            }
        }
    }
    children
        .into_iter()
        .map(|(dir, names)| {
            let mut hasher = blake3::Hasher::new();
            for name in names {
                hasher.update(name.as_bytes());
                hasher.update(b"\0");
            }
            (dir, hasher.finalize().to_hex().to_string())
        })
        .collect()
}

/// The stamps of one run, holding the store's lock until dropped.
#[derive(Debug)]
pub(super) struct Stamps {
    caches: PathBuf,
    /// Held (an exclusive `flock`) while this lives.
    _lock: fs_err::File,
    /// This run's stamp.
    stamp: Time,
    ledgers: BTreeMap<RepoId, Ledger>,
}

impl Stamps {
    /// Takes the lock in `caches` (the store's `caches/`), waiting for another run that
    /// holds it (`waiting` is told first), and reads the ledgers of `repos`.
    pub(super) fn acquire<'r>(
        caches: &Path,
        repos: impl IntoIterator<Item = &'r RepoId>,
        waiting: impl FnOnce(),
    ) -> std::io::Result<Stamps> {
        use rustix::fs::{FlockOperation, flock};
        fs_err::create_dir_all(caches)?;
        let lock = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(caches.join(LOCK))?;
        if flock(lock.file(), FlockOperation::NonBlockingLockExclusive).is_err() {
            waiting();
            flock(lock.file(), FlockOperation::LockExclusive)?;
        }
        let ledgers: BTreeMap<RepoId, Ledger> = repos
            .into_iter()
            .map(|repo| (repo.clone(), read(&caches.join(repo.as_str()).join(LEDGER))))
            .collect();
        // Later than anything an earlier run built, whatever the clock says now.
        let stamp = ledgers
            .values()
            .filter_map(Ledger::latest)
            .map(Time::later)
            .chain([Time::now()])
            .max()
            .unwrap_or_else(Time::now);
        Ok(Stamps {
            caches: caches.to_path_buf(),
            _lock: lock,
            stamp,
            ledgers,
        })
    }

    /// Gives every file of `repo`'s snapshot at `root` (`files`: path, content, whether it
    /// is a symbolic link) and every directory its time, and writes the ledger before any
    /// job can build from them.
    pub(super) fn snapshot(
        &mut self,
        repo: &RepoId,
        root: &Path,
        files: &[(&str, String, bool)],
    ) -> std::io::Result<()> {
        let stamp = self.stamp;
        let ledger = self.ledgers.entry(repo.clone()).or_default();
        let mut new_files = decide(
            &ledger.files,
            files.iter().map(|(p, id, _)| ((*p).to_owned(), id.clone())),
            stamp,
        );
        let mut dirs = decide(
            ledger.dirs.get(WHOLE).unwrap_or(&BTreeMap::new()),
            listings(files.iter().map(|(p, _, _)| *p)),
            stamp,
        );
        // cargo reads a file through a link and records the file it led to, not the link:
        // a link that now leads elsewhere makes both what it led to and what it leads to
        // new (a directory with all below it), whatever they hold.
        let links: Vec<&str> = files
            .iter()
            .filter(|(_, _, link)| *link)
            .map(|(path, _, _)| *path)
            .collect();
        let mut renewed: Vec<String> = Vec::new();
        for (link, now) in links.iter().zip(resolved_within(root, &links)) {
            let before = ledger.files.get(*link).and_then(|s| s.leads_to.clone());
            let changed = new_files.get(*link).is_some_and(|s| s.at == stamp);
            if changed || before != now {
                renewed.extend(before.into_iter().chain(now.clone()));
            }
            if let Some(entry) = new_files.get_mut(*link) {
                entry.leads_to = now;
            }
        }
        for target in renewed {
            for stamps in [&mut new_files, &mut dirs] {
                renew_beneath(stamps, &target, stamp);
            }
        }
        apply(root, &new_files)?;
        apply(root, &dirs)?;
        ledger.files = new_files;
        ledger.dirs.insert(WHOLE.to_owned(), dirs);
        ledger.ended = None;
        self.write(repo)
    }

    /// Gives the directories of a narrowed view of `repo` at `root` (holding `paths`, hard
    /// links of the stamped snapshot's files) their times, kept under the view's `owner`.
    pub(super) fn view(
        &mut self,
        repo: &RepoId,
        owner: &str,
        root: &Path,
        paths: &[&str],
    ) -> std::io::Result<()> {
        let stamp = self.stamp;
        let ledger = self.ledgers.entry(repo.clone()).or_default();
        let dirs = decide(
            ledger.dirs.get(owner).unwrap_or(&BTreeMap::new()),
            listings(paths.iter().copied()),
            stamp,
        );
        apply(root, &dirs)?;
        ledger.dirs.insert(owner.to_owned(), dirs);
        self.write(repo)
    }

    fn write(&mut self, repo: &RepoId) -> std::io::Result<()> {
        let Some(ledger) = self.ledgers.get_mut(repo) else {
            return Ok(());
        };
        ledger.version = VERSION;
        let ledger = &*ledger;
        let dir = self.caches.join(repo.as_str());
        fs_err::create_dir_all(&dir)?;
        let bytes = serde_json::to_vec(ledger).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".cargo-build-stamps-")
            .tempfile_in(&dir)?;
        std::io::Write::write_all(&mut tmp, &bytes)?;
        tmp.persist(dir.join(LEDGER)).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Drop for Stamps {
    /// The run ended: the next one stamps later than now (then the lock goes with the file).
    fn drop(&mut self) {
        let now = Time::now();
        let repos: Vec<RepoId> = self.ledgers.keys().cloned().collect();
        for repo in repos {
            if let Some(ledger) = self.ledgers.get_mut(&repo) {
                ledger.ended = Some(now);
            }
            let _ = self.write(&repo);
        }
    }
}

/// Where each of `links` (below `root`) leads, as a path below `root` (`""`: `root`
/// itself); `None` for a link that leads outside `root`, or nowhere.
fn resolved_within(root: &Path, links: &[&str]) -> Vec<Option<String>> {
    let real_root = fs_err::canonicalize(root).ok();
    links
        .iter()
        .map(|link| {
            let real_root = real_root.as_ref()?;
            let real = fs_err::canonicalize(root.join(link)).ok()?;
            real.strip_prefix(real_root)
                .ok()
                .map(|rel| rel.to_string_lossy().into_owned())
        })
        .collect()
}

/// Gives `target` and every path below it the time `stamp`.
fn renew_beneath(stamps: &mut BTreeMap<String, Stamp>, target: &str, stamp: Time) {
    let below = format!("{target}/");
    for (path, s) in stamps.range_mut(target.to_owned()..) {
        if path == target || target.is_empty() || path.starts_with(&below) {
            s.at = stamp;
        } else if !path.starts_with(target) {
            break;
        }
    }
}

/// A ledger as written, or an empty one (missing, unreadable, another format).
fn read(path: &Path) -> Ledger {
    fs_err::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Ledger>(&bytes).ok())
        .filter(|l| l.version == VERSION)
        .unwrap_or(Ledger {
            version: VERSION,
            ..Ledger::default()
        })
}

/// Sets the modification time of each path below `root` (a link's own, never what it
/// points to); a path that is not there is left alone.
fn apply(root: &Path, stamps: &BTreeMap<String, Stamp>) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, UTIME_OMIT, utimensat};
    for (path, stamp) in stamps {
        let full = if path.is_empty() {
            root.to_path_buf()
        } else {
            root.join(path)
        };
        let times = Timestamps {
            last_access: Timespec {
                tv_sec: 0,
                tv_nsec: UTIME_OMIT,
            },
            last_modification: Timespec {
                tv_sec: stamp.at.secs,
                tv_nsec: i64::from(stamp.at.nanos),
            },
        };
        match utimensat(CWD, &full, &times, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => {
                return Err(std::io::Error::other(format!(
                    "set the time of `{}`: {e}",
                    full.display()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Time {
        Time { secs, nanos: 0 }
    }

    fn stamp(id: &str, secs: i64) -> Stamp {
        Stamp {
            id: id.to_owned(),
            at: t(secs),
            leads_to: None,
        }
    }

    #[test]
    fn a_path_keeps_its_time_exactly_while_its_content_stays() {
        let old = BTreeMap::from([
            ("same".to_owned(), stamp("a", 10)),
            ("edited".to_owned(), stamp("b", 10)),
            ("gone".to_owned(), stamp("c", 10)),
        ]);
        let new = decide(
            &old,
            [
                ("same".to_owned(), "a".to_owned()),
                ("edited".to_owned(), "B".to_owned()),
                ("added".to_owned(), "d".to_owned()),
            ],
            t(99),
        );
        assert_eq!(new["same"], stamp("a", 10));
        assert_eq!(new["edited"], stamp("B", 99));
        assert_eq!(new["added"], stamp("d", 99));
        // What is gone is forgotten: back with its old content, it is new again.
        assert!(!new.contains_key("gone"));
        let back = decide(&new, [("gone".to_owned(), "c".to_owned())], t(200));
        assert_eq!(back["gone"], stamp("c", 200));
    }

    /// The property cargo needs, over a history of edits (a path going back and forth
    /// between contents, as a branch switch does): whenever a path's content differs from
    /// what a build read, the path is newer than that build.
    #[test]
    fn a_path_is_newer_than_every_build_of_other_content_whatever_the_history() {
        let contents = ["x", "y", "x", "x", "z", "y", "y", "x"];
        let mut ledger = BTreeMap::new();
        let mut clock = 100;
        // (content built from, when)
        let mut builds: Vec<(&str, i64)> = Vec::new();
        for content in contents {
            let latest = ledger
                .values()
                .map(|s: &Stamp| s.at.secs)
                .max()
                .unwrap_or(0);
            let run_stamp = t(clock.max(latest + 1));
            ledger = decide(&ledger, [("p".to_owned(), content.to_owned())], run_stamp);
            let at = ledger["p"].at.secs;
            for (built_from, when) in &builds {
                if *built_from != content {
                    assert!(
                        at > *when,
                        "{content} at {at} vs a build of {built_from} at {when}"
                    );
                }
            }
            clock += 5;
            builds.push((content, clock));
            clock += 5;
        }
    }

    #[test]
    fn a_listing_changes_when_a_name_or_a_kind_changes_and_only_then() {
        let one = listings(["a.rs", "src/lib.rs", "src/m/x.rs"]);
        assert_eq!(
            one.keys().map(String::as_str).collect::<Vec<_>>(),
            ["", "src", "src/m"]
        );
        let same = listings(["src/m/x.rs", "a.rs", "src/lib.rs"]);
        assert_eq!(one, same);
        let added = listings(["a.rs", "src/lib.rs", "src/m/x.rs", "src/new.rs"]);
        assert_ne!(one["src"], added["src"]);
        assert_eq!(one[""], added[""]);
        assert_eq!(one["src/m"], added["src/m"]);
        // `m` a file rather than a directory.
        let kind = listings(["a.rs", "src/lib.rs", "src/m"]);
        assert_ne!(one["src"], kind["src"]);
    }

    #[test]
    fn stamps_are_set_on_the_files_and_kept_across_runs_and_the_lock_is_exclusive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caches = dir.path().join("caches");
        let root = dir.path().join("snap");
        fs_err::create_dir_all(root.join("src")).expect("mkdir");
        fs_err::write(root.join("src/lib.rs"), "a").expect("write");
        fs_err::write(root.join("Cargo.toml"), "t").expect("write");
        let repo = RepoId::parse("app").expect("repo");
        let files = |lib: &str| {
            vec![
                ("Cargo.toml", "t".to_owned(), false),
                ("src/lib.rs", lib.to_owned(), false),
            ]
        };
        let mtime = |p: &str| {
            fs_err::symlink_metadata(root.join(p))
                .expect("stat")
                .modified()
                .expect("mtime")
        };
        let first = {
            let mut stamps = Stamps::acquire(&caches, [&repo], || {}).expect("lock");
            stamps.snapshot(&repo, &root, &files("a")).expect("stamp");
            // A second holder waits: asked without waiting, the lock is taken.
            let lock = fs_err::File::open(caches.join(LOCK)).expect("open");
            assert!(
                rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .is_err()
            );
            (mtime("src/lib.rs"), mtime("Cargo.toml"), mtime("src"))
        };
        // As copied again from a work tree whose edit kept the old time.
        fs_err::write(root.join("src/lib.rs"), "b").expect("write");
        let mut stamps = Stamps::acquire(&caches, [&repo], || {}).expect("lock");
        stamps.snapshot(&repo, &root, &files("b")).expect("stamp");
        assert!(mtime("src/lib.rs") > first.0);
        assert_eq!(mtime("Cargo.toml"), first.1);
        assert_eq!(mtime("src"), first.2);
        assert!(mtime("src/lib.rs") > first.2);
    }

    #[test]
    fn an_unreadable_ledger_reads_as_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LEDGER);
        fs_err::write(&path, "{not json").expect("write");
        assert!(read(&path).files.is_empty());
        fs_err::write(&path, r#"{"version":99,"files":{},"dirs":{},"ended":null}"#).expect("write");
        assert_eq!(read(&path).version, VERSION);
    }

    /// A link that now leads to another file, neither of which changed: cargo recorded the
    /// file the link led to when it built, so both that one and the one it leads to now
    /// (for a directory, all below it) get the run's stamp.
    #[test]
    fn a_link_that_leads_elsewhere_makes_what_it_leads_to_new() {
        let dir = tempfile::tempdir().expect("tempdir");
        let caches = dir.path().join("caches");
        let root = dir.path().join("snap");
        fs_err::create_dir_all(root.join("v1")).expect("mkdir");
        fs_err::create_dir_all(root.join("v2")).expect("mkdir");
        for f in ["a.txt", "b.txt", "other.txt", "v1/x.rs", "v2/x.rs"] {
            fs_err::write(root.join(f), f).expect("write");
        }
        let link = |name: &str, to: &str| {
            let _ = fs_err::remove_file(root.join(name));
            std::os::unix::fs::symlink(to, root.join(name)).expect("link");
        };
        link("data.txt", "a.txt");
        link("cur", "v1");
        let repo = RepoId::parse("app").expect("repo");
        let files = |data: &str, cur: &str| {
            vec![
                ("a.txt", "a".to_owned(), false),
                ("b.txt", "b".to_owned(), false),
                ("cur", cur.to_owned(), true),
                ("data.txt", data.to_owned(), true),
                ("other.txt", "o".to_owned(), false),
                ("v1/x.rs", "1".to_owned(), false),
                ("v2/x.rs", "2".to_owned(), false),
            ]
        };
        let mtime = |p: &str| {
            fs_err::metadata(root.join(p))
                .expect("stat")
                .modified()
                .expect("mtime")
        };
        let before = {
            let mut stamps = Stamps::acquire(&caches, [&repo], || {}).expect("lock");
            stamps
                .snapshot(&repo, &root, &files("a.txt", "v1"))
                .expect("stamp");
            (mtime("data.txt"), mtime("cur/x.rs"), mtime("other.txt"))
        };
        link("data.txt", "b.txt");
        link("cur", "v2");
        let mut stamps = Stamps::acquire(&caches, [&repo], || {}).expect("lock");
        stamps
            .snapshot(&repo, &root, &files("b.txt", "v2"))
            .expect("stamp");
        // Read through the links (as cargo reads them): newer than anything built before.
        assert!(mtime("data.txt") > before.0);
        assert!(mtime("cur/x.rs") > before.1);
        assert!(mtime("v2") > before.1);
        // And what they led to (cargo recorded those files, not the links).
        assert!(mtime("a.txt") > before.0);
        assert!(mtime("v1/x.rs") > before.1);
        // What no link led to nor leads to keeps its time.
        assert_eq!(mtime("other.txt"), before.2);
        // Unchanged links renew nothing.
        let again = (mtime("a.txt"), mtime("v2/x.rs"));
        drop(stamps);
        let mut stamps = Stamps::acquire(&caches, [&repo], || {}).expect("lock");
        stamps
            .snapshot(&repo, &root, &files("b.txt", "v2"))
            .expect("stamp");
        assert_eq!((mtime("a.txt"), mtime("v2/x.rs")), again);
    }
}
