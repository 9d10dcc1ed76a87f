//! The loop's side of the run: everything that touches the world. It is the core's
//! [`Host`] (preparing a provider, turning a job's exit into a result, judging it) and
//! carries out the core's [`Command`]s: it makes each job's world and hands the job to
//! its executor, prints progress, hands judged results to the receipt writer and keeps
//! artifacts. What came of a command goes back to the core as [`Event`]s.
//!
//! The files beside it add its methods for one kind of work each: `provider.rs`,
//! `services.rs`, `finished.rs` (judging), `artifacts.rs`, `setup_commands.rs`,
//! `conclude.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use proofgraph_graph::{NodeId, RepoId};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::proof::receipt::RunIsolation;

use super::ended::{self, Finished};
use super::events::{Line, Mark, Progress, ProviderRun};
use super::executor::{Executor, Exit, JobRef, Where};
use super::handoff::{Plan, diag};
use super::heartbeat::{Heartbeat, Said};
use super::job::{self, ExecKey, Jobs};
use super::layers::{ExecDirs, Worlds};
use super::local_run::LocalRun;
use super::recorder::{Persist, Persisted, Recorder};
use super::remote_run::RemoteRun;
use super::sandboxes::Sandboxes;
use super::scheduling::{Command, Event, Host, Note, Prepared, Start};

/// The core's commands, for this loop.
pub(super) type ShellCommand = Command<job::Prepared, Option<Box<Persist>>>;

/// The state of the world around one run's core.
pub(super) struct Shell<'p, 'a> {
    pub(super) plan: &'p Plan<'a>,
    /// The run's own sandbox (absent when nothing runs a command).
    pub(super) local: Option<LocalRun>,
    /// The remote execution engine, when eligible providers run on one.
    pub(super) remote: Option<RemoteRun>,
    /// How isolated the run is (what receipts record; whether a port in use is refused).
    pub(super) isolation: RunIsolation,
    pub(super) sandboxes: Sandboxes,
    /// Each execution's own world.
    pub(super) worlds: Worlds,
    /// Per provider job handed to an executor: where its repositories were and what it
    /// wrote, and its log.
    pub(super) started: BTreeMap<JobRef, (ExecDirs, PathBuf)>,
    /// Per execution, the report paths (repository, path) of every wanted provider that
    /// may be judged from it: all emptied where it writes before it starts.
    pub(super) reports: BTreeMap<ExecKey, Vec<(Option<RepoId>, String)>>,
    pub(super) service_logs: BTreeMap<NodeId, PathBuf>,
    /// Repositories whose sandbox setup failed, and why.
    pub(super) setup_failures: BTreeMap<RepoId, String>,
    pub(super) results: BTreeMap<NodeId, ProviderRun>,
    /// Where judged results go to have their receipts written.
    pub(super) recorder: Recorder,
    /// Providers judged (their receipts may still be being written).
    pub(super) recorded: usize,
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) log_dir: PathBuf,
    pub(super) next_log: usize,
    /// Providers running now (for progress).
    pub(super) running: BTreeSet<String>,
    /// How many providers this run decides (for progress).
    pub(super) total: usize,
    /// What is said between events (`--heartbeat`, `--stream`).
    pub(super) heartbeat: Heartbeat,
    /// The core said to end the loop.
    pub(super) stopping: bool,
}

impl Host for Shell<'_, '_> {
    type Key = ExecKey;
    type Work = job::Prepared;
    type Record = Option<Box<Persist>>;

    fn prepare(&mut self, id: NodeId) -> Prepared<ExecKey, job::Prepared> {
        self.prepare_provider(id)
    }

    fn finished(&mut self, job: JobRef, exit: Exit) -> Finished {
        let (dirs, log) = self.started.remove(&job).unwrap_or_default();
        // What came back from an engine and does not count is an error, never a verdict.
        if let Some(reason) = exit.refused {
            return Finished {
                dirs,
                ran_on: exit.ran_on,
                ..Finished::error_now(reason)
            };
        }
        let not_started = exit.spawn_error.is_some();
        let ended = ended::ended(
            exit.code,
            exit.signal,
            exit.timed_out,
            exit.killed,
            exit.spawn_error,
        );
        // The repositories where the world showed them are the run's own too.
        let own: Vec<&std::path::Path> = [self.sandboxes.root.as_path()]
            .into_iter()
            .chain(self.worlds.home())
            .chain(dirs.repos.values().map(|d| d.at.as_path()))
            .collect();
        // What a job runs from a declared cache is bound like a host's program.
        let executed = exit
            .executed
            .as_ref()
            .map(|r| ended::executed(r, &own, self.worlds.shared()));
        // The run measured the command from its start, which may have come after a wait
        // for a slot.
        Finished {
            not_started,
            dirs,
            executed,
            ran_on: exit.ran_on,
            ..Finished::ran(ended, log, exit.duration, std::time::SystemTime::now())
        }
    }

