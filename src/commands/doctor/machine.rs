//! What `doctor` checks beyond the OpenSpec root: whether this machine can
//! isolate runs, the state of the proof store and its keys, and whether a
//! configured remote cache answers. Nothing here creates the store.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use proofgraph_sandbox::{Isolation, IsolationRequest, Run, RunConfig};
use serde::Serialize;

use crate::attest::keys;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::paths::lossy_path;
use crate::load::workspace::Workspace;

/// Whether runs can be isolated here.
#[derive(Debug, Clone, Serialize)]
pub struct IsolationHealth {
    /// Private network, mount and PID namespaces are available.
    pub available: bool,
    /// A user namespace is needed for them (not root).
    pub user_namespace: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Starts (and stops) an empty run with `--isolation auto` to see what the
/// system allows, exactly as `prove` would.
pub fn isolation(findings: &mut Vec<Diagnostic>) -> IsolationHealth {
    let started = Run::start(&RunConfig::current_exe(IsolationRequest::Auto));
    let health = match started {
        Ok((run, isolation)) => {
            let _ = run.shutdown();
            match isolation {
                Isolation::Namespaces { user_namespace } => IsolationHealth {
                    available: true,
                    user_namespace,
                    reason: None,
                },
                Isolation::None { reason } => IsolationHealth {
                    available: false,
                    user_namespace: false,
                    reason: Some(reason),
                },
            }
        }
        Err(e) => IsolationHealth {
            available: false,
            user_namespace: false,
            reason: Some(format!("the run's init could not start: {e}")),
        },
    };
    if let Some(reason) = &health.reason {
        findings.push(
            Diagnostic::warning(
                Code::IsolationUnavailable,
                format!("runs cannot be isolated here ({reason}): `prove` will share the host's network, PIDs and /tmp and record `isolation: none`"),
            )
            .surface("doctor.isolation")
            .fix("Run as root, or allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu also `kernel.apparmor_restrict_unprivileged_userns=0`)."),
        );
    }
    health
}

/// A key the workspace trusts.
#[derive(Debug, Clone, Serialize)]
pub struct KeyHealth {
    /// Its name (`workspace` for the store's own).
    pub name: String,
    /// Its id, `sha256:<hex of the SPKI DER>`, when it reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyid: Option<String>,
}

/// The proof store under `.proofgraph/`.
#[derive(Debug, Clone, Serialize)]
pub struct ProofStoreHealth {
    /// Where it is.
    #[serde(serialize_with = "lossy_path")]
    pub path: std::path::PathBuf,
    /// Whether it exists yet (the first `prove` creates it).
    pub exists: bool,
    /// How many receipts refs point at (latest per change, receipt and capability).
    pub receipts: usize,
    /// The workspace's signing key, when it exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_key: Option<KeyHealth>,
    /// Whether the store's key is trusted: pinned (by the user's pin or a
    /// `trustedKeys` entry), a mismatch with its pin, unpinned, absent or unreadable.
    pub trust: crate::proof::trust::KeyReport,
    /// The `trustedKeys` of `proofgraph.yaml`.
    pub trusted_keys: Vec<KeyHealth>,
    /// Whether a `proofgraph watch` answers for this workspace (commands then
    /// read snapshots from it instead of an lstat per tracked file).
    pub watcher: bool,
}

fn count_files(dir: &Path) -> usize {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() { count_files(&path) } else { 1 }
        })
        .sum()
}

/// Reads the store's state and the pin of its key without creating anything.
pub fn proof_store(
    workspace: &Workspace,
    pins: &crate::proof::trust::Pins,
    findings: &mut Vec<Diagnostic>,
) -> ProofStoreHealth {
    let dir = workspace.root.join(crate::store::DIR);
    let exists = dir.is_dir();
    let inspection =
        crate::proof::trust::inspect(pins, &workspace.root, workspace.catalog.as_ref());
    findings.extend(inspection.diagnostic());
    let private = dir.join("keys/workspace.key");
    if let Ok(meta) = fs_err::metadata(&private) {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            findings.push(
                Diagnostic::warning(
                    Code::SigningKeyExposed,
                    format!("the workspace's signing key is readable by others (mode {mode:o}): anyone who can read it can forge receipts"),
                )
                .surface(".proofgraph/keys/workspace.key")
                .fix("Run `chmod 600 .proofgraph/keys/workspace.key`, or delete the keys directory to make a new key (existing receipts then need a rerun)."),
            );
        }
    }
    if exists {
        let marker = fs_err::read_to_string(dir.join("store.json")).unwrap_or_default();
        let version = serde_json::from_str::<serde_json::Value>(&marker)
            .ok()
            .and_then(|v| v["version"].as_u64());
        if version.is_some_and(|v| v != crate::store::VERSION) {
            findings.push(
                Diagnostic::error(
                    Code::StoreUnusable,
                    format!(
                        "`.proofgraph/` was written by a proofgraph with store version {}, this one reads {}",
                        version.unwrap_or_default(),
                        crate::store::VERSION
                    ),
                )
                .surface(".proofgraph")
                .fix("Use the proofgraph that wrote it, or move `.proofgraph/` aside to start a new store."),
            );
        }
    }
    let trusted_keys = workspace
        .catalog
        .iter()
        .flat_map(|c| &c.trusted_keys)
        .map(|k| KeyHealth {
            name: k.name.value.clone(),
            keyid: keys::public_key_from_pem(&k.public_key.value)
                .ok()
                .map(|key| keys::key_id(&key)),
        })
        .collect();
    ProofStoreHealth {
        receipts: count_files(&dir.join("refs")),
        signing_key: inspection.public.map(|key| KeyHealth {
            name: "workspace".to_owned(),
            keyid: Some(keys::key_id(&key)),
        }),
        trust: inspection.report(),
        trusted_keys,
        watcher: crate::observe::watch::is_served(&dir.join(crate::observe::watch::SOCKET)),
        path: dir,
        exists,
    }
}

