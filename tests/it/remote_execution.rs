//! A provider's job as a Remote Execution API action (issue 26, item 2), against the hostile
//! engine of tests/it/hostile_support.rs: a real gRPC server on a loopback port whose
//! `Execute` follows a script. Only what `FindMissingBlobs` says is missing is uploaded;
//! the engine is asked to run (never to answer from its cache); stages are reported; a
//! dropped stream is followed again with `WaitExecution`; a cancel reaches the engine;
//! and each fault — a forged result, a refusal, a timeout, a lost operation, an engine
//! that is not there — gives its own typed error, a forged result never an outcome.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use proofgraph::base::redact::Secrets;
use proofgraph::run::remote::{
    Cancel, Encoded, Engine, Environment, ExecError, Execution, Files, Output, RelPath, Stage,
    encode,
};
use proofgraph::store::remote::Settings;
use prost::Message as _;

use crate::hostile_support::{HostileReapi, Script, State};
use crate::remote_support::runtime;
use crate::support::free_port;

fn settings(url: &str) -> Settings {
    let mut settings = Settings::new(url);
    settings.connect_timeout = Duration::from_secs(1);
    settings.timeout = Duration::from_secs(3);
    settings
}

/// A provider's job: a script, a source file, and `report.json` and `logs` as its outputs.
fn job() -> Encoded {
    job_with(b"pub fn f() {}\n")
}

/// [`job`] with `lib` as `src/lib.rs`.
fn job_with(lib: &[u8]) -> Encoded {
    let mut files = Files::new();
    files
        .bytes("repo/run.sh", b"#!/bin/sh\necho hi > report.json\n", true)
        .expect("add");
    files.bytes("repo/src/lib.rs", lib, false).expect("add");
    files
        .bytes("repo/copy/lib.rs", b"pub fn f() {}\n", false)
        .expect("add");
    encode(&Execution {
        files,
        argv: vec!["./run.sh".into()],
        working_directory: RelPath::new("repo").expect("a path"),
        env: Environment::checked([("LANG".into(), "C".into())], &Secrets::none())
            .expect("no secret"),
        outputs: vec![
            RelPath::new("report.json").expect("a path"),
            RelPath::new("logs").expect("a path"),
        ],
        platform: vec![("OSFamily".into(), "linux".into())],
        timeout: Duration::from_secs(30),
    })
    .expect("encoded")
}

