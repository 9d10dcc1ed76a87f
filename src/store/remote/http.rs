//! The Bazel HTTP cache protocol: `GET`/`PUT`/`HEAD` on `{base}/cas/<sha256>` for blobs
//! and `{base}/ac/<sha256>` for action-cache entries (a serialized `ActionResult`). Served
//! by bazel-remote, nginx with WebDAV `PUT`, Buildbarn's HTTP frontend, and object stores
//! behind a proxy.

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use futures_util::StreamExt as _;
use prost::Message as _;
use prost::bytes::Bytes;
use reqwest::StatusCode;

use super::backend::{
    Backend, BlobDigest, Capabilities, Fut, MAX_ENTRY_BYTES, RemoteError, escaped,
};
use super::config::Settings;
use super::proxy::Proxy;
use super::retry::{self, Deadline, Failed, Retry};

/// How many requests one call has in flight at once (each with its own retries).
const IN_FLIGHT: usize = 8;

/// A Bazel HTTP cache at `base` (no trailing slash).
pub(super) struct Http {
    name: String,
    base: String,
    /// Made at the first request: building one loads the system's roots, which a
    /// command that never calls the remote (a no-op prove) must not pay for.
    client: std::sync::OnceLock<reqwest::Client>,
    headers: reqwest::header::HeaderMap,
    connect_timeout: std::time::Duration,
    timeout: std::time::Duration,
    /// The proxy every request goes through, if any.
    proxy: Option<Proxy>,
}

impl Http {
    /// A client of the cache `settings` name (`http://` or `https://`).
    pub(super) fn new(settings: &Settings) -> Result<Self, RemoteError> {
        let name = settings.url.clone();
        let mut headers = reqwest::header::HeaderMap::new();
        for (header, value) in &settings.headers {
            let header = reqwest::header::HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| unsupported(&name, format!("`{header}` is not a header name")))?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                unsupported(
                    &name,
                    format!("the value of header `{header}` is not a valid header value"),
                )
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        Ok(Http {
            base: settings.url.trim_end_matches('/').to_owned(),
            name,
            client: std::sync::OnceLock::new(),
            headers,
            connect_timeout: settings.connect_timeout,
            timeout: settings.timeout,
            proxy: settings.route.proxy().cloned(),
        })
    }

