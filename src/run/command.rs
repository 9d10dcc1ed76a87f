//! What a job's command is: its environment (the caller's `PATH`, `HOME` and `LANG`, the
//! declared `env`, the `envFrom` values, the run id — and nothing else of the caller's)
//! and, for a provider, its argv (a direct `playwright test` gets the JSON reporter and
//! its project). Pure.

use std::collections::BTreeMap;
use std::ffi::OsString;

use proofgraph_graph::graph::ProviderNode;
use proofgraph_graph::span::Spanned;
use proofgraph_graph::{Adapter, EnvName};

use crate::base::env::Env;

/// A job's whole environment.
pub(super) type JobEnv = Vec<(OsString, OsString)>;

/// The environment a job gets: PATH, HOME and LANG from the caller, the
/// declared literal `env`, the `envFrom` values, and `extra` (the run id), each later one
/// winning. Returns the environment, or the names of missing `envFrom` variables. (What its
/// log is redacted of is every secret of the change, not only its own.)
pub(super) fn job_env(
    caller: &Env,
    env: Option<&BTreeMap<EnvName, Spanned<String>>>,
    env_from: Option<&Vec<Spanned<EnvName>>>,
    extra: &[(&str, OsString)],
) -> Result<JobEnv, Vec<String>> {
    let mut vars: BTreeMap<OsString, OsString> = BTreeMap::new();
    for name in ["PATH", "HOME", "LANG"] {
        if let Some(v) = caller.var(name) {
            vars.insert(name.into(), v.clone());
        }
    }
    for (k, v) in env.into_iter().flatten() {
        vars.insert(k.as_str().into(), v.value.clone().into());
    }
    let mut missing = Vec::new();
    for name in env_from.into_iter().flatten() {
        match caller.var(name.value.as_str()) {
            Some(v) => {
                vars.insert(name.value.as_str().into(), v.clone());
            }
            None => missing.push(name.value.to_string()),
        }
    }
    for (k, v) in extra {
        vars.insert((*k).into(), v.clone());
    }
    if missing.is_empty() {
        Ok(vars.into_iter().collect())
    } else {
        Err(missing)
    }
}

/// The argv a provider runs: for a direct `playwright test`, the JSON
/// reporter and the project are added unless given.
pub(super) fn provider_argv(p: &ProviderNode) -> Vec<OsString> {
    let mut argv: Vec<String> = p
        .spec
        .command
        .as_ref()
        .map(|c| c.value.clone())
        .unwrap_or_default();
    if p.spec.adapter.value == Adapter::Playwright && is_direct_playwright(&argv) {
        if !argv.iter().any(|a| a.starts_with("--reporter")) {
            argv.push("--reporter=json".to_owned());
        }
        if let Some(project) = &p.spec.project
            && !argv
                .iter()
                .any(|a| a == "--project" || a.starts_with("--project="))
        {
            argv.push(format!("--project={}", project.value));
        }
    }
    argv.into_iter().map(OsString::from).collect()
}

/// `playwright test …`, `npx playwright test …`, `node_modules/.bin/playwright test …`.
pub(super) fn is_direct_playwright(argv: &[String]) -> bool {
    let skip = usize::from(
        argv.first()
            .is_some_and(|a| a == "npx" || a.ends_with("/npx")),
    );
    let program = argv.get(skip).map(String::as_str).unwrap_or("");
    (program == "playwright" || program.ends_with("/playwright"))
        && argv.get(skip + 1).is_some_and(|a| a == "test")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::testing::{at, env, node, provider, seal, vars};

    fn name(s: &str) -> EnvName {
        EnvName::parse(s).expect("valid env name")
    }

    #[test]
    fn a_job_gets_path_home_lang_its_env_its_env_from_and_the_run_id_and_nothing_else() {
        let caller = env(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LANG", "C.UTF-8"),
            ("TOKEN", "s3cr3t-value"),
            ("UNRELATED", "x"),
        ]);
        let literal = BTreeMap::from([
            (name("PATH"), at("/opt/tool/bin".to_owned())),
            (name("MODE"), at("ci".to_owned())),
        ]);
        let from = vec![at(name("TOKEN"))];
        let extra = [("PROOFGRAPH_RUN_ID", OsString::from("run1"))];
        let got = job_env(&caller, Some(&literal), Some(&from), &extra).expect("complete");
        assert_eq!(
            vars(&got),
            [
                ("HOME", "/home/u"),
                ("LANG", "C.UTF-8"),
                ("MODE", "ci"),
                // The declared PATH overrides the caller's.
                ("PATH", "/opt/tool/bin"),
                ("PROOFGRAPH_RUN_ID", "run1"),
                ("TOKEN", "s3cr3t-value"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        // Without a declared PATH the caller's is kept; a caller without one gives none.
        let got = job_env(&caller, None, None, &[]).expect("complete");
        assert!(vars(&got).contains(&("PATH".into(), "/usr/bin".into())));
        let got = job_env(&env(&[("HOME", "/h")]), None, None, &[]).expect("complete");
        assert_eq!(vars(&got), [("HOME".to_owned(), "/h".to_owned())]);
    }

    #[test]
    fn every_missing_env_from_name_is_reported_and_no_environment_is_made() {
        let caller = env(&[("PATH", "/usr/bin"), ("SET", "value-here")]);
        let from = vec![at(name("GONE")), at(name("SET")), at(name("ALSO_GONE"))];
        let missing = job_env(&caller, None, Some(&from), &[]).expect_err("two are missing");
        assert_eq!(missing, ["GONE", "ALSO_GONE"]);
    }

    fn argv_of(adapter: Adapter, argv: &[&str], project: Option<&str>) -> Vec<String> {
        let mut p = provider("p", adapter, argv);
        p.project = project.map(|s| at(s.to_owned()));
        let graph = seal(vec![p], Vec::new());
        provider_argv(node(&graph, "p"))
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_direct_playwright_test_gets_the_json_reporter_and_its_project_unless_given() {
        let pw = Adapter::Playwright;
        assert_eq!(
            argv_of(pw, &["npx", "playwright", "test"], Some("chromium")),
            [
                "npx",
                "playwright",
                "test",
                "--reporter=json",
                "--project=chromium"
            ]
        );
        assert_eq!(
            argv_of(
                pw,
                &["node_modules/.bin/playwright", "test", "--reporter=line"],
                None
            ),
            ["node_modules/.bin/playwright", "test", "--reporter=line"]
        );
        assert_eq!(
            argv_of(pw, &["playwright", "test", "--project", "x"], Some("y")),
            ["playwright", "test", "--project", "x", "--reporter=json"]
        );
        // Through a script, or not under the playwright adapter: as declared.
        assert_eq!(argv_of(pw, &["npm", "test"], Some("y")), ["npm", "test"]);
        assert_eq!(
            argv_of(Adapter::Command, &["playwright", "test"], None),
            ["playwright", "test"]
        );
        assert!(!is_direct_playwright(&[
            "playwright".into(),
            "show-report".into()
        ]));
    }
}
