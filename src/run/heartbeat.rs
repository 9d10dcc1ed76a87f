//! What a long run says while it runs (a component the loop asks, which knows nothing of
//! it): a line per running provider every `--heartbeat` seconds, with the tests its output has reported so far (`tally.rs`), and, with
//! `--stream <provider>`, the lines that provider's command writes, as they are written
//! (read from its log, which the sandbox redacts as it writes it; each line goes through the
//! run's rewrites and redaction again before it is shown).

mod tally;

use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use proofgraph_graph::ProviderId;

use crate::base::redact::Secrets;
use crate::proof::receipt::Counts;

/// How often the loop wakes to read a streamed log (and, at the least, between heartbeats).
const TICK: Duration = Duration::from_millis(250);

/// The longest line shown whole; a longer one is shown in pieces of this size.
const MAX_LINE: usize = 4096;

/// How much of a log one read takes: a log that grew by gigabytes since the last look is
/// read in pieces, never held whole.
const READ: usize = 1 << 20;

/// What is said between events.
#[derive(Debug)]
pub(super) struct Heartbeat {
    /// How often (none: never).
    every: Option<Duration>,
    last: Instant,
    /// When each running provider started, its log, and the tests it reported so far.
    since: BTreeMap<String, Running>,
    /// The provider whose output is passed through, and how far its log was read.
    stream: Option<Streamed>,
}

#[derive(Debug)]
struct Running {
    at: Instant,
    log: LogReader,
    tally: Counts,
}

#[derive(Debug)]
struct Streamed {
    provider: ProviderId,
    log: Option<LogReader>,
}

/// Reads a log as it grows, line by line.
#[derive(Debug)]
struct LogReader {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl LogReader {
    fn new(path: &std::path::Path) -> Self {
        LogReader {
            path: path.to_path_buf(),
            offset: 0,
            partial: Vec::new(),
        }
    }

    /// The complete lines of the next (at most) [`READ`] bytes the log has gained since
    /// the last read, and whether there may be more to read now; with `last`, once there
    /// is not, the last line even without its end. A line longer than [`MAX_LINE`] comes
    /// in pieces.
    fn lines(&mut self, last: bool) -> (Vec<String>, bool) {
        let mut lines = Vec::new();
        let mut more = false;
        if let Ok(mut file) = fs_err::File::open(&self.path)
            && file.seek(SeekFrom::Start(self.offset)).is_ok()
        {
            let start = self.partial.len();
            self.partial.resize(start + READ, 0);
            let n = loop {
                match file.read(&mut self.partial[start..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    read => break read.unwrap_or(0),
                }
            };
            self.partial.truncate(start + n);
            self.offset += n as u64;
            more = n == READ;
        }
        let mut taken = 0;
        loop {
            let rest = &self.partial[taken..];
            let piece = match memchr::memchr(b'\n', rest) {
                Some(end) if end <= MAX_LINE => (end, end + 1),
                _ if rest.len() > MAX_LINE => (MAX_LINE, MAX_LINE),
                _ => break,
            };
            lines.push(String::from_utf8_lossy(&rest[..piece.0]).into_owned());
            taken += piece.1;
        }
        self.partial.drain(..taken);
        if last && !more && !self.partial.is_empty() {
            lines.push(String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned());
        }
        (lines, more)
    }
}

impl Heartbeat {
    pub(super) fn new(every: Option<Duration>, stream: Option<ProviderId>) -> Self {
        Heartbeat {
            every: every.filter(|d| !d.is_zero()),
            last: Instant::now(),
            since: BTreeMap::new(),
            stream: stream.map(|provider| Streamed {
                provider,
                log: None,
            }),
        }
    }

    /// How long the loop may wait for an event before it looks again; `None`: as long as
    /// it takes. Streaming, a short while; else until the next heartbeat is due.
    pub(super) fn tick(&self) -> Option<Duration> {
        if self.stream.is_some() {
            return Some(TICK);
        }
        self.every
            .map(|every| every.saturating_sub(self.last.elapsed()).max(TICK))
    }

    /// `provider` started, writing its log to `log`.
    pub(super) fn started(&mut self, provider: &ProviderId, log: &std::path::Path) {
        self.since.insert(
            provider.to_string(),
            Running {
                at: Instant::now(),
                log: LogReader::new(log),
                tally: Counts::default(),
            },
        );
        if let Some(s) = &mut self.stream
            && s.provider == *provider
        {
            s.log = Some(LogReader::new(log));
        }
    }

