//! The promise under attack: *passed* means proven. Each test here tries to get a pass
//! that was not observed (or a hang, or a read of a file outside the run) from one side —
//! a report the run did not write, a link, a FIFO, a device, inputs that move while the
//! run copies them — in several sandbox modes and through shared executions.

use std::path::Path;

use serde_json::Value;

use crate::support::{
    Run, Sandbox, assert_emits, git_commit_all, provider, receipt, run_bounded, states,
};

/// A committed workspace (one repository) whose change `atk` has one claim `c` needing
/// `test` and the given providers (YAML under `providers:`). `files` are written (and
/// committed) first.
fn workspace(sb: &Sandbox, providers: &str, files: &[(&str, &str)]) {
    sb.openspec_root("");
    for (path, content) in files {
        sb.write(path, content);
    }
    sb.write("openspec/changes/atk/proposal.md", "# Attack\n");
    sb.write(
        "openspec/changes/atk/evidence.yaml",
        "version: 2\nclaims:\n  - {id: c, scenario: It works, capabilities: [test]}\n",
    );
    sb.write(
        "openspec/changes/atk/execution.yaml",
        format!("version: 1\nproviders:\n{providers}"),
    );
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, extra: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut args = vec!["prove", "atk", "--json"];
    args.extend(extra);
    run_bounded(
        sb,
        &sb.work(),
        &args,
        vars,
        std::time::Duration::from_secs(120),
    )
}

/// A passing TAP report of one test.
const PASSING_TAP: &str = "TAP version 13\n1..1\nok 1 - it works\n";

/// The outcome and reason of `name`'s `capability` receipt.
fn outcome<'a>(doc: &'a Value, name: &str, capability: &str) -> (&'a str, &'a str) {
    let r = receipt(doc, name, capability);
    (
        r["outcome"].as_str().unwrap_or(""),
        r["reason"].as_str().unwrap_or(""),
    )
}

#[track_caller]
fn assert_not_evidence(doc: &Value, name: &str, why: &str) {
    let (outcome, reason) = outcome(doc, name, "test");
    assert_ne!(outcome, "pass", "{name} passed: {doc:#}");
    assert!(reason.contains(why), "{name}: {reason:?} lacks {why:?}");
    // Whatever made the test receipt not a pass counts nothing for discovery either.
    if provider(doc, name)["receipts"]
        .as_array()
        .is_some_and(|r| r.iter().any(|r| r["capability"] == "discovery"))
    {
        assert_ne!(outcome_of(doc, name, "discovery"), "pass", "{doc:#}");
    }
}

fn outcome_of<'a>(doc: &'a Value, name: &str, capability: &str) -> &'a str {
    outcome(doc, name, capability).0
}

/// Every blob of the store's content-addressed area.
fn store_blobs(sb: &Sandbox) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let cas = sb.work().join(".proofgraph/cas");
    for dir in fs_err::read_dir(&cas).expect("cas").flatten() {
        for blob in fs_err::read_dir(dir.path()).expect("cas dir").flatten() {
            out.push(fs_err::read(blob.path()).expect("blob"));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

// Class 1: a report this run did not write, read through a shared execution.

/// Two providers run one command, which writes `a.tap` only; `b.tap` already holds a
/// passing report (how it got there depends on the sandbox mode).
fn shared_execution(sb: &Sandbox, b_tap_how: &str) {
    let mut files = vec![(
        "run.sh",
        "printf 'TAP version 13\\n1..1\\nok 1 - a\\n' > a.tap\n",
    )];
    match b_tap_how {
        "committed" => files.push(("b.tap", PASSING_TAP)),
        "ignored" => files.push((".gitignore", "b.tap\n")),
        _ => {}
    }
    workspace(
        sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, run.sh]\n    report: a.tap\n  \
         test-b:\n    adapter: test-discovery\n    capability: test\n    command: [sh, run.sh]\n    report: b.tap\n",
        &files,
    );
    if b_tap_how != "committed" {
        // Untracked (copy sees it) or ignored (only running in place sees it).
        sb.write("b.tap", PASSING_TAP);
    }
}

#[test]
fn a_committed_report_is_never_read_as_a_shared_executions() {
    let sb = Sandbox::new();
    shared_execution(&sb, "committed");
    let doc = prove(&sb, &[], &[]).json();
    assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
    assert_not_evidence(&doc, "test-b", "wrote no report at `b.tap`");
    assert_eq!(states(&doc)["c/test"], "inconclusive", "{doc:#}");
}

#[test]
fn an_untracked_report_is_never_read_in_a_copy_sandbox() {
    let sb = Sandbox::new();
    shared_execution(&sb, "untracked");
    let doc = prove(&sb, &["--sandbox", "copy"], &[]).json();
    assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
    assert_not_evidence(&doc, "test-b", "wrote no report at `b.tap`");
}

#[test]
fn a_leftover_report_is_never_read_in_place() {
    let sb = Sandbox::new();
    shared_execution(&sb, "ignored");
    let doc = prove(&sb, &["--sandbox", "none"], &[]).json();
    assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
    assert_not_evidence(&doc, "test-b", "wrote no report at `b.tap`");
    assert!(
        !sb.work().join("b.tap").exists(),
        "the leftover was removed before the shared command ran"
    );
}

/// A command that keeps an old file's time (`cp -p`, `touch -d`) did not write it now.
#[test]
fn a_report_older_than_the_command_is_not_evidence() {
    for (how, command) in [
        ("cp -p", "cp -p fixture.tap out.tap"),
        (
            "touch -d",
            "printf 'TAP version 13\\n1..1\\nok 1 - a\\n' > out.tap; touch -d '2001-01-01' out.tap",
        ),
    ] {
        let sb = Sandbox::new();
        workspace(
            &sb,
            &format!(
                "  test:\n    adapter: test-discovery\n    command: [sh, -c, \"{command}\"]\n    report: out.tap\n"
            ),
            &[("fixture.tap", PASSING_TAP)],
        );
        // The committed fixture is older than the run by more than the second of slack.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let file = fs_err::File::options()
            .write(true)
            .open(sb.work().join("fixture.tap"))
            .expect("open");
        file.set_modified(old).expect("set mtime");
        drop(file);
        for mode in ["worktree", "none"] {
            let doc = prove(&sb, &["--sandbox", mode, "--no-cache"], &[]).json();
            assert_not_evidence(&doc, "test", "before the command started");
            let (_, reason) = outcome(&doc, "test", "test");
            assert!(reason.contains("`out.tap`"), "{how} {mode}: {reason}");
        }
    }
}

// Class 3: a report that is a link out of the sandbox.

/// A directory outside the test's own tree (so that an isolated job cannot even see it),
/// holding a passing report.
fn elsewhere() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("pg-elsewhere-")
        .tempdir()
        .expect("tempdir");
    fs_err::write(dir.path().join("good.tap"), PASSING_TAP).expect("write");
    dir
}

