//! `status --format junit`: JUnit XML, so CI test dashboards show claims.
//!
//! The shape (docs/ci.md):
//!
//! - one `<testsuites name="proofgraph">` holding one `<testsuite>` named after the change
//!   (`status` reports one change; a dashboard that merges several files keeps them apart);
//! - one `<testcase>` per claim × capability, in `status`'s order: `classname` is the claim
//!   id, `name` the capability, so a dashboard groups the capabilities under their claim;
//! - `failed` → `<failure message="reason" type="failed">`, the provider's reason;
//!   `pending`, `stale` and `inconclusive` → `<skipped message="state: reason"/>`;
//!   `passed` → nothing but the case;
//! - `time` (seconds) is the duration of the runs its current receipts come from, each
//!   provider's run counted once in the document, by the first case citing it (later cases
//!   of the same run say `0`), and absent when none is known (no current receipt); a
//!   suite's `time` sums its cases', so it is the time the runs really took;
//! - `<system-out>` names, per receipt, the provider, the receipt's SHA-256 and the test
//!   counts its report gave.
//!
//! Every value is escaped for where it stands ([`attribute`], [`text`]); a character XML
//! 1.0 cannot hold at all (most C0 controls, U+FFFE, U+FFFF) is written `#xHH`, as
//! pytest's JUnit writer does, so the document always parses.

use std::fmt::Write as _;

use crate::base::diagnostic::{Diagnostic, Severity};
use crate::base::redact::Secrets;
use crate::decide::status::{Requirement, State};

use super::{StatusPayload, reason_of};

/// The document of a status payload.
pub fn render(payload: &StatusPayload, secrets: &Secrets) -> String {
    let clean = |s: &str| secrets.text(s).into_owned();
    let change = clean(payload.change.as_deref().unwrap_or_default());
    let count = |state: State| {
        payload
            .requirements
            .iter()
            .filter(|r| r.state == state)
            .count()
    };
    let tests = payload.requirements.len();
    let failures = count(State::Failed);
    let skipped = tests - failures - count(State::Passed);
    let times = case_times(&payload.requirements);
    let time_ms: u64 = times.iter().flatten().sum();
    let totals = format!(
        "tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\"",
        seconds(time_ms)
    );
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"proofgraph\" {totals}>");
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" {totals}>",
        attribute(&change)
    );
    for (r, time) in payload.requirements.iter().zip(times) {
        case(r, time, &clean, &mut out);
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn case(r: &Requirement, time: Option<u64>, clean: &dyn Fn(&str) -> String, out: &mut String) {
    let time = time
        .map(|ms| format!(" time=\"{}\"", seconds(ms)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\"{time}>",
        attribute(&clean(&r.claim)),
        attribute(&clean(&r.capability)),
    );
    let reason = reason_of(r).map(clean).unwrap_or_default();
    match r.state {
        State::Passed => {}
        State::Failed => {
            let _ = writeln!(
                out,
                "      <failure message=\"{}\" type=\"failed\">{}</failure>",
                attribute(&reason),
                text(&reason)
            );
        }
        State::Pending | State::Stale | State::Inconclusive => {
            let message = if reason.is_empty() {
                r.state.as_str().to_owned()
            } else {
                format!("{}: {reason}", r.state.as_str())
            };
            let _ = writeln!(out, "      <skipped message=\"{}\"/>", attribute(&message));
        }
    }
    let lines: Vec<String> = r
        .evidence
        .iter()
        .map(|e| {
            let mut line = format!("{}: {}", clean(&e.provider), e.state.as_str());
            if let Some(sha) = &e.sha256 {
                let _ = write!(line, ", receipt {sha}");
            }
            if let Some(counts) = &e.counts {
                let _ = write!(line, ", {}", counts.shown());
            }
            line
        })
        .collect();
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "      <system-out>{}</system-out>",
            text(&lines.join("\n"))
        );
    }
    out.push_str("    </testcase>\n");
}

/// Each case's `time`: the duration of the runs its current receipts come from, each run
/// counted once in the whole document — by the first case that cites it (one run of a
/// provider proves several claims and capabilities; dashboards sum the cases' times, so
/// repeating it would multiply it). A case whose runs an earlier case counted has `0`;
/// `None` when none of its receipts is current.
fn case_times(requirements: &[Requirement]) -> Vec<Option<u64>> {
    let mut counted: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    requirements
        .iter()
        .map(|r| {
            let runs: Vec<(&str, u64)> = r
                .evidence
                .iter()
                .filter_map(|e| e.duration_ms.map(|ms| (e.provider.as_str(), ms)))
                .collect();
            if runs.is_empty() {
                return None;
            }
            // A provider's current receipts come from its one latest run.
            let mut own: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
            for (provider, ms) in runs {
                let at = own.entry(provider).or_default();
                *at = (*at).max(ms);
            }
            Some(
                own.into_iter()
                    .filter(|(provider, _)| counted.insert(provider))
                    .map(|(_, ms)| ms)
                    .fold(0, u64::saturating_add),
            )
        })
        .collect()
}

