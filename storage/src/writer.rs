//! Turns a [`GraphBuilder`] into the segment files of one base layer.
//!
//! The writer re-numbers strings so that the dictionary is sorted (string lookups become
//! binary searches and name/id indexes compare integers), keeps node indexes as the
//! builder assigned them, and sorts edges by (src, rel, dst) so that an edge's index is
//! its position in the out-CSR.

use std::collections::BTreeMap;

use batho_schema::{NodeKind, RelType, Roles};
use roaring::RoaringBitmap;

use crate::column::SegmentWriter;
use crate::error::{Result, StorageError};
use crate::format::{SegmentKind, bitmaps_col, cmp_parts, edges_col, nodes_col};
use crate::input::{
    CONTENT_HASH_LEN, EdgeInput, GraphBuilder, IdText, NodeInput, NodeScores, StrId,
};
use crate::order::{self, BY_BYTES, IdRow};

/// The encoded segments of one (delta) layer.
pub(crate) struct BuiltLayer {
    pub(crate) segments: Vec<(SegmentKind, Vec<u8>)>,
    pub(crate) counts: LayerCounts,
}

/// The counts a manifest layer and its run record carry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LayerCounts {
    /// Node and edge index spaces (the manifest layer's counts).
    pub(crate) node_count: u64,
    pub(crate) edge_count: u64,
    /// Nodes and edges of the graph after the layer (a delta's tombstones excluded).
    pub(crate) live_nodes: u64,
    pub(crate) live_edges: u64,
}

fn invalid(detail: String) -> StorageError {
    StorageError::InvalidInput { detail }
}

