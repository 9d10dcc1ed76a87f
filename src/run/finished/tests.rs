//! Unit tests of [`super`].

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use proofgraph_graph::CapabilityName;

use super::*;
use crate::proof::receipt::Exit;
use crate::run::testing::{at, discovery_pair, node, provider, seal};

const TAP_3: &[u8] = b"TAP version 13\n1..3\nok 1 - a\nok 2 - b\nok 3 - c\n";

fn exited(code: i32) -> Ended {
    Ended::Exited(Exit {
        code: Some(code),
        signal: None,
        timed_out: false,
    })
}

fn finished(ended: Ended, reason: Option<&str>) -> Finished {
    Finished {
        reason: reason.map(str::to_owned),
        ..Finished::ran(
            ended,
            PathBuf::from("/l"),
            Duration::ZERO,
            SystemTime::now(),
        )
    }
}

/// `unit` (a command with a report), `pw` (Playwright, none declared), `test-web`
/// (discovery, declared) with its receiver `discovery-web` (minimum 5), `bare`
/// (discovery, none declared), `lint` (a command without a report).
fn graph() -> SealedGraph {
    let mut unit = provider("unit", Adapter::Command, &["make", "test"]);
    unit.report = Some(at("out/unit.tap".to_owned()));
    let mut pw = provider("pw", Adapter::Playwright, &["playwright", "test"]);
    pw.capability = Some(at(CapabilityName::parse("browser").expect("valid")));
    let [producer, receiver] = discovery_pair(Some(5));
    let mut bare = provider("bare", Adapter::TestDiscovery, &["sh"]);
    bare.capability = Some(at(CapabilityName::test()));
    let lint = provider("lint", Adapter::Command, &["lint"]);
    seal(vec![unit, pw, producer, receiver, bare, lint], Vec::new())
}

#[test]
fn each_adapter_reads_its_report_from_where_it_is_written() {
    let g = graph();
    let ok = exited(0);
    let source = |id: &str, ended: &Ended| report_source(node(&g, id), ended);
    assert_eq!(source("unit", &ok), ReportSource::Kept("out/unit.tap"));
    assert_eq!(source("pw", &ok), ReportSource::PlaywrightLog);
    assert_eq!(source("test-web", &ok), ReportSource::Declared("web.tap"));
    assert_eq!(source("bare", &ok), ReportSource::Undeclared);
    assert_eq!(source("lint", &ok), ReportSource::None);
    // A failed exit still reads what was written; nothing ran, nothing is read.
    assert_eq!(
        source("test-web", &exited(1)),
        ReportSource::Declared("web.tap")
    );
    let error = Ended::Error("could not start".into());
    for id in ["unit", "pw", "test-web", "bare", "lint"] {
        assert_eq!(source(id, &error), ReportSource::None, "{id}");
    }
}

#[test]
fn a_producer_is_held_to_its_receivers_stricter_minimum() {
    let g = graph();
    assert_eq!(discovery_floor(&g, node(&g, "test-web")), 5);
    assert_eq!(discovery_floor(&g, node(&g, "bare")), 1);
    let judged = judge_execution(
        &g,
        node(&g, "test-web"),
        &finished(exited(0), None),
        &ReportFile::Bytes("web.tap".into(), TAP_3.to_vec()),
        &[],
        &[],
    );
    let discovery: Vec<Outcome> = judged
        .verdicts
        .iter()
        .filter(|v| v.output.capability == CapabilityName::discovery())
        .map(|v| v.outcome)
        .collect();
    assert_eq!(
        discovery,
        [Outcome::Fail],
        "3 tests, below the receiver's 5"
    );
}

