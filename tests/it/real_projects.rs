//! Real projects at their real size, fetched from their registries at a pinned version:
//! `six` 1.16.0's sdist from PyPI, with its own pytest suite, wired the honest way (the venv
//! holds pytest; the library comes from the sandbox), and `zod` 4.6.7's package from npm,
//! TypeScript sources with their own vitest suite (vitest installed by a cached `npm ci`,
//! the sources resolved through zod's own `@zod/source` export condition, so the suite
//! tests the code in the sandbox and not the built files beside it). Each step tries what a
//! new user met on the first day: a broken library, an untracked failing test, a
//! collect-only run, and a setup that would cache the library itself.
//!
//! One test of six's suite needs `dbm.ndbm`, which Debian's Python does not build: it fails
//! run directly too (`1 failed, 198 passed, 1 skipped`), so the wiring deselects it.

use std::process::Command;

use serde_json::Value;

use crate::support::{Run, Sandbox, assert_emits, git_commit_all, provider};

const EXECUTION: &str = "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    capability: test\n    repository: lib\n    command: [.venv/bin/python, -m, pytest, -q, -p, no:cacheprovider, \"--deselect=test_six.py::test_move_items[dbm_ndbm]\", --junitxml=pytest.xml]\n    report: pytest.xml\n    env: {PYTHONPATH: .}\n    timeoutMs: 600000\n";

fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `six`'s sdist, unpacked as the work tree's repository `lib`, committed.
fn six(sb: &Sandbox, setup: &str) {
    let dl = sb.path().join("dl");
    run_ok(
        sb.cmd("python3", &sb.path())
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "six==1.16.0",
                "-d",
            ])
            .arg(&dl),
        "pip download six",
    );
    fs_err::create_dir_all(sb.work()).expect("mkdir");
    run_ok(
        sb.cmd("tar", &sb.work())
            .args(["--strip-components=1", "-xzf"])
            .arg(dl.join("six-1.16.0.tar.gz")),
        "unpack six",
    );
    sb.openspec_root("");
    sb.write("requirements-test.txt", "pytest==8.3.4\n");
    sb.write(".gitignore", ".venv/\npytest.xml\n");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nrepositories:\n  lib:\n    path: .\n{setup}"),
    );
    sb.write("openspec/changes/x/proposal.md", "# six keeps working\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: six-works, scenario: six's own suite passes, capabilities: [test, discovery], repositories: [lib]}\n",
    );
    sb.write("openspec/changes/x/execution.yaml", EXECUTION);
    git_commit_all(&sb.work());
}

const HONEST: &str = "    setup:\n      - [python3, -m, venv, .venv]\n      - [.venv/bin/python, -m, pip, install, --quiet, -r, requirements-test.txt]\n    setupCache: [.venv]\n    setupInputs: [requirements-test.txt]\n";

fn prove(sb: &Sandbox) -> (Run, Value) {
    let run = sb.run(&sb.work(), &["prove", "x", "--json"]);
    let doc = run.json();
    (run, doc)
}

fn ran(doc: &Value) -> bool {
    provider(doc, "test")["action"] == "ran"
}

#[test]
fn a_pypi_library_proves_only_what_its_own_suite_shows() {
    let sb = Sandbox::new();
    six(&sb, HONEST);
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let counts = &doc["requirements"][0]["evidence"][0]["counts"];
    assert!(
        counts["passed"].as_u64().unwrap_or(0) >= 190 && counts["failed"] == 0,
        "six's suite ran: {counts}"
    );
    // The library breaks: the cached venv holds only pytest, so the suite sees the break.
    let path = sb.work().join("six.py");
    let good = fs_err::read_to_string(&path).expect("six.py");
    fs_err::write(
        &path,
        format!("{good}\nraise ImportError('six is broken')\n"),
    )
    .expect("break");
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(1), "a broken library never passes: {doc}");
    assert!(
        run.stderr.contains("restored") && !run.stderr.contains("pip, install"),
        "the setup came from its cache: {}",
        run.stderr
    );
    // Repaired: the first receipt is current again; nothing runs.
    fs_err::write(&path, &good).expect("repair");
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(0), "{doc}");
    assert!(!ran(&doc), "{doc}");
    // A new failing test, not yet added to git: pytest finds it, and so does prove.
    sb.write("test_new.py", "def test_new():\n    assert False\n");
    let (run, doc) = prove(&sb);
    assert_eq!(
        run.code,
        Some(1),
        "an untracked failing test never passes: {doc}"
    );
    fs_err::remove_file(sb.work().join("test_new.py")).expect("remove");
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(0), "{doc}");
    assert!(!ran(&doc), "{doc}");
    // A run that only collects executes nothing: never a test pass.
    sb.write(
        "openspec/changes/x/execution.yaml",
        EXECUTION.replace(
            "--junitxml=pytest.xml]",
            "--junitxml=pytest.xml, --collect-only]",
        ),
    );
    let (run, doc) = prove(&sb);
    assert_ne!(run.code, Some(0), "{doc}");
    let test = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["capability"] == "test")
        .expect("the test requirement");
    assert_ne!(test["state"], "passed", "{test}");
}

#[test]
fn a_setup_that_would_cache_the_library_itself_is_refused_with_the_honest_wiring() {
    let sb = Sandbox::new();
    six(
        &sb,
        "    setup:\n      - [python3, -m, venv, .venv]\n      - [.venv/bin/pip, install, --quiet, ., pytest==8.3.4]\n    setupCache: [.venv]\n",
    );
    let (run, _) = prove(&sb);
    assert_eq!(run.code, Some(3), "{}", run.stdout);
    assert_emits!(run.status_codes(), "setup_installs_project");
    assert!(
        run.stdout.contains("PYTHONPATH"),
        "the fix shows the honest wiring: {}",
        run.stdout
    );
}

