//! The diagnostic envelope and the catalog of stable codes.
//!
//! Every finding proofgraph reports, in every command, is a [`Diagnostic`]:
//! `{severity, code, message, target?, fix?}`. Codes are a closed enum so that a
//! new code cannot be emitted without entering the catalog, and the catalog is
//! what `docs/diagnostics.md` is checked against.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::syntax::node::Pos;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The input cannot be used as it is.
    Error,
    /// The input is usable but probably not what was meant.
    Warning,
    /// Worth knowing; nothing to fix.
    Info,
}

impl Severity {
    /// The lowercase name used in the envelope.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)+) => {
        /// A stable diagnostic code. The string form never changes once released.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)+
        }

        impl Code {
            /// Every code, in catalog order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)+];

            /// The `snake_case` form used in output and documentation.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)+
                }
            }
        }
    };
}

codes! {
    // Root resolution, shared with the `openspec` CLI.
    /// No OpenSpec root in the current directory or its ancestors.
    NoOpenspecRoot = "no_openspec_root",
    /// No local root, but stores are registered: one must be chosen.
    NoRootWithRegisteredStores = "no_root_with_registered_stores",
    /// `--store` names a store while none is registered.
    NoRegisteredStores = "no_registered_stores",
    /// `--store` (or a pointer) names a store that is not registered.
    UnknownStore = "unknown_store",
    /// A registered store's identity file is missing or names another id.
    StoreIdentityMismatch = "store_identity_mismatch",
    /// A registered store's directory is not a healthy OpenSpec root.
    UnhealthyStoreRoot = "unhealthy_store_root",
    /// `openspec/config.yaml`'s `store:` pointer is unreadable or not a string.
    InvalidStorePointer = "invalid_store_pointer",
    /// A store id does not follow the kebab-case grammar.
    InvalidStoreId = "invalid_store_id",
    /// The store registry file cannot be read as a registry.
    InvalidStoreRegistry = "invalid_store_registry",
    /// A store's `.openspec-store/store.yaml` cannot be read as metadata.
    InvalidStoreMetadata = "invalid_store_metadata",
    // OpenSpec root health, shared with `openspec doctor`.
    /// The store root directory does not exist.
    OpenspecStoreRootMissing = "openspec_store_root_missing",
    /// The store root is not a directory.
    OpenspecStoreRootNotDirectory = "openspec_store_root_not_directory",
    /// The root has no `openspec/` directory.
    OpenspecRootMissing = "openspec_root_missing",
    /// `openspec/` is not a directory.
    OpenspecRootNotDirectory = "openspec_root_not_directory",
    /// The root has no `openspec/config.yaml`.
    OpenspecConfigMissing = "openspec_config_missing",
    /// `openspec/config.yaml` exists but is not a file.
    OpenspecConfigNotFile = "openspec_config_not_file",
    /// `openspec/specs` exists but is not a directory.
    OpenspecSpecsNotDirectory = "openspec_specs_not_directory",
    /// `openspec/changes` exists but is not a directory.
    OpenspecChangesNotDirectory = "openspec_changes_not_directory",
    /// `openspec/changes/archive` exists but is not a directory.
    OpenspecArchiveNotDirectory = "openspec_archive_not_directory",
    /// A real root also declares a `store:` pointer, which is ignored.
    RootPointerIgnored = "root_pointer_ignored",
    /// A real root declares a `store:` pointer that cannot be used.
    RootPointerInvalid = "root_pointer_invalid",
    // Command line.
    /// The command line could not be parsed.
    UsageError = "usage_error",
    /// The named change does not exist under `openspec/changes/`.
    UnknownChange = "unknown_change",
    /// The named provider is not in the change.
    UnknownProvider = "unknown_provider",
    /// `plan --base/--head` names a revision a repository of the workspace does not have,
    /// or whose objects cannot be read.
    UnknownRevision = "unknown_revision",
    /// `plan --base/--head` gives no revision for a repository: a git repository of its own
    /// that the OpenSpec root's repository does not record, or the root's own.
    RevisionMissing = "revision_missing",
    /// The inputs a receipt bound could not be written as a git tree (for `rerun`).
    InputsNotRecorded = "inputs_not_recorded",
    /// `rerun` cannot have the inputs or the wiring a receipt recorded.
    InputsNotRebuildable = "inputs_not_rebuildable",
    /// A file of a repository has a name that is not UTF-8: it cannot be bound as an input.
    InputNameNotUtf8 = "input_name_not_utf8",
    /// A reused pass was made where the programs its job executed could not be recorded.
    ExecutionsNotRecorded = "executions_not_recorded",
    /// `log` finds no kept log: no receipt yet, an adapter that runs no command, a blob gone.
    NoLog = "no_log",
    /// The change name is not a single directory name.
    InvalidChangeName = "invalid_change_name",
    /// The command was interrupted (SIGINT or SIGTERM).
    Interrupted = "interrupted",
    /// proofgraph itself failed; this is a bug.
    InternalError = "internal_error",
    // Reading files.
    /// A file could not be read.
    FileUnreadable = "file_unreadable",
    /// A configuration file is larger than proofgraph reads.
    FileTooLarge = "file_too_large",
    /// A configuration file is not UTF-8 text.
    InvalidUtf8 = "invalid_utf8",
    /// A configuration file is not valid JSON or YAML.
    SyntaxError = "syntax_error",
    /// A configuration file nests deeper than proofgraph reads.
    NestingTooDeep = "nesting_too_deep",
    /// A mapping repeats a key.
    DuplicateKey = "duplicate_key",
    /// A YAML stream holds more than one document.
    MultipleDocuments = "multiple_documents",
    /// A YAML feature proofgraph does not read (aliases, tags, complex keys).
    UnsupportedYaml = "unsupported_yaml",
    // Configuration schema.
    /// A field has the wrong type.
    WrongType = "wrong_type",
    /// A required field is absent.
    MissingField = "missing_field",
    /// A key proofgraph does not know; it is ignored.
    UnknownKey = "unknown_key",
    /// The file's `version` is not one proofgraph reads.
    UnsupportedVersion = "unsupported_version",
    /// A provider names an adapter that does not exist.
    UnknownAdapter = "unknown_adapter",
    /// A claim, provider, service or repository id breaks its grammar.
    InvalidId = "invalid_id",
    /// Two claims share an id.
    DuplicateId = "duplicate_id",
    /// A field's value is outside what it accepts.
    InvalidValue = "invalid_value",
    /// A capability outside the 21 known names; accepted for custom capabilities.
    UnknownCapability = "unknown_capability",
    /// `reportFormat` names no known report format.
    UnknownReportFormat = "unknown_report_format",
    /// `command` is a shell string instead of an argv list.
    CommandNotArgv = "command_not_argv",
    /// A string holds a NUL byte, which no argument, environment value or path can carry.
    NulInValue = "nul_in_value",
    /// `evidence.yaml` declares no claims.
    NoClaims = "no_claims",
    /// `evidence.yaml` still embeds `providers`; they belong in `execution.yaml`.
    EmbeddedProviders = "embedded_providers",
    /// A provider sets a field its adapter does not read.
    AdapterFieldIgnored = "adapter_field_ignored",
    /// `criticalCases` on a provider whose adapter has no report to observe them in.
    CriticalCasesUnobservable = "critical_cases_unobservable",
    /// An `external` provider has no `ci.publicKey`, so nothing can satisfy it.
    ExternalWithoutKey = "external_without_key",
    /// A provider is declared in both `evidence.yaml` and `execution.yaml`.
    ProviderShadowed = "provider_shadowed",
    /// A change has no `evidence.yaml`, so it has nothing to prove.
    MissingEvidence = "missing_evidence",
    /// A claim requires a capability that no provider proves.
    UnwiredCapability = "unwired_capability",
    /// A `trustedKeys` entry of `proofgraph.yaml` is not a usable Ed25519 public key.
    TrustedKeyInvalid = "trusted_key_invalid",
    /// `trustedKeys` lists more keys than a pull looks a receipt up under in the remote
    /// cache: the keys past the limit are trusted, but their receipts are never pulled.
    TrustedKeysTooMany = "trusted_keys_too_many",
    /// A catalog repository's `path` is not a directory.
    RepositoryPathMissing = "repository_path_missing",
    /// A catalog repository's `path` is absolute, so the catalog is not relocatable.
    RepositoryPathAbsolute = "repository_path_absolute",
    /// A cached `setup` installs the project itself, which a cached setup never sees.
    SetupInstallsProject = "setup_installs_project",
    /// A declared cache (or a kept build directory) whose tool judges freshness by
    /// modification times, so a warm cache can call a changed test up to date.
    CacheJudgedByMtime = "cache_judged_by_mtime",
    /// `caches` names something that is not a cache known to be keyed by content.
    CacheKindUnknown = "cache_kind_unknown",
    /// A provider's `env` sets the variable a declared cache of its repository sets.
    CacheEnvConflict = "cache_env_conflict",
    /// A `hostPaths` entry is not an absolute path or one below `~`.
    HostPathInvalid = "host_path_invalid",
    /// A repository of the workspace is not inside a git work tree.
    NotAGitRepository = "not_a_git_repository",
    /// `watch` cannot run: inotify is unusable, or another watcher answers.
    WatchUnavailable = "watch_unavailable",
    /// `worker` cannot serve: the engine's address or an option is not usable, or its work
    /// directory cannot be made.
    WorkerUnusable = "worker_unusable",
    /// An `inputs` entry `!pattern` keeps no file out: it matches nothing the entries before
    /// it select, or a later entry adds that back.
    InputExcludesNothing = "input_excludes_nothing",
    /// A provider's program is not on PATH.
    ExecutableNotFound = "executable_not_found",
    /// A sandbox could not be materialised.
    SandboxFailed = "sandbox_failed",
    /// Inputs changed between the snapshot that was fingerprinted and the sandbox (or,
    /// running in place, before the provider was judged).
    InputsChanged = "inputs_changed",
    /// The run could not be isolated with namespaces (fallback), or its init failed.
    IsolationUnavailable = "isolation_unavailable",
    /// Without isolation, a service's readiness URL already answered before it started.
    ReadinessPortInUse = "readiness_port_in_use",
    /// The store under `.proofgraph/` cannot be opened or written.
    StoreUnusable = "store_unusable",
    /// No key the workspace trusts signed a receipt (`receipt verify`).
    ReceiptUntrusted = "receipt_untrusted",
    /// The workspace's signing key can be read by other users.
    SigningKeyExposed = "signing_key_exposed",
    // The trust anchor: the store's key against its pin.
    /// A key file of the store is not the key pinned for it (both ids named).
    WorkspaceKeyMismatch = "workspace_key_mismatch",
    /// Nothing vouches for the store's key: no pin for this store, not in `trustedKeys`.
    WorkspaceKeyUnpinned = "workspace_key_unpinned",
    /// The store had no key: a new one was made and pinned in place of the pinned one.
    WorkspaceKeyReplaced = "workspace_key_replaced",
    /// The pin of the store's key could not be written in the user's config directory.
    WorkspacePinUnwritable = "workspace_pin_unwritable",
    /// `key pin`: the store has no key to pin.
    WorkspaceKeyMissing = "workspace_key_missing",
    /// The remote cache could not be reached, timed out or said it is unavailable; the
    /// run went on with the local store.
    RemoteCacheUnavailable = "remote_cache_unavailable",
    /// The proxy the remote cache is reached through could not be reached or opened no
    /// way to it; the run went on with the local store.
    RemoteProxyUnavailable = "remote_proxy_unavailable",
    /// A proxy variable (`HTTPS_PROXY`, `http_proxy`, `ALL_PROXY`) names no proxy this
    /// client can use; the remote cache is not used.
    RemoteProxyInvalid = "remote_proxy_invalid",
    /// The remote cache refused the request (credentials missing or not accepted).
    RemoteCacheRefused = "remote_cache_refused",
    /// The remote cache cannot serve this client (no SHA-256, a broken answer).
    RemoteCacheUnsupported = "remote_cache_unsupported",
    /// The remote cache served a blob or an entry that is not what was asked for.
    RemoteCacheCorrupt = "remote_cache_corrupt",
    /// A receipt in the remote cache is not trusted here, or binds another fingerprint.
    RemoteReceiptUntrusted = "remote_receipt_untrusted",
    /// Receipts could not be uploaded to the remote cache.
    RemoteUploadFailed = "remote_upload_failed",
    /// The remote cache takes no action-cache updates (`update_enabled: false`): pushes
    /// are off for the run.
    RemoteCacheReadOnly = "remote_cache_read_only",
    /// `cache.remote` names a gRPC instance with a dot segment (`.`, `..`, `%2e`), which
    /// a URL resolves away.
    RemoteInstanceDotSegment = "remote_instance_dot_segment",
    // Remote execution (`prove --executor`, `plan --executor`).
    /// `--executor remote|auto` while `proofgraph.yaml` configures no `executor`.
    ExecutorNotConfigured = "executor_not_configured",
    /// `prove --executor remote|auto`: the engine cannot be used (unreachable, no
    /// execution, no SHA-256) before the run: an error under `remote`, a warning under
    /// `auto` (everything runs here).
    RemoteExecutorUnreachable = "remote_executor_unreachable",
    // Signed external results (`evidence verify-ci`).
    /// `evidence verify-ci` names a provider that is not `external` with a `ci` block.
    NotExternal = "not_external",
    /// An `external` provider's `ci.publicKey` is not a usable Ed25519 public key.
    CiKeyInvalid = "ci_key_invalid",
    /// The envelope file cannot be read or is too large.
    EnvelopeUnreadable = "envelope_unreadable",
    /// The envelope is not a DSSE envelope whose signature verifies under `ci.publicKey`.
    EnvelopeRejected = "envelope_rejected",
    /// The signed payload is not the in-toto test-result statement the provider expects.
    StatementInvalid = "statement_invalid",
    /// The signed binding is not the provider's current binding.
    EnvelopeStale = "envelope_stale",
    /// The signed result is not PASSED, or lists failed tests.
    ExternalResultNotPassed = "external_result_not_passed",
    // Wiring bootstrap (`evidence detect|init|doctor`).
    /// A repository manifest could not be read; detection skipped it.
    ManifestUnreadable = "manifest_unreadable",
    /// `evidence init` could not edit `execution.yaml` without changing what is there.
    InitRefused = "init_refused",
    /// A command runs a workspace file that the provider's `inputs` do not cover.
    CommandFileNotInInputs = "command_file_not_in_inputs",
    /// A test runner looks for files the provider's narrowed `inputs` leave out.
    RunnerFilesNotInInputs = "runner_files_not_in_inputs",
    /// A provider runs `go test` with go's test cache on (no `-count=1`): a replay is never a pass.
    GoTestReplays = "go_test_replays",
    /// A command runs a file git does not track, so sandboxes will not have it.
    CommandFileUntracked = "command_file_untracked",
    /// A provider's report is written inside the files it hashes.
    ReportInsideInputs = "report_inside_inputs",
    /// A provider that runs a command reads its repository's documentation: a docs edit
    /// reruns it (a note; the fix names the `!` entries that leave it out).
    DocsInInputs = "docs_in_inputs",
    /// A test provider not named `test` sends its discovery receipt nowhere.
    MissingDiscoveryProvider = "missing_discovery_provider",
    /// A `test-discovery` provider declares no `report`.
    TestReportMissing = "test_report_missing",
    /// A provider runs a path its repository's setup makes (not git's to hold).
    SetupMakesPath = "setup_makes_path",
    /// `package.json` declares dependencies that no setup installs where providers run.
    DependenciesNotInstalled = "dependencies_not_installed",
    /// A crate's dependencies must be downloaded, its jobs have no network, and no setup
    /// fetches them.
    DependenciesNeedNetwork = "dependencies_need_network",
    /// A provider runs `python -m <module>` with an interpreter that has no such module.
    PythonModuleMissing = "python_module_missing",
    /// A provider's last run timed out and its `timeoutMs` is no longer than that run.
    TimeoutTooShort = "timeout_too_short",
    // Preflight (the graph's checks, before anything runs).
    /// Providers depend on each other in a cycle.
    DependencyCycle = "dependency_cycle",
    /// Two different executions write one report path.
    ReportPathCollision = "report_path_collision",
    /// `dependsOn` names no provider.
    UnknownDependency = "unknown_dependency",
    /// `service` names no service.
    UnknownService = "unknown_service",
    /// A repository id is not in the workspace.
    UnknownRepository = "unknown_repository",
    /// A command must run in a repository and the workspace has several.
    RepositoryRequired = "repository_required",
    /// `discoveryProvider` names no provider.
    UnknownDiscoveryProvider = "unknown_discovery_provider",
    /// A discovery receiver that is not a `test-discovery` provider of `discovery`.
    DiscoveryProviderAdapter = "discovery_provider_adapter",
    /// A `test-discovery` provider proving something other than `test`/`discovery`.
    TestDiscoveryCapability = "test_discovery_capability",
    /// A provider with no capability.
    ProviderWithoutCapability = "provider_without_capability",
    /// An adapter that runs a command has none.
    MissingCommand = "missing_command",
    /// A readiness URL that is absent or not http(s).
    ReadinessUrlInvalid = "readiness_url_invalid",
    /// A readiness URL without a literal port.
    ReadinessPortMissing = "readiness_port_missing",
    /// A readiness probe that checks only the status.
    ReadinessStatusOnly = "readiness_status_only",
    /// A contract-digest provider with fewer than two repositories.
    ContractSingleRepository = "contract_single_repository",
    /// A literal env value under a secret-looking name.
    SecretInEnv = "secret_in_env",
    /// An `envFrom` value too short to be redacted; it may appear in output.
    SecretTooShort = "secret_too_short",
    /// A job's log or report held the base64 of a secret (replaced in what is kept).
    SecretEncodedBase64 = "secret_encoded_base64",
    /// A path that is absolute, climbs with `..` or escapes through a symlink.
    PathOutsideRepository = "path_outside_repository",
    /// `claims` lists a claim that does not exist or does not need the provider.
    UnknownClaim = "unknown_claim",
    /// A provider's resources conflict with a service it needs.
    ResourceDeadlock = "resource_deadlock",
}

