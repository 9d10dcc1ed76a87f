//! What an Action produced, collected only from the paths its Command declares
//! (`output_paths`, or `output_files` and `output_directories` from older clients), never
//! following a symbolic link: a path whose parent is a link is not collected, a declared
//! path that is a link is reported as a link, and a link inside an output directory stays
//! a link in its `Tree`. Nothing outside the input root is read.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use prost::Message as _;

use super::run_action::ActionError;
use crate::store::remote::BlobDigest;

/// The outputs found, and the blobs to store for them.
#[derive(Debug, Default)]
pub(super) struct Collected {
    /// Output files.
    pub(super) files: Vec<reapi::OutputFile>,
    /// Output directories, each as a `Tree` blob.
    pub(super) directories: Vec<reapi::OutputDirectory>,
    /// Declared paths that are symbolic links.
    pub(super) symlinks: Vec<reapi::OutputSymlink>,
    /// Every blob named above.
    pub(super) blobs: Vec<(BlobDigest, Vec<u8>)>,
}

/// A declared output path as a relative path without `.` or `..` (`None`: not one).
pub(super) fn relative(path: &str) -> Option<&Path> {
    let p = Path::new(path);
    let ok = !path.is_empty()
        && !path.contains('\0')
        && p.components().all(|c| matches!(c, Component::Normal(_)));
    ok.then_some(p)
}

/// What `path` is, without following it, once every directory above it (from `root`) was
/// found to be a real directory; `None` when something is missing or a parent is a link.
fn lstat_beneath(root: &Path, rel: &Path) -> Option<std::fs::Metadata> {
    let mut at = root.to_path_buf();
    let mut components = rel.components().peekable();
    while let Some(component) = components.next() {
        at.push(component);
        let meta = fs_err::symlink_metadata(&at).ok()?;
        if components.peek().is_some() && !meta.file_type().is_dir() {
            return None;
        }
        if components.peek().is_none() {
            return Some(meta);
        }
    }
    None
}

/// The outputs `command` declares, under `working` (the working directory in the root).
pub(super) fn collect(command: &reapi::Command, working: &Path) -> Result<Collected, ActionError> {
    let mut out = Collected::default();
    #[expect(
        deprecated,
        reason = "older clients declare files and directories apart"
    )]
    let declared: Vec<&String> = if command.output_paths.is_empty() {
        command
            .output_files
            .iter()
            .chain(&command.output_directories)
            .collect()
    } else {
        command.output_paths.iter().collect()
    };
    for path in declared {
        let rel = relative(path).ok_or_else(|| {
            ActionError::Invalid(format!(
                "the output path `{}` is not a relative path inside the working directory",
                crate::store::remote::escaped(path)
            ))
        })?;
        let Some(meta) = lstat_beneath(working, rel) else {
            continue;
        };
        let full = working.join(rel);
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = fs_err::read_link(&full).map_err(ActionError::local)?;
            out.symlinks.push(reapi::OutputSymlink {
                path: path.clone(),
                target: target.to_string_lossy().into_owned(),
                ..Default::default()
            });
        } else if kind.is_file() {
            let (node, blob) = file_node(&full, path, &meta)?;
            out.files.push(reapi::OutputFile {
                path: path.clone(),
                digest: node.digest,
                is_executable: node.is_executable,
                ..Default::default()
            });
            out.blobs.push(blob);
        } else if kind.is_dir() {
            let mut children = Vec::new();
            let root = directory(&full, &mut children, &mut out.blobs, 0)?;
            let tree = reapi::Tree {
                root: Some(root),
                children,
            };
            let bytes = tree.encode_to_vec();
            let digest = BlobDigest::of(&bytes);
            out.blobs.push((digest, bytes));
            out.directories.push(reapi::OutputDirectory {
                path: path.clone(),
                tree_digest: Some(digest.to_reapi()),
                is_topologically_sorted: false,
                root_directory_digest: None,
            });
        }
        // Anything else (a socket, a device) is not an output.
    }
    Ok(out)
}

