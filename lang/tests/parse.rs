//! Parser tests: every clause, printed back in canonical form (which must itself re-parse
//! to the same canonical form), plus a few full AST snapshots.

use batho_lang::ast::*;
use batho_lang::parse;
use batho_lang::print::statement_to_string;
use expect_test::{Expect, expect};

fn canon(text: &str) -> String {
    let sts = parse(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
    let printed: Vec<String> = sts.iter().map(statement_to_string).collect();
    let joined = printed.join(";\n");
    // The canonical form is a fixpoint.
    let again: Vec<String> = parse(&joined)
        .unwrap_or_else(|e| panic!("canonical form does not parse: {joined}\n{e}"))
        .iter()
        .map(statement_to_string)
        .collect();
    assert_eq!(again.join(";\n"), joined);
    joined
}

fn check(text: &str, expect: Expect) {
    expect.assert_eq(&canon(text));
}

#[test]
fn match_patterns() {
    check("match (n) return n", expect!["MATCH (n) RETURN n"]);
    check(
        "MATCH (a:Function)-[r:CALLS]->(b), (b)<-[:INCLUDES|:IMPORTS]-(c), (c)-[s]-(d) RETURN a, r, b, c, s, d",
        expect![
            "MATCH (a:Function)-[r:CALLS]->(b), (b)<-[:INCLUDES|IMPORTS]-(c), (c)-[s]-(d) RETURN a, r, b, c, s, d"
        ],
    );
    check(
        "MATCH (a)-->(b)<--(c)--(d) RETURN a",
        expect!["MATCH (a)-[]->(b)<-[]-(c)-[]-(d) RETURN a"],
    );
    check(
        "MATCH (n:Function|Method {name: 'x', start_line: 3}) RETURN n",
        expect!["MATCH (n:Function|Method {name: 'x', start_line: 3}) RETURN n"],
    );
    check(
        "MATCH (n:Class:Struct) RETURN n",
        expect!["MATCH (n:Class:Struct) RETURN n"],
    );
    check(
        "OPTIONAL MATCH (n) WHERE n.x IS NULL RETURN n",
        expect!["OPTIONAL MATCH (n) WHERE (n.x IS NULL) RETURN n"],
    );
    check(
        "MATCH ((a)-[r]->(b)) RETURN a",
        expect!["MATCH (a)-[r]->(b) RETURN a"],
    );
    check(
        "MATCH (`weird name`:`File`) RETURN `weird name`",
        expect!["MATCH (`weird name`:File) RETURN `weird name`"],
    );
    check(
        "MATCH (n {id: $id}) RETURN n",
        expect!["MATCH (n {id: $id}) RETURN n"],
    );
}

#[test]
fn variable_length_and_paths() {
    check(
        "MATCH (a)-[*]->(b), (a)-[*3]->(c), (a)-[*1..3]->(d), (a)-[*..4]->(e), (a)-[r*2..]->(f) RETURN a",
        expect![
            "MATCH (a)-[*]->(b), (a)-[*3]->(c), (a)-[*1..3]->(d), (a)-[*..4]->(e), (a)-[r*2..]->(f) RETURN a"
        ],
    );
    check(
        "MATCH p = (a)-[:CALLS*0..2]->(b) RETURN p, length(p), nodes(p), relationships(p)",
        expect!["MATCH p = (a)-[:CALLS*0..2]->(b) RETURN p, length(p), nodes(p), relationships(p)"],
    );
    check(
        "MATCH p = shortestPath((a {id: $src})-[:CALLS|INCLUDES*..5]->(b {id: $dst})) RETURN p",
        expect![
            "MATCH p = shortestPath((a {id: $src})-[:CALLS|INCLUDES*..5]->(b {id: $dst})) RETURN p"
        ],
    );
    check(
        "MATCH p = allShortestPaths((a)-[*]-(b)) RETURN p",
        expect!["MATCH p = allShortestPaths((a)-[*]-(b)) RETURN p"],
    );
}

#[test]
fn expressions() {
    check(
        "RETURN 1 + 2 * 3 - 4 / 2 % 3 ^ 2, -x, NOT a AND b OR c XOR d",
        expect![
            "RETURN ((1 + (2 * 3)) - ((4 / 2) % (3 ^ 2))), -(x), (((NOT (a)) AND b) OR (c XOR d))"
        ],
    );
    check(
        "RETURN a = b, a <> b, a != b, a < b, a <= b, a > b, a >= b, a =~ 'x.*'",
        expect![
            "RETURN (a = b), (a <> b), (a <> b), (a < b), (a <= b), (a > b), (a >= b), (a =~ 'x.*')"
        ],
    );
    check(
        "RETURN n.name STARTS WITH 'a', n.name ENDS WITH 'b', n.name CONTAINS 'c', x IN [1, 2], x IS NULL, x IS NOT NULL",
        expect![
            "RETURN (n.name STARTS WITH 'a'), (n.name ENDS WITH 'b'), (n.name CONTAINS 'c'), (x IN [1, 2]), (x IS NULL), (x IS NOT NULL)"
        ],
    );
    check(
        "RETURN has_role(r, 'ReadAccess') = false, n.name STARTS WITH 'x' = true",
        expect!["RETURN (has_role(r, 'ReadAccess') = false), ((n.name STARTS WITH 'x') = true)"],
    );
    check(
        "RETURN [1, 2.5, 'a', \"b\", true, FALSE, null, $p, $0], {a: 1, `b c`: [x]}, l[0], l[1..], l[..2], l[1..2], m.a.b, n:File",
        expect![
            "RETURN [1, 2.5, 'a', 'b', true, false, null, $p, $0], {a: 1, `b c`: [x]}, l[0], l[1..], l[..2], l[1..2], m.a.b, n:File"
        ],
    );
}

#[test]
fn literals() {
    check(
        "RETURN 0x1F, 1e3, .5, 1.5E-3, -9223372036854775808, 9223372036854775807, - 1",
        expect!["RETURN 31, 1000.0, 0.5, 0.0015, -9223372036854775808, 9223372036854775807, -1"],
    );
    check(
        r#"RETURN 'a\'b', "q\"x", 'tab\there', 'nl\n', 'uni\u00e9', 'back\\slash'"#,
        expect![[r#"RETURN 'a\'b', 'q"x', 'tab\there', 'nl\n', 'unié', 'back\\slash'"#]],
    );
}

#[test]
fn projections() {
    check(
        "MATCH (n) RETURN DISTINCT n.file AS f, count(*) AS c ORDER BY c DESC, f ASC SKIP 5 LIMIT 10",
        expect![
            "MATCH (n) RETURN DISTINCT n.file AS f, count(*) AS c ORDER BY c DESC, f SKIP 5 LIMIT 10"
        ],
    );
    check(
        "MATCH (n) WITH n, count(*) AS c ORDER BY c LIMIT 3 WHERE c > 1 RETURN *",
        expect!["MATCH (n) WITH n, count(*) AS c ORDER BY c LIMIT 3 WHERE (c > 1) RETURN *"],
    );
    check(
        "MATCH (n) RETURN count(DISTINCT n.file), collect(n.name), min(n.start_line), max(1), sum(2), avg(3)",
        expect![
            "MATCH (n) RETURN count(DISTINCT n.file), collect(n.name), min(n.start_line), max(1), sum(2), avg(3)"
        ],
    );
    check(
        "UNWIND [1, 2, 3] AS x RETURN x",
        expect!["UNWIND [1, 2, 3] AS x RETURN x"],
    );
    check(
        "MATCH (n) RETURN *, n.id AS id",
        expect!["MATCH (n) RETURN *, n.id AS id"],
    );
}

#[test]
fn calls_and_prefixes() {
    check("CALL db.schema()", expect!["CALL db.schema()"]);
    check("CALL db.runs", expect!["CALL db.runs"]);
    check(
        "CALL algo.pagerank() YIELD node, score AS s WHERE s > 0.1 RETURN node.file, sum(s) AS rank ORDER BY rank DESC",
        expect![
            "CALL algo.pagerank() YIELD node, score AS s WHERE (s > 0.1) RETURN node.file, sum(s) AS rank ORDER BY rank DESC"
        ],
    );
    check(
        "CALL db.labels() YIELD * RETURN *",
        expect!["CALL db.labels() YIELD * RETURN *"],
    );
    check(
        "explain MATCH (n) RETURN n",
        expect!["EXPLAIN MATCH (n) RETURN n"],
    );
    check(
        "Profile MATCH (n) RETURN n",
        expect!["PROFILE MATCH (n) RETURN n"],
    );
}

#[test]
fn writes() {
    check(
        "CREATE (a:Note {text: 'x'})-[:REFERENCES]->(b:Note), (c)",
        expect!["CREATE (a:Note {text: 'x'})-[:REFERENCES]->(b:Note), (c)"],
    );
    check(
        "MERGE (n:Note {id: $id}) ON CREATE SET n.created = 1 ON MATCH SET n.seen = n.seen + 1",
        expect![
            "MERGE (n:Note {id: $id}) ON CREATE SET n.created = 1 ON MATCH SET n.seen = (n.seen + 1)"
        ],
    );
    check(
        "MATCH (n) SET n.a = 1, n += {b: 2}, n = {c: 3}, n:Tag:Other",
        expect!["MATCH (n) SET n.a = 1, n += {b: 2}, n = {c: 3}, n:Tag:Other"],
    );
    check(
        "MATCH (n) DETACH DELETE n",
        expect!["MATCH (n) DETACH DELETE n"],
    );
    check(
        "MATCH (n)-[r]->() DELETE r, n",
        expect!["MATCH (n)-[r]->() DELETE r, n"],
    );
    check(
        "MATCH (n) REMOVE n.a, n:Tag",
        expect!["MATCH (n) REMOVE n.a, n:Tag"],
    );
}

#[test]
fn scripts_comments_and_case() {
    check(
        "// leading comment\nmatch (n) /* inline */ return n; ;\nRETURN 1 // trailing\n;",
        expect![[r#"
            MATCH (n) RETURN n;
            RETURN 1"#]],
    );
    assert_eq!(parse("").map(|v| v.len()), Ok(0));
    assert_eq!(
        parse("  // nothing\n /* at all */ ;;").map(|v| v.len()),
        Ok(0)
    );
}

#[test]
fn reserved_words_as_names() {
    // Keywords may be labels, types, property keys and map keys, and backticked variables.
    check(
        "MATCH (`match`:CONTAINS)-[:CONTAINS]->(x) RETURN `match`.order, {limit: 1}",
        expect!["MATCH (`match`:CONTAINS)-[:CONTAINS]->(x) RETURN `match`.order, {limit: 1}"],
    );
}

#[test]
fn ast_shape() {
    let st = parse("MATCH (a:Function)<-[r:CALLS*2..4]-(b) RETURN b.name AS n")
        .expect("parses")
        .remove(0);
    let Clause::Match(m) = &st.clauses[0] else {
        panic!("not a match")
    };
    let (rel, node) = &m.pattern[0].element.chain[0];
    assert_eq!(rel.direction, Direction::Incoming);
    assert_eq!(
        rel.length,
        Some(VarLength {
            min: Some(2),
            max: Some(4)
        })
    );
    assert_eq!(rel.types[0].name, "CALLS");
    assert_eq!(rel.span, Span::new(18, 35));
    assert_eq!(node.variable.as_ref().map(|v| v.name.as_str()), Some("b"));
    let Clause::Return(r) = &st.clauses[1] else {
        panic!("not a return")
    };
    expect![[r#"
        ProjectionItem {
            expr: Expr {
                kind: Property(
                    Expr {
                        kind: Variable(
                            "b",
                        ),
                        span: Span {
                            start: 46,
                            end: 47,
                        },
                    },
                    Ident {
                        name: "name",
                        span: Span {
                            start: 48,
                            end: 52,
                        },
                    },
                ),
                span: Span {
                    start: 46,
                    end: 52,
                },
            },
            alias: Some(
                Ident {
                    name: "n",
                    span: Span {
                        start: 56,
                        end: 57,
                    },
                },
            ),
            span: Span {
                start: 46,
                end: 57,
            },
        }
    "#]]
    .assert_debug_eq(&r.items[0]);
}

#[test]
fn default_variable_length_bound() {
    assert_eq!(
        VarLength {
            min: None,
            max: None
        }
        .bounds(),
        (1, DEFAULT_MAX_HOPS)
    );
    assert_eq!(
        VarLength {
            min: Some(3),
            max: None
        }
        .bounds(),
        (3, 10)
    );
    assert_eq!(
        VarLength {
            min: None,
            max: Some(4)
        }
        .bounds(),
        (1, 4)
    );
}

#[test]
fn time_travel_prefix() {
    check(
        "at generation 3 match (n) return n",
        expect!["AT GENERATION 3 MATCH (n) RETURN n"],
    );
    check(
        "explain AT RUN \"6c1e\" MATCH (n) RETURN n; AT RUN 'it\\'s' RETURN 1",
        expect![[r#"
            EXPLAIN AT RUN '6c1e' MATCH (n) RETURN n;
            AT RUN 'it\'s' RETURN 1"#]],
    );
    check(
        "MATCH (at)-[run]->(generation) RETURN at, run, generation",
        expect!["MATCH (at)-[run]->(generation) RETURN at, run, generation"],
    );
    let st = &parse("AT GENERATION 12 RETURN 1").unwrap()[0];
    expect![[r#"
        Some(
            AtClause {
                target: Generation(
                    12,
                ),
                span: Span {
                    start: 0,
                    end: 16,
                },
            },
        )
    "#]]
    .assert_debug_eq(&st.at);
    assert_eq!(parse("RETURN 1").unwrap()[0].at, None);
    for (bad, msg) in [
        (
            "AT GENERATION 0 RETURN 1",
            "generation 0 does not exist: generations start at 1",
        ),
        ("AT RUN '  ' RETURN 1", "AT RUN needs a run id"),
    ] {
        let e = parse(bad).unwrap_err();
        assert!(e.to_string().contains(msg), "{bad}: {e}");
    }
}

#[test]
fn comprehensions_quantifiers_and_case() {
    check(
        "RETURN [x IN list WHERE x > 1 | x.name], [y in list], ANY(z IN list WHERE z), single(w IN [1] WHERE w = 1)",
        expect![
            "RETURN [x IN list WHERE (x > 1) | x.name], [y IN list], any(z IN list WHERE z), single(w IN [1] WHERE (w = 1))"
        ],
    );
    check(
        "RETURN case when a then 1 when b then 2 else 3 end, CASE n.kind WHEN 'x' THEN 1 END.key",
        expect![
            "RETURN CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END, CASE n.kind WHEN 'x' THEN 1 END.key"
        ],
    );
    // A one-element list whose element is an IN test needs parentheses to stay a list.
    check("RETURN [(x IN list)]", expect!["RETURN [(x IN list)]"]);
}

#[test]
fn iteration_variables_are_not_free() {
    let st = &parse("RETURN [x IN xs WHERE x > y | x + z], all(y IN x WHERE y)")
        .unwrap_or_else(|e| panic!("{e}"))[0];
    let Clause::Return(p) = &st.clauses[0] else {
        panic!("no return")
    };
    let free: Vec<Vec<String>> = p.items.iter().map(|it| it.expr.variables()).collect();
    expect![[r#"
        [
            [
                "xs",
                "y",
                "z",
            ],
            [
                "x",
            ],
        ]
    "#]]
    .assert_debug_eq(&free);
}

#[test]
fn column_names_keep_parentheses() {
    let text = "RETURN (list[1]).x, 12 / 4 * (3 - 2 * 4), (n:Foo), (1)";
    let st = &parse(text).unwrap_or_else(|e| panic!("{e}"))[0];
    let Clause::Return(p) = &st.clauses[0] else {
        panic!("no return")
    };
    let names: Vec<String> = p.items.iter().map(|it| it.column_name(text)).collect();
    expect![[r#"
        [
            "(list[1]).x",
            "12 / 4 * (3 - 2 * 4)",
            "(n:Foo)",
            "(1)",
        ]
    "#]]
    .assert_debug_eq(&names);
}

#[test]
fn chained_comparisons_and_octal_literals() {
    check(
        "RETURN 1 < n.x <= 3, a = b <> c, 0o17, -0o17, -0x8000000000000000",
        expect![
            "RETURN ((1 < n.x) AND (n.x <= 3)), ((a = b) AND (b <> c)), 15, -15, -9223372036854775808"
        ],
    );
}
