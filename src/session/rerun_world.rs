//! The world a receipt recorded, made again for `rerun`: every recorded tree had (found or
//! rebuilt, `observe::rebuild`) and checked against the receipt's input listing, written
//! out in a scratch directory, observed there and fingerprinted — and the provider's
//! wiring now checked, component by component, against the receipt's manifest
//! (`decide::drift::unwired`), so that a rerun never re-executes something else.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proofgraph_graph::fingerprint::Fingerprints;
use proofgraph_graph::{NodeId, RepoId};

use super::load::Loaded;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::workspace::Workspace;
use crate::observe::git_id::GitId;
use crate::observe::inputs::{FileEntry, Snapshot};
use crate::observe::listing::Listing;
use crate::observe::rebuild::{self, Wanted};
use crate::observe::repo_at_revision::Revision;
use crate::observe::world::Observed;
use crate::proof::receipt::{self, Proof};
use crate::store::Store;

/// A diagnostic for inputs that cannot be had again.
pub fn unbuildable(message: String, fix: &str) -> Diagnostic {
    Diagnostic::error(Code::InputsNotRebuildable, message)
        .surface("rerun")
        .fix(fix)
}

/// The recorded world, ready to run in.
#[derive(Debug)]
pub struct RecordedWorld {
    /// The workspace with each repository's directory in the scratch directory.
    pub workspace: Workspace,
    /// What was observed there.
    pub observed: Observed,
    /// The fingerprints computed from it.
    pub fingerprints: Fingerprints,
}

/// The receipt's input listing, which the store must hold.
pub fn listing(store: &Store, proof: &Proof) -> Result<Listing, Diagnostic> {
    if proof.trees.is_empty() {
        return Err(unbuildable(
            "the receipt records no input trees (it was written before receipts recorded them, or they could not be recorded)".to_owned(),
            "Prove the provider again (`prove --no-cache`); its new receipt records them.",
        ));
    }
    let bytes = store.get(&proof.inputs).ok_or_else(|| {
        unbuildable(
            "the receipt's input listing is not in the store".to_owned(),
            "Rerun it in the workspace that proved it, or `cache pull` its change first.",
        )
    })?;
    Listing::parse(&bytes).map_err(|e| {
        unbuildable(
            format!("the receipt's input listing does not read: failed to {e}"),
            "Prove the provider again; its new receipt binds a listing that reads.",
        )
    })
}

/// Makes the world of `proof` (a receipt of provider `node` of `loaded`) again under
/// `scratch`, and checks that the provider is wired as the receipt records.
pub fn make(
    path_var: Option<&std::ffi::OsString>,
    loaded: &Loaded,
    node: NodeId,
    proof: &Proof,
    listing: &Listing,
    scratch: &Path,
) -> Result<RecordedWorld, Vec<Diagnostic>> {
    let (workspace, snapshots) = write_out(loaded, node, proof, listing, scratch)?;
    let graph = &loaded.prepared.graph;
    let observed = crate::observe::world::observe_snapshots(
        &workspace,
        &loaded.change,
        graph,
        path_var,
        snapshots,
    )?;
    let fingerprints = graph
        .fingerprints_with(&observed.world, super::load::default_jobs())
        .map_err(|e| vec![Diagnostic::error(Code::InternalError, e.to_string())])?;
    // The wiring now against the wiring recorded, component by component, and a map's
    // entry by entry (`catalog.hostPaths`, `env.NODE_ENV`), as `explain` names them.
    let now = graph
        .manifest(&proof.provider, &observed.world, &fingerprints)
        .map(|m| receipt::components(&m))
        .map_err(|e| vec![Diagnostic::error(Code::InternalError, e.to_string())])?;
    let differing = crate::decide::drift::unwired(&proof.manifest, &now);
    if !differing.is_empty() {
        return Err(vec![unbuildable(
            format!(
                "provider `{}` is not wired as the receipt records ({} differ), so re-executing it now would prove something else",
                proof.provider,
                differing.join(", ")
            ),
            "Rerun where the change declares the provider as it was (check out that revision); `proofgraph explain` names what changed.",
        )]);
    }
    Ok(RecordedWorld {
        workspace,
        observed,
        fingerprints,
    })
}

