//! Fingerprints: what a provider's result was computed from.
//!
//! A provider's fingerprint is BLAKE3 over a written-down, versioned,
//! length-prefixed encoding of its *manifest*, the ordered list of components
//! below. Never `Debug`, `serde_json` or `std::hash`: the bytes are defined
//! here and pinned by a snapshot test, so an accidental change is a visible
//! diff.
//!
//! ```text
//! fingerprint = BLAKE3( "proofgraph/provider-fingerprint" ‖ u32be(ENCODING_VERSION)
//!                       ‖ for each component: u8(tag) ‖ value )
//! value       = 0x00                                   absent
//!             | 0x01 ‖ str                             text
//!             | 0x02 ‖ u64be(n)                        number
//!             | 0x03 ‖ u64be(count) ‖ str*             list
//!             | 0x04 ‖ u64be(count) ‖ (str ‖ str)*     map, sorted by key
//! str         = u64be(byte length) ‖ UTF-8 bytes
//! ```
//!
//! Components, in order (tag: name): 1 adapter (name and protocol version),
//! 2 capability, 3 outputs, 4 repository, 5 repositories, 6 cwd, 7 argv,
//! 8 report, 9 report_format, 10 minimum, 11 timeout_ms, 12 env, 13 env_from
//! (names only, never values), 14 network, 15 project, 16 input_mode,
//! 17 critical_cases, 18 contract, 19 ci, 20 claims (the resolved claim
//! scope), 21 services (each service's wiring fingerprint), 22 depends_on
//! (each dependency's fingerprint, input-addressed as Nix derivations are),
//! 23 platform, 24 executable (resolved path and content digest), 25 inputs
//! (the digest of exactly the files the provider reads).
//!
//! Absent and empty are distinct values. A wiring change therefore changes
//! exactly that provider's fingerprint and, through component 22, the
//! fingerprints of the providers that depend on it; nothing else.

use std::collections::BTreeMap;
use std::fmt;

use crate::adapter::Adapter;
use crate::graph::{NodeId, ProviderNode, SealedGraph, ServiceNode};
use crate::id::{ProviderId, RepoId, ServiceId};

/// The version of the encoding above. Bump it on any change to the bytes.
pub const ENCODING_VERSION: u32 = 1;

/// The protocol version of each adapter: bumped when an adapter's meaning of
/// "pass" changes, so old receipts stop matching.
pub fn adapter_protocol(adapter: Adapter) -> u64 {
    match adapter {
        Adapter::Command
        | Adapter::TestDiscovery
        | Adapter::Playwright
        | Adapter::ContractDigest
        | Adapter::External => 1,
    }
}

/// A 32-byte digest (BLAKE3 unless stated otherwise).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// BLAKE3 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(*blake3::hash(bytes).as_bytes())
    }

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses 64 lowercase or uppercase hex digits.
    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks(2).enumerate() {
            let s = std::str::from_utf8(pair).ok()?;
            out[i] = u8::from_str_radix(s, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// A provider's fingerprint.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(pub Digest);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.0.to_hex())
    }
}

/// One component's value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// Not set.
    Absent,
    /// A string.
    Text(String),
    /// A number.
    Number(u64),
    /// A list, in its meaningful order.
    List(Vec<String>),
    /// A map, sorted by key.
    Map(BTreeMap<String, String>),
}

