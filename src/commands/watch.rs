//! `proofgraph watch`: keep the workspace's snapshots current from
//! file-system events until stopped, so that `prove`, `plan`, `status`,
//! `explain` and `hash` started meanwhile need not `lstat` every tracked file.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::base::diagnostic::{Code, Diagnostic};
use crate::load::workspace::Workspace;
use crate::observe::watch::{GitUserFiles, SOCKET, Served, Watcher};
use crate::present::exit::Verdict;
use crate::present::output::{Payload, Report};
use crate::session::context::{Context, RootOutput};
use crate::store::Store;

/// The payload of `watch`, printed when it stops.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WatchPayload {
    /// The socket it answered on.
    pub socket: Option<String>,
    /// What it did.
    pub served: Option<Served>,
    /// The OpenSpec root.
    pub root: Option<RootOutput>,
}

impl Payload for WatchPayload {
    fn human(&self, out: &mut String) {
        if let Some(s) = &self.served {
            let _ = writeln!(
                out,
                "watch stopped: {} queries answered, {} refused, {} full snapshots",
                s.answered, s.refused, s.full_snapshots
            );
        }
    }
}

/// Runs `watch` until SIGINT or SIGTERM.
pub fn run(ctx: &Context) -> Report<WatchPayload> {
    let resolution = match ctx.resolve_root() {
        Ok(r) => r,
        Err(d) => return Report::failed(vec![d], Verdict::Invalid),
    };
    let workspace = Workspace::load(&resolution.root.path);
    let store = match Store::open(&workspace.root) {
        Ok(s) => s,
        Err(e) => {
            return Report::failed(vec![crate::store::diagnostic(&e)], Verdict::Invalid);
        }
    };
    let socket = store.dir().join(SOCKET);
    let unusable = |why: String| {
        Report::failed(
            vec![
                Diagnostic::error(Code::WatchUnavailable, why)
                    .surface("watch")
                    .fix("Stop the other watcher, or raise the inotify limits (`sysctl fs.inotify.max_user_watches`); commands work without a watcher, only slower."),
            ],
            Verdict::Invalid,
        )
    };
    if crate::observe::watch::is_served(&socket) {
        return unusable(format!(
            "another watcher already answers on {}",
            socket.display()
        ));
    }
    let mut watcher = match Watcher::new(
        Box::new(|line| crate::present::output::note(&format!("watch: {line}"))),
        GitUserFiles::of(ctx.env()),
    ) {
        Ok(w) => w,
        Err(e) => return unusable(format!("inotify cannot be used: {e}")),
    };
    let mut status = resolution.notes.clone();
    for repo in workspace.repositories.values() {
        if let Err(why) = watcher.snapshot(&repo.dir, &[]) {
            status.push(
                Diagnostic::warning(
                    Code::WatchUnavailable,
                    format!(
                        "repository `{}` ({}) is not watched yet: {why}",
                        repo.id, repo.path
                    ),
                )
                .surface("workspace.repositories")
                .fix("Make it a git work tree (`git init`, add its files) or raise `fs.inotify.max_user_watches`; commands read it without the watcher meanwhile."),
            );
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    if let Err(e) = stop_on_signals(Arc::clone(&stop), socket.clone()) {
        return unusable(format!("cannot handle signals: {e}"));
    }
    crate::present::output::note(&format!(
        "watch: answering on {} (SIGINT or SIGTERM stops it)",
        socket.display()
    ));
    if let Err(e) = watcher.serve(&socket, &stop) {
        return unusable(format!("cannot answer on {}: {e}", socket.display()));
    }
    let _ = fs_err::remove_file(&socket);
    crate::base::diagnostic::sort(&mut status);
    Report {
        payload: Some(WatchPayload {
            socket: Some(socket.display().to_string()),
            served: Some(watcher.served()),
            root: Some(RootOutput::from(&resolution.root)),
        }),
        status,
        verdict: Verdict::Success,
    }
}

/// On SIGINT or SIGTERM: raise `stop`, then wake the accept loop with a
/// connection of its own.
fn stop_on_signals(stop: Arc<AtomicBool>, socket: std::path::PathBuf) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    std::thread::Builder::new()
        .name("watch-signals".to_owned())
        .spawn(move || {
            runtime.block_on(async {
                let Ok(mut term) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                else {
                    return;
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            });
            stop.store(true, Ordering::SeqCst);
            let _ = crate::observe::watch::wake(&socket);
        })?;
    Ok(())
}
