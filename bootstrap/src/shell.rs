//! Reading shell text as text, never running it. This is the workspace's one shell
//! tokenizer: bootstrap reads package scripts with it, and the application reads a shell's
//! `-c` script with it to find the programs the script starts (`observe/programs.rs`).
//!
//! - [`tokens`] splits a script as a POSIX shell's token recognition does (XCU 2.3):
//!   `'…'` keeps every character, `"…"` keeps all but `$`, `` ` `` and `\`, and a
//!   backslash there escapes only `$`, `` ` ``, `"`, `\` and a newline; an unquoted
//!   backslash escapes the next character, and a backslash before a newline joins the
//!   lines; `#` at the start of a word starts a comment; `&&`, `||`, `;;`, `;`, `&`, `|`,
//!   `(`, `)` and newlines are control operators; `<`, `>`, `>>`, `<&`, `>&`, `<>`, `>|`,
//!   `<<`, `<<-` are redirections (digits right before one are its descriptor, not a word),
//!   and a here-document's body is skipped. Expansions (`$NAME`, `${…}`, `$(…)`, `$((…))`,
//!   backticks) are kept inside their word, which is then not [`Word::literal`]; the
//!   scripts of its command substitutions are handed out as text
//!   ([`Word::substitutions`]). Bash's `&>` is two operators, as in a POSIX `sh`.
//! - [`Script`] groups the tokens into simple commands (their words, redirections left
//!   out) and how each is joined to the next.
//! - The rest is bootstrap's: the program behind launchers, whether a script is risky
//!   (the rules of Change Loop's Node.js runtime), and whether it uses shell
//!   metacharacters (which make suggested `inputs` unsafe to derive).
//!
//! Unterminated quotes and substitutions run to the end of the text; nothing here fails.

/// A word of a script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// Its value after quote removal: what the shell passes, when the word is
    /// [`literal`](Word::literal) (an expansion is kept as written).
    pub value: String,
    /// Its text as written.
    pub raw: String,
    /// Whether the shell expands nothing in it: no parameter expansion, command
    /// substitution or arithmetic, no unquoted pattern character (`*`, `?`, `[`) and no
    /// leading unquoted `~`.
    pub literal: bool,
    /// Whether any part of it is quoted or escaped: then it is never a reserved word.
    pub quoted: bool,
    /// The scripts of its command substitutions (`$(…)`, `` `…` ``), in order.
    pub substitutions: Vec<String>,
}

