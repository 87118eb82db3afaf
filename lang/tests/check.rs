//! Semantic checks against the code-graph schema: snapshots of the reported errors.

use batho_lang::schema::{ProcedureSig, PropType, ValueKind};
use batho_lang::{CheckErrorKind, Schema, check, parse};
use expect_test::{Expect, expect};

fn errors(text: &str, schema: &Schema) -> Vec<batho_lang::CheckError> {
    let sts = parse(text).unwrap_or_else(|e| panic!("{e}"));
    sts.iter()
        .filter_map(|st| check(text, st, schema).err())
        .flat_map(|e| e.0)
        .collect()
}

fn ok(text: &str) {
    let errs = errors(text, &Schema::code_graph());
    assert!(
        errs.is_empty(),
        "{text}\n{}",
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn check_err(text: &str, expect: Expect) {
    let errs = errors(text, &Schema::code_graph());
    assert!(!errs.is_empty(), "accepted: {text}");
    expect.assert_eq(
        &errs
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n\n"),
    );
}

fn kinds(text: &str) -> Vec<CheckErrorKind> {
    errors(text, &Schema::code_graph())
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

#[test]
fn brief_examples_are_valid() {
    ok("MATCH (c)-[r:CALLS]->(f:Function {name: 'validate_token'})
        WHERE r.confidence >= 0.85 AND has_role(r, 'ReadAccess') = false
        RETURN c.id, c.file, r.line ORDER BY c.file LIMIT 50");
    ok("MATCH p = shortestPath((a {id: $src})-[:CALLS|INCLUDES*..5]->(b {id: $dst})) RETURN p");
    ok("MATCH (n)-[r]->(m) WHERE n.file = $file AND m.file <> $file
        RETURN m.file, type(r), count(*) AS n, max(r.confidence) ORDER BY n DESC");
    ok(
        "CALL algo.pagerank() YIELD node, score RETURN node.file, sum(score) AS rank ORDER BY rank DESC",
    );
    ok("EXPLAIN MATCH (f:Function)<-[:CALLS*1..3]-(g) RETURN DISTINCT g.id");
    ok("MATCH (f:function)-[:imports]->(g) RETURN f, g");
    ok("MATCH (n) WITH n.file AS file, count(*) AS c WHERE c > 2 RETURN file ORDER BY file");
    ok("MATCH (n) RETURN n.name ORDER BY n.start_line");
    ok("MATCH (n) RETURN n.file, count(*) ORDER BY n.file");
    ok("MATCH (n) RETURN n.file AS f, count(*) * 2 AS c ORDER BY c");
    ok("UNWIND [1, 2] AS x WITH x WHERE x > 1 RETURN x, x + 1 AS y");
    ok("MATCH (a)-[r]->(b) MATCH (a)-[r]->(c) RETURN a, b, c");
    ok("CALL db.schema()");
    ok("MATCH (n) WHERE n:Function|Method RETURN n");
    ok("MATCH p = (a)-[rs:CALLS*1..3]->(b) RETURN length(p), size(rs), rs[0].line");
    ok("MATCH (n) RETURN n SKIP $s LIMIT 10");
}

#[test]
fn unknown_names_get_suggestions() {
    check_err(
        "MATCH (n:Fucntion)-[:CALS]->(m) WHERE n.nmae = 'x' AND m.confidence > 1 RETURN n",
        expect![[r#"
            error: unknown label `Fucntion`
             --> line 1, column 10
              |
            1 | MATCH (n:Fucntion)-[:CALS]->(m) WHERE n.nmae = 'x' AND m.confidence > 1 RETURN n
              |          ^^^^^^^^
              = help: did you mean Function?

            error: unknown relationship type `CALS`
             --> line 1, column 22
              |
            1 | MATCH (n:Fucntion)-[:CALS]->(m) WHERE n.nmae = 'x' AND m.confidence > 1 RETURN n
              |                      ^^^^
              = help: did you mean CALLS?

            error: nodes have no property `nmae`
             --> line 1, column 41
              |
            1 | MATCH (n:Fucntion)-[:CALS]->(m) WHERE n.nmae = 'x' AND m.confidence > 1 RETURN n
              |                                         ^^^^
              = help: did you mean name?

            error: nodes have no property `confidence`
             --> line 1, column 58
              |
            1 | MATCH (n:Fucntion)-[:CALS]->(m) WHERE n.nmae = 'x' AND m.confidence > 1 RETURN n
              |                                                          ^^^^^^^^^^
              = help: properties of nodes: id, name, qualified_name, kind, file, start_line, end_line, start_byte, end_byte, signature, content_hash, is_exported, is_static, is_active, community, language, pagerank, has_syntax_errors, doc"#]],
    );
    check_err(
        "MATCH (a)-[r:CALLS]->(b) WHERE has_role(r, 'Writeaccess') AND has_role(r, 'Wrte') RETURN b",
        expect![[r#"
            error: unknown symbol role 'Wrte'
             --> line 1, column 75
              |
            1 | MATCH (a)-[r:CALLS]->(b) WHERE has_role(r, 'Writeaccess') AND has_role(r, 'Wrte') RETURN b
              |                                                                           ^^^^^^
              = help: roles: Definition, Import, WriteAccess, ReadAccess, Generated, Declaration, Dynamic, Heuristic, Inactive"#]],
    );
    check_err(
        "MATCH (n) RETURN toLowr(n.name), db.schema()",
        expect![[r#"
        error: unknown function `toLowr`
         --> line 1, column 18
          |
        1 | MATCH (n) RETURN toLowr(n.name), db.schema()
          |                  ^^^^^^
          = help: did you mean toLower?

        error: unknown function `db.schema`
         --> line 1, column 34
          |
        1 | MATCH (n) RETURN toLowr(n.name), db.schema()
          |                                  ^^^^^^^^^
          = help: `db.schema` is a procedure: use `CALL db.schema() YIELD ...`"#]],
    );
    check_err(
        "CALL db.shema() YIELD name RETURN name",
        expect![[r#"
        error: unknown procedure `db.shema`
         --> line 1, column 6
          |
        1 | CALL db.shema() YIELD name RETURN name
          |      ^^^^^^^^
          = help: did you mean db.schema?"#]],
    );
    check_err(
        "CALL algo.pagerank() YIELD nod RETURN nod",
        expect![[r#"
        error: procedure `algo.pagerank` has no output `nod`
         --> line 1, column 28
          |
        1 | CALL algo.pagerank() YIELD nod RETURN nod
          |                            ^^^
          = help: did you mean node?"#]],
    );
    check_err(
        "MATCH (n:Nope) RETURN n",
        expect![[r#"
        error: unknown label `Nope`
         --> line 1, column 10
          |
        1 | MATCH (n:Nope) RETURN n
          |          ^^^^
          = help: known labels: File, Namespace, Class, Struct, Union, Enum, Enumerator, Function, Method, Field, Variable, Typedef, Macro, External"#]],
    );
}

#[test]
fn variables() {
    check_err(
        "MATCH (node) RETURN nod.name",
        expect![[r#"
        error: variable `nod` is not defined
         --> line 1, column 21
          |
        1 | MATCH (node) RETURN nod.name
          |                     ^^^
          = help: did you mean node?"#]],
    );
    check_err(
        "MATCH (n) WITH n.name AS name RETURN n",
        expect![[r#"
        error: variable `n` is not defined
         --> line 1, column 38
          |
        1 | MATCH (n) WITH n.name AS name RETURN n
          |                                      ^
          = help: `n` is not carried over by the preceding WITH; add it there, e.g. `WITH n, ...`"#]],
    );
    check_err(
        "UNWIND [1] AS x UNWIND [2] AS x RETURN x",
        expect![[r#"
        error: variable `x` is already defined
         --> line 1, column 31
          |
        1 | UNWIND [1] AS x UNWIND [2] AS x RETURN x
          |                               ^
          = help: choose another name"#]],
    );
    check_err(
        "MATCH (a)-[r]->(b)-[r]->(c) RETURN a",
        expect![[r#"
        error: relationship variable `r` is used twice in one pattern
         --> line 1, column 21
          |
        1 | MATCH (a)-[r]->(b)-[r]->(c) RETURN a
          |                     ^
          = help: a relationship matches at most once per pattern; use another name"#]],
    );
    check_err(
        "MATCH (a)-[r]->(b) MATCH (r)-->(c) RETURN a",
        expect![[r#"
        error: `r` is a relationship, not a node
         --> line 1, column 27
          |
        1 | MATCH (a)-[r]->(b) MATCH (r)-->(c) RETURN a
          |                           ^
          = help: use a different variable name for the node"#]],
    );
    check_err(
        "MATCH (n) RETURN n.name AS x, n.file AS x",
        expect![[r#"
        error: column `x` is defined twice
         --> line 1, column 31
          |
        1 | MATCH (n) RETURN n.name AS x, n.file AS x
          |                               ^^^^^^^^^^^
          = help: give one of them another alias with AS"#]],
    );
    check_err(
        "MATCH (n) WITH n.name RETURN 1",
        expect![[r#"
        error: expressions in WITH must be aliased
         --> line 1, column 16
          |
        1 | MATCH (n) WITH n.name RETURN 1
          |                ^^^^^^
          = help: write `n.name AS name`"#]],
    );
    check_err(
        "MATCH p = (a)-->(b) RETURN p.name, type(a)",
        expect![[r#"
        error: cannot read property `name` of a path
         --> line 1, column 30
          |
        1 | MATCH p = (a)-->(b) RETURN p.name, type(a)
          |                              ^^^^
          = help: use nodes(p) or relationships(p) to reach the elements

        error: type() expects a relationship, but `a` is a node
         --> line 1, column 41
          |
        1 | MATCH p = (a)-->(b) RETURN p.name, type(a)
          |                                         ^"#]],
    );
}

#[test]
fn aggregates() {
    check_err(
        "MATCH (n) WHERE count(*) > 1 RETURN n",
        expect![[r#"
        error: aggregate `count(*)` is not allowed here
         --> line 1, column 17
          |
        1 | MATCH (n) WHERE count(*) > 1 RETURN n
          |                 ^^^^^^^^
          = help: aggregate in a WITH or RETURN item, then filter with WITH ... WHERE"#]],
    );
    check_err(
        "MATCH (n) RETURN count(max(n.start_line))",
        expect![[r#"
        error: aggregate functions cannot be nested
         --> line 1, column 24
          |
        1 | MATCH (n) RETURN count(max(n.start_line))
          |                        ^^^^^^^^^^^^^^^^^
          = help: aggregate in a WITH first, then aggregate the result"#]],
    );
    check_err(
        "MATCH (n) RETURN n.start_line + count(*)",
        expect![[r#"
        error: this expression mixes an aggregate with values that are not grouping keys
         --> line 1, column 18
          |
        1 | MATCH (n) RETURN n.start_line + count(*)
          |                  ^^^^^^^^^^^^^^^^^^^^^^^
          = help: return the non-aggregated part as its own column, e.g. `RETURN n.file, count(*)`"#]],
    );
    check_err(
        "MATCH (n) RETURN n.file, count(*) ORDER BY n.name",
        expect![[r#"
        error: variable `n` is not defined
         --> line 1, column 44
          |
        1 | MATCH (n) RETURN n.file, count(*) ORDER BY n.name
          |                                            ^
          = help: after aggregation only the projected columns can be used in ORDER BY"#]],
    );
    check_err(
        "MATCH (n) RETURN DISTINCT n.file ORDER BY n.name",
        expect![[r#"
        error: variable `n` is not defined
         --> line 1, column 43
          |
        1 | MATCH (n) RETURN DISTINCT n.file ORDER BY n.name
          |                                           ^
          = help: after DISTINCT only the projected columns can be used in ORDER BY"#]],
    );
    check_err(
        "MATCH (n) RETURN toLower(DISTINCT n.name)",
        expect![[r#"
        error: DISTINCT is only allowed in aggregate functions, not in toLower()
         --> line 1, column 18
          |
        1 | MATCH (n) RETURN toLower(DISTINCT n.name)
          |                  ^^^^^^^^^^^^^^^^^^^^^^^^"#]],
    );
    check_err(
        "MATCH (n) RETURN n LIMIT -1",
        expect![[r#"
        error: LIMIT must not be negative, got -1
         --> line 1, column 26
          |
        1 | MATCH (n) RETURN n LIMIT -1
          |                          ^^"#]],
    );
    check_err(
        "MATCH (n) RETURN n LIMIT n.start_line",
        expect![[r#"
        error: LIMIT must be a non-negative integer or a parameter
         --> line 1, column 26
          |
        1 | MATCH (n) RETURN n LIMIT n.start_line
          |                          ^^^^^^^^^^^^
          = help: write e.g. `LIMIT 10` or `LIMIT $n`"#]],
    );
    assert_eq!(
        kinds("MATCH (n) RETURN size()"),
        vec![CheckErrorKind::WrongArgumentCount]
    );
}

#[test]
fn writes() {
    check_err(
        "MATCH (n) CREATE (n:File)",
        expect![[r#"
        error: node `n` is already bound; CREATE cannot add labels or properties to it
         --> line 1, column 18
          |
        1 | MATCH (n) CREATE (n:File)
          |                  ^^^^^^^^
          = help: write `(n)` here and use SET to change it"#]],
    );
    check_err(
        "CREATE (a)-[:CALLS|READS]-(b)",
        expect![[r#"
        error: a created relationship needs exactly one type
         --> line 1, column 11
          |
        1 | CREATE (a)-[:CALLS|READS]-(b)
          |           ^^^^^^^^^^^^^^^^
          = help: write `-[:TYPE]->`

        error: a created relationship needs a direction
         --> line 1, column 11
          |
        1 | CREATE (a)-[:CALLS|READS]-(b)
          |           ^^^^^^^^^^^^^^^^
          = help: write `-[..]->` or `<-[..]-`"#]],
    );
    check_err(
        "MATCH (n) SET m.name = 'x'",
        expect![[r#"
        error: variable `m` is not defined
         --> line 1, column 15
          |
        1 | MATCH (n) SET m.name = 'x'
          |               ^
          = help: did you mean n?"#]],
    );
}

#[test]
fn schemas_are_values() {
    let notes = Schema::new(
        &["Note", "Chunk"],
        &["NEXT", "CITES"],
        &[("text", PropType::String)],
        &[],
    )
    .with_procedure(ProcedureSig::new(
        "ctx.compose",
        (1, 1),
        &[("node", ValueKind::Node)],
    ));
    let text = "MATCH (n:Note)-[:NEXT]->(c:Chunk) WHERE n.text CONTAINS 'x' RETURN c";
    assert!(errors(text, &notes).is_empty());
    let kinds: Vec<_> = errors(text, &Schema::code_graph())
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            CheckErrorKind::UnknownLabel,
            CheckErrorKind::UnknownRelType,
            CheckErrorKind::UnknownLabel,
            CheckErrorKind::UnknownProperty
        ]
    );
    assert!(errors("CALL ctx.compose($q) YIELD node RETURN node.text", &notes).is_empty());
    assert!(
        errors(
            "MATCH (n:Anything)-[:WHATEVER]->(m) RETURN n.foo, has_role(r, 'X')",
            &Schema::open()
        )
        .iter()
        .all(|e| e.kind == CheckErrorKind::UndefinedVariable)
    );
}

#[test]
fn iteration_variables_are_local() {
    ok("MATCH (n) RETURN [x IN [1, 2] WHERE x > 1 | x * 2], all(y IN [n] WHERE y.name = 'a')");
    ok("MATCH (n) WITH [1] AS x RETURN [x IN x | x], x");
    ok("RETURN count(*), [x IN [1, 2] | x]");
    check_err(
        "RETURN [x IN [1] | x], x",
        expect![[r#"
        error: variable `x` is not defined
         --> line 1, column 24
          |
        1 | RETURN [x IN [1] | x], x
          |                        ^"#]],
    );
    check_err(
        "RETURN any(x IN [1] WHERE y)",
        expect![[r#"
        error: variable `y` is not defined
         --> line 1, column 27
          |
        1 | RETURN any(x IN [1] WHERE y)
          |                           ^
          = help: did you mean x?"#]],
    );
}

#[test]
fn boolean_operators_refuse_literals_of_other_types() {
    check_err(
        "RETURN 123 AND true",
        expect![[r#"
        error: AND expects boolean operands, but `123` is an integer
         --> line 1, column 8
          |
        1 | RETURN 123 AND true
          |        ^^^"#]],
    );
    check_err(
        "RETURN NOT 'foo', [true] XOR {x: 1}",
        expect![[r#"
        error: NOT expects boolean operands, but `'foo'` is a string
         --> line 1, column 12
          |
        1 | RETURN NOT 'foo', [true] XOR {x: 1}
          |            ^^^^^

        error: XOR expects boolean operands, but `[true]` is a list
         --> line 1, column 19
          |
        1 | RETURN NOT 'foo', [true] XOR {x: 1}
          |                   ^^^^^^

        error: XOR expects boolean operands, but `{x: 1}` is a map
         --> line 1, column 30
          |
        1 | RETURN NOT 'foo', [true] XOR {x: 1}
          |                              ^^^^^^"#]],
    );
    ok("UNWIND [true, null] AS b RETURN b AND NOT b, null OR false");
}

#[test]
fn comprehensions_and_aggregates() {
    ok("MATCH (n) RETURN [x IN collect(n.name) WHERE x <> 'a' | toUpper(x)] AS names");
    ok("MATCH (n) RETURN n.file, size([x IN collect(n) WHERE x.name = n.file]) AS k");
    check_err(
        "MATCH (n) RETURN [x IN [1] | count(x)]",
        expect![[r#"
        error: aggregate `count(x)` is not allowed here
         --> line 1, column 30
          |
        1 | MATCH (n) RETURN [x IN [1] | count(x)]
          |                              ^^^^^^^^
          = help: aggregate in a WITH or RETURN item, then filter with WITH ... WHERE"#]],
    );
    check_err(
        "MATCH (n) RETURN n.file, [x IN collect(n) | n.name]",
        expect![[r#"
            error: this expression mixes an aggregate with values that are not grouping keys
             --> line 1, column 26
              |
            1 | MATCH (n) RETURN n.file, [x IN collect(n) | n.name]
              |                          ^^^^^^^^^^^^^^^^^^^^^^^^^^
              = help: return the non-aggregated part as its own column, e.g. `RETURN n.file, count(*)`"#]],
    );
}

#[test]
fn literal_values_are_not_graph_elements() {
    check_err(
        "WITH 123 AS n MATCH (n) RETURN n",
        expect![[r#"
        error: `n` is a literal value, not a node
         --> line 1, column 22
          |
        1 | WITH 123 AS n MATCH (n) RETURN n
          |                      ^
          = help: use a different variable name for the node"#]],
    );
    check_err(
        "WITH [10] AS n MATCH (n)-->() RETURN n",
        expect![[r#"
        error: `n` is a literal value, not a node
         --> line 1, column 23
          |
        1 | WITH [10] AS n MATCH (n)-->() RETURN n
          |                       ^
          = help: use a different variable name for the node"#]],
    );
    ok("WITH null AS n, [1, 2] AS l MATCH (m) RETURN length(l), size(l), l[0]");
    check_err(
        "RETURN count(rand()), sum(1 + rand())",
        expect![[r#"
        error: `count(rand())` aggregates rand(), which is not deterministic
         --> line 1, column 14
          |
        1 | RETURN count(rand()), sum(1 + rand())
          |              ^^^^^^
          = help: compute the random values in a WITH first

        error: `sum((1 + rand()))` aggregates rand(), which is not deterministic
         --> line 1, column 31
          |
        1 | RETURN count(rand()), sum(1 + rand())
          |                               ^^^^^^
          = help: compute the random values in a WITH first"#]],
    );
    ok("WITH rand() AS r RETURN count(r)");
}

#[test]
fn row_counts_must_be_integers() {
    check_err(
        "MATCH (n) RETURN n SKIP 1.5 LIMIT 'x'",
        expect![[r#"
        error: SKIP must be a non-negative integer, got `1.5`
         --> line 1, column 25
          |
        1 | MATCH (n) RETURN n SKIP 1.5 LIMIT 'x'
          |                         ^^^
          = help: write e.g. `SKIP 10` or `SKIP $n`

        error: LIMIT must be a non-negative integer, got `'x'`
         --> line 1, column 35
          |
        1 | MATCH (n) RETURN n SKIP 1.5 LIMIT 'x'
          |                                   ^^^
          = help: write e.g. `LIMIT 10` or `LIMIT $n`"#]],
    );
    ok("MATCH (n) RETURN n SKIP 1 LIMIT toInteger(rand() * 10)");
}

#[test]
fn properties_and_in_on_literals() {
    check_err(
        "WITH 123 AS x, [1] AS l RETURN x.num, l.num, 'a'.b",
        expect![[r#"
        error: cannot read property `num` of a literal value
         --> line 1, column 34
          |
        1 | WITH 123 AS x, [1] AS l RETURN x.num, l.num, 'a'.b
          |                                  ^^^
          = help: only nodes, relationships and maps have properties

        error: cannot read property `num` of a literal value
         --> line 1, column 41
          |
        1 | WITH 123 AS x, [1] AS l RETURN x.num, l.num, 'a'.b
          |                                         ^^^
          = help: only nodes, relationships and maps have properties

        error: cannot read property `b` of a literal value
         --> line 1, column 50
          |
        1 | WITH 123 AS x, [1] AS l RETURN x.num, l.num, 'a'.b
          |                                                  ^
          = help: only nodes, relationships and maps have properties"#]],
    );
    ok("WITH {num: 1} AS m, [1, 2] AS l RETURN m.num, {a: 1}.a, 1 IN l, 1 IN [1], null.x");
    check_err(
        "RETURN properties(1), 1 IN true, 1 IN {x: []}, 1 IN 'foo'",
        expect![[r#"
        error: properties() expects a node, relationship or map, but `1` is a literal value
         --> line 1, column 19
          |
        1 | RETURN properties(1), 1 IN true, 1 IN {x: []}, 1 IN 'foo'
          |                   ^

        error: IN expects a list on the right, but `true` is not one
         --> line 1, column 28
          |
        1 | RETURN properties(1), 1 IN true, 1 IN {x: []}, 1 IN 'foo'
          |                            ^^^^

        error: IN expects a list on the right, but `{x: []}` is not one
         --> line 1, column 39
          |
        1 | RETURN properties(1), 1 IN true, 1 IN {x: []}, 1 IN 'foo'
          |                                       ^^^^^^^

        error: IN expects a list on the right, but `'foo'` is not one
         --> line 1, column 53
          |
        1 | RETURN properties(1), 1 IN true, 1 IN {x: []}, 1 IN 'foo'
          |                                                     ^^^^^"#]],
    );
    ok("MATCH (n) RETURN properties(n), properties({a: 1}), 1 IN null");
}

#[test]
fn with_where_sees_the_variables_before_the_with() {
    ok("MATCH (a) WITH a.name AS name WHERE a.file = 'x' AND name <> 'y' RETURN name");
    check_err(
        "MATCH (a) WITH count(*) AS c WHERE a.name = 'x' RETURN c",
        expect![[r#"
            error: variable `a` is not defined
             --> line 1, column 36
              |
            1 | MATCH (a) WITH count(*) AS c WHERE a.name = 'x' RETURN c
              |                                    ^
              = help: `a` is not carried over by the preceding WITH; add it there, e.g. `WITH a, ...`"#]],
    );
    check_err(
        "MATCH (a) WITH a.name AS name WHERE true RETURN a",
        expect![[r#"
        error: variable `a` is not defined
         --> line 1, column 49
          |
        1 | MATCH (a) WITH a.name AS name WHERE true RETURN a
          |                                                 ^
          = help: `a` is not carried over by the preceding WITH; add it there, e.g. `WITH a, ...`"#]],
    );
}
