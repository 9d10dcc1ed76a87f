//! Which of a provider's `inputs` covers a path, with the one pattern
//! language and combining rule the application selects them with
//! (`proofgraph_graph::pattern`): `repo:path` scopes a pattern to another
//! repository, `!pattern` removes what the entries before it select, and the
//! last entry that matches a path decides. A list whose first entry is a `!`
//! starts from every file of the provider's repository.

use proofgraph_graph::pattern::{self, Pattern, Sign};
use proofgraph_graph::preflight::split_scoped;

/// What covers a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cover<'i> {
    /// This entry, the last one matching it.
    Entry(&'i str),
    /// No entry matches it, and the list starts from every file of the repository
    /// (its first entry is a `!`).
    Base,
}

/// What among `inputs` selects `path` of repository `repo` for a provider whose
/// unscoped patterns apply to `home` (and whose files without `inputs` are
/// `home`'s), if anything does.
pub(crate) fn covering<'i>(
    inputs: &'i [String],
    home: &str,
    repo: &str,
    path: &str,
) -> Option<Cover<'i>> {
    let entries: Vec<(Sign, &str, Option<Pattern>)> = inputs
        .iter()
        .map(|input| {
            let (sign, entry) = pattern::split_sign(input);
            let (scope, text) = split_scoped(entry);
            (
                sign,
                input.as_str(),
                (scope.unwrap_or(home) == repo)
                    .then(|| Pattern::new(text))
                    .flatten(),
            )
        })
        .collect();
    let last = entries
        .iter()
        .rev()
        .find(|(_, _, p)| p.as_ref().is_some_and(|p| p.matches(path)));
    match last {
        Some((Sign::Include, input, _)) => Some(Cover::Entry(input)),
        Some((Sign::Exclude, _, _)) => None,
        None => {
            (pattern::starts_from_base(&entries, |e| e.0) && repo == home).then_some(Cover::Base)
        }
    }
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
            Some(Cover::Entry("src/**"))
        );
        assert_eq!(
            covering(&inputs, "web", "web", "package.json"),
            Some(Cover::Entry("package.json"))
        );
        assert_eq!(covering(&inputs, "web", "web", "scripts/test.sh"), None);
        assert_eq!(
            covering(&inputs, "web", "api", "scripts/test.sh"),
            Some(Cover::Entry("api:scripts"))
        );
        assert_eq!(covering(&inputs, "web", "api", "src/x"), None);
    }

    #[test]
    fn excludes_follow_the_last_match() {
        let inputs = vec![
            "src/**".to_owned(),
            "!src/gen/**".to_owned(),
            "src/gen/keep.ts".to_owned(),
        ];
        assert_eq!(covering(&inputs, "web", "web", "src/gen/x.ts"), None);
        assert_eq!(
            covering(&inputs, "web", "web", "src/gen/keep.ts"),
            Some(Cover::Entry("src/gen/keep.ts"))
        );
        assert_eq!(covering(&inputs, "web", "web", "docs/a.md"), None);
        // Only excludes: everything of the home repository but them.
        let inputs = vec!["!docs/**".to_owned(), "!api:x".to_owned()];
        assert_eq!(
            covering(&inputs, "web", "web", "src/a.ts"),
            Some(Cover::Base)
        );
        assert_eq!(covering(&inputs, "web", "web", "docs/a.md"), None);
        assert_eq!(covering(&inputs, "web", "api", "y"), None);
    }
}
