//! `playwright.config.{ts,js,mjs,cjs,mts,cts}`, read as text: no JavaScript
//! runs. A small lexer drops comments and keeps string literals; the
//! `projects` array's `name`s and the `webServer` entries' `command`, `url`,
//! `port` and `reuseExistingServer` are read from the token stream. A value
//! that is computed (a variable, a template with `${…}`) is reported as
//! unknown rather than guessed.

use std::path::Path;

use serde_json::Value;

use super::node::NodeFacts;
use crate::model::Confidence;
use crate::proposal::{Proposal, argv};

/// The config file names Playwright looks for.
pub(crate) const CONFIG_FILES: [&str; 6] = [
    "playwright.config.ts",
    "playwright.config.js",
    "playwright.config.mjs",
    "playwright.config.cjs",
    "playwright.config.mts",
    "playwright.config.cts",
];

/// Browsers, a dev server and every project in one run: ten minutes.
const TIMEOUT_MS: u64 = 600_000;

/// What one config file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlaywrightConfig {
    /// The file name.
    pub(crate) file: &'static str,
    /// Project names; `None` when there is no `projects` array, and a `None`
    /// entry for a name that is computed.
    pub(crate) projects: Option<Vec<Option<String>>>,
    /// The `webServer` entries.
    pub(crate) web_servers: Vec<WebServer>,
}

/// One `webServer` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct WebServer {
    /// `command`, when literal.
    pub(crate) command: Option<String>,
    /// `url`, when literal.
    pub(crate) url: Option<String>,
    /// `port`, when literal.
    pub(crate) port: Option<String>,
    /// `reuseExistingServer`, as written.
    pub(crate) reuse: Option<String>,
}

/// Reads every Playwright config in `dir`.
pub(crate) fn read(dir: &Path, shown: &str, warnings: &mut Vec<String>) -> Vec<PlaywrightConfig> {
    let mut out = Vec::new();
    for file in CONFIG_FILES {
        let path = dir.join(file);
        if !path.is_file() {
            continue;
        }
        match fs_err::read_to_string(&path) {
            Ok(text) => out.push(parse(file, &text)),
            Err(e) => warnings.push(format!("`{shown}{file}` could not be read ({e})")),
        }
    }
    out
}

