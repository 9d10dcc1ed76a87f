//! Receipts: what a provider's run proved, as an in-toto Statement v1 in a
//! DSSE envelope signed with Ed25519.
//!
//! The statement's subject is the provider's binding (`sha256`, as external
//! signers use it, plus the BLAKE3 fingerprint under `blake3`); the predicate
//! is in-toto's test-result v0.1 (`result`, `configuration`, `passedTests`,
//! `warnedTests`, `failedTests`) with proofgraph's own fields under
//! `predicate.proofgraph`. A receipt is reused only when its envelope verifies
//! against a key the workspace trusts and its subject matches the fingerprint
//! being asked about.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use proofgraph_graph::fingerprint::{Fingerprint, Manifest, Value as FpValue};
use proofgraph_graph::model::Network;
use proofgraph_graph::{CapabilityName, ChangeName, ProviderId, RepoId};
use proofgraph_sandbox::SandboxMode;

use crate::attest::envelope::TrustedKey;
use crate::attest::statement::{self, DigestSet, Statement, Subject};
use crate::base::redact::{Redact, Secrets};
use crate::observe::git_id::GitId;
use crate::store::{Sha256, Store};

/// The in-toto predicate type of every receipt.
pub const PREDICATE_TYPE: &str = "https://in-toto.io/attestation/test-result/v0.1";
/// The version of `predicate.proofgraph`.
pub const RECEIPT_VERSION: u64 = 1;

/// What a requirement's run established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Proven.
    Pass,
    /// Ran, and did not hold.
    Fail,
    /// Ran, but what it produced does not decide (no report, no count, missing annotations).
    Inconclusive,
    /// Could not run properly (infrastructure: a service never ready, a program missing).
    Error,
}

impl Outcome {
    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Error => "error",
        }
    }

    fn test_result(self) -> &'static str {
        match self {
            Outcome::Pass => "PASSED",
            Outcome::Fail | Outcome::Error => "FAILED",
            Outcome::Inconclusive => "WARNED",
        }
    }
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Exit {
    /// The exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Whether the timeout ended it.
    pub timed_out: bool,
}

/// What an artifact of a receipt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactKind {
    /// The command's log (stdout and stderr, redacted as written).
    CommandLog,
    /// The structured report.
    StructuredReport,
    /// A file or inline body a Playwright report attached.
    PlaywrightAttachment,
    /// One side of a contract.
    ContractArtifact,
    /// The signed envelope of an external result (`evidence verify-ci`).
    ExternalEvidence,
    /// The failing tests and what their runner attached to each ([`Failures`], JSON),
    /// bounded: what `prove` shows after `failing:` and `log` prints.
    TestFailures,
}

impl ArtifactKind {
    /// Every kind, in the order they are documented.
    pub const ALL: [ArtifactKind; 6] = [
        ArtifactKind::CommandLog,
        ArtifactKind::StructuredReport,
        ArtifactKind::PlaywrightAttachment,
        ArtifactKind::ContractArtifact,
        ArtifactKind::ExternalEvidence,
        ArtifactKind::TestFailures,
    ];

    /// The name a receipt records.
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::CommandLog => "command-log",
            ArtifactKind::StructuredReport => "structured-report",
            ArtifactKind::PlaywrightAttachment => "playwright-attachment",
            ArtifactKind::ContractArtifact => "contract-artifact",
            ArtifactKind::ExternalEvidence => "external-evidence",
            ArtifactKind::TestFailures => "test-failures",
        }
    }
}

/// A file kept in the store and referenced from the receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// What it is.
    pub kind: ArtifactKind,
    /// Where it was (repository-relative), when it was a file.
    pub path: Option<String>,
    /// Its SHA-256 (the store key).
    pub sha256: Sha256,
    /// Its size in bytes.
    pub size: u64,
    /// The name a test gave it (Playwright attachments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// When the store keeps only the head and tail of a longer file (a command log over
    /// `logs.keepBytes`): the whole file's size and SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<Whole>,
}

/// The size and SHA-256 of a whole file of which an [`Artifact`] keeps a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Whole {
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256 (of the bytes the sandbox wrote, redacted as they were written).
    pub sha256: Sha256,
}

