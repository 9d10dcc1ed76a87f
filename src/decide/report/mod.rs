//! Parsers for structured test reports: the evidence proofgraph reads to decide whether a
//! change's claims hold.
//!
//! [`parse`] turns a report's bytes into a format-independent [`TestReport`]; [`sniff`] only
//! detects the format. Supported: Jest, Vitest, Playwright and Mocha JSON, CTRF, JUnit XML
//! (pytest, cargo-nextest, Maven Surefire, gotestsum / go-junit-report), TAP 13/14,
//! `go test -json`, and libtest JSON (cargo test, nextest).
//!
//! Honesty guarantees (each has tests in `tests.rs`; the counting rules, for every format,
//! in the table of `strict_tests.rs`):
//! - **Counting is strict and total.** Every count goes through the `count` module: a non-negative
//!   integer of the format's type (a JSON integer; XML attribute or TAP plan digits) no
//!   larger than [`MAX_COUNT`] (2^53-1), or absent. A present count that is anything else —
//!   `"3"`, `3.0`, `-3`, `null`, `[3]`, `9007199254740992` — makes the report an `Err`, never
//!   a zero and never a key to skip; so no count a report yields can fail to encode in a
//!   receipt's canonical JSON. Numbers in output text are never counts.
//! - **No repeated keys.** Every JSON document and JSON line is read by the `json` module, which
//!   refuses an object naming a key twice (`{"failed": 3, "failed": 0}`); XML refuses a
//!   repeated attribute and TAP a second plan in one block ([`ReportError::DuplicateKey`]).
//! - **Declared totals are backed.** A total the report declares (`numTotalTests`,
//!   `stats.tests`, `results.summary.tests`, Playwright `stats`, JUnit `tests`, libtest
//!   `test_count`, a TAP plan) must equal the tests it lists — also when it lists none — and
//!   a report without a list must have outcome counts that add up to its total
//!   (`TestCounts::declared`); otherwise [`ReportError::Unbacked`].
//! - **One count model.** Every report has [`TestCounts`], tallied from its tests or built from
//!   its declared totals; [`TestReport::executed`] (passed + failed, a flaky test once) is what
//!   discovery counts, and a report in which nothing executed is for the judge never a pass.
//! - An empty, truncated, binary, oversized or unrecognised input is an `Err`: a missing or
//!   unreadable report is never a pass. No input makes the parsers panic.
//! - Failures that belong to no single test (suites that fail to load, pytest modules that
//!   fail to import, build failures, hook failures, `Bail out!`, declared failure counts
//!   above the listed failures, streams that end early) are reported in
//!   [`TestReport::runner_errors`].

mod count;
mod critical;
mod ctrf;
mod error;
mod failure;
mod format;
mod go_test;
mod jest;
mod json;
mod junit;
mod libtest;
mod mocha;
mod model;
mod parse;
mod playwright;
mod sniff;
mod summary;
mod tap;
mod util;

#[cfg(test)]
mod failure_tests;
#[cfg(test)]
mod strict_tests;
#[cfg(test)]
mod tests;

pub use count::MAX_COUNT;
pub use critical::{
    Finding as CriticalFinding, Row as CriticalRow, annotated_rows, check as check_critical,
    explicit_rows, test_rows,
};
pub use error::ReportError;
pub use failure::{HEAD_BYTES, MAX_MESSAGE_BYTES, TAIL_BYTES};
pub use libtest::cargo_suites;
pub use model::{
    Annotation, Attachment, Declared, Format, TestCase, TestCounts, TestOutcome, TestReport,
};
pub use parse::{MAX_REPORT_BYTES, parse, parse_with, sniff};
pub use playwright::redact_inline_bodies;
