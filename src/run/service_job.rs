//! Service and probe building: from a service's wiring and what was observed to the
//! [`JobSpec`] that starts it and the [`ProbeSpec`] that waits for it. Pure, as
//! `job.rs` is.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proofgraph_graph::graph::ServiceNode;
use proofgraph_graph::model::Network as NetworkSetting;
use proofgraph_sandbox::{JobSpec, ProbeSpec};

use super::command::{JobEnv, job_env};
use super::job::{Jobs, network, program_name};

impl Jobs<'_> {
    /// A service's environment, or why it cannot start.
    pub(super) fn service_env(&self, s: &ServiceNode) -> Result<JobEnv, String> {
        let extra = [("PROOFGRAPH_RUN_ID", OsString::from(self.run_id))];
        job_env(
            self.env,
            s.spec.env.as_ref(),
            s.spec.env_from.as_ref(),
            &extra,
        )
        .map_err(|missing| {
            format!(
                "service `{}` needs `envFrom` {}, which the environment does not set",
                s.spec.id.value,
                missing.join(", ")
            )
        })
    }

    /// The file a service executes from `cwd`, or why it cannot start.
    pub(super) fn service_program(&self, s: &ServiceNode, cwd: &Path) -> Result<PathBuf, String> {
        match self.service_programs.get(&s.spec.id.value) {
            Some(Some(program)) => {
                let name = program_name(s.spec.command.as_ref());
                self.in_world(name, program)
                    .map_err(|why| format!("service `{}`: {why}", s.spec.id.value))?;
                Ok(program.file(cwd))
            }
            _ => Err(format!(
                "service `{}` could not be started: `{}` is not on its PATH (nor a file of its repository)",
                s.spec.id.value,
                program_name(s.spec.command.as_ref())
            )),
        }
    }

    /// The job that starts a service: at once (not limited), without a timeout.
    pub(super) fn service_job(
        &self,
        s: &ServiceNode,
        cwd: PathBuf,
        world: proofgraph_sandbox::World,
        env: JobEnv,
        program: PathBuf,
        log: PathBuf,
    ) -> JobSpec {
        let host = s
            .spec
            .network
            .as_ref()
            .is_some_and(|n| n.value == NetworkSetting::Host);
        JobSpec {
            argv: s
                .spec
                .command
                .as_ref()
                .map(|c| c.value.iter().map(OsString::from).collect())
                .unwrap_or_default(),
            program: Some(program),
            cwd,
            world,
            env,
            network: network(host),
            timeout: None,
            log,
            redact: self.secrets.patterns().to_vec(),
            // A service starts at once, beside the providers that use it.
            limited: false,
            hold_after: false,
        }
    }

    /// The readiness probe of a service that declares one, logging to `log`.
    pub(super) fn probe(&self, s: &ServiceNode, log: PathBuf) -> Option<ProbeSpec> {
        let readiness = s.spec.readiness.as_ref()?;
        let subst = |text: &str| text.replace("${PROOFGRAPH_RUN_ID}", self.run_id);
        Some(ProbeSpec {
            url: readiness
                .url
                .as_ref()
                .map(|u| u.value.as_str().to_owned())
                .unwrap_or_default(),
            expect_status: None,
            expect_headers: readiness
                .expect_header
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), subst(&v.value)))
                .collect(),
            expect_body: readiness.expect_body.as_ref().map(|b| subst(&b.value)),
            timeout: Duration::from_millis(
                readiness.timeout_ms.as_ref().map_or(30_000, |t| t.value),
            ),
            log,
            redact: self.secrets.patterns().to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proofgraph_graph::model::{Network as NetworkSetting, Readiness, Service};
    use proofgraph_graph::span::Pos;
    use proofgraph_graph::{EnvName, ProviderId, RepoId, ServiceId};
    use proofgraph_sandbox::Network;

    use super::*;
    use crate::base::env::Env;
    use crate::base::redact::Secrets;
    use crate::observe::world::Program;
    use crate::run::testing::{at, env, seal, service_node, sid};

    fn web() -> Service {
        let mut s = Service::new(sid("web"));
        s.command = Some(at(vec!["node".to_owned(), "server.js".to_owned()]));
        s.readiness = Some(Readiness {
            pos: Pos::default(),
            url: Some(at(proofgraph_graph::readiness::ReadinessUrl::parse(
                "http://127.0.0.1:4100/health",
            ))),
            expect_header: Some(BTreeMap::from([(
                "x-run".to_owned(),
                at("${PROOFGRAPH_RUN_ID}".to_owned()),
            )])),
            expect_body: Some(at("ok ${PROOFGRAPH_RUN_ID}".to_owned())),
            timeout_ms: None,
        });
        s
    }

    struct Fixture {
        caller: Env,
        secrets: Secrets,
        programs: BTreeMap<ProviderId, Option<Program>>,
        services: BTreeMap<ServiceId, Option<Program>>,
        sandboxes: BTreeMap<RepoId, PathBuf>,
        caches: BTreeMap<RepoId, Vec<(crate::load::config::caches::CacheKind, PathBuf)>>,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                caller: env(&[("PATH", "/usr/bin"), ("KEY", "service-secret")]),
                secrets: Secrets::new([b"service-secret".to_vec()]),
                programs: BTreeMap::new(),
                services: BTreeMap::from([(
                    sid("web"),
                    Some(Program::InRepository("node_modules/.bin/node".into())),
                )]),
                sandboxes: BTreeMap::new(),
                caches: BTreeMap::new(),
            }
        }

        fn jobs(&self) -> Jobs<'_> {
            Jobs {
                env: &self.caller,
                run_id: "run7",
                secrets: &self.secrets,
                programs: &self.programs,
                service_programs: &self.services,
                sandboxes: &self.sandboxes,
                out_dir: Path::new("/runs/r/out"),
                host_paths: &[],
                caches: &self.caches,
                home: None,
                stamped: false,
            }
        }
    }

    #[test]
    fn a_service_starts_at_once_without_a_timeout_from_its_observed_program() {
        let mut s = web();
        s.env_from = Some(vec![at(EnvName::parse("KEY").expect("valid"))]);
        s.network = Some(at(NetworkSetting::Host));
        let graph = seal(Vec::new(), vec![s]);
        let node = service_node(&graph, "web");
        let fixture = Fixture::new();
        let jobs = fixture.jobs();
        let cwd = PathBuf::from("/sb/root");
        let env = jobs.service_env(node).expect("env");
        assert!(env.contains(&("KEY".into(), "service-secret".into())));
        assert!(env.contains(&("PROOFGRAPH_RUN_ID".into(), "run7".into())));
        let program = jobs.service_program(node, &cwd).expect("found");
        assert_eq!(program, PathBuf::from("/sb/root/node_modules/.bin/node"));
        let world = proofgraph_sandbox::World {
            private: vec![PathBuf::from("/home/u")],
            ..proofgraph_sandbox::World::default()
        };
        let job = jobs.service_job(
            node,
            cwd.clone(),
            world.clone(),
            env.clone(),
            program,
            "/l".into(),
        );
        assert_eq!(job.world, world);
        assert_eq!(
            job.argv,
            [OsString::from("node"), OsString::from("server.js")]
        );
        assert_eq!((job.cwd, job.env), (cwd, env));
        assert_eq!(job.network, Network::Host);
        assert_eq!(job.timeout, None);
        assert_eq!(job.redact, fixture.secrets.patterns());
        assert!(!job.limited && !job.hold_after);
    }

    #[test]
    fn a_service_that_cannot_start_says_why() {
        let mut s = web();
        s.env_from = Some(vec![at(EnvName::parse("ABSENT").expect("valid"))]);
        let graph = seal(Vec::new(), vec![s]);
        let node = service_node(&graph, "web");
        let mut fixture = Fixture::new();
        fixture.services.insert(sid("web"), None);
        let jobs = fixture.jobs();
        assert_eq!(
            jobs.service_env(node).expect_err("ABSENT is not set"),
            "service `web` needs `envFrom` ABSENT, which the environment does not set"
        );
        assert_eq!(
            jobs.service_program(node, Path::new("/sb"))
                .expect_err("not found"),
            "service `web` could not be started: `node` is not on its PATH (nor a file of its repository)"
        );
    }

    #[test]
    fn a_probe_expects_the_run_id_where_the_readiness_names_it() {
        let graph = seal(Vec::new(), vec![web()]);
        let fixture = Fixture::new();
        let probe = fixture
            .jobs()
            .probe(service_node(&graph, "web"), "/p.log".into())
            .expect("a readiness");
        assert_eq!(probe.url, "http://127.0.0.1:4100/health");
        assert_eq!(
            probe.expect_headers,
            [("x-run".to_owned(), "run7".to_owned())]
        );
        assert_eq!(probe.expect_body.as_deref(), Some("ok run7"));
        assert_eq!(probe.expect_status, None);
        assert_eq!(probe.timeout, Duration::from_secs(30));
        assert_eq!(probe.log, PathBuf::from("/p.log"));
    }
}
