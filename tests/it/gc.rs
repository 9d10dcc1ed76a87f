//! `cache gc` removes what no change needs and nothing a change needs: a receipt that is
//! current (or the latest) for some change keeps its envelope, log, report and input
//! listing, whatever `--keep` and `--max-size` say; a blob younger than an hour stays; a
//! change that cannot be evaluated stops it before anything is removed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Sandbox, git_commit_all};

fn workspace(sb: &Sandbox) {
    sb.home_channel("runs.log");
    sb.openspec_root("");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  lint:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"cat src/lib.sh; echo lint >> $HOME/runs.log\"]\n",
    );
    sb.write("src/lib.sh", "echo 1\n");
    git_commit_all(&sb.work());
}

fn blobs(sb: &Sandbox) -> Vec<PathBuf> {
    crate::remote_http::files(&sb.work().join(".proofgraph/cas"))
}

/// Makes every blob look `age` old (`touch -d`).
fn age(paths: &[PathBuf], age: &str) {
    for path in paths {
        let ok = Command::new("touch")
            .args(["-h", "-d", age])
            .arg(path)
            .status()
            .expect("touch");
        assert!(ok.success());
    }
}

fn runs(sb: &Sandbox) -> usize {
    sb.home_channel("runs.log").lines()
}

fn gc(sb: &Sandbox, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["cache", "gc", "--json"];
    all.extend(args);
    let run = sb.run(&sb.work(), &all);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    run.json()["collected"].clone()
}

fn proves_without_running(sb: &Sandbox, dir: &Path) {
    let before = runs(sb);
    let run = sb.run(dir, &["prove", "x", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(
        runs(sb),
        before,
        "the current receipt was kept: nothing ran"
    );
    let log = sb.run(dir, &["log", "x", "lint"]);
    assert_eq!(log.code, Some(0), "its log was kept: {}", log.stderr);
    assert!(log.stdout.contains("echo 2"), "{}", log.stdout);
}

#[test]
fn gc_removes_old_receipts_and_keeps_every_current_one_with_what_it_names() {
    let sb = Sandbox::new();
    workspace(&sb);
    assert_eq!(sb.run(&sb.work(), &["prove", "x"]).code, Some(0));
    let first = blobs(&sb);
    // A new fingerprint: a second receipt; the first is history now.
    fs_err::write(sb.work().join("src/lib.sh"), "echo 2\n").expect("edit");
    assert_eq!(sb.run(&sb.work(), &["prove", "x"]).code, Some(0));
    assert_eq!(runs(&sb), 2);
    // Young blobs stay, whatever --keep says.
    let collected = gc(&sb, &["--keep", "0s"]);
    assert_eq!(collected["removed"], 0, "{collected}");
    // Three days later: the first receipt's blobs go, the current ones stay.
    age(&blobs(&sb), "3 days ago");
    let collected = gc(&sb, &["--keep", "1d"]);
    assert!(
        collected["removed"].as_u64().unwrap_or(0) >= 2,
        "{collected}"
    );
    assert!(
        collected["entries_removed"].as_u64().unwrap_or(0) >= 1,
        "{collected}"
    );
    let left = blobs(&sb);
    assert!(
        first.iter().any(|b| !left.contains(b)),
        "something of the first went"
    );
    proves_without_running(&sb, &sb.work());
    // Down to nothing by size: the current receipt and its blobs are all that is left.
    age(&blobs(&sb), "3 days ago");
    let collected = gc(&sb, &["--keep", "1d", "--max-size", "0"]);
    assert_eq!(collected["kept"].as_u64(), Some(blobs(&sb).len() as u64));
    assert!(collected["kept"].as_u64().unwrap_or(0) >= 3, "{collected}");
    proves_without_running(&sb, &sb.work());
}

#[test]
fn gc_removes_nothing_while_a_change_cannot_be_evaluated_and_refuses_bad_flags() {
    let sb = Sandbox::new();
    workspace(&sb);
    assert_eq!(sb.run(&sb.work(), &["prove", "x"]).code, Some(0));
    age(&blobs(&sb), "3 days ago");
    let before = blobs(&sb).len();
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders: [not, a, map]\n",
    );
    let run = sb.run(&sb.work(), &["cache", "gc", "--json"]);
    assert_eq!(run.code, Some(3), "{}", run.stdout);
    assert_eq!(blobs(&sb).len(), before, "nothing was removed");
    for bad in [["--keep", "soon"], ["--max-size", "2T"]] {
        let run = sb.run(&sb.work(), &["cache", "gc", bad[0], bad[1]]);
        assert_eq!(run.code, Some(3), "{bad:?}: {}", run.stderr);
    }
}
