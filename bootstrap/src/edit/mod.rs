//! Text editing for `init`: the file read as data, and new entries rendered
//! in the file's own style. Where things are in the text comes from
//! `proofgraph-syntax`'s positioned tree, the one `validate` reads.

pub(crate) mod data;
pub(crate) mod render;
