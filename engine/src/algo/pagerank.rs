//! Weighted PageRank over the reference graph, computed at build time and stored on each
//! node (the `pagerank` column) in fixed point.
//!
//! The graph: every node, and the CALLS, REFERENCES, READS, WRITES, INCLUDES and INHERITS
//! edges between two distinct nodes (self loops left out). An edge's weight is its type's
//! weight ([`rel_weight`]) times its use-site count (at least 1): a function calling
//! `luaL_error` 25 times hands it more of its rank than one it calls once; an ambiguous
//! call bound to k same-name definitions gives each 1/k of that. A node hands
//! its rank out in proportion to its out-weights; a node without out-edges (a leaf)
//! spreads its rank over every node, as does the teleport term `(1 - d) / N`.
//!
//! Determinism: the power iteration visits edges in the builder's order and nodes in
//! index order, with no hashing, so the same graph always gives the same bits.

use batho_schema::{RelType, Strategy};
use batho_storage::input::{EdgeInput, GraphBuilder, StrId};

/// The damping factor.
pub const DAMPING: f64 = 0.85;
/// Most power iterations; the L1 change usually falls below [`TOLERANCE`] in 30 to 60.
const MAX_ITERATIONS: usize = 100;
/// Stop when the scores (summing to 1) move less than this in L1 norm.
const TOLERANCE: f64 = 1e-10;
/// Fixed-point scale of the stored score: `stored / SCALE` is the node's score relative
/// to the average node's (1.0 = average), so a stored value means the same on any graph.
pub const SCALE: f64 = 1024.0;

/// The relation types PageRank follows, with their weights (see [`rel_weight`]).
pub const PAGERANK_RELS: [RelType; 6] = [
    RelType::Calls,
    RelType::References,
    RelType::Reads,
    RelType::Writes,
    RelType::Includes,
    RelType::Inherits,
];

/// The weight of one use site of a relation: 1 for the structural dependencies (CALLS,
/// INCLUDES, INHERITS: the source does not work without the target), 0.5 for the uses
/// (REFERENCES, READS, WRITES: a type, macro or variable named), 0 for the rest
/// (CONTAINS, OVERRIDES and EXPANDS are not followed).
pub fn rel_weight(rel: RelType) -> f64 {
    match rel {
        RelType::Calls | RelType::Includes | RelType::Inherits => 1.0,
        RelType::References | RelType::Reads | RelType::Writes => 0.5,
        _ => 0.0,
    }
}

/// How many targets each edge's call or use was split between: the number of
/// `ambiguous` edges of the same relation from the same source to a target of the same
/// name (1 for every other edge), per edge in `graph`'s order. An ambiguous call of
/// `kfree` bound to three same-name definitions is still one call: each copy gets a
/// third of its weight instead of all of it. One byte per edge (a fanout is at most
/// the resolver's `max_ambiguous`, 16 by default; larger ones saturate) because the
/// kernel has tens of millions of edges.
fn ambiguity_fanouts(graph: &GraphBuilder) -> Vec<u8> {
    let key = |edge: &EdgeInput| (edge.src.0, edge.rel, graph.nodes[edge.dst.0 as usize].name);
    // The followed ambiguous edges by key: a sort, then one fanout per run of equal keys.
    let mut ambiguous: Vec<((u32, RelType, StrId), u32)> = graph
        .edges
        .iter()
        .enumerate()
        .filter(|(_, edge)| edge.strategy == Strategy::Ambiguous && rel_weight(edge.rel) > 0.0)
        .map(|(index, edge)| (key(edge), index as u32))
        .collect();
    ambiguous.sort_unstable();
    let mut fanouts = vec![1u8; graph.edges.len()];
    for run in ambiguous.chunk_by(|a, b| a.0 == b.0) {
        let fanout = u8::try_from(run.len()).unwrap_or(u8::MAX);
        for &(_, index) in run {
            fanouts[index as usize] = fanout;
        }
    }
    fanouts
}

