//! Writable graphs through the embedding API: every update clause, atomic statements,
//! transactions, durability across reopen, group commit from several threads, and
//! read-only opening.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use batho_engine::query::{Durability, QueryError, UpdateCounts, Value, WritableDatabase};
use batho_lang::PropertyAccess;

fn run(db: &mut WritableDatabase, text: &str) -> Vec<Vec<Value>> {
    match db.execute(text, &BTreeMap::new()) {
        Ok(result) => result.rows,
        Err(e) => panic!("{text}: {e}"),
    }
}

fn updates(db: &mut WritableDatabase, text: &str) -> UpdateCounts {
    db.execute(text, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .updates
}

fn ints(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter()
        .map(|r| match r[0] {
            Value::Int(i) => i,
            ref other => panic!("not an int: {other:?}"),
        })
        .collect()
}

#[test]
fn create_match_set_remove_delete() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    let counts = updates(
        &mut db,
        "CREATE (a:Person {name: 'Ann', age: 31})-[:KNOWS {since: 2020}]->(b:Person:Admin {name: 'Bob'})",
    );
    assert_eq!(
        counts,
        UpdateCounts {
            nodes_created: 2,
            relationships_created: 1,
            labels_added: 2,
            properties_set: 4,
            ..UpdateCounts::default()
        }
    );
    let rows = run(
        &mut db,
        "MATCH (a:Person)-[k:KNOWS]->(b) RETURN a.name, k.since, b.name, labels(b)",
    );
    assert_eq!(
        rows,
        vec![vec![
            Value::from("Ann"),
            Value::Int(2020),
            Value::from("Bob"),
            Value::List(vec![Value::from("Person"), Value::from("Admin")]),
        ]]
    );
    let counts = updates(
        &mut db,
        "MATCH (n {name: 'Ann'}) SET n.age = n.age + 1, n:Owner",
    );
    assert_eq!(
        (
            counts.properties_set,
            counts.properties_removed,
            counts.labels_added
        ),
        (1, 1, 1)
    );
    assert_eq!(
        ints(&run(&mut db, "MATCH (n:Owner) RETURN n.age")),
        vec![32]
    );
    updates(&mut db, "MATCH (n:Owner) REMOVE n.age, n:Owner");
    assert_eq!(
        run(&mut db, "MATCH (n {name: 'Ann'}) RETURN n.age, labels(n)")[0][0],
        Value::Null
    );
    let error = db
        .execute("MATCH (n {name: 'Ann'}) DELETE n", &BTreeMap::new())
        .unwrap_err();
    assert!(error.to_string().contains("DETACH DELETE"), "{error}");
    let counts = updates(&mut db, "MATCH (n {name: 'Ann'}) DETACH DELETE n");
    assert_eq!((counts.nodes_deleted, counts.relationships_deleted), (1, 1));
    assert_eq!(ints(&run(&mut db, "MATCH (n) RETURN count(n)")), vec![1]);
}

#[test]
fn merge_matches_or_creates_and_sees_earlier_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    let counts = updates(
        &mut db,
        "UNWIND [1, 1, 2] AS x MERGE (n:N {v: x}) ON CREATE SET n.created = true ON MATCH SET n.matched = true",
    );
    assert_eq!(counts.nodes_created, 2);
    let rows = run(
        &mut db,
        "MATCH (n:N) RETURN n.v, n.created, n.matched ORDER BY n.v",
    );
    assert_eq!(
        rows,
        vec![
            vec![Value::Int(1), Value::Bool(true), Value::Bool(true)],
            vec![Value::Int(2), Value::Bool(true), Value::Null],
        ]
    );
    updates(
        &mut db,
        "MATCH (a:N {v: 1}), (b:N {v: 2}) MERGE (a)-[:NEXT]->(b)",
    );
    let counts = updates(
        &mut db,
        "MATCH (a:N {v: 1}), (b:N {v: 2}) MERGE (b)-[r:NEXT]-(a) RETURN r",
    );
    assert_eq!(
        counts.relationships_created, 0,
        "an undirected MERGE matches either way"
    );
    let error = db
        .execute("MERGE (n:N {v: null})", &BTreeMap::new())
        .unwrap_err();
    assert!(error.to_string().contains("null"), "{error}");
}

