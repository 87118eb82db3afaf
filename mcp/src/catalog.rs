//! The tool catalogue: each tool declared once (name, arguments, annotations, gating,
//! handler, description). `tools/list`, `tools/call`, gating and the annotations all read
//! this one table, so a tool cannot be listed without a handler or gated under another name.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{CallToolResult, JsonObject};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value as Json};

use crate::error::ToolError;
use crate::state::State;
use crate::tools::{
    admin, args, astria, ctx_tree, delta, files, graph, maintain, patch, query_graph, transfer,
};

/// Runs a tool on its JSON arguments (already checked against the schema's names).
pub(crate) type Handler = fn(&State, &Map<String, Json>) -> Result<CallToolResult, ToolError>;

/// The tool families `batho mcp --toolsets` chooses from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The code-graph tools of `../shared/seeds/batho-mcp-tools.txt`.
    Batho,
    /// Orientation, blast radius and graph health (`astria-mcp-tools.txt`).
    Astria,
    /// The session context graph (`ctx-tree-mcp-tools.txt`).
    Ctx,
}

impl Family {
    /// Every family, in listing order.
    pub const ALL: [Family; 3] = [Family::Batho, Family::Astria, Family::Ctx];

    /// The name `--toolsets` takes.
    pub fn name(self) -> &'static str {
        match self {
            Family::Batho => "batho",
            Family::Astria => "astria",
            Family::Ctx => "ctx",
        }
    }

    /// The family named `name`.
    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|family| family.name() == name)
    }
}

/// One tool, declared once.
pub(crate) struct ToolDef {
    /// The name in `tools/list` and `tools/call`.
    pub name: &'static str,
    /// Its family (`--toolsets`).
    pub family: Family,
    /// What an agent reads in `tools/list`.
    pub description: &'static str,
    /// The JSON schema of the argument struct (schemars).
    pub schema: fn() -> Arc<JsonObject>,
    /// Never changes anything on disk.
    pub read_only: bool,
    /// May replace or delete data (`destructiveHint`).
    pub destructive: bool,
    /// Absent from `tools/list` unless enabled (see [`crate::gating`]).
    pub gated: bool,
    /// Takes seconds, or waits for the disk: run off the async workers.
    pub blocking: bool,
    /// Decodes the arguments, runs the tool and renders its answer (a `tools::Reply`).
    pub handler: Handler,
}

/// Decodes checked arguments into the tool's struct; a type error takes the spec's shape.
pub(crate) fn decode<T: DeserializeOwned>(args: &Map<String, Json>) -> Result<T, ToolError> {
    serde_json::from_value(Json::Object(args.clone())).map_err(|e| {
        ToolError::client(format!("invalid arguments: {e}"))
            .hint("see the tool's input schema in tools/list")
    })
}

macro_rules! tool {
    ($name:literal, $family:ident, $args:ty, $run:path, read_only: $ro:expr, destructive: $de:expr, gated: $ga:expr, blocking: $bl:expr, $desc:literal) => {
        ToolDef {
            name: $name,
            family: Family::$family,
            description: $desc,
            schema: schema_for_type::<$args>,
            read_only: $ro,
            destructive: $de,
            gated: $ga,
            blocking: $bl,
            handler: |state, arguments| {
                $run(state, decode::<$args>(arguments)?).map(CallToolResult::from)
            },
        }
    };
}

