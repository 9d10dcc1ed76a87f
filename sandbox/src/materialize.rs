//! Materialising a sandbox: copying exactly the given files of a repository
//! into a fresh directory, in parallel, checking each file's content as it is
//! copied.
//!
//! The caller decides *which* files (the tracked files for a worktree
//! sandbox; the working tree minus ignored and regenerable paths for a copy
//! sandbox) and what each must hold ([`Verify`]); this module copies them
//! faithfully — regular files with their content and modification time,
//! executables with their execute bits, symlinks verbatim (the link, not what it
//! points to) — and hands every byte it writes to the caller's check in the same
//! pass (read, check, write: the bytes in the sandbox are the bytes checked). A
//! file whose content is not the expected one (edited since the caller's snapshot,
//! even with its size and time kept) fails the whole sandbox
//! ([`SandboxError::Changed`]). Nothing is hard-linked: a command writing into
//! the sandbox can never change the working tree.

use std::num::NonZeroUsize;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
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

/// Checks, while it is copied, that each file holds what the caller expects.
pub trait Verify: Sync {
    /// The running check of one file's content.
    type Check: Check;
    /// Starts checking entry `index` (of the entries given to [`materialize`]), whose
    /// content is `len` bytes (a link's content is its target).
    fn start(&self, index: usize, len: u64) -> Self::Check;
}

/// The running check of one file's content.
pub trait Check {
    /// The next bytes of the content.
    fn update(&mut self, bytes: &[u8]);
    /// Whether the bytes given, and nothing else, are the expected content.
    fn matches(self) -> bool;
}

/// Expects nothing: every content is accepted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unchecked;

impl Verify for Unchecked {
    type Check = Unchecked;
    fn start(&self, _index: usize, _len: u64) -> Unchecked {
        Unchecked
    }
}

