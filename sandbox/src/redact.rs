//! Streaming redaction: secrets are replaced by `[redacted]` even when a secret arrives
//! split across reads.
//!
//! The redactor holds back the end of what it was given for as long as that end could still
//! become a secret (at most the longest secret minus one byte), so a decision at any position
//! is made only when it can no longer change. The output is therefore the same however the
//! input is split: exactly what [`redact_all`] gives for the whole stream. At a position
//! where several secrets match, the longest wins, and matching resumes after it.
//!
//! Caveat: a secret that is itself a substring of the marker `[redacted]` (say `act`)
//! appears in the log as part of every marker.

use aho_corasick::{AhoCorasick, MatchKind};

/// What replaces each secret.
pub(crate) const MARKER: &[u8] = b"[redacted]";

/// A streaming redactor for one output stream.
#[derive(Debug)]
pub(crate) struct Redactor {
    /// Every secret at once, leftmost-longest (`None` when there is none).
    finder: Option<AhoCorasick>,
    /// The longest secret's length.
    longest: usize,
    /// Bytes received but not yet decided.
    pending: Vec<u8>,
}

impl Redactor {
    /// A redactor for these secrets; empty secrets are ignored.
    pub(crate) fn new(secrets: &[Vec<u8>]) -> Self {
        let secrets: Vec<&[u8]> = secrets
            .iter()
            .filter(|s| !s.is_empty())
            .map(Vec::as_slice)
            .collect();
        let longest = secrets.iter().map(|s| s.len()).max().unwrap_or(0);
        // Building fails only when the automaton would need more than 2^31 states; the
        // secrets are environment values, which the kernel bounds to a few MiB in all
        // (ARG_MAX), so it cannot fail here.
        let finder = (!secrets.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&secrets)
                .expect("secrets bounded by ARG_MAX fit an Aho-Corasick automaton")
        });
        Redactor {
            finder,
            longest,
            pending: Vec::new(),
        }
    }

    /// Takes more input and appends to `out` everything that is decided.
    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if self.finder.is_none() {
            out.extend_from_slice(data);
            return;
        }
        self.pending.extend_from_slice(data);
        let decided = self.scan(false, out);
        self.pending.drain(..decided);
    }

    /// Ends the stream: appends the rest of the input, redacted, to `out`.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        let decided = self.scan(true, out);
        self.pending.drain(..decided);
    }

    /// Redacts `pending` from its start, writing to `out`; returns how many bytes of
    /// `pending` were consumed. One leftmost-longest pass of the automaton (linear in the
    /// input whatever the number of secrets). Unless `last`, a position is decided only
    /// when every secret that could start there is wholly in `pending` — the last
    /// `longest - 1` bytes wait for more input — so the output does not depend on how the
    /// stream was split.
    fn scan(&self, last: bool, out: &mut Vec<u8>) -> usize {
        let buf = &self.pending;
        let Some(finder) = &self.finder else {
            out.extend_from_slice(buf);
            return buf.len();
        };
        let safe = if last {
            buf.len()
        } else {
            buf.len().saturating_sub(self.longest.saturating_sub(1))
        };
        let mut emitted = 0;
        for found in finder.find_iter(buf.as_slice()) {
            if found.start() >= safe {
                break;
            }
            out.extend_from_slice(&buf[emitted..found.start()]);
            out.extend_from_slice(MARKER);
            emitted = found.end();
        }
        let decided = emitted.max(safe);
        out.extend_from_slice(&buf[emitted..decided]);
        decided
    }
}

/// Redacts a whole buffer at once.
pub(crate) fn redact_all(secrets: &[Vec<u8>], data: &[u8]) -> Vec<u8> {
    let mut redactor = Redactor::new(secrets);
    let mut out = Vec::with_capacity(data.len());
    redactor.push(data, &mut out);
    redactor.finish(&mut out);
    out
}

