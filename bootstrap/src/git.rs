//! Which files git tracks in a repository directory, read from the git
//! index (gix, as the application reads it; no `git` process). A repository
//! may be a directory inside a larger git work tree (a monorepo): its
//! entries are those under its prefix.

use std::collections::BTreeSet;
use std::path::Path;

/// The tracked paths under `dir`, relative to it; `None` when `dir` is not
/// inside a git work tree or its index cannot be read.
pub(crate) fn tracked(dir: &Path) -> Option<BTreeSet<String>> {
    let repo = gix::discover(dir).ok()?;
    let workdir = fs_err::canonicalize(repo.workdir()?).ok()?;
    let dir = fs_err::canonicalize(dir).ok()?;
    let prefix = match dir.strip_prefix(&workdir).ok()?.to_str()? {
        "" => String::new(),
        rel => format!("{rel}/"),
    };
    let index = repo.index_or_empty().ok()?;
    let mut out = BTreeSet::new();
    for entry in index.entries() {
        let path = entry.path(&index);
        if let Some(rel) = std::str::from_utf8(path.as_ref())
            .ok()
            .and_then(|p| p.strip_prefix(prefix.as_str()))
        {
            out.insert(rel.to_owned());
        }
    }
    Some(out)
}
