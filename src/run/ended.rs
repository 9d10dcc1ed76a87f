//! How one execution ended ([`Finished`]): what the run's `Exited` event becomes, dated,
//! and what every provider judged from that execution is judged from.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::decide::judge::Ended;
use crate::proof::receipt::{self, Exit};

/// How one execution ended: what every provider judged from it is judged from.
#[derive(Debug, Clone)]
pub(super) struct Finished {
    pub(super) ended: Ended,
    /// Overrides the reason of non-passing verdicts (a contract mismatch).
    pub(super) reason: Option<String>,
    pub(super) log: Option<PathBuf>,
    pub(super) duration: Duration,
    /// When the command started (absent when nothing ran): files it wrote are newer.
    pub(super) started: Option<SystemTime>,
    pub(super) started_at: String,
    pub(super) finished_at: String,
    /// Its command could not be started at all (a missing program, no permission): a
    /// configuration problem, not a result.
    pub(super) not_started: bool,
    /// Where its repositories were, and where what it wrote is (none when it ran nothing).
    pub(super) dirs: super::layers::ExecDirs,
    /// What its processes executed from outside the run's own directories, as the
    /// receipt binds it; `None` when not recorded.
    pub(super) executed: Option<Vec<receipt::ExecutedProgram>>,
    /// Where it ran, when a remote engine ran it (none: on this machine).
    pub(super) ran_on: Option<super::executor::RanOn>,
}

impl Finished {
    /// A provider that could not run at all, decided now.
    pub(super) fn error_now(reason: String) -> Self {
        let now = receipt::now_rfc3339();
        Finished {
            ended: Ended::Error(reason),
            reason: None,
            log: None,
            duration: Duration::ZERO,
            started: None,
            started_at: now.clone(),
            finished_at: now,
            not_started: false,
            dirs: super::layers::ExecDirs::default(),
            executed: None,
            ran_on: None,
        }
    }

    /// A command that ran for `duration` up to `wall`, logging to `log`. The run measured
    /// it from its own start, which may have come after a wait for a slot.
    pub(super) fn ran(ended: Ended, log: PathBuf, duration: Duration, wall: SystemTime) -> Self {
        let now = wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Finished {
            ended,
            reason: None,
            log: Some(log),
            duration,
            started: wall.checked_sub(duration),
            started_at: receipt::rfc3339(now.saturating_sub(duration)),
            finished_at: receipt::rfc3339(now),
            not_started: false,
            dirs: super::layers::ExecDirs::default(),
            executed: None,
            ran_on: None,
        }
    }
}

/// What a job executed, as a receipt binds it: each program outside `own` (the run's own
/// directories, whose files the fingerprint binds, and the job's private ones — its home,
/// `/tmp`, `/run`, `/dev`, `/proc` — whose files the job made), unless a host path (`shared`)
/// holds it, sorted. An execution that could not be read is kept with an empty digest, so a
/// receipt holding it is never reused.
pub(super) fn executed(
    recorded: &proofgraph_sandbox::Recorded,
    own: &[&std::path::Path],
    shared: &[PathBuf],
) -> Vec<receipt::ExecutedProgram> {
    const PRIVATE: [&str; 6] = ["/tmp", "/var/tmp", "/run", "/dev", "/proc", "/sys"];
    let mut out: Vec<receipt::ExecutedProgram> = recorded
        .files
        .iter()
        .filter(|e| {
            shared.iter().any(|dir| e.path.starts_with(dir))
                || !(own.iter().any(|dir| e.path.starts_with(dir))
                    || PRIVATE.iter().any(|dir| e.path.starts_with(dir)))
        })
        .map(|e| receipt::ExecutedProgram {
            path: e.path.to_string_lossy().into_owned(),
            digest: e.digest.clone(),
        })
        .chain(recorded.gaps.iter().map(|gap| receipt::ExecutedProgram {
            path: gap.clone(),
            digest: String::new(),
        }))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How a command the run reported `Exited` ended: it could not start, it was killed on
/// request before it finished (neither is an exit a verdict may follow from), or it exited.
pub(super) fn ended(
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    killed: bool,
    spawn_error: Option<String>,
) -> Ended {
    match spawn_error {
        Some(e) => Ended::Error(format!("its command could not be started: {e}")),
        None if killed => Ended::Error("it was killed before it finished".to_owned()),
        None => Ended::Exited(Exit {
            code,
            signal,
            timed_out,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_is_an_outcome_only_when_the_command_started_and_was_not_killed() {
        assert_eq!(
            ended(Some(127), None, false, false, Some("`x` not found".into())),
            Ended::Error("its command could not be started: `x` not found".into())
        );
        assert_eq!(
            ended(None, Some(9), false, true, None),
            Ended::Error("it was killed before it finished".into())
        );
        // A timeout kills too, but it is the command's own failure: an exit.
        assert_eq!(
            ended(None, Some(9), true, false, None),
            Ended::Exited(Exit {
                code: None,
                signal: Some(9),
                timed_out: true
            })
        );
        assert_eq!(
            ended(Some(3), None, false, false, None),
            Ended::Exited(Exit {
                code: Some(3),
                signal: None,
                timed_out: false
            })
        );
    }

    #[test]
    fn a_finished_command_is_dated_back_from_when_it_ended() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400 + 61);
        let finished = Finished::ran(
            Ended::Error("x".into()),
            PathBuf::from("/l"),
            Duration::from_millis(1_500),
            wall,
        );
        assert_eq!(finished.started_at, "1970-01-02T00:00:59.500Z");
        assert_eq!(finished.finished_at, "1970-01-02T00:01:01.000Z");
        assert_eq!(
            finished.started,
            wall.checked_sub(Duration::from_millis(1_500))
        );
        assert_eq!(finished.log, Some(PathBuf::from("/l")));
        assert_eq!(finished.reason, None);
        let now = Finished::error_now("why".into());
        assert_eq!(now.started_at, now.finished_at);
        assert_eq!(
            (now.duration, now.started, now.log),
            (Duration::ZERO, None, None)
        );
    }
}