impl Value {
    fn encode(&self, out: &mut Vec<u8>) {
        fn str_(out: &mut Vec<u8>, s: &str) {
            out.extend_from_slice(&(s.len() as u64).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        match self {
            Value::Absent => out.push(0),
            Value::Text(s) => {
                out.push(1);
                str_(out, s);
            }
            Value::Number(n) => {
                out.push(2);
                out.extend_from_slice(&n.to_be_bytes());
            }
            Value::List(items) => {
                out.push(3);
                out.extend_from_slice(&(items.len() as u64).to_be_bytes());
                for item in items {
                    str_(out, item);
                }
            }
            Value::Map(entries) => {
                out.push(4);
                out.extend_from_slice(&(entries.len() as u64).to_be_bytes());
                for (k, v) in entries {
                    str_(out, k);
                    str_(out, v);
                }
            }
        }
    }

    fn opt_text(v: Option<impl ToString>) -> Self {
        v.map_or(Value::Absent, |s| Value::Text(s.to_string()))
    }

    fn opt_list<T: ToString>(v: Option<impl IntoIterator<Item = T>>) -> Self {
        v.map_or(Value::Absent, |items| {
            Value::List(items.into_iter().map(|i| i.to_string()).collect())
        })
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Absent => f.write_str("(unset)"),
            Value::Text(s) => write!(f, "{s:?}"),
            Value::Number(n) => write!(f, "{n}"),
            Value::List(items) => write!(f, "{items:?}"),
            Value::Map(entries) => {
                let parts: Vec<String> =
                    entries.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                write!(f, "{{{}}}", parts.join(", "))
            }
        }
    }
}

/// The named components of a provider's fingerprint, in encoding order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// `(tag, name, value)` in tag order.
    pub components: Vec<(u8, &'static str, Value)>,
}

impl Manifest {
    /// The fingerprint these components hash to.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"proofgraph/provider-fingerprint");
        hasher.update(&ENCODING_VERSION.to_be_bytes());
        let mut buf = Vec::with_capacity(256);
        for (tag, _, value) in &self.components {
            buf.clear();
            buf.push(*tag);
            value.encode(&mut buf);
            hasher.update(&buf);
        }
        Fingerprint(Digest(*hasher.finalize().as_bytes()))
    }

    /// A component's value by name.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.components
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(_, _, v)| v)
    }
}

/// The machine a run happens on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Platform {
    /// `linux`, `macos`, …
    pub os: String,
    /// `x86_64`, `aarch64`, …
    pub arch: String,
}

/// The program a provider's argv starts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Executable {
    /// The resolved path.
    pub path: String,
    /// Its content digest.
    pub digest: Digest,
}

/// The digest of the files one provider reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Inputs {
    /// BLAKE3 over the sorted `(path, content digest)` list.
    pub digest: Digest,
    /// How many files.
    pub files: u64,
}

/// What the world says about the providers: supplied by the caller, because
/// this crate reads no files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    /// The platform.
    pub platform: Platform,
    /// Each provider's inputs.
    pub inputs: BTreeMap<ProviderId, Inputs>,
    /// Each provider's executable, when it runs one.
    pub executables: BTreeMap<ProviderId, Executable>,
    /// Each repository's whole input digest (a service's code is its
    /// repository's code).
    pub repositories: BTreeMap<RepoId, Inputs>,
}

/// A fingerprint could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FingerprintError {
    /// The world gave no input digest for a provider.
    #[error("fingerprint provider `{0}`: no input digest was supplied")]
    MissingInputs(ProviderId),
}

/// Fingerprints of every provider and every service's wiring.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fingerprints {
    /// Provider fingerprints.
    pub providers: BTreeMap<ProviderId, Fingerprint>,
    /// Service wiring fingerprints.
    pub services: BTreeMap<ServiceId, Fingerprint>,
}

impl SealedGraph {
    /// Computes every provider's fingerprint, dependencies first.
    pub fn fingerprints(&self, world: &World) -> Result<Fingerprints, FingerprintError> {
        let mut out = Fingerprints::default();
        for (id, node) in &self.services {
            let service = self
                .node(*node)
                .service()
                .expect("service ids map to service nodes");
            out.services
                .insert(id.clone(), service_fingerprint(service, world));
        }
        for node in self.order() {
            let Some(provider) = self.node(*node).provider() else {
                continue;
            };
            let manifest = self.manifest_with(*node, provider, world, &out)?;
            out.providers
                .insert(provider.spec.id.value.clone(), manifest.fingerprint());
        }
        Ok(out)
    }

