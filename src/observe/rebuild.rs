//! The files a receipt recorded, had again (`rerun`): a recorded tree found in its
//! repository, or rebuilt from the commit the receipt names (then the one checked out)
//! when that commit holds exactly the files the run bound — git's content addressing is
//! the check: the rebuilt tree must have the recorded id — and what a tree holds checked
//! against the receipt's input listing.

use std::collections::BTreeSet;
use std::path::Path;

use crate::observe::git_id::GitId;
use crate::observe::inputs::FileEntry;
use crate::observe::listing::Listing;
use crate::observe::repo_at_revision::Revision;

/// A recorded tree to be had in a repository.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The repository's directory.
    pub dir: &'a Path,
    /// Its name in the workspace.
    pub repo: &'a str,
    /// The recorded tree.
    pub tree: &'a GitId,
    /// The commit the receipt names for it.
    pub commit: Option<&'a GitId>,
    /// The receipt's input listing.
    pub listing: &'a Listing,
    /// For a service's repository, recorded whole: the prefixes its snapshot leaves out.
    pub whole: Option<&'a [String]>,
}

/// Why a recorded tree cannot be had (each message says which tree of which repository).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebuildError {
    /// A commit's files could not be written as a tree.
    #[error(
        "the input tree {tree} of repository `{repo}` could not be rebuilt from {from}: {message}"
    )]
    Extract {
        /// The tree.
        tree: String,
        /// The repository.
        repo: String,
        /// The commit.
        from: String,
        /// Why.
        message: String,
    },
    /// The tree was rebuilt but does not read.
    #[error(
        "the input tree {tree} of repository `{repo}` was rebuilt from {from} but cannot be read: {message}"
    )]
    Unreadable {
        /// The tree.
        tree: String,
        /// The repository.
        repo: String,
        /// The commit.
        from: String,
        /// Why.
        message: String,
    },
    /// No commit holds the files the run bound.
    #[error("the input tree {tree} of repository `{repo}` is not in this repository (a clone does not fetch `refs/proofgraph/inputs/`), and it cannot be rebuilt: {}", why.join("; "))]
    Unheld {
        /// The tree.
        tree: String,
        /// The repository.
        repo: String,
        /// Why, per commit tried.
        why: Vec<String>,
        /// The commit the receipt names.
        commit: Option<String>,
    },
}

impl RebuildError {
    /// What to do about it, one sentence.
    pub fn fix(&self) -> String {
        match self {
            Self::Extract { .. } | Self::Unreadable { .. } => {
                "Check the repository's objects (`git fsck`).".to_owned()
            }
            Self::Unheld { commit: Some(c), .. } => format!(
                "Fetch the commit the receipt was recorded at (`git fetch origin {c}`) and rerun; inputs the run bound uncommitted can only be rerun in the workspace that proved it."
            ),
            Self::Unheld { commit: None, .. } => "Rerun it in the workspace that proved it (this receipt names no commit to rebuild its inputs from).".to_owned(),
        }
    }
}

/// The recorded tree `wanted` names: found in its repository, else rebuilt (and then kept
/// under `refs/proofgraph/inputs/` as a recorded one). A run that bound a file no commit
/// tried holds (an uncommitted edit, an untracked file) can only be rerun where it ran,
/// and the error names that file.
pub fn recorded_tree(wanted: &Wanted<'_>) -> Result<Revision, RebuildError> {
    match Revision::resolve(wanted.dir, wanted.tree.as_str()) {
        Ok(revision) => Ok(revision),
        Err(_) => rebuild(wanted),
    }
}

