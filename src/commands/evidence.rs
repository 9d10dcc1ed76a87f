//! `proofgraph evidence detect|init|doctor <change>`: wiring bootstrap.
//!
//! The reading of manifests, the choice of candidates and the editing of
//! `execution.yaml` text live in the `bootstrap` library, which runs
//! nothing and writes nothing. These commands load the change, hand it over,
//! and (for `init --write` only) replace `execution.yaml` atomically with the
//! text the library verified.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bootstrap::{Candidate, Detection, Finding, Repo, Skipped, Unresolved};
use proofgraph_graph::model::{Claim, Provider, Service};
use serde::Serialize;

use crate::base::diagnostic::{self, Code, Diagnostic};
use crate::base::paths::lossy_path;
use crate::load::workspace::{Change, EXECUTION_FILE, Workspace};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};

/// What every evidence command starts from.
struct Loaded {
    workspace: Workspace,
    change: Change,
    root: RootOutput,
    notes: Vec<Diagnostic>,
}

impl Loaded {
    fn repos(&self) -> Vec<Repo> {
        self.workspace
            .repositories
            .values()
            .map(|r| Repo {
                id: r.id.clone(),
                dir: r.dir.clone(),
            })
            .collect()
    }

    fn claims(&self) -> Vec<Claim> {
        self.change
            .evidence
            .as_ref()
            .map(|e| e.claims.clone())
            .unwrap_or_default()
    }

    fn providers(&self) -> Vec<Provider> {
        self.change
            .providers
            .values()
            .map(|w| w.provider.clone())
            .collect()
    }

    fn services(&self) -> Vec<Service> {
        self.change.services.values().cloned().collect()
    }

    fn detect(&self) -> Detection {
        bootstrap::detect(&self.repos(), &self.claims(), &self.providers())
    }
}

/// Loads the change; any error in it stops the command (bootstrap reasons
/// about a change as written, not about a half-read one).
fn load(ctx: &Context, name: &str) -> Result<Loaded, Vec<Diagnostic>> {
    let resolution = ctx.resolve_root().map_err(|d| vec![d])?;
    let workspace = Workspace::load(&resolution.root.path);
    let change_name = workspace.find_change(name).map_err(|d| vec![d])?;
    let change = workspace.load_change(&change_name);
    let mut all: Vec<Diagnostic> = resolution.notes.clone();
    all.extend(workspace.diagnostics.iter().cloned());
    all.extend(change.diagnostics.iter().cloned());
    diagnostic::sort(&mut all);
    if all.iter().any(Diagnostic::is_error) {
        return Err(all);
    }
    Ok(Loaded {
        root: RootOutput::from(&resolution.root),
        notes: all,
        workspace,
        change,
    })
}

fn detection_notes(detection: &Detection) -> Vec<Diagnostic> {
    detection
        .warnings
        .iter()
        .map(|w| {
            Diagnostic::warning(Code::ManifestUnreadable, w.clone())
                .surface("evidence.detect")
                .fix("Fix the manifest so it parses; detection skipped what it could not read.")
        })
        .collect()
}

fn human_detection(out: &mut String, candidates: &[Candidate], unresolved: &[Unresolved]) {
    for c in candidates {
        let command = c
            .provider
            .get("command")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| "(refused)".to_owned());
        let _ = writeln!(
            out,
            "{:11} {} ({} in {}): {command}",
            c.confidence.as_str(),
            c.name.as_str(),
            c.capability.as_str(),
            c.repository.as_str()
        );
        for e in &c.evidence {
            let _ = writeln!(out, "            - {e}");
        }
    }
    for u in unresolved {
        let repo = u
            .repository
            .as_ref()
            .map(|r| format!(" in {}", r.as_str()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "unresolved  {}{repo}: {}",
            u.capability.as_str(),
            u.next_action
        );
    }
}

/// The payload of `evidence detect`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DetectPayload {
    /// The change.
    pub change: Option<String>,
    /// Proposed providers, with confidence and evidence.
    pub candidates: Vec<Candidate>,
    /// Required capabilities without a recommended candidate, with the next action.
    pub unresolved: Vec<Unresolved>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for DetectPayload {
    fn human(&self, out: &mut String) {
        if self.change.is_none() {
            return;
        }
        if self.candidates.is_empty() && self.unresolved.is_empty() {
            let _ = writeln!(
                out,
                "nothing to wire: every required capability has a provider"
            );
            return;
        }
        human_detection(out, &self.candidates, &self.unresolved);
    }
}

