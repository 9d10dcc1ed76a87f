//! What the watcher keeps, and how it stays true to the work trees.
//!
//! The watcher keeps, per git work tree, the full snapshot as
//! [`inputs::snapshot`] takes it, an inotify watch on every directory that
//! holds a tracked file and on the directory of the git index, and one on
//! every tracked file's inode. Events mark paths (or, for directories, whole
//! prefixes) dirty; a query first makes sure every event that happened before
//! it has been read — it creates a *cookie* file next to the index and waits
//! for its event, as watchman does — then re-reads only the dirty tracked
//! files, by content. Anything it cannot vouch for starts over from a full
//! snapshot: the index changed (its stat data differ from the snapshot's),
//! the kernel's event queue overflowed, the mount table changed in, at or
//! above a work tree, or this is the first query.
//!
//! What a directory watch does not see, and what covers it:
//! - a write, `chmod` or new link through a hard link outside the watched
//!   directories: the file's own inode watch (`IN_MODIFY`, `IN_ATTRIB`);
//! - a write through a shared writable mapping, which makes no event at all
//!   and, while the page stays dirty, does not even change the file's mtime:
//!   the inode watch's `IN_OPEN` makes the file a *suspect*, and the next
//!   query asks the kernel (a read lease, `lease.rs`) whether anything has it
//!   open for writing; while something does, the file is re-read at every
//!   query, and once more after (`IN_CLOSE_WRITE` comes only when the last
//!   mapping is gone). A newly watched inode is a suspect too: it may have
//!   been opened before its watch was placed. Counting `IN_OPEN` against
//!   `IN_CLOSE_*` cannot replace the lease: inotify merges an event with an
//!   identical one still queued, so two opens can arrive as one `IN_OPEN`
//!   (one read-only open closed and one writable mapping kept then look like
//!   nothing open);
//! - a mount over a tracked path or a directory: `/proc/self/mountinfo` is
//!   polled at every query, and a client in another mount namespace is
//!   refused;
//! - files below a directory that is a symbolic link (a directory watch
//!   cannot follow it soundly): re-read at every query.
//!
//! Asking is cheap because the watcher holds a read-only descriptor of every
//! tracked regular file (`Held`, as many as the descriptor limit allows,
//! none below a mount inside the work tree): it asks and re-reads through
//! it, which costs two `fcntl`s and makes no `IN_OPEN` of its own. A file it
//! holds no descriptor for is opened to be asked, behind a cookie that
//! separates the watcher's own `IN_OPEN`s from others'.
//!
//! - `watcher.rs`: [`Watcher`], and a query's steps in order;
//! - `worktree.rs`: one work tree's state, which of its files events name,
//!   reading a file by content;
//! - `events.rs`: the event thread, and the cookies that put a query after
//!   every earlier event;
//! - `track.rs`: the watches on directories and inodes, the descriptors held;
//! - `refresh.rs`: re-reading what events name, or taking a full snapshot;
//! - `suspects.rs`: asking whether files are open for writing, before and
//!   after the cookie;
//! - `mounts.rs`: the mount table;
//! - `untracked.rs`: the untracked files git does not ignore, walked again only after an
//!   event that could change them.
//!
//! [`inputs::snapshot`]: crate::observe::inputs::snapshot

mod events;
mod mounts;
mod refresh;
mod suspects;
#[cfg(test)]
mod tests;
mod track;
mod untracked;
mod watcher;
mod worktree;

pub use untracked::GitUserFiles;
pub use watcher::{Served, Watcher};