impl From<proofgraph_graph::Check> for Code {
    fn from(check: proofgraph_graph::Check) -> Self {
        use proofgraph_graph::Check;
        match check {
            Check::DependencyCycle => Code::DependencyCycle,
            Check::ReportPathCollision => Code::ReportPathCollision,
            Check::UnknownDependency => Code::UnknownDependency,
            Check::UnknownService => Code::UnknownService,
            Check::UnknownRepository => Code::UnknownRepository,
            Check::RepositoryRequired => Code::RepositoryRequired,
            Check::UnknownDiscoveryProvider => Code::UnknownDiscoveryProvider,
            Check::DiscoveryProviderAdapter => Code::DiscoveryProviderAdapter,
            Check::TestDiscoveryCapability => Code::TestDiscoveryCapability,
            Check::ProviderWithoutCapability => Code::ProviderWithoutCapability,
            Check::MissingCommand => Code::MissingCommand,
            Check::ReadinessUrlInvalid => Code::ReadinessUrlInvalid,
            Check::ReadinessPortMissing => Code::ReadinessPortMissing,
            Check::ReadinessStatusOnly => Code::ReadinessStatusOnly,
            Check::ContractSingleRepository => Code::ContractSingleRepository,
            Check::SecretInEnv => Code::SecretInEnv,
            Check::PathOutsideRepository => Code::PathOutsideRepository,
            Check::UnknownClaim => Code::UnknownClaim,
            Check::ResourceDeadlock => Code::ResourceDeadlock,
        }
    }
}

