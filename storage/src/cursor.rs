//! Batched lookups: many ids or names looked up in ascending byte order, each search
//! starting where the previous one stopped.
//!
//! A patch looks up hundreds of thousands of ids (its fragment's nodes) and names (what
//! its context may need). One full binary search each costs ~23 string comparisons on a
//! kernel-size artifact, most of them cache misses; sorted, consecutive answers lie a few
//! positions apart and a gallop from the last one finds them in a handful.

use crate::input::NodeIdx;
use crate::merge_iter::NameIter;
use crate::reader::Artifact;
use crate::refs::IdScratch;

impl Artifact {
    /// A cursor that finds the nodes of many ids cheaply when they come in ascending byte
    /// order (each search starts where the previous one stopped).
    pub(crate) fn id_cursor(&self) -> IdCursor<'_> {
        IdCursor {
            a: self,
            base_at: 0,
            delta_at: 0,
            last: Vec::new(),
            scratch: IdScratch::default(),
        }
    }

    /// A cursor that finds the nodes of many simple names cheaply when they come in
    /// ascending byte order (see [`NameCursor::lookup`]).
    pub fn name_cursor(&self) -> NameCursor<'_> {
        NameCursor {
            a: self,
            block_at: 0,
            index_at: 0,
            delta_at: 0,
            last: Vec::new(),
        }
    }
}

/// See [`Artifact::id_cursor`].
pub(crate) struct IdCursor<'a> {
    a: &'a Artifact,
    base_at: usize,
    delta_at: usize,
    last: Vec<u8>,
    /// Kept from one search to the next: consecutive ids mostly share their file, whose
    /// path the scratch holds assembled.
    scratch: IdScratch,
}

impl IdCursor<'_> {
    /// Every live node with stable id `id`, ascending (several only when a build produced
    /// duplicates). Ids out of ascending order are still answered right, by starting over.
    pub(crate) fn nodes_with_id(&mut self, id: &str) -> Vec<NodeIdx> {
        let target = id.as_bytes();
        if target < self.last.as_slice() {
            (self.base_at, self.delta_at) = (0, 0);
        }
        self.last.clear();
        self.last.extend_from_slice(target);
        let a = self.a;
        let (ix, p) = (&a.nodes.id_index, a.np());
        let range = a.base_id_range_from(target, self.base_at, &mut self.scratch);
        self.base_at = range.start;
        let mut out: Vec<NodeIdx> = range
            .map(|k| ix.get32(p, k))
            .filter(|&b| !a.masked(b))
            .map(NodeIdx)
            .collect();
        if let Some(d) = &a.delta {
            let (start, rows) = d.rows_with_id_from(a, target, self.delta_at);
            self.delta_at = start;
            let before = out.len();
            out.extend(rows.map(NodeIdx));
            if before > 0 && out.len() > before {
                out.sort_unstable();
            }
        }
        out
    }
}

