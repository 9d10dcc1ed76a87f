//! The local store, `.proofgraph/` at the OpenSpec root: content-addressed,
//! versioned, safe against `kill -9` at any instant and against concurrent
//! runs.
//!
//! ```text
//! .proofgraph/
//!   .gitignore                 "*": the store is never tracked
//!   store.json                 {"format": "proofgraph-store", "version": 1, "entries": "files"}
//!   keys/workspace.key         the workspace's Ed25519 signing key (PKCS#8 PEM, mode 0600)
//!   keys/workspace.pub         its public key (SPKI PEM); trusted only when pinned
//!                              outside the store (see `crate::proof::trust`)
//!   cas/<2>/<62>               blobs by SHA-256: receipt envelopes, logs, reports, input listings
//!   ac/<2>/<62>                action cache: SHA-256 of (fingerprint, receipt name, capability)
//!                              → the SHA-256 of the receipt envelope that answers it
//!   refs/<change>/<name>@<capability>   the latest receipt for a requirement, any fingerprint
//!   tmp/                       temporary files, renamed into place
//!   runs/<run id>/             sandboxes and logs of a run in progress
//! ```
//!
//! (docs/store.md shows the rest: setup trees, caches, artifacts, `watch.sock`.)
//!
//! Every write goes to a temporary file in `tmp/` that is flushed and then
//! renamed into place, so a reader sees a whole file or none. A blob's name
//! is the SHA-256 of its bytes and is checked on every read; a blob that does
//! not match (a torn disk, a hand edit) is ignored, never trusted. Action
//! cache and ref entries are pointers replaced by rename: concurrent runs
//! that prove the same thing both write valid entries and the last rename
//! wins. Nothing is ever rewritten in place.
//!
//! A pointer is a regular file holding the receipt's digest as 64 lowercase hex digits and
//! a newline, the spelling every version has read. The store holds no symbolic link: a tool
//! that walks the repository (`node --test`, a linter, a backup) opens every file of it.
//! Earlier versions (from af316a2) wrote pointers as symbolic links to
//! `sha256-<unpadded base64url>`, which name no file and so dangle; such a link is still
//! read wherever it is found, the first writable [`Store::open`] of a store whose
//! `store.json` lacks `"entries": "files"` rewrites every one as a file (and records that
//! it did), and [`Store::collect`] rewrites any it meets later (one an older proofgraph
//! wrote into a converted store). What the project's own commands made — setup trees,
//! declared caches, artifacts, a kept sandbox — is kept as they made it, links included:
//! those are the project's files, not the store's.
use std::io::Write as _;
use std::path::{Path, PathBuf};

use proofgraph_graph::fingerprint::Fingerprint;
use proofgraph_graph::{CapabilityName, ChangeName, ProviderId};
use sha2::Digest as _;

use crate::attest::keys;

/// The store directory's name at the OpenSpec root.
pub const DIR: &str = ".proofgraph";
/// The layout version written to `store.json`.
pub const VERSION: u64 = 1;
/// What `store.json` says under `entries` once every pointer of the store is a regular
/// file (see the module documentation); a store without it may hold symbolic links.
const ENTRIES_ARE_FILES: &str = "files";

/// A store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or directory could not be read or written.
    #[error("{action} `{path}`: {source}")]
    Io {
        /// What was being done ("write", "read", "create").
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store was written by a newer proofgraph.
    #[error(
        "open the store `{path}`: it has layout version {found}, this proofgraph reads version {VERSION}"
    )]
    Version {
        /// The store.
        path: PathBuf,
        /// What it says.
        found: String,
    },
    /// A key could not be created or read.
    #[error(transparent)]
    Key(#[from] keys::KeyError),
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// A SHA-256 digest: what names a blob, an action-cache key or the receipt an entry points
/// at. Written and compared as 32 bytes; shown (and serialized) as 64 lowercase hex digits,
/// the form every file of the store uses.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256([u8; 32]);

impl Sha256 {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(sha2::Sha256::digest(bytes).into())
    }

    /// A digest computed elsewhere (a binding's SHA-256).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Reads 64 lowercase hex digits (the store's spelling); anything else is `None`.
    pub fn parse(hex: &str) -> Option<Self> {
        if !is_sha256_hex(hex) {
            return None;
        }
        proofgraph_graph::fingerprint::decode_hex(hex).map(Self)
    }

    /// The 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        proofgraph_graph::fingerprint::hex(&self.0)
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Display for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl std::fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sha256({})", self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Sha256 {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Sha256::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not 64 lowercase hex digits"))
        })
    }
}

