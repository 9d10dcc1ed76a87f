//! Helpers for the executor's unit tests: small sealed graphs and a caller's environment.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use proofgraph_graph::graph::{ProviderNode, ServiceNode};
use proofgraph_graph::model::{Provider, Service};
use proofgraph_graph::span::{Pos, Spanned};
use proofgraph_graph::{
    Adapter, CapabilityName, GraphBuilder, ProviderId, RepoId, Repositories, SealedGraph, ServiceId,
};

use proofgraph_graph::fingerprint::{Digest, Inputs, Platform, World};

use crate::base::env::Env;
use crate::observe::world::Observed;

pub(crate) fn at<T>(value: T) -> Spanned<T> {
    Spanned::new(value, Pos::default())
}

pub(crate) fn pid(s: &str) -> ProviderId {
    ProviderId::parse(s).expect("valid provider id")
}

pub(crate) fn sid(s: &str) -> ServiceId {
    ServiceId::parse(s).expect("valid service id")
}

/// A provider of `adapter` proving `integration` with `argv`.
pub(crate) fn provider(id: &str, adapter: Adapter, argv: &[&str]) -> Provider {
    let mut p = Provider::new(pid(id), adapter);
    p.capability = Some(at(CapabilityName::parse("integration").expect("valid")));
    if !argv.is_empty() {
        p.command = Some(at(argv.iter().map(|a| (*a).to_owned()).collect()));
    }
    p
}

/// The graph of `providers` and `services` in one repository (`root`).
pub(crate) fn seal(providers: Vec<Provider>, services: Vec<Service>) -> SealedGraph {
    seal_in(&[], providers, services)
}

/// The graph of `providers` and `services` in `root` and the repositories `others`.
pub(crate) fn seal_in(
    others: &[&str],
    providers: Vec<Provider>,
    services: Vec<Service>,
) -> SealedGraph {
    let mut ids: std::collections::BTreeSet<RepoId> = [RepoId::root()].into();
    ids.extend(
        others
            .iter()
            .map(|r| RepoId::parse(r).expect("valid repository id")),
    );
    let mut b = GraphBuilder::new(Repositories { ids });
    for p in providers {
        b.provider(p, Arc::from("execution.yaml"));
    }
    for s in services {
        b.service(s, Arc::from("execution.yaml"));
    }
    b.seal()
        .unwrap_or_else(|findings| panic!("preflight failed: {findings:#?}"))
}

/// The sealed node of provider `id`.
pub(crate) fn node<'g>(graph: &'g SealedGraph, id: &str) -> &'g ProviderNode {
    let n = graph.provider(&pid(id)).expect("a provider of the graph");
    graph.node(n).provider().expect("a provider node")
}

/// The sealed node of service `id`.
pub(crate) fn service_node<'g>(graph: &'g SealedGraph, id: &str) -> &'g ServiceNode {
    let n = graph.service(&sid(id)).expect("a service of the graph");
    graph.node(n).service().expect("a service node")
}

/// A caller's environment holding exactly `vars`.
pub(crate) fn env(vars: &[(&str, &str)]) -> Env {
    Env {
        cwd: PathBuf::from("/work"),
        home: PathBuf::from("/home/u"),
        xdg_data_home: None,
        xdg_config_home: None,
        path: vars
            .iter()
            .find(|(k, _)| *k == "PATH")
            .map(|(_, v)| OsString::from(v)),
        vars: vars
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// An environment as `(name, value)` text pairs, in its order.
pub(crate) fn vars(env: &[(OsString, OsString)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The producer `test-web` (a `test-discovery` provider reading `web.tap`) and its declared
/// discovery receiver `discovery-web`, with `minimum`.
pub(crate) fn discovery_pair(minimum: Option<u64>) -> [Provider; 2] {
    let mut producer = provider("test-web", Adapter::TestDiscovery, &["sh"]);
    producer.capability = Some(at(CapabilityName::test()));
    producer.report = Some(at("web.tap".to_owned()));
    producer.discovery_provider = Some(at(pid("discovery-web")));
    let mut receiver = provider("discovery-web", Adapter::TestDiscovery, &["sh"]);
    receiver.capability = Some(at(CapabilityName::discovery()));
    receiver.report = Some(at("web.tap".to_owned()));
    receiver.minimum = minimum.map(at);
    [producer, receiver]
}

/// What was observed of a world where every provider of `graph` reads one file (enough to
/// fingerprint it and bind its receipts); no snapshot, no program.
pub(crate) fn observed(graph: &SealedGraph) -> Observed {
    let inputs = Inputs {
        digest: Digest::of(b"inputs"),
        files: 1,
    };
    Observed {
        world: World {
            platform: Platform {
                os: "linux".into(),
                arch: "x86_64".into(),
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
        },
        snapshots: BTreeMap::new(),
        files: BTreeMap::new(),
        untracked: BTreeMap::new(),
        programs: BTreeMap::new(),
        service_programs: BTreeMap::new(),
        excludes: BTreeMap::new(),
        sees: BTreeMap::new(),
        warnings: Vec::new(),
    }
}
