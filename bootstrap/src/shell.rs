//! Reading package scripts as text, never running them: splitting a script
//! into the commands a POSIX shell would run, and deciding whether it is
//! risky (the rules of Change Loop's Node.js runtime) or uses shell
//! metacharacters (which make suggested `inputs` unsafe to derive).

/// How two commands of a script are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Joiner {
    /// `&&`
    And,
    /// `||`, `;`, `|`, `&`, a newline or a parenthesis.
    Other,
}

/// A script split into commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Script {
    /// Each command's words, quotes removed.
    pub(crate) commands: Vec<Vec<String>>,
    /// How command `i` is joined to command `i + 1`.
    pub(crate) joiners: Vec<Joiner>,
}

impl Script {
    /// Splits `text` the way a shell tokenises it, roughly: quotes group,
    /// backslashes escape, and `&&`, `||`, `;`, `|`, `&`, newlines and
    /// parentheses outside quotes end a command.
    pub(crate) fn parse(text: &str) -> Self {
        let mut commands = Vec::new();
        let mut joiners = Vec::new();
        let mut words: Vec<String> = Vec::new();
        let mut word = String::new();
        let mut in_word = false;
        let mut chars = text.chars().peekable();
        let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
            if *in_word {
                words.push(std::mem::take(word));
                *in_word = false;
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    in_word = true;
                    for q in chars.by_ref() {
                        if q == '\'' {
                            break;
                        }
                        word.push(q);
                    }
                }
                '"' => {
                    in_word = true;
                    while let Some(q) = chars.next() {
                        match q {
                            '"' => break,
                            '\\' => {
                                if let Some(n) = chars.next() {
                                    word.push(n);
                                }
                            }
                            _ => word.push(q),
                        }
                    }
                }
                '\\' => {
                    in_word = true;
                    if let Some(n) = chars.next() {
                        word.push(n);
                    }
                }
                '&' | '|' | ';' | '\n' | '(' | ')' => {
                    end_word(&mut words, &mut word, &mut in_word);
                    let joiner = if c == '&' && chars.peek() == Some(&'&') {
                        chars.next();
                        Joiner::And
                    } else {
                        if c == '|' && chars.peek() == Some(&'|') {
                            chars.next();
                        }
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
                c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
                _ => {
                    in_word = true;
                    word.push(c);
                }
            }
        }
        end_word(&mut words, &mut word, &mut in_word);
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
    pub(crate) fn is_and_chain(&self) -> bool {
        self.joiners.iter().all(|j| *j == Joiner::And)
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

fn is_assignment(word: &str) -> bool {
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
    let script = Script::parse(text);
    for command in &script.commands {
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
            s.commands,
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