    /// A provider's manifest, given the fingerprints already computed for its
    /// dependencies and services (from [`SealedGraph::fingerprints`]).
    pub fn manifest(
        &self,
        id: &ProviderId,
        world: &World,
        fingerprints: &Fingerprints,
    ) -> Result<Manifest, FingerprintError> {
        let node = self
            .provider(id)
            .ok_or_else(|| FingerprintError::MissingInputs(id.clone()))?;
        let provider = self
            .node(node)
            .provider()
            .expect("provider ids map to provider nodes");
        self.manifest_with(node, provider, world, fingerprints)
    }

    fn manifest_with(
        &self,
        node: NodeId,
        p: &ProviderNode,
        world: &World,
        done: &Fingerprints,
    ) -> Result<Manifest, FingerprintError> {
        let spec = &p.spec;
        let id = &spec.id.value;
        let inputs = world
            .inputs
            .get(id)
            .ok_or_else(|| FingerprintError::MissingInputs(id.clone()))?;
        let mut services = BTreeMap::new();
        for service in self.services_of(node) {
            let s = self
                .node(service)
                .service()
                .expect("services_of yields services");
            let fp = done
                .services
                .get(&s.spec.id.value)
                .map_or_else(String::new, ToString::to_string);
            services.insert(s.spec.id.value.to_string(), fp);
        }
        let mut depends_on = BTreeMap::new();
        for dep in spec.depends_on.iter().flatten() {
            let fp = done
                .providers
                .get(&dep.value)
                .map_or_else(String::new, ToString::to_string);
            depends_on.insert(dep.value.to_string(), fp);
        }
        let outputs = p
            .outputs
            .iter()
            .map(|o| format!("{}@{}", o.capability, o.under))
            .collect();
        let env = spec.env.as_ref().map_or(Value::Absent, |e| {
            Value::Map(
                e.iter()
                    .map(|(k, v)| (k.to_string(), v.value.clone()))
                    .collect(),
            )
        });
        let contract = spec.contract.as_ref().map_or(Value::Absent, |c| {
            Value::Map(
                c.iter()
                    .map(|(k, v)| (k.to_string(), v.value.clone()))
                    .collect(),
            )
        });
        let ci = spec.ci.as_ref().map_or(Value::Absent, |c| {
            Value::Map(BTreeMap::from([
                ("issuer".to_owned(), c.issuer.value.clone()),
                (
                    "public_key".to_owned(),
                    c.public_key.value.trim().to_owned(),
                ),
            ]))
        });
        let executable = world.executables.get(id).map_or(Value::Absent, |e| {
            Value::Map(BTreeMap::from([
                ("path".to_owned(), e.path.clone()),
                ("digest".to_owned(), e.digest.to_hex()),
            ]))
        });
        let components = vec![
            (
                1,
                "adapter",
                Value::Text(format!(
                    "{}/{}",
                    spec.adapter.value,
                    adapter_protocol(spec.adapter.value)
                )),
            ),
            (2, "capability", Value::Text(p.capability.to_string())),
            (3, "outputs", Value::List(outputs)),
            (4, "repository", Value::opt_text(p.runs_in.as_ref())),
            (
                5,
                "repositories",
                Value::List(p.repositories.iter().map(ToString::to_string).collect()),
            ),
            (6, "cwd", Value::Text(".".to_owned())),
            (
                7,
                "argv",
                Value::opt_list(spec.command.as_ref().map(|c| c.value.iter())),
            ),
            (
                8,
                "report",
                Value::opt_text(spec.report.as_ref().map(|r| &r.value)),
            ),
            (
                9,
                "report_format",
                Value::opt_text(spec.report_format.as_ref().map(|f| f.value.as_str())),
            ),
            (
                10,
                "minimum",
                spec.minimum
                    .as_ref()
                    .map_or(Value::Absent, |m| Value::Number(m.value)),
            ),
            (
                11,
                "timeout_ms",
                spec.timeout_ms
                    .as_ref()
                    .map_or(Value::Absent, |t| Value::Number(t.value)),
            ),
            (12, "env", env),
            (
                13,
                "env_from",
                Value::opt_list(spec.env_from.as_ref().map(|e| e.iter().map(|n| &n.value))),
            ),
            (
                14,
                "network",
                Value::opt_text(spec.network.as_ref().map(|n| n.value.as_str())),
            ),
            (
                15,
                "project",
                Value::opt_text(spec.project.as_ref().map(|p| &p.value)),
            ),
            (
                16,
                "input_mode",
                Value::opt_text(spec.input_mode.as_ref().map(|m| m.value.as_str())),
            ),
            (
                17,
                "critical_cases",
                Value::opt_list(
                    spec.critical_cases
                        .as_ref()
                        .map(|c| c.iter().map(|s| &s.value)),
                ),
            ),
            (18, "contract", contract),
            (19, "ci", ci),
            (
                20,
                "claims",
                Value::List(p.claims.iter().map(ToString::to_string).collect()),
            ),
            (21, "services", Value::Map(services)),
            (22, "depends_on", Value::Map(depends_on)),
            (
                23,
                "platform",
                Value::Text(format!("{}/{}", world.platform.os, world.platform.arch)),
            ),
            (24, "executable", executable),
            (
                25,
                "inputs",
                Value::Text(format!("{} ({} files)", inputs.digest, inputs.files)),
            ),
        ];
        Ok(Manifest { components })
    }
}

