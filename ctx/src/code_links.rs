//! Links from the chunks of a file read to the code they define, when the project has a
//! Batho code graph (`batho build` at the project root): each chunk `references` the code
//! entities whose first line it holds ([`ENTITY_LABEL`] nodes, by code-graph id), and
//! those entities `references` the entities they call or refer to, either way, among the
//! ones some chunk of the session defines. A read of `table.c` after one of `shell.cpp`
//! thus joins `table_put`'s chunk to the chunk of its caller, and `ctx_tree_compose`
//! pulls callers and callees the session has read beside a seed (`compose::gather`).
//!
//! Line numbers come from the code graph as last built or patched; a file edited since
//! links by its old lines until the next `batho patch` (the watcher keeps it current).

use std::path::Path;

use batho_engine::query::{Database, Value};

use crate::chunk::Chunk;
use crate::graph::{ContextGraph, CtxError, int_of, parameters, text_of};
use crate::kinds::ENTITY_LABEL;

/// Relationships of the code graph that join two entities for compose.
const CODE_RELATIONS: &str = "CALLS|REFERENCES";

/// What a read links to.
pub(crate) struct CodeLinks {
    /// `(chunk index, entity id)`.
    defines: Vec<(usize, String)>,
    /// `(entity id, entity id)`: one calls or refers to the other.
    related: Vec<(String, String)>,
}

/// The code entities of `relative` and what they relate to, placed in `chunks`; `None`
/// when the project has no code graph or it does not know the file.
pub(crate) fn code_links(
    project_root: &Path,
    relative: &str,
    chunks: &[Chunk],
) -> Option<CodeLinks> {
    let database = Database::open(project_root).ok()?;
    let path = parameters([("path", Value::from(relative))]);
    let entities = database
        .query(
            // Namespaces and classes contain their members: a few levels down.
            "MATCH (:File {id: $path})-[:CONTAINS*1..6]->(entity) \
             WHERE entity.file = $path AND entity.start_line IS NOT NULL \
             RETURN DISTINCT entity.id, entity.start_line",
            &path,
        )
        .ok()?;
    let defines: Vec<(usize, String)> = entities
        .rows
        .iter()
        .filter_map(|row| {
            // The code graph counts lines from 1, chunks from 0.
            let first_line = usize::try_from(int_of(&row[1]) - 1).ok()?;
            let chunk = chunks
                .iter()
                .position(|chunk| chunk.start_line <= first_line && first_line <= chunk.end_line)?;
            Some((chunk, text_of(&row[0])))
        })
        .collect();
    if defines.is_empty() {
        return None;
    }
    let ids: Vec<Value> = defines
        .iter()
        .map(|(_, id)| Value::from(id.as_str()))
        .collect();
    let related = database
        .query(
            &format!(
                "UNWIND $ids AS id MATCH (entity {{id: id}})-[:{CODE_RELATIONS}]-(other) \
                 WHERE other.file IS NOT NULL AND other.id <> id RETURN DISTINCT id, other.id"
            ),
            &parameters([("ids", Value::List(ids))]),
        )
        .map(|result| {
            result
                .rows
                .iter()
                .map(|row| (text_of(&row[0]), text_of(&row[1])))
                .collect()
        })
        .unwrap_or_default();
    Some(CodeLinks { defines, related })
}

/// Writes `links` for the chunks `chunk_ids` (in chunk order) into the session graph.
pub(crate) fn store_code_links(
    graph: &mut ContextGraph,
    chunk_ids: &[String],
    links: &CodeLinks,
) -> Result<(), CtxError> {
    let defines: Vec<Value> = links
        .defines
        .iter()
        .filter_map(|(chunk, entity)| {
            let chunk = chunk_ids.get(*chunk)?;
            Some(Value::Map(parameters([
                ("chunk", Value::from(chunk.as_str())),
                ("entity", Value::from(entity.as_str())),
            ])))
        })
        .collect();
    graph.query(
        &format!(
            "UNWIND $pairs AS pair MATCH (chunk:Ctx {{id: pair.chunk}}) \
             MERGE (entity:{ENTITY_LABEL} {{id: pair.entity}}) MERGE (chunk)-[:references]->(entity)"
        ),
        parameters([("pairs", Value::List(defines))]),
    )?;
    if links.related.is_empty() {
        return Ok(());
    }
    // Only entities some chunk defines exist: a call into code nobody read links nothing.
    let related: Vec<Value> = links
        .related
        .iter()
        .map(|(from, to)| {
            Value::Map(parameters([
                ("from", Value::from(from.as_str())),
                ("to", Value::from(to.as_str())),
            ]))
        })
        .collect();
    graph.query(
        &format!(
            "UNWIND $pairs AS pair MATCH (from:{ENTITY_LABEL} {{id: pair.from}}) \
             MATCH (to:{ENTITY_LABEL} {{id: pair.to}}) MERGE (from)-[:references]->(to)"
        ),
        parameters([("pairs", Value::List(related))]),
    )?;
    Ok(())
}
