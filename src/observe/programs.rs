//! The programs a command starts, found as its job will find them, and their identity as
//! fingerprinted (DESIGN §3: "the identity of the executable (resolved path + content
//! digest)").
//!
//! The program of `argv[0]` is not all that runs. The kernel runs a script's interpreter
//! (`#!/usr/bin/env node` — every `npx`, `playwright`, `jest` and `pytest` on `PATH` is such
//! a script), and `sh -c "npm ci && npm test"` starts the programs its script names. Both
//! are part of the identity ([`Executable::runs`]): upgrading Node.js changes the
//! fingerprint of a provider that runs `npx vitest`, as it changes what was proven.
//!
//! - **Interpreters**, exactly as Linux runs them: the `#!` line's interpreter (an
//!   absolute path, or a program `/usr/bin/env` finds on the job's `PATH`, `env -S` split
//!   included), then that interpreter's own `#!`, four levels deep.
//! - **A shell's `-c` script** (`sh`, `bash`, `dash`, `zsh`, `ksh`), read with the
//!   workspace's one shell tokenizer (`bootstrap::shell`: POSIX quoting, comments,
//!   redirections, here-documents): the first word of each of its simple commands (after
//!   `;`, `&&`, `||`, `|`, `&`, newlines, `(`, `{`, `if`, `then`, `do`, `!`, `exec`,
//!   `command`, `time`, `env` and leading `NAME=value` assignments) that is a plain word,
//!   not a shell builtin, and found as the job would find it — with its own interpreters;
//!   and the same of every command substitution's script (`$(…)`, `` `…` ``), eight deep.
//!   Words made at run time (`$TOOL`) and names found nowhere (a function the script
//!   defines) are not identified: this is a reading of the script, not a shell.
//!
//! Content digests of files outside the repositories are remembered by their stat data
//! (device, inode, size, and modification and change times to the nanosecond) in
//! `.proofgraph/programs.json`, so a 100 MB interpreter is hashed once, not at every no-op
//! run. A file changed in place changes its change time, which no user can set; a file
//! written less than two seconds before it was hashed is not remembered (its times may not
//! have ticked yet).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use proofgraph_graph::fingerprint::{Digest, Executable};
use serde::{Deserialize, Serialize};

use crate::store::Store;

/// A command's program, found as its job will find it: resolved once, with the job's own
/// `PATH`, and then both fingerprinted and executed exactly — never looked up again.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Program {
    /// An absolute file: given so, or found in an absolute entry of the job's `PATH`.
    Absolute(PathBuf),
    /// A file of the repository (a relative path, or found in a relative `PATH` entry),
    /// executed from the sandbox the job runs in, as that sandbox holds it.
    InRepository(PathBuf),
}

impl Program {
    /// The file to execute for a job whose working directory is `cwd` (its sandbox).
    pub fn file(&self, cwd: &Path) -> PathBuf {
        match self {
            Program::Absolute(path) => path.clone(),
            Program::InRepository(relative) => cwd.join(relative),
        }
    }
}

/// Where a program of a repository is read: the working tree, or a revision.
pub(super) trait RepoFiles {
    /// Whether `rel` (relative to the repository's `dir`) is an executable file.
    fn is_executable(&self, dir: &Path, rel: &Path) -> bool;
    /// The content of `rel`, through links; `None` when it cannot be read.
    fn read(&self, dir: &Path, rel: &Path) -> Option<Vec<u8>>;
    /// The text of the link `rel`; `None` when it is not a link or cannot be read.
    fn link(&self, dir: &Path, rel: &Path) -> Option<PathBuf>;
}

/// The working tree.
pub(super) struct WorkingTree;

impl RepoFiles for WorkingTree {
    fn is_executable(&self, dir: &Path, rel: &Path) -> bool {
        is_executable(&dir.join(rel))
    }
    fn read(&self, dir: &Path, rel: &Path) -> Option<Vec<u8>> {
        // A regular file only: a FIFO would block the observation.
        let path = dir.join(rel);
        fs_err::metadata(&path)
            .ok()
            .filter(std::fs::Metadata::is_file)?;
        fs_err::read(path).ok()
    }
    fn link(&self, dir: &Path, rel: &Path) -> Option<PathBuf> {
        fs_err::read_link(dir.join(rel)).ok()
    }
}

