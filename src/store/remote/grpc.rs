//! The Remote Execution API v2 over gRPC (`grpc://host:port[/instance]`, `grpcs://` with
//! the system's roots): the protocol of bazel-remote, Buildbarn, BuildGrid, NativeLink,
//! BuildBuddy and EngFlow.
//!
//! `Capabilities.GetCapabilities` first (SHA-256 or nothing), `ActionCache.GetActionResult`
//! / `UpdateActionResult` for entries, `ContentAddressableStorage.FindMissingBlobs`, and
//! blobs by `BatchUpdateBlobs` / `BatchReadBlobs` while they fit the server's batch limit,
//! through `ByteStream.Write` / `Read` (1 MiB chunks) above it. The instance name is the
//! URL's path without its leading slash.
//!
//! One channel, made at the first call, on the runtime of that call (tonic spawns its
//! connection there): opening sends nothing and needs no runtime. Every later call must come
//! from that same runtime — the invocation's one multi-thread runtime
//! (`session::context::Context::runtime`), whose workers drive the connection while other
//! threads (the run's loop, the upload thread) block in it. Every call carries the configured headers as metadata
//! (marked sensitive) and a deadline; no error text holds a header's value.

use std::sync::OnceLock;
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::bytestream;
use bytestream::byte_stream_client::ByteStreamClient;
use reapi::action_cache_client::ActionCacheClient;
use reapi::capabilities_client::CapabilitiesClient;
use reapi::content_addressable_storage_client::ContentAddressableStorageClient;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

use super::backend::{
    Backend, BlobDigest, Capabilities, Fut, MAX_ENTRY_BYTES, RemoteError, escaped,
};
use super::config::Settings;
use super::proxy::Proxy;
use super::retry::{self, Deadline, Failed};
use super::tunnel::{Tunnel, TunnelError};
use crate::base::redact::Secrets;

/// The batch limit when the server states none (`max_batch_total_size_bytes: 0`): 4 MiB,
/// gRPC's usual largest message.
pub(super) const DEFAULT_BATCH_BYTES: u64 = 4 << 20;
/// The largest batch sent or asked for, whatever the server states (larger batches save
/// nothing worth a message that size).
const MAX_BATCH_BYTES: u64 = 16 << 20;
/// What a batch request holds besides its blobs and their framing, kept free under the
/// limit: the instance name, the digest function, gRPC's own framing.
const FRAMING: u64 = 4 << 10;
/// An upper bound on what one blob adds to a batch message besides its bytes: its digest
/// (64 hex digits and a size), its status, and the fields' tags and lengths.
const PER_BLOB: u64 = 256;
/// A ByteStream chunk.
const CHUNK: usize = 1 << 20;
/// The largest message read: a batch at `MAX_BATCH_BYTES`, with room to see a blob that
/// grew on the server's disk.
const MAX_MESSAGE: usize = 32 << 20;
/// Digests asked about in one `FindMissingBlobs`.
const FIND_PAGE: usize = 4096;
/// The digest function of every request.
const SHA256: i32 = reapi::digest_function::Value::Sha256 as i32;

/// A Remote Execution API cache (and, through [`Grpc::channel`], the connection a
/// Remote Workers API client shares with it).
pub(crate) struct Grpc {
    name: String,
    instance: String,
    endpoint: Endpoint,
    /// The channel, made at the first call (see the module's documentation).
    channel: OnceLock<Channel>,
    metadata: Vec<(AsciiMetadataKey, AsciiMetadataValue)>,
    /// The headers' values, kept out of every error text (by the one redactor,
    /// `base::redact`, raw and through the escapes a server's message may put them in).
    secrets: Secrets,
    timeout: Duration,
    /// What the server said at first contact.
    capabilities: tokio::sync::OnceCell<Capabilities>,
    /// The proxy every connection is tunnelled through, if any.
    proxy: Option<Proxy>,
    /// How long a tunnel may take to open.
    connect_timeout: Duration,
}

fn unsupported(name: &str, reason: String) -> RemoteError {
    RemoteError::Unsupported {
        remote: name.to_owned(),
        reason,
    }
}

/// Where `blob` is read with ByteStream.
pub(super) fn read_resource(instance: &str, blob: BlobDigest) -> String {
    format!("{}blobs/{}/{}", prefix(instance), blob.sha256, blob.size)
}

/// Where `blob` is written with ByteStream, in the upload `uuid`.
pub(super) fn write_resource(instance: &str, uuid: &str, blob: BlobDigest) -> String {
    format!(
        "{}uploads/{uuid}/blobs/{}/{}",
        prefix(instance),
        blob.sha256,
        blob.size
    )
}

fn prefix(instance: &str) -> String {
    if instance.is_empty() {
        String::new()
    } else {
        format!("{instance}/")
    }
}

/// A random (version 4) UUID, as an upload's name, spelled as the `uuid` crate spells it.
fn upload_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No randomness: the clock still tells concurrent uploads apart in practice.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = (nanos ^ u128::from(std::process::id())).to_le_bytes();
    }
    uuid::Builder::from_random_bytes(b)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// The batch limit to use for a server that states `stated` bytes (0: none stated).
pub(super) fn batch_limit(stated: i64) -> u64 {
    match u64::try_from(stated) {
        Ok(0) | Err(_) => DEFAULT_BATCH_BYTES,
        Ok(n) => n.min(MAX_BATCH_BYTES),
    }
}

