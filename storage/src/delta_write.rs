//! Writing delta layers: the cumulative delta after a fragment (`delta_input`), its
//! encoding into the three delta segments (`build_delta`), and reading a delta's input
//! back from its primary columns (`rederive`, for `fix`). Layout: `docs/format.md` §9.

use std::collections::{BTreeMap, HashMap};

use roaring::RoaringBitmap;

use crate::column::SegmentWriter;
use crate::error::{Result, StorageError};
use crate::format::{SegmentKind, cmp_parts, edges_col, nodes_col};
use crate::fragment::{GraphFragment, Plan, copy_node, node_input};
use crate::input::CONTENT_HASH_LEN;
use crate::input::{EdgeInput, GraphBuilder, NodeIdx, SitesId, StrId};
use crate::reader::Artifact;
use crate::text::build::EncodedText;
use crate::writer::{BuiltLayer, LayerCounts, add_out_edge_columns, palette_of};

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
        // An empty base counts as one, so a generous limit still allows a small delta.
        let over = |x: u64, base: u32| x * 100 > u64::from(base.max(1)).saturating_mul(pct);
        over(nodes, base_n) || over(edges, base_e)
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
    let reverted: RoaringBitmap = plan.reverted.iter().map(|&(b, _)| b).collect();
    if let Some(d) = &m.delta {
        for (_, v) in d.row_nodes(m) {
            if !plan.removed.contains(v) && !reverted.contains(v) {
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
    dropped -= &plan.undropped;

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
            let file = g.intern(&edge.file());
            let sites = edge.copy_sites_to(&mut g);
            edges.push(EdgeInput {
                src: NodeIdx(src),
                dst: edge.dst(),
                rel: edge.rel(),
                roles: edge.roles(),
                confidence: edge.confidence(),
                strategy: edge.strategy(),
                file,
                line: edge.line(),
                sites,
            });
        }
    }
    // A reverted node's edges are its base layer's, which are no longer dropped.
    let reverting: RoaringBitmap = plan.reverted.iter().map(|&(_, i)| i).collect();
    for e in &fg.edges {
        if plan.unchanged[e.src.0 as usize] || reverting.contains(e.src.0) {
            continue;
        }
        let (s, d) = (
            plan.frag_map[e.src.0 as usize],
            plan.frag_map[e.dst.0 as usize],
        );
        let Some(&src) = row_of.get(&s) else { continue };
        let file = g.intern(fg.str(e.file));
        let sites = copy_sites(&mut g, fg, e);
        edges.push(EdgeInput {
            src: NodeIdx(src),
            dst: NodeIdx(d),
            file,
            sites,
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

/// The input that wrote `a`'s delta layer, read back from its primary columns (rows,
/// edges, tombstones), so that `fix` can re-derive the delta segments' derived parts
/// (indexes, in-index, source hints) and restore them when the bytes match.
pub(crate) fn rederive(a: &Artifact) -> Option<DeltaInput> {
    let d = a.delta.as_ref()?;
    let mut g = GraphBuilder::new();
    let mut row_node = Vec::with_capacity(d.rows as usize);
    for (r, v) in d.row_nodes(a) {
        let input = node_input(&mut g, a.delta_node(d, r, v));
        g.add_node(input);
        row_node.push(v);
    }
    let mut edges = Vec::with_capacity(d.de as usize);
    for r in 0..d.rows {
        for k in d.out_range(a, r) {
            let e = a.edge_with_src(d.base_e + k, row_node[r as usize]);
            let file = g.intern(&e.file());
            let sites = e.copy_sites_to(&mut g);
            edges.push(EdgeInput {
                src: NodeIdx(r),
                dst: e.dst(),
                rel: e.rel(),
                roles: e.roles(),
                confidence: e.confidence(),
                strategy: e.strategy(),
                file,
                line: e.line(),
                sites,
            });
        }
    }
    Some(DeltaInput {
        n: d.n,
        g,
        row_node,
        edges,
        removed: d.removed(a).clone(),
        dropped: d.dropped(a).clone(),
    })
}

/// Records in `to` the use sites of `edge`, an edge of `from`.
pub(crate) fn copy_sites(to: &mut GraphBuilder, from: &GraphBuilder, edge: &EdgeInput) -> SitesId {
    if edge.sites == SitesId::ONE {
        return SitesId::ONE;
    }
    let sites = from.sites(edge);
    to.add_sites(sites.count, sites.lines)
}

fn serialize(bm: &RoaringBitmap) -> Vec<u8> {
    let mut out = Vec::with_capacity(bm.serialized_size());
    // Writing into a Vec cannot fail.
    let _ = bm.serialize_into(&mut out);
    out
}

/// The live documents and their total length after the delta `d` over `m`'s base: the
/// base's, less its hidden nodes (removed or given a row), plus the rows (all live).
fn merged_text_stats(m: &Artifact, d: &DeltaInput, text: &EncodedText) -> (u64, u64) {
    let (base_docs, base_total) = m.text.stats(m.np());
    let mut hidden = d.removed.clone();
    hidden.remove_range(m.n..);
    hidden.extend(d.row_node.iter().copied().filter(|&v| v < m.n));
    let hidden_total: u64 = hidden.iter().map(|v| m.text.doc_len(m.np(), v)).sum();
    let docs = (base_docs + d.row_node.len() as u64).saturating_sub(hidden.len());
    (
        docs,
        (base_total + text.total_len()).saturating_sub(hidden_total),
    )
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
    let stored_ids: Vec<Option<StrId>> = g.nodes.iter().map(|x| g.stored_id(x)).collect();
    let mut used: Vec<StrId> = Vec::new();
    for (x, id) in g.nodes.iter().zip(&stored_ids) {
        used.extend([x.name, x.qualified_name, x.file, x.signature, x.doc]);
        used.extend(*id);
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

    let strings = crate::strings::encode_segment(&fresh, SegmentKind::DeltaStrings, db_uuid);

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
    nw.add_uint(nodes_col::START_BYTE, rows, |i| {
        u64::from(nodes[i].start_byte)
    });
    nw.add_uint(nodes_col::BYTE_SPAN, rows, |i| {
        u64::from(nodes[i].end_byte.wrapping_sub(nodes[i].start_byte))
    });
    nw.add_uint(nodes_col::COMMUNITY, rows, |i| {
        u64::from(nodes[i].community)
    });
    nw.add_uint(nodes_col::PAGERANK, rows, |i| u64::from(nodes[i].pagerank));
    let hashes: Vec<u8> = nodes
        .iter()
        .flat_map(|x| x.content_hash[..CONTENT_HASH_LEN].iter().copied())
        .collect();
    nw.add_bytes(nodes_col::CONTENT_HASH, &hashes);
    nw.add_uint(nodes_col::ID, rows, |i| {
        stored_ids[i].map_or(0, |s| r(s) + 1)
    });
    nw.add_uint(nodes_col::NAME, rows, |i| r(nodes[i].name));
    nw.add_uint(nodes_col::QUALIFIED_NAME, rows, |i| {
        let q = r(nodes[i].qualified_name);
        if q == r(nodes[i].name) { 0 } else { q + 1 }
    });
    nw.add_uint(nodes_col::FILE, rows, |i| r(nodes[i].file));
    nw.add_uint(nodes_col::SIGNATURE, rows, |i| r(nodes[i].signature));
    nw.add_uint(nodes_col::DOC, rows, |i| r(nodes[i].doc));
    let parts = |i: u32| g.id_parts(&nodes[i as usize]);
    let mut idx: Vec<u32> = (0..rows as u32).collect();
    idx.sort_unstable_by(|&a, &b| cmp_parts(parts(a), parts(b)).then(a.cmp(&b)));
    nw.add_values(nodes_col::ID_INDEX, &idx);
    idx.sort_unstable_by(|&a, &b| {
        g.str(nodes[a as usize].name)
            .cmp(g.str(nodes[b as usize].name))
            .then(a.cmp(&b))
    });
    nw.add_values(nodes_col::NAME_INDEX, &idx);
    nw.add_uint(nodes_col::ROW_NODE, rows, |i| u64::from(d.row_node[i]));
    nw.add_bytes(nodes_col::REMOVED, &serialize(&d.removed));
    let text = crate::text::build::encode_text_index(g, &|s| remap[&s]);
    let (docs, total_len) = merged_text_stats(m, d, &text);
    text.add_columns(&mut nw, docs, total_len);
    let nseg = nw.finish(SegmentKind::DeltaNodes as u8, db_uuid);

    let edges = &d.edges;
    let mut ew = SegmentWriter::default();
    let eo = add_out_edge_columns(&mut ew, &d.g, edges, nodes, rows, r);
    let ed = |k: usize| &edges[eo[k] as usize];
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
    ew.add_values(edges_col::IN_KEYS, &keys);
    ew.add_uint(edges_col::IN_OFFSETS, in_off.len(), |i| in_off[i]);
    ew.add_values(edges_col::IN_PERM, &by_dst);
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
        counts: LayerCounts {
            node_count: u64::from(d.n),
            edge_count: u64::from(m.e) + de as u64,
            live_nodes,
            live_edges,
        },
    })
}
