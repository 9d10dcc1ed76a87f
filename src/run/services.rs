//! Services and their readiness probes: the dispatcher's work for them. A service starts
//! beside the providers that need it, its probe waits for its identity, and a service that
//! ends on its own, or is never seen ready, fails the providers that need it with the
//! reason (and the end of its log) that their error receipts carry.

use std::net::ToSocketAddrs as _;
use std::path::Path;
use std::time::Duration;

use proofgraph_graph::NodeId;
use proofgraph_graph::graph::ServiceNode;
use proofgraph_graph::readiness::ReadinessUrl;
use proofgraph_graph::schedule::{State, Step};
use proofgraph_sandbox::JobId;

use crate::base::diagnostic::{Code, Diagnostic};

use super::event_loop::{Dispatcher, Purpose};
use super::events::Line;
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

/// How a service that the run did not stop ended.
fn how_ended(spawn_error: Option<String>, code: Option<i32>, signal: Option<i32>) -> String {
    match (spawn_error, code, signal) {
        (Some(e), _, _) => format!("could not start: {e}"),
        (None, Some(c), _) => format!("exited with code {c}"),
        (None, None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".to_owned(),
    }
}

/// Why the providers that need a service that ended on its own fail: how and when it
/// ended (`ready`: after its probe saw it ready), and the end of its log.
fn ended_reason(name: &str, how: &str, ready: bool, tail: &str) -> String {
    let when = if ready {
        "before its users finished"
    } else {
        "before it was ready"
    };
    let tail = if tail.is_empty() {
        String::new()
    } else {
        format!("; its log ends with: {tail}")
    };
    format!("{name} {how} {when}{tail}")
}

impl Dispatcher<'_, '_> {
    pub(super) fn start_service(&mut self, id: NodeId, s: &ServiceNode) {
        // Without a private network, a server already answering on the
        // service's URL would answer its probe: refuse instead.
        if self.isolation == RunIsolation::None
            && let Some(url) = s.spec.readiness.as_ref().and_then(|r| r.url.as_ref())
            && let Some(port) = s.port
            && answers(&url.value, port)
        {
            let name = &s.spec.id.value;
            self.diagnostics.push(
                Diagnostic::error(
                    Code::ReadinessPortInUse,
                    format!("service `{name}` was not started: {} already answers, and without isolation its probe could not tell this run's server from the one already there", url.value),
                )
                .at(&s.file, url.pos)
                .fix(format!("Stop whatever listens on port {port}, or run with namespaces (root or unprivileged user namespaces) so the run gets its own network.")),
            );
            self.probe_failures.insert(id, format!("service `{name}` was not started: port {port} is already in use outside the run (readiness_port_in_use)"));
            self.scheduler.complete(id, Step::Failed);
            return;
        }
        // Its own world: its repository (all of it) under that repository's setup, and a
        // writable layer no provider sees.
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
                self.probe_failures.insert(
                    id,
                    format!("service `{}` has no sandbox: {reason}", s.spec.id.value),
                );
                self.scheduler.complete(id, Step::Failed);
                return;
            }
        };
        let env = match self.builder().service_env(s) {
            Ok(env) => env,
            Err(reason) => {
                self.probe_failures.insert(id, reason);
                self.scheduler.complete(id, Step::Failed);
                return;
            }
        };
        let log = self.log_path(&format!("service-{}", s.spec.id.value));
        self.service_logs.insert(id, log.clone());
        let program = match self.builder().service_program(s, &cwd) {
            Ok(program) => program,
            Err(reason) => {
                self.probe_failures.insert(id, reason);
                self.scheduler.complete(id, Step::Failed);
                return;
            }
        };
        let spec = self.builder().service_job(s, cwd, world, env, program, log);
        let Some(run) = &self.run else { return };
        match run.spawn(&spec) {
            Ok(job) => {
                self.progress(Line::ServiceStarted {
                    service: &s.spec.id.value,
                });
                self.jobs.insert(job, Purpose::Service(id));
                self.services.insert(id, job);
                self.scheduler.complete(id, Step::Succeeded);
            }
            Err(e) => {
                self.probe_failures.insert(
                    id,
                    format!(
                        "service `{}` could not be started: failed to {e}",
                        s.spec.id.value
                    ),
                );
                self.scheduler.complete(id, Step::Failed);
            }
        }
    }

    pub(super) fn start_probe(&mut self, probe: NodeId, service: NodeId) {
        let Some(s) = self.plan.graph.node(service).service() else {
            return;
        };
        if s.spec.readiness.is_none() {
            return;
        }
        let log = self.log_path(&format!("probe-{}", s.spec.id.value));
        let Some(spec) = self.builder().probe(s, log) else {
            return;
        };
        let Some(run) = &self.run else { return };
        match run.probe(&spec) {
            Ok(job) => {
                self.jobs.insert(job, Purpose::Probe(probe));
            }
            Err(e) => {
                self.probe_failures.insert(
                    service,
                    format!(
                        "the readiness probe of `{}` could not start: failed to {e}",
                        s.spec.id.value
                    ),
                );
                self.scheduler.complete(probe, Step::Failed);
            }
        }
    }

    pub(super) fn stop_service(&mut self, id: NodeId) {
        if let (Some(job), Some(run)) = (self.services.get(&id), &self.run) {
            self.progress(Line::ServiceStopping {
                name: &self.plan.graph.node(id).name,
            });
            let _ = run.kill(*job);
        }
    }

    /// A service's process ended: unless the run stopped it, the providers that need it
    /// fail, saying how, and its probe stops waiting.
    pub(super) fn service_exited(
        &mut self,
        id: NodeId,
        code: Option<i32>,
        signal: Option<i32>,
        spawn_error: Option<String>,
        killed: bool,
    ) {
        self.services.remove(&id);
        if killed {
            return;
        }
        let how = how_ended(spawn_error, code, signal);
        let name = self.plan.graph.node(id).name.clone();
        let ready = self
            .plan
            .graph
            .outgoing(id)
            .iter()
            .any(|(probe, _)| self.scheduler.state(*probe) == State::Succeeded);
        let tail = self
            .service_logs
            .get(&id)
            .map(|log| last_lines(log, 5))
            .unwrap_or_default();
        self.probe_failures
            .insert(id, ended_reason(&name, &how, ready, &tail));
        self.progress(Line::ServiceEnded {
            name: &name,
            how: &how,
        });
        // Its probe cannot succeed now: stop waiting for it.
        let probes: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, purpose)| matches!(purpose, Purpose::Probe(p) if self.plan.graph.incoming(*p).iter().any(|(s, _)| *s == id)))
            .map(|(job, _)| *job)
            .collect();
        if let Some(run) = &self.run {
            for job in probes {
                let _ = run.kill(job);
            }
        }
        self.scheduler.service_exited(id);
    }

    /// A probe gave up: its service was never seen ready (the first reason stands).
    pub(super) fn probe_failed(&mut self, probe: NodeId, reason: &str) {
        for (service, _) in self.plan.graph.incoming(probe) {
            let name = self.plan.graph.node(service).name.clone();
            self.probe_failures
                .entry(service)
                .or_insert_with(|| format!("{name} was never observed ready: {reason}"));
        }
        self.scheduler.complete(probe, Step::Failed);
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
    fn a_service_that_ended_says_how_when_and_what_its_log_ended_with() {
        assert_eq!(
            how_ended(Some("`srv` not found".into()), Some(127), None),
            "could not start: `srv` not found"
        );
        assert_eq!(how_ended(None, Some(2), None), "exited with code 2");
        assert_eq!(how_ended(None, None, Some(9)), "was killed by signal 9");
        assert_eq!(how_ended(None, None, None), "ended");
        assert_eq!(
            ended_reason("web", "exited with code 2", false, "boom | bye"),
            "web exited with code 2 before it was ready; its log ends with: boom | bye"
        );
        assert_eq!(
            ended_reason("web", "ended", true, ""),
            "web ended before its users finished"
        );
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
