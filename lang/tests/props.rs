//! Property tests: the parser never panics, generated valid queries parse, check, plan and
//! print to a canonical fixpoint, and evaluating generated expressions never panics.

use std::collections::BTreeMap;

use batho_lang::print::statement_to_string;
use batho_lang::{Evaluator, PropertyAccess, Schema, Value, compile, parse};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "MATCH",
    "OPTIONAL",
    "WHERE",
    "RETURN",
    "WITH",
    "UNWIND",
    "AS",
    "ORDER BY",
    "LIMIT",
    "SKIP",
    "DISTINCT",
    "CALL",
    "YIELD",
    "CREATE",
    "MERGE",
    "SET",
    "DELETE",
    "DETACH",
    "REMOVE",
    "EXPLAIN",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "STARTS WITH",
    "CONTAINS",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "-",
    "->",
    "<-",
    "*",
    "..",
    ":",
    ",",
    ";",
    ".",
    "=",
    "<>",
    "=~",
    "+",
    "'s'",
    "\"d\"",
    "'",
    "\"",
    "`",
    "`x`",
    "$p",
    "1",
    "2.5",
    "n",
    "m",
    "r",
    "count(*)",
    "shortestPath",
    "|",
    "/*",
    "*/",
    "//",
    "\n",
    "\\",
    "é",
    "0x",
    "1e",
    "9999999999999999999999",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|v| v.join(" "))
}

/// Node 0..n with a fixed shape; enough for evaluation not to fail on lookups.
struct Graph;

impl PropertyAccess for Graph {
    fn node_prop(&self, node: u32, key: &str) -> Value {
        match key {
            "name" => Value::String(format!("f{node}")),
            "start_line" => Value::Int(i64::from(node)),
            _ => Value::Null,
        }
    }
    fn rel_prop(&self, _rel: u32, key: &str) -> Value {
        if key == "confidence" {
            Value::Float(0.5)
        } else {
            Value::Null
        }
    }
    fn node_labels(&self, _node: u32) -> Vec<String> {
        vec!["Function".into()]
    }
    fn rel_type(&self, _rel: u32) -> String {
        "CALLS".into()
    }
    fn rel_endpoints(&self, rel: u32) -> (u32, u32) {
        (rel, rel + 1)
    }
    fn node_properties(&self, _node: u32) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
    fn rel_properties(&self, _rel: u32) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
}

fn string_lit() -> impl Strategy<Value = String> {
    "[a-z' \\\\\"é]{0,6}"
        .prop_map(|s| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")))
}

/// Expressions over variables `a` (node), `r` (relationship) and `xs` (list).
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(|i| i.to_string()),
        (0.0f64..1e6).prop_map(|f| format!("{f:?}")),
        string_lit(),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("$p".to_string()),
        Just("a.name".to_string()),
        Just("a.start_line".to_string()),
        Just("r.confidence".to_string()),
        Just("xs".to_string()),
        Just("a:Function".to_string()),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        let op = prop::sample::select(vec![
            "+",
            "-",
            "*",
            "/",
            "%",
            "^",
            "=",
            "<>",
            "<",
            ">=",
            "STARTS WITH",
            "CONTAINS",
            "=~",
        ]);
        // A literal that can never be a boolean is a compile error as an operand of AND,
        // OR, XOR or NOT, so those get their operands through a comparison; likewise a
        // literal that is not a list on the right of IN.
        let boolean_op = prop::sample::select(vec!["AND", "OR", "XOR"]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            (inner.clone(), boolean_op, inner.clone())
                .prop_map(|(a, o, b)| format!("(({a} = 1) {o} ({b} < 2))")),
            inner.clone().prop_map(|a| format!("(NOT ({a} = 1))")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} IN [{b}])")),
            inner.clone().prop_map(|a| format!("-({a})")),
            inner.clone().prop_map(|a| format!("(({a}) IS NULL)")),
            inner.clone().prop_map(|a| format!("toLower({a})")),
            inner.clone().prop_map(|a| format!("size({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("coalesce({a}, {b})")),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(", "))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{k: {a}, v: {b}}}")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("[{a}][{b}]")),
        ]
    })
}

