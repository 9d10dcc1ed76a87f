//! The catalogs the docs keep, checked against the code. `docs/evidence.md`
//! lists exactly the capability names `graph/src/id.rs` knows (the field reference of each
//! file is generated from the decoders' key lists: `docs.rs`). The diagnostic catalog:
//! `docs/diagnostics.md` lists exactly the codes the
//! code can emit, and every code is asserted emitted by at least one test:
//! named as a literal in `assert_emits!(findings, "code")`, in the list of
//! `assert_codes!(findings, [..])` or in `emitted("code")` (see
//! `support.rs`), or by a change of `fixtures/diagnostics/` named after it. A
//! literal anywhere else — a negative assertion, a message — does not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use proofgraph::base::diagnostic::Code;

use crate::support::repo_root;

/// The first column of every table row (`| `name` | …`) under the `## `
/// section `heading` of `docs/evidence.md`, in order, split at each table.
fn evidence_doc_tables(heading: &str) -> Vec<Vec<String>> {
    doc_tables("docs/evidence.md", heading)
}

/// The first column of every table row (`| `name` | …`) under the `## ` section `heading`
/// of the document at `file`, in order, split at each table.
fn doc_tables(file: &str, heading: &str) -> Vec<Vec<String>> {
    let text = fs_err::read_to_string(repo_root().join(file))
        .unwrap_or_else(|e| panic!("read {file}: {e}"));
    let mut tables: Vec<Vec<String>> = Vec::new();
    let mut inside = false;
    let mut in_table = false;
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(title) = line.strip_prefix("## ") {
            inside = title.trim() == heading;
            in_table = false;
            continue;
        }
        if !inside {
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table {
            tables.push(Vec::new());
            in_table = true;
        }
        if let (Some((name, _)), Some(table)) = (
            line.strip_prefix("| `")
                .and_then(|rest| rest.split_once('`')),
            tables.last_mut(),
        ) {
            table.push(name.to_owned());
        }
    }
    tables
}

#[test]
fn the_evidence_doc_lists_exactly_the_known_capabilities() {
    let tables = evidence_doc_tables("Capabilities");
    assert_eq!(tables.len(), 1, "one capability table: {tables:?}");
    let listed = &tables[0];
    let unique: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "a capability listed twice: {listed:?}"
    );
    let known: BTreeSet<&str> = proofgraph_graph::KNOWN_CAPABILITIES.into_iter().collect();
    let missing: Vec<_> = known.difference(&unique).collect();
    let unknown: Vec<_> = unique.difference(&known).collect();
    assert!(
        missing.is_empty(),
        "capabilities missing from docs/evidence.md: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "docs/evidence.md lists capabilities graph/src/id.rs does not know: {unknown:?}"
    );
}

fn documented_codes() -> BTreeSet<String> {
    let text = fs_err::read_to_string(repo_root().join("docs/diagnostics.md"))
        .expect("read docs/diagnostics.md");
    text.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(code, _)| code.to_owned()))
        .collect()
}

#[test]
fn the_docs_list_exactly_the_codes() {
    let documented = documented_codes();
    let emitted: BTreeSet<String> = Code::ALL.iter().map(|c| c.as_str().to_owned()).collect();
    let undocumented: Vec<_> = emitted.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&emitted).collect();
    assert!(
        undocumented.is_empty(),
        "codes missing from docs/diagnostics.md: {undocumented:?}"
    );
    assert!(
        stale.is_empty(),
        "docs/diagnostics.md lists codes that no longer exist: {stale:?}"
    );
}

/// The `.rs` files under `dir`, but this one.
fn test_sources(dir: &std::path::Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in fs_err::read_dir(dir).expect("read tests").flatten() {
        let path = entry.path();
        if path.is_dir() {
            test_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("catalog.rs") {
            let text = fs_err::read_to_string(&path).expect("read test source");
            out.push((path, text));
        }
    }
}

/// The asserting call sites: what follows `assert_emits!(`, `assert_codes!(`
/// or `emitted(` up to its closing parenthesis, with line comments left out.
/// Strings are skipped whole, so a parenthesis in one never ends a call.
fn asserting_calls(source: &str) -> Vec<(&'static str, String)> {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut calls = Vec::new();
    for name in ["assert_emits!(", "assert_codes!(", "emitted("] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(name) {
            let before = &rest[..at];
            let args = &rest[at + name.len()..];
            rest = args;
            // A definition (`fn emitted(`) or a longer name (`not_emitted(`) is no call.
            let prev = before.chars().next_back();
            if before.ends_with("fn ") || prev.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            calls.push((name, inside_call(args)));
        }
    }
    calls
}

/// The text of a call's arguments: up to the parenthesis that closes it.
fn inside_call(args: &str) -> String {
    let mut depth = 1;
    let mut chars = args.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return args[..i].to_owned();
                }
            }
            _ => {}
        }
    }
    panic!("an unclosed call: {args}")
}

/// The top-level arguments of a call (split at commas outside brackets and
/// strings).
fn arguments(call: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0;
    let mut chars = call.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let current = out.last_mut().expect("an argument");
                current.push(c);
                while let Some(c) = chars.next() {
                    current.push(c);
                    match c {
                        '\\' => current.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(String::new());
                continue;
            }
            _ => {}
        }
        out.last_mut().expect("an argument").push(c);
    }
    out.into_iter().map(|a| a.trim().to_owned()).collect()
}

