//! Receipts that travel through a real Bazel HTTP cache: Debian's nginx with WebDAV `PUT`,
//! started on a loopback port by each test. Two clones of one repository, each with its
//! own local store: what one proves and pushes, the other reuses without running anything
//! — but only when the signer is trusted, the blobs are intact and the fingerprint is the
//! one computed here. A remote that is down, dies mid-run or hangs costs a warning, never
//! a proof, and a credential never leaves the environment variable that holds it.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ed25519_dalek::VerifyingKey;
use proofgraph::attest::keys::{self, KeyId};
use proofgraph::store::remote::{BlobDigest, RemoteCache, Settings, encoding};
use proofgraph_graph::fingerprint::Fingerprint;
use proofgraph_graph::{CapabilityName, ProviderId};
use serde_json::Value;

use crate::support::{Run, Sandbox, assert_emits, git, git_commit_all, input_refs};

pub(crate) const CHANGE: &str = "share";

/// nginx serving `/cache/` from a directory of its own, with `PUT` (WebDAV) and, when a
/// token is given, only to requests that carry it.
pub(crate) struct Nginx {
    dir: PathBuf,
    child: Option<Child>,
    pub(crate) url: String,
}

fn nginx_binary() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("nginx is not installed: `apt-get install -y nginx` (scripts/deps.sh does)")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Nginx {
    pub(crate) fn start(sb: &Sandbox, token: Option<&str>) -> Nginx {
        Nginx::start_with(sb, token, true, false, None)
    }

    /// A writable cache that answers 503 to requests past `rate` (`limit_req`, no burst:
    /// a request sooner than `1/rate` after the one before is refused), as a busy cache
    /// behind a rate limit does.
    pub(crate) fn start_rate_limited(sb: &Sandbox, rate: &str) -> Nginx {
        Nginx::start_with(sb, None, true, false, Some(rate))
    }

    /// A cache that serves what it has and refuses `PUT` (405), as a read-only mirror does.
    pub(crate) fn start_read_only(sb: &Sandbox) -> Nginx {
        Nginx::start_with(sb, None, false, false, None)
    }

    /// A writable cache that speaks TLS only, with a certificate for 127.0.0.1 from a CA of
    /// its own (`ca_file`); `url` is `https://127.0.0.1:PORT/cache`.
    pub(crate) fn start_tls(sb: &Sandbox) -> Nginx {
        Nginx::start_with(sb, None, true, true, None)
    }

    /// The certificate of the CA that issued a TLS server's certificate.
    pub(crate) fn ca_file(&self) -> PathBuf {
        self.dir.join("tls/ca.crt")
    }

    fn start_with(
        sb: &Sandbox,
        token: Option<&str>,
        writable: bool,
        tls: bool,
        rate: Option<&str>,
    ) -> Nginx {
        let dir = sb.path().join("nginx");
        // `cas/` and `ac/` made first: nginx's `create_full_put_path` races with itself
        // when concurrent PUTs make the same directory (a 500), as docs/remote-cache.md says.
        for sub in ["data/cache/cas", "data/cache/ac", "tmp", "logs"] {
            fs_err::create_dir_all(dir.join(sub)).expect("mkdir");
        }
        let port = free_port();
        let mut guard = token.map_or(String::new(), |t| {
            format!("      if ($http_authorization != \"Bearer {t}\") {{ return 401; }}\n")
        });
        let zone = rate.map_or(String::new(), |rate| {
            guard.push_str("      limit_req zone=cache;\n      limit_req_status 503;\n");
            format!("  limit_req_zone $binary_remote_addr zone=cache:1m rate={rate};\n")
        });
        let dav = if writable {
            "      dav_methods PUT;\n      create_full_put_path on;\n      dav_access user:rw group:r all:r;\n"
        } else {
            ""
        };
        let d = dir.display();
        let (ssl, scheme) = if tls {
            fs_err::create_dir_all(dir.join("tls")).expect("mkdir");
            let (key, cert, _) = crate::remote_support::certificate(&dir.join("tls"));
            (
                format!(
                    " ssl;\n    ssl_certificate {};\n    ssl_certificate_key {}",
                    cert.display(),
                    key.display()
                ),
                "https",
            )
        } else {
            (String::new(), "http")
        };
        let conf = format!(
            "user root;\nworker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log;\nevents {{ worker_connections 64; }}\nhttp {{\n{zone}  access_log {d}/logs/access.log;\n  client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n  fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n  scgi_temp_path {d}/tmp/scgi;\n  client_max_body_size 0;\n  server {{\n    listen 127.0.0.1:{port}{ssl};\n    location /cache/ {{\n{guard}      root {d}/data;\n{dav}    }}\n  }}\n}}\n"
        );
        fs_err::write(dir.join("nginx.conf"), conf).expect("write nginx.conf");
        let child = Command::new(nginx_binary())
            // Its own process group: stopping it kills the master and its worker at once.
            .process_group(0)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("logs/error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let url = format!("{scheme}://127.0.0.1:{port}/cache");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen on {port}: {}",
                fs_err::read_to_string(dir.join("logs/error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nginx {
            dir,
            child: Some(child),
            url,
        }
    }

    /// What nginx logged, for a failure's message.
    pub(crate) fn log(&self) -> String {
        fs_err::read_to_string(self.dir.join("logs/error.log")).unwrap_or_default()
    }

    /// Every request nginx answered, a line each (`"GET /cache/… HTTP/1.1" 503 …`).
    pub(crate) fn access_log(&self) -> String {
        fs_err::read_to_string(self.dir.join("logs/access.log")).unwrap_or_default()
    }

    /// Where action-cache entries are kept, by key.
    pub(crate) fn ac(&self) -> PathBuf {
        self.dir.join("data/cache/ac")
    }

    /// Where blobs are kept, by SHA-256.
    pub(crate) fn cas(&self) -> PathBuf {
        self.dir.join("data/cache/cas")
    }

    /// Kills it — the master and its worker, the whole process group, with `SIGKILL` —
    /// and waits for the master.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-9", "--", &group]).status();
            let _ = child.wait();
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A remote cache server a test started: nginx here, BuildGrid in `remote_grpc.rs`.
pub(crate) trait Served {
    /// The URL `cache.remote` names.
    fn url(&self) -> String;
    /// The directory its blobs are kept in, at any depth (nginx: `<sha256>`; BuildGrid:
    /// `<sha256[..2]>/<sha256[2..]>`).
    fn cas(&self) -> PathBuf;
    /// Kills it.
    fn stop(&mut self);
    /// What it logged, for a failure's message.
    fn log(&self) -> String;
    /// The directory its action-cache entries lie in, one file per key (nginx:
    /// `ac/<sha256>`); `None` when it keeps them in memory (BuildGrid's LRU cache).
    fn action_cache(&self) -> Option<PathBuf> {
        None
    }
}

impl Served for Nginx {
    fn url(&self) -> String {
        self.url.clone()
    }
    fn cas(&self) -> PathBuf {
        Nginx::cas(self)
    }
    fn stop(&mut self) {
        Nginx::stop(self);
    }
    fn log(&self) -> String {
        Nginx::log(self)
    }
    fn action_cache(&self) -> Option<PathBuf> {
        Some(self.dir.join("data/cache/ac"))
    }
}

/// Every file under `dir`, at any depth.
pub(crate) fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs_err::read_dir(&at).expect("read the cas").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// A CI key pair: the private key a CI job installs, and the catalog entry that trusts it.
pub(crate) fn ci_key(sb: &Sandbox) -> (PathBuf, String) {
    let key = keys::generate_signing_key().expect("generate a key");
    let secret = crate::support::write(
        &sb.path().join("secret/workspace.key"),
        &*keys::signing_key_to_pem(&key),
    );
    let entry = format!(
        "trustedKeys:\n  - name: ci\n    publicKey: |\n{}",
        keys::public_key_to_pem(&key.verifying_key())
            .lines()
            .map(|l| format!("      {l}\n"))
            .collect::<String>()
    );
    (secret, entry)
}

/// The repository every clone is made from: three providers, each appending its name to
/// `$HOME/runs.log` (so executions are counted across clones), a remote cache and the CI
/// key trusted (`trusted`: the `trustedKeys` part of the catalog, or nothing).
pub(crate) fn origin(sb: &Sandbox, cache: &str, trusted: &str) {
    sb.home_channel("runs.log");
    sb.openspec_root("");
    sb.write("openspec/changes/share/proposal.md", "# share receipts\n");
    sb.write(
        "openspec/changes/share/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [unit, lint, integration]}\n",
    );
    let mut execution = String::from("version: 1\nproviders:\n");
    for (id, cap) in [
        ("unit", "unit"),
        ("lint", "lint"),
        ("integration", "integration"),
    ] {
        execution.push_str(&format!(
            "  {id}:\n    adapter: command\n    capability: {cap}\n    command: [sh, -c, \"echo {id} >> $HOME/runs.log\"]\n"
        ));
    }
    sb.write("openspec/changes/share/execution.yaml", execution);
    sb.write("src/lib.sh", "echo 42\n");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n{cache}{trusted}"),
    );
    git_commit_all(&sb.work());
}

/// A clone of the origin, named `name`, beside it.
pub(crate) fn clone(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.path().join(name);
    git(
        &sb.path(),
        &["clone", "-q", &sb.work().display().to_string(), name],
    );
    dir
}

/// Installs the CI key as the clone's signing key, as a CI job does from a secret.
pub(crate) fn install(secret: &Path, clone: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let key = crate::support::write(
        &clone.join(".proofgraph/keys/workspace.key"),
        fs_err::read(secret).expect("the secret"),
    );
    fs_err::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

pub(crate) fn runs(sb: &Sandbox) -> usize {
    sb.home_channel("runs.log").lines()
}

pub(crate) fn prove(sb: &Sandbox, dir: &Path, vars: &[(&str, &str)], extra: &[&str]) -> Run {
    let mut args = vec!["prove", CHANGE, "--json"];
    args.extend(extra);
    sb.run_with_env(dir, &args, vars)
}

pub(crate) fn summary(run: &Run, key: &str) -> u64 {
    run.json()["summary"][key].as_u64().unwrap_or(0)
}

pub(crate) const CI: (&str, &str) = ("PROOFGRAPH_CACHE", "local:rw,remote:rw");

/// The scenario of `what_ci_proved_and_pushed_a_fresh_clone_reuses_without_running_anything`, against any remote.
pub(crate) fn ci_pushes_and_a_fresh_clone_reuses(sb: &Sandbox, remote: &mut dyn Served) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", remote.url()), &trusted);
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let run = prove(sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(runs(sb), 3);
    assert_eq!(
        summary(&run, "pushed"),
        3,
        "{}\n{}",
        run.stdout,
        remote.log()
    );
    // A clone proving with `--no-cache` reuses nothing, so it pulls nothing either.
    let fresh = clone(sb, "fresh");
    let run = prove(sb, &fresh, &[], &["--no-cache"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(runs(sb), 6, "every provider ran: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 0, "{}", run.stdout);
    // A laptop: a clone with an empty store, the default policy (reads the remote).
    let laptop = clone(sb, "laptop");
    let run = prove(sb, &laptop, &[], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(runs(sb), 6, "nothing ran again: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 3);
    for p in run.json()["providers"].as_array().expect("providers") {
        assert_eq!(p["action"], "reused", "{p}");
        assert_eq!(p["reason"], "its receipt came from the remote cache", "{p}");
    }
    // Another clone's `status` shows them passed, having pulled them.
    let other = clone(sb, "other");
    let status = sb.run(&other, &["status", CHANGE, "--json"]);
    assert_eq!(status.code, Some(0), "{}", status.stdout);
    assert_eq!(runs(sb), 6);
    // An edit makes a new fingerprint: the remote has nothing for it, and it runs.
    fs_err::write(laptop.join("src/lib.sh"), "echo 43\n").expect("edit");
    let run = prove(sb, &laptop, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 9);
    assert_eq!(
        summary(&run, "pushed"),
        0,
        "a laptop does not write the remote"
    );
}

#[test]
fn what_ci_proved_and_pushed_a_fresh_clone_reuses_without_running_anything() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    ci_pushes_and_a_fresh_clone_reuses(&sb, &mut nginx);
}

/// The scenario of `a_receipt_signed_by_a_key_this_clone_does_not_trust_is_never_reused`, against any remote.
pub(crate) fn an_untrusted_signer(sb: &Sandbox, remote: &mut dyn Served) {
    let (secret, _) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", remote.url()), "");
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let run = prove(sb, &ci, &[CI], &[]);
    // The CI key is not pinned for this user and not in trustedKeys: refused locally too.
    assert_eq!(run.code, Some(3), "{}", run.stdout);
    // Prove with the clone's own key, which nobody else trusts.
    fs_err::remove_dir_all(ci.join(".proofgraph")).expect("a fresh store");
    let run = prove(sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(summary(&run, "pushed"), 3);
    // The laptop trusts no key but its own: the clone's entries are kept under the clone's
    // key id, which it never looks up. Everything runs, and it says why.
    let laptop = clone(sb, "laptop");
    let run = prove(sb, &laptop, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 6, "every provider ran here: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 0);
    assert_emits!(run.status_codes(), "remote_receipt_untrusted");
    // The fix never says to trust whatever key signed it (a stranger's, here).
    let doc = run.json();
    let fix = doc["status"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["code"] == "remote_receipt_untrusted")
        .and_then(|d| d["fix"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        fix.contains("never one taken from the receipt") && fix.contains("the provider runs here"),
        "{fix}"
    );
}

#[test]
fn a_receipt_signed_by_a_key_this_clone_does_not_trust_is_never_reused() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    an_untrusted_signer(&sb, &mut nginx);
}

/// The `trustedKeys` part of a catalog that trusts `keys` (name, public key), in order.
fn trusting(keys: &[(&str, &VerifyingKey)]) -> String {
    let mut out = String::from("trustedKeys:\n");
    for (name, key) in keys {
        out.push_str(&format!("  - name: {name}\n    publicKey: |\n"));
        for line in keys::public_key_to_pem(key).lines() {
            out.push_str(&format!("      {line}\n"));
        }
    }
    out
}

/// The fingerprint of each provider of the change in `dir` (`hash --json`), by name.
fn fingerprints(sb: &Sandbox, dir: &Path) -> Vec<(String, Fingerprint)> {
    let hash = sb.run(dir, &["hash", CHANGE, "--json"]);
    assert_eq!(hash.code, Some(0), "{}", hash.stdout);
    hash.json()["bindings"]
        .as_array()
        .expect("bindings")
        .iter()
        .map(|b| {
            let name = b["provider"].as_str().expect("a provider").to_owned();
            let fp = Fingerprint::from_hex(b["fingerprint"].as_str().expect("a fingerprint"))
                .expect("a fingerprint");
            (name, fp)
        })
        .collect()
}

/// The remote key of the receipt of the origin's provider `name` (its capability has the
/// same name) at `fp`, signed by `signer`.
fn remote_key(name: &str, fp: &Fingerprint, signer: &KeyId) -> encoding::Encoded {
    encoding::action(
        fp,
        &ProviderId::parse(name).expect("a provider id"),
        &CapabilityName::parse(name).expect("a capability"),
        signer,
    )
}

/// Every action-cache entry file of `dir` with its bytes.
fn entry_files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    files(dir)
        .into_iter()
        .map(|p| {
            let bytes = fs_err::read(&p).expect("read an entry");
            (p, bytes)
        })
        .collect()
}

/// The scenario of `a_stranger_s_push_never_stops_a_laptop_from_reusing_ci_s_entries`,
/// against any remote (issue 27): entries are kept per signer, so a clone with a key of its
/// own and `remote:rw` pushing the same fingerprints lands beside CI's entries, never over
/// them, and a laptop that trusts CI reuses CI's; one that trusts both takes the first its
/// list names, one that trusts nobody looks nothing up and says why. A writer that replaces
/// CI's entry on purpose (a key id is public, the server checks no signature) costs a rerun,
/// never a pass.
pub(crate) fn a_stranger_pushes_the_same_fingerprints(sb: &Sandbox, remote: &mut dyn Served) {
    let (secret, trusted) = ci_key(sb);
    let url = remote.url();
    origin(sb, &format!("  remote: {url}\n"), &trusted);
    let ci_key = keys::read_signing_key(&secret)
        .expect("the CI key")
        .verifying_key();
    let ci_id = KeyId::of(&ci_key);
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let run = prove(sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, remote.log());
    assert_eq!(summary(&run, "pushed"), 3, "{}", run.stdout);
    assert_eq!(runs(sb), 3);
    let names = ["integration", "lint", "unit"];
    let ci_receipts: Vec<String> = names.iter().map(|p| receipt_sha(&run, p)).collect();
    let ci_entries = remote.action_cache().map(|dir| entry_files(&dir));

    // A stranger: a clone whose store has a key of its own that no one trusts, proving the
    // same fingerprints again (`--no-cache`: it reuses nothing) with `remote:rw`.
    let stranger = clone(sb, "stranger");
    let run = prove(sb, &stranger, &[CI], &["--no-cache"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 6, "the stranger ran everything");
    assert_eq!(summary(&run, "pushed"), 3, "{}", run.stdout);
    let stranger_receipts: Vec<String> = names.iter().map(|p| receipt_sha(&run, p)).collect();
    let stranger_key = keys::read_public_key(&stranger.join(".proofgraph/keys/workspace.pub"))
        .expect("the stranger's key");
    let stranger_id = KeyId::of(&stranger_key);
    assert_ne!(stranger_id, ci_id);

    // Its entries landed beside CI's, under its own key id; CI's are as CI left them.
    let prints = fingerprints(sb, &ci);
    assert_eq!(
        prints.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        names
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let cache = RemoteCache::open(&Settings::new(&url)).expect("a client of the remote");
    let mut theirs_outputs = Vec::new();
    for (i, (name, fp)) in prints.iter().enumerate() {
        let ours = remote_key(name, fp, &ci_id);
        let theirs = remote_key(name, fp, &stranger_id);
        assert_ne!(ours.key, theirs.key, "{name}: two signers, two entries");
        let at = |key: BlobDigest| {
            rt.block_on(cache.entry(key))
                .expect("the remote answers")
                .unwrap_or_else(|| panic!("{name}: no entry under {key}"))
        };
        assert_eq!(
            at(ours.key).envelope.sha256.to_hex(),
            ci_receipts[i],
            "{name}: CI's entry still names CI's receipt"
        );
        let outputs = at(theirs.key);
        assert_eq!(
            outputs.envelope.sha256.to_hex(),
            stranger_receipts[i],
            "{name}: the stranger's entry names the stranger's receipt"
        );
        theirs_outputs.push((ours, outputs));
    }
    if let (Some(dir), Some(before)) = (remote.action_cache(), &ci_entries) {
        let after = entry_files(&dir);
        assert_eq!(before.len(), 3, "{before:?}");
        assert_eq!(after.len(), 6, "three entries more, beside CI's: {after:?}");
        for (path, bytes) in before {
            assert_eq!(
                after.get(path),
                Some(bytes),
                "{} was rewritten",
                path.display()
            );
        }
        for (ours, _) in &theirs_outputs {
            assert!(
                before.contains_key(&dir.join(ours.key.sha256.to_hex())),
                "CI's entry is at ac/<its key>"
            );
        }
    }

    // A laptop trusting CI (the committed `trustedKeys`) reuses everything CI pushed.
    let laptop = clone(sb, "laptop");
    let run = prove(sb, &laptop, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 6, "nothing ran on the laptop: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 3, "{}", run.stdout);
    let reused: Vec<String> = names.iter().map(|p| receipt_sha(&run, p)).collect();
    assert_eq!(reused, ci_receipts, "CI's receipts");
    assert!(
        !run.status_codes()
            .contains(&"remote_receipt_untrusted".to_owned()),
        "{}",
        run.stdout
    );

    // A laptop trusting both, the stranger listed first: the first signer in its order
    // whose receipt verifies is taken.
    let both = clone(sb, "both");
    fs_err::write(
        both.join("proofgraph.yaml"),
        format!(
            "version: 1\ncache:\n  remote: {url}\n{}",
            trusting(&[("stranger", &stranger_key), ("ci", &ci_key)])
        ),
    )
    .expect("trust both");
    let run = prove(sb, &both, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 6, "nothing ran: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 3, "{}", run.stdout);
    let reused: Vec<String> = names.iter().map(|p| receipt_sha(&run, p)).collect();
    assert_eq!(
        reused, stranger_receipts,
        "the first listed signer's receipts"
    );

    // A laptop trusting nobody but itself looks up only its own key: it pulls nothing, and
    // says why.
    let nobody = clone(sb, "nobody");
    fs_err::write(
        nobody.join("proofgraph.yaml"),
        format!("version: 1\ncache:\n  remote: {url}\n"),
    )
    .expect("trust nobody");
    let run = prove(sb, &nobody, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 9, "everything ran: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 0, "{}", run.stdout);
    assert_emits!(run.status_codes(), "remote_receipt_untrusted");
    let message = run.json()["status"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["code"] == "remote_receipt_untrusted")
        .and_then(|d| d["message"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("3 receipts were not found")
            && message.contains("`trustedKeys` in proofgraph.yaml lists no key")
            && message.contains("only this store's own key was looked up"),
        "{message}"
    );

    // A writer that replaces CI's entries on purpose, here with the stranger's: the laptop
    // finds in CI's place a receipt no key it trusts signed, and runs.
    for (ours, outputs) in &theirs_outputs {
        rt.block_on(cache.put(ours, outputs, Vec::new()))
            .expect("overwrite CI's entry");
    }
    let overwritten = clone(sb, "overwritten");
    let run = prove(sb, &overwritten, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 12, "a rerun, never a pass: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 0, "{}", run.stdout);
    assert_emits!(run.status_codes(), "remote_receipt_untrusted");
    assert!(
        run.stdout.contains(&stranger_id.to_string()),
        "the refusal names the key that signed it: {}",
        run.stdout
    );
}

#[test]
fn a_stranger_s_push_never_stops_a_laptop_from_reusing_ci_s_entries() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    a_stranger_pushes_the_same_fingerprints(&sb, &mut nginx);
}

/// The scenario of `a_blob_corrupted_on_the_server_is_never_used`, against any remote.
pub(crate) fn a_corrupted_blob(sb: &Sandbox, remote: &mut dyn Served) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", remote.url()), &trusted);
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let run = prove(sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    // Flip one byte of every envelope on the server's disk (they are the JSON blobs).
    let mut flipped = 0;
    for path in files(&remote.cas()) {
        let mut bytes = fs_err::read(&path).expect("read");
        if bytes.starts_with(b"{\"payload\"") || bytes.starts_with(b"{\"payloadType\"") {
            let last = bytes.len() - 2;
            bytes[last] ^= 0x20;
            fs_err::write(&path, bytes).expect("write");
            flipped += 1;
        }
    }
    assert_eq!(flipped, 3, "three envelopes on the server");
    let laptop = clone(sb, "laptop");
    let run = prove(sb, &laptop, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 6, "each provider ran again: {}", run.stdout);
    assert_emits!(run.status_codes(), "remote_cache_corrupt");
    // Truncated, the same.
    for path in files(&remote.cas()) {
        let bytes = fs_err::read(&path).expect("read");
        fs_err::write(&path, &bytes[..bytes.len() / 2]).expect("truncate");
    }
    let fresh = clone(sb, "fresh");
    let run = prove(sb, &fresh, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(sb), 9);
}

#[test]
fn a_blob_corrupted_on_the_server_is_never_used() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    a_corrupted_blob(&sb, &mut nginx);
}

#[test]
fn a_remote_that_is_down_hangs_or_dies_mid_run_costs_a_warning_never_a_proof() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    let (secret, trusted) = ci_key(&sb);
    // A remote that accepts connections and never answers.
    let hole = TcpListener::bind("127.0.0.1:0").expect("bind");
    let hole_url = format!("http://{}/cache", hole.local_addr().expect("addr"));
    origin(
        &sb,
        &format!("  remote: {}\n  timeoutMs: 1500\n", nginx.url),
        &trusted,
    );
    nginx.stop();
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let started = Instant::now();
    let run = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(runs(&sb), 3);
    assert_emits!(run.status_codes(), "remote_cache_unavailable");
    // Against a remote that never answers, the deadline holds.
    let hung = clone(&sb, "hung");
    let catalog = fs_err::read_to_string(hung.join("proofgraph.yaml")).expect("catalog");
    fs_err::write(
        hung.join("proofgraph.yaml"),
        catalog.replace(&nginx.url, &hole_url),
    )
    .expect("point at the hole");
    let run = prove(&sb, &hung, &[CI], &["--no-cache"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_emits!(run.status_codes(), "remote_cache_unavailable");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "a dead remote is given up on: {:?}",
        started.elapsed()
    );
    drop(hole);
    // The same exit code as without a remote: a failing provider fails the same way.
    let failing = clone(&sb, "failing");
    fs_err::write(
        failing.join("openspec/changes/share/execution.yaml"),
        "version: 1\nproviders:\n  unit:\n    adapter: command\n    capability: unit\n    command: [sh, -c, \"exit 1\"]\n",
    )
    .expect("a failing provider");
    let with_dead_remote = prove(&sb, &failing, &[CI], &[]);
    let without = prove(
        &sb,
        &failing,
        &[("PROOFGRAPH_CACHE", "local:rw,remote:off")],
        &["--no-cache"],
    );
    assert_eq!(with_dead_remote.code, without.code);
    assert_eq!(without.code, Some(1));
}

/// The scenario of `a_remote_killed_in_the_middle_of_a_prove_leaves_the_proof_intact`, against any remote.
pub(crate) fn killed_mid_prove(sb: &Sandbox, remote: &mut dyn Served) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", remote.url()), &trusted);
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    // Each provider takes a while; nginx dies while they run.
    let execution = ci.join("openspec/changes/share/execution.yaml");
    let text = fs_err::read_to_string(&execution).expect("execution.yaml");
    fs_err::write(&execution, text.replace("echo ", "sleep 1; echo ")).expect("slow down");
    let child = sb
        .proofgraph(&ci)
        .args(["prove", CHANGE, "--json", "--jobs", "1"])
        .env("PROOFGRAPH_CACHE", "local:rw,remote:rw")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start prove");
    std::thread::sleep(Duration::from_millis(1500));
    remote.stop();
    let out = child.wait_with_output().expect("prove ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let doc: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(doc["summary"]["passed"], 3, "{doc}");
    let codes: Vec<&str> = doc["status"]
        .as_array()
        .map(|all| all.iter().filter_map(|d| d["code"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        codes.contains(&"remote_cache_unavailable") || codes.contains(&"remote_upload_failed"),
        "the failed upload is reported: {codes:?}"
    );
    // The receipts are local: status is all passed without the remote.
    let status = sb.run(&ci, &["status", CHANGE, "--json"]);
    assert_eq!(status.code, Some(0), "{}", status.stdout);
}

#[test]
fn a_remote_killed_in_the_middle_of_a_prove_leaves_the_proof_intact() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    killed_mid_prove(&sb, &mut nginx);
}

#[test]
fn a_credential_never_leaves_its_environment_variable() {
    let sb = Sandbox::new();
    let token = "tok-5f3c9a1e-canary-7d2b";
    let nginx = Nginx::start(&sb, Some(token));
    let (secret, trusted) = ci_key(&sb);
    origin(
        &sb,
        &format!(
            "  remote: {}\n  headersFromEnv: {{Authorization: CACHE_AUTH}}\n",
            nginx.url
        ),
        &trusted,
    );
    let bearer = format!("Bearer {token}");
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let run = prove(&sb, &ci, &[CI, ("CACHE_AUTH", bearer.as_str())], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(
        summary(&run, "pushed"),
        3,
        "the token opened the cache: {}",
        run.stdout
    );
    // Without it, and with a wrong one: refused, said so, and the run goes on.
    let laptop = clone(&sb, "laptop");
    let without = prove(&sb, &laptop, &[], &[]);
    assert_eq!(without.code, Some(0));
    assert_emits!(without.status_codes(), "remote_cache_refused");
    let wrong = prove(
        &sb,
        &clone(&sb, "wrong"),
        &[("CACHE_AUTH", "Bearer tok-wrong-value-0000000")],
        &[],
    );
    assert_emits!(wrong.status_codes(), "remote_cache_refused");
    let with = prove(
        &sb,
        &clone(&sb, "with"),
        &[("CACHE_AUTH", bearer.as_str())],
        &[],
    );
    assert_eq!(summary(&with, "pulled"), 3, "{}", with.stdout);
    // Nowhere: not in any output, not in any file of any store.
    for run in [&run, &without, &wrong, &with] {
        assert!(!run.stdout.contains(token) && !run.stderr.contains(token));
    }
    let mut stack = vec![sb.path()];
    while let Some(dir) = stack.pop() {
        for entry in fs_err::read_dir(&dir).expect("read").flatten() {
            let path = entry.path();
            if path.starts_with(sb.path().join("nginx")) || path.ends_with(".git") {
                continue;
            }
            let meta = fs_err::symlink_metadata(&path).expect("stat");
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let bytes = fs_err::read(&path).unwrap_or_default();
                assert!(
                    !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                    "the token is in {}",
                    path.display()
                );
            }
        }
    }
}

/// The scenario of `three_shards_share_one_remote_and_a_fourth_clone_runs_nothing`, against any remote.
pub(crate) fn three_shards(sb: &Sandbox, remote: &mut dyn Served) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", remote.url()), &trusted);
    for i in 1..=3 {
        let shard = clone(sb, &format!("shard{i}"));
        install(&secret, &shard);
        let run = prove(sb, &shard, &[CI], &["--shard", &format!("{i}/3")]);
        assert_eq!(run.code, Some(0), "shard {i}: {}", run.stdout);
    }
    let log = sb.home_channel("runs.log").read();
    let mut ran: Vec<&str> = log.lines().collect();
    ran.sort_unstable();
    assert_eq!(ran, ["integration", "lint", "unit"], "each exactly once");
    let fourth = clone(sb, "fourth");
    let status = sb.run(&fourth, &["status", CHANGE, "--json"]);
    assert_eq!(status.code, Some(0), "{}", status.stdout);
    assert_eq!(status.json()["summary"]["passed"], 3, "{}", status.stdout);
    let run = prove(sb, &fourth, &[], &[]);
    assert_eq!(run.code, Some(0));
    assert_eq!(runs(sb), 3, "the fourth clone ran nothing");
}

#[test]
fn three_shards_share_one_remote_and_a_fourth_clone_runs_nothing() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    three_shards(&sb, &mut nginx);
}

#[test]
fn a_cache_that_refuses_writes_or_a_header_that_cannot_be_sent_is_said_and_changes_nothing() {
    let sb = Sandbox::new();
    let nginx = Nginx::start_read_only(&sb);
    let (secret, trusted) = ci_key(&sb);
    origin(
        &sb,
        &format!(
            "  remote: {}\n  headersFromEnv: {{Authorization: CACHE_AUTH}}\n",
            nginx.url
        ),
        &trusted,
    );
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let run = prove(
        &sb,
        &ci,
        &[CI, ("CACHE_AUTH", "Bearer a-long-enough-token")],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(summary(&run, "pushed"), 0);
    assert_eq!(summary(&run, "push_failed"), 3);
    assert_emits!(run.status_codes(), "remote_upload_failed");
    // A credential with a line break cannot be a header: the remote is not used at all.
    let other = clone(&sb, "other");
    let run = prove(
        &sb,
        &other,
        &[("CACHE_AUTH", "Bearer one\ntwo-three-four")],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_emits!(run.status_codes(), "remote_cache_unsupported");
    assert!(!run.stdout.contains("two-three-four") && !run.stderr.contains("two-three-four"));
}

#[test]
fn cache_push_uploads_what_a_laptop_proved_and_cache_pull_fetches_it() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let (secret, trusted) = ci_key(&sb);
    origin(&sb, &format!("  remote: {}\n", nginx.url), &trusted);
    let a = clone(&sb, "a");
    install(&secret, &a);
    // The default policy reads the remote: proving pushes nothing.
    let run = prove(&sb, &a, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(summary(&run, "pushed"), 0);
    let push = sb.run(&a, &["cache", "push", CHANGE, "--json"]);
    assert_eq!(push.code, Some(0), "{}", push.stdout);
    assert_eq!(push.json()["pushed"], 3, "{}", push.stdout);
    assert!(push.json()["uploaded_blobs"].as_u64().unwrap_or(0) >= 3);
    // Pushing again sends no blob: the remote has them.
    let again = sb.run(&a, &["cache", "push", CHANGE, "--json"]);
    assert_eq!(again.json()["uploaded_blobs"], 0, "{}", again.stdout);
    let b = clone(&sb, "b");
    let pull = sb.run_with_env(
        &b,
        &["cache", "pull", CHANGE, "--json"],
        &[("PROOFGRAPH_CACHE", "local:rw,remote:off")],
    );
    assert_eq!(pull.code, Some(0), "asking is reading: {}", pull.stdout);
    assert_eq!(
        pull.json()["pulled"].as_array().map(Vec::len),
        Some(3),
        "{}",
        pull.stdout
    );
    let status = sb.run_with_env(
        &b,
        &["status", CHANGE, "--json"],
        &[("PROOFGRAPH_CACHE", "local:rw,remote:off")],
    );
    assert_eq!(status.code, Some(0), "{}", status.stdout);
    assert_eq!(runs(&sb), 3, "nothing ran in `b`");
    let stats = sb.run(&b, &["cache", "stats", "--json"]);
    assert_eq!(stats.code, Some(0));
    assert_eq!(stats.json()["local"]["receipts"], 3, "{}", stats.stdout);
    assert_eq!(stats.json()["remote"], nginx.url.as_str());
}

/// A run's receipts are uploaded while it goes on (by the upload thread, in the
/// invocation's one runtime, whose workers move the uploads on while the run's loop blocks
/// its own thread), not once it ends: `integration` waits until nginx has taken the
/// entries of the two receipts written before it.
#[test]
fn a_run_uploads_its_receipts_while_it_goes_on() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let (secret, trusted) = ci_key(&sb);
    origin(&sb, &format!("  remote: {}\n", nginx.url), &trusted);
    let go = sb.channel("go");
    sb.write(
        "openspec/changes/share/execution.yaml",
        format!(
            "version: 1\nproviders:\n  unit:\n    adapter: command\n    capability: unit\n    command: [sh, -c, \"exit 0 # unit\"]\n  lint:\n    adapter: command\n    capability: lint\n    command: [sh, -c, \"exit 0 # lint\"]\n  integration:\n    adapter: command\n    capability: integration\n    command: [sh, -c, \"read -r go < {}\"]\n",
            go.env()
        ),
    );
    git_commit_all(&sb.work());
    let a = clone(&sb, "a");
    install(&secret, &a);
    let crate::support::Captured { mut child, output } = crate::support::Captured::spawn(
        sb.proofgraph(&a)
            .args(["prove", CHANGE, "--json", "--jobs", "2"])
            .env(CI.0, CI.1),
    );
    let log = nginx.dir.join("logs/access.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut uploaded_meanwhile = false;
    while Instant::now() < deadline {
        let text = fs_err::read_to_string(&log).unwrap_or_default();
        if text
            .lines()
            .filter(|l| l.contains("PUT /cache/ac/"))
            .count()
            >= 2
        {
            uploaded_meanwhile = true;
            break;
        }
        if child.try_wait().expect("wait for prove").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    go.send("go");
    let status = child.wait().expect("prove ends");
    let run = output.into_run(status);
    assert!(
        uploaded_meanwhile,
        "two entries were not uploaded while `integration` ran\n{}\n{}",
        run.stdout, run.stderr
    );
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(summary(&run, "pushed"), 3, "{}", run.stdout);
}

#[test]
fn plan_says_which_receipts_come_from_the_remote() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let (secret, trusted) = ci_key(&sb);
    origin(&sb, &format!("  remote: {}\n", nginx.url), &trusted);
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    assert_eq!(prove(&sb, &ci, &[CI], &[]).code, Some(0));
    let laptop = clone(&sb, "laptop");
    let plan = sb.run(&laptop, &["plan", CHANGE, "--json"]);
    assert_eq!(plan.code, Some(0), "{}", plan.stdout);
    let nodes = plan.json()["nodes"].clone();
    let providers: Vec<&Value> = nodes
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["action"].is_string())
        .collect();
    assert_eq!(providers.len(), 3, "{nodes}");
    for p in providers {
        assert_eq!(p["action"], "reuse", "{p}");
        let reason = p["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("remote receipt ") && !reason.contains("reuse"),
            "{p}"
        );
    }
    // Local receipts say nothing of the kind.
    let again = sb.run(&laptop, &["plan", CHANGE, "--json"]);
    let reasons: Vec<Value> = again.json()["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["action"] == "reuse")
        .map(|n| n["reason"].clone())
        .collect();
    assert!(reasons.iter().all(Value::is_null), "{reasons:?}");
}

/// The origin with a branch `feature` (one edit of `src/lib.sh`) besides `main`, and CI's
/// clone of it on that branch, with the CI key installed.
fn ci_on_a_branch(sb: &Sandbox, nginx: &Nginx) -> PathBuf {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", nginx.url), &trusted);
    git(&sb.work(), &["checkout", "-q", "-b", "feature"]);
    fs_err::write(sb.work().join("src/lib.sh"), "echo 43\n").expect("edit");
    git(&sb.work(), &["commit", "-qam", "feature"]);
    git(&sb.work(), &["checkout", "-q", "main"]);
    let ci = clone(sb, "ci");
    git(&ci, &["checkout", "-q", "feature"]);
    install(&secret, &ci);
    ci
}

/// `plan --base --head` resolves the head's evidence in the remote cache too: CI proved a
/// branch and pushed; a laptop on `main` that never checked the branch out sees every
/// requirement at its head passed, and no local receipt was needed.
#[test]
fn the_plan_of_a_diff_finds_the_heads_receipts_in_the_remote() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let ci = ci_on_a_branch(&sb, &nginx);
    assert_eq!(prove(&sb, &ci, &[CI], &[]).code, Some(0));
    let laptop = clone(&sb, "laptop");
    let run = sb.run(
        &laptop,
        &[
            "plan",
            CHANGE,
            "--base",
            "main",
            "--head",
            "origin/feature",
            "--json",
        ],
    );
    let doc = run.json();
    assert_eq!(run.code, Some(0), "{doc:#}");
    assert_eq!(doc["summary"]["changed_paths"], 1, "{doc:#}");
    assert_eq!(doc["summary"]["affected_providers"], 3, "{doc:#}");
    assert_eq!(doc["summary"]["passed"], 3, "{doc:#}");
    for p in doc["providers"].as_array().expect("providers") {
        assert_eq!(p["status"], "passed", "{doc:#}");
        assert!(p["receipt"].is_string(), "{doc:#}");
    }
    assert_eq!(runs(&sb), 3, "only CI ran anything");
}

/// The receipt of `provider` in a prove's JSON document.
fn receipt_sha(run: &Run, provider: &str) -> String {
    run.json()["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["provider"] == provider)
        .and_then(|p| p["receipts"][0]["sha256"].as_str())
        .unwrap_or_else(|| panic!("no receipt of `{provider}`: {}", run.stdout))
        .to_owned()
}

/// A receipt CI proved and pushed reruns on a laptop that never had its input trees (a
/// clone fetches no `refs/proofgraph/inputs/`): the tree is rebuilt from the commit the
/// receipt names, checked by its id, and kept. A receipt whose commit the laptop lacks, or
/// whose run bound an uncommitted edit, is refused naming the commit or the file — and the
/// first reruns once the commit is fetched.
#[test]
fn a_receipt_ci_pushed_reruns_on_a_laptop_from_the_commit_it_names() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let ci = ci_on_a_branch(&sb, &nginx);
    let proved = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(proved.code, Some(0), "{}", proved.stdout);
    let sha = receipt_sha(&proved, "unit");
    assert_eq!(runs(&sb), 3);

    // The laptop pulls the branch's receipts, then moves on to `main`.
    let laptop = clone(&sb, "laptop");
    git(&laptop, &["checkout", "-q", "feature"]);
    let pull = sb.run(&laptop, &["cache", "pull", CHANGE, "--json"]);
    assert_eq!(pull.code, Some(0), "{}", pull.stdout);
    git(&laptop, &["checkout", "-q", "main"]);
    assert!(input_refs(&laptop).is_empty(), "a clone has no input trees");
    let rerun = sb.run(&laptop, &["rerun", &sha, "--json"]);
    assert_eq!(rerun.code, Some(0), "{}\n{}", rerun.stdout, rerun.stderr);
    assert_eq!(rerun.json()["verdict"], "reproduced", "{}", rerun.stdout);
    assert_eq!(runs(&sb), 4, "the rerun ran the provider once");
    let kept = input_refs(&laptop);
    assert_eq!(kept.len(), 1, "the rebuilt tree is kept: {kept:?}");
    // The rebuilt tree holds the branch's file, not the checkout's.
    let tree = kept[0].trim_start_matches("refs/proofgraph/inputs/");
    assert_eq!(
        git(&laptop, &["show", &format!("{tree}:src/lib.sh")]),
        "echo 43\n"
    );

    // CI proves a commit it never pushed: the laptop, with the same files in its working
    // tree (so it pulls that receipt), lacks the commit to rebuild them from.
    fs_err::write(ci.join("src/lib.sh"), "echo 44\n").expect("edit");
    git(&ci, &["commit", "-qam", "not pushed yet"]);
    let commit = git(&ci, &["rev-parse", "HEAD"]).trim().to_owned();
    let proved = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(proved.code, Some(0), "{}", proved.stdout);
    let sha = receipt_sha(&proved, "unit");
    fs_err::write(laptop.join("src/lib.sh"), "echo 44\n").expect("edit");
    let pull = sb.run(&laptop, &["cache", "pull", CHANGE, "--json"]);
    assert_eq!(pull.code, Some(0), "{}", pull.stdout);
    let refused = sb.run(&laptop, &["rerun", &sha, "--json"]);
    assert_eq!(refused.code, Some(3), "{}", refused.stdout);
    let message = rebuild_refusal(&refused);
    assert!(
        message.contains(&format!("{commit}, is not in this repository")),
        "{message}"
    );
    let ran = runs(&sb);
    // Once the commit is fetched, it reruns.
    git(&ci, &["push", "-q", "origin", "HEAD:refs/heads/ci-only"]);
    git(&laptop, &["fetch", "-q", "origin", "ci-only"]);
    let rerun = sb.run(&laptop, &["rerun", &sha, "--json"]);
    assert_eq!(rerun.code, Some(0), "{}\n{}", rerun.stdout, rerun.stderr);
    assert_eq!(runs(&sb), ran + 1);

    // A run that bound an uncommitted edit can only be rerun where it ran.
    fs_err::write(ci.join("src/lib.sh"), "echo 45\n").expect("edit");
    let proved = prove(&sb, &ci, &[CI], &[]);
    assert_eq!(proved.code, Some(0), "{}", proved.stdout);
    let sha = receipt_sha(&proved, "unit");
    fs_err::write(laptop.join("src/lib.sh"), "echo 45\n").expect("edit");
    let pull = sb.run(&laptop, &["cache", "pull", CHANGE, "--json"]);
    assert_eq!(pull.code, Some(0), "{}", pull.stdout);
    let refused = sb.run(&laptop, &["rerun", &sha, "--json"]);
    assert_eq!(refused.code, Some(3), "{}", refused.stdout);
    let message = rebuild_refusal(&refused);
    let head = git(&ci, &["rev-parse", "HEAD"]).trim().to_owned();
    assert!(
        message.contains(&format!(
            "`src/lib.sh` in {head} is not the version the run bound"
        )),
        "{message}"
    );
}

/// The message of the one `inputs_not_rebuildable` a refused rerun gives.
fn rebuild_refusal(run: &Run) -> String {
    assert_emits!(run.json(), "inputs_not_rebuildable");
    run.json()["status"]
        .as_array()
        .expect("status")
        .iter()
        .find(|d| d["code"] == "inputs_not_rebuildable")
        .and_then(|d| d["message"].as_str())
        .expect("a message")
        .to_owned()
}

/// A TLS cache (`https://`, `grpcs://`) is trusted through the machine's roots only; a
/// machine that trusts its CA — here as OpenSSL lets one, `SSL_CERT_FILE`, which rustls reads
/// as curl and git do — pushes and reuses through it; one that does not is refused with a
/// warning naming the certificate, and proves locally with the same exit code.
pub(crate) fn tls_with_a_trusted_root(sb: &Sandbox, url: &str, ca: &Path) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {url}\n"), &trusted);
    let roots = ("SSL_CERT_FILE", ca.to_str().expect("utf-8"));
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let run = prove(sb, &ci, &[CI, roots], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary(&run, "pushed"), 3, "{}", run.stdout);
    assert_eq!(runs(sb), 3);

    // A laptop that trusts the CA reuses everything.
    let laptop = clone(sb, "laptop");
    let run = prove(sb, &laptop, &[roots], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary(&run, "pulled"), 3, "{}", run.stdout);
    assert_eq!(runs(sb), 3, "nothing ran again");

    // One that does not: the certificate is named, nothing is believed, the proof stands.
    let untrusting = clone(sb, "untrusting");
    let run = prove(sb, &untrusting, &[], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary(&run, "pulled"), 0, "{}", run.stdout);
    assert_eq!(runs(sb), 6, "it proved locally");
    let doc = run.json();
    let warning = doc["status"]
        .as_array()
        .expect("status")
        .iter()
        .find(|d| d["code"] == "remote_cache_unavailable")
        .unwrap_or_else(|| panic!("a warning: {doc:#}"));
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.to_lowercase().contains("certificate")),
        "{warning:#}"
    );
}

#[test]
fn https_to_a_cache_whose_root_the_machine_trusts_carries_receipts() {
    let sb = Sandbox::new();
    let nginx = Nginx::start_tls(&sb);
    assert!(nginx.url.starts_with("https://"), "{}", nginx.url);
    tls_with_a_trusted_root(&sb, &nginx.url, &nginx.ca_file());
}

/// A pass made in place (`--sandbox none`) never leaves the machine: not while proving with
/// a writable remote, not by `cache push`; a fresh clone finds nothing and runs everything.
#[test]
fn a_pass_made_in_place_is_never_pushed() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let (secret, trusted) = ci_key(&sb);
    origin(&sb, &format!("  remote: {}\n", nginx.url), &trusted);
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let run = prove(&sb, &ci, &[CI], &["--sandbox", "none"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(runs(&sb), 3);
    assert_eq!(summary(&run, "pushed"), 0, "{}", run.stdout);
    let push = sb.run_with_env(&ci, &["cache", "push", CHANGE, "--json"], &[CI]);
    assert_eq!(push.code, Some(0), "{}", push.stdout);
    assert_eq!(push.json()["pushed"], 0, "{}", push.stdout);
    assert_eq!(push.json()["uploaded_blobs"], 0, "{}", push.stdout);
    let laptop = clone(&sb, "laptop");
    let run = prove(&sb, &laptop, &[], &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 0, "{}", run.stdout);
    assert_eq!(runs(&sb), 6, "everything ran on the laptop");
}
