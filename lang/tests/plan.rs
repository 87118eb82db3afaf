//! Plan snapshots: the EXPLAIN text of the brief's queries and of each rewrite.

use batho_lang::plan::LogicalPlan;
use batho_lang::{Schema, compile};
use expect_test::{Expect, expect};

fn explain(text: &str) -> String {
    let compiled = compile(text, &Schema::code_graph()).unwrap_or_else(|e| panic!("{text}\n{e}"));
    compiled
        .iter()
        .map(|c| format!("columns: {}\n{}", c.plan.columns.join(", "), c.plan))
        .collect::<Vec<_>>()
        .join("\n;\n")
}

#[test]
fn columns_and_parameters() {
    let c = compile(
        "MATCH (a {id: $src})-[r:CALLS*..3]->(b) WHERE b.file = $file RETURN b.name AS name, size(r) AS hops LIMIT $n",
        &Schema::code_graph(),
    )
    .expect("compiles");
    let plan = &c[0].plan;
    assert_eq!(plan.parameters(), ["file", "n", "src"]);
    assert_eq!(plan.root.columns(), ["name", "hops"]);
    plan.validate().expect("valid");
    // The validator catches an expression reading a column nobody produced.
    let bad = LogicalPlan::Filter {
        input: Box::new(LogicalPlan::Argument { columns: vec![] }),
        predicate: batho_lang::parse_statement("RETURN x")
            .map(|st| match &st.clauses[0] {
                batho_lang::ast::Clause::Return(p) => p.items[0].expr.clone(),
                _ => unreachable!("a RETURN statement"),
            })
            .expect("parses"),
    };
    let err = bad.validate().expect_err("x is not bound");
    assert!(err.message.contains("references `x`"), "{err}");
}

fn check(text: &str, expect: Expect) {
    expect.assert_eq(&explain(text));
}

