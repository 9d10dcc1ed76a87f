//! What a repository's files are right now: the tracked files with their
//! working-tree content, read through the git index (gix).
//!
//! Like git itself, the snapshot trusts the index's stat data: a file whose
//! `lstat` matches its index entry, and whose entry is not racily clean
//! (modified in the same clock tick the index was written), is identified by the
//! blob id the index already holds; only modified or racily clean files are
//! read and hashed (as git blobs, so a file's identity never depends on
//! whether the index was refreshed). A repository may be its own git
//! repository or a directory inside one (a monorepo): entries are taken from
//! the enclosing repository's index under the repository's prefix.

use std::path::{Path, PathBuf};

use proofgraph_graph::fingerprint::Digest;
pub use proofgraph_graph::pattern::Pattern;

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

impl Snapshot {
    /// Copies its files into `dest` (a fresh directory), each checked against the identity
    /// this snapshot holds for it in the same pass over its bytes: the sandbox holds exactly
    /// what was fingerprinted, or this fails with [`SandboxError::Changed`] naming the
    /// files that changed since the snapshot.
    ///
    /// [`SandboxError::Changed`]: proofgraph_sandbox::SandboxError::Changed
    pub fn materialize(
        &self,
        dest: &Path,
        threads: std::num::NonZeroUsize,
    ) -> Result<proofgraph_sandbox::materialize::Materialized, proofgraph_sandbox::SandboxError>
    {
        proofgraph_sandbox::materialize::materialize(
            &self.dir,
            dest,
            &self.sandbox_entries(),
            threads,
            &Identities(&self.files),
        )
    }

    /// Its files as a `worktree` sandbox copies them.
    pub fn sandbox_entries(&self) -> Vec<proofgraph_sandbox::materialize::Entry<'_>> {
        use proofgraph_sandbox::materialize::{Entry, FileKind as SandboxKind};
        self.files
            .iter()
            .map(|f| Entry {
                path: f.path.as_str(),
                kind: match f.kind {
                    FileKind::File => SandboxKind::File,
                    FileKind::Executable => SandboxKind::Executable,
                    FileKind::Symlink => SandboxKind::Symlink,
                },
            })
            .collect()
    }
}

/// The identities of a snapshot's files, as the check a sandbox is copied with.
struct Identities<'s>(&'s [FileEntry]);

impl proofgraph_sandbox::materialize::Verify for Identities<'_> {
    type Check = BlobCheck;
    fn start(&self, index: usize, len: u64) -> BlobCheck {
        BlobCheck {
            hasher: BlobHasher::new(len),
            expected: self.0.get(index).map(|f| f.id),
        }
    }
}

/// Whether content is the blob a snapshot identified.
struct BlobCheck {
    hasher: BlobHasher,
    expected: Option<Digest>,
}

impl proofgraph_sandbox::materialize::Check for BlobCheck {
    fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }
    fn matches(self) -> bool {
        self.expected.is_some() && self.hasher.finish() == self.expected
    }
}

/// Hashes content as git hashes a blob (`blob <len>\0<content>`, SHA-1), given its length
/// first: content of another length than announced has no identity.
pub(crate) struct BlobHasher {
    sha: sha1::Sha1,
    len: u64,
    seen: u64,
}

impl BlobHasher {
    pub(crate) fn new(len: u64) -> Self {
        use sha1::Digest as _;
        let mut sha = sha1::Sha1::new();
        sha.update(format!("blob {len}\0").as_bytes());
        BlobHasher { sha, len, seen: 0 }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        use sha1::Digest as _;
        self.seen += bytes.len() as u64;
        self.sha.update(bytes);
    }

    /// The identity, unless the content had another length than announced.
    pub(crate) fn finish(self) -> Option<Digest> {
        use sha1::Digest as _;
        (self.seen == self.len).then(|| {
            let oid = self.sha.finalize();
            git_identity(&oid)
        })
    }
}

/// The identity of a blob whose content is `bytes`: the git blob id, as [`identity`] gives it.
pub(crate) fn blob_identity(bytes: &[u8]) -> Digest {
    let mut hasher = BlobHasher::new(bytes.len() as u64);
    hasher.update(bytes);
    hasher
        .finish()
        .unwrap_or_else(|| unreachable!("the length was given by the same bytes"))
}

