//! What a command sees in each sandbox mode, on a real git repository:
//! `worktree` is exactly the tracked files with their working-tree content;
//! `copy` is the working tree minus ignored paths and the build/dependency
//! directories (unless tracked); symlinks are copied verbatim in both.

use std::collections::BTreeMap;

use crate::support::{Sandbox, git, git_commit_all};

/// A repository with tracked, untracked, ignored, dependency and build
/// files, symlinks, and an uncommitted edit.
fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(".gitignore", "*.log\n");
    sb.write("a.txt", "committed\n");
    sb.write("sub/b.txt", "b\n");
    sb.write("node_modules/tracked.js", "tracked\n");
    std::os::unix::fs::symlink("a.txt", sb.work().join("link")).expect("symlink");
    std::os::unix::fs::symlink("../nowhere", sb.work().join("dangling")).expect("symlink");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: seen, scenario: The tree is what the mode promises, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        r#"version: 1
providers:
  look:
    adapter: command
    capability: static-analysis
    command: [sh, -c, "find . -path ./.git -prune -o -path ./openspec -prune -o -printf '%y %p %l\\n' | sort > \"$LISTING\"; cat a.txt >> \"$LISTING\""]
    envFrom: [LISTING]
"#,
    );
    git_commit_all(&sb.work());
    sb.write("a.txt", "uncommitted edit\n");
    sb.write("new.txt", "untracked\n");
    sb.write("secret.log", "ignored\n");
    sb.write("node_modules/untracked.js", "dependency\n");
    sb.write("target/debug/out", "build output\n");
    sb.write("coverage/lcov.info", "coverage\n");
    sb.write("test-results/r.json", "{}\n");
    sb.write("playwright-report/index.html", "<html>\n");
    assert!(
        git(&sb.work(), &["status", "--porcelain"]).contains("new.txt"),
        "new.txt is untracked"
    );
}

/// Path → (type, link target) as the command saw it, and the content of `a.txt`.
fn look(sb: &Sandbox, mode: &str) -> (BTreeMap<String, String>, String) {
    let listing = sb.channel(&format!("listing-{mode}"));
    let run = sb.run_with_env(
        &sb.work(),
        &["prove", "add-x", "--sandbox", mode, "--json"],
        &[("LISTING", listing.env())],
    );
    run.expect_code(0);
    let text = listing.read();
    assert!(!text.is_empty(), "the command wrote its listing");
    let (entries, content) = text
        .split_once("uncommitted")
        .map(|(l, c)| (l.to_owned(), format!("uncommitted{c}")))
        .unwrap_or((text.clone(), String::new()));
    let map = entries
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            let kind = parts.next()?;
            let path = parts.next()?.trim_start_matches("./").to_owned();
            let target = parts.next().unwrap_or("").trim();
            Some((path, format!("{kind} {target}").trim().to_owned()))
        })
        .filter(|(p, _)| p != ".")
        .collect();
    (map, content)
}

fn present(map: &BTreeMap<String, String>) -> Vec<&str> {
    map.iter()
        .filter(|(_, kind)| !kind.starts_with('d'))
        .map(|(p, _)| p.as_str())
        .collect()
}

#[test]
fn worktree_is_what_git_status_shows_with_its_current_content() {
    let sb = Sandbox::new();
    workspace(&sb);
    let (map, content) = look(&sb, "worktree");
    // Tracked files and the untracked ones git does not ignore (`new.txt`), minus the
    // regenerable directories — the same tree as a copy sandbox.
    assert_eq!(
        present(&map),
        vec![
            ".gitignore",
            "a.txt",
            "dangling",
            "link",
            "new.txt",
            "node_modules/tracked.js",
            "sub/b.txt"
        ]
    );
    assert_eq!(map["link"], "l a.txt", "symlinks are copied verbatim");
    assert_eq!(map["dangling"], "l ../nowhere");
    assert_eq!(
        content, "uncommitted edit\n",
        "uncommitted edits are proven"
    );
}

#[test]
fn copy_is_the_working_tree_minus_ignored_and_untracked_build_directories() {
    let sb = Sandbox::new();
    workspace(&sb);
    let (map, content) = look(&sb, "copy");
    assert_eq!(
        present(&map),
        vec![
            ".gitignore",
            "a.txt",
            "dangling",
            "link",
            "new.txt",
            "node_modules/tracked.js",
            "sub/b.txt"
        ]
    );
    assert_eq!(map["link"], "l a.txt", "symlinks are copied verbatim");
    assert_eq!(map["dangling"], "l ../nowhere");
    assert_eq!(content, "uncommitted edit\n");
}

/// Through `prove`: a provider that forks a background `sleep` leaves no
/// process behind, and the run's sandboxes are removed afterwards unless
/// `--keep-sandbox`.
#[test]
fn a_background_process_dies_with_the_run_and_sandboxes_are_removed() {
    let sb = Sandbox::new();
    let marker = format!("pg-bg-{}", std::process::id());
    sb.openspec_root("");
    sb.write("openspec/changes/add-x/proposal.md", "# Add x\n");
    sb.write(
        "openspec/changes/add-x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: seen, scenario: It runs, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/add-x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  look:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"(sleep 300; echo {marker}) & setsid sleep 301 & echo forked\"]\n"
        ),
    );
    git_commit_all(&sb.work());
    let runs = sb.work().join(".proofgraph/runs");
    sb.run(&sb.work(), &["prove", "add-x", "--keep-sandbox"])
        .expect_code(0);
    let kept = fs_err::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 1, "--keep-sandbox keeps the run's directory");
    sb.run(&sb.work(), &["prove", "add-x", "--no-cache"])
        .expect_code(0);
    assert_eq!(
        fs_err::read_dir(&runs).map(|d| d.count()).unwrap_or(0),
        kept,
        "without --keep-sandbox the run's directory is removed"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left: Vec<String> = fs_err::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|e| fs_err::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&marker) || c.contains("sleep 301"))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "processes of the run survive it: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
