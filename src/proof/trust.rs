//! The trust anchor: which keys' receipts count, kept where whoever can write
//! the store cannot change them.
//!
//! A receipt counts only when a key the workspace trusts signed it. Two things
//! make a key trusted, and neither lives in `.proofgraph/`:
//!
//! - **A pin** in the user's configuration directory,
//!   `$XDG_CONFIG_HOME/proofgraph/pins/<SHA-256 of the store's canonical path>.json`
//!   (default `~/.config/proofgraph/pins/`): the key id of the store's own key.
//!   proofgraph writes it when it makes the store's key itself, and
//!   `proofgraph key pin <key id>` writes it when the user vouches for a key
//!   they checked.
//! - **`trustedKeys`** in `proofgraph.yaml`: keys the committed configuration
//!   trusts (CI's key; a store restored from CI's cache signed with it).
//!
//! The store's key (`keys/workspace.pub`, and `keys/workspace.key` when it can
//! be read) is compared with both. A key that matches neither is never trusted
//! and never silently replaced: it is a `workspace_key_mismatch` (naming the
//! store's key id and the pinned one) when the store is pinned to another key,
//! and `workspace_key_unpinned` when nothing vouches for it (a store made by an
//! older proofgraph, moved, or restored from elsewhere). A store with no key at
//! all gets a new one from the next command that signs, pinned in place of
//! whatever was pinned before (`workspace_key_replaced`): deleting the keys is
//! how a key is rotated, so receipts the old key signed no longer count.
//!
//! Key ids are `sha256:` and the hex SHA-256 of the public key's
//! SubjectPublicKeyInfo DER, as everywhere else ([`keys::key_id`]).
//! `docs/threat-model.md` says who can still forge a receipt.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::zeroize::Zeroizing;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::attest::envelope::TrustedKey;
use crate::attest::keys;
use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::env::Env;
use crate::load::config::catalog::Catalog;
use crate::store::{self, KeyFiles, Store};

/// Key ids are defined beside the keys (`attest::keys`), so the layers below this one (the
/// remote cache's encoding) name a signer by the same type.
pub use crate::attest::keys::KeyId;

/// The pin file's `format`.
const PIN_FORMAT: &str = "proofgraph-pin";
/// The pin file's layout version.
const PIN_VERSION: u64 = 1;
/// The largest key or pin file read.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// A pin could not be read or written. Messages read after "failed to".
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The pins directory or a pin file could not be used.
    #[error("{action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A pin file that is not a pin of this store.
    #[error("read the pin `{}`: {why}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, as a lowercase fragment.
        why: String,
    },
}

/// What a pin records.
#[derive(Debug, Serialize, Deserialize)]
struct PinFile {
    format: String,
    version: u64,
    /// The store's canonical directory.
    store: String,
    /// The key id pinned for it.
    keyid: String,
}

/// The pin of one store: the key id its key must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The pinned key id.
    pub keyid: KeyId,
    /// The pin file.
    pub file: PathBuf,
}

/// The user's pins: one small file per store, keyed by the store's canonical path.
#[derive(Debug, Clone)]
pub struct Pins {
    dir: PathBuf,
}

/// A store as pins know it: its canonical directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreIdentity(PathBuf);

impl StoreIdentity {
    /// The store under the OpenSpec root `root`: the canonical root joined with
    /// `.proofgraph` (the root exists; the store may not yet).
    pub fn of_root(root: &Path) -> Self {
        let root = fs_err::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Self(root.join(store::DIR))
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    fn text(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }
}

/// Holds the lock of one store's pin until dropped (the file is closed, which
/// releases it).
#[derive(Debug)]
pub struct PinLock {
    _file: fs_err::File,
}

impl Pins {
    /// The pins of the user `env` describes.
    pub fn new(env: &Env) -> Self {
        Self::at(env.proofgraph_config_dir().join("pins"))
    }

