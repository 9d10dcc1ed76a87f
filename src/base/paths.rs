//! Path helpers every layer shares: lexical normalisation and JSON's view of a path.

use std::path::{Component, Path, PathBuf};

use serde::{Serialize, Serializer};

/// Serializes a path as a string (lossily for non-UTF-8 paths, which JSON
/// cannot carry).
pub fn lossy_path<S: Serializer>(path: &std::path::Path, serializer: S) -> Result<S::Ok, S::Error> {
    path.to_string_lossy().serialize(serializer)
}

/// Lexically removes `.` and resolves `..` components, as `path.join` does.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}