/// zod's package from npm, unpacked as the repository `lib`, with vitest 3.2.7 added to its
/// dev dependencies (locked by `npm install --package-lock-only`) and a vitest configuration
/// that resolves `zod/*` to the sources. Five of its 196 test files run (`s*.test.ts` of the
/// classic API), to keep the test short; `bench/vitest-real.sh` runs them all.
fn zod(sb: &Sandbox) {
    let dl = sb.path().join("dl");
    fs_err::create_dir_all(&dl).expect("mkdir");
    run_ok(
        sb.cmd("npm", &dl)
            .args(["pack", "--silent", "zod@4.6.7"])
            .env("npm_config_cache", sb.home().join(".npm")),
        "npm pack zod",
    );
    fs_err::create_dir_all(sb.work()).expect("mkdir");
    run_ok(
        sb.cmd("tar", &sb.work())
            .args(["--strip-components=1", "-xzf"])
            .arg(dl.join("zod-4.6.7.tgz")),
        "unpack zod",
    );
    let manifest = sb.work().join("package.json");
    let mut package: Value =
        serde_json::from_str(&fs_err::read_to_string(&manifest).expect("package.json"))
            .expect("zod's package.json is JSON");
    package["devDependencies"] = serde_json::json!({"vitest": "3.2.7"});
    fs_err::write(
        &manifest,
        serde_json::to_string_pretty(&package).expect("serialise"),
    )
    .expect("write package.json");
    run_ok(
        sb.cmd("npm", &sb.work())
            .args([
                "install",
                "--package-lock-only",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
            ])
            .env("npm_config_cache", sb.home().join(".npm")),
        "lock vitest",
    );
    sb.write(
        "vitest.config.mjs",
        "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({\n  resolve: { conditions: [\"@zod/source\"] },\n  ssr: { resolve: { conditions: [\"@zod/source\"] } },\n  test: { include: [\"src/v4/classic/tests/s*.test.ts\"] },\n});\n",
    );
    sb.openspec_root("");
    sb.write(".gitignore", "node_modules/\nvitest.xml\n");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  lib:\n    path: .\n    setup: [[npm, ci, --no-audit, --no-fund]]\n    setupCache: [node_modules]\n",
    );
    sb.write("openspec/changes/x/proposal.md", "# zod keeps working\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: zod-works, scenario: zod's own suite passes, capabilities: [test, discovery], repositories: [lib]}\n",
    );
    sb.write("openspec/changes/x/execution.yaml", VITEST);
    git_commit_all(&sb.work());
}

const VITEST: &str = "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    capability: test\n    repository: lib\n    command: [node_modules/.bin/vitest, run, --reporter=junit, --outputFile=vitest.xml]\n    report: vitest.xml\n    timeoutMs: 600000\n";

fn counts(doc: &Value) -> &Value {
    &doc["requirements"][0]["evidence"][0]["counts"]
}

#[test]
fn an_npm_typescript_package_proves_only_what_its_own_vitest_suite_shows() {
    let sb = Sandbox::new();
    zod(&sb);
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let passed = counts(&doc)["passed"].as_u64().unwrap_or(0);
    assert!(
        passed >= 80 && counts(&doc)["failed"] == 0,
        "zod's suite ran: {}",
        counts(&doc)
    );
    // The source breaks. The built `index.js` files beside it are intact, but the suite
    // imports the sources; `node_modules` comes from the cache and holds only vitest.
    let path = sb.work().join("src/v4/core/core.ts");
    let good = fs_err::read_to_string(&path).expect("core.ts");
    fs_err::write(
        &path,
        format!("{good}\nthrow new Error(\"zod is broken\");\n"),
    )
    .expect("break");
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(1), "a broken library never passes: {doc}");
    assert!(
        run.stderr.contains("restored") && !run.stderr.contains("npm ci"),
        "the install came from its cache: {}",
        run.stderr
    );
    // Repaired: the first receipt is current again; nothing runs.
    fs_err::write(&path, &good).expect("repair");
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(0), "{doc}");
    assert!(!ran(&doc), "{doc}");
    // A new failing test, not yet added to git: vitest finds it, and so does prove, which
    // counts it with the others.
    sb.write(
        "src/v4/classic/tests/size.test.ts",
        "import { expect, test } from \"vitest\";\nimport * as z from \"zod/v4\";\n\ntest(\"a new check\", () => {\n  expect(z.string().safeParse(1).success).toBe(true);\n});\n",
    );
    let (run, doc) = prove(&sb);
    assert_eq!(
        run.code,
        Some(1),
        "an untracked failing test never passes: {doc}"
    );
    assert_eq!(counts(&doc)["failed"], 1, "{}", counts(&doc));
    assert_eq!(counts(&doc)["passed"].as_u64(), Some(passed));
    fs_err::remove_file(sb.work().join("src/v4/classic/tests/size.test.ts")).expect("remove");
    let (run, doc) = prove(&sb);
    assert_eq!(run.code, Some(0), "{doc}");
    // A run whose filter matches no test executes nothing: every test is skipped, and a
    // suite that ran nothing is never a test pass.
    sb.write(
        "openspec/changes/x/execution.yaml",
        VITEST.replace(
            "--outputFile=vitest.xml]",
            "--outputFile=vitest.xml, -t, no test has this name]",
        ),
    );
    let (run, doc) = prove(&sb);
    assert_ne!(run.code, Some(0), "{doc}");
    let test = doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["capability"] == "test")
        .expect("the test requirement");
    assert_ne!(test["state"], "passed", "{test}");
}
