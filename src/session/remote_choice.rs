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
use proofgraph_graph::EnvName;
use proofgraph_graph::span::Spanned;

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
    let Some(settings) = settings(
        ctx,
        &Endpoint {
            url: &url.value,
            headers_from_env: &cache.headers_from_env,
            connect_timeout_ms: cache.connect_timeout_ms.as_ref(),
            timeout_ms: cache.timeout_ms.as_ref(),
            min_bytes_per_second: cache.min_bytes_per_second.as_ref(),
        },
        Served::Cache,
        notes,
    ) else {
        return Ok(None);
    };
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

/// A remote as `proofgraph.yaml` describes it (`cache` or `executor`): its URL and how it is
/// reached.
pub struct Endpoint<'a> {
    /// The URL, checked when the catalog was decoded.
    pub url: &'a str,
    /// `headersFromEnv`.
    pub headers_from_env: &'a [(Spanned<String>, Spanned<EnvName>)],
    /// `connectTimeoutMs`.
    pub connect_timeout_ms: Option<&'a Spanned<u64>>,
    /// `timeoutMs`.
    pub timeout_ms: Option<&'a Spanned<u64>>,
    /// `minBytesPerSecond`.
    pub min_bytes_per_second: Option<&'a Spanned<u64>>,
}

/// Which remote an [`Endpoint`] is, for the words and places of its warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The remote cache (`cache`).
    Cache,
    /// The remote executor (`executor`).
    Executor,
}

impl Served {
    fn noun(self) -> &'static str {
        match self {
            Served::Cache => "remote cache",
            Served::Executor => "remote executor",
        }
    }

    fn section(self) -> &'static str {
        match self {
            Served::Cache => "cache",
            Served::Executor => "executor",
        }
    }
}

/// The settings a client reaches `endpoint` with, by one set of rules for the cache and
/// the executor: its deadlines, each header's value read from the variable
/// `headersFromEnv` names (one not set is a warning, `remote_cache_refused`, and the
/// requests go without it), and the proxy decided from the environment the CLI read.
/// Header values and a proxy's credentials join the invocation's secrets. `None`, with a
/// warning (`remote_proxy_invalid`), when a proxy variable names no usable proxy.
pub fn settings(
    ctx: &Context,
    endpoint: &Endpoint<'_>,
    served: Served,
    notes: &mut Vec<Diagnostic>,
) -> Option<Settings> {
    let mut settings = Settings::new(endpoint.url);
    if let Some(ms) = endpoint.connect_timeout_ms {
        settings.connect_timeout = std::time::Duration::from_millis(ms.value);
    }
    if let Some(ms) = endpoint.timeout_ms {
        settings.timeout = std::time::Duration::from_millis(ms.value);
    }
    if let Some(rate) = endpoint.min_bytes_per_second {
        settings.min_bytes_per_second = rate.value;
    }
    let mut secrets = Vec::new();
    for (header, var) in endpoint.headers_from_env {
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
                        "`{}` (the `{}` header of the {}) is not set; requests go without it",
                        var.value,
                        header.value,
                        served.noun()
                    ),
                )
                .surface(&format!("{}.headersFromEnv", served.section()))
                .fix(format!(
                    "Export `{}` with the credential (in CI, from a secret).",
                    var.value
                )),
            ),
        }
    }
    // The URL parsed when the catalog was loaded; one that does not is refused by `open`.
    if let Ok(target) = url::Url::parse(endpoint.url) {
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
                            "the {} {} is not used: {problem}",
                            served.noun(),
                            endpoint.url
                        ),
                    )
                    .surface(&format!("{}.remote", served.section()))
                    .fix(format!(
                        "Set `{}` to an HTTP proxy (`http://[user:password@]host:port`), unset it, or list the {}'s host in `NO_PROXY`.",
                        problem.variable,
                        match served {
                            Served::Cache => "cache",
                            Served::Executor => "engine",
                        }
                    )),
                );
                ctx.remember_secrets(&Secrets::new(secrets));
                return None;
            }
        }
    }
    ctx.remember_secrets(&Secrets::new(secrets));
    Some(settings)
}

