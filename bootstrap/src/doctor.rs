//! `doctor`: what stands between the change and a proof run, each with a
//! one-sentence fix. Reads manifests, the git index and ignore rules, and
//! what the application hands in (the host's `PATH`, the providers' last
//! runs); runs nothing.
//!
//! | code | when |
//! |---|---|
//! | `unwired_capability` | a required capability (per named repository, or anywhere) has no provider; the fix is the recommended candidate or the unresolved next action |
//! | `command_file_not_in_inputs` | a provider with `inputs` runs an argv token that is a file in its repository, and no input covers it (paths its setup makes excepted) |
//! | `runner_files_not_in_inputs` | a provider with `inputs` runs a test runner (`node --test`, pytest, vitest, jest, `go test`, `cargo test`) and the repository tracks files that runner looks for (its tests, its configuration, the manifest) that no input covers: its world will not hold them |
//! | `go_test_replays` | a provider runs `go test` without `-count` (in its argv or its `GOFLAGS`): go replays a package it has seen pass from its test cache instead of running it, and a replay is never a pass |
//! | `command_file_untracked` | a provider without `inputs` runs a file no sandbox has: git ignores it, or it lies in a directory sandboxes leave out (`node_modules`, `target`, …); the fix names a setup for dependency directories, never `git add` of what setup should make |
//! | `setup_makes_path` (info) | a provider runs a path its repository's setup makes (in a `setupCache` directory, or named by an uncached setup command): git need not hold it |
//! | `report_inside_inputs` | a provider's report is covered by its inputs (or, without inputs, tracked by git): each run would change its own inputs |
//! | `docs_in_inputs` (info) | a provider that runs a command reads its repository's documentation (a top-level `docs/` or `doc/`, README, CHANGELOG, CONTRIBUTING) — without `inputs`, or through them — so a docs edit reruns it; the fix names the `!` entries that leave it out |
//! | `unknown_service` | a provider names a service that is not declared |
//! | `missing_discovery_provider` | a test provider not named `test` sends its discovery receipt nowhere |
//! | `test_report_missing` | a `test-discovery` provider declares no `report`, so no test count can be read |
//! | `executable_not_found` | a provider's program is a path in its repository that neither exists nor is made by setup, or a name not on its `PATH`; the fix says what to install |
//! | `dependencies_not_installed` | `package.json` declares dependencies, a provider running Node.js tooling (a package manager, `node_modules/.bin/…`, or `node` running files that import a declared package or preloading one) runs in the repository, and no setup installs `node_modules` where the run needs it; `node --test` over tests that import only node's built-ins and the repository's own files needs none |
//! | `dependencies_need_network` | `Cargo.toml` declares crates cargo downloads (not `path`), or `go.mod` requires modules (not replaced by a local directory), a provider running cargo or go runs (or `init` would add one) there on the private network without a download cache of its own, and no setup (nor a committed `vendor/`) provides them; the fix is docs/setup.md's recipe, for cargo with placeholders for this manifest's targets |
//! | `python_module_missing` | a provider runs `python… -m <module>` (directly, after interpreter flags, or inside the report wrapper) with an interpreter from `PATH` that cannot import `<module>`: as the interpreter answered when the application asked it (`Host::python_imports`, in the repository with the provider's `PYTHONPATH`), else as its standard library, site-packages and dist-packages (and the `PYTHONPATH`) certainly hold none (a virtual environment's: the venv's site-packages); an interpreter that neither answered nor can be read (a shim, a script) is not judged |
//! | `timeout_too_short` | a provider's last run timed out and its `timeoutMs` is still no longer than that run; the fix suggests twice the run's duration, rounded up |

use std::collections::BTreeMap;

use proofgraph_graph::model::{Claim, Provider, Service};
use proofgraph_graph::{Adapter, CapabilityName, RepoId};

use crate::detect::{Analysis, analyze, receiver_action};
use crate::ecosystem::node::{NodeFacts, existing_file};
use crate::ecosystem::node_imports::needs_node_modules;
use crate::git::{Seen, Tree};
use crate::host::{Host, PythonQuestion, install_hint};
use crate::model::{Confidence, Finding, LastRun, Repo, Severity};
use crate::pattern::{Cover, covering};
use crate::proposal::show;
use crate::wiring::{self, Gap, Missing};

/// The timeout of a provider that declares no `timeoutMs` (the run's
/// default, DESIGN §2).
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;

/// Directories that hold installed dependencies or build output: a command
/// file in one is setup's to make, never git's to hold.
const DEPENDENCY_DIRS: [&str; 6] = [
    ".venv",
    "venv",
    "node_modules",
    "target",
    ".tox",
    "__pypackages__",
];

/// The `timeoutMs` to suggest after a run stopped at `duration_ms`: twice
/// it, rounded up to a whole second below a minute and to a whole minute
/// from there (a run stopped by its timeout only says it needs longer).
pub(crate) fn suggested_timeout(duration_ms: u64) -> u64 {
    let twice = duration_ms.saturating_mul(2).max(1);
    let unit = if twice < 60_000 { 1_000 } else { 60_000 };
    twice.div_ceil(unit).saturating_mul(unit)
}

