//! batho_patch: an incremental re-index (`batho_engine::patch`, the same as `batho patch`).
//! Destructive in the contract's sense (it commits a new generation), so every patch that
//! commits is appended to the artifact's hash-chained audit log.

use std::fmt::Write as _;

use batho_engine::patch::{PatchOptions, patch};
use batho_storage::Store;
use batho_storage::audit::AuditLog;
use rmcp::model::CallToolResult;
use serde_json::{Map, json};

use super::args::PatchArgs;
use super::{Answer, positive};
use crate::error::ToolError;
use crate::state::State;

/// Entities added, removed, modified, renamed, relationships added, removed by `run`.
fn run_counts(cx: &mut crate::state::Ctx, run: &str) -> Result<[i64; 6], ToolError> {
    let res = cx.run(
        "CALL db.deltaStats($run) YIELD nodes_added, nodes_removed, nodes_modified, nodes_renamed, edges_added, edges_removed \
         RETURN nodes_added, nodes_removed, nodes_modified, nodes_renamed, edges_added, edges_removed",
        &[("run", batho_engine::query::Value::from(run))],
    )?;
    let mut counts = [0; 6];
    if let Some(row) = res.rows.first() {
        for (count, value) in counts.iter_mut().zip(row) {
            *count = crate::state::i(value);
        }
    }
    Ok(counts)
}

pub(crate) fn batho_patch(st: &State, a: PatchArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    if let Some(b) = a.graph_backend.as_deref()
        && !matches!(b, "auto" | "in-memory" | "arrow")
    {
        return Err(ToolError::client(format!(
            "Invalid graph_backend '{b}'. Valid: auto, in-memory, arrow"
        )));
    }
    let repo = st.resolve(a.repo.name())?;
    let opts = PatchOptions {
        max_file_size_kb: a.max_file_size_kb.or(repo.max_file_size_kb),
        ..PatchOptions::default()
    };
    let rep = patch(&repo.path, &opts).map_err(|e| {
        let err = if e.is_usage() {
            ToolError::client(format!("patch of '{}' failed: {e}", repo.name))
        } else {
            ToolError::server(format!("patch of '{}' failed: {e}", repo.name))
        };
        match e.hint() {
            Some(h) if h.contains("batho build") => err.hint("call batho_build first"),
            Some(h) => err.hint(h),
            None => err,
        }
    })?;
    // The counts get_delta and batho_diff give for this run: one definition of a changed
    // entity (engine::diff), read through the same BQL procedure.
    let mut cx = st.ctx(Some(&repo.name))?;
    let counts = match &rep.run {
        Some(run) => run_counts(&mut cx, &run.uuid)?,
        None => [0; 6],
    };
    let [
        added,
        removed,
        modified,
        renamed,
        relationships_added,
        relationships_removed,
    ] = counts;
    let mut md = if rep.files.is_empty() {
        format!("## Patch: {}\n\nNo changes detected.\n", repo.name)
    } else {
        format!(
            "## Patch: {}\n\n- Files changed: {} ({} added, {} modified, {} deleted); {} more re-resolved\n- Entities: {added} added, {removed} removed, {modified} modified, {renamed} renamed\n- Relationships: {} added, {} removed\n- Duration: {} ms\n",
            repo.name,
            rep.files.total(),
            rep.files.added.len(),
            rep.files.modified.len(),
            rep.files.deleted.len(),
            rep.affected.len(),
            relationships_added,
            relationships_removed,
            rep.duration_ms,
        )
    };
    if rep.rebuilt {
        md.push_str(
            "- The changes reached most of the tree: every file was indexed again, as a full build does\n",
        );
    }
    let mut audit = None;
    if let Some(run) = &rep.run {
        let _ = writeln!(md, "- Run: {} (generation {})", run.uuid, run.generation);
        let dir = batho_engine::build::artifact_dir(&rep.root);
        let detail = format!(
            "run {} generation {}: {}",
            run.uuid, run.generation, run.message
        );
        // The log is appended under the writer lock, like every other writer of it.
        let entry = Store::create_or_open(&dir)
            .and_then(|s| {
                let _lock = s.lock_writer()?;
                AuditLog::new(&dir).append("patch", &detail)
            })
            .map_err(|e| {
                ToolError::server(format!("patch committed but the audit log failed: {e}"))
            })?;
        let _ = writeln!(
            md,
            "\nAudit log entry #{}: {} ({})",
            entry.seq, entry.action, entry.hash
        );
        audit = Some(entry);
    }
    let mut structured = Map::new();
    structured.insert(
        "patch".into(),
        json!({
            "repo": repo.name,
            "files_changed": rep.files.total(),
            "files": rep.files,
            "affected_files": rep.affected.len(),
            "context_files": rep.context_files,
            "context_cached": rep.context_cached,
            "affected_cached": rep.affected_cached,
            "rebuilt": rep.rebuilt,
            "entities_added": added,
            "entities_removed": removed,
            "entities_modified": modified,
            "entities_renamed": renamed,
            "relationships_added": relationships_added,
            "relationships_removed": relationships_removed,
            "duration_ms": rep.duration_ms,
            "run_id": rep.run.as_ref().map(|r| r.uuid.clone()),
            "artifact_generation": rep.run.as_ref().map(|r| r.generation),
            "bytes_written": rep.bytes_written,
            "audit": audit,
        }),
    );
    if let Some(run) = &rep.run {
        let _ = writeln!(
            md,
            "\nThe changed entities: get_delta(run_id=\"{}\")",
            run.uuid
        );
    }
    let meta = cx.meta();
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.budget.max_tokens), None))
}
