//! The public vocabulary of wiring bootstrap: repositories to scan, the
//! candidates and unresolved capabilities `detect` reports, and the findings
//! `doctor` lists.
//!
//! Every type serialises with `snake_case` keys (the machine-readable output
//! casing); the `provider` object of a [`Candidate`] keeps the camelCase keys
//! of `execution.yaml`, because it is a fragment of that file.

use std::path::PathBuf;

use proofgraph_graph::{CapabilityName, ProviderId, RepoId};
use serde::{Serialize, Serializer};

/// One repository of the workspace: its catalog id, its directory and its
/// setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The catalog id (`root` for a workspace without a catalog).
    pub id: RepoId,
    /// The directory holding its manifests.
    pub dir: PathBuf,
    /// What its `setup` in `proofgraph.yaml` runs and keeps.
    pub setup: Setup,
    /// The build and download caches it declares (`caches`: `go-build`, `sccache`, …),
    /// which set its jobs' variables (`go-build` adds `-count=1` to `GOFLAGS`).
    pub caches: Vec<String>,
}

impl Repo {
    /// A repository without setup.
    pub fn new(id: RepoId, dir: PathBuf) -> Self {
        Self {
            id,
            dir,
            setup: Setup::default(),
            caches: Vec::new(),
        }
    }
}

/// A repository's `setup` and `setupCache` (`proofgraph.yaml`), from which
/// bootstrap tells which paths a sandbox gets from setup rather than from
/// git (docs/setup.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    /// The setup commands, in order (argv each).
    pub commands: Vec<Vec<String>>,
    /// `setupCache`: the directories a cached setup keeps. When it is not
    /// empty, setup runs where only its inputs are, and these directories
    /// are all that reach a sandbox.
    pub cache: Vec<String>,
}

/// How far a candidate can be trusted without a person looking at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The one safe candidate for its capability and repository, producing a
    /// structured result (a test count for `test`). `init` writes only these.
    High,
    /// A person must confirm it: a risky script (refused, no provider), a
    /// wrapper whose flags may not reach the runner, a guessed command.
    Review,
    /// One of several equally plausible candidates for one slot.
    Ambiguous,
    /// A valid option beside the recommended one (or for a capability whose
    /// script aliases are only a hint).
    Alternative,
}

impl Confidence {
    /// The output spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Review => "review",
            Confidence::Ambiguous => "ambiguous",
            Confidence::Alternative => "alternative",
        }
    }
}

/// A provider `detect` proposes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The capability it proves.
    #[serde(serialize_with = "as_str")]
    pub capability: CapabilityName,
    /// The repository it runs in.
    #[serde(serialize_with = "as_str")]
    pub repository: RepoId,
    /// The provider name it would get in `execution.yaml`.
    #[serde(serialize_with = "as_str")]
    pub name: ProviderId,
    /// The `execution.yaml` provider object (camelCase keys), or `null` when
    /// the candidate is refused (a risky script).
    pub provider: serde_json::Value,
    /// How far it can be trusted.
    pub confidence: Confidence,
    /// Whether `init` adds it: exactly when `confidence` is high.
    pub recommended: bool,
    /// Why it is proposed, one fact per entry.
    pub evidence: Vec<String>,
    /// The setup its repository needs in `proofgraph.yaml` for it to run (its command
    /// expects what the setup fetches: cargo's crates for `--offline`), when the
    /// repository has none that does it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup: Option<RepositorySetup>,
}

/// A repository's `setup` and `setupCache` a candidate needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepositorySetup {
    /// The setup command (argv).
    pub setup: Vec<String>,
    /// What the setup cache keeps (`setupCache`).
    #[serde(rename = "setupCache")]
    pub cache: Vec<String>,
}

