//! The report formats proofgraph reads, by name.

use serde::Serialize;

/// A structured test-report format this crate can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum Format {
    /// `jest --json` output.
    Jest,
    /// `vitest --reporter=json` output (Jest-compatible shape).
    Vitest,
    /// Playwright's JSON reporter.
    Playwright,
    /// JUnit XML (pytest, cargo-nextest, Maven Surefire, gotestsum, ...).
    Junit,
    /// Test Anything Protocol, versions 13 and 14.
    Tap,
    /// `go test -json` event stream.
    GoTestJson,
    /// libtest's JSON event stream (`cargo test -- --format json`, nextest `libtest-json`).
    LibtestJson,
    /// Common Test TestReport Format JSON.
    Ctrf,
    /// Mocha's `json` reporter.
    Mocha,
    /// A JSON object that only gives totals (`{"totalTests": 12}`), as a custom script
    /// writes it.
    Summary,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 10] = [
        Format::Playwright,
        Format::Ctrf,
        Format::Mocha,
        Format::Vitest,
        Format::Jest,
        Format::Summary,
        Format::GoTestJson,
        Format::LibtestJson,
        Format::Junit,
        Format::Tap,
    ];

    /// The stable, lowercase name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jest => "jest",
            Format::Vitest => "vitest",
            Format::Playwright => "playwright",
            Format::Junit => "junit",
            Format::Tap => "tap",
            Format::GoTestJson => "go-test-json",
            Format::LibtestJson => "libtest-json",
            Format::Ctrf => "ctrf",
            Format::Mocha => "mocha",
            Format::Summary => "summary",
        }
    }

    /// The format named `name` (exactly as [`Format::as_str`] spells it).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// Whether documents of this format are JSON (a single document or JSON lines).
    pub fn is_json(self) -> bool {
        !matches!(self, Format::Junit | Format::Tap)
    }
}

impl From<Format> for &'static str {
    fn from(format: Format) -> Self {
        format.as_str()
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
