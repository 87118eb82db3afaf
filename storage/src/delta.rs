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

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use batho_schema::{NodeKind, RelType, Roles};
use roaring::RoaringBitmap;

use crate::bitmaps::decode;
use crate::column::{BytesCol, ColumnTable, SegmentWriter, UIntCol};
use crate::error::{Result, StorageError};
use crate::format::{
    SEGMENT_HEADER_LEN, SegmentKind, cmp_parts, edges_col, nodes_col, strings_col,
};
use crate::fragment::{GraphFragment, Plan, copy_node, node_input};
use crate::input::{EdgeInput, GraphBuilder, NodeIdx, StrId};
use crate::manifest::Layer;
use crate::reader::{Artifact, EdgeCols, NodeCols, Segment, StringCols, block_search};
use crate::writer::{BuiltLayer, CONTENT_HASH_LEN, is_composed, palette_of};

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
    pub(crate) strings: StringCols,
    pub(crate) nodes: NodeCols,
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
        let strings = StringCols {
            offsets: st.uint(strings_col::OFFSETS, None)?,
            bytes: st.bytes(strings_col::BYTES)?,
        };
        let (so, blen) = (&strings.offsets, strings.bytes.bytes(pay(DS)).len() as u64);
        if so.len() == 0
            || so.get(pay(DS), 0) != 0
            || so.get(pay(DS), so.len() - 1) != blen
            || so.len() as u64 > blen + 2
            || u32::try_from(so.len())
                .ok()
                .and_then(|c| c.checked_add(base_s))
                .is_none()
        {
            return Err(corrupt(
                &segs[DS],
                "string offsets do not span the string bytes",
            ));
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
            content_hash: nt.bytes(nodes_col::CONTENT_HASH)?,
            id: c(nodes_col::ID)?,
            name: c(nodes_col::NAME)?,
            qualified_name: c(nodes_col::QUALIFIED_NAME)?,
            file: c(nodes_col::FILE)?,
            signature: c(nodes_col::SIGNATURE)?,
            id_index: c(nodes_col::ID_INDEX)?,
            name_index: c(nodes_col::NAME_INDEX)?,
        };
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

    pub(crate) fn string_count(&self) -> u32 {
        self.strings.offsets.len().saturating_sub(1) as u32
    }

    pub(crate) fn string_bytes<'a>(&self, p: &'a [u8], k: u32) -> &'a [u8] {
        let o = &self.strings.offsets;
        let (a, b) = (o.get(p, k as usize), o.get(p, k as usize + 1));
        self.strings
            .bytes
            .bytes(p)
            .get(a as usize..b as usize)
            .unwrap_or(&[])
    }

    pub(crate) fn find_string(&self, p: &[u8], t: &[u8]) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, self.string_count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.string_bytes(p, mid).cmp(t) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
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
        let (p, ix) = (a.pay(DN), &self.nodes.id_index);
        let row = move |k: usize| ix.get32(p, k);
        let (mut lo, mut hi) = (0usize, ix.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = row(mid);
            if self.node(a, r).cmp_id(target).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo..ix.len())
            .map(move |k| row(k))
            .take_while(move |&r| self.node(a, r).cmp_id(target).is_eq())
            .map(move |r| self.row_node.get32(p, r as usize))
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
        let ix = &self.nodes.name_index;
        let part = |f: &dyn Fn(&[u8]) -> bool| {
            let (mut lo, mut hi) = (0usize, ix.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let r = ix.get32(a.pay(DN), mid);
                if f(self.node(a, r).name().as_bytes()) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        part(&before)..part(&upto)
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
    fn row_nodes<'a>(&'a self, a: &'a Artifact) -> impl Iterator<Item = (u32, u32)> + 'a {
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
            out.sort_by(|x, y| a.string_bytes(StrId(*x)).cmp(a.string_bytes(StrId(*y))));
            out.dedup();
            out
        })
    }
}

fn base_or_empty() -> &'static RoaringBitmap {
    &crate::bitmaps::EMPTY
}

/// A delta layer to write, relative to a base layer.
#[derive(Debug)]
pub(crate) struct DeltaInput {
    /// Node index space after the delta.
    pub(crate) n: u32,
    /// Row `k` is node `k` of this builder.
    pub(crate) g: GraphBuilder,
    /// The node index of each row, strictly ascending.
    pub(crate) row_node: Vec<u32>,
    /// Edges leaving rows: `src` is a row, `dst` a node index; `file` interned in `g`.
    pub(crate) edges: Vec<EdgeInput>,
    /// Removed node indexes.
    pub(crate) removed: RoaringBitmap,
    /// Dropped base edge indexes.
    pub(crate) dropped: RoaringBitmap,
}

