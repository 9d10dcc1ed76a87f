//! Executing providers: the loop that feeds a run's events to the scheduling core and
//! carries out what it answers on the executors (the sandboxed run), and repository
//! setup. `execute` is the entry point; the files beside it each hold one part of it (see
//! ARCHITECTURE.md's code map).

pub mod account;
mod artifacts;
mod command;
mod conclude;
mod contract;
mod ended;
mod event_loop;
pub mod events;
pub mod execute;
mod executor;
mod finished;
mod handoff;
mod heartbeat;
mod job;
mod kept_evidence;
mod kept_log;
mod layers;
mod local_run;
mod offload;
mod provider;
mod recorder;
pub mod remote;
mod remote_run;
mod sandboxes;
mod scheduling;
mod service_job;
mod services;
pub mod setup;
mod setup_commands;
mod shell;
mod signals;
mod stamps;
#[cfg(test)]
mod testing;
mod writer;

pub use events::{Line, Mark, Progress, ProviderAction, ProviderRun, ReceiptView};
pub use handoff::{new_run_id, path_rewrites};
