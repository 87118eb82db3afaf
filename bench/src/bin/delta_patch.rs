//! The cost of a patch committed as a delta layer on a real artifact, and what the delta
//! costs readers: commit time and bytes written (delta vs a full materialised base), then
//! point-lookup and out-edge latency on the base-only artifact vs the merged one.
//!
//! Usage: `delta_patch [--runs N] BATHO_DIR [FILE]`. The store is copied to a temporary
//! directory first (the original is not touched). FILE (default: the file with the most
//! nodes) is replaced by its own nodes with every line shifted by one, and the same
//! out-edges, as an edit that moves a file's code down a line would produce.
//! Prints one `key=value` line.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use batho_storage::fuzzing::{Rng, copy_store};
use batho_storage::{
    Artifact, EdgeInput, GraphBuilder, GraphFragment, NodeIdx, NodeInput, RunKind, RunRecord,
    RunStatus, Store,
};

fn run_record() -> RunRecord {
    RunRecord {
        uuid: format!("bench-{}", std::process::id()),
        kind: RunKind::Patch,
        started_at_ms: 0,
        ended_at_ms: 0,
        status: RunStatus::Completed,
        git_commit: None,
        git_branch: None,
        node_count: 0,
        edge_count: 0,
        file_count: 1,
        skipped_files: 0,
        duration_ms: 0,
        generation: 0,
        message: "delta_patch bench".into(),
    }
}

fn node_input(g: &mut GraphBuilder, n: batho_storage::NodeRef<'_>, shift: u32) -> NodeInput {
    let (file, qualified_name) = (g.intern(&n.file()), g.intern(&n.qualified_name()));
    NodeInput {
        id: g.id_text(&n.id(), file, qualified_name),
        name: g.intern(&n.name()),
        qualified_name,
        kind: n.kind(),
        file,
        language: n.language(),
        start_line: n.start_line() + shift,
        end_line: n.end_line() + shift,
        start_byte: n.start_byte(),
        end_byte: n.end_byte(),
        signature: g.intern(&n.signature()),
        doc: g.intern(&n.doc()),
        content_hash: n.content_hash(),
        flags: n.flags(),
        community: n.community(),
        pagerank: n.pagerank(),
    }
}

/// `file` re-stated with every line shifted by one.
fn fragment(a: &Artifact, file: &str) -> GraphFragment {
    let mut g = GraphBuilder::new();
    let mut at = std::collections::HashMap::new();
    let members: Vec<u32> = a
        .nodes_in_file(file)
        .map(|b| b.iter().collect())
        .unwrap_or_default();
    for &b in &members {
        let input = node_input(&mut g, a.node(NodeIdx(b)), 1);
        at.insert(b, g.add_node(input));
    }
    for &b in &members {
        for e in a.out_edges(NodeIdx(b)) {
            let dst = match at.get(&e.dst().0) {
                Some(&d) => d,
                None => {
                    let input = node_input(&mut g, a.node(e.dst()), 0);
                    let d = g.add_node(input);
                    at.insert(e.dst().0, d);
                    d
                }
            };
            let f = g.intern(&e.file());
            g.add_edge(EdgeInput {
                src: at[&b],
                dst,
                rel: e.rel(),
                roles: e.roles(),
                confidence: e.confidence(),
                strategy: e.strategy(),
                file: f,
                line: e.line() + 1,
                sites: batho_storage::SitesId::ONE,
            });
        }
    }
    GraphFragment {
        replaced_files: [file.to_owned()].into(),
        graph: g,
    }
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e9
}

/// Median ns of `lookup_id` and of walking all out-edges, over `ids`.
fn latencies(a: &Artifact, ids: &[String], runs: usize) -> (f64, f64) {
    let mut look = Vec::with_capacity(ids.len() * runs);
    let mut walk = Vec::with_capacity(ids.len() * runs);
    for _ in 0..runs {
        for id in ids {
            let t = Instant::now();
            let n = std::hint::black_box(a.lookup_id(id)).expect("id present");
            look.push(t.elapsed());
            let t = Instant::now();
            let mut acc = 0u32;
            for e in a.out_edges(n) {
                acc ^= e.dst().0 ^ e.line();
            }
            std::hint::black_box(acc);
            walk.push(t.elapsed());
        }
    }
    (median(look), median(walk))
}

fn copy(from: &Path, tag: &str) -> PathBuf {
    let to = std::env::temp_dir().join(format!("batho-delta-bench-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    copy_store(from, &to).expect("copy the store");
    to
}

fn main() {
    let mut runs = 20usize;
    let mut positional = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--runs" {
            runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N");
        } else {
            positional.push(a);
        }
    }
    let [dir, rest @ ..] = positional.as_slice() else {
        eprintln!("usage: delta_patch [--runs N] BATHO_DIR [FILE]");
        std::process::exit(2);
    };
    let (d1, d2) = (copy(Path::new(dir), "delta"), copy(Path::new(dir), "full"));
    let base = Artifact::open(&d1).expect("open the artifact");
    let file = match rest.first() {
        Some(f) => f.clone(),
        None => base
            .files()
            .max_by_key(|f| base.nodes_in_file(f).map_or(0, |b| b.len()))
            .expect("a file")
            .into_owned(),
    };
    let frag = fragment(&base, &file);

    let store = Store::create_or_open(&d1).expect("store");
    let mut w = store.lock_writer().expect("lock");
    let t = Instant::now();
    let info = w
        .commit_fragment(&base, &frag, run_record())
        .expect("delta commit");
    let delta_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(w);
    let merged = store.open_current().expect("open merged");
    assert!(
        merged.has_delta(),
        "the patch was committed as a fresh base"
    );

    let store2 = Store::create_or_open(&d2).expect("store");
    let base2 = store2.open_current().expect("open");
    let mut w2 = store2.lock_writer().expect("lock");
    w2.set_delta_limit(0);
    let t = Instant::now();
    let full = w2
        .commit_fragment(&base2, &frag, run_record())
        .expect("full commit");
    let full_ms = t.elapsed().as_secs_f64() * 1e3;

    let mut rng = Rng::new(7);
    let sample: Vec<String> = (0..2000)
        .map(|_| {
            loop {
                let n = NodeIdx(rng.below(u64::from(base.node_count())) as u32);
                if base.is_live(n) {
                    break base.node(n).id().into_owned();
                }
            }
        })
        .collect();
    let in_file: Vec<String> = merged
        .nodes_in_file(&file)
        .map(|b| {
            b.iter()
                .take(2000)
                .map(|i| merged.node(NodeIdx(i)).id().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let (b_look, b_walk) = latencies(&base, &sample, runs);
    let (m_look, m_walk) = latencies(&merged, &sample, runs);
    let (f_look, f_walk) = latencies(&merged, &in_file, runs);
    let t = Instant::now();
    let issues = merged.verify(true);
    let verify_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "file={file} file_nodes={} artifact_bytes={} delta_commit_ms={delta_ms:.1} delta_bytes_written={} \
         full_commit_ms={full_ms:.1} full_bytes_written={} base_lookup_ns={b_look:.0} merged_lookup_ns={m_look:.0} \
         merged_lookup_in_patched_file_ns={f_look:.0} base_out_walk_ns={b_walk:.0} merged_out_walk_ns={m_walk:.0} \
         merged_out_walk_in_patched_file_ns={f_walk:.0} merged_verify_deep_ms={verify_ms:.0} verify_issues={}",
        in_file.len(),
        base.size_bytes(),
        info.bytes_written,
        full.bytes_written,
        issues.len()
    );
    for d in [d1, d2] {
        let _ = std::fs::remove_dir_all(d);
    }
}
