//! Secrets, and the one way they are kept out of everything derived from a job.
//!
//! A run's secrets are the values its caller's environment gives every name under an
//! `envFrom` of the change — every provider's and every service's, as one set: a value
//! is a secret wherever it appears, whichever job printed it. [`Secrets`] is built once
//! per command from the loaded change (`crate::load::secrets::of_change`) and removes them from:
//!
//! - what a job writes, as it is written: the sandbox's streaming redactor gets
//!   [`Secrets::patterns`] for every job's log, every service's log and every probe;
//! - a report, before it is parsed or stored ([`Secrets::bytes`]), and every value derived
//!   from one (test names, reasons, annotations, attachments: [`Redact`]);
//! - what a receipt signs ([`crate::proof::receipt::write`] takes the secrets);
//! - everything [`crate::present::output`] writes to stdout or stderr.
//!
//! **Encodings.** A secret reaches output in the forms the tools around it write: raw,
//! JSON-escaped (`\"`, `\u0026`, Python's `\u00e9`, Go's `\u003c`, `\/`), XML-escaped
//! (`&amp;`, `&#34;`, `&#x27;`), or both (JSON text in an XML attribute). [`Secrets::bytes`]
//! does not enumerate forms: it reads the bytes as they are and through every decoding of
//! JSON string escapes and XML character references (and each of those twice), finds the
//! secrets in each reading, and replaces the bytes each occurrence came from — whole
//! escape sequences — with the marker, so a JSON string or an XML attribute stays one.
//! URLs: percent-encoding (`%2F` or `%2f`, any mix of the two, whatever set of characters
//! the encoder left alone) and form-encoding (`+` for a space) are two more decodings read
//! through the same way. Shells: a value quoted for a shell — inside `'…'` with `'\''` or
//! `'"'"'` for its quotes (bash's `${x@Q}`, Python's `shlex.quote`), inside `"…"`,
//! backslash-escaped (bash's `printf %q`) or inside `$'…'` (bash, for bytes that are not
//! printable ASCII) — is looked for as those literal forms.
//! The sandbox redacts while the job runs and cannot look back, so it gets a list of
//! fixed forms instead ([`Secrets::patterns`]: raw, the JSON and XML writers' escapes, the
//! percent- and form-encodings of the usual URL encoders in either hex case, the shell
//! forms); logs are redacted again, completely, before they are stored.
//!
//! **Base64.** The base64 of a value (standard or URL-safe alphabet, at any of the three
//! alignments it can take inside a longer encoded text: the characters that depend on the
//! value alone) is a check, not a decoding: wherever [`Secrets::base64_in`] finds one in a
//! job's log or report, the run warns (`secret_encoded_base64`) — a job that prints it is
//! encoding the secret itself, and a slightly different encoding (a prefix, a compression)
//! would pass. In a log it is also replaced ([`Secrets::without_base64`]); a report keeps
//! it, since its base64 is data the report's reader decodes (and redacts decoded).
//!
//! **Short values.** A value shorter than [`MIN_SECRET_BYTES`] is not a secret here:
//! redacting `true` or `1234` would mangle every report and log in which those bytes
//! occur by chance. Such a value is still passed to the job, and `validate` and `prove`
//! say that it will not be redacted (`secret_too_short`). An empty value has nothing to
//! redact.
//!
//! **What is guaranteed.** After [`Secrets::bytes`], no secret occurs in the result, nor in
//! any of the decodings above: the result is checked, redacted again where a replacement
//! made a new occurrence (a secret that overlaps the marker), and replaced as a whole by
//! [`FALLBACK`] if that does not converge. A job that encodes a secret otherwise (reversed,
//! compressed, encrypted) on purpose is not stopped by this; see `docs/threat-model.md`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use aho_corasick::AhoCorasick;

use crate::base::diagnostic::Diagnostic;

/// Values shorter than this are not treated as secrets (see the module documentation).
pub const MIN_SECRET_BYTES: usize = 8;

/// What replaces a secret, unless a secret occurs in it (then the next one that contains
/// none).
const MARKERS: [&str; 3] = ["[redacted]", "[REDACTED]", "[secret]"];

/// What replaces a whole value in which redaction does not converge; shorter than any
/// secret, so it can hold none.
pub const FALLBACK: &str = "***";

/// How many times a value is redacted again before it is replaced as a whole.
const ROUNDS: usize = 4;

/// How many nested decodings a secret is looked for through (JSON in JSON, JSON in XML).
const DEPTH: usize = 2;

/// The secret values of a run.
#[derive(Clone, Default)]
pub struct Secrets {
    /// Distinct, at least [`MIN_SECRET_BYTES`] long, sorted.
    values: Vec<Vec<u8>>,
    /// Finds `values` and their shell-quoted forms (absent when there are none).
    finder: Option<AhoCorasick>,
    /// Finds the base64 of `values` alone (absent when there are none).
    base64: Option<AhoCorasick>,
    /// What replaces each occurrence.
    marker: &'static str,
    /// The values and their usual escaped forms, for the sandbox's streaming redactor.
    patterns: Vec<Vec<u8>>,
    /// Literal rewrites applied before redaction (a run's sandbox paths to repository-relative
    /// ones), longest first, with their finder.
    rewrites: Vec<(Vec<u8>, Vec<u8>)>,
    rewriter: Option<AhoCorasick>,
}

impl std::fmt::Debug for Secrets {
    /// Never the values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("count", &self.values.len())
            .finish_non_exhaustive()
    }
}

impl Secrets {
    /// No secrets: every redaction is the identity.
    pub fn none() -> Self {
        Self::default()
    }

