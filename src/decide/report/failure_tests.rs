//! Tests: what each format attaches to a failed test ([`super::TestCase::failure`]), read
//! from the real fixtures; cargo test's tests named by their binary; go test's replays.

use super::{Declared, Format, TestOutcome, TestReport, cargo_suites, parse, parse_with};

const FIXTURES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/reports");

fn bytes(rel: &str) -> Vec<u8> {
    fs_err::read(format!("{FIXTURES_DIR}/{rel}")).expect("a fixture")
}

fn fixture(rel: &str) -> TestReport {
    parse(&bytes(rel), Declared::Auto).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Each failed test of the fixture with what the report attached to it.
fn failures(rel: &str) -> Vec<(String, Option<String>)> {
    fixture(rel)
        .tests
        .into_iter()
        .filter(|t| t.outcome == TestOutcome::Failed)
        .map(|t| (t.id, t.failure))
        .collect()
}

/// The message of the failed test `id` of the fixture.
fn message_of(rel: &str, id: &str) -> String {
    failures(rel)
        .into_iter()
        .find(|(t, _)| t == id)
        .unwrap_or_else(|| panic!("{rel}: no failed test {id}: {:#?}", failures(rel)))
        .1
        .unwrap_or_else(|| panic!("{rel}: {id} has no message"))
}

#[test]
fn every_format_keeps_the_failing_assertion_of_each_failed_test() {
    // (fixture, failed test, what its message must hold), each written by reading the
    // fixture: the assertion's own words, and the values compared.
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "jest/basic.json",
            "/REPO/generators/jest/tests/math.test.js > math > nested > fails on purpose",
            &[
                "expect(received).toBe(expected)",
                "Expected: 5\nReceived: 4",
                "at Object.toBe (/REPO/generators/jest/tests/math.test.js:14:25)",
            ],
        ),
        (
            "vitest/basic.json",
            "/REPO/generators/vitest/tests/math.test.js > math > nested > fails on purpose",
            &["AssertionError: expected 4 to be 5", "math.test.js:16:25"],
        ),
        (
            "mocha/basic.json",
            "/REPO/generators/mocha/test/math.spec.js > math nested fails on purpose",
            &[
                "Expected values to be strictly equal:\n\n4 !== 5",
                "at Context.<anonymous> (test/math.spec.js:16:14)",
            ],
        ),
        (
            "ctrf/jest-ctrf.json",
            "/REPO/generators/jest/tests/math.test.js > math nested fails on purpose",
            &["Expected: 5\nReceived: 4", "math.test.js:14:25"],
        ),
        (
            "ctrf/mocha-ctrf.json",
            "/REPO/generators/mocha/test/math.spec.js > math nested fails on purpose",
            &["AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n4 !== 5"],
        ),
        (
            "playwright/basic.json",
            "profile.spec.js > profile > fails on purpose",
            &[
                "Expected: \"Settings\"\nReceived: \"Profile\"",
                "> 51 |     await expect(page.locator('#title')).toHaveText('Settings', { timeout: 500 });",
            ],
        ),
        (
            "playwright/basic.json",
            "profile.spec.js > profile > times out",
            &["Test timeout of 1000ms exceeded."],
        ),
        (
            "junit/pytest.xml",
            "tests.test_math > test_fails_on_purpose",
            &[
                "E       assert 4 == 5",
                "tests/test_math.py:23: AssertionError",
            ],
        ),
        (
            "junit/pytest.xml",
            "tests.test_math > test_uses_broken_fixture",
            &["failed on setup with \"RuntimeError: fixture setup failed on purpose\""],
        ),
        (
            "junit/nextest.xml",
            "fixture-crate > tests::fails_on_purpose",
            &[
                "assertion `left == right` failed: two plus two\n  left: 4\n right: 5",
                "--- system-out\nrunning 1 test",
            ],
        ),
        (
            "junit/surefire.xml",
            "fixture.MathUtilTest > failsOnPurpose",
            &["java.lang.AssertionError: two plus two expected:<5> but was:<4>"],
        ),
        (
            "junit/gotestsum.xml",
            "example.com/proofgraphfixture/mathpkg > TestFailsOnPurpose",
            &["math_test.go:14: Add(2, 2) = 4, want 5"],
        ),
        (
            "tap/node-test.tap",
            "math > nested > fails on purpose",
            &[
                "error: |-\n  Expected values to be strictly equal:\n\n  4 !== 5",
                "expected: 5\nactual: 4",
            ],
        ),
        (
            "tap/node-tap-14.tap",
            "test/math.test.js > math > nested > fails on purpose > should be equal",
            &["diff: |\n  --- expected\n  +++ actual\n  @@ -1,1 +1,1 @@\n  -5\n  +4"],
        ),
        (
            "go-test-json/basic.jsonl",
            "example.com/proofgraphfixture/mathpkg > TestTable/wrong_on_purpose",
            &["math_test.go:34: Add(0, 0) = 0, want 1"],
        ),
        (
            "libtest-json/cargo-test.jsonl",
            "tests::fails_on_purpose",
            &[
                "panicked at src/lib.rs:24:9:\nassertion `left == right` failed: two plus two\n  left: 4\n right: 5",
            ],
        ),
        (
            "libtest-json/nextest.jsonl",
            "fixture-crate::fixture_crate$tests::fails_on_purpose",
            &["assertion `left == right` failed: two plus two\n  left: 4\n right: 5"],
        ),
    ];
    for (rel, id, holds) in cases {
        let message = message_of(rel, id);
        for part in *holds {
            assert!(
                message.contains(part),
                "{rel}: {id}: {part:?} is not in\n{message}"
            );
        }
        // Dependencies' and the runtime's frames, and terminal colours, are left out.
        for noise in ["node_modules", "node:internal", "\u{1b}["] {
            assert!(
                !message.contains(noise),
                "{rel}: {id}: {noise:?} in\n{message}"
            );
        }
    }
}