    fn error(&mut self, reason: String, not_started: bool) -> Finished {
        Finished {
            not_started,
            ..Finished::error_now(reason)
        }
    }

    fn judge(&mut self, id: NodeId, finished: &Finished) -> (bool, Option<Box<Persist>>) {
        self.judged(id, finished)
    }

    fn service_log_tail(&mut self, id: NodeId) -> String {
        self.service_logs
            .get(&id)
            .map(|log| super::services::last_lines(log, 5))
            .unwrap_or_default()
    }
}

impl Shell<'_, '_> {
    /// Carries out one command; what came of it, for the core.
    pub(super) fn carry(&mut self, command: ShellCommand) -> Vec<Event> {
        match command {
            Command::Start { job, on, what } => {
                let event = match what {
                    Start::Provider { node, work } => self.start_provider(job, on, node, work),
                    Start::Service(id) => self.start_service(job, id),
                    Start::Probe { probe: _, service } => self.start_probe(job, service),
                };
                return vec![event];
            }
            Command::Cancel { job, on } => {
                if let Some(executor) = self.executor(on) {
                    executor.cancel(job);
                }
            }
            Command::Kill { job, on } => {
                if let Some(executor) = self.executor(on) {
                    executor.kill(job);
                }
            }
            Command::Resume { on } => {
                if let Some(executor) = self.executor(on) {
                    executor.resume();
                }
            }
            Command::Record {
                record,
                keep_artifacts,
            } => return record.map_or_else(Vec::new, |r| self.record(*r, keep_artifacts)),
            Command::Withdrawn(id) => {
                if let Some(p) = self.plan.graph.node(id).provider() {
                    self.running.remove(p.spec.id.value.as_str());
                    self.heartbeat.ended(p.spec.id.value.as_str());
                }
            }
            Command::Say(note) => self.say(&note),
            Command::Halt => self.stopping = true,
        }
        Vec::new()
    }

