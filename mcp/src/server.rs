//! The rmcp handler: tools/list (gated tools left out), tools/call (arguments decoded here
//! so every failure takes the spec's error shape), and the stdio entry points.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;

use crate::error::{ServeError, ToolError};
use crate::gating::Gating;
use crate::registry::{Registry, RepoEntry, batho_home};
use crate::state::State;
use crate::tools::{admin, args, delta, files, graph, maintain, patch, transfer};

/// How `batho mcp` was started.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// A repository served for this session as the default repo (not persisted).
    pub root: Option<PathBuf>,
    /// Tools enabled with `--enable-tool`.
    pub enable_tools: Vec<String>,
    /// `--no-watch`: do not watch any repository (answers may then go stale).
    pub no_watch: bool,
    /// Overrides `$BATHO_HOME`.
    pub home: Option<PathBuf>,
}

const INSTRUCTIONS: &str = "Batho serves a code graph of C/C++ repositories (functions, types, macros, files and their CALLS/INCLUDES/REFERENCES/... edges with confidence). \
Which tool answers what: orientation → graph_overview; find a symbol by name → search_entities; everything about one entity (callers, callees, source) → get_entity (include_source=true for code); \
who calls X / what X calls / filtered lists → graph_query (relation_types=[\"CALLS\"], relation_direction=\"incoming\" for callers; file_path, entity_types, name_pattern, symbol_roles, confidence_threshold); \
how A reaches B → trace_path; what one file contains → get_file_graph; which files depend on a file / impact of a change → file_connectivity; repos → list_repos/add_repo/remove_repo; freshness → batho_status; what changed → get_delta (one run) / batho_diff (by entity, file or since a run), runs → batho_list_runs. \
Entity ids look like 'src/file.c:qualified::name'. Every answer carries meta.query: the BQL that produced it (paste into batho-ql). Outputs respect max_tokens and say when they are truncated.";

/// The server: shared state plus the set of tools it exposes.
#[derive(Clone)]
pub struct BathoServer {
    state: Arc<State>,
    gating: Arc<Gating>,
}

struct ToolDef {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Arc<rmcp::model::JsonObject>,
    read_only: bool,
}

