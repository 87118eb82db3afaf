//! `batho map`, `batho ask`, `batho explain`, `batho path`, `batho affected`,
//! `batho communities` and `batho health`: the Astria tools for people and
//! scripts. Each runs the MCP tool itself (`batho_mcp::BathoServer::call`) on the
//! repository, so the text is the tool's text and `--json` its `structuredContent`.

use std::path::PathBuf;

use batho_engine::build::artifact_dir;
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};

use crate::{Failure, no_artifact, repo_path};

/// Where the graph is and how to print the answer, for every Astria verb.
#[derive(Args, Debug)]
pub(crate) struct Output {
    /// Repository root (default: the current directory).
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,
    /// Print the tool's structured answer as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ExplainArgs {
    /// An entity id, a qualified name or a name.
    node: String,
    #[command(flatten)]
    output: Output,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Detail {
    /// Everything: every relationship, every symbol.
    All,
    /// Only what is defensible: EXTRACTED and RESOLVED relationships (map: definitions only).
    High,
}

#[derive(Args, Debug)]
pub(crate) struct PathArgs {
    /// Start node: an entity id, a qualified name or a name.
    source: String,
    /// End node.
    target: String,
    /// Follow relationships only in their stored direction.
    #[arg(long)]
    directed: bool,
    /// Which relationships a hop may use.
    #[arg(long, value_enum, default_value = "all")]
    detail: Detail,
    #[command(flatten)]
    output: Output,
}

#[derive(Args, Debug)]
pub(crate) struct CommunitiesArgs {
    /// Most communities to list, largest first.
    #[arg(long, value_name = "N", default_value_t = 100)]
    limit: i64,
    /// Communities to skip.
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: i64,
    #[command(flatten)]
    output: Output,
}

#[derive(Args, Debug)]
pub(crate) struct MapArgs {
    /// Approximate size: the map is cut at about 3 characters per unit.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    budget: i64,
    /// `high` lists definitions only (no prototypes or forward declarations).
    #[arg(long, value_enum, default_value = "all")]
    detail: Detail,
    #[command(flatten)]
    output: Output,
}

pub(crate) fn map(args: MapArgs) -> Result<(), Failure> {
    run_tool(
        args.output,
        "repo_map",
        json!({"budget": args.budget, "detail": detail_name(args.detail)}),
    )
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    /// Breadth-first.
    Bfs,
    /// Depth-first.
    Dfs,
}

#[derive(Args, Debug)]
pub(crate) struct AskArgs {
    /// A natural-language question; its words find the start nodes.
    question: String,
    /// How to walk from the start nodes.
    #[arg(long, value_enum, default_value = "bfs")]
    mode: Mode,
    /// Maximum traversal depth (0 to 6).
    #[arg(long, value_name = "N", default_value_t = 2)]
    depth: i64,
    /// Maximum o200k_base tokens of the answer, header and continuation line included.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    budget: i64,
    /// Follow relationships only in their stored direction.
    #[arg(long)]
    directed: bool,
    /// Which relationships to follow: all, or high (only EXTRACTED and RESOLVED).
    #[arg(long, value_enum, default_value = "all")]
    detail: Detail,
    /// The record to start at (the cursor a truncated answer names).
    #[arg(long, value_name = "N", default_value_t = 0)]
    cursor: i64,
    #[command(flatten)]
    output: Output,
}

pub(crate) fn ask(args: AskArgs) -> Result<(), Failure> {
    // The o200k encoder takes ~100 ms to build on first use: built on a second thread
    // while the artifact is opened, searched and walked, it is ready when the page is cut.
    std::thread::spawn(|| batho_mcp::tokens::count(""));
    let mode = match args.mode {
        Mode::Bfs => "bfs",
        Mode::Dfs => "dfs",
    };
    run_tool(
        args.output,
        "query_graph",
        json!({"question": args.question, "mode": mode, "depth": args.depth,
               "budget": args.budget, "directed": args.directed,
               "detail": detail_name(args.detail), "cursor": args.cursor}),
    )
}

#[derive(Args, Debug)]
pub(crate) struct AffectedArgs {
    /// The node that changes: an entity id, a qualified name or a name.
    node: Option<String>,
    /// A unified diff (`git diff > change.diff`; `-` reads standard input): the entities
    /// holding its changed lines are what changes.
    #[arg(long, value_name = "FILE")]
    diff: Option<PathBuf>,
    /// Files whose entities all change; repeatable.
    #[arg(long = "file", value_name = "PATH")]
    files: Vec<String>,
    /// Hops of reverse reachability.
    #[arg(long, value_name = "N", default_value_t = 2)]
    depth: i64,
    /// Only this impact relation (calls, references, imports, uses, inherits, ...).
    #[arg(long, value_name = "NAME")]
    relation: Option<String>,
    #[command(flatten)]
    output: Output,
}

pub(crate) fn affected(args: AffectedArgs) -> Result<(), Failure> {
    let mut arguments = json!({"depth": args.depth});
    if let Some(node) = args.node {
        arguments["node"] = node.into();
    }
    if !args.files.is_empty() {
        arguments["changed_files"] = args.files.into();
    }
    if let Some(relation) = args.relation {
        arguments["relation"] = relation.into();
    }
    if let Some(path) = args.diff {
        let text = if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text)
        } else {
            std::fs::read(&path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        }
        .map_err(|e| Failure {
            message: format!("cannot read the diff {}: {e}", path.display()),
            hint: Some("give a file written by `git diff`, or - for standard input".into()),
            code: 2,
        })?;
        arguments["diff"] = text.into();
    }
    run_tool(args.output, "affected", arguments)
}

