//! The control protocol between [`crate::Run`] and the init: one JSON object per line, on the
//! init's stdin (requests, tagged by `op`) and stdout (replies, tagged by `ev`).
//!
//! ```text
//! parent → init   {"op":"hello","isolation":"auto","parent_pid":4242}
//! init → parent   {"ev":"hello","isolation":{"kind":"namespaces","user_namespace":false}}
//! parent → init   {"op":"spawn","job":1,"argv":["sh","-c","echo hi"],"cwd":"/w","env":[["PATH","/usr/bin"]],
//!                  "network":"private","timeout_ns":300000000,"log":"/w/1.log","redact":["s3cr3t"],
//!                  "world":{"read_only":[],"writable":["/w"],"overlays":[],"private":[]}}
//! parent → init   {"op":"probe","job":2,"url":"http://127.0.0.1:4180/","expect_status":null,
//!                  "expect_headers":[],"expect_body":"ok","timeout_ns":5000000000,"log":"/w/2.log","redact":[]}
//! init → parent   {"ev":"exited","job":1,"code":0,"signal":null,"timed_out":false,"killed":false,
//!                  "duration_ns":2000000,"spawn_error":null,"log_error":null}
//! init → parent   {"ev":"ready","job":2,"attempts":3,"duration_ns":70000000}
//! parent → init   {"op":"kill","job":1}      {"op":"shutdown"}
//! init → parent   {"ev":"bye"}               (after shutdown, once every job has ended)
//! ```
//!
//! Byte strings (argv, environment, paths, secrets) are JSON strings when they are UTF-8 and
//! arrays of byte values otherwise. The hello is the first line each way; the init answers
//! `hello_failed` instead when it cannot set up what was asked, and `fatal` before exiting
//! when the protocol is broken. Every job id is chosen by the parent and used once.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A byte string on the wire: text when it is UTF-8, an array of bytes otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum WireBytes {
    /// Valid UTF-8.
    Text(String),
    /// Anything else.
    Raw(Vec<u8>),
}

impl WireBytes {
    pub(crate) fn from_bytes(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => WireBytes::Text(text.to_owned()),
            Err(_) => WireBytes::Raw(bytes.to_vec()),
        }
    }

    pub(crate) fn from_os(value: &OsStr) -> Self {
        Self::from_bytes(value.as_bytes())
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        match self {
            WireBytes::Text(text) => text.into_bytes(),
            WireBytes::Raw(bytes) => bytes,
        }
    }

    pub(crate) fn into_os(self) -> OsString {
        OsString::from_vec(self.into_bytes())
    }

    pub(crate) fn into_path(self) -> PathBuf {
        PathBuf::from(self.into_os())
    }
}

/// The isolation asked for, on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireIsolationRequest {
    Auto,
    Required,
    Disabled,
}

/// The network of a job, on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireNetwork {
    Private,
    Host,
}

/// A job to spawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SpawnRequest {
    pub(crate) job: u64,
    pub(crate) argv: Vec<WireBytes>,
    /// The exact file to execute, when the caller resolved it.
    #[serde(default)]
    pub(crate) program: Option<WireBytes>,
    pub(crate) cwd: WireBytes,
    pub(crate) env: Vec<(WireBytes, WireBytes)>,
    pub(crate) network: WireNetwork,
    pub(crate) timeout_ns: Option<u64>,
    pub(crate) log: WireBytes,
    pub(crate) redact: Vec<WireBytes>,
    /// Counts against the run's job limit (waits in the init for a free slot).
    #[serde(default)]
    pub(crate) limited: bool,
    /// When it ends, waiting jobs stay until a `resume`.
    #[serde(default)]
    pub(crate) hold_after: bool,
    /// What it sees of the file system, with namespaces.
    #[serde(default)]
    pub(crate) world: WireWorld,
}

/// A job's world, on the wire (see [`crate::World`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireWorld {
    pub(crate) read_only: Vec<WireBytes>,
    pub(crate) writable: Vec<WireBytes>,
    pub(crate) overlays: Vec<WireOverlay>,
    pub(crate) private: Vec<WireBytes>,
}

