//! Model test: random graphs are committed, reopened and every accessor is compared with
//! the in-memory builder they came from.

use std::collections::{BTreeMap, BTreeSet};

use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy as Resolution};
use batho_storage::{
    Artifact, EdgeIdx, EdgeInput, GraphBuilder, IdText, NodeIdx, NodeInput, RunKind, RunRecord,
    RunStatus, Store, StrId,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct NodeSpec {
    strs: [usize; 5],
    kind: usize,
    lang: usize,
    lines: (u32, u32),
    bytes: (u32, u32),
    hash: [u8; 8],
    flags: u8,
    community: u32,
}

#[derive(Debug, Clone)]
struct EdgeSpec {
    src: usize,
    dst: usize,
    rel: usize,
    roles: u8,
    strategy: usize,
    conf: Option<u32>,
    file: Option<usize>,
    line: u32,
}

fn small_or_big_u32() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..200, 1 => any::<u32>()]
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        [
            0usize..1000,
            0usize..1000,
            0usize..1000,
            0usize..1000,
            0usize..1000,
        ],
        0usize..NodeKind::ALL.len(),
        0usize..Language::ALL.len(),
        (small_or_big_u32(), small_or_big_u32()),
        (small_or_big_u32(), small_or_big_u32()),
        prop_oneof![any::<[u8; 8]>(), Just([0u8; 8])],
        any::<u8>(),
        prop_oneof![3 => Just(0u32), 1 => any::<u32>()],
    )
        .prop_map(
            |(strs, kind, lang, lines, bytes, hash, flags, community)| NodeSpec {
                strs,
                kind,
                lang,
                lines,
                bytes,
                hash,
                flags,
                community,
            },
        )
}

fn edge_spec() -> impl Strategy<Value = EdgeSpec> {
    (
        0usize..1000,
        0usize..1000,
        0usize..RelType::ALL.len(),
        any::<u8>(),
        0usize..Resolution::ALL.len(),
        prop_oneof![3 => Just(None), 1 => any::<u32>().prop_map(Some)],
        prop_oneof![3 => Just(None), 1 => (0usize..1000).prop_map(Some)],
        small_or_big_u32(),
    )
        .prop_map(
            |(src, dst, rel, roles, strategy, conf, file, line)| EdgeSpec {
                src,
                dst,
                rel,
                roles,
                strategy,
                conf,
                file,
                line,
            },
        )
}

/// Strings for every text field. The dictionary is front-coded in blocks of 16, so the
/// pool is large enough to span several blocks and rich in shared prefixes (paths, scoped
/// names, non-ASCII ones whose shared prefix can end inside a character).
fn pool() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            Just(String::new()),
            "[a-c]{1,3}",
            "[a-z_/.:]{0,12}",
            "\\PC{0,6}",
            "(src/|src/net/|include/linux/)[a-c]{0,3}\\.[ch]",
            "(é|ê|日本|a)(é|b|語){0,4}",
            "struct (a|ab)::[a-c]{0,3}",
            "[a-b]{100,140}",
        ],
        1..90,
    )
}

