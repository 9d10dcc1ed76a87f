//! The store holds nothing a tool walking the repository cannot open (issue 27). After the
//! commands a workspace sees — prove, a reuse, a failure, a kept sandbox, a cached setup,
//! rerun, a push to and a pull from a real remote cache, `cache gc` — `.proofgraph/` is
//! directories and regular files its owner can read, and nothing else; Node's `node --test`,
//! which walks the tree for test files and stops at a link that leads nowhere, passes in a
//! repository that holds a used store; and a store an earlier version wrote, its pointers
//! symbolic links, still serves its receipts and loses its links on the first writable open.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::remote_http::{CI, Nginx, ci_key, clone, install};
use crate::support::{Run, Sandbox, git_commit_all, provider};

/// Every path under `dir` (relative) that a tool walking the tree could not open: anything
/// but a directory or a regular file (a symbolic link, a FIFO, a socket, a device), a
/// directory its owner cannot list and enter, a file its owner cannot read — each with
/// what it is.
fn unwalkable(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let entries = match fs_err::read_dir(&at) {
            Ok(entries) => entries,
            Err(e) => {
                out.push(format!("{}: {e}", at.display()));
                continue;
            }
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            let meta = fs_err::symlink_metadata(&path).expect("lstat");
            let kind = meta.file_type();
            let owner = meta.permissions().mode() & 0o700;
            if kind.is_dir() {
                if owner & 0o500 != 0o500 {
                    out.push(format!(
                        "{rel}: a directory of mode {:o}",
                        meta.permissions().mode() & 0o7777
                    ));
                }
                stack.push(path);
            } else if kind.is_file() {
                if owner & 0o400 == 0 {
                    out.push(format!(
                        "{rel}: a file of mode {:o}",
                        meta.permissions().mode() & 0o7777
                    ));
                } else if let Err(e) = fs_err::File::open(&path) {
                    out.push(format!("{rel}: {e}"));
                }
            } else if kind.is_symlink() {
                let target = fs_err::read_link(&path).expect("readlink");
                out.push(format!("{rel}: a symbolic link to {}", target.display()));
            } else {
                out.push(format!("{rel}: {kind:?}"));
            }
        }
    }
    out.sort();
    out
}

