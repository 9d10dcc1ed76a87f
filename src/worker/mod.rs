//! `proofgraph worker`'s runner: a generic worker for Remote Execution API engines that
//! schedule through the Remote Workers API (BuildGrid, Buildbarn's bots protocol). It
//! runs any engine's Actions, not only proofgraph's, each as hermetically as a local
//! provider: its input root materialised from CAS in a fresh directory, its command in a
//! sandbox of its own (network, PID and mount namespaces; a world of the input root and
//! the system's read-only directories), its declared outputs collected without following a
//! link, and its result reported only once every blob it names is in CAS.
//!
//! - `bots.rs`: the Bots API's messages (by hand, with the proto's field numbers) and client;
//! - `session.rs`: the session loop (create, long-poll, heartbeat, cancel, terminate);
//! - `run_action.rs`: one lease, from payload to `ActionResult`;
//! - `input_root.rs`, `outputs.rs`: the input tree in, the declared outputs out;
//! - `identity.rs`: the stable bot id.
//!
//! Nothing here prints: the session reports [`WorkerEvent`]s to its caller.

pub mod bots;
mod identity;
mod input_root;
mod outputs;
mod run_action;
mod session;

pub use identity::default_bot_id;
pub use run_action::ActionError;
pub use session::{Served, WorkerError, WorkerEvent, WorkerOptions, serve};
