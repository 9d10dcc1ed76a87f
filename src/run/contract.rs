//! The adapter that runs in-process: `contract-digest` compares a shared contract's bytes
//! in every repository that names it, starting no process. It ends as a command would
//! (exit 0 when every side is identical, 1 otherwise, with a reason naming each side's
//! digest), so it is judged and recorded like one.

use std::collections::{BTreeMap, BTreeSet};

use proofgraph_graph::RepoId;
use proofgraph_graph::graph::ProviderNode;

use crate::decide::judge::Ended;
use crate::load::workspace::Workspace;
use crate::observe::inputs::{FileKind, Snapshot, blob_identity};
use crate::proof::receipt::Exit;
use crate::store::sha256_hex;

/// One repository's copy of the contract, as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Side {
    repo: RepoId,
    path: String,
    /// `None`: not there (or unreadable).
    bytes: Option<Vec<u8>>,
}

/// Compares the contract's bytes in every named repository of the workspace (those it
/// does not know are left out): how the comparison ended, and the reason a mismatch
/// gives every non-passing verdict.
pub(super) fn contract_digest(
    p: &ProviderNode,
    workspace: &Workspace,
    snapshots: &BTreeMap<RepoId, Snapshot>,
) -> (Ended, Option<String>) {
    compare(&sides(p, workspace), snapshots)
}

/// Each side of `p`'s contract, read from its repository's directory.
pub(super) fn sides(p: &ProviderNode, workspace: &Workspace) -> Vec<Side> {
    let mut out = Vec::new();
    for (repo, path) in p.spec.contract.iter().flatten() {
        let Some(dir) = workspace.repositories.get(repo).map(|r| r.dir.clone()) else {
            continue;
        };
        out.push(Side {
            repo: repo.clone(),
            path: path.value.clone(),
            bytes: fs_err::read(dir.join(&path.value)).ok(),
        });
    }
    out
}

/// The comparison of `sides`. The bytes compared must be the ones fingerprinted: a side
/// whose file is no longer what `snapshots` holds is not judged against it (an error).
pub(super) fn compare(
    sides: &[Side],
    snapshots: &BTreeMap<RepoId, Snapshot>,
) -> (Ended, Option<String>) {
    let changed: Vec<String> = sides
        .iter()
        .filter_map(|side| {
            let bytes = side.bytes.as_deref()?;
            let snapshot = snapshots.get(&side.repo)?;
            let entry = snapshot
                .files
                .iter()
                .find(|f| f.path == side.path.trim_start_matches("./"))?;
            (entry.kind != FileKind::Symlink && blob_identity(bytes) != entry.id)
                .then(|| format!("`{}:{}`", side.repo, side.path))
        })
        .collect();
    if !changed.is_empty() {
        return (
            Ended::Error(format!(
                "its inputs changed during the run ({}): the contracts compared are not the ones fingerprinted",
                changed.join(", ")
            )),
            None,
        );
    }
    let exit = |code| {
        Ended::Exited(Exit {
            code: Some(code),
            signal: None,
            timed_out: false,
        })
    };
    let missing: Vec<String> = sides
        .iter()
        .filter(|side| side.bytes.is_none())
        .map(|side| format!("{}:{}", side.repo, side.path))
        .collect();
    if !missing.is_empty() {
        return (
            exit(1),
            Some(format!("the contract is missing at {}", missing.join(", "))),
        );
    }
    let digests: BTreeSet<String> = sides
        .iter()
        .filter_map(|side| side.bytes.as_deref().map(sha256_hex))
        .collect();
    if digests.len() == 1 {
        return (exit(0), None);
    }
    let each: Vec<String> = sides
        .iter()
        .map(|side| {
            let bytes = side.bytes.as_deref().unwrap_or_default();
            format!(
                "{}:{} is sha256:{} ({} bytes)",
                side.repo,
                side.path,
                sha256_hex(bytes),
                bytes.len()
            )
        })
        .collect();
    (
        exit(1),
        Some(format!("the contracts differ: {}", each.join("; "))),
    )
}

