//! Sandbox setup and its cache.
//!
//! A repository in `proofgraph.yaml` may declare `setup` commands (`[[npm, ci]]`) that run
//! before any of its providers, with the outside network. Without `setupCache` they run in
//! each fresh sandbox, with the code as it is. With `setupCache: [node_modules]` setup is a
//! derivation (Nix's rule): it runs in a directory of its own that holds only its inputs —
//! the files `setupInputs` selects, by default the ecosystems' manifests and lockfiles
//! ([`SETUP_INPUTS`]) — so what it produces can hold dependencies but never the project.
//! The cached directories are kept in the store as a [`Tree`] under a key of the commands,
//! the cached directories and every input's identity ([`cache_key`]); the project's code
//! comes from the sandbox.
//!
//! Each sandbox that needs them sees them without a copy: an overlay in the run's mount
//! namespace shows the tree, read-only, under a layer of the run's own where a provider's
//! writes go (`Run::overlay`). Without a mount namespace (`--isolation none`, a machine
//! without namespaces) or with `--keep-sandbox` they are copied with `copy_file_range`,
//! never hard-linked: a provider writing into `node_modules` must not be able to change
//! the store.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::observe::inputs::Snapshot;
use crate::store::{Sha256, Store};

pub use crate::observe::setup_inputs::{SETUP_INPUTS, cache_key, inputs};

/// One path of a kept setup output, as `listing.json` lists it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    path: String,
    kind: String,
    sha256: Option<Sha256>,
    target: Option<String>,
}

/// A setup's output kept in the store, as setup left it: `setup-trees/<key>/tree/` holds
/// the cached directories, `listing.json` every path in them with its digest, and `files`
/// how many there are (what a run reads: the listing is for checking). They are made in a
/// staging directory and renamed into place together, so an entry that exists is complete. A run never writes there: its jobs see the tree through an overlay
/// (or get a copy), and the run's mount namespace binds it read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// `setup-trees/<key>/tree`.
    pub root: PathBuf,
    /// How many paths (files and links) it holds.
    pub files: usize,
}

/// Where the store keeps setup trees.
pub fn trees(store: &Store) -> PathBuf {
    store.dir().join("setup-trees")
}

/// The setup-cache keys the workspace's repositories need now, from their snapshots: one
/// per repository whose catalog entry declares `setup` and `setupCache`.
pub fn current_keys(
    catalog: &crate::load::config::catalog::Catalog,
    snapshots: &std::collections::BTreeMap<proofgraph_graph::RepoId, Snapshot>,
) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (repo, entry) in &catalog.repositories {
        let (Some(commands), Some(snapshot)) = (&entry.setup, snapshots.get(repo)) else {
            continue;
        };
        let commands: Vec<Vec<String>> = commands.iter().map(|c| c.value.clone()).collect();
        let dirs: Vec<String> = entry
            .setup_cache
            .iter()
            .flatten()
            .map(|c| c.value.clone())
            .collect();
        if commands.is_empty() || dirs.is_empty() {
            continue;
        }
        let patterns: Option<Vec<String>> = entry
            .setup_inputs
            .as_ref()
            .map(|all| all.iter().map(|p| p.value.clone()).collect());
        let files = inputs(patterns.as_deref(), snapshot);
        out.insert(cache_key(&commands, &dirs, patterns.as_deref(), &files));
    }
    out
}

/// Removes the kept setup trees whose key is not in `keep` and that were last used (or,
/// set aside as damaged, made) longer than `older_than` ago; returns how many and their
/// bytes. A run uses a tree it opens within the hour (`MIN_GC_AGE` bounds `older_than`),
/// so none is removed under it.
pub fn collect(
    store: &Store,
    keep: &std::collections::BTreeSet<String>,
    older_than: std::time::Duration,
) -> (u64, u64) {
    let older_than = older_than.max(crate::store::MIN_GC_AGE);
    let now = std::time::SystemTime::now();
    let Ok(entries) = fs_err::read_dir(trees(store)) else {
        return (0, 0);
    };
    let (mut removed, mut bytes) = (0, 0);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if keep.contains(&name) {
            continue;
        }
        let path = entry.path();
        let used = fs_err::metadata(path.join("files"))
            .or_else(|_| fs_err::metadata(&path))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok());
        if used.is_none_or(|age| age < older_than) {
            continue;
        }
        let size = size_of(&path);
        let threads = std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN);
        if proofgraph_sandbox::materialize::remove(&path, threads).is_ok() {
            removed += 1;
            bytes += size;
        }
    }
    (removed, bytes)
}

