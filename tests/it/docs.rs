//! The documentation that is generated or executed, held equal to the binary:
//!
//! - `docs/reference/{execution,evidence,proofgraph}.md`, the field reference, is what
//!   `proofgraph::load::config::reference` generates from the decoders' key lists (the ones
//!   `proofgraph schema` describes); `PROOFGRAPH_BLESS=1` rewrites the files.
//! - The `console` blocks of README and `docs/` (`$ proofgraph …` and what it prints) are
//!   run by trycmd against the real binary, each document in a project the test builds
//!   ([`DOCUMENTED`]); a documented output the binary no longer prints fails, and
//!   `TRYCMD=overwrite` writes what it prints back into the document.
//! - The help of every command is pinned by one snapshot, `cli-reference@.md.snap`.

use proofgraph::load::config::reference;
use proofgraph::load::config::schema::Kind;

use std::path::{Path, PathBuf};

use crate::support::{Sandbox, git_commit_all, repo_root};

/// Whether the run asks to rewrite generated files rather than compare them.
fn blessing() -> bool {
    std::env::var_os("PROOFGRAPH_BLESS").is_some_and(|v| v == "1")
}

/// A unified-style listing of the lines of `expected` and `actual` that differ, for a
/// failure message.
fn line_diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut out = String::new();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            if let Some(x) = x {
                out.push_str(&format!("{:>4} - {x}\n", i + 1));
            }
            if let Some(y) = y {
                out.push_str(&format!("{:>4} + {y}\n", i + 1));
            }
        }
    }
    out
}

/// Compares the committed file `rel` with `generated`, or writes it when blessing.
fn check_generated(rel: &str, generated: &str) {
    let path = repo_root().join(rel);
    if blessing() {
        fs_err::create_dir_all(path.parent().expect("a parent")).expect("create the directory");
        fs_err::write(&path, generated).expect("write the generated file");
        return;
    }
    let committed = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{rel} is not what the code generates; run `PROOFGRAPH_BLESS=1 cargo nextest run -E \
         'test(field_reference)'` and commit it. Committed (-) against generated (+):\n{}",
        line_diff(&committed, generated)
    );
}

/// The field reference is generated from the decoders' key lists: a key added, removed or
/// described anew without regenerating it fails here.
#[test]
fn the_field_reference_is_the_generated_one() {
    for (_, kind) in Kind::ALL {
        let (_, file) = reference::file_names(kind);
        check_generated(
            &format!("docs/reference/{file}"),
            &reference::markdown(kind),
        );
    }
}

/// The reference lists every key the decoders read, each with a meaning, and `schema` prints
/// the same meanings: a key without a description fails here, in the schema as printed.
#[test]
fn every_decoder_key_is_described_in_the_reference_and_the_schema() {
    let sb = crate::support::Sandbox::new();
    for (name, kind) in Kind::ALL {
        let run = crate::support::Run::of(sb.proofgraph(&sb.work()).args(["schema", name]));
        run.expect_code(0);
        let schema: serde_json::Value =
            serde_json::from_str(&run.stdout).expect("`schema` prints JSON");
        let generated = reference::markdown(kind);
        // Every decoder's key list is a section's (the sections cover the schema's objects).
        for section in reference::sections(kind) {
            for field in section.fields {
                assert!(
                    field.about.trim().len() > 10 && field.about.ends_with('.'),
                    "`{name}`, {}: `{}` has no description (a sentence)",
                    section.title,
                    field.key
                );
                let at = format!("{}/properties/{}/description", section.pointer, field.key);
                assert_eq!(
                    schema.pointer(&at).and_then(|d| d.as_str()),
                    Some(field.about),
                    "`schema {name}` at {at}"
                );
                assert!(
                    generated.contains(&format!("| `{}` |", field.key)),
                    "the reference of `{name}` lists `{}`",
                    field.key
                );
            }
        }
    }
}

/// The names of the subcommands a `--help` lists under `Commands:` (but `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Appends the help of `proofgraph <path>` and of every command below it to `out`.
fn help_of(sb: &crate::support::Sandbox, path: &[String], out: &mut String) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let run = crate::support::Run::of(sb.proofgraph(&sb.work()).args(&args));
    run.expect_code(0);
    assert!(
        run.stderr.is_empty(),
        "`{}` wrote to stderr",
        args.join(" ")
    );
    let title = std::iter::once("proofgraph")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    out.push_str(&format!("## `{title}`\n\n```text\n{}```\n\n", run.stdout));
    for name in subcommands(&run.stdout) {
        let mut below = path.to_vec();
        below.push(name);
        help_of(sb, &below, out);
    }
}

/// The help text of every command and subcommand, as the binary prints it (80 columns), in
/// one Markdown document pinned by a snapshot (jj's `cli-reference@.md.snap`): a changed
/// flag, default or wording is a visible diff. To accept one:
/// `INSTA_UPDATE=always cargo nextest run -E 'test(cli_reference)'`, then read the diff.
#[test]
fn cli_reference_pins_the_help_of_every_command() {
    let sb = crate::support::Sandbox::new();
    let mut out = String::from(
        "# The help of every proofgraph command\n\n\
         `proofgraph <command> --help` for each command and subcommand, at 80 columns.\n\n",
    );
    help_of(&sb, &[], &mut out);
    assert!(
        out.contains("## `proofgraph cache gc`"),
        "nested commands are walked"
    );
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_suffix(".md");
    settings.set_omit_expression(true);
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("cli-reference", out));
}

