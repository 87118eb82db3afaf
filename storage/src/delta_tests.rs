//! The delta layer against the reference: a random small base graph and a sequence of
//! random fragments, committed as deltas in one store and materialised into full bases
//! (milestone-1 path) in another; every accessor must answer the same, compared by ids.

use std::borrow::Cow;
use std::collections::BTreeSet;

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};
use proptest::prelude::*;

use crate::fragment::tests::{assert_same, canonical, edge_key, node_props};
use crate::fragment::{Plan, apply, node_input};
use crate::fuzzing::{Rng, sample_run};
use crate::input::{EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput};
use crate::{Artifact, EdgeIdx, GraphFragment, Store, materialize_fragment};

const NAMES: [&str; 6] = ["a", "ab", "abc", "b", "ba", "c"];
const RELS: [RelType; 4] = [
    RelType::Calls,
    RelType::Contains,
    RelType::Includes,
    RelType::Reads,
];

fn add(g: &mut GraphBuilder, rng: &mut Rng, id: &str, file: &str) -> NodeIdx {
    let name = NAMES[rng.below(NAMES.len() as u64) as usize];
    let line = rng.below(500) as u32;
    let kind = if file.is_empty() {
        NodeKind::External
    } else {
        [NodeKind::Function, NodeKind::Struct, NodeKind::Variable][rng.below(3) as usize]
    };
    let input = NodeInput {
        id: IdText::Text(g.intern(id)),
        name: g.intern(name),
        qualified_name: g.intern(if rng.below(3) == 0 { "q::x" } else { name }),
        kind,
        file: g.intern(file),
        language: Language::C,
        start_line: line,
        end_line: line + rng.below(9) as u32,
        start_byte: line * 7,
        end_byte: line * 7 + 3,
        signature: g.intern(&format!("sig{}", rng.below(4))),
        doc: g.intern(if line.is_multiple_of(3) {
            "Frees the widget"
        } else {
            ""
        }),
        content_hash: [rng.below(256) as u8; 8],
        flags: NodeFlags(rng.below(4) as u8),
        community: 0,
        pagerank: 0,
    };
    g.add_node(input)
}

fn link(g: &mut GraphBuilder, rng: &mut Rng, src: NodeIdx, dst: NodeIdx) {
    let rel = RELS[rng.below(RELS.len() as u64) as usize];
    let file = if rng.below(5) == 0 {
        g.intern("other.c")
    } else {
        g.nodes[src.0 as usize].file
    };
    g.add_edge(EdgeInput {
        src,
        dst,
        rel,
        roles: Roles(1 << rng.below(3)),
        confidence: 0.5,
        strategy: Strategy::Direct,
        file,
        line: rng.below(100) as u32,
        sites: crate::input::SitesId::ONE,
    });
}

fn base_graph(rng: &mut Rng) -> GraphBuilder {
    let mut g = GraphBuilder::new();
    let files = 1 + rng.below(4);
    let n = 5 + rng.below(30);
    for i in 0..n {
        let f = format!("f{}.c", rng.below(files));
        add(&mut g, rng, &format!("{f}:n{i}"), &f);
    }
    let stubs: Vec<NodeIdx> = (0..rng.below(4))
        .map(|k| add(&mut g, rng, &format!("<external>:s{k}"), ""))
        .collect();
    for _ in 0..rng.below(3 * n) {
        let src = NodeIdx(rng.below(n) as u32);
        let dst = if !stubs.is_empty() && rng.below(4) == 0 {
            stubs[rng.below(stubs.len() as u64) as usize]
        } else {
            NodeIdx(rng.below(n) as u32)
        };
        link(&mut g, rng, src, dst);
    }
    g
}

