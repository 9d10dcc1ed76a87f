//! What the user sees: the only code that writes to stdout and stderr, and exit codes.

pub mod exit;
pub mod output;
