//! The OpenSpec store registry and store identity files, read exactly as the
//! `openspec` CLI (1.13.2) reads them, including its wording of problems.
//!
//! - Registry: `$XDG_DATA_HOME/openspec/stores/registry.yaml` (default
//!   `~/.local/share/openspec/...`): `{version: 1, stores: {<id>: {backend:
//!   {type: git, local_path, remote?, branch?}}}, repos?}`, strictly.
//! - Identity: `<store>/.openspec-store/store.yaml`: `{version: 1, id,
//!   remote?}`, strictly.
//!
//! Schema problems are worded as OpenSpec's schema library words them
//! (`stores.a.backend.type: Invalid input: expected "git"`), so that the
//! messages in `status` are the ones an OpenSpec user already knows.

use std::path::{Path, PathBuf};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::syntax::node::{Node, Value};
use crate::syntax::yaml;

/// The registry directory under the global data directory.
pub const STORES_DIR: &str = "stores";
/// The registry file name.
pub const REGISTRY_FILE: &str = "registry.yaml";
/// The identity directory inside a store.
pub const METADATA_DIR: &str = ".openspec-store";
/// The identity file name.
pub const METADATA_FILE: &str = "store.yaml";

/// The wording OpenSpec uses for its id grammar.
pub const KEBAB_ID_DESCRIPTION: &str =
    "must be kebab-case with lowercase letters, numbers, and single hyphen separators";
/// The fix OpenSpec gives for its id grammar.
pub const KEBAB_ID_FIX: &str =
    "Use kebab-case with lowercase letters, numbers, and single hyphen separators.";

/// One registered store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryEntry {
    /// The store id.
    pub id: String,
    /// The checkout's directory (`backend.local_path`).
    pub root: PathBuf,
}

/// A store's identity file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// The id the store says it has.
    pub id: String,
    /// The canonical remote, if recorded.
    pub remote: Option<String>,
}

/// The path of the registry under a global data directory.
pub fn registry_path(data_dir: &Path) -> PathBuf {
    data_dir.join(STORES_DIR).join(REGISTRY_FILE)
}

/// The path of a store's identity file.
pub fn metadata_path(store_root: &Path) -> PathBuf {
    store_root.join(METADATA_DIR).join(METADATA_FILE)
}

/// Whether `id` is an OpenSpec kebab id (`[a-z0-9]+(-[a-z0-9]+)*`).
pub fn is_kebab_id(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Checks a store id as OpenSpec does, returning its `invalid_store_id` error.
pub fn validate_store_id(id: &str) -> Result<(), Diagnostic> {
    let problem = if id.is_empty() {
        "Store id must not be empty".to_owned()
    } else if id == "." || id == ".." {
        format!("Store id must not be '{id}'")
    } else if id.contains(['/', '\\']) {
        "Store id must not contain path separators".to_owned()
    } else if !is_kebab_id(id) {
        format!("Store id {KEBAB_ID_DESCRIPTION}")
    } else {
        return Ok(());
    };
    Err(Diagnostic::error(Code::InvalidStoreId, problem)
        .surface("store.id")
        .fix(KEBAB_ID_FIX))
}

/// Reads the registry: `Ok(None)` when there is no registry file.
pub fn read_registry(data_dir: &Path) -> Result<Option<Vec<RegistryEntry>>, Diagnostic> {
    let path = registry_path(data_dir);
    if !fs_err::metadata(&path).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let invalid = |message: String| {
        Diagnostic::error(Code::InvalidStoreRegistry, format!("Invalid {message}"))
            .surface("store.registry")
            .fix(format!("Repair or remove {}.", path.display()))
    };
    let text = fs_err::read_to_string(&path)
        .map_err(|err| invalid(format!("store registry state: {err}")))?;
    let root = yaml::parse(&text).map_err(|err| {
        invalid(format!(
            "store registry state: {}",
            describe_yaml_error(&err)
        ))
    })?;
    let mut issues = Vec::new();
    let mut entries = Vec::new();
    check_registry(&root, &mut issues, &mut entries);
    if !issues.is_empty() {
        return Err(invalid(format!(
            "store registry state: {}",
            issues.join("; ")
        )));
    }
    if let Some(bad) = entries.iter().find(|e| !is_kebab_id(&e.id)) {
        return Err(invalid(format!(
            "store id: '{}': {KEBAB_ID_DESCRIPTION}",
            bad.id
        )));
    }
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Some(entries))
}

