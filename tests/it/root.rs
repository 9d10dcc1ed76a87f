//! Differential tests of OpenSpec root resolution: every tree is built once
//! and both the real `openspec` CLI (1.13.2, from `tools/`) and proofgraph are
//! run on it; the embedded `root` object and the diagnostics must be equal.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{Emitted, Sandbox, assert_codes, assert_emits, emitted, openspec_bin};

/// A tree, where to stand in it, and extra arguments (`--store`).
struct Case {
    name: &'static str,
    cwd: PathBuf,
    args: Vec<String>,
    /// Messages that embed a YAML parser's own error text differ between the
    /// two parsers; for those only the prefix before the parser text is compared.
    parser_message: bool,
}

fn healthy_store(sb: &Sandbox, rel: &str, id: &str) -> PathBuf {
    let root = sb.openspec_root(rel);
    sb.write(
        &format!("{rel}/.openspec-store/store.yaml"),
        format!("version: 1\nid: {id}\n"),
    );
    root
}

fn register(sb: &Sandbox, stores: &[(&str, &PathBuf)]) {
    let mut text = String::from("version: 1\nstores:\n");
    for (id, path) in stores {
        text.push_str(&format!(
            "  {id}:\n    backend:\n      type: git\n      local_path: {}\n",
            path.display()
        ));
    }
    crate::support::write(&sb.data_home().join("openspec/stores/registry.yaml"), text);
}

fn case(name: &'static str, cwd: PathBuf) -> Case {
    Case {
        name,
        cwd,
        args: Vec::new(),
        parser_message: false,
    }
}

fn with_store(mut c: Case, id: &str) -> Case {
    c.args = vec!["--store".to_owned(), id.to_owned()];
    c
}

