//! What the machine offers: the programs on `PATH`, and whether providers
//! run in place. The application hands these in (bootstrap reads no
//! environment variable), so `detect` proposes only commands whose programs
//! it finds, and `doctor` names the program a provider runs that is missing.
//!
//! A program is looked up as the run looks it up: a bare name in the `PATH`
//! directories in order, an absolute entry as it is, a relative entry in the
//! repository (the sandbox's copy of it, or what its setup makes).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::model::Setup;

/// The machine's programs and the workspace's way of running.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    /// The directories of `PATH`, in order.
    pub path: Vec<PathBuf>,
    /// Whether providers run in place (`sandbox: none`): then the checkout's
    /// own ignored directories (`node_modules`) are what a run sees.
    pub in_place: bool,
    /// What interpreters answered when the application asked them whether they can
    /// import a module ([`crate::python_questions`]): bootstrap runs nothing itself, and
    /// an interpreter it cannot read (a shim, a script) is judged by its answer.
    pub python_imports: Vec<PythonImport>,
}

/// A Python interpreter asked whether it can import a module, as a provider's
/// `python… -m <module>` will: in the repository's directory, with the provider's
/// `PYTHONPATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonQuestion {
    /// The interpreter as the command names it (`python3`).
    pub python: String,
    /// The module's top-level package (`pytest` for `pytest.main`).
    pub module: String,
    /// The repository's directory, where it runs.
    pub dir: PathBuf,
    /// The provider's `PYTHONPATH` entries, as paths.
    pub pythonpath: Vec<PathBuf>,
}

/// What the interpreter answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonImport {
    /// The question.
    pub question: PythonQuestion,
    /// Whether it can import the module.
    pub found: bool,
    /// The interpreter that answered (its `sys.executable`).
    pub executable: PathBuf,
}

impl Host {
    /// A host whose `PATH` is `path` (as the environment spells it).
    pub fn new(path: Option<&OsStr>, in_place: bool) -> Self {
        Self {
            path: path
                .map(|p| std::env::split_paths(p).collect())
                .unwrap_or_default(),
            in_place,
            python_imports: Vec::new(),
        }
    }

    /// This host, knowing what its interpreters answered.
    pub fn with_python_imports(self, python_imports: Vec<PythonImport>) -> Self {
        Self {
            python_imports,
            ..self
        }
    }

    /// Whether `program` (a bare name) is an executable file in an absolute
    /// `PATH` directory.
    pub(crate) fn finds(&self, program: &str) -> bool {
        self.path
            .iter()
            .filter(|d| d.is_absolute())
            .any(|d| is_executable(&d.join(program)))
    }
}

impl Host {
    /// Whether the Python interpreter `name` (a bare name on `PATH`) certainly cannot import
    /// `module`: its real file is a program (not a script or a shim) under a prefix whose
    /// `lib/python3.X` holds the standard library, and neither that, its `site-packages`
    /// and `dist-packages` (the prefix's, `local/`'s), the directories their `.pth` files
    /// name, nor `extra` (a provider's `PYTHONPATH`, resolved) holds the module's top-level
    /// package. A virtual environment's interpreter (a `pyvenv.cfg` beside it or one
    /// directory up, as Python looks for it from the path it was started by, not where its
    /// link leads) has the venv's `lib/python3.X/site-packages` instead of the prefix's
    /// site directories, and those too only when `include-system-site-packages` is true.
    /// `Some(interpreter)` when it cannot; `None` when it can or the layout is not one this
    /// can read (a job's empty home has no user site). Reads; runs nothing.
    pub(crate) fn python_lacks(
        &self,
        name: &str,
        module: &str,
        extra: &[PathBuf],
    ) -> Option<PathBuf> {
        if name.contains('/') {
            return None;
        }
        let found = self
            .path
            .iter()
            .filter(|d| d.is_absolute())
            .map(|d| d.join(name))
            .find(|p| is_executable(p))?;
        let real = fs_err::canonicalize(&found).ok()?;
        let head = {
            use std::io::Read as _;
            let mut head = [0u8; 2];
            fs_err::File::open(&real).ok()?.read_exact(&mut head).ok()?;
            head
        };
        if &head == b"#!" {
            return None;
        }
        let prefix = real.parent()?.parent()?;
        let versions: Vec<PathBuf> = fs_err::read_dir(prefix.join("lib"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python3."))
                    && p.join("os.py").is_file()
            })
            .collect();
        if versions.is_empty() {
            return None;
        }
        let venv = venv_of(&found);
        let system_site = venv.as_ref().is_none_or(|(_, system)| *system);
        let mut dirs: Vec<PathBuf> = extra.to_vec();
        for version in &versions {
            let v = version.file_name()?.to_owned();
            dirs.push(version.clone());
            dirs.push(version.join("lib-dynload"));
            if let Some((root, _)) = &venv {
                dirs.push(root.join("lib").join(&v).join("site-packages"));
            }
            if system_site {
                for base in [prefix.to_path_buf(), prefix.join("local")] {
                    dirs.push(base.join("lib").join(&v).join("site-packages"));
                    dirs.push(base.join("lib").join(&v).join("dist-packages"));
                }
            }
        }
        if system_site {
            dirs.push(prefix.join("lib/python3/dist-packages"));
        }
        let mut pth: Vec<PathBuf> = Vec::new();
        for dir in &dirs {
            for entry in fs_err::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "pth") {
                    let text = fs_err::read_to_string(&path).unwrap_or_default();
                    pth.extend(
                        text.lines()
                            .map(str::trim)
                            .filter(|l| {
                                !l.is_empty() && !l.starts_with('#') && !l.starts_with("import")
                            })
                            .map(|l| dir.join(l)),
                    );
                }
            }
        }
        dirs.extend(pth);
        let top = module.split('.').next().unwrap_or(module);
        let holds = |dir: &Path| {
            dir.join(top).is_dir()
                || dir.join(format!("{top}.py")).is_file()
                || fs_err::read_dir(dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| {
                        let name = e.file_name();
                        let name = name.to_string_lossy();
                        name.starts_with(&format!("{top}.")) && name.ends_with(".so")
                    })
        };
        let interpreter = if venv.is_some() { found } else { real };
        (!dirs.iter().any(|d| holds(d))).then_some(interpreter)
    }
}

