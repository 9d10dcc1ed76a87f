//! OpenSpec root resolution, identical to the `openspec` CLI 1.13.2.
//!
//! Precedence, as OpenSpec's `root-selection` applies it:
//! 1. `--store <id>`: the registered store's checkout (`store`).
//! 2. The nearest ancestor whose `openspec/` has a planning shape (`specs/` or
//!    `changes/`) or a config file. A planning shape wins (`nearest`; a
//!    `store:` pointer beside it is ignored with a warning); a config-only
//!    directory with a `store:` pointer resolves that store (`declared`).
//! 3. The global `defaultStore` in OpenSpec's `config.json` (`global_default`).
//! 4. Registered stores but no root: `no_root_with_registered_stores`.
//! 5. Otherwise `implicit` (the current directory) for commands that create,
//!    `no_openspec_root` for the rest.
//!
//! Messages, targets and fixes are OpenSpec's own, so that a user of both
//! tools sees one vocabulary. The differential test in `tests/it/root.rs`
//! runs the real `openspec` binary on the same trees.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::inspect::{inspect, problems};
use super::store::{self, validate_store_id};
use crate::base::diagnostic::{Code, Diagnostic};
pub use crate::base::env::Env;
use crate::base::paths::normalize;
use crate::syntax::node::Value;
use crate::syntax::yaml;

/// How the root was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `--store <id>`.
    Store,
    /// A `store:` pointer in a config-only `openspec/`.
    Declared,
    /// OpenSpec's global `defaultStore`.
    GlobalDefault,
    /// The nearest ancestor with `openspec/`.
    Nearest,
    /// The current directory, for commands that create.
    Implicit,
}

/// A resolved OpenSpec root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The root directory (canonical).
    pub path: PathBuf,
    /// How it was chosen.
    pub source: Source,
    /// The store id when a store was selected.
    pub store_id: Option<String>,
}

/// Whether the current directory may stand in for a missing root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implicit {
    /// Commands that create may use the current directory.
    Allowed,
    /// Commands that inspect fail with `no_openspec_root`.
    Refused,
}

/// A resolution: the root and warnings about how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The root.
    pub root: Root,
    /// Warnings (`root_pointer_ignored`, `root_pointer_invalid`).
    pub notes: Vec<Diagnostic>,
}

/// Resolves the OpenSpec root for a command.
pub fn resolve(
    env: &Env,
    store: Option<&str>,
    implicit: Implicit,
) -> Result<Resolution, Diagnostic> {
    let data_dir = env.data_dir();
    if let Some(id) = store {
        return Ok(Resolution {
            root: resolve_store(&data_dir, id, Source::Store)?,
            notes: Vec::new(),
        });
    }
    if let Some(nearest) = find_qualifying_root(&env.cwd) {
        return resolve_nearest_or_declared(&data_dir, nearest);
    }
    if let Some(id) = global_default_store(&env.config_file()) {
        let root = resolve_store(&data_dir, &id, Source::GlobalDefault).map_err(|err| {
            let fix = if matches!(err.code, Code::UnknownStore | Code::NoRegisteredStores) {
                Some(format!(
                    "Register the store (openspec store register <path> --id {id}) or clear the stale global default (openspec config unset defaultStore)."
                ))
            } else {
                err.fix.clone()
            };
            Diagnostic { message: format!("Global defaultStore '{id}': {}", err.message), fix, ..err }
        })?;
        return Ok(Resolution {
            root,
            notes: Vec::new(),
        });
    }
    let ids: Vec<String> = store::read_registry(&data_dir)?
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.id)
        .collect();
    if !ids.is_empty() {
        let listed = ids.join(", ");
        return Err(Diagnostic::error(
            Code::NoRootWithRegisteredStores,
            format!(
                "No OpenSpec root found in the current directory or its ancestors. Registered stores: {listed}. Pass --store <id> to use one, or run openspec init to create a local root."
            ),
        )
        .surface("openspec.root")
        .fix(format!("Rerun with --store <id> (registered: {listed}) or run openspec init.")));
    }
    match implicit {
        Implicit::Refused => Err(Diagnostic::error(
            Code::NoOpenspecRoot,
            "No OpenSpec root found from the current directory.",
        )
        .surface("openspec.root")
        .fix("Run openspec init to create a root here.")),
        Implicit::Allowed => Ok(Resolution {
            root: Root {
                path: canonical(&env.cwd),
                source: Source::Implicit,
                store_id: None,
            },
            notes: Vec::new(),
        }),
    }
}

