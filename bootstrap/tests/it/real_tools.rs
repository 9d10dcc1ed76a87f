//! The proposals really work: for generated Cargo, pytest, Vitest, Jest and
//! Go projects (and a Cargo crate with a nextest JUnit profile), the
//! recommended `test` candidate's argv is run from the project directory
//! with the real tools, and the declared report must appear in the declared
//! format with the expected test count.
//!
//! Nothing is skipped: a missing tool fails the test with an install hint.
//! npm and pip installs (pinned versions) are cached under
//! `CARGO_TARGET_TMPDIR`, so only the first run needs the registries.
//! Versions used when these were written: cargo 1.95.0, cargo-nextest
//! 0.9.143, go 1.19.8, node 20.20.2 / npm 11.19.1, vitest 3.2.7, jest
//! 29.7.0, Python 3.11.7 / pytest 9.2.0.

use std::path::{Path, PathBuf};
use std::process::Command;

use bootstrap::{Candidate, Repo, detect};
use serde_json::Value;

use crate::layouts::*;

const VITEST: &str = "3.2.7";
const JEST: &str = "29.7.0";
const PYTEST: &str = "9.2.0";

fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bootstrap-tools")
}

/// Holds an exclusive lock on `cache()/<name>.lock` while `install` runs: nextest runs each
/// test in a process of its own, and two tests installing one shared tool directory at
/// once (`npm ci` of the same lockfile) would tear each other's files out.
fn installing<T>(name: &str, install: impl FnOnce() -> T) -> T {
    fs_err::create_dir_all(cache()).expect("create the tools cache");
    let lock = fs_err::File::create(cache().join(format!("{name}.lock"))).expect("the lock file");
    // `File::lock` is newer than the crate's MSRV: flock(2) itself (released when the
    // descriptor is closed).
    rustix::fs::flock(lock.file(), rustix::fs::FlockOperation::LockExclusive)
        .expect("lock the tools cache");
    let out = install();
    drop(lock);
    out
}

/// Fails loudly when `program --version` (`go version`) cannot run.
fn require(program: &str, hint: &str) {
    let arg = if program == "go" {
        "version"
    } else {
        "--version"
    };
    let ok = Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "`{program}` is not available: {hint}");
}

/// The one recommended `test` candidate for `repos`.
fn recommended_test(repos: &[Repo]) -> Candidate {
    // The real PATH: these tests run the proposals with the real tools.
    let host = bootstrap::Host::new(std::env::var_os("PATH").as_deref(), false);
    let detection = detect(repos, &[claim("c", &["test"], None)], &[], &host);
    let mut tests: Vec<Candidate> = detection
        .candidates
        .into_iter()
        .filter(|c| c.recommended && c.capability.as_str() == "test")
        .collect();
    assert_eq!(tests.len(), 1, "exactly one recommended test candidate");
    tests.remove(0)
}

/// Runs the candidate's argv in `dir` with its `env` on top of the
/// environment (and `path_prefix` in front of PATH), and returns the report.
fn run(candidate: &Candidate, dir: &Path, path_prefix: Option<&Path>) -> (PathBuf, String) {
    let argv: Vec<String> = candidate.provider["command"]
        .as_array()
        .expect("a command")
        .iter()
        .map(|w| w.as_str().expect("a string").to_owned())
        .collect();
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).current_dir(dir);
    for var in ["CARGO_TARGET_DIR", "RUSTFLAGS", "RUSTC_BOOTSTRAP", "CI"] {
        command.env_remove(var);
    }
    if let Some(env) = candidate.provider.get("env").and_then(Value::as_object) {
        for (k, v) in env {
            command.env(k, v.as_str().expect("a string value"));
        }
    }
    if let Some(prefix) = path_prefix {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![prefix.to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        command.env(
            "PATH",
            std::env::join_paths(paths).expect("a joinable PATH"),
        );
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("run {argv:?}: {e}"));
    assert!(
        output.status.success(),
        "{argv:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report = dir.join(
        candidate.provider["report"]
            .as_str()
            .expect("a report path"),
    );
    let text = fs_err::read_to_string(&report)
        .unwrap_or_else(|e| panic!("{argv:?} wrote no report at {}: {e}", report.display()));
    (report, text)
}

