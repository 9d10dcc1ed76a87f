//! `evidence detect|init|doctor` through the CLI: `init --write` followed by
//! `prove` proves the test claim with the real runners (cargo, pytest,
//! vitest); existing wiring keeps its bytes; `doctor` points at the file,
//! line and column of what stands in the way.
//!
//! The library's own tests (`bootstrap/tests/`) cover the rule table on
//! generated layouts with snapshots; these prove the wiring it writes runs.

use serde_json::Value;

use crate::support::{
    Run, Sandbox, assert_codes, assert_emits, git_commit_all, repo_root, statement, states,
};

/// The real HOME: rustup, pyenv and npm find their toolchains and caches
/// through it, as they do for a user. (The sandbox's isolated HOME only
/// matters for OpenSpec's global registry, which these tests do not use.)
fn real_home() -> String {
    std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned())
}

fn run(sb: &Sandbox, args: &[&str]) -> Run {
    run_with(sb, args, &[])
}

/// [`run`] with `vars` set too.
fn run_with(sb: &Sandbox, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let home = real_home();
    let mut all = vec![("HOME", home.as_str())];
    all.extend_from_slice(vars);
    sb.run_with_env(&sb.work(), args, &all)
}

/// A change whose one claim needs the `test` capability (and so `discovery`).
fn change(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: The code works, capabilities: [test]}\n",
    );
}

/// A sandbox holding [`change`] and `files` (path, text), all committed.
fn project(files: &[(&str, &str)]) -> Sandbox {
    let sb = Sandbox::new();
    change(&sb);
    for (rel, text) in files {
        sb.write(rel, text);
    }
    git_commit_all(&sb.work());
    sb
}

/// `init --write`, commit, `prove`: the claim is proven by the runner's
/// own report, with at least `tests` tests discovered.
fn init_then_prove(sb: &Sandbox, tests: u64) {
    init_then_prove_with(sb, tests, &[]);
}

/// [`init_then_prove`] with `vars` set for every command; `evidence doctor` finds nothing
/// that is not a note.
fn init_then_prove_with(sb: &Sandbox, tests: u64, vars: &[(&str, &str)]) {
    let run = |sb: &Sandbox, args: &[&str]| run_with(sb, args, vars);
    let preview = run(sb, &["evidence", "init", "add-x", "--json"]);
    preview.expect_code(0);
    assert_eq!(preview.json()["written"], false);
    assert!(
        !sb.work()
            .join("openspec/changes/add-x/execution.yaml")
            .exists(),
        "a preview writes nothing"
    );
    let init = run(sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(0);
    let doc = init.json();
    assert_eq!(doc["written"], true);
    assert_eq!(doc["added"], serde_json::json!(["test"]), "{doc:#}");
    run(sb, &["validate", "add-x", "--strict"]).expect_code(0);
    let doctor = run(sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(0);
    let findings = doctor.json();
    let worse: Vec<&Value> = findings["status"]
        .as_array()
        .expect("doctor's findings")
        .iter()
        .filter(|d| d["severity"] != "info")
        .collect();
    assert!(worse.is_empty(), "doctor after init --write: {worse:#?}");
    git_commit_all(&sb.work());
    let prove = run(sb, &["prove", "add-x", "--json"]);
    assert_eq!(
        prove.code,
        Some(0),
        "prove after init --write:\n{}\n{}",
        prove.stdout,
        prove.stderr
    );
    let doc = prove.json();
    let s = states(&doc);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s["works/discovery"], "passed");
    assert_eq!(s["works/test"], "passed");
    let sha = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["capability"] == "discovery")
        .and_then(|r| r["evidence"][0]["sha256"].as_str())
        .expect("a discovery receipt")
        .to_owned();
    let statement = statement(sb, &sha);
    let discovered = statement["predicate"]["proofgraph"]["discovered"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        discovered >= tests,
        "the runner's report counts {discovered} tests, expected at least {tests}: {doc:#}"
    );
}

#[test]
fn init_write_then_prove_a_cargo_crate() {
    let sb = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        (
            "src/lib.rs",
            "pub fn sum(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::sum(1, 2), 3); }\n    #[test]\n    fn adds_negatives() { assert_eq!(super::sum(-1, -2), -3); }\n}\n",
        ),
        (".gitignore", "target/\n"),
    ]);
    init_then_prove(&sb, 2);
}

#[test]
fn init_write_then_prove_a_pytest_project() {
    let sb = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        ("demo/__init__.py", "def sum(a, b):\n    return a + b\n"),
        (
            "tests/test_sum.py",
            "from demo import sum\n\n\ndef test_adds():\n    assert sum(1, 2) == 3\n\n\ndef test_adds_negatives():\n    assert sum(-1, -2) == -3\n",
        ),
    ]);
    // The real pytest, the Python test tools' (pinned): `python3` is their venv's.
    let path = sb.path_with_python_tools();
    init_then_prove_with(&sb, 2, &[("PATH", path.as_str())]);
}

/// Vitest comes from npm: the repository's `setup` runs `npm ci` in each
/// fresh sandbox (as a user's would), from the committed lockfile in
/// `fixtures/bootstrap/vitest`, and `setupCache` keeps `node_modules`.
#[test]
fn init_write_then_prove_a_vitest_project() {
    let sb = Sandbox::new();
    change(&sb);
    let fixture = repo_root().join("fixtures/bootstrap/vitest");
    for rel in [
        "package.json",
        "package-lock.json",
        "src/sum.js",
        "src/sum.test.js",
    ] {
        sb.write(rel, fs_err::read(fixture.join(rel)).expect("fixture"));
    }
    sb.write(".gitignore", "node_modules/\ntest-results/\n");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  root:\n    path: .\n    setup: [[npm, ci, --no-audit, --no-fund]]\n    setupCache: [node_modules]\n",
    );
    git_commit_all(&sb.work());
    init_then_prove(&sb, 2);
}

