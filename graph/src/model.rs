//! The typed model of a change's configuration: claims, providers and
//! services, with the position of every field, and the workspace's repositories.
//!
//! The application decodes `evidence.yaml`, `execution.yaml` and the catalog into these
//! types; everything downstream (claim coverage, the graph, fingerprints)
//! reads them. Absent and empty stay distinct (`Option<Vec<_>>`), because they
//! are distinct inputs to a provider's fingerprint.
//!
//! Invariant: these are plain values — nothing here checks references between them or
//! reads the world; that is `validate`'s job once they are handed to the graph builder.

use std::collections::{BTreeMap, BTreeSet};

use crate::adapter::Adapter;
use crate::id::{CapabilityName, ClaimId, EnvName, ProviderId, RepoId, ResourceName, ServiceId};
use crate::span::{Pos, Spanned};

/// How much a claim matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Impact {
    /// Low impact.
    Low,
    /// Medium impact.
    Medium,
    /// High impact.
    High,
}

impl Impact {
    /// Every impact with its configuration spelling.
    pub const NAMES: [(&'static str, Impact); 3] = [
        ("low", Impact::Low),
        ("medium", Impact::Medium),
        ("high", Impact::High),
    ];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::Low => "low",
            Impact::Medium => "medium",
            Impact::High => "high",
        }
    }
}

/// One claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The stable claim id.
    pub id: Spanned<ClaimId>,
    /// What must hold, in words.
    pub scenario: Option<Spanned<String>>,
    /// How much it matters.
    pub impact: Option<Spanned<Impact>>,
    /// The capabilities that must vouch for it.
    pub capabilities: Vec<Spanned<CapabilityName>>,
    /// The repositories it concerns (each needs its own provider).
    pub repositories: Option<Vec<Spanned<RepoId>>>,
}

impl Claim {
    /// A claim requiring `capabilities`, with no scenario, impact or
    /// repositories, positioned nowhere (for programmatic construction).
    pub fn new(id: ClaimId, capabilities: impl IntoIterator<Item = CapabilityName>) -> Self {
        Self {
            id: Spanned::new(id, Pos::default()),
            scenario: None,
            impact: None,
            capabilities: capabilities
                .into_iter()
                .map(|c| Spanned::new(c, Pos::default()))
                .collect(),
            repositories: None,
        }
    }

    /// The capabilities required, with `discovery` implied by `test`.
    pub fn required_capabilities(&self) -> BTreeSet<CapabilityName> {
        let mut out: BTreeSet<CapabilityName> =
            self.capabilities.iter().map(|c| c.value.clone()).collect();
        if out.contains(&CapabilityName::test()) {
            out.insert(CapabilityName::discovery());
        }
        out
    }
}

/// The report formats a provider may declare. `json` and `auto` are Change Loop's
/// spellings (its Node.js runtime accepts them); both mean "sniff the report".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportFormat {
    /// Jest `--json`.
    Jest,
    /// Vitest `--reporter=json`.
    Vitest,
    /// Playwright `--reporter=json`.
    Playwright,
    /// JUnit XML.
    Junit,
    /// TAP 13/14.
    Tap,
    /// `go test -json`.
    GoTestJson,
    /// libtest / nextest JSON lines.
    LibtestJson,
    /// Common Test Report Format.
    Ctrf,
    /// Mocha's JSON reporter.
    Mocha,
    /// A JSON object that only gives totals.
    Summary,
    /// Some JSON report: sniffed among the JSON formats.
    Json,
    /// Sniffed among every format.
    Auto,
}

impl ReportFormat {
    /// Every format with its configuration spelling.
    pub const NAMES: [(&'static str, ReportFormat); 12] = [
        ("jest", ReportFormat::Jest),
        ("vitest", ReportFormat::Vitest),
        ("playwright", ReportFormat::Playwright),
        ("junit", ReportFormat::Junit),
        ("tap", ReportFormat::Tap),
        ("go-test-json", ReportFormat::GoTestJson),
        ("libtest-json", ReportFormat::LibtestJson),
        ("ctrf", ReportFormat::Ctrf),
        ("mocha", ReportFormat::Mocha),
        ("summary", ReportFormat::Summary),
        ("json", ReportFormat::Json),
        ("auto", ReportFormat::Auto),
    ];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("auto", |(n, _)| n)
    }
}

/// How a browser provider drives input (carried into receipts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputMode {
    /// Playwright's synthetic input.
    BrowserAutomation,
    /// DOM events dispatched by the test.
    DomEvent,
    /// Real OS input.
    OsInput,
    /// Both automation and OS input.
    Both,
}