/// Encodes `g` into the four base segments, handing each to `sink` as soon as it is
/// encoded so that the caller can write and free it before the next one is built. The
/// nodes segment comes last: with `scores`, its community and pagerank columns are that
/// function's answer (one value per node) instead of the builder's, asked for only then,
/// so a caller can compute them on another thread while the other segments are encoded.
pub(crate) fn build_layer(
    g: &GraphBuilder,
    db_uuid: [u8; 16],
    scores: Option<&mut dyn FnMut() -> NodeScores>,
    sink: &mut dyn FnMut(SegmentKind, Vec<u8>) -> Result<()>,
) -> Result<LayerCounts> {
    let n = g.nodes.len();
    let e = g.edges.len();
    // Offsets are stored as values up to the edge count and indexes as u32.
    if u32::try_from(n).is_err() || u32::try_from(e).is_err() {
        return Err(invalid(format!(
            "{n} nodes / {e} edges exceed the u32 limit of format 1"
        )));
    }
    let ns = g.string_count();
    // The description is only formatted for the error: this runs for every node and edge.
    let check_str = |s: crate::input::StrId, what: &dyn Fn() -> String| {
        if (s.0 as usize) < ns {
            Ok(())
        } else {
            Err(invalid(format!(
                "{} refers to unknown string id {}",
                what(),
                s.0
            )))
        }
    };
    for (i, nd) in g.nodes.iter().enumerate() {
        if let IdText::Text(s) = nd.id {
            check_str(s, &|| format!("node {i} id"))?;
        }
        for (s, w) in [
            (nd.name, "name"),
            (nd.qualified_name, "qualified_name"),
            (nd.file, "file"),
            (nd.signature, "signature"),
            (nd.doc, "doc"),
        ] {
            check_str(s, &|| format!("node {i} {w}"))?;
        }
    }
    for (i, ed) in g.edges.iter().enumerate() {
        if ed.src.0 as usize >= n || ed.dst.0 as usize >= n {
            return Err(invalid(format!(
                "edge {i} ({} -> {}) refers to a node that does not exist ({n} nodes)",
                ed.src.0, ed.dst.0
            )));
        }
        check_str(ed.file, &|| format!("edge {i} file"))?;
    }

    // Strings: keep the referenced ones (plus ""), sorted by bytes. Ids of the usual
    // `file:qualified_name` shape are not stored but composed on read: ids are the largest
    // strings of a code graph.
    // `NO_STORED_ID` for a composed id: an `Option<StrId>` would take 8 bytes per node.
    let stored_ids: Vec<u32> = g
        .nodes
        .iter()
        .map(|nd| g.stored_id(nd).map_or(NO_STORED_ID, |s| s.0))
        .collect();
    let mut used = vec![false; ns];
    for (nd, &id) in g.nodes.iter().zip(&stored_ids) {
        for s in [nd.name, nd.qualified_name, nd.file, nd.signature, nd.doc] {
            used[s.0 as usize] = true;
        }
        if id != NO_STORED_ID {
            used[id as usize] = true;
        }
    }
    for ed in &g.edges {
        used[ed.file.0 as usize] = true;
    }
    // `u32::MAX` stands for the "" every dictionary holds, used or not.
    let text = |id: u32| if id == u32::MAX { "" } else { g.str(StrId(id)) };
    let ids = std::iter::once(u32::MAX).chain((0..ns as u32).filter(|&i| used[i as usize]));
    let order = order::by_text(ids, text);
    let mut remap = vec![0u32; ns];
    let mut sorted: Vec<&str> = Vec::with_capacity(order.len());
    for &old in &order {
        let s = text(old);
        if sorted.last() != Some(&s) {
            sorted.push(s);
        }
        if old != u32::MAX {
            remap[old as usize] = (sorted.len() - 1) as u32;
        }
    }
    // Peak memory is reached while the edges are encoded: nothing that is only needed for
    // an earlier segment may still be alive then (a kernel has millions of strings).
    drop((order, used));
    if u32::try_from(sorted.len()).is_err() {
        return Err(invalid("more than 2^32 distinct strings".into()));
    }
    let r = |s: StrId| u64::from(remap[s.0 as usize]);
    // The text index reads only the nodes and the file ids: it is built on its own
    // thread from here on, beside the strings, edges and bitmaps (its single-threaded
    // cost, ~20 s on a kernel, would otherwise come after them).
    std::thread::scope(|outer| {
        let text_thread =
            outer.spawn(|| crate::text::build::encode_text_index(g, &|s| remap[s.0 as usize]));

        sink(
            SegmentKind::Strings,
            crate::strings::encode_segment(&sorted, SegmentKind::Strings, db_uuid),
        )?;
        let dictionary_len = sorted.len();
        drop(sorted);

        let nodes = &g.nodes;

        let edges = &g.edges;
        let mut ew = SegmentWriter::default();
        let eo = add_out_edge_columns(&mut ew, g, edges, nodes, n, r);
        let ed = |k: usize| &edges[eo[k] as usize];
        // Offsets fit u32 (`e` was checked above); u64 would cost a kernel 60 MB at the peak.
        let mut in_off = vec![0u32; n + 1];
        for x in edges {
            in_off[x.dst.0 as usize + 1] += 1;
        }
        for i in 0..n {
            in_off[i + 1] += in_off[i];
        }
        let mut cursor: Vec<u32> = in_off[..n].to_vec();
        let mut perm = vec![0u32; e];
        for k in 0..e {
            let d = ed(k).dst.0 as usize;
            perm[cursor[d] as usize] = k as u32;
            cursor[d] += 1;
        }
        drop(cursor);
        ew.add_values(edges_col::IN_OFFSETS, &in_off);
        ew.add_values(edges_col::IN_PERM, &perm);
        drop((perm, in_off));
        sink(
            SegmentKind::Edges,
            ew.finish(SegmentKind::Edges as u8, db_uuid),
        )?;

        // Bitmaps. Members arrive in ascending order and are appended in batches: a single
        // push into a bitmap container first scans it for its maximum.
        let mut kinds: Vec<BitmapBuild> = (0..NodeKind::ALL.len())
            .map(|_| BitmapBuild::default())
            .collect();
        let mut file_rows: BTreeMap<u32, BitmapBuild> = BTreeMap::new();
        // A file's nodes come in runs: each run is looked up in `file_rows` once. The sorted
        // dictionary's string 0 is "", so a file key of 0 is a stub's empty file.
        let mut run: (u32, Vec<u32>) = (0, Vec::new());
        let flush = |file_rows: &mut BTreeMap<u32, BitmapBuild>, run: &mut (u32, Vec<u32>)| {
            if run.0 != 0 {
                let rows = file_rows.entry(run.0).or_default();
                for r in run.1.drain(..) {
                    rows.push(r)?;
                }
            }
            Ok::<(), StorageError>(())
        };
        for (i, nd) in nodes.iter().enumerate() {
            if let Some(b) = kinds.get_mut(usize::from(nd.kind.code())) {
                b.push(i as u32)?;
            }
            let file = remap[nd.file.0 as usize];
            if file != run.0 {
                flush(&mut file_rows, &mut run)?;
                run = (file, Vec::new());
            }
            if file != 0 {
                run.1.push(i as u32);
            }
        }
        flush(&mut file_rows, &mut run)?;
        let mut rels: Vec<BitmapBuild> = (0..RelType::ALL.len())
            .map(|_| BitmapBuild::default())
            .collect();
        let mut roles: Vec<BitmapBuild> = (0..Roles::NAMED.len())
            .map(|_| BitmapBuild::default())
            .collect();
        for k in 0..e {
            let x = ed(k);
            if let Some(b) = rels.get_mut(usize::from(x.rel.code())) {
                b.push(k as u32)?;
            }
            for (bit, b) in roles.iter_mut().enumerate() {
                if x.roles.0 & (1 << bit) != 0 {
                    b.push(k as u32)?;
                }
            }
        }
        drop(eo);
        let finish = |v: Vec<BitmapBuild>| {
            v.into_iter()
                .map(BitmapBuild::finish)
                .collect::<Result<Vec<_>>>()
        };
        let kinds = finish(kinds)?;
        let rels = finish(rels)?;
        let roles = finish(roles)?;
        let files: BTreeMap<u32, RoaringBitmap> = file_rows
            .into_iter()
            .map(|(k, b)| Ok((k, b.finish()?)))
            .collect::<Result<_>>()?;
        let mut data = Vec::new();
        let mut put = |bms: &[&RoaringBitmap]| -> Result<Vec<u64>> {
            let mut offs = vec![data.len() as u64];
            for bm in bms {
                bm.serialize_into(&mut data)
                    .map_err(|e| invalid(format!("cannot serialize bitmap: {e}")))?;
                offs.push(data.len() as u64);
            }
            Ok(offs)
        };
        let kind_offs = put(&kinds.iter().collect::<Vec<_>>())?;
        let rel_offs = put(&rels.iter().collect::<Vec<_>>())?;
        let role_offs = put(&roles.iter().collect::<Vec<_>>())?;
        let file_offs = put(&files.values().collect::<Vec<_>>())?;
        let file_keys: Vec<u32> = files.keys().copied().collect();
        let mut bw = SegmentWriter::default();
        bw.add_bytes(bitmaps_col::DATA, &data);
        bw.add_uint(bitmaps_col::KIND_OFFSETS, kind_offs.len(), |i| kind_offs[i]);
        bw.add_uint(bitmaps_col::REL_OFFSETS, rel_offs.len(), |i| rel_offs[i]);
        bw.add_uint(bitmaps_col::ROLE_OFFSETS, role_offs.len(), |i| role_offs[i]);
        bw.add_uint(bitmaps_col::FILE_KEYS, file_keys.len(), |i| {
            u64::from(file_keys[i])
        });
        bw.add_uint(bitmaps_col::FILE_OFFSETS, file_offs.len(), |i| file_offs[i]);

        sink(
            SegmentKind::Bitmaps,
            bw.finish(SegmentKind::Bitmaps as u8, db_uuid),
        )?;
        drop((kinds, rels, roles, files, data));

        // Nodes. The scores are asked for first: their computation's working memory is
        // gone once they are in, before this segment's own.
        let scores: Option<NodeScores> = match scores {
            Some(f) => {
                let s = f();
                for (what, len) in [
                    ("community ids", s.communities.len()),
                    ("pagerank scores", s.pagerank.len()),
                ] {
                    if len != n {
                        return Err(invalid(format!("{len} {what} for {n} nodes")));
                    }
                }
                Some(s)
            }
            None => None,
        };
        // The id and name indexes (sorts over every node: the id texts of a kernel take a
        // second) are made on a second thread while this one encodes the other columns; the
        // community detection that had that thread is done by now. The columns are added
        // in the same order either way, so the segment's bytes do not change.
        let mut nw = SegmentWriter::default();
        let (id_rows, idx) = std::thread::scope(|scope| {
            let indexes = scope.spawn(|| {
                let mut id_rows = id_sort_keys(g, &stored_ids, &remap);
                order::by_id_bytes(&mut id_rows, |i| g.id_parts(&nodes[i as usize]));
                let idx =
                    order::by_small_key(n, dictionary_len, |i| remap[nodes[i].name.0 as usize]);
                (id_rows, idx)
            });
            let node_type = |i: usize| {
                let x = &nodes[i];
                u64::from(x.kind.code())
                    | u64::from(x.flags.0) << 8
                    | u64::from(x.language.code()) << 16
            };
            let node_palette = palette_of((0..n).map(node_type));
            nw.add_uint(nodes_col::TYPE, n, |i| {
                node_palette
                    .binary_search(&node_type(i))
                    .map_or(0, |p| p as u64)
            });
            nw.add_uint(nodes_col::TYPE_PALETTE, node_palette.len(), |p| {
                node_palette[p]
            });
            nw.add_uint(nodes_col::START_LINE, n, |i| u64::from(nodes[i].start_line));
            nw.add_uint(nodes_col::LINE_SPAN, n, |i| {
                u64::from(nodes[i].end_line.wrapping_sub(nodes[i].start_line))
            });
            nw.add_uint(nodes_col::START_BYTE, n, |i| u64::from(nodes[i].start_byte));
            nw.add_uint(nodes_col::BYTE_SPAN, n, |i| {
                u64::from(nodes[i].end_byte.wrapping_sub(nodes[i].start_byte))
            });
            match &scores {
                Some(s) => {
                    nw.add_values(nodes_col::COMMUNITY, &s.communities);
                    nw.add_values(nodes_col::PAGERANK, &s.pagerank);
                }
                None => {
                    nw.add_uint(nodes_col::COMMUNITY, n, |i| u64::from(nodes[i].community));
                    nw.add_uint(nodes_col::PAGERANK, n, |i| u64::from(nodes[i].pagerank));
                }
            }
            let mut hashes = Vec::with_capacity(n * CONTENT_HASH_LEN);
            for nd in nodes {
                hashes.extend_from_slice(&nd.content_hash[..CONTENT_HASH_LEN]);
            }
            nw.add_bytes(nodes_col::CONTENT_HASH, &hashes);
            drop(hashes);
            nw.add_uint(nodes_col::ID, n, |i| match stored_ids[i] {
                NO_STORED_ID => 0,
                s => r(StrId(s)) + 1,
            });
            nw.add_uint(nodes_col::NAME, n, |i| r(nodes[i].name));
            nw.add_uint(nodes_col::QUALIFIED_NAME, n, |i| {
                let q = r(nodes[i].qualified_name);
                if q == r(nodes[i].name) { 0 } else { q + 1 }
            });
            nw.add_uint(nodes_col::FILE, n, |i| r(nodes[i].file));
            nw.add_uint(nodes_col::SIGNATURE, n, |i| r(nodes[i].signature));
            nw.add_uint(nodes_col::DOC, n, |i| r(nodes[i].doc));
            let (id_rows, idx) = indexes
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (id_rows, idx)
        });
        let text = text_thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        drop(stored_ids);
        nw.add_values(nodes_col::ID_INDEX, &id_rows);
        drop(id_rows);
        nw.add_values(nodes_col::NAME_INDEX, &idx);
        drop(idx);
        text.add_columns(&mut nw, n as u64, text.total_len());
        drop(text);
        sink(
            SegmentKind::Nodes,
            nw.finish(SegmentKind::Nodes as u8, db_uuid),
        )?;

        Ok(LayerCounts {
            node_count: n as u64,
            edge_count: e as u64,
            live_nodes: n as u64,
            live_edges: e as u64,
        })
    })
}

