//! `init`: add the recommended candidates to `execution.yaml` text without
//! touching anything already there.
//!
//! Technique: **insert, never re-serialise.** The existing text is parsed
//! only to find where the `providers` mapping ends (byte spans and lines of
//! the positioned tree); the new entries are rendered in the file's style and
//! spliced in at that point, so every existing byte — providers, key order,
//! formatting, YAML comments — stays as it was. Only an empty
//! `providers: {}` (or `providers:` with no value) is rewritten, because
//! something must hold the new entries. Afterwards the result is parsed
//! again and compared, as data, with the original plus the additions; any
//! difference is an error and no text is returned.
//!
//! Both reads go through `proofgraph-syntax`, the reader `validate` uses, so
//! what `init` checks is what `validate` will read: a file `validate` refuses
//! (a repeated key, an alias, two documents) is refused here at the same
//! line and column, and a scalar means the same thing to both (`.inf` is a
//! number, `yes` a string). The comparison is of `serde_json` values (the
//! candidates are ones); a number with no exact JSON value (`.inf`, `.nan`,
//! `1e400`) cannot be compared and the file is refused, never rewritten.
//!
//! Which candidates: only `recommended` (high-confidence) ones, and not when
//! a provider of the same name exists, or a provider in the file already
//! proves that capability for that repository. A test provider and its
//! discovery receiver are added together or not at all.

use proofgraph_graph::{ProviderId, RepoId};
use proofgraph_syntax::node::{self as syntax, Node};
use proofgraph_syntax::parse::{Syntax, read_document};
use serde_json::{Map, Value};

use crate::edit::data::{self, NoJsonValue};
use crate::edit::render::{json_member, json_member_compact, yaml_entry, yaml_flow};
use crate::model::{Candidate, Detection, InitOutput, Skipped};

/// `init` could not produce a file.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The existing file is not JSON (it starts with `{`) or YAML that `validate` reads.
    #[error(
        "read the existing execution.yaml as {syntax} at line {line}, column {column}: {message}"
    )]
    Syntax {
        /// `JSON` or `YAML`.
        syntax: &'static str,
        /// 1-based line.
        line: u32,
        /// 1-based column, in characters.
        column: u32,
        /// What is wrong there.
        message: String,
    },
    /// The existing file holds a number that has no exact JSON value, so it could not be
    /// compared before and after the edit.
    #[error(
        "read the existing execution.yaml as data: the number `{number}` at line {line}, column {column} has no exact JSON value"
    )]
    Number {
        /// The number as written.
        number: String,
        /// 1-based line.
        line: u32,
        /// 1-based column, in characters.
        column: u32,
    },
    /// The top level is not a mapping.
    #[error("add providers to the existing execution.yaml: its top level is not a mapping")]
    NotAMapping,
    /// `providers` holds something other than a mapping.
    #[error(
        "add providers to the existing execution.yaml: `providers` at line {line} is not a mapping"
    )]
    ProvidersNotAMapping {
        /// 1-based line of the `providers` key.
        line: usize,
    },
    /// The edited text would not read back as the original plus the
    /// additions (a bug, reported rather than written).
    #[error("add providers to the existing execution.yaml without changing what is there: {0}")]
    Verification(String),
}

/// One entry to add.
struct Entry<'c> {
    candidate: &'c Candidate,
    comment: String,
}

/// Which files `evidence init` writes: none without `--write`; with it, the drafted
/// `evidence.yaml` when one was drafted (a change without one), `execution.yaml` when
/// providers were added, and the catalog's setup for them only when `execution.yaml` was
/// (setup for providers nobody wired is not added). The application writes them in this
/// order — claims first, as the providers are wired for them — and stops at the first
/// failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Writes {
    /// Create `evidence.yaml`.
    pub evidence: bool,
    /// Replace `execution.yaml`.
    pub execution: bool,
    /// Replace `proofgraph.yaml` with the setup the added providers need.
    pub catalog: bool,
}

impl Writes {
    /// What `--write` (`write`) writes, given whether claims were `drafted` for a change
    /// without `evidence.yaml`, providers were `added`, and the catalog needs `setup`.
    pub fn plan(write: bool, drafted: bool, added: bool, setup: bool) -> Self {
        Writes {
            evidence: write && drafted,
            execution: write && added,
            catalog: write && added && setup,
        }
    }
}

