//! Throughput of the streaming log redactor ([`proofgraph_sandbox::Redactor`]): a
//! generated log of 512 MiB (test-runner-like lines, a secret every ~50 000 lines) pushed
//! in the 64 KiB reads the init makes, for several numbers of secrets. Prints GB/s, best
//! and median of five runs, and checks that no secret is left.
//!
//! Run: `cargo bench -p proofgraph-sandbox --bench redact` (figures in BENCHMARKS.md).

#![expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::time::{Duration, Instant};

use proofgraph_sandbox::Redactor;

/// How much log each run redacts.
const LOG_BYTES: usize = 512 << 20;

/// The size of one read of a job's pipe in the init.
const READ: usize = 64 << 10;

/// A token-like secret: 32 hex digits that differ from the first (so secrets share no
/// prefix, as real ones do not).
fn secret(i: usize) -> Vec<u8> {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut text = String::new();
    for _ in 0..2 {
        x ^= x >> 31;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        text.push_str(&format!("{x:016x}"));
    }
    text.into_bytes()
}

/// A secret in the forms the application hands the sandbox (raw, escaped, percent-encoded
/// in both cases, shell-quoted): about ten patterns per secret.
fn forms(value: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(value).into_owned();
    let with_quote = format!("{text}'\"/ &");
    vec![
        value.to_vec(),
        with_quote.replace('"', "\\\"").into_bytes(),
        with_quote.replace('&', "&amp;").into_bytes(),
        with_quote
            .replace('/', "%2F")
            .replace(' ', "%20")
            .into_bytes(),
        with_quote
            .replace('/', "%2f")
            .replace(' ', "%20")
            .into_bytes(),
        with_quote.replace(' ', "+").into_bytes(),
        with_quote.replace('\'', "'\\''").into_bytes(),
        with_quote.replace('\'', "'\"'\"'").into_bytes(),
        with_quote.replace(' ', "\\ ").into_bytes(),
        with_quote.replace('"', "&quot;").into_bytes(),
    ]
}

fn log(secrets: &[Vec<u8>]) -> Vec<u8> {
    let mut log = Vec::with_capacity(LOG_BYTES + 256);
    let mut line = 0usize;
    while log.len() < LOG_BYTES {
        line += 1;
        if line.is_multiple_of(50_000) && !secrets.is_empty() {
            log.extend_from_slice(b"  token=");
            log.extend_from_slice(&secrets[line / 50_000 % secrets.len()]);
            log.push(b'\n');
        } else {
            log.extend_from_slice(
                format!(
                    " \u{2713} src/module_{}/feature.test.ts > handles case {line} ({} ms)\n",
                    line % 97,
                    line % 13
                )
                .as_bytes(),
            );
        }
    }
    log
}

fn run(patterns: &[Vec<u8>], log: &[u8]) -> (Duration, usize) {
    let started = Instant::now();
    let mut redactor = Redactor::new(patterns);
    let mut out = Vec::with_capacity(2 * READ);
    let mut written = 0;
    for chunk in log.chunks(READ) {
        redactor.push(chunk, &mut out);
        written += out.len();
        out.clear();
    }
    redactor.finish(&mut out);
    written += out.len();
    (started.elapsed(), written)
}

fn main() {
    for count in [0usize, 1, 10, 100] {
        let values: Vec<Vec<u8>> = (0..count).map(secret).collect();
        let patterns: Vec<Vec<u8>> = values.iter().flat_map(|v| forms(v)).collect();
        let log = log(&values);
        let mut times = Vec::new();
        for _ in 0..5 {
            let (took, written) = run(&patterns, &log);
            assert!(written > 0);
            times.push(took);
        }
        // Once more, keeping the output, to check it.
        let mut redactor = Redactor::new(&patterns);
        let mut out = Vec::with_capacity(log.len());
        for chunk in log.chunks(READ) {
            redactor.push(chunk, &mut out);
        }
        redactor.finish(&mut out);
        for value in &values {
            assert!(
                !out.windows(value.len()).any(|w| w == value.as_slice()),
                "a secret survived"
            );
        }
        times.sort();
        let gbps = |d: Duration| log.len() as f64 / d.as_secs_f64() / 1e9;
        println!(
            "{count:>3} secrets ({:>4} patterns): {:.2} GB/s median, {:.2} GB/s best ({} MiB, {}-byte reads)",
            patterns.len(),
            gbps(times[times.len() / 2]),
            gbps(times[0]),
            log.len() >> 20,
            READ,
        );
    }
}
