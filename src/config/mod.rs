//! Configuration files: reading text into positioned trees and decoding them
//! into typed models (`evidence.yaml`, `execution.yaml`, `proofgraph.yaml`).

pub mod catalog;
pub mod decode;
pub mod evidence;
pub mod execution;
pub mod json;
pub mod load;
pub mod node;
pub mod parse;
pub mod yaml;
