//! The command-line contract: what `prove`, `plan` (and `plan --base`), `status` (and its CI
//! reports, `--format markdown|junit`), `explain`, `hash`, `doctor`, `validate`, `log`,
//! `receipt verify`, `rerun`, `key`, `cache`, `graph`, `evidence` and `schema` print — the
//! `--json` document and the human output, stdout and stderr and the exit code — pinned by
//! snapshots in `tests/it/snapshots/` (`it__snapshots__*.snap`; `evidence verify-ci`'s are
//! in `verify_ci.rs`, every command's help in `docs.rs`).
//!
//! They run on the bundled example (`examples/profile`, its tracked files
//! copied into a fresh git repository) as it is, after an edit that makes a
//! provider fail, and with an `execution.yaml` that cannot be used, so that
//! error output is pinned as well as success. A second `prove` that reuses
//! everything is pinned too. What differs between machines and runs (paths,
//! digests, run ids, timestamps, durations) is replaced by the one filter set
//! of [`snapshot_settings`]; everything else is byte for byte what a user
//! sees. `prove` and `plan` run with `--jobs 1`, so the order of progress
//! lines does not depend on the machine's cores.
//!
//! A refactor that changes no behaviour changes no snapshot. To accept an
//! intended change: `INSTA_UPDATE=always cargo nextest run -E 'test(snap)'`,
//! then read every changed `.snap` before committing it.

use std::path::PathBuf;

use crate::support::{Run, Sandbox, git, git_commit_all, repo_root, snapshot_settings, transcript};

/// The example change every test proves (`add-profile-page` needs Node and a
/// browser; this one only the Rust toolchain, git and a shell).
const CHANGE: &str = "add-profile-endpoint";

/// The bundled example in a sandbox.
struct Example {
    sb: Sandbox,
    /// `PATH` for its runs: the sandbox's `bin/` first.
    path: String,
}

impl Example {
    /// Copies the example's tracked files into the sandbox's `work/` and
    /// commits them. Its providers run `cargo`; under the sandbox's `HOME`
    /// rustup's proxy finds no toolchain, so `bin/` holds links to the
    /// toolchain's own `cargo` and `rustc` (a path inside the sandbox, the
    /// same on every machine).
    fn new() -> Self {
        let sb = Sandbox::new();
        let root = repo_root();
        let listed = git(&root, &["ls-files", "-z", "examples/profile"]);
        for rel in listed.split('\0').filter(|r| !r.is_empty()) {
            let to = sb.work().join(
                rel.strip_prefix("examples/profile/")
                    .expect("a path under examples/profile"),
            );
            fs_err::create_dir_all(to.parent().expect("a parent")).expect("create directory");
            fs_err::copy(root.join(rel), &to).expect("copy an example file");
        }
        git_commit_all(&sb.work());
        let bin = sb.path().join("bin");
        fs_err::create_dir_all(&bin).expect("create bin/");
        // A job's world holds it only when named (as a CI job names its toolchain).
        sb.name_host_path(&bin);
        // The toolchain this test suite was built with (rustup's proxy, asked in the
        // test's own environment, resolves it).
        let sysroot = std::process::Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .expect("rustc is on PATH (the Rust toolchain runs this suite)");
        let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
        for tool in ["cargo", "rustc"] {
            let real = sysroot.join("bin").join(tool);
            assert!(
                real.exists(),
                "the example's providers need the Rust toolchain's `{tool}` at {}",
                real.display()
            );
            std::os::unix::fs::symlink(&real, bin.join(tool)).expect("link a toolchain binary");
        }
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Self { sb, path }
    }

    /// Runs proofgraph on the example.
    fn run(&self, args: &[&str]) -> Run {
        Run::of(
            self.sb
                .proofgraph(&self.sb.work())
                .args(args)
                .env("PATH", &self.path),
        )
    }

    /// Runs proofgraph and pins its transcript as snapshot `name`.
    fn snap(&self, name: &str, args: &[&str]) -> Run {
        self.snap_filtered(name, args, &[])
    }

    /// [`Example::snap`], with `filters` (regex, replacement) for what varies between runs
    /// of this command beyond what every snapshot redacts.
    fn snap_filtered(&self, name: &str, args: &[&str], filters: &[(&str, &str)]) -> Run {
        let run = self.run(args);
        let text = canonical_progress(&transcript(args, &run));
        let mut settings = snapshot_settings(&self.sb);
        for (regex, replacement) in filters {
            settings.add_filter(regex, *replacement);
        }
        settings.set_omit_expression(true);
        settings.bind(|| insta::assert_snapshot!(name, text));
        run
    }

