//! HTTP readiness probing: blocking HTTP/1.1 `GET`s over `std::net::TcpStream`, with short
//! connect and read timeouts, repeated with backoff until the response matches or the
//! probe's timeout passes.
//!
//! The init runs this in a forked child that has entered the run's private network, so a
//! server on the host's loopback is never what answers.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::redact::{redact_all, redact_text};

/// The first delay between attempts; it doubles up to [`MAX_DELAY`].
const FIRST_DELAY: Duration = Duration::from_millis(10);
/// The longest delay between attempts.
const MAX_DELAY: Duration = Duration::from_millis(50);
/// The longest a single connect or read may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
/// How much of a response is read.
const MAX_RESPONSE: usize = 256 * 1024;
/// How much of a body the log and the reasons quote.
const BODY_EXCERPT: usize = 200;

/// Where to send the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The host as written (a name, an IPv4 address, or an IPv6 address without brackets).
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The path and query, from `/`.
    pub(crate) path: String,
    /// The `Host` header.
    pub(crate) authority: String,
}

/// Parses `http://host[:port][/path]` with the `url` crate, by the rules of
/// `proofgraph_graph::readiness` (which the application checks the same URLs with when it
/// reads them, so a URL that passed `validate` is never refused here): plain `http://`,
/// a host, no user information, no fragment, a port other than 0.
pub(crate) fn parse_url(text: &str) -> Result<Target, String> {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL contains whitespace or control characters".to_owned());
    }
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL ({e})"))?;
    if url.scheme() != "http" {
        return Err("only `http://` URLs are supported".to_owned());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("user information (`user@`) is not supported".to_owned());
    }
    if url.fragment().is_some() {
        return Err("a fragment (`#`) has no meaning in a probe".to_owned());
    }
    let host = match url.host() {
        Some(url::Host::Ipv6(address)) => address.to_string(),
        Some(host) => host.to_string(),
        None => String::new(),
    };
    if host.is_empty() {
        return Err("the URL has no host".to_owned());
    }
    let port = url.port_or_known_default().unwrap_or(80);
    if port == 0 {
        return Err("`0` is not a port number".to_owned());
    }
    let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
    Ok(Target {
        host,
        port,
        path: if path.is_empty() {
            "/".to_owned()
        } else {
            path.to_owned()
        },
        authority: url[url::Position::BeforeHost..url::Position::AfterPort].to_owned(),
    })
}

/// Whether the probe can use `url` (for callers that check a URL before they hand it over).
pub fn usable_url(url: &str) -> Result<(), String> {
    parse_url(url).map(|_| ())
}

/// What a response must show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Expectations {
    pub(crate) status: Option<u16>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<String>,
}

/// The result of probing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeOutcome {
    pub(crate) ready: bool,
    pub(crate) attempts: u32,
    pub(crate) duration: Duration,
    /// Empty when ready; otherwise what the last attempt saw, redacted.
    pub(crate) reason: String,
}

/// A parsed response.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Probes until the response matches or `timeout` passes, writing one line per attempt to
/// `log` (redacted with `secrets`). Log write errors are ignored: the outcome still counts.
pub(crate) fn run(
    target: &Target,
    expect: &Expectations,
    timeout: Duration,
    secrets: &[Vec<u8>],
    log: &mut dyn Write,
) -> ProbeOutcome {
    let start = Instant::now();
    let deadline = start + timeout;
    let mut delay = FIRST_DELAY;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let seen = attempt(target, deadline, secrets);
        let verdict = match &seen {
            Ok(response) => check(response, expect, secrets),
            Err(error) => Err(error.clone()),
        };
        let elapsed = start.elapsed();
        let line = match (&seen, &verdict) {
            (Ok(response), Ok(())) => format!(
                "attempt {attempts} at +{}ms: {}; ready\n",
                elapsed.as_millis(),
                describe(response, secrets)
            ),
            (Ok(response), Err(why)) => format!(
                "attempt {attempts} at +{}ms: {}; not ready: {why}\n",
                elapsed.as_millis(),
                describe(response, secrets)
            ),
            (Err(error), _) => format!(
                "attempt {attempts} at +{}ms: {error}\n",
                elapsed.as_millis()
            ),
        };
        let _ignored = log.write_all(redact_text(secrets, &line).as_bytes());
        match verdict {
            Ok(()) => {
                return ProbeOutcome {
                    ready: true,
                    attempts,
                    duration: elapsed,
                    reason: String::new(),
                };
            }
            Err(why) => {
                let now = Instant::now();
                if now + delay >= deadline {
                    let reason = format!(
                        "not ready after {:.1}s and {attempts} attempt{}; the last one saw: {why}",
                        timeout.as_secs_f64(),
                        if attempts == 1 { "" } else { "s" }
                    );
                    return ProbeOutcome {
                        ready: false,
                        attempts,
                        duration: elapsed,
                        reason: redact_text(secrets, &reason),
                    };
                }
                std::thread::sleep(delay);
                delay = (delay * 2).min(MAX_DELAY);
            }
        }
    }
}

