//! `inputs` patterns, matched the way the application matches them: a
//! pattern without glob characters selects that path or everything below
//! it; anything else is a glob over the whole repository-relative path
//! (`*` stays within one segment, `**` crosses them). `repo:path` scopes a
//! pattern to another repository.

use globset::{GlobBuilder, GlobMatcher};
use proofgraph_graph::preflight::split_scoped;

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// A literal path: the file itself, or everything below it.
    Literal(String),
    /// A glob over the whole relative path.
    Glob(GlobMatcher),
}

impl Pattern {
    /// Compiles a pattern; `None` for an invalid glob.
    pub(crate) fn new(text: &str) -> Option<Self> {
        let text = text.trim_start_matches("./").trim_end_matches('/');
        if !text.contains(['*', '?', '[', '{']) {
            return Some(Pattern::Literal(text.to_owned()));
        }
        let glob = GlobBuilder::new(text)
            .literal_separator(true)
            .build()
            .ok()?;
        Some(Pattern::Glob(glob.compile_matcher()))
    }

    /// Whether a repository-relative path is selected.
    pub(crate) fn matches(&self, path: &str) -> bool {
        match self {
            Pattern::Literal(p) => {
                p.is_empty()
                    || path == p
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            }
            Pattern::Glob(g) => g.is_match(path),
        }
    }
}

/// The input among `inputs` that selects `path` of repository `repo` for a
/// provider whose unscoped patterns apply to `home`, if one does.
pub(crate) fn covering<'i>(
    inputs: &'i [String],
    home: &str,
    repo: &str,
    path: &str,
) -> Option<&'i str> {
    inputs.iter().map(String::as_str).find(|input| {
        let (scope, text) = split_scoped(input);
        scope.unwrap_or(home) == repo && Pattern::new(text).is_some_and(|p| p.matches(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_glob_patterns() {
        let inputs = vec![
            "src/**".to_owned(),
            "package.json".to_owned(),
            "api:scripts".to_owned(),
        ];
        assert_eq!(
            covering(&inputs, "web", "web", "src/a/b.ts"),
            Some("src/**")
        );
        assert_eq!(
            covering(&inputs, "web", "web", "package.json"),
            Some("package.json")
        );
        assert_eq!(covering(&inputs, "web", "web", "scripts/test.sh"), None);
        assert_eq!(
            covering(&inputs, "web", "api", "scripts/test.sh"),
            Some("api:scripts")
        );
        assert_eq!(covering(&inputs, "web", "api", "src/x"), None);
    }
}
