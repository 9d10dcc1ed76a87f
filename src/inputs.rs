//! What a repository's files are right now: the tracked files with their
//! working-tree content, read through the git index (gix).
//!
//! Like git itself, the snapshot trusts the index's stat data: a file whose
//! `lstat` matches its index entry, and whose entry is not racily clean
//! (modified in the same second the index was written), is identified by the
//! blob id the index already holds; only modified or racily clean files are
//! read and hashed (as git blobs, so a file's identity never depends on
//! whether the index was refreshed). A repository may be its own git
//! repository or a directory inside one (a monorepo): entries are taken from
//! the enclosing repository's index under the repository's prefix.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use proofgraph_graph::fingerprint::Digest;

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileEntry {
    /// The path relative to the repository's directory, `/`-separated.
    pub path: String,
    /// The content identity: the git blob id, as a BLAKE3 digest of
    /// `"git:" + object id` so that every identity has one width.
    pub id: Digest,
    /// What kind of file it is.
    pub kind: FileKind,
}

/// The kind of a tracked file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// A regular file.
    File,
    /// An executable regular file.
    Executable,
    /// A symbolic link (its target is the content).
    Symlink,
}

/// The tracked files of one repository directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The repository's directory.
    pub dir: PathBuf,
    /// Its files, sorted by path.
    pub files: Vec<FileEntry>,
    /// How many files were read and hashed (modified or racily clean).
    pub rehashed: usize,
}

/// A snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// The directory is not inside a git repository with a working tree.
    #[error("find the git repository of `{dir}`: {message}")]
    NotARepository {
        /// The directory.
        dir: PathBuf,
        /// What gix said.
        message: String,
    },
    /// The index could not be read.
    #[error("read the git index of `{dir}`: {message}")]
    Index {
        /// The repository's work tree.
        dir: PathBuf,
        /// What gix said.
        message: String,
    },
    /// A tracked file could not be read.
    #[error("read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

fn identity(oid: &gix::ObjectId) -> Digest {
    let mut bytes = Vec::with_capacity(4 + oid.as_bytes().len());
    bytes.extend_from_slice(b"git:");
    bytes.extend_from_slice(oid.as_bytes());
    Digest::of(&bytes)
}

