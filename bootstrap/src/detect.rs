//! `detect`: from the claims' required capabilities, the existing providers
//! and each repository's manifests, the candidate providers and what stays
//! unresolved.
//!
//! Per unwired capability and target repository, the ecosystem readers
//! propose; then one rule decides confidence: a high-grade proposal becomes
//! a **high**-confidence, recommended candidate only when it is the only
//! proposal of its slot that is not an alternative. Otherwise every
//! high-grade proposal becomes **ambiguous**, and the slot gets an
//! [`Unresolved`] entry with the next action. Naming: `<capability>` in a
//! single-repository workspace, else `<capability>-<repo>` with explicit
//! `capability` and `repository`; a test provider not named `test` gets a
//! `discoveryProvider` and a receiver candidate `discovery-<repo>`.

use proofgraph_graph::model::{Claim, Provider};
use proofgraph_graph::{CapabilityName, ProviderId, RepoId};
use serde_json::Value;

use crate::host::{self, Host};
use crate::model::{Candidate, Confidence, Detection, Repo, Unresolved, UnresolvedReason};
use crate::proposal::{Proposal, WHOLE_REPOSITORY, show};
use crate::scan::RepoFacts;
use crate::wiring::{self, Gap, Target};

/// What detection worked out, for `detect` and `doctor`.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// The public result.
    pub(crate) detection: Detection,
    /// The required capabilities no existing provider wires.
    pub(crate) gaps: Vec<Gap>,
}

/// Proposes providers for every required capability the existing providers
/// do not wire, reading each target repository's manifests and running
/// nothing. A proposal whose program `host` does not find is shown with
/// what to install, never proposed.
pub fn detect(repos: &[Repo], claims: &[Claim], existing: &[Provider], host: &Host) -> Detection {
    analyze(repos, claims, existing, host).detection
}

/// Capabilities only an outside authority can vouch for.
const EXTERNAL: [&str; 3] = ["review", "acceptance", "semantic-acceptance"];

struct Detector<'a> {
    repos: &'a [Repo],
    host: &'a Host,
    existing: &'a [Provider],
    gaps: &'a [Gap],
    facts: Vec<Option<RepoFacts>>,
    out: Detection,
}

pub(crate) fn analyze(
    repos: &[Repo],
    claims: &[Claim],
    existing: &[Provider],
    host: &Host,
) -> Analysis {
    let needs = wiring::needs(claims);
    let gaps = wiring::gaps(&needs, existing);
    let mut d = Detector {
        repos,
        host,
        existing,
        gaps: &gaps,
        facts: vec![None; repos.len()],
        out: Detection::default(),
    };
    for (i, repo) in repos.iter().enumerate() {
        if repos[..i].iter().any(|r| r.id == repo.id) {
            d.out.warnings.push(format!(
                "repository `{}` is listed twice; the first is used",
                repo.id
            ));
        }
    }
    for need in &needs {
        if !need.capability.is_known() {
            d.out.warnings.push(format!(
                "capability `{}` is not one of the 21 known capabilities; bootstrap has no rule for it",
                need.capability
            ));
        }
        for (repo, claims) in &need.named {
            if !repos.iter().any(|r| r.id == *repo) {
                d.out.warnings.push(format!(
                    "claim{} {} name{} repository `{repo}`, which is not in the workspace",
                    if claims.len() == 1 { "" } else { "s" },
                    list(claims.iter().map(|c| c.as_str())),
                    if claims.len() == 1 { "s" } else { "" },
                ));
            }
        }
    }
    for need in &needs {
        d.capability(&need.capability);
    }
    d.unavailable(&needs);
    Analysis {
        detection: d.out,
        gaps,
    }
}

