//! `ORDER BY id(n) [DESC] LIMIT k` over a label scan runs as a limit over a scan in id
//! order: the same rows as the unoptimised plan (full sort then limit), on both graph
//! kinds, and the heap wherever the shape does not allow it.

#[path = "query_support.rs"]
mod support;

use std::collections::BTreeMap;

use batho_engine::query::{Database, QueryOptions, Value, WritableDatabase};

fn naive() -> QueryOptions {
    QueryOptions {
        optimize: false,
        ..QueryOptions::default()
    }
}

fn plan_text(rows: &[Vec<Value>]) -> String {
    rows.iter()
        .map(|row| row[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Queries whose plan must use the id-ordered scan, and queries whose plan must not.
const ORDERED: &[&str] = &[
    "MATCH (n:Note) RETURN n.i ORDER BY id(n) DESC LIMIT 3",
    "MATCH (n:Note) WHERE n.i % 7 = 0 RETURN n.i ORDER BY id(n) DESC LIMIT 4",
    "MATCH (n:Note) WHERE n.i % 7 = 0 RETURN n.i ORDER BY id(n) LIMIT 4",
    "MATCH (n:Note:Page) WHERE n.i > 10 WITH n AS m ORDER BY id(m) DESC, m.i LIMIT 5 RETURN m.i",
    "MATCH (n) RETURN n.i ORDER BY id(n) DESC LIMIT 2",
    "MATCH (n:Note) WHERE n.i < 0 RETURN n.i ORDER BY id(n) DESC LIMIT 2",
];
const HEAP: &[&str] = &[
    "MATCH (n:Note)-[:NEXT]->(m) RETURN m.i ORDER BY id(m) DESC LIMIT 3",
    "MATCH (n:Note) WITH n LIMIT 10 RETURN n.i ORDER BY id(n) DESC LIMIT 3",
    "MATCH (n:Note) RETURN n.i ORDER BY n.i DESC LIMIT 3",
];

#[test]
fn a_writable_graph_answers_like_the_full_sort() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    let no_params = BTreeMap::new();
    db.execute(
        "UNWIND range(0, 99) AS i CREATE (n:Note {i: i}) \
         WITH n, i WHERE i % 3 = 0 SET n:Page",
        &no_params,
    )
    .unwrap();
    db.execute(
        "UNWIND range(100, 119) AS i CREATE (:Page {i: i})",
        &no_params,
    )
    .unwrap();
    db.execute(
        "MATCH (a:Note), (b:Note) WHERE b.i = a.i + 1 CREATE (a)-[:NEXT]->(b)",
        &no_params,
    )
    .unwrap();
    // Deleted nodes leave holes in the id sequence.
    db.execute(
        "MATCH (n:Note) WHERE n.i IN [98, 99, 14] DETACH DELETE n",
        &no_params,
    )
    .unwrap();
    for (query, ordered) in ORDERED
        .iter()
        .map(|q| (q, true))
        .chain(HEAP.iter().map(|q| (q, false)))
    {
        let fast = db.execute(query, &no_params).unwrap().rows;
        let slow = db.execute_with(query, &no_params, &naive()).unwrap().rows;
        assert_eq!(fast, slow, "{query}");
        let plan = plan_text(
            &db.execute(&format!("EXPLAIN {query}"), &no_params)
                .unwrap()
                .rows,
        );
        assert_eq!(plan.contains("id-ordered scan"), ordered, "{query}\n{plan}");
    }
    let newest = db
        .execute(
            "MATCH (n:Note) RETURN n.i ORDER BY id(n) DESC LIMIT 2",
            &no_params,
        )
        .unwrap()
        .rows;
    assert_eq!(newest, vec![vec![Value::Int(97)], vec![Value::Int(96)]]);
}

#[test]
fn an_index_seek_below_keeps_the_heap_and_the_right_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    let no_params = BTreeMap::new();
    db.execute(
        "UNWIND range(0, 49) AS i CREATE (:Note {i: i, group: i % 5})",
        &no_params,
    )
    .unwrap();
    db.execute("CREATE INDEX ON :Note(group)", &no_params)
        .unwrap();
    let query = "MATCH (n:Note) WHERE n.group = 2 RETURN n.i ORDER BY id(n) DESC LIMIT 3";
    let plan = plan_text(
        &db.execute(&format!("EXPLAIN {query}"), &no_params)
            .unwrap()
            .rows,
    );
    assert!(plan.contains("index :Note(group)"), "{plan}");
    assert!(!plan.contains("id-ordered scan"), "{plan}");
    let rows = db.execute(query, &no_params).unwrap().rows;
    assert_eq!(
        rows,
        vec![
            vec![Value::Int(47)],
            vec![Value::Int(42)],
            vec![Value::Int(37)]
        ]
    );
}

#[test]
fn a_code_graph_answers_like_the_full_sort() {
    let dir = tempfile::tempdir().unwrap();
    let db: Database = support::golden(dir.path());
    let no_params = BTreeMap::new();
    // (query, whether it scans in id order); a name prefix seeks the name index instead.
    let queries = [
        (
            "MATCH (n:Function) RETURN n.name ORDER BY id(n) DESC LIMIT 3",
            true,
        ),
        (
            "MATCH (n:Function|Macro|File) RETURN n.name ORDER BY id(n) DESC LIMIT 4",
            true,
        ),
        (
            "MATCH (n:Function|Macro|File) RETURN n.name ORDER BY id(n) LIMIT 4",
            true,
        ),
        (
            "MATCH (n) WHERE n.name ENDS WITH 'l' RETURN n.name ORDER BY id(n) DESC LIMIT 3",
            true,
        ),
        (
            "MATCH (n) WHERE n.name STARTS WITH 'l' RETURN n.name ORDER BY id(n) DESC LIMIT 3",
            false,
        ),
    ];
    for (query, ordered) in queries {
        let fast = db.query(query, &no_params).unwrap().rows;
        let slow = db.query_with(query, &no_params, &naive()).unwrap().rows;
        assert!(!fast.is_empty(), "{query}");
        assert_eq!(fast, slow, "{query}");
        let plan = plan_text(
            &db.query(&format!("EXPLAIN {query}"), &no_params)
                .unwrap()
                .rows,
        );
        assert_eq!(plan.contains("id-ordered scan"), ordered, "{query}\n{plan}");
    }
}
