//! `proofgraph evidence detect|init|doctor <change>`: wiring bootstrap.
//!
//! The reading of manifests, the choice of candidates and the editing of
//! `execution.yaml` text live in the `bootstrap` library, which runs
//! nothing and writes nothing. These commands load the change, hand it over
//! with what the library may not read itself (the `PATH`, the catalog's
//! setup, the providers' latest receipts), and (for `init --write` only)
//! replace `execution.yaml` atomically with the text the library verified,
//! or create `evidence.yaml` from the claims drafted from the change's delta
//! specs (`--claims-from-specs`), never replacing one that exists.
//!
//! A change without `evidence.yaml` has nothing to wire: each command says
//! so with `missing_evidence` as an error (exit 3), naming where the file
//! belongs, unless `init --claims-from-specs` drafts it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bootstrap::{
    Candidate, Detection, DraftClaim, Finding, Host, LastRun, Repo, Setup, Severity, Skipped,
    Unresolved,
};
use proofgraph_graph::model::{Claim, Provider, Service};
use proofgraph_sandbox::SandboxMode;
use serde::Serialize;

use crate::base::diagnostic::{self, Code, Diagnostic};
use crate::base::paths::lossy_path;
use crate::load::config::decode::Sink;
use crate::load::workspace::{Change, EVIDENCE_FILE, EXECUTION_FILE, Workspace};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};

/// What every evidence command starts from.
struct Loaded {
    workspace: Workspace,
    change: Change,
    root: RootOutput,
    notes: Vec<Diagnostic>,
    host: Host,
}

