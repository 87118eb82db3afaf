//! Evaluator tests: null semantics, ordering, operators, functions and aggregates, over
//! a small in-memory graph implementing `PropertyAccess`.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use batho_lang::ast::{ExprKind, Span};
use batho_lang::eval::{Accumulator, AggregateFunc};
use batho_lang::value::GroupKey;
use batho_lang::{EvalError, Evaluator, PropertyAccess, Value, parse_statement};
use expect_test::expect;

/// Node 0 `main` (Function, file a.c), node 1 `helper` (Function, file b.c);
/// relationship 0: main -CALLS-> helper with roles ReadAccess|Dynamic, confidence 0.9.
struct Mini;

impl PropertyAccess for Mini {
    fn node_prop(&self, node: u32, key: &str) -> Value {
        self.node_properties(node)
            .remove(key)
            .unwrap_or(Value::Null)
    }
    fn rel_prop(&self, rel: u32, key: &str) -> Value {
        self.rel_properties(rel).remove(key).unwrap_or(Value::Null)
    }
    fn node_labels(&self, _node: u32) -> Vec<String> {
        vec!["Function".into()]
    }
    fn rel_type(&self, _rel: u32) -> String {
        "CALLS".into()
    }
    fn rel_endpoints(&self, _rel: u32) -> (u32, u32) {
        (0, 1)
    }
    fn node_properties(&self, node: u32) -> BTreeMap<String, Value> {
        let (name, file) = if node == 0 {
            ("main", "a.c")
        } else {
            ("helper", "b.c")
        };
        BTreeMap::from([
            ("name".into(), name.into()),
            ("file".into(), file.into()),
            ("start_line".into(), Value::Int(10)),
        ])
    }
    fn rel_properties(&self, _rel: u32) -> BTreeMap<String, Value> {
        BTreeMap::from([
            ("confidence".into(), Value::Float(0.9)),
            ("roles".into(), Value::Int(8 | 64)),
        ])
    }
}

fn row() -> BTreeMap<String, Value> {
    BTreeMap::from([
        ("a".into(), Value::Node(0)),
        ("b".into(), Value::Node(1)),
        ("r".into(), Value::Rel(0)),
        (
            "p".into(),
            Value::Path {
                nodes: vec![0, 1],
                rels: vec![0],
            },
        ),
        ("n".into(), Value::Null),
        (
            "xs".into(),
            Value::List(vec![Value::Int(1), Value::Int(2), Value::Int(3)]),
        ),
    ])
}

fn eval(text: &str) -> Result<Value, EvalError> {
    let st = parse_statement(&format!("RETURN {text}")).unwrap_or_else(|e| panic!("{e}"));
    let batho_lang::ast::Clause::Return(p) = &st.clauses[0] else {
        panic!("no return")
    };
    let params = BTreeMap::from([
        ("name".to_string(), Value::from("main")),
        ("none".to_string(), Value::Null),
    ]);
    Evaluator::new(&Mini, &params).eval(&p.items[0].expr, &row())
}

