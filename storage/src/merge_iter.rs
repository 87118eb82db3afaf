//! Iterators over the merged graph: a node's edges (live base edges, then delta edges)
//! and the nodes of a name lookup (base and delta name-index ranges merged by name).

use crate::column::UIntCol;
use crate::format::edges_col;
use crate::input::NodeIdx;
use crate::reader::Artifact;
use crate::refs::EdgeRef;

/// The last node `v` with `offsets[v] <= e` (the source of edge `e` in an out-CSR over
/// `n` rows), searched between the sources of `e`'s block and the next block's. Damaged
/// hints only make the answer wrong, never out of range.
pub(crate) fn block_search(off: &UIntCol, bs: &UIntCol, p: &[u8], n: u32, e: u32) -> u32 {
    let b = e as usize / edges_col::SRC_BLOCK;
    let n = n as usize;
    let mut lo = (bs.get(p, b) as usize).min(n);
    let mut hi = if b + 1 < bs.len() {
        (bs.get(p, b + 1) as usize).saturating_add(1).min(n + 1)
    } else {
        n + 1
    };
    if lo >= hi || off.get(p, lo) > u64::from(e) {
        (lo, hi) = (0, n + 1);
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if off.get(p, mid) <= u64::from(e) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo.saturating_sub(1) as u32).min((n as u32).saturating_sub(1))
}

/// The edges of one node: live base edges (a range of the out-CSR, or of the in-CSR's
/// permutation), then delta edges. Exact-size: the count skips dropped base edges.
pub struct EdgeIter<'a> {
    a: &'a Artifact,
    base: std::ops::Range<u32>,
    delta: std::ops::Range<u32>,
    inbound: bool,
    src: u32,
    left: usize,
}

impl<'a> EdgeIter<'a> {
    pub(crate) fn new(
        a: &'a Artifact,
        base: std::ops::Range<u32>,
        delta: std::ops::Range<u32>,
        inbound: bool,
        src: u32,
    ) -> Self {
        let mut it = EdgeIter {
            a,
            base,
            delta,
            inbound,
            src,
            left: 0,
        };
        let dropped = match &a.delta {
            None => 0,
            Some(d) if !inbound => d.dropped(a).range_cardinality(it.base.clone()) as usize,
            Some(d) => it
                .base
                .clone()
                .filter(|&k| d.dropped(a).contains(it.base_edge(k)))
                .count(),
        };
        it.left = it.base.len() - dropped + it.delta.len();
        it
    }

    #[inline]
    fn base_edge(&self, k: u32) -> u32 {
        if self.inbound {
            self.a.edges.in_perm.get32(self.a.ep(), k as usize)
        } else {
            k
        }
    }
}

impl<'a> Iterator for EdgeIter<'a> {
    type Item = EdgeRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<EdgeRef<'a>> {
        while let Some(k) = self.base.next() {
            let e = self.base_edge(k);
            if let Some(d) = &self.a.delta
                && d.dropped(self.a).contains(e)
            {
                continue;
            }
            self.left -= 1;
            return Some(self.a.edge_with_src(e, self.src));
        }
        let k = self.delta.next()?;
        let d = self.a.delta.as_ref()?;
        let r = if self.inbound {
            d.in_perm(self.a, k)
        } else {
            k
        };
        self.left -= 1;
        Some(self.a.edge_with_src(self.a.e + r, self.src))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for EdgeIter<'_> {}

/// Nodes from a name lookup: a range of the base name index (hidden rows skipped) and a
/// range of the delta's, merged by (name, node index).
pub struct NameIter<'a> {
    pub(crate) a: &'a Artifact,
    pub(crate) base: std::ops::Range<usize>,
    pub(crate) delta: std::ops::Range<usize>,
}

impl NameIter<'_> {
    fn peek_base(&mut self) -> Option<u32> {
        let (ix, p) = (&self.a.nodes.name_index, self.a.np());
        while self.base.start < self.base.end {
            let b = ix.get32(p, self.base.start);
            if !self.a.masked(b) {
                return Some(b);
            }
            self.base.start += 1;
        }
        None
    }
}

impl Iterator for NameIter<'_> {
    type Item = NodeIdx;

    fn next(&mut self) -> Option<NodeIdx> {
        let b = self.peek_base();
        let Some(d) = &self.a.delta else {
            self.base.start += 1;
            return b.map(NodeIdx);
        };
        let dr =
            (self.delta.start < self.delta.end).then(|| d.name_index_row(self.a, self.delta.start));
        match (b, dr) {
            (None, None) => None,
            (Some(b), None) => {
                self.base.start += 1;
                Some(NodeIdx(b))
            }
            (None, Some((_, v))) => {
                self.delta.start += 1;
                Some(NodeIdx(v))
            }
            (Some(b), Some((r, v))) => {
                let bn = self.a.base_node(b).name();
                let dn = self.a.delta_node(d, r, v).name();
                if (bn, b) <= (dn, v) {
                    self.base.start += 1;
                    Some(NodeIdx(b))
                } else {
                    self.delta.start += 1;
                    Some(NodeIdx(v))
                }
            }
        }
    }
}
