//! Helpers shared by the cross-check tests: running external tools and
//! failing loudly, with install instructions, when one is missing.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

/// How to install what the Python cross-checks need.
pub(crate) const PYTHON_HINT: &str = "run ./scripts/test.sh, which installs the pinned \
     Python test tools (tools/interop/requirements.txt: securesystemslib[crypto], rfc8785) \
     into their venv, tools/interop/.venv (on Debian it needs `apt-get install python3-venv`)";

/// How to install OpenSSL 3.
pub(crate) const OPENSSL_HINT: &str =
    "install OpenSSL 3 (Debian: `apt-get install openssl`); Ed25519 `pkeyutl -rawin` needs 3.0+";

/// The crate root.
pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A script in `interop/`.
pub(crate) fn interop_script(name: &str) -> PathBuf {
    crate_dir().join("tools/interop").join(name)
}

/// Runs `command`, panicking with `hint` if the program cannot be started.
pub(crate) fn run(command: &mut Command, hint: &str) -> Output {
    match command.output() {
        Ok(output) => output,
        Err(err) => panic!(
            "cannot run {:?} ({err}); this cross-check is required: {hint}",
            command.get_program()
        ),
    }
}

/// Runs `command` and panics, showing its output, unless it exits 0.
pub(crate) fn run_ok(command: &mut Command, hint: &str) -> Output {
    let output = run(command, hint);
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Checks OpenSSL 3 or later is on PATH and returns its version line.
pub(crate) fn require_openssl() -> String {
    let output = run_ok(Command::new("openssl").arg("version"), OPENSSL_HINT);
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let major = version
        .strip_prefix("OpenSSL ")
        .and_then(|rest| rest.split('.').next())
        .and_then(|major| major.parse::<u32>().ok());
    assert!(
        matches!(major, Some(m) if m >= 3),
        "found {version:?}, but OpenSSL 3 or later is required: {OPENSSL_HINT}"
    );
    version
}

/// The `python3` of the Python test tools' venv (`support::python_tool`), which imports
/// the pinned packages and nothing of the system's site-packages.
pub(crate) fn python3() -> Command {
    Command::new(crate::support::python_tool("python3"))
}

/// Checks [`python3`] can import `modules` and returns its version line.
pub(crate) fn require_python(modules: &[&str]) -> String {
    let imports = modules.join(", ");
    let script = format!("import sys, {imports}; print(sys.version.split()[0])");
    let output = run(python3().args(["-c", &script]), PYTHON_HINT);
    assert!(
        output.status.success(),
        "the venv's python3 cannot import {imports}: {}\nthis cross-check is required: {PYTHON_HINT}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Runs an `interop/` script with [`python3`].
pub(crate) fn python(script: &str, args: &[&OsStr]) -> Output {
    let mut command = python3();
    command.arg(interop_script(script)).args(args);
    run(&mut command, PYTHON_HINT)
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes lowercase or uppercase hex.
pub(crate) fn unhex(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd-length hex {text:?}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digit"))
        .collect()
}
