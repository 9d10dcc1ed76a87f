//! The local executor: the run's own sandbox (`proofgraph_sandbox::Run`) behind
//! [`Executor`]. It names the run's jobs by the core's [`JobRef`]s and turns the run's
//! events (forwarded by its reader thread into a channel of the loop's) into
//! [`ExecEvent`]s; events of jobs it did not start for the core (setup commands) are
//! left to whoever started them.

use std::collections::BTreeMap;

use proofgraph_sandbox::{Event, JobId, Run};
use tokio::sync::mpsc::UnboundedReceiver;

use super::executor::{ExecEvent, Executor, Exit, JobRef, NextEvent, Work};

/// The run, as an executor.
pub(super) struct LocalRun {
    run: Run,
    events: UnboundedReceiver<Event>,
    /// The core's name of each job started through it, both ways.
    refs: BTreeMap<JobId, JobRef>,
    ids: BTreeMap<JobRef, JobId>,
}

impl LocalRun {
    /// Takes the run's events from now on.
    pub(super) fn new(mut run: Run) -> Self {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel::<Event>();
        run.forward_events(move |event| {
            // Nobody is listening any more once the loop has ended.
            let _ = tx.send(event);
        });
        LocalRun {
            run,
            events,
            refs: BTreeMap::new(),
            ids: BTreeMap::new(),
        }
    }

    /// The run itself, and its events (for the setup commands, which run before the core).
    pub(super) fn raw(&mut self) -> (&Run, &mut UnboundedReceiver<Event>) {
        (&self.run, &mut self.events)
    }

    /// Kills every job and ends the run.
    pub(super) fn shutdown(self) {
        let _ = self.run.shutdown();
    }

    /// The event a run's event is for the core, when it is about a job started for it.
    fn translate(&mut self, event: Event) -> Option<ExecEvent> {
        let Some(id) = event.job() else {
            return match event {
                Event::InitFailed { reason } => Some(ExecEvent::Failed { reason }),
                _ => None,
            };
        };
        let job = *self.refs.get(&id)?;
        // A probe reports once; a job once it exited.
        self.refs.remove(&id);
        self.ids.remove(&job);
        Some(match event {
            Event::Exited {
                code,
                signal,
                timed_out,
                killed,
                duration,
                spawn_error,
                started,
                executed,
                ..
            } => ExecEvent::Ended {
                job,
                exit: Exit {
                    code,
                    signal,
                    timed_out,
                    killed,
                    duration,
                    spawn_error,
                    started,
                    executed,
                    ran_on: None,
                    refused: None,
                },
            },
            Event::Ready { .. } => ExecEvent::Ready(job),
            Event::NotReady { reason, .. } => ExecEvent::NotReady { job, reason },
            Event::InitFailed { reason } => ExecEvent::Failed { reason },
        })
    }
}

impl Executor for LocalRun {
    fn start(&mut self, job: JobRef, work: &Work) -> Result<(), String> {
        let started = match work {
            Work::Provider(spec) | Work::Service(spec) => self.run.spawn(spec),
            Work::Probe(spec) => self.run.probe(spec),
            Work::Action(_) => {
                return Err(
                    "hand an action to the run: it runs jobs, not remote actions".to_owned(),
                );
            }
        };
        let id = started.map_err(|e| e.to_string())?;
        self.refs.insert(id, job);
        self.ids.insert(job, id);
        Ok(())
    }

    fn cancel(&mut self, job: JobRef) {
        if let Some(id) = self.ids.get(&job) {
            let _ = self.run.cancel(*id);
        }
    }

    fn kill(&mut self, job: JobRef) {
        if let Some(id) = self.ids.get(&job) {
            let _ = self.run.kill(*id);
        }
    }

    fn resume(&mut self) {
        let _ = self.run.resume();
    }

    fn next_event(&mut self) -> NextEvent<'_> {
        Box::pin(async move {
            loop {
                let event = self.events.recv().await?;
                if let Some(event) = self.translate(event) {
                    return Some(event);
                }
            }
        })
    }
}
