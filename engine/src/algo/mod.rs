//! Graph algorithms over a build's [`GraphBuilder`], run before the graph is written:
//! communities (here) and PageRank (`pagerank.rs`), both stored on the nodes.
//!
//! [`communities`] is deterministic Louvain modularity clustering: nodes are visited in
//! index order, ties go to the smallest community id, and there is no randomness, so the
//! same graph always yields the same communities (artifacts stay reproducible).
//!
//! The graph is held in CSR form and every per-node tally goes through dense scratch
//! arrays (reset through a list of touched slots), so a sweep allocates nothing; sums are
//! accumulated in a fixed order (neighbours in ascending id), which keeps the floating
//! point results, and so the communities, independent of any hashing.

use batho_schema::{NodeKind, RelType};
use batho_storage::input::GraphBuilder;

pub mod community_summary;
mod pagerank;
pub use pagerank::{
    DAMPING, PAGERANK_RELS, SCALE, from_stored, pagerank, pagerank_scores, rel_weight,
    stored_floor, to_stored,
};

/// Relation types that make two entities belong together.
pub(crate) const COMMUNITY_RELS: [RelType; 4] = [
    RelType::Calls,
    RelType::Includes,
    RelType::References,
    RelType::Inherits,
];

/// Most local-move sweeps per level; Louvain usually settles in a handful.
const MAX_SWEEPS: usize = 32;
/// Most aggregation levels.
const MAX_LEVELS: usize = 16;

/// An undirected weighted graph in CSR form (self loops allowed, stored once): the
/// neighbours of `v` are `nbr[off[v]..off[v + 1]]`, in ascending neighbour order, with
/// their weights at the same places of `weight`. Neighbours and weights are kept apart
/// (a `(u32, f64)` pair would be padded to 16 bytes) and offsets are `u32`: a kernel-size
/// graph is built while the artifact is written, so its bytes add to the build's peak.
/// (2^32 adjacency entries would need far more memory than any build has.) The code graph
/// itself is the largest by far; its entries weigh one each ([`Unit`], no bytes), a
/// parallel edge being a repeated entry. Aggregated levels have `f64` weights.
struct WGraph<W> {
    off: Vec<u32>,
    nbr: Vec<u32>,
    weight: Vec<W>,
}

/// The weight of an entry of the code graph: one.
#[derive(Clone, Copy)]
struct Unit;

impl From<Unit> for f64 {
    fn from(_: Unit) -> f64 {
        1.0
    }
}

impl From<Unit> for u32 {
    fn from(_: Unit) -> u32 {
        1
    }
}

/// A sum of weights: `u32` on the code graph, whose weights are all one (every sum is a
/// count below its 2^32 entries, and takes half the bytes of an `f64` in the per-node
/// arrays), `f64` on the aggregated levels. Sums become `f64` only to compare modularity
/// gains, and integers convert exactly, so both give the same communities.
trait WeightSum:
    Copy
    + Default
    + Into<f64>
    + std::ops::Add<Output = Self>
    + std::ops::AddAssign
    + std::ops::SubAssign
{
}
impl WeightSum for u32 {}
impl WeightSum for f64 {}

impl<W: Copy> WGraph<W> {
    fn len(&self) -> usize {
        self.off.len() - 1
    }

    fn nbrs(&self, v: usize) -> impl Iterator<Item = (u32, W)> + '_ {
        let r = self.off[v] as usize..self.off[v + 1] as usize;
        self.nbr[r.clone()]
            .iter()
            .copied()
            .zip(self.weight[r].iter().copied())
    }

    fn degree<A: WeightSum>(&self, v: usize) -> A
    where
        W: Into<A>,
    {
        let mut d = A::default();
        for (u, w) in self.nbrs(v) {
            let w: A = w.into();
            // A self loop counts twice, as one term: the same float sums on every level.
            d += if u as usize == v { w + w } else { w };
        }
        d
    }
}

/// Per-key weight tallies with first-touch order, reset in O(touched).
struct Tally<A> {
    weight: Vec<A>,
    present: Vec<bool>,
    touched: Vec<u32>,
}

impl<A: WeightSum> Tally<A> {
    fn new(n: usize) -> Tally<A> {
        Tally {
            weight: vec![A::default(); n],
            present: vec![false; n],
            touched: Vec::new(),
        }
    }

    fn add(&mut self, key: u32, w: A) {
        let k = key as usize;
        if self.present[k] {
            self.weight[k] += w;
        } else {
            self.present[k] = true;
            self.weight[k] = w;
            self.touched.push(key);
        }
    }

    fn get(&self, key: u32) -> Option<A> {
        let k = key as usize;
        self.present[k].then(|| self.weight[k])
    }

    fn clear(&mut self) {
        for &k in &self.touched {
            self.present[k as usize] = false;
        }
        self.touched.clear();
    }
}