/// commander.js's shape (issue 27): `npm test` is `node --test && npm run check:type:ts`,
/// and package.json declares devDependencies the tests never import. `init --write` wires
/// the real `node --test` with its reporter flags (not `npm run test -- …`, whose flags
/// would reach the type check), `doctor` asks for no `node_modules`, and the real node
/// proves the claim with its tests counted — no `npm install` anywhere.
#[test]
fn init_write_then_prove_node_test_before_the_end_of_an_npm_test_chain() {
    let sb = project(&[
        (
            "package.json",
            r#"{"name": "demo", "main": "./index.js", "scripts": {"test": "node --test && npm run check:type:ts", "check:type:ts": "tsc --noEmit"}, "devDependencies": {"typescript": "^5.4.0", "eslint": "^9.0.0"}}
"#,
        ),
        ("package-lock.json", "{\"lockfileVersion\": 3}\n"),
        ("index.js", "exports.sum = (a, b) => a + b;\n"),
        (
            "tests/sum.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sum } = require('../');\n\ntest('adds', () => assert.equal(sum(1, 2), 3));\ntest('adds negatives', () => assert.equal(sum(-1, -2), -3));\n",
        ),
        (
            "eslint.config.js",
            "import js from 'eslint';\nexport default [js];\n",
        ),
        (".gitignore", "node_modules/\ntest-results/\n"),
    ]);
    let detect = run(&sb, &["evidence", "detect", "add-x", "--json"]);
    detect.expect_code(0);
    let doc = detect.json();
    let test = doc["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["name"] == "test")
        .expect("a test candidate");
    assert_eq!(test["recommended"], true, "{test:#}");
    let argv: Vec<&str> = test["provider"]["command"]
        .as_array()
        .expect("an argv")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        argv[4..],
        [
            "node",
            "--test-reporter=tap",
            "--test-reporter-destination=test-results/node-test.tap",
            "--test"
        ],
        "{argv:?}"
    );
    assert!(!argv.contains(&"npm"), "{argv:?}");
    init_then_prove(&sb, 2);
    assert!(
        !sb.work().join("node_modules").exists(),
        "nothing was installed"
    );
    // A test that does import a declared package needs node_modules: doctor says so.
    sb.write(
        "tests/types.test.js",
        "const ts = require('typescript');\nrequire('node:test')('has ts', () => {});\n",
    );
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    assert_codes!(doctor.status_codes(), ["dependencies_not_installed"]);
}

#[test]
fn init_keeps_an_existing_json_file_json_and_its_providers_byte_for_byte() {
    let existing = "{\n  \"version\": 1,\n  \"providers\": {\n    \"lint\": {\"adapter\": \"command\", \"capability\": \"static-analysis\", \"command\": [\"sh\", \"-c\", \"true\"]}\n  }\n}\n";
    let sb = project(&[
        (
            "openspec/changes/add-x/evidence.yaml",
            "version: 2\nclaims:\n  - {id: works, scenario: The code works, capabilities: [test, static-analysis]}\n",
        ),
        ("openspec/changes/add-x/execution.yaml", existing),
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", "#[test]\nfn t() {}\n"),
    ]);
    let init = run(&sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(0);
    assert_eq!(init.json()["kept"], serde_json::json!(["lint"]));
    let text = fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
        .expect("execution.yaml");
    assert!(text.starts_with('{'), "JSON stays JSON: {text}");
    let lint_line = existing.lines().nth(3).expect("the lint line");
    assert!(
        text.contains(lint_line),
        "the existing provider keeps its bytes: {text}"
    );
    serde_json::from_str::<Value>(&text).expect("still JSON");
    run(&sb, &["validate", "add-x", "--strict"]).expect_code(0);
}

#[test]
fn doctor_names_the_helper_script_inputs_do_not_cover_at_its_line() {
    let sb = project(&[
        (
            "scripts/test.sh",
            "#!/bin/sh\necho 'TAP version 13'; echo '1..1'; echo 'ok 1 - works'\n",
        ),
        ("src/app.sh", "echo app\n"),
        (
            "openspec/changes/add-x/execution.yaml",
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, scripts/test.sh]\n    inputs: [\"src/**\"]\n    report: out.tap\n",
        ),
    ]);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    assert_codes!(doctor.status_codes(), ["command_file_not_in_inputs"]);
    let doc = doctor.json();
    let d = &doc["status"][0];
    assert!(
        d["message"]
            .as_str()
            .unwrap_or_default()
            .contains("scripts/test.sh"),
        "{d:#}"
    );
    assert_eq!(
        d["target"], "openspec/changes/add-x/execution.yaml:3:3",
        "{d:#}"
    );
    assert!(d["fix"].as_str().is_some_and(|f| !f.is_empty()));
    // Covering the script clears it.
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, scripts/test.sh]\n    inputs: [\"src/**\", scripts/test.sh]\n    report: out.tap\n",
    );
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);
}

#[test]
fn doctor_reports_each_wiring_problem_with_its_code() {
    let sb = project(&[
        ("run-tests.sh", "echo ok\n"),
        (
            "openspec/changes/add-x/execution.yaml",
            r#"version: 1
providers:
  unit:
    adapter: test-discovery
    capability: test
    command: [sh, run-tests.sh]
  e2e:
    adapter: test-discovery
    capability: test
    command: [./missing.sh]
    report: out/report.xml
    inputs: ["out/**"]
"#,
        ),
    ]);
    // run-tests.sh stays in the working tree, but git stops tracking it and
    // ignores it: no sandbox has it. (Untracked and not ignored, it would be
    // an input like any file `git status` shows.)
    crate::support::git(&sb.work(), &["rm", "-q", "--cached", "run-tests.sh"]);
    sb.write(".gitignore", "run-tests.sh\n");
    crate::support::git(&sb.work(), &["add", ".gitignore"]);
    crate::support::git(&sb.work(), &["commit", "-q", "-m", "untrack"]);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    let codes = doctor.status_codes();
    assert_emits!(codes, "command_file_untracked");
    assert_emits!(codes, "missing_discovery_provider");
    assert_emits!(codes, "test_report_missing");
    assert_emits!(codes, "executable_not_found");
    assert_emits!(codes, "report_inside_inputs");
}

#[test]
fn detect_names_a_manifest_it_cannot_read() {
    let sb = project(&[("package.json", "{\"name\": \"broken\",")]);
    let detect = run(&sb, &["evidence", "detect", "add-x", "--json"]);
    detect.expect_code(0);
    assert_codes!(
        detect.status_codes(),
        ["manifest_unreadable"],
        "{}",
        detect.stdout
    );
    assert!(
        detect.json()["unresolved"]
            .as_array()
            .is_some_and(|u| !u.is_empty())
    );
}