/// Adds the recommended candidates of `detection` to `existing` (the text
/// of `execution.yaml`, `None` when there is none). JSON text (it starts
/// with `{`) stays JSON, YAML stays YAML; no file gives a new `version: 1`
/// YAML file.
pub fn init(existing: Option<&str>, detection: &Detection) -> Result<InitOutput, InitError> {
    let parsed = match existing {
        None => None,
        Some(text) => Some(read_tree(text)?),
    };
    let before = parsed.as_ref().map_or(&Value::Null, |p| &p.value);
    if !(before.is_object() || before.is_null()) {
        return Err(InitError::NotAMapping);
    }
    let providers: Vec<(String, Value)> = before
        .get("providers")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let kept: Vec<ProviderId> = providers
        .iter()
        .filter_map(|(k, _)| ProviderId::parse(k).ok())
        .collect();
    let (chosen, skipped) = choose(detection, &providers);
    let entries: Vec<Entry<'_>> = chosen
        .into_iter()
        .map(|candidate| Entry {
            comment: format!(
                "added by proofgraph evidence init: {}",
                candidate
                    .evidence
                    .first()
                    .map_or("high confidence", String::as_str)
            ),
            candidate,
        })
        .collect();
    let text = match (&parsed, existing) {
        (None, _) | (_, None) => new_file(&entries),
        (Some(p), Some(text)) => match (p.syntax, &p.node) {
            (Syntax::Json, Some(node)) => edit_json(text, node, &entries)?,
            (_, node) => edit_yaml(text, node.as_ref(), &entries)?,
        },
    };
    if let Some(parsed) = &parsed {
        let again = read_tree(&text)
            .map_err(|e| InitError::Verification(format!("the result does not read back: {e}")))?;
        if again.syntax != parsed.syntax {
            return Err(InitError::Verification(format!(
                "the result reads as {}, not {}",
                again.syntax.name(),
                parsed.syntax.name()
            )));
        }
        verify(before, &again.value, &entries)?;
    }
    let mut setups: Vec<(RepoId, crate::model::RepositorySetup)> = Vec::new();
    for e in &entries {
        if let Some(setup) = &e.candidate.setup
            && !setups.iter().any(|(r, _)| *r == e.candidate.repository)
        {
            setups.push((e.candidate.repository.clone(), setup.clone()));
        }
    }
    Ok(InitOutput {
        text,
        added: entries.iter().map(|e| e.candidate.name.clone()).collect(),
        kept,
        skipped,
        setups,
    })
}

/// `execution.yaml` text as `init` reads it, before its edit and again after it: through
/// `proofgraph-syntax` (the reader `validate` uses), then as `serde_json` data, which is
/// what `init` compares. A YAML file with no document (only comments) is `null`.
///
/// A text `validate` cannot read is [`InitError::Syntax`] at the position `validate`
/// reports; a number without an exact JSON value (`.inf`, `.nan`, `1e400`) is
/// [`InitError::Number`].
pub fn read(text: &str) -> Result<Value, InitError> {
    read_tree(text).map(|parsed| parsed.value)
}

/// A file read for editing.
struct Parsed {
    syntax: Syntax,
    /// The tree; `None` for a YAML file with no document.
    node: Option<Node>,
    /// The tree as data.
    value: Value,
}

fn read_tree(text: &str) -> Result<Parsed, InitError> {
    let (syntax, read) = read_document(text);
    let node = read.map_err(|e| InitError::Syntax {
        syntax: syntax.name(),
        line: e.pos.line,
        column: e.pos.column,
        message: e.kind.to_string(),
    })?;
    let value = match &node {
        Some(node) => {
            data::to_json(node).map_err(|NoJsonValue { number, pos }| InitError::Number {
                number,
                line: pos.line,
                column: pos.column,
            })?
        }
        None => Value::Null,
    };
    Ok(Parsed {
        syntax,
        node,
        value,
    })
}