/// The remote cache named in `proofgraph.yaml`.
#[derive(Debug, Clone, Serialize)]
pub struct CacheHealth {
    /// The base URL.
    pub remote: String,
    /// Whether an HTTP server answered a `HEAD` of the base URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
    /// The status line or the error.
    pub detail: String,
    /// Whether `prove` shares receipts through it. Always `false` in this
    /// version: receipts stay in `.proofgraph/` (the cache commands are planned).
    pub used: bool,
}

/// Checks the remote cache when one is configured.
pub fn cache(workspace: &Workspace, findings: &mut Vec<Diagnostic>) -> Option<CacheHealth> {
    let remote = workspace
        .catalog
        .as_ref()?
        .cache
        .as_ref()?
        .remote
        .as_ref()?;
    let (reachable, detail) = match head(&remote.value) {
        Ok(status) => (Some(true), status),
        Err(Unchecked(why)) => (None, why),
        Err(Unreachable(why)) => {
            findings.push(
                Diagnostic::warning(
                    Code::CacheUnreachable,
                    format!("the remote cache `{}` does not answer: {why}", remote.value),
                )
                .at(crate::load::config::catalog::FILE_NAME, remote.pos)
                .fix("Start the cache server or correct `cache.remote` in proofgraph.yaml."),
            );
            (Some(false), why)
        }
    };
    findings.push(
        Diagnostic::info(
            Code::CacheNotUsed,
            "this proofgraph does not yet push or pull receipts through the remote cache; receipts stay in `.proofgraph/`",
        )
        .at(crate::load::config::catalog::FILE_NAME, remote.pos),
    );
    Some(CacheHealth {
        remote: remote.value.clone(),
        reachable,
        detail,
        used: false,
    })
}

enum HeadError {
    Unchecked(String),
    Unreachable(String),
}
use HeadError::{Unchecked, Unreachable};

/// `HEAD <url>` over plain HTTP/1.1 with short timeouts; the status line. The URL is read
/// by the `url` crate and the answer by `httparse`.
fn head(text: &str) -> Result<String, HeadError> {
    let url = url::Url::parse(text)
        .ok()
        .filter(|u| u.scheme() == "http" && u.host_str().is_some())
        .ok_or_else(|| Unchecked("only http:// URLs are checked for reachability".to_owned()))?;
    let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
    let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let timeout = Duration::from_secs(2);
    let addr = url
        .socket_addrs(|| Some(80))
        .map_err(|e| Unreachable(format!("cannot resolve `{authority}`: {e}")))?
        .into_iter()
        .next()
        .ok_or_else(|| Unreachable(format!("`{authority}` resolves to no address")))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| Unreachable(format!("cannot connect to {addr}: {e}")))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let path = if path.is_empty() { "/" } else { path };
    let request = format!(
        "HEAD {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: proofgraph-doctor\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| Unreachable(format!("cannot send a request: {e}")))?;
    let mut buf = [0u8; 512];
    let n = stream
        .read(&mut buf)
        .map_err(|e| Unreachable(format!("no answer: {e}")))?;
    let text = String::from_utf8_lossy(&buf[..n]);
    let line = text.lines().next().unwrap_or("").trim().to_owned();
    // The status line must parse (the rest of the head may not have arrived in 512 bytes).
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let parsed = response.parse(&buf[..n]);
    match (parsed, response.code) {
        (Ok(_) | Err(httparse::Error::TooManyHeaders), Some(_)) => Ok(line),
        _ => Err(Unreachable(format!("the answer is not HTTP: `{line}`"))),
    }
}