/// Checks a response against the expectations. The response is judged as it came; what
/// the reason quotes of it (header values, the start of the body) is redacted of
/// `secrets` before it is cut short or escaped, so no part of a secret survives either.
fn check(response: &Response, expect: &Expectations, secrets: &[Vec<u8>]) -> Result<(), String> {
    match expect.status {
        Some(status) if response.status != status => {
            return Err(format!("status {} instead of {status}", response.status));
        }
        None if !(200..300).contains(&response.status) => {
            return Err(format!("status {} is not 2xx", response.status));
        }
        _ => {}
    }
    for (name, value) in &expect.headers {
        let found: Vec<&str> = response
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        if found.is_empty() {
            return Err(format!("no `{name}` header"));
        }
        if !found.iter().any(|v| v.contains(value.as_str())) {
            return Err(format!(
                "header `{name}: {}` does not contain `{value}`",
                redact_text(secrets, &found.join(", "))
            ));
        }
    }
    if let Some(text) = &expect.body {
        let needle = text.as_bytes();
        let found = needle.is_empty() || response.body.windows(needle.len()).any(|w| w == needle);
        if !found {
            return Err(format!(
                "the body does not contain `{text}` (it starts {:?})",
                excerpt(&response.body, secrets)
            ));
        }
    }
    Ok(())
}

/// One line describing a response, redacted of `secrets`.
fn describe(response: &Response, secrets: &[Vec<u8>]) -> String {
    let headers: Vec<String> = response
        .headers
        .iter()
        .map(|(n, v)| redact_text(secrets, &format!("{n}: {v}")))
        .collect();
    format!(
        "HTTP {}; headers [{}]; body {} bytes starting {:?}",
        response.status,
        headers.join("; "),
        response.body.len(),
        excerpt(&response.body, secrets)
    )
}

/// The first bytes of a body, as text, redacted of `secrets` before it is cut short.
fn excerpt(body: &[u8], secrets: &[Vec<u8>]) -> String {
    let body = redact_all(secrets, body);
    let end = body.len().min(BODY_EXCERPT);
    let mut text = String::from_utf8_lossy(&body[..end]).into_owned();
    if body.len() > end {
        text.push('…');
    }
    text
}

/// Makes one request.
fn attempt(target: &Target, deadline: Instant, secrets: &[Vec<u8>]) -> Result<Response, String> {
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_millis(1), ATTEMPT_TIMEOUT);
    let addresses: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("resolve `{}`: {e}", target.host))?
        .collect();
    let mut last_error = format!("`{}` resolves to no address", target.host);
    let mut stream = None;
    for address in &addresses {
        match TcpStream::connect_timeout(address, remaining) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_error = format!("connect to {address}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last_error)?;
    let io = |e: std::io::Error| format!("exchange with {}:{}: {e}", target.host, target.port);
    stream.set_read_timeout(Some(remaining)).map_err(io)?;
    stream.set_write_timeout(Some(remaining)).map_err(io)?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: proofgraph-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        target.path, target.authority
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&chunk[..n]);
                if raw.len() >= MAX_RESPONSE || response_complete(&raw) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if raw.is_empty() => return Err(io(e)),
            // A read error after some bytes (timeout, reset): judge what arrived.
            Err(_) => break,
        }
    }
    parse_response(&raw, secrets)
}

