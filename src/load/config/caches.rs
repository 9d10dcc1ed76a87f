//! Declared build and download caches (`caches:` of a repository in `proofgraph.yaml`).
//!
//! A declared cache persists across runs and is the one directory of the host a job may
//! write besides its own layer. Only tools whose cache is keyed by the *content* of what
//! they build or fetch may have one: such a cache can be cold or warm, never stale, so a
//! warm run proves what a cold one would. A cache judged by modification times (cargo's
//! `target/`, make) is refused, naming the
//! content-addressed alternative (for cargo, `cargo-build`: its build directory kept by
//! proofgraph, which sets every file's time from its content): after a file's content changes with its time put back
//! (`rsync -t`, `tar`, `cp -p`), such a tool rebuilds nothing and a broken test passes.
//!
//! The kinds are a closed list: proofgraph sets the variable that points each tool at its
//! cache, and nothing of the cache's content enters a fingerprint or leaves the machine.

/// A cache a repository may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CacheKind {
    /// Go's build cache (`GOCACHE`); its test-result cache is disabled (`-count=1`).
    GoBuild,
    /// Go's module download cache (`GOMODCACHE`), checked against `go.sum`.
    GoMod,
    /// `sccache` for Rust (`SCCACHE_DIR`, `RUSTC_WRAPPER=sccache`, incremental builds off).
    Sccache,
    /// cargo's build directory (`CARGO_TARGET_DIR`), kept across runs: cargo judges it by
    /// modification times, which proofgraph itself gives every file of the world so that
    /// they change exactly when content does (`run/stamps.rs`). One directory per
    /// environment and set of layers a job sees.
    CargoBuild,
    /// `ccache` for C and C++ (`CCACHE_DIR`).
    Ccache,
    /// npm's download cache (`npm_config_cache`), checked against the lockfile's integrity.
    Npm,
    /// pip's download and wheel cache (`PIP_CACHE_DIR`).
    Pip,
}

impl CacheKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [CacheKind; 7] = [
        CacheKind::GoBuild,
        CacheKind::GoMod,
        CacheKind::Sccache,
        CacheKind::CargoBuild,
        CacheKind::Ccache,
        CacheKind::Npm,
        CacheKind::Pip,
    ];

    /// The name written in `caches:`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheKind::GoBuild => "go-build",
            CacheKind::GoMod => "go-mod",
            CacheKind::Sccache => "sccache",
            CacheKind::CargoBuild => "cargo-build",
            CacheKind::Ccache => "ccache",
            CacheKind::Npm => "npm",
            CacheKind::Pip => "pip",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<CacheKind> {
        CacheKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The variables that point the tool at its cache in `dir`, given what the job's
    /// environment already holds (`existing`: a variable's value before the cache's).
    /// Where the job sets a variable a cache needs, the cache's setting is added to it
    /// (`GOFLAGS`) or the job's kept (`RUSTC_WRAPPER` naming another wrapper is its
    /// business, and a conflict over the cache's own directory is refused at validation:
    /// [`CacheKind::variables`]).
    pub fn env(
        self,
        dir: &str,
        existing: impl Fn(&str) -> Option<String>,
    ) -> Vec<(String, String)> {
        let set = |name: &str, value: &str| (name.to_owned(), value.to_owned());
        match self {
            CacheKind::GoBuild => {
                // The test-result cache lives in GOCACHE too: a replayed result is no run.
                let flags = match existing("GOFLAGS") {
                    Some(flags) if flags.split_whitespace().any(|f| f.starts_with("-count=")) => {
                        flags
                    }
                    Some(flags) if !flags.trim().is_empty() => format!("{flags} -count=1"),
                    _ => "-count=1".to_owned(),
                };
                vec![set("GOCACHE", dir), set("GOFLAGS", &flags)]
            }
            CacheKind::GoMod => vec![set("GOMODCACHE", dir)],
            CacheKind::Sccache => {
                let mut out = vec![
                    set("SCCACHE_DIR", dir),
                    // sccache caches no incremental compilation.
                    set("CARGO_INCREMENTAL", "0"),
                ];
                if existing("RUSTC_WRAPPER").is_none() {
                    out.push(set("RUSTC_WRAPPER", "sccache"));
                }
                out
            }
            CacheKind::CargoBuild => vec![set("CARGO_TARGET_DIR", dir)],
            CacheKind::Ccache => vec![set("CCACHE_DIR", dir)],
            CacheKind::Npm => vec![set("npm_config_cache", dir)],
            CacheKind::Pip => vec![set("PIP_CACHE_DIR", dir)],
        }
    }

    /// Whether it holds only what is downloaded (checked against a lockfile's or a
    /// registry's digests), never what the project's own code built: the caches a setup
    /// gets, so that no setup, cached or not, reads a product of the project from them.
    pub fn downloads_only(self) -> bool {
        matches!(self, CacheKind::GoMod | CacheKind::Npm | CacheKind::Pip)
    }

    /// The variables naming the cache's own directory: a provider's `env` may not set
    /// them (the declared cache does).
    pub fn variables(self) -> &'static [&'static str] {
        match self {
            CacheKind::GoBuild => &["GOCACHE"],
            CacheKind::GoMod => &["GOMODCACHE"],
            CacheKind::Sccache => &["SCCACHE_DIR"],
            CacheKind::CargoBuild => &MTIME_BUILD_DIR_VARIABLES,
            CacheKind::Ccache => &["CCACHE_DIR"],
            CacheKind::Npm => &["npm_config_cache", "NPM_CONFIG_CACHE"],
            CacheKind::Pip => &["PIP_CACHE_DIR"],
        }
    }
}

