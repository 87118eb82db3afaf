//! The Astria tools on the demo repository, through the real `batho mcp`: node lookup by
//! id, qualified name or name (ambiguous and unknown names refused), evidence classes and
//! stored arrows, toolsets.

mod common;
mod mcp_client;

use mcp_client::{Client, demo};
use serde_json::json;

#[test]
fn explain_names_a_node_and_its_strongest_neighbours() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok("explain", json!({"node": "table_put"}));
    let first_lines: Vec<&str> = markdown.lines().take(5).collect();
    expect_test::expect![[r#"
        NODE table_put [id=src/table.c:table_put src=src/table.c:75 kind=function community=2]
        signature: int table_put(table *t, const char *key, const char *value)
        neighbors: 15 of 15 (strongest first)
        --> calls dup_string [RESOLVED 0.95] ×3 @src/table.c:83
        <-- calls run [RESOLVED 0.95] @src/shell.cpp:24"#]]
    .assert_eq(&first_lines.join("\n"));
    assert_eq!(structured["node"]["id"], "src/table.c:table_put");
    assert_eq!(structured["neighbor_count"], 15);
    let caller = &structured["neighbors"][1];
    assert_eq!(
        (&caller["direction"], &caller["id"], &caller["evidence"]),
        (
            &json!("in"),
            &json!("src/shell.cpp:demo::PutCommand::run"),
            &json!("RESOLVED")
        )
    );
    assert!(
        structured["meta"]["query"].to_string().contains("MATCH"),
        "{structured}"
    );
    // The same node by its id and by its qualified name.
    for label in ["src/table.c:table_put", "demo::PutCommand::run"] {
        let (_, structured) = c.ok("explain", json!({"node": label}));
        assert!(
            structured["node"]["id"]
                .as_str()
                .unwrap()
                .ends_with(label.rsplit(':').next().unwrap())
        );
    }
}

#[test]
fn unknown_and_ambiguous_nodes_are_refused_with_the_candidates() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (text, _) = c.err("explain", json!({"node": "no_such_thing"}));
    assert!(text.contains("node not found: no_such_thing"), "{text}");
    // Two definitions of `run` (and their declarations): listed, not picked.
    let (text, _) = c.err("shortest_path", json!({"source": "run", "target": "main"}));
    assert!(
        text.contains("ambiguous node 'run'")
            && text.contains("src/shell.cpp:demo::GetCommand::run (src/shell.cpp:27)"),
        "{text}"
    );
    // A declaration and one definition: the definition.
    let (_, structured) = c.ok("explain", json!({"node": "execute"}));
    assert_eq!(
        structured["node"]["id"],
        "src/shell.cpp:demo::Shell::execute"
    );
}

