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
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

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

/// The open directories, in the source and in the destination, of the entries being copied:
/// entries come sorted, so consecutive ones mostly share a directory, which is opened once
/// for them; each file is then named by one path component instead of a full path the kernel
/// would walk component by component (most of a small file's copy).
struct OpenDirs {
    /// The directory's path relative to the source and the destination.
    relative: String,
    source: OwnedFd,
    dest: OwnedFd,
}

fn open_dir(path: &Path) -> Result<OwnedFd, SandboxError> {
    nix::fcntl::open(
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| SandboxError::Io {
        action: "open the directory",
        path: path.to_path_buf(),
        source: e.into(),
    })
}

fn copy_all(
    source: &Path,
    dest: &Path,
    entries: &[Entry<'_>],
) -> Result<Materialized, SandboxError> {
    let mut done = Materialized::default();
    let mut open: Option<OpenDirs> = None;
    for entry in entries {
        let (parent, name) = entry.path.rsplit_once('/').unwrap_or(("", entry.path));
        let dirs = match open.take() {
            Some(dirs) if dirs.relative == parent => dirs,
            _ => OpenDirs {
                relative: parent.to_owned(),
                source: open_dir(&source.join(parent))?,
                dest: open_dir(&dest.join(parent))?,
            },
        };
        // Paths for messages, made only on failure.
        let failed = |action: &'static str, base: &Path, e: std::io::Error| SandboxError::Io {
            action,
            path: base.join(entry.path),
            source: e,
        };
        match entry.kind {
            FileKind::Symlink => {
                let target = nix::fcntl::readlinkat(&dirs.source, name)
                    .map_err(|e| failed("read the link", source, e.into()))?;
                nix::unistd::symlinkat(target.as_os_str(), &dirs.dest, name)
                    .map_err(|e| failed("create the link", dest, e.into()))?;
            }
            FileKind::File | FileKind::Executable => {
                let mode = Mode::from_bits_truncate(if entry.kind == FileKind::Executable {
                    0o755
                } else {
                    0o644
                });
                let from = nix::fcntl::openat(
                    &dirs.source,
                    name,
                    OFlag::O_RDONLY | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| failed("copy", source, e.into()))?;
                let to = nix::fcntl::openat(
                    &dirs.dest,
                    name,
                    OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC,
                    mode,
                )
                .map_err(|e| failed("create", dest, e.into()))?;
                done.bytes += copy_content(from, &to).map_err(|e| failed("copy", source, e))?;
                // Exactly 0644 or 0755, whatever the umask took from the mode at creation.
                nix::sys::stat::fchmod(&to, mode)
                    .map_err(|e| failed("set permissions of", dest, e.into()))?;
            }
        }
        open = Some(dirs);
        done.files += 1;
    }
    Ok(done)
}

