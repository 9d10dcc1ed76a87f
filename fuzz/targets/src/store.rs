//! Fuzz target `store`: any bytes as the two spellings of a store entry (action-cache
//! entries and refs): a regular file's content, as the store writes them, and a symbolic
//! link's target, as earlier versions wrote them (still read).
//!
//! Invariants: whatever an entry decodes to is a SHA-256 in lowercase hex; a link target
//! has one spelling (decoding then encoding gives back the same bytes), so two entries
//! that name the same blob are the same entry; a file entry is the digest and whitespace;
//! any digest, written as a link or as the file the store writes, reads back as itself.

use proofgraph::store;

/// Runs one input; panics when an invariant does not hold.
pub fn run(data: &[u8]) {
    if let Some(hex) = store::decode_link_target(data) {
        assert!(store::is_sha256_hex(&hex), "a link decoded to `{hex}`");
        assert_eq!(
            store::pointer_target(&hex).as_deref().map(str::as_bytes),
            Some(data),
            "a second spelling of the link to {hex}"
        );
    }
    if let Some(hex) = store::decode_entry_file(data) {
        assert!(store::is_sha256_hex(&hex), "a file decoded to `{hex}`");
        let text = std::str::from_utf8(data).expect("it decoded, so it is text");
        assert_eq!(text.trim(), hex, "the file holds more than the digest");
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let candidate = text.trim();
    match store::pointer_target(candidate) {
        Some(target) => {
            assert!(store::is_sha256_hex(candidate));
            assert_eq!(target.len(), 50, "a link target is 50 bytes");
            assert_eq!(
                store::decode_link_target(target.as_bytes()).as_deref(),
                Some(candidate)
            );
            assert_eq!(store::decode_entry_file(data).as_deref(), Some(candidate));
            let digest = store::Sha256::parse(candidate).expect("64 lowercase hex digits");
            assert_eq!(
                store::decode_entry_file(store::entry_file(&digest).as_bytes()).as_deref(),
                Some(candidate),
                "what the store writes for {candidate} reads back as another digest"
            );
        }
        None => assert!(!store::is_sha256_hex(candidate)),
    }
}