/// Lists every problem `detect`'s inputs reveal, with its fix: unwired
/// capabilities first (in the claims' order), then provider problems (in
/// the providers' order), then repository problems. `services` are the
/// declared services (for `unknown_service`); `host` is where programs are
/// looked up; `last_runs` are the providers' latest receipts (for
/// `timeout_too_short`).
pub fn doctor(
    repos: &[Repo],
    claims: &[Claim],
    existing: &[Provider],
    services: &[Service],
    host: &Host,
    last_runs: &[LastRun],
) -> Vec<Finding> {
    let analysis = analyze(repos, claims, existing, host);
    let mut out: Vec<Finding> = analysis
        .gaps
        .iter()
        .map(|gap| unwired(gap, &analysis.detection))
        .collect();
    let mut trees: BTreeMap<RepoId, Option<Tree>> = BTreeMap::new();
    for p in existing {
        let last = last_runs.iter().find(|r| r.provider == p.id.value);
        provider_findings(p, repos, services, host, last, &mut trees, &mut out);
    }
    for repo in repos {
        if let Some(f) = dependencies(repo, existing, repos, &analysis, host, &mut trees) {
            out.push(f);
        }
        if let Some(f) = crates_need_network(repo, existing, repos, &analysis) {
            out.push(f);
        }
        if let Some(f) = modules_need_network(repo, existing, repos, &analysis) {
            out.push(f);
        }
    }
    out
}

/// Whether `argv` runs `program` (directly, behind a wrapper, or in an `sh -c` script).
fn runs_program(argv: &[String], program: &str) -> bool {
    crate::host::programs(argv).iter().any(|p| p == program)
        || argv.iter().skip(2).any(|w| {
            w.split(|c: char| c.is_whitespace() || "&;|()".contains(c))
                .any(|word| word == program)
        })
}

/// Whether a provider running `program` runs in `repo` on a job's private network, or
/// `init` would add one; `own_cache`: the provider has a download cache of its own set.
fn runs_offline_here(
    repo: &Repo,
    existing: &[Provider],
    repos: &[Repo],
    analysis: &Analysis,
    program: &str,
    own_cache: impl Fn(&Provider) -> bool,
) -> bool {
    let host_network = |p: &Provider| {
        p.network
            .as_ref()
            .is_some_and(|n| n.value == proofgraph_graph::model::Network::Host)
    };
    existing.iter().any(|p| {
        p.adapter.value.runs_command()
            && !host_network(p)
            && wiring::home(p, repos).is_some_and(|h| h.id == repo.id)
            && p.command
                .as_ref()
                .is_some_and(|c| runs_program(&c.value, program))
            && !own_cache(p)
    }) || analysis.detection.candidates.iter().any(|c| {
        c.recommended
            && c.repository == repo.id
            && c.provider["command"].as_array().is_some_and(|a| {
                let argv: Vec<String> = a
                    .iter()
                    .filter_map(|w| w.as_str().map(str::to_owned))
                    .collect();
                runs_program(&argv, program)
            })
    })
}

/// Whether a provider's `env` sets `name` (to a value containing `part`, when given).
fn sets(p: &Provider, name: &str, part: Option<&str>) -> bool {
    p.env.as_ref().is_some_and(|env| {
        env.iter()
            .any(|(k, v)| k.as_str() == name && part.is_none_or(|part| v.value.contains(part)))
    })
}

/// A warning about repository `repo` as a whole (its setup), not one provider.
fn repository_warning(repo: &Repo, code: &'static str, message: String, fix: String) -> Finding {
    Finding {
        code,
        severity: Severity::Warning,
        message,
        fix,
        provider: None,
        capability: None,
        repository: Some(repo.id.clone()),
    }
}

/// Whether one of the repository's setup commands runs one of `commands` (`cargo fetch`).
fn setup_runs(repo: &Repo, commands: &[&str]) -> bool {
    repo.setup.commands.iter().any(|command| {
        let text = command.join(" ");
        commands.iter().any(|c| text.contains(c))
    })
}

/// The message of `dependencies_need_network` for `n` dependencies, the first three shown.
fn need_network(repo: &RepoId, what: &str, tool: &str, deps: &[String]) -> String {
    let n = deps.len();
    let shown: Vec<String> = deps.iter().take(3).map(|d| format!("`{d}`")).collect();
    let more = if n > 3 { ", …" } else { "" };
    format!(
        "repository `{repo}` depends on {n} {what}{} {tool} downloads ({}{more}), but a job's network is private and no setup downloads them, so the first download fails",
        if n == 1 { "" } else { "s" },
        shown.join(", ")
    )
}