fn defs() -> Vec<ToolDef> {
    macro_rules! def {
        ($name:literal, $ty:ty, $ro:expr, $desc:literal) => {
            ToolDef {
                name: $name,
                description: $desc,
                schema: schema_for_type::<$ty>,
                read_only: $ro,
            }
        };
    }
    vec![
        def!(
            "list_repos",
            args::NoArgs,
            true,
            "List all registered repos with artifact status and entity counts."
        ),
        def!(
            "add_repo",
            args::AddRepoArgs,
            false,
            "Register a repository in the Batho MCP registry. The repo must have a .batho artifact (run batho build first)."
        ),
        def!(
            "remove_repo",
            args::RemoveRepoArgs,
            false,
            "Remove a repository from the Batho MCP registry."
        ),
        def!(
            "graph_overview",
            args::OverviewArgs,
            true,
            "Get a high-level overview of the codebase: entity counts, relationship breakdown, file list, community summaries, and ambiguous edge count."
        ),
        def!(
            "graph_query",
            args::QueryArgs,
            true,
            "Query the code graph with optional filters. Returns paginated nodes and edges. relation_types=[\"CALLS\"] with relation_direction=\"incoming\" returns the callers of the matched entities."
        ),
        def!(
            "get_entity",
            args::EntityArgs,
            true,
            "Get detailed information about a single entity, including its relationships and optionally source code."
        ),
        def!(
            "trace_path",
            args::TraceArgs,
            true,
            "Find the shortest path between two entities in the code graph using BFS traversal."
        ),
        def!(
            "get_file_graph",
            args::FileGraphArgs,
            true,
            "Get all entities and relationships within a single file. Optionally includes cross-file reference stubs."
        ),
        def!(
            "file_connectivity",
            args::ConnectivityArgs,
            true,
            "File-level dependency connectivity in both directions, aggregated per file with relation-type counts, max confidence and via symbols. Ideal for impact analysis (who breaks if I change this file?)."
        ),
        def!(
            "search_entities",
            args::SearchArgs,
            true,
            "Search for entities by name using substring or regex matching."
        ),
        def!(
            "get_delta",
            args::DeltaArgs,
            true,
            "Get incremental changes from the latest patch run (or a specific run). Shows added, removed, modified, and renamed nodes."
        ),
        def!(
            "batho_status",
            args::StatusArgs,
            true,
            "Show artifact and watcher status for one or all repos. Read-only."
        ),
        def!(
            "batho_list_runs",
            args::ListRunsArgs,
            true,
            "List build/patch runs for a repo, newest first: UUID, time, status, git commit and branch, counts, duration. Read-only."
        ),
        def!(
            "batho_diff",
            args::DiffArgs,
            true,
            "Query node-level changes across runs, entities, or files. Read-only."
        ),
        def!(
            "batho_patch",
            args::PatchArgs,
            false,
            "Run an incremental patch on an existing artifact: re-extracts changed, added and deleted files and re-resolves the references they affect. Destructive — modifies the artifact database (commits a new generation, recorded in the audit log)."
        ),
        def!(
            "batho_fix",
            args::FixArgs,
            false,
            "Run integrity verification and repair on an artifact database (phases: 1 bundle/manifest, 2 state, 3 blobs, 4 graph). Destructive — may set aside corrupt files and publish a repaired generation; dry_run=true only reports. Repairs are recorded in a tamper-evident audit log."
        ),
        def!(
            "batho_build",
            args::BuildArgs,
            false,
            "Run a full index build for a repository. Destructive — deletes and rebuilds the artifact database. Disabled by default — enable via Tool Gating."
        ),
        def!(
            "batho_export",
            args::ExportArgs,
            false,
            "Export a JSON view or Pack artifact from the code graph: view=storage (every entity and relationship with every property, run history, source text) or agent (compact entities and resolved relationships, token_budget-aware); json_mode=false writes the transport archive (tar with a blake3 manifest) that batho_load reads. Writes files to disk. Disabled by default — enable via Tool Gating."
        ),
        def!(
            "batho_load",
            args::LoadArgs,
            false,
            "Unpack a transport artifact (the tar written by batho_export json_mode=false) into the repo's .batho artifact: every member's blake3 and the whole artifact are verified before it becomes the current generation; the previous generation stays on disk. Destructive — replaces the current artifact (force=true for another database or newer runs). Disabled by default — enable via Tool Gating."
        ),
        def!(
            "batho_gc",
            args::GcArgs,
            false,
            "Run garbage collection and maintenance on an artifact database: status (sizes, generations, runs, reclaimable bytes), prune (runs older_than N days, or run_uuid), reclaim (delete files no retained run needs), compact (not available yet). Destructive — may delete old run artifacts. Disabled by default — enable via Tool Gating."
        ),
    ]
}

/// A warning for the person running the server: logs go to stderr, never stdout (the
/// MCP channel).
fn warn_operator(message: &str) {
    eprintln!("batho mcp: warning: {message}");
}

fn decode<T: DeserializeOwned>(
    args: &serde_json::Map<String, serde_json::Value>,
) -> Result<T, ToolError> {
    serde_json::from_value(serde_json::Value::Object(args.clone())).map_err(|e| {
        ToolError::client(format!("invalid arguments: {e}"))
            .hint("see the tool's input schema in tools/list")
    })
}

