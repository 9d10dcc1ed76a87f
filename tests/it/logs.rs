//! A job's log is streamed to disk and kept bounded: a log longer than `logs.keepBytes`
//! of `proofgraph.yaml` is kept as its first and last halves around a line that says what
//! was left out, with the whole log's size and SHA-256 in the receipt (docs/execution.md).
//! Memory is measured by `bench/log-memory.sh`, never here.

use serde_json::Value;
use sha2::Digest as _;

use crate::support::{Sandbox, assert_emits, cas, git_commit_all, provider, statement};

/// A change whose provider `test` prints `lines` numbered lines and fails (so that `prove`
/// shows the end of its log), with `keep` as `logs.keepBytes` when given.
fn workspace(sb: &Sandbox, keep: Option<&str>, lines: u64) {
    sb.openspec_root("");
    if let Some(keep) = keep {
        sb.write(
            "proofgraph.yaml",
            format!("version: 1\nlogs:\n  keepBytes: {keep}\n"),
        );
    }
    sb.write("openspec/changes/x/proposal.md", "# X\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [integration]}\n",
    );
    sb.write(
        "print.py",
        format!("import sys\nfor i in range({lines}):\n    print('line %d' % i)\nsys.exit(1)\n"),
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: integration\n    command: [python3, print.py]\n",
    );
    git_commit_all(&sb.work());
}

/// What `print.py` writes for `lines`.
fn printed(lines: u64) -> Vec<u8> {
    (0..lines)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect()
}

/// The command log artifact of `test`'s receipt.
fn log_artifact(sb: &Sandbox, prove: &Value) -> Value {
    let sha = provider(prove, "test")["receipts"][0]["sha256"]
        .as_str()
        .expect("a receipt")
        .to_owned();
    statement(sb, &sha)["predicate"]["proofgraph"]["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .find(|a| a["kind"] == "command-log")
        .expect("a command log")
        .clone()
}

#[test]
fn a_long_log_keeps_its_head_and_tail_with_the_whole_size_and_digest() {
    let sb = Sandbox::new();
    let lines = 200_000;
    workspace(&sb, Some("4096"), lines);
    let run = sb.run(&sb.work(), &["prove", "x", "--json"]);
    run.expect_code(1);
    let doc = run.json();
    let whole = printed(lines);
    let artifact = log_artifact(&sb, &doc);
    assert_eq!(artifact["whole"]["size"], whole.len() as u64, "{artifact}");
    assert_eq!(
        artifact["whole"]["sha256"],
        hex(&sha2::Sha256::digest(&whole)),
        "{artifact}"
    );
    let kept = cas(&sb, artifact["sha256"].as_str().expect("sha256"));
    assert_eq!(artifact["size"], kept.len() as u64);
    assert!(kept.len() <= 4096 + 200, "{} bytes kept", kept.len());
    // Whole lines from the start and to the end, around the notice.
    let text = String::from_utf8(kept).expect("text");
    assert!(text.starts_with("line 0\nline 1\n"), "{text}");
    assert!(text.ends_with("line 199998\nline 199999\n"), "{text}");
    let notice = format!(
        "bytes of this log are not kept; the whole log had {} bytes, SHA-256 {}]",
        whole.len(),
        hex(&sha2::Sha256::digest(&whole))
    );
    assert!(text.contains(&notice), "{text}");
    // `prove` shows its end; `log` prints what is kept.
    let tail = provider(&doc, "test")["log_tail"].clone();
    assert_eq!(
        tail.as_array().and_then(|t| t.last()),
        Some(&Value::from("line 199999"))
    );
    let log = sb.run(&sb.work(), &["log", "x", "test"]);
    log.expect_code(0);
    assert_eq!(log.stdout, text);
    let json = sb.run(&sb.work(), &["log", "x", "test", "--json"]).json();
    assert_eq!(json["whole"], artifact["whole"], "{json:#}");
    assert_eq!(json["bytes"], artifact["size"], "{json:#}");
}

#[test]
fn a_log_within_the_bound_is_kept_whole_without_a_whole() {
    let sb = Sandbox::new();
    // The default bound (4 MiB) holds it.
    workspace(&sb, None, 1000);
    let run = sb.run(&sb.work(), &["prove", "x", "--json"]);
    run.expect_code(1);
    let artifact = log_artifact(&sb, &run.json());
    assert!(artifact.get("whole").is_none(), "{artifact}");
    let kept = cas(&sb, artifact["sha256"].as_str().expect("sha256"));
    assert_eq!(kept, printed(1000));
    let json = sb.run(&sb.work(), &["log", "x", "test", "--json"]).json();
    assert!(json.get("whole").is_none(), "{json:#}");
}

#[test]
fn a_keep_bytes_out_of_bounds_or_not_a_number_is_invalid() {
    for (keep, code) in [
        ("10", "invalid_value"),
        ("1073741824", "invalid_value"),
        ("[1]", "wrong_type"),
    ] {
        let sb = Sandbox::new();
        workspace(&sb, Some(keep), 1);
        let run = sb.run(&sb.work(), &["validate", "x", "--json"]);
        let doc = run.json();
        let mut codes: Vec<String> = crate::support::issue_codes(&doc);
        codes.extend(run.status_codes());
        assert_emits!(codes, code, "{keep}: {doc:#}");
        assert!(
            doc.to_string().contains("keepBytes"),
            "{keep}: the finding names the key: {doc:#}"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
