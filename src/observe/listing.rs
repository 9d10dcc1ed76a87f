//! The input listing a receipt binds (`Proof::inputs`): the files a provider read, one
//! record each — `repo:path`, a tab, the file's identity as 64 lowercase hex digits, a
//! newline — in the order of the provider's file list (sorted). Written and read here
//! only, so the format has one definition: receipts store its SHA-256, so its bytes never
//! change.
//!
//! Names are not escaped (the format predates this type, and the receipts that bind it
//! must keep verifying). A name may hold a tab or a newline — git allows both — so a
//! record ends at the first tab followed by 64 lowercase hex digits and a newline, not at
//! the first tab or newline: every name reads back but one that itself holds such a
//! sequence, which no name a person or tool writes does. Names are UTF-8: a file whose
//! name is not stops the observation before a listing is made (`input_name_not_utf8`).

use std::collections::BTreeMap;

use proofgraph_graph::fingerprint::Digest;

/// The width of an identity in a record.
const HEX: usize = 64;

/// Why bytes are not a listing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingError {
    /// A record does not end with a tab, an identity and a newline.
    #[error("read the input listing: the record at byte {at} does not end in an identity")]
    Unterminated {
        /// Where the record starts.
        at: usize,
    },
    /// A record's name is not UTF-8.
    #[error("read the input listing: the name at byte {at} is not UTF-8")]
    NotUtf8 {
        /// Where the record starts.
        at: usize,
    },
}

/// An input listing: each file (`repo:path`) and its identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    files: BTreeMap<String, Digest>,
}

impl Listing {
    /// The listing's bytes for `files` (`repo:path` and identity), in their order.
    pub fn write(files: &[(String, Digest)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(files.len() * (HEX + 32));
        for (path, id) in files {
            out.extend_from_slice(path.as_bytes());
            out.push(b'\t');
            out.extend_from_slice(&id.hex_array());
            out.push(b'\n');
        }
        out
    }

    /// The listing of `files`, as [`Listing::parse`] reads what [`Listing::write`] wrote
    /// of them.
    pub fn of(files: &[(String, Digest)]) -> Self {
        Self {
            files: files.iter().map(|(p, id)| (p.clone(), *id)).collect(),
        }
    }

    /// Reads a listing's bytes. A name listed twice keeps its last identity.
    pub fn parse(bytes: &[u8]) -> Result<Self, ListingError> {
        let mut files = BTreeMap::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = record_end(bytes, at).ok_or(ListingError::Unterminated { at })?;
            let name =
                std::str::from_utf8(&bytes[at..end]).map_err(|_| ListingError::NotUtf8 { at })?;
            let hex = std::str::from_utf8(&bytes[end + 1..end + 1 + HEX])
                .expect("checked to be hex digits");
            let id = Digest::from_hex(hex).expect("checked to be 64 hex digits");
            files.insert(name.to_owned(), id);
            at = end + HEX + 2;
        }
        Ok(Self { files })
    }

    /// The identity listed for `scoped` (`repo:path`).
    pub fn get(&self, scoped: &str) -> Option<&Digest> {
        self.files.get(scoped)
    }

    /// Whether `scoped` (`repo:path`) is listed.
    pub fn contains(&self, scoped: &str) -> bool {
        self.files.contains_key(scoped)
    }

    /// Every file (`repo:path`) and its identity, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Digest)> {
        self.files.iter().map(|(p, id)| (p.as_str(), id))
    }

    /// The files of repository `repo`: each path (within it) and identity.
    pub fn in_repo<'a>(&'a self, repo: &'a str) -> impl Iterator<Item = (&'a str, &'a Digest)> {
        self.iter().filter_map(move |(scoped, id)| {
            let path = scoped.strip_prefix(repo)?.strip_prefix(':')?;
            Some((path, id))
        })
    }

    /// How many files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is listed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Where the record starting at `at` ends its name: the first tab followed by 64