/// The job's `PATH`: the one its `env` declares, else the caller's (as the job's environment
/// is made).
pub(super) fn job_path(
    env: Option<&BTreeMap<proofgraph_graph::EnvName, proofgraph_graph::span::Spanned<String>>>,
    caller: Option<&OsString>,
) -> Option<OsString> {
    env.and_then(|e| {
        e.iter()
            .find(|(k, _)| k.as_str() == "PATH")
            .map(|(_, v)| OsString::from(&v.value))
    })
    .or_else(|| caller.cloned())
}

/// How many interpreters deep a `#!` chain is followed (Linux's own limit).
const INTERPRETER_DEPTH: usize = 4;

/// How much of a file is read for its `#!` line (Linux reads 256 bytes).
const SHEBANG_MAX: usize = 256;

/// A program's file as read: how it is shown, its digest and its `#!` line.
#[derive(Clone)]
struct Read {
    shown: String,
    digest: Digest,
    shebang: Option<String>,
}

impl Read {
    /// The program as one of another's `runs` (which name no `runs` of their own).
    fn ran(self) -> Executable {
        Executable {
            path: self.shown,
            digest: self.digest,
            runs: Vec::new(),
        }
    }
}

/// A program, with the repository a relative one is read in.
type ReadKey = (Program, Option<PathBuf>);

/// Finds programs and identifies them, each file once.
pub(super) struct Programs {
    /// (program, the repository a relative one is read in) → how it was read.
    read: BTreeMap<ReadKey, Read>,
    /// (program, repository, PATH) → what it resolved to.
    found: BTreeMap<(String, Option<PathBuf>, Option<OsString>), Option<Program>>,
    known: Known,
}

/// Where a program is looked for, as its job will look.
#[derive(Clone, Copy)]
pub(super) struct Lookup<'a> {
    /// The repository the job runs in (relative programs and `PATH` entries are its files).
    pub repo_dir: Option<&'a Path>,
    /// The job's `PATH`.
    pub path: Option<&'a OsString>,
    /// Where the repository's files are read.
    pub files: &'a dyn RepoFiles,
}

impl Programs {
    /// Finds and identifies programs, remembering digests in `store` when it exists.
    pub(super) fn new(store: Option<&Store>) -> Self {
        Self {
            read: BTreeMap::new(),
            found: BTreeMap::new(),
            known: Known::load(store),
        }
    }

    /// Resolves `program` as the job will: a path with a `/` is that file (relative ones in
    /// the repository, run from the sandbox); a bare name is the first executable file in
    /// the job's `PATH`, where an absolute entry is searched on this machine (under
    /// isolation the job sees the same files there: what it names under `/tmp` is exposed
    /// to it) and a relative entry in the repository. `None` when a bare name is found
    /// nowhere.
    pub(super) fn find(&mut self, program: &str, at: Lookup<'_>) -> Option<Program> {
        let key = (
            program.to_owned(),
            at.repo_dir.map(Path::to_path_buf),
            at.path.cloned(),
        );
        self.found
            .entry(key)
            .or_insert_with(|| resolve(program, at.repo_dir, at.path, at.files))
            .clone()
    }

    /// The program as fingerprinted: the path the job executes (repository files as
    /// `./path`), the digest of its content (through links; zeros when it cannot be read,
    /// e.g. a file the sandbox's setup makes), and what else it runs — its interpreters
    /// and, for a shell's `-c` script, the programs the script names (module docs).
    pub(super) fn identify(
        &mut self,
        program: &Program,
        argv: &[String],
        at: Lookup<'_>,
    ) -> Executable {
        let read = self.read(program, at);
        let mut runs = self.interpreters(read.shebang.as_deref(), at);
        if let Some(script) = shell_script(argv) {
            for word in script_commands(script) {
                let Some(found) = self.find(&word, at) else {
                    continue;
                };
                let command = self.read(&found, at);
                let interpreters = self.interpreters(command.shebang.as_deref(), at);
                runs.push(command.ran());
                runs.extend(interpreters);
            }
        }
        runs.sort_by(|a, b| (&a.path, a.digest.0).cmp(&(&b.path, b.digest.0)));
        runs.dedup();
        runs.retain(|r| r.path != read.shown || r.digest != read.digest);
        Executable {
            path: read.shown,
            digest: read.digest,
            runs,
        }
    }

