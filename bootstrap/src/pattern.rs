//! Which of a provider's `inputs` covers a path, with the one pattern
//! language the application matches them with
//! (`proofgraph_graph::pattern`); `repo:path` scopes a pattern to another
//! repository.

use proofgraph_graph::pattern::Pattern;
use proofgraph_graph::preflight::split_scoped;

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