/// One Louvain level: local moves until no node improves modularity. Returns the
/// community of each node, renumbered densely in order of first appearance.
/// Weights are summed as `A` (see [`WeightSum`]).
fn local_moves<W: Copy + Into<A>, A: WeightSum>(g: &WGraph<W>, m2: f64) -> (Vec<u32>, bool) {
    let n = g.len();
    let mut comm: Vec<u32> = (0..n as u32).collect();
    let deg: Vec<A> = (0..n).map(|v| g.degree(v)).collect();
    let mut tot: Vec<A> = deg.clone();
    let mut links: Tally<A> = Tally::new(n);
    let mut moved_any = false;
    for _ in 0..MAX_SWEEPS {
        let mut moved = false;
        for v in 0..n {
            let cv = comm[v] as usize;
            // Weights from v to each neighbouring community, in first-seen order.
            for (u, w) in g.nbrs(v) {
                if u as usize != v {
                    links.add(comm[u as usize], w.into());
                }
            }
            tot[cv] -= deg[v];
            let own: f64 = links.get(cv as u32).map_or(0.0, Into::into);
            let gain = |k_in: f64, c: usize| k_in - tot[c].into() * deg[v].into() / m2;
            let mut best = cv as u32;
            let mut best_gain = gain(own, cv);
            for &c in &links.touched {
                let gn = gain(links.weight[c as usize].into(), c as usize);
                if gn > best_gain + 1e-12 || ((gn - best_gain).abs() <= 1e-12 && c < best) {
                    best = c;
                    best_gain = gn;
                }
            }
            links.clear();
            tot[best as usize] += deg[v];
            if best as usize != cv {
                comm[v] = best;
                moved = true;
                moved_any = true;
            }
        }
        if !moved {
            break;
        }
    }
    let mut renum = vec![u32::MAX; n];
    let mut next = 0u32;
    for c in comm.iter_mut() {
        let slot = &mut renum[*c as usize];
        if *slot == u32::MAX {
            *slot = next;
            next += 1;
        }
        *c = *slot;
    }
    (comm, moved_any)
}

/// One level of Louvain: local moves on `g`, then, if any node moved, `assign` follows
/// the moves and the graph of the new communities is returned for the next level.
fn descend<W: Copy + Into<A> + Into<f64>, A: WeightSum>(
    g: &WGraph<W>,
    assign: &mut [u32],
    m2: f64,
) -> Option<WGraph<f64>> {
    let (comm, moved) = local_moves::<W, A>(g, m2);
    if !moved {
        return None;
    }
    for a in assign.iter_mut() {
        *a = comm[*a as usize];
    }
    let k = comm.iter().max().map_or(0, |m| *m as usize + 1);
    Some(aggregate(g, &comm, k))
}

/// The graph of communities: one node per community, edge weights summed (internal
/// edges become self loops). `k` is the number of communities.
fn aggregate<W: Copy + Into<f64>>(g: &WGraph<W>, comm: &[u32], k: usize) -> WGraph<f64> {
    // Members of each community in ascending node order (counting sort).
    let mut start = vec![0usize; k + 1];
    for &c in comm {
        start[c as usize + 1] += 1;
    }
    for c in 0..k {
        start[c + 1] += start[c];
    }
    let mut fill = start.clone();
    let mut order = vec![0u32; comm.len()];
    for (v, &c) in comm.iter().enumerate() {
        order[fill[c as usize]] = v as u32;
        fill[c as usize] += 1;
    }
    let mut tally: Tally<f64> = Tally::new(k);
    let mut off = Vec::with_capacity(k + 1);
    off.push(0);
    let (mut nbr, mut weight) = (Vec::new(), Vec::new());
    let mut row: Vec<(u32, f64)> = Vec::new();
    for c in 0..k {
        for &v in &order[start[c]..start[c + 1]] {
            for (u, w) in g.nbrs(v as usize) {
                let w: f64 = w.into();
                // Every internal edge is seen from both ends and halved below; a self loop
                // is stored once, so it is added twice to keep its whole weight.
                let ends = if u == v { w + w } else { w };
                tally.add(comm[u as usize], ends);
            }
        }
        row.clear();
        for &d in &tally.touched {
            let w = tally.weight[d as usize];
            // Each internal edge was seen from both ends.
            row.push((d, if d as usize == c { w / 2.0 } else { w }));
        }
        row.sort_by_key(|x| x.0);
        nbr.extend(row.iter().map(|x| x.0));
        weight.extend(row.iter().map(|x| x.1));
        tally.clear();
        off.push(nbr.len() as u32);
    }
    WGraph { off, nbr, weight }
}

