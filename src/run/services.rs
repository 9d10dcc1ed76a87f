//! Services and their readiness probes: the loop's work for them. A service starts
//! beside the providers that need it in a world of its own, and its probe waits for its
//! identity; why a service that ends on its own, or is never seen ready, fails the
//! providers that need it is the core's (`scheduling.rs`), with the end of its log
//! ([`last_lines`]).

use std::net::ToSocketAddrs as _;
use std::path::Path;
use std::time::Duration;

use proofgraph_graph::NodeId;
use proofgraph_graph::graph::ServiceNode;
use proofgraph_graph::readiness::ReadinessUrl;

use crate::base::diagnostic::{Code, Diagnostic};

use super::executor::{JobRef, Where, Work};
use super::scheduling::Event;
use super::shell::Shell;
use crate::proof::receipt::RunIsolation;

/// The host a readiness URL names (brackets of an IPv6 literal removed), as the one reader
/// of readiness URLs parsed it; `127.0.0.1` for a URL preflight would have refused.
fn host_of(url: &ReadinessUrl) -> &str {
    url.target().map_or("127.0.0.1", |t| t.host.as_str())
}

/// Whether something answers on `url`'s host and `port` (a TCP connect
/// within 300 ms).
fn answers(url: &ReadinessUrl, port: u16) -> bool {
    let Ok(addrs) = (host_of(url), port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|addr| std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok())
}

/// How much of the end of a log [`last_lines`] reads: a log is never read whole.
const LAST_LINES_BYTES: u64 = 64 << 10;