    /// Writes the example's file `rel` and commits.
    fn write(&self, rel: &str, text: &str) {
        self.sb.write(rel, text);
        git_commit_all(&self.sb.work());
    }

    /// Replaces `from` with `to` in the example's file `rel` and commits.
    fn edit(&self, rel: &str, from: &str, to: &str) {
        let path = self.sb.work().join(rel);
        let text = fs_err::read_to_string(&path).expect("read an example file");
        assert!(text.contains(from), "{rel} holds {from:?}");
        fs_err::write(&path, text.replacen(from, to, 1)).expect("write an example file");
        git_commit_all(&self.sb.work());
    }
}

/// `prove`'s progress in one order whatever the timing: a verdict line (`passed  x (…)`,
/// `failed  x …`) moves up past the `run`/`start` lines of others printed while `x` ran,
/// never past its own `run` line or another verdict. Which of a provider finishing and a
/// service becoming ready comes first is a race (`--jobs 1` still holds one job waiting);
/// everything else of the order is what the snapshot pins.
fn canonical_progress(text: &str) -> String {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let verdict = |l: &str| {
        ["  passed  ", "  failed  ", "  error   ", "  inconclusive "]
            .iter()
            .any(|p| l.starts_with(p))
    };
    let starts = |l: &str| l.starts_with("  run     ") || l.starts_with("  start   ");
    let subject = |l: &str| l.split_whitespace().nth(1).map(str::to_owned);
    for i in 0..lines.len() {
        if !verdict(lines[i]) {
            continue;
        }
        let who = subject(lines[i]);
        let mut at = i;
        while at > 0 && starts(lines[at - 1]) && subject(lines[at - 1]) != who {
            lines.swap(at - 1, at);
            at -= 1;
        }
    }
    lines.concat()
}

#[test]
fn progress_is_put_in_one_order_whatever_the_timing() {
    let late = "  run     test-web\n  passed  test (1 ms)\n  start   service api\n  run     integration\n  passed  test-web (2 ms)\n  passed  integration (3 ms)\n";
    let early = "  run     test-web\n  passed  test (1 ms)\n  passed  test-web (2 ms)\n  start   service api\n  run     integration\n  passed  integration (3 ms)\n";
    let canonical = "  passed  test (1 ms)\n  run     test-web\n  passed  test-web (2 ms)\n  start   service api\n  run     integration\n  passed  integration (3 ms)\n";
    assert_eq!(canonical_progress(late), canonical);
    assert_eq!(canonical_progress(early), canonical);
    // Never above its own run line.
    let own = "  run     a\n  passed  a (1 ms)\n";
    assert_eq!(canonical_progress(own), own);
}

