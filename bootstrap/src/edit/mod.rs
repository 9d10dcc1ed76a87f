//! Text editing for `init`: locating things in JSON and YAML text, and
//! rendering new entries in the file's own style.

pub(crate) mod json;
pub(crate) mod render;
pub(crate) mod yaml;