/// The last `n` non-empty lines of a log (of its last [`LAST_LINES_BYTES`]), joined with
/// ` | `.
pub(super) fn last_lines(log: &Path, n: usize) -> String {
    use std::io::{Read as _, Seek as _};
    let mut end = Vec::new();
    let mut cut = false;
    if let Ok(mut file) = fs_err::File::open(log)
        && let Ok(len) = file.metadata().map(|m| m.len())
    {
        let from = len.saturating_sub(LAST_LINES_BYTES);
        cut = from > 0;
        if file.seek(std::io::SeekFrom::Start(from)).is_err()
            || file.take(LAST_LINES_BYTES).read_to_end(&mut end).is_err()
        {
            end.clear();
        }
    }
    let text = String::from_utf8_lossy(&end);
    let mut lines: Vec<&str> = text.lines().collect();
    if cut && !lines.is_empty() {
        // The first line read is a piece of one.
        lines.remove(0);
    }
    lines.retain(|l| !l.trim().is_empty());
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

impl Shell<'_, '_> {
    /// Starts service `id` as `job`, in its own world: its repository (all of it) under
    /// that repository's setup, and a writable layer no provider sees.
    pub(super) fn start_service(&mut self, job: JobRef, id: NodeId) -> Event {
        let not_started = |reason: String| Event::NotStarted {
            job,
            reason,
            spawn: false,
        };
        let Some(s) = self.plan.graph.node(id).service() else {
            return not_started("it is not a service".to_owned());
        };
        if let Some(reason) = self.port_in_use(s) {
            return not_started(reason);
        }
        let made = match &s.runs_in {
            Some(repo) => self
                .worlds
                .seen(repo, super::layers::Files::All)
                .and_then(|seen| self.worlds.world(&[seen], None, None)),
            None => Err("it has no repository".to_owned()),
        };
        let (world, cwd) = match made {
            Ok((world, dirs)) => match dirs.of(s.runs_in.as_ref()) {
                Some(dir) => (world, dir.at.clone()),
                None => (world, std::path::PathBuf::from("/")),
            },
            Err(reason) => {
                let name = &s.spec.id.value;
                return not_started(format!("service `{name}` has no sandbox: {reason}"));
            }
        };
        let env = match self.builder().service_env(s) {
            Ok(env) => env,
            Err(reason) => return not_started(reason),
        };
        let log = self.log_path(&format!("service-{}", s.spec.id.value));
        self.service_logs.insert(id, log.clone());
        let program = match self.builder().service_program(s, &cwd) {
            Ok(program) => program,
            Err(reason) => return not_started(reason),
        };
        let spec = self.builder().service_job(s, cwd, world, env, program, log);
        let Some(executor) = self.executor(Where::Local) else {
            return not_started("no run was started".to_owned());
        };
        match executor.start(job, &Work::Service(spec)) {
            Ok(()) => Event::Started(job),
            Err(e) => not_started(format!(
                "service `{}` could not be started: failed to {e}",
                s.spec.id.value
            )),
        }
    }

    /// Without a private network, a server already answering on the service's URL would
    /// answer its probe: the service is refused instead, and why.
    fn port_in_use(&mut self, s: &ServiceNode) -> Option<String> {
        if self.isolation != RunIsolation::None {
            return None;
        }
        let url = s.spec.readiness.as_ref().and_then(|r| r.url.as_ref())?;
        let port = s.port?;
        if !answers(&url.value, port) {
            return None;
        }
        let name = &s.spec.id.value;
        self.diagnostics.push(
            Diagnostic::error(
                Code::ReadinessPortInUse,
                format!("service `{name}` was not started: {} already answers, and without isolation its probe could not tell this run's server from the one already there", url.value),
            )
            .at(&s.file, url.pos)
            .fix(format!("Stop whatever listens on port {port}, or run with namespaces (root or unprivileged user namespaces) so the run gets its own network.")),
        );
        Some(format!(
            "service `{name}` was not started: port {port} is already in use outside the run (readiness_port_in_use)"
        ))
    }

    /// Starts the readiness probe of `service` as `job`.
    pub(super) fn start_probe(&mut self, job: JobRef, service: NodeId) -> Event {
        let not_started = |reason: String| Event::NotStarted {
            job,
            reason,
            spawn: false,
        };
        let Some(s) = self.plan.graph.node(service).service() else {
            return not_started("it is not a service".to_owned());
        };
        let log = self.log_path(&format!("probe-{}", s.spec.id.value));
        let Some(spec) = self.builder().probe(s, log) else {
            return not_started(format!("`{}` declares no readiness", s.spec.id.value));
        };
        let Some(executor) = self.executor(Where::Local) else {
            return not_started("no run was started".to_owned());
        };
        match executor.start(job, &Work::Probe(spec)) {
            Ok(()) => Event::Started(job),
            Err(e) => not_started(format!(
                "the readiness probe of `{}` could not start: failed to {e}",
                s.spec.id.value
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_of_a_readiness_url() {
        let host = |text: &str| host_of(&ReadinessUrl::parse(text)).to_owned();
        assert_eq!(host("http://127.0.0.1:4100/health"), "127.0.0.1");
        assert_eq!(host("http://localhost:80?x=1"), "localhost");
        assert_eq!(host("http://[::1]:8080/"), "::1");
        // A URL preflight refuses: the loopback address.
        assert_eq!(host("localhost:3000#top"), "127.0.0.1");
    }

    #[test]
    fn nothing_answers_on_a_port_nobody_listens_on() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let url = ReadinessUrl::parse(format!("http://127.0.0.1:{port}/health"));
        assert!(answers(&url, port));
        drop(listener);
        assert!(!answers(&url, port));
    }

    #[test]
    fn the_end_of_a_log_is_its_last_non_empty_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("service.log");
        fs_err::write(&log, "one\n\ntwo\n  \nthree\nfour\n").expect("write");
        assert_eq!(last_lines(&log, 2), "three | four");
        assert_eq!(last_lines(&log, 9), "one | two | three | four");
        assert_eq!(last_lines(&dir.path().join("none.log"), 5), "");
        // A long log: only its end is read, and the piece of a line it starts in is not
        // shown.
        let long = dir.path().join("long.log");
        let mut text = "x".repeat(3 * LAST_LINES_BYTES as usize);
        text.push_str("\nend one\nend two\n");
        fs_err::write(&long, text).expect("write");
        assert_eq!(last_lines(&long, 5), "end one | end two");
    }
}
