//! The daemon: [`Watcher::serve`] listens on the socket until stopped and
//! answers each query from the work trees it keeps.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Instant;

use super::client::is_served;
use super::protocol::{
    CLIENT_TIMEOUT, SnapshotHeader, accept_request, answer_frame, bind, encode, refusal_frame,
};
use super::tree::Watcher;

impl Watcher {
    /// Listens on `socket` (removing a stale one; refusing when another
    /// watcher answers there) and answers queries until the process ends.
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
        for stream in listener.incoming() {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
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
                headers.push(SnapshotHeader {
                    dir,
                    files,
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
