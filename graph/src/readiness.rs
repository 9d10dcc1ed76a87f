//! A readiness probe's URL, parsed once — with the `url` crate, when the configuration is
//! decoded — into what the probe connects to.
//!
//! Architecture invariant: this is the one place that decides whether a readiness URL is
//! usable. Preflight reports its problem (at the URL's position), the graph takes its port
//! lock from [`ReadinessUrl::literal_port`], the fingerprint binds the text as written, and
//! the executor hands the probe the parsed [`ProbeTarget`] — so a URL `validate` accepts is
//! a URL the probe can use, and the other way round.
//!
//! The probe speaks plain HTTP/1.1 inside the run's private network: only `http://` with a
//! host is usable; user information and fragments have no meaning there.

use std::fmt;

/// What the probe connects to and asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    /// The host: a name, an IPv4 address, or an IPv6 address without brackets.
    pub host: String,
    /// The port (80 when the URL names none).
    pub port: u16,
    /// The path and query, from `/`.
    pub path: String,
    /// The `Host` header: host and port as the URL gives them.
    pub authority: String,
}

/// Why a readiness URL is unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlProblem {
    /// Not an `http://` URL with a host the probe can use; the text says why.
    Invalid(String),
    /// Usable, but without a literal port, so the port lock cannot name it.
    NoPort,
}

/// A readiness URL as written, and what parsing it gave.
#[derive(Clone, PartialEq, Eq)]
pub struct ReadinessUrl {
    text: String,
    parsed: Result<(ProbeTarget, bool), String>,
}

impl ReadinessUrl {
    /// Parses `text`; an unusable URL is kept (with why) for preflight to report where it
    /// was written.
    pub fn parse(text: impl Into<String>) -> Self {
        let text = text.into();
        let parsed = parse(&text);
        Self { text, parsed }
    }

    /// The URL as written (what a fingerprint binds).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the probe connects to, when the URL is usable.
    pub fn target(&self) -> Result<&ProbeTarget, UrlProblem> {
        match &self.parsed {
            Ok((target, _)) => Ok(target),
            Err(why) => Err(UrlProblem::Invalid(why.clone())),
        }
    }

    /// The port written in the URL (`:4173`), which the service holds as `port:<n>`.
    pub fn literal_port(&self) -> Result<u16, UrlProblem> {
        match &self.parsed {
            Ok((target, true)) => Ok(target.port),
            Ok((_, false)) => Err(UrlProblem::NoPort),
            Err(why) => Err(UrlProblem::Invalid(why.clone())),
        }
    }
}

impl fmt::Debug for ReadinessUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReadinessUrl({:?})", self.text)
    }
}

impl fmt::Display for ReadinessUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The target and whether the port was written; or why the URL is unusable (a lowercase
/// fragment).
fn parse(text: &str) -> Result<(ProbeTarget, bool), String> {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains whitespace or control characters".to_owned());
    }
    if !text.contains("://") {
        return Err("it does not start with `http://`".to_owned());
    }
    let url = url::Url::parse(text).map_err(|e| format!("it is not a URL ({e})"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "its scheme is `{}`, and the probe speaks only plain `http://` inside the run's network",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("user information (`user@`) is not supported".to_owned());
    }
    if url.fragment().is_some() {
        return Err("a fragment (`#`) has no meaning in a probe".to_owned());
    }
    let host = match url.host() {
        Some(url::Host::Ipv6(address)) => address.to_string(),
        Some(host) => host.to_string(),
        None => return Err("it has no host".to_owned()),
    };
    if host.is_empty() {
        return Err("it has no host".to_owned());
    }
    // `url` forgets a port equal to the scheme's default; whether one was written is read
    // from the text, between the host and the path.
    let after_scheme = &text[text.find("//").map_or(0, |i| i + 2)..];
    let authority_text = after_scheme
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let port_text = match authority_text.rfind(']') {
        Some(close) => authority_text[close..].split_once(':').map(|(_, p)| p),
        None => authority_text.rsplit_once(':').map(|(_, p)| p),
    };
    let literal = port_text.is_some_and(|p| !p.is_empty());
    let port = url.port_or_known_default().unwrap_or(80);
    if port == 0 {
        return Err("`0` is not a port a server can listen on".to_owned());
    }
    let path = url[url::Position::BeforePath..url::Position::AfterQuery].to_owned();
    let authority = url[url::Position::BeforeHost..url::Position::AfterPort].to_owned();
    Ok((
        ProbeTarget {
            host,
            port,
            path: if path.is_empty() {
                "/".to_owned()
            } else {
                path
            },
            authority,
        },
        literal,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(text: &str) -> ProbeTarget {
        ReadinessUrl::parse(text)
            .target()
            .cloned()
            .unwrap_or_else(|e| panic!("{text}: {e:?}"))
    }

    #[test]
    fn usable_urls_give_host_port_path_and_authority() {
        assert_eq!(
            target("http://127.0.0.1:4180/health?x=1"),
            ProbeTarget {
                host: "127.0.0.1".to_owned(),
                port: 4180,
                path: "/health?x=1".to_owned(),
                authority: "127.0.0.1:4180".to_owned(),
            }
        );
        let bare = target("http://localhost");
        assert_eq!((bare.port, bare.path.as_str()), (80, "/"));
        assert_eq!(target("http://[::1]:8080/").host, "::1");
        assert_eq!(target("http://x:4173?ready").path, "/?ready");
    }

    #[test]
    fn the_literal_port_is_what_was_written() {
        let port = |text: &str| ReadinessUrl::parse(text).literal_port();
        assert_eq!(port("http://127.0.0.1:4173/health"), Ok(4173));
        assert_eq!(port("http://127.0.0.1:80/health"), Ok(80));
        assert_eq!(port("http://[::1]:8080/"), Ok(8080));
        assert_eq!(port("http://localhost/health"), Err(UrlProblem::NoPort));
        assert_eq!(port("http://[::1]/"), Err(UrlProblem::NoPort));
        assert_eq!(port("http://localhost:/health"), Err(UrlProblem::NoPort));
    }

    #[test]
    fn what_the_probe_cannot_use_is_refused_with_a_reason() {
        for (text, why) in [
            ("https://localhost:8443/health", "scheme is `https`"),
            ("ftp://x:21/", "scheme is `ftp`"),
            ("http://u@x:1/", "user information"),
            ("http://u:p@x:1/", "user information"),
            ("http://x:1/#a", "fragment"),
            ("http://x:0/", "`0` is not a port"),
            ("http://x:99999/", "not a URL"),
            ("http:///", "not a URL"),
            ("127.0.0.1:4173/health", "does not start with `http://`"),
            ("localhost:4173/health", "does not start with `http://`"),
            ("http://x:1/a b", "whitespace"),
            ("", "does not start with `http://`"),
        ] {
            let url = ReadinessUrl::parse(text);
            match url.target() {
                Err(UrlProblem::Invalid(reason)) => {
                    assert!(reason.contains(why), "{text}: {reason}");
                }
                other => panic!("{text} was accepted: {other:?}"),
            }
            assert!(matches!(url.literal_port(), Err(UrlProblem::Invalid(_))));
            assert_eq!(url.as_str(), text);
        }
    }
}