/// lowercase hex digits and a newline.
fn record_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut from = at;
    loop {
        let tab = from + bytes[from..].iter().position(|b| *b == b'\t')?;
        let digits = bytes.get(tab + 1..tab + 1 + HEX)?;
        if bytes.get(tab + 1 + HEX) == Some(&b'\n')
            && digits
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        {
            return Some(tab);
        }
        from = tab + 1;
    }
}

#[cfg(test)]
impl Listing {
    /// For tests: the listing of `files`, each name's identity 32 bytes of its number.
    pub(crate) fn filled(files: &[(&str, u8)]) -> Self {
        Self {
            files: files
                .iter()
                .map(|(p, d)| ((*p).to_owned(), Digest([*d; 32])))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn files(names: &[&str]) -> Vec<(String, Digest)> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| ((*n).to_owned(), Digest::of(&[i as u8])))
            .collect()
    }

    #[test]
    fn the_bytes_are_the_ones_receipts_always_bound() {
        let written = Listing::write(&[
            ("app:src/a.rs".to_owned(), Digest([0x01; 32])),
            ("web:index.html".to_owned(), Digest([0xab; 32])),
        ]);
        let expected = format!(
            "app:src/a.rs\t{}\nweb:index.html\t{}\n",
            "01".repeat(32),
            "ab".repeat(32)
        );
        assert_eq!(String::from_utf8(written).expect("utf-8"), expected);
        assert_eq!(Listing::write(&[]), b"");
    }

    #[test]
    fn names_with_tabs_and_newlines_read_back() {
        let files = files(&["app:a\tb", "app:line\nbreak", "app:tab\t\tend\t", "web:x"]);
        let listing = Listing::parse(&Listing::write(&files)).expect("reads");
        assert_eq!(listing, Listing::of(&files));
        assert_eq!(listing.get("app:a\tb"), Some(&files[0].1));
        assert_eq!(
            listing.in_repo("app").map(|(p, _)| p).collect::<Vec<_>>(),
            ["a\tb", "line\nbreak", "tab\t\tend\t"]
        );
        assert_eq!(
            listing.in_repo("ap").count(),
            0,
            "a prefix of a name is not it"
        );
    }

    #[test]
    fn what_is_not_a_listing_is_refused() {
        let good = Listing::write(&files(&["app:a"]));
        // Cut anywhere inside the record.
        for cut in 1..good.len() {
            assert_eq!(
                Listing::parse(&good[..cut]),
                Err(ListingError::Unterminated { at: 0 }),
                "{cut}"
            );
        }
        // An identity in capitals, or too short, ends no record.
        let upper = format!("app:a\t{}\n", "AB".repeat(32));
        assert!(Listing::parse(upper.as_bytes()).is_err());
        let short = format!("app:a\t{}\n", "ab".repeat(31));
        assert!(Listing::parse(short.as_bytes()).is_err());
        let mut not_utf8 = b"app:\xff".to_vec();
        not_utf8.extend_from_slice(&good[5..]);
        assert_eq!(
            Listing::parse(&not_utf8),
            Err(ListingError::NotUtf8 { at: 0 })
        );
        assert_eq!(Listing::parse(b""), Ok(Listing::default()));
    }

    proptest! {
        /// Whatever files a provider reads, the listing written of them reads back as
        /// those files (names with tabs, newlines and any UTF-8 included).
        #[test]
        fn write_then_parse_is_identity(
            named in proptest::collection::btree_map(
                "[a-z]{1,6}:[a-z0-9/. \t\n\r\\\\é漢\u{1F600}]{0,24}",
                any::<[u8; 32]>(),
                0..12,
            )
        ) {
            let files: Vec<(String, Digest)> =
                named.into_iter().map(|(n, d)| (n, Digest(d))).collect();
            let bytes = Listing::write(&files);
            let listing = Listing::parse(&bytes).expect("a written listing reads");
            prop_assert_eq!(&listing, &Listing::of(&files));
            prop_assert_eq!(listing.len(), files.len());
            let back: Vec<(String, Digest)> =
                listing.iter().map(|(n, d)| (n.to_owned(), *d)).collect();
            prop_assert_eq!(Listing::write(&back), bytes);
        }
    }
}