#[test]
fn a_failing_statement_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    run(&mut db, "CREATE (:A {n: 1})");
    let error = db
        .execute("MATCH (a:A) CREATE (:B) SET a.n = 1 / 0", &BTreeMap::new())
        .unwrap_err();
    assert!(matches!(error, QueryError::Eval { .. }), "{error}");
    assert_eq!(ints(&run(&mut db, "MATCH (n) RETURN count(n)")), vec![1]);
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(ints(&run(&mut db, "MATCH (n) RETURN count(n)")), vec![1]);
}

#[test]
fn transactions_commit_together_or_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    run(&mut db, "BEGIN");
    run(&mut db, "CREATE (:T {n: 1})");
    run(&mut db, "CREATE (:T {n: 2})");
    assert_eq!(ints(&run(&mut db, "MATCH (t:T) RETURN count(t)")), vec![2]);
    run(&mut db, "ROLLBACK");
    assert_eq!(ints(&run(&mut db, "MATCH (t:T) RETURN count(t)")), vec![0]);
    run(&mut db, "BEGIN");
    run(&mut db, "CREATE (:T {n: 3})");
    run(&mut db, "COMMIT");
    assert!(db.execute("COMMIT", &BTreeMap::new()).is_err());
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(ints(&run(&mut db, "MATCH (t:T) RETURN t.n")), vec![3]);
}

#[test]
fn reopen_after_checkpoint_keeps_ids_and_a_reader_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    run(&mut db, "UNWIND range(1, 5) AS i CREATE (:P {i: i})");
    run(&mut db, "MATCH (p:P {i: 5}) DELETE p");
    let ids = run(&mut db, "MATCH (p:P) RETURN id(p) ORDER BY id(p)");
    db.checkpoint().unwrap();
    run(&mut db, "CREATE (:P {i: 6})");
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(
        run(
            &mut db,
            "MATCH (p:P) WHERE p.i < 6 RETURN id(p) ORDER BY id(p)"
        ),
        ids
    );
    assert_eq!(
        ints(&run(&mut db, "MATCH (p:P {i: 6}) RETURN id(p)")),
        vec![5],
        "the deleted node's id is not given again"
    );
    let mut reader = WritableDatabase::open_read_only(dir.path()).unwrap();
    assert_eq!(
        ints(&run(&mut reader, "MATCH (p:P) RETURN count(p)")),
        vec![5]
    );
    let error = reader.execute("CREATE ()", &BTreeMap::new()).unwrap_err();
    assert!(error.to_string().contains("read-only"), "{error}");
    assert!(reader.graph().node_labels(0).contains(&"P".to_string()));
}

#[test]
fn a_property_index_answers_like_a_scan_and_survives_checkpoint_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    run(
        &mut db,
        "UNWIND range(0, 199) AS i CREATE (:File {path: 'f' + toString(i % 50), n: i, size: i * 1.0})",
    );
    let queries = [
        "MATCH (f:File {path: 'f7'}) RETURN f.n ORDER BY f.n",
        "MATCH (f:File) WHERE f.path = 'f7' AND f.n > 100 RETURN f.n ORDER BY f.n",
        "MATCH (f:File) WHERE f.size = 8 RETURN f.n ORDER BY f.n",
        "UNWIND ['f1', 'f2', 'nope'] AS p MATCH (f:File {path: p}) RETURN p, count(f) ORDER BY p",
    ];
    let scanned: Vec<_> = queries.iter().map(|q| run(&mut db, q)).collect();
    run(&mut db, "CREATE INDEX ON :File(path)");
    run(&mut db, "CREATE INDEX ON :File(size)");
    assert_eq!(db.indexes().len(), 2);
    let plan = run(&mut db, &format!("EXPLAIN {}", queries[1]));
    assert!(
        plan.iter()
            .any(|r| r[0].to_string().contains("index :File(path)")),
        "{plan:?}"
    );
    for (query, expected) in queries.iter().zip(&scanned) {
        assert_eq!(&run(&mut db, query), expected, "{query}");
    }
    // The index follows writes, and MERGE finds through it.
    run(&mut db, "MATCH (f:File {path: 'f7'}) SET f.path = 'g7'");
    assert!(run(&mut db, queries[0]).is_empty());
    let counts = updates(
        &mut db,
        "UNWIND ['g7', 'h1', 'h1'] AS p MERGE (:File {path: p})",
    );
    assert_eq!(counts.nodes_created, 1);
    db.checkpoint().unwrap();
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(db.indexes().len(), 2);
    assert_eq!(
        ints(&run(&mut db, "MATCH (f:File {path: 'g7'}) RETURN count(f)")),
        vec![4]
    );
    run(&mut db, "DROP INDEX ON :File(path)");
    assert_eq!(db.indexes(), vec![("File".to_string(), "size".to_string())]);
    let error = db
        .execute("CREATE INDEX ON File(path)", &BTreeMap::new())
        .unwrap_err();
    assert!(
        error.to_string().contains("CREATE INDEX ON :Label(key)"),
        "{error}"
    );
}

