//! `Cargo.toml` (and `.config/nextest.toml`, `.cargo/config.toml`): what a
//! Rust repository proposes for `test` and `static-analysis`.
//!
//! Two ways to get a structured report with a test count:
//! - **cargo-nextest with a JUnit profile**, when `.config/nextest.toml`
//!   configures `[profile.<p>.junit] path`: `cargo nextest run --profile <p>`
//!   writes `target/nextest/<p>/<path>` itself — plain argv, no shell. The
//!   project opted in to nextest, so this is the high-grade proposal.
//! - **libtest's JSON event stream** otherwise: `cargo test -- -Z
//!   unstable-options --format json --report-time`, made available on a
//!   stable toolchain by `RUSTC_BOOTSTRAP=1` (set in the provider's `env`, so
//!   it is part of the fingerprint and visible). libtest can only print the
//!   stream, so the argv is `sh -c 'mkdir -p test-results && exec "$@" >
//!   test-results/cargo-test.json' sh cargo test …`: the shell program is
//!   fixed text that creates the directory and redirects standard output;
//!   the cargo argv stays explicit after it. Each test binary (doctests
//!   included) prints a `suite started` event with its `test_count`.

use std::path::Path;

use serde_json::{Map, Value};

use crate::host::Host;
use crate::model::Confidence;
use crate::proposal::{Proposal, argv, in_report_dir, report_path};

/// Cargo compiles before it tests: a generous timeout (15 minutes).
const TIMEOUT_MS: u64 = 900_000;

/// What the Rust manifests say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CargoFacts {
    /// `[package] name`, if the manifest has a package.
    pub(crate) package: Option<String>,
    /// Whether the manifest declares `[workspace]`.
    pub(crate) workspace: bool,
    /// Targets of the root manifest that set `harness = false`.
    pub(crate) custom_harness: Vec<String>,
    /// Whether `Cargo.lock` exists.
    pub(crate) lockfile: bool,
    /// nextest profiles with a JUnit path: (profile, path).
    pub(crate) junit_profiles: Vec<(String, String)>,
    /// `build.target-dir` from `.cargo/config.toml`, if set.
    pub(crate) target_dir: Option<String>,
    /// The dependencies (of every kind and target) cargo fetches from a registry or a git
    /// repository: not a `path`.
    pub(crate) fetched_deps: Vec<String>,
    /// The files cargo needs to read the manifest (its targets' sources, a declared build
    /// script): a setup that sees only `Cargo.toml` and `Cargo.lock` makes them empty.
    pub(crate) placeholders: Vec<String>,
    /// The `#[test]` functions of its `.rs` files not marked `#[ignore]` (this crate's, or
    /// with a workspace, its members' too).
    pub(crate) tests: usize,
}

/// The `#[test]` (and `#[tokio::test]`-like) functions below `dir` that are not
/// `#[ignore]`d. A nested crate is left out unless `workspace` (then its members count).
fn test_functions(dir: &Path, workspace: bool) -> usize {
    let stop = (!workspace).then_some("Cargo.toml");
    super::source_files(dir, ".rs", stop)
        .iter()
        .filter_map(|f| fs_err::read_to_string(f).ok())
        .map(|text| {
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            lines
                .iter()
                .enumerate()
                .filter(|(i, l)| {
                    (**l == "#[test]" || (l.starts_with("#[") && l.ends_with("::test]")))
                        && !lines[i + 1..]
                            .iter()
                            .take_while(|n| n.starts_with("#["))
                            .any(|n| n.starts_with("#[ignore"))
                })
                .count()
        })
        .sum()
}