impl From<&proofgraph_graph::Finding> for Diagnostic {
    fn from(f: &proofgraph_graph::Finding) -> Self {
        Diagnostic::error(Code::from(f.check), f.message.clone())
            .at(&f.file, f.pos)
            .fix(f.fix.clone())
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A position in a file: what a diagnostic about configuration concerns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    /// The file, relative to the OpenSpec root where it lies under it.
    pub file: String,
    /// Line and column.
    pub pos: Pos,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.pos)
    }
}

/// What a diagnostic concerns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A dotted surface (`openspec.root`, `store.id`), as OpenSpec uses.
    Surface(String),
    /// A file position, rendered `file:line:column`.
    Location(Location),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Surface(s) => f.write_str(s),
            Target::Location(l) => l.fmt(f),
        }
    }
}

/// One finding: the envelope every command emits in `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// The stable code.
    pub code: Code,
    /// A human sentence.
    pub message: String,
    /// What it concerns.
    pub target: Option<Target>,
    /// One actionable sentence or command.
    pub fix: Option<String>,
}

impl Diagnostic {
    /// An error with a message.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            code,
            message: message.into(),
            target: None,
            fix: None,
        }
    }

    /// A warning with a message.
    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            code,
            message: message.into(),
            target: None,
            fix: None,
        }
    }

    /// A note with a message: worth knowing, nothing to fix.
    pub fn info(code: Code, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Info,
            code,
            message: message.into(),
            target: None,
            fix: None,
        }
    }

    /// Attaches a dotted-surface target.
    pub fn surface(mut self, surface: &str) -> Self {
        self.target = Some(Target::Surface(surface.to_owned()));
        self
    }

    /// Attaches a file position.
    pub fn at(mut self, file: &str, pos: Pos) -> Self {
        self.target = Some(Target::Location(Location {
            file: file.to_owned(),
            pos,
        }));
        self
    }

    /// Attaches a fix.
    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The file position, when the target is one.
    pub fn location(&self) -> Option<&Location> {
        match &self.target {
            Some(Target::Location(l)) => Some(l),
            _ => None,
        }
    }
}

