//! Data-driven query tests: each `tests/bql/*.test` file names a graph, optional setup
//! statements and cases (a statement and the rows or the error it must give), in the
//! shape of Kùzu's and limbo's `.test` files. `BATHO_UPDATE_EXPECT=1 cargo test -p
//! batho-engine --test bql` rewrites every expected block with what the engine answers
//! now (review the diff before committing it).
//!
//! ```text
//! # A comment.
//! -GRAPH golden              the hand-built code graph of query_support.rs, `writable`,
//!                            or `code`: the graph Batho builds from the -FILE blocks
//! -FILE src/gen.c            (code graphs) a file, its lines following, each after a `|`
//! |int main(void) { return 0; }
//! -SETUP CREATE (:Note)      writable graphs: statements run first, in order
//!
//! -CASE what it checks
//! -QUERY MATCH (n) RETURN n.name ORDER BY n.name
//! -UNORDERED                 optional: compare the rows as a sorted list
//! ---- 2                     the row count, then one row per line, cells joined by " | "
//! 'a'
//! 'b'
//! ```
//!
//! An error is expected as `---- error` and the message on the next line. Cases of a
//! writable file run in order on one graph, so later cases see earlier writes.

#[path = "query_support.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use batho_engine::build::{BuildOptions, build};
use batho_engine::query::{Database, QueryError, QueryResult, WritableDatabase};

/// The graph a file's cases run on.
enum Graph {
    Golden(Box<Database>),
    Writable(Box<WritableDatabase>),
}

impl Graph {
    fn run(&mut self, statement: &str) -> Result<QueryResult, QueryError> {
        let no_params = BTreeMap::new();
        match self {
            Graph::Golden(database) => database.query(statement, &no_params),
            Graph::Writable(database) => database.execute(statement, &no_params),
        }
    }
}

/// One case as written.
struct Case {
    name: String,
    query: String,
    unordered: bool,
    expected: Vec<String>,
}

/// A parsed file: its header lines (kept as written) and its cases.
struct TestFile {
    header: Vec<String>,
    cases: Vec<Case>,
}

fn parse(path: &Path, text: &str) -> TestFile {
    let mut header = Vec::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("-CASE ") {
            cases.push(Case {
                name: name.trim().to_string(),
                query: String::new(),
                unordered: false,
                expected: Vec::new(),
            });
            continue;
        }
        let Some(case) = cases.last_mut() else {
            header.push(line.to_string());
            continue;
        };
        if let Some(query) = line.strip_prefix("-QUERY ") {
            case.query = query.trim().to_string();
            // A statement continues on the lines up to the next directive.
            while let Some(next) = lines.peek() {
                if next.starts_with('-') || next.trim().is_empty() {
                    break;
                }
                case.query.push('\n');
                case.query.push_str(next.trim_end());
                lines.next();
            }
        } else if line.trim() == "-UNORDERED" {
            case.unordered = true;
        } else if let Some(count) = line.strip_prefix("---- ") {
            let count = count.trim();
            let rows = if count == "error" {
                1
            } else {
                count.parse::<usize>().unwrap_or_else(|_| {
                    panic!(
                        "{}: case '{}': bad row count '{count}'",
                        path.display(),
                        case.name
                    )
                })
            };
            case.expected = (0..rows)
                .map(|_| lines.next().unwrap_or_default().to_string())
                .collect();
            if count == "error" {
                case.expected.insert(0, "error".into());
            }
        } else if !line.trim().is_empty() && !line.starts_with('#') {
            panic!(
                "{}: case '{}': cannot read the line {line:?}",
                path.display(),
                case.name
            );
        }
    }
    TestFile { header, cases }
}

