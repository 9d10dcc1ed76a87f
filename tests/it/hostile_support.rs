//! Hostile remote caches for the tests, on loopback ports, in this process: a Remote
//! Execution API server (tonic, the server half of the `bazel_remote_apis` messages the
//! client uses) and a Bazel HTTP cache (std threads). Each keeps what it is sent, as a
//! cache does, and serves it honestly until a test sets a [`Fault`]: then it lies about a
//! blob's size in the entries it serves and streams that blob without end, trickles a blob
//! a byte a second, fails with a message of its choosing, or fails its next calls with a
//! status of the test's choosing before it answers honestly again. The REAPI server is an
//! engine too: its `Execute` follows a [`Script`] (a result, forged or not; a refusal; a
//! status; a stream dropped mid-operation; an operation that never ends), and its
//! Operations service records each `CancelOperation`. Nothing here needs a tool.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::bytestream;
use bazel_remote_apis::google::longrunning;
use prost::Message as _;
use tonic::codegen::tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::{Request, Response, Status};

/// The output of a receipt's entry a fault aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// `receipt.dsse.json`.
    Envelope,
    /// `inputs.txt`.
    Inputs,
    /// The first `artifacts/<sha256>` (a command's log).
    Artifact,
}

impl Target {
    pub(crate) const ALL: [Target; 3] = [Target::Envelope, Target::Inputs, Target::Artifact];

    fn is(self, path: &str) -> bool {
        match self {
            Target::Envelope => path == "receipt.dsse.json",
            Target::Inputs => path == "inputs.txt",
            Target::Artifact => path.starts_with("artifacts/"),
        }
    }
}

/// What a hostile server does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Serves what it was sent.
    Honest,
    /// Every entry it serves declares `size` bytes for the target, and every read of that
    /// blob streams 1 MiB chunks of zeros without end.
    Declared(Target, i64),
    /// Every read of the target sends its true bytes, one a second.
    Trickle(Target),
    /// Every entry lookup fails (`UNAVAILABLE`, HTTP 503) with this text as its message.
    Message(String),
    /// The next `calls` calls of any kind fail with `code` (over HTTP: `UNAVAILABLE` is
    /// 503, `RESOURCE_EXHAUSTED` 429, `PERMISSION_DENIED` 403), then it is honest again;
    /// `usize::MAX` calls: it never recovers.
    Failing { code: tonic::Code, calls: usize },
}

/// What the hostile engine does with the next `Execute` (and `WaitExecution`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Script {
    /// Queued, executing on `hostile-bot`, then done with this result (whatever its
    /// digests name: the test decides what the CAS holds).
    Complete(reapi::ActionResult),
    /// `Execute` fails at once with this code.
    Refuse(tonic::Code),
    /// Queued, then done with an `ExecuteResponse` whose status has this code.
    Status(tonic::Code),
    /// Queued, then the stream fails (`UNAVAILABLE`); `WaitExecution` then answers with
    /// this result, or with `NOT_FOUND` when there is none.
    Drop(Option<reapi::ActionResult>),
    /// Queued, then silent until the client goes away.
    Hang,
}

/// The state a hostile server shares with its test.
#[derive(Default)]
pub(crate) struct State {
    /// What the next `Execute` does (`None`: `UNIMPLEMENTED`).
    pub(crate) script: Mutex<Option<Script>>,
    /// Every `ExecuteRequest` received.
    pub(crate) executed: Mutex<Vec<reapi::ExecuteRequest>>,
    /// The operations `WaitExecution` was asked about.
    pub(crate) waited: Mutex<Vec<String>>,
    /// The operations `CancelOperation` was asked to cancel.
    pub(crate) cancelled: Mutex<Vec<String>>,
    /// Blobs written by the client (by `BatchUpdateBlobs` or `ByteStream.Write`), in order.
    pub(crate) written: Mutex<Vec<String>>,
    blobs: Mutex<HashMap<String, Vec<u8>>>,
    entries: Mutex<HashMap<String, Vec<u8>>>,
    fault: Mutex<Option<Fault>>,
    /// Blob digests (hex) the fault aims at, learnt from the entries served.
    aimed: Mutex<HashSet<String>>,
    /// Whether the capabilities say action-cache updates are accepted.
    pub(crate) read_only: AtomicBool,
    /// `UpdateActionResult` calls (or `PUT`s of an entry) received.
    pub(crate) updates: AtomicUsize,
    /// Reads of an aimed blob started (endless or trickling).
    pub(crate) attacks: AtomicUsize,
    /// The calls [`Fault::Failing`] failed since it was set, each as its method and what
    /// it named (a key, a blob, a resource).
    pub(crate) failed: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    /// Sets what the server does from now on.
    pub(crate) fn set(&self, fault: Fault) {
        *lock(&self.fault) = Some(fault);
        lock(&self.aimed).clear();
        lock(&self.failed).clear();
    }

