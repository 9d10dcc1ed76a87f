//! A provider's prepared execution as an action a remote engine runs
//! ([`crate::run::remote::Execution`]): the same files its local sandbox would show, laid
//! out so that everything its command names resolves on a worker. Pure: nothing here
//! reads a file (the layers are listed when the action is encoded, off the loop).
//!
//! The layout: each repository the execution sees is the directory named by its id under
//! the input root, its layers read top first as an overlay shows them; the working
//! directory is the repository it runs in. A program of the repository is named
//! relative to it (`./script.sh`); a program of the system by its absolute path (the
//! worker's own, which the local fingerprint does not bind). `HOME` and `TMPDIR` are the
//! worker's private `/tmp`. The reports of every provider judged from the execution are
//! its declared outputs, relative to the working directory, so they come back where the
//! local judge reads them. The environment is the local job's, checked to hold no secret
//! of the run (`envFrom` providers never get here: they are not eligible).

use std::path::PathBuf;
use std::time::Duration;

use proofgraph_graph::RepoId;

use crate::base::redact::Secrets;
use crate::observe::world::Program;
use crate::run::remote::{Environment, Execution, Files, RelPath};

use super::job;

/// Where a worker's action may write and keep nothing: its private `/tmp`.
const WORKER_TMP: &str = "/tmp";

/// `prepared` as an action, without its files, and the layers its files are read from
/// (each under its place in the input root, top first): `reports` are the report paths
/// (repository, path) of every provider judged from it; `platform` the properties the
/// engine matches workers by. An error says why it cannot be one (it then runs here, or
/// fails under `--executor remote`).
pub(super) fn describe(
    prepared: &job::Prepared,
    reports: &[(Option<RepoId>, String)],
    platform: &[(String, String)],
    secrets: &Secrets,
) -> Result<(Execution, Vec<(RelPath, PathBuf)>), String> {
    let key = &prepared.key;
    let runs_in = prepared
        .runs_in
        .as_ref()
        .ok_or_else(|| "it runs in no repository".to_owned())?;
    let under = |repo: &RepoId| RelPath::new(repo.as_str()).map_err(|e| e.to_string());
    let working_directory = under(runs_in)?;
    let mut layers = Vec::new();
    for seen in &key.seen {
        let at = under(&seen.repo)?;
        layers.extend(seen.layers.iter().map(|layer| (at.clone(), layer.clone())));
    }
    let text = |what: &str, value: &std::ffi::OsStr| {
        value
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("its {what} is not UTF-8"))
    };
    let mut argv = Vec::with_capacity(key.argv.len());
    for (i, arg) in key.argv.iter().enumerate() {
        argv.push(text(&format!("argument {i}"), arg)?);
    }
    let Some(first) = argv.first_mut() else {
        return Err("it has no command".to_owned());
    };
    *first = match &prepared.program {
        Program::Absolute(path) => text("program", path.as_os_str())?,
        Program::InRepository(rel) => {
            let rel = text("program", rel.as_os_str())?;
            if rel.contains('/') {
                rel
            } else {
                format!("./{rel}")
            }
        }
    };
    let mut env: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for (name, value) in &key.env {
        env.insert(text("environment", name)?, text("environment", value)?);
    }
    for name in ["HOME", "TMPDIR"] {
        env.insert(name.to_owned(), WORKER_TMP.to_owned());
    }
    let env = Environment::checked(env, secrets).map_err(|e| format!("failed to {e}"))?;
    let mut outputs = Vec::new();
    for (repo, report) in reports {
        if repo.as_ref() == Some(runs_in) {
            outputs.push(RelPath::new(report).map_err(|e| format!("failed to {e}"))?);
        }
    }
    outputs.sort();
    outputs.dedup();
    let execution = Execution {
        files: Files::new(),
        argv,
        working_directory,
        env,
        outputs,
        platform: platform.to_vec(),
        timeout: Duration::from_millis(key.timeout),
    };
    Ok((execution, layers))
}

/// `execution` with the files of `layers` (each under its place, top first), read now.
pub(super) fn with_files(
    mut execution: Execution,
    layers: &[(RelPath, PathBuf)],
) -> Result<Execution, String> {
    for (at, layer) in layers {
        execution
            .files
            .add_tree(at, layer)
            .map_err(|e| e.to_string())?;
    }
    Ok(execution)
}