/// Test counts from the structured report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Counts {
    /// Tests found.
    pub total: u64,
    /// Passed.
    pub passed: u64,
    /// Failed.
    pub failed: u64,
    /// Skipped.
    pub skipped: u64,
    /// Todo.
    pub todo: u64,
    /// Replayed from the runner's result cache, not run (go test's `(cached)`): never
    /// counted as passed. Absent (0) from receipts made before replays were told apart.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replayed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counts {
    /// `12 tests: 10 passed, 2 failed` (skipped, todo and replayed when there are any).
    pub fn shown(&self) -> String {
        let mut parts = vec![format!("{} passed", self.passed)];
        for (n, word) in [
            (self.failed, "failed"),
            (self.skipped, "skipped"),
            (self.todo, "todo"),
            (self.replayed, "replayed, not run"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {word}"));
            }
        }
        let tests = if self.total == 1 { "test" } else { "tests" };
        format!("{} {tests}: {}", self.total, parts.join(", "))
    }
}

/// At most this many failing tests are kept with their messages ([`Failures`]).
pub const MAX_FAILURES: usize = 20;

/// At most this many bytes of failing tests' names and messages are kept for one run
/// ([`Failures`]); each message is bounded on its own too
/// ([`crate::decide::report::MAX_MESSAGE_BYTES`]).
pub const MAX_FAILURES_BYTES: usize = 16 * 1024;

/// The failing tests of a run and what their runner attached to each, as a receipt keeps
/// them (artifact `test-failures`): in the report's order, the first [`MAX_FAILURES`] whose
/// names and messages fit in [`MAX_FAILURES_BYTES`]; `left_out` counts the others.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Failures {
    /// The failing tests kept.
    pub tests: Vec<Failure>,
    /// Failing tests beyond the bound (their names are in `failedTests`, their messages in
    /// the report).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out: u64,
}

/// One failing test and what its runner attached to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The test, as `failedTests` names it.
    pub test: String,
    /// Its failure message and output, when the report attaches any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Failures {
    /// The failing tests to keep of `failed` (name, message), in order, within the bounds.
    pub fn bounded(failed: impl IntoIterator<Item = (String, Option<String>)>) -> Failures {
        let mut out = Failures::default();
        let mut used = 0usize;
        for (test, message) in failed {
            let size = test.len() + message.as_ref().map_or(0, String::len);
            if out.left_out > 0
                || out.tests.len() == MAX_FAILURES
                || used + size > MAX_FAILURES_BYTES
            {
                out.left_out += 1;
                continue;
            }
            used += size;
            out.tests.push(Failure { test, message });
        }
        out
    }

    /// Whether no failing test is kept or left out.
    pub fn is_empty(&self) -> bool {
        self.tests.is_empty() && self.left_out == 0
    }

    /// The bytes the store keeps (JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("strings and counts serialize")
    }

    /// Reads kept bytes back; `None` when they are not [`Failures`].
    pub fn from_bytes(bytes: &[u8]) -> Option<Failures> {
        serde_json::from_slice(bytes).ok()
    }
}

impl Redact for Failures {
    fn redact(&mut self, secrets: &Secrets) {
        let Failures { tests, left_out: _ } = self;
        for Failure { test, message } in tests {
            test.redact(secrets);
            message.redact(secrets);
        }
    }
}

/// One manifest component, as stored for `explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    /// The component's tag in the encoding.
    pub tag: u8,
    /// Its name.
    pub name: String,
    /// Its value: null when absent, else a string, number, list or map.
    pub value: serde_json::Value,
}

