//! What `doctor` checks beyond the OpenSpec root: whether this machine can
//! isolate runs, the state of the proof store and its keys, and whether a
//! configured remote cache answers. Nothing here creates the store.

use std::path::Path;

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

/// The remote cache named in `proofgraph.yaml`, as `doctor` found it.
#[derive(Debug, Clone, Serialize)]
pub struct CacheHealth {
    /// The URL.
    pub remote: String,
    /// `grpc` (the Remote Execution API) or `http` (the Bazel HTTP cache protocol).
    pub protocol: &'static str,
    /// Whether it answered its first call (capabilities; for HTTP, a `HEAD`).
    pub reachable: bool,
    /// How long that call took, in milliseconds.
    pub latency_ms: u64,
    /// The largest batch of blobs it takes in one request, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_bytes: Option<u64>,
    /// Whether it takes action-cache entries from clients.
    pub updates_action_cache: bool,
    /// The policy in force here: which tiers are read and written.
    pub policy: String,
    /// What it answered, or why not.
    pub detail: String,
    /// The proxy it is reached through, or why none.
    pub proxy: ProxyHealth,
}

/// The proxy a remote cache is reached through (docs/remote-cache.md#proxies).
#[derive(Debug, Clone, Serialize)]
pub struct ProxyHealth {
    /// The proxy, its credentials shown as `<redacted>`; `None`: a direct connection.
    pub via: Option<String>,
    /// The variable that named it (or, with no proxy, the one that was set but not used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variable: Option<&'static str>,
    /// Why this route: the variable it came from, or why there is none.
    pub reason: String,
}

impl ProxyHealth {
    fn of(route: &crate::store::remote::proxy::Route) -> Self {
        use crate::store::remote::proxy::{Direct, Route};
        match route {
            Route::Via(proxy) => ProxyHealth {
                via: Some(proxy.to_string()),
                variable: Some(proxy.variable()),
                reason: format!("`{}` names it", proxy.variable()),
            },
            Route::Direct(why) => ProxyHealth {
                via: None,
                variable: match why {
                    Direct::NoProxySet { ignored } => *ignored,
                    Direct::Listed { variable, .. } | Direct::Loopback { variable } => {
                        Some(variable)
                    }
                },
                reason: why.to_string(),
            },
        }
    }
}

/// Checks the remote cache when one is configured: its first call, timed, with the
/// credentials and policy a command would use.
pub fn cache(
    ctx: &crate::session::context::Context,
    workspace: &Workspace,
    findings: &mut Vec<Diagnostic>,
) -> Option<CacheHealth> {
    let catalog = workspace.catalog.as_ref()?;
    let url = catalog.cache.as_ref()?.remote.as_ref()?;
    let protocol = match crate::store::remote::Protocol::of(&url.value) {
        Ok((crate::store::remote::Protocol::Grpc, _)) => "grpc",
        Ok((crate::store::remote::Protocol::Http, _)) => "http",
        // `validate` reports the URL; there is nothing to call.
        Err(_) => return None,
    };
    let mut notes = Vec::new();
    let remote = match crate::session::remote_choice::open(ctx, Some(catalog), None, &mut notes) {
        Ok(Some(remote)) => remote,
        Ok(None) => {
            findings.extend(notes);
            return None;
        }
        Err(d) => {
            findings.push(d);
            return None;
        }
    };
    findings.extend(notes);
    let policy = format!(
        "local:{},remote:{}",
        access(remote.policy.local),
        access(remote.policy.remote)
    );
    let runtime = match ctx.runtime() {
        Ok(runtime) => runtime,
        Err(d) => {
            findings.push(d);
            return None;
        }
    };
    let (answer, took) = crate::proof::travel::check(&runtime, &remote.cache);
    let latency_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    let health = CacheHealth {
        remote: url.value.clone(),
        protocol,
        reachable: answer.is_ok(),
        latency_ms,
        max_batch_bytes: answer.as_ref().ok().and_then(|c| c.max_batch_bytes),
        updates_action_cache: answer.as_ref().is_ok_and(|c| c.updates_action_cache),
        policy,
        proxy: ProxyHealth::of(&remote.route),
        detail: match &answer {
            Ok(_) => format!("answered in {latency_ms} ms"),
            Err(e) => e.to_string(),
        },
    };
    if let Err(e) = answer {
        findings.push(
            crate::proof::travel::diagnostic(&e, "be checked", "remote")
                .at(crate::load::config::catalog::FILE_NAME, url.pos),
        );
    }
    Some(health)
}

fn access(a: crate::load::config::catalog::CacheAccess) -> &'static str {
    use crate::load::config::catalog::CacheAccess;
    match a {
        CacheAccess::ReadWrite => "rw",
        CacheAccess::Read => "r",
        CacheAccess::Write => "w",
        CacheAccess::Off => "off",
    }
}