/// Every action-cache entry and ref of the store under `root`.
fn entries(root: &Path) -> Vec<PathBuf> {
    let store = root.join(".proofgraph");
    let mut out = Vec::new();
    let mut stack = vec![store.join("ac"), store.join("refs")];
    while let Some(at) = stack.pop() {
        for entry in fs_err::read_dir(&at).expect("read").flatten() {
            if entry.file_type().expect("a type").is_dir() {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// Makes the store under `root` what an earlier version (af316a2 up to issue 27) left: every
/// entry a symbolic link to `sha256-<unpadded base64url>`, which names no file, and a
/// `store.json` that does not say its entries are files. Returns how many links it made.
fn as_an_earlier_version_left_it(root: &Path) -> usize {
    let all = entries(root);
    for entry in &all {
        let text = fs_err::read_to_string(entry).expect("an entry");
        let target = proofgraph::store::pointer_target(text.trim()).expect("a digest");
        fs_err::remove_file(entry).expect("remove");
        fs_err::os::unix::fs::symlink(target, entry).expect("link");
    }
    fs_err::write(
        root.join(".proofgraph/store.json"),
        "{\"format\": \"proofgraph-store\", \"version\": 1}\n",
    )
    .expect("store.json");
    all.len()
}

fn links(root: &Path) -> usize {
    entries(root)
        .iter()
        .filter(|e| fs_err::symlink_metadata(e).is_ok_and(|m| m.file_type().is_symlink()))
        .count()
}

fn ok(run: Run) -> Value {
    run.expect_code(0);
    run.json()
}

/// Each provider of a `prove` document with what it did (`unit=ran`), sorted.
fn actions(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| {
            format!(
                "{}={}",
                p["provider"].as_str().unwrap_or("?"),
                p["action"].as_str().unwrap_or("?")
            )
        })
        .collect();
    out.sort();
    out
}

/// Whether a `status` document says the one requirement passed.
fn passed(status: &Value) -> bool {
    status["summary"]["passed"] == 1
        && status["requirements"]
            .as_array()
            .is_some_and(|all| all.len() == 1 && all[0]["state"] == "passed")
}

/// A repository `app` with a cached setup (it makes `deps/tool`) and two providers: `unit`
/// passes while `app/flag.txt` says `good` and setup's tool is there, `lint` always; the
/// remote cache is `remote`, and `trusted` is the `trustedKeys` part of the catalog.
fn workspace(sb: &Sandbox, remote: &str, trusted: &str) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!(
            "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"mkdir -p deps && echo ok > deps/tool\"]]\n    setupCache: [deps]\ncache:\n  remote: {remote}\n{trusted}"
        ),
    );
    sb.write("app/flag.txt", "good\n");
    sb.write("app/package.json", "{\"name\": \"app\"}\n");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [unit, lint]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  unit:\n    adapter: command\n    capability: unit\n    repository: app\n    command: [sh, -c, \"test \\\"$(cat flag.txt)\\\" = good && test -f deps/tool && echo written > out.txt\"]\n  lint:\n    adapter: command\n    capability: lint\n    repository: app\n    command: [sh, -c, \"test -f package.json\"]\n",
    );
    git_commit_all(&sb.work());
}

#[test]
fn a_used_store_holds_only_directories_and_files_its_owner_can_read() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let (secret, trusted) = ci_key(&sb);
    workspace(&sb, &nginx.url, &trusted);
    let ci = clone(&sb, "ci");
    install(&secret, &ci);
    let prove = |dir: &Path, extra: &[&str]| {
        let mut args = vec!["prove", "x", "--json"];
        args.extend(extra);
        sb.run_with_env(dir, &args, &[CI])
    };
    // Proved, with a cached setup, and pushed.
    let first = ok(prove(&ci, &[]));
    assert_eq!(actions(&first), ["lint=ran", "unit=ran"], "{first:#}");
    let sha = provider(&first, "unit")["receipts"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    // Proved again: reused.
    let again = ok(prove(&ci, &[]));
    assert_eq!(actions(&again), ["lint=reused", "unit=reused"], "{again:#}");
    // A failure.
    fs_err::write(ci.join("app/flag.txt"), "bad\n").expect("edit");
    prove(&ci, &[]).expect_code(1);
    fs_err::write(ci.join("app/flag.txt"), "good\n").expect("edit back");
    // A run whose sandboxes are kept, in the store's runs/.
    let kept = ok(prove(&ci, &["--no-cache", "--keep-sandbox"]));
    assert_eq!(actions(&kept), ["lint=ran", "unit=ran"], "{kept:#}");
    let runs: Vec<PathBuf> = fs_err::read_dir(ci.join(".proofgraph/runs"))
        .expect("runs/")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "the kept run: {runs:?}");
    let written = crate::remote_http::files(&runs[0]);
    assert!(
        written.iter().any(|p| p.ends_with("upper/out.txt")),
        "what `unit` wrote is kept: {written:?}"
    );
    // The first receipt, rerun from its recorded inputs.
    sb.run(&ci, &["rerun", "--json", &sha]).expect_code(0);
    // Pushed, then pulled by another clone, which reuses what it pulled.
    ok(sb.run_with_env(&ci, &["cache", "push", "x", "--json"], &[CI]));
    let laptop = clone(&sb, "laptop");
    let pulled = ok(sb.run(&laptop, &["cache", "pull", "x", "--json"]));
    assert_eq!(
        pulled["pulled"].as_array().map(Vec::len),
        Some(2),
        "{pulled:#}"
    );
    let reused = ok(sb.run(&laptop, &["prove", "x", "--json"]));
    assert_eq!(
        actions(&reused),
        ["lint=reused", "unit=reused"],
        "{reused:#}"
    );
    // Collected.
    ok(sb.run(&ci, &["cache", "gc", "--json"]));
    for root in [&ci, &laptop] {
        let store = root.join(".proofgraph");
        assert!(entries(root).len() >= 2, "entries in {}", store.display());
        assert_eq!(
            unwalkable(&store),
            Vec::<String>::new(),
            "in {}",
            store.display()
        );
    }
    assert!(
        fs_err::read_dir(ci.join(".proofgraph/setup-trees"))
            .expect("setup trees")
            .flatten()
            .any(|e| e.path().join("tree/deps/tool").is_file()),
        "the cached setup's tree is in the store"
    );
    drop(nginx);
}