/// Milliseconds as seconds with three decimals (`1.234`).
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// The document when the change cannot be evaluated: one case, `status`, in error, with
/// the diagnostics stderr shows (so a dashboard shows the error, not an empty suite).
pub fn refused(change: &str, status: &[Diagnostic], secrets: &Secrets) -> String {
    let change = secrets.text(change);
    let first = status
        .iter()
        .find(|d| d.severity == Severity::Error)
        .or(status.first());
    let message = first.map_or_else(
        || "the change cannot be evaluated".to_owned(),
        |d| secrets.text(&d.message).into_owned(),
    );
    let kind = first.map_or("error", |d| d.code.as_str());
    let mut body = String::new();
    for d in status {
        crate::present::output::render_diagnostic(d, &mut body);
    }
    let body = secrets.text(&body);
    let totals = "tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" time=\"0.000\"";
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"proofgraph\" {totals}>");
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" {totals}>",
        attribute(&change)
    );
    let _ = writeln!(
        out,
        "    <testcase classname=\"{}\" name=\"status\">",
        attribute(&change)
    );
    let _ = writeln!(
        out,
        "      <error message=\"{}\" type=\"{kind}\">{}</error>",
        attribute(&message),
        text(body.trim_end())
    );
    out.push_str("    </testcase>\n  </testsuite>\n</testsuites>\n");
    out
}

/// `value` inside a double-quoted attribute: markup characters and both quotes as
/// entities, and tab, line feed and carriage return as character references (a parser
/// would otherwise turn them into spaces).
pub fn attribute(value: &str) -> String {
    escape(value, true)
}

/// `value` as element content: `&`, `<` and `>` (so `]]>` never appears) as entities,
/// carriage return as a reference (a parser would otherwise drop it).
pub fn text(value: &str) -> String {
    escape(value, false)
}

fn escape(value: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\'' if in_attribute => out.push_str("&apos;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            '\n' if in_attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            c if !allowed(c) => {
                let _ = write!(out, "#x{:02X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether XML 1.0 allows `c` in a document at all (its `Char` production; a Rust `char`
/// is never a surrogate).
fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use super::{attribute, case_times, seconds, text};
    use crate::decide::status::{Evidence, Requirement, State};

    fn requirement(claim: &str, capability: &str, runs: &[(&str, u64)]) -> Requirement {
        let evidence = runs
            .iter()
            .map(|(provider, ms)| Evidence {
                provider: (*provider).to_owned(),
                receipt: "test".to_owned(),
                state: State::Passed,
                sha256: None,
                reason: None,
                counts: None,
                duration_ms: Some(*ms),
            })
            .collect();
        Requirement {
            claim: claim.to_owned(),
            capability: capability.to_owned(),
            state: State::Passed,
            evidence,
            reason: None,
        }
    }

    #[test]
    fn one_run_counts_once_in_the_document() {
        // One 28 s run of `suite` proves four cases; `lint` ran 2 s for one of them.
        let all = [
            requirement("a", "test", &[("suite", 28_000)]),
            requirement("a", "discovery", &[("suite", 28_000)]),
            requirement("b", "test", &[("suite", 28_000), ("lint", 2_000)]),
            requirement("b", "discovery", &[("suite", 28_000)]),
            requirement("c", "static-analysis", &[]),
        ];
        let times = case_times(&all);
        assert_eq!(times, [Some(28_000), Some(0), Some(2_000), Some(0), None]);
        assert_eq!(times.iter().flatten().sum::<u64>(), 30_000);
    }

    #[test]
    fn values_are_escaped_for_where_they_stand() {
        assert_eq!(
            attribute("a<b & \"c\" 'd'\n\te\r"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&#10;&#9;e&#13;"
        );
        assert_eq!(
            text("]]> <x/> & \"q\"\n\tz\r"),
            "]]&gt; &lt;x/&gt; &amp; \"q\"\n\tz&#13;"
        );
        // What XML 1.0 cannot hold, even as a reference, is shown as text.
        assert_eq!(
            text("\u{1b}[31m\u{0}\u{7}\u{FFFE}"),
            "#x1B[31m#x00#x07#xFFFE"
        );
        // What it can hold is kept: DEL, C1 controls, astral characters.
        assert_eq!(text("\u{7f}\u{85}\u{1F600}"), "\u{7f}\u{85}\u{1F600}");
    }

    #[test]
    fn durations_are_seconds_with_milliseconds() {
        assert_eq!(seconds(0), "0.000");
        assert_eq!(seconds(87), "0.087");
        assert_eq!(seconds(61_234), "61.234");
    }
}
