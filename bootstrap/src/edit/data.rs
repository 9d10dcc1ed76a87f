//! A positioned tree as `serde_json` data: what `init` compares before and after its
//! edit, and what the candidates it adds are written in.
//!
//! Scalars mean what `proofgraph-syntax` read them as (the YAML 1.2 core schema, as
//! `validate`); a number becomes the `serde_json` number of its JSON spelling
//! (`0x1F` → 31, `017` → 17, `1.` → 1.0), read as `serde_json` reads a JSON file. A
//! number with no exact JSON value — `.inf`, `.nan`, one out of `f64`'s range such as
//! `1e400` — is an error, not a string or a null: a comparison that had to guess could
//! not vouch that the edit changed nothing.

use proofgraph_syntax::node::{Node, Pos, Value as Read, number_as_json};
use serde_json::{Map, Number, Value};

/// A number in the file that has no exact JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoJsonValue {
    /// The number as written.
    pub(crate) number: String,
    /// Where.
    pub(crate) pos: Pos,
}

/// The tree as data. Keys are unique in the tree (the reader refuses repeats), so none is
/// lost; their order is kept (`serde_json`'s `preserve_order`).
pub(crate) fn to_json(node: &Node) -> Result<Value, NoJsonValue> {
    Ok(match &node.value {
        Read::Null => Value::Null,
        Read::Bool(b) => Value::Bool(*b),
        Read::String(s) => Value::String(s.clone()),
        Read::Number(text) => Value::Number(number(text).ok_or_else(|| NoJsonValue {
            number: text.clone(),
            pos: node.pos,
        })?),
        Read::Seq(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Read::Map(entries) => {
            let mut map = Map::with_capacity(entries.len());
            for (key, value) in entries {
                map.insert(key.name.clone(), to_json(value)?);
            }
            Value::Object(map)
        }
    })
}

fn number(text: &str) -> Option<Number> {
    serde_json::from_str(&number_as_json(text)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofgraph_syntax::parse::parse_document;

    fn data(text: &str) -> Result<Value, NoJsonValue> {
        to_json(&parse_document(text).1.expect(text))
    }

    #[test]
    fn numbers_are_read_as_json_reads_their_spelling() {
        assert_eq!(
            data("a: [12, +12, 017, 0x1F, 0o17, 1.5, 1., .5, 1e3, -0.0]\n").expect("data"),
            serde_json::json!({"a": [12, 12, 17, 31, 15, 1.5, 1.0, 0.5, 1000.0, -0.0]})
        );
        assert_eq!(
            data("{\"a\": [12, 1.5, 1e3, 123456789012345678901234567890]}").expect("data"),
            serde_json::from_str::<Value>(
                "{\"a\": [12, 1.5, 1e3, 123456789012345678901234567890]}"
            )
            .expect("serde_json reads it")
        );
    }

    #[test]
    fn a_number_without_an_exact_json_value_is_an_error_at_its_position() {
        for (text, number, pos) in [
            ("a: .inf\n", ".inf", Pos::new(1, 4)),
            ("a:\n  - -.Inf\n", "-.Inf", Pos::new(2, 5)),
            ("a: .nan\n", ".nan", Pos::new(1, 4)),
            ("a: 1e400\n", "1e400", Pos::new(1, 4)),
            ("{\"a\": {\"b\": 1e400}}", "1e400", Pos::new(1, 13)),
            (
                "a: 0x1000000000000000000000000000000000\n",
                "0x1000000000000000000000000000000000",
                Pos::new(1, 4),
            ),
        ] {
            assert_eq!(
                data(text),
                Err(NoJsonValue {
                    number: number.to_owned(),
                    pos
                }),
                "{text}"
            );
        }
    }
}