    /// Pins kept in `dir`.
    pub fn at(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The directory holding the pins.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pin file of a store.
    pub fn file(&self, store: &StoreIdentity) -> PathBuf {
        self.dir.join(format!(
            "{}.json",
            store::sha256_hex(store.0.as_os_str().as_encoded_bytes())
        ))
    }

    /// The store's pin, if it has one.
    pub fn read(&self, store: &StoreIdentity) -> Result<Option<Pin>, PinError> {
        let path = self.file(store);
        let Some(text) = read_small(&path).map_err(|source| PinError::Io {
            action: "read",
            path: path.clone(),
            source,
        })?
        else {
            return Ok(None);
        };
        let invalid = |why: String| PinError::Invalid {
            path: path.clone(),
            why,
        };
        let pin: PinFile = serde_json::from_str(&text)
            .map_err(|e| invalid(format!("it is not a pin file: {e}")))?;
        if pin.format != PIN_FORMAT || pin.version != PIN_VERSION {
            return Err(invalid(format!(
                "it is `{}` version {}, not `{PIN_FORMAT}` version {PIN_VERSION}",
                pin.format, pin.version
            )));
        }
        if pin.store != store.text() {
            return Err(invalid(format!(
                "it pins `{}`, not `{}`",
                pin.store,
                store.text()
            )));
        }
        let keyid = KeyId::parse(&pin.keyid).map_err(invalid)?;
        Ok(Some(Pin { keyid, file: path }))
    }

    /// Pins `keyid` for the store, replacing its pin: a temporary file in the pins
    /// directory renamed into place.
    pub fn write(&self, store: &StoreIdentity, keyid: KeyId) -> Result<PathBuf, PinError> {
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| PinError::Io {
                action,
                path,
                source,
            }
        };
        fs_err::create_dir_all(&self.dir).map_err(io("create", &self.dir))?;
        let path = self.file(store);
        let body = serde_json::to_string_pretty(&PinFile {
            format: PIN_FORMAT.to_owned(),
            version: PIN_VERSION,
            store: store.text(),
            keyid: keyid.to_string(),
        })
        .map_err(|e| io("write", &path)(std::io::Error::other(e)))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".pin-")
            .tempfile_in(&self.dir)
            .map_err(io("create a temporary file in", &self.dir))?;
        tmp.write_all(format!("{body}\n").as_bytes())
            .map_err(io("write", tmp.path()))?;
        tmp.persist(&path)
            .map_err(|e| io("rename into", &path)(e.error))?;
        Ok(path)
    }

    /// Removes the store's pin (absent is fine).
    fn remove(&self, store: &StoreIdentity) -> Result<(), PinError> {
        let path = self.file(store);
        match fs_err::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(PinError::Io {
                action: "remove",
                path,
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// Takes the lock of the store's pin, waiting for another proofgraph of this
    /// user that holds it (it is making the store's key). The lock file lives
    /// beside the pins, where only this user can hold it.
    pub fn lock(&self, store: &StoreIdentity) -> Result<PinLock, PinError> {
        fs_err::create_dir_all(&self.dir).map_err(|source| PinError::Io {
            action: "create",
            path: self.dir.clone(),
            source,
        })?;
        let path = self.file(store).with_extension("lock");
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| PinError::Io {
                action: "open",
                path: path.clone(),
                source,
            })?;
        rustix::fs::flock(file.file(), rustix::fs::FlockOperation::LockExclusive).map_err(
            |errno| PinError::Io {
                action: "lock",
                path,
                source: errno.into(),
            },
        )?;
        Ok(PinLock { _file: file })
    }

    /// The other stores whose pin is `keyid` (a workspace that moved, or a store
    /// copied from another workspace of this user).
    pub fn stores_pinning(&self, keyid: KeyId, except: &StoreIdentity) -> Vec<String> {
        let Ok(entries) = fs_err::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| read_small(&e.path()).ok().flatten())
            .filter_map(|text| serde_json::from_str::<PinFile>(&text).ok())
            .filter(|p| p.keyid == keyid.to_string() && p.store != except.text())
            .map(|p| p.store)
            .collect();
        out.sort();
        out
    }
}

/// A file's text, `None` when it does not exist; bounded.
fn read_small(path: &Path) -> std::io::Result<Option<String>> {
    let file = match fs_err::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    file.take(MAX_FILE_BYTES).read_to_string(&mut text)?;
    Ok(Some(text))
}

/// Why the store's key is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// The user's pin for this store.
    Pin(PathBuf),
    /// A `trustedKeys` entry of `proofgraph.yaml`, by name.
    TrustedKey(String),
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anchor::Pin(file) => write!(f, "pinned in `{}`", file.display()),
            Anchor::TrustedKey(name) => {
                write!(f, "listed in `trustedKeys` of proofgraph.yaml as `{name}`")
            }
        }
    }
}

/// Where the store's key stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyState {
    /// The store has no key (yet, or its keys were deleted); `pinned` is what the
    /// pin still names, if anything.
    Absent {
        /// The key id the pin names.
        pinned: Option<KeyId>,
    },
    /// The store's key is trusted.
    Pinned {
        /// Its id.
        keyid: KeyId,
        /// Why.
        anchor: Anchor,
    },
    /// A key file of the store is not the key it is pinned to.
    Mismatch {
        /// The file that disagrees (`keys/workspace.pub` or `keys/workspace.key`).
        file: PathBuf,
        /// The id of the key in it.
        found: KeyId,
        /// The id it should have.
        expected: KeyId,
        /// Where the expectation comes from.
        anchor: Anchor,
        /// The id of the private key's public half, when it could be read.
        private: Option<KeyId>,
    },
    /// Nothing vouches for the store's key.
    Unpinned {
        /// Its id.
        keyid: KeyId,
        /// The key file.
        file: PathBuf,
        /// Why no pin applies, when there is more to say (the pin could not be read;
        /// the key is pinned for another store).
        why: Option<String>,
    },
    /// A key file exists but is not a key.
    Unreadable {
        /// The file.
        file: PathBuf,
        /// What is wrong, as a lowercase fragment.
        why: String,
    },
}

