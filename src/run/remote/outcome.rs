//! A finished action's result, fetched and checked whole before any of it is returned:
//! stdout, stderr and every output blob read from the engine's CAS and checked against
//! its digest; each output's path relative, normal, one the action declared (or under a
//! declared directory), and each symlink's target inside the outputs. The outputs are
//! written to a staging directory inside the caller's and moved into place only once all
//! of them passed: a result with one blob missing or forged leaves nothing behind.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;
use std::time::SystemTime;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use fs_err::os::unix::fs::OpenOptionsExt as _;
use prost::Message as _;

use super::action::Encoded;
use super::engine::ExecError;
use super::input::{RelPath, symlink_stays_inside};
use crate::store::remote::{
    Backend as _, BlobDigest, Deadline, Grpc, RemoteError, Settings, escaped,
};

/// The largest blob of a result that is read (a log, a report, a `Tree`).
pub const MAX_BLOB_BYTES: u64 = 256 << 20;
/// How deep an output directory's tree may nest.
const MAX_DEPTH: usize = 256;

/// One output written under the caller's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A regular file, its bytes checked against `digest`.
    File {
        /// Where, relative to the outputs directory (the action's working directory).
        path: RelPath,
        /// Its digest.
        digest: BlobDigest,
        /// Whether it is executable.
        executable: bool,
    },
    /// A symlink whose target stays inside the outputs.
    Symlink {
        /// Where.
        path: RelPath,
        /// Its target.
        target: String,
    },
    /// A directory (an output directory, or one inside it).
    Directory {
        /// Where.
        path: RelPath,
    },
}

/// What the engine says of where and when the action ran (`ExecutedActionMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    /// The worker, as the engine names it (escaped).
    pub worker: String,
    /// When it was queued.
    pub queued: Option<SystemTime>,
    /// When a worker took it.
    pub worker_start: Option<SystemTime>,
    /// When the worker was done with it.
    pub worker_completed: Option<SystemTime>,
    /// When its command started.
    pub execution_start: Option<SystemTime>,
    /// When its command ended.
    pub execution_completed: Option<SystemTime>,
}

/// An action that ran, every blob of its result fetched and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The command's exit code.
    pub exit_code: i32,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
    /// The outputs, written under the caller's directory.
    pub outputs: Vec<Output>,
    /// Where and when it ran.
    pub metadata: Metadata,
    /// The engine's address.
    pub engine: String,
    /// The operation's name.
    pub operation: String,
    /// The action's digest.
    pub action: BlobDigest,
    /// Whether the engine answered from its cache instead of running it (it was asked
    /// not to: a caller treats such an outcome as it sees fit).
    pub cached: bool,
    /// What the engine said beside the result (escaped).
    pub message: String,
}

fn time(t: Option<&bazel_remote_apis::google::protobuf::Timestamp>) -> Option<SystemTime> {
    let t = t?;
    let seconds = u64::try_from(t.seconds).ok()?;
    let nanos = u32::try_from(t.nanos).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(seconds, nanos.min(999_999_999)))
}

fn metadata(m: Option<&reapi::ExecutedActionMetadata>) -> Metadata {
    let Some(m) = m else {
        return Metadata::default();
    };
    Metadata {
        worker: escaped(&m.worker),
        queued: time(m.queued_timestamp.as_ref()),
        worker_start: time(m.worker_start_timestamp.as_ref()),
        worker_completed: time(m.worker_completed_timestamp.as_ref()),
        execution_start: time(m.execution_start_timestamp.as_ref()),
        execution_completed: time(m.execution_completed_timestamp.as_ref()),
    }
}

/// Reads and checks a result's blobs, and writes its outputs.
struct Fetch<'a> {
    grpc: &'a Grpc,
    settings: &'a Settings,
    operation: &'a str,
    /// The declared outputs.
    declared: &'a [RelPath],
    /// Where outputs are written before they are moved into place.
    staging: &'a Path,
    outputs: Vec<Output>,
    /// Paths written so far.
    placed: BTreeSet<RelPath>,
    /// Symlinks, made after every file and directory (so no write goes through one).
    links: Vec<(RelPath, String)>,
}

