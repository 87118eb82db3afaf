//! `batho query` driven as a user would, on a built copy of the bundled example: every
//! output format with answers checked against examples/demo/src, parameters, scripts,
//! bounds and the exit codes of failures.

mod common;

use std::path::PathBuf;

use common::{arg, copy_repo, run, run_ok};
use expect_test::expect;

/// A built copy of the demo.
fn demo() -> (tempfile::TempDir, PathBuf) {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    (tmp, repo)
}

/// `shell.cpp` has the only call to `table_put`: `PutCommand::run` (line 24).
const CALLERS: &str = "MATCH (c)-[:CALLS]->(f:Function {name: 'table_put'}) \
                       RETURN c.name AS caller, c.qualified_name AS qualified, c.kind AS kind, c.file AS file";

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn table_of_the_callers_of_table_put() {
    let (_tmp, repo) = demo();
    let out = run_ok(&["query", "--repo", arg(&repo), CALLERS]);
    expect![[r#"
        caller | qualified             | kind   | file
        -------+-----------------------+--------+--------------
        run    | demo::PutCommand::run | Method | src/shell.cpp
        (1 row)
    "#]]
    .assert_eq(&out);
}

#[test]
fn json_jsonl_and_csv_carry_the_same_answer() {
    let (_tmp, repo) = demo();
    let json = run_ok(&["query", "--repo", arg(&repo), "--format", "json", CALLERS]);
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([{
            "caller": "run", "qualified": "demo::PutCommand::run",
            "kind": "Method", "file": "src/shell.cpp"
        }])
    );

    let q = "MATCH (c)-[:CALLS]->(f:Function {name: 'table_get'}) RETURN c.qualified_name AS q ORDER BY q";
    let jsonl = run_ok(&["query", "--repo", arg(&repo), "--format", "jsonl", q]);
    let lines: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        vec![serde_json::json!({"q": "demo::GetCommand::run"})],
        "{jsonl}"
    );

    // A whole node in JSON: its properties plus _id and _labels. (The header's declaration
    // is a Function node too; the definition is the one in table.c.)
    let node = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "json",
        "MATCH (f:Function {name: 'table_put'}) WHERE f.file = 'src/table.c' RETURN f",
    ]);
    let node: serde_json::Value = serde_json::from_str(&node).unwrap();
    assert_eq!(node[0]["f"]["_labels"], serde_json::json!(["Function"]));
    assert_eq!(node[0]["f"]["file"], "src/table.c");
    assert_eq!(node[0]["f"]["start_line"], 75);

    let csv = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "csv",
        "RETURN 'a,b' AS s, 'say \"hi\"' AS t, 3 AS n",
    ]);
    assert_eq!(
        csv.replace("\r\n", "\n"),
        "s,t,n\n\"a,b\",\"say \"\"hi\"\"\",3\n"
    );
}

#[test]
fn params_are_json_when_they_parse_and_text_otherwise() {
    let (_tmp, repo) = demo();
    let out = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "json",
        "--param",
        "name=table_put",
        "-p",
        "n=41",
        "-p",
        "quoted=\"42\"",
        "-p",
        "l=[1,2]",
        "MATCH (c)-[:CALLS]->(f {name: $name}) \
         RETURN c.name AS caller, $n + 1 AS n, $quoted AS quoted, size($l) AS len",
    ]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([{"caller": "run", "n": 42, "quoted": "42", "len": 2}])
    );
}

