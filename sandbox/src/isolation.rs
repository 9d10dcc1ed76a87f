//! Creating a run's namespaces, in the init.
//!
//! The init moves itself into a new **mount namespace** (and, when it is not root or root
//! cannot, a new **user namespace** mapping only its own uid and gid): propagation is made
//! private, the host's `/tmp` is kept open as a directory descriptor, and a fresh `tmpfs` is
//! mounted on `/tmp`. Every job inherits that mount namespace.
//!
//! The init itself stays in the host's **network namespace**. The run's private network is
//! created by a short-lived child that unshares a network namespace and brings `lo` up; the
//! init keeps that namespace alive through a descriptor, and jobs with
//! [`crate::Network::Private`] (and probes) enter it with `setns` before they start. Jobs
//! with [`crate::Network::Host`] simply do not, which also works in a user namespace (where
//! entering the host's namespace again would be refused).
//!
//! PID namespaces are per job; see `child.rs`.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::Signal;
use nix::sys::stat::Mode;
use nix::sys::wait::waitpid;
use nix::unistd::{ForkResult, geteuid, getgid, getpid, getppid, getuid, pipe2};

use crate::sys::{
    self, SingleThreaded, describe, detach_stdio, read_to_end_blocking, write_all_fd,
};

/// The namespaces of a run, held by the init.
#[derive(Debug)]
pub(crate) struct Namespaces {
    /// Keeps the run's private network namespace alive; jobs `setns` into it.
    pub(crate) private_net: OwnedFd,
    /// The host's `/tmp` (the directory under the private `tmpfs`), for paths under it.
    pub(crate) host_tmp: OwnedFd,
    /// Whether a user namespace was created.
    pub(crate) user_namespace: bool,
}

/// Creates the namespaces, or says why not. On error the process may be left half set up
/// (already in a new mount namespace); callers that want a clean fallback run
/// [`trial`] first.
pub(crate) fn setup(token: &SingleThreaded) -> Result<Namespaces, String> {
    let uid = getuid();
    let gid = getgid();
    let candidates: &[(CloneFlags, bool)] = if geteuid().is_root() {
        &[
            (CloneFlags::CLONE_NEWNS, false),
            (
                CloneFlags::CLONE_NEWNS.union(CloneFlags::CLONE_NEWUSER),
                true,
            ),
        ]
    } else {
        &[(
            CloneFlags::CLONE_NEWNS.union(CloneFlags::CLONE_NEWUSER),
            true,
        )]
    };
    let mut failures = Vec::new();
    let mut user_namespace = None;
    for (flags, with_user) in candidates {
        match unshare(*flags) {
            Ok(()) => {
                user_namespace = Some(*with_user);
                break;
            }
            Err(errno) => failures.push(format!(
                "unshare({}) failed: {}",
                flag_names(*flags),
                describe(errno)
            )),
        }
    }
    let Some(user_namespace) = user_namespace else {
        return Err(failures.join("; "));
    };
    if user_namespace {
        // Map only our own ids, to themselves: files keep their owner and the commands run
        // with the caller's uid (capabilities in the namespace are dropped at `exec`).
        write_proc("/proc/self/setgroups", "deny")?;
        write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
        write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))?;
    }
    // Setting a user namespace up may clear the parent-death signal; set it again.
    set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| format!("set the parent-death signal: {}", describe(e)))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("make mount propagation private: {}", describe(e)))?;
    let host_tmp = open(
        "/tmp",
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("open `/tmp`: {}", describe(e)))?;
    mount(
        Some("tmpfs"),
        "/tmp",
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=1777"),
    )
    .map_err(|e| format!("mount a private tmpfs on `/tmp`: {}", describe(e)))?;
    let private_net = private_network(token)?;
    Ok(Namespaces {
        private_net,
        host_tmp,
        user_namespace,
    })
}

/// Runs [`setup`] in a throwaway child and reports whether it would succeed, so that
/// [`crate::IsolationRequest::Auto`] can fall back cleanly instead of failing half-way.
pub(crate) fn trial(token: &SingleThreaded) -> Result<(), String> {
    let (read_end, write_end) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("create a pipe: {}", describe(e)))?;
    let parent = getpid();
    match sys::fork(token).map_err(|e| format!("fork a trial process: {}", describe(e)))? {
        ForkResult::Child => {
            drop(read_end);
            detach_stdio();
            if set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != parent {
                sys::exit_now(1);
            }
            let message = match setup(token) {
                Ok(_) => "ok".to_owned(),
                Err(reason) => reason,
            };
            let _ = write_all_fd(write_end.as_fd(), message.as_bytes());
            sys::exit_now(0);
        }
        ForkResult::Parent { child } => {
            drop(write_end);
            let message = read_to_end_blocking(read_end.as_fd(), 64 * 1024);
            let _ = waitpid(child, None);
            match String::from_utf8_lossy(&message).as_ref() {
                "ok" => Ok(()),
                "" => Err("the trial process died while creating namespaces".to_owned()),
                reason => Err(reason.to_owned()),
            }
        }
    }
}