/// Redacts a text (for messages: reasons, errors); invalid UTF-8 produced by a cut is
/// replaced.
pub(crate) fn redact_text(secrets: &[Vec<u8>], text: &str) -> String {
    String::from_utf8_lossy(&redact_all(secrets, text.as_bytes())).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    fn streamed(secrets: &[Vec<u8>], chunks: &[&[u8]]) -> Vec<u8> {
        let mut redactor = Redactor::new(secrets);
        let mut out = Vec::new();
        for chunk in chunks {
            redactor.push(chunk, &mut out);
        }
        redactor.finish(&mut out);
        out
    }

    #[test]
    fn a_secret_in_one_piece_is_replaced() {
        let secrets = vec![b"hunter2".to_vec()];
        assert_eq!(
            redact_all(&secrets, b"pw=hunter2 ok"),
            b"pw=[redacted] ok".to_vec()
        );
    }

    #[test]
    fn every_split_of_the_input_gives_the_one_shot_output() {
        let secrets = vec![
            b"s3cr3t-value".to_vec(),
            b"abcab".to_vec(),
            b"cab".to_vec(),
            b"xx".to_vec(),
        ];
        let input: &[u8] = b"a s3cr3t-values3cr3t-valu abcabcab xxx s3cr3t-value";
        let expected = redact_all(&secrets, input);
        for secret in &secrets {
            assert!(!contains(&expected, secret), "{secret:?} survived");
        }
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let got = streamed(&secrets, &[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(got, expected, "split at {i} and {j}");
            }
        }
        // Byte by byte too.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(streamed(&secrets, &bytes), expected);
    }

    /// The rule, written the slow and obvious way: left to right, at each position the
    /// longest secret that starts there, else one byte.
    fn reference(secrets: &[Vec<u8>], data: &[u8]) -> Vec<u8> {
        let mut sorted: Vec<&Vec<u8>> = secrets.iter().filter(|s| !s.is_empty()).collect();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let (mut out, mut pos) = (Vec::new(), 0);
        while pos < data.len() {
            match sorted.iter().find(|s| data[pos..].starts_with(s)) {
                Some(secret) => {
                    out.extend_from_slice(MARKER);
                    pos += secret.len();
                }
                None => {
                    out.push(data[pos]);
                    pos += 1;
                }
            }
        }
        out
    }

    #[test]
    fn random_secrets_inputs_and_splits_agree_with_the_rule() {
        // A small alphabet makes overlaps, shared prefixes and secrets inside secrets common.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound
        };
        for _ in 0..2_000 {
            let secrets: Vec<Vec<u8>> = (0..=next(5))
                .map(|_| (0..=next(6)).map(|_| b"abc"[next(3) as usize]).collect())
                .collect();
            let data: Vec<u8> = (0..next(60)).map(|_| b"abcx"[next(4) as usize]).collect();
            let expected = reference(&secrets, &data);
            assert_eq!(
                redact_all(&secrets, &data),
                expected,
                "{secrets:?} {data:?}"
            );
            let mut chunks = Vec::new();
            let mut at = 0;
            while at < data.len() {
                let end = (at + 1 + next(8) as usize).min(data.len());
                chunks.push(&data[at..end]);
                at = end;
            }
            assert_eq!(
                streamed(&secrets, &chunks),
                expected,
                "{secrets:?} {chunks:?}"
            );
        }
    }

    #[test]
    fn the_longest_secret_at_a_position_wins() {
        let secrets = vec![b"ab".to_vec(), b"abcd".to_vec()];
        assert_eq!(
            streamed(&secrets, &[b"xab", b"cdy"]),
            b"x[redacted]y".to_vec()
        );
        assert_eq!(
            streamed(&secrets, &[b"xab", b"y"]),
            b"x[redacted]y".to_vec()
        );
    }

    #[test]
    fn an_unfinished_prefix_is_released_at_the_end() {
        let secrets = vec![b"password".to_vec()];
        assert_eq!(streamed(&secrets, &[b"pass", b"wor"]), b"passwor".to_vec());
    }

    #[test]
    fn no_secrets_means_no_buffering() {
        let mut redactor = Redactor::new(&[Vec::new()]);
        let mut out = Vec::new();
        redactor.push(b"hello", &mut out);
        assert_eq!(out, b"hello".to_vec());
    }

    #[test]
    fn text_is_redacted() {
        assert_eq!(
            redact_text(&[b"tok".to_vec()], "a tok b"),
            "a [redacted] b".to_owned()
        );
    }
}
