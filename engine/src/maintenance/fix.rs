//! `fix` for a code graph's artifact: the storage layer's four phases over the files it
//! owns (manifests, run history, segments, the graph), and with `deep` the files the
//! engine derives beside them, the facts cache's packs, the stamps file and the stored
//! community summaries. Those only
//! save work (a missing pack entry costs a parse, missing stamps a hash), so a damaged one
//! is reported and set aside, never trusted and never a reason to fail.
//!
//! Everything in a code graph derives from its source. When the storage phases find the
//! current generation's primary data damaged beyond exact repair, they make the newest
//! intact older generation current again (a rollback) and report the runs that lost; `fix`
//! then re-indexes from the source what changed since that generation (a patch), or, when
//! no intact generation was left, builds the graph again from the source. When the source
//! still holds what the damaged generation indexed, this gives that generation's graph
//! back (builds and patches are deterministic); when it has changed since, it gives the
//! graph of the source as it is now. Either way the report says what the rollback lost
//! and what the source brought back, and the audit log records it. Without the source (an
//! artifact loaded elsewhere), the rollback stands and the report says what it lost.

use std::path::{Path, PathBuf};

pub use batho_storage::fix::{
    Finding, FixOptions, FixOutcome, FixReport, FixTarget, LostRun, Repair, RollBack, Severity,
    phase_name,
};
use batho_storage::{StorageError, Store};

/// The phase the derived files' findings join: 3, the files checked by their hash.
const DERIVED_PHASE: u8 = 3;

/// Verifies the artifact in `batho_dir` and, unless `options.dry_run`, repairs what it
/// can (see the module documentation).
pub fn fix(batho_dir: &Path, options: &FixOptions) -> Result<FixReport, StorageError> {
    let mut report = batho_storage::fix::fix(batho_dir, options)?;
    if options.deep && report.phases.contains(&DERIVED_PHASE) {
        check_derived_files(batho_dir, options.dry_run, &mut report)?;
    }
    if !options.dry_run
        && let Some(rollback) = report.rolled_back.clone()
    {
        heal_from_source(batho_dir, options, &rollback, &mut report)?;
    }
    Ok(report)
}

/// The phase the source's repairs join: 4, the graph.
const GRAPH_PHASE: u8 = 4;

/// After a rollback (or none possible), brings the graph back from the source: a patch on
/// the restored generation, or a full build when nothing was restored. Reports what the
/// rollback lost and what the source brought back, audits it, and checks again.
fn heal_from_source(
    batho_dir: &Path,
    options: &FixOptions,
    rollback: &RollBack,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    let lost = lost_runs_text(rollback);
    let root = batho_dir.parent().unwrap_or(batho_dir);
    let healed = match rollback.restored {
        Some(restored) => re_index_changes(root, batho_dir).map(|changes| {
            format!(
                "generation {} was damaged beyond repair and generation {restored} is current \
                 again, which lost {lost}; re-indexed from the source what changed since: {changes}",
                rollback.damaged
            )
        }),
        None => build_again(root).map(|files| {
            format!(
                "generation {} was damaged beyond repair with no intact older generation, which \
                 lost {lost}; built the graph again from the source ({files} files)",
                rollback.damaged
            )
        }),
    };
    match healed {
        Ok(detail) => {
            let store = Store::open_existing(batho_dir)?;
            let _lock = store.lock_writer()?;
            let entry = super::append_audit(batho_dir, "fix.heal_from_source", &detail)?;
            report.audit.push(entry);
            report.repairs.push(Repair {
                phase: GRAPH_PHASE,
                action: "heal_from_source".into(),
                detail,
            });
            check_again(batho_dir, options, report)?;
        }
        Err(why) => {
            let finding = Finding {
                phase: GRAPH_PHASE,
                severity: Severity::Warning,
                what: format!("generation {}", rollback.damaged),
                detail: format!(
                    "the rollback lost {lost}; the source could not bring it back: {why}"
                ),
                repair: Some(
                    "restore the source tree and fix again, or build again in full".into(),
                ),
            };
            report.remaining.push(finding.clone());
            report.findings.push(finding);
            report.settle_outcome();
        }
    }
    Ok(())
}

/// `the patch that made generation G (its message), the build that made …`.
fn lost_runs_text(rollback: &RollBack) -> String {
    if rollback.lost_runs.is_empty() {
        return "no recorded run".into();
    }
    let runs: Vec<String> = rollback
        .lost_runs
        .iter()
        .map(|run| match run.message.as_str() {
            "" => format!("the {} that made generation {}", run.kind, run.generation),
            message => format!(
                "the {} that made generation {} ({message})",
                run.kind, run.generation
            ),
        })
        .collect();
    runs.join(", ")
}

