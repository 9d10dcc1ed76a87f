//! in-toto Statement v1: the signed document inside a proofgraph receipt.
//!
//! ```json
//! {"_type": "https://in-toto.io/Statement/v1",
//!  "subject": [{"name": "...", "digest": {"sha256": "<hex>", "blake3": "<hex>"}}],
//!  "predicateType": "<URI>",
//!  "predicate": {...}}
//! ```
//!
//! A statement is carried in a DSSE envelope with payload type
//! [`IN_TOTO_PAYLOAD_TYPE`] and serialized with [`crate::attest::canonical`], so the
//! same statement always signs the same bytes.
//!
//! Checks applied when building ([`Statement::new`]) and parsing
//! ([`Statement::parse`]):
//!
//! - `_type` is exactly [`STATEMENT_TYPE_V1`];
//! - `subject` is a non-empty list; each subject has a non-empty `name`
//!   and a `digest` with `sha256` (64 lowercase hex digits) and optionally
//!   `blake3` (64 lowercase hex digits, the default 32-byte output); any
//!   other digest algorithm is rejected rather than silently ignored;
//! - `predicateType` is a non-empty string;
//! - `predicate` is present and is a JSON object (in-toto lets it be
//!   omitted; proofgraph always writes one);
//! - no object names a member twice.
//!
//! Other members (a subject's `uri` or `annotations`, say) are ignored when
//! parsing, as in-toto asks of consumers; they are not kept.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::attest::canonical::{self, CanonicalJsonError};
use crate::attest::envelope::{self, Envelope, TrustedKey, VerifyError};

/// The `_type` of an in-toto Statement v1.
pub const STATEMENT_TYPE_V1: &str = "https://in-toto.io/Statement/v1";

/// The DSSE payload type of an in-toto statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// Hex digits in a SHA-256 or BLAKE3 digest.
const DIGEST_HEX_LEN: usize = 64;

/// An in-toto Statement v1 that has passed every check in the module
/// documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// What the statement is about; never empty.
    subject: Vec<Subject>,
    /// The URI naming the predicate's schema.
    predicate_type: String,
    /// The predicate, a JSON object.
    predicate: Map<String, Value>,
}

/// One artifact a statement is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The artifact's name (a path, say); never empty.
    pub name: String,
    /// Its digests.
    pub digest: DigestSet,
}

/// The digests of one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestSet {
    /// SHA-256, 64 lowercase hex digits.
    pub sha256: String,
    /// BLAKE3 (32-byte output), 64 lowercase hex digits, if given.
    pub blake3: Option<String>,
}

