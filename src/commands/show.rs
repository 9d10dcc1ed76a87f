//! `proofgraph show <change>`: the change's claims (with which providers cover
//! each required capability), its providers and services, and the workspace's
//! repositories.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::base::diagnostic::{self, Diagnostic};
use crate::load::workspace::{Change, Workspace};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};
use proofgraph_graph::model::{ClaimScope, Provider, Service};

/// A claim as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimView {
    /// The claim id.
    pub id: String,
    /// The scenario.
    pub scenario: Option<String>,
    /// low, medium or high.
    pub impact: Option<&'static str>,
    /// The capabilities as written.
    pub capabilities: Vec<String>,
    /// The repositories it concerns, if named.
    pub repositories: Option<Vec<String>>,
    /// Every required capability (with `discovery` implied by `test`) and the
    /// providers that prove it; an empty list is an unwired capability.
    pub coverage: BTreeMap<String, Vec<String>>,
}

/// A provider as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderView {
    /// The provider's name.
    pub id: String,
    /// The file that declares it.
    pub declared_in: String,
    /// The adapter.
    pub adapter: proofgraph_graph::Adapter,
    /// The capability it proves.
    pub capability: Option<String>,
    /// Every capability one run vouches for.
    pub proves: Vec<String>,
    /// The argv.
    pub command: Option<Vec<String>>,
    /// The report path.
    pub report: Option<String>,
    /// The report format.
    pub report_format: Option<proofgraph_graph::model::ReportFormat>,
    /// The discovery floor.
    pub minimum: Option<u64>,
    /// Who receives the discovery receipt.
    pub discovery_provider: Option<String>,
    /// The timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The repository.
    pub repository: Option<String>,
    /// The repositories of a multi-repository provider.
    pub repositories: Option<Vec<String>>,
    /// The declared inputs.
    pub inputs: Option<Vec<String>>,
    /// The declared resources.
    pub resources: Option<Vec<String>>,
    /// Providers that run first.
    pub depends_on: Option<Vec<String>>,
    /// Literal environment values.
    pub env: Option<BTreeMap<String, String>>,
    /// Inherited environment names.
    pub env_from: Option<Vec<String>>,
    /// Services needed.
    pub services: Option<Vec<String>>,
    /// Playwright project.
    pub project: Option<String>,
    /// Extra capabilities.
    pub outputs: Option<Vec<String>>,
    /// Browser input mode.
    pub input_mode: Option<proofgraph_graph::model::InputMode>,
    /// `"declared"` or the listed claim ids.
    pub claims: serde_json::Value,
    /// Contract path per repository.
    pub contract: Option<BTreeMap<String, String>>,
    /// External signer.
    pub ci_issuer: Option<String>,
    /// private or host.
    pub network: Option<proofgraph_graph::model::Network>,
    /// Critical case ids.
    pub critical_cases: Option<Vec<String>>,
}

/// A service's readiness probe as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ReadinessView {
    /// The polled URL.
    pub url: Option<String>,
    /// Expected headers.
    pub expect_header: Option<BTreeMap<String, String>>,
    /// Expected body text.
    pub expect_body: Option<String>,
    /// Poll timeout.
    pub timeout_ms: Option<u64>,
}

/// A service as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceView {
    /// The service's name.
    pub id: String,
    /// The argv.
    pub command: Option<Vec<String>>,
    /// The repository.
    pub repository: Option<String>,
    /// The readiness probe.
    pub readiness: Option<ReadinessView>,
    /// Literal environment values.
    pub env: Option<BTreeMap<String, String>>,
    /// Inherited environment names.
    pub env_from: Option<Vec<String>>,
    /// private or host.
    pub network: Option<proofgraph_graph::model::Network>,
}

/// A repository as shown.
#[derive(Debug, Clone, Serialize)]
pub struct RepositoryView {
    /// The id.
    pub id: String,
    /// The path, relative to the root.
    pub path: String,
}

/// The change as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeView {
    /// The change's name.
    pub name: String,
    /// The evidence file, if present.
    pub evidence_file: Option<String>,
    /// The execution file, if present.
    pub execution_file: Option<String>,
    /// The claims.
    pub claims: Vec<ClaimView>,
    /// The providers, by name.
    pub providers: Vec<ProviderView>,
    /// The services, by name.
    pub services: Vec<ServiceView>,
}

