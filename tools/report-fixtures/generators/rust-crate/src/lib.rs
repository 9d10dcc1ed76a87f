//! Throwaway crate whose tests produce proofgraph's libtest/nextest fixtures:
//! passes, a failure, an ignored test, and (under nextest with retries) a flaky test.

pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::add;

    #[test]
    fn adds_two_numbers() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn adds_negatives() {
        assert_eq!(add(-1, -2), -3);
    }

    #[test]
    fn fails_on_purpose() {
        assert_eq!(add(2, 2), 5, "two plus two");
    }

    #[test]
    #[ignore = "not ready"]
    fn is_ignored() {
        assert_eq!(add(0, 0), 1);
    }

    mod nested {
        #[test]
        fn in_a_module() {
            assert_eq!(super::add(0, 0), 0);
        }
    }

    /// Fails on the first attempt of a nextest run and passes on the retry, so the
    /// nextest JUnit report records it as flaky. Outside nextest it just passes.
    #[test]
    fn flaky_under_nextest() {
        let Ok(run_id) = std::env::var("NEXTEST_RUN_ID") else {
            return;
        };
        let marker = std::env::temp_dir().join(format!("fixture-crate-flaky-{run_id}"));
        if !marker.exists() {
            std::fs::write(&marker, b"first attempt").expect("write marker");
            panic!("first attempt fails on purpose");
        }
    }
}
