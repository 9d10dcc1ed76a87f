//! What `cache gc` keeps: every receipt that is current (or the latest) for some change of
//! the workspace, with the blobs it names, and the setup trees the repositories need now;
//! then the input trees no receipt left in the store names, let go once per git
//! repository.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use crate::attest::envelope::TrustedKey;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::workspace::Workspace;
use crate::session::evaluate::Evaluated;
use crate::store::{Sha256, Store};

/// The receipts current for a change's fingerprints (one per output the action cache
/// answers), sorted, each once.
pub fn current_receipts(e: &Evaluated) -> Vec<Sha256> {
    let mut out = Vec::new();
    for (id, _, p) in e.loaded.prepared.graph.providers() {
        for o in &p.outputs {
            let Some(fp) = e.fingerprints.of_receipt(id, &o.under) else {
                continue;
            };
            if let Some(sha) = e
                .store
                .action(&Store::action_key(fp, &o.under, &o.capability))
            {
                out.push(sha);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// What the workspace's changes need kept.
#[derive(Debug, Default)]
pub struct Roots {
    /// Receipts and the blobs they name (input listing, artifacts).
    pub blobs: HashSet<Sha256>,
    /// The setup trees the repositories need now; `None` when no change said (then every
    /// setup tree stays).
    pub setup_keys: Option<BTreeSet<String>>,
}

impl Roots {
    /// Adds what change `e` needs: its current receipts and the latest of each output,
    /// with what they name, and its repositories' current setup keys.
    pub fn add(&mut self, e: &Evaluated) {
        let keys = self.setup_keys.get_or_insert_with(Default::default);
        if let Some(catalog) = &e.loaded.workspace.catalog {
            keys.extend(crate::run::setup::current_keys(
                catalog,
                &e.observed.snapshots,
            ));
        }
        let name = &e.loaded.change.name;
        let mut shas = current_receipts(e);
        for (_, _, p) in e.loaded.prepared.graph.providers() {
            for o in &p.outputs {
                shas.extend(e.store.latest(name, &o.under, &o.capability));
            }
        }
        self.receipts(&e.store, &e.trusted, shas);
    }

    /// Keeps `shas` and, for each that verifies, the blobs it names. One that does not
    /// verify is kept alone (what it names cannot be known).
    pub fn receipts(
        &mut self,
        store: &Store,
        trusted: &[TrustedKey],
        shas: impl IntoIterator<Item = Sha256>,
    ) {
        for sha in shas {
            self.blobs.insert(sha);
            if let Some(v) = crate::proof::receipt::read(store, &sha, trusted) {
                self.blobs.insert(v.proof.inputs);
                self.blobs
                    .extend(v.proof.artifacts.iter().map(|a| a.sha256));
            }
        }
    }
}

/// The diagnostic that stops `cache gc` before it removes anything: change `name` cannot be
/// evaluated, so its current receipts cannot be known.
pub fn unevaluated(name: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InvalidValue,
        format!("`cache gc` removes nothing while change `{name}` cannot be evaluated: its current receipts cannot be known"),
    )
    .surface("cache.gc")
    .fix("Fix the change (`proofgraph validate`), then run `cache gc` again.")
}

/// `dirs` sorted, keeping the first of those `key` puts in one group and leaving out those
/// it gives none (one directory per git repository: the repositories of a workspace may
/// share one).
pub fn one_per<K: Eq + std::hash::Hash>(
    mut dirs: Vec<&Path>,
    key: impl Fn(&Path) -> Option<K>,
) -> Vec<&Path> {
    dirs.sort();
    let mut seen = HashSet::new();
    dirs.into_iter()
        .filter(|dir| key(dir).is_some_and(|k| seen.insert(k)))
        .collect()
}

/// Lets go of the input trees no receipt in the store (nor in `roots`) names, in each git
/// repository of the workspace once: how many refs went, and a warning per repository
/// whose refs could not be deleted.
pub fn prune_input_trees(
    store: &Store,
    workspace: &Workspace,
    roots: &Roots,
) -> (u64, Vec<Diagnostic>) {
    let kept: HashSet<String> = store
        .action_targets()
        .iter()
        .chain(roots.blobs.iter())
        .flat_map(|sha| crate::proof::receipt::named_trees(store, sha))
        .collect();
    let dirs: Vec<&Path> = workspace
        .repositories
        .values()
        .map(|r| r.dir.as_path())
        .collect();
    let mut removed = 0;
    let mut status = Vec::new();
    for dir in one_per(dirs, crate::observe::input_trees::git_dir_of) {
        match crate::observe::input_trees::prune(dir, &kept, crate::store::MIN_GC_AGE) {
            Ok(n) => removed += n as u64,
            Err(e) => status.push(
                Diagnostic::warning(
                    Code::InputsNotRecorded,
                    format!("the input trees of removed receipts could not be let go: {e}"),
                )
                .surface("cache.gc")
                .fix("Check that the repository's refs are writable; `cache gc` tries again next time."),
            ),
        }
    }
    (removed, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_directory_per_repository_the_first_in_order_and_none_outside_one() {
        let dirs = vec![
            Path::new("/w/b"),
            Path::new("/w/a/sub"),
            Path::new("/w/a"),
            Path::new("/tmp/loose"),
        ];
        // `/w/a` and `/w/a/sub` share a git directory; `/tmp/loose` is in none.
        let git_dir = |dir: &Path| -> Option<&'static str> {
            if dir.starts_with("/w/a") {
                Some("/w/a/.git")
            } else if dir.starts_with("/w/b") {
                Some("/w/b/.git")
            } else {
                None
            }
        };
        assert_eq!(
            one_per(dirs, git_dir),
            [Path::new("/w/a"), Path::new("/w/b")]
        );
    }

    #[test]
    fn a_receipt_that_does_not_verify_is_kept_alone() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Store::open(dir.path()).expect("a store");
        let not_a_receipt = store.put(b"not an envelope").expect("a blob");
        let missing = Sha256::from_bytes([9; 32]);
        let mut roots = Roots::default();
        roots.receipts(&store, &[], [not_a_receipt, missing]);
        assert_eq!(roots.blobs, HashSet::from([not_a_receipt, missing]));
        assert_eq!(roots.setup_keys, None, "no change said which setup trees");
    }

    #[test]
    fn the_refusal_names_the_change_and_says_nothing_was_removed() {
        let d = unevaluated("add-login");
        assert!(d.is_error());
        assert!(d.message.contains("change `add-login`"));
        assert!(d.message.starts_with("`cache gc` removes nothing"));
    }
}
