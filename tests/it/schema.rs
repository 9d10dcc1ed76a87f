//! `schema <kind>`: the JSON Schemas of the three files, checked by a real validator
//! (Python's `jsonschema`, draft 2020-12) against every file the repository holds — the
//! fixtures, the example, the compatibility corpus — and against what `validate` says of
//! each: a file `validate` finds no error and no unknown key in is valid by its schema, and
//! one with a shape error (a wrong type, an unknown key, adapter or report format, a missing
//! field, an invalid id, an unsupported version) is not. What needs the whole change (a
//! cycle, a `dependsOn` naming nobody) is beyond a schema, and not compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Sandbox, python_tool, repo_root};

/// The codes of errors in a file's shape, which its schema must catch too.
const SHAPE: [&str; 7] = [
    "wrong_type",
    "unknown_key",
    "unknown_adapter",
    "unknown_report_format",
    "missing_field",
    "invalid_id",
    "unsupported_version",
];

/// Validates each `(file, kind)` with Python's jsonschema against `schemas/<kind>.json`
/// (YAML read with YAML 1.2's booleans, as proofgraph reads it); the first error of each,
/// or `None`.
fn schema_errors(schemas: &Path, files: &[(PathBuf, &str)]) -> BTreeMap<PathBuf, Option<String>> {
    let program = r#"
import json, re, sys, yaml, jsonschema
class Core(yaml.SafeLoader):
    pass
# YAML 1.2 core booleans only (PyYAML reads `on`/`yes`/`off` as booleans, proofgraph does not).
Core.yaml_implicit_resolvers = {k: [(t, r) for (t, r) in v if t != 'tag:yaml.org,2002:bool']
                                for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
Core.add_implicit_resolver('tag:yaml.org,2002:bool', re.compile(r'^(?:true|True|TRUE|false|False|FALSE)$'), list('tTfF'))
schemas, jobs = sys.argv[1], json.loads(sys.argv[2])
out = {}
for path, kind in jobs:
    schema = json.load(open(f'{schemas}/{kind}.json'))
    jsonschema.Draft202012Validator.check_schema(schema)
    try:
        data = yaml.load(open(path, encoding='utf-8'), Loader=Core)
    except Exception as e:
        out[path] = f'not YAML: {e}'
        continue
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    out[path] = (f'{list(errors[0].absolute_path)}: {errors[0].message}' if errors else None)
print(json.dumps(out))
"#;
    let jobs: Vec<(String, &str)> = files
        .iter()
        .map(|(p, k)| (p.display().to_string(), *k))
        .collect();
    let out = Command::new(python_tool("python3"))
        .args(["-c", program])
        .arg(schemas)
        .arg(serde_json::to_string(&jobs).expect("json"))
        .output()
        .expect("the Python test tools' python3 (with jsonschema and PyYAML) runs");
    assert!(
        out.status.success(),
        "the validator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: BTreeMap<String, Option<String>> =
        serde_json::from_slice(&out.stdout).expect("the validator's JSON");
    doc.into_iter()
        .map(|(k, v)| (PathBuf::from(k), v))
        .collect()
}

/// The OpenSpec roots to check: the fixtures', the example's, and one made of the
/// compatibility corpus (`fixtures/compat/`, and the shared one when it is there).
fn roots(sb: &Sandbox) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = [
        "valid",
        "preflight",
        "multi-repo",
        "diagnostics",
        "catalog-invalid",
    ]
    .iter()
    .map(|f| repo_root().join("fixtures").join(f))
    .collect();
    roots.push(repo_root().join("examples/profile"));
    sb.openspec_root("compat");
    let mut corpora = vec![repo_root().join("fixtures/compat/changeloop")];
    if let Some(shared) = std::env::var_os("PROOFGRAPH_SHARED") {
        corpora.push(PathBuf::from(shared).join("compat/changeloop"));
    }
    for (i, corpus) in corpora.iter().enumerate() {
        for change in fs_err::read_dir(corpus).expect("the corpus").flatten() {
            if !change.path().is_dir() {
                continue;
            }
            let name = format!("c{i}-{}", change.file_name().to_string_lossy());
            let dest = sb.work().join("compat/openspec/changes").join(&name);
            fs_err::create_dir_all(&dest).expect("mkdir");
            fs_err::write(dest.join("proposal.md"), "# compat\n").expect("write");
            for file in ["execution.yaml", "evidence.yaml"] {
                if change.path().join(file).is_file() {
                    fs_err::copy(change.path().join(file), dest.join(file)).expect("copy");
                }
            }
        }
    }
    roots.push(sb.work().join("compat"));
    roots
}

#[test]
fn every_file_is_valid_by_its_schema_exactly_when_validate_finds_its_shape_sound() {
    let sb = Sandbox::new();
    // The schemas, as `schema` prints them.
    let schemas = sb.path().join("schemas");
    fs_err::create_dir_all(&schemas).expect("mkdir");
    for kind in ["execution", "evidence", "catalog"] {
        let run = sb.run(&sb.work(), &["schema", kind]);
        run.expect_code(0);
        let _: Value = serde_json::from_str(&run.stdout).expect("a JSON document");
        fs_err::write(schemas.join(format!("{kind}.json")), &run.stdout).expect("write");
        let json = sb.run(&sb.work(), &["schema", kind, "--json"]);
        json.expect_code(0);
        assert_eq!(json.json()["kind"], kind);
    }
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    // file → the codes `validate` reported in it, and whether any was an error.
    let mut findings: BTreeMap<PathBuf, (BTreeSet<String>, bool)> = BTreeMap::new();
    for root in roots(&sb) {
        if root.join("proofgraph.yaml").is_file() {
            files.push((root.join("proofgraph.yaml"), "catalog"));
        }
        if let Ok(changes) = fs_err::read_dir(root.join("openspec/changes")) {
            for change in changes.flatten() {
                for (file, kind) in [
                    ("execution.yaml", "execution"),
                    ("evidence.yaml", "evidence"),
                ] {
                    let path = change.path().join(file);
                    if path.is_file() {
                        files.push((path, kind));
                    }
                }
            }
        }
        let run = sb.run(&root, &["validate", "--all", "--json"]);
        let doc = run.json();
        for item in doc["items"].as_array().into_iter().flatten() {
            for issue in item["issues"].as_array().into_iter().flatten() {
                let Some(path) = issue["path"].as_str() else {
                    continue;
                };
                let entry = findings.entry(root.join(path)).or_default();
                entry
                    .0
                    .insert(issue["code"].as_str().unwrap_or_default().to_owned());
                entry.1 |= issue["level"] == "ERROR";
            }
        }
    }
    assert!(files.len() > 60, "the files found: {}", files.len());
    let verdicts = schema_errors(&schemas, &files);
    let (mut sound, mut unsound) = (0, 0);
    let mut wrong = Vec::new();
    for (path, kind) in &files {
        let schema_error = verdicts.get(path).cloned().flatten();
        let (codes, any_error) = findings.get(path).cloned().unwrap_or_default();
        let shape: Vec<&String> = codes
            .iter()
            .filter(|c| SHAPE.contains(&c.as_str()))
            .collect();
        if !shape.is_empty() {
            unsound += 1;
            if schema_error.is_none() {
                wrong.push(format!(
                    "{} ({kind}): validate says {shape:?}, the schema accepts it",
                    path.display()
                ));
            }
        } else if !any_error && !codes.contains("unknown_key") {
            sound += 1;
            if let Some(e) = schema_error {
                wrong.push(format!(
                    "{} ({kind}): validate accepts it, the schema says {e}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} disagreements:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        sound > 20 && unsound > 10,
        "sound {sound}, unsound {unsound}"
    );
}
