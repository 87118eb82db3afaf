//! In-process BQL latency for one exact query text, from text to rows, measured twice:
//! plan cache warm (the same text each run) and cold (a distinct trailing comment makes
//! every text new, so each run parses, checks and plans: the counterpart of another
//! engine's `execute(text)` without a prepared statement).
//!
//! Usage: `bql_latency [--runs N] REPO QUERY_FILE [NAME=VALUE]...` (values are strings).
//! Prints: `rows=R warm_median_us=.. warm_p90_us=.. cold_median_us=.. cold_p90_us=..`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use batho_engine::query::{Database, Value};

fn main() {
    let mut runs = 2000usize;
    let mut positional = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--runs" {
            runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N");
        } else {
            positional.push(a);
        }
    }
    let [repo, file, params @ ..] = positional.as_slice() else {
        eprintln!("usage: bql_latency [--runs N] REPO QUERY_FILE [NAME=VALUE]...");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(file).expect("read the query file");
    let text = text.trim().trim_end_matches(';').to_string();
    let params: BTreeMap<String, Value> = params
        .iter()
        .map(|p| {
            let (k, v) = p.split_once('=').expect("NAME=VALUE");
            (k.to_string(), Value::from(v))
        })
        .collect();
    let db = Database::open(&PathBuf::from(repo)).expect("open the artifact");
    let rows = db.query(&text, &params).expect("query").rows.len();
    let time = |t: &str| {
        let start = Instant::now();
        std::hint::black_box(db.query(t, &params).expect("query"));
        start.elapsed()
    };
    let mut warm: Vec<Duration> = (0..runs).map(|_| time(&text)).collect();
    let texts: Vec<String> = (0..runs).map(|i| format!("{text} // run {i}")).collect();
    let mut cold: Vec<Duration> = texts.iter().map(|t| time(t)).collect();
    warm.sort();
    cold.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "rows={rows} warm_median_us={:.1} warm_p90_us={:.1} cold_median_us={:.1} cold_p90_us={:.1}",
        us(warm[runs / 2]),
        us(warm[runs * 9 / 10]),
        us(cold[runs / 2]),
        us(cold[runs * 9 / 10]),
    );
}
