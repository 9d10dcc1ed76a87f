//! Strict JSON for reports: every JSON document and every JSON line a parser reads comes
//! through [`parse`], which refuses an object that names a key twice.
//!
//! `serde_json::Value` silently keeps the last of two equal keys (other readers keep the
//! first), so `{"failed": 3, "failed": 0}` would read as no failure here and as three
//! elsewhere. A report that means different things to different readers is not evidence:
//! a repeated key is a [`ReportError::DuplicateKey`].

use std::fmt;

use serde::de::{self, Deserialize, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value, map::Entry};

use super::error::ReportError;
use super::model::Format;

/// Starts the message of the error the visitor raises for a repeated key; what follows is
/// the key. Custom (data) errors come only from the visitor, never from the JSON syntax.
const DUPLICATE: &str = "duplicate key: ";

/// Parses one JSON document (or one JSON line: `line_offset` is added to the error's line),
/// refusing repeated keys. `format` names the format in errors; `None` while sniffing.
pub(crate) fn parse(
    bytes: &[u8],
    format: Option<Format>,
    line_offset: usize,
) -> Result<Value, ReportError> {
    serde_json::from_slice::<Strict>(bytes)
        .map(|strict| strict.0)
        .map_err(|err| error(&err, format, line_offset))
}

/// The [`ReportError`] for a failed [`parse`].
fn error(err: &serde_json::Error, format: Option<Format>, line_offset: usize) -> ReportError {
    if err.classify() == serde_json::error::Category::Data {
        let message = err.to_string();
        if let Some(rest) = message.strip_prefix(DUPLICATE) {
            let key = match rest.rfind(" at line ") {
                Some(i) => &rest[..i],
                None => rest,
            };
            return ReportError::DuplicateKey {
                format: format.map_or("test", Format::as_str),
                line: err.line() + line_offset,
                column: err.column(),
                key: format!("the key `{key}`"),
            };
        }
    }
    ReportError::json(format.map_or("report", Format::as_str), err, line_offset)
}

/// A `Value` that refused repeated keys when parsed.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

/// Builds a `Value` like `serde_json` does, failing on a repeated key.
struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number is not finite"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            match members.entry(name) {
                Entry::Occupied(entry) => {
                    return Err(de::Error::custom(format!("{DUPLICATE}{}", entry.key())));
                }
                Entry::Vacant(entry) => {
                    let Strict(member) = map.next_value()?;
                    entry.insert(member);
                }
            }
        }
        Ok(Value::Object(members))
    }
}
