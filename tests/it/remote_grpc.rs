//! The Remote Execution API backend of the remote cache, against a real BuildGrid on a
//! loopback port (tests/it/remote_support.rs) and against ports that refuse, never answer,
//! or cut a stream mid-way; then `prove` with BuildGrid as the remote, in the scenarios
//! tests/it/remote_http.rs runs against nginx.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use proofgraph::attest::keys::KeyId;
use proofgraph::store::remote::encoding::{self, Encoded, Outputs};
use proofgraph::store::remote::{
    BlobDigest, Capabilities, Deadline, RemoteCache, RemoteError, Settings, Uploaded, backend,
};
use proofgraph_graph::fingerprint::Fingerprint;
use proofgraph_graph::{CapabilityName, ProviderId};

use crate::remote_http::{self, Served};
use crate::remote_support::{BuildGrid, INSTANCE, runtime};
use crate::support::{Sandbox, assert_emits, assert_port_free, free_port};

/// The end of a backend call's overall deadline, for a call made without the cache
/// (which gives each operation its own).
fn soon() -> Deadline {
    Deadline::after(Duration::from_secs(30))
}

/// BuildGrid 0.4.4's batch limit (`MAX_REQUEST_SIZE`, 4 MiB - 1 KiB).
const BUILDGRID_BATCH: u64 = 4 * 1024 * 1024 - 1024;

/// `url` with a 1 s connect timeout and a 10 s request deadline.
fn settings(url: &str) -> Settings {
    let mut settings = Settings::new(url);
    settings.connect_timeout = Duration::from_secs(1);
    settings.timeout = Duration::from_secs(10);
    settings
}

fn open(url: &str) -> RemoteCache {
    RemoteCache::open(&settings(url)).expect("a gRPC cache opens without contacting it")
}

/// The key of receipt `receipt` for `unit`/`test` at a fingerprint of `seed`, signed by a
/// key whose id is all `ee`.
fn key(seed: u8, receipt: &str) -> Encoded {
    encoding::action(
        &Fingerprint::from_hex(&format!("{seed:02x}").repeat(32)).expect("hex"),
        &ProviderId::parse(receipt).expect("a provider id"),
        &CapabilityName::parse("test").expect("a capability"),
        &KeyId::parse(&format!("sha256:{}", "ee".repeat(32))).expect("a key id"),
    )
}

