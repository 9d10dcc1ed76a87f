//! A cached setup is a derivation: it runs where only its inputs are, so what the cache holds
//! can never be the project — the false pass where a cached venv held the library itself.
//! Each test tries to get the project's code into the cache, or stale code out of it.

use serde_json::Value;

use crate::support::{Sandbox, git_commit_all, provider};

/// A repository `app` whose cached setup records every file it can see (into `deps/seen`)
/// and copies whatever of the project it finds into `deps/`; the provider runs the library
/// from `deps/` when setup put it there, else from the sandbox's `src/`.
fn workspace(sb: &Sandbox, extra: &str) {
    let setup = format!(
        "mkdir -p deps && find . -path ./deps -prune -o -type f -print | sort > deps/seen && cp -R src deps/ 2>/dev/null; echo run >> {}",
        sb.channel("setups").env()
    );
    workspace_with_setup(sb, &setup, extra);
}

/// A repository `app` whose cached setup runs `setup` (a shell script) and keeps `deps`,
/// and a provider that sources `deps/src/lib.sh` when setup left one, else `src/lib.sh`.
fn workspace_with_setup(sb: &Sandbox, setup: &str, extra: &str) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!(
            "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, {setup:?}]]\n    setupCache: [deps]\n{extra}"
        ),
    );
    sb.write("app/src/lib.sh", "answer() { echo 42; }\n");
    sb.write("app/package.json", "{\"name\": \"app\"}\n");
    sb.write("app/tools/pnpm-lock.yaml", "lockfileVersion: '9.0'\n");
    sb.write("app/README.md", "docs\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [integration]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  integration:\n    adapter: command\n    repository: app\n    command: [sh, -c, \"if [ -f deps/src/lib.sh ]; then . deps/src/lib.sh; else . src/lib.sh; fi; test \\\"$(answer)\\\" = 42\"]\n",
    );
    git_commit_all(&sb.work());
}

fn prove(sb: &Sandbox, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["prove", "x", "--json"];
    args.extend(extra);
    let run = sb.run(&sb.work(), &args);
    (run.code.expect("an exit code"), run.json())
}

fn setups(sb: &Sandbox) -> usize {
    sb.channel("setups").lines()
}

