//! Sandbox setup and its cache.
//!
//! A repository in `proofgraph.yaml` may declare `setup` commands (`[[npm, ci]]`) that run
//! before any of its providers, with the outside network. Without `setupCache` they run in
//! each fresh sandbox, with the code as it is. With `setupCache: [node_modules]` setup is a
//! derivation (Nix's rule): it runs in a directory of its own that holds only its inputs —
//! the files `setupInputs` selects, by default the ecosystems' manifests and lockfiles
//! ([`SETUP_INPUTS`]) — so what it produces can hold dependencies but never the project.
//! The cached directories are kept in the store under a key of the commands, the cached
//! directories and every input's identity ([`cache_key`]), and restored into each sandbox
//! that needs them; the project's code comes from the sandbox.
//!
//! Restoring copies each file from the store with `copy_file_range`, which the
//! kernel turns into a reflink on filesystems that support it (btrfs, XFS) and
//! into an in-kernel copy elsewhere. Files are never hard-linked: a provider
//! writing into `node_modules` must not be able to change the store.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::observe::inputs::{FileEntry, Pattern, Snapshot};
use crate::store::{Sha256, Store, sha256_hex};

/// The files whose content decides what a setup produces: manifests, lockfiles, and the
/// package managers' own configuration an install reads, at any depth of the repository.
pub const SETUP_INPUTS: [&str; 23] = [
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    ".npmrc",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "yarn.lock",
    ".yarnrc.yml",
    "bun.lock",
    "bun.lockb",
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "pyproject.toml",
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "requirements.txt",
    "Pipfile",
    "Pipfile.lock",
    "Gemfile",
    "Gemfile.lock",
];

/// The files a cached setup sees: those `patterns` (a repository's `setupInputs`) select,
/// or, without patterns, every file named as a manifest or lockfile in [`SETUP_INPUTS`], at
/// any depth. A pattern that is not a valid glob selects nothing (`validate` reports it).
pub fn inputs<'s>(patterns: Option<&[String]>, snapshot: &'s Snapshot) -> Vec<&'s FileEntry> {
    match patterns {
        Some(patterns) => {
            let patterns: Vec<Pattern> = patterns.iter().filter_map(|p| Pattern::new(p)).collect();
            snapshot
                .files
                .iter()
                .filter(|f| patterns.iter().any(|p| p.matches(&f.path)))
                .collect()
        }
        None => snapshot
            .files
            .iter()
            .filter(|f| SETUP_INPUTS.contains(&f.path.rsplit('/').next().unwrap_or(&f.path)))
            .collect(),
    }
}

/// The cache key of a repository's setup: its commands, the cached directories, the
/// declared `setupInputs` patterns and the identity of every file they select (what the
/// setup sees, and all it sees: [`inputs`]).
pub fn cache_key(
    setup: &[Vec<String>],
    cache_dirs: &[String],
    patterns: Option<&[String]>,
    inputs: &[&FileEntry],
) -> String {
    let mut text = String::from("proofgraph/setup-cache/v2\n");
    for argv in setup {
        text.push_str(&format!("argv {}\n", serde_json::Value::from(argv.clone())));
    }
    for dir in cache_dirs {
        text.push_str(&format!("cache {dir}\n"));
    }
    for pattern in patterns.into_iter().flatten() {
        text.push_str(&format!("pattern {pattern}\n"));
    }
    for f in inputs {
        text.push_str(&format!("input {} {}\n", f.path, f.id));
    }
    sha256_hex(text.as_bytes())
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    path: String,
    kind: String,
    sha256: Option<Sha256>,
    target: Option<String>,
}

fn entry_path(store: &Store, key: &str) -> PathBuf {
    store.dir().join("setup").join(key)
}

