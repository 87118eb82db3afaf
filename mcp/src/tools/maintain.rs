//! The run history and integrity tools: batho_list_runs (the BQL procedure `db.runs`) and
//! batho_fix (`batho_storage::fix`, the same verification and repair as `batho fix`).

use std::fmt::Write as _;

use batho_storage::fix::{FixOptions, FixOutcome, FixTarget, fix};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{FixArgs, ListRunsArgs};
use super::{Answer, positive};
use crate::error::ToolError;
use crate::state::{State, i, s};

pub(crate) fn batho_list_runs(st: &State, a: ListRunsArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    positive("limit", a.limit)?;
    let mut cx = st.ctx(a.repo.name())?;
    let res = cx.run(
        "CALL db.runs($limit) YIELD id, type, status, started_at, finished_at, commit, branch, nodes, edges \
         RETURN id, type, status, started_at, finished_at, commit, branch, nodes, edges",
        &[("limit", batho_engine::query::Value::Int(a.limit))],
    )?;
    let mut md = format!(
        "## Runs: {} ({} shown, newest first)\n\n",
        cx.repo.name,
        res.rows.len()
    );
    let mut runs = Vec::new();
    for r in &res.rows {
        let (started, ended) = (i(&r[3]), i(&r[4]));
        let duration_ms = (ended - started).max(0);
        let commit = s(&r[5]);
        let branch = s(&r[6]);
        let git = match (commit.is_empty(), branch.is_empty()) {
            (true, _) => String::new(),
            (false, true) => format!(", commit {}", &commit[..commit.len().min(12)]),
            (false, false) => format!(", commit {} ({branch})", &commit[..commit.len().min(12)]),
        };
        let _ = writeln!(
            md,
            "- **{}** {} {} at {} UTC, {:.2}s{git}: {} nodes (entities, files and external stubs), {} relationships",
            s(&r[0]),
            s(&r[1]),
            s(&r[2]),
            batho_engine::status::utc_timestamp(started),
            duration_ms as f64 / 1000.0,
            i(&r[7]),
            i(&r[8]),
        );
        runs.push(json!({
            "run_id": s(&r[0]), "type": s(&r[1]), "status": s(&r[2]),
            "started_at_ms": started, "finished_at_ms": ended, "duration_ms": duration_ms,
            "git_commit": (!commit.is_empty()).then_some(commit),
            "git_branch": (!branch.is_empty()).then_some(branch),
            "node_count": i(&r[7]), "edge_count": i(&r[8]),
        }));
    }
    let mut structured = Map::new();
    structured.insert("runs".into(), Json::Array(runs));
    Ok(Answer {
        markdown: md,
        structured,
        meta: cx.meta(),
    }
    .finish(Some(a.budget.max_tokens), None))
}

pub(crate) fn batho_fix(st: &State, a: FixArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let target = FixTarget::parse(&a.target).ok_or_else(|| {
        ToolError::client(format!(
            "Invalid target '{}'. Valid: all, blobs, graph, state",
            a.target
        ))
    })?;
    let phase = match a.phase {
        None => None,
        Some(p @ 1..=4) => Some(p as u8),
        Some(p) => {
            return Err(ToolError::client(format!(
                "phase must be between 1 and 4, got {p}"
            )));
        }
    };
    let repo = st.resolve(a.repo.name())?;
    let opts = FixOptions {
        deep: a.deep,
        dry_run: a.dry_run,
        target,
        phase,
        parallel: a.parallel,
    };
    let dir = batho_engine::build::artifact_dir(&repo.path);
    let report = fix(&dir, &opts).map_err(|e| {
        ToolError::server(format!("fix of '{}' failed: {e}", repo.name))
            .hint("run 'batho fix' in a terminal for the full report")
    })?;
    let verdict = match (report.outcome, a.dry_run) {
        (FixOutcome::Clean, _) => "clean",
        (FixOutcome::Repaired, _) => "repaired",
        (FixOutcome::ErrorsLeft, true) => "problems found (dry run: nothing changed)",
        (FixOutcome::ErrorsLeft, false) => "errors left after repair",
        (FixOutcome::Critical, _) => "critical: no usable generation",
    };
    let mut md = format!(
        "## Fix: {} — {verdict}\n\n- Phases: {:?}{}\n- Segments checked: {}, bytes hashed: {}\n- Duration: {} ms\n",
        repo.name,
        report.phases,
        if a.deep { " (deep)" } else { "" },
        report.segments_checked,
        report.bytes_hashed,
        report.elapsed_ms
    );
    if !report.findings.is_empty() {
        let _ = writeln!(md, "\n### Findings ({})", report.findings.len());
        for f in &report.findings {
            let proposal = match (&f.repair, a.dry_run) {
                (Some(r), true) => format!(" — would repair: {r}"),
                _ => String::new(),
            };
            let _ = writeln!(
                md,
                "- phase {} {}: {} — {}{proposal}",
                f.phase,
                f.severity.name(),
                f.what,
                f.detail
            );
        }
    }
    if !report.repairs.is_empty() {
        let _ = writeln!(md, "\n### Repairs ({})", report.repairs.len());
        for r in &report.repairs {
            let _ = writeln!(md, "- phase {}: {} — {}", r.phase, r.action, r.detail);
        }
    }
    for e in &report.audit {
        let _ = writeln!(
            md,
            "\nAudit log entry #{}: {} ({})",
            e.seq, e.action, e.hash
        );
    }
    let mut structured = Map::new();
    structured.insert(
        "fix".into(),
        serde_json::to_value(&report).map_err(|e| ToolError::server(e.to_string()))?,
    );
    structured.insert("exit_code".into(), report.outcome.exit_code().into());
    let mut meta = Map::new();
    meta.insert("repo".into(), repo.name.clone().into());
    Ok(Answer {
        markdown: md,
        structured,
        meta,
    }
    .finish(Some(a.budget.max_tokens), None))
}