/// `dependencies_need_network` for Go: `go.mod` requires modules, a provider runs `go`
/// on a job's private network, no setup downloads them and no `vendor/` holds them. The
/// fix is docs/setup.md's go recipe.
fn modules_need_network(
    repo: &Repo,
    existing: &[Provider],
    repos: &[Repo],
    analysis: &Analysis,
) -> Option<Finding> {
    let runs = runs_offline_here(repo, existing, repos, analysis, "go", |p| {
        sets(p, "GOFLAGS", Some("-mod=vendor"))
    });
    let downloads = setup_runs(repo, &["go mod download", "go mod vendor"]);
    if !runs || downloads || repo.dir.join("vendor/modules.txt").is_file() {
        return None;
    }
    let facts = crate::ecosystem::go::GoFacts::read(&repo.dir, "", &mut Vec::new())?;
    if facts.downloads.is_empty() {
        return None;
    }
    Some(repository_warning(
        repo,
        "dependencies_need_network",
        need_network(&repo.id, "module", "go", &facts.downloads),
        format!(
            "Add `setup: [[sh, -c, \"GOMODCACHE=$PWD/.gomodcache go mod download -modcacherw\"]]` and `setupCache: [.gomodcache]` to repository `{}` in proofgraph.yaml, and run its go provider as `[sh, -c, \"GOMODCACHE=$PWD/.gomodcache exec go test -count=1 ./...\"]` with `env: {{GOPROXY: \"off\", GOFLAGS: -mod=readonly}}` (docs/setup.md).",
            repo.id
        ),
    ))
}

/// `dependencies_need_network`: the repository's manifest declares crates cargo fetches, a
/// provider runs cargo there, and no setup fetches them: a job's network is private, so
/// cargo's first download fails (`Could not resolve host: index.crates.io`). The fix is
/// docs/setup.md's cargo recipe, its placeholders made for this manifest's targets.
fn crates_need_network(
    repo: &Repo,
    existing: &[Provider],
    repos: &[Repo],
    analysis: &Analysis,
) -> Option<Finding> {
    // A provider whose CARGO_HOME lies outside its sandbox (an absolute path, `~`, a
    // variable) brings its crates along; one inside it (`.cargo-home`) has only what a
    // setup fetched there.
    let runs_here = runs_offline_here(repo, existing, repos, analysis, "cargo", |p| {
        p.env.as_ref().is_some_and(|env| {
            env.iter().any(|(k, v)| {
                k.as_str() == "CARGO_HOME"
                    && (v.value.starts_with('/')
                        || v.value.starts_with('~')
                        || v.value.starts_with('$'))
            })
        })
    });
    let fetches = setup_runs(repo, &["cargo fetch", "cargo vendor"]);
    if !runs_here || fetches {
        return None;
    }
    let facts = crate::ecosystem::cargo::CargoFacts::read(&repo.dir, "", &mut Vec::new())?;
    if facts.fetched_deps.is_empty() {
        return None;
    }
    Some(repository_warning(
        repo,
        "dependencies_need_network",
        need_network(&repo.id, "crate", "cargo", &facts.fetched_deps),
        format!(
            "Add `setup: [[{}]]` and `setupCache: [.cargo-home]` to repository `{}` in proofgraph.yaml, and give its cargo provider `env: {{CARGO_HOME: .cargo-home}}` and `--offline` (docs/setup.md).",
            facts
                .fetch_setup()
                .iter()
                .map(|w| if w.contains(' ') {
                    format!("\"{w}\"")
                } else {
                    w.clone()
                })
                .collect::<Vec<_>>()
                .join(", "),
            repo.id
        ),
    ))
}

/// The git view of `repo`, read once.
fn tree<'t>(trees: &'t mut BTreeMap<RepoId, Option<Tree>>, repo: &Repo) -> Option<&'t Tree> {
    trees
        .entry(repo.id.clone())
        .or_insert_with(|| Tree::read(&repo.dir))
        .as_ref()
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
        severity: Severity::Warning,
        message,
        fix,
        provider: None,
        capability: Some(cap.clone()),
        repository: gap.repository.clone(),
    }
}

/// A test runner a command starts, known by the files it looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    NodeTest,
    Pytest,
    JavaScript,
    GoTest,
    CargoTest,
}

impl Runner {
    /// The runner `argv` starts, read from its words (through `npx`, `python -m`, a shell).
    fn of(argv: &[String]) -> Option<Self> {
        let words: Vec<&str> = argv
            .iter()
            .flat_map(|a| a.split_whitespace())
            .map(|w| w.rsplit('/').next().unwrap_or(w))
            .collect();
        let has = |w: &str| words.contains(&w);
        let after = |first: &str, second: &str| {
            words
                .windows(2)
                .any(|pair| pair[0] == first && pair[1] == second)
        };
        if words.iter().any(|w| w.starts_with("node")) && has("--test") {
            Some(Runner::NodeTest)
        } else if has("pytest") || has("py.test") {
            Some(Runner::Pytest)
        } else if has("vitest") || has("jest") {
            Some(Runner::JavaScript)
        } else if after("go", "test") {
            Some(Runner::GoTest)
        } else if after("cargo", "test") || after("cargo", "nextest") {
            Some(Runner::CargoTest)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Runner::NodeTest => "`node --test`",
            Runner::Pytest => "pytest",
            Runner::JavaScript => "a JavaScript test runner",
            Runner::GoTest => "`go test`",
            Runner::CargoTest => "`cargo test`",
        }
    }

