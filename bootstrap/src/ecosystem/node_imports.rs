//! Whether a command that runs Node.js needs the repository's `node_modules`: a package
//! manager, a binary under `node_modules/` or a script node cannot be read for does; `node`
//! itself (`node --test`, `node file.js`) needs it only when what it runs — the test files
//! its `--test` finds or names, the file it runs, and every file they import by a relative
//! path, read as text — imports a package `package.json` declares, or it preloads one
//! (`--import`, `--require`). Node's built-in modules (`node:test`, `assert`) need nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Package managers and launchers: running one reads `node_modules`.
const MANAGERS: [&str; 6] = ["npm", "npx", "pnpm", "yarn", "bun", "corepack"];

/// Node's flags that load a module before the entry point.
const PRELOADS: [&str; 5] = [
    "--import",
    "--require",
    "-r",
    "--loader",
    "--experimental-loader",
];

/// How many files the import walk reads at most; past it, the answer is "needs".
const MAX_FILES: usize = 5_000;

/// Whether `argv` needs the `node_modules` of the repository at `dir`, whose tracked files
/// are `tracked` (`None`: unknown, then it does) and whose `package.json` declares `deps`.
pub(crate) fn needs_node_modules<V>(
    argv: &[String],
    dir: &Path,
    tracked: Option<&BTreeSet<String>>,
    deps: &BTreeMap<String, V>,
) -> bool {
    let Some(tracked) = tracked else {
        return true;
    };
    let Some(args) = node_args(argv) else {
        return true;
    };
    let declared = |specifier: &str| deps.contains_key(package_name(specifier));
    let mut entries: Vec<String> = Vec::new();
    let mut positional: Vec<&str> = Vec::new();
    let mut test = false;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let (flag, value) = word.split_once('=').unwrap_or((word, ""));
        if PRELOADS.contains(&flag) {
            let module = if value.is_empty() {
                words.next().map_or("", String::as_str)
            } else {
                value
            };
            if is_bare(module) && declared(module) {
                return true;
            }
            if !is_bare(module) {
                entries.push(relative(module));
            }
        } else if word == "--test" {
            test = true;
        } else if !word.starts_with('-') {
            positional.push(word);
            if !test {
                // `node file.js args…`: the file, then its own arguments.
                break;
            }
        }
    }
    if test {
        entries.extend(test_files(tracked, &positional));
    } else if let Some(file) = positional.first() {
        entries.push(relative(file));
    }
    imports_declared(dir, entries, &declared)
}

/// The words after `node` when `argv` runs node itself — directly, or as the program of
/// bootstrap's report wrapper (`sh -c '…' sh node …`); `None` when it runs anything else
/// that may read `node_modules` (a package manager, a local binary, a shell script naming
/// one).
fn node_args(argv: &[String]) -> Option<&[String]> {
    let mut rest = argv;
    if let [sh, c, script, _, tail @ ..] = rest
        && (sh == "sh" || sh == "bash")
        && c == "-c"
    {
        let words: Vec<&str> = script
            .split(|c: char| c.is_whitespace() || "&;|()\"'".contains(c))
            .collect();
        let launches = words
            .iter()
            .any(|w| MANAGERS.contains(w) || w.contains("node_modules/") || *w == "node");
        if launches {
            return None;
        }
        rest = tail;
    }
    match rest {
        [program, args @ ..] if program.rsplit('/').next() == Some("node") => Some(args),
        _ => None,
    }
}

/// Whether a module specifier names a package (`vitest`, `@scope/x/y`) rather than a
/// file (`./a.js`, `../`, `/abs`).
fn is_bare(specifier: &str) -> bool {
    !specifier.is_empty()
        && !specifier.starts_with('.')
        && !specifier.starts_with('/')
        && !specifier.starts_with("file:")
}

/// The package a bare specifier names: `@scope/name` or `name`, without a `node:` prefix
/// or a path inside the package.
fn package_name(specifier: &str) -> &str {
    let specifier = specifier.strip_prefix("node:").unwrap_or(specifier);
    let mut parts = specifier.splitn(3, '/');
    let first = parts.next().unwrap_or_default();
    if first.starts_with('@') {
        let len = first.len() + parts.next().map_or(0, |p| p.len() + 1);
        &specifier[..len]
    } else {
        first
    }
}

