//! Helpers for the crate's own tests: small constructors and proptest
//! strategies for random graphs.

use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};

/// Where [`beside_source`] keeps a failing case: `x.rs` → `x.proptest-regressions`.
const BESIDE_SOURCE: FileFailurePersistence =
    FileFailurePersistence::WithSource("proptest-regressions");

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;

use crate::adapter::Adapter;
use crate::builder::GraphBuilder;
use crate::graph::SealedGraph;
use crate::id::{CapabilityName, ProviderId, RepoId, ResourceName, ServiceId};
use crate::model::{Provider, Readiness, Repositories, Service};
use crate::span::{Pos, Spanned};

pub(crate) fn at<T>(value: T) -> Spanned<T> {
    Spanned::new(value, Pos::default())
}

pub(crate) fn pid(s: &str) -> ProviderId {
    ProviderId::parse(s).expect("valid provider id")
}

pub(crate) fn sid(s: &str) -> ServiceId {
    ServiceId::parse(s).expect("valid service id")
}

/// A `command` provider proving `integration`, running `true`.
pub(crate) fn provider(id: &str) -> Provider {
    let mut p = Provider::new(pid(id), Adapter::Command);
    p.capability = Some(at(CapabilityName::parse("integration").expect("valid")));
    p.command = Some(at(vec!["true".to_owned()]));
    p
}

/// A service on `port` with an identity check.
pub(crate) fn service(id: &str, port: u16) -> Service {
    let mut s = Service::new(sid(id));
    s.command = Some(at(vec!["serve".to_owned()]));
    s.readiness = Some(Readiness {
        pos: Pos::default(),
        url: Some(at(crate::readiness::ReadinessUrl::parse(format!(
            "http://127.0.0.1:{port}/health"
        )))),
        expect_header: None,
        expect_body: Some(at("ok".to_owned())),
        timeout_ms: None,
    });
    s
}

pub(crate) fn one_repo() -> Repositories {
    Repositories {
        ids: BTreeSet::from([RepoId::root()]),
    }
}

pub(crate) fn seal(providers: Vec<Provider>, services: Vec<Service>) -> SealedGraph {
    let mut b = GraphBuilder::new(one_repo());
    let file: Arc<str> = Arc::from("execution.yaml");
    for p in providers {
        b.provider(p, Arc::clone(&file));
    }
    for s in services {
        b.service(s, Arc::clone(&file));
    }
    b.seal()
        .unwrap_or_else(|findings| panic!("preflight failed: {findings:#?}"))
}

/// A random acyclic graph description: for each provider, the earlier
/// providers it depends on, its resources and the service it needs.
#[derive(Debug, Clone)]
pub(crate) struct RandomGraph {
    pub(crate) deps: Vec<Vec<usize>>,
    pub(crate) resources: Vec<Vec<usize>>,
    pub(crate) service: Vec<Option<usize>>,
    pub(crate) services: usize,
}

pub(crate) const RESOURCE_POOL: [&str; 6] = [
    "workspace-read",
    "workspace-write:root",
    "browser",
    "browser:web",
    "database:test",
    "port:9",
];

pub(crate) fn random_graph(max: usize) -> impl Strategy<Value = RandomGraph> {
    (1..=max, 0..3usize).prop_flat_map(|(n, services)| {
        let deps = (0..n)
            .map(|i| {
                proptest::collection::btree_set(0..i.max(1), 0..=i.min(3))
                    .prop_map(move |s| s.into_iter().filter(|d| *d < i).collect::<Vec<_>>())
            })
            .collect::<Vec<_>>();
        let resources =
            proptest::collection::vec(proptest::collection::vec(0..RESOURCE_POOL.len(), 0..3), n);
        let service = proptest::collection::vec(
            proptest::option::weighted(0.3, 0..services.max(1))
                .prop_map(move |s| s.filter(|_| services > 0)),
            n,
        );
        (deps, resources, service).prop_map(move |(deps, resources, service)| RandomGraph {
            deps,
            resources,
            service,
            services,
        })
    })
}

impl RandomGraph {
    pub(crate) fn name(i: usize) -> String {
        format!("p{i:03}")
    }

    pub(crate) fn seal(&self) -> SealedGraph {
        let providers = (0..self.deps.len())
            .map(|i| {
                let mut p = provider(&Self::name(i));
                if !self.deps[i].is_empty() {
                    p.depends_on = Some(
                        self.deps[i]
                            .iter()
                            .map(|d| at(pid(&Self::name(*d))))
                            .collect(),
                    );
                }
                let mut resources: Vec<ResourceName> = self.resources[i]
                    .iter()
                    .map(|r| ResourceName::parse(RESOURCE_POOL[*r]).expect("valid"))
                    .collect();
                resources.sort();
                resources.dedup();
                p.resources = Some(resources.into_iter().map(at).collect());
                if let Some(s) = self.service[i] {
                    p.services = Some(vec![at(sid(&format!("s{s}")))]);
                }
                p
            })
            .collect();
        // Services listen on ports outside the resource pool's `port:9`.
        let services = (0..self.services)
            .map(|s| service(&format!("s{s}"), 4000 + s as u16))
            .collect();
        seal(providers, services)
    }
}

/// `config` with proptest's failures kept beside the test's source file
/// (`schedule.rs` → `schedule.proptest-regressions`), not in a tree parallel to the crate.
pub(crate) fn beside_source(mut config: ProptestConfig) -> ProptestConfig {
    config.failure_persistence = Some(Box::new(BESIDE_SOURCE));
    config
}