/// Where the store's key stands, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    /// The store has no key.
    #[default]
    Absent,
    /// The store's key is trusted.
    Pinned,
    /// A key file of the store is not the key it is pinned to.
    Mismatch,
    /// Nothing vouches for the store's key.
    Unpinned,
    /// A key file is not a key.
    Unreadable,
}

/// What pins the store's key, for output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PinnedBy {
    /// The user's pin file.
    Pin,
    /// A `trustedKeys` entry of `proofgraph.yaml`.
    TrustedKey {
        /// Its name.
        name: String,
    },
}

impl From<&Anchor> for PinnedBy {
    fn from(anchor: &Anchor) -> Self {
        match anchor {
            Anchor::Pin(_) => PinnedBy::Pin,
            Anchor::TrustedKey(name) => PinnedBy::TrustedKey { name: name.clone() },
        }
    }
}

/// The key state for output (`doctor`, `key show`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct KeyReport {
    /// Where the store's key stands.
    pub state: KeyStatus,
    /// The id of the store's key (for `mismatch`, of the key file that disagrees).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyid: Option<KeyId>,
    /// The id the store's key is pinned to (for `mismatch`, the one expected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_keyid: Option<KeyId>,
    /// What pins it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_by: Option<PinnedBy>,
    /// The user's pin file for this store (whether or not it exists).
    #[serde(serialize_with = "crate::base::paths::lossy_path")]
    pub pin_file: PathBuf,
}

/// The store's keys, the pin and the trust they give.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// The store as pins know it.
    pub store: StoreIdentity,
    /// The OpenSpec root (for paths in messages).
    root: PathBuf,
    /// The key files.
    pub files: KeyFiles,
    /// The pin file of this store (whether or not it exists).
    pub pin_file: PathBuf,
    /// Where the store's key stands.
    pub state: KeyState,
    /// The keys whose receipts count: the store's key when it is trusted, and every
    /// usable `trustedKeys` entry.
    pub trusted: Vec<TrustedKey>,
    /// The store's public key (from `workspace.pub`, else the private key's half).
    pub public: Option<VerifyingKey>,
    /// The id of the key in `workspace.pub`, when it reads.
    pub public_id: Option<KeyId>,
    /// The id of the private key's public half, when it reads.
    pub private_id: Option<KeyId>,
}

/// How one key file read.
enum Read<T> {
    /// There is no such file.
    Absent,
    /// It exists but this user may not read it.
    Denied,
    /// It exists but is not a usable key (or cannot be read for another reason).
    Bad(String),
    /// The key.
    Key(T),
}

fn read_key_text(path: &Path) -> Read<Zeroizing<String>> {
    match fs_err::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Absent,
        Err(e) => return Read::Bad(format!("it cannot be read ({})", e.kind())),
        Ok(_) => {}
    }
    let file = match fs_err::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Read::Denied,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Read::Bad("it is a symbolic link to nothing".to_owned());
        }
        Err(e) => return Read::Bad(format!("it cannot be read ({})", e.kind())),
    };
    let mut text = Zeroizing::new(String::new());
    match file.take(MAX_FILE_BYTES).read_to_string(&mut text) {
        Ok(_) => Read::Key(text),
        Err(e) => Read::Bad(format!("it cannot be read ({})", e.kind())),
    }
}

fn read_public(path: &Path) -> Read<VerifyingKey> {
    match read_key_text(path) {
        Read::Key(text) => match keys::public_key_from_pem(&text) {
            Ok(k) => Read::Key(k),
            Err(e) => Read::Bad(format!("failed to {e}")),
        },
        Read::Absent => Read::Absent,
        Read::Denied => Read::Bad("this user may not read it".to_owned()),
        Read::Bad(why) => Read::Bad(why),
    }
}

fn read_private(path: &Path) -> Read<SigningKey> {
    match read_key_text(path) {
        Read::Key(text) => match keys::signing_key_from_pem(&text) {
            Ok(k) => Read::Key(k),
            Err(e) => Read::Bad(format!("failed to {e}")),
        },
        Read::Absent => Read::Absent,
        Read::Denied => Read::Denied,
        Read::Bad(why) => Read::Bad(why),
    }
}