/// `len` bytes no other call of a different `seed` gives.
fn bytes(seed: u8, len: usize) -> Vec<u8> {
    let mut state = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

/// An entry's outputs: the envelope, the input listing and `artifacts`.
fn entry_of(artifacts: &[Vec<u8>]) -> (Outputs, Vec<Vec<u8>>) {
    let envelope =
        br#"{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}"#
            .to_vec();
    let inputs = b"src/lib.rs 0123\n".to_vec();
    let outputs = Outputs {
        envelope: BlobDigest::of(&envelope),
        inputs: Some(BlobDigest::of(&inputs)),
        artifacts: artifacts.iter().map(|a| BlobDigest::of(a)).collect(),
    };
    let mut blobs = vec![envelope, inputs];
    blobs.extend(artifacts.iter().cloned());
    (outputs, blobs)
}

#[track_caller]
fn assert_unavailable(result: Result<impl std::fmt::Debug, RemoteError>, what: &str) -> String {
    match result {
        Err(e @ RemoteError::Unavailable { .. }) => e.to_string(),
        other => panic!("{what}: expected Unavailable, got {other:?}"),
    }
}

#[test]
fn buildgrid_keeps_an_entry_and_its_blobs_through_batches_and_bytestream() {
    let server = BuildGrid::start();
    let rt = runtime();
    let cache = open(&server.url);
    let capabilities = rt.block_on(cache.capabilities()).expect("capabilities");
    assert_eq!(
        capabilities,
        Capabilities {
            max_batch_bytes: Some(BUILDGRID_BATCH),
            updates_action_cache: true,
        },
        "SHA-256 offered (else a refusal), BuildGrid's batch limit, updates allowed"
    );

    // Blobs on both sides of the limit: BuildGrid refuses a batch whose blobs add up to more
    // than its limit, so the ones at and over it can only travel by ByteStream.
    let limit = usize::try_from(BUILDGRID_BATCH).expect("fits");
    let artifacts = vec![
        bytes(1, 100),
        bytes(2, 1 << 20),
        bytes(3, limit - 8 * 1024),
        bytes(4, limit),
        bytes(5, 6 << 20),
        Vec::new(),
    ];
    let (outputs, blobs) = entry_of(&artifacts);
    let encoded = key(0xab, "unit");
    let uploaded = rt
        .block_on(cache.put(&encoded, &outputs, blobs.clone()))
        .expect("put");
    // Every output, the Action and the Command; not the empty blob (the empty artifact and
    // input root), which BuildGrid, as the Remote Execution API allows, never reports
    // missing.
    let expected_bytes: u64 = blobs.iter().map(|b| b.len() as u64).sum::<u64>()
        + (encoded.action.len() + encoded.command.len()) as u64;
    assert_eq!(
        uploaded,
        Uploaded {
            blobs: blobs.len() + 2 - 1,
            bytes: expected_bytes,
        }
    );

    // The server holds each blob on its disk, byte for byte (checked without our reader).
    for blob in blobs.iter().chain([&encoded.action, &encoded.command]) {
        if blob.is_empty() {
            continue;
        }
        let digest = BlobDigest::of(blob);
        let path = server.blob_path(&digest.sha256.to_hex());
        let stored = fs_err::read(&path).expect("the blob is on the server's disk");
        assert!(stored == *blob, "{digest} stored as {} bytes", stored.len());
    }

    // Nothing is missing now; a second put sends nothing.
    let direct = backend(&settings(&server.url)).expect("a backend");
    let all: Vec<BlobDigest> = blobs.iter().map(|b| BlobDigest::of(b)).collect();
    assert_eq!(
        rt.block_on(direct.find_missing(all.clone(), soon())),
        Ok(Vec::new())
    );
    let unknown = BlobDigest::of(b"never uploaded");
    let mut asked = all.clone();
    asked.push(unknown);
    assert_eq!(
        rt.block_on(direct.find_missing(asked, soon())),
        Ok(vec![unknown])
    );
    assert_eq!(
        rt.block_on(cache.put(&encoded, &outputs, blobs.clone())),
        Ok(Uploaded::default())
    );

    // Another client (another machine) reads the entry and every blob back, without asking
    // for capabilities first: the backend asks when it needs the batch limit.
    let reader = open(&server.url);
    let entry = rt.block_on(reader.entry(encoded.key)).expect("entry");
    assert_eq!(entry, Some(outputs.clone()));
    for blob in &blobs {
        let got = rt
            .block_on(reader.blob(BlobDigest::of(blob), u64::MAX))
            .expect("a blob reads back");
        assert!(
            got.as_deref() == Some(blob.as_slice()),
            "{} bytes",
            blob.len()
        );
    }

    // What the server does not have is None, by batch and by ByteStream alike.
    assert_eq!(rt.block_on(reader.entry(key(0xcd, "unit").key)), Ok(None));
    assert_eq!(rt.block_on(reader.blob(unknown, u64::MAX)), Ok(None));
    let big_unknown = BlobDigest {
        size: 8 << 20,
        ..unknown
    };
    assert_eq!(rt.block_on(reader.blob(big_unknown, u64::MAX)), Ok(None));
    assert_eq!(reader.down(), None, "nothing failed");

    // One channel serves every thread of the invocation's runtime at once: while one
    // thread is blocked in it (the run's loop, waiting for its next event), others (the
    // upload thread, a pull) call through the same cache, and their calls complete.
    let handle = rt.handle().clone();
    let (done, waited) = tokio::sync::oneshot::channel::<()>();
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| handle.block_on(waited));
        let callers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    (
                        handle.block_on(reader.entry(encoded.key)),
                        handle.block_on(reader.blob(outputs.envelope, u64::MAX)),
                    )
                })
            })
            .collect();
        for caller in callers {
            let (entry, blob) = caller.join().expect("a caller ends");
            assert_eq!(entry, Ok(Some(outputs.clone())));
            assert_eq!(blob, Ok(Some(blobs[0].clone())));
        }
        done.send(()).expect("the blocked thread still waits");
        waiting
            .join()
            .expect("the blocked thread ends")
            .expect("it was woken");
    });

    // An instance the server does not serve is refused, and is not taken for an outage.
    let other = open(&server.url.replace(&format!("/{INSTANCE}"), "/other"));
    match rt.block_on(other.capabilities()) {
        Err(RemoteError::Unsupported { reason, .. }) => {
            assert!(reason.contains("GetCapabilities"), "{reason}");
        }
        answer => panic!("an unknown instance: {answer:?}"),
    }
    assert_eq!(
        other.down(),
        None,
        "BuildGrid was ready after {:?}",
        server.ready_after
    );
}