/// Why a cache named `name` is refused because its tool judges freshness by modification
/// times, and what to declare instead; `None` when it is not one of those.
pub fn judged_by_mtime(name: &str) -> Option<(&'static str, &'static str)> {
    let last = name
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(name);
    match last {
        "target" | "cargo-target" | "cargo" => Some((
            "cargo decides what to rebuild from modification times",
            "Declare `caches: [cargo-build]` (proofgraph keeps cargo's build directory and gives every file a modification time that changes exactly when its content does) or `caches: [sccache]`, and keep `target/` in the sandbox.",
        )),
        "uv" => Some((
            "uv keys a build of a local package by its files' modification times (`cache-keys`), so a kept uv cache can install an old build of the project",
            "Leave uv's cache in each run (the default), or declare `pip` for downloads installed with pip.",
        )),
        "make" => Some((
            "make decides what to rebuild from modification times",
            "Declare a cache keyed by content instead (`ccache` for C and C++, `sccache` for Rust, `go-build` for Go) and let the build directory start empty in each sandbox.",
        )),
        _ => None,
    }
}

/// Whether a build-directory variable (`CARGO_TARGET_DIR`, `CARGO_BUILD_TARGET_DIR`) with
/// this value points outside the job's repository, where it would outlive the run: an
/// absolute path, one below `~` or a variable, or one that climbs out with `..`.
pub fn outside_sandbox(value: &str) -> bool {
    let path = std::path::Path::new(value);
    if path.is_absolute() || value.starts_with('~') || value.starts_with('$') {
        return true;
    }
    let mut depth: i64 = 0;
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// The variables that name a build directory judged by modification times.
pub const MTIME_BUILD_DIR_VARIABLES: [&str; 2] = ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_back_from_its_name() {
        for kind in CacheKind::ALL {
            assert_eq!(CacheKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(CacheKind::parse("go"), None);
        assert_eq!(CacheKind::parse("target"), None);
    }

    #[test]
    fn go_build_disables_the_test_result_cache_whatever_goflags_holds() {
        let env = |existing: Option<&str>| {
            CacheKind::GoBuild.env("/c", |name| {
                (name == "GOFLAGS")
                    .then(|| existing.map(str::to_owned))
                    .flatten()
            })
        };
        let flags = |e: Vec<(String, String)>| {
            e.into_iter()
                .find(|(k, _)| k == "GOFLAGS")
                .map(|(_, v)| v)
                .unwrap_or_default()
        };
        assert_eq!(flags(env(None)), "-count=1");
        assert_eq!(flags(env(Some("-mod=vendor"))), "-mod=vendor -count=1");
        assert_eq!(flags(env(Some("   "))), "-count=1");
        // A count the provider chose (any count runs the tests: only the default replays).
        assert_eq!(flags(env(Some("-count=3"))), "-count=3");
        assert!(env(None).contains(&("GOCACHE".to_owned(), "/c".to_owned())));
    }

    #[test]
    fn sccache_keeps_a_wrapper_the_provider_chose() {
        let ours = CacheKind::Sccache.env("/c", |_| None);
        assert!(ours.contains(&("RUSTC_WRAPPER".to_owned(), "sccache".to_owned())));
        assert!(ours.contains(&("CARGO_INCREMENTAL".to_owned(), "0".to_owned())));
        let theirs = CacheKind::Sccache.env("/c", |n| {
            (n == "RUSTC_WRAPPER").then(|| "/opt/sccache".to_owned())
        });
        assert!(!theirs.iter().any(|(k, _)| k == "RUSTC_WRAPPER"));
    }

    #[test]
    fn caches_judged_by_modification_times_are_named() {
        for name in ["target", "cargo-target", "crates/app/target/", "make", "uv"] {
            assert!(judged_by_mtime(name).is_some(), "{name}");
        }
        for name in [
            "node_modules",
            ".venv",
            "go-build",
            "sccache",
            "targets",
            "build",
        ] {
            assert!(judged_by_mtime(name).is_none(), "{name}");
        }
    }

    #[test]
    fn a_build_directory_outside_the_repository_is_told_apart() {
        for value in [
            "/home/u/.cache/t",
            "~/.cache/t",
            "$HOME/t",
            "../t",
            "a/../../t",
        ] {
            assert!(outside_sandbox(value), "{value}");
        }
        for value in ["target", "build/target", "a/../target", "./t"] {
            assert!(!outside_sandbox(value), "{value}");
        }
    }
}