/// In the writer's list of stored ids: the node's id is composed on read.
const NO_STORED_ID: u32 = u32::MAX;

/// Integer sort keys for the id index, in the byte order of the id texts. For two ids of
/// the form `file:qualified_name` whose files hold no `:`, that order is the order of
/// `file + ":"`, then of the qualified names (whose sorted-dictionary ids `remap` gives), so
/// such an id's key is `rank(file + ":") << 32 | remap[qualified_name]`. Any other id gets
/// [`BY_BYTES`]. Integer comparisons instead of slices of three strings made the kernel's
/// id index (7 M ids, 23 comparisons each) several times faster to sort.
fn id_sort_keys(g: &GraphBuilder, stored_ids: &[u32], remap: &[u32]) -> Vec<IdRow> {
    // The distinct files of composed ids (a file's nodes are mostly consecutive), each
    // checked once.
    let mut files: Vec<StrId> = Vec::new();
    for (nd, id) in g.nodes.iter().zip(stored_ids) {
        if *id == NO_STORED_ID && files.last() != Some(&nd.file) {
            files.push(nd.file);
        }
    }
    files.sort_unstable();
    files.dedup();
    files.retain(|f| !g.str(*f).contains(':'));
    files.sort_unstable_by(|a, b| {
        cmp_parts(
            [g.str(*a).as_bytes(), b":", b""],
            [g.str(*b).as_bytes(), b":", b""],
        )
    });
    let rank: std::collections::HashMap<StrId, u64> = files
        .iter()
        .enumerate()
        .map(|(r, f)| (*f, r as u64))
        .collect();
    let mut last: Option<(StrId, Option<u64>)> = None;
    g.nodes
        .iter()
        .zip(stored_ids)
        .enumerate()
        .map(|(row, (nd, id))| {
            let row = row as u32;
            if *id != NO_STORED_ID {
                return IdRow { key: BY_BYTES, row };
            }
            let r = match last {
                Some((f, r)) if f == nd.file => r,
                _ => {
                    let r = rank.get(&nd.file).copied();
                    last = Some((nd.file, r));
                    r
                }
            };
            let key = r.map_or(BY_BYTES, |r| {
                r << 32 | u64::from(remap[nd.qualified_name.0 as usize])
            });
            IdRow { key, row }
        })
        .collect()
}

