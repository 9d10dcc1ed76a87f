//! The mount table: the mounts in, at or above a work tree, and noticing
//! when it changes ([`Watcher::check_mounts`]): a mount changes what a path
//! names without an inotify event.

use std::path::{Path, PathBuf};

use super::Watcher;
use super::events::lock;

/// The lines of `/proc/self/mountinfo` whose mount point is `workdir`, below
/// it or above it (mount id and mount point): a mount there changes what a
/// path in the work tree names without an inotify event.
pub(super) fn mounts_of(mountinfo: &str, workdir: &Path) -> Vec<String> {
    let mut out: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let id = fields.next()?;
            let point = PathBuf::from(unescape_mount_point(fields.nth(3)?));
            (point.starts_with(workdir) || workdir.starts_with(&point))
                .then(|| format!("{id} {}", point.display()))
        })
        .collect();
    out.sort();
    out
}

/// The mount points strictly inside `workdir`, relative to it, from the
/// lines [`mounts_of`] keeps.
pub(super) fn inner_mounts(mounts: &[String], workdir: &Path) -> Vec<String> {
    mounts
        .iter()
        .filter_map(|line| {
            let (_, point) = line.split_once(' ')?;
            let rel = Path::new(point).strip_prefix(workdir).ok()?;
            (!rel.as_os_str().is_empty()).then(|| rel.to_string_lossy().into_owned())
        })
        .collect()
}

/// Whether the relative path `rel` is at or below one of `mounts`.
pub(super) fn below_any(mounts: &[String], rel: &str) -> bool {
    mounts.iter().any(|m| below(m, rel))
}

/// Whether the relative path `rel` is `dir` or below it.
pub(super) fn below(dir: &str, rel: &str) -> bool {
    rel.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `/proc/self/mountinfo` writes space, tab, newline and backslash in a
/// mount point as `\ooo`.
fn unescape_mount_point(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(((d[0] - b'0') << 6) | ((d[1] - b'0') << 3) | (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Watcher {
    /// A mount or unmount in, at or above a work tree changes what its paths
    /// name without an inotify event: such a tree starts over from a full
    /// snapshot (whose watches are then placed through the new mounts).
    pub(super) fn check_mounts(&mut self) -> Result<(), String> {
        let Some(fd) = &self.mountinfo else {
            return Err("`/proc/self/mountinfo` cannot be read".to_owned());
        };
        let mut fds = [rustix::event::PollFd::new(
            fd,
            rustix::event::PollFlags::PRI,
        )];
        let changed = match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default()))
        {
            Ok(0) => false,
            Ok(_) => true,
            Err(e) => return Err(format!("poll `/proc/self/mountinfo`: {e}")),
        };
        if !changed {
            return Ok(());
        }
        let mountinfo =
            fs_err::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let mut shared = lock(&self.shared.0);
        for (t, tree) in self.trees.iter_mut().enumerate() {
            let now = mounts_of(&mountinfo, &tree.workdir);
            if now != tree.mounts {
                tree.inner_mounts = inner_mounts(&now, &tree.workdir);
                tree.mounts = now;
                shared.dirty[t].all = true;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_mounts_are_below_the_work_tree() {
        let mounts = [
            "22 /".to_owned(),
            "30 /w/t/web/src".to_owned(),
            "31 /w/t".to_owned(),
        ];
        let inner = inner_mounts(&mounts, Path::new("/w/t"));
        assert_eq!(inner, ["web/src"]);
        assert!(below_any(&inner, "web/src"));
        assert!(below_any(&inner, "web/src/app.js"));
        assert!(!below_any(&inner, "web/srcs/app.js"));
        assert!(!below_any(&inner, "web/app.js"));
    }

    #[test]
    fn mounts_in_at_or_above_a_work_tree_are_its_own() {
        let mountinfo = "22 1 8:1 / / rw - ext4 /dev/vda rw\n\
                         30 22 8:1 /src /w/my\\040tree/web/src rw - ext4 /dev/vda rw\n\
                         31 22 0:5 / /w/other rw - tmpfs tmpfs rw\n\
                         32 22 0:6 / /w/my\\040tree2 rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mounts_of(mountinfo, Path::new("/w/my tree")),
            ["22 /", "30 /w/my tree/web/src"],
            "a sibling whose name only starts the same is not in the tree"
        );
        assert_eq!(unescape_mount_point("a\\011b\\134c\\9"), "a\tb\\c\\9");
    }
}