/// Resolves a registered store's root.
fn resolve_store(data_dir: &Path, id: &str, source: Source) -> Result<Root, Diagnostic> {
    validate_store_id(id)?;
    let entries = store::read_registry(data_dir)?.unwrap_or_default();
    let Some(entry) = entries.iter().find(|e| e.id == id) else {
        if entries.is_empty() {
            return Err(Diagnostic::error(
                Code::NoRegisteredStores,
                format!("Unknown store '{id}'. No stores are registered."),
            )
            .surface("store.id")
            .fix(format!(
                "Run openspec store setup {id} or openspec store register <path> first."
            )));
        }
        let listed = entries
            .iter()
            .map(|e| e.id.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Diagnostic::error(
            Code::UnknownStore,
            format!("Unknown store '{id}'. Registered stores: {listed}."),
        )
        .surface("store.id")
        .fix("Pass a registered store id, or run openspec store list."));
    };
    let doctor = format!("Run openspec store doctor {id} to inspect it.");
    let mismatch = |message: String| {
        Diagnostic::error(Code::StoreIdentityMismatch, format!("{message} {doctor}"))
            .surface("store.metadata")
            .fix(&doctor)
    };
    match store::read_metadata(&entry.root)? {
        None => {
            let path = normalize(&store::metadata_path(&entry.root));
            return Err(mismatch(format!(
                "Store '{id}' is missing identity metadata at {}.",
                path.display()
            )));
        }
        Some(metadata) if metadata.id != id => {
            return Err(mismatch(format!(
                "Store '{id}' metadata id '{}' does not match its registered id.",
                metadata.id
            )));
        }
        Some(_) => {}
    }
    let inspection = inspect(&entry.root);
    if !inspection.healthy {
        return Err(Diagnostic::error(
            Code::UnhealthyStoreRoot,
            format!(
                "Store '{id}' does not have a healthy OpenSpec root at {}: {} {doctor}",
                entry.root.display(),
                problems(&inspection)
            ),
        )
        .surface("openspec.root")
        .fix(&doctor));
    }
    Ok(Root {
        path: canonical(&entry.root),
        source,
        store_id: Some(id.to_owned()),
    })
}

/// A `store:` pointer in `openspec/config.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pointer {
    /// No config file.
    NoConfig,
    /// A config file without a `store:` value.
    Absent(PathBuf),
    /// A `store:` string.
    Value(PathBuf, String),
    /// A config file that is not YAML.
    Unparseable(PathBuf),
    /// A `store:` value that is not a string.
    NonString(PathBuf),
}

impl Pointer {
    fn file(&self) -> Option<&Path> {
        match self {
            Pointer::NoConfig => None,
            Pointer::Absent(p)
            | Pointer::Value(p, _)
            | Pointer::Unparseable(p)
            | Pointer::NonString(p) => Some(p),
        }
    }
}

/// Reads the `store:` pointer of the `openspec/` directory under `root`.
pub fn read_pointer(root: &Path) -> Pointer {
    let yaml_path = root.join("openspec/config.yaml");
    let yml_path = root.join("openspec/config.yml");
    let path = if yaml_path.exists() {
        yaml_path
    } else if yml_path.exists() {
        yml_path
    } else {
        return Pointer::NoConfig;
    };
    let Ok(text) = fs_err::read_to_string(&path) else {
        return Pointer::Unparseable(path);
    };
    let Ok(node) = yaml::parse(&text) else {
        return Pointer::Unparseable(path);
    };
    match node.get("store").map(|n| &n.value) {
        None => Pointer::Absent(path),
        Some(Value::String(s)) => Pointer::Value(path, s.clone()),
        Some(_) => Pointer::NonString(path),
    }
}

/// Whether `openspec/specs` or `openspec/changes` under `root` is a planning
/// directory (and not a store that happens to be named `specs` or `changes`).
pub fn has_planning_shape(root: &Path) -> bool {
    ["openspec/specs", "openspec/changes"].iter().any(|rel| {
        let dir = root.join(rel);
        dir.is_dir() && !store::metadata_path(&dir).exists()
    })
}

fn find_nearest_with_openspec(start: &Path) -> Option<PathBuf> {
    let mut dir = search_start(start);
    loop {
        if dir.join("openspec").is_dir() {
            return Some(canonical(&dir));
        }
        dir = dir.parent()?.to_path_buf();
    }
}

fn search_start(start: &Path) -> PathBuf {
    let resolved = absolute(start);
    match fs_err::metadata(&resolved) {
        Ok(m) if m.is_dir() => canonical(&resolved),
        Ok(_) => resolved
            .parent()
            .map_or_else(|| resolved.clone(), canonical),
        Err(_) => resolved,
    }
}

