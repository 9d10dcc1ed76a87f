//! Real remote caches for the tests, on loopback ports: BuildGrid (the Remote Execution
//! API over gRPC, from PyPI, pinned in `tools/buildgrid/requirements.txt`), started per
//! test with a cache-only configuration and killed with its children when dropped. Its
//! [`Bgd`] starts, asks and kills any `bgd server` (engine_support.rs's engine with
//! execution is one too).

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;

use crate::support::{free_port, kill_group, repo_root, signal_group};

/// The instance every test server serves.
pub(crate) const INSTANCE: &str = "main";

/// How long a server may take to answer its first `GetCapabilities` (it takes ~15 s alone
/// on 2 cores; tests start several at once).
const READY_WITHIN: Duration = Duration::from_secs(240);

/// A BuildGrid server on 127.0.0.1: CAS on disk (`cas_dir`), an in-memory LRU action cache
/// that accepts updates, ByteStream and Capabilities; no SQL, no execution.
pub(crate) struct BuildGrid {
    /// `grpc://127.0.0.1:PORT/main`.
    pub(crate) url: String,
    /// Its port.
    pub(crate) port: u16,
    /// Where its blobs lie on disk: `<cas_dir>/<sha256[..2]>/<sha256[2..]>`.
    pub(crate) cas_dir: PathBuf,
    /// How long it took to answer its first `GetCapabilities`.
    pub(crate) ready_after: Duration,
    server: Bgd,
}

/// The REAPI digest of `bytes`: their SHA-256 and size.
pub(crate) fn digest(bytes: &[u8]) -> reapi::Digest {
    use sha2::Digest as _;
    reapi::Digest {
        hash: proofgraph_graph::fingerprint::hex(&sha2::Sha256::digest(bytes)),
        size_bytes: i64::try_from(bytes.len()).expect("a small blob"),
    }
}

/// A runtime like the invocation's (`Context::runtime`): two workers, with timers and I/O.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// BuildGrid's `bgd`, from the venv scripts/test.sh installs. Missing, it fails the test
/// with the commands that install it; it is never skipped.
pub(crate) fn bgd() -> PathBuf {
    let venv = repo_root().join("tools/buildgrid/.venv");
    let bgd = venv.join("bin/bgd");
    assert!(
        bgd.exists(),
        "the remote-cache tests need BuildGrid at {}; install it with `./scripts/test.sh`, or: \
         python3 -m venv tools/buildgrid/.venv && tools/buildgrid/.venv/bin/pip install -r tools/buildgrid/requirements.txt \
         (Python 3.11 or later)",
        bgd.display()
    );
    bgd
}

/// The configuration: on `port`, blobs under `store`; with `secret` (a file) every call
/// needs an HS256 JWT signed with it; with `tls` (key and certificate files) the port
/// speaks TLS only.
fn config(port: u16, store: &Path, secret: Option<&Path>, tls: Option<(&Path, &Path)>) -> String {
    let channel = match tls {
        None => "    insecure-mode: true".to_owned(),
        Some((key, cert)) => format!(
            "    insecure-mode: false\n    credentials:\n      tls-server-key: {}\n      tls-server-cert: {}",
            key.display(),
            cert.display()
        ),
    };
    let authorization = match secret {
        None => "  method: none".to_owned(),
        Some(secret) => format!(
            "  method: jwt\n  algorithm: hs256\n  secret: {}",
            secret.display()
        ),
    };
    format!(
        r#"description: proofgraph's test remote cache (cache only, no SQL).
server:
  - !channel
    address: "127.0.0.1:{port}"
{channel}
# gRPC's default SO_REUSEPORT would let two servers share a port: each binds its own.
grpc-server-options:
  grpc.so_reuseport: 0
authorization:
{authorization}
storages:
  - !disk-storage &cas
    path: {store}
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 4096
    allow-updates: true
    cache-failed-actions: true
instances:
  - name: {INSTANCE}
    services:
      - !action-cache
        cache: *ac
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
monitoring:
  enabled: false
"#,
        store = store.display()
    )
}

impl BuildGrid {
    /// Starts a server and waits until it answers `GetCapabilities`.
    pub(crate) fn start() -> Self {
        Self::start_with(None, false)
    }

    /// Starts a server that speaks TLS only, with a certificate for 127.0.0.1 from a CA of
    /// its own that no system trusts; `url` is `grpcs://127.0.0.1:PORT/main`.
    pub(crate) fn start_tls() -> Self {
        Self::start_with(None, true)
    }

    /// The certificate of the CA that issued a TLS server's certificate.
    pub(crate) fn ca_file(&self) -> PathBuf {
        self.server.dir.path().join("ca.crt")
    }

    /// Starts a server that refuses every call without the `authorization` metadata
    /// `token` ("Bearer <an HS256 JWT>"), which it returns too.
    pub(crate) fn start_requiring_token() -> (Self, String) {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("randomness");
        let secret = proofgraph::store::sha256_hex(&secret);
        let token = format!("Bearer {}", jwt_hs256(&secret));
        (
            Self::start_with(Some((secret, token.clone())), false),
            token,
        )
    }

