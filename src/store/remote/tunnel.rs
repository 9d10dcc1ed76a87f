//! An HTTP `CONNECT` tunnel through a forward proxy, as the connector tonic dials a
//! `grpc://`/`grpcs://` cache through (tonic has no proxy support of its own): a TCP
//! connection to the proxy, `CONNECT host:port` with the proxy's credentials as
//! `Proxy-Authorization: Basic`, a `2xx` answer, and from then on the bytes of the cache's
//! connection (TLS, when `grpcs://`, is added by tonic on top of the tunnel).
//!
//! Every error names the proxy as [`Proxy`] shows it (credentials redacted) and is a
//! [`TunnelError`], which `grpc.rs` finds in a failed call's causes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tonic::codegen::Service;
use tonic::codegen::http::Uri;

use super::proxy::Proxy;

/// The longest answer to `CONNECT` read (a status line and headers).
const MAX_ANSWER: usize = 16 << 10;

/// Why a tunnel was not opened; the text names the proxy, never its credentials.
#[derive(Debug, thiserror::Error)]
pub(super) enum TunnelError {
    /// The proxy could not be connected to.
    #[error("connect to the proxy {proxy}: {source}")]
    Connect {
        /// The proxy, redacted.
        proxy: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The connection to the proxy failed while the tunnel was asked for.
    #[error("ask the proxy {proxy} for a tunnel: {source}")]
    Io {
        /// The proxy, redacted.
        proxy: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The proxy answered, but not with a tunnel.
    #[error("the proxy {proxy} answered `CONNECT {target}` with {answer}")]
    Refused {
        /// The proxy, redacted.
        proxy: String,
        /// What was asked for.
        target: String,
        /// Its status line (escaped), or what was wrong with the answer.
        answer: String,
    },
}

impl TunnelError {
    /// A short reason, for a message that names the proxy already.
    pub(super) fn reason(&self) -> String {
        match self {
            TunnelError::Connect { source, .. } => connect_reason(source),
            TunnelError::Io { source, .. } => {
                format!("the tunnel could not be asked for: {source}")
            }
            TunnelError::Refused { target, answer, .. } => {
                format!("it answered `CONNECT {target}` with {answer}")
            }
        }
    }
}

/// Why a TCP connection to the proxy was not made, in the words the HTTP backend uses.
pub(super) fn connect_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "the connection was refused".to_owned(),
        std::io::ErrorKind::TimedOut => "no answer in time".to_owned(),
        _ => format!("the connection could not be made: {e}"),
    }
}

/// A connector that opens every connection through `proxy`.
#[derive(Clone)]
pub(super) struct Tunnel {
    proxy: Proxy,
    /// How long the connection to the proxy and its answer to `CONNECT` may take.
    timeout: std::time::Duration,
}

impl Tunnel {
    pub(super) fn new(proxy: Proxy, timeout: std::time::Duration) -> Self {
        Tunnel { proxy, timeout }
    }
}

impl Service<Uri> for Tunnel {
    type Response = TokioIo<TcpStream>;
    type Error = TunnelError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, TunnelError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), TunnelError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let proxy = self.proxy.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let host = uri.host().unwrap_or_default();
            let port = uri
                .port_u16()
                .unwrap_or(if uri.scheme_str() == Some("https") {
                    443
                } else {
                    80
                });
            // `uri.host()` keeps an IPv6 address's brackets, as `CONNECT` writes it.
            let target = format!("{host}:{port}");
            match tokio::time::timeout(timeout, open(&proxy, &target)).await {
                Ok(opened) => opened.map(TokioIo::new),
                Err(_) => Err(TunnelError::Connect {
                    proxy: proxy.to_string(),
                    source: std::io::ErrorKind::TimedOut.into(),
                }),
            }
        })
    }
}

/// A connection to `target` (`host:port`) through `proxy`.
pub(super) async fn open(proxy: &Proxy, target: &str) -> Result<TcpStream, TunnelError> {
    let shown = proxy.to_string();
    let mut stream = TcpStream::connect(proxy.authority())
        .await
        .map_err(|source| TunnelError::Connect {
            proxy: shown.clone(),
            source,
        })?;
    let _ = stream.set_nodelay(true);
    let io = |source| TunnelError::Io {
        proxy: shown.clone(),
        source,
    };
    stream
        .write_all(request(proxy, target).as_bytes())
        .await
        .map_err(io)?;
    // Read up to the blank line, a byte at a time: what follows it is the cache's (an
    // HTTP/2 server sends its settings as soon as the tunnel is open) and stays unread.
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() > MAX_ANSWER {
            return Err(refused(
                proxy,
                target,
                format!("an answer longer than {MAX_ANSWER} bytes"),
            ));
        }
        if stream.read(&mut byte).await.map_err(io)? == 0 {
            return Err(refused(
                proxy,
                target,
                "a closed connection before an answer".to_owned(),
            ));
        }
        answer.push(byte[0]);
    }
    let end = answer.len();
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let status = match response.parse(&answer[..end]) {
        Ok(httparse::Status::Complete(_)) => response.code.unwrap_or_default(),
        _ => {
            return Err(refused(
                proxy,
                target,
                "an answer that is not HTTP".to_owned(),
            ));
        }
    };
    if !(200..300).contains(&status) {
        let line = String::from_utf8_lossy(&answer[..end]);
        let line = line.lines().next().unwrap_or_default();
        let mut why = format!("`{}`", super::backend::escaped(line));
        if status == 407 {
            why.push_str(" (it wants credentials: `user:password@` in the proxy's URL)");
        }
        return Err(refused(proxy, target, why));
    }
    Ok(stream)
}

fn refused(proxy: &Proxy, target: &str, answer: String) -> TunnelError {
    TunnelError::Refused {
        proxy: proxy.to_string(),
        target: target.to_owned(),
        answer,
    }
}

/// The `CONNECT` request for `target`.
fn request(proxy: &Proxy, target: &str) -> String {
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some((user, password)) = proxy.credentials() {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        request.push_str(&format!("Proxy-Authorization: Basic {token}\r\n"));
    }
    request.push_str("\r\n");
    request
}
