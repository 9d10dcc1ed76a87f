//! The commands, each a function from plain options to a [`Report`].
//!
//! Commands never print: they return a payload, diagnostics and a verdict,
//! and [`crate::present::output`] renders them.

pub mod cache;
pub mod doctor;
pub mod evidence;
pub mod explain;
pub mod graph;
pub mod hash;
pub mod key;
pub mod list;
pub mod log;
pub mod plan;
pub mod prove;
pub mod receipt;
pub mod rerun;
pub mod schema;
pub mod shell;
pub mod show;
pub mod status;
pub mod validate;
pub mod verify_ci;
pub mod watch;
pub mod worker;