/// An honest result: exit 3, stdout, and `report.json`, every blob in the engine's CAS.
fn honest(state: &State) -> reapi::ActionResult {
    reapi::ActionResult {
        exit_code: 3,
        stdout_digest: Some(state.put(b"ran on the engine\n")),
        stderr_digest: Some(state.put(b"")),
        output_files: vec![reapi::OutputFile {
            path: "report.json".into(),
            digest: Some(state.put(b"{\"passed\": 2}")),
            is_executable: false,
            contents: Vec::new(),
            node_properties: None,
        }],
        execution_metadata: Some(reapi::ExecutedActionMetadata {
            worker: "hostile-bot".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Runs `encoded` on the engine at `url`, its outputs under `out`; the stages reported.
fn execute(
    url: &str,
    encoded: &Encoded,
    out: &Path,
    cancel: &Cancel,
) -> (
    Result<proofgraph::run::remote::Outcome, ExecError>,
    Vec<Stage>,
) {
    let engine = Engine::open(&settings(url)).expect("a client");
    let stages = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&stages);
    let mut progress = move |stage: Stage| seen.lock().expect("stages").push(stage);
    let result = runtime().block_on(engine.execute(encoded, out, &mut progress, cancel));
    let stages = stages.lock().expect("stages").clone();
    (result, stages)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .map(|d| {
            d.map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn an_action_runs_on_the_engine_and_its_checked_result_is_the_outcome() {
    let engine = HostileReapi::start();
    let encoded = job();
    engine.state.script(Script::Complete(honest(&engine.state)));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, stages) = execute(&engine.url, &encoded, out.path(), &Cancel::new());
    let outcome = outcome.expect("an outcome");
    assert_eq!(outcome.exit_code, 3);
    assert_eq!(outcome.stdout, b"ran on the engine\n");
    assert_eq!(outcome.metadata.worker, "hostile-bot");
    assert_eq!(outcome.engine, engine.url);
    assert_eq!(outcome.action, encoded.action);
    assert!(!outcome.cached);
    assert_eq!(
        stages,
        [
            Stage::Queued,
            Stage::Executing {
                worker: Some("hostile-bot".into())
            }
        ]
    );
    assert_eq!(
        fs_err::read_to_string(out.path().join("report.json")).expect("the report"),
        "{\"passed\": 2}"
    );
    assert_eq!(entries(out.path()), ["report.json"], "no staging left");
    assert!(
        matches!(&outcome.outputs[..], [Output::File { path, .. }] if path.as_str() == "report.json")
    );
    // The engine was asked to run the action, never to answer from its cache, and what
    // it runs says so too.
    let executed = engine.state.executed.lock().expect("requests").clone();
    assert_eq!(executed.len(), 1);
    assert!(executed[0].skip_cache_lookup);
    assert_eq!(executed[0].action_digest, Some(encoded.action.to_reapi()));
    assert_eq!(executed[0].instance_name, "main");
    let action = encoded.blob(encoded.action).expect("named").expect("bytes");
    assert!(
        reapi::Action::decode(action.as_slice())
            .expect("an action")
            .do_not_cache
    );
}

#[test]
fn only_the_blobs_the_engine_lacks_are_uploaded() {
    let engine = HostileReapi::start();
    let encoded = job();
    let client = Engine::open(&settings(&engine.url)).expect("a client");
    let rt = runtime();
    let first = rt.block_on(client.upload(&encoded)).expect("uploaded");
    // The root, repo, src, copy (the same as src: one blob), the two files (lib.rs twice:
    // one blob), the command, the action.
    assert_eq!(first.blobs, encoded.digests().len());
    let mut written = engine.state.written.lock().expect("written").clone();
    written.sort();
    let mut named: Vec<String> = encoded
        .digests()
        .iter()
        .map(|d| d.to_reapi().hash)
        .collect();
    named.sort();
    assert_eq!(written, named, "each blob once");
    let again = rt.block_on(client.upload(&encoded)).expect("nothing to do");
    assert_eq!(again.blobs, 0);
    assert_eq!(
        engine.state.written.lock().expect("written").len(),
        named.len()
    );
    // A changed file: only its blob, its directories and the action (the command is
    // the same).
    let changed = job_with(b"pub fn g() {}\n");
    let third = rt.block_on(client.upload(&changed)).expect("uploaded");
    // lib.rs's new bytes, src, repo, the root, the action.
    assert_eq!(third.blobs, 5);
}

/// Runs the job against a result the test forged; the error, and what was left in `out`.
fn forged(forge: impl FnOnce(&State, &mut reapi::ActionResult)) -> (ExecError, Vec<String>) {
    let engine = HostileReapi::start();
    let encoded = job();
    let mut result = honest(&engine.state);
    forge(&engine.state, &mut result);
    engine.state.script(Script::Complete(result));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, _) = execute(&engine.url, &encoded, out.path(), &Cancel::new());
    let error = outcome.expect_err("a forged result is never an outcome");
    (error, entries(out.path()))
}

#[test]
fn a_forged_result_never_yields_an_outcome() {
    let digest_of = |bytes: &[u8]| {
        let state = State::default();
        state.put(bytes)
    };
    // stdout names a blob the engine does not have.
    let (error, left) = forged(|_, r| r.stdout_digest = Some(digest_of(b"never stored")));
    assert!(matches!(error, ExecError::Integrity { .. }), "{error}");
    assert!(error.to_string().contains("does not have"), "{error}");
    assert!(left.is_empty(), "{left:?}");
    // The report's blob does not match its digest.
    let (error, left) = forged(|state, r| {
        let digest = digest_of(b"{\"passed\": 9}");
        state.forge(&digest, b"{\"failed\": 9}");
        r.output_files[0].digest = Some(digest);
    });
    assert!(matches!(error, ExecError::Integrity { .. }), "{error}");
    assert!(error.to_string().contains("served"), "{error}");
    assert!(
        left.is_empty(),
        "nothing of a forged result is written: {left:?}"
    );
    // stderr's blob is forged.
    let (error, left) = forged(|state, r| {
        let digest = digest_of(b"warning");
        state.forge(&digest, b"WARNING");
        r.stderr_digest = Some(digest);
    });
    assert!(matches!(error, ExecError::Integrity { .. }), "{error}");
    assert!(left.is_empty(), "{left:?}");
    // A file under the declared `logs`, forged, after the report was fetched and staged:
    // still nothing is left.
    let (error, left) = forged(|state, r| {
        let digest = digest_of(b"log line");
        state.forge(&digest, b"LOG LINE");
        r.output_files.push(reapi::OutputFile {
            path: "logs/a.txt".into(),
            digest: Some(digest),
            ..Default::default()
        });
    });
    assert!(matches!(error, ExecError::Integrity { .. }), "{error}");
    assert!(left.is_empty(), "{left:?}");
    // The same file honest is written where it was declared.
    let engine = HostileReapi::start();
    let mut result = honest(&engine.state);
    result.output_files.push(reapi::OutputFile {
        path: "logs/a.txt".into(),
        digest: Some(engine.state.put(b"log line")),
        ..Default::default()
    });
    engine.state.script(Script::Complete(result));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, _) = execute(&engine.url, &job(), out.path(), &Cancel::new());
    outcome.expect("honest");
    assert_eq!(
        fs_err::read_to_string(out.path().join("logs/a.txt")).expect("the log"),
        "log line"
    );
    // An output the action did not declare, or out of the outputs.
    for path in ["other.json", "../escape.json", "/etc/passwd"] {
        let (error, left) = forged(|state, r| {
            r.output_files.push(reapi::OutputFile {
                path: path.into(),
                digest: Some(state.put(b"x")),
                ..Default::default()
            });
        });
        assert!(
            matches!(error, ExecError::Integrity { .. }),
            "{path}: {error}"
        );
        assert!(left.is_empty(), "{path}: {left:?}");
    }
    // A symlink leading out of the outputs.
    let (error, left) = forged(|_, r| {
        r.output_files.clear();
        r.output_symlinks.push(reapi::OutputSymlink {
            path: "report.json".into(),
            target: "../../etc/passwd".into(),
            node_properties: None,
        });
    });
    assert!(matches!(error, ExecError::Integrity { .. }), "{error}");
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_dropped_stream_is_followed_again_with_wait_execution() {
    let engine = HostileReapi::start();
    let encoded = job();
    engine
        .state
        .script(Script::Drop(Some(honest(&engine.state))));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, stages) = execute(&engine.url, &encoded, out.path(), &Cancel::new());
    let outcome = outcome.expect("the outcome, through WaitExecution");
    assert_eq!(outcome.exit_code, 3);
    assert_eq!(outcome.operation, "operations/1");
    assert_eq!(
        engine.state.waited.lock().expect("waited").clone(),
        ["operations/1"]
    );
    assert_eq!(stages.first(), Some(&Stage::Queued));
    assert!(out.path().join("report.json").exists());
}

#[test]
fn a_dropped_stream_the_engine_no_longer_knows_is_lost() {
    let engine = HostileReapi::start();
    engine.state.script(Script::Drop(None));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, _) = execute(&engine.url, &job(), out.path(), &Cancel::new());
    let error = outcome.expect_err("lost");
    match &error {
        ExecError::Lost {
            operation, reason, ..
        } => {
            assert_eq!(operation, "operations/1");
            assert!(reason.contains("WaitExecution"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(error.may_run_elsewhere());
}

#[test]
fn a_refusal_is_refused_and_a_quota_is_refused_after_its_retries() {
    let engine = HostileReapi::start();
    engine
        .state
        .script(Script::Refuse(tonic::Code::FailedPrecondition));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, _) = execute(&engine.url, &job(), out.path(), &Cancel::new());
    let error = outcome.expect_err("refused");
    assert!(matches!(error, ExecError::Refused { .. }), "{error}");
    assert!(error.to_string().contains("FAILED_PRECONDITION"), "{error}");
    assert_eq!(
        engine.state.executed.lock().expect("requests").len(),
        1,
        "not retried"
    );

    let engine = HostileReapi::start();
    engine
        .state
        .script(Script::Refuse(tonic::Code::ResourceExhausted));
    let (outcome, _) = execute(&engine.url, &job(), out.path(), &Cancel::new());
    let error = outcome.expect_err("refused");
    assert!(matches!(error, ExecError::Refused { .. }), "{error}");
    assert!(error.to_string().contains("RESOURCE_EXHAUSTED"), "{error}");
    assert!(
        engine.state.executed.lock().expect("requests").len() > 1,
        "a quota is retried first"
    );
}

#[test]
fn a_deadline_exceeded_result_is_a_timeout() {
    let engine = HostileReapi::start();
    engine
        .state
        .script(Script::Status(tonic::Code::DeadlineExceeded));
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, _) = execute(&engine.url, &job(), out.path(), &Cancel::new());
    let error = outcome.expect_err("timed out");
    assert!(
        matches!(&error, ExecError::TimedOut { operation, .. } if operation == "operations/1"),
        "{error}"
    );
}

#[test]
fn a_cancel_cancels_the_operation_on_the_engine() {
    let engine = HostileReapi::start();
    engine.state.script(Script::Hang);
    let cancel = Cancel::new();
    let trigger = cancel.clone();
    let state = Arc::clone(&engine.state);
    let canceller = std::thread::spawn(move || {
        // Once the engine has the action (queued), as Ctrl-C would.
        for _ in 0..500 {
            if !state.executed.lock().expect("requests").is_empty() {
                std::thread::sleep(Duration::from_millis(100));
                trigger.cancel();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        trigger.cancel();
    });
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, stages) = execute(&engine.url, &job(), out.path(), &cancel);
    canceller.join().expect("the canceller");
    let error = outcome.expect_err("cancelled");
    assert!(
        matches!(&error, ExecError::Cancelled { operation: Some(op), .. } if op == "operations/1"),
        "{error:?}"
    );
    assert!(!error.may_run_elsewhere());
    assert_eq!(stages, [Stage::Queued]);
    assert_eq!(
        engine.state.cancelled.lock().expect("cancelled").clone(),
        ["operations/1"]
    );
}

#[test]
fn an_engine_that_is_not_there_is_unreachable_before_anything_is_submitted() {
    let url = format!("grpc://127.0.0.1:{}/main", free_port());
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, stages) = execute(&url, &job(), out.path(), &Cancel::new());
    let error = outcome.expect_err("unreachable");
    assert!(matches!(error, ExecError::Unreachable { .. }), "{error}");
    assert!(error.may_run_elsewhere());
    assert!(stages.is_empty());
}

/// Against a real engine (BuildGrid with its SQL scheduler, tests/it/engine_support.rs), no
/// worker yet: the input blobs land in its CAS once, an Action with a platform property it
/// does not know is refused, and an action it queued is followed until the caller cancels.
///
/// The end-to-end run on a worker (`proofgraph worker`, being written beside this) is the
/// lead's to add once both are merged: `Engine::execute` is the whole client side of it.
#[test]
fn on_buildgrid_blobs_go_once_an_unknown_property_is_refused_and_a_queued_action_is_cancelled() {
    let engine = crate::engine_support::Engine::start();
    let encoded = job();
    let client = Engine::open(&settings(&engine.url)).expect("a client");
    let rt = runtime();
    let first = rt.block_on(client.upload(&encoded)).expect("uploaded");
    assert_eq!(first.blobs, encoded.digests().len());
    for digest in encoded.digests() {
        let path = engine.blob_path(&digest.to_reapi().hash);
        assert_eq!(
            fs_err::read(&path).expect("in the engine's CAS"),
            encoded.blob(digest).expect("named").expect("bytes")
        );
    }
    let again = rt.block_on(client.upload(&encoded)).expect("nothing to do");
    assert_eq!(again.blobs, 0, "FindMissingBlobs says it has everything");

    // A property the engine does not match workers by.
    let mut files = Files::new();
    files.bytes("a.txt", b"a", false).expect("add");
    let odd = encode(&Execution {
        files,
        argv: vec!["true".into()],
        working_directory: RelPath::root(),
        env: Environment::checked(Vec::new(), &Secrets::none()).expect("empty"),
        outputs: Vec::new(),
        platform: vec![("Flavor".into(), "vanilla".into())],
        timeout: Duration::from_secs(10),
    })
    .expect("encoded");
    let out = tempfile::tempdir().expect("a directory");
    let (outcome, _) = execute(&engine.url, &odd, out.path(), &Cancel::new());
    let error = outcome.expect_err("refused");
    assert!(matches!(error, ExecError::Refused { .. }), "{error}");
    assert!(error.may_run_elsewhere());

    // No worker: the action is queued; the caller cancels once it is.
    let cancel = Cancel::new();
    let trigger = cancel.clone();
    let mut stages = Vec::new();
    let mut progress = |stage: Stage| {
        if stage == Stage::Queued {
            trigger.cancel();
        }
        stages.push(stage);
    };
    let result = rt.block_on(client.execute(&encoded, out.path(), &mut progress, &cancel));
    let error = result.expect_err("cancelled");
    assert!(
        matches!(&error, ExecError::Cancelled { operation: Some(name), .. } if !name.is_empty()),
        "{error:?}\n{}",
        engine.log()
    );
    assert_eq!(stages, [Stage::Queued]);
}