    /// Whether the runner looks for `path` (relative to the repository): a test file by its
    /// runner's default name patterns, its configuration, or its manifest. Nothing under
    /// `node_modules/`.
    fn looks_for(self, path: &str) -> bool {
        if path.split('/').any(|c| c == "node_modules") {
            return false;
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
        let js = matches!(ext, "js" | "mjs" | "cjs");
        let js_or_ts = js || matches!(ext, "ts" | "mts" | "cts" | "jsx" | "tsx");
        match self {
            Runner::NodeTest => {
                name == "package.json"
                    || (js
                        && (stem.ends_with(".test")
                            || stem.ends_with("-test")
                            || stem.ends_with("_test")
                            || stem.starts_with("test-")
                            || stem == "test"
                            || path.starts_with("test/")
                            || path.contains("/test/")))
            }
            Runner::Pytest => {
                matches!(
                    name,
                    "conftest.py" | "pytest.ini" | "pyproject.toml" | "setup.cfg" | "tox.ini"
                ) || (ext == "py" && (stem.starts_with("test_") || stem.ends_with("_test")))
            }
            Runner::JavaScript => {
                name == "package.json"
                    || stem.starts_with("vitest.config")
                    || stem.starts_with("jest.config")
                    || (js_or_ts && (stem.ends_with(".test") || stem.ends_with(".spec")))
            }
            Runner::GoTest => matches!(name, "go.mod" | "go.sum") || ext == "go",
            Runner::CargoTest => matches!(name, "Cargo.toml" | "Cargo.lock") || ext == "rs",
        }
    }
}

/// Whether `argv` runs `go test` with go's test cache on: no `-count` flag among its words
/// (through a shell's script too) nor in the provider's `GOFLAGS` (any `-count` turns the
/// cache off; `-count=1` is the idiom).
fn caches_go_tests(
    argv: &[String],
    env: Option<&BTreeMap<proofgraph_graph::EnvName, proofgraph_graph::span::Spanned<String>>>,
) -> bool {
    let words: Vec<&str> = argv
        .iter()
        .flat_map(|a| a.split_whitespace())
        .map(|w| w.trim_matches(['\'', '"']))
        .collect();
    let go_test = words
        .windows(2)
        .any(|pair| pair[0].rsplit('/').next() == Some("go") && pair[1] == "test");
    let count = |w: &str| {
        let w = w.trim_start_matches('-');
        w.starts_with("count") || w.starts_with("test.count")
    };
    let goflags = env
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.as_str() == "GOFLAGS")
        .any(|(_, value)| value.value.split_whitespace().any(count));
    go_test && !goflags && !words.iter().any(|w| w.starts_with('-') && count(w))
}

