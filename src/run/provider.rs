//! Starting a provider and taking its execution's end: the dispatcher's work for
//! providers. A provider is judged in-process (`contract-digest`), refused before it runs
//! (an adapter that runs nothing, `inputs` that match no file, a failed setup, a command
//! that cannot start), attached to an identical execution already running or finished, or
//! handed to the run as a new execution whose report paths are emptied first.

use std::path::Path;
use std::time::Instant;

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::{Adapter, NodeId};
use proofgraph_sandbox::beneath;

use crate::decide::judge::{self, Ended};
use crate::proof::receipt;

use super::contract;
use super::ended::Finished;
use super::event_loop::{Dispatcher, Execution, Purpose};
use super::events::Line;
use super::job::ExecKey;

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

/// Whether the run must be told to go on after an execution was judged: it held the
/// providers waiting in it because this one is judged from more than its exit status
/// (`hold`), or because it did not exit 0.
pub(super) fn resumes(hold: bool, ended: &Ended) -> bool {
    let exited_0 = matches!(ended, Ended::Exited(e) if judge::succeeded(e));
    hold || !exited_0
}

impl Dispatcher<'_, '_> {
    pub(super) fn start_provider(&mut self, id: NodeId, p: &ProviderNode) {
        if p.spec.adapter.value == Adapter::ContractDigest {
            let started_at = receipt::now_rfc3339();
            let started = Instant::now();
            let (ended, reason) =
                contract::contract_digest(p, self.plan.workspace, &self.plan.observed.snapshots);
            let finished = Finished {
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
            };
            let ok = self.record(id, &finished);
            self.finish(id, ok);
            return;
        }
        let fail_now = |this: &mut Self, reason: String| {
            this.record(id, &Finished::error_now(reason));
            this.finish(id, false);
        };
        // Its command cannot even be started (a program not found, an `envFrom` the
        // environment does not set, a spawn that fails): a configuration problem.
        let not_started = |this: &mut Self, reason: String| {
            let finished = Finished {
                not_started: true,
                ..Finished::error_now(reason)
            };
            this.record(id, &finished);
            this.finish(id, false);
        };
        let has_inputs = self
            .plan
            .observed
            .files
            .get(&p.spec.id.value)
            .is_some_and(|files| !files.is_empty());
        let setup_failed = p.runs_in.as_ref().and_then(|r| self.setup_failures.get(r));
        if let Some(reason) = refusal(p, has_inputs, setup_failed.map(String::as_str)) {
            return fail_now(self, reason);
        }
        let seen = match self.seen_of(id) {
            Ok(seen) => seen,
            Err(reason) => return fail_now(self, reason),
        };
        let prepared = match self.builder().prepare(p, seen) {
            Ok(prepared) => prepared,
            Err(reason) => return not_started(self, reason),
        };
        match self.executions.get(&prepared.key) {
            Some(Execution::Running) => {
                self.waiting.entry(prepared.key).or_default().push(id);
                return;
            }
            Some(Execution::Done(finished)) => {
                let finished = (**finished).clone();
                let ok = self.record(id, &finished);
                self.finish(id, ok);
                return;
            }
            None => {}
        }
        // Nothing left where a report of this execution goes — from an earlier run, a
        // tracked file, another command — may be read as what it wrote: the report path of
        // every provider that may be judged from it is emptied before it starts (without
        // following a link). Removing them while other jobs run is safe: no two different
        // commands declare one report path (preflight's `report_path_collision`).
        let (mut world, dirs) = match self.worlds.world(
            &prepared.key.seen,
            prepared.out.as_deref(),
            p.runs_in.as_ref(),
        ) {
            Ok(made) => made,
            Err(reason) => {
                return fail_now(self, format!("its world could not be made: {reason}"));
            }
        };
        // What integration tests write in a kept cargo build directory (`target/tmp`) is
        // the execution's own: nothing an earlier one left there is read.
        if let Some(tmp) = &prepared.cargo_tmp {
            let made = if self.worlds.isolated() {
                world.private.push(tmp.clone());
                fs_err::create_dir_all(tmp)
            } else {
                let _ = fs_err::remove_dir_all(tmp);
                fs_err::create_dir_all(tmp)
            };
            if let Err(e) = made {
                return fail_now(self, format!("its world could not be made: {e}"));
            }
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
        let log = self.log_path(p.spec.id.value.as_str());
        // Whether the next provider may start the moment this one exits 0, or only once
        // it is judged: a verdict that may fail despite exit status 0 (reports, critical
        // cases) decides whether the run goes on, and attachments are read before the
        // next job can start in the same sandbox. (A provider sharing an execution started
        // for another inherits that one's choice; at worst, one more provider starts after
        // a failure judged from a report: it runs and is recorded as usual.)
        let hold = !judge::judged_by_exit_status(p);
        let (key, spec) = prepared.into_job(log.clone(), hold, world, &dirs);
        let Some(run) = &self.run else {
            return fail_now(self, "no run was started".to_owned());
        };
        match run.spawn(&spec) {
            Ok(job) => {
                self.progress(Line::Started {
                    provider: &p.spec.id.value,
                });
                self.running.insert(p.spec.id.value.to_string());
                self.heartbeat.started(&p.spec.id.value, &log);
                self.status();
                self.jobs.insert(
                    job,
                    Purpose::Providers {
                        key: key.clone(),
                        dirs,
                        log,
                        hold,
                    },
                );
                self.executions.insert(key.clone(), Execution::Running);
                self.waiting.entry(key).or_default().push(id);
            }
            Err(e) => not_started(
                self,
                format!("its command could not be started: failed to {e}"),
            ),
        }
    }

    /// An execution was cancelled while it waited in the run for a slot (the run is
    /// stopping after a failure): it never ran, so it proves nothing either way.
    pub(super) fn withdraw(&mut self, key: &ExecKey) {
        self.executions.remove(key);
        for id in self.waiting.remove(key).unwrap_or_default() {
            self.scheduler.withdraw(id);
            if let Some(p) = self.plan.graph.node(id).provider() {
                self.running.remove(p.spec.id.value.as_str());
                self.heartbeat.ended(p.spec.id.value.as_str());
            }
        }
    }

    /// An execution ended: every provider waiting for it is judged from it, and the run
    /// goes on unless it is stopping.
    pub(super) fn execution_ended(&mut self, key: ExecKey, finished: &Finished, hold: bool) {
        self.executions
            .insert(key.clone(), Execution::Done(Box::new(finished.clone())));
        for id in self.waiting.remove(&key).unwrap_or_default() {
            let ok = self.record(id, finished);
            if ok {
                let repo = self
                    .plan
                    .graph
                    .node(id)
                    .provider()
                    .and_then(|p| p.runs_in.clone());
                let written = finished.dirs.of(repo.as_ref()).map(|d| d.written.clone());
                self.keep_artifacts(id, written.as_deref());
            }
            self.finish(id, ok);
        }
        // The run held the providers waiting in it (this one is judged from more than its
        // exit status, or did not exit 0): judged and read, they may start unless the run
        // is stopping (then `halt` took them back).
        if resumes(hold, &finished.ended)
            && !self.scheduler.is_halted()
            && let Some(run) = &self.run
        {
            let _ = run.resume();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::receipt::Exit;
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

    #[test]
    fn the_run_goes_on_by_itself_only_after_an_exit_0_judged_by_its_status() {
        let exit = |code| {
            Ended::Exited(Exit {
                code: Some(code),
                signal: None,
                timed_out: false,
            })
        };
        assert!(!resumes(false, &exit(0)));
        assert!(resumes(true, &exit(0)), "held to be judged from its report");
        assert!(resumes(false, &exit(1)), "held after a failure");
        assert!(resumes(false, &Ended::Error("could not start".into())));
    }
}
