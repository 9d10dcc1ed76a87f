//! `inputs` with `!` entries (docs/inputs.md): a provider that reads every file but the
//! documentation keeps its receipt when the README or `docs/` change — `prove` reuses it,
//! and a fresh `prove --no-cache` agrees — reruns when a file it reads changes, and never
//! sees an excluded file in its world. `plan --base` says the same of the same edits. A
//! `!` entry that removes nothing is said, and `!` written where it means nothing is
//! refused.

use serde_json::Value;

use crate::support::{
    Sandbox, assert_codes, assert_emits, git_commit_all, issue_codes, provider, receipt,
};

/// The job: passes only when `src/value` says `pass` and neither excluded file is in its
/// world (and the file it does read, `tests/check.sh`, is).
const CHECK: &str = "set -e\n\
                     grep -qx pass src/value\n\
                     if [ -e README.md ] || [ -e docs/guide.md ] || [ -d docs ]; then echo 'docs are visible'; exit 1; fi\n\
                     echo checked\n";

/// One repository (the OpenSpec root's) with a change `x` proved by `unit`, which reads
/// everything but the documentation.
fn workspace(sb: &Sandbox, inputs: &str) {
    sb.openspec_root("");
    sb.write(".gitignore", ".proofgraph/\n");
    sb.write("README.md", "# Example\n");
    sb.write("docs/guide.md", "How to use it.\n");
    sb.write("src/value", "pass\n");
    sb.write("tests/check.sh", CHECK);
    sb.write("openspec/changes/x/proposal.md", "# X\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: c, scenario: It works, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  unit:\n    adapter: command\n    capability: static-analysis\n    inputs: {inputs}\n    command: [sh, tests/check.sh]\n"
        ),
    );
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, extra: &[&str]) -> Value {
    let mut args = vec!["prove", "x", "--json"];
    args.extend_from_slice(extra);
    sb.run(&sb.work(), &args).json()
}

/// (action, outcome, receipt) of `unit` in a prove.
fn unit(doc: &Value) -> (String, String, String) {
    let r = receipt(doc, "unit", "static-analysis");
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(&provider(doc, "unit")["action"]),
        text(&r["outcome"]),
        text(&r["sha256"]),
    )
}