    /// These values; those shorter than [`MIN_SECRET_BYTES`] are left out (callers say so).
    pub fn new(values: impl IntoIterator<Item = Vec<u8>>) -> Self {
        let mut values: Vec<Vec<u8>> = values
            .into_iter()
            .filter(|v| v.len() >= MIN_SECRET_BYTES)
            .collect();
        values.sort();
        values.dedup();
        if values.is_empty() {
            return Self::none();
        }
        let encoded: Vec<Vec<u8>> = values.iter().flat_map(|v| base64_forms(v)).collect();
        let mut searched: Vec<Vec<u8>> = values.clone();
        searched.extend(values.iter().flat_map(|v| shell_forms(v)));
        searched.sort();
        searched.dedup();
        let finder = AhoCorasick::new(&searched).ok();
        let base64 = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&encoded)
            .ok();
        let marker = MARKERS
            .into_iter()
            .find(|m| {
                !values
                    .iter()
                    .any(|v| m.as_bytes().windows(v.len()).any(|w| w == v.as_slice()))
            })
            .unwrap_or(FALLBACK);
        let mut patterns: Vec<Vec<u8>> = values.iter().flat_map(|v| encoded_forms(v)).collect();
        patterns.sort();
        patterns.dedup();
        Secrets {
            values,
            finder,
            base64,
            marker,
            patterns,
            rewrites: Vec::new(),
            rewriter: None,
        }
    }

    /// These secrets, with `rewrites` (from, to) applied to everything redacted, before the
    /// secrets are: a run rewrites its sandboxes' paths so that reasons, test ids, logs and
    /// reports name files relative to their repository. Rewriting first keeps the guarantee:
    /// nothing a rewrite produces escapes the redaction after it.
    pub fn with_rewrites(&self, rewrites: Vec<(String, String)>) -> Secrets {
        let mut rewrites: Vec<(Vec<u8>, Vec<u8>)> = rewrites
            .into_iter()
            .filter(|(from, _)| !from.is_empty())
            .map(|(from, to)| (from.into_bytes(), to.into_bytes()))
            .collect();
        rewrites.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        rewrites.dedup_by(|a, b| a.0 == b.0);
        let rewriter = if rewrites.is_empty() {
            None
        } else {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(rewrites.iter().map(|(from, _)| from))
                .ok()
        };
        Secrets {
            rewrites,
            rewriter,
            ..self.clone()
        }
    }

    /// `data` with the rewrites applied.
    fn rewritten<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(rewriter) = &self.rewriter else {
            return Cow::Borrowed(data);
        };
        if rewriter.find(data).is_none() {
            return Cow::Borrowed(data);
        }
        let mut out = Vec::with_capacity(data.len());
        rewriter.replace_all_with_bytes(data, &mut out, |m, matched, dst| {
            let (from, to) = &self.rewrites[m.pattern().as_usize()];
            // A directory named without its slash (`/w/proj`, a printed working directory)
            // is that directory only when no file name goes on after it: `/w/proj-api` is
            // another directory, and stays as it is.
            let goes_on = data
                .get(m.end())
                .is_some_and(|b| b.is_ascii_alphanumeric() || b"._-".contains(b));
            if !from.ends_with(b"/") && goes_on {
                dst.extend_from_slice(matched);
            } else {
                dst.extend_from_slice(to);
            }
            true
        });
        Cow::Owned(out)
    }

    /// Adds `other`'s secrets to these.
    pub fn merge(&mut self, other: &Secrets) {
        if other.values.is_empty() {
            return;
        }
        let values = self.values.iter().chain(&other.values).cloned();
        *self = Secrets::new(values.collect::<Vec<_>>());
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The secrets and the forms JSON and XML writers usually give them, for a redactor
    /// that sees a stream once and cannot decode it ([`proofgraph_sandbox::JobSpec::redact`]).
    pub fn patterns(&self) -> &[Vec<u8>] {
        &self.patterns
    }

    /// `data` without any secret, raw or escaped (see the module documentation), after the
    /// rewrites ([`Secrets::with_rewrites`]).
    pub fn bytes<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        match self.rewritten(data) {
            Cow::Borrowed(data) => self.redacted_bytes(data),
            Cow::Owned(data) => Cow::Owned(self.redacted_bytes(&data).into_owned()),
        }
    }

    fn redacted_bytes<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(finder) = &self.finder else {
            return Cow::Borrowed(data);
        };
        let spans = occurrences(finder, data);
        if spans.is_empty() {
            return Cow::Borrowed(data);
        }
        let mut out = replace(data, &spans, self.marker.as_bytes());
        for _ in 0..ROUNDS {
            let spans = occurrences(finder, &out);
            if spans.is_empty() {
                return Cow::Owned(out);
            }
            out = replace(&out, &spans, self.marker.as_bytes());
        }
        if occurrences(finder, &out).is_empty() {
            Cow::Owned(out)
        } else {
            Cow::Owned(FALLBACK.as_bytes().to_vec())
        }
    }

    /// `text` without any secret; see [`Secrets::bytes`].
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Replacements cover whole characters, whole escapes or whole secrets, so the
            // result is text; a secret that is not UTF-8 cannot occur in one.
            Cow::Owned(bytes) => Cow::Owned(match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }),
        }
    }

    /// Whether the base64 of a secret occurs in `data` (the run warns: see the module
    /// documentation). Looks at `data` as it is, not through decodings.
    pub fn base64_in(&self, data: &[u8]) -> bool {
        self.base64.as_ref().is_some_and(|f| f.is_match(data))
    }

    /// `data` with the base64 of every secret replaced by the marker: for a job's log,
    /// which nothing decodes. A report keeps its base64 (a Playwright attachment's body is
    /// decoded, redacted and encoded again; replacing a piece of it would lose the
    /// attachment); the run warns about both.
    pub fn without_base64<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        match &self.base64 {
            Some(finder) if finder.is_match(data) => {
                let mut out = Vec::with_capacity(data.len());
                finder.replace_all_with_bytes(data, &mut out, |_, _, dst| {
                    dst.extend_from_slice(self.marker.as_bytes());
                    true
                });
                Cow::Owned(out)
            }
            _ => Cow::Borrowed(data),
        }
    }

    /// The longest base64 form [`Secrets::base64_in`] looks for (0 when none): a stream
    /// searched in pieces carries this many bytes less one from each piece to the next.
    pub fn base64_longest(&self) -> usize {
        self.values
            .iter()
            .flat_map(|v| base64_forms(v))
            .map(|f| f.len())
            .max()
            .unwrap_or(0)
    }

    /// How many bytes at the end of `data` are a proper prefix, at least
    /// [`MIN_SECRET_BYTES`] long, of a secret in one of its [`Secrets::patterns`] forms (or
    /// its base64): what a cut made after them may have left of a secret (the longest
    /// such; 0 when none).
    pub fn cut_at_end(&self, data: &[u8]) -> usize {
        self.cut_forms()
            .filter_map(|form| {
                (MIN_SECRET_BYTES..form.len().min(data.len() + 1))
                    .rev()
                    .find(|&len| data.ends_with(&form[..len]))
            })
            .max()
            .unwrap_or(0)
    }

    /// How many bytes at the start of `data` are a proper suffix, at least
    /// [`MIN_SECRET_BYTES`] long, of a secret in one of its forms: [`Secrets::cut_at_end`]
    /// for what follows a cut.
    pub fn cut_at_start(&self, data: &[u8]) -> usize {
        self.cut_forms()
            .filter_map(|form| {
                (MIN_SECRET_BYTES..form.len().min(data.len() + 1))
                    .rev()
                    .find(|&len| data.starts_with(&form[form.len() - len..]))
            })
            .max()
            .unwrap_or(0)
    }

    /// Every form a cut may split: [`Secrets::patterns`] and the base64 forms.
    fn cut_forms(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.patterns
            .iter()
            .cloned()
            .chain(self.values.iter().flat_map(|v| base64_forms(v)))
    }

    /// Whether a secret occurs in `data`, raw or escaped.
    pub fn occur_in(&self, data: &[u8]) -> bool {
        self.finder
            .as_ref()
            .is_some_and(|f| !occurrences(f, data).is_empty())
    }

    /// Redacts every string in `value`.
    pub fn redact<T: Redact>(&self, mut value: T) -> Redacted<T> {
        if !self.is_empty() || self.rewriter.is_some() {
            value.redact(self);
        }
        Redacted(value)
    }
}