/// Reads a store's identity file: `Ok(None)` when it does not exist.
pub fn read_metadata(store_root: &Path) -> Result<Option<Metadata>, Diagnostic> {
    let path = metadata_path(store_root);
    let invalid = |message: String| {
        Diagnostic::error(
            Code::InvalidStoreMetadata,
            format!("Invalid store metadata state: {message}"),
        )
        .surface("store.metadata")
        .fix("Repair .openspec-store/store.yaml.")
    };
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(invalid(err.to_string())),
    };
    let root = yaml::parse(&text).map_err(|err| invalid(describe_yaml_error(&err)))?;
    let mut issues = Vec::new();
    let (id, remote) = check_metadata(&root, &mut issues);
    if !issues.is_empty() {
        return Err(invalid(issues.join("; ")));
    }
    let id = id.unwrap_or_default();
    validate_store_id(&id)?;
    Ok(Some(Metadata { id, remote }))
}

fn describe_yaml_error(err: &crate::syntax::parse::ParseError) -> String {
    use crate::syntax::parse::ParseErrorKind;
    let what = match &err.kind {
        ParseErrorKind::Syntax(message) => message.clone(),
        ParseErrorKind::TooDeep => "nesting is too deep".to_owned(),
        ParseErrorKind::DuplicateKey { .. } => "Map keys must be unique".to_owned(),
        ParseErrorKind::MultipleDocuments => "Source contains multiple documents".to_owned(),
        ParseErrorKind::Unsupported(message) => message.clone(),
    };
    format!("{what} at line {}, column {}", err.pos.line, err.pos.column)
}

/// The type name OpenSpec's schema library reports for a received value.
fn received(node: Option<&Node>) -> &'static str {
    match node.map(|n| &n.value) {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Seq(_)) => "array",
        Some(Value::Map(_)) => "object",
    }
}

fn at(path: &[&str]) -> String {
    if path.is_empty() {
        "root".to_owned()
    } else {
        path.join(".")
    }
}

fn expect_one(node: Option<&Node>, path: &[&str], issues: &mut Vec<String>) {
    let is_one = matches!(node.map(|n| &n.value), Some(Value::Number(n)) if n.parse::<f64>().ok() == Some(1.0));
    if !is_one {
        issues.push(format!("{}: Invalid input: expected 1", at(path)));
    }
}

/// Checks a required or optional string with an optional minimum length of 1.
fn expect_string(
    node: Option<&Node>,
    path: &[&str],
    required: bool,
    nonempty: bool,
    issues: &mut Vec<String>,
) -> Option<String> {
    match node.map(|n| &n.value) {
        None if !required => None,
        Some(Value::String(s)) => {
            if nonempty && s.is_empty() {
                issues.push(format!(
                    "{}: Too small: expected string to have >=1 characters",
                    at(path)
                ));
            }
            Some(s.clone())
        }
        _ => {
            issues.push(format!(
                "{}: Invalid input: expected string, received {}",
                at(path),
                received(node)
            ));
            None
        }
    }
}

/// Checks a strict object: returns its entries, after recording unknown keys
/// (which OpenSpec reports after the known fields).
fn expect_object<'n>(
    node: Option<&'n Node>,
    path: &[&str],
    expected: &str,
    issues: &mut Vec<String>,
) -> Option<&'n [(crate::syntax::node::Key, Node)]> {
    match node.and_then(Node::as_map) {
        Some(entries) => Some(entries),
        None => {
            issues.push(format!(
                "{}: Invalid input: expected {expected}, received {}",
                at(path),
                received(node)
            ));
            None
        }
    }
}

fn unknown_keys(
    entries: &[(crate::syntax::node::Key, Node)],
    known: &[&str],
    path: &[&str],
    issues: &mut Vec<String>,
) {
    let unknown: Vec<String> = entries
        .iter()
        .filter(|(k, _)| !known.contains(&k.name.as_str()))
        .map(|(k, _)| format!("\"{}\"", k.name))
        .collect();
    match unknown.len() {
        0 => {}
        1 => issues.push(format!("{}: Unrecognized key: {}", at(path), unknown[0])),
        _ => issues.push(format!(
            "{}: Unrecognized keys: {}",
            at(path),
            unknown.join(", ")
        )),
    }
}