    /// The interpreters a `#!` line starts, each with its own `#!`, to Linux's depth.
    fn interpreters(&mut self, shebang: Option<&str>, at: Lookup<'_>) -> Vec<Executable> {
        let mut out = Vec::new();
        let mut line = shebang.map(str::to_owned);
        for _ in 0..INTERPRETER_DEPTH {
            let Some(current) = line.take() else {
                break;
            };
            let Some((interpreter, found_by_env)) = interpreter_of(&current) else {
                break;
            };
            let program = if interpreter.starts_with('/') {
                Program::Absolute(PathBuf::from(&interpreter))
            } else {
                Program::InRepository(PathBuf::from(&interpreter))
            };
            let read = self.read(&program, at);
            line = read.shebang.clone();
            out.push(read.ran());
            // `/usr/bin/env node`: env runs the program it finds on the job's PATH.
            if let Some(name) = found_by_env
                && let Some(target) = self.find(&name, at)
            {
                let read = self.read(&target, at);
                line = read.shebang.clone();
                out.push(read.ran());
            }
        }
        out
    }

    /// Reads a program's file once: how it is shown, its digest and its `#!` line.
    fn read(&mut self, program: &Program, at: Lookup<'_>) -> Read {
        let key = (
            program.clone(),
            matches!(program, Program::InRepository(_))
                .then(|| at.repo_dir.map(Path::to_path_buf))
                .flatten(),
        );
        if let Some(read) = self.read.get(&key) {
            return read.clone();
        }
        let read = match program {
            Program::Absolute(path) => {
                let (digest, shebang) = self.known.digest(path);
                Read {
                    shown: path.to_string_lossy().into_owned(),
                    digest,
                    shebang,
                }
            }
            Program::InRepository(relative) => {
                let bytes = at.repo_dir.and_then(|dir| at.files.read(dir, relative));
                Read {
                    shown: format!("./{}", relative.to_string_lossy()),
                    digest: bytes.as_deref().map(Digest::of).unwrap_or_default(),
                    shebang: bytes.as_deref().and_then(shebang_line),
                }
            }
        };
        self.read.insert(key, read.clone());
        read
    }

    /// Keeps the digests learned in the store (a cache: failing to write it costs a
    /// rehash next time, nothing else).
    pub(super) fn finish(self) {
        self.known.save();
    }
}

fn resolve(
    program: &str,
    repo_dir: Option<&Path>,
    path: Option<&OsString>,
    files: &dyn RepoFiles,
) -> Option<Program> {
    if program.contains('/') {
        let given = Path::new(program);
        if given.is_absolute() {
            return is_executable(given).then(|| Program::Absolute(given.to_path_buf()));
        }
        let relative: PathBuf = given
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect();
        return Some(Program::InRepository(relative));
    }
    for entry in std::env::split_paths(path?) {
        if entry.is_absolute() {
            let candidate = entry.join(program);
            if is_executable(&candidate) {
                return Some(Program::Absolute(candidate));
            }
        } else if let Some(dir) = repo_dir {
            let relative: PathBuf = entry
                .join(program)
                .components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .collect();
            if files.is_executable(dir, &relative) {
                return Some(Program::InRepository(relative));
            }
        }
    }
    None
}

pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The `#!` line of a file's first bytes, without `#!`; `None` when it has none.
fn shebang_line(head: &[u8]) -> Option<String> {
    let head = &head[..head.len().min(SHEBANG_MAX)];
    let rest = head.strip_prefix(b"#!")?;
    let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
    let line = String::from_utf8_lossy(&rest[..end]);
    let line = line.trim_matches([' ', '\t', '\r']);
    (!line.is_empty()).then(|| line.to_owned())
}

