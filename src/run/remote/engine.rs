//! An engine that executes actions, over the remote cache's gRPC client
//! (`store::remote::Grpc`: one channel, the configured headers, deadlines, retries of what
//! may pass, error texts that never hold a header's value).
//!
//! [`Engine::execute`]: `GetCapabilities` (execution enabled, SHA-256), the input blobs
//! `FindMissingBlobs` says are missing uploaded, `Execute` with `skip_cache_lookup`, its
//! operation stream read to the end — each stage reported — and, after a dropped stream,
//! `WaitExecution` on the operation's name; a [`Cancel`] triggered sends `CancelOperation`.
//! The finished operation's result is then fetched and checked whole (`outcome.rs`) before
//! the caller sees any of it.
//!
//! How long an action's stream may stay silent is not bounded here: an action may queue
//! for long. The action's timeout (the engine's to enforce) and the caller's [`Cancel`]
//! bound it.

use std::sync::Arc;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::longrunning;
use longrunning::operations_client::OperationsClient;
use prost::Message as _;
use reapi::execution_client::ExecutionClient;
use tonic::transport::Channel;
use tonic::{Code, Streaming};

use super::action::Encoded;
use super::input::InputError;
use super::outcome::{self, Outcome};
use crate::store::remote::{
    Backend as _, BlobDigest, Deadline, Failed, Grpc, Protocol, RemoteError, Settings, Uploaded,
    attempts, code_name, escaped,
};

/// The largest message read from the engine (an operation holding an `ActionResult`).
const MAX_MESSAGE: usize = 32 << 20;
/// How many bytes of input blobs are read into memory for one upload call.
const UPLOAD_BYTES: u64 = 32 << 20;
/// How many times a dropped operation stream is followed again with `WaitExecution`
/// before the action counts as lost (each after the retries of the call itself).
const REJOINS: u32 = 5;
/// The digest function of every request.
const SHA256: i32 = reapi::digest_function::Value::Sha256 as i32;
/// The type of an `Operation`'s metadata.
const METADATA: &str = "build.bazel.remote.execution.v2.ExecuteOperationMetadata";
/// The type of a finished `Operation`'s response.
const RESPONSE: &str = "build.bazel.remote.execution.v2.ExecuteResponse";

/// Where an action is, as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for a worker.
    Queued,
    /// Running, on this worker when the engine says.
    Executing {
        /// The worker, if the engine named it.
        worker: Option<String>,
    },
}

/// Why an action did not give an outcome; each kind says what the caller must do.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The execution could not be described (a path, a symlink out of the root, a secret
    /// in the environment, a file that changed): nothing was sent.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The engine could not be reached, or gave up, before anything was submitted: the
    /// job may run elsewhere.
    #[error("reach the engine {engine}: {reason}")]
    Unreachable {
        /// The engine.
        engine: String,
        /// What happened.
        reason: String,
    },
    /// The engine refused the action (`FAILED_PRECONDITION`, a quota still spent after
    /// the retries, a platform property it does not know, no execution, no SHA-256).
    #[error("run on the engine {engine}: it refused the action: {reason}")]
    Refused {
        /// The engine.
        engine: String,
        /// What it said.
        reason: String,
    },
    /// The action was submitted and then lost: its stream dropped and `WaitExecution`
    /// failed too, or the engine failed it.
    #[error("follow the action `{operation}` on the engine {engine}: {reason}")]
    Lost {
        /// The engine.
        engine: String,
        /// The operation.
        operation: String,
        /// What happened.
        reason: String,
    },
    /// The action ran past its timeout (the result's status is `DEADLINE_EXCEEDED`).
    #[error("finish the action `{operation}` on the engine {engine}: it ran past its timeout")]
    TimedOut {
        /// The engine.
        engine: String,
        /// The operation.
        operation: String,
    },
    /// The result names a blob that is missing or does not match its digest, or is not a
    /// result of this action's declared outputs: none of it counts.
    #[error("trust the result of `{operation}` from the engine {engine}: {reason}")]
    Integrity {
        /// The engine.
        engine: String,
        /// The operation.
        operation: String,
        /// What did not match.
        reason: String,
    },
    /// The caller cancelled it (and the engine was asked to cancel it, when it had
    /// named the operation).
    #[error("finish the action on the engine {engine}: it was cancelled")]
    Cancelled {
        /// The engine.
        engine: String,
        /// The operation, when the engine had named it.
        operation: Option<String>,
    },
    /// The outputs could not be written where the caller asked.
    #[error("write the outputs of the action to `{path}`")]
    Write {
        /// Where.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl ExecError {
    /// Whether the job may still be run elsewhere (locally) with the same meaning: the
    /// engine was unreachable, refused, lost the action or ran it past its timeout. Never
    /// after an integrity failure, a cancellation or an input that cannot be described.
    pub fn may_run_elsewhere(&self) -> bool {
        matches!(
            self,
            ExecError::Unreachable { .. }
                | ExecError::Refused { .. }
                | ExecError::Lost { .. }
                | ExecError::TimedOut { .. }
        )
    }
}

