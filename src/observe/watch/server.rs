//! The daemon: [`Watcher::serve`] listens on the socket until stopped and
//! answers each query from the work trees it keeps.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use super::client::is_served;
use super::protocol::{
    CLIENT_TIMEOUT, SnapshotHeader, accept_request, answer_frame, bind, encode, refusal_frame,
};
use super::tree::Watcher;

/// How long the watcher waits for a connection before it looks at its stop
/// flag again. A stop is normally seen at once, woken by a connection; this
/// bounds it when nothing can connect (the socket, or its directory, was
/// deleted).
const STOP_POLL: Duration = Duration::from_millis(500);

/// Whether a connection is waiting on `listener`, after waiting for one up
/// to [`STOP_POLL`]. `false` when interrupted by a signal (a stop may have
/// been raised); `true` when `poll` fails otherwise, so that `accept` waits
/// and says what is wrong, as it would without the poll.
fn connection_waiting(listener: &UnixListener) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(listener, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: i64::try_from(STOP_POLL.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(STOP_POLL.subsec_nanos()),
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) => n > 0,
        Err(rustix::io::Errno::INTR) => false,
        Err(_) => true,
    }
}

impl Watcher {
    /// Listens on `socket` (removing a stale one; refusing when another
    /// watcher answers there) and answers queries until `stop` is raised:
    /// seen at the next connection ([`wake`](super::wake) makes one), and
    /// within [`STOP_POLL`] when none can be made (the socket was deleted).
    pub fn serve(
        &mut self,
        socket: &Path,
        stop: &std::sync::atomic::AtomicBool,
    ) -> std::io::Result<()> {
        if socket.exists() {
            if is_served(socket) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!("another watcher already serves {}", socket.display()),
                ));
            }
            fs_err::remove_file(socket)?;
        }
        let listener = bind(socket)?;
        loop {
            let waited = connection_waiting(&listener);
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            if !waited {
                continue;
            }
            let Ok((stream, _)) = listener.accept() else {
                continue;
            };
            self.answer(&stream);
        }
        Ok(())
    }

    fn answer(&mut self, stream: &UnixStream) {
        let _ = stream.set_read_timeout(Some(CLIENT_TIMEOUT));
        let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
        let mut line = String::new();
        // A connection that says nothing (a liveness check, a wake-up) gets
        // nothing.
        if BufReader::new(stream).read_line(&mut line).is_err() || line.trim().is_empty() {
            return;
        }
        let started = Instant::now();
        let result = accept_request(&line, &self.mount_namespace).and_then(|r| {
            let wanted: Vec<(&Path, &[String])> = r
                .wanted
                .iter()
                .map(|w| (w.dir.as_path(), w.exclude.as_slice()))
                .collect();
            // Encoded straight from the work trees' snapshots: no copy
            // of 20 000 paths per answer.
            let mut headers = Vec::with_capacity(wanted.len());
            let mut body = Vec::new();
            for ((dir, t, rehashed), (_, exclude)) in
                self.refreshed(&wanted)?.into_iter().zip(&wanted)
            {
                let mut files = 0;
                for (path, f) in self.files_below(t, &dir, exclude)? {
                    encode(path, f, &mut body);
                    files += 1;
                }
                let untracked = self.untracked(t, &dir, exclude)?;
                for f in &untracked {
                    encode(&f.path, f, &mut body);
                }
                headers.push(SnapshotHeader {
                    dir,
                    files,
                    untracked: untracked.len(),
                    rehashed,
                });
            }
            Ok((headers, body))
        });
        let out = match result {
            Ok((snapshots, body)) => {
                self.served.answered += 1;
                let (files, rehashed) = snapshots
                    .iter()
                    .fold((0, 0), |(f, r), s| (f + s.files, r + s.rehashed));
                let count = snapshots.len();
                let out = answer_frame(snapshots, &body);
                (self.log)(&format!(
                    "answered {count} director{}: {files} files, {rehashed} re-read, {} asked whether open for writing ({:.1} ms)",
                    if count == 1 { "y" } else { "ies" },
                    self.asked,
                    started.elapsed().as_secs_f64() * 1000.0
                ));
                out
            }
            Err(reason) => {
                self.served.refused += 1;
                (self.log)(&format!("refused a query: {reason}"));
                refusal_frame(reason)
            }
        };
        let _ = (&*stream).write_all(&out);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::base::testing::{commit_all, git, write};
    use crate::observe::inputs;
    use crate::observe::watch::{SOCKET, Served, query, wake};

    /// Serves `socket` on a thread until `stop` is raised and it is woken,
    /// once it answers; what it did, when it stops.
    fn serving(
        socket: &Path,
        stop: &Arc<AtomicBool>,
    ) -> std::thread::JoinHandle<std::io::Result<Served>> {
        let (path, flag) = (socket.to_path_buf(), Arc::clone(stop));
        let handle = std::thread::spawn(move || {
            let mut watcher = Watcher::new(
                Box::new(|_| {}),
                crate::observe::watch::GitUserFiles::default(),
            )?;
            watcher.serve(&path, &flag).map(|()| watcher.served())
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while !is_served(socket) {
            assert!(!handle.is_finished(), "the watcher stopped early");
            assert!(Instant::now() < deadline, "the watcher did not answer");
            std::thread::sleep(Duration::from_millis(10));
        }
        handle
    }

    /// The watcher answers a client with the snapshots a direct read
    /// gives, replacing a stale socket; refuses a query it cannot answer,
    /// and a second watcher on its socket; and stops when woken with its
    /// flag raised, saying what it did.
    #[test]
    fn a_served_query_is_the_direct_snapshot() {
        let repo = tempfile::tempdir().expect("tempdir");
        let dir = repo.path();
        git(dir, &["init", "-q"]);
        write(dir, "a.txt", "a\n");
        write(dir, "sub/b.txt", "b\n");
        commit_all(dir);
        write(dir, "sub/new/c.txt", "not added yet\n");
        let store = tempfile::tempdir().expect("tempdir");
        let socket = store.path().join(SOCKET);
        drop(UnixListener::bind(&socket).expect("bind"));
        assert!(socket.exists() && !is_served(&socket), "a stale socket");
        let stop = Arc::new(AtomicBool::new(false));
        let handle = serving(&socket, &stop);

        let sub = dir.join("sub");
        let wanted: [(&Path, &[String]); 2] = [(dir, &[]), (&sub, &[])];
        let answered = query(store.path(), &wanted).expect("an answer");
        let direct = inputs::snapshots(&wanted);
        assert_eq!(answered.len(), 2);
        for ((a, untracked), d) in answered.iter().zip(direct) {
            let d = d.expect("a snapshot");
            assert_eq!((&a.dir, &a.files), (&d.dir, &d.files));
            let walked = inputs::untracked(&d.dir, &[]).expect("a walk");
            assert_eq!(untracked, &walked);
            assert_eq!(walked.len(), 1, "sub/new/c.txt, from either directory");
        }
        let missing = dir.join("missing");
        assert!(
            query(store.path(), &[(&missing, &[])]).is_none(),
            "a directory that is not there"
        );
        let mut other = std::os::unix::net::UnixStream::connect(&socket).expect("connect");
        other
            .write_all(b"{\"protocol\": \"proofgraph-watch/0\", \"mount_namespace\": null, \"wanted\": []}\n")
            .expect("ask");
        let mut header = String::new();
        BufReader::new(&other)
            .read_line(&mut header)
            .expect("a header");
        assert!(header.contains("\"ok\":false"), "{header}");
        assert!(
            header.contains("the client speaks `proofgraph-watch/0`"),
            "{header}"
        );

        let mut second = Watcher::new(
            Box::new(|_| {}),
            crate::observe::watch::GitUserFiles::default(),
        )
        .expect("inotify is usable");
        let e = second
            .serve(&socket, &AtomicBool::new(false))
            .expect_err("one watcher per socket");
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);

        stop.store(true, Ordering::SeqCst);
        // The server also looks at the flag whenever its poll times out: it may have
        // stopped before this connection, which then finds no listener (or is never
        // accepted). Either way it stops; the wake, when accepted, is one more refusal.
        let woken = wake(&socket);
        let served = handle.join().expect("the thread").expect("served");
        assert_eq!(served.answered, 1, "{served:?}");
        match woken {
            Ok(()) => assert!((1..=2).contains(&served.refused), "{served:?}"),
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
                assert_eq!(served.refused, 1, "{served:?}");
            }
        }
        assert_eq!(served.full_snapshots, 1);
        let canonical = fs_err::canonicalize(dir).expect("canonical");
        assert_eq!(served.work_trees, [canonical.display().to_string()]);
    }

    /// A watcher whose socket was deleted with its directory cannot be woken
    /// by a connection; raising its flag stops it all the same.
    #[test]
    fn a_watcher_whose_socket_is_gone_stops_when_told() {
        let store = tempfile::tempdir().expect("tempdir");
        let dir = store.path().join("store");
        fs_err::create_dir(&dir).expect("mkdir");
        let socket = dir.join(SOCKET);
        let stop = Arc::new(AtomicBool::new(false));
        let handle = serving(&socket, &stop);
        fs_err::remove_dir_all(&dir).expect("rm -r");
        stop.store(true, Ordering::SeqCst);
        assert!(wake(&socket).is_err(), "nothing to connect to");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !handle.is_finished() {
            assert!(Instant::now() < deadline, "the watcher did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        let served = handle.join().expect("the thread").expect("served");
        assert_eq!((served.answered, served.refused), (0, 0));
    }
}
