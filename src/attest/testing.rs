//! Helpers for the unit tests, here because `attest` is the lowest layer that has a
//! property test (`base::testing` re-exports them).

use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};

/// Where [`beside_source`] keeps a failing case: `x.rs` → `x.proptest-regressions`.
const BESIDE_SOURCE: FileFailurePersistence =
    FileFailurePersistence::WithSource("proptest-regressions");

/// `config` with proptest's failures kept beside the test's source file
/// (`paths.rs` → `paths.proptest-regressions`), not in a tree parallel to the crate.
pub(crate) fn beside_source(mut config: ProptestConfig) -> ProptestConfig {
    config.failure_persistence = Some(Box::new(BESIDE_SOURCE));
    config
}
