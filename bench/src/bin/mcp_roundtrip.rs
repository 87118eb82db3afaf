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

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").expect("write to the server");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            let n = self
                .stdout
                .read_line(&mut line)
                .expect("read from the server");
            assert!(n > 0, "the server closed its output");
            let v: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if v["id"] == json!(id) {
                return v["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_ne!(r["isError"], json!(true), "{tool} failed: {r}");
        r
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    ms(times[(times.len() * p / 100).min(times.len() - 1)])
}

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
    let mut child = Command::new(&batho)
        .args(["mcp", "--no-watch", "--root", repo])
        .env("BATHO_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start batho mcp");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut c = Client {
        child,
        stdin,
        stdout,
        next: 1,
    };
    c.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "mcp_roundtrip", "version": "0"}}),
    );
    writeln!(
        c.stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write");
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
