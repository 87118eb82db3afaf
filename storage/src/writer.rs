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
use crate::input::{EdgeInput, GraphBuilder, NodeInput, StrId};

/// Number of content-hash bytes kept per node (a 64-bit blake3 prefix). Everything that
/// compares a fresh hash with a stored one (patch change detection, facts-cache keys)
/// must truncate to this length.
pub const CONTENT_HASH_LEN: usize = 8;

/// A node's stored content hash.
pub type StoredHash = [u8; CONTENT_HASH_LEN];

/// The encoded segments of one base layer.
pub(crate) struct BuiltLayer {
    pub(crate) segments: Vec<(SegmentKind, Vec<u8>)>,
    /// Node and edge index spaces (the manifest layer's counts).
    pub(crate) node_count: u64,
    pub(crate) edge_count: u64,
    /// Nodes and edges of the graph after the layer (a delta's tombstones excluded).
    pub(crate) live_nodes: u64,
    pub(crate) live_edges: u64,
}

/// Whether `id` is exactly `file + ":" + qualified_name`, the usual shape, which is then
/// not stored but composed on read: ids are the largest strings of a code graph.
pub(crate) fn is_composed(id: &str, file: &str, qualified_name: &str) -> bool {
    id.len() == file.len() + 1 + qualified_name.len()
        && id.starts_with(file)
        && id.as_bytes()[file.len()] == b':'
        && id.ends_with(qualified_name)
}

fn invalid(detail: String) -> StorageError {
    StorageError::InvalidInput { detail }
}