/// The string literals of `text` that are exactly a `snake_case` word.
fn code_literals(text: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_owned)
        .collect()
}

/// Every code a test asserts is emitted, with where: the literal of
/// `assert_emits!(findings, "code", ..)` (its second argument only, never the
/// message), each literal of the list in `assert_codes!(findings, [..], ..)`,
/// and the literal of `emitted("code")`.
fn asserted_codes() -> BTreeMap<String, Vec<String>> {
    let mut sources = Vec::new();
    test_sources(&repo_root().join("tests"), &mut sources);
    let mut asserted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, source) in &sources {
        for (name, call) in asserting_calls(source) {
            let args = arguments(&call);
            let literals = match name {
                "assert_emits!(" => args.get(1).map(|a| code_literals(a)).unwrap_or_default(),
                "assert_codes!(" => args
                    .get(1)
                    .filter(|a| a.starts_with('['))
                    .map(|a| code_literals(a))
                    .unwrap_or_default(),
                _ => args.first().map(|a| code_literals(a)).unwrap_or_default(),
            };
            for code in literals {
                asserted
                    .entry(code)
                    .or_default()
                    .push(path.display().to_string());
            }
        }
    }
    asserted
}

/// The changes of `fixtures/diagnostics/`, each named after the code that
/// `diagnostics::every_fixture_change_triggers_the_code_it_is_named_after`
/// asserts it emits (`assert_emits!(item, id)`).
fn fixture_codes() -> BTreeSet<String> {
    fs_err::read_dir(repo_root().join("fixtures/diagnostics/openspec/changes"))
        .expect("read fixtures")
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect()
}

#[test]
fn every_code_is_asserted_emitted_by_a_test() {
    let asserted = asserted_codes();
    let fixtures = fixture_codes();
    let untested: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|code| !asserted.contains_key(*code) && !fixtures.contains(*code))
        .collect();
    assert!(
        untested.is_empty(),
        "codes no test asserts are emitted (with assert_emits!, assert_codes! or emitted()): {untested:?}"
    );
    // Every literal the asserting macros name is a code (a misspelt one would
    // count for nothing).
    let known: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let unknown: Vec<_> = asserted
        .iter()
        .filter(|(code, _)| !known.contains(code.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "asserted codes that do not exist: {unknown:?}"
    );
}

/// The scan counts positive assertions only.
#[test]
fn the_scan_counts_only_what_is_asserted_emitted() {
    let source = r#"
        assert_emits!(run.json(), "syntax_error", "not {}", "unknown_key");
        assert_codes!(doc["status"], ["wrong_type", "missing_field"], "{}", "duplicate_key");
        let cases = [("a", emitted("invalid_utf8"))];
        assert!(!run.stdout.contains("secret_too_short"));
        assert!(codes.iter().all(|c| c != "store_unusable"));
        // assert_emits!(doc, "interrupted")
        fn emitted(code: &str) {}
        not_emitted("file_unreadable");
        assert_emits!(doc, format!("(\"{}\"", x), "usage_error");
    "#;
    let mut found: Vec<String> = Vec::new();
    for (name, call) in asserting_calls(source) {
        let args = arguments(&call);
        let literals = match name {
            "assert_emits!(" => code_literals(&args[1]),
            "assert_codes!(" => code_literals(&args[1]),
            _ => code_literals(&args[0]),
        };
        found.extend(literals);
    }
    found.sort();
    assert_eq!(
        found,
        [
            "invalid_utf8",
            "missing_field",
            "syntax_error",
            "wrong_type"
        ]
    );
}

/// docs/workspaces.md's table of what of `proofgraph.yaml` a fingerprint binds lists exactly
/// the keys the decoder reads, each with the decision `catalog::BEARINGS` holds (a unit test
/// holds those equal to the decoder's key lists).
#[test]
fn the_workspaces_doc_says_of_every_catalog_key_whether_it_is_bound() {
    use proofgraph::load::config::catalog::{BEARINGS, Bearing, key_paths};
    let text = fs_err::read_to_string(repo_root().join("docs/workspaces.md")).expect("read");
    let section = text
        .split("\n## What of the catalog a fingerprint binds\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the section");
    let rows: Vec<(String, String)> = section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.strip_prefix("| `")?.split(" | ").collect();
            let key = cells.first()?.strip_suffix('`')?;
            Some((key.to_owned(), (*cells.get(1)?).to_owned()))
        })
        .collect();
    let documented: Vec<(String, String)> = BEARINGS
        .iter()
        .map(|(key, bearing)| {
            let word = match bearing {
                Bearing::Bound => "bound",
                Bearing::Unbound => "not bound",
            };
            ((*key).to_owned(), word.to_owned())
        })
        .collect();
    assert_eq!(
        rows, documented,
        "the table, in the order of catalog::BEARINGS"
    );
    let mut keys = key_paths();
    keys.sort();
    let mut listed: Vec<String> = rows.into_iter().map(|(k, _)| k).collect();
    listed.sort();
    assert_eq!(listed, keys, "every key the decoder reads");
}
