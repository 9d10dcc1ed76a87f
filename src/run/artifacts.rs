//! Artifacts: the one way a provider's output reaches the providers that depend on it.
//!
//! A provider declares the files it hands on (`artifacts: [dist/**]`, patterns relative to
//! its repository). When its execution passes, the files it wrote there that match are
//! copied out of its own writable layer into the store, under its fingerprint
//! (`artifacts/<fingerprint>/`, renamed into place complete), and every provider that
//! depends on it sees them as the top layer of that repository — read-only, whoever
//! reads them. Nothing else one provider writes ever reaches another. A dependent that
//! runs while its dependency is reused finds the artifacts the dependency's receipt was
//! made with (`decide::reuse` reruns a dependency whose artifacts are not kept); the
//! dependent's fingerprint holds the dependency's, which holds its `artifacts`.

use std::path::{Path, PathBuf};

use proofgraph_graph::pattern::Pattern;
use proofgraph_graph::{NodeId, RepoId};

use super::layers::Seen;
use super::shell::Shell;

/// Copies the files of `written` (what an execution wrote in one repository) that match
/// `patterns` into `dest`, made complete in a staging directory beside it and renamed into
/// place; an existing `dest` (the same fingerprint kept by another run) is kept. Returns
/// how many files were kept. Links are kept as links; whiteouts and other special files
/// (what an overlay's layer records of a deletion) are not files written.
pub(super) fn keep(written: &Path, patterns: &[String], dest: &Path) -> Result<usize, String> {
    let patterns: Vec<Pattern> = patterns.iter().filter_map(|p| Pattern::new(p)).collect();
    let Some(parent) = dest.parent() else {
        return Err(format!("`{}` has no parent directory", dest.display()));
    };
    fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(parent)
        .map_err(|e| format!("make a staging directory in `{}`: {e}", parent.display()))?;
    let mut kept = 0;
    copy_matching(written, written, &patterns, staging.path(), &mut kept)?;
    let staged = staging.keep();
    if fs_err::rename(&staged, dest).is_err() {
        // Kept by another run already (or a leftover): the same fingerprint's files.
        let _ = fs_err::remove_dir_all(&staged);
    }
    Ok(kept)
}

fn copy_matching(
    root: &Path,
    dir: &Path,
    patterns: &[Pattern],
    staging: &Path,
    kept: &mut usize,
) -> Result<(), String> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        if kind.is_dir() {
            copy_matching(root, &path, patterns, staging, kept)?;
            continue;
        }
        if !(kind.is_file() || kind.is_symlink()) {
            continue;
        }
        let Some(relative) = path
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .map(str::to_owned)
        else {
            continue;
        };
        if !patterns.iter().any(|p| p.matches(&relative)) {
            continue;
        }
        let target = staging.join(&relative);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        if kind.is_symlink() {
            let link = fs_err::read_link(&path).map_err(|e| e.to_string())?;
            fs_err::os::unix::fs::symlink(link, &target).map_err(|e| e.to_string())?;
        } else {
            fs_err::copy(&path, &target).map_err(|e| e.to_string())?;
        }
        *kept += 1;
    }
    Ok(())
}

impl Shell<'_, '_> {
    /// The providers whose artifacts provider `id` sees: each one it depends on (or, for
    /// a discovery receiver it depends on, that receiver's producer) that declares
    /// artifacts, with the repository they are of and the store's directory for them.
    pub(super) fn artifact_sources(&self, id: NodeId) -> Vec<(String, RepoId, PathBuf)> {
        let graph = self.plan.graph;
        graph
            .artifact_sources(id)
            .into_iter()
            .filter_map(|source| {
                let p = graph.node(source).provider()?;
                let repo = p.runs_in.as_ref()?;
                let fingerprint = self.plan.fingerprints.providers.get(&p.spec.id.value)?;
                Some((
                    p.spec.id.value.to_string(),
                    repo.clone(),
                    self.plan.store.artifact_tree(fingerprint),
                ))
            })
            .collect()
    }

