//! The compatibility check: `validate` reads `evidence.yaml`/`execution.yaml` files written
//! for Change Loop, the Node.js workflow whose files proofgraph reads unchanged, with no
//! error.
//!
//! The suite reads `fixtures/compat/changeloop/`: changes written for this project (our own
//! claims, scenarios and commands) that hold every *shape* of the shared compatibility
//! corpus (see [`shapes_of_change`]) and give every diagnostic `validate` gives on it; the
//! shapes and the diagnostics are pinned by snapshots. The corpus itself (real files of
//! other projects) is never copied into the repository: when `PROOFGRAPH_SHARED` names the
//! shared folder (`.ci/run` sets it when `../shared/compat/changeloop` exists next to the
//! clone), the same tests also validate the whole corpus, fail naming each shape or
//! diagnostic of it that no fixture has, and fail on a fixture that holds the corpus's
//! text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Sandbox, repo_root};

/// The files of a change this corpus is about.
const CONFIG_FILES: [&str; 2] = ["evidence.yaml", "execution.yaml"];

/// The fixtures written for the compatibility check.
fn compat_dir() -> PathBuf {
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

/// The name of a change: its directory, relative to its corpus.
fn change_name(corpus: &Path, change: &Path) -> String {
    change
        .strip_prefix(corpus)
        .expect("a change lies in its corpus")
        .display()
        .to_string()
}

/// Validates every change of `corpus` as one workspace and asserts no error; returns, per
/// change, the diagnostics given (`LEVEL code`, sorted).
fn validate_corpus(corpus: &Path) -> BTreeMap<String, Vec<String>> {
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
    let mut given = BTreeMap::new();
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
        let mut codes: Vec<String> = issues
            .iter()
            .map(|issue| {
                format!(
                    "{} {}",
                    issue["level"].as_str().expect("level"),
                    issue["code"].as_str().expect("code")
                )
            })
            .collect();
        codes.sort();
        given.insert(change_name(corpus, &leaves[index]), codes);
    }
    run.expect_code(0);
    assert_eq!(
        doc["summary"]["totals"]["items"].as_u64(),
        Some(leaves.len() as u64)
    );
    given
}

/// Every diagnostic of a validated corpus, with the changes that give it.
fn diagnostics_of(validated: &BTreeMap<String, Vec<String>>) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (change, codes) in validated {
        for code in codes.iter().collect::<BTreeSet<_>>() {
            out.entry(code.as_str()).or_default().push(change.as_str());
        }
    }
    out
}