/// One community id per node of `graph` (ids start at 1; 0 means "no community": file
/// nodes and external stubs, which do not take part, and entities left alone in a
/// community of one). Computed over CALLS, INCLUDES, REFERENCES and INHERITS edges,
/// treated as undirected. Singletons get 0 because they say nothing about structure and
/// would swamp every listing: on Linux 6.1 millions of macros have no such edge.
pub fn communities(graph: &GraphBuilder) -> Vec<u32> {
    let n = graph.nodes.len();
    // Dense ids, in node order, for the entities with an edge to another entity: an
    // entity without one never moves nor draws another in, so it stays alone (no
    // community) either way. Leaving them out changes no result, as the relative order of
    // the others' ids (which breaks ties) stays the same at every level; it takes most
    // nodes of a kernel (millions of macros) out of every sweep of every level.
    let entity = |i: usize| !matches!(graph.nodes[i].kind, NodeKind::File | NodeKind::External);
    let mut linked = vec![false; n];
    for e in &graph.edges {
        let (a, b) = (e.src.0 as usize, e.dst.0 as usize);
        if COMMUNITY_RELS.contains(&e.rel) && a != b && entity(a) && entity(b) {
            linked[a] = true;
            linked[b] = true;
        }
    }
    let mut dense = vec![u32::MAX; n];
    let mut members: Vec<u32> = Vec::new();
    for (i, _) in linked.iter().enumerate().filter(|(_, l)| **l) {
        dense[i] = members.len() as u32;
        members.push(i as u32);
    }
    drop(linked);
    // The code graph as CSR, built in two passes over the edges. A parallel edge is a
    // repeated entry rather than a weight: most pairs have one edge, so unit entries take
    // half the bytes of (neighbour, count) pairs, and their sums are the same integers.
    let member_pair = |e: &batho_storage::input::EdgeInput| {
        let (a, b) = (dense[e.src.0 as usize], dense[e.dst.0 as usize]);
        (COMMUNITY_RELS.contains(&e.rel) && a != u32::MAX && b != u32::MAX && a != b)
            .then_some((a, b))
    };
    let nm = members.len();
    let mut off = vec![0u32; nm + 1];
    for (a, b) in graph.edges.iter().filter_map(member_pair) {
        off[a as usize + 1] += 1;
        off[b as usize + 1] += 1;
    }
    for v in 0..nm {
        off[v + 1] += off[v];
    }
    let entries = off[nm] as usize;
    let mut fill = off.clone();
    let mut nbr = vec![0u32; entries];
    for (a, b) in graph.edges.iter().filter_map(member_pair) {
        for (from, to) in [(a, b), (b, a)] {
            nbr[fill[from as usize] as usize] = to;
            fill[from as usize] += 1;
        }
    }
    drop((dense, fill));
    // Neighbours ascending, as every level has them (the visiting order of the moves).
    for v in 0..nm {
        nbr[off[v] as usize..off[v + 1] as usize].sort_unstable();
    }
    let m2 = entries as f64;
    let weight = vec![Unit; entries];
    // node (dense) -> community at the current level.
    let mut assign: Vec<u32> = (0..nm as u32).collect();
    if m2 > 0.0 {
        // The code graph (level 0), then the graphs of its communities (level 1 on).
        let code = WGraph { off, nbr, weight };
        let mut above = descend::<Unit, u32>(&code, &mut assign, m2);
        drop(code);
        for _ in 1..MAX_LEVELS {
            let Some(g) = above else { break };
            above = descend::<f64, f64>(&g, &mut assign, m2);
        }
    }
    // Renumber by first member in node order, from 1; communities of one member get 0.
    let mut size = vec![0u32; nm];
    for &c in &assign {
        size[c as usize] += 1;
    }
    let mut renum = vec![0u32; nm];
    let mut next = 0u32;
    let mut out = vec![0u32; n];
    for (d, &i) in members.iter().enumerate() {
        let i = i as usize;
        if size[assign[d] as usize] < 2 {
            continue;
        }
        let slot = &mut renum[assign[d] as usize];
        if *slot == 0 {
            next += 1;
            *slot = next;
        }
        out[i] = *slot;
    }
    out
}
/// A name for each community id in `comms` (as returned by [`communities`]): the name of
/// its member with the highest degree over the community relation types (ties: the
/// lowest node index). Index 0 of the result is the empty name of "no community".
pub fn community_names(graph: &GraphBuilder, comms: &[u32]) -> Vec<String> {
    let k = comms.iter().max().map_or(0, |m| *m as usize + 1);
    let mut degree = vec![0u64; graph.nodes.len()];
    for e in &graph.edges {
        if COMMUNITY_RELS.contains(&e.rel) && e.src != e.dst {
            degree[e.src.0 as usize] += 1;
            degree[e.dst.0 as usize] += 1;
        }
    }
    let mut best: Vec<Option<usize>> = vec![None; k];
    for (i, &c) in comms.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let slot = &mut best[c as usize];
        if slot.is_none_or(|b| degree[i] > degree[b]) {
            *slot = Some(i);
        }
    }
    best.into_iter()
        .map(|b| b.map_or_else(String::new, |i| graph.str(graph.nodes[i].name).to_string()))
        .collect()
}

pub mod health;

#[cfg(test)]
mod tests;