/// proofgraph's fields of a receipt (`predicate.proofgraph`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// The layout version of these fields.
    pub version: u64,
    /// The change.
    pub change: ChangeName,
    /// The provider that ran.
    pub provider: ProviderId,
    /// The name the receipt is stored under (the provider, or a discovery receiver).
    pub receipt: ProviderId,
    /// The capability vouched for.
    pub capability: CapabilityName,
    /// The claims vouched for.
    pub claims: Vec<String>,
    /// The result: the worst of `claim_outcomes` when there are any.
    pub outcome: Outcome,
    /// Why, in a sentence (always for anything but a pass).
    pub reason: Option<String>,
    /// Per claim, when the adapter judges claims separately (Playwright:
    /// a claim is proven by a passing test annotated with it). Empty when
    /// every claim shares `outcome`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claim_outcomes: BTreeMap<String, ClaimOutcome>,
    /// The provider's `criticalCases`, each with the status the report gave
    /// it (`missing` when no row matched).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub critical_cases: BTreeMap<String, String>,
    /// The adapter.
    pub adapter: String,
    /// Test counts, when a report gave them.
    pub counts: Option<Counts>,
    /// Tests discovered (for discovery).
    pub discovered: Option<u64>,
    /// The discovery floor (for discovery).
    pub minimum: Option<u64>,
    /// `worktree`, `copy` or `none`.
    pub sandbox: SandboxMode,
    /// `namespaces` or `none`.
    pub isolation: RunIsolation,
    /// `private` or `host`.
    pub network: Network,
    /// The run that produced it.
    pub run_id: String,
    /// When the command started (RFC 3339).
    pub started_at: String,
    /// When it finished (RFC 3339).
    pub finished_at: String,
    /// How long it took.
    pub duration_ms: u64,
    /// How the command ended (absent for adapters that run nothing).
    pub exit: Option<Exit>,
    /// Files kept in the store: the command log, the report, attachments.
    pub artifacts: Vec<Artifact>,
    /// The provider's fingerprint (BLAKE3).
    pub fingerprint: Fingerprint,
    /// The provider's binding (SHA-256).
    pub binding: Sha256,
    /// The fingerprint's components.
    pub manifest: Vec<Component>,
    /// The SHA-256 of the input listing blob (`repo:path<TAB>identity` lines).
    pub inputs: Sha256,
    /// How many input files.
    pub input_files: u64,
    /// The size of the input listing blob, in bytes: what a pull reads of it at most.
    /// Absent from receipts made before it was recorded, which are still read (a pull then
    /// reads their listing up to a fixed limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_size: Option<u64>,
    /// Per repository, the git tree of exactly the input files this run bound (kept
    /// under `refs/proofgraph/inputs/`), from which `rerun` rebuilds its sandbox; empty
    /// when none could be recorded (or the receipt predates them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trees: BTreeMap<RepoId, GitId>,
    /// Per repository of `trees`, the commit its work tree had checked out (`HEAD`) when
    /// the tree was recorded: a clone that lacks the tree rebuilds it from that commit
    /// when the run bound only what the commit holds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub commits: BTreeMap<RepoId, GitId>,
    /// The programs from outside the run's own directories that the job's processes
    /// executed (every `execve`, a script's interpreters and a program's loader
    /// included), each with the BLAKE3 of what ran; `None` when the run could not record
    /// them (no namespaces). Reuse requires every one unchanged. An execution that could
    /// not be read is listed with an empty digest, which nothing matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed: Option<Vec<ExecutedProgram>>,
    /// Where the command ran, when not on the machine that signed the receipt: `remote`,
    /// a Remote Execution API engine (absent: here, and in every receipt made before
    /// remote execution). A remote result is as trustworthy as the engine and its
    /// workers: what the worker executed is not bound by the fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<RanBy>,
    /// The engine's address (without credentials), when `executor` is `remote`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The worker that ran it, as the engine's `ExecutedActionMetadata` names it, when
    /// `executor` is `remote`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

/// What ran a receipt's command, when not this machine's sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RanBy {
    /// A Remote Execution API engine's worker.
    Remote,
}

impl RanBy {
    /// The name a receipt records.
    pub fn as_str(self) -> &'static str {
        match self {
            RanBy::Remote => "remote",
        }
    }
}

/// A program a job executed, as its receipt binds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExecutedProgram {
    /// Where it was (absolute, links resolved).
    pub path: String,
    /// BLAKE3 of its content when it ran, hex; empty when it could not be read.
    pub digest: String,
}

