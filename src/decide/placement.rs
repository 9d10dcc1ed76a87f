//! Where each provider runs: on this machine, or on the remote executor (`executor:` of
//! `proofgraph.yaml`, a Remote Execution API engine), under `--executor local|remote|auto`.
//!
//! A provider may run remotely only when a remote run can be judged exactly as a local one
//! would be: what it runs and sees can travel as an action's input root, and nothing it
//! needs lives only on this machine. [`eligibility`] answers that for one provider, with
//! every reason it cannot, each a sentence a user can act on; [`place`] applies the choice
//! of `--executor`. Pure: the caller gathers the facts ([`Surroundings`]).
//!
//! Under `auto` and `remote` alike an ineligible provider runs locally (in the same
//! sandbox as ever) and `plan` says why; the two differ only on faults of the engine,
//! which the executor handles (docs/internals/decisions.md, "Where a provider runs").

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::model::Network;
use proofgraph_graph::{Adapter, EnvName, RepoId, ServiceId};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::config::caches::CacheKind;
use crate::load::config::catalog::{Catalog, Executor};

/// `--executor`: where providers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorChoice {
    /// Every provider on this machine (the default).
    #[default]
    Local,
    /// Every eligible provider on the engine; a fault of the engine fails the run.
    Remote,
    /// Every eligible provider on the engine; a fault of the engine runs it locally.
    Auto,
}

impl ExecutorChoice {
    /// The word written after `--executor`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorChoice::Local => "local",
            ExecutorChoice::Remote => "remote",
            ExecutorChoice::Auto => "auto",
        }
    }
}

/// Why a provider runs on this machine.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LocalReason {
    /// `--executor local` (or none) was chosen.
    Chosen,
    /// Its adapter runs no command (`contract-digest`, `external`): nothing to execute.
    RunsNoCommand(Adapter),
    /// Its adapter runs a command remote execution does not take (`playwright`: a browser
    /// and its display on this machine).
    Adapter(Adapter),
    /// It needs services, started on this machine for the run.
    Services(Vec<ServiceId>),
    /// It reads variables of this machine's environment (`envFrom`): secrets never leave
    /// the machine they belong to.
    EnvFrom(Vec<EnvName>),
    /// It runs on the host network (`network: host`).
    HostNetwork,
    /// The run is in place (`--sandbox none`): a pass made in place never leaves the
    /// machine.
    InPlace,
    /// Its program lies in a host path (`hostPaths`, `PROOFGRAPH_HOST_PATHS`), which a
    /// worker does not have: a toolchain installed outside the system's directories.
    ProgramInHostPath {
        /// The program, as found.
        program: String,
        /// The host path it lies in.
        host_path: String,
    },
    /// A repository it sees runs `setup` without `setupCache`: what setup makes exists
    /// only in this machine's run, keyed by nothing that could travel.
    UncachedSetup(RepoId),
    /// A repository it runs in keeps build or download caches on this machine (`caches`),
    /// whose variables its fingerprint binds.
    Caches(RepoId, Vec<CacheKind>),
    /// It writes `artifacts` the providers after it read, which a remote action does not
    /// bring back.
    Artifacts,
}

impl LocalReason {
    /// The reason, as a user reads it after "runs locally: ".
    pub fn sentence(&self) -> String {
        let quoted = |items: Vec<String>| {
            items
                .into_iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            LocalReason::Chosen => "`--executor local`".to_owned(),
            LocalReason::RunsNoCommand(adapter) => {
                format!("a `{}` provider runs no command", adapter.as_str())
            }
            LocalReason::Adapter(adapter) => format!(
                "a `{}` provider runs here (only `command` and `test-discovery` providers run remotely)",
                adapter.as_str()
            ),
            LocalReason::Services(ids) => {
                let word = if ids.len() == 1 { "service" } else { "services" };
                format!(
                    "uses {word} {}, started on this machine",
                    quoted(ids.iter().map(ToString::to_string).collect())
                )
            }
            LocalReason::EnvFrom(names) => format!(
                "reads {} from this machine's environment through `envFrom`, which never leaves it",
                quoted(names.iter().map(ToString::to_string).collect())
            ),
            LocalReason::HostNetwork => "needs the host network (`network: host`)".to_owned(),
            LocalReason::InPlace => {
                "the run is in place (`--sandbox none`), and a pass made in place never leaves this machine".to_owned()
            }
            LocalReason::ProgramInHostPath { program, host_path } => format!(
                "runs `{program}` from the host path `{host_path}` (`hostPaths`), which workers do not have"
            ),
            LocalReason::UncachedSetup(repo) => format!(
                "repository `{repo}` runs `setup` without `setupCache`, so what setup makes exists only in this machine's run"
            ),
            LocalReason::Caches(repo, kinds) => format!(
                "repository `{repo}` keeps the {} {} on this machine (`caches`)",
                if kinds.len() == 1 { "cache" } else { "caches" },
                quoted(kinds.iter().map(|k| k.as_str().to_owned()).collect())
            ),
            LocalReason::Artifacts => {
                "writes `artifacts` the providers after it read, which a remote action does not bring back".to_owned()
            }
        }
    }
}