/// An overlay of a job's world, on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireOverlay {
    pub(crate) target: WireBytes,
    pub(crate) layers: Vec<WireBytes>,
    pub(crate) scratch: WireBytes,
}

impl WireWorld {
    pub(crate) fn from_world(world: &crate::types::World) -> Self {
        let wire = |p: &std::path::Path| WireBytes::from_os(p.as_os_str());
        WireWorld {
            read_only: world.read_only.iter().map(|p| wire(p)).collect(),
            writable: world.writable.iter().map(|p| wire(p)).collect(),
            overlays: world
                .overlays
                .iter()
                .map(|o| WireOverlay {
                    target: wire(&o.target),
                    layers: o.layers.iter().map(|p| wire(p)).collect(),
                    scratch: wire(&o.scratch),
                })
                .collect(),
            private: world.private.iter().map(|p| wire(p)).collect(),
        }
    }

    pub(crate) fn into_world(self) -> crate::types::World {
        let paths = |all: Vec<WireBytes>| all.into_iter().map(WireBytes::into_path).collect();
        crate::types::World {
            read_only: paths(self.read_only),
            writable: paths(self.writable),
            overlays: self
                .overlays
                .into_iter()
                .map(|o| crate::types::OverlaySpec {
                    target: o.target.into_path(),
                    layers: paths(o.layers),
                    scratch: o.scratch.into_path(),
                })
                .collect(),
            private: paths(self.private),
        }
    }
}

/// A probe to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProbeRequest {
    pub(crate) job: u64,
    pub(crate) url: String,
    pub(crate) expect_status: Option<u16>,
    pub(crate) expect_headers: Vec<(String, String)>,
    pub(crate) expect_body: Option<String>,
    pub(crate) timeout_ns: u64,
    pub(crate) log: WireBytes,
    pub(crate) redact: Vec<WireBytes>,
}

/// A line from the parent to the init.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Request {
    Hello {
        isolation: WireIsolationRequest,
        parent_pid: i32,
        /// How many limited jobs may run at once; none: no limit.
        #[serde(default)]
        job_limit: Option<u64>,
        /// Paths covered with an empty read-only tmpfs wherever a job's world shows them.
        #[serde(default)]
        hidden: Vec<WireBytes>,
        /// Whether jobs' executions are recorded.
        #[serde(default = "started_default")]
        record_executions: bool,
    },
    Spawn(SpawnRequest),
    Probe(ProbeRequest),
    Kill {
        job: u64,
    },
    /// Drops a limited job that is still waiting for a slot; does nothing to one that
    /// started.
    Cancel {
        job: u64,
    },
    /// Starts waiting jobs again after a limited job held them (it did not exit 0, or
    /// was spawned with `hold_after`).
    Resume,
    Shutdown,
}

/// The isolation a run has, on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum WireIsolation {
    Namespaces { user_namespace: bool },
    None { reason: String },
}

/// A line from the init to the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub(crate) enum Reply {
    Hello {
        isolation: WireIsolation,
    },
    HelloFailed {
        /// True when the request was `required` and namespaces are unavailable.
        isolation_unavailable: bool,
        reason: String,
    },
    Exited {
        job: u64,
        code: Option<i32>,
        signal: Option<i32>,
        timed_out: bool,
        killed: bool,
        duration_ns: u64,
        spawn_error: Option<String>,
        log_error: Option<String>,
        /// False for a limited job cancelled (or stopped) while it waited for a slot.
        #[serde(default = "started_default")]
        started: bool,
        /// What the job executed, when recorded: (path, digest) pairs and the gaps.
        #[serde(default)]
        executed: Option<WireRecorded>,
    },
    Ready {
        job: u64,
        attempts: u32,
        duration_ns: u64,
    },
    NotReady {
        job: u64,
        attempts: u32,
        reason: String,
    },
    Fatal {
        reason: String,
    },
    Bye,
}

