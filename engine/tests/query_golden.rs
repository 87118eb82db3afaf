//! Golden tests: every operator against a small hand-built code graph.

#[path = "query_support.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use batho_engine::query::render::{Format, render};
use batho_engine::query::{Bound, Database, Limits, QueryError, QueryOptions, Value};

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = support::golden(dir.path());
    (dir, db)
}

/// Runs `q` and renders its rows as `a | b` lines (sorted unless `ordered`).
fn run(db: &Database, q: &str, ordered: bool) -> String {
    run_p(db, q, &BTreeMap::new(), ordered)
}

fn run_p(db: &Database, q: &str, params: &BTreeMap<String, Value>, ordered: bool) -> String {
    let res = db.query(q, params).unwrap_or_else(|e| panic!("{q}\n{e}"));
    let mut lines: Vec<String> = res
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    if !ordered {
        lines.sort();
    }
    lines.join("\n")
}

#[test]
fn seek_and_expand() {
    let (_d, db) = db();
    let explain = db
        .query(
            "EXPLAIN MATCH (c)-[:CALLS]->(f:Function {name: 'luaD_call'}) RETURN c.id",
            &BTreeMap::new(),
        )
        .expect("explain");
    let plan = explain.plan.expect("plan text");
    assert!(plan.contains("name index"), "{plan}");
    assert!(plan.contains("in-CSR, type CALLS"), "{plan}");
}

#[test]
fn variable_length_and_paths() {
    let (_d, db) = db();
    let explain = run(
        &db,
        "EXPLAIN MATCH (f {name: 'main'})-[:CALLS*1..3]->(g) RETURN DISTINCT g.name",
        true,
    );
    assert!(explain.contains("BFS with a visited set"), "{explain}");
    let q =
        "MATCH (f {name: 'main'})-[:CALLS*1..3]->(g) RETURN count(DISTINCT g) AS n, min(g.name)";
    assert_eq!(run(&db, q, false), "3 | 'helper'");
    let explain = run(&db, &format!("EXPLAIN {q}"), true);
    assert!(explain.contains("BFS with a visited set"), "{explain}");
    let q = "MATCH (f {name: 'main'})-[:CALLS*1..3]->(g) RETURN count(g) AS n";
    // Every trail counts: 2 of one hop, 3 of two, 3 of three.
    assert_eq!(run(&db, q, false), "8");
    let explain = run(&db, &format!("EXPLAIN {q}"), true);
    assert!(explain.contains("DFS over trails"), "{explain}");
}

#[test]
fn roles_are_pushed_down() {
    let (_d, db) = db();
    let q = "MATCH (a)-[r]->(v:Variable) WHERE has_role(r, 'WriteAccess') RETURN a.name";
    assert_eq!(run(&db, q, false), "'luaD_call'");
    let plan = run(&db, &format!("EXPLAIN {q}"), true);
    assert!(plan.contains("role bitmap WriteAccess"), "{plan}");
}

#[test]
fn unwind_optional_product_join_params() {
    let (_d, db) = db();
    let mut p = BTreeMap::new();
    p.insert(
        "ids".to_string(),
        Value::List(vec![
            "src/a.c:main".into(),
            "nope".into(),
            "src/b.c:util".into(),
        ]),
    );
    assert_eq!(
        run_p(
            &db,
            "UNWIND $ids AS id MATCH (n {id: id}) RETURN n.name",
            &p,
            true
        ),
        "'main'\n'util'"
    );
    // A projection that keeps a column and computes from it in the same WITH.
    assert_eq!(
        run(
            &db,
            "MATCH (f:Function {name: 'main'}) WITH f, [f.name, f.file] AS l, f AS g \
             UNWIND range(0, size(l) - 1) AS i RETURN l[i], g.name, f.name",
            false
        ),
        "'main' | 'main' | 'main'\n'src/a.c' | 'main' | 'main'"
    );
    let err = db
        .query("MATCH (n {id: $missing}) RETURN n", &BTreeMap::new())
        .expect_err("missing param");
    assert!(
        matches!(err, QueryError::Eval { .. }) && err.is_query_error(),
        "{err}"
    );
}

