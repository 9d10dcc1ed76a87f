//! A kept setup output is shown to each provider without a copy — a read-only layer of its
//! world, under a writable layer of its own — and nothing a provider does reaches the store:
//! not a write through its world, not a delete, not a write to the store's own path.
//! Without a mount namespace it is copied into each execution's private copy, and the
//! progress says why.

use crate::support::{Sandbox, git_commit_all};

/// A repository `app` whose cached setup writes `deps/lib.txt` (`v1`) and `deps/sub/f`;
/// the provider checks it reads `v1`, then overwrites it, deletes `deps/sub/f` and (with
/// `forge`) tries to write the store's copy by its path, failing if that worked.
fn workspace(sb: &Sandbox, forge: bool) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nrepositories:\n  app:\n    path: app\n    setup: [[sh, -c, \"mkdir -p deps/sub && echo v1 > deps/lib.txt && echo x > deps/sub/f && echo run >> {}\"]]\n    setupCache: [deps]\n", sb.channel("setups").env()),
    );
    sb.write("app/package.json", "{\"name\": \"app\"}\n");
    sb.write("app/src/lib.sh", "echo 42\n");
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [integration]}\n",
    );
    let forge = if forge {
        "for f in ../../../../setup-trees/*/tree/deps/lib.txt; do if (echo forged > $f) 2>/dev/null; then echo forged the store >&2; exit 9; fi; done; "
    } else {
        ""
    };
    sb.write(
        "openspec/changes/x/execution.yaml",
        format!("version: 1\nproviders:\n  integration:\n    adapter: command\n    repository: app\n    command: [sh, -c, \"test \\\"$(cat deps/lib.txt)\\\" = v1 && test -f deps/sub/f && echo changed > deps/lib.txt && rm deps/sub/f && test \\\"$(cat deps/lib.txt)\\\" = changed && {forge}exit 0\"]\n"),
    );
    git_commit_all(&sb.work());
}

fn setups(sb: &Sandbox) -> usize {
    sb.channel("setups").lines()
}

/// The store's copy of `deps/lib.txt`, read on the host.
fn kept(sb: &Sandbox) -> String {
    let trees = sb.work().join(".proofgraph/setup-trees");
    let entries: Vec<_> = fs_err::read_dir(&trees)
        .expect("the store keeps setup trees")
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(entries.len(), 1, "one setup, one tree");
    fs_err::read_to_string(entries[0].path().join("tree/deps/lib.txt")).expect("read")
}

/// Proves `x` twice with `args` (the second with `--no-cache`: everything runs again on
/// the kept setup) and returns both runs' stderr.
fn twice(sb: &Sandbox, args: &[&str]) -> [String; 2] {
    let mut out = Vec::new();
    for extra in [&[][..], &["--no-cache"][..]] {
        let mut all = vec!["prove", "x"];
        all.extend(args);
        all.extend(extra);
        let run = sb.run(&sb.work(), &all);
        assert_eq!(run.code, Some(0), "{all:?}: {}\n{}", run.stdout, run.stderr);
        out.push(run.stderr);
    }
    assert_eq!(
        setups(sb),
        1,
        "setup ran once; the second run used the kept tree"
    );
    assert_eq!(kept(sb), "v1\n", "nothing a provider did reached the store");
    [out.remove(0), out.remove(0)]
}

#[test]
fn a_kept_setup_is_mounted_and_no_write_of_a_provider_reaches_it() {
    for mode in ["worktree", "copy"] {
        let sb = Sandbox::new();
        workspace(&sb, true);
        let runs = twice(&sb, &["--sandbox", mode, "--isolation", "required"]);
        for stderr in &runs {
            assert!(
                stderr.contains("app: restored 2 files from the setup cache (mounted)"),
                "{mode}: {stderr}"
            );
        }
        // The host's sandbox never held a copy: the run's directory is gone and held only
        // mount points, and the tree is still complete.
        let trees = sb.work().join(".proofgraph/setup-trees");
        let tree = fs_err::read_dir(&trees)
            .expect("trees")
            .flatten()
            .find(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .expect("a tree")
            .path();
        assert!(
            tree.join("tree/deps/sub/f").is_file(),
            "{mode}: the delete stayed in the run"
        );
        assert!(tree.join("listing.json").is_file());
    }
}

#[test]
fn without_a_mount_namespace_the_tree_is_copied_and_says_why() {
    let sb = Sandbox::new();
    workspace(&sb, false);
    let runs = twice(&sb, &["--isolation", "none"]);
    for stderr in &runs {
        assert!(
            stderr.contains("(copied: the run has no mount namespace)"),
            "{stderr}"
        );
    }
}

/// `--keep-sandbox` keeps the run's directory: the snapshot as it was made, and what each
/// execution wrote in a layer of its own — the tree itself is never copied.
#[test]
fn with_keep_sandbox_each_executions_writes_are_kept_in_its_own_layer() {
    let sb = Sandbox::new();
    workspace(&sb, true);
    let run = sb.run(&sb.work(), &["prove", "x", "--keep-sandbox", "--json"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("app: restored 2 files from the setup cache (mounted)"),
        "{}",
        run.stderr
    );
    let id = run.json()["run_id"].as_str().expect("a run id").to_owned();
    let dir = sb.work().join(".proofgraph/runs").join(id);
    assert!(
        !dir.join("sandboxes/app/deps").exists(),
        "the snapshot holds what git shows, nothing setup made"
    );
    let layers: Vec<_> = fs_err::read_dir(dir.join("worlds"))
        .expect("the executions' layers are kept")
        .flatten()
        .map(|e| e.path().join("app/upper/deps/lib.txt"))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(layers.len(), 1, "one execution wrote lib.txt");
    assert_eq!(
        fs_err::read_to_string(&layers[0]).expect("read"),
        "changed\n"
    );
    assert_eq!(kept(&sb), "v1\n");
}

#[test]
fn a_damaged_or_half_written_tree_is_never_used() {
    let sb = Sandbox::new();
    workspace(&sb, false);
    let run = sb.run(&sb.work(), &["prove", "x"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // A staging directory a killed run left behind is not a tree; a tree whose count is
    // gone or unreadable is not one either: setup runs again and replaces it.
    let trees = sb.work().join(".proofgraph/setup-trees");
    fs_err::create_dir_all(trees.join(".staging-left/tree/deps")).expect("mkdir");
    let tree = fs_err::read_dir(&trees)
        .expect("trees")
        .flatten()
        .find(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .expect("a tree")
        .path();
    fs_err::write(tree.join("files"), "{not a count").expect("write");
    let run = sb.run(&sb.work(), &["prove", "x", "--no-cache"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        setups(&sb),
        2,
        "an unreadable tree is not used: {}",
        run.stderr
    );
}
