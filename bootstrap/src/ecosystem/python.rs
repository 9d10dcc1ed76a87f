//! Python test configuration: `pyproject.toml` (`[tool.pytest.ini_options]`,
//! `[tool.pytest]`, pytest among the dependencies), `pytest.ini`, `tox.ini`
//! `[pytest]`, `setup.cfg` `[tool:pytest]`, `conftest.py` and
//! `requirements*.txt`. pytest writes JUnit XML itself
//! (`--junitxml=<report>`, creating the directory), so the argv needs no
//! shell. The interpreter is the virtual environment the repository's
//! `setup` makes (`.venv/bin/python -m pytest`, docs/setup.md), else the
//! lockfile's runner: `uv run --no-sync` (`uv.lock`), `poetry run`
//! (`poetry.lock`), `pdm run` (`pdm.lock`), else `python3 -m pytest` from
//! PATH. None of them installs anything; a runner that is not on PATH is
//! not proposed (`detect` says what to install).

use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{Confidence, Setup};
use crate::proposal::{Proposal, argv, report_path};

/// How Python commands are run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Runner {
    /// `uv run --no-sync`.
    Uv,
    /// `poetry run`.
    Poetry,
    /// `pdm run`.
    Pdm,
    /// `python3 -m`.
    Python,
    /// `<venv>/bin/python -m`, the virtual environment setup makes: the
    /// directory, and why setup makes it.
    Venv(String, String),
}

impl Runner {
    fn command(&self, tool: &str, args: &[String]) -> Vec<String> {
        let mut out = match self {
            Runner::Uv => argv(&["uv", "run", "--no-sync", tool]),
            Runner::Poetry => argv(&["poetry", "run", tool]),
            Runner::Pdm => argv(&["pdm", "run", tool]),
            Runner::Python => argv(&["python3", "-m", tool]),
            Runner::Venv(dir, _) => vec![
                format!("{dir}/bin/python"),
                "-m".to_owned(),
                tool.to_owned(),
            ],
        };
        out.extend(args.iter().cloned());
        out
    }

    fn fact(&self) -> String {
        match self {
            Runner::Uv => "uv.lock → uv run --no-sync (the environment must already be synced)".to_owned(),
            Runner::Poetry => "poetry.lock → poetry run".to_owned(),
            Runner::Pdm => "pdm.lock → pdm run".to_owned(),
            Runner::Python => {
                "no uv.lock, poetry.lock or pdm.lock → the `python3` on PATH, which must have the tools and the project installed".to_owned()
            }
            Runner::Venv(dir, why) => format!(
                "the repository's setup makes `{dir}` ({why}) → `{dir}/bin/python -m`, which needs no other program on PATH"
            ),
        }
    }
}

/// The virtual environment a repository's setup makes, if any: `.venv` or
/// `venv` holding `bin/python` in every sandbox.
fn venv(setup: &Setup) -> Option<Runner> {
    [".venv", "venv"].into_iter().find_map(|dir| {
        setup
            .makes(&format!("{dir}/bin/python"))
            .map(|why| Runner::Venv(dir.to_owned(), why))
    })
}

/// What the Python manifests say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PythonFacts {
    /// Why pytest is believed to be the runner (empty: it is not).
    pub(crate) pytest: Vec<String>,
    /// How commands run without a virtual environment from setup (the
    /// lockfile's runner, else `python3`).
    pub(crate) locked: Runner,
    /// The manifests and lockfile that exist.
    pub(crate) files: Vec<String>,
    /// Why ruff is configured, if it is.
    pub(crate) ruff: Option<String>,
    /// Why mypy is configured, if it is.
    pub(crate) mypy: Option<String>,
    /// Test files that exist without any pytest signal.
    pub(crate) unittest_hint: Option<String>,
    /// A `src/` layout (`src/<package>/__init__.py`) whose directory pytest
    /// is not told about (`pythonpath`): the package is imported from
    /// `src` only when it is installed or on `PYTHONPATH`.
    pub(crate) src_layout: bool,
}

const REQUIREMENTS: [&str; 5] = [
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "dev-requirements.txt",
    "test-requirements.txt",
];

/// Whether a PEP 508 requirement names `pytest` itself.
fn names_pytest(requirement: &str) -> bool {
    let name: String = requirement
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    name.eq_ignore_ascii_case("pytest")
}

fn section(text: &str, header: &str) -> bool {
    text.lines().any(|l| l.trim() == header)
}