fn provider_findings(
    p: &Provider,
    repos: &[Repo],
    services: &[Service],
    host: &Host,
    last: Option<&LastRun>,
    trees: &mut BTreeMap<RepoId, Option<Tree>>,
    out: &mut Vec<Finding>,
) {
    let id = &p.id.value;
    let capability = p.capability();
    let home = wiring::home(p, repos);
    let finding = |code: &'static str, message: String, fix: String| Finding {
        code,
        severity: Severity::Warning,
        message,
        fix,
        provider: Some(id.clone()),
        capability: capability.clone(),
        repository: home.map(|r| r.id.clone()),
    };
    let report = p
        .report
        .as_ref()
        .map(|r| r.value.trim_start_matches("./").to_owned());
    let made = wiring::made_by_setup(p, repos);
    for (path, why) in &made {
        let mut f = finding(
            "setup_makes_path",
            format!(
                "provider `{id}` runs `{path}`, which the repository's setup makes ({why}), so git need not hold it"
            ),
            format!(
                "Keep `{path}` out of git: setup makes it in every sandbox before `{id}` runs."
            ),
        );
        f.severity = Severity::Info;
        out.push(f);
    }
    if p.adapter.value.runs_command()
        && let (Some(repo), Some(command)) = (home, &p.command)
    {
        let files: Vec<String> = command
            .value
            .iter()
            .filter_map(|word| existing_file(&repo.dir, word))
            .filter(|f| Some(f) != report.as_ref())
            .filter(|f| !made.iter().any(|(m, _)| m == f))
            .collect();
        match &p.inputs {
            Some(inputs) => {
                let inputs: Vec<String> = inputs.iter().map(|i| i.value.clone()).collect();
                if let Some(runner) = Runner::of(&command.value)
                    && let Some(tree) = tree(trees, repo)
                {
                    let left: Vec<&str> = tree
                        .tracked()
                        .filter(|f| runner.looks_for(f))
                        .filter(|f| {
                            covering(&inputs, repo.id.as_str(), repo.id.as_str(), f).is_none()
                        })
                        .collect();
                    if !left.is_empty() {
                        let shown: Vec<String> =
                            left.iter().take(3).map(|f| format!("`{f}`")).collect();
                        out.push(finding(
                            "runner_files_not_in_inputs",
                            format!(
                                "provider `{id}` runs {}, which looks for {} file{} of repository `{}` that its `inputs` leave out ({}{}): its world will not hold them",
                                runner.name(),
                                left.len(),
                                if left.len() == 1 { "" } else { "s" },
                                repo.id,
                                shown.join(", "),
                                if left.len() > 3 { ", …" } else { "" }
                            ),
                            format!(
                                "Add patterns that cover them to the `inputs` of provider `{id}`, or drop `inputs` to bind the whole repository."
                            ),
                        ));
                    }
                }
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
                if let Some(tree) = tree(trees, repo) {
                    for file in files {
                        let why = match tree.seen(&file) {
                            Seen::Tracked | Seen::Untracked => continue,
                            Seen::Ignored => "git ignores it".to_owned(),
                            Seen::LeftOut(dir) => format!(
                                "it lies in `{dir}/`, which sandboxes leave out unless git tracks it"
                            ),
                        };
                        out.push(finding(
                            "command_file_untracked",
                            format!(
                                "provider `{id}` runs `{file}`, but {why}: no sandbox has it, and the input digest does not see it"
                            ),
                            untracked_fix(&file, &repo.id),
                        ));
                    }
                }
            }
        }
    }
    // A declared `go-build` cache runs every `go test` of its repository with `-count=1`.
    let count_set = home.is_some_and(|r| r.caches.iter().any(|c| c == "go-build"));
    if p.adapter.value.runs_command()
        && !count_set
        && let Some(command) = &p.command
        && caches_go_tests(&command.value, p.env.as_ref())
    {
        out.push(finding(
            "go_test_replays",
            format!(
                "provider `{id}` runs `go test` without `-count=1`: go replays a package it has seen pass from its test cache instead of running it, and a replay is never a pass"
            ),
            format!(
                "Add `-count=1` to the `go test` arguments of provider `{id}` (after `test`)."
            ),
        ));
    }
    if let (Some(repo), Some(report)) = (home, &report) {
        let inputs: Option<Vec<String>> = p
            .inputs
            .as_ref()
            .map(|i| i.iter().map(|i| i.value.clone()).collect());
        // Without `inputs`, or from the base a list of `!` entries starts from, the
        // report is an input only when git tracks it (an untracked, ignored report is no
        // file of the repository's tree).
        let cover = match &inputs {
            Some(inputs) => covering(inputs, repo.id.as_str(), repo.id.as_str(), report),
            None => Some(Cover::Base),
        };
        match cover {
            Some(Cover::Entry(input)) => out.push(finding(
                "report_inside_inputs",
                format!(
                    "provider `{id}` writes its report `{report}` inside its input `{input}`: each run would change its own inputs and expire its receipt"
                ),
                format!(
                    "Narrow the `inputs` of `{id}` so that `{input}` no longer covers `{report}` (or end them with `!{report}`), or write the report under test-results/ outside them."
                ),
            )),
            Some(Cover::Base) if tree(trees, repo).is_some_and(|t| t.is_tracked(report)) => {
                out.push(finding(
                    "report_inside_inputs",
                    format!(
                        "provider `{id}` writes its report `{report}`, which git tracks in repository `{}`, so it is part of the provider's inputs: each run would change them",
                        repo.id
                    ),
                    format!("Stop tracking it (`git rm --cached {report}`) and ignore it, or write the report to an untracked path."),
                ));
            }
            Some(Cover::Base) | None => {}
        }
    }
    if p.adapter.value.runs_command()
        && let Some(repo) = home
        && let Some(tree) = tree(trees, repo)
        && let Some(f) = docs_in_inputs(p, repo, tree)
    {
        let mut f = finding(f.0, f.1, f.2);
        f.severity = Severity::Info;
        out.push(f);
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
    if p.adapter.value.runs_command()
        && let Some((_, program, missing)) = wiring::missing_program(p, repos, host)
    {
        let (message, fix) = match missing {
            Missing::Path => (
                format!(
                    "provider `{id}` runs `{program}`, which does not exist in its repository, and its setup does not make it"
                ),
                format!(
                    "Restore `{program}`, make it in the repository's `setup` (docs/setup.md), or fix the `command` of provider `{id}`."
                ),
            ),
            Missing::NotOnPath => (
                format!(
                    "provider `{id}` runs `{program}`, which is not on its PATH: the run could not start it"
                ),
                format!(
                    "{}, or fix the `command` of provider `{id}`.",
                    capitalize(&install_hint(&program))
                ),
            ),
        };
        out.push(finding("executable_not_found", message, fix));
    }
    if let Some(question) = python_question(p, repos)
        && let Some((interpreter, asked)) = python_lacks(host, &question)
    {
        let (python, module) = (&question.python, &question.module);
        let why = if asked {
            format!("cannot import `{module}` (asked in the repository, as the run will be)")
        } else {
            format!("has no module `{module}`: its standard library and site-packages hold none")
        };
        out.push(finding(
            "python_module_missing",
            format!(
                "provider `{id}` runs `{python} -m {module}`, but `{python}` ({}) {why}, so the run fails at the import",
                interpreter.display()
            ),
            format!(
                "Install it for that interpreter (`{python} -m pip install {module}`), or make a virtual environment in the repository's `setup` and run `.venv/bin/python -m {module}` (docs/setup.md)."
            ),
        ));
    }
    if let Some(last) = last.filter(|l| l.timed_out) {
        let limit = p
            .timeout_ms
            .as_ref()
            .map_or(DEFAULT_TIMEOUT_MS, |t| t.value);
        if limit <= last.duration_ms {
            let suggested = suggested_timeout(last.duration_ms);
            let declared = if p.timeout_ms.is_some() {
                format!("its `timeoutMs: {limit}`")
            } else {
                format!("the default `timeoutMs` of {limit}")
            };
            out.push(finding(
                "timeout_too_short",
                format!(
                    "provider `{id}`'s last run timed out after {} ({declared}) before it finished",
                    seconds(last.duration_ms)
                ),
                format!(
                    "Set `timeoutMs: {suggested}` on provider `{id}`: twice the {} its last run got, rounded up.",
                    seconds(last.duration_ms)
                ),
            ));
        }
    }
}

