//! Embedding Batho: open an artifact and run a parameterised BQL query in-process.
//!
//! Usage:
//!     cargo run -p batho-engine --example embed -- <repo-or-.batho-dir> [NAME] [QUERY]
//!
//! With only a path, prints the callers of the function named NAME (default `main`)
//! using the query `MATCH (c)-[:CALLS]->(f:Function {name: $name}) RETURN c.id, c.file`,
//! where `$name` is passed as a parameter. A third argument replaces the query (it may
//! use `$name`). Results are printed as a table; a query error exits with status 1 and
//! an artifact problem with status 2, as the CLI does.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use batho_engine::query::render::{Format, render};
use batho_engine::query::{Database, Value};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: embed <repo-or-.batho-dir> [NAME] [QUERY]");
        return ExitCode::from(2);
    };
    let name = args.next().unwrap_or_else(|| "main".to_string());
    let query = args.next().unwrap_or_else(|| {
        "MATCH (c)-[:CALLS]->(f:Function {name: $name}) RETURN c.id, c.file".to_string()
    });
    let db = match Database::open(&PathBuf::from(path)) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut params = BTreeMap::new();
    params.insert("name".to_string(), Value::from(name));
    // A prepared statement compiles once and can run again with other parameters.
    let result = db.prepare(&query).and_then(|p| p.execute(&params));
    match result {
        Ok(res) => {
            print!("{}", render(&res, &db.graph(), Format::Table));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(if e.is_query_error() { 1 } else { 2 })
        }
    }
}
