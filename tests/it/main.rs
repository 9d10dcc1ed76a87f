//! proofgraph's integration tests: one binary, a module per area.

mod attack;
mod attest;
mod catalog;
mod cli;
mod compat;
mod contract;
mod critical;
mod diagnostics;
mod doctor;
mod evidence;
mod faults;
mod fuzz;
mod malformed;
mod plan;
mod playwright;
mod preflight;
mod prove;
mod receipt;
mod root;
mod sandbox;
mod secrets;
mod services;
mod support;
mod trust;
mod truth_reports;
mod verify_ci;
