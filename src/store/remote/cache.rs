//! A remote cache as a run uses it: one backend, every blob read under a size the caller
//! decided before the first byte and checked against its digest before any byte of it is
//! returned, every operation under an overall deadline, and a remote that failed in a run
//! left alone for the rest of it (one warning, not one per provider; no run waits on a dead
//! remote twice) — once the backend's retries of a failure that may pass (`retry.rs`),
//! all inside that deadline, are spent.

use std::sync::Mutex;
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;

use super::backend::{Backend, BlobDigest, Capabilities, RemoteError};
use super::config::{Protocol, Settings};
use super::encoding::{self, Encoded, Outputs};
use super::grpc::Grpc;
use super::http::Http;
use super::retry::Deadline;

/// How many bytes of blobs are read at once, over every read in flight (a larger blob is
/// read alone): a server that serves each of many concurrent reads as much as it may
/// still fills no more memory than this.
const READ_BUDGET: u64 = 64 << 20;
/// The unit of [`READ_BUDGET`]'s permits.
const PERMIT: u64 = 1 << 10;
/// How many entries are looked up at once, over every lookup in flight: a pull asks for
/// each receipt under every key it trusts at once, and an HTTP/1.1 cache answers each
/// request on a connection of its own.
const LOOKUPS_IN_FLIGHT: usize = 16;

/// A remote cache.
pub struct RemoteCache {
    backend: Box<dyn Backend>,
    /// The failure that put it out of use for this run.
    down: Mutex<Option<RemoteError>>,
    /// The timeouts and rate the overall deadline of each operation is made of.
    settings: Settings,
    /// Reads in flight hold a permit per KiB they may return.
    reading: tokio::sync::Semaphore,
    /// Entry lookups in flight hold a permit each.
    looking: tokio::sync::Semaphore,
}

/// What an upload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uploaded {
    /// Blobs sent (the others were there already).
    pub blobs: usize,
    /// Bytes sent.
    pub bytes: u64,
}

/// The permits of `bytes` bytes of [`READ_BUDGET`] (at least one).
fn permits(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(PERMIT).max(1)).unwrap_or(u32::MAX)
}

/// The backend of the remote `settings` name, by its URL's scheme. Nothing is sent yet, and
/// no runtime is needed until the first call.
pub fn backend(settings: &Settings) -> Result<Box<dyn Backend>, RemoteError> {
    // One crypto provider for every TLS connection of the process (rustls with ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let unsupported = |reason: String| RemoteError::Unsupported {
        remote: settings.url.clone(),
        reason,
    };
    let (protocol, tls) = Protocol::of(&settings.url).map_err(unsupported)?;
    Ok(match protocol {
        Protocol::Http => Box::new(Http::new(settings)?),
        Protocol::Grpc => Box::new(Grpc::new(settings, tls)?),
    })
}

impl RemoteCache {
    /// A client of the remote `settings` names. Nothing is sent yet.
    pub fn open(settings: &Settings) -> Result<Self, RemoteError> {
        Ok(RemoteCache::with(backend(settings)?, settings))
    }

    /// A cache over `backend`, with the deadlines of `settings` (tests give a backend of
    /// their own).
    pub fn with(backend: Box<dyn Backend>, settings: &Settings) -> Self {
        RemoteCache {
            backend,
            down: Mutex::new(None),
            settings: settings.clone(),
            reading: tokio::sync::Semaphore::new((READ_BUDGET / PERMIT) as usize),
            looking: tokio::sync::Semaphore::new(LOOKUPS_IN_FLIGHT),
        }
    }

    /// The remote, without credentials.
    pub fn name(&self) -> &str {
        self.backend.name()
    }