/// The interpreter `python… -m <module>` in `argv` — directly, after interpreter flags
/// (`python3 -B -m pytest`), or as the program of bootstrap's report wrapper
/// (`sh -c '…' sh python3 -m pytest`): its name (a bare name on `PATH`) and the module's
/// top-level package.
pub(crate) fn python_module(argv: &[String]) -> Option<(&str, &str)> {
    let mut rest = argv;
    if let [sh, c, _, _, tail @ ..] = rest
        && (sh == "sh" || sh == "bash")
        && c == "-c"
    {
        rest = tail;
    }
    let [python, args @ ..] = rest else {
        return None;
    };
    if !python.starts_with("python") {
        return None;
    }
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-m" => {
                let module = words.next()?;
                return Some((python, module.split('.').next().unwrap_or(module)));
            }
            // Options that take a value, which is not the module.
            "-W" | "-X" | "--check-hash-based-pycs" => {
                words.next();
            }
            w if w.starts_with('-') && !w.starts_with("-c") => {}
            // A script or `-c`: no module.
            _ => return None,
        }
    }
    None
}

/// What to ask the interpreter a provider runs as `python… -m <module>` in its repository
/// (with its `PYTHONPATH`), when it runs a command.
fn python_question(p: &Provider, repos: &[Repo]) -> Option<PythonQuestion> {
    if !p.adapter.value.runs_command() {
        return None;
    }
    let repo = wiring::home(p, repos)?;
    let (python, module) = python_module(&p.command.as_ref()?.value)?;
    let pythonpath = p
        .env
        .as_ref()
        .and_then(|env| env.iter().find(|(k, _)| k.as_str() == "PYTHONPATH"))
        .map(|(_, v)| {
            v.value
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| repo.dir.join(d))
                .collect()
        })
        .unwrap_or_default();
    Some(PythonQuestion {
        python: python.to_owned(),
        module: module.to_owned(),
        dir: repo.dir.clone(),
        pythonpath,
    })
}

/// What the application should ask the interpreters the `existing` providers run as
/// `python… -m <module>` (each question once): bootstrap reads what it can of an
/// interpreter, but one it cannot read (a shim, a script) only answers when run.
pub fn python_questions(repos: &[Repo], existing: &[Provider]) -> Vec<PythonQuestion> {
    let mut out: Vec<PythonQuestion> = Vec::new();
    for question in existing.iter().filter_map(|p| python_question(p, repos)) {
        if !out.contains(&question) {
            out.push(question);
        }
    }
    out
}

/// The interpreter that cannot import the module `question` names, and whether it said so
/// itself: the answer it gave when asked, else what reading its installation says (`None`:
/// it can, or it cannot be judged).
fn python_lacks(host: &Host, question: &PythonQuestion) -> Option<(std::path::PathBuf, bool)> {
    match host.python_imports.iter().find(|a| a.question == *question) {
        Some(answer) => (!answer.found).then(|| (answer.executable.clone(), true)),
        None => host
            .python_lacks(&question.python, &question.module, &question.pythonpath)
            .map(|interpreter| (interpreter, false)),
    }
}

/// Where a repository keeps documentation: a top-level `docs/` or `doc/` directory, and
/// its top-level README, CHANGELOG and CONTRIBUTING files.
const DOC_DIRS: [&str; 2] = ["docs", "doc"];
const DOC_FILES: [&str; 3] = ["readme", "changelog", "contributing"];

