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

use crate::base::env::Env;

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