impl Loaded {
    fn repos(&self) -> Vec<Repo> {
        let catalog = self.workspace.catalog.as_ref();
        self.workspace
            .repositories
            .values()
            .map(|r| {
                let entry = catalog.and_then(|c| c.repositories.get(&r.id));
                let setup = Setup {
                    commands: entry
                        .and_then(|e| e.setup.as_ref())
                        .map(|cs| cs.iter().map(|c| c.value.clone()).collect())
                        .unwrap_or_default(),
                    cache: entry
                        .and_then(|e| e.setup_cache.as_ref())
                        .map(|cs| cs.iter().map(|c| c.value.clone()).collect())
                        .unwrap_or_default(),
                };
                Repo {
                    id: r.id.clone(),
                    dir: r.dir.clone(),
                    setup,
                    caches: entry
                        .map(|e| {
                            e.caches
                                .iter()
                                .map(|c| c.value.as_str().to_owned())
                                .collect()
                        })
                        .unwrap_or_default(),
                }
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
        self.detect_for(&self.claims())
    }

    fn detect_for(&self, claims: &[Claim]) -> Detection {
        bootstrap::detect(&self.repos(), claims, &self.providers(), &self.host)
    }

    /// Where the change's `evidence.yaml` is, as shown.
    fn evidence_file(&self) -> String {
        format!("openspec/changes/{}/{EVIDENCE_FILE}", self.change.name)
    }

    /// The latest receipt of each provider, as bootstrap needs it: whether
    /// its timeout stopped it, and after how long. Only receipts a trusted
    /// key signed are read; the store is opened read-only and never created.
    fn last_runs(&self, ctx: &Context) -> Vec<LastRun> {
        let root = &self.workspace.root;
        let pins = crate::proof::trust::Pins::new(ctx.env());
        let trusted =
            crate::proof::trust::inspect(&pins, root, self.workspace.catalog.as_ref()).trusted;
        let store = crate::store::Store::open_read_only(root);
        self.change
            .providers
            .values()
            .filter_map(|w| {
                let p = &w.provider;
                let capability = p.capability()?;
                let sha = store.latest(&self.change.name, &p.id.value, &capability)?;
                let verified = crate::proof::receipt::read(&store, &sha, &trusted)?;
                let exit = verified.proof.exit.as_ref()?;
                Some(LastRun {
                    provider: p.id.value.clone(),
                    timed_out: exit.timed_out,
                    duration_ms: verified.proof.duration_ms,
                })
            })
            .collect()
    }
}

/// `missing_evidence`, as an error: bootstrap has no claims to wire.
fn missing_evidence(loaded: &Loaded, scenarios: usize) -> Diagnostic {
    let file = loaded.evidence_file();
    let name = &loaded.change.name;
    let fix = if scenarios > 0 {
        format!(
            "Run `proofgraph evidence init {name} --claims-from-specs` to draft {file} from the {scenarios} scenario{} of the change's delta specs, or write it by hand (docs/evidence.md).",
            if scenarios == 1 { "" } else { "s" }
        )
    } else {
        format!("Write {file} with the claims the change must prove (docs/evidence.md).")
    };
    Diagnostic::error(
        Code::MissingEvidence,
        format!(
            "change `{name}` has no evidence.yaml, so there are no claims to wire; it belongs at `{file}`"
        ),
    )
    .surface("change.evidence")
    .fix(fix)
}

/// Loads the change; any error in it stops the command (bootstrap reasons
/// about a change as written, not about a half-read one). Without
/// `evidence.yaml` it stops too, unless `drafting` (`init
/// --claims-from-specs`, which writes it).
fn load(ctx: &Context, name: &str, drafting: bool) -> Result<Loaded, Vec<Diagnostic>> {
    let resolution = ctx.resolve_root().map_err(|d| vec![d])?;
    let workspace = Workspace::load(&resolution.root.path);
    let change_name = workspace.find_change(name).map_err(|d| vec![d])?;
    let change = workspace.load_change(&change_name);
    let mut all: Vec<Diagnostic> = resolution.notes.clone();
    all.extend(workspace.diagnostics.iter().cloned());
    all.extend(
        change
            .diagnostics
            .iter()
            .filter(|d| d.code != Code::MissingEvidence)
            .cloned(),
    );
    let in_place = workspace
        .catalog
        .as_ref()
        .and_then(|c| c.sandbox.as_ref())
        .is_some_and(|m| m.value == SandboxMode::None);
    let loaded = Loaded {
        root: RootOutput::from(&resolution.root),
        notes: Vec::new(),
        host: Host::new(ctx.path_var().map(|p| p.as_os_str()), in_place),
        workspace,
        change,
    };
    if !loaded.change.has_evidence && !drafting {
        let scenarios = bootstrap::draft_claims(&loaded.change.dir).claims.len();
        all.push(missing_evidence(&loaded, scenarios));
    }
    diagnostic::sort(&mut all);
    if all.iter().any(Diagnostic::is_error) {
        return Err(all);
    }
    Ok(Loaded {
        notes: all,
        ..loaded
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
            .unwrap_or_else(|| {
                if c.evidence.iter().any(|e| e.starts_with("not proposed:")) {
                    "(not proposed)".to_owned()
                } else {
                    "(refused)".to_owned()
                }
            });
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
    let loaded = match load(ctx, name, false) {
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
    /// What `--claims-from-specs` drafted (absent without the flag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claims_from_specs: Option<ClaimsFromSpecs>,
    /// The setup the added providers' repositories need, added to `proofgraph.yaml`
    /// (absent when they need none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogSetup>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

/// The setup `evidence init` gives repositories in `proofgraph.yaml`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CatalogSetup {
    /// `proofgraph.yaml`.
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    /// Whether it was written (`--write`).
    pub written: bool,
    /// The repositories given a setup.
    pub repositories: Vec<String>,
    /// The file's new text.
    pub text: String,
}

/// The claims `init --claims-from-specs` drafted from the change's delta specs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClaimsFromSpecs {
    /// Where `evidence.yaml` is (or would be).
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    /// Whether it was created (`--write`, and it did not exist).
    pub written: bool,
    /// Whether it already existed: then it was kept byte for byte, and the
    /// draft is only shown.
    pub exists: bool,
    /// The spec files read, relative to the change directory.
    pub specs: Vec<String>,
    /// The drafted claims.
    pub claims: Vec<DraftClaim>,
    /// The drafted file's text.
    pub text: Option<String>,
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
        if let Some(drafted) = &self.claims_from_specs {
            let n = drafted.claims.len();
            let claims = format!("{n} claim{}", if n == 1 { "" } else { "s" });
            let shown = drafted.file.display();
            if drafted.exists {
                let _ = writeln!(
                    out,
                    "{shown} exists and was kept as it is ({claims} drafted from the delta specs, not written)"
                );
            } else if drafted.written {
                let _ = writeln!(
                    out,
                    "created {shown} with {claims} drafted from the delta specs: each requires `test` until you add what its scenario needs"
                );
            } else {
                let _ = writeln!(
                    out,
                    "would create {shown} with {claims} drafted from the delta specs"
                );
                if let Some(text) = &drafted.text {
                    let _ = writeln!(out, "\n--- {shown} (preview; --write to create)");
                    out.push_str(text);
                    out.push('\n');
                }
            }
        }
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
        if let Some(c) = &self.catalog {
            let verb = if c.written { "added" } else { "would add" };
            let _ = writeln!(
                out,
                "{verb} the setup of {} to {} (what its providers fetch before they run offline)",
                c.repositories.join(", "),
                c.file.display()
            );
        }
        if !self.written && !self.added.is_empty() {
            let _ = writeln!(out, "\n--- {} (preview; --write to apply)", file.display());
            if let Some(text) = &self.text {
                out.push_str(text);
            }
            if let Some(c) = &self.catalog {
                let _ = writeln!(
                    out,
                    "\n--- {} (preview; --write to apply)",
                    c.file.display()
                );
                out.push_str(&c.text);
            }
        }
    }
}

/// The catalog's file name.
const CATALOG_FILE: &str = "proofgraph.yaml";

/// `proofgraph.yaml` with the setup of each of `setups` added (created when there is
/// none), or `None` when none is needed or none could be added; a repository whose entry
/// cannot be edited safely is a warning saying what to add by hand.
fn catalog_setups(
    loaded: &Loaded,
    setups: &[(proofgraph_graph::RepoId, bootstrap::RepositorySetup)],
    status: &mut Vec<Diagnostic>,
) -> Option<CatalogSetup> {
    if setups.is_empty() {
        return None;
    }
    let file = loaded.workspace.root.join(CATALOG_FILE);
    let mut text = if loaded.workspace.has_catalog {
        Some(fs_err::read_to_string(&file).ok()?)
    } else {
        None
    };
    let mut repositories = Vec::new();
    for (repo, setup) in setups {
        let path = loaded
            .workspace
            .repositories
            .get(repo)
            .map_or(".", |r| r.path.as_str());
        match bootstrap::add_setup(text.as_deref(), repo.as_str(), path, setup) {
            Ok(edited) => {
                text = Some(edited);
                repositories.push(repo.to_string());
            }
            Err(bootstrap::NotEdited(why)) => status.push(
                Diagnostic::warning(
                    Code::DependenciesNeedNetwork,
                    format!("the setup repository `{repo}` needs to fetch its dependencies was not added to {CATALOG_FILE}: {why}"),
                )
                .surface(CATALOG_FILE)
                .fix(format!(
                    "Add `setup: [[{}]]` and `setupCache: [{}]` to repository `{repo}` in {CATALOG_FILE} (docs/setup.md).",
                    setup.setup.iter().map(|w| format!("{w:?}")).collect::<Vec<_>>().join(", "),
                    setup.cache.join(", ")
                )),
            ),
        }
    }
    let text = text.filter(|_| !repositories.is_empty())?;
    Some(CatalogSetup {
        file: PathBuf::from(CATALOG_FILE),
        written: false,
        repositories,
        text,
    })
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

/// The claims drafted from the change's delta specs, checked by reading the
/// drafted text back as `validate` reads `evidence.yaml`: the same claims,
/// and nothing it would warn about.
struct Draft {
    text: String,
    claims: Vec<Claim>,
    drafted: bootstrap::Drafted,
}

fn draft(loaded: &Loaded) -> Result<Draft, Vec<Diagnostic>> {
    let file = loaded.evidence_file();
    let drafted = bootstrap::draft_claims(&loaded.change.dir);
    let unreadable: Vec<Diagnostic> = drafted
        .problems
        .iter()
        .map(|p| {
            Diagnostic::error(Code::FileUnreadable, format!("failed to {}", p.message))
                .surface(&format!("openspec/changes/{}/{}", loaded.change.name, p.file))
                .fix("Make the spec file readable UTF-8 text, or write evidence.yaml by hand (docs/evidence.md).")
        })
        .collect();
    if !unreadable.is_empty() {
        return Err(unreadable);
    }
    if drafted.claims.is_empty() {
        let specs = format!("openspec/changes/{}/specs/", loaded.change.name);
        let found = if drafted.files.is_empty() {
            format!("there is no delta spec (`spec.md`) under `{specs}`")
        } else {
            format!(
                "its delta specs ({}) hold no scenario under `## ADDED Requirements` or `## MODIFIED Requirements`",
                drafted.files.join(", ")
            )
        };
        return Err(vec![
            Diagnostic::error(
                Code::MissingEvidence,
                format!(
                    "change `{}` has no evidence.yaml to wire, and {found}; it belongs at `{file}`",
                    loaded.change.name
                ),
            )
            .surface("change.evidence")
            .fix(format!(
                "Write {file} with the claims the change must prove (docs/evidence.md), or add `#### Scenario:` blocks to its delta specs."
            )),
        ]);
    }
    let text = bootstrap::render_evidence(&drafted.claims);
    let refused = |why: String| {
        vec![
            Diagnostic::error(
                Code::InitRefused,
                format!("`evidence init --claims-from-specs` cannot draft {file}: {why}"),
            )
            .surface(&file)
            .fix("Write evidence.yaml by hand from the change's scenarios (docs/evidence.md)."),
        ]
    };
    let doc = crate::load::config::load::parse_bytes(text.as_bytes(), &file)
        .map_err(|d| refused(d.message))?;
    let mut sink = Sink::new(&file);
    let decoded = crate::load::config::evidence::decode(&mut sink, &doc.root);
    let problems = sink.into_diagnostics();
    if let Some(d) = problems.first() {
        return Err(refused(format!(
            "the draft does not read back cleanly ({})",
            d.message
        )));
    }
    let claims = decoded.map(|e| e.claims).unwrap_or_default();
    let same = claims.len() == drafted.claims.len()
        && claims.iter().zip(&drafted.claims).all(|(c, d)| {
            c.id.value == d.id
                && c.scenario.as_ref().map(|s| s.value.as_str()) == Some(d.scenario.as_str())
                && c.capabilities
                    .iter()
                    .map(|x| &x.value)
                    .eq(d.capabilities.iter())
        });
    if !same {
        return Err(refused("the draft reads back as other claims".to_owned()));
    }
    Ok(Draft {
        text,
        claims,
        drafted,
    })
}

/// Creates `path` holding `text`, never replacing a file: a temporary file
/// in the same directory is linked into place only if nothing is there.
fn create(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().ok_or("the file has no directory")?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".evidence.yaml.")
        .tempfile_in(dir)
        .map_err(|e| format!("create a temporary file in `{}`: {e}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())
        .map_err(|e| format!("write `{}`: {e}", tmp.path().display()))?;
    tmp.persist_noclobber(path)
        .map_err(|e| format!("create `{}`: {}", path.display(), e.error))?;
    Ok(())
}

/// Runs `evidence init`: previews, or with `write` adds, the
/// high-confidence providers. Existing providers keep every byte. With
/// `claims_from_specs`, a change without `evidence.yaml` gets one drafted
/// from its delta specs' scenarios (previewed, or created with `write`), and
/// the providers are detected for those claims; an existing `evidence.yaml`
/// is never touched.
pub fn init(
    ctx: &Context,
    name: &str,
    write: bool,
    claims_from_specs: bool,
) -> Report<InitPayload> {
    let loaded = match load(ctx, name, claims_from_specs) {
        Ok(l) => l,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let mut status = loaded.notes.clone();
    let (claims, mut from_specs) = match claims_for(&loaded, claims_from_specs) {
        Ok(found) => found,
        Err(mut all) => {
            all.extend(status);
            diagnostic::sort(&mut all);
            return Report::failed(all, Verdict::Invalid);
        }
    };
    let detection = loaded.detect_for(&claims);
    let path = loaded.change.dir.join(EXECUTION_FILE);
    let shown = format!("openspec/changes/{}/{EXECUTION_FILE}", loaded.change.name);
    let output = match read_existing(&path, &shown)
        .and_then(|existing| edit_execution(existing.as_deref(), &detection, &shown))
    {
        Ok(o) => o,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    status.extend(detection_notes(&detection));
    // The setup the added providers need (cargo's crates for `--offline`), in the catalog.
    let mut catalog = catalog_setups(&loaded, &output.setups, &mut status);
    let writes = bootstrap::Writes::plan(
        write,
        from_specs.as_ref().is_some_and(|d| d.text.is_some()),
        !output.added.is_empty(),
        catalog.is_some(),
    );
    if let Err(d) = write_files(&loaded, writes, &from_specs, &output.text, &catalog) {
        status.push(d);
        return Report::failed(status, Verdict::Invalid);
    }
    let written = writes;
    if let Some(drafted) = from_specs.as_mut() {
        drafted.written = written.evidence;
    }
    if let Some(c) = catalog.as_mut() {
        c.written = written.catalog;
    }
    if written.evidence || written.execution {
        status.extend(new_findings(&loaded));
    }
    let verdict = if status.iter().any(Diagnostic::is_error) {
        Verdict::Invalid
    } else {
        Verdict::Success
    };
    let changed = !output.added.is_empty();
    Report {
        payload: Some(InitPayload {
            change: Some(loaded.change.name.to_string()),
            file: Some(PathBuf::from(shown)),
            written: written.execution,
            added: output.added.iter().map(|p| p.to_string()).collect(),
            kept: output.kept.iter().map(|p| p.to_string()).collect(),
            skipped: output.skipped,
            candidates: detection.candidates,
            unresolved: detection.unresolved,
            text: changed.then_some(output.text),
            claims_from_specs: from_specs,
            catalog,
            root: Some(loaded.root),
        }),
        status,
        verdict,
    }
}

/// What the change says once loaded again that it did not say before: what was written
/// must load as cleanly as before.
fn new_findings(loaded: &Loaded) -> Vec<Diagnostic> {
    let reloaded = loaded.workspace.load_change(&loaded.change.name);
    reloaded
        .diagnostics
        .into_iter()
        .filter(|d| !loaded.change.diagnostics.contains(d))
        .collect()
}

/// The claims providers are detected for, and with `claims_from_specs` what was drafted
/// from the delta specs: for reference only when `evidence.yaml` exists (it keeps every
/// byte), else the draft whose claims are used (its `text` is what `--write` creates).
fn claims_for(
    loaded: &Loaded,
    claims_from_specs: bool,
) -> Result<(Vec<Claim>, Option<ClaimsFromSpecs>), Vec<Diagnostic>> {
    let file = PathBuf::from(loaded.evidence_file());
    if !claims_from_specs {
        return Ok((loaded.claims(), None));
    }
    if loaded.change.has_evidence {
        let drafted = bootstrap::draft_claims(&loaded.change.dir);
        let shown = ClaimsFromSpecs {
            file,
            written: false,
            exists: true,
            specs: drafted.files,
            claims: drafted.claims,
            text: None,
        };
        return Ok((loaded.claims(), Some(shown)));
    }
    let draft = draft(loaded)?;
    let shown = ClaimsFromSpecs {
        file,
        // Set once the file is created, after everything that can refuse the command has
        // been worked out.
        written: false,
        exists: false,
        specs: draft.drafted.files,
        claims: draft.drafted.claims,
        text: Some(draft.text),
    };
    Ok((draft.claims, Some(shown)))
}

/// The text of `execution.yaml` at `path`, when it exists.
fn read_existing(path: &Path, shown: &str) -> Result<Option<String>, Diagnostic> {
    if !path.exists() {
        return Ok(None);
    }
    fs_err::read_to_string(path)
        .map(Some)
        .map_err(|e| Diagnostic::error(Code::FileUnreadable, e.to_string()).surface(shown))
}

/// `execution.yaml`'s text with the recommended providers added, or why it cannot be
/// edited.
fn edit_execution(
    existing: Option<&str>,
    detection: &Detection,
    shown: &str,
) -> Result<bootstrap::InitOutput, Diagnostic> {
    bootstrap::init(existing, detection).map_err(|e| {
        Diagnostic::error(
            Code::InitRefused,
            format!("`evidence init` cannot edit {shown}: {e}"),
        )
        .surface(shown)
        .fix("Fix the file so `proofgraph validate` accepts it, or add the providers `evidence detect` proposes by hand.")
    })
}

/// Writes what `writes` says, in its order: the drafted `evidence.yaml` (created, never
/// replacing one), `execution.yaml`, then `proofgraph.yaml`'s setup (each replaced
/// atomically). The first failure stops the rest.
fn write_files(
    loaded: &Loaded,
    writes: bootstrap::Writes,
    from_specs: &Option<ClaimsFromSpecs>,
    execution: &str,
    catalog: &Option<CatalogSetup>,
) -> Result<(), Diagnostic> {
    let failed = |e: String, at: &str, fix: &str| {
        Diagnostic::error(Code::FileUnreadable, format!("failed to {e}"))
            .surface(at)
            .fix(fix)
    };
    if writes.evidence
        && let Some(text) = from_specs.as_ref().and_then(|d| d.text.as_ref())
    {
        create(&loaded.change.dir.join(EVIDENCE_FILE), text).map_err(|e| {
            failed(e, &loaded.evidence_file(), "Check that the change directory is writable and that no evidence.yaml appeared meanwhile.")
        })?;
    }
    if writes.execution {
        let shown = format!("openspec/changes/{}/{EXECUTION_FILE}", loaded.change.name);
        replace(&loaded.change.dir.join(EXECUTION_FILE), execution)
            .map_err(|e| failed(e, &shown, "Check that the change directory is writable."))?;
    }
    if writes.catalog
        && let Some(c) = catalog
    {
        replace(&loaded.workspace.root.join(CATALOG_FILE), &c.text).map_err(|e| {
            failed(e, CATALOG_FILE, "Check that the OpenSpec root's directory is writable, then add the setup `evidence init` showed to proofgraph.yaml.")
        })?;
    }
    Ok(())
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
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let warnings = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        let notes = self.findings.len() - warnings;
        if warnings == 0 {
            let _ = write!(
                out,
                "{change}: nothing stands between the change and a proof run"
            );
            if notes > 0 {
                let _ = write!(out, " ({} on stderr)", plural(notes, "note"));
            }
            out.push('\n');
        } else {
            let _ = writeln!(
                out,
                "{change}: {} (details on stderr)",
                plural(warnings, "finding")
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
    let d = match finding.severity {
        Severity::Warning => Diagnostic::warning(code, finding.message.clone()),
        Severity::Info => Diagnostic::info(code, finding.message.clone()),
    }
    .fix(finding.fix.replace("<change>", loaded.change.name.as_str()));
    if let Some(w) = finding
        .provider
        .as_ref()
        .and_then(|p| loaded.change.providers.get(p))
    {
        return d.at(&w.file, w.provider.id.pos);
    }
    // A repository's problem (its setup): its entry in the catalog.
    if finding.provider.is_none()
        && finding.capability.is_none()
        && let Some(id) = &finding.repository
    {
        return match loaded
            .workspace
            .catalog
            .as_ref()
            .and_then(|c| c.repositories.get(id))
        {
            Some(entry) => d.at(crate::load::config::catalog::FILE_NAME, entry.id.pos),
            None => d.surface(&format!("workspace.repositories.{id}")),
        };
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

/// Runs `evidence doctor`: exit 0 when nothing stands in the way (notes
/// alone, such as `setup_makes_path`, change nothing), 2 when something
/// does (the change cannot be fully proven as wired), 3 when the change
/// cannot be read or has no `evidence.yaml`.
pub fn doctor(ctx: &Context, name: &str) -> Report<EvidenceDoctorPayload> {
    let loaded = match load(ctx, name, false) {
        Ok(l) => l,
        Err(all) => return Report::failed(all, Verdict::Invalid),
    };
    let repos = loaded.repos();
    let providers = loaded.providers();
    // Interpreters bootstrap cannot read answer for themselves.
    let questions = bootstrap::python_questions(&repos, &providers);
    let answers = crate::observe::interpreters::ask(
        &questions,
        ctx.path_var().map(|p| p.as_os_str()),
        &ctx.env().vars,
    );
    let host = loaded.host.clone().with_python_imports(answers);
    let findings = bootstrap::doctor(
        &repos,
        &loaded.claims(),
        &providers,
        &loaded.services(),
        &host,
        &loaded.last_runs(ctx),
    );
    let mut status = loaded.notes.clone();
    status.extend(findings.iter().map(|f| locate(&loaded, f)));
    let verdict = if findings.iter().any(|f| f.severity == Severity::Warning) {
        Verdict::Unproven
    } else {
        Verdict::Success
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