/// A token of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A word.
    Word(Word),
    /// A control operator: `&&`, `||`, `;;`, `;`, `&`, `|`, `(`, `)`, or a newline (`"\n"`).
    Control(&'static str),
    /// A redirection operator (`<`, `>`, `>>`, `<&`, `>&`, `<>`, `>|`, `<<`, `<<-`); the
    /// descriptor digits before it are part of it, and the next word is its target.
    Redirect(&'static str),
}

/// The operators, longest first, and whether each is a redirection.
const OPERATORS: [(&str, bool); 17] = [
    ("<<-", true),
    ("&&", false),
    ("||", false),
    (";;", false),
    ("<<", true),
    (">>", true),
    ("<&", true),
    (">&", true),
    ("<>", true),
    (">|", true),
    ("&", false),
    ("|", false),
    (";", false),
    ("(", false),
    (")", false),
    ("<", true),
    (">", true),
];

/// The operator that starts at `at`, if one does.
fn operator_at(chars: &[char], at: usize) -> Option<(&'static str, bool)> {
    OPERATORS.into_iter().find(|(op, _)| {
        op.chars()
            .enumerate()
            .all(|(k, c)| chars.get(at + k) == Some(&c))
    })
}

/// Splits `text` into tokens (module documentation).
pub fn tokens(text: &str) -> Vec<Token> {
    Lexer {
        chars: text.chars().collect(),
        at: 0,
        out: Vec::new(),
        word: None,
        heredocs: Vec::new(),
        delimiter_next: None,
    }
    .run()
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    out: Vec<Token>,
    word: Option<Word>,
    /// Here-documents whose bodies start after the next newline: (delimiter, strip tabs).
    heredocs: Vec<(String, bool)>,
    /// After `<<` or `<<-`: the next word is a delimiter (whether tabs are stripped).
    delimiter_next: Option<bool>,
}

impl Lexer {
    fn run(mut self) -> Vec<Token> {
        while let Some(&c) = self.chars.get(self.at) {
            match c {
                '\\' if self.chars.get(self.at + 1) == Some(&'\n') => self.at += 2,
                '\\' => {
                    let word = self.word();
                    word.quoted = true;
                    word.raw.push('\\');
                    self.at += 1;
                    if let Some(&next) = self.chars.get(self.at) {
                        let word = self.word();
                        word.raw.push(next);
                        word.value.push(next);
                        self.at += 1;
                    }
                }
                '\'' => self.single_quoted(),
                '"' => self.double_quoted(),
                '$' => self.dollar(false),
                '`' => self.backticks(),
                '#' if self.word.is_none() => {
                    while self.chars.get(self.at).is_some_and(|c| *c != '\n') {
                        self.at += 1;
                    }
                }
                '\n' => {
                    self.end_word();
                    self.out.push(Token::Control("\n"));
                    self.at += 1;
                    self.skip_heredocs();
                }
                ' ' | '\t' => {
                    self.end_word();
                    self.at += 1;
                }
                _ => {
                    if let Some((op, redirect)) = operator_at(&self.chars, self.at) {
                        // Digits right before a redirection are its descriptor.
                        let descriptor = redirect
                            && self.word.as_ref().is_some_and(|w| {
                                !w.quoted && w.raw.chars().all(|c| c.is_ascii_digit())
                            });
                        if descriptor {
                            self.word = None;
                        } else {
                            self.end_word();
                        }
                        self.at += op.len();
                        if redirect {
                            self.out.push(Token::Redirect(op));
                            if op.starts_with("<<") {
                                self.delimiter_next = Some(op == "<<-");
                            }
                        } else {
                            self.delimiter_next = None;
                            self.out.push(Token::Control(op));
                        }
                        continue;
                    }
                    let starts = self.word.is_none();
                    let word = self.word();
                    if matches!(c, '*' | '?' | '[') || c == '~' && starts {
                        word.literal = false;
                    }
                    word.raw.push(c);
                    word.value.push(c);
                    self.at += 1;
                }
            }
        }
        self.end_word();
        self.out
    }

    /// The word being read, started when there is none.
    fn word(&mut self) -> &mut Word {
        self.word.get_or_insert_with(|| Word {
            literal: true,
            ..Word::default()
        })
    }

    fn end_word(&mut self) {
        if let Some(word) = self.word.take() {
            if let Some(strip) = self.delimiter_next.take() {
                self.heredocs.push((word.value.clone(), strip));
            }
            self.out.push(Token::Word(word));
        }
    }

    /// After a newline: the bodies of the here-documents started on the line before.
    fn skip_heredocs(&mut self) {
        for (delimiter, strip) in std::mem::take(&mut self.heredocs) {
            while self.at < self.chars.len() {
                let end = (self.at..self.chars.len())
                    .find(|&i| self.chars[i] == '\n')
                    .unwrap_or(self.chars.len());
                let line: String = self.chars[self.at..end].iter().collect();
                self.at = end + 1;
                let line = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter {
                    break;
                }
            }
        }
        self.at = self.at.min(self.chars.len());
    }

    fn single_quoted(&mut self) {
        let start = self.at;
        let end = (start + 1..self.chars.len())
            .find(|&i| self.chars[i] == '\'')
            .unwrap_or(self.chars.len());
        let inner: String = self.chars[start + 1..end].iter().collect();
        let raw: String = self.chars[start..(end + 1).min(self.chars.len())]
            .iter()
            .collect();
        self.at = end + 1;
        let word = self.word();
        word.quoted = true;
        word.value.push_str(&inner);
        word.raw.push_str(&raw);
    }

    fn double_quoted(&mut self) {
        let start = self.at;
        self.word().quoted = true;
        self.at += 1;
        while let Some(&c) = self.chars.get(self.at) {
            match c {
                '"' => {
                    self.at += 1;
                    break;
                }
                '\\' => match self.chars.get(self.at + 1) {
                    Some('\n') => self.at += 2,
                    Some(&next @ ('$' | '`' | '"' | '\\')) => {
                        self.word().value.push(next);
                        self.at += 2;
                    }
                    _ => {
                        self.word().value.push('\\');
                        self.at += 1;
                    }
                },
                '$' => {
                    // Its raw text is added with the whole quoted part below.
                    let raw = self.word().raw.len();
                    self.dollar(true);
                    self.word().raw.truncate(raw);
                }
                '`' => {
                    let raw = self.word().raw.len();
                    self.backticks();
                    self.word().raw.truncate(raw);
                }
                _ => {
                    self.word().value.push(c);
                    self.at += 1;
                }
            }
        }
        let raw: String = self.chars[start..self.at.min(self.chars.len())]
            .iter()
            .collect();
        self.word().raw.push_str(&raw);
    }

    /// `$` and what follows it: an expansion (kept as written, the word no longer literal)
    /// or a plain `$`.
    fn dollar(&mut self, in_double_quotes: bool) {
        let start = self.at;
        let next = self.chars.get(start + 1).copied();
        let end = match next {
            Some('(') if self.chars.get(start + 2) == Some(&'(') => {
                // Arithmetic: nothing runs.
                Some(closing(&self.chars, start + 1, '(', ')'))
            }
            Some('(') => {
                let close = closing(&self.chars, start + 1, '(', ')');
                let inner: String = self.chars[start + 2..close.min(self.chars.len())]
                    .iter()
                    .collect();
                self.word().substitutions.push(inner);
                Some(close)
            }
            Some('{') => Some(closing(&self.chars, start + 1, '{', '}')),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => Some(
                (start + 1..self.chars.len())
                    .find(|&i| !(self.chars[i].is_ascii_alphanumeric() || self.chars[i] == '_'))
                    .unwrap_or(self.chars.len())
                    - 1,
            ),
            Some(c) if c.is_ascii_digit() || "@*#?-$!".contains(c) => Some(start + 1),
            // Bash's `$'…'`: escapes this reading does not decode.
            Some('\'') if !in_double_quotes => Some(
                (start + 2..self.chars.len())
                    .find(|&i| self.chars[i] == '\'' && self.chars[i - 1] != '\\')
                    .unwrap_or(self.chars.len()),
            ),
            _ => None,
        };
        let end = end.map_or(start, |e| e.min(self.chars.len().saturating_sub(1)));
        let text: String = self.chars[start..=end].iter().collect();
        let word = self.word();
        if end > start {
            word.literal = false;
        }
        word.value.push_str(&text);
        word.raw.push_str(&text);
        self.at = end + 1;
    }

    /// `` `…` ``: a command substitution, its script with the backslashes before `$`,
    /// `` ` `` and `\` removed.
    fn backticks(&mut self) {
        let start = self.at;
        let mut inner = String::new();
        let mut at = start + 1;
        while let Some(&c) = self.chars.get(at) {
            match c {
                '`' => break,
                '\\' => match self.chars.get(at + 1) {
                    Some(&next @ ('$' | '`' | '\\')) => {
                        inner.push(next);
                        at += 2;
                    }
                    _ => {
                        inner.push('\\');
                        at += 1;
                    }
                },
                _ => {
                    inner.push(c);
                    at += 1;
                }
            }
        }
        let text: String = self.chars[start..(at + 1).min(self.chars.len())]
            .iter()
            .collect();
        self.at = at + 1;
        let word = self.word();
        word.literal = false;
        word.substitutions.push(inner);
        word.value.push_str(&text);
        word.raw.push_str(&text);
    }
}

/// The index of the `close` that matches the `open` at `at` (quotes and escapes skipped),
/// or the text's length when there is none.
fn closing(chars: &[char], at: usize, open: char, close: char) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => i += 1,
            '\'' => {
                i = (i + 1..chars.len())
                    .find(|&k| chars[k] == '\'')
                    .unwrap_or(chars.len());
            }
            '"' => {
                let mut k = i + 1;
                while let Some(&q) = chars.get(k) {
                    match q {
                        '\\' => k += 1,
                        '"' => break,
                        _ => {}
                    }
                    k += 1;
                }
                i = k;
            }
            c if c == open => depth += 1,
            c if c == close => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// How two commands of a script are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joiner {
    /// `&&`
    And,
    /// `||`, `;`, `|`, `&`, a newline or a parenthesis.
    Other,
}