/// A statement that is not acceptable, or could not be signed or verified.
///
/// Every message reads after "failed to".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatementError {
    /// The bytes are not JSON, or not shaped like a statement.
    #[error("parse in-toto statement: {detail}")]
    Json {
        /// What the parser said.
        detail: String,
    },
    /// `_type` is not the Statement v1 URI.
    #[error("accept in-toto statement: _type is {found:?}, expected {STATEMENT_TYPE_V1:?}")]
    WrongType {
        /// The `_type` found.
        found: String,
    },
    /// `subject` is empty.
    #[error("accept in-toto statement: the subject list is empty")]
    NoSubjects,
    /// A subject has an empty name.
    #[error("accept in-toto statement: subject {index} has an empty name")]
    EmptySubjectName {
        /// The subject's position, from 0.
        index: usize,
    },
    /// A subject has no SHA-256 digest.
    #[error("accept in-toto statement: subject {index} ({name:?}) has no sha256 digest")]
    MissingSha256 {
        /// The subject's position, from 0.
        index: usize,
        /// The subject's name.
        name: String,
    },
    /// A digest that is not lowercase hex of the right length.
    #[error(
        "accept in-toto statement: the {algorithm} digest of subject {index} ({name:?}) is not \
         {DIGEST_HEX_LEN} lowercase hex digits"
    )]
    BadDigest {
        /// The subject's position, from 0.
        index: usize,
        /// The subject's name.
        name: String,
        /// The digest algorithm.
        algorithm: String,
    },
    /// A digest algorithm other than sha256 and blake3.
    #[error(
        "accept in-toto statement: subject {index} ({name:?}) has a {algorithm:?} digest; only \
         sha256 and blake3 are supported"
    )]
    UnsupportedDigest {
        /// The subject's position, from 0.
        index: usize,
        /// The subject's name.
        name: String,
        /// The digest algorithm.
        algorithm: String,
    },
    /// `predicateType` is empty.
    #[error("accept in-toto statement: predicateType is empty")]
    EmptyPredicateType,
    /// `predicate` is not a JSON object.
    #[error("accept in-toto statement: the predicate is not a JSON object")]
    PredicateNotObject,
    /// The statement has no canonical encoding.
    #[error(transparent)]
    Canonical(#[from] CanonicalJsonError),
    /// The envelope around the statement did not verify.
    #[error(transparent)]
    Envelope(#[from] VerifyError),
}

impl DigestSet {
    /// A digest set with SHA-256 only. `sha256` must be 64 lowercase hex
    /// digits (checked when the statement is built).
    pub fn sha256(sha256: impl Into<String>) -> Self {
        Self {
            sha256: sha256.into(),
            blake3: None,
        }
    }

    /// Adds a BLAKE3 digest (64 lowercase hex digits).
    pub fn with_blake3(mut self, blake3: impl Into<String>) -> Self {
        self.blake3 = Some(blake3.into());
        self
    }
}

impl Subject {
    /// A subject named `name` with `digest`.
    pub fn new(name: impl Into<String>, digest: DigestSet) -> Self {
        Self {
            name: name.into(),
            digest,
        }
    }
}

impl Statement {
    /// Builds and checks a statement. `predicate` must be a JSON object.
    pub fn new(
        subject: Vec<Subject>,
        predicate_type: impl Into<String>,
        predicate: Value,
    ) -> Result<Self, StatementError> {
        let Value::Object(predicate) = predicate else {
            return Err(StatementError::PredicateNotObject);
        };
        let statement = Self {
            subject,
            predicate_type: predicate_type.into(),
            predicate,
        };
        statement.check()?;
        Ok(statement)
    }

    /// Parses and checks statement JSON. Formatting is free (the bytes need
    /// not be canonical), but duplicate member names are rejected.
    pub fn parse(bytes: &[u8]) -> Result<Self, StatementError> {
        let value = canonical::parse_strict(bytes).map_err(|err| StatementError::Json {
            detail: err.to_string(),
        })?;
        let raw: RawStatement =
            serde_json::from_value(value).map_err(|err| StatementError::Json {
                detail: err.to_string(),
            })?;
        if raw.type_ != STATEMENT_TYPE_V1 {
            return Err(StatementError::WrongType { found: raw.type_ });
        }
        let mut subject = Vec::with_capacity(raw.subject.len());
        for (index, raw_subject) in raw.subject.into_iter().enumerate() {
            subject.push(raw_subject.into_subject(index)?);
        }
        Self::new(subject, raw.predicate_type, raw.predicate)
    }

    /// The subjects; never empty.
    pub fn subject(&self) -> &[Subject] {
        &self.subject
    }

    /// The predicate type URI.
    pub fn predicate_type(&self) -> &str {
        &self.predicate_type
    }

    /// The predicate object.
    pub fn predicate(&self) -> &Map<String, Value> {
        &self.predicate
    }

    /// The statement as a JSON value, `_type` included.
    pub fn to_value(&self) -> Value {
        let subject = self
            .subject
            .iter()
            .map(|s| {
                let mut digest = Map::new();
                digest.insert("sha256".to_owned(), Value::String(s.digest.sha256.clone()));
                if let Some(blake3) = &s.digest.blake3 {
                    digest.insert("blake3".to_owned(), Value::String(blake3.clone()));
                }
                let mut entry = Map::new();
                entry.insert("name".to_owned(), Value::String(s.name.clone()));
                entry.insert("digest".to_owned(), Value::Object(digest));
                Value::Object(entry)
            })
            .collect();
        let mut statement = Map::new();
        statement.insert(
            "_type".to_owned(),
            Value::String(STATEMENT_TYPE_V1.to_owned()),
        );
        statement.insert("subject".to_owned(), Value::Array(subject));
        statement.insert(
            "predicateType".to_owned(),
            Value::String(self.predicate_type.clone()),
        );
        statement.insert(
            "predicate".to_owned(),
            Value::Object(self.predicate.clone()),
        );
        Value::Object(statement)
    }

    /// The canonical JSON bytes of the statement (see [`crate::attest::canonical`]).
    /// Fails only if the predicate holds a non-integer or out-of-range
    /// number, or is nested too deeply.
    pub fn to_canonical_json(&self) -> Result<Vec<u8>, StatementError> {
        use canonical::{Step, write_object, write_string};
        // What `canonical::to_canonical_json(&self.to_value())` gives, without copying
        // the predicate into a new value first: members in canonical order (`_type`,
        // `predicate`, `predicateType`, `subject`; `digest`, `name`; `blake3`, `sha256`).
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(b"{\"_type\":");
        write_string(&mut out, STATEMENT_TYPE_V1);
        out.extend_from_slice(b",\"predicate\":");
        write_object(
            &mut out,
            &self.predicate,
            &mut vec![Step::Name("predicate")],
        )?;
        out.extend_from_slice(b",\"predicateType\":");
        write_string(&mut out, &self.predicate_type);
        out.extend_from_slice(b",\"subject\":[");
        for (index, subject) in self.subject.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"digest\":{");
            if let Some(blake3) = &subject.digest.blake3 {
                out.extend_from_slice(b"\"blake3\":");
                write_string(&mut out, blake3);
                out.push(b',');
            }
            out.extend_from_slice(b"\"sha256\":");
            write_string(&mut out, &subject.digest.sha256);
            out.extend_from_slice(b"},\"name\":");
            write_string(&mut out, &subject.name);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
        Ok(out)
    }

    /// Applies the checks in the module documentation.
    fn check(&self) -> Result<(), StatementError> {
        if self.subject.is_empty() {
            return Err(StatementError::NoSubjects);
        }
        for (index, subject) in self.subject.iter().enumerate() {
            if subject.name.is_empty() {
                return Err(StatementError::EmptySubjectName { index });
            }
            check_digest(index, &subject.name, "sha256", &subject.digest.sha256)?;
            if let Some(blake3) = &subject.digest.blake3 {
                check_digest(index, &subject.name, "blake3", blake3)?;
            }
        }
        if self.predicate_type.is_empty() {
            return Err(StatementError::EmptyPredicateType);
        }
        Ok(())
    }
}

