//! batho_patch: an incremental re-index (`batho_engine::patch`, the same as `batho patch`).
//! Destructive in the contract's sense (it commits a new generation): the engine appends
//! every patch that commits to the artifact's hash-chained audit log, and the answer shows
//! the entry.

use std::fmt::Write as _;

use batho_engine::maintenance::AuditEntry;
use batho_engine::maintenance::{self, MaintenanceCall, MaintenanceError, MaintenanceReport};
use batho_engine::patch::{FileChanges, PatchError, PatchOptions};
use serde::Serialize;

use super::args::PatchArgs;
use super::cells::{FromRecord, Record, decode_first};
use super::{Reply, Rows, ToolOutput, positive};
use crate::error::ToolError;
use crate::state::{Ctx, State};

/// What a run changed, as `db.deltaStats` counts it (get_delta and batho_diff give the same
/// counts for this run: one definition of a changed entity, engine::diff).
#[derive(Default, Serialize)]
struct RunCounts {
    entities_added: i64,
    entities_removed: i64,
    entities_modified: i64,
    entities_renamed: i64,
    relationships_added: i64,
    relationships_removed: i64,
}

impl FromRecord for RunCounts {
    fn from_record(record: &Record) -> Result<RunCounts, ToolError> {
        Ok(RunCounts {
            entities_added: record.int("nodes_added")?,
            entities_removed: record.int("nodes_removed")?,
            entities_modified: record.int("nodes_modified")?,
            entities_renamed: record.int("nodes_renamed")?,
            relationships_added: record.int("edges_added")?,
            relationships_removed: record.int("edges_removed")?,
        })
    }
}

/// The counts of `run` (zero when the procedure returns no row).
fn run_counts(cx: &mut Ctx, run: &str) -> Result<RunCounts, ToolError> {
    let result = cx.run(
        "CALL db.deltaStats($run) YIELD nodes_added, nodes_removed, nodes_modified, nodes_renamed, edges_added, edges_removed \
         RETURN nodes_added, nodes_removed, nodes_modified, nodes_renamed, edges_added, edges_removed",
        &[("run", batho_engine::query::Value::from(run))],
    )?;
    Ok(decode_first(&result)?.unwrap_or_default())
}

/// What a patch did, as `structuredContent.patch` shows it.
#[derive(Serialize)]
struct PatchSummary {
    repo: String,
    files_changed: usize,
    files: FileChanges,
    affected_files: usize,
    context_files: u64,
    context_cached: u64,
    affected_cached: u64,
    rebuilt: bool,
    #[serde(flatten)]
    counts: RunCounts,
    duration_ms: u64,
    run_id: Option<String>,
    artifact_generation: Option<u64>,
    bytes_written: u64,
    audit: Option<AuditEntry>,
}

/// batho_patch's answer.
#[derive(Serialize)]
struct PatchOutput {
    patch: PatchSummary,
}

impl ToolOutput for PatchOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let patch = &self.patch;
        let mut md = if patch.files.is_empty() {
            format!("## Patch: {}\n\nNo changes detected.\n", patch.repo)
        } else {
            format!(
                "## Patch: {}\n\n- Files changed: {} ({} added, {} modified, {} deleted); {} more re-resolved\n- Entities: {} added, {} removed, {} modified, {} renamed\n- Relationships: {} added, {} removed\n- Duration: {} ms\n",
                patch.repo,
                patch.files_changed,
                patch.files.added.len(),
                patch.files.modified.len(),
                patch.files.deleted.len(),
                patch.affected_files,
                patch.counts.entities_added,
                patch.counts.entities_removed,
                patch.counts.entities_modified,
                patch.counts.entities_renamed,
                patch.counts.relationships_added,
                patch.counts.relationships_removed,
                patch.duration_ms,
            )
        };
        if patch.rebuilt {
            md.push_str(
                "- The changes reached most of the tree: every file was indexed again, as a full build does\n",
            );
        }
        if let (Some(run), Some(generation)) = (&patch.run_id, patch.artifact_generation) {
            let _ = writeln!(md, "- Run: {run} (generation {generation})");
        }
        if let Some(entry) = &patch.audit {
            let _ = writeln!(
                md,
                "\nAudit log entry #{}: {} ({})",
                entry.seq, entry.action, entry.hash
            );
        }
        if let Some(run) = &patch.run_id {
            let _ = writeln!(md, "\nThe changed entities: get_delta(run_id=\"{run}\")");
        }
        md
    }
}

/// A failed patch as a tool error.
fn patch_error(repo: &str, e: &PatchError) -> ToolError {
    let message = format!("patch of '{repo}' failed: {e}");
    match e {
        // The engine's hint in this tool's terms: its argument and batho_build.
        PatchError::WouldDropMostFiles { .. } => ToolError::of_engine(
            message,
            e.is_usage(),
            Some(
                "pass the max_file_size_kb the artifact was built with (or a larger one); to index fewer files on purpose, call batho_build with full=true",
            ),
            None,
        ),
        e => ToolError::of_engine(message, e.is_usage(), e.hint(), e.remedy()),
    }
}

pub(crate) fn batho_patch(st: &State, a: PatchArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    if let Some(b) = a.graph_backend.as_deref()
        && !matches!(b, "auto" | "in-memory" | "arrow")
    {
        return Err(ToolError::client(format!(
            "Invalid graph_backend '{b}'. Valid: auto, in-memory, arrow"
        )));
    }
    let repo = st.resolve(a.repo.name())?;
    let call = MaintenanceCall::Patch(PatchOptions {
        max_file_size_kb: a.max_file_size_kb.or(repo.max_file_size_kb),
        ..PatchOptions::default()
    });
    let rep = match maintenance::run(&repo.path, &call) {
        Ok(MaintenanceReport::Patch(report)) => report,
        Ok(_) => return Err(ToolError::server("db.patch answered with another report")),
        Err(MaintenanceError::Patch(e)) => return Err(patch_error(&repo.name, &e)),
        Err(e) => return Err(ToolError::server(e.to_string()).remedy(e.remedy())),
    };
    let mut cx = st.ctx(Some(&repo.name))?;
    // meta.query: the patch itself first, then the count query below.
    cx.record_statement(call.statement());
    let counts = match &rep.run {
        Some(run) => run_counts(&mut cx, &run.uuid)?,
        None => RunCounts::default(),
    };
    let output = PatchOutput {
        patch: PatchSummary {
            repo: repo.name,
            files_changed: rep.files.total(),
            affected_files: rep.affected.len(),
            files: rep.files,
            context_files: rep.context_files,
            context_cached: rep.context_cached,
            affected_cached: rep.affected_cached,
            rebuilt: rep.rebuilt,
            counts,
            duration_ms: rep.duration_ms,
            run_id: rep.run.as_ref().map(|r| r.uuid.clone()),
            artifact_generation: rep.run.as_ref().map(|r| r.generation),
            bytes_written: rep.bytes_written,
            audit: rep.audit,
        },
    };
    Reply::new(&output, cx.meta(), a.budget.max_tokens)
}