fn build(
    strings: &[String],
    nodes: &[NodeSpec],
    edges: &[EdgeSpec],
    self_loops: bool,
) -> GraphBuilder {
    let mut g = GraphBuilder::new();
    let s = |g: &mut GraphBuilder, k: usize| g.intern(&strings[k % strings.len()]);
    for n in nodes {
        let file = strings[n.strs[3] % strings.len()].clone();
        // Half the qualified names equal the simple name (the C case, stored as "same").
        let qn_idx = if n.strs[2] % 2 == 0 {
            n.strs[1]
        } else {
            n.strs[2]
        };
        let qn = strings[qn_idx % strings.len()].clone();
        // A third of the ids have the usual `file:qualified_name` shape, stored composed;
        // the builder holds half of those as composed, half as text of that shape.
        let id = if n.strs[0] % 6 == 0 {
            IdText::Composed
        } else if n.strs[0] % 3 == 0 {
            IdText::Text(g.intern(&format!("{file}:{qn}")))
        } else {
            IdText::Text(s(&mut g, n.strs[0]))
        };
        let node = NodeInput {
            id,
            name: s(&mut g, n.strs[1]),
            qualified_name: g.intern(&qn),
            kind: NodeKind::ALL[n.kind],
            file: s(&mut g, n.strs[3]),
            language: Language::ALL[n.lang],
            start_line: n.lines.0,
            end_line: n.lines.1,
            start_byte: n.bytes.0,
            end_byte: n.bytes.1,
            signature: s(&mut g, n.strs[4]),
            doc: s(&mut g, n.strs[2]),
            content_hash: n.hash,
            flags: NodeFlags(n.flags),
            community: n.community,
            pagerank: n.community.rotate_left(7),
        };
        g.add_node(node);
    }
    if nodes.is_empty() {
        return g;
    }
    for e in edges {
        let src = e.src % nodes.len();
        let dst = if self_loops && e.dst % 7 == 0 {
            src
        } else {
            e.dst % nodes.len()
        };
        let strategy = Resolution::ALL[e.strategy];
        let file = match e.file {
            Some(k) => s(&mut g, k),
            None => g.nodes[src].file,
        };
        // Every third edge with a line folds several use sites.
        let sites = if e.line != 0 && e.line % 3 == 0 {
            let lines = [e.line, e.line.saturating_add(1 + e.roles as u32 % 7)];
            g.add_sites(2 + u32::from(e.roles % 2), &lines)
        } else {
            batho_storage::SitesId::ONE
        };
        let edge = EdgeInput {
            src: NodeIdx(src as u32),
            dst: NodeIdx(dst as u32),
            rel: RelType::ALL[e.rel],
            roles: Roles(u16::from(e.roles)),
            confidence: e.conf.map_or(strategy.confidence(), f32::from_bits),
            strategy,
            file,
            line: e.line,
            sites,
        };
        g.add_edge(edge.clone());
        if e.roles % 5 == 0 {
            // A parallel duplicate.
            g.add_edge(edge);
        }
    }
    g
}

fn run() -> RunRecord {
    RunRecord {
        uuid: "run".into(),
        kind: RunKind::Build,
        started_at_ms: 5,
        ended_at_ms: 9,
        status: RunStatus::Completed,
        git_commit: Some("deadbeef".into()),
        git_branch: Some("main".into()),
        node_count: 0,
        edge_count: 0,
        file_count: 0,
        skipped_files: 0,
        duration_ms: 4,
        generation: 999,
        message: "ok".into(),
    }
}

type EdgeKey = (u32, u32, u8, u16, u32, u8, String, u32, u32, Vec<u32>);

fn model_edge(g: &GraphBuilder, e: &EdgeInput) -> EdgeKey {
    (
        e.src.0,
        e.dst.0,
        e.rel.code(),
        e.roles.0,
        e.confidence.to_bits(),
        e.strategy.code(),
        g.str(e.file).to_owned(),
        e.line,
        g.sites(e).count,
        g.sites(e).lines.to_vec(),
    )
}

fn art_edge(a: &Artifact, e: batho_storage::EdgeRef<'_>) -> EdgeKey {
    (
        e.src().0,
        e.dst().0,
        e.rel().code(),
        e.roles().0,
        e.confidence().to_bits(),
        e.strategy().code(),
        e.file().into_owned(),
        e.line(),
        e.site_count(),
        e.site_lines(),
    )
        .tap(|_| assert_eq!(a.edge(e.idx()).dst(), e.dst()))
        .tap(|_| {
            // The override is there exactly when the use-site file is not the source's.
            let src_file = a.node(e.src()).file_sid();
            match e.file_sid_override() {
                Some(f) => assert!(f == e.file_sid() && f != src_file),
                None => assert_eq!(e.file_sid(), src_file),
            }
        })
}

trait Tap: Sized {
    fn tap(self, f: impl FnOnce(&Self)) -> Self {
        f(&self);
        self
    }
}
impl<T> Tap for T {}

