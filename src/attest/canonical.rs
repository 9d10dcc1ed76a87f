//! Canonical JSON for the statements we sign, and strict JSON parsing.
//!
//! # The canonical encoding
//!
//! [`to_canonical_json`] writes the JSON Canonicalization Scheme (JCS,
//! RFC 8785) restricted to integers, so the same value always gives the
//! same bytes and any JCS implementation gives those bytes too:
//!
//! 1. No whitespace anywhere: no spaces, indentation or final newline.
//! 2. Object members are sorted by their names compared as sequences of
//!    UTF-16 code units (RFC 8785 section 3.2.3). For names made only of
//!    characters below U+10000 this is plain code point order; names are
//!    unique because they come from a map.
//! 3. Strings are UTF-8. These are escaped: `"` as `\"`, `\` as `\\`,
//!    U+0008 `\b`, U+0009 `\t`, U+000A `\n`, U+000C `\f`, U+000D `\r`, and
//!    every other character below U+0020 as `\u00xx` with lowercase hex.
//!    Every other character, including `/`, U+007F and non-ASCII, is
//!    written as itself.
//! 4. Numbers must be integers in the exact range of an IEEE double,
//!    -(2^53 - 1) ..= 2^53 - 1, written in decimal with no sign for zero,
//!    no leading zeros, no fraction and no exponent. Any other number
//!    (floating point, or a larger integer) is an error rather than being
//!    rounded: JCS would print it as a double, which is easy to get wrong
//!    and loses precision, so we never sign one.
//! 5. `true`, `false` and `null` as themselves; arrays keep their order.
//!
//! Nesting deeper than [`MAX_DEPTH`] is an error.
//!
//! # Strict parsing
//!
//! [`parse_strict`] parses JSON like `serde_json`, but rejects an object
//! that names a member twice: `serde_json::Value` would silently keep the
//! last one, while other parsers keep the first, and a signed document
//! must not mean different things to different readers.

use std::fmt;

use serde::de::{self, Deserialize, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The deepest nesting of arrays and objects the encoder accepts (the same
/// limit `serde_json` applies when parsing).
pub const MAX_DEPTH: usize = 128;

/// The largest integer magnitude allowed: 2^53 - 1.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A value that has no canonical encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalJsonError {
    /// A number that is not an integer in the safe range.
    #[error(
        "encode canonical json: the number {number} at {path} is not an integer between \
         -(2^53-1) and 2^53-1"
    )]
    Number {
        /// The number as `serde_json` prints it.
        number: String,
        /// A JSON Pointer (RFC 6901) to it; empty for the root.
        path: String,
    },
    /// Arrays and objects nested too deeply.
    #[error("encode canonical json: nesting at {path} is deeper than {MAX_DEPTH} levels")]
    TooDeep {
        /// A JSON Pointer to the value that is too deep.
        path: String,
    },
}

/// Encodes `value` as canonical JSON (see the module documentation).
pub fn to_canonical_json(value: &Value) -> Result<Vec<u8>, CanonicalJsonError> {
    let mut out = Vec::new();
    write_value(&mut out, value, &mut Vec::new())?;
    Ok(out)
}

/// Parses one JSON document, rejecting duplicate object member names: the one strict JSON
/// reader of the application (statements here, every test report in `decide::report`).
pub fn parse_strict(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<StrictValue>(bytes).map(|strict| strict.0)
}

/// What the error of a repeated member name starts and ends with (the name between).
const DUPLICATE: (&str, &str) = ("the key `", "` appears twice");

/// The member name a [`parse_strict`] error is about, when the document repeated one.
pub fn duplicate_key(err: &serde_json::Error) -> Option<String> {
    if err.classify() != serde_json::error::Category::Data {
        return None;
    }
    let message = err.to_string();
    let rest = message.strip_prefix(DUPLICATE.0)?;
    rest.rfind(DUPLICATE.1).map(|end| rest[..end].to_owned())
}

/// One step of the path to a value, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step<'v> {
    /// An object member.
    Name(&'v str),
    /// An array element.
    Index(usize),
}