/// Whether a blob of `size` bytes goes in a batch under `limit`.
fn fits_batch(size: u64, limit: u64) -> bool {
    size.saturating_add(PER_BLOB) <= limit.saturating_sub(FRAMING)
}

/// Blobs of `sizes` into batches under `limit` (each a list of indices, in order) and the
/// blobs that go alone through ByteStream.
pub(super) fn batches(sizes: &[u64], limit: u64) -> (Vec<Vec<usize>>, Vec<usize>) {
    let budget = limit.saturating_sub(FRAMING);
    let mut batches = Vec::new();
    let mut alone = Vec::new();
    let mut current = Vec::new();
    let mut used = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        if !fits_batch(size, limit) {
            alone.push(i);
            continue;
        }
        let cost = size + PER_BLOB;
        if used + cost > budget {
            batches.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push(i);
        used += cost;
    }
    if !current.is_empty() {
        batches.push(current);
    }
    (batches, alone)
}

/// How a status counts: the same kinds the HTTP backend gives HTTP statuses.
pub(super) fn failure(name: &str, code: Code, reason: String) -> RemoteError {
    let remote = name.to_owned();
    match code {
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Internal
        | Code::Unknown
        // The server gave up on the call (a conflict, a transaction aborted): `retry.rs`
        // sends it again, and a server that keeps answering so is unavailable.
        | Code::Aborted
        // The call was cut off (tonic's own deadline, a connection that went away).
        | Code::Cancelled => RemoteError::Unavailable { remote, reason },
        Code::Unauthenticated | Code::PermissionDenied => RemoteError::Refused { remote, reason },
        // The server says what it holds is damaged (BuildGrid: a blob shorter on its disk
        // than its digest says): the blob's fault, as a digest mismatch is.
        Code::DataLoss => RemoteError::Corrupt { remote, reason },
        _ => RemoteError::Unsupported { remote, reason },
    }
}

/// Whether `status` is tonic refusing to decode a message over the size the client
/// allowed (the server sent more than was asked for).
fn oversized(status: &Status) -> bool {
    status.code() == Code::OutOfRange && status.message().contains("message length too large")
}

/// A status's name as the gRPC specification spells it.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// What the server offers, as this client uses it: SHA-256 or a refusal naming what it
/// offers instead.
pub(super) fn judge(
    name: &str,
    server: &reapi::ServerCapabilities,
) -> Result<Capabilities, RemoteError> {
    let Some(cache) = &server.cache_capabilities else {
        return Err(unsupported(
            name,
            "the server offers no remote cache (no cache capabilities)".to_owned(),
        ));
    };
    if !cache.digest_functions.contains(&SHA256) {
        let offered: Vec<String> = cache
            .digest_functions
            .iter()
            .map(|f| {
                reapi::digest_function::Value::try_from(*f).map_or_else(
                    |_| format!("digest function {f}"),
                    |v| v.as_str_name().to_owned(),
                )
            })
            .collect();
        let offered = if offered.is_empty() {
            "none".to_owned()
        } else {
            offered.join(", ")
        };
        return Err(unsupported(
            name,
            format!("the server does not offer SHA-256 digests (it offers {offered})"),
        ));
    }
    Ok(Capabilities {
        max_batch_bytes: Some(batch_limit(cache.max_batch_total_size_bytes)),
        updates_action_cache: cache
            .action_cache_update_capabilities
            .as_ref()
            .is_some_and(|u| u.update_enabled),
    })
}

impl Grpc {
    /// A client of the cache `settings` name (`grpc://`, or `grpcs://` when `tls`). Nothing
    /// is sent, and no runtime is needed, until the first call.
    pub(crate) fn new(settings: &Settings, tls: bool) -> Result<Self, RemoteError> {
        let name = settings.url.clone();
        let url = url::Url::parse(&settings.url)
            .map_err(|e| unsupported(&name, format!("`{name}` is not a URL: {e}")))?;
        let instance = super::config::instance(&settings.url)
            .map_err(|problem| unsupported(&name, problem.to_string()))?;
        let host = url
            .host_str()
            .ok_or_else(|| unsupported(&name, format!("`{name}` names no host")))?;
        let port = match (url.port(), tls) {
            (Some(port), _) => port,
            (None, true) => 443,
            (None, false) => {
                return Err(unsupported(
                    &name,
                    format!("`{name}` names no port (`grpc://host:port`)"),
                ));
            }
        };
        let scheme = if tls { "https" } else { "http" };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{host}:{port}"))
            .map_err(|e| unsupported(&name, format!("`{name}` is not a gRPC address: {e}")))?
            .tcp_nodelay(true);
        // Through a proxy the tunnel bounds its own connection (and its error names the
        // proxy); tonic's timeout around it would name nobody.
        if settings.route.proxy().is_none() {
            endpoint = endpoint.connect_timeout(settings.connect_timeout);
        }
        if tls {
            let domain = host.trim_start_matches('[').trim_end_matches(']');
            endpoint = endpoint
                .tls_config(
                    ClientTlsConfig::new()
                        .with_native_roots()
                        .domain_name(domain),
                )
                .map_err(|e| unsupported(&name, format!("set up TLS: {e}")))?;
        }
        let mut metadata = Vec::new();
        for (header, value) in &settings.headers {
            let lower = header.to_ascii_lowercase();
            let key = AsciiMetadataKey::from_bytes(lower.as_bytes()).map_err(|_| {
                unsupported(
                    &name,
                    format!(
                        "`{header}` is not a gRPC metadata name (binary `-bin` names are not sent)"
                    ),
                )
            })?;
            let mut value = AsciiMetadataValue::try_from(value.as_str()).map_err(|_| {
                unsupported(
                    &name,
                    format!("the value of header `{header}` is not valid gRPC metadata"),
                )
            })?;
            value.set_sensitive(true);
            metadata.push((key, value));
        }
        Ok(Grpc {
            name,
            instance,
            endpoint,
            channel: OnceLock::new(),
            metadata,
            secrets: Secrets::new(settings.headers.iter().map(|(_, v)| v.clone().into_bytes())),
            timeout: settings.timeout,
            capabilities: tokio::sync::OnceCell::new(),
            proxy: settings.route.proxy().cloned(),
            connect_timeout: settings.connect_timeout,
        })
    }

