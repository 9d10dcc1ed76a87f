//! Streaming redaction: secrets are replaced by `[redacted]` even when a secret arrives
//! split across reads.
//!
//! The redactor holds back the end of what it was given for as long as that end could still
//! become a secret (at most the longest secret minus one byte), so a decision at any position
//! is made only when it can no longer change. The output is therefore the same however the
//! input is split: exactly what [`redact_all`] gives for the whole stream. At a position
//! where several secrets match, the longest wins, and matching resumes after it.
//!
//! **The end of a stream.** A job killed (or a log cut) half-way through printing a secret
//! leaves its first bytes at the end. When the stream ends with a proper prefix of a secret
//! at least [`MIN_PREFIX`] bytes long (after the last whole secret), that prefix is replaced
//! too: fewer bytes than that are not told apart from text that merely starts like one.
//!
//! **Cost.** The automaton (leftmost-longest Aho-Corasick, a DFA: one table lookup per
//! byte) runs at about 0.5 GB/s on a log whatever the number of secrets; a log is mostly
//! not secrets, so where it can, a vectorised literal search (Teddy, `aho_corasick::packed`,
//! over the secrets or, when there are more than it takes, their distinct first bytes)
//! finds where a secret may start at several GB/s and the automaton only confirms there,
//! anchored. Only the undecided end (under the longest secret) is copied and kept between
//! reads. `cargo bench -p proofgraph-sandbox --bench redact` measures it (BENCHMARKS.md).
//!
//! Caveat: a secret that is itself a substring of the marker `[redacted]` (say `act`)
//! appears in the log as part of every marker.

use aho_corasick::{AhoCorasick, AhoCorasickKind, Anchored, Input, Match, MatchKind, StartKind};

/// What replaces each secret.
pub const MARKER: &[u8] = b"[redacted]";

/// The shortest prefix of a secret that is redacted at the end of a stream.
pub const MIN_PREFIX: usize = 8;

/// Above this many secrets (with their forms), the automaton is a non-contiguous NFA
/// rather than a DFA: a DFA's table grows with the secrets times the alphabet, and its
/// construction with it.
const MAX_DFA_SECRETS: usize = 2_000;

/// The most literals the vectorised search is given (Teddy's limit; past 64 it is slower,
/// still faster than the automaton alone).
const MAX_CANDIDATES: usize = 128;

/// The shortest prefix of the secrets the vectorised search looks for: shorter ones are
/// found so often in ordinary text that the automaton alone is faster.
const MIN_CANDIDATE_PREFIX: usize = 4;

/// Finds secrets, leftmost-longest.
#[derive(Debug, Clone)]
struct Finder {
    /// Every secret at once, leftmost-longest, searched unanchored or anchored.
    exact: AhoCorasick,
    /// Where a secret may start: the secrets, or their distinct prefixes (see
    /// [`Finder::new`]); `None` when there would be too many for the vectorised search.
    candidates: Option<aho_corasick::packed::Searcher>,
}

impl Finder {
    fn new(secrets: &[Vec<u8>]) -> Self {
        let kind = if secrets.len() <= MAX_DFA_SECRETS {
            AhoCorasickKind::DFA
        } else {
            AhoCorasickKind::NoncontiguousNFA
        };
        // Building fails only when the automaton would need more than 2^31 states; the
        // secrets are environment values, which the kernel bounds to a few MiB in all
        // (ARG_MAX), so it cannot fail here.
        let exact = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Both)
            .kind(Some(kind))
            .build(secrets)
            .expect("secrets bounded by ARG_MAX fit an Aho-Corasick automaton");
        // The secrets themselves when few enough, else their distinct prefixes of the
        // longest length that keeps them few enough: a position where a secret starts is
        // a position where its prefix does.
        let mut literals: Option<Vec<&[u8]>> = None;
        for len in [usize::MAX, 16, 12, 8, 6, MIN_CANDIDATE_PREFIX] {
            let mut prefixes: Vec<&[u8]> = secrets.iter().map(|s| &s[..s.len().min(len)]).collect();
            prefixes.sort_unstable();
            prefixes.dedup();
            if prefixes.len() <= MAX_CANDIDATES {
                literals = Some(prefixes);
                break;
            }
        }
        let candidates = literals.and_then(|literals| {
            aho_corasick::packed::Config::new()
                .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
                .heuristic_pattern_limits(false)
                .builder()
                .extend(literals)
                .build()
        });
        Finder { exact, candidates }
    }

    /// The leftmost-longest secret in `buf` that starts at or after `from`.
    fn find(&self, buf: &[u8], from: usize) -> Option<Match> {
        let Some(candidates) = &self.candidates else {
            return self.exact.find(Input::new(buf).range(from..));
        };
        let mut at = from;
        while at < buf.len() {
            let candidate = candidates.find_in(buf, aho_corasick::Span::from(at..buf.len()))?;
            let input = Input::new(buf)
                .range(candidate.start()..)
                .anchored(Anchored::Yes);
            if let Some(found) = self.exact.find(input) {
                return Some(found);
            }
            at = candidate.start() + 1;
        }
        None
    }
}