/// Every tool, in listing order.
pub(crate) static TOOLS: &[ToolDef] = &[
    tool!(
        "list_repos",
        Batho,
        args::ListReposArgs,
        admin::list_repos,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "List all registered repos with artifact status and entity counts."
    ),
    tool!(
        "add_repo",
        Batho,
        args::AddRepoArgs,
        admin::add_repo,
        read_only: false,
        destructive: false,
        gated: false,
        blocking: false,
        "Register a repository in the Batho MCP registry. The repo must have a .batho artifact (run batho build first)."
    ),
    tool!(
        "remove_repo",
        Batho,
        args::RemoveRepoArgs,
        admin::remove_repo,
        read_only: false,
        destructive: false,
        gated: false,
        blocking: false,
        "Remove a repository from the Batho MCP registry."
    ),
    tool!(
        "graph_overview",
        Batho,
        args::OverviewArgs,
        graph::graph_overview,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Get a high-level overview of the codebase: entity counts, relationship breakdown, file list, community summaries, and ambiguous edge count."
    ),
    tool!(
        "graph_query",
        Batho,
        args::QueryArgs,
        graph::graph_query,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Query the code graph with optional filters. Returns paginated nodes and edges. relation_types=[\"CALLS\"] with relation_direction=\"incoming\" returns the callers of the matched entities."
    ),
    tool!(
        "get_entity",
        Batho,
        args::EntityArgs,
        graph::get_entity,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Get detailed information about a single entity, including its relationships and optionally source code."
    ),
    tool!(
        "trace_path",
        Batho,
        args::TraceArgs,
        files::trace_path,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Find the shortest path between two entities in the code graph using BFS traversal."
    ),
    tool!(
        "get_file_graph",
        Batho,
        args::FileGraphArgs,
        files::get_file_graph,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Get all entities and relationships within a single file. Optionally includes cross-file reference stubs."
    ),
    tool!(
        "file_connectivity",
        Batho,
        args::ConnectivityArgs,
        files::file_connectivity,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "File-level dependency connectivity in both directions, aggregated per file with relation-type counts, max confidence and via symbols. Ideal for impact analysis (who breaks if I change this file?)."
    ),
    tool!(
        "search_entities",
        Batho,
        args::SearchArgs,
        graph::search_entities,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Search for entities by name using substring or regex matching."
    ),
    tool!(
        "get_delta",
        Batho,
        args::DeltaArgs,
        delta::get_delta,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Get incremental changes from the latest patch run (or a specific run). Shows added, removed, modified, and renamed nodes."
    ),
    tool!(
        "batho_status",
        Batho,
        args::StatusArgs,
        admin::batho_status,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Show artifact and watcher status for one or all repos. Read-only."
    ),
    tool!(
        "batho_list_runs",
        Batho,
        args::ListRunsArgs,
        maintain::batho_list_runs,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "List build/patch runs for a repo, newest first: UUID, time, status, git commit and branch, counts, duration. Read-only."
    ),
    tool!(
        "batho_diff",
        Batho,
        args::DiffArgs,
        delta::batho_diff,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Query node-level changes across runs, entities, or files. Read-only."
    ),
    tool!(
        "batho_patch",
        Batho,
        args::PatchArgs,
        patch::batho_patch,
        read_only: false,
        destructive: true,
        gated: false,
        blocking: true,
        "Run an incremental patch on an existing artifact: re-extracts changed, added and deleted files and re-resolves the references they affect. Destructive — modifies the artifact database (commits a new generation, recorded in the audit log)."
    ),
    tool!(
        "batho_fix",
        Batho,
        args::FixArgs,
        maintain::batho_fix,
        read_only: false,
        destructive: true,
        gated: false,
        blocking: true,
        "Run integrity verification and repair on an artifact database (phases: 1 bundle/manifest, 2 state, 3 blobs, 4 graph). Destructive — may set aside corrupt files and publish a repaired generation; dry_run=true only reports. Repairs are recorded in a tamper-evident audit log."
    ),
    tool!(
        "batho_build",
        Batho,
        args::BuildArgs,
        admin::batho_build,
        read_only: false,
        destructive: true,
        gated: true,
        blocking: true,
        "Run a full index build for a repository. Destructive — deletes and rebuilds the artifact database. Disabled by default — enable via Tool Gating."
    ),
    tool!(
        "batho_export",
        Batho,
        args::ExportArgs,
        transfer::batho_export,
        read_only: false,
        destructive: true,
        gated: true,
        blocking: true,
        "Export a JSON view or Pack artifact from the code graph: view=storage (every entity and relationship with every property, run history, source text) or agent (compact entities and resolved relationships, token_budget-aware); json_mode=false writes the transport archive (tar with a blake3 manifest) that batho_load reads. Writes files to disk. Disabled by default — enable via Tool Gating."
    ),
    tool!(
        "batho_load",
        Batho,
        args::LoadArgs,
        transfer::batho_load,
        read_only: false,
        destructive: true,
        gated: true,
        blocking: true,
        "Unpack a transport artifact (the tar written by batho_export json_mode=false) into the repo's .batho artifact: every member's blake3 and the whole artifact are verified before it becomes the current generation; the previous generation stays on disk. Destructive — replaces the current artifact (force=true for another database or newer runs). Disabled by default — enable via Tool Gating."
    ),
    tool!(
        "batho_gc",
        Batho,
        args::GcArgs,
        transfer::batho_gc,
        read_only: false,
        destructive: true,
        gated: true,
        blocking: true,
        "Run garbage collection and maintenance on an artifact database: status (sizes, generations, runs, reclaimable bytes), prune (runs older_than N days, or run_uuid), reclaim (delete files no retained run needs), compact (fold the delta layer into a fresh base). Destructive — may delete old run artifacts. Disabled by default — enable via Tool Gating."
    ),
    tool!(
        "repo_map",
        Astria,
        args::RepoMapArgs,
        astria::repo_map,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Start here: the repository's files ranked by PageRank over the reference graph, each with its top symbols as signatures, cut at about 3 characters per budget unit."
    ),
    tool!(
        "query_graph",
        Astria,
        args::QueryGraphArgs,
        query_graph::query_graph,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Answer a natural-language question with a subgraph: start nodes by BM25 over names, signatures and paths, then a BFS/DFS walk to depth, as NODE and EDGE lines with evidence classes, cut to budget o200k tokens; a truncated answer ends with the cursor to re-run with."
    ),
    tool!(
        "explain",
        Astria,
        args::ExplainArgs,
        astria::explain,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Explain a node (id, qualified name or name): its metadata and its 20 strongest neighbors, each with relation, evidence class, confidence and direction (--> the node points at the neighbor, <-- the neighbor points back). Ambiguous names list the candidates."
    ),
    tool!(
        "get_neighbors",
        Astria,
        args::NeighborsArgs,
        astria::get_neighbors,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "A node's 20 strongest neighbors (by confidence, then the neighbor's PageRank), each with relation, evidence class and direction (-> out, <- in). relation filters before the cap, so no neighbor is lost to it."
    ),
    tool!(
        "shortest_path",
        Astria,
        args::ShortestPathArgs,
        astria::shortest_path,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Shortest path between two nodes (id, qualified name or name), with the relation, evidence class and stored arrow of each hop. directed=true follows stored directions only; detail=high only EXTRACTED and RESOLVED relationships."
    ),
    tool!(
        "affected",
        Astria,
        args::AffectedArgs,
        astria::affected,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Blast radius: everything that depends on a node, or on the entities of changed_files or a git diff, by reverse reachability over calls, references, imports, uses and inherits, each hop with its evidence class (RESOLVED, EXTRACTED, DECLARED, INFERRED)."
    ),
    tool!(
        "list_communities",
        Astria,
        args::CommunitiesArgs,
        astria::list_communities,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "All communities of the code graph, largest first: hub-based label, size, files and cohesion, with the partition's modularity."
    ),
    tool!(
        "god_nodes",
        Astria,
        args::GodNodesArgs,
        astria::god_nodes,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "The most connected entities (degree: relationships other than CONTAINS, both directions), what everything connects through. Files and external stubs only with include_all=true."
    ),
    tool!(
        "graph_stats",
        Astria,
        args::RepoArgs,
        astria::graph_stats,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Counts of nodes, edges, communities, files and entities, and the modularity of the stored communities. 0 nodes means the graph is not built yet."
    ),
    tool!(
        "health",
        Astria,
        args::RepoArgs,
        astria::health,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: true,
        "Code-health score 0-100 from four named parts, each with its evidence: functions nothing uses, #include circles, hub concentration, files changed on disk since the last run."
    ),
    tool!(
        "ctx_tree_read",
        Ctx,
        ctx_tree::ReadArgs,
        ctx_tree::read,
        read_only: false,
        destructive: false,
        gated: false,
        blocking: true,
        "Read a project file into the session graph as semantic chunks (C/C++ cut at definitions, other text in line windows); an unchanged file returns its cached node. Get the text with ctx_tree_compose."
    ),
    tool!(
        "ctx_tree_grep",
        Ctx,
        ctx_tree::GrepArgs,
        ctx_tree::grep,
        read_only: false,
        destructive: false,
        gated: false,
        blocking: true,
        "Ripgrep search of the project (.gitignore honoured, binary files skipped); each hit is stored as a tool_output node. Returns \"nodeId path:line\" entries."
    ),
    tool!(
        "ctx_tree_browse",
        Ctx,
        ctx_tree::BrowseArgs,
        ctx_tree::browse,
        read_only: false,
        destructive: false,
        gated: false,
        blocking: true,
        "Fetch an http(s) URL (private and loopback addresses refused), store its title, description, headings and readable text as a web_chunk node (cached by URL unless force), and return the text cut to budget_tokens."
    ),
    tool!(
        "ctx_tree_compose",
        Ctx,
        ctx_tree::ComposeArgs,
        ctx_tree::compose,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Pack seed nodes and their graph neighbourhood (depth) into one context block of at most budget_tokens o200k tokens, ranked by BM25 for query, closeness and recency; ends with a manifest of included, dropped and truncated nodes."
    ),
    tool!(
        "ctx_tree_search",
        Ctx,
        ctx_tree::SearchArgs,
        ctx_tree::search,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Keyword search (BM25, FTS5 syntax: words ANDed, \"phrase\", prefix*) over every stored node, with status, kind and time filters."
    ),
    tool!(
        "ctx_tree_neighbors",
        Ctx,
        ctx_tree::NeighborsArgs,
        ctx_tree::neighbors,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "Nodes within depth hops (max 5) of a node, nearest first, with the edge kind each was reached by; optional edge_kinds and filters."
    ),
    tool!(
        "ctx_tree_path_to_root",
        Ctx,
        ctx_tree::PathToRootArgs,
        ctx_tree::path_to_root,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "The parent chain (derived_from) from a node up to its session root."
    ),
    tool!(
        "ctx_tree_recent",
        Ctx,
        ctx_tree::RecentArgs,
        ctx_tree::recent,
        read_only: true,
        destructive: false,
        gated: false,
        blocking: false,
        "The most recently stored nodes, newest first, with excerpts."
    ),
    tool!(
        "ctx_tree_note",
        Ctx,
        ctx_tree::NoteArgs,
        ctx_tree::note,
        read_only: false,
        destructive: false,
        gated: false,
        blocking: true,
        "Store a note or observation in the session graph (title: the first line unless given)."
    ),
    tool!(
        "ctx_tree_monitor",
        Ctx,
        ctx_tree::MonitorArgs,
        ctx_tree::monitor,
        read_only: false,
        destructive: true,
        gated: true,
        blocking: true,
        "Run a shell command (sh -c) in the project with a timeout, store its output as a tool_output node with secrets redacted, and return the exit code and the end of the output. Not sandboxed."
    ),
];

/// The tool named `name`.
pub(crate) fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|tool| tool.name == name)
}

