//! The only place that writes to stdout and stderr.
//!
//! Under `--json`, stdout carries exactly one JSON document, two-space
//! indented: `{schema_version: 1, ...payload, status: [diagnostic]}`. When a
//! command fails, the payload is its null shape (the same keys, with null or
//! empty values). Without `--json`, the payload is rendered as text on stdout
//! and diagnostics go to stderr. Progress always goes to stderr.
//!
//! Whatever a command hands over, no secret of the change it loaded leaves here: the
//! JSON document's every string (and key), the human text, the diagnostics and every
//! progress line go through [`Secrets`] first ([`emit_redacted`], [`ProgressBar::with_secrets`]).

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::Serialize;

use crate::base::diagnostic::{Diagnostic, Severity};
use crate::base::redact::{Redact as _, Secrets};
use crate::present::exit::{Verdict, process_exit_code};

/// The version of every JSON document's shape.
pub const SCHEMA_VERSION: u32 = 1;

/// A command's result payload: serializable, with a null shape (its
/// `Default`) and a human rendering.
pub trait Payload: Serialize + Default {
    /// Renders the payload for a person.
    fn human(&self, out: &mut String);

    /// Whether [`Payload::human`] is a document written as it is (a log, a CI report),
    /// not prose: its control characters are then the document's own. Prose never writes
    /// one a name or a report brought in (see [`printable`]).
    fn raw(&self) -> bool {
        false
    }
}

/// `text` safe to show on a terminal: a colour sequence (`ESC [ … m`, as test runners
/// print) is dropped, and every other control character but newline and tab is shown
/// escaped (`\u{1b}`), so that a test name, a reason or a log line from a report can never
/// move the cursor, retitle the window or write the clipboard (`ESC ] 52`) of whoever
/// reads the output.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            // A CSI sequence: parameters and intermediates, then a final byte.
            let mut seq = String::from("\u{1b}[");
            chars.next();
            let mut complete = false;
            while let Some(&n) = chars.peek() {
                chars.next();
                seq.push(n);
                if ('@'..='~').contains(&n) {
                    complete = true;
                    break;
                }
                if !(' '..='?').contains(&n) {
                    break;
                }
            }
            if complete && seq.ends_with('m') {
                continue;
            }
            for s in seq.chars() {
                if unsafe_char(s) {
                    out.extend(s.escape_unicode());
                } else {
                    out.push(s);
                }
            }
        } else if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// What a command hands to the output layer.
#[derive(Debug)]
pub struct Report<P> {
    /// The payload; `None` when the command failed before producing one.
    pub payload: Option<P>,
    /// Diagnostics, in the order they should be read.
    pub status: Vec<Diagnostic>,
    /// The conclusion that decides the exit code.
    pub verdict: Verdict,
}

impl<P> Report<P> {
    /// A failed command: the null shape plus its diagnostics.
    pub fn failed(status: Vec<Diagnostic>, verdict: Verdict) -> Self {
        Self {
            payload: None,
            status,
            verdict,
        }
    }
}

#[derive(Serialize)]
struct Document<'a, P> {
    schema_version: u32,
    #[serde(flatten)]
    payload: &'a P,
    status: &'a [Diagnostic],
}

/// How output is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One JSON document on stdout.
    Json,
    /// Text for people.
    Human,
}

/// Writes a report and returns the process exit code.
pub fn emit<P: Payload>(mode: Mode, report: Report<P>) -> u8 {
    emit_redacted(mode, report, &Secrets::none())
}

