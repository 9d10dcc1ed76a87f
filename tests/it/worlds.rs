//! Each provider in its own world, as a property: for random providers that write, delete
//! and rename files before they judge one, in random `dependsOn` shapes, `--jobs` and
//! sandbox modes, every verdict is the one that provider gives alone on exactly the
//! committed files (computed from a model of its own steps) — no provider ever sees
//! another's writes — and the work tree is never touched. Then a `prove` that reuses
//! agrees with a fresh one.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::Value;

use crate::support::{Sandbox, git_commit_all, provider, receipt};

/// The files the providers play with.
const FILES: usize = 4;

#[derive(Debug, Clone)]
enum Step {
    Write(usize, bool),
    Delete(usize),
    Rename(usize, usize),
}

#[derive(Debug, Clone)]
struct Provider {
    steps: Vec<Step>,
    /// The file whose content (`pass`) decides its verdict.
    judge: usize,
    /// Earlier providers it depends on.
    depends: Vec<usize>,
}

fn name(i: usize) -> String {
    format!("f{i}")
}

impl Provider {
    fn script(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            out.push_str(&match step {
                Step::Write(f, pass) => {
                    format!(
                        "echo {} > {}; ",
                        if *pass { "pass" } else { "fail" },
                        name(*f)
                    )
                }
                Step::Delete(f) => format!("rm -f {}; ", name(*f)),
                Step::Rename(a, b) => {
                    format!("mv -f {} {} 2>/dev/null || true; ", name(*a), name(*b))
                }
            });
        }
        out.push_str(&format!("grep -qx pass {}", name(self.judge)));
        out
    }

    /// Its verdict alone, on the committed files.
    fn alone(&self, committed: &[Option<bool>]) -> bool {
        let mut files = committed.to_vec();
        for step in &self.steps {
            match *step {
                Step::Write(f, pass) => files[f] = Some(pass),
                Step::Delete(f) => files[f] = None,
                Step::Rename(a, b) => {
                    if a != b
                        && let Some(content) = files[a].take()
                    {
                        files[b] = Some(content);
                    }
                }
            }
        }
        files[self.judge] == Some(true)
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..FILES, any::<bool>()).prop_map(|(f, p)| Step::Write(f, p)),
        (0..FILES).prop_map(Step::Delete),
        (0..FILES, 0..FILES).prop_map(|(a, b)| Step::Rename(a, b)),
    ]
}

fn providers() -> impl Strategy<Value = Vec<Provider>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(step(), 0..4),
            0..FILES,
            proptest::collection::vec(any::<bool>(), 5),
        ),
        2..6,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (steps, judge, edges))| Provider {
                steps,
                judge,
                depends: (0..i)
                    .filter(|j| edges[*j % edges.len()] && (i + j) % 2 == 0)
                    .collect(),
            })
            .collect()
    })
}

fn workspace(sb: &Sandbox, committed: &[Option<bool>], all: &[Provider]) {
    sb.openspec_root("");
    for (i, content) in committed.iter().enumerate() {
        if let Some(pass) = content {
            sb.write(&name(i), if *pass { "pass\n" } else { "fail\n" });
        }
    }
    sb.write("openspec/changes/w/proposal.md", "# Worlds\n");
    sb.write(
        "openspec/changes/w/evidence.yaml",
        "version: 2\nclaims:\n  - {id: c, scenario: It works, capabilities: [test]}\n",
    );
    let mut execution = String::from("version: 1\nproviders:\n");
    for (i, p) in all.iter().enumerate() {
        execution.push_str(&format!(
            "  p{i}:\n    adapter: command\n    capability: test\n    command: [sh, -c, {:?}]\n",
            p.script()
        ));
        if !p.depends.is_empty() {
            let deps: Vec<String> = p.depends.iter().map(|d| format!("p{d}")).collect();
            execution.push_str(&format!("    dependsOn: [{}]\n", deps.join(", ")));
        }
    }
    sb.write("openspec/changes/w/execution.yaml", execution);
    git_commit_all(&sb.work());
}

/// Each provider's outcome, or `blocked` (a dependency did not pass).
fn verdicts(doc: &Value, count: usize) -> BTreeMap<String, String> {
    (0..count)
        .map(|i| {
            let p = format!("p{i}");
            let outcome = if provider(doc, &p)["action"] == "blocked" {
                "blocked".to_owned()
            } else {
                receipt(doc, &p, "test")["outcome"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            };
            (p, outcome)
        })
        .collect()
}

/// What each provider gives alone, and `blocked` where a dependency does not pass.
fn model(all: &[Provider], committed: &[Option<bool>]) -> BTreeMap<String, String> {
    let mut out: Vec<&str> = Vec::new();
    for p in all {
        let verdict = if p.depends.iter().any(|d| out[*d] != "pass") {
            "blocked"
        } else if p.alone(committed) {
            "pass"
        } else {
            "fail"
        };
        out.push(verdict);
    }
    out.iter()
        .enumerate()
        .map(|(i, v)| (format!("p{i}"), (*v).to_owned()))
        .collect()
}

proptest! {
    #![proptest_config(crate::support::beside_source(ProptestConfig {
        cases: crate::support::proptest_cases(24),
        max_shrink_iters: 32,
        ..ProptestConfig::default()
    }))]

    #[test]
    fn every_verdict_is_the_providers_own_on_its_bound_inputs(
        committed in proptest::collection::vec(proptest::option::of(any::<bool>()), FILES),
        all in providers(),
        jobs in 1usize..4,
        mode in proptest::sample::select(vec![
            ["--sandbox", "worktree", "--isolation", "auto"],
            ["--sandbox", "copy", "--isolation", "auto"],
            ["--sandbox", "worktree", "--isolation", "none"],
        ]),
    ) {
        let sb = Sandbox::new();
        workspace(&sb, &committed, &all);
        let jobs = jobs.to_string();
        let mut args = vec!["prove", "w", "--json", "--keep-going", "--jobs", jobs.as_str()];
        args.extend(mode);
        let run = sb.run(&sb.work(), &args);
        let doc = run.json();
        let expected = model(&all, &committed);
        prop_assert_eq!(&verdicts(&doc, all.len()), &expected, "{:?} {:#}", mode, doc);
        // Nothing a job did reached the work tree.
        let status = crate::support::git(&sb.work(), &["status", "--porcelain", "--untracked-files=all", "--", "."]);
        let touched: Vec<&str> = status.lines().filter(|l| !l.contains(".proofgraph")).collect();
        prop_assert!(touched.is_empty(), "{:?}", touched);
        // Reuse agrees with a fresh run.
        args.retain(|a| *a != "--jobs" && *a != jobs.as_str());
        let reused = sb.run(&sb.work(), &args).json();
        let mut fresh_args = args.clone();
        fresh_args.push("--no-cache");
        let fresh = sb.run(&sb.work(), &fresh_args).json();
        prop_assert_eq!(&verdicts(&reused, all.len()), &expected);
        prop_assert_eq!(&verdicts(&fresh, all.len()), &expected);
        // Only passes are reused; everything else ran again.
        for (p, verdict) in &expected {
            let action = provider(&reused, p)["action"].as_str().unwrap_or_default().to_owned();
            let wanted = match verdict.as_str() {
                "pass" => "reused",
                "blocked" => "blocked",
                _ => "ran",
            };
            prop_assert_eq!(action.as_str(), wanted, "{} {:?}", p, mode);
        }
    }
}
