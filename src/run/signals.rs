//! SIGINT and SIGTERM as the executor listens for them: any one that arrived since
//! `prove` began stops the run before anything starts, and one during the run stops it
//! (every process of the run is killed, nothing more starts).

use crate::base::interrupt::Interrupt;

/// SIGINT and SIGTERM, as the executor listens for them.
pub(super) struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
    /// One that came before these listened, since `prove` began.
    pub(super) early: Interrupt,
}

impl Signals {
    /// Listens from now on; `early`: what came before.
    pub(super) fn listen(early: &Interrupt) -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
            early: early.clone(),
        }
    }

    /// The next SIGINT or SIGTERM.
    pub(super) async fn recv(&mut self) {
        async fn one(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = one(&mut self.int) => {}
            () = one(&mut self.term) => {}
        }
    }
}
