//! The ctx-tree tools through the real `batho mcp` and an MCP client: the seed's return
//! keys, the read cache and supersedes, grep globs and case, compose within its budget
//! with an honest manifest, search filters, walks, errors, the `ctx` toolset, and notes
//! sent at once (group commit) all answered and all in the graph.

mod common;
mod mcp_client;

use mcp_client::Client;
use serde_json::{Value, json};

/// A copy of examples/demo served as `--root`, and the client.
fn session() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
    Client,
) {
    let (tmp, repo) = common::copy_repo("examples/demo");
    let home = tempfile::tempdir().unwrap();
    let client = Client::start(home.path(), &["--root", repo.to_str().unwrap()], &[]);
    (tmp, home, repo, client)
}

fn ids(results: &Value) -> Vec<String> {
    results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_ctx_toolset_lists_the_ctx_tools() {
    let home = tempfile::tempdir().unwrap();
    let mut client = Client::start(home.path(), &["--toolsets", "ctx"], &[]);
    let listed = client.request("tools/list", json!({}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().all(|name| name.starts_with("ctx_tree_")),
        "{names:?}"
    );
    for expected in [
        "ctx_tree_read",
        "ctx_tree_grep",
        "ctx_tree_compose",
        "ctx_tree_search",
        "ctx_tree_neighbors",
        "ctx_tree_path_to_root",
        "ctx_tree_recent",
        "ctx_tree_note",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}

#[test]
fn notes_recent_and_search_keep_the_seed_shapes() {
    let (_tmp, _home, _repo, mut c) = session();
    let (_, first) = c.ok(
        "ctx_tree_note",
        json!({"content": "Hash tables grow by doubling\nmore"}),
    );
    assert_eq!(first["title"], "Hash tables grow by doubling");
    let first_id = first["nodeId"].as_str().unwrap().to_string();
    assert!(first_id.starts_with('n'));
    assert!(first["meta"]["query"].is_string() || first["meta"]["query"].is_array());
    let (_, second) = c.ok(
        "ctx_tree_note",
        json!({"content": "The lexer skips comments", "title": "lexer"}),
    );
    assert_eq!(second["title"], "lexer");
    let (text, recent) = c.ok("ctx_tree_recent", json!({}));
    assert_eq!(
        ids(&recent),
        [second["nodeId"].as_str().unwrap(), &first_id]
    );
    let item = &recent["results"][0];
    for key in ["id", "kind", "created_at", "excerpt"] {
        assert!(!item[key].is_null(), "{key} missing: {item}");
    }
    assert!(
        text.contains("lexer") || text.contains("The lexer"),
        "{text}"
    );
    let (_, hits) = c.ok("ctx_tree_search", json!({"query": "hash tables"}));
    assert_eq!(ids(&hits), [first_id.as_str()]);
    for key in ["id", "kind", "score", "excerpt"] {
        assert!(!hits["results"][0][key].is_null(), "{key} missing: {hits}");
    }
    let (_, none) = c.ok(
        "ctx_tree_search",
        json!({"query": "hash", "filters": {"kind": ["file_chunk"]}}),
    );
    assert!(ids(&none).is_empty());
    let (_, later) = c.ok(
        "ctx_tree_search",
        json!({"query": "hash", "filters": {"since": 4102444800000i64}}),
    );
    assert!(ids(&later).is_empty());
    let (message, _) = c.err(
        "ctx_tree_search",
        json!({"query": "x", "filters": {"kind": ["notes"]}}),
    );
    assert!(message.contains("unknown kind 'notes'"), "{message}");
    let (message, _) = c.err("ctx_tree_search", json!({"query": "x", "mode": "semantic"}));
    assert!(message.contains("only 'keyword'"), "{message}");
    let (message, _) = c.err("ctx_tree_note", json!({"content": "  "}));
    assert!(message.contains("needs some content"), "{message}");
}

#[test]
fn reads_grep_walks_and_compose_work_together() {
    let (_tmp, _home, repo, mut c) = session();
    let file = "src/table.c";
    assert!(repo.join(file).exists());
    let (_, read) = c.ok("ctx_tree_read", json!({"path": file, "budget_tokens": 200}));
    for key in ["nodeId", "path", "cached", "chunks", "hint"] {
        assert!(!read[key].is_null(), "{key} missing: {read}");
    }
    assert_eq!(read["cached"], false);
    let node = read["nodeId"].as_str().unwrap().to_string();
    let (_, again) = c.ok("ctx_tree_read", json!({"path": file, "budget_tokens": 200}));
    assert_eq!(again["cached"], true);
    assert_eq!(again["nodeId"], read["nodeId"]);
    let (_, grep) = c.ok(
        "ctx_tree_grep",
        json!({"pattern": "INCLUDE", "case_insensitive": true, "file_glob": "*.c"}),
    );
    assert!(grep["count"].as_u64().unwrap() >= 1, "{grep}");
    for entry in grep["matches"].as_array().unwrap() {
        let entry = entry.as_str().unwrap();
        assert!(entry.starts_with('n') && entry.contains(".c:"), "{entry}");
    }
    let (_, around) = c.ok(
        "ctx_tree_neighbors",
        json!({"node_id": node, "edge_kinds": ["derived_from"]}),
    );
    let chunks = around["results"].as_array().unwrap();
    assert_eq!(chunks.len() as u64, read["chunks"].as_u64().unwrap());
    assert_eq!(chunks[0]["edge_kind"], "derived_from");
    assert_eq!(chunks[0]["distance"], 1);
    let chunk = chunks[0]["id"].as_str().unwrap();
    let (_, chain) = c.ok("ctx_tree_path_to_root", json!({"node_id": chunk}));
    let kinds: Vec<&str> = chain["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["file_chunk", "file_chunk", "session"]);
    let (text, composed) = c.ok(
        "ctx_tree_compose",
        json!({"node_ids": [node], "budget_tokens": 150, "query": "main"}),
    );
    let content = composed["content"].as_str().unwrap();
    assert!(batho_mcp::tokens::count(content) <= 150);
    assert_eq!(
        composed["meta"]["o200k_tokens"],
        batho_mcp::tokens::count(content)
    );
    let manifest = &composed["manifest"];
    assert!(
        !manifest["included"].as_array().unwrap().is_empty(),
        "{composed}"
    );
    assert!(text.contains("manifest: {"), "{text}");
    let (message, _) = c.err("ctx_tree_path_to_root", json!({"node_id": "n999999"}));
    assert!(message.contains("node not found"), "{message}");
    let (message, _) = c.err("ctx_tree_read", json!({"path": "/etc/hostname"}));
    assert!(message.contains("outside the project root"), "{message}");
    let (message, _) = c.err("ctx_tree_neighbors", json!({"node_id": node, "depth": 9}));
    assert!(message.contains("between 1 and 5"), "{message}");
    let (message, _) = c.err("ctx_tree_grep", json!({"pattern": "(unclosed"}));
    assert!(message.contains("invalid pattern"), "{message}");
}

/// A one-page HTTP server on 127.0.0.1; returns its URL. It answers every request with the
/// same page and counts the requests.
fn page_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "<html><head><title>Lock guide</title>\
                <meta name=\"description\" content=\"How the locks work\"></head>\
                <body><script>var secret = 1;</script><h1>Locks</h1>\
                <p>Take the table lock before the bucket lock.</p><h2>Order</h2>\
                <p>Never the other way round.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{address}/guide"), hits)
}

#[test]
fn browse_is_guarded_cached_and_searchable() {
    let (url, hits) = page_server();
    let (_tmp, repo) = common::copy_repo("examples/demo");
    let home = tempfile::tempdir().unwrap();
    let mut guarded = Client::start(home.path(), &["--root", repo.to_str().unwrap()], &[]);
    let (message, _) = guarded.err("ctx_tree_browse", json!({"url": url}));
    assert!(message.contains("loopback"), "{message}");
    assert!(message.contains("--allow-private-urls"), "{message}");
    let (message, _) = guarded.err("ctx_tree_browse", json!({"url": "file:///etc/passwd"}));
    assert!(message.contains("file"), "{message}");
    drop(guarded);
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing was fetched"
    );
    let mut c = Client::start(
        home.path(),
        &["--root", repo.to_str().unwrap(), "--allow-private-urls"],
        &[],
    );
    let (_, page) = c.ok("ctx_tree_browse", json!({"url": url}));
    for key in [
        "nodeId",
        "url",
        "title",
        "description",
        "headings",
        "cached",
        "truncated",
        "content",
    ] {
        assert!(!page[key].is_null(), "{key} missing: {page}");
    }
    assert_eq!(page["title"], "Lock guide");
    assert_eq!(page["description"], "How the locks work");
    assert_eq!(page["headings"], json!(["Locks", "Order"]));
    assert_eq!(page["cached"], false);
    let content = page["content"].as_str().unwrap();
    assert!(
        content.contains("table lock before the bucket lock"),
        "{content}"
    );
    assert!(!content.contains("secret"), "{content}");
    let (_, again) = c.ok("ctx_tree_browse", json!({"url": url, "budget_tokens": 5}));
    assert_eq!(again["cached"], true);
    assert_eq!(again["nodeId"], page["nodeId"]);
    assert_eq!(again["title"], "Lock guide");
    assert_eq!(again["truncated"], true);
    assert!(batho_mcp::tokens::count(again["content"].as_str().unwrap()) <= 5);
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the cache answered"
    );
    let (_, forced) = c.ok("ctx_tree_browse", json!({"url": url, "force": true}));
    assert_eq!(forced["cached"], false);
    assert_ne!(forced["nodeId"], page["nodeId"]);
    let (_, found) = c.ok("ctx_tree_search", json!({"query": "bucket lock"}));
    assert_eq!(
        ids(&found),
        [forced["nodeId"].as_str().unwrap()],
        "the superseded page is left out"
    );
}

