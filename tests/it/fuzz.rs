//! The bounded fuzz smoke run: every fuzz target (`proofgraph::fuzz`) on its seeds and on
//! a few hundred mutations of them, under `cargo test`. The mutator is structure-aware in
//! the ways that matter here: it splices in the target's dictionary tokens (keys, tags,
//! numbers at the edges of 2^53 and 2^64), crosses seeds over, and copies chunks of an
//! input into itself (a repeated key, a nested list). proptest drives it, so a failure
//! shrinks to the fewest edits and its message carries the input in hex, ready to be kept
//! under `fixtures/fuzz/<target>/`. The long coverage-guided run is `scripts/fuzz.sh`
//! (docs/fuzzing.md).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use proofgraph_fuzz_targets::{Target, seeds};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::support::{self, repo_root};

/// Mutated inputs per target and test run, unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 512;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// Each target's seeds, read once: the repository's alone (its compatibility fixtures
/// included, never the shared corpus), so whatever the smoke run finds reproduces from a
/// clone.
fn seeds_of(target: Target) -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<HashMap<&'static str, Vec<Vec<u8>>>> = OnceLock::new();
    let all = SEEDS.get_or_init(|| {
        Target::ALL
            .into_iter()
            .map(|t| {
                let seeds = seeds::seeds(t, &repo_root(), None).expect("read the seeds");
                (t.name(), seeds)
            })
            .collect()
    });
    &all[target.name()]
}

/// One edit of an input. Positions are fractions of the input's length (`u16::MAX` is the
/// end), so an edit means the same thing for a seed of any size and shrinks sensibly.
#[derive(Debug, Clone)]
enum Edit {
    Flip {
        at: u16,
        bit: u8,
    },
    Set {
        at: u16,
        byte: u8,
    },
    Delete {
        at: u16,
        len: u8,
    },
    Insert {
        at: u16,
        bytes: Vec<u8>,
    },
    Token {
        at: u16,
        token: u16,
        overwrite: bool,
    },
    Copy {
        from: u16,
        len: u16,
        to: u16,
    },
    Splice {
        at: u16,
        seed: u16,
        from: u16,
        len: u16,
    },
    Truncate {
        at: u16,
    },
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = any::<u16>();
    prop_oneof![
        2 => (at, 0u8..8).prop_map(|(at, bit)| Edit::Flip { at, bit }),
        2 => (at, prop_oneof![any::<u8>(), Just(0u8), Just(b'"'), Just(b'\n'), Just(0xff)])
            .prop_map(|(at, byte)| Edit::Set { at, byte }),
        2 => (at, 1u8..32).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => (at, proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
        5 => (at, any::<u16>(), any::<bool>())
            .prop_map(|(at, token, overwrite)| Edit::Token { at, token, overwrite }),
        2 => (at, 1u16..512, any::<u16>()).prop_map(|(from, len, to)| Edit::Copy { from, len, to }),
        2 => (at, any::<u16>(), any::<u16>(), 1u16..2048)
            .prop_map(|(at, seed, from, len)| Edit::Splice { at, seed, from, len }),
        1 => at.prop_map(|at| Edit::Truncate { at }),
    ]
}

/// Where a fraction `at` of `len` falls.
fn place(at: u16, len: usize) -> usize {
    (usize::from(at) * (len + 1)) >> 16
}

fn apply(target: Target, mut data: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    let dictionary = target.dictionary();
    let seeds = seeds_of(target);
    for edit in edits {
        let len = data.len();
        match edit {
            Edit::Flip { at, bit } if len > 0 => data[place(*at, len - 1)] ^= 1 << bit,
            Edit::Set { at, byte } if len > 0 => data[place(*at, len - 1)] = *byte,
            Edit::Delete { at, len: n } => {
                let start = place(*at, len);
                let end = (start + usize::from(*n)).min(len);
                data.drain(start..end);
            }
            Edit::Insert { at, bytes } => {
                let at = place(*at, len);
                data.splice(at..at, bytes.iter().copied());
            }
            Edit::Token {
                at,
                token,
                overwrite,
            } => {
                let token = dictionary[usize::from(*token) % dictionary.len()].as_bytes();
                let at = place(*at, len);
                let end = if *overwrite {
                    (at + token.len()).min(len)
                } else {
                    at
                };
                data.splice(at..end, token.iter().copied());
            }
            Edit::Copy { from, len: n, to } => {
                let start = place(*from, len);
                let end = (start + usize::from(*n)).min(len);
                let chunk = data[start..end].to_vec();
                let to = place(*to, len);
                data.splice(to..to, chunk);
            }
            Edit::Splice {
                at,
                seed,
                from,
                len: n,
            } => {
                let other = &seeds[usize::from(*seed) % seeds.len()];
                let start = place(*from, other.len());
                let end = (start + usize::from(*n)).min(other.len());
                let at = place(*at, len);
                data.splice(at..at, other[start..end].iter().copied());
            }
            Edit::Truncate { at } => data.truncate(place(*at, len)),
            Edit::Flip { .. } | Edit::Set { .. } => {}
        }
    }
    data
}

/// Runs `target` on `data`, turning a panic into a failure that shows the input.
fn check(target: Target, data: &[u8]) -> Result<(), TestCaseError> {
    catch_unwind(AssertUnwindSafe(|| target.run(data))).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        TestCaseError::fail(format!(
            "fuzz target `{}` failed: {message}\ninput ({} bytes, hex): {}\ninput (lossy): {:?}",
            target.name(),
            data.len(),
            proofgraph_graph::fingerprint::hex(data),
            String::from_utf8_lossy(data)
        ))
    })
}

