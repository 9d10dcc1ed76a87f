//! From a loaded change to a sealed graph: the configuration's own errors,
//! the graph's preflight, and the checks that need the filesystem (a path
//! that escapes its repository through a symlink), all reported together.

use std::path::{Component, Path};
use std::sync::Arc;

use proofgraph_graph::preflight::split_scoped;
use proofgraph_graph::{GraphBuilder, RepoId, Repositories, SealedGraph};

use crate::base::diagnostic::{self, Code, Diagnostic};
use crate::load::workspace::{Change, Workspace};

/// A change ready to be planned or run.
#[derive(Debug)]
pub struct Prepared {
    /// The sealed graph.
    pub graph: SealedGraph,
    /// Warnings found on the way (unknown keys, unwired capabilities, …).
    pub warnings: Vec<Diagnostic>,
}

/// The graph builder for a change.
pub fn builder(workspace: &Workspace, change: &Change) -> GraphBuilder {
    let repositories = Repositories {
        ids: workspace.repositories.keys().cloned().collect(),
    };
    let mut builder = GraphBuilder::new(repositories);
    if let Some(evidence) = &change.evidence {
        builder.claims(evidence.claims.iter().cloned());
    }
    for wired in change.providers.values() {
        builder.provider(wired.provider.clone(), Arc::from(wired.file.as_str()));
    }
    let file: Arc<str> = Arc::from(change.execution_file.as_str());
    for service in change.services.values() {
        builder.service(service.clone(), Arc::clone(&file));
    }
    builder
}

/// Where the links a path walks through are read: the working tree, or a revision's
/// objects (`plan --head`), so that a path escaping its repository is found where the files
/// are.
pub trait Links {
    /// Where `path` (relative to the repository directory `dir`) leads when an existing
    /// part of its literal prefix (up to the first glob character) resolves outside `dir`.
    fn escape(&self, repo: &RepoId, dir: &Path, path: &str) -> Option<std::path::PathBuf>;
}

/// The working tree's links.
pub struct WorkingTree;

impl Links for WorkingTree {
    fn escape(&self, _: &RepoId, dir: &Path, path: &str) -> Option<std::path::PathBuf> {
        escape_through_symlink(dir, path)
    }
}

/// Validates a change all the way to a sealed graph. On failure, every
/// diagnostic (errors and warnings) is returned, sorted.
pub fn prepare(workspace: &Workspace, change: &Change) -> Result<Prepared, Vec<Diagnostic>> {
    prepare_with(workspace, change, &WorkingTree)
}

/// [`prepare`], with the links read from `links`.
pub fn prepare_with(
    workspace: &Workspace,
    change: &Change,
    links: &dyn Links,
) -> Result<Prepared, Vec<Diagnostic>> {
    let mut all: Vec<Diagnostic> = workspace.diagnostics.clone();
    all.extend(change.diagnostics.iter().cloned());
    all.extend(change.coverage_diagnostics(workspace));
    if all.iter().any(Diagnostic::is_error) {
        diagnostic::sort(&mut all);
        return Err(all);
    }
    all.extend(symlink_escapes(workspace, change, links));
    all.extend(build_directories(workspace, change));
    match builder(workspace, change).seal() {
        Ok(graph) if !all.iter().any(Diagnostic::is_error) => {
            diagnostic::sort(&mut all);
            Ok(Prepared {
                graph,
                warnings: all,
            })
        }
        Ok(_) => {
            diagnostic::sort(&mut all);
            Err(all)
        }
        Err(findings) => {
            all.extend(findings.iter().map(Diagnostic::from));
            diagnostic::sort(&mut all);
            Err(all)
        }
    }
}

/// Every diagnostic `validate` reports for a change: its own, and, when those
/// hold no error, preflight's.
pub fn validate(workspace: &Workspace, change: &Change) -> Vec<Diagnostic> {
    let mut own: Vec<Diagnostic> = change.diagnostics.clone();
    own.extend(change.coverage_diagnostics(workspace));
    if own.iter().any(Diagnostic::is_error)
        || workspace.diagnostics.iter().any(Diagnostic::is_error)
    {
        diagnostic::sort(&mut own);
        return own;
    }
    match prepare(workspace, change) {
        Ok(prepared) => prepared.warnings,
        Err(all) => all,
    }
    .into_iter()
    .filter(|d| !workspace.diagnostics.contains(d))
    .collect()
}

