//! The remote cache a command uses, if any: `cache.remote` of `proofgraph.yaml`, with the
//! policy from `--cache`, else `PROOFGRAPH_CACHE`, else `cache.policy`, else
//! `local:rw,remote:r` (laptops read what CI wrote; CI says `remote:rw`). Credentials come
//! only from the environment variables `cache.headersFromEnv` names, and their values join
//! the invocation's secrets: nothing it prints holds one. The proxy, if any, is decided here
//! from the proxy variables of the environment the CLI read (`store::remote::proxy`, by
//! curl's rules), and a proxy's credentials join the secrets too.

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::redact::Secrets;
use crate::load::config::catalog::{Cache, CacheAccess, Catalog, parse_policy};
use crate::store::remote::proxy::{self, ProxyEnv, Route};
use crate::store::remote::{RemoteCache, Settings};

use super::context::Context;

/// The environment variable that sets the policy (below `--cache`).
pub const POLICY_VAR: &str = "PROOFGRAPH_CACHE";

/// Who may read and write which tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The local store.
    pub local: CacheAccess,
    /// The remote cache.
    pub remote: CacheAccess,
}

impl Policy {
    /// Whether receipts are pulled from the remote (and kept locally).
    pub fn pulls(&self) -> bool {
        matches!(self.remote, CacheAccess::Read | CacheAccess::ReadWrite)
            && matches!(self.local, CacheAccess::Write | CacheAccess::ReadWrite)
    }

    /// Whether receipts a run writes are pushed.
    pub fn pushes(&self) -> bool {
        matches!(self.remote, CacheAccess::Write | CacheAccess::ReadWrite)
    }
}

/// A remote cache to use, and how.
pub struct Remote {
    /// The cache.
    pub cache: RemoteCache,
    /// The policy in force.
    pub policy: Policy,
    /// Straight to it, or through which proxy, and why.
    pub route: Route,
}

/// The proxy variables of the environment the CLI read.
pub fn proxy_env(ctx: &Context) -> ProxyEnv {
    ProxyEnv::from_lookup(|name| {
        ctx.env()
            .var(name)
            .map(|v| v.to_string_lossy().into_owned())
    })
}

fn access(a: Option<CacheAccess>, default: CacheAccess) -> CacheAccess {
    a.unwrap_or(default)
}

/// The policy in force: `flag`, else the environment, else the catalog's, else the
/// default. A policy that does not parse is an error.
fn policy(ctx: &Context, cache: &Cache, flag: Option<&str>) -> Result<Policy, Diagnostic> {
    let env = ctx
        .env()
        .vars
        .get(std::ffi::OsStr::new(POLICY_VAR))
        .map(|v| v.to_string_lossy().into_owned());
    let (text, source) = match (flag, env) {
        (Some(f), _) => (f.to_owned(), "--cache"),
        (None, Some(e)) => (e, POLICY_VAR),
        (None, None) => {
            return Ok(Policy {
                local: cache.local_access,
                remote: cache.remote_access,
            });
        }
    };
    let (local, remote) = parse_policy(&text).map_err(|problem| {
        Diagnostic::error(
            Code::InvalidValue,
            format!("the cache policy `{text}` of {source}: {problem}"),
        )
        .surface("cache.policy")
        .fix("Write the policy as `local:rw,remote:r` (tiers `local`/`remote`; access `rw`, `r`, `w` or `off`).")
    })?;
    Ok(Policy {
        local: access(local, CacheAccess::ReadWrite),
        remote: access(remote, CacheAccess::Read),
    })
}

/// The remote cache `catalog` configures, with the policy in force (`flag`: `--cache`).
/// `Ok(None)`: none is configured, or the policy leaves it off. Warnings (a credential
/// variable that is not set) go to `notes`.
pub fn open(
    ctx: &Context,
    catalog: Option<&Catalog>,
    flag: Option<&str>,
    notes: &mut Vec<Diagnostic>,
) -> Result<Option<Remote>, Diagnostic> {
    let Some(cache) = catalog.and_then(|c| c.cache.as_ref()) else {
        if let Some(flag) = flag {
            // Still check what was given, so a typo is not silently ignored.
            parse_policy(flag).map_err(|problem| {
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("the cache policy `{flag}` of --cache: {problem}"),
                )
                .surface("cache.policy")
                .fix("Write the policy as `local:rw,remote:r`.")
            })?;
        }
        return Ok(None);
    };
    let policy = policy(ctx, cache, flag)?;
    let Some(url) = &cache.remote else {
        return Ok(None);
    };
    if policy.remote == CacheAccess::Off {
        return Ok(None);
    }
    let mut settings = Settings::new(&url.value);
    if let Some(ms) = &cache.connect_timeout_ms {
        settings.connect_timeout = std::time::Duration::from_millis(ms.value);
    }
    if let Some(ms) = &cache.timeout_ms {
        settings.timeout = std::time::Duration::from_millis(ms.value);
    }
    if let Some(rate) = &cache.min_bytes_per_second {
        settings.min_bytes_per_second = rate.value;
    }
    let mut secrets = Vec::new();
    for (header, var) in &cache.headers_from_env {
        match ctx.env().vars.get(std::ffi::OsStr::new(var.value.as_str())) {
            Some(value) if !value.is_empty() => {
                let value = value.to_string_lossy().into_owned();
                secrets.push(value.clone().into_bytes());
                settings.headers.push((header.value.clone(), value));
            }
            _ => notes.push(
                Diagnostic::warning(
                    Code::RemoteCacheRefused,
                    format!(
                        "`{}` (the `{}` header of the remote cache) is not set; requests go without it",
                        var.value, header.value
                    ),
                )
                .surface("cache.headersFromEnv")
                .fix(format!("Export `{}` with the credential (in CI, from a secret).", var.value)),
            ),
        }
    }
    // The URL parsed when the catalog was loaded; one that does not is refused by `open`.
    if let Ok(target) = url::Url::parse(&url.value) {
        match proxy::route(&proxy_env(ctx), &target) {
            Ok(route) => {
                if let Some(proxy) = route.proxy() {
                    secrets.extend(proxy.secrets());
                }
                settings.route = route;
            }
            Err(problem) => {
                notes.push(
                    Diagnostic::warning(
                        Code::RemoteProxyInvalid,
                        format!(
                            "the remote cache {} is not used: {problem}",
                            url.value
                        ),
                    )
                    .surface("cache.remote")
                    .fix(format!(
                        "Set `{}` to an HTTP proxy (`http://[user:password@]host:port`), unset it, or list the cache's host in `NO_PROXY`.",
                        problem.variable
                    )),
                );
                ctx.remember_secrets(&Secrets::new(secrets));
                return Ok(None);
            }
        }
    }
    ctx.remember_secrets(&Secrets::new(secrets));
    let route = settings.route.clone();
    match RemoteCache::open(&settings) {
        Ok(cache) => Ok(Some(Remote {
            cache,
            policy,
            route,
        })),
        Err(e) => {
            notes.push(crate::proof::travel::diagnostic(&e, "be used", "remote"));
            Ok(None)
        }
    }
}
