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
//! 2 capability, 3 outputs (capability → receipt name), 4 repository, 5 repositories, 6 cwd, 7 argv,
//! 8 report, 9 report_format, 10 minimum, 11 timeout_ms, 12 env, 13 env_from
//! (names only, never values), 14 network, 15 project, 16 input_mode,
//! 17 critical_cases, 18 contract, 19 ci, 20 claims (the resolved claim
//! scope), 21 services (each service's wiring fingerprint), 22 depends_on
//! (each dependency's fingerprint, input-addressed as Nix derivations are),
//! 23 platform, 24 executable (resolved path and content digest, and `runs`: the
//! interpreters and `-c` script programs it starts, when there are any), 25 inputs
//! (the digest of exactly the files the provider reads), 26 setup (the sandbox setup of
//! the repository it runs in: its commands, cached directories and `setupInputs`, and what
//! it sees — a cached setup's key over its inputs' identities, an uncached one's whole
//! repository), 27 producer (for a discovery receiver, the fingerprint of the
//! `test-discovery` provider whose run writes its receipt; absent otherwise), 28 artifacts
//! (the files it hands to the providers that depend on it; absent when none), 29 catalog
//! (what the workspace catalog, `proofgraph.yaml`, says that can change this provider's
//! result and no other component binds, field by field — the application's projection,
//! [`World::catalog`]; absent when the world gives none).
//!
//! The *binding* (what `proofgraph hash` prints and external signers sign)
//! is SHA-256 over `"proofgraph/provider-binding" ‖ u32be(ENCODING_VERSION)
//! ‖ components`, the same component bytes as the fingerprint.
//!
//! Absent and empty are distinct values. A wiring change therefore changes
//! exactly that provider's fingerprint and, through components 22 and 27, the
//! fingerprints of the providers that depend on it or receive its discovery
//! receipt; nothing else.
//!
//! Version history: 1, the first; 2 added component 27 (`producer`) and the
//! service's executable (service component 11), and identifies an untracked
//! file by its git blob id. Within 2, the executable map gained the key `runs` (only for a
//! program that starts others): receipts of such programs went stale once — never matched
//! wrongly — and every other fingerprint kept its bytes. 3: each provider runs in a world
//! of its own (it sees exactly the files it binds and no other provider's writes), so a
//! receipt made in a shared sandbox is not evidence of that; component 28 (`artifacts`);
//! the setup component names what the setup saw; component 29 (`catalog`): the workspace
//! catalog is no longer an input file of the repository that holds it (editing its remote
//! cache, trusted keys or timeouts moved every fingerprint of that repository), only the
//! fields that can change a result enter, and they enter every provider they concern. The
//! notes of 3 were written when the world changed, but the constant was raised only with
//! the catalog's projection: receipts of encoding 2 went stale then, once.

use std::collections::BTreeMap;
use std::fmt;

use crate::adapter::Adapter;
use crate::graph::{EdgeKind, NodeId, ProviderNode, SealedGraph, ServiceNode};
use crate::id::{ProviderId, RepoId, ServiceId};

/// The version of the encoding above. Bump it on any change to the bytes.
pub const ENCODING_VERSION: u32 = 3;

/// The adapter and its protocol version, as fingerprinted: the version is
/// bumped when an adapter's meaning of "pass" changes, so old receipts stop
/// matching.
pub fn adapter_protocol(adapter: Adapter) -> &'static str {
    match adapter {
        Adapter::Command => "command/1",
        // 2: a run in which no test executed is never a pass; counts are strict.
        // 3: tests a runner replayed from its cache (go test's `(cached)`) are not a pass.
        Adapter::TestDiscovery => "test-discovery/3",
        Adapter::Playwright => "playwright/2",
        Adapter::ContractDigest => "contract-digest/1",
        Adapter::External => "external/1",
    }
}

fn hex_str(hex: &[u8; 64]) -> &str {
    std::str::from_utf8(hex).expect("hex digits are ASCII")
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

    /// Lowercase hex in a fixed buffer (no allocation).
    pub fn hex_array(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        // Cannot fail: the buffer is exactly twice as long as the digest.
        let _ = faster_hex::hex_encode(&self.0, &mut out);
        out
    }

    /// Parses 64 lowercase or uppercase hex digits.
    pub fn from_hex(text: &str) -> Option<Self> {
        decode_hex(text).map(Self)
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

/// Lowercase hex of bytes: the workspace's one hex encoder (`faster-hex`, which gix uses
/// too); every digest, key id and escape is written through it.
pub fn hex(bytes: &[u8]) -> String {
    faster_hex::hex_string(bytes)
}

/// Exactly `2 * N` hex digits (either case) as `N` bytes: the one hex decoder.
pub fn decode_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    faster_hex::hex_decode(text.as_bytes(), &mut out).ok()?;
    Some(out)
}

/// A provider's fingerprint.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(pub Digest);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Fingerprint {
    /// Parses 64 hex digits, as receipts and `hash` write a fingerprint.
    pub fn from_hex(text: &str) -> Option<Self> {
        Digest::from_hex(text).map(Self)
    }
}

