//! Size and speed at kernel scale: builds a random graph (default 4M nodes / 20M edges),
//! commits it, then times open, lookup_id, lookup_name and adjacency walks.
//!
//! `cargo bench -p batho-storage --bench open -- [nodes] [edges]`

use std::time::Instant;

use batho_storage::fuzzing::{Rng, sample_graph, sample_run};
use batho_storage::{Artifact, NodeIdx, Store};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let nodes = args.first().copied().unwrap_or(4_000_000) as usize;
    let edges = args.get(1).copied().unwrap_or(20_000_000) as usize;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".batho");

    let t = Instant::now();
    let g = sample_graph(42, nodes, edges);
    let string_bytes: usize = g.strings().map(str::len).sum();
    println!(
        "generate: {:.2?} ({} nodes, {} edges, {} strings, {} string bytes)",
        t.elapsed(),
        nodes,
        edges,
        g.string_count(),
        string_bytes
    );

    let store = Store::create_or_open(&dir).expect("store");
    let t = Instant::now();
    let info = store
        .lock_writer()
        .expect("lock")
        .commit(&g, sample_run(&g))
        .expect("commit");
    println!(
        "commit: {:.2?} ({} bytes written)",
        t.elapsed(),
        info.bytes_written
    );
    let mut rng = Rng::new(9);
    let picks: Vec<usize> = (0..100_000)
        .map(|_| rng.below(nodes as u64) as usize)
        .collect();
    let ids: Vec<String> = picks
        .iter()
        .map(|&i| g.id_of(&g.nodes[i]).into_owned())
        .collect();
    let names: Vec<String> = picks
        .iter()
        .take(10_000)
        .map(|&i| g.str(g.nodes[i].name).to_owned())
        .collect();
    drop(g);

    let rounds = 100;
    let mut kept = Vec::with_capacity(rounds);
    let t = Instant::now();
    for _ in 0..rounds {
        kept.push(Artifact::open(&dir).expect("open"));
    }
    println!(
        "open (warm page cache): {:.2?} per open",
        t.elapsed() / rounds as u32
    );
    let t = Instant::now();
    drop(kept);
    println!(
        "drop (munmap): {:.2?} per artifact",
        t.elapsed() / rounds as u32
    );
    let t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(store.runs().expect("runs").len());
    }
    println!(
        "manifest read+decode alone: {:.2?}",
        t.elapsed() / rounds as u32
    );

    let a = Artifact::open(&dir).expect("open");
    let t = Instant::now();
    let first = a.lookup_id(&ids[0]);
    println!("first lookup_id after open: {:.2?}", t.elapsed());
    assert!(first.is_some());
    let t = Instant::now();
    let mut found = 0;
    for id in &ids {
        found += usize::from(a.lookup_id(id).is_some());
    }
    assert_eq!(found, ids.len());
    println!(
        "lookup_id: {:.0?} ns avg over {} ids",
        t.elapsed().as_nanos() as f64 / ids.len() as f64,
        ids.len()
    );
    let t = Instant::now();
    let mut hits = 0;
    for n in &names {
        hits += a.lookup_name(n).count();
    }
    println!(
        "lookup_name: {:.0?} ns avg ({} hits over {} names)",
        t.elapsed().as_nanos() as f64 / names.len() as f64,
        hits,
        names.len()
    );
    let t = Instant::now();
    let mut sum = 0u64;
    for i in 0..a.node_count().min(1_000_000) {
        for e in a.out_edges(NodeIdx(i)) {
            sum += u64::from(e.dst().0) + u64::from(e.line());
        }
    }
    println!("out_edges (dst+line) over 1M nodes: {:.2?}", t.elapsed());
    let t = Instant::now();
    for i in 0..a.node_count().min(1_000_000) {
        for e in a.in_edges(NodeIdx(i)) {
            sum += u64::from(e.src().0);
        }
    }
    println!("in_edges (src) over 1M nodes: {:.2?}", t.elapsed());
    std::hint::black_box(sum);
    let t = Instant::now();
    let k = a.nodes_of_kind(batho_schema::NodeKind::Function).len();
    println!(
        "first nodes_of_kind(Function): {:.2?} ({k} nodes)",
        t.elapsed()
    );

    let size = a.size_bytes();
    println!(
        "artifact: {size} bytes = {:.1} MB; {:.1} bytes/node + edges share; {:.2} bytes per (node+edge)",
        size as f64 / 1e6,
        size as f64 / nodes as f64,
        size as f64 / (nodes + edges) as f64
    );
    for s in &a.manifest().layers[0].segments {
        let kind = batho_storage::format::SegmentKind::from_code(s.kind).map_or("?", |k| k.name());
        println!("  segment {kind:8} {:>12} bytes", s.len);
    }
    let t = Instant::now();
    let issues = a.verify(false);
    println!(
        "verify(quick): {:.2?}, {} issues",
        t.elapsed(),
        issues.len()
    );
    let t = Instant::now();
    let issues = a.verify(true);
    println!("verify(deep): {:.2?}, {} issues", t.elapsed(), issues.len());
}