/// Takes a snapshot of the tracked files under `dir`, leaving out any path
/// under one of `exclude` (prefixes relative to `dir`, ending in `/`).
pub fn snapshot(dir: &Path, exclude: &[String]) -> Result<Snapshot, InputsError> {
    let not_repo = |message: String| InputsError::NotARepository {
        dir: dir.to_path_buf(),
        message,
    };
    let repo = gix::discover(dir).map_err(|e| not_repo(e.to_string()))?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| not_repo("it is a bare repository".to_owned()))?;
    let workdir = fs_err::canonicalize(workdir).map_err(|e| not_repo(e.to_string()))?;
    let canonical_dir = fs_err::canonicalize(dir).map_err(|e| not_repo(e.to_string()))?;
    let prefix = match canonical_dir.strip_prefix(&workdir) {
        Ok(rel) if rel.as_os_str().is_empty() => String::new(),
        Ok(rel) => format!("{}/", rel.to_string_lossy()),
        Err(_) => {
            return Err(not_repo(
                "it lies outside its repository's work tree".to_owned(),
            ));
        }
    };
    let index_error = |message: String| InputsError::Index {
        dir: workdir.clone(),
        message,
    };
    // The index's trailing checksum is not verified on every read (git
    // checks it only in `git fsck`): it is a whole-file SHA-1 pass that cost a
    // no-op prove more than its own bookkeeping. A torn index fails to decode.
    let index = match gix::index::File::at(
        repo.index_path(),
        repo.object_hash(),
        true,
        gix::index::decode::Options::default(),
    ) {
        Ok(file) => file,
        Err(gix::index::file::init::Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            gix::index::File::from_state(
                gix::index::State::new(repo.object_hash()),
                repo.index_path(),
            )
        }
        Err(e) => return Err(index_error(e.to_string())),
    };
    let options = repo
        .stat_options()
        .map_err(|e| index_error(e.to_string()))?;
    let timestamp = index.timestamp();
    let hash_kind = repo.object_hash();
    // First the entries that are files under `dir` (cheap, from the index
    // alone), then their stat checks, which dominate, on every core.
    let mut candidates: Vec<(&gix::index::Entry, &str, FileKind)> = Vec::new();
    for entry in index.entries() {
        if entry.stage_raw() != 0 && entry.stage_raw() != 2 {
            // Conflicts: take the working tree's content once (stage 2, "ours").
            continue;
        }
        let full = entry.path(&index);
        let Some(rel) = std::str::from_utf8(full.as_ref())
            .ok()
            .and_then(|p| p.strip_prefix(prefix.as_str()))
        else {
            continue;
        };
        if exclude.iter().any(|e| rel.starts_with(e.as_str())) {
            continue;
        }
        let kind = if entry.mode == gix::index::entry::Mode::SYMLINK {
            FileKind::Symlink
        } else if entry.mode == gix::index::entry::Mode::FILE_EXECUTABLE {
            FileKind::Executable
        } else if entry.mode == gix::index::entry::Mode::FILE {
            FileKind::File
        } else {
            // Submodules (gitlinks) and sparse directories carry no content here.
            continue;
        };
        candidates.push((entry, rel, kind));
    }
    let check = |(entry, rel, _): &(&gix::index::Entry, &str, FileKind)| -> Result<Option<(FileEntry, bool)>, InputsError> {
        let path = canonical_dir.join(rel);
        let metadata = match gix::index::fs::Metadata::from_path_no_follow(&path) {
            Ok(m) => m,
            // Deleted in the working tree: absent from the snapshot.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(InputsError::Read { path, source }),
        };
        let kind = if metadata.is_symlink() {
            FileKind::Symlink
        } else if metadata.is_file() {
            if metadata.is_executable() {
                FileKind::Executable
            } else {
                FileKind::File
            }
        } else {
            // Replaced by a directory: not a tracked file any more.
            return Ok(None);
        };
        let intent_to_add = entry
            .flags
            .contains(gix::index::entry::Flags::INTENT_TO_ADD);
        let clean = !intent_to_add
            && gix::index::entry::Stat::from_fs(&metadata)
                .is_ok_and(|stat| entry.stat.matches(&stat, options))
            && !entry.stat.is_racy(timestamp, options);
        let oid = if clean {
            entry.id
        } else {
            let content = if kind == FileKind::Symlink {
                let target = fs_err::read_link(&path).map_err(|source| InputsError::Read {
                    path: path.clone(),
                    source,
                })?;
                target.as_os_str().as_encoded_bytes().to_vec()
            } else {
                fs_err::read(&path).map_err(|source| InputsError::Read {
                    path: path.clone(),
                    source,
                })?
            };
            gix::objs::compute_hash(hash_kind, gix::objs::Kind::Blob, &content).map_err(|e| {
                InputsError::Read {
                    path: path.clone(),
                    source: std::io::Error::other(e.to_string()),
                }
            })?
        };
        Ok(Some((
            FileEntry {
                path: (*rel).to_owned(),
                id: identity(&oid),
                kind,
            },
            !clean,
        )))
    };
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let chunk = candidates.len().div_ceil(threads).max(2048);
    let parts: Vec<Result<Vec<(FileEntry, bool)>, InputsError>> = if candidates.len() <= chunk {
        vec![
            candidates
                .iter()
                .filter_map(|c| check(c).transpose())
                .collect(),
        ]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = candidates
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(|| part.iter().filter_map(|c| check(c).transpose()).collect())
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(InputsError::Read {
                            path: canonical_dir.clone(),
                            source: std::io::Error::other("a stat thread panicked"),
                        })
                    })
                })
                .collect()
        })
    };
    let mut files = Vec::with_capacity(candidates.len());
    let mut rehashed = 0;
    for part in parts {
        for (file, was_rehashed) in part? {
            rehashed += usize::from(was_rehashed);
            files.push(file);
        }
    }
    files.sort();
    files.dedup_by(|a, b| a.path == b.path);
    Ok(Snapshot {
        dir: canonical_dir,
        files,
        rehashed,
    })
}

