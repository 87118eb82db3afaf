//! The fragment contract, rule by rule: each test commits a base, lays a fragment over it
//! and compares the result canonically with the graph a full build of the edited
//! repository would produce.

use std::collections::{BTreeMap, BTreeSet};

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};

use crate::fuzzing::sample_run;
use crate::input::{EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput};
use crate::reader::Artifact;
use crate::store::Store;
use crate::{GraphFragment, StorageError};

/// Every property of a node but its index and community, as text.
pub(crate) type NodeProps = String;
/// (src id, rel, dst id, roles, strategy, confidence bits, file, line).
pub(crate) type EdgeKey = (String, u8, String, u16, u8, u32, String, u32);

/// A graph compared by ids: nodes (live ones only) by id with their properties, edges as a
/// sorted multiset.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Canon {
    pub(crate) nodes: BTreeMap<String, Vec<NodeProps>>,
    pub(crate) edges: Vec<EdgeKey>,
}

pub(crate) fn node_props(n: crate::NodeRef<'_>) -> NodeProps {
    format!(
        "{}|{}|{:?}|{}|{:?}|{}-{}|{}-{}|{}|{:?}|{}",
        n.name(),
        n.qualified_name(),
        n.kind(),
        n.file(),
        n.language(),
        n.start_line(),
        n.end_line(),
        n.start_byte(),
        n.end_byte(),
        n.signature(),
        n.content_hash(),
        n.flags().0
    )
}

pub(crate) fn edge_key(a: &Artifact, e: crate::EdgeRef<'_>) -> EdgeKey {
    // The override is there exactly when the use-site file is not the source's.
    let src_file = a.node(e.src()).file_sid();
    match e.file_sid_override() {
        Some(f) => assert!(f == e.file_sid() && f != src_file, "edge {:?}", e.idx()),
        None => assert_eq!(e.file_sid(), src_file, "edge {:?}", e.idx()),
    }
    (
        a.node(e.src()).id().into_owned(),
        e.rel().code(),
        a.node(e.dst()).id().into_owned(),
        e.roles().0,
        e.strategy().code(),
        e.confidence().to_bits(),
        e.file().into_owned(),
        e.line(),
    )
}

/// Asserts two canonical graphs are equal, printing only their differences.
#[track_caller]
pub(crate) fn assert_same(got: &Canon, want: &Canon) {
    if got == want {
        return;
    }
    let mut msg = String::new();
    for (id, p) in &got.nodes {
        if want.nodes.get(id) != Some(p) {
            msg += &format!("node {id}: got {p:?}, want {:?}\n", want.nodes.get(id));
        }
    }
    for id in want.nodes.keys().filter(|k| !got.nodes.contains_key(*k)) {
        msg += &format!("node {id} missing\n");
    }
    let (mut g, mut w) = (got.edges.clone(), want.edges.clone());
    g.retain(|e| !want.edges.contains(e));
    w.retain(|e| !got.edges.contains(e));
    msg += &format!(
        "extra edges {:?}\nmissing edges {:?}\n",
        &g[..g.len().min(5)],
        &w[..w.len().min(5)]
    );
    panic!("graphs differ:\n{}", &msg[..msg.len().min(4000)]);
}

pub(crate) fn canonical(a: &Artifact) -> Canon {
    let mut nodes: BTreeMap<String, Vec<NodeProps>> = BTreeMap::new();
    let mut edges = Vec::new();
    for i in 0..a.node_count() {
        if !a.is_live(NodeIdx(i)) {
            continue;
        }
        let n = a.node(NodeIdx(i));
        nodes
            .entry(n.id().into_owned())
            .or_default()
            .push(node_props(n));
        for e in a.out_edges(NodeIdx(i)) {
            edges.push(edge_key(a, e));
        }
    }
    for v in nodes.values_mut() {
        v.sort();
    }
    edges.sort();
    Canon { nodes, edges }
}

