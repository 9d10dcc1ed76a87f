//! `go.mod`: `go test -json -count=1 ./...` for `test`, `go vet ./...` as an
//! alternative for `static-analysis`.
//!
//! `go test -json` prints test2json events on standard output and has no
//! flag to write them to a file, so the argv is the same fixed shell
//! wrapper as for cargo: `sh -c 'mkdir -p test-results && exec "$@" >
//! test-results/go-test.json' sh go test -json -count=1 ./...` — the go argv
//! stays explicit. The count is the number of tests (and subtests) that ran.
//!
//! `-count=1` turns go test's test cache off: without it a package whose
//! inputs go has seen pass is not run but replayed (`ok  pkg (cached)`), and
//! the judge never takes a replay for a pass — the run would be
//! inconclusive.

use std::path::Path;

use serde_json::Value;

use crate::model::Confidence;
use crate::proposal::{Proposal, argv, in_report_dir, report_path};

/// `go test` compiles first: ten minutes.
const TIMEOUT_MS: u64 = 600_000;

/// What `go.mod` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoFacts {
    /// The module path.
    pub(crate) module: Option<String>,
    /// Whether `go.sum` exists.
    pub(crate) sum: bool,
    /// Whether a `go.work` sits beside it.
    pub(crate) work: bool,
    /// The modules it requires that `go` downloads (not replaced by a local directory).
    pub(crate) downloads: Vec<String>,
    /// The top-level `func TestXxx(t *testing.T)` its `_test.go` files declare.
    pub(crate) tests: usize,
}

/// The top-level test functions of the `_test.go` files below `dir` (this module's).
fn test_functions(dir: &Path) -> usize {
    super::source_files(dir, "_test.go", Some("go.mod"))
        .iter()
        .filter_map(|f| fs_err::read_to_string(f).ok())
        .map(|text| {
            text.lines()
                .filter(|l| {
                    l.strip_prefix("func Test").is_some_and(|rest| {
                        !rest.starts_with(|c: char| c.is_lowercase())
                            && rest.contains("*testing.T)")
                    })
                })
                .count()
        })
        .sum()
}

/// The modules `go.mod`'s `require` directives name (one per line, or in a block), less
/// those a `replace` directive points at a local directory.
fn downloads(text: &str) -> Vec<String> {
    let mut required = Vec::new();
    let mut local = Vec::new();
    let mut block: Option<&str> = None;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        if let Some(kind) = block {
            if line == ")" {
                block = None;
            } else if let Some(first) = line.split_whitespace().next() {
                match kind {
                    "require" => required.push(first.to_owned()),
                    _ => replace_line(line, &mut local),
                }
            }
            continue;
        }
        for kind in ["require", "replace"] {
            if let Some(rest) = line.strip_prefix(kind)
                && rest.starts_with(char::is_whitespace)
            {
                let rest = rest.trim();
                if rest == "(" {
                    block = Some(kind);
                } else if kind == "require" {
                    required.extend(rest.split_whitespace().next().map(str::to_owned));
                } else {
                    replace_line(rest, &mut local);
                }
            }
        }
    }
    required.retain(|m| !local.contains(m));
    required.sort();
    required.dedup();
    required
}

/// A `replace` line (`old [v] => new [v]`): `old` when `new` is a local directory.
fn replace_line(line: &str, local: &mut Vec<String>) {
    if let Some((old, new)) = line.split_once("=>") {
        let new = new.trim();
        if new.starts_with("./") || new.starts_with("../") || new.starts_with('/') {
            local.extend(old.split_whitespace().next().map(str::to_owned));
        }
    }
}

