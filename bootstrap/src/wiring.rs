//! Which required capabilities the existing providers already wire.
//!
//! A claim requiring capability X asks for one provider of X per repository
//! it names, or for any provider of X when it names none (discovery is
//! implied by test). A provider covers a repository when it names it
//! (`repository`, `repositories`, or a `contract` key), or when it names no
//! repository at all — Change Loop's Node.js runtime filters claims by a
//! provider's repositories only when it has some.

use proofgraph_graph::model::{Claim, Provider};
use proofgraph_graph::{CapabilityName, ClaimId, ProviderId, RepoId};

use std::path::PathBuf;

use crate::host::Host;
use crate::model::Repo;

/// One capability the claims require, by repository.
#[derive(Debug, Clone)]
pub(crate) struct Need {
    /// The capability.
    pub(crate) capability: CapabilityName,
    /// Repositories named by claims, with the claims, in first-seen order.
    pub(crate) named: Vec<(RepoId, Vec<ClaimId>)>,
    /// Claims that name no repository.
    pub(crate) anywhere: Vec<ClaimId>,
}

/// A required capability (for a repository, or anywhere) that no existing
/// provider wires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gap {
    /// The capability.
    pub(crate) capability: CapabilityName,
    /// The repository, or `None` for "any provider".
    pub(crate) repository: Option<RepoId>,
    /// The claims that need it.
    pub(crate) claims: Vec<ClaimId>,
}

/// The capabilities the claims require, in the order claims first mention
/// them (`discovery` right after `test`).
pub(crate) fn needs(claims: &[Claim]) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    for claim in claims {
        let id = &claim.id.value;
        let mut caps: Vec<CapabilityName> = Vec::new();
        for c in &claim.capabilities {
            if !caps.contains(&c.value) {
                caps.push(c.value.clone());
            }
            if c.value == CapabilityName::test() && !caps.contains(&CapabilityName::discovery()) {
                caps.push(CapabilityName::discovery());
            }
        }
        for cap in caps {
            let index = match out.iter().position(|n| n.capability == cap) {
                Some(i) => i,
                None => {
                    out.push(Need {
                        capability: cap,
                        named: Vec::new(),
                        anywhere: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let need = &mut out[index];
            match claim.repositories.as_deref() {
                Some(repos) if !repos.is_empty() => {
                    for r in repos {
                        match need.named.iter_mut().find(|(id, _)| *id == r.value) {
                            Some((_, list)) => push_unique(list, id),
                            None => need.named.push((r.value.clone(), vec![id.clone()])),
                        }
                    }
                }
                _ => push_unique(&mut need.anywhere, id),
            }
        }
    }
    out
}

fn push_unique(list: &mut Vec<ClaimId>, id: &ClaimId) {
    if !list.contains(id) {
        list.push(id.clone());
    }
}

/// The repositories a provider names.
pub(crate) fn provider_repos(p: &Provider) -> Vec<RepoId> {
    let mut out: Vec<RepoId> = Vec::new();
    if let Some(r) = &p.repository {
        out.push(r.value.clone());
    }
    for r in p.repositories.iter().flatten() {
        if !out.contains(&r.value) {
            out.push(r.value.clone());
        }
    }
    for r in p.contract.iter().flat_map(|c| c.keys()) {
        if !out.contains(r) {
            out.push(r.clone());
        }
    }
    out
}

/// The provider that wires `capability` for `repository` (any repository
/// when `None`), if one does.
pub(crate) fn wired_by<'p>(
    existing: &'p [Provider],
    capability: &CapabilityName,
    repository: Option<&RepoId>,
) -> Option<&'p Provider> {
    existing.iter().find(|p| {
        p.proven_capabilities().contains(capability)
            && match repository {
                None => true,
                Some(r) => {
                    let repos = provider_repos(p);
                    repos.is_empty() || repos.contains(r)
                }
            }
    })
}

/// The gaps: required capabilities no existing provider wires.
pub(crate) fn gaps(needs: &[Need], existing: &[Provider]) -> Vec<Gap> {
    let mut out = Vec::new();
    for need in needs {
        for (repo, claims) in &need.named {
            if wired_by(existing, &need.capability, Some(repo)).is_none() {
                out.push(Gap {
                    capability: need.capability.clone(),
                    repository: Some(repo.clone()),
                    claims: claims.clone(),
                });
            }
        }
        if !need.anywhere.is_empty() && wired_by(existing, &need.capability, None).is_none() {
            out.push(Gap {
                capability: need.capability.clone(),
                repository: None,
                claims: need.anywhere.clone(),
            });
        }
    }
    out
}

/// The repositories detection looks at for `capability`: those named by
/// unwired slots, else every repository when an "anywhere" slot is unwired.
pub(crate) fn targets<'r>(
    gaps: &[Gap],
    capability: &CapabilityName,
    repos: &'r [Repo],
) -> Vec<Target<'r>> {
    let mine: Vec<&Gap> = gaps
        .iter()
        .filter(|g| g.capability == *capability)
        .collect();
    let named: Vec<&RepoId> = mine.iter().filter_map(|g| g.repository.as_ref()).collect();
    if !named.is_empty() {
        let mut out: Vec<Target<'r>> = repos
            .iter()
            .filter(|r| named.contains(&&r.id))
            .map(Target::Known)
            .collect();
        for id in named {
            if !repos.iter().any(|r| r.id == *id) {
                out.push(Target::Unknown(id.clone()));
            }
        }
        return out;
    }
    if mine.iter().any(|g| g.repository.is_none()) {
        return repos.iter().map(Target::Known).collect();
    }
    Vec::new()
}

