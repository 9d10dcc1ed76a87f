//! `proofgraph key show|pin`: the store's signing key, and the pin in the user's
//! configuration directory that makes it trusted (see [`crate::proof::trust`]).
//!
//! `show` never changes anything and, like `doctor`, exits 0 whatever it finds (a
//! key that is not trusted is in `status`). `pin <key id>` pins the store's key only
//! when its id is the one given, so what is pinned is exactly the key the user
//! checked; pinning the pinned key again changes nothing.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::base::paths::lossy_path;
use crate::load::workspace::Workspace;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::proof::trust::{self, Inspection, KeyId, KeyReport, KeyStatus, Pins};
use crate::session::context::{Context, RootOutput};

/// The payload of `key show` and `key pin`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KeyPayload {
    /// The store (`.proofgraph/` at the OpenSpec root).
    #[serde(serialize_with = "optional_path")]
    pub store: Option<PathBuf>,
    /// The id of the store's key.
    pub keyid: Option<KeyId>,
    /// The store's public key (SPKI PEM), to list in another workspace's `trustedKeys`.
    pub public_key: Option<String>,
    /// Whether it is trusted, and by what.
    pub trust: Option<KeyReport>,
    /// `key pin`: whether the pin file was written (false: it already pinned this key).
    pub changed: Option<bool>,
    /// `key pin`: the key id pinned before, when it was another.
    pub replaced: Option<KeyId>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

fn optional_path<S: serde::Serializer>(
    path: &Option<PathBuf>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => lossy_path(p, serializer),
        None => serializer.serialize_none(),
    }
}

impl Payload for KeyPayload {
    fn human(&self, out: &mut String) {
        let (Some(store), Some(trust)) = (&self.store, &self.trust) else {
            return;
        };
        let _ = writeln!(out, "Store: {}", store.display());
        match self.keyid {
            Some(id) => {
                let _ = writeln!(out, "Key: {id}");
            }
            None => {
                let _ = writeln!(out, "Key: none yet (the first prove makes one and pins it)");
            }
        }
        let state = match trust.state {
            KeyStatus::Pinned => "pinned, trusted",
            KeyStatus::Absent => "absent",
            KeyStatus::Mismatch => "NOT TRUSTED: not the key pinned for this store",
            KeyStatus::Unpinned => "NOT TRUSTED: not pinned",
            KeyStatus::Unreadable => "NOT TRUSTED: unreadable",
        };
        let _ = writeln!(out, "State: {state}");
        if let Some(pinned) = trust.pinned_keyid {
            let _ = writeln!(out, "Pinned: {pinned}");
        }
        // Named as it is: a pin file that does not exist is where a pin would go.
        if trust.pin_file.is_file() {
            let _ = writeln!(out, "Pin file: {}", trust.pin_file.display());
        } else {
            let _ = writeln!(
                out,
                "Pin file: none yet (`proofgraph key pin <key id>` or the first prove writes {})",
                trust.pin_file.display()
            );
        }
        match (self.changed, self.replaced) {
            (Some(true), Some(old)) => {
                let _ = writeln!(out, "Pinned now, in place of {old}");
            }
            (Some(true), None) => {
                let _ = writeln!(out, "Pinned now");
            }
            (Some(false), _) => {
                let _ = writeln!(out, "Already pinned: nothing changed");
            }
            (None, _) => {}
        }
        if let Some(pem) = &self.public_key {
            out.push_str(pem);
        }
    }
}

fn payload(inspection: &Inspection, root: RootOutput) -> KeyPayload {
    KeyPayload {
        store: Some(inspection.store.path().to_path_buf()),
        keyid: inspection.public.as_ref().map(KeyId::of),
        public_key: inspection
            .public
            .as_ref()
            .map(crate::attest::keys::public_key_to_pem),
        trust: Some(inspection.report()),
        root: Some(root),
        ..KeyPayload::default()
    }
}

/// Runs `key show`.
pub fn show(ctx: &Context) -> Report<KeyPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = Workspace::load(&resolution.root.path);
    let inspection = trust::inspect(
        &Pins::new(ctx.env()),
        &workspace.root,
        workspace.catalog.as_ref(),
    );
    Report {
        payload: Some(payload(&inspection, RootOutput::from(&resolution.root))),
        status: inspection.diagnostic().into_iter().collect(),
        verdict: Verdict::Success,
    }
}

/// Runs `key pin <key id>`: exit 0 when the store's key is pinned (now or
/// already), 3 when it is not the key given or cannot be pinned.
pub fn pin(ctx: &Context, keyid: KeyId) -> Report<KeyPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = Workspace::load(&resolution.root.path);
    match trust::pin(
        &Pins::new(ctx.env()),
        &workspace.root,
        keyid,
        workspace.catalog.as_ref(),
    ) {
        Ok((inspection, previous)) => {
            let mut payload = payload(&inspection, RootOutput::from(&resolution.root));
            payload.changed = Some(previous != Some(keyid));
            payload.replaced = previous.filter(|p| *p != keyid);
            Report {
                payload: Some(payload),
                status: Vec::new(),
                verdict: Verdict::Success,
            }
        }
        Err(all) => Report::failed(all, Verdict::Invalid),
    }
}
