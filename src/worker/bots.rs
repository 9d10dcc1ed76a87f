//! The Remote Workers API's Bots service (`google.devtools.remoteworkers.v1test2.Bots`), as
//! much of it as a worker needs: its messages written by hand with the field numbers of
//! `bots.proto` and `worker.proto` (checked against the descriptors BuildGrid ships), and a
//! client of `CreateBotSession` and `UpdateBotSession` on a tonic channel, made as
//! generated code makes one (tonic's `Grpc` with a `ProstCodec`).
//!
//! `Any`, `Timestamp` and `Status` are bazel-remote-apis' own well-known types, the ones
//! its REAPI messages use.

use bazel_remote_apis::google::protobuf::{Any, Timestamp};
use bazel_remote_apis::google::rpc::Status;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;

/// A bot's state as the server sees it (`BotStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum BotStatus {
    /// Not set.
    Unspecified = 0,
    /// Healthy, takes leases.
    Ok = 1,
    /// Unhealthy.
    Unhealthy = 2,
    /// About to reboot.
    HostRebooting = 3,
    /// About to stop: the server assigns it nothing more.
    BotTerminating = 4,
    /// Initialising.
    Initializing = 5,
}

/// A lease's state (`LeaseState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum LeaseState {
    /// Not set.
    Unspecified = 0,
    /// Offered, not yet accepted (BuildGrid sends leases `ACTIVE` at once).
    Pending = 1,
    /// Being worked on.
    Active = 2,
    /// Done; `status` and `result` say how.
    Completed = 4,
    /// Withdrawn by the server.
    Cancelled = 5,
}

/// A session between a bot and the server (`BotSession`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct BotSession {
    /// Its name, given by the server.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The bot's stable id, given by the bot.
    #[prost(string, tag = "2")]
    pub bot_id: String,
    /// The bot's state.
    #[prost(enumeration = "BotStatus", tag = "3")]
    pub status: i32,
    /// What the bot offers.
    #[prost(message, optional, tag = "4")]
    pub worker: Option<Worker>,
    /// The work assigned to it.
    #[prost(message, repeated, tag = "5")]
    pub leases: Vec<Lease>,
    /// When the server gives the session up unless it hears from the bot.
    #[prost(message, optional, tag = "6")]
    pub expire_time: Option<Timestamp>,
    /// The server's version of the session; sent back as received.
    #[prost(string, tag = "7")]
    pub version: String,
}

/// A unit of work assigned to a bot (`Lease`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Lease {
    /// Deprecated name of the assignment.
    #[prost(string, tag = "1")]
    pub assignment: String,
    /// Its state.
    #[prost(enumeration = "LeaseState", tag = "2")]
    pub state: i32,
    /// How it ended.
    #[prost(message, optional, tag = "3")]
    pub status: Option<Status>,
    /// What it needs of the worker.
    #[prost(message, optional, tag = "4")]
    pub requirements: Option<Worker>,
    /// When it expires.
    #[prost(message, optional, tag = "5")]
    pub expire_time: Option<Timestamp>,
    /// Deprecated inline assignment.
    #[prost(message, optional, tag = "6")]
    pub inline_assignment: Option<Any>,
    /// Its id (opaque).
    #[prost(string, tag = "7")]
    pub id: String,
    /// The work: an `Action`, or an Action's `Digest`.
    #[prost(message, optional, tag = "8")]
    pub payload: Option<Any>,
    /// The outcome: an `ActionResult`.
    #[prost(message, optional, tag = "9")]
    pub result: Option<Any>,
}

/// What a bot offers (`Worker`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Worker {
    /// Its devices; the first is the one leases are matched against.
    #[prost(message, repeated, tag = "1")]
    pub devices: Vec<Device>,
    /// Properties of the worker as a whole.
    #[prost(message, repeated, tag = "2")]
    pub properties: Vec<KeyValue>,
    /// Its configuration (`capacity`).
    #[prost(message, repeated, tag = "3")]
    pub configs: Vec<KeyValue>,
}

/// A device of a worker (`Device`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Device {
    /// Its handle.
    #[prost(string, tag = "1")]
    pub handle: String,
    /// Its properties (`OSFamily`, `ISA`...).
    #[prost(message, repeated, tag = "2")]
    pub properties: Vec<KeyValue>,
}

