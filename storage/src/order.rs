//! The orders a layer is written in: edges by (source, relation, target), the dictionary's
//! strings by bytes, the id index by id bytes and the name index by name.
//!
//! A kernel-size graph has 18 M edges and 7 M nodes, and general comparison sorts of them,
//! each comparison reaching into the graph for its key, were half of the write's time.
//! Each function here gives exactly the order of the plain sort it replaced (the tests
//! check them against it), from keys the writer already has: the source offsets of the
//! out-CSR bucket the edges, a name index is a counting sort over dictionary ids, and
//! strings compare by their first eight bytes before their text.

use crate::format::cmp_parts;
use crate::input::EdgeInput;

/// Edge indexes ordered by (source, relation, target, index), and the out-CSR offsets of
/// the `rows` sources (`offsets[s]..offsets[s + 1]` are source `s`'s edges). A counting
/// sort by source, each source's few edges then sorted; the offsets double as the
/// scatter's cursors, so nothing beyond the two results is allocated.
pub(crate) fn edges_by_source(edges: &[EdgeInput], rows: usize) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32; rows + 1];
    for x in edges {
        offsets[x.src.0 as usize + 1] += 1;
    }
    for s in 0..rows {
        offsets[s + 1] += offsets[s];
    }
    let mut order = vec![0u32; edges.len()];
    // Scattered in index order, so each bucket starts sorted by index. Afterwards
    // `offsets[s]` is where source `s + 1` starts: shifted back by one below.
    for (i, x) in edges.iter().enumerate() {
        let c = &mut offsets[x.src.0 as usize];
        order[*c as usize] = i as u32;
        *c += 1;
    }
    for s in (1..rows).rev() {
        offsets[s] = offsets[s - 1];
    }
    if rows > 0 {
        offsets[0] = 0;
    }
    for s in 0..rows {
        let bucket = &mut order[offsets[s] as usize..offsets[s + 1] as usize];
        if bucket.len() > 1 {
            bucket.sort_unstable_by_key(|&i| {
                let x = &edges[i as usize];
                (x.rel.code(), x.dst.0, i)
            });
        }
    }
    (order, offsets)
}

/// Indexes `0..n` ordered by (`key(i)`, `i`), every key below `bound`: a counting sort.
pub(crate) fn by_small_key(n: usize, bound: usize, key: impl Fn(usize) -> u32) -> Vec<u32> {
    let mut start = vec![0u32; bound + 1];
    for i in 0..n {
        start[key(i) as usize + 1] += 1;
    }
    for k in 0..bound {
        start[k + 1] += start[k];
    }
    let mut order = vec![0u32; n];
    for i in 0..n {
        let s = &mut start[key(i) as usize];
        order[*s as usize] = i as u32;
        *s += 1;
    }
    order
}

/// Eight bytes of `s` from `depth`, big-endian and zero-padded: `a < b` as byte strings
/// that agree before `depth` implies `chunk(a) <= chunk(b)`.
fn chunk(s: &[u8], depth: usize) -> u64 {
    let mut b = [0u8; 8];
    let rest = s.get(depth..).unwrap_or(&[]);
    let n = rest.len().min(8);
    b[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b)
}

/// `ids` ordered by (`text(id)`, `id`): a multikey sort on eight bytes at a time, so that
/// nearly every comparison is of two integers beside each other (names share long
/// prefixes: `static int `, `drivers/`), and a text is read once per eight bytes of depth.
pub(crate) fn by_text<'a>(
    ids: impl Iterator<Item = u32>,
    text: impl Fn(u32) -> &'a str,
) -> Vec<u32> {
    let mut keyed: Vec<(u64, u32)> = ids.map(|id| (0, id)).collect();
    sort_from(&mut keyed, &|id| text(id).as_bytes());
    keyed.into_iter().map(|(_, id)| id).collect()
}

/// Sorts `keyed` by (text, id). A list of runs left to sort stands in for recursion:
/// texts may share prefixes of any length.
fn sort_from<'a>(keyed: &mut [(u64, u32)], text: &dyn Fn(u32) -> &'a [u8]) {
    // (start, length, depth): a run whose texts agree on their first `depth` bytes.
    let mut runs = vec![(0usize, keyed.len(), 0usize)];
    while let Some((start, len, depth)) = runs.pop() {
        let run = &mut keyed[start..start + len];
        for e in run.iter_mut() {
            e.0 = chunk(text(e.1), depth);
        }
        run.sort_unstable_by_key(|e| e.0);
        let mut at = start;
        for group in run.chunk_by_mut(|a, b| a.0 == b.0) {
            let group_start = at;
            at += group.len();
            if group.len() < 2 {
                continue;
            }
            // Equal chunks: a text that ends within them is a prefix of every longer one
            // (its padding matched their bytes), so the ended ones come first, shorter
            // first, equal texts by id; the others go on eight bytes deeper.
            let end = depth + 8;
            group.sort_unstable_by_key(|e| {
                let len = text(e.1).len();
                if len <= end {
                    (len, e.1)
                } else {
                    (usize::MAX, 0)
                }
            });
            let ended = group.partition_point(|e| text(e.1).len() <= end);
            if group.len() - ended > 1 {
                runs.push((group_start + ended, group.len() - ended, end));
            }
        }
    }
}

/// A key of [`IdRow`] meaning "compare the id texts".
pub(crate) const BY_BYTES: u64 = u64::MAX;

