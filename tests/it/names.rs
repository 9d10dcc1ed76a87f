//! File names that are not UTF-8. Inputs are bound by UTF-8 names; a file whose name is not
//! UTF-8 was once left out of a job's world without a word (a failing test with such a name
//! never ran). Now every way such a name can reach a job's inputs — tracked, untracked, a
//! directory holding files, a revision for `plan --base/--head` — stops the run with
//! `input_name_not_utf8`, naming the file escaped; a file git ignores changes nothing.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::support::{Sandbox, assert_emits, git, git_commit_all};

/// `caf\xe9` (Latin-1): not UTF-8.
fn latin1(dir: &str, leaf: &str) -> PathBuf {
    let mut name = dir.as_bytes().to_vec();
    name.extend_from_slice(b"caf\xe9");
    name.extend_from_slice(leaf.as_bytes());
    PathBuf::from(OsStr::from_bytes(&name))
}

fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(".gitignore", ".proofgraph/\nignored/\n");
    sb.write("data/ok.txt", "ok\n");
    sb.write("openspec/changes/n/proposal.md", "# Names\n");
    sb.write(
        "openspec/changes/n/evidence.yaml",
        "version: 2\nclaims:\n  - {id: c, scenario: Every data file says ok, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/n/execution.yaml",
        "version: 1\nproviders:\n  all-ok: {adapter: command, capability: static-analysis, command: [sh, -c, \"for f in data/*; do grep -qx ok \\\"$f\\\" || exit 1; done\"]}\n",
    );
    git_commit_all(&sb.work());
}

/// The `input_name_not_utf8` message of a prove (exit 3), or a panic with the document.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let run = sb.run(&sb.work(), args);
    run.expect_code(3);
    assert_emits!(run.status_codes(), "input_name_not_utf8");
    let doc = run.json();
    doc["status"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["code"] == "input_name_not_utf8"))
        .and_then(|d| d["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_name_that_is_not_utf8_stops_the_run_whether_tracked_untracked_or_in_a_revision() {
    let sb = Sandbox::new();
    workspace(&sb);
    let prove = ["prove", "n", "--json"];
    sb.run(&sb.work(), &prove).expect_code(0);

    // Untracked, failing: once left out (the provider passed without reading it).
    let bad = sb.work().join(latin1("data/", ".txt"));
    fs_err::write(&bad, "bad\n").expect("write");
    let message = refused(&sb, &prove);
    assert!(message.contains("`data/caf\\xe9.txt`"), "{message}");
    // Ignored by git: not an input, nothing to say.
    fs_err::remove_file(&bad).expect("remove");
    fs_err::create_dir_all(sb.work().join("ignored")).expect("mkdir");
    fs_err::write(sb.work().join("ignored").join(latin1("", ".txt")), "bad\n").expect("write");
    sb.run(&sb.work(), &prove).expect_code(0);
    // An untracked directory whose name is not UTF-8, with a file inside.
    let dir = sb.work().join(latin1("data/", ""));
    fs_err::create_dir_all(&dir).expect("mkdir");
    fs_err::write(dir.join("t.txt"), "bad\n").expect("write");
    let message = refused(&sb, &prove);
    assert!(message.contains("caf\\xe9"), "{message}");
    fs_err::remove_dir_all(&dir).expect("remove");

    // Tracked: committed, then a plan of that revision refuses it too.
    fs_err::write(&bad, "ok\n").expect("write");
    git_commit_all(&sb.work());
    let message = refused(&sb, &prove);
    assert!(message.contains("`data/caf\\xe9.txt`"), "{message}");
    let head = git(&sb.work(), &["rev-parse", "HEAD"]);
    let head = head.trim();
    let message = refused(
        &sb,
        &["plan", "n", "--json", "--base", "HEAD~1", "--head", head],
    );
    assert!(
        message.contains("`data/caf\\xe9.txt` at `") && message.contains("not UTF-8"),
        "{message}"
    );
    // Renamed, it is an input like any other, and the run passes again.
    fs_err::rename(&bad, sb.work().join("data/cafe.txt")).expect("rename");
    git_commit_all(&sb.work());
    sb.run(&sb.work(), &prove).expect_code(0);
}

/// With a watcher answering snapshots, a new untracked file whose name is not UTF-8 is not
/// served from what the watcher kept: its event marks the directory, and the run stops.
#[test]
fn a_watcher_does_not_serve_a_snapshot_without_a_name_that_is_not_utf8() {
    let sb = Sandbox::new();
    workspace(&sb);
    let watcher = crate::prove::start_watcher(&sb);
    let prove = ["prove", "n", "--json"];
    sb.run(&sb.work(), &prove).expect_code(0);
    sb.run(&sb.work(), &prove).expect_code(0);
    fs_err::write(sb.work().join(latin1("data/", ".txt")), "bad\n").expect("write");
    let message = refused(&sb, &prove);
    assert!(message.contains("`data/caf\\xe9.txt`"), "{message}");
    let (doc, log) = crate::prove::stop_watcher(watcher);
    assert!(doc.is_object(), "{log}");
}