/// A file `validate` accepts (RFC 8259 sets no limit on numbers) that the
/// editor cannot read back exactly is refused, not rewritten.
#[test]
fn init_refuses_a_file_it_cannot_edit_without_changing_it() {
    let existing = "{\"version\": 1, \"x-budget\": 1e400, \"providers\": {}}\n";
    let sb = project(&[
        ("openspec/changes/add-x/execution.yaml", existing),
        (
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", "#[test]\nfn t() {}\n"),
    ]);
    let init = run(&sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(3);
    assert_codes!(init.status_codes(), ["init_refused"]);
    assert_eq!(
        fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
            .expect("file"),
        existing,
        "a refused edit leaves the file as it was"
    );
}

/// A change with a proposal and delta specs but no evidence.yaml.
fn change_without_evidence(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/specs/profile/spec.md",
        "## ADDED Requirements\n\n### Requirement: Profile page\nThe API SHALL serve the page.\n\n#### Scenario: Known profile\n- **WHEN** a browser opens `/profile/1`\n- **THEN** the heading is `Ada`\n\n#### Scenario: Unknown profile\n- **WHEN** a browser opens `/profile/99`\n- **THEN** the answer is 404\n\n```md\n#### Scenario: Only an example\n- WHEN this is read as structure\n```\n\n## REMOVED Requirements\n\n### Requirement: Old page\n#### Scenario: Gone\n- WHEN nothing\n",
    );
    sb.write(
        "openspec/changes/add-x/specs/billing/spec.md",
        "## MODIFIED Requirements\n\n### Requirement: Totals\n#### Scenario: Sum of lines\n- **WHEN** an invoice has two lines\n- **THEN** its total is their sum\n",
    );
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    sb.write("src/lib.rs", "#[test]\nfn t() {}\n");
}

/// `detect`, `init` and `doctor` on a change without evidence.yaml: not
/// "nothing to wire" and exit 0, but `missing_evidence` naming where the
/// file belongs, exit 3 (a configuration problem), in both formats.
#[test]
fn a_change_without_evidence_yaml_stops_detect_init_and_doctor() {
    let sb = Sandbox::new();
    change_without_evidence(&sb);
    git_commit_all(&sb.work());
    for command in ["detect", "init", "doctor"] {
        let json = run(&sb, &["evidence", command, "add-x", "--json"]);
        json.expect_code(3);
        assert_codes!(json.status_codes(), ["missing_evidence"], "{command}");
        let doc = json.json();
        assert_eq!(doc["change"], Value::Null, "{command}: the null shape");
        let d = &doc["status"][0];
        assert_eq!(d["severity"], "error", "{command}");
        assert!(
            d["message"]
                .as_str()
                .is_some_and(|m| m.contains("`openspec/changes/add-x/evidence.yaml`")),
            "{command}: {d:#}"
        );
        assert_eq!(
            d["fix"],
            "Run `proofgraph evidence init add-x --claims-from-specs` to draft openspec/changes/add-x/evidence.yaml from the 3 scenarios of the change's delta specs, or write it by hand (docs/evidence.md).",
            "{command}"
        );
        let human = run(&sb, &["evidence", command, "add-x"]);
        human.expect_code(3);
        assert!(
            !human.stdout.contains("nothing"),
            "{command}: {}",
            human.stdout
        );
        assert!(
            human.stderr.contains("error[missing_evidence]")
                && human
                    .stderr
                    .contains("openspec/changes/add-x/evidence.yaml"),
            "{command}: {}",
            human.stderr
        );
    }
    // Without delta specs, the fix is to write the file.
    fs_err::remove_dir_all(sb.work().join("openspec/changes/add-x/specs")).expect("remove specs");
    let detect = run(&sb, &["evidence", "detect", "add-x", "--json"]);
    detect.expect_code(3);
    assert_emits!(detect.json(), "missing_evidence");
    assert_eq!(
        detect.json()["status"][0]["fix"],
        "Write openspec/changes/add-x/evidence.yaml with the claims the change must prove (docs/evidence.md)."
    );
    // `validate` still only warns: the change may be early.
    let validate = run(&sb, &["validate", "add-x", "--json"]);
    validate.expect_code(0);
}

/// `init --claims-from-specs`: one claim per scenario of the ADDED and
/// MODIFIED requirements (not REMOVED ones, not fenced examples), previewed
/// by default, created by `--write` (with the providers for them), and
/// never written over an existing file.
#[test]
fn init_drafts_claims_from_the_delta_specs_and_never_overwrites() {
    let sb = Sandbox::new();
    change_without_evidence(&sb);
    git_commit_all(&sb.work());
    let evidence = sb.work().join("openspec/changes/add-x/evidence.yaml");

    let preview = run(
        &sb,
        &["evidence", "init", "add-x", "--claims-from-specs", "--json"],
    );
    preview.expect_code(0);
    let doc = preview.json();
    let drafted = &doc["claims_from_specs"];
    assert_eq!(drafted["written"], false);
    assert_eq!(drafted["exists"], false);
    assert_eq!(
        drafted["specs"],
        serde_json::json!(["specs/billing/spec.md", "specs/profile/spec.md"])
    );
    let ids: Vec<&str> = drafted["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "totals-sum-of-lines",
            "profile-page-known-profile",
            "profile-page-unknown-profile"
        ]
    );
    assert_eq!(
        drafted["claims"][1]["scenario"],
        "Known profile: WHEN a browser opens `/profile/1`; THEN the heading is `Ada`"
    );
    assert_eq!(
        drafted["claims"][1]["capabilities"],
        serde_json::json!(["test"])
    );
    // The providers are detected for the drafted claims.
    assert_eq!(doc["added"], serde_json::json!(["test"]), "{doc:#}");
    assert_eq!(doc["written"], false);
    assert!(!evidence.exists(), "a preview writes nothing");
    let human = run(&sb, &["evidence", "init", "add-x", "--claims-from-specs"]);
    human.expect_code(0);
    assert!(
        human
            .stdout
            .contains("would create openspec/changes/add-x/evidence.yaml with 3 claims")
            && human
                .stdout
                .contains("  - id: profile-page-unknown-profile\n"),
        "{}",
        human.stdout
    );

    let write = run(
        &sb,
        &[
            "evidence",
            "init",
            "add-x",
            "--claims-from-specs",
            "--write",
            "--json",
        ],
    );
    write.expect_code(0);
    let doc = write.json();
    assert_eq!(doc["claims_from_specs"]["written"], true);
    assert_eq!(doc["written"], true, "execution.yaml too: {doc:#}");
    let text = fs_err::read_to_string(&evidence).expect("evidence.yaml was created");
    assert_eq!(
        Some(text.as_str()),
        doc["claims_from_specs"]["text"].as_str()
    );
    // What was written is a valid change, wired as drafted.
    run(&sb, &["validate", "add-x", "--strict"]).expect_code(0);
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);

    // Written again: the file keeps every byte, edits included.
    let edited = format!("{text}# my own note\n");
    sb.write("openspec/changes/add-x/evidence.yaml", &edited);
    for args in [
        &[
            "evidence",
            "init",
            "add-x",
            "--claims-from-specs",
            "--write",
            "--json",
        ][..],
        &["evidence", "init", "add-x", "--claims-from-specs"],
    ] {
        let again = run(&sb, args);
        again.expect_code(0);
        assert_eq!(
            fs_err::read_to_string(&evidence).expect("evidence.yaml"),
            edited,
            "{args:?}"
        );
    }
    let again = run(
        &sb,
        &["evidence", "init", "add-x", "--claims-from-specs", "--json"],
    );
    assert_eq!(again.json()["claims_from_specs"]["exists"], true);
}