    /// `provider` is no longer running.
    pub(super) fn ended(&mut self, provider: &str) {
        self.since.remove(provider);
    }

    /// The complete lines of the next piece of the streamed provider's log, and whether
    /// there may be more (see [`LogReader::lines`]).
    fn read_stream(&mut self, last: bool) -> (String, Vec<String>, bool) {
        match &mut self.stream {
            Some(Streamed {
                provider,
                log: Some(log),
            }) => {
                let (lines, more) = log.lines(last);
                (provider.to_string(), lines, more)
            }
            _ => (String::new(), Vec::new(), false),
        }
    }

    /// Each running provider with how long it has run and the tests its output has
    /// reported so far.
    fn running(&mut self) -> Vec<(String, Duration, Counts)> {
        self.since
            .iter_mut()
            .map(|(provider, running)| {
                loop {
                    let (lines, more) = running.log.lines(false);
                    for line in lines {
                        tally::count(&mut running.tally, &line);
                    }
                    if !more {
                        break;
                    }
                }
                (
                    provider.clone(),
                    running.at.elapsed(),
                    running.tally.clone(),
                )
            })
            .collect()
    }
}

/// A line a heartbeat says.
#[derive(Debug, Clone)]
pub(super) enum Said {
    /// A provider has been running this long, and reported these tests so far.
    StillRunning {
        provider: String,
        elapsed: Duration,
        tally: Counts,
    },
    /// A line the streamed provider's command wrote, redacted.
    Output { provider: String, line: String },
}

impl Heartbeat {
    /// What is due: streamed lines, and a line per running provider once the heartbeat's
    /// interval has passed.
    pub(super) fn beat(&mut self, secrets: &Secrets) -> Vec<Said> {
        let mut said = self.stream(false, secrets);
        let Some(every) = self.every else {
            return said;
        };
        if self.last.elapsed() < every {
            return said;
        }
        self.last = Instant::now();
        for (provider, elapsed, tally) in self.running() {
            said.push(Said::StillRunning {
                provider,
                elapsed,
                tally,
            });
        }
        said
    }

    /// The streamed provider's new lines (all that is left, when `last`), redacted.
    pub(super) fn stream(&mut self, last: bool, secrets: &Secrets) -> Vec<Said> {
        let mut said = Vec::new();
        loop {
            let (provider, lines, more) = self.read_stream(last);
            for line in lines {
                let shown = secrets.text(&line);
                let shown =
                    String::from_utf8_lossy(&secrets.without_base64(shown.as_bytes())).into_owned();
                said.push(Said::Output {
                    provider: provider.clone(),
                    line: shown,
                });
            }
            if !more {
                return said;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `reader` has, read as `running` and `pass_through` read: piece after
    /// piece while there may be more.
    fn drain(reader: &mut LogReader, last: bool) -> (Vec<String>, usize) {
        let (mut all, mut calls) = (Vec::new(), 0);
        loop {
            let (lines, more) = reader.lines(last);
            calls += 1;
            all.extend(lines);
            if !more {
                return (all, calls);
            }
        }
    }

    #[test]
    fn a_log_is_read_in_pieces_and_every_line_comes_once_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("job.log");
        let lines: Vec<String> = (0..300_000).map(|i| format!("line {i}")).collect();
        let mut text = lines.join("\n");
        text.push('\n');
        assert!(text.len() > 3 * READ);
        fs_err::write(&path, &text).expect("write");
        let mut reader = LogReader::new(&path);
        let (got, calls) = drain(&mut reader, false);
        assert_eq!(got, lines);
        assert!(calls > 3, "{calls} reads: one piece at a time");
        // The log grows: only what is new comes, and the last line without its end only
        // when asked for.
        let mut file = fs_err::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        std::io::Write::write_all(&mut file, b"more\nunfinished").expect("append");
        assert_eq!(drain(&mut reader, false).0, ["more"]);
        assert_eq!(drain(&mut reader, true).0, ["unfinished"]);
        assert!(drain(&mut reader, true).0.is_empty());
    }

    #[test]
    fn a_line_longer_than_the_longest_shown_comes_in_pieces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("job.log");
        let long = "x".repeat(2 * MAX_LINE + 10);
        fs_err::write(&path, format!("{long}\nshort\n")).expect("write");
        let (got, _) = drain(&mut LogReader::new(&path), false);
        let sizes: Vec<usize> = got.iter().map(String::len).collect();
        assert_eq!(sizes, [MAX_LINE, MAX_LINE, 10, 5]);
        assert_eq!(got.concat(), format!("{long}short"));
    }
}
