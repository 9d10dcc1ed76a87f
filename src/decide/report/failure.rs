//! What a runner attached to a failed test — its failure message and the output recorded
//! with it — as a [`TestCase::failure`](super::TestCase::failure) keeps it: terminal colour
//! sequences removed, carriage returns made line ends, stack frames inside `node_modules`
//! and the JavaScript runtime left out (the runners' own reporters leave them out too), and
//! bounded to [`MAX_MESSAGE_BYTES`]: a longer text keeps its first [`HEAD_BYTES`] and its
//! last [`TAIL_BYTES`] (cut at line ends where one is near) around a line that says how much
//! was left out. The whole text stays in the report, which the receipt keeps.
//!
//! [`Collector`] gathers a text given in pieces (go test's output events) in bounded
//! memory; [`message`] finishes one given whole.

/// The most a failed test's message keeps, in bytes (plus the line that says what was
/// left out).
pub const MAX_MESSAGE_BYTES: usize = HEAD_BYTES + TAIL_BYTES;

/// What a message longer than [`MAX_MESSAGE_BYTES`] keeps of its start: an assertion's text
/// comes first in most runners' messages.
pub const HEAD_BYTES: usize = 3 * 1024;

/// What it keeps of its end: where go test's `t.Errorf` and a test's last output are.
pub const TAIL_BYTES: usize = 1024;

/// How far from a cut a line's end is looked for.
const LINE_SLACK: usize = 256;

/// A text given in pieces, of which the first [`HEAD_BYTES`] and the last [`TAIL_BYTES`]
/// (at most twice that while collecting) are held.
#[derive(Debug, Clone, Default)]
pub(crate) struct Collector {
    head: String,
    tail: String,
    /// Bytes dropped from the front of `tail`.
    left_out: usize,
}

impl Collector {
    /// Appends `piece`.
    pub(crate) fn push(&mut self, piece: &str) {
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        if self.tail.is_empty() && room > 0 {
            let take = floor_boundary(piece, room.min(piece.len()));
            self.head.push_str(&piece[..take]);
            self.tail.push_str(&piece[take..]);
        } else {
            self.tail.push_str(piece);
        }
        if self.tail.len() > 2 * TAIL_BYTES {
            let drop = ceil_boundary(&self.tail, self.tail.len() - TAIL_BYTES);
            self.tail.drain(..drop);
            self.left_out += drop;
        }
    }

    /// The message: cleaned and bounded; `None` when nothing is left of it.
    pub(crate) fn finish(self) -> Option<String> {
        if self.left_out == 0 {
            return message(&(self.head + &self.tail));
        }
        // Whole lines: the head up to its last line end, the tail's last `TAIL_BYTES` from
        // a line's start; what falls between is left out too (counted as it was given).
        let head_end = line_cut(&self.head, self.head.len(), true);
        let tail_start = line_cut(
            &self.tail,
            ceil_boundary(&self.tail, self.tail.len().saturating_sub(TAIL_BYTES)),
            false,
        );
        let left_out = self.left_out + (self.head.len() - head_end) + tail_start;
        join(
            &clean(&self.head[..head_end]),
            &clean(&self.tail[tail_start..]),
            left_out,
        )
    }
}

/// A failed test's message from its whole text: cleaned and bounded; `None` when nothing
/// is left of it (empty, or only whitespace and left-out frames).
pub(crate) fn message(text: &str) -> Option<String> {
    let text = clean(text);
    if text.len() <= MAX_MESSAGE_BYTES {
        return (!text.is_empty()).then_some(text);
    }
    let head_end = line_cut(&text, floor_boundary(&text, HEAD_BYTES), true);
    let tail_start = line_cut(&text, ceil_boundary(&text, text.len() - TAIL_BYTES), false);
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    join(head, tail, text.len() - head.len() - tail.len())
}

/// `head`, a line saying `left_out` bytes were left out, and `tail`.
fn join(head: &str, tail: &str, left_out: usize) -> Option<String> {
    let mut out = String::with_capacity(head.len() + tail.len() + 64);
    out.push_str(head.trim_end());
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!(
        "[… {left_out} bytes left out; the report holds them]"
    ));
    let tail = tail.trim_start_matches('\n').trim_end();
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(tail);
    }
    Some(out)
}