/// Builds the named tree in `sb` and returns the case to run.
fn build(sb: &Sandbox, name: &'static str) -> Case {
    let work = sb.work();
    match name {
        "nearest" => {
            sb.openspec_root("");
            case(name, work)
        }
        "nested" => {
            sb.openspec_root("proj");
            case(name, sb.mkdir("proj/a/b/c"))
        }
        "inner_root_wins" => {
            sb.openspec_root("");
            sb.openspec_root("inner");
            case(name, sb.mkdir("inner/x"))
        }
        "bare_openspec_dir_is_not_a_root" => {
            sb.openspec_root("");
            sb.mkdir("a/openspec");
            case(name, sb.mkdir("a/b"))
        }
        "config_only_without_pointer" => {
            sb.write("openspec/config.yaml", "schema: spec-driven\n");
            case(name, work)
        }
        "declared_pointer" => {
            let store = healthy_store(sb, "store", "team");
            register(sb, &[("team", &store)]);
            sb.write("app/openspec/config.yaml", "store: team\n");
            case(name, sb.mkdir("app/src"))
        }
        "planning_shape_ignores_pointer" => {
            let store = healthy_store(sb, "store", "team");
            register(sb, &[("team", &store)]);
            sb.openspec_root("app");
            sb.write(
                "app/openspec/config.yaml",
                "schema: spec-driven\nstore: team\n",
            );
            case(name, work.join("app"))
        }
        "planning_shape_with_malformed_pointer" => {
            sb.openspec_root("app");
            sb.write("app/openspec/config.yaml", "store: [1, 2]\n");
            case(name, work.join("app"))
        }
        "declared_pointer_to_unknown_store" => {
            let store = healthy_store(sb, "store", "team");
            register(sb, &[("team", &store)]);
            sb.write("app/openspec/config.yaml", "store: other\n");
            case(name, work.join("app"))
        }
        "declared_pointer_not_a_string" => {
            sb.write("app/openspec/config.yaml", "store: 42\n");
            case(name, work.join("app"))
        }
        "declared_pointer_unparseable" => {
            sb.write("app/openspec/config.yaml", "store: [unclosed\n");
            case(name, work.join("app"))
        }
        "declared_pointer_invalid_id" => {
            sb.write("app/openspec/config.yaml", "store: Not_Kebab\n");
            case(name, work.join("app"))
        }
        "registered_store" => {
            let store = healthy_store(sb, "stores/team", "team");
            register(sb, &[("team", &store)]);
            with_store(case(name, sb.mkdir("elsewhere")), "team")
        }
        "unknown_store" => {
            let a = healthy_store(sb, "stores/alpha", "alpha");
            let b = healthy_store(sb, "stores/beta", "beta");
            register(sb, &[("beta", &b), ("alpha", &a)]);
            with_store(case(name, sb.mkdir("elsewhere")), "gamma")
        }
        "no_registered_stores" => with_store(case(name, sb.mkdir("elsewhere")), "team"),
        "invalid_store_id" => with_store(case(name, sb.mkdir("elsewhere")), "Bad_Id"),
        "store_metadata_missing" => {
            let store = sb.openspec_root("stores/team");
            register(sb, &[("team", &store)]);
            with_store(case(name, sb.mkdir("elsewhere")), "team")
        }
        "store_metadata_other_id" => {
            let store = healthy_store(sb, "stores/team", "someone-else");
            register(sb, &[("team", &store)]);
            with_store(case(name, sb.mkdir("elsewhere")), "team")
        }
        "unhealthy_store" => {
            sb.mkdir("stores/team/openspec/specs");
            sb.write("stores/team/openspec/changes", "not a directory");
            sb.write(
                "stores/team/.openspec-store/store.yaml",
                "version: 1\nid: team\n",
            );
            register(sb, &[("team", &work.join("stores/team"))]);
            with_store(case(name, sb.mkdir("elsewhere")), "team")
        }
        "store_root_missing" => {
            register(sb, &[("team", &work.join("stores/gone"))]);
            with_store(case(name, sb.mkdir("elsewhere")), "team")
        }
        "no_root" => case(name, sb.mkdir("elsewhere")),
        "no_root_with_registered_stores" => {
            let store = healthy_store(sb, "stores/team", "team");
            register(sb, &[("team", &store)]);
            case(name, sb.mkdir("elsewhere"))
        }
        "global_default_store" => {
            let store = healthy_store(sb, "stores/team", "team");
            register(sb, &[("team", &store)]);
            crate::support::write(
                &sb.config_home().join("openspec/config.json"),
                r#"{"defaultStore": "team"}"#,
            );
            case(name, sb.mkdir("elsewhere"))
        }
        "global_default_store_unknown" => {
            crate::support::write(
                &sb.config_home().join("openspec/config.json"),
                r#"{"defaultStore": "team"}"#,
            );
            case(name, sb.mkdir("elsewhere"))
        }
        "registry_schema_error" => {
            crate::support::write(
                &sb.data_home().join("openspec/stores/registry.yaml"),
                "version: 1\nextra: true\nstores:\n  a:\n    backend: {type: svn, local_path: \"\"}\n",
            );
            with_store(case(name, sb.mkdir("elsewhere")), "a")
        }
        "registry_not_yaml" => {
            crate::support::write(
                &sb.data_home().join("openspec/stores/registry.yaml"),
                "version: [1\n",
            );
            let mut c = with_store(case(name, sb.mkdir("elsewhere")), "a");
            c.parser_message = true;
            c
        }
        "registry_bad_store_id" => {
            crate::support::write(
                &sb.data_home().join("openspec/stores/registry.yaml"),
                "version: 1\nstores:\n  Bad:\n    backend: {type: git, local_path: /nowhere}\n",
            );
            case(name, sb.mkdir("elsewhere"))
        }
        "store_metadata_schema_error" => {
            let store = sb.openspec_root("stores/team");
            sb.write(
                "stores/team/.openspec-store/store.yaml",
                "version: 2\nid: team\nremote: \"\"\n",
            );
            register(sb, &[("team", &store)]);
            with_store(case(name, sb.mkdir("elsewhere")), "team")
        }
        "store_named_specs_is_not_planning_shape" => {
            sb.openspec_root("");
            sb.write(
                "home-like/openspec/specs/.openspec-store/store.yaml",
                "version: 1\nid: specs\n",
            );
            case(name, sb.mkdir("home-like/deep"))
        }
        "symlinked_cwd" => {
            sb.openspec_root("real");
            sb.mkdir("real/src");
            std::os::unix::fs::symlink(work.join("real/src"), work.join("link")).expect("symlink");
            case(name, work.join("link"))
        }
        other => panic!("unknown case {other}"),
    }
}

const CASES: [&str; 30] = [
    "nearest",
    "nested",
    "inner_root_wins",
    "bare_openspec_dir_is_not_a_root",
    "config_only_without_pointer",
    "declared_pointer",
    "planning_shape_ignores_pointer",
    "planning_shape_with_malformed_pointer",
    "declared_pointer_to_unknown_store",
    "declared_pointer_not_a_string",
    "declared_pointer_unparseable",
    "declared_pointer_invalid_id",
    "registered_store",
    "unknown_store",
    "no_registered_stores",
    "invalid_store_id",
    "store_metadata_missing",
    "store_metadata_other_id",
    "unhealthy_store",
    "store_root_missing",
    "no_root",
    "no_root_with_registered_stores",
    "global_default_store",
    "global_default_store_unknown",
    "registry_schema_error",
    "registry_not_yaml",
    "registry_bad_store_id",
    "store_metadata_schema_error",
    "store_named_specs_is_not_planning_shape",
    "symlinked_cwd",
];

