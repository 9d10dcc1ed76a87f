//! A receipt records, per repository, a git tree of exactly the input files it bound,
//! written into that repository's object database and kept under
//! `refs/proofgraph/inputs/<tree>`: a modified or untracked file is written as a blob,
//! a clean one costs nothing, a no-op prove writes nothing, `git gc` keeps what a receipt
//! names, and `cache gc` lets go of what no receipt names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Sandbox, assert_emits, git, input_refs};

/// `ws/` (the OpenSpec root's git repository, with `web/`) and `api/` beside it.
fn workspace(sb: &Sandbox) -> (PathBuf, PathBuf) {
    sb.openspec_root("ws");
    sb.write(
        "ws/proofgraph.yaml",
        "version: 1\nrepositories:\n  web: {path: web}\n  api: {path: ../api}\n",
    );
    sb.write("ws/.gitignore", ".proofgraph/\n");
    sb.write("ws/web/src/app.js", "console.log('app');\n");
    sb.write("ws/web/src/util.js", "export const util = 1;\n");
    sb.write("ws/web/README.md", "not an input\n");
    let tool = sb.write("ws/web/src/tool.sh", "#!/bin/sh\necho tool\n");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::os::unix::fs::symlink("app.js", sb.work().join("ws/web/src/link.js")).expect("symlink");
    sb.write("ws/openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "ws/openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: web-ok, scenario: s, capabilities: [web-test]}\n  - {id: api-ok, scenario: s, capabilities: [api-all]}\n",
    );
    sb.write(
        "ws/openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  web-test:\n    adapter: command\n    repository: web\n    inputs: [src/**]\n    command: [sh, -c, \"exit 0\"]\n  api-all:\n    adapter: command\n    repository: api\n    command: [sh, -c, \"exit 0\"]\n",
    );
    sb.write("api/main.sh", "echo api\n");
    sb.write("api/lib/x.sh", "echo x\n");
    let (ws, api) = (sb.work().join("ws"), sb.work().join("api"));
    for repo in [&ws, &api] {
        git(repo, &["init", "-q", "-b", "main"]);
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", "start"]);
    }
    (ws, api)
}

/// Every object id of a kind in a repository.
fn objects(repo: &Path, kind: &str) -> Vec<String> {
    git(
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype) %(objectname)",
        ],
    )
    .lines()
    .filter_map(|l| l.strip_prefix(&format!("{kind} ")).map(str::to_owned))
    .collect()
}

/// The in-toto Statement inside the envelope `sha` of the store at `root`.
fn statement(root: &Path, sha: &str) -> Value {
    let bytes = fs_err::read(root.join(".proofgraph/cas").join(&sha[..2]).join(&sha[2..]))
        .expect("a stored blob");
    let envelope: Value = serde_json::from_slice(&bytes).expect("envelope");
    let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    serde_json::from_slice(&body).expect("statement")
}

/// provider → the trees its receipt records.
fn trees(root: &Path, doc: &Value) -> BTreeMap<String, Value> {
    doc["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| {
            let sha = p["receipts"][0]["sha256"].as_str().expect("a receipt");
            let statement = statement(root, sha);
            (
                p["provider"].as_str().unwrap_or("").to_owned(),
                statement["predicate"]["proofgraph"]["trees"].clone(),
            )
        })
        .collect()
}

/// `git ls-tree -r`: path → (mode, blob).
fn ls_tree(repo: &Path, tree: &str) -> BTreeMap<String, (String, String)> {
    git(repo, &["ls-tree", "-r", tree])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').expect("a tree line");
            let parts: Vec<&str> = meta.split(' ').collect();
            (path.to_owned(), (parts[0].to_owned(), parts[2].to_owned()))
        })
        .collect()
}