/// Why a required capability has no recommended candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnresolvedReason {
    /// Only an outside authority can vouch for it (review, acceptance).
    ExternalAuthority,
    /// The repository offers no command that is safe to run for it.
    NoSafeProjectCommand,
    /// Tests exist but nothing writes a report with a test count.
    StructuredTestCountUnavailable,
    /// Several candidates fit and none can be preferred.
    Ambiguous,
    /// A configured provider's program does not exist.
    CommandUnavailable,
    /// A candidate exists but a person must confirm it proves the capability.
    NeedsReview,
}

impl UnresolvedReason {
    /// The output spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            UnresolvedReason::ExternalAuthority => "external_authority",
            UnresolvedReason::NoSafeProjectCommand => "no_safe_project_command",
            UnresolvedReason::StructuredTestCountUnavailable => "structured_test_count_unavailable",
            UnresolvedReason::Ambiguous => "ambiguous",
            UnresolvedReason::CommandUnavailable => "command_unavailable",
            UnresolvedReason::NeedsReview => "needs_review",
        }
    }
}

/// A required capability (for one repository, or for the workspace) that
/// bootstrap leaves to a person, with what to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unresolved {
    /// The capability.
    #[serde(serialize_with = "as_str")]
    pub capability: CapabilityName,
    /// The repository, when the gap is per repository.
    #[serde(serialize_with = "opt_as_str")]
    pub repository: Option<RepoId>,
    /// Why it is unresolved.
    pub reason: UnresolvedReason,
    /// One actionable sentence.
    pub next_action: String,
}

/// What `detect` found.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Detection {
    /// Proposed providers, grouped by capability, then repository.
    pub candidates: Vec<Candidate>,
    /// Required capabilities without a recommended candidate.
    pub unresolved: Vec<Unresolved>,
    /// Manifests that could not be read, and other things worth knowing.
    pub warnings: Vec<String>,
}

/// How much a [`Finding`] stands in the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something stands between the change and a proof run.
    Warning,
    /// Worth knowing; nothing to do (a path setup makes, not git).
    Info,
}

/// One problem `doctor` reports, with its fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable `snake_case` code.
    pub code: &'static str,
    /// Whether it stands in the way.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// One actionable sentence.
    pub fix: String,
    /// The provider it concerns.
    #[serde(serialize_with = "opt_as_str")]
    pub provider: Option<ProviderId>,
    /// The capability it concerns.
    #[serde(serialize_with = "opt_as_str")]
    pub capability: Option<CapabilityName>,
    /// The repository it concerns.
    #[serde(serialize_with = "opt_as_str")]
    pub repository: Option<RepoId>,
}

/// How a provider's last run ended, from its latest receipt (the
/// application reads the store; bootstrap reads nothing of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// The provider.
    pub provider: ProviderId,
    /// Whether its timeout stopped it.
    pub timed_out: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// What `init` produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitOutput {
    /// The new `execution.yaml` text.
    pub text: String,
    /// The providers added, in file order.
    #[serde(serialize_with = "ids_as_str")]
    pub added: Vec<ProviderId>,
    /// The providers that were already there, untouched, in file order.
    #[serde(serialize_with = "ids_as_str")]
    pub kept: Vec<ProviderId>,
    /// Recommended candidates that were not added, and why.
    pub skipped: Vec<Skipped>,
    /// The setup each added candidate's repository needs in `proofgraph.yaml`.
    #[serde(skip)]
    pub setups: Vec<(RepoId, RepositorySetup)>,
}

/// A recommended candidate `init` did not add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The candidate's name.
    #[serde(serialize_with = "as_str")]
    pub name: ProviderId,
    /// Why it was left out.
    pub reason: String,
}

fn as_str<S: Serializer, T: AsRef<str>>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(value.as_ref())
}

fn opt_as_str<S: Serializer, T: AsRef<str>>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => s.serialize_str(v.as_ref()),
        None => s.serialize_none(),
    }
}

fn ids_as_str<S: Serializer>(value: &[ProviderId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(value.iter().map(ProviderId::as_str))
}