/// The four base segments of `g`, all held in memory (for repairs that compare them).
pub(crate) fn build_layer_segments(
    g: &GraphBuilder,
    db_uuid: [u8; 16],
) -> Result<Vec<(SegmentKind, Vec<u8>)>> {
    let mut segments = Vec::new();
    build_layer(g, db_uuid, None, &mut |kind, bytes| {
        segments.push((kind, bytes));
        Ok(())
    })?;
    segments.sort_by_key(|(kind, _)| *kind as u8);
    Ok(segments)
}

/// The distinct values of `values`, ascending. A graph has a few dozen distinct node and
/// edge types: a set avoids sorting one value per node or edge (millions on a kernel).
/// Writes the out-CSR columns every edge segment has, base or delta (OUT_OFFSETS over
/// `rows` sources, DST, TYPE with its palette, BLOCK_SRC, LINE, FILE_OVERRIDE, the use
/// sites of edges that fold several, whose lists `sites` holds), and returns
/// the edge order: (src, rel, dst), the original index breaking ties so parallel edges
/// are written deterministically. `code` maps a string to the id it is written as.
pub(crate) fn add_out_edge_columns(
    ew: &mut SegmentWriter,
    sites: &GraphBuilder,
    edges: &[EdgeInput],
    nodes: &[NodeInput],
    rows: usize,
    code: impl Fn(StrId) -> u64,
) -> Vec<u32> {
    let e = edges.len();
    let (eo, out_off) = order::edges_by_source(edges, rows);
    let ed = |k: usize| &edges[eo[k] as usize];
    let edge_type = |x: &EdgeInput| {
        u64::from(x.rel.code())
            | u64::from(x.roles.0 & 0xff) << 8
            | u64::from(x.roles.0 >> 8) << 24
            | u64::from(x.strategy.code()) << 16
            | u64::from(x.confidence.to_bits()) << 32
    };
    let palette = palette_of(edges.iter().map(edge_type));
    ew.add_values(edges_col::OUT_OFFSETS, &out_off);
    ew.add_uint(edges_col::DST, e, |k| u64::from(ed(k).dst.0));
    ew.add_uint(edges_col::TYPE, e, |k| {
        palette
            .binary_search(&edge_type(ed(k)))
            .map_or(0, |p| p as u64)
    });
    ew.add_uint(edges_col::TYPE_PALETTE, palette.len(), |p| palette[p]);
    ew.add_uint(
        edges_col::BLOCK_SRC,
        e.div_ceil(edges_col::SRC_BLOCK),
        |b| u64::from(ed(b * edges_col::SRC_BLOCK).src.0),
    );
    ew.add_uint(edges_col::LINE, e, |k| u64::from(ed(k).line));
    ew.add_uint(edges_col::FILE_OVERRIDE, e, |k| {
        let x = ed(k);
        let own = code(x.file);
        if own == code(nodes[x.src.0 as usize].file) {
            0
        } else {
            own + 1
        }
    });
    add_site_columns(ew, sites, e, ed);
    eo
}

