//! A request sent again after a failure that may pass: which failures those are (decided
//! here, for both protocols), how long to wait before the next attempt, and the loop that
//! sends it — every attempt and every wait inside the operation's overall deadline.
//!
//! Transient: gRPC `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, `ABORTED`; HTTP 429, 502, 503, 504;
//! a connection reset, or a stream dropped or reset mid-way. Everything else is answered
//! at once: a refusal (401, 403, `UNAUTHENTICATED`, `PERMISSION_DENIED`), a proxy that
//! failed, a blob that is not what it should be, `NOT_FOUND`, a deadline already spent
//! (the request's or the server's `DEADLINE_EXCEEDED`), and a connection that could not be
//! made at all (refused, unreachable, a TLS handshake refused): a cache that is not there
//! does not come back within a second, and each attempt could cost a connect timeout.
//!
//! Every request this client sends may be sent twice: reads change nothing, a blob is
//! written under its own digest (a ByteStream upload under a fresh name each attempt), and
//! an action-cache entry is written whole under its key.

use std::error::Error;
use std::future::Future;
use std::time::{Duration, Instant};

use prost::Message as _;
use tonic::Code;

use super::backend::RemoteError;

/// How many times a request is sent, at most (the first attempt and five retries).
pub(super) const ATTEMPTS: u32 = 6;
/// The most the wait before the first retry may be; it doubles with each retry.
pub(super) const BASE: Duration = Duration::from_millis(100);
/// The most any one wait may be, unless the server asked for longer.
pub(super) const CAP: Duration = Duration::from_secs(1);

/// Whether a failed request may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// It would fail again, or must not be repeated.
    No,
    /// It may pass when sent again; `after`, when the server said how long to wait
    /// (`Retry-After`, a `RetryInfo` detail).
    Yes { after: Option<Duration> },
}

/// A failed attempt: the error, and whether it may pass when sent again.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) error: RemoteError,
    pub(crate) retry: Retry,
}

impl From<RemoteError> for Failed {
    /// An error is not retried unless it was classified so.
    fn from(error: RemoteError) -> Self {
        Failed {
            error,
            retry: Retry::No,
        }
    }
}

/// When an operation's overall deadline ends (`Settings::deadline` from its start): no
/// retry waits past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(Instant);

impl Deadline {
    /// The deadline `within` from now.
    pub fn after(within: Duration) -> Self {
        Deadline(Instant::now() + within)
    }

    fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }
}

/// Whether a gRPC status code says the call may pass when sent again.
fn transient_code(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable | Code::ResourceExhausted | Code::Aborted
    )
}

/// A gRPC call's failure: a transient code, unless the connection could not be made or
/// the deadline passed; any code when the stream or its connection was reset.
pub(crate) fn grpc(status: &tonic::Status) -> Retry {
    let mut source = Error::source(status);
    while let Some(cause) = source {
        if cause.is::<tonic::TimeoutExpired>() || cause.is::<tonic::ConnectError>() {
            return Retry::No;
        }
        source = cause.source();
    }
    if transient_code(status.code()) || Error::source(status).is_some_and(reset) {
        Retry::Yes {
            after: retry_info(status.details()),
        }
    } else {
        Retry::No
    }
}

/// A per-blob status of a batch call (`BatchUpdateBlobs`, `BatchReadBlobs`).
pub(super) fn grpc_blob(code: Code) -> Retry {
    if transient_code(code) {
        Retry::Yes { after: None }
    } else {
        Retry::No
    }
}

/// An HTTP status that is not an answer: 429, 502, 503 and 504 may pass, after the
/// `Retry-After` the server sent (in seconds; a date is not read).
pub(super) fn http(status: reqwest::StatusCode, headers: &reqwest::header::HeaderMap) -> Retry {
    if !matches!(status.as_u16(), 429 | 502 | 503 | 504) {
        return Retry::No;
    }
    let after = headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    Retry::Yes { after }
}

/// An HTTP request that got no answer: only a connection reset or dropped under it, never
/// a connection not made or a timeout.
pub(super) fn http_transport(error: &reqwest::Error) -> Retry {
    if error.is_timeout() || error.is_connect() {
        return Retry::No;
    }
    if reset(error) {
        Retry::Yes { after: None }
    } else {
        Retry::No
    }
}

/// Whether `error`, or an error under it, is a connection or stream the peer reset or
/// closed mid-way: an `RST_STREAM` or `GOAWAY` (HTTP/2), a connection closed before the
/// answer was complete, a reset or broken socket.
fn reset(error: &(dyn Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            ) {
                return true;
            }
            // An error wrapped in an I/O error is its payload, not its source.
            if let Some(inner) = io.get_ref()
                && reset(inner)
            {
                return true;
            }
        }
        if let Some(h2) = cause.downcast_ref::<h2::Error>()
            && (h2.is_reset() || h2.is_go_away())
        {
            return true;
        }
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>()
            && (hyper.is_incomplete_message() || hyper.is_canceled() || hyper.is_closed())
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// `google.rpc.RetryInfo`: how long the server asks the client to wait.
#[derive(Clone, PartialEq, prost::Message)]
struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    retry_delay: Option<bazel_remote_apis::google::protobuf::Duration>,
}

