//! Reuse equals a fresh run: after each of 20 random edits — inside and outside narrowed
//! `inputs`, through a symbolic link (its target's bytes, or where it leads), in a nested
//! repository, of a program outside every repository that the job chooses at run time (no
//! argv names it: only the record of what the job executed binds it), a new untracked file
//! inside and outside narrowed inputs, of the documentation a provider's `!` entries leave
//! out (`inputs: ["!README.md", "!docs/**"]`) — `prove`'s verdicts equal `prove --no-cache`'s, and both equal
//! what the edited files say. A receipt reused where a fresh run would disagree is the
//! false pass this promise exists to rule out.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use crate::support::{Sandbox, assert_emits, git_commit_all, provider, receipt};

/// What the providers read, as the test knows it.
#[derive(Debug, Clone)]
struct State {
    /// `src/a.txt` (narrowed `inputs: [src/**]`).
    a: bool,
    /// `data/flag` (a provider that binds everything).
    flag: bool,
    /// `real/one.txt` and `real/two.txt`, and which of them `link.txt` leads to.
    real: [bool; 2],
    link_to: usize,
    /// `x.txt` of the nested repository `lib`.
    nested: bool,
    /// The program outside every repository: exits 0 or 1.
    tool: bool,
    /// `tests/tK.t`, each absent, `ok` or `bad` (narrowed `inputs: [tests/**]`); new ones
    /// are untracked.
    tests: [Option<bool>; 3],
}

impl State {
    /// Where every case starts: every provider passes (`link.txt` leads to `real/one.txt`).
    fn start() -> Self {
        State {
            a: true,
            flag: true,
            real: [true, false],
            link_to: 0,
            nested: true,
            tool: true,
            tests: [Some(true), None, None],
        }
    }
}

#[derive(Debug, Clone)]
enum Edit {
    A(bool),
    Readme,
    /// A page of `docs/` (which `unread` leaves out, with the README) edited.
    Docs,
    Flag(bool),
    Real(usize, bool),
    Retarget(usize),
    Nested(bool),
    Tool(bool),
    Test(usize, bool),
    /// A failing test file outside the narrowed inputs (at the root): nothing reads it.
    Stray,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<bool>().prop_map(Edit::A),
        Just(Edit::Readme),
        Just(Edit::Docs),
        any::<bool>().prop_map(Edit::Flag),
        (0..2usize, any::<bool>()).prop_map(|(k, v)| Edit::Real(k, v)),
        (0..2usize).prop_map(Edit::Retarget),
        any::<bool>().prop_map(Edit::Nested),
        any::<bool>().prop_map(Edit::Tool),
        (0..3usize, any::<bool>()).prop_map(|(k, v)| Edit::Test(k, v)),
        Just(Edit::Stray),
    ]
}

fn word(ok: bool) -> &'static str {
    if ok { "ok\n" } else { "bad\n" }
}

fn tool_script(ok: bool) -> String {
    // The same size either way: a program edited in place, as an editor would.
    format!("#!/bin/sh\nexit {}\n", if ok { 0 } else { 1 })
}

