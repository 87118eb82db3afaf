//! Weighted PageRank over the reference graph, computed at build time and stored on each
//! node (the `pagerank` column) in fixed point.
//!
//! The graph: every node, and the CALLS, REFERENCES, READS, WRITES, INCLUDES and INHERITS
//! edges between two distinct nodes (self loops left out). An edge's weight is its type's
//! weight ([`rel_weight`]) times its use-site count (at least 1): a function calling
//! `luaL_error` 25 times hands it more of its rank than one it calls once. A node hands
//! its rank out in proportion to its out-weights; a node without out-edges (a leaf)
//! spreads its rank over every node, as does the teleport term `(1 - d) / N`.
//!
//! Determinism: the power iteration visits edges in the builder's order and nodes in
//! index order, with no hashing, so the same graph always gives the same bits.

use batho_schema::RelType;
use batho_storage::input::GraphBuilder;

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

/// The weighted edges PageRank follows, as (source, target, weight), in `graph`'s order.
fn weighted_edges(graph: &GraphBuilder) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
    graph.edges.iter().filter_map(move |e| {
        let w = rel_weight(e.rel);
        let (s, d) = (e.src.0 as usize, e.dst.0 as usize);
        (w > 0.0 && s != d).then(|| (s, d, w * f64::from(graph.sites(e).count.max(1))))
    })
}

/// PageRank of every node of `graph`, summing to 1 (empty for an empty graph).
pub fn pagerank_scores(graph: &GraphBuilder) -> Vec<f64> {
    let n = graph.nodes.len();
    if n == 0 {
        return Vec::new();
    }
    let mut out_weight = vec![0.0f64; n];
    for (s, _, w) in weighted_edges(graph) {
        out_weight[s] += w;
    }
    let nf = n as f64;
    let mut rank = vec![1.0 / nf; n];
    let mut next = vec![0.0f64; n];
    for _ in 0..MAX_ITERATIONS {
        let dangling: f64 = (0..n)
            .filter(|&v| out_weight[v] == 0.0)
            .map(|v| rank[v])
            .sum();
        let base = (1.0 - DAMPING) / nf + DAMPING * dangling / nf;
        next.fill(base);
        for (s, d, w) in weighted_edges(graph) {
            next[d] += DAMPING * rank[s] * w / out_weight[s];
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