fn check_registry(root: &Node, issues: &mut Vec<String>, out: &mut Vec<RegistryEntry>) {
    let Some(top) = expect_object(Some(root), &[], "object", issues) else {
        return;
    };
    expect_one(root.get("version"), &["version"], issues);
    if let Some(stores) = expect_object(root.get("stores"), &["stores"], "record", issues) {
        for (key, entry) in stores {
            let id = key.name.as_str();
            let Some(fields) = expect_object(Some(entry), &["stores", id], "object", issues) else {
                continue;
            };
            let backend = entry.get("backend");
            if let Some(backend_fields) =
                expect_object(backend, &["stores", id, "backend"], "object", issues)
            {
                let backend = backend.expect("an object was found, so the key is present");
                let base = ["stores", id, "backend"];
                let is_git = backend.get("type").and_then(Node::as_str) == Some("git");
                if !is_git {
                    issues.push(format!(
                        "{}.type: Invalid input: expected \"git\"",
                        at(&base)
                    ));
                }
                let local = expect_string(
                    backend.get("local_path"),
                    &["stores", id, "backend", "local_path"],
                    true,
                    true,
                    issues,
                );
                expect_string(
                    backend.get("remote"),
                    &["stores", id, "backend", "remote"],
                    false,
                    true,
                    issues,
                );
                expect_string(
                    backend.get("branch"),
                    &["stores", id, "backend", "branch"],
                    false,
                    true,
                    issues,
                );
                unknown_keys(
                    backend_fields,
                    &["type", "local_path", "remote", "branch"],
                    &base,
                    issues,
                );
                if let Some(local) = local {
                    out.push(RegistryEntry {
                        id: id.to_owned(),
                        root: PathBuf::from(local),
                    });
                }
            }
            unknown_keys(fields, &["backend"], &["stores", id], issues);
        }
    }
    unknown_keys(top, &["version", "stores", "repos"], &[], issues);
}

fn check_metadata(root: &Node, issues: &mut Vec<String>) -> (Option<String>, Option<String>) {
    let Some(top) = expect_object(Some(root), &[], "object", issues) else {
        return (None, None);
    };
    expect_one(root.get("version"), &["version"], issues);
    let id = expect_string(root.get("id"), &["id"], true, false, issues);
    let remote = expect_string(root.get("remote"), &["remote"], false, true, issues);
    unknown_keys(top, &["version", "id", "remote"], &[], issues);
    (id, remote)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry_issues(text: &str) -> Vec<String> {
        let root = yaml::parse(text).expect("yaml");
        let mut issues = Vec::new();
        check_registry(&root, &mut issues, &mut Vec::new());
        issues
    }

    #[test]
    fn registry_problems_use_openspec_wording() {
        assert_eq!(
            registry_issues("version: 2\nstores: {}\n"),
            vec!["version: Invalid input: expected 1"]
        );
        assert_eq!(
            registry_issues("version: 1\nstores: {a: {backend: {type: git, local_path: \"\"}}}\n"),
            vec!["stores.a.backend.local_path: Too small: expected string to have >=1 characters"]
        );
        assert_eq!(
            registry_issues("version: 1\nstores: {a: {backend: {type: svn, local_path: /x}}}\n"),
            vec!["stores.a.backend.type: Invalid input: expected \"git\""]
        );
        assert_eq!(
            registry_issues("version: 1\nextra: 1\nstores: {}\n"),
            vec!["root: Unrecognized key: \"extra\""]
        );
        assert_eq!(
            registry_issues("hello\n"),
            vec!["root: Invalid input: expected object, received string"]
        );
        assert_eq!(
            registry_issues("- a\n"),
            vec!["root: Invalid input: expected object, received array"]
        );
        assert_eq!(
            registry_issues("version: 1\nstores: {a: {backend: {type: git}}}\n"),
            vec!["stores.a.backend.local_path: Invalid input: expected string, received undefined"]
        );
    }

    #[test]
    fn store_ids_follow_openspec() {
        assert!(validate_store_id("team-specs").is_ok());
        let message = |id: &str| validate_store_id(id).expect_err(id).message;
        assert_eq!(message(""), "Store id must not be empty");
        assert_eq!(message(".."), "Store id must not be '..'");
        assert_eq!(message("a/b"), "Store id must not contain path separators");
        assert_eq!(
            message("Bad_ID"),
            format!("Store id {KEBAB_ID_DESCRIPTION}")
        );
    }
}