/// `unit`'s fingerprint now.
fn fingerprint(sb: &Sandbox) -> String {
    let doc = sb.run(&sb.work(), &["hash", "x", "unit", "--json"]).json();
    doc["bindings"][0]["fingerprint"]
        .as_str()
        .unwrap_or_else(|| panic!("a fingerprint: {doc:#}"))
        .to_owned()
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

/// An edit to an excluded file keeps the receipt (reuse, and a fresh run agrees with the
/// same fingerprint), an edit to an included one reruns, the job never sees the excluded
/// files, in every isolated sandbox mode; and `plan --base` affects what `prove` reruns.
#[test]
fn an_excluded_edit_keeps_the_receipt_and_an_included_one_reruns() {
    for mode in ["worktree", "copy"] {
        let sb = Sandbox::new();
        workspace(&sb, "[\"!docs/**\", \"!README.md\"]");
        let sandbox = ["--sandbox", mode];
        let first = prove(&sb, &sandbox);
        let (action, outcome, made) = unit(&first);
        assert_eq!(
            (action.as_str(), outcome.as_str()),
            ("ran", "pass"),
            "{mode}: the job saw no documentation: {first:#}"
        );
        let before = fingerprint(&sb);

        // The documentation edited (and committed): nothing moves.
        sb.write("README.md", "# Example\n\nMore words.\n");
        sb.write("docs/guide.md", "How to use it, again.\n");
        sb.write("docs/new.md", "A new page.\n");
        assert_eq!(fingerprint(&sb), before, "{mode}");
        let reused = prove(&sb, &sandbox);
        assert_eq!(
            unit(&reused),
            ("reused".to_owned(), "pass".to_owned(), made),
            "{mode}: {reused:#}"
        );
        let fresh = prove(&sb, &[&sandbox[..], &["--no-cache"]].concat());
        let (action, outcome, _) = unit(&fresh);
        assert_eq!(
            (action.as_str(), outcome.as_str()),
            ("ran", "pass"),
            "{mode}: a fresh run agrees: {fresh:#}"
        );
        assert_eq!(fingerprint(&sb), before, "{mode}");
        git_commit_all(&sb.work());
        let plan = sb
            .run(&sb.work(), &["plan", "x", "--json", "--base", "HEAD~1"])
            .json();
        assert_eq!(
            plan["summary"]["changed_paths"], 3,
            "{mode}: the plan sees the edits: {plan:#}"
        );
        assert!(
            affected(&plan).is_empty(),
            "{mode}: an excluded path affects nothing: {plan:#}"
        );

        // A file it reads: it runs again, and fails.
        sb.write("src/value", "fail\n");
        assert_ne!(fingerprint(&sb), before, "{mode}");
        let rerun = prove(&sb, &sandbox);
        let (action, outcome, _) = unit(&rerun);
        assert_eq!(
            (action.as_str(), outcome.as_str()),
            ("ran", "fail"),
            "{mode}: {rerun:#}"
        );
        git_commit_all(&sb.work());
        let plan = sb
            .run(&sb.work(), &["plan", "x", "--json", "--base", "HEAD~1"])
            .json();
        assert_eq!(affected(&plan), ["unit"], "{mode}: {plan:#}");
        assert!(
            plan["providers"][0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("root:src/value")),
            "{mode}: {plan:#}"
        );
    }
}

/// Without the `!` entries the same job sees the documentation (it fails), and an edit to
/// the README reruns it: the entries are what keeps it out.
#[test]
fn without_the_excludes_the_documentation_is_an_input() {
    let sb = Sandbox::new();
    workspace(&sb, "[\"**\"]");
    let doc = prove(&sb, &[]);
    assert_eq!(unit(&doc).1, "fail", "{doc:#}");
    let plan_base = "HEAD";
    sb.write("README.md", "# Example, edited\n");
    let plan = sb
        .run(&sb.work(), &["plan", "x", "--json", "--base", plan_base])
        .json();
    assert_eq!(affected(&plan), ["unit"], "{plan:#}");
    // A later `!` entry takes them out again, and a plain one after it adds one back.
    workspace(
        &sb,
        "[\"**\", \"!docs/**\", \"!README.md\", \"docs/guide.md\"]",
    );
    let doc = prove(&sb, &[]);
    let log = sb.run(&sb.work(), &["log", "x", "unit"]);
    assert_eq!(unit(&doc).1, "fail", "docs/guide.md is back: {doc:#}");
    assert!(log.stdout.contains("docs are visible"), "{}", log.stdout);
}

/// A `!` entry that removes nothing the entries before it select is said where it is
/// written, by every command that observes the inputs; `!` alone and a `!` after the
/// repository are refused.
#[test]
fn an_exclude_that_removes_nothing_is_said_and_a_misplaced_one_refused() {
    let sb = Sandbox::new();
    workspace(&sb, "[\"src/**\", \"tests/**\", \"!docs/**\"]");
    let doc = prove(&sb, &[]);
    assert_eq!(unit(&doc).1, "pass", "{doc:#}");
    assert_emits!(doc, "input_excludes_nothing", "{doc:#}");
    let finding = doc["status"]
        .as_array()
        .expect("status")
        .iter()
        .find(|d| d["code"] == "input_excludes_nothing")
        .expect("the finding");
    assert_eq!(
        finding["target"], "openspec/changes/x/execution.yaml:6:36",
        "{finding:#}"
    );
    let plan = sb.run(&sb.work(), &["plan", "x", "--json"]).json();
    assert_codes!(
        plan["status"]
            .as_array()
            .expect("status")
            .iter()
            .map(|d| d["code"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>(),
        ["input_excludes_nothing"]
    );
    // Starting from everything, an exclude of a directory that does not exist; an exclude
    // whose files a later entry adds back.
    for inputs in ["[\"!doc/**\"]", "[\"!docs/**\", \"**\"]"] {
        workspace(&sb, inputs);
        let doc = sb.run(&sb.work(), &["hash", "x", "--json"]).json();
        assert_emits!(doc, "input_excludes_nothing", "{inputs}: {doc:#}");
    }
    // Where it keeps something out, nothing is said.
    workspace(&sb, "[\"!docs/**\"]");
    let doc = sb.run(&sb.work(), &["hash", "x", "--json"]).json();
    assert_eq!(doc["status"], serde_json::json!([]), "{doc:#}");

    for (inputs, says) in [
        ("[\"!\"]", "is a `!` with no pattern"),
        ("[\"root:!docs\"]", "puts the `!` after the repository"),
    ] {
        workspace(&sb, inputs);
        let run = sb.run(&sb.work(), &["validate", "x", "--json"]);
        run.expect_code(1);
        assert_codes!(
            issue_codes(&run.json()),
            ["invalid_value"],
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains(says), "{}", run.stdout);
    }
    // A scoped exclude is checked like any input: a repository the workspace has, a path
    // inside it.
    workspace(&sb, "[\"!nope:docs/**\", \"!../secrets\"]");
    let run = sb.run(&sb.work(), &["validate", "x", "--json"]);
    run.expect_code(1);
    assert_codes!(
        issue_codes(&run.json()),
        ["unknown_repository", "path_outside_repository"],
        "{}",
        run.stdout
    );
    // `\!` is a file whose name starts with `!`.
    sb.write("!odd", "a file\n");
    workspace(&sb, "[\"src/**\", \"tests/**\", \"\\\\!odd\"]");
    let plan = sb.run(&sb.work(), &["plan", "x", "--json"]).json();
    assert_eq!(
        plan["nodes"][0]["inputs"]["files"], 3,
        "src/value, tests/check.sh and !odd: {plan:#}"
    );
}