/// A dangling symbolic link where evidence.yaml belongs is not a missing
/// file to write through: creating it fails, and the link stays.
#[test]
fn init_claims_from_specs_never_writes_through_a_link() {
    let sb = Sandbox::new();
    change_without_evidence(&sb);
    let link = sb.work().join("openspec/changes/add-x/evidence.yaml");
    let target = sb.path().join("elsewhere.yaml");
    std::os::unix::fs::symlink(&target, &link).expect("a dangling link");
    let write = run(
        &sb,
        &[
            "evidence",
            "init",
            "add-x",
            "--claims-from-specs",
            "--write",
            "--json",
        ],
    );
    write.expect_code(3);
    assert!(!target.exists(), "nothing was written through the link");
    assert!(
        fs_err::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()),
        "the link is left as it was"
    );
}

/// No scenario to draft from: `missing_evidence`, exit 3, and no file.
#[test]
fn init_claims_from_specs_without_scenarios_says_what_to_write() {
    let sb = Sandbox::new();
    change_without_evidence(&sb);
    fs_err::remove_dir_all(sb.work().join("openspec/changes/add-x/specs")).expect("remove specs");
    sb.write(
        "openspec/changes/add-x/specs/x/spec.md",
        "## ADDED Requirements\n\n### Requirement: Empty\nNo scenario yet.\n",
    );
    let init = run(
        &sb,
        &[
            "evidence",
            "init",
            "add-x",
            "--claims-from-specs",
            "--write",
            "--json",
        ],
    );
    init.expect_code(3);
    assert_codes!(init.status_codes(), ["missing_evidence"]);
    assert!(
        init.json()["status"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("specs/x/spec.md") && m.contains("hold no scenario")),
        "{}",
        init.stdout
    );
    assert!(
        !sb.work()
            .join("openspec/changes/add-x/evidence.yaml")
            .exists()
    );
}

/// A directory of executable stubs, for a PATH that has exactly them.
fn stub_bin(sb: &Sandbox, name: &str, programs: &[&str]) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = sb.path().join(name);
    fs_err::create_dir_all(&dir).expect("bin dir");
    for program in programs {
        let path = dir.join(program);
        fs_err::write(&path, "#!/bin/sh\nexit 0\n").expect("stub");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    dir.to_string_lossy().into_owned()
}

/// `detect` proposes only runners it finds on PATH; a missing one is shown
/// with what to install. No test suite is narrowed to its manifests.
#[test]
fn detect_proposes_only_runners_on_path_and_never_manifest_inputs() {
    let sb = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        ("uv.lock", "version = 1\n"),
        ("demo/__init__.py", "\n"),
        ("tests/test_demo.py", "def test_it():\n    pass\n"),
    ]);
    let without = stub_bin(&sb, "no-uv", &["python3", "sh"]);
    let with = stub_bin(&sb, "with-uv", &["python3", "sh", "uv"]);
    let detect = |path: &str, json: bool| {
        let mut args = vec!["evidence", "detect", "add-x"];
        if json {
            args.push("--json");
        }
        sb.run_with_env(&sb.work(), &args, &[("PATH", path)])
    };

    let missing = detect(&without, true);
    missing.expect_code(0);
    let doc = missing.json();
    let test = doc["candidates"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["capability"] == "test"))
        .expect("a test candidate");
    assert_eq!(test["provider"], Value::Null, "not proposed: {doc:#}");
    assert_eq!(test["recommended"], false);
    let unresolved = doc["unresolved"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["capability"] == "test"))
        .expect("test is unresolved");
    assert_eq!(unresolved["reason"], "command_unavailable");
    assert!(
        unresolved["next_action"]
            .as_str()
            .is_some_and(|a| a.starts_with("Install uv (`pipx install uv`")),
        "{unresolved:#}"
    );
    let human = detect(&without, false);
    assert!(
        human.stdout.contains("(not proposed)") && human.stdout.contains("`uv` is not on PATH"),
        "{}",
        human.stdout
    );
    // `init` adds nothing that could not start.
    let init = sb.run_with_env(
        &sb.work(),
        &["evidence", "init", "add-x", "--json"],
        &[("PATH", without.as_str())],
    );
    init.expect_code(0);
    assert_eq!(init.json()["added"], serde_json::json!([]));

    let found = detect(&with, true);
    found.expect_code(0);
    let doc = found.json();
    let test = doc["candidates"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["capability"] == "test"))
        .expect("a test candidate");
    assert_eq!(test["recommended"], true, "{doc:#}");
    assert_eq!(test["provider"]["command"][0], "uv");
    for c in doc["candidates"].as_array().into_iter().flatten() {
        assert!(c.get("suggested_inputs").is_none(), "{c:#}");
        assert!(c["provider"].get("inputs").is_none(), "{c:#}");
    }
    assert!(
        test["evidence"].as_array().into_iter().flatten().any(|e| e
            .as_str()
            .is_some_and(|e| e.contains("its inputs are the whole repository"))),
        "{test:#}"
    );
}