impl InputMode {
    /// Every mode with its configuration spelling.
    pub const NAMES: [(&'static str, InputMode); 4] = [
        ("browser-automation", InputMode::BrowserAutomation),
        ("dom-event", InputMode::DomEvent),
        ("os-input", InputMode::OsInput),
        ("both", InputMode::Both),
    ];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("browser-automation", |(n, _)| n)
    }
}

/// Whether a run gets a private loopback-only network or the host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// A private network namespace with loopback only (the default).
    Private,
    /// The host network; part of the fingerprint and shown in receipts.
    Host,
}

impl Network {
    /// Every setting with its configuration spelling.
    pub const NAMES: [(&'static str, Network); 2] =
        [("private", Network::Private), ("host", Network::Host)];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Private => "private",
            Network::Host => "host",
        }
    }
}

/// Each setting is written as its configuration spelling (`as_str`): what `show --json`
/// prints and a receipt's `network` records.
macro_rules! serialize_as_str {
    ($($name:ty),*) => {$(
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    )*};
}

serialize_as_str!(Network, ReportFormat, InputMode, crate::Adapter);

impl<'de> serde::Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Network::NAMES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, n)| *n)
            .ok_or_else(|| serde::de::Error::custom("a network is `private` or `host`"))
    }
}

/// Which claims a provider vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimScope {
    /// Every claim that requires the provider's capability (`claims` absent or
    /// `"declared"`).
    Declared,
    /// Exactly these claims.
    Listed(Vec<Spanned<ClaimId>>),
}

/// The `ci` block of an `external` provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiVerification {
    /// Who signs the envelope (`github-actions`).
    pub issuer: Spanned<String>,
    /// The Ed25519 public key, PEM (SPKI).
    pub public_key: Spanned<String>,
}

/// One provider, as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// The provider's name, where it is declared.
    pub id: Spanned<ProviderId>,
    /// How it produces a result.
    pub adapter: Spanned<Adapter>,
    /// The capability it proves (default: its name).
    pub capability: Option<Spanned<CapabilityName>>,
    /// The argv it runs.
    pub command: Option<Spanned<Vec<String>>>,
    /// The structured report the command writes.
    pub report: Option<Spanned<String>>,
    /// The report's format (default: sniffed).
    pub report_format: Option<Spanned<ReportFormat>>,
    /// The floor on discovered tests (absent or 0 means 1).
    pub minimum: Option<Spanned<u64>>,
    /// Who receives the discovery receipt.
    pub discovery_provider: Option<Spanned<ProviderId>>,
    /// The run's timeout in milliseconds (default 120000).
    pub timeout_ms: Option<Spanned<u64>>,
    /// The repository the command runs in.
    pub repository: Option<Spanned<RepoId>>,
    /// The repositories a multi-repository provider spans.
    pub repositories: Option<Vec<Spanned<RepoId>>>,
    /// The files it reads (`repo:path` scoped globs), narrowing its binding.
    pub inputs: Option<Vec<Spanned<String>>>,
    /// The resource locks it takes (overriding the adapter's defaults).
    pub resources: Option<Vec<Spanned<ResourceName>>>,
    /// Providers that must finish first.
    pub depends_on: Option<Vec<Spanned<ProviderId>>>,
    /// Literal, non-secret environment values.
    pub env: Option<BTreeMap<EnvName, Spanned<String>>>,
    /// Environment names inherited from the caller.
    pub env_from: Option<Vec<Spanned<EnvName>>>,
    /// The services it needs.
    pub services: Option<Vec<Spanned<ServiceId>>>,
    /// The Playwright project.
    pub project: Option<Spanned<String>>,
    /// Extra capabilities one Playwright run vouches for.
    pub outputs: Option<Vec<Spanned<CapabilityName>>>,
    /// How a browser provider drives input.
    pub input_mode: Option<Spanned<InputMode>>,
    /// Which claims it vouches for.
    pub claims: ClaimScope,
    /// Contract file per repository (`contract-digest`).
    pub contract: Option<BTreeMap<RepoId, Spanned<String>>>,
    /// Signature verification for `external`.
    pub ci: Option<CiVerification>,
    /// Network access for the run.
    pub network: Option<Spanned<Network>>,
    /// Stable case ids the report must bind.
    pub critical_cases: Option<Vec<Spanned<String>>>,
    /// Files it writes (patterns relative to its repository) that the providers depending
    /// on it see: the one way one provider's output reaches another.
    pub artifacts: Option<Vec<Spanned<String>>>,
}