/// `word` as a path relative to the repository.
fn relative(word: &str) -> String {
    word.trim_start_matches("./").to_owned()
}

/// The files `node --test` runs: the ones `patterns` name (a file, a directory's files, a
/// glob's directory's files), or with none the default patterns (`*.test.js`,
/// `test-*.js`, `test/**`, … in `.js`, `.mjs`, `.cjs`), never under `node_modules/`.
fn test_files(tracked: &BTreeSet<String>, patterns: &[&str]) -> Vec<String> {
    let script = |path: &str| {
        !path.split('/').any(|c| c == "node_modules")
            && [".js", ".mjs", ".cjs"].iter().any(|e| path.ends_with(e))
    };
    if patterns.is_empty() {
        return tracked
            .iter()
            .filter(|path| script(path) && default_test_file(path))
            .cloned()
            .collect();
    }
    let mut out = Vec::new();
    for pattern in patterns {
        let pattern = relative(pattern);
        let literal = match pattern.find(['*', '?', '[', '{']) {
            Some(glob) => pattern[..glob].rsplit_once('/').map_or("", |(dir, _)| dir),
            None => pattern.as_str(),
        };
        let dir = format!("{}/", literal.trim_end_matches('/'));
        out.extend(
            tracked
                .iter()
                .filter(|path| {
                    (literal.is_empty() || **path == literal || path.starts_with(&dir))
                        && script(path)
                })
                .cloned(),
        );
    }
    out
}

/// Node's default test file patterns (Node 20+).
fn default_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    stem.ends_with(".test")
        || stem.ends_with("-test")
        || stem.ends_with("_test")
        || stem.starts_with("test-")
        || stem == "test"
        || path.starts_with("test/")
        || path.contains("/test/")
}

/// Whether a file reachable from `entries` through relative imports imports a package
/// `declared` says is one of the repository's dependencies.
fn imports_declared(dir: &Path, entries: Vec<String>, declared: &dyn Fn(&str) -> bool) -> bool {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue = entries;
    while let Some(rel) = queue.pop() {
        if !seen.insert(rel.clone()) {
            continue;
        }
        if seen.len() > MAX_FILES {
            return true;
        }
        let Ok(text) = fs_err::read_to_string(dir.join(&rel)) else {
            continue;
        };
        for specifier in specifiers(&text) {
            if is_bare(&specifier) {
                if declared(&specifier) {
                    return true;
                }
            } else if let Some(file) = resolve(dir, &rel, &specifier) {
                queue.push(file);
            }
        }
    }
    false
}

/// The module specifiers a JavaScript file names: `require('x')`, `import('x')`,
/// `import 'x'`, `import … from 'x'`, `export … from 'x'` — read as text, so one in a
/// comment or a string counts too (the safe side).
fn specifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for keyword in ["require(", "import(", "import ", "from "] {
        let mut from = 0;
        while let Some(found) = text[from..].find(keyword) {
            let at = from + found + keyword.len();
            from = at;
            let rest = text[at..].trim_start();
            let Some(quote) = rest.chars().next().filter(|c| "'\"`".contains(*c)) else {
                continue;
            };
            if let Some(end) = rest[1..].find(quote) {
                out.push(rest[1..1 + end].to_owned());
            }
        }
    }
    out
}