/// A property or config: `Worker.Property`, `Worker.Config` and `Device.Property` share
/// this shape.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `CreateBotSessionRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CreateBotSessionRequest {
    /// The instance.
    #[prost(string, tag = "1")]
    pub parent: String,
    /// The session the bot proposes.
    #[prost(message, optional, tag = "2")]
    pub bot_session: Option<BotSession>,
}

/// `UpdateBotSessionRequest` (no `update_mask`: the whole session is sent).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateBotSessionRequest {
    /// The session's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The session as the bot has it.
    #[prost(message, optional, tag = "2")]
    pub bot_session: Option<BotSession>,
}

/// The type URL of an `Any` holding a message of `full_name`.
pub fn type_url(full_name: &str) -> String {
    format!("type.googleapis.com/{full_name}")
}

/// A client of the Bots service.
#[derive(Debug, Clone)]
pub struct BotsClient {
    inner: tonic::client::Grpc<Channel>,
}

impl BotsClient {
    /// A client on `channel`.
    pub fn new(channel: Channel) -> Self {
        BotsClient {
            inner: tonic::client::Grpc::new(channel),
        }
    }

    async fn unary<Q, A>(
        &mut self,
        method: &'static str,
        request: tonic::Request<Q>,
    ) -> Result<A, tonic::Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
        self.inner
            .ready()
            .await
            .map_err(|e| tonic::Status::unavailable(format!("the channel is not ready: {e}")))?;
        let path = PathAndQuery::from_static(method);
        let codec = tonic_prost::ProstCodec::<Q, A>::default();
        Ok(self.inner.unary(request, path, codec).await?.into_inner())
    }

    /// `CreateBotSession`.
    pub async fn create(
        &mut self,
        request: tonic::Request<CreateBotSessionRequest>,
    ) -> Result<BotSession, tonic::Status> {
        self.unary(
            "/google.devtools.remoteworkers.v1test2.Bots/CreateBotSession",
            request,
        )
        .await
    }

    /// `UpdateBotSession`.
    pub async fn update(
        &mut self,
        request: tonic::Request<UpdateBotSessionRequest>,
    ) -> Result<BotSession, tonic::Status> {
        self.unary(
            "/google.devtools.remoteworkers.v1test2.Bots/UpdateBotSession",
            request,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// The bytes of a session as protobuf encodes them, field by field: the numbers are
    /// those of `bots.proto` (a wrong tag would be a different byte here).
    #[test]
    fn a_session_is_encoded_with_the_protos_field_numbers() {
        let session = BotSession {
            name: "n".into(),
            bot_id: "b".into(),
            status: BotStatus::BotTerminating as i32,
            worker: Some(Worker {
                devices: vec![Device {
                    handle: "h".into(),
                    properties: vec![KeyValue {
                        key: "k".into(),
                        value: "v".into(),
                    }],
                }],
                properties: Vec::new(),
                configs: vec![KeyValue {
                    key: "capacity".into(),
                    value: "2".into(),
                }],
            }),
            leases: vec![Lease {
                id: "l".into(),
                state: LeaseState::Completed as i32,
                ..Lease::default()
            }],
            expire_time: None,
            version: "7".into(),
        };
        let bytes = session.encode_to_vec();
        assert_eq!(&bytes[..6], &[0x0a, 1, b'n', 0x12, 1, b'b']);
        assert_eq!(
            &bytes[6..8],
            &[0x18, 4],
            "status is field 3, BOT_TERMINATING 4"
        );
        assert_eq!(bytes[8], 0x22, "worker is field 4");
        let lease = Lease {
            id: "l".into(),
            state: LeaseState::Completed as i32,
            ..Lease::default()
        }
        .encode_to_vec();
        assert_eq!(lease, [0x10, 4, 0x3a, 1, b'l'], "state is 2, id is 7");
        assert!(bytes.ends_with(&[0x3a, 1, b'7']), "version is field 7");
        assert_eq!(
            BotSession::decode(bytes.as_slice()).expect("decodes"),
            session
        );
    }
}