fn git_identity(oid: &[u8]) -> Digest {
    let mut bytes = Vec::with_capacity(4 + oid.len());
    bytes.extend_from_slice(b"git:");
    bytes.extend_from_slice(oid);
    Digest::of(&bytes)
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
    /// A file among the inputs has a name that is not UTF-8: it cannot be bound (names are
    /// UTF-8 throughout fingerprints, listings and receipts), and leaving it out silently
    /// would give a job less than its repository holds.
    #[error("the file `{name}` in `{dir}` has a name that is not UTF-8")]
    NameNotUtf8 {
        /// The repository's directory.
        dir: PathBuf,
        /// The name relative to the work tree, non-UTF-8 bytes escaped (`\xe9`).
        name: String,
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

pub(crate) fn identity(oid: &gix::ObjectId) -> Digest {
    git_identity(oid.as_bytes())
}

/// Whether `rel` (relative to a snapshot's directory) is one that `exclude` leaves out: an
/// entry ending in `/` is a directory, left out with everything below it; any other entry
/// is one file, left out alone (`proofgraph.yaml` leaves out neither `proofgraph.yaml.orig`
/// nor a file below a directory of that name).
pub(crate) fn excluded(rel: &[u8], exclude: &[String]) -> bool {
    exclude.iter().any(|e| {
        let e = e.as_bytes();
        match e.strip_suffix(b"/") {
            Some(dir) => rel.starts_with(e) || rel == dir,
            None => rel == e,
        }
    })
}

/// Takes a snapshot of the tracked files under `dir`, leaving out what `exclude` names
/// (relative to `dir`: directories ending in `/`, and single files; see [`excluded`]).
pub fn snapshot(dir: &Path, exclude: &[String]) -> Result<Snapshot, InputsError> {
    snapshots(&[(dir, exclude)])
        .pop()
        .unwrap_or_else(|| unreachable!("one snapshot per request"))
}

/// The directories of one git work tree that are snapshotted together.
struct Group {
    repo: gix::Repository,
    workdir: PathBuf,
    /// (request, its canonical directory, its prefix in the work tree).
    members: Vec<(usize, PathBuf, String)>,
}

/// Whether `dir` (inside `workdir`) is in a repository of its own: a `.git`
/// in `dir` or in a directory between it and `workdir`.
fn nested_repository(workdir: &Path, dir: &Path) -> bool {
    dir.ancestors()
        .take_while(|a| *a != workdir && a.starts_with(workdir))
        .any(|a| fs_err::symlink_metadata(a.join(".git")).is_ok())
}

/// [`snapshot`] of several directories at once, one result per request in
/// order. Directories in the same git work tree share one read of its index
/// and one pass of stat checks on every core (a workspace with many
/// repositories in one monorepo reads its index once, not once per
/// repository).
pub fn snapshots(requests: &[(&Path, &[String])]) -> Vec<Result<Snapshot, InputsError>> {
    let mut results: Vec<Option<Result<Snapshot, InputsError>>> =
        requests.iter().map(|_| None).collect();
    let mut groups: Vec<Group> = Vec::new();
    for (i, (dir, _)) in requests.iter().enumerate() {
        let not_repo = |message: String| InputsError::NotARepository {
            dir: dir.to_path_buf(),
            message,
        };
        let canonical_dir = match fs_err::canonicalize(dir) {
            Ok(d) => d,
            Err(e) => {
                results[i] = Some(Err(not_repo(e.to_string())));
                continue;
            }
        };
        let known = groups.iter().position(|g| {
            canonical_dir.starts_with(&g.workdir) && !nested_repository(&g.workdir, &canonical_dir)
        });
        let g = match known {
            Some(g) => g,
            None => {
                let found = gix::discover(dir)
                    .map_err(|e| not_repo(e.to_string()))
                    .and_then(|repo| {
                        let workdir = repo
                            .workdir()
                            .ok_or_else(|| not_repo("it is a bare repository".to_owned()))?;
                        let workdir =
                            fs_err::canonicalize(workdir).map_err(|e| not_repo(e.to_string()))?;
                        Ok((repo, workdir))
                    });
                match found {
                    Ok((repo, workdir)) => match groups.iter().position(|g| g.workdir == workdir) {
                        Some(g) => g,
                        None => {
                            groups.push(Group {
                                repo,
                                workdir,
                                members: Vec::new(),
                            });
                            groups.len() - 1
                        }
                    },
                    Err(e) => {
                        results[i] = Some(Err(e));
                        continue;
                    }
                }
            }
        };
        let prefix = match canonical_dir.strip_prefix(&groups[g].workdir) {
            Ok(rel) if rel.as_os_str().is_empty() => String::new(),
            Ok(rel) => format!("{}/", rel.to_string_lossy()),
            Err(_) => {
                results[i] = Some(Err(not_repo(
                    "it lies outside its repository's work tree".to_owned(),
                )));
                continue;
            }
        };
        groups[g].members.push((i, canonical_dir, prefix));
    }
    for group in &groups {
        for (i, result) in snapshot_group(group, requests) {
            results[i] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| unreachable!("every request is answered")))
        .collect()
}

/// The index entries a snapshot considers, with their paths, in the index's
/// (path) order: files and symbolic links, a conflicted path once (stage 2,
/// "ours"); submodules (gitlinks) and sparse directories carry no content
/// here.
pub(crate) fn tracked_entries(index: &gix::index::State) -> Vec<(&gix::index::Entry, &str)> {
    index
        .entries()
        .iter()
        .filter(|e| considered(e))
        .filter_map(|e| Some((e, std::str::from_utf8(e.path(index).as_ref()).ok()?)))
        .collect()
}

/// Whether an index entry is one [`tracked_entries`] considers (before its name is read).
fn considered(e: &gix::index::Entry) -> bool {
    (e.stage_raw() == 0 || e.stage_raw() == 2)
        && (e.mode == gix::index::entry::Mode::SYMLINK
            || e.mode == gix::index::entry::Mode::FILE_EXECUTABLE
            || e.mode == gix::index::entry::Mode::FILE)
}

/// The first tracked file under `prefix` (outside `exclude`) whose name is not UTF-8,
/// escaped: [`tracked_entries`] cannot list it, so a snapshot that would hold it fails.
pub(crate) fn tracked_non_utf8(
    index: &gix::index::State,
    prefix: &str,
    exclude: &[String],
) -> Option<String> {
    index
        .entries()
        .iter()
        .filter(|e| considered(e))
        .map(|e| -> &[u8] { e.path(index).as_ref() })
        .find(|p| {
            std::str::from_utf8(p).is_err()
                && p.starts_with(prefix.as_bytes())
                && !excluded(&p[prefix.len()..], exclude)
        })
        .map(|p| p.escape_ascii().to_string())
}

/// One candidate file: (member, index entry, path in the work tree, length
/// of the member's prefix).
type Candidate<'i> = (usize, &'i gix::index::Entry, &'i str, usize);

fn snapshot_group(
    group: &Group,
    requests: &[(&Path, &[String])],
) -> Vec<(usize, Result<Snapshot, InputsError>)> {
    let repo = &group.repo;
    let workdir = &group.workdir;
    let fail_all = |message: String| {
        group
            .members
            .iter()
            .map(|(i, _, _)| {
                (
                    *i,
                    Err(InputsError::Index {
                        dir: workdir.clone(),
                        message: message.clone(),
                    }),
                )
            })
            .collect()
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
        Err(e) => return fail_all(e.to_string()),
    };
    let options = match repo.stat_options() {
        // Stat data is compared to the nanosecond, so a file is racily clean only when it
        // was modified in the same clock tick the index was written, not the same second:
        // after `git clone` every file was written in the second of the index, and a
        // whole-second comparison would read and hash all of them again. Both times come
        // from the same file system clock, so a file changed after the index was written
        // in the same tick still compares racy (`<=`), and one changed in a later tick no
        // longer matches its entry's mtime. A file system that keeps no sub-second times
        // stores 0 in both, which compares racy: the whole-second rule again.
        Ok(o) => gix::index::entry::stat::Options {
            use_nsec: true,
            ..o
        },
        Err(e) => return fail_all(e.to_string()),
    };
    let timestamp = index.timestamp();
    let hash_kind = repo.object_hash();
    // First the entries that are files under each member's directory (cheap,
    // from the index alone), then their stat checks, which dominate, on every
    // core and for every member at once.
    let entries = tracked_entries(&index);
    let mut candidates: Vec<Candidate<'_>> = Vec::new();
    let mut refused: Vec<Option<InputsError>> = group.members.iter().map(|_| None).collect();
    for (m, (i, _, prefix)) in group.members.iter().enumerate() {
        let exclude = requests[*i].1;
        if let Some(name) = tracked_non_utf8(&index, prefix, exclude) {
            refused[m] = Some(InputsError::NameNotUtf8 {
                dir: workdir.clone(),
                name,
            });
            continue;
        }
        // The index is sorted by path: the member's files are one range.
        let start = entries.partition_point(|(_, p)| *p < prefix.as_str());
        for (entry, full) in entries[start..]
            .iter()
            .take_while(|(_, p)| p.starts_with(prefix.as_str()))
        {
            let rel = &full[prefix.len()..];
            if !excluded(rel.as_bytes(), exclude) {
                candidates.push((m, entry, full, prefix.len()));
            }
        }
    }
    let check = |stat_at: &mut StatAt<'_>,
                 (m, entry, full, cut): &Candidate<'_>|
     -> (usize, Result<Option<(FileEntry, bool)>, InputsError>) {
        let result = (|| {
            let metadata = match stat_at.lstat(full) {
                Ok(m) => m,
                // Deleted in the working tree (or a directory on its path was
                // replaced by a file): absent from the snapshot, as in git.
                Err(e) if is_gone(&e) => return Ok(None),
                Err(source) => {
                    return Err(InputsError::Read {
                        path: workdir.join(full),
                        source,
                    });
                }
            };
            let kind = match metadata.st_mode & libc_mode::S_IFMT {
                libc_mode::S_IFLNK => FileKind::Symlink,
                // As git (and gix) read the executable bit: the owner's.
                libc_mode::S_IFREG if metadata.st_mode & libc_mode::S_IXUSR != 0 => {
                    FileKind::Executable
                }
                libc_mode::S_IFREG => FileKind::File,
                // Replaced by a directory (or anything else): not a tracked file any more.
                _ => return Ok(None),
            };
            let intent_to_add = entry
                .flags
                .contains(gix::index::entry::Flags::INTENT_TO_ADD);
            let clean = !intent_to_add
                && entry.stat.matches(&index_stat(&metadata), options)
                && !entry.stat.is_racy(timestamp, options);
            let id = if clean {
                identity(&entry.id)
            } else {
                let path = workdir.join(full);
                content_identity(&path, kind, hash_kind)
                    .map_err(|source| InputsError::Read { path, source })?
            };
            Ok(Some((
                FileEntry {
                    path: full[*cut..].to_owned(),
                    id,
                    kind,
                },
                !clean,
            )))
        })();
        (*m, result)
    };
    type Checked = Vec<(usize, Result<Option<(FileEntry, bool)>, InputsError>)>;
    // Each rayon task keeps its own directory descriptors (`StatAt`) for a run of at least
    // 2048 files; a panic anywhere makes every file unreadable, never a clean one.
    let parts: Vec<Checked> = {
        use rayon::prelude::*;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            vec![
                candidates
                    .par_iter()
                    .with_min_len(2048)
                    .map_init(|| StatAt::new(workdir), |stat_at, c| check(stat_at, c))
                    .collect::<Checked>(),
            ]
        }))
        .unwrap_or_else(|_| {
            vec![
                candidates
                    .iter()
                    .map(|(m, ..)| {
                        (
                            *m,
                            Err(InputsError::Read {
                                path: workdir.clone(),
                                source: std::io::Error::other("a stat thread panicked"),
                            }),
                        )
                    })
                    .collect(),
            ]
        })
    };
    let mut out: Vec<Result<(Vec<FileEntry>, usize), InputsError>> = refused
        .into_iter()
        .map(|refusal| refusal.map_or(Ok((Vec::new(), 0)), Err))
        .collect();
    for (m, result) in parts.into_iter().flatten() {
        match (&mut out[m], result) {
            (Ok((files, rehashed)), Ok(Some((file, was_rehashed)))) => {
                *rehashed += usize::from(was_rehashed);
                files.push(file);
            }
            (Ok(_), Ok(None)) | (Err(_), _) => {}
            (slot @ Ok(_), Err(e)) => *slot = Err(e),
        }
    }
    group
        .members
        .iter()
        .zip(out)
        .map(|((i, canonical_dir, _), result)| {
            (
                *i,
                result.map(|(mut files, rehashed)| {
                    files.sort();
                    files.dedup_by(|a, b| a.path == b.path);
                    Snapshot {
                        dir: canonical_dir.clone(),
                        files,
                        rehashed,
                    }
                }),
            )
        })
        .collect()
}