/// Writes one value, tracking the path for error messages. `path` is where
/// `value` sits in the document being written.
pub(crate) fn write_value<'v>(
    out: &mut Vec<u8>,
    value: &'v Value,
    path: &mut Vec<Step<'v>>,
) -> Result<(), CanonicalJsonError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(out, number, path)?,
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            check_depth(path)?;
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                path.push(Step::Index(index));
                write_value(out, item, path)?;
                path.pop();
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(out, members, path)?,
    }
    Ok(())
}

/// Writes an object's members in canonical order; `path` is where it sits.
pub(crate) fn write_object<'v>(
    out: &mut Vec<u8>,
    members: &'v Map<String, Value>,
    path: &mut Vec<Step<'v>>,
) -> Result<(), CanonicalJsonError> {
    check_depth(path)?;
    out.push(b'{');
    for (index, (name, member)) in sorted_members(members).into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_string(out, name);
        out.push(b':');
        path.push(Step::Name(name));
        write_value(out, member, path)?;
        path.pop();
    }
    out.push(b'}');
    Ok(())
}

/// Object members in RFC 8785 order: names compared as UTF-16 code units. For
/// names that are all ASCII that is byte order, which is much cheaper to compare.
fn sorted_members(members: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    if sorted.iter().all(|(name, _)| name.is_ascii()) {
        sorted.sort_unstable_by_key(|(name, _)| *name);
    } else {
        sorted.sort_unstable_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
    }
    sorted
}

/// Fails once a container would sit deeper than [`MAX_DEPTH`].
fn check_depth(path: &[Step<'_>]) -> Result<(), CanonicalJsonError> {
    if path.len() >= MAX_DEPTH {
        return Err(CanonicalJsonError::TooDeep {
            path: pointer(path),
        });
    }
    Ok(())
}

/// Writes an integer in the safe range, or fails.
fn write_number(
    out: &mut Vec<u8>,
    number: &Number,
    path: &[Step<'_>],
) -> Result<(), CanonicalJsonError> {
    use std::io::Write as _;
    let written = if let Some(unsigned) = number.as_u64() {
        (unsigned <= MAX_SAFE_INTEGER).then(|| write!(out, "{unsigned}"))
    } else if let Some(signed) = number.as_i64() {
        (signed.unsigned_abs() <= MAX_SAFE_INTEGER).then(|| write!(out, "{signed}"))
    } else {
        None
    };
    match written {
        // Writing to a `Vec` cannot fail.
        Some(_) => Ok(()),
        None => Err(CanonicalJsonError::Number {
            number: number.to_string(),
            path: pointer(path),
        }),
    }
}

/// Writes a string with RFC 8785 escaping. Bytes that need no escape (every
/// byte of a multi-byte character among them) are copied in runs.
pub(crate) fn write_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..at]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(proofgraph_graph::fingerprint::hex(&[byte]).as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A JSON Pointer (RFC 6901) for a path of member names and indices.
fn pointer(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Name(name) => out.push_str(&name.replace('~', "~0").replace('/', "~1")),
            Step::Index(index) => out.push_str(&index.to_string()),
        }
    }
    if out.is_empty() {
        "the root".to_owned()
    } else {
        out
    }
}

/// A `serde_json::Value` that refused duplicate member names when parsed.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