#[test]
fn a_blob_corrupted_on_buildgrid_s_disk_is_refused() {
    let server = BuildGrid::start();
    let rt = runtime();
    let cache = open(&server.url);
    let small = [bytes(6, 4096), bytes(7, 4096)];
    let large = [bytes(8, 5 << 20), bytes(12, 5 << 20)];
    let (outputs, blobs) = entry_of(&[
        small[0].clone(),
        small[1].clone(),
        large[0].clone(),
        large[1].clone(),
    ]);
    let encoded = key(0x11, "unit");
    rt.block_on(cache.put(&encoded, &outputs, blobs.clone()))
        .expect("put");

    // A small blob (read by batch) and a large one (read by ByteStream) each with one byte
    // changed, and each truncated: all refused, none of their bytes returned. (BuildGrid
    // itself notices a truncated blob on a ByteStream read and answers DATA_LOSS; the
    // others it serves as they are, and our digest check refuses them.)
    for (blob, what) in [
        (&small[0], "edited"),
        (&small[1], "truncated"),
        (&large[0], "edited"),
        (&large[1], "truncated"),
    ] {
        let path = server.blob_path(&BlobDigest::of(blob).sha256.to_hex());
        let damaged = if what == "edited" {
            let mut edited = blob.clone();
            edited[100] ^= 0xff;
            edited
        } else {
            blob[..blob.len() / 2].to_vec()
        };
        fs_err::write(&path, damaged).expect("damage the blob on the server's disk");
    }
    for (blob, what) in [
        (&small[0], "small edited"),
        (&small[1], "small truncated"),
        (&large[0], "large edited"),
        (&large[1], "large truncated"),
    ] {
        let digest = BlobDigest::of(blob);
        match rt.block_on(cache.blob(digest, u64::MAX)) {
            Err(RemoteError::Corrupt { reason, .. }) => {
                assert!(reason.contains(&digest.sha256.to_hex()), "{reason}");
            }
            other => panic!(
                "the {what} blob: expected Corrupt, got {:?}",
                other.map(|b| b.map(|b| b.len()))
            ),
        }
    }
    // A corrupt blob is the blob's fault, not the remote's: the rest still reads.
    assert_eq!(cache.down(), None);
    let envelope = rt
        .block_on(cache.blob(outputs.envelope, u64::MAX))
        .expect("the envelope is intact");
    assert_eq!(envelope.as_deref(), Some(blobs[0].as_slice()));

    // A blob deleted from the server's disk: missing, and BuildGrid drops the entry that
    // names it.
    fs_err::remove_file(server.blob_path(&outputs.envelope.sha256.to_hex()))
        .expect("delete the envelope on the server's disk");
    assert_eq!(
        rt.block_on(cache.blob(outputs.envelope, u64::MAX)),
        Ok(None)
    );
    assert_eq!(rt.block_on(cache.entry(encoded.key)), Ok(None));

    // Dropped, the server is gone with its port.
    let (pid, port) = (server.pid().expect("running"), server.port);
    drop(server);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "BuildGrid ({pid}) survives its harness"
    );
    assert_port_free(port);
}

