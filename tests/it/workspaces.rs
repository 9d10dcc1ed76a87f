//! A workspace of several repositories (docs/workspaces.md), in the layouts it documents:
//! repositories that are submodules of the OpenSpec root's repository, a nested clone the
//! parent ignores, and (in `plan_refs.rs`) a sibling checkout. `plan --base REV` reads the
//! parent's revision and each submodule at the commit that revision records — never `REV`
//! evaluated in each repository — so a commit that moved one repository affects that one
//! only; a repository the parent does not record needs `--base name=REV`; and a revision a
//! shallow clone cannot reach says how to deepen it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Run, Sandbox, assert_codes, git, input_refs};

const EVIDENCE: &str = "version: 2\nclaims:\n  - {id: api-ok, scenario: s, capabilities: [api-test]}\n  - {id: web-ok, scenario: s, capabilities: [web-test]}\n";

const EXECUTION: &str = "version: 1\nproviders:\n  api-test:\n    adapter: command\n    repository: api\n    command: [sh, -c, \"grep -q api src/lib.sh\"]\n  web-test:\n    adapter: command\n    repository: web\n    command: [sh, -c, \"grep -q web src/app.sh\"]\n";

/// A git repository at `dir` holding `files`, committed once.
fn repository(dir: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        crate::support::write(&dir.join(path), content);
    }
    git(dir, &["init", "-q", "-b", "main"]);
    commit(dir, "start");
}

fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
}

fn head(dir: &Path, rev: &str) -> String {
    git(dir, &["rev-parse", rev]).trim().to_owned()
}

fn plan(sb: &Sandbox, cwd: &Path, args: &[&str]) -> Run {
    let mut all = vec!["plan", "x", "--json"];
    all.extend_from_slice(args);
    sb.run(cwd, &all)
}

