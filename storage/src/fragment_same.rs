//! Which overridden nodes a fragment leaves exactly as they were.
//!
//! A patch re-resolves every file whose references might have moved, and most of them
//! come back unchanged: after a 500-file checkout of the kernel, 2,400 of the 2,900
//! re-resolved files. Replacing their nodes would put each of them, and every one of their
//! edges, into the delta (dropped and added again), which pushes the delta past its size
//! limit and forces a fresh base that rewrites the whole graph. A node whose properties
//! and out-edges are what the artifact already holds is left out of the plan instead.

use crate::fragment::DROPPED;
use crate::input::{GraphBuilder, NodeIdx, StrId};
use crate::reader::Artifact;

/// The fragment nodes (a flag per fragment node) of `overrides` whose artifact node `b`
/// already has the fragment node's properties and exactly its out-edges, given the
/// fragment node → merged position map `frag_map` (final below `base_n`).
pub(crate) fn unchanged_overrides(
    base: &Artifact,
    fg: &GraphBuilder,
    frag_map: &[u32],
    overrides: &[(u32, u32)],
) -> Vec<bool> {
    // The fragment's out-edges grouped by source, as a CSR over fragment nodes.
    let mut start = vec![0u32; fg.nodes.len() + 1];
    for e in &fg.edges {
        start[e.src.0 as usize + 1] += 1;
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut fill = start.clone();
    let mut by_src = vec![0u32; fg.edges.len()];
    for (k, e) in fg.edges.iter().enumerate() {
        let at = &mut fill[e.src.0 as usize];
        by_src[*at as usize] = k as u32;
        *at += 1;
    }

    // Each override is compared on its own: a kernel checkout's ~450,000 are split into
    // one run per core.
    let threads = if overrides.len() < crate::fragment::PARALLEL_LOOKUPS {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    let run = overrides.len().div_ceil(threads).max(1);
    let (start, by_src) = (&start, &by_src);
    let found: Vec<Vec<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = overrides
            .chunks(run)
            .map(|part| s.spawn(move || unchanged_in(base, fg, frag_map, start, by_src, part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut same = vec![false; fg.nodes.len()];
    for i in found.into_iter().flatten() {
        same[i as usize] = true;
    }
    same
}

/// The fragment nodes among `overrides` that [`unchanged_overrides`] finds unchanged,
/// given the fragment's out-edges by source (`start`, `by_src`).
fn unchanged_in(
    base: &Artifact,
    fg: &GraphBuilder,
    frag_map: &[u32],
    start: &[u32],
    by_src: &[u32],
    overrides: &[(u32, u32)],
) -> Vec<u32> {
    let base_n = base.node_count();
    let mut same = Vec::new();
    let mut texts = TextEq::default();
    let mut buf = Vec::new();
    // With each key: the use-site file, and the edge (to compare site lines when several).
    let mut ours: Vec<(EdgeKey, StrId, u32)> = Vec::new();
    let mut theirs: Vec<(EdgeKey, StrId, u32)> = Vec::new();
    'nodes: for &(b, i) in overrides {
        let (n, old) = (&fg.nodes[i as usize], base.node(NodeIdx(b)));
        let props_equal = n.kind == old.kind()
            && n.language == old.language()
            && n.start_line == old.start_line()
            && n.end_line == old.end_line()
            && n.start_byte == old.start_byte()
            && n.end_byte == old.end_byte()
            && n.content_hash == old.content_hash()
            && n.flags == old.flags()
            && n.community == old.community()
            && n.pagerank == old.pagerank()
            && base.string_is(old.name_sid(), fg.str(n.name), &mut buf)
            && base.string_is(old.qualified_name_sid(), fg.str(n.qualified_name), &mut buf)
            && texts.eq(base, old.file_sid(), fg, n.file)
            && base.string_is(old.signature_sid(), fg.str(n.signature), &mut buf)
            && base.string_is(old.doc_sid(), fg.str(n.doc), &mut buf);
        if !props_equal {
            continue;
        }
        ours.clear();
        for &k in &by_src[start[i as usize] as usize..start[i as usize + 1] as usize] {
            let e = &fg.edges[k as usize];
            let dst = frag_map[e.dst.0 as usize];
            if dst == DROPPED || dst >= base_n {
                continue 'nodes;
            }
            let key = EdgeKey {
                dst,
                rel: e.rel.code(),
                roles: e.roles.0,
                strategy: e.strategy.code(),
                confidence: e.confidence.to_bits(),
                line: e.line,
                sites: fg.sites(e).count,
                lines_hash: lines_hash(fg.sites(e).lines),
            };
            ours.push((key, e.file, k));
        }
        theirs.clear();
        for e in base.out_edges(NodeIdx(b)) {
            if theirs.len() == ours.len() {
                continue 'nodes;
            }
            let key = EdgeKey {
                dst: e.dst().0,
                rel: e.rel().code(),
                roles: e.roles().0,
                strategy: e.strategy().code(),
                confidence: e.confidence().to_bits(),
                line: e.line(),
                sites: e.site_count(),
                lines_hash: lines_hash(&e.site_lines()),
            };
            theirs.push((key, e.file_sid(), e.idx().0));
        }
        if theirs.len() != ours.len() {
            continue;
        }
        // Edges that differ only in their use-site file may pair up wrongly after the
        // sort; that only makes a node look changed, which is always safe.
        ours.sort_unstable_by_key(|p| p.0);
        theirs.sort_unstable_by_key(|p| p.0);
        let edges_equal = ours.iter().zip(&theirs).all(|(o, t)| {
            o.0 == t.0
                && texts.eq(base, t.1, fg, o.1)
                && (o.0.sites <= 1
                    || fg.sites(&fg.edges[o.2 as usize]).lines
                        == base.edge(crate::EdgeIdx(t.2)).site_lines())
        });
        if edges_equal {
            same.push(i);
        }
    }
    same
}

/// Everything of an edge but its source and use-site file, in a sortable form.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct EdgeKey {
    dst: u32,
    rel: u8,
    roles: u16,
    strategy: u8,
    confidence: u32,
    line: u32,
    sites: u32,
    /// Orders edges with the same sites count; equal hashes are checked line by line.
    lines_hash: u64,
}

/// A fixed hash of an edge's site lines (sorting only: it is never trusted for equality).
fn lines_hash(lines: &[u32]) -> u64 {
    lines.iter().fold(lines.len() as u64, |h, &l| {
        (h ^ u64::from(l)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Compares an artifact file path with a fragment one by text, remembering the answer:
/// the same few (file, file) pairs come up for most nodes and edges.
#[derive(Default)]
struct TextEq(foldhash::HashMap<(u32, u32), bool>);

impl TextEq {
    fn eq(&mut self, base: &Artifact, b: StrId, fg: &GraphBuilder, f: StrId) -> bool {
        if let Some(&v) = self.0.get(&(b.0, f.0)) {
            return v;
        }
        let v = base.string(b) == fg.str(f);
        self.0.insert((b.0, f.0), v);
        v
    }
}
