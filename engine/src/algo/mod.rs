//! Graph algorithms over a build's [`GraphBuilder`], run before the graph is written.
//!
//! [`communities`] is deterministic Louvain modularity clustering: nodes are visited in
//! index order, ties go to the smallest community id, and there is no randomness, so the
//! same graph always yields the same communities (artifacts stay reproducible).

use std::collections::HashMap;

use batho_schema::{NodeKind, RelType};
use batho_storage::input::GraphBuilder;

/// Relation types that make two entities belong together.
const COMMUNITY_RELS: [RelType; 4] = [
    RelType::Calls,
    RelType::Includes,
    RelType::References,
    RelType::Inherits,
];

/// Most local-move sweeps per level; Louvain usually settles in a handful.
const MAX_SWEEPS: usize = 32;
/// Most aggregation levels.
const MAX_LEVELS: usize = 16;

/// An undirected weighted graph in adjacency-list form (self loops allowed).
struct WGraph {
    adj: Vec<Vec<(u32, f64)>>,
}

impl WGraph {
    fn degree(&self, v: usize) -> f64 {
        self.adj[v]
            .iter()
            .map(|&(u, w)| if u as usize == v { 2.0 * w } else { w })
            .sum()
    }
}

/// One Louvain level: local moves until no node improves modularity. Returns the
/// community of each node, renumbered densely in order of first appearance.
fn local_moves(g: &WGraph, m2: f64) -> (Vec<u32>, bool) {
    let n = g.adj.len();
    let mut comm: Vec<u32> = (0..n as u32).collect();
    let deg: Vec<f64> = (0..n).map(|v| g.degree(v)).collect();
    let mut tot: Vec<f64> = deg.clone();
    let mut moved_any = false;
    for _ in 0..MAX_SWEEPS {
        let mut moved = false;
        for v in 0..n {
            let cv = comm[v] as usize;
            // Weights from v to each neighbouring community, in first-seen order.
            let mut links: Vec<(u32, f64)> = Vec::new();
            let mut pos: HashMap<u32, usize> = HashMap::new();
            for &(u, w) in &g.adj[v] {
                if u as usize == v {
                    continue;
                }
                let c = comm[u as usize];
                match pos.get(&c) {
                    Some(&k) => links[k].1 += w,
                    None => {
                        pos.insert(c, links.len());
                        links.push((c, w));
                    }
                }
            }
            tot[cv] -= deg[v];
            let own = pos.get(&(cv as u32)).map_or(0.0, |&k| links[k].1);
            let gain = |k_in: f64, c: usize| k_in - tot[c] * deg[v] / m2;
            let mut best = cv as u32;
            let mut best_gain = gain(own, cv);
            for &(c, k_in) in &links {
                let gn = gain(k_in, c as usize);
                if gn > best_gain + 1e-12 || ((gn - best_gain).abs() <= 1e-12 && c < best) {
                    best = c;
                    best_gain = gn;
                }
            }
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
    let mut renum: HashMap<u32, u32> = HashMap::new();
    for c in comm.iter_mut() {
        let next = renum.len() as u32;
        *c = *renum.entry(*c).or_insert(next);
    }
    (comm, moved_any)
}

/// One community id per node of `graph` (ids start at 1; 0 is left for file nodes and
/// external stubs, which do not take part). Computed over CALLS, INCLUDES, REFERENCES and
/// INHERITS edges, treated as undirected; entities without such edges get a community of
/// their own.
pub fn communities(graph: &GraphBuilder) -> Vec<u32> {
    let n = graph.nodes.len();
    let member: Vec<bool> = graph
        .nodes
        .iter()
        .map(|nd| !matches!(nd.kind, NodeKind::File | NodeKind::External))
        .collect();
    // Dense ids for member nodes, in node order.
    let mut dense = vec![u32::MAX; n];
    let mut members = Vec::new();
    for (i, m) in member.iter().enumerate() {
        if *m {
            dense[i] = members.len() as u32;
            members.push(i);
        }
    }
    let mut weights: HashMap<(u32, u32), f64> = HashMap::new();
    for e in &graph.edges {
        if !COMMUNITY_RELS.contains(&e.rel) {
            continue;
        }
        let (a, b) = (dense[e.src.0 as usize], dense[e.dst.0 as usize]);
        if a == u32::MAX || b == u32::MAX || a == b {
            continue;
        }
        *weights.entry((a.min(b), a.max(b))).or_default() += 1.0;
    }
    let mut pairs: Vec<((u32, u32), f64)> = weights.into_iter().collect();
    pairs.sort_by_key(|p| p.0);
    let mut g = WGraph {
        adj: vec![Vec::new(); members.len()],
    };
    for &((a, b), w) in &pairs {
        g.adj[a as usize].push((b, w));
        g.adj[b as usize].push((a, w));
    }
    let m2: f64 = pairs.iter().map(|p| 2.0 * p.1).sum();
    // node (dense) -> community at the current level.
    let mut assign: Vec<u32> = (0..members.len() as u32).collect();
    if m2 > 0.0 {
        for _ in 0..MAX_LEVELS {
            let (comm, moved) = local_moves(&g, m2);
            if !moved {
                break;
            }
            for a in assign.iter_mut() {
                *a = comm[*a as usize];
            }
            let k = comm.iter().max().map_or(0, |m| *m as usize + 1);
            let mut agg: Vec<HashMap<u32, f64>> = vec![HashMap::new(); k];
            for (v, nbrs) in g.adj.iter().enumerate() {
                for &(u, w) in nbrs {
                    *agg[comm[v] as usize].entry(comm[u as usize]).or_default() += w;
                }
            }
            g = WGraph {
                adj: agg
                    .into_iter()
                    .enumerate()
                    .map(|(c, m)| {
                        let mut l: Vec<(u32, f64)> = m
                            .into_iter()
                            // Each internal edge was seen from both ends.
                            .map(|(d, w)| {
                                if d as usize == c {
                                    (d, w / 2.0)
                                } else {
                                    (d, w)
                                }
                            })
                            .collect();
                        l.sort_by_key(|x| x.0);
                        l
                    })
                    .collect(),
            };
        }
    }
    // Renumber by first member in node order, from 1.
    let mut renum: HashMap<u32, u32> = HashMap::new();
    let mut out = vec![0u32; n];
    for (d, &i) in members.iter().enumerate() {
        let next = renum.len() as u32 + 1;
        out[i] = *renum.entry(assign[d]).or_insert(next);
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

#[cfg(test)]
mod tests;
