//! A git object's id as a receipt names one (the tree of the files it bound, the commit
//! checked out when it was recorded): 40 (SHA-1) or 64 (SHA-256) lowercase hex digits,
//! validated when read and serialized as that text, so receipts read as they always did
//! and one whose id breaks the grammar is not a receipt.

use std::fmt;

/// A git object id, as lowercase hex.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GitId(Box<str>);

/// Why text is not a git object id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("read `{text}` as a git object id (40 or 64 lowercase hex digits)")]
pub struct GitIdError {
    /// The text, cut to 80 characters.
    pub text: String,
}

impl GitId {
    /// Parses 40 or 64 lowercase hex digits.
    pub fn parse(text: &str) -> Result<Self, GitIdError> {
        let hex = text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if hex && (text.len() == 40 || text.len() == 64) {
            Ok(Self(text.into()))
        } else {
            Err(GitIdError {
                text: text.chars().take(80).collect(),
            })
        }
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as gix knows it (`None` for a SHA-256 id this build of gix cannot hold).
    pub fn to_gix(&self) -> Option<gix::ObjectId> {
        gix::ObjectId::from_hex(self.0.as_bytes()).ok()
    }
}

impl From<gix::ObjectId> for GitId {
    fn from(id: gix::ObjectId) -> Self {
        Self(id.to_hex().to_string().into())
    }
}

impl fmt::Display for GitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for GitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GitId({})", self.0)
    }
}

impl serde::Serialize for GitId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for GitId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lowercase_sha1_and_sha256_ids_are_ids() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        let sha256 = "ab".repeat(32);
        for good in [sha1, sha256.as_str()] {
            let id = GitId::parse(good).expect("an id");
            assert_eq!(id.as_str(), good);
            let json = serde_json::to_string(&id).expect("serializes");
            assert_eq!(json, format!("\"{good}\""));
            assert_eq!(serde_json::from_str::<GitId>(&json).expect("reads"), id);
        }
        for bad in [
            "",
            &sha1[..39],
            &format!("{sha1}0"),
            &sha1.to_uppercase(),
            "g123456789abcdef0123456789abcdef01234567",
            &"ab".repeat(31),
            "HEAD",
        ] {
            assert!(GitId::parse(bad).is_err(), "{bad}");
            assert!(
                serde_json::from_value::<GitId>(serde_json::Value::from(bad)).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_gix_id_is_the_same_id() {
        let id =
            gix::ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").expect("an id");
        let ours = GitId::from(id);
        assert_eq!(ours.as_str(), "0123456789abcdef0123456789abcdef01234567");
        assert_eq!(ours.to_gix(), Some(id));
    }
}
