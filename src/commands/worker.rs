//! `proofgraph worker`: serve an engine's Actions through the Remote Workers API until
//! SIGINT or SIGTERM, each in a hermetic sandbox (the runner is [`crate::worker`]; this
//! command reads its options, decides the bot id and directories, and shapes the report).

use std::fmt::Write as _;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::interrupt::Interrupt;
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::Context;
use crate::store::remote::{Protocol, instance};
use crate::worker::{Served, WorkerEvent, WorkerOptions};

/// `worker`'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommandOptions {
    /// `--server grpc://host:port[/instance]`.
    pub server: String,
    /// `--instance NAME`.
    pub instance: Option<String>,
    /// `--capacity N`.
    pub capacity: NonZeroUsize,
    /// `--bot-id ID`.
    pub bot_id: Option<String>,
    /// `--property KEY=VALUE`, each.
    pub properties: Vec<String>,
}

/// The payload of `worker`, printed when it stops.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WorkerPayload {
    /// The engine.
    pub server: String,
    /// The bot id it served as.
    pub bot_id: String,
    /// What it did.
    pub served: Served,
}

impl Payload for WorkerPayload {
    fn human(&self, out: &mut String) {
        let s = &self.served;
        let _ = writeln!(
            out,
            "worker {} stopped: {} actions executed, {} failed, {} cancelled",
            self.bot_id, s.executed, s.failed, s.cancelled
        );
    }
}

/// The platform properties a worker offers unless told otherwise: this host's OS family
/// and instruction set, as REAPI spells them.
fn default_properties() -> Vec<(String, String)> {
    let isa = match std::env::consts::ARCH {
        "x86_64" => "x86-64",
        other => other,
    };
    vec![
        ("ISA".to_owned(), isa.to_owned()),
        ("OSFamily".to_owned(), std::env::consts::OS.to_owned()),
    ]
}

/// The defaults, overridden by `KEY=VALUE` entries.
fn properties(given: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = default_properties();
    for entry in given {
        let Some((key, value)) = entry.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(format!("`--property {entry}` is not KEY=VALUE"));
        };
        out.retain(|(k, _)| k != key);
        out.push((key.to_owned(), value.to_owned()));
    }
    out.sort();
    Ok(out)
}

/// The engine's URL with its instance: from `--server`'s path, or `--instance`.
fn engine_url(server: &str, instance_flag: Option<&str>) -> Result<(String, String), String> {
    match Protocol::of(server) {
        Ok((Protocol::Grpc, _)) => {}
        Ok(_) => {
            return Err(format!(
                "`--server {server}` is not a grpc:// or grpcs:// address"
            ));
        }
        Err(why) => return Err(format!("`--server {server}`: {why}")),
    }
    let in_path = instance(server).map_err(|e| e.to_string())?;
    let url = match (in_path.is_empty(), instance_flag) {
        (_, None) => server.to_owned(),
        (true, Some(name)) => format!("{}/{name}", server.trim_end_matches('/')),
        (false, Some(_)) => {
            return Err(format!(
                "`--server {server}` names the instance `{in_path}` and `--instance` another; give one"
            ));
        }
    };
    let name = instance(&url).map_err(|e| e.to_string())?;
    Ok((url, name))
}

/// The worker's state directory: `$XDG_STATE_HOME/proofgraph/worker`, else
/// `~/.local/state/proofgraph/worker`.
fn state_dir(ctx: &Context) -> PathBuf {
    let xdg = ctx
        .env()
        .var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    match xdg {
        Some(dir) => dir.join("proofgraph/worker"),
        None => ctx.env().home.join(".local/state/proofgraph/worker"),
    }
}

