//! Preflight: every reason a change's declarations cannot become a graph that runs, found
//! before anything runs, all at once, sorted by where they were written.
//!
//! Invariant: `check` reports every problem it finds (it never stops at the first) and
//! changes nothing; what it accepts, sealing can resolve without a missing name or a
//! cycle. The checks read the declarations only — no file, process or clock — so the
//! application adds the checks that need the filesystem itself.
//!
//! API boundary: this module reads `Declared`, a view of what the graph builder
//! collected, and depends on neither the builder nor the sealed graph; the builder calls
//! it (`builder` → `validate`). The helpers that interpret a declared value
//! ([`literal_port`], [`split_scoped`], [`is_secret_name`]) live here so that checking
//! and resolving read a value the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};
use std::sync::Arc;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::adapter::Adapter;
use crate::id::{CapabilityName, ClaimId, EnvName, ProviderId, RepoId, ServiceId};
use crate::model::{Claim, ClaimScope, Provider, Repositories, Service};
use crate::resource;
use crate::span::{Pos, Spanned};

macro_rules! checks {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)+) => {
        /// What preflight checks. The string form is a stable diagnostic code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Check {
            $($(#[$doc])* $variant,)+
        }

        impl Check {
            /// Every check.
            pub const ALL: &'static [Check] = &[$(Check::$variant,)+];

            /// The `snake_case` code.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Check::$variant => $name,)+
                }
            }
        }
    };
}

checks! {
    /// Providers depend on each other in a cycle.
    DependencyCycle = "dependency_cycle",
    /// Two providers that are different executions write one report path.
    ReportPathCollision = "report_path_collision",
    /// `dependsOn` names no provider.
    UnknownDependency = "unknown_dependency",
    /// `service` names no service.
    UnknownService = "unknown_service",
    /// A repository id is not in the workspace.
    UnknownRepository = "unknown_repository",
    /// A command must run in a repository, and the workspace has several.
    RepositoryRequired = "repository_required",
    /// `discoveryProvider` names no provider.
    UnknownDiscoveryProvider = "unknown_discovery_provider",
    /// A discovery receiver that is not a `test-discovery` provider proving `discovery`.
    DiscoveryProviderAdapter = "discovery_provider_adapter",
    /// A `test-discovery` provider proving something other than `test` or `discovery`.
    TestDiscoveryCapability = "test_discovery_capability",
    /// A provider with no capability (its name is not one and it sets none).
    ProviderWithoutCapability = "provider_without_capability",
    /// An adapter that runs a command has none.
    MissingCommand = "missing_command",
    /// A readiness URL that is absent or not a plain `http://` URL with a host.
    ReadinessUrlInvalid = "readiness_url_invalid",
    /// A readiness URL without a literal port.
    ReadinessPortMissing = "readiness_port_missing",
    /// A readiness probe that checks only the status.
    ReadinessStatusOnly = "readiness_status_only",
    /// A contract-digest provider naming fewer than two repositories.
    ContractSingleRepository = "contract_single_repository",
    /// A literal env value under a secret-looking name.
    SecretInEnv = "secret_in_env",
    /// An input, report or contract path that is absolute or climbs out with `..`.
    PathOutsideRepository = "path_outside_repository",
    /// `claims` lists a claim that does not exist or does not require the provider's capability.
    UnknownClaim = "unknown_claim",
    /// A provider's resources conflict with those of a service it needs.
    ResourceDeadlock = "resource_deadlock",
}

/// One preflight finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The file it concerns.
    pub file: Arc<str>,
    /// Where in the file.
    pub pos: Pos,
    /// What was checked.
    pub check: Check,
    /// What is wrong.
    pub message: String,
    /// One actionable sentence.
    pub fix: String,
}

/// Whether an environment name looks like it holds a secret (as Change Loop's Node.js
/// runtime matches: SECRET, TOKEN, PASSWORD, CREDENTIAL, PRIVATE_KEY or API_KEY anywhere,
/// case-insensitively).
pub fn is_secret_name(name: &EnvName) -> bool {
    let upper = name.as_str().to_ascii_uppercase();
    [
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "CREDENTIAL",
        "PRIVATE_KEY",
        "API_KEY",
    ]
    .iter()
    .any(|w| upper.contains(w))
}

pub use crate::readiness::UrlProblem;