#[test]
fn monitor_is_gated_times_out_and_redacts() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    let home = tempfile::tempdir().unwrap();
    let mut plain = Client::start(home.path(), &["--root", repo.to_str().unwrap()], &[]);
    let (message, _) = plain.err("ctx_tree_monitor", json!({"command": "true"}));
    assert!(message.contains("Unknown or disabled tool"), "{message}");
    drop(plain);
    let mut c = Client::start(
        home.path(),
        &[
            "--root",
            repo.to_str().unwrap(),
            "--enable-tool",
            "ctx_tree_monitor",
        ],
        &[],
    );
    // A fake token, built at run time so this file holds none.
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
    let (_, ran) = c.ok(
        "ctx_tree_monitor",
        json!({"command": format!("echo start; echo GITHUB_TOKEN={token}; ls src >&2; exit 3")}),
    );
    for key in [
        "nodeId",
        "command",
        "exit_code",
        "lines_captured",
        "cached",
        "preview",
        "hint",
    ] {
        assert!(!ran[key].is_null(), "{key} missing: {ran}");
    }
    assert_eq!(ran["exit_code"], 3);
    assert_eq!(ran["cached"], false);
    let everything = ran.to_string();
    assert!(
        !everything.contains(&token),
        "a secret leaked: {everything}"
    );
    assert!(
        ran["preview"].as_str().unwrap().contains("table.c"),
        "{ran}"
    );
    let node = ran["nodeId"].as_str().unwrap();
    let (_, composed) = c.ok(
        "ctx_tree_compose",
        json!({"node_ids": [node], "budget_tokens": 500}),
    );
    let content = composed["content"].as_str().unwrap();
    assert!(content.contains("[REDACTED:"), "{content}");
    assert!(!content.contains(&token));
    let (_, hits) = c.ok(
        "ctx_tree_search",
        json!({"query": "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}),
    );
    assert!(ids(&hits).is_empty(), "the secret is not searchable either");
    let (_, again) = c.ok(
        "ctx_tree_monitor",
        json!({"command": format!("echo start; echo GITHUB_TOKEN={token}; ls src >&2; exit 3")}),
    );
    assert_eq!(again["cached"], true);
    assert_eq!(again["nodeId"], ran["nodeId"]);
    let started = std::time::Instant::now();
    let (_, slow) = c.ok(
        "ctx_tree_monitor",
        json!({"command": "sleep 30", "timeout_ms": 300}),
    );
    assert_eq!(slow["timed_out"], true);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let (message, _) = c.err(
        "ctx_tree_monitor",
        json!({"command": "pwd", "cwd": "../.."}),
    );
    assert!(
        message.contains("outside the project root") || message.contains("not a folder"),
        "{message}"
    );
    let (_, here) = c.ok("ctx_tree_monitor", json!({"command": "pwd", "cwd": "src"}));
    assert!(
        here["preview"]
            .as_str()
            .unwrap()
            .trim_end()
            .ends_with("/src"),
        "{here}"
    );
}

#[test]
fn the_size_cap_prunes_the_oldest_text_and_says_so() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    let home = tempfile::tempdir().unwrap();
    let mut client = Client::start(
        home.path(),
        &[
            "--root",
            repo.to_str().unwrap(),
            "--ctx-max-text-chars",
            "2000",
        ],
        &[],
    );
    let mut notes = Vec::new();
    let mut reports = Vec::new();
    for index in 0..12 {
        let content = format!("note {index}: {}", "lock order ".repeat(27));
        let answer = client.call("ctx_tree_note", json!({"content": content}));
        let structured = &answer["structuredContent"];
        notes.push(structured["nodeId"].as_str().unwrap().to_string());
        if let Some(report) = structured["meta"].get("pruned_to_cap") {
            reports.push(report.clone());
        }
    }
    // 12 notes of about 310 characters: the cap is crossed at the seventh, and each
    // time the oldest go until 90 % of it is left.
    assert!(!reports.is_empty(), "no pruning reported");
    for report in &reports {
        assert_eq!(report["cap_chars"], json!(2000));
        assert!(report["pruned"].as_i64().unwrap() >= 1, "{report}");
        assert!(report["text_chars"].as_i64().unwrap() > 0, "{report}");
    }
    let (_, recent) = client.ok("ctx_tree_recent", json!({"limit": 50}));
    let listed = ids(&recent);
    assert!(listed.contains(notes.last().unwrap()), "{listed:?}");
    assert!(
        !listed.contains(&notes[0]),
        "the oldest note was not pruned: {listed:?}"
    );
    // Pruned, not lost: the record stays, with its status.
    let (_, pruned) = client.ok(
        "ctx_tree_recent",
        json!({"limit": 50, "filters": {"status": ["pruned"]}}),
    );
    assert!(ids(&pruned).contains(&notes[0]), "{pruned}");
    let kept: usize = listed.len();
    assert!(
        kept * 310 <= 2000 + 310,
        "{kept} notes kept under a 2,000-character cap"
    );
}

