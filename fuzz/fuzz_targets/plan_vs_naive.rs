//! Plan-versus-naive equality: any BQL text, run on a small fixed graph by the optimised
//! physical plan (indexes, pushdown, top-k, BFS with visited sets) and by the naive
//! equivalent of every operator, must give the same rows.
//!
//! What may legitimately differ is left out of the comparison: row order (unless the
//! query fixes it we compare sorted rows), which rows a LIMIT/SKIP keeps among ties (only
//! the count is compared), the order inside `collect()` lists, which of several equally
//! short paths `shortestPath` picks, float rounding of sums in another order, and
//! evaluation errors or bounds hit on rows one plan never evaluates.

#![no_main]

#[path = "../../engine/tests/query_support.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use batho_engine::query::{Database, Limits, QueryError, QueryOptions, QueryResult, Value};
use libfuzzer_sys::fuzz_target;

fn db() -> &'static Database {
    static DB: OnceLock<(tempfile::TempDir, Database)> = OnceLock::new();
    &DB.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = support::golden(dir.path());
        (dir, db)
    })
    .1
}

fn options(optimize: bool) -> QueryOptions {
    QueryOptions {
        limits: Limits {
            max_rows: 20_000,
            max_work: 2_000_000,
            max_intermediate_rows: 200_000,
            max_held_bytes: 256 << 20,
            timeout: Some(Duration::from_secs(2)),
        },
        optimize,
        ..QueryOptions::default()
    }
}

/// How much of a result the two plans must agree on.
struct Compare {
    only_count: bool,
    sort_lists: bool,
    path_lengths_only: bool,
}

fn canon(v: &Value, c: &Compare) -> String {
    match v {
        Value::Float(f) => format!("F{:.6e}", f),
        Value::List(items) => {
            let mut parts: Vec<String> = items.iter().map(|x| canon(x, c)).collect();
            if c.sort_lists {
                parts.sort();
            }
            format!("[{}]", parts.join(","))
        }
        Value::Map(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{k}:{}", canon(x, c)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Path { rels, .. } if c.path_lengths_only => format!("P{}", rels.len()),
        other => format!("{other:?}"),
    }
}

fn rows(r: &QueryResult, c: &Compare) -> Vec<String> {
    let mut out: Vec<String> = r
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| canon(v, c))
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect();
    out.sort();
    out
}

fn skippable(e: &QueryError) -> bool {
    !matches!(e, QueryError::Compile { .. })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.len() > 4096 {
        return;
    }
    let lower = text.to_ascii_lowercase();
    // Anything that hides the rows (EXPLAIN/PROFILE print plans that differ by design) or
    // depends on the clock and the artifact's metadata is not compared.
    if lower.contains("explain") || lower.contains("profile") || lower.contains("db.runs") {
        return;
    }
    let c = Compare {
        only_count: lower.contains("limit") || lower.contains("skip"),
        sort_lists: lower.contains("collect"),
        path_lengths_only: lower.contains("shortestpath") && !lower.contains("allshortestpaths"),
    };
    let params = BTreeMap::from([
        ("name".to_string(), Value::from("helper")),
        ("n".to_string(), Value::Int(2)),
    ]);
    let fast = db().query_with(text, &params, &options(true));
    let slow = db().query_with(text, &params, &options(false));
    match (fast, slow) {
        (Ok(a), Ok(b)) => {
            if a.truncated.is_some() || b.truncated.is_some() {
                return;
            }
            assert_eq!(a.columns, b.columns, "columns of {text:?}");
            if c.only_count || c.path_lengths_only && lower.contains("nodes(") {
                assert_eq!(a.rows.len(), b.rows.len(), "row count of {text:?}");
            } else {
                assert_eq!(rows(&a, &c), rows(&b, &c), "rows of {text:?}");
            }
        }
        (Err(a), Err(b)) => {
            if !skippable(&a) || !skippable(&b) {
                assert_eq!(a.to_string(), b.to_string(), "compile errors of {text:?}");
            }
        }
        (Ok(_), Err(e)) | (Err(e), Ok(_)) => {
            assert!(
                skippable(&e),
                "only one plan failed to compile {text:?}: {e}"
            );
        }
    }
});