/// Rebuilds the tree from the commit the receipt names, then from the one checked out.
fn rebuild(wanted: &Wanted<'_>) -> Result<Revision, RebuildError> {
    let Wanted {
        dir,
        repo,
        tree,
        commit,
        listing,
        whole,
    } = *wanted;
    let mut candidates: Vec<&str> = commit.iter().map(|c| c.as_str()).collect();
    candidates.push("HEAD");
    let mut why: Vec<String> = Vec::new();
    let mut tried: BTreeSet<String> = BTreeSet::new();
    for rev in candidates {
        let Ok(revision) = Revision::resolve(dir, rev) else {
            if rev != "HEAD" {
                why.push(format!(
                    "the commit it was recorded at, {rev}, is not in this repository"
                ));
            }
            continue;
        };
        let from = revision
            .commit
            .map_or_else(|| rev.to_owned(), |c| c.to_hex().to_string());
        if !tried.insert(from.clone()) {
            continue;
        }
        let keep = |path: &str| match whole {
            Some(exclude) => !crate::observe::inputs::excluded(path.as_bytes(), exclude),
            None => listing.contains(&format!("{repo}:{path}")),
        };
        let (rebuilt, files) = revision
            .extract(dir, &keep)
            .map_err(|e| RebuildError::Extract {
                tree: tree.to_string(),
                repo: repo.to_owned(),
                from: from.clone(),
                message: e.to_string(),
            })?;
        if tree.to_gix() == Some(rebuilt) {
            // The ref only spares the next rerun this work; without it the tree is had all
            // the same.
            let _ = crate::observe::input_trees::keep(dir, rebuilt);
            return Revision::resolve(dir, tree.as_str()).map_err(|e| RebuildError::Unreadable {
                tree: tree.to_string(),
                repo: repo.to_owned(),
                from,
                message: e.to_string(),
            });
        }
        why.push(
            first_unbound(listing, repo, &files, &from).unwrap_or_else(|| {
                format!("the repository's files in {from} are not those the run bound")
            }),
        );
    }
    if why.is_empty() {
        why.push("no commit is checked out".to_owned());
    }
    Err(RebuildError::Unheld {
        tree: tree.to_string(),
        repo: repo.to_owned(),
        why,
        commit: commit.map(ToString::to_string),
    })
}

/// The first file of `repo` the listing binds that `files` (a commit's, sorted by path,
/// named `from`) lacks or holds another version of, as a phrase.
fn first_unbound(listing: &Listing, repo: &str, files: &[FileEntry], from: &str) -> Option<String> {
    listing.in_repo(repo).find_map(|(path, id)| {
        match files.binary_search_by(|f| f.path.as_str().cmp(path)) {
            Err(_) => Some(format!("`{path}` is not in {from}")),
            Ok(i) if files[i].id != *id => Some(format!(
                "`{path}` in {from} is not the version the run bound"
            )),
            Ok(_) => None,
        }
    })
}

/// The first file of a recorded tree of `repo` whose identity is not the one the listing
/// binds; in a service's repository (recorded `whole`), files the listing does not name
/// are the service's and pass.
pub fn first_unlisted<'a>(
    listing: &Listing,
    repo: &str,
    files: &'a [FileEntry],
    whole: bool,
) -> Option<&'a str> {
    files.iter().find_map(|f| {
        let scoped = format!("{repo}:{}", f.path);
        match listing.get(&scoped) {
            None if whole => None,
            Some(id) if *id == f.id => None,
            _ => Some(f.path.as_str()),
        }
    })
}

/// The first file the listing binds that none of the recorded `trees` (each repository's
/// name and files) holds.
pub fn first_unrecorded<'a>(
    listing: &'a Listing,
    trees: &[(&str, &[FileEntry])],
) -> Option<&'a str> {
    listing.iter().map(|(scoped, _)| scoped).find(|scoped| {
        !trees.iter().any(|(repo, files)| {
            scoped
                .strip_prefix(repo)
                .and_then(|s| s.strip_prefix(':'))
                .is_some_and(|path| {
                    files
                        .binary_search_by(|f| f.path.as_str().cmp(path))
                        .is_ok()
                })
        })
    })
}

#[cfg(test)]
mod tests {
    use proofgraph_graph::fingerprint::Digest;