/// A streaming redactor for one output stream: bytes in ([`Redactor::push`]), the same
/// bytes with every secret replaced by [`MARKER`] out, as soon as they are decided.
#[derive(Debug, Clone)]
pub struct Redactor {
    /// Every secret at once, leftmost-longest (`None` when there is none).
    finder: Option<Finder>,
    /// The secrets, for the prefix at the end of the stream.
    secrets: Vec<Vec<u8>>,
    /// The longest secret's length.
    longest: usize,
    /// Bytes received but not yet decided.
    pending: Vec<u8>,
}

impl Redactor {
    /// A redactor for these secrets; empty secrets are ignored.
    pub fn new(secrets: &[Vec<u8>]) -> Self {
        let mut secrets: Vec<Vec<u8>> = secrets.iter().filter(|s| !s.is_empty()).cloned().collect();
        secrets.sort();
        secrets.dedup();
        let longest = secrets.iter().map(Vec::len).max().unwrap_or(0);
        let finder = (!secrets.is_empty()).then(|| Finder::new(&secrets));
        Redactor {
            finder,
            secrets,
            longest,
            pending: Vec::new(),
        }
    }

    /// Takes more input and appends to `out` everything that is decided.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if self.finder.is_none() {
            out.extend_from_slice(data);
            return;
        }
        if self.pending.is_empty() {
            // Nothing held back: `data` is scanned where it is, and only its undecided end
            // is copied.
            let decided = self.scan(data, false, out);
            self.pending.extend_from_slice(&data[decided..]);
        } else {
            let mut pending = std::mem::take(&mut self.pending);
            pending.extend_from_slice(data);
            let decided = self.scan(&pending, false, out);
            pending.drain(..decided);
            self.pending = pending;
        }
    }

    /// Ends the stream: appends the rest of the input, redacted, to `out` (a trailing
    /// prefix of a secret of at least [`MIN_PREFIX`] bytes too).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let pending = std::mem::take(&mut self.pending);
        let decided = self.scan(&pending, true, out);
        debug_assert_eq!(decided, pending.len(), "the end decides everything");
    }

    /// How many bytes at the end of `rest` are a proper prefix of a secret, at least
    /// [`MIN_PREFIX`] long (the longest such); 0 when none is.
    fn trailing_prefix(&self, rest: &[u8]) -> usize {
        let mut found = 0;
        for secret in &self.secrets {
            let most = rest.len().min(secret.len() - 1);
            for len in (MIN_PREFIX.max(found + 1)..=most).rev() {
                if rest.ends_with(&secret[..len]) {
                    found = len;
                    break;
                }
            }
        }
        found
    }

    /// Redacts `pending` from its start, writing to `out`; returns how many bytes of
    /// `pending` were consumed. One leftmost-longest pass of the automaton (linear in the
    /// input whatever the number of secrets). Unless `last`, a position is decided only
    /// when every secret that could start there is wholly in `pending` — the last
    /// `longest - 1` bytes wait for more input — so the output does not depend on how the
    /// stream was split.
    fn scan(&self, buf: &[u8], last: bool, out: &mut Vec<u8>) -> usize {
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
        while let Some(found) = finder.find(buf, emitted) {
            if found.start() >= safe {
                break;
            }
            out.extend_from_slice(&buf[emitted..found.start()]);
            out.extend_from_slice(MARKER);
            emitted = found.end();
        }
        let decided = emitted.max(safe);
        if last {
            let cut = decided - self.trailing_prefix(&buf[emitted..decided]);
            out.extend_from_slice(&buf[emitted..cut]);
            if cut < decided {
                out.extend_from_slice(MARKER);
            }
        } else {
            out.extend_from_slice(&buf[emitted..decided]);
        }
        decided
    }
}

