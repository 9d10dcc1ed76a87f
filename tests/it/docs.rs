//! The documentation that is generated or executed, held equal to the binary:
//!
//! - `docs/reference/{execution,evidence,proofgraph}.md`, the field reference, is what
//!   `proofgraph::load::config::reference` generates from the decoders' key lists (the ones
//!   `proofgraph schema` describes); `PROOFGRAPH_BLESS=1` rewrites the files.

use proofgraph::load::config::reference;
use proofgraph::load::config::schema::Kind;

use crate::support::repo_root;

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
    use proofgraph::load::config::{catalog, evidence, execution};
    let lists: [(&str, &[proofgraph::load::config::decode::Field]); 12] = [
        ("execution.yaml", &execution::TOP_FIELDS),
        ("a provider", &execution::PROVIDER_FIELDS),
        ("a provider's ci", &execution::CI_FIELDS),
        ("a service", &execution::SERVICE_FIELDS),
        ("a readiness probe", &execution::READINESS_FIELDS),
        ("evidence.yaml", &evidence::TOP_FIELDS),
        ("a claim", &evidence::CLAIM_FIELDS),
        ("proofgraph.yaml", &catalog::TOP_FIELDS),
        ("a repository", &catalog::REPOSITORY_FIELDS),
        ("a trusted key", &catalog::TRUSTED_KEY_FIELDS),
        ("cache", &catalog::CACHE_FIELDS),
        ("logs", &catalog::LOGS_FIELDS),
    ];
    for (what, fields) in lists {
        for field in fields {
            assert!(
                field.about.trim().len() > 10 && field.about.ends_with('.'),
                "{what}: `{}` has no description (a sentence)",
                field.key
            );
        }
    }
    let sb = crate::support::Sandbox::new();
    for (name, kind) in Kind::ALL {
        let run = crate::support::Run::of(sb.proofgraph(&sb.work()).args(["schema", name]));
        run.expect_code(0);
        let schema: serde_json::Value =
            serde_json::from_str(&run.stdout).expect("`schema` prints JSON");
        let generated = reference::markdown(kind);
        for section in reference::sections(kind) {
            for field in section.fields {
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