/// A node `id` = `file:name` (or a stub when `file` is empty), with `line` standing for
/// all its other properties.
pub(crate) fn node(g: &mut GraphBuilder, id: &str, line: u32) -> NodeIdx {
    let (file, name) = match id.rsplit_once(':') {
        Some((f, n)) if !id.starts_with('<') => (f.to_owned(), n.to_owned()),
        _ => (String::new(), id.to_owned()),
    };
    let kind = if file.is_empty() {
        NodeKind::External
    } else {
        NodeKind::Function
    };
    let input = NodeInput {
        id: IdText::Text(g.intern(id)),
        name: g.intern(&name),
        qualified_name: g.intern(&name),
        kind,
        file: g.intern(&file),
        language: if file.is_empty() {
            Language::Unknown
        } else {
            Language::C
        },
        start_line: line,
        end_line: line + 2,
        start_byte: line * 10,
        end_byte: line * 10 + 5,
        signature: g.intern(&format!("int {name}(void)")),
        doc: g.intern(&format!("Documents {name}")),
        content_hash: [line as u8; 8],
        flags: NodeFlags(0),
        community: 0,
        pagerank: 0,
    };
    g.add_node(input)
}

pub(crate) fn edge(g: &mut GraphBuilder, src: NodeIdx, dst: NodeIdx, rel: RelType, line: u32) {
    let file = g.nodes[src.0 as usize].file;
    g.add_edge(EdgeInput {
        src,
        dst,
        rel,
        roles: Roles::NONE,
        confidence: 0.9,
        strategy: Strategy::Direct,
        file,
        line,
        sites: crate::input::SitesId::ONE,
    });
}

/// A graph from `(id, line)` nodes and `(src, dst, line)` call edges between them.
fn graph(nodes: &[(&str, u32)], edges: &[(&str, &str, u32)]) -> GraphBuilder {
    let mut g = GraphBuilder::new();
    let mut at = BTreeMap::new();
    for (id, line) in nodes {
        at.insert(id.to_string(), node(&mut g, id, *line));
    }
    for (s, d, line) in edges {
        edge(&mut g, at[*s], at[*d], RelType::Calls, *line);
    }
    g
}

fn fragment(files: &[&str], g: GraphBuilder) -> GraphFragment {
    GraphFragment {
        replaced_files: files.iter().map(|f| f.to_string()).collect::<BTreeSet<_>>(),
        graph: g,
    }
}

fn committed(dir: &std::path::Path, g: &GraphBuilder) -> Artifact {
    let store = Store::create_or_open(dir).unwrap();
    store
        .lock_writer()
        .unwrap()
        .commit(g, sample_run(g))
        .unwrap();
    store.open_current().unwrap()
}

/// Commits `base`, lays `frag` over it and returns the merged artifact; checks that it
/// equals `expected` (a full build of the edited repository) canonically and verifies clean.
fn merge(base: &GraphBuilder, frag: &GraphFragment, expected: &GraphBuilder) -> Artifact {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let mut w = store.lock_writer().unwrap();
    w.commit(base, sample_run(base)).unwrap();
    let a = store.open_current().unwrap();
    let info = w
        .commit_fragment(&a, frag, sample_run(&frag.graph))
        .unwrap();
    let m = store.open_current().unwrap();
    assert_eq!(m.generation(), info.generation);
    assert_eq!(m.verify(true), vec![]);
    let want_dir = tempfile::tempdir().unwrap();
    let want = committed(want_dir.path(), expected);
    assert_same(&canonical(&m), &canonical(&want));
    // The temp dir goes away with `tmp`, but the open mapping stays valid.
    m
}

#[test]
fn rule1_replaced_nodes_take_the_new_properties_and_keep_their_index() {
    let base = graph(
        &[("a.c:f", 1), ("b.c:g", 2), ("a.c:h", 3)],
        &[("b.c:g", "a.c:f", 7), ("a.c:f", "a.c:h", 8)],
    );
    let frag = fragment(
        &["a.c"],
        graph(&[("a.c:f", 10), ("a.c:h", 30)], &[("a.c:f", "a.c:h", 11)]),
    );
    let expected = graph(
        &[("a.c:f", 10), ("b.c:g", 2), ("a.c:h", 30)],
        &[("b.c:g", "a.c:f", 7), ("a.c:f", "a.c:h", 11)],
    );
    let m = merge(&base, &frag, &expected);
    let f = m.lookup_id("a.c:f").unwrap();
    assert_eq!(f, NodeIdx(0));
    assert_eq!(m.node(f).start_line(), 10);
    // The edge from the untouched file still reaches the new version.
    let g = m.lookup_id("b.c:g").unwrap();
    assert_eq!(m.out_edges(g).map(|e| e.dst()).collect::<Vec<_>>(), vec![f]);
}