#[derive(Args, Debug)]
pub(crate) struct HealthArgs {
    #[command(flatten)]
    output: Output,
}

pub(crate) fn health(args: HealthArgs) -> Result<(), Failure> {
    run_tool(args.output, "health", json!({}))
}

pub(crate) fn explain(args: ExplainArgs) -> Result<(), Failure> {
    run_tool(args.output, "explain", json!({"node": args.node}))
}

pub(crate) fn path(args: PathArgs) -> Result<(), Failure> {
    run_tool(
        args.output,
        "shortest_path",
        json!({"source": args.source, "target": args.target, "directed": args.directed,
               "detail": detail_name(args.detail)}),
    )
}

pub(crate) fn communities(args: CommunitiesArgs) -> Result<(), Failure> {
    run_tool(
        args.output,
        "list_communities",
        json!({"limit": args.limit, "offset": args.offset}),
    )
}

fn detail_name(detail: Detail) -> &'static str {
    match detail {
        Detail::All => "all",
        Detail::High => "high",
    }
}

/// Runs `tool` on the repository and prints its text (or, with `--json`, its structured
/// answer); a tool error is a failure with the tool's message and hint (exit 1).
fn run_tool(output: Output, tool: &str, arguments: Value) -> Result<(), Failure> {
    let root = repo_path(output.repo);
    if !artifact_dir(&root).join("MANIFEST").is_file() {
        return Err(no_artifact(&root));
    }
    let server = batho_mcp::BathoServer::new(&batho_mcp::ServerOptions {
        root: Some(root.clone()),
        no_watch: true,
        ..batho_mcp::ServerOptions::default()
    })
    .map_err(|e| Failure {
        message: e.to_string(),
        hint: Some("check $BATHO_HOME/registry.json and batho.yaml".into()),
        code: 2,
    })?;
    print_tool_answer(&server, tool, arguments, output.json)
}

/// Runs `tool` on `server` and prints its text (or, with `json`, its structured answer);
/// a tool error is a failure with the tool's message and hint (exit 1).
pub(crate) fn print_tool_answer(
    server: &batho_mcp::BathoServer,
    tool: &str,
    arguments: Value,
    json: bool,
) -> Result<(), Failure> {
    let arguments: Map<String, Value> = match arguments {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let result = serde_json::to_value(server.call(tool, &arguments)).unwrap_or_default();
    let structured = &result["structuredContent"];
    if result["isError"] == json!(true) {
        return Err(Failure {
            message: structured["message"]
                .as_str()
                .unwrap_or("the tool failed")
                .to_string(),
            hint: structured["hint"].as_str().map(str::to_string),
            code: 1,
        });
    }
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(structured).unwrap_or_default()
        );
    } else {
        for block in result["content"].as_array().into_iter().flatten() {
            out!("{}", block["text"].as_str().unwrap_or_default());
        }
    }
    Ok(())
}