/// The honest Python wiring end to end: the repository's cached setup makes
/// `.venv` and installs pytest into it from PyPI (docs/setup.md's venv and pip
/// recipe, pinned as `tools/interop/requirements.txt` pins it), `detect`
/// proposes the venv's python, and `init --write` then `prove` proves the
/// claim with the code taken from the sandbox. Nothing of the machine's own
/// packages takes part: the venv is made without the system's site-packages.
#[test]
fn init_write_then_prove_pytest_through_the_venv_the_setup_makes() {
    let sb = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        ("src/demo/__init__.py", "def sum(a, b):\n    return a + b\n"),
        (
            "tests/test_sum.py",
            "from demo import sum\n\n\ndef test_adds():\n    assert sum(1, 2) == 3\n\n\ndef test_adds_negatives():\n    assert sum(-1, -2) == -3\n",
        ),
        (
            "requirements.txt",
            "pytest==9.2.0\niniconfig==2.3.1\npackaging==26.4\npluggy==1.7.0\nPygments==2.21.0\n",
        ),
        (".gitignore", ".venv/\ntest-results/\n"),
        (
            "proofgraph.yaml",
            "version: 1\nrepositories:\n  root:\n    path: .\n    setup:\n      - [python3, -m, venv, .venv]\n      - [.venv/bin/pip, install, --quiet, -r, requirements.txt]\n    setupCache: [.venv]\n",
        ),
    ]);
    let detect = run(&sb, &["evidence", "detect", "add-x", "--json"]);
    detect.expect_code(0);
    let doc = detect.json();
    let test = doc["candidates"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "test"))
        .expect("a test candidate");
    assert_eq!(
        test["provider"]["command"][0], ".venv/bin/python",
        "{doc:#}"
    );
    assert_eq!(test["provider"]["env"]["PYTHONPATH"], "src", "{doc:#}");
    init_then_prove(&sb, 2);
    // The venv path is setup's: doctor says so, and asks for no `git add`.
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(0);
    assert_codes!(doctor.status_codes(), ["setup_makes_path"]);
    let d = &doctor.json()["status"][0];
    assert_eq!(d["severity"], "info");
    // Line 3 holds the comment `init` writes above the provider it adds.
    assert_eq!(d["target"], "openspec/changes/add-x/execution.yaml:4:3");
    assert!(
        !d["fix"].as_str().unwrap_or_default().contains("git add"),
        "{d:#}"
    );
    let human = run(&sb, &["evidence", "doctor", "add-x"]);
    human.expect_code(0);
    assert_eq!(
        human.stdout,
        "add-x: nothing stands between the change and a proof run (1 note on stderr)\n"
    );
    assert!(
        human.stderr.contains("info[setup_makes_path]"),
        "{}",
        human.stderr
    );
}

/// `node_modules` that no setup installs: reported at the repository's
/// entry in the catalog (or the workspace without one), and cleared by the
/// documented setup.
#[test]
fn doctor_reports_dependencies_no_setup_installs() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write(
        "package.json",
        "{\"scripts\": {\"test\": \"vitest\"}, \"devDependencies\": {\"vitest\": \"^3.2.0\"}}\n",
    );
    sb.write("package-lock.json", "{}\n");
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [npm, test, --, --run, --reporter=junit, --outputFile=test-results/v.xml]\n    report: test-results/v.xml\n",
    );
    sb.write(".gitignore", "node_modules/\n");
    // A local install does not reach a sandbox.
    sb.write("node_modules/vitest/package.json", "{}\n");
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    assert_codes!(doctor.status_codes(), ["dependencies_not_installed"]);
    let d = &doctor.json()["status"][0];
    assert_eq!(d["target"], "workspace.repositories.root");
    assert_eq!(
        d["fix"],
        "Add `setup: [[npm, ci, --no-audit, --no-fund]]` and `setupCache: [node_modules]` to repository `root` in proofgraph.yaml (docs/setup.md)."
    );
    let human = run(&sb, &["evidence", "doctor", "add-x"]);
    human.expect_code(2);
    assert!(
        human.stderr.contains("warning[dependencies_not_installed]"),
        "{}",
        human.stderr
    );
    // With a catalog, at the repository's entry.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  root:\n    path: .\n",
    );
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    assert_emits!(doctor.json(), "dependencies_not_installed");
    assert_eq!(doctor.json()["status"][0]["target"], "proofgraph.yaml:3:3");
    // Running in place, the checkout's node_modules is what runs.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nsandbox: none\nrepositories:\n  root:\n    path: .\n",
    );
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);
    // The recipe clears it.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  root:\n    path: .\n    setup: [[npm, ci, --no-audit, --no-fund]]\n    setupCache: [node_modules]\n",
    );
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);
}

/// A program the provider runs that is on no PATH: named, with what to
/// install; the provider's own `env.PATH` is where it is looked up.
#[test]
fn doctor_reports_a_program_that_is_not_on_path() {
    let sb = project(&[
        ("uv.lock", "version = 1\n"),
        (
            "openspec/changes/add-x/execution.yaml",
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [uv, run, --no-sync, pytest, --junitxml=test-results/p.xml]\n    report: test-results/p.xml\n",
        ),
    ]);
    let without = stub_bin(&sb, "no-uv", &["python3", "sh"]);
    let doctor = sb.run_with_env(
        &sb.work(),
        &["evidence", "doctor", "add-x", "--json"],
        &[("PATH", without.as_str())],
    );
    doctor.expect_code(2);
    assert_codes!(doctor.status_codes(), ["executable_not_found"]);
    let d = &doctor.json()["status"][0];
    assert_eq!(d["target"], "openspec/changes/add-x/execution.yaml:3:3");
    assert!(
        d["fix"]
            .as_str()
            .is_some_and(|f| f.starts_with("Install uv (`pipx install uv`")),
        "{d:#}"
    );
    let tools = stub_bin(&sb, "tools", &["uv"]);
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [uv, run, --no-sync, pytest, --junitxml=test-results/p.xml]\n    report: test-results/p.xml\n    env: {{PATH: \"{tools}\"}}\n"
        ),
    );
    let doctor = sb.run_with_env(
        &sb.work(),
        &["evidence", "doctor", "add-x"],
        &[("PATH", without.as_str())],
    );
    doctor.expect_code(0);
}