/// SITE_OFFSETS and SITES of the edges in written order (`edge(k)` the `k`-th).
fn add_site_columns<'a>(
    ew: &mut SegmentWriter,
    sites: &'a GraphBuilder,
    e: usize,
    edge: impl Fn(usize) -> &'a EdgeInput,
) {
    // u32 like the other columns' copies: a kernel's lists hold a few million values.
    let mut offsets: Vec<u32> = Vec::with_capacity(e + 1);
    let mut lists: Vec<u32> = Vec::new();
    offsets.push(0);
    for k in 0..e {
        let x = edge(k);
        if x.sites != crate::input::SitesId::ONE {
            let s = sites.sites(x);
            lists.push(s.count);
            lists.extend_from_slice(s.lines);
        }
        offsets.push(u32::try_from(lists.len()).unwrap_or(u32::MAX));
    }
    ew.add_values(edges_col::SITE_OFFSETS, &offsets);
    ew.add_values(edges_col::SITES, &lists);
}

pub(crate) fn palette_of(values: impl Iterator<Item = u64>) -> Vec<u64> {
    let set: std::collections::HashSet<u64> = values.collect();
    let mut v: Vec<u64> = set.into_iter().collect();
    v.sort_unstable();
    v
}

/// A bitmap filled in ascending order through a small buffer.
#[derive(Default)]
struct BitmapBuild {
    bitmap: RoaringBitmap,
    pending: Vec<u32>,
}