impl PythonFacts {
    /// Reads the Python manifests in `dir`; `None` when there are none.
    pub(crate) fn read(dir: &Path, shown: &str, warnings: &mut Vec<String>) -> Option<Self> {
        let mut files = Vec::new();
        let mut pytest = Vec::new();
        let mut ruff = None;
        let mut mypy = None;
        let mut pythonpath = false;
        let read = |name: &str, warnings: &mut Vec<String>| -> Option<String> {
            let path = dir.join(name);
            if !path.is_file() {
                return None;
            }
            match fs_err::read_to_string(&path) {
                Ok(t) => Some(t),
                Err(e) => {
                    warnings.push(format!("`{shown}{name}` could not be read ({e})"));
                    None
                }
            }
        };
        if let Some(text) = read("pyproject.toml", warnings) {
            files.push("pyproject.toml".to_owned());
            match toml::from_str::<toml::Table>(&text) {
                Ok(table) => {
                    let tool = table.get("tool");
                    let pytest_tool = tool.and_then(|t| t.get("pytest"));
                    pythonpath = pytest_tool
                        .and_then(|p| p.get("ini_options"))
                        .and_then(|o| o.get("pythonpath"))
                        .is_some();
                    if pytest_tool.and_then(|p| p.get("ini_options")).is_some() {
                        pytest.push("pyproject.toml has [tool.pytest.ini_options]".to_owned());
                    } else if pytest_tool.is_some() {
                        pytest.push("pyproject.toml has [tool.pytest]".to_owned());
                    }
                    if let Some(place) = pytest_dependency(&table) {
                        pytest.push(format!("pytest is a dependency in pyproject.toml {place}"));
                    }
                    if tool.and_then(|t| t.get("ruff")).is_some() {
                        ruff = Some("pyproject.toml has [tool.ruff]".to_owned());
                    }
                    if tool.and_then(|t| t.get("mypy")).is_some() {
                        mypy = Some("pyproject.toml has [tool.mypy]".to_owned());
                    }
                }
                Err(e) => warnings.push(format!(
                    "`{shown}pyproject.toml` is not valid TOML ({}); it was not considered",
                    e.message()
                )),
            }
        }
        if let Some(text) = read("pytest.ini", warnings) {
            pythonpath |= text
                .lines()
                .any(|l| l.trim_start().starts_with("pythonpath"));
            files.push("pytest.ini".to_owned());
            pytest.push("pytest.ini exists".to_owned());
        }
        if let Some(text) = read("tox.ini", warnings) {
            files.push("tox.ini".to_owned());
            if section(&text, "[pytest]") {
                pytest.push("tox.ini has [pytest]".to_owned());
            }
        }
        if let Some(text) = read("setup.cfg", warnings) {
            files.push("setup.cfg".to_owned());
            if section(&text, "[tool:pytest]") {
                pytest.push("setup.cfg has [tool:pytest]".to_owned());
            }
        }
        if dir.join("setup.py").is_file() {
            files.push("setup.py".to_owned());
        }
        for name in REQUIREMENTS {
            if let Some(text) = read(name, warnings) {
                files.push(name.to_owned());
                if text.lines().any(names_pytest) {
                    pytest.push(format!("{name} lists pytest"));
                }
            }
        }
        if dir.join("conftest.py").is_file() {
            pytest.push("conftest.py exists".to_owned());
        }
        if ruff.is_none() {
            ruff = ["ruff.toml", ".ruff.toml"]
                .into_iter()
                .find(|f| dir.join(f).is_file())
                .map(|f| format!("{f} exists"));
        }
        if mypy.is_none() && dir.join("mypy.ini").is_file() {
            mypy = Some("mypy.ini exists".to_owned());
        }
        if files.is_empty() && pytest.is_empty() {
            return None;
        }
        let (runner, lock) = [
            ("uv.lock", Runner::Uv),
            ("poetry.lock", Runner::Poetry),
            ("pdm.lock", Runner::Pdm),
        ]
        .into_iter()
        .find(|(f, _)| dir.join(f).is_file())
        .map_or((Runner::Python, None), |(f, r)| (r, Some(f)));
        files.extend(lock.map(str::to_owned));
        let unittest_hint = if pytest.is_empty() {
            unittest_files(dir)
        } else {
            None
        };
        Some(Self {
            pytest,
            locked: runner,
            files,
            ruff,
            mypy,
            unittest_hint,
            src_layout: !pythonpath && src_package(dir),
        })
    }

    /// The runner: the virtual environment setup makes, else the lockfile's.
    fn runner(&self, setup: &Setup) -> Runner {
        venv(setup).unwrap_or_else(|| self.locked.clone())
    }