#[test]
fn a_file_of_two_statements_prints_both_results() {
    let (tmp, repo) = demo();
    let file = tmp.path().join("q.bql");
    std::fs::write(
        &file,
        "// the hash functions; both of them\n\
         MATCH (f:Function) WHERE f.name STARTS WITH 'hash_' AND f.file = 'src/hash.c'\n\
         RETURN f.name AS name ORDER BY name;\n\
         RETURN 'x;y' AS s;\n",
    )
    .unwrap();
    let out = run_ok(&["query", "--repo", arg(&repo), "-f", arg(&file)]);
    expect![[r#"
        name
        ----------
        hash_djb2
        hash_fnv1a
        (2 rows)

        s
        ---
        x;y
        (1 row)
    "#]]
    .assert_eq(&out);
}

#[test]
fn query_errors_exit_1_with_a_located_diagnostic() {
    let (tmp, repo) = demo();
    let out = run(&[
        "query",
        "--repo",
        arg(&repo),
        "MATCH (n:Functon) RETURN n.name",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("unknown label `Functon`"), "{err}");
    assert!(err.contains("line 1, column 10"), "{err}");
    assert!(err.contains("1 | MATCH (n:Functon) RETURN n.name"), "{err}");
    assert!(err.contains("  |          ^^^^^^^"), "{err}");
    assert!(err.contains("did you mean Function?"), "{err}");
    assert!(out.stdout.is_empty());

    // In a script, positions are those of the file and the other statements still run.
    let file = tmp.path().join("bad.bql");
    std::fs::write(
        &file,
        "RETURN 1 AS one;\nRETURN 2 AS two;\nMATCH (n) RETRUN n;\nRETURN 3 AS three;\n",
    )
    .unwrap();
    let out = run(&[
        "query",
        "--repo",
        arg(&repo),
        "-f",
        arg(&file),
        "--format",
        "jsonl",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout, "{\"one\":1}\n{\"two\":2}\n{\"three\":3}\n");
    let err = stderr(&out);
    assert!(err.contains("line 3, column 11"), "{err}");
    assert!(err.contains("1 of 4 statements failed"), "{err}");
}

#[test]
fn json_keeps_the_return_order_and_csv_results_stay_apart() {
    let (_tmp, repo) = demo();
    let query = "RETURN 1 AS zeta, 2 AS alpha, 3 AS mid";
    let json = run_ok(&["query", "--repo", arg(&repo), "--format", "json", query]);
    assert_eq!(
        json,
        "[\n  {\n    \"zeta\": 1,\n    \"alpha\": 2,\n    \"mid\": 3\n  }\n]\n"
    );
    let jsonl = run_ok(&["query", "--repo", arg(&repo), "--format", "jsonl", query]);
    assert_eq!(jsonl, "{\"zeta\":1,\"alpha\":2,\"mid\":3}\n");
    // Two statements: two CSV documents, each with its header, a blank line between.
    let csv = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "csv",
        "RETURN 1 AS first; RETURN 2 AS second",
    ]);
    assert_eq!(csv, "first\r\n1\r\n\r\nsecond\r\n2\r\n");
}

#[test]
fn usage_and_artifact_problems_exit_2() {
    let (tmp, repo) = copy_repo("examples/demo");
    let out = run(&["query", "--repo", arg(&repo), "RETURN 1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("no artifact at"), "{err}");
    assert!(err.contains("hint: run 'batho build"), "{err}");

    run_ok(&["build", arg(&repo)]);
    for args in [
        vec!["query", "--repo", arg(&repo), "--format", "xml", "RETURN 1"],
        vec!["query", "--repo", arg(&repo)],
        vec!["query", "--repo", arg(&repo), "-p", "novalue", "RETURN 1"],
        vec!["query", "--repo", arg(&repo), "  ; // nothing"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let missing = tmp.path().join("missing.bql");
    let out = run(&["query", "--repo", arg(&repo), "-f", arg(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

#[test]
fn truncated_results_say_so_where_the_data_stays_parseable() {
    let (_tmp, repo) = demo();
    let q = "MATCH (f:Function) RETURN f.name AS name ORDER BY name";
    let out = run(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "json",
        "--limit-rows",
        "2",
        q,
    ]);
    assert_eq!(out.status.code(), Some(0));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2);
    assert!(
        stderr(&out).contains("result truncated at 2 rows"),
        "{}",
        stderr(&out)
    );

    let table = run_ok(&["query", "--repo", arg(&repo), "--limit-rows", "1", q]);
    assert!(
        table
            .trim_end()
            .ends_with("result truncated at 1 rows; raise it with --limit-rows or add a LIMIT"),
        "{table}"
    );

    // A work budget that is too small is a query error.
    let out = run(&["query", "--repo", arg(&repo), "--max-work", "3", q]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("work budget of 3"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn explain_and_profile_print_the_plan() {
    let (_tmp, repo) = demo();
    let out = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "EXPLAIN MATCH (f:Function) RETURN f.name",
    ]);
    assert!(out.starts_with("Project f.name"), "{out}");
    assert!(out.contains("NodeScan (f:Function)"), "{out}");
    let out = run(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "csv",
        "PROFILE MATCH (f:Function) RETURN count(*) AS n",
    ]);
    let plain = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "--format",
        "csv",
        "MATCH (f:Function) RETURN count(*) AS n",
    ]);
    let n: u64 = plain.lines().nth(1).unwrap().trim().parse().unwrap();
    assert!(n >= 10, "the demo defines more than ten functions: {n}");
    // As a table: the profiled plan once, before the rows (docs/cli.md).
    let table = run_ok(&[
        "query",
        "--repo",
        arg(&repo),
        "PROFILE MATCH (f:Function) RETURN count(*) AS n",
    ]);
    assert_eq!(table.matches("NodeScan (f:Function)").count(), 1, "{table}");
    assert!(table.starts_with("Aggregate"), "{table}");
    assert!(table.trim_end().ends_with("(1 row)"), "{table}");
    // The rows stay on stdout, the profiled plan goes to stderr.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
        format!("n\n{n}\n")
    );
    assert!(
        stderr(&out).contains(&format!(
            "NodeScan (f:Function)  [kind bitmap Function] {{rows={n} "
        )),
        "{}",
        stderr(&out)
    );
}

/// The byte span of `f`'s node, the lines it reports, and the File node's end byte.
fn spans_of(repo: &std::path::Path, function: &str) -> (i64, i64, i64, i64) {
    let q = format!(
        "MATCH (file:File)-[:CONTAINS]->(f:Function {{name: '{function}'}}) \
         RETURN f.start_byte AS s, f.end_byte AS e, f.start_line AS l, file.end_byte AS size"
    );
    let out = run_ok(&["query", "--repo", arg(repo), "--format", "json", &q]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = &rows[0];
    let int = |k: &str| row[k].as_i64().unwrap_or_else(|| panic!("{k} in {rows}"));
    (int("s"), int("e"), int("l"), int("size"))
}

/// A file that is not UTF-8 (Latin-1 bytes in a comment) is decoded lossily, each invalid
/// byte becoming a 3-byte U+FFFD: offsets must still count the file's real bytes, after a
/// full build and after a patch, so that a slice of the file at them is the entity's text.
#[test]
fn offsets_count_the_real_bytes_of_a_file_that_is_not_utf8() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("latin1");
    std::fs::create_dir_all(&repo).unwrap();
    let after = b"int after(int x) { return x + before(); }";
    let source = |head: &[u8]| {
        let mut text = head.to_vec();
        text.extend_from_slice(b"/* caf\xe9 \xff\xfe */\nstatic int before(void) { return 1; }\n");
        let start = text.len() as i64;
        text.extend_from_slice(after);
        text.push(b'\n');
        (text, start)
    };
    let (text, start) = source(b"");
    std::fs::write(repo.join("l.c"), &text).unwrap();
    run_ok(&["build", arg(&repo)]);
    let len = text.len() as i64;
    assert_eq!(
        spans_of(&repo, "after"),
        (start, start + after.len() as i64, 3, len)
    );

    let (text, start) = source(b"/* \xe0 la fa\xe7on */\n");
    std::fs::write(repo.join("l.c"), &text).unwrap();
    run_ok(&["patch", arg(&repo)]);
    let len = text.len() as i64;
    assert_eq!(
        spans_of(&repo, "after"),
        (start, start + after.len() as i64, 4, len)
    );
}

/// One CALLS relationship per caller and callee, holding every call site: `r.count` calls
/// on the distinct lines `r.lines`, `r.line` the first; counting relationships counts
/// callers. (Lua's lstrlib.c calls luaL_error 25 times from fewer functions.)
#[test]
fn a_calls_relationship_holds_the_count_and_lines_of_its_call_sites() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("sites");
    std::fs::create_dir_all(&repo).unwrap();
    let src = "int luaL_error(const char *m);\n\
               int str_format(int a) {\n\
               if (a) luaL_error(\"a\");\n\
               if (a > 1) luaL_error(\"b\"); if (a > 2) luaL_error(\"c\");\n\
               return luaL_error(\"d\");\n\
               }\n\
               int other(void) { return luaL_error(\"e\"); }\n";
    std::fs::write(repo.join("lstrlib.c"), src).unwrap();
    run_ok(&["build", arg(&repo)]);
    let q = "MATCH (a)-[r:CALLS]->(f {name: 'luaL_error'}) \
             RETURN a.name AS caller, r.count AS count, r.lines AS lines, r.line AS line \
             ORDER BY caller";
    let out = run_ok(&["query", "--repo", arg(&repo), "--format", "json", q]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([
            {"caller": "other", "count": 1, "lines": [7], "line": 7},
            {"caller": "str_format", "count": 4, "lines": [3, 4, 5], "line": 3},
        ])
    );
    let q = "MATCH (a)-[r:CALLS]->(f {name: 'luaL_error'}) \
             RETURN count(a) AS callers, sum(r.count) AS calls";
    let out = run_ok(&["query", "--repo", arg(&repo), "--format", "json", q]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows, serde_json::json!([{"callers": 2, "calls": 5}]));
}