#[test]
fn a_stopped_buildgrid_is_unavailable_within_the_connect_timeout() {
    let mut server = BuildGrid::start();
    let rt = runtime();
    let cache = open(&server.url);
    rt.block_on(cache.capabilities()).expect("capabilities");
    let (outputs, blobs) = entry_of(&[bytes(9, 10)]);
    let encoded = key(0x22, "unit");
    rt.block_on(cache.put(&encoded, &outputs, blobs))
        .expect("put");

    server.stop();
    let started = Instant::now();
    let reason = assert_unavailable(rt.block_on(cache.capabilities()), "capabilities");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}: {reason}");
    assert!(
        matches!(cache.down(), Some(RemoteError::Unavailable { .. })),
        "the cache is down for the rest of the run"
    );
    let started = Instant::now();
    assert_unavailable(rt.block_on(cache.entry(encoded.key)), "entry once down");
    assert!(started.elapsed() < Duration::from_secs(1), "no second wait");

    // A client that never reached it: the same, from its first call.
    let fresh = open(&server.url);
    let started = Instant::now();
    let reason = assert_unavailable(rt.block_on(fresh.entry(encoded.key)), "entry");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}: {reason}");
    assert!(matches!(
        fresh.down(),
        Some(RemoteError::Unavailable { .. })
    ));
    assert!(reason.contains("GetActionResult"), "{reason}");
}

/// What a proxy does to what the server sends back, once it has forwarded `n` bytes.
#[derive(Clone, Copy)]
enum Fault {
    /// Nothing: it forwards everything.
    None,
    /// It cuts the connection: a stream dropped mid-way.
    CutAfter(usize),
    /// It forwards nothing more and keeps the connection open: a stream that stalls.
    StallAfter(usize),
}

/// A TCP proxy to 127.0.0.1:`upstream` that forwards both ways, at most `rate` bytes a
/// second each way when given, and applies `down` to what the server sends back and `up`
/// to what the client sends.
fn proxy(upstream: u16, down: Fault, up: Fault, rate: Option<u64>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
    let port = listener.local_addr().expect("its port").port();
    // Copies `from` into `to`, paced to `rate`, until the fault's byte count.
    fn pump(mut from: TcpStream, mut to: TcpStream, fault: Fault, rate: Option<u64>) {
        let limit = match fault {
            Fault::None => usize::MAX,
            Fault::CutAfter(n) | Fault::StallAfter(n) => n,
        };
        let started = Instant::now();
        let mut buf = [0u8; 16 * 1024];
        let mut sent = 0usize;
        while sent < limit {
            let Ok(n) = from.read(&mut buf) else { break };
            let n = n.min(limit - sent);
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
            sent += n;
            if let Some(rate) = rate {
                let due = Duration::from_secs_f64(sent as f64 / rate as f64);
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        }
        if let Fault::StallAfter(_) = fault {
            // Hold both ends open; the test ends first.
            std::thread::sleep(Duration::from_secs(600));
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    }
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let (Ok(client_in), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
                return;
            };
            std::thread::spawn(move || pump(client_in, server_out, up, rate));
            std::thread::spawn(move || pump(server, client, down, rate));
        }
    });
    port
}