/// Whether an error reading a tracked file means it is not in the working
/// tree: deleted, or a directory on its path was replaced by a file. Such a
/// file is absent from a snapshot, as git reads it.
pub(crate) fn is_gone(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// The identity of a file's working-tree content, hashed as git hashes a
/// blob (a link's content is its target).
pub(crate) fn content_identity(
    path: &Path,
    kind: FileKind,
    hash_kind: gix::hash::Kind,
) -> std::io::Result<Digest> {
    let content = if kind == FileKind::Symlink {
        fs_err::read_link(path)?
            .into_os_string()
            .into_encoded_bytes()
    } else {
        fs_err::read(path)?
    };
    bytes_identity(&content, hash_kind)
}

/// The identity of a file whose content is `content`, hashed as git hashes a
/// blob with `hash_kind`.
pub(crate) fn bytes_identity(
    content: &[u8],
    hash_kind: gix::hash::Kind,
) -> std::io::Result<Digest> {
    match hash_kind {
        gix::hash::Kind::Sha1 => Ok(blob_identity(content)),
        other => {
            let oid = gix::objs::compute_hash(other, gix::objs::Kind::Blob, content)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            Ok(identity(&oid))
        }
    }
}

/// The file-type and permission bits of `st_mode` that a snapshot reads.
mod libc_mode {
    pub(super) const S_IFMT: u32 = 0o170_000;
    pub(super) const S_IFLNK: u32 = 0o120_000;
    pub(super) const S_IFREG: u32 = 0o100_000;
    pub(super) const S_IXUSR: u32 = 0o100;
}

/// `lstat` of tracked files relative to a descriptor of their directory.
///
/// The index lists files sorted by path, so the files of one directory come
/// together: one `open(O_PATH)` per directory, then one `fstatat` per file
/// that resolves a single path component. An `lstat` of the absolute path
/// walks every component of it again, and that walk was the largest cost of
/// a no-op prove of a large repository. Intermediate directories are resolved
/// as by `lstat` of the whole path (symbolic links followed), so the result
/// is the same.
struct StatAt<'a> {
    root: &'a Path,
    /// The directory (relative to `root`) that `fd` is open on.
    dir: String,
    fd: Option<Result<rustix::fd::OwnedFd, rustix::io::Errno>>,
}