#[test]
fn go_test_keeps_a_failed_test_s_own_lines_and_nothing_of_a_passing_one() {
    let rel = "go-test-json/basic.jsonl";
    assert_eq!(
        message_of(
            rel,
            "example.com/proofgraphfixture/mathpkg > TestFailsOnPurpose"
        ),
        "math_test.go:12: about to fail\nmath_test.go:14: Add(2, 2) = 4, want 5"
    );
    // The parent of a failed subtest printed nothing of its own.
    let parent = failures(rel)
        .into_iter()
        .find(|(t, _)| t == "example.com/proofgraphfixture/mathpkg > TestTable");
    assert_eq!(parent.map(|(_, m)| m), Some(None));
    // Only failed tests carry a message, in every format.
    for rel in [
        "go-test-json/basic.jsonl",
        "tap/node-test.tap",
        "jest/basic.json",
    ] {
        for test in fixture(rel).tests {
            if test.outcome != TestOutcome::Failed {
                assert_eq!(test.failure, None, "{rel}: {}", test.id);
            }
        }
    }
}

#[test]
fn tap_comments_after_a_failed_point_are_its_diagnostics() {
    // Perl's Test::More, as `prove -v` shows it.
    let text = "TAP version 13\n1..2\nok 1 - adds\nnot ok 2 - subtracts\n#   Failed test 'subtracts'\n#   at t/math.t line 9.\n#          got: '4'\n#     expected: '5'\n# Looks like you failed 1 test of 2.\n";
    let report = parse(text.as_bytes(), Declared::Auto).expect("TAP");
    let failed = &report.tests[1];
    assert_eq!(failed.outcome, TestOutcome::Failed);
    assert_eq!(
        failed.failure.as_deref(),
        Some(
            "  Failed test 'subtracts'\n  at t/math.t line 9.\n         got: '4'\n    expected: '5'\nLooks like you failed 1 test of 2."
        )
    );
    assert_eq!(report.tests[0].failure, None);
}

