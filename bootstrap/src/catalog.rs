//! `proofgraph.yaml` as `init --write` edits it: the setup a written candidate needs
//! (cargo's fetch into `.cargo-home` for a crate that runs `--offline`), added to its
//! repository when the repository has none. Nothing else of the file changes: a new file
//! is written whole, an existing one gets two lines after its repository's `path`, and
//! the result is read back and compared with what was asked.

use proofgraph_syntax::node::Node;
use proofgraph_syntax::parse::read_document;
use serde_json::Value;

use crate::edit::data;
use crate::edit::render::yaml_flow;
use crate::model::RepositorySetup;

/// Why `proofgraph.yaml` was not edited (the caller says what to add by hand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotEdited(pub String);

/// The text of `proofgraph.yaml` (`existing`: its text, `None` when there is none) with
/// `setup` given to repository `repo` at `path` (a new file declares it), or why not.
pub fn add_setup(
    existing: Option<&str>,
    repo: &str,
    path: &str,
    setup: &RepositorySetup,
) -> Result<String, NotEdited> {
    let command = yaml_flow(&Value::Array(vec![strings(&setup.setup)]));
    let cache = yaml_flow(&strings(&setup.cache));
    let Some(text) = existing else {
        let text = format!(
            "# Written by `proofgraph evidence init`: the setup its providers need (docs/setup.md).\nversion: 1\nrepositories:\n  {repo}:\n    path: {}\n    setup: {command}\n    setupCache: {cache}\n",
            yaml_flow(&Value::String(path.to_owned()))
        );
        return verify(None, &text, repo, setup).map(|()| text);
    };
    let (_, read) = read_document(text);
    let root = read
        .ok()
        .flatten()
        .ok_or_else(|| NotEdited("proofgraph.yaml does not read as a mapping".to_owned()))?;
    let entry = root
        .get("repositories")
        .and_then(|r| r.get(repo))
        .ok_or_else(|| NotEdited(format!("proofgraph.yaml declares no repository `{repo}`")))?;
    if entry.flow || entry.as_map().is_none() {
        return Err(NotEdited(format!(
            "repository `{repo}` is not written as a block mapping"
        )));
    }
    if entry.get("setup").is_some() || entry.get("setupCache").is_some() {
        return Err(NotEdited(format!(
            "repository `{repo}` already has a setup"
        )));
    }
    // After the line its first key is on, at that key's indentation.
    let (first, value) = entry
        .as_map()
        .and_then(|m| m.first())
        .ok_or_else(|| NotEdited(format!("repository `{repo}` is empty")))?;
    let line_start = text[..first.span.start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..first.span.start];
    if !indent.chars().all(|c| c == ' ') {
        return Err(NotEdited(format!(
            "repository `{repo}`'s first key is not on a line of its own"
        )));
    }
    let after = text[value.span.end..]
        .find('\n')
        .map_or(text.len(), |i| value.span.end + i + 1);
    if value_spans_lines(text, value) {
        return Err(NotEdited(format!(
            "repository `{repo}`'s first value spans lines"
        )));
    }
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len() + 200);
    out.push_str(&text[..after]);
    if !out.ends_with('\n') {
        out.push_str(newline);
    }
    out.push_str(&format!("{indent}setup: {command}{newline}"));
    out.push_str(&format!("{indent}setupCache: {cache}{newline}"));
    out.push_str(&text[after..]);
    verify(Some(&root), &out, repo, setup).map(|()| out)
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

fn value_spans_lines(text: &str, node: &Node) -> bool {
    text.get(node.span.range())
        .is_some_and(|t| t.contains('\n'))
}

/// That `text` reads back as `before` with exactly `setup` and `setupCache` added to
/// repository `repo`.
fn verify(
    before: Option<&Node>,
    text: &str,
    repo: &str,
    setup: &RepositorySetup,
) -> Result<(), NotEdited> {
    let failed = |why: String| NotEdited(format!("the edit does not read back: {why}"));
    let (_, read) = read_document(text);
    let after = read
        .map_err(|e| failed(e.kind.to_string()))?
        .ok_or_else(|| failed("no document".to_owned()))?;
    let after = data::to_json(&after).map_err(|_| failed("a number".to_owned()))?;
    let mut expected = match before {
        Some(node) => data::to_json(node).map_err(|_| failed("a number".to_owned()))?,
        None => {
            serde_json::json!({"version": 1, "repositories": {repo: {"path": after["repositories"][repo]["path"].clone()}}})
        }
    };
    let entry = expected
        .get_mut("repositories")
        .and_then(|r| r.get_mut(repo))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| failed(format!("no repository `{repo}`")))?;
    entry.insert(
        "setup".to_owned(),
        Value::Array(vec![strings(&setup.setup)]),
    );
    entry.insert("setupCache".to_owned(), strings(&setup.cache));
    if after == expected {
        Ok(())
    } else {
        Err(failed(format!("expected {expected}, read {after}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch() -> RepositorySetup {
        RepositorySetup {
            setup: vec![
                "sh".to_owned(),
                "-c".to_owned(),
                "touch src/lib.rs && CARGO_HOME=.cargo-home cargo fetch".to_owned(),
            ],
            cache: vec![".cargo-home".to_owned()],
        }
    }

    #[test]
    fn a_new_file_declares_the_repository_with_its_setup() {
        let text = add_setup(None, "root", ".", &fetch()).expect("written");
        assert!(
            text.contains("  root:\n    path: .\n    setup: [[sh, -c, "),
            "{text}"
        );
        assert!(text.ends_with("    setupCache: [.cargo-home]\n"), "{text}");
    }

    #[test]
    fn an_existing_file_gets_two_lines_after_the_repository_s_first_key_and_keeps_every_other_byte()
    {
        let before = "version: 1  # the format\nhostPaths: [\"~/.cargo\"]\nrepositories:\n  # the API\n  api:\n    path: api   # here\n    caches: [cargo-build]\n  web:\n    path: web\n";
        let after = add_setup(Some(before), "api", "api", &fetch()).expect("edited");
        assert_eq!(
            after,
            before.replace(
                "    path: api   # here\n",
                "    path: api   # here\n    setup: [[sh, -c, \"touch src/lib.rs && CARGO_HOME=.cargo-home cargo fetch\"]]\n    setupCache: [.cargo-home]\n"
            )
        );
    }

    #[test]
    fn what_it_cannot_edit_safely_it_leaves_alone_saying_why() {
        let cases = [
            (
                "version: 1\nrepositories:\n  api: {path: api}\n",
                "block mapping",
            ),
            (
                "version: 1\nrepositories:\n  api:\n    path: api\n    setup: [[make]]\n",
                "already has a setup",
            ),
            (
                "version: 1\nrepositories:\n  web:\n    path: web\n",
                "no repository",
            ),
            ("- a\n- b\n", "no repository"),
        ];
        for (text, why) in cases {
            let err = add_setup(Some(text), "api", "api", &fetch()).expect_err(text);
            assert!(err.0.contains(why), "{text}: {}", err.0);
        }
    }
}