/// [`crate::Recorded`] on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireRecorded {
    pub(crate) files: Vec<(WireBytes, String)>,
    pub(crate) gaps: Vec<String>,
}

impl WireRecorded {
    pub(crate) fn into_recorded(self) -> crate::types::Recorded {
        crate::types::Recorded {
            files: self
                .files
                .into_iter()
                .map(|(path, digest)| crate::types::Executed {
                    path: path.into_path(),
                    digest,
                })
                .collect(),
            gaps: self.gaps,
        }
    }
}

fn started_default() -> bool {
    true
}

/// What a probe process reports to the init, as one JSON line on its result pipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProbeOutcome {
    pub(crate) ready: bool,
    pub(crate) attempts: u32,
    pub(crate) duration_ns: u64,
    pub(crate) reason: String,
}

/// A duration in nanoseconds, saturating.
pub(crate) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Encodes a message as one line, newline included.
pub(crate) fn encode_line<T: Serialize>(message: &T) -> Vec<u8> {
    // Serialising these plain structs cannot fail (no maps with non-string keys, no
    // failing `Serialize` impls); fall back to a fatal line rather than panicking.
    let mut line = serde_json::to_vec(message)
        .unwrap_or_else(|_| br#"{"ev":"fatal","reason":"unserialisable message"}"#.to_vec());
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_strings_are_text_when_they_can_be() {
        let text = serde_json::to_string(&WireBytes::from_bytes(b"abc")).ok();
        assert_eq!(text.as_deref(), Some(r#""abc""#));
        let raw = serde_json::to_string(&WireBytes::from_bytes(&[0xff, 0x00])).ok();
        assert_eq!(raw.as_deref(), Some("[255,0]"));
        let back: Option<WireBytes> = serde_json::from_str("[255,0]").ok();
        assert_eq!(back.map(WireBytes::into_bytes), Some(vec![0xff, 0x00]));
    }

    #[test]
    fn requests_round_trip() {
        let request = Request::Spawn(SpawnRequest {
            job: 1,
            argv: vec![WireBytes::from_bytes(b"sh")],
            program: Some(WireBytes::from_bytes(b"/bin/sh")),
            cwd: WireBytes::from_bytes(b"/"),
            env: vec![(WireBytes::from_bytes(b"A"), WireBytes::from_bytes(b"\xff"))],
            network: WireNetwork::Private,
            timeout_ns: Some(5),
            log: WireBytes::from_bytes(b"/x.log"),
            redact: vec![WireBytes::from_bytes(b"s")],
            limited: true,
            hold_after: true,
            world: WireWorld {
                read_only: vec![WireBytes::from_bytes(b"/opt")],
                writable: vec![WireBytes::from_bytes(b"/w")],
                overlays: vec![WireOverlay {
                    target: WireBytes::from_bytes(b"/w/sb"),
                    layers: vec![WireBytes::from_bytes(b"/s")],
                    scratch: WireBytes::from_bytes(b"/w/o"),
                }],
                private: vec![WireBytes::from_bytes(b"/home/u")],
            },
        });
        let line = encode_line(&request);
        assert_eq!(line.last(), Some(&b'\n'));
        let back: Option<Request> = serde_json::from_slice(&line).ok();
        assert_eq!(back, Some(request));
        // A request from an older parent, without the newer fields, still reads.
        let old = br#"{"op":"spawn","job":2,"argv":["sh"],"cwd":"/","env":[],"network":"host","timeout_ns":null,"log":"/l","redact":[]}"#;
        match serde_json::from_slice::<Request>(old) {
            Ok(Request::Spawn(spawn)) => {
                assert!(!spawn.limited && !spawn.hold_after && spawn.program.is_none());
                assert_eq!(spawn.world, WireWorld::default());
            }
            other => panic!("{other:?}"),
        }
        let shutdown = String::from_utf8(encode_line(&Request::Shutdown)).ok();
        assert_eq!(shutdown.as_deref(), Some("{\"op\":\"shutdown\"}\n"));
    }
}