/// Writes a report with every secret in `secrets` replaced, and returns the process exit
/// code.
pub fn emit_redacted<P: Payload>(mode: Mode, report: Report<P>, secrets: &Secrets) -> u8 {
    let code = process_exit_code(report.verdict);
    let result = match mode {
        Mode::Json => {
            let null = P::default();
            let payload = report.payload.as_ref().unwrap_or(&null);
            let document = Document {
                schema_version: SCHEMA_VERSION,
                payload,
                status: &report.status,
            };
            if secrets.is_empty() {
                write_json(&document)
            } else {
                // Values, never the serialized text: a secret is found in each string as
                // it is, then the document is written as JSON again.
                serde_json::to_value(&document)
                    .map_err(io::Error::other)
                    .and_then(|mut value| {
                        value.redact(secrets);
                        write_json(&value)
                    })
            }
        }
        Mode::Human => {
            let raw = report.payload.as_ref().is_some_and(Payload::raw);
            let mut text = String::new();
            if let Some(payload) = &report.payload {
                payload.human(&mut text);
            }
            let mut status = report.status;
            status.redact(secrets);
            let text = secrets.text(&text);
            if raw {
                write_human(&text, &status)
            } else {
                write_human(&printable(&text), &status)
            }
        }
    };
    match result {
        Ok(()) => code,
        // stdout closed (`| head`): nothing more can be said; keep the code.
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => code,
        Err(_) => process_exit_code(Verdict::Invalid),
    }
}

fn write_json<T: Serialize>(document: &T) -> io::Result<()> {
    // Buffered: the serializer writes token by token.
    let mut stdout = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    serde_json::to_writer_pretty(&mut stdout, document)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

fn write_human(text: &str, status: &[Diagnostic]) -> io::Result<()> {
    {
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
    }
    if !status.is_empty() {
        let mut rendered = String::new();
        for diagnostic in status {
            render_diagnostic(diagnostic, &mut rendered);
        }
        let mut stderr = io::stderr().lock();
        stderr.write_all(printable(&rendered).as_bytes())?;
    }
    Ok(())
}

/// One line of prose on stderr (for commands without a progress bar).
pub fn note(line: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
    let _ = stderr.flush();
}

/// Renders one diagnostic for a terminal:
///
/// ```text
/// error[unknown_adapter]: `adapter` of provider `test` is `comand`, ...
///   --> openspec/changes/x/execution.yaml:4:18
///   fix: Did you mean `command`?
/// ```
pub fn render_diagnostic(diagnostic: &Diagnostic, out: &mut String) {
    let severity = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    };
    let _ = writeln!(
        out,
        "{severity}[{}]: {}",
        diagnostic.code, diagnostic.message
    );
    if let Some(target) = &diagnostic.target {
        let _ = writeln!(out, "  --> {target}");
    }
    if let Some(fix) = &diagnostic.fix {
        let _ = writeln!(out, "  fix: {fix}");
    }
}

/// Progress of a long command on stderr: plain lines everywhere, and on a
/// terminal (not `TERM=dumb`, not `CI`) a status bar under them, redrawn in
/// place and erased at the end. Logs and pipes never see an escape code.
#[derive(Debug)]
pub struct ProgressBar {
    tty: bool,
    width: usize,
    bar: std::sync::Mutex<Option<String>>,
    secrets: Secrets,
}

/// Erase the current line.
const ERASE: &str = "\r\x1b[2K";

impl ProgressBar {
    /// A progress sink on stderr, drawing a bar when `tty` (see
    /// [`ProgressBar::stderr_is_terminal`]).
    pub fn new(tty: bool, width: usize) -> Self {
        Self {
            tty,
            width: width.max(20),
            bar: std::sync::Mutex::new(None),
            secrets: Secrets::none(),
        }
    }

    /// The same sink, writing nothing that holds one of `secrets`.
    pub fn with_secrets(self, secrets: Secrets) -> Self {
        Self { secrets, ..self }
    }

    /// Whether stderr is a terminal a bar may be drawn on.
    pub fn stderr_is_terminal(env: &crate::base::env::Env) -> bool {
        use std::io::IsTerminal as _;
        let var = |name: &str| env.vars.get(std::ffi::OsStr::new(name));
        io::stderr().is_terminal()
            && var("TERM").is_none_or(|t| t != "dumb")
            && var("CI").is_none_or(|v| v.is_empty() || v == "false" || v == "0")
    }

    /// The terminal's width from `COLUMNS`, else 80.
    pub fn width(env: &crate::base::env::Env) -> usize {
        env.vars
            .get(std::ffi::OsStr::new("COLUMNS"))
            .and_then(|c| c.to_str()?.parse().ok())
            .unwrap_or(80)
    }