/// The interpreter a `#!` line names and, when it is `env`, the program env is asked to
/// find. Linux passes everything after the interpreter as one argument; `env -S` splits it.
fn interpreter_of(line: &str) -> Option<(String, Option<String>)> {
    let (interpreter, argument) = match line.find([' ', '\t']) {
        Some(at) => (&line[..at], line[at..].trim_matches([' ', '\t'])),
        None => (line, ""),
    };
    if interpreter.is_empty() {
        return None;
    }
    let is_env = Path::new(interpreter)
        .file_name()
        .is_some_and(|n| n == "env");
    if !is_env || argument.is_empty() {
        return Some((interpreter.to_owned(), None));
    }
    let words: Vec<&str> = if argument.starts_with("-S") || argument.starts_with("--split-string") {
        argument
            .trim_start_matches("--split-string")
            .trim_start_matches("-S")
            .split_whitespace()
            .collect()
    } else {
        vec![argument]
    };
    let target = words
        .into_iter()
        .find(|w| !w.starts_with('-') && !w.contains('='))
        .map(str::to_owned);
    Some((interpreter.to_owned(), target))
}

/// The script of a shell's `-c` (`sh -c`, `bash -euc`, `bash -o pipefail -c`), when `argv`
/// starts a shell with one.
fn shell_script(argv: &[String]) -> Option<&str> {
    let shell = Path::new(argv.first()?).file_name()?.to_str()?;
    if !matches!(
        shell,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash"
    ) {
        return None;
    }
    let mut command = false;
    let mut args = argv[1..].iter();
    while let Some(arg) = args.next() {
        if arg == "-o" || arg == "+o" || arg == "-O" || arg == "+O" {
            args.next();
        } else if arg == "--" {
            return args.next().filter(|_| command).map(String::as_str);
        } else if let Some(flags) = arg.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            command |= flags.contains('c');
        } else if arg.starts_with('+') || arg.starts_with("--") {
        } else {
            return command.then_some(arg.as_str());
        }
    }
    None
}

/// Shell builtins and keywords: never a program of the machine.
const BUILTINS: &[&str] = &[
    ":",
    ".",
    "[",
    "[[",
    "]]",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "case",
    "cd",
    "compgen",
    "complete",
    "continue",
    "declare",
    "dirs",
    "disown",
    "done",
    "echo",
    "elif",
    "else",
    "enable",
    "esac",
    "eval",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "fi",
    "for",
    "function",
    "getopts",
    "hash",
    "help",
    "history",
    "in",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "select",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "until",
    "wait",
    "while",
    "}",
    ")",
];

/// Words that start a command without being its program: the program is the next word.
const PREFIXES: &[&str] = &[
    "if", "then", "else", "do", "!", "{", "(", "exec", "command", "time", "nohup",
];

/// How deep command substitutions inside command substitutions are read.
const SUBSTITUTION_DEPTH: usize = 8;

/// The first plain word of each simple command of a `-c` script (module docs), read with
/// the workspace's one shell tokenizer (`bootstrap::shell`).
fn script_commands(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    commands_of(script, 0, &mut out);
    out
}

fn commands_of(script: &str, depth: usize, out: &mut Vec<String>) {
    use bootstrap::shell::{Script, Token, is_assignment, tokens};
    let tokens = tokens(script);
    for command in Script::of_tokens(&tokens).commands {
        let mut after_env = false;
        for word in &command {
            let plain = word.value.as_str();
            if PREFIXES.contains(&plain) || after_env && plain.starts_with('-') {
                continue;
            }
            // `NAME=value cmd`: an assignment before the program.
            if is_assignment(&word.raw) {
                continue;
            }
            let is_plain = word.literal
                && !plain.is_empty()
                && plain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '/'));
            if is_plain && !BUILTINS.contains(&plain) {
                out.push(plain.to_owned());
                // `env [-i] [NAME=value]… program`: env runs the program too.
                if plain == "env" || plain.ends_with("/env") {
                    after_env = true;
                    continue;
                }
            }
            break;
        }
    }
    // What command substitutions run, wherever they are (an argument, an assignment, a
    // redirection's target).
    if depth < SUBSTITUTION_DEPTH {
        for token in &tokens {
            if let Token::Word(word) = token {
                for inner in &word.substitutions {
                    commands_of(inner, depth + 1, out);
                }
            }
        }
    }
}

/// A file's stat data, as remembered with its digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_ns: i64,
    ctime: i64,
    ctime_ns: i64,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: meta.mtime(),
            mtime_ns: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_ns: meta.ctime_nsec(),
        }
    }
}

/// One remembered digest, with the file's `#!` line.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    stat: Stat,
    digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shebang: Option<String>,
}

