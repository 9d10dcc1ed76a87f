//! Helpers for the unit tests that build real git repositories.

use std::path::Path;

/// Runs `git -C dir args…` with no system or user configuration; its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs (install git)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Commits everything in the work tree.
pub(crate) fn commit_all(dir: &Path) {
    git(dir, &["add", "-A"]);
    commit(dir);
}

/// Commits what is staged.
pub(crate) fn commit(dir: &Path) {
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
    );
}

/// Writes a file below `dir`, creating its directories.
pub(crate) fn write(dir: &Path, path: &str, content: &str) {
    let p = dir.join(path);
    fs_err::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
    fs_err::write(&p, content).expect("write");
}

pub(crate) use crate::attest::testing::beside_source;
