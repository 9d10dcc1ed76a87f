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
        &host(),
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
            &host(),
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
        &host(),
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
fn without_inputs_a_tracked_report_or_an_ignored_command_file_is_reported() {
    let dir = temp();
    write(
        dir.path(),
        &[
            ("run.sh", "true\n"),
            ("unit.json", "{}\n"),
            ("local.sh", "true\n"),
            ("new.sh", "true\n"),
            ("target/tool.sh", "true\n"),
            (".gitignore", "local.sh\n"),
        ],
    );
    git(dir.path(), &["init", "--quiet"]);
    git(dir.path(), &["add", "run.sh", "unit.json", ".gitignore"]);
    let tracked_report = with_report(
        provider("test", Adapter::TestDiscovery, &["sh", "run.sh"]),
        "unit.json",
    );
    let ignored_script = provider("static-analysis", Adapter::Command, &["sh", "local.sh"]);
    let left_out = with_capability(
        provider("lint", Adapter::Command, &["sh", "target/tool.sh"]),
        "static-analysis",
    );
    // Untracked but not ignored: `git status` shows it, so every sandbox has it.
    let untracked = with_capability(
        provider("fmt", Adapter::Command, &["sh", "new.sh"]),
        "static-analysis",
    );
    let findings = doctor(
        &root(dir.path()),
        &[claim("c", &["test", "static-analysis"], None)],
        &[tracked_report, ignored_script, left_out, untracked],
        &[],
        &host(),
        &[],
    );
    assert_eq!(
        codes(&findings),
        [
            "report_inside_inputs",
            "command_file_untracked",
            "command_file_untracked"
        ],
        "{findings:#?}"
    );
    assert!(findings[0].fix.contains("git rm --cached unit.json"));
    assert!(
        findings[1].message.contains("git ignores it"),
        "{findings:#?}"
    );
    assert!(findings[1].fix.contains("git add -f local.sh"));
    assert!(
        findings[2]
            .message
            .contains("`target/`, which sandboxes leave out"),
        "{findings:#?}"
    );
    assert!(
        findings[2].fix.contains("setupCache: [target]") && !findings[2].fix.contains("git add"),
        "a dependency directory is setup's to make: {findings:#?}"
    );
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
    let findings = doctor(
        &repos,
        &[claim("c", &["test"], None)],
        &[unit],
        &services,
        &host(),
        &[],
    );
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
    let findings = doctor(&root(dir.path()), &claims, &[], &[], &host(), &[]);
    assert_eq!(
        codes(&findings),
        [
            "unwired_capability",
            "unwired_capability",
            "unwired_capability",
            "unwired_capability",
            // The recommended provider would run where no setup installs
            // the app's dependencies.
            "dependencies_not_installed"
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

fn venv_setup() -> bootstrap::Setup {
    bootstrap::Setup {
        commands: vec![
            vec!["python3".into(), "-m".into(), "venv".into(), ".venv".into()],
            vec![
                ".venv/bin/pip".into(),
                "install".into(),
                "-r".into(),
                "requirements.txt".into(),
            ],
        ],
        cache: vec![".venv".into()],
    }
}

fn venv_pytest() -> proofgraph_graph::model::Provider {
    with_report(
        provider(
            "test",
            Adapter::TestDiscovery,
            &[".venv/bin/python", "-m", "pytest", "--junitxml=pytest.xml"],
        ),
        "pytest.xml",
    )
}

/// A path the repository's setup makes is setup's, never `git add`'s:
/// present or not in the checkout, ignored or not.
#[test]
fn a_path_the_setup_makes_is_said_to_be_made_by_it() {
    let dir = temp();
    write(
        dir.path(),
        &[("requirements.txt", "pytest\n"), (".gitignore", ".venv/\n")],
    );
    git(dir.path(), &["init", "--quiet"]);
    git(dir.path(), &["add", "."]);
    let claims = [claim("c", &["test"], None)];
    let mut repos = root(dir.path());
    repos[0].setup = venv_setup();
    // Not made here yet: the sandbox gets it from setup.
    let findings = doctor(&repos, &claims, &[venv_pytest()], &[], &host(), &[]);
    assert_eq!(codes(&findings), ["setup_makes_path"], "{findings:#?}");
    assert_eq!(findings[0].severity, bootstrap::Severity::Info);
    assert!(
        findings[0].message.contains("`.venv/bin/python`")
            && findings[0]
                .message
                .contains("`.venv` is in its `setupCache`"),
        "{findings:#?}"
    );
    assert!(!findings[0].fix.contains("git add"));
    // Made in the checkout too (and ignored): still setup's.
    write(dir.path(), &[(".venv/bin/python", "#!/bin/sh\n")]);
    let findings = doctor(&repos, &claims, &[venv_pytest()], &[], &host(), &[]);
    assert_eq!(codes(&findings), ["setup_makes_path"], "{findings:#?}");

    // Without a setup, the ignored venv is in no sandbox: the fix is a setup.
    let bare = root(dir.path());
    let findings = doctor(&bare, &claims, &[venv_pytest()], &[], &host(), &[]);
    assert_eq!(
        codes(&findings),
        ["command_file_untracked"],
        "{findings:#?}"
    );
    assert!(
        findings[0].fix.contains("setupCache: [.venv]") && !findings[0].fix.contains("git add"),
        "{findings:#?}"
    );
    // And without it in the checkout either, the program is missing.
    fs_err::remove_dir_all(dir.path().join(".venv")).expect("remove .venv");
    let findings = doctor(&bare, &claims, &[venv_pytest()], &[], &host(), &[]);
    assert_eq!(codes(&findings), ["executable_not_found"], "{findings:#?}");
}

#[test]
fn dependencies_no_setup_installs_are_reported() {
    let dir = temp();
    write(
        dir.path(),
        &[
            (
                "package.json",
                r#"{"scripts": {"test": "vitest"}, "devDependencies": {"vitest": "^3.2.0"}}"#,
            ),
            ("package-lock.json", "{}"),
        ],
    );
    git(dir.path(), &["init", "--quiet"]);
    let claims = [claim("c", &["static-analysis"], None)];
    let lint = with_capability(
        provider("lint", Adapter::Command, &["npm", "run", "lint"]),
        "static-analysis",
    );
    let findings = doctor(
        &root(dir.path()),
        &claims,
        std::slice::from_ref(&lint),
        &[],
        &host(),
        &[],
    );
    assert_eq!(
        codes(&findings),
        ["dependencies_not_installed"],
        "{findings:#?}"
    );
    let f = &findings[0];
    assert!(f.message.contains("1 dependency"), "{f:#?}");
    assert!(
        f.message.contains("a sandbox never has `node_modules`"),
        "{f:#?}"
    );
    assert_eq!(
        f.fix,
        "Add `setup: [[npm, ci, --no-audit, --no-fund]]` and `setupCache: [node_modules]` to repository `root` in proofgraph.yaml (docs/setup.md)."
    );
    // A local node_modules does not reach a sandbox…
    write(dir.path(), &[("node_modules/vitest/package.json", "{}")]);
    let findings = doctor(
        &root(dir.path()),
        &claims,
        std::slice::from_ref(&lint),
        &[],
        &host(),
        &[],
    );
    assert_eq!(codes(&findings), ["dependencies_not_installed"]);
    // …but it is what a run in place uses.
    let in_place = bootstrap::Host {
        in_place: true,
        ..host()
    };
    let findings = doctor(
        &root(dir.path()),
        &claims,
        std::slice::from_ref(&lint),
        &[],
        &in_place,
        &[],
    );
    assert!(findings.is_empty(), "{findings:#?}");
    fs_err::remove_dir_all(dir.path().join("node_modules")).expect("remove node_modules");
    let findings = doctor(
        &root(dir.path()),
        &claims,
        std::slice::from_ref(&lint),
        &[],
        &in_place,
        &[],
    );
    assert!(
        findings[0]
            .message
            .contains("does not exist in the checkout"),
        "{findings:#?}"
    );
    // A setup that installs them (cached or not) clears it.
    for setup in [
        bootstrap::Setup {
            commands: vec![vec!["npm".into(), "ci".into()]],
            cache: vec!["node_modules".into()],
        },
        bootstrap::Setup {
            commands: vec![vec!["sh".into(), "-c".into(), "npm ci --no-audit".into()]],
            cache: vec![],
        },
    ] {
        let mut repos = root(dir.path());
        repos[0].setup = setup;
        let findings = doctor(
            &repos,
            &claims,
            std::slice::from_ref(&lint),
            &[],
            &host(),
            &[],
        );
        assert!(findings.is_empty(), "{findings:#?}");
    }
    // No provider runs in the repository: nothing stands in the way.
    let findings = doctor(&root(dir.path()), &[], &[], &[], &host(), &[]);
    assert!(findings.is_empty(), "{findings:#?}");
    // A provider that runs no Node.js tooling needs no node_modules…
    let clippy = with_capability(
        provider("lint", Adapter::Command, &["cargo", "clippy"]),
        "static-analysis",
    );
    let findings = doctor(&root(dir.path()), &claims, &[clippy], &[], &host(), &[]);
    assert!(findings.is_empty(), "{findings:#?}");
    // …one whose shell script runs it does.
    let script = with_capability(
        provider(
            "lint",
            Adapter::Command,
            &["sh", "-c", "npx eslint . && echo ok"],
        ),
        "static-analysis",
    );
    let findings = doctor(&root(dir.path()), &claims, &[script], &[], &host(), &[]);
    assert_eq!(
        codes(&findings),
        ["dependencies_not_installed"],
        "{findings:#?}"
    );
}

#[test]
fn a_program_not_on_path_is_named_with_what_to_install() {
    let dir = temp();
    write(dir.path(), &[("uv.lock", "version = 1\n")]);
    let test = with_report(
        provider(
            "test",
            Adapter::TestDiscovery,
            &["uv", "run", "pytest", "--junitxml=test-results/p.xml"],
        ),
        "test-results/p.xml",
    );
    let claims = [claim("c", &["test"], None)];
    let (no_uv, _bin) = host_without(&["uv"]);
    let findings = doctor(
        &root(dir.path()),
        &claims,
        std::slice::from_ref(&test),
        &[],
        &no_uv,
        &[],
    );
    assert_eq!(codes(&findings), ["executable_not_found"], "{findings:#?}");
    assert!(
        findings[0]
            .message
            .contains("runs `uv`, which is not on its PATH")
    );
    assert!(
        findings[0].fix.starts_with("Install uv (`pipx install uv`"),
        "{findings:#?}"
    );
    // The provider's own PATH is where its program is looked up.
    let tools = bin_dir(&["uv"]);
    let mut own = test.clone();
    own.env = Some(
        [(
            proofgraph_graph::EnvName::parse("PATH").expect("an env name"),
            proofgraph_graph::span::Spanned::new(
                tools.path().to_string_lossy().into_owned(),
                proofgraph_graph::span::Pos::default(),
            ),
        )]
        .into_iter()
        .collect(),
    );
    let findings = doctor(&root(dir.path()), &claims, &[own], &[], &no_uv, &[]);
    assert!(findings.is_empty(), "{findings:#?}");
    // The runner inside bootstrap's report wrapper is looked up too.
    let (no_go, _bin) = host_without(&["go"]);
    let wrapped = with_report(
        provider(
            "test",
            Adapter::TestDiscovery,
            &[
                "sh",
                "-c",
                "mkdir -p r && exec \"$@\" > r/go.json",
                "sh",
                "go",
                "test",
                "-json",
                "-count=1",
                "./...",
            ],
        ),
        "r/go.json",
    );
    let findings = doctor(&root(dir.path()), &claims, &[wrapped], &[], &no_go, &[]);
    assert_eq!(codes(&findings), ["executable_not_found"], "{findings:#?}");
    assert!(findings[0].fix.contains("https://go.dev/dl/"));
}

#[test]
fn go_test_with_its_test_cache_on_is_named() {
    let dir = temp();
    write(
        dir.path(),
        &[("go.mod", "module example.com/m\n\ngo 1.18\n")],
    );
    git(dir.path(), &["init", "--quiet"]);
    git(dir.path(), &["add", "."]);
    let claims = [claim("c", &["test"], None)];
    let wrapper = ["sh", "-c", "mkdir -p r && exec \"$@\" > r/go.json", "sh"];
    let go_test = |args: &[&str]| -> Vec<&'static str> {
        let argv: Vec<&str> = args.to_vec();
        let p = with_report(provider("test", Adapter::TestDiscovery, &argv), "r/go.json");
        codes(&doctor(&root(dir.path()), &claims, &[p], &[], &host(), &[]))
    };
    // Replayed: directly, in bootstrap's wrapper, in a shell script, as `command`.
    for args in [
        &["go", "test", "-json", "./..."][..],
        &[&wrapper[..], &["go", "test", "-json", "./..."][..]].concat(),
        &["sh", "-c", "go test -json ./... > r/go.json"],
        &["/usr/bin/go", "test", "-run", "TestX", "./..."],
    ] {
        assert_eq!(go_test(args), ["go_test_replays"], "{args:?}");
    }
    let command = with_capability(
        provider("lint", Adapter::Command, &["go", "test", "./..."]),
        "static-analysis",
    );
    let checks = [claim("c", &["static-analysis"], None)];
    let findings = doctor(&root(dir.path()), &checks, &[command], &[], &host(), &[]);
    assert_eq!(codes(&findings), ["go_test_replays"], "{findings:#?}");
    assert!(
        findings[0].message.contains("without `-count=1`")
            && findings[0].fix.contains("Add `-count=1`"),
        "{findings:#?}"
    );
    // Any -count turns the cache off: in the argv, a script, or GOFLAGS.
    for args in [
        &["go", "test", "-json", "-count=1", "./..."][..],
        &[
            &wrapper[..],
            &["go", "test", "-json", "-count=1", "./..."][..],
        ]
        .concat(),
        &["sh", "-c", "go test -count 1 -json ./... > r/go.json"],
        &["go", "test", "-test.count=2", "./..."],
        &["go", "vet", "./..."],
    ] {
        assert!(go_test(args).is_empty(), "{args:?}");
    }
    let mut flagged = with_report(
        provider(
            "test",
            Adapter::TestDiscovery,
            &["go", "test", "-json", "./..."],
        ),
        "r/go.json",
    );
    flagged.env = Some(
        [(
            proofgraph_graph::EnvName::parse("GOFLAGS").expect("a name"),
            proofgraph_graph::span::Spanned::new(
                "-mod=readonly -count=1".to_owned(),
                proofgraph_graph::span::Pos::default(),
            ),
        )]
        .into_iter()
        .collect(),
    );
    let findings = doctor(&root(dir.path()), &claims, &[flagged], &[], &host(), &[]);
    assert!(findings.is_empty(), "{findings:#?}");
    // So does the repository's declared `go-build` cache, which adds `-count=1` to GOFLAGS.
    let mut cached = root(dir.path());
    cached[0].caches = vec!["go-build".to_owned()];
    let plain = with_report(
        provider(
            "test",
            Adapter::TestDiscovery,
            &["go", "test", "-json", "./..."],
        ),
        "r/go.json",
    );
    let findings = doctor(&cached, &claims, &[plain], &[], &host(), &[]);
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn a_timed_out_run_suggests_a_timeout_from_its_duration() {
    let dir = temp();
    write(dir.path(), &[("run.sh", "sleep 1000\n")]);
    git(dir.path(), &["init", "--quiet"]);
    git(dir.path(), &["add", "."]);
    let claims = [claim("c", &["static-analysis"], None)];
    let slow = with_capability(
        provider("slow", Adapter::Command, &["sh", "run.sh"]),
        "static-analysis",
    );
    let id = proofgraph_graph::ProviderId::parse("slow").expect("an id");
    let timed_out = bootstrap::LastRun {
        provider: id.clone(),
        timed_out: true,
        duration_ms: 120_004,
    };
    let findings = doctor(
        &root(dir.path()),
        &claims,
        std::slice::from_ref(&slow),
        &[],
        &host(),
        std::slice::from_ref(&timed_out),
    );
    assert_eq!(codes(&findings), ["timeout_too_short"], "{findings:#?}");
    assert!(
        findings[0]
            .message
            .contains("timed out after 120.0 s (the default `timeoutMs` of 120000)"),
        "{findings:#?}"
    );
    assert!(
        findings[0]
            .fix
            .starts_with("Set `timeoutMs: 300000` on provider `slow`"),
        "{findings:#?}"
    );
    // Raised past the run since: nothing to say. A run that finished: nothing.
    let mut raised = slow.clone();
    raised.timeout_ms = Some(proofgraph_graph::span::Spanned::new(
        300_000,
        proofgraph_graph::span::Pos::default(),
    ));
    let finished = bootstrap::LastRun {
        timed_out: false,
        ..timed_out.clone()
    };
    for (p, last) in [(raised, &timed_out), (slow, &finished)] {
        let findings = doctor(
            &root(dir.path()),
            &claims,
            &[p],
            &[],
            &host(),
            std::slice::from_ref(last),
        );
        assert!(findings.is_empty(), "{findings:#?}");
    }
}

/// A crate whose manifest declares crates cargo fetches, tested by cargo in a job whose
/// network is private, with no setup fetching them: the first download would fail. The
/// fix is the cached fetch setup with a placeholder for every target the manifest names;
/// a setup that fetches, the provider's own `CARGO_HOME`, the host network, or only
/// `path` dependencies clear it.
#[test]
fn crates_no_setup_fetches_are_reported_with_the_recipe_for_this_manifest() {
    let dir = temp();
    write(
        dir.path(),
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n\n[dev-dependencies]\nlocal = { path = \"../local\" }\n\n[[bench]]\nname = \"speed\"\nharness = false\n",
            ),
            ("src/lib.rs", "pub fn f() {}\n"),
            ("benches/speed.rs", "fn main() {}\n"),
        ],
    );
    git(dir.path(), &["init", "--quiet"]);
    let claims = [claim("c", &["static-analysis"], None)];
    let check = |p: &proofgraph_graph::model::Provider, setup: Option<bootstrap::Setup>| {
        let mut repos = root(dir.path());
        if let Some(setup) = setup {
            repos[0].setup = setup;
        }
        doctor(&repos, &claims, std::slice::from_ref(p), &[], &host(), &[])
    };
    let test = with_capability(
        provider(
            "check",
            Adapter::Command,
            &["cargo", "test", "--no-fail-fast"],
        ),
        "static-analysis",
    );
    let findings = check(&test, None);
    assert_eq!(
        codes(&findings),
        ["dependencies_need_network"],
        "{findings:#?}"
    );
    let f = &findings[0];
    assert!(
        f.message.contains("1 crate cargo downloads (`itoa`)"),
        "{f:#?}"
    );
    assert_eq!(
        f.fix,
        "Add `setup: [[sh, -c, \"mkdir -p benches src && touch benches/speed.rs src/lib.rs && CARGO_HOME=.cargo-home cargo fetch\"]]` and `setupCache: [.cargo-home]` to repository `root` in proofgraph.yaml, and give its cargo provider `env: {CARGO_HOME: .cargo-home}` and `--offline` (docs/setup.md)."
    );
    // Behind a shell, too.
    let wrapped = with_capability(
        provider(
            "check",
            Adapter::Command,
            &["sh", "-c", "cargo test && echo done"],
        ),
        "static-analysis",
    );
    assert_eq!(codes(&check(&wrapped, None)), ["dependencies_need_network"]);
    // A setup that fetches clears it.
    let fetching = bootstrap::Setup {
        commands: vec![vec![
            "sh".to_owned(),
            "-c".to_owned(),
            "touch src/lib.rs && CARGO_HOME=.cargo-home cargo fetch".to_owned(),
        ]],
        cache: vec![".cargo-home".to_owned()],
    };
    assert!(check(&test, Some(fetching)).is_empty());
    // So does the host network.
    let mut online = test.clone();
    online.network = Some(proofgraph_graph::span::Spanned {
        value: proofgraph_graph::model::Network::Host,
        pos: proofgraph_graph::span::Pos::default(),
    });
    assert!(check(&online, None).is_empty());
    // Only `path` dependencies: nothing to fetch.
    write(
        dir.path(),
        &[(
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[dependencies]\nlocal = { path = \"../local\" }\n",
        )],
    );
    assert!(check(&test, None).is_empty());
}

/// A Go module requiring modules, tested by `go` on a job's private network with no setup
/// downloading them: the fix is docs/setup.md's go recipe; a setup that downloads, a
/// committed `vendor/`, `-mod=vendor`, or only local replacements clear it.
#[test]
fn go_modules_no_setup_downloads_are_reported_with_the_recipe() {
    let dir = temp();
    write(
        dir.path(),
        &[
            (
                "go.mod",
                "module example.com/app\n\ngo 1.21\n\nrequire (\n\texample.com/greet v1.0.0\n\texample.com/local v0.0.0\n)\n\nreplace example.com/local => ../local\n",
            ),
            ("app_test.go", "package app\n"),
        ],
    );
    git(dir.path(), &["init", "--quiet"]);
    let claims = [claim("c", &["static-analysis"], None)];
    let check = |p: &proofgraph_graph::model::Provider, setup: Option<bootstrap::Setup>| {
        let mut repos = root(dir.path());
        if let Some(setup) = setup {
            repos[0].setup = setup;
        }
        doctor(&repos, &claims, std::slice::from_ref(p), &[], &host(), &[])
    };
    let test = with_capability(
        provider(
            "check",
            Adapter::Command,
            &["go", "test", "-count=1", "./..."],
        ),
        "static-analysis",
    );
    let findings = check(&test, None);
    assert_eq!(
        codes(&findings),
        ["dependencies_need_network"],
        "{findings:#?}"
    );
    assert!(
        findings[0]
            .message
            .contains("1 module go downloads (`example.com/greet`)"),
        "{findings:#?}"
    );
    assert!(
        findings[0]
            .fix
            .contains("GOMODCACHE=$PWD/.gomodcache go mod download -modcacherw"),
        "{findings:#?}"
    );
    let downloading = bootstrap::Setup {
        commands: vec![vec![
            "sh".to_owned(),
            "-c".to_owned(),
            "GOMODCACHE=$PWD/.gomodcache go mod download -modcacherw".to_owned(),
        ]],
        cache: vec![".gomodcache".to_owned()],
    };
    assert!(check(&test, Some(downloading)).is_empty());
    let mut vendored = test.clone();
    vendored.env = Some(std::collections::BTreeMap::from([(
        proofgraph_graph::EnvName::parse("GOFLAGS").expect("a name"),
        proofgraph_graph::span::Spanned {
            value: "-mod=vendor".to_owned(),
            pos: proofgraph_graph::span::Pos::default(),
        },
    )]));
    assert!(check(&vendored, None).is_empty());
    write(
        dir.path(),
        &[("vendor/modules.txt", "# example.com/greet v1.0.0\n")],
    );
    assert!(check(&test, None).is_empty());
    fs_err::remove_dir_all(dir.path().join("vendor")).expect("remove vendor");
    write(
        dir.path(),
        &[(
            "go.mod",
            "module example.com/app\n\ngo 1.21\n\nrequire example.com/local v0.0.0\n\nreplace example.com/local => ./local\n",
        )],
    );
    assert!(check(&test, None).is_empty());
}
