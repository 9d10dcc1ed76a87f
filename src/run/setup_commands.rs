//! Running each fresh sandbox's `setup` commands (from the catalog), with the outside
//! network, before anything else runs in it — or restoring what they produced from the
//! setup cache (`setup.rs`) when `setupCache` is declared and the cache holds this setup.
//! A failed setup fails every provider of its repository, saying why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use proofgraph_graph::RepoId;
use proofgraph_sandbox::{Event, JobSpec, SandboxMode};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::config::catalog::Catalog;
use crate::observe::inputs::Snapshot;

use super::events::Line;
use super::local_run::LocalRun;
use super::services::last_lines;
use super::shell::Shell;
use super::signals::Signals;

/// One sandbox's setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Setup {
    pub(super) repo: RepoId,
    /// The sandbox.
    pub(super) dir: PathBuf,
    pub(super) commands: Vec<Vec<String>>,
    /// The directories the setup cache keeps (none: setup runs in each sandbox).
    pub(super) cache_dirs: Vec<String>,
    /// This setup's key in the setup cache, when the repository was observed.
    pub(super) key: Option<String>,
    /// What a cached setup sees (its `setupInputs`), as a snapshot to materialise; `None`
    /// when the setup is not cached or the repository was not observed.
    pub(super) inputs: Option<Snapshot>,
}

/// The setups the sandboxes `dirs` need, by repository: those whose catalog entry
/// declares at least one `setup` command.
pub(super) fn setups(
    catalog: &Catalog,
    dirs: &BTreeMap<RepoId, PathBuf>,
    snapshots: &BTreeMap<RepoId, Snapshot>,
) -> Vec<Setup> {
    let mut out = Vec::new();
    for (repo, dir) in dirs {
        let Some(entry) = catalog.repositories.get(repo) else {
            continue;
        };
        let Some(commands) = &entry.setup else {
            continue;
        };
        let commands: Vec<Vec<String>> = commands.iter().map(|c| c.value.clone()).collect();
        if commands.is_empty() {
            continue;
        }
        let cache_dirs: Vec<String> = entry
            .setup_cache
            .iter()
            .flatten()
            .map(|c| c.value.clone())
            .collect();
        let patterns: Option<Vec<String>> = entry
            .setup_inputs
            .as_ref()
            .map(|all| all.iter().map(|p| p.value.clone()).collect());
        let observed = snapshots.get(repo).map(|s| {
            let inputs = crate::run::setup::inputs(patterns.as_deref(), s);
            let key =
                crate::run::setup::cache_key(&commands, &cache_dirs, patterns.as_deref(), &inputs);
            let inputs = Snapshot {
                dir: s.dir.clone(),
                files: inputs.into_iter().cloned().collect(),
                rehashed: 0,
            };
            (key, inputs)
        });
        let (key, inputs) = match observed {
            Some((key, inputs)) => (Some(key), (!cache_dirs.is_empty()).then_some(inputs)),
            None => (None, None),
        };
        out.push(Setup {
            repo: repo.clone(),
            dir: dir.clone(),
            commands,
            cache_dirs,
            key,
            inputs,
        });
    }
    out
}

/// How a setup command that did not exit 0 ended.
fn how_failed(code: Option<i32>, signal: Option<i32>, spawn_error: Option<String>) -> String {
    match (code, signal, spawn_error) {
        (_, _, Some(e)) => format!("could not start: {e}"),
        (Some(c), _, _) => format!("exited with code {c}"),
        (None, Some(s), _) => format!("was killed by signal {s}"),
        _ => "failed".to_owned(),
    }
}

/// A cached setup's inputs, as a progress line and a failure name them: up to five paths.
fn shown_inputs(inputs: &Snapshot) -> String {
    if inputs.files.is_empty() {
        return "no file (nothing matched `setupInputs`)".to_owned();
    }
    let mut shown: Vec<&str> = inputs
        .files
        .iter()
        .take(5)
        .map(|f| f.path.as_str())
        .collect();
    let more = inputs.files.len().saturating_sub(shown.len());
    if more > 0 {
        shown.push("…");
    }
    let list = shown.join(", ");
    if more > 0 {
        format!("{list} ({} files)", inputs.files.len())
    } else {
        list
    }
}

/// How a setup command ended.
enum Ran {
    /// Its exit code, signal, and why it never started.
    Exited(Option<i32>, Option<i32>, Option<String>),
    /// The run did not take it.
    NotStarted(String),
    /// SIGINT or SIGTERM came first (it was killed).
    Interrupted,
}

