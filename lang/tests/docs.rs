//! Every query example in `docs/bql.md` compiles, and the EXPLAIN example prints the plan
//! the reference shows. (`text` blocks hold output, not queries.)

use batho_lang::{Schema, compile};

const DOC: &str = include_str!("../../docs/bql.md");

/// The untagged code blocks of the reference, each split into statements: a line starting
/// with a clause keyword at column 0 starts a new statement.
fn examples() -> Vec<String> {
    enum State {
        Prose,
        Query(Vec<String>),
        Output,
    }
    let starts = [
        "MATCH", "CALL", "UNWIND", "CREATE", "MERGE", "EXPLAIN", "PROFILE", "AT ",
    ];
    let mut out = Vec::new();
    let mut state = State::Prose;
    for line in DOC.lines() {
        state = match (state, line.strip_prefix("```")) {
            (State::Prose, Some("")) => State::Query(Vec::new()),
            (State::Prose, Some(_)) => State::Output,
            (State::Query(lines), Some(_)) => {
                out.push(lines.join("\n"));
                State::Prose
            }
            (State::Output, Some(_)) => State::Prose,
            (State::Query(mut lines), None) => {
                if starts.iter().any(|k| line.starts_with(k)) && !lines.is_empty() {
                    lines.push(";".into());
                }
                lines.push(line.to_string());
                State::Query(lines)
            }
            (s, None) => s,
        };
    }
    out
}

#[test]
fn every_documented_query_compiles() {
    let blocks = examples();
    assert!(
        blocks.len() >= 9,
        "found only {} example blocks",
        blocks.len()
    );
    for block in blocks {
        // A block of updates, or one marked `// on a writable graph`, is checked against
        // the open schema of writable graphs; any other against the code graph's.
        let writes = [
            "CREATE",
            "MERGE",
            " SET ",
            "DELETE",
            "REMOVE",
            "// on a writable graph",
        ]
        .iter()
        .any(|w| block.contains(w));
        let schema = if writes {
            Schema::open()
        } else {
            Schema::code_graph()
        };
        if let Err(e) = compile(&block, &schema) {
            panic!("documented example does not compile:\n{block}\n{e}");
        }
    }
}

#[test]
fn documented_explain_output_is_current() {
    let q = "EXPLAIN MATCH (c)-[r:CALLS]->(f:Function {name: 'validate_token'})\nWHERE r.confidence >= 0.85 RETURN c.id ORDER BY c.id LIMIT 50";
    let plan = compile(q, &Schema::code_graph()).expect("compiles")[0]
        .plan
        .to_string();
    assert!(
        DOC.contains(&format!("```text\n{plan}\n```")),
        "docs/bql.md shows a stale plan; now:\n{plan}"
    );
}