/// Only the fields of a diagnostic both tools define; for parser-worded
/// messages, only the part before the parser's own text.
fn comparable(status: &Value, errors_only: bool, parser_message: bool) -> Value {
    let items = status.as_array().cloned().unwrap_or_default();
    let kept: Vec<Value> = items
        .into_iter()
        .filter(|d| !errors_only || d["severity"] == "error")
        .map(|mut d| {
            if parser_message && let Some(m) = d["message"].as_str() {
                let prefix = m.split(": ").next().unwrap_or(m).to_owned();
                d["message"] = Value::from(prefix);
            }
            d
        })
        .collect();
    Value::from(kept)
}

fn run_both(sb: &Sandbox, c: &Case, command: &str) -> (Value, Value) {
    let mut args: Vec<&str> = vec![command, "--json"];
    args.extend(c.args.iter().map(String::as_str));
    let theirs = sb.command(openspec_bin(), &c.cwd, &args);
    let ours = sb.run(&c.cwd, &args);
    let theirs_doc = theirs.json();
    let ours_doc = ours.json();
    let failed = !theirs_doc["status"]
        .as_array()
        .is_none_or(|s| s.iter().all(|d| d["severity"] != "error"));
    // OpenSpec exits 1 when it cannot resolve; proofgraph's table says 3.
    assert_eq!(
        theirs.code,
        Some(if failed { 1 } else { 0 }),
        "{}: openspec exit code\n{}",
        c.name,
        theirs.stdout
    );
    assert_eq!(
        ours.code,
        Some(if failed { 3 } else { 0 }),
        "{}: proofgraph exit code\n{}",
        c.name,
        ours.stdout
    );
    (theirs_doc, ours_doc)
}

#[test]
fn list_resolves_the_root_as_openspec_does() {
    for name in CASES {
        let sb = Sandbox::new();
        let c = build(&sb, name);
        let (theirs, ours) = run_both(&sb, &c, "list");
        assert_eq!(ours["root"], theirs["root"], "{name}: root");
        assert_eq!(
            comparable(&ours["status"], true, c.parser_message),
            comparable(&theirs["status"], true, c.parser_message),
            "{name}: error diagnostics"
        );
    }
}

#[test]
fn doctor_reports_root_health_as_openspec_does() {
    for name in CASES {
        let sb = Sandbox::new();
        let c = build(&sb, name);
        let (theirs, ours) = run_both(&sb, &c, "doctor");
        assert_eq!(ours["root"], theirs["root"], "{name}: root health");
        let store = |doc: &Value| {
            doc["store"]
                .as_object()
                .map(|s| json!({"id": s["id"], "metadata": s["metadata"]}))
        };
        assert_eq!(store(&ours), store(&theirs), "{name}: store");
        assert_eq!(
            comparable(&ours["status"], false, c.parser_message),
            comparable(&theirs["status"], false, c.parser_message),
            "{name}: status"
        );
    }
}