    /// Stores `bytes` honestly; their digest.
    pub(crate) fn put(&self, bytes: &[u8]) -> reapi::Digest {
        let digest = crate::remote_support::digest(bytes);
        self.put_blob(digest.hash.clone(), bytes.to_vec());
        digest
    }

    /// Stores `bytes` under `digest`, whatever they are (a forged blob).
    pub(crate) fn forge(&self, digest: &reapi::Digest, bytes: &[u8]) {
        self.put_blob(digest.hash.clone(), bytes.to_vec());
    }

    /// What the next `Execute` does.
    pub(crate) fn script(&self, script: Script) {
        *lock(&self.script) = Some(script);
    }

    /// The calls failed so far, as [`State::failed`] lists them.
    pub(crate) fn failed(&self) -> Vec<String> {
        lock(&self.failed).clone()
    }

    /// Whether the call `what` fails, under [`Fault::Failing`], and with which code.
    fn trip(&self, what: String) -> Option<tonic::Code> {
        let Fault::Failing { code, calls } = self.fault() else {
            return None;
        };
        let mut failed = lock(&self.failed);
        if failed.len() >= calls {
            return None;
        }
        failed.push(what);
        Some(code)
    }

    /// [`State::trip`] as a gRPC status.
    fn check(&self, what: String) -> Result<(), Status> {
        match self.trip(what) {
            Some(code) => Err(Status::new(code, "injected: try again later")),
            None => Ok(()),
        }
    }

    fn fault(&self) -> Fault {
        lock(&self.fault).clone().unwrap_or(Fault::Honest)
    }

    /// The entry `key` as the fault has it served (the serialized `ActionResult`).
    fn entry(&self, key: &str) -> Option<Vec<u8>> {
        let bytes = lock(&self.entries).get(key).cloned()?;
        let target = match self.fault() {
            Fault::Declared(target, _) | Fault::Trickle(target) => target,
            Fault::Honest | Fault::Message(_) | Fault::Failing { .. } => return Some(bytes),
        };
        let mut result = reapi::ActionResult::decode(bytes.as_slice()).expect("an entry");
        if let Some(file) = result.output_files.iter_mut().find(|f| target.is(&f.path))
            && let Some(digest) = file.digest.as_mut()
        {
            lock(&self.aimed).insert(digest.hash.clone());
            if let Fault::Declared(_, size) = self.fault() {
                digest.size_bytes = size;
            }
        }
        Some(result.encode_to_vec())
    }

    /// How the blob `hash` is served now.
    fn serving(&self, hash: &str) -> Serving {
        if !lock(&self.aimed).contains(hash) {
            return match lock(&self.blobs).get(hash) {
                Some(bytes) => Serving::Bytes(bytes.clone()),
                None => Serving::Missing,
            };
        }
        self.attacks.fetch_add(1, Ordering::SeqCst);
        match self.fault() {
            Fault::Trickle(_) => {
                Serving::Trickle(lock(&self.blobs).get(hash).cloned().unwrap_or_default())
            }
            _ => Serving::Endless,
        }
    }

    fn put_blob(&self, hash: String, bytes: Vec<u8>) {
        lock(&self.blobs).insert(hash, bytes);
    }

    fn has(&self, hash: &str) -> bool {
        lock(&self.blobs).contains_key(hash)
    }
}

enum Serving {
    Missing,
    Bytes(Vec<u8>),
    Endless,
    Trickle(Vec<u8>),
}

/// A chunk of an endless stream.
const CHUNK: usize = 1 << 20;
/// The pace of a trickle.
const TRICKLE: Duration = Duration::from_secs(1);