const RETRY_INFO: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// The delay of a `RetryInfo` among a status's details (`grpc-status-details-bin`).
fn retry_info(details: &[u8]) -> Option<Duration> {
    if details.is_empty() {
        return None;
    }
    let status = bazel_remote_apis::google::rpc::Status::decode(details).ok()?;
    let any = status.details.iter().find(|a| a.type_url == RETRY_INFO)?;
    let delay = RetryInfo::decode(any.value.as_slice()).ok()?.retry_delay?;
    let seconds = u64::try_from(delay.seconds).ok()?;
    let nanos = u32::try_from(delay.nanos).ok()?;
    Some(Duration::new(seconds, nanos.min(999_999_999)))
}

/// The wait before the retry that follows attempt `attempt` (1 for the first): drawn
/// uniformly from zero to `BASE × 2^(attempt-1)`, at most [`CAP`] ("full jitter", with
/// `random` as the draw), and at least what the server asked for. `None` when that wait
/// would not end before the deadline (`remaining`): there is no time for another attempt.
pub(super) fn wait(
    attempt: u32,
    random: u64,
    after: Option<Duration>,
    remaining: Duration,
) -> Option<Duration> {
    let ceiling = BASE
        .saturating_mul(
            1u32.checked_shl(attempt.saturating_sub(1))
                .unwrap_or(u32::MAX),
        )
        .min(CAP);
    let ceiling_nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    let jittered = Duration::from_nanos(random % ceiling_nanos.saturating_add(1));
    let wait = after.map_or(jittered, |after| after.max(jittered));
    (wait < remaining).then_some(wait)
}

/// A random draw for [`wait`].
fn random() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        // No randomness: the clock still spreads concurrent retries apart.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos().into())
    })
}

/// `error`, saying the request was given up after `attempts` attempts (and why, `why`).
fn given_up(mut error: RemoteError, attempts: u32, why: &str) -> RemoteError {
    let plural = if attempts == 1 { "" } else { "s" };
    let note = format!(" (gave up after {attempts} attempt{plural}{why})");
    match &mut error {
        RemoteError::Unavailable { reason, .. }
        | RemoteError::Refused { reason, .. }
        | RemoteError::Unsupported { reason, .. }
        | RemoteError::Corrupt { reason, .. }
        | RemoteError::Proxy { reason, .. } => reason.push_str(&note),
    }
    error
}