/// The names of the gated tools.
pub(crate) fn gated_names() -> impl Iterator<Item = &'static str> {
    TOOLS.iter().filter(|tool| tool.gated).map(|tool| tool.name)
}

/// Refuses argument names the tool's schema does not declare: a misspelt filter
/// (`filepath` for `file_path`) would otherwise be dropped silently and the answer would
/// look filtered while it is not.
pub(crate) fn check_argument_names(
    tool: &ToolDef,
    arguments: &Map<String, Json>,
) -> Result<(), ToolError> {
    let schema = (tool.schema)();
    let valid: Vec<&str> = schema
        .get("properties")
        .and_then(Json::as_object)
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let Some(unknown) = arguments.keys().find(|key| !valid.contains(&key.as_str())) else {
        return Ok(());
    };
    let listed = if valid.is_empty() {
        "none".to_string()
    } else {
        valid.join(", ")
    };
    let error = ToolError::client(format!(
        "Unknown argument '{unknown}' for {}. Valid arguments: {listed}",
        tool.name
    ));
    Err(match closest_name(unknown, valid.iter().copied()) {
        Some(close) => error.hint(format!("did you mean '{close}'?")),
        None => error.hint("see the tool's input schema in tools/list"),
    })
}

/// The most bytes one argument may hold (its strings, all levels): names, queries, paths
/// and patterns are far shorter, and a 10 MB `query` once cost `search_entities` 14 s and
/// 1.2 GB before it answered.
pub(crate) const MAX_ARGUMENT_BYTES: usize = 64 << 10;

