//! Which remote cache, with which credentials and deadlines: what the layers above read
//! from `proofgraph.yaml` and the environment, handed to a backend.

use std::time::Duration;

/// How long to wait for a connection, unless `cache.connectTimeoutMs` says otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one request may take, unless `cache.timeoutMs` says otherwise.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The slowest transfer waited for, in bytes per second, unless `cache.minBytesPerSecond`
/// says otherwise: an operation moving `n` bytes is given up after the connect timeout,
/// plus the request timeout, plus `n` bytes at this rate (1 MiB/s).
pub const MIN_BYTES_PER_SECOND: u64 = 1 << 20;
/// How many `trustedKeys` entries a pull looks a receipt up under, at most, besides the
/// store's own key: one action-cache lookup per key and receipt, so a workspace that trusts
/// more keys than this costs no more than 16 lookups per receipt (`validate` warns,
/// `trusted_keys_too_many`, at the first entry left out).
pub const LOOKED_UP_TRUSTED_KEYS: usize = 15;

/// The protocol a remote's URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http://`, `https://`: the Bazel HTTP cache protocol.
    Http,
    /// `grpc://`, `grpcs://`: the Remote Execution API.
    Grpc,
}

impl Protocol {
    /// The protocol of `url`, or why it has none: a scheme we do not speak, or credentials
    /// in the URL (they belong in the environment, `cache.headersFromEnv`).
    pub fn of(url: &str) -> Result<(Protocol, bool), String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(
                "the URL holds credentials; name an environment variable in `headersFromEnv` instead"
                    .to_owned(),
            );
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(format!("`{url}` names no host"));
        }
        match parsed.scheme() {
            "http" => Ok((Protocol::Http, false)),
            "https" => Ok((Protocol::Http, true)),
            "grpc" => Ok((Protocol::Grpc, false)),
            "grpcs" => Ok((Protocol::Grpc, true)),
            other => Err(format!(
                "`{other}` is not a remote cache protocol (`grpc://`, `grpcs://`, `http://` or `https://`)"
            )),
        }
    }
}

/// Path segments the Remote Execution API gives a meaning in resource names: an instance
/// name may not hold one.
const RESERVED: [&str; 7] = [
    "blobs",
    "uploads",
    "actions",
    "actionResults",
    "operations",
    "capabilities",
    "compressed-blobs",
];

/// Why a `grpc://` URL names no instance this client sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceProblem {
    /// A `.` or `..` segment (or its percent-encoded form): a URL parser removes it, so
    /// the instance used would not be the one written.
    #[error(
        "the instance name `{name}` holds the dot segment `{segment}`, which a URL resolves away (it would not be the instance written)"
    )]
    DotSegment {
        /// The instance name as written.
        name: String,
        /// The segment.
        segment: String,
    },
    /// A character an instance name cannot hold, written as it is.
    #[error(
        "the instance name `{name}` holds the character {shown}, which an instance name cannot hold"
    )]
    Character {
        /// The instance name as written (control characters escaped).
        name: String,
        /// The character, quoted, with its code point.
        shown: String,
    },
    /// A percent escape.
    #[error(
        "the instance name `{name}` holds a percent escape (`{escape}`); write the name as it is"
    )]
    PercentEscape {
        /// The instance name as written.
        name: String,
        /// The escape.
        escape: String,
    },
    /// An empty segment (`a//b`) or a segment resource names reserve.
    #[error(
        "the instance name `{name}` holds the segment `{segment}`, which resource names reserve"
    )]
    Reserved {
        /// The instance name as written.
        name: String,
        /// The segment (empty for `a//b`).
        segment: String,
    },
    /// A query or a fragment.
    #[error("a query or fragment is not part of an instance name")]
    QueryOrFragment,
}

/// Whether `c` may be written in an instance name: RFC 3986's unreserved characters and
/// sub-delimiters, `:` and `@` (what a path segment holds without an escape).
fn instance_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c)
}

/// The instance a `grpc://` or `grpcs://` URL names, read from the text as written (a URL
/// parser normalises the path — `/a/../main` would become `main` — so the parsed form is
/// not read): the path without its leading slash and one trailing slash, empty when there
/// is none.
pub fn instance(url: &str) -> Result<String, InstanceProblem> {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (before_fragment, fragment) = match after_scheme.split_once('#') {
        Some((before, _)) => (before, true),
        None => (after_scheme, false),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((before, _)) => (before, true),
        None => (before_fragment, false),
    };
    if fragment || query {
        return Err(InstanceProblem::QueryOrFragment);
    }
    let path = before_query.find('/').map_or("", |at| &before_query[at..]);
    let name = path.strip_prefix('/').unwrap_or(path);
    let name = name.strip_suffix('/').unwrap_or(name);
    if name.is_empty() {
        return Ok(String::new());
    }
    let shown_name = super::backend::escaped(name);
    for segment in name.split('/') {
        let lower = segment.to_ascii_lowercase().replace("%2e", ".");
        if lower == "." || lower == ".." {
            return Err(InstanceProblem::DotSegment {
                name: shown_name,
                segment: segment.to_owned(),
            });
        }
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !instance_char(c) && c != '/' && c != '%')
    {
        return Err(InstanceProblem::Character {
            name: shown_name,
            shown: format!(
                "`{}` (U+{:04X})",
                super::backend::escaped(&c.to_string()),
                u32::from(c)
            ),
        });
    }
    if let Some(at) = name.find('%') {
        let escape: String = name[at..].chars().take(3).collect();
        return Err(InstanceProblem::PercentEscape {
            name: shown_name,
            escape,
        });
    }
    if let Some(segment) = name
        .split('/')
        .find(|s| s.is_empty() || RESERVED.contains(s))
    {
        return Err(InstanceProblem::Reserved {
            name: shown_name,
            segment: segment.to_owned(),
        });
    }
    Ok(name.to_owned())
}