/// What the latest setup saw, from the tree the store keeps of what it produced.
fn seen(sb: &Sandbox) -> Vec<String> {
    let trees = sb.work().join(".proofgraph/setup-trees");
    let newest = fs_err::read_dir(&trees)
        .expect("the store keeps setup trees")
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .max_by_key(|e| {
            fs_err::metadata(e.path().join("files"))
                .and_then(|m| m.modified())
                .ok()
        })
        .expect("a setup tree");
    fs_err::read_to_string(newest.path().join("tree/deps/seen"))
        .expect("setup's listing is in its tree")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_cached_setup_sees_only_manifests_and_lockfiles_so_a_broken_library_never_passes() {
    let sb = Sandbox::new();
    workspace(&sb, "");
    let (code, doc) = prove(&sb, &["--keep-sandbox"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(setups(&sb), 1);
    // Manifests and lockfiles at any depth, nothing else: not the source, not the docs.
    assert_eq!(seen(&sb), ["./package.json", "./tools/pnpm-lock.yaml"]);
    // Break the library: the provider reruns with the cache restored (setup does not run
    // again) and fails, because the cache never held the library.
    sb.write("app/src/lib.sh", "answer() { echo 41; }\n");
    let (code, doc) = prove(&sb, &[]);
    assert_eq!(code, 1, "a broken library never passes: {doc}");
    assert_eq!(provider(&doc, "integration")["action"], "ran");
    assert_eq!(setups(&sb), 1, "the setup came from its cache");
    // Fixed again: the first receipt is current.
    sb.write("app/src/lib.sh", "answer() { echo 42; }\n");
    let (code, _) = prove(&sb, &[]);
    assert_eq!(code, 0);
    // A lockfile edit is a new setup; a README edit is not.
    sb.write("app/README.md", "more docs\n");
    let (code, _) = prove(&sb, &[]);
    assert_eq!(code, 0);
    assert_eq!(setups(&sb), 1, "the README is not a setup input");
    sb.write("app/tools/pnpm-lock.yaml", "lockfileVersion: '9.1'\n");
    let (code, _) = prove(&sb, &[]);
    assert_eq!(code, 0);
    assert_eq!(setups(&sb), 2, "a lockfile edit reruns setup");
}

#[test]
fn declared_setup_inputs_are_all_a_cached_setup_sees_and_all_its_key_covers() {
    let sb = Sandbox::new();
    workspace(
        &sb,
        "    setupInputs: [package.json, \"requirements/*.txt\"]\n",
    );
    sb.write("app/requirements/test.txt", "pytest==8.3.4\n");
    git_commit_all(&sb.work());
    let (code, doc) = prove(&sb, &["--keep-sandbox"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(seen(&sb), ["./package.json", "./requirements/test.txt"]);
    // The lockfile is not declared: editing it keeps the cache.
    sb.write("app/tools/pnpm-lock.yaml", "lockfileVersion: '9.1'\n");
    prove(&sb, &[]);
    assert_eq!(setups(&sb), 1);
    // A declared input, even one not yet added to git, is a new setup.
    sb.write("app/requirements/dev.txt", "ruff\n");
    let (code, doc) = prove(&sb, &["--keep-sandbox"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(setups(&sb), 2);
    assert_eq!(
        seen(&sb),
        [
            "./package.json",
            "./requirements/dev.txt",
            "./requirements/test.txt"
        ]
    );
}

#[test]
fn a_cached_setup_that_needs_the_source_fails_and_says_where_it_ran() {
    let sb = Sandbox::new();
    workspace(&sb, "");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"test -f src/lib.sh || { echo no source here >&2; exit 2; }\"]]\n    setupCache: [deps]\n",
    );
    let (code, doc) = prove(&sb, &[]);
    assert_eq!(code, 1, "{doc}");
    let reason = provider(&doc, "integration")["receipts"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for part in [
        "the setup of its repository failed",
        "where only its inputs are: package.json, tools/pnpm-lock.yaml",
        "no source here",
        "docs/setup.md",
    ] {
        assert!(reason.contains(part), "{part:?} in {reason}");
    }
    // Without a cache, setup runs in the sandbox with the code as it is.
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"test -f src/lib.sh\"]]\n",
    );
    let (code, doc) = prove(&sb, &[]);
    assert_eq!(code, 0, "{doc}");
}

#[test]
fn what_a_cached_setup_produced_joins_tracked_files_of_the_same_directory() {
    let sb = Sandbox::new();
    workspace(&sb, "");
    sb.write("app/deps/tracked.txt", "tracked\n");
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  integration:\n    adapter: command\n    repository: app\n    command: [sh, -c, \"test -f deps/tracked.txt && test -f deps/seen\"]\n",
    );
    git_commit_all(&sb.work());
    for round in ["setup ran", "restored from the cache"] {
        sb.write(
            "app/src/lib.sh",
            format!("# {round}\nanswer() {{ echo 42; }}\n"),
        );
        let (code, doc) = prove(&sb, &[]);
        assert_eq!(code, 0, "{round}: {doc}");
    }
    assert_eq!(setups(&sb), 1);
}

/// docs/setup.md's cargo recipe, run: a crate with a dependency from crates.io, whose
/// cached setup fetches it into `.cargo-home` seeing only `Cargo.toml` and `Cargo.lock`
/// (a placeholder target lets cargo read the manifest); the provider builds and tests
/// offline in the sandbox with the code as it is, so a broken crate never passes.
#[test]
fn the_cargo_recipe_fetches_dependencies_once_and_tests_the_code_as_it_is() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"=1.0.15\"\n\n[workspace]\n",
    );
    sb.write(
        "app/src/lib.rs",
        "pub fn shown(n: u32) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\n#[test]\nfn shows() {\n    assert_eq!(shown(42), \"42\");\n}\n",
    );
    sb.write("app/.gitignore", "target/\n.cargo-home/\n");
    // rustup finds its toolchains through the real home, as the evidence tests' cargo does.
    let home = std::env::var("HOME").expect("HOME");
    let lock = sb
        .cmd("cargo", &sb.work().join("app"))
        .env("HOME", &home)
        .args(["generate-lockfile", "--quiet"])
        .output()
        .expect("run cargo");
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"mkdir -p src && touch src/lib.rs && CARGO_HOME=.cargo-home cargo fetch --locked\"]]\n    setupCache: [.cargo-home]\n",
    );
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: static-analysis\n    repository: app\n    command: [cargo, test, --offline, --quiet]\n    env: {CARGO_HOME: .cargo-home}\n    timeoutMs: 600000\n",
    );
    git_commit_all(&sb.work());
    let prove = |sb: &Sandbox| {
        sb.run_with_env(
            &sb.work(),
            &["prove", "x", "--json"],
            &[("HOME", home.as_str())],
        )
    };
    let run = prove(&sb);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    sb.write(
        "app/src/lib.rs",
        "pub fn shown(n: u32) -> String {\n    itoa::Buffer::new().format(n + 1).to_owned()\n}\n\n#[test]\nfn shows() {\n    assert_eq!(shown(42), \"42\");\n}\n",
    );
    let run = prove(&sb);
    assert_eq!(
        run.code,
        Some(1),
        "a broken crate never passes: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains("restored") && !run.stderr.contains("cargo fetch"),
        "the fetch came from the cache: {}",
        run.stderr
    );
}

/// docs/setup.md's pnpm and yarn recipes, run: a package with a dependency from npm, whose
/// cached setup installs it seeing only the manifest and the lockfile; pnpm's links are
/// relative, so they resolve in every sandbox. The package's own code comes from the
/// sandbox, so breaking it never passes.
#[test]
fn the_pnpm_and_yarn_recipes_install_dependencies_once_and_run_the_code_as_it_is() {
    let tools = crate::support::tools_node_modules();
    for (manager, program, lock, setup) in [
        (
            "pnpm",
            tools.join(".bin/pnpm"),
            vec!["install", "--lockfile-only"],
            "[pnpm, install, --frozen-lockfile, --store-dir, node_modules/.pnpm-store]",
        ),
        (
            // Classic, by its path: yarn berry (tests/it/recipes.rs) is a `yarn` of tools/ too.
            "yarn",
            tools.join("yarn/bin/yarn.js"),
            vec!["install", "--ignore-scripts"],
            "[yarn, install, --frozen-lockfile]",
        ),
    ] {
        let sb = Sandbox::new();
        let path = crate::support::path_with_tool(&sb, manager, &program);
        sb.openspec_root("");
        sb.write(
            "app/package.json",
            "{\"name\": \"app\", \"version\": \"1.0.0\", \"private\": true, \"dependencies\": {\"is-number\": \"7.0.0\"}}\n",
        );
        sb.write(
            "app/index.js",
            "const isNumber = require('is-number');\nmodule.exports = (x) => isNumber(x);\n",
        );
        sb.write("app/.gitignore", "node_modules/\n");
        let made = sb
            .cmd(&program, &sb.work().join("app"))
            .env("PATH", &path)
            .args(&lock)
            .output()
            .expect("run the package manager");
        assert!(
            made.status.success(),
            "{manager}: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        if manager == "yarn" {
            let lock = fs_err::read_to_string(sb.work().join("app/yarn.lock")).expect("yarn.lock");
            assert!(
                lock.contains("# yarn lockfile v1"),
                "yarn classic ran: {lock}"
            );
        }
        let _ = fs_err::remove_dir_all(sb.work().join("app/node_modules"));
        sb.write(
            "proofgraph.yaml",
            format!("version: 1\nrepositories:\n  app:\n    path: app\n    setup: [{setup}]\n    setupCache: [node_modules]\n"),
        );
        sb.write(
            "openspec/changes/x/evidence.yaml",
            "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [static-analysis]}\n",
        );
        sb.write(
            "openspec/changes/x/execution.yaml",
            "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: static-analysis\n    repository: app\n    command: [node, -e, \"process.exit(require('./index.js')(5) && !require('./index.js')('x') ? 0 : 1)\"]\n",
        );
        git_commit_all(&sb.work());
        let prove = |sb: &Sandbox| {
            sb.run_with_env(
                &sb.work(),
                &["prove", "x", "--json"],
                &[("PATH", path.as_str())],
            )
        };
        let run = prove(&sb);
        assert_eq!(
            run.code,
            Some(0),
            "{manager}: {}\n{}",
            run.stdout,
            run.stderr
        );
        sb.write(
            "app/index.js",
            "const isNumber = require('is-number');\nmodule.exports = (x) => !isNumber(x);\n",
        );
        let run = prove(&sb);
        assert_eq!(
            run.code,
            Some(1),
            "{manager}: a broken package never passes: {}",
            run.stdout
        );
        assert!(
            run.stderr.contains("restored"),
            "{manager}: the install came from the cache: {}",
            run.stderr
        );
    }
}

/// The kept setup trees in the store, by key.
fn kept_trees(sb: &Sandbox) -> Vec<String> {
    let mut out: Vec<String> = fs_err::read_dir(sb.work().join(".proofgraph/setup-trees"))
        .map(|all| {
            all.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// `cache gc` removes a kept setup tree that no repository needs any more (its lockfile
/// moved on) once it has not been used for `--keep`; the one the repository needs now
/// stays, however old, and the next run restores it instead of running setup again.
#[test]
fn cache_gc_removes_setup_trees_no_repository_needs() {
    let sb = Sandbox::new();
    workspace(&sb, "");
    assert_eq!(prove(&sb, &[]).0, 0);
    let first = kept_trees(&sb);
    assert_eq!(first.len(), 1, "{first:?}");
    sb.write(
        "app/package.json",
        "{\"name\": \"app\", \"version\": \"2.0.0\"}\n",
    );
    git_commit_all(&sb.work());
    assert_eq!(prove(&sb, &[]).0, 0);
    assert_eq!(setups(&sb), 2);
    let both = kept_trees(&sb);
    assert_eq!(both.len(), 2, "{both:?}");
    let gc = |sb: &Sandbox| {
        let run = sb.run(&sb.work(), &["cache", "gc", "--keep", "1d", "--json"]);
        assert_eq!(run.code, Some(0), "{}", run.stdout);
        run.json()["collected"].clone()
    };
    // Used just now: both stay.
    assert_eq!(gc(&sb)["setup_trees_removed"], 0);
    assert_eq!(kept_trees(&sb), both);
    for key in &both {
        let files = sb
            .work()
            .join(".proofgraph/setup-trees")
            .join(key)
            .join("files");
        let ok = std::process::Command::new("touch")
            .args(["-d", "3 days ago"])
            .arg(&files)
            .status()
            .expect("touch");
        assert!(ok.success());
    }
    let collected = gc(&sb);
    assert_eq!(collected["setup_trees_removed"], 1, "{collected:#}");
    assert!(
        collected["setup_bytes_freed"].as_u64().unwrap_or(0) > 0,
        "{collected:#}"
    );
    let left = kept_trees(&sb);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        !first.contains(&left[0]),
        "the tree the lockfile needs now stays: {left:?}"
    );
    assert_eq!(prove(&sb, &["--no-cache"]).0, 0);
    assert_eq!(setups(&sb), 2, "restored, not run again");
}

/// A cached setup cannot reach around its derivation directory to the project: not by the
/// work tree's absolute path, not through `git rev-parse --show-toplevel` (there is no
/// repository in its world). What it tries to vendor is not there, and a library broken
/// after the first prove is never imported from the cache.
#[test]
fn a_cached_setup_cannot_vendor_the_project_by_its_path() {
    let sb = Sandbox::new();
    let app = sb.work().join("app");
    let setup = format!(
        "mkdir -p deps; cp -R {}/src deps/ 2>/dev/null; top=$(git rev-parse --show-toplevel 2>/dev/null) && cp -R \"$top\"/app/src deps/ 2>/dev/null; true",
        app.display()
    );
    workspace_with_setup(&sb, &setup, "");
    let (code, doc) = prove(&sb, &[]);
    assert_eq!(code, 0, "{doc}");
    let trees = sb.work().join(".proofgraph/setup-trees");
    let vendored: Vec<_> = fs_err::read_dir(&trees)
        .expect("trees")
        .flatten()
        .filter(|e| e.path().join("tree/deps/src").exists())
        .collect();
    assert!(vendored.is_empty(), "the setup vendored the project");
    sb.write("app/src/lib.sh", "answer() { echo 41; }\n");
    let (code, doc) = prove(&sb, &[]);
    assert_eq!(
        code, 1,
        "a broken library never passes through the cache: {doc}"
    );
}

/// Running in place, setup does not run (the repository is used as it is, with what is
/// installed there), and `prove` says so for each repository that declares one instead of
/// skipping it silently.
#[test]
fn running_in_place_says_that_setup_did_not_run() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write("app/a.txt", "a\n");
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"echo installed > marker\"]]\n",
    );
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    capability: static-analysis\n    repository: app\n    command: [sh, -c, \"test ! -e marker\"]\n",
    );
    git_commit_all(&sb.work());
    let run = sb.run(&sb.work(), &["prove", "x", "--sandbox", "none"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("setup   app: not run (--sandbox none works in the repository as it is"),
        "{}",
        run.stderr
    );
    assert!(
        !sb.work().join("app/marker").exists(),
        "setup never ran in place"
    );
    // In a sandbox it runs, and says what it ran.
    let run = sb.run(&sb.work(), &["prove", "x", "--no-cache"]);
    assert_eq!(
        run.code,
        Some(1),
        "the provider sees what setup made: {}",
        run.stderr
    );
    assert!(run.stderr.contains("setup   app: sh -c"), "{}", run.stderr);
}
