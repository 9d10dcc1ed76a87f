//! The bot's session with the engine (Remote Workers API): created once with a stable
//! `bot_id`, then one `UpdateBotSession` after another, each sending back the last session
//! received (its `version` included) with the leases this worker finished marked
//! `COMPLETED`. The server answers at once when it has news (a lease for this bot) and
//! otherwise before the session's `expire_time`, so the next call is the heartbeat; a call
//! in flight is abandoned (and sent again at once) when a lease finishes or a stop is
//! asked for, so no result waits for a long poll.
//!
//! A lease that arrives `ACTIVE` starts; a running lease missing from the returned session
//! is cancelled (its processes killed, its result dropped). On SIGTERM/SIGINT the session
//! turns `BOT_TERMINATING`, running leases are cancelled and reported with `UNAVAILABLE`
//! (which the engine retries elsewhere), and the worker ends.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use bazel_remote_apis::google::protobuf::Any;
use bazel_remote_apis::google::rpc::Status;
use prost::Message as _;

use super::bots::{
    BotSession, BotStatus, BotsClient, CreateBotSessionRequest, Device, KeyValue, Lease,
    LeaseState, UpdateBotSessionRequest, Worker, type_url,
};
use super::run_action::{self, Assignment, Cas, Outcome, RESULT_TYPE};
use crate::store::remote::{Grpc, RemoteError, Settings};

/// The shortest call: BuildGrid long-polls for 0.8 × the deadline and assigns nothing on
/// a poll under 3 s.
const MIN_POLL: Duration = Duration::from_secs(5);
/// The longest call.
const MAX_POLL: Duration = Duration::from_secs(60);
/// How long before the session's expiry the next call is made at the latest.
const MARGIN: Duration = Duration::from_secs(1);
/// The wait after a failed call, doubling to [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// What a worker is and offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerOptions {
    /// The engine: `grpc://host:port/instance` (`grpcs://` with the system's roots).
    pub url: String,
    /// The instance (the URL's path).
    pub instance: String,
    /// The stable id of this bot.
    pub bot_id: String,
    /// How many leases run at once.
    pub capacity: usize,
    /// The platform properties leases are matched against (`OSFamily`, `ISA`...).
    pub properties: Vec<(String, String)>,
    /// Where each lease gets a directory of its own (emptied at start).
    pub work_dir: PathBuf,
}

/// Something the worker did, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerEvent {
    /// The engine accepted the session.
    SessionCreated {
        /// Its name.
        name: String,
    },
    /// A lease started.
    Started {
        /// The lease.
        lease: String,
    },
    /// A lease ran to its end.
    Executed {
        /// The lease.
        lease: String,
        /// The command's exit code.
        exit_code: i32,
        /// Whether its timeout killed it.
        timed_out: bool,
    },
    /// A lease could not be carried out.
    Failed {
        /// The lease.
        lease: String,
        /// Why.
        reason: String,
    },
    /// A lease was cancelled (the engine withdrew it, or the worker stops).
    Cancelled {
        /// The lease.
        lease: String,
    },
    /// A call to the engine failed; it is made again.
    Retrying {
        /// What failed.
        reason: String,
    },
    /// The worker stops: `BOT_TERMINATING` sent.
    Terminating,
}

/// What a worker did until it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Served {
    /// Leases whose command ran to its end.
    pub executed: usize,
    /// Leases that could not be carried out.
    pub failed: usize,
    /// Leases cancelled.
    pub cancelled: usize,
}

/// Why a worker could not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerError {
    /// The engine's address or the options are not usable.
    #[error("use the engine: {0}")]
    Engine(RemoteError),
    /// The work directory could not be made.
    #[error("prepare the work directory `{path}`: {reason}")]
    WorkDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

struct Running {
    cancel: Arc<AtomicBool>,
}

