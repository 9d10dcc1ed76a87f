//! Executing providers: the executor that drives the scheduler over a sandboxed run, and
//! repository setup.

mod contract;
mod ended;
pub mod events;
mod evidence;
pub mod execute;
mod job;
mod plan;
mod recorder;
mod service_job;
pub mod setup;
#[cfg(test)]
mod testing;
mod writer;

pub use events::{Line, Progress, ProviderAction, ProviderRun, ReceiptView};