impl DeltaInput {
    /// Whether this delta is large enough, relative to its base, that a fresh base is the
    /// better commit: `percent` of the base's nodes or edges.
    pub(crate) fn exceeds(&self, base_n: u32, base_e: u32, percent: u32) -> bool {
        let removed_base = self.removed.range_cardinality(..base_n);
        let nodes = self.row_node.len() as u64 + removed_base;
        let edges = self.edges.len() as u64 + self.dropped.len();
        let pct = u64::from(percent);
        nodes * 100 > u64::from(base_n) * pct || edges * 100 > u64::from(base_e) * pct
    }
}

/// The cumulative delta after laying `fragment` over `m` (whose own delta, if any, is
/// folded in: its rows and edges survive unless the plan removes or drops them).
pub(crate) fn delta_input(m: &Artifact, fragment: &GraphFragment, plan: &Plan) -> DeltaInput {
    enum Src {
        Old(u32),
        Frag(u32),
    }
    let fg = &fragment.graph;
    let base_e = m.e;
    let mut rows: BTreeMap<u32, Src> = BTreeMap::new();
    let mut removed = RoaringBitmap::new();
    let mut dropped = RoaringBitmap::new();
    if let Some(d) = &m.delta {
        for (_, v) in d.row_nodes(m) {
            if !plan.removed.contains(v) {
                rows.insert(v, Src::Old(v));
            }
        }
        removed |= d.removed(m);
        dropped |= d.dropped(m);
    }
    for &(v, i) in &plan.overrides {
        rows.insert(v, Src::Frag(i));
    }
    for (k, &i) in plan.new_nodes.iter().enumerate() {
        rows.insert(plan.base_n + k as u32, Src::Frag(i));
    }
    removed |= &plan.removed;
    let mut pd = plan.dropped.clone();
    pd.remove_range(base_e..);
    dropped |= pd;

    let mut g = GraphBuilder::new();
    let mut row_node = Vec::with_capacity(rows.len());
    let mut row_of: HashMap<u32, u32> = HashMap::with_capacity(rows.len());
    for (&v, src) in &rows {
        let input = match src {
            Src::Old(v) => node_input(&mut g, m.node(NodeIdx(*v))),
            Src::Frag(i) => copy_node(&mut g, fg, &fg.nodes[*i as usize]),
        };
        row_of.insert(v, g.add_node(input).0);
        row_node.push(v);
    }
    let mut edges = Vec::new();
    if let Some(d) = &m.delta {
        for k in 0..d.de {
            let e = base_e + k;
            if plan.dropped.contains(e) {
                continue;
            }
            let edge = m.edge(crate::EdgeIdx(e));
            // Old delta edges leave old rows; a row that is gone took its edges with it.
            let Some(&src) = row_of.get(&edge.src().0) else {
                continue;
            };
            let file = g.intern(edge.file());
            edges.push(EdgeInput {
                src: NodeIdx(src),
                dst: edge.dst(),
                rel: edge.rel(),
                roles: edge.roles(),
                confidence: edge.confidence(),
                strategy: edge.strategy(),
                file,
                line: edge.line(),
            });
        }
    }
    for e in &fg.edges {
        let (s, d) = (
            plan.frag_map[e.src.0 as usize],
            plan.frag_map[e.dst.0 as usize],
        );
        let Some(&src) = row_of.get(&s) else { continue };
        let file = g.intern(fg.str(e.file));
        edges.push(EdgeInput {
            src: NodeIdx(src),
            dst: NodeIdx(d),
            file,
            ..e.clone()
        });
    }
    DeltaInput {
        n: plan.base_n + plan.new_nodes.len() as u32,
        g,
        row_node,
        edges,
        removed,
        dropped,
    }
}

