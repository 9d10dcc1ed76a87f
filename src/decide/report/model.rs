//! The format-independent model every parser produces: [`TestReport`], [`TestCase`],
//! [`TestOutcome`], [`TestCounts`], and the [`Format`] / [`Declared`] selectors.

use serde::Serialize;

use super::count;
use super::error::ReportError;
pub use super::format::Format;

/// What the configuration declared about a report's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// Parse as exactly this format; a document of another shape is an error.
    Exactly(Format),
    /// `"json"`: sniff among the JSON formats only.
    AnyJson,
    /// `"auto"` or absent: sniff among all formats.
    Auto,
}

impl Declared {
    /// Reads a configuration value: `None` or `"auto"` → [`Declared::Auto`], `"json"` →
    /// [`Declared::AnyJson`], a format name → [`Declared::Exactly`]; anything else is `None`.
    pub fn from_config(value: Option<&str>) -> Option<Declared> {
        match value {
            None | Some("auto") => Some(Declared::Auto),
            Some("json") => Some(Declared::AnyJson),
            Some(name) => Format::from_name(name).map(Declared::Exactly),
        }
    }
}

/// The final outcome of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    /// Ran and met its expectation (for flaky tests: passed on a retry).
    Passed,
    /// Ran and failed (including errors and time-outs).
    Failed,
    /// Skipped / ignored / pending.
    Skipped,
    /// Marked as not yet implemented (TODO).
    Todo,
    /// Started but never finished (run interrupted, stream cut off).
    Interrupted,
    /// Known to the report but never run.
    DidNotRun,
    /// Not run: the runner replayed an earlier run's result from its result cache (go
    /// test's `(cached)`). A replay is not an execution.
    Replayed,
}

/// A `{type, description}` annotation (Playwright).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Annotation {
    /// Annotation type, e.g. `claim`, `critical-case`, `skip`.
    pub kind: String,
    /// Free-form description, if any.
    pub description: Option<String>,
}

/// A file or inline body attached to a test result (Playwright).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// Attachment name.
    pub name: String,
    /// MIME type.
    pub content_type: String,
    /// Path on disk, for attachments stored as files.
    pub path: Option<String>,
    /// Decoded byte length of an inline (base64) body, for attachments stored inline.
    pub body_len: Option<u64>,
    /// The decoded inline body, when it is valid base64 (kept as evidence).
    #[serde(skip)]
    pub body: Option<Vec<u8>>,
}

impl crate::base::redact::Redact for Attachment {
    fn redact(&mut self, secrets: &crate::base::redact::Secrets) {
        let Attachment {
            name,
            content_type,
            path,
            body_len: _,
            body,
        } = self;
        name.redact(secrets);
        content_type.redact(secrets);
        path.redact(secrets);
        body.redact(secrets);
    }
}

/// One test case as the report describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestCase {
    /// Stable identity: file/suite and title path joined with `" > "`; duplicates within a
    /// report get a `" [2]"`, `" [3]"`, ... suffix in report order.
    pub id: String,
    /// The test's own title.
    pub title: String,
    /// Final outcome (the last attempt's, for retried tests).
    pub outcome: TestOutcome,
    /// Duration of the last attempt in milliseconds, when the report gives one.
    pub duration_ms: Option<u64>,
    /// Annotations (Playwright); empty for other formats.
    pub annotations: Vec<Annotation>,
    /// Attachments (Playwright); empty for other formats.
    pub attachments: Vec<Attachment>,
    /// Failed at least once, then passed on a retry.
    pub flaky: bool,
    /// Number of extra attempts the report records (0 when it ran once).
    pub retries: u32,
    /// For a failed test: the failure message and the output the runner attached to it
    /// (JUnit `<failure>` and `system-out`, go test's output lines, libtest's `stdout`, TAP
    /// diagnostics, `failureMessages`, ...), bounded ([`super::failure::MAX_MESSAGE_BYTES`]);
    /// `None` when the report attaches nothing.
    pub failure: Option<String>,
}

impl TestCase {
    /// A test case with no duration, annotations, attachments or retries.
    pub fn new(id: String, title: String, outcome: TestOutcome) -> TestCase {
        TestCase {
            id,
            title,
            outcome,
            duration_ms: None,
            annotations: Vec::new(),
            attachments: Vec::new(),
            flaky: false,
            retries: 0,
            failure: None,
        }
    }
}

/// Per-outcome totals. Every value is at most [`super::MAX_COUNT`] (2^53-1), and `total` is
/// the sum of the seven outcomes: a parser builds them only with [`TestCounts::tally`] (from the
/// tests it lists) or `TestCounts::declared` (from a report that lists none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TestCounts {
    /// All tests.
    pub total: u64,
    /// [`TestOutcome::Passed`] (flaky tests included).
    pub passed: u64,
    /// [`TestOutcome::Failed`].
    pub failed: u64,
    /// [`TestOutcome::Skipped`].
    pub skipped: u64,
    /// [`TestOutcome::Todo`].
    pub todo: u64,
    /// Passed tests that were flaky (a subset of `passed`).
    pub flaky: u64,
    /// [`TestOutcome::Interrupted`].
    pub interrupted: u64,
    /// [`TestOutcome::DidNotRun`].
    pub did_not_run: u64,
    /// [`TestOutcome::Replayed`]: results a runner replayed from its cache, never executed.
    pub replayed: u64,
}