/// The first position `k` in `from..len` where `holds(k)` is false, for a `holds` that is
/// true and then false over that range (`len` if it never turns false). Galloping from
/// `from`: a run of `r` positions costs about 2·log2(r) probes, not log2(len), which is
/// what a lookup whose lower end is already known wants (most name runs are short, and
/// sorted batches of ids land close to each other). From 0 it is a plain binary search.
pub(crate) fn run_end(from: usize, len: usize, mut holds: impl FnMut(usize) -> bool) -> usize {
    // Every position below `lo` holds; `hi` is `len` or a position that does not.
    let (mut lo, mut step) = (from, 1usize);
    let mut hi = len;
    while lo < len && from > 0 {
        let probe = lo.saturating_add(step - 1).min(len - 1);
        if !holds(probe) {
            hi = probe;
            break;
        }
        lo = probe + 1;
        step = step.saturating_mul(2);
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// See [`Artifact::name_cursor`].
pub struct NameCursor<'a> {
    a: &'a Artifact,
    block_at: u32,
    index_at: usize,
    delta_at: usize,
    last: Vec<u8>,
}

impl<'a> NameCursor<'a> {
    /// [`Artifact::lookup_name`]. Names out of ascending byte order are still answered
    /// right, by starting over.
    pub fn lookup(&mut self, name: &str) -> NameIter<'a> {
        let t = name.as_bytes();
        if t < self.last.as_slice() {
            (self.block_at, self.index_at, self.delta_at) = (0, 0, 0);
        }
        self.last.clear();
        self.last.extend_from_slice(t);
        let a = self.a;
        let (ix, key) = (&a.nodes.name_index, &a.nodes.name);
        let (s, found, block) = a.strings.rank_from(a.sp(), t, self.block_at);
        self.block_at = block;
        // The name index is sorted by string id, and string ids by text.
        let first = a.lower_bound_from(ix, key, u64::from(s), self.index_at);
        self.index_at = first;
        let base = if found {
            first..a.lower_bound_from(ix, key, u64::from(s) + 1, first)
        } else {
            0..0
        };
        let delta = a.delta.as_ref().map_or(0..0, |d| {
            let r = d.name_range_from(a, |n| n < t, |n| n <= t, self.delta_at);
            self.delta_at = r.start;
            r
        });
        NameIter { a, base, delta }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::{Rng, sample_run};
    use crate::input::{GraphBuilder, IdText, NodeInput};
    use batho_schema::{Language, NodeFlags, NodeKind};

    /// The cursors answer like the single lookups over a dictionary of many blocks, for
    /// names and ids in byte order, shuffled, and absent.
    #[test]
    fn cursors_answer_like_single_lookups() {
        let mut rng = Rng::new(7);
        let mut g = GraphBuilder::new();
        for i in 0..6000u32 {
            let name = g.intern(&format!("n{}", rng.below(2500)));
            let file = g.intern(&format!("f{}.c", i % 40));
            let id = IdText::Text(g.intern(&format!("f{}.c:{i}", i % 40)));
            g.add_node(NodeInput {
                id,
                name,
                qualified_name: name,
                kind: NodeKind::Function,
                file,
                language: Language::C,
                start_line: 1,
                end_line: 1,
                start_byte: 0,
                end_byte: 0,
                signature: name,
                doc: crate::StrId(0),
                content_hash: [0; 8],
                flags: NodeFlags::default(),
                community: 0,
                pagerank: 0,
            });
        }
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::Store::create_or_open(tmp.path()).unwrap();
        store
            .lock_writer()
            .unwrap()
            .commit(&g, sample_run(&g))
            .unwrap();
        let a = store.open_current().unwrap();

        let mut names: Vec<String> = (0..3000).map(|k| format!("n{k}")).collect();
        names.extend(["", "m", "n", "n1x", "o"].map(String::from));
        names.sort();
        let mut ids: Vec<String> = (0..7000)
            .step_by(3)
            .map(|i| format!("f{}.c:{i}", i % 40))
            .collect();
        ids.extend(["", "f0.c:", "zz"].map(String::from));
        ids.sort();
        for shuffle in [false, true] {
            let order = |v: &Vec<String>| -> Vec<String> {
                let mut v = v.clone();
                if shuffle {
                    for k in (1..v.len()).rev() {
                        v.swap(k, rng_below(k as u64 + 1, k));
                    }
                }
                v
            };
            let mut cursor = a.name_cursor();
            for name in order(&names) {
                let got: Vec<NodeIdx> = cursor.lookup(&name).collect();
                assert_eq!(got, a.lookup_name(&name).collect::<Vec<_>>(), "name {name}");
            }
            let mut cursor = a.id_cursor();
            for id in order(&ids) {
                let want: Vec<NodeIdx> = a.lookup_id(&id).into_iter().collect();
                assert_eq!(cursor.nodes_with_id(&id), want, "id {id}");
            }
        }
    }

    /// A fixed shuffle: position `k` swaps with a pseudo-random earlier one.
    fn rng_below(n: u64, k: usize) -> usize {
        (k.wrapping_mul(2_654_435_761) as u64 % n) as usize
    }

    proptest::proptest! {
        #[test]
        fn run_end_finds_where_a_run_ends(
            len in 0usize..300, cut in 0usize..300, from in 0usize..300,
        ) {
            let cut = cut.min(len);
            let from = from.min(cut);
            let v: Vec<bool> = (0..len).map(|k| k < cut).collect();
            let mut probes = 0;
            let got = run_end(from, len, |k| {
                probes += 1;
                v[k]
            });
            proptest::prop_assert_eq!(got, v.partition_point(|&x| x));
            // Galloping: about twice the log of the run, never a scan; from 0 a binary search.
            let bound = if from == 0 {
                ((len + 1) as f64).log2() + 1.0
            } else {
                2.0 * ((cut - from + 1) as f64).log2() + 3.0
            };
            proptest::prop_assert!(probes as f64 <= bound, "{probes} probes");
        }
    }
}