/// A line of the worker's log.
fn line(bot: &str, event: &WorkerEvent) -> String {
    let what = match event {
        WorkerEvent::SessionCreated { name } => format!("session {name} open"),
        WorkerEvent::Started { lease } => format!("lease {lease}: executing"),
        WorkerEvent::Executed {
            lease,
            exit_code,
            timed_out: false,
        } => format!("lease {lease}: done, exit code {exit_code}"),
        WorkerEvent::Executed { lease, .. } => format!("lease {lease}: timed out"),
        WorkerEvent::Failed { lease, reason } => format!("lease {lease}: failed to {reason}"),
        WorkerEvent::Cancelled { lease } => format!("lease {lease}: cancelled"),
        WorkerEvent::Retrying { reason } => {
            format!("the engine did not answer ({reason}); retrying")
        }
        WorkerEvent::Terminating => "stopping (BOT_TERMINATING sent)".to_owned(),
    };
    format!("worker {bot}: {what}")
}

/// Runs `worker` until SIGINT or SIGTERM.
pub fn run(ctx: &Context, options: &WorkerCommandOptions) -> Report<WorkerPayload> {
    let unusable = |why: String| {
        Report::failed(
            vec![
                Diagnostic::error(Code::WorkerUnusable, why)
                    .surface("worker")
                    .fix("Give `--server grpc://host:port` (the instance in its path or `--instance`), `--property KEY=VALUE`, and a writable state directory ($XDG_STATE_HOME)."),
            ],
            Verdict::Invalid,
        )
    };
    let interrupt = Interrupt::install();
    let (url, instance) = match engine_url(&options.server, options.instance.as_deref()) {
        Ok(found) => found,
        Err(why) => return unusable(why),
    };
    let properties = match properties(&options.properties) {
        Ok(p) => p,
        Err(why) => return unusable(why),
    };
    let state = state_dir(ctx);
    let bot_id = match &options.bot_id {
        Some(id) if !id.trim().is_empty() => id.clone(),
        Some(_) => return unusable("`--bot-id` is empty".to_owned()),
        None => {
            let host = fs_err::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            match crate::worker::default_bot_id(&state, &host) {
                Ok(id) => id,
                Err(e) => return unusable(format!("the bot id could not be kept: {e}")),
            }
        }
    };
    let dir_name: String = bot_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let worker = WorkerOptions {
        url: url.clone(),
        instance,
        bot_id: bot_id.clone(),
        capacity: options.capacity.get(),
        properties,
        work_dir: state.join("work").join(dir_name),
    };
    let runtime = match ctx.runtime() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let log = |event: WorkerEvent| crate::present::output::note(&line(&bot_id, &event));
    let stop = || interrupt.is_set();
    match runtime.block_on(crate::worker::serve(&worker, &log, &stop)) {
        Ok(served) => Report {
            payload: Some(WorkerPayload {
                server: url,
                bot_id: bot_id.clone(),
                served,
            }),
            status: Vec::new(),
            verdict: Verdict::Success,
        },
        Err(e) => unusable(format!("failed to {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instance_comes_from_the_path_or_the_flag_never_both() {
        assert_eq!(
            engine_url("grpc://h:1/main", None),
            Ok(("grpc://h:1/main".into(), "main".into()))
        );
        assert_eq!(
            engine_url("grpc://h:1", Some("main")),
            Ok(("grpc://h:1/main".into(), "main".into()))
        );
        assert_eq!(
            engine_url("grpc://h:1", None),
            Ok(("grpc://h:1".into(), String::new()))
        );
        assert!(engine_url("grpc://h:1/a", Some("b")).is_err());
        assert!(engine_url("http://h:1", None).is_err());
    }

    #[test]
    fn properties_default_to_the_host_and_are_overridden() {
        let got = properties(&["OSFamily=plan9".into(), "pool=big".into()]).expect("valid");
        assert!(got.contains(&("OSFamily".into(), "plan9".into())));
        assert!(got.contains(&("pool".into(), "big".into())));
        assert_eq!(got.iter().filter(|(k, _)| k == "OSFamily").count(), 1);
        assert!(properties(&["novalue".into()]).is_err());
        assert!(properties(&["=x".into()]).is_err());
    }
}