/// Checks one digest is [`DIGEST_HEX_LEN`] lowercase hex digits.
fn check_digest(
    index: usize,
    name: &str,
    algorithm: &str,
    hex: &str,
) -> Result<(), StatementError> {
    let ok = hex.len() == DIGEST_HEX_LEN
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(StatementError::BadDigest {
            index,
            name: name.to_owned(),
            algorithm: algorithm.to_owned(),
        })
    }
}

/// Statement JSON as parsed, before the checks.
#[derive(Deserialize)]
struct RawStatement {
    /// Must be [`STATEMENT_TYPE_V1`].
    #[serde(rename = "_type")]
    type_: String,
    /// The subjects.
    subject: Vec<RawSubject>,
    /// The predicate type URI.
    #[serde(rename = "predicateType")]
    predicate_type: String,
    /// The predicate; must be an object.
    predicate: Value,
}

/// Subject JSON as parsed, before the checks.
#[derive(Deserialize)]
struct RawSubject {
    /// The artifact name.
    name: String,
    /// Algorithm name to hex digest.
    digest: Map<String, Value>,
}

impl RawSubject {
    /// Checks the digest algorithms and types and builds a [`Subject`].
    fn into_subject(self, index: usize) -> Result<Subject, StatementError> {
        let mut sha256 = None;
        let mut blake3 = None;
        for (algorithm, value) in self.digest {
            let slot = match algorithm.as_str() {
                "sha256" => &mut sha256,
                "blake3" => &mut blake3,
                _ => {
                    return Err(StatementError::UnsupportedDigest {
                        index,
                        name: self.name,
                        algorithm,
                    });
                }
            };
            let Value::String(hex) = value else {
                return Err(StatementError::BadDigest {
                    index,
                    name: self.name,
                    algorithm,
                });
            };
            *slot = Some(hex);
        }
        let Some(sha256) = sha256 else {
            return Err(StatementError::MissingSha256 {
                index,
                name: self.name,
            });
        };
        Ok(Subject {
            name: self.name,
            digest: DigestSet { sha256, blake3 },
        })
    }
}

/// A statement whose envelope verified, with the trusted key that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedStatement {
    /// The statement parsed from the verified bytes.
    pub statement: Statement,
    /// The exact verified bytes it was parsed from.
    pub body: Vec<u8>,
    /// The index in the trusted list of the key that verified.
    pub key_index: usize,
    /// That trusted key's id.
    pub keyid: String,
}

/// Signs `statement`'s canonical JSON in a DSSE envelope of type
/// [`IN_TOTO_PAYLOAD_TYPE`].
pub fn sign_statement(
    statement: &Statement,
    key: &ed25519_dalek::SigningKey,
    keyid: Option<&str>,
) -> Result<Envelope, StatementError> {
    let body = statement.to_canonical_json()?;
    Ok(envelope::sign(IN_TOTO_PAYLOAD_TYPE, &body, key, keyid))
}