impl Fetch<'_> {
    fn integrity(&self, reason: String) -> ExecError {
        ExecError::Integrity {
            engine: self.grpc.name().to_owned(),
            operation: self.operation.to_owned(),
            reason,
        }
    }

    /// The blob `digest` names (`what` it is, for messages), read and checked.
    async fn blob(&self, what: &str, digest: Option<&reapi::Digest>) -> Result<Vec<u8>, ExecError> {
        let Some(digest) = digest else {
            return Err(self.integrity(format!("{what} names no digest")));
        };
        let digest = BlobDigest::from_reapi(digest)
            .map_err(|reason| self.integrity(format!("{what} names {reason}")))?;
        if digest.size > MAX_BLOB_BYTES {
            return Err(self.integrity(format!(
                "{what} is the blob {digest}, larger than the {MAX_BLOB_BYTES} bytes a result's blob may be"
            )));
        }
        let until = Deadline::after(self.settings.deadline(digest.size));
        let bytes = match self.grpc.read_blob(digest, until).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(self.integrity(format!(
                    "{what} is the blob {digest}, which the engine does not have"
                )));
            }
            Err(RemoteError::Corrupt { reason, .. }) => {
                return Err(self.integrity(format!("{what}: {reason}")));
            }
            Err(e) => {
                return Err(ExecError::Lost {
                    engine: self.grpc.name().to_owned(),
                    operation: self.operation.to_owned(),
                    reason: format!("its result could not be fetched: {e}"),
                });
            }
        };
        self.check(what, digest, &bytes)?;
        Ok(bytes)
    }

    fn check(&self, what: &str, digest: BlobDigest, bytes: &[u8]) -> Result<(), ExecError> {
        let got = BlobDigest::of(bytes);
        if got != digest {
            return Err(self.integrity(format!(
                "{what} should be the blob {digest} and the engine served {got}"
            )));
        }
        Ok(())
    }

    /// A log: its blob, or the bytes sent inline (checked against the digest when one is
    /// named too).
    async fn log(
        &self,
        what: &str,
        digest: Option<&reapi::Digest>,
        raw: &[u8],
    ) -> Result<Vec<u8>, ExecError> {
        match digest {
            None => Ok(raw.to_vec()),
            Some(d) if !raw.is_empty() => {
                let digest = BlobDigest::from_reapi(d)
                    .map_err(|reason| self.integrity(format!("{what} names {reason}")))?;
                self.check(what, digest, raw)?;
                Ok(raw.to_vec())
            }
            Some(_) => self.blob(what, digest).await,
        }
    }

    /// `path` from the result, checked: normal and declared (or under a declared
    /// directory).
    fn output_path(&self, path: &str) -> Result<RelPath, ExecError> {
        let shown = escaped(path);
        let rel = RelPath::new(path).map_err(|_| {
            self.integrity(format!(
                "it names the output `{shown}`, which is not a relative normal path"
            ))
        })?;
        let declared = self
            .declared
            .iter()
            .any(|d| rel == *d || rel.as_str().starts_with(&format!("{}/", d.as_str())));
        if !declared || rel.as_str().is_empty() {
            return Err(self.integrity(format!(
                "it names the output `{shown}`, which the action did not declare"
            )));
        }
        Ok(rel)
    }

    fn claim(&mut self, path: &RelPath) -> Result<(), ExecError> {
        if !self.placed.insert(path.clone()) {
            return Err(self.integrity(format!("it names the output `{path}` twice")));
        }
        Ok(())
    }

    /// The directory that will hold `path`, made part by part under the staging
    /// directory; never through a symlink.
    fn parent(&self, path: &RelPath) -> Result<std::path::PathBuf, ExecError> {
        let parts: Vec<&str> = path.parts().collect();
        let mut here = self.staging.to_path_buf();
        for part in &parts[..parts.len().saturating_sub(1)] {
            here.push(part);
            match fs_err::symlink_metadata(&here) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(self.integrity(format!("it puts the output `{path}` under a file")));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    fs_err::create_dir(&here).map_err(|source| ExecError::Write {
                        path: here.clone(),
                        source,
                    })?;
                }
                Err(source) => return Err(ExecError::Write { path: here, source }),
            }
        }
        Ok(here)
    }

    fn write_file(
        &mut self,
        path: RelPath,
        bytes: &[u8],
        digest: BlobDigest,
        executable: bool,
    ) -> Result<(), ExecError> {
        self.claim(&path)?;
        let dir = self.parent(&path)?;
        let name = path.parts().last().unwrap_or_default();
        let at = dir.join(name);
        let failed = |source| ExecError::Write {
            path: at.clone(),
            source,
        };
        let mut file = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if executable { 0o755 } else { 0o644 })
            .open(&at)
            .map_err(failed)?;
        file.write_all(bytes).map_err(failed)?;
        self.outputs.push(Output::File {
            path,
            digest,
            executable,
        });
        Ok(())
    }

    fn make_dir(&mut self, path: RelPath) -> Result<(), ExecError> {
        self.claim(&path)?;
        let dir = self.parent(&path)?;
        let at = dir.join(path.parts().last().unwrap_or_default());
        fs_err::create_dir(&at).map_err(|source| ExecError::Write {
            path: at.clone(),
            source,
        })?;
        self.outputs.push(Output::Directory { path });
        Ok(())
    }

    fn link(&mut self, path: RelPath, target: &str) -> Result<(), ExecError> {
        if !symlink_stays_inside(&path, target) {
            return Err(self.integrity(format!(
                "the output `{path}` is a symlink to `{}`, outside the outputs",
                escaped(target)
            )));
        }
        self.claim(&path)?;
        self.links.push((path, target.to_owned()));
        Ok(())
    }

    async fn file(&mut self, file: &reapi::OutputFile) -> Result<(), ExecError> {
        let path = self.output_path(&file.path)?;
        let what = format!("the output `{path}`");
        let bytes = match (&file.digest, file.contents.is_empty()) {
            (Some(d), false) => {
                let digest = BlobDigest::from_reapi(d)
                    .map_err(|reason| self.integrity(format!("{what} names {reason}")))?;
                self.check(&what, digest, &file.contents)?;
                file.contents.clone()
            }
            _ => self.blob(&what, file.digest.as_ref()).await?,
        };
        let digest = BlobDigest::of(&bytes);
        self.write_file(path, &bytes, digest, file.is_executable)
    }

    /// An output directory: its `Tree` read and checked, then every file in it.
    async fn directory(&mut self, dir: &reapi::OutputDirectory) -> Result<(), ExecError> {
        let path = self.output_path(&dir.path)?;
        let what = format!("the output directory `{path}`");
        let tree = self.blob(&what, dir.tree_digest.as_ref()).await?;
        let tree = reapi::Tree::decode(tree.as_slice())
            .map_err(|e| self.integrity(format!("{what}'s tree cannot be read: {e}")))?;
        let children: BTreeMap<BlobDigest, reapi::Directory> = tree
            .children
            .into_iter()
            .map(|c| (BlobDigest::of(&c.encode_to_vec()), c))
            .collect();
        let Some(root) = tree.root else {
            return Err(self.integrity(format!("{what}'s tree has no root")));
        };
        self.make_dir(path.clone())?;
        // Depth first, with an explicit stack (a tree cannot loop, but it can be deep).
        let mut stack = vec![(path, root, 0usize)];
        while let Some((at, dir, depth)) = stack.pop() {
            if depth > MAX_DEPTH {
                return Err(self.integrity(format!("{what} nests deeper than {MAX_DEPTH}")));
            }
            let name = |n: &str| {
                if n.is_empty() || n.contains('/') {
                    return Err(self.integrity(format!("{what} holds the name `{}`", escaped(n))));
                }
                at.join(n)
                    .map_err(|_| self.integrity(format!("{what} holds the name `{}`", escaped(n))))
            };
            let files: Vec<(RelPath, reapi::FileNode)> = dir
                .files
                .iter()
                .map(|f| name(&f.name).map(|p| (p, f.clone())))
                .collect::<Result<_, _>>()?;
            let links: Vec<(RelPath, String)> = dir
                .symlinks
                .iter()
                .map(|s| name(&s.name).map(|p| (p, s.target.clone())))
                .collect::<Result<_, _>>()?;
            let mut subdirs = Vec::new();
            for d in &dir.directories {
                let sub = name(&d.name)?;
                let digest = d
                    .digest
                    .as_ref()
                    .and_then(|d| BlobDigest::from_reapi(d).ok())
                    .and_then(|d| children.get(&d).cloned());
                let Some(child) = digest else {
                    return Err(
                        self.integrity(format!("{what}'s tree lacks the directory `{sub}`"))
                    );
                };
                subdirs.push((sub, child));
            }
            for (path, file) in files {
                let what = format!("the output `{path}`");
                let bytes = self.blob(&what, file.digest.as_ref()).await?;
                let digest = BlobDigest::of(&bytes);
                self.write_file(path, &bytes, digest, file.is_executable)?;
            }
            for (path, target) in links {
                self.link(path, &target)?;
            }
            for (sub, child) in subdirs {
                self.make_dir(sub.clone())?;
                stack.push((sub, child, depth + 1));
            }
        }
        Ok(())
    }

    /// Makes the symlinks, last.
    fn make_links(&mut self) -> Result<(), ExecError> {
        for (path, target) in std::mem::take(&mut self.links) {
            let dir = self.parent(&path)?;
            let at = dir.join(path.parts().last().unwrap_or_default());
            fs_err::os::unix::fs::symlink(&target, &at).map_err(|source| ExecError::Write {
                path: at.clone(),
                source,
            })?;
            self.outputs.push(Output::Symlink { path, target });
        }
        Ok(())
    }
}

