//! Work spread over every core, for the few places where it pays: reading and verifying
//! receipts (an Ed25519 signature check each) is most of a no-op `prove` or a `status` of a
//! large change.

use std::num::NonZeroUsize;

/// `f` of every item, in order, computed in chunks of at least `min_chunk` items on as many
/// threads as the machine has cores (on the calling thread when there is one chunk). Every
/// item of a chunk in which `f` panicked is `None`; callers treat that as "not known" (a
/// receipt not verified).
pub fn map<T: Sync, R: Send>(
    items: &[T],
    min_chunk: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let chunk = items.len().div_ceil(threads).max(min_chunk).max(1);
    if items.len() <= chunk {
        let all = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            items.iter().map(&f).collect::<Vec<_>>()
        }));
        return match all {
            Ok(results) => results.into_iter().map(Some).collect(),
            Err(_) => items.iter().map(|_| None).collect(),
        };
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                (
                    part.len(),
                    scope.spawn(move || part.iter().map(f).collect::<Vec<_>>()),
                )
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(len, handle)| match handle.join() {
                Ok(results) => results.into_iter().map(Some).collect::<Vec<_>>(),
                Err(_) => (0..len).map(|_| None).collect(),
            })
            .collect()
    })
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
    fn a_panicking_chunk_leaves_only_its_items_unknown() {
        let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let chunk = 64usize.div_ceil(threads).max(8);
        let items: Vec<usize> = (0..64).collect();
        let results = map(&items, 8, |&i| {
            assert!(i != 3, "item 3 fails");
            i
        });
        let expected: Vec<Option<usize>> = (0..64).map(|i| (i >= chunk).then_some(i)).collect();
        assert_eq!(results, expected);
    }
}
