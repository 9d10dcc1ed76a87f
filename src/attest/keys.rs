//! Ed25519 keys: generation, PEM files, key ids, and clear import errors.
//!
//! - Private keys are PKCS#8 v1 `PrivateKeyInfo` (RFC 8410) in PEM with the
//!   label `PRIVATE KEY`, the form `openssl genpkey -algorithm ed25519`
//!   writes. Reading also accepts PKCS#8 v2 (`OneAsymmetricKey` with the
//!   public key embedded) and then checks that the embedded public key
//!   belongs to the private key.
//! - Public keys are X.509 `SubjectPublicKeyInfo` (RFC 8410) in PEM with the
//!   label `PUBLIC KEY`, the form `openssl pkey -pubout` writes.
//! - A key id is `sha256:` followed by the lowercase hex SHA-256 of the
//!   public key's SubjectPublicKeyInfo DER (44 bytes for Ed25519).
//!
//! Both encodings are fixed-size for Ed25519, so they are written from the
//! fixed DER prefixes below and cannot fail; the tests check the prefixes
//! against the `pkcs8`/`spki` encoders and against OpenSSL.
//!
//! PEM reading trims surrounding whitespace and the whitespace around each
//! line, accepts LF or CRLF line ends and base64 lines of any width, and
//! turns the usual pasting mistakes into distinct errors: a private key
//! where a public key belongs (and the reverse), a literal `\n` instead of
//! line breaks, a PEM squashed onto one line, a key of another algorithm
//! (RSA, ECDSA, Ed448, ...), an encrypted private key, a bare base64 or
//! OpenSSH key without PEM armour. Error messages never include key bytes.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ed25519_dalek::pkcs8::spki::EncodePublicKey as _;
use ed25519_dalek::pkcs8::spki::SubjectPublicKeyInfoRef;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::spki::der::zeroize::Zeroizing;
use ed25519_dalek::pkcs8::{EncodePrivateKey as _, KeypairBytes, ObjectIdentifier, PrivateKeyInfo};
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

/// The DER of an Ed25519 SubjectPublicKeyInfo up to the 32 key bytes:
/// `SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits) }` (what the
/// tests hold the `pkcs8` encoders to).
#[cfg(test)]
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The DER of an Ed25519 PKCS#8 v1 PrivateKeyInfo up to the 32 seed bytes:
/// `SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING {
/// OCTET STRING } }`.
#[cfg(test)]
const PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The PEM label of a SubjectPublicKeyInfo.
const PUBLIC_LABEL: &str = "PUBLIC KEY";

/// The PEM label of an unencrypted PKCS#8 private key.
const PRIVATE_LABEL: &str = "PRIVATE KEY";

/// id-Ed25519 (RFC 8410).
const ED25519_OID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// PEM base64 bodies are encoded strictly: standard alphabet, canonical
/// padding, zero trailing bits.
const PEM_BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Which half of a key pair an operation was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A public key (SubjectPublicKeyInfo, `PUBLIC KEY`).
    Public,
    /// A private key (PKCS#8, `PRIVATE KEY`).
    Private,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyKind::Public => "public key",
            KeyKind::Private => "private key",
        })
    }
}

