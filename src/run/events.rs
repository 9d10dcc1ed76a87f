//! What the executor tells its caller: progress while it runs ([`Progress`], each line a
//! typed [`Line`]), and what happened to each provider ([`ProviderRun`], its
//! [`ProviderAction`] and the receipts written or reused). The executor emits these; the
//! output layer decides how to draw them (nextest's runner/reporter split).

use std::fmt;

use proofgraph_graph::{ProviderId, RepoId, ServiceId};
use serde::Serialize;

use crate::proof::receipt::{Failures, Outcome};
use crate::store::Sha256;

/// What the executor reports while it runs (for a person; never parsed).
#[derive(Debug, Clone, Copy)]
pub enum Progress<'s> {
    /// Something happened: a provider started or ended, a service started.
    Line(Line<'s>),
    /// Where the run stands.
    Status {
        /// Providers with a result.
        done: usize,
        /// Providers this run will decide.
        total: usize,
        /// Providers running now.
        running: &'s [&'s str],
    },
}

/// One thing that happened in a run, as a line for a person ([`fmt::Display`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'s> {
    /// A repository's sandbox got its setup from the setup cache.
    SetupRestored {
        /// The repository.
        repo: &'s RepoId,
        /// How many files the kept output holds.
        files: usize,
        /// Why they were copied, when they were not mounted (an overlay of the store).
        copied: Option<&'s str>,
    },
    /// A repository's setup command starts.
    SetupCommand {
        /// The repository.
        repo: &'s RepoId,
        /// The command.
        argv: &'s [String],
    },
    /// A repository's setup did not run: the run works in place (`--sandbox none`), where
    /// the repository is used as it is.
    SetupSkipped {
        /// The repository.
        repo: &'s RepoId,
    },
    /// The run waits for another run of this workspace to end: both use a kept cargo
    /// build directory, and such runs take turns (`run/stamps.rs`).
    WaitingForBuildCache,
    /// A repository's setup failed.
    SetupFailed {
        /// The repository.
        repo: &'s RepoId,
        /// Why.
        reason: &'s str,
    },
    /// A provider has been running this long (`--heartbeat`).
    StillRunning {
        /// The provider.
        provider: &'s str,
        /// Since it started.
        elapsed: std::time::Duration,
        /// The tests its output reported so far, when it reported any.
        tally: Option<&'s crate::proof::receipt::Counts>,
    },
    /// A line its command wrote (`--stream`), redacted and with paths relative.
    Output {
        /// The provider.
        provider: &'s str,
        /// The line, without its end.
        line: &'s str,
    },
    /// A provider's command was handed to the run.
    Started {
        /// The provider.
        provider: &'s ProviderId,
    },
    /// Where a provider's action on the remote engine stands (`queued`, `executing on
    /// <worker>`).
    RemoteStage {
        /// The provider.
        provider: &'s str,
        /// What the engine said.
        stage: &'s crate::run::remote::Stage,
    },
    /// A provider's execution, which the remote executor lost, runs on this machine,
    /// sandboxed as any local one.
    RunsLocally {
        /// The provider.
        provider: &'s str,
        /// What the remote executor said.
        reason: &'s str,
    },
    /// A service was started.
    ServiceStarted {
        /// The service.
        service: &'s ServiceId,
    },
    /// A service no longer needed is being stopped.
    ServiceStopping {
        /// The service's node name.
        name: &'s str,
    },
    /// A service ended on its own.
    ServiceEnded {
        /// The service's node name.
        name: &'s str,
        /// How it ended (`exited with code 1`).
        how: &'s str,
    },
    /// A provider was judged.
    Judged {
        /// The provider.
        provider: &'s ProviderId,
        /// How it ended, in the words of the summary.
        mark: Mark,
        /// How long its execution took.
        duration_ms: u128,
        /// The first reason a receipt gives.
        reason: Option<&'s str>,
    },
    /// A judged provider's receipt could not be written.
    Unrecorded {
        /// The provider.
        provider: &'s str,
    },
    /// SIGINT or SIGTERM stops the run.
    Interrupted,
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::SetupRestored {
                repo,
                files,
                copied: None,
            } => write!(
                f,
                "  setup   {repo}: restored {files} files from the setup cache (mounted)"
            ),
            Line::SetupRestored {
                repo,
                files,
                copied: Some(why),
            } => write!(
                f,
                "  setup   {repo}: restored {files} files from the setup cache (copied: {why})"
            ),
            Line::SetupCommand { repo, argv } => {
                write!(f, "  setup   {repo}: {}", argv.join(" "))
            }
            Line::SetupFailed { repo, reason } => write!(f, "  setup   {repo} failed: {reason}"),
            Line::SetupSkipped { repo } => write!(
                f,
                "  setup   {repo}: not run (--sandbox none works in the repository as it is, with what is installed there)"
            ),
            Line::WaitingForBuildCache => write!(
                f,
                "  wait    another prove of this workspace is using the kept cargo build directories (`caches: [cargo-build]`); this one starts when it ends"
            ),
            Line::Started { provider } => write!(f, "  run     {provider}"),
            Line::StillRunning {
                provider,
                elapsed,
                tally,
            } => {
                let secs = elapsed.as_secs();
                let shown = if secs >= 60 {
                    format!("{}m{:02}s", secs / 60, secs % 60)
                } else {
                    format!("{secs}s")
                };
                write!(f, "  ...     {provider} still running ({shown}")?;
                if let Some(counts) = tally {
                    write!(f, "; so far {}", counts.shown())?;
                }
                write!(f, ")")
            }
            Line::Output { provider, line } => write!(f, "  {provider} | {line}"),
            Line::RemoteStage { provider, stage } => match stage {
                crate::run::remote::Stage::Queued => write!(f, "  remote  {provider}: queued"),
                crate::run::remote::Stage::Executing { worker: Some(w) } => {
                    write!(f, "  remote  {provider}: executing on {w}")
                }
                crate::run::remote::Stage::Executing { worker: None } => {
                    write!(f, "  remote  {provider}: executing")
                }
            },
            Line::RunsLocally { provider, reason } => write!(
                f,
                "  local   {provider}: the remote executor lost its execution ({reason}); running it on this machine, sandboxed"
            ),
            Line::ServiceStarted { service } => write!(f, "  start   service {service}"),
            Line::ServiceStopping { name } => write!(f, "  stop    {name}"),
            Line::ServiceEnded { name, how } => write!(f, "  ended   {name}: {how}"),
            Line::Judged {
                provider,
                mark,
                duration_ms,
                reason,
            } => {
                write!(f, "  {:7} {provider} ({duration_ms} ms)", mark.as_str())?;
                match reason {
                    Some(reason) => write!(f, ": {reason}"),
                    None => Ok(()),
                }
            }
            Line::Unrecorded { provider } => write!(
                f,
                "  unrecorded {provider}: its receipt could not be written (see the diagnostics)"
            ),
            Line::Interrupted => f.write_str("interrupted: stopping every process of the run"),
        }
    }
}

