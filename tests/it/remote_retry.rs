//! A transient failure of the remote cache is sent again, not fatal for the run (issue 26):
//! a real nginx behind `limit_req` answers 503 to a burst of requests, and a Remote
//! Execution API server fails its next calls with `UNAVAILABLE` or `RESOURCE_EXHAUSTED`
//! (tests/it/hostile_support.rs); every receipt is still pushed and pulled, and the remote
//! is never said to be unavailable. A server that never recovers is given up on within the
//! deadline, once, with every provider run; a refusal is never sent twice.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use prost::Message as _;

use crate::hostile_support::{Fault, HostileReapi, State};
use crate::remote_http::{CI, Nginx, ci_key, clone, files, install, origin, prove, runs, summary};
use crate::support::{Run, Sandbox, assert_emits};

/// The deadlines of the tests that give up: a connection in 1 s, a request in 3 s.
const DEADLINES: &str = "  connectTimeoutMs: 1000\n  timeoutMs: 3000\n";

/// How many times `code` is in the run's status.
fn count(run: &Run, code: &str) -> usize {
    run.status_codes().iter().filter(|c| *c == code).count()
}

fn shown(run: &Run) -> String {
    format!("exit {:?}\n{}\n{}", run.code, run.stdout, run.stderr)
}

/// The lines of nginx's access log that answered `status`.
fn answered(log: &str, status: u16) -> usize {
    let needle = format!("\" {status} ");
    log.lines().filter(|l| l.contains(&needle)).count()
}

/// A CI clone of an origin whose remote is `url` (with `cache` lines more), its key
/// installed, and the CI policy: what it proves it pushes.
fn ci_of(sb: &Sandbox, url: &str, cache: &str) -> std::path::PathBuf {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {url}\n{cache}"), &trusted);
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    ci
}

#[test]
fn remote_http_a_rate_limited_nginx_answers_503s_and_every_receipt_still_travels() {
    let sb = Sandbox::new();
    // One request each 10 ms, no burst: the lookups and uploads a prove sends together
    // (a few dozen at once) meet real 503s — about half of its requests are refused.
    let nginx = Nginx::start_rate_limited(&sb, "100r/s");
    let ci = ci_of(&sb, &nginx.url, "");
    let run = prove(&sb, &ci, &[CI], &[]);
    let what = format!("{}\n{}", shown(&run), nginx.access_log());
    assert_eq!(run.code, Some(0), "{what}");
    // Before retries, the first 503 took the remote out: a warning, and nothing pushed.
    assert_eq!(count(&run, "remote_cache_unavailable"), 0, "{what}");
    assert_eq!(count(&run, "remote_upload_failed"), 0, "{what}");
    assert_eq!(summary(&run, "pushed"), 3, "{what}");
    assert_eq!(summary(&run, "push_failed"), 0, "{what}");
    assert_eq!(runs(&sb), 3);
    // Every entry pushed is in nginx's directory, and every blob it names.
    let entries = files(&nginx.ac());
    assert_eq!(entries.len(), 3, "{entries:?}");
    let blobs: HashSet<String> = files(&nginx.cas())
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    for entry in &entries {
        let bytes = fs_err::read(entry).expect("an entry");
        let result = reapi::ActionResult::decode(bytes.as_slice()).expect("an ActionResult");
        assert!(result.output_files.len() >= 3, "{result:?}");
        for file in &result.output_files {
            let hash = &file.digest.as_ref().expect("a digest").hash;
            assert!(
                blobs.contains(hash),
                "{} names {hash}, not in nginx",
                file.path
            );
        }
    }
    // A laptop pulls everything, through the same limit.
    let laptop = clone(&sb, "laptop");
    let run = prove(&sb, &laptop, &[], &[]);
    let log = nginx.access_log();
    let what = format!("{}\n{log}", shown(&run));
    assert_eq!(run.code, Some(0), "{what}");
    assert_eq!(count(&run, "remote_cache_unavailable"), 0, "{what}");
    assert_eq!(summary(&run, "pulled"), 3, "{what}");
    assert_eq!(runs(&sb), 3, "nothing ran again: {what}");
    // The test met real 503s, and the requests refused were sent again until answered.
    assert!(answered(&log, 503) > 0, "nginx refused nothing: {log}");
}

#[test]
fn remote_reapi_unavailable_then_resource_exhausted_then_honest_loses_nothing() {
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    let ci = ci_of(&sb, &server.url, "");
    // Five failures, one fewer than a request's attempts: whichever calls meet them,
    // each is answered in the end.
    server.state.set(Fault::Failing {
        code: tonic::Code::Unavailable,
        calls: 5,
    });
    let run = prove(&sb, &ci, &[CI], &[]);
    let what = shown(&run);
    assert_eq!(run.code, Some(0), "{what}");
    assert_eq!(server.state.failed().len(), 5, "{what}");
    assert_eq!(count(&run, "remote_cache_unavailable"), 0, "{what}");
    assert_eq!(summary(&run, "pushed"), 3, "{what}");
    assert_eq!(runs(&sb), 3);

    server.state.set(Fault::Failing {
        code: tonic::Code::ResourceExhausted,
        calls: 5,
    });
    let laptop = clone(&sb, "laptop");
    let run = prove(&sb, &laptop, &[], &[]);
    let what = shown(&run);
    assert_eq!(run.code, Some(0), "{what}");
    assert_eq!(server.state.failed().len(), 5, "{what}");
    assert_eq!(count(&run, "remote_cache_unavailable"), 0, "{what}");
    assert_eq!(summary(&run, "pulled"), 3, "{what}");
    assert_eq!(runs(&sb), 3, "nothing ran again: {what}");
}

