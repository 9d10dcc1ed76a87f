//! A job's log as its receipt keeps it. The sandbox streams a job's output to disk (redacted
//! as it is written), so a log can be as long as the job made it; it is read here once, in
//! pieces of [`PIECE`] bytes, never whole: its size and SHA-256 are counted, its base64
//! forms of a secret looked for, and its first and last bytes kept. A log of at most
//! `keep` bytes (`logs.keepBytes` of `proofgraph.yaml`, [`DEFAULT_KEEP_BYTES`] by default)
//! is kept whole; a longer one as its first half of `keep`, a line saying how much was
//! left out and how long the whole was, and its last half, with the whole's size and
//! SHA-256 beside it in the receipt ([`crate::proof::receipt::Whole`]).
//!
//! A cut is made at a line's end where one is near (so a kept piece starts and ends with
//! whole lines), and what a cut leaves of a secret on either side (at least 8 bytes of one
//! of its forms, [`Secrets::cut_at_end`]) is replaced by the marker: the rest of the
//! redaction ([`Secrets::bytes`]) happens when the kept bytes are stored.

use std::path::Path;

use sha2::Digest as _;

use crate::base::redact::Secrets;
use crate::proof::receipt::Whole;
use crate::store::Sha256;

/// How many bytes of a log are kept by default: its first and last 2 MiB.
pub(super) const DEFAULT_KEEP_BYTES: u64 = 4 << 20;

/// How much of a log is read at a time.
const PIECE: usize = 1 << 20;

/// How far back (or on) from a cut a line's end is looked for.
const LINE_SLACK: usize = 4096;

/// What replaces what a cut left of a secret.
const CUT_MARKER: &[u8] = b"[redacted]";

/// What is kept of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeptLog {
    /// What the store keeps: the whole log, or its head, a line saying what was left out,
    /// and its tail.
    pub bytes: Vec<u8>,
    /// When `bytes` is not the whole log: the whole's size and SHA-256.
    pub whole: Option<Whole>,
    /// The base64 of a secret occurs somewhere in the log.
    pub base64: bool,
}

/// Reads the log at `path`, keeping at most `keep` bytes of it (plus the line that says
/// what was left out).
pub(super) fn read(path: &Path, keep: u64, secrets: &Secrets) -> std::io::Result<KeptLog> {
    let mut file = fs_err::File::open(path)?;
    read_from(&mut file, keep, secrets)
}

fn read_from(
    file: &mut impl std::io::Read,
    keep: u64,
    secrets: &Secrets,
) -> std::io::Result<KeptLog> {
    let keep = usize::try_from(keep).unwrap_or(usize::MAX);
    let head_limit = keep / 2;
    let tail_limit = keep - head_limit;
    let mut head: Vec<u8> = Vec::new();
    // The last bytes read, at most twice `tail_limit` (drained back to `tail_limit` when
    // over, so each byte is moved at most once).
    let mut tail: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut hasher = sha2::Sha256::new();
    let mut base64 = Base64Search::new(secrets);
    let mut piece = vec![0u8; PIECE];
    loop {
        let n = match file.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let data = &piece[..n];
        total += n as u64;
        hasher.update(data);
        base64.push(data);
        let to_head = head_limit.saturating_sub(head.len()).min(data.len());
        head.extend_from_slice(&data[..to_head]);
        tail.extend_from_slice(&data[to_head..]);
        if tail.len() > tail_limit.saturating_mul(2).max(PIECE) {
            tail.drain(..tail.len() - tail_limit);
        }
    }
    let found = base64.found;
    if total <= keep as u64 {
        head.extend_from_slice(&tail);
        return Ok(KeptLog {
            bytes: head,
            whole: None,
            base64: found,
        });
    }
    let tail = &tail[tail.len().saturating_sub(tail_limit)..];
    // Whole lines where a line ends near the cut.
    let head_end = memchr::memrchr(b'\n', &head[head.len().saturating_sub(LINE_SLACK)..])
        .map_or(head.len(), |i| {
            head.len().saturating_sub(LINE_SLACK) + i + 1
        });
    let tail_start =
        memchr::memchr(b'\n', &tail[..tail.len().min(LINE_SLACK)]).map_or(0, |i| i + 1);
    let (head, tail) = (&head[..head_end], &tail[tail_start..]);
    let whole = Whole {
        size: total,
        sha256: Sha256::from_bytes(hasher.finalize().into()),
    };
    let omitted = total - (head.len() + tail.len()) as u64;
    let mut bytes = Vec::with_capacity(head.len() + tail.len() + 200);
    let cut = secrets.cut_at_end(head);
    bytes.extend_from_slice(&head[..head.len() - cut]);
    if cut > 0 {
        bytes.extend_from_slice(CUT_MARKER);
    }
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(
        format!(
            "[proofgraph: {omitted} bytes of this log are not kept; the whole log had {} bytes, SHA-256 {}]\n",
            whole.size, whole.sha256
        )
        .as_bytes(),
    );
    let cut = secrets.cut_at_start(tail);
    if cut > 0 {
        bytes.extend_from_slice(CUT_MARKER);
    }
    bytes.extend_from_slice(&tail[cut..]);
    Ok(KeptLog {
        bytes,
        whole: Some(whole),
        base64: found,
    })
}