/// A key that could not be generated, read, decoded or written.
///
/// Every message reads after "failed to" and never contains key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The operating system's random number generator failed.
    #[error("generate an Ed25519 key: the system random number generator failed: {detail}")]
    Generate {
        /// The generator's error.
        detail: String,
    },
    /// The text has a two-character `\n` escape where line breaks belong.
    #[error(
        "read {kind}: the key contains a literal \\n; use a YAML block scalar or real newlines"
    )]
    LiteralNewline {
        /// What was being read.
        kind: KeyKind,
    },
    /// A private key was given where a public key was expected.
    #[error(
        "read public key: this is a private key (-----BEGIN {label}-----); give the public key \
         (-----BEGIN PUBLIC KEY-----) and keep the private key secret"
    )]
    PrivateKeyGiven {
        /// The PEM label found.
        label: String,
    },
    /// A public key was given where a private key was expected.
    #[error(
        "read private key: this is a public key (-----BEGIN {label}-----); signing needs the \
         private key (-----BEGIN PRIVATE KEY-----)"
    )]
    PublicKeyGiven {
        /// The PEM label found.
        label: String,
    },
    /// The text is not a single well-formed PEM block.
    #[error("read {kind}: malformed PEM: {problem}")]
    MalformedPem {
        /// What was being read.
        kind: KeyKind,
        /// What is wrong, as a lowercase fragment.
        problem: String,
    },
    /// A PEM block with a label this kind of key never has.
    #[error("read {kind}: expected -----BEGIN {expected}-----, found -----BEGIN {found}-----")]
    UnexpectedLabel {
        /// What was being read.
        kind: KeyKind,
        /// The label that was expected.
        expected: &'static str,
        /// The label found.
        found: String,
    },
    /// The PEM body is not the DER structure its label promises.
    #[error("read {kind}: the PEM body is not a valid {structure}: {detail}")]
    MalformedDer {
        /// What was being read.
        kind: KeyKind,
        /// The ASN.1 structure that was expected.
        structure: &'static str,
        /// What the decoder said.
        detail: String,
    },
    /// A well-formed key of another algorithm.
    #[error("read {kind}: not an Ed25519 key (it is {algorithm})")]
    NotEd25519 {
        /// What was being read.
        kind: KeyKind,
        /// The algorithm found, as a noun phrase ("an RSA key").
        algorithm: String,
    },
    /// A public key that is a small-order point, which signs nothing securely.
    #[error("read public key: the key is a weak (small-order) Ed25519 point and cannot be trusted")]
    WeakKey,
    /// A PKCS#8 v2 private key whose embedded public key is not its own.
    #[error("read private key: the public key embedded in it does not belong to the private key")]
    MismatchedPublicKey,
    /// An encrypted PKCS#8 private key.
    #[error(
        "read private key: encrypted private keys are not supported; decrypt it first, e.g. \
         `openssl pkey -in encrypted.pem -out key.pem`"
    )]
    EncryptedPrivateKey,
    /// A key file that could not be read.
    #[error("read {kind} from {}: {detail}", path.display())]
    ReadFile {
        /// What was being read.
        kind: KeyKind,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        detail: String,
    },
    /// A key file that could not be written.
    #[error("write {kind} to {}: {detail}", path.display())]
    WriteFile {
        /// What was being written.
        kind: KeyKind,
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// A key read from a file was not acceptable.
    #[error("{error} (in {})", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What was wrong with its contents.
        error: Box<KeyError>,
    },
}

/// Generates a new Ed25519 signing key from the operating system's random
/// number generator.
pub fn generate_signing_key() -> Result<SigningKey, KeyError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(seed.as_mut()).map_err(|err| KeyError::Generate {
        detail: err.to_string(),
    })?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The SubjectPublicKeyInfo DER of `key` (44 bytes).
pub fn public_key_to_spki_der(key: &VerifyingKey) -> Vec<u8> {
    key.to_public_key_der()
        .expect("an Ed25519 public key always has a DER encoding")
        .into_vec()
}

/// `key` as a `-----BEGIN PUBLIC KEY-----` PEM block, LF line ends, with a
/// final newline.
pub fn public_key_to_pem(key: &VerifyingKey) -> String {
    key.to_public_key_pem(LineEnding::LF)
        .expect("an Ed25519 public key always has a PEM encoding")
}

/// A key id: the SHA-256 of an Ed25519 public key's SubjectPublicKeyInfo DER,
/// written `sha256:<64 lowercase hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId([u8; 32]);

impl KeyId {
    /// The id of `key`.
    pub fn of(key: &VerifyingKey) -> Self {
        Self(Sha256::digest(public_key_to_spki_der(key)).into())
    }

    /// Reads `sha256:<64 hex digits>` (either case). The error is a lowercase
    /// fragment saying what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let hex = text.strip_prefix("sha256:").ok_or_else(|| {
            format!("`{text}` is not a key id: it must start with `sha256:` (as `proofgraph key show` prints it)")
        })?;
        proofgraph_graph::fingerprint::decode_hex(hex)
            .map(Self)
            .ok_or_else(|| {
                format!("`{text}` is not a key id: `sha256:` must be followed by 64 hex digits")
            })
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", proofgraph_graph::fingerprint::hex(&self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for KeyId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The key id of `key`: `sha256:` and the lowercase hex SHA-256 of its
/// SubjectPublicKeyInfo DER ([`KeyId`], spelled out).
pub fn key_id(key: &VerifyingKey) -> String {
    KeyId::of(key).to_string()
}