/// Every recorded tree written out under `scratch/src/<repo>` (a repository the receipt
/// bound nothing of: empty), with the workspace pointing there and each one's snapshot.
fn write_out(
    loaded: &Loaded,
    node: NodeId,
    proof: &Proof,
    listing: &Listing,
    scratch: &Path,
) -> Result<(Workspace, BTreeMap<RepoId, Snapshot>), Vec<Diagnostic>> {
    let graph = &loaded.prepared.graph;
    let service_repos: BTreeSet<&RepoId> = graph
        .services_of(node)
        .into_iter()
        .filter_map(|s| graph.node(s).service()?.runs_in.as_ref())
        .collect();
    let mut rebuilt = loaded.workspace.clone();
    let mut snapshots: BTreeMap<RepoId, Snapshot> = BTreeMap::new();
    for (id, tree) in &proof.trees {
        let whole = service_repos.contains(id);
        let (files, revision) = recorded_files(loaded, proof, listing, id, tree, whole)?;
        let dir = scratch.join("src").join(id.as_str());
        written(
            fs_err::create_dir_all(&dir),
            "the inputs could not be written out",
        )?;
        revision.write_to(&dir).map_err(|e| {
            vec![unbuildable(
                format!("the input tree {tree} of repository `{id}` could not be written out: {e}"),
                "Check that .proofgraph/ is writable and the repository's objects are intact (`git fsck`).",
            )]
        })?;
        if let Some(target) = rebuilt.repositories.get_mut(id) {
            target.dir = dir.clone();
        }
        snapshots.insert(
            id.clone(),
            Snapshot {
                dir,
                files,
                rehashed: 0,
            },
        );
    }
    let trees: Vec<(&str, &[FileEntry])> = snapshots
        .iter()
        .map(|(id, s)| (id.as_str(), s.files.as_slice()))
        .collect();
    if let Some(missing) = rebuild::first_unrecorded(listing, &trees) {
        return Err(vec![unbuildable(
            format!("the receipt bound `{missing}`, which no recorded tree holds"),
            "Prove the provider again; its new receipt records every input.",
        )]);
    }
    // Repositories the receipt bound nothing of are empty here.
    for (id, r) in rebuilt.repositories.iter_mut() {
        if !snapshots.contains_key(id) {
            let dir = scratch.join("src").join(id.as_str());
            written(
                fs_err::create_dir_all(&dir),
                "the inputs could not be written out",
            )?;
            r.dir = dir.clone();
            snapshots.insert(
                id.clone(),
                Snapshot {
                    dir,
                    files: Vec::new(),
                    rehashed: 0,
                },
            );
        }
    }
    Ok((rebuilt, snapshots))
}

/// The files of the recorded tree `tree` of repository `id` (and the tree), checked
/// against the listing.
fn recorded_files(
    loaded: &Loaded,
    proof: &Proof,
    listing: &Listing,
    id: &RepoId,
    tree: &GitId,
    whole: bool,
) -> Result<(Vec<FileEntry>, Revision), Vec<Diagnostic>> {
    let Some(r) = loaded.workspace.repositories.get(id) else {
        return Err(vec![unbuildable(
            format!(
                "the receipt's inputs lie in repository `{id}`, which this workspace no longer has"
            ),
            "Add the repository back to proofgraph.yaml, or rerun where it is.",
        )]);
    };
    // Not here (a clone does not fetch `refs/proofgraph/inputs/`): rebuilt from the
    // commit the receipt names, or the one checked out, when it holds the same files.
    let excluded =
        whole.then(|| crate::observe::world::excluded_paths(&loaded.workspace.root, &r.dir));
    let revision = rebuild::recorded_tree(&Wanted {
        dir: &r.dir,
        repo: id.as_str(),
        tree,
        commit: proof.commits.get(id),
        listing,
        whole: excluded.as_deref(),
    })
    .map_err(|e| vec![unbuildable(e.to_string(), &e.fix())])?;
    let files = revision.files().map_err(|e| {
        vec![unbuildable(
            format!("the input tree {tree} of repository `{id}` cannot be read: {e}"),
            "Check the repository's objects (`git fsck`).",
        )]
    })?;
    // A service's repository is recorded whole; only the bound files are listed.
    if let Some(path) = rebuild::first_unlisted(listing, id.as_str(), &files, whole) {
        return Err(vec![unbuildable(
            format!(
                "the input tree {tree} of repository `{id}` does not hold what the receipt bound (`{path}`)"
            ),
            "The ref was changed after the receipt was written; it cannot be rerun from it.",
        )]);
    }
    Ok((files, revision))
}

/// A write into the scratch directory, or why it failed.
fn written<T>(result: std::io::Result<T>, what: &str) -> Result<T, Vec<Diagnostic>> {
    result.map_err(|e| {
        vec![unbuildable(
            format!("{what}: {e}"),
            "Check that .proofgraph/ is writable.",
        )]
    })
}
