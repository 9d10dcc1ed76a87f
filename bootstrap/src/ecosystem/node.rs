//! `package.json`: scripts, dependencies, the package manager (from
//! `packageManager` or the lockfile), and what they propose for `test`,
//! `static-analysis` and the script-alias capabilities.
//!
//! Rules (see the crate documentation for the full table):
//! - The test script is `test`, else `test:unit`, else `unit`; npm's
//!   placeholder (`echo "Error: no test specified" && exit 1`) counts as none.
//! - A script whose text, `pre` or `post` hook is risky is refused.
//! - A script that runs exactly one of vitest, jest, mocha or `node --test`,
//!   as the last command of an `&&` chain and not in watch mode, gets the
//!   runner's structured-report flags appended through the package manager:
//!   high grade. One that runs it before the end of an `&&` chain
//!   (`node --test && tsc`) gets that command run by itself with the flags
//!   (appended to the script, they would reach the last command): high grade
//!   when the command is plain words. Anything less certain runs the runner
//!   directly instead and needs review; several runners are ambiguous.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::model::Confidence;
use crate::proposal::{Proposal, argv, in_report_dir, report_path, show};
use crate::shell::{Script, has_metacharacters, program_words, risk};

/// The package managers bootstrap knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PackageManager {
    /// npm (`package-lock.json`, `npm-shrinkwrap.json`, or no lockfile).
    Npm,
    /// pnpm (`pnpm-lock.yaml`).
    Pnpm,
    /// Yarn (`yarn.lock`).
    Yarn,
    /// Bun (`bun.lock`, `bun.lockb`).
    Bun,
}

impl PackageManager {
    fn name(self) -> &'static str {
        match self {
            PackageManager::Npm => "npm",
            PackageManager::Pnpm => "pnpm",
            PackageManager::Yarn => "yarn",
            PackageManager::Bun => "bun",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "npm" => Some(PackageManager::Npm),
            "pnpm" => Some(PackageManager::Pnpm),
            "yarn" => Some(PackageManager::Yarn),
            "bun" => Some(PackageManager::Bun),
            _ => None,
        }
    }

    /// Runs script `name` with `extra` arguments appended to its text.
    pub(crate) fn run_script(self, name: &str, extra: &[String]) -> Vec<String> {
        let mut out = match self {
            PackageManager::Npm => argv(&["npm", "run", name]),
            PackageManager::Pnpm => argv(&["pnpm", "run", name]),
            PackageManager::Yarn => argv(&["yarn", name]),
            PackageManager::Bun => argv(&["bun", "run", name]),
        };
        if !extra.is_empty() {
            if self == PackageManager::Npm {
                out.push("--".to_owned());
            }
            out.extend(extra.iter().cloned());
        }
        out
    }

    /// Runs the locally installed binary `bin`, never downloading it.
    pub(crate) fn exec(self, bin: &str, args: &[String]) -> Vec<String> {
        let mut out = match self {
            PackageManager::Npm => argv(&["npm", "exec", "--no", "--", bin]),
            PackageManager::Pnpm => argv(&["pnpm", "exec", bin]),
            PackageManager::Yarn => argv(&["yarn", bin]),
            PackageManager::Bun => argv(&["bun", "run", bin]),
        };
        out.extend(args.iter().cloned());
        out
    }
}

/// The lockfiles, in Change Loop's Node.js runtime's order of preference.
const LOCKFILES: [(&str, PackageManager); 6] = [
    ("pnpm-lock.yaml", PackageManager::Pnpm),
    ("yarn.lock", PackageManager::Yarn),
    ("bun.lock", PackageManager::Bun),
    ("bun.lockb", PackageManager::Bun),
    ("package-lock.json", PackageManager::Npm),
    ("npm-shrinkwrap.json", PackageManager::Npm),
];