#[test]
fn a_variable_length_list_keeps_the_written_order_when_planned_from_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    run(
        &mut db,
        "CREATE (:Start)-[:REL {num: 1}]->()-[:REL {num: 2}]->()-[:REL {num: 3}]->(:End)",
    );
    // The labelled end is the cheaper start, so the planner walks the pattern backwards.
    let expected = vec![vec![Value::List(vec![
        Value::Int(1),
        Value::Int(2),
        Value::Int(3),
    ])]];
    for query in [
        "MATCH (a)-[r:REL*3]->(b:End) RETURN [x IN r | x.num]",
        "MATCH p = (a)-[:REL*3]->(b:End) RETURN [x IN relationships(p) | x.num]",
        "MATCH (b:End)<-[r:REL*3]-(a) RETURN [x IN r | x.num]",
    ] {
        let rows = run(&mut db, query);
        let rows = if query.starts_with("MATCH (b:End)") {
            // Written from the end: the list runs from b, so 3, 2, 1.
            assert_eq!(
                rows,
                vec![vec![Value::List(vec![
                    Value::Int(3),
                    Value::Int(2),
                    Value::Int(1)
                ])]],
                "{query}"
            );
            continue;
        } else {
            rows
        };
        assert_eq!(rows, expected, "{query}");
    }
}

#[test]
fn text_indexes_search_their_words_and_survive_reopen_and_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    let search = "CALL text.search($q) YIELD node, score RETURN node.n ORDER BY node.n";
    let found = |db: &mut WritableDatabase, q: &str| -> Vec<i64> {
        let params = BTreeMap::from([("q".to_string(), Value::from(q))]);
        let rows = db
            .execute(search, &params)
            .unwrap_or_else(|e| panic!("{q}: {e}"))
            .rows;
        ints(&rows)
    };
    let no_index = db
        .execute(
            search,
            &BTreeMap::from([("q".to_string(), Value::from("x"))]),
        )
        .unwrap_err()
        .to_string();
    assert!(no_index.contains("CREATE TEXT INDEX"), "{no_index}");
    run(
        &mut db,
        "CREATE (:Doc {n: 1, text: 'The parser reads headers'}), \
         (:Doc {n: 2, text: 'parseHeader fails on Déjà vu'}), \
         (:Other {n: 3, text: 'the parser, unindexed'})",
    );
    db.execute("CREATE TEXT INDEX ON :Doc(text)", &BTreeMap::new())
        .unwrap();
    assert_eq!(db.text_indexes(), [("Doc".to_string(), "text".to_string())]);
    assert_eq!(found(&mut db, "parser"), [1]);
    assert_eq!(found(&mut db, "pars*"), [1, 2]);
    assert_eq!(found(&mut db, "deja"), [2]);
    assert_eq!(found(&mut db, "\"reads headers\""), [1]);
    assert!(found(&mut db, "\"headers reads\"").is_empty());
    // A statement sees its own writes, and a failed one leaves the index as it was.
    run(&mut db, "CREATE (:Doc {n: 4, text: 'another parser'})");
    assert_eq!(found(&mut db, "parser"), [1, 4]);
    assert!(
        db.execute(
            "MATCH (d:Doc {n: 1}) SET d.text = 'gone' CREATE (d)-[:r]->(:E) WITH d DELETE d",
            &BTreeMap::new()
        )
        .is_err()
    );
    assert_eq!(found(&mut db, "parser"), [1, 4]);
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(found(&mut db, "parser"), [1, 4]);
    db.checkpoint().unwrap();
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(found(&mut db, "parser"), [1, 4]);
    db.execute("DROP TEXT INDEX ON :Doc(text)", &BTreeMap::new())
        .unwrap();
    assert!(db.text_indexes().is_empty());
    let bad = db
        .execute("CREATE TEXT INDEX ON Doc", &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(bad.contains("CREATE TEXT INDEX ON :Label(key)"), "{bad}");
}