impl<'a> StatAt<'a> {
    fn new(root: &'a Path) -> Self {
        StatAt {
            root,
            dir: String::new(),
            fd: None,
        }
    }

    fn lstat(&mut self, rel: &str) -> std::io::Result<rustix::fs::Stat> {
        use rustix::fs::{AtFlags, Mode, OFlags};
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        if self.fd.is_none() || self.dir != dir {
            self.dir.clear();
            self.dir.push_str(dir);
            let path = if dir.is_empty() {
                self.root.to_path_buf()
            } else {
                self.root.join(dir)
            };
            self.fd = Some(rustix::fs::open(
                &path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ));
        }
        match &self.fd {
            Some(Ok(fd)) => {
                rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(Into::into)
            }
            Some(Err(e)) => Err((*e).into()),
            None => unreachable!("the directory was opened above"),
        }
    }
}

/// The index's view of a file's stat data, converted exactly as
/// `gix::index::entry::Stat::from_fs` converts it: times before the epoch
/// become zero, and every field is truncated to 32 bits as git does.
fn index_stat(st: &rustix::fs::Stat) -> gix::index::entry::Stat {
    let time = |secs: i64, nsecs: i64| match (u64::try_from(secs), u32::try_from(nsecs)) {
        (Ok(secs), Ok(nsecs)) if nsecs < 1_000_000_000 => gix::index::entry::stat::Time {
            secs: secs as u32,
            nsecs,
        },
        _ => gix::index::entry::stat::Time::default(),
    };
    gix::index::entry::Stat {
        mtime: time(st.st_mtime, st.st_mtime_nsec as i64),
        ctime: time(st.st_ctime, st.st_ctime_nsec as i64),
        dev: st.st_dev as u32,
        ino: st.st_ino as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u32,
    }
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

/// The untracked files under `dir` that git does not ignore — what `git status` lists as
/// untracked, file by file — read and hashed as git blobs (the identity `git add` would give
/// them), sorted by path, leaving out any path under one of `exclude` and any directory named
/// in [`COPY_EXCLUDED_DIRS`]. Which files git ignores is gix's directory walk: every
/// `.gitignore` from the work tree's root down, `.git/info/exclude` and `core.excludesFile`;
/// a nested repository is not entered (git shows it as one untracked directory).
pub fn untracked(dir: &Path, exclude: &[String]) -> Result<Vec<FileEntry>, InputsError> {
    untracked_walk(dir, exclude, &mut |_| {})
}

/// [`untracked`], calling `entering` with each directory (relative to the work tree's root)
/// before the walk reads it — the watcher places its watch there, so that no change after
/// the read goes unseen.
pub fn untracked_walk(
    dir: &Path,
    exclude: &[String],
    entering: &mut dyn FnMut(&str),
) -> Result<Vec<FileEntry>, InputsError> {
    let not_repo = |message: String| InputsError::NotARepository {
        dir: dir.to_path_buf(),
        message,
    };
    let canonical = fs_err::canonicalize(dir).map_err(|e| not_repo(e.to_string()))?;
    let repo = gix::discover(&canonical).map_err(|e| not_repo(e.to_string()))?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| not_repo("it is a bare repository".to_owned()))?;
    let workdir = fs_err::canonicalize(workdir).map_err(|e| not_repo(e.to_string()))?;
    let prefix = match canonical.strip_prefix(&workdir) {
        Ok(rel) if rel.as_os_str().is_empty() => String::new(),
        Ok(rel) => format!("{}/", rel.to_string_lossy()),
        Err(_) => {
            return Err(not_repo(
                "it lies outside its repository's work tree".to_owned(),
            ));
        }
    };
    let index = repo.index_or_empty().map_err(|e| InputsError::Index {
        dir: workdir.clone(),
        message: e.to_string(),
    })?;
    let options = repo
        .dirwalk_options()
        .map_err(|e| not_repo(e.to_string()))?
        .emit_untracked(gix::dir::walk::EmissionMode::Matching);
    let mut found = Untracked {
        root: &canonical,
        prefix: &prefix,
        exclude,
        files: Vec::new(),
        non_utf8: None,
        entering,
    };
    let patterns: Vec<gix::bstr::BString> = if prefix.is_empty() {
        Vec::new()
    } else {
        vec![prefix.trim_end_matches('/').into()]
    };
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    repo.dirwalk(&index, patterns, &interrupt, options, &mut found)
        .map_err(|e| InputsError::Index {
            dir: workdir.clone(),
            message: format!("walk the untracked files: {e}"),
        })?;
    if let Some(name) = found.non_utf8 {
        return Err(InputsError::NameNotUtf8 { dir: workdir, name });
    }
    let mut files = hash_untracked(&canonical, &found.files)?;
    files.sort();
    Ok(files)
}

