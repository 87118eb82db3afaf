//! Delta layers: a patch's changes over a base layer, and how readers merge the two.
//!
//! A generation is a base layer plus at most one delta layer, always relative to that
//! base (a later patch writes a new cumulative delta), so a reader merges exactly two
//! layers. The delta holds *rows* for the nodes it overrides (base node indexes, kept) or
//! appends (indexes from the base's node count up), the out-edges of those rows in a small
//! CSR with an in-index keyed by destination node, the strings the base dictionary lacks
//! (string ids continue after the base's, so every string has one id), and two
//! tombstone sets: removed nodes and dropped base edges. Merged views (bitmaps, the file
//! list) are computed on first use from the delta's rows and cached; opening stays O(1).
//! The byte layout and the invariants are in `docs/format.md` §9.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use batho_schema::{NodeKind, RelType, Roles};
use roaring::RoaringBitmap;

use crate::bitmaps::decode;
use crate::column::{BytesCol, ColumnTable, UIntCol};
use crate::error::{Result, StorageError};
use crate::format::{SEGMENT_HEADER_LEN, edges_col, nodes_col};
use crate::input::CONTENT_HASH_LEN;
use crate::input::StrId;
use crate::manifest::Layer;
use crate::reader::{Artifact, EdgeCols, NodeCols, Segment, block_search};
use crate::strings::Dict;
use crate::text::read::TextCols;

/// Positions of the delta segments in [`Artifact`]'s segment list (after the base's four).
pub(crate) const DS: usize = 4;
pub(crate) const DN: usize = 5;
pub(crate) const DE: usize = 6;

/// The read side of a delta layer.
#[derive(Debug)]
pub(crate) struct Delta {
    /// Node index space after the delta (base nodes, then appended slots).
    pub(crate) n: u32,
    /// Base node / edge / string counts.
    pub(crate) base_n: u32,
    pub(crate) base_e: u32,
    /// Number of delta edges (edge `base_e + k` is delta edge `k`).
    pub(crate) de: u32,
    pub(crate) rows: u32,
    pub(crate) strings: Dict,
    pub(crate) nodes: NodeCols,
    pub(crate) text: TextCols,
    pub(crate) row_node: UIntCol,
    removed_raw: BytesCol,
    pub(crate) edges: EdgeCols,
    pub(crate) in_keys: UIntCol,
    dropped_raw: BytesCol,
    removed: OnceLock<RoaringBitmap>,
    dropped: OnceLock<RoaringBitmap>,
    mask: OnceLock<RoaringBitmap>,
    kinds: Box<[OnceLock<RoaringBitmap>]>,
    rels: Box<[OnceLock<RoaringBitmap>]>,
    roles: Box<[OnceLock<RoaringBitmap>]>,
    touched: OnceLock<BTreeMap<u32, RoaringBitmap>>,
    files: OnceLock<Vec<u32>>,
}

fn corrupt(what: &Segment, detail: impl Into<String>) -> StorageError {
    StorageError::corrupt(what.path.display().to_string(), detail)
}

fn cache(n: usize) -> Box<[OnceLock<RoaringBitmap>]> {
    (0..n).map(|_| OnceLock::new()).collect()
}