/// Written as lowercase hex (the receipt's `fingerprint` field).
impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hex = self.0.hex_array();
        // Cannot fail: hex digits are ASCII.
        serializer.serialize_str(std::str::from_utf8(&hex).unwrap_or_default())
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::from_hex(&text)
            .ok_or_else(|| serde::de::Error::custom("a fingerprint is 64 hex digits"))
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
    /// What else it is known to run, sorted by path: a script's interpreters (`#!`), and
    /// the programs a shell's `-c` script names (each with no `runs` of its own).
    pub runs: Vec<Executable>,
}

impl Executable {
    /// `runs` as fingerprinted: one `path digest` line each, absent when empty.
    fn runs_text(&self) -> Option<String> {
        (!self.runs.is_empty()).then(|| {
            self.runs
                .iter()
                .map(|r| format!("{} {}", r.path, r.digest.to_hex()))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }
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
    /// Each service's executable, when it was found.
    pub service_executables: BTreeMap<ServiceId, Executable>,
    /// Each repository's whole input digest (a service's code is its
    /// repository's code).
    pub repositories: BTreeMap<RepoId, Inputs>,
    /// Each repository's sandbox setup (its commands and cached
    /// directories, one entry each), when it declares one.
    pub setups: BTreeMap<RepoId, Vec<String>>,
    /// Each provider's part of the workspace catalog: the fields that can change its
    /// result and no other component binds (`hostPaths`, the paths of the repositories
    /// its world holds, the setup of those it does not run in), each by a name
    /// (`repositories.api.path`) and its canonical text, so that `explain` names the
    /// field that changed. A provider missing here has the component absent.
    pub catalog: BTreeMap<ProviderId, BTreeMap<String, String>>,
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

impl Fingerprints {
    /// The fingerprint a receipt that `provider`'s run writes under `under` is bound to:
    /// the receiving provider's own when `under` is a declared provider (a discovery
    /// receiver, whose fingerprint includes its producer's), else `provider`'s. Every
    /// reader and writer of a receipt asks this, so that they agree.
    pub fn of_receipt(&self, provider: &ProviderId, under: &ProviderId) -> Option<&Fingerprint> {
        self.providers
            .get(under)
            .or_else(|| self.providers.get(provider))
    }
}

/// What fingerprinting one provider may read: the world, the fingerprints
/// already computed (by node), the services' and the platform's label.
#[derive(Clone, Copy)]
struct Known<'a> {
    world: &'a World,
    done: Done<'a>,
    services: &'a BTreeMap<ServiceId, Fingerprint>,
    platform: &'a str,
}

/// The fingerprints of providers computed before the one being encoded (it reads only
/// those of its `dependsOn` providers).
#[derive(Clone, Copy)]
enum Done<'a> {
    /// By node, while every fingerprint is being computed.
    ByNode(&'a [Option<Fingerprint>]),
    /// From the finished fingerprints, by provider id (one provider's binding or manifest).
    Computed(&'a Fingerprints),
}

impl Done<'_> {
    fn get(self, node: NodeId, id: &ProviderId) -> Option<Fingerprint> {
        match self {
            Done::ByNode(table) => table.get(node.get()).copied().flatten(),
            Done::Computed(fingerprints) => fingerprints.providers.get(id).copied(),
        }
    }
}

/// Receives the components of a manifest in order. Two implementations: one
/// hashes them as they come (the fingerprint, no allocation per value), one
/// keeps them (the manifest stored with receipts, for `explain`).
trait Sink {
    fn absent(&mut self, tag: u8, name: &'static str);
    fn text(&mut self, tag: u8, name: &'static str, text: &str);
    fn number(&mut self, tag: u8, name: &'static str, n: u64);
    fn list<'a>(
        &mut self,
        tag: u8,
        name: &'static str,
        items: impl ExactSizeIterator<Item = &'a str>,
    );
    /// `entries` sorted by key.
    fn map<'a>(
        &mut self,
        tag: u8,
        name: &'static str,
        entries: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    );
}

/// Hashes components with the encoding in the module documentation.
struct Hashing {
    hasher: blake3::Hasher,
    buf: Vec<u8>,
}

impl Hashing {
    fn new(domain: &[u8]) -> Self {
        let mut hasher = blake3::Hasher::new();
        hasher.update(domain);
        hasher.update(&ENCODING_VERSION.to_be_bytes());
        Self {
            hasher,
            buf: Vec::with_capacity(512),
        }
    }

    fn put_str(&mut self, s: &str) {
        self.buf.extend_from_slice(&(s.len() as u64).to_be_bytes());
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Components are encoded into one buffer and hashed once at the end
    /// (one BLAKE3 update instead of one per component).
    fn flush(&mut self) {}

    fn finish(mut self) -> Fingerprint {
        self.hasher.update(&self.buf);
        self.buf.clear();
        Fingerprint(Digest(*self.hasher.finalize().as_bytes()))
    }

    /// The binding hash over the same component bytes (see [`Binding`]).
    fn binding(self) -> Binding {
        use sha2::Digest as _;
        let mut sha = sha2::Sha256::new();
        sha.update(b"proofgraph/provider-binding");
        sha.update(ENCODING_VERSION.to_be_bytes());
        sha.update(&self.buf);
        let sha256: [u8; 32] = sha.finalize().into();
        let fingerprint = self.finish();
        Binding {
            sha256,
            fingerprint,
        }
    }
}

/// A provider's binding: the SHA-256 over the same components as its
/// fingerprint (domain `proofgraph/provider-binding`), so that standard
/// in-toto tooling, which matches subjects by `sha256`, can produce and check
/// it. External signers sign this; receipts carry both digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding {
    /// SHA-256 over the encoded components.
    pub sha256: [u8; 32],
    /// The BLAKE3 fingerprint over the same components.
    pub fingerprint: Fingerprint,
}

impl Binding {
    /// The SHA-256 as lowercase hex, as `proofgraph hash` prints it.
    pub fn sha256_hex(&self) -> String {
        hex(&self.sha256)
    }
}

impl Sink for Hashing {
    fn absent(&mut self, tag: u8, _: &'static str) {
        self.buf.extend_from_slice(&[tag, 0]);
        self.flush();
    }
    fn text(&mut self, tag: u8, _: &'static str, text: &str) {
        self.buf.extend_from_slice(&[tag, 1]);
        self.put_str(text);
        self.flush();
    }
    fn number(&mut self, tag: u8, _: &'static str, n: u64) {
        self.buf.extend_from_slice(&[tag, 2]);
        self.buf.extend_from_slice(&n.to_be_bytes());
        self.flush();
    }
    fn list<'a>(
        &mut self,
        tag: u8,
        _: &'static str,
        items: impl ExactSizeIterator<Item = &'a str>,
    ) {
        self.buf.extend_from_slice(&[tag, 3]);
        self.buf
            .extend_from_slice(&(items.len() as u64).to_be_bytes());
        for item in items {
            self.put_str(item);
        }
        self.flush();
    }
    fn map<'a>(
        &mut self,
        tag: u8,
        _: &'static str,
        entries: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        self.buf.extend_from_slice(&[tag, 4]);
        self.buf
            .extend_from_slice(&(entries.len() as u64).to_be_bytes());
        for (k, v) in entries {
            self.put_str(k);
            self.put_str(v);
        }
        self.flush();
    }
}

/// Keeps components as owned values.
#[derive(Default)]
struct Collecting {
    components: Vec<(u8, &'static str, Value)>,
}

impl Sink for Collecting {
    fn absent(&mut self, tag: u8, name: &'static str) {
        self.components.push((tag, name, Value::Absent));
    }
    fn text(&mut self, tag: u8, name: &'static str, text: &str) {
        self.components
            .push((tag, name, Value::Text(text.to_owned())));
    }
    fn number(&mut self, tag: u8, name: &'static str, n: u64) {
        self.components.push((tag, name, Value::Number(n)));
    }
    fn list<'a>(
        &mut self,
        tag: u8,
        name: &'static str,
        items: impl ExactSizeIterator<Item = &'a str>,
    ) {
        self.components
            .push((tag, name, Value::List(items.map(str::to_owned).collect())));
    }
    fn map<'a>(
        &mut self,
        tag: u8,
        name: &'static str,
        entries: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        let map = entries.map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        self.components.push((tag, name, Value::Map(map)));
    }
}