#[test]
fn a_buildgrid_cut_off_mid_stream_or_killed_is_unavailable() {
    let mut server = BuildGrid::start();
    let rt = runtime();
    let cache = open(&server.url);
    let large = bytes(10, 12 << 20);
    let (outputs, blobs) = entry_of(std::slice::from_ref(&large));
    let encoded = key(0x33, "unit");
    rt.block_on(cache.put(&encoded, &outputs, blobs))
        .expect("put");

    // Through a connection that dies after 2 MiB of a 12 MiB ByteStream read: an outage,
    // not a short blob, and no byte of it returned.
    let proxy = proxy(server.port, Fault::CutAfter(2 << 20), Fault::None, None);
    let cut = open(&format!("grpc://127.0.0.1:{proxy}/{INSTANCE}"));
    let started = Instant::now();
    let reason = assert_unavailable(
        rt.block_on(cut.blob(BlobDigest::of(&large), u64::MAX)),
        "a cut stream",
    );
    assert!(reason.contains("ByteStream.Read"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(cut.down(), Some(RemoteError::Unavailable { .. })));

    // The server itself is fine: the large blob reads whole directly.
    let whole = rt
        .block_on(cache.blob(BlobDigest::of(&large), u64::MAX))
        .expect("read directly");
    assert!(whole.as_deref() == Some(large.as_slice()));

    // SIGKILL: no goodbye, the next call finds nobody.
    server.kill();
    assert_port_free(server.port);
    let started = Instant::now();
    let reason = assert_unavailable(rt.block_on(cache.entry(encoded.key)), "entry after a kill");
    assert!(started.elapsed() < Duration::from_secs(5), "{reason}");
    assert!(matches!(
        cache.down(),
        Some(RemoteError::Unavailable { .. })
    ));
}

#[test]
fn a_refused_port_is_unavailable_at_once_and_names_no_header_value() {
    let port = free_port();
    let rt = runtime();
    let canary = "Bearer pg-canary-7d1e0c";
    let mut with_header = settings(&format!("grpc://127.0.0.1:{port}/{INSTANCE}"));
    with_header.headers = vec![("Authorization".to_owned(), canary.to_owned())];
    let cache = RemoteCache::open(&with_header).expect("opens");
    let started = Instant::now();
    let reason = assert_unavailable(rt.block_on(cache.capabilities()), "capabilities");
    assert!(started.elapsed() < Duration::from_secs(5), "{reason}");
    assert!(reason.contains("GetCapabilities"), "{reason}");
    assert!(matches!(
        cache.down(),
        Some(RemoteError::Unavailable { .. })
    ));
    let entry = assert_unavailable(rt.block_on(cache.entry(key(1, "unit").key)), "entry");

    // Every way in fails the same, without a header's value in any text.
    let fresh = RemoteCache::open(&with_header).expect("opens");
    let (outputs, blobs) = entry_of(&[bytes(11, 10)]);
    let put = assert_unavailable(
        rt.block_on(fresh.put(&key(1, "unit"), &outputs, blobs)),
        "put",
    );
    let direct = backend(&with_header).expect("a backend");
    let read = assert_unavailable(
        rt.block_on(direct.read_blob(BlobDigest::of(b"x"), soon())),
        "read_blob",
    );
    for text in [&reason, &entry, &put, &read] {
        assert!(!text.contains("pg-canary"), "{text}");
    }
}

#[test]
fn a_port_that_never_answers_is_unavailable_after_the_request_deadline() {
    // The kernel completes the handshakes; nobody ever reads or writes.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("its port").port();
    let rt = runtime();
    let mut silent = settings(&format!("grpc://127.0.0.1:{port}"));
    silent.timeout = Duration::from_secs(2);
    let cache = RemoteCache::open(&silent).expect("opens");
    let started = Instant::now();
    let reason = assert_unavailable(rt.block_on(cache.capabilities()), "capabilities");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(10),
        "took {took:?}: {reason}"
    );
    assert!(reason.contains("no answer within"), "{reason}");
    assert!(matches!(
        cache.down(),
        Some(RemoteError::Unavailable { .. })
    ));
    drop(listener);
}

#[test]
fn a_connection_closed_at_once_is_unavailable() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("its port").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    let rt = runtime();
    let cache = open(&format!("grpc://127.0.0.1:{port}/{INSTANCE}"));
    let started = Instant::now();
    let reason = assert_unavailable(rt.block_on(cache.capabilities()), "capabilities");
    assert!(started.elapsed() < Duration::from_secs(5), "{reason}");
}

