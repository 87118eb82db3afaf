//! Syntax error messages: location, caret, suggestion. Snapshots of the rendered text.

use batho_lang::{ParseErrorKind, parse};
use expect_test::{Expect, expect};

fn check(text: &str, expect: Expect) {
    match parse(text) {
        Ok(st) => panic!("parsed: {st:?}"),
        Err(e) => expect.assert_eq(&e.to_string()),
    }
}

fn kind(text: &str) -> ParseErrorKind {
    parse(text)
        .err()
        .map(|e| e.kind)
        .unwrap_or_else(|| panic!("parsed: {text}"))
}

#[test]
fn misspelled_keywords() {
    check(
        "MACTH (n) RETURN n",
        expect![[r#"
            error: unexpected `MACTH`
             --> line 1, column 1
              |
            1 | MACTH (n) RETURN n
              | ^^^^^
              = help: did you mean MATCH?"#]],
    );
    check(
        "MATCH (n)\nWHERE n.name = 'x'\nRETRUN n",
        expect![[r#"
            error: unexpected `RETRUN`, expected RETURN, WITH, UNWIND, AND, OR, XOR, CALL, CREATE, ...
             --> line 3, column 1
              |
            3 | RETRUN n
              | ^^^^^^
              = help: did you mean RETURN?"#]],
    );
    check(
        "MATCH (n) RETURN n ORDR BY n.name",
        expect![[r#"
            error: unexpected `ORDR`, expected RETURN, WITH, UNWIND, AS, ORDER BY, SKIP, LIMIT, AND, ...
             --> line 1, column 20
              |
            1 | MATCH (n) RETURN n ORDR BY n.name
              |                    ^^^^
              = help: did you mean ORDER?"#]],
    );
}

#[test]
fn missing_return() {
    check(
        "MATCH (a)-[r:CALLS]->(b) WHERE a.name = 'main'",
        expect![[r#"
            error: query cannot end with MATCH: it needs a RETURN (or an update) clause
             --> line 1, column 47
              |
            1 | MATCH (a)-[r:CALLS]->(b) WHERE a.name = 'main'
              |                                               ^
              = help: add `RETURN a, r, b`"#]],
    );
    check(
        "MATCH (a) WITH a.name AS n",
        expect![[r#"
            error: query cannot end with WITH: it needs a RETURN (or an update) clause
             --> line 1, column 27
              |
            1 | MATCH (a) WITH a.name AS n
              |                           ^
              = help: add `RETURN n`"#]],
    );
    check(
        "MATCH (a) RETURN a MATCH (b) RETURN b",
        expect![[r#"
            error: RETURN must be the last clause of a query
             --> line 1, column 11
              |
            1 | MATCH (a) RETURN a MATCH (b) RETURN b
              |           ^^^^^^^^
              = help: use WITH to pass rows on to further clauses, or `;` to start a new statement"#]],
    );
    check(
        "CALL db.labels() RETURN label",
        expect![[r#"
            error: a CALL followed by other clauses must YIELD the columns it passes on
             --> line 1, column 1
              |
            1 | CALL db.labels() RETURN label
              | ^^^^^^^^^^^^^^^^
              = help: add `YIELD *` or name the columns: `CALL db.labels() YIELD ...`"#]],
    );
}

#[test]
fn lexical_errors() {
    check(
        "MATCH (n)\nWHERE n.name = 'validate\nRETURN n",
        expect![[r#"
            error: unclosed string literal
             --> line 2, column 16
              |
            2 | WHERE n.name = 'validate
              |                ^
              = help: close the string with ', or escape a quote inside it as \'"#]],
    );
    check(
        "MATCH (n RETURN n",
        expect![[r#"
            error: unclosed `(`
             --> line 1, column 7
              |
            1 | MATCH (n RETURN n
              |       ^
              = help: add `)`"#]],
    );
    check(
        "MATCH (n)-[r:CALLS)->(m) RETURN n",
        expect![[r#"
            error: `)` does not close the `[` opened at line 1, column 11
             --> line 1, column 19
              |
            1 | MATCH (n)-[r:CALLS)->(m) RETURN n
              |                   ^
              = help: expected `]` here"#]],
    );
    check(
        "RETURN 1) ",
        expect![[r#"
            error: unmatched `)`
             --> line 1, column 9
              |
            1 | RETURN 1) 
              |         ^
              = help: remove it, or add the opening bracket"#]],
    );
    check(
        "RETURN 1 /* never closed",
        expect![[r#"
            error: unclosed block comment
             --> line 1, column 10
              |
            1 | RETURN 1 /* never closed
              |          ^^
              = help: close the comment with `*/`"#]],
    );
    check(
        r"RETURN 'bad \q escape'",
        expect![[r#"
            error: unknown escape sequence \q
             --> line 1, column 13
              |
            1 | RETURN 'bad \q escape'
              |             ^^
              = help: write `\\` for a literal backslash"#]],
    );
}

#[test]
fn operators_from_other_languages() {
    check(
        "MATCH (n) WHERE n.name == 'x' RETURN n",
        expect![[r#"
            error: unexpected `==`, expected an expression
             --> line 1, column 24
              |
            1 | MATCH (n) WHERE n.name == 'x' RETURN n
              |                        ^^
              = help: use `=` to compare for equality"#]],
    );
    check(
        "MATCH (n) WHERE n.a = 1 && n.b = 2 RETURN n",
        expect![[r#"
            error: unexpected `&&`, expected RETURN, WITH, UNWIND, AND, OR, XOR, CALL, CREATE, ...
             --> line 1, column 25
              |
            1 | MATCH (n) WHERE n.a = 1 && n.b = 2 RETURN n
              |                         ^^
              = help: use AND"#]],
    );
}

#[test]
fn literal_ranges() {
    check(
        "RETURN 9223372036854775808",
        expect![[r#"
            error: integer literal 9223372036854775808 does not fit in 64 bits
             --> line 1, column 8
              |
            1 | RETURN 9223372036854775808
              |        ^^^^^^^^^^^^^^^^^^^
              = help: use a float literal (e.g. `1.0e20`) for very large numbers"#]],
    );
    check(
        "MATCH (a)-[*5..2]->(b) RETURN a",
        expect![[r#"
            error: empty length range: minimum 5 is greater than maximum 2
             --> line 1, column 12
              |
            1 | MATCH (a)-[*5..2]->(b) RETURN a
              |            ^^^^^
              = help: write `*2..5`"#]],
    );
    check(
        "MATCH (a)-[*..5000]->(b) RETURN a",
        expect![[r#"
            error: path length 5000 is larger than the limit of 1000
             --> line 1, column 15
              |
            1 | MATCH (a)-[*..5000]->(b) RETURN a
              |               ^^^^"#]],
    );
    check(
        "RETURN {a: 1, a: 2}",
        expect![[r#"
            error: duplicate key `a` in map literal
             --> line 1, column 15
              |
            1 | RETURN {a: 1, a: 2}
              |               ^
              = help: remove one of the entries"#]],
    );
}

#[test]
fn limits() {
    let deep = format!("RETURN {}1{}", "(".repeat(300), ")".repeat(300));
    assert_eq!(kind(&deep), ParseErrorKind::TooDeep);
    let ok = format!("RETURN {}1{}", "(".repeat(256), ")".repeat(256));
    assert!(parse(&ok).is_ok());
    let chain = format!("RETURN 1{}", " + 1".repeat(5000));
    assert_eq!(kind(&chain), ParseErrorKind::TooDeep);
    let nots = format!("RETURN {}true", "NOT ".repeat(5000));
    assert_eq!(kind(&nots), ParseErrorKind::TooDeep);
    let negs = format!("RETURN {}1", "- ".repeat(5000));
    assert_eq!(kind(&negs), ParseErrorKind::TooDeep);
    let props = format!("RETURN n{}", ".a".repeat(5000));
    assert_eq!(kind(&props), ParseErrorKind::TooDeep);
    let big = format!(
        "RETURN '{}'",
        "x".repeat(batho_lang::parse::MAX_INPUT_BYTES)
    );
    assert_eq!(kind(&big), ParseErrorKind::TooLarge);
    // A comparison chain is a tree of ANDs: a long one hits the depth limit too.
    let comparisons = format!("RETURN 0{}", " < 0".repeat(5000));
    assert_eq!(kind(&comparisons), ParseErrorKind::TooDeep);
}

/// Found by the `bql_parse` fuzz target: an error just after a multi-byte character used to
/// slice the text inside that character (the check for `==` looked one byte back) and panic.
#[test]
fn an_error_right_after_a_multibyte_character() {
    check(
        "MATCH (a\u{feff}!) RETURN a",
        expect![[r#"
            error: unexpected `!`, expected a label `:Name` or a property map `{key: value}`
             --> line 1, column 10
              |
            1 | MATCH (a﻿!) RETURN a
              |          ^"#]],
    );
    check(
        "RETURN é!",
        expect![[r#"
            error: unexpected `é`
             --> line 1, column 8
              |
            1 | RETURN é!
              |        ^"#]],
    );
}