impl Provider {
    /// A provider with only an id and an adapter, every other field unset,
    /// positioned nowhere (for programmatic construction).
    pub fn new(id: ProviderId, adapter: Adapter) -> Self {
        Self {
            id: Spanned::new(id, Pos::default()),
            adapter: Spanned::new(adapter, Pos::default()),
            capability: None,
            command: None,
            report: None,
            report_format: None,
            minimum: None,
            discovery_provider: None,
            timeout_ms: None,
            repository: None,
            repositories: None,
            inputs: None,
            resources: None,
            depends_on: None,
            env: None,
            env_from: None,
            services: None,
            project: None,
            outputs: None,
            input_mode: None,
            claims: ClaimScope::Declared,
            contract: None,
            ci: None,
            network: None,
            critical_cases: None,
            artifacts: None,
        }
    }

    /// The capability this provider proves: its `capability`, else its name.
    /// `None` when neither is a capability name.
    pub fn capability(&self) -> Option<CapabilityName> {
        match &self.capability {
            Some(c) => Some(c.value.clone()),
            None => CapabilityName::parse(self.id.value.as_str()).ok(),
        }
    }

    /// Who receives this provider's discovery receipt: `discoveryProvider`,
    /// else `discovery` for the provider named `test`, else nobody.
    pub fn discovery_receiver(&self) -> Option<&str> {
        if self.adapter.value != Adapter::TestDiscovery {
            return None;
        }
        match &self.discovery_provider {
            Some(receiver) => Some(receiver.value.as_str()),
            None if self.id.value.as_str() == "test" => Some("discovery"),
            None => None,
        }
    }

    /// Every capability one run of this provider vouches for: its own, its
    /// `outputs`, and `discovery` when its discovery receipt goes to the
    /// implicit `discovery` receiver.
    pub fn proven_capabilities(&self) -> Vec<CapabilityName> {
        let mut out: Vec<CapabilityName> = self.capability().into_iter().collect();
        out.extend(self.outputs.iter().flatten().map(|o| o.value.clone()));
        // The receiver named `discovery` is implicit: a `test-discovery`
        // provider addressing it (the provider named `test` does by default)
        // proves discovery itself. Any other receiver is a declared provider
        // (with capability `discovery`), which proves it there.
        if self.discovery_receiver().is_some_and(|r| r == "discovery") {
            out.push(CapabilityName::discovery());
        }
        out.sort();
        out.dedup();
        out
    }
}

/// One service, as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// The service's name, where it is declared.
    pub id: Spanned<ServiceId>,
    /// The argv that starts it.
    pub command: Option<Spanned<Vec<String>>>,
    /// The repository it runs in.
    pub repository: Option<Spanned<RepoId>>,
    /// How readiness is observed.
    pub readiness: Option<Readiness>,
    /// Literal, non-secret environment values.
    pub env: Option<BTreeMap<EnvName, Spanned<String>>>,
    /// Environment names inherited from the caller.
    pub env_from: Option<Vec<Spanned<EnvName>>>,
    /// Network access for the service.
    pub network: Option<Spanned<Network>>,
}

/// A service's readiness probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// Where the probe starts.
    pub pos: Pos,
    /// The URL polled.
    pub url: Option<Spanned<crate::readiness::ReadinessUrl>>,
    /// Headers the answer must carry.
    pub expect_header: Option<BTreeMap<String, Spanned<String>>>,
    /// Text the answer's body must contain.
    pub expect_body: Option<Spanned<String>>,
    /// How long to poll, in milliseconds.
    pub timeout_ms: Option<Spanned<u64>>,
}

impl Service {
    /// A service with only an id, every other field unset, positioned
    /// nowhere (for programmatic construction).
    pub fn new(id: ServiceId) -> Self {
        Self {
            id: Spanned::new(id, Pos::default()),
            command: None,
            repository: None,
            readiness: None,
            env: None,
            env_from: None,
            network: None,
        }
    }
}

/// The repositories of the workspace, as the graph needs them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Repositories {
    /// Every repository id.
    pub ids: BTreeSet<RepoId>,
}

impl Repositories {
    /// The repository a provider or service runs in when it names none: the
    /// only one, when there is only one.
    pub fn default(&self) -> Option<&RepoId> {
        if self.ids.len() == 1 {
            self.ids.iter().next()
        } else {
            None
        }
    }
}

/// Comparing declarations by what they say, never by where they say it: the fields (by
/// their key in the configuration file) whose values differ between two declarations of
/// the same claim, provider or service. What `plan --base --head` reports as wiring that
/// changed.
pub mod compare {
    use super::{Claim, ClaimScope, Provider, Service, Spanned};
    use std::collections::BTreeMap;