/// Whether a relative path stays inside its repository, lexically.
fn lexically_inside(path: &str) -> Result<(), &'static str> {
    let p = Path::new(path);
    if p.is_absolute() || path.starts_with('\\') {
        return Err("is absolute");
    }
    if p.components().any(|c| matches!(c, Component::ParentDir))
        || path.split('\\').any(|s| s == "..")
    {
        return Err("climbs out of its repository with `..`");
    }
    Ok(())
}

/// Splits a `repo:path` input into its repository and path.
pub fn split_scoped(input: &str) -> (Option<&str>, &str) {
    match input.split_once(':') {
        Some((repo, path)) if RepoId::parse(repo).is_ok() && !repo.is_empty() => (Some(repo), path),
        _ => (None, input),
    }
}

/// What preflight reads: the declarations a graph builder has collected, each provider and
/// service with the file that declares it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Declared<'a> {
    /// The workspace's repositories.
    pub(crate) repositories: &'a Repositories,
    /// The change's claims.
    pub(crate) claims: &'a [Claim],
    /// Every provider, by id.
    pub(crate) providers: &'a BTreeMap<ProviderId, (Provider, Arc<str>)>,
    /// Every service, by id.
    pub(crate) services: &'a BTreeMap<ServiceId, (Service, Arc<str>)>,
}

struct Out<'a> {
    findings: Vec<Finding>,
    file: &'a Arc<str>,
}

impl Out<'_> {
    fn push(&mut self, pos: Pos, check: Check, message: String, fix: impl Into<String>) {
        self.findings.push(Finding {
            file: Arc::clone(self.file),
            pos,
            check,
            message,
            fix: fix.into(),
        });
    }
}

/// Runs every check and returns every finding, sorted.
pub(crate) fn check(declared: &Declared<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    // Claims by id, once: a provider's `claims` are looked up, not searched for.
    let claims: BTreeMap<&ClaimId, &Claim> =
        declared.claims.iter().map(|c| (&c.id.value, c)).collect();
    for (spec, file) in declared.providers.values() {
        let mut out = Out {
            findings: Vec::new(),
            file,
        };
        check_provider(declared, &claims, spec, &mut out);
        findings.append(&mut out.findings);
    }
    for (spec, file) in declared.services.values() {
        let mut out = Out {
            findings: Vec::new(),
            file,
        };
        check_service(declared, spec, &mut out);
        findings.append(&mut out.findings);
    }
    check_report_collisions(declared, &mut findings);
    check_cycles(declared, &mut findings);
    findings.sort();
    findings.dedup();
    findings
}

fn known_repo(
    declared: &Declared<'_>,
    out: &mut Out<'_>,
    repo: &RepoId,
    pos: Pos,
    what: &str,
) -> bool {
    if declared.repositories.ids.contains(repo) {
        return true;
    }
    let known: Vec<String> = declared
        .repositories
        .ids
        .iter()
        .map(|r| format!("`{r}`"))
        .collect();
    out.push(
        pos,
        Check::UnknownRepository,
        format!("{what} names repository `{repo}`, which the workspace does not have"),
        format!(
            "Use one of {} (declared in proofgraph.yaml).",
            known.join(", ")
        ),
    );
    false
}

fn check_env(out: &mut Out<'_>, what: &str, env: Option<&BTreeMap<EnvName, Spanned<String>>>) {
    for (name, value) in env.into_iter().flatten() {
        if is_secret_name(name) {
            out.push(
                value.pos,
                Check::SecretInEnv,
                format!(
                    "{what} sets `{name}` to a literal value, and the name looks like a secret"
                ),
                format!("Move `{name}` to `envFrom` so its value is inherited and never stored."),
            );
        }
    }
}

fn check_path(out: &mut Out<'_>, what: &str, path: &Spanned<String>) {
    if let Err(problem) = lexically_inside(&path.value) {
        out.push(
            path.pos,
            Check::PathOutsideRepository,
            format!("{what} `{}` {problem}", path.value),
            "Write the path relative to the repository, without `..`.",
        );
    }
}

