//! Which proxy, if any, a remote cache is reached through: the one decision both protocols
//! follow, from the proxy variables' values the CLI read (this module reads no
//! environment), by curl's rules (docs/remote-cache.md#proxies):
//!
//! - `http://` and `grpc://` (plaintext) use `http_proxy`, in lowercase only: a CGI server
//!   turns a request's `Proxy:` header into `HTTP_PROXY`, so curl ignores the uppercase one;
//!   `https://` and `grpcs://` use `https_proxy`, else `HTTPS_PROXY`; either falls back to
//!   `all_proxy`, else `ALL_PROXY`. An empty variable is an unset one.
//! - `no_proxy` (else `NO_PROXY`): `*` alone matches every host; otherwise a list separated
//!   by commas or blanks, each entry matching the host itself or, as a domain, any name
//!   under it (a leading and a trailing dot ignored); for an IP address, an address or a
//!   CIDR range (`10.0.0.0/8`, `fd00::/8`). A port in an entry matches nothing, as in curl.
//! - Unlike curl, a loopback host (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`) never
//!   goes through a proxy — the proxy's loopback is not this machine's — unless the list
//!   holds `<-loopback>` (Chromium's spelling, a host no other tool matches).
//! - A proxy is `[http://][user:password@]host[:port]`, port 1080 when none is given (as
//!   curl); other schemes (`https://`, `socks5://`) are refused rather than ignored.
//!
//! A proxy's credentials never leave [`Proxy`]: [`Proxy`]'s `Display` shows `<redacted>` in
//! their place, and [`Proxy::secrets`] hands them to the invocation's redaction.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The proxy variables a command read, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    vars: Vec<(&'static str, String)>,
}

/// The variables read, in no particular order: `HTTP_PROXY` only to say it is ignored.
pub const PROXY_VARIABLES: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// The token in `NO_PROXY` that sends loopback hosts through the proxy too.
pub const LOOPBACK_TOKEN: &str = "<-loopback>";

impl ProxyEnv {
    /// The variables `lookup` gives a value (the CLI passes its environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        ProxyEnv {
            vars: PROXY_VARIABLES
                .into_iter()
                .filter_map(|name| lookup(name).map(|value| (name, value)))
                .collect(),
        }
    }

    /// A variable's value, `None` when unset or empty (as curl's `curl_getenv`).
    fn get(&self, name: &str) -> Option<(&'static str, &str)> {
        self.vars
            .iter()
            .find(|(n, v)| *n == name && !v.is_empty())
            .map(|(n, v)| (*n, v.as_str()))
    }

    /// The first of `names` that is set.
    fn first(&self, names: &[&str]) -> Option<(&'static str, &str)> {
        names.iter().find_map(|name| self.get(name))
    }
}

/// A proxy to go through: an HTTP forward proxy (`CONNECT` for a tunnel, an absolute URL
/// for a plain `http://` request).
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    host: String,
    port: u16,
    /// The user and password, percent-decoded.
    credentials: Option<(String, String)>,
    /// The variable it came from.
    variable: &'static str,
}

impl Proxy {
    /// The variable that named it.
    pub fn variable(&self) -> &'static str {
        self.variable
    }

    /// `host:port`, as a TCP connection is made to it (an IPv6 address in brackets).
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The user and password (percent-decoded), for `Proxy-Authorization: Basic`.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.credentials
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The URL a client library is given, credentials included (never shown: `Display`
    /// redacts them).
    pub fn url_with_credentials(&self) -> String {
        match &self.credentials {
            None => format!("http://{}", self.authority()),
            Some((user, password)) => {
                let enc = |s: &str| {
                    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
                        .to_string()
                };
                format!(
                    "http://{}:{}@{}",
                    enc(user),
                    enc(password),
                    self.authority()
                )
            }
        }
    }

    /// What no message may hold: the password, and `user:password` (whose base64 is the
    /// `Proxy-Authorization` header; the redactor also finds base64 forms).
    pub fn secrets(&self) -> Vec<Vec<u8>> {
        match &self.credentials {
            None => Vec::new(),
            Some((user, password)) => vec![
                password.clone().into_bytes(),
                format!("{user}:{password}").into_bytes(),
            ],
        }
    }
}