/// Collects the untracked files of a directory walk below `prefix` (repository-relative),
/// relative to that directory, never entering an excluded directory.
struct Untracked<'a> {
    /// The walked directory.
    root: &'a Path,
    prefix: &'a str,
    exclude: &'a [String],
    files: Vec<(String, FileKind)>,
    /// The first untracked name below the walked directory that is not UTF-8, escaped.
    non_utf8: Option<String>,
    /// Told of each directory the walk enters, before it reads it.
    entering: &'a mut dyn FnMut(&str),
}

impl Untracked<'_> {
    /// The path relative to the walked directory, unless it is outside it or excluded (an
    /// excluded prefix `a/b/` excludes the directory `a/b` itself too).
    fn relative<'p>(&self, rela_path: &'p str) -> Option<&'p str> {
        let rel = rela_path.strip_prefix(self.prefix)?;
        let left_out = excluded(rel.as_bytes(), self.exclude)
            || rel
                .split('/')
                .any(|component| COPY_EXCLUDED_DIRS.contains(&component));
        (!left_out).then_some(rel)
    }

    /// Keeps the first untracked name that is not UTF-8 and that [`Self::relative`] would
    /// have kept, were it UTF-8.
    fn note_non_utf8(&mut self, rela_path: &[u8]) {
        let Some(rel) = rela_path.strip_prefix(self.prefix.as_bytes()) else {
            return;
        };
        let left_out = excluded(rel, self.exclude)
            || rel
                .split(|b| *b == b'/')
                .any(|c| COPY_EXCLUDED_DIRS.iter().any(|d| d.as_bytes() == c));
        if !left_out && self.non_utf8.is_none() {
            self.non_utf8 = Some(rela_path.escape_ascii().to_string());
        }
    }
}