impl Check for Unchecked {
    fn update(&mut self, _bytes: &[u8]) {}
    fn matches(self) -> bool {
        true
    }
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
/// empty), using up to `threads` threads, each file checked by `verify` as it is
/// copied. Entries that are no longer what `verify` expects — another content, or
/// another kind of file — fail it with [`SandboxError::Changed`] naming them.
pub fn materialize<V: Verify>(
    source: &Path,
    dest: &Path,
    entries: &[Entry<'_>],
    threads: NonZeroUsize,
    verify: &V,
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
    // One contiguous run of (sorted) entries per thread, so each keeps its directories
    // open across consecutive files; a panic fails the sandbox, never passes it.
    let chunk = entries.len().div_ceil(threads.get()).max(1);
    let results: Vec<Result<Copied, SandboxError>> = in_pool(threads, || {
        use rayon::prelude::*;
        entries
            .par_chunks(chunk)
            .enumerate()
            .map(|(i, part)| copy_all(source, dest, part, i * chunk, verify))
            .collect()
    })
    .unwrap_or_else(|| vec![Err(SandboxError::Panicked)]);
    let mut total = Materialized::default();
    let mut changed = Vec::new();
    for r in results {
        let c = r?;
        total.files += c.done.files;
        total.bytes += c.done.bytes;
        changed.extend(c.changed);
    }
    if changed.is_empty() {
        Ok(total)
    } else {
        changed.sort();
        Err(SandboxError::Changed { paths: changed })
    }
}

/// What one thread copied, and the entries that were not what was expected.
struct Copied {
    done: Materialized,
    changed: Vec<String>,
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

fn copy_all<V: Verify>(
    source: &Path,
    dest: &Path,
    entries: &[Entry<'_>],
    first: usize,
    verify: &V,
) -> Result<Copied, SandboxError> {
    let mut done = Materialized::default();
    let mut changed = Vec::new();
    let mut open: Option<OpenDirs> = None;
    let mut buf = vec![0u8; 256 * 1024];
    for (offset, entry) in entries.iter().enumerate() {
        let index = first + offset;
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
        let matched = match entry.kind {
            FileKind::Symlink => {
                let target = match nix::fcntl::readlinkat(&dirs.source, name) {
                    Ok(target) => target,
                    // No longer a link (or gone): not what was snapshotted.
                    Err(Errno::EINVAL | Errno::ENOENT) => {
                        changed.push(entry.path.to_owned());
                        open = Some(dirs);
                        continue;
                    }
                    Err(e) => return Err(failed("read the link", source, e.into())),
                };
                let bytes = target.as_os_str().as_encoded_bytes();
                let mut check = verify.start(index, bytes.len() as u64);
                check.update(bytes);
                nix::unistd::symlinkat(target.as_os_str(), &dirs.dest, name)
                    .map_err(|e| failed("create the link", dest, e.into()))?;
                check.matches()
            }
            FileKind::File | FileKind::Executable => {
                let mode = Mode::from_bits_truncate(if entry.kind == FileKind::Executable {
                    0o755
                } else {
                    0o644
                });
                // Never through a link, never blocking on a FIFO put where a file was.
                let from = match nix::fcntl::openat(
                    &dirs.source,
                    name,
                    OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => fd,
                    Err(Errno::ELOOP | Errno::ENOENT | Errno::ENXIO) => {
                        changed.push(entry.path.to_owned());
                        open = Some(dirs);
                        continue;
                    }
                    Err(e) => return Err(failed("copy", source, e.into())),
                };
                let stat = nix::sys::stat::fstat(&from)
                    .map_err(|e| failed("inspect", source, e.into()))?;
                if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
                    changed.push(entry.path.to_owned());
                    open = Some(dirs);
                    continue;
                }
                let to = nix::fcntl::openat(
                    &dirs.dest,
                    name,
                    OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_CLOEXEC,
                    mode,
                )
                .map_err(|e| failed("create", dest, e.into()))?;
                let mut check = verify.start(index, u64::try_from(stat.st_size).unwrap_or(0));
                done.bytes += copy_checked(&from, &to, &mut buf, &mut check)
                    .map_err(|e| failed("copy", source, e))?;
                // The working tree's modification time, as `cp -p` keeps it: a file the
                // sandbox was made with never looks like one a command wrote in it.
                let times = [
                    nix::sys::time::TimeSpec::new(stat.st_atime, stat.st_atime_nsec),
                    nix::sys::time::TimeSpec::new(stat.st_mtime, stat.st_mtime_nsec),
                ];
                nix::sys::stat::futimens(&to, &times[0], &times[1])
                    .map_err(|e| failed("set the times of", dest, e.into()))?;
                // Exactly 0644 or 0755, whatever the umask took from the mode at creation.
                nix::sys::stat::fchmod(&to, mode)
                    .map_err(|e| failed("set permissions of", dest, e.into()))?;
                check.matches()
            }
        };
        if !matched {
            changed.push(entry.path.to_owned());
        }
        open = Some(dirs);
        done.files += 1;
    }
    Ok(Copied { done, changed })
}

/// Copies a file's whole content, handing every byte to `check` on its way: what is
/// checked is exactly what is written.
fn copy_checked(
    from: &OwnedFd,
    to: &OwnedFd,
    buf: &mut [u8],
    check: &mut impl Check,
) -> std::io::Result<u64> {
    let mut copied: u64 = 0;
    loop {
        let n = match nix::unistd::read(from, buf) {
            Ok(0) => return Ok(copied),
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        check.update(&buf[..n]);
        let mut written = &buf[..n];
        while !written.is_empty() {
            match nix::unistd::write(to, written) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(w) => written = &written[w..],
                Err(Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        copied += n as u64;
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
        in_pool(threads, || {
            use rayon::prelude::*;
            groups.par_iter().try_for_each(|group| unlink(group))
        })
        .unwrap_or_else(|| Err(std::io::Error::other("a removing thread panicked")))?;
    }
    for (path, _) in listed.iter().rev() {
        fs_err::remove_dir(path)?;
    }
    Ok(())
}

/// `work` on a rayon pool of `threads` threads (the caller's count, not the machine's);
/// `None` when it panicked. Without a pool (the system refused the threads) it runs here.
fn in_pool<R: Send>(threads: std::num::NonZeroUsize, work: impl FnOnce() -> R + Send) -> Option<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || match rayon::ThreadPoolBuilder::new()
            .num_threads(threads.get())
            .build()
        {
            Ok(pool) => pool.install(work),
            Err(_) => work(),
        },
    ))
    .ok()
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
            &Unchecked,
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

    /// Expects each entry's content to be exactly the given bytes.
    struct Exactly(Vec<Vec<u8>>);

    /// Expected bytes, bytes seen, announced length.
    struct Collect(Vec<u8>, Vec<u8>, u64);

    impl Verify for Exactly {
        type Check = Collect;
        fn start(&self, index: usize, len: u64) -> Collect {
            Collect(self.0[index].clone(), Vec::new(), len)
        }
    }

    impl Check for Collect {
        fn update(&mut self, bytes: &[u8]) {
            self.1.extend_from_slice(bytes);
        }
        fn matches(self) -> bool {
            self.1 == self.0 && self.2 == self.0.len() as u64
        }
    }

    #[test]
    fn every_byte_copied_is_checked_and_times_are_kept() {
        let src = tempfile::tempdir().expect("tempdir");
        let dst = tempfile::tempdir().expect("tempdir");
        fs_err::create_dir_all(src.path().join("d")).expect("mkdir");
        let big: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
        fs_err::write(src.path().join("d/big.bin"), &big).expect("write");
        fs_err::write(src.path().join("small.txt"), b"small").expect("write");
        fs_err::os::unix::fs::symlink("small.txt", src.path().join("link")).expect("link");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        fs_err::File::options()
            .write(true)
            .open(src.path().join("small.txt"))
            .expect("open")
            .set_modified(old)
            .expect("mtime");
        let entries = [
            Entry {
                path: "d/big.bin",
                kind: FileKind::File,
            },
            Entry {
                path: "link",
                kind: FileKind::Symlink,
            },
            Entry {
                path: "small.txt",
                kind: FileKind::File,
            },
        ];
        let expected = Exactly(vec![big.clone(), b"small.txt".to_vec(), b"small".to_vec()]);
        for threads in [1, 2, 3] {
            let dest = dst.path().join(format!("ok{threads}"));
            let m = materialize(
                src.path(),
                &dest,
                &entries,
                NonZeroUsize::new(threads).expect("non-zero"),
                &expected,
            )
            .expect("as expected");
            assert_eq!(m.files, 3);
            assert_eq!(fs_err::read(dest.join("d/big.bin")).expect("read"), big);
            let mtime = fs_err::metadata(dest.join("small.txt"))
                .expect("meta")
                .modified()
                .expect("mtime");
            assert_eq!(mtime, old, "the source's modification time is kept");
        }
        // Changed since the snapshot: another content (same size), another link target,
        // a file that became a link, a FIFO where the file was.
        let wrong = Exactly(vec![big.clone(), b"other.txt".to_vec(), b"SMALL".to_vec()]);
        let err = materialize(
            src.path(),
            &dst.path().join("wrong"),
            &entries,
            NonZeroUsize::new(2).expect("non-zero"),
            &wrong,
        )
        .expect_err("changed");
        match err {
            SandboxError::Changed { paths } => assert_eq!(paths, ["link", "small.txt"]),
            other => panic!("{other}"),
        }
        fs_err::remove_file(src.path().join("small.txt")).expect("rm");
        nix::unistd::mkfifo(
            &src.path().join("small.txt"),
            Mode::from_bits_truncate(0o644),
        )
        .expect("mkfifo");
        fs_err::remove_file(src.path().join("d/big.bin")).expect("rm");
        fs_err::os::unix::fs::symlink("../small.txt", src.path().join("d/big.bin")).expect("link");
        let err = materialize(
            src.path(),
            &dst.path().join("kinds"),
            &entries,
            NonZeroUsize::MIN,
            &expected,
        )
        .expect_err("changed kinds");
        assert_eq!(
            err.to_string(),
            "materialise a sandbox: 2 files changed since the snapshot (`d/big.bin`, `small.txt`)"
        );
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
            &Unchecked,
        )
        .expect_err("refused");
        assert!(matches!(err, SandboxError::UnsafePath { .. }));
    }
}