/// `key` as a `-----BEGIN PRIVATE KEY-----` PKCS#8 v1 PEM block, LF line
/// ends, with a final newline. The text is wiped from memory when dropped.
pub fn signing_key_to_pem(key: &SigningKey) -> Zeroizing<String> {
    // v1 (the seed only), as every key proofgraph wrote before; `SigningKey`'s own encoder
    // would add the public key (v2).
    KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    }
    .to_pkcs8_pem(LineEnding::LF)
    .expect("an Ed25519 seed always has a PKCS#8 encoding")
}

/// Reads an Ed25519 public key from SubjectPublicKeyInfo PEM text.
pub fn public_key_from_pem(text: &str) -> Result<VerifyingKey, KeyError> {
    let kind = KeyKind::Public;
    let block = split_pem(text, kind)?;
    match block.label.as_str() {
        PUBLIC_LABEL => {}
        "RSA PUBLIC KEY" => {
            return Err(KeyError::NotEd25519 {
                kind,
                algorithm: "a PKCS#1 RSA key".to_owned(),
            });
        }
        label if label.contains(PRIVATE_LABEL) => {
            return Err(KeyError::PrivateKeyGiven {
                label: label.to_owned(),
            });
        }
        label => {
            return Err(KeyError::UnexpectedLabel {
                kind,
                expected: PUBLIC_LABEL,
                found: label.to_owned(),
            });
        }
    }
    let der = decode_body(&block, kind)?;
    let spki = SubjectPublicKeyInfoRef::try_from(der.as_slice()).map_err(|err| {
        KeyError::MalformedDer {
            kind,
            structure: "SubjectPublicKeyInfo",
            detail: lowercase_first(&err.to_string()),
        }
    })?;
    if spki.algorithm.oid != ED25519_OID {
        return Err(KeyError::NotEd25519 {
            kind,
            algorithm: describe_algorithm(spki.algorithm.oid, spki.algorithm.parameters_oid().ok()),
        });
    }
    let malformed = |detail: &str| KeyError::MalformedDer {
        kind,
        structure: "Ed25519 SubjectPublicKeyInfo",
        detail: detail.to_owned(),
    };
    if spki.algorithm.parameters.is_some() {
        return Err(malformed("Ed25519 keys must have no algorithm parameters"));
    }
    let bytes: [u8; 32] = spki
        .subject_public_key
        .as_bytes()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| malformed("the public key is not 32 bytes"))?;
    let key = VerifyingKey::from_bytes(&bytes)
        .map_err(|_| malformed("the 32 bytes are not an Ed25519 curve point"))?;
    if public_key_to_spki_der(&key) != der {
        return Err(malformed("the key is not canonically encoded"));
    }
    if key.is_weak() {
        return Err(KeyError::WeakKey);
    }
    Ok(key)
}