    /// The channel: made at the first call, on the calling runtime, since tonic runs a
    /// channel's connection as a task of the runtime that made it.
    pub(crate) fn channel(&self) -> Channel {
        self.channel
            .get_or_init(|| match &self.proxy {
                None => self.endpoint.connect_lazy(),
                // tonic puts TLS (`grpcs://`) and the connect timeout around the tunnel.
                Some(proxy) => self
                    .endpoint
                    .connect_with_connector_lazy(Tunnel::new(proxy.clone(), self.connect_timeout)),
            })
            .clone()
    }

    fn cas(&self) -> ContentAddressableStorageClient<Channel> {
        ContentAddressableStorageClient::new(self.channel())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE)
    }

    fn bytestream(&self) -> ByteStreamClient<Channel> {
        ByteStreamClient::new(self.channel())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE)
    }

    /// `message` with the headers and the deadline (sent as `grpc-timeout`, which tonic
    /// and the server both enforce).
    pub(crate) fn request<T>(&self, message: T) -> Request<T> {
        let mut request = self.stream_request(message);
        request.set_timeout(self.timeout);
        request
    }

    /// `message` with the headers and no deadline for the whole call: a ByteStream call
    /// lasts as long as its blob takes to move, and its deadline bounds each chunk instead.
    pub(crate) fn stream_request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        for (key, value) in &self.metadata {
            request.metadata_mut().insert(key.clone(), value.clone());
        }
        request
    }

    /// A failed call as an error; the text holds no header value.
    pub(crate) fn failed(&self, method: &str, status: &Status) -> RemoteError {
        // tonic enforces the deadline each request carries (`grpc-timeout`) itself.
        let mut source = std::error::Error::source(status);
        while let Some(cause) = source {
            if cause.is::<tonic::TimeoutExpired>() {
                return self.timed_out(method);
            }
            // The tunnel was not opened: the proxy's failure, not the cache's.
            if let (Some(proxy), Some(tunnel)) = (&self.proxy, cause.downcast_ref::<TunnelError>())
            {
                return RemoteError::Proxy {
                    remote: self.name.clone(),
                    proxy: proxy.to_string(),
                    variable: proxy.variable().to_owned(),
                    reason: self.redacted(&tunnel.reason()),
                };
            }
            source = cause.source();
        }
        let mut reason = format!("{method} answered {}", code_name(status.code()));
        if !status.message().is_empty() {
            reason.push_str(": ");
            reason.push_str(&escaped(&self.redacted(status.message())));
        }
        // The transport's cause (a refused connection, a reset stream), deepest last.
        let mut source = std::error::Error::source(status);
        let mut causes = Vec::new();
        while let Some(cause) = source {
            let text = escaped(&self.redacted(&cause.to_string()));
            if !reason.contains(&text) && !causes.contains(&text) {
                causes.push(text);
            }
            source = cause.source();
        }
        if !causes.is_empty() {
            reason.push_str(&format!(" ({})", causes.join(": ")));
        }
        failure(&self.name, status.code(), self.redacted(&reason))
    }

    /// A failed call as an attempt: [`Grpc::failed`], and whether it may pass when sent
    /// again (`retry.rs` decides).
    pub(crate) fn attempt_failed(&self, method: &str, status: &Status) -> Failed {
        Failed {
            error: self.failed(method, status),
            retry: retry::grpc(status),
        }
    }

    /// A per-blob status that is not OK, as an error.
    fn blob_failed(
        &self,
        method: &str,
        blob: &str,
        status: &bazel_remote_apis::google::rpc::Status,
    ) -> RemoteError {
        let code = Code::from_i32(status.code);
        let mut reason = format!("{method} answered {} for the blob {blob}", code_name(code));
        if !status.message.is_empty() {
            reason.push_str(": ");
            reason.push_str(&escaped(&self.redacted(&status.message)));
        }
        failure(&self.name, code, self.redacted(&reason))
    }

    /// `text` without the headers' values. A server's text is redacted before it is
    /// escaped and cut to length (`escaped`), so a cut never leaves part of a value behind.
    fn redacted(&self, text: &str) -> String {
        self.secrets.text(text).into_owned()
    }

    /// A server that sent more of `blob` than its size in one message.
    fn too_long(&self, method: &str, blob: BlobDigest) -> RemoteError {
        RemoteError::Corrupt {
            remote: self.name.clone(),
            reason: format!("{method} sent a message larger than the blob {blob}"),
        }
    }

    fn timed_out(&self, method: &str) -> RemoteError {
        RemoteError::Unavailable {
            remote: self.name.clone(),
            reason: format!("{method}: no answer within {:?}", self.timeout),
        }
    }

    /// One call, under the request deadline.
    async fn unary<T>(
        &self,
        method: &str,
        call: impl Future<Output = Result<tonic::Response<T>, Status>>,
    ) -> Result<Result<T, Status>, RemoteError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(answer) => Ok(answer.map(tonic::Response::into_inner)),
            Err(_) => Err(self.timed_out(method)),
        }
    }

    /// `GetCapabilities`, judged.
    async fn ask_capabilities(&self, until: Deadline) -> Result<Capabilities, RemoteError> {
        let server = self.server_capabilities(until).await?;
        judge(&self.name, &server)
    }

    /// The instance name requests carry.
    pub(crate) fn instance(&self) -> &str {
        &self.instance
    }

    /// The deadline of one request.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `GetCapabilities`, as the server answered (its execution capabilities too).
    pub(crate) async fn server_capabilities(
        &self,
        until: Deadline,
    ) -> Result<reapi::ServerCapabilities, RemoteError> {
        let method = "GetCapabilities";
        retry::attempts(until, move || async move {
            let mut client = CapabilitiesClient::new(self.channel());
            let request = self.request(reapi::GetCapabilitiesRequest {
                instance_name: self.instance.clone(),
            });
            self.unary(method, client.get_capabilities(request))
                .await?
                .map_err(|s| self.attempt_failed(method, &s))
        })
        .await
    }

    /// The batch limit, asking the server once if no call has yet.
    async fn limit(&self, until: Deadline) -> Result<u64, RemoteError> {
        let capabilities = self
            .capabilities
            .get_or_try_init(|| self.ask_capabilities(until))
            .await?;
        Ok(capabilities.max_batch_bytes.unwrap_or(DEFAULT_BATCH_BYTES))
    }

    /// One `BatchUpdateBlobs` attempt: a batch failed for one blob is sent again whole.
    async fn batch_update(&self, blobs: &[(BlobDigest, Vec<u8>)]) -> Result<(), Failed> {
        let method = "BatchUpdateBlobs";
        let requests = blobs
            .iter()
            .map(
                |(digest, data)| reapi::batch_update_blobs_request::Request {
                    digest: Some(digest.to_reapi()),
                    data: data.clone(),
                    compressor: 0,
                },
            )
            .collect();
        let request = self.request(reapi::BatchUpdateBlobsRequest {
            instance_name: self.instance.clone(),
            requests,
            digest_function: SHA256,
        });
        let answer = self
            .unary(method, self.cas().batch_update_blobs(request))
            .await?
            .map_err(|s| self.attempt_failed(method, &s))?;
        for response in answer.responses {
            let Some(status) = response.status.filter(|s| s.code != Code::Ok as i32) else {
                continue;
            };
            let blob = response.digest.as_ref().map_or_else(
                || "it did not name".to_owned(),
                |d| format!("{}/{}", d.hash, d.size_bytes),
            );
            return Err(Failed {
                error: self.blob_failed(method, &blob, &status),
                retry: retry::grpc_blob(Code::from_i32(status.code)),
            });
        }
        Ok(())
    }

    /// One blob through `ByteStream.Write`, in chunks. The deadline applies to each chunk
    /// handed to the connection, so a large blob that keeps moving is never cut off and one
    /// that stalls is. Once the last is handed over, the answer is awaited for the deadline
    /// plus the time the upload took so far plus a second per MiB of the blob: the
    /// connection's buffers can take a whole blob of several MiB at once (BuildGrid's took
    /// 8 MiB in 15 ms), and it reaches the server only at the link's pace.
    ///
    /// Each attempt is an upload of its own name (a fresh UUID), from the first byte.
    async fn stream_write(&self, blob: BlobDigest, bytes: &[u8]) -> Result<(), Failed> {
        let method = "ByteStream.Write";
        let resource = write_resource(&self.instance, &upload_id(), blob);
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let timeout = self.timeout;
        let feed = async move {
            let total = bytes.len();
            let mut offset = 0usize;
            let chunks: Vec<&[u8]> = if bytes.is_empty() {
                vec![&[]]
            } else {
                bytes.chunks(CHUNK).collect()
            };
            for chunk in chunks {
                let message = bytestream::WriteRequest {
                    resource_name: if offset == 0 {
                        resource.clone()
                    } else {
                        String::new()
                    },
                    write_offset: i64::try_from(offset).unwrap_or(i64::MAX),
                    finish_write: offset + chunk.len() == total,
                    data: chunk.to_vec(),
                };
                match tokio::time::timeout(timeout, tx.send(message)).await {
                    Ok(Ok(())) => {}
                    // The call ended early; its answer says why.
                    Ok(Err(_)) => return true,
                    Err(_) => return false,
                }
                offset += chunk.len();
            }
            true
        };
        let mut client = self.bytestream();
        let started = std::time::Instant::now();
        let call = client.write(self.stream_request(ReceiverStream::new(rx)));
        tokio::pin!(call);
        let answer = tokio::select! {
            answer = &mut call => answer,
            fed = feed => {
                if !fed {
                    return Err(RemoteError::Unavailable {
                        remote: self.name.clone(),
                        reason: format!("{method}: the server took no data for {timeout:?}"),
                    }
                    .into());
                }
                let drain = timeout
                    + started.elapsed()
                    + Duration::from_secs_f64(blob.size as f64 / CHUNK as f64);
                match tokio::time::timeout(drain, call).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        return Err(RemoteError::Unavailable {
                            remote: self.name.clone(),
                            reason: format!("{method}: no answer within {drain:?} of the last chunk"),
                        }
                        .into());
                    }
                }
            }
        };
        let answer = answer
            .map_err(|s| self.attempt_failed(method, &s))?
            .into_inner();
        if u64::try_from(answer.committed_size).ok() != Some(blob.size) {
            return Err(unsupported(
                &self.name,
                format!(
                    "{method} committed {} bytes of the blob {blob}",
                    answer.committed_size
                ),
            )
            .into());
        }
        Ok(())
    }

    async fn batch_read(&self, blob: BlobDigest) -> Result<Option<Vec<u8>>, Failed> {
        let method = "BatchReadBlobs";
        let request = self.request(reapi::BatchReadBlobsRequest {
            instance_name: self.instance.clone(),
            digests: vec![blob.to_reapi()],
            acceptable_compressors: Vec::new(),
            digest_function: SHA256,
        });
        // The answer holds this one blob: a larger message is not read.
        let limit = usize::try_from(blob.size + PER_BLOB + FRAMING).unwrap_or(MAX_MESSAGE);
        let mut client = self.cas().max_decoding_message_size(limit.min(MAX_MESSAGE));
        let answer = match self.unary(method, client.batch_read_blobs(request)).await? {
            Ok(answer) => answer,
            Err(s) if oversized(&s) => return Err(self.too_long(method, blob).into()),
            Err(s) => return Err(self.attempt_failed(method, &s)),
        };
        let wanted = blob.to_reapi();
        let Some(response) = answer
            .responses
            .into_iter()
            .find(|r| r.digest.as_ref().is_some_and(|d| d.hash == wanted.hash))
        else {
            return Err(unsupported(
                &self.name,
                format!("{method} did not answer for the blob {blob}"),
            )
            .into());
        };
        match response.status {
            Some(s) if s.code == Code::NotFound as i32 => Ok(None),
            Some(s) if s.code != Code::Ok as i32 => Err(Failed {
                error: self.blob_failed(method, &blob.to_string(), &s),
                retry: retry::grpc_blob(Code::from_i32(s.code)),
            }),
            _ if response.compressor != 0 => Err(unsupported(
                &self.name,
                format!("{method} sent the blob {blob} compressed, which was not asked for"),
            )
            .into()),
            _ => Ok(Some(response.data)),
        }
    }

    /// One blob through `ByteStream.Read`: at most one byte more than `blob`'s size (enough
    /// to see it is too long), and no chunk larger than that is even decoded — whatever the
    /// server streams, what is held stays within the size the caller allowed; the deadline
    /// applies to each chunk (the cache's overall deadline to the whole read).
    ///
    /// A stream dropped or reset mid-way fails the attempt; the next reads from the start.
    async fn stream_read(&self, blob: BlobDigest) -> Result<Option<Vec<u8>>, Failed> {
        let method = &format!("ByteStream.Read of the blob {blob}");
        let request = self.stream_request(bytestream::ReadRequest {
            resource_name: read_resource(&self.instance, blob),
            read_offset: 0,
            read_limit: 0,
        });
        let chunk_limit = usize::try_from(blob.size.saturating_add(1 + FRAMING))
            .unwrap_or(MAX_MESSAGE)
            .min(MAX_MESSAGE);
        let mut client = self.bytestream().max_decoding_message_size(chunk_limit);
        let mut stream = match self.unary(method, client.read(request)).await? {
            Ok(stream) => stream,
            Err(s) if s.code() == Code::NotFound => return Ok(None),
            Err(s) if oversized(&s) => return Err(self.too_long(method, blob).into()),
            Err(s) => return Err(self.attempt_failed(method, &s)),
        };
        let capacity = usize::try_from(blob.size.min(MAX_MESSAGE as u64)).unwrap_or(MAX_MESSAGE);
        let mut data = Vec::with_capacity(capacity);
        loop {
            match tokio::time::timeout(self.timeout, stream.message()).await {
                Err(_) => return Err(self.timed_out(method).into()),
                Ok(Err(s)) if s.code() == Code::NotFound && data.is_empty() => return Ok(None),
                Ok(Err(s)) if oversized(&s) => return Err(self.too_long(method, blob).into()),
                Ok(Err(s)) => return Err(self.attempt_failed(method, &s)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => {
                    data.extend_from_slice(&chunk.data);
                    if data.len() as u64 > blob.size {
                        break;
                    }
                }
            }
        }
        Ok(Some(data))
    }
}