/// Copies a file's whole content: `copy_file_range` (a reflink where the file system can)
/// until it reports the end, without first asking for the size; where the kernel cannot copy
/// between these two files, `io::copy` (read and write).
fn copy_content(from: OwnedFd, to: &OwnedFd) -> std::io::Result<u64> {
    use nix::errno::Errno;
    let mut copied: u64 = 0;
    loop {
        match nix::fcntl::copy_file_range(&from, None, to, None, 1 << 30) {
            Ok(0) => return Ok(copied),
            Ok(n) => copied += n as u64,
            Err(Errno::EINTR) => {}
            Err(Errno::EXDEV | Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP)
                if copied == 0 =>
            {
                let mut from = std::fs::File::from(from);
                let mut to = std::fs::File::from(to.try_clone()?);
                return std::io::copy(&mut from, &mut to);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Removes a sandbox directory and everything in it (making read-only
/// directories writable first, as some tools leave them), on up to `threads` threads.
///
/// The tree is listed first, without following symbolic links (a link is removed, never
/// what it points to); then each thread unlinks the files of whole directories (files of
/// one directory on one thread: the kernel serialises changes to a directory), and the
/// directories go last, deepest first. A sandbox of a few thousand files takes about half
/// as long on two cores as `remove_dir_all`. Anything unexpected (a directory that cannot
/// be read or written) falls back to making the tree writable and `remove_dir_all`.
pub fn remove(dir: &Path, threads: NonZeroUsize) -> Result<(), SandboxError> {
    match fs_err::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(meta) if !meta.is_dir() => {
            return fs_err::remove_file(dir).map_err(io("remove", dir));
        }
        _ => {}
    }
    if remove_listed(dir, threads).is_ok() {
        return Ok(());
    }
    match fs_err::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(dir);
            fs_err::remove_dir_all(dir).map_err(io("remove", dir))
        }
    }
}

/// Lists the tree under `dir`, removes its files on `threads` threads, then its
/// directories; the first failure stops it (the caller falls back).
fn remove_listed(dir: &Path, threads: NonZeroUsize) -> std::io::Result<()> {
    // Each directory, parents before children, with the names of the non-directories in it.
    let mut listed: Vec<(PathBuf, Vec<std::ffi::OsString>)> = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut files = 0usize;
    while let Some(current) = pending.pop() {
        let mut names = Vec::new();
        for entry in fs_err::read_dir(&current)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                pending.push(entry.path());
            } else {
                names.push(entry.file_name());
            }
        }
        files += names.len();
        listed.push((current, names));
    }
    // Whole directories per thread, about the same number of files each.
    let share = files.div_ceil(threads.get()).max(1);
    let mut groups: Vec<&[(PathBuf, Vec<std::ffi::OsString>)]> = Vec::new();
    let (mut start, mut count) = (0, 0);
    for (i, (_, names)) in listed.iter().enumerate() {
        count += names.len();
        if count >= share {
            groups.push(&listed[start..=i]);
            (start, count) = (i + 1, 0);
        }
    }
    if start < listed.len() {
        groups.push(&listed[start..]);
    }
    // Each file by its name in its open directory, not by a path walked again each time.
    let unlink = |group: &[(PathBuf, Vec<std::ffi::OsString>)]| -> std::io::Result<()> {
        for (parent, names) in group {
            if names.is_empty() {
                continue;
            }
            let dir = open_dir(parent).map_err(std::io::Error::other)?;
            for name in names {
                nix::unistd::unlinkat(
                    &dir,
                    name.as_os_str(),
                    nix::unistd::UnlinkatFlags::NoRemoveDir,
                )?;
            }
        }
        Ok(())
    };
    if groups.len() <= 1 {
        groups.iter().try_for_each(|g| unlink(g))?;
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = groups
                .iter()
                .map(|group| scope.spawn(|| unlink(group)))
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a removing thread panicked")))
            })
        })?;
    }
    for (path, _) in listed.iter().rev() {
        fs_err::remove_dir(path)?;
    }
    Ok(())
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
        remove(&dest, NonZeroUsize::MIN).expect("remove");
        assert!(!dest.exists());
    }

    #[test]
    fn removal_takes_the_whole_tree_and_never_follows_a_link() {
        use std::os::unix::fs::PermissionsExt as _;
        let outside = tempfile::tempdir().expect("tempdir");
        fs_err::write(outside.path().join("kept.txt"), b"not the sandbox's").expect("write");
        for threads in [1, 2, 3] {
            let root = tempfile::tempdir().expect("tempdir");
            let dest = root.path().join("sandbox");
            for d in 0..5 {
                let dir = dest.join(format!("d{d}/nested"));
                fs_err::create_dir_all(&dir).expect("mkdir");
                for f in 0..40 {
                    fs_err::write(dir.join(format!("f{f}")), b"x").expect("write");
                    fs_err::write(dest.join(format!("d{d}/g{f}")), b"y").expect("write");
                }
            }
            fs_err::create_dir_all(dest.join("empty/deeper")).expect("mkdir");
            // Links to a directory and to a file outside: removed, their targets kept.
            fs_err::os::unix::fs::symlink(outside.path(), dest.join("d0/to-dir")).expect("link");
            fs_err::os::unix::fs::symlink(outside.path().join("kept.txt"), dest.join("to-file"))
                .expect("link");
            // A directory a tool left read-only (as root, writable anyway).
            fs_err::set_permissions(dest.join("d1"), std::fs::Permissions::from_mode(0o555))
                .expect("chmod");
            remove(&dest, NonZeroUsize::new(threads).expect("non-zero")).expect("remove");
            assert!(!dest.exists(), "{threads} threads");
            assert_eq!(
                fs_err::read(outside.path().join("kept.txt")).expect("kept"),
                b"not the sandbox's"
            );
            // Absent is removed already; a file is removed as one.
            remove(&dest, NonZeroUsize::MIN).expect("absent");
            fs_err::write(&dest, b"file").expect("write");
            remove(&dest, NonZeroUsize::MIN).expect("file");
            assert!(!dest.exists());
        }
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
