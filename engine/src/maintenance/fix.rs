//! `fix` for a code graph's artifact: the storage layer's four phases over the files it
//! owns (manifests, run history, segments, the graph), and with `deep` the files the
//! engine derives beside them, the facts cache's packs and the stamps file. Those only
//! save work (a missing pack entry costs a parse, missing stamps a hash), so a damaged one
//! is reported and set aside, never trusted and never a reason to fail.

use std::path::{Path, PathBuf};

pub use batho_storage::fix::{
    Finding, FixOptions, FixOutcome, FixReport, FixTarget, Repair, Severity, phase_name,
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
    Ok(report)
}

/// The derived files that do not verify, with what is wrong.
fn damaged_derived_files(batho_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut damaged = crate::facts_cache::damaged_packs(batho_dir);
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
            detail: format!("{problem}; derived, it only saves parsing or hashing"),
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