fn check_provider(
    declared: &Declared<'_>,
    claims: &BTreeMap<&ClaimId, &Claim>,
    p: &Provider,
    out: &mut Out<'_>,
) {
    let what = format!("provider `{}`", p.id.value);
    let adapter = p.adapter.value;
    let capability = p.capability();
    match &capability {
        None => out.push(
            p.id.pos,
            Check::ProviderWithoutCapability,
            format!(
                "{what} has no capability: its name is not a capability and it sets no `capability`"
            ),
            format!("Add `capability: <name>` to {what}."),
        ),
        Some(c)
            if adapter == Adapter::TestDiscovery
                && *c != CapabilityName::test()
                && *c != CapabilityName::discovery() =>
        {
            out.push(
                p.capability.as_ref().map_or(p.id.pos, |c| c.pos),
                Check::TestDiscoveryCapability,
                format!("{what} uses `test-discovery` to prove `{c}`; that adapter proves `test` or `discovery`"),
                "Use the `command` adapter for this capability, or set `capability: test`.",
            );
        }
        Some(_) => {}
    }
    if adapter.runs_command() && p.command.is_none() {
        out.push(
            p.adapter.pos,
            Check::MissingCommand,
            format!("{what} uses `{adapter}`, which runs a command, but has no `command`"),
            format!("Add `command: [<program>, <args>...]` to {what}."),
        );
    }
    // Repositories.
    if let Some(repo) = &p.repository {
        known_repo(declared, out, &repo.value, repo.pos, &what);
    } else if adapter.runs_command() && declared.repositories.default().is_none() {
        out.push(
            p.id.pos,
            Check::RepositoryRequired,
            format!(
                "{what} runs a command but names no `repository`, and the workspace has several"
            ),
            format!("Add `repository: <id>` to {what}."),
        );
    }
    for repo in p.repositories.iter().flatten() {
        known_repo(declared, out, &repo.value, repo.pos, &what);
    }
    // Dependencies and services.
    for dep in p.depends_on.iter().flatten() {
        if !declared.providers.contains_key(&dep.value) {
            let names: Vec<&str> = declared.providers.keys().map(ProviderId::as_str).collect();
            out.push(
                dep.pos,
                Check::UnknownDependency,
                format!(
                    "{what} depends on `{}`, which is not a provider of this change",
                    dep.value
                ),
                format!("Use one of: {}.", names.join(", ")),
            );
        }
    }
    for service in p.services.iter().flatten() {
        match declared.services.get(&service.value) {
            None => out.push(
                service.pos,
                Check::UnknownService,
                format!(
                    "{what} needs service `{}`, which execution.yaml does not declare",
                    service.value
                ),
                format!(
                    "Declare `{}` under `services`, or fix the name.",
                    service.value
                ),
            ),
            Some((s, _)) => {
                let port = s
                    .readiness
                    .as_ref()
                    .and_then(|r| r.url.as_ref())
                    .and_then(|u| u.value.literal_port().ok());
                if let (Some(port), Some(declared)) = (port, &p.resources) {
                    let held = vec![
                        crate::id::ResourceName::parse(&format!("port:{port}"))
                            .expect("valid port resource"),
                    ];
                    let mine: Vec<_> = declared.iter().map(|r| r.value.clone()).collect();
                    if resource::sets_conflict(&mine, &held) {
                        out.push(
                            declared.first().map_or(p.id.pos, |r| r.pos),
                            Check::ResourceDeadlock,
                            format!("{what} holds `port:{port}`, which its own service `{}` holds while it runs, so it could never start", service.value),
                            format!("Remove `port:{port}` from the resources of {what}; the service already holds it."),
                        );
                    }
                }
            }
        }
    }
    // Discovery.
    if p.discovery_provider.is_some() && adapter != Adapter::TestDiscovery {
        let pos = p.discovery_provider.as_ref().map_or(p.id.pos, |d| d.pos);
        out.push(
            pos,
            Check::DiscoveryProviderAdapter,
            format!("{what} sets `discoveryProvider` but uses `{adapter}`; only `test-discovery` runs yield a discovery receipt"),
            "Use `adapter: test-discovery`, or remove `discoveryProvider`.",
        );
    }
    if let Some(receiver) = &p.discovery_provider {
        match declared.providers.get(&receiver.value) {
            None if receiver.value.as_str() != "discovery" => out.push(
                receiver.pos,
                Check::UnknownDiscoveryProvider,
                format!("{what} sends its discovery receipt to `{}`, which is not a provider of this change", receiver.value),
                format!("Declare a `test-discovery` provider `{}` with `capability: discovery`, or use the default receiver `discovery`.", receiver.value),
            ),
            Some((r, _)) if r.adapter.value != Adapter::TestDiscovery || r.capability() != Some(CapabilityName::discovery()) => {
                out.push(
                    receiver.pos,
                    Check::DiscoveryProviderAdapter,
                    format!(
                        "{what} sends its discovery receipt to `{}`, which is a `{}` provider of `{}`, not a `test-discovery` provider of `discovery`",
                        receiver.value,
                        r.adapter.value,
                        r.capability().map_or_else(|| "nothing".to_owned(), |c| c.to_string())
                    ),
                    format!("Make `{}` a `test-discovery` provider with `capability: discovery`.", receiver.value),
                );
            }
            _ => {}
        }
    }
    // Contract.
    if adapter == Adapter::ContractDigest {
        let sides = p.contract.as_ref().map_or(0, BTreeMap::len);
        if sides < 2 {
            out.push(
                p.adapter.pos,
                Check::ContractSingleRepository,
                format!("{what} compares a contract across {sides} repository; a shared contract needs at least two"),
                "Name the contract's path in every repository that shares it (at least two).",
            );
        }
    }
    for (repo, path) in p.contract.iter().flatten() {
        known_repo(declared, out, repo, path.pos, &what);
        check_path(out, &format!("the `{repo}` contract path of {what}"), path);
    }
    // Paths.
    if let Some(report) = &p.report {
        check_path(out, &format!("the report of {what}"), report);
    }
    for input in p.inputs.iter().flatten() {
        let (_, entry) = crate::pattern::split_sign(&input.value);
        let (repo, path) = split_scoped(entry);
        let path = crate::pattern::unescaped(path);
        if let Some(repo) = repo {
            let repo = RepoId::parse(repo).expect("split_scoped checked the grammar");
            known_repo(
                declared,
                out,
                &repo,
                input.pos,
                &format!("input `{}` of {what}", input.value),
            );
        }
        check_path(
            out,
            &format!("input of {what}"),
            &Spanned::new(path.to_owned(), input.pos),
        );
    }
    for artifact in p.artifacts.iter().flatten() {
        check_path(out, &format!("artifact of {what}"), artifact);
    }
    check_env(out, &what, p.env.as_ref());
    // Claims.
    if let (ClaimScope::Listed(ids), Some(capability)) = (&p.claims, &capability) {
        let mut proves: BTreeSet<CapabilityName> = p.proven_capabilities().into_iter().collect();
        proves.insert(capability.clone());
        for id in ids {
            let claim = claims.get(&id.value);
            let problem = match claim {
                None => Some("is not a claim of this change".to_owned()),
                Some(c) if !c.required_capabilities().iter().any(|r| proves.contains(r)) => {
                    Some(format!("does not require `{capability}`"))
                }
                Some(_) => None,
            };
            if let Some(problem) = problem {
                out.push(
                    id.pos,
                    Check::UnknownClaim,
                    format!("{what} vouches for claim `{}`, which {problem}", id.value),
                    "List only claims of evidence.yaml that require this provider's capability, or use `claims: declared`.",
                );
            }
        }
    }
}

