//! Path helpers every layer shares: lexical normalisation and JSON's view of a path.

use std::path::{Component, Path, PathBuf};

use serde::{Serialize, Serializer};

/// Serializes a path as a string (lossily for non-UTF-8 paths, which JSON
/// cannot carry).
pub fn lossy_path<S: Serializer>(path: &std::path::Path, serializer: S) -> Result<S::Ok, S::Error> {
    path.to_string_lossy().serialize(serializer)
}

/// A path as a workspace writes it (`hostPaths`, `PROOFGRAPH_HOST_PATHS`): `~` and `~/…`
/// against `home`, an absolute path as it is, anything else nothing.
pub fn expand_home(text: &str, home: Option<&Path>) -> Option<PathBuf> {
    if text == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = text.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    let path = Path::new(text);
    path.is_absolute().then(|| path.to_path_buf())
}

/// Lexically removes `.` and resolves `..` components, as the file system resolves them
/// where no component is a link: a `..` that climbs above where a relative path starts is
/// kept (`a/../../x` is `../x`, never `x`), and one at the root of an absolute path stays
/// there (`/../x` is `/x`, as the kernel reads `/..`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => parts.push(component),
            },
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

/// A relative `path`, normalised ([`normalize`]), when it stays beneath the directory it
/// starts from; `None` when it climbs above it (`a/../../x`) or is absolute. What a link of
/// a repository leads to is in that repository only when this is `Some`.
pub fn normalize_beneath(path: &Path) -> Option<PathBuf> {
    if path.has_root() {
        return None;
    }
    let normal = normalize(path);
    (!normal.starts_with("..")).then_some(normal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_climbs_above_its_start_never_resolves_inside_it() {
        for (path, normal, beneath) in [
            ("a/./b/../c", "a/c", Some("a/c")),
            ("a/..", "", Some("")),
            ("", "", Some("")),
            ("./x/", "x", Some("x")),
            ("a/../../../x", "../../x", None),
            ("../x", "../x", None),
            ("a/../..", "..", None),
            ("../../a/b/..", "../../a", None),
            ("/a/../../x", "/x", None),
            ("/../..", "/", None),
            ("/a/./b/..", "/a", None),
        ] {
            assert_eq!(normalize(Path::new(path)), Path::new(normal), "{path}");
            assert_eq!(
                normalize_beneath(Path::new(path)).as_deref(),
                beneath.map(Path::new),
                "{path}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(crate::base::testing::beside_source(proptest::test_runner::Config::default()))]
        /// Against the file system's own resolution: every directory a random relative path
        /// names is made below a `root` (whose name the paths never use, so a path that
        /// leaves it cannot come back), and `canonicalize` says where the path leads. The
        /// lexical answer is the same place, and it is beneath `root` exactly when the file
        /// system's is.
        #[test]
        fn normalize_agrees_with_the_file_system(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![".", "..", "a", "b"]),
                0..12,
            )
        ) {
            let tmp = tempfile::tempdir().expect("tempdir");
            // Deeper than a path can climb, so nothing is made outside the tempdir.
            let root = tmp.path().join("u/".repeat(12)).join("root");
            let mut at = root.clone();
            fs_err::create_dir_all(&at).expect("mkdir");
            for part in &parts {
                match *part {
                    "." => {}
                    ".." => {
                        at.pop();
                    }
                    name => {
                        at.push(name);
                        fs_err::create_dir_all(&at).expect("mkdir");
                    }
                }
            }
            let path: PathBuf = parts.iter().collect();
            let real_root = fs_err::canonicalize(&root).expect("canonical root");
            let real = fs_err::canonicalize(root.join(&path)).expect("canonical path");
            let lexical = fs_err::canonicalize(root.join(normalize(&path)))
                .expect("the normalised path exists");
            proptest::prop_assert_eq!(&lexical, &real, "{}", path.display());
            match normalize_beneath(&path) {
                Some(inside) => {
                    proptest::prop_assert_eq!(real_root.join(&inside), real.clone());
                    proptest::prop_assert!(real.starts_with(&real_root));
                }
                None => proptest::prop_assert!(
                    !real.starts_with(&real_root),
                    "{} leads to {}, inside the root",
                    path.display(),
                    real.display()
                ),
            }
        }
    }
}
