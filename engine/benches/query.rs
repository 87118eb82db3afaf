//! Query latency on a synthetic Lua-sized call graph (1,000 functions in 60 files,
//! 3,000 CALLS edges), in-process from query text to rows, with the plan cache warm and
//! cold. Prints the median and p90 of many runs per query.
//!
//! Run: `cargo bench -p batho-engine --bench query`. Pass `-- <path>` to measure an
//! existing artifact instead (a repo root or `.batho` dir), and `-- <path> <name>` to
//! start from the function called `<name>` instead of `luaD_call` (the regex query
//! matches the first six characters of `<name>` followed by `.*`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use batho_engine::query::{Database, Value};
use batho_schema::{Language, NodeFlags, NodeKind, RelType, Roles, Strategy};
use batho_storage::{EdgeInput, GraphBuilder, IdText, NodeInput, Store};

fn synthetic(dir: &std::path::Path) -> Database {
    let mut g = GraphBuilder::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move |n: u32| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % u64::from(n)) as u32
    };
    let empty = g.intern("");
    let mut funcs = Vec::new();
    for i in 0..1000u32 {
        let file = format!("src/l{}.c", i % 60);
        let name = if i == 500 {
            "luaD_call".to_string()
        } else {
            format!("fn_{i}")
        };
        let node = NodeInput {
            id: IdText::Text(g.intern(&format!("{file}:{name}"))),
            name: g.intern(&name),
            qualified_name: g.intern(&name),
            kind: NodeKind::Function,
            file: g.intern(&file),
            language: Language::C,
            start_line: i,
            end_line: i + 10,
            start_byte: 0,
            end_byte: 100,
            signature: empty,
            doc: batho_storage::StrId(0),
            content_hash: [0; 8],
            flags: NodeFlags::EXPORTED,
            community: 0,
            pagerank: 0,
        };
        funcs.push(g.add_node(node));
    }
    let mut seen = std::collections::HashSet::new();
    while seen.len() < 3000 {
        // A skewed callee distribution, like real call graphs: luaD_call is popular.
        let s = rnd(1000);
        let d = if rnd(40) == 0 { 500 } else { rnd(1000) };
        if s != d && seen.insert((s, d)) {
            g.add_edge(EdgeInput {
                src: funcs[s as usize],
                dst: funcs[d as usize],
                rel: RelType::Calls,
                roles: Roles::NONE,
                confidence: 1.0,
                strategy: Strategy::Direct,
                file: empty,
                line: 1,
                sites: batho_storage::SitesId::ONE,
            });
        }
    }
    let batho = dir.join(".batho");
    let store = Store::create_or_open(&batho).expect("store");
    store
        .lock_writer()
        .expect("lock")
        .commit(&g, batho_storage::fuzzing::sample_run(&g))
        .expect("commit");
    Database::open(dir).expect("open")
}

/// Median and p90 of `db.query(text)` over many runs, twice: with the plan cache warm
/// (the same text every time), and cold (a distinct comment makes every text new, so each
/// run parses, checks and plans before executing: the counterpart of another engine's
/// `execute(text)` without a prepared statement).
fn measure(db: &Database, label: &str, q: &str, params: &BTreeMap<String, Value>) {
    const RUNS: usize = 2000;
    let first = db.query(q, params).expect("query");
    let time = |text: &str| {
        let t = Instant::now();
        let r = db.query(text, params).expect("query");
        std::hint::black_box(&r);
        t.elapsed()
    };
    let mut warm: Vec<Duration> = (0..RUNS).map(|_| time(q)).collect();
    let texts: Vec<String> = (0..RUNS).map(|i| format!("{q} // run {i}")).collect();
    let mut cold: Vec<Duration> = texts.iter().map(|t| time(t)).collect();
    warm.sort();
    cold.sort();
    println!(
        "{label:<28} rows={:<5} warm median={:>9.1?} p90={:>9.1?}  cold median={:>9.1?} p90={:>9.1?}",
        first.rows.len(),
        warm[RUNS / 2],
        warm[RUNS * 9 / 10],
        cold[RUNS / 2],
        cold[RUNS * 9 / 10],
    );
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let arg = args.next();
    let name = args.next().unwrap_or_else(|| "luaD_call".to_string());
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = match arg {
        Some(p) => Database::open(&PathBuf::from(p)).expect("open artifact"),
        None => synthetic(tmp.path()),
    };
    let mut none = BTreeMap::new();
    none.insert("name".to_string(), Value::from(name.as_str()));
    measure(
        &db,
        "callers",
        "MATCH (c)-[:CALLS]->(f:Function {name: $name}) RETURN c.id",
        &none,
    );
    measure(
        &db,
        "distinct callees <= 3 hops",
        "MATCH (f:Function {name: $name})-[:CALLS*1..3]->(g) RETURN DISTINCT g.id",
        &none,
    );
    // A regex over every function name: answered from the name index's prefix range.
    let prefix: String = name.chars().take(6).collect();
    let regex_count = format!("MATCH (f:Function) WHERE f.name =~ '{prefix}.*' RETURN count(*)");
    measure(
        &db,
        &format!("regex count '{prefix}.*'"),
        &regex_count,
        &none,
    );
    // The target: a node 3 hops away if there is one, else 2, else 1.
    let mut p = BTreeMap::new();
    for hops in [3, 2, 1] {
        let q = format!(
            "MATCH (f:Function {{name: $name}})-[:CALLS*{hops}]->(g) RETURN f.id, g.id LIMIT 1"
        );
        let res = db.query(&q, &none).expect("target");
        if let Some([Value::String(s), Value::String(d)]) = res.rows.first().map(Vec::as_slice) {
            p.insert("src".to_string(), Value::from(s.as_str()));
            p.insert("dst".to_string(), Value::from(d.as_str()));
            break;
        }
    }
    if p.is_empty() {
        println!("shortest path: skipped ({name} calls nothing)");
        return;
    }
    measure(
        &db,
        "shortest path",
        "MATCH p = shortestPath((a {id: $src})-[:CALLS*..10]->(b {id: $dst})) RETURN p",
        &p,
    );
}
