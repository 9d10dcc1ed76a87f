//! `inputs` patterns: which repository-relative paths a provider reads.
//!
//! One language for everything that matches `inputs` — the application's
//! input digests and the wiring bootstrap's coverage checks:
//!
//! - a path without glob characters selects that file, or everything below
//!   it as a directory (`src`, `package.json`; empty selects everything);
//! - `x/**` is `x` itself and everything below it, as Change Loop's Node.js
//!   runtime reads it (the literal `x`; `**` alone is everything);
//! - anything else is a glob over the whole relative path: `*` and `?` stay
//!   within one segment, `**` crosses any number of them.
//!
//! A leading `./` and a trailing `/` are ignored. Scoping (`repo:path`) is
//! split off before a pattern is compiled (`validate::split_scoped`).

use globset::{GlobBuilder, GlobMatcher};

/// A compiled `inputs` pattern.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// A literal path: the file itself, or everything below it as a directory.
    Literal(String),
    /// A glob (`src/**/*.ts`, `*.json`), matched against the whole relative
    /// path, with the literal directory prefix every match starts with (`src`).
    Glob(GlobMatcher, String),
}

impl Pattern {
    /// Compiles a pattern; `None` for an invalid glob.
    pub fn new(text: &str) -> Option<Self> {
        let text = text.trim_start_matches("./").trim_end_matches('/');
        let is_glob = |t: &str| t.contains(['*', '?', '[', '{']);
        if !is_glob(text) {
            return Some(Pattern::Literal(text.to_owned()));
        }
        // A literal is also cheaper than a regex.
        if text == "**" {
            return Some(Pattern::Literal(String::new()));
        }
        if let Some(dir) = text.strip_suffix("/**")
            && !is_glob(dir)
        {
            return Some(Pattern::Literal(dir.to_owned()));
        }
        let glob = GlobBuilder::new(text)
            .literal_separator(true)
            .build()
            .ok()?;
        let literal = &text[..text.find(['*', '?', '[', '{']).unwrap_or(text.len())];
        let prefix = literal.rfind('/').map_or("", |i| &literal[..i]).to_owned();
        Some(Pattern::Glob(glob.compile_matcher(), prefix))
    }

    /// The literal prefix every selected path starts with (possibly empty):
    /// a caller with sorted paths can skip straight to its range.
    pub fn literal_prefix(&self) -> &str {
        match self {
            Pattern::Literal(p) | Pattern::Glob(_, p) => p.as_str(),
        }
    }

    /// Whether a relative path is selected.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            Pattern::Literal(p) => {
                p.is_empty()
                    || path == p
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            }
            Pattern::Glob(g, _) => g.is_match(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_patterns_match_files_and_directories() {
        let p = Pattern::new("src").expect("valid");
        assert!(p.matches("src/a.rs"));
        assert!(p.matches("src"));
        assert!(!p.matches("srcs/a.rs"));
        let p = Pattern::new("./package.json").expect("valid");
        assert!(p.matches("package.json"));
        assert!(!p.matches("package.json.bak"));
    }

    #[test]
    fn globs_match_whole_paths() {
        let p = Pattern::new("src/**").expect("valid");
        assert!(p.matches("src/a/b.rs"));
        assert!(p.matches("src"), "`x/**` matches `x` itself");
        assert!(!p.matches("srcs/a.rs"));
        assert!(!p.matches("test/src/a.rs"));
        let p = Pattern::new("**").expect("valid");
        assert!(p.matches("a") && p.matches("a/b/c.rs"));
        let p = Pattern::new("src/*").expect("valid");
        assert!(p.matches("src/a.rs"));
        assert!(!p.matches("src/a/b.rs"), "`x/*` is direct children only");
        let p = Pattern::new("*.json").expect("valid");
        assert!(p.matches("package.json"));
        assert!(!p.matches("a/package.json"));
        let p = Pattern::new("src/**/*.ts").expect("valid");
        assert!(p.matches("src/a/b.ts"));
        assert!(p.matches("src/b.ts"));
        assert!(!p.matches("src/b.js"));
    }
}
