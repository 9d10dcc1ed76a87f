//! Claims drafted from a change's delta specs (`specs/**/spec.md`), for
//! `evidence init --claims-from-specs` when the change has no
//! `evidence.yaml`.
//!
//! A delta spec is read as the OpenSpec CLI (1.13.2) reads it
//! (`core/parsers/requirement-blocks.ts`): a byte order mark is dropped and
//! line ends normalised; lines inside fenced code blocks (```` ``` ````,
//! `~~~`) are never structure; a section is a `## ` header, and the
//! sections titled `ADDED Requirements` and `MODIFIED Requirements` (any
//! case) hold the behaviour the change must have; a requirement is a
//! `### Requirement: <name>` header (the name without a closing `#` run),
//! ending at the next requirement or section; a scenario is any `#### `
//! header in it (`Scenario:` stripped from its name) whose body is not
//! blank. `REMOVED` and `RENAMED` sections describe nothing to prove.
//!
//! Each scenario becomes one claim: its id from the requirement's and the
//! scenario's names (kebab-case, `-2`, `-3` on a repeat), its `scenario` the
//! scenario's name and its steps (`Known profile: WHEN …; THEN …`), and
//! `capabilities: [test]`. `test` is the conservative default: a scenario
//! written as WHEN/THEN is what an automated test checks, every ecosystem
//! bootstrap reads can wire a test runner for it, and `test` brings
//! `discovery`, so a suite that runs nothing never proves it. It is only a
//! default: the file says so at its top, and a claim that needs a browser,
//! accessibility checks or a review must have them added by a person —
//! bootstrap never guesses a capability from prose. No `impact` is written
//! (it is the person's call), and nothing else is.

use std::path::Path;

use proofgraph_graph::{CapabilityName, ClaimId};
use serde::Serialize;

/// Spec files past this size are not read (as for configuration files).
const MAX_SPEC_BYTES: u64 = 4 * 1024 * 1024;

/// The longest slug taken from one name, cut at a hyphen.
const MAX_SLUG: usize = 40;

/// One claim drafted from one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DraftClaim {
    /// The claim id.
    #[serde(serialize_with = "as_str")]
    pub id: ClaimId,
    /// The claim's `scenario` text.
    pub scenario: String,
    /// The capabilities it requires (the default, `test`).
    #[serde(serialize_with = "caps_as_str")]
    pub capabilities: Vec<CapabilityName>,
    /// The spec file, relative to the change directory.
    pub file: String,
    /// The line of the scenario's header (1-based).
    pub line: usize,
    /// The requirement's name.
    pub requirement: String,
    /// The scenario's name.
    pub name: String,
}

/// A spec file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecProblem {
    /// The file, relative to the change directory.
    pub file: String,
    /// What went wrong, a fragment that reads after "failed to".
    pub message: String,
}

/// What the delta specs yield.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Drafted {
    /// The spec files read, relative to the change directory, in order.
    pub files: Vec<String>,
    /// The claims, in file and document order.
    pub claims: Vec<DraftClaim>,
    /// Files that could not be read.
    pub problems: Vec<SpecProblem>,
}

/// Drafts claims from every `specs/**/spec.md` under `change_dir` (files
/// in path order; symbolic links are not followed).
pub fn draft_claims(change_dir: &Path) -> Drafted {
    let mut out = Drafted::default();
    let mut files = Vec::new();
    collect(
        &change_dir.join("specs"),
        "specs",
        &mut files,
        &mut out.problems,
    );
    files.sort();
    for rel in files {
        let path = change_dir.join(&rel);
        let too_large = fs_err::metadata(&path).is_ok_and(|m| m.len() > MAX_SPEC_BYTES);
        if too_large {
            out.problems.push(SpecProblem {
                file: rel.clone(),
                message: format!("read `{rel}`: it is larger than {MAX_SPEC_BYTES} bytes"),
            });
            continue;
        }
        match fs_err::read(&path).map(String::from_utf8) {
            Ok(Ok(text)) => {
                for (requirement, scenario) in parse(&text) {
                    let claim = draft(&rel, &requirement, &scenario, out.claims.len(), &out.claims);
                    out.claims.push(claim);
                }
            }
            Ok(Err(_)) => out.problems.push(SpecProblem {
                file: rel.clone(),
                message: format!("read `{rel}`: it is not UTF-8 text"),
            }),
            Err(e) => out.problems.push(SpecProblem {
                file: rel.clone(),
                message: format!("read `{rel}`: {e}"),
            }),
        }
        out.files.push(rel);
    }
    out
}