/// Runs `evidence detect`: reads manifests, runs nothing, writes nothing.
pub fn detect(ctx: &Context, name: &str) -> Report<DetectPayload> {
    let loaded = match load(ctx, name) {
        Ok(l) => l,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let detection = loaded.detect();
    let mut status = loaded.notes.clone();
    status.extend(detection_notes(&detection));
    Report {
        payload: Some(DetectPayload {
            change: Some(loaded.change.name.to_string()),
            candidates: detection.candidates,
            unresolved: detection.unresolved,
            root: Some(loaded.root),
        }),
        status,
        verdict: Verdict::Success,
    }
}

/// The payload of `evidence init`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct InitPayload {
    /// The change.
    pub change: Option<String>,
    /// The file edited (or that would be).
    #[serde(serialize_with = "lossy_opt_path")]
    pub file: Option<PathBuf>,
    /// Whether the file was written (`--write`).
    pub written: bool,
    /// The providers added (or that would be).
    pub added: Vec<String>,
    /// The providers already there, untouched.
    pub kept: Vec<String>,
    /// Recommended candidates left out, and why.
    pub skipped: Vec<Skipped>,
    /// Every candidate, including those not added.
    pub candidates: Vec<Candidate>,
    /// What stays unresolved, with the next action.
    pub unresolved: Vec<Unresolved>,
    /// The new text of `execution.yaml`.
    pub text: Option<String>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

fn lossy_opt_path<S: serde::Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => lossy_path(p, s),
        None => s.serialize_none(),
    }
}

impl Payload for InitPayload {
    fn human(&self, out: &mut String) {
        let Some(file) = &self.file else { return };
        let verb = if self.written { "added" } else { "would add" };
        if self.added.is_empty() {
            let _ = writeln!(out, "nothing to add to {}", file.display());
        } else {
            let _ = writeln!(
                out,
                "{verb} to {}: {}",
                file.display(),
                self.added.join(", ")
            );
        }
        for s in &self.skipped {
            let _ = writeln!(out, "skipped {}: {}", s.name.as_str(), s.reason);
        }
        let open: Vec<Candidate> = self
            .candidates
            .iter()
            .filter(|c| !c.recommended)
            .cloned()
            .collect();
        human_detection(out, &open, &self.unresolved);
        if !self.written && !self.added.is_empty() {
            let _ = writeln!(out, "\n--- {} (preview; --write to apply)", file.display());
            if let Some(text) = &self.text {
                out.push_str(text);
            }
        }
    }
}

/// Replaces `path` with `text` through a temporary file in the same
/// directory, so a reader sees the old file or the new one.
fn replace(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().ok_or("the file has no directory")?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".execution.yaml.")
        .tempfile_in(dir)
        .map_err(|e| format!("create a temporary file in {}: {e}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())
        .map_err(|e| format!("write {}: {e}", tmp.path().display()))?;
    if let Ok(meta) = fs_err::metadata(path) {
        let _ = fs_err::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path)
        .map_err(|e| format!("replace {}: {}", path.display(), e.error))?;
    Ok(())
}

/// Runs `evidence init`: previews, or with `write` adds, the
/// high-confidence providers. Existing providers keep every byte.
pub fn init(ctx: &Context, name: &str, write: bool) -> Report<InitPayload> {
    let loaded = match load(ctx, name) {
        Ok(l) => l,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let detection = loaded.detect();
    let path = loaded.change.dir.join(EXECUTION_FILE);
    let shown = format!("openspec/changes/{}/{EXECUTION_FILE}", loaded.change.name);
    let existing = if path.exists() {
        match fs_err::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) => {
                return Report::failed(
                    vec![Diagnostic::error(Code::FileUnreadable, e.to_string()).surface(&shown)],
                    Verdict::Invalid,
                );
            }
        }
    } else {
        None
    };
    let output = match bootstrap::init(existing.as_deref(), &detection) {
        Ok(o) => o,
        Err(e) => {
            return Report::failed(
                vec![
                    Diagnostic::error(
                        Code::InitRefused,
                        format!("`evidence init` cannot edit {shown}: {e}"),
                    )
                    .surface(&shown)
                    .fix("Fix the file so `proofgraph validate` accepts it, or add the providers `evidence detect` proposes by hand."),
                ],
                Verdict::Invalid,
            );
        }
    };
    let mut status = loaded.notes.clone();
    status.extend(detection_notes(&detection));
    let changed = !output.added.is_empty();
    let mut written = false;
    if write && changed {
        if let Err(e) = replace(&path, &output.text) {
            status.push(
                Diagnostic::error(Code::FileUnreadable, format!("failed to {e}"))
                    .surface(&shown)
                    .fix("Check that the change directory is writable."),
            );
            return Report::failed(status, Verdict::Invalid);
        }
        written = true;
        // What was written must load as cleanly as before.
        let reloaded = loaded.workspace.load_change(&loaded.change.name);
        status.extend(
            reloaded
                .diagnostics
                .iter()
                .filter(|d| !loaded.change.diagnostics.contains(d))
                .cloned(),
        );
    }
    let verdict = if status.iter().any(Diagnostic::is_error) {
        Verdict::Invalid
    } else {
        Verdict::Success
    };
    Report {
        payload: Some(InitPayload {
            change: Some(loaded.change.name.to_string()),
            file: Some(PathBuf::from(shown)),
            written,
            added: output.added.iter().map(|p| p.to_string()).collect(),
            kept: output.kept.iter().map(|p| p.to_string()).collect(),
            skipped: output.skipped,
            candidates: detection.candidates,
            unresolved: detection.unresolved,
            text: changed.then_some(output.text),
            root: Some(loaded.root),
        }),
        status,
        verdict,
    }
}

