//! A real Remote Execution API engine for the tests, on loopback ports: BuildGrid (pinned in
//! `tools/buildgrid/requirements.txt`) *with execution* — its SQL scheduler on a PostgreSQL
//! of its own (Debian's `postgresql`, an `initdb` instance in a temporary directory, trust
//! authentication, 127.0.0.1 only) — serving CAS on disk, ByteStream, an action cache,
//! Capabilities, Execution and Bots. Workers (`proofgraph worker`) are the test's to start.
//!
//! Everything is started per test and stopped, with its children, when dropped: the
//! database by a fast shutdown (so no shared memory is left behind), the server by killing
//! its process group. Readiness is asked, never slept for: `pg_isready` for the database,
//! `GetCapabilities` for the server.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;

use crate::remote_support::{Asking, Bgd, INSTANCE, bgd};
use crate::support::{free_port, kill_group};

/// How long the database may take to accept connections.
const DATABASE_READY_WITHIN: Duration = Duration::from_secs(60);
/// How long after a worker's last `UpdateBotSession` the engine gives its session up and
/// requeues its leases (BuildGrid's `bot-session-keepalive-timeout`, seconds). Short, so a
/// worker killed without a word is replaced within seconds; BuildGrid long-polls a worker
/// for 0.8 × this and assigns nothing on a poll shorter than 3 s, so it stays above 4.
pub(crate) const KEEPALIVE_SECS: u64 = 6;

/// A PostgreSQL server on 127.0.0.1, its cluster in a temporary directory, trusting every
/// local connection; run as the `postgres` user when the tests run as root (`initdb`
/// refuses root).
pub(crate) struct Postgres {
    /// Its port.
    pub(crate) port: u16,
    log: PathBuf,
    child: Option<Child>,
    /// The cluster, its socket and its log (removed when dropped).
    _dir: tempfile::TempDir,
}

/// The directory of Debian's PostgreSQL programs (`/usr/lib/postgresql/<major>/bin`, the
/// newest major installed): Debian keeps `initdb` and `postgres` out of `PATH`. Missing,
/// it fails the test with the command that installs it; it is never skipped.
fn postgres_bin() -> PathBuf {
    let newest = fs_err::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").exists() && bin.join("postgres").exists()).then_some((major, bin))
        })
        .max_by_key(|(major, _)| *major);
    match newest {
        Some((_, bin)) => bin,
        None => panic!(
            "the remote-execution tests need PostgreSQL (/usr/lib/postgresql/<version>/bin/initdb); \
             install it with `./scripts/test.sh`, or: apt-get install -y postgresql"
        ),
    }
}

/// The uid and gid of the `postgres` user (from `/etc/passwd`, which Debian's package
/// fills), when the tests run as root; `None` otherwise (the database runs as the caller).
fn postgres_user() -> Option<(u32, u32)> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let passwd = fs_err::read_to_string("/etc/passwd").expect("read /etc/passwd");
    let ids = passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres") && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    });
    match ids {
        Some(ids) => Some(ids),
        None => panic!(
            "the tests run as root and PostgreSQL refuses root, but there is no `postgres` user; \
             install Debian's package (apt-get install -y postgresql), which makes it"
        ),
    }
}

