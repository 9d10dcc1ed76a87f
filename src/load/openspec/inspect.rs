//! OpenSpec root health, as `openspec doctor` and store resolution judge it:
//! `openspec/` and its config file must exist; `specs/`, `changes/` and
//! `changes/archive/` must be directories when they exist.

use std::path::Path;

use crate::base::diagnostic::{Code, Diagnostic};

/// The outcome of inspecting a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// Whether the root is usable.
    pub healthy: bool,
    /// What is wrong, in OpenSpec's order and wording.
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Directory,
    File,
    Other,
    Missing,
}

fn kind(path: &Path) -> Kind {
    match fs_err::metadata(path) {
        Ok(m) if m.is_dir() => Kind::Directory,
        Ok(m) if m.is_file() => Kind::File,
        Ok(_) => Kind::Other,
        Err(_) => Kind::Missing,
    }
}

fn problem(code: Code, message: &str, target: &str) -> Diagnostic {
    Diagnostic::error(code, message).surface(target)
}

/// Inspects the OpenSpec root at `root`.
pub fn inspect(root: &Path) -> Inspection {
    let mut diagnostics = Vec::new();
    let unhealthy = |diagnostics| Inspection {
        healthy: false,
        diagnostics,
    };
    match kind(root) {
        Kind::Directory => {}
        Kind::Missing => {
            diagnostics.push(problem(
                Code::OpenspecStoreRootMissing,
                "Store root does not exist.",
                "store.root",
            ));
            return unhealthy(diagnostics);
        }
        Kind::File | Kind::Other => {
            diagnostics.push(problem(
                Code::OpenspecStoreRootNotDirectory,
                "Store root is not a directory.",
                "store.root",
            ));
            return unhealthy(diagnostics);
        }
    }
    match kind(&root.join("openspec")) {
        Kind::Directory => {}
        Kind::Missing => {
            diagnostics.push(problem(
                Code::OpenspecRootMissing,
                "Missing openspec/ directory.",
                "openspec.root",
            ));
            return unhealthy(diagnostics);
        }
        Kind::File | Kind::Other => {
            diagnostics.push(problem(
                Code::OpenspecRootNotDirectory,
                "openspec/ exists but is not a directory.",
                "openspec.root",
            ));
            return unhealthy(diagnostics);
        }
    }
    let yaml = kind(&root.join("openspec/config.yaml"));
    let yml = kind(&root.join("openspec/config.yml"));
    let config_present = yaml == Kind::File || yml == Kind::File;
    if !config_present {
        if yaml != Kind::Missing || yml != Kind::Missing {
            diagnostics.push(problem(
                Code::OpenspecConfigNotFile,
                "OpenSpec config path exists but is not a file.",
                "openspec.config",
            ));
        } else {
            diagnostics.push(problem(
                Code::OpenspecConfigMissing,
                "Missing openspec/config.yaml or openspec/config.yml.",
                "openspec.config",
            ));
        }
    }
    let planning_dir = |diagnostics: &mut Vec<Diagnostic>, rel: &str, code: Code, target: &str| {
        let k = kind(&root.join(rel));
        if !matches!(k, Kind::Directory | Kind::Missing) {
            diagnostics.push(problem(
                code,
                &format!("{rel}/ exists but is not a directory."),
                target,
            ));
        }
        k
    };
    planning_dir(
        &mut diagnostics,
        "openspec/specs",
        Code::OpenspecSpecsNotDirectory,
        "openspec.specs",
    );
    let changes = planning_dir(
        &mut diagnostics,
        "openspec/changes",
        Code::OpenspecChangesNotDirectory,
        "openspec.changes",
    );
    if changes == Kind::Directory {
        planning_dir(
            &mut diagnostics,
            "openspec/changes/archive",
            Code::OpenspecArchiveNotDirectory,
            "openspec.archive",
        );
    }
    Inspection {
        healthy: config_present && diagnostics.is_empty(),
        diagnostics,
    }
}

/// The messages of an unhealthy inspection, joined as OpenSpec joins them.
pub fn problems(inspection: &Inspection) -> String {
    let joined = inspection
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    if joined.is_empty() {
        "OpenSpec root is missing or incomplete.".to_owned()
    } else {
        joined
    }
}