/// The repository file a relative `specifier` in file `from` loads, as node resolves it:
/// the path, with `.js`, `.mjs`, `.cjs` or `.json`, or a directory's `package.json` `main`
/// or `index.js`; `None` outside the repository or when nothing is there.
fn resolve(dir: &Path, from: &str, specifier: &str) -> Option<String> {
    let base = from.rsplit_once('/').map_or("", |(d, _)| d);
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in specifier.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    let path = parts.join("/");
    let file = |rel: &str| dir.join(rel).is_file().then(|| rel.to_owned());
    if !path.is_empty()
        && let Some(found) = ["", ".js", ".mjs", ".cjs", ".json"]
            .iter()
            .find_map(|ext| file(&format!("{path}{ext}")))
    {
        return Some(found);
    }
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let main = fs_err::read_to_string(dir.join(format!("{prefix}package.json")))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v["main"].as_str().map(relative));
    main.and_then(|m| {
        ["", ".js", "/index.js"]
            .iter()
            .find_map(|ext| file(&format!("{prefix}{m}{ext}")))
    })
    .or_else(|| file(&format!("{prefix}index.js")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proposal::{argv, in_report_dir};

    /// A repository holding `files`, all tracked; `typescript` and `@scope/lib` declared.
    fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, BTreeSet<String>) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (rel, text) in files {
            let path = dir.path().join(rel);
            fs_err::create_dir_all(path.parent().expect("a parent")).expect("directories");
            fs_err::write(path, text).expect("a file");
        }
        let tracked = files.iter().map(|(rel, _)| (*rel).to_owned()).collect();
        (dir, tracked)
    }

    fn deps() -> BTreeMap<String, ()> {
        [("typescript".to_owned(), ()), ("@scope/lib".to_owned(), ())].into()
    }

    fn needs(argv_words: &[&str], files: &[(&str, &str)]) -> bool {
        needs_argv(&argv(argv_words), files)
    }

    fn needs_argv(argv: &[String], files: &[(&str, &str)]) -> bool {
        let (dir, tracked) = repo(files);
        needs_node_modules(argv, dir.path(), Some(&tracked), &deps())
    }

    #[test]
    fn node_test_over_tests_that_import_only_the_package_and_builtins_needs_nothing() {
        let files = [
            ("package.json", r#"{"name": "x", "main": "./index.js"}"#),
            (
                "index.js",
                "const fs = require('node:fs');\nexports.x = 1;\n",
            ),
            (
                "tests/x.test.js",
                "const test = require('node:test');\nconst assert = require('assert');\nconst x = require('../');\n",
            ),
            ("eslint.config.js", "import ts from 'typescript';\n"),
        ];
        assert!(!needs(&["node", "--test"], &files));
        // As a proposal runs it: inside the shell that creates the report's directory.
        let wrapped = in_report_dir(
            argv(&["node", "--test-reporter=tap", "--test"]),
            "test-results/node-test.tap",
            false,
        );
        assert!(!needs_argv(&wrapped, &files));
    }

    #[test]
    fn a_declared_package_reached_through_relative_imports_needs_node_modules() {
        let files = [
            ("lib/a.mjs", "export { b } from './b.mjs';\n"),
            (
                "lib/b.mjs",
                "import { lib } from \"@scope/lib/deep/path\";\n",
            ),
            ("test/a.mjs", "import { b } from '../lib/a.mjs';\n"),
        ];
        assert!(needs(&["node", "--test"], &files));
        // Named on the command line: only those files count.
        assert!(!needs(&["node", "--test", "other/"], &files));
        assert!(needs(&["node", "--test", "test/"], &files));
        assert!(needs(&["node", "--test", "test/*.mjs"], &files));
        // `node file.js`: that file.
        assert!(needs(&["node", "lib/a.mjs", "--flag"], &files));
    }

    #[test]
    fn a_preloaded_package_a_package_manager_or_unknown_files_need_node_modules() {
        let files = [("a.test.js", "require('node:test');\n")];
        assert!(!needs(&["node", "--test"], &files));
        assert!(needs(&["node", "--import", "typescript", "--test"], &files));
        assert!(needs(&["node", "--require=typescript", "--test"], &files));
        // A package nobody declared is not a reason (it fails either way).
        assert!(!needs(&["node", "--import", "tsx", "--test"], &files));
        for other in [
            &["npm", "test"][..],
            &["npx", "vitest"],
            &["node_modules/.bin/jest"],
            &["sh", "-c", "npm run build && node --test", "sh"],
        ] {
            assert!(needs(other, &files), "{other:?}");
        }
        let (dir, _) = repo(&files);
        assert!(needs_node_modules(
            &argv(&["node", "--test"]),
            dir.path(),
            None,
            &deps()
        ));
    }

    #[test]
    fn package_names_and_specifiers_are_read_as_node_reads_them() {
        assert_eq!(package_name("@scope/lib/deep"), "@scope/lib");
        assert_eq!(package_name("lodash/fp"), "lodash");
        assert_eq!(package_name("node:test"), "test");
        assert!(is_bare("typescript") && !is_bare("./a") && !is_bare("../") && !is_bare("/x"));
        assert_eq!(
            specifiers(
                "import a from 'a';\nconst b = require( \"b\" );\nawait import(`c`);\nimport 'd';\nexport * from './e.js';\n"
            ),
            ["b", "c", "d", "a", "./e.js"]
        );
    }
}