impl Delta {
    /// Parses the three delta segments' column tables and checks, in O(1), what later
    /// reads rely on (counts, CSR ends, the string table's span).
    pub(crate) fn open(
        segs: &[Segment],
        layer: &Layer,
        base_n: u32,
        base_e: u32,
        base_s: u32,
    ) -> Result<Delta> {
        let pay = |k: usize| segs[k].map.get(SEGMENT_HEADER_LEN..).unwrap_or(&[]);
        let what = |k: usize| segs[k].path.display().to_string();
        let n = u32::try_from(layer.node_count)
            .ok()
            .filter(|&n| n >= base_n)
            .ok_or_else(|| corrupt(&segs[DN], "delta node count below the base's"))?;
        let de = layer
            .edge_count
            .checked_sub(u64::from(base_e))
            .and_then(|d| u32::try_from(d).ok())
            .filter(|d| d.checked_add(base_e).is_some())
            .ok_or_else(|| corrupt(&segs[DE], "delta edge count below the base's"))?;

        let st = ColumnTable::parse(pay(DS), &what(DS))?;
        let strings = Dict::open(&st, pay(DS), &what(DS), false)?;
        if strings.len().checked_add(base_s).is_none() {
            return Err(corrupt(&segs[DS], "more than 2^32 strings"));
        }

        let nt = ColumnTable::parse(pay(DN), &what(DN))?;
        let row_node = nt.uint(nodes_col::ROW_NODE, None)?;
        let rows = row_node.len();
        if rows > n as usize {
            return Err(corrupt(&segs[DN], "more delta rows than nodes"));
        }
        let c = |id| nt.uint(id, Some(rows));
        let nodes = NodeCols {
            node_type: c(nodes_col::TYPE)?,
            type_palette: nt.uint(nodes_col::TYPE_PALETTE, None)?,
            start_line: c(nodes_col::START_LINE)?,
            line_span: c(nodes_col::LINE_SPAN)?,
            start_byte: c(nodes_col::START_BYTE)?,
            byte_span: c(nodes_col::BYTE_SPAN)?,
            community: c(nodes_col::COMMUNITY)?,
            pagerank: c(nodes_col::PAGERANK)?,
            content_hash: nt.bytes(nodes_col::CONTENT_HASH)?,
            id: c(nodes_col::ID)?,
            name: c(nodes_col::NAME)?,
            qualified_name: c(nodes_col::QUALIFIED_NAME)?,
            file: c(nodes_col::FILE)?,
            signature: c(nodes_col::SIGNATURE)?,
            doc: nt.uint_optional(nodes_col::DOC, Some(rows))?,
            id_index: c(nodes_col::ID_INDEX)?,
            name_index: c(nodes_col::NAME_INDEX)?,
        };
        let text = TextCols::open(&nt, rows)?;
        let removed_raw = nt.bytes(nodes_col::REMOVED)?;
        if nodes.type_palette.len() > rows
            || nodes.content_hash.bytes(pay(DN)).len() != rows * CONTENT_HASH_LEN
        {
            return Err(corrupt(
                &segs[DN],
                "node columns disagree with the row count",
            ));
        }

        let et = ColumnTable::parse(pay(DE), &what(DE))?;
        let deu = de as usize;
        let in_keys = et.uint(edges_col::IN_KEYS, None)?;
        let c = |id| et.uint(id, Some(deu));
        let edges = EdgeCols {
            out_offsets: et.uint(edges_col::OUT_OFFSETS, Some(rows + 1))?,
            dst: c(edges_col::DST)?,
            block_src: et.uint(
                edges_col::BLOCK_SRC,
                Some(deu.div_ceil(edges_col::SRC_BLOCK)),
            )?,
            edge_type: c(edges_col::TYPE)?,
            type_palette: et.uint(edges_col::TYPE_PALETTE, None)?,
            line: c(edges_col::LINE)?,
            file_override: c(edges_col::FILE_OVERRIDE)?,
            in_offsets: et.uint(edges_col::IN_OFFSETS, Some(in_keys.len() + 1))?,
            in_perm: c(edges_col::IN_PERM)?,
            site_offsets: et.uint(edges_col::SITE_OFFSETS, Some(deu + 1))?,
            sites: et.uint(edges_col::SITES, None)?,
        };
        let dropped_raw = et.bytes(edges_col::DROPPED)?;
        for (col, len) in [
            (&edges.out_offsets, rows),
            (&edges.in_offsets, in_keys.len()),
        ] {
            if col.get(pay(DE), 0) != 0 || col.get(pay(DE), len) != u64::from(de) {
                return Err(corrupt(
                    &segs[DE],
                    format!("delta CSR offsets do not span 0..{de}"),
                ));
            }
        }
        if edges.type_palette.len() > deu || in_keys.len() > deu {
            return Err(corrupt(
                &segs[DE],
                "edge directories longer than the edge count",
            ));
        }
        Ok(Delta {
            n,
            base_n,
            base_e,
            de,
            rows: rows as u32,
            strings,
            nodes,
            text,
            row_node,
            removed_raw,
            edges,
            in_keys,
            dropped_raw,
            removed: OnceLock::new(),
            dropped: OnceLock::new(),
            mask: OnceLock::new(),
            kinds: cache(NodeKind::ALL.len()),
            rels: cache(RelType::ALL.len()),
            roles: cache(Roles::NAMED.len()),
            touched: OnceLock::new(),
            files: OnceLock::new(),
        })
    }

