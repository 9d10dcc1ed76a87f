//! `doctor`: what stands between the change and a proof run, each with a
//! one-sentence fix. Reads manifests and the git index; runs nothing.
//!
//! | code | when |
//! |---|---|
//! | `unwired_capability` | a required capability (per named repository, or anywhere) has no provider; the fix is the recommended candidate or the unresolved next action |
//! | `command_file_not_in_inputs` | a provider with `inputs` runs an argv token that is a file in its repository, and no input covers it |
//! | `command_file_untracked` | a provider without `inputs` runs a file git does not track (a worktree sandbox would not have it) |
//! | `report_inside_inputs` | a provider's report is covered by its inputs (or, without inputs, tracked by git): each run would change its own inputs |
//! | `unknown_service` | a provider names a service that is not declared |
//! | `missing_discovery_provider` | a test provider not named `test` sends its discovery receipt nowhere |
//! | `test_report_missing` | a `test-discovery` provider declares no `report`, so no test count can be read |
//! | `executable_not_found` | a provider's program is a path in its repository that does not exist |

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use proofgraph_graph::model::{Claim, Provider, Service};
use proofgraph_graph::{Adapter, CapabilityName, RepoId};

use crate::detect::{analyze, receiver_action};
use crate::ecosystem::node::existing_file;
use crate::model::{Confidence, Finding, Repo};
use crate::pattern::covering;
use crate::proposal::show;
use crate::wiring::{self, Gap};

/// Lists every problem `detect`'s inputs reveal, with its fix: unwired
/// capabilities first (in the claims' order), then provider problems (in
/// the providers' order). `services` are the declared services (for
/// `unknown_service`).
pub fn doctor(
    repos: &[Repo],
    claims: &[Claim],
    existing: &[Provider],
    services: &[Service],
) -> Vec<Finding> {
    let analysis = analyze(repos, claims, existing);
    let mut out: Vec<Finding> = analysis
        .gaps
        .iter()
        .map(|gap| unwired(gap, &analysis.detection))
        .collect();
    let mut tracked: BTreeMap<RepoId, Option<BTreeSet<String>>> = BTreeMap::new();
    for p in existing {
        provider_findings(p, repos, services, &mut tracked, &mut out);
    }
    out
}

fn claims_text(gap: &Gap) -> String {
    let names: Vec<String> = gap.claims.iter().map(|c| format!("`{c}`")).collect();
    let s = if names.len() == 1 { "" } else { "s" };
    format!("claim{s} {}", names.join(", "))
}

fn unwired(gap: &Gap, detection: &crate::model::Detection) -> Finding {
    let cap = &gap.capability;
    let place = gap
        .repository
        .as_ref()
        .map_or(String::new(), |r| format!(" in repository `{r}`"));
    let message = format!(
        "capability `{cap}` is required by {}{place} but no provider proves it",
        claims_text(gap)
    );
    let in_scope = |repo: &RepoId| gap.repository.as_ref().is_none_or(|r| r == repo);
    let high = detection.candidates.iter().find(|c| {
        c.confidence == Confidence::High && c.capability == *cap && in_scope(&c.repository)
    });
    // Discovery proven implicitly by a recommended provider named `test`.
    let via_test = (cap.as_str() == "discovery")
        .then(|| {
            detection.candidates.iter().find(|c| {
                c.confidence == Confidence::High
                    && c.name.as_str() == "test"
                    && in_scope(&c.repository)
            })
        })
        .flatten();
    let command = |c: &crate::model::Candidate| {
        c.provider
            .get("command")
            .and_then(|v| v.as_array())
            .map(|a| {
                let argv: Vec<String> = a
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect();
                format!(" (`{}`)", show(&argv))
            })
            .unwrap_or_default()
    };
    let fix = if let Some(c) = high.or(via_test) {
        let also = if high.is_none() {
            ", which proves discovery from the same run"
        } else {
            ""
        };
        format!(
            "Run `proofgraph evidence init <change> --write` to add the recommended provider `{}`{}{also}.",
            c.name,
            command(c)
        )
    } else if let Some(u) = detection.unresolved.iter().find(|u| {
        u.capability == *cap && (gap.repository.is_none() || u.repository == gap.repository)
    }) {
        u.next_action.clone()
    } else {
        format!("Wire a provider whose capability is `{cap}` in execution.yaml.")
    };
    Finding {
        code: "unwired_capability",
        message,
        fix,
        provider: None,
        capability: Some(cap.clone()),
        repository: gap.repository.clone(),
    }
}

