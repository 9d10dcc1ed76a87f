//! Executing providers: the executor that drives the scheduler over a sandboxed run, and
//! repository setup.

pub mod events;
pub mod execute;
pub mod setup;

pub use events::{Line, Progress, ProviderAction, ProviderRun, ReceiptView};