fn serialize(bm: &RoaringBitmap) -> Vec<u8> {
    let mut out = Vec::with_capacity(bm.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bm.serialize_into(&mut out);
    out
}

/// Encodes `d` into the three delta segments, over the base layer of `m`.
pub(crate) fn build_delta(m: &Artifact, d: &DeltaInput, db_uuid: [u8; 16]) -> Result<BuiltLayer> {
    let g = &d.g;
    let rows = g.nodes.len();
    let de = d.edges.len();
    if u32::try_from(de)
        .ok()
        .and_then(|x| x.checked_add(m.e))
        .is_none()
    {
        return Err(StorageError::InvalidInput {
            detail: "delta edges exceed the u32 limit".into(),
        });
    }
    let base_s = m.base_string_count();
    // Strings: the base's id where it has the text, else a new delta string.
    let composed: Vec<bool> = g
        .nodes
        .iter()
        .map(|x| is_composed(g.str(x.id), g.str(x.file), g.str(x.qualified_name)))
        .collect();
    let mut used: Vec<StrId> = Vec::new();
    for (x, c) in g.nodes.iter().zip(&composed) {
        used.extend([x.name, x.qualified_name, x.file, x.signature]);
        if !c {
            used.push(x.id);
        }
    }
    used.extend(d.edges.iter().map(|e| e.file));
    let mut remap: HashMap<StrId, u32> = HashMap::new();
    let mut fresh: Vec<&str> = Vec::new();
    for s in used {
        if remap.contains_key(&s) {
            continue;
        }
        match m.base_find_string(g.str(s)) {
            Some(b) => {
                remap.insert(s, b.0);
            }
            None => {
                remap.insert(s, u32::MAX);
                fresh.push(g.str(s));
            }
        }
    }
    fresh.sort_unstable();
    fresh.dedup();
    for (s, v) in remap.iter_mut() {
        if *v == u32::MAX {
            let k = fresh.binary_search(&g.str(*s)).unwrap_or(0);
            *v = base_s + k as u32;
        }
    }
    let r = |s: StrId| u64::from(remap[&s]);

    let mut sw = SegmentWriter::default();
    let mut offsets = vec![0u64];
    let mut bytes = Vec::new();
    for s in &fresh {
        bytes.extend_from_slice(s.as_bytes());
        offsets.push(bytes.len() as u64);
    }
    sw.add_uint(strings_col::OFFSETS, offsets.len(), |i| offsets[i]);
    sw.add_bytes(strings_col::BYTES, &bytes);
    let strings = sw.finish(SegmentKind::DeltaStrings as u8, db_uuid);

    let nodes = &g.nodes;
    let mut nw = SegmentWriter::default();
    let node_type = |i: usize| {
        let x = &nodes[i];
        u64::from(x.kind.code()) | u64::from(x.flags.0) << 8 | u64::from(x.language.code()) << 16
    };
    let palette = palette_of((0..rows).map(node_type));
    nw.add_uint(nodes_col::TYPE, rows, |i| {
        palette.binary_search(&node_type(i)).map_or(0, |p| p as u64)
    });
    nw.add_uint(nodes_col::TYPE_PALETTE, palette.len(), |p| palette[p]);
    nw.add_uint(nodes_col::START_LINE, rows, |i| {
        u64::from(nodes[i].start_line)
    });
    nw.add_uint(nodes_col::LINE_SPAN, rows, |i| {
        u64::from(nodes[i].end_line.wrapping_sub(nodes[i].start_line))
    });
    nw.add_uint(nodes_col::START_BYTE, rows, |i| nodes[i].start_byte);
    nw.add_uint(nodes_col::BYTE_SPAN, rows, |i| {
        nodes[i].end_byte.wrapping_sub(nodes[i].start_byte)
    });
    nw.add_uint(nodes_col::COMMUNITY, rows, |i| {
        u64::from(nodes[i].community)
    });
    let hashes: Vec<u8> = nodes
        .iter()
        .flat_map(|x| x.content_hash[..CONTENT_HASH_LEN].iter().copied())
        .collect();
    nw.add_bytes(nodes_col::CONTENT_HASH, &hashes);
    nw.add_uint(nodes_col::ID, rows, |i| {
        if composed[i] { 0 } else { r(nodes[i].id) + 1 }
    });
    nw.add_uint(nodes_col::NAME, rows, |i| r(nodes[i].name));
    nw.add_uint(nodes_col::QUALIFIED_NAME, rows, |i| {
        let q = r(nodes[i].qualified_name);
        if q == r(nodes[i].name) { 0 } else { q + 1 }
    });
    nw.add_uint(nodes_col::FILE, rows, |i| r(nodes[i].file));
    nw.add_uint(nodes_col::SIGNATURE, rows, |i| r(nodes[i].signature));
    let parts = |i: u32| {
        let x = &nodes[i as usize];
        if composed[i as usize] {
            [
                g.str(x.file).as_bytes(),
                b":".as_slice(),
                g.str(x.qualified_name).as_bytes(),
            ]
        } else {
            [g.str(x.id).as_bytes(), b"".as_slice(), b"".as_slice()]
        }
    };
    let mut idx: Vec<u32> = (0..rows as u32).collect();
    idx.sort_unstable_by(|&a, &b| cmp_parts(parts(a), parts(b)).then(a.cmp(&b)));
    nw.add_uint(nodes_col::ID_INDEX, rows, |i| u64::from(idx[i]));
    idx.sort_unstable_by(|&a, &b| {
        g.str(nodes[a as usize].name)
            .cmp(g.str(nodes[b as usize].name))
            .then(a.cmp(&b))
    });
    nw.add_uint(nodes_col::NAME_INDEX, rows, |i| u64::from(idx[i]));
    nw.add_uint(nodes_col::ROW_NODE, rows, |i| u64::from(d.row_node[i]));
    nw.add_bytes(nodes_col::REMOVED, &serialize(&d.removed));
    let nseg = nw.finish(SegmentKind::DeltaNodes as u8, db_uuid);

    let edges = &d.edges;
    let mut eo: Vec<u32> = (0..de as u32).collect();
    eo.sort_unstable_by_key(|&i| {
        let x = &edges[i as usize];
        (x.src.0, x.rel.code(), x.dst.0, i)
    });
    let ed = |k: usize| &edges[eo[k] as usize];
    let mut out_off = vec![0u64; rows + 1];
    for x in edges {
        out_off[x.src.0 as usize + 1] += 1;
    }
    for i in 0..rows {
        out_off[i + 1] += out_off[i];
    }
    let edge_type = |x: &EdgeInput| {
        u64::from(x.rel.code())
            | u64::from(x.roles.0) << 8
            | u64::from(x.strategy.code()) << 16
            | u64::from(x.confidence.to_bits()) << 32
    };
    let palette = palette_of(edges.iter().map(edge_type));
    let mut ew = SegmentWriter::default();
    ew.add_uint(edges_col::OUT_OFFSETS, rows + 1, |i| out_off[i]);
    ew.add_uint(edges_col::DST, de, |k| u64::from(ed(k).dst.0));
    ew.add_uint(edges_col::TYPE, de, |k| {
        palette
            .binary_search(&edge_type(ed(k)))
            .map_or(0, |p| p as u64)
    });
    ew.add_uint(edges_col::TYPE_PALETTE, palette.len(), |p| palette[p]);
    ew.add_uint(
        edges_col::BLOCK_SRC,
        de.div_ceil(edges_col::SRC_BLOCK),
        |b| u64::from(ed(b * edges_col::SRC_BLOCK).src.0),
    );
    ew.add_uint(edges_col::LINE, de, |k| u64::from(ed(k).line));
    ew.add_uint(edges_col::FILE_OVERRIDE, de, |k| {
        let x = ed(k);
        let own = r(x.file);
        if own == r(nodes[x.src.0 as usize].file) {
            0
        } else {
            own + 1
        }
    });
    let mut by_dst: Vec<u32> = (0..de as u32).collect();
    by_dst.sort_by_key(|&k| (ed(k as usize).dst.0, k));
    let mut keys: Vec<u32> = Vec::new();
    let mut in_off = vec![0u64];
    for (pos, &k) in by_dst.iter().enumerate() {
        let v = ed(k as usize).dst.0;
        if keys.last() != Some(&v) {
            if !keys.is_empty() {
                in_off.push(pos as u64);
            }
            keys.push(v);
        }
    }
    in_off.push(de as u64);
    if keys.is_empty() {
        in_off = vec![0];
    }
    ew.add_uint(edges_col::IN_KEYS, keys.len(), |i| u64::from(keys[i]));
    ew.add_uint(edges_col::IN_OFFSETS, in_off.len(), |i| in_off[i]);
    ew.add_uint(edges_col::IN_PERM, de, |k| u64::from(by_dst[k]));
    ew.add_bytes(edges_col::DROPPED, &serialize(&d.dropped));
    let eseg = ew.finish(SegmentKind::DeltaEdges as u8, db_uuid);

    let live_nodes = u64::from(d.n) - d.removed.len();
    let live_edges = u64::from(m.e) - d.dropped.len() + de as u64;
    Ok(BuiltLayer {
        segments: vec![
            (SegmentKind::DeltaStrings, strings),
            (SegmentKind::DeltaNodes, nseg),
            (SegmentKind::DeltaEdges, eseg),
        ],
        node_count: u64::from(d.n),
        edge_count: u64::from(m.e) + de as u64,
        live_nodes,
        live_edges,
    })
}

#[cfg(test)]
#[path = "delta_tests.rs"]
mod tests;