fn mutated(target: Target) -> impl Strategy<Value = Vec<u8>> {
    let seeds = seeds_of(target);
    (0..seeds.len(), proptest::collection::vec(edit(), 1..6))
        .prop_map(move |(seed, edits)| apply(target, seeds[seed].clone(), &edits))
}

#[test]
fn every_seed_and_kept_input_passes_every_target() {
    for target in Target::ALL {
        let seeds = seeds_of(target);
        assert!(
            seeds.len() >= 3,
            "{}: only {} seeds",
            target.name(),
            seeds.len()
        );
        for seed in seeds {
            if let Err(e) = check(target, seed) {
                panic!("{e}");
            }
        }
    }
}

/// Found by the `report` target: TAP followed by libtest event lines. `auto` reads TAP (its
/// markers come first), `json` (told the report is JSON) the event lines; neither passes.
#[test]
fn tap_followed_by_json_event_lines_is_tap_to_auto_and_libtest_to_json() {
    use proofgraph::decide::report::{self, Declared, Format};
    let path = repo_root().join("fixtures/fuzz/report/tap-then-libtest-lines");
    let bytes = fs_err::read(path).expect("read the kept input");
    // Read, each is a failure (runner errors); refused (a total nothing backs), it is no
    // report at all. Never a pass either way.
    for (declared, format) in [
        (Declared::Auto, Format::Tap),
        (Declared::AnyJson, Format::LibtestJson),
    ] {
        if let Ok(read) = report::parse(&bytes, declared) {
            assert_eq!(read.format, format, "{declared:?}");
            assert!(!read.runner_errors.is_empty(), "{declared:?}: {read:?}");
        }
    }
    assert_eq!(report::sniff(&bytes), Some(Format::Tap));
}

