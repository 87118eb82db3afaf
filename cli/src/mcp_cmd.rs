//! `batho mcp`: serve the MCP tools over stdio (logs to stderr; stdout is the protocol).

use std::path::PathBuf;

use clap::Args;

use crate::Failure;

/// Serve the Batho MCP tools over stdio (newline-delimited JSON-RPC).
#[derive(Args, Debug)]
pub struct McpArgs {
    /// Also serve this repository, as the default repo of the session (not persisted).
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,
    /// Enable a gated tool (e.g. batho_build); repeatable.
    #[arg(long = "enable-tool", value_name = "NAME")]
    pub enable_tool: Vec<String>,
    /// Serve only these tool families (batho, astria, ctx), comma-separated; default: all.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub toolsets: Vec<String>,
    /// Do not watch repositories for changes.
    #[arg(long)]
    pub no_watch: bool,
    /// Let ctx_tree_browse fetch loopback, private and link-local addresses (refused by
    /// default, after DNS resolution, to keep the server from reaching internal services).
    #[arg(long)]
    pub allow_private_urls: bool,
    /// The most characters of text the project's session graph may hold; past it the
    /// oldest text is pruned (reported in the answer's meta.pruned_to_cap).
    #[arg(long, value_name = "N", default_value_t = batho_ctx::cap::DEFAULT_MAX_TEXT_CHARS)]
    pub ctx_max_text_chars: u64,
}

pub fn run(args: McpArgs) -> Result<(), Failure> {
    let opts = batho_mcp::ServerOptions {
        root: args.root,
        enable_tools: args.enable_tool,
        toolsets: args.toolsets,
        no_watch: args.no_watch,
        home: None,
        allow_private_urls: args.allow_private_urls,
        ctx_continue_session: false,
        ctx_max_text_chars: Some(args.ctx_max_text_chars),
    };
    batho_mcp::serve_stdio_blocking(opts).map_err(|e| {
        let (hint, code) = match e {
            batho_mcp::ServeError::Gating(_) => (
                "fix the name in --enable-tool, --toolsets, BATHO_MCP_TOOLS_ENABLED/_DISABLED/BATHO_MCP_TOOLSETS or batho.yaml; docs/mcp.md lists the tools",
                2,
            ),
            batho_mcp::ServeError::Config(_) => ("check $BATHO_HOME/registry.json and the --root path", 2),
            _ => ("check $BATHO_HOME/registry.json and the --root path", 1),
        };
        Failure {
            message: e.to_string(),
            hint: Some(hint.to_string()),
            code,
        }
    })
}
