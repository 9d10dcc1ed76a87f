//! The only place that writes to stdout and stderr.
//!
//! Under `--json`, stdout carries exactly one JSON document, two-space
//! indented: `{schema_version: 1, ...payload, status: [diagnostic]}`. When a
//! command fails, the payload is its null shape (the same keys, with null or
//! empty values). Without `--json`, the payload is rendered as text on stdout
//! and diagnostics go to stderr. Progress always goes to stderr.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::Serialize;

use crate::diagnostic::{Diagnostic, Severity};
use crate::exit::{Verdict, process_exit_code};

/// The version of every JSON document's shape.
pub const SCHEMA_VERSION: u32 = 1;

/// A command's result payload: serializable, with a null shape (its
/// `Default`) and a human rendering.
pub trait Payload: Serialize + Default {
    /// Renders the payload for a person.
    fn human(&self, out: &mut String);
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
    let code = process_exit_code(report.verdict);
    let result = match mode {
        Mode::Json => {
            let null = P::default();
            let payload = report.payload.as_ref().unwrap_or(&null);
            write_json(&Document {
                schema_version: SCHEMA_VERSION,
                payload,
                status: &report.status,
            })
        }
        Mode::Human => {
            let mut text = String::new();
            if let Some(payload) = &report.payload {
                payload.human(&mut text);
            }
            write_human(&text, &report.status)
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
    let mut stdout = io::stdout().lock();
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
        stderr.write_all(rendered.as_bytes())?;
    }
    Ok(())
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

/// Writes one line of progress to stderr (never stdout, so `--json` output
/// stays one document).
pub fn progress(line: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}
