//! `rerun <receipt>`: the proof a receipt records re-executed from exactly the inputs it
//! bound — after the working tree moved on (edits, commits, another branch) — in fresh
//! runs: a deterministic provider reproduces, a test that flips between runs is named
//! flaky, and a receipt that is tampered with, untrusted, wired otherwise now, or whose
//! recorded inputs are gone and held by no commit is refused (exit 3). Nothing is written
//! unless `--record`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Sandbox, assert_codes, git, input_refs};

/// A workspace whose `test` provider passes iff `src/value.txt` says `v1`, and writes a
/// TAP report with a stable test and (with `coin`) one that fails when its run id ends in
/// an odd hex digit — a test that fails one run in two.
fn workspace(sb: &Sandbox, coin: bool) -> PathBuf {
    sb.openspec_root("");
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: ok, scenario: s, capabilities: [test]}\n",
    );
    let coin_test = if coin {
        "case $PROOFGRAPH_RUN_ID in *[13579bdf]) echo 'not ok 2 - coin';; *) echo 'ok 2 - coin';; esac\n"
    } else {
        "echo 'ok 2 - steady'\n"
    };
    sb.write(
        "check.sh",
        format!(
            "{{\necho 'TAP version 13'\necho '1..2'\nif grep -q v1 src/value.txt; then echo 'ok 1 - value'; else echo 'not ok 1 - value'; fi\n{coin_test}}} > report.tap\n"
        ),
    );
    sb.write(".gitignore", ".proofgraph/\nreport.tap\n");
    sb.write("src/value.txt", "v1\n");
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    command: [sh, check.sh]\n    report: report.tap\n    reportFormat: tap\n    inputs: [src/**, check.sh]\n",
    );
    let dir = sb.work();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "start"]);
    dir
}

/// Proves and returns the SHA-256 of the `test` receipt of provider `test`.
fn prove(sb: &Sandbox, dir: &Path) -> (i32, String) {
    let run = sb.run(dir, &["prove", "x", "--json", "--no-cache"]);
    let doc = run.json();
    let sha = doc["providers"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["provider"] == "test"))
        .and_then(|p| p["receipts"].as_array())
        .and_then(|r| r.iter().find(|r| r["capability"] == "test"))
        .and_then(|r| r["sha256"].as_str())
        .unwrap_or_else(|| panic!("a test receipt: {doc:#}"))
        .to_owned();
    (run.code.unwrap_or(-1), sha)
}

fn rerun(sb: &Sandbox, dir: &Path, args: &[&str], code: i32) -> Value {
    let mut all = vec!["rerun", "--json"];
    all.extend_from_slice(args);
    let run = sb.run(dir, &all);
    run.expect_code(code);
    run.json()
}

fn store_entries(dir: &Path) -> usize {
    crate::remote_http::files(&dir.join(".proofgraph/cas")).len()
        + crate::remote_http::files(&dir.join(".proofgraph/ac")).len()
}

#[test]
fn a_receipt_reproduces_after_the_working_tree_moved_on() {
    let sb = Sandbox::new();
    let dir = workspace(&sb, false);
    let (code, sha) = prove(&sb, &dir);
    assert_eq!(code, 0);
    // The working tree moves on: an edit that would fail the check, a commit, a branch.
    fs_err::write(dir.join("src/value.txt"), "v2\n").expect("edit");
    git(&dir, &["commit", "-qam", "v2"]);
    git(&dir, &["checkout", "-q", "-b", "elsewhere"]);
    fs_err::write(dir.join("src/other.txt"), "new\n").expect("new file");
    fs_err::remove_file(dir.join("check.sh")).expect("delete the script");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "elsewhere"]);
    // Today's tree fails (and has no check.sh); the recorded one passes.
    let before = store_entries(&dir);
    let git_before = git_state(&dir);
    let doc = rerun(&sb, &dir, &[&sha, "--times", "2"], 0);
    assert_eq!(doc["verdict"], "reproduced", "{doc:#}");
    assert_eq!(doc["runs"].as_array().map(Vec::len), Some(2), "{doc:#}");
    for run in doc["runs"].as_array().expect("runs") {
        assert_eq!(run["outcome"], "pass", "{doc:#}");
        assert_eq!(
            run["passed"],
            serde_json::json!(["steady", "value"]),
            "{doc:#}"
        );
        assert_ne!(run["run_id"], doc["recorded"]["run_id"], "a fresh run");
    }
    assert_eq!(
        doc["recorded"]["counts"], doc["runs"][0]["counts"],
        "{doc:#}"
    );
    assert_eq!(doc["flaky"], serde_json::json!([]), "{doc:#}");
    assert_eq!(store_entries(&dir), before, "no receipt without --record");

    // Nothing was written into git either: the runs name the recorded trees.
    assert_eq!(
        git_state(&dir),
        git_before,
        "a rerun writes no git object or ref"
    );

    // --record keeps the runs' receipts, naming the trees the original recorded.
    let doc = rerun(&sb, &dir, &[&sha, "--record"], 0);
    assert_eq!(doc["verdict"], "reproduced", "{doc:#}");
    assert!(store_entries(&dir) > before, "--record writes receipts");
    let status = sb.run(&dir, &["status", "x", "--json"]).json();
    let current = crate::support::requirement(&status, "ok", "test")["evidence"][0]["sha256"]
        .as_str()
        .expect("a current receipt")
        .to_owned();
    assert_ne!(current, sha, "the rerun's receipt is the current one now");
    let trees =
        |sha: &str| crate::support::statement(&sb, sha)["predicate"]["proofgraph"]["trees"].clone();
    assert!(trees(&sha)["root"].is_string(), "{}", trees(&sha));
    assert_eq!(trees(&current), trees(&sha));
    assert_eq!(git_state(&dir), git_before);
}

/// Every object and ref of the repository at `dir`.
fn git_state(dir: &Path) -> (String, String) {
    (
        git(dir, &["cat-file", "--batch-all-objects", "--batch-check"]),
        git(dir, &["for-each-ref"]),
    )
}

#[test]
fn a_test_that_flips_between_runs_is_named_flaky() {
    let sb = Sandbox::new();
    let dir = workspace(&sb, true);
    let (_, sha) = prove(&sb, &dir);
    // Each run's id decides the coin: over up to 5 × 8 reruns both sides are seen (all
    // alike has a chance of 2^-35); reruns that happen to agree are not flaky (a rerun
    // that differs from the receipt alone is a difference, not flakiness).
    let mut seen = None;
    for _ in 0..5 {
        let run = sb.run(&dir, &["rerun", "--json", &sha, "--times", "8"]);
        let doc = run.json();
        let coins: std::collections::BTreeSet<bool> = doc["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| {
                r["passed"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|t| t == "coin"))
            })
            .collect();
        if coins.len() == 2 {
            seen = Some((run.code, doc));
            break;
        }
        assert_eq!(doc["flaky"], serde_json::json!([]), "{doc:#}");
    }
    let (code, doc) = seen.expect("the coin showed both sides");
    assert_eq!(code, Some(1), "{doc:#}");
    assert_eq!(doc["verdict"], "differs", "{doc:#}");
    assert_eq!(doc["flaky"], serde_json::json!(["coin"]), "{doc:#}");
    assert!(
        doc["differences"].as_array().is_some_and(|d| d
            .iter()
            .any(|x| x.as_str().is_some_and(|s| s.contains("`coin` flipped")))),
        "{doc:#}"
    );
}

#[test]
fn what_cannot_be_rerun_exactly_is_refused() {
    let sb = Sandbox::new();
    let dir = workspace(&sb, false);
    let (_, sha) = prove(&sb, &dir);
    let stored = dir.join(".proofgraph/cas").join(&sha[..2]).join(&sha[2..]);
    let bytes = fs_err::read(&stored).expect("the receipt");

    // A byte of the signed payload changed.
    let mut envelope: Value = serde_json::from_slice(&bytes).expect("json");
    let payload = envelope["payload"].as_str().expect("payload").to_owned();
    let mut body = proofgraph::attest::b64::decode(&payload).expect("b64");
    let text = String::from_utf8(body.clone()).expect("utf-8");
    let at = text.find("\"pass\"").expect("a pass in the statement");
    body[at + 1] = b'f';
    envelope["payload"] = Value::from(proofgraph::attest::b64::encode(&body));
    let tampered = sb.write("tampered.json", envelope.to_string());
    let run = sb.run(
        &dir,
        &["rerun", "--json", tampered.to_str().expect("utf-8")],
    );
    run.expect_code(3);
    assert_codes!(run.status_codes(), ["receipt_untrusted"], "{}", run.stdout);

    // The wiring changed since: named, refused.
    let execution = dir.join("openspec/changes/x/execution.yaml");
    let wired = fs_err::read_to_string(&execution).expect("read");
    fs_err::write(
        &execution,
        wired.replace("[sh, check.sh]", "[bash, check.sh]"),
    )
    .expect("rewire");
    let run = sb.run(&dir, &["rerun", "--json", &sha]);
    run.expect_code(3);
    assert_codes!(
        run.status_codes(),
        ["inputs_not_rebuildable"],
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("argv"), "{}", run.stdout);
    fs_err::write(&execution, wired).expect("wire back");

    // The recorded tree is gone (its ref deleted, git's gc run), as in a clone: it is
    // rebuilt from the commit the receipt names, checked by its id, and kept again.
    drop_input_trees(&dir);
    let doc = rerun(&sb, &dir, &[&sha], 0);
    assert_eq!(doc["verdict"], "reproduced", "{doc:#}");
    assert_eq!(input_refs(&dir).len(), 1, "the rebuilt tree is kept");

    // A run that bound an uncommitted edit, whose tree is gone: no commit holds what it
    // bound, and the file is named.
    fs_err::write(dir.join("src/value.txt"), "v1\nedited, never committed\n").expect("edit");
    let (_, dirty) = prove(&sb, &dir);
    git(&dir, &["checkout", "--", "src/value.txt"]);
    drop_input_trees(&dir);
    let run = sb.run(&dir, &["rerun", "--json", &dirty]);
    run.expect_code(3);
    assert_codes!(
        run.status_codes(),
        ["inputs_not_rebuildable"],
        "{}",
        run.stdout
    );
    let head = git(&dir, &["rev-parse", "HEAD"]);
    assert!(
        run.stdout.contains(&format!(
            "`src/value.txt` in {} is not the version the run bound",
            head.trim()
        )),
        "{}",
        run.stdout
    );
}

/// A receipt the workspace's own key signed whose recorded tree or commit is not a git
/// object id (or names no repository a catalog could hold) is not a receipt: `rerun` and
/// `receipt verify` refuse it as such, and nothing is rerun.
#[test]
fn a_receipt_whose_recorded_ids_break_their_grammar_is_not_a_receipt() {
    let sb = Sandbox::new();
    let dir = workspace(&sb, false);
    let (_, sha) = prove(&sb, &dir);
    let stored = dir.join(".proofgraph/cas").join(&sha[..2]).join(&sha[2..]);
    let envelope: Value =
        serde_json::from_slice(&fs_err::read(&stored).expect("the receipt")).expect("json");
    let body = proofgraph::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
        .expect("base64");
    let statement: Value = serde_json::from_slice(&body).expect("a statement");
    let proof = &statement["predicate"]["proofgraph"];
    let tree = proof["trees"]["root"].as_str().expect("a recorded tree");
    assert!(proof["commits"]["root"].is_string(), "{proof:#}");
    let key =
        proofgraph::attest::keys::read_signing_key(&dir.join(".proofgraph/keys/workspace.key"))
            .expect("the workspace's key");
    let keyid = proofgraph::attest::keys::key_id(&key.verifying_key());
    let forged = [
        ("trees", serde_json::json!({"root": tree.to_uppercase()})),
        ("trees", serde_json::json!({"root": &tree[..39]})),
        ("trees", serde_json::json!({"Not A Repo": tree})),
        ("commits", serde_json::json!({"root": "HEAD"})),
    ];
    for (i, (field, bad)) in forged.into_iter().enumerate() {
        let mut statement = statement.clone();
        statement["predicate"]["proofgraph"][field] = bad.clone();
        let signed = proofgraph::attest::envelope::sign(
            proofgraph::attest::IN_TOTO_PAYLOAD_TYPE,
            &serde_json::to_vec(&statement).expect("serialize"),
            &key,
            Some(&keyid),
        );
        let file = sb.write(&format!("forged-{i}.json"), signed.to_json());
        let file = file.to_str().expect("utf-8");
        for args in [
            &["rerun", "--json", file][..],
            &["receipt", "verify", file, "--json"],
        ] {
            let run = sb.run(&dir, args);
            assert_ne!(run.code, Some(0), "{field} {bad}: {}", run.stdout);
            assert_codes!(
                run.status_codes(),
                ["statement_invalid"],
                "{field} {bad}: {}",
                run.stdout
            );
        }
    }
}

/// Deletes every recorded tree: its ref, then git's gc drops what nothing reaches.
fn drop_input_trees(dir: &Path) {
    for name in input_refs(dir) {
        git(dir, &["update-ref", "-d", &name]);
    }
    git(dir, &["reflog", "expire", "--expire=now", "--all"]);
    git(dir, &["gc", "--quiet", "--prune=now"]);
    assert!(input_refs(dir).is_empty());
}

/// A provider that needs a service: the service's repository is recorded whole (its digest
/// is in the provider's fingerprint), so a rerun starts the service as it was — here after
/// the working tree's server was broken — while the provider's own inputs stay narrow.
#[test]
fn a_provider_with_a_service_reruns_against_the_recorded_service() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    let port = crate::support::free_port();
    sb.write("openspec/changes/x/proposal.md", "# x\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: serves, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "server.py",
        "import http.server, sys\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        body = b'answer-42'\n        self.send_response(200)\n        self.send_header('content-length', str(len(body)))\n        self.end_headers()\n        self.wfile.write(body)\n    def log_message(self, *a):\n        pass\nhttp.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n",
    );
    sb.write(
        "probe.py",
        format!("import urllib.request\nassert urllib.request.urlopen('http://127.0.0.1:{port}/x').read() == b'answer-42'\n"),
    );
    sb.write(".gitignore", ".proofgraph/\n");
    sb.write(
        "openspec/changes/x/execution.yaml",
        format!(
            "version: 1\nproviders:\n  itest:\n    adapter: command\n    capability: integration\n    command: [python3, probe.py]\n    inputs: [probe.py]\n    service: api\nservices:\n  api:\n    command: [python3, server.py, \"{port}\"]\n    readiness:\n      url: http://127.0.0.1:{port}/health\n      expectBody: answer-42\n"
        ),
    );
    let dir = sb.work();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "start"]);
    let run = sb.run(&dir, &["prove", "x", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    let sha = doc["providers"][0]["receipts"][0]["sha256"]
        .as_str()
        .unwrap_or_else(|| panic!("a receipt: {doc:#}"))
        .to_owned();
    // The server in the working tree now answers something else.
    let server = fs_err::read_to_string(dir.join("server.py")).expect("read");
    fs_err::write(
        dir.join("server.py"),
        server.replace("answer-42", "answer-43"),
    )
    .expect("break");
    git(&dir, &["commit", "-qam", "another answer"]);
    let doc = rerun(&sb, &dir, &[&sha], 0);
    assert_eq!(doc["verdict"], "reproduced", "{doc:#}");
    assert_eq!(doc["runs"][0]["outcome"], "pass", "{doc:#}");
}
