//! What a repository's `setup` puts in a sandbox (docs/setup.md): with a
//! `setupCache`, setup runs where only its inputs are and the cached
//! directories are all that reach a sandbox; without one, setup runs in each
//! sandbox, so what its commands name is made there. Bootstrap reads this to
//! tell a path setup makes (`.venv/bin/python`) from a file git must hold.

use crate::model::Setup;
use crate::proposal::show;

/// Package-manager subcommands that install a project's dependencies.
const INSTALLS: [(&str, &[&str]); 4] = [
    ("npm", &["ci", "install", "i", "add"]),
    ("pnpm", &["install", "i", "add"]),
    ("yarn", &["install", "add"]),
    ("bun", &["install", "i", "add"]),
];

/// A path as setup commands and `setupCache` spell it: no `./`, no trailing `/`.
fn normal(path: &str) -> &str {
    path.trim_start_matches("./").trim_end_matches('/')
}

/// The words of a setup command, with `sh -c` scripts split at blanks and
/// shell separators (so `python3 -m venv .venv && …` yields `.venv`).
fn words(command: &[String]) -> Vec<Vec<String>> {
    let is_shell = command.first().is_some_and(|c| c == "sh" || c == "bash")
        && command.get(1).is_some_and(|f| f == "-c");
    if !is_shell {
        return vec![command.to_vec()];
    }
    let script = command.get(2).map(String::as_str).unwrap_or_default();
    script
        .split(['&', ';', '|', '\n'])
        .map(|part| {
            part.split_whitespace()
                .filter(|w| !w.contains('='))
                .map(str::to_owned)
                .collect::<Vec<String>>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

impl Setup {
    /// Whether setup is cached (it runs apart; only `cache` reaches a sandbox).
    pub fn is_cached(&self) -> bool {
        !self.cache.is_empty()
    }

    /// Why a sandbox gets `path` (repository-relative) from setup, if it
    /// does: it lies in a `setupCache` directory, or (without a cache) a
    /// setup command names it or the directory it lies in.
    pub fn makes(&self, path: &str) -> Option<String> {
        let path = normal(path);
        if path.is_empty() {
            return None;
        }
        if self.is_cached() {
            return self.cache.iter().map(|d| normal(d)).find_map(|dir| {
                (path == dir || path.starts_with(&format!("{dir}/")))
                    .then(|| format!("`{dir}` is in its `setupCache`"))
            });
        }
        let top = path.split('/').next().unwrap_or(path);
        for command in &self.commands {
            for words in words(command) {
                let names = words.iter().any(|w| {
                    let w = normal(w);
                    w == top || w == path
                });
                let uv_venv = top == ".venv"
                    && words.first().is_some_and(|w| w == "uv")
                    && words.get(1).is_some_and(|w| w == "sync" || w == "venv");
                if names || uv_venv {
                    return Some(format!(
                        "its setup command `{}` makes `{top}` in every sandbox",
                        show(command)
                    ));
                }
            }
        }
        None
    }

    /// How setup installs `node_modules` in a sandbox, if it does: a cached
    /// setup that keeps it, or (without a cache) a package manager's install.
    pub fn installs_node_modules(&self) -> Option<String> {
        if self.is_cached() {
            return self
                .cache
                .iter()
                .any(|d| normal(d) == "node_modules")
                .then(|| "`node_modules` is in its `setupCache`".to_owned());
        }
        self.commands.iter().find_map(|command| {
            words(command).into_iter().find_map(|w| {
                let program = w.first()?.rsplit('/').next()?.to_owned();
                let (_, subcommands) = INSTALLS.iter().find(|(pm, _)| *pm == program)?;
                let sub = w.iter().skip(1).find(|a| !a.starts_with('-'));
                let installs = match sub {
                    Some(s) => subcommands.contains(&s.as_str()),
                    // `yarn` alone installs.
                    None => program == "yarn",
                };
                installs.then(|| format!("its setup command `{}` installs them", show(command)))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proposal::argv;

    fn setup(commands: &[&[&str]], cache: &[&str]) -> Setup {
        Setup {
            commands: commands.iter().map(|c| argv(c)).collect(),
            cache: argv(cache),
        }
    }

    #[test]
    fn a_cached_setup_makes_only_what_it_caches() {
        let s = setup(
            &[
                &["python3", "-m", "venv", ".venv"],
                &[".venv/bin/pip", "install", "-r", "requirements.txt"],
                &["npm", "ci"],
            ],
            &["./.venv/"],
        );
        assert!(s.makes(".venv/bin/python").is_some());
        assert!(s.makes("./.venv").is_some());
        assert!(s.makes(".venvx/bin/python").is_none());
        assert!(
            s.makes("node_modules/.bin/vitest").is_none(),
            "installed where setup ran, but not kept"
        );
        assert!(s.installs_node_modules().is_none());
    }

    #[test]
    fn an_uncached_setup_makes_what_its_commands_name() {
        let s = setup(
            &[&[
                "sh",
                "-c",
                "python3 -m venv .venv && .venv/bin/pip install -r r.txt",
            ]],
            &[],
        );
        assert!(s.makes(".venv/bin/python").is_some());
        assert!(s.makes("scripts/test.sh").is_none());
        let uv = setup(&[&["uv", "sync", "--frozen"]], &[]);
        assert!(uv.makes(".venv/bin/python").is_some());
        assert!(Setup::default().makes(".venv/bin/python").is_none());
    }

    #[test]
    fn node_modules_are_installed_by_an_install_or_kept_by_the_cache() {
        assert!(
            setup(&[&["npm", "ci", "--no-audit"]], &[])
                .installs_node_modules()
                .is_some()
        );
        assert!(
            setup(&[&["pnpm", "install", "--frozen-lockfile"]], &[])
                .installs_node_modules()
                .is_some()
        );
        assert!(setup(&[&["yarn"]], &[]).installs_node_modules().is_some());
        assert!(
            setup(&[&["npm", "ci"]], &["node_modules"])
                .installs_node_modules()
                .is_some()
        );
        assert!(
            setup(&[&["npm", "run", "build"]], &[])
                .installs_node_modules()
                .is_none()
        );
        assert!(
            setup(&[&["npm", "ci"]], &[".venv"])
                .installs_node_modules()
                .is_none()
        );
        assert!(Setup::default().installs_node_modules().is_none());
    }
}
