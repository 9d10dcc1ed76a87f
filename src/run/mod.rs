//! Executing providers: the executor that drives the scheduler over a sandboxed run, and
//! repository setup. `execute` is the entry point; the files beside it each hold one part
//! of it (see ARCHITECTURE.md's code map).

pub mod account;
mod artifacts;
mod command;
mod conclude;
mod contract;
mod dispatch;
mod ended;
pub mod events;
mod evidence;
pub mod execute;
mod heartbeat;
mod job;
mod kept_log;
mod layers;
mod plan;
mod provider;
mod record;
mod recorder;
mod sandboxes;
mod service_job;
mod services;
pub mod setup;
mod setup_commands;

mod signals;
mod stamps;
#[cfg(test)]
mod testing;
mod writer;

pub use events::{Line, Mark, Progress, ProviderAction, ProviderRun, ReceiptView};
pub use plan::{new_run_id, path_rewrites};