impl BitmapBuild {
    const BATCH: usize = 4096;

    fn push(&mut self, v: u32) -> Result<()> {
        self.pending.push(v);
        if self.pending.len() >= Self::BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.bitmap
            .append(self.pending.drain(..))
            .map_err(|e| invalid(format!("bitmap members out of order: {e}")))?;
        Ok(())
    }

    fn finish(mut self) -> Result<RoaringBitmap> {
        self.flush()?;
        Ok(self.bitmap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_to_missing_nodes_are_invalid_input() {
        let mut g = GraphBuilder::new();
        g.edges.push(crate::input::EdgeInput {
            src: crate::NodeIdx(0),
            dst: crate::NodeIdx(1),
            rel: RelType::Calls,
            roles: Roles::NONE,
            confidence: 1.0,
            strategy: batho_schema::Strategy::Direct,
            file: crate::StrId(0),
            line: 0,
            sites: crate::input::SitesId::ONE,
        });
        assert!(matches!(
            build_layer_segments(&g, [0; 16]),
            Err(StorageError::InvalidInput { .. })
        ));
    }

    fn segments_with_late_scores(
        g: &GraphBuilder,
        scores: NodeScores,
    ) -> Result<Vec<(SegmentKind, Vec<u8>)>> {
        let mut segments = Vec::new();
        let mut scores = Some(scores);
        let mut late = || scores.take().unwrap_or_default();
        build_layer(g, [1; 16], Some(&mut late), &mut |kind, bytes| {
            segments.push((kind, bytes));
            Ok(())
        })?;
        segments.sort_by_key(|(kind, _)| *kind as u8);
        Ok(segments)
    }

    #[test]
    fn scores_handed_over_late_encode_as_the_builders_own() {
        let mut g = crate::fuzzing::sample_graph(7, 300, 900);
        let n = g.nodes.len() as u32;
        let scores = NodeScores {
            communities: (0..n).map(|i| i % 7 + 1).collect(),
            pagerank: (0..n).map(|i| i * 37 % 1000).collect(),
        };
        let late = segments_with_late_scores(&g, scores.clone()).unwrap();
        for (i, nd) in g.nodes.iter_mut().enumerate() {
            nd.community = scores.communities[i];
            nd.pagerank = scores.pagerank[i];
        }
        let own = build_layer_segments(&g, [1; 16]).unwrap();
        assert_eq!(late, own);
        let zeros = NodeScores {
            communities: vec![0; n as usize],
            pagerank: vec![0; n as usize],
        };
        let none = segments_with_late_scores(&g, zeros).unwrap();
        assert_ne!(none, own, "the late columns must replace the builder's");
        for bad in [
            NodeScores {
                communities: vec![1; 3],
                pagerank: scores.pagerank.clone(),
            },
            NodeScores {
                communities: scores.communities.clone(),
                pagerank: vec![1; 3],
            },
        ] {
            assert!(matches!(
                segments_with_late_scores(&g, bad),
                Err(StorageError::InvalidInput { .. })
            ));
        }
    }
}