/// Where a provider runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// On the engine.
    Remote,
    /// On this machine, for these reasons (never empty), in a fixed order.
    Local(Vec<LocalReason>),
}

impl Placement {
    /// `remote` or `local`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Placement::Remote => "remote",
            Placement::Local(_) => "local",
        }
    }

    /// Why it runs locally, in one sentence: `None` when remote.
    pub fn reason(&self) -> Option<String> {
        match self {
            Placement::Remote => None,
            Placement::Local(reasons) => Some(
                reasons
                    .iter()
                    .map(LocalReason::sentence)
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        }
    }
}

/// What of the run and the workspace decides eligibility, besides the provider itself.
#[derive(Debug, Clone, Copy)]
pub struct Surroundings<'a> {
    /// The workspace catalog, if any (repositories' `setup`, `setupCache`, `caches`).
    pub catalog: Option<&'a Catalog>,
    /// The host paths every job's world holds ([`Surroundings::host_paths`]).
    pub host_paths: &'a [PathBuf],
    /// Whether the run is in place (`--sandbox none`).
    pub in_place: bool,
}

impl Surroundings<'_> {
    /// The host paths of `catalog` and of `PROOFGRAPH_HOST_PATHS` (`variable`,
    /// `:`-separated), `~` being `home` (a `~` path without one is left out): the paths
    /// every job's world holds, as the run reads them.
    pub fn host_paths(
        catalog: Option<&Catalog>,
        variable: Option<&std::ffi::OsStr>,
        home: Option<&Path>,
    ) -> Vec<PathBuf> {
        let mut written: Vec<String> = catalog
            .map(|c| c.host_paths.iter().map(|p| p.value.clone()).collect())
            .unwrap_or_default();
        if let Some(variable) = variable {
            written.extend(
                std::env::split_paths(variable)
                    .filter(|p| !p.as_os_str().is_empty())
                    .map(|p| p.to_string_lossy().into_owned()),
            );
        }
        // As the run expands them (`run/layers.rs`).
        written
            .iter()
            .filter_map(|text| crate::base::paths::expand_home(text, home))
            .collect()
    }
}

/// Where `provider` runs under `auto`: remotely, or locally with every reason it cannot
/// run remotely. `program` is its program as the world was observed to resolve it.
pub fn eligibility(
    provider: &ProviderNode,
    program: Option<&Path>,
    around: &Surroundings<'_>,
) -> Placement {
    let spec = &provider.spec;
    let adapter = spec.adapter.value;
    let mut reasons = Vec::new();
    match adapter {
        Adapter::Command | Adapter::TestDiscovery => {}
        Adapter::ContractDigest | Adapter::External => {
            return Placement::Local(vec![LocalReason::RunsNoCommand(adapter)]);
        }
        Adapter::Playwright => reasons.push(LocalReason::Adapter(adapter)),
    }
    if around.in_place {
        reasons.push(LocalReason::InPlace);
    }
    let services: Vec<ServiceId> = spec
        .services
        .iter()
        .flatten()
        .map(|s| s.value.clone())
        .collect();
    if !services.is_empty() {
        reasons.push(LocalReason::Services(services));
    }
    let env_from: Vec<EnvName> = spec
        .env_from
        .iter()
        .flatten()
        .map(|e| e.value.clone())
        .collect();
    if !env_from.is_empty() {
        reasons.push(LocalReason::EnvFrom(env_from));
    }
    if spec.network.as_ref().map(|n| n.value) == Some(Network::Host) {
        reasons.push(LocalReason::HostNetwork);
    }
    if let Some(program) = program
        && let Some(host_path) = around
            .host_paths
            .iter()
            .find(|dir| program.starts_with(dir))
    {
        reasons.push(LocalReason::ProgramInHostPath {
            program: program.display().to_string(),
            host_path: host_path.display().to_string(),
        });
    }
    if let Some(catalog) = around.catalog {
        // The repositories it sees: the one it runs in, and those it reads.
        let seen = provider.runs_in.iter().chain(&provider.repositories);
        let mut uncached: Vec<&RepoId> = seen
            .filter(|repo| {
                catalog.repositories.get(*repo).is_some_and(|r| {
                    r.setup.as_ref().is_some_and(|s| !s.is_empty())
                        && r.setup_cache.as_ref().is_none_or(Vec::is_empty)
                })
            })
            .collect();
        uncached.sort();
        uncached.dedup();
        reasons.extend(
            uncached
                .into_iter()
                .map(|r| LocalReason::UncachedSetup(r.clone())),
        );
        if let Some(repo) = &provider.runs_in
            && let Some(entry) = catalog.repositories.get(repo)
            && !entry.caches.is_empty()
        {
            reasons.push(LocalReason::Caches(
                repo.clone(),
                entry.caches.iter().map(|c| c.value).collect(),
            ));
        }
    }
    if spec.artifacts.as_ref().is_some_and(|a| !a.is_empty()) {
        reasons.push(LocalReason::Artifacts);
    }
    if reasons.is_empty() {
        Placement::Remote
    } else {
        Placement::Local(reasons)
    }
}

