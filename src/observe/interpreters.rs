//! Asking the host's Python interpreters whether they can import a module (`evidence
//! doctor`'s `python_module_missing`): bootstrap reads an interpreter's installation, but one
//! it cannot read (a pyenv or asdf shim, a wrapper script) only answers when run. Each is
//! run as a provider's `python… -m <module>` would be — in the repository, with the
//! provider's `PYTHONPATH` and without the user's site-packages (a job's home is empty) —
//! and asked `importlib.util.find_spec`, which imports nothing but the module's parents.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bootstrap::{PythonImport, PythonQuestion};

/// What the interpreter runs: its executable on stdout, exit 0 when it finds the module,
/// 3 when it does not.
const ASK: &str = "import importlib.util, sys\nsys.stdout.write(sys.executable)\nsys.exit(0 if importlib.util.find_spec(sys.argv[1]) is not None else 3)";

/// How long an interpreter may take to answer; one that does not is not judged.
const PATIENCE: Duration = Duration::from_secs(10);

/// The most of its answer (its executable's path) that is read.
const ANSWER_BYTES: u64 = 4096;

/// The answers of the interpreters `questions` name, found on `path`, run with the
/// environment `vars`. An interpreter that cannot be started, is killed, answers anything
/// else or takes longer than 10 s gives no answer (bootstrap then reads its installation).
pub fn ask(
    questions: &[PythonQuestion],
    path: Option<&OsStr>,
    vars: &std::collections::BTreeMap<OsString, OsString>,
) -> Vec<PythonImport> {
    questions
        .iter()
        .filter_map(|q| answer(q, path, vars))
        .collect()
}

fn answer(
    question: &PythonQuestion,
    path: Option<&OsStr>,
    vars: &std::collections::BTreeMap<OsString, OsString>,
) -> Option<PythonImport> {
    let program = find(&question.python, path?)?;
    let pythonpath = std::env::join_paths(&question.pythonpath).ok()?;
    // The answer goes to a file, not a pipe: a process the interpreter (or its shim) leaves
    // behind may hold its stdout open, and reading a pipe would wait for it to end.
    let mut answer = tempfile::tempfile().ok()?;
    let mut child = Command::new(&program)
        .args(["-c", ASK, &question.module])
        .current_dir(&question.dir)
        .env_clear()
        .envs(vars)
        .env("PATH", path?)
        .env("PYTHONPATH", pythonpath)
        .env("PYTHONNOUSERSITE", "1")
        .env_remove("PYTHONHOME")
        .stdin(Stdio::null())
        .stdout(answer.try_clone().ok()?)
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    std::io::Seek::rewind(&mut answer).ok()?;
    std::io::Read::read_to_string(&mut std::io::Read::take(answer, ANSWER_BYTES), &mut out).ok()?;
    let found = match status.code() {
        Some(0) => true,
        Some(3) => false,
        _ => return None,
    };
    let executable = if out.is_empty() {
        program
    } else {
        PathBuf::from(out)
    };
    Some(PythonImport {
        question: question.clone(),
        found,
        executable,
    })
}

/// `name` (a bare name) as the first executable file in an absolute `PATH` directory.
fn find(name: &str, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    if name.contains('/') {
        return None;
    }
    std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| {
            fs_err::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(python: &str, module: &str, dir: &std::path::Path) -> PythonQuestion {
        PythonQuestion {
            python: python.to_owned(),
            module: module.to_owned(),
            dir: dir.to_path_buf(),
            pythonpath: Vec::new(),
        }
    }

    /// The real `python3` of this machine, through a shim script as pyenv and asdf make
    /// them: bootstrap cannot read it, the interpreter answers.
    #[test]
    fn a_shimmed_interpreter_answers_for_the_standard_library_a_local_package_and_a_missing_module()
    {
        use std::os::unix::fs::PermissionsExt as _;
        let machine = std::env::var_os("PATH").expect("PATH is set");
        let real = find("python3", &machine)
            .expect("python3 is on this machine's PATH (the tests need it)");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let shims = dir.path().join("shims");
        fs_err::create_dir_all(&shims).expect("a directory");
        let shim = shims.join("python3");
        fs_err::write(
            &shim,
            format!("#!/bin/sh\nexec '{}' \"$@\"\n", real.display()),
        )
        .expect("a shim");
        fs_err::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let repo = dir.path().join("repo");
        fs_err::create_dir_all(repo.join("src/localpkg")).expect("a package");
        fs_err::write(repo.join("src/localpkg/__init__.py"), "").expect("a module");
        // The shim first, then the machine's PATH (a pyenv shim finds bash through it).
        let path = std::env::join_paths(
            std::iter::once(shims.clone()).chain(std::env::split_paths(&machine)),
        )
        .expect("a PATH");
        // The shim of this machine's python3 may be pyenv's, which needs HOME.
        let vars: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        let mut local = question("python3", "localpkg", &repo);
        let questions = [
            question("python3", "json", &repo),
            question("python3", "surely_no_such_module_here", &repo),
            local.clone(),
        ];
        local.pythonpath = vec![repo.join("src")];
        let answers = ask(
            &[questions.to_vec(), vec![local]].concat(),
            Some(&path),
            &vars,
        );
        let found: Vec<(&str, bool)> = answers
            .iter()
            .map(|a| (a.question.module.as_str(), a.found))
            .collect();
        assert_eq!(
            found,
            [
                ("json", true),
                ("surely_no_such_module_here", false),
                ("localpkg", false),
                ("localpkg", true)
            ]
        );
        assert!(
            answers.iter().all(|a| a.executable != shim),
            "the interpreter names itself, not the shim"
        );
    }

    /// A shim that leaves a process behind holding its stdout: the answer is still read as
    /// soon as the interpreter exits, not when that process ends (60 s later).
    #[test]
    fn a_process_left_holding_the_interpreter_s_output_does_not_hold_the_answer() {
        use std::os::unix::fs::PermissionsExt as _;
        let machine = std::env::var_os("PATH").expect("PATH is set");
        let real = find("python3", &machine)
            .expect("python3 is on this machine's PATH (the tests need it)");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let shim = dir.path().join("python3");
        fs_err::write(
            &shim,
            format!("#!/bin/sh\nsleep 60 &\nexec '{}' \"$@\"\n", real.display()),
        )
        .expect("a shim");
        fs_err::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = std::env::join_paths(
            std::iter::once(dir.path().to_path_buf()).chain(std::env::split_paths(&machine)),
        )
        .expect("a PATH");
        let vars: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        let started = Instant::now();
        let answers = ask(
            &[question("python3", "json", dir.path())],
            Some(&path),
            &vars,
        );
        let took = started.elapsed();
        assert_eq!(answers.len(), 1, "the interpreter answered");
        assert!(answers[0].found);
        assert!(
            took < Duration::from_secs(30),
            "the answer waited for the process left behind: {took:?}"
        );
    }

    #[test]
    fn an_interpreter_that_cannot_answer_gives_no_answer() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let broken = dir.path().join("python3");
        fs_err::write(&broken, "#!/bin/sh\nexit 1\n").expect("a script");
        fs_err::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let vars = std::collections::BTreeMap::new();
        let path = OsString::from(dir.path());
        let q = question("python3", "json", dir.path());
        assert!(ask(std::slice::from_ref(&q), Some(&path), &vars).is_empty());
        assert!(
            ask(
                &[question("python9", "json", dir.path())],
                Some(&path),
                &vars
            )
            .is_empty()
        );
        assert!(ask(&[q], None, &vars).is_empty());
    }
}
