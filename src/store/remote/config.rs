//! Which remote cache, with which credentials and deadlines: what the layers above read
//! from `proofgraph.yaml` and the environment, handed to a backend.

use std::time::Duration;

/// How long to wait for a connection, unless `cache.connectTimeoutMs` says otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one request may take, unless `cache.timeoutMs` says otherwise.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

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
                "the URL holds credentials; name an environment variable in `cache.headersFromEnv` instead"
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
    /// How long one request may take.
    pub timeout: Duration,
}

impl Settings {
    /// `url` with no headers and the default deadlines.
    pub fn new(url: &str) -> Self {
        Settings {
            url: url.to_owned(),
            headers: Vec::new(),
            connect_timeout: CONNECT_TIMEOUT,
            timeout: REQUEST_TIMEOUT,
        }
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
}
