//! Work spread over every core, for the few places where it pays: reading and verifying
//! receipts (an Ed25519 signature check each) is most of a no-op `prove` or a `status` of a
//! large change.

/// `f` of every item, in order, on rayon's pool (as many threads as the machine has cores),
/// at least `min_chunk` items to a task. An item for which `f` panicked is `None`; callers
/// treat that as "not known" (a receipt not verified) — a panic never counts as a result.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    min_chunk: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    use rayon::prelude::*;
    items
        .par_iter()
        .with_min_len(min_chunk.max(1))
        .map(|item| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item))).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_on_one_thread_or_many() {
        for n in [0usize, 1, 7, 8, 9, 100, 1000] {
            let items: Vec<usize> = (0..n).collect();
            let doubled = map(&items, 8, |i| i * 2);
            assert_eq!(
                doubled,
                items.iter().map(|i| Some(i * 2)).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_panicking_item_is_unknown_and_the_others_are_known() {
        let items: Vec<usize> = (0..64).collect();
        let results = map(&items, 8, |&i| {
            assert!(i != 3 && i != 40, "items 3 and 40 fail");
            i
        });
        let expected: Vec<Option<usize>> =
            (0..64).map(|i| (i != 3 && i != 40).then_some(i)).collect();
        assert_eq!(results, expected);
    }
}
