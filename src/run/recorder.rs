//! The recorder: what the event loop hands the receipt writer ([`Persist`]: a judged,
//! redacted result and the evidence read for it) and takes back ([`Persisted`]), over two
//! channels, so that the loop never waits for a signature before it starts the next job.

use std::sync::mpsc;

use proofgraph_graph::NodeId;

use crate::base::diagnostic::Diagnostic;
use crate::base::redact::Redacted;
use crate::decide::judge::Judged;

use super::ended::Finished;
use super::events::ProviderRun;
use super::kept_evidence::Kept;
use crate::proof::receipt::RunIsolation;

/// One provider's judged result, for the receipt writer.
pub(super) struct Persist {
    pub(super) id: NodeId,
    pub(super) finished: Finished,
    pub(super) judged: Redacted<Judged>,
    /// Evidence to keep in the store, read before the next job could start.
    pub(super) kept: Vec<Kept>,
    pub(super) isolation: RunIsolation,
    /// The provider's result, to which the receipts are added.
    pub(super) run: ProviderRun,
}

/// What the receipt writer did with a [`Persist`].
pub(super) struct Persisted {
    pub(super) id: NodeId,
    pub(super) run: ProviderRun,
    pub(super) diagnostics: Vec<Diagnostic>,
    /// Whether every receipt was written.
    pub(super) written: bool,
}

/// Hands judged results to the receipt writer's thread and takes back what it
/// wrote. Signing and writing a receipt costs more than judging it, and the
/// event loop must not wait for it before starting the next job.
pub(super) struct Recorder {
    to_writer: Option<mpsc::Sender<Persist>>,
    from_writer: mpsc::Receiver<Persisted>,
    /// Sent and not yet taken back.
    pending: usize,
}

impl Recorder {
    /// A recorder sending to the writer over `to_writer` and taking back from
    /// `from_writer`.
    pub(super) fn new(
        to_writer: mpsc::Sender<Persist>,
        from_writer: mpsc::Receiver<Persisted>,
    ) -> Self {
        Recorder {
            to_writer: Some(to_writer),
            from_writer,
            pending: 0,
        }
    }

    /// Hands a result to the writer; gives the provider's result back when the writer
    /// is gone.
    pub(super) fn send(&mut self, persist: Persist) -> Result<(), Box<ProviderRun>> {
        let Some(tx) = &self.to_writer else {
            return Err(Box::new(persist.run));
        };
        match tx.send(persist) {
            Ok(()) => {
                self.pending += 1;
                Ok(())
            }
            Err(mpsc::SendError(persist)) => {
                self.to_writer = None;
                Err(Box::new(persist.run))
            }
        }
    }

    /// The next result, waiting for it (`wait`) or only if it is there; `None` once
    /// everything sent came back (or the writer is gone).
    pub(super) fn next(&mut self, wait: bool) -> Option<Persisted> {
        if self.pending == 0 {
            return None;
        }
        let persisted = if wait {
            self.from_writer.recv().ok()?
        } else {
            self.from_writer.try_recv().ok()?
        };
        self.pending -= 1;
        Some(persisted)
    }
}

#[cfg(test)]
mod tests {
    use proofgraph_graph::Adapter;

    use super::*;
    use crate::base::redact::Secrets;
    use crate::decide::judge::{self, Ended, ReportFile};
    use crate::run::account::row;
    use crate::run::events::ProviderAction;
    use crate::run::testing::{node, pid, provider, seal};
    use proofgraph_sandbox::Isolation;

    /// A result of `id`'s that could not run.
    fn persist(id: &str) -> Persist {
        let graph = seal(vec![provider(id, Adapter::Command, &["true"])], Vec::new());
        let ended = Ended::Error("why".into());
        let judged = judge::judge(
            node(&graph, id),
            &graph,
            &ended,
            &ReportFile::NotExpected,
            1,
        );
        Persist {
            id: graph.provider(&pid(id)).expect("node"),
            finished: Finished::error_now("why".into()),
            judged: Secrets::none().redact(judged),
            kept: Vec::new(),
            isolation: RunIsolation::None,
            run: row(id.into(), ProviderAction::Ran, None),
        }
    }

    #[test]
    fn the_recorder_counts_what_it_sent_and_gives_a_result_back_when_the_writer_is_gone() {
        let (to_writer, jobs) = mpsc::channel::<Persist>();
        let (to_loop, from_writer) = mpsc::channel::<Persisted>();
        let mut recorder = Recorder::new(to_writer, from_writer);
        assert!(recorder.next(false).is_none(), "nothing sent");
        assert!(recorder.next(true).is_none(), "never waits for nothing");
        recorder
            .send(persist("unit"))
            .map_err(|run| run.provider)
            .expect("sent");
        assert!(recorder.next(false).is_none(), "not written yet");
        let sent = jobs.recv().expect("the writer gets it");
        to_loop
            .send(Persisted {
                id: sent.id,
                run: sent.run,
                diagnostics: Vec::new(),
                written: true,
            })
            .expect("back");
        let back = recorder.next(true).expect("taken back");
        assert_eq!(back.run.provider, "unit");
        assert!(recorder.next(true).is_none(), "everything came back");
        // The writer is gone: the result comes back to be kept without receipts.
        drop(jobs);
        let returned = recorder.send(persist("unit")).expect_err("nobody writes");
        assert_eq!(returned.provider, "unit");
        assert!(recorder.send(persist("unit")).is_err());
        assert!(recorder.next(true).is_none());
    }

    #[test]
    fn a_receipt_names_the_isolation_the_run_had() {
        assert_eq!(RunIsolation::of(None).as_str(), "none");
        let none = Isolation::None {
            reason: "no user namespaces".into(),
        };
        assert_eq!(RunIsolation::of(Some(&none)).as_str(), "none");
        let namespaces = Isolation::Namespaces {
            user_namespace: true,
        };
        assert_eq!(RunIsolation::of(Some(&namespaces)).as_str(), "namespaces");
    }
}
