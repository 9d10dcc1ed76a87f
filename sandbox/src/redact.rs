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

/// What replaces each secret.
pub(crate) const MARKER: &[u8] = b"[redacted]";

/// A streaming redactor for one output stream.
#[derive(Debug)]
pub(crate) struct Redactor {
    /// Non-empty, distinct, longest first.
    secrets: Vec<Vec<u8>>,
    /// Bytes received but not yet decided.
    pending: Vec<u8>,
}

impl Redactor {
    /// A redactor for these secrets; empty secrets are ignored.
    pub(crate) fn new(secrets: &[Vec<u8>]) -> Self {
        let mut secrets: Vec<Vec<u8>> = secrets.iter().filter(|s| !s.is_empty()).cloned().collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor {
            secrets,
            pending: Vec::new(),
        }
    }

    /// Takes more input and appends to `out` everything that is decided.
    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if self.secrets.is_empty() {
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
    /// `pending` were consumed. Unless `last`, stops at the first position where the rest
    /// is a proper prefix of a secret (more input could complete it).
    fn scan(&self, last: bool, out: &mut Vec<u8>) -> usize {
        let buf = &self.pending;
        let mut emitted = 0;
        let mut pos = 0;
        while pos < buf.len() {
            let rest = &buf[pos..];
            if !last
                && self
                    .secrets
                    .iter()
                    .any(|s| s.len() > rest.len() && s.starts_with(rest))
            {
                break;
            }
            // Longest first, so the first complete match is the longest one.
            if let Some(secret) = self.secrets.iter().find(|s| rest.starts_with(s)) {
                out.extend_from_slice(&buf[emitted..pos]);
                out.extend_from_slice(MARKER);
                pos += secret.len();
                emitted = pos;
            } else {
                pos += 1;
            }
        }
        out.extend_from_slice(&buf[emitted..pos]);
        pos
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