/// A response head read by `httparse`: its length in bytes, status and headers.
struct Head {
    len: usize,
    status: u16,
    headers: Vec<(String, String)>,
}

/// Reads the head of `raw`; `Ok(None)` while it is incomplete.
fn read_head(raw: &[u8]) -> Result<Option<Head>, httparse::Error> {
    // Few servers send more than a few dozen headers; a head with more is read again with
    // room for as many as the response bound allows.
    let mut few = [httparse::EMPTY_HEADER; 64];
    match read_head_with(raw, &mut few) {
        Err(httparse::Error::TooManyHeaders) => {
            let mut many = vec![httparse::EMPTY_HEADER; MAX_RESPONSE / 4];
            read_head_with(raw, &mut many)
        }
        other => other,
    }
}

fn read_head_with<'b>(
    raw: &'b [u8],
    headers: &mut [httparse::Header<'b>],
) -> Result<Option<Head>, httparse::Error> {
    let mut response = httparse::Response::new(headers);
    let httparse::Status::Complete(len) = response.parse(raw)? else {
        return Ok(None);
    };
    Ok(Some(Head {
        len,
        status: response.code.unwrap_or_default(),
        headers: response
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_owned(),
                    String::from_utf8_lossy(h.value).trim().to_owned(),
                )
            })
            .collect(),
    }))
}

/// Whether `raw` holds a whole response according to its `Content-Length` (so a server
/// that ignores `Connection: close` does not make the probe wait for its read timeout).
fn response_complete(raw: &[u8]) -> bool {
    let Ok(Some(head)) = read_head(raw) else {
        return false;
    };
    let length = head.headers.iter().find_map(|(name, value)| {
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.parse::<usize>().ok())
            .flatten()
    });
    length.is_some_and(|length| raw.len() >= head.len + length)
}

/// Parses a raw HTTP/1.x response (status line, headers, body; chunked bodies decoded).
/// What an error quotes of it is redacted of `secrets`.
fn parse_response(raw: &[u8], secrets: &[Vec<u8>]) -> Result<Response, String> {
    if raw.is_empty() {
        return Err("the server closed the connection without answering".to_owned());
    }
    let head = match read_head(raw) {
        Ok(Some(head)) => head,
        Ok(None) => {
            return Err(format!(
                "incomplete response head (starts {:?})",
                excerpt(raw, secrets)
            ));
        }
        Err(httparse::Error::Version) => {
            return Err(format!(
                "not an HTTP response (starts {:?})",
                excerpt(raw, secrets)
            ));
        }
        Err(error) => {
            return Err(format!(
                "malformed response head: {error} (starts {:?})",
                excerpt(raw, secrets)
            ));
        }
    };
    let mut body = raw[head.len..].to_vec();
    let chunked = head.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Ok(Response {
        status: head.status,
        headers: head.headers,
        body,
    })
}