/// The per-test outcomes a receipt's statement lists (`passedTests`, `warnedTests`,
/// `failedTests`), read from envelope bytes whose signature the caller verified.
pub fn tests_of(bytes: &[u8]) -> TestNames {
    let statement = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|e| {
            e["payload"]
                .as_str()
                .and_then(|p| crate::attest::b64::decode(p).ok())
        })
        .and_then(|p| serde_json::from_slice::<serde_json::Value>(&p).ok())
        .unwrap_or_default();
    let list = |key: &str| -> Vec<String> {
        statement["predicate"][key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    TestNames {
        passed: list("passedTests"),
        warned: list("warnedTests"),
        failed: list("failedTests"),
    }
}

/// The input trees a stored receipt names (`tree id`s), read without checking its
/// signature: for deciding what to keep (keeping more than needed is safe), never for
/// deciding what is proven.
pub fn named_trees(store: &Store, sha: &Sha256) -> Vec<String> {
    let Some(bytes) = store.get(sha) else {
        return Vec::new();
    };
    let Ok(envelope) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    let Some(payload) = envelope["payload"]
        .as_str()
        .and_then(|p| crate::attest::b64::decode(p).ok())
    else {
        return Vec::new();
    };
    let Ok(statement) = serde_json::from_slice::<serde_json::Value>(&payload) else {
        return Vec::new();
    };
    statement["predicate"]["proofgraph"]["trees"]
        .as_object()
        .map(|trees| {
            trees
                .values()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl Proof {
    /// A well-formed pass of provider `test` in change `c`, for tests to adjust.
    #[cfg(test)]
    pub(crate) fn sample() -> Proof {
        let id = |s: &str| ProviderId::parse(s).expect("a provider id");
        Proof {
            claim_outcomes: BTreeMap::new(),
            critical_cases: BTreeMap::new(),
            version: RECEIPT_VERSION,
            change: ChangeName::parse("c").expect("a change name"),
            provider: id("test"),
            receipt: id("test"),
            capability: CapabilityName::parse("test").expect("a capability"),
            claims: vec!["a".into()],
            outcome: Outcome::Pass,
            reason: None,
            adapter: "test-discovery".into(),
            counts: Some(Counts {
                total: 3,
                passed: 3,
                ..Counts::default()
            }),
            discovered: Some(3),
            minimum: Some(1),
            sandbox: SandboxMode::Worktree,
            isolation: RunIsolation::Namespaces,
            network: Network::Private,
            run_id: "r".into(),
            started_at: rfc3339(std::time::Duration::from_secs(0)),
            finished_at: rfc3339(std::time::Duration::from_millis(1_500)),
            duration_ms: 1500,
            exit: Some(Exit {
                code: Some(0),
                signal: None,
                timed_out: false,
            }),
            artifacts: Vec::new(),
            fingerprint: Fingerprint::from_hex(&"a".repeat(64)).expect("hex"),
            binding: Sha256::parse(&"b".repeat(64)).expect("hex"),
            manifest: Vec::new(),
            inputs: Sha256::parse(&"c".repeat(64)).expect("hex"),
            input_files: 2,
            inputs_size: None,
            trees: std::collections::BTreeMap::new(),
            commits: std::collections::BTreeMap::new(),
            executed: None,
            executor: None,
            engine: None,
            worker: None,
        }
    }
}

/// Whether a run's jobs ran in their own namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunIsolation {
    /// Private network, PIDs, mounts and `/tmp`.
    Namespaces,
    /// Contained by process groups only (or nothing ran).
    None,
}

impl RunIsolation {
    /// The isolation a sandbox run reported.
    pub fn of(isolation: Option<&proofgraph_sandbox::Isolation>) -> Self {
        match isolation {
            Some(proofgraph_sandbox::Isolation::Namespaces { .. }) => RunIsolation::Namespaces,
            _ => RunIsolation::None,
        }
    }

    /// The name a receipt records.
    pub fn as_str(self) -> &'static str {
        match self {
            RunIsolation::Namespaces => "namespaces",
            RunIsolation::None => "none",
        }
    }
}

/// One claim's outcome within a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimOutcome {
    /// The result for this claim.
    pub outcome: Outcome,
    /// Why, when it did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Tests named in the report, by result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TestNames {
    /// Passed tests.
    pub passed: Vec<String>,
    /// Skipped or otherwise inconclusive tests.
    pub warned: Vec<String>,
    /// Failed tests.
    pub failed: Vec<String>,
}

impl Redact for ClaimOutcome {
    fn redact(&mut self, secrets: &Secrets) {
        self.reason.redact(secrets);
    }
}

impl Redact for TestNames {
    fn redact(&mut self, secrets: &Secrets) {
        let TestNames {
            passed,
            warned,
            failed,
        } = self;
        passed.redact(secrets);
        warned.redact(secrets);
        failed.redact(secrets);
    }
}

/// Builds the statement for a receipt.
pub fn statement(proof: &Proof, tests: &TestNames) -> Result<Statement, statement::StatementError> {
    let subject = Subject::new(
        format!(
            "proofgraph:{}/{}@{}",
            proof.change, proof.receipt, proof.capability
        ),
        DigestSet::sha256(proof.binding.to_hex()).with_blake3(proof.fingerprint.to_string()),
    );
    let predicate = serde_json::json!({
        "result": proof.outcome.test_result(),
        "configuration": [{
            "name": format!("proofgraph:{}/{}", proof.change, proof.provider),
            "digest": {"sha256": proof.binding},
        }],
        "passedTests": tests.passed,
        "warnedTests": tests.warned,
        "failedTests": tests.failed,
        "proofgraph": proof,
    });
    Statement::new(vec![subject], PREDICATE_TYPE, predicate)
}

/// Signs a receipt and stores it; returns the envelope's SHA-256 and the proof, now shared
/// with the store's memory of verified receipts. Nothing is signed that holds one of
/// `secrets`: every string of the proof and of the test names goes through them first.
pub fn write(
    store: &Store,
    key: &ed25519_dalek::SigningKey,
    proof: Proof,
    tests: &TestNames,
    secrets: &Secrets,
) -> Result<(Sha256, std::sync::Arc<Proof>), ReceiptError> {
    let (proof, tests) = redacted(proof, tests, secrets)?;
    let statement = statement(&proof, &tests)?;
    let keyid = crate::attest::keys::key_id(&key.verifying_key());
    let envelope = statement::sign_statement(&statement, key, Some(&keyid))?;
    // A freshly signed envelope (its own time stamps and run id) is never in the store yet.
    let digest = store.put_new(envelope.to_json().as_bytes())?;
    let proof = std::sync::Arc::new(proof);
    remember_verified(&digest, std::sync::Arc::clone(&proof), keyid);
    Ok((digest, proof))
}

/// The proof and test names as a receipt may carry them: the proof's every string (and
/// key) as a JSON value, so that no field, present or future, is left out.
fn redacted(
    proof: Proof,
    tests: &TestNames,
    secrets: &Secrets,
) -> Result<(Proof, TestNames), ReceiptError> {
    if secrets.is_empty() {
        return Ok((proof, tests.clone()));
    }
    let unredactable = |e: serde_json::Error| ReceiptError::Unredactable(e.to_string());
    let mut value = serde_json::to_value(&proof).map_err(unredactable)?;
    value.redact(secrets);
    let proof: Proof = serde_json::from_value(value).map_err(unredactable)?;
    Ok((proof, secrets.redact(tests.clone()).into_inner()))
}

/// A receipt could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    /// A field that holds a secret is not free text (an outcome, a number), so the
    /// receipt cannot be written without it.
    #[error("keep a secret out of the receipt: a field that holds one cannot be redacted ({0})")]
    Unredactable(String),
    /// The statement could not be built or signed.
    #[error(transparent)]
    Statement(#[from] statement::StatementError),
    /// The store could not be written.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// A receipt read back and verified.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The envelope's SHA-256.
    pub sha256: Sha256,
    /// proofgraph's fields (shared with the store's memory of verified receipts).
    pub proof: std::sync::Arc<Proof>,
    /// The id of the key that signed it.
    pub keyid: String,
}

/// Reads a receipt from the store and verifies it: intact blob, a signature
/// by a trusted key, our predicate type, and a subject that names the same
/// binding and fingerprint as the predicate. Anything else is `None`: a
/// receipt that does not verify is ignored, never trusted.
pub fn read(store: &Store, sha256: &Sha256, trusted: &[TrustedKey]) -> Option<Verified> {
    check(store, sha256, trusted).ok()
}

/// Why a receipt in the store does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unverified {
    /// The blob is absent, or its bytes do not match its name.
    Missing,
    /// No key this workspace trusts signed it. `named` are the key ids its
    /// signatures name: unauthenticated hints, good for a message, never for trust.
    Untrusted {
        /// The key ids the envelope's signatures name.
        named: Vec<String>,
    },
    /// Signed by a trusted key, but not a receipt of this proofgraph.
    Invalid(String),
}

