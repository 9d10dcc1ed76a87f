//! Whether a file is open for writing anywhere on the machine, asked of the
//! kernel with a read lease: `F_SETLEASE(F_RDLCK)` is refused (`EAGAIN`)
//! exactly while some open file description of the inode has write access —
//! an open descriptor, or a shared mapping that outlived its descriptor —
//! whichever process, path or namespace it came from. The watcher's own
//! read-only descriptor does not count.
//!
//! The lease is released at once. A writer that opens the file in the
//! microseconds it is held waits for the release (a lease break); the break's
//! signal is set to `SIGURG`, whose default action is to ignore it, so it
//! cannot end the watcher (`SIGIO`, the default, would).
#![expect(
    unsafe_code,
    reason = "fcntl(F_SETSIG) and fcntl(F_SETLEASE) have no safe wrapper in rustix"
)]

use std::os::fd::{AsRawFd as _, BorrowedFd};

/// `F_SETSIG` from `asm-generic/fcntl.h` (the same on every Linux
/// architecture; the `libc` crate defines it only for musl).
const F_SETSIG: libc::c_int = 10;

/// Makes a lease break on `fd` signal `SIGURG`: once per descriptor, before
/// [`open_for_writing`] asks through it.
pub(super) fn prepare(fd: BorrowedFd<'_>) -> std::io::Result<()> {
    // SAFETY: `fcntl` with an integer argument reads and writes no memory of
    // ours; `fd` keeps the descriptor open for this call.
    if unsafe { libc::fcntl(fd.as_raw_fd(), F_SETSIG, libc::SIGURG) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `Ok(true)` when the file open as `fd` (read-only, [`prepare`]d) is open
/// for writing elsewhere; an error when the kernel cannot say (no lease
/// support on this file system, `fs.leases-enable = 0`, a file this user
/// does not own).
pub(super) fn open_for_writing(fd: BorrowedFd<'_>) -> std::io::Result<bool> {
    let raw = fd.as_raw_fd();
    // SAFETY: as above.
    if unsafe { libc::fcntl(raw, libc::F_SETLEASE, libc::F_RDLCK) } != 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(true),
            _ => Err(e),
        };
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(raw, libc::F_SETLEASE, libc::F_UNLCK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(false)
}