/// Input, report and contract paths whose existing part leads out of their
/// repository through a symlink. Lexical escapes (absolute, `..`) are the
/// graph's own check.
fn symlink_escapes(workspace: &Workspace, change: &Change, links: &dyn Links) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let default = (workspace.repositories.len() == 1)
        .then(|| workspace.repositories.keys().next())
        .flatten();
    for wired in change.providers.values() {
        let p = &wired.provider;
        let own = p.repository.as_ref().map(|r| &r.value).or(default);
        let mut paths: Vec<(Option<&RepoId>, &str, proofgraph_graph::span::Pos, &str)> = Vec::new();
        if let Some(report) = &p.report {
            paths.push((own, report.value.as_str(), report.pos, "report"));
        }
        for input in p.inputs.iter().flatten() {
            let (_, entry) = proofgraph_graph::pattern::split_sign(&input.value);
            let (repo, path) = split_scoped(entry);
            let path = proofgraph_graph::pattern::unescaped(path);
            let repo = match repo {
                Some(r) => workspace.repositories.keys().find(|k| k.as_str() == r),
                None => own,
            };
            paths.push((repo, path, input.pos, "input"));
        }
        for (repo, path) in p.contract.iter().flatten() {
            paths.push((Some(repo), path.value.as_str(), path.pos, "contract path"));
        }
        for (repo, path, pos, what) in paths {
            let Some((repo, dir)) = repo.and_then(|r| {
                workspace
                    .repositories
                    .get(r)
                    .map(|found| (r, found.dir.as_path()))
            }) else {
                continue;
            };
            if let Some(target) = links.escape(repo, dir, path) {
                out.push(
                    Diagnostic::error(
                        Code::PathOutsideRepository,
                        format!(
                            "the {what} `{path}` of provider `{}` leads out of its repository through a symlink (to {})",
                            p.id.value,
                            target.display()
                        ),
                    )
                    .at(&wired.file, pos)
                    .fix("Point the path at files inside the repository, not through a symlink that leaves it."),
                );
            }
        }
    }
    out
}

/// Providers whose `env` keeps a build directory judged by modification times outside the
/// sandbox (`CARGO_TARGET_DIR=~/.cache/…`, where it outlives the run and can call a changed
/// test up to date), or sets the variable a declared cache of their repository sets.
fn build_directories(workspace: &Workspace, change: &Change) -> Vec<Diagnostic> {
    use crate::load::config::caches::{MTIME_BUILD_DIR_VARIABLES, outside_sandbox};
    let mut out = Vec::new();
    let default = (workspace.repositories.len() == 1)
        .then(|| workspace.repositories.keys().next())
        .flatten();
    for wired in change.providers.values() {
        let p = &wired.provider;
        let own = p.repository.as_ref().map(|r| &r.value).or(default);
        let caches = own
            .and_then(|r| workspace.catalog.as_ref()?.repositories.get(r))
            .map(|r| r.caches.as_slice())
            .unwrap_or_default();
        for (name, value) in p.env.iter().flatten() {
            if MTIME_BUILD_DIR_VARIABLES.contains(&name.as_str()) && outside_sandbox(&value.value) {
                out.push(
                    Diagnostic::error(
                        Code::CacheJudgedByMtime,
                        format!(
                            "provider `{}` sets `{name}` to `{}`, a build directory outside its sandbox: cargo decides what to rebuild from modification times, so a kept build directory can call a changed test up to date",
                            p.id.value, value.value
                        ),
                    )
                    .at(&wired.file, value.pos)
                    .fix("Remove it (the build starts in the sandbox's `target/`) and declare `caches: [sccache]` on the repository in proofgraph.yaml to keep compilations warm (docs/setup.md#build-and-download-caches-caches)."),
                );
            }
            if let Some(cache) = caches
                .iter()
                .find(|c| c.value.variables().contains(&name.as_str()))
            {
                out.push(
                    Diagnostic::error(
                        Code::CacheEnvConflict,
                        format!(
                            "provider `{}` sets `{name}`, which the repository's declared cache `{}` sets",
                            p.id.value,
                            cache.value.as_str()
                        ),
                    )
                    .at(&wired.file, value.pos)
                    .fix(format!("Remove `{name}` from the provider's `env`: the declared cache points the tool at its directory.")),
                );
            }
        }
    }
    out
}

/// Walks the literal prefix of `path` (up to the first glob character) below
/// `dir`; returns where it leads when an existing part resolves outside `dir`.
fn escape_through_symlink(dir: &Path, path: &str) -> Option<std::path::PathBuf> {
    let root = fs_err::canonicalize(dir).ok()?;
    let mut at = dir.to_path_buf();
    for component in Path::new(path).components() {
        let Component::Normal(part) = component else {
            continue;
        };
        if part
            .to_str()
            .is_some_and(|p| p.contains(['*', '?', '[', '{']))
        {
            break;
        }
        at.push(part);
        match fs_err::canonicalize(&at) {
            Ok(real) if !real.starts_with(&root) => return Some(real),
            Ok(_) => {}
            Err(_) => {
                // A dangling link still leads somewhere: out of the repository is refused
                // whether or not its target exists (as at a revision, `plan --head`).
                if let (Ok(target), Some(parent)) = (fs_err::read_link(&at), at.parent())
                    && let Ok(parent) = fs_err::canonicalize(parent)
                {
                    let leads = crate::base::paths::normalize(&parent.join(target));
                    if !leads.starts_with(&root) {
                        return Some(leads);
                    }
                }
                break;
            }
        }
    }
    None
}