/// The dictionary holds exactly the distinct texts the graph stores (ids of the usual
/// `file:qualified_name` shape are composed on read, not stored), ascending, each found
/// by text at its own id.
fn check_dictionary(g: &GraphBuilder, a: &Artifact) {
    let mut want: BTreeSet<&str> = BTreeSet::from([""]);
    for n in &g.nodes {
        want.extend([n.name, n.qualified_name, n.file, n.signature, n.doc].map(|s| g.str(s)));
        if let Some(id) = g.stored_id(n) {
            want.insert(g.str(id));
        }
    }
    want.extend(g.edges.iter().map(|e| g.str(e.file)));
    let got: Vec<String> = (0..a.string_count())
        .map(|s| a.string(StrId(s)).into_owned())
        .collect();
    assert_eq!(got, want.iter().copied().collect::<Vec<_>>());
    for (s, text) in got.iter().enumerate() {
        assert_eq!(a.find_string(text), Some(StrId(s as u32)), "{text:?}");
        assert_eq!(&*a.string_bytes(StrId(s as u32)), text.as_bytes());
        let mut after = text.clone();
        after.push('\u{0}');
        if !want.contains(after.as_str()) {
            assert_eq!(a.find_string(&after), None);
        }
    }
    assert_eq!(a.string(StrId(a.string_count())), "");
}

/// `base_degrees_without` against the model's edges, for every relation type.
fn check_degrees(g: &GraphBuilder, a: &Artifact) {
    for &skipped in RelType::ALL {
        let (mut outgoing, mut incoming) = (vec![0u32; g.nodes.len()], vec![0u32; g.nodes.len()]);
        for e in g.edges.iter().filter(|e| e.rel != skipped) {
            outgoing[e.src.0 as usize] += 1;
            incoming[e.dst.0 as usize] += 1;
        }
        assert_eq!(
            a.base_degrees_without(skipped),
            Some((outgoing, incoming)),
            "without {skipped}"
        );
    }
}