/// Arguments that carry documents, and how many bytes each may hold (a whole request is
/// at most `frames::MAX_FRAME_BYTES`, 8 MiB).
const LARGE_ARGUMENTS: &[(&str, &str, usize)] = &[
    ("affected", "diff", 6 << 20),
    ("affected", "changed_files", 4 << 20),
    ("ctx_tree_note", "content", 4 << 20),
    ("ctx_tree_compose", "node_ids", 1 << 20),
];

/// Refuses an argument bigger than its bound ([`MAX_ARGUMENT_BYTES`], or its entry in
/// [`LARGE_ARGUMENTS`]) before anything decodes it.
pub(crate) fn check_argument_sizes(
    tool: &ToolDef,
    arguments: &Map<String, Json>,
) -> Result<(), ToolError> {
    for (name, value) in arguments {
        let bound = LARGE_ARGUMENTS
            .iter()
            .find(|(large_tool, argument, _)| *large_tool == tool.name && argument == name)
            .map_or(MAX_ARGUMENT_BYTES, |(_, _, bytes)| *bytes);
        let size = argument_bytes(value);
        if size > bound {
            return Err(ToolError::client(format!(
                "argument '{name}' of {} holds {size} bytes; at most {bound} are accepted",
                tool.name
            ))
            .hint("narrow the request or split it into several calls"));
        }
    }
    Ok(())
}

