//! Random write sequences run on a writable graph and on a plain in-memory model, then
//! the same reads on both: after the writes, after a checkpoint and after a reopen.
//! Nodes are addressed by a unique `uid` property; one statement in the mix always fails
//! and must change nothing; a plain DELETE of a connected node must fail and change nothing.

use std::collections::{BTreeMap, BTreeSet};

use batho_engine::query::{Durability, Value, WritableDatabase};
use proptest::prelude::*;

const LABELS: [&str; 3] = ["A", "B", "C"];

#[derive(Clone, Debug)]
enum Op {
    Create { label: usize, x: Option<i64> },
    SetX { node: usize, x: Option<i64> },
    AddLabel { node: usize, label: usize },
    RemoveLabel { node: usize, label: usize },
    Connect { from: usize, to: usize },
    Delete { node: usize, detach: bool },
    Failing { node: usize },
    Index { label: usize },
    Checkpoint,
    Reopen,
}

fn ops() -> impl Strategy<Value = Op> {
    let x = prop::option::of(-3i64..4);
    prop_oneof![
        4 => (0..3usize, x.clone()).prop_map(|(label, x)| Op::Create { label, x }),
        2 => (0..12usize, x).prop_map(|(node, x)| Op::SetX { node, x }),
        1 => (0..12usize, 0..3usize).prop_map(|(node, label)| Op::AddLabel { node, label }),
        1 => (0..12usize, 0..3usize).prop_map(|(node, label)| Op::RemoveLabel { node, label }),
        3 => (0..12usize, 0..12usize).prop_map(|(from, to)| Op::Connect { from, to }),
        1 => (0..12usize, any::<bool>()).prop_map(|(node, detach)| Op::Delete { node, detach }),
        1 => (0..12usize).prop_map(|node| Op::Failing { node }),
        1 => (0..3usize).prop_map(|label| Op::Index { label }),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
    ]
}