/// Directories a copy sandbox leaves out unless git tracks files in them:
/// they are regenerable output, and large.
pub const COPY_EXCLUDED_DIRS: [&str; 5] = [
    "node_modules",
    "coverage",
    "test-results",
    "playwright-report",
    "target",
];

/// A snapshot for a copy sandbox: the tracked files (as [`snapshot`] reads
/// them) and the untracked files that git does not ignore, outside
/// [`COPY_EXCLUDED_DIRS`]. Untracked files have no index entry, so they are
/// read and hashed with BLAKE3 on `threads` threads.
pub fn snapshot_copy(
    dir: &Path,
    exclude: &[String],
    threads: std::num::NonZeroUsize,
) -> Result<Snapshot, InputsError> {
    let mut tracked = snapshot(dir, exclude)?;
    let known: std::collections::BTreeSet<&str> =
        tracked.files.iter().map(|f| f.path.as_str()).collect();
    let root = tracked.dir.clone();
    let mut untracked: Vec<(String, FileKind)> = Vec::new();
    let walker = ignore::WalkBuilder::new(&root)
        .hidden(false)
        .parents(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir())
                && (name == ".git" || COPY_EXCLUDED_DIRS.contains(&name.as_ref())))
        })
        .build();
    for entry in walker.flatten() {
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if known.contains(rel) || exclude.iter().any(|e| rel.starts_with(e.as_str())) {
            continue;
        }
        let kind = if ft.is_symlink() {
            FileKind::Symlink
        } else {
            use std::os::unix::fs::PermissionsExt as _;
            let exec = entry
                .metadata()
                .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
            if exec {
                FileKind::Executable
            } else {
                FileKind::File
            }
        };
        untracked.push((rel.to_owned(), kind));
    }
    let chunk = untracked.len().div_ceil(threads.get()).max(1);
    let hashed: Vec<Result<Vec<FileEntry>, InputsError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = untracked
            .chunks(chunk)
            .map(|part| {
                let root = &root;
                scope.spawn(move || {
                    part.iter()
                        .map(|(rel, kind)| {
                            let path = root.join(rel);
                            let content = if *kind == FileKind::Symlink {
                                fs_err::read_link(&path)
                                    .map(|t| t.as_os_str().as_encoded_bytes().to_vec())
                            } else {
                                fs_err::read(&path)
                            }
                            .map_err(|source| InputsError::Read {
                                path: path.clone(),
                                source,
                            })?;
                            let mut hasher = blake3::Hasher::new();
                            hasher.update(b"proofgraph/untracked-file\0");
                            hasher.update(&content);
                            Ok(FileEntry {
                                path: rel.clone(),
                                id: Digest(*hasher.finalize().as_bytes()),
                                kind: *kind,
                            })
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(InputsError::Read {
                        path: root.clone(),
                        source: std::io::Error::other("a hashing thread panicked"),
                    })
                })
            })
            .collect()
    });
    for part in hashed {
        let part = part?;
        tracked.rehashed += part.len();
        tracked.files.extend(part);
    }
    tracked.files.sort();
    Ok(tracked)
}

/// A compiled `inputs` pattern.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// A literal path: the file itself, or everything below it as a directory.
    Literal(String),
    /// A glob (`src/**`, `*.json`), matched against the whole relative path,
    /// with the literal directory prefix every match starts with (`src/`).
    Glob(GlobMatcher, String),
}

impl Pattern {
    /// Compiles a pattern; `None` for an invalid glob.
    pub fn new(text: &str) -> Option<Self> {
        let text = text.trim_start_matches("./").trim_end_matches('/');
        if !text.contains(['*', '?', '[', '{']) {
            return Some(Pattern::Literal(text.to_owned()));
        }
        // `dir/**` also matches `dir` itself, as the existing implementation reads it.
        let glob = GlobBuilder::new(text)
            .literal_separator(true)
            .build()
            .ok()?;
        let literal = &text[..text.find(['*', '?', '[', '{']).unwrap_or(text.len())];
        // Without the final `/`: `dir/**` also matches `dir` itself.
        let prefix = literal.rfind('/').map_or("", |i| &literal[..i]).to_owned();
        Some(Pattern::Glob(glob.compile_matcher(), prefix))
    }