/// A file's node (named `name`) and its blob.
fn file_node(
    path: &Path,
    name: &str,
    meta: &std::fs::Metadata,
) -> Result<(reapi::FileNode, (BlobDigest, Vec<u8>)), ActionError> {
    let bytes = fs_err::read(path).map_err(ActionError::local)?;
    let digest = BlobDigest::of(&bytes);
    Ok((
        reapi::FileNode {
            name: name.to_owned(),
            digest: Some(digest.to_reapi()),
            is_executable: meta.permissions().mode() & 0o111 != 0,
            ..Default::default()
        },
        (digest, bytes),
    ))
}

/// The `Directory` of `dir` (its subdirectories into `children`, file blobs into `blobs`),
/// entries sorted by name as REAPI requires, links kept as links.
fn directory(
    dir: &Path,
    children: &mut Vec<reapi::Directory>,
    blobs: &mut Vec<(BlobDigest, Vec<u8>)>,
    depth: usize,
) -> Result<reapi::Directory, ActionError> {
    if depth > 256 {
        return Err(ActionError::Invalid(format!(
            "the output directory `{}` nests too deep",
            dir.display()
        )));
    }
    let mut entries: Vec<_> = fs_err::read_dir(dir)
        .map_err(ActionError::local)?
        .collect::<Result<_, _>>()
        .map_err(ActionError::local)?;
    entries.sort_by_key(|e| e.file_name());
    let mut out = reapi::Directory::default();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let meta = fs_err::symlink_metadata(&path).map_err(ActionError::local)?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = fs_err::read_link(&path).map_err(ActionError::local)?;
            out.symlinks.push(reapi::SymlinkNode {
                name,
                target: target.to_string_lossy().into_owned(),
                ..Default::default()
            });
        } else if kind.is_file() {
            let (node, blob) = file_node(&path, &name, &meta)?;
            out.files.push(node);
            blobs.push(blob);
        } else if kind.is_dir() {
            let child = directory(&path, children, blobs, depth + 1)?;
            let digest = BlobDigest::of(&child.encode_to_vec());
            children.push(child);
            out.directories.push(reapi::DirectoryNode {
                name,
                digest: Some(digest.to_reapi()),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_declared_paths_are_collected_and_no_link_is_followed() {
        let dir = tempfile::tempdir().expect("a directory");
        let root = dir.path().join("root");
        let outside = dir.path().join("secret");
        fs_err::create_dir_all(root.join("out/sub")).expect("dirs");
        fs_err::create_dir_all(&outside).expect("dirs");
        fs_err::write(outside.join("key"), "secret").expect("write");
        fs_err::write(root.join("a.txt"), "a").expect("write");
        fs_err::write(root.join("undeclared"), "u").expect("write");
        fs_err::write(root.join("out/sub/b"), "b").expect("write");
        std::os::unix::fs::symlink(&outside, root.join("out/escape")).expect("link");
        std::os::unix::fs::symlink(&outside, root.join("via")).expect("link");
        let command = reapi::Command {
            output_paths: vec![
                "a.txt".into(),
                "out".into(),
                "via/key".into(),
                "missing".into(),
            ],
            ..Default::default()
        };
        let got = collect(&command, &root).expect("collected");
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files[0].path, "a.txt");
        assert_eq!(got.directories.len(), 1, "out/");
        assert!(got.symlinks.is_empty());
        let texts: Vec<&[u8]> = got.blobs.iter().map(|(_, b)| b.as_slice()).collect();
        assert!(
            !texts.contains(&&b"secret"[..]),
            "nothing read through a link"
        );
        assert!(!texts.contains(&&b"u"[..]), "nothing undeclared");
        assert!(texts.contains(&&b"b"[..]));
        let tree_blob = &got.blobs.last().expect("the tree").1;
        let tree = reapi::Tree::decode(tree_blob.as_slice()).expect("a Tree");
        let top = tree.root.expect("a root");
        assert_eq!(top.symlinks[0].name, "escape", "kept as a link");
        assert_eq!(top.directories[0].name, "sub");

        for bad in ["../x", "/etc/passwd", "a/../b", ""] {
            let command = reapi::Command {
                output_paths: vec![bad.into()],
                ..Default::default()
            };
            assert!(collect(&command, &root).is_err(), "{bad}");
        }
    }
}
