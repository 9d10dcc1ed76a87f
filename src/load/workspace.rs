//! The workspace on disk: the catalog, its repositories, and the changes under
//! `openspec/changes/`, each loaded into typed models with all its diagnostics.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proofgraph_graph::{CapabilityName, ChangeName, ProviderId, RepoId, ServiceId};

use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::config::catalog::{self, Catalog};
use crate::load::config::decode::Sink;
use crate::load::config::evidence::{self, Evidence};
use crate::load::config::execution;
use crate::load::config::load::read_document;
use proofgraph_graph::model::{Provider, Service};

/// The evidence file name inside a change.
pub const EVIDENCE_FILE: &str = "evidence.yaml";
/// The execution file name inside a change.
pub const EXECUTION_FILE: &str = "execution.yaml";

/// Reads one file of a change (`file`, named `shown` in diagnostics): `None` when it does
/// not exist.
pub type ReadFile<'a> =
    dyn Fn(&str, &str) -> Option<Result<crate::load::config::load::Document, Diagnostic>> + 'a;

/// A repository of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// Its id.
    pub id: RepoId,
    /// Its directory as written (relative to the root).
    pub path: String,
    /// Its directory, absolute.
    pub dir: PathBuf,
}

/// The workspace: the OpenSpec root, its catalog and its repositories.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The OpenSpec root.
    pub root: PathBuf,
    /// The catalog, when `proofgraph.yaml` exists and could be read.
    pub catalog: Option<Catalog>,
    /// Whether `proofgraph.yaml` exists.
    pub has_catalog: bool,
    /// The repositories, by id (`root` alone without a catalog).
    pub repositories: BTreeMap<RepoId, Repository>,
    /// Problems with the catalog.
    pub diagnostics: Vec<Diagnostic>,
}

/// Whether `dir` (absolute, normalised) lies in a git work tree: it or a
/// directory above it holds `.git`, and it is not inside a `.git` directory.
/// A repository may be a sibling of the OpenSpec root's (`../api`) or the
/// monorepo above it (`..`); only where it lies matters, not how far up.
fn in_git_work_tree(dir: &Path) -> bool {
    if dir.components().any(|c| c.as_os_str() == ".git") {
        return false;
    }
    dir.ancestors()
        .any(|a| fs_err::symlink_metadata(a.join(".git")).is_ok())
}

impl Workspace {
    /// Loads the catalog at `root` and resolves its repositories.
    pub fn load(root: &Path) -> Self {
        let path = root.join(catalog::FILE_NAME);
        let mut diagnostics = Vec::new();
        let has_catalog = path.exists();
        let catalog = if has_catalog {
            match read_document(&path, catalog::FILE_NAME) {
                Ok(doc) => {
                    let mut sink = Sink::new(catalog::FILE_NAME);
                    let catalog = catalog::decode(&mut sink, &doc.root);
                    diagnostics.extend(sink.into_diagnostics());
                    catalog
                }
                Err(d) => {
                    diagnostics.push(d);
                    None
                }
            }
        } else {
            None
        };
        let mut repositories = BTreeMap::new();
        match &catalog {
            Some(c) if !c.repositories.is_empty() => {
                for repo in c.repositories.values() {
                    let dir = crate::base::paths::normalize(&root.join(&repo.path.value));
                    if !dir.is_dir() {
                        diagnostics.push(
                            Diagnostic::error(
                                Code::RepositoryPathMissing,
                                format!(
                                    "repository `{}` is at `{}`, which is not a directory",
                                    repo.id.value, repo.path.value
                                ),
                            )
                            .at(catalog::FILE_NAME, repo.path.pos)
                            .fix("Point `path` at the repository's directory, relative to the OpenSpec root."),
                        );
                    } else if !in_git_work_tree(&dir) {
                        diagnostics.push(
                            Diagnostic::error(
                                Code::NotAGitRepository,
                                format!(
                                    "repository `{}` is at `{}`, which is not inside a git work tree",
                                    repo.id.value, repo.path.value
                                ),
                            )
                            .at(catalog::FILE_NAME, repo.path.pos)
                            .fix(format!("Point `path` at a directory of a git work tree, or run `git init` in `{}` and add its files.", dir.display())),
                        );
                    }
                    repositories.insert(
                        repo.id.value.clone(),
                        Repository {
                            id: repo.id.value.clone(),
                            path: repo.path.value.clone(),
                            dir,
                        },
                    );
                }
            }
            _ => {
                repositories.insert(
                    RepoId::root(),
                    Repository {
                        id: RepoId::root(),
                        path: ".".to_owned(),
                        dir: root.to_path_buf(),
                    },
                );
            }
        }
        Self {
            root: root.to_path_buf(),
            catalog,
            has_catalog,
            repositories,
            diagnostics,
        }
    }

