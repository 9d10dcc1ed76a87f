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
//! split off before a pattern is compiled (`validate::split_scoped`), and the
//! sign before that ([`split_sign`]): `!docs/**` removes what `docs/**` matches.
//! `\!name` is the path `!name`.
//!
//! ## How a list combines (gitignore's rule)
//!
//! A provider's `inputs` are applied in order: a plain entry adds the files it
//! matches, a `!` entry removes the files it matches from what the entries before
//! it selected, and a later plain entry adds back. So a file is selected when the
//! last entry that matches it is a plain one ([`decides`]). A list whose first
//! entry is a `!` starts from what the provider reads without `inputs` (every
//! file of its repositories): `["!docs/**"]` is everything but `docs/`. A file no
//! entry matches is selected only then, and only when that base holds it.
//! [`apply`] is the same rule over a sorted list of paths at once, entry by entry,
//! counting what each `!` entry keeps out (one that keeps nothing out is a mistake:
//! a typo, a directory that is gone, or a `!` before the entry that adds its files).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use globset::{GlobBuilder, GlobMatcher};

/// Whether an `inputs` entry adds the files it matches or removes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// A plain entry: its files are selected.
    Include,
    /// A `!` entry: its files are removed from what the entries before it selected.
    Exclude,
}

/// Splits the sign off an `inputs` entry: `!docs/**` is `(Exclude, "docs/**")`;
/// anything else, `\!name` (the path `!name`) included, is `(Include, entry)`.
pub fn split_sign(entry: &str) -> (Sign, &str) {
    match entry.strip_prefix('!') {
        Some(rest) => (Sign::Exclude, rest),
        None => (Sign::Include, entry),
    }
}

/// A path as written after its sign and scope, with the escape of a leading `!` undone:
/// `\!name` is the path `!name` (a leading `!` is the exclude sign).
pub fn unescaped(text: &str) -> &str {
    text.strip_prefix('\\')
        .filter(|t| t.starts_with('!'))
        .unwrap_or(text)
}

/// The sign of the last entry that matches `path`, if any does: the rule for one
/// path. A caller selects the path on `Some(Include)`, and on `None` when the list
/// starts from a base (its first entry excludes) that holds the path.
pub fn decides(entries: &[(Sign, &Pattern)], path: &str) -> Option<Sign> {
    entries
        .iter()
        .rev()
        .find(|(_, pattern)| pattern.matches(path))
        .map(|(sign, _)| *sign)
}

/// Whether a list of entries starts from the provider's base (what it reads without
/// `inputs`): when it has no entries, or its first entry excludes.
pub fn starts_from_base<T>(entries: &[T], sign: impl Fn(&T) -> Sign) -> bool {
    entries.first().is_none_or(|e| sign(e) == Sign::Exclude)
}

/// What [`apply`] selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The indices of the selected paths.
    pub selected: BTreeSet<usize>,
    /// For each entry, how many paths it keeps out: paths selected before it that it
    /// removed and no later entry added back (always 0 for an include). A `!` entry that
    /// keeps nothing out excludes nothing.
    pub kept_out: Vec<usize>,
}

