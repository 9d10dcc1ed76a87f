//! `plan --base --head`: the verification plan of a diff, on real git histories built
//! here — two git repositories (the OpenSpec root's, holding `web`, and `api` beside it),
//! commits, a merge, a rename, a deleted file, a change to the wiring alone and to the
//! change packet's prose alone. Exactly the expected providers and claims are affected,
//! the head's fingerprints are those a checkout of it gives, and its statuses are
//! `status`'s there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{Sandbox, assert_codes, assert_emits, git};

const EXECUTION: &str = r#"version: 1
providers:
  web-lint:
    adapter: command
    repository: web
    inputs: [src/**]
    command: [sh, -c, "exit 0"]
  web-test:
    adapter: command
    repository: web
    inputs: [src/**, package.json]
    dependsOn: [web-lint]
    command: [sh, -c, "! grep -q broken src/app.js"]
  web-script:
    adapter: command
    repository: web
    inputs: [src/**]
    command: [./run.sh]
  api-test:
    adapter: command
    repository: api
    command: [sh, -c, "exit 0"]
  e2e:
    adapter: command
    repository: api
    inputs: [tests/**]
    dependsOn: [api-test]
    command: [sh, -c, "exit 0"]
"#;

const EVIDENCE: &str = "version: 2\nclaims:\n  - {id: web-ok, scenario: s, capabilities: [web-lint, web-test]}\n  - {id: api-ok, scenario: s, capabilities: [api-test]}\n  - {id: e2e-ok, scenario: s, capabilities: [e2e]}\n  - {id: script-ok, scenario: s, capabilities: [web-script]}\n";

fn executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The workspace: `ws/` (the OpenSpec root, its own git repository, with `web/`) and
/// `api/` (a git repository beside it), both on `main` with tag `s0`.
struct History {
    sb: Sandbox,
}

impl History {
    fn new() -> Self {
        let sb = Sandbox::new();
        sb.openspec_root("ws");
        sb.write(
            "ws/proofgraph.yaml",
            "version: 1\nrepositories:\n  web: {path: web}\n  api: {path: ../api}\n",
        );
        sb.write("ws/web/src/app.js", "console.log('app');\n");
        sb.write("ws/web/src/util.js", "export const util = 1;\n");
        sb.write("ws/web/package.json", "{\"name\": \"web\"}\n");
        sb.write("ws/web/docs/notes.md", "notes\n");
        executable(&sb.write("ws/web/run.sh", "#!/bin/sh\nexit 0\n"));
        sb.write("ws/openspec/changes/add-x/proposal.md", "# Add x\n");
        sb.write("ws/openspec/changes/add-x/specs/x/spec.md", "## ADDED\n");
        sb.write("ws/openspec/changes/add-x/execution.yaml", EXECUTION);
        sb.write("ws/openspec/changes/add-x/evidence.yaml", EVIDENCE);
        sb.write("ws/.gitignore", ".proofgraph/\n");
        sb.write("api/src/lib.sh", "echo api\n");
        sb.write("api/tests/e2e.sh", "echo e2e\n");
        let h = Self { sb };
        for repo in [h.ws(), h.api()] {
            git(&repo, &["init", "-q", "-b", "main"]);
            git(&repo, &["add", "-A"]);
            git(&repo, &["commit", "-q", "-m", "start"]);
            git(&repo, &["tag", "s0"]);
        }
        h
    }

    fn ws(&self) -> PathBuf {
        self.sb.work().join("ws")
    }

    fn api(&self) -> PathBuf {
        self.sb.work().join("api")
    }

    /// Commits everything in both repositories (empty commits allowed) and tags both.
    fn step(&self, message: &str, tag: &str) {
        for repo in [self.ws(), self.api()] {
            git(&repo, &["add", "-A"]);
            git(&repo, &["commit", "-q", "--allow-empty", "-m", message]);
            git(&repo, &["tag", tag]);
        }
    }

    /// Both repositories on `rev`.
    fn checkout(&self, rev: &str) {
        for repo in [self.ws(), self.api()] {
            git(&repo, &["checkout", "-q", rev]);
        }
    }

    fn branch(&self, name: &str) {
        for repo in [self.ws(), self.api()] {
            git(&repo, &["checkout", "-q", "-b", name]);
        }
    }

    /// `plan add-x --json` with `args`, each `--base X`/`--head X` given to `api` too
    /// (`--base api=X`): `api` is a git repository beside the OpenSpec root's, which
    /// records no commit of it, so it is named at the same tag or branch (a multi-repository
    /// pull request's one branch name).
    fn plan(&self, args: &[&str], code: i32) -> Value {
        let mut all: Vec<String> = ["plan", "add-x", "--json"].map(str::to_owned).to_vec();
        for pair in args.chunks(2) {
            all.extend(pair.iter().map(|a| (*a).to_owned()));
            if let [flag @ ("--base" | "--head"), rev] = pair {
                all.extend([(*flag).to_owned(), format!("api={rev}")]);
            }
        }
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let run = self.sb.run(&self.ws(), &all);
        run.expect_code(code);
        run.json()
    }
}

/// provider → (affected, origin) of a plan.
fn affected(plan: &Value) -> BTreeMap<String, String> {
    plan["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .filter(|p| p["affected"] == true)
        .map(|p| {
            (
                p["id"].as_str().unwrap_or("").to_owned(),
                p["origin"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// claim/capability → (affected, status).
fn claims(plan: &Value) -> BTreeMap<String, (bool, String)> {
    plan["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            (
                format!(
                    "{}/{}",
                    c["id"].as_str().unwrap_or(""),
                    c["capability"].as_str().unwrap_or("")
                ),
                (
                    c["affected"] == true,
                    c["status"].as_str().unwrap_or("").to_owned(),
                ),
            )
        })
        .collect()
}

fn changed(plan: &Value) -> Vec<String> {
    plan["changed"]
        .as_array()
        .expect("changed")
        .iter()
        .map(|c| {
            let from = c["from"]
                .as_str()
                .map(|f| format!(" from {f}"))
                .unwrap_or_default();
            format!(
                "{} {}:{}{from}",
                c["change"].as_str().unwrap_or(""),
                c["repository"].as_str().unwrap_or(""),
                c["path"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn fingerprints(plan: &Value) -> BTreeMap<String, String> {
    plan["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or("").to_owned(),
                p["fingerprint"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn reason(plan: &Value, provider: &str) -> String {
    plan["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["id"] == provider)
        .and_then(|p| p["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A feature branch with an edit, a rename, a deleted file, a change in the other
/// repository and a merge of a side branch: exactly the providers whose inputs moved, and
/// their dependents, are affected — in both repositories, from either side's refs.
#[test]
fn a_history_affects_exactly_the_providers_its_paths_reach() {
    let h = History::new();
    h.branch("side");
    h.sb.write(
        "ws/web/package.json",
        "{\"name\": \"web\", \"version\": \"2\"}\n",
    );
    h.step("side: package.json", "side-done");
    h.checkout("main");
    h.branch("feature");
    h.sb.write("ws/web/src/app.js", "console.log('app v2');\n");
    h.step("edit app.js", "s1");
    git(&h.ws(), &["mv", "web/src/util.js", "web/src/helpers.js"]);
    h.step("rename util.js", "s2");
    git(&h.ws(), &["rm", "-q", "web/docs/notes.md"]);
    h.step("delete notes", "s3");
    h.sb.write("api/src/lib.sh", "echo api v2\n");
    h.step("api: lib.sh", "s4");
    for repo in [h.ws(), h.api()] {
        git(&repo, &["merge", "-q", "--no-edit", "side"]);
        git(&repo, &["tag", "merged"]);
    }
    h.checkout("main");

    let plan = h.plan(&["--base", "main", "--head", "feature"], 2);
    assert_eq!(
        changed(&plan),
        [
            "modified api:src/lib.sh",
            "deleted web:docs/notes.md",
            "modified web:package.json",
            "modified web:src/app.js",
            "renamed web:src/helpers.js from src/util.js",
        ],
        "{plan:#}"
    );
    assert_eq!(
        affected(&plan),
        BTreeMap::from([
            ("api-test".to_owned(), "derived".to_owned()),
            ("e2e".to_owned(), "derived".to_owned()),
            ("web-lint".to_owned(), "derived".to_owned()),
            ("web-script".to_owned(), "derived".to_owned()),
            ("web-test".to_owned(), "derived".to_owned()),
        ]),
        "{plan:#}"
    );
    assert!(
        reason(&plan, "e2e").contains("depends on affected api-test"),
        "{plan:#}"
    );
    assert!(!reason(&plan, "e2e").contains("inputs"), "{plan:#}");
    assert_eq!(plan["summary"]["changed_repositories"], 2, "{plan:#}");
    assert_eq!(plan["summary"]["changed_paths"], 5, "{plan:#}");

    // One step at a time: the rename alone reaches web-lint, web-script and web-test;
    // the deleted file (no provider's input) reaches nothing.
    let plan = h.plan(&["--base", "s1", "--head", "s2"], 2);
    assert_eq!(
        changed(&plan),
        ["renamed web:src/helpers.js from src/util.js"]
    );
    assert_eq!(
        affected(&plan).keys().collect::<Vec<_>>(),
        ["web-lint", "web-script", "web-test"],
        "{plan:#}"
    );
    let plan = h.plan(&["--base", "s2", "--head", "s3"], 2);
    assert_eq!(changed(&plan), ["deleted web:docs/notes.md"]);
    assert!(affected(&plan).is_empty(), "{plan:#}");
    assert_eq!(plan["summary"]["affected_claims"], 0, "{plan:#}");
    // The merge brings package.json: web-test alone (web-lint reads src/** only).
    let plan = h.plan(&["--base", "s4", "--head", "merged"], 2);
    assert_eq!(changed(&plan), ["modified web:package.json"]);
    assert_eq!(
        affected(&plan).keys().collect::<Vec<_>>(),
        ["web-test"],
        "{plan:#}"
    );
    let c = claims(&plan);
    assert!(
        c["web-ok/web-test"].0 && !c["web-ok/web-lint"].0 && !c["api-ok/api-test"].0,
        "{c:?}"
    );
}

/// Wiring alone (one field of one provider), a new claim, and the change packet's prose
/// alone: the first two are `stored` reasons that name what changed; prose affects
/// nothing.
#[test]
fn wiring_and_claims_are_stored_reasons_and_prose_is_nothing() {
    let h = History::new();
    h.sb.write(
        "ws/openspec/changes/add-x/execution.yaml",
        EXECUTION.replace(
            "    command: [sh, -c, \"exit 0\"]\n  e2e:",
            "    command: [sh, -c, \"exit 0\"]\n    timeoutMs: 60000\n  e2e:",
        ),
    );
    h.step("api-test gets a timeout", "wired");
    let plan = h.plan(&["--base", "s0", "--head", "wired"], 2);
    assert!(
        changed(&plan).is_empty(),
        "the change packet is never a changed path: {plan:#}"
    );
    assert_eq!(
        affected(&plan),
        BTreeMap::from([
            ("api-test".to_owned(), "stored".to_owned()),
            ("e2e".to_owned(), "derived".to_owned()),
        ]),
        "{plan:#}"
    );
    assert_eq!(
        reason(&plan, "api-test"),
        "wiring changed: timeoutMs",
        "{plan:#}"
    );

    // Reordered and re-indented the same wiring: nothing changed.
    let reordered = EXECUTION.replace(
        "    adapter: command\n    repository: api\n    command: [sh, -c, \"exit 0\"]\n  e2e:",
        "    repository: api\n    adapter: command\n    timeoutMs: 60000\n    command: [ sh, -c, \"exit 0\" ]\n  e2e:",
    );
    assert_ne!(reordered, EXECUTION);
    h.sb.write("ws/openspec/changes/add-x/execution.yaml", &reordered);
    h.step("reorder", "reordered");
    let plan = h.plan(&["--base", "wired", "--head", "reordered"], 2);
    assert!(affected(&plan).is_empty(), "{plan:#}");

    h.sb.write(
        "ws/openspec/changes/add-x/evidence.yaml",
        format!("{EVIDENCE}  - {{id: lint-ok, scenario: s, capabilities: [web-lint]}}\n"),
    );
    h.step("a claim", "claimed");
    let plan = h.plan(&["--base", "reordered", "--head", "claimed"], 2);
    assert!(affected(&plan).is_empty(), "{plan:#}");
    let c = claims(&plan);
    assert!(c["lint-ok/web-lint"].0, "{c:?}");
    assert!(!c["web-ok/web-lint"].0, "{c:?}");
    assert_eq!(plan["summary"]["affected_claims"], 1, "{plan:#}");

    h.sb.write(
        "ws/openspec/changes/add-x/proposal.md",
        "# Add x, said better\n",
    );
    h.sb.write(
        "ws/openspec/changes/add-x/specs/x/spec.md",
        "## ADDED\nMore prose.\n",
    );
    h.sb.write("ws/openspec/changes/add-x/tasks.md", "- [ ] do it\n");
    h.step("prose", "prose");
    let plan = h.plan(&["--base", "claimed", "--head", "prose"], 2);
    assert!(changed(&plan).is_empty(), "{plan:#}");
    assert!(affected(&plan).is_empty(), "{plan:#}");
    assert_eq!(plan["summary"]["affected_claims"], 0, "{plan:#}");
    // Its fingerprints did not move either.
    assert_eq!(
        fingerprints(&plan),
        fingerprints(&h.plan(&["--base", "claimed", "--head", "claimed"], 2))
    );

    // A removed provider and claim are named.
    h.sb.write(
        "ws/openspec/changes/add-x/execution.yaml",
        EXECUTION.replace(
            "  e2e:\n    adapter: command\n    repository: api\n    inputs: [tests/**]\n    dependsOn: [api-test]\n    command: [sh, -c, \"exit 0\"]\n",
            "",
        ),
    );
    h.sb.write(
        "ws/openspec/changes/add-x/evidence.yaml",
        EVIDENCE.replace("  - {id: e2e-ok, scenario: s, capabilities: [e2e]}\n", ""),
    );
    h.step("drop e2e", "dropped");
    let plan = h.plan(&["--base", "prose", "--head", "dropped"], 2);
    assert_eq!(
        plan["removed"]["providers"],
        serde_json::json!(["e2e"]),
        "{plan:#}"
    );
    assert_eq!(
        plan["removed"]["claims"],
        serde_json::json!(["e2e-ok", "lint-ok"]),
        "{plan:#}"
    );
}

/// The head's fingerprints are those a checkout of it gives, at every step of a history;
/// its statuses are `status`'s there; unchanged refs are an all-reuse plan; and the exit
/// code follows the head's requirements (0 passed, 1 failed, 2 pending).
#[test]
fn the_head_is_what_a_checkout_of_it_gives() {
    let h = History::new();
    h.sb.run(&h.ws(), &["prove", "add-x", "--json"])
        .expect_code(0);
    let plan = h.plan(&["--base", "main", "--head", "main"], 0);
    assert!(
        changed(&plan).is_empty() && affected(&plan).is_empty(),
        "{plan:#}"
    );
    assert!(
        claims(&plan).values().all(|(a, s)| !a && s == "passed"),
        "unchanged refs: everything reused: {plan:#}"
    );

    h.branch("feature");
    h.sb.write("ws/web/src/app.js", "console.log('broken');\n");
    h.step("break the app", "t1");
    h.sb.write("ws/web/src/new.js", "export {};\n");
    git(&h.ws(), &["mv", "web/src/util.js", "web/src/u.js"]);
    h.sb.write("api/tests/e2e.sh", "echo e2e v2\n");
    // The program of web-script, which is not among its inputs: its content is part of
    // the fingerprint all the same.
    h.sb.write("ws/web/run.sh", "#!/bin/sh\nexit 0 # v2\n");
    h.step("more", "t2");
    h.sb.write(
        "ws/openspec/changes/add-x/execution.yaml",
        EXECUTION.replace("[src/**, package.json]", "[src/**, package.json, docs/**]"),
    );
    h.step("wiring", "t3");
    h.checkout("main");

    for rev in ["t1", "t2", "t3"] {
        let at_head = h.plan(&["--base", "main", "--head", rev], 2);
        // Now check it out and ask the working tree.
        h.checkout(rev);
        let checked_out = h.plan(&["--base", "main"], 2);
        assert_eq!(
            fingerprints(&at_head),
            fingerprints(&checked_out),
            "{rev}: from objects and from a checkout"
        );
        let status = h.sb.run(&h.ws(), &["status", "add-x", "--json"]);
        let status = status.json();
        let states: BTreeMap<String, String> = crate::support::states(&status);
        let planned: BTreeMap<String, String> = claims(&at_head)
            .into_iter()
            .map(|(k, (_, s))| (k, s))
            .collect();
        assert_eq!(
            planned, states,
            "{rev}: plan statuses against status at the head"
        );
        assert_eq!(affected(&at_head), affected(&checked_out), "{rev}");
        h.checkout("main");
    }
    let plan = h.plan(&["--base", "t1", "--head", "t2"], 2);
    assert!(
        reason(&plan, "web-script").contains("program changed: web:run.sh"),
        "{plan:#}"
    );
    let plan = h.plan(&["--base", "main", "--head", "t1"], 2);
    let c = claims(&plan);
    assert_eq!(c["api-ok/api-test"], (false, "passed".to_owned()), "{c:?}");
    // Proven before, for another fingerprint: stale, as `status` says.
    assert_eq!(c["web-ok/web-test"], (true, "stale".to_owned()), "{c:?}");

    // Proven at t3 (web-test fails there: its app is broken), then planned from main.
    h.checkout("t3");
    h.sb.run(&h.ws(), &["prove", "add-x", "--json"])
        .expect_code(1);
    h.checkout("main");
    let plan = h.plan(&["--base", "main", "--head", "t3"], 1);
    assert_eq!(claims(&plan)["web-ok/web-test"].1, "failed", "{plan:#}");
    assert_eq!(claims(&plan)["e2e-ok/e2e"].1, "passed", "{plan:#}");
    // Markdown for a pull request comment: the same verdict.
    let run = h.sb.run(
        &h.ws(),
        &[
            "plan", "add-x", "--base", "main", "--base", "api=main", "--head", "t3", "--head",
            "api=t3", "--format", "markdown",
        ],
    );
    run.expect_code(1);
    assert!(
        run.stdout.contains("| `web-ok` | `web-test` | failed |"),
        "{}",
        run.stdout
    );
}

/// A revision a repository does not have is one diagnostic per git repository (exit 3),
/// naming who reads from it; so is a change the head does not have.
#[test]
fn a_revision_or_change_that_is_not_there_is_refused() {
    let h = History::new();
    git(&h.ws(), &["tag", "only-in-ws"]);
    let run = h.sb.run(
        &h.ws(),
        &[
            "plan",
            "add-x",
            "--json",
            "--base",
            "only-in-ws",
            "--base",
            "api=only-in-ws",
        ],
    );
    run.expect_code(3);
    let doc = run.json();
    assert_codes!(run.status_codes(), ["unknown_revision"], "{doc:#}");
    let message = doc["status"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("repository `api`") && !message.contains("web"),
        "{message}"
    );
    assert_eq!(
        doc["providers"],
        serde_json::json!([]),
        "the null shape: {doc:#}"
    );

    git(&h.ws(), &["checkout", "-q", "-b", "empty"]);
    git(&h.ws(), &["rm", "-rq", "openspec/changes/add-x"]);
    h.step("no change", "gone");
    h.checkout("main");
    let run = h.sb.run(
        &h.ws(),
        &[
            "plan", "add-x", "--json", "--base", "main", "--base", "api=main", "--head", "gone",
            "--head", "api=gone",
        ],
    );
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["unknown_change"], "{}", run.stdout);
}

/// Preflight's check for a path that leaves its repository through a link reads the head:
/// a link a branch adds is refused in its plan as `prove` refuses it in a checkout of the
/// branch, and a link only the working tree has does not stop the plan of a head without it.
#[test]
fn a_link_out_of_the_repository_is_judged_at_the_head() {
    let h = History::new();
    h.branch("escape");
    std::os::unix::fs::symlink("../../../outside", h.ws().join("web/src/vendor")).expect("symlink");
    fs_err::create_dir_all(h.sb.work().join("outside")).expect("mkdir");
    let execution = h.ws().join("openspec/changes/add-x/execution.yaml");
    fs_err::write(
        &execution,
        EXECUTION.replace(
            "inputs: [src/**]\n    command: [sh, -c, \"exit 0\"]",
            "inputs: [src/vendor/**]\n    command: [sh, -c, \"exit 0\"]",
        ),
    )
    .expect("rewire");
    h.step("vendor through a link", "bad");
    // `prove` refuses the checkout of the branch.
    let run = h.sb.run(&h.ws(), &["prove", "add-x", "--json"]);
    run.expect_code(3);
    assert_emits!(
        run.status_codes(),
        "path_outside_repository",
        "{}",
        run.stdout
    );

    // On `main` (no link in the working tree), the plan of the branch is refused the same.
    h.checkout("main");
    assert!(!h.ws().join("web/src/vendor").exists());
    let doc = h.plan(&["--base", "main", "--head", "bad"], 3);
    assert_emits!(doc, "path_outside_repository", "{doc:#}");

    // The other way: in the working tree `src` is a link out of the repository, where
    // `main` has a directory; the plan of `main` reads `main`.
    fs_err::rename(h.ws().join("web/src"), h.sb.work().join("moved-src")).expect("move");
    std::os::unix::fs::symlink("../../outside", h.ws().join("web/src")).expect("symlink");
    let run = h.sb.run(&h.ws(), &["prove", "add-x", "--json"]);
    run.expect_code(3);
    assert_emits!(
        run.status_codes(),
        "path_outside_repository",
        "{}",
        run.stdout
    );
    let doc = h.plan(&["--base", "s0", "--head", "main"], 2);
    assert_eq!(doc["summary"]["changed_paths"], 0, "{doc:#}");
}