/// A service's wiring fingerprint: its command, repository (and that
/// repository's content), readiness probe, environment and network.
fn service_fingerprint(s: &ServiceNode, world: &World) -> Fingerprint {
    let spec = &s.spec;
    let readiness = spec.readiness.as_ref();
    let headers = readiness
        .and_then(|r| r.expect_header.as_ref())
        .map_or(Value::Absent, |h| {
            Value::Map(
                h.iter()
                    .map(|(k, v)| (k.clone(), v.value.clone()))
                    .collect(),
            )
        });
    let code = s.runs_in.as_ref().and_then(|r| world.repositories.get(r));
    let components = vec![
        (
            1,
            "command",
            Value::opt_list(spec.command.as_ref().map(|c| c.value.iter())),
        ),
        (2, "repository", Value::opt_text(s.runs_in.as_ref())),
        (
            3,
            "readiness_url",
            Value::opt_text(readiness.and_then(|r| r.url.as_ref()).map(|u| &u.value)),
        ),
        (4, "expect_header", headers),
        (
            5,
            "expect_body",
            Value::opt_text(
                readiness
                    .and_then(|r| r.expect_body.as_ref())
                    .map(|b| &b.value),
            ),
        ),
        (
            6,
            "readiness_timeout_ms",
            readiness
                .and_then(|r| r.timeout_ms.as_ref())
                .map_or(Value::Absent, |t| Value::Number(t.value)),
        ),
        (
            7,
            "env",
            spec.env.as_ref().map_or(Value::Absent, |e| {
                Value::Map(
                    e.iter()
                        .map(|(k, v)| (k.to_string(), v.value.clone()))
                        .collect(),
                )
            }),
        ),
        (
            8,
            "env_from",
            Value::opt_list(spec.env_from.as_ref().map(|e| e.iter().map(|n| &n.value))),
        ),
        (
            9,
            "network",
            Value::opt_text(spec.network.as_ref().map(|n| n.value.as_str())),
        ),
        (10, "code", Value::opt_text(code.map(|c| c.digest))),
    ];
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"proofgraph/service-fingerprint");
    hasher.update(&ENCODING_VERSION.to_be_bytes());
    let mut buf = Vec::new();
    for (tag, _, value) in &components {
        buf.clear();
        buf.push(*tag);
        value.encode(&mut buf);
        hasher.update(&buf);
    }
    Fingerprint(Digest(*hasher.finalize().as_bytes()))
}

