//! Materialising a sandbox: copying exactly the given files of a repository
//! into a fresh directory, in parallel.
//!
//! The caller decides *which* files (the tracked files for a worktree
//! sandbox; the working tree minus ignored and regenerable paths for a copy
//! sandbox); this module only copies them faithfully: regular files with
//! their content (`copy_file_range`, which reflinks where the filesystem can),
//! executables with their execute bits, and symlinks verbatim (the link, not
//! what it points to). Nothing is hard-linked: a command writing into the
//! sandbox can never change the working tree.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use crate::error::SandboxError;

/// What kind of file an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A regular file with execute permission.
    Executable,
    /// A symbolic link, copied as a link.
    Symlink,
}

/// One file to copy, by its path relative to the source (`/`-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The relative path.
    pub path: &'a str,
    /// Its kind.
    pub kind: FileKind,
}

/// What was copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Materialized {
    /// Files (and links) written.
    pub files: usize,
    /// Bytes of regular-file content copied.
    pub bytes: u64,
}

fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> SandboxError + 'a {
    move |source| SandboxError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Copies `entries` from `source` into `dest` (created; must not exist or be
/// empty), using up to `threads` threads.
pub fn materialize(
    source: &Path,
    dest: &Path,
    entries: &[Entry<'_>],
    threads: NonZeroUsize,
) -> Result<Materialized, SandboxError> {
    for entry in entries {
        let p = Path::new(entry.path);
        if p.is_absolute()
            || p.components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(SandboxError::UnsafePath {
                path: entry.path.to_owned(),
            });
        }
    }
    fs_err::create_dir_all(dest).map_err(io("create", dest))?;
    let mut dirs: Vec<PathBuf> = entries
        .iter()
        .filter_map(|e| {
            Path::new(e.path)
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| dest.join(p))
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        fs_err::create_dir_all(dir).map_err(io("create", dir))?;
    }
    let chunk = entries.len().div_ceil(threads.get()).max(1);
    let results: Vec<Result<Materialized, SandboxError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || copy_all(source, dest, part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(SandboxError::Panicked)))
            .collect()
    });
    let mut total = Materialized::default();
    for r in results {
        let m = r?;
        total.files += m.files;
        total.bytes += m.bytes;
    }
    Ok(total)
}

fn copy_all(
    source: &Path,
    dest: &Path,
    entries: &[Entry<'_>],
) -> Result<Materialized, SandboxError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut done = Materialized::default();
    for entry in entries {
        let from = source.join(entry.path);
        let to = dest.join(entry.path);
        match entry.kind {
            FileKind::Symlink => {
                let target = fs_err::read_link(&from).map_err(io("read the link", &from))?;
                fs_err::os::unix::fs::symlink(&target, &to).map_err(io("create the link", &to))?;
            }
            FileKind::File | FileKind::Executable => {
                done.bytes += fs_err::copy(&from, &to).map_err(io("copy", &from))?;
                let mode = if entry.kind == FileKind::Executable {
                    0o755
                } else {
                    0o644
                };
                fs_err::set_permissions(&to, std::fs::Permissions::from_mode(mode))
                    .map_err(io("set permissions of", &to))?;
            }
        }
        done.files += 1;
    }
    Ok(done)
}

/// Removes a sandbox directory and everything in it (making read-only
/// directories writable first, as some tools leave them).
pub fn remove(dir: &Path) -> Result<(), SandboxError> {
    match fs_err::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(dir);
            fs_err::remove_dir_all(dir).map_err(io("remove", dir))
        }
    }
}

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let _ = fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    if let Ok(entries) = fs_err::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_files_links_and_modes_exactly() {
        use std::os::unix::fs::PermissionsExt as _;
        let src = tempfile::tempdir().expect("tempdir");
        let dst = tempfile::tempdir().expect("tempdir");
        let dest = dst.path().join("sandbox");
        fs_err::create_dir_all(src.path().join("a/b")).expect("mkdir");
        fs_err::write(src.path().join("a/b/file.txt"), b"content").expect("write");
        fs_err::write(src.path().join("run.sh"), b"#!/bin/sh\n").expect("write");
        fs_err::write(src.path().join("untracked.txt"), b"not listed").expect("write");
        fs_err::os::unix::fs::symlink("../outside", src.path().join("link")).expect("symlink");
        let entries = [
            Entry {
                path: "a/b/file.txt",
                kind: FileKind::File,
            },
            Entry {
                path: "run.sh",
                kind: FileKind::Executable,
            },
            Entry {
                path: "link",
                kind: FileKind::Symlink,
            },
        ];
        let m = materialize(
            src.path(),
            &dest,
            &entries,
            NonZeroUsize::new(2).expect("non-zero"),
        )
        .expect("materialize");
        assert_eq!(m.files, 3);
        assert_eq!(
            fs_err::read(dest.join("a/b/file.txt")).expect("read"),
            b"content"
        );
        let mode = fs_err::metadata(dest.join("run.sh"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(
            fs_err::read_link(dest.join("link")).expect("link").to_str(),
            Some("../outside")
        );
        assert!(!dest.join("untracked.txt").exists());
        // Writing in the sandbox does not touch the source.
        fs_err::write(dest.join("a/b/file.txt"), b"changed").expect("write");
        assert_eq!(
            fs_err::read(src.path().join("a/b/file.txt")).expect("read"),
            b"content"
        );
        remove(&dest).expect("remove");
        assert!(!dest.exists());
    }

    #[test]
    fn paths_that_climb_out_are_refused() {
        let src = tempfile::tempdir().expect("tempdir");
        let entries = [Entry {
            path: "../escape",
            kind: FileKind::File,
        }];
        let err = materialize(
            src.path(),
            &src.path().join("d"),
            &entries,
            NonZeroUsize::MIN,
        )
        .expect_err("refused");
        assert!(matches!(err, SandboxError::UnsafePath { .. }));
    }
}