/// The `!` entry that leaves `path` out, when it is documentation (`!docs/**`,
/// `!README.md`).
fn documentation(path: &str) -> Option<String> {
    match path.split_once('/') {
        Some((dir, _)) => DOC_DIRS.contains(&dir).then(|| format!("!{dir}/**")),
        None => {
            let stem = path.split('.').next().unwrap_or(path).to_ascii_lowercase();
            DOC_FILES
                .contains(&stem.as_str())
                .then(|| format!("!{path}"))
        }
    }
}

/// `docs_in_inputs`: a provider whose inputs hold the repository's documentation (no
/// `inputs`: every file) reruns on a README or docs edit; the note names the `!` entries
/// that would leave it out. Bootstrap suggests only this narrowing, never a list of what to
/// include (ARCHITECTURE.md): a test that does read a document (`include_str!`, an
/// installed package's `readme`) would then not see it, so the fix says to check.
fn docs_in_inputs(
    p: &Provider,
    repo: &Repo,
    tree: &Tree,
) -> Option<(&'static str, String, String)> {
    let id = &p.id.value;
    let inputs: Option<Vec<String>> = p
        .inputs
        .as_ref()
        .map(|i| i.iter().map(|i| i.value.clone()).collect());
    let mut excludes: Vec<String> = Vec::new();
    let mut files = 0;
    for path in tree.tracked() {
        let Some(exclude) = documentation(path) else {
            continue;
        };
        let covered = match &inputs {
            Some(inputs) => covering(inputs, repo.id.as_str(), repo.id.as_str(), path).is_some(),
            None => true,
        };
        if covered {
            files += 1;
            if !excludes.contains(&exclude) {
                excludes.push(exclude);
            }
        }
    }
    if excludes.is_empty() {
        return None;
    }
    let shown: Vec<String> = excludes.iter().map(|e| format!("\"{e}\"")).collect();
    let fix = match &inputs {
        Some(_) => format!(
            "If no test of `{id}` reads them, append {} to its `inputs`: a later `!` entry removes what the entries before it select.",
            shown.join(", ")
        ),
        None => format!(
            "If no test of `{id}` reads them, add `inputs: [{}]` to `{id}`: a list of `!` entries is every file but those.",
            shown.join(", ")
        ),
    };
    let listed: Vec<String> = excludes.iter().map(|e| format!("`{}`", &e[1..])).collect();
    let what = format!(
        "{files} documentation file{} ({})",
        if files == 1 { "" } else { "s" },
        listed.join(", ")
    );
    let message = match &inputs {
        Some(_) => format!(
            "the `inputs` of provider `{id}` hold {what} of repository `{}`: an edit to them reruns it",
            repo.id
        ),
        None => format!(
            "provider `{id}` declares no `inputs`, so it reads every file of repository `{}`, {what} too: an edit to them reruns it",
            repo.id
        ),
    };
    Some(("docs_in_inputs", message, fix))
}

/// A duration for a person (`120 s`, `0.5 s`).
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// How to get a command file no sandbox has into one: a dependency
/// directory is setup's to make; anything else is git's to hold.
fn untracked_fix(file: &str, repo: &RepoId) -> String {
    let top = file.split('/').next().unwrap_or(file);
    if DEPENDENCY_DIRS.contains(&top) {
        format!(
            "Make `{top}` in the `setup` of repository `{repo}` and keep it with `setupCache: [{top}]` in proofgraph.yaml (docs/setup.md); git should not hold it."
        )
    } else {
        format!(
            "Stop ignoring `{file}` and commit it (`git add -f {file}`), or run a file git tracks."
        )
    }
}

/// Node.js programs: a command running one of them needs `node_modules`.
const NODE_PROGRAMS: [&str; 7] = ["node", "npm", "npx", "pnpm", "yarn", "bun", "corepack"];

/// Whether a command runs Node.js tooling: a package manager or `node`
/// (directly, inside bootstrap's report wrapper, or as a word of an `sh -c`
/// script), or a binary under `node_modules/`.
fn runs_node(argv: &[String]) -> bool {
    let node = |word: &str| {
        let word = word.trim_start_matches("./");
        NODE_PROGRAMS.contains(&word) || word.starts_with("node_modules/")
    };
    if crate::host::programs(argv).iter().any(|p| node(p)) || argv.first().is_some_and(|p| node(p))
    {
        return true;
    }
    let shell = argv.first().is_some_and(|c| c == "sh" || c == "bash")
        && argv.get(1).is_some_and(|f| f == "-c");
    shell
        && argv.get(2).is_some_and(|script| {
            script
                .split(|c: char| c.is_whitespace() || "&;|()".contains(c))
                .any(node)
        })
}