    /// A line of progress, above the bar.
    pub fn line(&self, line: &str) {
        let line = self.secrets.text(line);
        let line = printable(&line);
        let bar = self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // One write per line (stderr is unbuffered: `writeln!` would make several).
        let text = match (&*bar, self.tty) {
            (Some(b), true) => format!("{ERASE}{line}\n{b}"),
            _ => format!("{line}\n"),
        };
        let mut stderr = io::stderr().lock();
        let _ = stderr.write_all(text.as_bytes());
        let _ = stderr.flush();
    }

    /// Redraws the bar (on a terminal; otherwise nothing).
    pub fn status(&self, done: usize, total: usize, running: &[&str]) {
        if !self.tty {
            return;
        }
        let text = self
            .secrets
            .text(&render_bar(done, total, running, self.width))
            .into_owned();
        let mut stderr = io::stderr().lock();
        let _ = write!(stderr, "{ERASE}{text}");
        let _ = stderr.flush();
        *self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(text);
    }

    /// Erases the bar.
    pub fn finish(&self) {
        let mut bar = self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if bar.take().is_some() && self.tty {
            let mut stderr = io::stderr().lock();
            let _ = write!(stderr, "{ERASE}");
            let _ = stderr.flush();
        }
    }
}

/// `[#######.............] 3/12  running: test, lint`, at most `width` characters.
pub fn render_bar(done: usize, total: usize, running: &[&str], width: usize) -> String {
    const CELLS: usize = 20;
    let filled = (done * CELLS)
        .checked_div(total)
        .unwrap_or(CELLS)
        .min(CELLS);
    let mut text = format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        ".".repeat(CELLS - filled)
    );
    if !running.is_empty() {
        text.push_str("  running: ");
        text.push_str(&running.join(", "));
    }
    if text.chars().count() > width {
        text = text.chars().take(width.saturating_sub(1)).collect();
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{printable, render_bar};

    #[test]
    fn printable_drops_colours_and_escapes_every_other_control() {
        // Nothing to do: the same text, not a copy.
        assert!(matches!(
            printable("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(printable("\u{1b}[31mred\u{1b}[0m ok"), "red ok");
        assert_eq!(printable("a\u{1b}[1;32mb"), "ab");
        // A clipboard write, a title, a bell, a cursor move, a clear: shown, not done.
        assert_eq!(
            printable("x\u{1b}]52;c;ZXZpbA==\u{7}y"),
            "x\\u{1b}]52;c;ZXZpbA==\\u{7}y"
        );
        assert_eq!(printable("\u{1b}[2J"), "\\u{1b}[2J");
        assert_eq!(printable("\u{1b}[10;1H"), "\\u{1b}[10;1H");
        assert_eq!(printable("\r\u{8}"), "\\u{d}\\u{8}");
        // A C1 control (8-bit CSI) and DEL.
        assert_eq!(printable("\u{9b}2J\u{7f}"), "\\u{9b}2J\\u{7f}");
        // An unfinished sequence at the end, or one broken by a control.
        assert_eq!(printable("end\u{1b}[3"), "end\\u{1b}[3");
        assert_eq!(printable("\u{1b}[3\u{7}m"), "\\u{1b}[3\\u{7}m");
        assert_eq!(printable("lone \u{1b}"), "lone \\u{1b}");
    }

    #[test]
    fn the_bar_fills_in_proportion_and_fits_the_width() {
        assert_eq!(render_bar(0, 4, &[], 80), "[....................] 0/4");
        assert_eq!(
            render_bar(1, 4, &["test", "lint"], 80),
            "[#####...............] 1/4  running: test, lint"
        );
        assert_eq!(render_bar(0, 0, &[], 80), "[####################] 0/0");
        let narrow = render_bar(1, 4, &["a-very-long-provider-name"; 4], 40);
        assert_eq!(narrow.chars().count(), 40);
        assert!(narrow.ends_with('…'));
    }
}
