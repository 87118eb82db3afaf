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

/// The first eight bytes of `s`, big-endian and zero-padded: `a < b` as byte strings
/// implies `prefix(a) <= prefix(b)`, so comparing prefixes first keeps the byte order.
fn prefix(s: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = s.len().min(8);
    b[..n].copy_from_slice(&s[..n]);
    u64::from_be_bytes(b)
}

/// `ids` ordered by (`text(id)`, `id`).
pub(crate) fn by_text<'a>(
    ids: impl Iterator<Item = u32>,
    text: impl Fn(u32) -> &'a str,
) -> Vec<u32> {
    let mut keyed: Vec<(u64, u32)> = ids.map(|id| (prefix(text(id).as_bytes()), id)).collect();
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| text(a.1).cmp(text(b.1)))
            .then(a.1.cmp(&b.1))
    });
    keyed.into_iter().map(|(_, id)| id).collect()
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

/// Sorts `rows` by (id bytes, row); `parts(r)` are row `r`'s id bytes, read only when
/// one of two rows has no key. The keys sit beside the rows, so nearly every comparison
/// is two integers in cache instead of a look-up per side; sorted in place, the rows are
/// then written as the column with no copy.
pub(crate) fn by_id_bytes<'a>(rows: &mut [IdRow], parts: impl Fn(u32) -> [&'a [u8]; 3]) {
    rows.sort_unstable_by(|a, b| {
        if a.key == BY_BYTES || b.key == BY_BYTES {
            cmp_parts(parts(a.row), parts(b.row))
        } else {
            a.key.cmp(&b.key)
        }
        .then(a.row.cmp(&b.row))
    });
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
            texts in prop::collection::vec("[ab\\x00]{0,11}", 0..200)
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
