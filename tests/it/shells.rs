//! `completions <shell>` and `man`: the scripts are sourced in the real shells (bash, fish,
//! zsh) and asked what completes — subcommands, options, and the changes of the OpenSpec root
//! the shell stands in, which the script asks proofgraph for at each TAB — and the man pages
//! render with groff, warnings as errors.

use std::path::Path;
use std::process::Command;

use crate::support::{Sandbox, repo_root};

/// The proofgraph binary the tests run (absolute: the scripts call it back by that path).
fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_proofgraph")
}

/// A workspace with two changes, one archived change and a hidden directory.
fn workspace(sb: &Sandbox) {
    sb.openspec_root("");
    for name in ["add-profile", "fix-login"] {
        sb.write(&format!("openspec/changes/{name}/proposal.md"), "# x\n");
    }
    sb.write(
        "openspec/changes/add-profile/execution.yaml",
        "version: 1\nproviders:\n  unit: {adapter: command, command: [true]}\n  lint: {adapter: command, command: [true]}\n",
    );
    sb.write(
        "openspec/changes/fix-login/evidence.yaml",
        "version: 2\nclaims: []\nproviders:\n  e2e: {adapter: command, command: [true]}\n",
    );
    sb.write(
        "openspec/changes/archive/2026-01-01-old/proposal.md",
        "# old\n",
    );
    sb.write("openspec/changes/.draft/proposal.md", "# draft\n");
    fs_err::create_dir_all(sb.work().join("src/deep")).expect("mkdir");
}

fn script(sb: &Sandbox, shell: &str) -> String {
    let run = sb.run(&sb.work(), &["completions", shell]);
    run.expect_code(0);
    assert!(
        run.stdout.contains(binary()),
        "{shell}: calls back {}: {}",
        binary(),
        run.stdout
    );
    run.stdout
}