#[test]
fn a_token_goes_as_metadata_on_every_call_and_is_never_shown() {
    let (server, token) = BuildGrid::start_requiring_token();
    let rt = runtime();
    let with = |value: &str| {
        let mut s = settings(&server.url);
        s.headers = vec![("Authorization".to_owned(), value.to_owned())];
        s
    };

    // With the token: every call is let through, ByteStream ones included.
    let cache = RemoteCache::open(&with(&token)).expect("opens");
    let caps = rt
        .block_on(cache.capabilities())
        .expect("capabilities with the token");
    assert!(caps.updates_action_cache);
    let large = bytes(13, 5 << 20);
    let (outputs, blobs) = entry_of(std::slice::from_ref(&large));
    let encoded = key(0x44, "unit");
    rt.block_on(cache.put(&encoded, &outputs, blobs))
        .expect("put with the token");
    let reader = RemoteCache::open(&with(&token)).expect("opens");
    assert_eq!(
        rt.block_on(reader.entry(encoded.key)),
        Ok(Some(outputs.clone()))
    );
    let got = rt
        .block_on(reader.blob(BlobDigest::of(&large), u64::MAX))
        .expect("read by ByteStream with the token");
    assert!(got.as_deref() == Some(large.as_slice()));

    // Without it, or with one whose signature is wrong: refused, and the remote is left
    // alone for the rest of the run; no text shows the token.
    let signature = token.rsplit('.').next().expect("a signed token");
    let forged = format!(
        "{}{}",
        &token[..token.len() - signature.len()],
        "x".repeat(43)
    );
    for (settings, what) in [
        (settings(&server.url), "no token"),
        (with(&forged), "a forged token"),
    ] {
        let cache = RemoteCache::open(&settings).expect("opens");
        match rt.block_on(cache.capabilities()) {
            Err(e @ RemoteError::Refused { .. }) => {
                let text = e.to_string();
                assert!(text.contains("UNAUTHENTICATED"), "{what}: {text}");
                assert!(!text.contains(signature), "{what}: {text}");
                assert!(!text.contains(&forged[7..]), "{what}: {text}");
            }
            other => panic!("{what}: expected Refused, got {other:?}"),
        }
        assert!(matches!(cache.down(), Some(RemoteError::Refused { .. })));
        match rt.block_on(cache.entry(encoded.key)) {
            Err(RemoteError::Refused { .. }) => {}
            other => panic!("{what}: expected Refused once down, got {other:?}"),
        }
    }
}

#[test]
fn grpcs_speaks_tls_and_trusts_only_the_system_s_roots() {
    // The harness reached this server over TLS, trusting the test CA that issued its
    // certificate; the cache trusts the system's roots only, so it must refuse it.
    let server = BuildGrid::start_tls();
    assert!(server.url.starts_with("grpcs://"), "{}", server.url);
    let rt = runtime();
    let cache = open(&server.url);
    let reason = assert_unavailable(
        rt.block_on(cache.capabilities()),
        "an untrusted certificate",
    );
    assert!(reason.to_lowercase().contains("certificate"), "{reason}");

    // Plain gRPC to the TLS port gets nothing either: no silent downgrade.
    let plain = open(&server.url.replacen("grpcs://", "grpc://", 1));
    assert_unavailable(rt.block_on(plain.capabilities()), "plaintext to a TLS port");
}

#[test]
fn grpcs_to_a_cache_whose_root_the_machine_trusts_carries_receipts() {
    let sb = crate::support::Sandbox::new();
    let server = BuildGrid::start_tls();
    remote_http::tls_with_a_trusted_root(&sb, &server.url, &server.ca_file());
}

