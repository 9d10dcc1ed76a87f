//! The facts and vocabulary every layer shares: the process environment, diagnostics,
//! secrets and their redaction, CPU counts, signals. Depends on nothing above `syntax`.

pub mod cores;
pub mod diagnostic;
pub mod env;
pub mod interrupt;
pub mod paths;
pub mod redact;
#[cfg(test)]
pub(crate) mod testing;