impl gix::dir::walk::Delegate for Untracked<'_> {
    fn emit(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        _collapsed: Option<gix::dir::entry::Status>,
    ) -> gix::dir::walk::Action {
        use gix::dir::entry::{Kind, Status};
        if entry.status == Status::Untracked
            && std::str::from_utf8(entry.rela_path.as_ref()).is_err()
        {
            self.note_non_utf8(entry.rela_path.as_ref());
        }
        if entry.status == Status::Untracked
            && let Ok(path) = std::str::from_utf8(entry.rela_path.as_ref())
            && let Some(rel) = self.relative(path)
        {
            let kind = match entry.disk_kind {
                Some(Kind::File) => {
                    use std::os::unix::fs::PermissionsExt as _;
                    let exec = fs_err::symlink_metadata(self.root.join(rel))
                        .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
                    Some(if exec {
                        FileKind::Executable
                    } else {
                        FileKind::File
                    })
                }
                Some(Kind::Symlink) => Some(FileKind::Symlink),
                // A nested repository, a directory left empty, a socket: no content.
                _ => None,
            };
            if let Some(kind) = kind {
                self.files.push((rel.to_owned(), kind));
            }
        }
        std::ops::ControlFlow::Continue(())
    }

    fn can_recurse(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        for_deletion: Option<gix::dir::walk::ForDeletionMode>,
        worktree_root_is_repository: bool,
    ) -> bool {
        if entry.status == gix::dir::entry::Status::Untracked
            && std::str::from_utf8(entry.rela_path.as_ref()).is_err()
        {
            // An untracked directory whose name is not UTF-8 holds files nothing could bind.
            self.note_non_utf8(entry.rela_path.as_ref());
        }
        let inside = std::str::from_utf8(entry.rela_path.as_ref()).is_ok_and(|path| {
            // The work tree's root and the directories between it and the walked one
            // lead to it.
            path.is_empty()
                || self.prefix.starts_with(&format!("{path}/"))
                || self.relative(path).is_some()
        });
        let recurse = inside
            && entry.status.can_recurse(
                entry.disk_kind,
                entry.pathspec_match,
                for_deletion,
                worktree_root_is_repository,
            );
        if recurse && let Ok(path) = std::str::from_utf8(entry.rela_path.as_ref()) {
            (self.entering)(path);
        }
        recurse
    }
}

/// Reads and hashes untracked files (paths relative to `root`) on rayon's pool, as git
/// blobs; a file gone since the walk is absent, and a panic fails the snapshot, never
/// leaves a file clean.
fn hash_untracked(root: &Path, list: &[(String, FileKind)]) -> Result<Vec<FileEntry>, InputsError> {
    use rayon::prelude::*;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        list.par_iter()
            .filter_map(|(rel, kind)| {
                let path = root.join(rel);
                let content = match if *kind == FileKind::Symlink {
                    fs_err::read_link(&path).map(|t| t.as_os_str().as_encoded_bytes().to_vec())
                } else {
                    fs_err::read(&path)
                } {
                    Ok(content) => content,
                    // Gone since the walk (an editor's swap file): absent, as a deleted
                    // tracked file is.
                    Err(e) if is_gone(&e) => return None,
                    Err(source) => return Some(Err(InputsError::Read { path, source })),
                };
                Some(Ok(FileEntry {
                    path: rel.clone(),
                    id: blob_identity(&content),
                    kind: *kind,
                }))
            })
            .collect()
    }))
    .unwrap_or_else(|_| {
        Err(InputsError::Read {
            path: root.to_path_buf(),
            source: std::io::Error::other("a hashing thread panicked"),
        })
    })
}

