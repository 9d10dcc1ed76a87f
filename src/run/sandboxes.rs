//! The run's sandboxes: one per repository the run needs, materialised from the snapshot
//! its fingerprints were computed from and checked byte for byte against it while copied
//! (`--sandbox none`: the repository's own directory). They go with the run's directory
//! when the run ends, unless `--keep-sandbox`.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use proofgraph_graph::RepoId;
use proofgraph_sandbox::{SandboxError, SandboxMode};

use crate::base::diagnostic::Code;
use crate::load::workspace::Workspace;
use crate::observe::inputs::Snapshot;

use super::handoff::{Stopped, diag};

/// The sandbox of each repository, under the run's directory `root`.
#[derive(Debug)]
pub(super) struct Sandboxes {
    pub(super) dirs: BTreeMap<RepoId, PathBuf>,
    pub(super) root: PathBuf,
    /// Where executions write outside their sandboxes, a directory per provider (`out/`).
    pub(super) out: PathBuf,
    keep: bool,
}

impl Drop for Sandboxes {
    /// The run's directory (sandboxes and logs; the logs are in the store by
    /// now) goes with the run, unless `--keep-sandbox`. Kept, it loses only the overlays'
    /// work directories: the kernel's scratch, unreadable (mode 000) and of no use once the
    /// run is over, which a tool walking the repository would stumble on in the store.
    fn drop(&mut self) {
        let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
        if self.keep {
            for scratch in super::layers::overlay_scratches(&self.root) {
                let work = proofgraph_sandbox::OverlaySpec::work_dir(&scratch);
                let _ = proofgraph_sandbox::materialize::remove(&work, threads);
            }
        } else {
            let _ = proofgraph_sandbox::materialize::remove(&self.root, threads);
        }
    }
}

/// Materialises one sandbox per repository of `repos` under `run_dir` (`keep`: left
/// there when the run ends), each checked byte for byte against the snapshot its
/// fingerprints were computed from.
pub(super) fn make(
    workspace: &Workspace,
    snapshots: &BTreeMap<RepoId, Snapshot>,
    mode: SandboxMode,
    keep: bool,
    repos: &BTreeSet<RepoId>,
    run_dir: &Path,
) -> Result<Sandboxes, Stopped> {
    let mut out = Sandboxes {
        dirs: BTreeMap::new(),
        root: run_dir.to_path_buf(),
        out: run_dir.join("out"),
        keep,
    };
    for repo in repos {
        let Some(info) = workspace.repositories.get(repo) else {
            continue;
        };
        if mode == SandboxMode::None {
            out.dirs.insert(repo.clone(), info.dir.clone());
            continue;
        }
        let Some(snapshot) = snapshots.get(repo) else {
            continue;
        };
        let dest = run_dir.join("sandboxes").join(repo.as_str());
        let threads = std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN);
        snapshot.materialize(&dest, threads).map_err(|e| match e {
            SandboxError::Changed { .. } => Stopped::InputsChanged(vec![diag(
                Code::InputsChanged,
                format!(
                    "the inputs of repository `{repo}` changed while its {} sandbox was made: failed to {e}",
                    mode.as_str()
                ),
                "Run prove again once the files stop changing (an editor, a build or a formatter was writing them).",
            )]),
            e => Stopped::Failed(vec![diag(
                Code::SandboxFailed,
                format!(
                    "the {} sandbox of repository `{repo}` could not be made: failed to {e}",
                    mode.as_str()
                ),
                "Check the free space and permissions under .proofgraph/runs/.",
            )]),
        })?;
        out.dirs.insert(repo.clone(), dest);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::workspace::Repository;

    fn workspace(root: &Path) -> Workspace {
        Workspace {
            root: root.to_path_buf(),
            catalog: None,
            has_catalog: false,
            repositories: BTreeMap::from([(
                RepoId::root(),
                Repository {
                    id: RepoId::root(),
                    path: ".".into(),
                    dir: root.join("repo"),
                },
            )]),
            diagnostics: Vec::new(),
        }
    }

    #[test]
    fn running_in_place_uses_each_repositorys_own_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run_dir = dir.path().join("runs/r1");
        fs_err::create_dir_all(&run_dir).expect("mkdir");
        let repos = BTreeSet::from([RepoId::root(), RepoId::parse("gone").expect("valid")]);
        let made = make(
            &workspace(dir.path()),
            &BTreeMap::new(),
            SandboxMode::None,
            true,
            &repos,
            &run_dir,
        )
        .expect("nothing to copy");
        // A repository the workspace does not know gets none.
        assert_eq!(
            made.dirs,
            BTreeMap::from([(RepoId::root(), dir.path().join("repo"))])
        );
        assert!(!run_dir.join("sandboxes").exists(), "nothing was copied");
    }

    #[test]
    fn the_runs_directory_goes_with_the_run_unless_it_is_kept() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        for keep in [false, true] {
            let run_dir = dir.path().join(format!("run-{keep}"));
            fs_err::create_dir_all(run_dir.join("logs")).expect("mkdir");
            fs_err::write(run_dir.join("logs/0001-unit.log"), b"x").expect("write");
            // Two overlays' scratch as the kernel leaves it: what the job wrote, and a
            // work directory of mode 000.
            for scratch in ["worlds/1/root", "setup-layers/root"] {
                let scratch = run_dir.join(scratch);
                fs_err::create_dir_all(scratch.join("upper")).expect("mkdir");
                fs_err::write(scratch.join("upper/out.txt"), b"written").expect("write");
                fs_err::create_dir_all(scratch.join("work/work")).expect("mkdir");
                fs_err::set_permissions(
                    scratch.join("work/work"),
                    std::fs::Permissions::from_mode(0o000),
                )
                .expect("chmod");
            }
            let made = make(
                &workspace(dir.path()),
                &BTreeMap::new(),
                SandboxMode::Worktree,
                keep,
                &BTreeSet::new(),
                &run_dir,
            )
            .expect("made");
            drop(made);
            assert_eq!(
                run_dir.join("logs/0001-unit.log").exists(),
                keep,
                "keep: {keep}"
            );
            // Kept, it keeps what the jobs wrote but not the kernel's work directories.
            for scratch in ["worlds/1/root", "setup-layers/root"] {
                let scratch = run_dir.join(scratch);
                assert_eq!(scratch.join("upper/out.txt").exists(), keep, "keep: {keep}");
                assert!(!scratch.join("work").exists(), "keep: {keep}");
            }
        }
    }
}