/// The bytes of the regular files under `dir`, links not followed.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

impl Tree {
    /// The kept output of the setup `key`, when the store has it.
    pub fn open(store: &Store, key: &str) -> Option<Tree> {
        let entry = trees(store).join(key);
        let files = fs_err::read_to_string(entry.join("files")).ok()?;
        let files = files.trim_end().parse().ok()?;
        let root = entry.join("tree");
        (root.is_dir() && entry.join("listing.json").is_file()).then_some(Tree { root, files })
    }

    /// Where the cached directory `dir` (as `setupCache` names it) is in the tree.
    pub fn dir(&self, dir: &str) -> PathBuf {
        self.root.join(dir)
    }

    /// Marks the tree used now (the modification time of its `files`), which `cache gc`
    /// reads as its last use.
    pub fn touch(&self) {
        if let Some(entry) = self.root.parent()
            && let Ok(file) = fs_err::File::options()
                .append(true)
                .open(entry.join("files"))
        {
            let _ = file.file().set_modified(std::time::SystemTime::now());
        }
    }
}

/// Keeps the `cache_dirs` a setup produced in `workdir` under `key` in the store, moving
/// them there (a copy across file systems). Where another run kept the same key first,
/// its tree is the one returned.
pub fn save(
    store: &Store,
    key: &str,
    workdir: &Path,
    cache_dirs: &[String],
) -> Result<Tree, String> {
    let trees = trees(store);
    fs_err::create_dir_all(&trees).map_err(|e| e.to_string())?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&trees)
        .map_err(|e| format!("create a staging directory in {}: {e}", trees.display()))?;
    let tree = staging.path().join("tree");
    for dir in cache_dirs {
        let src = workdir.join(dir);
        if fs_err::symlink_metadata(&src).is_ok() {
            merge(&src, &tree.join(dir), Transfer::Move).map_err(|e| e.to_string())?;
        }
    }
    let mut entries = Vec::new();
    if tree.exists() {
        list(&tree, &tree, &mut entries)?;
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let listing = serde_json::to_vec(&entries).map_err(|e| e.to_string())?;
    fs_err::write(staging.path().join("listing.json"), listing).map_err(|e| e.to_string())?;
    fs_err::write(staging.path().join("files"), format!("{}\n", entries.len()))
        .map_err(|e| e.to_string())?;
    fs_err::create_dir_all(&tree).map_err(|e| e.to_string())?;
    let dest = trees.join(key);
    if fs_err::rename(staging.path(), &dest).is_err() {
        // Another run kept the same key first: use its tree. A damaged one (its listing
        // gone or unreadable) is set aside and replaced.
        if let Some(tree) = Tree::open(store, key) {
            return Ok(tree);
        }
        let aside = tempfile::Builder::new()
            .prefix(".damaged-")
            .tempdir_in(&trees)
            .map_err(|e| e.to_string())?;
        let _ = fs_err::rename(&dest, aside.path().join("tree"));
        if let Err(e) = fs_err::rename(staging.path(), &dest) {
            // What setup produced goes back where it was made, for the sandbox to take.
            for dir in cache_dirs {
                let _ = merge(&tree.join(dir), &workdir.join(dir), Transfer::Move);
            }
            return Err(e.to_string());
        }
    }
    let _ = staging.keep();
    Ok(Tree {
        root: dest.join("tree"),
        files: entries.len(),
    })
}