/// A snapshot with the untracked files git does not ignore added ([`untracked`]): what a
/// sandbox holds and a provider without `inputs` reads. `rehashed` counts them too.
pub fn with_untracked(mut snapshot: Snapshot, exclude: &[String]) -> Result<Snapshot, InputsError> {
    let extra = untracked(&snapshot.dir, exclude)?;
    add_untracked(&mut snapshot, extra);
    Ok(snapshot)
}

/// Adds untracked files to a snapshot of tracked ones, keeping it sorted; the paths added.
/// A symbolic link with tracked files below it (a tracked directory replaced by a link to
/// where its files now are) is left out: those files are read through it, as before, and a
/// sandbox holds them as a directory.
pub fn add_untracked(snapshot: &mut Snapshot, extra: Vec<FileEntry>) -> Vec<String> {
    let files = &snapshot.files;
    let below = |dir: &str| {
        let prefix = format!("{dir}/");
        let start = files.partition_point(|f| f.path.as_str() < prefix.as_str());
        files
            .get(start)
            .is_some_and(|f| f.path.starts_with(&prefix))
    };
    let extra: Vec<FileEntry> = extra
        .into_iter()
        .filter(|f| !(f.kind == FileKind::Symlink && below(&f.path)))
        .collect();
    let added = extra.iter().map(|f| f.path.clone()).collect();
    snapshot.rehashed += extra.len();
    snapshot.files.extend(extra);
    snapshot.files.sort();
    added
}