/// Reads an Ed25519 signing key from PKCS#8 PEM text (v1, or v2 with a
/// matching embedded public key).
pub fn signing_key_from_pem(text: &str) -> Result<SigningKey, KeyError> {
    let kind = KeyKind::Private;
    let block = split_pem(text, kind)?;
    match block.label.as_str() {
        PRIVATE_LABEL => {}
        "ENCRYPTED PRIVATE KEY" => return Err(KeyError::EncryptedPrivateKey),
        "RSA PRIVATE KEY" => {
            return Err(KeyError::NotEd25519 {
                kind,
                algorithm: "a PKCS#1 RSA key".to_owned(),
            });
        }
        "EC PRIVATE KEY" => {
            return Err(KeyError::NotEd25519 {
                kind,
                algorithm: "a SEC1 elliptic-curve key".to_owned(),
            });
        }
        label if label.contains(PUBLIC_LABEL) => {
            return Err(KeyError::PublicKeyGiven {
                label: label.to_owned(),
            });
        }
        label => {
            return Err(KeyError::UnexpectedLabel {
                kind,
                expected: PRIVATE_LABEL,
                found: label.to_owned(),
            });
        }
    }
    let der = Zeroizing::new(decode_body(&block, kind)?);
    let info = PrivateKeyInfo::try_from(der.as_slice()).map_err(|err| KeyError::MalformedDer {
        kind,
        structure: "PKCS#8 PrivateKeyInfo",
        detail: lowercase_first(&err.to_string()),
    })?;
    if info.algorithm.oid != ED25519_OID {
        return Err(KeyError::NotEd25519 {
            kind,
            algorithm: describe_algorithm(info.algorithm.oid, info.algorithm.parameters_oid().ok()),
        });
    }
    let pair = KeypairBytes::try_from(info).map_err(|err| KeyError::MalformedDer {
        kind,
        structure: "Ed25519 PKCS#8 PrivateKeyInfo",
        detail: lowercase_first(&err.to_string()),
    })?;
    let key = SigningKey::from_bytes(&pair.secret_key);
    if let Some(public) = &pair.public_key
        && public.to_bytes() != key.verifying_key().to_bytes()
    {
        return Err(KeyError::MismatchedPublicKey);
    }
    Ok(key)
}

/// Reads a public key PEM file.
pub fn read_public_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = read_text(path, KeyKind::Public)?;
    public_key_from_pem(&text).map_err(|err| in_file(path, err))
}

/// Reads a private key PEM file.
pub fn read_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let text = Zeroizing::new(read_text(path, KeyKind::Private)?);
    signing_key_from_pem(&text).map_err(|err| in_file(path, err))
}

/// Writes `key` as a PKCS#8 PEM file readable only by its owner (mode 0600
/// on Unix). Refuses to replace an existing file, so a key is never lost
/// by accident.
pub fn write_signing_key(path: &Path, key: &SigningKey) -> Result<(), KeyError> {
    let pem = signing_key_to_pem(key);
    write_new_file(path, pem.as_bytes(), KeyKind::Private)
}

/// Writes `key` as a SubjectPublicKeyInfo PEM file. Refuses to replace an
/// existing file.
pub fn write_public_key(path: &Path, key: &VerifyingKey) -> Result<(), KeyError> {
    write_new_file(path, public_key_to_pem(key).as_bytes(), KeyKind::Public)
}

/// Creates `path` (which must not exist) and writes `bytes` to it.
fn write_new_file(path: &Path, bytes: &[u8], kind: KeyKind) -> Result<(), KeyError> {
    let fail = |detail: String| KeyError::WriteFile {
        kind,
        path: path.to_owned(),
        detail,
    };
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|err| {
        if err.kind() == std::io::ErrorKind::AlreadyExists {
            fail("the file already exists; remove it first or choose another path".to_owned())
        } else {
            fail(err.kind().to_string())
        }
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|err| fail(err.kind().to_string()))
}

/// Reads a key file as UTF-8 text.
fn read_text(path: &Path, kind: KeyKind) -> Result<String, KeyError> {
    let bytes = fs_err::read(path).map_err(|err| KeyError::ReadFile {
        kind,
        path: path.to_owned(),
        detail: err.kind().to_string(),
    })?;
    String::from_utf8(bytes).map_err(|err| {
        // Wipe the bytes, which may hold a private key.
        drop(Zeroizing::new(err.into_bytes()));
        KeyError::ReadFile {
            kind,
            path: path.to_owned(),
            detail: "the file is not UTF-8 text (a DER file? PEM is needed)".to_owned(),
        }
    })
}

/// Attaches the file name to a decoding error.
fn in_file(path: &Path, error: KeyError) -> KeyError {
    KeyError::InFile {
        path: path.to_owned(),
        error: Box::new(error),
    }
}

/// One PEM block: its label and its base64 lines joined.
struct PemBlock {
    /// The label between `-----BEGIN ` and `-----`.
    label: String,
    /// The base64 body lines, trimmed and joined.
    body: Zeroizing<String>,
}

