//! Changes between revisions, and from a revision to the working tree, of real git
//! repositories made here with the `git` binary.

use std::path::{Path, PathBuf};

use super::*;
use crate::base::testing::{commit_all, git, write};

/// A repository in a temporary directory, with its files at `start` committed and tagged
/// `base`.
struct Repo {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Repo {
    fn new(files: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = fs_err::canonicalize(tmp.path()).expect("canonical");
        git(&dir, &["init", "-q", "-b", "main"]);
        for (path, content) in files {
            write(&dir, path, content);
        }
        commit_all(&dir);
        git(&dir, &["tag", "base"]);
        Self { _tmp: tmp, dir }
    }

    fn git(&self, args: &[&str]) {
        git(&self.dir, args);
    }

    fn write(&self, path: &str, content: &str) {
        write(&self.dir, path, content);
    }

    /// Commits everything and tags it `head`.
    fn commit(&self) {
        commit_all(&self.dir);
        self.git(&["tag", "head"]);
    }

    fn at(&self, rev: &str) -> (Revision, Vec<FileEntry>) {
        let revision = Revision::resolve(&self.dir, rev).expect("revision");
        let files = revision.snapshot(&self.dir, &[]).expect("snapshot").files;
        (revision, files)
    }

    /// The changes from `base` to `head`.
    fn revisions(&self) -> Changes {
        let (base, base_files) = self.at("base");
        let (head, head_files) = self.at("head");
        between(
            "r",
            &self.dir,
            (&base, &base_files),
            (Head::Revision(&head), &head_files),
        )
        .expect("changes")
    }

