//! Text into positioned trees: the JSON and YAML readers every configuration file goes
//! through, with line, column and byte spans. Knows nothing of what the files mean.

pub mod error;
pub mod json;
pub mod node;
pub mod parse;
pub mod yaml;