    /// The client, made at the first call.
    fn client(&self) -> Result<&reqwest::Client, RemoteError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let builder = reqwest::Client::builder()
            .default_headers(self.headers.clone())
            .connect_timeout(self.connect_timeout)
            // Each read waits at most the request timeout; the cache's overall deadline
            // bounds the whole request, however its bytes trickle in.
            .read_timeout(self.timeout)
            // The route was decided above (`proxy::route`, the same rules as gRPC's): the
            // client never reads the environment's proxy variables itself.
            .no_proxy();
        let builder = match &self.proxy {
            None => builder,
            Some(proxy) => {
                let through = reqwest::Proxy::all(proxy.url_with_credentials())
                    .map_err(|_| self.proxy_failed(proxy, "its URL was refused".to_owned()))?;
                // A plain `http://` request goes to the proxy itself (absolute-form), and a
                // proxy may close a connection after each answer without saying so
                // (tinyproxy speaks HTTP/1.0 to clients): a pooled one could be reused as
                // it closes and the request lost. `https://` keeps its pool: there the
                // connection is the cache's own, inside the tunnel.
                let builder = if self.base.starts_with("https://") {
                    builder
                } else {
                    builder.pool_max_idle_per_host(0)
                };
                builder.proxy(through)
            }
        };
        let client = builder
            .build()
            .map_err(|e| unsupported(&self.name, format!("make an HTTP client: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    fn url(&self, tier: &str, sha256: &crate::store::Sha256) -> String {
        format!("{}/{tier}/{sha256}", self.base)
    }

    fn proxy_failed(&self, proxy: &Proxy, reason: String) -> RemoteError {
        RemoteError::Proxy {
            remote: self.name.clone(),
            proxy: proxy.to_string(),
            variable: proxy.variable().to_owned(),
            reason,
        }
    }

    /// A status that is not an answer; through a proxy, the reason says so (a `502` may be
    /// the proxy's, that could not reach the cache).
    fn status(&self, method: &str, code: StatusCode) -> RemoteError {
        if let Some(proxy) = &self.proxy
            && code == StatusCode::PROXY_AUTHENTICATION_REQUIRED
        {
            return self.proxy_failed(
                proxy,
                format!(
                    "it answered {method} with {code} (it wants credentials: `user:password@` in the proxy's URL)"
                ),
            );
        }
        let mut error = status(&self.name, method, code);
        if let Some(proxy) = &self.proxy {
            let through = format!(" (through the proxy {proxy}, `{}`)", proxy.variable());
            match &mut error {
                RemoteError::Unavailable { reason, .. }
                | RemoteError::Refused { reason, .. }
                | RemoteError::Unsupported { reason, .. }
                | RemoteError::Corrupt { reason, .. }
                | RemoteError::Proxy { reason, .. } => reason.push_str(&through),
            }
        }
        error
    }

    /// A failed request, as a kind of error: through a proxy, a connection that was not
    /// made is the proxy's failure (the only connection made is to it, and a tunnel it
    /// did not open is its answer), unless the cache's own TLS handshake failed.
    fn failed(&self, e: &reqwest::Error) -> RemoteError {
        let error = failed(&self.name, e);
        match (&self.proxy, &error) {
            (Some(proxy), RemoteError::Unavailable { reason, .. })
                if e.is_connect() && !reason.starts_with("the TLS handshake failed") =>
            {
                self.proxy_failed(proxy, reason.clone())
            }
            _ => error,
        }
    }
}

fn unsupported(name: &str, reason: String) -> RemoteError {
    RemoteError::Unsupported {
        remote: name.to_owned(),
        reason,
    }
}

/// A failed request, as a kind of error; never with a header's value in it.
fn failed(name: &str, e: &reqwest::Error) -> RemoteError {
    let reason = if e.is_timeout() {
        "no answer in time".to_owned()
    } else if e.is_connect() {
        // The deepest cause says which: refused, unreachable, or a certificate this
        // machine's roots do not vouch for (`invalid peer certificate: UnknownIssuer`).
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        let cause = escaped(&cause.to_string());
        if cause.to_lowercase().contains("certificate") {
            format!("the TLS handshake failed: {cause}")
        } else if cause.to_lowercase().contains("refused") {
            "the connection was refused".to_owned()
        } else {
            format!("the connection could not be made: {cause}")
        }
    } else {
        // The error's own text names the URL (never a header); its source says why.
        match std::error::Error::source(e) {
            Some(source) => format!("the request failed: {}", escaped(&source.to_string())),
            None => "the request failed".to_owned(),
        }
    };
    RemoteError::Unavailable {
        remote: name.to_owned(),
        reason,
    }
}

/// A status that is not an answer.
fn status(name: &str, method: &str, status: StatusCode) -> RemoteError {
    let reason = format!("{method} answered {status}");
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => RemoteError::Refused {
            remote: name.to_owned(),
            reason,
        },
        s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
            RemoteError::Unavailable {
                remote: name.to_owned(),
                reason,
            }
        }
        _ => unsupported(name, reason),
    }
}

impl Http {
    /// A failed request as an attempt: [`Http::failed`], and whether it may pass when
    /// sent again (a reset connection; `retry.rs` decides).
    fn attempt_failed(&self, e: &reqwest::Error) -> Failed {
        Failed {
            error: self.failed(e),
            retry: retry::http_transport(e),
        }
    }

    /// One attempt of `request` (`method`): its answer, or a failure — a transient status
    /// (429, 502, 503, 504) among them, to be sent again.
    async fn answer(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, Failed> {
        let response = request.send().await.map_err(|e| self.attempt_failed(&e))?;
        let status = response.status();
        match retry::http(status, response.headers()) {
            Retry::No => Ok(response),
            retry => Err(Failed {
                error: self.status(method, status),
                retry,
            }),
        }
    }

    async fn get(
        &self,
        url: &str,
        limit: u64,
        until: Deadline,
    ) -> Result<Option<Vec<u8>>, RemoteError> {
        retry::attempts(until, move || async move {
            let mut response = self.answer("GET", self.client()?.get(url)).await?;
            match response.status() {
                StatusCode::OK => {}
                StatusCode::NOT_FOUND => return Ok(None),
                s => return Err(self.status("GET", s).into()),
            }
            // Read at most one byte more than expected: enough to see a blob is too long.
            // A body announced longer is not read at all.
            if response.content_length().is_some_and(|n| n > limit) {
                return Err(RemoteError::Corrupt {
                    remote: self.name.clone(),
                    reason: format!(
                        "GET {url} announced {} bytes where at most {limit} were expected",
                        response.content_length().unwrap_or_default()
                    ),
                }
                .into());
            }
            let mut body = Vec::new();
            // A connection reset mid-body fails the attempt; the next reads from the start.
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| self.attempt_failed(&e))?
            {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > limit {
                    break;
                }
            }
            Ok(Some(body))
        })
        .await
    }