    /// The executor `on`, when the run has one.
    pub(super) fn executor(&mut self, on: Where) -> Option<&mut (dyn Executor + 'static)> {
        match on {
            Where::Local => self
                .local
                .as_mut()
                .map(|l| l as &mut (dyn Executor + 'static)),
            Where::Remote => self
                .remote
                .as_mut()
                .map(|r| r as &mut (dyn Executor + 'static)),
        }
    }

    fn say(&self, note: &Note) {
        let name = |id: NodeId| &self.plan.graph.node(id).name;
        match note {
            Note::Interrupted => self.progress(Line::Interrupted),
            Note::ServiceStarted(id) => {
                if let Some(s) = self.plan.graph.node(*id).service() {
                    self.progress(Line::ServiceStarted {
                        service: &s.spec.id.value,
                    });
                }
            }
            Note::ServiceStopping(id) => self.progress(Line::ServiceStopping { name: name(*id) }),
            Note::ServiceEnded { service, how } => self.progress(Line::ServiceEnded {
                name: name(*service),
                how,
            }),
            Note::RanLocally { node, reason } => self.progress(Line::RunsLocally {
                provider: name(*node),
                reason,
            }),
        }
    }

    /// Hands a judged result to the receipt writer, saying how it ended (after what is
    /// left of its streamed output), and keeps its artifacts when asked; what the writer
    /// has finished meanwhile, for the core.
    pub(super) fn record(&mut self, persist: Persist, keep_artifacts: bool) -> Vec<Event> {
        let id = persist.id;
        let Some(p) = self.plan.graph.node(id).provider() else {
            return Vec::new();
        };
        let pid = &p.spec.id.value;
        if keep_artifacts {
            let written = persist.finished.dirs.of(p.runs_in.as_ref());
            let written = written.map(|d| d.written.clone());
            self.keep_artifacts(id, written.as_deref());
        }
        // What is left of a streamed provider's output comes before its verdict.
        self.heartbeat.ended(pid.as_str());
        if self.plan.stream.as_ref() == Some(pid) {
            self.pass_through(true);
        }
        self.progress(Line::Judged {
            provider: pid,
            mark: persist.run.result.unwrap_or(Mark::Failed),
            duration_ms: persist.finished.duration.as_millis(),
            reason: persist.run.reason.as_deref(),
        });
        let mut events = Vec::new();
        if let Err(unwritten) = self.recorder.send(persist) {
            // The writer ended (it cannot, short of a bug): say so, keep the result
            // without receipts, and start nothing more.
            self.diagnostics.push(diag(
                Code::InternalError,
                format!("the receipt of `{pid}` was not written: the receipt writer stopped"),
                "Rerun; if it persists, report it with the output of `proofgraph doctor`.",
            ));
            self.results.insert(id, *unwritten);
            events.push(Event::RecorderStopped);
        }
        self.recorded += 1;
        events.extend(self.collect(false));
        self.running.remove(pid.as_str());
        self.status();
        events
    }

    /// Says where a provider's action on the remote engine stands.
    pub(super) fn remote_stage(&self, provider: &str, stage: &crate::run::remote::Stage) {
        self.progress(Line::RemoteStage { provider, stage });
    }

    pub(super) fn progress(&self, line: Line<'_>) {
        (self.plan.progress)(Progress::Line(line));
    }

    pub(super) fn status(&self) {
        let running: Vec<&str> = self.running.iter().map(String::as_str).collect();
        (self.plan.progress)(Progress::Status {
            done: self.recorded,
            total: self.total,
            running: &running,
        });
    }

    pub(super) fn log_path(&mut self, name: &str) -> PathBuf {
        self.next_log += 1;
        self.log_dir
            .join(format!("{:04}-{name}.log", self.next_log))
    }

    /// How many bytes of a job's log its receipt keeps (`logs.keepBytes` of the catalog).
    pub(super) fn log_keep_bytes(&self) -> u64 {
        self.plan
            .workspace
            .catalog
            .as_ref()
            .and_then(|c| c.logs.as_ref())
            .and_then(|l| l.keep_bytes.as_ref())
            .map_or(super::kept_log::DEFAULT_KEEP_BYTES, |k| k.value)
    }

    /// What building a job reads, for this run.
    pub(super) fn builder(&self) -> Jobs<'_> {
        Jobs {
            env: self.plan.env,
            run_id: self.plan.run_id,
            secrets: self.plan.secrets,
            programs: &self.plan.observed.programs,
            service_programs: &self.plan.observed.service_programs,
            sandboxes: self.worlds.snapshots(),
            out_dir: &self.sandboxes.out,
            host_paths: self.worlds.host_paths(),
            home: self.worlds.home(),
            caches: self.worlds.all_caches(),
            stamped: self.worlds.stamps_times(),
        }
    }

    /// Takes in what the receipt writer has finished: what is there, or (`wait`) every
    /// receipt sent to it; what the core is to hear of it.
    pub(super) fn collect(&mut self, wait: bool) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(persisted) = self.recorder.next(wait) {
            events.push(self.take_persisted(persisted));
        }
        events
    }

    fn take_persisted(&mut self, persisted: Persisted) -> Event {
        if !persisted.written {
            // The line printed when it was judged is not a record: say so.
            self.progress(Line::Unrecorded {
                provider: &persisted.run.provider,
            });
        }
        self.diagnostics.extend(persisted.diagnostics);
        self.results.insert(persisted.id, persisted.run);
        Event::Persisted {
            written: persisted.written,
        }
    }

    /// Says what is due between events: streamed lines, and a line per running provider
    /// once the heartbeat's interval has passed.
    pub(super) fn beat(&mut self) {
        let said = self.heartbeat.beat(self.plan.secrets);
        self.say_all(&said);
    }

    /// Shows the streamed provider's new lines (all that is left, when `last`).
    pub(super) fn pass_through(&mut self, last: bool) {
        let said = self.heartbeat.stream(last, self.plan.secrets);
        self.say_all(&said);
    }

    fn say_all(&self, said: &[Said]) {
        for s in said {
            match s {
                Said::StillRunning {
                    provider,
                    elapsed,
                    tally,
                } => self.progress(Line::StillRunning {
                    provider,
                    elapsed: *elapsed,
                    tally: (tally.total > 0).then_some(tally),
                }),
                Said::Output { provider, line } => self.progress(Line::Output { provider, line }),
            }
        }
    }
}