/// Decodes a chunked body as far as it is complete.
fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(httparse::Status::Complete((start, size))) = httparse::parse_chunk_size(data) {
        let Ok(size) = usize::try_from(size) else {
            break;
        };
        if size == 0 {
            break;
        }
        let end = start.saturating_add(size).min(data.len());
        out.extend_from_slice(&data[start..end]);
        if end + 2 > data.len() {
            break;
        }
        data = &data[end + 2..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn urls_are_parsed() {
        let target = parse_url("http://127.0.0.1:4180/health?x=1").ok();
        assert_eq!(
            target,
            Some(Target {
                host: "127.0.0.1".to_owned(),
                port: 4180,
                path: "/health?x=1".to_owned(),
                authority: "127.0.0.1:4180".to_owned(),
            })
        );
        let bare = parse_url("http://localhost").ok();
        assert_eq!(bare.map(|t| (t.port, t.path)), Some((80, "/".to_owned())));
        let v6 = parse_url("http://[::1]:8080/").ok();
        assert_eq!(v6.map(|t| t.host), Some("::1".to_owned()));
        for bad in [
            "https://x/",
            "http://u@x/",
            "http://x:0/",
            "http://x:99999/",
            "http:///",
            "http://x/#a",
            "ftp://x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn responses_are_parsed_and_checked() {
        let raw = b"HTTP/1.1 200 OK\r\nX-Identity: build-42\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let response = parse_response(raw, &[]);
        assert!(response.is_ok());
        let Ok(response) = response else { return };
        assert_eq!(response.body, b"hello world".to_vec());
        let ok = Expectations {
            status: Some(200),
            headers: vec![("x-identity".to_owned(), "42".to_owned())],
            body: Some("o w".to_owned()),
        };
        assert_eq!(check(&response, &ok, &[]), Ok(()));
        let wrong_body = Expectations {
            body: Some("bye".to_owned()),
            ..Expectations::default()
        };
        assert!(
            check(&response, &wrong_body, &[]).is_err_and(|e| e.contains("does not contain `bye`"))
        );
        let wrong_header = Expectations {
            headers: vec![("x-identity".to_owned(), "43".to_owned())],
            ..Expectations::default()
        };
        assert!(check(&response, &wrong_header, &[]).is_err_and(|e| e.contains("build-42")));
        let wrong_status = Expectations {
            status: Some(204),
            ..Expectations::default()
        };
        assert!(check(&response, &wrong_status, &[]).is_err());
    }

    #[test]
    fn what_a_reason_quotes_of_a_response_is_redacted_before_it_is_cut_or_escaped() {
        let secret = "to\"ken-secret-\\value";
        let secrets = [secret.as_bytes().to_vec()];
        // The secret in a header and across the end of the body's excerpt.
        let body = format!("{}{secret} tail", "b".repeat(BODY_EXCERPT - 6));
        let raw = format!(
            "HTTP/1.1 200 OK\r\nX-Token: v {secret}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let response = parse_response(raw.as_bytes(), &secrets);
        assert!(response.is_ok());
        let Ok(response) = response else { return };
        let expect = Expectations {
            headers: vec![("x-token".to_owned(), "other".to_owned())],
            body: Some("absent".to_owned()),
            ..Expectations::default()
        };
        let header = check(&response, &expect, &secrets)
            .err()
            .unwrap_or_default();
        let body_only = Expectations {
            body: Some("absent".to_owned()),
            ..Expectations::default()
        };
        let body = check(&response, &body_only, &secrets)
            .err()
            .unwrap_or_default();
        let line = describe(&response, &secrets);
        for text in [&header, &body, &line] {
            // Neither the secret nor its start, raw or as `{:?}` escapes it.
            for leak in ["to\"ken", "to\\\"ken", "secret-"] {
                assert!(!text.contains(leak), "{leak} in {text}");
            }
        }
        assert!(header.contains("[redacted]"), "{header}");
        // (The excerpt cuts the marker, never the secret.)
        assert!(body.contains("[redac"), "{body}");
        // A response that is no HTTP quotes its start redacted too.
        let junk = format!("{secret} junk\r\n\r\n");
        let err = parse_response(junk.as_bytes(), &secrets)
            .err()
            .unwrap_or_default();
        assert!(
            err.contains("[redacted]") && !err.contains("ken-secret"),
            "{err}"
        );
    }

    #[test]
    fn a_refused_connection_gives_up_after_the_timeout() {
        // Bind then drop to find a port nobody listens on.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(1);
        let target = parse_url(&format!("http://127.0.0.1:{port}/"));
        assert!(target.is_ok());
        let Ok(target) = target else { return };
        let mut log = Vec::new();
        let started = Instant::now();
        let outcome = run(
            &target,
            &Expectations::default(),
            Duration::from_millis(200),
            &[],
            &mut log,
        );
        assert!(!outcome.ready);
        assert!(outcome.attempts >= 3, "{outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(outcome.reason.contains("refused"), "{}", outcome.reason);
        assert!(String::from_utf8_lossy(&log).contains("attempt 1 at +"));
    }
}
