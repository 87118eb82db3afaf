//! End-to-end tests of `batho mcp`: the real binary, spoken to over stdio with
//! newline-delimited JSON-RPC, on a built copy of examples/demo.

mod common;
mod mcp_client;

use mcp_client::{Client, demo};
use serde_json::{Value, json};

fn tool_of(tools: &[Value], name: &str) -> Value {
    tools.iter().find(|t| t["name"] == name).unwrap().clone()
}

#[test]
fn tools_list_matches_the_spec_and_gating() {
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    let list = c.request("tools/list", json!({}));
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "list_repos",
            "add_repo",
            "remove_repo",
            "graph_overview",
            "graph_query",
            "get_entity",
            "trace_path",
            "get_file_graph",
            "file_connectivity",
            "search_entities",
            "get_delta",
            "batho_status",
            "batho_list_runs",
            "batho_diff",
            "batho_patch",
            "batho_fix",
            "repo_map",
            "query_graph",
            "explain",
            "get_neighbors",
            "shortest_path",
            "affected",
            "list_communities",
            "god_nodes",
            "graph_stats",
            "health",
            "ctx_tree_read",
            "ctx_tree_grep",
            "ctx_tree_browse",
            "ctx_tree_compose",
            "ctx_tree_search",
            "ctx_tree_neighbors",
            "ctx_tree_path_to_root",
            "ctx_tree_recent",
            "ctx_tree_note"
        ]
    );
    let delta = tool_of(tools, "get_delta");
    let props = &delta["inputSchema"]["properties"];
    let mut names: Vec<&str> = props
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "change_kind",
            "file_path",
            "limit",
            "max_tokens",
            "offset",
            "repo",
            "response_format",
            "run_id"
        ]
    );
    assert_eq!(props["limit"]["default"], 100);
    assert_eq!(props["offset"]["default"], 0);
    assert_eq!(props["response_format"]["default"], "concise");
    assert_eq!(delta["annotations"]["readOnlyHint"], true);
    let diff = tool_of(tools, "batho_diff");
    let mut names: Vec<&str> = diff["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "entity_id",
            "file_path",
            "limit",
            "max_tokens",
            "offset",
            "repo",
            "run_id",
            "since"
        ]
    );
    assert_eq!(diff["annotations"]["readOnlyHint"], true);
    assert_eq!(diff["inputSchema"]["required"], json!(null));
    assert_eq!(
        tool_of(tools, "batho_fix")["annotations"]["destructiveHint"],
        true
    );
    assert_eq!(
        tool_of(tools, "batho_patch")["annotations"]["destructiveHint"],
        true
    );
    assert_eq!(
        tool_of(tools, "batho_list_runs")["inputSchema"]["properties"]["limit"]["default"],
        20
    );
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    let gq = tool("graph_query");
    let props = &gq["inputSchema"]["properties"];
    assert_eq!(props["limit"]["default"], 50);
    assert_eq!(props["offset"]["default"], 0);
    assert_eq!(props["max_tokens"]["default"], 25000);
    assert_eq!(props["relation_direction"]["default"], "both");
    assert_eq!(props["response_format"]["default"], "concise");
    assert_eq!(gq["annotations"]["readOnlyHint"], true);
    assert_eq!(
        tool("trace_path")["inputSchema"]["properties"]["relation_direction"]["default"],
        "outgoing"
    );
    assert_eq!(
        tool("trace_path")["inputSchema"]["properties"]["max_depth"]["default"],
        5
    );
    assert_eq!(
        tool("search_entities")["inputSchema"]["properties"]["limit"]["default"],
        25
    );
    assert_eq!(
        tool("graph_overview")["inputSchema"]["properties"]["response_format"]["default"],
        "summary"
    );
    assert_eq!(
        tool("get_file_graph")["inputSchema"]["properties"]["include_cross_file_refs"]["default"],
        true
    );
    let req = |n: &str| tool(n)["inputSchema"]["required"].clone();
    assert_eq!(req("get_entity"), json!(["entity_id"]));
    assert_eq!(
        req("trace_path"),
        json!(["source_entity_id", "target_entity_id"])
    );
    assert_eq!(req("add_repo"), json!(["name", "path"]));
    // Gated tools are absent and refuse to run.
    let (text, _) = c.err("batho_build", json!({}));
    assert!(text.contains("--enable-tool"), "{text}");
    drop(c);

    let mut c = Client::start(home.path(), &["--enable-tool", "batho_build"], &[]);
    let list = c.request("tools/list", json!({}));
    let b = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "batho_build")
        .cloned()
        .unwrap();
    assert_eq!(b["annotations"]["destructiveHint"], true);
    drop(c);

    let mut c = Client::start(
        home.path(),
        &[],
        &[("BATHO_MCP_TOOLS_DISABLED", "graph_query,trace_path")],
    );
    let list = c.request("tools/list", json!({}));
    let n = list["tools"].as_array().unwrap().len();
    assert_eq!(
        n, 33,
        "16 Batho tools, 10 Astria tools and 9 ctx-tree tools (monitor gated), less the 2 disabled"
    );
    drop(c);

    std::fs::write(
        home.path().join("batho.yaml"),
        "mcp:\n  tools:\n    enabled: [batho_build]\n",
    )
    .unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    let list = c.request("tools/list", json!({}));
    assert!(
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "batho_build")
    );
}

