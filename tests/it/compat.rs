//! Real `evidence.yaml`/`execution.yaml` files from projects that already use these
//! formats: `validate` accepts every one of them with no error.
//!
//! The suite reads the copies in `fixtures/compat/changeloop/` (sources and licences in
//! `fixtures/compat/README.md`): a subset of the shared compatibility corpus that holds
//! every shape the corpus has (see [`shapes_of_change`]), pinned by a snapshot. When
//! `PROOFGRAPH_SHARED` names the shared folder (`.ci/run` sets it when `../shared` exists
//! next to the clone), the same tests also validate the whole shared corpus and fail on a
//! shape or a diagnostic of it that the fixtures lack, or on a fixture that is not the
//! shared file it was copied from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Sandbox, repo_root};

/// The files of a change this corpus is about.
const CONFIG_FILES: [&str; 2] = ["evidence.yaml", "execution.yaml"];

/// The corpus in the repository.
pub(crate) fn compat_dir() -> PathBuf {
    repo_root().join("fixtures/compat/changeloop")
}

/// The shared corpus, when `PROOFGRAPH_SHARED` names the shared folder. Set to anything
/// else, it fails loudly rather than checking less than asked.
fn shared_compat_dir() -> Option<PathBuf> {
    let shared = PathBuf::from(std::env::var_os("PROOFGRAPH_SHARED")?);
    let dir = shared.join("compat/changeloop");
    assert!(
        dir.is_dir(),
        "PROOFGRAPH_SHARED is `{}`, which holds no `compat/changeloop`; unset it or point it at the shared folder",
        shared.display()
    );
    Some(dir)
}

/// Every directory of a corpus that holds an evidence or execution file, sorted.
fn leaf_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs_err::read_dir(dir)
        .expect("read corpus")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    if entries
        .iter()
        .any(|p| CONFIG_FILES.iter().any(|f| p.ends_with(f)))
    {
        out.push(dir.to_path_buf());
    }
    for p in entries.into_iter().filter(|p| p.is_dir()) {
        leaf_dirs(&p, out);
    }
}

fn changes_of(corpus: &Path) -> Vec<PathBuf> {
    let mut leaves = Vec::new();
    leaf_dirs(corpus, &mut leaves);
    leaves
}

/// Validates every change of `corpus` as one workspace and asserts no error; returns the
/// diagnostics given, as `LEVEL code`.
fn validate_corpus(corpus: &Path) -> BTreeSet<String> {
    let leaves = changes_of(corpus);
    assert!(
        !leaves.is_empty(),
        "no change found under `{}`",
        corpus.display()
    );
    let sb = Sandbox::new();
    sb.openspec_root("");
    for (i, leaf) in leaves.iter().enumerate() {
        for file in CONFIG_FILES {
            let src = leaf.join(file);
            if src.exists() {
                let bytes = fs_err::read(&src).expect("read corpus file");
                sb.write(&format!("openspec/changes/c{i:02}/{file}"), bytes);
            }
        }
    }
    let run = sb.run(&sb.work(), &["validate", "--all", "--json"]);
    let doc = run.json();
    let mut given = BTreeSet::new();
    for item in doc["items"].as_array().expect("items") {
        let issues: Vec<&Value> = item["issues"].as_array().into_iter().flatten().collect();
        let index: usize = item["id"]
            .as_str()
            .and_then(|s| s[1..].parse().ok())
            .expect("item id");
        let errors: Vec<_> = issues.iter().filter(|i| i["level"] == "ERROR").collect();
        assert!(
            errors.is_empty(),
            "{}: {errors:#?}",
            leaves[index].display()
        );
        for issue in issues {
            given.insert(format!(
                "{} {}",
                issue["level"].as_str().expect("level"),
                issue["code"].as_str().expect("code")
            ));
        }
    }
    run.expect_code(0);
    assert_eq!(
        doc["summary"]["totals"]["items"].as_u64(),
        Some(leaves.len() as u64)
    );
    given
}

#[test]
fn validate_accepts_every_real_file_without_error() {
    let here = validate_corpus(&compat_dir());
    if let Some(shared) = shared_compat_dir() {
        let there = validate_corpus(&shared);
        let missing: Vec<_> = there.difference(&here).collect();
        assert!(
            missing.is_empty(),
            "the shared corpus gives diagnostics the fixtures do not: {missing:?}; copy a change that gives them into `fixtures/compat/changeloop/`"
        );
    }
}

