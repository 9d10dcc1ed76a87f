//! What every remote cache protocol provides, and how it fails.
//!
//! A backend is one protocol's client: the Remote Execution API over gRPC (`grpc.rs`) or
//! the Bazel HTTP cache protocol (`http.rs`). It moves blobs by digest and action-cache
//! entries, and reports each failure as a [`RemoteError`] of a kind the caller can act on;
//! it never checks what a blob holds (`cache.rs` does, before any byte is used).

use std::future::Future;
use std::pin::Pin;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;

use super::retry::Deadline;
use crate::store::Sha256;

/// The largest action-cache entry read (an entry of ours lists a few files).
pub(super) const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// How many characters of a text a server sent are quoted in a message.
const SHOWN_CHARS: usize = 1000;

/// `text` with every control character — a newline too — escaped as Rust writes it
/// (`\n`, `\u{1b}`): what a server sends (a status message, a path in an entry, an error
/// from the connection) is quoted in messages this way, so it can never add a line of
/// its choosing to the output or move the cursor of whoever reads it. Past
/// [`SHOWN_CHARS`] characters the rest is left out (`…`).
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(SHOWN_CHARS));
    for (i, c) in text.chars().enumerate() {
        if i == SHOWN_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A backend's answer, later.
pub type Fut<'a, T> = Pin<Box<dyn Future<Output = Result<T, RemoteError>> + Send + 'a>>;

/// A blob's identity in a remote cache: its SHA-256 and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobDigest {
    /// The SHA-256 of the bytes.
    pub sha256: Sha256,
    /// How many bytes.
    pub size: u64,
}

impl BlobDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        BlobDigest {
            sha256: Sha256::of(bytes),
            size: bytes.len() as u64,
        }
    }

    /// As the Remote Execution API writes it.
    pub fn to_reapi(self) -> reapi::Digest {
        reapi::Digest {
            hash: self.sha256.to_hex(),
            size_bytes: i64::try_from(self.size).unwrap_or(i64::MAX),
        }
    }

    /// From the Remote Execution API's form: a lowercase SHA-256 and a size that is not
    /// negative.
    pub fn from_reapi(digest: &reapi::Digest) -> Result<Self, String> {
        let sha256 = Sha256::parse(&digest.hash)
            .ok_or_else(|| format!("`{}` is not a SHA-256 digest", escaped(&digest.hash)))?;
        let size = u64::try_from(digest.size_bytes)
            .map_err(|_| format!("a blob of {} bytes", digest.size_bytes))?;
        Ok(BlobDigest { sha256, size })
    }
}

impl std::fmt::Display for BlobDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.sha256, self.size)
    }
}

/// What a server says it can do, at first contact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The largest request of batched blobs, in bytes (`None`: no batch calls; each blob
    /// goes alone).
    pub max_batch_bytes: Option<u64>,
    /// Whether the server accepts action-cache updates from clients.
    pub updates_action_cache: bool,
}

/// Why a remote cache did not answer as asked. Each kind is a warning to the user, never
/// a change to a run's verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// It could not be reached, did not answer in time, or said it is unavailable (5xx,
    /// `UNAVAILABLE`, a connection dropped mid-stream) — after the attempts `retry.rs`
    /// allows, when the failure was one that may pass.
    #[error("reach {remote}: {reason}")]
    Unavailable {
        /// The remote (its URL without credentials).
        remote: String,
        /// What happened.
        reason: String,
    },
    /// It refused the request: credentials missing or not accepted (401, 403,
    /// `UNAUTHENTICATED`, `PERMISSION_DENIED`).
    #[error("use {remote}: {reason}")]
    Refused {
        /// The remote.
        remote: String,
        /// What it said.
        reason: String,
    },
    /// It cannot serve this client: no SHA-256, or an answer that breaks the protocol.
    #[error("use {remote}: {reason}")]
    Unsupported {
        /// The remote.
        remote: String,
        /// Why.
        reason: String,
    },
    /// The proxy it is reached through could not be reached, or did not open a way to it
    /// (a refused or dropped connection, a `CONNECT` answered with an error).
    #[error("reach the proxy {proxy} (`{variable}`) on the way to {remote}: {reason}")]
    Proxy {
        /// The remote.
        remote: String,
        /// The proxy, its credentials redacted.
        proxy: String,
        /// The variable that named it.
        variable: String,
        /// What happened.
        reason: String,
    },
    /// It served bytes that are not what was asked for: a blob whose digest or size does
    /// not match, or an action-cache entry that cannot be read.
    #[error("trust what {remote} served: {reason}")]
    Corrupt {
        /// The remote.
        remote: String,
        /// What did not match.
        reason: String,
    },
}

/// One remote cache protocol. Every method is one request (or one bounded set of
/// requests), each sent again while its failure may pass (`retry.rs`), never past `until`,
/// the end of the operation's overall deadline; the caller enforces that deadline and
/// checks every blob read.
pub trait Backend: Send + Sync {
    /// The remote as a user wrote it, without credentials (for messages).
    fn name(&self) -> &str;

    /// What the server can do; the first call a run makes.
    fn capabilities(&self, until: Deadline) -> Fut<'_, Capabilities>;

    /// The action-cache entry of `action`, if the server has one.
    fn get_action_result(
        &self,
        action: BlobDigest,
        until: Deadline,
    ) -> Fut<'_, Option<reapi::ActionResult>>;

    /// Records `result` as the action-cache entry of `action`.
    fn update_action_result(
        &self,
        action: BlobDigest,
        result: reapi::ActionResult,
        until: Deadline,
    ) -> Fut<'_, ()>;

    /// Of `blobs`, those the server does not have.
    fn find_missing(&self, blobs: Vec<BlobDigest>, until: Deadline) -> Fut<'_, Vec<BlobDigest>>;

    /// Stores each blob under its digest (the caller computed the digests).
    fn write_blobs(&self, blobs: Vec<(BlobDigest, Vec<u8>)>, until: Deadline) -> Fut<'_, ()>;

    /// The bytes stored under `blob`, if the server has them (unchecked).
    fn read_blob(&self, blob: BlobDigest, until: Deadline) -> Fut<'_, Option<Vec<u8>>>;
}