/// The digest of a provider's input files: BLAKE3 over the sorted
/// `(path, content digest)` list, length-prefixed.
pub fn inputs_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a Digest)>) -> Inputs {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"proofgraph/inputs");
    hasher.update(&ENCODING_VERSION.to_be_bytes());
    let mut count = 0u64;
    for (path, digest) in files {
        hasher.update(&(path.len() as u64).to_be_bytes());
        hasher.update(path.as_bytes());
        hasher.update(&digest.0);
        count += 1;
    }
    Inputs {
        digest: Digest(*hasher.finalize().as_bytes()),
        files: count,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::id::{CapabilityName, EnvName, ProviderId};
    use crate::model::{Network, Provider, ReportFormat};
    use crate::testing::{at, pid, provider, seal, world};

    fn fingerprint_of(p: Provider) -> (Fingerprint, Manifest) {
        let id = p.id.value.clone();
        let graph = seal(vec![p], Vec::new());
        let w = world(&graph);
        let fps = graph.fingerprints(&w).expect("fingerprints");
        let manifest = graph.manifest(&id, &w, &fps).expect("manifest");
        (fps.providers[&id], manifest)
    }

    /// The pinned fingerprint of a fixed provider: if this changes, every
    /// receipt ever written stops matching. Change it only together with
    /// `ENCODING_VERSION`.
    #[test]
    fn snapshot_of_a_fixed_provider() {
        let mut p = Provider::new(pid("test"), Adapter::TestDiscovery);
        p.command = Some(at(vec![
            "npm".to_owned(),
            "test".to_owned(),
            "--".to_owned(),
            "--json".to_owned(),
        ]));
        p.report = Some(at("test-results/unit.json".to_owned()));
        p.report_format = Some(at(ReportFormat::Jest));
        p.minimum = Some(at(1));
        p.timeout_ms = Some(at(120_000));
        p.env = Some(BTreeMap::from([(
            EnvName::parse("NODE_ENV").expect("valid"),
            at("test".to_owned()),
        )]));
        p.env_from = Some(vec![at(EnvName::parse("DATABASE_URL").expect("valid"))]);
        let (fp, manifest) = fingerprint_of(p);
        assert_eq!(manifest.fingerprint(), fp);
        assert_eq!(
            fp.to_string(),
            "e0e77a30148c7fddd6765d8d7aa568dab531f3879642d313d591dc92dde37643"
        );
    }

    #[derive(Debug, Clone)]
    struct Knobs {
        argv: Vec<u8>,
        report: Option<u8>,
        minimum: Option<u64>,
        timeout: Option<u64>,
        env: Option<Vec<(u8, u8)>>,
        env_from: Option<Vec<u8>>,
        network: Option<bool>,
        format: Option<bool>,
    }

    fn knobs() -> impl Strategy<Value = Knobs> {
        (
            proptest::collection::vec(0..3u8, 0..3),
            proptest::option::of(0..2u8),
            proptest::option::of(0..2u64),
            proptest::option::of(1..3u64),
            proptest::option::of(proptest::collection::vec((0..2u8, 0..2u8), 0..2)),
            proptest::option::of(proptest::collection::vec(0..2u8, 0..2)),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(
                |(argv, report, minimum, timeout, env, env_from, network, format)| Knobs {
                    argv,
                    report,
                    minimum,
                    timeout,
                    env,
                    env_from,
                    network,
                    format,
                },
            )
    }

    fn build(k: &Knobs) -> Provider {
        let mut p = provider("p");
        p.command = Some(at(std::iter::once("run".to_owned())
            .chain(k.argv.iter().map(|x| format!("a{x}")))
            .collect()));
        p.report = k.report.map(|r| at(format!("report{r}.json")));
        p.minimum = k.minimum.map(at);
        p.timeout_ms = k.timeout.map(at);
        p.env = k.env.as_ref().map(|e| {
            e.iter()
                .map(|(n, v)| {
                    (
                        EnvName::parse(&format!("V{n}")).expect("valid"),
                        at(format!("{v}")),
                    )
                })
                .collect()
        });
        p.env_from = k.env_from.as_ref().map(|e| {
            let mut names: Vec<_> = e
                .iter()
                .map(|n| EnvName::parse(&format!("S{n}")).expect("valid"))
                .collect();
            names.sort();
            names.dedup();
            names.into_iter().map(at).collect()
        });
        p.network = k
            .network
            .map(|h| at(if h { Network::Host } else { Network::Private }));
        p.report_format = k.format.map(|f| {
            at(if f {
                ReportFormat::Tap
            } else {
                ReportFormat::Junit
            })
        });
        p
    }

    proptest! {
        #[test]
        fn the_fingerprint_changes_iff_a_component_changes(a in knobs(), b in knobs()) {
            let (fa, ma) = fingerprint_of(build(&a));
            let (fb, mb) = fingerprint_of(build(&b));
            prop_assert_eq!(ma == mb, fa == fb, "manifests equal: {}, fingerprints equal: {}", ma == mb, fa == fb);
        }
    }

    #[test]
    fn unset_and_empty_are_distinct() {
        let mut a = provider("p");
        a.env = None;
        let mut b = provider("p");
        b.env = Some(BTreeMap::new());
        assert_ne!(fingerprint_of(a).0, fingerprint_of(b).0);
        let mut a = provider("p");
        a.env_from = None;
        let mut b = provider("p");
        b.env_from = Some(Vec::new());
        assert_ne!(fingerprint_of(a).0, fingerprint_of(b).0);
    }

    #[test]
    fn a_wiring_change_invalidates_exactly_that_provider_and_its_dependents() {
        let build = |build_argv: &str| {
            let mut build = provider("build");
            build.command = Some(at(vec![build_argv.to_owned()]));
            let mut test = provider("test-suite");
            test.depends_on = Some(vec![at(pid("build"))]);
            let lint = provider("lint");
            let graph = seal(vec![build, test, lint], Vec::new());
            graph
                .fingerprints(&world(&graph))
                .expect("fingerprints")
                .providers
        };
        let before = build("make");
        let after = build("make-all");
        let changed: Vec<&ProviderId> = before.keys().filter(|k| before[*k] != after[*k]).collect();
        assert_eq!(changed, vec![&pid("build"), &pid("test-suite")]);
    }

    #[test]
    fn secrets_are_never_part_of_the_manifest() {
        let mut p = provider("p");
        p.env_from = Some(vec![at(EnvName::parse("API_TOKEN").expect("valid"))]);
        let (_, manifest) = fingerprint_of(p);
        assert_eq!(
            manifest.get("env_from"),
            Some(&Value::List(vec!["API_TOKEN".to_owned()]))
        );
    }

    #[test]
    fn inputs_digest_depends_on_paths_and_contents() {
        let d1 = Digest::of(b"one");
        let d2 = Digest::of(b"two");
        let a = inputs_digest([("a.txt", &d1), ("b.txt", &d2)]);
        assert_eq!(a.files, 2);
        assert_ne!(
            a.digest,
            inputs_digest([("a.txt", &d2), ("b.txt", &d1)]).digest
        );
        assert_ne!(
            a.digest,
            inputs_digest([("a.txt", &d1), ("c.txt", &d2)]).digest
        );
        assert_ne!(a.digest, inputs_digest([("a.txt", &d1)]).digest);
        // Length prefixes: moving a byte between path and content is seen.
        assert_ne!(
            inputs_digest([("ab", &d1)]).digest,
            inputs_digest([("a", &d1)]).digest
        );
        let _ = CapabilityName::test();
    }

    #[test]
    fn hex_round_trips() {
        let d = Digest::of(b"x");
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex("zz"), None);
    }
}