    /// The files of a snapshot (sorted by path) that the pattern selects:
    /// only the range sharing its literal prefix is matched at all, so a
    /// pattern such as `pkg01/**` costs a binary search, not a pass over
    /// every file of the repository.
    pub fn select<'a>(&'a self, files: &'a [FileEntry]) -> impl Iterator<Item = &'a FileEntry> {
        let prefix = match self {
            Pattern::Literal(p) => p.as_str(),
            Pattern::Glob(_, prefix) => prefix.as_str(),
        };
        let start = files.partition_point(|f| f.path.as_str() < prefix);
        files[start..]
            .iter()
            .take_while(move |f| f.path.starts_with(prefix))
            .filter(move |f| self.matches(&f.path))
    }

    /// Whether a relative path is selected.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            Pattern::Literal(p) => {
                p.is_empty()
                    || path == p
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            }
            Pattern::Glob(g, _) => g.is_match(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_patterns_match_files_and_directories() {
        let p = Pattern::new("src").expect("valid");
        assert!(p.matches("src/a.rs"));
        assert!(p.matches("src"));
        assert!(!p.matches("srcs/a.rs"));
        let p = Pattern::new("./package.json").expect("valid");
        assert!(p.matches("package.json"));
        assert!(!p.matches("package.json.bak"));
    }

    #[test]
    fn select_matches_only_the_range_of_the_literal_prefix() {
        let files: Vec<FileEntry> = [
            "a.json",
            "pkg01",
            "pkg01/a.ts",
            "pkg01/b/c.ts",
            "pkg010/x.ts",
            "pkg02/a.ts",
            "src",
            "src/a.rs",
            "srcs/b.rs",
        ]
        .iter()
        .map(|p| FileEntry {
            path: (*p).to_owned(),
            id: Digest([0; 32]),
            kind: FileKind::File,
        })
        .collect();
        let pick = |pattern: &str| -> Vec<String> {
            Pattern::new(pattern)
                .expect("valid")
                .select(&files)
                .map(|f| f.path.clone())
                .collect()
        };
        assert_eq!(pick("pkg01/**"), ["pkg01/a.ts", "pkg01/b/c.ts"]);
        assert_eq!(pick("pkg01/**/*.ts"), ["pkg01/a.ts", "pkg01/b/c.ts"]);
        assert_eq!(pick("src"), ["src", "src/a.rs"]);
        assert_eq!(pick("*.json"), ["a.json"]);
        assert_eq!(pick("pkg0?/a.ts"), ["pkg01/a.ts", "pkg02/a.ts"]);
        // The same as matching every file.
        for pattern in [
            "pkg01/**",
            "src",
            "*.json",
            "pkg0?/a.ts",
            "**/*.ts",
            "pkg01",
            "src/**",
        ] {
            let p = Pattern::new(pattern).expect("valid");
            let all: Vec<&str> = files
                .iter()
                .filter(|f| p.matches(&f.path))
                .map(|f| f.path.as_str())
                .collect();
            let fast: Vec<&str> = p.select(&files).map(|f| f.path.as_str()).collect();
            assert_eq!(fast, all, "{pattern}");
        }
    }

    #[test]
    fn globs_match_whole_paths() {
        let p = Pattern::new("src/**").expect("valid");
        assert!(p.matches("src/a/b.rs"));
        assert!(!p.matches("test/src/a.rs"));
        let p = Pattern::new("*.json").expect("valid");
        assert!(p.matches("package.json"));
        assert!(!p.matches("a/package.json"));
        let p = Pattern::new("src/**/*.ts").expect("valid");
        assert!(p.matches("src/a/b.ts"));
        assert!(p.matches("src/b.ts"));
        assert!(!p.matches("src/b.js"));
    }
}
