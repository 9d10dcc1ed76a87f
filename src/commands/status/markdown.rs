//! `status --format markdown`: a compact table for a CI job summary
//! (`>> "$GITHUB_STEP_SUMMARY"`).
//!
//! A heading line with the change and its totals, then one row per claim × capability:
//! claim, capability, state (the words `status` uses), the providers whose receipts decide
//! it, their test counts when a report gave them, the receipts' short ids (the first 12 hex
//! digits of their SHA-256, as `receipt verify` and `log --receipt` accept in full) and why
//! it is not passed. Every cell is escaped ([`cell`]), so no value can end a cell, start a
//! row, or become markup or HTML.

use std::fmt::Write as _;

use crate::base::diagnostic::Diagnostic;
use crate::base::redact::Secrets;
use crate::decide::status::Requirement;

use super::{StatusPayload, reason_of, totals};

/// The digits of a receipt id shown in the table.
pub const SHORT_ID: usize = 12;

/// The table of a status payload.
pub fn render(payload: &StatusPayload, secrets: &Secrets) -> String {
    let change = payload.change.as_deref().unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### proofgraph status of {}: {} ({} requirement{})",
        cell(&secrets.text(change)),
        totals(&payload.summary),
        payload.requirements.len(),
        if payload.requirements.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    out.push('\n');
    out.push_str("| claim | capability | state | provider | tests | receipt | reason |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for r in &payload.requirements {
        row(r, secrets, &mut out);
    }
    out
}

fn row(r: &Requirement, secrets: &Secrets, out: &mut String) {
    let clean = |s: &str| cell(&secrets.text(s));
    let providers: Vec<String> = r.evidence.iter().map(|e| clean(&e.provider)).collect();
    let tests: Vec<String> = r
        .evidence
        .iter()
        .filter_map(|e| e.counts.as_ref())
        .map(|c| clean(&c.shown()))
        .collect();
    let receipts: Vec<String> = r
        .evidence
        .iter()
        .filter_map(|e| e.sha256.as_ref())
        .map(|sha| format!("`{}`", &sha.to_hex()[..SHORT_ID]))
        .collect();
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} |",
        clean(&r.claim),
        clean(&r.capability),
        r.state.as_str(),
        providers.join(", "),
        tests.join("; "),
        receipts.join(", "),
        reason_of(r).map(clean).unwrap_or_default(),
    );
}

/// What the summary says when the change cannot be evaluated: the heading and each
/// error diagnostic (the same ones stderr shows, with their fix).
pub fn refused(change: &str, status: &[Diagnostic], secrets: &Secrets) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### proofgraph status of {}: cannot evaluate",
        cell(&secrets.text(change))
    );
    out.push('\n');
    for d in status {
        let mut line = format!("{}[{}]: {}", d.severity.as_str(), d.code, d.message);
        if let Some(target) = &d.target {
            let _ = write!(line, " (at {target})");
        }
        if let Some(fix) = &d.fix {
            let _ = write!(line, " Fix: {fix}");
        }
        let _ = writeln!(out, "- {}", cell(&secrets.text(&line)));
    }
    out
}

/// `text` as the content of one table cell: `|` and the characters that start inline
/// markup are backslash-escaped, `&`, `<` and `>` become entities (no raw HTML), a line
/// break becomes `<br>` (a row is one line), a tab a space, and any other control
/// character is shown as `#xHH` (as pytest's JUnit writer shows one).
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            '\t' => out.push(' '),
            c if c.is_control() => {
                let _ = write!(out, "#x{:02X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn a_cell_holds_one_line_and_no_markup() {
        assert_eq!(cell("plain text, 6 tests"), "plain text, 6 tests");
        assert_eq!(cell("a | b"), "a \\| b");
        assert_eq!(
            cell("one\ntwo\r\nthree\rfour"),
            "one<br>two<br>three<br>four"
        );
        assert_eq!(
            cell("<b>x</b> & *y* _z_ `c` [l](u) ~s~ \\"),
            "&lt;b&gt;x&lt;/b&gt; &amp; \\*y\\* \\_z\\_ \\`c\\` \\[l\\](u) \\~s\\~ \\\\"
        );
        assert_eq!(cell("\u{1b}[31mred\ttab\u{0}"), "#x1B\\[31mred tab#x00");
        // A backslash the text ends with cannot escape the cell's closing `|`.
        assert!(cell("x\\").ends_with("\\\\"));
    }
}