    fn one<T>(v: &Option<Spanned<T>>) -> Option<&T> {
        v.as_ref().map(|s| &s.value)
    }

    fn many<T>(v: &Option<Vec<Spanned<T>>>) -> Option<Vec<&T>> {
        v.as_ref().map(|l| l.iter().map(|s| &s.value).collect())
    }

    fn map<K: Ord, T>(v: &Option<BTreeMap<K, Spanned<T>>>) -> Option<BTreeMap<&K, &T>> {
        v.as_ref()
            .map(|m| m.iter().map(|(k, s)| (k, &s.value)).collect())
    }

    fn scope(c: &ClaimScope) -> Option<Vec<&crate::id::ClaimId>> {
        match c {
            ClaimScope::Declared => None,
            ClaimScope::Listed(l) => Some(l.iter().map(|s| &s.value).collect()),
        }
    }

    /// The keys of a provider's declaration whose values differ.
    pub fn provider_fields(a: &Provider, b: &Provider) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |name: &'static str, differs: bool| {
            if differs {
                out.push(name);
            }
        };
        check("adapter", a.adapter.value != b.adapter.value);
        check("capability", one(&a.capability) != one(&b.capability));
        check("command", one(&a.command) != one(&b.command));
        check("report", one(&a.report) != one(&b.report));
        check(
            "reportFormat",
            one(&a.report_format) != one(&b.report_format),
        );
        check("minimum", one(&a.minimum) != one(&b.minimum));
        check(
            "discoveryProvider",
            one(&a.discovery_provider) != one(&b.discovery_provider),
        );
        check("timeoutMs", one(&a.timeout_ms) != one(&b.timeout_ms));
        check("repository", one(&a.repository) != one(&b.repository));
        check(
            "repositories",
            many(&a.repositories) != many(&b.repositories),
        );
        check("inputs", many(&a.inputs) != many(&b.inputs));
        check("resources", many(&a.resources) != many(&b.resources));
        check("dependsOn", many(&a.depends_on) != many(&b.depends_on));
        check("env", map(&a.env) != map(&b.env));
        check("envFrom", many(&a.env_from) != many(&b.env_from));
        check("services", many(&a.services) != many(&b.services));
        check("project", one(&a.project) != one(&b.project));
        check("outputs", many(&a.outputs) != many(&b.outputs));
        check("inputMode", one(&a.input_mode) != one(&b.input_mode));
        check("claims", scope(&a.claims) != scope(&b.claims));
        check("contract", map(&a.contract) != map(&b.contract));
        check(
            "ci",
            a.ci.as_ref()
                .map(|c| (&c.issuer.value, c.public_key.value.trim()))
                != b.ci
                    .as_ref()
                    .map(|c| (&c.issuer.value, c.public_key.value.trim())),
        );
        check("network", one(&a.network) != one(&b.network));
        check(
            "criticalCases",
            many(&a.critical_cases) != many(&b.critical_cases),
        );
        out
    }

    /// The keys of a service's declaration whose values differ.
    pub fn service_fields(a: &Service, b: &Service) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |name: &'static str, differs: bool| {
            if differs {
                out.push(name);
            }
        };
        check("command", one(&a.command) != one(&b.command));
        check("repository", one(&a.repository) != one(&b.repository));
        check("env", map(&a.env) != map(&b.env));
        check("envFrom", many(&a.env_from) != many(&b.env_from));
        check("network", one(&a.network) != one(&b.network));
        /// A readiness probe's values: URL, expected headers, body, timeout.
        type Probe<'a> = (
            Option<String>,
            Option<BTreeMap<&'a String, &'a String>>,
            Option<&'a String>,
            Option<&'a u64>,
        );
        fn readiness(s: &Service) -> Option<Probe<'_>> {
            s.readiness.as_ref().map(|r| {
                (
                    one(&r.url).map(ToString::to_string),
                    map(&r.expect_header),
                    one(&r.expect_body),
                    one(&r.timeout_ms),
                )
            })
        }
        check("readiness", readiness(a) != readiness(b));
        out
    }

    /// The keys of a claim's declaration whose values differ.
    pub fn claim_fields(a: &Claim, b: &Claim) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |name: &'static str, differs: bool| {
            if differs {
                out.push(name);
            }
        };
        check(
            "requires",
            a.required_capabilities() != b.required_capabilities(),
        );
        check(
            "repositories",
            many(&a.repositories) != many(&b.repositories),
        );
        check("scenario", one(&a.scenario) != one(&b.scenario));
        check("impact", one(&a.impact) != one(&b.impact));
        out
    }
}