/// A remote cache to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Its URL, as configured (no credentials).
    pub url: String,
    /// Headers (gRPC metadata) to send, with their values read from the environment.
    /// The values never appear in a message.
    pub headers: Vec<(String, String)>,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
    /// How long one request (or one chunk of a stream) may take.
    pub timeout: Duration,
    /// The slowest transfer rate waited for: with the timeouts, the overall deadline of
    /// every operation ([`Settings::deadline`]).
    pub min_bytes_per_second: u64,
    /// Straight to it, or through which proxy (decided by [`super::proxy::route`] from
    /// the variables the CLI read; nothing below reads the environment).
    pub route: super::proxy::Route,
}

impl Settings {
    /// `url` with no headers, the default deadlines and no proxy.
    pub fn new(url: &str) -> Self {
        Settings {
            url: url.to_owned(),
            headers: Vec::new(),
            connect_timeout: CONNECT_TIMEOUT,
            timeout: REQUEST_TIMEOUT,
            min_bytes_per_second: MIN_BYTES_PER_SECOND,
            route: super::proxy::Route::none(),
        }
    }

    /// The overall deadline of one operation that moves `bytes` bytes (a blob read or
    /// written, an entry, a batch), whatever the server does meanwhile — answers slowly,
    /// trickles a byte at a time, or streams without end: a connection, a request, and
    /// the bytes at the slowest rate waited for.
    pub fn deadline(&self, bytes: u64) -> Duration {
        let rate = self.min_bytes_per_second.max(1);
        self.connect_timeout
            .saturating_add(self.timeout)
            .saturating_add(Duration::from_secs_f64(bytes as f64 / rate as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_its_protocol_and_never_holds_credentials() {
        assert_eq!(
            Protocol::of("grpc://127.0.0.1:50051/main"),
            Ok((Protocol::Grpc, false))
        );
        assert_eq!(
            Protocol::of("grpcs://cache.example.com"),
            Ok((Protocol::Grpc, true))
        );
        assert_eq!(
            Protocol::of("http://127.0.0.1:8080/cache"),
            Ok((Protocol::Http, false))
        );
        assert_eq!(
            Protocol::of("https://cache.example.com/prefix"),
            Ok((Protocol::Http, true))
        );
        for bad in [
            "s3://bucket/x",
            "https://user:secret@cache.example.com",
            "https://token@cache.example.com",
            "cache.example.com",
            "grpc:///main",
        ] {
            let err = Protocol::of(bad).expect_err(bad);
            assert!(!err.contains("secret"), "{err}");
        }
    }

    #[test]
    fn the_instance_is_the_path_as_written_without_its_leading_slash() {
        for (url, name) in [
            ("grpc://127.0.0.1:50051", ""),
            ("grpc://127.0.0.1:50051/", ""),
            ("grpc://h:1/main", "main"),
            ("grpcs://h/main/", "main"),
            ("grpc://h:1/team/ci-cache", "team/ci-cache"),
            ("grpc://[::1]:1/a.b/c..d/...", "a.b/c..d/..."),
        ] {
            assert_eq!(instance(url), Ok(name.to_owned()), "{url}");
        }
        for url in [
            "grpc://h:1/a/..",
            "grpc://h:1/..",
            "grpc://h:1/.",
            "grpc://h:1/%2e%2e",
            "grpc://h:1/%2E",
            "grpc://h:1/.%2e/x",
            "grpc://h:1/a/../main",
            "grpc://h:1/a/./b",
        ] {
            assert!(
                matches!(instance(url), Err(InstanceProblem::DotSegment { .. })),
                "{url}: {:?}",
                instance(url)
            );
        }
        for (url, named) in [
            ("grpc://h:1/a b", "` ` (U+0020)"),
            ("grpc://h:1/\u{2026}", "`\u{2026}` (U+2026)"),
            ("grpc://h:1/a\\b", "`\\` (U+005C)"),
            ("grpc://h:1/a\tb", "`\\t` (U+0009)"),
        ] {
            match instance(url) {
                Err(e @ InstanceProblem::Character { .. }) => {
                    let text = e.to_string();
                    assert!(text.contains(named), "{url}: {text}");
                    assert!(!text.contains("percent"), "{url}: {text}");
                }
                other => panic!("{url}: {other:?}"),
            }
        }
        assert!(matches!(
            instance("grpc://h:1/a%20b"),
            Err(InstanceProblem::PercentEscape { .. })
        ));
        for url in [
            "grpc://h:1/a//b",
            "grpc://h:1/main/blobs",
            "grpc://h:1/uploads/x",
        ] {
            assert!(
                matches!(instance(url), Err(InstanceProblem::Reserved { .. })),
                "{url}"
            );
        }
        for url in ["grpc://h:1/main?x=1", "grpc://h:1/main#frag"] {
            assert_eq!(
                instance(url),
                Err(InstanceProblem::QueryOrFragment),
                "{url}"
            );
        }
        let newline = instance("grpc://h:1/a\nb").expect_err("a newline");
        assert!(!newline.to_string().contains('\n'), "{newline}");
    }
}