fn v(text: &str) -> String {
    match eval(text) {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn three_valued_logic() {
    let cases = [
        ("true AND null", "null"),
        ("false AND null", "false"),
        ("true OR null", "true"),
        ("false OR null", "null"),
        ("null XOR true", "null"),
        ("true XOR false", "true"),
        ("NOT null", "null"),
        ("null = null", "null"),
        ("null <> 1", "null"),
        ("1 = 1.0", "true"),
        ("1 < 'a'", "null"),
        ("'a' < 'b'", "true"),
        ("[1, null] = [1, null]", "null"),
        ("[1, null] = [2, null]", "false"),
        ("[1, 2] = [1, 2]", "true"),
        ("1 IN [1, null]", "true"),
        ("2 IN [1, null]", "null"),
        ("2 IN [1, 3]", "false"),
        ("null IN []", "false"),
        ("n IS NULL", "true"),
        ("n.x IS NOT NULL", "false"),
        ("a.missing", "null"),
        ("n.name STARTS WITH 'x'", "null"),
        ("1 = 'a'", "false"),
    ];
    for (q, want) in cases {
        assert_eq!(v(q), want, "{q}");
    }
}

#[test]
fn arithmetic() {
    let cases = [
        ("1 + 2 * 3", "7"),
        ("7 / 2", "3"),
        ("-7 / 2", "-3"),
        ("7 % 3", "1"),
        ("7 / 2.0", "3.5"),
        ("2 ^ 10", "1024.0"),
        ("1 + null", "null"),
        ("'a' + 1", "'a1'"),
        ("1.5 + 'x'", "'1.5x'"),
        ("[1] + [2, 3]", "[1, 2, 3]"),
        ("[1] + 2", "[1, 2]"),
        ("-(-9223372036854775807 - 1)", "error: integer overflow"),
        ("9223372036854775807 + 1", "error: integer overflow"),
        ("1 / 0", "error: division by zero"),
        ("1 % 0", "error: division by zero"),
        ("1.0 / 0", "inf"),
        (
            "true + 1",
            "error: type error: cannot apply `+` to boolean and integer",
        ),
    ];
    for (q, want) in cases {
        assert_eq!(v(q), want, "{q}");
    }
}

#[test]
fn graph_access_and_functions() {
    let cases = [
        ("a.name", "'main'"),
        ("r.confidence", "0.9"),
        ("id(b)", "1"),
        ("type(r)", "'CALLS'"),
        ("labels(a)", "['Function']"),
        ("has_role(r, 'ReadAccess')", "true"),
        ("has_role(r, 'writeaccess')", "false"),
        ("roles(r)", "['ReadAccess', 'Dynamic']"),
        (
            "has_role(r, 'Nope')",
            "error: unknown symbol role 'Nope'; roles: Definition, Import, WriteAccess, ReadAccess, Generated, Declaration, Dynamic, Heuristic, Inactive",
        ),
        ("startNode(r) = a", "true"),
        ("endNode(r).name", "'helper'"),
        ("length(p)", "1"),
        ("nodes(p)", "[(#0), (#1)]"),
        ("relationships(p)", "[[#0]]"),
        ("properties(a).file", "'a.c'"),
        ("keys(r)", "['confidence', 'roles']"),
        ("a:Function", "true"),
        ("a:File|Function", "true"),
        ("a:File", "false"),
        ("a.name = $name", "true"),
        ("$none IS NULL", "true"),
        ("$missing", "error: parameter `$missing` was not given"),
        ("toLower('AbC') + toUpper('x')", "'abcX'"),
        ("size('héllo')", "5"),
        ("size(xs)", "3"),
        ("substring('hello', 1, 3)", "'ell'"),
        ("substring('hello', 2)", "'llo'"),
        ("trim('  x ')", "'x'"),
        ("split('a::b::c', '::')", "['a', 'b', 'c']"),
        ("replace('aXbX', 'X', '-')", "'a-b-'"),
        ("coalesce(null, n, 3, 4)", "3"),
        ("toString(1.0)", "'1.0'"),
        ("toInteger('42')", "42"),
        ("toInteger('4.7')", "4"),
        ("toInteger('x')", "null"),
        ("toFloat('1e3')", "1000.0"),
        ("abs(-3)", "3"),
        ("round(2.5)", "3.0"),
        ("exists(a.name)", "true"),
        ("exists(a.nope)", "false"),
        ("head(xs) + last(xs)", "4"),
        ("tail(xs)", "[2, 3]"),
        ("range(1, 5, 2)", "[1, 3, 5]"),
        ("reverse('abc')", "'cba'"),
        ("xs[0]", "1"),
        ("xs[-1]", "3"),
        ("xs[5]", "null"),
        ("xs[1..]", "[2, 3]"),
        ("xs[..-1]", "[1, 2]"),
        ("{a: 1}.a", "1"),
        ("toLower(null)", "null"),
        (
            "range(0, 100000000)",
            "error: range() would produce 100000001 elements; the limit is 10000000",
        ),
    ];
    for (q, want) in cases {
        assert_eq!(v(q), want, "{q}");
    }
}

#[test]
fn regex_is_whole_string_and_bounded() {
    assert_eq!(v("'validate_token' =~ 'valid.*'"), "true");
    assert_eq!(v("'validate_token' =~ 'token'"), "false");
    assert_eq!(v("'x' =~ null"), "null");
    assert!(v("'x' =~ '('").starts_with("error: invalid regular expression"));
    // A pattern whose compiled program exceeds the size limit is refused, not run.
    assert!(v("'x' =~ '(\\\\w{100}){100}'").starts_with("error: invalid regular expression"));
}

#[test]
fn ordering_is_total_and_cypher_like() {
    let mut vals = vec![
        Value::Null,
        Value::Float(f64::NAN),
        Value::Int(2),
        Value::Float(1.5),
        Value::Bool(true),
        Value::from("b"),
        Value::from("a"),
        Value::List(vec![Value::Int(1)]),
        Value::Node(3),
        Value::Map(BTreeMap::new()),
        Value::Rel(1),
        Value::Path {
            nodes: vec![0],
            rels: vec![],
        },
        Value::Bool(false),
    ];
    vals.sort_by(|a, b| a.order(b));
    let text: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
    assert_eq!(
        text.join(" "),
        "{} (#3) [#1] [1] (#0) 'a' 'b' false true 1.5 2 NaN null"
    );
    assert_eq!(Value::Int(1).order(&Value::Float(1.0)), Ordering::Equal);
    assert_eq!(
        Value::Int(i64::MAX).compare(&Value::Float(9.3e18)),
        Some(Ordering::Less)
    );
    assert_eq!(
        Value::Int(3).compare(&Value::Float(2.5)),
        Some(Ordering::Greater)
    );
    assert_eq!(Value::Float(f64::NAN).compare(&Value::Int(1)), None);
    assert_eq!(GroupKey(Value::Int(1)), GroupKey(Value::Float(1.0)));
    assert_eq!(GroupKey(Value::Null), GroupKey(Value::Null));
    let set: std::collections::HashSet<GroupKey> = [
        Value::Int(1),
        Value::Float(1.0),
        Value::Null,
        Value::Null,
        Value::from("1"),
    ]
    .into_iter()
    .map(GroupKey)
    .collect();
    assert_eq!(set.len(), 3);
}

fn aggregate(func: AggregateFunc, distinct: bool, vals: &[Value]) -> Result<Value, EvalError> {
    let mut acc = Accumulator::new(func, distinct, Span::default());
    for x in vals {
        acc.update(x.clone())?;
    }
    Ok(acc.finish())
}

#[test]
fn aggregates() {
    let vals = [
        Value::Int(3),
        Value::Null,
        Value::Int(1),
        Value::Int(3),
        Value::Float(0.5),
    ];
    let run = |f, d| {
        aggregate(f, d, &vals)
            .map(|v| v.to_string())
            .unwrap_or_else(|e| e.to_string())
    };
    assert_eq!(run(AggregateFunc::CountStar, false), "5");
    assert_eq!(run(AggregateFunc::Count, false), "4");
    assert_eq!(run(AggregateFunc::Count, true), "3");
    assert_eq!(run(AggregateFunc::Collect, false), "[3, 1, 3, 0.5]");
    assert_eq!(run(AggregateFunc::Collect, true), "[3, 1, 0.5]");
    assert_eq!(run(AggregateFunc::Min, false), "0.5");
    assert_eq!(run(AggregateFunc::Max, false), "3");
    assert_eq!(run(AggregateFunc::Sum, false), "7.5");
    assert_eq!(run(AggregateFunc::Sum, true), "4.5");
    assert_eq!(run(AggregateFunc::Avg, false), "1.875");
    assert_eq!(aggregate(AggregateFunc::Sum, false, &[]), Ok(Value::Int(0)));
    assert_eq!(
        aggregate(AggregateFunc::Avg, false, &[Value::Null]),
        Ok(Value::Null)
    );
    assert_eq!(aggregate(AggregateFunc::Max, false, &[]), Ok(Value::Null));
    assert_eq!(
        aggregate(
            AggregateFunc::Sum,
            false,
            &[Value::Int(i64::MAX), Value::Int(1)]
        )
        .map_err(|e| e.to_string()),
        Err("integer overflow".into())
    );
    assert!(aggregate(AggregateFunc::Sum, false, &[Value::from("x")]).is_err());
    assert_eq!(
        AggregateFunc::from_name("COUNT"),
        Some(AggregateFunc::Count)
    );
    assert_eq!(AggregateFunc::from_name("toLower"), None);
}

#[test]
fn aggregates_are_not_evaluated_row_by_row() {
    let err = eval("count(*)").expect_err("aggregate");
    assert!(matches!(err, EvalError::Function { .. }), "{err:?}");
    let st = parse_statement("RETURN 1 +\n  $missing").expect("parses");
    let batho_lang::ast::Clause::Return(p) = &st.clauses[0] else {
        panic!()
    };
    let ExprKind::Binary(_, _, rhs) = &p.items[0].expr.kind else {
        panic!()
    };
    let params = BTreeMap::new();
    let err = Evaluator::new(&Mini, &params)
        .eval(rhs, &row())
        .expect_err("missing");
    let d = err.diagnostic("RETURN 1 +\n  $missing");
    assert_eq!((d.line, d.column), (2, 3));
}

#[test]
fn comprehensions_quantifiers_and_case() {
    let cases = [
        "[x IN xs WHERE x > 1 | x * 10]",
        "[x IN xs WHERE x <> 2]",
        "[x IN xs | x + 1]",
        "[x IN xs]",
        "[x IN null | x]",
        "[a IN xs | a]",
        "[x IN [[1, 2], [3]] | [y IN x | y * 2]]",
        "[x IN xs WHERE x > 5]",
        "[x IN 1 | x]",
        "all(x IN xs WHERE x > 0)",
        "all(x IN xs WHERE x > 1)",
        "all(x IN [1, null] WHERE x > 0)",
        "all(x IN [] WHERE x > 0)",
        "any(x IN xs WHERE x = 2)",
        "any(x IN [1, null] WHERE x = 2)",
        "any(x IN [] WHERE true)",
        "none(x IN xs WHERE x > 3)",
        "none(x IN [null, 4] WHERE x > 3)",
        "single(x IN xs WHERE x = 2)",
        "single(x IN xs WHERE x > 1)",
        "single(x IN [2, null] WHERE x = 2)",
        "all(x IN null WHERE x)",
        "any(x IN xs WHERE x)",
        "CASE WHEN 1 > 2 THEN 'a' WHEN 2 > 1 THEN 'b' ELSE 'c' END",
        "CASE WHEN null THEN 'a' END",
        "CASE a.name WHEN 'helper' THEN 1 WHEN 'main' THEN 2 ELSE 3 END",
        "CASE n WHEN null THEN 'null matched' ELSE 'no match' END",
        "CASE 2 WHEN 1 THEN 'one' END",
    ];
    let got: String = cases.iter().map(|q| format!("{q} => {}\n", v(q))).collect();
    expect![[r#"
        [x IN xs WHERE x > 1 | x * 10] => [20, 30]
        [x IN xs WHERE x <> 2] => [1, 3]
        [x IN xs | x + 1] => [2, 3, 4]
        [x IN xs] => [1, 2, 3]
        [x IN null | x] => null
        [a IN xs | a] => [1, 2, 3]
        [x IN [[1, 2], [3]] | [y IN x | y * 2]] => [[2, 4], [6]]
        [x IN xs WHERE x > 5] => []
        [x IN 1 | x] => error: type error: expected a list to iterate over, got integer
        all(x IN xs WHERE x > 0) => true
        all(x IN xs WHERE x > 1) => false
        all(x IN [1, null] WHERE x > 0) => null
        all(x IN [] WHERE x > 0) => true
        any(x IN xs WHERE x = 2) => true
        any(x IN [1, null] WHERE x = 2) => null
        any(x IN [] WHERE true) => false
        none(x IN xs WHERE x > 3) => true
        none(x IN [null, 4] WHERE x > 3) => false
        single(x IN xs WHERE x = 2) => true
        single(x IN xs WHERE x > 1) => false
        single(x IN [2, null] WHERE x = 2) => null
        all(x IN null WHERE x) => null
        any(x IN xs WHERE x) => error: type error: expected a boolean, got integer
        CASE WHEN 1 > 2 THEN 'a' WHEN 2 > 1 THEN 'b' ELSE 'c' END => 'b'
        CASE WHEN null THEN 'a' END => null
        CASE a.name WHEN 'helper' THEN 1 WHEN 'main' THEN 2 ELSE 3 END => 2
        CASE n WHEN null THEN 'null matched' ELSE 'no match' END => 'no match'
        CASE 2 WHEN 1 THEN 'one' END => null
    "#]]
    .assert_eq(&got);
}

#[test]
fn range_with_a_step_away_from_the_end_is_empty() {
    let cases = [
        "range(0, 1, -2)",
        "range(0, -3, 2)",
        "range(3, 0, -2)",
        "range(2, 2, -1)",
    ];
    let got: String = cases.iter().map(|q| format!("{q} => {}\n", v(q))).collect();
    expect![[r#"
        range(0, 1, -2) => []
        range(0, -3, 2) => []
        range(3, 0, -2) => [3, 1]
        range(2, 2, -1) => [2]
    "#]]
    .assert_eq(&got);
}

#[test]
fn rand_and_nan_comparisons() {
    let cases = [
        "rand() >= 0.0 AND rand() < 1.0",
        "rand() <> rand()",
        "[0.0 / 0.0 > 1, 0.0 / 0.0 <= 1.0, 0.0 / 0.0 >= 0.0 / 0.0, 0.0 / 0.0 < 'a']",
    ];
    let got: String = cases.iter().map(|q| format!("{q} => {}\n", v(q))).collect();
    expect![[r#"
        rand() >= 0.0 AND rand() < 1.0 => true
        rand() <> rand() => true
        [0.0 / 0.0 > 1, 0.0 / 0.0 <= 1.0, 0.0 / 0.0 >= 0.0 / 0.0, 0.0 / 0.0 < 'a'] => [false, false, false, null]
    "#]].assert_eq(&got);
}

#[test]
fn percentiles() {
    let prices = [
        Value::Float(30.0),
        Value::Null,
        Value::Float(10.0),
        Value::Float(20.0),
    ];
    let mut got = String::new();
    for func in [AggregateFunc::PercentileDisc, AggregateFunc::PercentileCont] {
        for fraction in [
            Value::Float(0.0),
            Value::Float(0.5),
            Value::Int(1),
            Value::Float(0.25),
        ] {
            let mut acc = Accumulator::new(func, false, Span::default());
            let result = prices
                .iter()
                .try_for_each(|p| acc.update(Value::List(vec![p.clone(), fraction.clone()])))
                .map(|()| acc.finish());
            got.push_str(&format!("{}({fraction}) => {result:?}\n", func.name()));
        }
    }
    for fraction in [Value::Float(1.1), Value::Int(-1), Value::from("half")] {
        let mut acc = Accumulator::new(AggregateFunc::PercentileCont, false, Span::default());
        let result = acc.update(Value::List(vec![Value::Int(1), fraction.clone()]));
        got.push_str(&format!("percentileCont({fraction}) => {result:?}\n"));
    }
    expect![[r#"
        percentileDisc(0.0) => Ok(Float(10.0))
        percentileDisc(0.5) => Ok(Float(20.0))
        percentileDisc(1) => Ok(Float(30.0))
        percentileDisc(0.25) => Ok(Float(10.0))
        percentileCont(0.0) => Ok(Float(10.0))
        percentileCont(0.5) => Ok(Float(20.0))
        percentileCont(1) => Ok(Float(30.0))
        percentileCont(0.25) => Ok(Float(15.0))
        percentileCont(1.1) => Err(Function { message: "percentileCont() fraction must be between 0.0 and 1.0, got 1.1", span: Span { start: 0, end: 0 } })
        percentileCont(-1) => Err(Function { message: "percentileCont() fraction must be between 0.0 and 1.0, got -1", span: Span { start: 0, end: 0 } })
        percentileCont('half') => Err(Type { message: "percentileCont() expects a number as fraction, got string", span: Span { start: 0, end: 0 } })
    "#]].assert_eq(&got);
}