/// A provider whose last run timed out: `doctor` suggests a `timeoutMs`
/// from the duration its receipt records, until the timeout is raised.
#[test]
fn doctor_suggests_a_timeout_after_a_run_timed_out() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: fast, scenario: It is fast, capabilities: [performance]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  performance:\n    adapter: command\n    command: [sleep, \"30\"]\n    timeoutMs: 400\n",
    );
    git_commit_all(&sb.work());
    let prove = run(&sb, &["prove", "add-x", "--json"]);
    assert_ne!(prove.code, Some(0), "{}\n{}", prove.stdout, prove.stderr);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    assert_codes!(doctor.status_codes(), ["timeout_too_short"]);
    let d = &doctor.json()["status"][0];
    assert_eq!(d["target"], "openspec/changes/add-x/execution.yaml:3:3");
    let fix = d["fix"].as_str().unwrap_or_default();
    let suggested: u64 = fix
        .strip_prefix("Set `timeoutMs: ")
        .and_then(|rest| rest.split('`').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a suggested timeout: {fix}"));
    assert!(
        suggested >= 800 && suggested.is_multiple_of(1000),
        "twice the run, rounded up to a second: {fix}"
    );
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("timed out") && m.contains("`timeoutMs: 400`")),
        "{d:#}"
    );
    // A receipt no trusted key vouches for says nothing: with the store's
    // key unpinned, the same receipt is not read.
    let pins = sb.config_home().join("proofgraph");
    let kept = sb.path().join("pins-kept");
    fs_err::rename(&pins, &kept).expect("move the pins away");
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);
    fs_err::rename(&kept, &pins).expect("restore the pins");
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(2);
    // Raised past the run: nothing to suggest.
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  performance:\n    adapter: command\n    command: [sleep, \"30\"]\n    timeoutMs: {suggested}\n"
        ),
    );
    run(&sb, &["evidence", "doctor", "add-x"]).expect_code(0);
}

/// `--claims-from-specs --write` writes nothing when `init` refuses to edit
/// execution.yaml: both files are worked out before either is written.
#[test]
fn init_claims_from_specs_writes_nothing_when_the_wiring_is_refused() {
    let sb = Sandbox::new();
    change_without_evidence(&sb);
    let existing = "{\"version\": 1, \"x-budget\": 1e400, \"providers\": {}}\n";
    sb.write("openspec/changes/add-x/execution.yaml", existing);
    git_commit_all(&sb.work());
    let init = run(
        &sb,
        &[
            "evidence",
            "init",
            "add-x",
            "--claims-from-specs",
            "--write",
            "--json",
        ],
    );
    init.expect_code(3);
    assert_codes!(init.status_codes(), ["init_refused"]);
    assert!(
        !sb.work()
            .join("openspec/changes/add-x/evidence.yaml")
            .exists(),
        "no evidence.yaml for wiring that was refused"
    );
    assert_eq!(
        fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
            .expect("file"),
        existing
    );
}

/// Wiring that runs `go test` with go's test cache on is named before it runs: a replay is
/// never a pass, so a warm cache would leave the claim inconclusive. `init` proposes
/// `-count=1`, its wiring is clean, and it proves on its first run.
#[test]
fn doctor_names_go_test_with_its_test_cache_on() {
    let sb = project(&[
        ("go.mod", "module example.com/m\n\ngo 1.18\n"),
        (
            "m_test.go",
            "package m\n\nimport \"testing\"\n\nfunc TestM(t *testing.T) {}\n",
        ),
        (
            "openspec/changes/add-x/execution.yaml",
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, -c, 'mkdir -p r && exec \"$@\" > r/go.json', sh, go, test, -json, ./...]\n    report: r/go.json\n",
        ),
    ]);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    assert_codes!(doctor.status_codes(), ["go_test_replays"]);
    let doc = doctor.json();
    assert_eq!(
        doc["status"][0]["target"], "openspec/changes/add-x/execution.yaml:3:3",
        "{doc:#}"
    );
    assert_eq!(
        doc["status"][0]["fix"],
        "Add `-count=1` to the `go test` arguments of provider `test` (after `test`)."
    );
    // What `init` writes for a Go module has it.
    fs_err::remove_file(sb.work().join("openspec/changes/add-x/execution.yaml")).expect("rm");
    git_commit_all(&sb.work());
    run(&sb, &["evidence", "init", "add-x", "--write"]).expect_code(0);
    let wired = fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
        .expect("written");
    assert!(wired.contains("-count=1"), "{wired}");
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    assert!(
        !doctor.status_codes().iter().any(|c| c == "go_test_replays"),
        "{:?}",
        doctor.status_codes()
    );
    // And it proves on its first run: the module's one test ran.
    let prove = run(&sb, &["prove", "add-x", "--json"]);
    assert_eq!(prove.code, Some(0), "{}\n{}", prove.stdout, prove.stderr);
    assert_eq!(
        states(&prove.json())["works/test"],
        "passed",
        "{}",
        prove.stdout
    );
}