fn write_tool(dir: &Path, ok: bool) {
    let path = dir.join("check-tool");
    fs_err::write(&path, tool_script(ok)).expect("write the tool");
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn link(sb: &Sandbox, to: usize) {
    let at = sb.work().join("link.txt");
    let _ = fs_err::remove_file(&at);
    std::os::unix::fs::symlink(format!("real/{}.txt", ["one", "two"][to]), &at).expect("symlink");
}

fn workspace(sb: &Sandbox, tools: &Path, state: &State) {
    sb.openspec_root("");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", tools.display());
    sb.write(
        "proofgraph.yaml",
        "version: 1\nrepositories:\n  app: {path: .}\n  lib: {path: lib}\n",
    );
    sb.write(".gitignore", ".proofgraph/\nlib/\n");
    sb.write("README.md", "# Reuse\n");
    sb.write("docs/guide.md", "How to reuse.\n");
    sb.write("src/a.txt", word(state.a));
    sb.write("data/flag", word(state.flag));
    sb.write("real/one.txt", word(state.real[0]));
    sb.write("real/two.txt", word(state.real[1]));
    link(sb, state.link_to);
    sb.write("tests/t0.t", word(true));
    sb.write("lib/x.txt", word(state.nested));
    write_tool(tools, state.tool);
    sb.write("openspec/changes/r/proposal.md", "# Reuse\n");
    sb.write(
        "openspec/changes/r/evidence.yaml",
        "version: 2\nclaims:\n  - {id: c, scenario: It holds, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/r/execution.yaml",
        format!(
            "version: 1\nproviders:\n\
             \x20 narrow: {{adapter: command, capability: static-analysis, repository: app, inputs: [\"src/**\"], command: [grep, -qx, ok, src/a.txt]}}\n\
             \x20 whole: {{adapter: command, capability: static-analysis, repository: app, command: [grep, -qx, ok, data/flag]}}\n\
             \x20 linked: {{adapter: command, capability: static-analysis, repository: app, inputs: [link.txt], command: [grep, -qx, ok, link.txt]}}\n\
             \x20 unread: {{adapter: command, capability: static-analysis, repository: app, inputs: [\"!README.md\", \"!docs/**\"], command: [sh, -c, \"grep -qx ok data/flag && [ ! -e README.md ] && [ ! -e docs ]\"]}}
\
             \x20 nested: {{adapter: command, capability: static-analysis, repository: lib, command: [grep, -qx, ok, x.txt]}}\n\
             \x20 tool: {{adapter: command, capability: static-analysis, repository: app, inputs: [README.md], command: [sh, -c, \"v=tool; check-$v\"], env: {{PATH: \"{path}\"}}}}\n\
             \x20 suite: {{adapter: command, capability: static-analysis, repository: app, inputs: [\"tests/**\"], command: [sh, -c, \"for f in *.t tests/*.t; do [ -e \\\"$f\\\" ] || continue; grep -qx ok \\\"$f\\\" || exit 1; done\"]}}\n"
        ),
    );
    git_commit_all(&sb.work().join("lib"));
    git_commit_all(&sb.work());
}

/// What each provider must say, from the files as they are.
fn expected(state: &State) -> BTreeMap<String, String> {
    let verdict = |ok: bool| if ok { "pass" } else { "fail" }.to_owned();
    BTreeMap::from([
        ("narrow".to_owned(), verdict(state.a)),
        ("whole".to_owned(), verdict(state.flag)),
        ("unread".to_owned(), verdict(state.flag)),
        ("linked".to_owned(), verdict(state.real[state.link_to])),
        ("nested".to_owned(), verdict(state.nested)),
        ("tool".to_owned(), verdict(state.tool)),
        (
            "suite".to_owned(),
            verdict(state.tests.iter().all(|t| *t != Some(false))),
        ),
    ])
}

fn verdicts(doc: &Value) -> BTreeMap<String, String> {
    [
        "narrow", "whole", "unread", "linked", "nested", "tool", "suite",
    ]
    .into_iter()
    .map(|p| {
        let outcome = receipt(doc, p, "static-analysis")["outcome"]
            .as_str()
            .unwrap_or_else(|| panic!("no outcome for {p}: {:#}", provider(doc, p)))
            .to_owned();
        (p.to_owned(), outcome)
    })
    .collect()
}

fn apply(sb: &Sandbox, tools: &Path, state: &mut State, edit: &Edit) {
    match *edit {
        Edit::A(ok) => {
            state.a = ok;
            sb.write("src/a.txt", word(ok));
        }
        Edit::Readme => {
            let readme = sb.work().join("README.md");
            let mut text = fs_err::read_to_string(&readme).expect("README");
            text.push_str("More words.\n");
            fs_err::write(&readme, text).expect("README");
        }
        Edit::Docs => {
            let guide = sb.work().join("docs/guide.md");
            let mut text = fs_err::read_to_string(&guide).expect("guide");
            text.push_str("More words.\n");
            fs_err::write(&guide, text).expect("guide");
        }
        Edit::Flag(ok) => {
            state.flag = ok;
            sb.write("data/flag", word(ok));
        }
        Edit::Real(k, ok) => {
            state.real[k] = ok;
            sb.write(&format!("real/{}.txt", ["one", "two"][k]), word(ok));
        }
        Edit::Retarget(to) => {
            state.link_to = to;
            link(sb, to);
        }
        Edit::Nested(ok) => {
            state.nested = ok;
            sb.write("lib/x.txt", word(ok));
        }
        Edit::Tool(ok) => {
            state.tool = ok;
            write_tool(tools, ok);
        }
        Edit::Test(k, ok) => {
            state.tests[k] = Some(ok);
            sb.write(&format!("tests/t{k}.t"), word(ok));
        }
        Edit::Stray => {
            sb.write("stray.t", word(false));
        }
    }
}

proptest! {
    #![proptest_config(crate::support::beside_source(ProptestConfig {
        cases: crate::support::proptest_cases(2),
        max_shrink_iters: 8,
        ..ProptestConfig::default()
    }))]

    #[test]
    fn after_every_edit_reuse_agrees_with_a_fresh_run(
        edits in proptest::collection::vec(edit(), 20),
        mode in proptest::sample::select(vec!["worktree", "copy"]),
    ) {
        let sb = Sandbox::new();
        let tools = tempfile::Builder::new().prefix("pg-reuse-tools").tempdir().expect("tempdir");
        let mut state = State::start();
        workspace(&sb, tools.path(), &state);
        let hosts = sb.host_paths_with(&[tools.path()]);
        let vars = [("PROOFGRAPH_HOST_PATHS", hosts.as_str())];
        let args = ["prove", "r", "--json", "--keep-going", "--sandbox", mode];
        let first = sb.run_with_env(&sb.work(), &args, &vars).json();
        prop_assert_eq!(verdicts(&first), expected(&state), "{:#}", first);
        let mut reuses = 0;
        for (i, e) in edits.iter().enumerate() {
            apply(&sb, tools.path(), &mut state, e);
            let reused = sb.run_with_env(&sb.work(), &args, &vars).json();
            reuses += reused["summary"]["reused"].as_u64().unwrap_or_default();
            let mut fresh_args = args.to_vec();
            fresh_args.push("--no-cache");
            let fresh = sb.run_with_env(&sb.work(), &fresh_args, &vars).json();
            let want = expected(&state);
            prop_assert_eq!(&verdicts(&fresh), &want, "edit {} {:?} ({}): a fresh run {:#}", i, e, mode, fresh);
            prop_assert_eq!(&verdicts(&reused), &want, "edit {} {:?} ({}): the reusing prove {:#}", i, e, mode, reused);
        }
        // The comparison means something only if receipts were reused: each edit leaves at
        // least five of the seven providers' inputs alone.
        prop_assert!(reuses >= 20, "only {} reuses in 20 proves", reuses);
    }
}

