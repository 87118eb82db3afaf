//! The run history and integrity tools: batho_list_runs (the BQL procedure `db.runs`) and
//! batho_fix (`batho_engine::maintenance::fix`, the same verification and repair as `batho fix`).

use std::fmt::Write as _;

use batho_engine::maintenance::MaintenanceCall;
use batho_engine::maintenance::fix::{FixOptions, FixOutcome, FixReport, FixTarget, fix};
use serde::Serialize;
use serde_json::Map;

use super::args::{FixArgs, ListRunsArgs};
use super::cells::{FromRecord, Record, decode_rows};
use super::{Reply, Rows, ToolOutput, positive};
use crate::error::ToolError;
use crate::state::State;

/// One run as `db.runs` lists it; serialized as `structuredContent.runs` shows it.
#[derive(Serialize)]
struct RunRow {
    run_id: String,
    #[serde(rename = "type")]
    kind: String,
    status: String,
    started_at_ms: i64,
    finished_at_ms: i64,
    duration_ms: i64,
    git_commit: Option<String>,
    git_branch: Option<String>,
    node_count: i64,
    edge_count: i64,
}

impl FromRecord for RunRow {
    fn from_record(record: &Record) -> Result<RunRow, ToolError> {
        let (started, finished) = (record.int("started_at")?, record.int("finished_at")?);
        let given = |text: String| (!text.is_empty()).then_some(text);
        Ok(RunRow {
            run_id: record.text("id")?,
            kind: record.text("type")?,
            status: record.text("status")?,
            started_at_ms: started,
            finished_at_ms: finished,
            duration_ms: (finished - started).max(0),
            git_commit: given(record.text("commit")?),
            git_branch: given(record.text("branch")?),
            node_count: record.int("nodes")?,
            edge_count: record.int("edges")?,
        })
    }
}

impl RunRow {
    /// `, commit abc123 (main)`, or nothing without a commit.
    fn git_text(&self) -> String {
        let Some(commit) = &self.git_commit else {
            return String::new();
        };
        let short = &commit[..commit.len().min(12)];
        match &self.git_branch {
            Some(branch) => format!(", commit {short} ({branch})"),
            None => format!(", commit {short}"),
        }
    }
}

/// batho_list_runs' answer.
#[derive(Serialize)]
struct RunsOutput {
    #[serde(skip)]
    repo: String,
    runs: Vec<RunRow>,
}

impl ToolOutput for RunsOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!(
            "## Runs: {} ({} shown, newest first)\n\n",
            self.repo,
            self.runs.len()
        );
        for run in &self.runs {
            let _ = writeln!(
                md,
                "- **{}** {} {} at {} UTC, {:.2}s{}: {} nodes (entities, files and external stubs), {} relationships",
                run.run_id,
                run.kind,
                run.status,
                batho_engine::status::utc_timestamp(run.started_at_ms),
                run.duration_ms as f64 / 1000.0,
                run.git_text(),
                run.node_count,
                run.edge_count,
            );
        }
        md
    }
}

pub(crate) fn batho_list_runs(st: &State, a: ListRunsArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    positive("limit", a.limit)?;
    let mut cx = st.ctx(a.repo.name())?;
    let result = cx.run(
        "CALL db.runs($limit) YIELD id, type, status, started_at, finished_at, commit, branch, nodes, edges \
         RETURN id, type, status, started_at, finished_at, commit, branch, nodes, edges",
        &[("limit", batho_engine::query::Value::Int(a.limit))],
    )?;
    let output = RunsOutput {
        repo: cx.repo.name.clone(),
        runs: decode_rows(&result)?,
    };
    Reply::new(&output, cx.meta(), a.budget.max_tokens)
}

pub(crate) fn batho_fix(st: &State, a: FixArgs) -> Result<Reply, ToolError> {
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
    // The same operation as a BQL statement, for `batho query` or `batho-ql`.
    let statement = MaintenanceCall::Fix(opts.clone()).statement();
    let report = fix(&dir, &opts).map_err(|e| {
        ToolError::server(format!("fix of '{}' failed: {e}", repo.name)).remedy(e.remedy())
    })?;
    let output = FixOutput {
        repo: repo.name.clone(),
        dry_run: a.dry_run,
        deep: a.deep,
        exit_code: report.outcome.exit_code(),
        fix: report,
    };
    let mut meta = Map::new();
    meta.insert("repo".into(), repo.name.into());
    meta.insert("query".into(), statement.into());
    Reply::new(&output, meta, a.budget.max_tokens)
}

/// batho_fix's answer: the report of `batho_engine::maintenance::fix` as it is, and its exit code.
#[derive(Serialize)]
struct FixOutput {
    #[serde(skip)]
    repo: String,
    #[serde(skip)]
    dry_run: bool,
    #[serde(skip)]
    deep: bool,
    fix: FixReport,
    exit_code: u8,
}

impl FixOutput {
    /// The outcome in words.
    fn verdict(&self) -> &'static str {
        match (self.fix.outcome, self.dry_run) {
            (FixOutcome::Clean, _) => "clean",
            (FixOutcome::Repaired, _) => "repaired",
            (FixOutcome::ErrorsLeft, true) => "problems found (dry run: nothing changed)",
            (FixOutcome::ErrorsLeft, false) => "errors left after repair",
            (FixOutcome::Critical, _) => "critical: no usable generation",
        }
    }

    /// The findings section (nothing without findings).
    fn findings_markdown(&self, md: &mut String) {
        let report = &self.fix;
        if report.findings.is_empty() {
            return;
        }
        let _ = writeln!(md, "\n### Findings ({})", report.findings.len());
        for finding in &report.findings {
            let proposal = match (&finding.repair, self.dry_run) {
                (Some(repair), true) => format!(" — would repair: {repair}"),
                _ => String::new(),
            };
            let _ = writeln!(
                md,
                "- phase {} {}: {} — {}{proposal}",
                finding.phase,
                finding.severity.name(),
                finding.what,
                finding.detail
            );
        }
    }
}

impl ToolOutput for FixOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let report = &self.fix;
        let mut md = format!(
            "## Fix: {} — {}\n\n- Phases: {:?}{}\n- Segments checked: {}, bytes hashed: {}\n- Duration: {} ms\n",
            self.repo,
            self.verdict(),
            report.phases,
            if self.deep { " (deep)" } else { "" },
            report.segments_checked,
            report.bytes_hashed,
            report.elapsed_ms
        );
        self.findings_markdown(&mut md);
        if !report.repairs.is_empty() {
            let _ = writeln!(md, "\n### Repairs ({})", report.repairs.len());
            for repair in &report.repairs {
                let _ = writeln!(
                    md,
                    "- phase {}: {} — {}",
                    repair.phase, repair.action, repair.detail
                );
            }
        }
        for entry in &report.audit {
            let _ = writeln!(
                md,
                "\nAudit log entry #{}: {} ({})",
                entry.seq, entry.action, entry.hash
            );
        }
        md
    }
}
