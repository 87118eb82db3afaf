//! The rmcp handler: tools/list (gated tools left out), tools/call (arguments decoded here
//! so every failure takes the spec's error shape), and the stdio entry points.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

use crate::catalog;
use crate::ctx_state::CtxState;
use crate::error::{ServeError, ToolError};
use crate::frames;
use crate::gating::Gating;
use crate::registry::{Registry, RepoEntry, batho_home};
use crate::state::State;

/// How `batho mcp` was started.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// A repository served for this session as the default repo (not persisted).
    pub root: Option<PathBuf>,
    /// Tools enabled with `--enable-tool`.
    pub enable_tools: Vec<String>,
    /// Tool families chosen with `--toolsets` (none given: the configuration's, or all).
    pub toolsets: Vec<String>,
    /// `--no-watch`: do not watch any repository (answers may then go stale).
    pub no_watch: bool,
    /// Overrides `$BATHO_HOME`.
    pub home: Option<PathBuf>,
    /// `--allow-private-urls`: `ctx_tree_browse` may fetch loopback, private and
    /// link-local addresses (off: refused after DNS resolution).
    pub allow_private_urls: bool,
    /// The ctx-tree tools write into the newest session of the project's graph instead
    /// of starting one (the `batho ctx` commands: one session per server, not per command).
    pub ctx_continue_session: bool,
    /// `--ctx-max-text-chars`: the session graph's size cap (`batho_ctx::cap`); `None`:
    /// the default.
    pub ctx_max_text_chars: Option<u64>,
}

const INSTRUCTIONS: &str = "Batho serves a code graph of C/C++ repositories (functions, types, macros, files and their CALLS/INCLUDES/REFERENCES/... edges with confidence). \
Which tool answers what: orientation → graph_overview; find a symbol by name → search_entities; everything about one entity (callers, callees, source) → get_entity (include_source=true for code); \
who calls X / what X calls / filtered lists → graph_query (relation_types=[\"CALLS\"], relation_direction=\"incoming\" for callers; file_path, entity_types, name_pattern, symbol_roles, confidence_threshold); \
how A reaches B → trace_path; what one file contains → get_file_graph; which files depend on a file / impact of a change → file_connectivity; repos → list_repos/add_repo/remove_repo; freshness → batho_status; what changed → get_delta (one run) / batho_diff (by entity, file or since a run), runs → batho_list_runs. \
Astria tools (same graph, ids, qualified names or plain names accepted): orient with repo_map first; ask natural-language questions with query_graph; drill into a symbol with explain / get_neighbors; connect two with shortest_path; check affected (a node, changed_files or a git diff) before changing code; modules → list_communities; hubs → god_nodes; counts → graph_stats; risks → health. \
Session context (ctx_tree_*, one graph per project kept across sessions): read files with ctx_tree_read (chunks, cached when unchanged), search them with ctx_tree_grep, keep findings with ctx_tree_note, find earlier context with ctx_tree_search / ctx_tree_recent, then get the text with ctx_tree_compose(node_ids, budget_tokens) instead of re-reading files. \
Entity ids look like 'src/file.c:qualified::name'. Every answer carries meta.query: the BQL that produced it (paste into batho-ql). Outputs respect max_tokens and say when they are truncated.";

/// The server: shared state plus the set of tools it exposes.
#[derive(Clone)]
pub struct BathoServer {
    state: Arc<State>,
    gating: Arc<Gating>,
}