/// Hashes and keeps the same components (a binding and a manifest in one walk).
struct Both {
    hashing: Hashing,
    collecting: Collecting,
}

impl Sink for Both {
    fn absent(&mut self, tag: u8, name: &'static str) {
        self.hashing.absent(tag, name);
        self.collecting.absent(tag, name);
    }
    fn text(&mut self, tag: u8, name: &'static str, text: &str) {
        self.hashing.text(tag, name, text);
        self.collecting.text(tag, name, text);
    }
    fn number(&mut self, tag: u8, name: &'static str, n: u64) {
        self.hashing.number(tag, name, n);
        self.collecting.number(tag, name, n);
    }
    fn list<'a>(
        &mut self,
        tag: u8,
        name: &'static str,
        items: impl ExactSizeIterator<Item = &'a str>,
    ) {
        let items: Vec<&str> = items.collect();
        self.hashing.list(tag, name, items.iter().copied());
        self.collecting.list(tag, name, items.iter().copied());
    }
    fn map<'a>(
        &mut self,
        tag: u8,
        name: &'static str,
        entries: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        let entries: Vec<(&str, &str)> = entries.collect();
        self.hashing.map(tag, name, entries.iter().copied());
        self.collecting.map(tag, name, entries.iter().copied());
    }
}

fn opt_text(sink: &mut impl Sink, tag: u8, name: &'static str, value: Option<&str>) {
    match value {
        Some(v) => sink.text(tag, name, v),
        None => sink.absent(tag, name),
    }
}