#[test]
fn a_report_that_links_out_of_the_sandbox_is_refused() {
    let outside = elsewhere();
    let target = outside.path().join("good.tap");
    let target = target.to_str().expect("utf-8");
    for (mode, isolation) in [
        ("worktree", "auto"),
        ("copy", "auto"),
        ("none", "auto"),
        ("worktree", "none"),
    ] {
        let sb = Sandbox::new();
        workspace(
            &sb,
            "  test:\n    adapter: test-discovery\n    command: [sh, -c, 'ln -sf \"$GOOD\" out.tap']\n    report: out.tap\n    envFrom: [GOOD]\n",
            &[],
        );
        let doc = prove(
            &sb,
            &["--sandbox", mode, "--isolation", isolation],
            &[("GOOD", target)],
        )
        .json();
        assert_not_evidence(&doc, "test", "`out.tap` is a symbolic link");
    }
}

#[test]
fn a_link_to_a_system_file_is_never_copied_into_the_store() {
    let passwd = fs_err::read("/etc/passwd").expect("/etc/passwd");
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [ln, -s, /etc/passwd, out.tap]\n    report: out.tap\n  \
         keep:\n    adapter: command\n    capability: test\n    command: [ln, -s, /etc/passwd, kept.json]\n    report: kept.json\n",
        &[],
    );
    let doc = prove(&sb, &["--keep-going"], &[]).json();
    assert_not_evidence(&doc, "test", "is a symbolic link");
    for blob in store_blobs(&sb) {
        assert!(
            !contains(&blob, &passwd),
            "the store holds /etc/passwd: {doc:#}"
        );
    }
}

#[test]
fn a_report_behind_a_linked_directory_is_refused() {
    let outside = elsewhere();
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, -c, 'ln -s \"$OUTSIDE\" results']\n    report: results/good.tap\n    envFrom: [OUTSIDE]\n",
        &[],
    );
    let doc = prove(
        &sb,
        &[],
        &[("OUTSIDE", outside.path().to_str().expect("utf-8"))],
    )
    .json();
    assert_not_evidence(&doc, "test", "`results` is a symbolic link");
}

// Classes 9 and 10: a report that would hang the judge or exhaust its memory.

#[test]
fn a_fifo_as_the_report_neither_hangs_nor_passes() {
    for (mode, report) in [
        ("worktree", "out.tap"),
        ("copy", "deep/er/out.tap"),
        ("none", "out.tap"),
    ] {
        let sb = Sandbox::new();
        workspace(
            &sb,
            &format!(
                "  test:\n    adapter: test-discovery\n    command: [sh, -c, 'mkdir -p \"$(dirname {report})\" && mkfifo {report}']\n    report: {report}\n  \
                 artifact:\n    adapter: command\n    capability: test\n    command: [mkfifo, kept.json]\n    report: kept.json\n"
            ),
            &[(".gitignore", "kept.json\nout.tap\n")],
        );
        let run = prove(&sb, &["--sandbox", mode, "--keep-going"], &[]);
        let doc = run.json();
        assert_not_evidence(&doc, "test", "it is a FIFO, not a regular file");
        // A command's report is only kept: a FIFO there is not read either.
        assert_eq!(outcome_of(&doc, "artifact", "test"), "pass", "{doc:#}");
    }
}

#[test]
fn a_device_or_an_endless_report_is_refused_with_bounded_memory() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [ln, -s, /dev/zero, out.json]\n    report: out.json\n  \
         sparse:\n    adapter: test-discovery\n    capability: test\n    command: [truncate, -s, 300M, big.json]\n    report: big.json\n  \
         random:\n    adapter: test-discovery\n    capability: test\n    command: [ln, -s, /dev/urandom, rnd.json]\n    report: rnd.json\n",
        &[],
    );
    let started = std::time::Instant::now();
    let doc = prove(&sb, &["--keep-going"], &[]).json();
    assert_not_evidence(&doc, "test", "is a symbolic link");
    assert_not_evidence(&doc, "random", "is a symbolic link");
    assert_not_evidence(&doc, "sparse", "holds more than 268435456 bytes");
    // Not a timed assertion of speed: a bound far above any honest run, so a read of
    // gigabytes (or forever) fails the test instead of hanging the suite.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(100),
        "{:?}",
        started.elapsed()
    );
}

/// As root, a job can make a device node where its report goes: refused by its kind, never
/// opened.
#[test]
fn a_device_node_made_by_the_job_is_never_opened() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, -c, 'mknod out.json c 1 5 || echo no-mknod > out.json']\n    report: out.json\n",
        &[],
    );
    let doc = prove(&sb, &["--isolation", "none"], &[]).json();
    let (outcome, reason) = outcome(&doc, "test", "test");
    assert_ne!(outcome, "pass", "{doc:#}");
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    // Without the privilege to make a device, the job wrote text that is no report.
    let why = if root {
        "it is a device, not a regular file"
    } else {
        "could not be read"
    };
    assert!(reason.contains(why), "{reason}");
}

/// The store's own directory is never where a job's report is looked for.
#[test]
fn report_paths_are_relative_to_the_sandbox_whatever_the_mode() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, -c, \"printf 'TAP version 13\\\\n1..1\\\\nok 1 - a\\\\n' > sub/out.tap\"]\n    report: sub/out.tap\n",
        &[("sub/.keep", "")],
    );
    for mode in ["worktree", "copy", "none"] {
        let doc = prove(&sb, &["--sandbox", mode, "--no-cache"], &[]).json();
        assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{mode}: {doc:#}");
    }
    assert!(Path::new(&sb.work().join("sub/out.tap")).exists());
}

// Class 2: inputs that change between the snapshot that is fingerprinted and the sandbox.

/// The blob id git gives `content`, as the listing of a receipt's inputs shows it.
fn listed_identity(sb: &Sandbox, receipt_sha: &str, path: &str) -> Option<String> {
    let statement = crate::support::statement(sb, receipt_sha);
    let listing_sha = statement["predicate"]["proofgraph"]["inputs"]
        .as_str()
        .expect("an inputs listing")
        .to_owned();
    let listing =
        proofgraph::observe::listing::Listing::parse(&crate::support::cas(sb, &listing_sha))
            .expect("a listing");
    listing.get(path).map(|id| id.to_hex())
}

/// A file whose index entry still matches its stat data but not its content (same size,
/// modification time put back, `core.trustctime` off: git itself would call it clean) is
/// what the snapshot fingerprints; the sandbox copy sees the other content. That must never
/// be judged against the snapshot's fingerprint.
fn stale_index(sb: &Sandbox, mode: &str) {
    workspace(
        sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, check.sh]\n    report: out.tap\n",
        &[
            (
                "check.sh",
                "if grep -q good flag.txt; then r='ok 1 - flag'; else r='not ok 1 - flag'; fi\n\
                 printf 'TAP version 13\\n1..1\\n%s\\n' \"$r\" > out.tap\n",
            ),
            ("flag.txt", "bad!\n"),
        ],
    );
    crate::support::git(&sb.work(), &["config", "core.trustctime", "false"]);
    let path = sb.work().join("flag.txt");
    // Older than the index, so that git does not hold it racily clean.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let set_old = || {
        let file = fs_err::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(old).expect("set mtime");
    };
    set_old();
    crate::support::git(&sb.work(), &["update-index", "--refresh"]);
    // In place (same inode), same size, the old time back.
    fs_err::write(&path, "good\n").expect("write");
    set_old();
    let status = crate::support::git(&sb.work(), &["status", "--porcelain"]);
    assert_eq!(status, "", "git itself trusts the stale stat data ({mode})");
}

