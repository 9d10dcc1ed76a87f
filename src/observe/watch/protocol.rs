//! What a client and the watcher say to each other over the Unix socket in
//! the store directory, and how the socket is reached.
//!
//! A query is one line of JSON ([`Request`]): the protocol spoken, the
//! client's mount namespace, and the directories wanted. The answer is one
//! line of JSON ([`Header`]) — a refusal with its reason, or one
//! [`SnapshotHeader`] per directory in the order asked — followed by the
//! snapshots' files (each directory's tracked files, then its untracked ones that git does
//! not ignore), [`encode`]d one after another, until the watcher closes
//! the connection. A client takes an answer only when every byte of it
//! decodes: a wrong count, an unknown kind, a truncated or overlong body is
//! no answer, and the client takes the snapshots itself.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use proofgraph_graph::fingerprint::Digest;
use serde::{Deserialize, Serialize};

use crate::observe::inputs::{FileEntry, FileKind, Snapshot};

/// The socket's name in the store directory.
pub const SOCKET: &str = "watch.sock";
/// The protocol: a change in what a snapshot means, or in the framing,
/// changes it, and a client and a watcher that disagree do not talk.
pub(super) const PROTOCOL: &str = concat!("proofgraph-watch/3 ", env!("CARGO_PKG_VERSION"));
/// How long a client waits for an answer (and the watcher for a request).
pub(super) const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// One query: the snapshots of several directories, answered together
/// after one synchronisation.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    pub(super) protocol: String,
    /// The client's mount namespace: the same path may name other files in
    /// another one.
    pub(super) mount_namespace: Option<String>,
    pub(super) wanted: Vec<Wanted>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Wanted {
    pub(super) dir: PathBuf,
    pub(super) exclude: Vec<String>,
}

/// The answer's first line; the snapshots' files follow, encoded, in order.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Header {
    ok: bool,
    reason: Option<String>,
    snapshots: Vec<SnapshotHeader>,
}

/// One directory's answer: `files` tracked files, then `untracked` untracked files git does
/// not ignore, in the body.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SnapshotHeader {
    pub(super) dir: PathBuf,
    pub(super) files: usize,
    pub(super) untracked: usize,
    pub(super) rehashed: usize,
}

/// The request line (newline included) for the snapshots of `wanted`
/// directories, each with what it excludes.
pub(super) fn request_line(wanted: &[(&Path, &[String])]) -> Option<Vec<u8>> {
    let request = Request {
        protocol: PROTOCOL.to_owned(),
        mount_namespace: mount_namespace(),
        wanted: wanted
            .iter()
            .map(|(dir, exclude)| Wanted {
                dir: dir.to_path_buf(),
                exclude: exclude.to_vec(),
            })
            .collect(),
    };
    let mut line = serde_json::to_vec(&request).ok()?;
    line.push(b'\n');
    Some(line)
}

/// The request on `line`, if the watcher in `mount_namespace` can answer it:
/// it speaks this protocol and comes from the same mount namespace (a
/// client whose namespace is unknown is refused too). Otherwise the reason.
pub(super) fn accept_request(
    line: &str,
    mount_namespace: &Option<String>,
) -> Result<Request, String> {
    let r = serde_json::from_str::<Request>(line).map_err(|e| format!("malformed request: {e}"))?;
    if r.protocol != PROTOCOL {
        Err(format!(
            "the client speaks `{}`, this watcher `{PROTOCOL}`",
            r.protocol
        ))
    } else if r.mount_namespace.is_none() || r.mount_namespace != *mount_namespace {
        Err(format!(
            "the client is in mount namespace {:?}, this watcher in {:?}",
            r.mount_namespace, mount_namespace
        ))
    } else {
        Ok(r)
    }
}

