//! Unit tests of [`super`]: scripted events drive the core, and what it answers is
//! checked command by command. No process starts: the host prepares each provider as an
//! execution of its own (or one shared, where a test says so) and judges an exit 0 a pass.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use proofgraph_graph::model::Service;
use proofgraph_graph::span::Pos;
use proofgraph_graph::{Adapter, ResourceName};

use super::*;
use crate::run::ended;
use crate::run::testing::{at, pid, provider, seal, sid};

/// The host of these tests: every provider prepared (its key its name unless `keys`
/// says otherwise), a result passing when the command exited 0.
struct Fake<'g> {
    graph: &'g SealedGraph,
    keys: BTreeMap<String, String>,
}

impl Host for Fake<'_> {
    type Key = String;
    type Work = String;
    /// The provider, whether it passed, and why not when it could not run.
    type Record = (String, bool, Option<String>);

    fn prepare(&mut self, id: NodeId) -> Prepared<String, String> {
        let name = self.graph.node(id).name.clone();
        let key = self
            .keys
            .get(&name)
            .cloned()
            .unwrap_or_else(|| name.clone());
        Prepared::Run {
            key,
            hold: false,
            work: name,
        }
    }

    fn finished(&mut self, _job: JobRef, exit: Exit) -> Finished {
        let ended = ended::ended(
            exit.code,
            exit.signal,
            exit.timed_out,
            exit.killed,
            exit.spawn_error,
        );
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(60);
        Finished::ran(ended, PathBuf::from("/log"), exit.duration, wall)
    }

    fn error(&mut self, reason: String, not_started: bool) -> Finished {
        Finished {
            not_started,
            ..Finished::error_now(reason)
        }
    }

    fn judge(&mut self, id: NodeId, finished: &Finished) -> (bool, Self::Record) {
        let ok = matches!(&finished.ended, Ended::Exited(e) if e.code == Some(0));
        let why = match &finished.ended {
            Ended::Error(why) => Some(why.clone()),
            Ended::Exited(_) => None,
        };
        (ok, (self.graph.node(id).name.clone(), ok, why))
    }

    fn service_log_tail(&mut self, _id: NodeId) -> String {
        "listen EADDRINUSE".to_owned()
    }
}

/// What the core tells these tests to do.
type FakeCommand = Command<String, (String, bool, Option<String>)>;

/// A core over `graph` and what it said, each command as a line.
struct Script<'g> {
    graph: &'g SealedGraph,
    core: Core<'g, Fake<'g>>,
    host: Fake<'g>,
    /// The job last started for each node.
    jobs: BTreeMap<String, JobRef>,
}

impl<'g> Script<'g> {
    fn new(graph: &'g SealedGraph, keep_going: bool, routing: Routing) -> Self {
        let wanted = graph.providers().map(|(_, id, _)| id).collect();
        Script {
            graph,
            core: Core::new(graph, &wanted, keep_going, routing),
            host: Fake {
                graph,
                keys: BTreeMap::new(),
            },
            jobs: BTreeMap::new(),
        }
    }

    fn poll(&mut self) -> Vec<String> {
        let commands = self.core.poll(&mut self.host);
        self.shown(commands)
    }

    fn feed(&mut self, event: Event) -> Vec<String> {
        let commands = self.core.handle(event, &mut self.host);
        self.shown(commands)
    }

    fn job(&self, name: &str) -> JobRef {
        *self
            .jobs
            .get(name)
            .unwrap_or_else(|| panic!("`{name}` was started"))
    }

    /// Node `name`'s job exited with `code`.
    fn exits(&mut self, name: &str, code: i32) -> Vec<String> {
        let exit = Exit {
            code: Some(code),
            started: true,
            ..Exit::default()
        };
        let job = self.job(name);
        self.feed(Event::Ended { job, exit })
    }

    /// Node `name`'s job was taken back before it started.
    fn withdrawn(&mut self, name: &str) -> Vec<String> {
        let exit = Exit {
            killed: true,
            started: false,
            ..Exit::default()
        };
        let job = self.job(name);
        self.feed(Event::Ended { job, exit })
    }

    fn shown(&mut self, commands: Vec<FakeCommand>) -> Vec<String> {
        commands.into_iter().map(|c| self.show(c)).collect()
    }

