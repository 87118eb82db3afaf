//! `batho runs`: the run history of an artifact, newest first.

use std::path::{Path, PathBuf};

use batho_engine::build::{ARTIFACT_DIR, artifact_dir};
use batho_storage::{RunRecord, StorageError, Store};
use clap::Args;
use serde_json::{Value, json};

use crate::output::{run_json, run_kind_name, run_status_name};
use crate::{Failure, repo_path};

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
        StorageError::NoArtifact { .. } => format!(
            "run 'batho build {}' to index the repository first",
            dir.parent().unwrap_or(dir).display()
        ),
        StorageError::Locked { .. } => "wait for the running build to finish, then retry".into(),
        _ => "run 'batho fix' to verify and repair the artifact".into(),
    };
    Failure {
        message: e.to_string(),
        hint: Some(hint),
        code: 1,
    }
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub(crate) fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
        return Err(storage_failure(
            &StorageError::NoArtifact { path: dir.clone() },
            &dir,
        ));
    }
    let store = Store::create_or_open(&dir).map_err(|e| storage_failure(&e, &dir))?;
    let current = store
        .current_manifest()
        .map_err(|e| storage_failure(&e, &dir))?
        .map_or(0, |m| m.generation);
    let runs = store.runs().map_err(|e| storage_failure(&e, &dir))?;
    let total = runs.len();
    let shown: Vec<&RunRecord> = runs.iter().rev().take(args.limit).collect();
    if args.json {
        let value = json!({
            "artifact": dir,
            "current_generation": current,
            "total": total,
            "runs": shown.iter().map(|r| run_value(r)).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(());
    }
    if shown.is_empty() {
        println!("no runs recorded in {}", dir.display());
        return Ok(());
    }
    println!(
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
        println!(
            "{:<36}  {:<5}  {:<9}  {:<19}  {:>7}ms  {:>4}  {:<12}  {:<12}  {:>8}  {:>8}  {:>6}",
            r.uuid,
            run_kind_name(r.kind),
            run_status_name(r.status),
            utc(r.started_at_ms),
            r.duration_ms,
            r.generation,
            commit,
            r.git_branch.as_deref().unwrap_or("-"),
            r.node_count,
            r.edge_count,
            r.file_count,
        );
        if !r.message.is_empty() {
            println!("    {}", r.message);
        }
    }
    if total > shown.len() {
        println!(
            "({} of {total} runs shown; --limit N for more)",
            shown.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_764_559_298_123), "2025-12-01 03:21:38");
    }
}