/// What `prove` did with a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderAction {
    /// It ran in this run.
    Ran,
    /// Its receipts were current passes: nothing ran.
    Reused,
    /// A dependency did not pass, or the run stopped after a failure.
    Blocked,
    /// SIGINT or SIGTERM stopped the run first.
    Interrupted,
    /// Nothing was judged (its inputs changed while its sandbox was made).
    NotRun,
    /// A discovery receiver, whose receipt its producer's run wrote.
    Produced,
}

/// What happened to one provider.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderRun {
    /// The provider.
    pub provider: String,
    /// What `prove` did with it.
    pub action: ProviderAction,
    /// Why it did not run, or how it ended.
    pub reason: Option<String>,
    /// How long its execution took.
    pub duration_ms: Option<u64>,
    /// The receipts written (or reused).
    pub receipts: Vec<ReceiptView>,
    /// How its execution ended, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Mark>,
    /// The SHA-256 of its command's log in the store, when it ran a command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Sha256>,
    /// The last lines of that log, when it did not pass (`proofgraph log` prints it all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Its failing tests with what their runner attached to each, as its receipts keep
    /// them (`proofgraph log` prints them too), when its report lists any.
    #[serde(skip_serializing_if = "Failures::is_empty")]
    pub failures: Failures,
}

/// How a provider's execution ended, in the words `prove` uses everywhere — progress,
/// summary and JSON: its requirements' states (`passed`, `failed`, `inconclusive`), or why
/// no verdict could follow (`timed out`, `could not start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mark {
    /// Every receipt passed.
    #[serde(rename = "passed")]
    Passed,
    /// A receipt failed (or is an error).
    #[serde(rename = "failed")]
    Failed,
    /// None failed, and one neither passed nor failed.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// The command ran out of its time.
    #[serde(rename = "timed out")]
    TimedOut,
    /// The command could not be started at all.
    #[serde(rename = "could not start")]
    CouldNotStart,
}

impl Mark {
    /// The word shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::Passed => "passed",
            Mark::Failed => "failed",
            Mark::Inconclusive => "inconclusive",
            Mark::TimedOut => "timed out",
            Mark::CouldNotStart => "could not start",
        }
    }

    /// The mark of outcomes, as a requirement combines them: any failure (or error) fails,
    /// else any inconclusive, else passed; how the command ended names a failure first.
    pub fn of(
        outcomes: impl IntoIterator<Item = Outcome>,
        timed_out: bool,
        not_started: bool,
    ) -> Self {
        let outcomes: Vec<Outcome> = outcomes.into_iter().collect();
        // Nothing to judge is not a failure of anything.
        if outcomes.iter().all(|o| *o == Outcome::Pass) {
            return Mark::Passed;
        }
        if not_started {
            Mark::CouldNotStart
        } else if timed_out {
            Mark::TimedOut
        } else if outcomes
            .iter()
            .any(|o| matches!(o, Outcome::Fail | Outcome::Error))
        {
            Mark::Failed
        } else {
            Mark::Inconclusive
        }
    }
}

/// A receipt written or reused.
#[derive(Debug, Clone, Serialize)]
pub struct ReceiptView {
    /// The name it is stored under.
    pub receipt: proofgraph_graph::ProviderId,
    /// The capability.
    pub capability: proofgraph_graph::CapabilityName,
    /// Its outcome.
    pub outcome: Outcome,
    /// Why it is not a pass.
    pub reason: Option<String>,
    /// The envelope's SHA-256.
    pub sha256: Sha256,
}

#[cfg(test)]
mod tests;