/// Saves the `cache_dirs` of `sandbox` under `key`. Returns the number of
/// files kept.
pub fn save(
    store: &Store,
    key: &str,
    sandbox: &Path,
    cache_dirs: &[String],
) -> Result<usize, String> {
    let mut entries = Vec::new();
    for dir in cache_dirs {
        let root = sandbox.join(dir);
        if !root.exists() {
            continue;
        }
        let mut stack = vec![root];
        while let Some(at) = stack.pop() {
            let items = fs_err::read_dir(&at).map_err(|e| e.to_string())?;
            for item in items.flatten() {
                let path = item.path();
                let rel = path
                    .strip_prefix(sandbox)
                    .map_err(|e| e.to_string())?
                    .to_string_lossy()
                    .into_owned();
                let ft = item.file_type().map_err(|e| e.to_string())?;
                if ft.is_symlink() {
                    let target = fs_err::read_link(&path).map_err(|e| e.to_string())?;
                    entries.push(Entry {
                        path: rel,
                        kind: "symlink".into(),
                        sha256: None,
                        target: Some(target.to_string_lossy().into_owned()),
                    });
                } else if ft.is_dir() {
                    stack.push(path);
                } else if ft.is_file() {
                    use std::os::unix::fs::PermissionsExt as _;
                    let exec = item
                        .metadata()
                        .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
                    let bytes = fs_err::read(&path).map_err(|e| e.to_string())?;
                    let sha = store.put(&bytes).map_err(|e| e.to_string())?;
                    entries.push(Entry {
                        path: rel,
                        kind: if exec {
                            "executable".into()
                        } else {
                            "file".into()
                        },
                        sha256: Some(sha),
                        target: None,
                    });
                }
            }
        }
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let listing = serde_json::to_vec(&entries).map_err(|e| e.to_string())?;
    let sha = store.put(&listing).map_err(|e| e.to_string())?;
    store
        .write_atomic(&entry_path(store, key), format!("{sha}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    Ok(entries.len())
}

/// Moves the `cache_dirs` a cached setup produced in `workdir` into `sandbox` (the same file
/// system: renames, no copy). Where the sandbox already has a directory of that name (files
/// git tracks there), the two are merged and what setup produced wins, as when it is
/// restored from the store.
pub fn hand_over(workdir: &Path, sandbox: &Path, cache_dirs: &[String]) -> std::io::Result<()> {
    fn move_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
        let src_dir = fs_err::symlink_metadata(src)?.is_dir();
        match fs_err::symlink_metadata(dst) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = dst.parent() {
                    fs_err::create_dir_all(parent)?;
                }
                fs_err::rename(src, dst)
            }
            Err(e) => Err(e),
            Ok(meta) if src_dir && meta.is_dir() => {
                for item in fs_err::read_dir(src)? {
                    let item = item?;
                    move_tree(&item.path(), &dst.join(item.file_name()))?;
                }
                Ok(())
            }
            Ok(meta) => {
                if meta.is_dir() {
                    fs_err::remove_dir_all(dst)?;
                } else {
                    fs_err::remove_file(dst)?;
                }
                fs_err::rename(src, dst)
            }
        }
    }
    for dir in cache_dirs {
        let src = workdir.join(dir);
        if fs_err::symlink_metadata(&src).is_ok() {
            move_tree(&src, &sandbox.join(dir))?;
        }
    }
    Ok(())
}

/// Restores what [`save`] kept under `key` into `sandbox`. Returns `None`
/// when there is no (intact) cache entry: then setup must run.
pub fn restore(store: &Store, key: &str, sandbox: &Path) -> Option<usize> {
    let text = fs_err::read_to_string(entry_path(store, key)).ok()?;
    let listing = store.get(&Sha256::parse(text.trim())?)?;
    let entries: Vec<Entry> = serde_json::from_slice(&listing).ok()?;
    // Check everything first: a cache with a missing or corrupt blob is not used.
    for e in &entries {
        if let Some(sha) = &e.sha256
            && !store.has(sha)
        {
            return None;
        }
    }
    for e in &entries {
        let dest = sandbox.join(&e.path);
        if let Some(parent) = dest.parent() {
            fs_err::create_dir_all(parent).ok()?;
        }
        match (e.kind.as_str(), &e.sha256, &e.target) {
            ("symlink", _, Some(target)) => fs_err::os::unix::fs::symlink(target, &dest).ok()?,
            (kind, Some(sha), _) => {
                use std::os::unix::fs::PermissionsExt as _;
                fs_err::copy(store.blob_path(sha), &dest).ok()?;
                let mode = if kind == "executable" { 0o755 } else { 0o644 };
                fs_err::set_permissions(&dest, std::fs::Permissions::from_mode(mode)).ok()?;
            }
            _ => return None,
        }
    }
    Some(entries.len())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::observe::inputs::{FileKind, blob_identity};

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
