//! Reading the project: OpenSpec root resolution, the configuration files, the workspace
//! of changes, and the checks that run before anything executes.

pub mod config;
pub mod openspec;
pub mod preflight;
pub mod secrets;
pub mod workspace;