    fn show(&mut self, command: FakeCommand) -> String {
        let name = |id: NodeId| self.graph.node(id).name.clone();
        let on = |on: Where| {
            if on == Where::Local {
                "local"
            } else {
                "remote"
            }
        };
        match command {
            Command::Start { job, on: at, what } => {
                let node = match what {
                    Start::Provider { node, .. } => node,
                    Start::Service(node) | Start::Probe { probe: node, .. } => node,
                };
                self.jobs.insert(name(node), job);
                format!("start {} on {}", name(node), on(at))
            }
            Command::Cancel { job, .. } => format!("cancel {}", self.named(job)),
            Command::Kill { job, .. } => format!("kill {}", self.named(job)),
            Command::Resume { on: at } => format!("resume {}", on(at)),
            Command::Record {
                record: (provider, ok, why),
                keep_artifacts,
            } => {
                let mark = if ok { "passed" } else { "failed" };
                let kept = if keep_artifacts {
                    " (artifacts kept)"
                } else {
                    ""
                };
                let why = why.map(|w| format!(": {w}")).unwrap_or_default();
                format!("record {provider} {mark}{kept}{why}")
            }
            Command::Withdrawn(id) => format!("withdrawn {}", name(id)),
            Command::Say(note) => match note {
                Note::Interrupted => "say interrupted".to_owned(),
                Note::ServiceStarted(id) => format!("say {} started", name(id)),
                Note::ServiceStopping(id) => format!("say {} stopping", name(id)),
                Note::ServiceEnded { service, how } => format!("say {} {how}", name(service)),
                Note::RanLocally { node, reason } => {
                    format!("say {} runs locally: {reason}", name(node))
                }
            },
            Command::Halt => "halt".to_owned(),
        }
    }

    /// The node a job was last started for.
    fn named(&self, job: JobRef) -> String {
        self.jobs
            .iter()
            .find(|(_, j)| **j == job)
            .map_or_else(|| format!("{job:?}"), |(n, _)| n.clone())
    }

    fn leftovers(&self, interrupted: bool) -> Vec<(String, Leftover)> {
        let wanted = self.graph.providers().map(|(_, id, _)| id).collect();
        self.core
            .leftovers(&wanted, interrupted)
            .into_iter()
            .map(|(id, left)| (self.graph.node(id).name.clone(), left))
            .collect()
    }
}

fn n(v: usize) -> NonZeroUsize {
    NonZeroUsize::new(v).expect("non-zero")
}

/// `local` providers at once on the local run, nothing remote.
fn local(slots: usize) -> Routing {
    Routing {
        local: n(slots),
        remote: 0,
        remote_nodes: BTreeSet::new(),
        fallback: Fallback::Fail,
    }
}

fn command(id: &str) -> proofgraph_graph::model::Provider {
    provider(id, Adapter::Command, &[id])
}

/// `web`, a service with a readiness probe.
fn web() -> Service {
    let mut s = Service::new(sid("web"));
    s.command = Some(at(vec!["serve".to_owned()]));
    s.readiness = Some(proofgraph_graph::model::Readiness {
        pos: Pos::default(),
        url: Some(at(proofgraph_graph::readiness::ReadinessUrl::parse(
            "http://127.0.0.1:4100/health",
        ))),
        expect_header: None,
        expect_body: Some(at("ok".to_owned())),
        timeout_ms: None,
    });
    s
}

#[test]
fn the_local_run_is_handed_twice_its_slots_so_one_always_waits_in_it() {
    assert_eq!(admitted(n(1)), n(2));
    assert_eq!(admitted(n(8)), n(16));
    assert_eq!(admitted(NonZeroUsize::MAX), NonZeroUsize::MAX);
}

#[test]
fn a_local_run_goes_on_by_itself_only_after_an_exit_0_judged_by_its_status() {
    let exit = |code| {
        Ended::Exited(crate::proof::receipt::Exit {
            code: Some(code),
            signal: None,
            timed_out: false,
        })
    };
    assert!(!resumes(false, &exit(0)));
    assert!(resumes(true, &exit(0)), "held to be judged from its report");
    assert!(resumes(false, &exit(1)), "held after a failure");
    assert!(resumes(false, &Ended::Error("could not start".into())));
}

