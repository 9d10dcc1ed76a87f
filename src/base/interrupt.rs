//! SIGINT and SIGTERM for a command that starts processes (`prove`): from the moment it
//! begins, a signal is never lost and never kills it half-way.
//!
//! [`Interrupt::install`] records the first SIGINT or SIGTERM in a flag (the command checks
//! it between its phases and its executor on every turn, so a signal that arrives before
//! the executor listens still stops the run, with exit 130 and one JSON document); a
//! second one, while the first is still being handled (a long snapshot, a hung setup
//! command), ends the process at once with exit 130 — the run's processes die with it (its
//! init has a parent-death signal). Without it, a signal during the first phases would
//! kill the process with no document, and one during setup would wait for setup to end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether SIGINT or SIGTERM arrived since [`Interrupt::install`].
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

/// The flag of the process, once a command installed it (signals are the process's, so
/// there is one; the layers below a command find it with [`Interrupt::installed`]).
static INSTALLED: std::sync::OnceLock<Interrupt> = std::sync::OnceLock::new();

impl Interrupt {
    /// Starts recording SIGINT and SIGTERM (once per process: a second call returns the
    /// same flag). When a handler cannot be installed (it always can on Linux), the
    /// signals keep their default action: the process ends, as before.
    pub fn install() -> Interrupt {
        INSTALLED.get_or_init(Interrupt::register).clone()
    }

    /// The flag a command installed, if one did: what a long wait below the command (a
    /// remote cache's pull) watches so that a signal ends it at once.
    pub fn installed() -> Option<Interrupt> {
        INSTALLED.get().cloned()
    }

    fn register() -> Interrupt {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // The order matters: the shutdown checks the flag before the flag is set, so
            // only a second signal ends the process.
            let _ =
                signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag));
            let _ = signal_hook::flag::register(signal, Arc::clone(&flag));
        }
        Interrupt(flag)
    }

    /// Whether a signal arrived.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
