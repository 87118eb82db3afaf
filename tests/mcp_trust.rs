//! Answers an agent can trust: stale files are said to be stale, paging never skips or
//! repeats a row, unknown argument and tool names are refused, arrows point the way the
//! stored relationships do. Each test drives the real `batho mcp` over stdio.

mod common;
mod mcp_client;

use std::collections::BTreeSet;

use mcp_client::{Client, demo};
use serde_json::{Value, json};

/// The ids of the rows of one answer, read from its structured array `key` (each item's
/// `field`).
fn row_ids(structured: &Value, key: &str, field: &str) -> Vec<String> {
    let mut target = structured;
    for part in key.split('/') {
        target = &target[part];
    }
    target
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not an array in {structured}"))
        .iter()
        .map(|item| item[field].as_str().unwrap().to_string())
        .collect()
}

/// Follows a tool's paging from offset 0 under a tight token budget and returns every row
/// seen, in order; checks that each hint names the offset the next call uses.
fn walk(client: &mut Client, tool: &str, args: Value, keys: &[(&str, &str)]) -> Vec<String> {
    let mut seen = Vec::new();
    let mut offset = 0;
    for _ in 0..200 {
        let mut call = args.clone();
        call["offset"] = json!(offset);
        let (markdown, structured) = client.ok(tool, call);
        let before = seen.len();
        for (key, field) in keys {
            seen.extend(row_ids(&structured, key, field));
        }
        let pagination = &structured["pagination"];
        if pagination["has_more"] != json!(true) {
            return seen;
        }
        let next = pagination["next_offset"].as_i64().unwrap();
        assert!(
            markdown.contains(&format!("offset={next}")),
            "{tool}: the hint must name offset={next}:\n{markdown}"
        );
        assert_eq!(
            next,
            offset + (seen.len() - before) as i64,
            "{tool}: the next page must start right after the rows shown:\n{markdown}"
        );
        offset = next;
    }
    panic!("{tool}: paging did not end");
}

/// Every row exactly once, whatever the budget.
fn assert_same_rows(tool: &str, walked: Vec<String>, whole: Vec<String>) {
    let unique: BTreeSet<&String> = walked.iter().collect();
    assert_eq!(unique.len(), walked.len(), "{tool}: a row was repeated");
    assert_eq!(walked, whole, "{tool}: rows skipped or out of order");
}

/// A paged tool, its arguments, and the structured arrays (and id fields) of its rows.
type PagedCase = (&'static str, Value, Vec<(&'static str, &'static str)>);

#[test]
fn following_the_hints_visits_every_row_once() {
    let (_tmp, _home, _repo, mut c) = demo();
    let cases: Vec<PagedCase> = vec![
        (
            "graph_query",
            json!({"relation_types": ["CALLS"], "limit": 50}),
            vec![("nodes", "id")],
        ),
        (
            "search_entities",
            json!({"query": "e", "limit": 50}),
            vec![("results", "id")],
        ),
        (
            "get_file_graph",
            json!({"file_path": "src/table.c"}),
            vec![("entities", "id")],
        ),
        (
            "file_connectivity",
            json!({"file_path": "include/demo/table.h"}),
            vec![
                ("file_dependencies/outgoing", "file"),
                ("file_dependencies/incoming", "file"),
            ],
        ),
    ];
    for (tool, args, keys) in cases {
        let mut whole_args = args.clone();
        whole_args["max_tokens"] = json!(100_000);
        whole_args["limit"] = json!(10_000);
        let (_, whole) = c.ok(tool, whole_args);
        let mut expected = Vec::new();
        for (key, field) in &keys {
            expected.extend(row_ids(&whole, key, field));
        }
        assert!(expected.len() >= 3, "{tool}: too few rows to page: {whole}");
        for budget in [60, 150, 400] {
            let mut tight = args.clone();
            tight["max_tokens"] = json!(budget);
            let walked = walk(&mut c, tool, tight, &keys);
            assert_same_rows(tool, walked, expected.clone());
        }
        // Small pages without a cut, too.
        let mut paged = args.clone();
        paged["limit"] = json!(2);
        let walked = walk(&mut c, tool, paged, &keys);
        assert_same_rows(tool, walked, expected);
    }
}

#[test]
fn a_cut_answer_keeps_its_structured_rows_and_relationships_in_step() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok(
        "graph_query",
        json!({"relation_types": ["CALLS"], "max_tokens": 120}),
    );
    assert!(markdown.contains("[truncated]"), "{markdown}");
    let nodes = row_ids(&structured, "nodes", "id");
    for edge in structured["edges"].as_array().unwrap() {
        let ends = [
            edge["source_id"].as_str().unwrap(),
            edge["target_id"].as_str().unwrap(),
        ];
        assert!(
            ends.iter().any(|end| nodes.iter().any(|n| n == end)),
            "an edge of a row that was cut: {edge}"
        );
    }
    for id in &nodes {
        assert!(
            markdown.contains(id.as_str()),
            "{id} is not in the text:\n{markdown}"
        );
    }
}