/// The dependencies of `manifest` that cargo fetches (not `path`), every table of them.
fn fetched_deps(manifest: &toml::Table) -> Vec<String> {
    let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables: Vec<&toml::Table> = kinds
        .iter()
        .filter_map(|k| manifest.get(*k).and_then(toml::Value::as_table))
        .collect();
    for target in manifest
        .get("target")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flat_map(|t| t.values())
    {
        tables.extend(
            kinds
                .iter()
                .filter_map(|k| target.get(*k).and_then(toml::Value::as_table)),
        );
    }
    let mut out: Vec<String> = tables
        .into_iter()
        .flat_map(|t| t.iter())
        .filter(|(_, spec)| spec.get("path").is_none())
        .map(|(name, _)| name.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The source files cargo requires to read `manifest`: the library's (`src/lib.rs` unless
/// `[lib] path` says otherwise), each explicit `[[bin]]`, `[[test]]`, `[[bench]]` and
/// `[[example]]` (its `path`, else cargo's default for its name), and a declared `build`
/// script.
fn placeholders(manifest: &toml::Table) -> Vec<String> {
    let path = |t: &toml::Value| {
        t.get("path")
            .and_then(toml::Value::as_str)
            .map(str::to_owned)
    };
    let mut out = vec![
        manifest
            .get("lib")
            .and_then(path)
            .unwrap_or_else(|| "src/lib.rs".to_owned()),
    ];
    for (kind, dir) in [
        ("bin", "src/bin"),
        ("test", "tests"),
        ("bench", "benches"),
        ("example", "examples"),
    ] {
        for target in manifest
            .get(kind)
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = target.get("name").and_then(toml::Value::as_str);
            if let Some(file) = path(target).or_else(|| name.map(|n| format!("{dir}/{n}.rs"))) {
                out.push(file);
            }
        }
    }
    if let Some(build) = manifest
        .get("package")
        .and_then(|p| p.get("build"))
        .and_then(toml::Value::as_str)
    {
        out.push(build.to_owned());
    }
    out.sort();
    out.dedup();
    out
}

fn read_toml(path: &Path, shown: &str, warnings: &mut Vec<String>) -> Option<toml::Table> {
    if !path.is_file() {
        return None;
    }
    let text = match fs_err::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("`{shown}` could not be read ({e})"));
            return None;
        }
    };
    match toml::from_str::<toml::Table>(&text) {
        Ok(t) => Some(t),
        Err(e) => {
            let why = e.message().to_owned();
            warnings.push(format!(
                "`{shown}` is not valid TOML ({why}); it was not considered"
            ));
            None
        }
    }
}