/// A random fragment over the graph `m`: one or two files replaced (existing or new),
/// some of their nodes kept with new properties, some new, edges to anything live.
/// A random fragment over the live graph `m`. Of the replaced files' nodes, some change,
/// some come back as they are live, some come back as the store's base layer `orig` holds
/// them (an edit undone), and the rest go.
fn fragment(rng: &mut Rng, m: &Artifact, orig: &Artifact, round: usize) -> GraphFragment {
    let mut files: Vec<String> = m.files().map(Cow::into_owned).collect();
    files.push(format!("new{round}.c"));
    let mut replaced = BTreeSet::new();
    for _ in 0..1 + rng.below(2) {
        replaced.insert(files[rng.below(files.len() as u64) as usize].clone());
    }
    let mut g = GraphBuilder::new();
    let mut auth = Vec::new();
    let mut verbatim = Vec::new();
    let mut undone = Vec::new();
    for f in &replaced {
        if let Some(bm) = m.nodes_in_file(f) {
            for b in bm.iter() {
                match rng.below(10) {
                    0..=3 => {
                        let id = m.node(NodeIdx(b)).id().into_owned();
                        auth.push(add(&mut g, rng, &id, f));
                    }
                    // Re-resolved but unchanged, as most nodes of a real patch are.
                    4..=5 => {
                        let input = node_input(&mut g, m.node(NodeIdx(b)));
                        let at = g.add_node(input);
                        auth.push(at);
                        verbatim.push((at, NodeIdx(b)));
                    }
                    // Back to the base layer's version, when it has one in this file.
                    6 => {
                        let id = m.node(NodeIdx(b)).id();
                        match orig.lookup_id(&id) {
                            Some(o) if orig.node(o).file() == f.as_str() => {
                                let input = node_input(&mut g, orig.node(o));
                                let at = g.add_node(input);
                                auth.push(at);
                                undone.push((at, o));
                            }
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
        }
        for k in 0..rng.below(3) {
            auth.push(add(&mut g, rng, &format!("{f}:r{round}_{k}"), f));
        }
    }
    for &(at, b) in &verbatim {
        copy_out_edges(&mut g, m, &replaced, at, b);
    }
    for &(at, o) in &undone {
        copy_out_edges(&mut g, orig, &replaced, at, o);
    }
    let live: Vec<u32> = m
        .live_nodes()
        .filter(|n| !replaced.contains(n.file().as_ref()))
        .map(|n| n.idx().0)
        .collect();
    for &src in &auth.clone() {
        for _ in 0..rng.below(4) {
            let dst = match rng.below(4) {
                0 if !live.is_empty() => {
                    let id = m
                        .node(NodeIdx(live[rng.below(live.len() as u64) as usize]))
                        .id();
                    // Standing for an existing node: the properties are made up.
                    add(&mut g, rng, &id, "elsewhere.c")
                }
                1 => {
                    let id = format!("<external>:s{}", rng.below(6));
                    add(&mut g, rng, &id, "")
                }
                _ => auth[rng.below(auth.len() as u64) as usize],
            };
            link(&mut g, rng, src, dst);
        }
    }
    GraphFragment {
        replaced_files: replaced,
        graph: g,
    }
}

/// The out-edges of `b` of `m`, as they are, for its verbatim copy `at`: a target in a
/// replaced file is the fragment's node with its id (the edge is left out when the fragment
/// dropped that node); any other target stands for itself by id.
fn copy_out_edges(
    g: &mut GraphBuilder,
    m: &Artifact,
    replaced: &BTreeSet<String>,
    at: NodeIdx,
    b: NodeIdx,
) {
    for e in m.out_edges(b) {
        let target = m.node(e.dst());
        let id = target.id();
        let dst = if replaced.contains(target.file().as_ref()) {
            let kept = (0..g.nodes.len() as u32).find(|&k| {
                let n = &g.nodes[k as usize];
                g.id_of(n) == id && !g.str(n.file).is_empty()
            });
            match kept {
                Some(k) => NodeIdx(k),
                None => continue,
            }
        } else {
            let input = node_input(g, target);
            g.add_node(input)
        };
        let file = g.intern(&e.file());
        let sites = e.copy_sites_to(g);
        g.add_edge(EdgeInput {
            src: at,
            dst,
            rel: e.rel(),
            roles: e.roles(),
            confidence: e.confidence(),
            strategy: e.strategy(),
            file,
            line: e.line(),
            sites,
        });
    }
}

fn ids(a: &Artifact, it: impl Iterator<Item = NodeIdx>) -> Vec<String> {
    let mut v: Vec<String> = it
        .map(|n| {
            assert!(a.is_live(n), "{n:?} is not live");
            a.node(n).id().into_owned()
        })
        .collect();
    v.sort();
    v
}

fn edge_keys(a: &Artifact, it: impl Iterator<Item = u32>) -> Vec<crate::fragment::tests::EdgeKey> {
    let mut v: Vec<_> = it
        .map(|e| {
            assert!(a.is_live_edge(EdgeIdx(e)), "edge {e} is not live");
            edge_key(a, a.edge(EdgeIdx(e)))
        })
        .collect();
    v.sort();
    v
}

/// Every accessor of the merged artifact `a` against the base-only `b`.
fn same_answers(a: &Artifact, b: &Artifact) {
    assert_same(&canonical(a), &canonical(b));
    assert_eq!(a.live_node_count(), b.node_count());
    assert_eq!(a.live_edge_count(), b.edge_count());
    assert_eq!(a.live_nodes().count() as u32, b.node_count());
    for n in b.live_nodes() {
        let id = n.id();
        let x = a
            .lookup_id(&id)
            .expect("node missing from the merged artifact");
        assert!(a.is_live(x));
        assert_eq!(node_props(a.node(x)), node_props(n), "{id}");
        let mut out_a: Vec<_> = a.out_edges(x).map(|e| edge_key(a, e)).collect();
        let mut out_b: Vec<_> = b.out_edges(n.idx()).map(|e| edge_key(b, e)).collect();
        assert_eq!(a.out_edges(x).len(), out_a.len());
        out_a.sort();
        out_b.sort();
        assert_eq!(out_a, out_b, "out-edges of {id}");
        let mut in_a: Vec<_> = a.in_edges(x).map(|e| edge_key(a, e)).collect();
        let mut in_b: Vec<_> = b.in_edges(n.idx()).map(|e| edge_key(b, e)).collect();
        assert_eq!(a.in_edges(x).len(), in_a.len());
        in_a.sort();
        in_b.sort();
        assert_eq!(in_a, in_b, "in-edges of {id}");
    }
    for name in NAMES.iter().chain(&["zz", ""]) {
        assert_eq!(
            ids(a, a.lookup_name(name)),
            ids(b, b.lookup_name(name)),
            "name {name}"
        );
        let hits: Vec<NodeIdx> = a.lookup_name(name).collect();
        assert!(
            hits.windows(2).all(|w| w[0] < w[1]),
            "lookup_name not ascending"
        );
        let pre: Vec<NodeIdx> = a.lookup_name_prefix(name).collect();
        assert_eq!(
            ids(a, pre.iter().copied()),
            ids(b, b.lookup_name_prefix(name)),
            "prefix {name}"
        );
        assert!(
            pre.windows(2)
                .all(|w| a.node(w[0]).name() <= a.node(w[1]).name()),
            "prefix results not ordered by name"
        );
    }
    // The name cursor answers like `lookup_name`, in byte order and out of it.
    let mut names: Vec<&str> = NAMES
        .iter()
        .copied()
        .chain(["zz", "", "abd", "0"])
        .collect();
    names.sort_unstable();
    let back: Vec<&str> = names.iter().rev().copied().collect();
    for batch in [&names, &back] {
        let mut cursor = a.name_cursor();
        for name in batch {
            let got: Vec<NodeIdx> = cursor.lookup(name).collect();
            assert_eq!(
                got,
                a.lookup_name(name).collect::<Vec<_>>(),
                "cursor {name}"
            );
        }
    }
    for s in 0..b.string_count() {
        let text = b.string(crate::StrId(s));
        let found = a
            .find_string(&text)
            .expect("string missing from the merged artifact");
        assert_eq!(a.string(found), text);
    }
    assert_eq!(a.find_string("no such string"), None);
    for k in NodeKind::ALL {
        assert_eq!(
            ids(a, a.nodes_of_kind(*k).iter().map(NodeIdx)),
            ids(b, b.nodes_of_kind(*k).iter().map(NodeIdx)),
            "kind {k:?}"
        );
    }
    for r in RelType::ALL {
        assert_eq!(
            edge_keys(a, a.edges_of_rel(*r).iter()),
            edge_keys(b, b.edges_of_rel(*r).iter()),
            "rel {r:?}"
        );
    }
    for (role, _) in Roles::NAMED {
        assert_eq!(
            edge_keys(a, a.edges_with_role(role).iter()),
            edge_keys(b, b.edges_with_role(role).iter())
        );
    }
    let files: Vec<Cow<'_, str>> = b.files().collect();
    assert_eq!(a.files().collect::<Vec<_>>(), files);
    for f in files
        .iter()
        .map(|f| f.as_ref())
        .chain(["new0.c", "new1.c", "new2.c", "f0.c", "f3.c"])
    {
        assert_eq!(
            a.nodes_in_file(f).map(|bm| ids(a, bm.iter().map(NodeIdx))),
            b.nodes_in_file(f).map(|bm| ids(b, bm.iter().map(NodeIdx))),
            "file {f}"
        );
    }
    assert_eq!(a.verify(true), vec![]);
}

fn run_case(seed: u64, rounds: usize) {
    let mut rng = Rng::new(seed);
    let (ta, tb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sa, sb) = (
        Store::create_or_open(ta.path()).unwrap(),
        Store::create_or_open(tb.path()).unwrap(),
    );
    let (mut wa, mut wb) = (sa.lock_writer().unwrap(), sb.lock_writer().unwrap());
    wa.set_delta_limit(100_000);
    let g = base_graph(&mut rng);
    wa.commit(&g, sample_run(&g)).unwrap();
    wb.commit(&g, sample_run(&g)).unwrap();
    let orig = sa.open_current().unwrap();
    for round in 0..rounds {
        let (a, b) = (sa.open_current().unwrap(), sb.open_current().unwrap());
        let frag = fragment(&mut rng, &b, &orig, round);
        wa.commit_fragment(&a, &frag, sample_run(&frag.graph))
            .unwrap();
        let merged = materialize_fragment(&b, &frag).unwrap();
        wb.commit(&merged, sample_run(&merged)).unwrap();
        // Leaving unchanged nodes out of the plan must not change the merged graph.
        let naive = apply(&b, &frag, &Plan::compute_with(&b, &frag, false).unwrap());
        let tc = tempfile::tempdir().unwrap();
        let sc = Store::create_or_open(tc.path()).unwrap();
        sc.lock_writer()
            .unwrap()
            .commit(&naive, sample_run(&naive))
            .unwrap();
        assert_same(
            &canonical(&sb.open_current().unwrap()),
            &canonical(&sc.open_current().unwrap()),
        );
        let a = sa.open_current().unwrap();
        assert!(a.has_delta());
        assert_eq!(a.manifest().layers.len(), 2);
        same_answers(&a, &sb.open_current().unwrap());
    }
    // Compaction folds the layers into a base with the same graph.
    wa.compact(sample_run(&g)).unwrap();
    let a = sa.open_current().unwrap();
    assert!(!a.has_delta());
    assert_same(&canonical(&a), &canonical(&sb.open_current().unwrap()));
    assert_eq!(a.verify(true), vec![]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn a_delta_answers_like_the_materialised_graph(seed in any::<u64>(), rounds in 1usize..=3) {
        run_case(seed, rounds);
    }
}

#[test]
fn a_large_cumulative_delta_becomes_a_fresh_base() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let mut w = store.lock_writer().unwrap();
    let g = crate::fuzzing::sample_graph(3, 400, 1600);
    w.commit(&g, sample_run(&g)).unwrap();
    let mut rng = Rng::new(9);
    let mut deltas = 0;
    for round in 0..40 {
        let a = store.open_current().unwrap();
        let frag = fragment(&mut rng, &a, &a, round);
        w.commit_fragment(&a, &frag, sample_run(&frag.graph))
            .unwrap();
        let now = store.open_current().unwrap();
        deltas += usize::from(now.has_delta());
        if !now.has_delta() {
            assert!(round > 0, "the first small patch must be a delta");
            assert_eq!(now.verify(true), vec![]);
            return;
        }
    }
    panic!("40 patches never crossed the 20% limit ({deltas} deltas)");
}

#[test]
fn a_patch_writes_far_less_than_the_artifact() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    let mut w = store.lock_writer().unwrap();
    let g = crate::fuzzing::sample_graph(4, 5000, 20000);
    w.commit(&g, sample_run(&g)).unwrap();
    let a = store.open_current().unwrap();
    let file = a.files().nth(7).unwrap().into_owned();
    let mut rng = Rng::new(1);
    let mut fg = GraphBuilder::new();
    let members: Vec<u32> = a.nodes_in_file(&file).unwrap().iter().collect();
    for b in members {
        let id = a.node(NodeIdx(b)).id().into_owned();
        add(&mut fg, &mut rng, &id, &file);
    }
    let frag = GraphFragment {
        replaced_files: [file].into(),
        graph: fg,
    };
    let info = w
        .commit_fragment(&a, &frag, sample_run(&frag.graph))
        .unwrap();
    let m = store.open_current().unwrap();
    assert!(m.has_delta());
    assert!(
        info.bytes_written * 20 < a.size_bytes(),
        "{} bytes written for a {}-byte artifact",
        info.bytes_written,
        a.size_bytes()
    );
    assert_eq!(m.verify(true), vec![]);
}

/// The nodes and out-edges `m` holds for `files`, as a fragment replacing those files.
fn as_held(m: &Artifact, files: &BTreeSet<String>) -> GraphFragment {
    let mut g = GraphBuilder::new();
    let mut copies = Vec::new();
    for f in files {
        for b in m.nodes_in_file(f).into_iter().flat_map(|bm| bm.iter()) {
            let input = node_input(&mut g, m.node(NodeIdx(b)));
            copies.push((g.add_node(input), NodeIdx(b)));
        }
    }
    for (at, b) in copies {
        copy_out_edges(&mut g, m, files, at, b);
    }
    GraphFragment {
        replaced_files: files.clone(),
        graph: g,
    }
}

/// An edit of one file of `m` that removes nothing: each of its nodes gets new properties
/// and keeps its out-edges, plus one more (so no stub loses its last incoming edge).
fn reworked(rng: &mut Rng, m: &Artifact) -> GraphFragment {
    let files: Vec<String> = m.files().map(Cow::into_owned).collect();
    let file = files[rng.below(files.len() as u64) as usize].clone();
    let replaced: BTreeSet<String> = [file.clone()].into();
    let mut g = GraphBuilder::new();
    let mut nodes = Vec::new();
    for b in m.nodes_in_file(&file).into_iter().flat_map(|bm| bm.iter()) {
        let id = m.node(NodeIdx(b)).id().into_owned();
        nodes.push((add(&mut g, rng, &id, &file), NodeIdx(b)));
    }
    for &(at, b) in &nodes {
        copy_out_edges(&mut g, m, &replaced, at, b);
        let (to, _) = nodes[rng.below(nodes.len() as u64) as usize];
        link(&mut g, rng, at, to);
    }
    GraphFragment {
        replaced_files: replaced,
        graph: g,
    }
}

#[test]
fn an_edit_undone_takes_its_rows_out_of_the_delta() {
    let mut reverted = 0;
    for seed in 0..8 {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::create_or_open(tmp.path()).unwrap();
        let mut w = store.lock_writer().unwrap();
        w.set_delta_limit(100_000);
        let g = crate::fuzzing::sample_graph(seed, 300, 1200);
        w.commit(&g, sample_run(&g)).unwrap();
        let base = store.open_current().unwrap();
        let mut rng = Rng::new(seed);
        let edit = reworked(&mut rng, &base);
        w.commit_fragment(&base, &edit, sample_run(&edit.graph))
            .unwrap();
        let edited = store.open_current().unwrap();
        // The files as the base holds them (a new file of the edit has no nodes there).
        let undo = as_held(&base, &edit.replaced_files);
        // Odd seeds: the undo is committed as a fresh base (the merged graph is built
        // from the plan, reverted rows included).
        let fresh = seed % 2 == 1;
        if fresh {
            w.set_delta_limit(0);
        }
        w.commit_fragment(&edited, &undo, sample_run(&undo.graph))
            .unwrap();
        let back = store.open_current().unwrap();
        assert_same(&canonical(&back), &canonical(&base));
        if fresh {
            assert!(!back.has_delta());
            continue;
        }
        // Every row goes, but that of a node with an edge to the second of two nodes
        // sharing an id: a fragment names nodes by id, so it cannot point there (the
        // sample graph has such duplicates; a build makes them only when ambiguous).
        let unnameable = |v: u32| {
            base.out_edges(NodeIdx(v))
                .any(|e| base.lookup_id(&base.node(e.dst()).id()) != Some(e.dst()))
        };
        let d = back.delta.as_ref().expect("a delta layer");
        let rows: Vec<u32> = d.row_nodes(&back).map(|(_, v)| v).collect();
        for &v in &rows {
            assert!(
                unnameable(v),
                "seed {seed}: row {v} is the same as the base"
            );
        }
        let edited = edit.graph.nodes.len();
        reverted += edited - rows.len();
        for e in d.dropped(&back).iter() {
            let src = base.edge_src(EdgeIdx(e)).0;
            assert!(
                rows.contains(&src),
                "seed {seed}: base edge {e} stayed dropped"
            );
        }
        assert_eq!(back.verify(true), vec![], "seed {seed}");
    }
    assert!(reverted > 20, "only {reverted} rows reverted");
}