    /// `PUT`s `body` at `url` (a blob under its digest, an entry under its key: the same
    /// request twice stores the same thing, so it is sent again while it may pass).
    async fn put(&self, url: &str, body: Bytes, until: Deadline) -> Result<(), RemoteError> {
        let body = &body;
        retry::attempts(until, move || async move {
            // Always a length, even 0: nginx's WebDAV refuses a PUT whose empty body it
            // was not told the size of.
            let request = self
                .client()?
                .put(url)
                .header(reqwest::header::CONTENT_LENGTH, body.len())
                .body(body.clone());
            let response = self.answer("PUT", request).await?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(self.status("PUT", response.status()).into())
            }
        })
        .await
    }

    /// Whether the blob at `url` is there (`HEAD`).
    async fn has(&self, url: &str, until: Deadline) -> Result<bool, RemoteError> {
        retry::attempts(until, move || async move {
            let response = self.answer("HEAD", self.client()?.head(url)).await?;
            match response.status() {
                StatusCode::OK => Ok(true),
                StatusCode::NOT_FOUND => Ok(false),
                s => Err(self.status("HEAD", s).into()),
            }
        })
        .await
    }
}

impl Backend for Http {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self, until: Deadline) -> Fut<'_, Capabilities> {
        // The protocol has no capabilities call; a HEAD of the empty blob shows the server
        // answers (any status but a refusal or an error is a cache that can be used).
        Box::pin(async move {
            let url = &self.url("cas", &crate::store::Sha256::of(&[]));
            let response = retry::attempts(until, move || async move {
                self.answer("HEAD", self.client()?.head(url)).await
            })
            .await?;
            let s = response.status();
            if s == StatusCode::UNAUTHORIZED
                || s == StatusCode::FORBIDDEN
                || s == StatusCode::PROXY_AUTHENTICATION_REQUIRED
                || s.is_server_error()
            {
                return Err(self.status("HEAD", s));
            }
            Ok(Capabilities {
                max_batch_bytes: None,
                updates_action_cache: true,
            })
        })
    }

    fn get_action_result(
        &self,
        action: BlobDigest,
        until: Deadline,
    ) -> Fut<'_, Option<reapi::ActionResult>> {
        Box::pin(async move {
            let Some(bytes) = self
                .get(&self.url("ac", &action.sha256), MAX_ENTRY_BYTES, until)
                .await?
            else {
                return Ok(None);
            };
            if bytes.len() as u64 > MAX_ENTRY_BYTES {
                return Err(RemoteError::Corrupt {
                    remote: self.name.clone(),
                    reason: format!(
                        "the entry of {} is larger than {MAX_ENTRY_BYTES} bytes",
                        action.sha256
                    ),
                });
            }
            reapi::ActionResult::decode(bytes.as_slice())
                .map(Some)
                .map_err(|e| RemoteError::Corrupt {
                    remote: self.name.clone(),
                    reason: format!("the entry of {} is not an ActionResult: {e}", action.sha256),
                })
        })
    }

    fn update_action_result(
        &self,
        action: BlobDigest,
        result: reapi::ActionResult,
        until: Deadline,
    ) -> Fut<'_, ()> {
        Box::pin(async move {
            let url = self.url("ac", &action.sha256);
            self.put(&url, Bytes::from(result.encode_to_vec()), until)
                .await
        })
    }

    fn find_missing(&self, blobs: Vec<BlobDigest>, until: Deadline) -> Fut<'_, Vec<BlobDigest>> {
        Box::pin(async move {
            let mut answers = futures_util::stream::iter(blobs)
                .map(|blob| async move {
                    let url = self.url("cas", &blob.sha256);
                    self.has(&url, until).await.map(|has| (blob, has))
                })
                .buffer_unordered(IN_FLIGHT);
            let mut missing = Vec::new();
            // The first failure ends the call (the requests still in flight are dropped).
            while let Some(answer) = answers.next().await {
                let (blob, has) = answer?;
                if !has {
                    missing.push(blob);
                }
            }
            missing.sort();
            Ok(missing)
        })
    }

    fn write_blobs(&self, blobs: Vec<(BlobDigest, Vec<u8>)>, until: Deadline) -> Fut<'_, ()> {
        Box::pin(async move {
            let mut answers = futures_util::stream::iter(blobs)
                .map(|(blob, bytes)| async move {
                    let url = self.url("cas", &blob.sha256);
                    self.put(&url, Bytes::from(bytes), until).await
                })
                .buffer_unordered(IN_FLIGHT);
            while let Some(answer) = answers.next().await {
                answer?;
            }
            Ok(())
        })
    }

    fn read_blob(&self, blob: BlobDigest, until: Deadline) -> Fut<'_, Option<Vec<u8>>> {
        Box::pin(async move {
            self.get(&self.url("cas", &blob.sha256), blob.size, until)
                .await
        })
    }
}