/// A repository detection looks at.
#[derive(Debug, Clone)]
pub(crate) enum Target<'r> {
    /// One of the workspace's repositories.
    Known(&'r Repo),
    /// A repository a claim names that the workspace does not have.
    Unknown(RepoId),
}

/// The directory a provider's command runs in: its `repository`, else the
/// only repository of the workspace.
pub(crate) fn home<'r>(p: &Provider, repos: &'r [Repo]) -> Option<&'r Repo> {
    match &p.repository {
        Some(r) => repos.iter().find(|repo| repo.id == r.value),
        None if repos.len() == 1 => repos.first(),
        None => None,
    }
}

/// Why a provider's program cannot be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    /// A path in its repository that does not exist, and its setup does not
    /// make it.
    Path,
    /// A bare name that is not on the job's `PATH` (the provider's own
    /// `env.PATH`, else the host's).
    NotOnPath,
}

/// A provider's program that cannot be started: (provider, program, why).
/// Absolute programs are not checked (preflight and the run check them).
pub(crate) fn missing_program(
    p: &Provider,
    repos: &[Repo],
    host: &Host,
) -> Option<(ProviderId, String, Missing)> {
    let command = &p.command.as_ref()?.value;
    let program = command.first()?;
    let repo = home(p, repos);
    if program.contains('/') {
        if program.starts_with('/') || program.split('/').any(|s| s == "..") {
            return None;
        }
        let repo = repo?;
        let rel = program.trim_start_matches("./");
        let absent = !repo.dir.join(rel).exists() && repo.setup.makes(rel).is_none();
        return absent.then(|| (p.id.value.clone(), rel.to_owned(), Missing::Path));
    }
    let job_path: Option<Vec<PathBuf>> = p
        .env
        .as_ref()
        .and_then(|env| env.iter().find(|(k, _)| k.as_str() == "PATH"))
        .map(|(_, v)| std::env::split_paths(&v.value).collect());
    let missing = crate::host::programs(command)
        .into_iter()
        .find(|name| match &job_path {
            Some(entries) => match repo {
                Some(repo) => !crate::host::finds_in(entries, name, &repo.dir, &repo.setup),
                None => !entries
                    .iter()
                    .filter(|e| e.is_absolute())
                    .any(|e| e.join(name).is_file()),
            },
            None => !host.finds(name),
        })?;
    Some((p.id.value.clone(), missing, Missing::NotOnPath))
}

/// The repository paths a provider runs (its program and argv tokens) that
/// its repository's setup makes, with why: they are not git's to hold.
pub(crate) fn made_by_setup(p: &Provider, repos: &[Repo]) -> Vec<(String, String)> {
    let (Some(repo), Some(command)) = (home(p, repos), &p.command) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for word in &command.value {
        if word.is_empty()
            || word.starts_with('-')
            || word.starts_with('/')
            || (!word.contains('/') && !word.starts_with('.'))
            || word.split('/').any(|s| s == "..")
        {
            continue;
        }
        let rel = word.trim_start_matches("./");
        if let Some(why) = repo.setup.makes(rel)
            && !out.iter().any(|(r, _)| r == rel)
        {
            out.push((rel.to_owned(), why));
        }
    }
    out
}