/// A value whose every string went through [`Secrets`]: only [`Secrets::redact`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// The redacted value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Redacted<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// A value with strings in it that may carry secrets.
pub trait Redact {
    /// Replaces every secret in every string of `self`.
    fn redact(&mut self, secrets: &Secrets);
}

impl Redact for String {
    fn redact(&mut self, secrets: &Secrets) {
        if let Cow::Owned(text) = secrets.text(self) {
            *self = text;
        }
    }
}

impl Redact for Vec<u8> {
    fn redact(&mut self, secrets: &Secrets) {
        if let Cow::Owned(bytes) = secrets.bytes(self) {
            *self = bytes;
        }
    }
}

impl<T: Redact> Redact for Option<T> {
    fn redact(&mut self, secrets: &Secrets) {
        if let Some(value) = self {
            value.redact(secrets);
        }
    }
}

impl<T: Redact> Redact for Vec<T> {
    fn redact(&mut self, secrets: &Secrets) {
        for value in self {
            value.redact(secrets);
        }
    }
}

impl<V: Redact> Redact for BTreeMap<String, V> {
    /// Keys too: two keys that differ only by a secret become one (the last wins).
    fn redact(&mut self, secrets: &Secrets) {
        let entries = std::mem::take(self);
        for (mut key, mut value) in entries {
            key.redact(secrets);
            value.redact(secrets);
            self.insert(key, value);
        }
    }
}

impl Redact for serde_json::Value {
    fn redact(&mut self, secrets: &Secrets) {
        match self {
            serde_json::Value::String(s) => s.redact(secrets),
            serde_json::Value::Array(items) => items.redact(secrets),
            serde_json::Value::Object(map) => {
                let changed = map.keys().any(|k| secrets.occur_in(k.as_bytes()));
                if changed {
                    // Rebuilt in order, so a redacted key keeps its place.
                    let entries = std::mem::take(map);
                    for (mut key, mut value) in entries {
                        key.redact(secrets);
                        value.redact(secrets);
                        map.insert(key, value);
                    }
                } else {
                    for value in map.values_mut() {
                        value.redact(secrets);
                    }
                }
            }
            serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
            }
        }
    }
}

impl Redact for Diagnostic {
    fn redact(&mut self, secrets: &Secrets) {
        self.message.redact(secrets);
        self.fix.redact(secrets);
        match &mut self.target {
            Some(crate::base::diagnostic::Target::Surface(surface)) => surface.redact(secrets),
            Some(crate::base::diagnostic::Target::Location(location)) => {
                location.file.redact(secrets)
            }
            None => {}
        }
    }
}

// Finding secrets through decodings.

/// Above this size, `data` is searched in windows (so that its decodings never take
/// more than a few times this much memory).
/// (Small in unit tests, so that windows are crossed cheaply.)
const WINDOW: usize = if cfg!(test) { 64 << 10 } else { 4 << 20 };

/// How far windows overlap: an occurrence up to this long in `data` (a secret with every
/// character escaped, twice) is wholly inside one window.
const OVERLAP: usize = if cfg!(test) { 4 << 10 } else { 64 << 10 };

/// Where a secret occurs in `data`: byte ranges of `data`, sorted by start, possibly
/// overlapping. Looks at `data` as it is and through up to [`DEPTH`] nested decodings
/// of JSON string escapes and XML character references.
fn occurrences(finder: &AhoCorasick, data: &[u8]) -> Vec<(usize, usize)> {
    if data.len() <= WINDOW + OVERLAP {
        return occurrences_in(finder, data);
    }
    let mut spans = Vec::new();
    let mut nominal = 0;
    while nominal < data.len() {
        // A window starts after a raw newline where it can (no escape spans one, so every
        // decoding is in step with the whole input's from there).
        let earliest = nominal.saturating_sub(OVERLAP);
        let start = match memchr::memrchr(b'\n', &data[earliest..nominal]) {
            Some(i) => earliest + i + 1,
            None => earliest,
        };
        let end = data.len().min(nominal + WINDOW + OVERLAP);
        spans.extend(
            occurrences_in(finder, &data[start..end])
                .into_iter()
                .map(|(s, e)| (s + start, e + start)),
        );
        nominal += WINDOW;
    }
    spans.sort_unstable();
    spans.dedup();
    spans
}

/// A decoding: the decoded text and its escapes, `None` when it has nothing to decode.
type Decoding = fn(&[u8]) -> Option<(Vec<u8>, Vec<Escape>)>;

/// The decodings a secret is looked for through (nested up to [`DEPTH`]).
const DECODINGS: [Decoding; 4] = [json_decode, xml_decode, percent_decode, form_decode];

/// [`occurrences`] in one window.
fn occurrences_in(finder: &AhoCorasick, data: &[u8]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = finder
        .find_overlapping_iter(data)
        .map(|m| (m.start(), m.end()))
        .collect();
    // Each reading: its text and, innermost first, the escapes of every decoding on the
    // way from `data` to it. A decoding that decoded nothing is the text it came from.
    type Layers = Vec<std::rc::Rc<Vec<Escape>>>;
    let mut readings: Vec<(Vec<u8>, Layers)> = Vec::new();
    for decode in DECODINGS {
        if let Some((text, escapes)) = decode(data).filter(|(_, e)| !e.is_empty()) {
            readings.push((text, vec![std::rc::Rc::new(escapes)]));
        }
    }
    let mut previous = 0..readings.len();
    for _ in 1..DEPTH {
        let from = readings.len();
        for i in previous {
            for decode in DECODINGS {
                if let Some((text, escapes)) = decode(&readings[i].0).filter(|(_, e)| !e.is_empty())
                {
                    let mut layers = readings[i].1.clone();
                    layers.push(std::rc::Rc::new(escapes));
                    readings.push((text, layers));
                }
            }
        }
        previous = from..readings.len();
    }
    for (text, layers) in &readings {
        for m in finder.find_overlapping_iter(text) {
            let mut span = (m.start(), m.end());
            for escapes in layers.iter().rev() {
                span = source_span(escapes, span);
            }
            spans.push(span);
        }
    }
    spans.sort_unstable();
    spans
}

