use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};
use batho_storage::input::{EdgeInput, GraphBuilder, NodeIdx, NodeInput};

use super::{communities, community_names};

fn node(g: &mut GraphBuilder, name: &str, kind: NodeKind) -> NodeIdx {
    let id = batho_storage::IdText::Text(g.intern(&format!("a.c:{name}")));
    let nm = g.intern(name);
    let file = g.intern("a.c");
    let empty = g.intern("");
    g.add_node(NodeInput {
        id,
        name: nm,
        qualified_name: nm,
        kind,
        file,
        language: Language::C,
        start_line: 1,
        end_line: 1,
        start_byte: 0,
        end_byte: 0,
        signature: empty,
        doc: batho_storage::StrId(0),
        content_hash: [0; 8],
        flags: NodeFlags::default(),
        community: 0,
        pagerank: 0,
    })
}

fn edge(g: &mut GraphBuilder, a: NodeIdx, b: NodeIdx, rel: RelType) {
    let file = g.intern("a.c");
    g.add_edge(EdgeInput {
        src: a,
        dst: b,
        rel,
        roles: Roles::default(),
        confidence: 1.0,
        strategy: Strategy::Direct,
        file,
        line: 1,
        sites: batho_storage::SitesId::ONE,
    });
}

/// Two triangles joined by one edge, plus a file node and an isolated function.
fn two_cliques() -> (GraphBuilder, Vec<NodeIdx>) {
    let mut g = GraphBuilder::new();
    let f = node(&mut g, "a.c", NodeKind::File);
    let v: Vec<NodeIdx> = (0..6)
        .map(|i| node(&mut g, &format!("f{i}"), NodeKind::Function))
        .collect();
    let lone = node(&mut g, "lone", NodeKind::Function);
    for (a, b) in [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (2, 3)] {
        edge(&mut g, v[a], v[b], RelType::Calls);
    }
    edge(&mut g, v[0], v[0], RelType::Calls);
    // CONTAINS edges do not pull nodes together.
    for x in &v {
        edge(&mut g, f, *x, RelType::Contains);
    }
    let mut all = vec![f];
    all.extend(v);
    all.push(lone);
    (g, all)
}

#[test]
fn splits_two_cliques_deterministically() {
    let (g, n) = two_cliques();
    let c = communities(&g);
    assert_eq!(c.len(), g.nodes.len());
    assert_eq!(c[n[0].0 as usize], 0, "file nodes have no community");
    let (a, b) = (c[n[1].0 as usize], c[n[4].0 as usize]);
    assert_ne!(a, b);
    for i in 1..=3 {
        assert_eq!(c[n[i].0 as usize], a);
    }
    for i in 4..=6 {
        assert_eq!(c[n[i].0 as usize], b);
    }
    assert_eq!(c[n[7].0 as usize], 0, "an entity alone has no community");
    assert_eq!(
        c.iter().max(),
        Some(&2),
        "two communities, numbered densely"
    );
    assert_eq!(c, communities(&g), "same input, same output");
    assert_eq!(c[n[1].0 as usize], 1, "ids follow node order from 1");
}

#[test]
fn names_follow_highest_degree() {
    let (g, n) = two_cliques();
    let c = communities(&g);
    let names = community_names(&g, &c);
    assert_eq!(names[0], "");
    // f2 and f3 carry the bridge, so they have the highest degree in their cliques.
    assert_eq!(names[c[n[1].0 as usize] as usize], "f2");
    assert_eq!(names[c[n[4].0 as usize] as usize], "f3");
    assert_eq!(
        names.len(),
        3,
        "no name for the lone entity: it has no community"
    );
}

#[test]
fn empty_graph() {
    let g = GraphBuilder::new();
    assert!(communities(&g).is_empty());
    assert!(community_names(&g, &[]).is_empty());
}

