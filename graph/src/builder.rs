//! Building the provider graph: collect a change's declarations, check them, seal them.
//!
//! [`GraphBuilder`] collects claims, providers and services as the application decoded
//! them. [`GraphBuilder::seal`] runs preflight ([`validate`]) and, only
//! when it finds nothing, resolves each declaration into a node of a
//! [`SealedGraph`]: a provider's repository, resources (declared, else defaults), claim
//! scope and the receipts one run writes; the edges; and a stable topological order
//! (Kahn's algorithm, ties broken by name).
//!
//! Invariant: no [`SealedGraph`] is assembled from declarations that preflight found
//! anything wrong with, so assembling may index by any name a declaration uses.
//!
//! API boundary: this is the only module that depends on both the sealed type (`graph.rs`)
//! and the checks (`validate.rs`); neither of them depends on it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};

use crate::adapter::Adapter;
use crate::graph::{
    EdgeKind, Node, NodeId, NodeKind, Output, ProbeNode, ProviderNode, SealedGraph, ServiceNode,
};
use crate::id::{CapabilityName, ClaimId, ProviderId, RepoId, ResourceName, ServiceId};
use crate::model::{Claim, ClaimScope, Provider, Repositories, Service};
use crate::resource;
use crate::validate::{self, Declared, Finding};

/// A graph being built; [`GraphBuilder::seal`] validates it.
#[derive(Debug, Clone, Default)]
pub struct GraphBuilder {
    repositories: Repositories,
    claims: Vec<Claim>,
    providers: BTreeMap<ProviderId, (Provider, Arc<str>)>,
    services: BTreeMap<ServiceId, (Service, Arc<str>)>,
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

    /// Runs preflight on what has been added, without sealing: every finding, sorted by
    /// file position (empty when [`GraphBuilder::seal`] would succeed).
    pub fn check(&self) -> Vec<Finding> {
        validate::check(&Declared {
            repositories: &self.repositories,
            claims: &self.claims,
            providers: &self.providers,
            services: &self.services,
        })
    }

    /// Validates the graph (preflight) and seals it. Returns every finding,
    /// sorted by file position, when anything is wrong.
    pub fn seal(self) -> Result<SealedGraph, Vec<Finding>> {
        let findings = self.check();
        if !findings.is_empty() {
            return Err(findings);
        }
        Ok(assemble(self))
    }
}

/// Resolves every declaration into a node and fixes the order. Preflight has passed, so
/// every name it looks up exists and the graph it builds is acyclic.
fn assemble(builder: GraphBuilder) -> SealedGraph {
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
            .and_then(|u| u.value.literal_port().ok());
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
    let mut producers_by_receiver: BTreeMap<&ProviderId, Vec<NodeId>> = BTreeMap::new();
    for (producer, receiver) in &receivers {
        producers_by_receiver
            .entry(receiver)
            .or_default()
            .push(lookup[*producer]);
    }
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
            for producer in producers_by_receiver.get(&dep.value).into_iter().flatten() {
                edges.push((*producer, *to, EdgeKind::DependsOn));
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
    let mut provers: BTreeMap<ClaimId, Vec<NodeId>> = BTreeMap::new();
    for node in provider_ids.values() {
        let provider = graph[node.index()]
            .provider()
            .expect("provider ids map to provider nodes");
        for claim in &provider.claims {
            provers.entry(claim.clone()).or_default().push(*node);
        }
    }
    let claim_index = claims
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.value.clone(), i))
        .collect();
    SealedGraph {
        graph,
        order,
        providers: provider_ids,
        services: service_ids,
        probes: probe_ids,
        claims,
        provers,
        claim_index,
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