/// Replaces the union of `spans` (sorted by start) in `data` with `marker`, once per
/// run of overlapping or adjacent spans.
fn replace(data: &[u8], spans: &[(usize, usize)], marker: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut copied = 0;
    let mut iter = spans.iter().copied().peekable();
    while let Some((start, mut end)) = iter.next() {
        while let Some(&(s, e)) = iter.peek() {
            if s > end {
                break;
            }
            end = end.max(e);
            iter.next();
        }
        let start = start.max(copied);
        out.extend_from_slice(&data[copied..start]);
        out.extend_from_slice(marker);
        copied = end.max(copied);
    }
    out.extend_from_slice(&data[copied..]);
    out
}

/// One decoded escape: `len` decoded bytes at `at` came from `source_len` bytes at
/// `source` of the decoding's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Escape {
    at: usize,
    len: usize,
    source: usize,
    source_len: usize,
}

/// The bytes of the decoding's input a decoded range came from: whole escapes.
fn source_span(escapes: &[Escape], (start, end): (usize, usize)) -> (usize, usize) {
    let from = source_of(escapes, start).0;
    let to = source_of(escapes, end.saturating_sub(1).max(start)).1;
    (from, to)
}

/// The input bytes decoded byte `at` came from.
fn source_of(escapes: &[Escape], at: usize) -> (usize, usize) {
    let index = escapes.partition_point(|e| e.at <= at);
    match index.checked_sub(1).map(|i| escapes[i]) {
        Some(e) if at < e.at + e.len => (e.source, e.source + e.source_len),
        Some(e) => {
            let source = e.source + e.source_len + (at - (e.at + e.len));
            (source, source + 1)
        }
        None => (at, at + 1),
    }
}

/// Appends `c` as UTF-8 and records the escape it came from.
fn push_char(
    text: &mut Vec<u8>,
    escapes: &mut Vec<Escape>,
    c: char,
    source: usize,
    source_len: usize,
) {
    let mut buf = [0u8; 4];
    let encoded = c.encode_utf8(&mut buf).as_bytes();
    escapes.push(Escape {
        at: text.len(),
        len: encoded.len(),
        source,
        source_len,
    });
    text.extend_from_slice(encoded);
}

fn hex4(bytes: &[u8]) -> Option<u16> {
    let digits = bytes.get(..4)?;
    let text = std::str::from_utf8(digits).ok()?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(text, 16).ok()
}

/// `input` with JSON string escapes decoded (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`,
/// `\t`, `\uXXXX` in either case, surrogate pairs); anything else, including a lone
/// surrogate, is kept as it is. `None` when there is no backslash.
fn json_decode(input: &[u8]) -> Option<(Vec<u8>, Vec<Escape>)> {
    memchr::memchr(b'\\', input)?;
    let mut text = Vec::with_capacity(input.len());
    let mut escapes = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let Some(offset) = memchr::memchr(b'\\', &input[i..]) else {
            text.extend_from_slice(&input[i..]);
            break;
        };
        text.extend_from_slice(&input[i..i + offset]);
        i += offset;
        let short = match input.get(i + 1) {
            Some(b'"') => Some('"'),
            Some(b'\\') => Some('\\'),
            Some(b'/') => Some('/'),
            Some(b'b') => Some('\u{8}'),
            Some(b'f') => Some('\u{c}'),
            Some(b'n') => Some('\n'),
            Some(b'r') => Some('\r'),
            Some(b't') => Some('\t'),
            _ => None,
        };
        if let Some(c) = short {
            push_char(&mut text, &mut escapes, c, i, 2);
            i += 2;
            continue;
        }
        if input.get(i + 1) == Some(&b'u')
            && let Some(unit) = hex4(&input[i + 2..])
        {
            if (0xD800..0xDC00).contains(&unit)
                && input.get(i + 6..i + 8) == Some(b"\\u")
                && let Some(low) = hex4(&input[i + 8..])
                && (0xDC00..0xE000).contains(&low)
            {
                let scalar =
                    0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                if let Some(c) = char::from_u32(scalar) {
                    push_char(&mut text, &mut escapes, c, i, 12);
                    i += 12;
                    continue;
                }
            }
            if let Some(c) = char::from_u32(u32::from(unit)) {
                push_char(&mut text, &mut escapes, c, i, 6);
                i += 6;
                continue;
            }
        }
        // Not an escape: the backslash is itself.
        text.push(b'\\');
        i += 1;
    }
    Some((text, escapes))
}

/// `input` with XML's five named entities and numeric character references (`&#34;`,
/// `&#x22;`, up to eight digits) decoded; anything else is kept as it is. `None` when
/// there is no ampersand.
fn xml_decode(input: &[u8]) -> Option<(Vec<u8>, Vec<Escape>)> {
    memchr::memchr(b'&', input)?;
    let mut text = Vec::with_capacity(input.len());
    let mut escapes = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let Some(offset) = memchr::memchr(b'&', &input[i..]) else {
            text.extend_from_slice(&input[i..]);
            break;
        };
        text.extend_from_slice(&input[i..i + offset]);
        i += offset;
        let window = &input[i + 1..input.len().min(i + 13)];
        let decoded = memchr::memchr(b';', window).and_then(|end| {
            let name = &window[..end];
            let c = match name {
                b"amp" => Some('&'),
                b"lt" => Some('<'),
                b"gt" => Some('>'),
                b"quot" => Some('"'),
                b"apos" => Some('\''),
                [b'#', b'x' | b'X', hex @ ..] if (1..=8).contains(&hex.len()) => {
                    std::str::from_utf8(hex)
                        .ok()
                        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32)
                }
                [b'#', digits @ ..] if (1..=8).contains(&digits.len()) => {
                    std::str::from_utf8(digits)
                        .ok()
                        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|d| d.parse::<u32>().ok())
                        .and_then(char::from_u32)
                }
                _ => None,
            };
            c.map(|c| (c, end + 2))
        });
        match decoded {
            Some((c, len)) => {
                push_char(&mut text, &mut escapes, c, i, len);
                i += len;
            }
            None => {
                text.push(b'&');
                i += 1;
            }
        }
    }
    Some((text, escapes))
}

