//! A second test binary, so nextest's reports contain more than one suite.

#[test]
fn integration_passes() {
    assert_eq!(fixture_crate::add(20, 22), 42);
}