/// The cases above exercise every outcome of resolution; this pins the
/// expected outcome of each, so that a change in the reference that happened
/// to move both tools the same way is still noticed.
#[test]
fn each_tree_resolves_to_the_expected_outcome() {
    /// Where the root was found, or the code resolution fails with.
    enum Outcome {
        Source(&'static str),
        Fails(Emitted<'static>),
    }
    use Outcome::{Fails, Source};
    let expected: [(&str, Outcome); 30] = [
        ("nearest", Source("nearest")),
        ("nested", Source("nearest")),
        ("inner_root_wins", Source("nearest")),
        ("bare_openspec_dir_is_not_a_root", Source("nearest")),
        ("config_only_without_pointer", Source("nearest")),
        ("declared_pointer", Source("declared")),
        ("planning_shape_ignores_pointer", Source("nearest")),
        ("planning_shape_with_malformed_pointer", Source("nearest")),
        (
            "declared_pointer_to_unknown_store",
            Fails(emitted("unknown_store")),
        ),
        (
            "declared_pointer_not_a_string",
            Fails(emitted("invalid_store_pointer")),
        ),
        (
            "declared_pointer_unparseable",
            Fails(emitted("invalid_store_pointer")),
        ),
        (
            "declared_pointer_invalid_id",
            Fails(emitted("invalid_store_id")),
        ),
        ("registered_store", Source("store")),
        ("unknown_store", Fails(emitted("unknown_store"))),
        (
            "no_registered_stores",
            Fails(emitted("no_registered_stores")),
        ),
        ("invalid_store_id", Fails(emitted("invalid_store_id"))),
        (
            "store_metadata_missing",
            Fails(emitted("store_identity_mismatch")),
        ),
        (
            "store_metadata_other_id",
            Fails(emitted("store_identity_mismatch")),
        ),
        ("unhealthy_store", Fails(emitted("unhealthy_store_root"))),
        (
            "store_root_missing",
            Fails(emitted("store_identity_mismatch")),
        ),
        ("no_root", Fails(emitted("no_openspec_root"))),
        (
            "no_root_with_registered_stores",
            Fails(emitted("no_root_with_registered_stores")),
        ),
        ("global_default_store", Source("global_default")),
        (
            "global_default_store_unknown",
            Fails(emitted("no_registered_stores")),
        ),
        (
            "registry_schema_error",
            Fails(emitted("invalid_store_registry")),
        ),
        (
            "registry_not_yaml",
            Fails(emitted("invalid_store_registry")),
        ),
        (
            "registry_bad_store_id",
            Fails(emitted("invalid_store_registry")),
        ),
        (
            "store_metadata_schema_error",
            Fails(emitted("invalid_store_metadata")),
        ),
        ("store_named_specs_is_not_planning_shape", Source("nearest")),
        ("symlinked_cwd", Source("nearest")),
    ];
    for (name, outcome) in expected {
        let sb = Sandbox::new();
        let c = build(&sb, name);
        let mut args: Vec<&str> = vec!["list", "--json"];
        args.extend(c.args.iter().map(String::as_str));
        let doc = sb.run(&c.cwd, &args).json();
        let source = doc["root"]["source"].as_str();
        match outcome {
            Source(expected) => assert_eq!(source, Some(expected), "{name}"),
            Fails(code) => {
                assert_eq!(source, None, "{name}");
                assert_emits!(doc["status"][0], code, "{name}");
            }
        }
    }
}

#[test]
fn warnings_about_pointers_beside_real_roots() {
    let sb = Sandbox::new();
    let c = build(&sb, "planning_shape_ignores_pointer");
    let run = sb.run(&c.cwd, &["doctor", "--json"]);
    assert_codes!(run.status_codes(), ["root_pointer_ignored"]);
    let sb = Sandbox::new();
    let c = build(&sb, "planning_shape_with_malformed_pointer");
    let run = sb.run(&c.cwd, &["doctor", "--json"]);
    assert_codes!(run.status_codes(), ["root_pointer_invalid"]);
}

#[test]
fn root_health_findings_do_not_fail_doctor() {
    let sb = Sandbox::new();
    sb.mkdir("openspec/changes");
    sb.write("openspec/specs", "a file where a directory belongs");
    let run = sb.run(&sb.work(), &["doctor", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["root"]["healthy"], false);
    assert_codes!(
        crate::support::codes(&doc["root"]["status"]),
        ["openspec_config_missing", "openspec_specs_not_directory"]
    );
}

/// Health codes that resolution can never reach (a store root that does not
/// exist has no identity file, so identity fails first) are still part of the
/// inspection every root gets; they are checked on the inspection itself.
#[test]
fn inspection_of_a_missing_or_file_root() {
    use proofgraph::load::openspec::inspect::inspect;
    let sb = Sandbox::new();
    let missing = inspect(&sb.work().join("gone"));
    assert!(!missing.healthy);
    assert_codes!(missing.diagnostics[..1], ["openspec_store_root_missing"]);
    let file = sb.write("a-file", "x");
    assert_codes!(
        inspect(&file).diagnostics[..1],
        ["openspec_store_root_not_directory"]
    );
    let no_openspec = sb.mkdir("empty");
    assert_codes!(
        inspect(&no_openspec).diagnostics[..1],
        ["openspec_root_missing"]
    );
    sb.write("flat/openspec", "x");
    assert_codes!(
        inspect(&sb.work().join("flat")).diagnostics[..1],
        ["openspec_root_not_directory"]
    );
    sb.mkdir("odd/openspec/config.yaml");
    sb.write("odd/openspec/changes", "x");
    let odd = inspect(&sb.work().join("odd"));
    assert_codes!(
        odd.diagnostics,
        ["openspec_config_not_file", "openspec_changes_not_directory"]
    );
    sb.openspec_root("arch");
    fs_err::remove_dir(sb.work().join("arch/openspec/changes/archive")).expect("remove archive");
    sb.write("arch/openspec/changes/archive", "x");
    assert_codes!(
        inspect(&sb.work().join("arch")).diagnostics[..1],
        ["openspec_archive_not_directory"]
    );
}