#[test]
fn validate_accepts_every_fixture_and_the_shared_corpus_without_error() {
    let here = validate_corpus(&compat_dir());
    // The corpus first: what it has and the fixtures lack says what to write, where a
    // snapshot diff only says what changed.
    if let Some(shared) = shared_compat_dir() {
        let there = validate_corpus(&shared);
        let given = diagnostics_of(&here);
        let missing: Vec<String> = diagnostics_of(&there)
            .into_iter()
            .filter(|(code, _)| !given.contains_key(code))
            .map(|(code, changes)| format!("{code}  (in {})", changes.join(", ")))
            .collect();
        assert!(
            missing.is_empty(),
            "the shared corpus gives diagnostics no fixture gives; write a change that gives each into `fixtures/compat/changeloop/`:\n{}",
            missing.join("\n")
        );
    }
    let listing: String = here
        .iter()
        .flat_map(|(change, codes)| codes.iter().map(move |code| format!("{change}: {code}\n")))
        .collect();
    insta::assert_snapshot!("fixture_diagnostics", listing);
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
const SELECTING: [&str; 9] = [
    "version",
    "adapter",
    "capability",
    "reportFormat",
    "inputMode",
    "impact",
    "network",
    "claims",
    "resultProtocol",
];
/// Lists whose every element selects behaviour.
const SELECTING_LISTS: [&str; 2] = ["capabilities", "outputs"];

/// The shapes of one change: which of its files exist, every key path (list positions
/// collapsed to `[]`, the keys of [`NAMED_MAPS`] to `*`) with the JSON type found there,
/// every empty map or list (`= {}`, `= []`), every value of a key in [`SELECTING`] or an
/// element of a list in [`SELECTING_LISTS`], and the traits of the text the readers treat
/// apart (see [`text_shapes`]). Every real file so far is JSON text, so the shapes are
/// read as JSON; a file that is not fails here, loudly.
fn shapes_of_change(dir: &Path) -> BTreeSet<String> {
    let files: Vec<&str> = CONFIG_FILES
        .into_iter()
        .filter(|f| dir.join(f).is_file())
        .collect();
    let mut out = BTreeSet::from([format!("files: {}", files.join(" "))]);
    for file in files {
        let path = dir.join(file);
        let text = fs_err::read_to_string(&path).expect("read corpus file");
        text_shapes(file, &text, &mut out);
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

/// What of a file's text, beyond its values, the readers treat apart: characters past
/// ASCII (columns count characters, not bytes), CRLF line ends, and backslash escapes
/// (some JSON escapes are not YAML's, which is why JSON text is read as JSON).
fn text_shapes(file: &str, text: &str, out: &mut BTreeSet<String>) {
    let traits = [
        (!text.is_ascii(), "characters past ASCII"),
        (text.contains("\r\n"), "CRLF line ends"),
        (text.contains('\\'), "backslash escapes"),
    ];
    for (_, name) in traits.into_iter().filter(|(has, _)| *has) {
        out.insert(format!("{file} text: {name}"));
    }
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
        Value::Object(map) if map.is_empty() => {
            out.insert(format!("{path} = {{}}"));
        }
        Value::Array(items) if items.is_empty() => {
            out.insert(format!("{path} = []"));
        }
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

/// Every shape of a corpus, with the changes that have it.
fn shapes_of_corpus(corpus: &Path) -> BTreeMap<String, Vec<String>> {
    let mut shapes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for leaf in changes_of(corpus) {
        let name = change_name(corpus, &leaf);
        for shape in shapes_of_change(&leaf) {
            shapes.entry(shape).or_default().push(name.clone());
        }
    }
    shapes
}

#[test]
fn the_fixtures_hold_every_shape_of_the_shared_corpus() {
    let here = shapes_of_corpus(&compat_dir());
    // The corpus first, as for the diagnostics.
    if let Some(shared) = shared_compat_dir() {
        let missing: Vec<String> = shapes_of_corpus(&shared)
            .into_iter()
            .filter(|(shape, _)| !here.contains_key(shape))
            .map(|(shape, changes)| format!("{shape}  (in {})", changes.join(", ")))
            .collect();
        assert!(
            missing.is_empty(),
            "the shared corpus has shapes no fixture has; write a change that has each into `fixtures/compat/changeloop/` (our own claims and commands, not the corpus's text):\n{}",
            missing.join("\n")
        );
    }
    let listing: String = here.keys().map(|s| format!("{s}\n")).collect();
    insta::assert_snapshot!("fixture_shapes", listing);
}

/// The shortest string of the corpus that no fixture may hold: longer than every value
/// that selects behaviour (`dependency-supply-chain`, 23 characters, is the longest), so
/// what a fixture must share with the corpus passes and prose or a command does not.
const COPIED_TEXT_CHARS: usize = 24;

/// Every string value of a file, its map keys left out.
fn strings_of(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            out.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_of(v, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Every string value of a corpus's files, with the file that holds it.
fn strings_of_corpus(corpus: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for leaf in changes_of(corpus) {
        for file in CONFIG_FILES
            .map(|f| leaf.join(f))
            .iter()
            .filter(|p| p.is_file())
        {
            let text = fs_err::read_to_string(file).expect("read corpus file");
            let value: Value = serde_json::from_str(&text).expect("corpus files are JSON text");
            let mut strings = BTreeSet::new();
            strings_of(&value, &mut strings);
            for s in strings {
                out.entry(s).or_insert_with(|| {
                    file.strip_prefix(corpus)
                        .expect("in its corpus")
                        .display()
                        .to_string()
                });
            }
        }
    }
    out
}

/// The fixtures are written for this project, not copied from the corpus
/// (`../shared/DESIGN.md`: use the corpus from the shared folder, never copy it in): no
/// fixture string holds a string of the corpus of [`COPIED_TEXT_CHARS`] characters or more.
#[test]
fn the_fixtures_hold_no_text_of_the_shared_corpus() {
    let here = strings_of_corpus(&compat_dir());
    assert!(
        here.keys().any(|s| s.chars().count() >= COPIED_TEXT_CHARS),
        "the fixtures hold no string this check could compare"
    );
    let Some(shared) = shared_compat_dir() else {
        return;
    };
    let mut copied = Vec::new();
    for (theirs, there) in strings_of_corpus(&shared) {
        if theirs.chars().count() < COPIED_TEXT_CHARS {
            continue;
        }
        for (mine, file) in &here {
            if mine.contains(theirs.as_str()) {
                copied.push(format!("`{file}` holds {theirs:?} of `{there}`"));
            }
        }
    }
    assert!(
        copied.is_empty(),
        "fixtures hold text of the shared corpus; write it in your own words:\n{}",
        copied.join("\n")
    );
}