/// A script split into simple commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// Each command's words, its redirections and their targets left out.
    pub commands: Vec<Vec<Word>>,
    /// How command `i` is joined to command `i + 1`.
    pub joiners: Vec<Joiner>,
}

impl Script {
    /// Splits `text` into simple commands ([`tokens`]).
    pub fn parse(text: &str) -> Self {
        Self::of_tokens(&tokens(text))
    }

    /// Groups tokens into simple commands: a control operator ends one.
    pub fn of_tokens(tokens: &[Token]) -> Self {
        let mut commands = Vec::new();
        let mut joiners = Vec::new();
        let mut words: Vec<Word> = Vec::new();
        let mut target_next = false;
        for token in tokens {
            match token {
                Token::Word(word) => {
                    if !std::mem::take(&mut target_next) {
                        words.push(word.clone());
                    }
                }
                Token::Redirect(_) => target_next = true,
                // A line break after an operator (`a &&` newline `b`) ends nothing.
                Token::Control("\n") if words.is_empty() => target_next = false,
                Token::Control(op) => {
                    target_next = false;
                    let joiner = if *op == "&&" {
                        Joiner::And
                    } else {
                        Joiner::Other
                    };
                    if !words.is_empty() {
                        commands.push(std::mem::take(&mut words));
                        joiners.push(joiner);
                    } else if let Some(last) = joiners.last_mut() {
                        // `a; (b)`: keep the weaker joiner.
                        if joiner == Joiner::Other {
                            *last = Joiner::Other;
                        }
                    }
                }
            }
        }
        if words.is_empty() {
            joiners.pop();
        } else {
            commands.push(words);
        }
        joiners.truncate(commands.len().saturating_sub(1));
        Self { commands, joiners }
    }