/// An edge PageRank follows: its ends and its weight, the relation's weight times the
/// use-site count (at least 1) over the edge's ambiguity fanout (see
/// [`ambiguity_fanouts`]). Collected once: the power iteration visits every edge about a
/// hundred times (on the kernel, modelled over its exported edges: L1 change 6.6e-10
/// after 100 iterations, and 146 nodes still change their stored score between the 80th
/// and the 100th), and reading the builder's edges and their use sites each time took
/// the kernel build's detection thread (communities, then PageRank) 17-27 s; with the
/// edges collected once, 11.7 s. Twelve bytes per followed edge (7.4 M on Linux 6.1:
/// 89 MB, freed before the nodes segment is written).
struct RankEdge {
    source: u32,
    target: u32,
    weight: f32,
}

/// The edges PageRank follows ([`PAGERANK_RELS`] between two distinct nodes), in
/// `graph`'s order.
fn rank_edges(graph: &GraphBuilder) -> Vec<RankEdge> {
    let fanouts = ambiguity_fanouts(graph);
    graph
        .edges
        .iter()
        .zip(fanouts)
        .filter_map(|(edge, fanout)| {
            let weight = rel_weight(edge.rel);
            let sites = f64::from(graph.sites(edge).count.max(1));
            (weight > 0.0 && edge.src != edge.dst).then(|| RankEdge {
                source: edge.src.0,
                target: edge.dst.0,
                weight: (weight * sites / f64::from(fanout)) as f32,
            })
        })
        .collect()
}

/// PageRank of every node of `graph`, summing to 1 (empty for an empty graph).
pub fn pagerank_scores(graph: &GraphBuilder) -> Vec<f64> {
    let n = graph.nodes.len();
    if n == 0 {
        return Vec::new();
    }
    let edges = rank_edges(graph);
    let mut out_weight = vec![0.0f64; n];
    for edge in &edges {
        out_weight[edge.source as usize] += f64::from(edge.weight);
    }
    let nf = n as f64;
    let mut rank = vec![1.0 / nf; n];
    let mut next = vec![0.0f64; n];
    // What one unit of an edge's weight carries from its source this iteration.
    let mut per_weight = vec![0.0f64; n];
    for _ in 0..MAX_ITERATIONS {
        let mut dangling = 0.0;
        for ((carried, &score), &out) in per_weight.iter_mut().zip(&rank).zip(&out_weight) {
            if out == 0.0 {
                dangling += score;
                *carried = 0.0;
            } else {
                *carried = DAMPING * score / out;
            }
        }
        next.fill((1.0 - DAMPING) / nf + DAMPING * dangling / nf);
        for edge in &edges {
            next[edge.target as usize] += per_weight[edge.source as usize] * f64::from(edge.weight);
        }
        let delta: f64 = rank.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        std::mem::swap(&mut rank, &mut next);
        if delta < TOLERANCE {
            break;
        }
    }
    rank
}

/// A score summing to 1 over `n` nodes as stored: relative to the average, in
/// 1/[`SCALE`]ths, rounded, saturating at `u32::MAX`.
pub fn to_stored(score: f64, n: usize) -> u32 {
    let v = (score * n as f64 * SCALE).round();
    if v >= f64::from(u32::MAX) {
        u32::MAX
    } else if v > 0.0 {
        v as u32
    } else {
        0
    }
}

/// A stored score as BQL shows it: relative to the average node's (1.0 = average).
pub fn from_stored(stored: u32) -> f64 {
    f64::from(stored) / SCALE
}

/// The stored PageRank of a node nobody points at, ignoring the rank that leaves spread:
/// the estimate a patch gives an entity new to the graph until the next full build.
pub fn stored_floor() -> u32 {
    ((1.0 - DAMPING) * SCALE).round() as u32
}

/// The stored PageRank of every node of `graph` (see [`to_stored`]).
pub fn pagerank(graph: &GraphBuilder) -> Vec<u32> {
    let n = graph.nodes.len();
    pagerank_scores(graph)
        .into_iter()
        .map(|s| to_stored(s, n))
        .collect()
}
