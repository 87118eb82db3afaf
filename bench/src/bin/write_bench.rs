//! Writes to a writable graph through the embedding API (`WritableDatabase`), the
//! workloads of issue 25's targets; `bench/writes/run.sh` runs them beside Kùzu.
//!
//! Usage: `write_bench WORKLOAD DIR [COUNT]` (`write_bench group DIR [THREADS [COUNT]]`),
//! DIR a folder that must not exist yet.
//! Workloads (each prints one line of `key=value`):
//! - `single`: COUNT statements (default 10,000) `MATCH (h:Hub) CREATE (n:Item {id, name,
//!   score})-[:BELONGS]->(h)`, each committed alone without fsync: `p50_us p90_us p99_us`.
//! - `single-fsync`: the same with an fsync per commit (COUNT default 300).
//! - `transaction`: COUNT such statements (default 10,000) between BEGIN and COMMIT, one
//!   fsync: `total_ms`.
//! - `bulk`: COUNT nodes (default 1,000,000) by `UNWIND $rows AS r CREATE (:Node {...})` in
//!   batches of 10,000 (`load_s`), the parameters given to the database
//!   (`execute_owned`, as a caller that built them for the load would), an index on `:Node(id)` and 2 × COUNT relationships by
//!   `UNWIND $rows AS r MATCH (a:Node {id: r.a}), (b:Node {id: r.b}) CREATE (a)-[:E]->(b)`
//!   (`edges_s`; only the statements are timed, not building their rows), then a
//!   checkpoint and a reopen: `checkpoint_s reopen_s peak_rss_mb`, and
//!   a read of every node on the reopened graph (`read_ms`).
//! - `group`: THREADS threads (default 4) each commit COUNT such statements (default 200)
//!   alone, with an fsync, through one database behind a `Mutex`: first as before group
//!   commit (`Durability::Fsync`, the fsync under the lock), then with group commit
//!   (`Durability::Group`, the ticket waited on after the lock), each on a fresh graph in
//!   DIR. For each: `commits_per_s`, `p50_us` and `p90_us` (from asking for the lock to
//!   the commit on disk) and `fsyncs` of the log, prefixed `fsync_` and `group_`.
//!
//! Every workload ends with `nodes=N relationships=R` of the final graph.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use batho_engine::query::{Durability, Value, WritableDatabase};

const STATEMENT: &str =
    "MATCH (h:Hub) CREATE (n:Item {id: $id, name: $name, score: $score})-[:BELONGS]->(h)";
const BULK: &str = "UNWIND $rows AS r CREATE (:Node {id: r.id, name: r.name, score: r.score})";
const BULK_EDGES: &str =
    "UNWIND $rows AS r MATCH (a:Node {id: r.a}), (b:Node {id: r.b}) CREATE (a)-[:E]->(b)";
const BULK_BATCH: usize = 10_000;

fn item_params(i: usize) -> BTreeMap<String, Value> {
    BTreeMap::from([
        ("id".to_string(), Value::Int(i as i64)),
        ("name".to_string(), Value::String(format!("item {i}"))),
        ("score".to_string(), Value::Float(i as f64 * 0.5)),
    ])
}

fn with_hub(dir: &Path) -> WritableDatabase {
    let mut db = WritableDatabase::create(dir).expect("create the graph");
    db.execute("CREATE (:Hub {id: 0})", &BTreeMap::new())
        .expect("create the hub");
    db
}

fn percentile(sorted: &[Duration], share: f64) -> f64 {
    let index = ((sorted.len() as f64 * share) as usize).min(sorted.len() - 1);
    sorted[index].as_secs_f64() * 1e6
}

fn single(dir: &Path, count: usize, durability: Durability) {
    let mut db = with_hub(dir);
    db.set_durability(durability);
    let mut times = Vec::with_capacity(count);
    for i in 0..count {
        let params = item_params(i);
        let start = Instant::now();
        db.execute(STATEMENT, &params).expect("statement");
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "p50_us={:.1} p90_us={:.1} p99_us={:.1}",
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        percentile(&times, 0.99)
    );
    final_counts(&db);
}

fn transaction(dir: &Path, count: usize) {
    let mut db = with_hub(dir);
    let params: Vec<_> = (0..count).map(item_params).collect();
    let start = Instant::now();
    db.begin().expect("begin");
    for p in &params {
        db.execute(STATEMENT, p).expect("statement");
    }
    db.commit().expect("commit");
    println!("total_ms={:.1}", start.elapsed().as_secs_f64() * 1e3);
    final_counts(&db);
}