/// Creates the run's network namespace in a child, brings `lo` up there, and returns a
/// descriptor that keeps it alive.
fn private_network(token: &SingleThreaded) -> Result<OwnedFd, String> {
    let (status_read, status_write) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("create a pipe: {}", describe(e)))?;
    let (hold_read, hold_write) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("create a pipe: {}", describe(e)))?;
    let parent = getpid();
    match sys::fork(token).map_err(|e| format!("fork the network creator: {}", describe(e)))? {
        ForkResult::Child => {
            drop(status_read);
            drop(hold_write);
            detach_stdio();
            if set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != parent {
                sys::exit_now(1);
            }
            let result = unshare(CloneFlags::CLONE_NEWNET)
                .map_err(|e| format!("unshare(CLONE_NEWNET) failed: {}", describe(e)))
                .and_then(|()| {
                    sys::bring_loopback_up()
                        .map_err(|e| format!("bring the loopback interface up: {}", describe(e)))
                });
            let message = match result {
                Ok(()) => "ok".to_owned(),
                Err(reason) => reason,
            };
            let _ = write_all_fd(status_write.as_fd(), message.as_bytes());
            drop(status_write);
            // Stay in the namespace until the init has opened it (it closes `hold`).
            let _ = read_to_end_blocking(hold_read.as_fd(), 1);
            sys::exit_now(0);
        }
        ForkResult::Parent { child } => {
            drop(status_write);
            drop(hold_read);
            let message = read_to_end_blocking(status_read.as_fd(), 64 * 1024);
            let opened = match String::from_utf8_lossy(&message).as_ref() {
                "ok" => open(
                    format!("/proc/{child}/ns/net").as_str(),
                    OFlag::O_RDONLY | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| format!("open the private network namespace: {}", describe(e))),
                "" => Err("the network creator died".to_owned()),
                reason => Err(reason.to_owned()),
            };
            drop(hold_write);
            let _ = waitpid(child, None);
            opened
        }
    }
}

/// Where a host path is found from inside the run's mount namespace, where `/tmp` is
/// private.
pub(crate) enum HostPath {
    /// Not under `/tmp`: the same path works.
    Direct,
    /// Under `/tmp`: this path relative to the host's `/tmp` descriptor.
    UnderTmp(PathBuf),
}

/// Classifies an absolute, normal path (no `..`).
pub(crate) fn host_path(path: &Path) -> HostPath {
    match path.strip_prefix("/tmp") {
        Ok(rest) if !rest.as_os_str().is_empty() => HostPath::UnderTmp(rest.to_path_buf()),
        _ => HostPath::Direct,
    }
}

/// The top-level entry under `/tmp` of a path, if the path is strictly under `/tmp`.
pub(crate) fn tmp_top_entry(path: &Path) -> Option<OsString> {
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return None;
    }
    match (components.next(), components.next()) {
        (Some(Component::Normal(tmp)), Some(Component::Normal(top))) if tmp == "tmp" => {
            Some(top.to_os_string())
        }
        _ => None,
    }
}

/// Makes the host's `/tmp/<entry>` visible at the same path in the private `/tmp`, with a
/// recursive bind mount.
pub(crate) fn bind_host_tmp_entry(host_tmp: &OwnedFd, entry: &OsString) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let source = PathBuf::from(format!("/proc/self/fd/{}", host_tmp.as_raw_fd())).join(entry);
    let target = Path::new("/tmp").join(entry);
    match nix::unistd::mkdir(&target, Mode::from_bits_truncate(0o700)) {
        Ok(()) | Err(Errno::EEXIST) => {}
        Err(e) => {
            return Err(format!(
                "create `{}` in the private /tmp: {}",
                target.display(),
                describe(e)
            ));
        }
    }
    mount(
        Some(&source),
        &target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| {
        format!(
            "bind the host's `{}` into the private /tmp: {}",
            target.display(),
            describe(e)
        )
    })
}

fn write_proc(path: &str, content: &str) -> Result<(), String> {
    fs_err::write(path, content).map_err(|e| e.to_string())
}

fn flag_names(flags: CloneFlags) -> String {
    let mut names = Vec::new();
    if flags.contains(CloneFlags::CLONE_NEWUSER) {
        names.push("CLONE_NEWUSER");
    }
    if flags.contains(CloneFlags::CLONE_NEWNS) {
        names.push("CLONE_NEWNS");
    }
    names.join(" | ")
}