fn affected(plan: &Value) -> Vec<String> {
    plan["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .filter(|p| p["affected"] == true)
        .map(|p| p["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn changed(plan: &Value) -> Vec<String> {
    plan["changed"]
        .as_array()
        .expect("changed")
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c["repository"].as_str().unwrap_or_default(),
                c["path"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn base_commits(plan: &Value) -> BTreeMap<String, String> {
    plan["base"]["repositories"]
        .as_object()
        .expect("base repositories")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// `ws/` (the OpenSpec root's repository) with `api` and `web` as submodules. `api` has two
/// commits, and `ws` records the second from its first commit on; `ws`'s second commit
/// moves `web` to a new commit and leaves `api` where it was.
struct Submodules {
    sb: Sandbox,
}

impl Submodules {
    fn new() -> Self {
        let sb = Sandbox::new();
        let origins = sb.work().join("origins");
        repository(&origins.join("api"), &[("src/lib.sh", "echo api v1\n")]);
        crate::support::write(&origins.join("api/src/lib.sh"), "echo api v2\n");
        commit(&origins.join("api"), "api: v2");
        repository(&origins.join("web"), &[("src/app.sh", "echo web v1\n")]);
        sb.openspec_root("ws");
        sb.write(
            "ws/proofgraph.yaml",
            "version: 1\nrepositories:\n  api: {path: api}\n  web: {path: web}\n",
        );
        sb.write("ws/.gitignore", ".proofgraph/\n");
        sb.write("ws/openspec/changes/x/proposal.md", "# X\n");
        sb.write("ws/openspec/changes/x/evidence.yaml", EVIDENCE);
        sb.write("ws/openspec/changes/x/execution.yaml", EXECUTION);
        let ws = sb.work().join("ws");
        git(&ws, &["init", "-q", "-b", "main"]);
        for name in ["api", "web"] {
            let url = origins.join(name);
            git(
                &ws,
                &[
                    "-c",
                    "protocol.file.allow=always",
                    "submodule",
                    "add",
                    "-q",
                    url.to_str().expect("UTF-8"),
                    name,
                ],
            );
        }
        commit(&ws, "start: api and web as submodules");
        // `web` moves (a commit in its checkout, recorded by the parent); `api` does not.
        sb.write("ws/web/src/app.sh", "echo web v2\n");
        commit(&ws.join("web"), "web: v2");
        commit(&ws, "web: v2");
        Self { sb }
    }

    fn ws(&self) -> PathBuf {
        self.sb.work().join("ws")
    }
}

/// The must-show of issue 29: `plan --base HEAD~1` on a commit that moved `web` only
/// affects `web`'s provider. `api`'s own `HEAD~1` is another commit (its `v1`), but the
/// parent's `HEAD~1` records `api` where it still is: `api` did not move. Only when asked
/// (`--base api=HEAD~1`) is `api` read at its own `HEAD~1`.
#[test]
fn a_plain_revision_reads_each_submodule_at_the_commit_its_parent_records() {
    let s = Submodules::new();
    let ws = s.ws();
    let api = ws.join("api");
    let web = ws.join("web");
    assert_ne!(
        head(&api, "HEAD~1"),
        head(&api, "HEAD"),
        "api's own HEAD~1 is another commit"
    );

    // The layout proves as it is (each submodule is a repository of its own).
    let prove = s.sb.run(&ws, &["prove", "x", "--json"]);
    prove.expect_code(0);
    for dir in [&api, &web] {
        assert_eq!(
            input_refs(dir).len(),
            1,
            "a receipt's input tree is kept in the submodule's own repository"
        );
    }

    for head_args in [&[][..], &["--head", "HEAD"][..]] {
        let mut args = vec!["--base", "HEAD~1"];
        args.extend_from_slice(head_args);
        let run = plan(&s.sb, &ws, &args);
        run.expect_code(0);
        let doc = run.json();
        assert_eq!(changed(&doc), ["web:src/app.sh"], "{head_args:?}: {doc:#}");
        assert_eq!(affected(&doc), ["web-test"], "{head_args:?}: {doc:#}");
        assert_eq!(
            base_commits(&doc),
            BTreeMap::from([
                ("api".to_owned(), head(&api, "HEAD")),
                ("web".to_owned(), head(&web, "HEAD~1")),
            ]),
            "each submodule at the commit the parent's HEAD~1 records: {doc:#}"
        );
        assert_eq!(doc["base"]["ref"], "HEAD~1", "{doc:#}");
    }

    // `api` named at its own HEAD~1: now it moved (v1 → v2), and only then is it affected.
    let run = plan(&s.sb, &ws, &["--base", "HEAD~1", "--base", "api=HEAD~1"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(
        changed(&doc),
        ["api:src/lib.sh", "web:src/app.sh"],
        "{doc:#}"
    );
    assert_eq!(affected(&doc), ["api-test", "web-test"], "{doc:#}");
    assert_eq!(doc["base"]["named"]["api"], "HEAD~1", "{doc:#}");
    assert_eq!(base_commits(&doc)["api"], head(&api, "HEAD~1"), "{doc:#}");
    let human = s.sb.run(
        &ws,
        &["plan", "x", "--base", "HEAD~1", "--base", "api=HEAD~1"],
    );
    assert!(
        human
            .stdout
            .contains("Plan for x: HEAD~1 (api=HEAD~1)..the working tree"),
        "{}",
        human.stdout
    );
}

/// A submodule whose recorded commit its clone does not have (not fetched) is
/// `unknown_revision`, and the fix says to fetch it, not to fetch the parent's revision.
#[test]
fn a_recorded_commit_the_submodule_lacks_says_to_fetch_it() {
    let s = Submodules::new();
    let ws = s.ws();
    // The parent records a web commit that exists nowhere in web's clone.
    let missing = "1111111111111111111111111111111111111111";
    git(
        &ws,
        &[
            "update-index",
            "--cacheinfo",
            &format!("160000,{missing},web"),
        ],
    );
    git(&ws, &["commit", "-q", "-m", "web: a commit nobody fetched"]);
    let run = plan(&s.sb, &ws, &["--base", "HEAD", "--head", "HEAD~1"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["unknown_revision"], "{}", run.stdout);
    let doc = run.json();
    let d = &doc["status"][0];
    let (message, fix) = (
        d["message"].as_str().unwrap_or_default(),
        d["fix"].as_str().unwrap_or_default(),
    );
    assert!(
        message.contains(missing) && message.contains("repository `web`"),
        "{message}"
    );
    assert!(
        fix.contains("git submodule update --init") && !fix.contains("fetch origin HEAD"),
        "{fix}"
    );
}

/// A nested clone the parent ignores records no commit in the parent: a plain `--base`
/// does not say where it was, so the plan is refused until it is named; named, it is read
/// at its own revision. The parent's providers never read its files.
#[test]
fn a_nested_clone_the_parent_ignores_must_be_named() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app: {path: .}\n  scripts: {path: src}\n  lib: {path: lib}\n",
    );
    sb.write(".gitignore", ".proofgraph/\nlib/\n");
    sb.write("src/main.sh", "echo app\n");
    sb.write("openspec/changes/x/proposal.md", "# X\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: ok, scenario: s, capabilities: [app-test, lib-test]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  app-test:\n    adapter: command\n    repository: app\n    command: [sh, -c, \"exit 0\"]\n  lib-test:\n    adapter: command\n    repository: lib\n    command: [sh, -c, \"exit 0\"]\n",
    );
    let root = sb.work();
    let lib = root.join("lib");
    repository(&lib, &[("x.sh", "echo lib v1\n")]);
    git(&root, &["init", "-q", "-b", "main"]);
    commit(&root, "start");
    commit(&root, "an empty second commit");
    crate::support::write(&lib.join("x.sh"), "echo lib v2\n");
    commit(&lib, "lib: v2");

    // The parent's provider binds no file of the nested clone.
    let hash = || {
        let doc = sb.run(&root, &["hash", "x", "app-test", "--json"]).json();
        doc["bindings"][0]["fingerprint"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let before = hash();
    crate::support::write(&lib.join("x.sh"), "echo lib v3 (not committed)\n");
    assert_eq!(hash(), before, "the parent never reads lib's files");
    git(&lib, &["checkout", "-q", "--", "x.sh"]);

    let run = plan(&sb, &root, &["--base", "HEAD~1"]);
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["revision_missing"], "{}", run.stdout);
    let doc = run.json();
    let d = &doc["status"][0];
    assert!(
        d["message"].as_str().is_some_and(|m| m
            .contains("repository `lib` is a git repository of its own")
            && m.contains("no submodule there")),
        "{doc:#}"
    );
    assert!(
        d["fix"]
            .as_str()
            .is_some_and(|f| f.contains("`--base lib=<rev>`")),
        "{doc:#}"
    );

    // Named: read at its own revision; `app` follows the plain one.
    let run = plan(&sb, &root, &["--base", "HEAD~1", "--base", "lib=HEAD~1"]);
    run.expect_code(2);
    let doc = run.json();
    assert_eq!(changed(&doc), ["lib:x.sh"], "{doc:#}");
    assert_eq!(affected(&doc), ["lib-test"], "{doc:#}");
    // Every repository named: no plain revision needed (`app` shares the root's git
    // repository, whose revision it names).
    let run = plan(&sb, &root, &["--base", "app=HEAD~1", "--base", "lib=HEAD"]);
    run.expect_code(2);
    let doc = run.json();
    assert_eq!(changed(&doc), Vec::<String>::new(), "{doc:#}");
    assert_eq!(doc["base"]["ref"], "HEAD~1", "{doc:#}");
    // The root's repository without a revision; a name the workspace does not have; two
    // plain revisions; two repositories of the root's git repository at two revisions and
    // none for it; one repository twice.
    for (args, code) in [
        (&["--base", "lib=HEAD"][..], "revision_missing"),
        (
            &["--base", "HEAD", "--base", "nope=HEAD"][..],
            "unknown_repository",
        ),
        (&["--base", "HEAD", "--base", "main"][..], "usage_error"),
        (
            &[
                "--base",
                "app=HEAD",
                "--base",
                "scripts=HEAD~1",
                "--base",
                "lib=HEAD",
            ][..],
            "usage_error",
        ),
        (
            &["--base", "HEAD", "--base", "lib=HEAD", "--base", "lib=main"][..],
            "usage_error",
        ),
    ] {
        let run = plan(&sb, &root, args);
        run.expect_code(3);
        assert_codes!(run.status_codes(), [code], "{args:?}: {}", run.stdout);
    }
}

/// `HEAD~1` that a repository does not have: in a shallow clone the fix says to deepen
/// it (never `git fetch origin HEAD~1`, which fetches nothing); in a full history, that the
/// revision does not exist; a remote's branch that is not fetched, to fetch that remote.
#[test]
fn an_unknown_revision_says_what_is_true_of_the_repository() {
    let sb = Sandbox::new();
    sb.openspec_root("origin");
    sb.write("origin/openspec/changes/x/proposal.md", "# X\n");
    sb.write(
        "origin/openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: ok, scenario: s, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "origin/openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  lint:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, \"exit 0\"]\n",
    );
    sb.write("origin/.gitignore", ".proofgraph/\n");
    let origin = sb.work().join("origin");
    git(&origin, &["init", "-q", "-b", "main"]);
    commit(&origin, "one");
    commit(&origin, "two");
    let url = format!("file://{}", origin.display());
    git(
        &sb.work(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let shallow = sb.work().join("shallow");

    let fix_of = |run: &Run| -> String {
        run.expect_code(3);
        assert_codes!(run.status_codes(), ["unknown_revision"], "{}", run.stdout);
        run.json()["status"][0]["fix"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let fix = fix_of(&plan(&sb, &shallow, &["--base", "HEAD~1"]));
    assert!(
        fix.contains("is shallow") && fix.contains("fetch --deepen=1"),
        "{fix}"
    );
    assert!(!fix.contains("fetch origin HEAD~1"), "{fix}");
    let fix = fix_of(&plan(&sb, &shallow, &["--base", "HEAD~3"]));
    assert!(fix.contains("fetch --deepen=3"), "{fix}");
    // Deepened as the fix says, the plan is made.
    git(&shallow, &["fetch", "-q", "--deepen=1"]);
    plan(&sb, &shallow, &["--base", "HEAD~1"]).expect_code(2);

    // A full history: HEAD~2 does not exist.
    let fix = fix_of(&plan(&sb, &origin, &["--base", "HEAD~2"]));
    assert!(
        fix.contains("`HEAD~2` does not exist in that repository") && !fix.contains("fetch"),
        "{fix}"
    );
    // A remote's branch the clone has not fetched.
    let fix = fix_of(&plan(&sb, &shallow, &["--base", "origin/feature"]));
    assert!(fix.contains("fetch origin`)"), "{fix}");
}