#[test]
fn procedures() {
    let (_d, db) = db();
    assert!(run(&db, "CALL db.relationshipTypes()", false).contains("'CALLS' | 6"));
    assert!(run(&db, "CALL db.propertyKeys()", false).contains("'relationship' | 'confidence'"));
    assert!(run(&db, "CALL db.schema()", false).contains("'label' | 'Function' | 5"));
    let runs = db
        .query(
            "CALL db.runs() YIELD id, status, nodes RETURN status, nodes",
            &BTreeMap::new(),
        )
        .expect("runs");
    assert_eq!(
        runs.rows,
        vec![vec![Value::from("completed"), Value::Int(9)]]
    );
}

#[test]
fn errors_are_typed() {
    let (_d, db) = db();
    let e = db
        .query("MATCH (n:Functon) RETURN n", &BTreeMap::new())
        .expect_err("bad label");
    let QueryError::Compile { diagnostics } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(diagnostics[0].line, 1);
    assert!(e.is_query_error());
    let e = db
        .query("CREATE (n:Function {id: 'x'})", &BTreeMap::new())
        .expect_err("read-only");
    assert!(matches!(e, QueryError::ReadOnly { .. }), "{e}");
    assert!(e.to_string().contains("read-only"));
    let e = Database::open(std::path::Path::new("/nonexistent/batho")).expect_err("no artifact");
    assert!(!e.is_query_error());
}