impl Backend for Grpc {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self, until: Deadline) -> Fut<'_, Capabilities> {
        Box::pin(async move {
            let capabilities = self.ask_capabilities(until).await?;
            let _ = self.capabilities.set(capabilities);
            Ok(capabilities)
        })
    }

    fn get_action_result(
        &self,
        action: BlobDigest,
        until: Deadline,
    ) -> Fut<'_, Option<reapi::ActionResult>> {
        Box::pin(retry::attempts(until, move || async move {
            let method = "GetActionResult";
            // An entry of ours lists a few files; a larger answer is not read.
            let mut client = ActionCacheClient::new(self.channel())
                .max_decoding_message_size(MAX_ENTRY_BYTES as usize);
            let request = self.request(reapi::GetActionResultRequest {
                instance_name: self.instance.clone(),
                action_digest: Some(action.to_reapi()),
                inline_stdout: false,
                inline_stderr: false,
                inline_output_files: Vec::new(),
                digest_function: SHA256,
            });
            match self
                .unary(method, client.get_action_result(request))
                .await?
            {
                Ok(result) => Ok(Some(result)),
                Err(s) if s.code() == Code::NotFound => Ok(None),
                Err(s) => Err(self.attempt_failed(method, &s)),
            }
        }))
    }

    fn update_action_result(
        &self,
        action: BlobDigest,
        result: reapi::ActionResult,
        until: Deadline,
    ) -> Fut<'_, ()> {
        Box::pin(async move {
            let result = &result;
            // The same entry under the same key: sent again, it changes nothing more.
            retry::attempts(until, move || async move {
                let method = "UpdateActionResult";
                let mut client =
                    ActionCacheClient::new(self.channel()).max_decoding_message_size(MAX_MESSAGE);
                let request = self.request(reapi::UpdateActionResultRequest {
                    instance_name: self.instance.clone(),
                    action_digest: Some(action.to_reapi()),
                    action_result: Some(result.clone()),
                    results_cache_policy: None,
                    digest_function: SHA256,
                });
                self.unary(method, client.update_action_result(request))
                    .await?
                    .map_err(|s| self.attempt_failed(method, &s))?;
                Ok(())
            })
            .await
        })
    }

    fn find_missing(&self, blobs: Vec<BlobDigest>, until: Deadline) -> Fut<'_, Vec<BlobDigest>> {
        Box::pin(async move {
            let method = "FindMissingBlobs";
            let mut missing = Vec::new();
            for page in blobs.chunks(FIND_PAGE) {
                let answer = retry::attempts(until, move || async move {
                    let request = self.request(reapi::FindMissingBlobsRequest {
                        instance_name: self.instance.clone(),
                        blob_digests: page.iter().map(|b| b.to_reapi()).collect(),
                        digest_function: SHA256,
                    });
                    self.unary(method, self.cas().find_missing_blobs(request))
                        .await?
                        .map_err(|s| self.attempt_failed(method, &s))
                })
                .await?;
                for digest in &answer.missing_blob_digests {
                    let blob = BlobDigest::from_reapi(digest).map_err(|reason| {
                        unsupported(&self.name, format!("{method} answered {reason}"))
                    })?;
                    missing.push(blob);
                }
            }
            missing.sort();
            missing.dedup();
            Ok(missing)
        })
    }

    fn write_blobs(&self, blobs: Vec<(BlobDigest, Vec<u8>)>, until: Deadline) -> Fut<'_, ()> {
        Box::pin(async move {
            let limit = self.limit(until).await?;
            let sizes: Vec<u64> = blobs.iter().map(|(d, _)| d.size).collect();
            let (batches, alone) = batches(&sizes, limit);
            let mut blobs: Vec<Option<(BlobDigest, Vec<u8>)>> =
                blobs.into_iter().map(Some).collect();
            // Blobs are written under their digests: a batch or an upload sent again
            // stores the same bytes.
            for batch in batches {
                let batch: Vec<(BlobDigest, Vec<u8>)> =
                    batch.iter().filter_map(|&i| blobs[i].take()).collect();
                let batch = &batch;
                retry::attempts(until, move || self.batch_update(batch)).await?;
            }
            for i in alone {
                if let Some((blob, bytes)) = blobs[i].take() {
                    let bytes = bytes.as_slice();
                    retry::attempts(until, move || self.stream_write(blob, bytes)).await?;
                }
            }
            Ok(())
        })
    }

    fn read_blob(&self, blob: BlobDigest, until: Deadline) -> Fut<'_, Option<Vec<u8>>> {
        Box::pin(async move {
            if fits_batch(blob.size, self.limit(until).await?) {
                retry::attempts(until, move || self.batch_read(blob)).await
            } else {
                retry::attempts(until, move || self.stream_read(blob)).await
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_needs_a_port_a_valid_instance_and_valid_metadata() {
        let ok = Grpc::new(&Settings::new("grpc://127.0.0.1:50051/main"), false).expect("a client");
        assert_eq!(ok.instance, "main");
        assert_eq!(ok.endpoint.uri().to_string(), "http://127.0.0.1:50051/");
        let tls = Grpc::new(&Settings::new("grpcs://cache.example.com/x"), true).expect("TLS");
        assert_eq!(
            tls.endpoint.uri().to_string(),
            "https://cache.example.com:443/"
        );
        let v6 = Grpc::new(&Settings::new("grpc://[::1]:9092"), false).expect("IPv6");
        assert_eq!(v6.endpoint.uri().to_string(), "http://[::1]:9092/");
        assert!(Grpc::new(&Settings::new("grpc://127.0.0.1/main"), false).is_err());

        let mut settings = Settings::new("grpc://127.0.0.1:1");
        settings.headers = vec![("X-Token".into(), "s3cr3t-value".into())];
        let with = Grpc::new(&settings, false).expect("metadata");
        assert_eq!(with.metadata[0].0.as_str(), "x-token", "lowercased");
        assert!(with.metadata[0].1.is_sensitive());
        let request = with.request(());
        assert_eq!(
            request
                .metadata()
                .get("x-token")
                .map(|v| v.as_encoded_bytes()),
            Some(&b"s3cr3t-value"[..])
        );
        assert!(
            request.metadata().get("grpc-timeout").is_some(),
            "a deadline"
        );
        let stream = with.stream_request(());
        assert_eq!(
            stream
                .metadata()
                .get("x-token")
                .map(|v| v.as_encoded_bytes()),
            Some(&b"s3cr3t-value"[..])
        );
        assert!(
            stream.metadata().get("grpc-timeout").is_none(),
            "no deadline for a whole ByteStream call"
        );

        for (header, value) in [
            ("x-key-bin", "abc"),
            ("bad header", "abc"),
            ("x-ok", "new\nline s3cr3t"),
        ] {
            let mut settings = Settings::new("grpc://127.0.0.1:1");
            settings.headers = vec![(header.into(), value.into())];
            let err = Grpc::new(&settings, false).err().expect("refused");
            assert!(matches!(err, RemoteError::Unsupported { .. }), "{err}");
            assert!(!err.to_string().contains("s3cr3t"), "{err}");
        }
    }

    #[test]
    fn resource_names_follow_the_remote_execution_api() {
        let blob = BlobDigest::of(b"hello");
        let hash = blob.sha256.to_hex();
        assert_eq!(read_resource("", blob), format!("blobs/{hash}/5"));
        assert_eq!(read_resource("main", blob), format!("main/blobs/{hash}/5"));
        assert_eq!(
            write_resource("a/b", "u-1", blob),
            format!("a/b/uploads/u-1/blobs/{hash}/5")
        );
        assert_eq!(
            write_resource("", "u-1", blob),
            format!("uploads/u-1/blobs/{hash}/5")
        );
        let (one, two) = (upload_id(), upload_id());
        assert_ne!(one, two);
        let parsed = uuid::Uuid::parse_str(&one).expect("a UUID");
        assert_eq!(parsed.get_version(), Some(uuid::Version::Random), "{one}");
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{one}");
        assert_eq!(one.len(), 36);
        let parts: Vec<&str> = one.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "version 4: {one}");
        assert!(
            matches!(&parts[3][..1], "8" | "9" | "a" | "b"),
            "variant: {one}"
        );
    }

    #[test]
    fn blobs_are_batched_under_the_limit_and_large_ones_go_alone() {
        let limit = 4 << 20;
        let budget = limit - FRAMING;
        let big = budget; // its framing puts it over
        let (batches_, alone) = batches(&[10, big, 2 << 20, 2 << 20, 0, 1 << 20], limit);
        assert_eq!(alone, [1]);
        assert_eq!(batches_, [vec![0, 2], vec![3, 4, 5]]);
        for batch in &batches_ {
            let sizes = [10, big, 2 << 20, 2 << 20, 0, 1 << 20];
            let used: u64 = batch.iter().map(|&i| sizes[i] + PER_BLOB).sum();
            assert!(used <= budget, "{batch:?} uses {used}");
        }
        // The largest blob that still fits, and one byte more.
        let edge = budget - PER_BLOB;
        assert_eq!(batches(&[edge, edge + 1], limit), (vec![vec![0]], vec![1]));
        assert!(fits_batch(edge, limit) && !fits_batch(edge + 1, limit));
        // Many small blobs fill batches without passing the limit.
        let many = vec![1000u64; 10_000];
        let (b, alone) = batches(&many, limit);
        assert!(alone.is_empty());
        assert_eq!(b.iter().map(Vec::len).sum::<usize>(), 10_000);
        assert!(b.len() > 1);
        // A limit smaller than the framing sends every blob alone.
        assert_eq!(
            batches(&[0, 1], 100),
            (Vec::<Vec<usize>>::new(), vec![0, 1])
        );
        assert_eq!(batches(&[], limit), (Vec::<Vec<usize>>::new(), Vec::new()));
    }

    #[test]
    fn the_stated_batch_limit_is_used_up_to_a_cap_and_none_means_4_mib() {
        assert_eq!(batch_limit(0), 4 << 20);
        assert_eq!(batch_limit(-1), 4 << 20);
        assert_eq!(batch_limit(4_193_280), 4_193_280);
        assert_eq!(batch_limit(1 << 40), MAX_BATCH_BYTES);
    }

    #[test]
    fn capabilities_without_sha256_are_refused_naming_what_is_offered() {
        let server =
            |functions: Vec<i32>, limit: i64, updates: Option<bool>| reapi::ServerCapabilities {
                cache_capabilities: Some(reapi::CacheCapabilities {
                    digest_functions: functions,
                    max_batch_total_size_bytes: limit,
                    action_cache_update_capabilities: updates
                        .map(|u| reapi::ActionCacheUpdateCapabilities { update_enabled: u }),
                    ..Default::default()
                }),
                ..Default::default()
            };
        use reapi::digest_function::Value;
        let ok = judge(
            "r",
            &server(vec![Value::Sha1 as i32, SHA256], 0, Some(true)),
        )
        .expect("SHA-256 among others");
        assert_eq!(ok.max_batch_bytes, Some(DEFAULT_BATCH_BYTES));
        assert!(ok.updates_action_cache);
        let read_only = judge("r", &server(vec![SHA256], 1000, None)).expect("no updates");
        assert_eq!(read_only.max_batch_bytes, Some(1000));
        assert!(!read_only.updates_action_cache);

        let err = judge(
            "r",
            &server(vec![Value::Md5 as i32, Value::Blake3 as i32], 0, None),
        )
        .expect_err("no SHA-256");
        assert!(matches!(err, RemoteError::Unsupported { .. }));
        let text = err.to_string();
        assert!(
            text.contains("SHA-256") && text.contains("MD5") && text.contains("BLAKE3"),
            "{text}"
        );
        let err = judge("r", &server(Vec::new(), 0, None)).expect_err("nothing offered");
        assert!(err.to_string().contains("offers none"), "{err}");
        let err = judge("r", &reapi::ServerCapabilities::default()).expect_err("no cache");
        assert!(err.to_string().contains("no remote cache"), "{err}");
    }

    #[test]
    fn statuses_map_to_the_kinds_http_statuses_do() {
        let kind = |code: Code| match failure("r", code, String::new()) {
            RemoteError::Unavailable { .. } => "unavailable",
            RemoteError::Refused { .. } => "refused",
            RemoteError::Unsupported { .. } => "unsupported",
            RemoteError::Corrupt { .. } => "corrupt",
            RemoteError::Proxy { .. } => "proxy",
        };
        for code in [
            Code::Unavailable,
            Code::DeadlineExceeded,
            Code::ResourceExhausted,
            Code::Internal,
            Code::Unknown,
            Code::Cancelled,
            Code::Aborted,
        ] {
            assert_eq!(kind(code), "unavailable", "{code:?}");
        }
        for code in [Code::Unauthenticated, Code::PermissionDenied] {
            assert_eq!(kind(code), "refused", "{code:?}");
        }
        assert_eq!(kind(Code::DataLoss), "corrupt");
        for code in [
            Code::InvalidArgument,
            Code::NotFound,
            Code::FailedPrecondition,
            Code::Unimplemented,
            Code::OutOfRange,
            Code::AlreadyExists,
        ] {
            assert_eq!(kind(code), "unsupported", "{code:?}");
        }
    }

    #[test]
    fn tonic_s_own_deadline_is_no_answer_in_time() {
        let grpc = Grpc::new(&Settings::new("grpc://127.0.0.1:1"), false).expect("a client");
        let status = Status::from_error(Box::new(tonic::TimeoutExpired(())));
        assert_eq!(status.code(), Code::Cancelled);
        match grpc.failed("GetActionResult", &status) {
            RemoteError::Unavailable { reason, .. } => {
                assert!(
                    reason.contains("GetActionResult: no answer within"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        let connect = Status::from_error(Box::new(tonic::ConnectError("refused".into())));
        match grpc.failed("GetCapabilities", &connect) {
            RemoteError::Unavailable { reason, .. } => {
                assert!(
                    reason.contains("UNAVAILABLE") && reason.contains("refused"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_error_text_holds_a_header_value() {
        let mut settings = Settings::new("grpc://127.0.0.1:1/main");
        settings.headers = vec![("authorization".into(), "Bearer tok-12345".into())];
        let grpc = Grpc::new(&settings, false).expect("a client");
        let status = Status::unauthenticated("token Bearer tok-12345 is not accepted");
        let err = grpc.failed("GetCapabilities", &status);
        assert!(matches!(err, RemoteError::Refused { .. }), "{err}");
        let text = err.to_string();
        assert!(!text.contains("tok-12345"), "{text}");
        assert!(
            text.contains("UNAUTHENTICATED") && text.contains("[redacted]"),
            "{text}"
        );
        let blob = grpc.blob_failed(
            "BatchUpdateBlobs",
            &BlobDigest::of(b"x").to_string(),
            &bazel_remote_apis::google::rpc::Status {
                code: Code::ResourceExhausted as i32,
                message: "quota of Bearer tok-12345 spent".into(),
                details: Vec::new(),
            },
        );
        assert!(matches!(blob, RemoteError::Unavailable { .. }), "{blob}");
        assert!(!blob.to_string().contains("tok-12345"), "{blob}");
    }

    /// The headers' values are removed by the one redactor (`base::redact`), so a value a
    /// server quotes escaped (JSON's `\/`, an XML reference, percent-encoded) is found as
    /// well as a raw one, and a long message is cut only after it was redacted, never
    /// through a value (the scrubber this replaced did the reverse, and left the part before
    /// the cut).
    #[test]
    fn a_header_value_is_redacted_escaped_and_across_the_cut() {
        let token = "Bearer a/b+c=d&e-123456";
        let mut settings = Settings::new("grpc://127.0.0.1:1/main");
        settings.headers = vec![("authorization".into(), token.into())];
        let grpc = Grpc::new(&settings, false).expect("a client");
        let forms = [
            token.to_owned(),
            r#"Bearer a\/b+c=d\u0026e-123456"#.to_owned(),
            "Bearer a/b+c=d&amp;e-123456".to_owned(),
            "Bearer%20a%2Fb%2Bc%3Dd%26e-123456".to_owned(),
        ];
        for form in &forms {
            let status =
                Status::permission_denied(format!("{{\"detail\": \"{form} is refused\"}}"));
            let text = grpc.failed("GetActionResult", &status).to_string();
            assert!(text.contains("[redacted]"), "{form}: {text}");
            assert!(
                !text.contains("a/b+c") && !text.contains("123456"),
                "{form}: {text}"
            );
        }
        // The value straddles the 1000th character, where the message is cut.
        for at in 990..1000 {
            let message = format!("{}{token} and more", "x".repeat(at));
            let status = Status::permission_denied(message);
            let text = grpc.failed("GetActionResult", &status).to_string();
            assert!(!text.contains("Bearer a"), "cut at {at}: {text}");
        }
    }
}