fn provider_findings(
    p: &Provider,
    repos: &[Repo],
    services: &[Service],
    tracked: &mut BTreeMap<RepoId, Option<BTreeSet<String>>>,
    out: &mut Vec<Finding>,
) {
    let id = &p.id.value;
    let capability = p.capability();
    let home = wiring::home(p, repos);
    let finding = |code: &'static str, message: String, fix: String| Finding {
        code,
        message,
        fix,
        provider: Some(id.clone()),
        capability: capability.clone(),
        repository: home.map(|r| r.id.clone()),
    };
    let mut tracked_in = |repo: &Repo| -> Option<BTreeSet<String>> {
        tracked
            .entry(repo.id.clone())
            .or_insert_with(|| crate::git::tracked(&repo.dir))
            .clone()
    };
    let report = p
        .report
        .as_ref()
        .map(|r| r.value.trim_start_matches("./").to_owned());
    if p.adapter.value.runs_command()
        && let (Some(repo), Some(command)) = (home, &p.command)
    {
        let files: Vec<String> = command
            .value
            .iter()
            .filter_map(|word| existing_file(&repo.dir, word))
            .filter(|f| Some(f) != report.as_ref())
            .collect();
        match &p.inputs {
            Some(inputs) => {
                let inputs: Vec<String> = inputs.iter().map(|i| i.value.clone()).collect();
                for file in files {
                    if covering(&inputs, repo.id.as_str(), repo.id.as_str(), &file).is_none() {
                        out.push(finding(
                            "command_file_not_in_inputs",
                            format!(
                                "provider `{id}` runs `{file}`, a file in repository `{}`, but its `inputs` do not cover it: editing it would not rerun the provider",
                                repo.id
                            ),
                            format!("Add `{file}` to the `inputs` of provider `{id}`."),
                        ));
                    }
                }
            }
            None => {
                if let Some(known) = tracked_in(repo) {
                    for file in files.into_iter().filter(|f| !known.contains(f)) {
                        out.push(finding(
                            "command_file_untracked",
                            format!(
                                "provider `{id}` runs `{file}`, which git does not track: a worktree sandbox holds only tracked files, and the input digest does not see it"
                            ),
                            format!("Track it with `git add {file}`, or declare `inputs` that cover it and use a copy sandbox."),
                        ));
                    }
                }
            }
        }
    }
    if let (Some(repo), Some(report)) = (home, &report) {
        match &p.inputs {
            Some(inputs) => {
                let inputs: Vec<String> = inputs.iter().map(|i| i.value.clone()).collect();
                if let Some(input) = covering(&inputs, repo.id.as_str(), repo.id.as_str(), report) {
                    out.push(finding(
                        "report_inside_inputs",
                        format!(
                            "provider `{id}` writes its report `{report}` inside its input `{input}`: each run would change its own inputs and expire its receipt"
                        ),
                        format!(
                            "Narrow the `inputs` of `{id}` so that `{input}` no longer covers `{report}`, or write the report under test-results/ outside them."
                        ),
                    ));
                }
            }
            None => {
                if tracked_in(repo).is_some_and(|t| t.contains(report)) {
                    out.push(finding(
                        "report_inside_inputs",
                        format!(
                            "provider `{id}` writes its report `{report}`, which git tracks in repository `{}`, so it is part of the provider's inputs: each run would change them",
                            repo.id
                        ),
                        format!("Stop tracking it (`git rm --cached {report}`) and ignore it, or write the report to an untracked path."),
                    ));
                }
            }
        }
    }
    for service in p.services.iter().flatten() {
        if !services.iter().any(|s| s.id.value == service.value) {
            out.push(finding(
                "unknown_service",
                format!(
                    "provider `{id}` needs service `{}`, which execution.yaml does not declare",
                    service.value
                ),
                format!(
                    "Declare service `{}` under `services` (command, repository, readiness with a literal port and an expected body or header), or remove it from `{id}`.",
                    service.value
                ),
            ));
        }
    }
    if p.adapter.value == Adapter::TestDiscovery {
        if capability == Some(CapabilityName::test())
            && id.as_str() != "test"
            && p.discovery_provider.is_none()
        {
            let repo = if repos.len() == 1 {
                None
            } else {
                Some(home.map_or_else(RepoId::root, |r| r.id.clone()))
            };
            out.push(finding(
                "missing_discovery_provider",
                format!(
                    "provider `{id}` proves test but is not named `test` and declares no `discoveryProvider`, so its discovery receipt goes nowhere"
                ),
                format!("{}.", receiver_action(id, repo.as_ref())),
            ));
        }
        if p.report.is_none() {
            out.push(finding(
                "test_report_missing",
                format!(
                    "provider `{id}` uses test-discovery but declares no `report`, so no test count can be read and discovery stays inconclusive"
                ),
                format!(
                    "Make the command of `{id}` write a structured report to a file and declare it as `report` with its `reportFormat`."
                ),
            ));
        }
    }
    if let Some((_, program)) = wiring::missing_program(p, repos) {
        out.push(finding(
            "executable_not_found",
            format!("provider `{id}` runs `{program}`, which does not exist in its repository"),
            format!("Restore `{program}` or fix the `command` of provider `{id}`."),
        ));
    }
}