/// The digests of program files outside the repositories, by path and stat data.
struct Known {
    /// The store `programs.json` is kept in, when it exists.
    store: Option<Store>,
    entries: BTreeMap<PathBuf, Entry>,
    changed: bool,
}

/// How many remembered digests are kept at most (the least recently learned go first).
const KNOWN_MAX: usize = 4096;

/// The file the digests are kept in, inside the store.
const KNOWN_FILE: &str = "programs.json";

impl Known {
    /// The table of `store` (empty when there is none, or it is unreadable: it is a cache).
    /// It is only ever replaced whole (`save`), so a reader sees one table or the other.
    fn load(store: Option<&Store>) -> Self {
        let store = store.filter(|s| s.dir().is_dir()).cloned();
        let entries = store
            .as_ref()
            .and_then(|s| fs_err::read(s.dir().join(KNOWN_FILE)).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            store,
            entries,
            changed: false,
        }
    }

    /// The digest of the file at `path` (through links; zeros when it cannot be read) and
    /// its `#!` line.
    fn digest(&mut self, path: &Path) -> (Digest, Option<String>) {
        // Only a regular file is read: a `#!` naming a FIFO or a device must never block
        // an observation (it could not be executed as an interpreter anyway).
        let Some(meta) = fs_err::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_file)
        else {
            return (Digest::default(), None);
        };
        let stat = Stat::of(&meta);
        if let Some(entry) = self.entries.get(path)
            && entry.stat == stat
            && let Some(digest) = Digest::from_hex(&entry.digest)
        {
            return (digest, entry.shebang.clone());
        }
        let head = read_head(path).as_deref().and_then(shebang_line);
        let started = std::time::SystemTime::now();
        let Some(digest) = hash_file(path) else {
            return (Digest::default(), head);
        };
        // Only a file whose times are at least two seconds older than the hashing is
        // remembered: a write in the same clock tick would not have moved them.
        let settled = |secs: i64, nanos: i64| {
            let at = std::time::UNIX_EPOCH
                + std::time::Duration::new(
                    u64::try_from(secs).unwrap_or(0),
                    u32::try_from(nanos).unwrap_or(0),
                );
            started
                .duration_since(at)
                .is_ok_and(|age| age >= std::time::Duration::from_secs(2))
        };
        // The stat again: a file that changed while it was hashed is not remembered.
        let unchanged = fs_err::metadata(path).is_ok_and(|m| Stat::of(&m) == stat);
        if unchanged && settled(stat.mtime, stat.mtime_ns) && settled(stat.ctime, stat.ctime_ns) {
            self.entries.insert(
                path.to_path_buf(),
                Entry {
                    stat,
                    digest: digest.to_hex(),
                    shebang: head.clone(),
                },
            );
            self.changed = true;
        }
        (digest, head)
    }

    /// Replaces the table through the store's write-then-rename (`Store::write_atomic`: a
    /// temporary file in `tmp/`, which the store sweeps), so a process killed while saving
    /// leaves the old table or the new one, and no stray file. A failure costs a rehash.
    fn save(mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        if !self.changed {
            return;
        }
        if self.entries.len() > KNOWN_MAX {
            // Forget files that are gone first, then any.
            self.entries.retain(|path, _| path.exists());
            while self.entries.len() > KNOWN_MAX {
                self.entries.pop_first();
            }
        }
        let Ok(bytes) = serde_json::to_vec(&self.entries) else {
            return;
        };
        let _ = store.write_atomic(&store.dir().join(KNOWN_FILE), &bytes);
    }
}

/// The programs receipts recorded as executed, compared with what is here now: each file's
/// BLAKE3, remembered by stat data in the store's program table (which no job can write),
/// so a 100 MB interpreter is read once, not at every no-op `prove`. Shared by the threads
/// that check receipts.
pub struct CurrentPrograms {
    known: std::sync::Mutex<Known>,
}

impl CurrentPrograms {
    /// The table of `store`.
    pub fn load(store: &Store) -> Self {
        CurrentPrograms {
            known: std::sync::Mutex::new(Known::load(Some(store))),
        }
    }