/// `EPERM: Operation not permitted`.
/// Covers `dir` with an empty, read-only `tmpfs` in the run's mount namespace, so its jobs
/// can neither read nor change what is there. A directory that does not exist is skipped.
pub(crate) fn cover(dir: &Path) -> Result<(), String> {
    match nix::sys::stat::lstat(dir) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {}
        Ok(_) => return Err(format!("hide `{}`: it is not a directory", dir.display())),
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(format!("hide `{}`: {}", dir.display(), describe(e))),
    }
    mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("mode=0,size=4k"),
    )
    .map_err(|e| {
        format!(
            "hide `{}` from the run's jobs: {}",
            dir.display(),
            describe(e)
        )
    })
}

/// An overlay to mount in the run's mount namespace (see [`crate::OverlaySpec`]).
pub(crate) struct Overlay<'a> {
    pub(crate) target: &'a Path,
    pub(crate) layers: &'a [PathBuf],
    pub(crate) scratch: &'a Path,
    pub(crate) user_namespace: bool,
}

/// Mounts `overlay`: the layers (the first on top) at the target, under a writable layer in
/// the scratch directory. In a user namespace overlayfs keeps its metadata in `user.*`
/// extended attributes (`userxattr`), the only ones it may write there.
pub(crate) fn overlay(overlay: &Overlay<'_>) -> Result<(), String> {
    if overlay.layers.is_empty() {
        return Err("an overlay needs at least one layer".to_owned());
    }
    let option = |path: &Path| -> Result<String, String> {
        // Overlayfs splits its options at `,` and its layers at `:`; such a path cannot be
        // named there without escapes the kernel does not apply everywhere.
        match path.to_str() {
            Some(text) if !text.contains([',', ':', '\\', '\n']) => Ok(text.to_owned()),
            _ => Err(format!(
                "`{}` cannot be an overlay layer: its path is not UTF-8 or holds `,`, `:` or `\\`",
                path.display()
            )),
        }
    };
    let layers = overlay
        .layers
        .iter()
        .map(|p| option(p))
        .collect::<Result<Vec<_>, _>>()?;
    let upper = overlay.scratch.join("upper");
    let work = overlay.scratch.join("work");
    for dir in [&upper, &work] {
        match nix::unistd::mkdir(dir, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(format!("create `{}`: {}", dir.display(), describe(e))),
        }
    }
    let mut options = format!(
        "lowerdir={},upperdir={},workdir={}",
        layers.join(":"),
        option(&upper)?,
        option(&work)?
    );
    if overlay.user_namespace {
        options.push_str(",userxattr");
    }
    mount(
        Some("overlay"),
        overlay.target,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .map_err(|e| {
        format!(
            "mount an overlay on `{}`: {}",
            overlay.target.display(),
            describe(e)
        )
    })
}

/// Binds `dir` read-only over itself, keeping the flags of the mount it lies on (a
/// remount that would drop `nosuid` or `nodev` is refused in a user namespace). A
/// directory that does not exist is skipped.
pub(crate) fn read_only(dir: &Path) -> Result<(), String> {
    use nix::sys::statvfs::{FsFlags, statvfs};
    match nix::sys::stat::lstat(dir) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => {}
        Ok(_) => return Err(format!("`{}` is not a directory", dir.display())),
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => {
            return Err(format!(
                "make `{}` read-only: {}",
                dir.display(),
                describe(e)
            ));
        }
    }
    let fail =
        |what: &str, e: Errno| format!("{what} `{}` read-only: {}", dir.display(), describe(e));
    let kept = statvfs(dir).map_err(|e| fail("make", e))?.flags();
    mount(
        Some(dir),
        dir,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| fail("bind", e))?;
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (has, flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(has) {
            flags |= flag;
        }
    }
    mount(None::<&str>, dir, None::<&str>, flags, None::<&str>).map_err(|e| fail("remount", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_tmp_are_found_through_the_host_tmp() {
        assert!(matches!(host_path(Path::new("/tmp")), HostPath::Direct));
        assert!(matches!(host_path(Path::new("/tmpx/a")), HostPath::Direct));
        assert!(matches!(
            host_path(Path::new("/tmp/a/b.log")),
            HostPath::UnderTmp(p) if p == Path::new("a/b.log")
        ));
        assert_eq!(
            tmp_top_entry(Path::new("/tmp/.tmpX/repo")),
            Some(OsString::from(".tmpX"))
        );
        assert_eq!(tmp_top_entry(Path::new("/tmp")), None);
        assert_eq!(tmp_top_entry(Path::new("/var/tmp/x")), None);
    }
}