/// A hostile Remote Execution API server on 127.0.0.1 (instance `main`), with a batch
/// limit of 1 KiB so that every blob travels by ByteStream.
pub(crate) struct HostileReapi {
    /// `grpc://127.0.0.1:PORT/main`.
    pub(crate) url: String,
    /// What it holds and does.
    pub(crate) state: Arc<State>,
}

impl HostileReapi {
    /// Starts one, honest until told otherwise.
    pub(crate) fn start() -> Self {
        let state = Arc::new(State::default());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("its address").port();
        let served = Arc::clone(&state);
        std::thread::Builder::new()
            .name("hostile-reapi".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                    let service = Service(served);
                    let _ = tonic::transport::Server::builder()
                        .add_service(reapi::capabilities_server::CapabilitiesServer::new(
                            service.clone(),
                        ))
                        .add_service(reapi::action_cache_server::ActionCacheServer::new(
                            service.clone(),
                        ))
                        .add_service(
                            reapi::content_addressable_storage_server::ContentAddressableStorageServer::new(
                                service.clone(),
                            ),
                        )
                        .add_service(reapi::execution_server::ExecutionServer::new(service.clone()))
                        .add_service(longrunning::operations_server::OperationsServer::new(
                            service.clone(),
                        ))
                        .add_service(bytestream::byte_stream_server::ByteStreamServer::new(service))
                        .serve_with_incoming(TcpListenerStream::new(listener))
                        .await;
                });
            })
            .expect("start the server's thread");
        HostileReapi {
            url: format!("grpc://127.0.0.1:{port}/main"),
            state,
        }
    }
}

#[derive(Clone)]
struct Service(Arc<State>);

type Stream<T> = ReceiverStream<Result<T, Status>>;

/// A stream that ends at once.
fn empty<T>() -> Stream<T> {
    let (_, rx) = tokio::sync::mpsc::channel(1);
    ReceiverStream::new(rx)
}

#[tonic::async_trait]
impl reapi::capabilities_server::Capabilities for Service {
    async fn get_capabilities(
        &self,
        _: Request<reapi::GetCapabilitiesRequest>,
    ) -> Result<Response<reapi::ServerCapabilities>, Status> {
        self.0.check("GetCapabilities".to_owned())?;
        Ok(Response::new(reapi::ServerCapabilities {
            cache_capabilities: Some(reapi::CacheCapabilities {
                digest_functions: vec![reapi::digest_function::Value::Sha256 as i32],
                max_batch_total_size_bytes: 1024,
                action_cache_update_capabilities: Some(reapi::ActionCacheUpdateCapabilities {
                    update_enabled: !self.0.read_only.load(Ordering::SeqCst),
                }),
                ..Default::default()
            }),
            execution_capabilities: Some(reapi::ExecutionCapabilities {
                digest_function: reapi::digest_function::Value::Sha256 as i32,
                exec_enabled: true,
                ..Default::default()
            }),
            ..Default::default()
        }))
    }
}

#[tonic::async_trait]
impl reapi::action_cache_server::ActionCache for Service {
    async fn get_action_result(
        &self,
        request: Request<reapi::GetActionResultRequest>,
    ) -> Result<Response<reapi::ActionResult>, Status> {
        if let Fault::Message(text) = self.0.fault() {
            return Err(Status::unavailable(text));
        }
        let key = request.into_inner().action_digest.unwrap_or_default().hash;
        self.0.check(format!("GetActionResult {key}"))?;
        match self.0.entry(&key) {
            Some(bytes) => Ok(Response::new(
                reapi::ActionResult::decode(bytes.as_slice()).expect("an entry"),
            )),
            None => Err(Status::not_found("no entry")),
        }
    }

    async fn update_action_result(
        &self,
        request: Request<reapi::UpdateActionResultRequest>,
    ) -> Result<Response<reapi::ActionResult>, Status> {
        self.0.updates.fetch_add(1, Ordering::SeqCst);
        if self.0.read_only.load(Ordering::SeqCst) {
            return Err(Status::permission_denied("updates are disabled"));
        }
        let request = request.into_inner();
        let key = request.action_digest.unwrap_or_default().hash;
        self.0.check(format!("UpdateActionResult {key}"))?;
        let result = request.action_result.unwrap_or_default();
        lock(&self.0.entries).insert(key, result.encode_to_vec());
        Ok(Response::new(result))
    }
}

