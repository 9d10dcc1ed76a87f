//! One execution, described without providers: the files it sees under its input root,
//! its argv, working directory, environment, declared outputs, platform and timeout.
//!
//! Everything here is validated when it is made, so what `action.rs` encodes is always
//! encodable: paths are relative, `/`-separated, UTF-8, with no `.`, `..` or empty part; a
//! symlink is kept only when its target stays inside the root; the environment carries a
//! proof that no secret of the run is in it ([`Environment::checked`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::redact::Secrets;

/// Why a description was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A path that is not relative, normal and UTF-8.
    #[error("use `{path}` as a path in the input root: {reason}")]
    Path {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A symlink whose target leaves the input root (or is absolute).
    #[error("keep the symlink `{path}` in the input root: its target `{target}` lies outside it")]
    SymlinkOutside {
        /// The symlink.
        path: String,
        /// Its target.
        target: String,
    },
    /// Two entries at one path, or an entry under a file or symlink.
    #[error("place `{path}` in the input root: {reason}")]
    Conflict {
        /// The path.
        path: String,
        /// What is there already.
        reason: &'static str,
    },
    /// An argument, variable or property that is not UTF-8, or a duplicate variable.
    #[error("encode {what}: {reason}")]
    Text {
        /// Which value.
        what: String,
        /// Why.
        reason: &'static str,
    },
    /// The environment holds a secret of the run.
    #[error("send the environment to an engine: the value of `{name}` holds a secret")]
    SecretInEnvironment {
        /// The variable.
        name: String,
    },
    /// A file of the host that could not be read (or changed while it was).
    #[error("read `{path}` for the input root: {reason}")]
    Read {
        /// The host file.
        path: PathBuf,
        /// What happened.
        reason: String,
    },
    /// No argv.
    #[error("encode the command: it has no arguments")]
    NoCommand,
}

/// A path under the input root: relative, `/`-separated, UTF-8, each part neither empty
/// nor `.` nor `..`. The empty path is the root itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    /// The root.
    pub fn root() -> Self {
        RelPath(String::new())
    }

    /// `path`, validated.
    pub fn new(path: &str) -> Result<Self, InputError> {
        let bad = |reason| InputError::Path {
            path: path.to_owned(),
            reason,
        };
        if path.is_empty() {
            return Ok(Self::root());
        }
        if path.starts_with('/') {
            return Err(bad("it is absolute"));
        }
        if path.contains('\0') {
            return Err(bad("it holds a NUL byte"));
        }
        for part in path.split('/') {
            match part {
                "" => return Err(bad("it has an empty part (`//` or a trailing `/`)")),
                "." | ".." => return Err(bad("it has a `.` or `..` part")),
                _ => {}
            }
        }
        Ok(RelPath(path.to_owned()))
    }

    /// `path` (a host path, relative), validated.
    pub fn from_path(path: &Path) -> Result<Self, InputError> {
        let text = path.to_str().ok_or_else(|| InputError::Path {
            path: path.to_string_lossy().into_owned(),
            reason: "it is not UTF-8",
        })?;
        Self::new(text)
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its parts.
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|p| !p.is_empty())
    }

    /// `self/name`.
    pub fn join(&self, name: &str) -> Result<Self, InputError> {
        if self.0.is_empty() {
            Self::new(name)
        } else {
            Self::new(&format!("{}/{name}", self.0))
        }
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a file's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A file of the host, read when the action is encoded and again, checked, when it is
    /// uploaded.
    Host(PathBuf),
    /// These bytes.
    Bytes(Vec<u8>),
}

/// One entry of the input root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file.
    File {
        /// Its bytes.
        content: Content,
        /// Whether it is executable.
        executable: bool,
    },
    /// A symlink, kept as a symlink; its target stays inside the root.
    Symlink {
        /// The target as the link holds it (relative).
        target: String,
    },
    /// A directory, empty unless other entries lie under it.
    Directory,
}

/// Whether the symlink at `path` with `target` resolves inside the root, lexically (from
/// the link's own directory; an absolute target never does).
pub fn symlink_stays_inside(path: &RelPath, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') || target.contains('\0') {
        return false;
    }
    let mut depth: Vec<&str> = path.parts().collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            name => depth.push(name),
        }
    }
    true
}

/// The files an execution sees, by path under its input root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    pub(super) entries: std::collections::BTreeMap<RelPath, Entry>,
}