impl std::fmt::Display for Proxy {
    /// `http://host:port`, `http://<redacted>@host:port` when it has credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let auth = if self.credentials.is_some() {
            "<redacted>@"
        } else {
            ""
        };
        write!(f, "http://{auth}{}", self.authority())
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Proxy({self} from {})", self.variable)
    }
}

/// Why a host is reached without a proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Direct {
    /// No variable names a proxy for this scheme. `ignored`: `HTTP_PROXY` was set, and is
    /// not read for `http://` (curl reads only `http_proxy`).
    NoProxySet {
        /// A variable that is set but not read for this scheme.
        ignored: Option<&'static str>,
    },
    /// `no_proxy`/`NO_PROXY` lists the host (`entry`: the entry that matched, `*` for all).
    Listed {
        /// `no_proxy` or `NO_PROXY`.
        variable: &'static str,
        /// The entry that matched.
        entry: String,
    },
    /// The host is loopback: a proxy elsewhere would reach its own loopback, not ours.
    Loopback {
        /// The proxy that was not used.
        variable: &'static str,
    },
}

impl std::fmt::Display for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Direct::NoProxySet { ignored: None } => write!(f, "no proxy variable is set"),
            Direct::NoProxySet {
                ignored: Some(name),
            } => write!(
                f,
                "no proxy variable is set for it (`{name}` is not read for `http://`, as curl does not; set `http_proxy`)"
            ),
            Direct::Listed { variable, entry } => write!(f, "`{variable}` lists `{entry}`"),
            Direct::Loopback { variable } => write!(
                f,
                "a loopback host never goes through a proxy (`{variable}` is set; `{LOOPBACK_TOKEN}` in `NO_PROXY` would send it there)"
            ),
        }
    }
}

/// How a remote cache is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A connection straight to it.
    Direct(Direct),
    /// Through a proxy.
    Via(Proxy),
}

impl Route {
    /// No proxy, since none is set (what a test or a library caller gets by default).
    pub fn none() -> Self {
        Route::Direct(Direct::NoProxySet { ignored: None })
    }

    /// The proxy, when there is one.
    pub fn proxy(&self) -> Option<&Proxy> {
        match self {
            Route::Via(proxy) => Some(proxy),
            Route::Direct(_) => None,
        }
    }
}

/// A proxy variable that names no proxy this client can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{variable}` does not name a proxy this client can use: {reason}")]
pub struct ProxyProblem {
    /// The variable.
    pub variable: &'static str,
    /// Why (never quoting credentials).
    pub reason: String,
}

/// The route to `target` (a remote cache's URL: `http`, `https`, `grpc` or `grpcs`).
pub fn route(env: &ProxyEnv, target: &url::Url) -> Result<Route, ProxyProblem> {
    let tls = matches!(target.scheme(), "https" | "grpcs");
    let chosen = if tls {
        env.first(&["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"])
    } else {
        env.first(&["http_proxy", "all_proxy", "ALL_PROXY"])
    };
    let Some((variable, value)) = chosen else {
        let ignored = (!tls && env.get("HTTP_PROXY").is_some()).then_some("HTTP_PROXY");
        return Ok(Route::Direct(Direct::NoProxySet { ignored }));
    };
    let host = match target.host() {
        // A URL of a scheme the url crate does not know (`grpc://`) keeps an IPv4 address
        // as a name: read it as the address it is.
        Some(url::Host::Domain(name)) => match name.parse::<Ipv4Addr>() {
            Ok(address) => url::Host::Ipv4(address),
            Err(_) => url::Host::Domain(name),
        },
        Some(host) => host,
        None => return Ok(Route::Direct(Direct::NoProxySet { ignored: None })),
    };
    let no_proxy = env.first(&["no_proxy", "NO_PROXY"]);
    if let Some((list_var, list)) = no_proxy
        && let Some(entry) = listed(list, &host)
    {
        return Ok(Route::Direct(Direct::Listed {
            variable: list_var,
            entry,
        }));
    }
    let loopback_proxied =
        no_proxy.is_some_and(|(_, list)| entries(list).any(|e| e == LOOPBACK_TOKEN));
    if is_loopback(&host) && !loopback_proxied {
        return Ok(Route::Direct(Direct::Loopback { variable }));
    }
    parse_proxy(variable, value).map(Route::Via)
}