/// Runs one setup command in the local run and waits for it to end (the core is not
/// running yet: its events are the run's own).
async fn run_one(local: &mut LocalRun, spec: &JobSpec, signals: &mut Signals) -> Ran {
    let (run, rx) = local.raw();
    let job = match run.spawn(spec) {
        Ok(job) => job,
        Err(e) => return Ran::NotStarted(e.to_string()),
    };
    loop {
        tokio::select! {
            event = rx.recv() => match event {
                Some(Event::Exited {
                    job: j,
                    code,
                    signal,
                    spawn_error,
                    ..
                }) if j == job => return Ran::Exited(code, signal, spawn_error),
                Some(_) => {}
                None => return Ran::Exited(None, None, Some("the run's init stopped".to_owned())),
            },
            () = signals.recv() => {
                let _ = run.kill(job);
                return Ran::Interrupted;
            }
        }
    }
}

impl Shell<'_, '_> {
    /// Puts a kept setup tree on top of `repo` for every execution of the run (a layer of
    /// their overlays, or copied into their private copies), saying so.
    fn provide_kept(&mut self, repo: &RepoId, tree: &crate::run::setup::Tree) {
        self.worlds.set_up(repo, tree.root.clone());
        let copied = (!self.worlds.isolated()).then_some("the run has no mount namespace");
        self.progress(Line::SetupRestored {
            repo,
            files: tree.files,
            copied,
        });
    }