impl GoFacts {
    /// Reads `go.mod` in `dir`.
    pub(crate) fn read(dir: &Path, shown: &str, warnings: &mut Vec<String>) -> Option<Self> {
        let path = dir.join("go.mod");
        if !path.is_file() {
            return None;
        }
        let text = match fs_err::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                warnings.push(format!("`{shown}go.mod` could not be read ({e})"));
                return None;
            }
        };
        let module = text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("module")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .map(|rest| rest.trim().trim_matches('"').to_owned())
        });
        if module.is_none() {
            warnings.push(format!("`{shown}go.mod` has no `module` line"));
        }
        Some(Self {
            module,
            sum: dir.join("go.sum").is_file(),
            work: dir.join("go.work").is_file(),
            downloads: downloads(&text),
            tests: test_functions(dir),
        })
    }

    fn fact(&self) -> String {
        match &self.module {
            Some(m) => format!("go.mod declares module `{m}`"),
            None => "go.mod exists".to_owned(),
        }
    }

    /// Proposals for `test`.
    pub(crate) fn test(&self) -> Vec<Proposal> {
        let report = report_path("go-test.json");
        let mut p = Proposal::new(
            Confidence::High,
            "test-discovery",
            in_report_dir(
                argv(&["go", "test", "-json", "-count=1", "./..."]),
                &report,
                true,
            ),
            "go test -json",
        )
        .report(&report, "go-test-json")
        .field("timeoutMs", Value::from(TIMEOUT_MS))
        .because(self.fact())
        .because(format!(
            "runs `go test -json -count=1 ./...` with standard output redirected to `{report}`: test2json events, one per test and subtest"
        ))
        .because(
            "`-count=1` runs every test: go test's test cache would replay a package it has seen pass, and a replay is not a run"
                .to_owned(),
        )
        .minimum_from(self.tests, "top-level `Test` functions in its `_test.go` files");
        if self.work {
            p.evidence
                .push("go.work exists: `./...` covers this module only".to_owned());
        }
        vec![p]
    }

    /// Proposals for `static-analysis`.
    pub(crate) fn static_analysis(&self) -> Vec<Proposal> {
        vec![
            Proposal::new(
                Confidence::Alternative,
                "command",
                argv(&["go", "vet", "./..."]),
                "go vet",
            )
            .field("timeoutMs", Value::from(TIMEOUT_MS))
            .because(self.fact())
            .because("go vet; only the exit code is read".to_owned()),
        ]
    }
}

#[cfg(test)]
mod download_tests {
    use super::{downloads, test_functions};

    #[test]
    fn top_level_test_functions_of_this_module_are_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |path: &str, text: &str| {
            let at = dir.path().join(path);
            fs_err::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
            fs_err::write(at, text).expect("write");
        };
        write(
            "a_test.go",
            "package a\n\nfunc TestOne(t *testing.T) {}\nfunc Test_two(t *testing.T) {}\nfunc Testlower(t *testing.T) {}\nfunc TestMain(m *testing.M) {}\nfunc FuzzX(f *testing.F) {}\nfunc BenchmarkX(b *testing.B) {}\n",
        );
        write(
            "sub/b_test.go",
            "package sub\nfunc TestThree(t *testing.T) {\n}\n",
        );
        write("vendor/v/v_test.go", "func TestVendored(t *testing.T) {}\n");
        write("nested/go.mod", "module nested\n");
        write("nested/n_test.go", "func TestNested(t *testing.T) {}\n");
        write("a.go", "func TestNotATestFile(t *testing.T) {}\n");
        assert_eq!(test_functions(dir.path()), 3);
    }

    #[test]
    fn required_modules_are_read_from_lines_and_blocks_less_local_replacements() {
        let text = "module example.com/app\n\ngo 1.21\n\nrequire example.com/one v1.0.0\n\nrequire (\n\texample.com/two v1.2.0 // indirect\n\texample.com/local v0.0.0\n)\n\nreplace example.com/local => ../local\nreplace (\n\texample.com/two => example.com/fork v1.2.1\n)\n";
        assert_eq!(downloads(text), ["example.com/one", "example.com/two"]);
        assert!(downloads("module m\n\ngo 1.21\n").is_empty());
    }
}