#[test]
fn a_started_provider_is_judged_when_it_ends_and_its_result_handed_to_the_recorder() {
    let graph = seal(vec![command("unit")], Vec::new());
    let mut s = Script::new(&graph, false, local(2));
    assert_eq!(s.poll(), ["start unit on local"]);
    assert!(s.poll().is_empty(), "started once");
    assert!(!s.core.is_idle() && !s.core.is_finished());
    // Exit 0, judged by its status: the run goes on by itself.
    assert_eq!(s.exits("unit", 0), ["record unit passed (artifacts kept)"]);
    assert!(s.poll().is_empty());
    assert!(s.core.is_idle() && s.core.is_finished());
    assert!(s.leftovers(false).is_empty());
    // The receipt writer wrote it: nothing more to do.
    assert!(s.feed(Event::Persisted { written: true }).is_empty());
}

#[test]
fn a_provider_starts_only_once_what_it_depends_on_passed() {
    let mut b = command("b");
    b.depends_on = Some(vec![at(pid("a"))]);
    let graph = seal(vec![command("a"), b], Vec::new());
    let mut s = Script::new(&graph, false, local(4));
    assert_eq!(s.poll(), ["start a on local"]);
    assert_eq!(s.exits("a", 0), ["record a passed (artifacts kept)"]);
    assert_eq!(s.poll(), ["start b on local"]);
    // A failing dependency: its dependent is blocked, and the run holds what waits.
    let mut b = command("b");
    b.depends_on = Some(vec![at(pid("a"))]);
    let graph = seal(vec![command("a"), b], Vec::new());
    let mut s = Script::new(&graph, true, local(4));
    s.poll();
    assert_eq!(s.exits("a", 1), ["record a failed", "resume local"]);
    assert!(s.poll().is_empty());
    assert!(s.core.is_finished());
    assert_eq!(s.leftovers(false), [("b".to_owned(), Leftover::Blocked)]);
}

#[test]
fn a_failure_without_keep_going_takes_back_what_waits_and_starts_nothing_more() {
    let graph = seal(vec![command("a"), command("b"), command("c")], Vec::new());
    let mut s = Script::new(&graph, false, local(2));
    assert_eq!(s.poll(), ["start a on local", "start b on local"]);
    // `b` waits in the run for its slot: it is taken back, nothing is resumed.
    assert_eq!(s.exits("a", 1), ["record a failed", "cancel b"]);
    assert!(s.poll().is_empty(), "nothing starts after a failure");
    assert_eq!(s.withdrawn("b"), ["withdrawn b"]);
    assert!(s.core.is_finished());
    let blocked = [
        ("b".to_owned(), Leftover::Blocked),
        ("c".to_owned(), Leftover::Blocked),
    ];
    assert_eq!(s.leftovers(false), blocked);
    // With --keep-going the others run.
    let mut s = Script::new(&graph, true, local(2));
    s.poll();
    assert_eq!(s.exits("a", 1), ["record a failed", "resume local"]);
    assert_eq!(s.poll(), ["start c on local"]);
}

#[test]
fn a_receipt_that_could_not_be_written_stops_the_run_unless_keep_going() {
    let graph = seal(vec![command("a"), command("b")], Vec::new());
    let mut s = Script::new(&graph, false, local(2));
    s.poll();
    s.exits("a", 0);
    assert_eq!(s.feed(Event::Persisted { written: false }), ["cancel b"]);
    let mut s = Script::new(&graph, true, local(2));
    s.poll();
    s.exits("a", 0);
    assert!(s.feed(Event::Persisted { written: false }).is_empty());
}

#[test]
fn identical_executions_run_once_and_every_provider_sharing_one_is_judged_from_it() {
    let graph = seal(vec![command("a"), command("b"), command("c")], Vec::new());
    let mut s = Script::new(&graph, false, local(4));
    for name in ["a", "b"] {
        s.host.keys.insert(name.to_owned(), "same".to_owned());
    }
    assert_eq!(s.poll(), ["start a on local", "start c on local"]);
    assert_eq!(
        s.exits("a", 0),
        [
            "record a passed (artifacts kept)",
            "record b passed (artifacts kept)"
        ]
    );
}