#[test]
fn shortest_path_keeps_the_stored_arrows_and_honours_detail() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok(
        "shortest_path",
        json!({"source": "table_put", "target": "main"}),
    );
    // Undirected: the path runs from table_put back to main, the arrows as stored.
    expect_test::expect![[r#"
        NODE table_put [id=src/table.c:table_put src=src/table.c:75 kind=function community=2]
        NODE main [id=src/main.cpp:main src=src/main.cpp:6 kind=function community=4]
        EDGE run --calls [RESOLVED 0.95]--> table_put @src/shell.cpp:24
        EDGE execute --calls [DECLARED 0.65]--> run @src/shell.cpp:67
        EDGE main --calls [DECLARED 0.65]--> execute @src/main.cpp:11
        Path: 3 hops
    "#]]
    .assert_eq(&markdown);
    assert_eq!(structured["hops"], 3);
    assert_eq!(
        structured["edges"][0]["source"],
        "src/shell.cpp:demo::PutCommand::run"
    );
    let (markdown, structured) = c.ok(
        "shortest_path",
        json!({"source": "table_put", "target": "main", "directed": true}),
    );
    assert_eq!(structured["found"], false, "{markdown}");
    // detail=high keeps only EXTRACTED and RESOLVED hops.
    let (markdown, structured) = c.ok(
        "shortest_path",
        json!({"source": "main", "target": "table_put", "detail": "high"}),
    );
    for edge in structured["edges"].as_array().unwrap() {
        assert!(
            ["EXTRACTED", "RESOLVED"].contains(&edge["evidence"].as_str().unwrap()),
            "{markdown}"
        );
    }
    let (text, _) = c.err(
        "shortest_path",
        json!({"source": "main", "target": "table_put", "detail": "medium"}),
    );
    assert!(text.contains("invalid arguments"), "{text}");
}

#[test]
fn list_communities_pages_largest_first() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok("list_communities", json!({}));
    let count = structured["community_count"].as_u64().unwrap();
    assert!(count >= 2, "{markdown}");
    let sizes: Vec<u64> = structured["communities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|community| community["size"].as_u64().unwrap())
        .collect();
    assert!(sizes.windows(2).all(|pair| pair[0] >= pair[1]), "{sizes:?}");
    assert!(structured["modularity"].as_f64().unwrap() > 0.0);
    let (markdown, page) = c.ok("list_communities", json!({"limit": 1, "offset": 1}));
    assert_eq!(page["communities"][0], structured["communities"][1]);
    assert!(markdown.contains("call again with offset=2"), "{markdown}");
}

#[test]
fn toolsets_choose_the_families_listed() {
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &["--toolsets", "astria"], &[]);
    let list = c.request("tools/list", json!({}));
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "repo_map",
            "query_graph",
            "explain",
            "get_neighbors",
            "shortest_path",
            "affected",
            "list_communities",
            "god_nodes",
            "graph_stats",
            "health"
        ]
    );
    let mut c = Client::start(home.path(), &[], &[("BATHO_MCP_TOOLSETS", "batho")]);
    let list = c.request("tools/list", json!({}));
    assert!(
        !list.to_string().contains("\"explain\"") && list.to_string().contains("graph_query"),
        "{list}"
    );
    let out = common::batho()
        .args(["mcp", "--toolsets", "astira"])
        .env("BATHO_HOME", home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did you mean 'astria'"), "{stderr}");
}

/// The CLI verbs print the tool's own text, and `--json` its structured answer.
#[test]
fn cli_verbs_print_what_the_tools_answer() {
    let (_tmp, _home, repo, mut c) = demo();
    let repo = repo.to_str().unwrap();
    for (verb, tool, arguments) in [
        (
            vec!["explain", "table_put"],
            "explain",
            json!({"node": "table_put"}),
        ),
        (
            vec!["path", "main", "table_put", "--directed"],
            "shortest_path",
            json!({"source": "main", "target": "table_put", "directed": true}),
        ),
        (
            vec!["communities", "--limit", "2"],
            "list_communities",
            json!({"limit": 2}),
        ),
    ] {
        let (markdown, structured) = c.ok(tool, arguments);
        let mut args = verb.clone();
        args.extend(["--repo", repo]);
        assert_eq!(common::run_ok(&args), markdown, "{verb:?}");
        args.push("--json");
        let printed: serde_json::Value = serde_json::from_str(&common::run_ok(&args)).unwrap();
        let strip_meta = |mut value: serde_json::Value| {
            value.as_object_mut().unwrap().remove("meta");
            value
        };
        assert_eq!(strip_meta(printed), strip_meta(structured), "{verb:?}");
    }
}

