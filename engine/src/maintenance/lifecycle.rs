//! `db.build`, `db.patch` and `db.status`: a code graph's life cycle as BQL statements, so
//! that `batho_build`, `batho_patch` and `batho_status` carry in `meta.query` the statement
//! that does what they did. Each runs on the repository's files, not on an open graph (a
//! build makes the graph the other statements read).

use std::collections::BTreeMap;

use serde::Serialize;

use super::statement::{Options, flag};
use crate::build::{BuildOptions, BuildReport};
use crate::patch::{FileChanges, PatchOptions, PatchReport};
use crate::status::StatusReport;

/// The options `db.build` takes.
pub(super) const BUILD_OPTIONS: [&str; 3] = ["full", "max_workers", "max_file_size_kb"];
/// The options `db.patch` takes.
pub(super) const PATCH_OPTIONS: [&str; 2] = ["max_workers", "max_file_size_kb"];
/// The options `db.status` takes.
pub(super) const STATUS_OPTIONS: [&str; 1] = ["verify"];

/// A count option: a non-negative integer (at least `least`).
fn count(options: &Options, key: &str, least: i64) -> Result<Option<u64>, String> {
    match options.get(key) {
        None => Ok(None),
        Some(batho_lang::Value::Int(n)) if *n >= least => Ok(Some(*n as u64)),
        Some(other) => Err(format!(
            "option '{key}' must be an integer >= {least}, got {other}"
        )),
    }
}

/// `db.build`'s options read.
pub(super) fn build_request(options: &Options) -> Result<BuildOptions, String> {
    Ok(BuildOptions {
        full: flag(options, "full")?,
        max_workers: count(options, "max_workers", 1)?.map(|n| n as usize),
        max_file_size_kb: count(options, "max_file_size_kb", 0)?,
        compile_commands: None,
    })
}

/// `db.patch`'s options read.
pub(super) fn patch_request(options: &Options) -> Result<PatchOptions, String> {
    Ok(PatchOptions {
        max_workers: count(options, "max_workers", 1)?.map(|n| n as usize),
        max_file_size_kb: count(options, "max_file_size_kb", 0)?,
        ..PatchOptions::default()
    })
}

/// `db.status`'s options read: whether to verify.
pub(super) fn status_request(options: &Options) -> Result<bool, String> {
    flag(options, "verify")
}

/// `db.build`'s options written out, defaults left out.
pub(super) fn build_options(options: &BuildOptions) -> Vec<String> {
    let mut written = Vec::new();
    if options.full {
        written.push("full: true".to_string());
    }
    sizes(&mut written, options.max_workers, options.max_file_size_kb);
    written
}

/// `db.patch`'s options written out, defaults left out (the change detection and the
/// whole-tree policy are not options of the statement: it uses the defaults).
pub(super) fn patch_options(options: &PatchOptions) -> Vec<String> {
    let mut written = Vec::new();
    sizes(&mut written, options.max_workers, options.max_file_size_kb);
    written
}

fn sizes(written: &mut Vec<String>, workers: Option<usize>, file_size_kb: Option<u64>) {
    if let Some(workers) = workers {
        written.push(format!("max_workers: {workers}"));
    }
    if let Some(kb) = file_size_kb {
        written.push(format!("max_file_size_kb: {kb}"));
    }
}

/// `db.status`'s options written out.
pub(super) fn status_options(verify: bool) -> Vec<String> {
    if verify {
        vec!["verify: true".into()]
    } else {
        Vec::new()
    }
}

/// A build as a statement's row shows it.
#[derive(Serialize)]
pub(super) struct BuildView {
    run_id: String,
    generation: u64,
    entities: u64,
    relationships: u64,
    files: u64,
    kinds: BTreeMap<&'static str, u64>,
    skipped_files: usize,
    files_with_syntax_errors: u64,
    source_bytes: u64,
    bytes_written: u64,
    duration_ms: u64,
    moved_aside: Option<String>,
}

impl From<&BuildReport> for BuildView {
    fn from(report: &BuildReport) -> BuildView {
        BuildView {
            run_id: report.run.uuid.clone(),
            generation: report.run.generation,
            entities: report.entities,
            relationships: report.relationships,
            files: report.files,
            kinds: report.kinds.clone(),
            skipped_files: report.skipped.len(),
            files_with_syntax_errors: report.files_with_syntax_errors,
            source_bytes: report.source_bytes,
            bytes_written: report.bytes_written,
            duration_ms: report.run.duration_ms,
            moved_aside: report
                .moved_aside
                .as_ref()
                .map(|path| path.display().to_string()),
        }
    }
}

/// A patch as a statement's row shows it.
#[derive(Serialize)]
pub(super) struct PatchView {
    run_id: Option<String>,
    generation: Option<u64>,
    files: FileChanges,
    affected_files: usize,
    entities_changed: usize,
    relationships_added: u64,
    relationships_removed: u64,
    rebuilt: bool,
    bytes_written: u64,
    duration_ms: u64,
    audit: Option<super::AuditEntry>,
}

impl From<&PatchReport> for PatchView {
    fn from(report: &PatchReport) -> PatchView {
        PatchView {
            run_id: report.run.as_ref().map(|run| run.uuid.clone()),
            generation: report.run.as_ref().map(|run| run.generation),
            files: report.files.clone(),
            affected_files: report.affected.len(),
            entities_changed: report.entities.len(),
            relationships_added: report.relationships_added,
            relationships_removed: report.relationships_removed,
            rebuilt: report.rebuilt,
            bytes_written: report.bytes_written,
            duration_ms: report.duration_ms,
            audit: report.audit.clone(),
        }
    }
}

/// A status as a statement's row shows it.
#[derive(Serialize)]
pub(super) struct StatusView {
    state: &'static str,
    generation: u64,
    entities: u64,
    relationships: u64,
    files: u64,
    last_run_id: Option<String>,
    size_on_disk: u64,
    changed_count: u64,
    changed_files: Vec<String>,
    syntax_error_files: Vec<String>,
    integrity: Option<Vec<String>>,
}

impl From<&StatusReport> for StatusView {
    fn from(report: &StatusReport) -> StatusView {
        StatusView {
            state: report.state.name(),
            generation: report.generation,
            entities: report.entities,
            relationships: report.relationships,
            files: report.files,
            last_run_id: report.last_run.as_ref().map(|run| run.uuid.clone()),
            size_on_disk: report.size_on_disk,
            changed_count: report.changed_count,
            changed_files: report.changed_files.clone(),
            syntax_error_files: report.syntax_error_files.clone(),
            integrity: report.integrity.clone(),
        }
    }
}