#[test]
fn subcommands_are_read_from_the_commands_section() {
    let help = "Usage: proofgraph cache <COMMAND>\n\nCommands:\n  push   Upload\n         more of push\n  gc     Remove\n  help   Print this message\n\nOptions:\n  -h, --help  Print help\n";
    assert_eq!(subcommands(help), ["push", "gc"]);
}

/// A document whose `console` blocks run, and how the project they run in is made (in the
/// directory given, a git work tree with one commit).
struct Documented {
    /// The document, relative to the repository.
    doc: &'static str,
    /// Makes the project in the directory given.
    project: fn(&Path),
}

/// The documents whose examples run. The ones left out, and why, are listed in the report of
/// the change that added this (a command that needs a remote server, CI's variables, a
/// signing key of CI's, or a build of the binary itself).
const DOCUMENTED: [Documented; 1] = [Documented {
    doc: "README.md",
    project: readme_project,
}];

/// The fenced block of `lang` that follows the heading `heading` of `text` first.
fn block_after(text: &str, heading: &str, lang: &str) -> String {
    let from = text
        .find(heading)
        .unwrap_or_else(|| panic!("the document has the section {heading:?}"));
    let fence = format!("```{lang}\n");
    let start = text[from..]
        .find(&fence)
        .map(|at| from + at + fence.len())
        .unwrap_or_else(|| panic!("{heading:?} has a {lang} block"));
    let len = text[start..].find("```").expect("the block ends");
    text[start..start + len].to_owned()
}

/// README's "Your first change": a Node.js project whose `npm test` is `node --test`, with
/// one test, on which the README's own `sh` block made the change.
fn readme_project(dir: &Path) {
    let node = std::process::Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|o| o.status.success()),
        "README's first change is run on a Node.js project: install Node.js 20 or later \
         (`apt-get install nodejs`)"
    );
    crate::support::write(
        &dir.join("package.json"),
        r#"{"name": "x", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
    );
    crate::support::write(
        &dir.join("test/x.test.js"),
        "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.strictEqual(1 + 1, 2));\n",
    );
    git_commit_all(dir);
    let readme = fs_err::read_to_string(repo_root().join("README.md")).expect("read README.md");
    let script = block_after(&readme, "## Your first change", "sh");
    let out = std::process::Command::new("sh")
        .args(["-e", "-c", &script])
        .current_dir(dir)
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "README's first-change block failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies `doc` into `root` (its `console` blocks are what trycmd runs) with the project its
/// commands run in beside it, `<doc>.in/`; returns the copy's path.
fn staged(root: &Path, case: &Documented, doc_text: &str) -> PathBuf {
    let copy = root.join(case.doc);
    crate::support::write(&copy, doc_text);
    let project = copy.with_extension("in");
    fs_err::create_dir_all(&project).expect("create the project");
    crate::support::git(&project, &["init", "-q", "-b", "main"]);
    (case.project)(&project);
    copy
}

/// trycmd's cases for the staged documents, with the environment every test's program gets
/// (`Sandbox::proofgraph`: an isolated home, fixed width, time zone and locale).
fn cases(sb: &Sandbox, docs: &[PathBuf]) -> trycmd::TestCases {
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("proofgraph", Path::new(env!("CARGO_BIN_EXE_proofgraph")))
        .default_bin_name("proofgraph")
        .timeout(std::time::Duration::from_secs(300));
    let hermetic = sb.proofgraph(&sb.work());
    for (key, value) in hermetic.get_envs() {
        if let (Some(key), Some(value)) = (key.to_str(), value.and_then(|v| v.to_str())) {
            cases.env(key, value);
        }
    }
    for doc in docs {
        cases.case(doc);
    }
    cases
}

/// Every `console` block of [`DOCUMENTED`] runs the binary and prints what it shows.
#[test]
fn the_documented_commands_print_what_the_docs_show() {
    let sb = Sandbox::new();
    let root = sb.path().join("docs");
    let staged: Vec<(PathBuf, &Documented)> = DOCUMENTED
        .iter()
        .map(|case| {
            let text = fs_err::read_to_string(repo_root().join(case.doc)).expect("read the doc");
            assert!(
                text.contains("```console\n$ proofgraph "),
                "{} has a console block",
                case.doc
            );
            (staged(&root, case, &text), case)
        })
        .collect();
    let paths: Vec<PathBuf> = staged.iter().map(|(p, _)| p.clone()).collect();
    cases(&sb, &paths).run();
    if std::env::var_os("TRYCMD").is_some_and(|v| v == "overwrite") {
        for (copy, case) in &staged {
            fs_err::copy(copy, repo_root().join(case.doc)).expect("write the doc back");
        }
    }
}

/// The harness compares: a document whose shown output the binary does not print fails.
#[test]
fn a_documented_output_the_binary_does_not_print_fails() {
    let sb = Sandbox::new();
    let case = &DOCUMENTED[0];
    let text = fs_err::read_to_string(repo_root().join(case.doc)).expect("read the doc");
    let shown = "add-x: nothing stands between the change and a proof run";
    assert!(text.contains(shown), "README shows doctor's verdict");
    let wrong = text.replace(shown, "add-x: 1 finding");
    let copy = staged(&sb.path().join("docs"), case, &wrong);
    let harness = cases(&sb, &[copy]);
    // The cases own everything they touch; a panic leaves nothing half-changed behind.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness.run()));
    assert!(
        outcome.is_err(),
        "trycmd accepted an output the binary does not print"
    );
}
