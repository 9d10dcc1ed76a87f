//! The provider graph: build it from a change's model, then seal it.
//!
//! Nodes are providers, services and readiness probes. Edges:
//! - `dependsOn`: the dependency before the dependent;
//! - `discovery`: a `test-discovery` provider before the declared provider
//!   that receives its discovery receipt (so the receiver's identical
//!   command is executed once and reused);
//! - `starts`: a service before its readiness probe;
//! - `ready`: a probe before every provider that needs its service.
//!
//! [`GraphBuilder::seal`] runs preflight and returns either every finding or a
//! [`SealedGraph`], the only form that can be scheduled or fingerprinted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::adapter::Adapter;
use crate::id::{CapabilityName, ClaimId, ProviderId, RepoId, ResourceName, ServiceId};
use crate::model::{Claim, ClaimScope, Provider, Service};
use crate::preflight::{self, Finding};
use crate::resource;

/// A node's index in a sealed graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub(crate) fn index(self) -> NodeIndex<u32> {
        NodeIndex::new(self.0 as usize)
    }

    pub(crate) fn from_index(index: NodeIndex<u32>) -> Self {
        Self(u32::try_from(index.index()).expect("graphs have fewer than 2^32 nodes"))
    }

    /// The index as a number (stable within one sealed graph).
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// Why one node comes before another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// `dependsOn`: the dependency runs first.
    DependsOn,
    /// A `test-discovery` provider sends its discovery receipt to a declared receiver.
    Discovery,
    /// A service starts before its probe polls it.
    Starts,
    /// A probe observes the service ready before a provider that needs it runs.
    Ready,
}

impl EdgeKind {
    /// The label used in pictures and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::DependsOn => "dependsOn",
            EdgeKind::Discovery => "discovery",
            EdgeKind::Starts => "starts",
            EdgeKind::Ready => "ready",
        }
    }
}

/// A receipt one run of a provider writes: which capability, under which
/// provider name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Output {
    /// The capability vouched for.
    pub capability: CapabilityName,
    /// The provider name the receipt is stored under.
    pub under: ProviderId,
}

/// A provider, resolved against the workspace and the claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderNode {
    /// The provider as declared.
    pub spec: Provider,
    /// The file that declares it.
    pub file: Arc<str>,
    /// The capability it proves (its `capability`, else its name).
    pub capability: CapabilityName,
    /// The repository its command runs in, if it runs one.
    pub runs_in: Option<RepoId>,
    /// The repositories it belongs to (for claim scoping).
    pub repositories: BTreeSet<RepoId>,
    /// The resources it holds while running (declared, else defaults).
    pub resources: Vec<ResourceName>,
    /// The claims it vouches for, resolved from its scope.
    pub claims: Vec<ClaimId>,
    /// The receipts one run writes.
    pub outputs: Vec<Output>,
}

/// A service, resolved against the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceNode {
    /// The service as declared.
    pub spec: Service,
    /// The file that declares it.
    pub file: Arc<str>,
    /// The repository it runs in.
    pub runs_in: Option<RepoId>,
    /// The literal port of its readiness URL.
    pub port: Option<u16>,
    /// The resources it holds while running (`port:<port>`).
    pub resources: Vec<ResourceName>,
}

/// A service's readiness probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeNode {
    /// The service it probes.
    pub service: ServiceId,
}

/// What a node is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// A provider.
    Provider(Box<ProviderNode>),
    /// A service.
    Service(Box<ServiceNode>),
    /// A readiness probe.
    Probe(ProbeNode),
}

impl NodeKind {
    /// `provider`, `service` or `probe`.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeKind::Provider(_) => "provider",
            NodeKind::Service(_) => "service",
            NodeKind::Probe(_) => "probe",
        }
    }
}

/// A node: its display name and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `test`, `service:web`, `probe:web`.
    pub name: String,
    /// What it is.
    pub kind: NodeKind,
}

impl Node {
    /// The provider, if this is one.
    pub fn provider(&self) -> Option<&ProviderNode> {
        match &self.kind {
            NodeKind::Provider(p) => Some(p),
            _ => None,
        }
    }

    /// The service, if this is one.
    pub fn service(&self) -> Option<&ServiceNode> {
        match &self.kind {
            NodeKind::Service(s) => Some(s),
            _ => None,
        }
    }

