//! Loading a change: the root, the workspace, the change's files, its secrets and its
//! sealed graph, or every diagnostic that stands in the way.

use std::num::NonZeroUsize;

use super::context::{Context, RootOutput};
use crate::base::diagnostic::Diagnostic;
use crate::base::redact::Secrets;
use crate::load::preflight::{Prepared, prepare};
use crate::load::workspace::{Change, Workspace};

/// Everything a command needs about a change that preflight accepted.
pub struct Loaded {
    /// The workspace.
    pub workspace: Workspace,
    /// The change.
    pub change: Change,
    /// The sealed graph and warnings.
    pub prepared: Prepared,
    /// The root, as embedded in payloads.
    pub root: RootOutput,
    /// Resolution notes.
    pub notes: Vec<Diagnostic>,
    /// The values of the change's `envFrom` names here (see [`crate::base::redact`]).
    pub secrets: Secrets,
    /// `envFrom` values too short to be redacted (`secret_too_short`).
    pub secret_warnings: Vec<Diagnostic>,
}

/// Resolves the root, loads the change and seals its graph; on failure,
/// returns every diagnostic (exit 3). The change's secrets are remembered in `ctx`, so
/// that nothing the command prints holds one.
pub fn load(ctx: &Context, name: &str) -> Result<Loaded, Vec<Diagnostic>> {
    let resolution = ctx.resolve_root().map_err(|d| vec![d])?;
    let workspace = Workspace::load(&resolution.root.path);
    let change_name = workspace.find_change(name).map_err(|d| vec![d])?;
    let change = workspace.load_change(&change_name);
    let (secrets, secret_warnings) = crate::load::secrets::of_change(&change, ctx.env());
    ctx.remember_secrets(&secrets);
    let prepared = prepare(&workspace, &change)?;
    Ok(Loaded {
        workspace,
        change,
        prepared,
        root: RootOutput::from(&resolution.root),
        notes: resolution.notes,
        secrets,
        secret_warnings,
    })
}

/// `--jobs` when not given: the number of CPUs.
pub fn default_jobs() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}
