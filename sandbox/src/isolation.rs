//! Creating a run's namespaces, in the init.
//!
//! The init moves itself into a new **mount namespace** (and, when it is not root or root
//! cannot, a new **user namespace** mapping only its own uid and gid), whose propagation is
//! made private: what its jobs mount never reaches the host. Each job then gets a mount
//! namespace of its own, a copy of the init's, in which its world is built (`world.rs`).
//!
//! The init itself stays in the host's **network namespace**. The run's private network is
//! created by a short-lived child that unshares a network namespace and brings `lo` up; the
//! init keeps that namespace alive through a descriptor, and jobs with
//! [`crate::Network::Private`] (and probes) enter it with `setns` before they start. Jobs
//! with [`crate::Network::Host`] simply do not, which also works in a user namespace (where
//! entering the host's namespace again would be refused).
//!
//! PID namespaces are per job; see `child.rs`.

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

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
    let private_net = private_network(token)?;
    Ok(Namespaces {
        private_net,
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

/// Makes the directory jobs build their roots on (in the host's temporary directory; each
/// job mounts a `tmpfs` there in its own mount namespace, so the directory itself stays
/// empty). The init removes it when it exits.
pub(crate) fn staging_dir() -> Result<PathBuf, String> {
    nix::unistd::mkdtemp("/tmp/.proofgraph-world-XXXXXX").map_err(|e| {
        format!(
            "make the directory jobs' roots are built on: {}",
            describe(e)
        )
    })
}