/// The contract's files as the receipt keeps them (`repo:path`, bytes), read again after
/// judging; a side that is not there is left out.
pub(super) fn artifacts(p: &ProviderNode, workspace: &Workspace) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (repo, path) in p.spec.contract.iter().flatten() {
        if let Some(dir) = workspace.repositories.get(repo).map(|r| &r.dir)
            && let Ok(bytes) = fs_err::read(dir.join(&path.value))
        {
            out.push((format!("{repo}:{}", path.value), bytes));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proofgraph_graph::Adapter;

    use super::*;
    use crate::load::workspace::Repository;
    use crate::observe::inputs::FileEntry;
    use crate::run::testing::{at, node, provider, seal_in};

    fn repo(id: &str) -> RepoId {
        RepoId::parse(id).expect("valid repository id")
    }

    fn side(repo_id: &str, path: &str, bytes: Option<&[u8]>) -> Side {
        Side {
            repo: repo(repo_id),
            path: path.to_owned(),
            bytes: bytes.map(<[u8]>::to_vec),
        }
    }

    fn passed() -> Ended {
        Ended::Exited(Exit {
            code: Some(0),
            signal: None,
            timed_out: false,
        })
    }

    fn failed() -> Ended {
        Ended::Exited(Exit {
            code: Some(1),
            ..Exit::default()
        })
    }

    /// A snapshot of `repo` holding `path` as `bytes` (of `kind`).
    fn snapshot(path: &str, bytes: &[u8], kind: FileKind) -> Snapshot {
        Snapshot {
            dir: Path::new("/r").to_path_buf(),
            files: vec![FileEntry {
                path: path.to_owned(),
                id: blob_identity(bytes),
                kind,
            }],
            rehashed: 0,
        }
    }

    #[test]
    fn identical_contracts_pass_and_different_ones_name_each_sides_digest() {
        let none = BTreeMap::new();
        let same = [
            side("api", "c.json", Some(b"{}")),
            side("web", "c.json", Some(b"{}")),
        ];
        assert_eq!(compare(&same, &none), (passed(), None));
        let differ = [
            side("api", "c.json", Some(b"{}")),
            side("web", "c.json", Some(b"[]")),
        ];
        let (ended, reason) = compare(&differ, &none);
        assert_eq!(ended, failed());
        assert_eq!(
            reason.as_deref(),
            Some(
                format!(
                    "the contracts differ: api:c.json is sha256:{} (2 bytes); web:c.json is sha256:{} (2 bytes)",
                    sha256_hex(b"{}"),
                    sha256_hex(b"[]")
                )
                .as_str()
            )
        );
    }

    #[test]
    fn a_missing_side_fails_naming_where_it_is_missing() {
        let sides = [
            side("api", "c.json", Some(b"{}")),
            side("web", "c.json", None),
            side("cli", "spec/c.json", None),
        ];
        let (ended, reason) = compare(&sides, &BTreeMap::new());
        assert_eq!(ended, failed());
        assert_eq!(
            reason.as_deref(),
            Some("the contract is missing at web:c.json, cli:spec/c.json")
        );
    }

    #[test]
    fn a_side_edited_since_its_snapshot_is_an_error_never_a_comparison() {
        let sides = [
            side("api", "./c.json", Some(b"{\"v\":2}")),
            side("web", "c.json", Some(b"{\"v\":2}")),
        ];
        // `api` was fingerprinted holding v1: identical now, but not what was fingerprinted.
        let snapshots = BTreeMap::from([
            (
                repo("api"),
                snapshot("c.json", b"{\"v\":1}", FileKind::File),
            ),
            (
                repo("web"),
                snapshot("c.json", b"{\"v\":2}", FileKind::File),
            ),
        ]);
        let (ended, reason) = compare(&sides, &snapshots);
        assert_eq!(
            ended,
            Ended::Error(
                "its inputs changed during the run (`api:./c.json`): the contracts compared are not the ones fingerprinted".to_owned()
            )
        );
        assert_eq!(reason, None);
        // A link's identity is its target, not the bytes read through it: not compared.
        let snapshots = BTreeMap::from([(
            repo("api"),
            snapshot("c.json", b"target.json", FileKind::Symlink),
        )]);
        assert_eq!(compare(&sides, &snapshots), (passed(), None));
    }

    #[test]
    fn the_sides_are_read_from_each_known_repository_and_kept_as_artifacts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (root, web) = (dir.path().join("root"), dir.path().join("web"));
        fs_err::create_dir_all(&root).expect("mkdir");
        fs_err::create_dir_all(&web).expect("mkdir");
        fs_err::write(root.join("c.json"), b"{}").expect("write");
        fs_err::write(web.join("c.json"), b"[]").expect("write");
        let mut p = provider("contract", Adapter::ContractDigest, &[]);
        p.contract = Some(BTreeMap::from([
            (RepoId::root(), at("c.json".to_owned())),
            (repo("web"), at("c.json".to_owned())),
        ]));
        let graph = seal_in(&["web"], vec![p], Vec::new());
        let p = node(&graph, "contract");
        let known = |ids: &[(&RepoId, &Path)]| Workspace {
            root: dir.path().to_path_buf(),
            catalog: None,
            has_catalog: true,
            repositories: ids
                .iter()
                .map(|(id, d)| {
                    let id = (*id).clone();
                    let path = id.to_string();
                    (
                        id.clone(),
                        Repository {
                            id,
                            path,
                            dir: d.to_path_buf(),
                        },
                    )
                })
                .collect(),
            diagnostics: Vec::new(),
        };
        let both = known(&[(&RepoId::root(), &root), (&repo("web"), &web)]);
        assert_eq!(
            sides(p, &both),
            [
                side("root", "c.json", Some(b"{}")),
                side("web", "c.json", Some(b"[]"))
            ]
        );
        assert_eq!(
            artifacts(p, &both),
            [
                ("root:c.json".to_owned(), b"{}".to_vec()),
                ("web:c.json".to_owned(), b"[]".to_vec())
            ]
        );
        let (ended, _) = contract_digest(p, &both, &BTreeMap::new());
        assert_eq!(ended, failed());
        // A repository the workspace does not know is no side; a missing file is one.
        fs_err::remove_file(web.join("c.json")).expect("remove");
        let root_only = known(&[(&RepoId::root(), &root)]);
        assert_eq!(sides(p, &root_only), [side("root", "c.json", Some(b"{}"))]);
        assert_eq!(
            contract_digest(p, &root_only, &BTreeMap::new()),
            (passed(), None)
        );
        assert_eq!(
            sides(p, &both)[1],
            side("web", "c.json", None),
            "a side that is gone is read as missing"
        );
        assert_eq!(artifacts(p, &both).len(), 1);
    }
}
