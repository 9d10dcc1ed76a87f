//! `doctor`: every finding code, triggered by a layout and a provider.

use std::process::Command;

use bootstrap::{Finding, doctor};
use proofgraph_graph::model::Service;
use proofgraph_graph::{Adapter, ServiceId};

use crate::layouts::*;

fn codes(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.code).collect()
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .status()
        .unwrap_or_else(|e| {
            panic!("run git {args:?} ({e}); install git (apt-get install git) to run this test")
        });
    assert!(status.success(), "git {args:?} failed");
}

#[test]
fn a_command_file_outside_the_inputs_is_reported() {
    let dir = temp();
    write(
        dir.path(),
        &[
            ("scripts/test.sh", "#!/bin/sh\nexit 0\n"),
            ("src/lib.sh", "true\n"),
        ],
    );
    let test = with_report(
        with_inputs(
            provider("test", Adapter::TestDiscovery, &["sh", "scripts/test.sh"]),
            &["src/**"],
        ),
        "test-results/t.tap",
    );
    let findings = doctor(
        &root(dir.path()),
        &[claim("c", &["test"], None)],
        &[test],
        &[],
    );
    assert_eq!(codes(&findings), ["command_file_not_in_inputs"]);
    let f = &findings[0];
    assert_eq!(f.provider.as_ref().map(|p| p.as_str()), Some("test"));
    assert_eq!(f.capability.as_ref().map(|c| c.as_str()), Some("test"));
    assert_eq!(
        f.fix,
        "Add `scripts/test.sh` to the `inputs` of provider `test`."
    );
    insta::assert_json_snapshot!("doctor_command_file", findings);

    // Covered (directly, by a directory, or by a glob): no finding.
    for inputs in [
        &["src/**", "scripts/test.sh"][..],
        &["src/**", "scripts"],
        &["src/**", "scripts/*.sh"],
        &["src/**", "root:scripts/test.sh"],
    ] {
        let test = with_report(
            with_inputs(
                provider("test", Adapter::TestDiscovery, &["sh", "./scripts/test.sh"]),
                inputs,
            ),
            "test-results/t.tap",
        );
        let findings = doctor(
            &root(dir.path()),
            &[claim("c", &["test"], None)],
            &[test],
            &[],
        );
        assert!(findings.is_empty(), "{inputs:?}: {findings:?}");
    }
}

#[test]
fn a_report_inside_the_inputs_is_reported() {
    let dir = temp();
    write(dir.path(), &[("run.sh", "true\n")]);
    let test = with_report(
        with_inputs(
            provider("test", Adapter::TestDiscovery, &["sh", "run.sh"]),
            &["run.sh", "test-results/**"],
        ),
        "test-results/unit.json",
    );
    let findings = doctor(
        &root(dir.path()),
        &[claim("c", &["test"], None)],
        &[test],
        &[],
    );
    assert_eq!(codes(&findings), ["report_inside_inputs"]);
    assert!(
        findings[0]
            .message
            .contains("inside its input `test-results/**`")
    );
}

#[test]
fn without_inputs_a_tracked_report_or_an_untracked_command_file_is_reported() {
    let dir = temp();
    write(
        dir.path(),
        &[
            ("run.sh", "true\n"),
            ("unit.json", "{}\n"),
            ("local.sh", "true\n"),
        ],
    );
    git(dir.path(), &["init", "--quiet"]);
    git(dir.path(), &["add", "run.sh", "unit.json"]);
    let tracked_report = with_report(
        provider("test", Adapter::TestDiscovery, &["sh", "run.sh"]),
        "unit.json",
    );
    let untracked_script = provider("static-analysis", Adapter::Command, &["sh", "local.sh"]);
    let findings = doctor(
        &root(dir.path()),
        &[claim("c", &["test", "static-analysis"], None)],
        &[tracked_report, untracked_script],
        &[],
    );
    assert_eq!(
        codes(&findings),
        ["report_inside_inputs", "command_file_untracked"]
    );
    assert!(findings[0].fix.contains("git rm --cached unit.json"));
    assert!(findings[1].fix.contains("git add local.sh"));
}

#[test]
fn provider_wiring_problems() {
    let dir = temp();
    let web = sub(dir.path(), "web");
    write(&web, &[("package.json", "{}")]);
    let repos = [repo("web", &web)];
    let unit = with_service(
        with_capability(
            with_repository(
                provider("unit", Adapter::TestDiscovery, &["./bin/test"]),
                "web",
            ),
            "test",
        ),
        "api",
    );
    let services = [Service::new(ServiceId::parse("web").expect("valid"))];
    let findings = doctor(&repos, &[claim("c", &["test"], None)], &[unit], &services);
    assert_eq!(
        codes(&findings),
        [
            "unwired_capability",
            "unknown_service",
            "missing_discovery_provider",
            "test_report_missing",
            "executable_not_found",
        ]
    );
    insta::assert_json_snapshot!("doctor_wiring", findings);
}

#[test]
fn unwired_capabilities_carry_the_best_fix() {
    let dir = temp();
    vite_app(dir.path());
    let claims = [
        claim("profile-update", &["test", "accessibility"], None),
        claim("profile-review", &["review"], None),
    ];
    let findings = doctor(&root(dir.path()), &claims, &[], &[]);
    assert_eq!(
        codes(&findings),
        [
            "unwired_capability",
            "unwired_capability",
            "unwired_capability",
            "unwired_capability"
        ]
    );
    insta::assert_json_snapshot!("doctor_unwired", findings);
    assert!(findings[0].fix.starts_with(
        "Run `proofgraph evidence init <change> --write` to add the recommended provider `test`"
    ));
    assert!(
        findings[1]
            .fix
            .contains("which proves discovery from the same run")
    );
    assert!(findings[3].fix.contains("`external` provider"));
}
