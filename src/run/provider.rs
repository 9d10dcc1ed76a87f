//! Preparing a provider and starting its execution: the loop's work for providers. A
//! provider is judged in-process (`contract-digest`), refused before it runs (an adapter
//! that runs nothing, `inputs` that match no file, a failed setup, a command that cannot
//! start), or prepared; the core attaches it to an identical execution or has it handed
//! to an executor as a new one, in a world whose report paths are emptied first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::{Adapter, NodeId, RepoId};
use proofgraph_sandbox::beneath;

use crate::decide::judge;
use crate::proof::receipt;

use super::contract;
use super::ended::Finished;
use super::events::Line;
use super::executor::{JobRef, Where, Work};
use super::job::{self, ExecKey};
use super::layers::{ExecDirs, Files, Seen};
use super::scheduling::{Event, Prepared};
use super::shell::Shell;

/// Why `p` is decided without running its command, in the order it is asked: its adapter
/// runs nothing in `prove`, its declared `inputs` match no file (`has_inputs`: whether
/// they match one), or its repository's setup failed (`setup_failed`: why).
pub(super) fn refusal(
    p: &ProviderNode,
    has_inputs: bool,
    setup_failed: Option<&str>,
) -> Option<String> {
    if !p.spec.adapter.value.runs_command() {
        return Some(format!(
            "the {} adapter runs nothing in `prove`",
            p.spec.adapter.value
        ));
    }
    if p.spec.inputs.is_some() && !has_inputs {
        return Some(
            "its declared `inputs` match no file, so a pass would prove nothing about the code"
                .to_owned(),
        );
    }
    setup_failed.map(|reason| format!("the setup of its repository failed: {reason}"))
}

impl Shell<'_, '_> {
    /// Provider `id`'s execution, prepared, or the provider decided without one: judged
    /// in-process (`contract-digest`), or refused before its command.
    pub(super) fn prepare_provider(&mut self, id: NodeId) -> Prepared<ExecKey, job::Prepared> {
        let Some(p) = self.plan.graph.node(id).provider() else {
            return Prepared::Decided(Box::new(Finished::error_now(
                "it is not a provider".to_owned(),
            )));
        };
        if p.spec.adapter.value == Adapter::ContractDigest {
            return Prepared::Decided(Box::new(self.contract_digest(p)));
        }
        let fail_now = |reason: String| Prepared::Decided(Box::new(Finished::error_now(reason)));
        let has_inputs = self
            .plan
            .observed
            .files
            .get(&p.spec.id.value)
            .is_some_and(|files| !files.is_empty());
        let setup_failed = p.runs_in.as_ref().and_then(|r| self.setup_failures.get(r));
        if let Some(reason) = refusal(p, has_inputs, setup_failed.map(String::as_str)) {
            return fail_now(reason);
        }
        let seen = match self.seen_of(id) {
            Ok(seen) => seen,
            Err(reason) => return fail_now(reason),
        };
        match self.builder().prepare(p, seen) {
            Ok(prepared) => Prepared::Run {
                key: prepared.key.clone(),
                // Whether the next provider may start the moment this one exits 0, or
                // only once it is judged: a verdict that may fail despite exit status 0
                // (reports, critical cases) decides whether the run goes on, and
                // attachments are read before the next job can start in the same sandbox.
                // (A provider sharing an execution started for another inherits that
                // one's choice; at worst, one more provider starts after a failure judged
                // from a report: it runs and is recorded as usual.)
                hold: !judge::judged_by_exit_status(p),
                work: prepared,
            },
            // Its command cannot even be started (a program not found, an `envFrom` the
            // environment does not set): a configuration problem.
            Err(reason) => Prepared::Decided(Box::new(Finished {
                not_started: true,
                ..Finished::error_now(reason)
            })),
        }
    }

    /// A `contract-digest` provider, judged in-process.
    fn contract_digest(&self, p: &ProviderNode) -> Finished {
        let started_at = receipt::now_rfc3339();
        let started = Instant::now();
        let (ended, reason) =
            contract::contract_digest(p, self.plan.workspace, &self.plan.observed.snapshots);
        Finished {
            ended,
            reason,
            log: None,
            duration: started.elapsed(),
            started: None,
            started_at,
            finished_at: receipt::now_rfc3339(),
            not_started: false,
            dirs: super::layers::ExecDirs::default(),
            // Judged in-process: it executed nothing.
            executed: Some(Vec::new()),
            ran_on: None,
        }
    }