#[test]
fn stale_source_is_said_and_found_again() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", common::arg(&repo)]);
    let file = repo.join("src/table.c");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("/* one */\n/* two */\n/* three */\n{text}")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(
        home.path(),
        &["--root", common::arg(&repo), "--no-watch"],
        &[],
    );
    let (markdown, structured) = c.ok(
        "get_entity",
        json!({"entity_id": "src/table.c:table_put", "include_source": true}),
    );
    let stale = &structured["meta"]["stale"];
    assert_eq!(
        stale["pending_files"],
        json!(["src/table.c"]),
        "{structured}"
    );
    assert!(
        markdown.starts_with("> Stale: 1 changed file"),
        "{markdown}"
    );
    assert!(markdown.contains("batho_patch"), "{markdown}");
    let entity = &structured["entity"];
    assert_eq!(entity["source_origin"], "relocated", "{entity}");
    let source = entity["source"].as_str().unwrap();
    assert!(source.contains("table_put("), "{source}");
    assert_eq!(
        entity["source_line"].as_i64().unwrap(),
        entity["start_line"].as_i64().unwrap() + 3
    );
    // Other tools that show the file say so too.
    let (markdown, structured) = c.ok("get_file_graph", json!({"file_path": "src/table.c"}));
    assert!(markdown.starts_with("> Stale:"), "{markdown}");
    assert_eq!(structured["meta"]["stale"]["pending_count"], 1);
    // An unchanged file is served from its indexed bytes, without a notice.
    let (markdown, structured) = c.ok(
        "get_entity",
        json!({"entity_id": "src/hash.c:hash_fnv1a", "include_source": true}),
    );
    assert!(!markdown.contains("Stale"), "{markdown}");
    assert_eq!(structured["entity"]["source_origin"], "indexed");
}

#[test]
fn oversized_arguments_are_refused_before_any_work() {
    let (_tmp, _home, _repo, mut c) = demo();
    let started = std::time::Instant::now();
    // Under the 8 MiB frame limit, over the argument bound.
    let huge = "luaD_call ".repeat(600_000);
    let (text, structured) = c.err("search_entities", json!({"query": huge}));
    assert!(
        text.contains("argument 'query' of search_entities holds 6000000 bytes; at most 65536"),
        "{text}"
    );
    assert_eq!(structured["error_type"], "CLIENT_ERROR");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Nested: a list of many short names adds up.
    let names: Vec<String> = (0..20_000).map(|i| format!("name{i}")).collect();
    let (text, _) = c.err("graph_query", json!({"file_path": names}));
    assert!(text.contains("argument 'file_path'"), "{text}");
    // A document argument has a larger bound.
    let (_, noted) = c.ok(
        "ctx_tree_note",
        json!({"content": "lock order ".repeat(20_000)}),
    );
    assert!(noted["nodeId"].is_string());
}