/// The payload of `show`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ShowPayload {
    /// The change.
    pub change: Option<ChangeView>,
    /// The workspace's repositories.
    pub repositories: Vec<RepositoryView>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for ShowPayload {
    fn human(&self, out: &mut String) {
        let Some(change) = &self.change else { return };
        let _ = writeln!(out, "Change {}", change.name);
        let _ = writeln!(out, "\nClaims");
        for claim in &change.claims {
            let impact = claim.impact.map(|i| format!(" [{i}]")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}{impact}: {}",
                claim.id,
                claim.scenario.as_deref().unwrap_or("")
            );
            for (capability, providers) in &claim.coverage {
                let by = if providers.is_empty() {
                    "UNWIRED".to_owned()
                } else {
                    providers.join(", ")
                };
                let _ = writeln!(out, "    {capability:<20} {by}");
            }
        }
        let _ = writeln!(out, "\nProviders");
        if change.providers.is_empty() {
            let _ = writeln!(out, "  (none declared)");
        }
        for p in &change.providers {
            let how = match (&p.command, &p.contract, &p.ci_issuer) {
                (Some(command), _, _) => format!("runs {}", command.join(" ")),
                (None, Some(contract), _) => {
                    let sides: Vec<String> = contract
                        .iter()
                        .map(|(repo, path)| format!("{repo}:{path}"))
                        .collect();
                    format!("compares {}", sides.join(" = "))
                }
                (None, None, Some(issuer)) => format!("accepts results signed by {issuer}"),
                (None, None, None) => "runs nothing".to_owned(),
            };
            let proves = p.proves.join(", ");
            let _ = writeln!(out, "  {} ({}, proves {proves}): {how}", p.id, p.adapter);
        }
        if !change.services.is_empty() {
            let _ = writeln!(out, "\nServices");
            for s in &change.services {
                let url = s
                    .readiness
                    .as_ref()
                    .and_then(|r| r.url.clone())
                    .unwrap_or_default();
                let command = s.command.as_ref().map(|c| c.join(" ")).unwrap_or_default();
                let _ = writeln!(out, "  {}: {command} (ready at {url})", s.id);
            }
        }
        let _ = writeln!(out, "\nRepositories");
        for r in &self.repositories {
            let _ = writeln!(out, "  {}: {}", r.id, r.path);
        }
    }
}

/// Runs `show`.
pub fn run(ctx: &Context, name: &str) -> Report<ShowPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = Workspace::load(&resolution.root.path);
    let change_name = match workspace.find_change(name) {
        Ok(c) => c,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let change = workspace.load_change(&change_name);
    let mut status: Vec<Diagnostic> = resolution.notes.clone();
    status.extend(workspace.diagnostics.iter().cloned());
    status.extend(change.diagnostics.iter().cloned());
    status.extend(change.coverage_diagnostics(&workspace));
    diagnostic::sort(&mut status);
    if status.iter().any(Diagnostic::is_error) {
        return Report::failed(status, Verdict::Invalid);
    }
    let repositories = workspace
        .repositories
        .values()
        .map(|r| RepositoryView {
            id: r.id.to_string(),
            path: r.path.clone(),
        })
        .collect();
    let payload = ShowPayload {
        change: Some(change_view(&change, &workspace)),
        repositories,
        root: Some(RootOutput::from(&resolution.root)),
    };
    Report {
        payload: Some(payload),
        status,
        verdict: Verdict::Success,
    }
}

fn strings<T: ToString>(items: &[crate::load::config::decode::Spanned<T>]) -> Vec<String> {
    items.iter().map(|s| s.value.to_string()).collect()
}