    /// The resources the node holds while it runs.
    pub fn resources(&self) -> &[ResourceName] {
        match &self.kind {
            NodeKind::Provider(p) => &p.resources,
            NodeKind::Service(s) => &s.resources,
            NodeKind::Probe(_) => &[],
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
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

/// A graph being built; [`GraphBuilder::seal`] validates it.
#[derive(Debug, Clone, Default)]
pub struct GraphBuilder {
    pub(crate) repositories: Repositories,
    pub(crate) claims: Vec<Claim>,
    pub(crate) providers: BTreeMap<ProviderId, (Provider, Arc<str>)>,
    pub(crate) services: BTreeMap<ServiceId, (Service, Arc<str>)>,
}

impl GraphBuilder {
    /// A builder for a workspace with these repositories.
    pub fn new(repositories: Repositories) -> Self {
        Self {
            repositories,
            ..Self::default()
        }
    }

    /// Adds the change's claims.
    pub fn claims(&mut self, claims: impl IntoIterator<Item = Claim>) -> &mut Self {
        self.claims.extend(claims);
        self
    }

    /// Adds a provider declared in `file`.
    pub fn provider(&mut self, provider: Provider, file: Arc<str>) -> &mut Self {
        self.providers
            .insert(provider.id.value.clone(), (provider, file));
        self
    }

    /// Adds a service declared in `file`.
    pub fn service(&mut self, service: Service, file: Arc<str>) -> &mut Self {
        self.services
            .insert(service.id.value.clone(), (service, file));
        self
    }

    /// Validates the graph (preflight) and seals it. Returns every finding,
    /// sorted by file position, when anything is wrong.
    pub fn seal(self) -> Result<SealedGraph, Vec<Finding>> {
        let findings = preflight::check(&self);
        if !findings.is_empty() {
            return Err(findings);
        }
        Ok(SealedGraph::assemble(self))
    }
}

/// A validated graph: acyclic, every reference resolved.
#[derive(Debug, Clone)]
pub struct SealedGraph {
    pub(crate) graph: DiGraph<Node, EdgeKind, u32>,
    pub(crate) order: Vec<NodeId>,
    pub(crate) providers: BTreeMap<ProviderId, NodeId>,
    pub(crate) services: BTreeMap<ServiceId, NodeId>,
    pub(crate) probes: BTreeMap<ServiceId, NodeId>,
    pub(crate) claims: Vec<Claim>,
}

impl SealedGraph {
    fn assemble(builder: GraphBuilder) -> Self {
        let GraphBuilder {
            repositories,
            claims,
            providers,
            services,
        } = builder;
        let mut graph: DiGraph<Node, EdgeKind, u32> = DiGraph::default();
        let mut service_ids = BTreeMap::new();
        let mut probe_ids = BTreeMap::new();
        for (id, (spec, file)) in services {
            let runs_in = spec
                .repository
                .as_ref()
                .map(|r| r.value.clone())
                .or_else(|| repositories.default().cloned());
            let port = spec
                .readiness
                .as_ref()
                .and_then(|r| r.url.as_ref())
                .and_then(|u| preflight::literal_port(&u.value).ok());
            let resources = port
                .map(|p| {
                    ResourceName::parse(&format!("port:{p}")).expect("a port is a valid parameter")
                })
                .into_iter()
                .collect();
            let service = graph.add_node(Node {
                name: format!("service:{id}"),
                kind: NodeKind::Service(Box::new(ServiceNode {
                    spec,
                    file,
                    runs_in,
                    port,
                    resources,
                })),
            });
            let probe = graph.add_node(Node {
                name: format!("probe:{id}"),
                kind: NodeKind::Probe(ProbeNode {
                    service: id.clone(),
                }),
            });
            graph.add_edge(service, probe, EdgeKind::Starts);
            service_ids.insert(id.clone(), NodeId::from_index(service));
            probe_ids.insert(id, NodeId::from_index(probe));
        }
        let mut provider_ids = BTreeMap::new();
        let index = ClaimIndex::new(&claims);
        for (id, (spec, file)) in providers {
            let node = resolve_provider(spec, file, &repositories, &index);
            let index = graph.add_node(Node {
                name: id.to_string(),
                kind: NodeKind::Provider(Box::new(node)),
            });
            provider_ids.insert(id, NodeId::from_index(index));
        }
        let lookup: std::collections::HashMap<&ProviderId, NodeId> =
            provider_ids.iter().map(|(k, v)| (k, *v)).collect();
        // Each producer and the declared receiver its discovery receipt goes to.
        let receivers: Vec<(&ProviderId, ProviderId)> = provider_ids
            .iter()
            .filter_map(|(id, node)| {
                let spec = &graph[node.index()].provider()?.spec;
                let receiver = ProviderId::parse(spec.discovery_receiver()?).ok()?;
                (lookup.contains_key(&receiver) && receiver != *id).then_some((id, receiver))
            })
            .collect();
        let mut edges: Vec<(NodeId, NodeId, EdgeKind)> = Vec::new();
        for to in provider_ids.values() {
            let spec = &graph[to.index()]
                .provider()
                .expect("provider ids map to provider nodes")
                .spec;
            for dep in spec.depends_on.iter().flatten() {
                edges.push((lookup[&dep.value], *to, EdgeKind::DependsOn));
                // A receiver is proven through its producers' runs: depending on it is
                // depending on them.
                for (producer, receiver) in &receivers {
                    if *receiver == dep.value {
                        edges.push((lookup[*producer], *to, EdgeKind::DependsOn));
                    }
                }
            }
            for service in spec.services.iter().flatten() {
                edges.push((probe_ids[&service.value], *to, EdgeKind::Ready));
            }
            if let Some(receiver) = spec
                .discovery_receiver()
                .and_then(|r| ProviderId::parse(r).ok())
                && let Some(receiver) = lookup.get(&receiver)
                && receiver != to
            {
                edges.push((*to, *receiver, EdgeKind::Discovery));
            }
        }
        for (from, to, kind) in edges {
            graph.add_edge(from.index(), to.index(), kind);
        }
        let order = stable_topological_order(&graph);
        Self {
            graph,
            order,
            providers: provider_ids,
            services: service_ids,
            probes: probe_ids,
            claims,
        }
    }

    /// Every node id in a stable topological order (ties broken by name).
    pub fn order(&self) -> &[NodeId] {
        &self.order
    }

    /// A node.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.graph[id.index()]
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// The node of a provider.
    pub fn provider(&self, id: &ProviderId) -> Option<NodeId> {
        self.providers.get(id).copied()
    }

    /// Every provider, by id.
    pub fn providers(&self) -> impl Iterator<Item = (&ProviderId, NodeId, &ProviderNode)> {
        self.providers.iter().map(|(id, node)| {
            let provider = self
                .node(*node)
                .provider()
                .expect("provider ids map to provider nodes");
            (id, *node, provider)
        })
    }

    /// Every service, by id.
    pub fn services(&self) -> impl Iterator<Item = (&ServiceId, NodeId, &ServiceNode)> {
        self.services.iter().map(|(id, node)| {
            let service = self
                .node(*node)
                .service()
                .expect("service ids map to service nodes");
            (id, *node, service)
        })
    }

    /// The node of a service.
    pub fn service(&self, id: &ServiceId) -> Option<NodeId> {
        self.services.get(id).copied()
    }

    /// The probe node of a service.
    pub fn probe(&self, id: &ServiceId) -> Option<NodeId> {
        self.probes.get(id).copied()
    }

    /// The change's claims.
    pub fn claims(&self) -> &[Claim] {
        &self.claims
    }

    /// The edges into a node: `(from, kind)`, sorted.
    pub fn incoming(&self, id: NodeId) -> Vec<(NodeId, EdgeKind)> {
        let mut out: Vec<_> = self
            .graph
            .edges_directed(id.index(), petgraph::Direction::Incoming)
            .map(|e| (NodeId::from_index(e.source()), *e.weight()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The edges out of a node: `(to, kind)`, sorted.
    pub fn outgoing(&self, id: NodeId) -> Vec<(NodeId, EdgeKind)> {
        let mut out: Vec<_> = self
            .graph
            .edges_directed(id.index(), petgraph::Direction::Outgoing)
            .map(|e| (NodeId::from_index(e.target()), *e.weight()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Every edge `(from, to, kind)`, sorted.
    pub fn edges(&self) -> Vec<(NodeId, NodeId, EdgeKind)> {
        let mut out: Vec<_> = self
            .graph
            .edge_references()
            .map(|e| {
                (
                    NodeId::from_index(e.source()),
                    NodeId::from_index(e.target()),
                    *e.weight(),
                )
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The `test-discovery` providers whose runs write `receiver`'s discovery receipt
    /// (empty unless it is a declared receiver with a producer). A receiver with a
    /// producer is never executed on its own: it is proven through its producer's run.
    pub fn producers_of(&self, receiver: NodeId) -> Vec<NodeId> {
        self.incoming(receiver)
            .into_iter()
            .filter(|(_, kind)| *kind == EdgeKind::Discovery)
            .map(|(producer, _)| producer)
            .collect()
    }

    /// The services a provider needs (through their probes).
    pub fn services_of(&self, provider: NodeId) -> Vec<NodeId> {
        self.incoming(provider)
            .into_iter()
            .filter(|(_, kind)| *kind == EdgeKind::Ready)
            .flat_map(|(probe, _)| self.incoming(probe).into_iter().map(|(service, _)| service))
            .collect()
    }
}

/// The claims by the capabilities they require (with `discovery` implied by
/// `test`), computed once per graph.
struct ClaimIndex<'a> {
    claims: &'a [Claim],
    by_capability: BTreeMap<CapabilityName, Vec<usize>>,
}

impl<'a> ClaimIndex<'a> {
    fn new(claims: &'a [Claim]) -> Self {
        let mut by_capability: BTreeMap<CapabilityName, Vec<usize>> = BTreeMap::new();
        for (i, claim) in claims.iter().enumerate() {
            for capability in claim.required_capabilities() {
                by_capability.entry(capability).or_default().push(i);
            }
        }
        Self {
            claims,
            by_capability,
        }
    }
}

fn resolve_provider(
    spec: Provider,
    file: Arc<str>,
    repos: &Repositories,
    claims: &ClaimIndex<'_>,
) -> ProviderNode {
    let capability = spec
        .capability()
        .expect("preflight checked that every provider has a capability");
    let declared_runs_in = spec.repository.as_ref().map(|r| r.value.clone());
    let runs_in = if spec.adapter.value.runs_command() {
        declared_runs_in
            .clone()
            .or_else(|| repos.default().cloned())
    } else {
        declared_runs_in.clone()
    };
    let mut repositories: BTreeSet<RepoId> = spec
        .repositories
        .iter()
        .flatten()
        .map(|r| r.value.clone())
        .collect();
    repositories.extend(declared_runs_in);
    repositories.extend(spec.contract.iter().flat_map(|c| c.keys().cloned()));
    if repositories.is_empty()
        && let Some(default) = repos.default()
    {
        repositories.insert(default.clone());
    }
    let resources = match &spec.resources {
        Some(declared) => declared.iter().map(|r| r.value.clone()).collect(),
        None => resource::defaults(spec.adapter.value, &capability, runs_in.as_ref()),
    };
    let proven = spec.proven_capabilities();
    let claims = match &spec.claims {
        ClaimScope::Listed(ids) => {
            let mut ids: Vec<ClaimId> = ids.iter().map(|c| c.value.clone()).collect();
            ids.sort();
            ids.dedup();
            ids
        }
        ClaimScope::Declared => {
            let mut matching: Vec<usize> = proven
                .iter()
                .filter_map(|c| claims.by_capability.get(c))
                .flatten()
                .copied()
                .collect();
            matching.sort_unstable();
            matching.dedup();
            matching
                .into_iter()
                .map(|i| &claims.claims[i])
                .filter(|claim| match &claim.repositories {
                    None => true,
                    Some(repos) => repos.iter().any(|r| repositories.contains(&r.value)),
                })
                .map(|claim| claim.id.value.clone())
                .collect()
        }
    };
    let mut outputs = vec![Output {
        capability: capability.clone(),
        under: spec.id.value.clone(),
    }];
    outputs.extend(spec.outputs.iter().flatten().map(|o| Output {
        capability: o.value.clone(),
        under: spec.id.value.clone(),
    }));
    if let Some(receiver) = spec
        .discovery_receiver()
        .and_then(|r| ProviderId::parse(r).ok())
        && spec.adapter.value == Adapter::TestDiscovery
        && capability != CapabilityName::discovery()
    {
        outputs.push(Output {
            capability: CapabilityName::discovery(),
            under: receiver,
        });
    }
    outputs.sort();
    outputs.dedup();
    ProviderNode {
        spec,
        file,
        capability,
        runs_in,
        repositories,
        resources,
        claims,
        outputs,
    }
}

/// Kahn's algorithm with a name-ordered ready set, so that equal choices are
/// always made the same way.
fn stable_topological_order(graph: &DiGraph<Node, EdgeKind, u32>) -> Vec<NodeId> {
    let mut indegree: Vec<usize> = graph
        .node_indices()
        .map(|n| {
            graph
                .neighbors_directed(n, petgraph::Direction::Incoming)
                .count()
        })
        .collect();
    let mut ready: BTreeSet<(&str, u32)> = graph
        .node_indices()
        .filter(|n| indegree[n.index()] == 0)
        .map(|n| (graph[n].name.as_str(), n.index() as u32))
        .collect();
    let mut order = Vec::with_capacity(graph.node_count());
    while let Some(first) = ready.pop_first() {
        let node = NodeIndex::new(first.1 as usize);
        order.push(NodeId::from_index(node));
        for next in graph.neighbors_directed(node, petgraph::Direction::Outgoing) {
            indegree[next.index()] -= 1;
            if indegree[next.index()] == 0 {
                ready.insert((graph[next].name.as_str(), next.index() as u32));
            }
        }
    }
    order
}