#[test]
fn bounds_are_reported() {
    let (_d, db) = db();
    let q = "MATCH (a)-[*]-(b) RETURN a, b";
    let opts = QueryOptions {
        limits: Limits {
            max_rows: 5,
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    let res = db.query_with(q, &BTreeMap::new(), &opts).expect("runs");
    assert_eq!(res.rows.len(), 5);
    assert_eq!(res.truncated, Some(Bound::Rows { limit: 5 }));
    let opts = QueryOptions {
        limits: Limits {
            max_work: 1000,
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    let e = db
        .query_with("MATCH (a)-[*]-(b) RETURN count(*)", &BTreeMap::new(), &opts)
        .expect_err("work");
    assert!(
        matches!(
            e,
            QueryError::LimitExceeded {
                bound: Bound::Work { limit: 1000 }
            }
        ),
        "{e}"
    );
    let cancel = Arc::new(AtomicBool::new(true));
    let opts = QueryOptions {
        cancel: Some(cancel),
        ..QueryOptions::default()
    };
    let e = db
        .query_with("MATCH (n) RETURN n", &BTreeMap::new(), &opts)
        .expect_err("cancelled");
    assert!(
        matches!(
            e,
            QueryError::LimitExceeded {
                bound: Bound::Cancelled
            }
        ),
        "{e}"
    );
    let opts = QueryOptions {
        limits: Limits {
            timeout: Some(std::time::Duration::ZERO),
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    let e = db
        .query_with("MATCH (n) RETURN n", &BTreeMap::new(), &opts)
        .expect_err("timeout");
    assert!(
        matches!(
            e,
            QueryError::LimitExceeded {
                bound: Bound::Timeout { .. }
            }
        ),
        "{e}"
    );
    // LIMIT stops the expansion: the work budget that a full run exceeds is enough.
    let opts = QueryOptions {
        limits: Limits {
            max_work: 200,
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    let res = db
        .query_with(
            "MATCH (a)-[*]-(b) RETURN a LIMIT 3",
            &BTreeMap::new(),
            &opts,
        )
        .expect("limit");
    assert_eq!(res.rows.len(), 3);
}

#[test]
fn profile_and_prepared() {
    let (_d, db) = db();
    let res = db
        .query(
            "PROFILE MATCH (a:Function)-[:CALLS]->(b) RETURN b.name",
            &BTreeMap::new(),
        )
        .expect("profile");
    assert_eq!(res.rows.len(), 6);
    let prof = res.profile.expect("profile");
    assert_eq!(prof[0].rows, 6);
    assert!(res.plan.expect("text").contains("rows=6"));
    let prep = db
        .prepare("MATCH (f:Function {name: $n}) RETURN f.id")
        .expect("prepare");
    assert_eq!(prep.parameters(), ["n"]);
    for (n, id) in [("main", "src/a.c:main"), ("util", "src/b.c:util")] {
        let mut p = BTreeMap::new();
        p.insert("n".to_string(), Value::from(n));
        assert_eq!(
            prep.execute(&p).expect("exec").rows,
            vec![vec![Value::from(id)]]
        );
    }
    assert_eq!(db.generation(), db.artifact().generation());
}

/// A cell of 65,536 characters or more is printed whole (the table printer panicked).
#[test]
fn a_table_cell_wider_than_u16_is_printed() {
    let (_d, db) = db();
    // 16^4 = 65,536 characters.
    let res = db
        .query(
            "WITH 'aaaaaaaaaaaaaaaa' AS sixteen \
             RETURN replace(replace(replace(sixteen, 'a', sixteen), 'a', sixteen), 'a', sixteen) \
             AS big, 1 AS one",
            &BTreeMap::new(),
        )
        .expect("query");
    let table = render(&res, &db.graph(), Format::Table);
    let row = table.lines().nth(2).expect("a row");
    let width = 1 << 16;
    assert!(
        row.len() == width + 4 && row.ends_with(" | 1"),
        "{}",
        row.len()
    );
    assert!(row[..width].bytes().all(|b| b == b'a'));
    assert!(table.ends_with("(1 row)\n"));
}

#[test]
fn rendering() {
    let (_d, db) = db();
    let res = db
        .query(
            "MATCH (a {name: 'util'})-[r:READS]->(v) RETURN a.name AS name, r, 'x,\"y' AS s",
            &BTreeMap::new(),
        )
        .expect("query");
    let g = db.graph();
    let table = render(&res, &g, Format::Table);
    assert!(table.ends_with("(1 row)\n"), "{table}");
    assert!(table.starts_with("name | r"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&render(&res, &g, Format::Json)).expect("json");
    assert_eq!(json[0]["name"], "util");
    assert_eq!(json[0]["r"]["_type"], "READS");
    assert_eq!(json[0]["r"]["roles"], 8);
    let jl = render(&res, &g, Format::JsonLines);
    assert_eq!(jl.lines().count(), 1);
    let csv = render(&res, &g, Format::Csv);
    assert!(csv.starts_with("name,r,s\r\nutil,"), "{csv}");
    assert!(csv.contains("\"x,\"\"y\""), "{csv}");
    let res = db
        .query("MATCH (a {name: 'main'}) RETURN a", &BTreeMap::new())
        .expect("node");
    let json: serde_json::Value =
        serde_json::from_str(&render(&res, &g, Format::Json)).expect("json");
    assert_eq!(json[0]["a"]["_labels"][0], "Function");
    assert_eq!(json[0]["a"]["id"], "src/a.c:main");
}

/// A few rows of huge values pass the row bound; the byte budget of held values stops
/// them (issue 28: `collect` over a cartesian product reached 4.9 GB first). Each
/// materialising operator counts: aggregation, DISTINCT, sorting, top-k.
#[test]
fn held_values_are_bounded_in_bytes() {
    let (_dir, db) = db();
    let opts = QueryOptions {
        limits: Limits {
            max_held_bytes: 1 << 20,
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    // 200 rows of 10 kB: 2 MB.
    let params = BTreeMap::from([("text".to_string(), Value::from("x".repeat(10_000)))]);
    let big = "UNWIND range(1, 200) AS i WITH i, $text AS text";
    for query in [
        format!("{big} RETURN collect(text)"),
        format!("{big} RETURN DISTINCT text + toString(i)"),
        format!("{big} RETURN text ORDER BY i"),
        format!("{big} RETURN text ORDER BY i LIMIT 150"),
        format!("{big} RETURN count(DISTINCT text + toString(i))"),
        format!("{big} WITH text + toString(i) AS t RETURN t, count(*)"),
    ] {
        let error = db.query_with(&query, &params, &opts).expect_err(&query);
        assert!(
            matches!(
                error,
                QueryError::LimitExceeded {
                    bound: Bound::HeldBytes { limit: 1_048_576 }
                }
            ),
            "{query}: {error}"
        );
        assert!(error.to_string().contains("1 MiB of values"), "{error}");
    }
    // Small values stay well inside it, and values streamed through are not held.
    let fine = db.query_with(
        &format!("{big} RETURN size(text) AS n ORDER BY n LIMIT 3"),
        &params,
        &opts,
    );
    assert!(fine.is_ok(), "{fine:?}");
    let counted = db.query_with(&format!("{big} RETURN count(text)"), &params, &opts);
    assert!(counted.is_ok(), "{counted:?}");
}

/// Loops inside one expression keep the query's bounds (issue 28: ten billion steps of a
/// nested comprehension ran on for minutes past the 10 s timeout).
#[test]
fn loops_inside_an_expression_stop_at_the_bounds() {
    let (_dir, db) = db();
    let nested = "RETURN size([x IN range(1, 100000) | size([y IN range(1, 100000) WHERE y > x])])";
    let quantified =
        "RETURN all(x IN range(1, 100000) WHERE any(y IN range(1, 100000) WHERE y < 0))";
    let work = QueryOptions {
        limits: Limits {
            max_work: 1_000_000,
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    let time = QueryOptions {
        limits: Limits {
            max_work: u64::MAX,
            timeout: Some(std::time::Duration::from_millis(200)),
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    for query in [nested, quantified] {
        let started = std::time::Instant::now();
        let error = db
            .query_with(query, &BTreeMap::new(), &work)
            .expect_err(query);
        assert!(
            matches!(
                error,
                QueryError::LimitExceeded {
                    bound: Bound::Work { limit: 1_000_000 }
                }
            ),
            "{query}: {error}"
        );
        let error = db
            .query_with(query, &BTreeMap::new(), &time)
            .expect_err(query);
        assert!(
            matches!(
                error,
                QueryError::LimitExceeded {
                    bound: Bound::Timeout { .. }
                }
            ),
            "{query}: {error}"
        );
        assert!(started.elapsed().as_secs() < 5, "{query} stopped late");
    }
    // A loop within the bounds still answers.
    let small = db.query_with(
        "RETURN size([x IN range(1, 1000) WHERE x % 2 = 0]) AS n",
        &BTreeMap::new(),
        &work,
    );
    assert_eq!(small.unwrap().rows, vec![vec![Value::Int(500)]]);
}

#[test]
fn memory_bound_and_refresh() {
    let (dir, mut db) = db();
    let opts = QueryOptions {
        limits: Limits {
            max_intermediate_rows: 3,
            ..Limits::default()
        },
        ..QueryOptions::default()
    };
    let e = db
        .query_with(
            "MATCH (n) RETURN n.name ORDER BY n.name",
            &BTreeMap::new(),
            &opts,
        )
        .expect_err("sort holds 9 rows");
    assert!(
        matches!(
            e,
            QueryError::LimitExceeded {
                bound: Bound::Memory { limit: 3 }
            }
        ),
        "{e}"
    );
    // TopK holds only k rows, so the same bound admits ORDER BY ... LIMIT 2.
    let res = db
        .query_with(
            "MATCH (n) RETURN n.name ORDER BY n.name LIMIT 2",
            &BTreeMap::new(),
            &opts,
        )
        .expect("top-k");
    assert_eq!(
        res.rows,
        vec![vec![Value::from("MAX")], vec![Value::from("a.c")]]
    );

    assert!(!db.refresh().expect("refresh"));
    let before = db.generation();
    let mut g = batho_storage::GraphBuilder::new();
    support::node(
        &mut g,
        "x.c",
        "only",
        batho_schema::NodeKind::Function,
        batho_schema::NodeFlags(0),
    );
    let store = batho_storage::Store::create_or_open(&dir.path().join(".batho")).expect("store");
    store
        .lock_writer()
        .expect("lock")
        .commit(&g, batho_storage::fuzzing::sample_run(&g))
        .expect("commit");
    assert!(db.refresh().expect("refresh"));
    assert!(db.generation() > before);
    assert_eq!(run(&db, "MATCH (n) RETURN n.name", false), "'only'");
}

#[test]
fn database_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Database>();
    let (_d, db) = db();
    let db = Arc::new(db);
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                db.query("MATCH (n:Function) RETURN count(*)", &BTreeMap::new())
                    .map(|r| r.rows)
            })
        })
        .collect();
    for h in handles {
        assert_eq!(
            h.join().expect("thread").expect("query"),
            vec![vec![Value::Int(5)]]
        );
    }
}

#[test]
fn regex_parameters_seek_their_literal_prefix() {
    let (_d, db) = db();
    let q = "MATCH (f:Function) WHERE f.name =~ $p RETURN f.name ORDER BY f.name";
    for optimize in [true, false] {
        let opts = QueryOptions {
            optimize,
            ..QueryOptions::default()
        };
        for (p, want) in [
            ("lu.*", vec!["luaD_call"]),
            ("(?:^he).*", vec!["helper"]),
            ("(?i)MAIN|util", vec!["main", "util"]),
            ("x.*", vec![]),
        ] {
            let params = BTreeMap::from([("p".to_string(), Value::from(p))]);
            let res = db.query_with(q, &params, &opts).expect("query");
            let got: Vec<Value> = res.rows.into_iter().map(|mut r| r.remove(0)).collect();
            let want: Vec<Value> = want.into_iter().map(Value::from).collect();
            assert_eq!(got, want, "{p} optimize={optimize}");
        }
    }
    let plan = db
        .query(&format!("EXPLAIN {q}"), &BTreeMap::new())
        .expect("explain")
        .plan
        .expect("plan");
    assert!(plan.contains("NodeSeek (f:Function) name =~ $p"), "{plan}");
}

#[test]
fn communities_procedure_counts_and_names_each_community() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = batho_storage::GraphBuilder::new();
    let none = batho_schema::NodeFlags(0);
    let f = |g: &mut batho_storage::GraphBuilder, file: &str, name: &str, c: u32| {
        let n = support::node(g, file, name, batho_schema::NodeKind::Function, none);
        g.nodes[n.0 as usize].community = c;
        n
    };
    // Community 1: hub (called by a and b) over two files; community 2: c and d; e alone.
    let hub = f(&mut g, "src/x.c", "hub", 1);
    let a = f(&mut g, "src/x.c", "a", 1);
    let b = f(&mut g, "src/y.c", "b", 1);
    let c = f(&mut g, "src/z.c", "c", 2);
    let d = f(&mut g, "src/z.c", "d", 2);
    f(&mut g, "src/z.c", "e", 0);
    let calls = |g: &mut batho_storage::GraphBuilder, s, t| {
        support::edge(
            g,
            s,
            t,
            batho_schema::RelType::Calls,
            batho_schema::Roles::NONE,
            batho_schema::Strategy::Direct,
        )
    };
    calls(&mut g, a, hub);
    calls(&mut g, b, hub);
    calls(&mut g, d, c);
    let db = support::commit(dir.path(), &g);
    let res = db
        .query(
            "CALL db.communities() YIELD community, entities, files, central, central_id \
             RETURN community, entities, files, central, central_id ORDER BY community",
            &BTreeMap::new(),
        )
        .expect("query");
    let rows: Vec<String> = res
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        rows,
        [
            "1 3 2 'hub' 'src/x.c:hub'",
            // c and d have degree 1 each: the lower node index wins.
            "2 2 1 'c' 'src/z.c:c'",
        ]
    );
    // db.stats counts those communities and sums their modularity terms.
    let one = |q: &str| {
        db.query(q, &BTreeMap::new()).expect("query").rows[0]
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let sum = one("CALL db.communities() YIELD modularity RETURN sum(modularity)");
    assert_eq!(
        one(
            "CALL db.stats() YIELD nodes, edges, files, entities, communities, modularity \
             RETURN nodes, edges, files, entities, communities, modularity"
        ),
        format!("6 3 0 6 2 {sum}")
    );
}
