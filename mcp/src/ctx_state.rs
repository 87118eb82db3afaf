//! The ctx-tree tools' share of the server state: the project's session graph, opened on
//! the first ctx-tree call (so a server that never uses those tools never takes the
//! graph's writer lock) with a new session root for this server.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use batho_ctx::graph::{ContextGraph, CtxError, SessionChoice};

use crate::error::ToolError;
use crate::server::ServerOptions;

/// See the module documentation.
pub(crate) struct CtxState {
    home: PathBuf,
    /// The project the session graph is for: `--root`, else the first registered repo,
    /// else the folder the server was started in (fixed at start).
    project_root: PathBuf,
    graph: Mutex<Option<ContextGraph>>,
    /// `--allow-private-urls`: `ctx_tree_browse` may fetch loopback and private addresses.
    pub allow_private_urls: bool,
    /// Join the newest session instead of starting one.
    session: SessionChoice,
    /// The graph's size cap, in characters of text.
    max_text_chars: u64,
}

impl CtxState {
    pub(crate) fn new(home: PathBuf, project_root: PathBuf, options: &ServerOptions) -> Self {
        CtxState {
            home,
            project_root,
            graph: Mutex::new(None),
            allow_private_urls: options.allow_private_urls,
            session: if options.ctx_continue_session {
                SessionChoice::Latest
            } else {
                SessionChoice::New
            },
            max_text_chars: options
                .ctx_max_text_chars
                .unwrap_or(batho_ctx::cap::DEFAULT_MAX_TEXT_CHARS),
        }
    }

    /// The open session graph (opened and given a session root on first use).
    pub(crate) fn graph(&self) -> Result<MutexGuard<'_, Option<ContextGraph>>, ToolError> {
        let mut guard = self.graph.lock().map_err(|_| {
            ToolError::server("the session graph lock was poisoned by a failed call")
        })?;
        if guard.is_none() {
            let mut graph = ContextGraph::open(&self.home, &self.project_root, self.session)
                .map_err(|error| {
                    ToolError::server(format!(
                        "cannot open the session graph of {}: {error}",
                        self.project_root.display()
                    ))
                    .hint("another batho process may hold it; `batho ctx` commands and a second server for the same project wait for the first to exit")
                })?;
            graph.set_text_cap(self.max_text_chars);
            // Calls run concurrently and queue on this mutex: each appends its writes and
            // waits for the disk after letting go (`with_graph`), so the writes of the
            // calls queued meanwhile share one fsync.
            graph.set_group_commit(true);
            *guard = Some(graph);
        }
        Ok(guard)
    }
}

/// A ctx library error in the tools' error shape.
pub(crate) fn tool_error(error: CtxError) -> ToolError {
    match error {
        CtxError::NodeNotFound(_) => ToolError::client(error.to_string())
            .hint("ctx_tree_recent lists node ids; ctx_tree_search finds them by words"),
        CtxError::Invalid(_) => ToolError::client(error.to_string()),
        CtxError::Query(query) if query.is_query_error() => ToolError::client(query.to_string()),
        other => ToolError::server(other.to_string()),
    }
}