impl CargoFacts {
    /// Reads `Cargo.toml` in `dir`.
    pub(crate) fn read(dir: &Path, shown: &str, warnings: &mut Vec<String>) -> Option<Self> {
        let manifest = read_toml(
            &dir.join("Cargo.toml"),
            &format!("{shown}Cargo.toml"),
            warnings,
        )?;
        let package = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(toml::Value::as_str)
            .map(str::to_owned);
        let workspace = manifest.contains_key("workspace");
        let mut custom_harness = Vec::new();
        let harness_off =
            |t: &toml::Value| t.get("harness").and_then(toml::Value::as_bool) == Some(false);
        if let Some(lib) = manifest.get("lib")
            && harness_off(lib)
        {
            custom_harness.push("lib".to_owned());
        }
        for kind in ["bin", "test"] {
            for target in manifest
                .get(kind)
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
            {
                if harness_off(target) {
                    let name = target
                        .get("name")
                        .and_then(toml::Value::as_str)
                        .unwrap_or("?");
                    custom_harness.push(format!("{kind} `{name}`"));
                }
            }
        }
        let mut junit_profiles = Vec::new();
        if let Some(nextest) = read_toml(
            &dir.join(".config/nextest.toml"),
            &format!("{shown}.config/nextest.toml"),
            warnings,
        ) && let Some(profiles) = nextest.get("profile").and_then(toml::Value::as_table)
        {
            for (name, profile) in profiles {
                if let Some(path) = profile
                    .get("junit")
                    .and_then(|j| j.get("path"))
                    .and_then(toml::Value::as_str)
                {
                    junit_profiles.push((name.clone(), path.to_owned()));
                }
            }
        }
        let mut target_dir = None;
        for config in [".cargo/config.toml", ".cargo/config"] {
            if let Some(table) = read_toml(&dir.join(config), &format!("{shown}{config}"), warnings)
            {
                target_dir = table
                    .get("build")
                    .and_then(|b| b.get("target-dir"))
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned);
                break;
            }
        }
        Some(Self {
            package,
            workspace,
            custom_harness,
            lockfile: dir.join("Cargo.lock").is_file(),
            junit_profiles,
            target_dir,
            fetched_deps: fetched_deps(&manifest),
            placeholders: placeholders(&manifest),
            tests: test_functions(dir, workspace),
        })
    }

    /// The cached setup that fetches every dependency `cargo test --offline` needs into
    /// `.cargo-home`, seeing only the manifest and the lockfile (docs/setup.md): it makes
    /// the placeholders cargo needs to read the manifest first; without a committed
    /// `Cargo.lock`, `cargo fetch` resolves one where it runs.
    pub(crate) fn fetch_setup(&self) -> Vec<String> {
        let dirs: std::collections::BTreeSet<&str> = self
            .placeholders
            .iter()
            .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d))
            .collect();
        let mut script = String::new();
        if !dirs.is_empty() {
            script.push_str(&format!(
                "mkdir -p {} && ",
                dirs.into_iter().collect::<Vec<_>>().join(" ")
            ));
        }
        script.push_str(&format!(
            "touch {} && CARGO_HOME=.cargo-home cargo fetch{}",
            self.placeholders.join(" "),
            if self.lockfile { " --locked" } else { "" }
        ));
        argv(&["sh", "-c", &script])
    }

    fn manifest_fact(&self) -> String {
        match (&self.package, self.workspace) {
            (Some(name), false) => format!("Cargo.toml declares package `{name}`"),
            (Some(name), true) => format!("Cargo.toml declares package `{name}` and a workspace"),
            (None, _) => "Cargo.toml declares a workspace".to_owned(),
        }
    }

    /// Proposals for `test`.
    pub(crate) fn test(&self, host: &Host, setup: &crate::model::Setup) -> Vec<Proposal> {
        let mut out = Vec::new();
        let nextest = self.nextest();
        // A nextest profile the machine cannot run leaves cargo test the
        // recommendation (`detect` shows nextest with what to install).
        let has_nextest = nextest.is_some() && host.finds("cargo-nextest");
        out.extend(nextest);
        let report = report_path("cargo-test.json");
        // Every test binary runs even after one fails: cargo stops at the first failing
        // binary otherwise, and the tests of the others never run nor count.
        // Crates from a registry come from the cached fetch setup (docs/setup.md): a job's
        // network is private. Unless a setup of the repository already fetches them, the
        // candidate comes with that setup, and runs offline from what it keeps.
        let fetched = setup.commands.iter().any(|c| {
            let text = c.join(" ");
            text.contains("cargo fetch") || text.contains("cargo vendor")
        });
        let needs_setup = !self.fetched_deps.is_empty() && !fetched;
        let mut cargo = argv(&["cargo", "test", "--no-fail-fast"]);
        if needs_setup {
            cargo.push("--offline".to_owned());
        }
        if self.workspace {
            cargo.push("--workspace".to_owned());
        }
        cargo.extend(argv(&[
            "--",
            "-Z",
            "unstable-options",
            "--format",
            "json",
            "--report-time",
        ]));
        let mut env = Map::new();
        if needs_setup {
            env.insert(
                "CARGO_HOME".to_owned(),
                Value::String(".cargo-home".to_owned()),
            );
        }
        env.insert("RUSTC_BOOTSTRAP".to_owned(), Value::String("1".to_owned()));
        let mut p = Proposal::new(
            Confidence::High,
            "test-discovery",
            in_report_dir(cargo, &report, true),
            "cargo test (libtest JSON)",
        )
        .field("env", Value::Object(env))
        .report(&report, "libtest-json")
        .field("timeoutMs", Value::from(TIMEOUT_MS))
        .because(self.manifest_fact())
        .because(format!(
            "runs cargo test with libtest's JSON event stream (`-Z unstable-options --format json`, available on stable through RUSTC_BOOTSTRAP=1 in `env`) redirected to `{report}`; each test binary's `suite started` event carries its test_count; `--no-fail-fast` runs every test binary even after one fails, so the counts are the whole suite's"
        ))
        .minimum_from(self.tests, "`#[test]` functions not marked `#[ignore]`");
        if needs_setup {
            p.evidence.push(format!(
                "`--offline` with `CARGO_HOME: .cargo-home`: its {} crate{} from a registry come from the repository's cached setup `{}` (`setupCache: [.cargo-home]`), which `init --write` adds to proofgraph.yaml; a job's network is private",
                self.fetched_deps.len(),
                if self.fetched_deps.len() == 1 { "" } else { "s" },
                crate::proposal::show(&self.fetch_setup()),
            ));
            p.setup = Some(crate::model::RepositorySetup {
                setup: self.fetch_setup(),
                cache: vec![".cargo-home".to_owned()],
            });
        }
        if self.workspace {
            p.evidence.push(
                "`--workspace` tests every member; member manifests were not read for `harness = false`".to_owned(),
            );
        }
        if has_nextest {
            p.grade = Confidence::Alternative;
            p.evidence.push(
                "an alternative to the project's nextest JUnit profile; unlike nextest it also runs doctests".to_owned(),
            );
        }
        if !self.custom_harness.is_empty() {
            p.grade = Confidence::Review;
            p.evidence.push(format!(
                "{} set `harness = false`: libtest's JSON flags would reach a custom harness",
                self.custom_harness.join(", ")
            ));
        }
        out.push(p);
        out
    }

    fn nextest(&self) -> Option<Proposal> {
        let (profile, path) = self
            .junit_profiles
            .iter()
            .find(|(p, _)| p == "ci")
            .or_else(|| self.junit_profiles.iter().find(|(p, _)| p == "default"))
            .or_else(|| self.junit_profiles.first())?;
        let target = self.target_dir.as_deref().unwrap_or("target");
        let report = format!("{}/nextest/{profile}/{path}", target.trim_end_matches('/'));
        let mut command = argv(&["cargo", "nextest", "run", "--profile"]);
        command.push(profile.clone());
        if self.workspace {
            command.push("--workspace".to_owned());
        }
        let mut p = Proposal::new(Confidence::High, "test-discovery", command, "cargo nextest (JUnit)")
            .report(&report, "junit")
            .field("timeoutMs", Value::from(TIMEOUT_MS))
            .because(self.manifest_fact())
            .because(format!(
                ".config/nextest.toml profile `{profile}` writes JUnit to `{path}`, which nextest puts at `{report}`"
            ))
            .because("cargo-nextest does not run doctests".to_owned());
        if self.junit_profiles.len() > 1 {
            p.grade = Confidence::Review;
            p.evidence.push(format!(
                "several nextest profiles write JUnit ({}); `{profile}` was chosen",
                self.junit_profiles
                    .iter()
                    .map(|(p, _)| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if let Some(dir) = &self.target_dir {
            if dir.starts_with('/') || dir.split('/').any(|s| s == "..") {
                p.grade = Confidence::Review;
                p.evidence.push(format!(
                    ".cargo/config sets target-dir `{dir}` outside the repository: the report path must be workspace-relative"
                ));
            } else {
                p.evidence
                    .push(format!(".cargo/config sets target-dir `{dir}`"));
            }
        }
        p.evidence.push(
            "CARGO_TARGET_DIR in the environment would move the report; it was not read".to_owned(),
        );
        Some(p)
    }

    /// Proposals for `static-analysis`.
    pub(crate) fn static_analysis(&self) -> Vec<Proposal> {
        let mut command = argv(&["cargo", "clippy", "--all-targets"]);
        if self.workspace {
            command.push("--workspace".to_owned());
        }
        command.extend(argv(&["--", "-D", "warnings"]));
        vec![
            Proposal::new(Confidence::Alternative, "command", command, "cargo clippy")
                .field("timeoutMs", Value::from(TIMEOUT_MS))
                .because(self.manifest_fact())
                .because(
                    "cargo clippy with warnings as errors; only the exit code is read".to_owned(),
                ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(manifest: &str, lockfile: bool) -> CargoFacts {
        let dir = tempfile::tempdir().expect("tempdir");
        fs_err::write(dir.path().join("Cargo.toml"), manifest).expect("write");
        if lockfile {
            fs_err::write(dir.path().join("Cargo.lock"), "version = 4\n").expect("write");
        }
        CargoFacts::read(dir.path(), "", &mut Vec::new()).expect("facts")
    }

    #[test]
    fn test_functions_not_ignored_are_counted() {
        let f = facts("[package]\nname = \"a\"\nversion = \"0.1.0\"\n", false);
        assert_eq!(f.tests, 0);
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |path: &str, text: &str| {
            let at = dir.path().join(path);
            fs_err::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
            fs_err::write(at, text).expect("write");
        };
        write(
            "src/lib.rs",
            "#[cfg(test)]\nmod t {\n    #[test]\n    fn a() {}\n    #[test]\n    #[ignore = \"slow\"]\n    fn b() {}\n    #[tokio::test]\n    async fn c() {}\n}\n",
        );
        write(
            "tests/it.rs",
            "#[test]\n#[should_panic]\nfn d() { panic!() }\n",
        );
        write(
            "target/debug/build/x/out/gen.rs",
            "#[test]\nfn generated() {}\n",
        );
        write("member/Cargo.toml", "[package]\nname = \"m\"\n");
        write("member/src/lib.rs", "#[test]\nfn e() {}\n");
        assert_eq!(test_functions(dir.path(), false), 3);
        assert_eq!(test_functions(dir.path(), true), 4);
    }

    #[test]
    fn the_fetch_setup_makes_every_target_cargo_needs_to_read_the_manifest() {
        let f = facts(
            "[package]\nname = \"a\"\nversion = \"0.1.0\"\nbuild = \"build.rs\"\n\n[dependencies]\nitoa = \"1\"\nlocal = { path = \"../local\" }\n\n[target.'cfg(unix)'.dev-dependencies]\nlibc = \"0.2\"\n\n[[bench]]\nname = \"speed\"\nharness = false\n\n[[test]]\nname = \"it\"\npath = \"tests/it/main.rs\"\n",
            false,
        );
        assert_eq!(f.fetched_deps, ["itoa", "libc"]);
        assert_eq!(
            f.placeholders,
            [
                "benches/speed.rs",
                "build.rs",
                "src/lib.rs",
                "tests/it/main.rs"
            ]
        );
        assert_eq!(
            f.fetch_setup(),
            argv(&[
                "sh",
                "-c",
                "mkdir -p benches src tests/it && touch benches/speed.rs build.rs src/lib.rs tests/it/main.rs && CARGO_HOME=.cargo-home cargo fetch"
            ])
        );
        let locked = facts("[package]\nname = \"a\"\nversion = \"0.1.0\"\n", true);
        assert!(locked.fetched_deps.is_empty());
        assert_eq!(
            locked.fetch_setup()[2],
            "mkdir -p src && touch src/lib.rs && CARGO_HOME=.cargo-home cargo fetch --locked"
        );
    }
}