/// The model: nodes by uid (labels, x) and relationships as (from, to) pairs.
#[derive(Default)]
struct Model {
    next_uid: usize,
    nodes: BTreeMap<usize, (BTreeSet<&'static str>, Option<i64>)>,
    edges: Vec<(usize, usize)>,
}

fn literal(x: Option<i64>) -> String {
    x.map_or("null".to_string(), |x| x.to_string())
}

/// Runs `op` on the database and the model.
fn apply(db: &mut WritableDatabase, dir: &std::path::Path, model: &mut Model, op: &Op) {
    let exec = |db: &mut WritableDatabase, text: &str| db.execute(text, &BTreeMap::new());
    match *op {
        Op::Create { label, x } => {
            let uid = model.next_uid;
            model.next_uid += 1;
            let x_part = x.map_or(String::new(), |x| format!(", x: {x}"));
            exec(
                db,
                &format!("CREATE (:{} {{uid: {uid}{x_part}}})", LABELS[label]),
            )
            .unwrap();
            model
                .nodes
                .insert(uid, (BTreeSet::from([LABELS[label]]), x));
        }
        Op::SetX { node, x } => {
            exec(
                db,
                &format!("MATCH (n {{uid: {node}}}) SET n.x = {}", literal(x)),
            )
            .unwrap();
            if let Some(entry) = model.nodes.get_mut(&node) {
                entry.1 = x;
            }
        }
        Op::AddLabel { node, label } => {
            exec(
                db,
                &format!("MATCH (n {{uid: {node}}}) SET n:{}", LABELS[label]),
            )
            .unwrap();
            if let Some(entry) = model.nodes.get_mut(&node) {
                entry.0.insert(LABELS[label]);
            }
        }
        Op::RemoveLabel { node, label } => {
            exec(
                db,
                &format!("MATCH (n {{uid: {node}}}) REMOVE n:{}", LABELS[label]),
            )
            .unwrap();
            if let Some(entry) = model.nodes.get_mut(&node) {
                entry.0.remove(LABELS[label]);
            }
        }
        Op::Connect { from, to } => {
            exec(
                db,
                &format!("MATCH (a {{uid: {from}}}), (b {{uid: {to}}}) CREATE (a)-[:R]->(b)"),
            )
            .unwrap();
            if model.nodes.contains_key(&from) && model.nodes.contains_key(&to) {
                model.edges.push((from, to));
            }
        }
        Op::Delete { node, detach } => {
            let verb = if detach { "DETACH DELETE" } else { "DELETE" };
            let result = exec(db, &format!("MATCH (n {{uid: {node}}}) {verb} n"));
            let connected = model.edges.iter().any(|&(a, b)| a == node || b == node);
            if model.nodes.contains_key(&node) && connected && !detach {
                assert!(
                    result.is_err(),
                    "deleting connected node {node} without DETACH worked"
                );
            } else {
                result.unwrap();
                model.nodes.remove(&node);
                model.edges.retain(|&(a, b)| a != node && b != node);
            }
        }
        Op::Failing { node } => {
            let text = format!("MATCH (n {{uid: {node}}}) CREATE (:C {{uid: -1}}) SET n.x = 1 / 0");
            let result = exec(db, &text);
            // Without a match nothing runs, so nothing fails either.
            assert_eq!(result.is_err(), model.nodes.contains_key(&node), "{text}");
        }
        Op::Index { label } => {
            exec(db, &format!("CREATE INDEX ON :{}(x)", LABELS[label])).unwrap();
        }
        Op::Checkpoint => {
            db.checkpoint().unwrap();
        }
        Op::Reopen => {
            *db = reopen(db, dir);
        }
    }
}

fn reopen(db: &mut WritableDatabase, dir: &std::path::Path) -> WritableDatabase {
    // The lock is released when the old handle goes: swap in the reader, drop, open.
    let placeholder = WritableDatabase::open_read_only(dir).unwrap();
    drop(std::mem::replace(db, placeholder));
    let mut opened = WritableDatabase::open(dir).unwrap();
    opened.set_durability(Durability::NoFsync);
    opened
}

fn rows(db: &mut WritableDatabase, text: &str) -> Vec<Vec<Value>> {
    db.execute(text, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .rows
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an int: {other:?}"),
    }
}

/// The graph's nodes, relationships and x-lookups, as the model states them.
fn check(db: &mut WritableDatabase, model: &Model, when: &str) {
    let nodes: BTreeMap<usize, (BTreeSet<String>, Option<i64>)> =
        rows(db, "MATCH (n) RETURN n.uid, labels(n), n.x")
            .into_iter()
            .map(|r| {
                let labels = match &r[1] {
                    Value::List(l) => l
                        .iter()
                        .map(|v| v.to_string().trim_matches('\'').to_string())
                        .collect(),
                    other => panic!("labels: {other:?}"),
                };
                let x = (!r[2].is_null()).then(|| int(&r[2]));
                (int(&r[0]) as usize, (labels, x))
            })
            .collect();
    let expected: BTreeMap<usize, (BTreeSet<String>, Option<i64>)> = model
        .nodes
        .iter()
        .map(|(uid, (labels, x))| (*uid, (labels.iter().map(|l| l.to_string()).collect(), *x)))
        .collect();
    assert_eq!(nodes, expected, "nodes {when}");
    let mut edges: Vec<(usize, usize)> = rows(db, "MATCH (a)-[:R]->(b) RETURN a.uid, b.uid")
        .iter()
        .map(|r| (int(&r[0]) as usize, int(&r[1]) as usize))
        .collect();
    edges.sort_unstable();
    let mut expected_edges = model.edges.clone();
    expected_edges.sort_unstable();
    assert_eq!(edges, expected_edges, "relationships {when}");
    for label in LABELS {
        for x in -3..4 {
            let mut found: Vec<usize> = rows(
                db,
                &format!("MATCH (n:{label}) WHERE n.x = {x} RETURN n.uid"),
            )
            .iter()
            .map(|r| int(&r[0]) as usize)
            .collect();
            found.sort_unstable();
            let wanted: Vec<usize> = model
                .nodes
                .iter()
                .filter(|(_, (labels, value))| labels.contains(label) && *value == Some(x))
                .map(|(uid, _)| *uid)
                .collect();
            assert_eq!(found, wanted, ":{label} with x = {x} {when}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn writes_match_the_model_before_and_after_checkpoint_and_reopen(sequence in prop::collection::vec(ops(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = WritableDatabase::create(dir.path()).unwrap();
        db.set_durability(Durability::NoFsync);
        let mut model = Model::default();
        for op in &sequence {
            apply(&mut db, dir.path(), &mut model, op);
        }
        check(&mut db, &model, "after the writes");
        db.checkpoint().unwrap();
        check(&mut db, &model, "after a checkpoint");
        let mut db = reopen(&mut db, dir.path());
        check(&mut db, &model, "after a reopen");
    }
}