#[test]
fn brief_callers_with_confidence() {
    check(
        "MATCH (c)-[r:CALLS]->(f:Function {name: 'validate_token'})
         WHERE r.confidence >= 0.85 AND has_role(r, 'ReadAccess') = false
         RETURN c.id, c.file, r.line ORDER BY c.file LIMIT 50",
        expect![[r#"
            columns: c.id, c.file, r.line
            TopK 50 by `c.file` ASC
              Project c.id AS `c.id`, c.file AS `c.file`, r.line AS `r.line`
                Filter ((r.confidence >= 0.85) AND (has_role(r, 'ReadAccess') = false))
                  Expand (f)<-[r:CALLS]-(c)
                    NodeSeek (f:Function) name = 'validate_token'
                      Argument"#]],
    );
}

#[test]
fn brief_shortest_path() {
    check(
        "MATCH p = shortestPath((a {id: $src})-[:CALLS|INCLUDES*..5]->(b {id: $dst})) RETURN p",
        expect![[r#"
            columns: p
            Project p
              ShortestPath p = (a)-[`#r0`:CALLS|INCLUDES*1..5]->(b)
                NodeSeek (b) id = $dst
                  NodeSeek (a) id = $src
                    Argument"#]],
    );
}

#[test]
fn brief_file_dependencies() {
    check(
        "MATCH (n)-[r]->(m) WHERE n.file = $file AND m.file <> $file
         RETURN m.file, type(r), count(*) AS n, max(r.confidence) ORDER BY n DESC",
        expect![[r#"
            columns: m.file, type(r), n, max(r.confidence)
            Sort n DESC
              Aggregate keys [m.file AS `m.file`, type(r) AS `type(r)`] aggregates [count(*) AS n, max(r.confidence) AS `max(r.confidence)`]
                Filter (m.file <> $file)
                  Expand (n)-[r]->(m)
                    Filter (n.file = $file)
                      NodeScan (n)
                        Argument"#]],
    );
}

#[test]
fn brief_pagerank() {
    check(
        "CALL algo.pagerank() YIELD node, score RETURN node.file, sum(score) AS rank ORDER BY rank DESC",
        expect![[r#"
            columns: node.file, rank
            Sort rank DESC
              Aggregate keys [node.file AS `node.file`] aggregates [sum(score) AS rank]
                ProcedureCall algo.pagerank() YIELD node, score
                  Argument"#]],
    );
}

#[test]
fn brief_explain_var_length() {
    let c = compile(
        "EXPLAIN MATCH (f:Function)<-[:CALLS*1..3]-(g) RETURN DISTINCT g.id",
        &Schema::code_graph(),
    )
    .expect("compiles");
    assert_eq!(c[0].plan.mode, batho_lang::ast::Mode::Explain);
    check(
        "EXPLAIN MATCH (f:Function)<-[:CALLS*1..3]-(g) RETURN DISTINCT g.id",
        expect![[r#"
        columns: g.id
        Distinct
          Project g.id AS `g.id`
            Expand (f)<-[`#r0`:CALLS*1..3]-(g)
              NodeScan (f:Function)
                Argument"#]],
    );
}

#[test]
fn seeks_from_where_and_pushdown() {
    check(
        "MATCH (a:Function)-[:CALLS]->(b)-[:CALLS]->(c) WHERE c.id = $id AND a.is_static AND b.name STARTS WITH 'x' RETURN a.name",
        expect![[r#"
            columns: a.name
            Project a.name AS `a.name`
              Filter (a.is_static AND a:Function)
                Expand (b)<-[`#r0`:CALLS]-(a) unique from #r1
                  Filter (b.name STARTS WITH 'x')
                    Expand (c)<-[`#r1`:CALLS]-(b)
                      NodeSeek (c) id = $id
                        Argument"#]],
    );
    check(
        "MATCH (a)-[:CALLS*]->(b:Method) WHERE a.name = 'main' RETURN b",
        expect![[r#"
            columns: b
            Project b
              Filter b:Method
                Expand (a)-[`#r0`:CALLS*1..10]->(b)
                  NodeSeek (a) name = 'main'
                    Argument"#]],
    );
}

#[test]
fn joins_products_and_optional() {
    check(
        "MATCH (a:Function), (b:Function) WHERE a.name = b.name AND a.id < b.id RETURN a.id, b.id",
        expect![[r#"
            columns: a.id, b.id
            Project a.id AS `a.id`, b.id AS `b.id`
              Filter (a.id < b.id)
                NodeSeek (b:Function) name = a.name
                  NodeScan (a:Function)
                    Argument"#]],
    );
    check(
        "MATCH (a:Function), (b:Method) WHERE a.file = b.file RETURN a, b",
        expect![[r#"
        columns: a, b
        Project a, b
          HashJoin a.file = b.file
            NodeScan (a:Function)
              Argument
            NodeScan (b:Method)
              Argument"#]],
    );
    check(
        "MATCH (a)-[r1:CALLS]->(b), (c)-[r2:CALLS]->(d) RETURN a, d",
        expect![[r#"
        columns: a, d
        Project a, d
          Filter (r1 <> r2)
            CartesianProduct
              Expand (a)-[r1:CALLS]->(b)
                NodeScan (a)
                  Argument
              Expand (c)-[r2:CALLS]->(d)
                NodeScan (c)
                  Argument"#]],
    );
    check(
        "MATCH (a)-[r]->(b) MATCH (a)-[r]->(c) RETURN c",
        expect![[r#"
        columns: c
        Project c
          Filter (`#r0` = r)
            Expand (a)-[`#r0`]->(c)
              Expand (a)-[r]->(b)
                NodeScan (a)
                  Argument"#]],
    );
    check(
        "MATCH (a:File), (b:Macro) RETURN a, b",
        expect![[r#"
        columns: a, b
        Project a, b
          CartesianProduct
            NodeScan (a:File)
              Argument
            NodeScan (b:Macro)
              Argument"#]],
    );
    check(
        "MATCH (f:File {id: $f}) OPTIONAL MATCH (f)-[:CONTAINS]->(x:Function) WHERE x.is_exported RETURN f.id, collect(x.name) AS names",
        expect![[r#"
            columns: f.id, names
            Aggregate keys [f.id AS `f.id`] aggregates [collect(x.name) AS names]
              Optional adds [#r0, x]
                NodeSeek (f:File) id = $f
                  Argument
                Filter (x.is_exported AND x:Function)
                  Expand (f)-[`#r0`:CONTAINS]->(x)
                    Argument f"#]],
    );
}

#[test]
fn projections_and_sorting() {
    check(
        "MATCH (f:Function) WITH f, size(f.name) AS len WHERE len > 3 RETURN f.name ORDER BY f.start_line SKIP 10 LIMIT 5",
        expect![[r#"
            columns: f.name
            Project `f.name`
              Skip 10
                TopK (10 + 5) by f.start_line ASC
                  Project f.name AS `f.name`, f
                    Filter (len > 3)
                      Project f, size(f.name) AS len
                        NodeScan (f:Function)
                          Argument"#]],
    );
    check(
        "MATCH (n) RETURN n.file AS file, count(*) * 2 AS twice ORDER BY twice",
        expect![[r#"
        columns: file, twice
        Sort twice ASC
          Project file, (`#agg0` * 2) AS twice
            Aggregate keys [n.file AS file] aggregates [count(*) AS `#agg0`]
              NodeScan (n)
                Argument"#]],
    );
    check(
        "UNWIND $ids AS id MATCH (n {id: id}) RETURN n.name SKIP 2",
        expect![[r#"
        columns: n.name
        Skip 2
          Project n.name AS `n.name`
            NodeSeek (n) id = id
              Unwind $ids AS id
                Argument"#]],
    );
    check(
        "MATCH p = (a)-[:CALLS]->()-[:CALLS]->(b) RETURN p",
        expect![[r#"
        columns: p
        Project p
          BindPath p = (a) via [#r1, #r2]
            Expand (`#n0`)-[`#r2`:CALLS]->(b) unique from #r1
              Expand (a)-[`#r1`:CALLS]->(`#n0`)
                NodeScan (a)
                  Argument"#]],
    );
}

#[test]
fn procedures_and_writes() {
    check(
        "CALL db.schema()",
        expect![[r#"
        columns: kind, name, count
        ProcedureCall db.schema() YIELD kind, name, count
          Argument"#]],
    );
    check(
        "CALL db.labels() YIELD label AS l WHERE l STARTS WITH 'F' RETURN l",
        expect![[r#"
        columns: l
        Project l
          Filter (l STARTS WITH 'F')
            ProcedureCall db.labels() YIELD label AS l
              Argument"#]],
    );
    let schema = Schema::open();
    let c = compile(
        "MATCH (a:Note {id: $a}) CREATE (a)-[:NEXT]->(b:Note {id: $b}) SET b.seen = 1 WITH b MATCH (b)-[r]-() DELETE r",
        &schema,
    )
    .expect("compiles");
    assert!(c[0].plan.writes);
    expect![[r#"
        Delete r
          Expand (b)-[r]-(`#n0`)
            Project b
              SetProperties b.seen = 1
                Create (a)-[:NEXT]->(b:Note {id: $b})
                  NodeSeek (a:Note) id = $a
                    Argument"#]]
    .assert_eq(&c[0].plan.to_string());
}

#[test]
fn plans_are_data() {
    let c = compile(
        "MATCH (f:Function {id: 'x'}) RETURN f",
        &Schema::code_graph(),
    )
    .expect("compiles");
    let mut node = &c[0].plan.root;
    let mut names = Vec::new();
    loop {
        names.push(node.name());
        match node.children().first() {
            Some(n) => node = n,
            None => break,
        }
    }
    assert_eq!(names, ["Project", "NodeSeek", "Argument"]);
    let LogicalPlan::Project { input, .. } = &c[0].plan.root else {
        panic!("not a projection")
    };
    let LogicalPlan::NodeSeek { key, labels, .. } = input.as_ref() else {
        panic!("not a seek")
    };
    assert_eq!(
        (*key, labels.as_slice()),
        (
            batho_lang::plan::SeekKey::Id,
            ["Function".to_string()].as_slice()
        )
    );
}

#[test]
fn name_prefix_seeks() {
    // STARTS WITH is answered by the prefix range alone; a regex keeps its filter.
    check(
        "MATCH (f:Function) WHERE f.name STARTS WITH 'mutex_' RETURN count(*)",
        expect![[r#"
            columns: count(*)
            Aggregate keys [] aggregates [count(*) AS `count(*)`]
              NodeSeek (f:Function) name STARTS WITH 'mutex_'
                Argument"#]],
    );
    check(
        "MATCH (f:Function) WHERE f.name =~ 'mutex_(un)?lock.*' RETURN count(*)",
        expect![[r#"
            columns: count(*)
            Aggregate keys [] aggregates [count(*) AS `count(*)`]
              Filter (f.name =~ 'mutex_(un)?lock.*')
                NodeSeek (f:Function) name STARTS WITH 'mutex_'
                  Argument"#]],
    );
    // An equality on the name is preferred over a prefix; no literal prefix, no seek.
    check(
        "MATCH (f) WHERE f.name =~ 'lua_.*' AND f.name = 'lua_call' AND f.file =~ '(?i)x.*' RETURN f",
        expect![[r#"
            columns: f
            Project f
              Filter ((f.name =~ 'lua_.*') AND (f.file =~ '(?i)x.*'))
                NodeSeek (f) name = 'lua_call'
                  Argument"#]],
    );
    check(
        "MATCH (f) WHERE f.name =~ '(?i)lua_.*' OR f.name STARTS WITH 'x' RETURN f",
        expect![[r#"
            columns: f
            Project f
              Filter ((f.name =~ '(?i)lua_.*') OR (f.name STARTS WITH 'x'))
                NodeScan (f)
                  Argument"#]],
    );
}

#[test]
fn relationship_carried_by_with_constrains_the_next_match() {
    // `r2` comes from the WITH: the second MATCH must expand on top of those rows and keep
    // only the same relationship, not bind `r2` afresh in a separate product.
    check(
        "MATCH ()-[r1:CALLS]->() WITH r1 AS r2 MATCH ()-[r2]->() RETURN r2 AS rel",
        expect![[r#"
            columns: rel
            Project r2 AS rel
              Filter (`#r4` = r2)
                Expand (`#n2`)-[`#r4`]->(`#n3`)
                  NodeScan (`#n2`)
                    Project r1 AS r2
                      Expand (`#n0`)-[r1:CALLS]->(`#n1`)
                        NodeScan (`#n0`)
                          Argument"#]],
    );
}

#[test]
fn comprehension_variables_are_not_columns() {
    // `x` is local to the comprehension: the projection reads only `n` from its input.
    check(
        "MATCH (n:Function) RETURN [x IN [1, 2] WHERE x > n.start_line | x] AS xs, any(y IN [n] WHERE y.name = 'main') AS m",
        expect![[r#"
            columns: xs, m
            Project [x IN [1, 2] WHERE (x > n.start_line) | x] AS xs, any(y IN [n] WHERE (y.name = 'main')) AS m
              NodeScan (n:Function)
                Argument"#]],
    );
}

#[test]
fn with_where_reads_a_variable_the_with_drops() {
    // `a` rides along as a hidden column until the filter has used it.
    check(
        "MATCH (a:Function) WITH a.name AS name ORDER BY name LIMIT 3 WHERE a.file = 'x' RETURN name",
        expect![[r#"
            columns: name
            Project name
              Project name
                Filter (a.file = 'x')
                  TopK 3 by name ASC
                    Project a.name AS name, a
                      NodeScan (a:Function)
                        Argument"#]],
    );
}

#[test]
fn with_distinct_where_repeats_a_projected_expression() {
    check(
        "MATCH (a:Function) WITH DISTINCT a.name AS name WHERE a.name = 'x' RETURN name",
        expect![[r#"
            columns: name
            Project name
              Filter (name = 'x')
                Distinct
                  Project a.name AS name
                    NodeScan (a:Function)
                      Argument"#]],
    );
}

#[test]
fn with_where_names_mean_the_new_columns() {
    // After the swap `n` is the old `m`: the filter must read the new column `n`.
    check(
        "MATCH (m:Function)-[:CALLS]->(n) WITH m AS n, n AS m WHERE n.name = 'x' RETURN m",
        expect![[r#"
            columns: m
            Project m
              Filter (n.name = 'x')
                Project m AS n, n AS m
                  Expand (m)-[`#r0`:CALLS]->(n)
                    NodeScan (m:Function)
                      Argument"#]],
    );
}

#[test]
fn percentiles_carry_their_fraction() {
    check(
        "MATCH (f:Function) RETURN f.file, percentileCont(f.start_line, 0.5) AS median",
        expect![[r#"
            columns: f.file, median
            Aggregate keys [f.file AS `f.file`] aggregates [percentileCont(f.start_line, 0.5) AS median]
              NodeScan (f:Function)
                Argument"#]],
    );
}

#[test]
fn a_list_parameter_is_moved_only_into_an_unwind_that_runs_once_and_alone_reads_it() {
    let moved = |text: &str| -> Vec<Option<String>> {
        compile(text, &Schema::open())
            .unwrap_or_else(|e| panic!("{text}\n{e}"))
            .into_iter()
            .map(|c| c.plan.moved_parameter)
            .collect()
    };
    let rows = || Some("rows".to_string());
    assert_eq!(
        moved("UNWIND $rows AS r CREATE (:N {id: r.id, name: r.name})"),
        [rows()]
    );
    assert_eq!(
        moved("UNWIND $rows AS r MATCH (a:N {id: r.a}), (b:N {id: r.b}) CREATE (a)-[:E]->(b)"),
        [rows()]
    );
    assert_eq!(
        moved("UNWIND $rows AS r RETURN r, size($rows) AS n"),
        [None]
    );
    assert_eq!(
        moved("UNWIND $rows AS r UNWIND $rows AS s RETURN r, s"),
        [None]
    );
    // Runs once per input row, not once.
    assert_eq!(moved("MATCH (n) UNWIND $rows AS r RETURN r"), [None]);
    assert_eq!(moved("WITH 1 AS x UNWIND $rows AS r RETURN r"), [None]);
    assert_eq!(
        moved("UNWIND [1, 2] AS x UNWIND $rows AS r RETURN r"),
        [None]
    );
    assert_eq!(
        moved("MATCH (n) OPTIONAL MATCH (m) WHERE m.id IN $rows RETURN n, m"),
        [None]
    );
    // Another statement of the text reads it too.
    assert_eq!(
        moved("UNWIND $rows AS r CREATE (:N {id: r}); MATCH (n:N) WHERE n.id IN $rows RETURN n"),
        [None, None]
    );
    assert_eq!(
        moved("UNWIND $rows AS r CREATE (:N {id: r}); UNWIND $other AS o RETURN o"),
        [rows(), Some("other".to_string())]
    );
}