    /// Makes the directory a cached setup of `repo` runs in: a fresh directory under the
    /// run holding exactly its inputs, each checked against the snapshot while copied.
    fn derivation(&self, repo: &RepoId, inputs: &Snapshot) -> Result<PathBuf, String> {
        let dest = self.sandboxes.root.join("setup").join(repo.as_str());
        let threads = std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN);
        inputs.materialize(&dest, threads).map_err(|e| {
            format!("the directory its setup runs in could not be made: failed to {e}")
        })?;
        Ok(dest)
    }

    /// Sets up every sandbox that needs it. Returns `false` when SIGINT or SIGTERM stopped
    /// it (the setup command was killed).
    pub(super) async fn setup(&mut self, signals: &mut Signals) -> bool {
        let Some(catalog) = &self.plan.workspace.catalog else {
            return true;
        };
        if self.plan.mode == SandboxMode::None {
            // Said, not silent: what setup would install must already be there.
            for repo in setups(catalog, &self.sandboxes.dirs, &self.plan.observed.snapshots)
                .into_iter()
                .map(|s| s.repo)
            {
                self.progress(Line::SetupSkipped { repo: &repo });
            }
            return true;
        }
        let all = setups(catalog, &self.sandboxes.dirs, &self.plan.observed.snapshots);
        for Setup {
            repo,
            dir: _,
            commands,
            cache_dirs,
            key,
            inputs,
        } in all
        {
            if self.local.is_none() {
                return true;
            }
            if !cache_dirs.is_empty()
                && let Some(key) = &key
                && let Some(tree) = crate::run::setup::Tree::open(self.plan.store, key)
            {
                tree.touch();
                self.provide_kept(&repo, &tree);
                continue;
            }
            // A cached setup runs where only its inputs are; any other over the repository,
            // writing into a layer of its own that every later execution of it sees.
            let prepared = match &inputs {
                Some(inputs) => self
                    .derivation(&repo, inputs)
                    .map(|workdir| (self.worlds.derivation_world(&repo, &workdir), workdir, None)),
                None => self
                    .worlds
                    .setup_world(&repo)
                    .map_err(|e| format!("the world its setup runs in could not be made: {e}")),
            };
            let (world, workdir, layer) = match prepared {
                Ok(prepared) => prepared,
                Err(reason) => {
                    self.progress(Line::SetupFailed {
                        repo: &repo,
                        reason: &reason,
                    });
                    self.setup_failures.insert(repo, reason);
                    continue;
                }
            };
            let mut failed = None;
            for argv in &commands {
                let log = self.log_path(&format!("setup-{repo}"));
                let spec =
                    self.builder()
                        .setup_job(argv, &repo, &workdir, world.clone(), log.clone());
                self.progress(Line::SetupCommand { repo: &repo, argv });
                let Some(local) = &mut self.local else {
                    return true;
                };
                let (code, signal, spawn_error) = match run_one(local, &spec, signals).await {
                    Ran::Exited(code, signal, spawn_error) => (code, signal, spawn_error),
                    Ran::NotStarted(e) => {
                        failed = Some(format!(
                            "`{}` could not start: failed to {e}",
                            argv.join(" ")
                        ));
                        break;
                    }
                    Ran::Interrupted => return false,
                };
                if code != Some(0) {
                    let seen = inputs.as_ref().map_or(String::new(), |inputs| {
                        format!(
                            " (a cached setup runs where only its inputs are: {}; one that needs the project's source cannot be cached — install dependencies only, see docs/setup.md)",
                            shown_inputs(inputs)
                        )
                    });
                    failed = Some(format!(
                        "`{}` {}{seen}; its log ends with: {}",
                        argv.join(" "),
                        how_failed(code, signal, spawn_error),
                        last_lines(&log, 5)
                    ));
                    break;
                }
            }
            match failed {
                Some(reason) => {
                    self.progress(Line::SetupFailed {
                        repo: &repo,
                        reason: &reason,
                    });
                    self.setup_failures.insert(repo, reason);
                }
                None if inputs.is_some() => {
                    let kept = key.as_deref().map(|key| {
                        crate::run::setup::save(self.plan.store, key, &workdir, &cache_dirs)
                    });
                    match kept {
                        Some(Ok(tree)) => self.provide_kept(&repo, &tree),
                        Some(Err(e)) => {
                            self.diagnostics.push(
                                Diagnostic::warning(Code::StoreUnusable, format!("the setup cache of `{repo}` could not be saved: {e}"))
                                    .surface("prove.setup")
                                    .fix("Check free space under .proofgraph/; setup will run again next time."),
                            );
                            self.worlds.set_up(&repo, workdir.clone());
                        }
                        None => self.worlds.set_up(&repo, workdir.clone()),
                    }
                }
                None => {
                    if let Some(layer) = layer {
                        self.worlds.set_up(&repo, layer);
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use proofgraph_graph::span::Spanned;

    use super::*;
    use crate::load::config::catalog::Repository;
    use crate::observe::inputs::{FileEntry, FileKind, blob_identity};
    use crate::run::testing::at;

    fn repo(id: &str) -> RepoId {
        RepoId::parse(id).expect("valid repository id")
    }

    fn entry(id: &str, setup: Option<&[&[&str]]>, cache: &[&str]) -> (RepoId, Repository) {
        let setup = setup.map(|all| {
            all.iter()
                .map(|argv| at(argv.iter().map(|a| (*a).to_owned()).collect()))
                .collect::<Vec<Spanned<Vec<String>>>>()
        });
        let setup_cache =
            (!cache.is_empty()).then(|| cache.iter().map(|d| at((*d).to_owned())).collect());
        (
            repo(id),
            Repository {
                id: at(repo(id)),
                path: at(id.to_owned()),
                setup,
                setup_cache,
                setup_inputs: None,
                caches: Vec::new(),
            },
        )
    }

    #[test]
    fn only_sandboxes_whose_repository_declares_setup_commands_are_set_up() {
        let catalog = Catalog {
            repositories: [
                entry(
                    "api",
                    Some(&[&["npm", "ci"], &["npm", "run", "build"]]),
                    &["node_modules"],
                ),
                entry("web", Some(&[]), &[]),
                entry("cli", None, &[]),
                entry("docs", Some(&[&["make"]]), &[]),
            ]
            .into(),
            sandbox: None,
            trusted_keys: Vec::new(),
            cache: None,
            host_paths: Vec::new(),
            logs: None,
            executor: None,
        };
        let dirs: BTreeMap<RepoId, PathBuf> = ["api", "web", "cli", "docs", "elsewhere"]
            .map(|r| (repo(r), PathBuf::from(format!("/sb/{r}"))))
            .into();
        let snapshot = Snapshot {
            dir: PathBuf::from("/r/api"),
            files: vec![FileEntry {
                path: "package-lock.json".into(),
                id: blob_identity(b"{}"),
                kind: FileKind::File,
            }],
            rehashed: 0,
        };
        let snapshots = BTreeMap::from([(repo("api"), snapshot.clone())]);
        let all = setups(&catalog, &dirs, &snapshots);
        let commands = vec![
            vec!["npm".to_owned(), "ci".to_owned()],
            vec!["npm".to_owned(), "run".to_owned(), "build".to_owned()],
        ];
        let cache_dirs = vec!["node_modules".to_owned()];
        let key = crate::run::setup::cache_key(
            &commands,
            &cache_dirs,
            None,
            &snapshot.files.iter().collect::<Vec<_>>(),
        );
        assert_eq!(
            all,
            [
                Setup {
                    repo: repo("api"),
                    dir: PathBuf::from("/sb/api"),
                    commands,
                    cache_dirs,
                    key: Some(key),
                    inputs: Some(snapshot.clone()),
                },
                Setup {
                    repo: repo("docs"),
                    dir: PathBuf::from("/sb/docs"),
                    commands: vec![vec!["make".to_owned()]],
                    cache_dirs: Vec::new(),
                    key: None,
                    inputs: None,
                },
            ]
        );
    }

    #[test]
    fn a_failed_setup_command_says_how_it_ended() {
        assert_eq!(
            how_failed(Some(127), None, Some("`npm` not found".into())),
            "could not start: `npm` not found"
        );
        assert_eq!(how_failed(Some(1), None, None), "exited with code 1");
        assert_eq!(how_failed(None, Some(15), None), "was killed by signal 15");
        assert_eq!(how_failed(None, None, None), "failed");
    }
}
