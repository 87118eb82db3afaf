//! Whether two artifacts hold the same graph: the parity check of `patch_parity`
//! (every node by id with every property but the community, every edge as a multiset)
//! for trees too large to hold both canonical forms in memory, such as a patched kernel
//! artifact against a full build of the same tree. Each node and edge is hashed to 64
//! bits, the sorted hash lists are compared, and the items behind differing hashes are
//! printed (up to `--show N` per side, default 20).
//!
//! Usage: `artifact_eq [--show N] ROOT_A ROOT_B` (repository roots, or their `.batho`
//! folders). Exit code 0 when equal, 1 when not, 2 on a usage or open error.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use batho_engine::patch::canon::{edge_canon, node_canon};
use batho_storage::Store;
use batho_storage::input::GraphBuilder;

fn open(root: &Path) -> Result<GraphBuilder, String> {
    let dir: PathBuf = if root.ends_with(".batho") {
        root.to_path_buf()
    } else {
        root.join(".batho")
    };
    if !dir.is_dir() {
        return Err(format!("{}: no artifact", dir.display()));
    }
    let store = Store::create_or_open(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let art = store
        .open_current()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(art.to_graph_builder())
}

fn hash_of<T: Hash>(t: &T) -> u64 {
    // SipHash with fixed keys: the same item hashes alike in both graphs.
    let mut h = std::hash::DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// Sorted hashes of every node (id and properties) and every edge of `g`.
fn hashes(g: &GraphBuilder) -> Vec<u64> {
    let mut out: Vec<u64> = g
        .nodes
        .iter()
        .map(|n| hash_of(&(g.id_of(n), node_canon(g, n))))
        .chain(g.edges.iter().map(|e| hash_of(&edge_canon(g, e))))
        .collect();
    out.sort_unstable();
    out
}

/// Hashes in `a` but not in `b`, as multisets.
fn missing(a: &[u64], b: &[u64]) -> HashSet<u64> {
    let (mut i, mut j) = (0, 0);
    let mut out = HashSet::new();
    while i < a.len() {
        if j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < b.len() && b[j] < a[i] {
            j += 1;
        } else {
            out.insert(a[i]);
            i += 1;
        }
    }
    out
}

/// Prints up to `show` items of `g` whose hashes are in `only`.
fn show_items(label: &str, g: &GraphBuilder, only: &HashSet<u64>, show: usize) {
    let mut shown = 0;
    for n in &g.nodes {
        let item = (g.id_of(n), node_canon(g, n));
        if shown < show && only.contains(&hash_of(&item)) {
            println!("  {label} node {item:?}");
            shown += 1;
        }
    }
    for e in &g.edges {
        let item = edge_canon(g, e);
        if shown < show && only.contains(&hash_of(&item)) {
            println!("  {label} edge {item:?}");
            shown += 1;
        }
    }
}

fn main() {
    let mut show = 20usize;
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--show" {
            show = args.next().and_then(|v| v.parse().ok()).unwrap_or(show);
        } else {
            roots.push(PathBuf::from(a));
        }
    }
    let [a, b] = roots.as_slice() else {
        eprintln!("usage: artifact_eq [--show N] ROOT_A ROOT_B");
        std::process::exit(2);
    };
    let (ga, gb) = match (open(a), open(b)) {
        (Ok(ga), Ok(gb)) => (ga, gb),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("artifact_eq: {e}");
            std::process::exit(2);
        }
    };
    let (ha, hb) = (hashes(&ga), hashes(&gb));
    println!(
        "A: {} nodes, {} edges; B: {} nodes, {} edges",
        ga.nodes.len(),
        ga.edges.len(),
        gb.nodes.len(),
        gb.edges.len()
    );
    let (only_a, only_b) = (missing(&ha, &hb), missing(&hb, &ha));
    if only_a.is_empty() && only_b.is_empty() {
        println!("equal");
        return;
    }
    println!(
        "differ: {} items only in A, {} only in B",
        only_a.len(),
        only_b.len()
    );
    show_items("A", &ga, &only_a, show);
    show_items("B", &gb, &only_b, show);
    std::process::exit(1);
}