    /// The repositories a provider belongs to: `repositories`, `repository`
    /// and the keys of `contract`; a provider that names none belongs to the
    /// workspace's only repository, or to none when there are several.
    pub fn provider_repositories(&self, provider: &Provider) -> BTreeSet<RepoId> {
        let mut out: BTreeSet<RepoId> = provider
            .repositories
            .iter()
            .flatten()
            .map(|r| r.value.clone())
            .collect();
        out.extend(provider.repository.iter().map(|r| r.value.clone()));
        out.extend(provider.contract.iter().flat_map(|c| c.keys().cloned()));
        if out.is_empty() && self.repositories.len() == 1 {
            out.extend(self.repositories.keys().cloned());
        }
        out
    }

    /// `openspec/changes` under the root.
    pub fn changes_dir(&self) -> PathBuf {
        self.root.join("openspec").join("changes")
    }

    /// The names of the active changes (not `archive`), sorted.
    pub fn change_names(&self) -> Result<Vec<ChangeName>, Diagnostic> {
        let dir = self.changes_dir();
        let entries = match fs_err::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => {
                return Err(Diagnostic::error(
                    Code::FileUnreadable,
                    format!("failed to list changes: {err}"),
                )
                .surface("openspec.changes")
                .fix("Check that openspec/changes is a readable directory."));
            }
        };
        let mut names = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == "archive" || !entry.path().is_dir() {
                continue;
            }
            if let Ok(change) = ChangeName::parse(name) {
                names.push(change);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Checks a change name given on the command line and that it exists.
    pub fn find_change(&self, name: &str) -> Result<ChangeName, Diagnostic> {
        let change = self.change_name(name)?;
        if name == "archive" || !self.changes_dir().join(name).is_dir() {
            let known = self.change_names().unwrap_or_default();
            let names: Vec<&str> = known.iter().map(ChangeName::as_str).collect();
            let fix = match crate::load::config::decode::did_you_mean(name, &names) {
                Some(s) => format!("Did you mean `{s}`?"),
                None if names.is_empty() => {
                    "There are no changes under openspec/changes/.".to_owned()
                }
                None => format!("Known changes: {}.", names.join(", ")),
            };
            return Err(Diagnostic::error(
                Code::UnknownChange,
                format!("no change named `{name}` under openspec/changes/"),
            )
            .surface("change")
            .fix(fix));
        }
        Ok(change)
    }

    /// `name` as a change name (one directory name), whether or not the change exists.
    pub fn change_name(&self, name: &str) -> Result<ChangeName, Diagnostic> {
        ChangeName::parse(name).map_err(|err| {
            Diagnostic::error(
                Code::InvalidChangeName,
                format!("`{name}` is not a change name: {}", err.problem),
            )
            .surface("change")
            .fix("Pass the directory name of a change under openspec/changes/.")
        })
    }

    /// Loads a change's files into typed models, collecting every diagnostic.
    pub fn load_change(&self, name: &ChangeName) -> Change {
        let dir = self.changes_dir().join(name.as_str());
        self.load_change_from(
            name,
            &|file: &str, shown: &str| {
                let path = dir.join(file);
                path.exists().then(|| read_document(&path, shown))
            },
            "",
        )
    }

    /// Loads a change's files as [`Workspace::load_change`] does, each read by `read`
    /// (`None`: the file does not exist) — the working tree's, or a revision's (then
    /// `shown_prefix` is `<rev>:`, as git names a file at a revision, and starts every
    /// file name in diagnostics).
    pub fn load_change_from(
        &self,
        name: &ChangeName,
        read: &ReadFile<'_>,
        shown_prefix: &str,
    ) -> Change {
        let dir = self.changes_dir().join(name.as_str());
        let shown = |file: &str| format!("{shown_prefix}openspec/changes/{name}/{file}");
        let mut diagnostics = Vec::new();
        let evidence_read = read(EVIDENCE_FILE, &shown(EVIDENCE_FILE));
        let execution_read = read(EXECUTION_FILE, &shown(EXECUTION_FILE));
        let has_evidence = evidence_read.is_some();
        let has_execution = execution_read.is_some();

        let evidence = if let Some(read) = evidence_read {
            let file = shown(EVIDENCE_FILE);
            match read {
                Ok(doc) => {
                    let mut sink = Sink::new(&file);
                    let e = evidence::decode(&mut sink, &doc.root);
                    diagnostics.extend(sink.into_diagnostics());
                    e
                }
                Err(d) => {
                    diagnostics.push(d);
                    None
                }
            }
        } else {
            diagnostics.push(
                Diagnostic::warning(
                    Code::MissingEvidence,
                    format!(
                        "change `{name}` has no evidence.yaml, so it declares nothing to prove"
                    ),
                )
                .surface("change.evidence")
                .fix(format!(
                    "Add {} with the claims the change must prove.",
                    shown(EVIDENCE_FILE)
                )),
            );
            None
        };

        let execution = if let Some(read) = execution_read {
            let file = shown(EXECUTION_FILE);
            match read {
                Ok(doc) => {
                    let mut sink = Sink::new(&file);
                    let e = execution::decode(&mut sink, &doc.root);
                    diagnostics.extend(sink.into_diagnostics());
                    e
                }
                Err(d) => {
                    diagnostics.push(d);
                    None
                }
            }
        } else {
            None
        };

        let mut providers: BTreeMap<ProviderId, Wired> = BTreeMap::new();
        if let Some(embedded) = evidence.as_ref().and_then(|e| e.providers.as_ref()) {
            for (id, provider) in embedded {
                providers.insert(
                    id.clone(),
                    Wired {
                        provider: provider.clone(),
                        file: shown(EVIDENCE_FILE),
                    },
                );
            }
        }
        let mut services = BTreeMap::new();
        if let Some(execution) = &execution {
            for (id, provider) in &execution.providers {
                if let Some(shadowed) = providers.get(id) {
                    diagnostics.push(
                        Diagnostic::warning(
                            Code::ProviderShadowed,
                            format!(
                                "provider `{id}` is declared in both files; execution.yaml's wins over the one embedded in evidence.yaml (line {})",
                                shadowed.provider.id.pos.line
                            ),
                        )
                        .at(&shown(EXECUTION_FILE), provider.id.pos)
                        .fix("Remove the copy in evidence.yaml so there is one definition."),
                    );
                }
                providers.insert(
                    id.clone(),
                    Wired {
                        provider: provider.clone(),
                        file: shown(EXECUTION_FILE),
                    },
                );
            }
            services.clone_from(&execution.services);
        }
        let execution_file = shown(EXECUTION_FILE);
        Change {
            name: name.clone(),
            dir,
            has_evidence,
            has_execution,
            evidence,
            providers,
            services,
            execution_file,
            diagnostics,
        }
    }
}

/// A provider and the file that declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wired {
    /// The provider.
    pub provider: Provider,
    /// The file it was declared in (relative to the root).
    pub file: String,
}

