//! Reading what a job wrote, as evidence.
//!
//! A job's report (or an attachment it names) is evidence only as the file the job itself
//! wrote inside a directory of the run: [`read_beneath`] opens it relative to that
//! directory, one path component at a time, never following a symbolic link (neither the
//! file nor any directory on its path may be a link: a link to a report elsewhere, to
//! `/etc/passwd` or to `/dev/zero` is refused, not read), never blocking (a FIFO is refused
//! without waiting for a writer), only when it is a regular file (checked by `fstatat`
//! before opening, so a device is never opened, and again on the open descriptor, so a
//! swap in between is seen), and reads at most `limit` bytes, counted while reading (a
//! file's size is never trusted: it can grow while it is read). Its modification time comes
//! back with the bytes, so the caller can refuse a file older than the run.

use std::ffi::OsStr;
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Component, Path};
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

/// A file read by [`read_beneath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Its bytes (at most the limit).
    pub bytes: Vec<u8>,
    /// When it was last modified.
    pub modified: SystemTime,
}

/// Why a file is not evidence. Each message reads after "failed to read the report:"-style
/// prefixes as a lowercase fragment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// Nothing is there.
    #[error("there is no such file")]
    Missing,
    /// The path is absolute, empty or climbs out with `..`.
    #[error("the path leaves the directory it is read from")]
    Outside,
    /// A component of the path (the file itself or a directory on the way) is a symbolic
    /// link.
    #[error("`{component}` is a symbolic link, which is never followed")]
    Symlink {
        /// The component, relative to the directory read from.
        component: String,
    },
    /// The file is not a regular file.
    #[error("it is a {kind}, not a regular file")]
    NotRegular {
        /// What it is: `directory`, `FIFO`, `device`, `socket`.
        kind: &'static str,
    },
    /// The file holds more than the limit.
    #[error("it holds more than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// Another I/O error.
    #[error("{action}: {errno}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The error.
        errno: Errno,
    },
}

/// Reads `relative` (a relative path of normal components) under `dir` as evidence: see the
/// module documentation for every rule.
pub fn read_beneath(dir: &Path, relative: &Path, limit: usize) -> Result<Written, EvidenceError> {
    let io = |action| move |errno| EvidenceError::Io { action, errno };
    let Beneath {
        parent: current,
        name,
        walked,
    } = open_parent(dir, relative)?;
    let before = stat_at(&current, name)?;
    check_regular(&before, || {
        if walked.is_empty() {
            name.to_string_lossy().into_owned()
        } else {
            format!("{walked}/{}", name.to_string_lossy())
        }
    })?;
    let file = openat(
        &current,
        name,
        OFlag::O_RDONLY
            | OFlag::O_NONBLOCK
            | OFlag::O_NOFOLLOW
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ELOOP => EvidenceError::Symlink {
            component: name.to_string_lossy().into_owned(),
        },
        Errno::ENOENT => EvidenceError::Missing,
        e => EvidenceError::Io {
            action: "open it",
            errno: e,
        },
    })?;
    let after = fstat(&file).map_err(io("inspect it"))?;
    check_regular(&after, || name.to_string_lossy().into_owned())?;
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) {
        // Replaced between the check and the open: whatever it is now was not checked.
        return Err(EvidenceError::Io {
            action: "open it",
            errno: Errno::EAGAIN,
        });
    }
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match nix::unistd::read(file.as_fd(), &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if bytes.len() + n > limit {
                    return Err(EvidenceError::TooLarge { limit });
                }
                bytes.extend_from_slice(&buf[..n]);
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(io("read it")(e)),
        }
    }
    // The time of the last write, after the last byte was read.
    let last = fstat(&file).map_err(io("inspect it"))?;
    Ok(Written {
        bytes,
        modified: modified(&last),
    })
}

/// The directory holding the last component of a path, opened without following a link.
struct Beneath<'p> {
    parent: OwnedFd,
    name: &'p OsStr,
    /// The directories walked, relative to the starting directory (for messages).
    walked: String,
}