    /// Hands provider `node`'s prepared execution to executor `on` as `job`, in a world
    /// of its own where nothing an earlier run left where its reports go remains.
    pub(super) fn start_provider(
        &mut self,
        job: JobRef,
        on: Where,
        node: NodeId,
        prepared: job::Prepared,
    ) -> Event {
        let not_started = |reason: String, spawn: bool| Event::NotStarted { job, reason, spawn };
        let Some(p) = self.plan.graph.node(node).provider() else {
            return not_started("it is not a provider".to_owned(), false);
        };
        let log = self.log_path(p.spec.id.value.as_str());
        let (work, dirs) = match on {
            // No local world is made for a job the engine runs.
            Where::Remote => match self.remote_job(p, &prepared, &log) {
                Ok(made) => made,
                // It cannot be an action: it runs here, or fails, as the engine's loss would.
                Err(reason) => return Event::Lost { job, reason },
            },
            Where::Local => {
                let (world, dirs) = match self.world_of(p, &prepared) {
                    Ok(made) => made,
                    Err(reason) => {
                        return not_started(
                            format!("its world could not be made: {reason}"),
                            false,
                        );
                    }
                };
                let hold = !judge::judged_by_exit_status(p);
                let (_, spec) = prepared.into_job(log.clone(), hold, world, &dirs);
                (Work::Provider(spec), dirs)
            }
        };
        let Some(executor) = self.executor(on) else {
            return not_started("no run was started".to_owned(), false);
        };
        if let Err(e) = executor.start(job, &work) {
            return not_started(
                format!("its command could not be started: failed to {e}"),
                true,
            );
        }
        self.progress(Line::Started {
            provider: &p.spec.id.value,
        });
        self.running.insert(p.spec.id.value.to_string());
        self.heartbeat.started(&p.spec.id.value, &log);
        self.status();
        self.started.insert(job, (dirs, log));
        Event::Started(job)
    }