/// Verifies an in-toto envelope and parses the statement from exactly the
/// verified bytes.
pub fn verify_statement(
    envelope_bytes: &[u8],
    trusted: &[TrustedKey],
) -> Result<VerifiedStatement, StatementError> {
    let verified = envelope::verify(envelope_bytes, IN_TOTO_PAYLOAD_TYPE, trusted)?;
    let statement = Statement::parse(&verified.body)?;
    Ok(VerifiedStatement {
        statement,
        body: verified.body,
        key_index: verified.key_index,
        keyid: verified.keyid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;
    use serde_json::json;

    const SHA: &str = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";
    const BLAKE: &str = "d74981efa70a0c880b8d8c1985d075dbcbf679b99a5f9914e5aaf96b831a9e24";

    fn example() -> Statement {
        Statement::new(
            vec![Subject::new(
                "src/lib.rs",
                DigestSet::sha256(SHA).with_blake3(BLAKE),
            )],
            "https://proofgraph.dev/receipt/v1",
            json!({"claims": [{"id": "c1", "ok": true}], "count": 1}),
        )
        .expect("valid")
    }

    #[test]
    fn canonical_bytes_are_exact() {
        let bytes = example().to_canonical_json().expect("canonical");
        let expected = format!(
            "{{\"_type\":\"https://in-toto.io/Statement/v1\",\
             \"predicate\":{{\"claims\":[{{\"id\":\"c1\",\"ok\":true}}],\"count\":1}},\
             \"predicateType\":\"https://proofgraph.dev/receipt/v1\",\
             \"subject\":[{{\"digest\":{{\"blake3\":\"{BLAKE}\",\"sha256\":\"{SHA}\"}},\
             \"name\":\"src/lib.rs\"}}]}}"
        );
        assert_eq!(String::from_utf8(bytes).expect("utf8"), expected);
    }

    #[test]
    fn the_direct_encoding_is_the_canonical_encoding_of_the_value() {
        let statements = [
            example(),
            Statement::new(
                vec![
                    Subject::new("b", DigestSet::sha256(SHA)),
                    Subject::new("a \"quoted\"\n", DigestSet::sha256(SHA).with_blake3(BLAKE)),
                ],
                "https://example.com/p\u{e9}",
                json!({"z": [1, -2, {"\u{1f600}": null, "\u{ff61}": "x", "\u{7f}": "\u{1}"}], "a": {"y": false, "b": "\\/"}, "": 9_007_199_254_740_991_u64}),
            )
            .expect("valid"),
        ];
        for statement in statements {
            let direct = statement.to_canonical_json().expect("direct");
            let generic = canonical::to_canonical_json(&statement.to_value()).expect("generic");
            assert_eq!(
                String::from_utf8(direct).expect("utf8"),
                String::from_utf8(generic).expect("utf8")
            );
        }
        // A number without a canonical form is refused at its place in the predicate.
        let bad = Statement::new(
            vec![Subject::new("a", DigestSet::sha256(SHA))],
            "t",
            json!({"runs": [{"ratio": 0.5}]}),
        )
        .expect("valid");
        let err = bad.to_canonical_json().expect_err("a float is refused");
        assert!(err.to_string().contains("/predicate/runs/0/ratio"), "{err}");
    }

    #[test]
    fn parse_round_trips_and_ignores_formatting() {
        let statement = example();
        let bytes = statement.to_canonical_json().expect("canonical");
        assert_eq!(Statement::parse(&bytes).expect("parses"), statement);
        let pretty = serde_json::to_vec_pretty(&statement.to_value()).expect("pretty");
        assert_eq!(Statement::parse(&pretty).expect("parses"), statement);
    }

    #[test]
    fn parse_ignores_unknown_members() {
        let mut value = example().to_value();
        value["subject"][0]["uri"] = "file:///x".into();
        value["extra"] = json!(1);
        let bytes = serde_json::to_vec(&value).expect("json");
        assert_eq!(Statement::parse(&bytes).expect("parses"), example());
    }

    fn parse_edited(f: impl FnOnce(&mut Value)) -> StatementError {
        let mut value = example().to_value();
        f(&mut value);
        let bytes = serde_json::to_vec(&value).expect("json");
        Statement::parse(&bytes).expect_err("rejected")
    }

    #[test]
    fn rejects_each_broken_rule() {
        let err = parse_edited(|v| v["_type"] = "https://in-toto.io/Statement/v0.1".into());
        assert!(matches!(err, StatementError::WrongType { .. }), "{err}");
        let err = parse_edited(|v| v["_type"] = "https://in-toto.io/Statement/v1/".into());
        assert!(matches!(err, StatementError::WrongType { .. }), "{err}");
        let err = parse_edited(|v| v["subject"] = json!([]));
        assert_eq!(err, StatementError::NoSubjects);
        let err = parse_edited(|v| v["subject"][0]["name"] = "".into());
        assert_eq!(err, StatementError::EmptySubjectName { index: 0 });
        let err = parse_edited(|v| v["subject"][0]["digest"] = json!({"blake3": BLAKE}));
        assert!(matches!(err, StatementError::MissingSha256 { .. }), "{err}");
        let upper = SHA.to_uppercase();
        let err = parse_edited(|v| v["subject"][0]["digest"]["sha256"] = upper.into());
        assert_eq!(
            err.to_string(),
            "accept in-toto statement: the sha256 digest of subject 0 (\"src/lib.rs\") is not 64 \
             lowercase hex digits"
        );
        let err = parse_edited(|v| v["subject"][0]["digest"]["sha256"] = SHA[..63].into());
        assert!(matches!(err, StatementError::BadDigest { .. }), "{err}");
        let err =
            parse_edited(|v| v["subject"][0]["digest"]["blake3"] = format!("{BLAKE}0").into());
        assert!(matches!(err, StatementError::BadDigest { .. }), "{err}");
        let err = parse_edited(|v| v["subject"][0]["digest"]["sha256"] = json!(5));
        assert!(matches!(err, StatementError::BadDigest { .. }), "{err}");
        let err = parse_edited(|v| v["subject"][0]["digest"]["sha512"] = "00".into());
        assert!(
            matches!(err, StatementError::UnsupportedDigest { .. }),
            "{err}"
        );
        let err = parse_edited(|v| v["predicateType"] = "".into());
        assert_eq!(err, StatementError::EmptyPredicateType);
        let err = parse_edited(|v| v["predicate"] = json!([1]));
        assert_eq!(err, StatementError::PredicateNotObject);
        let err = parse_edited(|v| {
            v.as_object_mut().map(|o| o.remove("predicate"));
        });
        assert!(matches!(err, StatementError::Json { .. }), "{err}");
        let err = parse_edited(|v| {
            v.as_object_mut().map(|o| o.remove("_type"));
        });
        assert!(matches!(err, StatementError::Json { .. }), "{err}");
    }

    #[test]
    fn rejects_duplicate_members_anywhere() {
        let bytes = example().to_canonical_json().expect("canonical");
        let text = String::from_utf8(bytes).expect("utf8");
        let twice = text.replacen("\"count\":1", "\"count\":1,\"count\":2", 1);
        assert!(matches!(
            Statement::parse(twice.as_bytes()),
            Err(StatementError::Json { .. })
        ));
        let subject_twice = text.replacen("\"subject\":", "\"subject\":[],\"subject\":", 1);
        assert!(Statement::parse(subject_twice.as_bytes()).is_err());
    }

    #[test]
    fn build_checks_too() {
        assert_eq!(
            Statement::new(vec![], "t", json!({})),
            Err(StatementError::NoSubjects)
        );
        assert_eq!(
            Statement::new(
                vec![Subject::new("a", DigestSet::sha256(SHA))],
                "t",
                json!(null)
            ),
            Err(StatementError::PredicateNotObject)
        );
        let float = Statement::new(
            vec![Subject::new("a", DigestSet::sha256(SHA))],
            "t",
            json!({"x": 0.5}),
        )
        .expect("valid");
        assert!(matches!(
            float.to_canonical_json(),
            Err(StatementError::Canonical(_))
        ));
    }

    #[test]
    fn sign_and_verify_statement() {
        let key = SigningKey::from_bytes(&[5; 32]);
        let envelope = sign_statement(&example(), &key, None).expect("signs");
        let trusted = [TrustedKey::new(key.verifying_key())];
        let verified = verify_statement(envelope.to_json().as_bytes(), &trusted).expect("verifies");
        assert_eq!(verified.statement, example());
        assert_eq!(
            verified.body,
            example().to_canonical_json().expect("canonical")
        );
        assert_eq!(verified.key_index, 0);

        let other = envelope::sign("application/json", b"{}", &key, None);
        let err = verify_statement(other.to_json().as_bytes(), &trusted).expect_err("type");
        assert!(matches!(
            err,
            StatementError::Envelope(VerifyError::PayloadType { .. })
        ));

        let not_statement = envelope::sign(IN_TOTO_PAYLOAD_TYPE, b"{}", &key, None);
        let err = verify_statement(not_statement.to_json().as_bytes(), &trusted).expect_err("body");
        assert!(matches!(err, StatementError::Json { .. }), "{err}");
    }
}
