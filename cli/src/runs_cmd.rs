//! `batho runs`: the run history of an artifact, newest first.

use std::path::{Path, PathBuf};

use batho_engine::build::{ARTIFACT_DIR, artifact_dir};
use batho_engine::maintenance::{self, RunRecord, StorageError};
use clap::Args;
use serde_json::{Value, json};

use crate::output::{run_json, run_kind_name, run_status_name};
use crate::{Failure, no_artifact, repo_path};

#[derive(Args, Debug)]
pub(crate) struct RunsArgs {
    /// Repository root or its `.batho` folder (default: the current directory).
    path: Option<PathBuf>,
    /// Most runs to list.
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// The `.batho` folder for a PATH argument: the folder itself when PATH is one, else
/// `PATH/.batho`.
pub(crate) fn batho_dir(path: Option<PathBuf>) -> PathBuf {
    let root = repo_path(path);
    if root.file_name().is_some_and(|n| n == ARTIFACT_DIR) || root.join("MANIFEST").is_file() {
        root
    } else {
        artifact_dir(&root)
    }
}

/// A storage error as a CLI failure, with the way out.
pub(crate) fn storage_failure(e: &StorageError, dir: &Path) -> Failure {
    let hint = match e {
        StorageError::NoArtifact { .. } => return no_artifact(dir),
        e => e
            .remedy()
            .map(|remedy| crate::advice::remedy_hint(remedy, dir)),
    };
    Failure {
        message: e.to_string(),
        hint,
        code: 1,
    }
}

fn run_value(r: &RunRecord) -> Value {
    let mut v = run_json(r);
    if let Value::Object(o) = &mut v {
        o.insert("message".into(), json!(r.message));
    }
    v
}

pub(crate) fn run(args: RunsArgs) -> Result<(), Failure> {
    let dir = batho_dir(args.path);
    if !dir.join("MANIFEST").is_file() {
        return Err(no_artifact(&dir));
    }
    let history = maintenance::runs(&dir).map_err(|e| storage_failure(&e, &dir))?;
    let (current, runs) = (history.current_generation, history.runs);
    let total = runs.len();
    let shown: Vec<&RunRecord> = runs.iter().rev().take(args.limit).collect();
    if args.json {
        let value = json!({
            "artifact": dir,
            "current_generation": current,
            "total": total,
            "runs": shown.iter().map(|r| run_value(r)).collect::<Vec<_>>(),
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(());
    }
    if shown.is_empty() {
        outln!("no runs recorded in {}", dir.display());
        return Ok(());
    }
    outln!(
        "{:<36}  {:<5}  {:<9}  {:<19}  {:>9}  {:>4}  {:<12}  {:<12}  {:>8}  {:>8}  {:>6}",
        "RUN",
        "KIND",
        "STATUS",
        "STARTED (UTC)",
        "DURATION",
        "GEN",
        "COMMIT",
        "BRANCH",
        "NODES",
        "EDGES",
        "FILES"
    );
    for r in &shown {
        let commit: String = r
            .git_commit
            .as_deref()
            .unwrap_or("-")
            .chars()
            .take(12)
            .collect();
        outln!(
            "{:<36}  {:<5}  {:<9}  {:<19}  {:>7}ms  {:>4}  {:<12}  {:<12}  {:>8}  {:>8}  {:>6}",
            r.uuid,
            run_kind_name(r.kind),
            run_status_name(r.status),
            batho_engine::status::utc_timestamp(r.started_at_ms),
            r.duration_ms,
            r.generation,
            commit,
            r.git_branch.as_deref().unwrap_or("-"),
            r.node_count,
            r.edge_count,
            r.file_count,
        );
        if !r.message.is_empty() {
            outln!("    {}", r.message);
        }
    }
    if total > shown.len() {
        outln!(
            "({} of {total} runs shown; --limit N for more)",
            shown.len()
        );
    }
    Ok(())
}
