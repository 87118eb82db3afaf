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
        content_hash: [0; 8],
        flags: NodeFlags::default(),
        community: 0,
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