/// Where to cut `text` near byte `at` (a character boundary): after the last line end
/// within [`LINE_SLACK`] before it (`before`), or after the first one within that much
/// after it; `at` itself when there is none.
fn line_cut(text: &str, at: usize, before: bool) -> usize {
    let bytes = text.as_bytes();
    if before {
        let from = at.saturating_sub(LINE_SLACK);
        bytes[from..at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(at, |i| from + i + 1)
    } else {
        let to = (at + LINE_SLACK).min(bytes.len());
        bytes[at..to]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(at, |i| at + i + 1)
    }
}

/// The largest character boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `text` at or above `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// `text` without terminal escape sequences, with `\r\n` and lone `\r` made `\n`, without
/// the JavaScript stack frames [`is_dependency_frame`] names, and without blank lines at
/// either end or spaces at a line's end.
pub(crate) fn clean(text: &str) -> String {
    let plain = without_escapes(text)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    let mut out = String::with_capacity(plain.len());
    for line in plain.lines() {
        if is_dependency_frame(line) {
            continue;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim_matches('\n').to_owned()
}

/// A JavaScript stack frame (`    at f (file:1:2)`, or a bare `f (file:1:2)` or
/// `node:internal/x:1:2` as node's TAP writes them) inside a dependency or the runtime: `node_modules/`, `node:…`, a frame with
/// no source (`(<anonymous>)`). Jest, Vitest and Mocha leave these out of what they print; the report
/// keeps them.
pub(crate) fn is_dependency_frame(line: &str) -> bool {
    let trimmed = line.trim();
    // node's TAP writes a frame with no function as its bare location.
    if trimmed.starts_with("node:") && trimmed.ends_with(|c: char| c.is_ascii_digit()) {
        return true;
    }
    let frame = trimmed.starts_with("at ") || (trimmed.ends_with(')') && trimmed.contains(" ("));
    frame
        && (trimmed.contains("/node_modules/")
            || trimmed.contains("(node:")
            || trimmed.contains("at node:")
            || trimmed.contains("(<anonymous>)")
            || trimmed.starts_with("at <anonymous>"))
}

/// `text` without ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL|ST`) and
/// two-byte escapes.
pub(crate) fn without_escapes(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in `@`..=`~`.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_returns_and_dependency_frames_are_left_out() {
        let jest = "Error: \u{1b}[2mexpect(\u{1b}[22mreceived\u{1b}[2m).toBe\u{1b}[22m\r\n\nExpected: \u{1b}[32m5\u{1b}[39m\nReceived: 4\n    at Object.toBe (/w/tests/math.test.js:14:25)\n    at Promise.finally.completed (/w/node_modules/jest-circus/build/jestAdapterInit.js:1834:28)\n    at new Promise (<anonymous>)\n    at process.processImmediate (node:internal/timers:483:21)\n";
        assert_eq!(
            message(jest).as_deref(),
            Some(
                "Error: expect(received).toBe\n\nExpected: 5\nReceived: 4\n    at Object.toBe (/w/tests/math.test.js:14:25)"
            )
        );
        // node's TAP writes frames without `at`.
        let tap = "stack: |-\n  TestContext.<anonymous> (file:///w/test/math.test.mjs:18:14)\n  Test.runInAsyncScope (node:async_hooks:206:9)\n  node:internal/test_runner/harness:255:12\n  async Promise.all (index 0)";
        assert_eq!(
            message(tap).as_deref(),
            Some(
                "stack: |-\n  TestContext.<anonymous> (file:///w/test/math.test.mjs:18:14)\n  async Promise.all (index 0)"
            )
        );
        assert_eq!(message(" \n\n  \n"), None);
        assert_eq!(
            message("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\"),
            Some("link".into())
        );
    }

    #[test]
    fn a_long_message_keeps_its_head_and_tail_around_what_was_left_out() {
        let lines: Vec<String> = (0..2000).map(|i| format!("line {i:04}")).collect();
        let text = lines.join("\n");
        let kept = message(&text).expect("a message");
        assert!(kept.len() <= MAX_MESSAGE_BYTES + 64, "{}", kept.len());
        assert!(kept.starts_with("line 0000\nline 0001\n"), "{kept}");
        assert!(kept.ends_with("line 1998\nline 1999"), "{kept}");
        let marker = kept
            .lines()
            .find(|l| l.starts_with("[… "))
            .expect("the left-out line");
        let head = kept.split("\n[… ").next().expect("a head");
        let tail = kept.rsplit("]\n").next().expect("a tail");
        // Whole lines on both sides, and the count adds up.
        assert!(head.lines().all(|l| l.len() == 9) && tail.lines().all(|l| l.len() == 9));
        let left_out: usize = marker
            .trim_start_matches("[… ")
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a count");
        assert_eq!(head.len() + 1 + tail.len() + left_out, text.len());
    }

    #[test]
    fn a_collector_keeps_the_same_head_and_tail_in_bounded_memory() {
        let mut collector = Collector::default();
        let mut whole = String::new();
        for i in 0..5000 {
            let piece = format!("    x_test.go:{i}: é output {i}\n");
            whole.push_str(&piece);
            collector.push(&piece);
            assert!(collector.head.len() <= HEAD_BYTES);
            assert!(collector.tail.len() <= 2 * TAIL_BYTES + piece.len());
        }
        let kept = collector.finish().expect("a message");
        assert!(
            kept.starts_with("x_test.go:0: é output 0\n") || kept.starts_with("    x_test.go:0:")
        );
        assert!(kept.ends_with("x_test.go:4999: é output 4999"), "{kept}");
        assert!(kept.contains("bytes left out; the report holds them]"));
        assert!(kept.len() <= MAX_MESSAGE_BYTES + 64, "{}", kept.len());
        // A short text comes out as `message` makes it.
        let mut short = Collector::default();
        short.push("    m_test.go:14: Add(2, 2) = 4, want 5\n");
        assert_eq!(
            short.finish(),
            message("    m_test.go:14: Add(2, 2) = 4, want 5\n")
        );
    }
}