/// The capabilities a provider in the file proves, and the repositories it
/// names (empty: all).
fn proves(name: &str, value: &Value) -> (Vec<String>, Vec<String>) {
    let str_of = |k: &str| value.get(k).and_then(Value::as_str);
    let mut caps = vec![str_of("capability").unwrap_or(name).to_owned()];
    for output in value
        .get("outputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        caps.extend(output.as_str().map(str::to_owned));
    }
    if str_of("adapter") == Some("test-discovery") {
        let receiver = match str_of("discoveryProvider") {
            Some(r) => Some(r),
            None if name == "test" => Some("discovery"),
            None => None,
        };
        if receiver == Some("discovery") {
            caps.push("discovery".to_owned());
        }
    }
    let mut repos: Vec<String> = Vec::new();
    repos.extend(str_of("repository").map(str::to_owned));
    for r in value
        .get("repositories")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        repos.extend(r.as_str().map(str::to_owned));
    }
    if let Some(contract) = value.get("contract").and_then(Value::as_object) {
        repos.extend(contract.keys().cloned());
    }
    (caps, repos)
}

fn choose<'d>(
    detection: &'d Detection,
    providers: &[(String, Value)],
) -> (Vec<&'d Candidate>, Vec<Skipped>) {
    let mut chosen: Vec<&Candidate> = Vec::new();
    let mut skipped = Vec::new();
    for c in detection
        .candidates
        .iter()
        .filter(|c| c.recommended && c.provider.is_object())
    {
        let skip = |reason: String| Skipped {
            name: c.name.clone(),
            reason,
        };
        if providers.iter().any(|(n, _)| n == c.name.as_str()) {
            skipped.push(skip(format!(
                "a provider named `{}` already exists; it was left as it is",
                c.name
            )));
            continue;
        }
        if chosen.iter().any(|o| o.name == c.name) {
            skipped.push(skip(
                "another candidate with this name comes first".to_owned(),
            ));
            continue;
        }
        let wired = providers.iter().find(|(n, v)| {
            let (caps, repos) = proves(n, v);
            caps.iter().any(|cap| cap == c.capability.as_str())
                && (repos.is_empty() || repos.iter().any(|r| r == c.repository.as_str()))
        });
        if let Some((by, _)) = wired {
            skipped.push(skip(format!(
                "`{}` is already wired for `{}` by `{by}`",
                c.capability, c.repository
            )));
            continue;
        }
        chosen.push(c);
    }
    // A test provider and its discovery receiver go together.
    let receiver_of = |c: &Candidate| {
        c.provider
            .get("discoveryProvider")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let is_receiver = |c: &Candidate| {
        detection
            .candidates
            .iter()
            .any(|o| receiver_of(o).as_deref() == Some(c.name.as_str()))
    };
    loop {
        let orphan = chosen.iter().position(|c| {
            let unreceived =
                receiver_of(c).is_some_and(|r| !chosen.iter().any(|o| o.name.as_str() == r));
            let unfed = is_receiver(c)
                && !chosen
                    .iter()
                    .any(|o| receiver_of(o).as_deref() == Some(c.name.as_str()));
            unreceived || unfed
        });
        let Some(i) = orphan else { break };
        let c = chosen.remove(i);
        skipped.push(Skipped {
            name: c.name.clone(),
            reason: "a test provider and its discovery receiver are added together, and the other one is not added".to_owned(),
        });
    }
    (chosen, skipped)
}

fn verify(before: &Value, after: &Value, entries: &[Entry<'_>]) -> Result<(), InitError> {
    let fail = |m: String| Err(InitError::Verification(m));
    let empty = Map::new();
    let b = before.as_object().unwrap_or(&empty);
    let Some(a) = after.as_object() else {
        return fail("the result's top level is not a mapping".to_owned());
    };
    for (k, v) in b {
        if k != "providers" && a.get(k) != Some(v) {
            return fail(format!("top-level `{k}` would change"));
        }
    }
    if let Some(k) = a.keys().find(|k| *k != "providers" && !b.contains_key(*k)) {
        return fail(format!("top-level `{k}` would appear"));
    }
    let bp = b
        .get("providers")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let Some(ap) = a.get("providers").and_then(Value::as_object) else {
        return if entries.is_empty() && a.get("providers") == b.get("providers") {
            Ok(())
        } else {
            fail("`providers` would not be a mapping".to_owned())
        };
    };
    for (name, v) in bp {
        if ap.get(name) != Some(v) {
            return fail(format!("provider `{name}` would change"));
        }
    }
    for e in entries {
        if ap.get(e.candidate.name.as_str()) != Some(&e.candidate.provider) {
            return fail(format!(
                "new provider `{}` would not read back as proposed",
                e.candidate.name
            ));
        }
    }
    if ap.len() != bp.len() + entries.len() {
        return fail("the number of providers would not add up".to_owned());
    }
    Ok(())
}

fn newline_of(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

fn new_file(entries: &[Entry<'_>]) -> String {
    let mut out = String::from("version: 1\n");
    if entries.is_empty() {
        out.push_str("providers: {}\n");
    } else {
        out.push_str("providers:\n");
        for e in entries {
            out.push_str(&yaml_entry(
                e.candidate.name.as_str(),
                &e.candidate.provider,
                Some(&e.comment),
                "  ",
                "  ",
                "\n",
            ));
        }
    }
    out.push_str("services: {}\n");
    out
}

/// The whitespace before byte `at` on its line, if only whitespace precedes it
/// there (so what is at `at` starts its line).
fn line_indent(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..at];
    prefix
        .chars()
        .all(|c| c == ' ' || c == '\t')
        .then_some(prefix)
}

fn edit_json(text: &str, root: &Node, entries: &[Entry<'_>]) -> Result<String, InitError> {
    let syntax::Value::Map(members) = &root.value else {
        return Err(InitError::NotAMapping);
    };
    if entries.is_empty() {
        return Ok(text.to_owned());
    }
    let nl = newline_of(text);
    let root_indent = line_indent(text, root.span.start).unwrap_or("");
    // The indentation unit, when the file is pretty-printed.
    let unit: Option<String> = match members.first() {
        Some((key, _)) => line_indent(text, key.span.start).map(|ind| {
            let unit = ind.strip_prefix(root_indent).unwrap_or(ind);
            if unit.is_empty() {
                "  ".to_owned()
            } else {
                unit.to_owned()
            }
        }),
        None => Some("  ".to_owned()),
    };
    let splice = |at: usize, end: usize, insert: &str| {
        let mut out = String::with_capacity(text.len() + insert.len());
        out.push_str(&text[..at]);
        out.push_str(insert);
        out.push_str(&text[end..]);
        out
    };
    // The new members, each on its own line at `ind` (members' own members
    // one `unit` deeper), or all on one line; comma-separated.
    let pretty = |ind: &str, unit: &str| {
        entries
            .iter()
            .map(|e| {
                format!(
                    "{nl}{ind}{}",
                    json_member(
                        e.candidate.name.as_str(),
                        &e.candidate.provider,
                        ind,
                        unit,
                        nl
                    )
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let compact = || {
        entries
            .iter()
            .map(|e| json_member_compact(e.candidate.name.as_str(), &e.candidate.provider))
            .collect::<Vec<_>>()
            .join(",")
    };
    let providers = members.iter().find(|(key, _)| key.name == "providers");
    match providers {
        Some((key, value)) => {
            let syntax::Value::Map(existing) = &value.value else {
                return Err(InitError::ProvidersNotAMapping {
                    line: key.pos.line as usize,
                });
            };
            let key_indent = line_indent(text, key.span.start);
            match (existing.last(), existing.first()) {
                (Some((_, last)), Some((first, _))) => {
                    let insert = match (line_indent(text, first.span.start), &unit) {
                        (Some(ind), Some(unit)) => {
                            let inner = ind
                                .strip_prefix(key_indent.unwrap_or(""))
                                .filter(|u| !u.is_empty())
                                .unwrap_or(unit);
                            format!(",{}", pretty(ind, inner))
                        }
                        _ => format!(",{}", compact()),
                    };
                    Ok(splice(last.span.end, last.span.end, &insert))
                }
                _ => {
                    let body = match (key_indent, &unit) {
                        (Some(pind), Some(unit)) => {
                            format!("{{{}{nl}{pind}}}", pretty(&format!("{pind}{unit}"), unit))
                        }
                        _ => format!("{{{}}}", compact()),
                    };
                    Ok(splice(value.span.start, value.span.end, &body))
                }
            }
        }
        None => {
            let block = |base: &str, unit: &str| {
                format!(
                    "\"providers\": {{{}{nl}{base}}}",
                    pretty(&format!("{base}{unit}"), unit)
                )
            };
            match (members.last(), &unit) {
                (Some((_, last)), Some(unit)) => {
                    let base = format!("{root_indent}{unit}");
                    let insert = format!(",{nl}{base}{}", block(&base, unit));
                    Ok(splice(last.span.end, last.span.end, &insert))
                }
                (Some((_, last)), None) => Ok(splice(
                    last.span.end,
                    last.span.end,
                    &format!(",\"providers\":{{{}}}", compact()),
                )),
                (None, _) => {
                    let base = format!("{root_indent}  ");
                    let body = format!("{{{nl}{base}{}{nl}{root_indent}}}", block(&base, "  "));
                    Ok(splice(root.span.start, root.span.end, &body))
                }
            }
        }
    }
}

/// Byte offsets of the start of each line (index 0 is line 1), plus the
/// text's length as a sentinel.
fn line_starts(text: &str) -> Vec<usize> {
    let mut out = vec![0];
    out.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    if out.last() != Some(&text.len()) {
        out.push(text.len());
    }
    out
}

/// The text of 1-based line `n`, without its terminator.
fn line<'t>(text: &'t str, starts: &[usize], n: usize) -> &'t str {
    let (Some(&a), Some(&b)) = (starts.get(n - 1), starts.get(n)) else {
        return "";
    };
    text[a..b].trim_end_matches(['\n', '\r'])
}

fn indent_width(line: &str) -> usize {
    line.chars().take_while(|c| *c == ' ').count()
}

/// Inserts `block` after 1-based line `n` (adding a line break first when
/// that line is the unterminated last one).
fn insert_after_line(text: &str, starts: &[usize], n: usize, block: &str, nl: &str) -> String {
    let at = starts.get(n).copied().unwrap_or(text.len()).min(text.len());
    let mut out = String::with_capacity(text.len() + block.len() + 2);
    out.push_str(&text[..at]);
    if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        out.push_str(nl);
    }
    out.push_str(block);
    out.push_str(&text[at..]);
    out
}

fn edit_yaml(text: &str, root: Option<&Node>, entries: &[Entry<'_>]) -> Result<String, InitError> {
    if entries.is_empty() {
        return Ok(text.to_owned());
    }
    let nl = newline_of(text);
    let render = |indent: &str, unit: &str| -> String {
        entries
            .iter()
            .map(|e| {
                yaml_entry(
                    e.candidate.name.as_str(),
                    &e.candidate.provider,
                    Some(&e.comment),
                    indent,
                    unit,
                    nl,
                )
            })
            .collect()
    };
    let starts = line_starts(text);
    let last_line = starts.len() - 1;
    let Some(root) = root else {
        // Only comments (or nothing): append a whole file.
        let mut out = text.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(nl);
        }
        out.push_str(&format!(
            "version: 1{nl}providers:{nl}{}services: {{}}{nl}",
            render("  ", "  ")
        ));
        return Ok(out);
    };
    let syntax::Value::Map(top) = &root.value else {
        return Err(InitError::NotAMapping);
    };
    if root.flow {
        return Err(InitError::NotAMapping);
    }
    // Lines and 0-based character columns of the tree's positions.
    let line_of = |pos: syntax::Pos| pos.line as usize;
    let col_of = |pos: syntax::Pos| pos.column as usize - 1;
    let Some(index) = top.iter().position(|(k, _)| k.name == "providers") else {
        let block = format!("providers:{nl}{}", render("  ", "  "));
        return Ok(insert_after_line(text, &starts, last_line, &block, nl));
    };
    let (key, value) = &top[index];
    match &value.value {
        syntax::Value::Map(existing) if !value.flow && !existing.is_empty() => {
            let first = &existing[0];
            let entry_col = col_of(first.0.pos);
            let indent: String = line(text, &starts, line_of(first.0.pos))
                .chars()
                .take(entry_col)
                .collect();
            let unit = match &first.1.value {
                syntax::Value::Map(fields) if !first.1.flow && !fields.is_empty() => {
                    let c = col_of(fields[0].0.pos);
                    if c > entry_col {
                        " ".repeat(c - entry_col)
                    } else {
                        "  ".to_owned()
                    }
                }
                _ => "  ".to_owned(),
            };
            let next = top
                .get(index + 1)
                .map_or(last_line + 1, |(k, _)| line_of(k.pos));
            let last_content = ((line_of(key.pos) + 1)..next)
                .rev()
                .find(|&n| {
                    let l = line(text, &starts, n);
                    !l.trim().is_empty() && indent_width(l) >= entry_col
                })
                .unwrap_or(line_of(key.pos));
            Ok(insert_after_line(
                text,
                &starts,
                last_content,
                &render(&indent, &unit),
                nl,
            ))
        }
        syntax::Value::Map(existing) if value.flow => {
            // The closing brace is the span's last byte.
            let close = value.span.end - 1;
            let close_line = text[..close].matches('\n').count() + 1;
            let one_line = line_of(value.pos) == close_line && close_line == line_of(key.pos);
            if existing.is_empty() && one_line {
                // `providers: {}` becomes a block mapping.
                let n = line_of(key.pos);
                let line_start = starts[n - 1];
                let l = line(text, &starts, n);
                let open = value.span.start - line_start;
                let rest = &l[value.span.end - line_start..];
                let head = l[..open].trim_end();
                let new_line = if rest.trim().is_empty() {
                    head.to_owned()
                } else {
                    format!("{head} {}", rest.trim_start())
                };
                let mut edited = String::with_capacity(text.len() + 256);
                edited.push_str(&text[..line_start]);
                edited.push_str(&new_line);
                edited.push_str(&text[line_start + l.len()..]);
                let starts = line_starts(&edited);
                Ok(insert_after_line(
                    &edited,
                    &starts,
                    n,
                    &render("  ", "  "),
                    nl,
                ))
            } else {
                // A flow mapping with entries: add flow entries before `}`.
                let items: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        format!(
                            "{}: {}",
                            yaml_flow(&Value::String(e.candidate.name.to_string())),
                            yaml_flow(&e.candidate.provider)
                        )
                    })
                    .collect();
                let sep = if existing.is_empty() { "" } else { ", " };
                let mut out = String::with_capacity(text.len() + 256);
                out.push_str(&text[..close]);
                out.push_str(sep);
                out.push_str(&items.join(", "));
                out.push_str(&text[close..]);
                Ok(out)
            }
        }
        syntax::Value::Null => {
            // `providers:` with no value (or `~`, `null`): only a plain scalar is null.
            let mut edited = text.to_owned();
            let mut after = line_of(key.pos);
            if !value.span.is_empty() {
                let (a, b) = (value.span.start, value.span.end);
                edited = format!("{}{}", text[..a].trim_end_matches(' '), &text[b..]);
                after = after.max(line_of(value.pos));
            }
            let starts = line_starts(&edited);
            Ok(insert_after_line(
                &edited,
                &starts,
                after,
                &render("  ", "  "),
                nl,
            ))
        }
        _ => Err(InitError::ProvidersNotAMapping {
            line: line_of(key.pos),
        }),
    }
}

#[cfg(test)]
mod writes_tests {
    use super::Writes;

    #[test]
    fn nothing_is_written_without_write_and_the_catalog_only_with_execution_yaml() {
        for (drafted, added, setup) in [(true, true, true), (false, true, true)] {
            assert_eq!(
                Writes::plan(false, drafted, added, setup),
                Writes::default()
            );
        }
        assert_eq!(
            Writes::plan(true, true, true, true),
            Writes {
                evidence: true,
                execution: true,
                catalog: true
            }
        );
        assert_eq!(
            Writes::plan(true, true, false, true),
            Writes {
                evidence: true,
                execution: false,
                catalog: false
            },
            "claims drafted but nothing to wire: evidence.yaml alone"
        );
        assert_eq!(
            Writes::plan(true, false, true, false),
            Writes {
                evidence: false,
                execution: true,
                catalog: false
            }
        );
    }
}
