//! The Batho MCP server: a stdio Model Context Protocol server over registered code-graph
//! artifacts. Every graph tool compiles to one or more BQL queries (with parameters) that
//! run through [`batho_engine::query::Database`]; the query text travels back in
//! `structuredContent.meta.query` so any answer can be reproduced in `batho-ql`.
//!
//! Modules: [`registry`] (repos under `$BATHO_HOME`, atomic writes), [`gating`] (which
//! destructive tools are exposed), `state` (open databases, freshness per call), `tools`
//! (one function per tool; its answer is one typed value rendered to markdown and to JSON),
//! `server` (the rmcp handler), `ctx_state` (the ctx-tree tools' session graph, over
//! `batho-ctx`). Watched repos are kept fresh by [`batho_engine::watch`].

#![warn(missing_docs)]

mod catalog;
mod ctx_state;
mod error;
pub mod frames;
pub mod gating;
pub mod registry;
mod server;
mod state;
/// Exact o200k_base token counts (kept in `batho-ctx`, which the ctx-tree tools share).
pub use batho_ctx::tokens;
mod tools;

pub use error::{ServeError, ToolError};
pub use server::{BathoServer, ServerOptions, serve_stdio, serve_stdio_blocking};
