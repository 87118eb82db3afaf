//! SIGKILL `batho mcp` at random moments while a client streams `ctx_tree_note` and
//! `ctx_tree_read` calls into the session graph. After each kill the graph must open,
//! hold every note and read the server acknowledged (same text, same chunk count), and
//! hold no read in part: a read's parent and all its chunks, or none of them. The next
//! server starts a new session on the same graph, so later rounds also check that a graph
//! that was killed once takes writes again. `BATHO_CRASH_KILLS` sets the number of kills
//! (default 12).

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use batho_engine::query::{Value, WritableDatabase};
use common::Rng;
use serde_json::json;

/// What one request asked for, by its JSON-RPC id.
enum Sent {
    Note(String),
    Read(String),
}

/// The JSON-RPC frames of one round: the handshake, then `count` calls from `first`
/// (every fourth a read of a file of its own), and what each call asked.
fn script(first: u64, count: u64) -> (String, BTreeMap<u64, Sent>) {
    let mut frames = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "crash", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    let mut sent = BTreeMap::new();
    for seq in first..first + count {
        let (arguments, name, what) = if seq % 4 == 3 {
            let path = format!("crash/file{seq}.c");
            (
                json!({"path": path}),
                "ctx_tree_read",
                Sent::Read(path.clone()),
            )
        } else {
            let content = format!("crash note {seq}: lock order between a and b");
            (
                json!({"content": content}),
                "ctx_tree_note",
                Sent::Note(content.clone()),
            )
        };
        frames.push(json!({"jsonrpc": "2.0", "id": seq, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
        sent.insert(seq, what);
    }
    let text = frames.iter().map(|frame| format!("{frame}\n")).collect();
    (text, sent)
}

/// A C file of a few functions, distinct per `seq`, so each read writes several chunks.
fn write_source(root: &Path, seq: u64) {
    let mut text = String::new();
    for function in 0..6 {
        text.push_str(&format!(
            "/* file {seq}, function {function} */\nint f{seq}_{function}(int x) {{\n"
        ));
        for line in 0..30 {
            text.push_str(&format!("    x = x * {line} + {function};\n"));
        }
        text.push_str("    return x;\n}\n\n");
    }
    std::fs::write(root.join(format!("crash/file{seq}.c")), text).unwrap();
}

/// Runs the server on `input`, kills it after `delay`; the acknowledged node id per
/// request id.
fn run_and_kill(home: &Path, root: &Path, input: String, delay: Duration) -> BTreeMap<u64, String> {
    let mut child = common::batho()
        .args(["mcp", "--no-watch", "--root"])
        .arg(root)
        .env("BATHO_HOME", home)
        .env_remove("BATHO_MCP_TOOLSETS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start batho mcp");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
        // Keep stdin open: closing it would end the server before the kill.
        std::thread::sleep(Duration::from_secs(30));
    });
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut acknowledged = BTreeMap::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let id = message["id"].as_u64();
            let node = message["result"]["structuredContent"]["nodeId"].as_str();
            if let (Some(id), Some(node)) = (id, node)
                && message["result"]["isError"] != json!(true)
            {
                acknowledged.insert(id, node.to_string());
            }
        }
        acknowledged
    });
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
    drop(writer);
    reader.join().unwrap()
}

fn rows(db: &mut WritableDatabase, query: &str) -> Vec<Vec<Value>> {
    db.execute(query, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .rows
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

/// The one session graph folder under `home`.
fn graph_dir(home: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(home.join("ctx"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

#[test]
fn killed_servers_lose_no_acknowledged_node_and_leave_no_read_in_part() {
    let kills: u64 = std::env::var("BATHO_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let (_tmp, root) = common::copy_repo("examples/demo");
    std::fs::create_dir_all(root.join("crash")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut next, mut acknowledged_total, mut reads_checked) = (1u64, 0, 0);
    for kill in 0..kills {
        let count = 400;
        for seq in next..next + count {
            if seq % 4 == 3 {
                write_source(&root, seq);
            }
        }
        let (input, sent) = script(next, count);
        next += count;
        let delay = Duration::from_millis(150 + rng.next() % 400);
        let acknowledged = run_and_kill(home.path(), &root, input, delay);
        acknowledged_total += acknowledged.len();

        let mut db = WritableDatabase::open(&graph_dir(home.path())).unwrap_or_else(|e| {
            panic!("kill {kill} after {delay:?}: the graph does not open: {e}")
        });
        for (seq, node) in &acknowledged {
            let found = rows(
                &mut db,
                &format!("MATCH (n:Ctx {{id: '{node}'}}) RETURN n.text, n.path, n.chunks"),
            );
            assert_eq!(
                found.len(),
                1,
                "kill {kill} after {delay:?}: {node} (request {seq}) lost"
            );
            match &sent[seq] {
                Sent::Note(content) => assert_eq!(&text(&found[0][0]), content),
                Sent::Read(path) => {
                    assert_eq!(&text(&found[0][1]), path);
                    reads_checked += 1;
                }
            }
        }
        // Every read in the graph, acknowledged or not, has all its chunks.
        let reads = rows(
            &mut db,
            "MATCH (read:Ctx {role: 'file'}) OPTIONAL MATCH (chunk:Ctx)-[:derived_from]->(read) \
             RETURN read.id, read.chunks, count(chunk)",
        );
        for read in reads {
            assert_eq!(
                read[1], read[2],
                "kill {kill} after {delay:?}: read {} is in the graph in part",
                read[0]
            );
        }
    }
    assert!(
        acknowledged_total > 0,
        "no call was acknowledged before a kill: the delays are too short to test anything"
    );
    eprintln!(
        "{kills} kills: {acknowledged_total} calls acknowledged ({reads_checked} reads), none lost"
    );
}