/// Opens the parent directory of `relative` under `dir`, one component at a time, refusing
/// a component that is a symbolic link (checked, then opened with `O_NOFOLLOW`).
fn open_parent<'p>(dir: &Path, relative: &'p Path) -> Result<Beneath<'p>, EvidenceError> {
    let mut components = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => components.push(name),
            Component::CurDir => {}
            _ => return Err(EvidenceError::Outside),
        }
    }
    let Some((name, parents)) = components.split_last() else {
        return Err(EvidenceError::Outside);
    };
    let mut current: OwnedFd = nix::fcntl::open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT | Errno::ENOTDIR => EvidenceError::Missing,
        e => EvidenceError::Io {
            action: "open the directory it is read from",
            errno: e,
        },
    })?;
    let mut walked = String::new();
    for part in parents {
        if !walked.is_empty() {
            walked.push('/');
        }
        walked.push_str(&part.to_string_lossy());
        let stat = stat_at(&current, part)?;
        match kind(&stat) {
            Some(SFlag::S_IFDIR) => {}
            Some(SFlag::S_IFLNK) => {
                return Err(EvidenceError::Symlink {
                    component: walked.clone(),
                });
            }
            _ => return Err(EvidenceError::Missing),
        }
        current = openat(
            &current,
            *part,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            // Replaced by a link or a file since the check above.
            Errno::ELOOP | Errno::ENOTDIR => EvidenceError::Symlink {
                component: walked.clone(),
            },
            Errno::ENOENT => EvidenceError::Missing,
            e => EvidenceError::Io {
                action: "open a directory on the path",
                errno: e,
            },
        })?;
    }
    Ok(Beneath {
        parent: current,
        name,
        walked,
    })
}