/// The files of a snapshot (sorted by path) that `pattern` selects: only
/// the range sharing its literal prefix is matched at all, so a pattern such
/// as `pkg01/**` costs a binary search, not a pass over every file of the
/// repository.
pub fn select<'a>(
    pattern: &'a Pattern,
    files: &'a [FileEntry],
) -> impl Iterator<Item = &'a FileEntry> {
    let prefix = pattern.literal_prefix();
    let start = files.partition_point(|f| f.path.as_str() < prefix);
    files[start..]
        .iter()
        .take_while(move |f| f.path.starts_with(prefix))
        .filter(move |f| pattern.matches(&f.path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{commit, commit_all, git, write};

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
            select(&Pattern::new(pattern).expect("valid"), &files)
                .map(|f| f.path.clone())
                .collect()
        };
        // `x/**` is `x` itself and everything below it (the existing
        // implementation's reading); `x/**/*.ts` is a glob below `x/`.
        assert_eq!(pick("pkg01/**"), ["pkg01", "pkg01/a.ts", "pkg01/b/c.ts"]);
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
            let fast: Vec<&str> = select(&p, &files).map(|f| f.path.as_str()).collect();
            assert_eq!(fast, all, "{pattern}");
        }
    }

    /// The identity git gives the working-tree content of `path`.
    fn git_identity(dir: &Path, path: &str) -> Digest {
        let hex = git(dir, &["hash-object", "--no-filters", "--", path]);
        let oid = gix::ObjectId::from_hex(hex.trim().as_bytes()).expect("an object id");
        identity(&oid)
    }

    #[test]
    fn snapshot_sees_the_working_tree_as_git_does() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        for (path, content) in [
            ("a/clean.txt", "clean\n"),
            ("a/edited.txt", "before\n"),
            ("a/deleted.txt", "gone soon\n"),
            ("b/under-a-dir-that-becomes-a-file.txt", "x\n"),
            ("c/d/deep.txt", "deep\n"),
            ("run.sh", "#!/bin/sh\n"),
            ("top.txt", "top\n"),
        ] {
            write(dir, path, content);
        }
        std::os::unix::fs::symlink("a/clean.txt", dir.join("link")).expect("symlink");
        commit_all(dir);
        // What changes in the working tree after the commit.
        fs_err::write(dir.join("a/edited.txt"), "after!\n").expect("edit");
        fs_err::remove_file(dir.join("a/deleted.txt")).expect("delete");
        fs_err::remove_dir_all(dir.join("b")).expect("rm b");
        fs_err::write(dir.join("b"), "now a file\n").expect("b as a file");
        fs_err::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");

        let snap = snapshot(dir, &[]).expect("a snapshot");
        let paths: Vec<&str> = snap.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "a/clean.txt",
                "a/edited.txt",
                "c/d/deep.txt",
                "link",
                "run.sh",
                "top.txt"
            ],
            "deleted files, and files under a directory replaced by a file, are absent"
        );
        for f in snap.files.iter().filter(|f| f.kind != FileKind::Symlink) {
            assert_eq!(f.id, git_identity(dir, &f.path), "{}", f.path);
        }
        // A link's content is its target, as git stores it.
        let link_blob =
            gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, b"a/clean.txt")
                .expect("a hash");
        let link = snap.files.iter().find(|f| f.path == "link").expect("link");
        assert_eq!(link.id, identity(&link_blob));
        let kind = |p: &str| snap.files.iter().find(|f| f.path == p).map(|f| f.kind);
        assert_eq!(kind("run.sh"), Some(FileKind::Executable));
        assert_eq!(kind("link"), Some(FileKind::Symlink));
        assert_eq!(kind("top.txt"), Some(FileKind::File));
        let sub = snapshot(&dir.join("a"), &[]).expect("a snapshot of a subdirectory");
        let sub_paths: Vec<&str> = sub.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(sub_paths, ["clean.txt", "edited.txt"]);
    }

    /// Sets the modification time of `path` (a file or the index).
    fn set_mtime(path: &Path, at: std::time::SystemTime) {
        fs_err::File::options()
            .append(true)
            .open(path)
            .expect("open")
            .file()
            .set_modified(at)
            .expect("set the mtime");
    }

    /// Racily clean is decided to the clock tick: a file rewritten (same size, same mtime,
    /// ctime not trusted) in the tick the index was written is read again, while a file
    /// written earlier in the index's second — every file of a fresh clone — is not.
    #[test]
    fn racily_clean_is_decided_to_the_tick() {
        use std::time::{Duration, SystemTime};
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        git(dir, &["config", "core.trustctime", "false"]);
        write(dir, "early.txt", "early\n");
        write(dir, "same-tick.txt", "aaaa\n");
        commit_all(dir);
        let second = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let early = second + Duration::from_millis(100);
        let tick = second + Duration::from_millis(900);
        set_mtime(&dir.join("early.txt"), early);
        set_mtime(&dir.join("same-tick.txt"), tick);
        git(dir, &["update-index", "--refresh"]);
        // Rewritten in place after the index recorded it, its stat data put back.
        fs_err::write(dir.join("same-tick.txt"), "bbbb\n").expect("rewrite");
        set_mtime(&dir.join("same-tick.txt"), tick);
        set_mtime(&dir.join(".git/index"), tick);

        let snap = snapshot(dir, &[]).expect("a snapshot");
        let id = |p: &str| snap.files.iter().find(|f| f.path == p).expect(p).id;
        assert_eq!(
            id("same-tick.txt"),
            git_identity(dir, "same-tick.txt"),
            "the rewritten content, not the index's stale id"
        );
        assert_eq!(id("early.txt"), git_identity(dir, "early.txt"));
        assert_eq!(
            snap.rehashed, 1,
            "only the file of the index's tick is read"
        );
    }

    /// Several directories at once — the work tree's root, two
    /// subdirectories (one with an exclusion) and a repository nested in it —
    /// each get exactly the files `git ls-files` lists there.
    #[test]
    fn snapshots_of_many_directories_match_git_in_each() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let inner = dir.join("inner");
        fs_err::create_dir_all(&inner).expect("mkdir");
        git(&inner, &["init", "-q"]);
        write(&inner, "x.txt", "inner\n");
        write(&inner, "sub/y.txt", "inner y\n");
        commit_all(&inner);
        git(dir, &["init", "-q"]);
        for (path, content) in [
            ("a/one.txt", "one\n"),
            ("a/skip/two.txt", "two\n"),
            ("b/three.txt", "three\n"),
            ("top.txt", "top\n"),
        ] {
            write(dir, path, content);
        }
        git(dir, &["add", "a", "b", "top.txt"]);
        commit(dir);
        let none: &[String] = &[];
        let skip = ["skip/".to_owned()];
        let a = dir.join("a");
        let b = dir.join("b");
        let requests: Vec<(&Path, &[String])> = vec![
            (dir, none),
            (&a, &skip),
            (&b, none),
            (&inner, none),
            (&a, none),
        ];
        let results = snapshots(&requests);
        let listed = |d: &Path, ex: &[String]| -> Vec<String> {
            git(d, &["ls-files"])
                .lines()
                .filter(|l| !excluded(l.as_bytes(), ex))
                .map(str::to_owned)
                .collect()
        };
        for ((d, ex), result) in requests.iter().zip(&results) {
            let snap = result.as_ref().expect("a snapshot");
            let paths: Vec<String> = snap.files.iter().map(|f| f.path.clone()).collect();
            assert_eq!(paths, listed(d, ex), "{}", d.display());
            assert_eq!(snap.dir, fs_err::canonicalize(d).expect("canonical"));
            for f in &snap.files {
                assert_eq!(f.id, git_identity(d, &f.path), "{}", f.path);
            }
        }
        assert!(
            results[3]
                .as_ref()
                .is_ok_and(|s| s.files.iter().any(|f| f.path == "sub/y.txt")),
            "the nested repository is read through its own index"
        );
        let outside = tempfile::tempdir().expect("tempdir");
        let failed = snapshots(&[(outside.path(), none), (dir, none)]);
        assert!(matches!(failed[0], Err(InputsError::NotARepository { .. })));
        assert!(failed[1].is_ok(), "one failure does not fail the others");
    }
}