/// The value of an ASCII hex digit, either case.
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// `input` with percent-encoding (`%2F`, `%2f`) decoded, and with `plus` a `+` as a space
/// too (form-encoding); anything else, a `%` not followed by two hex digits included, is
/// kept as it is. Decodes bytes, not characters: `%C3%A9` is two escapes of one byte each.
fn url_decode(input: &[u8], plus: bool) -> Option<(Vec<u8>, Vec<Escape>)> {
    let mut text = Vec::with_capacity(input.len());
    let mut escapes = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let next = if plus {
            memchr::memchr2(b'%', b'+', &input[i..])
        } else {
            memchr::memchr(b'%', &input[i..])
        };
        let Some(offset) = next else {
            text.extend_from_slice(&input[i..]);
            break;
        };
        text.extend_from_slice(&input[i..i + offset]);
        i += offset;
        let decoded = if input[i] == b'+' {
            Some((b' ', 1))
        } else {
            input
                .get(i + 1..i + 3)
                .and_then(|h| Some((hex_digit(h[0])? << 4 | hex_digit(h[1])?, 3)))
        };
        match decoded {
            Some((byte, len)) => {
                escapes.push(Escape {
                    at: text.len(),
                    len: 1,
                    source: i,
                    source_len: len,
                });
                text.push(byte);
                i += len;
            }
            None => {
                text.push(input[i]);
                i += 1;
            }
        }
    }
    Some((text, escapes))
}

/// [`url_decode`] of percent-encoding alone; `None` when there is no `%`.
fn percent_decode(input: &[u8]) -> Option<(Vec<u8>, Vec<Escape>)> {
    memchr::memchr(b'%', input)?;
    url_decode(input, false)
}

/// [`url_decode`] of form-encoding (`+` for a space); `None` when there is no `+` (the
/// reading would be [`percent_decode`]'s).
fn form_decode(input: &[u8]) -> Option<(Vec<u8>, Vec<Escape>)> {
    memchr::memchr(b'+', input)?;
    url_decode(input, true)
}

// The forms writers usually give a secret, for the streaming redactor.

/// `value` and the forms JSON and XML writers give it: serde_json's and JavaScript's,
/// with `/` escaped (PHP), ASCII-only (Python), HTML-safe (Go), and XML text and attribute
/// escaping (named entities or numeric references, quotes and control characters).
fn encoded_forms(value: &[u8]) -> Vec<Vec<u8>> {
    let mut forms = vec![value.to_vec()];
    for set in URL_SETS {
        for upper in [true, false] {
            forms.push(url_encode(value, set, upper));
        }
    }
    forms.extend(shell_forms(value));
    let Ok(text) = std::str::from_utf8(value) else {
        return forms;
    };
    for style in [
        JsonStyle::Plain,
        JsonStyle::Slash,
        JsonStyle::Ascii,
        JsonStyle::Html,
        JsonStyle::AsciiUpper,
    ] {
        forms.push(json_escape(text, style).into_bytes());
    }
    for style in [XmlStyle::Text, XmlStyle::Attribute, XmlStyle::Numeric] {
        forms.push(xml_escape(text, style).into_bytes());
    }
    forms
}

/// What a URL encoder leaves as it is, and whether it writes a space as `+`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UrlSet {
    /// Kept besides ASCII letters and digits.
    keeps: &'static [u8],
    /// A space is `+` (form-encoding).
    plus: bool,
}

/// The usual URL encoders: RFC 3986's unreserved characters alone (Python's
/// `quote(safe="")`, Go's `PathEscape` for most values, curl's `--data-urlencode`),
/// JavaScript's `encodeURIComponent` and `encodeURI`, Python's `quote` (keeps `/`), and
/// form-encoding as Python's `quote_plus` and Go's `QueryEscape`, and as the WHATWG's
/// `URLSearchParams` write it.
const URL_SETS: [UrlSet; 6] = [
    UrlSet {
        keeps: b"-._~",
        plus: false,
    },
    UrlSet {
        keeps: b"-._~!'()*",
        plus: false,
    },
    UrlSet {
        keeps: b"-._~!'()*#$&+,/:;=?@",
        plus: false,
    },
    UrlSet {
        keeps: b"-._~/",
        plus: false,
    },
    UrlSet {
        keeps: b"-._~",
        plus: true,
    },
    UrlSet {
        keeps: b"-._*",
        plus: true,
    },
];

/// `value` percent-encoded as `set` says, with `upper` or lower case hex digits.
fn url_encode(value: &[u8], set: UrlSet, upper: bool) -> Vec<u8> {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = Vec::with_capacity(value.len() * 3);
    for &b in value {
        if b.is_ascii_alphanumeric() || set.keeps.contains(&b) {
            out.push(b);
        } else if b == b' ' && set.plus {
            out.push(b'+');
        } else {
            out.extend_from_slice(&[
                b'%',
                digits[usize::from(b >> 4)],
                digits[usize::from(b & 15)],
            ]);
        }
    }
    out
}

/// The forms a shell-quoting writer gives `value` (what stands between the quotes):
/// inside single quotes with each `'` as `'\''` (bash's `${x@Q}`) or `'"'"'` (Python's
/// `shlex.quote`); inside double quotes (`\` before `"`, `\`, `$`, `` ` ``);
/// backslash-escaped as bash's `printf %q` writes it; and inside bash's `$'…'`.
fn shell_forms(value: &[u8]) -> Vec<Vec<u8>> {
    let replace = |from: u8, to: &[u8]| -> Vec<u8> {
        let mut out = Vec::with_capacity(value.len() + 8);
        for &b in value {
            if b == from {
                out.extend_from_slice(to);
            } else {
                out.push(b);
            }
        }
        out
    };
    let mut double = Vec::with_capacity(value.len() + 8);
    let mut backslashed = Vec::with_capacity(value.len() + 8);
    for (i, &b) in value.iter().enumerate() {
        if matches!(b, b'"' | b'\\' | b'$' | b'`') {
            double.push(b'\\');
        }
        double.push(b);
        let special =
            b" \t\n'\"\\|&;()<>!{}*[]?^$`,".contains(&b) || (i == 0 && matches!(b, b'#' | b'~'));
        if special {
            backslashed.push(b'\\');
        }
        backslashed.push(b);
    }
    vec![
        replace(b'\'', b"'\\''"),
        replace(b'\'', b"'\"'\"'"),
        double,
        backslashed,
        ansi_c(value),
    ]
}