/// The graph named by a file's header, with its setup run.
fn open_graph(path: &Path, header: &[String], scratch: &Path) -> Graph {
    fn directive<'h>(header: &'h [String], name: &'h str) -> impl Iterator<Item = &'h str> {
        header
            .iter()
            .filter_map(move |line| line.strip_prefix(name).map(str::trim))
    }
    let kind = directive(header, "-GRAPH ").next().unwrap_or_else(|| {
        panic!(
            "{}: no -GRAPH line (golden, writable or code)",
            path.display()
        )
    });
    let mut graph = match kind {
        "golden" => Graph::Golden(Box::new(support::golden(scratch))),
        "code" => Graph::Golden(Box::new(code_graph(path, header, scratch))),
        "writable" => Graph::Writable(Box::new(
            WritableDatabase::create(&scratch.join("graph")).expect("create a writable graph"),
        )),
        other => panic!("{}: unknown graph '{other}'", path.display()),
    };
    for statement in directive(header, "-SETUP ") {
        if let Err(error) = graph.run(statement) {
            panic!("{}: setup {statement}: {error}", path.display());
        }
    }
    graph
}

/// The code graph Batho builds from the files of the header: `-FILE path`, then the
/// file's lines, each written after a `|` (so that a `#define` or a `-` in C is not read
/// as a directive of the test file).
fn code_graph(path: &Path, header: &[String], scratch: &Path) -> Database {
    let root = scratch.join("repo");
    let mut files: Vec<(String, String)> = Vec::new();
    for line in header {
        if let Some(name) = line.strip_prefix("-FILE ") {
            files.push((name.trim().to_string(), String::new()));
        } else if let Some(code) = line.strip_prefix('|') {
            let Some((_, text)) = files.last_mut() else {
                panic!("{}: a `|` line before any -FILE", path.display());
            };
            text.push_str(code);
            text.push('\n');
        }
    }
    assert!(
        !files.is_empty(),
        "{}: -GRAPH code without -FILE",
        path.display()
    );
    for (name, text) in &files {
        let file = root.join(name);
        std::fs::create_dir_all(file.parent().expect("a file has a folder")).expect("mkdir");
        std::fs::write(&file, text).expect("write a fixture file");
    }
    build(&root, &BuildOptions::default(), &|_| {})
        .unwrap_or_else(|error| panic!("{}: build: {error}", path.display()));
    Database::open(&root).expect("open the built graph")
}

/// What a case gives now, in the expected block's shape.
fn answer(graph: &mut Graph, case: &Case) -> Vec<String> {
    match graph.run(&case.query) {
        Ok(result) => {
            let mut rows: Vec<String> = result
                .rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" | ")
                })
                .collect();
            if case.unordered {
                rows.sort();
            }
            rows
        }
        Err(error) => vec!["error".into(), error.to_string().replace('\n', " ")],
    }
}

fn render(file: &TestFile, answers: &[Vec<String>]) -> String {
    let mut out: String = file.header.iter().map(|line| format!("{line}\n")).collect();
    for (case, rows) in file.cases.iter().zip(answers) {
        out.push_str(&format!("-CASE {}\n-QUERY {}\n", case.name, case.query));
        if case.unordered {
            out.push_str("-UNORDERED\n");
        }
        match rows.first().map(String::as_str) {
            Some("error") => out.push_str(&format!("---- error\n{}\n", rows[1])),
            _ => {
                out.push_str(&format!("---- {}\n", rows.len()));
                for row in rows {
                    out.push_str(row);
                    out.push('\n');
                }
            }
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

fn test_files() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "test"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_case_gives_its_expected_rows() {
    let update = std::env::var_os("BATHO_UPDATE_EXPECT").is_some();
    let files = test_files();
    assert!(files.len() >= 3, "found only {} .test files", files.len());
    let mut failures = Vec::new();
    let mut cases = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read a .test file");
        let file = parse(&path, &text);
        let scratch = tempfile::tempdir().expect("tempdir");
        let mut graph = open_graph(&path, &file.header, scratch.path());
        let answers: Vec<Vec<String>> = file
            .cases
            .iter()
            .map(|case| answer(&mut graph, case))
            .collect();
        cases += file.cases.len();
        if update {
            std::fs::write(&path, render(&file, &answers)).expect("update a .test file");
            continue;
        }
        for (case, rows) in file.cases.iter().zip(&answers) {
            if &case.expected != rows {
                failures.push(format!(
                    "{} — {}\n  {}\n  expected: {:?}\n  got:      {:?}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    case.name,
                    case.query,
                    case.expected,
                    rows
                ));
            }
        }
    }
    assert!(cases > 0, "no cases");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ (BATHO_UPDATE_EXPECT=1 rewrites the files):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