impl serde::Serialize for Sha256 {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// SHA-256 of bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    proofgraph_graph::fingerprint::hex(&sha2::Sha256::digest(bytes))
}

/// The target an earlier version gave the symbolic link of a pointer to the blob `sha256`
/// (hex): `sha256-<unpadded base64url>`; `None` when `sha256` is not 64 lowercase hex
/// digits. [`decode_link_target`] reads it. Nothing writes it any more: it spells such a
/// link for the tests and fuzz targets that check old stores still read.
pub fn pointer_target(sha256: &str) -> Option<String> {
    use base64::Engine as _;
    if !is_sha256_hex(sha256) {
        return None;
    }
    let digest = proofgraph_graph::fingerprint::Digest::from_hex(sha256)?;
    Some(format!(
        "sha256-{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.0)
    ))
}

/// The content of a pointer to `sha256`: its 64 lowercase hex digits and a newline.
/// [`decode_entry_file`] reads it.
pub fn entry_file(sha256: &Sha256) -> String {
    format!("{sha256}\n")
}

/// The blob a pointer names (hex), or `None` when it is absent or malformed: a regular
/// file holding the hex digest (what the store writes), or a symbolic link an earlier
/// version wrote.
fn read_pointer(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt as _;
    match fs_err::read_link(path) {
        Ok(target) => decode_link_target(target.as_os_str().as_bytes()),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            decode_entry_file(&fs_err::read(path).ok()?)
        }
        Err(_) => None,
    }
}

/// The blob (hex) a pointer's symbolic-link target names: `sha256-` and the 32 digest
/// bytes in unpadded base64url, nothing else; `None` for any other target.
pub fn decode_link_target(target: &[u8]) -> Option<String> {
    use base64::Engine as _;
    let encoded = std::str::from_utf8(target).ok()?.strip_prefix("sha256-")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()?;
    (bytes.len() == 32).then(|| proofgraph_graph::fingerprint::hex(&bytes))
}

/// The blob (hex) an entry written as a regular file names: 64 lowercase hex digits,
/// surrounding whitespace allowed; `None` otherwise.
pub fn decode_entry_file(bytes: &[u8]) -> Option<String> {
    let digest = std::str::from_utf8(bytes).ok()?.trim();
    is_sha256_hex(digest).then(|| digest.to_owned())
}

/// Whether `text` is 64 lowercase hex digits.
pub fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Where the workspace's key pair lives in a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFiles {
    /// `keys/workspace.key`: the signing key, PKCS#8 PEM, mode 0600.
    pub private: PathBuf,
    /// `keys/workspace.pub`: its public half, SPKI PEM.
    pub public: PathBuf,
}

/// The youngest a blob may be and still be removed by [`Store::collect`].
pub const MIN_GC_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// What [`Store::collect`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Collected {
    /// Blobs removed.
    pub removed: u64,
    /// Their bytes.
    pub freed: u64,
    /// Blobs kept.
    pub kept: u64,
    /// Their bytes.
    pub kept_bytes: u64,
    /// Action-cache entries and refs removed with their blob.
    pub entries_removed: u64,
    /// Refs of git input trees (`refs/proofgraph/inputs/`) no receipt left names, deleted.
    pub trees_removed: u64,
    /// Kept setup trees no repository needs now and not used within `--keep`, removed.
    pub setup_trees_removed: u64,
    /// Their bytes.
    pub setup_bytes_freed: u64,
}

/// An open store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// Directories this process made or found (they are never removed while a store is
    /// open, but `sweep` and `runs/` clean-up remove only `tmp/` files and run
    /// directories, never a directory entries are written to).
    dirs: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
    /// Action-cache entries this process wrote or read, so that each is read from disk at
    /// most once (prove's reuse check and its final status, or `status`'s verification and
    /// its answer, look up the same entries). What it wrote wins over what it read; another
    /// process replacing an entry meanwhile could only name another receipt of the same
    /// fingerprint.
    actions: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<Sha256, Sha256>>>,
}