impl Unverified {
    /// Why, as a fragment for a reason (`the receipt for this fingerprint …`).
    pub fn reason(&self) -> String {
        match self {
            Unverified::Missing => "is missing from the store or corrupt".to_owned(),
            Unverified::Untrusted { named } if named.is_empty() => {
                "is not signed by a key this workspace trusts (it names no key)".to_owned()
            }
            Unverified::Untrusted { named } => format!(
                "is not signed by a key this workspace trusts (it names {})",
                named
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Unverified::Invalid(why) => format!("is not a proofgraph receipt: {why}"),
        }
    }
}

/// A verified receipt's proof and the id of the key that signed it.
type VerifiedProof = (std::sync::Arc<Proof>, String);

/// Receipts already verified in this process, by envelope digest: the proof and the id of
/// the key that signed it. A digest names exactly one sequence of bytes, in any store, so
/// a verification holds for as long as its key is trusted — which [`check`] asks again on
/// every hit. Kept for the life of the process (commands are short-lived; `watch` reads
/// no receipt).
static VERIFIED: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<Sha256, VerifiedProof>>,
> = std::sync::LazyLock::new(std::sync::Mutex::default);

/// A receipt this process already verified: its proof and signer.
fn verified(sha256: &Sha256) -> Option<VerifiedProof> {
    VERIFIED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(sha256)
        .cloned()
}

/// Remembers a verified receipt for the rest of the process.
fn remember_verified(sha256: &Sha256, proof: std::sync::Arc<Proof>, keyid: String) {
    VERIFIED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(*sha256, (proof, keyid));
}

/// [`read`], saying why a receipt does not count.
pub fn check(
    store: &Store,
    sha256: &Sha256,
    trusted: &[TrustedKey],
) -> Result<Verified, Unverified> {
    // Verified once per process: the blob cannot change under its digest,
    // so what remains to check is that its signer is still trusted here.
    if let Some((proof, keyid)) = verified(sha256) {
        return if trusted.iter().any(|k| k.keyid() == keyid) {
            Ok(Verified {
                sha256: *sha256,
                proof,
                keyid,
            })
        } else {
            Err(Unverified::Untrusted { named: vec![keyid] })
        };
    }
    let bytes = store.get(sha256).ok_or(Unverified::Missing)?;
    let (proof, keyid) = verify_bytes(&bytes, trusted).map_err(|rejected| match rejected {
        Rejected::Signature(_) => Unverified::Untrusted {
            named: named_keys(&bytes),
        },
        Rejected::NotAReceipt(why) => Unverified::Invalid(why),
    })?;
    let proof = std::sync::Arc::new(proof);
    remember_verified(sha256, std::sync::Arc::clone(&proof), keyid.clone());
    Ok(Verified {
        sha256: *sha256,
        proof,
        keyid,
    })
}

/// The key ids an envelope's signatures name (unauthenticated), for messages.
pub fn named_keys(bytes: &[u8]) -> Vec<String> {
    serde_json::from_slice::<crate::attest::Envelope>(bytes)
        .map(|e| {
            e.signatures
                .into_iter()
                .filter_map(|s| s.keyid)
                // A hint is shown, so only one that looks like a key id.
                .filter(|k| crate::proof::trust::KeyId::parse(k).is_ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Why receipt bytes were not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// No trusted key's signature verifies (or it is not a DSSE envelope).
    Signature(String),
    /// Signed, but not a receipt of this proofgraph.
    NotAReceipt(String),
}

/// Verifies receipt bytes: a DSSE envelope signed by a trusted key over an
/// in-toto statement with our predicate type, whose subject names the
/// receipt's own binding and fingerprint.
pub fn verify_bytes(bytes: &[u8], trusted: &[TrustedKey]) -> Result<(Proof, String), Rejected> {
    let verified = statement::verify_statement(bytes, trusted)
        .map_err(|e| Rejected::Signature(e.to_string()))?;
    let statement = verified.statement;
    if statement.predicate_type() != PREDICATE_TYPE {
        return Err(Rejected::NotAReceipt(format!(
            "the predicate type is `{}`, not `{PREDICATE_TYPE}`",
            statement.predicate_type()
        )));
    }
    let fields = statement.predicate().get("proofgraph").ok_or_else(|| {
        Rejected::NotAReceipt("the predicate has no `proofgraph` fields".to_owned())
    })?;
    let proof: Proof = serde_json::from_value(fields.clone())
        .map_err(|e| Rejected::NotAReceipt(format!("its `proofgraph` fields do not read: {e}")))?;
    if proof.version != RECEIPT_VERSION {
        return Err(Rejected::NotAReceipt(format!(
            "receipt version {} is not {RECEIPT_VERSION}",
            proof.version
        )));
    }
    let subject = statement
        .subject()
        .first()
        .ok_or_else(|| Rejected::NotAReceipt("the statement has no subject".to_owned()))?;
    if subject.digest.sha256 != proof.binding.to_hex()
        || subject.digest.blake3 != Some(proof.fingerprint.to_string())
    {
        return Err(Rejected::NotAReceipt(
            "the subject does not name the receipt's binding and fingerprint".to_owned(),
        ));
    }
    Ok((proof, verified.keyid))
}

/// The current time in RFC 3339, UTC, to the millisecond.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now)
}

/// Formats a duration since the Unix epoch as RFC 3339 UTC, to the millisecond
/// (`2026-11-30T04:05:23.042Z`). Past jiff's range (year 9999) it says the last instant it
/// can, never a wrong date.
pub fn rfc3339(since_epoch: std::time::Duration) -> String {
    let millis = i32::try_from(since_epoch.subsec_millis()).unwrap_or(0);
    let instant = i64::try_from(since_epoch.as_secs())
        .ok()
        .and_then(|secs| jiff::Timestamp::new(secs, millis * 1_000_000).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    instant.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A manifest's components as stored in receipts.
pub fn components(manifest: &Manifest) -> Vec<Component> {
    manifest
        .components
        .iter()
        .map(|(tag, name, value)| Component {
            tag: *tag,
            name: (*name).to_owned(),
            value: value_json(value),
        })
        .collect()
}

fn value_json(value: &FpValue) -> serde_json::Value {
    match value {
        FpValue::Absent => serde_json::Value::Null,
        FpValue::Text(s) => serde_json::Value::from(s.as_str()),
        FpValue::Number(n) => serde_json::Value::from(*n),
        FpValue::List(items) => serde_json::Value::from(items.clone()),
        FpValue::Map(entries) => serde_json::Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proof() -> Proof {
        Proof::sample()
    }

    #[test]
    fn receipts_round_trip_only_with_a_trusted_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let key = crate::attest::keys::generate_signing_key().expect("key");
        let (digest, written) = write(
            &store,
            &key,
            proof(),
            &TestNames::default(),
            &Secrets::none(),
        )
        .expect("write");
        assert_eq!(*written, proof());
        let trusted = [TrustedKey::new(key.verifying_key())];
        let read_back = read(&store, &digest, &trusted).expect("verifies");
        assert_eq!(*read_back.proof, proof());
        let stranger = crate::attest::keys::generate_signing_key().expect("key");
        let keyid = crate::attest::keys::key_id(&key.verifying_key());
        // Remembered as verified in this process, or read afresh by another: a key
        // that is not trusted never verifies it, and the reason names the signer.
        for store in [store.clone(), Store::open(dir.path()).expect("store")] {
            assert_eq!(
                check(
                    &store,
                    &digest,
                    &[TrustedKey::new(stranger.verifying_key())]
                )
                .err(),
                Some(Unverified::Untrusted {
                    named: vec![keyid.clone()]
                })
            );
        }
        assert_eq!(
            check(&store, &Sha256::of(b"nothing stored"), &trusted).err(),
            Some(Unverified::Missing)
        );
    }

    #[test]
    fn nothing_is_signed_with_a_secret_in_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let key = crate::attest::keys::generate_signing_key().expect("key");
        let secrets = Secrets::new([b"hunter2\"-value".to_vec()]);
        let mut claims = BTreeMap::new();
        claims.insert(
            "a".to_owned(),
            ClaimOutcome {
                outcome: Outcome::Fail,
                reason: Some("saw hunter2\"-value".to_owned()),
            },
        );
        let leaky = Proof {
            outcome: Outcome::Fail,
            reason: Some("failing: t hunter2\"-value".to_owned()),
            claim_outcomes: claims,
            artifacts: vec![Artifact {
                kind: ArtifactKind::PlaywrightAttachment,
                path: None,
                sha256: Sha256::of(b"shot"),
                size: 4,
                name: Some("shot hunter2\"-value".to_owned()),
                content_type: None,
                whole: None,
            }],
            ..proof()
        };
        let tests = TestNames {
            failed: vec!["t hunter2\"-value".to_owned()],
            ..TestNames::default()
        };
        let (digest, written) =
            write(&store, &key, leaky, &tests, &secrets).expect("written, redacted");
        assert_eq!(written.reason.as_deref(), Some("failing: t [redacted]"));
        let envelope = store.get(&digest).expect("stored");
        let envelope: serde_json::Value = serde_json::from_slice(&envelope).expect("json");
        let payload = crate::attest::b64::decode(envelope["payload"].as_str().expect("payload"))
            .expect("base64");
        let text = String::from_utf8(payload).expect("utf-8");
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(text.matches("[redacted]").count(), 4, "{text}");
        // A secret that is not free text (here an outcome's name) cannot be written out:
        // no receipt rather than one that holds it.
        let outcome = Secrets::new([b"inconclusive".to_vec()]);
        let inconclusive = Proof {
            outcome: Outcome::Inconclusive,
            ..proof()
        };
        assert!(matches!(
            write(&store, &key, inconclusive, &TestNames::default(), &outcome),
            Err(ReceiptError::Unredactable(_))
        ));
    }

    #[test]
    fn artifact_kinds_are_named_as_receipts_have_always_named_them() {
        for kind in ArtifactKind::ALL {
            assert_eq!(
                serde_json::to_value(kind).expect("serializes"),
                serde_json::Value::from(kind.as_str())
            );
        }
        assert_eq!(
            ArtifactKind::ALL.map(ArtifactKind::as_str),
            [
                "command-log",
                "structured-report",
                "playwright-attachment",
                "contract-artifact",
                "external-evidence",
                "test-failures"
            ]
        );
    }

    #[test]
    fn typed_fields_are_written_as_the_strings_receipts_always_held() {
        let value = serde_json::to_value(proof()).expect("serializes");
        for (field, text) in [
            ("change", "c"),
            ("provider", "test"),
            ("receipt", "test"),
            ("capability", "test"),
            ("sandbox", "worktree"),
            ("isolation", "namespaces"),
            ("network", "private"),
        ] {
            assert_eq!(value[field], serde_json::Value::from(text), "{field}");
        }
        assert_eq!(
            value["fingerprint"],
            serde_json::Value::from("a".repeat(64))
        );
        assert_eq!(value["binding"], serde_json::Value::from("b".repeat(64)));
        assert_eq!(value["inputs"], serde_json::Value::from("c".repeat(64)));
        let back: Proof = serde_json::from_value(value).expect("reads back");
        assert_eq!(back, proof());
    }

    #[test]
    fn signed_fields_that_break_a_grammar_are_not_a_receipt() {
        let key = crate::attest::keys::generate_signing_key().expect("key");
        let trusted = [TrustedKey::new(key.verifying_key())];
        let good = statement(&proof(), &TestNames::default())
            .expect("statement")
            .to_value();
        for (field, bad) in [
            ("provider", serde_json::json!("Not An Id")),
            ("change", serde_json::json!("../elsewhere")),
            ("capability", serde_json::json!("")),
            ("fingerprint", serde_json::json!("a".repeat(63))),
            ("inputs", serde_json::json!("C".repeat(64))),
            ("sandbox", serde_json::json!("chroot")),
            ("isolation", serde_json::json!("vm")),
            ("network", serde_json::json!("public")),
            ("trees", serde_json::json!({"root": "a".repeat(39)})),
            ("trees", serde_json::json!({"root": "A".repeat(40)})),
            ("trees", serde_json::json!({"Not A Repo": "a".repeat(40)})),
            ("commits", serde_json::json!({"root": "HEAD"})),
            ("commits", serde_json::json!({"root": "a".repeat(41)})),
        ] {
            let mut forged = good.clone();
            forged["predicate"]["proofgraph"][field] = bad;
            let forged =
                Statement::parse(forged.to_string().as_bytes()).expect("still a statement");
            let envelope = statement::sign_statement(&forged, &key, None).expect("signed");
            match verify_bytes(envelope.to_json().as_bytes(), &trusted) {
                Err(Rejected::NotAReceipt(why)) => {
                    assert!(why.contains("do not read"), "{field}: {why}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn recorded_trees_and_commits_read_as_they_were_written() {
        let tree = "0123456789abcdef0123456789abcdef01234567";
        let commit = "ab".repeat(32);
        let mut value = serde_json::to_value(proof()).expect("serializes");
        value["trees"] = serde_json::json!({"root": tree, "web": tree});
        value["commits"] = serde_json::json!({"root": commit});
        let read: Proof = serde_json::from_value(value.clone()).expect("reads");
        let root = RepoId::root();
        assert_eq!(read.trees.get(&root).map(GitId::as_str), Some(tree));
        assert_eq!(
            read.commits.get(&root).map(GitId::as_str),
            Some(commit.as_str())
        );
        assert_eq!(serde_json::to_value(&read).expect("serializes"), value);
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(
            rfc3339(std::time::Duration::from_secs(0)),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(std::time::Duration::from_millis(1_796_011_523_042)),
            "2026-11-30T04:05:23.042Z"
        );
        assert_eq!(
            rfc3339(std::time::Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339(std::time::Duration::from_millis(4_102_444_799_999)),
            "2099-12-31T23:59:59.999Z"
        );
        // Beyond year 9999 (jiff's range): the last instant it can say, not a wrong date.
        assert_eq!(
            rfc3339(std::time::Duration::from_secs(u64::MAX)),
            "9999-12-30T22:00:00.999Z",
        );
    }
}