/// Where a provider whose eligibility is `eligible` runs under `choice`: under `local`,
/// here; under `remote` and `auto`, where eligibility says.
pub fn place(choice: ExecutorChoice, eligible: Placement) -> Placement {
    match (choice, eligible) {
        (ExecutorChoice::Local, Placement::Remote) => Placement::Local(vec![LocalReason::Chosen]),
        (_, placement) => placement,
    }
}

/// Every provider of the graph with where it runs under `choice`, by id; `programs`: each
/// provider's program as resolved when the world was observed.
pub fn placements(
    choice: ExecutorChoice,
    graph: &proofgraph_graph::SealedGraph,
    programs: &BTreeMap<proofgraph_graph::ProviderId, PathBuf>,
    around: &Surroundings<'_>,
) -> BTreeMap<proofgraph_graph::ProviderId, Placement> {
    graph
        .providers()
        .map(|(id, _, p)| {
            let program = programs.get(id).map(PathBuf::as_path);
            (id.clone(), place(choice, eligibility(p, program, around)))
        })
        .collect()
}

/// Whether `choice` can be honoured with the workspace's `executor`: `remote` and `auto`
/// need one configured.
pub fn check(choice: ExecutorChoice, catalog: Option<&Catalog>) -> Result<(), Diagnostic> {
    if choice == ExecutorChoice::Local || catalog.is_some_and(|c| c.executor.is_some()) {
        return Ok(());
    }
    Err(Diagnostic::error(
        Code::ExecutorNotConfigured,
        format!(
            "`--executor {}` needs a remote executor, and proofgraph.yaml configures none (`executor.remote`)",
            choice.as_str()
        ),
    )
    .surface("executor.remote")
    .fix("Add `executor: {remote: grpc://host:port[/instance]}` to proofgraph.yaml (docs/remote-execution.md), or run with `--executor local`."))
}

