//! Giving a sandbox what a cached setup produced, from its [`Tree`] in the store: each
//! cached directory is an overlay in the run's mount namespace (the tree read-only, the
//! sandbox's own files of that directory showing through, the run's writes in a layer of
//! its own), or a copy where no overlay can be made, saying why.

use std::path::Path;

use proofgraph_graph::RepoId;
use proofgraph_sandbox::{Event, OverlaySpec};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::run::setup::{Transfer, Tree, merge};

use super::dispatch::Dispatcher;

/// How a sandbox got a cached setup's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Provided {
    /// Every cached directory is an overlay of the tree.
    Mounted,
    /// At least one was copied, for this reason.
    Copied(String),
}

impl Dispatcher<'_, '_> {
    /// Shows `tree`'s `cache_dirs` in the sandbox `dir` of `repo`.
    pub(super) async fn provide(
        &mut self,
        repo: &RepoId,
        tree: &Tree,
        dir: &Path,
        cache_dirs: &[String],
        rx: &mut UnboundedReceiver<Event>,
    ) -> Result<Provided, String> {
        let no_overlay = if self.plan.keep_sandbox {
            Some("--keep-sandbox keeps a complete sandbox".to_owned())
        } else if !self
            .run
            .as_ref()
            .is_some_and(|r| r.isolation().is_isolated())
        {
            Some("the run has no mount namespace".to_owned())
        } else {
            None
        };
        let mut copied = None;
        // A directory before the directories in it.
        let mut ordered: Vec<(usize, &String)> = cache_dirs.iter().enumerate().collect();
        ordered.sort_by_key(|(_, d)| d.len());
        for (i, name) in ordered {
            let src = tree.dir(name);
            let Ok(meta) = fs_err::symlink_metadata(&src) else {
                continue;
            };
            let target = dir.join(name);
            if no_overlay.is_none() && meta.is_dir() {
                match self.overlay(repo, i, &src, &target, rx).await {
                    Ok(()) => continue,
                    Err(why) => {
                        copied.get_or_insert(why);
                    }
                }
            } else {
                copied.get_or_insert_with(|| {
                    no_overlay
                        .clone()
                        .unwrap_or_else(|| format!("`{name}` is not a directory"))
                });
            }
            merge(&src, &target, Transfer::Copy).map_err(|e| {
                format!("what setup produced could not be copied into the sandbox: failed to {e}")
            })?;
        }
        Ok(copied.map_or(Provided::Mounted, Provided::Copied))
    }

    /// Mounts the tree's `src` at `target` for the run's jobs; the `i`th cached directory
    /// of `repo` writes into its own scratch directory under the run.
    async fn overlay(
        &mut self,
        repo: &RepoId,
        i: usize,
        src: &Path,
        target: &Path,
        rx: &mut UnboundedReceiver<Event>,
    ) -> Result<(), String> {
        let scratch = self
            .sandboxes
            .root
            .join("overlays")
            .join(repo.as_str())
            .join(i.to_string());
        let mut layers = vec![src.to_path_buf()];
        match fs_err::symlink_metadata(target) {
            // What git tracks there shows through, under what setup produced.
            Ok(meta) if meta.is_dir() => layers.push(target.to_path_buf()),
            Ok(_) => {
                return Err(format!(
                    "`{}` in the sandbox is not a directory",
                    target.display()
                ));
            }
            Err(_) => fs_err::create_dir_all(target).map_err(|e| e.to_string())?,
        }
        fs_err::create_dir_all(&scratch).map_err(|e| e.to_string())?;
        let spec = OverlaySpec {
            target: target.to_path_buf(),
            layers,
            scratch,
        };
        let Some(run) = &self.run else {
            return Err("the run has ended".to_owned());
        };
        let job = run.overlay(&spec).map_err(|e| format!("failed to {e}"))?;
        loop {
            match rx.recv().await {
                Some(Event::Mounted { job: j, error }) if j == job => {
                    return error.map_or(Ok(()), Err);
                }
                Some(_) => {}
                None => return Err("the run's init stopped".to_owned()),
            }
        }
    }
}