/// A handle that cancels an action in flight (Ctrl-C, a failure without
/// `--keep-going`); clones cancel the same actions.
#[derive(Debug, Clone)]
pub struct Cancel(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Self::new()
    }
}

impl Cancel {
    /// Not cancelled yet.
    pub fn new() -> Self {
        Cancel(Arc::new(tokio::sync::watch::channel(false).0))
    }

    /// Cancels every action this handle was given to.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once it is cancelled.
    async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}

/// An engine: a Remote Execution API server with execution.
pub struct Engine {
    grpc: Grpc,
    settings: Settings,
    /// Whether `GetCapabilities` already said yes: asked once per engine, not once per
    /// action (an engine bounds its concurrent calls, and 16 actions at once asking it
    /// again met BuildGrid's limit).
    checked: std::sync::atomic::AtomicBool,
}

/// What reading an operation stream came to.
enum Followed {
    /// The operation finished.
    Done(longrunning::Operation),
    /// The stream dropped or ended early, after the operation `name` (if named).
    Dropped {
        name: Option<String>,
        reason: String,
    },
    /// The caller cancelled.
    Cancelled { name: Option<String> },
}

impl Engine {
    /// A client of the engine `settings` names (`grpc://` or `grpcs://`). Nothing is sent
    /// yet; every call must come from one runtime (see `store/remote/grpc.rs`).
    pub fn open(settings: &Settings) -> Result<Self, ExecError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let refused = |reason: String| ExecError::Refused {
            engine: settings.url.clone(),
            reason,
        };
        let (protocol, tls) = Protocol::of(&settings.url).map_err(refused)?;
        if protocol != Protocol::Grpc {
            return Err(refused(
                "an engine is a Remote Execution API server (`grpc://` or `grpcs://`)".to_owned(),
            ));
        }
        let grpc = Grpc::new(settings, tls).map_err(|e| refused(e.to_string()))?;
        Ok(Engine {
            grpc,
            settings: settings.clone(),
            checked: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The engine's address, without credentials.
    pub fn name(&self) -> &str {
        self.grpc.name()
    }

    fn unreachable(&self, error: &RemoteError) -> ExecError {
        match error {
            RemoteError::Refused { reason, .. } | RemoteError::Unsupported { reason, .. } => {
                ExecError::Refused {
                    engine: self.name().to_owned(),
                    reason: reason.clone(),
                }
            }
            _ => ExecError::Unreachable {
                engine: self.name().to_owned(),
                reason: error.to_string(),
            },
        }
    }

    /// `GetCapabilities`: execution enabled, with SHA-256. Once it has said so, it is not
    /// asked again.
    pub async fn check(&self) -> Result<(), ExecError> {
        if self.checked.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let until = Deadline::after(self.settings.deadline(0));
        let server = self
            .grpc
            .server_capabilities(until)
            .await
            .map_err(|e| self.unreachable(&e))?;
        let refused = |reason: &str| ExecError::Refused {
            engine: self.name().to_owned(),
            reason: reason.to_owned(),
        };
        let Some(execution) = &server.execution_capabilities else {
            return Err(refused("the server offers no execution"));
        };
        if !execution.exec_enabled {
            return Err(refused("the server has execution turned off"));
        }
        let sha256 =
            execution.digest_function == SHA256 || execution.digest_functions.contains(&SHA256);
        if !sha256 {
            return Err(refused("the server does not execute with SHA-256 digests"));
        }
        self.checked
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Uploads what the engine lacks of `encoded`'s blobs (`FindMissingBlobs` decides).
    pub async fn upload(&self, encoded: &Encoded) -> Result<Uploaded, ExecError> {
        let digests = encoded.digests();
        let until = Deadline::after(self.settings.deadline(0));
        let missing = self
            .grpc
            .find_missing(digests, until)
            .await
            .map_err(|e| self.unreachable(&e))?;
        let mut uploaded = Uploaded::default();
        let mut group: Vec<(BlobDigest, Vec<u8>)> = Vec::new();
        let mut bytes = 0u64;
        for digest in missing {
            let Some(blob) = encoded.blob(digest) else {
                return Err(ExecError::Refused {
                    engine: self.name().to_owned(),
                    reason: format!("FindMissingBlobs named {digest}, which was not asked about"),
                });
            };
            let blob = blob?;
            bytes += digest.size;
            group.push((digest, blob));
            if bytes >= UPLOAD_BYTES {
                self.write(std::mem::take(&mut group), bytes, &mut uploaded)
                    .await?;
                bytes = 0;
            }
        }
        if !group.is_empty() {
            self.write(group, bytes, &mut uploaded).await?;
        }
        Ok(uploaded)
    }

    async fn write(
        &self,
        group: Vec<(BlobDigest, Vec<u8>)>,
        bytes: u64,
        uploaded: &mut Uploaded,
    ) -> Result<(), ExecError> {
        let count = group.len();
        let until = Deadline::after(self.settings.deadline(bytes));
        self.grpc
            .write_blobs(group, until)
            .await
            .map_err(|e| self.unreachable(&e))?;
        uploaded.blobs += count;
        uploaded.bytes += bytes;
        Ok(())
    }

    fn execution(&self) -> ExecutionClient<Channel> {
        ExecutionClient::new(self.grpc.channel()).max_decoding_message_size(MAX_MESSAGE)
    }

    /// Runs `encoded` on the engine: its capabilities checked, its missing blobs uploaded,
    /// `Execute` followed to the end (`progress` told each stage), the result fetched and
    /// checked whole, and the declared outputs written under `outputs` (a directory that is
    /// empty or missing). `cancel` stops it and cancels the operation on the engine.
    pub async fn execute(
        &self,
        encoded: &Encoded,
        outputs: &std::path::Path,
        progress: &mut (dyn FnMut(Stage) + Send),
        cancel: &Cancel,
    ) -> Result<Outcome, ExecError> {
        let cancelled = || ExecError::Cancelled {
            engine: self.name().to_owned(),
            operation: None,
        };
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        self.check().await?;
        self.upload(encoded).await?;
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let stream = tokio::select! {
            stream = self.submit(encoded) => stream?,
            () = cancel.cancelled() => return Err(cancelled()),
        };
        let mut last = None;
        let mut followed = self.follow(stream, None, progress, &mut last, cancel).await;
        let mut rejoins = 0;
        let operation = loop {
            match followed {
                Followed::Done(operation) => break operation,
                Followed::Cancelled { name } => return Err(self.cancel(name).await),
                Followed::Dropped { name: None, reason } => {
                    return Err(ExecError::Lost {
                        engine: self.name().to_owned(),
                        operation: String::new(),
                        reason: format!(
                            "the stream dropped before it named the operation: {reason}"
                        ),
                    });
                }
                Followed::Dropped {
                    name: Some(name),
                    reason,
                } => {
                    rejoins += 1;
                    if rejoins > REJOINS {
                        return Err(self.lost(
                            &name,
                            format!("the stream dropped {REJOINS} times, last: {reason}"),
                        ));
                    }
                    let stream = tokio::select! {
                        stream = self.wait_execution(&name) => stream.map_err(|e| {
                            self.lost(&name, format!("the stream dropped ({reason}) and WaitExecution failed: {e}"))
                        })?,
                        () = cancel.cancelled() => return Err(self.cancel(Some(name)).await),
                    };
                    followed = self
                        .follow(stream, Some(name), progress, &mut last, cancel)
                        .await;
                }
            }
        };
        let name = operation.name.clone();
        let response = self.response(operation)?;
        outcome::fetch(
            &self.grpc,
            &self.settings,
            encoded,
            &name,
            response,
            outputs,
        )
        .await
    }

    fn lost(&self, operation: &str, reason: String) -> ExecError {
        ExecError::Lost {
            engine: self.name().to_owned(),
            operation: operation.to_owned(),
            reason,
        }
    }

    /// `Execute`, sent again while its failure may pass (an engine dedupes an action sent
    /// twice); a refusal or an engine that cannot be reached is told apart.
    async fn submit(
        &self,
        encoded: &Encoded,
    ) -> Result<Streaming<longrunning::Operation>, ExecError> {
        let method = "Execute";
        let last_code = std::sync::Mutex::new(Code::Ok);
        let last_code = &last_code;
        let until = Deadline::after(self.settings.deadline(0));
        let answer = attempts(until, move || async move {
            let request = self.grpc.stream_request(reapi::ExecuteRequest {
                instance_name: self.grpc.instance().to_owned(),
                skip_cache_lookup: true,
                action_digest: Some(encoded.action.to_reapi()),
                execution_policy: None,
                results_cache_policy: None,
                digest_function: SHA256,
                inline_stdout: false,
                inline_stderr: false,
                inline_output_files: Vec::new(),
            });
            let mut client = self.execution();
            match tokio::time::timeout(self.grpc.timeout(), client.execute(request)).await {
                Ok(Ok(stream)) => Ok(stream.into_inner()),
                Ok(Err(status)) => {
                    *last_code
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = status.code();
                    Err(self.grpc.attempt_failed(method, &status))
                }
                Err(_) => Err(Failed::from(RemoteError::Unavailable {
                    remote: self.name().to_owned(),
                    reason: format!("{method}: no answer within {:?}", self.grpc.timeout()),
                })),
            }
        })
        .await;
        answer.map_err(|error| {
            let code = *last_code
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if refusal(code) {
                ExecError::Refused {
                    engine: self.name().to_owned(),
                    reason: inner_reason(&error),
                }
            } else {
                self.unreachable(&error)
            }
        })
    }

    /// `WaitExecution` on `name`, sent again while its failure may pass.
    async fn wait_execution(
        &self,
        name: &str,
    ) -> Result<Streaming<longrunning::Operation>, RemoteError> {
        let method = "WaitExecution";
        let until = Deadline::after(self.settings.deadline(0));
        attempts(until, move || async move {
            let request = self.grpc.stream_request(reapi::WaitExecutionRequest {
                name: name.to_owned(),
            });
            let mut client = self.execution();
            match tokio::time::timeout(self.grpc.timeout(), client.wait_execution(request)).await {
                Ok(Ok(stream)) => Ok(stream.into_inner()),
                Ok(Err(status)) => Err(self.grpc.attempt_failed(method, &status)),
                Err(_) => Err(Failed::from(RemoteError::Unavailable {
                    remote: self.name().to_owned(),
                    reason: format!("{method}: no answer within {:?}", self.grpc.timeout()),
                })),
            }
        })
        .await
    }

    /// Reads `stream` until the operation is done, it drops, or the caller cancels;
    /// `progress` is told each new stage (`last`: the one told last).
    async fn follow(
        &self,
        mut stream: Streaming<longrunning::Operation>,
        mut name: Option<String>,
        progress: &mut (dyn FnMut(Stage) + Send),
        last: &mut Option<Stage>,
        cancel: &Cancel,
    ) -> Followed {
        loop {
            let next = tokio::select! {
                next = stream.message() => next,
                () = cancel.cancelled() => return Followed::Cancelled { name },
            };
            match next {
                Ok(Some(operation)) => {
                    if !operation.name.is_empty() {
                        name = Some(operation.name.clone());
                    }
                    if let Some(stage) = stage(&operation)
                        && last.as_ref() != Some(&stage)
                    {
                        progress(stage.clone());
                        *last = Some(stage);
                    }
                    if operation.done {
                        return Followed::Done(operation);
                    }
                }
                Ok(None) => {
                    return Followed::Dropped {
                        name,
                        reason: "it ended before the operation was done".to_owned(),
                    };
                }
                Err(status) => {
                    let reason = self
                        .grpc
                        .failed("the operation stream", &status)
                        .to_string();
                    return Followed::Dropped { name, reason };
                }
            }
        }
    }

    /// Asks the engine to cancel `name` (if it was named); the error to return.
    async fn cancel(&self, name: Option<String>) -> ExecError {
        if let Some(name) = &name {
            let method = "CancelOperation";
            let until = Deadline::after(self.settings.deadline(0));
            // Best effort: the caller is leaving either way.
            let _ = attempts(until, move || async move {
                let mut client = OperationsClient::new(self.grpc.channel());
                let request = self
                    .grpc
                    .request(longrunning::CancelOperationRequest { name: name.clone() });
                match tokio::time::timeout(self.grpc.timeout(), client.cancel_operation(request))
                    .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(status)) => Err(self.grpc.attempt_failed(method, &status)),
                    Err(_) => Err(Failed::from(RemoteError::Unavailable {
                        remote: self.name().to_owned(),
                        reason: format!("{method}: no answer"),
                    })),
                }
            })
            .await;
        }
        ExecError::Cancelled {
            engine: self.name().to_owned(),
            operation: name,
        }
    }

    /// The `ExecuteResponse` of a finished operation, its status judged.
    fn response(
        &self,
        operation: longrunning::Operation,
    ) -> Result<reapi::ExecuteResponse, ExecError> {
        let name = operation.name;
        let status_error = |status: &bazel_remote_apis::google::rpc::Status| {
            let code = Code::from_i32(status.code);
            let message = escaped(&status.message);
            match code {
                Code::DeadlineExceeded => ExecError::TimedOut {
                    engine: self.name().to_owned(),
                    operation: name.clone(),
                },
                code if refusal(code) => ExecError::Refused {
                    engine: self.name().to_owned(),
                    reason: format!("{}: {message}", code_name(code)),
                },
                code => self.lost(
                    &name,
                    format!("the engine failed it with {code:?}: {message}"),
                ),
            }
        };
        let response = match operation.result {
            Some(longrunning::operation::Result::Error(status)) => {
                return Err(status_error(&status));
            }
            Some(longrunning::operation::Result::Response(any)) => {
                if !any.type_url.ends_with(RESPONSE) {
                    return Err(self.integrity(
                        &name,
                        format!("the operation's response is a `{}`", escaped(&any.type_url)),
                    ));
                }
                reapi::ExecuteResponse::decode(any.value.as_slice()).map_err(|e| {
                    self.integrity(&name, format!("its ExecuteResponse cannot be read: {e}"))
                })?
            }
            None => {
                return Err(
                    self.integrity(&name, "the operation is done with no result".to_owned())
                );
            }
        };
        if let Some(status) = &response.status
            && status.code != Code::Ok as i32
        {
            return Err(status_error(status));
        }
        Ok(response)
    }

    fn integrity(&self, operation: &str, reason: String) -> ExecError {
        ExecError::Integrity {
            engine: self.name().to_owned(),
            operation: operation.to_owned(),
            reason,
        }
    }
}

/// Whether a status refuses the action itself, so sending it again changes nothing.
fn refusal(code: Code) -> bool {
    matches!(
        code,
        Code::FailedPrecondition
            | Code::InvalidArgument
            | Code::ResourceExhausted
            | Code::PermissionDenied
            | Code::Unauthenticated
            | Code::Unimplemented
            | Code::NotFound
            | Code::OutOfRange
    )
}

/// The reason inside a remote error.
fn inner_reason(error: &RemoteError) -> String {
    match error {
        RemoteError::Unavailable { reason, .. }
        | RemoteError::Refused { reason, .. }
        | RemoteError::Unsupported { reason, .. }
        | RemoteError::Corrupt { reason, .. }
        | RemoteError::Proxy { reason, .. } => reason.clone(),
    }
}

/// The stage an operation's metadata reports, if it reports one this client tells.
fn stage(operation: &longrunning::Operation) -> Option<Stage> {
    let any = operation.metadata.as_ref()?;
    if !any.type_url.ends_with(METADATA) {
        return None;
    }
    let metadata = reapi::ExecuteOperationMetadata::decode(any.value.as_slice()).ok()?;
    use reapi::execution_stage::Value;
    match Value::try_from(metadata.stage).ok()? {
        Value::Queued => Some(Stage::Queued),
        Value::Executing => Some(Stage::Executing {
            worker: metadata
                .partial_execution_metadata
                .map(|m| escaped(&m.worker))
                .filter(|w| !w.is_empty()),
        }),
        Value::Unknown | Value::CacheCheck | Value::Completed => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation(stage: reapi::execution_stage::Value, worker: &str) -> longrunning::Operation {
        let metadata = reapi::ExecuteOperationMetadata {
            stage: stage as i32,
            partial_execution_metadata: Some(reapi::ExecutedActionMetadata {
                worker: worker.to_owned(),
                ..Default::default()
            }),
            ..Default::default()
        };
        longrunning::Operation {
            name: "op".into(),
            metadata: Some(bazel_remote_apis::google::protobuf::Any {
                type_url: format!("type.googleapis.com/{METADATA}"),
                value: metadata.encode_to_vec(),
            }),
            done: false,
            result: None,
        }
    }

    #[test]
    fn stages_are_read_from_the_operation_metadata() {
        use reapi::execution_stage::Value;
        assert_eq!(stage(&operation(Value::Queued, "")), Some(Stage::Queued));
        assert_eq!(
            stage(&operation(Value::Executing, "bot-1\n")),
            Some(Stage::Executing {
                worker: Some("bot-1\\n".into())
            }),
            "a worker's name is escaped"
        );
        assert_eq!(
            stage(&operation(Value::Executing, "")),
            Some(Stage::Executing { worker: None })
        );
        assert_eq!(stage(&operation(Value::Completed, "")), None);
        let mut other = operation(Value::Queued, "");
        other.metadata.as_mut().expect("metadata").type_url = "type.googleapis.com/x.Y".into();
        assert_eq!(stage(&other), None);
    }

    #[test]
    fn only_failures_that_may_pass_elsewhere_allow_running_elsewhere() {
        let e = |s: &str| s.to_owned();
        assert!(
            ExecError::Unreachable {
                engine: e("e"),
                reason: e("r")
            }
            .may_run_elsewhere()
        );
        assert!(
            ExecError::Refused {
                engine: e("e"),
                reason: e("r")
            }
            .may_run_elsewhere()
        );
        assert!(
            ExecError::Lost {
                engine: e("e"),
                operation: e("o"),
                reason: e("r")
            }
            .may_run_elsewhere()
        );
        assert!(
            ExecError::TimedOut {
                engine: e("e"),
                operation: e("o")
            }
            .may_run_elsewhere()
        );
        assert!(
            !ExecError::Integrity {
                engine: e("e"),
                operation: e("o"),
                reason: e("r")
            }
            .may_run_elsewhere()
        );
        assert!(
            !ExecError::Cancelled {
                engine: e("e"),
                operation: None
            }
            .may_run_elsewhere()
        );
    }

    #[test]
    fn a_cancel_handle_is_shared_by_its_clones() {
        use std::time::Duration;
        let cancel = Cancel::new();
        let clone = cancel.clone();
        assert!(!cancel.is_cancelled());
        clone.cancel();
        assert!(cancel.is_cancelled());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), cancel.cancelled())
                .await
                .expect("resolves once cancelled");
        });
    }
}
