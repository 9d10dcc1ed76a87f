//! The failing tests of a run as the commands show them (`prove` after `failing:`, `log`
//! after the log): each test's name, then what its runner attached, line by line; and the
//! end of a failed provider's log, which `prove` shows first.

use std::fmt::Write as _;

use crate::proof::receipt::Failures;

/// The failing tests as `prove` and `log` show them: each test's name, then each line of
/// what its runner attached (cut to 240 characters, as the log's lines are), under `| `.
pub fn show(out: &mut String, failures: &Failures) {
    for failure in &failures.tests {
        let _ = writeln!(out, "  {}", failure.test);
        for line in failure.message.as_deref().unwrap_or_default().lines() {
            let _ = writeln!(out, "    | {}", cut_line(line));
        }
    }
    if failures.left_out > 0 {
        let tests = if failures.left_out == 1 {
            "test"
        } else {
            "tests"
        };
        let _ = writeln!(
            out,
            "  and {} more failing {tests} (their messages are in the report)",
            failures.left_out
        );
    }
}

/// A line cut to 240 characters (a minified bundle's one line must not fill the terminal).
pub fn cut_line(line: &str) -> String {
    let line = line.trim_end();
    match line.char_indices().nth(240) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// How many lines of a provider's log `prove` shows when it did not pass.
pub const LOG_TAIL_LINES: usize = 15;

/// The last `n` lines of a log that hold anything, each cut to 240 characters, as text.
pub fn log_tail(log: &[u8], n: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(log);
    let mut lines: Vec<String> = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(cut_line)
        .collect();
    lines.reverse();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::receipt::Failure;

    #[test]
    fn a_log_tail_is_its_last_lines_that_hold_anything_each_cut() {
        let log = format!("one\n\ntwo  \n   \nthree\n{}\n\n", "y".repeat(250));
        assert_eq!(
            log_tail(log.as_bytes(), 3),
            [
                "two".to_owned(),
                "three".to_owned(),
                format!("{}…", "y".repeat(240))
            ]
        );
        assert_eq!(log_tail(b"only\n", 15), ["only"]);
        assert!(log_tail(b"\n \n", 15).is_empty());
        assert_eq!(log_tail(b"a\xffb", 1), ["a\u{fffd}b"]);
    }

    #[test]
    fn each_test_then_its_lines_then_how_many_were_left_out() {
        let failures = Failures {
            tests: vec![
                Failure {
                    test: "pkg > TestAdd".into(),
                    message: Some(format!("add_test.go:9: got 4\n{}", "x".repeat(300))),
                },
                Failure {
                    test: "pkg > TestTable".into(),
                    message: None,
                },
            ],
            left_out: 2,
        };
        let mut out = String::new();
        show(&mut out, &failures);
        assert_eq!(
            out,
            format!(
                "  pkg > TestAdd\n    | add_test.go:9: got 4\n    | {}…\n  pkg > TestTable\n  and 2 more failing tests (their messages are in the report)\n",
                "x".repeat(240)
            )
        );
    }
}