#[test]
fn rule1_new_nodes_of_replaced_files_are_added() {
    let base = graph(&[("a.c:f", 1)], &[]);
    let frag = fragment(
        &["a.c", "new.c"],
        graph(&[("a.c:f", 1), ("new.c:n", 4)], &[("new.c:n", "a.c:f", 5)]),
    );
    let expected = graph(&[("a.c:f", 1), ("new.c:n", 4)], &[("new.c:n", "a.c:f", 5)]);
    let m = merge(&base, &frag, &expected);
    assert_eq!(m.files().collect::<Vec<_>>(), vec!["a.c", "new.c"]);
}

#[test]
fn rule2_other_fragment_nodes_stand_for_the_base_node_or_are_new_stubs() {
    let base = graph(
        &[("a.c:f", 1), ("b.c:g", 2), ("<external>:x", 0)],
        &[("b.c:g", "<external>:x", 3)],
    );
    // b.c:g appears with made-up properties (ignored); <external>:y is a new stub.
    let frag = fragment(
        &["a.c"],
        graph(
            &[
                ("a.c:f", 1),
                ("b.c:g", 99),
                ("<external>:x", 77),
                ("<external>:y", 0),
            ],
            &[
                ("a.c:f", "b.c:g", 4),
                ("a.c:f", "<external>:x", 5),
                ("a.c:f", "<external>:y", 6),
            ],
        ),
    );
    let expected = graph(
        &[
            ("a.c:f", 1),
            ("b.c:g", 2),
            ("<external>:x", 0),
            ("<external>:y", 0),
        ],
        &[
            ("b.c:g", "<external>:x", 3),
            ("a.c:f", "b.c:g", 4),
            ("a.c:f", "<external>:x", 5),
            ("a.c:f", "<external>:y", 6),
        ],
    );
    let m = merge(&base, &frag, &expected);
    assert_eq!(m.node_count(), 4);
}

#[test]
fn rule3_nodes_of_replaced_files_missing_from_the_fragment_are_removed_with_their_edges() {
    let base = graph(
        &[("a.c:f", 1), ("a.c:old", 2), ("b.c:g", 3)],
        &[
            ("b.c:g", "a.c:old", 4),
            ("b.c:g", "a.c:f", 5),
            ("a.c:old", "b.c:g", 6),
        ],
    );
    let frag = fragment(&["a.c"], graph(&[("a.c:f", 1)], &[]));
    let expected = graph(&[("a.c:f", 1), ("b.c:g", 3)], &[("b.c:g", "a.c:f", 5)]);
    let m = merge(&base, &frag, &expected);
    assert_eq!(m.lookup_id("a.c:old"), None);
}

#[test]
fn rule3_a_deleted_file_loses_every_node() {
    let base = graph(&[("a.c:f", 1), ("b.c:g", 3)], &[("b.c:g", "a.c:f", 5)]);
    let frag = fragment(&["a.c"], GraphBuilder::new());
    let expected = graph(&[("b.c:g", 3)], &[]);
    let m = merge(&base, &frag, &expected);
    assert!(m.nodes_in_file("a.c").is_none());
}

#[test]
fn rule4_edges_leaving_replaced_nodes_are_replaced_by_the_fragments() {
    let base = graph(
        &[("a.c:f", 1), ("b.c:g", 2), ("b.c:h", 3)],
        &[
            ("a.c:f", "b.c:g", 4),
            ("a.c:f", "b.c:h", 5),
            ("b.c:g", "b.c:h", 6),
        ],
    );
    let frag = fragment(
        &["a.c"],
        graph(&[("a.c:f", 1), ("b.c:h", 0)], &[("a.c:f", "b.c:h", 9)]),
    );
    let expected = graph(
        &[("a.c:f", 1), ("b.c:g", 2), ("b.c:h", 3)],
        &[("a.c:f", "b.c:h", 9), ("b.c:g", "b.c:h", 6)],
    );
    merge(&base, &frag, &expected);
}

#[test]
fn rule4_a_node_that_comes_back_unchanged_is_no_override() {
    let base = graph(
        &[("a.c:f", 1), ("a.c:h", 3), ("b.c:g", 2)],
        &[("a.c:f", "b.c:g", 4), ("a.c:h", "b.c:g", 6)],
    );
    // f comes back as it was (the stand-in for b.c:g has made-up properties); h moved.
    let frag = fragment(
        &["a.c"],
        graph(
            &[("a.c:f", 1), ("a.c:h", 30), ("b.c:g", 0)],
            &[("a.c:f", "b.c:g", 4), ("a.c:h", "b.c:g", 31)],
        ),
    );
    let expected = graph(
        &[("a.c:f", 1), ("a.c:h", 30), ("b.c:g", 2)],
        &[("a.c:f", "b.c:g", 4), ("a.c:h", "b.c:g", 31)],
    );
    let tmp = tempfile::tempdir().unwrap();
    let a = committed(tmp.path(), &base);
    let plan = crate::fragment::Plan::compute(&a, &frag).unwrap();
    assert_eq!(plan.overrides, vec![(1, 1)], "only h is replaced");
    assert_eq!(plan.unchanged, vec![true, false, false]);
    assert_eq!(
        plan.dropped.iter().collect::<Vec<_>>(),
        vec![1],
        "h's old edge"
    );
    merge(&base, &frag, &expected);
}

