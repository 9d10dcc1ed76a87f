//! The untracked files git does not ignore, as [`inputs::untracked`] finds them, kept per
//! queried directory and walked again only when something could have changed them.
//!
//! The walk places a directory watch on every directory it enters, before it reads it, so
//! every later change inside the part of the tree git does not ignore makes an event: a file
//! created, written, renamed or removed; a directory made or moved. A query drops what it
//! kept when, since the last walk, an event named a path the index does not track, or a
//! `.gitignore`, or a directory; the index changed (a file added or removed from it); the
//! queue overflowed or a full snapshot was taken (which drops the watches of directories
//! without tracked files); or a file outside the work tree that decides what git ignores
//! (`info/exclude`, the repository's and the user's git configuration, the user's ignore
//! file) has other stat data. An edit of a tracked file keeps it.
//!
//! [`inputs::untracked`]: crate::observe::inputs::untracked

use std::path::{Path, PathBuf};

use super::Watcher;
use super::events::lock;
use super::worktree::{Stamp, stamp};
use crate::base::env::Env;
use crate::observe::inputs::{self, FileEntry};

impl Watcher {
    /// Drops work tree `t`'s untracked files when the events read so far (not yet taken by
    /// its refresh) or the index could have changed them.
    pub(super) fn check_untracked(&mut self, t: usize) {
        let tree = &self.trees[t];
        let stale = {
            let shared = lock(&self.shared.0);
            let dirty = &shared.dirty[t];
            dirty.all
                || !dirty.prefixes.is_empty()
                || dirty.paths.iter().any(|p| {
                    p.rsplit('/').next() == Some(".gitignore")
                        || tree.tracked.binary_search(p).is_err()
                })
        };
        let stamps = ignore_stamps(tree, &self.user_files);
        if stale || stamp(&tree.index_path) != tree.index_stamp || stamps != tree.ignore_stamps {
            let tree = &mut self.trees[t];
            tree.untracked.clear();
            // The configuration may name another ignore file now.
            tree.excludes_file = excludes_file(&tree.workdir);
            tree.ignore_stamps = ignore_stamps(tree, &self.user_files);
        }
    }

    /// Forgets work tree `t`'s untracked files (a full snapshot dropped the watches they
    /// relied on).
    pub(super) fn forget_untracked(&mut self, t: usize) {
        self.trees[t].untracked.clear();
    }

    /// The untracked files below `dir` (canonical, in work tree `t`) outside `exclude`: as
    /// kept, or walked now with every directory entered watched first.
    pub(in crate::observe::watch) fn untracked(
        &mut self,
        t: usize,
        dir: &Path,
        exclude: &[String],
    ) -> Result<Vec<FileEntry>, String> {
        let key = (dir.to_path_buf(), exclude.to_vec());
        if let Some(files) = self.trees[t].untracked.get(&key) {
            return Ok(files.clone());
        }
        let workdir = self.trees[t].workdir.clone();
        let mut failed = None;
        let files = {
            let watcher = &*self;
            let mut entering = |rel: &str| {
                let path = if rel.is_empty() {
                    workdir.clone()
                } else {
                    workdir.join(rel)
                };
                match watcher.watch(t, &path, Some(rel.to_owned())) {
                    Ok(_) => {}
                    Err(e) if inputs::is_gone(&e) => {}
                    Err(e) => {
                        failed.get_or_insert_with(|| {
                            format!(
                                "watch {}: {e} (raise fs.inotify.max_user_watches?)",
                                path.display()
                            )
                        });
                    }
                }
            };
            inputs::untracked_walk(dir, exclude, &mut entering).map_err(|e| e.to_string())?
        };
        self.served.untracked_walks += 1;
        if let Some(e) = failed {
            return Err(e);
        }
        self.trees[t].untracked.insert(key, files.clone());
        Ok(files)
    }
}

/// Where the user's own git files are (`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config` and
/// `…/git/ignore`), which decide what git ignores in every work tree: from `$HOME` and
/// `$XDG_CONFIG_HOME`, which the CLI reads (`Env`) and hands down — nothing here reads the
/// environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitUserFiles {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, when set and non-empty.
    pub config_home: Option<PathBuf>,
}

impl GitUserFiles {
    /// The user's, as the process's environment gives them.
    pub fn of(env: &Env) -> Self {
        GitUserFiles {
            home: Some(env.home.clone()),
            config_home: env.xdg_config_home.clone(),
        }
    }

    /// The files, as git looks for them: `$XDG_CONFIG_HOME/git/…`, else `~/.config/git/…`.
    fn paths(&self) -> Vec<PathBuf> {
        let config_home = self
            .config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")));
        let mut paths: Vec<PathBuf> = self.home.iter().map(|h| h.join(".gitconfig")).collect();
        if let Some(c) = config_home {
            paths.push(c.join("git/config"));
            paths.push(c.join("git/ignore"));
        }
        paths
    }
}

/// The stat data of the files outside a work tree that decide what git ignores in it.
fn ignore_stamps(tree: &super::worktree::Tree, user: &GitUserFiles) -> Vec<Option<Stamp>> {
    let git_dir = tree.index_path.parent().unwrap_or(Path::new("/"));
    let mut paths = vec![git_dir.join("info/exclude"), git_dir.join("config")];
    paths.extend(user.paths());
    paths.extend(tree.excludes_file.clone());
    paths.iter().map(|p| stamp(p)).collect()
}

/// The ignore file `core.excludesFile` names for the repository at `workdir`, if any.
pub(super) fn excludes_file(workdir: &Path) -> Option<PathBuf> {
    let repo = gix::open(workdir).ok()?;
    repo.config_snapshot()
        .trusted_path("core.excludesFile")
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::GitUserFiles;
    use crate::base::env::Env;

    #[test]
    fn the_user_s_git_files_follow_home_and_xdg_config_home_as_git_does() {
        let mut env = Env {
            cwd: PathBuf::from("/w"),
            home: PathBuf::from("/home/u"),
            xdg_data_home: Some(PathBuf::from("/data")),
            xdg_config_home: None,
            path: None,
            vars: BTreeMap::new(),
        };
        let paths = |env: &Env| -> Vec<String> {
            GitUserFiles::of(env)
                .paths()
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        };
        assert_eq!(
            paths(&env),
            [
                "/home/u/.gitconfig",
                "/home/u/.config/git/config",
                "/home/u/.config/git/ignore"
            ]
        );
        env.xdg_config_home = Some(PathBuf::from("/x/config"));
        assert_eq!(
            paths(&env),
            [
                "/home/u/.gitconfig",
                "/x/config/git/config",
                "/x/config/git/ignore"
            ]
        );
        assert!(GitUserFiles::default().paths().is_empty());
    }
}