/// A node row of the id index with its sort key: an integer in the byte order of the ids,
/// or [`BY_BYTES`] when the row has none. As a column value it is its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdRow {
    pub(crate) key: u64,
    pub(crate) row: u32,
}

impl From<IdRow> for u64 {
    fn from(r: IdRow) -> u64 {
        u64::from(r.row)
    }
}

/// Sorts `rows` by (id bytes, row); `parts(r)` are row `r`'s id bytes, read only for the
/// rows without a key. The keyed rows sort as pairs of integers (the keys sit beside the
/// rows: no look-up per comparison) and the few others are then put in their places by
/// binary search; sorted in place, the rows are written as the column with no copy.
pub(crate) fn by_id_bytes<'a>(rows: &mut [IdRow], parts: impl Fn(u32) -> [&'a [u8]; 3]) {
    // `BY_BYTES` is the largest key: those rows end up last.
    rows.sort_unstable_by_key(|r| (r.key, r.row));
    let keyed = rows.partition_point(|r| r.key != BY_BYTES);
    if keyed == rows.len() {
        return;
    }
    let cmp = |a: u32, b: u32| cmp_parts(parts(a), parts(b)).then(a.cmp(&b));
    let mut others: Vec<IdRow> = rows[keyed..].to_vec();
    others.sort_unstable_by(|a, b| cmp(a.row, b.row));
    // From the back: the keyed rows after each other row move up past it, once each.
    let (mut end, mut write) = (keyed, rows.len());
    for other in others.iter().rev() {
        let at = rows[..end].partition_point(|r| cmp(r.row, other.row).is_lt());
        let moved = end - at;
        rows.copy_within(at..end, write - moved);
        write -= moved + 1;
        rows[write] = *other;
        end = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{NodeIdx, StrId};
    use batho_schema::{RelType, Roles, Strategy};
    use proptest::prelude::*;

    fn edge(src: u32, rel: usize, dst: u32) -> EdgeInput {
        EdgeInput {
            src: NodeIdx(src),
            dst: NodeIdx(dst),
            rel: RelType::ALL[rel % RelType::ALL.len()],
            roles: Roles(0),
            confidence: 1.0,
            strategy: Strategy::Direct,
            file: StrId(0),
            line: 0,
            sites: crate::input::SitesId::ONE,
        }
    }

    proptest! {
        #[test]
        fn edges_by_source_is_the_plain_sort(
            raw in prop::collection::vec((0u32..12, 0usize..4, 0u32..12), 0..300)
        ) {
            let edges: Vec<EdgeInput> = raw.iter().map(|&(s, r, d)| edge(s, r, d)).collect();
            let mut out_off = vec![0u32; 13];
            for x in &edges {
                out_off[x.src.0 as usize + 1] += 1;
            }
            for s in 0..12 {
                out_off[s + 1] += out_off[s];
            }
            let mut plain: Vec<u32> = (0..edges.len() as u32).collect();
            plain.sort_unstable_by_key(|&i| {
                let x = &edges[i as usize];
                (x.src.0, x.rel.code(), x.dst.0, i)
            });
            prop_assert_eq!(edges_by_source(&edges, 12), (plain, out_off));
        }

        #[test]
        fn by_small_key_is_the_plain_sort(keys in prop::collection::vec(0u32..20, 0..300)) {
            let mut plain: Vec<u32> = (0..keys.len() as u32).collect();
            plain.sort_unstable_by_key(|&i| (keys[i as usize], i));
            prop_assert_eq!(by_small_key(keys.len(), 20, |i| keys[i]), plain);
        }

        #[test]
        fn by_text_is_the_plain_sort(
            texts in prop::collection::vec("[ab\\x00]{0,27}", 0..200)
        ) {
            let mut plain: Vec<(&str, u32)> =
                texts.iter().enumerate().map(|(i, t)| (t.as_str(), i as u32)).collect();
            plain.sort_unstable();
            let plain: Vec<u32> = plain.into_iter().map(|(_, i)| i).collect();
            let ids = 0..texts.len() as u32;
            prop_assert_eq!(by_text(ids, |i| texts[i as usize].as_str()), plain);
        }

        #[test]
        fn by_id_bytes_is_the_plain_sort(
            ids in prop::collection::vec(("[ab]{0,3}", any::<bool>()), 0..200)
        ) {
            // Integer keys that follow the byte order (the rank of the text among all),
            // for the rows that have one.
            let mut texts: Vec<&str> = ids.iter().map(|(t, _)| t.as_str()).collect();
            texts.sort_unstable();
            texts.dedup();
            let keys: Vec<u64> = ids
                .iter()
                .map(|(t, keyed)| {
                    if *keyed {
                        let rank = texts.binary_search(&t.as_str()).unwrap() as u64;
                        rank << 32
                    } else {
                        BY_BYTES
                    }
                })
                .collect();
            // Equal keys stay in row order, as the plain comparator breaks ties.
            let parts = |i: u32| [ids[i as usize].0.as_bytes(), &b""[..], &b""[..]];
            let mut plain: Vec<u32> = (0..ids.len() as u32).collect();
            plain.sort_by(|&a, &b| {
                cmp_parts(parts(a), parts(b)).then(a.cmp(&b))
            });
            let mut rows: Vec<IdRow> =
                keys.iter().enumerate().map(|(i, &key)| IdRow { key, row: i as u32 }).collect();
            by_id_bytes(&mut rows, parts);
            prop_assert_eq!(rows.iter().map(|r| r.row).collect::<Vec<_>>(), plain);
        }
    }
}
