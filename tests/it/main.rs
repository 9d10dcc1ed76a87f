//! proofgraph's integration tests: one binary, a module per area.

mod support;