fn check(g: &GraphBuilder, a: &Artifact) {
    assert_eq!(a.node_count() as usize, g.nodes.len());
    assert_eq!(a.edge_count() as usize, g.edges.len());
    assert_eq!(a.verify(true), vec![]);
    check_degrees(g, a);
    assert_eq!(a.string(StrId(0)), "");
    check_dictionary(g, a);
    let mut first_with_id: BTreeMap<String, u32> = BTreeMap::new();
    let mut by_name: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let mut by_file: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let r = a.node(NodeIdx(i as u32));
        assert_eq!(r.idx(), NodeIdx(i as u32));
        let id = g.id_of(n);
        assert_eq!(r.id(), id);
        assert!(r.id_is(&id));
        assert!(!r.id_is(&format!("{id}\u{0}")));
        let composed = *id == format!("{}:{}", g.str(n.file), g.str(n.qualified_name));
        assert_eq!(r.id_sid().is_none(), composed);
        assert_eq!(r.name(), g.str(n.name));
        assert_eq!(r.qualified_name(), g.str(n.qualified_name));
        assert_eq!(r.file(), g.str(n.file));
        assert_eq!(r.signature(), g.str(n.signature));
        assert_eq!(r.doc(), g.str(n.doc));
        assert_eq!(r.kind(), n.kind);
        assert_eq!(r.language(), n.language);
        assert_eq!((r.start_line(), r.end_line()), (n.start_line, n.end_line));
        assert_eq!((r.start_byte(), r.end_byte()), (n.start_byte, n.end_byte));
        assert_eq!(r.content_hash(), n.content_hash);
        assert_eq!(r.flags(), n.flags);
        assert_eq!(r.community(), n.community);
        assert_eq!(r.pagerank(), n.community.rotate_left(7));
        first_with_id.entry(id.into_owned()).or_insert(i as u32);
        by_name.entry(g.str(n.name)).or_default().push(i as u32);
        if !g.str(n.file).is_empty() {
            by_file.entry(g.str(n.file)).or_default().insert(i as u32);
        }
    }
    for (id, i) in &first_with_id {
        assert_eq!(a.lookup_id(id), Some(NodeIdx(*i)), "lookup_id({id:?})");
    }
    for (name, v) in &by_name {
        assert_eq!(
            a.lookup_name(name).map(|x| x.0).collect::<Vec<_>>(),
            *v,
            "lookup_name({name:?})"
        );
    }
    // Every prefix of every name (and one that matches nothing): the prefix range holds
    // exactly the nodes whose name starts with it.
    for name in by_name.keys() {
        for (cut, _) in name.char_indices().chain([(name.len(), ' ')]) {
            let prefix = &name[..cut];
            let mut got: Vec<u32> = a.lookup_name_prefix(prefix).map(|x| x.0).collect();
            got.sort_unstable();
            let want: Vec<u32> = (0..g.nodes.len() as u32)
                .filter(|&i| g.str(g.nodes[i as usize].name).starts_with(prefix))
                .collect();
            assert_eq!(got, want, "lookup_name_prefix({prefix:?})");
        }
    }
    assert_eq!(a.lookup_name_prefix("\u{10FFFF}").count(), 0);
    assert_eq!(a.lookup_id("\u{10FFFF}not there"), None);
    assert_eq!(a.lookup_name("\u{10FFFF}not there").count(), 0);

    let mut out: BTreeMap<u32, Vec<EdgeKey>> = BTreeMap::new();
    let mut inn: BTreeMap<u32, Vec<EdgeKey>> = BTreeMap::new();
    for e in &g.edges {
        out.entry(e.src.0).or_default().push(model_edge(g, e));
        inn.entry(e.dst.0).or_default().push(model_edge(g, e));
    }
    let mut all_edges = Vec::new();
    for i in 0..g.nodes.len() as u32 {
        let mut o: Vec<EdgeKey> = a.out_edges(NodeIdx(i)).map(|e| art_edge(a, e)).collect();
        let keys: Vec<(u8, u32)> = o.iter().map(|k| (k.2, k.1)).collect();
        assert!(
            keys.windows(2).all(|w| w[0] <= w[1]),
            "out-edges sorted by (rel, dst)"
        );
        assert_eq!(a.out_edges(NodeIdx(i)).len(), o.len());
        let mut im: Vec<EdgeKey> = a.in_edges(NodeIdx(i)).map(|e| art_edge(a, e)).collect();
        all_edges.extend(a.out_edges(NodeIdx(i)).map(|e| e.idx().0));
        o.sort();
        im.sort();
        let mut eo = out.remove(&i).unwrap_or_default();
        let mut ei = inn.remove(&i).unwrap_or_default();
        eo.sort();
        ei.sort();
        assert_eq!(o, eo, "out-edges of {i}");
        assert_eq!(im, ei, "in-edges of {i}");
    }
    assert_eq!(all_edges, (0..g.edges.len() as u32).collect::<Vec<_>>());

    for k in NodeKind::ALL {
        let want: Vec<u32> = (0..g.nodes.len() as u32)
            .filter(|i| g.nodes[*i as usize].kind == *k)
            .collect();
        assert_eq!(a.nodes_of_kind(*k).iter().collect::<Vec<_>>(), want, "{k}");
    }
    for r in RelType::ALL {
        let bm = a.edges_of_rel(*r);
        let want: Vec<u32> = (0..a.edge_count())
            .filter(|e| a.edge(EdgeIdx(*e)).rel() == *r)
            .collect();
        assert_eq!(bm.iter().collect::<Vec<_>>(), want, "{r}");
        assert_eq!(
            bm.len() as usize,
            g.edges.iter().filter(|e| e.rel == *r).count()
        );
    }
    for (role, name) in Roles::NAMED {
        let want: Vec<u32> = (0..a.edge_count())
            .filter(|e| a.edge(EdgeIdx(*e)).roles().contains(role))
            .collect();
        assert_eq!(
            a.edges_with_role(role).iter().collect::<Vec<_>>(),
            want,
            "{name}"
        );
        assert_eq!(
            a.edges_with_role(role).len() as usize,
            g.edges.iter().filter(|e| e.roles.contains(role)).count()
        );
    }
    assert!(a.edges_with_role(Roles(3)).is_empty());
    assert_eq!(
        a.files().collect::<Vec<_>>(),
        by_file.keys().copied().collect::<Vec<_>>()
    );
    for (f, set) in &by_file {
        assert_eq!(
            a.nodes_in_file(f).unwrap().iter().collect::<BTreeSet<_>>(),
            *set
        );
    }
    assert!(a.nodes_in_file("\u{10FFFF}not there").is_none());
    let last = a.last_run().unwrap();
    assert_eq!(last.generation, a.generation());
    assert_eq!(last.git_commit.as_deref(), Some("deadbeef"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn committed_graphs_read_back_exactly(
        strings in pool(),
        nodes in prop::collection::vec(node_spec(), 0..60),
        edges in prop::collection::vec(edge_spec(), 0..700),
        self_loops in any::<bool>(),
    ) {
        let g = build(&strings, &nodes, &edges, self_loops);
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::create_or_open(tmp.path()).unwrap();
        let info = store.lock_writer().unwrap().commit(&g, run()).unwrap();
        prop_assert_eq!(info.node_count as usize, g.nodes.len());
        let a = Artifact::open(tmp.path()).unwrap();
        check(&g, &a);
        // Reopening through the kept generation manifest gives the same view.
        let b = store.open_generation(info.generation).unwrap();
        check(&g, &b);
        // Reloading and recommitting is deterministic: the same segments, byte for byte.
        let again = store.lock_writer().unwrap().commit(&a.to_graph_builder(), run()).unwrap();
        prop_assert_eq!((again.segments_written, again.segments_reused), (0, 4));
    }
}

#[test]
fn the_empty_graph_round_trips() {
    let g = GraphBuilder::new();
    round_trip(&g);
}

#[test]
fn a_default_builder_without_the_empty_string_round_trips() {
    let mut g = GraphBuilder::default();
    let x = g.intern("x");
    g.add_node(NodeInput {
        end_line: 2,
        end_byte: 10,
        signature: x,
        content_hash: [1; 8],
        ..function_node(IdText::Text(x), x, x)
    });
    round_trip(&g);
}

#[test]
fn the_id_index_follows_id_bytes_across_tricky_file_names() {
    // `a.c:` sorts after `a.c.x:` although `a.c` sorts before `a.c.x`; a file holding `:`
    // makes one `file:` a prefix of another id; text ids interleave with composed ones.
    let files = ["a.c", "a.c.x", "a.c:x", "a", "b/a.c", "", "é.c", "a.c:"];
    let quals = ["f", "x:f", "", "f#2", "g", "é"];
    let mut g = GraphBuilder::new();
    for (i, file) in files.iter().enumerate() {
        for (j, qual) in quals.iter().enumerate() {
            let (f, q) = (g.intern(file), g.intern(qual));
            let id = match (i + j) % 3 {
                0 => IdText::Composed,
                1 => IdText::Text(g.intern(&format!("{file}:{qual}#2"))),
                _ => IdText::Text(g.intern(&format!("{file}{qual}"))),
            };
            g.add_node(function_node(id, q, f));
        }
    }
    round_trip(&g);
}

/// Commits `g` to a fresh store and checks the artifact against it.
fn round_trip(g: &GraphBuilder) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::create_or_open(tmp.path()).unwrap();
    store.lock_writer().unwrap().commit(g, run()).unwrap();
    check(g, &store.open_current().unwrap());
}

/// A one-line C function named `name` (its qualified name too) in `file`.
fn function_node(id: IdText, name: StrId, file: StrId) -> NodeInput {
    NodeInput {
        id,
        name,
        qualified_name: name,
        kind: NodeKind::Function,
        file,
        language: Language::C,
        start_line: 1,
        end_line: 1,
        start_byte: 0,
        end_byte: 0,
        signature: StrId(0),
        doc: StrId(0),
        content_hash: [0; 8],
        flags: NodeFlags::default(),
        community: 0,
        pagerank: 0,
    }
}