fn list<'s>(items: impl IntoIterator<Item = &'s str>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Detector<'_> {
    fn single(&self) -> bool {
        self.repos.len() == 1
    }

    fn facts(&mut self, repo: &Repo) -> &RepoFacts {
        let index = self
            .repos
            .iter()
            .position(|r| r.id == repo.id)
            .unwrap_or_default();
        let shown = if self.single() {
            String::new()
        } else {
            format!("{}:", repo.id)
        };
        let warnings = &mut self.out.warnings;
        self.facts[index].get_or_insert_with(|| RepoFacts::read(repo, &shown, warnings))
    }

    fn name(&self, capability: &str, repo: &RepoId) -> Option<ProviderId> {
        let text = if self.single() {
            capability.to_owned()
        } else {
            format!("{capability}-{repo}")
        };
        ProviderId::parse(&text).ok()
    }

    fn unresolved(
        &mut self,
        capability: &CapabilityName,
        repository: Option<&RepoId>,
        reason: UnresolvedReason,
        next_action: String,
    ) {
        self.out.unresolved.push(Unresolved {
            capability: capability.clone(),
            repository: repository.cloned(),
            reason,
            next_action,
        });
    }

    /// The repositories (or "anywhere") of `capability`'s gaps.
    fn gap_repos(&self, capability: &CapabilityName) -> Vec<Option<RepoId>> {
        self.gaps
            .iter()
            .filter(|g| g.capability == *capability)
            .map(|g| g.repository.clone())
            .collect()
    }

    fn capability(&mut self, capability: &CapabilityName) {
        let targets = wiring::targets(self.gaps, capability, self.repos);
        if targets.is_empty() {
            return;
        }
        let cap = capability.as_str();
        // Capabilities no project command can prove: one entry per gap.
        if cap == "cross-repo-contract" {
            for repo in self.gap_repos(capability) {
                let action = no_candidate_action(cap, repo.as_ref().unwrap_or(&RepoId::root()));
                self.unresolved(
                    capability,
                    repo.as_ref(),
                    UnresolvedReason::NoSafeProjectCommand,
                    action,
                );
            }
            return;
        }
        if EXTERNAL.contains(&cap) {
            for repo in self.gap_repos(capability) {
                self.unresolved(
                    capability,
                    repo.as_ref(),
                    UnresolvedReason::ExternalAuthority,
                    format!(
                        "Wire an `external` provider with `ci.publicKey` for `{cap}` (the Ed25519 key of the CI system or person that signs the result); bootstrap never proposes one."
                    ),
                );
            }
            return;
        }
        for target in targets {
            let repo = match target {
                Target::Known(repo) => repo,
                Target::Unknown(id) => {
                    self.unresolved(
                        capability,
                        Some(&id),
                        UnresolvedReason::NoSafeProjectCommand,
                        format!(
                            "Add repository `{id}` to proofgraph.yaml, or fix the claims that name it."
                        ),
                    );
                    continue;
                }
            };
            match cap {
                "test" => self.test(capability, repo),
                "discovery" => self.discovery(capability, repo),
                "browser" => {
                    let proposals = self.facts(repo).browser();
                    self.slot(capability, repo, proposals, Vec::new());
                }
                "static-analysis" => {
                    let proposals = self.facts(repo).static_analysis(repo);
                    self.slot(capability, repo, proposals, Vec::new());
                }
                other => {
                    let proposals = self.facts(repo).aliases(other);
                    self.slot(capability, repo, proposals, Vec::new());
                }
            }
        }
    }

    /// Whether `discovery` for `repo` is unwired (a gap) and required.
    fn discovery_gap(&self, repo: &RepoId) -> bool {
        let discovery = CapabilityName::discovery();
        wiring::targets(self.gaps, &discovery, self.repos)
            .iter()
            .any(|t| matches!(t, Target::Known(r) if r.id == *repo))
    }

    fn test(&mut self, capability: &CapabilityName, repo: &Repo) {
        let host = self.host;
        let scan = self.facts(repo).test(repo, host);
        self.slot(capability, repo, scan.proposals, scan.no_count);
    }

    fn discovery(&mut self, capability: &CapabilityName, repo: &Repo) {
        // Handled with `test` when test is also unwired here.
        let test = CapabilityName::test();
        let test_targets = wiring::targets(self.gaps, &test, self.repos);
        if test_targets
            .iter()
            .any(|t| matches!(t, Target::Known(r) if r.id == repo.id))
        {
            let has_high = self.out.candidates.iter().any(|c| {
                c.capability == test && c.repository == repo.id && c.confidence == Confidence::High
            });
            if !has_high {
                self.unresolved(
                    capability,
                    Some(&repo.id),
                    UnresolvedReason::StructuredTestCountUnavailable,
                    format!(
                        "Resolve `test` for `{}` first: the test-discovery provider that proves it also proves discovery (named `test`, or through its `discoveryProvider`).",
                        repo.id
                    ),
                );
            }
            return;
        }
        // Test is wired by an existing provider whose discovery goes nowhere.
        if let Some(p) = wiring::wired_by(self.existing, &test, Some(&repo.id)) {
            let name = p.id.value.clone();
            let action = if p.adapter.value == proofgraph_graph::Adapter::TestDiscovery {
                format!(
                    "{}; init never edits an existing provider.",
                    receiver_action(&name, (!self.single()).then_some(&repo.id))
                )
            } else {
                format!(
                    "Provider `{name}` proves test with adapter `{}`, which yields no test count: wire a `test-discovery` provider with a structured `report` for discovery.",
                    p.adapter.value
                )
            };
            self.unresolved(
                capability,
                Some(&repo.id),
                UnresolvedReason::StructuredTestCountUnavailable,
                action,
            );
            return;
        }
        // Discovery required without test: a test-discovery provider with
        // capability discovery proves it on its own.
        let host = self.host;
        let scan = self.facts(repo).test(repo, host);
        self.slot(capability, repo, scan.proposals, scan.no_count);
    }

    /// Applies the one-candidate rule to a slot's proposals and records
    /// candidates and, without a high one, the unresolved entry.
    fn slot(
        &mut self,
        capability: &CapabilityName,
        repo: &Repo,
        mut proposals: Vec<Proposal>,
        no_count: Vec<String>,
    ) {
        for p in &mut proposals {
            self.check_programs(p);
        }
        let contenders = proposals
            .iter()
            .filter(|p| p.grade != Confidence::Alternative && p.missing.is_none())
            .count();
        let sole_high = contenders == 1
            && proposals
                .iter()
                .any(|p| p.grade == Confidence::High && p.missing.is_none());
        if !sole_high {
            for p in proposals
                .iter_mut()
                .filter(|p| p.grade == Confidence::High && p.missing.is_none())
            {
                p.grade = Confidence::Ambiguous;
            }
        }
        let Some(name) = self.name(capability.as_str(), &repo.id) else {
            self.out.warnings.push(format!(
                "no valid provider name for `{capability}` in `{}`",
                repo.id
            ));
            return;
        };
        let is_test = capability.as_str() == "test";
        let receiver = (is_test && name.as_str() != "test")
            .then(|| self.name("discovery", &repo.id))
            .flatten();
        let feeds_discovery = self.discovery_gap(&repo.id);
        let discovery_wired = if feeds_discovery {
            None
        } else {
            wiring::wired_by(self.existing, &CapabilityName::discovery(), Some(&repo.id))
                .map(|p| p.id.value.clone())
        };
        for p in &proposals {
            let mut p = p.clone();
            if is_test && let Some(other) = &discovery_wired {
                if p.grade == Confidence::High {
                    p.grade = Confidence::Review;
                }
                p.evidence.push(format!(
                    "discovery for `{}` is already wired by `{other}`; decide which run should write the discovery receipt",
                    repo.id
                ));
            }
            let wants_receiver = is_test
                && feeds_discovery
                && p.adapter.is_some()
                && p.missing.is_none()
                && receiver.is_some();
            if wants_receiver && let Some(r) = &receiver {
                p = p.field("discoveryProvider", Value::String(r.to_string()));
            }
            let candidate = self.candidate(capability, repo, &name, &p);
            self.out.candidates.push(candidate);
            if wants_receiver && let Some(r) = &receiver {
                let mut receiver_proposal = p.clone();
                receiver_proposal
                    .fields
                    .retain(|(k, _)| *k != "discoveryProvider");
                receiver_proposal.evidence = vec![format!(
                    "receives the discovery receipt of `{name}`: the same command, run once for both (proofgraph shares identical executions)"
                )];
                let discovery = CapabilityName::discovery();
                let candidate = self.candidate(&discovery, repo, r, &receiver_proposal);
                self.out.candidates.push(candidate);
            }
        }
        if sole_high {
            return;
        }
        let shown = |p: &Proposal| match p.command() {
            Some(argv) => format!("`{name}` ({}: `{}`)", p.label, show(&argv)),
            None => format!("`{name}` ({})", p.label),
        };
        let contenders: Vec<&Proposal> = proposals
            .iter()
            .filter(|p| p.grade != Confidence::Alternative && p.missing.is_none())
            .collect();
        let runnable: Vec<&Proposal> = proposals
            .iter()
            .filter(|p| p.adapter.is_some() && p.missing.is_none())
            .collect();
        let mut missing: Vec<&str> = proposals
            .iter()
            .filter_map(|p| p.missing.as_deref())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let cap = capability.as_str();
        let (reason, action) = if proposals.is_empty() {
            if !no_count.is_empty() {
                (
                    UnresolvedReason::StructuredTestCountUnavailable,
                    format!(
                        "{}; make the test command write a structured report (JUnit XML, TAP, or a runner's JSON) to a file and wire it as a `test-discovery` provider with `report`, `reportFormat` and `minimum`.",
                        capitalize(&no_count.join("; "))
                    ),
                )
            } else {
                (
                    UnresolvedReason::NoSafeProjectCommand,
                    no_candidate_action(cap, &repo.id),
                )
            }
        } else if runnable.is_empty() && !missing.is_empty() {
            (
                UnresolvedReason::CommandUnavailable,
                format!(
                    "{}, then run `proofgraph evidence detect` again: {} for `{}` need{} it.",
                    capitalize(
                        &missing
                            .iter()
                            .map(|m| host::install_hint(m))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                    proposals
                        .iter()
                        .filter(|p| p.missing.is_some())
                        .map(|p| format!("`{name}` ({})", p.label))
                        .collect::<Vec<_>>()
                        .join(", "),
                    repo.id,
                    if proposals.iter().filter(|p| p.missing.is_some()).count() == 1 {
                        "s"
                    } else {
                        ""
                    },
                ),
            )
        } else if runnable.is_empty() {
            (
                UnresolvedReason::NoSafeProjectCommand,
                format!(
                    "Bootstrap refused {}; make the script safe (no sudo, curl, wget, `rm -rf` or command substitution, in it or its pre/post hooks) or wire `{name}` by hand.",
                    proposals
                        .iter()
                        .map(|p| p.label.clone())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        } else if contenders.len() > 1 {
            (
                UnresolvedReason::Ambiguous,
                format!(
                    "Choose one of {} and add it to execution.yaml{}.",
                    contenders
                        .iter()
                        .map(|p| shown(p))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if is_test {
                        ", or wire each suite as its own test-discovery provider with its own discoveryProvider"
                    } else {
                        ""
                    }
                ),
            )
        } else if contenders.is_empty() && runnable.len() > 1 {
            (
                UnresolvedReason::NeedsReview,
                format!(
                    "Check {} and add the ones that prove `{cap}` for `{}` to execution.yaml (a second provider needs its own name and `capability: {cap}`).",
                    runnable
                        .iter()
                        .map(|p| shown(p))
                        .collect::<Vec<_>>()
                        .join(", "),
                    repo.id
                ),
            )
        } else {
            let first = contenders.first().copied().or(runnable.first().copied());
            (
                UnresolvedReason::NeedsReview,
                match first {
                    Some(p) => format!(
                        "Check candidate {} and add it to execution.yaml if it proves `{cap}` for `{}`.",
                        shown(p),
                        repo.id
                    ),
                    None => no_candidate_action(cap, &repo.id),
                },
            )
        };
        self.unresolved(capability, Some(&repo.id), reason, action);
    }

    fn candidate(
        &self,
        capability: &CapabilityName,
        repo: &Repo,
        name: &ProviderId,
        p: &Proposal,
    ) -> Candidate {
        let (cap_field, repo_field) = if self.single() {
            // The name is the capability, except for a discovery receiver.
            let cap = (name.as_str() != capability.as_str()).then(|| capability.as_str());
            (cap, None)
        } else {
            (Some(capability.as_str()), Some(repo.id.as_str()))
        };
        let provider = p.provider(cap_field, repo_field);
        let mut evidence = p.evidence.clone();
        if !provider.is_null() {
            evidence.push(WHOLE_REPOSITORY.to_owned());
        }
        Candidate {
            capability: capability.clone(),
            repository: repo.id.clone(),
            name: name.clone(),
            recommended: p.grade == Confidence::High && !provider.is_null(),
            provider,
            confidence: p.grade,
            evidence,
            setup: p.setup.clone(),
        }
    }

    /// Marks a proposal whose command needs a program the host does not
    /// have: shown with what to install, never proposed.
    fn check_programs(&self, p: &mut Proposal) {
        let Some(command) = p.command().filter(|_| p.adapter.is_some()) else {
            return;
        };
        let Some(program) = host::programs(&command)
            .into_iter()
            .find(|program| !self.host.finds(program))
        else {
            return;
        };
        p.evidence.push(format!(
            "not proposed: it would run `{}`, but `{program}` is not on PATH; {}",
            show(&command),
            host::install_hint(&program)
        ));
        p.grade = Confidence::Review;
        p.missing = Some(program);
    }

    /// Wired capabilities whose provider's program cannot be started.
    fn unavailable(&mut self, needs: &[wiring::Need]) {
        let mut seen: Vec<ProviderId> = Vec::new();
        for need in needs {
            let mut repos: Vec<Option<&RepoId>> = need.named.iter().map(|(r, _)| Some(r)).collect();
            if !need.anywhere.is_empty() {
                repos.push(None);
            }
            for repo in repos {
                let Some(p) = wiring::wired_by(self.existing, &need.capability, repo) else {
                    continue;
                };
                if seen.contains(&p.id.value) {
                    continue;
                }
                if let Some((id, program, missing)) =
                    wiring::missing_program(p, self.repos, self.host)
                {
                    seen.push(id.clone());
                    let action = match missing {
                        wiring::Missing::Path => format!(
                            "Provider `{id}` runs `{program}`, which does not exist in its repository, and its setup does not make it: restore it or fix the provider's `command`."
                        ),
                        wiring::Missing::NotOnPath => format!(
                            "Provider `{id}` runs `{program}`, which is not on PATH: {}, or fix the provider's `command`.",
                            host::install_hint(&program)
                        ),
                    };
                    self.unresolved(
                        &need.capability,
                        p.repository.as_ref().map(|r| &r.value).or(repo),
                        UnresolvedReason::CommandUnavailable,
                        action,
                    );
                }
            }
        }
    }
}

/// How to give test provider `name` a discovery receiver: the implicit
/// `discovery` in a single-repository workspace, else a declared
/// `discovery-<repo>` (per repository, so that claims naming repositories
/// find one there).
pub(crate) fn receiver_action(name: &ProviderId, repo: Option<&RepoId>) -> String {
    match repo {
        None => format!(
            "Add `discoveryProvider: discovery` to provider `{name}` (the implicit receiver, which needs no declaration)"
        ),
        Some(repo) => format!(
            "Add `discoveryProvider: discovery-{repo}` to provider `{name}` and declare `discovery-{repo}` (adapter test-discovery, capability discovery, repository {repo}, the same command and report)"
        ),
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn no_candidate_action(capability: &str, repo: &RepoId) -> String {
    match capability {
        "test" | "discovery" => format!(
            "Add a test runner to `{repo}` that writes a structured report with a test count (JUnit XML, TAP, vitest/jest/mocha JSON, libtest or go test JSON), then wire it as a `test-discovery` provider with `report`, `reportFormat` and `minimum: 1`."
        ),
        "browser" => format!(
            "Add `@playwright/test` and a playwright.config.ts to `{repo}`, annotate each browser test with `{{type: \"claim\", description: <claim id>}}`, then wire a `playwright` provider."
        ),
        "static-analysis" => format!(
            "Add a `lint` or `typecheck` script (or a linter configuration) to `{repo}`, then wire a `command` provider that runs it."
        ),
        "cross-repo-contract" => "Wire a `contract-digest` provider whose `contract` maps each repository id to its copy of the shared contract file (at least two repositories).".to_owned(),
        "mutation" => format!(
            "Wire a `command` provider in `{repo}` that runs the project's mutation tool, with `classification` behavioral-kill or test-failure."
        ),
        other => format!(
            "Wire a provider for `{other}` in `{repo}` by hand: a `command` that checks it, or an `external` provider for a system that signs its result."
        ),
    }
}