/// Runs `program args…` in `cwd` with the sandbox's environment; its stdout.
fn shell(sb: &Sandbox, cwd: &Path, program: &str, args: &[&str]) -> String {
    let out = sb
        .cmd(program, cwd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program} ({e}); scripts/deps.sh installs it"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What bash's completion of `line` (the last word being completed) offers, from `cwd`.
fn bash_complete(sb: &Sandbox, cwd: &Path, file: &Path, line: &str) -> Vec<String> {
    let program = format!(
        r#"source {file}
complete -p proofgraph >/dev/null || exit 9
read -ra COMP_WORDS <<< "{line}"
[[ "{line}" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="{line}"
COMP_POINT=${{#COMP_LINE}}
COMP_TYPE=9
_clap_complete_proofgraph proofgraph "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        file = file.display()
    );
    shell(sb, cwd, "bash", &["-c", &program])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_commands_options_and_the_changes_of_the_root_it_stands_in() {
    let sb = Sandbox::new();
    workspace(&sb);
    let file = sb.write("proofgraph.bash", script(&sb, "bash"));
    let commands = bash_complete(&sb, &sb.work(), &file, "proofgraph pro");
    assert_eq!(commands, ["prove"], "{commands:?}");
    let options = bash_complete(&sb, &sb.work(), &file, "proofgraph prove --sa");
    assert_eq!(options, ["--sandbox"], "{options:?}");
    // The changes, from a directory below the root too; archived and hidden ones are not.
    for cwd in [sb.work(), sb.work().join("src/deep")] {
        let changes = bash_complete(&sb, &cwd, &file, "proofgraph prove ");
        assert!(
            changes.contains(&"add-profile".to_owned())
                && changes.contains(&"fix-login".to_owned()),
            "{changes:?}"
        );
        assert!(
            !changes
                .iter()
                .any(|c| c.contains("archive") || c.contains("draft") || c == "old"),
            "{changes:?}"
        );
    }
    let one = bash_complete(&sb, &sb.work(), &file, "proofgraph status fi");
    assert_eq!(one, ["fix-login"], "{one:?}");
    // Outside any OpenSpec root there are no changes to offer, and nothing fails...
    let outside = tempfile::tempdir().expect("tempdir");
    let none = bash_complete(&sb, outside.path(), &file, "proofgraph status a");
    assert!(
        none.iter().all(|c| c.is_empty() || !c.starts_with("add")),
        "{none:?}"
    );
    // ...unless the line names a root with -C, as the command will run there.
    let line = format!("proofgraph -C {} status a", sb.work().display());
    let there = bash_complete(&sb, outside.path(), &file, &line);
    assert_eq!(there, ["add-profile"], "{there:?}");
    // The providers of the change the line names (execution.yaml and evidence.yaml).
    let values = |line: &str| -> Vec<String> {
        bash_complete(&sb, &sb.work(), &file, line)
            .into_iter()
            .filter(|c| !c.starts_with('-'))
            .collect()
    };
    let providers = values("proofgraph explain add-profile ");
    assert_eq!(providers, ["lint", "unit"], "{providers:?}");
    let providers = values("proofgraph log fix-login ");
    assert_eq!(providers, ["e2e"], "{providers:?}");
    let one = bash_complete(&sb, &sb.work(), &file, "proofgraph hash add-profile u");
    assert_eq!(one, ["unit"], "{one:?}");
    // The values of an option are completed too.
    let modes = bash_complete(
        &sb,
        &sb.work(),
        &file,
        "proofgraph prove add-profile --sandbox ",
    );
    for mode in ["worktree", "copy", "none"] {
        assert!(modes.contains(&mode.to_owned()), "{modes:?}");
    }
}

/// Completion finds the root the command will run in, through the one root finder
/// (`load::openspec::root::resolve`): a bare `openspec/` (a store's layout) between the
/// working directory and the root does not capture it, and `--store <id>` completes the
/// changes of the registered store it names.
#[test]
fn completion_finds_the_root_the_command_will_use() {
    let sb = Sandbox::new();
    workspace(&sb);
    let file = sb.write("proofgraph.bash", script(&sb, "bash"));
    // A bare `openspec/` in `src/`: no root, so the changes are the workspace's.
    sb.mkdir("src/openspec");
    let below = sb.work().join("src/deep");
    let changes = bash_complete(&sb, &below, &file, "proofgraph status a");
    assert_eq!(changes, ["add-profile"], "{changes:?}");
    let listed = sb.run(&below, &["list", "--json"]).json();
    assert_eq!(
        listed["root"]["path"],
        fs_err::canonicalize(sb.work())
            .expect("canonical")
            .display()
            .to_string(),
        "the command runs in the same root: {listed:#}"
    );
    // A registered store, named on the line: its changes, from anywhere.
    let store = sb.openspec_root("stores/team");
    sb.write(
        "stores/team/.openspec-store/store.yaml",
        "version: 1\nid: team\n",
    );
    sb.write(
        "stores/team/openspec/changes/team-change/proposal.md",
        "# t\n",
    );
    crate::support::write(
        &sb.data_home().join("openspec/stores/registry.yaml"),
        format!(
            "version: 1\nstores:\n  team:\n    backend:\n      type: git\n      local_path: {}\n",
            store.display()
        ),
    );
    let outside = tempfile::tempdir().expect("tempdir");
    for line in [
        "proofgraph --store team status t",
        "proofgraph --store=team status t",
    ] {
        let there = bash_complete(&sb, outside.path(), &file, line);
        assert_eq!(there, ["team-change"], "{line}: {there:?}");
    }
    // Without it, the store is no root of the directory the line runs in.
    let none = bash_complete(&sb, outside.path(), &file, "proofgraph status t");
    assert!(none.iter().all(|c| c != "team-change"), "{none:?}");
}

#[test]
fn fish_completes_the_same() {
    let sb = Sandbox::new();
    workspace(&sb);
    let file = sb.write("proofgraph.fish", script(&sb, "fish"));
    let ask = |line: &str| -> Vec<String> {
        let program = format!("source {}; complete -C '{line}'", file.display());
        shell(&sb, &sb.work(), "fish", &["--no-config", "-c", &program])
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
            .collect()
    };
    let commands = ask("proofgraph pro");
    assert!(commands.contains(&"prove".to_owned()), "{commands:?}");
    let changes = ask("proofgraph prove ");
    assert!(
        changes.contains(&"add-profile".to_owned()) && changes.contains(&"fix-login".to_owned()),
        "{changes:?}"
    );
}

#[test]
fn zsh_reads_its_script_and_registers_the_function() {
    let sb = Sandbox::new();
    workspace(&sb);
    let file = sb.write("_proofgraph", script(&sb, "zsh"));
    // Parsed without error, and it defines the function its #compdef line names.
    shell(
        &sb,
        &sb.work(),
        "zsh",
        &["-n", file.to_str().expect("utf-8")],
    );
    let program = format!(
        "autoload -Uz compinit && compinit -u -d {dump} && source {file} && whence -w _clap_dynamic_completer_proofgraph",
        dump = sb.path().join("zcompdump").display(),
        file = file.display()
    );
    let out = shell(&sb, &sb.work(), "zsh", &["-f", "-c", &program]);
    assert!(out.contains("function"), "{out}");
    // The callback it makes answers as zsh expects: one candidate per line.
    let answer = sb
        .proofgraph(&sb.work())
        .env("PROOFGRAPH_COMPLETE", "zsh")
        .env("_CLAP_COMPLETE_INDEX", "2")
        .env("_CLAP_IFS", "\n")
        .args(["--", "proofgraph", "prove", ""])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&answer.stdout);
    assert!(text.lines().any(|l| l.starts_with("add-profile")), "{text}");
}

#[test]
fn every_shell_gets_a_script_and_json_carries_it() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let text = script(&sb, shell);
        assert!(text.contains("PROOFGRAPH_COMPLETE"), "{shell}: {text}");
        let run = sb.run(&sb.work(), &["completions", shell, "--json"]);
        run.expect_code(0);
        let doc = run.json();
        assert_eq!(doc["shell"], shell);
        assert_eq!(doc["script"].as_str(), Some(text.as_str()));
    }
    let run = sb.run(&sb.work(), &["completions", "tcsh"]);
    run.expect_code(3);
}

/// Renders a man page as `man` does (groff with preconv for UTF-8), its warnings as errors;
/// the text.
fn render(sb: &Sandbox, page: &str) -> String {
    let file = sb.write("page.1", page);
    let out = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .arg(&file)
        .output()
        .expect("groff (apt-get install groff-base)");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "groff warned: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-P-bcou"])
        .arg(&file)
        .output()
        .expect("groff");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn man_pages_render_and_name_every_command_and_option() {
    let sb = Sandbox::new();
    let run = sb.run(&sb.work(), &["man"]);
    run.expect_code(0);
    let text = render(&sb, &run.stdout);
    for command in ["prove", "status", "rerun", "cache", "completions", "man"] {
        assert!(text.contains(command), "{command} in:\n{text}");
    }
    let run = sb.run(&sb.work(), &["man", "prove"]);
    run.expect_code(0);
    assert!(
        run.stdout.contains(".TH proofgraph-prove 1"),
        "{}",
        run.stdout
    );
    let text = render(&sb, &run.stdout);
    for option in ["--jobs", "--sandbox", "--no-cache", "--shard", "--cache"] {
        assert!(text.contains(option), "{option} in:\n{text}");
    }
    // An unknown command is a usage error naming the ones there are.
    let run = sb.run(&sb.work(), &["man", "proove", "--json"]);
    run.expect_code(3);
    let message = run.json()["status"][0]["message"].to_string();
    assert!(
        message.contains("proove") && message.contains("prove"),
        "{message}"
    );
    // The README's commands table and the man page agree on the command names.
    let readme = fs_err::read_to_string(repo_root().join("README.md")).expect("README");
    for command in ["completions", "man"] {
        assert!(
            readme.contains(&format!("proofgraph {command}")),
            "README's commands table lacks `{command}`"
        );
    }
}