#[test]
fn breadth_first_walks_visit_each_node_once_at_its_distance() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    // A root with many children: a variable-length pattern would see each child by as
    // many paths as the root has children.
    run(
        &mut db,
        "CREATE (root:N {n: 0}) WITH root UNWIND range(1, 50) AS i \
         CREATE (root)<-[:child]-(:N {n: i})",
    );
    run(
        &mut db,
        "MATCH (a:N {n: 1}), (b:N {n: 2}) CREATE (a)-[:next]->(b)",
    );
    let rows = run(
        &mut db,
        "MATCH (s:N {n: 1}) CALL algo.bfs(s, 2) YIELD node, distance \
         RETURN distance, count(*) ORDER BY distance",
    );
    assert_eq!(
        rows,
        vec![
            vec![Value::Int(0), Value::Int(1)],
            vec![Value::Int(1), Value::Int(2)],
            vec![Value::Int(2), Value::Int(48)]
        ]
    );
    let rows = run(
        &mut db,
        "MATCH (s:N {n: 1}) CALL algo.bfs(s, 5, ['next'], 'out') YIELD node, distance, relationship \
         RETURN node.n, distance, type(relationship)",
    );
    assert_eq!(
        rows,
        vec![
            vec![Value::Int(1), Value::Int(0), Value::Null],
            vec![Value::Int(2), Value::Int(1), Value::from("next")]
        ]
    );
    let rows = run(
        &mut db,
        "MATCH (s:N {n: 2}) CALL algo.bfs(s, 5, ['next'], 'out') YIELD node RETURN count(node)",
    );
    assert_eq!(ints(&rows), [1], "the start alone");
    // The root avoided: node 1 reaches only node 2.
    let rows = run(
        &mut db,
        "MATCH (root:N {n: 0}) MATCH (s:N {n: 1}) CALL algo.bfs(s, 3, null, 'both', [root]) \
         YIELD node RETURN node.n",
    );
    assert_eq!(ints(&rows), [1, 2]);
    let error = db
        .execute(
            "MATCH (s:N {n: 2}) CALL algo.bfs(s, 99) YIELD node RETURN node",
            &BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
    assert!(error.contains("at most 10"), "{error}");
}

/// Every temporal type, as text, written before and after a checkpoint: both the log and
/// the checkpoint must give the same values back after reopening.
#[test]
fn temporal_properties_survive_the_log_checkpoint_and_reopen() {
    let values = [
        "date('1984-10-11')",
        "localtime('12:31:14.645876123')",
        "time('12:31:14.645876123+01:00')",
        "localdatetime('1969-12-31T23:59:59.5')",
        "datetime('1984-10-11T12:31:14.645876123+01:00')",
        "datetime('2017-10-29T02:30+01:00[Europe/Stockholm]')",
        "duration('P1Y2M-3DT-0.5S')",
        "[date('2015-07-21'), date('2015-07-22')]",
    ];
    let read_all = |db: &mut WritableDatabase| -> Vec<String> {
        run(db, "MATCH (v:V) RETURN v.before, v.after ORDER BY v.i")
            .iter()
            .map(|row| format!("{} {}", row[0], row[1]))
            .collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    for (i, value) in values.iter().enumerate() {
        run(&mut db, &format!("CREATE (:V {{i: {i}, before: {value}}})"));
    }
    db.checkpoint().unwrap();
    for (i, value) in values.iter().enumerate() {
        run(
            &mut db,
            &format!("MATCH (v:V {{i: {i}}}) SET v.after = {value}"),
        );
    }
    let written = read_all(&mut db);
    let expected: Vec<String> = values
        .iter()
        .map(|value| {
            let text = run(&mut db, &format!("RETURN {value}"))[0][0].to_string();
            format!("{text} {text}")
        })
        .collect();
    assert_eq!(written, expected);
    drop(db);
    let mut db = WritableDatabase::open(dir.path()).unwrap();
    assert_eq!(read_all(&mut db), expected);
    let equal = run(
        &mut db,
        "MATCH (v:V {i: 5}) RETURN v.before = datetime('2017-10-29T02:30+01:00[Europe/Stockholm]')",
    );
    assert_eq!(equal, vec![vec![Value::Bool(true)]]);
}

fn key_params(key: i64) -> BTreeMap<String, Value> {
    BTreeMap::from([("key".to_string(), Value::Int(key))])
}

#[test]
fn only_group_commit_leaves_a_ticket_and_it_fsyncs_once_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    run(&mut db, "CREATE (:Item {key: 0})");
    assert!(db.take_sync_ticket().is_none(), "the default fsyncs itself");
    assert_eq!(db.log_syncs(), 1);

    db.set_durability(Durability::Group);
    run(&mut db, "CREATE (:Item {key: 1})");
    run(&mut db, "CREATE (:Item {key: 2})");
    assert_eq!(db.log_syncs(), 1, "a group commit does not wait");
    let ticket = db
        .take_sync_ticket()
        .expect("a group commit leaves a ticket");
    assert!(
        db.take_sync_ticket().is_none(),
        "the latest ticket covers both"
    );
    ticket.wait().unwrap();
    assert_eq!(db.log_syncs(), 2);
    run(&mut db, "MATCH (item:Item) RETURN item.key");
    assert!(db.take_sync_ticket().is_none(), "a read commits nothing");
}