#[tonic::async_trait]
impl reapi::content_addressable_storage_server::ContentAddressableStorage for Service {
    async fn find_missing_blobs(
        &self,
        request: Request<reapi::FindMissingBlobsRequest>,
    ) -> Result<Response<reapi::FindMissingBlobsResponse>, Status> {
        let request = request.into_inner();
        let asked: Vec<&str> = request
            .blob_digests
            .iter()
            .map(|d| d.hash.as_str())
            .collect();
        self.0
            .check(format!("FindMissingBlobs {}", asked.join(",")))?;
        let missing = request
            .blob_digests
            .into_iter()
            .filter(|d| !self.0.has(&d.hash))
            .collect();
        Ok(Response::new(reapi::FindMissingBlobsResponse {
            missing_blob_digests: missing,
        }))
    }

    async fn batch_update_blobs(
        &self,
        request: Request<reapi::BatchUpdateBlobsRequest>,
    ) -> Result<Response<reapi::BatchUpdateBlobsResponse>, Status> {
        let request = request.into_inner();
        let sent: Vec<String> = request
            .requests
            .iter()
            .map(|r| r.digest.clone().unwrap_or_default().hash)
            .collect();
        self.0
            .check(format!("BatchUpdateBlobs {}", sent.join(",")))?;
        let mut responses = Vec::new();
        for r in request.requests {
            let digest = r.digest.unwrap_or_default();
            lock(&self.0.written).push(digest.hash.clone());
            self.0.put_blob(digest.hash.clone(), r.data);
            responses.push(reapi::batch_update_blobs_response::Response {
                digest: Some(digest),
                status: None,
            });
        }
        Ok(Response::new(reapi::BatchUpdateBlobsResponse { responses }))
    }

    async fn batch_read_blobs(
        &self,
        request: Request<reapi::BatchReadBlobsRequest>,
    ) -> Result<Response<reapi::BatchReadBlobsResponse>, Status> {
        let request = request.into_inner();
        let asked: Vec<&str> = request.digests.iter().map(|d| d.hash.as_str()).collect();
        self.0
            .check(format!("BatchReadBlobs {}", asked.join(",")))?;
        let mut responses = Vec::new();
        for digest in request.digests {
            let (data, code) = match self.0.serving(&digest.hash) {
                Serving::Missing => (Vec::new(), tonic::Code::NotFound),
                Serving::Bytes(b) | Serving::Trickle(b) => (b, tonic::Code::Ok),
                Serving::Endless => (vec![0; 8 * CHUNK], tonic::Code::Ok),
            };
            responses.push(reapi::batch_read_blobs_response::Response {
                digest: Some(digest),
                data,
                compressor: 0,
                status: Some(bazel_remote_apis::google::rpc::Status {
                    code: code as i32,
                    message: String::new(),
                    details: Vec::new(),
                }),
            });
        }
        Ok(Response::new(reapi::BatchReadBlobsResponse { responses }))
    }

    type GetTreeStream = Stream<reapi::GetTreeResponse>;

    async fn get_tree(
        &self,
        _: Request<reapi::GetTreeRequest>,
    ) -> Result<Response<Self::GetTreeStream>, Status> {
        Ok(Response::new(empty()))
    }

    async fn split_blob(
        &self,
        _: Request<reapi::SplitBlobRequest>,
    ) -> Result<Response<reapi::SplitBlobResponse>, Status> {
        Err(Status::unimplemented("split_blob"))
    }

    type GetChunkMappingStream = Stream<reapi::GetChunkMappingResponse>;

    async fn get_chunk_mapping(
        &self,
        _: Request<reapi::GetChunkMappingRequest>,
    ) -> Result<Response<Self::GetChunkMappingStream>, Status> {
        Err(Status::unimplemented("get_chunk_mapping"))
    }

    async fn splice_blob(
        &self,
        _: Request<reapi::SpliceBlobRequest>,
    ) -> Result<Response<reapi::SpliceBlobResponse>, Status> {
        Err(Status::unimplemented("splice_blob"))
    }

    async fn register_chunk_mapping(
        &self,
        _: Request<tonic::Streaming<reapi::RegisterChunkMappingRequest>>,
    ) -> Result<Response<reapi::RegisterChunkMappingResponse>, Status> {
        Err(Status::unimplemented("register_chunk_mapping"))
    }
}

