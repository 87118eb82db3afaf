//! The ctx-tree tools through the real `batho mcp` and an MCP client: the seed's return
//! keys, the read cache and supersedes, grep globs and case, compose within its budget
//! with an honest manifest, search filters, walks, errors, and the `ctx` toolset.

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
    assert_eq!(ids(&hits), [first_id.clone()]);
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