    /// The changes from `base` to the working tree (tracked and untracked files).
    fn work_tree(&self) -> Changes {
        let (base, base_files) = self.at("base");
        let head = crate::observe::inputs::snapshot(&self.dir, &[]).expect("snapshot");
        let head = crate::observe::inputs::with_untracked(head, &[]).expect("untracked");
        between(
            "r",
            &self.dir,
            (&base, &base_files),
            (Head::WorkTree, &head.files),
        )
        .expect("changes")
    }
}

/// `change path [from]` per changed path.
fn lines(changes: &Changes) -> Vec<String> {
    changes
        .changed
        .iter()
        .map(|c| {
            let from = c
                .from
                .as_deref()
                .map(|f| format!(" from {f}"))
                .unwrap_or_default();
            format!("{:?} {}{from}", c.change, c.path).to_lowercase()
        })
        .collect()
}

/// Text of `n` distinct lines, so that a few changed lines keep it similar.
fn text(tag: &str, n: usize) -> String {
    (0..n).map(|i| format!("{tag} line {i}\n")).collect()
}

#[test]
fn a_pure_rename_is_one_renamed_path() {
    let r = Repo::new(&[("src/util.js", &text("util", 20)), ("keep.txt", "k\n")]);
    r.git(&["mv", "src/util.js", "src/helpers.js"]);
    r.commit();
    let changes = r.revisions();
    assert_eq!(lines(&changes), ["renamed src/helpers.js from src/util.js"]);
    assert_eq!(
        changes.tracking.similarity_checks, 0,
        "identical content needs no comparison"
    );
}

#[test]
fn a_rename_with_a_small_edit_is_a_rename_and_a_rewrite_is_not() {
    let mut edited = text("a", 20);
    edited.push_str("one more line\n");
    let r = Repo::new(&[("a.txt", &text("a", 20)), ("b.txt", &text("b", 20))]);
    r.git(&["rm", "-q", "a.txt", "b.txt"]);
    r.write("moved/a.txt", &edited);
    r.write("moved/b.txt", &text("completely different", 20));
    r.commit();
    let changes = r.revisions();
    assert_eq!(
        lines(&changes),
        [
            "deleted b.txt",
            "renamed moved/a.txt from a.txt",
            "added moved/b.txt"
        ]
    );
    assert!(
        changes.tracking.similarity_checks > 0,
        "{:?}",
        changes.tracking
    );
}

/// A copy leaves its source as it was: the copy is an added path, the source no change.
#[test]
fn a_copy_is_an_added_path() {
    let r = Repo::new(&[("lib.sh", &text("lib", 10))]);
    r.write("lib-copy.sh", &text("lib", 10));
    r.commit();
    assert_eq!(lines(&r.revisions()), ["added lib-copy.sh"]);
}

#[test]
fn a_deletion_and_an_unrelated_addition_are_no_rename() {
    let r = Repo::new(&[("old.txt", &text("old", 10)), ("same.txt", "s\n")]);
    r.git(&["rm", "-q", "old.txt"]);
    r.write("new.txt", &text("something else entirely", 10));
    r.write("same.txt", "s2\n");
    r.commit();
    assert_eq!(
        lines(&r.revisions()),
        ["added new.txt", "deleted old.txt", "modified same.txt"]
    );
}

#[test]
fn renames_across_directories_pair_each_file_with_its_own() {
    let r = Repo::new(&[
        ("a/x.txt", &text("x", 10)),
        ("a/deep/y.txt", &text("y", 10)),
        ("z.txt", &text("z", 10)),
    ]);
    r.git(&["mv", "a", "b"]);
    r.git(&["mv", "z.txt", "b/deep/z.txt"]);
    r.commit();
    assert_eq!(
        lines(&r.revisions()),
        [
            "renamed b/deep/y.txt from a/deep/y.txt",
            "renamed b/deep/z.txt from z.txt",
            "renamed b/x.txt from a/x.txt",
        ]
    );
}

/// The working tree's added files are read (they are in no object database): a move and
/// an edit there, untracked, is a rename as it is once committed.
#[test]
fn the_working_tree_renames_as_a_commit_does() {
    let r = Repo::new(&[("src/app.js", &text("app", 20))]);
    fs_err::remove_file(r.dir.join("src/app.js")).expect("rm");
    let mut edited = text("app", 20);
    edited.push_str("// edited\n");
    r.write("lib/app.js", &edited);
    let objects = git(&r.dir, &["count-objects"]);
    assert_eq!(
        lines(&r.work_tree()),
        ["renamed lib/app.js from src/app.js"]
    );
    // The added file's blob stayed in memory: the repository's objects are as they were.
    assert_eq!(git(&r.dir, &["count-objects"]), objects);
    r.commit();
    assert_eq!(
        lines(&r.revisions()),
        ["renamed lib/app.js from src/app.js"]
    );
}

/// Empty files are never paired (every empty file has the same content), and a link is no
/// rename of a file with its target as content.
#[test]
fn empty_files_and_links_are_not_paired_with_files() {
    let r = Repo::new(&[
        ("empty-a", ""),
        ("target.txt", "t\n"),
        ("note", "target.txt"),
    ]);
    r.git(&["mv", "empty-a", "empty-b"]);
    r.git(&["rm", "-q", "note"]);
    std::os::unix::fs::symlink("target.txt", r.dir.join("link")).expect("symlink");
    r.commit();
    assert_eq!(
        lines(&r.revisions()),
        [
            "deleted empty-a",
            "added empty-b",
            "added link",
            "deleted note"
        ]
    );
}

/// 2 000 deletions and 2 000 additions: identical contents are paired in one sorted pass
/// with no content compared, and unrelated ones, past the limit, are not compared at all
/// (2 000 × 2 000 pairs would be).
#[test]
fn a_large_diff_is_not_compared_pair_by_pair() {
    let n = 2000;
    let files: Vec<(String, String)> = (0..n)
        .map(|i| (format!("old/{i:04}.txt"), format!("file {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let r = Repo::new(&refs);
    r.git(&["mv", "old", "new"]);
    r.commit();
    let changes = r.revisions();
    assert_eq!(changes.changed.len(), n);
    assert!(
        changes
            .changed
            .iter()
            .all(|c| c.change == PathChange::Renamed)
    );
    assert_eq!(changes.changed[7].from.as_deref(), Some("old/0007.txt"));
    assert_eq!(changes.tracking, Tracking::default());

    // The same count of deletions and unrelated additions, from the working tree.
    r.git(&["rm", "-q", "-r", "new"]);
    for i in 0..n {
        r.write(&format!("other/{i:04}.txt"), &format!("unrelated {i}\n"));
    }
    r.git(&["tag", "-d", "base"]);
    r.git(&["tag", "base", "head"]);
    let changes = r.work_tree();
    assert_eq!(changes.changed.len(), 2 * n);
    assert!(changes.changed.iter().all(|c| c.from.is_none()));
    assert_eq!(changes.tracking.similarity_checks, 0);
    assert_eq!(changes.tracking.skipped, n * n);
}

#[test]
fn a_rename_touches_both_of_its_paths() {
    let renamed = Changed {
        repository: "r".to_owned(),
        path: "docs/util.js".to_owned(),
        change: PathChange::Renamed,
        from: Some("src/util.js".to_owned()),
    };
    let under = |dir: &'static str| move |p: &str| Path::new(p).starts_with(dir);
    assert!(renamed.touches(under("src")), "out of the inputs");
    assert!(renamed.touches(under("docs")), "into the inputs");
    assert!(!renamed.touches(under("lib")));
}