impl Files {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `entry` at `path`; a second entry at one path is refused, as is a symlink
    /// whose target leaves the root.
    pub fn add(&mut self, path: RelPath, entry: Entry) -> Result<(), InputError> {
        if path.as_str().is_empty() {
            return Err(InputError::Conflict {
                path: String::new(),
                reason: "the root itself is a directory",
            });
        }
        if let Entry::Symlink { target } = &entry
            && !symlink_stays_inside(&path, target)
        {
            return Err(InputError::SymlinkOutside {
                path: path.to_string(),
                target: target.clone(),
            });
        }
        if self.entries.contains_key(&path) {
            return Err(InputError::Conflict {
                path: path.to_string(),
                reason: "another entry has this path",
            });
        }
        self.entries.insert(path, entry);
        Ok(())
    }

    /// Adds a file of bytes.
    pub fn bytes(&mut self, path: &str, bytes: &[u8], executable: bool) -> Result<(), InputError> {
        self.add(
            RelPath::new(path)?,
            Entry::File {
                content: Content::Bytes(bytes.to_vec()),
                executable,
            },
        )
    }

    /// Adds what lies under the host directory `dir` at `under`, as the local sandbox
    /// materialises it: regular files (executable when any execute bit is set), symlinks
    /// as symlinks, directories (empty ones too). A path already added (from a layer
    /// above) is kept and what lies under it here is skipped, so that calling this for
    /// each layer, top first, gives what an overlay of them shows. Anything else (a
    /// socket, a device) is left out.
    pub fn add_tree(&mut self, under: &RelPath, dir: &Path) -> Result<(), InputError> {
        let read = |path: &Path, e: std::io::Error| InputError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut names: Vec<_> = fs_err::read_dir(dir)
            .map_err(|e| read(dir, e))?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| read(dir, e))?;
        names.sort();
        for name in names {
            let host = dir.join(&name);
            let name = name.to_str().ok_or_else(|| InputError::Path {
                path: host.to_string_lossy().into_owned(),
                reason: "it is not UTF-8",
            })?;
            let path = under.join(name)?;
            let meta = fs_err::symlink_metadata(&host).map_err(|e| read(&host, e))?;
            let kind = meta.file_type();
            if let Some(existing) = self.entries.get(&path) {
                // A layer above has it; only a directory there lets this one show through.
                if matches!(existing, Entry::Directory) && kind.is_dir() {
                    self.add_tree(&path, &host)?;
                }
                continue;
            }
            if kind.is_dir() {
                self.entries.insert(path.clone(), Entry::Directory);
                self.add_tree(&path, &host)?;
            } else if kind.is_symlink() {
                let target = fs_err::read_link(&host).map_err(|e| read(&host, e))?;
                let target = target.to_str().ok_or_else(|| InputError::Path {
                    path: host.to_string_lossy().into_owned(),
                    reason: "its target is not UTF-8",
                })?;
                self.add(
                    path,
                    Entry::Symlink {
                        target: target.to_owned(),
                    },
                )?;
            } else if kind.is_file() {
                use std::os::unix::fs::PermissionsExt as _;
                let executable = meta.permissions().mode() & 0o111 != 0;
                self.add(
                    path,
                    Entry::File {
                        content: Content::Host(host),
                        executable,
                    },
                )?;
            }
        }
        Ok(())
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// An environment that holds no secret of the run: the only kind [`super::action`]
/// encodes. Made by [`Environment::checked`] alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment(Vec<(String, String)>);

impl Environment {
    /// `vars` (already reduced by the caller), once no value of them holds one of
    /// `secrets` — the values of every `envFrom` of the run, which never go to an engine —
    /// and each name is set once.
    pub fn checked(
        vars: impl IntoIterator<Item = (String, String)>,
        secrets: &Secrets,
    ) -> Result<Self, InputError> {
        let mut vars: Vec<(String, String)> = vars.into_iter().collect();
        vars.sort();
        let mut seen = BTreeSet::new();
        for (name, value) in &vars {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(InputError::Text {
                    what: format!("the variable `{name}`"),
                    reason: "its name is empty or holds `=` or NUL",
                });
            }
            if !seen.insert(name.as_str()) {
                return Err(InputError::Text {
                    what: format!("the variable `{name}`"),
                    reason: "it is set twice",
                });
            }
            if secrets.occur_in(value.as_bytes()) || secrets.occur_in(name.as_bytes()) {
                return Err(InputError::SecretInEnvironment { name: name.clone() });
            }
        }
        Ok(Environment(vars))
    }

    /// The variables, sorted by name.
    pub fn vars(&self) -> &[(String, String)] {
        &self.0
    }
}

