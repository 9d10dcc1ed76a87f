//! What a repository's cached `setup` sees, and the key it is kept under: the files its
//! `setupInputs` select (by default the ecosystems' manifests and lockfiles) and the
//! identity of each. The executor keeps a setup's output under this key
//! (`run::setup`), and a provider's fingerprint names it (its `setup` component), so that
//! a changed lockfile reruns what the changed dependencies could change — even for a
//! provider whose own `inputs` leave the lockfile out.

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
/// any depth. A pattern that is not a valid glob selects nothing (`validate` reports it).
pub fn inputs<'s>(patterns: Option<&[String]>, snapshot: &'s Snapshot) -> Vec<&'s FileEntry> {
    match patterns {
        Some(patterns) => {
            let patterns: Vec<Pattern> = patterns.iter().filter_map(|p| Pattern::new(p)).collect();
            snapshot
                .files
                .iter()
                .filter(|f| patterns.iter().any(|p| p.matches(&f.path)))
                .collect()
        }
        None => snapshot
            .files
            .iter()
            .filter(|f| SETUP_INPUTS.contains(&f.path.rsplit('/').next().unwrap_or(&f.path)))
            .collect(),
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