/// The virtual environment the interpreter started as `program` runs in, as Python finds it:
/// the directory holding a `pyvenv.cfg` beside `program` or one directory up, and whether it
/// includes the system's site-packages (`include-system-site-packages = true`).
fn venv_of(program: &Path) -> Option<(PathBuf, bool)> {
    let bin = program.parent()?;
    [Some(bin), bin.parent()]
        .into_iter()
        .flatten()
        .find_map(|dir| {
            let text = fs_err::read_to_string(dir.join("pyvenv.cfg")).ok()?;
            let system = text.lines().any(|line| {
                line.split_once('=').is_some_and(|(key, value)| {
                    key.trim() == "include-system-site-packages"
                        && value.trim().eq_ignore_ascii_case("true")
                })
            });
            Some((dir.to_path_buf(), system))
        })
}

/// Whether `program` can be found for a job whose `PATH` is `entries` (a
/// provider's own `env.PATH`, split), in repository `dir` set up by `setup`.
pub(crate) fn finds_in(entries: &[PathBuf], program: &str, dir: &Path, setup: &Setup) -> bool {
    entries.iter().any(|entry| {
        if entry.is_absolute() {
            return is_executable(&entry.join(program));
        }
        let rel = entry.join(program);
        is_executable(&dir.join(&rel)) || setup.makes(&rel.to_string_lossy()).is_some()
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The bare program names a command needs on `PATH`: its first word, the
/// runner inside bootstrap's own report wrapper (`sh -c '…' sh <runner>…`),
/// and `cargo-nextest` behind `cargo nextest`. Paths (`.venv/bin/python`)
/// are not looked up here: they come from the repository or its setup.
pub(crate) fn programs(argv: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = argv;
    while let Some(first) = rest.first() {
        if !first.contains('/') && !out.contains(first) {
            out.push(first.clone());
        }
        if first == "cargo" && rest.get(1).map(String::as_str) == Some("nextest") {
            out.push("cargo-nextest".to_owned());
        }
        if first == "sh" && rest.get(1).map(String::as_str) == Some("-c") && rest.len() > 4 {
            rest = &rest[4..];
            continue;
        }
        break;
    }
    out
}

/// What to install for a missing `program`, as a clause (`install uv (…)`).
pub(crate) fn install_hint(program: &str) -> String {
    match program {
        "uv" => "install uv (`pipx install uv`, or https://docs.astral.sh/uv/getting-started/installation/)".to_owned(),
        "poetry" => "install Poetry (`pipx install poetry`)".to_owned(),
        "pdm" => "install PDM (`pipx install pdm`)".to_owned(),
        "python3" | "python" => "install Python 3 (`apt-get install python3`, or https://www.python.org/downloads/)".to_owned(),
        "npm" | "node" | "npx" => "install Node.js, which brings npm (https://nodejs.org/)".to_owned(),
        "pnpm" => "install pnpm (`corepack enable pnpm`, or `npm install -g pnpm`)".to_owned(),
        "yarn" => "install Yarn (`corepack enable yarn`, or `npm install -g yarn`)".to_owned(),
        "bun" => "install Bun (https://bun.sh/)".to_owned(),
        "cargo" | "rustc" => "install Rust with rustup (https://rustup.rs/)".to_owned(),
        "cargo-nextest" => "install cargo-nextest (`cargo install cargo-nextest --locked`)".to_owned(),
        "go" => "install Go (https://go.dev/dl/)".to_owned(),
        "sh" => "install a POSIX shell as `sh`".to_owned(),
        other => format!("install `{other}` or put the directory holding it on PATH"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proposal::argv;

    #[test]
    fn programs_see_through_the_report_wrapper_and_cargo_subcommands() {
        let wrapped = argv(&[
            "sh",
            "-c",
            "mkdir -p test-results && exec \"$@\" > test-results/go.json",
            "sh",
            "go",
            "test",
            "-json",
            "./...",
        ]);
        assert_eq!(programs(&wrapped), ["sh", "go"]);
        assert_eq!(
            programs(&argv(&["cargo", "nextest", "run"])),
            ["cargo", "cargo-nextest"]
        );
        assert_eq!(
            programs(&argv(&["uv", "run", "--no-sync", "pytest"])),
            ["uv"]
        );
        assert!(programs(&argv(&[".venv/bin/python", "-m", "pytest"])).is_empty());
        assert!(programs(&[]).is_empty());
    }

    #[test]
    fn a_program_is_found_only_as_an_executable_file_in_an_absolute_entry() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let bin = dir.path().join("bin");
        fs_err::create_dir_all(&bin).expect("bin");
        fs_err::write(bin.join("tool"), "#!/bin/sh\n").expect("tool");
        fs_err::write(bin.join("data"), "not a program").expect("data");
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(bin.join("tool"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let joined =
            std::env::join_paths([PathBuf::from("relative"), bin.clone()]).expect("a PATH");
        let host = Host::new(Some(&joined), false);
        assert!(host.finds("tool"));
        assert!(!host.finds("data"), "not executable");
        assert!(!host.finds("missing"));
        assert!(
            !Host::default().finds("tool"),
            "an empty PATH finds nothing"
        );
    }
}