    /// Proposals for `test`.
    pub(crate) fn test(&self, setup: &Setup) -> Vec<Proposal> {
        if self.pytest.is_empty() {
            return Vec::new();
        }
        let runner = self.runner(setup);
        let report = report_path("pytest.xml");
        let flag = format!("--junitxml={report}");
        let mut p = Proposal::new(
            Confidence::High,
            "test-discovery",
            runner.command("pytest", std::slice::from_ref(&flag)),
            "pytest",
        )
        .report(&report, "junit")
        .because_all(self.pytest.iter().cloned())
        .because(runner.fact())
        .because(format!(
            "`{flag}`: pytest writes JUnit XML (testsuite `tests` counts) there, creating the directory"
        ));
        if let Runner::Venv(dir, _) = &runner {
            // A cached setup never installs the project: its code comes from
            // the sandbox (docs/setup.md).
            if self.src_layout {
                let mut env = Map::new();
                env.insert("PYTHONPATH".to_owned(), Value::String("src".to_owned()));
                p = p.field("env", Value::Object(env)).because(format!(
                    "`env: {{PYTHONPATH: src}}`: the package lies under src/, and `{dir}` holds the dependencies, not the project"
                ));
            } else {
                p = p.because(format!(
                    "`{dir}/bin/python -m pytest` puts the working directory on sys.path, so the project is imported from the sandbox"
                ));
            }
        }
        vec![p]
    }

    /// Proposals for `static-analysis`.
    pub(crate) fn static_analysis(&self, setup: &Setup) -> Vec<Proposal> {
        let runner = self.runner(setup);
        let mut out = Vec::new();
        if let Some(fact) = &self.ruff {
            out.push(
                Proposal::new(
                    Confidence::Alternative,
                    "command",
                    runner.command("ruff", &argv(&["check", "."])),
                    "ruff check",
                )
                .because(fact.clone())
                .because(runner.fact()),
            );
        }
        if let Some(fact) = &self.mypy {
            out.push(
                Proposal::new(
                    Confidence::Alternative,
                    "command",
                    runner.command("mypy", &argv(&["."])),
                    "mypy",
                )
                .because(fact.clone())
                .because(runner.fact()),
            );
        }
        out
    }
}

/// Where pytest appears among the dependencies of a `pyproject.toml`.
fn pytest_dependency(table: &toml::Table) -> Option<String> {
    let in_list = |v: Option<&toml::Value>| {
        v.and_then(toml::Value::as_array)
            .is_some_and(|a| a.iter().filter_map(toml::Value::as_str).any(names_pytest))
    };
    let project = table.get("project");
    if in_list(project.and_then(|p| p.get("dependencies"))) {
        return Some("[project] dependencies".to_owned());
    }
    let groups = [
        (
            project.and_then(|p| p.get("optional-dependencies")),
            "[project.optional-dependencies]",
        ),
        (table.get("dependency-groups"), "[dependency-groups]"),
        (
            table
                .get("tool")
                .and_then(|t| t.get("pdm"))
                .and_then(|p| p.get("dev-dependencies")),
            "[tool.pdm.dev-dependencies]",
        ),
    ];
    for (group, name) in groups {
        if let Some(map) = group.and_then(toml::Value::as_table) {
            for (key, list) in map {
                if in_list(Some(list)) {
                    return Some(format!("{name} `{key}`"));
                }
            }
        }
    }
    let tool = table.get("tool");
    if in_list(
        tool.and_then(|t| t.get("uv"))
            .and_then(|u| u.get("dev-dependencies")),
    ) {
        return Some("[tool.uv] dev-dependencies".to_owned());
    }
    let poetry = tool.and_then(|t| t.get("poetry"));
    let has_key = |v: Option<&toml::Value>| {
        v.and_then(toml::Value::as_table)
            .is_some_and(|t| t.keys().any(|k| k.eq_ignore_ascii_case("pytest")))
    };
    if has_key(poetry.and_then(|p| p.get("dependencies")))
        || has_key(poetry.and_then(|p| p.get("dev-dependencies")))
    {
        return Some("[tool.poetry] dependencies".to_owned());
    }
    if let Some(groups) = poetry
        .and_then(|p| p.get("group"))
        .and_then(toml::Value::as_table)
    {
        for (name, group) in groups {
            if has_key(group.get("dependencies")) {
                return Some(format!("[tool.poetry.group.{name}.dependencies]"));
            }
        }
    }
    None
}

/// Whether `src/` holds a package (`src/<name>/__init__.py`).
fn src_package(dir: &Path) -> bool {
    let Ok(entries) = fs_err::read_dir(dir.join("src")) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| e.path().join("__init__.py").is_file())
}

/// A `test_*.py` file under `tests/` or `test/`, if one exists.
fn unittest_files(dir: &Path) -> Option<String> {
    for sub in ["tests", "test"] {
        let Ok(entries) = fs_err::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("test_") && name.ends_with(".py") {
                return Some(format!("{sub}/{name}"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_names_are_exact() {
        assert!(names_pytest("pytest"));
        assert!(names_pytest("pytest>=8"));
        assert!(names_pytest("PyTest ; python_version > '3.8'"));
        assert!(!names_pytest("pytest-cov"));
        assert!(!names_pytest("# pytest"));
    }
}