#[test]
fn a_receipt_records_exactly_its_inputs_as_git_trees() {
    let sb = Sandbox::new();
    let (ws, api) = workspace(&sb);
    // A modified file, an untracked one (not ignored: an input), a clean one.
    fs_err::write(ws.join("web/src/app.js"), "console.log('edited');\n").expect("edit");
    fs_err::write(ws.join("web/src/new.js"), "export {};\n").expect("new");
    let blobs_before = objects(&ws, "blob").len();
    let run = sb.run(&ws, &["prove", "x", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    let recorded = trees(&ws, &doc);
    let web_tree = recorded["web-test"]["web"]
        .as_str()
        .expect("a web tree")
        .to_owned();
    assert_eq!(
        recorded["web-test"].as_object().map(|o| o.len()),
        Some(1),
        "{recorded:?}"
    );
    let api_tree = recorded["api-all"]["api"]
        .as_str()
        .expect("an api tree")
        .to_owned();

    // Exactly the bound files, relative to the repository, with their modes and bytes.
    let listed = ls_tree(&ws, &web_tree);
    assert_eq!(
        listed.keys().collect::<Vec<_>>(),
        [
            "src/app.js",
            "src/link.js",
            "src/new.js",
            "src/tool.sh",
            "src/util.js"
        ],
        "{listed:?}"
    );
    assert_eq!(listed["src/link.js"].0, "120000");
    assert_eq!(listed["src/tool.sh"].0, "100755");
    assert_eq!(listed["src/app.js"].0, "100644");
    for (path, (_, blob)) in &listed {
        let content = git(&ws, &["cat-file", "-p", blob]);
        let expected = if path == "src/link.js" {
            "app.js".to_owned()
        } else {
            fs_err::read_to_string(ws.join("web").join(path)).expect("read")
        };
        assert_eq!(content, expected, "{path}");
    }
    // Only the modified and the untracked file were written as blobs.
    assert_eq!(objects(&ws, "blob").len(), blobs_before + 2);
    // The whole api repository (its provider names no inputs), in its own repository.
    assert_eq!(
        ls_tree(&api, &api_tree).keys().collect::<Vec<_>>(),
        ["lib/x.sh", "main.sh"]
    );
    assert_eq!(
        input_refs(&api),
        [format!("refs/proofgraph/inputs/{api_tree}")]
    );

    // git's own gc keeps what the refs reach.
    git(&ws, &["gc", "--quiet", "--prune=now"]);
    git(&ws, &["cat-file", "-e", &format!("{web_tree}^{{tree}}")]);
    let new_blob = &listed["src/new.js"].1;
    git(&ws, &["cat-file", "-e", new_blob]);

    // A no-op prove writes nothing.
    let objects_before = objects(&ws, "tree").len() + objects(&ws, "blob").len();
    let refs_before = input_refs(&ws);
    let run = sb.run(&ws, &["prove", "x", "--json"]);
    run.expect_code(0);
    assert_eq!(
        objects(&ws, "tree").len() + objects(&ws, "blob").len(),
        objects_before
    );
    assert_eq!(input_refs(&ws), refs_before);
}

/// The same files bound again (another provider, or a rerun with `--no-cache`) are the
/// same tree and ref; `cache gc` deletes the refs of trees no receipt left names, and
/// keeps the current receipt's.
#[test]
fn cache_gc_lets_go_of_trees_no_receipt_names() {
    let sb = Sandbox::new();
    let (ws, _api) = workspace(&sb);
    sb.run(&ws, &["prove", "x", "--json"]).expect_code(0);
    let first = input_refs(&ws);
    assert_eq!(first.len(), 1, "{first:?}");
    sb.run(&ws, &["prove", "x", "--no-cache", "--json"])
        .expect_code(0);
    assert_eq!(input_refs(&ws), first, "the same inputs are the same tree");
    fs_err::write(ws.join("web/src/app.js"), "console.log('two');\n").expect("edit");
    let run = sb.run(&ws, &["prove", "x", "--json"]);
    run.expect_code(0);
    let current = trees(&ws, &run.json())["web-test"]["web"]
        .as_str()
        .expect("a tree")
        .to_owned();
    assert_eq!(input_refs(&ws).len(), 2);

    // Old enough to go: every blob and ref file.
    let mut paths = crate::remote_http::files(&ws.join(".proofgraph/cas"));
    paths.extend(crate::remote_http::files(&ws.join(".git/refs/proofgraph")));
    for path in &paths {
        let ok = Command::new("touch")
            .args(["-h", "-d", "3 days ago"])
            .arg(path)
            .status()
            .expect("touch");
        assert!(ok.success());
    }
    let run = sb.run(&ws, &["cache", "gc", "--keep", "1d", "--json"]);
    run.expect_code(0);
    let collected = &run.json()["collected"];
    assert_eq!(collected["trees_removed"], 1, "{collected:#}");
    assert_eq!(
        input_refs(&ws),
        [format!("refs/proofgraph/inputs/{current}")],
        "the current receipt's tree stays"
    );
}

/// A bound file that changes in the working tree while its provider runs (an editor
/// saving) is not what was fingerprinted: its tree is not recorded, with a warning, and
/// the receipt — judged on the sandbox's verified copy — still stands.
#[test]
fn a_file_that_moved_during_the_run_is_never_recorded_as_bound() {
    let sb = Sandbox::new();
    let (ws, _api) = workspace(&sb);
    let app = ws.join("web/src/app.js");
    // The job cannot touch the work tree (its world holds a snapshot): the user edits the
    // file while the job runs, between the job's "started" and the test's "go".
    let started = sb.channel("started");
    let go = sb.channel("go");
    sb.write(
        "ws/openspec/changes/x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  web-test:\n    adapter: command\n    repository: web\n    inputs: [src/**]\n    command: [sh, -c, \"echo started >> {}; read -r go < {}\"]\n  api-all:\n    adapter: command\n    repository: api\n    command: [sh, -c, \"exit 0\"]\n",
            started.env(),
            go.env()
        ),
    );
    git(&ws, &["commit", "-qam", "wiring"]);
    // Modified before the run, so its blob must be read again to be recorded.
    fs_err::write(&app, "console.log('edited');\n").expect("edit");
    let child = sb
        .proofgraph(&ws)
        .args(["prove", "x", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start prove");
    started.wait_for_line();
    fs_err::write(&app, "console.log('edited');\n// saved meanwhile\n").expect("edit meanwhile");
    go.send("go");
    let output = child.wait_with_output().expect("prove ends");
    let run = crate::support::Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    let doc = run.json();
    assert_emits!(run.status_codes(), "inputs_not_recorded", "{doc:#}");
    let message = doc["status"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["code"] == "inputs_not_recorded"))
        .and_then(|d| d["message"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("src/app.js") && message.contains("web-test"),
        "{message}"
    );
    let recorded = trees(&ws, &doc);
    assert_eq!(recorded["web-test"], Value::Null, "{recorded:?}");
    assert!(recorded["api-all"]["api"].is_string(), "{recorded:?}");
    assert!(
        input_refs(&ws).is_empty(),
        "no ref for a tree never written"
    );
}