#[test]
fn a_failure_message_is_bounded_however_much_the_test_printed() {
    let output: String = (0..10_000)
        .map(|i| format!(r#"{{"Action":"output","Package":"p","Test":"TestLoud","Output":"    loud_test.go:9: line {i}\n"}}"#) + "\n")
        .collect();
    let stream = format!(
        "{{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestLoud\"}}\n{output}{{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"TestLoud\",\"Output\":\"    loud_test.go:12: want 5\\n\"}}\n{{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestLoud\"}}\n{{\"Action\":\"fail\",\"Package\":\"p\"}}\n"
    );
    let report = parse(stream.as_bytes(), Declared::Auto).expect("go test");
    let message = report.tests[0].failure.clone().expect("a message");
    assert!(
        message.len() <= super::MAX_MESSAGE_BYTES + 64,
        "{}",
        message.len()
    );
    assert!(message.starts_with("loud_test.go:9: line 0\n"), "{message}");
    assert!(
        message.ends_with("loud_test.go:9: line 9999\nloud_test.go:12: want 5"),
        "{message}"
    );
    assert!(
        message.contains(" bytes left out; the report holds them]"),
        "{message}"
    );
}

#[test]
fn cargo_test_names_each_test_by_the_binary_cargo_announced() {
    // cargo 1.95's standard error and libtest's JSON of a crate whose library and two
    // integration tests each have a `test_eq` (`/tmp/rx/c`: `RUSTC_BOOTSTRAP=1 cargo test
    // --no-fail-fast -- -Z unstable-options --format json`).
    let stderr = "    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s\n     Running unittests src/lib.rs (target/debug/deps/c-d4fd4905425e6bfe)\nerror: test failed, to rerun pass `--lib`\n     Running tests/alpha.rs (target/debug/deps/alpha-d1698e2390887f1e)\n     Running tests/beta.rs (target/debug/deps/beta-93c11a74e1e7ea28)\nerror: test failed, to rerun pass `--test beta`\n   Doc-tests c\nerror: 2 targets failed:\n";
    let stream = concat!(
        "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 1 }\n",
        "{ \"type\": \"test\", \"event\": \"started\", \"name\": \"tests::test_eq\" }\n",
        "{ \"type\": \"test\", \"name\": \"tests::test_eq\", \"event\": \"failed\", \"stdout\": \"\\nthread 'tests::test_eq' (17816) panicked at src/lib.rs:5:49:\\nassertion `left == right` failed: two plus two\\n  left: 4\\n right: 5\\n\" }\n",
        "{ \"type\": \"suite\", \"event\": \"failed\", \"passed\": 0, \"failed\": 1, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0 }\n",
        "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 1 }\n",
        "{ \"type\": \"test\", \"event\": \"started\", \"name\": \"test_eq\" }\n",
        "{ \"type\": \"test\", \"name\": \"test_eq\", \"event\": \"ok\" }\n",
        "{ \"type\": \"suite\", \"event\": \"ok\", \"passed\": 1, \"failed\": 0, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0 }\n",
        "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 1 }\n",
        "{ \"type\": \"test\", \"event\": \"started\", \"name\": \"test_eq\" }\n",
        "{ \"type\": \"test\", \"name\": \"test_eq\", \"event\": \"failed\", \"stdout\": \"\\nthread 'test_eq' (17820) panicked at tests/beta.rs:2:16:\\nassertion `left == right` failed\\n  left: 2\\n right: 3\\n\" }\n",
        "{ \"type\": \"suite\", \"event\": \"failed\", \"passed\": 0, \"failed\": 1, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0 }\n",
        "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 0 }\n",
        "{ \"type\": \"suite\", \"event\": \"ok\", \"passed\": 0, \"failed\": 0, \"ignored\": 0, \"measured\": 0, \"filtered_out\": 0 }\n",
    );
    let suites = cargo_suites(stderr.as_bytes());
    assert_eq!(
        suites,
        [
            "src/lib.rs",
            "tests/alpha.rs",
            "tests/beta.rs",
            "doc-tests c"
        ]
    );
    let ids = |report: &TestReport| -> Vec<String> {
        report.tests.iter().map(|t| t.id.clone()).collect()
    };
    let named = parse_with(
        stream.as_bytes(),
        Declared::Exactly(Format::LibtestJson),
        &suites,
    )
    .expect("libtest");
    assert_eq!(
        ids(&named),
        [
            "src/lib.rs > tests::test_eq",
            "tests/alpha.rs > test_eq",
            "tests/beta.rs > test_eq"
        ]
    );
    assert!(
        named.tests[2]
            .failure
            .as_deref()
            .is_some_and(|m| m.contains("left: 2\n right: 3")),
        "{:?}",
        named.tests[2].failure
    );
    // When cargo's standard error went into the report too, the report names them itself.
    let merged = format!("{stderr}{stream}");
    let from_report = parse(merged.as_bytes(), Declared::Auto).expect("libtest");
    assert_eq!(ids(&from_report), ids(&named));
    // Without the announcements (or with announcements that do not match the suites), a
    // name several binaries share is named by its suite's number, never `[2]`.
    for suites in [&[][..], &suites[..2]] {
        let unnamed = parse_with(stream.as_bytes(), Declared::Auto, suites).expect("libtest");
        assert_eq!(
            ids(&unnamed),
            ["tests::test_eq", "suite 2 > test_eq", "suite 3 > test_eq"]
        );
    }
    // Two crates' `src/lib.rs` in a workspace: the binary tells them apart; `--verbose`
    // names the executable, and rustdoc's command line is not a binary.
    assert_eq!(
        cargo_suites(b"     Running unittests src/lib.rs (target/debug/deps/api-0a1b2c3d4e5f6a7b)\n     Running unittests src/lib.rs (target/debug/deps/web-0a1b2c3d4e5f6a7b)\n     Running `/w/target/debug/deps/cli-0a1b2c3d4e5f6a7b`\n   Doc-tests api\n     Running `/r/bin/rustdoc --edition=2024 --crate-name api --test src/lib.rs`\n"),
        ["src/lib.rs (api)", "src/lib.rs (web)", "cli", "doc-tests api"]
    );
    // Colours do not hide them.
    assert_eq!(
        cargo_suites(b"\x1b[1m\x1b[92m     Running\x1b[0m tests/alpha.rs (target/debug/deps/alpha-d1698e2390887f1e)\n"),
        ["tests/alpha.rs"]
    );
}

#[test]
fn go_test_s_replays_are_never_passes() {
    let report = fixture("go-test-json/cached.jsonl");
    assert_eq!(report.replays, ["example.com/proofgraphcached/cachedpkg"]);
    let outcomes: Vec<(&str, TestOutcome)> = report
        .tests
        .iter()
        .map(|t| (t.title.as_str(), t.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("TestAdd", TestOutcome::Replayed),
            ("TestSkipped", TestOutcome::Skipped),
            ("TestTable", TestOutcome::Replayed),
            ("TestTable/positives", TestOutcome::Replayed),
            ("TestTable/negatives", TestOutcome::Replayed),
        ]
    );
    assert_eq!(
        (
            report.counts.passed,
            report.counts.replayed,
            report.executed()
        ),
        (0, 4, 0)
    );
    // The same package run (`-count=1`): no replay.
    let ran = fixture("go-test-json/basic.jsonl");
    assert!(ran.replays.is_empty() && ran.counts.replayed == 0);
    // One package replayed beside one that ran: only the replayed one's tests.
    let mixed = concat!(
        "{\"Action\":\"run\",\"Package\":\"a\",\"Test\":\"TestA\"}\n",
        "{\"Action\":\"pass\",\"Package\":\"a\",\"Test\":\"TestA\"}\n",
        "{\"Action\":\"output\",\"Package\":\"a\",\"Output\":\"ok  \\ta\\t(cached)\\tcoverage: 80.0% of statements\\n\"}\n",
        "{\"Action\":\"pass\",\"Package\":\"a\"}\n",
        "{\"Action\":\"run\",\"Package\":\"b\",\"Test\":\"TestB\"}\n",
        "{\"Action\":\"output\",\"Package\":\"b\",\"Test\":\"TestB\",\"Output\":\"ok  \\tb\\t(cached)\\n\"}\n",
        "{\"Action\":\"pass\",\"Package\":\"b\",\"Test\":\"TestB\"}\n",
        "{\"Action\":\"output\",\"Package\":\"b\",\"Output\":\"ok  \\tb\\t0.003s\\n\"}\n",
        "{\"Action\":\"pass\",\"Package\":\"b\"}\n",
    );
    let mixed = parse(mixed.as_bytes(), Declared::Auto).expect("go test");
    assert_eq!(mixed.replays, ["a"]);
    assert_eq!(
        (mixed.counts.passed, mixed.counts.replayed),
        (1, 1),
        "a test printing a cached-looking line is not its package's result"
    );
}