/// A small Node project whose tests are `tests/*.test.js`, proved by `node --test` itself.
fn node_project(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write("package.json", "{\"name\": \"sums\", \"private\": true}\n");
    sb.write("src/sum.js", "exports.sum = (a, b) => a + b;\n");
    sb.write(
        "tests/sum.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sum } = require('../src/sum.js');\n\ntest('adds', () => assert.strictEqual(sum(2, 3), 5));\n",
    );
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [unit]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  unit:\n    adapter: command\n    capability: unit\n    command: [node, --test]\n",
    );
    git_commit_all(&sb.work());
}

/// `node --test` in the repository's root, as a developer runs it: no arguments, so it
/// walks the whole tree for test files, `.proofgraph/` included (it reads no `.gitignore`).
fn node_test(sb: &Sandbox) -> Run {
    sb.command("node", &sb.work(), &["--test"])
}

#[test]
fn node_test_passes_in_a_repository_that_holds_a_used_store() {
    let sb = Sandbox::new();
    node_project(&sb);
    let first = ok(sb.run(&sb.work(), &["prove", "x", "--json"]));
    assert_eq!(actions(&first), ["unit=ran"], "{first:#}");
    let again = ok(sb.run(&sb.work(), &["prove", "x", "--json"]));
    assert_eq!(actions(&again), ["unit=reused"], "{again:#}");
    assert!(!entries(&sb.work()).is_empty(), "the store is used");
    let passed = node_test(&sb);
    passed.expect_code(0);
    assert!(
        passed.stdout.contains("# tests 1\n") && passed.stdout.contains("# pass 1\n"),
        "one test, found once:\n{}",
        passed.stdout
    );
    // The store as the previous version left it: its dangling links stop the runner.
    assert!(as_an_earlier_version_left_it(&sb.work()) > 0);
    let stopped = node_test(&sb);
    stopped.expect_code(1);
    assert!(
        stopped.stderr.contains("Could not find '") && stopped.stderr.contains("/.proofgraph/"),
        "{}",
        stopped.stderr
    );
    // The next prove reads them, reuses its receipt and leaves files in their place.
    let converted = ok(sb.run(&sb.work(), &["prove", "x", "--json"]));
    assert_eq!(actions(&converted), ["unit=reused"], "{converted:#}");
    node_test(&sb).expect_code(0);
}

#[test]
fn a_store_an_earlier_version_wrote_still_serves_its_receipts() {
    let sb = Sandbox::new();
    let runs = sb.channel("runs");
    sb.lint_change(&format!("[sh, -c, \"echo ran >> {}\"]", runs.env()));
    let proved = ok(sb.run(&sb.work(), &["prove", "add-x", "--json"]));
    let sha = provider(&proved, "lint")["receipts"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    assert_eq!(runs.lines(), 1);
    let made = as_an_earlier_version_left_it(&sb.work());
    assert_eq!(made, 2, "an action-cache entry and a ref");
    // And a link an earlier version would read as no entry.
    let store = sb.work().join(".proofgraph");
    fs_err::create_dir_all(store.join("ac/00")).expect("mkdir");
    fs_err::os::unix::fs::symlink("sha256-AAAA", store.join("ac/00").join("0".repeat(62)))
        .expect("link");
    // Commands that only read serve the receipt from the links, and leave them.
    let status = ok(sb.run(&sb.work(), &["status", "add-x", "--json"]));
    assert!(passed(&status), "{status:#}");
    ok(sb.run(&sb.work(), &["receipt", "verify", &sha, "--json"]));
    assert_eq!(links(&sb.work()), 3);
    // `prove` reuses it, and its store is left without a link.
    let reused = ok(sb.run(&sb.work(), &["prove", "add-x", "--json"]));
    assert_eq!(actions(&reused), ["lint=reused"], "{reused:#}");
    assert_eq!(
        provider(&reused, "lint")["receipts"][0]["sha256"],
        sha.as_str(),
        "{reused:#}"
    );
    assert_eq!(runs.lines(), 1, "nothing ran again");
    assert_eq!(links(&sb.work()), 0);
    assert_eq!(unwalkable(&store), Vec::<String>::new());
    let marker: Value = serde_json::from_str(
        &fs_err::read_to_string(store.join("store.json")).expect("store.json"),
    )
    .expect("JSON");
    assert_eq!(marker["entries"], "files", "{marker}");
    // Read again from the files it left.
    let status = ok(sb.run(&sb.work(), &["status", "add-x", "--json"]));
    assert!(passed(&status), "{status:#}");
}