#[test]
fn a_commands_report_is_kept_but_never_decides() {
    let g = graph();
    let report = ReportFile::Bytes("out/unit.tap".into(), TAP_3.to_vec());
    let p = node(&g, "unit");
    let raw = judge::judge(p, &g, &exited(0), &report, 1_000);
    assert!(!raw.tests.passed.is_empty(), "the report names its tests");
    let done = finished(exited(0), None);
    let judged = judge_execution(&g, p, &done, &report, &[], &[]);
    assert_eq!(judged.tests, TestNames::default());
    assert_eq!(summary(&judged, &done), (true, Mark::Passed, None));
}

#[test]
fn an_executions_reason_replaces_only_the_reasons_of_what_did_not_pass() {
    let g = graph();
    let p = node(&g, "lint");
    let why = "the contracts differ: a is sha256:1; b is sha256:2";
    let done = finished(exited(1), Some(why));
    let failed = judge_execution(&g, p, &done, &ReportFile::NotExpected, &[], &[]);
    assert_eq!(
        summary(&failed, &done),
        (false, Mark::Failed, Some(why.to_owned()))
    );
    let done = finished(exited(0), Some(why));
    let passed = judge_execution(&g, p, &done, &ReportFile::NotExpected, &[], &[]);
    assert_eq!(summary(&passed, &done), (true, Mark::Passed, None));
    // How the command ended names a failure: out of time, or never started.
    let timed = finished(
        Ended::Exited(Exit {
            code: None,
            signal: Some(9),
            timed_out: true,
        }),
        None,
    );
    let judged = judge_execution(&g, p, &timed, &ReportFile::NotExpected, &[], &[]);
    assert_eq!(summary(&judged, &timed).1, Mark::TimedOut);
    let never = Finished {
        not_started: true,
        ..finished(
            Ended::Error("its command could not be started: `x` not found".into()),
            None,
        )
    };
    let judged = judge_execution(&g, p, &never, &ReportFile::NotExpected, &[], &[]);
    assert_eq!(summary(&judged, &never).1, Mark::CouldNotStart);
}

#[test]
fn inputs_that_moved_while_it_ran_in_place_make_every_verdict_an_error() {
    let g = graph();
    let moved: Vec<String> = (1..=6).map(|i| format!("root:src/{i}.rs")).collect();
    let judged = judge_execution(
        &g,
        node(&g, "lint"),
        &finished(exited(0), None),
        &ReportFile::NotExpected,
        &moved,
        &[],
    );
    let (passed, mark, reason) = summary(&judged, &finished(exited(0), None));
    assert_eq!((passed, mark), (false, Mark::Failed));
    assert_eq!(
        reason.as_deref(),
        Some(
            "its inputs changed while it ran in place (`root:src/1.rs`, `root:src/2.rs`, `root:src/3.rs`, `root:src/4.rs`, `root:src/5.rs`, …): what it observed is not what its fingerprint binds"
        )
    );
}

#[test]
fn the_mark_is_the_summarys_word_and_the_reason_the_first_given() {
    let g = graph();
    // No report where one is declared: both of the producer's receipts inconclusive.
    let judged = judge_execution(
        &g,
        node(&g, "test-web"),
        &finished(exited(0), None),
        &ReportFile::Missing("web.tap".into()),
        &[],
        &[],
    );
    let done = finished(exited(0), None);
    let (passed, mark, reason) = summary(&judged, &done);
    assert_eq!((passed, mark), (false, Mark::Inconclusive));
    assert_eq!(reason, judged.verdicts[0].reason);
    let mut mixed = judged.clone();
    mixed.verdicts[1].outcome = Outcome::Error;
    mixed.verdicts[1].reason = Some("second".into());
    mixed.verdicts[0].outcome = Outcome::Pass;
    mixed.verdicts[0].reason = None;
    // An error among passes is a failure, as the requirement's state says.
    assert_eq!(
        summary(&mixed, &done),
        (false, Mark::Failed, Some("second".to_owned()))
    );
    // Nothing to judge is not a failure of anything.
    mixed.verdicts.clear();
    assert_eq!(summary(&mixed, &done), (true, Mark::Passed, None));
}
