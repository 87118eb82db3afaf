//! Temporal expressions evaluated end to end: constructors, string forms, accessors,
//! arithmetic and comparisons, over no graph.

use std::collections::BTreeMap;

use batho_lang::{Evaluator, NoGraph, Value, parse_statement};

fn v(text: &str) -> String {
    let statement = parse_statement(&format!("RETURN {text}")).unwrap_or_else(|e| panic!("{e}"));
    let batho_lang::ast::Clause::Return(projection) = &statement.clauses[0] else {
        panic!("no return")
    };
    let params = BTreeMap::new();
    let row: BTreeMap<String, Value> = BTreeMap::new();
    match Evaluator::new(&NoGraph, &params).eval(&projection.items[0].expr, &row) {
        Ok(value) => value.to_string(),
        Err(error) => format!("error: {error}"),
    }
}

fn check(cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(query, want)| {
            let got = v(query);
            (got != *want).then(|| format!("{query}\n  want {want}\n  got  {got}"))
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn debug() {
    check(&[
        (
            "duration({months: 1, days: -14, hours: 16, minutes: -12, seconds: 70})",
            "P1M-14DT15H49M10S",
        ),
        (
            "date({year: 1984, month: 10, day: 11}) + duration({months: 1, days: -14, hours: 16, minutes: -12, seconds: 70})",
            "1984-10-28",
        ),
    ]);
}

#[test]
fn debug2() {
    check(&[
        (
            "datetime({year: 1984, month: 10, day: 11})",
            "1984-10-11T00:00Z",
        ),
        (
            "datetime({year: 1984, month: 10, day: 11, timezone: 'UTC'})",
            "1984-10-11T00:00Z",
        ),
        (
            "datetime({year: 1984, month: 10, day: 11, timezone: 'Europe/London'})",
            "1984-10-11T00:00+01:00[Europe/London]",
        ),
    ]);
}