/// An answer: its header line, then `body` (the snapshots' encoded files).
pub(super) fn answer_frame(snapshots: Vec<SnapshotHeader>, body: &[u8]) -> Vec<u8> {
    let header = Header {
        ok: true,
        reason: None,
        snapshots,
    };
    let mut out = serde_json::to_vec(&header).unwrap_or_default();
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// A refusal: its header line alone.
pub(super) fn refusal_frame(reason: String) -> Vec<u8> {
    let header = Header {
        ok: false,
        reason: Some(reason),
        snapshots: Vec::new(),
    };
    let mut out = serde_json::to_vec(&header).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The snapshots an answer's header `line` announces, if it answers a query
/// for `wanted` directories; `None` for a refusal or anything else.
pub(super) fn read_header(line: &str, wanted: usize) -> Option<Vec<SnapshotHeader>> {
    let header: Header = serde_json::from_str(line).ok()?;
    (header.ok && header.snapshots.len() == wanted).then_some(header.snapshots)
}

/// The snapshots `headers` announce (tracked files) with each one's untracked files, from
/// the whole `body` that followed them; `None` unless it holds exactly their files.
pub(super) fn read_body(
    headers: Vec<SnapshotHeader>,
    body: &[u8],
) -> Option<Vec<(Snapshot, Vec<FileEntry>)>> {
    let mut rest = body;
    let mut out = Vec::with_capacity(headers.len());
    for h in headers {
        let (files, after) = decode(rest, h.files)?;
        let (untracked, after) = decode(after, h.untracked)?;
        rest = after;
        out.push((
            Snapshot {
                dir: h.dir,
                files,
                rehashed: h.rehashed,
            },
            untracked,
        ));
    }
    rest.is_empty().then_some(out)
}

/// Encodes one file of an answer, named `path` (relative to the answer's
/// directory).
pub(super) fn encode(path: &str, f: &FileEntry, out: &mut Vec<u8>) {
    out.push(match f.kind {
        FileKind::File => 0,
        FileKind::Executable => 1,
        FileKind::Symlink => 2,
    });
    out.extend_from_slice(&u32::try_from(path.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(&f.id.0);
}

/// Decodes `count` files from the front of `body`; the files and what
/// follows them.
fn decode(mut body: &[u8], count: usize) -> Option<(Vec<FileEntry>, &[u8])> {
    let mut files = Vec::with_capacity(count);
    for _ in 0..count {
        let (&kind, rest) = body.split_first()?;
        let kind = match kind {
            0 => FileKind::File,
            1 => FileKind::Executable,
            2 => FileKind::Symlink,
            _ => return None,
        };
        let len = usize::try_from(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
        let path = std::str::from_utf8(rest.get(4..4 + len)?).ok()?.to_owned();
        let id: [u8; 32] = rest.get(4 + len..4 + len + 32)?.try_into().ok()?;
        body = &rest[4 + len + 32..];
        files.push(FileEntry {
            path,
            id: Digest(id),
            kind,
        });
    }
    Some((files, body))
}

/// The mount namespace of this process (`mnt:[4026531841]`).
pub(super) fn mount_namespace() -> Option<String> {
    fs_err::read_link("/proc/self/ns/mnt")
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Unix socket paths are limited to 108 bytes; a longer one is reached
/// through the `/proc/self/fd` link of its open directory.
pub(super) fn connect(socket: &Path) -> std::io::Result<UnixStream> {
    with_short_path(socket, |p| UnixStream::connect(p))
}

/// Listens on `socket`, however long its path.
pub(super) fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    with_short_path(socket, |p| UnixListener::bind(p))
}

fn with_short_path<T>(
    socket: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T>,
) -> std::io::Result<T> {
    if socket.as_os_str().len() < 100 {
        return f(socket);
    }
    let parent = socket.parent().unwrap_or(Path::new("/"));
    let name = socket.file_name().unwrap_or_default();
    let dir = fs_err::File::open(parent)?;
    let short = PathBuf::from(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&dir)
    ))
    .join(name);
    f(&short)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<FileEntry> {
        vec![
            FileEntry {
                path: "a/b.txt".to_owned(),
                id: Digest([7; 32]),
                kind: FileKind::File,
            },
            FileEntry {
                path: "l".to_owned(),
                id: Digest([1; 32]),
                kind: FileKind::Symlink,
            },
            FileEntry {
                path: "run.sh".to_owned(),
                id: Digest([2; 32]),
                kind: FileKind::Executable,
            },
        ]
    }

    #[test]
    fn snapshots_cross_the_socket_unchanged() {
        let files = files();
        let mut bytes = Vec::new();
        for f in &files {
            encode(&f.path, f, &mut bytes);
        }
        assert_eq!(decode(&bytes, files.len()), Some((files.clone(), &[][..])));
        // A truncated body is refused, never half-read; what follows is left.
        assert_eq!(decode(&bytes[..bytes.len() - 1], files.len()), None);
        bytes.push(9);
        assert_eq!(
            decode(&bytes, files.len()),
            Some((files.clone(), &[9u8][..]))
        );
    }

    /// Every way a file's encoding can be wrong is refused: a kind byte out
    /// of range, a path that is not UTF-8, a length that runs past the end,
    /// a digest cut short, and a body cut at every byte.
    #[test]
    fn a_malformed_file_is_refused() {
        let f = &files()[0];
        let mut good = Vec::new();
        encode(&f.path, f, &mut good);
        assert!(decode(&good, 1).is_some());
        let mut kind = good.clone();
        kind[0] = 3;
        assert_eq!(decode(&kind, 1), None, "an unknown kind");
        let mut utf8 = good.clone();
        utf8[5] = 0xff;
        assert_eq!(decode(&utf8, 1), None, "a path that is not UTF-8");
        let mut long = good.clone();
        long[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&long, 1), None, "a length past the end");
        for cut in 0..good.len() {
            assert_eq!(decode(&good[..cut], 1), None, "cut at {cut}");
        }
        assert_eq!(decode(&good, 2), None, "fewer files than announced");
        assert_eq!(decode(&[], 0), Some((Vec::new(), &[][..])));
    }

    /// A whole answer, header and body, reads back as the snapshots it was
    /// made from; a header that does not match the query, or a body with a
    /// byte too few or too many, is no answer.
    #[test]
    fn an_answer_reads_back_only_when_it_is_exact() {
        let files = files();
        let mut body = Vec::new();
        for f in &files {
            encode(&f.path, f, &mut body);
        }
        let headers = || {
            vec![
                SnapshotHeader {
                    dir: PathBuf::from("/w/one"),
                    files: 1,
                    untracked: 1,
                    rehashed: 1,
                },
                SnapshotHeader {
                    dir: PathBuf::from("/w/two"),
                    files: 1,
                    untracked: 0,
                    rehashed: 0,
                },
            ]
        };
        let frame = answer_frame(headers(), &body);
        let newline = frame
            .iter()
            .position(|b| *b == b'\n')
            .expect("a header line");
        let line = std::str::from_utf8(&frame[..=newline]).expect("UTF-8");
        let rest = &frame[newline + 1..];
        assert_eq!(rest, body.as_slice());
        let got =
            read_body(read_header(line, 2).expect("two snapshots"), rest).expect("an exact answer");
        assert_eq!(got.len(), 2);
        assert_eq!(
            (
                got[0].0.dir.as_path(),
                got[0].0.files.as_slice(),
                got[0].1.as_slice(),
                got[0].0.rehashed
            ),
            (Path::new("/w/one"), &files[..1], &files[1..2], 1)
        );
        assert_eq!(
            (
                got[1].0.dir.as_path(),
                got[1].0.files.as_slice(),
                got[1].1.as_slice(),
                got[1].0.rehashed
            ),
            (Path::new("/w/two"), &files[2..], &[][..], 0)
        );
        assert!(read_header(line, 1).is_none(), "not what was asked");
        assert!(read_header(line, 3).is_none(), "not what was asked");
        assert!(read_body(headers(), &rest[..rest.len() - 1]).is_none());
        let mut longer = rest.to_vec();
        longer.push(0);
        assert!(read_body(headers(), &longer).is_none(), "bytes left over");
        let refusal = refusal_frame("no".to_owned());
        assert_eq!(refusal.last(), Some(&b'\n'));
        let refusal = std::str::from_utf8(&refusal).expect("UTF-8");
        assert!(read_header(refusal, 0).is_none(), "a refusal is no answer");
        assert!(read_header("", 0).is_none());
        assert!(read_header("{\"ok\": true}", 0).is_none(), "fields missing");
        assert!(read_header("not json", 0).is_none());
    }

    /// The watcher accepts a request this process makes, and refuses one
    /// from another protocol or mount namespace, one whose namespace is
    /// unknown, and one that is not a request, saying why.
    #[test]
    fn a_request_is_accepted_only_in_this_protocol_and_namespace() {
        let exclude = ["changes/".to_owned()];
        let wanted: [(&Path, &[String]); 2] =
            [(Path::new("/w/one"), &[]), (Path::new("/w/two"), &exclude)];
        let line = request_line(&wanted).expect("a request line");
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        let line = String::from_utf8(line).expect("UTF-8");
        let here = mount_namespace();
        assert!(here.is_some(), "/proc/self/ns/mnt is readable");
        let r = accept_request(&line, &here).expect("accepted");
        assert_eq!(r.wanted.len(), 2);
        assert_eq!(r.wanted[1].dir, Path::new("/w/two"));
        assert_eq!(r.wanted[1].exclude, exclude);

        let other = Some("mnt:[1]".to_owned());
        let e = accept_request(&line, &other).expect_err("another namespace");
        assert!(e.starts_with("the client is in mount namespace"), "{e}");
        let mut unknown: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        unknown["mount_namespace"] = serde_json::Value::Null;
        let e = accept_request(&unknown.to_string(), &here).expect_err("no namespace");
        assert!(e.contains("namespace None"), "{e}");
        let old = line.replace("proofgraph-watch/3 ", "proofgraph-watch/2 ");
        let e = accept_request(&old, &here).expect_err("another protocol");
        assert!(
            e.starts_with("the client speaks `proofgraph-watch/2 "),
            "{e}"
        );
        for garbage in [
            "",
            "{}",
            "[1]",
            "{\"protocol\": 2}",
            &line[..line.len() / 2],
        ] {
            let e = accept_request(garbage, &here).expect_err("malformed");
            assert!(e.starts_with("malformed request: "), "{garbage:?}: {e}");
        }
    }

    /// A socket whose path is longer than a Unix socket address can hold is
    /// bound and reached through its directory's descriptor.
    #[test]
    fn a_socket_with_a_long_path_is_reached() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("d".repeat(60)).join("e".repeat(60));
        fs_err::create_dir_all(&dir).expect("mkdir");
        let socket = dir.join(SOCKET);
        assert!(socket.as_os_str().len() > 108);
        assert!(
            UnixListener::bind(&socket).is_err(),
            "too long to bind as is"
        );
        let listener = bind(&socket).expect("bound");
        assert!(socket.exists(), "at its own path");
        let _client = connect(&socket).expect("connected");
        listener.accept().expect("accepted");
    }
}
