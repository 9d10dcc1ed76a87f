//! The DSSE v1 pre-authentication encoding (PAE).
//!
//! DSSE signs `PAE(UTF8(payloadType), body)`, never the body alone, so a
//! signature binds the payload type as well as the bytes:
//!
//! ```text
//! PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
//! SP              = one ASCII space (0x20)
//! LEN(s)          = the byte length of s in ASCII decimal, no leading zeros
//! ```
//!
//! `LEN(type)` counts UTF-8 bytes, not characters. Source: the DSSE protocol
//! (`protocol.md` in secure-systems-lab/dsse), whose example is
//! `DSSEv1 29 http://example.com/HelloWorld 11 hello world`.

/// The fixed prefix of every DSSE v1 PAE.
const PREFIX: &[u8] = b"DSSEv1";

/// Builds the DSSE v1 pre-authentication encoding of `payload_type` and
/// `body`: the exact bytes an Ed25519 signature covers.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let type_bytes = payload_type.as_bytes();
    let type_len = type_bytes.len().to_string();
    let body_len = body.len().to_string();
    let mut out = Vec::with_capacity(
        PREFIX.len() + 4 + type_len.len() + type_bytes.len() + body_len.len() + body.len(),
    );
    out.extend_from_slice(PREFIX);
    out.push(b' ');
    out.extend_from_slice(type_len.as_bytes());
    out.push(b' ');
    out.extend_from_slice(type_bytes);
    out.push(b' ');
    out.extend_from_slice(body_len.as_bytes());
    out.push(b' ');
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::pae;

    #[test]
    fn matches_the_dsse_protocol_example() {
        // secure-systems-lab/dsse protocol.md, "Test Vectors".
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn empty_type_and_body_keep_every_separator() {
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn type_length_counts_utf8_bytes() {
        // "ä" is two bytes, so 28 characters are 29 bytes.
        let out = pae("application/vnd.exämple+json", b"{}");
        assert_eq!(
            out,
            "DSSEv1 29 application/vnd.exämple+json 2 {}".as_bytes()
        );
    }

    #[test]
    fn lengths_have_no_leading_zeros_and_bodies_are_raw_bytes() {
        let body = vec![0u8; 100];
        let out = pae("t", &body);
        let mut expected = b"DSSEv1 1 t 100 ".to_vec();
        expected.extend_from_slice(&body);
        assert_eq!(out, expected);
    }
}
