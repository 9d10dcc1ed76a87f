//! Test counts read from a running provider's output, for its heartbeat: the lines the
//! common runners print per test as they go. They are a sign of progress, never evidence —
//! the verdict and the counts a receipt holds come from the report when the run ends.
//!
//! Recognised, one test per line (nested subtests, which these runners indent, are not
//! counted, so a parent and its children count once):
//!
//! | runner | passed | failed | skipped |
//! |---|---|---|---|
//! | TAP (`node --test`, `tap`, `prove`) | `ok 3 - name` | `not ok 3 - name` | `ok 3 - name # SKIP` (`# TODO`: todo) |
//! | libtest (`cargo test`) | `test a::b ... ok` | `test a::b ... FAILED` | `test a::b ... ignored` |
//! | `go test -v` | `--- PASS: TestX` | `--- FAIL: TestX` | `--- SKIP: TestX` |
//! | `pytest -v` | `t.py::test_x PASSED` | `FAILED` / `ERROR` | `SKIPPED` / `XFAIL` |
//! | `go test -json` | `"Action":"pass"` with a `"Test"` | `"Action":"fail"` | `"Action":"skip"` |
//! | libtest JSON (nextest) | `"type":"test","event":"ok"` | `"event":"failed"` | `"event":"ignored"` |

use crate::proof::receipt::Counts;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Failed,
    Skipped,
    Todo,
}

/// Counts `line` into `counts` when it reports the end of one test.
pub(super) fn count(counts: &mut Counts, line: &str) {
    let Some(outcome) = outcome(line) else {
        return;
    };
    counts.total += 1;
    match outcome {
        Outcome::Passed => counts.passed += 1,
        Outcome::Failed => counts.failed += 1,
        Outcome::Skipped => counts.skipped += 1,
        Outcome::Todo => counts.todo += 1,
    }
}

fn outcome(line: &str) -> Option<Outcome> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    tap(line)
        .or_else(|| libtest(line))
        .or_else(|| go_verbose(line))
        .or_else(|| pytest(line))
        .or_else(|| json_line(line))
}

/// `ok 3 - name`, `not ok 3 - name`, unindented (subtests are indented).
fn tap(line: &str) -> Option<Outcome> {
    let (failed, rest) = if let Some(rest) = line.strip_prefix("not ok") {
        (true, rest)
    } else {
        (false, line.strip_prefix("ok")?)
    };
    // `ok` alone, or followed by a space and (usually) a number: not `okay`.
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let directive = rest
        .rsplit_once('#')
        .map(|(_, d)| d.trim_start().to_ascii_uppercase())
        .unwrap_or_default();
    Some(if directive.starts_with("SKIP") {
        Outcome::Skipped
    } else if directive.starts_with("TODO") {
        Outcome::Todo
    } else if failed {
        Outcome::Failed
    } else {
        Outcome::Passed
    })
}

/// `test path::name ... ok`.
fn libtest(line: &str) -> Option<Outcome> {
    let rest = line.strip_prefix("test ")?;
    let (_, result) = rest.rsplit_once(" ... ")?;
    match result.trim_end() {
        "ok" => Some(Outcome::Passed),
        "FAILED" => Some(Outcome::Failed),
        r if r.starts_with("ignored") => Some(Outcome::Skipped),
        _ => None,
    }
}

/// `--- PASS: TestX (0.00s)`, unindented (subtests are indented).
fn go_verbose(line: &str) -> Option<Outcome> {
    let rest = line.strip_prefix("--- ")?;
    if rest.starts_with("PASS: ") {
        Some(Outcome::Passed)
    } else if rest.starts_with("FAIL: ") {
        Some(Outcome::Failed)
    } else if rest.starts_with("SKIP: ") {
        Some(Outcome::Skipped)
    } else {
        None
    }
}

/// `tests/t.py::test_x PASSED   [ 50%]`.
fn pytest(line: &str) -> Option<Outcome> {
    let (id, rest) = line.split_once(' ')?;
    if !id.contains("::") {
        return None;
    }
    match rest.split_whitespace().next()? {
        "PASSED" | "XPASS" => Some(Outcome::Passed),
        "FAILED" | "ERROR" => Some(Outcome::Failed),
        "SKIPPED" | "XFAIL" => Some(Outcome::Skipped),
        _ => None,
    }
}