/// The settings to reach the workspace's remote executor (`executor:` of
/// `proofgraph.yaml`) with, by the cache's rules ([`settings`]); `None` when none is
/// configured or a proxy variable names no usable proxy (said in `notes`).
pub fn executor_settings(
    ctx: &Context,
    catalog: Option<&Catalog>,
    notes: &mut Vec<Diagnostic>,
) -> Option<Settings> {
    let executor = catalog.and_then(|c| c.executor.as_ref())?;
    settings(
        ctx,
        &Endpoint {
            url: &executor.remote.value,
            headers_from_env: &executor.headers_from_env,
            connect_timeout_ms: executor.connect_timeout_ms.as_ref(),
            timeout_ms: executor.timeout_ms.as_ref(),
            min_bytes_per_second: executor.min_bytes_per_second.as_ref(),
        },
        Served::Executor,
        notes,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use proofgraph_graph::span::Pos;

    use super::*;
    use crate::base::env::Env;
    use crate::load::config::catalog::Executor;

    fn context(vars: &[(&str, &str)]) -> Context {
        let env = Env {
            cwd: PathBuf::from("/"),
            home: PathBuf::from("/home/u"),
            xdg_data_home: None,
            xdg_config_home: None,
            path: None,
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect::<BTreeMap<_, _>>(),
        };
        Context::new(
            env,
            &crate::session::context::Global {
                json: false,
                directory: None,
                store: None,
            },
        )
    }

    fn at<T>(value: T) -> Spanned<T> {
        Spanned::new(value, Pos::default())
    }

    fn catalog(url: &str) -> Catalog {
        Catalog {
            executor: Some(Executor {
                remote: at(url.to_owned()),
                platform: BTreeMap::new(),
                remote_jobs: None,
                headers_from_env: vec![
                    (
                        at("Authorization".to_owned()),
                        at(EnvName::parse("ENGINE_TOKEN").expect("valid")),
                    ),
                    (
                        at("X-Team".to_owned()),
                        at(EnvName::parse("ENGINE_TEAM").expect("valid")),
                    ),
                ],
                connect_timeout_ms: Some(at(1500)),
                timeout_ms: Some(at(6000)),
                min_bytes_per_second: None,
            }),
            ..Catalog::default()
        }
    }

    /// The executor is reached by the cache's rules: its deadlines, its headers from the
    /// environment (a value joins the secrets; a variable not set is a warning naming the
    /// executor), the default rate.
    #[test]
    fn the_executor_is_reached_with_the_caches_rules() {
        let ctx = context(&[("ENGINE_TOKEN", "engine-secret-value")]);
        let mut notes = Vec::new();
        let settings = executor_settings(
            &ctx,
            Some(&catalog("grpc://127.0.0.1:50051/main")),
            &mut notes,
        )
        .expect("settings");
        assert_eq!(settings.url, "grpc://127.0.0.1:50051/main");
        assert_eq!(
            settings.headers,
            vec![("Authorization".to_owned(), "engine-secret-value".to_owned())]
        );
        assert_eq!(
            settings.connect_timeout,
            std::time::Duration::from_millis(1500)
        );
        assert_eq!(settings.timeout, std::time::Duration::from_millis(6000));
        assert_eq!(
            settings.min_bytes_per_second,
            crate::store::remote::MIN_BYTES_PER_SECOND
        );
        assert!(settings.route.proxy().is_none());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].code, Code::RemoteCacheRefused);
        assert!(
            notes[0]
                .message
                .contains("`ENGINE_TEAM` (the `X-Team` header of the remote executor)"),
            "{}",
            notes[0].message
        );
        let shown = ctx
            .secrets()
            .redact("token engine-secret-value".to_owned())
            .into_inner();
        assert!(!shown.contains("engine-secret-value"), "{shown}");
        assert!(executor_settings(&ctx, Some(&Catalog::default()), &mut notes).is_none());
        assert!(executor_settings(&ctx, None, &mut notes).is_none());
    }

    /// A proxy variable that names no usable proxy leaves the executor unused, as it does
    /// the cache, and says so of the executor.
    #[test]
    fn an_unusable_proxy_leaves_the_executor_unused() {
        let ctx = context(&[("https_proxy", "socks5://proxy.example:1080")]);
        let mut notes = Vec::new();
        let settings = executor_settings(
            &ctx,
            Some(&catalog("grpcs://engine.example.com:443")),
            &mut notes,
        );
        assert!(settings.is_none());
        let proxy = notes
            .iter()
            .find(|n| n.code == Code::RemoteProxyInvalid)
            .expect("remote_proxy_invalid");
        assert!(
            proxy
                .message
                .starts_with("the remote executor grpcs://engine.example.com:443 is not used"),
            "{}",
            proxy.message
        );
    }
}