/// The filters replace exactly what they name: a digest is replaced whole,
/// a test count, a configured timeout and a port are kept.
#[test]
fn redactions_are_precise() {
    let sb = Sandbox::new();
    let sample = format!(
        "root {work}/openspec and {home}/.config/proofgraph/pins/x.json\n\
         a temporary {tmp}/.tmpAb12_c/key.pem, the repository {repo}/fixtures/valid\n\
         receipt sha256:{d64} commit {d40} run {d16} short {d12}\n\
         \"duration_ms\": 1234, pass    test (87 ms), watch (12.5 ms), <testcase time=\"0.087\">\n\
         started 2026-05-20T16:42:31.123Z ended 2026-05-20T16:42:32+02:00\n\
         kept: 12 tests, 1234567890 bytes, timed out after 1500 ms, port 4180, pid 4242\n\
         kept: deadbeef (8 hex), {d63} (63 hex), {d12}0 (13 hex), run=${{PROOFGRAPH_RUN_ID}}\n\
         namespaces (network, PID, /tmp) via a user namespace\n",
        work = sb.work().display(),
        home = sb.home().display(),
        tmp = std::env::temp_dir().display(),
        repo = repo_root().display(),
        d64 = "0123456789abcdef".repeat(4),
        d63 = &"0123456789abcdef".repeat(4)[1..],
        d40 = "0123456789abcdef0123456789abcdef01234567",
        d16 = "89abcdef01234567",
        d12 = "0123456789ab",
    );
    snapshot_settings(&sb).bind(|| {
        insta::assert_snapshot!(sample, @r#"
        root [SANDBOX]/work/openspec and [HOME]/.config/proofgraph/pins/x.json
        a temporary [TEMP]/key.pem, the repository [REPO]/fixtures/valid
        receipt sha256:[SHA256] commit [SHA1] run [RUN_ID] short [SHORT]
        "duration_ms": [DURATION], pass    test ([DURATION]), watch ([DURATION]), <testcase time="[DURATION]">
        started [TIMESTAMP] ended [TIMESTAMP]
        kept: 12 tests, 1234567890 bytes, timed out after 1500 ms, port 4180, pid [PID]
        kept: deadbeef (8 hex), 123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef (63 hex), 0123456789ab0 (13 hex), run=${PROOFGRAPH_RUN_ID}
        namespaces (network, PID, /tmp)[USERNS]
        "#);
    });
}

/// Before anything ran: every command on a fresh checkout of the example.
#[test]
fn example_before_any_prove() {
    let ex = Example::new();
    ex.snap("example_validate", &["validate", "--all"]);
    ex.snap("example_validate_json", &["validate", "--all", "--json"]);
    ex.snap("example_plan_fresh", &["plan", CHANGE, "--jobs", "1"]);
    ex.snap(
        "example_plan_fresh_json",
        &["plan", CHANGE, "--jobs", "1", "--json"],
    );
    ex.snap("example_status_fresh", &["status", CHANGE]);
    ex.snap("example_status_fresh_json", &["status", CHANGE, "--json"]);
    ex.snap(
        "example_status_fresh_markdown",
        &["status", CHANGE, "--format", "markdown"],
    )
    .expect_code(2);
    ex.snap(
        "example_status_fresh_junit",
        &["status", CHANGE, "--format", "junit"],
    )
    .expect_code(2);
    ex.snap("example_explain_fresh", &["explain", CHANGE, "test"]);
    ex.snap(
        "example_explain_fresh_json",
        &["explain", CHANGE, "test", "--json"],
    );
    ex.snap("example_hash", &["hash", CHANGE]);
    ex.snap("example_hash_json", &["hash", CHANGE, "--json"]);
    ex.snap("example_doctor_fresh", &["doctor"]);
    ex.snap("example_doctor_fresh_json", &["doctor", "--json"]);
}

/// `prove` in human output, then a second `prove` that reuses every receipt,
/// and what the other commands say afterwards.
#[test]
fn example_prove_then_reuse() {
    let ex = Example::new();
    ex.snap("example_prove", &["prove", CHANGE, "--jobs", "1"])
        .expect_code(0);
    ex.snap("example_prove_reuse", &["prove", CHANGE, "--jobs", "1"])
        .expect_code(0);
    ex.snap("example_status", &["status", CHANGE]);
    ex.snap("example_plan", &["plan", CHANGE, "--jobs", "1"]);
    ex.snap("example_explain", &["explain", CHANGE, "test"]);
    // A discovery producer is judged by its own receipt, not its receiver's.
    ex.snap("example_explain_producer", &["explain", CHANGE, "test-web"]);
    ex.snap("example_doctor", &["doctor"]);
}

/// The same, as JSON documents.
#[test]
fn example_prove_then_reuse_json() {
    let ex = Example::new();
    ex.snap(
        "example_prove_json",
        &["prove", CHANGE, "--jobs", "1", "--json"],
    )
    .expect_code(0);
    ex.snap(
        "example_prove_reuse_json",
        &["prove", CHANGE, "--jobs", "1", "--json"],
    )
    .expect_code(0);
    ex.snap("example_status_json", &["status", CHANGE, "--json"]);
    ex.snap(
        "example_plan_json",
        &["plan", CHANGE, "--jobs", "1", "--json"],
    );
    ex.snap(
        "example_explain_json",
        &["explain", CHANGE, "test", "--json"],
    );
    ex.snap("example_doctor_json", &["doctor", "--json"]);
}

/// The other sandboxes: `copy` proves the same in a copy of the tree, `none`
/// in the working tree itself; both say which in the header and in the
/// document. The second prove reuses the copy's passes, and runs the in-place
/// ones again (a pass made in place is never reused).
#[test]
fn example_prove_in_the_other_sandboxes() {
    for mode in ["copy", "none"] {
        let ex = Example::new();
        ex.snap(
            &format!("example_prove_sandbox_{mode}"),
            &["prove", CHANGE, "--jobs", "1", "--sandbox", mode],
        )
        .expect_code(0);
        ex.snap(
            &format!("example_prove_sandbox_{mode}_reuse_json"),
            &["prove", CHANGE, "--jobs", "1", "--sandbox", mode, "--json"],
        )
        .expect_code(0);
    }
}

/// After a proven run, an edit breaks the web client's formatter: `explain`
/// names the changed file, `plan` what reruns, `prove` fails naming the
/// failing tests, `status` keeps the failure.
#[test]
fn example_with_a_failing_provider() {
    let ex = Example::new();
    ex.run(&["prove", CHANGE, "--json"]).expect_code(0);
    ex.edit(
        "web/bin/format-profile.sh",
        "printf '#%s %s\\n'",
        "printf '#%s: %s\\n'",
    );
    ex.snap("failing_explain", &["explain", CHANGE, "discovery-web"]);
    ex.snap(
        "failing_explain_json",
        &["explain", CHANGE, "discovery-web", "--json"],
    );
    ex.snap("failing_plan", &["plan", CHANGE, "--jobs", "1"]);
    ex.snap(
        "failing_plan_json",
        &["plan", CHANGE, "--jobs", "1", "--json"],
    );
    ex.snap("failing_prove", &["prove", CHANGE, "--jobs", "1"])
        .expect_code(1);
    // The whole log the failure's tail came from, and the same as a document.
    ex.snap("failing_log", &["log", CHANGE, "test-web"])
        .expect_code(0);
    ex.snap("failing_log_json", &["log", CHANGE, "test-web", "--json"])
        .expect_code(0);
    ex.snap("failing_status", &["status", CHANGE])
        .expect_code(1);
    ex.snap("failing_status_json", &["status", CHANGE, "--json"]);
    // The CI reports of the same state: the failure with the provider's reason.
    ex.snap(
        "failing_status_markdown",
        &["status", CHANGE, "--format", "markdown"],
    )
    .expect_code(1);
    ex.snap(
        "failing_status_junit",
        &["status", CHANGE, "--format", "junit"],
    )
    .expect_code(1);
    ex.snap(
        "failing_prove_again_json",
        &["prove", CHANGE, "--jobs", "1", "--json"],
    )
    .expect_code(1);
    ex.snap("failing_hash", &["hash", CHANGE]);
}

/// An `execution.yaml` with a misspelt adapter (an error) and a misspelt key
/// (a warning): every command refuses the change the same way, naming each
/// finding at its file:line:col with a fix; `doctor` still reports.
#[test]
fn example_with_an_invalid_execution_yaml() {
    let ex = Example::new();
    let file = "openspec/changes/add-profile-endpoint/execution.yaml";
    ex.edit(file, "adapter: test-discovery", "adapter: test-discovry");
    ex.edit(file, "    minimum: 3\n", "    minimun: 3\n");
    for (name, args) in [
        ("invalid_validate", &["validate", CHANGE][..]),
        ("invalid_validate_json", &["validate", CHANGE, "--json"]),
        ("invalid_prove", &["prove", CHANGE]),
        ("invalid_prove_json", &["prove", CHANGE, "--json"]),
        ("invalid_plan", &["plan", CHANGE]),
        ("invalid_plan_json", &["plan", CHANGE, "--json"]),
        ("invalid_status", &["status", CHANGE]),
        ("invalid_status_json", &["status", CHANGE, "--json"]),
        (
            "invalid_status_markdown",
            &["status", CHANGE, "--format", "markdown"],
        ),
        (
            "invalid_status_junit",
            &["status", CHANGE, "--format", "junit"],
        ),
        ("invalid_explain", &["explain", CHANGE, "test"]),
        (
            "invalid_explain_json",
            &["explain", CHANGE, "test", "--json"],
        ),
        ("invalid_hash", &["hash", CHANGE]),
        ("invalid_hash_json", &["hash", CHANGE, "--json"]),
        ("invalid_doctor", &["doctor"]),
        ("invalid_doctor_json", &["doctor", "--json"]),
    ] {
        ex.snap(name, args);
    }
}

/// The sha256 of the receipt `name` a `prove --json` document lists.
fn receipt_sha(prove: &serde_json::Value, name: &str) -> String {
    prove["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["receipts"].as_array().into_iter().flatten())
        .find(|r| r["receipt"] == name)
        .and_then(|r| r["sha256"].as_str())
        .unwrap_or_else(|| panic!("prove wrote a receipt for `{name}`"))
        .to_owned()
}

/// What reads a proven change's receipts and store: `receipt verify` and `rerun` of the web
/// client's test receipt, `key show` and `key pin`, `cache stats` and `cache gc`, and `cache
/// push`/`pull` with no remote configured.
#[test]
fn example_receipts_key_and_cache() {
    let ex = Example::new();
    let prove = ex.run(&["prove", CHANGE, "--jobs", "1", "--json"]);
    prove.expect_code(0);
    let sha = receipt_sha(&prove.json(), "test-web");
    ex.snap("example_receipt_verify", &["receipt", "verify", &sha])
        .expect_code(0);
    ex.snap(
        "example_receipt_verify_json",
        &["receipt", "verify", &sha, "--json"],
    )
    .expect_code(0);
    ex.snap("example_rerun", &["rerun", &sha]).expect_code(0);
    ex.snap("example_rerun_json", &["rerun", &sha, "--json"])
        .expect_code(0);
    let key = ex.snap("example_key_show_json", &["key", "show", "--json"]);
    ex.snap("example_key_show", &["key", "show"]);
    let id = key.json()["keyid"]
        .as_str()
        .map(str::to_owned)
        .expect("`key show --json` names the key's id");
    ex.snap("example_key_pin", &["key", "pin", &id]);
    ex.snap("example_key_pin_json", &["key", "pin", &id, "--json"]);
    // A receipt's size varies with the digits of the durations and counts it records.
    let bytes = [
        (r"\([1-9]\d* bytes\)", "([BYTES] bytes)"),
        (r#""(blob_bytes|kept_bytes)": [1-9]\d*"#, r#""$1": [BYTES]"#),
    ];
    ex.snap_filtered("example_cache_stats", &["cache", "stats"], &bytes);
    ex.snap_filtered(
        "example_cache_stats_json",
        &["cache", "stats", "--json"],
        &bytes,
    );
    ex.snap_filtered("example_cache_gc", &["cache", "gc"], &bytes);
    ex.snap_filtered("example_cache_gc_json", &["cache", "gc", "--json"], &bytes);
    ex.snap("example_cache_push", &["cache", "push", CHANGE]);
    ex.snap(
        "example_cache_pull_json",
        &["cache", "pull", CHANGE, "--json"],
    );
}

/// `plan --base`: a commit edits the web client's formatter after a proven run; the plan of
/// that diff names the changed path, the providers and claims it affects and their status at
/// the head, as text, a document and a Markdown job summary.
#[test]
fn example_plan_of_a_diff() {
    let ex = Example::new();
    ex.run(&["prove", CHANGE, "--jobs", "1", "--json"])
        .expect_code(0);
    ex.edit(
        "web/bin/format-profile.sh",
        "printf '#%s %s\\n'",
        "printf '#%s: %s\\n'",
    );
    ex.snap("example_plan_base", &["plan", CHANGE, "--base", "HEAD~1"]);
    ex.snap(
        "example_plan_base_json",
        &["plan", CHANGE, "--base", "HEAD~1", "--json"],
    );
    ex.snap(
        "example_plan_base_markdown",
        &[
            "plan", CHANGE, "--base", "HEAD~1", "--head", "HEAD", "--format", "markdown",
        ],
    );
}

/// `graph` in its three formats, `evidence detect|init|doctor` on the example's change, and
/// the JSON Schemas `schema` prints: nothing runs, nothing is written.
#[test]
fn example_graph_evidence_and_schema() {
    let ex = Example::new();
    ex.snap("example_graph_dot", &["graph", CHANGE, "--format", "dot"]);
    ex.snap(
        "example_graph_mermaid",
        &["graph", CHANGE, "--format", "mermaid"],
    );
    ex.snap("example_graph_json", &["graph", CHANGE, "--format", "json"]);
    // A new change that claims tests and has no wiring yet: what `evidence` proposes from
    // the example's manifests, as `evidence init` would write it, and what stands in the way.
    let fresh = "add-x";
    ex.write(
        &format!("openspec/changes/{fresh}/proposal.md"),
        "# Add x\n",
    );
    ex.write(
        &format!("openspec/changes/{fresh}/evidence.yaml"),
        "version: 2\nclaims:\n  - {id: works, scenario: The code works, capabilities: [test]}\n",
    );
    ex.snap("example_evidence_detect", &["evidence", "detect", fresh]);
    ex.snap(
        "example_evidence_detect_json",
        &["evidence", "detect", fresh, "--json"],
    );
    ex.snap("example_evidence_init", &["evidence", "init", fresh]);
    ex.snap(
        "example_evidence_init_json",
        &["evidence", "init", fresh, "--json"],
    );
    ex.snap("example_evidence_doctor", &["evidence", "doctor", fresh]);
    ex.snap(
        "example_evidence_doctor_json",
        &["evidence", "doctor", fresh, "--json"],
    );
    for kind in ["execution", "evidence", "catalog"] {
        ex.snap(&format!("schema_{kind}"), &["schema", kind])
            .expect_code(0);
    }
    ex.snap("schema_evidence_json", &["schema", "evidence", "--json"])
        .expect_code(0);
}
