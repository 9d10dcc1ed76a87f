//! An [`Execution`] as Remote Execution API messages: the Merkle tree of its input root
//! (`Directory` messages, entries sorted by name, each directory named by the digest of
//! its serialized message, identical files stored once), its `Command`, and the `Action`
//! whose digest names it. The same execution always gives the same bytes, so the same
//! action digest (a property test holds it; a BuildGrid test holds the input root's digest
//! to another implementation's).
//!
//! Choices (docs/internals/decisions.md, "A remote action is never cached by the engine"):
//! `do_not_cache` is set, and the request sets `skip_cache_lookup`: proofgraph's receipts
//! are its cache, and an action it sends is one it wants run. Outputs are listed both as
//! `output_paths` (v2.1) and as `output_files` (what a v2.0 server reads; a v2.1 server
//! ignores it when `output_paths` is set). The platform is set on the `Command` and, the
//! same, on the `Action` (v2.2 reads it there).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use prost::Message as _;
use sha2::Digest as _;

use super::input::{Content, Entry, Execution, InputError, RelPath};
use crate::store::Sha256;
use crate::store::remote::BlobDigest;

/// Where an input blob's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Blob {
    /// In memory (a `Directory`, the `Command`, the `Action`, a file given as bytes).
    Bytes(Vec<u8>),
    /// A file of the host, read again when it is uploaded (and checked to be unchanged).
    File(PathBuf),
}

impl Blob {
    /// The bytes, checked against `digest` (a host file that changed since it was
    /// encoded is refused).
    pub(super) fn read(&self, digest: BlobDigest) -> Result<Vec<u8>, InputError> {
        match self {
            Blob::Bytes(bytes) => Ok(bytes.clone()),
            Blob::File(path) => {
                let bytes = fs_err::read(path).map_err(|e| InputError::Read {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                if BlobDigest::of(&bytes) != digest {
                    return Err(InputError::Read {
                        path: path.clone(),
                        reason: "it changed after it was encoded".to_owned(),
                    });
                }
                Ok(bytes)
            }
        }
    }
}

/// An execution, encoded.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The `Action`'s digest: what `Execute` is asked to run.
    pub action: BlobDigest,
    /// The `Command`'s digest.
    pub command: BlobDigest,
    /// The input root `Directory`'s digest.
    pub input_root: BlobDigest,
    /// The outputs it declared, relative to its working directory.
    pub outputs: Vec<RelPath>,
    /// Every blob the action names (the action, command, directories, files), once each.
    pub(super) blobs: BTreeMap<BlobDigest, Blob>,
}

impl Encoded {
    /// Every blob the action names, each once.
    pub fn digests(&self) -> Vec<BlobDigest> {
        self.blobs.keys().copied().collect()
    }

    /// The bytes of the blob `digest`, when the action names it (the action, command and
    /// directories are in memory; a file is read, checked).
    pub fn blob(&self, digest: BlobDigest) -> Option<Result<Vec<u8>, InputError>> {
        self.blobs.get(&digest).map(|blob| blob.read(digest))
    }
}

/// A directory of the tree being built.
#[derive(Debug, Default)]
struct Dir {
    files: BTreeMap<String, (BlobDigest, bool)>,
    dirs: BTreeMap<String, Dir>,
    links: BTreeMap<String, String>,
}

impl Dir {
    fn has(&self, name: &str) -> bool {
        self.files.contains_key(name)
            || self.dirs.contains_key(name)
            || self.links.contains_key(name)
    }

    /// The directory at `parts`, made where missing; a file or symlink on the way is a
    /// conflict.
    fn dir_at(&mut self, path: &RelPath, parts: &[&str]) -> Result<&mut Dir, InputError> {
        let mut here = self;
        for part in parts {
            if here.files.contains_key(*part) || here.links.contains_key(*part) {
                return Err(InputError::Conflict {
                    path: path.to_string(),
                    reason: "it lies under a file or symlink",
                });
            }
            here = here.dirs.entry((*part).to_owned()).or_default();
        }
        Ok(here)
    }

    /// Serialises this directory and those under it into `blobs`; its digest.
    fn encode(&self, blobs: &mut BTreeMap<BlobDigest, Blob>) -> BlobDigest {
        let directory = reapi::Directory {
            files: self
                .files
                .iter()
                .map(|(name, (digest, executable))| reapi::FileNode {
                    name: name.clone(),
                    digest: Some(digest.to_reapi()),
                    is_executable: *executable,
                    node_properties: None,
                })
                .collect(),
            directories: self
                .dirs
                .iter()
                .map(|(name, dir)| reapi::DirectoryNode {
                    name: name.clone(),
                    digest: Some(dir.encode(blobs).to_reapi()),
                })
                .collect(),
            symlinks: self
                .links
                .iter()
                .map(|(name, target)| reapi::SymlinkNode {
                    name: name.clone(),
                    target: target.clone(),
                    node_properties: None,
                })
                .collect(),
            node_properties: None,
        };
        put(blobs, directory.encode_to_vec())
    }
}

/// Stores `bytes` under their digest; the digest.
fn put(blobs: &mut BTreeMap<BlobDigest, Blob>, bytes: Vec<u8>) -> BlobDigest {
    let digest = BlobDigest::of(&bytes);
    blobs.entry(digest).or_insert(Blob::Bytes(bytes));
    digest
}

/// The digest of the host file `path`, read in pieces.
fn file_digest(path: &Path) -> Result<BlobDigest, InputError> {
    let failed = |e: std::io::Error| InputError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut file = fs_err::File::open(path).map_err(failed)?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer).map_err(failed)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        size += n as u64;
    }
    Ok(BlobDigest {
        sha256: Sha256::from_bytes(hasher.finalize().into()),
        size,
    })
}

