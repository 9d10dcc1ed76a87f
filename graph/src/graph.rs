//! The sealed provider graph: what can be scheduled and fingerprinted.
//!
//! Nodes are providers, services and readiness probes. Edges:
//! - `dependsOn`: the dependency before the dependent;
//! - `discovery`: a `test-discovery` provider before the declared provider
//!   that receives its discovery receipt (so the receiver's identical
//!   command is executed once and reused);
//! - `starts`: a service before its readiness probe;
//! - `ready`: a probe before every provider that needs its service.
//!
//! Invariant: a [`SealedGraph`] exists only as the result of
//! [`GraphBuilder::seal`](crate::builder::GraphBuilder::seal), after
//! [`validate`](crate::validate) found nothing: it is acyclic, every reference in it
//! resolves, and its order is fixed. Its fields are private to the crate and nothing here
//! changes them after sealing, so every query answers from that validated state.
//!
//! API boundary: this module only describes and answers; it knows neither how a graph is
//! built (`builder.rs`) nor how declarations are checked (`validate.rs`). Dependencies
//! run `builder` → `graph` and `builder` → `validate`, never back.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::id::{CapabilityName, ClaimId, ProviderId, RepoId, ResourceName, ServiceId};
use crate::model::{Claim, Provider, Service};

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
    /// What the node is, without its data.
    pub fn role(&self) -> NodeRole {
        match self {
            NodeKind::Provider(_) => NodeRole::Provider,
            NodeKind::Service(_) => NodeRole::Service,
            NodeKind::Probe(_) => NodeRole::Probe,
        }
    }

    /// `provider`, `service` or `probe`.
    pub fn as_str(&self) -> &'static str {
        self.role().as_str()
    }
}

/// What a node is, without its data; written as `provider`, `service` or `probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeRole {
    /// A provider.
    Provider,
    /// A service.
    Service,
    /// A readiness probe.
    Probe,
}

impl NodeRole {
    /// `provider`, `service` or `probe`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeRole::Provider => "provider",
            NodeRole::Service => "service",
            NodeRole::Probe => "probe",
        }
    }
}

impl serde::Serialize for NodeRole {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Written as its label (`dependsOn`, `discovery`, `starts`, `ready`).
impl serde::Serialize for EdgeKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
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

/// A validated graph: acyclic, every reference resolved.
#[derive(Debug, Clone)]
pub struct SealedGraph {
    pub(crate) graph: DiGraph<Node, EdgeKind, u32>,
    pub(crate) order: Vec<NodeId>,
    pub(crate) providers: BTreeMap<ProviderId, NodeId>,
    pub(crate) services: BTreeMap<ServiceId, NodeId>,
    pub(crate) probes: BTreeMap<ServiceId, NodeId>,
    pub(crate) claims: Vec<Claim>,
    /// The providers that vouch for each claim (their resolved `claims`), in id order.
    pub(crate) provers: BTreeMap<ClaimId, Vec<NodeId>>,
    /// Each claim's place in `claims`.
    pub(crate) claim_index: BTreeMap<ClaimId, usize>,
}

/// Claims found by id: the sealed graph's, through an index (a lookup per claim of a
/// provider never walks every claim), or a short list of them.
pub trait Claims {
    /// The claim `id`, when there is one.
    fn claim(&self, id: &ClaimId) -> Option<&Claim>;
}

impl Claims for SealedGraph {
    fn claim(&self, id: &ClaimId) -> Option<&Claim> {
        self.claim_index.get(id).map(|i| &self.claims[*i])
    }
}

/// A list searched in order: for the few claims of a test or a single provider.
impl Claims for Vec<Claim> {
    fn claim(&self, id: &ClaimId) -> Option<&Claim> {
        self.iter().find(|c| &c.id.value == id)
    }
}

impl SealedGraph {
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

    /// The providers that vouch for `claim`, in id order: with [`Self::claims`], what a
    /// claim's status is made of, found without a walk over every provider.
    pub fn provers_of(
        &self,
        claim: &ClaimId,
    ) -> impl Iterator<Item = (&ProviderId, &ProviderNode)> {
        self.provers.get(claim).into_iter().flatten().map(|node| {
            let provider = self
                .node(*node)
                .provider()
                .expect("provers are provider nodes");
            (&provider.spec.id.value, provider)
        })
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

    /// The providers whose declared `artifacts` `node` is given: each it depends on
    /// (`dependsOn`), or for a discovery receiver it depends on, that receiver's producer
    /// (whose run makes them), when it declares `artifacts`; sorted, each once.
    pub fn artifact_sources(&self, node: NodeId) -> Vec<NodeId> {
        let mut out: Vec<NodeId> = self
            .incoming(node)
            .into_iter()
            .filter(|(_, kind)| *kind == EdgeKind::DependsOn)
            .flat_map(|(dep, _)| std::iter::once(dep).chain(self.producers_of(dep)))
            .filter(|source| {
                self.node(*source)
                    .provider()
                    .is_some_and(|p| p.spec.artifacts.is_some())
            })
            .collect();
        out.sort();
        out.dedup();
        out
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