fn query() -> impl Strategy<Value = String> {
    let label = prop::sample::select(vec!["", ":Function", ":File|Method", ":function"]);
    let rel = prop::sample::select(vec![
        "-[r:CALLS]->",
        "<-[r]-",
        "-[r:CALLS|IMPORTS]-",
        "-[r:CONTAINS {line: 3}]->",
    ]);
    let tail = prop::sample::select(vec![
        "",
        "-[:CALLS*]->(c)",
        "<-[:INCLUDES*..3]-(c:File)",
        ", (c {id: $id})",
    ]);
    let proj = prop::sample::select(vec![
        "a.name, b",
        "DISTINCT a.file AS f ORDER BY f DESC LIMIT 3",
        "a.file, count(*) AS n ORDER BY n DESC SKIP 1 LIMIT 2",
        "collect(DISTINCT b.name) AS names, max(r.confidence)",
        "* ORDER BY a.start_line",
    ]);
    let prefix = prop::sample::select(vec!["", "EXPLAIN ", "PROFILE ", "UNWIND [1, 2] AS xs "]);
    // Clauses between the MATCH and the RETURN that keep `a`, `b`, `r` and `xs` in scope.
    let middle = prop::sample::select(vec![
        "",
        "OPTIONAL MATCH (b)-[o:CONTAINS]->(x:Field) WHERE x.name <> a.name ",
        "WITH a, b, r, xs ",
        "WITH a, b, r, xs, count(*) AS k WHERE k > 1 ",
        "MATCH (b)<-[:CALLS]-(y), (z:File {id: a.file}) ",
        "MATCH (y:Method), (z:Method) WHERE y.file = z.file AND y.start_line < a.start_line ",
        "MATCH p = shortestPath((a)-[:CALLS*..4]->(q {name: $q})) ",
        "CALL algo.pagerank() YIELD node, score WHERE score > 0.5 ",
        "UNWIND xs AS u MATCH (v {id: u}) ",
    ]);
    (
        prefix,
        label.clone(),
        rel,
        label,
        tail,
        expr(),
        middle,
        proj,
    )
        .prop_map(|(pre, la, rel, lb, tail, w, mid, proj)| {
            let xs = if pre.starts_with("UNWIND") {
                ""
            } else {
                "WITH [1, 2] AS xs "
            };
            format!("{pre}{xs}MATCH (a{la}){rel}(b{lb}){tail} WHERE {w} {mid}RETURN {proj}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(s in any::<String>()) {
        let _ = parse(&s);
    }

    #[test]
    fn token_soup_never_panics(s in token_soup()) {
        if let Ok(sts) = parse(&s) {
            // Whatever parses also prints to a canonical fixpoint and checks without panicking.
            for st in &sts {
                let text = statement_to_string(st);
                let again = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}\n{e}")))?;
                prop_assert_eq!(again.iter().map(statement_to_string).collect::<Vec<_>>(), vec![text.clone()]);
                let _ = batho_lang::check(&s, st, &Schema::code_graph());
            }
        }
    }

    #[test]
    fn generated_queries_compile(q in query()) {
        let compiled = compile(&q, &Schema::code_graph()).map_err(|e| TestCaseError::fail(format!("{q}\n{e}")))?;
        prop_assert_eq!(compiled.len(), 1);
        let text = statement_to_string(&compiled[0].statement);
        let again = compile(&text, &Schema::code_graph()).map_err(|e| TestCaseError::fail(format!("{text}\n{e}")))?;
        prop_assert_eq!(statement_to_string(&again[0].statement), text);
        prop_assert!(!compiled[0].plan.to_string().is_empty());
        compiled[0].plan.validate().map_err(|e| TestCaseError::fail(format!("{q}\n{e}\n{}", compiled[0].plan)))?;
    }

    #[test]
    fn generated_expressions_evaluate_without_panic(e in expr()) {
        let text = format!("RETURN {e}");
        let st = batho_lang::parse_statement(&text).map_err(|err| TestCaseError::fail(format!("{text}\n{err}")))?;
        let batho_lang::ast::Clause::Return(p) = &st.clauses[0] else { return Err(TestCaseError::fail("no RETURN")) };
        let params = BTreeMap::from([("p".to_string(), Value::Int(2))]);
        let row = BTreeMap::from([
            ("a".to_string(), Value::Node(1)),
            ("r".to_string(), Value::Rel(0)),
            ("xs".to_string(), Value::List(vec![Value::Int(1), Value::Null])),
        ]);
        let _ = Evaluator::new(&Graph, &params).eval(&p.items[0].expr, &row);
    }
}