fn bulk(dir: &Path, count: usize) {
    let mut db = WritableDatabase::create(dir).expect("create the graph");
    // Only the statements are timed, as in the transaction workload: each batch's rows are
    // built before its clock starts (the Kùzu script does the same).
    let mut load = Duration::ZERO;
    for batch_start in (0..count).step_by(BULK_BATCH) {
        let rows = (batch_start..(batch_start + BULK_BATCH).min(count))
            .map(|i| {
                Value::Map(BTreeMap::from([
                    ("id".to_string(), Value::Int(i as i64)),
                    ("name".to_string(), Value::String(format!("node {i}"))),
                    ("score".to_string(), Value::Float(i as f64)),
                ]))
            })
            .collect();
        let params = BTreeMap::from([("rows".to_string(), Value::List(rows))]);
        let start = Instant::now();
        db.execute_owned(BULK, params).expect("bulk batch");
        load += start.elapsed();
    }
    let start = Instant::now();
    db.execute("CREATE INDEX ON :Node(id)", &BTreeMap::new())
        .expect("index");
    let mut edges = start.elapsed();
    for batch_start in (0..2 * count).step_by(BULK_BATCH) {
        let rows = (batch_start..(batch_start + BULK_BATCH).min(2 * count))
            .map(|i| edge_row(i, count))
            .collect();
        let params = BTreeMap::from([("rows".to_string(), Value::List(rows))]);
        let start = Instant::now();
        db.execute_owned(BULK_EDGES, params).expect("bulk edges");
        edges += start.elapsed();
    }
    let start = Instant::now();
    db.checkpoint().expect("checkpoint");
    let checkpoint = start.elapsed();
    drop(db);
    let start = Instant::now();
    let mut db = WritableDatabase::open(dir).expect("reopen");
    let reopen = start.elapsed();
    let start = Instant::now();
    let read = db
        .execute(
            "MATCH (n:Node) RETURN sum(n.score) AS total",
            &BTreeMap::new(),
        )
        .expect("read");
    let read_ms = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "load_s={:.2} edges_s={:.2} checkpoint_s={:.2} reopen_s={:.2} read_ms={read_ms:.1} sum={} peak_rss_mb={}",
        load.as_secs_f64(),
        edges.as_secs_f64(),
        checkpoint.as_secs_f64(),
        reopen.as_secs_f64(),
        read.rows[0][0],
        peak_rss_mb()
    );
    final_counts(&db);
}

/// What THREADS threads committing through one shared database measured.
struct SharedRun {
    commits_per_s: f64,
    p50_us: f64,
    p90_us: f64,
    fsyncs: u64,
    counts: (u64, u64),
}

fn group(dir: &Path, threads: usize, count: usize) {
    std::fs::create_dir(dir).expect("create the folder");
    let fsync = shared_commits(&dir.join("fsync"), threads, count, Durability::Fsync);
    let group = shared_commits(&dir.join("group"), threads, count, Durability::Group);
    let mut line = String::new();
    for (name, run) in [("fsync", &fsync), ("group", &group)] {
        line.push_str(&format!(
            "{name}_commits_per_s={:.0} {name}_p50_us={:.1} {name}_p90_us={:.1} {name}_fsyncs={} ",
            run.commits_per_s, run.p50_us, run.p90_us, run.fsyncs
        ));
    }
    println!("{}", line.trim_end());
    assert_eq!(fsync.counts, group.counts, "both graphs end the same");
    println!("nodes={} relationships={}", group.counts.0, group.counts.1);
}

/// `threads` threads each commit `count` statements alone through one database behind a
/// mutex; under [`Durability::Group`] each waits on its ticket after releasing the lock.
fn shared_commits(dir: &Path, threads: usize, count: usize, durability: Durability) -> SharedRun {
    let mut db = with_hub(dir);
    db.set_durability(durability);
    let syncs_before = db.log_syncs();
    let shared = Mutex::new(db);
    let start = Instant::now();
    let mut times: Vec<Duration> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let shared = &shared;
                scope.spawn(move || {
                    (0..count)
                        .map(|i| timed_commit(shared, &item_params(thread * count + i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("a writer thread"))
            .collect()
    });
    let elapsed = start.elapsed();
    let db = shared.into_inner().expect("no writer panicked");
    times.sort();
    SharedRun {
        commits_per_s: times.len() as f64 / elapsed.as_secs_f64(),
        p50_us: percentile(&times, 0.5),
        p90_us: percentile(&times, 0.9),
        fsyncs: db.log_syncs() - syncs_before,
        counts: db.counts(),
    }
}

/// One statement committed through the shared database: the time from asking for the lock
/// until the commit is on disk.
fn timed_commit(shared: &Mutex<WritableDatabase>, params: &BTreeMap<String, Value>) -> Duration {
    let start = Instant::now();
    let ticket = {
        let mut db = shared.lock().expect("no writer panicked");
        db.execute(STATEMENT, params).expect("statement");
        db.take_sync_ticket()
    };
    if let Some(ticket) = ticket {
        ticket.wait().expect("fsync");
    }
    start.elapsed()
}

/// Relationship `i` of the bulk load: from node `i / 2` to a node spread over the graph
/// (the same pairs as `kuzu_writes.py`).
fn edge_row(i: usize, nodes: usize) -> Value {
    let a = i / 2;
    let b = (i * 7919 + 13) % nodes;
    Value::Map(BTreeMap::from([
        ("a".to_string(), Value::Int(a as i64)),
        ("b".to_string(), Value::Int(b as i64)),
    ]))
}

fn final_counts(db: &WritableDatabase) {
    let (nodes, relationships) = db.counts();
    println!("nodes={nodes} relationships={relationships}");
}

/// The process's peak resident set, from /proc (0 where there is none).
fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(workload), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!(
            "usage: write_bench single|single-fsync|transaction|bulk DIR [COUNT], write_bench group DIR [THREADS [COUNT]]"
        );
        std::process::exit(2);
    };
    let number = |index: usize, default: usize| {
        args.get(index)
            .and_then(|c| c.parse().ok())
            .unwrap_or(default)
    };
    let count = |default: usize| number(2, default);
    let dir = Path::new(dir);
    match workload.as_str() {
        "single" => single(dir, count(10_000), Durability::NoFsync),
        "single-fsync" => single(dir, count(300), Durability::Fsync),
        "transaction" => transaction(dir, count(10_000)),
        "bulk" => bulk(dir, count(1_000_000)),
        "group" => group(dir, number(2, 4), number(3, 200)),
        other => {
            eprintln!("unknown workload {other}");
            std::process::exit(2);
        }
    }
}