/// How many actions may be in flight on the engine at once: `--remote-jobs`, else
/// `executor.remoteJobs`, else `--jobs`.
pub fn remote_jobs(
    flag: Option<NonZeroUsize>,
    executor: Option<&Executor>,
    jobs: NonZeroUsize,
) -> NonZeroUsize {
    flag.or_else(|| {
        executor
            .and_then(|e| e.remote_jobs.as_ref())
            .and_then(|n| usize::try_from(n.value).ok())
            .and_then(NonZeroUsize::new)
    })
    .unwrap_or(jobs)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use proofgraph_graph::model::Provider;
    use proofgraph_graph::span::{Pos, Spanned};
    use proofgraph_graph::{CapabilityName, ProviderId};

    use super::*;
    use crate::load::config::catalog::Repository;

    fn at<T>(value: T) -> Spanned<T> {
        Spanned::new(value, Pos::default())
    }

    fn repo(name: &str) -> RepoId {
        RepoId::parse(name).expect("a valid repository id")
    }

    fn node(adapter: Adapter, edit: impl FnOnce(&mut Provider)) -> ProviderNode {
        let mut spec = Provider::new(ProviderId::parse("p").expect("valid"), adapter);
        spec.command = Some(at(vec!["true".to_owned()]));
        edit(&mut spec);
        ProviderNode {
            spec,
            file: Arc::from("execution.yaml"),
            capability: CapabilityName::parse("test").expect("valid"),
            runs_in: Some(repo("app")),
            repositories: BTreeSet::from([repo("app")]),
            resources: Vec::new(),
            claims: Vec::new(),
            outputs: Vec::new(),
        }
    }

    fn nothing_around() -> Surroundings<'static> {
        Surroundings {
            catalog: None,
            host_paths: &[],
            in_place: false,
        }
    }

    fn entry(
        id: &str,
        setup: Option<Vec<&str>>,
        cache: Option<Vec<&str>>,
        caches: Vec<CacheKind>,
    ) -> (RepoId, Repository) {
        (
            repo(id),
            Repository {
                id: at(repo(id)),
                path: at(id.to_owned()),
                setup: setup.map(|cmds| cmds.into_iter().map(|c| at(vec![c.to_owned()])).collect()),
                setup_cache: cache.map(|dirs| dirs.into_iter().map(|d| at(d.to_owned())).collect()),
                setup_inputs: None,
                caches: caches.into_iter().map(at).collect(),
            },
        )
    }

    #[test]
    fn a_plain_command_or_test_discovery_provider_runs_remotely() {
        for adapter in [Adapter::Command, Adapter::TestDiscovery] {
            assert_eq!(
                eligibility(&node(adapter, |_| {}), None, &nothing_around()),
                Placement::Remote,
                "{adapter:?}"
            );
        }
    }

    #[test]
    fn other_adapters_run_locally_and_say_why() {
        let playwright = eligibility(&node(Adapter::Playwright, |_| {}), None, &nothing_around());
        assert_eq!(
            playwright,
            Placement::Local(vec![LocalReason::Adapter(Adapter::Playwright)])
        );
        for adapter in [Adapter::ContractDigest, Adapter::External] {
            let placed = eligibility(&node(adapter, |_| {}), None, &nothing_around());
            assert_eq!(
                placed,
                Placement::Local(vec![LocalReason::RunsNoCommand(adapter)])
            );
            assert_eq!(
                placed.reason().as_deref(),
                Some(format!("a `{}` provider runs no command", adapter.as_str()).as_str())
            );
        }
    }

    #[test]
    fn services_env_from_host_network_and_artifacts_keep_a_provider_here() {
        let p = node(Adapter::Command, |p| {
            p.services = Some(vec![at(ServiceId::parse("db").expect("valid"))]);
            p.env_from = Some(vec![at(EnvName::parse("API_TOKEN").expect("valid"))]);
            p.network = Some(at(Network::Host));
            p.artifacts = Some(vec![at("dist/app.js".to_owned())]);
        });
        let placed = eligibility(&p, None, &nothing_around());
        assert_eq!(
            placed,
            Placement::Local(vec![
                LocalReason::Services(vec![ServiceId::parse("db").expect("valid")]),
                LocalReason::EnvFrom(vec![EnvName::parse("API_TOKEN").expect("valid")]),
                LocalReason::HostNetwork,
                LocalReason::Artifacts,
            ])
        );
        let said = placed.reason().unwrap_or_default();
        for part in [
            "uses service `db`",
            "reads `API_TOKEN` from this machine's environment through `envFrom`",
            "needs the host network",
            "writes `artifacts`",
        ] {
            assert!(said.contains(part), "{said}");
        }
        // A private network, declared, is no reason.
        let private = node(Adapter::Command, |p| p.network = Some(at(Network::Private)));
        assert_eq!(
            eligibility(&private, None, &nothing_around()),
            Placement::Remote
        );
    }

    #[test]
    fn the_run_and_the_workspace_can_keep_a_provider_here() {
        let p = node(Adapter::TestDiscovery, |_| {});
        let in_place = Surroundings {
            in_place: true,
            ..nothing_around()
        };
        assert_eq!(
            eligibility(&p, None, &in_place),
            Placement::Local(vec![LocalReason::InPlace])
        );
        let paths = Surroundings::host_paths(
            None,
            Some(std::ffi::OsStr::new(
                "~/.cargo:/opt/tools::~nobody:relative",
            )),
            Some(Path::new("/home/u")),
        );
        assert_eq!(
            paths,
            [PathBuf::from("/home/u/.cargo"), PathBuf::from("/opt/tools")]
        );
        let host = Surroundings {
            host_paths: &paths,
            ..nothing_around()
        };
        // A program in a host path cannot be found on a worker; one in the system's
        // directories or the repository can.
        assert_eq!(
            eligibility(&p, Some(Path::new("/home/u/.cargo/bin/cargo")), &host),
            Placement::Local(vec![LocalReason::ProgramInHostPath {
                program: "/home/u/.cargo/bin/cargo".to_owned(),
                host_path: "/home/u/.cargo".to_owned(),
            }])
        );
        for elsewhere in [
            "/usr/bin/python3",
            "/home/u/.cargo-other/bin/x",
            "/w/app/gradlew",
        ] {
            assert_eq!(
                eligibility(&p, Some(Path::new(elsewhere)), &host),
                Placement::Remote,
                "{elsewhere}"
            );
        }
        assert_eq!(
            Surroundings::host_paths(None, Some(std::ffi::OsStr::new("~/x")), None),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn setup_counts_only_uncached_and_caches_only_where_it_runs() {
        let catalog = |entries: Vec<(RepoId, Repository)>| Catalog {
            repositories: entries.into_iter().collect(),
            ..Catalog::default()
        };
        let around = |c: &Catalog| -> Placement {
            let p = node(Adapter::Command, |_| {});
            let mut p = p;
            p.repositories.insert(repo("lib"));
            eligibility(
                &p,
                None,
                &Surroundings {
                    catalog: Some(c),
                    host_paths: &[],
                    in_place: false,
                },
            )
        };
        // A cached setup travels (its kept tree is an input); no setup needs nothing.
        let cached = catalog(vec![
            entry(
                "app",
                Some(vec!["npm ci"]),
                Some(vec!["node_modules"]),
                vec![],
            ),
            entry("lib", None, None, vec![]),
        ]);
        assert_eq!(around(&cached), Placement::Remote);
        // An uncached setup of a repository it reads, and a cache where it runs.
        let uncached = catalog(vec![
            entry("app", None, None, vec![CacheKind::CargoBuild]),
            entry("lib", Some(vec!["make"]), None, vec![]),
        ]);
        assert_eq!(
            around(&uncached),
            Placement::Local(vec![
                LocalReason::UncachedSetup(repo("lib")),
                LocalReason::Caches(repo("app"), vec![CacheKind::CargoBuild]),
            ])
        );
        // A cache of a repository it only reads is not its (no variable of it is set).
        let elsewhere = catalog(vec![entry("lib", None, None, vec![CacheKind::Npm])]);
        assert_eq!(around(&elsewhere), Placement::Remote);
        // An empty setup list is no setup.
        let empty = catalog(vec![entry("app", Some(vec![]), None, vec![])]);
        assert_eq!(around(&empty), Placement::Remote);
    }

    #[test]
    fn local_keeps_everything_here_and_remote_and_auto_follow_eligibility() {
        let local = Placement::Local(vec![LocalReason::HostNetwork]);
        assert_eq!(
            place(ExecutorChoice::Local, Placement::Remote),
            Placement::Local(vec![LocalReason::Chosen])
        );
        assert_eq!(place(ExecutorChoice::Local, local.clone()), local);
        for choice in [ExecutorChoice::Remote, ExecutorChoice::Auto] {
            assert_eq!(place(choice, Placement::Remote), Placement::Remote);
            assert_eq!(place(choice, local.clone()), local);
        }
    }

    fn executor(remote_jobs: Option<u64>) -> Executor {
        Executor {
            remote: at("grpc://127.0.0.1:50051".to_owned()),
            platform: BTreeMap::new(),
            remote_jobs: remote_jobs.map(at),
            headers_from_env: Vec::new(),
            connect_timeout_ms: None,
            timeout_ms: None,
            min_bytes_per_second: None,
        }
    }

    #[test]
    fn remote_and_auto_need_an_executor() {
        assert!(check(ExecutorChoice::Local, None).is_ok());
        let configured = Catalog {
            executor: Some(executor(None)),
            ..Catalog::default()
        };
        for choice in [ExecutorChoice::Remote, ExecutorChoice::Auto] {
            assert!(check(choice, Some(&configured)).is_ok());
            let refused = check(choice, None).expect_err("no executor");
            assert_eq!(
                check(choice, Some(&Catalog::default())).map_err(|d| d.code),
                Err(Code::ExecutorNotConfigured),
                "a proofgraph.yaml without `executor:`"
            );
            assert_eq!(refused.code, Code::ExecutorNotConfigured);
            assert!(
                refused.message.contains(choice.as_str()),
                "{}",
                refused.message
            );
        }
    }

    #[test]
    fn remote_jobs_come_from_the_flag_then_the_catalog_then_jobs() {
        let n = |n: usize| NonZeroUsize::new(n).expect("positive");
        let configured = executor(Some(8));
        assert_eq!(remote_jobs(Some(n(3)), Some(&configured), n(2)), n(3));
        assert_eq!(remote_jobs(None, Some(&configured), n(2)), n(8));
        assert_eq!(remote_jobs(None, Some(&executor(None)), n(2)), n(2));
        assert_eq!(remote_jobs(None, None, n(5)), n(5));
    }
}