fn check_service(declared: &Declared<'_>, s: &Service, out: &mut Out<'_>) {
    let what = format!("service `{}`", s.id.value);
    if let Some(repo) = &s.repository {
        known_repo(declared, out, &repo.value, repo.pos, &what);
    } else if declared.repositories.default().is_none() {
        out.push(
            s.id.pos,
            Check::RepositoryRequired,
            format!("{what} names no `repository`, and the workspace has several"),
            format!("Add `repository: <id>` to {what}."),
        );
    }
    if s.command.is_none() {
        out.push(
            s.id.pos,
            Check::MissingCommand,
            format!("{what} has no `command` to start it"),
            format!("Add `command: [<program>, <args>...]` to {what}."),
        );
    }
    check_env(out, &what, s.env.as_ref());
    let Some(readiness) = &s.readiness else {
        out.push(
            s.id.pos,
            Check::ReadinessUrlInvalid,
            format!("{what} has no readiness probe, so nothing can tell when it is ready"),
            "Add `readiness: {url: http://127.0.0.1:<port>/health, expectBody: <identity>}`.",
        );
        return;
    };
    match &readiness.url {
        None => out.push(
            readiness.pos,
            Check::ReadinessUrlInvalid,
            format!("the readiness probe of {what} has no `url`"),
            "Add `url: http://127.0.0.1:<port>/health`.",
        ),
        Some(url) => match url.value.literal_port() {
            Ok(_) => {}
            Err(UrlProblem::NoPort) => out.push(
                url.pos,
                Check::ReadinessPortMissing,
                format!("the readiness URL of {what} (`{}`) has no literal port", url.value),
                "Write the port in the URL (`http://127.0.0.1:4173/health`) so the probe and the port lock agree.",
            ),
            Err(UrlProblem::Invalid(why)) => out.push(
                url.pos,
                Check::ReadinessUrlInvalid,
                format!("the readiness URL of {what} (`{}`) cannot be probed: {why}", url.value),
                "Write it as `http://127.0.0.1:<port>/<path>`.",
            ),
        },
    }
    if readiness
        .expect_header
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && readiness.expect_body.is_none()
    {
        out.push(
            readiness.pos,
            Check::ReadinessStatusOnly,
            format!("the readiness probe of {what} checks only the status, which any server on that port would pass"),
            "Add `expectHeader` or `expectBody` with something only this service answers (e.g. `${PROOFGRAPH_RUN_ID}`).",
        );
    }
}