/// Each part of `health` shows its evidence: an unused static function (and not the
/// used one, nor `main`), two headers that include each other, a file edited since the
/// build.
#[test]
fn health_shows_each_part_with_its_evidence() {
    let repo = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(repo.path().join(name), text).unwrap();
    write("a.h", "#include \"b.h\"\nint shared(void);\n");
    write("b.h", "#include \"a.h\"\n");
    write(
        "main.c",
        "#include \"a.h\"\nstatic int unused_helper(void) { return 1; }\n\
         static int used_helper(void) { return 2; }\nint shared(void) { return used_helper(); }\n\
         int main(void) { return shared(); }\n",
    );
    let root = repo.path().to_str().unwrap();
    common::run_ok(&["build", root]);
    write("b.h", "#include \"a.h\"\n/* edited */\n");
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &["--root", root, "--no-watch"], &[]);
    let (markdown, structured) = c.ok("health", json!({}));
    let part = |name: &str| {
        structured["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["part"] == name)
            .unwrap_or_else(|| panic!("no part {name}: {structured}"))
            .clone()
    };
    assert_eq!(
        part("unused_functions")["evidence"],
        json!(["main.c:unused_helper"]),
        "{markdown}"
    );
    assert_eq!(
        part("include_cycles")["evidence"],
        json!([["a.h", "b.h"]]),
        "{markdown}"
    );
    assert_eq!(part("staleness")["evidence"], json!(["b.h"]), "{markdown}");
    let penalties: f64 = structured["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["penalty"].as_f64().unwrap())
        .sum();
    assert_eq!(
        structured["score"],
        json!((100.0 - penalties).round() as i64)
    );
    assert!(markdown.starts_with("HEALTH "), "{markdown}");
    assert!(markdown.contains("a.h → b.h"), "{markdown}");
}

/// god_nodes lists the most connected entities, most connected first; files and external
/// stubs only when asked.
#[test]
fn god_nodes_are_the_most_connected_entities() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok("god_nodes", json!({"limit": 5}));
    let nodes = structured["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 5, "{markdown}");
    let degrees: Vec<i64> = nodes
        .iter()
        .map(|n| n["degree"].as_i64().unwrap())
        .collect();
    assert!(
        degrees.windows(2).all(|pair| pair[0] >= pair[1]),
        "{degrees:?}"
    );
    assert_eq!(nodes[0]["id"], "include/demo/table.h:table", "{markdown}");
    for node in nodes {
        assert_eq!(
            node["degree"].as_i64(),
            Some(node["in_degree"].as_i64().unwrap() + node["out_degree"].as_i64().unwrap())
        );
        assert!(!["File", "External"].contains(&node["kind"].as_str().unwrap()));
    }
    // The degree is what explain counts as neighbours: relationships other than CONTAINS.
    let (_, explained) = c.ok("explain", json!({"node": "src/table.c:table_put"}));
    let put = nodes.iter().find(|n| n["name"] == "table_put").unwrap();
    assert_eq!(put["degree"], explained["neighbor_count"]);
    let (_, all) = c.ok("god_nodes", json!({"limit": 200, "include_all": true}));
    assert!(
        all["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "External"),
        "{all}"
    );
    let (text, _) = c.err("god_nodes", json!({"limit": 0}));
    assert!(text.contains("limit"), "{text}");
}

/// get_neighbors filters by relation before the cap of 20, strongest first.
#[test]
fn get_neighbors_filters_before_the_cap() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok("get_neighbors", json!({"node": "table_put"}));
    let all = structured["neighbors"].as_array().unwrap().clone();
    assert!(
        markdown.contains("<- calls run [id=src/shell.cpp:demo::PutCommand::run]"),
        "{markdown}"
    );
    let confidences: Vec<f64> = all
        .iter()
        .map(|n| n["confidence"].as_f64().unwrap())
        .collect();
    assert!(
        confidences.windows(2).all(|pair| pair[0] >= pair[1]),
        "{confidences:?}"
    );
    let (_, calls) = c.ok(
        "get_neighbors",
        json!({"node": "table_put", "relation": "calls"}),
    );
    let calls = calls["neighbors"].as_array().unwrap();
    assert_eq!(
        calls.len(),
        all.iter().filter(|n| n["relation"] == "CALLS").count()
    );
    assert!(calls.iter().all(|n| n["relation"] == "CALLS"));
    // `uses` is a use of a type or variable: REFERENCES, READS and WRITES.
    let (_, uses) = c.ok(
        "get_neighbors",
        json!({"node": "table_put", "relation": "uses"}),
    );
    assert!(
        uses["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["relation"] == "WRITES"),
        "{uses}"
    );
    let (text, _) = c.err(
        "get_neighbors",
        json!({"node": "table_put", "relation": "Calls"}),
    );
    assert!(text.contains("Invalid relation 'Calls'"), "{text}");
}

/// affected: reverse reachability from a node, from changed files, or from a diff, each
/// reached node once at its shortest depth.
#[test]
fn affected_walks_back_from_a_node_files_or_a_diff() {
    let (_tmp, _home, _repo, mut c) = demo();
    let (markdown, structured) = c.ok("affected", json!({"node": "dup_string", "depth": 3}));
    let reached: Vec<(String, i64)> = structured["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_str().unwrap().to_string(),
                n["depth"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reached,
        [
            ("src/table.c:table_put".to_string(), 1),
            ("src/shell.cpp:demo::PutCommand::run".to_string(), 2),
            ("src/shell.cpp:demo::Shell::execute".to_string(), 3)
        ],
        "{markdown}"
    );
    assert!(
        markdown.contains(
            "depth 1: table_put [id=src/table.c:table_put] --calls [RESOLVED]--> dup_string"
        ),
        "{markdown}"
    );
    // The same change as a diff of table_put's body, and as its file.
    let diff = "--- a/src/table.c\n+++ b/src/table.c\n@@ -84,1 +84,1 @@\n-x\n+y\n";
    let (_, from_diff) = c.ok("affected", json!({"diff": diff}));
    assert_eq!(from_diff["changed"][0]["id"], "src/table.c:table_put");
    assert_eq!(
        from_diff["affected"][0]["id"],
        "src/shell.cpp:demo::PutCommand::run"
    );
    let (_, from_file) = c.ok(
        "affected",
        json!({"changed_files": ["src/table.c"], "depth": 1}),
    );
    let changed: Vec<&str> = from_file["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert!(
        changed.contains(&"src/table.c:table_put") && changed.contains(&"src/table.c:dup_string")
    );
    // Nothing changed is nothing affected twice: the changed entities are not listed.
    assert!(
        from_file["affected"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| !changed.contains(&n["id"].as_str().unwrap()))
    );
    let (text, _) = c.err("affected", json!({}));
    assert!(
        text.contains("needs a node, changed_files or a diff"),
        "{text}"
    );
    let (text, _) = c.err(
        "affected",
        json!({"node": "dup_string", "relation": "contains"}),
    );
    assert!(text.contains("Invalid relation 'contains'"), "{text}");
}

/// graph_stats gives the counts `batho status` gives; repo_map honours its budget.
#[test]
fn graph_stats_and_repo_map() {
    let (_tmp, _home, repo, mut c) = demo();
    let (_, stats) = c.ok("graph_stats", json!({}));
    let status: serde_json::Value = serde_json::from_str(&common::run_ok(&[
        "status",
        repo.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    assert_eq!(stats["entities"], status["entities"], "{stats}\n{status}");
    assert_eq!(stats["files"], status["files"], "{stats}\n{status}");
    assert!(stats["communities"].as_u64().unwrap() >= 2);
    for budget in [100, 300, 2000] {
        let (markdown, structured) = c.ok("repo_map", json!({"budget": budget}));
        let body: usize = markdown
            .lines()
            .filter(|l| !l.starts_with("Map:"))
            .map(|l| l.len() + 1)
            .sum();
        assert!(
            body <= 3 * budget as usize,
            "{budget}: {body} chars\n{markdown}"
        );
        let ranks: Vec<f64> = structured["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rank"].as_f64().unwrap())
            .collect();
        assert!(ranks.windows(2).all(|pair| pair[0] >= pair[1]), "{ranks:?}");
    }
    let (markdown, _) = c.ok("repo_map", json!({}));
    assert!(
        markdown.starts_with("include/demo/table.h:\n"),
        "{markdown}"
    );
    assert!(
        markdown.contains("int table_put(table *t, const char *key, const char *value)"),
        "{markdown}"
    );
    // Macros are listed when something expands them; include guards are not.
    assert!(markdown.contains("TABLE_MIN_BUCKETS"), "{markdown}");
    assert!(!markdown.contains("DEMO_TABLE_H"), "{markdown}");
}
