//! Configuration files: decoding positioned trees (from [`crate::syntax`]) into typed
//! models (`evidence.yaml`, `execution.yaml`, `proofgraph.yaml`).

pub mod caches;
pub mod catalog;
pub mod decode;
pub mod evidence;
pub mod execution;
pub mod load;
pub mod reference;
pub mod schema;