#[test]
fn unknown_argument_and_tool_names_are_refused() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (text, structured) = c.err("graph_query", json!({"filepath": "src/"}));
    assert!(
        text.contains("Unknown argument 'filepath' for graph_query"),
        "{text}"
    );
    assert!(text.contains("file_path"), "{text}");
    assert_eq!(structured["hint"], "did you mean 'file_path'?");
    assert_eq!(structured["error_type"], "CLIENT_ERROR");
    let (text, _) = c.err("list_repos", json!({"verbose": true}));
    assert!(text.contains("Valid arguments: max_tokens"), "{text}");
    let (text, structured) = c.err("graph_qeury", json!({}));
    assert!(
        text.contains("Unknown or disabled tool: graph_qeury"),
        "{text}"
    );
    assert_eq!(
        structured["hint"],
        "did you mean 'graph_query'? tools/list shows the tools served"
    );
    // A budget is a budget on every tool that can say a lot.
    let (markdown, structured) = c.ok("search_entities", json!({"query": "e", "max_tokens": 60}));
    assert_eq!(structured["meta"]["truncated"], true, "{markdown}");
    assert!(
        markdown.len() <= 60 * 4,
        "{} bytes:\n{markdown}",
        markdown.len()
    );
    let (markdown, _) = c.ok("search_entities", json!({"query": "e", "max_tokens": 1}));
    assert!(
        markdown.contains("max_tokens is too small for one row"),
        "{markdown}"
    );

    let home = tempfile::tempdir().unwrap();
    let out = common::batho()
        .args([
            "mcp",
            "--enable-tool",
            "bogus_tool",
            "--enable-tool",
            "batho_buld",
        ])
        .env("BATHO_HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'bogus_tool' in --enable-tool"), "{stderr}");
    assert!(stderr.contains("did you mean 'batho_build'"), "{stderr}");
}

#[test]
fn incoming_paths_print_the_stored_arrows() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok(
        "trace_path",
        json!({"source_entity_id": "src/table.c:table_put", "target_entity_id": "src/main.cpp:main",
               "relation_direction": "incoming"}),
    );
    assert_eq!(structured["found"], true, "{markdown}");
    assert!(markdown.contains("← [CALLS L"), "{markdown}");
    assert!(!markdown.contains("→"), "{markdown}");
    for hop in structured["path"].as_array().unwrap().iter().skip(1) {
        assert_eq!(hop["direction"], "backward", "{hop}");
    }
}

/// The relationship of `relationships` whose `field` is `id` holds table_put's three calls
/// of dup_string.
fn assert_three_sites(relationships: &Value, field: &str, id: &str) {
    let found = relationships
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[field] == id)
        .unwrap_or_else(|| panic!("no {field} {id} in {relationships}"));
    assert_eq!(
        (&found["count"], &found["lines"]),
        (&json!(3), &json!([83, 90, 91]))
    );
}

/// `table_put` calls `dup_string` three times (lines 83, 90, 91): one relationship, every
/// site kept, and each tool that shows the relationship shows its sites.
#[test]
fn every_call_site_is_shown() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok(
        "get_entity",
        json!({"entity_id": "src/table.c:dup_string", "response_format": "detailed"}),
    );
    assert!(
        markdown.contains("- CALLS src/table.c:table_put ×3 (0.95 exact_match) @L83,90,91"),
        "{markdown}"
    );
    assert_three_sites(
        &structured["entity"]["relationships"],
        "entity_id",
        "src/table.c:table_put",
    );

    let (markdown, structured) = c.ok(
        "graph_query",
        json!({"file_path": "src/table.c", "name_pattern": "table_put", "relation_types": ["CALLS"],
               "response_format": "detailed"}),
    );
    assert!(
        markdown.contains("-[CALLS]-> src/table.c:dup_string ×3") && markdown.contains("L83,90,91"),
        "{markdown}"
    );
    assert_three_sites(&structured["edges"], "target_id", "src/table.c:dup_string");

    let (markdown, structured) = c.ok(
        "trace_path",
        json!({"source_entity_id": "src/table.c:table_put", "target_entity_id": "src/table.c:dup_string"}),
    );
    assert!(markdown.contains("→ [CALLS ×3 L83,90,91]"), "{markdown}");
    assert_eq!(
        structured["path"][1]["lines"],
        json!([83, 90, 91]),
        "{structured}"
    );
}