/// Looks for the base64 of a secret in a stream read in pieces: each piece is searched
/// with the end of the one before it that a form could start in.
struct Base64Search<'a> {
    secrets: &'a Secrets,
    /// The longest form, less one byte: how much of a piece is carried to the next.
    carry: usize,
    window: Vec<u8>,
    found: bool,
}

impl<'a> Base64Search<'a> {
    fn new(secrets: &'a Secrets) -> Self {
        Base64Search {
            secrets,
            carry: secrets.base64_longest().saturating_sub(1),
            window: Vec::new(),
            found: false,
        }
    }

    fn push(&mut self, data: &[u8]) {
        if self.found || self.carry == 0 {
            return;
        }
        self.window.extend_from_slice(data);
        self.found = self.secrets.base64_in(&self.window);
        let keep_from = self.window.len().saturating_sub(self.carry);
        self.window.drain(..keep_from);
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    fn kept(log: &[u8], keep: u64, secrets: &Secrets) -> KeptLog {
        read_from(&mut std::io::Cursor::new(log), keep, secrets).expect("read")
    }

    /// Reads `inner` in small pieces, so that pieces are crossed.
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_log_within_the_bound_is_kept_whole() {
        let log = b"one\ntwo\nthree\n";
        let k = kept(log, 64, &Secrets::none());
        assert_eq!(k.bytes, log.to_vec());
        assert_eq!(k.whole, None);
        assert!(!k.base64);
        let exact = kept(log, log.len() as u64, &Secrets::none());
        assert_eq!(exact.bytes, log.to_vec());
    }

    #[test]
    fn a_longer_log_keeps_its_head_and_tail_with_the_whole_size_and_digest() {
        let log: Vec<u8> = (0..100_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let k = kept(&log, 8192, &Secrets::none());
        let whole = k.whole.expect("cut");
        assert_eq!(whole.size, log.len() as u64);
        assert_eq!(whole.sha256, Sha256::of(&log));
        let text = String::from_utf8(k.bytes.clone()).expect("text");
        assert!(text.starts_with("line 0\nline 1\n"), "{}", &text[..40]);
        assert!(text.ends_with("line 99998\nline 99999\n"));
        // Whole lines on both sides of the notice, which names the whole.
        let notice = text
            .lines()
            .find(|l| l.starts_with("[proofgraph: "))
            .expect("a notice");
        assert!(notice.contains(&whole.sha256.to_hex()), "{notice}");
        assert!(
            notice.contains(&format!("had {} bytes", log.len())),
            "{notice}"
        );
        for line in text.lines().filter(|l| !l.starts_with('[')) {
            assert!(line.starts_with("line "), "{line:?}");
            assert!(line[5..].parse::<u32>().is_ok(), "{line:?}");
        }
        assert!(k.bytes.len() <= 8192 + 200, "{}", k.bytes.len());
        // Read in odd pieces, the same.
        let trickled = read_from(&mut Trickle(&log, 7_777), 8192, &Secrets::none()).expect("read");
        assert_eq!(trickled, kept(&log, 8192, &Secrets::none()));
    }

    #[test]
    fn a_log_of_one_long_line_is_cut_where_the_bound_says() {
        let log = vec![b'x'; 3 * PIECE + 17];
        let k = kept(&log, 1000, &Secrets::none());
        assert!(k.bytes.starts_with(&[b'x'; 500]));
        assert!(k.bytes.ends_with(&[b'x'; 500]));
        assert!(!k.bytes.starts_with(&[b'x'; 501]));
    }

    #[test]
    fn what_a_cut_leaves_of_a_secret_is_redacted_on_both_sides() {
        let secret = "sk_live_0123456789abcdef";
        let secrets = Secrets::new([secret.as_bytes().to_vec()]);
        // One long line: the head ends with the secret's first 12 bytes, the tail starts
        // with its last 12.
        let mut log = vec![b'a'; 88];
        log.extend_from_slice(secret.as_bytes());
        log.extend_from_slice(&[b'b'; 2000]);
        log.extend_from_slice(secret.as_bytes());
        log.extend_from_slice(&[b'c'; 88]);
        let k = kept(&log, 200, &secrets);
        let text = String::from_utf8(k.bytes).expect("text");
        assert!(!text.contains("sk_live_0123"), "{text}");
        assert!(!text.contains("456789abcdef"), "{text}");
        assert_eq!(text.matches("[redacted]").count(), 2, "{text}");
    }

    #[test]
    fn the_base64_of_a_secret_is_found_across_pieces() {
        let secret = b"hunter2-secret-value";
        let secrets = Secrets::new([secret.to_vec()]);
        let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
        let mut log = vec![b'.'; 3 * PIECE - 5];
        log.extend_from_slice(encoded.as_bytes());
        log.extend_from_slice(&[b'.'; 100]);
        assert!(kept(&log, 1000, &secrets).base64);
        assert!(
            read_from(&mut Trickle(&log, 4093), 1000, &secrets)
                .expect("read")
                .base64
        );
        assert!(!kept(&log[..3 * PIECE], 1000, &secrets).base64);
    }
}