/// Lists every file and link under `at`, with the digest of each file.
fn list(root: &Path, at: &Path, out: &mut Vec<Entry>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    for item in fs_err::read_dir(at).map_err(|e| e.to_string())? {
        let item = item.map_err(|e| e.to_string())?;
        let path = item.path();
        let rel = path
            .strip_prefix(root)
            .map_err(|e| e.to_string())?
            .to_string_lossy()
            .into_owned();
        let meta = fs_err::symlink_metadata(&path).map_err(|e| e.to_string())?;
        if meta.is_symlink() {
            let target = fs_err::read_link(&path).map_err(|e| e.to_string())?;
            out.push(Entry {
                path: rel,
                kind: "symlink".into(),
                sha256: None,
                target: Some(target.to_string_lossy().into_owned()),
            });
        } else if meta.is_dir() {
            list(root, &path, out)?;
        } else if meta.is_file() {
            let bytes = fs_err::read(&path).map_err(|e| e.to_string())?;
            let kind = if meta.permissions().mode() & 0o111 != 0 {
                "executable"
            } else {
                "file"
            };
            out.push(Entry {
                path: rel,
                kind: kind.into(),
                sha256: Some(Sha256::of(&bytes)),
                target: None,
            });
        }
    }
    Ok(())
}

/// How [`merge`] brings a tree over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// Renames (the same file system; across file systems it copies).
    Move,
    /// Copies each file with `copy_file_range` (a reflink where the file system has them);
    /// never a hard link, so writes to the copy never reach the source.
    Copy,
}

/// Brings `src` to `dst`. Where `dst` already has a directory of that name (files git
/// tracks there), the two are merged and what `src` holds wins.
pub fn merge(src: &Path, dst: &Path, how: Transfer) -> std::io::Result<()> {
    let meta = fs_err::symlink_metadata(src)?;
    let existing = match fs_err::symlink_metadata(dst) {
        Ok(existing) => Some(existing),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if meta.is_dir() && existing.as_ref().is_some_and(std::fs::Metadata::is_dir) {
        for item in fs_err::read_dir(src)? {
            let item = item?;
            merge(&item.path(), &dst.join(item.file_name()), how)?;
        }
        return Ok(());
    }
    match existing {
        Some(e) if e.is_dir() => fs_err::remove_dir_all(dst)?,
        Some(_) => fs_err::remove_file(dst)?,
        None => {
            if let Some(parent) = dst.parent() {
                fs_err::create_dir_all(parent)?;
            }
        }
    }
    if how == Transfer::Move && fs_err::rename(src, dst).is_ok() {
        return Ok(());
    }
    if meta.is_symlink() {
        fs_err::os::unix::fs::symlink(fs_err::read_link(src)?, dst)
    } else if meta.is_dir() {
        fs_err::create_dir(dst)?;
        for item in fs_err::read_dir(src)? {
            let item = item?;
            merge(&item.path(), &dst.join(item.file_name()), how)?;
        }
        // The mode last: a read-only directory (Go's module cache) is filled first.
        fs_err::set_permissions(dst, meta.permissions())
    } else {
        fs_err::copy(src, dst).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::observe::inputs::{FileEntry, FileKind, blob_identity};

    fn snapshot(paths: &[&str]) -> Snapshot {
        Snapshot {
            dir: PathBuf::from("/r"),
            files: paths
                .iter()
                .map(|p| FileEntry {
                    path: (*p).to_owned(),
                    id: blob_identity(p.as_bytes()),
                    kind: FileKind::File,
                })
                .collect(),
            rehashed: 0,
        }
    }

    #[test]
    fn a_cached_setup_sees_manifests_lockfiles_and_their_configuration_at_any_depth_or_what_is_declared()
     {
        let s = snapshot(&[
            ".npmrc",
            "packages/ui/package.json",
            "pnpm-workspace.yaml",
            "pyproject.toml",
            "src/app.ts",
            "src/lib.py",
            "tools/uv.lock",
        ]);
        let seen: Vec<&str> = inputs(None, &s).iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            seen,
            [
                ".npmrc",
                "packages/ui/package.json",
                "pnpm-workspace.yaml",
                "pyproject.toml",
                "tools/uv.lock"
            ]
        );
        let declared = ["pyproject.toml".to_owned(), "src/*.py".to_owned()];
        let seen: Vec<&str> = inputs(Some(&declared), &s)
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(seen, ["pyproject.toml", "src/lib.py"]);
        // What it sees is all its key covers: another input, another key.
        let key = |s: &Snapshot| cache_key(&[vec!["x".to_owned()]], &[], None, &inputs(None, s));
        let mut edited = s.clone();
        edited.files[6].id = blob_identity(b"other lock");
        assert_ne!(key(&s), key(&edited));
        let mut source = s.clone();
        source.files[4].id = blob_identity(b"other source");
        assert_eq!(key(&s), key(&source), "the source is not a setup input");
    }
}
