//! Job building: from a provider's or setup command's wiring and what was observed to the
//! [`JobSpec`] the run starts (its environment and argv: `command.rs`; services and
//! probes: `service_job.rs`). Pure: nothing here
//! starts a process or touches a file, so every rule (the environment a job gets, the argv
//! a provider runs, which providers share one execution, which report paths an execution
//! empties) is tested without a run.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::model::Network as NetworkSetting;
use proofgraph_graph::span::Spanned;
use proofgraph_graph::{Adapter, NodeId, ProviderId, RepoId, SealedGraph, ServiceId};
use proofgraph_sandbox::{JobSpec, Network};

use crate::base::env::Env;
use crate::base::redact::Secrets;
use crate::load::config::caches::CacheKind;
use crate::observe::world::Program;

use super::command::{JobEnv, job_env, provider_argv};
use super::layers::{ExecDirs, Seen};

/// How identical executions are recognised: providers whose commands agree on all of this
/// in one run share one execution, and each is judged from it — the same world included
/// (what each sees of every repository), so no provider is judged from a run that saw
/// files its fingerprint does not bind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ExecKey {
    pub(super) argv: Vec<OsString>,
    /// The working directory as the job sees it (its repository's sandbox).
    pub(super) cwd: PathBuf,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) timeout: u64,
    pub(super) network: bool,
    pub(super) seen: Vec<Seen>,
}

/// What building a job reads: the caller's environment, the run, and what was observed.
pub(super) struct Jobs<'a> {
    /// The caller's environment.
    pub(super) env: &'a Env,
    /// This run's id (`PROOFGRAPH_RUN_ID`).
    pub(super) run_id: &'a str,
    /// What every job's log is redacted of.
    pub(super) secrets: &'a Secrets,
    /// Each provider's program, resolved when the world was observed.
    pub(super) programs: &'a BTreeMap<ProviderId, Option<Program>>,
    /// Each service's program, likewise.
    pub(super) service_programs: &'a BTreeMap<ServiceId, Option<Program>>,
    /// Where each repository is seen: its snapshot's path (or in place its own).
    pub(super) sandboxes: &'a BTreeMap<RepoId, PathBuf>,
    /// Where executions may write outside their sandboxes (Playwright's JSON report), a
    /// directory per provider.
    pub(super) out_dir: &'a Path,
    /// The host paths every job sees read-only.
    pub(super) host_paths: &'a [PathBuf],
    /// The caller's home directory, private and empty in every job's world.
    pub(super) home: Option<&'a Path>,
    /// Each repository's declared caches, with their directories.
    pub(super) caches: &'a BTreeMap<RepoId, Vec<(CacheKind, PathBuf)>>,
    /// Whether the run's files got times from their content (`run/stamps.rs`): only then
    /// does a declared `cargo-build` cache give a job a kept build directory.
    pub(super) stamped: bool,
}

/// A provider's command, ready to start (see [`Jobs::prepare`]).
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub(super) key: ExecKey,
    /// The program to execute.
    pub(super) program: Program,
    /// The repository it runs in.
    pub(super) runs_in: Option<RepoId>,
    /// Where Playwright writes its JSON report, for a `playwright` provider, and the
    /// directory of the provider's own it lies in (writable in its world).
    pub(super) playwright_report: Option<PathBuf>,
    pub(super) out: Option<PathBuf>,
    /// The scratch directory of its kept cargo build directory (`CARGO_TARGET_TMPDIR`, where
    /// integration tests write): empty and its own in each execution.
    pub(super) cargo_tmp: Option<PathBuf>,
    redact: Vec<Vec<u8>>,
}

impl Prepared {
    /// The job that runs it in `world`, its repositories where `dirs` says, logging to
    /// `log`; `hold`: the run holds the providers waiting for a slot when it ends until the
    /// caller resumes it. Its key comes back beside it.
    pub(super) fn into_job(
        self,
        log: PathBuf,
        hold: bool,
        world: proofgraph_sandbox::World,
        dirs: &ExecDirs,
    ) -> (ExecKey, JobSpec) {
        let cwd = dirs
            .of(self.runs_in.as_ref())
            .map_or_else(|| self.key.cwd.clone(), |d| d.at.clone());
        let job = JobSpec {
            argv: self.key.argv.clone(),
            program: Some(self.program.file(&cwd)),
            cwd,
            world,
            env: self.key.env.clone(),
            network: network(self.key.network),
            timeout: Some(Duration::from_millis(self.key.timeout)),
            log,
            redact: self.redact,
            limited: true,
            hold_after: hold,
        };
        (self.key, job)
    }
}

/// The network namespace of a job that asked for the host's (`host`), or a private one.
pub(super) fn network(host: bool) -> Network {
    if host {
        Network::Host
    } else {
        Network::Private
    }
}