    /// Whether every command is joined by `&&`, so that the script's exit
    /// status is the last command's and arguments appended by the package
    /// manager reach exactly the last command.
    pub fn is_and_chain(&self) -> bool {
        self.joiners.iter().all(|j| *j == Joiner::And)
    }

    /// Each command's words as their values.
    pub(crate) fn values(&self) -> Vec<Vec<String>> {
        self.commands
            .iter()
            .map(|c| c.iter().map(|w| w.value.clone()).collect())
            .collect()
    }
}

/// The words of a command after leading `NAME=value` assignments and
/// launchers that only set the environment or resolve a local binary
/// (`cross-env`, `npx`, `pnpm exec`, `yarn exec`, `bunx`, `dotenv --`).
pub(crate) fn program_words(words: &[String]) -> &[String] {
    let mut rest = words;
    loop {
        match rest {
            [first, tail @ ..] if is_assignment(first) => rest = tail,
            [first, tail @ ..] if first == "cross-env" || first == "npx" || first == "bunx" => {
                rest = tail;
                while let [flag, tail @ ..] = rest {
                    if flag.starts_with('-') {
                        rest = tail;
                    } else {
                        break;
                    }
                }
            }
            [first, second, tail @ ..]
                if (first == "pnpm" || first == "yarn") && second == "exec" =>
            {
                rest = tail;
            }
            [first, tail @ ..] if first == "dotenv" => {
                rest = match tail.iter().position(|w| w == "--") {
                    Some(i) => &tail[i + 1..],
                    None => tail,
                };
            }
            _ => return rest,
        }
    }
}