/// The payload of `evidence doctor`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvidenceDoctorPayload {
    /// The change.
    pub change: Option<String>,
    /// What stands between the change and a proof run.
    pub findings: Vec<Finding>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for EvidenceDoctorPayload {
    fn human(&self, out: &mut String) {
        let Some(change) = &self.change else { return };
        if self.findings.is_empty() {
            let _ = writeln!(
                out,
                "{change}: nothing stands between the change and a proof run"
            );
        } else {
            let _ = writeln!(
                out,
                "{change}: {} finding{} (details on stderr)",
                self.findings.len(),
                if self.findings.len() == 1 { "" } else { "s" }
            );
        }
    }
}

/// Where a finding points: the provider's declaration, else the first claim
/// requiring its capability, else the change.
fn locate(loaded: &Loaded, finding: &Finding) -> Diagnostic {
    let code = Code::ALL
        .iter()
        .copied()
        .find(|c| c.as_str() == finding.code)
        .unwrap_or(Code::InternalError);
    let d = Diagnostic::warning(code, finding.message.clone())
        .fix(finding.fix.replace("<change>", loaded.change.name.as_str()));
    if let Some(w) = finding
        .provider
        .as_ref()
        .and_then(|p| loaded.change.providers.get(p))
    {
        return d.at(&w.file, w.provider.id.pos);
    }
    let evidence = format!("openspec/changes/{}/evidence.yaml", loaded.change.name);
    let claim = finding.capability.as_ref().and_then(|cap| {
        loaded
            .change
            .evidence
            .as_ref()?
            .claims
            .iter()
            .find_map(|c| {
                c.capabilities.iter().find(|x| &x.value == cap).or_else(|| {
                    // `discovery` is implied by `test`.
                    (cap.as_str() == "discovery")
                        .then(|| c.capabilities.iter().find(|x| x.value.as_str() == "test"))
                        .flatten()
                })
            })
    });
    match claim {
        Some(c) => d.at(&evidence, c.pos),
        None => d.surface(&format!("change.{}", loaded.change.name)),
    }
}

/// Runs `evidence doctor`: exit 0 when nothing stands in the way, 2 when
/// something does (the change cannot be fully proven as wired).
pub fn doctor(ctx: &Context, name: &str) -> Report<EvidenceDoctorPayload> {
    let loaded = match load(ctx, name) {
        Ok(l) => l,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let findings = bootstrap::doctor(
        &loaded.repos(),
        &loaded.claims(),
        &loaded.providers(),
        &loaded.services(),
    );
    let mut status = loaded.notes.clone();
    status.extend(findings.iter().map(|f| locate(&loaded, f)));
    let verdict = if findings.is_empty() {
        Verdict::Success
    } else {
        Verdict::Unproven
    };
    Report {
        payload: Some(EvidenceDoctorPayload {
            change: Some(loaded.change.name.to_string()),
            findings,
            root: Some(loaded.root),
        }),
        status,
        verdict,
    }
}
