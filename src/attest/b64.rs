//! Base64 as DSSE uses it.
//!
//! Encoding always produces standard base64 (RFC 4648 section 4) with
//! padding, the form every DSSE implementation reads (securesystemslib, for
//! one, requires the padding).
//!
//! Decoding follows the DSSE rule that verifiers accept either alphabet:
//!
//! - the standard alphabet (`+` and `/`) or the URL-safe one (`-` and `_`),
//!   but not both in one string;
//! - with canonical `=` padding or with none (padding, when present, must be
//!   exactly what the length needs);
//! - no whitespace, line breaks or other characters anywhere;
//! - the unused low bits of the last character must be zero, so every byte
//!   string has exactly one padded and one unpadded spelling per alphabet.
//!
//! The empty string decodes to no bytes.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Decoding accepts padded and unpadded input; encoding pads.
const LENIENT_PADDING: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_encode_padding(true)
    .with_decode_allow_trailing_bits(false)
    .with_decode_padding_mode(DecodePaddingMode::Indifferent);

/// The standard alphabet, padding optional on decode.
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT_PADDING);

/// The URL-safe alphabet, padding optional on decode.
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT_PADDING);

/// Text that is not base64 in either DSSE alphabet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("decode base64: {problem}")]
pub struct Base64Error {
    /// What is wrong with the text, as a lowercase fragment.
    pub problem: String,
}

/// Encodes `bytes` as standard base64 with padding.
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes standard or URL-safe base64, with or without padding.
pub fn decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    let url_safe = text.bytes().any(|b| b == b'-' || b == b'_');
    let standard = text.bytes().any(|b| b == b'+' || b == b'/');
    if url_safe && standard {
        return Err(Base64Error {
            problem: "it mixes the standard (+ /) and URL-safe (- _) alphabets".to_owned(),
        });
    }
    let engine = if url_safe { &URL_SAFE } else { &STANDARD };
    engine.decode(text).map_err(|err| Base64Error {
        problem: describe(&err, url_safe),
    })
}

/// Turns a decoder error into a lowercase fragment.
fn describe(err: &base64::DecodeError, url_safe: bool) -> String {
    let alphabet = if url_safe { "URL-safe" } else { "standard" };
    match err {
        base64::DecodeError::InvalidByte(offset, byte) => {
            format!(
                "byte {offset} ({}) is not in the {alphabet} alphabet",
                show_byte(*byte)
            )
        }
        base64::DecodeError::InvalidLength(len) => {
            format!("{len} base64 symbols cannot encode whole bytes")
        }
        base64::DecodeError::InvalidLastSymbol(offset, byte) => format!(
            "the last symbol {} at byte {offset} has non-zero unused bits",
            show_byte(*byte)
        ),
        base64::DecodeError::InvalidPadding => "the `=` padding is wrong".to_owned(),
    }
}

/// Shows one input byte safely in a message.
fn show_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("`{}`", char::from(byte))
    } else {
        format!("0x{byte:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};
    use proptest::prelude::*;

    #[test]
    fn accepts_all_four_spellings() {
        let bytes = [0xfb, 0xff, 0xbf, 0x3e, 0x3f];
        for text in ["+/+/Pj8=", "+/+/Pj8", "-_-_Pj8=", "-_-_Pj8"] {
            assert_eq!(decode(text).expect(text), bytes, "{text}");
        }
        assert_eq!(encode(&bytes), "+/+/Pj8=");
    }

    #[test]
    fn empty_is_empty() {
        assert_eq!(decode("").expect("empty"), Vec::<u8>::new());
        assert_eq!(encode(&[]), "");
    }

    #[test]
    fn rejects_mixed_alphabets() {
        let err = decode("+_+_Pj8=").expect_err("mixed");
        assert!(err.to_string().contains("mixes"), "{err}");
    }

    #[test]
    fn rejects_whitespace_and_line_breaks() {
        for text in [
            "aGVs bG8=",
            "aGVs\nbG8=",
            " aGVsbG8=",
            "aGVsbG8=\n",
            "aGVsbG8=\r\n",
        ] {
            assert!(decode(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn rejects_bad_padding_and_lengths() {
        for text in [
            "aGk===",
            "aGk=a",
            "a",
            "aGVsbG8==",
            "=",
            "aG=k",
            "aGVsbG8==",
        ] {
            assert!(decode(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn rejects_non_zero_trailing_bits() {
        // "aGk=" is "hi"; "aGl=" differs only in the unused low bits.
        assert_eq!(decode("aGk=").expect("hi"), b"hi");
        let err = decode("aGl=").expect_err("trailing bits");
        assert!(err.to_string().contains("unused bits"), "{err}");
    }

    #[test]
    fn messages_read_after_failed_to() {
        let err = decode("a$b=").expect_err("bad byte");
        assert_eq!(
            err.to_string(),
            "decode base64: byte 1 (`$`) is not in the standard alphabet"
        );
    }

    proptest! {
        #![proptest_config(crate::attest::testing::beside_source(proptest::test_runner::Config::default()))]
        #[test]
        fn every_spelling_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let padded = encode(&bytes);
            let unpadded = padded.trim_end_matches('=').to_owned();
            let url = padded.replace('+', "-").replace('/', "_");
            let url_unpadded = unpadded.replace('+', "-").replace('/', "_");
            for text in [padded, unpadded, url, url_unpadded] {
                prop_assert_eq!(decode(&text).expect("round trip"), bytes.clone());
            }
        }
    }
}