#[test]
fn a_patch_counts_its_changes_as_get_delta_does() {
    let (_tmp, _home, repo, mut c) = demo();
    // A rename, a shift of every line below it, and an edit of a body.
    let file = repo.join("src/hash.c");
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = format!("/* moved */\n{}", text.replace("mix(", "mix_bits(")).replace(
        "hash_djb2(const char *key)\n{",
        "hash_djb2(const char *key)\n{\n    (void)0;",
    );
    std::fs::write(&file, edited).unwrap();
    let (markdown, patched) = c.ok("batho_patch", json!({}));
    assert!(
        patched["meta"]["query"]
            .to_string()
            .contains("db.deltaStats"),
        "{patched}"
    );
    let (_, delta) = c.ok("get_delta", json!({"response_format": "summary"}));
    let stats = &delta["stats"];
    let patch = &patched["patch"];
    for (ours, theirs) in [
        ("entities_added", "nodes_added"),
        ("entities_removed", "nodes_removed"),
        ("entities_modified", "nodes_modified"),
        ("entities_renamed", "nodes_renamed"),
        ("relationships_added", "relationships_added"),
        ("relationships_removed", "relationships_removed"),
    ] {
        assert_eq!(
            patch[ours], stats[theirs],
            "{ours} vs {theirs}:\n{markdown}\n{delta}"
        );
    }
    assert!(
        stats["nodes_renamed"].as_i64().unwrap() + stats["nodes_modified"].as_i64().unwrap() > 0
    );
}

/// docs/mcp.md: every answer that read a repository's graph carries
/// `meta.artifact_generation` (and the BQL it ran in `meta.query`).
#[test]
fn graph_answers_name_their_generation_and_query() {
    let (_tmp, _home, _repo, mut c) = demo();
    let calls = [
        ("graph_overview", json!({})),
        ("graph_query", json!({"name_pattern": "table"})),
        ("get_entity", json!({"entity_id": "src/table.c:table_put"})),
        ("search_entities", json!({"query": "table"})),
        (
            "trace_path",
            json!({"source_entity_id": "src/main.cpp:main", "target_entity_id": "src/table.c:table_put"}),
        ),
        ("get_file_graph", json!({"file_path": "src/table.c"})),
        ("file_connectivity", json!({"file_path": "src/table.c"})),
        ("batho_list_runs", json!({})),
    ];
    for (tool, args) in calls {
        let (markdown, structured) = c.ok(tool, args);
        let meta = &structured["meta"];
        assert_eq!(
            meta["artifact_generation"],
            json!(1),
            "{tool}: {meta}\n{markdown}"
        );
        assert!(
            !meta["query"].is_null() && meta["query"] != json!([]),
            "{tool}: {meta}"
        );
    }
}

