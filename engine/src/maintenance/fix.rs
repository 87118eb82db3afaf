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
            audit_heal(batho_dir, detail, report)?;
            forget_lost_generations(batho_dir, options, rollback, report)?;
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

/// Records the source's repair in the report and, under the writer lock (released before
/// the steps after it, which take it themselves), in the audit log.
fn audit_heal(
    batho_dir: &Path,
    detail: String,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    let store = Store::open_existing(batho_dir)?;
    let _lock = store.lock_writer()?;
    let entry = super::append_audit(batho_dir, "fix.heal_from_source", &detail)?;
    report.audit.push(entry);
    report.repairs.push(Repair {
        phase: GRAPH_PHASE,
        action: "heal_from_source".into(),
        detail,
    });
    Ok(())
}

/// Once the source has brought the graph back, the generations the rollback lost are gone
/// for good (the report and the audit log say which): their runs are pruned from the
/// history, and a second repair pass sets aside the manifests that still name their
/// missing segments, so that a later verification checks what is there rather than
/// reporting again what was lost. That pass verifies again after repairing: what it
/// leaves is what remains.
fn forget_lost_generations(
    batho_dir: &Path,
    options: &FixOptions,
    rollback: &RollBack,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    for run in &rollback.lost_runs {
        let prune = batho_storage::gc::PruneOptions {
            older_than_days: None,
            run: Some(run.run_id.clone()),
            dry_run: false,
        };
        let pruned = batho_storage::gc::prune(batho_dir, &prune)?;
        report.audit.extend(pruned.audit);
        report.repairs.push(Repair {
            phase: GRAPH_PHASE,
            action: "prune_lost_run".into(),
            detail: format!(
                "pruned run {} (the {} that made generation {}) from the history: its generation is lost",
                run.run_id, run.kind, run.generation
            ),
        });
    }
    let second = batho_storage::fix::fix(
        batho_dir,
        &FixOptions {
            dry_run: false,
            ..options.clone()
        },
    )?;
    report.repairs.extend(second.repairs);
    report.audit.extend(second.audit);
    report.generation_after = second.generation_after;
    report.remaining = second.remaining;
    report.settle_outcome();
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

/// The derived caches as a whole, when they disagree with the graph: the facts cache
/// misses files the graph indexed, or one of the facts cache and the stamps file is there
/// without the other (a build writes both). Neither there is a state of its own, not a
/// fault: an artifact loaded from an archive, or set aside whole by an earlier fix.
/// Returns what is wrong and the cache files there are.
fn incomplete_caches(batho_dir: &Path) -> Option<(String, Vec<PathBuf>)> {
    let mut files = crate::facts_cache::pack_files(batho_dir);
    let stamps = crate::stamps::file_path(batho_dir);
    let has_stamps = stamps.is_file();
    let problem = match (files.is_empty(), has_stamps) {
        (true, false) => return None,
        (false, false) => "the stamps file is missing beside the facts cache".to_string(),
        (true, true) => "the facts cache is missing beside the stamps file".to_string(),
        (false, true) => {
            let artifact = batho_storage::Artifact::open(batho_dir).ok()?;
            let cache = crate::facts_cache::FactsCache::open(batho_dir);
            let indexed = crate::patch::Indexed::of(&artifact);
            let missing = indexed
                .files
                .iter()
                .filter(|(path, (_, _, hash))| !cache.holds(path, hash))
                .count();
            if missing == 0 {
                return None;
            }
            format!(
                "the facts cache holds nothing for {missing} of the {} indexed files (a pack \
                 was removed, or the graph was loaded from an archive of other sources)",
                indexed.files.len()
            )
        }
    };
    if has_stamps {
        files.push(stamps);
    }
    Some((problem, files))
}

/// A derived file, or the derived caches as a whole, that `fix --deep` reports and sets
/// aside.
struct DerivedProblem {
    /// What the finding names.
    what: String,
    /// What is wrong.
    problem: String,
    /// The files a repair sets aside.
    files: Vec<PathBuf>,
}

/// Reports each damaged derived file, then caches that disagree with the graph, and on a
/// real run sets them aside under the writer lock with an audit entry each. The caches
/// are looked at after the damaged files are set aside, so the caches left agree.
fn check_derived_files(
    batho_dir: &Path,
    dry_run: bool,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    let damaged: Vec<DerivedProblem> = damaged_derived_files(batho_dir)
        .into_iter()
        .map(|(path, problem)| DerivedProblem {
            what: relative_name(batho_dir, &path),
            problem,
            files: vec![path],
        })
        .collect();
    let mut incomplete = incomplete_caches(batho_dir);
    if damaged.is_empty() && incomplete.is_none() {
        // Nothing to report: no lock taken (a running writer is phase 2's finding).
        return Ok(());
    }
    let store = (!dry_run)
        .then(|| Store::open_existing(batho_dir))
        .transpose()?;
    let _lock = store.as_ref().map(Store::lock_writer).transpose()?;
    if !damaged.is_empty() {
        for problem in damaged {
            set_aside_derived(batho_dir, dry_run, problem, report)?;
        }
        incomplete = incomplete_caches(batho_dir);
    }
    if let Some((problem, files)) = incomplete {
        let problem = DerivedProblem {
            what: "facts cache and stamps".into(),
            problem,
            files,
        };
        set_aside_derived(batho_dir, dry_run, problem, report)?;
    }
    report.settle_outcome();
    Ok(())
}

fn relative_name(batho_dir: &Path, path: &Path) -> String {
    path.strip_prefix(batho_dir)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Reports `problem` and, on a real run, sets its files aside with an audit entry.
fn set_aside_derived(
    batho_dir: &Path,
    dry_run: bool,
    problem: DerivedProblem,
    report: &mut FixReport,
) -> Result<(), StorageError> {
    let finding = Finding {
        phase: DERIVED_PHASE,
        severity: Severity::Warning,
        what: problem.what.clone(),
        detail: format!(
            "{}; derived, it only saves work (parsing, hashing or computing)",
            problem.problem
        ),
        repair: Some("set it aside: the next build or patch writes what it held".into()),
    };
    report.findings.push(finding.clone());
    if dry_run {
        report.remaining.push(finding);
        return Ok(());
    }
    let mut moved = Vec::new();
    for path in &problem.files {
        let aside = batho_storage::fix::set_aside(path)?;
        moved.push(format!(
            "{} as {}",
            relative_name(batho_dir, path),
            aside.file_name().unwrap_or_default().to_string_lossy()
        ));
    }
    let detail = format!("set aside {}", moved.join(", "));
    report
        .audit
        .push(super::append_audit(batho_dir, "fix.set_aside", &detail)?);
    report.repairs.push(Repair {
        phase: DERIVED_PHASE,
        action: "set_aside".into(),
        detail,
    });
    Ok(())
}