#[test]
fn group_commits_from_several_threads_are_all_there_after_a_reopen() {
    const THREADS: i64 = 4;
    const COMMITS: i64 = 30;
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    db.set_durability(Durability::Group);
    let shared = Arc::new(Mutex::new(db));
    let mut acknowledged: Vec<i64> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let shared = &shared;
                scope.spawn(move || {
                    let mut done = Vec::new();
                    for commit in 0..COMMITS {
                        let key = thread * COMMITS + commit;
                        let ticket = {
                            let mut db = shared.lock().unwrap();
                            db.execute("CREATE (:Item {key: $key})", &key_params(key))
                                .unwrap();
                            db.take_sync_ticket()
                                .expect("a group commit leaves a ticket")
                        };
                        ticket.wait().unwrap();
                        done.push(key);
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    let db = Arc::into_inner(shared).unwrap().into_inner().unwrap();
    let syncs = db.log_syncs();
    assert!(
        (1..=(THREADS * COMMITS) as u64).contains(&syncs),
        "{syncs} fsyncs"
    );
    drop(db);

    let mut reopened = WritableDatabase::open(dir.path()).unwrap();
    let mut found = ints(&run(
        &mut reopened,
        "MATCH (item:Item) RETURN item.key ORDER BY item.key",
    ));
    acknowledged.sort_unstable();
    found.sort_unstable();
    assert_eq!(found, acknowledged);
    assert_eq!(found.len(), (THREADS * COMMITS) as usize);
}

#[test]
fn given_parameters_load_as_lent_ones_do() {
    let rows = |from: i64| {
        Value::List(
            (from..from + 3)
                .map(|i| {
                    Value::Map(BTreeMap::from([
                        ("id".to_string(), Value::Int(i)),
                        ("name".to_string(), Value::from(format!("n{i}").as_str())),
                    ]))
                })
                .collect(),
        )
    };
    let given = |name: &str, value: Value| BTreeMap::from([(name.to_string(), value)]);
    let dir = tempfile::tempdir().unwrap();
    let mut db = WritableDatabase::create(dir.path()).unwrap();
    // The list moves into the UNWIND: the rows are created as from lent parameters.
    let loaded = db
        .execute_owned(
            "UNWIND $rows AS r CREATE (:N {id: r.id, name: r.name})",
            given("rows", rows(0)),
        )
        .unwrap();
    assert_eq!(loaded.updates.nodes_created, 3);
    db.execute(
        "UNWIND $rows AS r CREATE (:N {id: r.id, name: r.name})",
        &given("rows", rows(3)),
    )
    .unwrap();
    // A parameter read twice is not moved: both reads see it.
    let both = db
        .execute_owned(
            "UNWIND $rows AS r CREATE (:M {id: r.id, count: size($rows)})",
            given("rows", rows(10)),
        )
        .unwrap();
    assert_eq!(both.updates.nodes_created, 3);
    // Nor is one that another statement of the text reads.
    db.execute_owned(
        "UNWIND $rows AS r CREATE (:K {id: r.id}); UNWIND $rows AS r CREATE (:L {id: r.id})",
        given("rows", rows(20)),
    )
    .unwrap();
    assert_eq!(
        ints(&run(&mut db, "MATCH (n:N) RETURN n.id ORDER BY n.id")),
        [0, 1, 2, 3, 4, 5]
    );
    assert_eq!(
        run(&mut db, "MATCH (m:M) RETURN DISTINCT m.count"),
        [[Value::Int(3)]]
    );
    assert_eq!(ints(&run(&mut db, "MATCH (l:L) RETURN count(*)")), [3]);
    // A failing statement with given parameters applies nothing.
    let failed = db.execute_owned(
        "UNWIND $rows AS r CREATE (:F {id: r.id, bad: r.id / 0})",
        given("rows", rows(30)),
    );
    assert!(failed.is_err());
    assert_eq!(ints(&run(&mut db, "MATCH (f:F) RETURN count(*)")), [0]);
}