fn opt_list<'a>(
    sink: &mut impl Sink,
    tag: u8,
    name: &'static str,
    items: Option<impl ExactSizeIterator<Item = &'a str>>,
) {
    match items {
        Some(items) => sink.list(tag, name, items),
        None => sink.absent(tag, name),
    }
}

impl SealedGraph {
    /// Computes every provider's fingerprint, dependencies first, on one thread.
    pub fn fingerprints(&self, world: &World) -> Result<Fingerprints, FingerprintError> {
        self.fingerprints_with(world, std::num::NonZeroUsize::MIN)
    }

    /// Computes every provider's fingerprint with up to `threads` threads:
    /// providers are grouped by depth in the `dependsOn` graph, and each
    /// group is split across the threads (a provider's fingerprint needs only
    /// those of shallower providers). The result does not depend on
    /// `threads`.
    pub fn fingerprints_with(
        &self,
        world: &World,
        threads: std::num::NonZeroUsize,
    ) -> Result<Fingerprints, FingerprintError> {
        let services: BTreeMap<ServiceId, Fingerprint> = self
            .services
            .iter()
            .map(|(id, node)| {
                let service = self
                    .node(*node)
                    .service()
                    .expect("service ids map to service nodes");
                (id.clone(), service_fingerprint(service, world))
            })
            .collect();
        let platform = format!("{}/{}", world.platform.os, world.platform.arch);
        let mut depth: Vec<usize> = vec![0; self.len()];
        let mut levels: Vec<Vec<NodeId>> = Vec::new();
        for node in self.order() {
            if self.node(*node).provider().is_none() {
                continue;
            }
            let d = self
                .incoming(*node)
                .iter()
                .filter(|(_, kind)| matches!(kind, EdgeKind::DependsOn | EdgeKind::Discovery))
                .map(|(from, _)| depth[from.get()] + 1)
                .max()
                .unwrap_or(0);
            depth[node.get()] = d;
            if levels.len() <= d {
                levels.resize_with(d + 1, Vec::new);
            }
            levels[d].push(*node);
        }
        let mut by_node: Vec<Option<Fingerprint>> = vec![None; self.len()];
        let compute = |nodes: &[NodeId],
                       done: &[Option<Fingerprint>]|
         -> Result<Vec<(NodeId, Fingerprint)>, FingerprintError> {
            let mut out = Vec::with_capacity(nodes.len());
            for node in nodes {
                let provider = self.node(*node).provider().expect("levels hold providers");
                let mut sink = Hashing::new(b"proofgraph/provider-fingerprint");
                let known = Known {
                    world,
                    done: Done::ByNode(done),
                    services: &services,
                    platform: &platform,
                };
                self.visit(*node, provider, &known, &mut sink)?;
                out.push((*node, sink.finish()));
            }
            Ok(out)
        };
        // One pool of `threads` for every level wide enough to share (made when the first
        // one comes); a pool that cannot be made leaves the work on this thread.
        let mut pool: Option<Option<rayon::ThreadPool>> = None;
        for level in &levels {
            let wide = threads.get() > 1 && level.len() >= 64;
            let pool = if wide {
                pool.get_or_insert_with(|| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(threads.get())
                        .build()
                        .ok()
                })
                .as_ref()
            } else {
                None
            };
            let results: Vec<Result<Vec<(NodeId, Fingerprint)>, FingerprintError>> = match pool {
                Some(pool) => {
                    use rayon::prelude::*;
                    let chunk = level.len().div_ceil(threads.get());
                    let done = &by_node;
                    pool.install(|| {
                        level
                            .par_chunks(chunk)
                            .map(|nodes| compute(nodes, done))
                            .collect()
                    })
                }
                None => vec![compute(level, &by_node)],
            };
            for result in results {
                for (node, fp) in result? {
                    by_node[node.get()] = Some(fp);
                }
            }
        }
        let providers = self
            .providers
            .iter()
            .filter_map(|(id, node)| by_node[node.get()].map(|fp| (id.clone(), fp)))
            .collect();
        Ok(Fingerprints {
            providers,
            services,
        })
    }

    /// A provider's binding (SHA-256 and fingerprint over the same
    /// components), given the fingerprints of its dependencies and services.
    pub fn binding(
        &self,
        id: &ProviderId,
        world: &World,
        fingerprints: &Fingerprints,
    ) -> Result<Binding, FingerprintError> {
        let sink = Hashing::new(b"proofgraph/provider-fingerprint");
        Ok(self.walk(id, world, fingerprints, sink)?.binding())
    }

    /// A provider's manifest, given the fingerprints already computed for its
    /// dependencies and services (from [`SealedGraph::fingerprints`]).
    pub fn manifest(
        &self,
        id: &ProviderId,
        world: &World,
        fingerprints: &Fingerprints,
    ) -> Result<Manifest, FingerprintError> {
        let sink = self.walk(id, world, fingerprints, Collecting::default())?;
        Ok(Manifest {
            components: sink.components,
        })
    }

    /// [`SealedGraph::binding`] and [`SealedGraph::manifest`] from one walk of the
    /// provider's wiring (what a receipt records).
    pub fn binding_and_manifest(
        &self,
        id: &ProviderId,
        world: &World,
        fingerprints: &Fingerprints,
    ) -> Result<(Binding, Manifest), FingerprintError> {
        let both = Both {
            hashing: Hashing::new(b"proofgraph/provider-fingerprint"),
            collecting: Collecting::default(),
        };
        let both = self.walk(id, world, fingerprints, both)?;
        Ok((
            both.hashing.binding(),
            Manifest {
                components: both.collecting.components,
            },
        ))
    }

    /// Feeds one provider's components, with the fingerprints already computed for its
    /// dependencies and services, to `sink`.
    fn walk<S: Sink>(
        &self,
        id: &ProviderId,
        world: &World,
        fingerprints: &Fingerprints,
        mut sink: S,
    ) -> Result<S, FingerprintError> {
        let node = self
            .provider(id)
            .ok_or_else(|| FingerprintError::MissingInputs(id.clone()))?;
        let provider = self
            .node(node)
            .provider()
            .expect("provider ids map to provider nodes");
        let platform = format!("{}/{}", world.platform.os, world.platform.arch);
        let known = Known {
            world,
            done: Done::Computed(fingerprints),
            services: &fingerprints.services,
            platform: &platform,
        };
        self.visit(node, provider, &known, &mut sink)?;
        Ok(sink)
    }

    fn visit(
        &self,
        node: NodeId,
        p: &ProviderNode,
        known: &Known<'_>,
        sink: &mut impl Sink,
    ) -> Result<(), FingerprintError> {
        let Known {
            world,
            done,
            services: services_done,
            platform,
        } = *known;
        let spec = &p.spec;
        let id = &spec.id.value;
        let inputs = world
            .inputs
            .get(id)
            .ok_or_else(|| FingerprintError::MissingInputs(id.clone()))?;
        sink.text(1, "adapter", adapter_protocol(spec.adapter.value));
        sink.text(2, "capability", p.capability.as_str());
        sink.map(
            3,
            "outputs",
            p.outputs
                .iter()
                .map(|o| (o.capability.as_str(), o.under.as_str())),
        );
        opt_text(
            sink,
            4,
            "repository",
            p.runs_in.as_ref().map(RepoId::as_str),
        );
        sink.list(5, "repositories", p.repositories.iter().map(RepoId::as_str));
        sink.text(6, "cwd", ".");
        opt_list(
            sink,
            7,
            "argv",
            spec.command
                .as_ref()
                .map(|c| c.value.iter().map(String::as_str)),
        );
        opt_text(
            sink,
            8,
            "report",
            spec.report.as_ref().map(|r| r.value.as_str()),
        );
        opt_text(
            sink,
            9,
            "report_format",
            spec.report_format.as_ref().map(|f| f.value.as_str()),
        );
        match &spec.minimum {
            Some(m) => sink.number(10, "minimum", m.value),
            None => sink.absent(10, "minimum"),
        }
        match &spec.timeout_ms {
            Some(t) => sink.number(11, "timeout_ms", t.value),
            None => sink.absent(11, "timeout_ms"),
        }
        match &spec.env {
            Some(env) => sink.map(
                12,
                "env",
                env.iter().map(|(k, v)| (k.as_str(), v.value.as_str())),
            ),
            None => sink.absent(12, "env"),
        }
        opt_list(
            sink,
            13,
            "env_from",
            spec.env_from
                .as_ref()
                .map(|e| e.iter().map(|n| n.value.as_str())),
        );
        opt_text(
            sink,
            14,
            "network",
            spec.network.as_ref().map(|n| n.value.as_str()),
        );
        opt_text(
            sink,
            15,
            "project",
            spec.project.as_ref().map(|p| p.value.as_str()),
        );
        opt_text(
            sink,
            16,
            "input_mode",
            spec.input_mode.as_ref().map(|m| m.value.as_str()),
        );
        opt_list(
            sink,
            17,
            "critical_cases",
            spec.critical_cases
                .as_ref()
                .map(|c| c.iter().map(|s| s.value.as_str())),
        );
        match &spec.contract {
            Some(c) => sink.map(
                18,
                "contract",
                c.iter().map(|(k, v)| (k.as_str(), v.value.as_str())),
            ),
            None => sink.absent(18, "contract"),
        }
        match &spec.ci {
            Some(c) => sink.map(
                19,
                "ci",
                [
                    ("issuer", c.issuer.value.as_str()),
                    ("public_key", c.public_key.value.trim()),
                ]
                .into_iter(),
            ),
            None => sink.absent(19, "ci"),
        }
        sink.list(20, "claims", p.claims.iter().map(|c| c.as_str()));
        let mut services: Vec<(&str, [u8; 64])> = self
            .services_of(node)
            .into_iter()
            .filter_map(|s| self.node(s).service())
            .map(|s| {
                (
                    s.spec.id.value.as_str(),
                    services_done
                        .get(&s.spec.id.value)
                        .map_or([b'0'; 64], |f| f.0.hex_array()),
                )
            })
            .collect();
        services.sort();
        sink.map(
            21,
            "services",
            services.iter().map(|(k, v)| (*k, hex_str(v))),
        );
        let mut deps: Vec<(&str, [u8; 64])> = self
            .incoming(node)
            .into_iter()
            .filter(|(_, kind)| *kind == EdgeKind::DependsOn)
            .filter_map(|(from, _)| {
                let dep = self.node(from).provider()?;
                Some((
                    dep.spec.id.value.as_str(),
                    done.get(from, &dep.spec.id.value)
                        .map_or([b'0'; 64], |f| f.0.hex_array()),
                ))
            })
            .collect();
        deps.sort();
        deps.dedup();
        sink.map(22, "depends_on", deps.iter().map(|(k, v)| (*k, hex_str(v))));
        sink.text(23, "platform", platform);
        match world.executables.get(id) {
            Some(e) => {
                let digest = e.digest.hex_array();
                let runs = e.runs_text();
                let mut entries = vec![("digest", hex_str(&digest)), ("path", e.path.as_str())];
                if let Some(runs) = &runs {
                    entries.push(("runs", runs.as_str()));
                }
                sink.map(24, "executable", entries.into_iter());
            }
            None => sink.absent(24, "executable"),
        }
        let digest = inputs.digest.hex_array();
        let files = inputs.files.to_string();
        sink.map(
            25,
            "inputs",
            [("digest", hex_str(&digest)), ("files", files.as_str())].into_iter(),
        );
        match p.runs_in.as_ref().and_then(|r| world.setups.get(r)) {
            Some(setup) => sink.list(26, "setup", setup.iter().map(String::as_str)),
            None => sink.absent(26, "setup"),
        }
        let producers: Vec<(&str, [u8; 64])> = self
            .producers_of(node)
            .into_iter()
            .filter_map(|from| {
                let producer = self.node(from).provider()?;
                Some((
                    producer.spec.id.value.as_str(),
                    done.get(from, &producer.spec.id.value)
                        .map_or([b'0'; 64], |f| f.0.hex_array()),
                ))
            })
            .collect();
        if producers.is_empty() {
            sink.absent(27, "producer");
        } else {
            sink.map(
                27,
                "producer",
                producers.iter().map(|(k, v)| (*k, hex_str(v))),
            );
        }
        opt_list(
            sink,
            28,
            "artifacts",
            spec.artifacts
                .as_ref()
                .map(|a| a.iter().map(|s| s.value.as_str())),
        );
        match world.catalog.get(id) {
            Some(fields) => sink.map(
                29,
                "catalog",
                fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            ),
            None => sink.absent(29, "catalog"),
        }
        Ok(())
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
            Value::opt_text(
                readiness
                    .and_then(|r| r.url.as_ref())
                    .map(|u| u.value.as_str()),
            ),
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
        (
            11,
            "executable",
            world
                .service_executables
                .get(&spec.id.value)
                .map_or(Value::Absent, |e| {
                    let mut map = BTreeMap::from([
                        ("digest".to_owned(), e.digest.to_hex()),
                        ("path".to_owned(), e.path.clone()),
                    ]);
                    if let Some(runs) = e.runs_text() {
                        map.insert("runs".to_owned(), runs);
                    }
                    Value::Map(map)
                }),
        ),
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
    // Encoded into one buffer and hashed at once: BLAKE3 hashes a long input
    // many chunks at a time, where three small updates per file cannot be.
    let mut bytes = Vec::with_capacity(64 * 1024);
    bytes.extend_from_slice(b"proofgraph/inputs");
    bytes.extend_from_slice(&ENCODING_VERSION.to_be_bytes());
    let mut count = 0u64;
    for (path, digest) in files {
        bytes.extend_from_slice(&(path.len() as u64).to_be_bytes());
        bytes.extend_from_slice(path.as_bytes());
        bytes.extend_from_slice(&digest.0);
        count += 1;
    }
    Inputs {
        digest: Digest(*blake3::hash(&bytes).as_bytes()),
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
    use crate::testing::{at, pid, provider, seal};

    /// A world where every provider reads one file with a fixed digest.
    pub(crate) fn world(graph: &SealedGraph) -> World {
        let inputs = Inputs {
            digest: Digest::of(b"inputs"),
            files: 1,
        };
        World {
            platform: Platform {
                os: "linux".to_owned(),
                arch: "x86_64".to_owned(),
            },
            inputs: graph
                .providers()
                .map(|(id, _, _)| (id.clone(), inputs))
                .collect(),
            executables: BTreeMap::new(),
            service_executables: BTreeMap::new(),
            repositories: BTreeMap::from([(RepoId::root(), inputs)]),
            setups: BTreeMap::new(),
            catalog: BTreeMap::new(),
        }
    }

    fn fingerprint_of(p: Provider) -> (Fingerprint, Manifest) {
        let id = p.id.value.clone();
        let graph = seal(vec![p], Vec::new());
        let w = world(&graph);
        let fps = graph.fingerprints(&w).expect("fingerprints");
        let manifest = graph.manifest(&id, &w, &fps).expect("manifest");
        // One walk gives what the two separate ones give.
        let binding = graph.binding(&id, &w, &fps).expect("binding");
        assert_eq!(
            graph.binding_and_manifest(&id, &w, &fps).expect("both"),
            (binding, manifest.clone())
        );
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
            "a0d9c5d96df3d95881c17be9dd69f001477f9445ce5ee9383ab22ca752c9fd4a"
        );
    }

    /// The same for components 28 (`artifacts`) and 29 (`catalog`), and each of them moves
    /// the fingerprint: an entry of the catalog by its name and by its value.
    #[test]
    fn snapshot_of_a_provider_with_artifacts_and_a_catalog() {
        let mut p = Provider::new(pid("build"), Adapter::Command);
        p.command = Some(at(vec!["make".to_owned()]));
        p.artifacts = Some(vec![at("dist/**".to_owned())]);
        let graph = seal(vec![p], Vec::new());
        let id = pid("build");
        let mut w = world(&graph);
        let of = |w: &World| graph.fingerprints(w).expect("fingerprints").providers[&id];
        let without = of(&w);
        w.catalog.insert(
            id.clone(),
            BTreeMap::from([
                ("hostPaths".to_owned(), r#"["/opt/tool"]"#.to_owned()),
                ("repositories.root.path".to_owned(), ".".to_owned()),
            ]),
        );
        let fp = of(&w);
        assert_ne!(fp, without);
        let manifest = graph
            .manifest(&id, &w, &graph.fingerprints(&w).expect("fingerprints"))
            .expect("manifest");
        assert_eq!(manifest.fingerprint(), fp);
        assert_eq!(
            manifest.get("artifacts"),
            Some(&Value::List(vec!["dist/**".to_owned()]))
        );
        assert_eq!(
            fp.to_string(),
            "fd2a5577bcca4ad53de2902d1939c49ddbafbdb2b6fafb30506a60f390a32113"
        );
        let entries = w.catalog[&id].clone();
        for (key, value) in &entries {
            let mut renamed = entries.clone();
            renamed.remove(key);
            renamed.insert(format!("{key}x"), value.clone());
            let mut revalued = entries.clone();
            revalued.insert(key.clone(), format!("{value}x"));
            for changed in [renamed, revalued] {
                let mut other = w.clone();
                other.catalog.insert(id.clone(), changed);
                assert_ne!(of(&other), fp, "{key}");
            }
        }
        // An empty catalog is not an absent one.
        w.catalog.insert(id.clone(), BTreeMap::new());
        assert_ne!(of(&w), without);
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
        #![proptest_config(crate::testing::beside_source(proptest::test_runner::Config::default()))]
        #[test]
        fn the_fingerprint_changes_iff_a_component_changes(a in knobs(), b in knobs()) {
            let (fa, ma) = fingerprint_of(build(&a));
            let (fb, mb) = fingerprint_of(build(&b));
            prop_assert_eq!(ma == mb, fa == fb, "manifests equal: {}, fingerprints equal: {}", ma == mb, fa == fb);
        }
    }

    proptest! {
        #![proptest_config(crate::testing::beside_source(proptest::test_runner::Config::default()))]
        #[test]
        fn threads_do_not_change_fingerprints(g in crate::testing::random_graph(300), threads in 2..5usize) {
            let graph = g.seal();
            let w = world(&graph);
            let one = graph.fingerprints(&w).expect("fingerprints");
            let many = graph.fingerprints_with(&w, std::num::NonZeroUsize::new(threads).expect("non-zero")).expect("fingerprints");
            prop_assert_eq!(one, many);
        }
    }

    #[test]
    fn the_binding_covers_the_same_components_as_the_fingerprint() {
        let graph = seal(vec![provider("a"), provider("b")], Vec::new());
        let w = world(&graph);
        let fps = graph.fingerprints(&w).expect("fingerprints");
        let a = graph.binding(&pid("a"), &w, &fps).expect("binding");
        let b = graph.binding(&pid("b"), &w, &fps).expect("binding");
        assert_eq!(a.fingerprint, fps.providers[&pid("a")]);
        // The receipt names (component 3, `outputs`) differ, so the bindings do.
        assert_ne!(a.sha256, b.sha256);
        let mut other = provider("a");
        other.timeout_ms = Some(at(5));
        let graph2 = seal(vec![other], Vec::new());
        let w2 = world(&graph2);
        let fps2 = graph2.fingerprints(&w2).expect("fingerprints");
        assert_ne!(
            graph2
                .binding(&pid("a"), &w2, &fps2)
                .expect("binding")
                .sha256,
            a.sha256
        );
        assert_eq!(a.sha256_hex().len(), 64);
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

    /// A producer and its declared discovery receiver (same command, another report).
    fn producer_and_receiver(producer_argv: &str, receiver_minimum: u64) -> SealedGraph {
        let mut producer = Provider::new(pid("test-web"), Adapter::TestDiscovery);
        producer.capability = Some(at(CapabilityName::test()));
        producer.command = Some(at(vec![producer_argv.to_owned()]));
        producer.report = Some(at("web.tap".to_owned()));
        producer.discovery_provider = Some(at(pid("discovery-web")));
        let mut receiver = Provider::new(pid("discovery-web"), Adapter::TestDiscovery);
        receiver.capability = Some(at(CapabilityName::discovery()));
        receiver.command = Some(at(vec!["other".to_owned()]));
        receiver.report = Some(at("web.tap".to_owned()));
        receiver.minimum = Some(at(receiver_minimum));
        receiver.env_from = Some(vec![at(EnvName::parse("ONLY_HERE").expect("valid"))]);
        let mut after = provider("after");
        after.depends_on = Some(vec![at(pid("discovery-web"))]);
        seal(vec![producer, receiver, after], Vec::new())
    }

    #[test]
    fn a_receivers_fingerprint_binds_its_producers_and_its_own_wiring() {
        let fps = |argv: &str, minimum: u64| {
            let graph = producer_and_receiver(argv, minimum);
            graph
                .fingerprints(&world(&graph))
                .expect("fingerprints")
                .providers
        };
        let base = fps("sh", 3);
        let producer_changed = fps("bash", 3);
        let receiver_changed = fps("sh", 9);
        let changed = |a: &BTreeMap<ProviderId, Fingerprint>,
                       b: &BTreeMap<ProviderId, Fingerprint>| {
            a.keys()
                .filter(|k| a[*k] != b[*k])
                .cloned()
                .collect::<Vec<_>>()
        };
        // Depending on the receiver is depending on its producer too.
        assert_eq!(
            changed(&base, &producer_changed),
            vec![pid("after"), pid("discovery-web"), pid("test-web")]
        );
        assert_eq!(
            changed(&base, &receiver_changed),
            vec![pid("after"), pid("discovery-web")]
        );
        let graph = producer_and_receiver("sh", 3);
        let receiver = graph.provider(&pid("discovery-web")).expect("receiver");
        let producer = graph.provider(&pid("test-web")).expect("producer");
        assert_eq!(graph.producers_of(receiver), vec![producer]);
        let w = world(&graph);
        let all = graph.fingerprints(&w).expect("fingerprints");
        let manifest = graph
            .manifest(&pid("discovery-web"), &w, &all)
            .expect("manifest");
        assert_eq!(
            manifest.get("producer"),
            Some(&Value::Map(BTreeMap::from([(
                "test-web".to_owned(),
                all.providers[&pid("test-web")].to_string()
            )])))
        );
        // The receipt the producer's run writes under the receiver is the receiver's.
        assert_eq!(
            all.of_receipt(&pid("test-web"), &pid("discovery-web")),
            all.providers.get(&pid("discovery-web"))
        );
        assert_eq!(
            all.of_receipt(&pid("test-web"), &pid("discovery")),
            all.providers.get(&pid("test-web"))
        );
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
        assert_eq!(Digest::from_hex(&d.to_hex().to_uppercase()), Some(d));
        assert_eq!(Digest::from_hex(&format!("{}g", &d.to_hex()[1..])), None);
        assert_eq!(Digest::from_hex(&format!("{} ", &d.to_hex()[1..])), None);
        assert_eq!(Digest::from_hex(&d.to_hex()[2..]), None);
        assert_eq!(decode_hex::<2>("00fF"), Some([0x00, 0xff]));
        assert_eq!(decode_hex::<2>("00f"), None);
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(
            std::str::from_utf8(&d.hex_array()).ok(),
            Some(d.to_hex().as_str())
        );
    }
}