#[test]
fn with_a_code_graph_compose_pulls_the_callers_the_session_read() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();
    let mut client = Client::start(home.path(), &["--root", repo.to_str().unwrap()], &[]);
    // shell.cpp's PutCommand::run calls table.c's table_put.
    let (_, shell) = client.ok("ctx_tree_read", json!({"path": "src/shell.cpp"}));
    let (_, table) = client.ok("ctx_tree_read", json!({"path": "src/table.c"}));
    let (_, around) = client.ok(
        "ctx_tree_neighbors",
        json!({"node_id": table["nodeId"], "depth": 4}),
    );
    let reached: Vec<&str> = around["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect();
    assert!(
        around["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["kind"].is_string()),
        "entity nodes are walked through, never listed: {around}"
    );
    assert!(!reached.is_empty());
    let (block, composed) = client.ok(
        "ctx_tree_compose",
        json!({"node_ids": [table["nodeId"]], "budget_tokens": 20000, "depth": 1}),
    );
    assert!(block.contains("src/table.c"), "{block}");
    assert!(
        block.contains("src/shell.cpp") && block.contains("PutCommand::run"),
        "the caller's chunk is not pulled in: {composed}"
    );
    // And the other way: from the caller, the callee's chunk.
    let (_, plain) = client.ok(
        "ctx_tree_compose",
        json!({"node_ids": [shell["nodeId"]], "budget_tokens": 20000, "depth": 1}),
    );
    assert!(
        plain["content"].as_str().unwrap().contains("src/table.c"),
        "{plain}"
    );
}

#[test]
fn notes_sent_at_once_are_all_answered_and_all_in_the_graph() {
    const NOTES: u64 = 24;
    let (_tmp, home, _repo, mut c) = session();
    // Every request before any answer: the server runs them concurrently, so their
    // writes queue on the session graph and share fsyncs.
    for seq in 0..NOTES {
        c.send(
            json!({"jsonrpc": "2.0", "id": 1000 + seq, "method": "tools/call",
            "params": {"name": "ctx_tree_note",
                       "arguments": {"content": format!("concurrent note {seq}")}}}),
        );
    }
    let mut acknowledged = std::collections::BTreeMap::new();
    while acknowledged.len() < NOTES as usize {
        let message = c.next_message();
        let Some(seq) = message["id"].as_u64().and_then(|id| id.checked_sub(1000)) else {
            continue;
        };
        let result = &message["result"];
        assert_ne!(result["isError"], json!(true), "note {seq}: {message}");
        let node = result["structuredContent"]["nodeId"].as_str().unwrap();
        acknowledged.insert(seq, node.to_string());
    }
    // Killed, not shut down: an acknowledged note must already be in the log.
    drop(c);
    let graph = std::fs::read_dir(home.path().join("ctx"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut db = batho_engine::query::WritableDatabase::open(&graph).unwrap();
    for (seq, node) in &acknowledged {
        let rows = db
            .execute(
                &format!("MATCH (n:Ctx {{id: '{node}'}}) RETURN n.text"),
                &Default::default(),
            )
            .unwrap()
            .rows;
        assert_eq!(
            rows,
            [[batho_engine::query::Value::from(
                format!("concurrent note {seq}").as_str()
            )]],
            "note {seq} ({node})"
        );
    }
}