/// The outcome of the finished operation `operation` of `encoded`: its result's blobs
/// fetched and checked, its outputs written under `outputs` (made if missing).
pub(super) async fn fetch(
    grpc: &Grpc,
    settings: &Settings,
    encoded: &Encoded,
    operation: &str,
    response: reapi::ExecuteResponse,
    outputs: &Path,
) -> Result<Outcome, ExecError> {
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExecError::Write { path, source }
    };
    fs_err::create_dir_all(outputs).map_err(write(outputs))?;
    let staging = tempfile::Builder::new()
        .prefix(".proofgraph-staging-")
        .tempdir_in(outputs)
        .map_err(write(outputs))?;
    let mut fetch = Fetch {
        grpc,
        settings,
        operation,
        declared: &encoded.outputs,
        staging: staging.path(),
        outputs: Vec::new(),
        placed: BTreeSet::new(),
        links: Vec::new(),
    };
    let Some(result) = response.result else {
        return Err(fetch.integrity("the engine sent no ActionResult".to_owned()));
    };
    let stdout = fetch
        .log(
            "its stdout",
            result.stdout_digest.as_ref(),
            &result.stdout_raw,
        )
        .await?;
    let stderr = fetch
        .log(
            "its stderr",
            result.stderr_digest.as_ref(),
            &result.stderr_raw,
        )
        .await?;
    for file in &result.output_files {
        fetch.file(file).await?;
    }
    for dir in &result.output_directories {
        fetch.directory(dir).await?;
    }
    #[expect(deprecated, reason = "v2.0 engines report symlinks in these fields")]
    let links = result
        .output_symlinks
        .iter()
        .chain(&result.output_file_symlinks)
        .chain(&result.output_directory_symlinks);
    let mut seen_links = BTreeSet::new();
    for link in links {
        // v2.1 engines may report a symlink in both the new field and the old.
        if !seen_links.insert((link.path.clone(), link.target.clone())) {
            continue;
        }
        let path = fetch.output_path(&link.path)?;
        fetch.link(path, &link.target)?;
    }
    fetch.make_links()?;
    // Every blob checked: into place.
    let mut names: Vec<_> = fs_err::read_dir(staging.path())
        .map_err(write(staging.path()))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(write(staging.path()))?;
    names.sort();
    for name in names {
        let to = outputs.join(&name);
        if fs_err::symlink_metadata(&to).is_ok() {
            return Err(ExecError::Write {
                path: to,
                source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            });
        }
        fs_err::rename(staging.path().join(&name), &to).map_err(write(&to))?;
    }
    let mut written = fetch.outputs;
    written.sort_by(|a, b| output_path(a).cmp(output_path(b)));
    Ok(Outcome {
        exit_code: result.exit_code,
        stdout,
        stderr,
        outputs: written,
        metadata: metadata(result.execution_metadata.as_ref()),
        engine: grpc.name().to_owned(),
        operation: operation.to_owned(),
        action: encoded.action,
        cached: response.cached_result,
        message: escaped(&response.message),
    })
}

fn output_path(output: &Output) -> &RelPath {
    match output {
        Output::File { path, .. } | Output::Symlink { path, .. } | Output::Directory { path } => {
            path
        }
    }
}
