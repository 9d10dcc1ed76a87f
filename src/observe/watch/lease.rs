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

#[cfg(test)]
mod tests {
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    use super::*;
    use crate::observe::watch::testing::Mapping;

    /// Why the watcher asks the kernel instead of counting `IN_OPEN`s
    /// against `IN_CLOSE_*`: inotify drops an event identical to the last one
    /// still queued, so a read-only open and a writable one in a row arrive
    /// as one `IN_OPEN`; when the read-only one is closed, the counts say
    /// nothing is open while a writable mapping is. The lease says so.
    #[test]
    fn inotify_merges_opens_so_counting_them_cannot_replace_the_lease() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("f");
        fs_err::write(&path, "content\n").expect("write");
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).expect("inotify");
        let flags = WatchFlags::OPEN | WatchFlags::CLOSE_WRITE | WatchFlags::CLOSE_NOWRITE;
        inotify::add_watch(&fd, &path, flags).expect("watch");
        let reading = fs_err::File::open(&path).expect("open read-only");
        // Opens it read-write, maps it shared, closes the descriptor: the
        // mapping keeps the file open for writing.
        let mapping = Mapping::new(&path);
        drop(reading);
        let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&fd, &mut buf);
        let (mut opens, mut closes) = (0, 0);
        while let Ok(event) = reader.next() {
            if event.events().contains(ReadFlags::OPEN) {
                opens += 1;
            }
            if event
                .events()
                .intersects(ReadFlags::CLOSE_WRITE | ReadFlags::CLOSE_NOWRITE)
            {
                closes += 1;
            }
        }
        assert_eq!((opens, closes), (1, 1), "two opens arrived as one");
        let asked = fs_err::File::open(&path).expect("open");
        let asked = std::os::fd::AsFd::as_fd(asked.file());
        prepare(asked).expect("prepare");
        assert!(open_for_writing(asked).expect("a lease answer"));
        mapping.finish();
    }

    /// The kernel answers for whoever has the file open for writing,
    /// whichever descriptor: not the asking one, not a reader, a writer
    /// until it closes.
    #[test]
    fn a_writer_counts_until_it_closes_and_a_reader_never() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("f");
        fs_err::write(&path, "content\n").expect("write");
        let asking = fs_err::File::open(&path).expect("open");
        let asking = std::os::fd::AsFd::as_fd(asking.file());
        prepare(asking).expect("prepare");
        assert!(!open_for_writing(asking).expect("an answer"), "alone");
        let reader = fs_err::File::open(&path).expect("open read-only");
        assert!(!open_for_writing(asking).expect("an answer"), "a reader");
        let writer = fs_err::File::options()
            .append(true)
            .open(&path)
            .expect("open for writing");
        assert!(open_for_writing(asking).expect("an answer"), "a writer");
        drop(writer);
        assert!(!open_for_writing(asking).expect("an answer"), "closed");
        drop(reader);
    }
}
