//! The crate's only unsafe code: `fork`, `_exit`, resetting signal dispositions, marking
//! inherited descriptors close-on-exec and bringing up the loopback interface.
//!
//! Each function is a thin wrapper; its soundness argument is written on its block.
#![expect(
    unsafe_code,
    reason = "fork, _exit, sigaction, close_range and the interface ioctls have no safe wrapper"
)]

use std::marker::PhantomData;
use std::os::fd::AsRawFd;

use nix::errno::Errno;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
use nix::unistd::ForkResult;

/// Proof that the calling process had exactly one thread when it was made.
///
/// Only [`SingleThreaded::check`] makes one, from `/proc/self/status`. The init never starts
/// a thread, and the value is neither `Send` nor `Sync`, so it cannot reach another thread.
/// Processes forked from a single-threaded process are single-threaded too, so forked
/// children may keep using the parent's proof.
pub(crate) struct SingleThreaded {
    _not_send: PhantomData<*const ()>,
}

impl SingleThreaded {
    /// Checks that this process has one thread.
    pub(crate) fn check() -> Result<Self, String> {
        let status = fs_err::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
        let threads = status
            .lines()
            .find_map(|line| line.strip_prefix("Threads:"))
            .map(str::trim);
        match threads {
            Some("1") => Ok(SingleThreaded {
                _not_send: PhantomData,
            }),
            Some(n) => Err(format!(
                "the init has {n} threads; `init_main` must run before any thread is started"
            )),
            None => Err("`/proc/self/status` has no `Threads:` line".to_owned()),
        }
    }
}

/// `fork(2)`.
pub(crate) fn fork(_proof: &SingleThreaded) -> nix::Result<ForkResult> {
    // SAFETY: `fork` is unsafe because in a multi-threaded process the child may only call
    // async-signal-safe functions: another thread may hold a lock (the allocator's, stdio's)
    // that would never be released in the child. `SingleThreaded` proves this process has a
    // single thread, so no other thread exists to hold a lock, and the child may run ordinary
    // Rust code.
    unsafe { nix::unistd::fork() }
}

/// `_exit(2)`: ends the process at once, without running exit handlers or flushing stdio.
///
/// Forked children use it so that buffers copied from the init (its stdout, which carries
/// the control protocol) are never written twice.
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointer and does not return; it touches no Rust-owned state.
    unsafe { libc::_exit(code) }
}

/// Restores the default disposition of every signal, so that a command does not inherit
/// an ignored `SIGPIPE` (Rust ignores it) or any other ignored signal.
pub(crate) fn reset_signal_dispositions() {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for signal in Signal::iterator() {
        if matches!(signal, Signal::SIGKILL | Signal::SIGSTOP) {
            continue;
        }
        // SAFETY: `sigaction` is unsafe because a Rust handler could run at any point and
        // observe inconsistent state. `SIG_DFL` installs no handler at all, and the struct
        // passed is only read during the call.
        let _ignored = unsafe { sigaction(signal, &default) };
    }
}

/// Marks every descriptor from 3 up close-on-exec, so that nothing the init inherited from
/// its parent leaks into the commands it runs.
pub(crate) fn mark_inherited_fds_cloexec() -> Result<(), Errno> {
    // SAFETY: with `CLOSE_RANGE_CLOEXEC`, `close_range` closes nothing; it only sets the
    // close-on-exec flag, so every `OwnedFd`/`File` stays valid. It takes no pointer.
    let rc = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as i32) };
    Errno::result(rc).map(drop)
}

/// Brings the loopback interface `lo` of the current network namespace up.
pub(crate) fn bring_loopback_up() -> Result<(), Errno> {
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: `ifreq` is a plain C struct (a name array and a union of integers, addresses
    // and pointers), for which all-zero bytes are a valid value (null pointers, zero ints).
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads `ifr_name` and writes `ifr_flags` inside `request`, which we
    // own and which outlives the call; the socket is a valid open descriptor.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) };
    Errno::result(rc)?;
    // SAFETY: the union field `ifru_flags` was just written by SIOCGIFFLAGS, and every bit
    // pattern is a valid `c_short`.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    request.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: SIOCSIFFLAGS only reads `ifr_name` and `ifr_flags` from `request`, which we own
    // and which outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &request) };
    Errno::result(rc).map(drop)
}