#[test]
fn a_sandbox_that_differs_from_the_snapshot_is_never_judged() {
    for mode in ["worktree", "copy"] {
        let sb = Sandbox::new();
        stale_index(&sb, mode);
        let run = prove(&sb, &["--sandbox", mode, "--no-cache"], &[]);
        let doc = run.json();
        assert_eq!(run.code, Some(1), "{mode}: {doc:#}");
        assert_emits!(run.status_codes(), "inputs_changed", "{mode}: {doc:#}");
        let test = provider(&doc, "test");
        assert_eq!(test["action"], "not_run", "{mode}: {doc:#}");
        assert!(
            test["reason"]
                .as_str()
                .is_some_and(|r| r.contains("inputs changed")),
            "{doc:#}"
        );
        assert!(
            doc["status"].to_string().contains("`flag.txt`"),
            "the message names the file: {doc:#}"
        );
        // The committed content put back (an ordinary edit): its run fails, and nothing
        // passed before that could be reused.
        fs_err::write(sb.work().join("flag.txt"), "bad!\n").expect("write");
        let doc = prove(&sb, &["--sandbox", mode], &[]).json();
        assert_eq!(outcome_of(&doc, "test", "test"), "fail", "{mode}: {doc:#}");
    }
}

/// Running in place nothing is copied: a provider whose bound inputs move while it runs
/// (here it edits one itself; an editor could) is an error, never a pass bound to the
/// content it no longer has.
#[test]
fn inputs_that_move_while_a_provider_runs_in_place_are_an_error() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, -c, \"echo more >> src.txt; printf 'TAP version 13\\\\n1..1\\\\nok 1 - a\\\\n' > out.tap\"]\n    report: out.tap\n  \
         lint:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, 'rm gone.txt']\n",
        &[("src.txt", "one\n"), ("gone.txt", "x\n")],
    );
    let doc = prove(&sb, &["--sandbox", "none", "--keep-going"], &[]).json();
    let (outcome, reason) = outcome(&doc, "test", "test");
    assert_eq!(outcome, "error", "{doc:#}");
    assert!(reason.contains("`root:src.txt`"), "{reason}");
    assert_eq!(outcome_of(&doc, "test", "discovery"), "error", "{doc:#}");
    let (outcome, reason) = self::outcome(&doc, "lint", "static-analysis");
    assert_eq!(outcome, "error", "{doc:#}");
    assert!(reason.contains("`root:gone.txt`"), "{reason}");
    // In a sandbox the same commands edit only the sandbox's copy: passes, bound to what
    // the working tree holds.
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, -c, \"echo more >> src.txt; printf 'TAP version 13\\\\n1..1\\\\nok 1 - a\\\\n' > out.tap\"]\n    report: out.tap\n",
        &[("src.txt", "one\n")],
    );
    let doc = prove(&sb, &[], &[]).json();
    assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
    assert_eq!(
        fs_err::read_to_string(sb.work().join("src.txt")).expect("read"),
        "one\n"
    );
}