/// Splits PEM text into label and body, diagnosing pasting mistakes.
fn split_pem(text: &str, kind: KeyKind) -> Result<PemBlock, KeyError> {
    let malformed = |problem: &str| KeyError::MalformedPem {
        kind,
        problem: problem.to_owned(),
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(malformed("the text is empty"));
    }
    if text.contains("\\n") || text.contains("\\r") {
        return Err(KeyError::LiteralNewline { kind });
    }
    if text.starts_with("ssh-") || text.starts_with("ecdsa-sha2-") {
        return Err(malformed(
            "this is an OpenSSH key line, not PEM; a -----BEGIN PUBLIC KEY----- block is needed",
        ));
    }
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or_default();
    let Some(after_begin) = first.strip_prefix("-----BEGIN ") else {
        return Err(if text.contains("-----BEGIN ") {
            malformed("there is text before the -----BEGIN line")
        } else {
            malformed("there is no -----BEGIN line (a bare base64 or hex key is not accepted)")
        });
    };
    let Some((label, rest)) = after_begin.split_once("-----") else {
        return Err(malformed("the -----BEGIN line does not end with -----"));
    };
    if !rest.is_empty() {
        return Err(malformed(
            "the key is on one line; put the -----BEGIN line, the base64 lines and the -----END \
             line on separate lines",
        ));
    }
    let label = label.to_owned();
    let mut body = Zeroizing::new(String::new());
    let mut ended = false;
    for line in lines.by_ref() {
        if let Some(end) = line.strip_prefix("-----END ") {
            if end.strip_suffix("-----") != Some(label.as_str()) {
                return Err(malformed(&format!(
                    "the -----END line does not match -----BEGIN {label}-----"
                )));
            }
            ended = true;
            break;
        }
        if line.starts_with("-----") {
            return Err(malformed(
                "a second -----BEGIN line appears before the -----END line",
            ));
        }
        if line.contains(':') {
            return Err(malformed(
                "it has RFC 1421 headers (like Proc-Type), which are not supported",
            ));
        }
        body.push_str(line);
    }
    if !ended {
        return Err(malformed(&format!(
            "there is no -----END {label}----- line"
        )));
    }
    if lines.next().is_some() {
        return Err(malformed(
            "there is text after the -----END line (give exactly one key)",
        ));
    }
    Ok(PemBlock { label, body })
}

/// Decodes the base64 body of a PEM block.
fn decode_body(block: &PemBlock, kind: KeyKind) -> Result<Vec<u8>, KeyError> {
    if block.body.is_empty() {
        return Err(KeyError::MalformedPem {
            kind,
            problem: "there is no base64 between the -----BEGIN and -----END lines".to_owned(),
        });
    }
    PEM_BASE64
        .decode(block.body.as_bytes())
        .map_err(|err| KeyError::MalformedPem {
            kind,
            problem: format!(
                "the base64 between the -----BEGIN and -----END lines is invalid ({})",
                lowercase_first(&err.to_string())
            ),
        })
}

/// Names a key algorithm from its OID (and, for EC keys, its curve).
fn describe_algorithm(oid: ObjectIdentifier, parameter: Option<ObjectIdentifier>) -> String {
    let name = match oid.to_string().as_str() {
        "1.2.840.113549.1.1.1" => "an RSA key",
        "1.2.840.113549.1.1.10" => "an RSA-PSS key",
        "1.2.840.10040.4.1" => "a DSA key",
        "1.3.101.110" => "an X25519 key",
        "1.3.101.111" => "an X448 key",
        "1.3.101.113" => "an Ed448 key",
        "1.2.840.10045.2.1" => match parameter.map(|p| p.to_string()).as_deref() {
            Some("1.2.840.10045.3.1.7") => "an ECDSA P-256 key",
            Some("1.3.132.0.34") => "an ECDSA P-384 key",
            Some("1.3.132.0.35") => "an ECDSA P-521 key",
            Some("1.3.132.0.10") => "an ECDSA secp256k1 key",
            _ => "an elliptic-curve key",
        },
        other => return format!("a key with algorithm OID {other}"),
    };
    name.to_owned()
}