/// One execution, as an engine is asked to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// What it sees under its input root.
    pub files: Files,
    /// The program and its arguments (the program as the job names it).
    pub argv: Vec<String>,
    /// Its working directory under the root (made if no file lies in it).
    pub working_directory: RelPath,
    /// Its environment.
    pub env: Environment,
    /// What it writes that comes back (a provider's report), relative to the working
    /// directory.
    pub outputs: Vec<RelPath>,
    /// The platform properties the engine matches workers by, as given.
    pub platform: Vec<(String, String)>,
    /// How long it may run.
    pub timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_normal_and_split_on_slashes() {
        assert_eq!(RelPath::new("a/b.txt").expect("ok").as_str(), "a/b.txt");
        assert_eq!(RelPath::new("").expect("root"), RelPath::root());
        for bad in ["/etc/passwd", "a//b", "a/", "./a", "a/../b", "..", "a\0b"] {
            assert!(RelPath::new(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            RelPath::root()
                .join("x")
                .expect("ok")
                .join("y")
                .expect("ok"),
            RelPath::new("x/y").expect("ok")
        );
    }

    #[test]
    fn a_symlink_stays_inside_only_when_it_resolves_under_the_root() {
        let at = |p: &str| RelPath::new(p).expect("a path");
        assert!(symlink_stays_inside(&at("a/link"), "../b"));
        assert!(symlink_stays_inside(&at("a/b/link"), "../../c/./d"));
        assert!(symlink_stays_inside(&at("link"), "x/y"));
        assert!(!symlink_stays_inside(&at("link"), "../x"));
        assert!(!symlink_stays_inside(&at("a/link"), "../../x"));
        assert!(!symlink_stays_inside(&at("a/link"), "/etc/passwd"));
        assert!(!symlink_stays_inside(&at("a/link"), ""));
        let mut files = Files::new();
        let err = files
            .add(
                at("a/link"),
                Entry::Symlink {
                    target: "../../etc".into(),
                },
            )
            .expect_err("outside");
        assert!(matches!(err, InputError::SymlinkOutside { .. }), "{err}");
    }

    #[test]
    fn an_environment_with_a_secret_or_a_name_twice_is_refused() {
        let secrets = Secrets::new([b"hunter2-canary-value".to_vec()]);
        let ok = Environment::checked(
            [("B".into(), "2".into()), ("A".into(), "1".into())],
            &secrets,
        )
        .expect("no secret");
        assert_eq!(ok.vars()[0].0, "A", "sorted");
        let err = Environment::checked(
            [("TOKEN".into(), "x hunter2-canary-value y".into())],
            &secrets,
        )
        .expect_err("a secret");
        assert_eq!(
            err,
            InputError::SecretInEnvironment {
                name: "TOKEN".into()
            }
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let twice = Environment::checked(
            [("A".into(), "1".into()), ("A".into(), "2".into())],
            &Secrets::none(),
        );
        assert!(twice.is_err());
    }

    #[test]
    fn a_tree_is_read_as_an_overlay_of_its_layers_top_first() {
        use std::os::unix::fs::PermissionsExt as _;
        let top = tempfile::tempdir().expect("a directory");
        let bottom = tempfile::tempdir().expect("a directory");
        fs_err::create_dir_all(top.path().join("d")).expect("mkdir");
        fs_err::write(top.path().join("d/a.txt"), "top").expect("write");
        fs_err::create_dir_all(bottom.path().join("d/empty")).expect("mkdir");
        fs_err::write(bottom.path().join("d/a.txt"), "bottom").expect("write");
        fs_err::write(bottom.path().join("d/b.sh"), "#!/bin/sh").expect("write");
        fs_err::set_permissions(
            bottom.path().join("d/b.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        std::os::unix::fs::symlink("d/a.txt", bottom.path().join("link")).expect("symlink");
        let mut files = Files::new();
        files.add_tree(&RelPath::root(), top.path()).expect("top");
        files
            .add_tree(&RelPath::root(), bottom.path())
            .expect("bottom");
        let get = |p: &str| {
            files
                .entries
                .get(&RelPath::new(p).expect("a path"))
                .cloned()
        };
        assert_eq!(
            get("d/a.txt"),
            Some(Entry::File {
                content: Content::Host(top.path().join("d/a.txt")),
                executable: false
            })
        );
        assert_eq!(
            get("d/b.sh"),
            Some(Entry::File {
                content: Content::Host(bottom.path().join("d/b.sh")),
                executable: true
            })
        );
        assert_eq!(get("d/empty"), Some(Entry::Directory));
        assert_eq!(
            get("link"),
            Some(Entry::Symlink {
                target: "d/a.txt".into()
            })
        );
        std::os::unix::fs::symlink("/etc/passwd", bottom.path().join("escape")).expect("ln");
        let mut again = Files::new();
        assert!(matches!(
            again.add_tree(&RelPath::root(), bottom.path()),
            Err(InputError::SymlinkOutside { .. })
        ));
    }
}