/// One loaded change.
#[derive(Debug, Clone)]
pub struct Change {
    /// Its name.
    pub name: ChangeName,
    /// Its directory.
    pub dir: PathBuf,
    /// Whether `evidence.yaml` exists.
    pub has_evidence: bool,
    /// Whether `execution.yaml` exists.
    pub has_execution: bool,
    /// The decoded evidence, when it could be read.
    pub evidence: Option<Evidence>,
    /// The effective providers: embedded ones overridden by `execution.yaml`'s.
    pub providers: BTreeMap<ProviderId, Wired>,
    /// The services (only `execution.yaml` declares them).
    pub services: BTreeMap<ServiceId, Service>,
    /// Where `execution.yaml` is shown from.
    pub execution_file: String,
    /// Every problem found while loading.
    pub diagnostics: Vec<Diagnostic>,
}

impl Change {
    /// The claim-level warnings that need the whole change: a required
    /// capability that no provider proves, or (for a claim that names
    /// repositories) that no provider of one of those repositories proves.
    pub fn coverage_diagnostics(&self, workspace: &Workspace) -> Vec<Diagnostic> {
        let Some(evidence) = &self.evidence else {
            return Vec::new();
        };
        let shown = format!("openspec/changes/{}/{EVIDENCE_FILE}", self.name);
        // Each capability's provers, once: the repositories any of them belongs to (a claim
        // over many providers costs claims + providers, not their product).
        let mut provers: BTreeMap<CapabilityName, BTreeSet<RepoId>> = BTreeMap::new();
        for wired in self.providers.values() {
            let repos = workspace.provider_repositories(&wired.provider);
            for capability in wired.provider.proven_capabilities() {
                provers
                    .entry(capability)
                    .or_default()
                    .extend(repos.iter().cloned());
            }
        }
        let mut out = Vec::new();
        for claim in &evidence.claims {
            for capability in claim.required_capabilities() {
                let repositories = provers.get(&capability);
                let pos = claim
                    .capabilities
                    .iter()
                    .find(|c| c.value == capability)
                    .map_or(claim.id.pos, |c| c.pos);
                let implied = if capability.as_str() == "discovery" {
                    " (implied by `test`)"
                } else {
                    ""
                };
                // `discovery` comes from the test run itself: the `test-discovery` provider
                // named `test` proves it from the same run (docs/evidence.md).
                let discovery = capability.as_str() == "discovery";
                let fix = if discovery {
                    "Prove it with the test run: give the `test-discovery` provider that proves `test` the id `test` (or a `discoveryProvider`, docs/evidence.md); `proofgraph evidence doctor` names the candidate.".to_owned()
                } else {
                    format!("Add a provider with `capability: {capability}` to execution.yaml.")
                };
                match &claim.repositories {
                    None if repositories.is_none() => out.push(
                        Diagnostic::warning(
                            Code::UnwiredCapability,
                            format!("claim `{}` requires `{capability}`{implied}, but no provider proves it", claim.id.value),
                        )
                        .at(&shown, pos)
                        .fix(fix),
                    ),
                    None => {}
                    Some(repos) => {
                        for repo in repos {
                            if repositories.is_some_and(|r| r.contains(&repo.value)) {
                                continue;
                            }
                            out.push(
                                Diagnostic::warning(
                                    Code::UnwiredCapability,
                                    format!(
                                        "claim `{}` requires `{capability}`{implied} in repository `{}`, but no provider of that repository proves it",
                                        claim.id.value, repo.value
                                    ),
                                )
                                .at(&shown, repo.pos)
                                .fix(if discovery {
                                    format!(
                                        "Prove it with the test run: give the `test-discovery` provider of repository `{}` that proves `test` the id `test` (or a `discoveryProvider`, docs/evidence.md); `proofgraph evidence doctor` names the candidate.",
                                        repo.value
                                    )
                                } else {
                                    format!(
                                        "Add a provider with `capability: {capability}` and `repository: {}` to execution.yaml.",
                                        repo.value
                                    )
                                }),
                            );
                        }
                    }
                }
            }
        }
        out
    }
}