impl Postgres {
    /// Makes a cluster and starts its server; returns once it accepts connections.
    pub(crate) fn start() -> Self {
        let bin = postgres_bin();
        let user = postgres_user();
        let as_user = |command: &mut Command| {
            if let Some((uid, gid)) = user {
                command.uid(uid).gid(gid);
            }
        };
        // A port free a moment ago can be taken before the server binds it: try another.
        for attempt in 1.. {
            let dir = tempfile::Builder::new()
                .prefix("pg-postgres-")
                .tempdir()
                .expect("create the database's directory");
            if let Some((uid, gid)) = user {
                std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                    .expect("give the database's directory to `postgres`");
            }
            let data = dir.path().join("data");
            let log = dir.path().join("postgres.log");
            let mut initdb = Command::new(bin.join("initdb"));
            initdb
                .arg("-D")
                .arg(&data)
                .args(["--auth=trust", "--username=postgres", "--encoding=UTF8"])
                .args(["--no-sync", "--no-instructions"])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("LC_ALL", "C")
                .current_dir(dir.path());
            as_user(&mut initdb);
            let made = initdb.output().expect("run initdb");
            assert!(
                made.status.success(),
                "initdb failed: {}{}",
                String::from_utf8_lossy(&made.stdout),
                String::from_utf8_lossy(&made.stderr)
            );
            let port = free_port();
            let out = fs_err::File::create(&log).expect("create the database's log");
            if let Some((uid, gid)) = user {
                std::os::unix::fs::chown(&log, Some(uid), Some(gid)).expect("give the log");
            }
            let err = out.try_clone().expect("share the log");
            let mut server = Command::new(bin.join("postgres"));
            server
                .arg("-D")
                .arg(&data)
                .arg("-p")
                .arg(port.to_string())
                // Its socket in its own directory (not /var/run/postgresql).
                .arg("-k")
                .arg(dir.path())
                .args(["-c", "listen_addresses=127.0.0.1"])
                // A test database: nothing need survive a crash.
                .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
                .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
                .env_clear()
                .env("LC_ALL", "C")
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::from(out.into_parts().0))
                .stderr(Stdio::from(err.into_parts().0))
                .process_group(0);
            as_user(&mut server);
            let child = server.spawn().expect("start postgres");
            let mut db = Postgres {
                port,
                log,
                child: Some(child),
                _dir: dir,
            };
            match db.wait_ready(&bin) {
                Ok(()) => return db,
                Err(_) if attempt < 3 && db.log().contains("could not bind") => drop(db),
                Err(why) => panic!(
                    "PostgreSQL did not accept connections on port {port} ({why}); its log:\n{}",
                    db.log()
                ),
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// Asks `pg_isready` until the server accepts connections.
    fn wait_ready(&mut self, bin: &Path) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait().expect("poll postgres")
            {
                return Err(format!("it exited with {status}"));
            }
            let asked = Command::new(bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-t", "2"])
                .output()
                .expect("run pg_isready");
            if asked.status.success() {
                return Ok(());
            }
            if started.elapsed() > DATABASE_READY_WITHIN {
                return Err(format!("not ready within {DATABASE_READY_WITHIN:?}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The SQLAlchemy URL BuildGrid 0.4.4 connects with (`+psycopg2`: with psycopg 3 its
    /// scheduler's notifier fails and jobs wait ~25 s).
    pub(crate) fn url(&self) -> String {
        format!(
            "postgresql+psycopg2://postgres@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// What the server has logged so far.
    pub(crate) fn log(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Postgres {
    /// A fast shutdown (SIGINT: connections closed, shared memory released), then SIGKILL
    /// to the group if it has not ended within 10 s.
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let pid = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        kill_group(&mut self.child);
    }
}

/// A BuildGrid engine on 127.0.0.1 with its own database: Capabilities, CAS on disk
/// ([`Engine::blob_path`]), ByteStream, an in-memory action cache, Execution and Bots (scheduling on
/// `OSFamily` and `ISA`), for the instance [`INSTANCE`].
pub(crate) struct Engine {
    /// `grpc://127.0.0.1:PORT/main`, what clients and workers are given.
    pub(crate) url: String,
    /// `grpc://127.0.0.1:PORT`, with the instance apart (`worker --instance`).
    pub(crate) address: String,
    /// Its port.
    pub(crate) port: u16,
    server: Bgd,
    /// Dropped after the server (fields drop in order).
    database: Postgres,
}

/// The engine's configuration: on `port`, blobs under `store`, jobs in `database`.
fn config(port: u16, store: &Path, database: &str) -> String {
    format!(
        r#"description: proofgraph's test engine (execution on PostgreSQL).
# Every Execute stream and every worker's long poll holds one of the server's threads, and
# the default (5 per core, at least 10) is less than 16 actions in flight and 4 workers.
thread-pool-size: 64
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
# gRPC's default SO_REUSEPORT would let two servers share a port: each binds its own.
grpc-server-options:
  grpc.so_reuseport: 0
authorization:
  method: none
connections:
  - !sql-connection &sql
    connection-string: {database}
    pool-size: 10
    max-overflow: 20
storages:
  - !disk-storage &cas
    path: {store}
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 4096
    allow-updates: true
    cache-failed-actions: true
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    action-cache: *ac
    storage: *cas
    property-set: !dynamic-property-set
      match-property-keys: [OSFamily, ISA]
    bot-session-keepalive-timeout: {KEEPALIVE_SECS}
    # Sessions past their keepalive are looked for every second (default 10).
    session-expiry-timer-interval: 1
    poll-interval: 0.5
instances:
  - name: {INSTANCE}
    services:
      - !action-cache
        cache: *ac
      - !execution
        scheduler: *scheduler
        operation-stream-keepalive-timeout: 10
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

impl Engine {
    /// Starts a database, migrates it (`bgd migrate apply`), starts the server and waits
    /// until it answers `GetCapabilities` with execution enabled.
    pub(crate) fn start() -> Self {
        let bgd = bgd();
        let database = Postgres::start();
        let migrated = Command::new(&bgd)
            .args(["migrate", "apply", &database.url()])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap_or_else(|e| panic!("run `{} migrate apply`: {e}", bgd.display()));
        assert!(
            migrated.status.success(),
            "`bgd migrate apply` failed: {}{}\nthe database's log:\n{}",
            String::from_utf8_lossy(&migrated.stdout),
            String::from_utf8_lossy(&migrated.stderr),
            database.log()
        );
        let server = Bgd::start(
            "pg-engine-",
            |_, port, store| (config(port, store, &database.url()), Asking::default()),
            |answer| match &answer.execution_capabilities {
                Some(execution) if execution.exec_enabled => Ok(()),
                _ => Err("it answered without execution enabled".to_owned()),
            },
        );
        let port = server.port;
        Engine {
            url: format!("grpc://127.0.0.1:{port}/{INSTANCE}"),
            address: format!("grpc://127.0.0.1:{port}"),
            port,
            server,
            database,
        }
    }

    /// The path of the blob `sha256` (hex) on the engine's disk.
    pub(crate) fn blob_path(&self, sha256: &str) -> PathBuf {
        self.server.blob_path(sha256)
    }

    /// Where its blobs lie on disk (what a test greps for a value that must never get there).
    pub(crate) fn cas_dir(&self) -> PathBuf {
        self.server.cas_dir()
    }

    /// Kills the server and everything it started (SIGKILL), at once: an engine that
    /// stopped, as a client finds it.
    pub(crate) fn kill(&mut self) {
        self.server.kill();
    }

    /// What the server has logged so far.
    pub(crate) fn log(&self) -> String {
        self.server.log()
    }

    /// What its database has logged so far.
    pub(crate) fn database_log(&self) -> String {
        self.database.log()
    }
}

/// A small REAPI client for the tests: Actions built by hand, their blobs uploaded with
/// `BatchUpdateBlobs`, executed with `Execute` (the stream read to its end).
pub(crate) mod client {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
    use bazel_remote_apis::google::protobuf::Duration as ProtoDuration;
    use prost::Message as _;
    use tonic::transport::Channel;

    use super::INSTANCE;
    use crate::remote_support::digest;

    /// What an Action runs and sees.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct Spec {
        /// The command.
        pub(crate) argv: Vec<String>,
        /// Its environment (sorted when encoded).
        pub(crate) env: Vec<(String, String)>,
        /// Files of the input root: path, content, executable.
        pub(crate) files: Vec<(String, Vec<u8>, bool)>,
        /// Symbolic links of the input root: path, target.
        pub(crate) links: Vec<(String, String)>,
        /// What it declares as outputs (`output_paths`).
        pub(crate) outputs: Vec<String>,
        /// Its platform properties (sorted when encoded).
        pub(crate) platform: Vec<(String, String)>,
        /// Its timeout.
        pub(crate) timeout: Option<Duration>,
        /// The working directory, relative to the input root.
        pub(crate) working_directory: String,
        /// Makes two otherwise equal Actions different (a `salt`).
        pub(crate) salt: Vec<u8>,
    }

    impl Spec {
        /// `argv` on linux/x86-64, nothing else.
        pub(crate) fn new(argv: &[&str]) -> Self {
            Spec {
                argv: argv.iter().map(|a| (*a).to_owned()).collect(),
                platform: vec![
                    ("ISA".to_owned(), "x86-64".to_owned()),
                    ("OSFamily".to_owned(), "linux".to_owned()),
                ],
                ..Spec::default()
            }
        }
    }

    /// A directory of the input root being built.
    #[derive(Default)]
    struct Tree {
        files: BTreeMap<String, (Vec<u8>, bool)>,
        links: BTreeMap<String, String>,
        dirs: BTreeMap<String, Tree>,
    }

    impl Tree {
        fn at(&mut self, path: &str) -> (&mut Tree, String) {
            let mut parts: Vec<&str> = path.split('/').collect();
            let name = parts.pop().expect("a name").to_owned();
            let mut tree = self;
            for part in parts {
                tree = tree.dirs.entry(part.to_owned()).or_default();
            }
            (tree, name)
        }

        /// Its `Directory`'s digest; every blob it needs goes into `blobs`.
        fn encode(&self, blobs: &mut Vec<(reapi::Digest, Vec<u8>)>) -> reapi::Digest {
            let mut directory = reapi::Directory::default();
            for (name, (content, executable)) in &self.files {
                let d = digest(content);
                blobs.push((d.clone(), content.clone()));
                directory.files.push(reapi::FileNode {
                    name: name.clone(),
                    digest: Some(d),
                    is_executable: *executable,
                    ..Default::default()
                });
            }
            for (name, tree) in &self.dirs {
                directory.directories.push(reapi::DirectoryNode {
                    name: name.clone(),
                    digest: Some(tree.encode(blobs)),
                });
            }
            for (name, target) in &self.links {
                directory.symlinks.push(reapi::SymlinkNode {
                    name: name.clone(),
                    target: target.clone(),
                    ..Default::default()
                });
            }
            let bytes = directory.encode_to_vec();
            let d = digest(&bytes);
            blobs.push((d.clone(), bytes));
            d
        }
    }

    /// The Action of `spec`, and every blob it needs (Action, Command, input root).
    pub(crate) fn action(spec: &Spec) -> (reapi::Digest, Vec<(reapi::Digest, Vec<u8>)>) {
        let mut blobs = Vec::new();
        let mut root = Tree::default();
        for (path, content, executable) in &spec.files {
            let (dir, name) = root.at(path);
            dir.files.insert(name, (content.clone(), *executable));
        }
        for (path, target) in &spec.links {
            let (dir, name) = root.at(path);
            dir.links.insert(name, target.clone());
        }
        let input_root = root.encode(&mut blobs);
        let mut env = spec.env.clone();
        env.sort();
        let mut platform = spec.platform.clone();
        platform.sort();
        let platform = reapi::Platform {
            properties: platform
                .into_iter()
                .map(|(name, value)| reapi::platform::Property { name, value })
                .collect(),
        };
        let command = reapi::Command {
            arguments: spec.argv.clone(),
            environment_variables: env
                .into_iter()
                .map(|(name, value)| reapi::command::EnvironmentVariable { name, value })
                .collect(),
            output_paths: spec.outputs.clone(),
            working_directory: spec.working_directory.clone(),
            // Where REAPI before 2.2 looked for it (BuildGrid 0.4.4 reads the Action's).
            #[expect(deprecated, reason = "older engines read the Command's platform")]
            platform: Some(platform.clone()),
            ..Default::default()
        };
        let command_bytes = command.encode_to_vec();
        let command_digest = digest(&command_bytes);
        blobs.push((command_digest.clone(), command_bytes));
        let action = reapi::Action {
            command_digest: Some(command_digest),
            input_root_digest: Some(input_root),
            timeout: spec.timeout.map(|t| ProtoDuration {
                seconds: i64::try_from(t.as_secs()).expect("a short timeout"),
                nanos: 0,
            }),
            do_not_cache: true,
            salt: spec.salt.clone(),
            platform: Some(platform),
        };
        let bytes = action.encode_to_vec();
        let d = digest(&bytes);
        blobs.push((d.clone(), bytes));
        (d, blobs)
    }

    /// A channel to the engine on `port`.
    pub(crate) async fn connect(port: u16) -> Channel {
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .expect("an endpoint")
            .connect()
            .await
            .expect("connect to the engine")
    }

    /// Stores `blobs` in the engine's CAS.
    pub(crate) async fn upload(channel: &Channel, blobs: Vec<(reapi::Digest, Vec<u8>)>) {
        let mut cas =
            reapi::content_addressable_storage_client::ContentAddressableStorageClient::new(
                channel.clone(),
            );
        let answer = cas
            .batch_update_blobs(reapi::BatchUpdateBlobsRequest {
                instance_name: INSTANCE.to_owned(),
                requests: blobs
                    .into_iter()
                    .map(
                        |(digest, data)| reapi::batch_update_blobs_request::Request {
                            digest: Some(digest),
                            data,
                            compressor: 0,
                        },
                    )
                    .collect(),
                digest_function: reapi::digest_function::Value::Sha256 as i32,
            })
            .await
            .expect("BatchUpdateBlobs")
            .into_inner();
        for response in answer.responses {
            let code = response.status.map_or(0, |s| s.code);
            assert_eq!(code, 0, "the engine refused a blob: {:?}", response.digest);
        }
    }

    /// The bytes of `blob` in the engine's CAS.
    pub(crate) async fn read(channel: &Channel, blob: &reapi::Digest) -> Vec<u8> {
        let mut cas =
            reapi::content_addressable_storage_client::ContentAddressableStorageClient::new(
                channel.clone(),
            );
        let answer = cas
            .batch_read_blobs(reapi::BatchReadBlobsRequest {
                instance_name: INSTANCE.to_owned(),
                digests: vec![blob.clone()],
                acceptable_compressors: Vec::new(),
                digest_function: reapi::digest_function::Value::Sha256 as i32,
            })
            .await
            .expect("BatchReadBlobs")
            .into_inner();
        let response = answer.responses.into_iter().next().expect("an answer");
        assert_eq!(
            response.status.map_or(0, |s| s.code),
            0,
            "the engine has no blob {blob:?}"
        );
        assert_eq!(
            digest(&response.data),
            *blob,
            "the engine served other bytes"
        );
        response.data
    }

    /// Starts `action` (`skip_cache_lookup`): the operation's name, and the stream.
    pub(crate) async fn start(
        channel: &Channel,
        action: &reapi::Digest,
    ) -> (
        String,
        tonic::Streaming<bazel_remote_apis::google::longrunning::Operation>,
    ) {
        let mut stream = reapi::execution_client::ExecutionClient::new(channel.clone())
            .execute(reapi::ExecuteRequest {
                instance_name: INSTANCE.to_owned(),
                action_digest: Some(action.clone()),
                skip_cache_lookup: true,
                ..Default::default()
            })
            .await
            .expect("Execute")
            .into_inner();
        let first = stream
            .message()
            .await
            .expect("an operation")
            .expect("a first message");
        (first.name, stream)
    }

    /// Reads `stream` to the operation's end: its `ExecuteResponse`.
    pub(crate) async fn finish(
        mut stream: tonic::Streaming<bazel_remote_apis::google::longrunning::Operation>,
    ) -> reapi::ExecuteResponse {
        use bazel_remote_apis::google::longrunning::operation::Result as Outcome;
        loop {
            let operation = stream
                .message()
                .await
                .expect("the operation stream")
                .expect("the operation to end before its stream");
            if !operation.done {
                continue;
            }
            match operation.result {
                Some(Outcome::Response(any)) => {
                    return reapi::ExecuteResponse::decode(any.value.as_slice())
                        .expect("an ExecuteResponse");
                }
                other => panic!("the operation ended with {other:?}"),
            }
        }
    }

    /// Executes `spec` to its end: uploads what it needs, `Execute`, the response.
    pub(crate) async fn execute(channel: &Channel, spec: &Spec) -> reapi::ExecuteResponse {
        let (action, blobs) = action(spec);
        upload(channel, blobs).await;
        let (_, stream) = start(channel, &action).await;
        finish(stream).await
    }
}

/// The harness itself: a database of its own, migrated, under a server that offers
/// execution (SHA-256, exec enabled) and accepts an Action for the platform workers
/// declare, keeping it queued while no worker is there.
#[test]
fn engine_starts_with_execution_on_its_own_postgres() {
    let engine = Engine::start();
    assert!(
        engine
            .database_log()
            .contains("ready to accept connections"),
        "{}",
        engine.database_log()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let channel = client::connect(engine.port).await;
        let capabilities = reapi::capabilities_client::CapabilitiesClient::new(channel.clone())
            .get_capabilities(reapi::GetCapabilitiesRequest {
                instance_name: INSTANCE.to_owned(),
            })
            .await
            .expect("GetCapabilities")
            .into_inner();
        let execution = capabilities
            .execution_capabilities
            .expect("execution capabilities");
        assert!(execution.exec_enabled);
        assert_eq!(
            execution.digest_function,
            reapi::digest_function::Value::Sha256 as i32
        );

        // An Action for linux/x86-64 with nothing to run it: stored, accepted and queued.
        let (action, blobs) = client::action(&client::Spec::new(&["/bin/true"]));
        client::upload(&channel, blobs).await;
        assert!(
            engine.blob_path(&action.hash).is_file(),
            "the CAS is on disk"
        );
        let (name, mut stream) = client::start(&channel, &action).await;
        assert!(!name.is_empty());
        let first = tokio::time::timeout(Duration::from_secs(3), stream.message()).await;
        assert!(
            !matches!(first, Ok(Ok(Some(ref op))) if op.done),
            "nothing can have run it: {first:?}"
        );
    });
    drop(engine);
}