/// Narrowed `inputs` that leave out files the runner looks for — a test beside the listed
/// ones, the manifest — are named before a run: the provider's world will not hold them.
#[test]
fn doctor_names_the_tests_a_runner_would_find_outside_the_inputs() {
    let sb = project(&[
        ("package.json", "{\"name\": \"x\"}\n"),
        ("lib/index.js", "module.exports = 1;\n"),
        ("tests/a.test.js", "require('node:test')('a', () => {});\n"),
        ("extra.test.js", "require('node:test')('b', () => {});\n"),
        (
            "openspec/changes/add-x/execution.yaml",
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [node, --test, --test-reporter=tap, --test-reporter-destination=out.tap]\n    inputs: [\"lib/**\", \"tests/**\"]\n    report: out.tap\n",
        ),
    ]);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    assert_codes!(doctor.status_codes(), ["runner_files_not_in_inputs"]);
    let doc = doctor.json();
    let message = doc["status"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`extra.test.js`") && message.contains("`package.json`"),
        "{message}"
    );
    assert!(!message.contains("tests/a.test.js"), "covered: {message}");
    // Covered, nothing to say.
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [node, --test, --test-reporter=tap, --test-reporter-destination=out.tap]\n    inputs: [\"lib/**\", \"tests/**\", \"*.test.js\", package.json]\n    report: out.tap\n",
    );
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    assert!(
        !doctor
            .status_codes()
            .iter()
            .any(|c| c == "runner_files_not_in_inputs"),
        "{:?}",
        doctor.status_codes()
    );
}

/// A crate with a dependency from crates.io, a `[[bench]]` target and no committed
/// `Cargo.lock`: `init --write` wires `cargo test --offline --no-fail-fast` with
/// `CARGO_HOME: .cargo-home` and writes proofgraph.yaml with the cached fetch setup for this
/// manifest (a placeholder for the bench target, no `--locked`), `evidence doctor` finds
/// nothing in the way, and the first `prove` passes — and a broken crate fails. Without
/// that setup, doctor says the job's private network cannot download the crate; and an
/// existing catalog gets the setup under its repository, every other byte kept.
#[test]
fn init_wires_a_crate_without_a_lockfile_that_proves_on_its_first_run() {
    let sb = Sandbox::new();
    change(&sb);
    sb.write(
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"=1.0.11\"\n\n[[bench]]\nname = \"speed\"\nharness = false\n\n[workspace]\n",
    );
    const LIB: &str = "pub fn shown(n: u32) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows() {\n        assert_eq!(super::shown(42), \"42\");\n    }\n}\n";
    sb.write("src/lib.rs", LIB);
    sb.write("benches/speed.rs", "fn main() {}\n");
    sb.write(".gitignore", "target/\n.cargo-home/\ntest-results/\n");
    git_commit_all(&sb.work());
    let setup = "[[sh, -c, \"mkdir -p benches src && touch benches/speed.rs src/lib.rs && CARGO_HOME=.cargo-home cargo fetch\"]]";
    // The preview shows both files and writes neither.
    let preview = run(&sb, &["evidence", "init", "add-x"]);
    preview.expect_code(0);
    assert!(
        preview
            .stdout
            .contains("would add the setup of root to proofgraph.yaml"),
        "{}",
        preview.stdout
    );
    assert!(preview.stdout.contains(setup), "{}", preview.stdout);
    assert!(!sb.work().join("proofgraph.yaml").exists());
    let init = run(&sb, &["evidence", "init", "add-x", "--write", "--json"]);
    init.expect_code(0);
    assert_eq!(init.json()["catalog"]["written"], true, "{}", init.stdout);
    let wiring = fs_err::read_to_string(sb.work().join("openspec/changes/add-x/execution.yaml"))
        .expect("execution.yaml");
    assert!(
        wiring.contains("cargo, test, --no-fail-fast, --offline"),
        "{wiring}"
    );
    assert!(wiring.contains("CARGO_HOME: .cargo-home"), "{wiring}");
    let catalog = fs_err::read_to_string(sb.work().join("proofgraph.yaml")).expect("written");
    assert!(
        catalog.contains(&format!("    setup: {setup}\n")),
        "{catalog}"
    );
    assert!(
        catalog.contains("    setupCache: [.cargo-home]\n"),
        "{catalog}"
    );
    git_commit_all(&sb.work());
    run(&sb, &["validate", "add-x", "--strict"]).expect_code(0);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(0);
    let prove = run(&sb, &["prove", "add-x", "--json"]);
    assert_eq!(
        prove.code,
        Some(0),
        "the first run passes:\n{}\n{}",
        prove.stdout,
        prove.stderr
    );
    assert_eq!(states(&prove.json())["works/test"], "passed");
    sb.write("src/lib.rs", LIB.replace("format(n)", "format(n + 1)"));
    let prove = run(&sb, &["prove", "add-x", "--json"]);
    assert_eq!(
        prove.code,
        Some(1),
        "a broken crate never passes: {}",
        prove.stdout
    );
    sb.write("src/lib.rs", LIB);
    // Without the setup, doctor says why the first download would fail, and what to add.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  root:\n    path: .   # the crate\n",
    );
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(2);
    assert_emits!(doctor.status_codes(), "dependencies_need_network");
    // An existing catalog: init (here for a second change) adds the setup under the
    // repository and keeps every other byte.
    sb.write(
        "openspec/changes/add-y/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: s, capabilities: [test]}\n",
    );
    sb.write("openspec/changes/add-y/proposal.md", "# y\n");
    git_commit_all(&sb.work());
    run(&sb, &["evidence", "init", "add-y", "--write"]).expect_code(0);
    let catalog = fs_err::read_to_string(sb.work().join("proofgraph.yaml")).expect("kept");
    assert_eq!(
        catalog,
        format!(
            "version: 1\nrepositories:\n  root:\n    path: .   # the crate\n    setup: {setup}\n    setupCache: [.cargo-home]\n"
        )
    );
}