#[test]
fn a_confidence_threshold_does_not_turn_trace_path_into_path_enumeration() {
    // 40 functions, each calling the next six (wrapping): millions of call paths of
    // eight hops, one shortest path of seven from f0 to f39.
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("dense");
    std::fs::create_dir_all(&repo).unwrap();
    let mut source = String::new();
    for f in 0..40 {
        source.push_str(&format!("int f{f}(int x);\n"));
    }
    for f in 0..40 {
        let calls: String = (1..=6)
            .map(|k| format!("    x += f{}(x);\n", (f + k) % 40))
            .collect();
        source.push_str(&format!("int f{f}(int x)\n{{\n{calls}    return x;\n}}\n"));
    }
    std::fs::write(repo.join("gen.c"), source).unwrap();
    common::run_ok(&["build", common::arg(&repo)]);
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(
        home.path(),
        &["--root", common::arg(&repo), "--no-watch"],
        &[],
    );
    for threshold in [json!(null), json!(0.0), json!(0.5)] {
        let started = std::time::Instant::now();
        let (_, structured) = c.ok(
            "trace_path",
            json!({"source_entity_id": "gen.c:f0", "target_entity_id": "gen.c:f39",
                   "max_depth": 10, "confidence_threshold": threshold}),
        );
        assert_eq!(structured["found"], true, "{structured}");
        assert_eq!(structured["depth"], 7, "{structured}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "threshold {threshold}: {:?}",
            started.elapsed()
        );
    }
}

/// The hostile-input target of issue 28 for the MCP server, in one session: malformed
/// frames, oversized and mistyped arguments, unknown tools, path tricks and a planted
/// symbolic link, with the gated tools enabled. Every case gets a clear error, the server
/// serves afterwards, and its peak memory stays under 1 GiB.
#[test]
fn a_hostile_session_is_answered_and_stays_under_a_gibibyte() {
    let (_tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.env"),
        "API_KEY=do-not-echo-me\n".repeat(64),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.join("src/planted")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let enabled = "batho_export,batho_load,batho_gc,batho_build";
    let mut c = Client::start(
        home.path(),
        &["--root", repo.to_str().unwrap()],
        &[("BATHO_MCP_TOOLS_ENABLED", enabled)],
    );
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let frames: [&[u8]; 4] = [
        b"{\"jsonrpc\": \"2.0\", \"id\": ",
        b"\xff\xfe not utf-8",
        deep.as_bytes(),
        b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":[1,2]}",
    ];
    for frame in frames {
        c.send_raw(frame);
        let reply = c.next_message();
        assert!(reply["error"]["code"].as_i64().is_some(), "{reply}");
    }
    let big = "x".repeat(7 << 20);
    let secret = outside.path().join("secret.env");
    let secret = secret.to_str().unwrap();
    let calls = [
        ("search_entities", json!({"query": big})),
        ("search_entities", json!({"query": 42})),
        ("graph_query", json!({"limit": "all"})),
        ("no_such_tool", json!({})),
        ("batho_export", json!({"output": "../escape.json"})),
        ("batho_export", json!({"output": "src/planted/out.json"})),
        (
            "batho_export",
            json!({"json_mode": false, "output": ".batho/MANIFEST"}),
        ),
        ("batho_load", json!({"artifact_path": secret})),
        (
            "batho_load",
            json!({"artifact_path": "src/planted/secret.env"}),
        ),
        ("ctx_tree_read", json!({"path": "src/planted/secret.env"})),
        ("ctx_tree_read", json!({"path": secret})),
        ("get_file_graph", json!({"file_path": "../../etc/passwd"})),
        ("batho_gc", json!({"subcommand": "prune", "older_than": -1})),
        ("batho_build", json!({"max_file_size_kb": "huge"})),
    ];
    for (tool, args) in calls {
        let reply = c.call(tool, args.clone());
        assert_eq!(
            reply["isError"],
            json!(true),
            "{tool}({args}) should fail: {reply}"
        );
        let text = reply.to_string();
        assert!(
            !text.contains("do-not-echo-me"),
            "{tool} echoed a file: {text}"
        );
    }
    assert!(!repo.parent().unwrap().join("escape.json").exists());
    assert!(!outside.path().join("out.json").exists());
    let (markdown, _) = c.ok("search_entities", json!({"query": "table_put"}));
    assert!(markdown.contains("table_put"), "{markdown}");
    let peak = c.peak_rss_kib();
    eprintln!("batho mcp peak RSS over the hostile session: {peak} KiB");
    assert!(peak < 1 << 20, "peak RSS {peak} KiB");
}