/// Found by the `report` target (`fixtures/fuzz/report/tap-plan-past-2-53`): a count no
/// receipt can carry exactly. Every format that declares a count refuses one past 2^53 - 1
/// and reads one at it.
#[test]
fn a_count_past_2_53_is_refused_in_every_format_that_declares_one() {
    use proofgraph::decide::report::{self, Declared, Format};
    /// A document of a format that declares `n` tests.
    type Doc = fn(u64) -> String;
    let docs: [(Format, Doc); 9] = [
        (Format::Tap, |n| format!("TAP version 14\n1..{n}\n")),
        (Format::Junit, |n| {
            format!("<testsuites tests=\"{n}\"></testsuites>")
        }),
        (Format::Jest, |n| {
            format!(r#"{{"numTotalTests": {n}, "testResults": []}}"#)
        }),
        (Format::Vitest, |n| {
            format!(r#"{{"numTotalTests": {n}, "testResults": []}}"#)
        }),
        (Format::Mocha, |n| {
            format!(r#"{{"stats": {{"tests": {n}}}, "tests": []}}"#)
        }),
        (Format::Ctrf, |n| {
            format!(
                r#"{{"results": {{"tool": {{"name": "x"}}, "summary": {{"tests": {n}}}, "tests": []}}}}"#
            )
        }),
        (Format::Playwright, |n| {
            format!(r#"{{"config": {{}}, "suites": [], "stats": {{"expected": {n}}}}}"#)
        }),
        (Format::Summary, |n| format!(r#"{{"totalTests": {n}}}"#)),
        (Format::LibtestJson, |n| {
            format!("{{\"type\":\"suite\",\"event\":\"started\",\"test_count\":{n}}}\n")
        }),
    ];
    let max = report::MAX_COUNT;
    assert_eq!(max, (1 << 53) - 1);
    for (format, doc) in docs {
        for declared in [Declared::Auto, Declared::Exactly(format)] {
            // At the bound the count is read: a report is refused only for what else it
            // says (a total no listed test backs), never for its size.
            match report::parse(doc(max).as_bytes(), declared) {
                Ok(read) => assert_eq!(read.counts.total, max, "{format}"),
                Err(e) => assert!(!e.to_string().contains("2^53"), "{format} at 2^53 - 1: {e}"),
            }
            for n in [max + 1, u64::MAX] {
                let err = report::parse(doc(n).as_bytes(), declared)
                    .expect_err(&format!("{format} {declared:?} counts {n}"));
                assert!(err.to_string().contains("2^53"), "{format}: {err}");
            }
        }
    }
    let kept = fs_err::read(repo_root().join("fixtures/fuzz/report/tap-plan-past-2-53"))
        .expect("read the kept input");
    assert!(report::parse(&kept, Declared::Auto).is_err());
}

/// Found by the `report` target (`fixtures/fuzz/report/two-byte-order-marks`): `parse`
/// reads past a byte-order mark before it sniffs, and `sniff` did not, so a report behind
/// two marks was TAP to one and nothing to the other.
#[test]
fn sniff_and_parse_agree_behind_byte_order_marks() {
    use proofgraph::decide::report::{self, Declared};
    let kept = fs_err::read(repo_root().join("fixtures/fuzz/report/two-byte-order-marks"))
        .expect("read the kept input");
    let bom = b"\xEF\xBB\xBF";
    // The input found: behind two marks, TAP to `parse` (which reads past one) and nothing
    // to `sniff` (which read past none).
    assert_eq!(
        report::sniff(&kept),
        Some(proofgraph::decide::report::Format::Tap)
    );
    for body in [
        &b"TAP version 14\n1..1\nok 1 - a\n"[..],
        b"{\"totalTests\": 2}",
        &kept,
    ] {
        for marks in 0..3 {
            let mut bytes = bom.repeat(marks);
            bytes.extend_from_slice(body);
            // A report that parses was parsed as the format `sniff` names.
            if let Ok(parsed) = report::parse(&bytes, Declared::Auto) {
                assert_eq!(report::sniff(&bytes), Some(parsed.format), "{marks} marks");
            }
        }
    }
}

proptest! {
    #![proptest_config(crate::support::beside_source(config()))]

    #[test]
    fn fuzz_config(data in mutated(Target::Config)) {
        check(Target::Config, &data)?;
    }

    #[test]
    fn fuzz_report(data in mutated(Target::Report)) {
        check(Target::Report, &data)?;
    }

    #[test]
    fn fuzz_envelope(data in mutated(Target::Envelope)) {
        check(Target::Envelope, &data)?;
    }

    #[test]
    fn fuzz_pem(data in mutated(Target::Pem)) {
        check(Target::Pem, &data)?;
    }

    #[test]
    fn fuzz_store(data in mutated(Target::Store)) {
        check(Target::Store, &data)?;
    }

    #[test]
    fn fuzz_receipt(data in mutated(Target::Receipt)) {
        check(Target::Receipt, &data)?;
    }
}

proptest! {
    #![proptest_config(crate::support::beside_source(ProptestConfig { cases: config().cases / 4, ..config() }))]

    /// The `store` target checks the decoders; this checks that the store reads an entry
    /// on disk, as a link and as a file, exactly as they decode it.
    #[test]
    fn store_entries_on_disk_read_as_they_decode(data in mutated(Target::Store)) {
        use std::os::unix::ffi::OsStrExt as _;
        use proofgraph::store::{self, Store};
        let dir = tempfile::tempdir().expect("a temporary directory");
        let entry = dir.path().join(".proofgraph/refs/change/provider@test");
        fs_err::create_dir_all(entry.parent().expect("a parent")).expect("create refs/");
        let store = Store::open_read_only(dir.path());
        let change = proofgraph_graph::ChangeName::parse("change").expect("a change name");
        let provider = proofgraph_graph::ProviderId::parse("provider").expect("an id");
        let test = proofgraph_graph::CapabilityName::test();
        // A link target is a non-empty path without NUL, shorter than PATH_MAX.
        if !data.is_empty() && !data.contains(&0) && data.len() < 4000 {
            let target = std::ffi::OsStr::from_bytes(&data);
            fs_err::os::unix::fs::symlink(target, &entry).expect("make the link");
            prop_assert_eq!(
                store.latest(&change, &provider, &test).map(|s| s.to_hex()),
                store::decode_link_target(&data)
            );
            fs_err::remove_file(&entry).expect("remove the link");
        }
        fs_err::write(&entry, &data).expect("write the file");
        prop_assert_eq!(
            store.latest(&change, &provider, &test).map(|s| s.to_hex()),
            store::decode_entry_file(&data)
        );
    }
}

/// Each compatibility fixture seeds the `config` target once (it is a seed as part of
/// `fixtures/`; it used to be read a second time as the corpus), and a shared corpus given
/// besides adds its changes.
#[test]
fn each_compatibility_fixture_is_one_config_seed() {
    use proofgraph_fuzz_targets::config::SEPARATOR;
    let fixtures = repo_root().join("fixtures/compat/changeloop");
    let seeds = seeds_of(Target::Config);
    let mut changes = 0;
    for change in fs_err::read_dir(&fixtures).expect("read the compatibility fixtures") {
        let change = change.expect("read a fixture entry").path();
        let read = |file: &str| fs_err::read(change.join(file)).unwrap_or_default();
        let mut seed = read("evidence.yaml");
        seed.extend_from_slice(SEPARATOR);
        seed.extend(read("execution.yaml"));
        let times = seeds.iter().filter(|s| **s == seed).count();
        assert_eq!(times, 1, "`{}` is seeded {times} times", change.display());
        changes += 1;
    }
    assert!(changes >= 8, "{changes} compatibility fixtures");

    let shared = tempfile::tempdir().expect("create a directory");
    support::write(
        &shared.path().join("a-change/evidence.yaml"),
        "{\"version\": 2, \"claims\": []}\n",
    );
    let with = seeds::seeds(Target::Config, &repo_root(), Some(shared.path())).expect("seeds");
    assert_eq!(
        with.len(),
        seeds.len() + 1,
        "the shared corpus's one change"
    );
}