/// `python3 -m pytest` with an interpreter that has no pytest: `evidence doctor` says so
/// (it used to say nothing stood in the way). Judged from the interpreter's layout alone:
/// a module in its site-packages, in a directory a `.pth` file names, or in the
/// provider's `PYTHONPATH` clears it; a virtual environment's interpreter is judged by the
/// venv's site-packages (it used to be judged by the interpreter its link leads to).
#[test]
fn doctor_names_a_python_module_the_interpreter_cannot_import() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = project(&[(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: test\n    command: [python3, -m, pytest, -q]\n",
    )]);
    // An interpreter as a distribution lays it out: a program (not a script) under a
    // prefix holding its standard library.
    let prefix = sb.path().join("py");
    let python = prefix.join("bin/python3");
    fs_err::create_dir_all(python.parent().expect("bin")).expect("mkdir");
    fs_err::write(&python, b"\x7fELF not really\n").expect("write");
    fs_err::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let lib = prefix.join("lib/python3.11");
    fs_err::create_dir_all(lib.join("site-packages")).expect("mkdir");
    fs_err::write(lib.join("os.py"), "").expect("write");
    let path = format!(
        "{}:{}",
        python.parent().expect("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = real_home();
    let doctor = || {
        sb.run_with_env(
            &sb.work(),
            &["evidence", "doctor", "add-x", "--json"],
            &[("HOME", home.as_str()), ("PATH", path.as_str())],
        )
    };
    let run = doctor();
    assert_emits!(run.status_codes(), "python_module_missing");
    // A `.pth` file naming a directory that holds it.
    fs_err::create_dir_all(sb.path().join("elsewhere/pytest")).expect("mkdir");
    fs_err::write(sb.path().join("elsewhere/pytest/__init__.py"), "").expect("write");
    fs_err::write(
        lib.join("site-packages/extra.pth"),
        format!("{}\n", sb.path().join("elsewhere").display()),
    )
    .expect("write");
    assert!(
        !doctor()
            .status_codes()
            .contains(&"python_module_missing".to_owned()),
        "a .pth file's directory holds it"
    );
    fs_err::remove_file(lib.join("site-packages/extra.pth")).expect("remove");
    // Installed in site-packages.
    fs_err::create_dir_all(lib.join("site-packages/pytest")).expect("mkdir");
    fs_err::write(lib.join("site-packages/pytest/__init__.py"), "").expect("write");
    assert!(
        !doctor()
            .status_codes()
            .contains(&"python_module_missing".to_owned()),
        "installed"
    );
    // A virtual environment's `python3` first on PATH, a link to that interpreter: judged by
    // the venv's site-packages, the interpreter's own only when the venv includes them.
    let venv = sb.path().join("venv");
    fs_err::create_dir_all(venv.join("bin")).expect("mkdir");
    std::os::unix::fs::symlink(&python, venv.join("bin/python3")).expect("link");
    let cfg = |system: bool| {
        fs_err::write(
            venv.join("pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = {system}\nversion = 3.11.2\n",
                python.parent().expect("bin").display()
            ),
        )
        .expect("write");
    };
    cfg(false);
    let path = format!("{}:{path}", venv.join("bin").display());
    let in_venv = || {
        sb.run_with_env(
            &sb.work(),
            &["evidence", "doctor", "add-x", "--json"],
            &[("HOME", home.as_str()), ("PATH", path.as_str())],
        )
    };
    let run = in_venv();
    assert_emits!(run.status_codes(), "python_module_missing");
    assert!(
        run.stdout
            .contains(&format!("({})", venv.join("bin/python3").display())),
        "names the venv's interpreter: {}",
        run.stdout
    );
    cfg(true);
    assert!(
        !in_venv()
            .status_codes()
            .contains(&"python_module_missing".to_owned()),
        "the venv includes the system's site-packages"
    );
    cfg(false);
    fs_err::create_dir_all(venv.join("lib/python3.11/site-packages/pytest")).expect("mkdir");
    assert!(
        !in_venv()
            .status_codes()
            .contains(&"python_module_missing".to_owned()),
        "installed in the venv"
    );
}

/// `python3 -m pytest` through a shim (pyenv's, asdf's): bootstrap cannot read a script,
/// so doctor used to judge nothing and say "nothing stands between the change and a proof
/// run" when the interpreter behind it could not import pytest (issue 27). The interpreter
/// is asked now: a real venv without pytest is named, with its own path; the pinned test
/// tools' venv, which has it, clears the finding.
#[test]
fn doctor_asks_a_shimmed_interpreter_whether_it_can_import_the_module() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = project(&[(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, -c, \"mkdir -p test-results && exec \\\"$@\\\"\", sh, python3, -B, -m, pytest, --junitxml=test-results/p.xml]\n    report: test-results/p.xml\n    reportFormat: junit\n",
    )]);
    let bare = sb.path().join("bare-venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&bare)
        .status()
        .expect("python3 runs");
    assert!(made.success(), "python3 -m venv made {}", bare.display());
    let shims = sb.path().join("shims");
    fs_err::create_dir_all(&shims).expect("mkdir");
    let shim_to = |python: &std::path::Path| {
        let shim = shims.join("python3");
        fs_err::write(
            &shim,
            format!("#!/bin/sh\nexec '{}' \"$@\"\n", python.display()),
        )
        .expect("write");
        fs_err::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    let path = format!(
        "{}:{}",
        shims.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let doctor = |json: bool| {
        let mut args = vec!["evidence", "doctor", "add-x"];
        if json {
            args.push("--json");
        }
        run_with(&sb, &args, &[("PATH", path.as_str())])
    };
    shim_to(&bare.join("bin/python3"));
    let found = doctor(true);
    found.expect_code(2);
    assert_codes!(found.status_codes(), ["python_module_missing"]);
    let d = &found.json()["status"][0];
    assert_eq!(d["target"], "openspec/changes/add-x/execution.yaml:3:3");
    let message = d["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot import `pytest` (asked in the repository")
            && message.contains(&format!("({}", bare.display())),
        "{message}"
    );
    let human = doctor(false);
    human.expect_code(2);
    assert!(
        !human.stdout.contains("nothing stands between"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("add-x: 1 finding"),
        "{}",
        human.stdout
    );
    // An interpreter that has pytest: nothing stands in the way.
    shim_to(&crate::support::python_tools_venv().join("bin/python3"));
    let clear = doctor(false);
    clear.expect_code(0);
    assert!(
        clear
            .stdout
            .contains("add-x: nothing stands between the change and a proof run"),
        "{}\n{}",
        clear.stdout,
        clear.stderr
    );
}

/// A provider that reads the whole repository reruns on every README or docs edit:
/// doctor says so as a note (the exit code stays 0), naming the `!` entries that leave the
/// documentation out; with them the note is gone, the suite still proves, and a README
/// edit keeps its receipt.
#[test]
fn doctor_points_to_the_documentation_a_suite_reruns_for() {
    let wiring = |inputs: &str| {
        format!(
            "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [node, --test, --test-reporter=tap, --test-reporter-destination=out.tap]\n{inputs}    report: out.tap\n"
        )
    };
    let sb = project(&[
        ("package.json", "{\"name\": \"x\"}\n"),
        ("README.md", "# x\n"),
        ("docs/usage.md", "Use it.\n"),
        (
            "test/a.test.js",
            "require('node:test')('a', () => { require('node:assert').ok(true); });\n",
        ),
        ("openspec/changes/add-x/execution.yaml", &wiring("")),
        (".gitignore", ".proofgraph/\nout.tap\n"),
    ]);
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(0);
    assert_codes!(doctor.status_codes(), ["docs_in_inputs"]);
    let doc = doctor.json();
    let note = &doc["status"][0];
    assert_eq!(note["severity"], "info", "{doc:#}");
    let fix = note["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains(r#"inputs: ["!README.md", "!docs/**"]"#),
        "{fix}"
    );

    // Written as the fix says: nothing to note, and the suite reads what it needs.
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        wiring("    inputs: [\"!docs/**\", \"!README.md\"]\n"),
    );
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    doctor.expect_code(0);
    assert_codes!(doctor.status_codes(), [], "{}", doctor.stdout);
    let prove = run(&sb, &["prove", "add-x", "--json"]);
    prove.expect_code(0);
    sb.write("README.md", "# x\n\nNow with words.\n");
    let again = run(&sb, &["prove", "add-x", "--json"]).json();
    assert_eq!(again["summary"]["reused"], 1, "{again:#}");

    // Narrowed `inputs` that still hold the documentation: append the entries.
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        wiring("    inputs: [package.json, \"test/**\", README.md, \"docs/**\"]\n"),
    );
    git_commit_all(&sb.work());
    let doctor = run(&sb, &["evidence", "doctor", "add-x", "--json"]);
    assert_codes!(doctor.status_codes(), ["docs_in_inputs"]);
    let doc = doctor.json();
    let fix = doc["status"][0]["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains(r#"append "!README.md", "!docs/**" to its `inputs`"#),
        "{fix}"
    );
}