#[test]
fn rule4_unchanged_overrides_found_on_every_core_in_fragment_order() {
    // Six overrides (past the test threshold: split over the cores), every other one back
    // as it was; the flags must land on the right fragment nodes whatever the split.
    let names = ["a.c:f0", "a.c:f1", "a.c:f2", "a.c:f3", "a.c:f4", "a.c:f5"];
    let mut nodes: Vec<(&str, u32)> = names.iter().map(|&n| (n, 1)).collect();
    nodes.push(("b.c:g", 2));
    let edges: Vec<(&str, &str, u32)> = names.iter().map(|&n| (n, "b.c:g", 4)).collect();
    let base = graph(&nodes, &edges);
    let frag_nodes: Vec<(&str, u32)> = names
        .iter()
        .enumerate()
        .map(|(k, &n)| (n, if k % 2 == 0 { 1 } else { 10 + k as u32 }))
        .chain([("b.c:g", 0)])
        .collect();
    let frag = fragment(&["a.c"], graph(&frag_nodes, &edges));
    let tmp = tempfile::tempdir().unwrap();
    let a = committed(tmp.path(), &base);
    let plan = crate::fragment::Plan::compute(&a, &frag).unwrap();
    assert_eq!(
        plan.unchanged,
        vec![true, false, true, false, true, false, false]
    );
    assert_eq!(plan.overrides, vec![(1, 1), (3, 3), (5, 5)]);
}

#[test]
fn rule4_an_edge_from_a_node_the_fragment_does_not_replace_is_a_typed_error() {
    let tmp = tempfile::tempdir().unwrap();
    let base = graph(&[("a.c:f", 1), ("b.c:g", 2)], &[]);
    let store = Store::create_or_open(tmp.path()).unwrap();
    let mut w = store.lock_writer().unwrap();
    let before = w.commit(&base, sample_run(&base)).unwrap();
    let a = store.open_current().unwrap();
    let frag = fragment(
        &["a.c"],
        graph(&[("a.c:f", 1), ("b.c:g", 2)], &[("b.c:g", "a.c:f", 3)]),
    );
    match w.commit_fragment(&a, &frag, sample_run(&frag.graph)) {
        Err(StorageError::FragmentEdgeNotAuthoritative {
            edge,
            src_id,
            src_file,
        }) => {
            assert_eq!(
                (edge, src_id.as_str(), src_file.as_str()),
                (0, "b.c:g", "b.c")
            );
        }
        other => panic!("{other:?}"),
    }
    // Malformed fragments are refused too, and nothing was committed.
    let mut bad = fragment(&["a.c"], graph(&[("a.c:f", 1)], &[]));
    bad.graph.edges.push(EdgeInput {
        src: NodeIdx(0),
        dst: NodeIdx(5),
        rel: RelType::Calls,
        roles: Roles::NONE,
        confidence: 1.0,
        strategy: Strategy::Direct,
        file: crate::StrId(0),
        line: 0,
        sites: crate::input::SitesId::ONE,
    });
    assert!(matches!(
        w.commit_fragment(&a, &bad, sample_run(&bad.graph)),
        Err(StorageError::InvalidFragment { .. })
    ));
    assert_eq!(
        store.open_current().unwrap().generation(),
        before.generation
    );
}

#[test]
fn a_stale_base_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let base = graph(&[("a.c:f", 1)], &[]);
    let store = Store::create_or_open(tmp.path()).unwrap();
    let mut w = store.lock_writer().unwrap();
    w.commit(&base, sample_run(&base)).unwrap();
    let old = store.open_current().unwrap();
    let next = graph(&[("a.c:f", 2)], &[]);
    w.commit(&next, sample_run(&next)).unwrap();
    let frag = fragment(&["a.c"], graph(&[("a.c:f", 3)], &[]));
    assert!(matches!(
        w.commit_fragment(&old, &frag, sample_run(&frag.graph)),
        Err(StorageError::InvalidFragment { .. })
    ));
}