/// `value` as bash writes it inside `$'…'` (its `printf %q` and `${x@Q}` for a value with
/// a byte that is not printable ASCII, or any non-ASCII byte in the C locale): `\'`,
/// `\\`, the usual letter escapes, and every other such byte as three octal digits.
fn ansi_c(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() * 2);
    for &b in value {
        match b {
            b'\'' => out.extend_from_slice(b"\\'"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0b => out.extend_from_slice(b"\\v"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x1b => out.extend_from_slice(b"\\E"),
            b' '..=b'~' => out.push(b),
            _ => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
        }
    }
    out
}

/// The base64 of `value` that depends on it alone, in the standard and URL-safe
/// alphabets: at each of the three alignments it can take in a longer encoded text
/// (starting 0, 2 or 1 bytes into its own first group of three), the whole groups of
/// three bytes it fills (four characters each). Every one is at least 8 characters, as
/// values are at least [`MIN_SECRET_BYTES`] long.
fn base64_forms(value: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    let mut forms = Vec::new();
    for skip in [0, 1, 2] {
        let Some(rest) = value.get(skip..) else {
            continue;
        };
        let whole = &rest[..rest.len() / 3 * 3];
        if whole.len() < 6 {
            continue;
        }
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            forms.push(engine.encode(whole).into_bytes());
        }
    }
    forms.sort();
    forms.dedup();
    forms
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonStyle {
    /// `"`, `\` and control characters (short forms where JSON has them).
    Plain,
    /// Plain, and `/` as `\/`.
    Slash,
    /// Plain, and everything outside printable ASCII as `\uxxxx` (Python's default).
    Ascii,
    /// Plain, and `<`, `>`, `&`, U+2028, U+2029 as `\u003c`… (Go's default).
    Html,
    /// Ascii with uppercase hex digits (.NET, Jackson).
    AsciiUpper,
}

fn json_escape(text: &str, style: JsonStyle) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let unit = |out: &mut String, u: u16| {
        if style == JsonStyle::AsciiUpper {
            out.push_str(&format!("\\u{u:04X}"));
        } else {
            out.push_str(&format!("\\u{u:04x}"));
        }
    };
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '/' if style == JsonStyle::Slash => out.push_str("\\/"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' if style == JsonStyle::Html => {
                unit(&mut out, c as u16);
            }
            c if u32::from(c) < 0x20 => unit(&mut out, c as u16),
            c if matches!(style, JsonStyle::Ascii | JsonStyle::AsciiUpper)
                && !(' '..='~').contains(&c) =>
            {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    unit(&mut out, *u);
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum XmlStyle {
    /// `&`, `<`, `>`.
    Text,
    /// Text, and `"` as `&quot;`, `'` as `&apos;`, control characters as `&#10;`.
    Attribute,
    /// Text, and `"` as `&#34;`, `'` as `&#39;` (Python's `html.escape`, Java writers).
    Numeric,
}

fn xml_escape(text: &str, style: XmlStyle) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match (c, style) {
            ('&', _) => out.push_str("&amp;"),
            ('<', _) => out.push_str("&lt;"),
            ('>', _) => out.push_str("&gt;"),
            ('"', XmlStyle::Attribute) => out.push_str("&quot;"),
            ('\'', XmlStyle::Attribute) => out.push_str("&apos;"),
            ('"', XmlStyle::Numeric) => out.push_str("&#34;"),
            ('\'', XmlStyle::Numeric) => out.push_str("&#39;"),
            (c, XmlStyle::Attribute) if u32::from(c) < 0x20 => {
                out.push_str(&format!("&#{};", u32::from(c)));
            }
            (c, _) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secrets(values: &[&str]) -> Secrets {
        Secrets::new(values.iter().map(|v| v.as_bytes().to_vec()))
    }

    fn redacted(s: &Secrets, text: &str) -> String {
        s.text(text).into_owned()
    }

    #[test]
    fn a_directory_named_without_its_slash_is_rewritten_only_where_its_name_ends() {
        let secrets = Secrets::new(Vec::<Vec<u8>>::new()).with_rewrites(vec![
            ("/w/proj/".to_owned(), String::new()),
            ("/w/proj".to_owned(), ".".to_owned()),
        ]);
        assert_eq!(
            secrets.text("cd /w/proj; cat /w/proj/a.txt /w/proj-api/b.txt /w/proj.old /w/proj"),
            "cd .; cat a.txt /w/proj-api/b.txt /w/proj.old ."
        );
    }

    #[test]
    fn rewrites_come_first_so_nothing_they_make_escapes_redaction() {
        let s = Secrets::new([b"token-1234/abcd".to_vec()]).with_rewrites(vec![
            ("/run/sandboxes/web/".to_owned(), String::new()),
            ("/run/sandboxes/web".to_owned(), ".".to_owned()),
            ("/run/sandboxes/web2/".to_owned(), String::new()),
        ]);
        assert_eq!(
            s.text(
                "at /run/sandboxes/web/src/a.ts and /run/sandboxes/web2/b.ts in /run/sandboxes/web"
            ),
            "at src/a.ts and b.ts in ."
        );
        // A secret that only appears once a sandbox path is taken out is still redacted.
        let out = s.text("token-1234//run/sandboxes/web/abcd");
        assert!(!out.contains("token-1234/abcd"), "{out}");
        // Without secrets, values are still rewritten.
        let plain = Secrets::none().with_rewrites(vec![("/sb/".to_owned(), String::new())]);
        assert_eq!(plain.redact("/sb/x.txt".to_owned()).into_inner(), "x.txt");
        assert_eq!(plain.bytes(b"/sb/y").as_ref(), b"y");
    }

    #[test]
    fn a_secret_is_replaced_raw_and_in_every_escaped_form() {
        let s = secrets(&["p\"a<s&s/w\\d-é😀"]);
        let raw = "p\"a<s&s/w\\d-é😀";
        for form in [
            raw.to_owned(),
            serde_json::to_string(raw).expect("json")[1..]
                .trim_end_matches('"')
                .to_owned(),
            json_escape(raw, JsonStyle::Ascii),
            json_escape(raw, JsonStyle::Html),
            json_escape(raw, JsonStyle::Slash),
            json_escape(raw, JsonStyle::AsciiUpper),
            xml_escape(raw, XmlStyle::Text),
            xml_escape(raw, XmlStyle::Attribute),
            xml_escape(raw, XmlStyle::Numeric),
            // JSON text inside an XML attribute.
            xml_escape(&json_escape(raw, JsonStyle::Plain), XmlStyle::Attribute),
            // JSON in JSON (a serialized document in a message).
            json_escape(&json_escape(raw, JsonStyle::Plain), JsonStyle::Plain),
        ] {
            let text = format!("before {form} after");
            assert_eq!(
                redacted(&s, &text),
                "before [redacted] after",
                "form {form:?}"
            );
        }
    }

    #[test]
    fn a_replaced_escape_keeps_a_json_string_and_an_xml_attribute_well_formed() {
        let s = secrets(&["to\"ken-value"]);
        let doc = serde_json::json!({"name": "test to\"ken-value works", "n": 1}).to_string();
        let out = redacted(&s, &doc);
        let back: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        assert_eq!(back["name"], "test [redacted] works");
        let xml = r#"<testcase name="a to&quot;ken-value b"/>"#;
        let out = redacted(&s, xml);
        assert_eq!(out, r#"<testcase name="a [redacted] b"/>"#);
        assert!(roxmltree::Document::parse(&out).is_ok());
    }

    #[test]
    fn short_values_are_not_secrets() {
        let s = secrets(&["true", "", "1234567"]);
        assert!(s.is_empty());
        assert_eq!(redacted(&s, "true 1234567"), "true 1234567");
    }

    #[test]
    fn the_marker_never_holds_a_secret() {
        let s = secrets(&["redacted"]);
        let out = redacted(&s, "x redacted y");
        assert!(!out.contains("redacted"), "{out}");
        let s = secrets(&["redacted", "REDACTED", "[secret]"]);
        let out = redacted(&s, "redacted REDACTED [secret]");
        assert_eq!(out, "*** *** ***");
    }

    #[test]
    fn a_replacement_that_makes_a_new_occurrence_is_redacted_again() {
        // Removing the inner one joins `ab` and `[redacted]x`… into another secret.
        let s = secrets(&["ab[redacted]x", "secret-inner"]);
        assert_eq!(s.marker, "[redacted]");
        let out = redacted(&s, "1 absecret-innerx 2");
        assert_eq!(out, "1 [redacted] 2");
    }

    #[test]
    fn a_value_maps_and_json_keys_are_redacted_in_place() {
        let s = secrets(&["hunter2-secret"]);
        let mut v = serde_json::json!({"a": ["x hunter2-secret"], "hunter2-secret": 1, "z": 2});
        v.redact(&s);
        assert_eq!(
            v.to_string(),
            r#"{"a":["x [redacted]"],"[redacted]":1,"z":2}"#
        );
    }

    #[test]
    fn patterns_hold_the_usual_forms() {
        let s = secrets(&["a\"b<c>d&e"]);
        let p: Vec<String> = s
            .patterns()
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        for form in [
            "a\"b<c>d&e",
            "a\\\"b<c>d&e",
            "a\\\"b\\u003cc\\u003ed\\u0026e",
            "a\"b&lt;c&gt;d&amp;e",
            "a&quot;b&lt;c&gt;d&amp;e",
            "a&#34;b&lt;c&gt;d&amp;e",
        ] {
            assert!(p.iter().any(|x| x == form), "{form} missing from {p:?}");
        }
    }

    #[test]
    fn a_secret_is_replaced_percent_and_form_encoded_in_either_hex_case() {
        let raw = "p/a ss&w+rd=é?";
        let s = secrets(&[raw]);
        let encoded = |set: UrlSet, upper: bool| {
            String::from_utf8(url_encode(raw.as_bytes(), set, upper)).expect("ASCII")
        };
        let mut forms = Vec::new();
        for set in URL_SETS {
            forms.push(encoded(set, true));
            forms.push(encoded(set, false));
        }
        // Hex digits of both cases in one value, and an encoder that leaves `/` and `=`.
        forms.push("p%2fa%20ss%26w%2Brd=%C3%a9%3F".to_owned());
        forms.push("p/a+ss%26w%2brd=%c3%a9?".to_owned());
        // Percent-encoded, then written in a JSON string.
        forms.push(json_escape(&encoded(URL_SETS[0], true), JsonStyle::Plain));
        for form in &forms {
            let text = format!("GET /x?token={form}&next=1");
            assert_eq!(
                redacted(&s, &text),
                "GET /x?token=[redacted]&next=1",
                "form {form:?}"
            );
        }
        // The streaming redactor gets each encoder's forms in both cases.
        for set in URL_SETS {
            for upper in [true, false] {
                let form = url_encode(raw.as_bytes(), set, upper);
                assert!(
                    s.patterns().contains(&form),
                    "{:?}",
                    String::from_utf8_lossy(&form)
                );
            }
        }
        // A `%` that is no escape, and a `+` that is no space, are themselves.
        let plain = "100% of 1+1 ok %zz";
        assert_eq!(redacted(&s, plain), plain);
    }

    #[test]
    fn a_secret_quoted_for_a_shell_is_replaced() {
        let raw = "it's a \"$ecret\" `x` \\ |&;";
        let s = secrets(&[raw]);
        // As bash's `${x@Q}`, Python's `shlex.quote`, a double-quoted string and bash's
        // `printf %q` write it (written here by hand).
        for form in [
            "'it'\\''s a \"$ecret\" `x` \\ |&;'",
            "'it'\"'\"'s a \"$ecret\" `x` \\ |&;'",
            "\"it's a \\\"\\$ecret\\\" \\`x\\` \\\\ |&;\"",
            "it\\'s\\ a\\ \\\"\\$ecret\\\"\\ \\`x\\`\\ \\\\\\ \\|\\&\\;",
        ] {
            let out = redacted(&s, &format!("+ curl -H {form} https://x"));
            assert!(!out.contains("ecret"), "{form} -> {out}");
            assert!(
                s.patterns().iter().any(|p| {
                    let p = String::from_utf8_lossy(p);
                    form.contains(p.as_ref()) && p.contains("ecret")
                }),
                "no pattern for {form}"
            );
        }
    }

    #[test]
    fn base64_of_a_secret_is_found_at_every_alignment_and_replaced_in_logs() {
        use base64::Engine as _;
        let raw = "hunter2-secret-value";
        let s = secrets(&[raw]);
        for engine in [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            // Alone, and inside a longer value at each alignment (HTTP basic auth's
            // `user:password`).
            for before in ["", "u:", "us:", "use:"] {
                let encoded = engine.encode(format!("{before}{raw}"));
                let text = format!("Authorization: Basic {encoded}\n");
                assert!(s.base64_in(text.as_bytes()), "{before:?} {encoded}");
                let out = s.without_base64(text.as_bytes()).into_owned();
                assert!(out.windows(10).any(|w| w == b"[redacted]"), "{out:?}");
                assert!(!s.base64_in(&out), "{out:?}");
                // A check, not a decoding: what redacts everything else leaves it.
                assert_eq!(redacted(&s, &text), text);
            }
        }
        assert!(!s.base64_in(b"aHVudGVy unrelated base64 text"));
        assert!(s.base64_longest() >= 8);
        assert!(!Secrets::none().base64_in(b"anything"));
        // Not given to the streaming redactor: the run's own pass over the log finds it,
        // to warn.
        let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(raw);
        assert!(!s.patterns().iter().any(|p| p == encoded.as_bytes()));
    }

    #[test]
    fn what_a_cut_leaves_of_a_secret_is_measured_at_either_side() {
        let s = secrets(&["password-1234-abcd"]);
        assert_eq!(s.cut_at_end(b"log: password-1"), 10);
        assert_eq!(s.cut_at_end(b"log: passwor"), 0, "under 8 bytes");
        assert_eq!(
            s.cut_at_end(b"log: password-1234-abcd"),
            0,
            "whole, not cut"
        );
        assert_eq!(s.cut_at_start(b"-1234-abcd and on"), 10);
        assert_eq!(s.cut_at_start(b"-abcd and on"), 0);
        // A JSON-escaped form is a form too.
        let quoted = secrets(&["pass\"word-1234"]);
        assert_eq!(quoted.cut_at_end(b"{\"t\":\"pass\\\"wor"), 9);
        assert_eq!(Secrets::none().cut_at_end(b"anything at all"), 0);
    }

    #[test]
    fn debug_never_shows_a_value() {
        let s = secrets(&["hunter2-secret"]);
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn a_large_input_is_searched_in_windows_that_miss_nothing() {
        let s = secrets(&["wi\"ndow-secret"]);
        let escaped = json_escape("wi\"ndow-secret", JsonStyle::Ascii);
        let mut data = Vec::new();
        let mut placed = 0;
        // Lines of JSON-ish text, with the secret (escaped) placed across every window
        // boundary and at random-looking places in between.
        while data.len() < 3 * WINDOW + OVERLAP {
            let line = format!("{{\"n\":{},\"t\":\"x\\\\y &amp; z\"}}\n", data.len());
            data.extend_from_slice(line.as_bytes());
            let near_boundary = data.len() % WINDOW > WINDOW - 64 || data.len() % WINDOW < 64;
            if near_boundary || data.len() % 100_003 < 40 {
                data.extend_from_slice(escaped.as_bytes());
                placed += 1;
            }
        }
        let out = s.bytes(&data);
        assert!(!s.occur_in(&out));
        let markers = out.windows(10).filter(|w| w == b"[redacted]").count();
        assert_eq!(markers, placed);
        assert!(placed > 8, "placed {placed}");
    }

    /// One of the encodings a character may take inside a JSON string (`json`) or XML
    /// text: raw where the language allows it, else escaped.
    fn encode_in(c: char, how: u8, json: bool) -> String {
        let must_escape = if json {
            c == '"' || c == '\\' || u32::from(c) < 0x20
        } else {
            c == '&' || c == '<'
        };
        let ways: &[u8] = match (json, must_escape) {
            (true, false) => &[0, 1, 2, 5],
            (true, true) => &[1, 2, 5],
            (false, false) => &[0, 3, 4],
            (false, true) => &[3, 4],
        };
        encode_char(c, ways[usize::from(how) % ways.len()])
    }

    /// Any of the encodings a character may take in JSON or XML.
    fn encode_char(c: char, how: u8) -> String {
        let mut buf = [0u16; 2];
        let units = c.encode_utf16(&mut buf);
        match how % 6 {
            0 => c.to_string(),
            1 => units.iter().map(|u| format!("\\u{u:04x}")).collect(),
            2 => units.iter().map(|u| format!("\\u{u:04X}")).collect(),
            3 => format!("&#{};", u32::from(c)),
            4 => format!("&#x{:x};", u32::from(c)),
            _ => json_escape(&c.to_string(), JsonStyle::Plain),
        }
    }

    fn secret_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                proptest::char::range(' ', '~'),
                Just('"'),
                Just('\\'),
                Just('&'),
                Just('<'),
                Just('\n'),
                Just('é'),
                Just('😀'),
            ],
            MIN_SECRET_BYTES..24,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #![proptest_config(crate::base::testing::beside_source(ProptestConfig::with_cases(512)))]

        /// Whatever mix of encodings a secret's characters take (mixing JSON and XML
        /// escapes within one occurrence only as far as one decoding allows), and
        /// whatever surrounds it, the redacted bytes hold it in no reading.
        #[test]
        fn no_reading_of_the_result_holds_a_secret(
            secret in secret_text(),
            ways in proptest::collection::vec(0u8..6, 24),
            before in "[ -~]{0,12}",
            after in "[ -~]{0,12}",
            json_only in any::<bool>(),
        ) {
            let s = Secrets::new([secret.as_bytes().to_vec()]);
            prop_assume!(!s.is_empty());
            let encoded: String = secret
                .chars()
                .zip(ways.iter().cycle())
                // One occurrence is written in one language: JSON escapes or XML
                // references, each character raw (where that language allows) or escaped.
                .map(|(c, how)| encode_in(c, *how, json_only))
                .collect();
            let text = format!("{before}{encoded}{after}");
            let out = s.bytes(text.as_bytes());
            prop_assert!(!s.occur_in(&out), "{text:?} -> {:?}", String::from_utf8_lossy(&out));
            let raw = secret.as_bytes();
            prop_assert!(!out.windows(raw.len()).any(|w| w == raw));
        }

        /// Exactly the bytes of the occurrence are replaced, whole escapes included.
        #[test]
        fn exactly_the_occurrence_is_replaced(
            secret in secret_text(),
            ways in proptest::collection::vec(0u8..6, 24),
            before in "[a-z ]{0,12}",
            after in "[a-z ]{0,12}",
            json in any::<bool>(),
        ) {
            let s = Secrets::new([secret.as_bytes().to_vec()]);
            prop_assume!(!s.is_empty());
            let encoded: String = secret
                .chars()
                .zip(ways.iter().cycle())
                .map(|(c, how)| encode_in(c, *how, json))
                .collect();
            let text = format!("{before}{encoded}{after}");
            prop_assert_eq!(s.text(&text).into_owned(), format!("{before}[redacted]{after}"));
        }

        /// Text without any secret is left exactly as it is.
        #[test]
        fn text_without_a_secret_is_untouched(
            secret in secret_text(),
            text in "[ -~]{0,64}",
        ) {
            let s = Secrets::new([secret.as_bytes().to_vec()]);
            prop_assume!(!s.occur_in(text.as_bytes()));
            prop_assert_eq!(s.text(&text).into_owned(), text);
        }
    }
}