/// What `package.json` and its neighbours say.
#[derive(Debug, Clone)]
pub(crate) struct NodeFacts {
    /// Scripts in file order.
    pub(crate) scripts: Vec<(String, String)>,
    /// Dependency name → (section, version range).
    pub(crate) deps: BTreeMap<String, (&'static str, String)>,
    /// The package manager.
    pub(crate) pm: PackageManager,
    /// Why that package manager.
    pub(crate) pm_evidence: String,
    /// Whether the package manager is certain (one lockfile, or a
    /// `packageManager` field that agrees with the lockfiles).
    pub(crate) pm_certain: bool,
    /// The lockfile, if any.
    pub(crate) lockfile: Option<&'static str>,
    /// Whether `tsconfig.json` exists.
    pub(crate) tsconfig: bool,
}

impl NodeFacts {
    /// Reads `package.json` in `dir`; `None` when there is none or it is
    /// unreadable (with a warning).
    pub(crate) fn read(dir: &Path, shown: &str, warnings: &mut Vec<String>) -> Option<Self> {
        let path = dir.join("package.json");
        if !path.is_file() {
            return None;
        }
        let text = match fs_err::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                warnings.push(format!(
                    "`{shown}package.json` could not be read ({e}); its scripts were not considered"
                ));
                return None;
            }
        };
        let root: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!(
                    "`{shown}package.json` is not valid JSON ({e}); its scripts were not considered"
                ));
                return None;
            }
        };
        let Some(root) = root.as_object() else {
            warnings.push(format!(
                "`{shown}package.json` is not a JSON object; its scripts were not considered"
            ));
            return None;
        };
        let mut scripts = Vec::new();
        if let Some(map) = root.get("scripts").and_then(Value::as_object) {
            for (name, text) in map {
                match text.as_str() {
                    Some(t) => scripts.push((name.clone(), t.to_owned())),
                    None => warnings.push(format!(
                        "`{shown}package.json` script `{name}` is not a string; it was ignored"
                    )),
                }
            }
        }
        let mut deps = BTreeMap::new();
        for section in ["dependencies", "devDependencies"] {
            if let Some(map) = root.get(section).and_then(Value::as_object) {
                for (name, version) in map {
                    let version = version.as_str().unwrap_or("").to_owned();
                    deps.entry(name.clone()).or_insert((section, version));
                }
            }
        }
        let present: Vec<(&'static str, PackageManager)> = LOCKFILES
            .iter()
            .copied()
            .filter(|(file, _)| dir.join(file).is_file())
            .collect();
        let declared = root
            .get("packageManager")
            .and_then(Value::as_str)
            .map(|s| (s, s.split('@').next().and_then(PackageManager::from_name)));
        let mut kinds: Vec<PackageManager> = present.iter().map(|(_, pm)| *pm).collect();
        kinds.dedup();
        let lock_names = || {
            present
                .iter()
                .map(|(f, _)| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (pm, pm_evidence, pm_certain, lockfile) = match (declared, present.first()) {
            (Some((field, Some(pm))), _) => {
                let agrees = kinds.iter().all(|k| *k == pm);
                if !agrees {
                    warnings.push(format!(
                        "`{shown}package.json` declares packageManager `{field}` but the lockfiles are {}",
                        lock_names()
                    ));
                }
                let lock = present.iter().find(|(_, k)| *k == pm).map(|(f, _)| *f);
                (
                    pm,
                    format!("package.json packageManager `{field}` → {}", pm.name()),
                    agrees,
                    lock,
                )
            }
            (_, None) => (
                PackageManager::Npm,
                "no lockfile → npm".to_owned(),
                true,
                None,
            ),
            (_, Some((file, pm))) => {
                let certain = kinds.len() == 1;
                if !certain {
                    warnings.push(format!(
                        "`{shown}` has lockfiles of several package managers ({}); {} was assumed",
                        lock_names(),
                        pm.name()
                    ));
                }
                (*pm, format!("{file} → {}", pm.name()), certain, Some(*file))
            }
        };
        Some(Self {
            scripts,
            deps,
            pm,
            pm_evidence,
            pm_certain,
            lockfile,
            tsconfig: dir.join("tsconfig.json").is_file(),
        })
    }

    /// The setup command that installs the dependencies as the lockfile
    /// pins them (docs/setup.md's recipes).
    pub(crate) fn install_command(&self) -> Vec<String> {
        match (self.pm, self.lockfile) {
            (PackageManager::Npm, Some(_)) => argv(&["npm", "ci", "--no-audit", "--no-fund"]),
            (PackageManager::Npm, None) => argv(&["npm", "install", "--no-audit", "--no-fund"]),
            (PackageManager::Pnpm, _) => argv(&[
                "pnpm",
                "install",
                "--frozen-lockfile",
                "--store-dir",
                "node_modules/.pnpm-store",
            ]),
            (PackageManager::Yarn, _) => argv(&["yarn", "install", "--frozen-lockfile"]),
            (PackageManager::Bun, _) => argv(&["bun", "install", "--frozen-lockfile"]),
        }
    }

    /// The text of script `name`.
    pub(crate) fn script(&self, name: &str) -> Option<&str> {
        self.scripts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// Why script `name` (or its `pre`/`post` hook) is risky, if it is.
    pub(crate) fn script_risk(&self, name: &str) -> Option<String> {
        for hook in [name.to_owned(), format!("pre{name}"), format!("post{name}")] {
            if let Some(text) = self.script(&hook)
                && let Some(why) = risk(text)
            {
                return Some(if hook == name {
                    format!("script `{name}` is risky: {why}")
                } else {
                    format!("its hook `{hook}` is risky: {why}")
                });
            }
        }
        None
    }

    /// The dependency fact for `name`, if it is a dependency.
    pub(crate) fn dep(&self, name: &str) -> Option<String> {
        self.deps.get(name).map(|(section, version)| {
            if version.is_empty() {
                format!("`{name}` in {section}")
            } else {
                format!("`{name}` in {section} ({version})")
            }
        })
    }

    fn script_fact(name: &str, text: &str) -> String {
        format!("package.json script `{name}` runs `{text}`")
    }

    /// Proposals for `test`.
    pub(crate) fn test(&self) -> TestProposals {
        let placeholder = self
            .script("test")
            .is_some_and(|t| t.contains("no test specified"));
        let chosen = ["test", "test:unit", "unit"]
            .into_iter()
            .filter(|n| !(*n == "test" && placeholder))
            .find_map(|n| self.script(n).map(|t| (n, t)));
        let deps: Vec<Framework> = Framework::ALL
            .into_iter()
            .filter(|f| f.dep().is_some_and(|d| self.deps.contains_key(d)))
            .collect();
        let mut out = TestProposals::default();
        let Some((name, text)) = chosen else {
            if placeholder {
                out.notes
                    .push("package.json script `test` is npm's placeholder".to_owned());
            }
            out.proposals = self.direct(&deps, "package.json has no test script");
            return out;
        };
        if let Some(why) = self.script_risk(name) {
            out.proposals.push(Proposal::refused(
                format!("package.json script `{name}`"),
                vec![
                    Self::script_fact(name, text),
                    format!("refused: {why}; bootstrap never proposes running it"),
                ],
            ));
            return out;
        }
        let script = Script::parse(text);
        let commands = script.values();
        let named: Vec<(usize, Framework)> = commands
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Framework::of(c).map(|f| (i, f)))
            .collect();
        let mut kinds: Vec<Framework> = named.iter().map(|(_, f)| *f).collect();
        kinds.sort();
        kinds.dedup();
        match kinds.as_slice() {
            [] => {
                if deps.is_empty() {
                    out.no_count = Some(format!(
                        "package.json script `{name}` runs `{text}`, which is not a test runner whose structured report bootstrap knows"
                    ));
                } else {
                    out.proposals = self.direct(
                        &deps,
                        &format!(
                            "package.json script `{name}` runs `{text}`, not a test runner directly"
                        ),
                    );
                }
            }
            [framework] => {
                let framework = *framework;
                let (index, _) = named[named.len() - 1];
                let command = &commands[index];
                out.proposals
                    .push(self.scripted(name, text, &script, index, command, framework));
            }
            several => {
                let what = several
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(" and ");
                out.proposals = several
                    .iter()
                    .map(|f| {
                        self.direct_one(*f)
                            .graded(Confidence::Ambiguous)
                            .because(Self::script_fact(name, text))
                            .because(format!(
                                "the script runs {what}; flags appended to it would reach only the last"
                            ))
                    })
                    .collect();
            }
        }
        out
    }

    /// A proposal that appends the runner's flags to script `name`.
    fn scripted(
        &self,
        name: &str,
        text: &str,
        script: &Script,
        index: usize,
        command: &[String],
        framework: Framework,
    ) -> Proposal {
        let report = report_path(framework.report_file());
        let mut doubts = Vec::new();
        let last = index + 1 == script.commands.len();
        if !last && script.is_and_chain() {
            // `X && Y`: flags appended to the script would reach Y; run X itself.
            return self.alone(name, text, script, index, framework);
        }
        if !last || !script.is_and_chain() {
            doubts.push(format!(
                "{} is not the last command of an `&&` chain, so appended flags would not reach it",
                framework.name()
            ));
        }
        if let Some(why) = framework.conflict(command) {
            doubts.push(why);
        }
        let words = program_words(command);
        let node_positional =
            framework == Framework::NodeTest && words.iter().skip(1).any(|w| !w.starts_with('-'));
        let proposal = if framework == Framework::NodeTest && node_positional {
            // `node --test dir/ --flag` reads the flag as a file: put the
            // reporter flags before `--test`, running the command directly.
            let direct_ok = script.commands.len() == 1
                && words.len() == command.len()
                && !has_metacharacters(text);
            if !direct_ok {
                doubts.push(
                    "its `node --test` command names files, so the reporter flags must come first; the command runs directly instead of through the script".to_owned(),
                );
            }
            let mut node = vec![words[0].clone()];
            node.extend(framework.flags(&report));
            node.extend(words.iter().skip(1).cloned());
            Proposal::new(
                Confidence::High,
                "test-discovery",
                in_report_dir(node, &report, false),
                "node --test",
            )
            .because(Self::script_fact(name, text))
            .because(format!(
                "runs the script's `node --test` command with `{}` first: node writes TAP there",
                framework.flags(&report).join(" ")
            ))
        } else {
            let flags = framework.flags(&report);
            let mut run = self.pm.run_script(name, &flags);
            if framework.needs_report_dir() {
                run = in_report_dir(run, &report, false);
            }
            Proposal::new(
                Confidence::High,
                "test-discovery",
                run,
                format!("{} via {}", framework.name(), self.pm.name()),
            )
            .because(Self::script_fact(name, text))
            .because_all(framework.dep().and_then(|d| self.dep(d)))
            .because(self.pm_evidence.clone())
            .because(format!(
                "appends `{}`: {}",
                flags.join(" "),
                framework.writes(&report)
            ))
        };
        let proposal = proposal.report(&report, framework.format());
        let proposal = if !self.pm_certain {
            proposal
                .graded(Confidence::Review)
                .because("the package manager is uncertain (see warnings)".to_owned())
        } else {
            proposal
        };
        if doubts.is_empty() {
            proposal
        } else {
            let mut p = proposal.graded(Confidence::Review);
            p.evidence.extend(doubts);
            p
        }
    }

    /// The runner command `index` of script `name`, an `&&` chain in which it is not the
    /// last, run by itself with its report flags: appended to the script, they would reach
    /// the chain's last command instead. High when the command is plain words (no
    /// assignment or launcher before the runner, nothing the shell expands), the runner
    /// is not in watch mode and the package manager is certain (node needs none).
    fn alone(
        &self,
        name: &str,
        text: &str,
        script: &Script,
        index: usize,
        framework: Framework,
    ) -> Proposal {
        let words = &script.commands[index];
        let values: Vec<String> = words.iter().map(|w| w.value.clone()).collect();
        let runner = program_words(&values);
        let report = report_path(framework.report_file());
        let flags = framework.flags(&report);
        let mut run = match framework {
            // node reads a word after `--test` as a file: its flags go first.
            Framework::NodeTest => {
                let mut node = vec![runner[0].clone()];
                node.extend(flags.iter().cloned());
                node.extend(runner.iter().skip(1).cloned());
                node
            }
            _ if runner[0].contains('/') => {
                let mut direct = runner.to_vec();
                direct.extend(flags.iter().cloned());
                direct
            }
            _ => {
                let mut args: Vec<String> = runner[1..].to_vec();
                args.extend(flags.iter().cloned());
                self.pm.exec(&runner[0], &args)
            }
        };
        if framework.needs_report_dir() {
            run = in_report_dir(run, &report, false);
        }
        let rest: Vec<String> = script.values()[index + 1..]
            .iter()
            .map(|c| show(c))
            .collect();
        let mut proposal = Proposal::new(
            Confidence::High,
            "test-discovery",
            run,
            format!("{} from the script", framework.name()),
        )
        .because(Self::script_fact(name, text))
        .because_all(framework.dep().and_then(|d| self.dep(d)))
        .because(format!(
            "runs the script's `{}` by itself with `{}`: {}; appended to the script, they would reach `{}`, the last command of its `&&` chain",
            show(&values),
            flags.join(" "),
            framework.writes(&report),
            rest.last().map_or("", String::as_str)
        ));
        let mut doubts = Vec::new();
        if runner.len() != values.len() || !words.iter().all(|w| w.literal) {
            doubts.push(format!(
                "`{}` is not plain words (an assignment, a launcher or something the shell expands), so running it outside the script may differ",
                show(&values)
            ));
        }
        if let Some(why) = framework.conflict(&values) {
            doubts.push(why);
        }
        if framework != Framework::NodeTest && !self.pm_certain {
            doubts.push("the package manager is uncertain (see warnings)".to_owned());
        }
        proposal = proposal.report(&report, framework.format());
        if doubts.is_empty() {
            proposal
        } else {
            let mut p = proposal.graded(Confidence::Review);
            p.evidence.extend(doubts);
            p
        }
    }

    /// Runs the runner directly (bypassing the scripts): review when there
    /// is one runner, ambiguous when several.
    fn direct(&self, frameworks: &[Framework], why: &str) -> Vec<Proposal> {
        let grade = if frameworks.len() == 1 {
            Confidence::Review
        } else {
            Confidence::Ambiguous
        };
        frameworks
            .iter()
            .map(|f| self.direct_one(*f).graded(grade).because(why.to_owned()))
            .collect()
    }

    fn direct_one(&self, framework: Framework) -> Proposal {
        let report = report_path(framework.report_file());
        let flags = framework.flags(&report);
        let bin = framework.bin();
        let mut run = self.pm.exec(bin, &flags);
        if framework.needs_report_dir() {
            run = in_report_dir(run, &report, false);
        }
        Proposal::new(
            Confidence::Review,
            "test-discovery",
            run,
            format!("{} run directly", framework.name()),
        )
        .because_all(framework.dep().and_then(|d| self.dep(d)))
        .because(self.pm_evidence.clone())
        .because(format!(
            "runs {bin} `{}`: {}",
            flags.join(" "),
            framework.writes(&report)
        ))
        .report(&report, framework.format())
    }

    /// Proposals for `static-analysis`.
    pub(crate) fn static_analysis(&self) -> Vec<Proposal> {
        let aliases = ["check", "typecheck", "type-check", "lint"];
        let mut out = Vec::new();
        let mut safe = Vec::new();
        for name in aliases {
            let Some(text) = self.script(name) else {
                continue;
            };
            if let Some(why) = self.script_risk(name) {
                out.push(Proposal::refused(
                    format!("package.json script `{name}`"),
                    vec![
                        Self::script_fact(name, text),
                        format!("refused: {why}; bootstrap never proposes running it"),
                    ],
                ));
                continue;
            }
            safe.push((out.len(), name));
            out.push(
                Proposal::new(
                    Confidence::Alternative,
                    "command",
                    self.pm.run_script(name, &[]),
                    format!("script `{name}` via {}", self.pm.name()),
                )
                .because(Self::script_fact(name, text))
                .because(self.pm_evidence.clone()),
            );
        }
        if let [(only, name)] = safe.as_slice() {
            if *name == "check" {
                out[*only]
                    .evidence
                    .push("a script named `check` may do more than static analysis".to_owned());
            } else {
                out[*only].grade = if self.pm_certain {
                    Confidence::High
                } else {
                    Confidence::Review
                };
            }
        }
        if safe.is_empty() && out.is_empty() {
            if let Some(fact) = self.dep("eslint") {
                out.push(
                    Proposal::new(
                        Confidence::Alternative,
                        "command",
                        self.pm.exec("eslint", &argv(&["."])),
                        "eslint run directly",
                    )
                    .because(fact)
                    .because("no check, typecheck, type-check or lint script".to_owned()),
                );
            }
            if let Some(fact) = self.dep("typescript")
                && self.tsconfig
            {
                out.push(
                    Proposal::new(
                        Confidence::Alternative,
                        "command",
                        self.pm.exec("tsc", &argv(&["--noEmit"])),
                        "tsc run directly",
                    )
                    .because(fact)
                    .because("tsconfig.json exists".to_owned())
                    .because("no check, typecheck, type-check or lint script".to_owned()),
                );
            }
        }
        out
    }

    /// Command proposals from the script aliases of `capability` (never
    /// more than alternatives: a script's name is only a hint).
    pub(crate) fn aliases(&self, capability: &str) -> Vec<Proposal> {
        let names: &[&str] = match capability {
            "integration" => &["test:integration", "integration"],
            "compatibility" => &["test:compatibility", "compatibility"],
            "performance" => &["test:performance", "performance", "bench"],
            "security-static" => &["security", "security:static", "scan:security"],
            "accessibility" => &["test:accessibility", "accessibility", "a11y"],
            "data-migration" => &["test:migration", "migration:check"],
            "resilience" => &["test:resilience", "resilience"],
            "observability" => &["test:observability", "observability"],
            "deployment" => &["test:deployment", "deployment:check"],
            "dependency-supply-chain" => {
                &["supply-chain", "dependencies:audit", "audit:dependencies"]
            }
            _ => &[],
        };
        names
            .iter()
            .filter_map(|name| self.script(name).map(|t| (*name, t)))
            .map(|(name, text)| match self.script_risk(name) {
                Some(why) => Proposal::refused(
                    format!("package.json script `{name}`"),
                    vec![
                        Self::script_fact(name, text),
                        format!("refused: {why}; bootstrap never proposes running it"),
                    ],
                ),
                None => Proposal::new(
                    Confidence::Alternative,
                    "command",
                    self.pm.run_script(name, &[]),
                    format!("script `{name}` via {}", self.pm.name()),
                )
                .because(Self::script_fact(name, text))
                .because(format!(
                    "a script named `{name}` usually checks {capability}; only its exit code is read"
                )),
            })
            .collect()
    }
}

/// What `test` proposals a `package.json` yields.
#[derive(Debug, Default)]
pub(crate) struct TestProposals {
    /// The proposals.
    pub(crate) proposals: Vec<Proposal>,
    /// A test script exists but runs nothing with a known structured
    /// report: why.
    pub(crate) no_count: Option<String>,
    /// Other facts worth telling.
    pub(crate) notes: Vec<String>,
}

/// The JavaScript test runners bootstrap knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Framework {
    /// Vitest.
    Vitest,
    /// Jest.
    Jest,
    /// Mocha.
    Mocha,
    /// `node --test`.
    NodeTest,
}