/// The usable `trustedKeys` entries, by name.
fn catalog_keys(catalog: Option<&Catalog>) -> Vec<(String, TrustedKey)> {
    catalog
        .iter()
        .flat_map(|c| &c.trusted_keys)
        .filter_map(|k| {
            TrustedKey::from_pem(&k.public_key.value)
                .ok()
                .map(|t| (k.name.value.clone(), t))
        })
        .collect()
}

/// Decides where the store's key stands from what was read. `public` is
/// `workspace.pub`'s key, `private` the private key's public half.
fn judge(
    files: &KeyFiles,
    public: Option<&VerifyingKey>,
    private: Option<&VerifyingKey>,
    pin: Option<&Pin>,
    catalog: &[(String, TrustedKey)],
) -> KeyState {
    let (store_key, file) = match (public, private) {
        (Some(k), _) => (k, &files.public),
        (None, Some(k)) => (k, &files.private),
        (None, None) => {
            return KeyState::Absent {
                pinned: pin.map(|p| p.keyid),
            };
        }
    };
    let keyid = KeyId::of(store_key);
    let private_id = private.map(KeyId::of);
    let anchor = match pin {
        Some(p) if p.keyid == keyid => Some(Anchor::Pin(p.file.clone())),
        _ => catalog
            .iter()
            .find(|(_, k)| k.verifying_key() == store_key)
            .map(|(name, _)| Anchor::TrustedKey(name.clone())),
    };
    match (anchor, pin) {
        (Some(anchor), _) => match private_id {
            Some(found) if found != keyid => KeyState::Mismatch {
                file: files.private.clone(),
                found,
                expected: keyid,
                anchor,
                private: private_id,
            },
            _ => KeyState::Pinned { keyid, anchor },
        },
        (None, Some(p)) => KeyState::Mismatch {
            file: file.clone(),
            found: keyid,
            expected: p.keyid,
            anchor: Anchor::Pin(p.file.clone()),
            private: private_id,
        },
        (None, None) => KeyState::Unpinned {
            keyid,
            file: file.clone(),
            why: None,
        },
    }
}