/// The entries of a `NO_PROXY` list: separated by commas and blanks, empty ones skipped.
fn entries(list: &str) -> impl Iterator<Item = &str> {
    list.split([',', ' ', '\t']).filter(|e| !e.is_empty())
}

/// The entry of `list` that matches `host`, as curl's `Curl_check_noproxy` matches.
fn listed(list: &str, host: &url::Host<&str>) -> Option<String> {
    if list == "*" {
        return Some("*".to_owned());
    }
    entries(list)
        .find(|entry| matches_entry(entry, host))
        .map(str::to_owned)
}

fn matches_entry(entry: &str, host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(name);
            let token = entry.strip_suffix('.').unwrap_or(entry);
            let token = token.strip_prefix('.').unwrap_or(token);
            if token.is_empty() || name.len() < token.len() {
                return false;
            }
            if name.len() == token.len() {
                return name.eq_ignore_ascii_case(token);
            }
            let (head, tail) = name.split_at(name.len() - token.len());
            head.ends_with('.') && tail.eq_ignore_ascii_case(token)
        }
        url::Host::Ipv4(address) => cidr(entry).is_some_and(|(network, bits)| match network {
            IpAddr::V4(network) => v4_in(*address, network, bits),
            IpAddr::V6(_) => false,
        }),
        url::Host::Ipv6(address) => cidr(entry).is_some_and(|(network, bits)| match network {
            IpAddr::V6(network) => v6_in(*address, network, bits),
            IpAddr::V4(_) => false,
        }),
    }
}

/// An address with an optional `/bits` (curl: bits 0, or none, compares the whole address).
fn cidr(entry: &str) -> Option<(IpAddr, u32)> {
    let (address, bits) = match entry.split_once('/') {
        Some((address, bits)) => (address, bits.parse::<u32>().ok()?),
        None => (entry, 0),
    };
    let address = address
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(address);
    Some((address.parse().ok()?, bits))
}

fn v4_in(address: Ipv4Addr, network: Ipv4Addr, bits: u32) -> bool {
    match bits {
        0 | 32 => address == network,
        1..=31 => {
            let mask = u32::MAX << (32 - bits);
            u32::from(address) & mask == u32::from(network) & mask
        }
        _ => false,
    }
}