    /// The first program of `recorded` (path, BLAKE3 hex) that is no longer the file that
    /// ran — changed, gone, or never read (an empty digest) — if any.
    pub fn first_changed<'a>(
        &self,
        recorded: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<&'a str> {
        let mut known = self
            .known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recorded.into_iter().find_map(|(path, digest)| {
            let (now, _) = known.digest(Path::new(path));
            (digest.is_empty() || now == Digest::default() || now.to_hex() != digest)
                .then_some(path)
        })
    }

    /// Keeps what was learnt in the store's table.
    pub fn save(self) {
        let known = self
            .known
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known.save();
    }
}

/// The first bytes of a file, for its `#!` line.
fn read_head(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut file = fs_err::File::open(path).ok()?;
    let mut head = vec![0u8; SHEBANG_MAX];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(_) => return None,
        }
    }
    head.truncate(filled);
    Some(head)
}

/// BLAKE3 of a file's content, read in blocks.
fn hash_file(path: &Path) -> Option<Digest> {
    let mut file = fs_err::File::open(path).ok()?;
    let mut hasher = blake3::Hasher::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(Digest(*hasher.finalize().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_shebang_names_its_interpreter_and_what_env_finds() {
        type Want<'a> = Option<(&'a str, Option<&'a str>)>;
        let cases: [(&[u8], Want<'_>); 9] = [
            (b"#!/bin/sh\necho", Some(("/bin/sh", None))),
            (
                b"#! /usr/bin/python3 -u\n",
                Some(("/usr/bin/python3", None)),
            ),
            (
                b"#!/usr/bin/env node\n",
                Some(("/usr/bin/env", Some("node"))),
            ),
            (
                b"#!/usr/bin/env node\r\n",
                Some(("/usr/bin/env", Some("node"))),
            ),
            (
                b"#!/usr/bin/env -S node --no-warnings\n",
                Some(("/usr/bin/env", Some("node"))),
            ),
            (
                b"#!/usr/bin/env -S -i PATH=/x deno run\n",
                Some(("/usr/bin/env", Some("deno"))),
            ),
            (b"#!/usr/bin/env\n", Some(("/usr/bin/env", None))),
            (b"\x7fELF\x02\x01", None),
            (b"#!\n", None),
        ];
        for (head, want) in cases {
            let got = shebang_line(head).and_then(|l| interpreter_of(&l));
            let want = want.map(|(i, t)| (i.to_owned(), t.map(str::to_owned)));
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(head));
        }
        // Linux passes the rest of the line as one argument: without -S, env looks for a
        // program named `node --flag`.
        let line = shebang_line(b"#!/usr/bin/env node --flag\n").expect("a line");
        assert_eq!(
            interpreter_of(&line),
            Some(("/usr/bin/env".to_owned(), Some("node --flag".to_owned())))
        );
    }

    #[test]
    fn a_shell_c_script_is_found_among_the_shells_options() {
        for (argv, want) in [
            (words(&["sh", "-c", "npm test"]), Some("npm test")),
            (words(&["/bin/bash", "-euc", "x"]), Some("x")),
            (words(&["bash", "-o", "pipefail", "-c", "y"]), Some("y")),
            (words(&["bash", "-e", "-c", "z", "name"]), Some("z")),
            (words(&["bash", "script.sh"]), None),
            (words(&["bash", "-e", "script.sh"]), None),
            (words(&["node", "-c", "x"]), None),
            (words(&["sh"]), None),
        ] {
            assert_eq!(shell_script(&argv), want, "{argv:?}");
        }
    }

    #[test]
    fn the_programs_of_a_script_are_the_first_plain_words_of_its_commands() {
        for (script, want) in [
            ("npm ci && npm test", vec!["npm", "npm"]),
            ("exit 0", vec![]),
            ("echo unit >> $HOME/runs.log", vec![]),
            (
                "cd web; NODE_ENV=test npx vitest run | tee out",
                vec!["npx", "tee"],
            ),
            (
                "if grep -q v1 f; then node a.js; else exec python3 b.py; fi",
                vec!["grep", "node", "python3"],
            ),
            ("env -i PATH=/bin mytool --x", vec!["env", "mytool"]),
            ("$TOOL run; `which x`", vec!["which"]),
            ("./scripts/t.sh 'a; b' \"c && d\"", vec!["./scripts/t.sh"]),
            ("# a comment\ncargo test # and another", vec!["cargo"]),
            ("{ make; } 2>&1", vec!["make"]),
            ("for x in a b; do jq . $x; done", vec!["jq"]),
            ("> out.txt printf x", vec![]),
            ("2>/dev/null make check", vec!["make"]),
        ] {
            assert_eq!(script_commands(script), want, "{script:?}");
        }
    }

    /// Read with the shell's own rules (`bootstrap::shell`), where the reader this one
    /// replaced split words at blanks and quotes by hand: a quoted word is one word, a
    /// here-document's body runs nothing, and a command substitution runs its programs
    /// wherever it is, double quotes included.
    #[test]
    fn a_script_is_read_with_the_shell_s_rules() {
        for (script, want) in [
            // Was `my`: the quote trimmed off the first half of one word.
            ("'my tool' --x; make", vec!["make"]),
            // Was `cat`, `rm` and `EOF`.
            ("cat <<EOF\nrm -rf x\nEOF\nnode a.js", vec!["cat", "node"]),
            // Was nothing: the substitution was inside double quotes.
            ("echo \"$(which node)\"", vec!["which"]),
            ("X=$(git rev-parse HEAD) make", vec!["make", "git"]),
            ("exec \"$(dirname \"$0\")/run.sh\"", vec!["dirname"]),
            ("npm test \\\n  && make", vec!["npm", "make"]),
            ("a=1 \"b=2\" c", vec![]),
            ("jest 2>&1 | tee out", vec!["jest", "tee"]),
            // Nested substitutions are read a bounded depth down.
            ("echo $(echo $(cat f))", vec!["cat"]),
        ] {
            assert_eq!(script_commands(script), want, "{script:?}");
        }
        let deep = format!("{}x{}", "$(echo ".repeat(100_000), ")".repeat(100_000));
        assert_eq!(script_commands(&deep), Vec::<String>::new());
    }

    /// A `#!` naming a FIFO (or a repository program that is one) is no file to read: the
    /// observation goes on, with no digest for it, instead of waiting for a writer forever.
    #[test]
    fn a_fifo_for_an_interpreter_never_blocks_the_observation() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tempdir");
        let fifo = tmp.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo (coreutils)");
        assert!(made.success());
        std::os::unix::fs::symlink("fifo", tmp.path().join("local")).expect("symlink");
        let script = tmp.path().join("tool");
        fs_err::write(&script, format!("#!{}\n", fifo.display())).expect("write");
        fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let dir = tmp.path().to_path_buf();
        let (done, got) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut programs = Programs::new(None);
            let at = Lookup {
                repo_dir: Some(&dir),
                path: None,
                files: &WorkingTree,
            };
            let absolute = programs.identify(&Program::Absolute(dir.join("tool")), &[], at);
            let relative = programs.identify(&Program::InRepository("local".into()), &[], at);
            let _ = done.send((absolute, relative));
        });
        let (absolute, relative) = got
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("identifying returns without a writer on the FIFO");
        assert_eq!(absolute.runs.len(), 1, "{absolute:?}");
        assert_eq!(absolute.runs[0].digest, Digest::default());
        assert_eq!(relative.digest, Digest::default());
    }

    #[test]
    fn a_remembered_digest_is_used_only_while_the_file_is_unchanged() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tempdir");
        let store_dir = tmp.path().join(crate::store::DIR);
        fs_err::create_dir_all(&store_dir).expect("mkdir");
        let store = Store::open_read_only(tmp.path());
        let tool = tmp.path().join("tool");
        fs_err::write(&tool, "#!/bin/sh\necho one\n").expect("write");
        fs_err::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // Old enough to be remembered.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        fs_err::File::options()
            .write(true)
            .open(&tool)
            .expect("open")
            .set_modified(old)
            .expect("set mtime");
        // A link an alternatives system retargets, between two files of one size and age.
        let other = tmp.path().join("other");
        fs_err::write(&other, "#!/bin/sh\necho 1.0\n").expect("write");
        fs_err::File::options()
            .write(true)
            .open(&other)
            .expect("open")
            .set_modified(old)
            .expect("set mtime");
        let link = tmp.path().join("current");
        std::os::unix::fs::symlink(&tool, &link).expect("link");
        // The change time cannot be set back: wait until it is two seconds old.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let mut known = Known::load(Some(&store));
        assert_eq!(known.digest(&link).0, Digest::of(b"#!/bin/sh\necho one\n"));
        fs_err::remove_file(&link).expect("unlink");
        std::os::unix::fs::symlink(&other, &link).expect("relink");
        assert_eq!(
            known.digest(&link).0,
            Digest::of(b"#!/bin/sh\necho 1.0\n"),
            "the link leads to another file now"
        );
        let mut known = Known::load(Some(&store));
        let (first, shebang) = known.digest(&tool);
        assert_eq!(first, Digest::of(b"#!/bin/sh\necho one\n"));
        assert_eq!(shebang.as_deref(), Some("/bin/sh"));
        assert!(known.changed, "remembered");
        known.save();
        let saved = fs_err::read_to_string(store_dir.join(KNOWN_FILE)).expect("saved");
        assert!(saved.contains(&first.to_hex()), "{saved}");

        // A remembered digest whose stat data still match is used as it is: forged here to
        // show it is not read again.
        let mut forged: BTreeMap<PathBuf, Entry> = serde_json::from_str(&saved).expect("json");
        forged.get_mut(&tool).expect("the tool").digest = Digest::of(b"forged").to_hex();
        fs_err::write(
            store_dir.join(KNOWN_FILE),
            serde_json::to_vec(&forged).expect("json"),
        )
        .expect("write");
        let (used, shebang) = Known::load(Some(&store)).digest(&tool);
        assert_eq!(used, Digest::of(b"forged"));
        assert_eq!(shebang.as_deref(), Some("/bin/sh"), "remembered with it");

        // The same size, the old modification time put back: the change time moved, and the
        // file is read again.
        fs_err::write(&tool, "#!/bin/sh\necho two\n").expect("rewrite");
        fs_err::File::options()
            .write(true)
            .open(&tool)
            .expect("open")
            .set_modified(old)
            .expect("set mtime");
        let mut known = Known::load(Some(&store));
        let (again, _) = known.digest(&tool);
        assert_eq!(again, Digest::of(b"#!/bin/sh\necho two\n"));
        assert!(!known.changed, "too fresh to be remembered");

        // Without a store nothing is written, and a damaged file is no digest.
        let mut none = Known::load(None);
        assert_eq!(none.digest(&tool).0, again);
        none.save();
        fs_err::write(store_dir.join(KNOWN_FILE), "{not json").expect("damage");
        assert_eq!(Known::load(Some(&store)).digest(&tool).0, again);
    }

    /// The table is replaced through the store's write-then-rename: its temporary file is in
    /// `tmp/`, which the store sweeps, never beside the table, and a save that cannot write
    /// there leaves the old table whole (it is a cache: the next run hashes again).
    #[test]
    fn the_table_is_replaced_through_the_store() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store_dir = tmp.path().join(crate::store::DIR);
        fs_err::create_dir_all(&store_dir).expect("mkdir");
        let store = Store::open_read_only(tmp.path());
        let tool = tmp.path().join("tool");
        fs_err::write(&tool, "#!/bin/sh\n").expect("write");
        let entry = |digest: &[u8]| Entry {
            stat: Stat::of(&fs_err::metadata(&tool).expect("stat")),
            digest: Digest::of(digest).to_hex(),
            shebang: None,
        };
        let save = |digest: &[u8]| {
            let mut known = Known::load(Some(&store));
            known.entries.insert(tool.clone(), entry(digest));
            known.changed = true;
            known.save();
        };
        save(b"one");
        let names = |dir: &Path| -> Vec<String> {
            let mut names: Vec<String> = fs_err::read_dir(dir)
                .expect("read_dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&store_dir), [KNOWN_FILE, "tmp"]);
        assert!(
            names(&store_dir.join("tmp")).is_empty(),
            "renamed into place"
        );
        let read = || Known::load(Some(&store)).entries[&tool].digest.clone();
        assert_eq!(read(), Digest::of(b"one").to_hex());
        save(b"two");
        assert_eq!(read(), Digest::of(b"two").to_hex());
        // `tmp/` cannot be made: nothing is written, beside the table or anywhere.
        fs_err::remove_dir(store_dir.join("tmp")).expect("rmdir");
        fs_err::write(store_dir.join("tmp"), "not a directory").expect("write");
        save(b"three");
        assert_eq!(read(), Digest::of(b"two").to_hex(), "the old table, whole");
        assert_eq!(names(&store_dir), [KNOWN_FILE, "tmp"]);
    }
}