#[test]
fn a_bytestream_transfer_outlasts_the_deadline_while_it_moves_and_not_once_it_stalls() {
    let server = BuildGrid::start();
    let rt = runtime();
    let deadline = Duration::from_secs(1);
    let through = |port: u16| {
        let mut s = settings(&format!("grpc://127.0.0.1:{port}/{INSTANCE}"));
        s.timeout = deadline;
        RemoteCache::open(&s).expect("opens")
    };
    // 8 MiB at 3 MiB/s each way: each 1 MiB chunk takes about a third of the deadline, the
    // whole transfer more than twice it.
    let slow = proxy(server.port, Fault::None, Fault::None, Some(3 << 20));
    let large = bytes(14, 8 << 20);
    let (outputs, blobs) = entry_of(std::slice::from_ref(&large));
    let encoded = key(0x66, "unit");
    let started = Instant::now();
    rt.block_on(through(slow).put(&encoded, &outputs, blobs))
        .expect("a slow upload that keeps moving completes");
    let took = started.elapsed();
    assert!(took > 2 * deadline, "the proxy paces it: {took:?}");
    let started = Instant::now();
    let got = rt
        .block_on(through(slow).blob(BlobDigest::of(&large), u64::MAX))
        .expect("a slow download that keeps moving completes");
    assert!(got.as_deref() == Some(large.as_slice()));
    let took = started.elapsed();
    assert!(took > 2 * deadline, "the proxy paces it: {took:?}");

    // The same read stalling after 2 MiB: cut at the deadline, not waited on.
    let stalling = proxy(server.port, Fault::StallAfter(2 << 20), Fault::None, None);
    let cache = through(stalling);
    let started = Instant::now();
    let reason = assert_unavailable(
        rt.block_on(cache.blob(BlobDigest::of(&large), u64::MAX)),
        "a stall",
    );
    let took = started.elapsed();
    assert!(reason.contains("no answer within"), "{reason}");
    assert!(
        took >= deadline && took < 10 * deadline,
        "took {took:?}: {reason}"
    );

    // An upload stalling after 2 MiB of 4: cut too — when a chunk waits the deadline to be
    // taken, or, when the connection's buffers took them all, once what may still be on the
    // way has had its time (the deadline plus a second per MiB).
    let stalling = proxy(server.port, Fault::None, Fault::StallAfter(2 << 20), None);
    let cache = through(stalling);
    let other = bytes(15, 4 << 20);
    let (outputs, blobs) = entry_of(std::slice::from_ref(&other));
    let started = Instant::now();
    let reason = assert_unavailable(
        rt.block_on(cache.put(&key(0x77, "unit"), &outputs, blobs)),
        "a stalled upload",
    );
    let took = started.elapsed();
    assert!(reason.contains("ByteStream.Write"), "{reason}");
    assert!(
        took >= deadline && took < 15 * deadline,
        "took {took:?}: {reason}"
    );
}

// `prove`, `status` and `plan` with BuildGrid as the remote: the scenarios of
// remote_http.rs, and the faults and credentials as gRPC meets them.

impl Served for BuildGrid {
    fn url(&self) -> String {
        self.url.clone()
    }
    fn cas(&self) -> PathBuf {
        self.cas_dir.clone()
    }
    fn stop(&mut self) {
        self.kill();
    }
    fn log(&self) -> String {
        BuildGrid::log(self)
    }
}

#[test]
fn prove_what_ci_pushed_to_buildgrid_a_fresh_clone_reuses_without_running_anything() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    remote_http::ci_pushes_and_a_fresh_clone_reuses(&sb, &mut server);
}

#[test]
fn prove_a_stranger_s_push_to_buildgrid_never_stops_a_laptop_from_reusing_ci_s_entries() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    remote_http::a_stranger_pushes_the_same_fingerprints(&sb, &mut server);
}

#[test]
fn prove_a_receipt_in_buildgrid_signed_by_an_untrusted_key_is_never_reused() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    remote_http::an_untrusted_signer(&sb, &mut server);
}

#[test]
fn prove_a_blob_corrupted_on_buildgrid_s_disk_is_never_used() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    remote_http::a_corrupted_blob(&sb, &mut server);
}

#[test]
fn prove_with_buildgrid_killed_in_the_middle_leaves_the_proof_intact() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    remote_http::killed_mid_prove(&sb, &mut server);
}

#[test]
fn prove_three_shards_share_buildgrid_and_a_fourth_clone_runs_nothing() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    remote_http::three_shards(&sb, &mut server);
}