/// How many times the same call was failed, at most.
fn most_sent(failed: &[String]) -> usize {
    let mut times = std::collections::HashMap::new();
    for call in failed {
        *times.entry(call.as_str()).or_insert(0) += 1;
    }
    times.values().copied().max().unwrap_or(0)
}

/// A laptop's prove against `state`'s server, which fails every call with `code` from now.
fn laptop_against(sb: &Sandbox, state: &State, name: &str, code: tonic::Code) -> (Run, Duration) {
    state.set(Fault::Failing {
        code,
        calls: usize::MAX,
    });
    let laptop = clone(sb, name);
    let started = Instant::now();
    let run = prove(sb, &laptop, &[], &[]);
    (run, started.elapsed())
}

#[test]
fn remote_a_cache_that_never_recovers_is_given_up_within_the_deadline_and_everything_runs() {
    for http in [false, true] {
        let sb = Sandbox::new();
        let (url, state) = crate::hostile_support::start_either(http);
        let ci = ci_of(&sb, &url, DEADLINES);
        let run = prove(&sb, &ci, &[CI], &[]);
        assert_eq!(summary(&run, "pushed"), 3, "{}", shown(&run));
        let (run, took) = laptop_against(&sb, &state, "laptop", tonic::Code::Unavailable);
        let what = format!("http {http}: {took:?}\n{}", shown(&run));
        assert_eq!(run.code, Some(0), "{what}");
        assert_eq!(summary(&run, "pulled"), 0, "{what}");
        assert_eq!(runs(&sb), 6, "every provider ran: {what}");
        assert_eq!(count(&run, "remote_cache_unavailable"), 1, "{what}");
        assert!(run.stdout.contains("gave up after 6 attempts"), "{what}");
        let failed = state.failed();
        assert!(!failed.is_empty(), "{what}");
        assert_eq!(most_sent(&failed), 6, "{failed:?}");
        // The operation's deadline is 4 s; the retries of a call wait 2.5 s at most.
        assert!(took < Duration::from_secs(30), "{what}");
    }
}

#[test]
fn remote_reapi_a_permission_denied_is_never_sent_twice() {
    let sb = Sandbox::new();
    let server = HostileReapi::start();
    let ci = ci_of(&sb, &server.url, DEADLINES);
    let run = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(summary(&run, "pushed"), 3, "{}", shown(&run));
    let (run, _) = laptop_against(&sb, &server.state, "laptop", tonic::Code::PermissionDenied);
    let what = shown(&run);
    assert_eq!(run.code, Some(0), "{what}");
    assert_emits!(run.status_codes(), "remote_cache_refused");
    assert_eq!(count(&run, "remote_cache_unavailable"), 0, "{what}");
    assert_eq!(runs(&sb), 6, "every provider ran: {what}");
    let failed = server.state.failed();
    assert!(!failed.is_empty(), "{what}");
    assert_eq!(most_sent(&failed), 1, "{failed:?}");
}

#[test]
fn remote_http_a_401_from_nginx_is_never_sent_twice() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, Some("tok-right"));
    let ci = ci_of(
        &sb,
        &nginx.url,
        "  headersFromEnv: {Authorization: CACHE_AUTH}\n",
    );
    let run = prove(&sb, &ci, &[CI, ("CACHE_AUTH", "Bearer tok-right")], &[]);
    assert_eq!(summary(&run, "pushed"), 3, "{}", shown(&run));
    let before = nginx.access_log().lines().count();
    let laptop = clone(&sb, "laptop");
    let run = prove(&sb, &laptop, &[("CACHE_AUTH", "Bearer tok-wrong")], &[]);
    let log = nginx.access_log();
    let what = format!("{}\n{log}", shown(&run));
    assert_eq!(run.code, Some(0), "{what}");
    assert_emits!(run.status_codes(), "remote_cache_refused");
    assert_eq!(runs(&sb), 6, "every provider ran: {what}");
    let refused: Vec<&str> = log.lines().skip(before).collect();
    assert!(!refused.is_empty(), "{what}");
    assert_eq!(answered(&log, 401), refused.len(), "{what}");
    // Each request once: the request line (`"GET /cache/ac/<key> HTTP/1.1"`) never twice.
    let mut seen = HashSet::new();
    for line in &refused {
        let request = line.split('"').nth(1).expect("a request line");
        assert!(seen.insert(request), "{request} was sent again: {log}");
    }
}