    /// `seen` with the artifacts provider `id` depends on on top of their repositories
    /// (a repository it does not read otherwise holds the artifacts alone), or why it
    /// cannot have them.
    pub(super) fn with_artifacts(
        &mut self,
        id: NodeId,
        mut seen: Vec<Seen>,
    ) -> Result<Vec<Seen>, String> {
        if self.worlds.in_place() {
            return Ok(seen);
        }
        for (source, repo, dir) in self.artifact_sources(id) {
            if !dir.is_dir() {
                return Err(format!(
                    "the artifacts of `{source}`, which it depends on, are not kept (its run did not pass, or the store lost them): run `{source}` again"
                ));
            }
            match seen.iter_mut().find(|s| s.repo == repo) {
                Some(s) => s.put_on_top(dir),
                None => {
                    let mut alone = self.worlds.seen(&repo, super::layers::Files::Only(&[]))?;
                    alone.put_on_top(dir);
                    seen.push(alone);
                }
            }
        }
        Ok(seen)
    }

    /// Keeps what `id`'s passing execution wrote that its `artifacts` name, for the
    /// providers that depend on it.
    pub(super) fn keep_artifacts(&mut self, id: NodeId, written: Option<&Path>) {
        let Some(p) = self.plan.graph.node(id).provider() else {
            return;
        };
        let (Some(patterns), Some(written)) = (&p.spec.artifacts, written) else {
            return;
        };
        if self.worlds.in_place() {
            return;
        }
        let Some(fingerprint) = self.plan.fingerprints.providers.get(&p.spec.id.value) else {
            return;
        };
        let patterns: Vec<String> = patterns.iter().map(|s| s.value.clone()).collect();
        let dest = self.plan.store.artifact_tree(fingerprint);
        if let Err(e) = keep(written, &patterns, &dest) {
            self.diagnostics.push(
                crate::base::diagnostic::Diagnostic::warning(
                    crate::base::diagnostic::Code::StoreUnusable,
                    format!(
                        "the artifacts of `{}` could not be kept: {e}",
                        p.spec.id.value
                    ),
                )
                .surface("prove")
                .fix("Check free space and permissions under .proofgraph/; the providers that depend on it cannot run until it passes again."),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_files_the_patterns_name_are_kept_and_a_kept_tree_is_never_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let written = dir.path().join("upper");
        for (path, text) in [
            ("dist/app.js", "app"),
            ("dist/deep/x.js", "x"),
            ("scratch.txt", "no"),
        ] {
            let file = written.join(path);
            fs_err::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            fs_err::write(&file, text).expect("write");
        }
        std::os::unix::fs::symlink("app.js", written.join("dist/link.js")).expect("link");
        let dest = dir.path().join("store/artifacts/fp");
        let kept = keep(&written, &["dist/**".to_owned()], &dest).expect("kept");
        assert_eq!(kept, 3);
        assert_eq!(
            fs_err::read_to_string(dest.join("dist/deep/x.js")).expect("read"),
            "x"
        );
        assert!(!dest.join("scratch.txt").exists());
        assert_eq!(
            fs_err::read_link(dest.join("dist/link.js")).expect("a link"),
            Path::new("app.js")
        );
        // The same fingerprint again: what is kept stays, no staging is left behind.
        fs_err::write(written.join("dist/app.js"), "changed").expect("write");
        keep(&written, &["dist/**".to_owned()], &dest).expect("kept");
        assert_eq!(
            fs_err::read_to_string(dest.join("dist/app.js")).expect("read"),
            "app"
        );
        let left: Vec<_> = fs_err::read_dir(dest.parent().expect("parent"))
            .expect("list")
            .collect();
        assert_eq!(left.len(), 1);
        // Nothing written: an empty tree, kept all the same.
        let none = dir.path().join("store/artifacts/empty");
        assert_eq!(
            keep(&dir.path().join("absent"), &["x".to_owned()], &none).expect("kept"),
            0
        );
        assert!(none.is_dir());
    }
}