/// The identity of one execution: identical commands in one run execute once.
fn execution_key(p: &Provider, default_repo: Option<&RepoId>) -> impl Ord + use<> {
    let env: Vec<(String, String)> = p
        .env
        .iter()
        .flatten()
        .map(|(k, v)| (k.to_string(), v.value.clone()))
        .collect();
    let env_from: Vec<String> = p
        .env_from
        .iter()
        .flatten()
        .map(|e| e.value.to_string())
        .collect();
    (
        p.command.as_ref().map(|c| c.value.clone()),
        p.repository
            .as_ref()
            .map(|r| r.value.clone())
            .or_else(|| default_repo.cloned()),
        env,
        env_from,
        p.timeout_ms.as_ref().map(|t| t.value),
    )
}

fn check_report_collisions(declared: &Declared<'_>, findings: &mut Vec<Finding>) {
    let default = declared.repositories.default();
    type Writers<'a> = Vec<(&'a Provider, &'a Arc<str>)>;
    let mut writers: BTreeMap<(Option<RepoId>, String), Writers<'_>> = BTreeMap::new();
    // A discovery receiver with a producer never runs its own command: its receipt comes
    // from its producer's run, so it writes nothing.
    let produced: BTreeSet<&str> = declared
        .providers
        .values()
        .filter_map(|(p, _)| p.discovery_receiver())
        .collect();
    for (p, file) in declared.providers.values() {
        let Some(report) = &p.report else { continue };
        if produced.contains(p.id.value.as_str())
            && p.capability()
                .is_some_and(|c| c == CapabilityName::discovery())
        {
            continue;
        }
        let repo = p
            .repository
            .as_ref()
            .map(|r| r.value.clone())
            .or_else(|| default.cloned());
        let normalized = report.value.trim_start_matches("./").to_owned();
        writers
            .entry((repo, normalized))
            .or_default()
            .push((p, file));
    }
    for ((_, path), list) in writers {
        let keys: BTreeSet<_> = list
            .iter()
            .map(|(p, _)| execution_key(p, default))
            .collect();
        if keys.len() < 2 {
            continue;
        }
        let names: Vec<String> = list
            .iter()
            .map(|(p, _)| format!("`{}`", p.id.value))
            .collect();
        for (p, file) in &list {
            let pos = p.report.as_ref().map_or(p.id.pos, |r| r.pos);
            findings.push(Finding {
                file: Arc::clone(file),
                pos,
                check: Check::ReportPathCollision,
                message: format!(
                    "providers {} run different commands but all write `{path}`",
                    names.join(", ")
                ),
                fix: "Give each provider its own report path.".to_owned(),
            });
        }
    }
}

