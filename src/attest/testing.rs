//! Helpers for the unit tests, here because `attest` is the lowest layer that has a
//! property test (`base::testing` re-exports them).

/// `config` with proptest's failures kept beside the test's source file
/// (`paths.rs` → `paths.proptest-regressions`), not in a tree parallel to the crate.
pub(crate) fn beside_source(
    config: proptest::test_runner::Config,
) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..config
    }
}