fn collect(dir: &Path, rel: &str, files: &mut Vec<String>, problems: &mut Vec<SpecProblem>) {
    let entries = match fs_err::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            problems.push(SpecProblem {
                file: rel.to_owned(),
                message: format!("list `{rel}`: {e}"),
            });
            return;
        }
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        if kind.is_dir() {
            collect(&entry.path(), &child, files, problems);
        } else if kind.is_file() && name == "spec.md" {
            files.push(child);
        }
    }
}

/// A requirement's scenario: its header line, name and body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scenario {
    line: usize,
    name: String,
    body: Vec<String>,
}

/// Whether a line opens a fence: its marker and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    let marker = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|c| *c == marker).count();
    (n >= 3).then_some((marker, n))
}

/// For each line, whether it belongs to a fenced code block (fence lines
/// included), as OpenSpec's `buildCodeFenceMask`.
fn fence_mask(lines: &[&str]) -> Vec<bool> {
    let mut mask = vec![false; lines.len()];
    let mut open: Option<(char, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        match open {
            None => {
                if let Some(f) = fence(line) {
                    open = Some(f);
                    mask[i] = true;
                }
            }
            Some((marker, n)) => {
                mask[i] = true;
                let t = line.trim();
                if t.chars().all(|c| c == marker) && t.chars().count() >= n {
                    open = None;
                }
            }
        }
    }
    mask
}

/// `## <title>`: a section header's title.
fn section_title(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("##")?;
    rest.starts_with([' ', '\t'])
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// `### Requirement: <name>` (any case, any spacing): the name.
fn requirement_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("###")?.trim_start();
    let head = rest.get(..12)?;
    if !head.eq_ignore_ascii_case("requirement:") {
        return None;
    }
    let name = strip_closing(rest[12..].trim());
    (!name.is_empty()).then(|| name.to_owned())
}

/// `#### <name>`: a scenario header's name (`Scenario:` stripped).
fn scenario_name(line: &str) -> Option<String> {
    let rest = line.strip_prefix("####")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let name = strip_closing(rest.trim());
    let name = match name.get(..9) {
        Some(head) if head.eq_ignore_ascii_case("scenario:") => name[9..].trim(),
        _ => name,
    };
    Some(name.to_owned())
}

/// A header's text without an ATX closing run (`Foo ###` → `Foo`; `C#` stays).
fn strip_closing(text: &str) -> &str {
    let trimmed = text.trim_end_matches([' ', '\t']);
    let without = trimmed.trim_end_matches('#');
    if without.len() < trimmed.len() && without.ends_with([' ', '\t']) {
        without.trim_end_matches([' ', '\t'])
    } else {
        trimmed
    }
}

/// A line that ends a scenario's body: a header of level 1 to 4.
fn ends_scenario(line: &str) -> bool {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (1..=4).contains(&hashes) && line[hashes..].starts_with([' ', '\t'])
}

/// Every (requirement, scenario) of the ADDED and MODIFIED sections.
fn parse(text: &str) -> Vec<(String, Scenario)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let mask = fence_mask(&lines);
    let mut out = Vec::new();
    let mut in_delta = false;
    let mut requirement: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if mask[i] {
            i += 1;
            continue;
        }
        if let Some(title) = section_title(line) {
            let title = title.to_ascii_lowercase();
            in_delta = title == "added requirements" || title == "modified requirements";
            requirement = None;
            i += 1;
            continue;
        }
        if !in_delta {
            i += 1;
            continue;
        }
        if let Some(name) = requirement_name(line) {
            requirement = Some(name);
            i += 1;
            continue;
        }
        if let (Some(req), Some(name)) = (&requirement, scenario_name(line)) {
            let start = i;
            i += 1;
            let mut body = Vec::new();
            while i < lines.len() && (mask[i] || !ends_scenario(lines[i])) {
                body.push(lines[i].to_owned());
                i += 1;
            }
            if body.iter().any(|l| !l.trim().is_empty()) {
                out.push((
                    req.clone(),
                    Scenario {
                        line: start + 1,
                        name,
                        body,
                    },
                ));
            }
            continue;
        }
        i += 1;
    }
    out
}