fn check_cycles(declared: &Declared<'_>, findings: &mut Vec<Finding>) {
    let mut graph: DiGraph<&ProviderId, (), u32> = DiGraph::default();
    let index: std::collections::HashMap<&ProviderId, NodeIndex<u32>> = declared
        .providers
        .keys()
        .map(|id| (id, graph.add_node(id)))
        .collect();
    for (id, (p, _)) in declared.providers {
        for dep in p.depends_on.iter().flatten() {
            if let Some(from) = index.get(&dep.value) {
                graph.add_edge(*from, index[id], ());
            }
        }
        if let Some(receiver) = p
            .discovery_receiver()
            .and_then(|r| ProviderId::parse(r).ok())
            && let Some(to) = index.get(&receiver)
            && *to != index[id]
        {
            graph.add_edge(index[id], *to, ());
        }
    }
    for scc in tarjan_scc(&graph) {
        let cyclic = scc.len() > 1 || graph.contains_edge(scc[0], scc[0]);
        if !cyclic {
            continue;
        }
        let members: BTreeSet<NodeIndex<u32>> = scc.iter().copied().collect();
        let start = *scc
            .iter()
            .min_by_key(|n| graph[**n])
            .expect("an SCC is never empty");
        let path = cycle_through(&graph, start, &members);
        let names: Vec<String> = path.iter().map(|n| format!("`{}`", graph[*n])).collect();
        let edges: Vec<String> = path
            .windows(2)
            .map(|w| format!("`{}` runs before `{}`", graph[w[0]], graph[w[1]]))
            .collect();
        let first = graph[start];
        let (p, file) = &declared.providers[first];
        let pos = p
            .depends_on
            .iter()
            .flatten()
            .next()
            .map_or(p.id.pos, |d| d.pos);
        findings.push(Finding {
            file: Arc::clone(file),
            pos,
            check: Check::DependencyCycle,
            message: format!(
                "dependency cycle {}: {}",
                names.join(" → "),
                edges.join(", ")
            ),
            fix: "Remove one of these `dependsOn` (or `discoveryProvider`) edges.".to_owned(),
        });
    }
}

/// A closed walk from `start` back to itself inside one strongly connected
/// component (breadth-first, so it is a shortest cycle through `start`).
fn cycle_through(
    graph: &DiGraph<&ProviderId, (), u32>,
    start: NodeIndex<u32>,
    members: &BTreeSet<NodeIndex<u32>>,
) -> Vec<NodeIndex<u32>> {
    let mut parent: BTreeMap<NodeIndex<u32>, NodeIndex<u32>> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        let mut next: Vec<_> = graph
            .neighbors(node)
            .filter(|n| members.contains(n))
            .collect();
        next.sort_by_key(|n| graph[*n]);
        for n in next {
            if n == start {
                let mut path = vec![start];
                let mut at = node;
                while at != start {
                    path.push(at);
                    at = parent[&at];
                }
                path.push(start);
                let last = path.len() - 1;
                path[1..last].reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = parent.entry(n) {
                e.insert(node);
                queue.push_back(n);
            }
        }
    }
    vec![start, start]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_must_be_literal() {
        let port = |text: &str| crate::readiness::ReadinessUrl::parse(text).literal_port();
        let invalid = |text: &str| matches!(port(text), Err(UrlProblem::Invalid(_)));
        assert_eq!(port("http://127.0.0.1:4173/health"), Ok(4173));
        assert_eq!(port("http://[::1]:9000/x"), Ok(9000));
        assert_eq!(port("http://localhost/health"), Err(UrlProblem::NoPort));
        assert_eq!(port("http://localhost:/health"), Err(UrlProblem::NoPort));
        // The probe speaks plain HTTP: an https URL is refused here, not during `prove`.
        assert!(invalid("https://localhost:8443"));
        assert!(invalid("http://localhost:${PORT}/"));
        assert!(invalid("ftp://host:21"));
        assert!(invalid("http://:80"));
        assert!(invalid("http://h:99999"));
    }

    #[test]
    fn paths_stay_inside() {
        assert!(lexically_inside("src/**").is_ok());
        assert!(lexically_inside("./a/b").is_ok());
        assert!(lexically_inside("/etc/passwd").is_err());
        assert!(lexically_inside("a/../../b").is_err());
        assert!(lexically_inside("..\\x").is_err());
    }

    #[test]
    fn scoped_inputs() {
        assert_eq!(
            split_scoped("api:openapi.yaml"),
            (Some("api"), "openapi.yaml")
        );
        assert_eq!(split_scoped("src/**"), (None, "src/**"));
        assert_eq!(split_scoped("C:/x"), (None, "C:/x"));
    }

    #[test]
    fn secret_names() {
        let n = |s: &str| EnvName::parse(s).expect("valid");
        assert!(is_secret_name(&n("GITHUB_TOKEN")));
        assert!(is_secret_name(&n("db_password")));
        assert!(is_secret_name(&n("STRIPE_API_KEY")));
        assert!(!is_secret_name(&n("NODE_ENV")));
    }
}