/// A provider's timeout in milliseconds (default two minutes).
pub(super) fn timeout_ms(p: &ProviderNode) -> u64 {
    p.spec.timeout_ms.as_ref().map_or(120_000, |t| t.value)
}

/// The first word of a command, for a message.
pub(super) fn program_name(command: Option<&Spanned<Vec<String>>>) -> &str {
    command
        .and_then(|c| c.value.first())
        .map_or("", String::as_str)
}

impl Jobs<'_> {
    /// The sandbox of `repo`.
    pub(super) fn cwd(&self, repo: Option<&RepoId>) -> Option<PathBuf> {
        repo.and_then(|r| self.sandboxes.get(r)).cloned()
    }

    /// What starting `p`'s command takes, when it sees `seen` of the repositories: its
    /// execution key (identical keys share one execution), program, and where Playwright
    /// writes its JSON. An error is why it cannot start.
    pub(super) fn prepare(&self, p: &ProviderNode, seen: Vec<Seen>) -> Result<Prepared, String> {
        let Some(cwd) = self.cwd(p.runs_in.as_ref()) else {
            return Err("its repository has no sandbox".to_owned());
        };
        let mut extra = vec![("PROOFGRAPH_RUN_ID", OsString::from(self.run_id))];
        let out = (p.spec.adapter.value == Adapter::Playwright)
            .then(|| self.out_dir.join(p.spec.id.value.as_str()));
        let playwright_report = out.as_ref().map(|dir| dir.join("playwright.json"));
        if let Some(path) = &playwright_report {
            extra.push(("PLAYWRIGHT_JSON_OUTPUT_FILE", path.clone().into_os_string()));
        }
        let declared = |name: &str| {
            p.spec
                .env
                .as_ref()
                .and_then(|env| env.iter().find(|(k, _)| k.as_str() == name))
                .map(|(_, v)| v.value.clone())
        };
        let caches = self.cache_env(p.runs_in.as_ref(), declared, false);
        extra.extend(caches.iter().map(|(k, v)| (k.as_str(), OsString::from(v))));
        let env_of = |extra: &[(&str, OsString)]| {
            job_env(
                self.env,
                p.spec.env.as_ref(),
                p.spec.env_from.as_ref(),
                extra,
            )
            .map_err(|missing| {
                format!(
                    "`envFrom` names {} but the environment does not set it",
                    missing.join(", ")
                )
            })
        };
        let mut env = env_of(&extra)?;
        // A kept cargo build directory of its own for each environment and set of layers
        // (what cargo does not track of them cannot make it serve another's build).
        let mut cargo_tmp = None;
        if let Some(dir) = self.cargo_build(p.runs_in.as_ref()) {
            let secret: Vec<&str> = p
                .spec
                .env_from
                .iter()
                .flatten()
                .map(|n| n.value.as_str())
                .collect();
            let target = dir.join(build_dir_key(&env, &seen, &secret));
            cargo_tmp = Some(target.join("tmp"));
            extra.push(("CARGO_TARGET_DIR", target.into_os_string()));
            env = env_of(&extra)?;
        }
        let network = p
            .spec
            .network
            .as_ref()
            .is_some_and(|n| n.value == NetworkSetting::Host);
        // The program fingerprinted is the program executed: resolved once, with this
        // job's PATH, when the world was observed; it must lie in the job's world.
        let name = program_name(p.spec.command.as_ref());
        let program = match self.programs.get(&p.spec.id.value) {
            Some(Some(program)) => program.clone(),
            _ => {
                return Err(format!(
                    "its command could not be started: `{name}` is not on its PATH (nor a file of its repository)"
                ));
            }
        };
        self.in_world(name, &program)?;
        Ok(Prepared {
            key: ExecKey {
                argv: provider_argv(p),
                cwd,
                env,
                timeout: timeout_ms(p),
                network,
                seen,
            },
            program,
            runs_in: p.runs_in.clone(),
            playwright_report,
            out,
            cargo_tmp,
            redact: self.secrets.patterns().to_vec(),
        })
    }

    /// The directory of `repo`'s kept cargo build directories, when it declares one and
    /// the run's files got their times from their content.
    fn cargo_build(&self, repo: Option<&RepoId>) -> Option<&Path> {
        if !self.stamped {
            return None;
        }
        repo.and_then(|r| self.caches.get(r))
            .into_iter()
            .flatten()
            .find(|(kind, _)| *kind == CacheKind::CargoBuild)
            .map(|(_, dir)| dir.as_path())
    }

    /// Whether a program found outside the repositories lies in every job's world: the
    /// system's directories or a host path the workspace names; else why not, and which
    /// path to name.
    pub(super) fn in_world(&self, name: &str, program: &Program) -> Result<(), String> {
        let Program::Absolute(path) = program else {
            return Ok(());
        };
        let found = if Path::new(name) == path.as_path() {
            format!("`{name}`, which")
        } else {
            format!("`{name}` is `{}`, which", path.display())
        };
        match super::layers::outside_world(path, self.host_paths, self.home) {
            None => Ok(()),
            Some(suggest) => Err(format!(
                "its command could not be started: {found} no job's world holds (a job sees the system's directories, its repositories and the `hostPaths` of proofgraph.yaml or PROOFGRAPH_HOST_PATHS); add `{suggest}` to `hostPaths`"
            )),
        }
    }

    /// The report paths (repository, path) of the wanted providers, grouped by the
    /// execution each would share (`seen`: what each sees): every one is emptied where
    /// that execution writes before it starts, so nothing left there is read as what it
    /// wrote.
    pub(super) fn reports_by_execution(
        &self,
        graph: &SealedGraph,
        wanted: &BTreeSet<NodeId>,
        seen: &BTreeMap<NodeId, Vec<Seen>>,
    ) -> BTreeMap<ExecKey, Vec<(Option<RepoId>, String)>> {
        let mut out: BTreeMap<ExecKey, Vec<(Option<RepoId>, String)>> = BTreeMap::new();
        for id in wanted {
            let Some(p) = graph.node(*id).provider() else {
                continue;
            };
            let (Some(report), true) = (&p.spec.report, p.spec.adapter.value.runs_command()) else {
                continue;
            };
            let seen = seen.get(id).cloned().unwrap_or_default();
            if let Ok(prepared) = self.prepare(p, seen) {
                out.entry(prepared.key)
                    .or_default()
                    .push((p.runs_in.clone(), report.value.clone()));
            }
        }
        out
    }

    /// The variables pointing each tool at its declared cache of `repo` (`declared`: what
    /// the job's own `env` sets; `setup`: only the caches of downloads).
    fn cache_env(
        &self,
        repo: Option<&RepoId>,
        declared: impl Fn(&str) -> Option<String>,
        setup: bool,
    ) -> Vec<(String, String)> {
        repo.and_then(|r| self.caches.get(r))
            .into_iter()
            .flatten()
            .filter(|(kind, _)| !setup || kind.downloads_only())
            // Given per job, only when the run's times are the content's (`cargo_build`).
            .filter(|(kind, _)| *kind != CacheKind::CargoBuild)
            .flat_map(|(kind, dir)| kind.env(&dir.to_string_lossy(), &declared))
            .collect()
    }

    /// The job of one `setup` command of `repo` in `dir`, seeing `world`: the caller's
    /// PATH, HOME and LANG, the repository's declared download caches, the outside network,
    /// half an hour.
    pub(super) fn setup_job(
        &self,
        argv: &[String],
        repo: &RepoId,
        dir: &Path,
        world: proofgraph_sandbox::World,
        log: PathBuf,
    ) -> JobSpec {
        let caches = self.cache_env(Some(repo), |_| None, true);
        let extra: Vec<(&str, OsString)> = caches
            .iter()
            .map(|(k, v)| (k.as_str(), OsString::from(v)))
            .collect();
        JobSpec {
            argv: argv.iter().map(OsString::from).collect(),
            // Setup is not a provider: its command is searched in its PATH.
            program: None,
            cwd: dir.to_path_buf(),
            world,
            env: job_env(self.env, None, None, &extra).unwrap_or_default(),
            network: Network::Host,
            timeout: Some(Duration::from_secs(30 * 60)),
            log,
            redact: self.secrets.patterns().to_vec(),
            limited: false,
            hold_after: false,
        }
    }
}

#[cfg(test)]
mod tests;

/// The name of the kept cargo build directory of a job with `env` that sees `seen`: a
/// digest of its environment (the values of `secret` variables and of what differs in
/// every run left out) and of what its layers are.
fn build_dir_key(env: &JobEnv, seen: &[Seen], secret: &[&str]) -> String {
    const PER_RUN: [&str; 2] = ["PROOFGRAPH_RUN_ID", "PLAYWRIGHT_JSON_OUTPUT_FILE"];
    let mut hasher = blake3::Hasher::new();
    for (name, value) in env {
        let name_str = name.to_string_lossy();
        if PER_RUN.contains(&name_str.as_ref()) {
            continue;
        }
        hasher.update(name.as_encoded_bytes());
        hasher.update(b"=");
        if !secret.contains(&name_str.as_ref()) {
            hasher.update(value.as_encoded_bytes());
        }
        hasher.update(b"\0");
    }
    for s in seen {
        hasher.update(s.repo.as_str().as_bytes());
        for id in &s.ids {
            hasher.update(b"\0");
            hasher.update(id.as_bytes());
        }
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex()[..16].to_owned()
}
