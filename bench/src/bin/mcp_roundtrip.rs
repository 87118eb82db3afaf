//! MCP round trips measured from the client: starts `batho mcp --root REPO`, times server
//! start to the first tool answer, then many `get_entity`, incoming-callers
//! `graph_query`, Astria `explain` and `query_graph` (budget 2000) calls over stdio, and
//! the size of the default `graph_overview`.
//!
//! Usage: `mcp_roundtrip [--batho PATH] [--calls N] REPO NAME`
//! (NAME: a function defined in REPO, e.g. `luaD_call` or `mutex_lock`).
//! Prints one line: `start_to_first_answer_ms get_entity_median_ms get_entity_p90_ms
//! graph_query_median_ms graph_query_p90_ms explain_median_ms explain_p90_ms
//! query_graph_median_ms query_graph_p90_ms callers overview_tokens`.

use std::path::PathBuf;
use std::time::Instant;

use batho_bench::mcp_client::{McpClient, ms, percentile};
use serde_json::json;

fn main() {
    let mut batho = PathBuf::from("target/release/batho");
    let mut calls = 200usize;
    let mut positional = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--batho" => batho = args.next().expect("--batho PATH").into(),
            "--calls" => calls = args.next().and_then(|n| n.parse().ok()).expect("--calls N"),
            _ => positional.push(a),
        }
    }
    let [repo, name] = positional.as_slice() else {
        eprintln!("usage: mcp_roundtrip [--batho PATH] [--calls N] REPO NAME");
        std::process::exit(2);
    };
    let home = std::env::temp_dir().join(format!("mcp-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("BATHO_HOME");

    let started = Instant::now();
    let mut c = McpClient::start(&batho, &["--no-watch", "--root", repo], &home);
    let anchored = format!("^{}$", regex_escape(name));
    let callers_args = json!({"name_pattern": anchored, "relation_types": ["CALLS"],
                              "relation_direction": "incoming", "entity_types": ["Function"]});
    let first = c.call("graph_query", callers_args.clone());
    let start_ms = ms(started.elapsed());
    let id = first["structuredContent"]["nodes"][0]["id"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no function {name} with callers: {first}"));
    let callers = first["structuredContent"]["edges"]
        .as_array()
        .map_or(0, Vec::len);

    let mut entity = Vec::with_capacity(calls);
    let mut query = Vec::with_capacity(calls);
    let mut explain = Vec::with_capacity(calls);
    let mut ask = Vec::with_capacity(calls);
    let question = json!({"question": format!("where is {name} used"), "budget": 2000});
    for _ in 0..calls {
        let t = Instant::now();
        c.call("get_entity", json!({"entity_id": id}));
        entity.push(t.elapsed());
        let t = Instant::now();
        c.call("graph_query", callers_args.clone());
        query.push(t.elapsed());
        let t = Instant::now();
        c.call("explain", json!({"node": id}));
        explain.push(t.elapsed());
        let t = Instant::now();
        c.call("query_graph", question.clone());
        ask.push(t.elapsed());
    }
    let overview = c.call("graph_overview", json!({}));
    let tokens = overview["structuredContent"]["meta"]["tokens_used"].clone();
    println!(
        "start_to_first_answer_ms={start_ms:.1} get_entity_median_ms={:.3} get_entity_p90_ms={:.3} graph_query_median_ms={:.3} graph_query_p90_ms={:.3} explain_median_ms={:.3} explain_p90_ms={:.3} query_graph_median_ms={:.3} query_graph_p90_ms={:.3} callers={callers} overview_tokens={tokens}",
        percentile(&mut entity, 50),
        percentile(&mut entity, 90),
        percentile(&mut query, 50),
        percentile(&mut query, 90),
        percentile(&mut explain, 50),
        percentile(&mut explain, 90),
        percentile(&mut ask, 50),
        percentile(&mut ask, 90),
    );
    drop(c);
    let _ = std::fs::remove_dir_all(&home);
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|ch| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(ch);
            special.then_some('\\').into_iter().chain([ch])
        })
        .collect()
}
