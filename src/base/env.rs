//! The process's facts: where it runs and its environment, captured once.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// The facts about the process, read once by `main` so that nothing below it
/// reads the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// The directory resolution starts from (after `-C`).
    pub cwd: PathBuf,
    /// The user's home directory.
    pub home: PathBuf,
    /// `$XDG_DATA_HOME`, when set and non-empty.
    pub xdg_data_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, when set and non-empty.
    pub xdg_config_home: Option<PathBuf>,
    /// `$PATH`, where commands' programs are found.
    pub path: Option<std::ffi::OsString>,
    /// The whole environment, for the names a run passes on (`PATH`, `HOME`,
    /// `LANG`, `envFrom`).
    pub vars: BTreeMap<OsString, OsString>,
}

impl Env {
    /// OpenSpec's global data directory (`$XDG_DATA_HOME/openspec`, else
    /// `~/.local/share/openspec`).
    pub fn data_dir(&self) -> PathBuf {
        match &self.xdg_data_home {
            Some(xdg) => crate::base::paths::normalize(&xdg.join("openspec")),
            None => crate::base::paths::normalize(&self.home.join(".local/share/openspec")),
        }
    }

    /// OpenSpec's global config file (`$XDG_CONFIG_HOME/openspec/config.json`,
    /// else `~/.config/openspec/config.json`).
    pub fn config_file(&self) -> PathBuf {
        match &self.xdg_config_home {
            Some(xdg) => crate::base::paths::normalize(&xdg.join("openspec/config.json")),
            None => crate::base::paths::normalize(&self.home.join(".config/openspec/config.json")),
        }
    }
}

impl Env {
    /// proofgraph's own per-user configuration directory
    /// (`$XDG_CONFIG_HOME/proofgraph`, else `~/.config/proofgraph`), where the
    /// keys this user trusts for each store are pinned. A relative
    /// `$XDG_CONFIG_HOME` is ignored, as the XDG specification says.
    pub fn proofgraph_config_dir(&self) -> PathBuf {
        match self.xdg_config_home.as_ref().filter(|p| p.is_absolute()) {
            Some(xdg) => crate::base::paths::normalize(&xdg.join("proofgraph")),
            None => crate::base::paths::normalize(&self.home.join(".config/proofgraph")),
        }
    }

    /// An environment variable's value.
    pub fn var(&self, name: &str) -> Option<&OsString> {
        self.vars.get(std::ffi::OsStr::new(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_dir_follows_xdg_and_ignores_a_relative_one() {
        let mut env = Env {
            cwd: PathBuf::from("/w"),
            home: PathBuf::from("/home/u"),
            xdg_data_home: None,
            xdg_config_home: None,
            path: None,
            vars: BTreeMap::new(),
        };
        assert_eq!(
            env.proofgraph_config_dir(),
            PathBuf::from("/home/u/.config/proofgraph")
        );
        env.xdg_config_home = Some(PathBuf::from("/x/config"));
        assert_eq!(
            env.proofgraph_config_dir(),
            PathBuf::from("/x/config/proofgraph")
        );
        env.xdg_config_home = Some(PathBuf::from("relative/config"));
        assert_eq!(
            env.proofgraph_config_dir(),
            PathBuf::from("/home/u/.config/proofgraph")
        );
    }
}