#[test]
fn providers_holding_one_exclusive_resource_never_run_together() {
    let browser = || Some(vec![at(ResourceName::parse("browser").expect("valid"))]);
    let mut a = command("a");
    a.resources = browser();
    let mut b = command("b");
    b.resources = browser();
    let graph = seal(vec![a, b, command("c")], Vec::new());
    let mut s = Script::new(&graph, false, local(4));
    assert_eq!(s.poll(), ["start a on local", "start c on local"]);
    s.exits("c", 0);
    assert!(s.poll().is_empty(), "`b` waits for the browser");
    s.exits("a", 0);
    assert_eq!(s.poll(), ["start b on local"]);
}

#[test]
fn a_failed_probe_fails_the_providers_of_its_service_and_starts_nothing_of_theirs() {
    let mut e2e = command("e2e");
    e2e.services = Some(vec![at(sid("web"))]);
    let graph = seal(vec![e2e, command("unit")], vec![web()]);
    let mut s = Script::new(&graph, false, local(4));
    let first = s.poll();
    assert!(
        first.contains(&"start unit on local".to_owned()),
        "{first:?}"
    );
    assert!(
        first.contains(&"start service:web on local".to_owned()),
        "{first:?}"
    );
    let web = s.job("service:web");
    assert_eq!(s.feed(Event::Started(web)), ["say service:web started"]);
    assert_eq!(s.poll(), ["start probe:web on local"]);
    let probe = s.job("probe:web");
    let reason = "connection refused".to_owned();
    assert!(s.feed(Event::NotReady { job: probe, reason }).is_empty());
    // Its users cannot start: the service stops, `e2e` never starts.
    assert_eq!(s.poll(), ["say service:web stopping", "kill service:web"]);
    assert_eq!(s.exits("unit", 0), ["record unit passed (artifacts kept)"]);
    let killed = Exit {
        killed: true,
        started: true,
        ..Exit::default()
    };
    assert!(
        s.feed(Event::Ended {
            job: web,
            exit: killed
        })
        .is_empty()
    );
    assert!(s.poll().is_empty());
    assert!(s.core.is_finished());
    assert!(!s.jobs.contains_key("e2e"));
    let why = "service:web was never observed ready: connection refused".to_owned();
    assert_eq!(
        s.leftovers(false),
        [("e2e".to_owned(), Leftover::Error(why))]
    );
}

#[test]
fn a_service_that_ends_on_its_own_says_how_and_its_probe_stops_waiting() {
    let mut e2e = command("e2e");
    e2e.services = Some(vec![at(sid("web"))]);
    let graph = seal(vec![e2e], vec![web()]);
    let mut s = Script::new(&graph, false, local(4));
    s.poll();
    let web = s.job("service:web");
    s.feed(Event::Started(web));
    s.poll();
    let exit = Exit {
        code: Some(2),
        started: true,
        ..Exit::default()
    };
    assert_eq!(
        s.feed(Event::Ended { job: web, exit }),
        ["say service:web exited with code 2", "kill probe:web"]
    );
    let why =
        "service:web exited with code 2 before it was ready; its log ends with: listen EADDRINUSE";
    assert_eq!(
        s.leftovers(false),
        [("e2e".to_owned(), Leftover::Error(why.to_owned()))]
    );
}

#[test]
fn a_signal_mid_run_stops_every_job_and_leaves_the_rest_interrupted_without_receipts() {
    let graph = seal(vec![command("a"), command("b"), command("c")], Vec::new());
    let mut s = Script::new(&graph, false, local(2));
    assert_eq!(s.poll(), ["start a on local", "start b on local"]);
    assert_eq!(
        s.feed(Event::Signal),
        ["say interrupted", "kill a", "kill b", "halt"]
    );
    assert!(s.poll().is_empty(), "nothing starts after a signal");
    let interrupted: Vec<(String, Leftover)> = ["a", "b", "c"]
        .map(|p| (p.to_owned(), Leftover::Interrupted))
        .into();
    assert_eq!(s.leftovers(true), interrupted);
}

/// Every provider of `graph` routed to the remote executor, `slots` at a time.
fn remote(graph: &SealedGraph, slots: usize, fallback: Fallback) -> Routing {
    Routing {
        local: n(2),
        remote: slots,
        remote_nodes: graph.providers().map(|(_, id, _)| id).collect(),
        fallback,
    }
}

