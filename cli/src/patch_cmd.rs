//! `batho patch`: bring an artifact up to date with the files on disk incrementally.

use std::path::{Path, PathBuf};

use batho_engine::diff::{DiffFilter, DiffStats, NodeChange, diff_runs, resolve_delta};
use batho_engine::patch::{self, DetectMode, PatchError, PatchOptions, PatchReport};
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::delta_cmd::{change_json, diff_failure};
use crate::output::run_json;
use crate::{Failure, no_artifact, repo_path};
use batho_engine::build::artifact_dir;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Mode {
    /// Compare every file's blake3 with the artifact's.
    Hash,
    /// Only hash files modified since the current generation's run started.
    Mtime,
}

#[derive(Args, Debug)]
pub(crate) struct PatchArgs {
    /// Repository root (default: the current directory).
    path: Option<PathBuf>,
    /// How changed files are found.
    #[arg(long, value_enum, default_value = "hash")]
    mode: Mode,
    /// Parser threads (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_workers: Option<u32>,
    /// Files larger than this many KiB are not indexed (default: 32768); use the value
    /// the artifact was built with.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_file_size_kb: Option<u64>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// `Patched <path>: 3 changes (2 added, 1 modified, 0 deleted) in 85ms`, or
/// `No changes detected.`
pub(crate) fn summary(r: &PatchReport) -> String {
    if r.files.is_empty() {
        return "No changes detected.".to_owned();
    }
    format!(
        "Patched {}: {} in {}ms",
        r.root.display(),
        r.changes_line(),
        r.duration_ms
    )
}

pub(crate) fn run(args: PatchArgs) -> Result<(), Failure> {
    let root = repo_path(args.path);
    let opts = PatchOptions {
        mode: match args.mode {
            Mode::Hash => DetectMode::Hash,
            Mode::Mtime => DetectMode::Mtime,
        },
        max_workers: args.max_workers.map(|n| n as usize),
        max_file_size_kb: args.max_file_size_kb,
        ..PatchOptions::default()
    };
    let report = patch::patch(&root, &opts).map_err(|e| match e {
        PatchError::NoArtifact(_) | PatchError::NotADirectory(_) => no_artifact(&root),
        e => Failure {
            message: e.to_string(),
            hint: crate::advice::failure_hint(e.hint(), e.remedy(), &root),
            code: if e.is_usage() { 2 } else { 1 },
        },
    })?;
    if args.json {
        let (stats, changes) = run_delta(&root, &report)?;
        let value = json!({
            "root": report.root,
            "changed": !report.files.is_empty(),
            "files": report.files,
            "affected_files": report.affected,
            "context_files": report.context_files,
            "context_cached": report.context_cached,
            "affected_cached": report.affected_cached,
            "changed_cached": report.changed_cached,
            "facts_cache_missing": report.facts_cache_missing,
            "rebuilt": report.rebuilt,
            "entities": {
                "added": stats.nodes_added,
                "removed": stats.nodes_removed,
                "modified": stats.nodes_modified,
                "renamed": stats.nodes_renamed,
                "changes": changes.iter().map(change_json).collect::<Vec<_>>(),
            },
            "relationships": {
                "added": stats.edges_added,
                "removed": stats.edges_removed,
            },
            "bytes_written": report.bytes_written,
            "artifact_bytes": report.artifact_bytes,
            "duration_ms": report.duration_ms,
            "phases": report.phases,
            "run": report.run.as_ref().map(run_json),
            "audit": report.audit,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    } else {
        outln!("{}", summary(&report));
        if report.rebuilt {
            eprintln!(
                "note: the changes reached {} of the tree's files, so every file was indexed \
                 again as a full build does (a fresh base rather than a delta)",
                report.affected.len() + report.files.added.len() + report.files.modified.len()
            );
        }
        if report.facts_cache_missing && report.run.is_some() {
            eprintln!(
                "note: this artifact has no facts cache, so unchanged files were parsed; \
                 'batho build --full' once makes later patches fast"
            );
        }
    }
    Ok(())
}

/// What the patch's run changed, as `batho delta`, `get_delta` and `batho_patch` count it
/// (one definition, `engine::diff`); nothing when the patch committed no run.
fn run_delta(root: &Path, report: &PatchReport) -> Result<(DiffStats, Vec<NodeChange>), Failure> {
    let Some(run) = &report.run else {
        return Ok((DiffStats::default(), Vec::new()));
    };
    let dir = artifact_dir(root);
    let pair = resolve_delta(&dir, Some(&run.uuid)).map_err(|e| diff_failure(&e, &dir))?;
    let delta =
        diff_runs(&dir, &pair, &DiffFilter::default()).map_err(|e| diff_failure(&e, &dir))?;
    Ok((delta.diff.stats, delta.diff.changes))
}
