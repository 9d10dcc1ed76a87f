//! What a repository's cached `setup` sees, and the key it is kept under: the files its
//! `setupInputs` select (by default the ecosystems' manifests and lockfiles) and the
//! identity of each. The executor keeps a setup's output under this key
//! (`run::setup`), and a provider's fingerprint names it (its `setup` component), so that
//! a changed lockfile reruns what the changed dependencies could change — even for a
//! provider whose own `inputs` leave the lockfile out.

use proofgraph_graph::pattern::{self, Sign};

use crate::observe::inputs::{FileEntry, Pattern, Snapshot};
use crate::store::sha256_hex;

/// The files whose content decides what a setup produces: manifests, lockfiles, and the
/// package managers' own configuration an install reads, at any depth of the repository.
pub const SETUP_INPUTS: [&str; 23] = [
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    ".npmrc",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "yarn.lock",
    ".yarnrc.yml",
    "bun.lock",
    "bun.lockb",
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "pyproject.toml",
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "requirements.txt",
    "Pipfile",
    "Pipfile.lock",
    "Gemfile",
    "Gemfile.lock",
];

/// The files a cached setup sees: those `patterns` (a repository's `setupInputs`) select,
/// or, without patterns, every file named as a manifest or lockfile in [`SETUP_INPUTS`], at
/// any depth. Patterns combine as `inputs` do (docs/inputs.md): in order, a `!` entry
/// removes what the entries before it selected, and a list that starts with one starts
/// from the default files. A pattern that is not a valid glob selects nothing (`validate`
/// reports it).
pub fn inputs<'s>(patterns: Option<&[String]>, snapshot: &'s Snapshot) -> Vec<&'s FileEntry> {
    let default =
        |f: &FileEntry| SETUP_INPUTS.contains(&f.path.rsplit('/').next().unwrap_or(&f.path));
    match patterns {
        Some(patterns) => {
            let compiled: Vec<(Sign, Pattern)> = patterns
                .iter()
                .filter_map(|p| {
                    let (sign, text) = pattern::split_sign(p);
                    Pattern::new(text).map(|pattern| (sign, pattern))
                })
                .collect();
            let entries: Vec<(Sign, &Pattern)> = compiled.iter().map(|(s, p)| (*s, p)).collect();
            let base: Vec<usize> = if pattern::starts_from_base(&entries, |e| e.0) {
                (0..snapshot.files.len())
                    .filter(|i| default(&snapshot.files[*i]))
                    .collect()
            } else {
                Vec::new()
            };
            pattern::apply(&entries, &snapshot.files, |f| f.path.as_str(), base)
                .selected
                .into_iter()
                .map(|i| &snapshot.files[i])
                .collect()
        }
        None => snapshot.files.iter().filter(|f| default(f)).collect(),
    }
}

/// The cache key of a repository's setup: its commands, the cached directories, the
/// declared `setupInputs` patterns and the identity of every file they select (what the
/// setup sees, and all it sees: [`inputs`]).
pub fn cache_key(
    setup: &[Vec<String>],
    cache_dirs: &[String],
    patterns: Option<&[String]>,
    inputs: &[&FileEntry],
) -> String {
    let mut text = String::from("proofgraph/setup-cache/v2\n");
    for argv in setup {
        text.push_str(&format!("argv {}\n", serde_json::Value::from(argv.clone())));
    }
    for dir in cache_dirs {
        text.push_str(&format!("cache {dir}\n"));
    }
    for pattern in patterns.into_iter().flatten() {
        text.push_str(&format!("pattern {pattern}\n"));
    }
    for f in inputs {
        text.push_str(&format!("input {} {}\n", f.path, f.id));
    }
    sha256_hex(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::inputs::FileKind;
    use proofgraph_graph::fingerprint::Digest;

    fn snapshot(paths: &[&str]) -> Snapshot {
        let mut files: Vec<FileEntry> = paths
            .iter()
            .map(|p| FileEntry {
                path: (*p).to_owned(),
                id: Digest::of(p.as_bytes()),
                kind: FileKind::File,
            })
            .collect();
        files.sort();
        Snapshot {
            dir: std::path::PathBuf::from("/repo"),
            files,
            rehashed: 0,
        }
    }

    fn seen(patterns: Option<&[&str]>, snap: &Snapshot) -> Vec<String> {
        let patterns: Option<Vec<String>> =
            patterns.map(|p| p.iter().map(|s| (*s).to_owned()).collect());
        inputs(patterns.as_deref(), snap)
            .into_iter()
            .map(|f| f.path.clone())
            .collect()
    }

    #[test]
    fn setup_inputs_combine_as_inputs_do() {
        let snap = snapshot(&[
            "Cargo.lock",
            "Cargo.toml",
            "examples/demo/Cargo.toml",
            "requirements/dev.txt",
            "requirements/docs.txt",
            "src/lib.rs",
        ]);
        assert_eq!(
            seen(None, &snap),
            ["Cargo.lock", "Cargo.toml", "examples/demo/Cargo.toml"]
        );
        // Only excludes: the default files but these.
        assert_eq!(
            seen(Some(&["!examples/**"]), &snap),
            ["Cargo.lock", "Cargo.toml"]
        );
        // In order; a later plain entry adds back.
        assert_eq!(
            seen(
                Some(&["requirements/*.txt", "!requirements/docs.txt", "Cargo.lock"]),
                &snap
            ),
            ["Cargo.lock", "requirements/dev.txt"]
        );
    }
}