/// Encodes `g` into the four base segments.
pub(crate) fn build_layer(g: &GraphBuilder, db_uuid: [u8; 16]) -> Result<BuiltLayer> {
    let n = g.nodes.len();
    let e = g.edges.len();
    // Offsets are stored as values up to the edge count and indexes as u32.
    if u32::try_from(n).is_err() || u32::try_from(e).is_err() {
        return Err(invalid(format!(
            "{n} nodes / {e} edges exceed the u32 limit of format 1"
        )));
    }
    let ns = g.strings().len();
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
        for (s, w) in [
            (nd.id, "id"),
            (nd.name, "name"),
            (nd.qualified_name, "qualified_name"),
            (nd.file, "file"),
            (nd.signature, "signature"),
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

    // Strings: keep the referenced ones (plus ""), sorted by bytes.
    let composed: Vec<bool> = g
        .nodes
        .iter()
        .map(|nd| is_composed(g.str(nd.id), g.str(nd.file), g.str(nd.qualified_name)))
        .collect();
    let mut used = vec![false; ns];
    for (nd, c) in g.nodes.iter().zip(&composed) {
        for s in [nd.name, nd.qualified_name, nd.file, nd.signature] {
            used[s.0 as usize] = true;
        }
        if !c {
            used[nd.id.0 as usize] = true;
        }
    }
    for ed in &g.edges {
        used[ed.file.0 as usize] = true;
    }
    let mut order: Vec<(&str, u32)> = Vec::new();
    order.push(("", u32::MAX));
    for (i, u) in used.iter().enumerate() {
        if *u {
            order.push((g.strings()[i].as_str(), i as u32));
        }
    }
    order.sort_unstable();
    let mut remap = vec![0u32; ns];
    let mut sorted: Vec<&str> = Vec::with_capacity(order.len());
    for (s, old) in &order {
        if sorted.last() != Some(s) {
            sorted.push(s);
        }
        if *old != u32::MAX {
            remap[*old as usize] = (sorted.len() - 1) as u32;
        }
    }
    // Peak memory is reached while the edges are encoded: nothing that is only needed for
    // an earlier segment may still be alive then (a kernel has millions of strings).
    drop((order, used));
    if u32::try_from(sorted.len()).is_err() {
        return Err(invalid("more than 2^32 distinct strings".into()));
    }
    let r = |s: StrId| u64::from(remap[s.0 as usize]);

    let strings = crate::strings::encode_segment(&sorted, SegmentKind::Strings, db_uuid);
    drop(sorted);

    // Nodes.
    let nodes = &g.nodes;
    let mut nw = SegmentWriter::default();
    let node_type = |i: usize| {
        let x = &nodes[i];
        u64::from(x.kind.code()) | u64::from(x.flags.0) << 8 | u64::from(x.language.code()) << 16
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
    nw.add_uint(nodes_col::START_BYTE, n, |i| nodes[i].start_byte);
    nw.add_uint(nodes_col::BYTE_SPAN, n, |i| {
        nodes[i].end_byte.wrapping_sub(nodes[i].start_byte)
    });
    nw.add_uint(nodes_col::COMMUNITY, n, |i| u64::from(nodes[i].community));
    let mut hashes = Vec::with_capacity(n * CONTENT_HASH_LEN);
    for nd in nodes {
        hashes.extend_from_slice(&nd.content_hash[..CONTENT_HASH_LEN]);
    }
    nw.add_bytes(nodes_col::CONTENT_HASH, &hashes);
    drop(hashes);
    nw.add_uint(nodes_col::ID, n, |i| {
        if composed[i] { 0 } else { r(nodes[i].id) + 1 }
    });
    nw.add_uint(nodes_col::NAME, n, |i| r(nodes[i].name));
    nw.add_uint(nodes_col::QUALIFIED_NAME, n, |i| {
        let q = r(nodes[i].qualified_name);
        if q == r(nodes[i].name) { 0 } else { q + 1 }
    });
    nw.add_uint(nodes_col::FILE, n, |i| r(nodes[i].file));
    nw.add_uint(nodes_col::SIGNATURE, n, |i| r(nodes[i].signature));
    let mut idx: Vec<u32> = (0..n as u32).collect();
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
    idx.sort_unstable_by(|&a, &b| cmp_parts(parts(a), parts(b)).then(a.cmp(&b)));
    nw.add_uint(nodes_col::ID_INDEX, n, |i| u64::from(idx[i]));
    idx.sort_unstable_by_key(|&i| (remap[nodes[i as usize].name.0 as usize], i));
    nw.add_uint(nodes_col::NAME_INDEX, n, |i| u64::from(idx[i]));
    drop(idx);
    let nw = nw.finish(SegmentKind::Nodes as u8, db_uuid);

    let edges = &g.edges;
    let mut ew = SegmentWriter::default();
    let eo = add_out_edge_columns(&mut ew, edges, nodes, n, r);
    let ed = |k: usize| &edges[eo[k] as usize];
    let mut in_off = vec![0u64; n + 1];
    for x in edges {
        in_off[x.dst.0 as usize + 1] += 1;
    }
    for i in 0..n {
        in_off[i + 1] += in_off[i];
    }
    let mut cursor: Vec<u64> = in_off[..n].to_vec();
    let mut perm = vec![0u32; e];
    for k in 0..e {
        let d = ed(k).dst.0 as usize;
        perm[cursor[d] as usize] = k as u32;
        cursor[d] += 1;
    }
    drop(cursor);
    ew.add_uint(edges_col::IN_OFFSETS, n + 1, |i| in_off[i]);
    ew.add_uint(edges_col::IN_PERM, e, |k| u64::from(perm[k]));
    drop((perm, in_off));
    let ew = ew.finish(SegmentKind::Edges as u8, db_uuid);

    // Bitmaps. Members arrive in ascending order and are appended in batches: a single
    // push into a bitmap container first scans it for its maximum.
    let mut kinds: Vec<BitmapBuild> = (0..NodeKind::ALL.len())
        .map(|_| BitmapBuild::default())
        .collect();
    let mut file_rows: BTreeMap<u32, BitmapBuild> = BTreeMap::new();
    for (i, nd) in nodes.iter().enumerate() {
        if let Some(b) = kinds.get_mut(usize::from(nd.kind.code())) {
            b.push(i as u32)?;
        }
        if !g.str(nd.file).is_empty() {
            file_rows
                .entry(remap[nd.file.0 as usize])
                .or_default()
                .push(i as u32)?;
        }
    }
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

    Ok(BuiltLayer {
        segments: vec![
            (SegmentKind::Strings, strings),
            (SegmentKind::Nodes, nw),
            (SegmentKind::Edges, ew),
            (
                SegmentKind::Bitmaps,
                bw.finish(SegmentKind::Bitmaps as u8, db_uuid),
            ),
        ],
        node_count: n as u64,
        edge_count: e as u64,
        live_nodes: n as u64,
        live_edges: e as u64,
    })
}

/// The distinct values of `values`, ascending. A graph has a few dozen distinct node and
/// edge types: a set avoids sorting one value per node or edge (millions on a kernel).
/// Writes the out-CSR columns every edge segment has, base or delta (OUT_OFFSETS over
/// `rows` sources, DST, TYPE with its palette, BLOCK_SRC, LINE, FILE_OVERRIDE), and returns
/// the edge order: (src, rel, dst), the original index breaking ties so parallel edges
/// are written deterministically. `code` maps a string to the id it is written as.
pub(crate) fn add_out_edge_columns(
    ew: &mut SegmentWriter,
    edges: &[EdgeInput],
    nodes: &[NodeInput],
    rows: usize,
    code: impl Fn(StrId) -> u64,
) -> Vec<u32> {
    let e = edges.len();
    let mut eo: Vec<u32> = (0..e as u32).collect();
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
    ew.add_uint(edges_col::OUT_OFFSETS, rows + 1, |i| out_off[i]);
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
    eo
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
    fn only_the_exact_file_colon_qualified_name_shape_is_composed() {
        assert!(is_composed("a.c:f", "a.c", "f"));
        assert!(is_composed(":f", "", "f"));
        assert!(is_composed("a.c:", "a.c", ""));
        assert!(!is_composed("a.c:f#2", "a.c", "f"));
        assert!(!is_composed("a.c;f", "a.c", "f"));
        assert!(!is_composed("b.c:f", "a.c", "f"));
        assert!(!is_composed("é:x", "é", "y"));
    }

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
        });
        assert!(matches!(
            build_layer(&g, [0; 16]),
            Err(StorageError::InvalidInput { .. })
        ));
    }
}
