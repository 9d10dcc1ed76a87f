//! `completions <shell>` and `man [<command>]`: text the command line makes of its own
//! definition (`crate::cli`, the one module that knows clap), printed as it is.

use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};

/// What `completions` prints.
#[derive(Debug, Default, Serialize)]
pub struct CompletionsPayload {
    /// The shell.
    pub shell: Option<String>,
    /// The script to source.
    pub script: Option<String>,
}

impl Payload for CompletionsPayload {
    fn human(&self, out: &mut String) {
        out.push_str(self.script.as_deref().unwrap_or_default());
    }
    fn raw(&self) -> bool {
        true
    }
}

/// What `man` prints.
#[derive(Debug, Default, Serialize)]
pub struct ManPayload {
    /// The command whose page it is (`None`: proofgraph's own).
    pub command: Option<String>,
    /// The page, in roff.
    pub page: Option<String>,
}

impl Payload for ManPayload {
    fn human(&self, out: &mut String) {
        out.push_str(self.page.as_deref().unwrap_or_default());
    }
    fn raw(&self) -> bool {
        true
    }
}

/// A text the command line could not make: a bug, never bad input.
fn unmade(what: &str, why: &str) -> Diagnostic {
    Diagnostic::error(
        Code::InternalError,
        format!("the {what} could not be made: {why}"),
    )
    .fix("This is a bug: report it with the command line.")
}

/// `completions <shell>`.
pub fn completions(shell: &str, script: Result<String, String>) -> Report<CompletionsPayload> {
    match script {
        Ok(script) => Report {
            payload: Some(CompletionsPayload {
                shell: Some(shell.to_owned()),
                script: Some(script),
            }),
            status: Vec::new(),
            verdict: Verdict::Success,
        },
        Err(why) => Report::failed(vec![unmade("completion script", &why)], Verdict::Invalid),
    }
}

/// `man [<command>]`.
pub fn man(command: Option<String>, page: Result<String, String>) -> Report<ManPayload> {
    match page {
        Ok(page) => Report {
            payload: Some(ManPayload {
                command,
                page: Some(page),
            }),
            status: Vec::new(),
            verdict: Verdict::Success,
        },
        Err(why) => Report::failed(vec![unmade("man page", &why)], Verdict::Invalid),
    }
}