/// An editor flips a tracked file between a passing and a failing version while `prove`
/// runs again and again: every pass it records binds the passing version, and with the
/// failing version left in place, no pass is reused.
#[test]
fn an_editor_flipping_an_input_never_gets_a_pass_bound_to_the_failing_version() {
    let sb = Sandbox::new();
    let mut files: Vec<(String, String)> = (0..1000)
        .map(|i| {
            (
                format!("pad/{:02}/f{i}.txt", i % 50),
                format!("padding {i}\n"),
            )
        })
        .collect();
    files.push((
        "check.sh".to_owned(),
        "sleep 0.05; if grep -q good flag.txt; then r='ok 1 - flag'; else r='not ok 1 - flag'; fi\n\
         printf 'TAP version 13\\n1..1\\n%s\\n' \"$r\" > out.tap\n"
            .to_owned(),
    ));
    files.push(("flag.txt".to_owned(), "good\n".to_owned()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, check.sh]\n    report: out.tap\n",
        &refs,
    );
    let good_id = blob_id(b"good\n");
    let bad_id = blob_id(b"bad!\n");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let editor = {
        let stop = std::sync::Arc::clone(&stop);
        let path = sb.work().join("flag.txt");
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let content: &[u8] = if flips.is_multiple_of(2) {
                    b"bad!\n"
                } else {
                    b"good\n"
                };
                // As editors save: a new file renamed into place.
                let tmp = path.with_extension("swp");
                fs_err::write(&tmp, content).expect("write");
                fs_err::rename(&tmp, &path).expect("rename");
                flips += 1;
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            fs_err::write(&path, b"bad!\n").expect("leave it failing");
            flips
        })
    };
    let mut passes = 0;
    let mut changed = 0;
    for _ in 0..5 {
        for mode in ["worktree", "copy"] {
            let run = prove(&sb, &["--sandbox", mode, "--no-cache"], &[]);
            let doc = run.json();
            if run.status_codes().contains(&"inputs_changed".to_owned()) {
                changed += 1;
                continue;
            }
            let r = receipt(&doc, "test", "test");
            let id = listed_identity(&sb, r["sha256"].as_str().expect("sha"), "root:flag.txt")
                .expect("flag.txt is bound");
            match r["outcome"].as_str() {
                Some("pass") => {
                    passes += 1;
                    assert_eq!(id, good_id, "a pass bound to the failing version: {doc:#}");
                }
                _ => assert_eq!(
                    id, bad_id,
                    "a failure bound to the passing version: {doc:#}"
                ),
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = editor.join().expect("editor");
    assert!(flips > 10, "the editor flipped the file {flips} times");
    // The failing version is in place now: whatever passed before is not reused.
    for mode in ["worktree", "copy", "none"] {
        let doc = prove(&sb, &["--sandbox", mode], &[]).json();
        assert_eq!(
            outcome_of(&doc, "test", "test"),
            "fail",
            "{mode} ({passes} passes, {changed} retries gave up, {flips} flips): {doc:#}"
        );
    }
}

/// The identity a receipt's input listing gives `content` (hex of BLAKE3 over `git:` and
/// the git blob id), computed with git itself.
fn blob_id(content: &[u8]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    fs_err::write(dir.path().join("f"), content).expect("write");
    let out = std::process::Command::new("git")
        .args(["hash-object", "--no-filters", "f"])
        .current_dir(dir.path())
        .output()
        .expect("git hash-object");
    let hex = String::from_utf8(out.stdout).expect("utf-8");
    let oid: Vec<u8> = (0..20)
        .map(|i| u8::from_str_radix(&hex.trim()[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let mut bytes = b"git:".to_vec();
    bytes.extend_from_slice(&oid);
    blake3_hex(&bytes)
}

fn blake3_hex(bytes: &[u8]) -> String {
    proofgraph_graph::fingerprint::Digest::of(bytes).to_hex()
}

// Class 15: the program that runs is the program fingerprinted.

/// A directory of its own under the host's `/tmp` (not the test's: an isolated job sees
/// only the `/tmp` entries it names) holding executable scripts.
fn tool_dir(tools: &[(&str, &str)]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::Builder::new()
        .prefix("pg-tools-")
        .tempdir()
        .expect("tempdir");
    for (name, script) in tools {
        let path = dir.path().join(name);
        fs_err::write(&path, script).expect("write");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    dir
}

/// The executable a prove's plan records for `provider`.
fn planned_executable(sb: &Sandbox, vars: &[(&str, &str)], provider: &str) -> Value {
    let doc = crate::support::run_bounded(
        sb,
        &sb.work(),
        &["plan", "atk", "--json"],
        vars,
        std::time::Duration::from_secs(60),
    )
    .json();
    let node = doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["name"] == provider)
        .unwrap_or_else(|| panic!("no {provider} in {doc:#}"))
        .clone();
    node["executable"].clone()
}

#[test]
fn a_tool_directory_under_tmp_first_on_path_is_what_runs_and_what_is_fingerprinted() {
    let tools = tool_dir(&[(
        "env",
        "#!/bin/sh\necho \"ran the tool\" >> \"$MARK\"\nprintf 'TAP version 13\\n1..1\\nok 1 - tool\\n' > out.tap\n",
    )]);
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for isolation in ["auto", "none"] {
        let sb = Sandbox::new();
        let mark = sb.channel("mark");
        workspace(
            &sb,
            "  test:\n    adapter: test-discovery\n    command: [env]\n    report: out.tap\n    envFrom: [MARK]\n",
            &[],
        );
        // A program outside every job's world cannot start, and says what to name.
        let unnamed = prove(
            &sb,
            &["--isolation", isolation],
            &[("PATH", path.as_str()), ("MARK", mark.env())],
        );
        unnamed.expect_code(3);
        let unnamed = unnamed.json();
        let (outcome, reason) = outcome(&unnamed, "test", "test");
        assert_eq!(outcome, "error", "{isolation}");
        assert!(
            reason.contains("which no job's world holds")
                && reason.ends_with(&format!("add `{}` to `hostPaths`", tools.path().display())),
            "{isolation}: {reason}"
        );
        assert_eq!(mark.read(), "", "{isolation}: nothing ran");
        let named = sb.host_paths_with(&[tools.path()]);
        let vars = [
            ("PATH", path.as_str()),
            ("MARK", mark.env()),
            ("PROOFGRAPH_HOST_PATHS", named.as_str()),
        ];
        let doc = prove(&sb, &["--isolation", isolation], &vars).json();
        assert_eq!(
            outcome_of(&doc, "test", "test"),
            "pass",
            "{isolation}: {doc:#}"
        );
        assert_eq!(mark.read(), "ran the tool\n", "{isolation}");
        let executable = planned_executable(&sb, &vars, "test");
        assert_eq!(
            executable,
            tools.path().join("env").to_str().expect("utf-8"),
            "{isolation}: {executable:#}"
        );
    }
}

/// A provider's own `env: {PATH: …}` decides where its program is found, for the run and
/// for the fingerprint alike.
#[test]
fn the_jobs_own_path_decides_and_a_shim_is_what_runs() {
    let shims = tool_dir(&[(
        "python3",
        "#!/bin/sh\necho shim >> \"$MARK\"\nexec /usr/bin/env -i PATH=/usr/bin:/bin python3 \"$@\"\n",
    )]);
    let sb = Sandbox::new();
    let mark = sb.channel("mark");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", shims.path().display());
    workspace(
        &sb,
        &format!(
            "  test:\n    adapter: test-discovery\n    command: [python3, -c, \"open('out.tap','w').write('TAP version 13\\\\n1..1\\\\nok 1 - py\\\\n')\"]\n    report: out.tap\n    envFrom: [MARK]\n    env: {{PATH: \"{path}\"}}\n"
        ),
        &[],
    );
    let named = sb.host_paths_with(&[shims.path()]);
    let vars = [
        ("MARK", mark.env()),
        ("PROOFGRAPH_HOST_PATHS", named.as_str()),
    ];
    let doc = prove(&sb, &[], &vars).json();
    assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
    assert_eq!(mark.read(), "shim\n");
    let executable = planned_executable(&sb, &vars, "test");
    assert_eq!(
        executable,
        shims.path().join("python3").to_str().expect("utf-8"),
        "the shim, not the caller's python3: {executable:#}"
    );
}

#[test]
fn a_virtualenv_first_on_path_runs_its_own_python() {
    let venvs = tempfile::Builder::new()
        .prefix("pg-venv-")
        .tempdir()
        .expect("tempdir");
    let venv = venvs.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .expect("python3 is required by this test (apt-get install python3 python3-venv)");
    assert!(
        made.status.success(),
        "python3 -m venv failed (apt-get install python3-venv): {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let prefix = venv.to_str().expect("utf-8");
    for isolation in ["auto", "none"] {
        let sb = Sandbox::new();
        workspace(
            &sb,
            &format!(
                "  lint:\n    adapter: command\n    capability: test\n    command: [python, -c, \"import sys; sys.exit(0 if sys.prefix == '{prefix}' else 'prefix ' + sys.prefix)\"]\n"
            ),
            &[],
        );
        let named = sb.host_paths_with(&[venvs.path()]);
        let vars = [
            ("PATH", path.as_str()),
            ("PROOFGRAPH_HOST_PATHS", named.as_str()),
        ];
        let doc = prove(&sb, &["--isolation", isolation], &vars).json();
        assert_eq!(
            outcome_of(&doc, "lint", "test"),
            "pass",
            "{isolation}: {doc:#}"
        );
        let executable = planned_executable(&sb, &vars, "lint");
        assert_eq!(
            executable,
            venv.join("bin/python").to_str().expect("utf-8"),
            "{isolation}: {executable:#}"
        );
    }
}

/// What a script's interpreter is, and what a shell's `-c` script starts, is part of what
/// was proven: upgrading the interpreter `#!/usr/bin/env interp` names (as upgrading
/// Node.js under `npx`), or a tool an `sh -c` script runs, makes the receipt stale — in
/// each isolation — while the provider whose programs did not change is still reused.
#[test]
fn an_upgraded_interpreter_or_tool_of_a_shell_script_reruns_what_it_proved() {
    let interp =
        |version: &str| format!("#!/bin/sh\n# interpreter {version}\nexec /bin/sh \"$@\"\n");
    let check = |version: &str| format!("#!/bin/sh\n# check {version}\nexit 0\n");
    let tools = tool_dir(&[
        ("interp", &interp("v1")),
        (
            "tool",
            "#!/usr/bin/env interp\nprintf 'TAP version 13\\n1..1\\nok 1 - tool\\n' > out.tap\n",
        ),
        ("check", &check("v1")),
    ]);
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let rewrite = |name: &str, content: &str| {
        fs_err::write(tools.path().join(name), content).expect("rewrite the tool");
    };
    for isolation in ["auto", "none"] {
        rewrite("interp", &interp("v1"));
        rewrite("check", &check("v1"));
        let sb = Sandbox::new();
        let named = sb.host_paths_with(&[tools.path()]);
        let vars = [
            ("PATH", path.as_str()),
            ("PROOFGRAPH_HOST_PATHS", named.as_str()),
        ];
        // `script` is a file of the repository whose interpreter env finds on PATH.
        workspace(
            &sb,
            "  test:\n    adapter: test-discovery\n    command: [tool]\n    report: out.tap\n  lint:\n    adapter: command\n    capability: test\n    command: [sh, -c, \"cd . && check --strict\"]\n  script:\n    adapter: command\n    capability: test\n    command: [./run.sh]\n",
            &[("run.sh", "#!/usr/bin/env interp\nexit 0\n")],
        );
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs_err::set_permissions(
                sb.work().join("run.sh"),
                std::fs::Permissions::from_mode(0o755),
            )
            .expect("chmod");
            crate::support::git(&sb.work(), &["add", "run.sh"]);
            git_commit_all(&sb.work());
        }
        let actions = |doc: &Value| -> Vec<(String, String)> {
            ["lint", "script", "test"]
                .iter()
                .map(|p| {
                    (
                        (*p).to_owned(),
                        provider(doc, p)["action"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        };
        let expected = |lint: &str, script: &str, test: &str| {
            vec![
                ("lint".to_owned(), lint.to_owned()),
                ("script".to_owned(), script.to_owned()),
                ("test".to_owned(), test.to_owned()),
            ]
        };
        let args = ["--isolation", isolation];
        let doc = prove(&sb, &args, &vars).json();
        assert_eq!(
            outcome_of(&doc, "test", "test"),
            "pass",
            "{isolation}: {doc:#}"
        );
        assert_eq!(
            outcome_of(&doc, "lint", "test"),
            "pass",
            "{isolation}: {doc:#}"
        );
        assert_eq!(
            outcome_of(&doc, "script", "test"),
            "pass",
            "{isolation}: {doc:#}"
        );
        let doc = prove(&sb, &args, &vars).json();
        assert_eq!(
            actions(&doc),
            expected("reused", "reused", "reused"),
            "{isolation}: {doc:#}"
        );

        rewrite("interp", &interp("v2"));
        // `explain` says which component moved, naming the interpreter.
        let explain = run_bounded(
            &sb,
            &sb.work(),
            &["explain", "atk", "test", "--json"],
            &vars,
            std::time::Duration::from_secs(60),
        )
        .json();
        let changes = explain["changes"].to_string();
        assert!(
            changes.contains("executable")
                && changes.contains(&tools.path().join("interp").display().to_string()),
            "{isolation}: {explain:#}"
        );
        let doc = prove(&sb, &args, &vars).json();
        assert_eq!(
            actions(&doc),
            expected("reused", "ran", "ran"),
            "{isolation}: the interpreter env found changed: {doc:#}"
        );
        assert_eq!(
            outcome_of(&doc, "test", "test"),
            "pass",
            "{isolation}: {doc:#}"
        );

        rewrite("check", &check("v2"));
        let doc = prove(&sb, &args, &vars).json();
        assert_eq!(
            actions(&doc),
            expected("ran", "reused", "reused"),
            "{isolation}: the tool the shell script runs changed: {doc:#}"
        );
    }
}

/// The same for a service: a provider's fingerprint holds its service's wiring, and that
/// the program the service's `sh -c` script starts (itself an `#!/usr/bin/env` script) —
/// changing either moves the fingerprint; changing a program nothing names does not.
#[test]
fn what_a_services_script_starts_is_in_its_users_fingerprint() {
    let tools = tool_dir(&[
        ("interp", "#!/bin/sh\n# v1\nexec /bin/sh \"$@\"\n"),
        ("srv", "#!/usr/bin/env interp\n# v1\nsleep 30\n"),
        ("unrelated", "#!/bin/sh\n# v1\n"),
    ]);
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: command\n    service: web\n    command: [sh, -c, \"exit 0\"]\nservices:\n  web:\n    command: [sh, -c, \"PORT=4321 exec srv --quiet\"]\n    readiness: {url: \"http://127.0.0.1:4321/health\", expectBody: \"run=${PROOFGRAPH_RUN_ID}\"}\n",
        &[],
    );
    let fingerprint = || -> String {
        let run = run_bounded(
            &sb,
            &sb.work(),
            &["hash", "atk", "test", "--json"],
            &[("PATH", path.as_str())],
            std::time::Duration::from_secs(60),
        );
        let doc = run.json();
        doc["bindings"][0]["fingerprint"]
            .as_str()
            .unwrap_or_else(|| panic!("a fingerprint: {doc:#}"))
            .to_owned()
    };
    let first = fingerprint();
    fs_err::write(tools.path().join("unrelated"), "#!/bin/sh\n# v2\n").expect("rewrite");
    assert_eq!(
        fingerprint(),
        first,
        "a program nothing names changes nothing"
    );
    fs_err::write(
        tools.path().join("srv"),
        "#!/usr/bin/env interp\n# v2\nsleep 30\n",
    )
    .expect("rewrite");
    let second = fingerprint();
    assert_ne!(second, first, "the service's program changed");
    fs_err::write(
        tools.path().join("interp"),
        "#!/bin/sh\n# v2\nexec /bin/sh \"$@\"\n",
    )
    .expect("rewrite");
    let third = fingerprint();
    assert_ne!(third, second, "its interpreter changed");
}

/// A program named by a relative path is the sandbox's file, recorded relative to the
/// repository: two checkouts at different places fingerprint it alike.
#[test]
fn a_repository_program_runs_from_the_sandbox_and_is_recorded_relative() {
    let mut fingerprints = Vec::new();
    for _ in 0..2 {
        let sb = Sandbox::new();
        workspace(
            &sb,
            "  test:\n    adapter: test-discovery\n    command: [./scripts/t.sh]\n    report: out.tap\n",
            &[(
                "scripts/t.sh",
                "#!/bin/sh\nprintf 'TAP version 13\\n1..1\\nok 1 - t\\n' > out.tap\n",
            )],
        );
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::set_permissions(
            sb.work().join("scripts/t.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        crate::support::git(&sb.work(), &["add", "scripts/t.sh"]);
        crate::support::git_commit_all(&sb.work());
        let doc = prove(&sb, &[], &[]).json();
        assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
        let executable = planned_executable(&sb, &[], "test");
        assert_eq!(executable, "./scripts/t.sh", "{executable:#}");
        let hash = crate::support::run_bounded(
            &sb,
            &sb.work(),
            &["hash", "atk", "test", "--json"],
            &[],
            std::time::Duration::from_secs(60),
        )
        .json();
        fingerprints.push(
            hash.to_string()
                .replace(&sb.path().display().to_string(), ""),
        );
    }
    assert_eq!(fingerprints[0], fingerprints[1]);
}

// Class 14: a discovery receiver is proven through its producer, judged once, and every
// command agrees on the fingerprint its receipt is bound to.

/// A web suite of four TAP tests (`failing` of them failing) whose discovery receipt goes
/// to a declared receiver, as in `examples/profile`; `receiver_extra` is added to the
/// receiver's wiring.
fn receiver_workspace(sb: &Sandbox, failing: usize, receiver_extra: &str) {
    let mut tap = String::from("echo 'TAP version 13'; echo '1..4';");
    for i in 1..=4 {
        if i <= failing {
            tap.push_str(&format!(" echo 'not ok {i} - case {i}';"));
        } else {
            tap.push_str(&format!(" echo 'ok {i} - case {i}';"));
        }
    }
    workspace(
        sb,
        &format!(
            "  test-web:\n    adapter: test-discovery\n    capability: test\n    command: [sh, run.sh]\n    report: results/web.tap\n    reportFormat: tap\n    minimum: 3\n    discoveryProvider: discovery-web\n  \
             discovery-web:\n    adapter: test-discovery\n    capability: discovery\n    command: [sh, run.sh]\n    report: results/web.tap\n    reportFormat: tap\n    minimum: 3\n{receiver_extra}"
        ),
        &[(
            "run.sh",
            &format!(
                "mkdir -p results; echo run >> \"${{RUNS:-/dev/null}}\"; {{ {tap} }} > results/web.tap; exit {}\n",
                usize::from(failing > 0)
            ),
        )],
    );
}

fn status(sb: &Sandbox, vars: &[(&str, &str)]) -> Value {
    run_bounded(
        sb,
        &sb.work(),
        &["status", "atk", "--json"],
        vars,
        std::time::Duration::from_secs(60),
    )
    .json()
}

#[test]
fn a_failing_run_with_enough_tests_still_proves_discovery_and_status_agrees() {
    let sb = Sandbox::new();
    receiver_workspace(&sb, 1, "");
    let run = prove(&sb, &[], &[]);
    let doc = run.json();
    assert_eq!(run.code, Some(1), "{doc:#}");
    assert_eq!(outcome_of(&doc, "test-web", "test"), "fail", "{doc:#}");
    let receiver = provider(&doc, "discovery-web");
    assert_eq!(receiver["action"], "produced", "never blocked: {doc:#}");
    assert_eq!(
        outcome_of(&doc, "discovery-web", "discovery"),
        "pass",
        "{doc:#}"
    );
    assert_eq!(states(&doc)["c/discovery"], "passed", "{doc:#}");
    assert_eq!(states(&doc)["c/test"], "failed", "{doc:#}");
    // status, plan and explain read the same receipt, bound to the same fingerprint.
    let s = status(&sb, &[]);
    assert_eq!(states(&s)["c/discovery"], "passed", "{s:#}");
    let plan = run_bounded(
        &sb,
        &sb.work(),
        &["plan", "atk", "--json"],
        &[],
        std::time::Duration::from_secs(60),
    )
    .json();
    let node = |name: &str| {
        plan["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .find(|n| n["name"] == name)
            .cloned()
            .expect("node")
    };
    assert_eq!(node("discovery-web")["action"], "reuse", "{plan:#}");
    assert_eq!(node("test-web")["action"], "run", "{plan:#}");
    let reason = node("test-web")["reason"].as_str().unwrap_or("").to_owned();
    assert!(reason.contains("last run was fail"), "{reason}");
    let explain = run_bounded(
        &sb,
        &sb.work(),
        &["explain", "atk", "discovery-web", "--json"],
        &[],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(
        explain.code,
        Some(0),
        "{}{}",
        explain.stdout,
        explain.stderr
    );
    let explain = explain.json();
    assert!(
        explain["changes"].as_array().is_some_and(Vec::is_empty),
        "{explain:#}"
    );
    assert_eq!(
        explain["fingerprint"], explain["receipt_fingerprint"],
        "{explain:#}"
    );
}

#[test]
fn a_receiver_that_differs_from_its_producer_is_run_through_it() {
    let sb = Sandbox::new();
    let runs = sb.channel("runs");
    // Another environment, and no report collision: the receiver never runs its command.
    receiver_workspace(&sb, 0, "    envFrom: [RUNS]\n");
    let validate = run_bounded(
        &sb,
        &sb.work(),
        &["validate", "atk", "--json"],
        &[],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(validate.code, Some(0), "{}", validate.stdout);
    let vars = [("RUNS", runs.env())];
    let doc = prove(&sb, &[], &vars).json();
    assert_eq!(outcome_of(&doc, "test-web", "test"), "pass", "{doc:#}");
    assert_eq!(provider(&doc, "discovery-web")["action"], "produced");
    assert_eq!(states(&doc)["c/discovery"], "passed", "{doc:#}");
    assert_eq!(
        runs.read(),
        "",
        "the receiver's own command (with RUNS) never ran"
    );
    // The receiver's wiring is part of its fingerprint: changing its minimum reruns the
    // producer, and the floor is the stricter one.
    let path = sb.work().join("openspec/changes/atk/execution.yaml");
    let text = fs_err::read_to_string(&path).expect("read");
    let stricter = text.replacen(
        "    minimum: 3\n    envFrom",
        "    minimum: 9\n    envFrom",
        1,
    );
    assert_ne!(stricter, text);
    fs_err::write(&path, stricter).expect("write");
    let doc = prove(&sb, &[], &vars).json();
    assert_eq!(provider(&doc, "test-web")["action"], "ran", "{doc:#}");
    let (outcome, reason) = outcome(&doc, "discovery-web", "discovery");
    assert_eq!(outcome, "fail", "{doc:#}");
    assert!(reason.contains("below its minimum of 9"), "{reason}");
    assert_eq!(states(&status(&sb, &vars))["c/discovery"], "failed");
}

/// A dependent sees what a provider it depends on wrote only through a declared artifact:
/// depending on a receiver is depending on its producer, whose run writes the report; the
/// dependent starts after it and sees the report only once the producer names it in
/// `artifacts`. A dependent that runs while its dependency is reused gets the artifacts
/// the store kept; when the store lost them, the dependency runs again to make them.
#[test]
fn depending_on_a_receiver_waits_for_its_producer_and_sees_only_its_artifacts() {
    let sb = Sandbox::new();
    let order = sb.channel("order");
    let after = |tag: &str| {
        format!(
            "  after:\n    adapter: command\n    capability: static-analysis\n    dependsOn: [discovery-web]\n    command: [sh, -c, 'test -f results/web.tap && echo after-{tag} >> \"$ORDER\"']\n    envFrom: [ORDER]\n"
        )
    };
    receiver_workspace(&sb, 0, &after("1"));
    let vars = [("ORDER", order.env())];
    // Without artifacts, what the producer wrote is its own.
    let doc = prove(&sb, &["--jobs", "2"], &vars).json();
    assert_eq!(
        outcome_of(&doc, "after", "static-analysis"),
        "fail",
        "{doc:#}"
    );
    assert_eq!(order.take(), "");
    let path = sb.work().join("openspec/changes/atk/execution.yaml");
    let declare = |text: &str| {
        text.replacen(
            "    discoveryProvider: discovery-web\n",
            "    discoveryProvider: discovery-web\n    artifacts: [results/**]\n",
            1,
        )
    };
    let text = fs_err::read_to_string(&path).expect("read");
    fs_err::write(&path, declare(&text)).expect("write");
    git_commit_all(&sb.work());
    let doc = prove(&sb, &["--jobs", "2"], &vars).json();
    assert_eq!(
        outcome_of(&doc, "after", "static-analysis"),
        "pass",
        "{doc:#}"
    );
    assert_eq!(provider(&doc, "test-web")["action"], "ran", "{doc:#}");
    assert_eq!(order.take(), "after-1\n");
    // The dependent alone changes: its dependency is reused, its artifacts come from the
    // store.
    let text = fs_err::read_to_string(&path).expect("read");
    fs_err::write(&path, text.replace("after-1", "after-2")).expect("write");
    let doc = prove(&sb, &["--jobs", "2"], &vars).json();
    assert_eq!(provider(&doc, "test-web")["action"], "reused", "{doc:#}");
    assert_eq!(
        outcome_of(&doc, "after", "static-analysis"),
        "pass",
        "{doc:#}"
    );
    assert_eq!(order.take(), "after-2\n");
    // The store lost them: the dependency runs again to make them.
    fs_err::remove_dir_all(sb.work().join(".proofgraph/artifacts")).expect("remove");
    let text = fs_err::read_to_string(&path).expect("read");
    fs_err::write(&path, text.replace("after-2", "after-3")).expect("write");
    let doc = prove(&sb, &["--jobs", "2"], &vars).json();
    assert_eq!(provider(&doc, "test-web")["action"], "ran", "{doc:#}");
    assert_eq!(
        outcome_of(&doc, "after", "static-analysis"),
        "pass",
        "{doc:#}"
    );
    assert_eq!(order.take(), "after-3\n");
}

#[test]
fn a_store_linked_into_tmp_works_under_every_isolation() {
    for (mode, isolation) in [("worktree", "auto"), ("copy", "auto"), ("worktree", "none")] {
        let sb = Sandbox::new();
        workspace(
            &sb,
            "  test:\n    adapter: test-discovery\n    command: [sh, -c, \"printf 'TAP version 13\\\\n1..1\\\\nok 1 - a\\\\n' > out.tap\"]\n    report: out.tap\n",
            &[(".gitignore", ".proofgraph\n")],
        );
        let elsewhere = tempfile::Builder::new()
            .prefix("pg-store-")
            .tempdir()
            .expect("tempdir");
        fs_err::os::unix::fs::symlink(elsewhere.path(), sb.work().join(".proofgraph"))
            .expect("link");
        let run = prove(&sb, &["--sandbox", mode, "--isolation", isolation], &[]);
        let doc = run.json();
        assert_eq!(run.code, Some(0), "{mode}/{isolation}: {doc:#}");
        assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
        // The receipts are where the link points, and a second prove reuses them.
        assert!(elsewhere.path().join("cas").is_dir());
        let again = prove(&sb, &["--sandbox", mode, "--isolation", isolation], &[]).json();
        assert_eq!(again["summary"]["reused"], 1, "{again:#}");
    }
}

// Forging receipts from inside a run: the signing key and the pins are no job's business.

#[test]
fn an_isolated_job_cannot_read_the_signing_key_or_move_a_pin() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, steal.sh]\n    report: out.tap\n    envFrom: [STORE, PINS]\n",
        &[(
            "steal.sh",
            "cat \"$STORE\"/keys/workspace.key\nls -A \"$STORE\"/keys\n\
             touch \"$PINS\"/forged && echo pinned\n\
             umount \"$STORE\"/keys 2>/dev/null && echo pinned-unmounted\n\
             umount -l \"$STORE\" 2>/dev/null && echo pinned-unmounted-store\n\
             for d in ac cas refs; do test -d \"$STORE/$d\" && echo pinned-saw-$d; done\n\
             cat \"$STORE\"/programs.json 2>/dev/null && echo pinned-read-programs\n\
             echo '{}' > \"$STORE\"/programs.json\n\
             printf 'TAP version 13\\n1..1\\nok 1 - a\\n' > out.tap\n",
        )],
    );
    // A first prove makes the key and its pin.
    let store = sb.work().join(".proofgraph");
    let pins = sb.config_home().join("proofgraph/pins");
    let vars = [
        ("STORE", store.to_str().expect("utf-8")),
        ("PINS", pins.to_str().expect("utf-8")),
    ];
    let doc = prove(&sb, &[], &vars).json();
    assert_eq!(doc["isolation"], "namespaces", "{doc:#}");
    assert_eq!(outcome_of(&doc, "test", "test"), "pass", "{doc:#}");
    // Again, with the store full: its cache, receipts and program table exist now. (A write
    // to the store's path lands in the job's own `/tmp` when the store lies below `/tmp`.)
    assert!(store.join("ac").is_dir());
    let again = prove(&sb, &["--no-cache"], &vars).json();
    assert_eq!(outcome_of(&again, "test", "test"), "pass", "{again:#}");
    let third = prove(&sb, &["--no-cache"], &vars).json();
    assert_eq!(outcome_of(&third, "test", "test"), "pass", "{third:#}");
    assert!(store.join("programs.json").is_file());
    let key = fs_err::read(store.join("keys/workspace.key")).expect("the key");
    assert!(!pins.join("forged").exists(), "a job wrote into the pins");
    assert!(
        !matches!(
            fs_err::read_to_string(store.join("programs.json")).as_deref(),
            Ok("{}\n")
        ),
        "a job rewrote the store's program table"
    );
    // The job's log (kept in the store) shows neither the key nor a pin it wrote.
    for blob in store_blobs(&sb) {
        assert!(!contains(&blob, &key), "the signing key reached the store");
        assert!(
            !contains(&blob, b"pinned"),
            "{}",
            String::from_utf8_lossy(&blob)
        );
    }
}

/// A report's test names and a job's log are the tested code's words, not proofgraph's:
/// whatever terminal sequences they hold — a clipboard write (`ESC ] 52`), a window title,
/// a bell — reach a person's terminal only escaped, in `prove`, `status`, `explain` and the
/// progress on stderr; colour sequences are dropped. `log` prints the log as it is, asked.
#[test]
fn terminal_sequences_from_a_report_or_a_log_never_reach_the_terminal() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: test-discovery\n    command: [sh, t.sh]\n    report: r.tap\n    reportFormat: tap\n",
        &[(
            "t.sh",
            "printf 'TAP version 13\\n1..2\\nok 1 - fine\\nnot ok 2 - evil\\033]52;c;ZXZpbA==\\007name\\n' > r.tap\nprintf 'log \\033[31mred\\033[0m and \\033]0;title\\007\\n'\nexit 1\n",
        )],
    );
    let human = sb.run(&sb.work(), &["prove", "atk"]);
    assert_eq!(human.code, Some(1), "{}\n{}", human.stdout, human.stderr);
    for (what, text) in [("stdout", &human.stdout), ("stderr", &human.stderr)] {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{what} holds a control character: {text:?}"
        );
    }
    assert!(
        human.stdout.contains("evil\\u{1b}]52;c;ZXZpbA==\\u{7}name"),
        "the name is shown, escaped: {}",
        human.stdout
    );
    assert!(
        human.stdout.contains("log red and \\u{1b}]0;title"),
        "{}",
        human.stdout
    );
    let status = sb.run(&sb.work(), &["status", "atk"]);
    assert!(!status.stdout.contains('\u{1b}'), "{:?}", status.stdout);
    // The JSON document keeps the exact bytes (escaped as JSON does).
    let doc = sb.run(&sb.work(), &["status", "atk", "--json"]);
    assert!(doc.stdout.contains("\\u001b]52"), "{}", doc.stdout);
    // `log` is the log, as it was written (redacted), when asked for.
    let log = sb.run(&sb.work(), &["log", "atk", "test"]);
    assert!(log.stdout.contains("\u{1b}[31mred"), "{:?}", log.stdout);
}

// Programs chosen at run time: what a job's processes execute is recorded (every
// `execve`, in the sandbox), bound by its receipt, and checked before reuse.

/// A tool found on `PATH` through a wrapper that no reading of the argv can see through —
/// a shell's `exec "$@"`, `env`, `env X=1`, `timeout`, `nice`, `\tool`, a name made at run
/// time — is bound by the receipt: when the tool changes, every provider that ran it runs
/// again and sees the new one (here, one that fails), never a reuse of the old pass.
#[test]
fn a_program_chosen_at_run_time_is_bound_whatever_wraps_it() {
    let tools = tool_dir(&[("mytool", "#!/bin/sh\nexit 0\n")]);
    let sb = Sandbox::new();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", tools.path().display());
    let wrappers = [
        r#"[sh, -c, 'exec "$@"', sh, mytool]"#,
        "[env, mytool]",
        "[env, X=1, mytool]",
        r#"[timeout, "9", mytool]"#,
        "[nice, mytool]",
        r#"[sh, -c, "timeout 9 mytool"]"#,
        r#"[sh, -c, "\\mytool"]"#,
        r#"[sh, -c, "T=my; ${T}tool"]"#,
    ];
    let mut providers = String::new();
    for (i, argv) in wrappers.iter().enumerate() {
        providers.push_str(&format!(
            "  w{i}:\n    adapter: command\n    capability: test\n    command: {argv}\n    env: {{PATH: \"{path}\"}}\n"
        ));
    }
    workspace(&sb, &providers, &[]);
    let named = sb.host_paths_with(&[tools.path()]);
    let vars = [("PROOFGRAPH_HOST_PATHS", named.as_str())];
    let names: Vec<String> = (0..wrappers.len()).map(|i| format!("w{i}")).collect();
    let first = prove(&sb, &[], &vars).json();
    for (name, argv) in names.iter().zip(wrappers) {
        assert_eq!(
            outcome_of(&first, name, "test"),
            "pass",
            "{argv}: {first:#}"
        );
        // The receipt names the tool with the digest of what ran.
        let sha = receipt(&first, name, "test")["sha256"]
            .as_str()
            .expect("stored")
            .to_owned();
        let executed =
            crate::support::statement(&sb, &sha)["predicate"]["proofgraph"]["executed"].clone();
        let tool = tools.path().join("mytool").display().to_string();
        assert!(
            executed
                .as_array()
                .is_some_and(|all| all.iter().any(|e| e["path"] == tool.as_str())),
            "{argv}: {executed:#}"
        );
    }
    let again = prove(&sb, &[], &vars).json();
    for name in &names {
        assert_eq!(provider(&again, name)["action"], "reused", "{again:#}");
    }
    // The tool changes (as a toolchain upgrade does): the old passes are not reused.
    fs_err::write(tools.path().join("mytool"), "#!/bin/sh\nexit 1\n").expect("write");
    let changed = prove(&sb, &["--keep-going"], &vars).json();
    for (name, argv) in names.iter().zip(wrappers) {
        assert_eq!(
            provider(&changed, name)["action"],
            "ran",
            "{argv}: {changed:#}"
        );
        assert_eq!(
            outcome_of(&changed, name, "test"),
            "fail",
            "{argv}: {changed:#}"
        );
    }
    // And what a fresh run says is what the reuse said.
    let fresh = prove(&sb, &["--no-cache", "--keep-going"], &vars).json();
    for name in &names {
        assert_eq!(outcome_of(&fresh, name, "test"), "fail", "{fresh:#}");
    }
}

/// A pass made in place (`--sandbox none`), where the job could see and change anything,
/// is never reused (and never pushed: `remote_http::a_pass_made_in_place_is_never_pushed`).
#[test]
fn a_pass_made_in_place_is_never_reused() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  lint:\n    adapter: command\n    capability: test\n    command: [sh, -c, \"exit 0\"]\n",
        &[],
    );
    let first = prove(&sb, &["--sandbox", "none"], &[]).json();
    assert_eq!(outcome_of(&first, "lint", "test"), "pass", "{first:#}");
    // Neither in place again nor in a sandbox (the fingerprint is the same in every mode).
    for extra in [&["--sandbox", "none"][..], &[]] {
        let again = prove(&sb, extra, &[]).json();
        assert_eq!(
            provider(&again, "lint")["action"],
            "ran",
            "{extra:?}: {again:#}"
        );
    }
    // A sandboxed pass is reused as ever.
    let reused = prove(&sb, &[], &[]).json();
    assert_eq!(provider(&reused, "lint")["action"], "reused", "{reused:#}");
}

/// A link among a provider's inputs binds what it leads to: with narrowed `inputs`, a test
/// that reads `tests/expected.txt -> ../data/expected.txt` (or a file below a linked
/// directory) sees the target in its world, and a change of the target runs it again —
/// never a reuse of the pass made with the old bytes.
#[test]
fn a_link_among_the_inputs_binds_the_bytes_it_leads_to() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: command\n    capability: test\n    inputs: [\"tests/**\"]\n    command: [sh, tests/check.sh]\n",
        &[
            (
                "tests/check.sh",
                "grep -qx pass tests/expected.txt && grep -qx pass tests/more/verdict.txt\n",
            ),
            ("data/expected.txt", "pass\n"),
            ("data/dir/verdict.txt", "pass\n"),
        ],
    );
    std::os::unix::fs::symlink("../data/expected.txt", sb.work().join("tests/expected.txt"))
        .expect("link");
    std::os::unix::fs::symlink("../data/dir", sb.work().join("tests/more")).expect("link");
    git_commit_all(&sb.work());
    let first = prove(&sb, &[], &[]).json();
    assert_eq!(outcome_of(&first, "test", "test"), "pass", "{first:#}");
    for (target, name) in [
        ("data/expected.txt", "a linked file"),
        ("data/dir/verdict.txt", "a file below a linked directory"),
    ] {
        sb.write(target, "fail\n");
        git_commit_all(&sb.work());
        let changed = prove(&sb, &[], &[]).json();
        assert_eq!(
            provider(&changed, "test")["action"],
            "ran",
            "{name}: {changed:#}"
        );
        assert_eq!(
            outcome_of(&changed, "test", "test"),
            "fail",
            "{name}: {changed:#}"
        );
        sb.write(target, "pass\n");
        git_commit_all(&sb.work());
    }
    // The targets restored: the first pass is current again. And a file outside the inputs
    // that no link leads to still moves nothing.
    let restored = prove(&sb, &[], &[]).json();
    assert_eq!(
        provider(&restored, "test")["action"],
        "reused",
        "{restored:#}"
    );
    sb.write("data/unrelated.txt", "y\n");
    git_commit_all(&sb.work());
    let unrelated = prove(&sb, &[], &[]).json();
    assert_eq!(
        provider(&unrelated, "test")["action"],
        "reused",
        "{unrelated:#}"
    );
}

/// A file a test needs but its narrowed `inputs` leave out is not in its world: the test
/// fails (never passes with a file its receipt does not bind), and the reason names it.
#[test]
fn a_file_the_inputs_leave_out_is_missing_and_named() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "  test:\n    adapter: command\n    capability: test\n    inputs: [\"tests/**\"]\n    command: [sh, tests/check.sh]\n",
        &[
            ("tests/check.sh", "cat data/fixture.txt\n"),
            ("data/fixture.txt", "pass\n"),
        ],
    );
    let doc = prove(&sb, &[], &[]).json();
    let (outcome, reason) = outcome(&doc, "test", "test");
    assert_eq!(outcome, "fail", "{doc:#}");
    assert!(
        reason.contains(":data/fixture.txt`") && reason.contains("`inputs` leave out"),
        "{reason}"
    );
}