/// Broken frames get JSON-RPC errors and the server goes on (issue 28, item 11): not
/// JSON, not UTF-8, nested too deep, over the size limit, a tools/call without a name or
/// with non-object arguments.
#[test]
fn broken_frames_are_answered_and_the_server_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let huge = format!("{{\"pad\": \"{}\"}}", "x".repeat(9 << 20));
    let cases: [(&[u8], i64, Value); 6] = [
        (b"this is not json", -32700, Value::Null),
        (b"{\"a\": \xff}", -32700, Value::Null),
        (deep.as_bytes(), -32700, Value::Null),
        (huge.as_bytes(), -32600, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":70,"method":"tools/call"}"#,
            -32602,
            json!(70),
        ),
        (
            br#"{"jsonrpc":"2.0","id":71,"method":"tools/call","params":{"name":"list_repos","arguments":5}}"#,
            -32602,
            json!(71),
        ),
    ];
    for (frame, code, id) in cases {
        c.send_raw(frame);
        let reply = c.next_message();
        assert_eq!(reply["error"]["code"], code, "{reply}");
        assert_eq!(reply["id"], id, "{reply}");
    }
    let (md, _) = c.ok("list_repos", json!({}));
    assert!(md.contains("## Registered Repos"), "{md}");
}

#[test]
fn registry_errors() {
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    let (t, _) = c.err("graph_overview", json!({}));
    assert!(t.contains("No repos registered"), "{t}");
    let (tmp, repo) = common::copy_repo("examples/demo");
    let (t, sc) = c.err(
        "add_repo",
        json!({"name": "x", "path": repo.to_str().unwrap()}),
    );
    assert!(t.contains("No Batho artifact found"), "{t}");
    assert!(sc["hint"].as_str().unwrap().contains("batho build"));
    drop(tmp);
    let (t, _) = c.err("remove_repo", json!({"name": "nope"}));
    assert!(t.contains("not found"), "{t}");
    // Malformed arguments are tool errors, and the server keeps serving.
    let (t, _) = c.err("add_repo", json!({"name": 3}));
    assert!(t.contains("invalid arguments"), "{t}");
    let (md, sc) = c.ok("list_repos", json!({}));
    assert!(md.contains("## Registered Repos"));
    assert_eq!(sc["total"], 0);
}