/// The `tests` attribute of the first element named `tag`.
fn xml_count(xml: &str, tag: &str) -> u64 {
    let at = xml
        .find(&format!("<{tag} "))
        .unwrap_or_else(|| panic!("no <{tag}> in {xml}"));
    let rest = &xml[at..];
    let end = rest.find('>').expect("a closed tag");
    let attr = rest[..end].find(" tests=\"").expect("a tests attribute");
    rest[attr + 8..]
        .split('"')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a numeric tests attribute")
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

#[test]
fn cargo_test_writes_libtest_json() {
    require("cargo", "install Rust with rustup (https://rustup.rs)");
    let dir = temp();
    cargo_crate(dir.path());
    let candidate = recommended_test(&root(dir.path()));
    assert_eq!(candidate.provider["reportFormat"], "libtest-json");
    let (_, text) = run(&candidate, dir.path(), None);
    let events = json_lines(&text);
    let total: u64 = events
        .iter()
        .filter(|e| e["type"] == "suite" && e["event"] == "started")
        .map(|e| e["test_count"].as_u64().expect("an integer test_count"))
        .sum();
    assert_eq!(total, 2, "one unit test and one doctest:\n{text}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "test" && e["event"] == "ok")
    );
}

#[test]
fn cargo_nextest_writes_junit() {
    require(
        "cargo-nextest",
        "install it with `cargo install cargo-nextest --locked`",
    );
    let dir = temp();
    cargo_crate(dir.path());
    write(
        dir.path(),
        &[(
            ".config/nextest.toml",
            "[profile.ci.junit]\npath = \"junit.xml\"\n",
        )],
    );
    let candidate = recommended_test(&root(dir.path()));
    assert_eq!(candidate.provider["reportFormat"], "junit");
    let (report, text) = run(&candidate, dir.path(), None);
    assert!(report.ends_with("target/nextest/ci/junit.xml"));
    assert_eq!(
        xml_count(&text, "testsuites"),
        1,
        "nextest runs no doctests"
    );
}

#[test]
fn go_test_writes_test2json() {
    require(
        "go",
        "install Go (https://go.dev/dl/ or `apt-get install golang`)",
    );
    let dir = temp();
    go_module(dir.path());
    let candidate = recommended_test(&root(dir.path()));
    assert_eq!(candidate.provider["reportFormat"], "go-test-json");
    let (_, text) = run(&candidate, dir.path(), None);
    let events = json_lines(&text);
    let mut passed: Vec<&str> = events
        .iter()
        .filter(|e| e["Action"] == "pass")
        .filter_map(|e| e["Test"].as_str())
        .collect();
    passed.sort();
    assert_eq!(passed, ["TestDouble", "TestZero", "TestZero/zero"]);
}

/// A virtualenv with pytest pinned, created once.
fn pytest_venv() -> PathBuf {
    installing("pytest", pytest_venv_unlocked)
}

fn pytest_venv_unlocked() -> PathBuf {
    require(
        "python3",
        "install Python 3 with venv (`apt-get install python3 python3-venv`)",
    );
    let venv = cache().join(format!("pytest-{PYTEST}"));
    let bin = venv.join("bin");
    if !bin.join("pytest").is_file() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("run python3 -m venv");
        assert!(
            status.success(),
            "python3 -m venv failed: install python3-venv"
        );
        // Its dependencies pinned by the repository's requirements file.
        let constraints =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/interop/requirements.txt");
        let status = Command::new(bin.join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-c"])
            .arg(&constraints)
            .arg(format!("pytest=={PYTEST}"))
            .status()
            .expect("run pip");
        assert!(
            status.success(),
            "pip install pytest=={PYTEST} failed: the PyPI registry must be reachable once"
        );
    }
    bin
}

#[test]
fn pytest_writes_junit() {
    let bin = pytest_venv();
    let dir = temp();
    pytest_project(dir.path());
    let candidate = recommended_test(&root(dir.path()));
    assert_eq!(candidate.provider["command"][0], "python3");
    assert_eq!(candidate.provider["reportFormat"], "junit");
    let (_, text) = run(&candidate, dir.path(), Some(&bin));
    assert!(text.starts_with("<?xml"), "{text}");
    assert_eq!(xml_count(&text, "testsuite"), 2);
}

/// `node_modules` with vitest and jest pinned, installed once (the tests
/// that need it share one install) and linked into each generated project.
fn node_modules() -> PathBuf {
    static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| installing("node-tools", install_node_modules))
        .clone()
}