#[test]
fn rule5_stubs_left_without_incoming_edges_are_removed() {
    let base = graph(
        &[
            ("a.c:f", 1),
            ("b.c:g", 2),
            ("<external>:only_a", 0),
            ("<external>:shared", 0),
            ("<stdio.h>", 0),
        ],
        &[
            ("a.c:f", "<external>:only_a", 3),
            ("a.c:f", "<external>:shared", 4),
            ("b.c:g", "<external>:shared", 5),
            ("a.c:f", "<stdio.h>", 6),
        ],
    );
    // f no longer uses anything; the fragment also names a stub nothing points at.
    let frag = fragment(
        &["a.c"],
        graph(&[("a.c:f", 1), ("<external>:unused", 0)], &[]),
    );
    let expected = graph(
        &[("a.c:f", 1), ("b.c:g", 2), ("<external>:shared", 0)],
        &[("b.c:g", "<external>:shared", 5)],
    );
    let m = merge(&base, &frag, &expected);
    assert_eq!(m.lookup_id("<external>:only_a"), None);
    assert_eq!(m.lookup_id("<stdio.h>"), None);
    assert_eq!(m.lookup_id("<external>:unused"), None);
}

#[test]
fn rule5_a_stub_still_used_by_the_fragment_stays() {
    let base = graph(
        &[("a.c:f", 1), ("<external>:x", 0)],
        &[("a.c:f", "<external>:x", 3)],
    );
    let frag = fragment(
        &["a.c"],
        graph(
            &[("a.c:f", 1), ("<external>:x", 0)],
            &[("a.c:f", "<external>:x", 8)],
        ),
    );
    let expected = graph(
        &[("a.c:f", 1), ("<external>:x", 0)],
        &[("a.c:f", "<external>:x", 8)],
    );
    merge(&base, &frag, &expected);
}

#[test]
fn rule6_everything_else_is_unchanged() {
    let g = crate::fuzzing::sample_graph(5, 200, 800);
    let tmp = tempfile::tempdir().unwrap();
    let a = committed(tmp.path(), &g);
    // Replace one file with exactly its current content: the graph must not change.
    let file = a.files().nth(3).unwrap().into_owned();
    let mut fg = GraphBuilder::new();
    let mut at = BTreeMap::new();
    let members: Vec<u32> = a.nodes_in_file(&file).unwrap().iter().collect();
    for &b in &members {
        let input = crate::fragment::node_input(&mut fg, a.node(NodeIdx(b)));
        at.insert(b, fg.add_node(input));
    }
    for &b in &members {
        for e in a.out_edges(NodeIdx(b)) {
            let dst = *at.entry(e.dst().0).or_insert_with(|| {
                let input = crate::fragment::node_input(&mut fg, a.node(e.dst()));
                fg.add_node(input)
            });
            let f = fg.intern(&e.file());
            let sites = e.copy_sites_to(&mut fg);
            fg.add_edge(EdgeInput {
                src: at[&b],
                dst,
                rel: e.rel(),
                roles: e.roles(),
                confidence: e.confidence(),
                strategy: e.strategy(),
                file: f,
                line: e.line(),
                sites,
            });
        }
    }
    let frag = fragment(&[file.as_str()], fg);
    let store = Store::create_or_open(tmp.path()).unwrap();
    let mut w = store.lock_writer().unwrap();
    w.commit_fragment(&a, &frag, sample_run(&frag.graph))
        .unwrap();
    let m = store.open_current().unwrap();
    assert_same(&canonical(&m), &canonical(&a));
    assert_eq!(m.node_count(), a.node_count());
    assert_eq!(m.verify(true), vec![]);
}

proptest::proptest! {
    /// Sorting the halves apart and merging them orders ids as one sort does.
    #[test]
    fn ids_sorted_in_halves_are_sorted(ids in proptest::collection::vec("[ab:]{0,4}", 0..60)) {
        let ids: Vec<std::borrow::Cow<'_, str>> = ids.into_iter().map(Into::into).collect();
        for threads in [1, 2, 3] {
            let order = super::sorted_by_id(&ids, threads);
            let mut seen = order.clone();
            seen.sort_unstable();
            proptest::prop_assert_eq!(seen, (0..ids.len() as u32).collect::<Vec<_>>());
            proptest::prop_assert!(order.windows(2).all(|w| ids[w[0] as usize] <= ids[w[1] as usize]));
        }
    }
}
