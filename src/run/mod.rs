//! Executing providers: the executor that drives the scheduler over a sandboxed run, and
//! repository setup.

pub mod execute;
pub mod setup;