/// A name as an id part: lowercase ASCII letters and digits, runs of
/// anything else one `-`, at most [`MAX_SLUG`] characters cut at a hyphen.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out = out.trim_end_matches('-').to_owned();
    if out.len() > MAX_SLUG {
        let cut = out[..=MAX_SLUG].rfind('-').unwrap_or(MAX_SLUG);
        out.truncate(cut);
    }
    out
}

/// A scenario's steps as one line: list markers and `**` dropped, lines
/// joined with `; `; fenced lines are left out.
fn steps(body: &[String]) -> String {
    let lines: Vec<&str> = body.iter().map(String::as_str).collect();
    let mask = fence_mask(&lines);
    lines
        .iter()
        .zip(mask)
        .filter(|(_, fenced)| !fenced)
        .map(|(l, _)| {
            let t = l.trim();
            let t = t
                .strip_prefix("- ")
                .or_else(|| t.strip_prefix("* "))
                .or_else(|| t.strip_prefix("+ "))
                .unwrap_or(t);
            t.replace("**", "").trim().to_owned()
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn draft(
    file: &str,
    requirement: &str,
    scenario: &Scenario,
    index: usize,
    earlier: &[DraftClaim],
) -> DraftClaim {
    let req = slug(requirement);
    let sc = slug(&scenario.name);
    let base = match (req.is_empty(), sc.is_empty()) {
        (false, false) => format!("{req}-{sc}"),
        (false, true) => format!("{req}-scenario-{}", index + 1),
        (true, false) => sc,
        (true, true) => format!("scenario-{}", index + 1),
    };
    let taken = |id: &str| earlier.iter().any(|c| c.id.as_str() == id);
    let mut text = base.clone();
    let mut n = 2;
    while taken(&text) {
        text = format!("{base}-{n}");
        n += 1;
    }
    let id = ClaimId::parse(&text)
        .or_else(|_| ClaimId::parse(&format!("scenario-{}", index + 1)))
        .expect("`scenario-<n>` is a claim id");
    let steps = steps(&scenario.body);
    let name = if scenario.name.is_empty() {
        requirement.to_owned()
    } else {
        scenario.name.clone()
    };
    DraftClaim {
        id,
        scenario: if steps.is_empty() {
            name
        } else {
            format!("{name}: {steps}")
        },
        capabilities: vec![CapabilityName::test()],
        file: file.to_owned(),
        line: scenario.line,
        requirement: requirement.to_owned(),
        name: scenario.name.clone(),
    }
}

/// The text of an `evidence.yaml` (version 2) holding `claims`, each after a
/// comment naming the scenario it came from, under a header that says the
/// capabilities are a default to review.
pub fn render_evidence(claims: &[DraftClaim]) -> String {
    let mut out = String::from(
        "# Drafted by `proofgraph evidence init --claims-from-specs` from the scenarios of\n\
         # this change's delta specs. Every claim requires `test` until you choose: add\n\
         # the capabilities each scenario needs (browser, accessibility, review, ...;\n\
         # docs/evidence.md lists them) and, if you like, an `impact` (low, medium, high).\n\
         version: 2\n\
         claims:\n",
    );
    for c in claims {
        let comment = format!(
            "{}:{} Requirement: {} / Scenario: {}",
            c.file, c.line, c.requirement, c.name
        );
        let comment: String = comment.chars().filter(|ch| !ch.is_control()).collect();
        let scenario = serde_json::to_string(&c.scenario).unwrap_or_else(|_| "\"\"".to_owned());
        let caps: Vec<&str> = c.capabilities.iter().map(CapabilityName::as_str).collect();
        out.push_str(&format!(
            "  # {comment}\n  - id: {}\n    scenario: {scenario}\n    capabilities: [{}]\n",
            c.id,
            caps.join(", ")
        ));
    }
    out
}

fn as_str<S: serde::Serializer, T: AsRef<str>>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(value.as_ref())
}

fn caps_as_str<S: serde::Serializer>(value: &[CapabilityName], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(value.iter().map(CapabilityName::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "## ADDED Requirements\n\n### Requirement: Profile page\nThe API SHALL serve the page.\n\n#### Scenario: Known profile in a browser\n- **WHEN** a browser opens `/profile-page/1`\n- **THEN** the heading is `Ada`\n\n#### Scenario: Unknown profile\n- **WHEN** a browser opens `/profile-page/99`\n- **THEN** the answer is 404\n";

    fn names(text: &str) -> Vec<(String, String)> {
        parse(text).into_iter().map(|(r, s)| (r, s.name)).collect()
    }

    #[test]
    fn scenarios_of_added_requirements_become_claims() {
        let found = parse(SPEC);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].0, "Profile page");
        assert_eq!(found[0].1.name, "Known profile in a browser");
        assert_eq!(found[0].1.line, 6);
        let claim = draft("specs/p/spec.md", &found[0].0, &found[0].1, 0, &[]);
        assert_eq!(claim.id.as_str(), "profile-page-known-profile-in-a-browser");
        assert_eq!(
            claim.scenario,
            "Known profile in a browser: WHEN a browser opens `/profile-page/1`; THEN the heading is `Ada`"
        );
        assert_eq!(claim.capabilities, [CapabilityName::test()]);
    }

    #[test]
    fn only_added_and_modified_sections_count_and_fences_are_not_structure() {
        let text = "## Purpose\n### Requirement: Outside\n#### Scenario: no\n- WHEN x\n\n## REMOVED Requirements\n### Requirement: Gone\n#### Scenario: gone\n- WHEN y\n\n## Modified Requirements\n### Requirement: Kept ###\n```md\n#### Scenario: fenced\n- WHEN z\n```\n#### Scenario: real ##\n- THEN it holds\n#### Scenario: blank\n\n### Requirement: C#\n#### Edge case\n~~~\n## not a section\n~~~\n- WHEN w\n";
        assert_eq!(
            names(text),
            [
                ("Kept".to_owned(), "real".to_owned()),
                ("C#".to_owned(), "Edge case".to_owned())
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_and_crlf_do_not_hide_sections() {
        let text = format!("\u{feff}{}", SPEC.replace('\n', "\r\n"));
        assert_eq!(parse(&text).len(), 2);
    }

    #[test]
    fn ids_are_kebab_case_bounded_and_unique() {
        assert_eq!(
            slug("  Known Profile (v2) — in a browser!  "),
            "known-profile-v2-in-a-browser"
        );
        assert_eq!(slug("ผู้ใช้"), "");
        let long = slug(&"word ".repeat(30));
        assert!(long.len() <= MAX_SLUG && !long.ends_with('-'), "{long}");
        let s = Scenario {
            line: 1,
            name: "Same".to_owned(),
            body: vec!["- WHEN a".to_owned()],
        };
        let first = draft("f", "Req", &s, 0, &[]);
        let second = draft("f", "Req", &s, 1, std::slice::from_ref(&first));
        assert_eq!(second.id.as_str(), "req-same-2");
        let thai = Scenario {
            line: 1,
            name: "ผู้ใช้".to_owned(),
            body: vec!["- WHEN a".to_owned()],
        };
        assert_eq!(
            draft("f", "ข้อกำหนด", &thai, 4, &[]).id.as_str(),
            "scenario-5"
        );
    }

    #[test]
    fn the_rendered_file_quotes_every_scenario() {
        let s = Scenario {
            line: 3,
            name: "Quotes \"and\" colons: yes # no comment".to_owned(),
            body: vec!["- WHEN `a: b`\t\u{7}".to_owned()],
        };
        let text = render_evidence(&[draft("specs/x/spec.md", "R", &s, 0, &[])]);
        assert!(
            text.contains(
                "scenario: \"Quotes \\\"and\\\" colons: yes # no comment: WHEN `a: b`\\t\\u0007\"\n"
            ),
            "{text}"
        );
        assert!(text.contains("  # specs/x/spec.md:3 Requirement: R / Scenario: Quotes"));
    }
}