/// A `go test -json` event or a libtest JSON line that ends a test.
fn json_line(line: &str) -> Option<Outcome> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') || !trimmed.ends_with('}') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(trimmed).ok()?;
    if let Some(action) = value.get("Action").and_then(|a| a.as_str()) {
        value.get("Test")?;
        return match action {
            "pass" => Some(Outcome::Passed),
            "fail" => Some(Outcome::Failed),
            "skip" => Some(Outcome::Skipped),
            _ => None,
        };
    }
    if value.get("type").and_then(|t| t.as_str()) == Some("test") {
        return match value.get("event").and_then(|e| e.as_str())? {
            "ok" => Some(Outcome::Passed),
            "failed" | "timeout" => Some(Outcome::Failed),
            "ignored" => Some(Outcome::Skipped),
            _ => None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(output: &str) -> Counts {
        let mut counts = Counts::default();
        for line in output.lines() {
            count(&mut counts, line);
        }
        counts
    }

    fn counts(passed: u64, failed: u64, skipped: u64) -> Counts {
        Counts {
            total: passed + failed + skipped,
            passed,
            failed,
            skipped,
            ..Counts::default()
        }
    }

    #[test]
    fn each_runner_s_per_test_lines_are_counted_once() {
        // node --test (TAP, a parent with two subtests)
        let node = "TAP version 13\n# Subtest: math\n    # Subtest: adds\n    ok 1 - adds\n    not ok 2 - divides\n    1..2\nnot ok 1 - math\nok 2 - strings # SKIP not yet\nok 3 - later # TODO\n1..3\n# pass 0\n";
        assert_eq!(
            tally(node),
            Counts {
                todo: 1,
                total: 3,
                ..counts(0, 1, 1)
            }
        );
        let cargo = "running 4 tests\ntest a::adds ... ok\ntest a::divides ... FAILED\ntest b::slow ... ignored, needs a network\ntest b::strings ... ok\n\ntest result: FAILED. 2 passed; 1 failed; 1 ignored\n";
        assert_eq!(tally(cargo), counts(2, 1, 1));
        let go = "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n=== RUN   TestTable\n    --- PASS: TestTable/one (0.00s)\n    --- FAIL: TestTable/two (0.00s)\n--- FAIL: TestTable (0.00s)\n--- SKIP: TestNet (0.00s)\nFAIL\n";
        assert_eq!(tally(go), counts(1, 1, 1));
        let pytest = "tests/test_a.py::test_one PASSED                  [ 25%]\ntests/test_a.py::test_two FAILED                  [ 50%]\ntests/test_a.py::test_three SKIPPED (no db)       [ 75%]\ntests/test_a.py::test_four ERROR                  [100%]\nFAILED tests/test_a.py::test_two - assert 1 == 2\n";
        assert_eq!(tally(pytest), counts(1, 2, 1));
        let go_json = "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"TestA\",\"Elapsed\":0}\n{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestB\"}\n{\"Action\":\"pass\",\"Package\":\"p\",\"Elapsed\":0.1}\n";
        assert_eq!(tally(go_json), counts(1, 1, 0));
        let nextest = "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 2 }\n{ \"type\": \"test\", \"event\": \"ok\", \"name\": \"a\" }\n{ \"type\": \"test\", \"event\": \"ignored\", \"name\": \"b\" }\n";
        assert_eq!(tally(nextest), counts(1, 0, 1));
    }

    #[test]
    fn lines_that_only_look_like_results_are_not_counted() {
        let noise = "okay, starting\nok\nbuilding... ok\ntest result: ok. 3 passed\ntesting ... ok\n--- PASSED everything\nFAILED tests/t.py::x - boom\nPASSED\n{\"Action\":\"pass\",\"Package\":\"p\"}\n{not json}\n";
        // `ok` alone is a TAP result line; nothing else here is.
        assert_eq!(tally(noise), counts(1, 0, 0));
        assert_eq!(tally(""), Counts::default());
    }
}
