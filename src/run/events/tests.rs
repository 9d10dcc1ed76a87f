//! Unit tests of [`super`].

use super::*;

#[test]
fn actions_serialize_under_the_names_prove_has_always_printed() {
    let all = [
        (ProviderAction::Ran, "ran"),
        (ProviderAction::Reused, "reused"),
        (ProviderAction::Blocked, "blocked"),
        (ProviderAction::Interrupted, "interrupted"),
        (ProviderAction::NotRun, "not_run"),
        (ProviderAction::Produced, "produced"),
    ];
    for (action, name) in all {
        assert_eq!(
            serde_json::to_value(action).expect("serializes"),
            serde_json::Value::from(name)
        );
    }
}

#[test]
fn a_provider_run_serializes_byte_for_byte_as_before() {
    let run = ProviderRun {
        provider: "unit".into(),
        action: ProviderAction::NotRun,
        reason: Some("why".into()),
        duration_ms: None,
        receipts: vec![ReceiptView {
            receipt: ProviderId::parse("unit").expect("an id"),
            capability: proofgraph_graph::CapabilityName::test(),
            outcome: Outcome::Inconclusive,
            reason: None,
            sha256: Sha256::of(b"receipt"),
        }],
        log: None,
        log_tail: Vec::new(),
        failures: Default::default(),
        result: None,
    };
    assert_eq!(
        serde_json::to_string(&run).expect("serializes"),
        format!(
            r#"{{"provider":"unit","action":"not_run","reason":"why","duration_ms":null,"receipts":[{{"receipt":"unit","capability":"test","outcome":"inconclusive","reason":null,"sha256":"{}"}}]}}"#,
            crate::store::sha256_hex(b"receipt")
        )
    );
}

#[test]
fn each_line_reads_as_the_executor_has_always_written_it() {
    let repo = RepoId::parse("api").expect("valid");
    let provider = ProviderId::parse("unit").expect("valid");
    let service = ServiceId::parse("web").expect("valid");
    let argv = ["npm".to_owned(), "ci".to_owned()];
    let so_far = crate::proof::receipt::Counts {
        total: 12,
        passed: 10,
        failed: 2,
        ..Default::default()
    };
    let cases = [
        (
            Line::StillRunning {
                provider: "unit",
                elapsed: std::time::Duration::from_secs(80),
                tally: None,
            },
            "  ...     unit still running (1m20s)",
        ),
        (
            Line::StillRunning {
                provider: "unit",
                elapsed: std::time::Duration::from_secs(5),
                tally: Some(&so_far),
            },
            "  ...     unit still running (5s; so far 12 tests: 10 passed, 2 failed)",
        ),
        (
            Line::SetupRestored {
                repo: &repo,
                files: 3,
                copied: None,
            },
            "  setup   api: restored 3 files from the setup cache (mounted)",
        ),
        (
            Line::SetupRestored {
                repo: &repo,
                files: 3,
                copied: Some("the run has no mount namespace"),
            },
            "  setup   api: restored 3 files from the setup cache (copied: the run has no mount namespace)",
        ),
        (
            Line::SetupCommand {
                repo: &repo,
                argv: &argv,
            },
            "  setup   api: npm ci",
        ),
        (
            Line::SetupFailed {
                repo: &repo,
                reason: "`npm ci` exited with code 1",
            },
            "  setup   api failed: `npm ci` exited with code 1",
        ),
        (
            Line::Started {
                provider: &provider,
            },
            "  run     unit",
        ),
        (
            Line::ServiceStarted { service: &service },
            "  start   service web",
        ),
        (Line::ServiceStopping { name: "web" }, "  stop    web"),
        (
            Line::ServiceEnded {
                name: "web",
                how: "exited with code 2",
            },
            "  ended   web: exited with code 2",
        ),
        (
            Line::Judged {
                provider: &provider,
                mark: Mark::Passed,
                duration_ms: 12,
                reason: None,
            },
            "  passed  unit (12 ms)",
        ),
        (
            Line::Judged {
                provider: &provider,
                mark: Mark::Inconclusive,
                duration_ms: 0,
                reason: Some("no report"),
            },
            "  inconclusive unit (0 ms): no report",
        ),
        (
            Line::Judged {
                provider: &provider,
                mark: Mark::CouldNotStart,
                duration_ms: 0,
                reason: Some("its command could not be started: `x` not found"),
            },
            "  could not start unit (0 ms): its command could not be started: `x` not found",
        ),
        (
            Line::Unrecorded { provider: "unit" },
            "  unrecorded unit: its receipt could not be written (see the diagnostics)",
        ),
        (
            Line::Interrupted,
            "interrupted: stopping every process of the run",
        ),
    ];
    for (line, text) in cases {
        assert_eq!(line.to_string(), text);
    }
}
