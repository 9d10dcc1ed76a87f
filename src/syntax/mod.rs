//! Text into positioned trees: the `proofgraph-syntax` crate, the one JSON and YAML reader
//! that `validate` and `evidence init` share, under the application's layer name.

pub use proofgraph_syntax::{error, json, node, parse, yaml};