/// Runs `attempt` until it succeeds, fails in a way that would not pass, or has been made
/// [`ATTEMPTS`] times, waiting as [`wait`] says between attempts and never past `until`.
pub(crate) async fn attempts<T, F, A>(until: Deadline, mut attempt: F) -> Result<T, RemoteError>
where
    F: FnMut() -> A,
    A: Future<Output = Result<T, Failed>>,
{
    let mut made = 0;
    loop {
        made += 1;
        let failed = match attempt().await {
            Ok(done) => return Ok(done),
            Err(failed) => failed,
        };
        let Retry::Yes { after } = failed.retry else {
            return Err(failed.error);
        };
        if made >= ATTEMPTS {
            return Err(given_up(failed.error, made, ""));
        }
        match wait(made, random(), after, until.remaining()) {
            Some(pause) => tokio::time::sleep(pause).await,
            None => {
                return Err(given_up(
                    failed.error,
                    made,
                    ": waiting for another would pass the operation's deadline",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use reqwest::StatusCode;
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

    use super::*;

    fn yes(retry: Retry) -> bool {
        matches!(retry, Retry::Yes { .. })
    }

    #[test]
    fn grpc_unavailable_exhausted_aborted_and_resets_are_transient_and_nothing_else() {
        for code in [Code::Unavailable, Code::ResourceExhausted, Code::Aborted] {
            assert!(yes(grpc(&tonic::Status::new(code, "busy"))), "{code:?}");
            assert!(yes(grpc_blob(code)), "{code:?}");
        }
        for code in [
            Code::PermissionDenied,
            Code::Unauthenticated,
            Code::NotFound,
            Code::DataLoss,
            Code::DeadlineExceeded,
            Code::InvalidArgument,
            Code::FailedPrecondition,
            Code::Unimplemented,
            Code::OutOfRange,
            Code::Internal,
            Code::Unknown,
            Code::Cancelled,
        ] {
            assert_eq!(grpc(&tonic::Status::new(code, "no")), Retry::No, "{code:?}");
            assert_eq!(grpc_blob(code), Retry::No, "{code:?}");
        }
        // A connection that could not be made is UNAVAILABLE to tonic, but not retried;
        // nor is tonic's own deadline.
        let refused = tonic::Status::from_error(Box::new(tonic::ConnectError(
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into(),
        )));
        assert_eq!(refused.code(), Code::Unavailable);
        assert_eq!(grpc(&refused), Retry::No);
        let late = tonic::Status::from_error(Box::new(tonic::TimeoutExpired(())));
        assert_eq!(grpc(&late), Retry::No);
        // A stream dropped mid-way (UNKNOWN to tonic, with the socket's error under it).
        let dropped = tonic::Status::from_error(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )));
        assert_eq!(dropped.code(), Code::Unknown);
        assert!(yes(grpc(&dropped)));
        // A stream this side gave up on (tonic's CANCELLED, no peer's reset under it).
        let ours = tonic::Status::from_error(Box::new(h2::Error::from(h2::Reason::CANCEL)));
        assert_eq!(ours.code(), Code::Cancelled);
        assert_eq!(grpc(&ours), Retry::No, "{ours:?}");
    }

    #[test]
    fn a_retry_info_detail_says_how_long_to_wait() {
        let info = RetryInfo {
            retry_delay: Some(bazel_remote_apis::google::protobuf::Duration {
                seconds: 2,
                nanos: 500_000_000,
            }),
        };
        let details = bazel_remote_apis::google::rpc::Status {
            code: Code::ResourceExhausted as i32,
            message: "quota".into(),
            details: vec![bazel_remote_apis::google::protobuf::Any {
                type_url: RETRY_INFO.into(),
                value: info.encode_to_vec(),
            }],
        }
        .encode_to_vec();
        let status = tonic::Status::with_details(Code::ResourceExhausted, "quota", details.into());
        assert_eq!(
            grpc(&status),
            Retry::Yes {
                after: Some(Duration::from_millis(2500))
            }
        );
        assert_eq!(retry_info(b"\xff not a status"), None);
        assert_eq!(
            grpc(&tonic::Status::unavailable("x")),
            Retry::Yes { after: None }
        );
    }

    #[test]
    fn http_429_502_503_504_are_transient_and_retry_after_is_read() {
        let none = HeaderMap::new();
        for code in [429, 502, 503, 504] {
            let status = StatusCode::from_u16(code).expect("a status");
            assert_eq!(http(status, &none), Retry::Yes { after: None }, "{code}");
        }
        for code in [400, 401, 403, 404, 405, 407, 409, 413, 500, 501, 505] {
            let status = StatusCode::from_u16(code).expect("a status");
            assert_eq!(http(status, &none), Retry::No, "{code}");
        }
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static(" 3 "));
        assert_eq!(
            http(StatusCode::SERVICE_UNAVAILABLE, &headers),
            Retry::Yes {
                after: Some(Duration::from_secs(3))
            }
        );
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            http(StatusCode::TOO_MANY_REQUESTS, &headers),
            Retry::Yes { after: None },
            "a date is not read"
        );
        assert_eq!(
            http(StatusCode::FORBIDDEN, &headers),
            Retry::No,
            "a refusal is never retried, whatever it says"
        );
    }

    #[test]
    fn only_a_reset_or_dropped_connection_is_transient_below_a_status() {
        let io = |kind| std::io::Error::from(kind);
        for kind in [
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::BrokenPipe,
            std::io::ErrorKind::UnexpectedEof,
        ] {
            assert!(reset(&io(kind)), "{kind:?}");
            // Under another error too.
            let wrapped = std::io::Error::other(io(kind));
            assert!(reset(&wrapped), "{kind:?} wrapped");
        }
        for kind in [
            std::io::ErrorKind::ConnectionRefused,
            std::io::ErrorKind::TimedOut,
            std::io::ErrorKind::PermissionDenied,
        ] {
            assert!(!reset(&io(kind)), "{kind:?}");
        }
        // An HTTP/2 error this side made is not the peer's reset (h2's `is_reset` and
        // `is_go_away` are a frame received; only h2 itself makes those).
        assert!(!reset(&h2::Error::from(h2::Reason::INTERNAL_ERROR)));
    }

    #[test]
    fn waits_grow_with_full_jitter_up_to_the_cap() {
        let long = Duration::from_secs(3600);
        // The ceiling of each wait: 100 ms, 200, 400, 800, then the 1 s cap.
        let ceilings = [100, 200, 400, 800, 1000, 1000, 1000];
        for (i, ceiling) in ceilings.into_iter().enumerate() {
            let attempt = u32::try_from(i + 1).expect("small");
            let ceiling = Duration::from_millis(ceiling);
            assert_eq!(wait(attempt, 0, None, long), Some(Duration::ZERO));
            assert_eq!(
                wait(
                    attempt,
                    u64::try_from(ceiling.as_nanos()).expect("fits"),
                    None,
                    long
                ),
                Some(ceiling),
                "attempt {attempt}"
            );
            for random in [1, 12_345_678_901, u64::MAX, u64::MAX / 3] {
                let got = wait(attempt, random, None, long).expect("time left");
                assert!(got <= ceiling, "attempt {attempt}: {got:?} > {ceiling:?}");
            }
        }
        // Draws spread over the whole range, not a fixed point.
        let mut seen: Vec<Duration> = (0..1000u64)
            .map(|r| wait(3, r.wrapping_mul(0x9E37_79B9_7F4A_7C15), None, long).expect("time"))
            .collect();
        seen.sort();
        assert!(seen[0] < Duration::from_millis(10), "{:?}", seen[0]);
        assert!(seen[999] > Duration::from_millis(390), "{:?}", seen[999]);
        // A huge attempt number neither overflows nor passes the cap.
        assert!(wait(u32::MAX, u64::MAX, None, long).expect("time") <= CAP);
        // Everything the schedule can wait, over every retry, is bounded.
        let total: Duration = (1..ATTEMPTS)
            .map(|a| wait(a, u64::MAX - 1, None, long).expect("time"))
            .sum();
        assert!(total <= Duration::from_millis(2500), "{total:?}");
    }

    #[test]
    fn a_wait_never_passes_the_deadline_and_the_server_s_ask_is_a_floor() {
        // Less time left than the wait drawn: no retry.
        assert_eq!(wait(1, 50_000_000, None, Duration::from_millis(40)), None);
        assert_eq!(wait(1, 0, None, Duration::ZERO), None);
        assert_eq!(
            wait(1, 50_000_000, None, Duration::from_millis(60)),
            Some(Duration::from_millis(50))
        );
        // The server asks for 2 s: waited, above the cap, when the deadline allows it.
        let asked = Some(Duration::from_secs(2));
        assert_eq!(
            wait(1, 0, asked, Duration::from_secs(10)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(wait(1, 0, asked, Duration::from_secs(1)), None);
        // A jitter longer than what was asked wins.
        assert_eq!(
            wait(
                4,
                700_000_000,
                Some(Duration::from_millis(1)),
                Duration::from_secs(10)
            ),
            Some(Duration::from_millis(700))
        );
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    fn unavailable() -> Failed {
        Failed {
            error: RemoteError::Unavailable {
                remote: "r".into(),
                reason: "503".into(),
            },
            retry: Retry::Yes { after: None },
        }
    }

    #[test]
    fn attempts_end_at_the_first_success_a_lasting_failure_or_the_last_attempt() {
        let rt = runtime();
        let far = Deadline::after(Duration::from_secs(60));
        let tries = AtomicU32::new(0);
        let got = rt.block_on(attempts(far, || async {
            let n = tries.fetch_add(1, Ordering::SeqCst) + 1;
            if n < 3 { Err(unavailable()) } else { Ok(n) }
        }));
        assert_eq!(got.expect("the third passes"), 3);

        tries.store(0, Ordering::SeqCst);
        let got = rt.block_on(attempts(far, || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(Failed::from(RemoteError::Refused {
                remote: "r".into(),
                reason: "401".into(),
            }))
        }));
        assert!(matches!(got, Err(RemoteError::Refused { .. })));
        assert_eq!(tries.load(Ordering::SeqCst), 1, "a refusal is sent once");

        tries.store(0, Ordering::SeqCst);
        let got = rt.block_on(attempts(far, || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(unavailable())
        }));
        assert_eq!(tries.load(Ordering::SeqCst), ATTEMPTS);
        let text = got.expect_err("never passes").to_string();
        assert!(text.contains("503 (gave up after 6 attempts)"), "{text}");
    }

    #[test]
    fn attempts_stop_before_a_wait_would_pass_the_deadline() {
        let rt = runtime();
        let started = Instant::now();
        let tries = AtomicU32::new(0);
        let got = rt.block_on(attempts(
            Deadline::after(Duration::from_secs(5)),
            || async {
                tries.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(Failed {
                    retry: Retry::Yes {
                        after: Some(Duration::from_secs(10)),
                    },
                    ..unavailable()
                })
            },
        ));
        assert!(started.elapsed() < Duration::from_secs(1), "no wait at all");
        assert_eq!(tries.load(Ordering::SeqCst), 1);
        let text = got.expect_err("gave up").to_string();
        assert!(
            text.contains("gave up after 1 attempt: waiting for another would pass"),
            "{text}"
        );
    }
}