    /// `prepared` as an action for the remote engine, and where what it sends back lands:
    /// its outputs in a new directory of the run (read as the execution's `written`
    /// directory of its repository), its stdout and stderr in `log`.
    fn remote_job(
        &mut self,
        p: &ProviderNode,
        prepared: &job::Prepared,
        log: &Path,
    ) -> Result<(Work, ExecDirs), String> {
        let Some(offload) = &self.plan.remote else {
            return Err("no remote engine was reached for this run".to_owned());
        };
        let Some(repo) = p.runs_in.as_ref() else {
            return Err("it runs in no repository".to_owned());
        };
        let reports = self
            .reports
            .get(&prepared.key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let (execution, layers) =
            super::offload::describe(prepared, reports, &offload.platform, self.plan.secrets)?;
        let written = self
            .worlds
            .remote_dir(repo)
            .map_err(|e| format!("the directory its outputs land in could not be made: {e}"))?;
        let mut dirs = ExecDirs::default();
        dirs.repos.insert(
            repo.clone(),
            super::layers::ExecDir {
                at: written.clone(),
                written: written.clone(),
            },
        );
        let action = super::executor::RemoteJob {
            provider: p.spec.id.value.to_string(),
            execution,
            layers,
            outputs: written,
            log: log.to_path_buf(),
            redact: self.plan.secrets.patterns().to_vec(),
        };
        Ok((Work::Action(Box::new(action)), dirs))
    }

    /// The world `prepared` runs in, and where its repositories are in it. Nothing left
    /// where a report of this execution goes — from an earlier run, a tracked file,
    /// another command — may be read as what it wrote: the report path of every provider
    /// that may be judged from it is emptied before it starts (without following a
    /// link). Removing them while other jobs run is safe: no two different commands
    /// declare one report path (preflight's `report_path_collision`).
    fn world_of(
        &mut self,
        p: &ProviderNode,
        prepared: &job::Prepared,
    ) -> Result<(proofgraph_sandbox::World, ExecDirs), String> {
        let (mut world, dirs) = self.worlds.world(
            &prepared.key.seen,
            prepared.out.as_deref(),
            p.runs_in.as_ref(),
        )?;
        // What integration tests write in a kept cargo build directory (`target/tmp`) is
        // the execution's own: nothing an earlier one left there is read.
        if let Some(tmp) = &prepared.cargo_tmp {
            if self.worlds.isolated() {
                world.private.push(tmp.clone());
            } else {
                let _ = fs_err::remove_dir_all(tmp);
            }
            fs_err::create_dir_all(tmp).map_err(|e| e.to_string())?;
        }
        // (In an overlay the execution's own layer starts empty; in a copy or in place a
        // tracked file may be there.)
        for (repo, report) in self.reports.get(&prepared.key).into_iter().flatten() {
            if let Some(dir) = dirs.of(repo.as_ref()) {
                let _ = beneath::remove_beneath(&dir.written, Path::new(report));
            }
        }
        if let Some(path) = &prepared.playwright_report {
            let _ = fs_err::remove_file(path);
        }
        Ok((world, dirs))
    }
}

impl Shell<'_, '_> {
    /// What provider `id` sees of each repository it reads (its own, and those its inputs
    /// name): the files its fingerprint binds, under its repository's setup.
    pub(super) fn seen_of(&mut self, id: NodeId) -> Result<Vec<Seen>, String> {
        let Some(p) = self.plan.graph.node(id).provider() else {
            return Ok(Vec::new());
        };
        let mut by_repo: BTreeMap<RepoId, BTreeSet<String>> = BTreeMap::new();
        if let Some(repo) = &p.runs_in {
            by_repo.entry(repo.clone()).or_default();
        }
        for (scoped, _) in self
            .plan
            .observed
            .files
            .get(&p.spec.id.value)
            .into_iter()
            .flatten()
        {
            if let Some((repo, path)) = scoped.split_once(':')
                && let Ok(repo) = RepoId::parse(repo)
            {
                by_repo.entry(repo).or_default().insert(path.to_owned());
            }
        }
        // A program of the repository is bound by its fingerprint (its digest), whatever
        // the provider's `inputs` say: it is in the world the provider runs in.
        if let (Some(repo), Some(Some(crate::observe::world::Program::InRepository(rel)))) = (
            &p.runs_in,
            self.plan.observed.programs.get(&p.spec.id.value),
        ) {
            let rel = rel.to_string_lossy();
            let rel = rel.trim_start_matches("./");
            let known = self
                .plan
                .observed
                .snapshots
                .get(repo)
                .is_some_and(|s| s.files.iter().any(|f| f.path == rel));
            if known {
                by_repo
                    .entry(repo.clone())
                    .or_default()
                    .insert(rel.to_owned());
            }
        }
        let mut seen = Vec::new();
        for (repo, paths) in by_repo {
            let all = self
                .plan
                .observed
                .snapshots
                .get(&repo)
                .is_some_and(|s| s.files.len() == paths.len());
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            let files = if all { Files::All } else { Files::Only(&paths) };
            seen.push(self.worlds.seen(&repo, files)?);
        }
        self.with_artifacts(id, seen)
    }

    /// The report paths each execution of `wanted` empties before it starts.
    pub(super) fn plan_reports(&mut self, wanted: &BTreeSet<NodeId>) {
        let mut seen = BTreeMap::new();
        for id in wanted {
            if let Ok(s) = self.seen_of(*id) {
                seen.insert(*id, s);
            }
        }
        self.reports = self
            .builder()
            .reports_by_execution(self.plan.graph, wanted, &seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::testing::{at, node, provider, seal};

    #[test]
    fn a_provider_is_refused_before_its_command_for_the_first_reason_that_holds() {
        let mut narrow = provider("narrow", Adapter::Command, &["make"]);
        narrow.inputs = Some(vec![at("src/**".to_owned())]);
        let plain = provider("plain", Adapter::Command, &["make"]);
        let graph = seal(vec![narrow, plain], Vec::new());
        let narrow = node(&graph, "narrow");
        let plain = node(&graph, "plain");
        assert_eq!(
            refusal(narrow, false, Some("`npm ci` exited with code 1")).as_deref(),
            Some(
                "its declared `inputs` match no file, so a pass would prove nothing about the code"
            )
        );
        assert_eq!(
            refusal(narrow, true, Some("`npm ci` exited with code 1")).as_deref(),
            Some("the setup of its repository failed: `npm ci` exited with code 1")
        );
        assert_eq!(refusal(narrow, true, None), None);
        // Without declared inputs, an empty selection refuses nothing.
        assert_eq!(refusal(plain, false, None), None);
        // An adapter that runs nothing is refused first, whatever else holds.
        let mut external = plain.clone();
        external.spec.adapter = at(Adapter::External);
        assert_eq!(
            refusal(&external, false, Some("x")).as_deref(),
            Some("the external adapter runs nothing in `prove`")
        );
    }
}