impl Serialize for Diagnostic {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 3 + usize::from(self.target.is_some()) + usize::from(self.fix.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("severity", self.severity.as_str())?;
        map.serialize_entry("code", self.code.as_str())?;
        map.serialize_entry("message", &self.message)?;
        if let Some(target) = &self.target {
            map.serialize_entry("target", &target.to_string())?;
        }
        if let Some(fix) = &self.fix {
            map.serialize_entry("fix", fix)?;
        }
        map.end()
    }
}

/// Sorts findings into a stable order: by file position, then severity and
/// code, so that the same input always reports in the same order.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.location(), a.severity, a.code, &a.message).cmp(&(
            b.location(),
            b.severity,
            b.code,
            &b.message,
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_snake_case_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for code in Code::ALL {
            let name = code.as_str();
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    && name.starts_with(|c: char| c.is_ascii_lowercase()),
                "{name} is not snake_case"
            );
            assert!(seen.insert(name), "{name} appears twice");
        }
    }

    #[test]
    fn preflight_checks_keep_their_names() {
        for check in proofgraph_graph::Check::ALL {
            assert_eq!(Code::from(*check).as_str(), check.as_str());
        }
    }

    #[test]
    fn envelope_omits_absent_fields() {
        let d = Diagnostic::error(Code::UnknownKey, "m");
        assert_eq!(
            serde_json::to_string(&d).expect("serializes"),
            r#"{"severity":"error","code":"unknown_key","message":"m"}"#
        );
        let d = d.at("a.yaml", Pos::new(3, 4)).fix("f");
        assert_eq!(
            serde_json::to_string(&d).expect("serializes"),
            r#"{"severity":"error","code":"unknown_key","message":"m","target":"a.yaml:3:4","fix":"f"}"#
        );
    }
}