fn install_node_modules() -> PathBuf {
    require("node", "install Node.js 20 or later (https://nodejs.org)");
    require("npm", "install npm (it ships with Node.js)");
    // Every package pinned: the committed lockfile, installed with `npm ci`.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node-tools");
    let read = |p: &Path| fs_err::read(p).expect("read the node-tools fixture");
    let lock = read(&fixture.join("package-lock.json"));
    let dir = cache().join(format!("node-vitest-{VITEST}-jest-{JEST}"));
    let modules = dir.join("node_modules");
    let installed = fs_err::read(dir.join("package-lock.json")).ok();
    if installed.as_deref() != Some(lock.as_slice())
        || !modules.join(".package-lock.json").is_file()
    {
        fs_err::create_dir_all(&dir).expect("create the tools directory");
        fs_err::write(
            dir.join("package.json"),
            read(&fixture.join("package.json")),
        )
        .expect("write package.json");
        fs_err::write(dir.join("package-lock.json"), &lock).expect("write package-lock.json");
        let output = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefer-offline"])
            .current_dir(&dir)
            .output()
            .expect("run npm ci");
        assert!(
            output.status.success(),
            "npm ci of vitest@{VITEST} and jest@{JEST} failed (the npm registry must be reachable once):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    modules
}

fn link_node_modules(project: &Path) {
    std::os::unix::fs::symlink(node_modules(), project.join("node_modules"))
        .expect("link node_modules");
}

#[test]
fn vitest_writes_its_json_report() {
    let dir = temp();
    write(
        dir.path(),
        &[
            (
                "package.json",
                &format!(
                    "{{\"name\": \"v\", \"private\": true, \"type\": \"module\", \"scripts\": {{\"test\": \"vitest\"}}, \"devDependencies\": {{\"vitest\": \"{VITEST}\"}}}}\n"
                ),
            ),
            ("package-lock.json", "{\"lockfileVersion\": 3}\n"),
            (
                "src/a.test.js",
                "import { test, expect } from 'vitest';\ntest('one', () => expect(1).toBe(1));\ntest('two', () => {});\n",
            ),
        ],
    );
    link_node_modules(dir.path());
    let candidate = recommended_test(&root(dir.path()));
    assert_eq!(candidate.provider["reportFormat"], "vitest");
    let (_, text) = run(&candidate, dir.path(), None);
    let report: Value = serde_json::from_str(&text).expect("a JSON report");
    assert_eq!(report["numTotalTests"], 2);
    assert_eq!(report["numFailedTests"], 0);
}

#[test]
fn jest_writes_its_json_report() {
    let dir = temp();
    write(
        dir.path(),
        &[
            (
                "package.json",
                &format!(
                    "{{\"name\": \"j\", \"private\": true, \"scripts\": {{\"test\": \"jest\"}}, \"devDependencies\": {{\"jest\": \"{JEST}\"}}}}\n"
                ),
            ),
            ("package-lock.json", "{\"lockfileVersion\": 3}\n"),
            (
                "src/a.test.js",
                "test('one', () => expect(1).toBe(1));\ntest('two', () => {});\ntest('three', () => {});\n",
            ),
        ],
    );
    link_node_modules(dir.path());
    let candidate = recommended_test(&root(dir.path()));
    assert_eq!(candidate.provider["reportFormat"], "jest");
    let (_, text) = run(&candidate, dir.path(), None);
    let report: Value = serde_json::from_str(&text).expect("a JSON report");
    assert_eq!(report["numTotalTests"], 3);
}