impl BathoServer {
    /// Loads the registry and gating for `opts`.
    pub fn new(opts: &ServerOptions) -> Result<BathoServer, ServeError> {
        let home = opts.home.clone().unwrap_or_else(batho_home);
        let registry = Registry::load(&home).map_err(|e| ServeError::Config(e.to_string()))?;
        let mut gating = Gating::default();
        gating.apply_yaml_file(&home.join("batho.yaml"));
        let session = match &opts.root {
            Some(root) => {
                let path = root
                    .canonicalize()
                    .map_err(|e| ServeError::Config(format!("--root {}: {e}", root.display())))?;
                gating.apply_yaml_file(&path.join("batho.yaml"));
                let base = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "root".into());
                // Same path already registered: reuse its name; a name clash with another
                // path gets a suffix so both stay addressable.
                let name = match registry.repos().iter().find(|r| r.path == path) {
                    Some(r) => r.name.clone(),
                    None if registry.get(&base).is_some() => format!("{base}-root"),
                    None => base,
                };
                Some(RepoEntry {
                    name,
                    path,
                    watch: !opts.no_watch,
                    debounce_ms: 2000,
                    max_file_size_kb: None,
                })
            }
            None => None,
        };
        gating.apply_env();
        gating.enable(opts.enable_tools.iter().map(String::as_str));
        let state = Arc::new(State::new(registry, session, opts.no_watch));
        for repo in state.repos() {
            if let Some(Err(e)) = state.watch(&repo) {
                warn_operator(&format!("not watching '{}': {e}", repo.name));
            }
        }
        Ok(BathoServer {
            state,
            gating: Arc::new(gating),
        })
    }

    /// The names of the tools served, in listing order.
    pub fn tool_names(&self) -> Vec<&'static str> {
        defs()
            .into_iter()
            .filter(|d| self.gating.is_enabled(d.name))
            .map(|d| d.name)
            .collect()
    }

    fn tools(&self) -> Vec<Tool> {
        defs()
            .into_iter()
            .filter(|d| self.gating.is_enabled(d.name))
            .map(|d| {
                let ann = ToolAnnotations::new()
                    .read_only(d.read_only)
                    .destructive(matches!(
                        d.name,
                        "batho_build" | "batho_fix" | "batho_patch" | "batho_load" | "batho_gc"
                    ))
                    .idempotent(d.read_only)
                    .open_world(false);
                Tool::new(d.name, d.description, (d.schema)()).with_annotations(ann)
            })
            .collect()
    }

    /// Runs one tool by name on JSON arguments; every failure is a result in the spec's
    /// error shape (never a protocol error, never a crash).
    pub fn call(
        &self,
        name: &str,
        args: &serde_json::Map<String, serde_json::Value>,
    ) -> CallToolResult {
        let st = &self.state;
        let run = || -> Result<CallToolResult, ToolError> {
            if !self.gating.is_enabled(name) || !defs().iter().any(|d| d.name == name) {
                let err = ToolError::client(format!("Unknown or disabled tool: {name}"));
                return Err(if crate::gating::GATED.contains(&name) {
                    err.hint(format!("enable it with 'batho mcp --enable-tool {name}', BATHO_MCP_TOOLS_ENABLED or batho.yaml mcp.tools.enabled"))
                } else {
                    err
                });
            }
            match name {
                "list_repos" => admin::list_repos(st, decode(args)?),
                "add_repo" => admin::add_repo(st, decode(args)?),
                "remove_repo" => admin::remove_repo(st, decode(args)?),
                "graph_overview" => graph::graph_overview(st, decode(args)?),
                "graph_query" => graph::graph_query(st, decode(args)?),
                "get_entity" => graph::get_entity(st, decode(args)?),
                "search_entities" => graph::search_entities(st, decode(args)?),
                "trace_path" => files::trace_path(st, decode(args)?),
                "get_file_graph" => files::get_file_graph(st, decode(args)?),
                "file_connectivity" => files::file_connectivity(st, decode(args)?),
                "batho_status" => admin::batho_status(st, decode(args)?),
                "batho_build" => admin::batho_build(st, decode(args)?),
                "batho_list_runs" => maintain::batho_list_runs(st, decode(args)?),
                "get_delta" => delta::get_delta(st, decode(args)?),
                "batho_diff" => delta::batho_diff(st, decode(args)?),
                "batho_fix" => maintain::batho_fix(st, decode(args)?),
                "batho_patch" => patch::batho_patch(st, decode(args)?),
                "batho_export" => transfer::batho_export(st, decode(args)?),
                "batho_load" => transfer::batho_load(st, decode(args)?),
                "batho_gc" => transfer::batho_gc(st, decode(args)?),
                other => Err(ToolError::client(format!("Unknown tool: {other}"))),
            }
        };
        // A bug in one tool must not take the server down: a panic becomes an error result.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => e.into_result(),
            Err(_) => ToolError::server(format!("internal error in tool {name}"))
                .hint("this is a bug; please report it with the arguments used")
                .into_result(),
        }
    }
}

impl ServerHandler for BathoServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("batho", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let name = request.name.to_string();
        let result = if matches!(
            name.as_str(),
            "batho_build" | "batho_export" | "batho_load" | "batho_gc"
        ) {
            // Builds, exports and loads take seconds: keep them off the async workers.
            let me = self.clone();
            tokio::task::spawn_blocking(move || me.call(&name, &args))
                .await
                .unwrap_or_else(|_| ToolError::server("the build task failed").into_result())
        } else {
            self.call(&name, &args)
        };
        Ok(result.into())
    }
}

/// Serves MCP over stdin/stdout until stdin closes.
pub async fn serve_stdio(opts: ServerOptions) -> Result<(), ServeError> {
    let server = BathoServer::new(&opts)?;
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Transport(e.to_string()))?;
    Ok(())
}

/// [`serve_stdio`] on a fresh multi-threaded runtime (for callers without one).
pub fn serve_stdio_blocking(opts: ServerOptions) -> Result<(), ServeError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?
        .block_on(serve_stdio(opts))
}