/// The bytes an argument holds: its strings and keys, at every level, and a few per
/// other value (so a list of a million numbers counts too).
fn argument_bytes(value: &Json) -> usize {
    match value {
        Json::String(text) => text.len(),
        Json::Array(items) => items.iter().map(|item| 1 + argument_bytes(item)).sum(),
        Json::Object(map) => map
            .iter()
            .map(|(key, item)| key.len() + argument_bytes(item))
            .sum(),
        Json::Null | Json::Bool(_) | Json::Number(_) => 8,
    }
}

/// The candidate closest to `given` when it is close enough to be a likely typo.
pub(crate) fn closest_name<'a>(
    given: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let given = given.to_ascii_lowercase();
    candidates
        .map(|candidate| {
            let plain = |text: &str| text.replace(['_', '-'], "");
            let distance = if plain(candidate) == plain(&given) {
                0
            } else {
                strsim::levenshtein(&given, &candidate.to_ascii_lowercase())
            };
            (distance, candidate)
        })
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 3))
        .min()
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_large_argument_names_a_real_tool_argument() {
        for (tool_name, argument, bytes) in LARGE_ARGUMENTS {
            let tool = find(tool_name).unwrap_or_else(|| panic!("no tool {tool_name}"));
            let schema = (tool.schema)();
            assert!(
                schema["properties"].get(*argument).is_some(),
                "{tool_name} has no argument {argument}"
            );
            assert!(*bytes > MAX_ARGUMENT_BYTES && *bytes < crate::frames::MAX_FRAME_BYTES);
        }
    }

    #[test]
    fn sizes_count_every_level() {
        let nested = serde_json::json!({"a": ["xy", {"bcd": "efgh"}], "n": 1});
        assert_eq!(argument_bytes(&nested), 1 + (1 + 2) + (1 + 3 + 4) + 1 + 8);
    }
}