impl Store {
    /// Opens (creating when absent) the store under `root`.
    pub fn open(root: &Path) -> Result<Self, StoreError> {
        let dir = root.join(DIR);
        let store = Self {
            dir,
            dirs: std::sync::Arc::default(),
            actions: std::sync::Arc::default(),
        };
        for sub in ["cas", "ac", "refs", "tmp", "runs", "keys"] {
            let p = store.dir.join(sub);
            fs_err::create_dir_all(&p).map_err(io("create", &p))?;
        }
        let ignore = store.dir.join(".gitignore");
        if !ignore.exists() {
            store.write_atomic(
                &ignore,
                b"# proofgraph's store: receipts, logs and keys; never tracked.\n*\n",
            )?;
        }
        let marker = store.dir.join("store.json");
        let converted = match fs_err::read_to_string(&marker) {
            Ok(text) => {
                let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                if value["version"].as_u64() != Some(VERSION) {
                    return Err(StoreError::Version {
                        path: store.dir.clone(),
                        found: value["version"].to_string(),
                    });
                }
                value["entries"].as_str() == Some(ENTRIES_ARE_FILES)
            }
            Err(_) => false,
        };
        // Once per store: an earlier version's links become files. One that cannot be
        // rewritten now still reads, and `cache gc` rewrites it.
        if !converted {
            store.convert_links();
            let body = format!(
                "{{\"format\": \"proofgraph-store\", \"version\": {VERSION}, \"entries\": \"{ENTRIES_ARE_FILES}\"}}\n"
            );
            store.write_atomic(&marker, body.as_bytes())?;
        }
        Ok(store)
    }