fn change_view(change: &Change, workspace: &Workspace) -> ChangeView {
    let claims = change
        .evidence
        .iter()
        .flat_map(|e| &e.claims)
        .map(|claim| {
            let coverage = claim
                .required_capabilities()
                .into_iter()
                .map(|capability| {
                    let by: Vec<String> = change
                        .providers
                        .values()
                        .filter(|w| w.provider.proven_capabilities().contains(&capability))
                        .filter(|w| match &claim.repositories {
                            None => true,
                            Some(repos) => {
                                let theirs = workspace.provider_repositories(&w.provider);
                                repos.iter().any(|r| theirs.contains(&r.value))
                            }
                        })
                        .map(|w| w.provider.id.value.to_string())
                        .collect();
                    (capability.to_string(), by)
                })
                .collect();
            ClaimView {
                id: claim.id.value.to_string(),
                scenario: claim.scenario.as_ref().map(|s| s.value.clone()),
                impact: claim.impact.as_ref().map(|i| i.value.as_str()),
                capabilities: strings(&claim.capabilities),
                repositories: claim.repositories.as_deref().map(strings),
                coverage,
            }
        })
        .collect();
    ChangeView {
        name: change.name.to_string(),
        evidence_file: change
            .has_evidence
            .then(|| format!("openspec/changes/{}/evidence.yaml", change.name)),
        execution_file: change.has_execution.then(|| change.execution_file.clone()),
        claims,
        providers: change
            .providers
            .values()
            .map(|w| provider_view(&w.provider, &w.file))
            .collect(),
        services: change.services.values().map(service_view).collect(),
    }
}

fn env_view(
    env: Option<&BTreeMap<proofgraph_graph::EnvName, crate::load::config::decode::Spanned<String>>>,
) -> Option<BTreeMap<String, String>> {
    env.map(|m| {
        m.iter()
            .map(|(k, v)| (k.to_string(), v.value.clone()))
            .collect()
    })
}

fn provider_view(p: &Provider, file: &str) -> ProviderView {
    ProviderView {
        id: p.id.value.to_string(),
        declared_in: file.to_owned(),
        adapter: p.adapter.value,
        capability: p.capability().map(|c| c.to_string()),
        proves: p
            .proven_capabilities()
            .iter()
            .map(ToString::to_string)
            .collect(),
        command: p.command.as_ref().map(|c| c.value.clone()),
        report: p.report.as_ref().map(|r| r.value.clone()),
        report_format: p.report_format.as_ref().map(|f| f.value),
        minimum: p.minimum.as_ref().map(|m| m.value),
        discovery_provider: p.discovery_provider.as_ref().map(|d| d.value.to_string()),
        timeout_ms: p.timeout_ms.as_ref().map(|t| t.value),
        repository: p.repository.as_ref().map(|r| r.value.to_string()),
        repositories: p.repositories.as_deref().map(strings),
        inputs: p.inputs.as_deref().map(strings),
        resources: p.resources.as_deref().map(strings),
        depends_on: p.depends_on.as_deref().map(strings),
        env: env_view(p.env.as_ref()),
        env_from: p.env_from.as_deref().map(strings),
        services: p.services.as_deref().map(strings),
        project: p.project.as_ref().map(|s| s.value.clone()),
        outputs: p.outputs.as_deref().map(strings),
        input_mode: p.input_mode.as_ref().map(|m| m.value),
        claims: match &p.claims {
            ClaimScope::Declared => serde_json::Value::from("declared"),
            ClaimScope::Listed(ids) => serde_json::Value::from(strings(ids)),
        },
        contract: p.contract.as_ref().map(|c| {
            c.iter()
                .map(|(k, v)| (k.to_string(), v.value.clone()))
                .collect()
        }),
        ci_issuer: p.ci.as_ref().map(|c| c.issuer.value.clone()),
        network: p.network.as_ref().map(|n| n.value),
        critical_cases: p.critical_cases.as_deref().map(strings),
    }
}

fn service_view(s: &Service) -> ServiceView {
    ServiceView {
        id: s.id.value.to_string(),
        command: s.command.as_ref().map(|c| c.value.clone()),
        repository: s.repository.as_ref().map(|r| r.value.to_string()),
        readiness: s.readiness.as_ref().map(|r| ReadinessView {
            url: r.url.as_ref().map(|u| u.value.as_str().to_owned()),
            expect_header: r.expect_header.as_ref().map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.value.clone()))
                    .collect()
            }),
            expect_body: r.expect_body.as_ref().map(|b| b.value.clone()),
            timeout_ms: r.timeout_ms.as_ref().map(|t| t.value),
        }),
        env: env_view(s.env.as_ref()),
        env_from: s.env_from.as_deref().map(strings),
        network: s.network.as_ref().map(|n| n.value),
    }
}
