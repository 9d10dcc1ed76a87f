//! Unit tests of [`super`].

use super::*;

#[test]
fn the_scheduler_admits_twice_the_runs_slots_so_one_always_waits_in_it() {
    let n = |v: usize| NonZeroUsize::new(v).expect("non-zero");
    assert_eq!(admitted(n(1)), n(2));
    assert_eq!(admitted(n(8)), n(16));
    assert_eq!(admitted(NonZeroUsize::MAX), NonZeroUsize::MAX);
}
