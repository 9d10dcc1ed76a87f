//! The diagnostic catalog: `docs/diagnostics.md` lists exactly the codes the
//! code can emit, and every code is triggered by at least one test (its
//! `snake_case` name appears as a string literal in a test source).

use std::collections::BTreeSet;

use proofgraph::base::diagnostic::Code;

use crate::support::repo_root;

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

fn test_sources(dir: &std::path::Path, out: &mut String) {
    for entry in fs_err::read_dir(dir).expect("read tests").flatten() {
        let path = entry.path();
        if path.is_dir() {
            test_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("catalog.rs") {
            out.push_str(&fs_err::read_to_string(&path).expect("read test source"));
        }
    }
}

#[test]
fn every_code_is_triggered_by_a_test() {
    let mut sources = String::new();
    test_sources(&repo_root().join("tests"), &mut sources);
    let fixtures: BTreeSet<String> =
        fs_err::read_dir(repo_root().join("fixtures/diagnostics/openspec/changes"))
            .expect("read fixtures")
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
    let untested: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|code| !sources.contains(&format!("\"{code}\"")) && !fixtures.contains(*code))
        .collect();
    assert!(untested.is_empty(), "codes no test triggers: {untested:?}");
}