/// Maps whose keys are names the file chose (a provider's, an environment variable's),
/// not keys of the format.
const NAMED_MAPS: [&str; 6] = [
    "providers",
    "services",
    "env",
    "contract",
    "expectHeader",
    "mutantKillers",
];
/// Keys whose value selects behaviour, so each value is a shape of its own.
const SELECTING: [&str; 8] = [
    "version",
    "adapter",
    "capability",
    "reportFormat",
    "inputMode",
    "impact",
    "network",
    "claims",
];
/// Lists whose every element selects behaviour.
const SELECTING_LISTS: [&str; 2] = ["capabilities", "outputs"];

/// The shapes of one change: which of its files exist, every key path (list positions
/// collapsed to `[]`, the keys of [`NAMED_MAPS`] to `*`) with the JSON type found there,
/// and every value of a key in [`SELECTING`] or an element of a list in
/// [`SELECTING_LISTS`]. Every real file so far is JSON text, so the shapes are read as
/// JSON; a file that is not fails here, loudly.
fn shapes_of_change(dir: &Path) -> BTreeSet<String> {
    let files: Vec<&str> = CONFIG_FILES
        .into_iter()
        .filter(|f| dir.join(f).is_file())
        .collect();
    let mut out = BTreeSet::from([format!("files: {}", files.join(" "))]);
    for file in files {
        let path = dir.join(file);
        let text = fs_err::read_to_string(&path).expect("read corpus file");
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "`{}` is not JSON text ({e}); teach `shapes_of_change` to read it",
                path.display()
            )
        });
        walk(&value, file, None, false, None, &mut out);
    }
    out
}

fn walk(
    value: &Value,
    path: &str,
    key: Option<&str>,
    named: bool,
    list_of: Option<&str>,
    out: &mut BTreeSet<String>,
) {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(format!("{path}: {kind}"));
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if named {
                    walk(v, &format!("{path}.*"), None, false, None, out);
                } else {
                    let inner = NAMED_MAPS.contains(&k.as_str());
                    walk(v, &format!("{path}.{k}"), Some(k), inner, None, out);
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                walk(v, &format!("{path}[]"), None, false, key, out);
            }
        }
        scalar => {
            if key.is_some_and(|k| SELECTING.contains(&k))
                || list_of.is_some_and(|k| SELECTING_LISTS.contains(&k))
            {
                out.insert(format!("{path} = {scalar}"));
            }
        }
    }
}

/// Every shape of a corpus, with the changes (relative to the corpus) that have it.
fn shapes_of_corpus(corpus: &Path) -> BTreeMap<String, Vec<String>> {
    let mut shapes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for leaf in changes_of(corpus) {
        let name = leaf
            .strip_prefix(corpus)
            .expect("a change lies in its corpus")
            .display()
            .to_string();
        for shape in shapes_of_change(&leaf) {
            shapes.entry(shape).or_default().push(name.clone());
        }
    }
    shapes
}

/// Every corpus file, relative to the corpus.
fn corpus_files(corpus: &Path) -> BTreeSet<String> {
    changes_of(corpus)
        .iter()
        .flat_map(|leaf| CONFIG_FILES.iter().map(move |f| leaf.join(f)))
        .filter(|p| p.is_file())
        .map(|p| {
            p.strip_prefix(corpus)
                .expect("a file lies in its corpus")
                .display()
                .to_string()
        })
        .collect()
}

#[test]
fn the_fixtures_hold_every_shape_of_the_corpus() {
    let fixtures = compat_dir();
    let here = shapes_of_corpus(&fixtures);
    let listing: String = here.keys().map(|s| format!("{s}\n")).collect();
    insta::assert_snapshot!("fixture_shapes", listing);

    // Every fixture is attributed, and every attribution names a fixture.
    let sources = fs_err::read_to_string(fixtures.join("SOURCES.tsv")).expect("read SOURCES.tsv");
    let attributed: BTreeSet<String> = sources
        .lines()
        .skip(1)
        .map(|row| {
            row.split('\t')
                .nth(3)
                .expect("a local_path column")
                .to_owned()
        })
        .collect();
    assert_eq!(attributed, corpus_files(&fixtures), "SOURCES.tsv");

    if let Some(shared) = shared_compat_dir() {
        for file in corpus_files(&fixtures) {
            assert!(
                fs_err::read(fixtures.join(&file)).expect("read fixture")
                    == fs_err::read(shared.join(&file)).expect("read the shared file"),
                "`{file}` is not the shared corpus's file of that name: fixtures are real files, copied unedited"
            );
        }
        let missing: Vec<String> = shapes_of_corpus(&shared)
            .into_iter()
            .filter(|(shape, _)| !here.contains_key(shape))
            .map(|(shape, changes)| format!("{shape}  (in {})", changes.join(", ")))
            .collect();
        assert!(
            missing.is_empty(),
            "the shared corpus has shapes no fixture has; copy one change that has each into `fixtures/compat/changeloop/` (with its SOURCES.tsv rows):\n{}",
            missing.join("\n")
        );
    }
}
