//! Session context graphs for coding agents: the ctx-tree tools' engine
//! (`../shared/seeds/ctx-tree-mcp-tools.txt`). What a session read, searched, fetched, ran
//! and noted is kept as typed nodes and edges of a Batho writable graph, one per project
//! under `$BATHO_HOME/ctx/`, and handed back within a token budget. Everything here reads
//! and writes that graph through BQL statements; the MCP server (`batho-mcp`) and the CLI
//! (`batho ctx`) are thin layers over these functions.
//!
//! Module map: `kinds` (the seed's node kinds, edge kinds and statuses), `graph` (opening
//! a project's graph, sessions, making nodes and edges), `chunk` (cutting files at
//! definitions), `read`, `grep`, `lookup` (note, recent, search, neighbors, path to root),
//! `compose` (packing a context block into a budget), `stale` (reads whose file changed), `cap` (the size cap), `browse` (fetching a page under an
//! SSRF guard and extracting its text) and `web` (storing it), `tokens` (exact o200k
//! counts).

#![warn(missing_docs)]

pub mod browse;
pub mod cap;
pub mod chunk;
mod code_links;
pub mod command;
pub mod compose;
pub mod graph;
pub mod grep;
pub mod kinds;
pub mod lookup;
pub mod monitor;
mod parse_split;
pub mod read;
pub mod redact;
pub mod stale;
pub mod tokens;
pub mod web;

pub use graph::{ContextGraph, CtxError, SessionChoice};