/// A pass made without namespaces records nothing of what its job executed: reusing it is
/// said, naming the provider, and a pass made with namespaces is reused without a word.
#[test]
fn reusing_a_pass_whose_executions_were_not_recorded_says_so() {
    let sb = Sandbox::new();
    let tools = tempfile::Builder::new()
        .prefix("pg-reuse-tools")
        .tempdir()
        .expect("tempdir");
    let state = State::start();
    workspace(&sb, tools.path(), &state);
    let hosts = sb.host_paths_with(&[tools.path()]);
    let vars = [("PROOFGRAPH_HOST_PATHS", hosts.as_str())];
    let prove = |isolation: &str| {
        sb.run_with_env(
            &sb.work(),
            &["prove", "r", "--json", "--isolation", isolation],
            &vars,
        )
    };
    let warning = |doc: &Value| {
        doc["status"]
            .as_array()
            .and_then(|all| all.iter().find(|d| d["code"] == "executions_not_recorded"))
            .cloned()
    };
    // Made without namespaces, then reused (by either isolation): said, once, naming them.
    let made = prove("none");
    made.expect_code(0);
    assert_eq!(warning(&made.json()), None, "nothing was reused yet");
    for isolation in ["none", "auto"] {
        let reused = prove(isolation);
        reused.expect_code(0);
        let doc = reused.json();
        assert_eq!(doc["summary"]["reused"], 7, "{doc:#}");
        assert_emits!(reused.status_codes(), "executions_not_recorded", "{doc:#}");
        let message = warning(&doc).expect("the warning")["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            message.contains("`linked`")
                && message.contains("`tool`")
                && message.contains("2 more"),
            "{message}"
        );
    }
    // Made with namespaces: reused without the warning.
    let fresh = sb.run_with_env(&sb.work(), &["prove", "r", "--json", "--no-cache"], &vars);
    fresh.expect_code(0);
    let reused = prove("auto");
    let doc = reused.json();
    assert_eq!(doc["summary"]["reused"], 7, "{doc:#}");
    assert_eq!(warning(&doc), None, "{doc:#}");
}