impl Framework {
    const ALL: [Framework; 4] = [
        Framework::Vitest,
        Framework::Jest,
        Framework::Mocha,
        Framework::NodeTest,
    ];

    fn name(self) -> &'static str {
        match self {
            Framework::Vitest => "vitest",
            Framework::Jest => "jest",
            Framework::Mocha => "mocha",
            Framework::NodeTest => "node --test",
        }
    }

    fn bin(self) -> &'static str {
        match self {
            Framework::Vitest => "vitest",
            Framework::Jest => "jest",
            Framework::Mocha => "mocha",
            Framework::NodeTest => "node",
        }
    }

    fn dep(self) -> Option<&'static str> {
        match self {
            Framework::NodeTest => None,
            other => Some(other.bin()),
        }
    }

    fn format(self) -> &'static str {
        match self {
            Framework::Vitest => "vitest",
            Framework::Jest => "jest",
            Framework::Mocha => "mocha",
            Framework::NodeTest => "tap",
        }
    }

    fn report_file(self) -> &'static str {
        match self {
            Framework::Vitest => "vitest.json",
            Framework::Jest => "jest.json",
            Framework::Mocha => "mocha.json",
            Framework::NodeTest => "node-test.tap",
        }
    }

    /// Jest and node do not create the report's directory.
    fn needs_report_dir(self) -> bool {
        matches!(self, Framework::Jest | Framework::NodeTest)
    }

    fn flags(self, report: &str) -> Vec<String> {
        match self {
            Framework::Vitest => vec![
                "--run".to_owned(),
                "--reporter=json".to_owned(),
                format!("--outputFile={report}"),
            ],
            Framework::Jest => vec!["--json".to_owned(), format!("--outputFile={report}")],
            Framework::Mocha => vec![
                "--reporter".to_owned(),
                "json".to_owned(),
                "--reporter-option".to_owned(),
                format!("output={report}"),
            ],
            Framework::NodeTest => vec![
                "--test-reporter=tap".to_owned(),
                format!("--test-reporter-destination={report}"),
            ],
        }
    }

    fn writes(self, report: &str) -> String {
        match self {
            Framework::Vitest => {
                format!("vitest writes its JSON report (with numTotalTests) to `{report}`")
            }
            Framework::Jest => {
                format!("jest writes its JSON report (with numTotalTests) to `{report}`")
            }
            Framework::Mocha => {
                format!("mocha's JSON reporter writes its report (with stats.tests) to `{report}`")
            }
            Framework::NodeTest => format!("node writes TAP (with `# tests N`) to `{report}`"),
        }
    }

    /// The runner a command runs, if it is one of these.
    fn of(command: &[String]) -> Option<Framework> {
        let words = program_words(command);
        let program = words.first()?;
        let name = program.rsplit('/').next().unwrap_or(program);
        match name {
            "vitest" => Some(Framework::Vitest),
            "jest" => Some(Framework::Jest),
            "mocha" | "_mocha" => Some(Framework::Mocha),
            "node" if words.iter().any(|w| w == "--test") => Some(Framework::NodeTest),
            _ => None,
        }
    }

    /// Why appending this runner's flags to `command` would not give a
    /// one-shot structured run.
    fn conflict(self, command: &[String]) -> Option<String> {
        let words = program_words(command);
        let has = |flags: &[&str]| words.iter().any(|w| flags.contains(&w.as_str()));
        match self {
            Framework::Vitest
                if words
                    .get(1)
                    .is_some_and(|w| matches!(w.as_str(), "watch" | "dev" | "bench"))
                    || has(&["--watch", "-w"]) =>
            {
                Some(format!(
                    "the script runs vitest in watch or bench mode (`{}`)",
                    show(command)
                ))
            }
            Framework::Jest if has(&["--watch", "--watchAll"]) => Some(format!(
                "the script runs jest in watch mode (`{}`)",
                show(command)
            )),
            Framework::Mocha if has(&["--watch", "-w"]) => Some(format!(
                "the script runs mocha in watch mode (`{}`)",
                show(command)
            )),
            Framework::Mocha
                if words
                    .iter()
                    .any(|w| w == "--reporter" || w == "-R" || w.starts_with("--reporter=")) =>
            {
                Some("the script already chooses a mocha reporter".to_owned())
            }
            Framework::NodeTest if words.iter().any(|w| w.starts_with("--test-reporter")) => {
                Some("the script already chooses a node test reporter".to_owned())
            }
            _ => None,
        }
    }
}

/// `word` as a repository-relative file path, if it names an existing file.
pub(crate) fn existing_file(dir: &Path, word: &str) -> Option<String> {
    if word.is_empty()
        || word.starts_with('-')
        || word.starts_with('/')
        || word.split('/').any(|s| s == "..")
    {
        return None;
    }
    let rel = word.trim_start_matches("./");
    dir.join(rel).is_file().then(|| rel.to_owned())
}