    /// Rewrites every pointer of `ac/` and `refs/` that is a symbolic link (as earlier
    /// versions wrote them) as a regular file naming the same blob, and removes a link that
    /// names none (it was no entry).
    fn convert_links(&self) {
        let mut stack = vec![self.dir.join("ac"), self.dir.join("refs")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs_err::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(entry.path()),
                    Ok(t) if t.is_symlink() => self.convert_link(&entry.path()),
                    _ => {}
                }
            }
        }
    }

    /// Rewrites the link `path` as a file naming the same blob, or removes it when it names
    /// none. It is checked to still be a link just before it is replaced, so that an entry
    /// another process wrote meanwhile is not put back to what the link said.
    fn convert_link(&self, path: &Path) {
        match read_pointer(path).as_deref().and_then(Sha256::parse) {
            Some(sha) => {
                if fs_err::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                    let _ = self.write_pointer(path, &sha);
                }
            }
            None => {
                let _ = fs_err::remove_file(path);
            }
        }
    }

    /// The store under `root` for reading only: nothing is created, and an
    /// absent store reads as empty.
    pub fn open_read_only(root: &Path) -> Self {
        Self {
            dirs: std::sync::Arc::default(),
            actions: std::sync::Arc::default(),
            dir: root.join(DIR),
        }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` to `path` atomically: a temporary file in `tmp/`, then
    /// renamed into place. A killed process leaves the old file or the new
    /// one, never a mix. There is no fsync: after a power loss a file may be
    /// lost or empty, which every reader detects (blobs by their digest,
    /// entries by their format) and ignores, so a crash can lose a receipt
    /// but never make one that was not observed.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        self.remaking_dirs(|| self.try_write_atomic(path, bytes))
    }

    /// Runs a write; when it fails because a directory this process made was removed
    /// since (the store deleted by hand while a run was writing), makes them again and
    /// runs it once more.
    fn remaking_dirs(&self, write: impl Fn() -> Result<(), StoreError>) -> Result<(), StoreError> {
        match write() {
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                self.dirs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clear();
                write()
            }
            other => other,
        }
    }

    fn try_write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let tmp_dir = self.dir.join("tmp");
        self.ensure_dir(&tmp_dir)?;
        if let Some(parent) = path.parent() {
            self.ensure_dir(parent)?;
        }
        let mut tmp = tempfile::Builder::new()
            .prefix("write-")
            .tempfile_in(&tmp_dir)
            .map_err(io("create a temporary file in", &tmp_dir))?;
        tmp.write_all(bytes).map_err(io("write", tmp.path()))?;
        tmp.persist(path).map_err(|e| StoreError::Io {
            action: "rename into",
            path: path.to_path_buf(),
            source: e.error,
        })?;
        Ok(())
    }

    /// Creates a directory (and its parents) unless this process already did or saw it.
    fn ensure_dir(&self, dir: &Path) -> Result<(), StoreError> {
        if self
            .dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(dir)
        {
            return Ok(());
        }
        fs_err::create_dir_all(dir).map_err(io("create", dir))?;
        self.dirs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(dir.to_path_buf());
        Ok(())
    }

    /// Where a blob lives (for copying it out without reading it into memory).
    pub fn blob_path(&self, sha256: &Sha256) -> PathBuf {
        self.cas_path(sha256)
    }

    fn cas_path(&self, sha256: &Sha256) -> PathBuf {
        let hex = sha256.to_hex();
        self.dir.join("cas").join(&hex[..2]).join(&hex[2..])
    }

    /// Stores a blob; returns its SHA-256. Writing a blob that exists is a
    /// no-op (the name is the content).
    pub fn put(&self, bytes: &[u8]) -> Result<Sha256, StoreError> {
        let digest = Sha256::of(bytes);
        let path = self.cas_path(&digest);
        if !path.exists() {
            self.write_atomic(&path, bytes)?;
        }
        Ok(digest)
    }

    /// Stores a blob that is almost surely not in the store yet (a freshly signed
    /// envelope), without first checking whether it is; returns its SHA-256. Writing a
    /// blob that exists replaces it with the same bytes, which is harmless.
    pub fn put_new(&self, bytes: &[u8]) -> Result<Sha256, StoreError> {
        let digest = Sha256::of(bytes);
        self.write_atomic(&self.cas_path(&digest), bytes)?;
        Ok(digest)
    }

    /// Reads a blob, checking that its content matches its name; `None` when
    /// it is absent or corrupt.
    pub fn get(&self, sha256: &Sha256) -> Option<Vec<u8>> {
        let bytes = fs_err::read(self.cas_path(sha256)).ok()?;
        (Sha256::of(&bytes) == *sha256).then_some(bytes)
    }

    /// Whether a blob is present and intact.
    pub fn has(&self, sha256: &Sha256) -> bool {
        self.get(sha256).is_some()
    }

    /// The action-cache key of a receipt: which fingerprint, under which
    /// receipt name, for which capability.
    pub fn action_key(
        fingerprint: &Fingerprint,
        receipt: &ProviderId,
        capability: &CapabilityName,
    ) -> Sha256 {
        Sha256::of(format!("proofgraph/ac/v1\0{fingerprint}\0{receipt}\0{capability}").as_bytes())
    }

    fn ac_path(&self, key: &Sha256) -> PathBuf {
        let hex = key.to_hex();
        self.dir.join("ac").join(&hex[..2]).join(&hex[2..])
    }

    /// Points an action-cache key at a receipt blob.
    pub fn set_action(&self, key: &Sha256, receipt_sha256: &Sha256) -> Result<(), StoreError> {
        self.write_pointer(&self.ac_path(key), receipt_sha256)?;
        self.actions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(*key, *receipt_sha256);
        Ok(())
    }

    /// The receipt blob an action-cache key points at, if any (and well formed).
    pub fn action(&self, key: &Sha256) -> Option<Sha256> {
        let actions = || {
            self.actions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(sha) = actions().get(key) {
            return Some(*sha);
        }
        let sha = read_pointer(&self.ac_path(key))
            .as_deref()
            .and_then(Sha256::parse)?;
        // An entry this process wrote meanwhile stays what it wrote.
        Some(*actions().entry(*key).or_insert(sha))
    }

    /// Every receipt an action-cache entry points at (each once, in no order): the store's
    /// history of receipts, for a command that compares with more than the latest.
    pub fn action_targets(&self) -> Vec<Sha256> {
        let mut out = std::collections::BTreeSet::new();
        let Ok(prefixes) = fs_err::read_dir(self.dir.join("ac")) else {
            return Vec::new();
        };
        for prefix in prefixes.flatten() {
            let Ok(entries) = fs_err::read_dir(prefix.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                if let Some(sha) = read_pointer(&entry.path())
                    .as_deref()
                    .and_then(Sha256::parse)
                {
                    out.insert(sha);
                }
            }
        }
        out.into_iter().collect()
    }

    fn ref_path(
        &self,
        change: &ChangeName,
        receipt: &ProviderId,
        capability: &CapabilityName,
    ) -> PathBuf {
        self.dir
            .join("refs")
            .join(change.as_str())
            .join(format!("{receipt}@{capability}"))
    }

    /// Records the latest receipt for a requirement (any fingerprint).
    pub fn set_ref(
        &self,
        change: &ChangeName,
        receipt: &ProviderId,
        capability: &CapabilityName,
        receipt_sha256: &Sha256,
    ) -> Result<(), StoreError> {
        self.write_pointer(&self.ref_path(change, receipt, capability), receipt_sha256)
    }

    /// The latest receipt for a requirement, if any.
    pub fn latest(
        &self,
        change: &ChangeName,
        receipt: &ProviderId,
        capability: &CapabilityName,
    ) -> Option<Sha256> {
        read_pointer(&self.ref_path(change, receipt, capability))
            .as_deref()
            .and_then(Sha256::parse)
    }

    /// Points an entry at a blob: a regular file holding its digest, written to `tmp/` and
    /// renamed into place (see the module documentation).
    fn write_pointer(&self, path: &Path, sha256: &Sha256) -> Result<(), StoreError> {
        self.write_atomic(path, entry_file(sha256).as_bytes())
    }

    /// Where the artifacts a provider handed to its dependents are kept, for the run
    /// whose fingerprint is `fingerprint` (`artifacts/<hex>`, a directory renamed into
    /// place complete; absent until one is kept).
    pub fn artifact_tree(
        &self,
        fingerprint: &proofgraph_graph::fingerprint::Fingerprint,
    ) -> PathBuf {
        self.dir.join("artifacts").join(fingerprint.to_string())
    }

    /// A fresh directory for one run's sandboxes and logs.
    pub fn run_dir(&self, run_id: &str) -> Result<PathBuf, StoreError> {
        let dir = self.dir.join("runs").join(run_id);
        fs_err::create_dir_all(&dir).map_err(io("create", &dir))?;
        Ok(dir)
    }

    /// The workspace's key files: `keys/workspace.key` (the signing key) and
    /// `keys/workspace.pub` (its public half). Whether the key in them is trusted is
    /// not the store's to say: see [`crate::proof::trust`].
    pub fn key_files(&self) -> KeyFiles {
        let keys = self.dir.join("keys");
        KeyFiles {
            private: keys.join("workspace.key"),
            public: keys.join("workspace.pub"),
        }
    }

    /// Installs `key` as the workspace's signing key (PKCS#8 PEM, mode 0600) unless
    /// the store already has one; returns whether it did. The key is written to a
    /// file in `tmp/` and hard-linked into place, which fails if a signing key
    /// exists, so a key is never replaced and two writers never both succeed.
    pub fn install_signing_key(&self, key: &ed25519_dalek::SigningKey) -> Result<bool, StoreError> {
        let private = self.key_files().private;
        let key_dir = self.dir.join("keys");
        self.ensure_dir(&key_dir)?;
        let tmp_dir = self.dir.join("tmp");
        self.ensure_dir(&tmp_dir)?;
        let pem = keys::signing_key_to_pem(key);
        let tmp = tempfile::Builder::new()
            .prefix("key-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .tempfile_in(&tmp_dir)
            .map_err(io("create a temporary file in", &tmp_dir))?;
        tmp.as_file()
            .write_all(pem.as_bytes())
            .map_err(io("write", tmp.path()))?;
        match fs_err::hard_link(tmp.path(), &private) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io("link", &private)(e)),
        }
    }

    /// Writes the workspace's public key file (replacing it).
    pub fn write_public_key(&self, key: &ed25519_dalek::VerifyingKey) -> Result<(), StoreError> {
        self.write_atomic(
            &self.key_files().public,
            keys::public_key_to_pem(key).as_bytes(),
        )
    }

    /// Removes blobs nobody needs: those not in `protect` (the caller's: every blob a
    /// current receipt needs) and older than `keep` — never one younger than
    /// [`MIN_GC_AGE`], whatever `keep` says, since a run writing now makes its blobs before
    /// the entries that name them. Then, while the blobs left weigh more than `max_bytes`,
    /// the oldest of those that may go. Entries and refs that named a removed blob go too,
    /// and any left that is a symbolic link (an older proofgraph wrote it) becomes a file.
    pub fn collect(
        &self,
        protect: &std::collections::HashSet<Sha256>,
        keep: std::time::Duration,
        max_bytes: Option<u64>,
    ) -> Result<Collected, StoreError> {
        let keep = keep.max(MIN_GC_AGE);
        let now = std::time::SystemTime::now();
        let mut blobs = Vec::new();
        let cas = self.dir.join("cas");
        let prefixes = match fs_err::read_dir(&cas) {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Collected::default()),
            Err(e) => return Err(io("read", &cas)(e)),
        };
        for prefix in prefixes.flatten() {
            let Ok(entries) = fs_err::read_dir(prefix.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = format!(
                    "{}{}",
                    prefix.file_name().to_string_lossy(),
                    entry.file_name().to_string_lossy()
                );
                let Some(sha) = Sha256::parse(&name) else {
                    continue;
                };
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                let age = meta
                    .modified()
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .unwrap_or_default();
                blobs.push((sha, entry.path(), meta.len(), age));
            }
        }
        let mut out = Collected::default();
        let mut removed = std::collections::HashSet::new();
        let mut left: Vec<(Sha256, PathBuf, u64, std::time::Duration)> = Vec::new();
        for blob in blobs {
            if !protect.contains(&blob.0) && blob.3 > keep {
                if fs_err::remove_file(&blob.1).is_ok() {
                    out.removed += 1;
                    out.freed += blob.2;
                    removed.insert(blob.0);
                }
            } else {
                left.push(blob);
            }
        }
        if let Some(max) = max_bytes {
            let mut total: u64 = left.iter().map(|b| b.2).sum();
            // The oldest first, among those that may go.
            left.sort_by_key(|b| std::cmp::Reverse(b.3));
            let mut still = Vec::new();
            for blob in left {
                if total > max
                    && !protect.contains(&blob.0)
                    && blob.3 > MIN_GC_AGE
                    && fs_err::remove_file(&blob.1).is_ok()
                {
                    total -= blob.2;
                    out.removed += 1;
                    out.freed += blob.2;
                    removed.insert(blob.0);
                    continue;
                }
                still.push(blob);
            }
            left = still;
        }
        out.kept = left.len() as u64;
        out.kept_bytes = left.iter().map(|b| b.2).sum();
        // Entries naming a removed blob would name nothing.
        let mut stack = vec![self.dir.join("ac"), self.dir.join("refs")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs_err::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir {
                    stack.push(path);
                } else if read_pointer(&path)
                    .as_deref()
                    .and_then(Sha256::parse)
                    .is_some_and(|sha| removed.contains(&sha))
                {
                    if fs_err::remove_file(&path).is_ok() {
                        out.entries_removed += 1;
                    }
                } else if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    // An older proofgraph wrote it into a converted store.
                    self.convert_link(&path);
                }
            }
        }
        Ok(out)
    }

    /// Removes leftovers of interrupted runs: temporary files and run
    /// directories older than `older_than`. Never touches blobs or entries.
    pub fn sweep(&self, older_than: std::time::Duration) {
        let now = std::time::SystemTime::now();
        for sub in ["tmp", "runs"] {
            let Ok(entries) = fs_err::read_dir(self.dir.join(sub)) else {
                continue;
            };
            for entry in entries.flatten() {
                let old = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|age| age > older_than);
                if old {
                    let path = entry.path();
                    let _ = if path.is_dir() {
                        fs_err::remove_dir_all(&path)
                    } else {
                        fs_err::remove_file(&path)
                    };
                }
            }
        }
    }
}

/// A store failure as a diagnostic.
pub fn diagnostic(err: &StoreError) -> crate::base::diagnostic::Diagnostic {
    use crate::base::diagnostic::{Code, Diagnostic};
    Diagnostic::error(Code::StoreUnusable, format!("the store cannot be used: failed to {err}"))
        .surface("store")
        .fix("Check that .proofgraph/ at the OpenSpec root is writable; it can be deleted to start afresh (receipts are lost).")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(digit: &str) -> Sha256 {
        Sha256::parse(&digit.repeat(64)).expect("64 hex digits")
    }

    #[test]
    fn a_digest_reads_writes_and_serializes_as_64_lowercase_hex_digits() {
        let digest = Sha256::of(b"abc");
        let text = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(digest.to_hex(), text);
        assert_eq!(Sha256::parse(text), Some(digest));
        assert_eq!(sha256_hex(b"abc"), text);
        assert_eq!(
            serde_json::to_string(&digest).ok(),
            Some(format!("\"{text}\""))
        );
        assert_eq!(
            serde_json::from_str::<Sha256>(&format!("\"{text}\"")).ok(),
            Some(digest)
        );
        for bad in [
            &text.to_uppercase(),
            &text[1..],
            "",
            &format!("{text}0"),
            &format!("{}g", &text[1..]),
        ] {
            assert_eq!(Sha256::parse(bad), None, "{bad}");
            assert!(serde_json::from_str::<Sha256>(&format!("\"{bad}\"")).is_err());
        }
    }

    #[test]
    fn a_store_directory_removed_while_open_is_made_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        store.put(b"first").expect("put");
        store.set_action(&hex("a"), &hex("b")).expect("set");
        // Deleted by hand while a run keeps writing: the known directories are gone.
        fs_err::remove_dir_all(store.dir.join("cas")).expect("remove cas");
        fs_err::remove_dir_all(store.dir.join("tmp")).expect("remove tmp");
        let digest = store.put(b"second").expect("put again");
        assert_eq!(store.get(&digest).as_deref(), Some(&b"second"[..]));
        store.set_action(&hex("c"), &hex("d")).expect("set again");
        assert_eq!(store.action(&hex("c")), Some(hex("d")));
    }

    #[test]
    fn blobs_are_checked_on_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let digest = store.put(b"hello").expect("put");
        assert_eq!(store.get(&digest).as_deref(), Some(&b"hello"[..]));
        // Corrupt the blob: it is ignored, never trusted.
        fs_err::write(store.cas_path(&digest), b"hellO").expect("corrupt");
        assert_eq!(store.get(&digest), None);
        assert_eq!(Sha256::parse("not-a-digest"), None);
        assert_eq!(Sha256::parse(&"A".repeat(64)), None);
    }

    #[test]
    fn action_entries_and_refs_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let test = CapabilityName::test();
        let provider = ProviderId::parse("test").expect("an id");
        let fp = Fingerprint(proofgraph_graph::fingerprint::Digest::of(b"fp"));
        let key = Store::action_key(&fp, &provider, &test);
        assert_eq!(store.action(&key), None);
        let receipt = store.put(b"receipt").expect("put");
        store.set_action(&key, &receipt).expect("set");
        assert_eq!(store.action(&key), Some(receipt));
        let change = ChangeName::parse("c").expect("a change name");
        let discovery = CapabilityName::discovery();
        store
            .set_ref(&change, &provider, &discovery, &receipt)
            .expect("ref");
        assert_eq!(store.latest(&change, &provider, &discovery), Some(receipt));
        // Entries are regular files holding the digest in hex, never a link.
        for entry in [
            store.ac_path(&key),
            store.ref_path(&change, &provider, &discovery),
        ] {
            let meta = fs_err::symlink_metadata(&entry).expect("an entry");
            assert!(meta.file_type().is_file(), "{}", entry.display());
            assert_eq!(
                fs_err::read_to_string(&entry).expect("read"),
                format!("{receipt}\n")
            );
        }
        // A symbolic link to `sha256-<base64url>` (an earlier version's entry) still reads.
        fs_err::remove_file(store.ac_path(&key)).expect("remove");
        let target = pointer_target(&receipt.to_hex()).expect("a digest");
        fs_err::os::unix::fs::symlink(&target, store.ac_path(&key)).expect("legacy");
        assert_eq!(
            Store::open_read_only(dir.path()).action(&key),
            Some(receipt)
        );
        // Read by anyone else (another process opens the store afresh), a corrupt entry
        // is no entry — a garbage file or a link to something else; the process that
        // wrote it remembers what it wrote.
        for corrupt in ["file", "link", "short link"] {
            fs_err::remove_file(store.ac_path(&key)).expect("remove");
            match corrupt {
                "file" => fs_err::write(store.ac_path(&key), b"garbage").expect("corrupt"),
                "link" => fs_err::os::unix::fs::symlink(receipt.to_hex(), store.ac_path(&key))
                    .expect("corrupt"),
                _ => fs_err::os::unix::fs::symlink("sha256-AAAA", store.ac_path(&key))
                    .expect("corrupt"),
            }
            let other = Store::open(dir.path()).expect("open again");
            assert_eq!(other.action(&key), None, "{corrupt}");
        }
        assert_eq!(store.action(&key), Some(receipt));
        // An entry is read from disk once per store: replaced by another process
        // afterwards, it still names what this one read; a store opened afresh sees the new.
        fs_err::remove_file(store.ac_path(&key)).expect("remove");
        let reader = Store::open(dir.path()).expect("open again");
        assert_eq!(
            reader.action(&key),
            None,
            "absent entries are not remembered"
        );
        Store::open(dir.path())
            .expect("open again")
            .set_action(&key, &receipt)
            .expect("set");
        assert_eq!(reader.action(&key), Some(receipt));
        let newer = Store::open(dir.path()).expect("open again");
        let other_receipt = newer.put(b"another receipt").expect("put");
        newer.set_action(&key, &other_receipt).expect("replace");
        assert_eq!(reader.action(&key), Some(receipt));
        assert_eq!(
            Store::open(dir.path()).expect("open again").action(&key),
            Some(other_receipt)
        );
    }

    /// Every entry of `ac/` and `refs/`, with whether it is a symbolic link.
    fn entries(store: &Store) -> Vec<(PathBuf, bool)> {
        let mut out = Vec::new();
        let mut stack = vec![store.dir.join("ac"), store.dir.join("refs")];
        while let Some(dir) = stack.pop() {
            for entry in fs_err::read_dir(&dir).expect("read").flatten() {
                let kind = entry.file_type().expect("a type");
                if kind.is_dir() {
                    stack.push(entry.path());
                } else {
                    out.push((entry.path(), kind.is_symlink()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn an_earlier_versions_links_read_and_become_files_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let receipt = store.put(b"receipt").expect("put");
        let change = ChangeName::parse("c").expect("a change name");
        let provider = ProviderId::parse("unit").expect("an id");
        let test = CapabilityName::test();
        // The store as an earlier version left it: `store.json` without `entries`, every
        // pointer a symbolic link to `sha256-<base64url>`, one link naming nothing.
        let legacy = |path: &Path, target: &str| {
            fs_err::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            let _ = fs_err::remove_file(path);
            fs_err::os::unix::fs::symlink(target, path).expect("link");
        };
        let target = pointer_target(&receipt.to_hex()).expect("a digest");
        let key = hex("a");
        legacy(&store.ac_path(&key), &target);
        legacy(&store.ref_path(&change, &provider, &test), &target);
        legacy(&store.ac_path(&hex("b")), "sha256-AAAA");
        fs_err::write(
            store.dir.join("store.json"),
            r#"{"format": "proofgraph-store", "version": 1}"#,
        )
        .expect("write");
        // Read as they are by a reader that writes nothing.
        let reader = Store::open_read_only(dir.path());
        assert_eq!(reader.action(&key), Some(receipt));
        assert_eq!(reader.latest(&change, &provider, &test), Some(receipt));
        assert_eq!(entries(&reader).iter().filter(|e| e.1).count(), 3);
        // The first writable open rewrites them as files and says so in `store.json`.
        let store = Store::open(dir.path()).expect("open");
        assert_eq!(
            entries(&store),
            [
                (store.ac_path(&key), false),
                (store.ref_path(&change, &provider, &test), false)
            ]
        );
        assert_eq!(store.action(&key), Some(receipt));
        assert_eq!(store.latest(&change, &provider, &test), Some(receipt));
        let marker: serde_json::Value = serde_json::from_str(
            &fs_err::read_to_string(store.dir.join("store.json")).expect("read"),
        )
        .expect("JSON");
        assert_eq!(marker["entries"], "files");
        assert_eq!(marker["version"], VERSION);
        // Once: a link an older proofgraph writes afterwards is read, and left to `gc`.
        legacy(&store.ac_path(&key), &target);
        let again = Store::open(dir.path()).expect("open again");
        assert_eq!(again.action(&key), Some(receipt));
        assert_eq!(entries(&again).iter().filter(|e| e.1).count(), 1);
        let collected = again
            .collect(
                &std::collections::HashSet::new(),
                std::time::Duration::ZERO,
                None,
            )
            .expect("collect");
        assert_eq!(collected.removed, 0, "the receipt is younger than an hour");
        assert_eq!(entries(&again).iter().filter(|e| e.1).count(), 0);
        assert_eq!(
            Store::open_read_only(dir.path()).action(&key),
            Some(receipt)
        );
    }

    #[test]
    fn a_signing_key_is_installed_once_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let a = keys::generate_signing_key().expect("key");
        let b = keys::generate_signing_key().expect("key");
        assert!(store.install_signing_key(&a).expect("install"));
        // A second key never replaces the first.
        assert!(!store.install_signing_key(&b).expect("install again"));
        let files = store.key_files();
        let read = keys::read_signing_key(&files.private).expect("read");
        assert_eq!(read.to_bytes(), a.to_bytes());
        let mode = fs_err::metadata(&files.private)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        store
            .write_public_key(&a.verifying_key())
            .expect("write public");
        assert_eq!(
            keys::read_public_key(&files.public).expect("public"),
            a.verifying_key()
        );
        let ignore = fs_err::read_to_string(store.dir().join(".gitignore")).expect("gitignore");
        assert!(ignore.lines().any(|l| l == "*"));
    }

    #[test]
    fn a_newer_layout_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        fs_err::write(
            store.dir().join("store.json"),
            r#"{"format": "proofgraph-store", "version": 9}"#,
        )
        .expect("write");
        assert!(matches!(
            Store::open(dir.path()),
            Err(StoreError::Version { .. })
        ));
    }
}