/// The SHA-256 (hex) a ByteStream resource name names: `…/blobs/<hash>/<size>`.
fn resource_hash(resource: &str) -> String {
    let parts: Vec<&str> = resource.split('/').collect();
    parts
        .iter()
        .position(|p| *p == "blobs")
        .and_then(|at| parts.get(at + 1))
        .map_or_else(String::new, |h| (*h).to_owned())
}

#[tonic::async_trait]
impl bytestream::byte_stream_server::ByteStream for Service {
    type ReadStream = Stream<bytestream::ReadResponse>;

    async fn read(
        &self,
        request: Request<bytestream::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let hash = resource_hash(&request.into_inner().resource_name);
        self.0.check(format!("ByteStream.Read {hash}"))?;
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        match self.0.serving(&hash) {
            Serving::Missing => return Err(Status::not_found("no such blob")),
            Serving::Bytes(bytes) => {
                tokio::spawn(async move {
                    for chunk in bytes.chunks(CHUNK) {
                        let data = chunk.to_vec();
                        if tx
                            .send(Ok(bytestream::ReadResponse { data }))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
            Serving::Endless => {
                tokio::spawn(async move {
                    loop {
                        let data = vec![0u8; CHUNK];
                        if tx
                            .send(Ok(bytestream::ReadResponse { data }))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
            Serving::Trickle(bytes) => {
                tokio::spawn(async move {
                    for byte in bytes {
                        if tx
                            .send(Ok(bytestream::ReadResponse { data: vec![byte] }))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        tokio::time::sleep(TRICKLE).await;
                    }
                });
            }
        }
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn write(
        &self,
        request: Request<tonic::Streaming<bytestream::WriteRequest>>,
    ) -> Result<Response<bytestream::WriteResponse>, Status> {
        let mut stream = request.into_inner();
        let mut hash = String::new();
        let mut data = Vec::new();
        while let Some(message) = stream.message().await? {
            if hash.is_empty() {
                hash = resource_hash(&message.resource_name);
                self.0.check(format!("ByteStream.Write {hash}"))?;
            }
            data.extend_from_slice(&message.data);
            if message.finish_write {
                break;
            }
        }
        let committed_size = i64::try_from(data.len()).expect("a size");
        lock(&self.0.written).push(hash.clone());
        self.0.put_blob(hash, data);
        Ok(Response::new(bytestream::WriteResponse { committed_size }))
    }

    async fn query_write_status(
        &self,
        _: Request<bytestream::QueryWriteStatusRequest>,
    ) -> Result<Response<bytestream::QueryWriteStatusResponse>, Status> {
        Err(Status::unimplemented("query_write_status"))
    }
}

/// An operation of the hostile engine: `name`, at `stage`, done with `response` if any.
fn operation(
    name: &str,
    stage: reapi::execution_stage::Value,
    response: Option<reapi::ExecuteResponse>,
) -> longrunning::Operation {
    let metadata = reapi::ExecuteOperationMetadata {
        stage: stage as i32,
        partial_execution_metadata: (stage == reapi::execution_stage::Value::Executing).then(
            || reapi::ExecutedActionMetadata {
                worker: "hostile-bot".to_owned(),
                ..Default::default()
            },
        ),
        ..Default::default()
    };
    longrunning::Operation {
        name: name.to_owned(),
        metadata: Some(bazel_remote_apis::google::protobuf::Any {
            type_url:
                "type.googleapis.com/build.bazel.remote.execution.v2.ExecuteOperationMetadata"
                    .to_owned(),
            value: metadata.encode_to_vec(),
        }),
        done: response.is_some(),
        result: response.map(|r| {
            longrunning::operation::Result::Response(bazel_remote_apis::google::protobuf::Any {
                type_url: "type.googleapis.com/build.bazel.remote.execution.v2.ExecuteResponse"
                    .to_owned(),
                value: r.encode_to_vec(),
            })
        }),
    }
}

/// A finished `ExecuteResponse` with `result` and a status of `code`.
fn response(result: reapi::ActionResult, code: tonic::Code) -> reapi::ExecuteResponse {
    reapi::ExecuteResponse {
        result: Some(result),
        cached_result: false,
        status: Some(bazel_remote_apis::google::rpc::Status {
            code: code as i32,
            message: if code == tonic::Code::Ok {
                String::new()
            } else {
                "injected".to_owned()
            },
            details: Vec::new(),
        }),
        server_logs: HashMap::new(),
        message: String::new(),
    }
}

/// Sends `items` on a stream, then holds it open (`hang`) until the client goes away.
fn stream_of(
    items: Vec<Result<longrunning::Operation, Status>>,
    hang: bool,
) -> Stream<longrunning::Operation> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        for item in items {
            if tx.send(item).await.is_err() {
                return;
            }
        }
        if hang {
            tx.closed().await;
        }
    });
    ReceiverStream::new(rx)
}

#[tonic::async_trait]
impl reapi::execution_server::Execution for Service {
    type ExecuteStream = Stream<longrunning::Operation>;

    async fn execute(
        &self,
        request: Request<reapi::ExecuteRequest>,
    ) -> Result<Response<Self::ExecuteStream>, Status> {
        let request = request.into_inner();
        let name = format!("operations/{}", lock(&self.0.executed).len() + 1);
        lock(&self.0.executed).push(request);
        self.0.check("Execute".to_owned())?;
        use reapi::execution_stage::Value;
        let queued = Ok(operation(&name, Value::Queued, None));
        let script = lock(&self.0.script).clone();
        let stream = match script {
            None => return Err(Status::unimplemented("no script")),
            Some(Script::Refuse(code)) => return Err(Status::new(code, "injected refusal")),
            Some(Script::Complete(result)) => stream_of(
                vec![
                    queued,
                    Ok(operation(&name, Value::Executing, None)),
                    Ok(operation(
                        &name,
                        Value::Completed,
                        Some(response(result, tonic::Code::Ok)),
                    )),
                ],
                false,
            ),
            Some(Script::Status(code)) => stream_of(
                vec![
                    queued,
                    Ok(operation(
                        &name,
                        Value::Completed,
                        Some(response(reapi::ActionResult::default(), code)),
                    )),
                ],
                false,
            ),
            Some(Script::Drop(_)) => stream_of(
                vec![
                    queued,
                    Err(Status::unavailable("injected: the stream dropped")),
                ],
                false,
            ),
            Some(Script::Hang) => stream_of(vec![queued], true),
        };
        Ok(Response::new(stream))
    }

    type WaitExecutionStream = Stream<longrunning::Operation>;

    async fn wait_execution(
        &self,
        request: Request<reapi::WaitExecutionRequest>,
    ) -> Result<Response<Self::WaitExecutionStream>, Status> {
        let name = request.into_inner().name;
        lock(&self.0.waited).push(name.clone());
        use reapi::execution_stage::Value;
        let script = lock(&self.0.script).clone();
        match script {
            Some(Script::Drop(Some(result))) => Ok(Response::new(stream_of(
                vec![
                    Ok(operation(&name, Value::Executing, None)),
                    Ok(operation(
                        &name,
                        Value::Completed,
                        Some(response(result, tonic::Code::Ok)),
                    )),
                ],
                false,
            ))),
            _ => Err(Status::not_found("no such operation")),
        }
    }
}

#[tonic::async_trait]
impl longrunning::operations_server::Operations for Service {
    async fn list_operations(
        &self,
        _: Request<longrunning::ListOperationsRequest>,
    ) -> Result<Response<longrunning::ListOperationsResponse>, Status> {
        Err(Status::unimplemented("list_operations"))
    }

    async fn get_operation(
        &self,
        _: Request<longrunning::GetOperationRequest>,
    ) -> Result<Response<longrunning::Operation>, Status> {
        Err(Status::unimplemented("get_operation"))
    }

    async fn delete_operation(
        &self,
        _: Request<longrunning::DeleteOperationRequest>,
    ) -> Result<Response<bazel_remote_apis::google::protobuf::Empty>, Status> {
        Err(Status::unimplemented("delete_operation"))
    }

    async fn cancel_operation(
        &self,
        request: Request<longrunning::CancelOperationRequest>,
    ) -> Result<Response<bazel_remote_apis::google::protobuf::Empty>, Status> {
        lock(&self.0.cancelled).push(request.into_inner().name);
        Ok(Response::new(bazel_remote_apis::google::protobuf::Empty {}))
    }

    async fn wait_operation(
        &self,
        _: Request<longrunning::WaitOperationRequest>,
    ) -> Result<Response<longrunning::Operation>, Status> {
        Err(Status::unimplemented("wait_operation"))
    }
}

/// A hostile Bazel HTTP cache on 127.0.0.1, at `/cache`: one thread per connection, one
/// request per connection (`Connection: close`).
pub(crate) struct HostileHttp {
    /// `http://127.0.0.1:PORT/cache`.
    pub(crate) url: String,
    /// What it holds and does.
    pub(crate) state: Arc<State>,
}

impl HostileHttp {
    /// Starts one, honest until told otherwise.
    pub(crate) fn start() -> Self {
        let state = Arc::new(State::default());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
        let port = listener.local_addr().expect("its address").port();
        let served = Arc::clone(&state);
        std::thread::Builder::new()
            .name("hostile-http".to_owned())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let state = Arc::clone(&served);
                    let _ = std::thread::Builder::new()
                        .name("hostile-http-conn".to_owned())
                        .spawn(move || {
                            let _ = serve_http(&state, stream);
                        });
                }
            })
            .expect("start the server's thread");
        HostileHttp {
            url: format!("http://127.0.0.1:{port}/cache"),
            state,
        }
    }
}

fn respond(stream: &mut TcpStream, status: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}

fn serve_http(state: &State, mut stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let end = line == "\r\n";
        head.push_str(&line);
        if end {
            break;
        }
    }
    let mut lines = head.lines();
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let length: usize = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let Some(rest) = path.strip_prefix("/cache/") else {
        return respond(&mut stream, "404 Not Found", b"");
    };
    if let Some(code) = state.trip(format!("{method} {path}")) {
        let status = match code {
            tonic::Code::Unavailable => "503 Service Unavailable",
            tonic::Code::ResourceExhausted => "429 Too Many Requests",
            tonic::Code::PermissionDenied => "403 Forbidden",
            _ => "500 Internal Server Error",
        };
        return respond(&mut stream, status, b"injected");
    }
    let (tier, hash) = rest.split_once('/').unwrap_or((rest, ""));
    match (method.as_str(), tier) {
        ("PUT", "cas") => {
            state.put_blob(hash.to_owned(), body);
            respond(&mut stream, "200 OK", b"")
        }
        ("PUT", "ac") => {
            state.updates.fetch_add(1, Ordering::SeqCst);
            lock(&state.entries).insert(hash.to_owned(), body);
            respond(&mut stream, "200 OK", b"")
        }
        ("HEAD", "cas") => {
            let status = if state.has(hash) {
                "200 OK"
            } else {
                "404 Not Found"
            };
            write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
            stream.flush()
        }
        ("GET", "ac") => {
            if let Fault::Message(text) = state.fault() {
                return respond(&mut stream, "503 Service Unavailable", text.as_bytes());
            }
            match state.entry(hash) {
                Some(bytes) => respond(&mut stream, "200 OK", &bytes),
                None => respond(&mut stream, "404 Not Found", b""),
            }
        }
        ("GET", "cas") => match state.serving(hash) {
            Serving::Missing => respond(&mut stream, "404 Not Found", b""),
            Serving::Bytes(bytes) => respond(&mut stream, "200 OK", &bytes),
            Serving::Endless => {
                // Chunked, without end: no length to refuse it by.
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                )?;
                let chunk = vec![0u8; CHUNK];
                loop {
                    write!(stream, "{:x}\r\n", chunk.len())?;
                    stream.write_all(&chunk)?;
                    stream.write_all(b"\r\n")?;
                }
            }
            Serving::Trickle(bytes) => {
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    bytes.len()
                )?;
                for byte in bytes {
                    stream.write_all(&[byte])?;
                    stream.flush()?;
                    std::thread::sleep(TRICKLE);
                }
                Ok(())
            }
        },
        _ => respond(&mut stream, "405 Method Not Allowed", b""),
    }
}

/// A hostile server of the Bazel HTTP cache protocol (`http`) or of the Remote Execution API,
/// started: its URL and the state it shares with the test.
pub(crate) fn start_either(http: bool) -> (String, Arc<State>) {
    if http {
        let s = HostileHttp::start();
        (s.url, s.state)
    } else {
        let s = HostileReapi::start();
        (s.url, s.state)
    }
}