/// Redacts a whole buffer at once.
pub fn redact_all(secrets: &[Vec<u8>], data: &[u8]) -> Vec<u8> {
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
        let (mut out, mut pos, mut after_last) = (Vec::new(), 0, 0);
        while pos < data.len() {
            match sorted.iter().find(|s| data[pos..].starts_with(s)) {
                Some(secret) => {
                    out.extend_from_slice(MARKER);
                    pos += secret.len();
                    after_last = out.len();
                }
                None => {
                    out.push(data[pos]);
                    pos += 1;
                }
            }
        }
        // The longest proper prefix (of at least MIN_PREFIX bytes) of a secret that the
        // text after the last whole secret ends with.
        let rest = out[after_last..].to_vec();
        let prefix = (MIN_PREFIX..=rest.len())
            .rev()
            .find(|&len| {
                let end = &rest[rest.len() - len..];
                sorted.iter().any(|s| s.len() > len && s.starts_with(end))
            })
            .unwrap_or(0);
        if prefix > 0 {
            out.truncate(out.len() - prefix);
            out.extend_from_slice(MARKER);
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
            // Some longer than MIN_PREFIX, so that streams end with prefixes of them.
            let secrets: Vec<Vec<u8>> = (0..=next(5))
                .map(|_| (0..=next(13)).map(|_| b"abc"[next(3) as usize]).collect())
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
    fn many_secrets_searched_by_their_prefixes_or_by_the_automaton_alone_agree_with_the_rule() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for round in 0..40 {
            // More secrets than the vectorised search takes: with few shared prefixes (it
            // looks for those), or many distinct ones (the automaton alone).
            let shared = round % 2 == 0;
            let heads = [b"abcabc".as_slice(), b"cbacba", b"aabbcc"];
            let secrets: Vec<Vec<u8>> = (0..300)
                .map(|_| {
                    let mut s = if shared {
                        heads[next(3) as usize].to_vec()
                    } else {
                        Vec::new()
                    };
                    s.extend((0..4 + next(6)).map(|_| b"abcd"[next(4) as usize]));
                    s
                })
                .collect();
            let finder = Finder::new(&secrets);
            assert_eq!(finder.candidates.is_some(), shared, "round {round}");
            let data: Vec<u8> = (0..400).map(|_| b"abcdx"[next(5) as usize]).collect();
            let expected = reference(&secrets, &data);
            assert_eq!(redact_all(&secrets, &data), expected, "round {round}");
            let chunks: Vec<&[u8]> = data.chunks(1 + next(30) as usize).collect();
            assert_eq!(streamed(&secrets, &chunks), expected, "round {round}");
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
    fn a_short_unfinished_prefix_is_released_at_the_end() {
        let secrets = vec![b"password-1234".to_vec()];
        assert_eq!(streamed(&secrets, &[b"pass", b"wor"]), b"passwor".to_vec());
    }

    #[test]
    fn a_prefix_of_eight_bytes_or_more_at_the_end_is_redacted() {
        let secrets = vec![b"password-1234".to_vec(), b"other".to_vec()];
        for cut in MIN_PREFIX..b"password-1234".len() {
            let text = [b"log: ".as_slice(), &b"password-1234"[..cut]].concat();
            let expected = b"log: [redacted]".to_vec();
            assert_eq!(redact_all(&secrets, &text), expected, "cut at {cut}");
            let bytes: Vec<&[u8]> = text.chunks(1).collect();
            assert_eq!(
                streamed(&secrets, &bytes),
                expected,
                "cut at {cut}, byte by byte"
            );
        }
        // After a whole one too, but not under 8 bytes, and not in the middle of the stream.
        assert_eq!(
            redact_all(&secrets, b"password-1234password"),
            b"[redacted][redacted]".to_vec()
        );
        assert_eq!(
            redact_all(&secrets, b"password-1234passwor"),
            b"[redacted]passwor".to_vec()
        );
        assert_eq!(
            redact_all(&secrets, b"password-12 and more"),
            b"password-12 and more".to_vec()
        );
        // The longest prefix of any secret is the one taken.
        let nested = vec![b"abcdefgh-long-secret".to_vec(), b"xxabcdefgh-1".to_vec()];
        assert_eq!(
            redact_all(&nested, b"zz abcdefgh-long-se"),
            b"zz [redacted]".to_vec()
        );
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
