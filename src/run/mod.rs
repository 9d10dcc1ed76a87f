//! Executing providers: the executor that drives the scheduler over a sandboxed run, and
//! repository setup.

mod contract;
pub mod events;
pub mod execute;
mod job;
mod service_job;
pub mod setup;
#[cfg(test)]
mod testing;

pub use events::{Line, Progress, ProviderAction, ProviderRun, ReceiptView};
