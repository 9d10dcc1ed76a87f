//! The tree a provider reads is the one `git status` shows: tracked files and the untracked
//! files git does not ignore, in every sandbox mode and with a watcher running. Each test
//! tries to slip a failing test past `prove` as a file git does not track.

use serde_json::Value;

use crate::support::{Sandbox, git, git_commit_all, provider};

/// A repository `web` (a directory of the one git repository) whose suite runs every
/// `tests/*.sh` and fails when one fails; one passing test, committed.
fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  web: {path: web}\n",
    );
    sb.write(
        "web/run.sh",
        "for t in tests/*.sh; do sh \"$t\" || { echo \"$t failed\"; exit 1; }; done\n",
    );
    sb.write("web/tests/ok.sh", "exit 0\n");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [static-analysis], repositories: [web]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        "version: 1\nproviders:\n  suite:\n    adapter: command\n    capability: static-analysis\n    repository: web\n    command: [sh, run.sh]\n",
    );
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, mode: &str) -> (i32, Value) {
    let run = sb.run(&sb.work(), &["prove", "add-x", "--json", "--sandbox", mode]);
    (run.code.expect("an exit code"), run.json())
}

/// `plan`'s view of the provider `suite`: its action and how many untracked files it binds
/// (the same in every sandbox mode, which only decides how the tree is presented).
fn planned(sb: &Sandbox) -> (String, u64) {
    let doc = sb.run(&sb.work(), &["plan", "add-x", "--json"]).json();
    let node = doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["name"] == "suite")
        .expect("the provider is planned")
        .clone();
    (
        node["action"].as_str().expect("an action").to_owned(),
        node["inputs"]["untracked"].as_u64().expect("a count"),
    )
}

fn ran(doc: &Value) -> bool {
    provider(doc, "suite")["action"] == "ran"
}

#[test]
fn an_untracked_failing_test_is_never_proven_in_any_sandbox_mode() {
    for mode in ["worktree", "copy", "none"] {
        let sb = Sandbox::new();
        workspace(&sb);
        let (code, _) = prove(&sb, mode);
        assert_eq!(code, 0, "{mode}: the committed suite passes");
        // A new test, not yet added: `git status` shows it, so it counts.
        sb.write("web/tests/broken.sh", "exit 1\n");
        assert_eq!(
            planned(&sb),
            ("run".to_owned(), 1),
            "{mode}: plan reruns and names the untracked file"
        );
        let (code, doc) = prove(&sb, mode);
        assert_eq!(code, 1, "{mode}: {doc}");
        assert!(ran(&doc), "{mode}: {doc}");
        assert_eq!(
            provider(&doc, "suite")["receipts"][0]["outcome"],
            "fail",
            "{mode}"
        );
        // Gone again: the first receipt is current again and nothing runs — except in
        // place, where a pass is never reused (its job could see and change anything).
        fs_err::remove_file(sb.work().join("web/tests/broken.sh")).expect("remove");
        let (code, doc) = prove(&sb, mode);
        assert_eq!(code, 0, "{mode}: {doc}");
        assert_eq!(
            ran(&doc),
            mode == "none",
            "{mode}: the earlier pass is reused: {doc}"
        );
    }
}

#[test]
fn what_git_ignores_or_does_not_own_is_not_an_input() {
    let sb = Sandbox::new();
    workspace(&sb);
    // Ignored from the work tree's root (above the repository's directory), from
    // .git/info/exclude and from a nested .gitignore.
    sb.write(".gitignore", "*.log\n");
    sb.write("web/.gitignore", "build/\n");
    git_commit_all(&sb.work());
    let exclude = sb.work().join(".git/info/exclude");
    fs_err::create_dir_all(exclude.parent().expect("a parent")).expect("mkdir");
    fs_err::write(&exclude, "scratch/\n").expect("exclude");
    let (code, _) = prove(&sb, "worktree");
    assert_eq!(code, 0);
    sb.write("web/tests/debug.log", "noise\n");
    sb.write("web/build/tests/broken.sh", "exit 1\n");
    sb.write("web/scratch/notes.sh", "exit 1\n");
    // Regenerable directories are never inputs, ignored or not.
    sb.write("web/node_modules/pkg/index.js", "module.exports = 1\n");
    // A nested repository is its own: git does not list its files.
    sb.write("web/vendor/lib/tests/broken.sh", "exit 1\n");
    git(&sb.work().join("web/vendor/lib"), &["init", "-q"]);
    assert_eq!(planned(&sb), ("reuse".to_owned(), 0));
    let (code, doc) = prove(&sb, "worktree");
    assert_eq!(code, 0, "{doc}");
    assert!(!ran(&doc), "nothing ignored or foreign reran it: {doc}");
    // An untracked file outside the ignored paths is one.
    sb.write("web/tests/new.sh", "exit 0\n");
    assert_eq!(planned(&sb), ("run".to_owned(), 1));
}

#[test]
fn an_untracked_symlink_and_an_untracked_directory_are_copied_into_the_sandbox() {
    let sb = Sandbox::new();
    workspace(&sb);
    sb.write("web/extra/tests/deep.sh", "exit 0\n");
    std::os::unix::fs::symlink(
        "../extra/tests/deep.sh",
        sb.work().join("web/tests/link.sh"),
    )
    .expect("symlink");
    sb.write(
        "web/run.sh",
        "test -L tests/link.sh && test -f extra/tests/deep.sh || exit 3\nfor t in tests/*.sh; do sh \"$t\" || exit 1; done\n",
    );
    let (code, doc) = prove(&sb, "worktree");
    assert_eq!(
        code, 0,
        "the sandbox holds the untracked link and directory: {doc}"
    );
    assert_eq!(
        planned(&sb).1,
        2,
        "the link and the file in the new directory"
    );
}

#[test]
fn with_a_watcher_running_an_untracked_failing_test_still_reruns() {
    let sb = Sandbox::new();
    workspace(&sb);
    let watcher = crate::prove::start_watcher(&sb);
    let (code, _) = prove(&sb, "worktree");
    assert_eq!(code, 0);
    sb.write("web/tests/broken.sh", "exit 1\n");
    let (code, doc) = prove(&sb, "worktree");
    let (watched, _) = crate::prove::stop_watcher(watcher);
    assert_eq!(code, 1, "{doc}");
    assert!(ran(&doc), "{doc}");
    assert!(
        watched["served"]["answered"].as_u64().unwrap_or(0) >= 2,
        "both proves read the watcher: {watched}"
    );
}
