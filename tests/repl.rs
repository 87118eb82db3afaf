//! `batho-ql` fed through a pipe, as a script would use it: statements over several lines,
//! `:` commands, an error in the middle, and the exit code.

mod common;

use std::path::Path;
use std::process::Output;

use common::{arg, copy_repo, run_ok};

fn batho_ql(path: &Path, input: &str, home: &Path) -> Output {
    common::batho_ql(&[path.as_os_str()], input, home)
}

#[test]
fn a_piped_session_runs_everything_and_reports_the_failure() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let input = "\
MATCH (c)-[:CALLS]->(f:Function {name: 'table_put'})
RETURN c.qualified_name AS caller;
:param name=table_get
:params
:format json
MATCH (c)-[:CALLS]->(f {name: $name}) RETURN c.qualified_name AS caller;
MATCH (n:Functon) RETURN n;
:explain MATCH (f:Function) RETURN f.name
:format csv
RETURN 'a;b' AS s; RETURN 2 AS two
";
    let out = batho_ql(&repo, input, tmp.path());
    let stdout = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let expected = r#"caller
---------------------
demo::PutCommand::run
(1 row)
$name = 'table_get'
[
  {
    "caller": "demo::GetCommand::run"
  }
]
[
  {
    "plan": "Project f.name AS `f.name`"
  },
  {
    "plan": "  NodeScan (f:Function)  [kind bitmap Function]"
  },
  {
    "plan": "    Argument"
  }
]
s
a;b
two
2
"#;
    assert_eq!(stdout, expected);
    assert!(stderr.contains("unknown label `Functon`"), "{stderr}");
    assert!(stderr.contains("did you mean Function?"), "{stderr}");
    // No prompt, no colour when not on a terminal.
    assert!(
        !stdout.contains("bql>") && !stdout.contains('\x1b'),
        "{stdout}"
    );
}

#[test]
fn a_clean_session_exits_0_and_quit_stops_reading() {
    let (tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let out = batho_ql(
        &repo,
        ":schema\n:quit\nMATCH (n:Nope) RETURN n;\n",
        tmp.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("relationshipType | CALLS"), "{stdout}");
    assert!(stdout.contains("label            | Method"), "{stdout}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unknown_commands_and_missing_artifacts_fail() {
    let (tmp, repo) = copy_repo("examples/demo");
    let out = batho_ql(&repo, "RETURN 1;\n", tmp.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("batho build"));

    run_ok(&["build", arg(&repo)]);
    let out = batho_ql(
        &repo,
        ":frobnicate\n:format xml\nRETURN 1 AS one;\n",
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown command ':frobnicate'"), "{stderr}");
    assert!(stderr.contains("unknown format 'xml'"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("one"));
}

fn batho_ql_new(path: &Path, input: &str, home: &Path) -> Output {
    common::batho_ql(&["--new".as_ref(), path.as_os_str()], input, home)
}

#[test]
fn a_new_writable_graph_takes_updates_and_transactions_and_batho_query_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let graph = tmp.path().join("session");
    let input = "\
CREATE (a:File {path: 'a.c'})-[:READ_BY]->(:Agent {name: 'me'});
BEGIN;
CREATE (:Scratch);
ROLLBACK;
MATCH (f:File)-[r]->(a) RETURN f.path, type(r), a;
:schema
";
    let out = batho_ql_new(&graph, input, tmp.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let expected = "\
2 nodes created, 1 relationship created, 2 labels added, 2 properties set
1 node created, 1 label added
f.path | type(r) | a
-------+---------+------------------------
a.c    | READ_BY | (#1:Agent {name: 'me'})
(1 row)
kind  | name  | count
------+-------+------
label | Agent | 1
label | File  | 1
(2 rows)
kind         | name    | count
-------------+---------+------
relationship | READ_BY | 1
(1 row)
";
    assert_eq!(stdout, expected);

    // The graph survives the process, and `batho query` reads and writes it.
    let out = run_ok(&[
        "query",
        "--repo",
        arg(&graph),
        "MATCH (n) SET n.seen = true",
    ]);
    assert_eq!(out, "2 properties set\n");
    let out = run_ok(&[
        "query",
        "--repo",
        arg(&graph),
        "--format",
        "csv",
        "MATCH (n) WHERE n.seen RETURN count(n) AS n",
    ]);
    assert_eq!(out.replace("\r\n", "\n"), "n\n2\n");

    // --new refuses a folder that already holds a graph, and says how to open it.
    let out = batho_ql_new(&graph, "", tmp.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("already holds a graph") && stderr.contains("batho-ql "),
        "{stderr}"
    );
}