    /// The failure that put the remote out of use for this run, if one did.
    pub fn down(&self) -> Option<RemoteError> {
        self.down
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Runs `call` (`what`, moving `bytes` bytes) unless the remote is down, under the
    /// overall deadline of an operation of that size ([`Settings::deadline`]), which the
    /// backend's retries stay inside (`call` is given its end); a remote that is still
    /// unavailable after them (or past the deadline), or refuses, is down from then on.
    async fn guard<T, F>(
        &self,
        what: &str,
        bytes: u64,
        call: impl FnOnce(Deadline) -> F,
    ) -> Result<T, RemoteError>
    where
        F: std::future::Future<Output = Result<T, RemoteError>>,
    {
        if let Some(e) = self.down() {
            return Err(e);
        }
        let deadline = self.settings.deadline(bytes);
        let call = call(Deadline::after(deadline));
        let result = match tokio::time::timeout(deadline, call).await {
            Ok(result) => result,
            Err(_) => Err(self.overdue(what, bytes, deadline)),
        };
        if let Err(
            e @ (RemoteError::Unavailable { .. }
            | RemoteError::Refused { .. }
            | RemoteError::Proxy { .. }),
        ) = &result
        {
            self.down
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get_or_insert_with(|| e.clone());
        }
        result
    }

    /// The error of an operation that outlasted its overall deadline.
    fn overdue(&self, what: &str, bytes: u64, deadline: Duration) -> RemoteError {
        RemoteError::Unavailable {
            remote: self.name().to_owned(),
            reason: format!(
                "{what} was not done within {} ms (`cache.connectTimeoutMs` + `cache.timeoutMs` + {bytes} bytes at `cache.minBytesPerSecond` {})",
                deadline.as_millis(),
                self.settings.min_bytes_per_second
            ),
        }
    }

    /// What the server can do (and that it answers at all).
    pub async fn capabilities(&self) -> Result<Capabilities, RemoteError> {
        self.guard("asking its capabilities", 0, |until| {
            self.backend.capabilities(until)
        })
        .await
    }

    /// What the entry of `key` points at, if the remote has one of ours. At most
    /// [`LOOKUPS_IN_FLIGHT`] lookups are in flight at once; the others wait their turn.
    pub async fn entry(&self, key: BlobDigest) -> Result<Option<Outputs>, RemoteError> {
        // The semaphore is never closed.
        let _slot = self.looking.acquire().await;
        let Some(result) = self
            .guard(&format!("reading the entry {key}"), 0, |until| {
                self.backend.get_action_result(key, until)
            })
            .await?
        else {
            return Ok(None);
        };
        encoding::outputs(&result)
            .map(Some)
            .map_err(|reason| RemoteError::Corrupt {
                remote: self.name().to_owned(),
                reason: format!("the entry {key}: {reason}"),
            })
    }

    /// The bytes of `blob`, checked: a blob the remote does not have is `None`; one whose
    /// size or SHA-256 is not `blob`'s (truncated, edited on the server's disk) is an error,
    /// and none of its bytes are returned.
    ///
    /// `limit` is the most bytes the caller accepts, decided before anything is asked
    /// (never from what the server says alone): a blob said to be larger is `Corrupt`
    /// without a byte of it read, and no read holds more than `blob.size + 1` bytes
    /// whatever the server sends.
    pub async fn blob(&self, blob: BlobDigest, limit: u64) -> Result<Option<Vec<u8>>, RemoteError> {
        if blob.size > limit {
            return Err(RemoteError::Corrupt {
                remote: self.name().to_owned(),
                reason: format!(
                    "the blob {blob} is said to be larger than the {limit} bytes it may have; none of it was read"
                ),
            });
        }
        // The semaphore is never closed.
        let _budget = self
            .reading
            .acquire_many(permits(blob.size.min(READ_BUDGET)))
            .await;
        let Some(bytes) = self
            .guard(&format!("reading the blob {blob}"), blob.size, |until| {
                self.backend.read_blob(blob, until)
            })
            .await?
        else {
            return Ok(None);
        };
        let got = BlobDigest::of(&bytes);
        if got != blob {
            return Err(RemoteError::Corrupt {
                remote: self.name().to_owned(),
                reason: format!(
                    "the blob {blob} came back as {} bytes with SHA-256 {}",
                    got.size, got.sha256
                ),
            });
        }
        Ok(Some(bytes))
    }

    /// Stores an entry: the blobs it needs that the remote lacks (`blobs` holds the
    /// outputs' bytes; the `Action`, `Command` and empty input root are added), then the
    /// entry itself — CAS before AC, so no entry ever points at a blob not yet there.
    pub async fn put(
        &self,
        encoded: &Encoded,
        outputs: &Outputs,
        blobs: Vec<Vec<u8>>,
    ) -> Result<Uploaded, RemoteError> {
        let mut all: Vec<(BlobDigest, Vec<u8>)> = blobs
            .into_iter()
            .chain(encoded.blobs())
            .map(|bytes| (BlobDigest::of(&bytes), bytes))
            .collect();
        all.sort_by_key(|(digest, _)| *digest);
        all.dedup_by_key(|(digest, _)| *digest);
        let wanted: Vec<BlobDigest> = all.iter().map(|(d, _)| *d).collect();
        let missing = self
            .guard("asking which blobs it lacks", 0, |until| {
                self.backend.find_missing(wanted, until)
            })
            .await?;
        let send: Vec<(BlobDigest, Vec<u8>)> = all
            .into_iter()
            .filter(|(d, _)| missing.binary_search(d).is_ok())
            .collect();
        let uploaded = Uploaded {
            blobs: send.len(),
            bytes: send.iter().map(|(d, _)| d.size).sum(),
        };
        if !send.is_empty() {
            self.guard(
                &format!("writing {} blobs", uploaded.blobs),
                uploaded.bytes,
                |until| self.backend.write_blobs(send, until),
            )
            .await?;
        }
        let result: reapi::ActionResult = encoding::result(outputs);
        self.guard(&format!("writing the entry {}", encoded.key), 0, |until| {
            self.backend
                .update_action_result(encoded.key, result, until)
        })
        .await?;
        Ok(uploaded)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::store::remote::backend::Fut;

    /// A backend whose reads never end and count themselves; nothing else is called.
    struct Endless(AtomicUsize);

    impl Backend for Endless {
        fn name(&self) -> &str {
            "endless"
        }
        fn capabilities(&self, _: Deadline) -> Fut<'_, Capabilities> {
            Box::pin(std::future::pending())
        }
        fn get_action_result(
            &self,
            _: BlobDigest,
            _: Deadline,
        ) -> Fut<'_, Option<reapi::ActionResult>> {
            Box::pin(std::future::pending())
        }
        fn update_action_result(
            &self,
            _: BlobDigest,
            _: reapi::ActionResult,
            _: Deadline,
        ) -> Fut<'_, ()> {
            Box::pin(std::future::pending())
        }
        fn find_missing(&self, _: Vec<BlobDigest>, _: Deadline) -> Fut<'_, Vec<BlobDigest>> {
            Box::pin(std::future::pending())
        }
        fn write_blobs(&self, _: Vec<(BlobDigest, Vec<u8>)>, _: Deadline) -> Fut<'_, ()> {
            Box::pin(std::future::pending())
        }
        fn read_blob(&self, _: BlobDigest, _: Deadline) -> Fut<'_, Option<Vec<u8>>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::pending())
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn a_blob_said_to_be_larger_than_its_limit_is_never_asked_for() {
        let cache = RemoteCache::with(
            Box::new(Endless(AtomicUsize::new(0))),
            &Settings::new("grpc://h:1"),
        );
        let huge = BlobDigest {
            size: 1 << 62,
            ..BlobDigest::of(b"x")
        };
        let got = runtime().block_on(cache.blob(huge, 16 << 20));
        assert!(matches!(got, Err(RemoteError::Corrupt { .. })), "{got:?}");
        assert!(
            cache.down().is_none(),
            "a corrupt blob leaves the remote in use"
        );
    }

    #[test]
    fn every_operation_ends_at_its_overall_deadline_and_the_remote_is_down_after() {
        let mut settings = Settings::new("grpc://h:1");
        settings.connect_timeout = Duration::from_secs(1);
        settings.timeout = Duration::from_secs(3);
        settings.min_bytes_per_second = 1000;
        assert_eq!(settings.deadline(0), Duration::from_secs(4));
        assert_eq!(settings.deadline(6000), Duration::from_secs(10));
        settings.connect_timeout = Duration::from_millis(50);
        settings.timeout = Duration::from_millis(100);
        let cache = RemoteCache::with(Box::new(Endless(AtomicUsize::new(0))), &settings);
        let rt = runtime();
        let started = std::time::Instant::now();
        let got = rt.block_on(cache.blob(BlobDigest::of(&[7; 100]), 1 << 20));
        let took = started.elapsed();
        match got {
            Err(RemoteError::Unavailable { reason, .. }) => {
                assert!(reason.contains("was not done within 250 ms"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert!(cache.down().is_some(), "down for the rest of the run");
        let again = rt.block_on(cache.capabilities());
        assert!(matches!(again, Err(RemoteError::Unavailable { .. })));
    }

    #[test]
    fn server_text_is_quoted_with_its_control_characters_escaped() {
        use crate::store::remote::escaped;
        assert_eq!(
            escaped("down\npassed unit (injected)\r\n\u{1b}[2J\u{7}"),
            "down\\npassed unit (injected)\\r\\n\\u{1b}[2J\\u{7}"
        );
        assert_eq!(escaped("plain … text"), "plain … text");
        let long = "x".repeat(5000);
        assert_eq!(
            escaped(&long).chars().count(),
            1001,
            "cut, with an ellipsis"
        );
    }
}