/// Applies `entries` in order to `sorted` paths (sorted by their bytes), starting
/// from `base` (indices; pass none unless the list starts from a base): an include
/// adds the paths it matches, an exclude removes them. Equal, path by path, to
/// [`decides`]; each entry looks only at the range of paths sharing its literal
/// prefix, so a narrow pattern over a large repository costs a binary search.
pub fn apply<T>(
    entries: &[(Sign, &Pattern)],
    sorted: &[T],
    path: impl Fn(&T) -> &str,
    base: impl IntoIterator<Item = usize>,
) -> Selection {
    let mut selected: BTreeSet<usize> = base.into_iter().collect();
    // Which entry removed each path that is out now.
    let mut removed_by: BTreeMap<usize, usize> = BTreeMap::new();
    for (k, (sign, pattern)) in entries.iter().enumerate() {
        let range = pattern.range(sorted, &path);
        let matching = range.filter(|i| pattern.matches(path(&sorted[*i])));
        match sign {
            Sign::Include => {
                for i in matching {
                    selected.insert(i);
                    removed_by.remove(&i);
                }
            }
            Sign::Exclude => {
                for i in matching {
                    if selected.remove(&i) {
                        removed_by.insert(i, k);
                    }
                }
            }
        }
    }
    let mut kept_out = vec![0; entries.len()];
    for k in removed_by.into_values() {
        kept_out[k] += 1;
    }
    Selection { selected, kept_out }
}

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
        let text = unescaped(text);
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

    /// The range of `sorted` paths (sorted by their bytes) that share this pattern's
    /// literal prefix: every path it can select lies in it.
    pub fn range<T>(&self, sorted: &[T], path: impl Fn(&T) -> &str) -> Range<usize> {
        let prefix = self.literal_prefix();
        let start = sorted.partition_point(|f| path(f) < prefix);
        let len = sorted[start..]
            .iter()
            .take_while(|f| path(f).starts_with(prefix))
            .count();
        start..start + len
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

    /// The rule, spelled out: each row is a list, a path, whether the provider's base
    /// holds the path, and whether the list selects it.
    #[test]
    fn the_last_matching_entry_decides() {
        let rows: &[(&[&str], &str, bool, bool)] = &[
            // Plain lists are unions.
            (&["src/**", "package.json"], "src/a.rs", true, true),
            (&["src/**", "package.json"], "docs/a.md", true, false),
            // An exclude removes what came before it.
            (&["src/**", "!src/gen/**"], "src/gen/x.rs", true, false),
            (&["src/**", "!src/gen/**"], "src/a.rs", true, true),
            // A later plain entry adds back.
            (
                &["src/**", "!src/gen/**", "src/gen/keep.rs"],
                "src/gen/keep.rs",
                true,
                true,
            ),
            (
                &["src/**", "!src/gen/**", "src/gen/keep.rs"],
                "src/gen/x.rs",
                true,
                false,
            ),
            // Only excludes: everything the provider reads without `inputs`, but these.
            (&["!docs/**", "!README.md"], "src/a.rs", true, true),
            (&["!docs/**", "!README.md"], "docs/guide.md", true, false),
            (&["!docs/**", "!README.md"], "README.md", true, false),
            (&["!docs/**", "!README.md"], "docs2/x", true, true),
            // ... and nothing the base does not hold.
            (&["!docs/**"], "src/a.rs", false, false),
            // A list that starts with a plain entry does not start from the base.
            (&["src/**", "!docs/**"], "lib/a.rs", true, false),
            // Starting from the base, a plain entry re-adds inside an excluded directory.
            (&["!docs/**", "docs/api.md"], "docs/api.md", true, true),
            (&["!docs/**", "docs/api.md"], "docs/other.md", true, false),
            // Globs exclude by name anywhere.
            (&["!**/*.md"], "src/notes.md", true, false),
            (&["!**/*.md"], "src/notes.rs", true, true),
            // `\!` is a literal `!` in a name.
            (&["\\!odd"], "!odd", true, true),
            (&["\\!odd"], "odd", true, false),
        ];
        for (list, path, in_base, want) in rows {
            let compiled: Vec<(Sign, Pattern)> = list
                .iter()
                .map(|e| {
                    let (sign, text) = split_sign(e);
                    (sign, Pattern::new(text).expect("valid"))
                })
                .collect();
            let entries: Vec<(Sign, &Pattern)> = compiled.iter().map(|(s, p)| (*s, p)).collect();
            let from_base = starts_from_base(&entries, |e| e.0);
            let got = match decides(&entries, path) {
                Some(sign) => sign == Sign::Include,
                None => from_base && *in_base,
            };
            assert_eq!(got, *want, "{list:?} on {path} (base holds it: {in_base})");
            // `apply` over this one path agrees.
            let base = (from_base && *in_base).then_some(0);
            let applied = apply(&entries, &[*path], |p| p, base);
            assert_eq!(
                applied.selected.contains(&0),
                *want,
                "apply: {list:?} on {path}"
            );
        }
    }

    #[test]
    fn an_exclude_counts_what_it_keeps_out() {
        let src = Pattern::new("src/**").expect("valid");
        let gen_dir = Pattern::new("src/gen").expect("valid");
        let docs = Pattern::new("docs/**").expect("valid");
        let paths = ["docs/a.md", "src/a.rs", "src/gen/b.rs", "src/gen/c.rs"];
        let entries = [
            (Sign::Include, &src),
            (Sign::Exclude, &gen_dir),
            (Sign::Exclude, &docs),
        ];
        let s = apply(&entries, &paths, |p| p, []);
        assert_eq!(s.selected, BTreeSet::from([1]));
        assert_eq!(
            s.kept_out,
            [0, 2, 0],
            "`!docs/**` keeps out nothing `src/**` took"
        );
        // From the base, the same `!docs/**` keeps one out.
        let s = apply(&entries[2..], &paths, |p| p, 0..paths.len());
        assert_eq!(s.selected, BTreeSet::from([1, 2, 3]));
        assert_eq!(s.kept_out, [1]);
        // An exclude whose files a later entry adds back keeps nothing out; nor does one
        // that repeats an earlier exclude.
        let entries = [
            (Sign::Exclude, &gen_dir),
            (Sign::Include, &src),
            (Sign::Exclude, &docs),
            (Sign::Exclude, &docs),
        ];
        let s = apply(&entries, &paths, |p| p, 0..paths.len());
        assert_eq!(s.selected, BTreeSet::from([1, 2, 3]));
        assert_eq!(s.kept_out, [0, 0, 1, 0]);
    }

    mod property {
        use proptest::prelude::*;

        use super::super::*;

        const PATTERNS: [&str; 10] = [
            "src",
            "src/**",
            "src/*",
            "src/a",
            "docs/**",
            "**/*.md",
            "*.md",
            "src/**/*.md",
            "**",
            "s*",
        ];
        const PATHS: [&str; 10] = [
            "README.md",
            "docs/a.md",
            "docs/b/c.md",
            "s",
            "src",
            "src/a",
            "src/a/b.md",
            "src/b.md",
            "src/c.rs",
            "srcs/d.rs",
        ];

        proptest! {
            #![proptest_config(crate::testing::beside_source(proptest::test_runner::Config::default()))]
            /// Entry by entry over every path at once is the last-match rule path by path,
            /// and each exclude's count is what it keeps out of what the entries before it took.
            #[test]
            fn apply_is_the_last_match_rule(
                list in proptest::collection::vec((any::<bool>(), 0..PATTERNS.len()), 0..6),
                base in proptest::collection::vec(any::<bool>(), PATHS.len()),
            ) {
                let compiled: Vec<(Sign, Pattern)> = list
                    .iter()
                    .map(|(exclude, k)| {
                        let sign = if *exclude { Sign::Exclude } else { Sign::Include };
                        (sign, Pattern::new(PATTERNS[*k]).expect("valid"))
                    })
                    .collect();
                let entries: Vec<(Sign, &Pattern)> = compiled.iter().map(|(s, p)| (*s, p)).collect();
                let from_base = starts_from_base(&entries, |e| e.0);
                let in_base = |i: usize| from_base && base[i];
                let s = apply(&entries, &PATHS, |p| p, (0..PATHS.len()).filter(|i| in_base(*i)));
                for (i, path) in PATHS.iter().enumerate() {
                    let want = match decides(&entries, path) {
                        Some(sign) => sign == Sign::Include,
                        None => in_base(i),
                    };
                    prop_assert_eq!(s.selected.contains(&i), want, "{}", path);
                }
                // An exclude keeps out what was selected before it, matches it, and no
                // later include adds back.
                for (k, (sign, pattern)) in entries.iter().enumerate() {
                    let before = apply(&entries[..k], &PATHS, |p| p, (0..PATHS.len()).filter(|i| in_base(*i)));
                    let added_back = |i: usize| {
                        entries[k + 1..]
                            .iter()
                            .any(|(s, p)| *s == Sign::Include && p.matches(PATHS[i]))
                    };
                    let want = match sign {
                        Sign::Include => 0,
                        Sign::Exclude => before
                            .selected
                            .iter()
                            .filter(|i| pattern.matches(PATHS[**i]) && !added_back(**i))
                            .count(),
                    };
                    prop_assert_eq!(s.kept_out[k], want, "entry {}", k);
                }
            }
        }
    }
}