fn v6_in(address: Ipv6Addr, network: Ipv6Addr, bits: u32) -> bool {
    match bits {
        0 | 128 => address == network,
        1..=127 => {
            let mask = u128::MAX << (128 - bits);
            u128::from(address) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

/// Whether `host` names this machine's loopback by itself (no name is resolved).
fn is_loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => {
            let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        url::Host::Ipv4(address) => address.is_loopback(),
        url::Host::Ipv6(address) => {
            address.is_loopback() || address.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The proxy `value` of `variable` names: `[http://][user:password@]host[:port]`.
fn parse_proxy(variable: &'static str, value: &str) -> Result<Proxy, ProxyProblem> {
    let problem = |reason: String| ProxyProblem { variable, reason };
    let with_scheme = if value.contains("://") {
        value.to_owned()
    } else {
        format!("http://{value}")
    };
    let url =
        url::Url::parse(&with_scheme).map_err(|e| problem(format!("it is not a URL ({e})")))?;
    match url.scheme() {
        "http" => {}
        other => {
            return Err(problem(format!(
                "`{}://` proxies are not supported (an HTTP proxy is: `http://host:port`)",
                super::backend::escaped(other)
            )));
        }
    }
    let host = match url.host() {
        Some(url::Host::Domain(name)) if !name.is_empty() => name.to_owned(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => format!("[{a}]"),
        _ => return Err(problem("it names no host".to_owned())),
    };
    // The url crate drops the default port of `http://h:80`: only a port not written is
    // curl's 1080.
    let port = url
        .port()
        .unwrap_or(if port_written(&with_scheme) { 80 } else { 1080 });
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let credentials = (!url.username().is_empty() || url.password().is_some()).then(|| {
        (
            decode(url.username()),
            decode(url.password().unwrap_or_default()),
        )
    });
    Ok(Proxy {
        host,
        port,
        credentials,
        variable,
    })
}

/// Whether the authority of `url` (`scheme://[userinfo@]host[:port][/...]`) writes a port.
fn port_written(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let after_host = host_port
        .rsplit_once(']')
        .map_or(host_port, |(_, tail)| tail);
    after_host.contains(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        ProxyEnv::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    fn route_of(vars: &[(&str, &str)], target: &str) -> Route {
        route(&env(vars), &url::Url::parse(target).expect("a URL")).expect("a route")
    }

    /// The proxy's `Display` and variable, or why none.
    fn via(vars: &[(&str, &str)], target: &str) -> Result<(String, &'static str), Direct> {
        match route_of(vars, target) {
            Route::Via(p) => Ok((p.to_string(), p.variable())),
            Route::Direct(why) => Err(why),
        }
    }

    const P: &str = "http://proxy.corp:3128";

    #[test]
    fn the_variable_is_chosen_by_scheme_as_curl_chooses_it() {
        // http:// and grpc:// read http_proxy, in lowercase only.
        for target in ["http://cache.corp/c", "grpc://cache.corp:9092"] {
            assert_eq!(
                via(&[("http_proxy", P)], target),
                Ok((P.to_owned(), "http_proxy"))
            );
            assert_eq!(
                via(&[("HTTP_PROXY", P)], target),
                Err(Direct::NoProxySet {
                    ignored: Some("HTTP_PROXY")
                }),
                "{target}"
            );
            // Not https_proxy.
            assert!(via(&[("HTTPS_PROXY", P)], target).is_err());
        }
        // https:// and grpcs:// read https_proxy before HTTPS_PROXY, never http_proxy.
        for target in ["https://cache.corp/c", "grpcs://cache.corp"] {
            assert_eq!(
                via(&[("HTTPS_PROXY", P)], target),
                Ok((P.to_owned(), "HTTPS_PROXY"))
            );
            assert_eq!(
                via(
                    &[
                        ("https_proxy", "http://low:1"),
                        ("HTTPS_PROXY", "http://up:2")
                    ],
                    target
                ),
                Ok(("http://low:1".to_owned(), "https_proxy"))
            );
            assert!(via(&[("http_proxy", P), ("HTTP_PROXY", P)], target).is_err());
        }
        // all_proxy, then ALL_PROXY, below the scheme's own.
        assert_eq!(
            via(
                &[("ALL_PROXY", "http://up:2"), ("all_proxy", "http://low:1")],
                "http://c.corp"
            ),
            Ok(("http://low:1".to_owned(), "all_proxy"))
        );
        assert_eq!(
            via(&[("ALL_PROXY", "http://up:2")], "grpcs://c.corp"),
            Ok(("http://up:2".to_owned(), "ALL_PROXY"))
        );
        assert_eq!(
            via(
                &[("all_proxy", "http://all:1"), ("http_proxy", P)],
                "http://c.corp"
            ),
            Ok((P.to_owned(), "http_proxy"))
        );
        // An empty variable is an unset one (the next is read).
        assert_eq!(
            via(&[("https_proxy", ""), ("HTTPS_PROXY", P)], "https://c.corp"),
            Ok((P.to_owned(), "HTTPS_PROXY"))
        );
        assert_eq!(
            via(&[], "https://c.corp"),
            Err(Direct::NoProxySet { ignored: None })
        );
    }

    #[test]
    fn no_proxy_matches_hosts_domains_addresses_and_ranges_as_curl_does() {
        let listed = |list: &str, target: &str| -> Option<String> {
            match route_of(&[("https_proxy", P), ("no_proxy", list)], target) {
                Route::Direct(Direct::Listed { entry, .. }) => Some(entry),
                Route::Direct(other) => panic!("{list} {target}: {other:?}"),
                Route::Via(_) => None,
            }
        };
        let yes = |list: &str, target: &str, entry: &str| {
            assert_eq!(
                listed(list, target).as_deref(),
                Some(entry),
                "{list} {target}"
            );
        };
        let no = |list: &str, target: &str| {
            assert_eq!(listed(list, target), None, "{list} {target}");
        };
        // `*` alone: everything; `*` in a list is no wildcard (curl compares it whole).
        yes("*", "https://anything.example", "*");
        no("*.corp", "https://a.corp");
        no("x,*", "https://a.corp");
        // A name matches itself and names under it, never a longer label.
        yes("example.com", "https://example.com", "example.com");
        yes("example.com", "https://www.example.com", "example.com");
        yes("EXAMPLE.com", "https://Example.COM", "EXAMPLE.com");
        no("example.com", "https://nonexample.com");
        no("example.com", "https://example.com.org");
        no("www.example.com", "https://example.com");
        // Leading and trailing dots ignored, in the entry and the host.
        yes(".example.com", "https://example.com", ".example.com");
        yes(".example.com", "https://a.b.example.com", ".example.com");
        yes("example.com.", "https://a.example.com.", "example.com.");
        // Separated by commas and blanks, empty entries skipped.
        yes(" a.corp , ,b.corp\tc.corp", "https://x.c.corp", "c.corp");
        yes(",,b.corp,", "https://b.corp", "b.corp");
        // A port in an entry matches nothing (curl has no port syntax).
        no("example.com:443", "https://example.com");
        // Addresses: exact, or a CIDR range; a name entry never matches an address.
        yes("10.1.2.3", "https://10.1.2.3:8443", "10.1.2.3");
        no("10.1.2.3", "https://10.1.2.4");
        yes("10.0.0.0/8", "https://10.200.0.1", "10.0.0.0/8");
        no("10.0.0.0/8", "https://11.0.0.1");
        yes("192.168.4.0/22", "https://192.168.7.255", "192.168.4.0/22");
        no("192.168.4.0/22", "https://192.168.8.0");
        no("10.0.0.0/33", "https://10.0.0.0");
        // /0 is curl's "compare the whole address", not "everything".
        no("0.0.0.0/0", "https://10.0.0.1");
        no("cache.corp", "https://10.0.0.1");
        yes("fd00::/8", "grpcs://[fd12::1]:443", "fd00::/8");
        yes("fd12::1", "grpcs://[fd12::1]:443", "fd12::1");
        no("fd00::/8", "grpcs://[fe80::1]:443");
        no("10.0.0.0/8", "grpcs://[fd12::1]:443");
        yes("10.0.0.0/8", "grpcs://10.1.2.3:9092/main", "10.0.0.0/8");
        no("cache.corp", "grpcs://10.1.2.3:9092/main");
        no("fd00::/8", "https://10.0.0.1");
    }

    #[test]
    fn loopback_is_never_proxied_unless_no_proxy_asks_for_it() {
        for target in [
            "http://127.0.0.1:8080/cache",
            "http://127.8.9.10:8080/cache",
            "grpc://127.0.0.1:9092/main",
            "grpcs://127.0.0.1/main",
            "grpc://[::1]:9092",
            "grpc://localhost:9092",
            "https://LOCALHOST./cache",
            "https://cache.localhost/cache",
            "http://[::ffff:127.0.0.1]:8080/cache",
        ] {
            let vars = [("http_proxy", P), ("https_proxy", P), ("NO_PROXY", "corp")];
            assert_eq!(
                via(&vars, target),
                Err(Direct::Loopback {
                    variable: if target.starts_with("https") || target.starts_with("grpcs") {
                        "https_proxy"
                    } else {
                        "http_proxy"
                    }
                }),
                "{target}"
            );
            let forced = [
                ("http_proxy", P),
                ("https_proxy", P),
                ("NO_PROXY", "corp,<-loopback>"),
            ];
            assert!(via(&forced, target).is_ok(), "{target}");
        }
        // Not loopback by name: the name is not resolved.
        assert!(via(&[("http_proxy", P)], "http://localhost.corp/c").is_ok());
        assert!(via(&[("http_proxy", P)], "http://128.0.0.1/c").is_ok());
        // NO_PROXY listing it says so rather than "loopback".
        assert_eq!(
            via(
                &[("http_proxy", P), ("no_proxy", "127.0.0.1")],
                "http://127.0.0.1:1/c"
            ),
            Err(Direct::Listed {
                variable: "no_proxy",
                entry: "127.0.0.1".to_owned()
            })
        );
        // no_proxy wins over NO_PROXY, whole: its absence of `<-loopback>` counts.
        assert!(
            via(
                &[
                    ("http_proxy", P),
                    ("no_proxy", "corp"),
                    ("NO_PROXY", "<-loopback>")
                ],
                "http://127.0.0.1:1/c"
            )
            .is_err()
        );
    }

    #[test]
    fn a_proxy_is_parsed_as_curl_reads_it_and_never_shown_with_its_credentials() {
        let proxy = |value: &str| -> Result<Proxy, ProxyProblem> {
            match route(
                &env(&[("https_proxy", value)]),
                &url::Url::parse("https://cache.corp").expect("a URL"),
            )? {
                Route::Via(p) => Ok(p),
                Route::Direct(d) => panic!("{value}: {d:?}"),
            }
        };
        let p = proxy("proxy.corp").expect("no scheme is http://");
        assert_eq!(p.authority(), "proxy.corp:1080");
        assert_eq!(p.to_string(), "http://proxy.corp:1080");
        assert_eq!(
            proxy("http://proxy.corp:80/").expect("port 80").authority(),
            "proxy.corp:80"
        );
        assert_eq!(
            proxy("http://[fd00::1]:3128").expect("IPv6").authority(),
            "[fd00::1]:3128"
        );
        let p = proxy("http://ci%40corp:s3cr%3Aet%25x@proxy.corp:3128").expect("credentials");
        assert_eq!(p.credentials(), Some(("ci@corp", "s3cr:et%x")));
        assert_eq!(p.to_string(), "http://<redacted>@proxy.corp:3128");
        assert!(!format!("{p:?}").contains("s3cr"), "{p:?}");
        assert_eq!(
            p.secrets(),
            vec![b"s3cr:et%x".to_vec(), b"ci@corp:s3cr:et%x".to_vec()]
        );
        // What a client library is given parses back to the same credentials.
        let again = url::Url::parse(&p.url_with_credentials()).expect("a URL");
        assert_eq!(again.password(), Some("s3cr%3Aet%25x"));
        assert_eq!(
            proxy("http://user@proxy.corp:3128")
                .expect("a user alone")
                .credentials(),
            Some(("user", ""))
        );
        for (value, why) in [
            (
                "socks5://user:hunter2hunter2@proxy.corp:1080",
                "`socks5://`",
            ),
            ("https://proxy.corp:443", "`https://`"),
            ("http://:3128", "not a URL"),
            ("http://user:hunter2hunter2@", "not a URL"),
        ] {
            let e = proxy(value).expect_err(value);
            assert_eq!(e.variable, "https_proxy");
            let text = e.to_string();
            assert!(text.contains(why), "{value}: {text}");
            assert!(!text.contains("hunter2"), "{value}: {text}");
        }
    }
}