/// Reads the store's keys and its pin, changing nothing; also returns the signing
/// key when it could be read.
fn inspect_with(
    pins: &Pins,
    root: &Path,
    catalog: Option<&Catalog>,
) -> (Inspection, Read<SigningKey>) {
    let store = StoreIdentity::of_root(root);
    let files = Store::open_read_only(root).key_files();
    let catalog = catalog_keys(catalog);
    let pin_file = pins.file(&store);
    let public = read_public(&files.public);
    let private = read_private(&files.private);
    let pin = pins.read(&store);
    let bad = match (&public, &private) {
        (Read::Bad(why), _) => Some((files.public.clone(), why.clone())),
        (_, Read::Bad(why)) => Some((files.private.clone(), why.clone())),
        _ => None,
    };
    let public_key = match &public {
        Read::Key(k) => Some(*k),
        _ => None,
    };
    let private_key = match &private {
        Read::Key(k) => Some(k.verifying_key()),
        _ => None,
    };
    let mut state = match bad {
        Some((file, why)) => KeyState::Unreadable { file, why },
        None => judge(
            &files,
            public_key.as_ref(),
            private_key.as_ref(),
            pin.as_ref().ok().and_then(Option::as_ref),
            &catalog,
        ),
    };
    if let KeyState::Unpinned { keyid, why, .. } = &mut state {
        *why = match &pin {
            Err(e) => Some(format!("its pin cannot be used: failed to {e}")),
            Ok(_) => {
                let elsewhere = pins.stores_pinning(*keyid, &store);
                (!elsewhere.is_empty()).then(|| {
                    format!(
                        "the key is pinned for {} (a workspace that moved, or a store copied from there?)",
                        elsewhere
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            }
        };
    }
    let store_key = public_key.or(private_key);
    let mut trusted: Vec<TrustedKey> = Vec::new();
    if let (KeyState::Pinned { .. }, Some(key)) = (&state, store_key) {
        trusted.push(TrustedKey::new(key));
    }
    for (_, key) in catalog {
        if !trusted.contains(&key) {
            trusted.push(key);
        }
    }
    (
        Inspection {
            store,
            root: root.to_path_buf(),
            files,
            pin_file,
            state,
            trusted,
            public: store_key,
            public_id: public_key.as_ref().map(KeyId::of),
            private_id: private_key.as_ref().map(KeyId::of),
        },
        private,
    )
}

/// Reads the store's keys under the OpenSpec root `root` and the user's pin for
/// it, changing nothing.
pub fn inspect(pins: &Pins, root: &Path, catalog: Option<&Catalog>) -> Inspection {
    inspect_with(pins, root, catalog).0
}

/// The signing key of a command that signs, with what it found.
#[derive(Debug)]
pub struct Signing {
    /// The store's signing key, trusted.
    pub key: SigningKey,
    /// The inspection it passed.
    pub inspection: Inspection,
    /// What to tell the user (a key made in place of a pinned one).
    pub notes: Vec<Diagnostic>,
}

/// The workspace's signing key for a command that signs (`prove`,
/// `evidence verify-ci`). A store with no signing key gets a new one, pinned
/// before it is linked into place (so a run killed in between leaves a pin to
/// no key, which the next run replaces, never an unpinned key); a store whose key
/// is not trusted is refused with the diagnostic that says why.
pub fn signing_key(
    pins: &Pins,
    store: &Store,
    root: &Path,
    catalog: Option<&Catalog>,
) -> Result<Signing, Vec<Diagnostic>> {
    let mut notes = Vec::new();
    let (mut inspection, mut private) = inspect_with(pins, root, catalog);
    if matches!(private, Read::Absent) {
        let lock = pins
            .lock(&inspection.store)
            .map_err(|e| vec![unwritable(&e, &inspection.store)])?;
        // Under the lock: another proofgraph of this user may have made it meanwhile.
        (inspection, private) = inspect_with(pins, root, catalog);
        if matches!(private, Read::Absent) {
            let previous = pins.read(&inspection.store).ok().flatten();
            let key = keys::generate_signing_key().map_err(|e| {
                vec![key_unusable(
                    inspection.relative(&inspection.files.private),
                    &format!("failed to {e}"),
                )]
            })?;
            let keyid = KeyId::of(&key.verifying_key());
            pins.write(&inspection.store, keyid)
                .map_err(|e| vec![unwritable(&e, &inspection.store)])?;
            let installed = store
                .install_signing_key(&key)
                .map_err(|e| vec![crate::store::diagnostic(&e)])?;
            if installed {
                store
                    .write_public_key(&key.verifying_key())
                    .map_err(|e| vec![crate::store::diagnostic(&e)])?;
                if let Some(old) = previous.filter(|p| p.keyid != keyid) {
                    notes.push(replaced(&inspection, old.keyid, keyid));
                }
            } else {
                // A key appeared that no proofgraph of this user made under the lock:
                // the pin goes back to what it was, and that key is judged by it.
                let restored = match &previous {
                    Some(p) => pins.write(&inspection.store, p.keyid).map(drop),
                    None => pins.remove(&inspection.store),
                };
                restored.map_err(|e| vec![unwritable(&e, &inspection.store)])?;
            }
            (inspection, private) = inspect_with(pins, root, catalog);
        }
        drop(lock);
    }
    if let Some(d) = inspection.diagnostic() {
        return Err(vec![d]);
    }
    let key = match private {
        Read::Key(key) => key,
        Read::Denied => {
            return Err(vec![key_unusable(
                inspection.relative(&inspection.files.private),
                "this user may not read it",
            )]);
        }
        Read::Absent | Read::Bad(_) => {
            return Err(vec![key_unusable(
                inspection.relative(&inspection.files.private),
                "it disappeared while it was being read",
            )]);
        }
    };
    if matches!(read_key_text(&inspection.files.public), Read::Absent) {
        // The public half of a trusted key, written again (a run killed after
        // linking the key, or a `.pub` deleted by hand).
        store
            .write_public_key(&key.verifying_key())
            .map_err(|e| vec![crate::store::diagnostic(&e)])?;
    }
    Ok(Signing {
        key,
        inspection,
        notes,
    })
}

/// Pins the store's key after the user checked that its id is `keyid`; returns
/// the inspection after pinning and the key id that was pinned before (the same
/// one when pinning again changed nothing). The store's key must be `keyid`, and
/// its two files must agree.
pub fn pin(
    pins: &Pins,
    root: &Path,
    keyid: KeyId,
    catalog: Option<&Catalog>,
) -> Result<(Inspection, Option<KeyId>), Vec<Diagnostic>> {
    let inspection = inspect(pins, root, catalog);
    if let KeyState::Unreadable { .. } = inspection.state {
        return Err(inspection.diagnostic().into_iter().collect());
    }
    let found = match (inspection.public_id, inspection.private_id) {
        (None, None) => {
            return Err(vec![
                Diagnostic::error(
                    Code::WorkspaceKeyMissing,
                    format!(
                        "the store `{}` has no key to pin",
                        inspection.relative(inspection.store.path()).display()
                    ),
                )
                .surface(".proofgraph/keys")
                .fix("Run `proofgraph prove <change>`: it makes the store's key and pins it."),
            ]);
        }
        (Some(public), Some(private)) if public != private => {
            return Err(vec![inspection.disagreeing_files(public, private)]);
        }
        (Some(id), _) | (None, Some(id)) => id,
    };
    if found != keyid {
        return Err(vec![
            Diagnostic::error(
                Code::WorkspaceKeyMismatch,
                format!("the store's key is `{found}`, not `{keyid}` as given: nothing was pinned"),
            )
            .surface(".proofgraph/keys/workspace.pub")
            .fix("Pin the key you checked: `proofgraph key show` prints the store's key id."),
        ]);
    }
    let _lock = pins
        .lock(&inspection.store)
        .map_err(|e| vec![unwritable(&e, &inspection.store)])?;
    let previous = pins.read(&inspection.store).ok().flatten().map(|p| p.keyid);
    if previous != Some(keyid) {
        pins.write(&inspection.store, keyid)
            .map_err(|e| vec![unwritable(&e, &inspection.store)])?;
    }
    let after = inspect(pins, root, catalog);
    match after.diagnostic() {
        Some(d) => Err(vec![d]),
        None => Ok((after, previous)),
    }
}

/// The fix that makes a new key.
const NEW_KEY: &str =
    "delete `.proofgraph/keys/` to make a new key (every receipt then runs again)";

impl Inspection {
    /// A path under the OpenSpec root, relative to it.
    fn relative<'a>(&self, path: &'a Path) -> &'a Path {
        path.strip_prefix(&self.root).unwrap_or(path)
    }

    /// The surface a diagnostic about a key file names.
    fn surface(&self, file: &Path) -> String {
        self.relative(file).to_string_lossy().into_owned()
    }

    /// Why the store's key cannot be trusted, as the error that stops a command
    /// reading or writing receipts; `None` when it can (or the store has none).
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        match &self.state {
            KeyState::Absent { .. } | KeyState::Pinned { .. } => None,
            KeyState::Unreadable { file, why } => Some(key_unusable(self.relative(file), why)),
            KeyState::Mismatch {
                file,
                found,
                expected,
                anchor,
                private,
            } => {
                let shown = self.relative(file).display();
                let d = if *file == self.files.private && self.public_id.is_some() {
                    Diagnostic::error(
                        Code::WorkspaceKeyMismatch,
                        format!("the store's private key `{shown}` is `{found}`, but its public key is `{expected}` ({anchor}): the private key was replaced, so what it signs would never be trusted"),
                    )
                    .fix(format!("Restore the private key of `{expected}`, or {NEW_KEY}."))
                } else if *private == Some(*expected) {
                    Diagnostic::error(
                        Code::WorkspaceKeyMismatch,
                        format!("the store's public key `{shown}` is `{found}`, but the key pinned for this store is `{expected}` ({anchor}), which the private key still is: the public key file was replaced"),
                    )
                    .fix(format!("Delete `{shown}`: proofgraph writes it again from the pinned private key."))
                } else {
                    Diagnostic::error(
                        Code::WorkspaceKeyMismatch,
                        format!("the store's key `{shown}` is `{found}`, but the key pinned for this store is `{expected}` ({anchor}): the key was replaced, or this is not the store that was pinned, so no receipt it signed is trusted"),
                    )
                    .fix(format!("If you replaced the key yourself and `{found}` is yours, run `proofgraph key pin {found}`; otherwise restore the pinned key, or {NEW_KEY}."))
                };
                Some(d.surface(&self.surface(file)))
            }
            KeyState::Unpinned { keyid, file, why } => {
                let shown = self.relative(file).display();
                let why = why.as_ref().map(|w| format!("; {w}")).unwrap_or_default();
                Some(
                    Diagnostic::error(
                        Code::WorkspaceKeyUnpinned,
                        format!("nothing vouches for the store's key `{keyid}` (`{shown}`): it is not pinned for this store (`{}`) nor listed in `trustedKeys`, so no receipt it signed is trusted (a store made by an older proofgraph, moved, or restored from elsewhere){why}", self.pin_file.display()),
                    )
                    .surface(&self.surface(file))
                    .fix(format!("If `{keyid}` is the key you expect (`proofgraph key show`), run `proofgraph key pin {keyid}`; otherwise {NEW_KEY}.")),
                )
            }
        }
    }

    /// The key state for output.
    pub fn report(&self) -> KeyReport {
        let mut report = KeyReport {
            pin_file: self.pin_file.clone(),
            ..KeyReport::default()
        };
        match &self.state {
            KeyState::Absent { pinned } => {
                report.state = KeyStatus::Absent;
                report.pinned_keyid = *pinned;
                report.pinned_by = pinned.map(|_| PinnedBy::Pin);
            }
            KeyState::Pinned { keyid, anchor } => {
                report.state = KeyStatus::Pinned;
                report.keyid = Some(*keyid);
                report.pinned_keyid = Some(*keyid);
                report.pinned_by = Some(anchor.into());
            }
            KeyState::Mismatch {
                found,
                expected,
                anchor,
                ..
            } => {
                report.state = KeyStatus::Mismatch;
                report.keyid = Some(*found);
                report.pinned_keyid = Some(*expected);
                report.pinned_by = Some(anchor.into());
            }
            KeyState::Unpinned { keyid, .. } => {
                report.state = KeyStatus::Unpinned;
                report.keyid = Some(*keyid);
            }
            KeyState::Unreadable { .. } => report.state = KeyStatus::Unreadable,
        }
        report
    }

    /// The two key files disagree, so neither can be pinned.
    fn disagreeing_files(&self, public: KeyId, private: KeyId) -> Diagnostic {
        Diagnostic::error(
            Code::WorkspaceKeyMismatch,
            format!(
                "the store's key files disagree: `{}` is `{public}` but `{}` is `{private}`; nothing was pinned",
                self.relative(&self.files.public).display(),
                self.relative(&self.files.private).display()
            ),
        )
        .surface(&self.surface(&self.files.public))
        .fix(format!(
            "Delete `{}` if the private key is the one to keep (proofgraph writes it again), or {NEW_KEY}.",
            self.relative(&self.files.public).display()
        ))
    }
}