impl TestCounts {
    /// Tallies parsed test cases.
    pub fn tally(tests: &[TestCase]) -> TestCounts {
        let mut counts = TestCounts {
            total: tests.len() as u64,
            ..TestCounts::default()
        };
        for test in tests {
            match test.outcome {
                TestOutcome::Passed => counts.passed += 1,
                TestOutcome::Failed => counts.failed += 1,
                TestOutcome::Skipped => counts.skipped += 1,
                TestOutcome::Todo => counts.todo += 1,
                TestOutcome::Interrupted => counts.interrupted += 1,
                TestOutcome::DidNotRun => counts.did_not_run += 1,
                TestOutcome::Replayed => counts.replayed += 1,
            }
            if test.flaky && test.outcome == TestOutcome::Passed {
                counts.flaky += 1;
            }
        }
        counts
    }

    /// Tests that executed: passed (flaky ones once) or failed. Skipped, todo, interrupted,
    /// never-run and replayed tests did not execute; a suite in which none executed proves
    /// nothing.
    pub fn executed(&self) -> u64 {
        self.passed + self.failed
    }

    /// TestCounts from a report that lists no tests, only totals: `total` (named `declared_by`
    /// in errors) and what the report says of each outcome. The outcomes given may not add
    /// up to more than `total`. When `passed` is absent, the tests no other count accounts
    /// for passed (so `{"totalTests": 12}` is 12 passed tests, as the existing
    /// implementation reads it); when `passed` is given, the outcomes must add up to `total`
    /// exactly, or nothing says what the rest did. A breakdown that does not back its total
    /// is [`ReportError::Unbacked`].
    pub(crate) fn declared(
        format: Format,
        declared_by: &str,
        total: u64,
        outcomes: DeclaredOutcomes,
    ) -> Result<TestCounts, ReportError> {
        let DeclaredOutcomes {
            passed,
            failed,
            skipped,
            todo,
            did_not_run,
            flaky,
        } = outcomes;
        let total = count::bounded(total, format, || declared_by.to_owned())?;
        let mut accounted = 0u64;
        for n in [passed, failed, skipped, todo, did_not_run]
            .into_iter()
            .flatten()
        {
            accounted = count::add(accounted, n, format, || {
                format!("the outcome counts under {declared_by}")
            })?;
        }
        let unbacked = |backed: u64| ReportError::Unbacked {
            format: format.as_str(),
            declared_by: declared_by.to_owned(),
            declared: total,
            backed_by: "its outcome counts add up to",
            backed,
        };
        let passed = match passed {
            Some(passed) if accounted == total => passed,
            Some(_) => return Err(unbacked(accounted)),
            None if accounted <= total => total - accounted,
            None => return Err(unbacked(accounted)),
        };
        let flaky = flaky.unwrap_or(0);
        if flaky > passed {
            return Err(ReportError::ConflictingCounts {
                format: format.as_str(),
                first: "the flaky count".to_owned(),
                first_value: flaky,
                second: "the passed count".to_owned(),
                second_value: passed,
            });
        }
        Ok(TestCounts {
            total,
            passed,
            failed: failed.unwrap_or(0),
            skipped: skipped.unwrap_or(0),
            todo: todo.unwrap_or(0),
            flaky,
            interrupted: 0,
            did_not_run: did_not_run.unwrap_or(0),
            replayed: 0,
        })
    }
}

/// What a report without a test list declares of each outcome ([`TestCounts::declared`]); each
/// `None` when the report does not say.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DeclaredOutcomes {
    /// Passed tests (flaky ones included).
    pub passed: Option<u64>,
    /// Failed tests.
    pub failed: Option<u64>,
    /// Skipped tests.
    pub skipped: Option<u64>,
    /// Todo tests.
    pub todo: Option<u64>,
    /// Tests that did not run for another reason (CTRF `other`).
    pub did_not_run: Option<u64>,
    /// Passed tests that were flaky (a subset of `passed`).
    pub flaky: Option<u64>,
}

/// A parsed report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestReport {
    /// The format the report was parsed as.
    pub format: Format,
    /// Per-outcome totals: tallied from `tests` when the report has a test list (its
    /// declared totals, such as `numTotalTests`, JUnit `tests` or a TAP plan, were checked
    /// to equal the list), else from its declared totals (`TestCounts::declared`). A report
    /// with neither is not a report.
    pub counts: TestCounts,
    /// The tests the report lists (may be empty for summary-only reports).
    pub tests: Vec<TestCase>,
    /// Failures not attributable to one test: suites that failed to load, build failures,
    /// hook failures, `Bail out!`, counts that disagree with the listed tests, cut-off streams.
    pub runner_errors: Vec<String>,
    /// What the runner says it replayed from its result cache instead of running, as the
    /// report names it (go test: each package whose result line says `(cached)`); every
    /// test in it is [`TestOutcome::Replayed`].
    pub replays: Vec<String>,
}

impl TestReport {
    /// A report of `format` with nothing in it yet.
    pub(crate) fn empty(format: Format) -> TestReport {
        TestReport {
            format,
            counts: TestCounts::default(),
            tests: Vec::new(),
            runner_errors: Vec::new(),
            replays: Vec::new(),
        }
    }

    /// Tests that executed (passed or failed; see [`TestCounts::executed`]): what discovery
    /// counts against its `minimum`.
    pub fn executed(&self) -> u64 {
        self.counts.executed()
    }

    /// Records a runner error for every test that started and never finished
    /// (a cut-off event stream).
    pub(crate) fn flag_unfinished(&mut self) {
        let unfinished: Vec<String> = self
            .tests
            .iter()
            .filter(|t| t.outcome == TestOutcome::Interrupted)
            .map(|t| format!("test {} started but never finished", t.id))
            .collect();
        self.runner_errors.extend(unfinished);
    }
}