/// Removes whatever `relative` names under `dir` (a file, a link — never what it points to
/// — a FIFO), so that nothing left there before a command runs can be read as what it
/// wrote. A directory on the path that is a link is not followed (nothing is removed: a
/// report behind it could not be read either); a directory at `relative` is left alone.
/// Absent is removed.
pub fn remove_beneath(dir: &Path, relative: &Path) -> Result<(), EvidenceError> {
    let Beneath { parent, name, .. } = match open_parent(dir, relative) {
        Ok(b) => b,
        Err(EvidenceError::Missing | EvidenceError::Symlink { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    match nix::unistd::unlinkat(&parent, name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(Errno::EISDIR) => Err(EvidenceError::NotRegular { kind: "directory" }),
        Err(e) => Err(EvidenceError::Io {
            action: "remove it",
            errno: e,
        }),
    }
}

fn stat_at(dir: &OwnedFd, name: &OsStr) -> Result<FileStat, EvidenceError> {
    fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(|e| match e {
        Errno::ENOENT | Errno::ENOTDIR => EvidenceError::Missing,
        e => EvidenceError::Io {
            action: "inspect a component of the path",
            errno: e,
        },
    })
}

fn kind(stat: &FileStat) -> Option<SFlag> {
    let bits = stat.st_mode & SFlag::S_IFMT.bits();
    [
        SFlag::S_IFREG,
        SFlag::S_IFDIR,
        SFlag::S_IFLNK,
        SFlag::S_IFIFO,
        SFlag::S_IFCHR,
        SFlag::S_IFBLK,
        SFlag::S_IFSOCK,
    ]
    .into_iter()
    .find(|k| k.bits() == bits)
}

fn check_regular(stat: &FileStat, shown: impl FnOnce() -> String) -> Result<(), EvidenceError> {
    let kind = match kind(stat) {
        Some(SFlag::S_IFREG) => return Ok(()),
        Some(SFlag::S_IFLNK) => {
            return Err(EvidenceError::Symlink { component: shown() });
        }
        Some(SFlag::S_IFDIR) => "directory",
        Some(SFlag::S_IFIFO) => "FIFO",
        Some(SFlag::S_IFCHR | SFlag::S_IFBLK) => "device",
        Some(SFlag::S_IFSOCK) => "socket",
        _ => "special file",
    };
    Err(EvidenceError::NotRegular { kind })
}

fn modified(stat: &FileStat) -> SystemTime {
    let secs = stat.st_mtime;
    let nanos = u32::try_from(stat.st_mtime_nsec).unwrap_or(0);
    match u64::try_from(secs) {
        Ok(secs) => SystemTime::UNIX_EPOCH + Duration::new(secs, nanos),
        // Before the epoch: as old as it gets.
        Err(_) => SystemTime::UNIX_EPOCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1024;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().expect("tempdir")
    }

    #[test]
    fn a_regular_file_is_read_with_its_time() {
        let d = dir();
        fs_err::create_dir_all(d.path().join("out/sub")).expect("mkdir");
        fs_err::write(d.path().join("out/sub/r.json"), b"{}").expect("write");
        let before = SystemTime::now() - Duration::from_secs(5);
        let w = read_beneath(d.path(), Path::new("out/sub/r.json"), LIMIT).expect("read");
        assert_eq!(w.bytes, b"{}");
        assert!(w.modified > before, "{:?}", w.modified);
        let w = read_beneath(d.path(), Path::new("./out/sub/r.json"), LIMIT).expect("read");
        assert_eq!(w.bytes, b"{}");
    }

    #[test]
    fn a_link_anywhere_on_the_path_is_refused() {
        let d = dir();
        let elsewhere = dir();
        fs_err::write(elsewhere.path().join("good.tap"), b"ok 1\n").expect("write");
        fs_err::create_dir_all(d.path().join("real")).expect("mkdir");
        // The file is a link (to a file outside, to one inside, to a device).
        fs_err::os::unix::fs::symlink(elsewhere.path().join("good.tap"), d.path().join("out.rep"))
            .expect("link");
        fs_err::write(d.path().join("real/inside.tap"), b"ok 1\n").expect("write");
        fs_err::os::unix::fs::symlink("real/inside.tap", d.path().join("in.rep")).expect("link");
        fs_err::os::unix::fs::symlink("/dev/zero", d.path().join("zero.rep")).expect("link");
        // A directory on the path is a link.
        fs_err::os::unix::fs::symlink(elsewhere.path(), d.path().join("dir")).expect("link");
        for (path, component) in [
            ("out.rep", "out.rep"),
            ("in.rep", "in.rep"),
            ("zero.rep", "zero.rep"),
            ("dir/good.tap", "dir"),
        ] {
            assert_eq!(
                read_beneath(d.path(), Path::new(path), LIMIT),
                Err(EvidenceError::Symlink {
                    component: component.to_owned()
                }),
                "{path}"
            );
        }
    }

    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let d = dir();
        nix::unistd::mkfifo(&d.path().join("out.rep"), Mode::from_bits_truncate(0o644))
            .expect("mkfifo");
        assert_eq!(
            read_beneath(d.path(), Path::new("out.rep"), LIMIT),
            Err(EvidenceError::NotRegular { kind: "FIFO" })
        );
    }

    #[test]
    fn devices_directories_and_sockets_are_refused() {
        let d = dir();
        fs_err::create_dir_all(d.path().join("a-dir")).expect("mkdir");
        assert_eq!(
            read_beneath(d.path(), Path::new("a-dir"), LIMIT),
            Err(EvidenceError::NotRegular { kind: "directory" })
        );
        let _socket = std::os::unix::net::UnixListener::bind(d.path().join("sock")).expect("bind");
        assert_eq!(
            read_beneath(d.path(), Path::new("sock"), LIMIT),
            Err(EvidenceError::NotRegular { kind: "socket" })
        );
        // A device node made where the job writes (possible as root without namespaces).
        let made = nix::sys::stat::mknod(
            &d.path().join("zero"),
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            nix::sys::stat::makedev(1, 5),
        );
        if made.is_ok() {
            assert_eq!(
                read_beneath(d.path(), Path::new("zero"), LIMIT),
                Err(EvidenceError::NotRegular { kind: "device" })
            );
        } else {
            assert_eq!(
                made,
                Err(Errno::EPERM),
                "only a lack of privilege stops mknod"
            );
        }
        // /dev itself, read from: a device is refused by its kind, not by its size.
        assert_eq!(
            read_beneath(Path::new("/dev"), Path::new("zero"), LIMIT),
            Err(EvidenceError::NotRegular { kind: "device" })
        );
    }

    #[test]
    fn removal_never_follows_a_link() {
        let d = dir();
        let elsewhere = dir();
        fs_err::write(elsewhere.path().join("r.json"), b"kept").expect("write");
        fs_err::os::unix::fs::symlink(elsewhere.path(), d.path().join("out")).expect("link");
        fs_err::os::unix::fs::symlink(elsewhere.path().join("r.json"), d.path().join("r.json"))
            .expect("link");
        fs_err::create_dir_all(d.path().join("real")).expect("mkdir");
        fs_err::write(d.path().join("real/r.json"), b"stale").expect("write");
        nix::unistd::mkfifo(&d.path().join("fifo"), Mode::from_bits_truncate(0o644))
            .expect("mkfifo");
        remove_beneath(d.path(), Path::new("out/r.json")).expect("nothing removed");
        remove_beneath(d.path(), Path::new("r.json")).expect("the link removed");
        remove_beneath(d.path(), Path::new("real/r.json")).expect("the file removed");
        remove_beneath(d.path(), Path::new("fifo")).expect("the FIFO removed");
        remove_beneath(d.path(), Path::new("absent/r.json")).expect("absent");
        assert_eq!(
            fs_err::read(elsewhere.path().join("r.json")).expect("kept"),
            b"kept"
        );
        assert!(fs_err::symlink_metadata(d.path().join("r.json")).is_err());
        assert!(fs_err::symlink_metadata(d.path().join("real/r.json")).is_err());
        assert!(fs_err::symlink_metadata(d.path().join("fifo")).is_err());
        assert_eq!(
            remove_beneath(d.path(), Path::new("real")),
            Err(EvidenceError::NotRegular { kind: "directory" })
        );
        assert_eq!(
            remove_beneath(d.path(), Path::new("../r.json")),
            Err(EvidenceError::Outside)
        );
    }

    #[test]
    fn the_bound_is_counted_while_reading() {
        let d = dir();
        fs_err::write(d.path().join("big"), vec![b'x'; LIMIT + 1]).expect("write");
        fs_err::write(d.path().join("fits"), vec![b'x'; LIMIT]).expect("write");
        assert_eq!(
            read_beneath(d.path(), Path::new("big"), LIMIT),
            Err(EvidenceError::TooLarge { limit: LIMIT })
        );
        assert_eq!(
            read_beneath(d.path(), Path::new("fits"), LIMIT).map(|w| w.bytes.len()),
            Ok(LIMIT)
        );
    }

    #[test]
    fn paths_that_leave_and_missing_files() {
        let d = dir();
        for path in ["../x", "/etc/passwd", "", ".", "a/../b"] {
            assert_eq!(
                read_beneath(d.path(), Path::new(path), LIMIT),
                Err(EvidenceError::Outside),
                "{path}"
            );
        }
        assert_eq!(
            read_beneath(d.path(), Path::new("nope/r.json"), LIMIT),
            Err(EvidenceError::Missing)
        );
        fs_err::write(d.path().join("file"), b"x").expect("write");
        assert_eq!(
            read_beneath(d.path(), Path::new("file/r.json"), LIMIT),
            Err(EvidenceError::Missing)
        );
        assert_eq!(
            read_beneath(&d.path().join("absent"), Path::new("r.json"), LIMIT),
            Err(EvidenceError::Missing)
        );
    }
}