/// Lowercases the first character of a dependency's error message.
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `pkcs8` encoders give exactly the bytes and text proofgraph always wrote: the
    /// fixed DER prefixes and one base64 line between LF-ended armour lines.
    #[test]
    fn the_encoders_write_what_was_always_written() {
        let key = rfc8032_test1();
        let public = key.verifying_key();
        let mut spki = SPKI_PREFIX.to_vec();
        spki.extend_from_slice(public.as_bytes());
        assert_eq!(public_key_to_spki_der(&public), spki);
        assert_eq!(
            public_key_to_pem(&public),
            format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
                PEM_BASE64.encode(&spki)
            )
        );
        let mut pkcs8 = PKCS8_PREFIX.to_vec();
        pkcs8.extend_from_slice(key.as_bytes());
        assert_eq!(
            signing_key_to_pem(&key).as_str(),
            format!(
                "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
                PEM_BASE64.encode(&pkcs8)
            )
        );
    }

    /// RFC 8032 section 7.1, TEST 1.
    fn rfc8032_test1() -> SigningKey {
        let seed: [u8; 32] = [
            0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec,
            0x2c, 0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03,
            0x1c, 0xae, 0x7f, 0x60,
        ];
        SigningKey::from_bytes(&seed)
    }

    fn replace_body(pem: &str, body: &str) -> String {
        let lines: Vec<&str> = pem.lines().collect();
        format!("{}\n{body}\n{}\n", lines[0], lines[lines.len() - 1])
    }

    #[test]
    fn fixed_prefix_encodings_match_the_der_encoders() {
        let key = rfc8032_test1();
        let spki = key
            .verifying_key()
            .to_public_key_der()
            .expect("spki encodes");
        assert_eq!(
            public_key_to_spki_der(&key.verifying_key()),
            spki.as_bytes()
        );
        let pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("pem encodes");
        assert_eq!(public_key_to_pem(&key.verifying_key()), pem);
        let v1 = KeypairBytes {
            secret_key: key.to_bytes(),
            public_key: None,
        }
        .to_pkcs8_pem(LineEnding::LF)
        .expect("pkcs8 encodes");
        assert_eq!(signing_key_to_pem(&key).as_str(), v1.as_str());
    }

    #[test]
    fn known_public_pem_and_key_id() {
        // The RFC 8032 TEST 1 public key, as `openssl pkey -pubout` prints it.
        let key = rfc8032_test1().verifying_key();
        assert_eq!(
            public_key_to_pem(&key),
            "-----BEGIN PUBLIC KEY-----\n\
             MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n\
             -----END PUBLIC KEY-----\n"
        );
        let id = key_id(&key);
        assert!(id.starts_with("sha256:"));
        assert_eq!(id.len(), "sha256:".len() + 64);
        let expected =
            proofgraph_graph::fingerprint::hex(&Sha256::digest(public_key_to_spki_der(&key)));
        assert_eq!(id, format!("sha256:{expected}"));
    }

    #[test]
    fn private_pem_round_trips_v1_and_v2() {
        let key = generate_signing_key().expect("rng");
        let v1 = signing_key_to_pem(&key);
        assert_eq!(
            signing_key_from_pem(&v1).expect("v1").to_bytes(),
            key.to_bytes()
        );
        let v2 = key.to_pkcs8_pem(LineEnding::CRLF).expect("v2 encodes");
        assert_eq!(
            signing_key_from_pem(&v2).expect("v2").to_bytes(),
            key.to_bytes()
        );
    }

    #[test]
    fn v2_with_foreign_public_key_is_rejected() {
        let key = rfc8032_test1();
        let other = generate_signing_key().expect("rng");
        let forged = KeypairBytes {
            secret_key: key.to_bytes(),
            public_key: Some(ed25519_dalek::pkcs8::PublicKeyBytes(
                other.verifying_key().to_bytes(),
            )),
        }
        .to_pkcs8_pem(LineEnding::LF)
        .expect("encodes");
        assert_eq!(
            signing_key_from_pem(&forged).expect_err("mismatch"),
            KeyError::MismatchedPublicKey
        );
    }

    #[test]
    fn public_pem_round_trips_with_whitespace_and_crlf() {
        let key = rfc8032_test1().verifying_key();
        let pem = public_key_to_pem(&key);
        let variants = [
            pem.clone(),
            format!("\n\n   {pem}   \n\t"),
            pem.replace('\n', "\r\n"),
            pem.lines()
                .map(|l| format!("    {l}  "))
                .collect::<Vec<_>>()
                .join("\n"),
            pem.trim_end().to_owned(),
        ];
        for text in variants {
            assert_eq!(public_key_from_pem(&text).expect(&text), key, "{text:?}");
        }
    }

    #[test]
    fn accepts_other_line_widths() {
        let key = rfc8032_test1().verifying_key();
        let body = PEM_BASE64.encode(public_key_to_spki_der(&key));
        let (a, b) = body.split_at(17);
        let text = format!("-----BEGIN PUBLIC KEY-----\n{a}\n{b}\n-----END PUBLIC KEY-----");
        assert_eq!(public_key_from_pem(&text).expect("wrapped"), key);
    }

    #[test]
    fn literal_backslash_n_is_named() {
        let pem = public_key_to_pem(&rfc8032_test1().verifying_key());
        let pasted = pem.trim().replace('\n', "\\n");
        let err = public_key_from_pem(&pasted).expect_err("literal \\n");
        assert_eq!(
            err,
            KeyError::LiteralNewline {
                kind: KeyKind::Public
            }
        );
        assert_eq!(
            err.to_string(),
            "read public key: the key contains a literal \\n; use a YAML block scalar or real \
             newlines"
        );
        let private = signing_key_to_pem(&rfc8032_test1())
            .trim()
            .replace('\n', "\\r\\n");
        assert_eq!(
            signing_key_from_pem(&private).expect_err("literal"),
            KeyError::LiteralNewline {
                kind: KeyKind::Private
            }
        );
    }

    #[test]
    fn private_key_where_public_expected_is_named() {
        let private = signing_key_to_pem(&rfc8032_test1());
        let err = public_key_from_pem(&private).expect_err("private");
        assert!(matches!(err, KeyError::PrivateKeyGiven { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("read public key: this is a private key"),
            "{text}"
        );
        assert!(!text.contains(&private.lines().nth(1).unwrap_or_default().to_owned()));
        for label in [
            "ENCRYPTED PRIVATE KEY",
            "RSA PRIVATE KEY",
            "OPENSSH PRIVATE KEY",
        ] {
            let pem = format!("-----BEGIN {label}-----\nAAAA\n-----END {label}-----\n");
            assert!(
                matches!(
                    public_key_from_pem(&pem),
                    Err(KeyError::PrivateKeyGiven { .. })
                ),
                "{label}"
            );
        }
    }

    #[test]
    fn public_key_where_private_expected_is_named() {
        let public = public_key_to_pem(&rfc8032_test1().verifying_key());
        let err = signing_key_from_pem(&public).expect_err("public");
        assert!(matches!(err, KeyError::PublicKeyGiven { .. }), "{err:?}");
    }

    #[test]
    fn one_line_pem_is_named() {
        let pem = public_key_to_pem(&rfc8032_test1().verifying_key());
        let one_line = pem.split_whitespace().collect::<Vec<_>>().join(" ");
        let err = public_key_from_pem(&one_line).expect_err("one line");
        assert!(err.to_string().contains("on one line"), "{err}");
    }

    #[test]
    fn malformed_pem_is_named() {
        let pem = public_key_to_pem(&rfc8032_test1().verifying_key());
        let body = pem.lines().nth(1).unwrap_or_default().to_owned();
        let cases = [
            ("", "empty"),
            ("   \n ", "empty"),
            (body.as_str(), "no -----BEGIN line"),
            ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA user@host", "OpenSSH"),
            (&format!("hello\n{pem}"), "text before"),
            (&format!("{pem}\n{pem}"), "text after"),
            (&format!("{pem}trailing words"), "text after"),
            (&pem.replace("-----END PUBLIC KEY-----", ""), "no -----END"),
            (
                &pem.replace("-----END PUBLIC KEY-----", "-----END PRIVATE KEY-----"),
                "does not match",
            ),
            (
                &pem.replace("-----BEGIN PUBLIC KEY-----", "-----BEGIN PUBLIC KEY"),
                "does not end",
            ),
            (&replace_body(&pem, ""), "no base64"),
            (&replace_body(&pem, &body.replace('M', "!")), "base64"),
            (&replace_body(&pem, body.trim_end_matches('=')), "base64"),
            (
                &replace_body(&pem, &body.replace('+', "-").replace('/', "_")),
                "base64",
            ),
            (
                &replace_body(&pem, &format!("Proc-Type: 4,ENCRYPTED\n{body}")),
                "headers",
            ),
        ];
        for (text, expected) in cases {
            let err = public_key_from_pem(text).expect_err(text);
            assert!(
                matches!(
                    err,
                    KeyError::MalformedPem {
                        kind: KeyKind::Public,
                        ..
                    }
                ),
                "{text:?}: {err:?}"
            );
            assert!(err.to_string().contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn malformed_der_is_named() {
        // Valid base64 of bytes that are not a SubjectPublicKeyInfo.
        let text = "-----BEGIN PUBLIC KEY-----\naGVsbG8gd29ybGQ=\n-----END PUBLIC KEY-----\n";
        let err = public_key_from_pem(text).expect_err("not der");
        assert!(matches!(err, KeyError::MalformedDer { .. }), "{err:?}");
        // A truncated Ed25519 SubjectPublicKeyInfo.
        let der = public_key_to_spki_der(&rfc8032_test1().verifying_key());
        let body = PEM_BASE64.encode(&der[..40]);
        let text = format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n");
        assert!(matches!(
            public_key_from_pem(&text),
            Err(KeyError::MalformedDer { .. })
        ));
    }

    #[test]
    fn weak_and_non_canonical_points_are_rejected() {
        // The identity point (y = 1) has small order.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(&identity);
        let text = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            PEM_BASE64.encode(&der)
        );
        assert_eq!(public_key_from_pem(&text), Err(KeyError::WeakKey));
        // y = p + 1 is a non-canonical spelling of the identity point.
        let mut non_canonical = [0xffu8; 32];
        non_canonical[0] = 0xee;
        non_canonical[31] = 0x7f;
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(&non_canonical);
        let text = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            PEM_BASE64.encode(&der)
        );
        assert!(public_key_from_pem(&text).is_err());
    }

    #[test]
    fn other_labels_are_named() {
        let text = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let err = public_key_from_pem(text).expect_err("certificate");
        assert_eq!(
            err.to_string(),
            "read public key: expected -----BEGIN PUBLIC KEY-----, found -----BEGIN CERTIFICATE-----"
        );
        let text = "-----BEGIN RSA PUBLIC KEY-----\nAAAA\n-----END RSA PUBLIC KEY-----\n";
        assert!(matches!(
            public_key_from_pem(text),
            Err(KeyError::NotEd25519 { .. })
        ));
        let text =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(matches!(
            signing_key_from_pem(text),
            Err(KeyError::EncryptedPrivateKey)
        ));
    }

    #[test]
    fn files_round_trip_and_are_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = generate_signing_key().expect("rng");
        let private = dir.path().join("key.pem");
        let public = dir.path().join("key.pub.pem");
        write_signing_key(&private, &key).expect("write private");
        write_public_key(&public, &key.verifying_key()).expect("write public");
        assert_eq!(
            read_signing_key(&private).expect("read").to_bytes(),
            key.to_bytes()
        );
        assert_eq!(read_public_key(&public).expect("read"), key.verifying_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs_err::metadata(&private)
                .expect("stat")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let err = write_signing_key(&private, &key).expect_err("exists");
        assert!(err.to_string().contains("already exists"), "{err}");
        let err = read_public_key(&private).expect_err("private as public");
        assert!(
            err.to_string()
                .starts_with("read public key: this is a private key"),
            "{err}"
        );
        assert!(
            err.to_string()
                .ends_with(&format!("(in {})", private.display())),
            "{err}"
        );
        let err = read_public_key(&dir.path().join("missing.pem")).expect_err("missing");
        assert!(err.to_string().contains("missing.pem"), "{err}");
    }

    #[test]
    fn generated_keys_differ() {
        let a = generate_signing_key().expect("rng");
        let b = generate_signing_key().expect("rng");
        assert_ne!(a.to_bytes(), b.to_bytes());
    }
}
