//! The remote tier of the store: a cache shared between machines, over the protocols users
//! already run (the Remote Execution API's CAS and ActionCache over gRPC; the Bazel HTTP
//! cache protocol), with one encoding of a receipt for both (`encoding.rs`).
//!
//! Adding a protocol (S3, GCS) is one file: a [`Backend`] and a line in [`backend()`].

mod backend;
mod cache;
mod config;
pub mod encoding;
mod grpc;
mod http;
pub mod proxy;
mod retry;
mod tunnel;

pub use backend::{Backend, BlobDigest, Capabilities, Fut, RemoteError, escaped};
pub use cache::{RemoteCache, Uploaded, backend};
pub use config::{
    CONNECT_TIMEOUT, InstanceProblem, LOOKED_UP_TRUSTED_KEYS, MIN_BYTES_PER_SECOND, Protocol,
    REQUEST_TIMEOUT, Settings, instance,
};
pub use retry::Deadline;
// The remote executor (`run/remote/`) and the worker speak over the same client: its channel, headers,
// deadlines, retries and error texts.
pub(crate) use grpc::{Grpc, code_name};
pub(crate) use retry::{Failed, attempts};