/// Parses one config's text.
pub(crate) fn parse(file: &'static str, text: &str) -> PlaywrightConfig {
    let tokens = lex(text);
    PlaywrightConfig {
        file,
        projects: projects(&tokens),
        web_servers: web_servers(&tokens),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// A string literal; `None` when it interpolates.
    Str(Option<String>),
    Num(String),
    Punct(char),
}

fn lex(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '\'' || c == '"' || c == '`' {
            let mut s = String::new();
            let mut interpolates = false;
            let mut depth = 0usize;
            i += 1;
            while i < chars.len() {
                let d = chars[i];
                if d == '\\' {
                    if let Some(n) = chars.get(i + 1) {
                        s.push(match n {
                            'n' => '\n',
                            't' => '\t',
                            other => *other,
                        });
                    }
                    i += 2;
                    continue;
                }
                if c == '`' && d == '$' && chars.get(i + 1) == Some(&'{') {
                    interpolates = true;
                    depth += 1;
                    i += 2;
                    continue;
                }
                if depth > 0 {
                    if d == '{' {
                        depth += 1;
                    } else if d == '}' {
                        depth -= 1;
                    }
                    i += 1;
                    continue;
                }
                if d == c {
                    break;
                }
                s.push(d);
                i += 1;
            }
            i += 1;
            out.push(Tok::Str((!interpolates).then_some(s)));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            out.push(Tok::Num(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

fn is_key(tok: &Tok, key: &str) -> bool {
    match tok {
        Tok::Ident(s) => s == key,
        Tok::Str(Some(s)) => s == key,
        _ => false,
    }
}

/// The index just after `key :` for the first occurrence of the key.
fn value_of(tokens: &[Tok], key: &str) -> Option<usize> {
    (0..tokens.len().saturating_sub(1))
        .find(|&i| is_key(&tokens[i], key) && tokens[i + 1] == Tok::Punct(':'))
        .map(|i| i + 2)
}

/// The index of the bracket closing the one at `open`.
fn closing(tokens: &[Tok], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, tok) in tokens.iter().enumerate().skip(open) {
        match tok {
            Tok::Punct('[' | '{' | '(') => depth += 1,
            Tok::Punct(']' | '}' | ')') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// The objects directly inside the array at `open`: (start, end) indices.
fn objects_in(tokens: &[Tok], open: usize) -> Vec<(usize, usize)> {
    let end = closing(tokens, open);
    let mut out = Vec::new();
    let mut i = open + 1;
    while i < end {
        if tokens[i] == Tok::Punct('{') {
            let close = closing(tokens, i);
            out.push((i, close));
            i = close + 1;
        } else if matches!(tokens[i], Tok::Punct('[' | '(')) {
            i = closing(tokens, i) + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The value of `key` among the direct members of the object `(start, end)`:
/// `Ok(Some(text))` for a literal, `Ok(None)` when absent, `Err(raw)` for an
/// expression (shown as written, roughly).
fn member(
    tokens: &[Tok],
    (start, end): (usize, usize),
    key: &str,
) -> Result<Option<String>, String> {
    let mut i = start + 1;
    while i < end {
        match &tokens[i] {
            Tok::Punct('{' | '[' | '(') => i = closing(tokens, i) + 1,
            tok if is_key(tok, key) && tokens.get(i + 1) == Some(&Tok::Punct(':')) => {
                let value = i + 2;
                let mut stop = value;
                while stop < end && tokens[stop] != Tok::Punct(',') {
                    if matches!(tokens[stop], Tok::Punct('{' | '[' | '(')) {
                        stop = closing(tokens, stop);
                    }
                    stop += 1;
                }
                return match &tokens[value..stop.min(end)] {
                    [Tok::Str(Some(s))] => Ok(Some(s.clone())),
                    [Tok::Num(n)] => Ok(Some(n.clone())),
                    [Tok::Ident(b)] if b == "true" || b == "false" => Ok(Some(b.clone())),
                    raw => Err(show_tokens(raw)),
                };
            }
            _ => i += 1,
        }
    }
    Ok(None)
}

fn show_tokens(tokens: &[Tok]) -> String {
    let mut out = String::new();
    for tok in tokens {
        match tok {
            Tok::Ident(s) | Tok::Num(s) => {
                if out.ends_with(|c: char| c.is_alphanumeric()) {
                    out.push(' ');
                }
                out.push_str(s);
            }
            Tok::Str(Some(s)) => out.push_str(&format!("'{s}'")),
            Tok::Str(None) => out.push_str("`…`"),
            Tok::Punct(c) => out.push(*c),
        }
    }
    out
}

fn projects(tokens: &[Tok]) -> Option<Vec<Option<String>>> {
    let at = value_of(tokens, "projects")?;
    if tokens.get(at) != Some(&Tok::Punct('[')) {
        return Some(vec![None]);
    }
    Some(
        objects_in(tokens, at)
            .into_iter()
            .map(|object| member(tokens, object, "name").ok().flatten())
            .collect(),
    )
}

fn web_servers(tokens: &[Tok]) -> Vec<WebServer> {
    let Some(at) = value_of(tokens, "webServer") else {
        return Vec::new();
    };
    let objects = match tokens.get(at) {
        Some(Tok::Punct('{')) => vec![(at, closing(tokens, at))],
        Some(Tok::Punct('[')) => objects_in(tokens, at),
        _ => return vec![WebServer::default()],
    };
    objects
        .into_iter()
        .map(|object| {
            let get = |key| member(tokens, object, key).ok().flatten();
            WebServer {
                command: get("command"),
                url: get("url"),
                port: get("port"),
                reuse: match member(tokens, object, "reuseExistingServer") {
                    Ok(v) => v,
                    Err(raw) => Some(raw),
                },
            }
        })
        .collect()
}

/// Proposals for `browser`.
pub(crate) fn browser(node: Option<&NodeFacts>, configs: &[PlaywrightConfig]) -> Vec<Proposal> {
    let dep = node.and_then(|n| n.dep("@playwright/test").or_else(|| n.dep("playwright")));
    let Some(node) = node else {
        return configs
            .iter()
            .map(|c| {
                Proposal::refused(
                    format!("{} without package.json", c.file),
                    vec![format!(
                        "{} exists but there is no package.json to own and lock Playwright",
                        c.file
                    )],
                )
            })
            .collect();
    };
    if configs.is_empty() && dep.is_none() {
        return Vec::new();
    }
    let several = configs.len() > 1;
    let mut out = Vec::new();
    let base = |config: Option<&PlaywrightConfig>| {
        let mut args = argv(&["test", "--reporter=json"]);
        if several && let Some(c) = config {
            args.push(format!("--config={}", c.file));
        }
        let mut p = Proposal::new(
            Confidence::High,
            "playwright",
            node.pm.exec("playwright", &args),
            "playwright",
        )
        .field("inputMode", Value::String("browser-automation".to_owned()))
        .field("timeoutMs", Value::from(TIMEOUT_MS));
        p.evidence.extend(dep.clone());
        p.evidence.push(node.pm_evidence.clone());
        p.evidence.push(
            "runs playwright test with `--reporter=json` (proofgraph points PLAYWRIGHT_JSON_OUTPUT_FILE at its report); every test proving a claim needs a `claim` annotation".to_owned(),
        );
        if dep.is_none() {
            p.grade = Confidence::Review;
            p.evidence.push(
                "neither `@playwright/test` nor `playwright` is a dependency: the project must own and lock the version it runs".to_owned(),
            );
        }
        if !node.pm_certain {
            p.grade = Confidence::Review;
            p.evidence
                .push("the package manager is uncertain (see warnings)".to_owned());
        }
        p
    };
    if configs.is_empty() {
        let mut p = base(None).graded(Confidence::Review);
        p.evidence
            .push("no playwright.config.*: playwright test would run with its defaults".to_owned());
        out.push(p);
        return out;
    }
    for config in configs {
        let mut p = base(Some(config));
        if several {
            p.grade = Confidence::Ambiguous;
            p.label = format!("playwright with {}", config.file);
        }
        p.evidence.extend(config_facts(config));
        out.push(p);
    }
    out
}

fn config_facts(config: &PlaywrightConfig) -> Vec<String> {
    let file = config.file;
    let mut out = Vec::new();
    match &config.projects {
        None => out.push(format!(
            "{file} declares no projects: one default project runs"
        )),
        Some(names) => {
            let shown: Vec<String> = names
                .iter()
                .map(|n| {
                    n.as_ref()
                        .map_or("(computed)".to_owned(), |n| format!("`{n}`"))
                })
                .collect();
            if names.len() == 1 {
                out.push(format!("{file} project {}", shown.join(", ")));
            } else {
                out.push(format!(
                    "{file} projects {}: one run runs them all; set `project` to prove with one",
                    shown.join(", ")
                ));
            }
        }
    }
    for server in &config.web_servers {
        let command = server
            .command
            .as_ref()
            .map_or("(computed)".to_owned(), |c| format!("`{c}`"));
        let target = match (&server.url, &server.port) {
            (Some(url), _) => format!("waits for {url}"),
            (None, Some(port)) => format!("waits for port {port}"),
            (None, None) => "waits for a computed address".to_owned(),
        };
        out.push(format!(
            "{file} webServer runs {command} and {target}: Playwright starts it inside the run, so no proofgraph service is needed"
        ));
        let probe = match (&server.url, &server.port) {
            (Some(url), _) => url.replace("localhost", "127.0.0.1"),
            (None, Some(port)) => format!("http://127.0.0.1:{port}/"),
            (None, None) => "http://127.0.0.1:<port>/".to_owned(),
        };
        out.push(format!(
            "service candidate: to share that server between providers, declare a service running {command} with readiness url {probe} and an expectBody or expectHeader that only this app answers (it cannot be derived)"
        ));
        if let Some(reuse) = &server.reuse
            && reuse != "false"
        {
            out.push(format!(
                "webServer.reuseExistingServer is `{reuse}`: outside proofgraph's private network a stale dev server could answer instead"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
import { defineConfig, devices } from '@playwright/test';
// projects: [{ name: 'commented-out' }]
export default defineConfig({
  testDir: './e2e',
  projects: [
    { name: 'chromium', use: { ...devices['Desktop Chrome'] } },
    { name: "firefox", use: { ...devices['Desktop Firefox'], viewport: { width: 1, height: 2 } } },
    { name: `mobile-${process.env.X}` },
  ],
  /* webServer: { command: 'nope' } */
  webServer: {
    command: 'npm run dev -- --port 5173',
    url: 'http://localhost:5173',
    reuseExistingServer: !process.env.CI,
  },
});
"#;

    #[test]
    fn reads_projects_and_web_server_as_text() {
        let config = parse("playwright.config.ts", CONFIG);
        assert_eq!(
            config.projects,
            Some(vec![
                Some("chromium".to_owned()),
                Some("firefox".to_owned()),
                None
            ])
        );
        assert_eq!(
            config.web_servers,
            vec![WebServer {
                command: Some("npm run dev -- --port 5173".to_owned()),
                url: Some("http://localhost:5173".to_owned()),
                port: None,
                reuse: Some("!process.env.CI".to_owned()),
            }]
        );
    }

    #[test]
    fn reads_a_list_of_web_servers() {
        let config = parse(
            "playwright.config.js",
            "module.exports = { webServer: [{ command: 'a', port: 3000 }, { command: 'b', url: 'http://127.0.0.1:4000/x', reuseExistingServer: false }] }",
        );
        assert_eq!(config.projects, None);
        assert_eq!(config.web_servers.len(), 2);
        assert_eq!(config.web_servers[0].port.as_deref(), Some("3000"));
        assert_eq!(config.web_servers[1].reuse.as_deref(), Some("false"));
    }
}