/// Repo names are short words, and a name never shadows the session's `--root` repo
/// (issue 28, item 7).
#[test]
fn repo_names_are_checked_and_never_shadow_the_session() {
    let (_root_tmp, root) = common::copy_repo("examples/demo");
    common::run_ok(&["build", root.to_str().unwrap()]);
    let (_other_tmp, other) = common::copy_repo("examples/demo");
    common::run_ok(&["build", other.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &["--root", root.to_str().unwrap()], &[]);
    let path = other.to_str().unwrap();
    let long = "n".repeat(65);
    for bad in ["../escape", "a/b", ".hidden", "sp ace", long.as_str()] {
        let (t, sc) = c.err("add_repo", json!({"name": bad, "path": path}));
        assert!(t.contains("name"), "{bad}: {t}");
        assert_eq!(sc["error_type"], "CLIENT_ERROR");
    }
    // The session repo is named after its folder.
    let session = root.file_name().unwrap().to_str().unwrap();
    let (t, _) = c.err("add_repo", json!({"name": session, "path": path}));
    assert!(t.contains("--root"), "{t}");
    // The same path under its own name is fine, and so is another name.
    let (_, sc) = c.ok(
        "add_repo",
        json!({"name": session, "path": root.to_str().unwrap()}),
    );
    assert_eq!(sc["name"], session);
    let (_, sc) = c.ok("add_repo", json!({"name": "other-1.0_b", "path": path}));
    assert_eq!(sc["name"], "other-1.0_b");
    let registry = std::fs::read_to_string(home.path().join("registry.json")).unwrap();
    assert!(!registry.contains("escape") && !registry.contains(&long));
}

#[test]
fn graph_tools_on_demo() {
    let (_tmp, home, repo, mut c) = demo();
    let (md, sc) = c.ok("list_repos", json!({}));
    assert!(md.contains("**demo**") && md.contains("✓ ready"), "{md}");
    assert_eq!(sc["repos"][0]["has_artifact"], true);
    assert!(
        std::fs::read_to_string(home.path().join("registry.json"))
            .unwrap()
            .contains("\"demo\"")
    );

    let (md, sc) = c.ok("graph_overview", json!({}));
    assert!(md.starts_with("# Codebase Overview"), "{md}");
    assert!(sc["meta"]["tokens_used"].as_u64().unwrap() < 2000);
    assert!(sc["meta"]["artifact_generation"].as_u64().unwrap() >= 1);
    assert!(sc["meta"]["query"].is_array());

    // Find a function through search, then its callers through graph_query.
    let (md, sc) = c.ok("search_entities", json!({"query": "table_put"}));
    assert!(md.starts_with("## Search Results"), "{md}");
    // The header declaration and the definition are distinct entities; take the definition.
    let id = sc["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == "src/table.c")
        .expect("definition found")["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.ends_with(":table_put"), "{id}");

    let (md, sc) = c.ok(
        "get_entity",
        json!({"entity_id": id, "include_source": true}),
    );
    assert!(md.contains("### Source"), "{md}");
    let src = sc["entity"]["source"].as_str().unwrap();
    let file = sc["entity"]["file"].as_str().unwrap();
    let on_disk = std::fs::read_to_string(repo.join(file)).unwrap();
    assert!(on_disk.contains(src.trim()), "source comes from the file");
    assert!(src.contains("table_put"));
    let callers: Vec<String> = sc["entity"]["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["direction"] == "incoming" && r["relation_type"] == "CALLS")
        .map(|r| r["entity_id"].as_str().unwrap().to_string())
        .collect();
    assert!(!callers.is_empty(), "{sc}");

    let (_, sc) = c.ok("graph_query", json!({"name_pattern": "^table_put$", "relation_types": ["CALLS"], "relation_direction": "incoming"}));
    assert_eq!(sc["nodes"].as_array().unwrap().len(), 1);
    let q_callers: Vec<String> = sc["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["source_id"].as_str().unwrap().to_string())
        .collect();
    let mut a = callers.clone();
    a.sort();
    let mut b = q_callers.clone();
    b.sort();
    b.dedup();
    a.dedup();
    assert_eq!(a, b);
    assert_eq!(sc["applied_filters"]["relation_direction"], "incoming");
    assert!(
        sc["meta"]["query"].as_array().unwrap()[0]
            .as_str()
            .unwrap()
            .contains("MATCH")
    );

    // A path from a caller to table_put.
    let (md, sc) = c.ok(
        "trace_path",
        json!({"source_entity_id": b[0], "target_entity_id": id}),
    );
    assert!(
        md.contains("## Path Trace") && md.contains("[CALLS L"),
        "{md}"
    );
    assert!(sc["depth"].as_u64().unwrap() >= 1);
    let (md, sc) = c.ok("trace_path", json!({"source_entity_id": id, "target_entity_id": b[0], "relation_direction": "incoming", "confidence_threshold": 0.5}));
    assert_eq!(sc["found"], true, "{md}");
    // A threshold of 0.0 keeps every hop: the breadth-first shortestPath, not the
    // enumeration of every path a hop filter needs (it timed out on sqlite; issue 28).
    let (md, sc) = c.ok("trace_path", json!({"source_entity_id": id, "target_entity_id": b[0], "relation_direction": "incoming", "confidence_threshold": 0.0}));
    assert_eq!(sc["found"], true, "{md}");
    let queries = sc["meta"]["query"].to_string();
    assert!(
        queries.contains("shortestPath") && !queries.contains("min_confidence"),
        "{queries}"
    );

    // File tools.
    let (md, sc) = c.ok("get_file_graph", json!({"file_path": file}));
    assert!(md.contains(&format!("## File Graph: {file}")));
    assert!(
        sc["entities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == json!(id))
    );
    let (md, sc) = c.ok("file_connectivity", json!({"file_path": file}));
    assert!(md.contains("### Depended on by"), "{md}");
    assert!(
        !sc["file_dependencies"]["incoming"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{md}"
    );

    // Pagination and truncation.
    let (md, sc) = c.ok("graph_query", json!({"limit": 2}));
    assert_eq!(sc["pagination"]["has_more"], true);
    assert!(md.contains("offset=2"));
    let (_, sc2) = c.ok("graph_query", json!({"limit": 2, "offset": 2}));
    assert_ne!(sc["nodes"][0], sc2["nodes"][0]);
    let (md, sc) = c.ok(
        "graph_overview",
        json!({"response_format": "detailed", "max_tokens": 30}),
    );
    assert!(md.contains("[truncated]"), "{md}");
    assert_eq!(sc["meta"]["truncated"], true);
    assert_eq!(sc["meta"]["token_budget"], 30);

    // Errors.
    let (t, sc) = c.err("get_entity", json!({"entity_id": "nope.c:nothing"}));
    assert!(
        t.starts_with("Error: Entity not found: nope.c:nothing"),
        "{t}"
    );
    assert_eq!(sc["error_type"], "CLIENT_ERROR");
    let (t, _) = c.err("get_file_graph", json!({"file_path": "src/none.c"}));
    assert!(t.contains("File not indexed: src/none.c"), "{t}");
    // An empty path names no file (system header stubs have an empty path).
    for tool in ["get_file_graph", "file_connectivity"] {
        let (t, _) = c.err(tool, json!({"file_path": ""}));
        assert!(t.contains("file_path must name a file"), "{tool}: {t}");
        let (t, _) = c.err(tool, json!({"file_path": "./"}));
        assert!(t.contains("file_path must name a file"), "{tool}: {t}");
    }
    let (t, _) = c.err("graph_query", json!({"name_pattern": "foo("}));
    assert!(t.contains("Invalid regex"), "{t}");
    let (t, _) = c.err("graph_query", json!({"symbol_roles": ["Writer"]}));
    assert!(t.contains("WriteAccess") && t.contains("Heuristic"), "{t}");
    let (t, _) = c.err("graph_query", json!({"confidence_threshold": 1.5}));
    assert!(t.contains("between 0.0 and 1.0"), "{t}");
    let (t, _) = c.err("graph_query", json!({"limit": 0}));
    assert!(t.contains("positive"), "{t}");
    let (t, _) = c.err("graph_query", json!({"repo": "other"}));
    assert!(t.contains("Available repos: ['demo']"), "{t}");

    // Freshness: a rebuild is served without a restart.
    let generation = sc["meta"]["artifact_generation"].clone();
    let (_, before) = c.ok("batho_status", json!({}));
    common::run_ok(&["build", "--full", repo.to_str().unwrap()]);
    let (_, after) = c.ok("graph_overview", json!({}));
    assert_ne!(
        after["meta"]["artifact_generation"],
        before["repos"][0]["artifact_generation"]
    );
    let _ = generation;
}

#[test]
fn markdown_snapshots() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (md, _) = c.ok(
        "trace_path",
        json!({"source_entity_id": "src/main.cpp:main", "target_entity_id": "src/table.c:table_put"}),
    );
    expect_test::expect![[r#"
        ## Path Trace
          src/main.cpp:main
          → [CALLS L11] src/shell.cpp:demo::Shell::execute
          → [CALLS L67] src/shell.cpp:demo::PutCommand::run
          → [CALLS L24] src/table.c:table_put

        Depth: 3 hops
    "#]]
    .assert_eq(&md);
    let (md, _) = c.ok("search_entities", json!({"query": "table_put"}));
    expect_test::expect![[r#"
        ## Search Results (2 matches, showing 2)
        - table_put [function] include/demo/table.h:L26 id=include/demo/table.h:table_put
        - table_put [function] src/table.c:L75-96 id=src/table.c:table_put
    "#]]
    .assert_eq(&md);
    let (md, _) = c.ok("file_connectivity", json!({"file_path": "src/table.c"}));
    expect_test::expect![[r#"
        ## File Connectivity: src/table.c

        ### Depends on (3 files)
        - `include/demo/hash.h` — imports×1 (via hash.h)
        - `include/demo/table.h` — calls×2, expands×2, imports×1, refs×22, writes×12 (via TABLE_LOAD_OK, TABLE_MIN_BUCKETS, buckets, count, …)
        - `src/hash.c` — refs×1 (via hash_fnv1a)

        ### Depended on by (1 files)
        - `src/shell.cpp` — calls×4 (via Shell, run, ~Shell)

        3 outgoing · 1 incoming · 0 unresolved · generation 1
    "#]].assert_eq(&md);
}

#[test]
fn batho_build_serves_the_new_generation_without_a_restart() {
    let (tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &["--enable-tool", "batho_build"], &[]);
    c.ok(
        "add_repo",
        json!({"name": "demo", "path": repo.to_str().unwrap()}),
    );
    let (_, sc) = c.ok("search_entities", json!({"query": "fresh_counter"}));
    assert_eq!(sc["results"].as_array().unwrap().len(), 0, "{sc}");
    let before = sc["meta"]["artifact_generation"].as_u64().unwrap();

    // An edit, then a build through the tool: an existing artifact needs full=true.
    let table = repo.join("src/table.c");
    let mut text = std::fs::read_to_string(&table).unwrap();
    text.push_str("\nint fresh_counter(void) { return 42; }\n");
    std::fs::write(&table, text).unwrap();
    let (t, sc) = c.err("batho_build", json!({"repo": "demo"}));
    assert!(
        sc["hint"].as_str().unwrap_or("").contains("full=true"),
        "{t} {sc}"
    );
    let (md, sc) = c.ok("batho_build", json!({"repo": "demo", "full": true}));
    assert!(md.starts_with("## Build Complete: demo"), "{md}");
    let built = sc["build"]["artifact_generation"].as_u64().unwrap();
    assert!(built > before, "{sc}");

    // The next call sees the new generation: no restart.
    let (md, sc) = c.ok("search_entities", json!({"query": "fresh_counter"}));
    assert!(md.contains("fresh_counter"), "{md}");
    assert_eq!(sc["meta"]["artifact_generation"].as_u64().unwrap(), built);
    drop(tmp);
}

#[test]
fn watched_repos_are_reindexed_after_changes_settle() {
    let (tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    let (md, sc) = c.ok(
        "add_repo",
        json!({"name": "demo", "path": repo.to_str().unwrap(), "watch": true, "debounce_ms": 300}),
    );
    assert!(md.contains("Watching"), "{md}");
    assert_eq!(sc["watching"], true);
    // The watch is set up off the caller's thread: wait until it is in place.
    let before = loop {
        let (_, sc) = c.ok("batho_status", json!({"repo": "demo"}));
        if sc["repos"][0]["watcher"]["state"] == "watching" {
            break sc["repos"][0]["artifact_generation"].as_u64().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };

    let table = repo.join("src/table.c");
    let mut text = std::fs::read_to_string(&table).unwrap();
    text.push_str("\nint watched_counter(void) { return 7; }\n");
    std::fs::write(&table, text).unwrap();
    // A file the build ignores changes nothing.
    std::fs::write(repo.join("notes.txt"), "not source").unwrap();

    let started = std::time::Instant::now();
    let mut saw_stale = false;
    loop {
        let (md, sc) = c.ok("search_entities", json!({"query": "watched_counter"}));
        if sc["meta"]["stale"]["pending_files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "src/table.c"))
        {
            assert!(md.starts_with("> Stale: 1 changed file(s)"), "{md}");
            saw_stale = true;
        }
        // The pending list is cleared just after the build commits, so the new generation
        // may be served a moment before the notice goes away: wait for both.
        if md.contains("watched_counter [function] src/table.c")
            && sc["meta"].get("stale").is_none()
        {
            assert!(sc["meta"]["artifact_generation"].as_u64().unwrap() > before);
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the edit was never re-indexed: {md}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        saw_stale,
        "answers before the re-index carry the staleness notice"
    );
    let (md, sc) = c.ok("batho_status", json!({"repo": "demo"}));
    assert_eq!(sc["repos"][0]["watcher"]["state"], "watching", "{md}");
    assert_eq!(sc["repos"][0]["watcher"]["reindexed"], 1, "{md}");

    // --no-watch: registered, but not watched.
    let mut c = Client::start(home.path(), &["--no-watch"], &[]);
    let (md, sc) = c.ok(
        "add_repo",
        json!({"name": "demo", "path": repo.to_str().unwrap(), "watch": true}),
    );
    assert!(
        md.contains("not started (the server runs with --no-watch)"),
        "{md}"
    );
    assert_eq!(sc["watching"], false);
    drop(tmp);
}

#[test]
fn runs_and_fix_tools() {
    let (_tmp, _home, repo, mut c) = demo();
    let (md, sc) = c.ok("batho_list_runs", json!({"limit": 5}));
    assert!(
        md.starts_with("## Runs: demo (1 shown, newest first)"),
        "{md}"
    );
    assert_eq!(sc["runs"][0]["type"], "build");
    assert_eq!(sc["runs"][0]["status"], "completed");
    assert!(
        sc["meta"]["query"]
            .as_str()
            .unwrap()
            .starts_with("CALL db.runs($limit)")
    );
    let (t, _) = c.err("batho_list_runs", json!({"limit": 0}));
    assert!(t.contains("limit"), "{t}");

    let (md, sc) = c.ok("batho_fix", json!({"deep": true, "dry_run": true}));
    assert!(md.starts_with("## Fix: demo — clean"), "{md}");
    assert_eq!(sc["exit_code"], 0);
    // meta.query is the same operation, which `batho query` runs.
    let statement = sc["meta"]["query"].as_str().unwrap();
    assert_eq!(statement, "CALL db.fix({deep: true, dry_run: true})");
    let rows = common::run_ok(&[
        "query",
        "--repo",
        common::arg(&repo),
        "--format",
        "json",
        statement,
    ]);
    let rows: Value = serde_json::from_str(&rows).unwrap();
    assert_eq!(rows[0]["outcome"], sc["fix"]["outcome"], "{rows}");
    assert_eq!(rows[0]["phases"], sc["fix"]["phases"], "{rows}");
    let (t, _) = c.err("batho_fix", json!({"target": "everything"}));
    assert!(t.contains("Valid: all, blobs, graph, state"), "{t}");
    let (t, _) = c.err("batho_fix", json!({"phase": 9}));
    assert!(t.contains("between 1 and 4"), "{t}");

    // A leftover temp file is found by a dry run and set aside by a real one.
    let leftover = repo.join(".batho/segments/x.seg.tmp-crash");
    std::fs::write(&leftover, b"half a segment").unwrap();
    let (md, _) = c.ok("batho_fix", json!({"dry_run": true}));
    assert!(
        md.contains("### Findings") && md.contains("would repair"),
        "{md}"
    );
    assert!(leftover.exists(), "a dry run changes nothing");
    let (md, _) = c.ok("batho_fix", json!({}));
    assert!(md.contains("### Repairs"), "{md}");
    assert!(!leftover.exists());
    let (md, sc) = c.ok("batho_fix", json!({}));
    assert!(md.starts_with("## Fix: demo — clean"), "{md}");
    assert_eq!(sc["exit_code"], 0);
}

#[test]
fn delta_and_diff_tools() {
    let (_tmp, _home, repo, mut c) = demo();
    // One build only: nothing to compare yet.
    let (t, sc) = c.err("get_delta", json!({}));
    assert!(t.contains("No run to compare"), "{t}");
    assert_eq!(sc["error_type"], "CLIENT_ERROR");

    let p = repo.join("src/hash.c");
    let text = std::fs::read_to_string(&p).unwrap();
    let text = text
        .replace("mix(", "mix64(")
        .replace("h * 33 + c", "h * 31 + c")
        + "\nunsigned long hash_zero(const char *key)\n{\n    (void)key;\n    return 0;\n}\n";
    std::fs::write(&p, text).unwrap();
    common::run_ok(&["build", "--full", repo.to_str().unwrap()]);

    let (md, sc) = c.ok("get_delta", json!({}));
    assert!(md.starts_with("## Delta: run "), "{md}");
    assert!(
        md.contains("- Nodes: 1 added, 0 removed, 3 modified, 1 renamed"),
        "{md}"
    );
    assert!(
        md.contains("- renamed src/hash.c:mix → src/hash.c:mix64 [function]"),
        "{md}"
    );
    assert!(
        md.contains("- added src/hash.c:hash_zero [function] src/hash.c:L"),
        "{md}"
    );
    assert_eq!(sc["stats"]["nodes_renamed"], 1);
    assert_eq!(sc["stats"]["relationships_added"], 1);
    assert_eq!(sc["stats"]["relationships_by_type"]["CONTAINS"]["added"], 1);
    assert_eq!(sc["run"]["type"], "build");
    assert_eq!(sc["base"]["generation"], 1);
    assert_eq!(sc["files"][0]["path"], "src/hash.c");
    assert_eq!(sc["changes"].as_array().unwrap().len(), 5);
    assert_eq!(sc["pagination"]["has_more"], false);
    let q = sc["meta"]["query"].as_array().unwrap();
    assert!(
        q[0].as_str()
            .unwrap()
            .starts_with("CALL db.deltaStats($run)")
    );
    assert!(
        q[1].as_str()
            .unwrap()
            .starts_with("CALL db.delta($run, $change_kind, $file_path)")
    );

    let (md, sc) = c.ok("get_delta", json!({"change_kind": "added", "limit": 20}));
    assert_eq!(sc["changes"].as_array().unwrap().len(), 1, "{md}");
    assert_eq!(sc["changes"][0]["entity_id"], "src/hash.c:hash_zero");
    assert_eq!(sc["applied_filters"]["change_kind"], "added");
    let (md, sc) = c.ok("get_delta", json!({"limit": 2}));
    assert_eq!(sc["pagination"]["has_more"], true);
    assert_eq!(sc["pagination"]["next_offset"], 2);
    assert!(md.contains("call again with offset=2"), "{md}");
    let (md, sc) = c.ok("get_delta", json!({"response_format": "summary"}));
    assert!(!md.contains("### Changes"), "{md}");
    assert_eq!(sc["changes"], json!([]));
    let (md, _) = c.ok(
        "get_delta",
        json!({"response_format": "detailed", "change_kind": "modified"}),
    );
    assert!(md.contains("  - before: src/hash.c:hash_djb2 L"), "{md}");

    let runs = c.ok("batho_list_runs", json!({})).1;
    let first = runs["runs"][1]["run_id"].as_str().unwrap().to_string();
    let (t, sc) = c.err("get_delta", json!({"run_id": first}));
    assert!(t.contains("first build"), "{t}");
    assert_eq!(sc["error_type"], "CLIENT_ERROR");
    let (t, sc) = c.err("get_delta", json!({"run_id": "nope"}));
    assert!(t.starts_with("Error: Run not found: nope\nHint: "), "{t}");
    assert!(sc["hint"].as_str().unwrap().contains(&first));
    let (t, _) = c.err("get_delta", json!({"change_kind": "moved"}));
    assert!(
        t.contains("Invalid change_kind 'moved'. Valid: added, removed, modified, renamed"),
        "{t}"
    );
    let (t, _) = c.err("get_delta", json!({"limit": 0}));
    assert!(t.contains("limit"), "{t}");

    let (md, sc) = c.ok("batho_diff", json!({"file_path": "src/hash.c"}));
    assert!(md.starts_with("## Diff"), "{md}");
    assert_eq!(sc["added"].as_array().unwrap().len(), 1);
    assert_eq!(sc["renamed"][0]["before"]["id"], "src/hash.c:mix");
    assert_eq!(sc["renamed"][0]["after"]["id"], "src/hash.c:mix64");
    assert_eq!(sc["total"], 5);
    let (md, sc) = c.ok("batho_diff", json!({"entity_id": "src/hash.c:hash_djb2"}));
    assert_eq!(sc["modified"].as_array().unwrap().len(), 1, "{md}");
    assert!(md.contains("  - after: src/hash.c:hash_djb2 L"), "{md}");
    let (_, sc) = c.ok("batho_diff", json!({"since": "1"}));
    assert_eq!(sc["total"], 5);
    assert_eq!(sc["base"]["generation"], 1);
    let (_, sc) = c.ok(
        "batho_diff",
        json!({"since": first.clone(), "file_path": "src/table.c"}),
    );
    assert_eq!(sc["total"], 0);
    let (t, _) = c.err("batho_diff", json!({"entity_id": "src/none.c:nothing"}));
    assert!(t.contains("Entity not found: src/none.c:nothing"), "{t}");

    // Pruned: forget the first run and reclaim its generation.
    common::run_ok(&["gc", "prune", repo.to_str().unwrap(), "--run", &first]);
    common::run_ok(&["gc", "reclaim", repo.to_str().unwrap()]);
    let (t, sc) = c.err("batho_diff", json!({"since": "1"}));
    assert!(t.contains("Generation 1 was pruned"), "{t}");
    assert_eq!(sc["hint"], "retained generations: 2, 3");
    let (t, sc) = c.err("get_delta", json!({}));
    assert!(t.contains("were pruned"), "{t}");
    assert_eq!(sc["hint"], "retained generations: 2, 3");
}

#[test]
fn patch_tool_reindexes_an_edit_and_audits_it() {
    let (_tmp, _home, repo, mut c) = demo();
    let (md, sc) = c.ok("batho_patch", json!({}));
    assert!(md.contains("No changes detected."), "{md}");
    assert_eq!(sc["patch"]["files_changed"], 0);
    let f = repo.join("src/table.c");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("\nint table_is_empty(const table *t) { return table_count(t) == 0; }\n");
    std::fs::write(&f, text).unwrap();
    let (md, sc) = c.ok("batho_patch", json!({}));
    assert!(md.starts_with("## Patch: demo"), "{md}");
    assert!(md.contains("Audit log entry #"), "{md}");
    assert_eq!(sc["patch"]["files_changed"], 1);
    assert_eq!(sc["patch"]["entities_added"], 1);
    assert_eq!(sc["patch"]["audit"]["action"], "patch");
    // The next query sees the new function.
    let (md, _) = c.ok("search_entities", json!({"query": "table_is_empty"}));
    assert!(md.contains("table_is_empty"), "{md}");
    let (t, _) = c.err("batho_patch", json!({"graph_backend": "cloud"}));
    assert!(t.contains("Valid: auto, in-memory, arrow"), "{t}");
    // A size limit that would drop most of the graph is refused; the graph stays.
    let (t, sc) = c.err("batho_patch", json!({"max_file_size_kb": 0}));
    assert!(
        t.contains("would drop") && t.contains("nothing was changed"),
        "{t}"
    );
    assert_eq!(sc["error_type"], "CLIENT_ERROR");
    let (md, _) = c.ok("search_entities", json!({"query": "table_is_empty"}));
    assert!(md.contains("table_is_empty"), "{md}");
}

/// `batho query --format json STATEMENT` on `repo`: its one row.
fn statement_row(repo: &std::path::Path, statement: &str) -> Value {
    let rows = common::run_ok(&[
        "query",
        "--repo",
        common::arg(repo),
        "--format",
        "json",
        statement,
    ]);
    let rows: Value = serde_json::from_str(&rows).unwrap();
    assert_eq!(
        rows.as_array().map(Vec::len),
        Some(1),
        "{statement}: {rows}"
    );
    rows[0].clone()
}

/// Every life-cycle tool carries in meta.query the statement that does what it did: run
/// through `batho query`, it does the same (issue 28, item 14).
#[test]
fn lifecycle_tools_carry_the_statement_that_does_the_same() {
    let (tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();
    let enabled = "batho_export,batho_load,batho_build";
    let mut c = Client::start(
        home.path(),
        &["--root", repo.to_str().unwrap()],
        &[("BATHO_MCP_TOOLS_ENABLED", enabled)],
    );

    let (_, sc) = c.ok("batho_status", json!({}));
    assert_eq!(sc["meta"]["query"], "CALL db.status()");
    let row = statement_row(&repo, "CALL db.status()");
    assert_eq!(row["generation"], sc["repos"][0]["artifact_generation"]);
    assert_eq!(row["entities"], sc["repos"][0]["entity_count"]);

    // The default file is named in the statement, so both write the same file.
    let (_, sc) = c.ok("batho_export", json!({"json_mode": false}));
    let statement = sc["meta"]["query"].as_str().unwrap().to_string();
    assert!(
        statement.starts_with("CALL db.export({format: 'archive', output: '.batho/exports/"),
        "{statement}"
    );
    let path = sc["export"]["path"].as_str().unwrap().to_string();
    std::fs::remove_file(&path).unwrap();
    let row = statement_row(&repo, &statement);
    assert_eq!(row["path"], path.as_str());
    assert_eq!(row["node_count"], sc["export"]["entities_exported"]);
    assert!(std::path::Path::new(&path).is_file());

    let (_, sc) = c.ok("batho_load", json!({"artifact_path": path}));
    let statement = sc["meta"]["query"].as_str().unwrap().to_string();
    assert_eq!(statement, format!("CALL db.load({{archive: '{path}'}})"));
    let loaded = sc["load"]["generation"].as_u64().unwrap();
    let row = statement_row(&repo, &statement);
    assert_eq!(row["generation"].as_u64(), Some(loaded + 1), "{row}");

    let table = repo.join("src/table.c");
    let text =
        std::fs::read_to_string(&table).unwrap() + "\nint lifecycle_one(void) { return 1; }\n";
    std::fs::write(&table, text).unwrap();
    let (_, sc) = c.ok("batho_patch", json!({}));
    let queries = sc["meta"]["query"].as_array().unwrap();
    assert_eq!(queries[0], "CALL db.patch()", "{queries:?}");
    assert_eq!(sc["patch"]["files_changed"], 1);
    let text =
        std::fs::read_to_string(&table).unwrap() + "\nint lifecycle_two(void) { return 2; }\n";
    std::fs::write(&table, text).unwrap();
    let row = statement_row(&repo, "CALL db.patch()");
    assert_eq!(row["files"]["modified"], json!(["src/table.c"]), "{row}");

    let (_, sc) = c.ok("batho_build", json!({"full": true, "max_workers": 2}));
    let statement = sc["meta"]["query"].as_str().unwrap().to_string();
    assert_eq!(statement, "CALL db.build({full: true, max_workers: 2})");
    let row = statement_row(&repo, &statement);
    assert_eq!(row["entities"], sc["build"]["entity_count"]);
    assert_eq!(
        row["generation"].as_u64(),
        sc["build"]["artifact_generation"].as_u64().map(|g| g + 1)
    );
    drop(tmp);
}

#[test]
fn export_load_and_gc_tools_are_gated_and_work() {
    let (tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();

    // Gated: absent from tools/list and refused until enabled.
    let mut c = Client::start(home.path(), &["--root", repo.to_str().unwrap()], &[]);
    let list = c.request("tools/list", json!({}));
    let names: Vec<String> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    for gated in ["batho_export", "batho_load", "batho_gc"] {
        assert!(!names.iter().any(|n| n == gated), "{gated} listed");
        let (text, sc) = c.err(gated, json!({}));
        assert!(text.contains("--enable-tool"), "{text}");
        assert_eq!(sc["error_type"], "CLIENT_ERROR");
    }
    drop(c);

    let enabled = "batho_export,batho_load,batho_gc";
    let mut c = Client::start(
        home.path(),
        &["--root", repo.to_str().unwrap()],
        &[("BATHO_MCP_TOOLS_ENABLED", enabled)],
    );
    let list = c.request("tools/list", json!({}));
    let tools = list["tools"].as_array().unwrap();
    let ex = tool_of(tools, "batho_export");
    assert_eq!(ex["annotations"]["destructiveHint"], true);
    let props = &ex["inputSchema"]["properties"];
    assert_eq!(props["view"]["default"], "storage");
    assert_eq!(props["category"]["default"], "all");
    assert_eq!(props["json_mode"]["default"], true);
    assert_eq!(props["include_relationships"]["default"], false);
    for p in [
        "repo",
        "output",
        "index_id",
        "filter_pattern",
        "token_budget",
    ] {
        assert!(props.get(p).is_some(), "batho_export lacks {p}");
    }
    let ld = tool_of(tools, "batho_load");
    assert_eq!(ld["annotations"]["destructiveHint"], true);
    assert_eq!(ld["inputSchema"]["required"], json!(["artifact_path"]));
    assert_eq!(ld["inputSchema"]["properties"]["force"]["default"], false);
    let gc = tool_of(tools, "batho_gc");
    assert_eq!(gc["annotations"]["destructiveHint"], true);
    assert_eq!(
        gc["inputSchema"]["properties"]["subcommand"]["default"],
        "status"
    );
    assert!(gc["inputSchema"]["properties"].get("run_uuid").is_some());
    assert!(gc["inputSchema"]["properties"].get("older_than").is_some());

    // Agent view with a budget, to a relative output path.
    let (md, sc) = c.ok(
        "batho_export",
        json!({"view": "agent", "output": "out/agent.json", "token_budget": 400}),
    );
    assert!(md.contains("agent view"), "{md}");
    let e = &sc["export"];
    assert_eq!(e["truncated"], true);
    assert!(e["entities_exported"].as_u64().unwrap() < e["entities_total"].as_u64().unwrap());
    let written: Value =
        serde_json::from_slice(&std::fs::read(repo.join("out/agent.json")).unwrap()).unwrap();
    assert_eq!(written["view"], "agent");
    assert_eq!(
        e["file_size"].as_u64().unwrap(),
        std::fs::metadata(repo.join("out/agent.json"))
            .unwrap()
            .len()
    );
    assert_eq!(
        sc["meta"]["query"],
        "CALL db.export({view: 'agent', token_budget: 400, output: 'out/agent.json'})"
    );
    // Storage view, default output under .batho/exports.
    let (_, sc) = c.ok("batho_export", json!({}));
    let path = sc["export"]["path"].as_str().unwrap().to_string();
    assert!(path.contains(".batho/exports/"), "{path}");
    let storage: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(
        storage["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["source"].is_string())
    );
    // Errors in the spec's shape.
    let (text, sc) = c.err("batho_export", json!({"view": "pack"}));
    assert!(text.contains("Valid: storage, agent"), "{text}");
    assert_eq!(sc["error_type"], "CLIENT_ERROR");
    c.err("batho_export", json!({"category": "nodes"}));
    c.err("batho_export", json!({"token_budget": 0}));
    c.err("batho_export", json!({"filter_pattern": "src/["}));
    let (text, _) = c.err("batho_export", json!({"index_id": "no-such-run"}));
    assert!(text.contains("no-such-run"), "{text}");

    // The archive, loaded into a second repository: same answers.
    // Outputs and inputs stay inside the repository, out of the store (issue 28, items 4
    // and 5): outside, `..`, the store's own files and links are refused.
    let outside = tmp.path().join("demo.tar");
    std::fs::create_dir_all(repo.join("links")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), repo.join("links/out")).unwrap();
    for output in [
        outside.to_str().unwrap(),
        "../demo.tar",
        ".batho/MANIFEST",
        ".batho/segments/x.seg",
        "links/out/demo.tar",
    ] {
        let (text, sc) = c.err(
            "batho_export",
            json!({"json_mode": false, "output": output}),
        );
        assert_eq!(sc["error_type"], "CLIENT_ERROR", "{output}: {text}");
        let (text, _) = c.err("batho_load", json!({"artifact_path": output}));
        assert!(text.contains("artifact_path"), "{output}: {text}");
    }
    assert!(!outside.exists());
    c.ok("graph_overview", json!({}));
    let (_, sc) = c.ok(
        "batho_export",
        json!({"json_mode": false, "output": "exports/demo.tar"}),
    );
    assert_eq!(sc["export"]["json_mode"], false);
    let archive = repo.join("exports/demo.tar");
    assert!(archive.is_file());
    let (md, sc) = c.ok(
        "batho_load",
        json!({"artifact_path": archive.to_str().unwrap()}),
    );
    assert!(md.contains("verified"), "{md}");
    assert_eq!(sc["verification_status"], "verified");
    assert_eq!(sc["load"]["audit"]["action"], "load");
    let loaded_gen = sc["load"]["generation"].as_u64().unwrap();
    let (_, sc) = c.ok("batho_status", json!({}));
    assert!(sc.to_string().contains(&loaded_gen.to_string()));
    // A bad archive is refused and changes nothing.
    std::fs::write(repo.join("junk.tar"), b"junk").unwrap();
    let (text, sc) = c.err("batho_load", json!({"artifact_path": "junk.tar"}));
    assert!(text.contains("archive rejected"), "{text}");
    assert_eq!(sc["error_type"], "CLIENT_ERROR");
    c.err("batho_load", json!({"artifact_path": "/no/such/file.tar"}));
    c.err("batho_load", json!({}));

    // gc: status, prune (needs a criterion), reclaim, compact.
    let (md, sc) = c.ok("batho_gc", json!({}));
    assert!(md.contains("Remaining runs"), "{md}");
    assert_eq!(sc["meta"]["query"], "CALL db.gc({action: 'status'})");
    assert!(sc["gc"]["remaining_runs"].as_u64().unwrap() >= 2);
    assert!(sc["gc"]["fragmentation"].is_number());
    let (text, _) = c.err("batho_gc", json!({"subcommand": "prune"}));
    assert!(text.contains("older_than"), "{text}");
    let first_run = {
        let (_, runs) = c.ok("batho_list_runs", json!({}));
        runs["runs"].as_array().unwrap().last().unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (_, sc) = c.ok(
        "batho_gc",
        json!({"subcommand": "prune", "run_uuid": first_run}),
    );
    assert_eq!(sc["gc"]["runs_pruned"], 1);
    assert_eq!(sc["audit"]["action"], "gc.prune");
    assert_eq!(
        sc["meta"]["query"],
        format!("CALL db.gc({{action: 'prune', run: '{first_run}'}})")
    );
    let (_, sc) = c.ok("batho_gc", json!({"subcommand": "reclaim"}));
    assert!(sc["gc"]["disk_space_reclaimed"].as_u64().unwrap() > 0);
    // A full build is a single base layer: nothing to fold (tests/cli_patch.rs folds a
    // real delta).
    let (md, sc) = c.ok("batho_gc", json!({"subcommand": "compact"}));
    assert!(md.contains("Nothing to compact"), "{md}");
    assert_eq!(sc["compact"]["had_delta"], false);
    c.err("batho_gc", json!({"subcommand": "defrag"}));
    // Queries still answer after load, prune and reclaim.
    c.ok("search_entities", json!({"query": "table_put"}));
}

#[test]
fn graph_overview_lists_only_files_of_the_tree_and_unique_community_labels() {
    let (_tmp, _home, repo, mut c) = demo();
    let (md, sc) = c.ok("graph_overview", json!({"response_format": "detailed"}));
    let overview = &sc["overview"];
    let files: Vec<&str> = overview["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    // Headers included from outside the tree (`<stdlib.h>`) have File nodes without a
    // path: they once came out as blank entries and were counted as files.
    assert!(files.iter().all(|f| !f.is_empty()), "{md}");
    assert!(!md.contains("\n- \n"), "{md}");
    let on_disk = ["include/demo", "src"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo.join(d)).unwrap())
        .count() as u64;
    assert_eq!(
        overview["stats"]["total_files"].as_u64(),
        Some(on_disk),
        "{md}"
    );
    assert_eq!(files.len() as u64, on_disk);
    assert!(overview["stats"]["headers_outside_tree"].as_u64().unwrap() > 0);
    let labels: Vec<&str> = overview["communities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let unique: std::collections::BTreeSet<&&str> = labels.iter().collect();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
}

/// docs/mcp.md states what `tools/list` costs an agent in o200k_base tokens (the JSON of the
/// result, as sent, with every family and the default gating); no tool description may be
/// over 120 tokens.
#[test]
fn tools_list_cost_is_documented_and_descriptions_stay_short() {
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    let list = c.request("tools/list", json!({}));
    for tool in list["tools"].as_array().unwrap() {
        let description = tool["description"].as_str().unwrap();
        let tokens = batho_mcp::tokens::count(description);
        assert!(tokens <= 120, "{}: {tokens} tokens", tool["name"]);
    }
    let cost = batho_mcp::tokens::count(&serde_json::to_string(&list).unwrap());
    let doc = include_str!("../docs/mcp.md");
    let stated = format!("`tools/list` costs an agent {cost} o200k_base tokens");
    assert!(doc.contains(&stated), "docs/mcp.md must say: {stated}");
}
