//! An Action's input root, from CAS to a fresh directory: every `Directory` and file
//! fetched by digest and checked against it before a byte is used, every name a single
//! path component (no `/`, no `.` or `..`), every symbolic link's target inside the root
//! (relative, never climbing out of it), files written with their executable bit.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use prost::Message as _;

use super::run_action::{ActionError, Cas};
use crate::store::remote::BlobDigest;

/// How deep an input root may nest.
const MAX_DEPTH: usize = 256;

/// Whether `name` is one path component a directory may hold.
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Whether a link at `at` (relative to the root, a file's path) pointing to `target`
/// stays inside the root: relative, and never climbing above it.
pub(super) fn link_stays_inside(at: &Path, target: &str) -> bool {
    if target.is_empty() || target.contains('\0') || target.starts_with('/') {
        return false;
    }
    let mut depth: Vec<&std::ffi::OsStr> = at
        .parent()
        .map(|p| {
            p.components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    for component in Path::new(target).components() {
        match component {
            Component::Normal(n) => depth.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// A digest from an Action's message, parsed.
pub(super) fn digest(d: Option<&reapi::Digest>, what: &str) -> Result<BlobDigest, ActionError> {
    let d = d.ok_or_else(|| ActionError::Invalid(format!("the {what} names no digest")))?;
    BlobDigest::from_reapi(d).map_err(|e| ActionError::Invalid(format!("the {what}: {e}")))
}

/// Every `Directory` of the tree under `root`, by digest, each checked.
pub(super) async fn fetch_tree(
    cas: &Cas,
    root: BlobDigest,
) -> Result<BTreeMap<BlobDigest, reapi::Directory>, ActionError> {
    let mut tree = BTreeMap::new();
    let mut next = vec![(root, 0usize)];
    while let Some((digest, depth)) = next.pop() {
        if tree.contains_key(&digest) {
            continue;
        }
        if depth > MAX_DEPTH {
            return Err(ActionError::Invalid(format!(
                "the input root nests deeper than {MAX_DEPTH} directories"
            )));
        }
        let bytes = cas.read(digest, "a directory of the input root").await?;
        let directory = reapi::Directory::decode(bytes.as_slice()).map_err(|e| {
            ActionError::Invalid(format!("the directory {digest} is not a Directory: {e}"))
        })?;
        for child in &directory.directories {
            next.push((digest_of(child.digest.as_ref(), &child.name)?, depth + 1));
        }
        tree.insert(digest, directory);
    }
    Ok(tree)
}

fn digest_of(d: Option<&reapi::Digest>, name: &str) -> Result<BlobDigest, ActionError> {
    digest(
        d,
        &format!("entry `{}`", crate::store::remote::escaped(name)),
    )
}

/// Writes the tree under `root` (fetched by [`fetch_tree`]) into `dir`, which exists and
/// is empty; file contents come from CAS, each checked, each fetched once.
pub(super) async fn materialise(
    cas: &Cas,
    tree: &BTreeMap<BlobDigest, reapi::Directory>,
    root: BlobDigest,
    dir: &Path,
) -> Result<(), ActionError> {
    let mut written: BTreeMap<BlobDigest, PathBuf> = BTreeMap::new();
    let mut next = vec![(root, PathBuf::new())];
    while let Some((digest, rel)) = next.pop() {
        let directory = tree.get(&digest).ok_or_else(|| {
            ActionError::Invalid(format!("the directory {digest} was not fetched"))
        })?;
        let here = dir.join(&rel);
        let mut names = std::collections::BTreeSet::new();
        let check = |name: &str, names: &mut std::collections::BTreeSet<String>| {
            if !valid_name(name) {
                return Err(ActionError::Invalid(format!(
                    "the input root holds the name `{}` in `{}`, which is not one path component",
                    crate::store::remote::escaped(name),
                    rel.display()
                )));
            }
            if !names.insert(name.to_owned()) {
                return Err(ActionError::Invalid(format!(
                    "the input root holds `{}` twice in `{}`",
                    crate::store::remote::escaped(name),
                    rel.display()
                )));
            }
            Ok(())
        };
        for child in &directory.directories {
            check(&child.name, &mut names)?;
            fs_err::create_dir(here.join(&child.name)).map_err(ActionError::local)?;
            next.push((
                digest_of(child.digest.as_ref(), &child.name)?,
                rel.join(&child.name),
            ));
        }
        for file in &directory.files {
            check(&file.name, &mut names)?;
            let blob = digest_of(file.digest.as_ref(), &file.name)?;
            let path = here.join(&file.name);
            match written.get(&blob) {
                Some(first) => {
                    fs_err::copy(first, &path).map_err(ActionError::local)?;
                }
                None => {
                    let bytes = cas.read(blob, "a file of the input root").await?;
                    fs_err::write(&path, &bytes).map_err(ActionError::local)?;
                    written.insert(blob, path.clone());
                }
            }
            let mode = if file.is_executable { 0o755 } else { 0o644 };
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(ActionError::local)?;
        }
        for link in &directory.symlinks {
            check(&link.name, &mut names)?;
            let at = rel.join(&link.name);
            if !link_stays_inside(&at, &link.target) {
                return Err(ActionError::Invalid(format!(
                    "the input root's link `{}` points to `{}`, outside the root",
                    at.display(),
                    crate::store::remote::escaped(&link.target)
                )));
            }
            std::os::unix::fs::symlink(&link.target, here.join(&link.name))
                .map_err(|e| ActionError::Local(format!("link `{}`: {e}", at.display())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_component() {
        for ok in ["a", "a.txt", "..a", "...", " "] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "/", "a\0"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_link_never_leaves_the_root() {
        let at = Path::new("d/e/link");
        for inside in ["x", "../x", "../../x", "./x", "../e/../x"] {
            assert!(link_stays_inside(at, inside), "{inside}");
        }
        for outside in [
            "../../../x",
            "/etc/passwd",
            "",
            "../../..",
            "a/../../../../b",
        ] {
            assert!(!link_stays_inside(at, outside), "{outside}");
        }
        assert!(!link_stays_inside(Path::new("top"), ".."));
        assert!(link_stays_inside(Path::new("top"), "."));
    }
}
