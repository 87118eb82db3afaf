//! Rendering helpers shared by the commands.

use batho_engine::maintenance::{RunKind, RunRecord, RunStatus};
use serde_json::{Value, json};

/// A run as JSON, in the field names of the tool contract.
pub(crate) fn run_json(run: &RunRecord) -> Value {
    json!({
        "run_id": run.uuid,
        "type": run_kind_name(run.kind),
        "status": run_status_name(run.status),
        "started_at_ms": run.started_at_ms,
        "ended_at_ms": run.ended_at_ms,
        "duration_ms": run.duration_ms,
        "git_commit": run.git_commit,
        "git_branch": run.git_branch,
        "node_count": run.node_count,
        "edge_count": run.edge_count,
        "file_count": run.file_count,
        "skipped_files": run.skipped_files,
        "generation": run.generation,
    })
}

/// The lower-case name of a run kind, as the tool contract prints it.
pub(crate) fn run_kind_name(kind: RunKind) -> &'static str {
    match kind {
        RunKind::Build => "build",
        RunKind::Patch => "patch",
        _ => "other",
    }
}

/// The lower-case name of a run status.
pub(crate) fn run_status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        _ => "other",
    }
}

/// `1536` → `1.5 KiB`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// At most this many files with syntax errors are named in the text report; `--json` and
/// the query below list them all.
const SYNTAX_ERROR_FILES_SHOWN: usize = 10;

pub(crate) fn print_syntax_error_files(files: &[String]) {
    if files.is_empty() {
        return;
    }
    outln!(
        "  {} files have syntax errors tree-sitter recovered from, or nest deeper than {} levels \
         (their facts may be incomplete):",
        files.len(),
        batho_engine::extract::MAX_WALK_DEPTH
    );
    for file in files.iter().take(SYNTAX_ERROR_FILES_SHOWN) {
        outln!("    {file}");
    }
    if files.len() > SYNTAX_ERROR_FILES_SHOWN {
        outln!(
            "    ... and {} more: batho query \"MATCH (f:File) WHERE f.has_syntax_errors RETURN f.file\"",
            files.len() - SYNTAX_ERROR_FILES_SHOWN
        );
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn bytes_are_humane() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MiB");
    }
}
