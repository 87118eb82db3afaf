//! Batho's engine: everything between a repository on disk and an answer to a query.
//!
//! It joins the store (`batho-storage`) and the language (`batho-lang`): `discover`,
//! `source` and `git` find and read what to index; `extract` walks each file's
//! tree-sitter syntax tree once into compact facts; `resolve` links those facts into a
//! graph with the confidence tiers of the specification; `algo` holds graph algorithms
//! (communities); `build` runs the whole pipeline and commits a generation; `status`
//! reports on an artifact; `patch` re-indexes only what changed; `diff` compares two
//! generations (a run's delta); `export` writes the JSON views; `query` plans and
//! executes BQL over an open artifact and is the API every front end (CLI, REPL, MCP
//! server) uses; `watch` keeps a repository's artifact fresh as its files change.

pub mod algo;
pub mod build;
pub mod changed_lines;
pub mod config;
pub mod diff;
pub mod discover;
pub mod export;
pub mod extract;
pub mod facts_cache;
pub mod git;
pub mod maintenance;

/// The storage layer itself, for integration tests that plant damage in an artifact's
/// files or commit through the storage writer. It exists only with the `testing` feature,
/// which dev-dependencies turn on: a front end's program reaches the store through the
/// engine's API alone (`tests/one_door.rs`).
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use batho_storage as storage;
}
pub mod mem;
mod par;

/// The way out of an error about an artifact (build it, rebuild it, fix it, wait for the
/// writer), named by the engine and worded by each front end for its reader.
pub use batho_storage::Remedy;
pub mod patch;
pub mod query;
pub mod repo_files;
pub mod resolve;
pub mod source;
pub mod stamps;
pub mod status;
pub mod watch;
pub mod yaml_lists;
