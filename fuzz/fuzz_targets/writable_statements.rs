//! Any BQL text run on a small writable graph: never a panic, and a statement that fails
//! changes nothing (the graph reads the same before and after it). Every 64 inputs the
//! graph is reopened from its folder and must read the same as in memory: what was
//! committed is what the log replays.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use batho_engine::query::{Durability, Limits, QueryOptions, WritableDatabase};
use libfuzzer_sys::fuzz_target;

struct State {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    db: WritableDatabase,
    inputs: u64,
}

const SEED: &str = "CREATE (a:A {name: 'a', n: 1})-[:R {w: 1.5}]->(b:B {name: 'b', tags: ['x', 'y']}), \
                    (b)-[:R]->(c:A:C {n: 2}), (c)-[:S]->(a)";

fn fresh() -> State {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("graph");
    let mut db = WritableDatabase::create(&path).expect("create");
    db.set_durability(Durability::NoFsync);
    db.execute(SEED, &BTreeMap::new()).expect("seed");
    State { _dir: dir, path, db, inputs: 0 }
}

fn options() -> QueryOptions {
    QueryOptions {
        limits: Limits {
            max_rows: 10_000,
            max_work: 1_000_000,
            max_intermediate_rows: 100_000,
            max_held_bytes: 256 << 20,
            timeout: Some(Duration::from_secs(1)),
        },
        ..QueryOptions::default()
    }
}

/// The whole graph as text (Debug, so a NaN property reads equal to itself).
fn dump(db: &mut WritableDatabase) -> String {
    let nodes = db
        .execute("MATCH (n) RETURN id(n), labels(n), properties(n) ORDER BY id(n)", &BTreeMap::new())
        .expect("dump nodes");
    let rels = db
        .execute(
            "MATCH (a)-[r]->(b) RETURN id(r), type(r), id(a), id(b), properties(r) ORDER BY id(r)",
            &BTreeMap::new(),
        )
        .expect("dump relationships");
    format!("{:?}\n{:?}\n{:?}", nodes.rows, rels.rows, db.indexes())
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let word = text.trim_start().split_whitespace().next().unwrap_or("").to_ascii_uppercase();
    // Transactions span inputs; each input here is its own unit.
    if matches!(word.trim_end_matches(';'), "BEGIN" | "COMMIT" | "ROLLBACK") {
        return;
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(fresh);
    let before = dump(&mut state.db);
    if state.db.execute_with(&text, &BTreeMap::new(), &options()).is_err() {
        assert_eq!(dump(&mut state.db), before, "a failing statement changed the graph: {text:?}");
    }
    state.inputs += 1;
    if state.inputs % 64 == 0 {
        let in_memory = dump(&mut state.db);
        let path = state.path.clone();
        let placeholder = WritableDatabase::open_read_only(&path).expect("read");
        drop(std::mem::replace(&mut state.db, placeholder));
        state.db = WritableDatabase::open(&path).expect("reopen");
        state.db.set_durability(Durability::NoFsync);
        assert_eq!(dump(&mut state.db), in_memory, "the reopened graph differs");
    }
    if state.db.counts().0 > 2_000 {
        *guard = None;
    }
});