    use super::*;
    use crate::base::testing::{commit_all, git, write};
    use crate::observe::inputs::FileKind;

    fn entry(path: &str, id: u8) -> FileEntry {
        FileEntry {
            path: path.to_owned(),
            id: Digest([id; 32]),
            kind: FileKind::File,
        }
    }

    #[test]
    fn a_tree_must_hold_what_the_listing_binds() {
        let listed = Listing::filled(&[("app:a", 1), ("app:b", 2), ("web:c", 3)]);
        let tree = [entry("a", 1), entry("b", 2)];
        assert_eq!(first_unlisted(&listed, "app", &tree, false), None);
        let other = [entry("a", 1), entry("b", 9)];
        assert_eq!(first_unlisted(&listed, "app", &other, false), Some("b"));
        let more = [entry("a", 1), entry("b", 2), entry("extra", 4)];
        assert_eq!(first_unlisted(&listed, "app", &more, false), Some("extra"));
        assert_eq!(
            first_unlisted(&listed, "app", &more, true),
            None,
            "a service's"
        );
        assert_eq!(first_unlisted(&listed, "app", &other, true), Some("b"));
    }

    #[test]
    fn every_listed_file_must_be_in_a_recorded_tree() {
        let listed = Listing::filled(&[("app:a", 1), ("app:b", 2), ("web:c", 3)]);
        let app = [entry("a", 1), entry("b", 2)];
        let web = [entry("c", 3)];
        assert_eq!(
            first_unrecorded(&listed, &[("app", &app), ("web", &web)]),
            None
        );
        assert_eq!(first_unrecorded(&listed, &[("app", &app)]), Some("web:c"));
        assert_eq!(first_unrecorded(&listed, &[("ap", &app)]), Some("app:a"));
    }

    #[test]
    fn a_tree_is_rebuilt_only_from_a_commit_that_holds_the_bound_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path();
        git(repo, &["init", "-q"]);
        write(repo, "a.txt", "a\n");
        write(repo, "b.txt", "b\n");
        commit_all(repo);
        let head = Revision::resolve(repo, "HEAD").expect("HEAD");
        let files = head.files().expect("files");
        let bound: Vec<(String, Digest)> = files
            .iter()
            .filter(|f| f.path == "a.txt")
            .map(|f| (format!("app:{}", f.path), f.id))
            .collect();
        let listed = Listing::of(&bound);
        // The tree of `a.txt` alone, as a recorder writes it (its id, not kept by a ref).
        let (tree, _) = head.extract(repo, &|p| p == "a.txt").expect("a tree");
        let tree = GitId::from(tree);
        let commit = GitId::from(head.commit.expect("a commit"));
        let wanted = Wanted {
            dir: repo,
            repo: "app",
            tree: &tree,
            commit: Some(&commit),
            listing: &listed,
            whole: None,
        };
        let had = recorded_tree(&wanted).expect("rebuilt from the commit");
        assert_eq!(had.tree_id(), tree.to_gix().expect("sha-1"));
        assert_eq!(
            had.files()
                .expect("files")
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>(),
            ["a.txt"]
        );

        // A listing that binds another version of `a.txt`: no commit holds it.
        let edited = Listing::of(&[("app:a.txt".to_owned(), Digest([7; 32]))]);
        let unknown = GitId::parse(&"1".repeat(40)).expect("an id");
        let missing = GitId::parse(&"2".repeat(40)).expect("an id");
        let err = recorded_tree(&Wanted {
            tree: &unknown,
            commit: Some(&missing),
            listing: &edited,
            ..wanted
        })
        .expect_err("not rebuildable");
        let RebuildError::Unheld { why, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(
            why,
            &[
                format!("the commit it was recorded at, {missing}, is not in this repository"),
                format!(
                    "`a.txt` in {} is not the version the run bound",
                    commit.as_str()
                ),
            ]
        );
        assert!(
            err.fix().contains(&format!("git fetch origin {missing}")),
            "{}",
            err.fix()
        );
    }
}