/// The input root of `files` into `blobs`, with `working_directory` made if missing; its
/// digest.
fn input_root(
    execution: &Execution,
    blobs: &mut BTreeMap<BlobDigest, Blob>,
) -> Result<BlobDigest, InputError> {
    let mut root = Dir::default();
    for (path, entry) in &execution.files.entries {
        let parts: Vec<&str> = path.parts().collect();
        let Some((name, parents)) = parts.split_last() else {
            continue;
        };
        let dir = root.dir_at(path, parents)?;
        let conflict = || InputError::Conflict {
            path: path.to_string(),
            reason: "another entry has this path",
        };
        match entry {
            Entry::Directory => {
                if dir.files.contains_key(*name) || dir.links.contains_key(*name) {
                    return Err(conflict());
                }
                dir.dirs.entry((*name).to_owned()).or_default();
            }
            Entry::File {
                content,
                executable,
            } => {
                if dir.has(name) {
                    return Err(conflict());
                }
                let digest = match content {
                    Content::Bytes(bytes) => put(blobs, bytes.clone()),
                    Content::Host(host) => {
                        let digest = file_digest(host)?;
                        blobs
                            .entry(digest)
                            .or_insert_with(|| Blob::File(host.clone()));
                        digest
                    }
                };
                dir.files.insert((*name).to_owned(), (digest, *executable));
            }
            Entry::Symlink { target } => {
                if dir.has(name) {
                    return Err(conflict());
                }
                dir.links.insert((*name).to_owned(), target.clone());
            }
        }
    }
    let cwd: Vec<&str> = execution.working_directory.parts().collect();
    root.dir_at(&execution.working_directory, &cwd)?;
    Ok(root.encode(blobs))
}

/// `properties` as the specification orders them: by name, then by value.
fn platform(properties: &[(String, String)]) -> Option<reapi::Platform> {
    if properties.is_empty() {
        return None;
    }
    let mut properties: Vec<reapi::platform::Property> = properties
        .iter()
        .map(|(name, value)| reapi::platform::Property {
            name: name.clone(),
            value: value.clone(),
        })
        .collect();
    properties.sort_by(|a, b| (&a.name, &a.value).cmp(&(&b.name, &b.value)));
    properties.dedup();
    Some(reapi::Platform { properties })
}

/// The `Command` of `execution`.
#[expect(
    deprecated,
    reason = "`output_files` and `Command.platform` are what v2.0 and v2.1 engines read"
)]
pub(super) fn command(execution: &Execution) -> Result<reapi::Command, InputError> {
    if execution.argv.is_empty() {
        return Err(InputError::NoCommand);
    }
    let mut outputs: Vec<String> = execution
        .outputs
        .iter()
        .map(|p| p.as_str().to_owned())
        .collect();
    if outputs.iter().any(String::is_empty) {
        return Err(InputError::Path {
            path: String::new(),
            reason: "an output cannot be the working directory itself",
        });
    }
    outputs.sort();
    outputs.dedup();
    Ok(reapi::Command {
        arguments: execution.argv.clone(),
        environment_variables: execution
            .env
            .vars()
            .iter()
            .map(|(name, value)| reapi::command::EnvironmentVariable {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        output_files: outputs.clone(),
        output_directories: Vec::new(),
        output_paths: outputs,
        platform: platform(&execution.platform),
        working_directory: execution.working_directory.as_str().to_owned(),
        output_node_properties: Vec::new(),
        output_directory_format: 0,
    })
}

/// `execution` as an action: its messages, and every blob it names.
pub fn encode(execution: &Execution) -> Result<Encoded, InputError> {
    let mut blobs = BTreeMap::new();
    let input_root = input_root(execution, &mut blobs)?;
    let command_digest = put(&mut blobs, command(execution)?.encode_to_vec());
    let timeout = execution.timeout;
    let action = reapi::Action {
        command_digest: Some(command_digest.to_reapi()),
        input_root_digest: Some(input_root.to_reapi()),
        timeout: Some(bazel_remote_apis::google::protobuf::Duration {
            seconds: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(timeout.subsec_nanos()).unwrap_or(0),
        }),
        do_not_cache: true,
        salt: Vec::new(),
        platform: platform(&execution.platform),
    };
    let action = put(&mut blobs, action.encode_to_vec());
    Ok(Encoded {
        action,
        command: command_digest,
        input_root,
        outputs: execution.outputs.clone(),
        blobs,
    })
}

#[cfg(test)]
mod tests;