#[test]
fn a_job_the_remote_executor_lost_runs_again_locally_with_a_warning_and_is_judged_once() {
    let graph = seal(vec![command("a")], Vec::new());
    let mut s = Script::new(&graph, false, remote(&graph, 4, Fallback::Local));
    assert_eq!(s.poll(), ["start a on remote"]);
    let job = s.job("a");
    let reason = "the engine went away".to_owned();
    assert_eq!(
        s.feed(Event::Lost { job, reason }),
        [
            "say a runs locally: the engine went away",
            "start a on local"
        ]
    );
    assert_ne!(s.job("a"), job, "a new job");
    assert_eq!(s.exits("a", 0), ["record a passed (artifacts kept)"]);
    assert!(s.poll().is_empty());
    assert!(s.core.is_finished());
}

#[test]
fn a_job_the_remote_executor_lost_fails_when_it_may_not_run_locally() {
    let graph = seal(vec![command("a"), command("b")], Vec::new());
    let mut s = Script::new(&graph, true, remote(&graph, 4, Fallback::Fail));
    assert_eq!(s.poll(), ["start a on remote", "start b on remote"]);
    let job = s.job("a");
    let reason = "the engine went away".to_owned();
    assert_eq!(
        s.feed(Event::Lost { job, reason }),
        [
            "record a failed: the remote executor lost its execution (the engine went away); with `--executor remote` it does not run on this machine"
        ]
    );
    // Nothing runs here, and nothing is resumed on a remote engine.
    assert!(s.poll().is_empty());
    assert_eq!(s.exits("b", 0), ["record b passed (artifacts kept)"]);
}

#[test]
fn remote_jobs_are_bounded_apart_from_local_ones() {
    let graph = seal(
        vec![command("a"), command("b"), command("c"), command("d")],
        Vec::new(),
    );
    let mut routing = remote(&graph, 1, Fallback::Local);
    routing
        .remote_nodes
        .remove(&graph.provider(&pid("d")).expect("d"));
    let mut s = Script::new(&graph, false, routing);
    // One remote slot: `b` and `c` wait for it in the core; `d` runs here meanwhile.
    assert_eq!(s.poll(), ["start a on remote", "start d on local"]);
    assert_eq!(
        s.exits("a", 0),
        ["record a passed (artifacts kept)", "start b on remote"]
    );
    assert_eq!(
        s.exits("b", 0),
        ["record b passed (artifacts kept)", "start c on remote"]
    );
    // A failure takes back what waits for a slot at once: it never ran.
    let mut s = Script::new(&graph, false, remote(&graph, 1, Fallback::Local));
    assert_eq!(s.poll(), ["start a on remote"]);
    assert_eq!(
        s.exits("a", 1),
        [
            "record a failed",
            "withdrawn b",
            "withdrawn c",
            "withdrawn d"
        ]
    );
    assert!(s.core.is_finished());
}

#[test]
fn a_job_that_cannot_be_handed_over_fails_its_providers_as_a_configuration_problem() {
    let graph = seal(vec![command("a")], Vec::new());
    let mut s = Script::new(&graph, true, local(2));
    s.poll();
    let job = s.job("a");
    let reason = "its command could not be started: failed to spawn".to_owned();
    assert_eq!(
        s.feed(Event::NotStarted {
            job,
            reason,
            spawn: true
        }),
        ["record a failed: its command could not be started: failed to spawn"]
    );
    assert!(s.core.is_finished());
}

#[test]
fn a_service_that_ended_says_how_when_and_what_its_log_ended_with() {
    assert_eq!(
        how_ended(Some("`srv` not found"), Some(127), None),
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
fn the_core_names_nothing_that_does_io_reads_a_clock_or_starts_a_process() {
    let source = include_str!("../scheduling.rs");
    let code = source
        .split("#[cfg(test)]")
        .next()
        .expect("the code before its tests");
    for banned in [
        "fs_err",
        "std::fs",
        "std::io",
        "std::net",
        "std::process",
        "std::env",
        "tokio",
        "proofgraph_sandbox",
        "now(",
        "super::shell",
        "super::local_run",
    ] {
        assert!(
            !code.contains(banned),
            "the scheduling core names `{banned}`"
        );
    }
}