/// Serves leases of the engine `options` names until `stop` says so; `event` hears of
/// everything done. Must run on the invocation's runtime.
pub async fn serve(
    options: &WorkerOptions,
    event: &(dyn Fn(WorkerEvent) + Sync),
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Served, WorkerError> {
    let settings = Settings::new(&options.url);
    let tls = options.url.starts_with("grpcs://");
    let grpc = Grpc::new(&settings, tls).map_err(WorkerError::Engine)?;
    let mut bots = BotsClient::new(grpc.channel());
    let cas = Arc::new(Cas::new(Arc::new(grpc), settings));
    let _ = fs_err::remove_dir_all(&options.work_dir);
    fs_err::create_dir_all(&options.work_dir).map_err(|e| WorkerError::WorkDir {
        path: options.work_dir.clone(),
        reason: e.to_string(),
    })?;

    let proposed = BotSession {
        bot_id: options.bot_id.clone(),
        status: BotStatus::Ok as i32,
        worker: Some(Worker {
            devices: vec![Device {
                handle: options.bot_id.clone(),
                properties: options
                    .properties
                    .iter()
                    .map(|(key, value)| KeyValue {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect(),
            }],
            properties: Vec::new(),
            configs: vec![KeyValue {
                key: "capacity".into(),
                value: options.capacity.to_string(),
            }],
        }),
        ..BotSession::default()
    };
    let mut served = Served::default();
    let mut backoff = BACKOFF;
    let mut session = loop {
        if stop() {
            return Ok(served);
        }
        let mut request = tonic::Request::new(CreateBotSessionRequest {
            parent: options.instance.clone(),
            bot_session: Some(proposed.clone()),
        });
        request.set_timeout(MIN_POLL);
        match bots.create(request).await {
            Ok(session) => break session,
            Err(status) => {
                event(WorkerEvent::Retrying {
                    reason: format!("CreateBotSession: {}", described(&status)),
                });
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    };
    event(WorkerEvent::SessionCreated {
        name: session.name.clone(),
    });

    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<(String, Outcome)>();
    let mut running: BTreeMap<String, Running> = BTreeMap::new();
    // Finished leases not yet acknowledged by the engine.
    let mut finished: BTreeMap<String, Lease> = BTreeMap::new();
    let mut terminating = false;
    let mut next_dir = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    backoff = BACKOFF;
    loop {
        start_new(
            &session,
            &mut running,
            &finished,
            terminating,
            options,
            &cas,
            &done_tx,
            &mut next_dir,
            event,
        );
        if terminating && running.is_empty() {
            // The last word: finished leases and BOT_TERMINATING.
            let request = update_request(&session, &finished, true, MIN_POLL);
            let _ = bots.update(request).await;
            event(WorkerEvent::Terminating);
            return Ok(served);
        }
        let wait = poll_for(&session);
        let request = update_request(&session, &finished, terminating, wait);
        let sent: BTreeSet<String> = finished.keys().cloned().collect();
        let call = bots.update(request);
        tokio::pin!(call);
        let mut interrupted = false;
        let answer = loop {
            tokio::select! {
                answer = &mut call => break Some(answer),
                Some((lease, outcome)) = done_rx.recv() => {
                    record(&mut running, &mut finished, &mut served, lease, outcome, event);
                    interrupted = true;
                    break None;
                }
                _ = tick.tick() => {
                    if stop() && !terminating {
                        terminating = true;
                        for run in running.values() {
                            run.cancel.store(true, Ordering::SeqCst);
                        }
                        interrupted = true;
                        break None;
                    }
                }
            }
        };
        let Some(answer) = answer else {
            debug_assert!(interrupted);
            continue;
        };
        match answer {
            Ok(next) => {
                backoff = BACKOFF;
                for lease in &sent {
                    finished.remove(lease);
                }
                // A running lease the engine no longer lists is withdrawn.
                let listed: BTreeSet<&str> = next.leases.iter().map(|l| l.id.as_str()).collect();
                for (lease, run) in &running {
                    if !listed.contains(lease.as_str()) && !run.cancel.swap(true, Ordering::SeqCst)
                    {
                        event(WorkerEvent::Cancelled {
                            lease: lease.clone(),
                        });
                    }
                }
                session = next;
            }
            Err(status) if status.code() == tonic::Code::DeadlineExceeded => {}
            Err(status) => {
                event(WorkerEvent::Retrying {
                    reason: format!("UpdateBotSession: {}", described(&status)),
                });
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// A status as a line: its code and message.
fn described(status: &tonic::Status) -> String {
    let message = crate::store::remote::escaped(status.message());
    format!("{:?}: {message}", status.code())
}

/// How long the next call may last: until a little before the session expires, within
/// [`MIN_POLL`] and [`MAX_POLL`].
fn poll_for(session: &BotSession) -> Duration {
    let left = session
        .expire_time
        .as_ref()
        .and_then(|t| {
            let at = SystemTime::UNIX_EPOCH
                + Duration::new(u64::try_from(t.seconds).ok()?, u32::try_from(t.nanos).ok()?);
            at.duration_since(SystemTime::now()).ok()
        })
        .map_or(MAX_POLL, |left| left.saturating_sub(MARGIN));
    left.clamp(MIN_POLL, MAX_POLL)
}

/// The session to send: the last one received, its leases that finished marked so, and
/// finished leases it no longer lists sent again until acknowledged.
fn update_request(
    session: &BotSession,
    finished: &BTreeMap<String, Lease>,
    terminating: bool,
    wait: Duration,
) -> tonic::Request<UpdateBotSessionRequest> {
    let mut sent = session.clone();
    sent.status = if terminating {
        BotStatus::BotTerminating as i32
    } else {
        BotStatus::Ok as i32
    };
    for lease in &mut sent.leases {
        if let Some(done) = finished.get(&lease.id) {
            *lease = done.clone();
        }
    }
    for (id, done) in finished {
        if !sent.leases.iter().any(|l| &l.id == id) {
            sent.leases.push(done.clone());
        }
    }
    let mut request = tonic::Request::new(UpdateBotSessionRequest {
        name: sent.name.clone(),
        bot_session: Some(sent),
    });
    request.set_timeout(wait);
    request
}

/// Starts every `ACTIVE` lease of `session` that is neither running nor finished.
#[expect(
    clippy::too_many_arguments,
    reason = "the loop's state, lent for one step"
)]
fn start_new(
    session: &BotSession,
    running: &mut BTreeMap<String, Running>,
    finished: &BTreeMap<String, Lease>,
    terminating: bool,
    options: &WorkerOptions,
    cas: &Arc<Cas>,
    done: &tokio::sync::mpsc::UnboundedSender<(String, Outcome)>,
    next_dir: &mut u64,
    event: &(dyn Fn(WorkerEvent) + Sync),
) {
    if terminating {
        return;
    }
    for lease in &session.leases {
        if lease.state != LeaseState::Active as i32
            || running.contains_key(&lease.id)
            || finished.contains_key(&lease.id)
        {
            continue;
        }
        *next_dir += 1;
        let cancel = Arc::new(AtomicBool::new(false));
        let assignment = Assignment {
            worker: options.bot_id.clone(),
            payload: lease.payload.clone(),
            dir: options.work_dir.join(next_dir.to_string()),
            cancel: Arc::clone(&cancel),
        };
        running.insert(lease.id.clone(), Running { cancel });
        event(WorkerEvent::Started {
            lease: lease.id.clone(),
        });
        let cas = Arc::clone(cas);
        let done = done.clone();
        let id = lease.id.clone();
        tokio::spawn(async move {
            let outcome = run_action::carry_out(&cas, assignment).await;
            let _ = done.send((id, outcome));
        });
    }
}

/// Records how a lease ended: the lease to report, unless it was withdrawn.
fn record(
    running: &mut BTreeMap<String, Running>,
    finished: &mut BTreeMap<String, Lease>,
    served: &mut Served,
    id: String,
    outcome: Outcome,
    event: &(dyn Fn(WorkerEvent) + Sync),
) {
    let Some(run) = running.remove(&id) else {
        return;
    };
    let (status, result) = match outcome {
        Outcome::Ran { result, timed_out } => {
            served.executed += 1;
            event(WorkerEvent::Executed {
                lease: id.clone(),
                exit_code: result.exit_code,
                timed_out,
            });
            let code = if timed_out {
                tonic::Code::DeadlineExceeded
            } else {
                tonic::Code::Ok
            };
            let result = Any {
                type_url: type_url(RESULT_TYPE),
                value: result.encode_to_vec(),
            };
            (status(code, String::new()), Some(result))
        }
        Outcome::Cancelled => {
            served.cancelled += 1;
            if !run.cancel.load(Ordering::SeqCst) {
                event(WorkerEvent::Cancelled { lease: id.clone() });
            }
            // Withdrawn by the engine: nothing to report. Cancelled because this worker
            // stops: reported so the engine runs it elsewhere.
            (
                status(
                    tonic::Code::Unavailable,
                    "the worker stopped before the action ended".into(),
                ),
                None,
            )
        }
        Outcome::Failed(e) => {
            served.failed += 1;
            event(WorkerEvent::Failed {
                lease: id.clone(),
                reason: e.to_string(),
            });
            (status(e.code(), e.to_string()), None)
        }
    };
    finished.insert(
        id.clone(),
        Lease {
            id,
            state: LeaseState::Completed as i32,
            status: Some(status),
            result,
            ..Lease::default()
        },
    );
}

fn status(code: tonic::Code, message: String) -> Status {
    Status {
        code: code as i32,
        message,
        details: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(id: &str, state: LeaseState) -> Lease {
        Lease {
            id: id.into(),
            state: state as i32,
            ..Lease::default()
        }
    }

    #[test]
    fn an_update_sends_back_the_session_with_finished_leases_completed() {
        let session = BotSession {
            name: "main/s".into(),
            bot_id: "b".into(),
            version: "41".into(),
            leases: vec![
                lease("a", LeaseState::Active),
                lease("b", LeaseState::Active),
            ],
            ..BotSession::default()
        };
        let mut finished = BTreeMap::new();
        finished.insert("b".to_owned(), lease("b", LeaseState::Completed));
        finished.insert("gone".to_owned(), lease("gone", LeaseState::Completed));
        let request = update_request(&session, &finished, false, MIN_POLL).into_inner();
        assert_eq!(request.name, "main/s");
        let sent = request.bot_session.expect("a session");
        assert_eq!(sent.version, "41", "the version goes back as received");
        assert_eq!(sent.status, BotStatus::Ok as i32);
        let states: Vec<(&str, i32)> = sent
            .leases
            .iter()
            .map(|l| (l.id.as_str(), l.state))
            .collect();
        assert_eq!(
            states,
            [
                ("a", LeaseState::Active as i32),
                ("b", LeaseState::Completed as i32),
                ("gone", LeaseState::Completed as i32)
            ]
        );
        let stopping = update_request(&session, &BTreeMap::new(), true, MIN_POLL).into_inner();
        assert_eq!(
            stopping.bot_session.expect("a session").status,
            BotStatus::BotTerminating as i32
        );
    }

    #[test]
    fn a_poll_ends_before_the_session_expires_within_bounds() {
        let in_secs = |s: u64| BotSession {
            expire_time: Some(bazel_remote_apis::google::protobuf::Timestamp {
                seconds: i64::try_from(
                    (SystemTime::now() + Duration::from_secs(s))
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .expect("after 1970")
                        .as_secs(),
                )
                .expect("a time"),
                nanos: 0,
            }),
            ..BotSession::default()
        };
        let thirty = poll_for(&in_secs(30));
        assert!(thirty <= Duration::from_secs(29) && thirty >= Duration::from_secs(27));
        assert_eq!(poll_for(&in_secs(2)), MIN_POLL);
        assert_eq!(poll_for(&in_secs(600)), MAX_POLL);
        assert_eq!(poll_for(&BotSession::default()), MAX_POLL);
    }
}