    /// Removed node indexes (base nodes and dead appended slots), clipped to the index space.
    pub(crate) fn removed(&self, a: &Artifact) -> &RoaringBitmap {
        self.removed.get_or_init(|| {
            // Damaged bytes read as "nothing removed"; verify reports them.
            let mut bm = decode(self.removed_raw.bytes(a.pay(DN))).unwrap_or_default();
            bm.remove_range(self.n..);
            bm
        })
    }

    /// Dropped base edge indexes, clipped to the base's edges.
    pub(crate) fn dropped(&self, a: &Artifact) -> &RoaringBitmap {
        self.dropped.get_or_init(|| {
            let mut bm = decode(self.dropped_raw.bytes(a.pay(DE))).unwrap_or_default();
            bm.remove_range(self.base_e..);
            bm
        })
    }

    /// The serialized tombstone bitmaps (for `verify`).
    pub(crate) fn raw_tombstones<'a>(&self, a: &'a Artifact) -> (&'a [u8], &'a [u8]) {
        (
            self.removed_raw.bytes(a.pay(DN)),
            self.dropped_raw.bytes(a.pay(DE)),
        )
    }

    /// Base rows hidden by the delta: removed, or superseded by a delta row.
    pub(crate) fn mask(&self, a: &Artifact) -> &RoaringBitmap {
        self.mask.get_or_init(|| {
            let p = a.pay(DN);
            let mut bm = self.removed(a).clone();
            bm.remove_range(self.base_n..);
            for r in 0..self.rows as usize {
                let v = self.row_node.get32(p, r);
                if v < self.base_n {
                    bm.insert(v);
                }
            }
            bm
        })
    }

    /// The delta row of node `i`, if the delta has one.
    #[inline]
    pub(crate) fn row_of(&self, a: &Artifact, i: u32) -> Option<u32> {
        if self.rows == 0 || (i < self.base_n && !self.mask(a).contains(i)) {
            return None;
        }
        let p = a.pay(DN);
        let (mut lo, mut hi) = (0usize, self.rows as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.row_node.get32(p, mid).cmp(&i) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// Node indexes of the rows with id `target`, ascending.
    pub(crate) fn rows_with_id<'a>(
        &'a self,
        a: &'a Artifact,
        target: &'a [u8],
    ) -> impl Iterator<Item = u32> + 'a {
        self.rows_with_id_from(a, target, 0).1
    }

    /// [`Delta::rows_with_id`], searching from position `from` of the delta id index
    /// (every id before it must be below `target`); also returns where the run starts.
    pub(crate) fn rows_with_id_from<'a>(
        &'a self,
        a: &'a Artifact,
        target: &'a [u8],
        from: usize,
    ) -> (usize, impl Iterator<Item = u32> + 'a) {
        let (p, ix) = (a.pay(DN), &self.nodes.id_index);
        let row = move |k: usize| ix.get32(p, k);
        let lo = crate::cursor::run_end(from.min(ix.len()), ix.len(), |k| {
            self.node(a, row(k)).cmp_id(target).is_lt()
        });
        let rows = (lo..ix.len())
            .map(row)
            .take_while(move |&r| self.node(a, r).cmp_id(target).is_eq())
            .map(move |r| self.row_node.get32(p, r as usize));
        (lo, rows)
    }

    fn node<'a>(&'a self, a: &'a Artifact, r: u32) -> crate::NodeRef<'a> {
        a.delta_node(self, r, self.row_node.get32(a.pay(DN), r as usize))
    }

    /// Positions `first..end` of the delta name index: `before(name)` holds before `first`,
    /// `upto(name)` holds before `end`.
    pub(crate) fn name_range(
        &self,
        a: &Artifact,
        before: impl Fn(&[u8]) -> bool,
        upto: impl Fn(&[u8]) -> bool,
    ) -> std::ops::Range<usize> {
        self.name_range_from(a, before, upto, 0)
    }

    /// [`Delta::name_range`], searching from position `from` (`before` must hold for
    /// every position before it).
    pub(crate) fn name_range_from(
        &self,
        a: &Artifact,
        before: impl Fn(&[u8]) -> bool,
        upto: impl Fn(&[u8]) -> bool,
        from: usize,
    ) -> std::ops::Range<usize> {
        let ix = &self.nodes.name_index;
        let holds = |f: &dyn Fn(&[u8]) -> bool, k: usize| {
            f(self.node(a, ix.get32(a.pay(DN), k)).name().as_bytes())
        };
        let first = crate::cursor::run_end(from.min(ix.len()), ix.len(), |k| holds(&before, k));
        // The run of matching names is usually short: gallop to its end from its start.
        first..crate::cursor::run_end(first, ix.len(), |k| holds(&upto, k))
    }

    /// (row, node index) at position `k` of the delta name index.
    pub(crate) fn name_index_row(&self, a: &Artifact, k: usize) -> (u32, u32) {
        let p = a.pay(DN);
        let r = self.nodes.name_index.get32(p, k);
        (r, self.row_node.get32(p, r as usize))
    }

    /// Delta edge indexes leaving row `r`.
    pub(crate) fn out_range(&self, a: &Artifact, r: u32) -> std::ops::Range<u32> {
        let (p, o) = (a.pay(DE), &self.edges.out_offsets);
        let de = u64::from(self.de);
        let x = o.get(p, r as usize).min(de);
        let y = o.get(p, r as usize + 1).clamp(x, de);
        x as u32..y as u32
    }

    /// Positions in the delta in-permutation of the edges into node `v`.
    pub(crate) fn in_range(&self, a: &Artifact, v: u32) -> std::ops::Range<u32> {
        let p = a.pay(DE);
        let keys = &self.in_keys;
        let (mut lo, mut hi) = (0usize, keys.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match keys.get32(p, mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let o = &self.edges.in_offsets;
                    let de = u64::from(self.de);
                    let x = o.get(p, mid).min(de);
                    let y = o.get(p, mid + 1).clamp(x, de);
                    return x as u32..y as u32;
                }
            }
        }
        0..0
    }

    pub(crate) fn in_perm(&self, a: &Artifact, k: u32) -> u32 {
        self.edges
            .in_perm
            .get32(a.pay(DE), k as usize)
            .min(self.de.saturating_sub(1))
    }

    /// The node index of the source of delta edge `k`.
    pub(crate) fn edge_src(&self, a: &Artifact, k: u32) -> u32 {
        let p = a.pay(DE);
        let r = block_search(
            &self.edges.out_offsets,
            &self.edges.block_src,
            p,
            self.rows,
            k,
        );
        self.row_node.get32(a.pay(DN), r as usize)
    }

    /// (row, node index) of every row.
    pub(crate) fn row_nodes<'a>(
        &'a self,
        a: &'a Artifact,
    ) -> impl Iterator<Item = (u32, u32)> + 'a {
        let p = a.pay(DN);
        (0..self.rows).map(move |r| (r, self.row_node.get32(p, r as usize)))
    }

    pub(crate) fn merged_kind<'a>(
        &'a self,
        a: &'a Artifact,
        k: NodeKind,
        base: &RoaringBitmap,
    ) -> &'a RoaringBitmap {
        let Some(slot) = self.kinds.get(usize::from(k.code())) else {
            return base_or_empty();
        };
        slot.get_or_init(|| {
            let mut bm = base - self.mask(a);
            for (r, v) in self.row_nodes(a) {
                if self.node(a, r).kind() == k && !self.removed(a).contains(v) {
                    bm.insert(v);
                }
            }
            bm
        })
    }

    pub(crate) fn merged_rel<'a>(
        &'a self,
        a: &'a Artifact,
        rel: RelType,
        base: &RoaringBitmap,
    ) -> &'a RoaringBitmap {
        let Some(slot) = self.rels.get(usize::from(rel.code())) else {
            return base_or_empty();
        };
        slot.get_or_init(|| {
            let mut bm = base - self.dropped(a);
            bm.extend(
                (0..self.de)
                    .filter(|&k| a.edge(crate::EdgeIdx(self.base_e + k)).rel() == rel)
                    .map(|k| self.base_e + k),
            );
            bm
        })
    }

    pub(crate) fn merged_role<'a>(
        &'a self,
        a: &'a Artifact,
        bit: usize,
        base: &RoaringBitmap,
    ) -> &'a RoaringBitmap {
        let Some(slot) = self.roles.get(bit) else {
            return base_or_empty();
        };
        slot.get_or_init(|| {
            let mut bm = base - self.dropped(a);
            bm.extend(
                (0..self.de)
                    .filter(|&k| {
                        a.edge(crate::EdgeIdx(self.base_e + k)).roles().0 & (1 << bit) != 0
                    })
                    .map(|k| self.base_e + k),
            );
            bm
        })
    }

    /// Merged per-file bitmaps of every file the delta touches (it has rows there, or it
    /// hides base rows there); other files read the base's bitmap unchanged. Empty
    /// bitmaps mark files that no longer have nodes.
    pub(crate) fn touched_files(&self, a: &Artifact) -> &BTreeMap<u32, RoaringBitmap> {
        self.touched.get_or_init(|| {
            let mut touched: BTreeMap<u32, RoaringBitmap> = BTreeMap::new();
            for b in self.mask(a) {
                let f = a.base_node(b).file_sid().0;
                if !a.string(StrId(f)).is_empty() && !touched.contains_key(&f) {
                    let bm = a.base_file_bitmap(f).cloned().unwrap_or_default();
                    touched.insert(f, bm - self.mask(a));
                }
            }
            for (r, v) in self.row_nodes(a) {
                let f = self.node(a, r).file_sid().0;
                if a.string(StrId(f)).is_empty() {
                    continue;
                }
                let bm = touched.entry(f).or_insert_with(|| {
                    a.base_file_bitmap(f).cloned().unwrap_or_default() - self.mask(a)
                });
                bm.insert(v);
            }
            touched
        })
    }

    /// String ids of every file with a node, ordered by text.
    pub(crate) fn files(&self, a: &Artifact) -> &[u32] {
        self.files.get_or_init(|| {
            let touched = self.touched_files(a);
            let bp = a.bp();
            let keys = &a.bitmaps.file_keys;
            let mut out: Vec<u32> = (0..keys.len())
                .map(|k| keys.get32(bp, k))
                .filter(|s| touched.get(s).is_none_or(|bm| !bm.is_empty()))
                .collect();
            let base_keys: std::collections::HashSet<u32> = out.iter().copied().collect();
            out.extend(
                touched
                    .iter()
                    .filter(|(s, bm)| !bm.is_empty() && !base_keys.contains(s))
                    .map(|(s, _)| *s),
            );
            out.sort_by_cached_key(|x| a.string_bytes(StrId(*x)));
            out.dedup();
            out
        })
    }
}

fn base_or_empty() -> &'static RoaringBitmap {
    &crate::bitmaps::EMPTY
}

#[cfg(test)]
#[path = "delta_tests.rs"]
mod tests;