/// `dependencies_not_installed`: `package.json` declares dependencies, a
/// provider that runs Node.js tooling runs (or would run) in the
/// repository, no setup installs `node_modules`, and the run would not find
/// one.
fn dependencies(
    repo: &Repo,
    existing: &[Provider],
    repos: &[Repo],
    analysis: &Analysis,
    host: &Host,
    trees: &mut BTreeMap<RepoId, Option<Tree>>,
) -> Option<Finding> {
    if repo.setup.installs_node_modules().is_some() {
        return None;
    }
    let node = NodeFacts::read(&repo.dir, "", &mut Vec::new())?;
    if node.deps.is_empty() {
        return None;
    }
    // `node --test` over tests that import no declared package needs no `node_modules`.
    let tracked: Option<std::collections::BTreeSet<String>> =
        tree(trees, repo).map(|t| t.tracked().map(str::to_owned).collect());
    let needs = |argv: &[String]| {
        runs_node(argv) && needs_node_modules(argv, &repo.dir, tracked.as_ref(), &node.deps)
    };
    let runs_here = existing.iter().any(|p| {
        p.adapter.value.runs_command()
            && wiring::home(p, repos).is_some_and(|h| h.id == repo.id)
            && p.command.as_ref().is_some_and(|c| needs(&c.value))
    }) || analysis.detection.candidates.iter().any(|c| {
        c.recommended
            && c.repository == repo.id
            && c.provider["command"].as_array().is_some_and(|a| {
                let argv: Vec<String> = a
                    .iter()
                    .filter_map(|w| w.as_str().map(str::to_owned))
                    .collect();
                needs(&argv)
            })
    });
    if !runs_here {
        return None;
    }
    let absent = if host.in_place {
        (!repo.dir.join("node_modules").is_dir()).then(|| {
            "`node_modules` does not exist in the checkout, where providers run".to_owned()
        })
    } else {
        (!tree(trees, repo).is_some_and(|t| t.tracks_under("node_modules"))).then(|| {
            "a sandbox never has `node_modules` (it is left out unless git tracks it)".to_owned()
        })
    }?;
    let install = node.install_command();
    let n = node.deps.len();
    Some(repository_warning(
        repo,
        "dependencies_not_installed",
        format!(
            "repository `{}` declares {n} dependenc{} in package.json, but {absent}, and no setup installs them",
            repo.id,
            if n == 1 { "y" } else { "ies" }
        ),
        format!(
            "Add `setup: [[{}]]` and `setupCache: [node_modules]` to repository `{}` in proofgraph.yaml (docs/setup.md).",
            install.join(", "),
            repo.id
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn python_m_is_found_after_interpreter_flags_and_inside_the_report_wrapper() {
        let module =
            |words: &[&str]| python_module(&argv(words)).map(|(p, m)| (p.to_owned(), m.to_owned()));
        let pytest = Some(("python3".to_owned(), "pytest".to_owned()));
        assert_eq!(module(&["python3", "-m", "pytest", "-q"]), pytest);
        assert_eq!(
            module(&["python3", "-B", "-X", "dev", "-m", "pytest"]),
            pytest
        );
        assert_eq!(
            module(&[
                "sh",
                "-c",
                "mkdir -p r && exec \"$@\"",
                "sh",
                "python3",
                "-m",
                "pytest"
            ]),
            pytest
        );
        assert_eq!(
            module(&["python3.12", "-m", "pytest.main"]),
            Some(("python3.12".to_owned(), "pytest".to_owned()))
        );
        assert_eq!(module(&["python3", "run.py", "-m", "pytest"]), None);
        assert_eq!(module(&["python3", "-c", "import x", "-m", "pytest"]), None);
        assert_eq!(module(&["pytest", "-m", "slow"]), None);
        assert_eq!(module(&["python3", "-m"]), None);
    }

    #[test]
    fn an_interpreters_own_answer_decides_before_its_installation_is_read() {
        let question = PythonQuestion {
            python: "python3".to_owned(),
            module: "pytest".to_owned(),
            dir: std::path::PathBuf::from("/repo"),
            pythonpath: Vec::new(),
        };
        let answered = |found| {
            Host::default().with_python_imports(vec![crate::host::PythonImport {
                question: question.clone(),
                found,
                executable: "/opt/py/bin/python3.12".into(),
            }])
        };
        assert_eq!(
            python_lacks(&answered(false), &question),
            Some(("/opt/py/bin/python3.12".into(), true))
        );
        assert_eq!(python_lacks(&answered(true), &question), None);
        // Another question's answer is not this one's; nothing on PATH: not judged.
        let other = PythonQuestion {
            module: "mypy".to_owned(),
            ..question.clone()
        };
        assert_eq!(python_lacks(&answered(false), &other), None);
    }

    #[test]
    fn a_suggested_timeout_is_twice_the_run_rounded_up() {
        assert_eq!(suggested_timeout(120_000), 240_000);
        assert_eq!(suggested_timeout(120_001), 300_000);
        assert_eq!(suggested_timeout(95_000), 240_000);
        assert_eq!(suggested_timeout(300), 1_000);
        assert_eq!(suggested_timeout(12_400), 25_000);
        assert_eq!(suggested_timeout(0), 1_000);
        assert_eq!(
            suggested_timeout(u64::MAX),
            u64::MAX,
            "saturates, never wraps"
        );
    }
}
