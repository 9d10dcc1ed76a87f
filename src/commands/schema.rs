//! `schema <execution|evidence|catalog>`: the JSON Schema of a file proofgraph reads, for
//! an editor (yaml-language-server) to complete and check it as it is typed.

use serde::Serialize;

use crate::load::config::schema::{self, Kind};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};

/// What `schema` prints.
#[derive(Debug, Default, Serialize)]
pub struct SchemaPayload {
    /// Which file.
    pub kind: Option<String>,
    /// Its JSON Schema (draft 2020-12).
    pub schema: Option<serde_json::Value>,
}

impl Payload for SchemaPayload {
    fn human(&self, out: &mut String) {
        if let Some(schema) = &self.schema {
            out.push_str(&serde_json::to_string_pretty(schema).unwrap_or_default());
            out.push('\n');
        }
    }
    fn raw(&self) -> bool {
        true
    }
}

/// `schema <kind>`.
pub fn run(kind: Kind) -> Report<SchemaPayload> {
    let name = Kind::ALL
        .iter()
        .find(|(_, k)| *k == kind)
        .map(|(n, _)| (*n).to_owned());
    Report {
        payload: Some(SchemaPayload {
            kind: name,
            schema: Some(schema::of(kind)),
        }),
        status: Vec::new(),
        verdict: Verdict::Success,
    }
}
