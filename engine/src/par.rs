//! Work split over threads by runs or chunks of a slice, for the few steps of a patch
//! that handle thousands to hundreds of thousands of independent items (names to look
//! up, files to lend, files whose edges to read).

/// `f` applied to `items` cut into one run per thread (at most `threads` runs, none
/// shorter than `min_run`), with the results concatenated in the order of `items`. Few
/// items take no thread at all. A panic in a run is resumed on the caller.
pub(crate) fn map_runs<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    min_run: usize,
    f: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    let run = items.len().div_ceil(threads.max(1)).max(min_run).max(1);
    if items.len() <= run {
        return f(items);
    }
    let f = &f;
    std::thread::scope(|s| {
        let parts: Vec<_> = items
            .chunks(run)
            .map(|part| s.spawn(move || f(part)))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// `f` applied to `items` cut into chunks of `chunk`, which `threads` threads take in
/// turn as they finish the previous one (for items of very uneven cost), with the results
/// concatenated in the order of `items`.
pub(crate) fn map_chunks<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    chunk: usize,
    f: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    let chunk = chunk.max(1);
    let threads = threads.clamp(1, items.len().div_ceil(chunk).max(1));
    if threads == 1 {
        return f(items);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (f, next) = (&f, &next);
    let mut done: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(part) = items.chunks(chunk).nth(i) else {
                            break;
                        };
                        out.push((i, f(part)));
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().flat_map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::{map_chunks, map_runs};

    #[test]
    fn runs_and_chunks_keep_the_order_of_the_items() {
        let items: Vec<u32> = (0..1000).collect();
        let doubled = |part: &[u32]| part.iter().map(|x| x * 2).collect::<Vec<_>>();
        let want: Vec<u32> = items.iter().map(|x| x * 2).collect();
        for (threads, n) in [(1, 1), (2, 1), (3, 7), (4, 300), (8, 2000), (0, 0)] {
            assert_eq!(
                map_runs(&items, threads, n, doubled),
                want,
                "runs {threads} {n}"
            );
            assert_eq!(
                map_chunks(&items, threads, n, doubled),
                want,
                "chunks {threads} {n}"
            );
        }
        assert!(map_runs(&[] as &[u32], 2, 1, doubled).is_empty());
        assert!(map_chunks(&[] as &[u32], 2, 1, doubled).is_empty());
    }

    #[test]
    fn every_run_but_the_last_is_full_length() {
        let items: Vec<u32> = (0..10).collect();
        let lens = map_runs(&items, 3, 1, |part| vec![part.len()]);
        assert_eq!(lens, vec![4, 4, 2]);
    }
}