#[test]
fn parallel_edges_pull_as_hard_as_their_count() {
    // x has one edge into the first triangle and three (CALLS both ways and a REFERENCES)
    // into the second: it belongs with the second. Counted once each, the two pulls would
    // tie and the tie would go to the first triangle's lower community id.
    let mut g = GraphBuilder::new();
    let v: Vec<NodeIdx> = (0..6)
        .map(|i| node(&mut g, &format!("f{i}"), NodeKind::Function))
        .collect();
    let x = node(&mut g, "x", NodeKind::Function);
    for (a, b) in [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)] {
        edge(&mut g, v[a], v[b], RelType::Calls);
    }
    edge(&mut g, x, v[0], RelType::Calls);
    edge(&mut g, x, v[3], RelType::Calls);
    edge(&mut g, v[3], x, RelType::Calls);
    edge(&mut g, x, v[3], RelType::References);
    let c = communities(&g);
    assert_eq!(c[x.0 as usize], c[v[3].0 as usize]);
    assert_ne!(c[x.0 as usize], c[v[0].0 as usize]);
}

/// A ring of `count` cliques of `size` functions, each clique joined to the next by one
/// CALLS edge: the textbook case whose best partition is one community per clique.
fn ring_of_cliques(count: usize, size: usize) -> (GraphBuilder, Vec<Vec<NodeIdx>>) {
    let mut g = GraphBuilder::new();
    let cliques: Vec<Vec<NodeIdx>> = (0..count)
        .map(|c| {
            (0..size)
                .map(|i| node(&mut g, &format!("c{c}_{i}"), NodeKind::Function))
                .collect()
        })
        .collect();
    for clique in &cliques {
        for a in 0..size {
            for b in a + 1..size {
                edge(&mut g, clique[a], clique[b], RelType::Calls);
            }
        }
    }
    for c in 0..count {
        edge(
            &mut g,
            cliques[c][0],
            cliques[(c + 1) % count][1],
            RelType::Calls,
        );
    }
    (g, cliques)
}

#[test]
fn aggregated_levels_keep_the_weight_inside_communities() {
    // Levels from the second on once halved the self loops of aggregated nodes: the
    // weight inside communities shrank level after level until everything merged
    // (Lua 5.4 came out as one community of 1,820 entities).
    let (g, cliques) = ring_of_cliques(64, 5);
    let c = communities(&g);
    let count = c.iter().max().copied().unwrap_or(0) as usize;
    assert!(
        count >= 16,
        "64 cliques in a ring merged into {count} communities"
    );
    for clique in &cliques {
        let first = c[clique[0].0 as usize];
        assert!(clique.iter().all(|v| c[v.0 as usize] == first));
    }
}

#[test]
fn a_hub_linked_to_everything_does_not_glue_the_cliques() {
    // Like lua_State, one type referenced by every function: before aggregated levels kept
    // their self loops whole, it pulled the whole ring into one community.
    let (mut g, cliques) = ring_of_cliques(64, 5);
    let hub = node(&mut g, "hub", NodeKind::Typedef);
    for member in cliques.iter().flatten() {
        edge(&mut g, *member, hub, RelType::References);
    }
    let c = communities(&g);
    let largest = (1..=c.iter().max().copied().unwrap_or(0))
        .map(|id| c.iter().filter(|&&x| x == id).count())
        .max()
        .unwrap_or(0);
    assert!(
        largest * 100 <= 15 * c.len(),
        "a community of {largest} of {}",
        c.len()
    );
    assert_eq!(c, communities(&g), "same graph, same communities");
}

/// PageRank the textbook way, as a reference: a dense column-stochastic matrix (a leaf's
/// column uniform), `r <- d M r + (1 - d) / n`, iterated far past convergence.
fn reference_pagerank(n: usize, edges: &[(usize, usize, f64)]) -> Vec<f64> {
    let mut m = vec![vec![0.0f64; n]; n];
    let mut out = vec![0.0f64; n];
    for &(s, _, w) in edges {
        out[s] += w;
    }
    for &(s, d, w) in edges {
        m[d][s] += w / out[s];
    }
    for (s, o) in out.iter().enumerate() {
        if *o == 0.0 {
            for row in m.iter_mut() {
                row[s] = 1.0 / n as f64;
            }
        }
    }
    let mut r = vec![1.0 / n as f64; n];
    for _ in 0..1000 {
        r = (0..n)
            .map(|d| {
                (1.0 - super::DAMPING) / n as f64
                    + super::DAMPING * (0..n).map(|s| m[d][s] * r[s]).sum::<f64>()
            })
            .collect();
    }
    r
}