/// A key file that cannot be used.
fn key_unusable(file: &Path, why: &str) -> Diagnostic {
    Diagnostic::error(
        Code::StoreUnusable,
        format!("the store's key `{}` cannot be used: {why}", file.display()),
    )
    .surface(&file.to_string_lossy())
    .fix(format!("Restore it, or {NEW_KEY}."))
}

/// The pin of a new key could not be written.
fn unwritable(err: &PinError, store: &StoreIdentity) -> Diagnostic {
    Diagnostic::error(
        Code::WorkspacePinUnwritable,
        format!(
            "the key of the store `{}` cannot be pinned: failed to {err}",
            store.path().display()
        ),
    )
    .surface("pins")
    .fix("Make `$XDG_CONFIG_HOME/proofgraph/pins` (default `~/.config/proofgraph/pins`) writable, or set XDG_CONFIG_HOME to a directory this user can write.")
}

/// A new key was made in place of a pinned one.
fn replaced(inspection: &Inspection, old: KeyId, new: KeyId) -> Diagnostic {
    Diagnostic::warning(
        Code::WorkspaceKeyReplaced,
        format!(
            "the store had no signing key, so a new key `{new}` was made and pinned in place of `{old}`: receipts signed by `{old}` are no longer trusted and their providers run again"
        ),
    )
    .surface(&inspection.surface(&inspection.files.private))
    .fix("Nothing to do if you deleted `.proofgraph/keys/` (or the store) yourself; otherwise find out who did, since it made every receipt run again.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        keys::generate_signing_key().expect("key")
    }

    fn files() -> KeyFiles {
        KeyFiles {
            private: PathBuf::from("/r/.proofgraph/keys/workspace.key"),
            public: PathBuf::from("/r/.proofgraph/keys/workspace.pub"),
        }
    }

    fn pin_of(k: &SigningKey) -> Pin {
        Pin {
            keyid: KeyId::of(&k.verifying_key()),
            file: PathBuf::from("/c/pins/x.json"),
        }
    }

    #[test]
    fn key_ids_read_back_and_match_the_attest_key_id() {
        let k = key().verifying_key();
        let id = KeyId::of(&k);
        assert_eq!(id.to_string(), keys::key_id(&k));
        assert_eq!(KeyId::parse(&id.to_string()), Ok(id));
        assert_eq!(
            KeyId::parse(&id.to_string().to_uppercase().replace("SHA256", "sha256")),
            Ok(id)
        );
        for bad in [
            "",
            "sha256:",
            "sha256:abc",
            &id.to_string()[7..],
            &format!("{id}0"),
            "sha256:zz",
        ] {
            assert!(KeyId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_store_key_is_trusted_only_when_pinned_or_listed() {
        let (mine, other, ci) = (key(), key(), key());
        let (m, o) = (mine.verifying_key(), other.verifying_key());
        let catalog = vec![("ci".to_owned(), TrustedKey::new(ci.verifying_key()))];
        let f = files();
        let pinned = pin_of(&mine);
        // Pinned: both files, or either alone.
        for (public, private) in [(Some(&m), Some(&m)), (Some(&m), None), (None, Some(&m))] {
            assert!(matches!(
                judge(&f, public, private, Some(&pinned), &[]),
                KeyState::Pinned {
                    anchor: Anchor::Pin(_),
                    ..
                }
            ));
        }
        // The issue's case: `.pub` replaced, the private key still the pinned one.
        assert_eq!(
            judge(&f, Some(&o), Some(&m), Some(&pinned), &[]),
            KeyState::Mismatch {
                file: f.public.clone(),
                found: KeyId::of(&o),
                expected: KeyId::of(&m),
                anchor: Anchor::Pin(pinned.file.clone()),
                private: Some(KeyId::of(&m)),
            }
        );
        // The whole pair replaced.
        assert!(matches!(
            judge(&f, Some(&o), Some(&o), Some(&pinned), &[]),
            KeyState::Mismatch { found, expected, .. } if found == KeyId::of(&o) && expected == KeyId::of(&m)
        ));
        // The private key replaced under the pinned public key.
        assert!(matches!(
            judge(&f, Some(&m), Some(&o), Some(&pinned), &[]),
            KeyState::Mismatch { file, found, expected, .. }
                if file == f.private && found == KeyId::of(&o) && expected == KeyId::of(&m)
        ));
        // No pin: unpinned, unless `trustedKeys` lists it (which a user pin cannot veto).
        assert!(matches!(
            judge(&f, Some(&m), Some(&m), None, &[]),
            KeyState::Unpinned { .. }
        ));
        let c = ci.verifying_key();
        for pin in [None, Some(&pinned)] {
            assert!(matches!(
                judge(&f, Some(&c), None, pin, &catalog),
                KeyState::Pinned { anchor: Anchor::TrustedKey(ref n), .. } if n == "ci"
            ));
        }
        // No key at all.
        assert_eq!(
            judge(&f, None, None, Some(&pinned), &catalog),
            KeyState::Absent {
                pinned: Some(pinned.keyid)
            }
        );
    }

    #[test]
    fn pins_round_trip_and_refuse_what_is_not_this_stores_pin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pins = Pins::at(dir.path().join("pins"));
        let a = StoreIdentity(PathBuf::from("/work/a/.proofgraph"));
        let b = StoreIdentity(PathBuf::from("/work/b/.proofgraph"));
        assert_eq!(pins.read(&a).expect("read"), None, "no pin yet");
        let id = KeyId::of(&key().verifying_key());
        let file = pins.write(&a, id).expect("write");
        assert_eq!(
            pins.read(&a).expect("read"),
            Some(Pin {
                keyid: id,
                file: file.clone()
            })
        );
        assert_ne!(pins.file(&a), pins.file(&b), "one pin per store");
        assert_eq!(pins.read(&b).expect("read"), None);
        assert_eq!(pins.stores_pinning(id, &b), vec!["/work/a/.proofgraph"]);
        assert!(pins.stores_pinning(id, &a).is_empty());
        // A's pin copied to B's name is not B's pin.
        fs_err::copy(&file, pins.file(&b)).expect("copy");
        assert!(matches!(pins.read(&b), Err(PinError::Invalid { .. })));
        // Garbage and a wrong key id are not pins.
        fs_err::write(&file, "{").expect("write");
        assert!(matches!(pins.read(&a), Err(PinError::Invalid { .. })));
        fs_err::write(
            &file,
            r#"{"format": "proofgraph-pin", "version": 1, "store": "/work/a/.proofgraph", "keyid": "sha256:12"}"#,
        )
        .expect("write");
        assert!(matches!(pins.read(&a), Err(PinError::Invalid { .. })));
        pins.remove(&a).expect("remove");
        pins.remove(&a).expect("removing no pin is fine");
        assert_eq!(pins.read(&a).expect("read"), None);
    }

    #[test]
    fn simultaneous_first_uses_agree_on_one_pinned_key() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().expect("tempdir");
            let root = dir.path().join("root");
            fs_err::create_dir_all(&root).expect("root");
            let pins = Pins::at(dir.path().join("pins"));
            let barrier = std::sync::Barrier::new(8);
            let keys: Vec<KeyId> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            let store = Store::open(&root).expect("store");
                            barrier.wait();
                            let signing = signing_key(&pins, &store, &root, None)
                                .unwrap_or_else(|d| panic!("{d:?}"));
                            KeyId::of(&signing.key.verifying_key())
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("thread"))
                    .collect()
            });
            assert!(keys.windows(2).all(|w| w[0] == w[1]), "{keys:?}");
            let pin = pins
                .read(&StoreIdentity::of_root(&root))
                .expect("pin")
                .expect("pinned");
            assert_eq!(pin.keyid, keys[0]);
        }
    }

    #[test]
    fn the_pin_lock_is_exclusive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pins = Pins::at(dir.path().join("pins"));
        let store = StoreIdentity(PathBuf::from("/work/a/.proofgraph"));
        let held = pins.lock(&store).expect("lock");
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let (pins, store) = (pins.clone(), store.clone());
            std::thread::spawn(move || {
                let _lock = pins.lock(&store).expect("lock");
                tx.send(()).expect("send");
            })
        };
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err(),
            "a second holder got the lock"
        );
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lock is free once dropped");
        waiter.join().expect("waiter");
    }
}
