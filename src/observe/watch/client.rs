//! What the commands call: [`query`] asks a running watcher for snapshots
//! (`world.rs`, before it takes them itself), [`is_served`] says whether one
//! answers (`doctor`, `watch`), [`wake`] unblocks one waiting for a query.
//! Every failure is `None` or `false`: a client never waits on a watcher
//! longer than [`CLIENT_TIMEOUT`], and never takes half an answer.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;

use super::protocol::{CLIENT_TIMEOUT, SOCKET, connect, read_body, read_header, request_line};
use crate::observe::inputs::{FileEntry, Snapshot};

/// Asks the watcher serving the store at `store_dir` for the snapshots of
/// `wanted` directories (each as [`inputs::snapshot`]`(dir, exclude)` would
/// take it), in order, each with its untracked files (as [`inputs::untracked`] finds
/// them). `None` when no watcher answers, or it cannot vouch for
/// all of them: take the snapshots directly.
///
/// [`inputs::snapshot`]: crate::observe::inputs::snapshot
/// [`inputs::untracked`]: crate::observe::inputs::untracked
pub fn query(
    store_dir: &Path,
    wanted: &[(&Path, &[String])],
) -> Option<Vec<(Snapshot, Vec<FileEntry>)>> {
    let socket = store_dir.join(SOCKET);
    if wanted.is_empty() || !socket.exists() {
        return None;
    }
    let stream = connect(&socket).ok()?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT)).ok()?;
    let line = request_line(wanted)?;
    (&stream).write_all(&line).ok()?;
    let mut reader = BufReader::with_capacity(256 * 1024, &stream);
    let mut header = String::new();
    reader.read_line(&mut header).ok()?;
    let headers = read_header(&header, wanted.len())?;
    let mut body = Vec::new();
    reader.read_to_end(&mut body).ok()?;
    read_body(headers, &body)
}

/// Whether a watcher answers on `socket`.
pub fn is_served(socket: &Path) -> bool {
    socket.exists() && connect(socket).is_ok()
}

/// Wakes a watcher blocked waiting for a query (to see its stop flag).
pub fn wake(socket: &Path) -> std::io::Result<()> {
    connect(socket).map(drop)
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::path::PathBuf;

    use proofgraph_graph::fingerprint::Digest;

    use super::*;
    use crate::observe::inputs::{FileEntry, FileKind};
    use crate::observe::watch::protocol::{
        SnapshotHeader, accept_request, answer_frame, encode, mount_namespace, refusal_frame,
    };

    /// Serves one connection on `store/watch.sock` with `answer`, given the
    /// request line; the request it got.
    fn answering_once(
        store: &Path,
        answer: impl FnOnce(&str) -> Vec<u8> + Send + 'static,
    ) -> std::thread::JoinHandle<String> {
        let listener = UnixListener::bind(store.join(SOCKET)).expect("bind");
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut line = String::new();
            BufReader::new(&stream)
                .read_line(&mut line)
                .expect("a request");
            (&stream).write_all(&answer(&line)).expect("answer");
            line
        })
    }

    fn entry(path: &str, byte: u8) -> FileEntry {
        FileEntry {
            path: path.to_owned(),
            id: Digest([byte; 32]),
            kind: FileKind::File,
        }
    }

    /// An exact answer to the request (one snapshot of `a.txt` and `b.txt`
    /// per directory asked), changed by `tamper` before it is sent.
    fn answer(line: &str, tamper: impl FnOnce(&mut Vec<SnapshotHeader>, &mut Vec<u8>)) -> Vec<u8> {
        let request = accept_request(line, &mount_namespace()).expect("a request to accept");
        let mut headers = Vec::new();
        let mut body = Vec::new();
        for w in &request.wanted {
            for f in [entry("a.txt", 1), entry("b.txt", 2), entry("new.txt", 3)] {
                encode(&f.path, &f, &mut body);
            }
            headers.push(SnapshotHeader {
                dir: w.dir.clone(),
                files: 2,
                untracked: 1,
                rehashed: 0,
            });
        }
        tamper(&mut headers, &mut body);
        answer_frame(headers, &body)
    }

    fn ask(store: &Path) -> Option<Vec<(Snapshot, Vec<FileEntry>)>> {
        let exclude = ["x/".to_owned()];
        query(
            store,
            &[(Path::new("/w/one"), &[]), (Path::new("/w/two"), &exclude)],
        )
    }

    #[test]
    fn a_query_takes_an_exact_answer() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let server = answering_once(tmp.path(), |line| answer(line, |_, _| {}));
        let got = ask(tmp.path()).expect("an answer");
        let line = server.join().expect("the server");
        let request = accept_request(&line, &mount_namespace()).expect("accepted");
        assert_eq!(request.wanted[1].exclude, ["x/"]);
        let dirs: Vec<&Path> = got.iter().map(|(s, _)| s.dir.as_path()).collect();
        assert_eq!(dirs, [Path::new("/w/one"), Path::new("/w/two")]);
        assert_eq!(got[1].0.files, [entry("a.txt", 1), entry("b.txt", 2)]);
        assert_eq!(got[1].1, [entry("new.txt", 3)]);
    }

    /// Whatever is wrong with an answer, the client takes none of it.
    #[test]
    fn a_query_takes_nothing_from_a_wrong_answer() {
        type Tamper = fn(&mut Vec<SnapshotHeader>, &mut Vec<u8>);
        let tampers: [(&str, Tamper); 5] = [
            ("a snapshot too few", |h, _| {
                h.pop();
            }),
            ("a file more announced", |h, _| h[1].files += 1),
            ("a byte missing", |_, b| {
                b.pop();
            }),
            ("a byte too many", |_, b| b.push(0)),
            ("an unknown kind", |_, b| b[0] = 7),
        ];
        for (what, tamper) in tampers {
            let tmp = tempfile::tempdir().expect("tempdir");
            let server = answering_once(tmp.path(), move |line| answer(line, tamper));
            assert!(ask(tmp.path()).is_none(), "{what}");
            server.join().expect("the server");
        }
        for frame in [
            refusal_frame("busy".to_owned()),
            b"not json\n".to_vec(),
            Vec::new(),
        ] {
            let tmp = tempfile::tempdir().expect("tempdir");
            let shown = String::from_utf8_lossy(&frame).into_owned();
            let server = answering_once(tmp.path(), move |_| frame);
            assert!(ask(tmp.path()).is_none(), "{shown:?}");
            server.join().expect("the server");
        }
    }

    /// No socket, a socket nothing listens on, or nothing asked: no query,
    /// and no watcher served.
    #[test]
    fn without_a_listening_watcher_nothing_is_served() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let socket: PathBuf = tmp.path().join(SOCKET);
        assert!(!is_served(&socket));
        assert!(ask(tmp.path()).is_none());
        assert!(wake(&socket).is_err());
        let listener = UnixListener::bind(&socket).expect("bind");
        assert!(is_served(&socket));
        assert!(wake(&socket).is_ok());
        assert!(query(tmp.path(), &[]).is_none(), "nothing asked");
        drop(listener);
        assert!(socket.exists(), "a stale socket stays");
        assert!(!is_served(&socket));
        assert!(ask(tmp.path()).is_none());
    }
}