/// Patches the graph from the source; what changed, in words.
fn re_index_changes(root: &Path, batho_dir: &Path) -> Result<String, String> {
    source_is_here(root, batho_dir)?;
    let patched = crate::patch::patch(root, &crate::patch::PatchOptions::default())
        .map_err(|error| error.to_string())?;
    let files = &patched.files;
    if files.is_empty() {
        return Ok("nothing".into());
    }
    let list = |paths: &[String]| -> String {
        let shown: Vec<&str> = paths.iter().take(10).map(String::as_str).collect();
        let more = paths.len().saturating_sub(shown.len());
        let mut text = shown.join(", ");
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    };
    let mut parts = Vec::new();
    for (what, paths) in [
        ("added", &files.added),
        ("modified", &files.modified),
        ("deleted", &files.deleted),
    ] {
        if !paths.is_empty() {
            parts.push(format!("{} {what} ({})", paths.len(), list(paths)));
        }
    }
    Ok(format!("{} files: {}", files.total(), parts.join("; ")))
}

/// Refuses a source tree that holds fewer than half of the files the current graph
/// indexed: an artifact loaded or copied without its source would otherwise be patched
/// into a graph of nothing.
fn source_is_here(root: &Path, batho_dir: &Path) -> Result<(), String> {
    let current = Store::open_existing(batho_dir)
        .and_then(|store| store.open_current())
        .map_err(|error| error.to_string())?;
    let indexed = crate::patch::Indexed::of(&current);
    let present = indexed
        .files
        .keys()
        .filter(|path| root.join(path).is_file())
        .count();
    if present * 2 < indexed.files.len() {
        return Err(format!(
            "only {present} of the {} files it indexed are under {}",
            indexed.files.len(),
            root.display()
        ));
    }
    Ok(())
}

/// Builds the graph again from the source; the files indexed.
fn build_again(root: &Path) -> Result<u64, String> {
    let options = crate::build::BuildOptions {
        full: true,
        ..crate::build::BuildOptions::default()
    };
    crate::build::build(root, &options, &|_| {})
        .map(|built| built.files)
        .map_err(|error| error.to_string())
}

/// Runs the selected phases again, read-only, for what remains after the source's repair.
fn check_again(
    batho_dir: &Path,
    options: &FixOptions,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    let check = FixOptions {
        dry_run: true,
        ..options.clone()
    };
    let again = batho_storage::fix::fix(batho_dir, &check)?;
    report.generation_after = again.generation_after;
    report.remaining = again.remaining;
    report.settle_outcome();
    Ok(())
}

/// The derived files that do not verify, with what is wrong.
fn damaged_derived_files(batho_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut damaged = crate::facts_cache::damaged_packs(batho_dir);
    damaged.extend(crate::algo::community_summary::damaged_summaries(batho_dir));
    if crate::stamps::file_is_damaged(batho_dir) {
        let problem = "it does not decode (damaged, truncated, or of another version)";
        damaged.push((crate::stamps::file_path(batho_dir), problem.into()));
    }
    damaged
}

/// Reports each damaged derived file and, on a real run, sets it aside under the writer
/// lock with an audit entry.
fn check_derived_files(
    batho_dir: &Path,
    dry_run: bool,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    let damaged = damaged_derived_files(batho_dir);
    if damaged.is_empty() {
        return Ok(());
    }
    let store = (!dry_run)
        .then(|| Store::open_existing(batho_dir))
        .transpose()?;
    let _lock = store.as_ref().map(Store::lock_writer).transpose()?;
    for (path, problem) in damaged {
        let what = path
            .strip_prefix(batho_dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        let finding = Finding {
            phase: DERIVED_PHASE,
            severity: Severity::Warning,
            what: what.clone(),
            detail: format!(
                "{problem}; derived, it only saves work (parsing, hashing or computing)"
            ),
            repair: Some("set it aside: the next build or patch writes what it held".into()),
        };
        report.findings.push(finding.clone());
        if dry_run {
            report.remaining.push(finding);
            continue;
        }
        let aside = batho_storage::fix::set_aside(&path)?;
        let detail = format!(
            "{what} set aside as {}",
            aside.file_name().unwrap_or_default().to_string_lossy()
        );
        report
            .audit
            .push(super::append_audit(batho_dir, "fix.set_aside", &detail)?);
        report.repairs.push(Repair {
            phase: DERIVED_PHASE,
            action: "set_aside".into(),
            detail,
        });
    }
    report.settle_outcome();
    Ok(())
}