/// A warning for the person running the server: logs go to stderr, never stdout (the
/// MCP channel).
fn warn_operator(message: &str) {
    eprintln!("batho mcp: warning: {message}");
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
        if !opts.toolsets.is_empty() {
            gating.set_toolsets("--toolsets", opts.toolsets.iter().map(String::as_str));
        }
        gating.enable(
            "--enable-tool",
            opts.enable_tools.iter().map(String::as_str),
        );
        if let Some(message) = gating.unknown_names() {
            return Err(ServeError::Gating(message));
        }
        let project_root = ctx_project_root(session.as_ref(), &registry);
        let ctx = CtxState::new(home.clone(), project_root, opts);
        let state = Arc::new(State::new(registry, session, opts.no_watch, ctx));
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
        catalog::TOOLS
            .iter()
            .filter(|tool| self.gating.is_enabled(tool.name))
            .map(|tool| tool.name)
            .collect()
    }

    fn tools(&self) -> Vec<Tool> {
        catalog::TOOLS
            .iter()
            .filter(|tool| self.gating.is_enabled(tool.name))
            .map(|tool| {
                let annotations = ToolAnnotations::new()
                    .read_only(tool.read_only)
                    .destructive(tool.destructive)
                    .idempotent(tool.read_only)
                    .open_world(false);
                Tool::new(tool.name, tool.description, (tool.schema)())
                    .with_annotations(annotations)
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
        let run = || -> Result<CallToolResult, ToolError> {
            let tool = catalog::find(name)
                .filter(|tool| self.gating.is_enabled(tool.name))
                .ok_or_else(|| unknown_tool(name))?;
            catalog::check_argument_names(tool, args)?;
            catalog::check_argument_sizes(tool, args)?;
            (tool.handler)(&self.state, args)
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
        let result = if catalog::find(&name).is_some_and(|tool| tool.blocking) {
            // Builds, patches, exports and loads take seconds, and a note waits for its fsync
            // (which the notes queued meanwhile share): keep them off the async workers.
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

/// The project the ctx-tree session graph is for: the `--root` repo, else the first
/// registered repo, else the folder the server was started in.
fn ctx_project_root(session: Option<&RepoEntry>, registry: &Registry) -> PathBuf {
    session
        .or_else(|| registry.repos().first())
        .map(|repo| repo.path.clone())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The error for a tool that is not served, with the way to enable a gated one or the
/// closest name for a typo.
fn unknown_tool(name: &str) -> ToolError {
    let error = ToolError::client(format!("Unknown or disabled tool: {name}"));
    if catalog::gated_names().any(|gated| gated == name) {
        return error.hint(format!("enable it with 'batho mcp --enable-tool {name}', BATHO_MCP_TOOLS_ENABLED or batho.yaml mcp.tools.enabled"));
    }
    match catalog::closest_name(name, catalog::TOOLS.iter().map(|tool| tool.name)) {
        Some(close) => error.hint(format!(
            "did you mean '{close}'? tools/list shows the tools served"
        )),
        None => error.hint("tools/list shows the tools served"),
    }
}

/// Serves MCP over stdin/stdout until stdin closes. Frames pass through the guard of
/// [`crate::frames`] on their way in (a broken one gets a JSON-RPC error instead of
/// silence), and rmcp's output and the guard's replies share one writer.
pub async fn serve_stdio(opts: ServerOptions) -> Result<(), ServeError> {
    let server = BathoServer::new(&opts)?;
    // The o200k encoder takes about 55 ms to load on first use: load it while the client
    // is still starting, not inside the first read or compose (it was 70 % of the first
    // `ctx_tree_read` of a 10,000-line file).
    std::thread::spawn(|| batho_ctx::tokens::count(""));
    let (server_input, guard_feed) = tokio::io::duplex(1 << 16);
    let (server_output, server_lines) = tokio::io::duplex(1 << 16);
    let (replies, replies_in) = tokio::sync::mpsc::unbounded_channel();
    let guard = tokio::spawn(frames::guard_input(tokio::io::stdin(), guard_feed, replies));
    let writer = tokio::spawn(frames::merge_output(
        server_lines,
        replies_in,
        tokio::io::stdout(),
    ));
    let transport_error = |e: &dyn std::fmt::Display| ServeError::Transport(e.to_string());
    let running = server
        .serve((server_input, server_output))
        .await
        .map_err(|e| transport_error(&e))?;
    running.waiting().await.map_err(|e| transport_error(&e))?;
    guard.abort();
    // The server's output ended with it; the writer finishes what it holds.
    let _ = writer.await;
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