    fn start_with(auth: Option<(String, String)>, tls: bool) -> Self {
        let server = Bgd::start(
            "pg-buildgrid-",
            |dir, port, store| {
                let secret = auth.as_ref().map(|(secret, _)| {
                    let path = dir.join("jwt.secret");
                    fs_err::write(&path, secret).expect("write the secret");
                    path
                });
                let cert = tls.then(|| certificate(dir));
                let files = cert
                    .as_ref()
                    .map(|(key, cert, _)| (key.as_path(), cert.as_path()));
                let asking = Asking {
                    token: auth.as_ref().map(|(_, token)| token.clone()),
                    trusted: cert.as_ref().map(|(_, _, pem)| pem.clone()),
                };
                (config(port, store, secret.as_deref(), files), asking)
            },
            |_| Ok(()),
        );
        BuildGrid {
            url: format!(
                "{}://127.0.0.1:{}/{INSTANCE}",
                if tls { "grpcs" } else { "grpc" },
                server.port
            ),
            port: server.port,
            cas_dir: server.cas_dir(),
            ready_after: server.ready_after,
            server,
        }
    }

    /// The server's process id (its process group's too), while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.server.child.as_ref().map(Child::id)
    }

    /// The path of the blob `sha256` (hex) on the server's disk.
    pub(crate) fn blob_path(&self, sha256: &str) -> PathBuf {
        self.server.blob_path(sha256)
    }

    /// What the server has logged so far.
    pub(crate) fn log(&self) -> String {
        self.server.log()
    }

    /// Stops the server as a service manager would: SIGTERM, then SIGKILL if it has not
    /// exited within 10 s.
    pub(crate) fn stop(&mut self) {
        if let Some(child) = &self.server.child {
            signal_group(child, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.server.exited() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
    }

    /// Kills the server and everything it started (SIGKILL), at once.
    pub(crate) fn kill(&mut self) {
        self.server.kill();
    }
}

/// How to ask a server whether it is ready: with the `authorization` metadata `token`,
/// over TLS trusting the CA `trusted` (PEM), when given.
#[derive(Default)]
pub(crate) struct Asking {
    pub(crate) token: Option<String>,
    pub(crate) trusted: Option<String>,
}

/// A `bgd server start` process on 127.0.0.1, in a directory of its own that holds its
/// configuration, storage (`store/`) and log, in a process group of its own: killed with
/// everything it started when dropped. The cache-only [`BuildGrid`] and the engine with
/// execution (`engine_support::Engine`) are each one, configured apart.
pub(crate) struct Bgd {
    /// Its port.
    pub(crate) port: u16,
    /// How long it took to answer its first `GetCapabilities` as it had to.
    pub(crate) ready_after: Duration,
    log: PathBuf,
    child: Option<Child>,
    /// Its configuration, storage and log (removed when dropped).
    dir: tempfile::TempDir,
}

impl Bgd {
    /// Starts `bgd server start` in a new directory named `prefix…`, configured by
    /// `configure(dir, port, store)` (which may write files in `dir`; blobs go under
    /// `store`), and waits until `GetCapabilities`, asked as `configure` says, answers and
    /// `ready` accepts the answer. A port free a moment ago can be taken before the server
    /// binds it: then it tries another. Panics with the server's log when it never gets
    /// ready.
    pub(crate) fn start(
        prefix: &str,
        configure: impl Fn(&Path, u16, &Path) -> (String, Asking),
        ready: impl Fn(&reapi::ServerCapabilities) -> Result<(), String>,
    ) -> Self {
        let bgd = bgd();
        let started = Instant::now();
        for attempt in 1.. {
            let dir = tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("create the server's directory");
            let port = free_port();
            let (text, asking) = configure(dir.path(), port, &dir.path().join("store"));
            let config_path = dir.path().join("buildgrid.yml");
            fs_err::write(&config_path, text).expect("write the configuration");
            let log = dir.path().join("server.log");
            let out = fs_err::File::create(&log).expect("create the server's log");
            let err = out.try_clone().expect("share the log");
            let child = Command::new(&bgd)
                .args(["server", "start"])
                .arg(&config_path)
                .current_dir(dir.path())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", dir.path())
                .env("PYTHONUNBUFFERED", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::from(out.into_parts().0))
                .stderr(Stdio::from(err.into_parts().0))
                // Its own process group: dropping it kills it and everything it started.
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("start `{}`: {e}", bgd.display()));
            let mut server = Bgd {
                port,
                ready_after: Duration::ZERO,
                log,
                child: Some(child),
                dir,
            };
            match server.wait_ready(started, &asking, &ready) {
                Ok(()) => {
                    server.ready_after = started.elapsed();
                    return server;
                }
                Err(_) if attempt < 3 && server.log().contains("Failed to bind") => drop(server),
                Err(why) => panic!(
                    "BuildGrid did not answer GetCapabilities on 127.0.0.1:{port} ({why}, after {:?}); its log:\n{}",
                    started.elapsed(),
                    server.log()
                ),
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// Polls `GetCapabilities` until `ready` accepts its answer; `Err` when the server
    /// exited or the deadline passed.
    fn wait_ready(
        &mut self,
        started: Instant,
        asking: &Asking,
        ready: &impl Fn(&reapi::ServerCapabilities) -> Result<(), String>,
    ) -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let scheme = if asking.trusted.is_some() {
            "https"
        } else {
            "http"
        };
        let mut endpoint =
            tonic::transport::Endpoint::from_shared(format!("{scheme}://127.0.0.1:{}", self.port))
                .expect("an endpoint")
                .connect_timeout(Duration::from_secs(1));
        if let Some(pem) = &asking.trusted {
            let _ = rustls::crypto::ring::default_provider().install_default();
            endpoint = endpoint
                .tls_config(
                    tonic::transport::ClientTlsConfig::new()
                        .ca_certificate(tonic::transport::Certificate::from_pem(pem))
                        .domain_name("127.0.0.1"),
                )
                .expect("TLS settings");
        }
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait().expect("poll the server")
            {
                return Err(format!("it exited with {status}"));
            }
            let answer: Result<(), String> = runtime.block_on(async {
                let channel = endpoint.connect().await.map_err(|e| {
                    let mut text = e.to_string();
                    let mut source = std::error::Error::source(&e);
                    while let Some(cause) = source {
                        text = format!("{text}: {cause}");
                        source = cause.source();
                    }
                    text
                })?;
                let mut client = reapi::capabilities_client::CapabilitiesClient::new(channel);
                let mut request = tonic::Request::new(reapi::GetCapabilitiesRequest {
                    instance_name: INSTANCE.to_owned(),
                });
                if let Some(token) = &asking.token {
                    request
                        .metadata_mut()
                        .insert("authorization", token.parse().expect("a metadata value"));
                }
                let call = client.get_capabilities(request);
                match tokio::time::timeout(Duration::from_secs(10), call).await {
                    Ok(Ok(answer)) => ready(answer.get_ref()),
                    Ok(Err(status)) => Err(format!("{:?}: {}", status.code(), status.message())),
                    Err(_) => Err("no answer in 10 s".to_owned()),
                }
            });
            let Err(last) = answer else {
                return Ok(());
            };
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "no answer within {READY_WITHIN:?}; the last try: {last}"
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Where its blobs lie on disk: `<cas_dir>/<sha256[..2]>/<sha256[2..]>`.
    pub(crate) fn cas_dir(&self) -> PathBuf {
        self.dir.path().join("store/cas/objects")
    }

    /// The path of the blob `sha256` (hex) on the server's disk.
    pub(crate) fn blob_path(&self, sha256: &str) -> PathBuf {
        self.cas_dir().join(&sha256[..2]).join(&sha256[2..])
    }

    /// What the server has logged so far.
    pub(crate) fn log(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the server and everything it started (SIGKILL), at once.
    pub(crate) fn kill(&mut self) {
        kill_group(&mut self.child);
    }

    fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| matches!(c.try_wait(), Ok(Some(_)) | Err(_)))
    }
}

impl Drop for Bgd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A certificate for 127.0.0.1 made with openssl in `dir`, issued by a CA of its own that
/// no system trusts: the key file, the certificate file and the CA's PEM.
pub(crate) fn certificate(dir: &Path) -> (PathBuf, PathBuf, String) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| {
                panic!("run openssl ({e}); install it with `apt-get install openssl`")
            });
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-days",
                "2",
                "-subj",
                "/CN=proofgraph test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &[
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
            ],
        ]
        .concat(),
    );
    fs_err::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write the extensions");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
    let ca = fs_err::read_to_string(dir.join("ca.crt")).expect("the CA's certificate");
    (dir.join("server.key"), dir.join("server.crt"), ca)
}

/// A JSON Web Token signed with HMAC-SHA256 under `secret`, valid for a day.
fn jwt_hs256(secret: &str) -> String {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 86_400;
    let signed = format!(
        "{}.{}",
        b64(br#"{"alg":"HS256","typ":"JWT"}"#),
        b64(format!(r#"{{"sub":"proofgraph-tests","exp":{exp}}}"#).as_bytes())
    );
    format!(
        "{signed}.{}",
        b64(&hmac_sha256(secret.as_bytes(), signed.as_bytes()))
    )
}

/// HMAC-SHA256 (RFC 2104).
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    use sha2::{Digest as _, Sha256};
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

#[test]
fn hmac_sha256_matches_rfc_4231() {
    let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
    assert_eq!(
        proofgraph_graph::fingerprint::hex(&mac),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}
