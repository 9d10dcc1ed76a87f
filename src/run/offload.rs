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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use proofgraph_graph::{Adapter, EnvName, ProviderId, ServiceId};

    use super::*;
    use crate::run::job::Jobs;
    use crate::run::layers::Seen;
    use crate::run::testing::{at, env, node, pid, provider, seal_in};

    /// Prepares `id` of `graph`, its program `program`, seeing `seen`.
    fn prepared(
        graph: &proofgraph_graph::SealedGraph,
        id: &str,
        program: Program,
        seen: Vec<Seen>,
        secrets: &Secrets,
    ) -> job::Prepared {
        let caller = env(&[("PATH", "/usr/bin:/bin"), ("TOKEN", "a-long-secret-value")]);
        let programs: BTreeMap<ProviderId, Option<Program>> =
            BTreeMap::from([(pid(id), Some(program))]);
        let services: BTreeMap<ServiceId, Option<Program>> = BTreeMap::new();
        let sandboxes = BTreeMap::from([
            (RepoId::root(), PathBuf::from("/sb/root")),
            (
                RepoId::parse("lib").expect("an id"),
                PathBuf::from("/sb/lib"),
            ),
        ]);
        let caches = BTreeMap::new();
        let jobs = Jobs {
            env: &caller,
            run_id: "run1",
            secrets,
            programs: &programs,
            service_programs: &services,
            sandboxes: &sandboxes,
            out_dir: Path::new("/runs/r/out"),
            host_paths: &[],
            home: Some(Path::new("/home/u")),
            caches: &caches,
            stamped: false,
        };
        jobs.prepare(node(graph, id), seen).expect("prepared")
    }

    fn seen(repo: &str, layers: &[&str]) -> Seen {
        Seen {
            repo: RepoId::parse(repo).expect("an id"),
            layers: layers.iter().map(PathBuf::from).collect(),
            ids: vec!["all".to_owned()],
        }
    }

    #[test]
    fn an_action_lays_out_every_repository_it_sees_under_its_id_and_runs_in_its_own() {
        let mut unit = provider("unit", Adapter::Command, &["run.sh", "--all"]);
        unit.env = Some(BTreeMap::from([(
            EnvName::parse("MODE").expect("a name"),
            at("ci".to_owned()),
        )]));
        unit.timeout_ms = Some(at(9_000));
        unit.repository = Some(at(RepoId::root()));
        let graph = seal_in(&["lib"], vec![unit], Vec::new());
        let secrets = Secrets::new([b"a-long-secret-value".to_vec()]);
        let prepared = prepared(
            &graph,
            "unit",
            Program::InRepository("run.sh".into()),
            vec![
                seen("root", &["/setup/root", "/sb/root"]),
                seen("lib", &["/sb/lib"]),
            ],
            &secrets,
        );
        let reports = [
            (Some(RepoId::root()), "out/b.tap".to_owned()),
            (Some(RepoId::root()), "out/a.tap".to_owned()),
            (Some(RepoId::root()), "out/a.tap".to_owned()),
            // Another repository's report is not this action's output.
            (
                Some(RepoId::parse("lib").expect("an id")),
                "x.tap".to_owned(),
            ),
        ];
        let platform = [("OSFamily".to_owned(), "linux".to_owned())];
        let (execution, layers) =
            describe(&prepared, &reports, &platform, &secrets).expect("an action");
        assert_eq!(execution.argv, ["./run.sh", "--all"]);
        assert_eq!(execution.working_directory.as_str(), "root");
        let at = |p: &str| RelPath::new(p).expect("a path");
        assert_eq!(
            layers,
            [
                (at("root"), PathBuf::from("/setup/root")),
                (at("root"), PathBuf::from("/sb/root")),
                (at("lib"), PathBuf::from("/sb/lib")),
            ]
        );
        assert_eq!(execution.outputs, [at("out/a.tap"), at("out/b.tap")]);
        let vars: BTreeMap<&str, &str> = execution
            .env
            .vars()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            vars,
            BTreeMap::from([
                ("HOME", "/tmp"),
                ("MODE", "ci"),
                ("PATH", "/usr/bin:/bin"),
                ("PROOFGRAPH_RUN_ID", "run1"),
                ("TMPDIR", "/tmp"),
            ]),
            "nothing of the caller's but PATH, and no path of this machine"
        );
        assert_eq!(execution.platform, platform);
        assert_eq!(execution.timeout, Duration::from_millis(9_000));
        assert!(
            execution.files.is_empty(),
            "files are read when it is encoded"
        );
    }

    #[test]
    fn a_system_program_is_named_by_its_path_and_a_secret_never_becomes_an_action() {
        let mut lint = provider("lint", Adapter::Command, &["sh", "-c", "exit 0"]);
        lint.env = Some(BTreeMap::from([(
            EnvName::parse("LEAK").expect("a name"),
            at("x a-long-secret-value".to_owned()),
        )]));
        let graph = seal_in(&[], vec![lint], Vec::new());
        let none = Secrets::none();
        let clean = prepared(
            &graph,
            "lint",
            Program::Absolute("/usr/bin/sh".into()),
            vec![seen("root", &["/sb/root"])],
            &none,
        );
        let (execution, _) = describe(&clean, &[], &[], &none).expect("an action");
        assert_eq!(execution.argv, ["/usr/bin/sh", "-c", "exit 0"]);
        assert!(execution.outputs.is_empty());
        let secrets = Secrets::new([b"a-long-secret-value".to_vec()]);
        let err = describe(&clean, &[], &[], &secrets).expect_err("a secret in its env");
        assert!(err.contains("`LEAK`") && err.contains("secret"), "{err}");
        assert!(!err.contains("a-long-secret-value"), "{err}");
    }
}