/// The nearest ancestor whose `openspec/` qualifies as a root: it has a
/// planning shape or a config file. A bare `openspec/` (the `~/openspec/<id>`
/// store layout) does not capture the directories below it.
pub fn find_qualifying_root(start: &Path) -> Option<PathBuf> {
    let mut candidate = find_nearest_with_openspec(start);
    while let Some(dir) = candidate {
        if has_planning_shape(&dir) || read_pointer(&dir).file().is_some() {
            return Some(dir);
        }
        let parent = dir.parent()?.to_path_buf();
        candidate = find_nearest_with_openspec(&parent);
    }
    None
}

fn resolve_nearest_or_declared(
    data_dir: &Path,
    nearest: PathBuf,
) -> Result<Resolution, Diagnostic> {
    let pointer = read_pointer(&nearest);
    if has_planning_shape(&nearest) {
        let notes = pointer_notes(&pointer);
        return Ok(Resolution {
            root: Root {
                path: nearest,
                source: Source::Nearest,
                store_id: None,
            },
            notes,
        });
    }
    let (file, id) = match pointer {
        Pointer::NoConfig | Pointer::Absent(_) => {
            return Ok(Resolution {
                root: Root {
                    path: nearest,
                    source: Source::Nearest,
                    store_id: None,
                },
                notes: Vec::new(),
            });
        }
        Pointer::Unparseable(file) => {
            let file = file.display();
            return Err(Diagnostic::error(
                Code::InvalidStorePointer,
                format!("Invalid store declaration in {file}: the config file could not be read as YAML."),
            )
            .surface("store.pointer")
            .fix(format!("Fix the YAML syntax in {file}.")));
        }
        Pointer::NonString(file) => {
            let file = file.display();
            return Err(Diagnostic::error(
                Code::InvalidStorePointer,
                format!("Invalid store declaration in {file}: the store key must be a single store id string."),
            )
            .surface("store.pointer")
            .fix(format!("Edit {file} so the store key is a registered store id, or remove it.")));
        }
        Pointer::Value(file, id) => (file, id),
    };
    let root = resolve_store(data_dir, &id, Source::Declared).map_err(|err| {
        let fix = if err.code == Code::UnknownStore {
            Some(format!(
                "Register the store (openspec store register <path> --id {id}) or edit {} to name a registered store.",
                file.display()
            ))
        } else {
            err.fix.clone()
        };
        Diagnostic { message: format!("Declared in {}: {}", file.display(), err.message), fix, ..err }
    })?;
    Ok(Resolution {
        root,
        notes: Vec::new(),
    })
}

/// Warnings about a `store:` pointer beside a real root, worded as
/// `openspec doctor` words them.
pub fn pointer_notes(pointer: &Pointer) -> Vec<Diagnostic> {
    let note = |code: Code, message: String, fix: String| {
        Diagnostic::warning(code, message)
            .surface("relationships")
            .fix(fix)
    };
    match pointer {
        Pointer::Value(file, id) => {
            let file = file.display();
            vec![note(
                Code::RootPointerIgnored,
                format!(
                    "{file} declares store '{id}', but this directory is a real OpenSpec root; the declaration is ignored."
                ),
                format!(
                    "Remove the store: line from {file}, or move the planning files into the store."
                ),
            )]
        }
        Pointer::Unparseable(file) | Pointer::NonString(file) => {
            let problem = if matches!(pointer, Pointer::Unparseable(_)) {
                "the config file could not be read as YAML"
            } else {
                "the store key must be a single store id string"
            };
            let file = file.display();
            vec![note(
                Code::RootPointerInvalid,
                format!("{file} declares a store: pointer that cannot be used ({problem})."),
                format!("Fix or remove the store: line in {file}."),
            )]
        }
        Pointer::NoConfig | Pointer::Absent(_) => Vec::new(),
    }
}

/// OpenSpec's global `defaultStore`, when its config file sets one.
fn global_default_store(config_file: &Path) -> Option<String> {
    let text = fs_err::read_to_string(config_file).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    match value.get("defaultStore")? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// The canonical form of an existing path; a lexically absolute, normalized
/// path otherwise (as OpenSpec's `canonicalizeExistingPath` falls back).
pub fn canonical(path: &Path) -> PathBuf {
    fs_err::canonicalize(path).unwrap_or_else(|_| absolute(path))
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        normalize(path)
    } else {
        normalize(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
    }
}