/// A hand graph: calls with a cycle, a read, an include between files, a call folding
/// three sites, a self call and a CONTAINS edge (the last two not followed).
fn rank_graph() -> (GraphBuilder, Vec<(usize, usize, f64)>) {
    let mut g = GraphBuilder::new();
    let file = node(&mut g, "a.c", NodeKind::File);
    let header = node(&mut g, "a.h", NodeKind::File);
    let f: Vec<NodeIdx> = (0..5)
        .map(|i| node(&mut g, &format!("f{i}"), NodeKind::Function))
        .collect();
    let var = node(&mut g, "v", NodeKind::Variable);
    for (a, b) in [(0, 1), (1, 2), (2, 0), (0, 3), (4, 3)] {
        edge(&mut g, f[a], f[b], RelType::Calls);
    }
    edge(&mut g, f[1], var, RelType::Reads);
    edge(&mut g, file, header, RelType::Includes);
    edge(&mut g, f[3], f[3], RelType::Calls);
    edge(&mut g, file, f[0], RelType::Contains);
    // f4 calls f2 three times: one edge of three sites.
    let sites = g.add_sites(3, &[1, 2, 3]);
    let fl = g.intern("a.c");
    g.add_edge(EdgeInput {
        src: f[4],
        dst: f[2],
        rel: RelType::Calls,
        roles: Roles::default(),
        confidence: 1.0,
        strategy: Strategy::Direct,
        file: fl,
        line: 1,
        sites,
    });
    // f4 calls `dup`, bound ambiguously to two same-name definitions: half a call each.
    let dups = [
        node(&mut g, "dup", NodeKind::Function),
        node(&mut g, "dup", NodeKind::Function),
    ];
    for dup in dups {
        g.add_edge(EdgeInput {
            src: f[4],
            dst: dup,
            rel: RelType::Calls,
            roles: Roles::default(),
            confidence: 0.5,
            strategy: Strategy::Ambiguous,
            file: fl,
            line: 4,
            sites: batho_storage::SitesId::ONE,
        });
    }
    let i = |x: NodeIdx| x.0 as usize;
    let expected = vec![
        (i(f[0]), i(f[1]), 1.0),
        (i(f[1]), i(f[2]), 1.0),
        (i(f[2]), i(f[0]), 1.0),
        (i(f[0]), i(f[3]), 1.0),
        (i(f[4]), i(f[3]), 1.0),
        (i(f[1]), i(var), 0.5),
        (i(file), i(header), 1.0),
        (i(f[4]), i(f[2]), 3.0),
        (i(f[4]), i(dups[0]), 0.5),
        (i(f[4]), i(dups[1]), 0.5),
    ];
    (g, expected)
}

#[test]
fn pagerank_matches_the_textbook_reference() {
    let (g, edges) = rank_graph();
    let got = super::pagerank_scores(&g);
    let want = reference_pagerank(g.nodes.len(), &edges);
    assert!((got.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    for (v, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!((a - b).abs() < 1e-9, "node {v}: {a} vs reference {b}");
    }
    // The cycle's members outrank the leaf caller nobody calls.
    assert!(got[2] > got[6], "{got:?}");
}

#[test]
fn pagerank_is_deterministic_and_stored_relative_to_the_average() {
    let (g, _) = rank_graph();
    let a = super::pagerank(&g);
    let b = super::pagerank(&g.clone());
    assert_eq!(a, b);
    let n = g.nodes.len();
    let scores = super::pagerank_scores(&g);
    for (s, q) in scores.iter().zip(&a) {
        assert_eq!(*q, super::to_stored(*s, n));
        // Within half a step of the exact relative score.
        assert!((super::from_stored(*q) - s * n as f64).abs() <= 0.5 / super::SCALE);
    }
    // The stored values average one (in 1/SCALE steps), up to rounding.
    let mean = a.iter().map(|q| super::from_stored(*q)).sum::<f64>() / n as f64;
    assert!((mean - 1.0).abs() < 1e-3, "{mean}");
    assert_eq!(super::to_stored(f64::MAX, 3), u32::MAX);
    assert_eq!(super::to_stored(-1.0, 3), 0);
    assert!(super::pagerank(&GraphBuilder::new()).is_empty());
}
