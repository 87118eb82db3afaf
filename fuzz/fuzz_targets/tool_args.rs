//! MCP tool arguments: any JSON object given to any read-only graph tool, on a real
//! artifact (the bundled example). The server must answer every call, either with a
//! result or with an error in the spec's shape; a panic inside a tool (which the server
//! turns into "internal error") is a finding.
//!
//! Input: the first byte picks the tool, the rest is the JSON arguments.

#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use batho_engine::build::{BuildOptions, build};
use batho_mcp::{BathoServer, ServerOptions};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// The read-only tools. `add_repo`/`remove_repo` write the registry, `batho_build` indexes
/// whatever path it is given and `batho_fix` repairs the artifact: they are covered by the
/// integration tests instead. Every Astria tool only reads.
const TOOLS: [&str; 20] = [
    "list_repos",
    "graph_overview",
    "graph_query",
    "get_entity",
    "search_entities",
    "trace_path",
    "get_file_graph",
    "file_connectivity",
    "batho_status",
    "batho_list_runs",
    "repo_map",
    "explain",
    "get_neighbors",
    "shortest_path",
    "affected",
    "god_nodes",
    "list_communities",
    "graph_stats",
    "health",
    "query_graph",
];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read example") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn server() -> &'static BathoServer {
    static SERVER: OnceLock<(tempfile::TempDir, BathoServer)> = OnceLock::new();
    &SERVER
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let repo = dir.path().join("demo");
            copy_dir(
                &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo"),
                &repo,
            );
            build(&repo, &BuildOptions::default(), &|_| {}).expect("build the example");
            let home = dir.path().join("home");
            std::fs::create_dir_all(&home).expect("home");
            let opts = ServerOptions {
                root: Some(repo),
                no_watch: true,
                home: Some(home),
                ..ServerOptions::default()
            };
            let server = BathoServer::new(&opts).expect("server");
            (dir, server)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(Value::Object(args)) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let tool = TOOLS[usize::from(pick) % TOOLS.len()];
    check(tool, &args);
});

fn check(tool: &str, args: &Map<String, Value>) {
    let result = server().call(tool, args);
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert!(
        !text.contains("internal error in tool"),
        "{tool} panicked on {args:?}: {text}"
    );
    if result.is_error == Some(true) {
        assert!(text.starts_with("Error: "), "{tool}: error text {text:?}");
        let s = result
            .structured_content
            .as_ref()
            .expect("structured error");
        for key in ["error", "error_type", "message", "retryable"] {
            assert!(s.get(key).is_some(), "{tool}: error without {key}: {s}");
        }
    }
}