/// Builds a `Value`, failing on duplicate member names.
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
        // A size hint comes from the input: it never sizes more than a page of items.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                return Err(de::Error::custom(format!(
                    "{}{name}{}",
                    DUPLICATE.0, DUPLICATE.1
                )));
            }
            let StrictValue(member) = map.next_value()?;
            members.insert(name, member);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn canonical(value: &Value) -> String {
        String::from_utf8(to_canonical_json(value).expect("canonical")).expect("utf8")
    }

    #[test]
    fn sorts_members_and_drops_whitespace() {
        let value = json!({"b": [1, {"z": null, "a": true}], "a": "x", "": false});
        assert_eq!(
            canonical(&value),
            r#"{"":false,"a":"x","b":[1,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn sorts_by_utf16_code_units_not_code_points() {
        // U+FF61 sorts after U+1F600 in UTF-16 (0xFF61 > 0xD83D) but before it
        // by code point.
        let value = json!({"\u{ff61}": 1, "\u{1f600}": 2, "a": 3});
        assert_eq!(
            canonical(&value),
            "{\"a\":3,\"\u{1f600}\":2,\"\u{ff61}\":1}"
        );
    }

    #[test]
    fn escapes_exactly_the_jcs_set() {
        let value = json!("\"\\/\u{08}\u{0c}\n\r\t\u{00}\u{1f}\u{7f}é\u{2028}😀");
        assert_eq!(
            canonical(&value),
            "\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\u{7f}é\u{2028}😀\""
        );
    }

    #[test]
    fn integers_in_range_only() {
        assert_eq!(canonical(&json!(0)), "0");
        assert_eq!(canonical(&json!(-7)), "-7");
        assert_eq!(
            canonical(&json!(9_007_199_254_740_991_u64)),
            "9007199254740991"
        );
        assert_eq!(
            canonical(&json!(-9_007_199_254_740_991_i64)),
            "-9007199254740991"
        );
        let err = to_canonical_json(&json!({"a": [9_007_199_254_740_992_u64]})).expect_err("big");
        assert_eq!(
            err.to_string(),
            "encode canonical json: the number 9007199254740992 at /a/0 is not an integer \
             between -(2^53-1) and 2^53-1"
        );
        assert!(to_canonical_json(&json!(1.5)).is_err());
        assert!(
            to_canonical_json(&json!({"x/y~": 1.0}))
                .is_err_and(|e| e.to_string().contains("/x~1y~0"))
        );
    }

    #[test]
    fn depth_is_limited() {
        let mut value = json!(1);
        for _ in 0..MAX_DEPTH {
            value = json!([value]);
        }
        assert!(to_canonical_json(&value).is_ok());
        let too_deep = json!([value]);
        assert!(matches!(
            to_canonical_json(&too_deep),
            Err(CanonicalJsonError::TooDeep { .. })
        ));
    }

    #[test]
    fn strict_parse_rejects_duplicate_members() {
        assert!(parse_strict(br#"{"a":1,"b":{"c":1,"c":2}}"#).is_err());
        assert!(parse_strict(br#"{"a":1,"a":1}"#).is_err());
        assert_eq!(
            parse_strict(br#" {"a":[1,2.5,"x",null,true]} "#).expect("ok"),
            json!({"a": [1, 2.5, "x", null, true]})
        );
        assert!(parse_strict(b"{} {}").is_err());
        // The repeated name is recovered whole, whatever it holds.
        let key = |bytes: &[u8]| parse_strict(bytes).err().and_then(|e| duplicate_key(&e));
        assert_eq!(key(br#"{"a":1,"b":{"c":1,"c":2}}"#).as_deref(), Some("c"));
        let odd = br#"{"x` appears twice y":1,"x` appears twice y":2}"#;
        assert_eq!(key(odd).as_deref(), Some("x` appears twice y"));
        assert_eq!(key(b"{"), None);
        assert_eq!(key(br#"{"a":1e999}"#), None);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(MAX_SAFE_INTEGER as i64)..=(MAX_SAFE_INTEGER as i64)).prop_map(|n| json!(n)),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(crate::attest::testing::beside_source(proptest::test_runner::Config::default()))]
        #[test]
        fn canonical_bytes_parse_back_and_are_stable(value in arb_json()) {
            let bytes = to_canonical_json(&value).expect("canonical");
            let parsed = parse_strict(&bytes).expect("parses");
            prop_assert_eq!(&parsed, &value);
            prop_assert_eq!(to_canonical_json(&parsed).expect("canonical"), bytes.clone());
            // Pretty-printing and re-parsing does not change the bytes.
            let pretty = serde_json::to_vec_pretty(&value).expect("pretty");
            let reparsed = parse_strict(&pretty).expect("parses");
            prop_assert_eq!(to_canonical_json(&reparsed).expect("canonical"), bytes);
        }
    }
}
