//! [`OpenGraph`]: either kind of graph behind one handle, for front ends that take a path
//! and do not care which kind it holds (`batho query`, `batho-ql`).

use std::collections::BTreeMap;
use std::path::Path;

use batho_lang::PropertyAccess;
use batho_storage::StorageError;

use super::render::{self, Format};
use super::{Database, QueryError, QueryOptions, QueryResult, Value, WritableDatabase};

/// A code graph or a writable graph. One lives per front-end session, so the size
/// difference between the two (a mapped artifact is larger) costs nothing.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum OpenGraph {
    /// A code graph built by `batho build` (read-only to BQL).
    Code(Database),
    /// A writable graph.
    Writable(WritableDatabase),
}

impl OpenGraph {
    /// Opens what `path` holds: a writable graph (as its writer, or read-only when another
    /// process holds the writer lock) or a code graph.
    pub fn open(path: &Path) -> Result<OpenGraph, QueryError> {
        if !WritableDatabase::exists(path) {
            return Database::open(path).map(OpenGraph::Code);
        }
        match WritableDatabase::open(path) {
            Err(QueryError::Storage(StorageError::Locked { .. })) => {
                WritableDatabase::open_read_only(path).map(OpenGraph::Writable)
            }
            other => other.map(OpenGraph::Writable),
        }
    }

    /// Creates an empty writable graph in `path`.
    pub fn create(path: &Path) -> Result<OpenGraph, QueryError> {
        WritableDatabase::create(path).map(OpenGraph::Writable)
    }

    /// Runs a query text.
    pub fn query_with(
        &mut self,
        text: &str,
        params: &BTreeMap<String, Value>,
        opts: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        match self {
            OpenGraph::Code(db) => {
                match crate::maintenance::run_statement(db.dir(), text, params) {
                    // The artifact may have moved to a new generation: read that from now on.
                    Some(Ok(result)) => db.refresh().map(|_| result),
                    Some(Err(error)) => Err(error),
                    None => db.query_with(text, params, opts),
                }
            }
            OpenGraph::Writable(db) => db.execute_with(text, params, opts),
        }
    }

    /// Renders a result of this graph.
    pub fn render(&self, result: &QueryResult, format: Format) -> String {
        match self {
            OpenGraph::Code(db) => render::render(result, &db.graph(), format),
            OpenGraph::Writable(db) => render::render(result, &db.graph(), format),
        }
    }

    /// Reads the properties of result values.
    pub fn with_access<T>(&self, f: impl FnOnce(&dyn PropertyAccess) -> T) -> T {
        match self {
            OpenGraph::Code(db) => f(&db.graph()),
            OpenGraph::Writable(db) => f(&db.graph()),
        }
    }

    /// One line saying what is open, for `:open` and the REPL banner.
    pub fn describe(&self) -> String {
        match self {
            OpenGraph::Code(db) => format!("code graph, generation {}", db.generation()),
            OpenGraph::Writable(db) => {
                let (nodes, relationships) = db.counts();
                let access = if db.is_writable() {
                    "writable"
                } else {
                    "read-only: another process is writing"
                };
                format!("writable graph ({access}), {nodes} nodes, {relationships} relationships")
            }
        }
    }

    /// The queries `:schema` runs: labels and types with their counts.
    pub fn schema_queries(&self) -> &'static [&'static str] {
        match self {
            OpenGraph::Code(_) => &[
                "CALL db.schema() YIELD kind, name, count WITH kind, name, count WHERE count > 0 \
                 RETURN kind, name, count",
            ],
            OpenGraph::Writable(_) => &[
                "MATCH (n) UNWIND labels(n) AS name \
                 RETURN 'label' AS kind, name, count(*) AS count ORDER BY name",
                "MATCH ()-[r]->() \
                 RETURN 'relationship' AS kind, type(r) AS name, count(*) AS count ORDER BY name",
            ],
        }
    }
}