/// Whether `word`, as written ([`Word::raw`]), is a `NAME=value` assignment: a name of
/// ASCII letters, digits and `_` that does not start with a digit, then `=`. A quoted `=`
/// makes a word the shell runs, never an assignment.
pub fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Why a script is risky, if it is: `sudo`, `curl` or `wget` at the start of
/// a command, `rm -rf`, command substitution (`$(` or a backtick).
pub(crate) fn risk(text: &str) -> Option<String> {
    if text.contains("$(") {
        return Some("it uses command substitution `$(`".to_owned());
    }
    if text.contains('`') {
        return Some("it uses command substitution (a backtick)".to_owned());
    }
    for command in &Script::parse(text).values() {
        let words = program_words(command);
        let Some(program) = words.first() else {
            continue;
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        if matches!(name, "sudo" | "curl" | "wget") {
            return Some(format!("a command starts with `{name}`"));
        }
        if name == "rm" {
            let flags: String = words[1..]
                .iter()
                .take_while(|w| w.starts_with('-') && !w.starts_with("--"))
                .flat_map(|w| w.chars().skip(1))
                .collect();
            let recursive = flags.contains('r') || flags.contains('R');
            let force = flags.contains('f');
            if recursive && force {
                return Some("it runs `rm -rf`".to_owned());
            }
        }
    }
    None
}

/// Whether a script uses any shell metacharacter (`;&|$`()<>"'` or a
/// backslash), which makes the files it reads impossible to list from its
/// words alone.
pub(crate) fn has_metacharacters(text: &str) -> bool {
    text.chars().any(|c| ";&|$`()<>\"'\\".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn program_name(words: &[String]) -> Option<&str> {
        program_words(words).first().map(String::as_str)
    }

    #[test]
    fn splits_commands_and_keeps_quoted_operators() {
        let s = Script::parse("tsc --noEmit && vitest run 'a && b'");
        assert_eq!(
            s.values(),
            vec![
                words(&["tsc", "--noEmit"]),
                words(&["vitest", "run", "a && b"])
            ]
        );
        assert!(s.is_and_chain());
        let s = Script::parse("jest; echo done");
        assert_eq!(s.commands.len(), 2);
        assert!(!s.is_and_chain());
        let s = Script::parse("jest | tee out.txt");
        assert!(!s.is_and_chain());
        assert!(Script::parse("vitest").is_and_chain());
    }

    /// The words of each command of `text`, as their values.
    fn commands(text: &str) -> Vec<Vec<String>> {
        Script::parse(text).values()
    }

    fn word(text: &str) -> Word {
        match tokens(text).as_slice() {
            [Token::Word(w)] => w.clone(),
            other => panic!("{text:?} is not one word: {other:?}"),
        }
    }

    /// Where the two tokenizers this one replaced disagreed (bootstrap's package-script
    /// reader and the reader of a shell's `-c` script), the shell decides: each case is
    /// what `sh` itself makes of the text.
    #[test]
    fn the_rules_the_two_readers_disagreed_on_are_the_shell_s() {
        // A backslash inside double quotes escapes only `$`, a backtick, `"`, `\` and a
        // newline; before anything else it stays (the package-script reader dropped it).
        assert_eq!(word(r#""a\b""#).value, r"a\b");
        assert_eq!(word(r#""a\$b\"c\\""#).value, r#"a$b"c\"#);
        // A backslash before a newline joins the lines.
        assert_eq!(commands("jest \\\n  --ci"), [words(&["jest", "--ci"])]);
        assert_eq!(word("ab\\\ncd").value, "abcd");
        // `#` at the start of a word is a comment, to the end of the line; inside one, not.
        assert_eq!(
            commands("jest # runs && everything\nvitest a#b"),
            [words(&["jest"]), words(&["vitest", "a#b"])]
        );
        // `2>&1`, `>&2`, `<&3` are redirections, not a command ended by `&`; the digits are
        // the descriptor and the word after the operator its target.
        let s = Script::parse("jest 2>&1 && vitest >out.txt 2>/dev/null");
        assert_eq!(s.values(), [words(&["jest"]), words(&["vitest"])]);
        assert!(s.is_and_chain(), "{s:?}");
        assert_eq!(commands("> out.txt printf x"), [words(&["printf", "x"])]);
        assert_eq!(
            commands("a 2 > f"),
            [words(&["a", "2"])],
            "a word, then a space"
        );
        // Bash's `&>` is, to a POSIX shell, `&` and then a redirection.
        assert_eq!(
            tokens("a &>f")[1..],
            [
                Token::Control("&"),
                Token::Redirect(">"),
                Token::Word(word("f"))
            ]
        );
        // A quoted word stays one word, whatever it holds.
        assert_eq!(
            commands("'my tool' \"c && d\" e\\ f"),
            [words(&["my tool", "c && d", "e f"])]
        );
        // A line break after `&&` continues the list.
        assert!(Script::parse("tsc &&\n  vitest run").is_and_chain());
        assert_eq!(commands("tsc &&\n  vitest run").len(), 2);
        // A here-document's body is no command.
        assert_eq!(
            commands("cat <<EOF && jest\nrm -rf /\nEOF\nvitest"),
            [words(&["cat"]), words(&["jest"]), words(&["vitest"])]
        );
        assert_eq!(
            commands("cat <<-'END'\n\tcurl x\n\tEND\nnode"),
            [words(&["cat"]), words(&["node"])]
        );
    }

    /// The words the tokenizer reads in a command are the arguments `sh` passes: each
    /// text below follows `printf '[%s]'` in a script `sh -c` runs, and the brackets
    /// printf writes are compared with the words read.
    #[test]
    fn the_words_read_are_the_arguments_sh_passes() {
        for text in [
            r#"plain 'single $x \ "q"' "double \$ \` \" \\ \a \x" mixed'a'"b"c"#,
            "e\\ f \\'q g\\\\h",
            "joined\\\n lines \"and\\\nquoted\"",
            "a 2>/dev/null b 2>&1 c 3>&- d 0<&0 e",
            "x # a comment 'unclosed",
            "hash#inside '#quoted'",
            "-- 'my tool' \"c && d\"",
            "heredoc <<'EOF'\n$(not run) `nor this`\nEOF",
            "tabs <<-EOF\n\tbody\n\tEOF",
            "'' \"\" empty",
        ] {
            let script = format!("printf '[%s]' {text}");
            let out = std::process::Command::new("sh")
                .args(["-c", &script])
                .output()
                .expect("sh runs");
            assert!(out.status.success(), "{script}: {out:?}");
            let commands = Script::parse(&script).values();
            assert_eq!(commands.len(), 1, "{script}: {commands:?}");
            let read: String = commands[0][2..].iter().map(|w| format!("[{w}]")).collect();
            assert_eq!(read, String::from_utf8_lossy(&out.stdout), "{script}");
        }
    }

    #[test]
    fn expansions_are_kept_in_their_word_and_command_substitutions_handed_out() {
        for (text, literal) in [
            ("plain", true),
            ("'$HOME'", true),
            ("\\$HOME", true),
            ("a$", true),
            ("$HOME", false),
            ("\"$HOME\"", false),
            ("${X:-y}", false),
            ("$1", false),
            ("$((1 + 2))", false),
            ("*.js", false),
            ("'*.js'", true),
            ("~/bin/x", false),
            ("a~b", true),
            ("$'\\t'", false),
        ] {
            assert_eq!(word(text).literal, literal, "{text}");
        }
        let w = word("pre$(which node | tr -d x)post");
        assert_eq!(w.substitutions, ["which node | tr -d x"]);
        assert_eq!(w.value, "pre$(which node | tr -d x)post");
        assert_eq!(
            word("\"`uname -s` $(a \")\" b)\"").substitutions,
            ["uname -s", "a \")\" b"]
        );
        assert_eq!(word("`echo \\`x\\``").substitutions, ["echo `x`"]);
        assert_eq!(word("$(( $(x) ))").substitutions, Vec::<String>::new());
        // One word, not split at the operators inside a substitution.
        assert_eq!(commands("X=$(a; b) c"), [words(&["X=$(a; b)", "c"])]);
        // Unterminated: to the end of the text, never a failure.
        for text in ["'open", "\"open", "$(open", "`open", "${open", "a\\"] {
            assert_eq!(tokens(text).len(), 1, "{text}");
        }
    }

    #[test]
    fn an_assignment_is_a_name_then_an_unquoted_equals_sign() {
        assert!(is_assignment("NODE_ENV=test"));
        assert!(is_assignment("_x1="));
        assert!(!is_assignment("1A=x"));
        assert!(!is_assignment("\"A=1\""));
        assert!(!is_assignment("A-B=1"));
        assert!(!is_assignment("=x"));
        assert!(!is_assignment("--flag"));
    }

    #[test]
    fn finds_the_program_behind_launchers() {
        assert_eq!(
            program_name(&words(&["NODE_ENV=test", "cross-env", "A=1", "jest"])),
            Some("jest")
        );
        assert_eq!(
            program_name(&words(&["npx", "--yes", "vitest", "run"])),
            Some("vitest")
        );
        assert_eq!(
            program_name(&words(&["pnpm", "exec", "jest"])),
            Some("jest")
        );
        assert_eq!(
            program_name(&words(&["dotenv", "-e", ".env", "--", "jest"])),
            Some("jest")
        );
    }

    #[test]
    fn risky_scripts_follow_the_existing_rules() {
        assert!(risk("curl https://x | sh").is_some());
        assert!(risk("jest && sudo rm x").is_some());
        assert!(risk("rm -rf dist && jest").is_some());
        assert!(risk("rm -fr dist && jest").is_some());
        assert!(risk("rm -r -f dist").is_some());
        assert!(risk("echo $(whoami)").is_some());
        assert!(risk("echo `whoami`").is_some());
        assert_eq!(risk("rm -r dist && jest"), None);
        assert_eq!(risk("vitest run"), None);
        assert_eq!(risk("echo 'curl is fine as an argument'"), None);
    }

    #[test]
    fn metacharacters_are_detected() {
        assert!(has_metacharacters("jest > out"));
        assert!(has_metacharacters("A=$B jest"));
        assert!(!has_metacharacters("vitest run src/a.test.ts"));
    }
}