#[test]
fn prove_with_buildgrid_stopped_before_the_run_warns_and_exits_as_without_a_remote() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    let (secret, trusted) = remote_http::ci_key(&sb);
    remote_http::origin(
        &sb,
        &format!("  remote: {}\n  connectTimeoutMs: 1000\n", server.url),
        &trusted,
    );
    server.stop();
    let ci = remote_http::clone(&sb, "ci");
    remote_http::install(&secret, &ci);
    let started = Instant::now();
    let run = remote_http::prove(&sb, &ci, &[remote_http::CI], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(remote_http::runs(&sb), 3);
    assert_emits!(run.status_codes(), "remote_cache_unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "a stopped remote is given up on: {:?}",
        started.elapsed()
    );
    // A failing provider fails the same with the remote down as with none.
    let failing = remote_http::clone(&sb, "failing");
    fs_err::write(
        failing.join("openspec/changes/share/execution.yaml"),
        "version: 1\nproviders:\n  unit:\n    adapter: command\n    capability: unit\n    command: [sh, -c, \"exit 1\"]\n",
    )
    .expect("a failing provider");
    let with_dead_remote = remote_http::prove(&sb, &failing, &[remote_http::CI], &[]);
    let without = remote_http::prove(
        &sb,
        &failing,
        &[("PROOFGRAPH_CACHE", "local:rw,remote:off")],
        &["--no-cache"],
    );
    assert_eq!(without.code, Some(1), "{}", without.stdout);
    assert_eq!(with_dead_remote.code, without.code);
}

#[test]
fn prove_a_buildgrid_token_goes_as_metadata_and_never_leaves_its_variable() {
    let sb = Sandbox::new();
    let (server, token) = BuildGrid::start_requiring_token();
    let (secret, trusted) = remote_http::ci_key(&sb);
    remote_http::origin(
        &sb,
        &format!(
            "  remote: {}\n  headersFromEnv: {{Authorization: CACHE_AUTH}}\n",
            server.url
        ),
        &trusted,
    );
    let ci = remote_http::clone(&sb, "ci");
    remote_http::install(&secret, &ci);
    let auth = ("CACHE_AUTH", token.as_str());
    let run = remote_http::prove(&sb, &ci, &[remote_http::CI, auth], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, server.log());
    assert_eq!(remote_http::summary(&run, "pushed"), 3, "{}", run.stdout);
    // Without it, and with a forged one: refused, said so, and the run goes on.
    let without = remote_http::prove(&sb, &remote_http::clone(&sb, "laptop"), &[], &[]);
    assert_eq!(without.code, Some(0), "{}", without.stdout);
    assert_emits!(without.status_codes(), "remote_cache_refused");
    let forged = format!("{}x", &token[..token.len() - 1]);
    let wrong = remote_http::prove(
        &sb,
        &remote_http::clone(&sb, "wrong"),
        &[("CACHE_AUTH", forged.as_str())],
        &[],
    );
    assert_eq!(wrong.code, Some(0), "{}", wrong.stdout);
    assert_emits!(wrong.status_codes(), "remote_cache_refused");
    let with = remote_http::prove(&sb, &remote_http::clone(&sb, "with"), &[auth], &[]);
    assert_eq!(remote_http::summary(&with, "pulled"), 3, "{}", with.stdout);
    assert_eq!(
        remote_http::runs(&sb),
        3 + 3 + 3,
        "the two refused clones ran"
    );
    // The token's signature, in no output and no file of the sandbox.
    let signature = token.rsplit('.').next().expect("a signed token");
    let forged_signature = forged.rsplit('.').next().expect("a signed token");
    for run in [&run, &without, &wrong, &with] {
        for canary in [signature, forged_signature] {
            assert!(!run.stdout.contains(canary) && !run.stderr.contains(canary));
        }
    }
    let mut stack = vec![sb.path()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).expect("read").flatten() {
            let path = entry.path();
            if path.ends_with(".git") {
                continue;
            }
            let meta = fs_err::symlink_metadata(&path).expect("stat");
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let bytes = fs_err::read(&path).unwrap_or_default();
                assert!(
                    !bytes
                        .windows(signature.len())
                        .any(|w| w == signature.as_bytes()),
                    "the token is in {}",
                    path.display()
                );
            }
        }
    }
}
