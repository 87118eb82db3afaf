//! `batho fix`: verify an artifact in phases and repair what can be derived.
//!
//! Phases: 1 bundle (DBID, `MANIFEST`, every `manifests/` file: magic, version,
//! checksums, agreement), 2 state (run history, writer lock, leftovers of interrupted
//! writes, the audit log's hash chain), 3 blobs (every segment any manifest names exists
//! with the right length and header; `deep` re-hashes each with blake3), 4 graph (the
//! current generation opens; `deep` runs [`crate::Artifact::verify`], re-deriving every
//! index and bitmap and comparing). A quick run reads headers and manifests only, never a
//! column, so it is fast on any artifact size.
//!
//! Repairs, never deleting data (damaged files are set aside as `<name>.damaged-<ms>`;
//! `gc reclaim` removes them): recreate `DBID`; restore `MANIFEST` or a generation's copy
//! from the other; delete temporary leftovers; restore a damaged segment when its header
//! can be recomputed or when re-deriving its generation from the primary columns
//! reproduces its exact blake3 name; rebuild derived structures (in-CSR, indexes, bitmaps)
//! from the primary columns as a new generation when only they are wrong (including a
//! bitmaps segment whose exact bytes cannot be reproduced); otherwise make
//! the newest intact older generation current again (as a new generation, saying so); set
//! aside generations that cannot be restored. A broken audit chain is reported, never
//! rewritten. Every applied repair is appended to the audit log.

mod deep;
mod repair;
pub use repair::set_aside;
mod scan;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::audit::AuditEntry;
use crate::error::Result;
use crate::manifest::RunRecord;

/// What `fix` checks, by area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FixTarget {
    /// Every phase.
    #[default]
    All,
    /// Segment files (phase 3).
    Blobs,
    /// The graph's invariants (phase 4).
    Graph,
    /// Manifests, run history, lock, leftovers, audit log (phases 1 and 2).
    State,
}

impl FixTarget {
    /// Every target, in the order the names are listed.
    pub const ALL: [FixTarget; 4] = [
        FixTarget::All,
        FixTarget::Blobs,
        FixTarget::Graph,
        FixTarget::State,
    ];

    /// Parses `all`, `blobs`, `graph` or `state`.
    pub fn parse(s: &str) -> Option<FixTarget> {
        FixTarget::ALL.into_iter().find(|target| target.name() == s)
    }

    /// The lower-case name [`FixTarget::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            FixTarget::All => "all",
            FixTarget::Blobs => "blobs",
            FixTarget::Graph => "graph",
            FixTarget::State => "state",
        }
    }

    fn phases(self) -> &'static [u8] {
        match self {
            FixTarget::All => &[1, 2, 3, 4],
            FixTarget::Blobs => &[3],
            FixTarget::Graph => &[4],
            FixTarget::State => &[1, 2],
        }
    }
}

/// Number of phases.
pub const PHASES: u8 = 4;

/// Name of a phase (1-based).
pub fn phase_name(phase: u8) -> &'static str {
    match phase {
        1 => "bundle",
        2 => "state",
        3 => "blobs",
        4 => "graph",
        _ => "unknown",
    }
}

/// How `fix` runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FixOptions {
    /// Re-hash every segment and re-derive every index (O(artifact size)).
    pub deep: bool,
    /// Report only; change nothing.
    pub dry_run: bool,
    /// The area to check.
    pub target: FixTarget,
    /// Run only this phase (1..=4); overrides `target`.
    pub phase: Option<u8>,
    /// Spread hashing and verification over every core.
    pub parallel: bool,
}

impl FixOptions {
    /// The phases selected, ascending.
    pub fn phases(&self) -> Vec<u8> {
        match self.phase {
            Some(p) => vec![p],
            None => self.target.phases().to_vec(),
        }
    }
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong (e.g. garbage `gc reclaim` would free).
    Info,
    /// Harmless but abnormal (leftovers of a crash, a lost old generation).
    Warning,
    /// Damage: the artifact or part of its history is wrong.
    Error,
    /// Nothing usable: no readable manifest, an unknown format version.
    Critical,
}

impl Severity {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

/// One thing a phase found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The phase (1..=4).
    pub phase: u8,
    /// How bad it is.
    pub severity: Severity,
    /// The file or structure (`MANIFEST`, `segments/<hex>.seg`, `nodes.id_index`, …).
    pub what: String,
    /// What is wrong.
    pub detail: String,
    /// What `fix` does about it (`None`: nothing can be done automatically).
    pub repair: Option<String>,
}

/// A repair that was applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Repair {
    /// The phase whose finding it answers.
    pub phase: u8,
    /// Short code (`restore_manifest`, `delete_temp`, `restore_segment`, `rebuild_derived`,
    /// `fallback`, `set_aside`, …), also the audit entry's action after `fix.`.
    pub action: String,
    /// What exactly was done.
    pub detail: String,
}

/// The overall result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FixOutcome {
    /// Nothing wrong (warnings and infos aside).
    Clean,
    /// Problems were found and all were repaired.
    Repaired,
    /// Errors remain (or, on a dry run, were found).
    ErrorsLeft,
    /// Nothing usable remains.
    Critical,
}

impl FixOutcome {
    /// The process exit code: 0 clean or repaired, 1 errors left, 2 critical.
    pub fn exit_code(self) -> u8 {
        match self {
            FixOutcome::Clean | FixOutcome::Repaired => 0,
            FixOutcome::ErrorsLeft => 1,
            FixOutcome::Critical => 2,
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            FixOutcome::Clean => "clean",
            FixOutcome::Repaired => "repaired",
            FixOutcome::ErrorsLeft => "errors",
            FixOutcome::Critical => "critical",
        }
    }
}

/// A current generation whose primary data was damaged beyond exact repair, and what
/// `fix` made current instead.
#[derive(Clone, Debug, Serialize)]
pub struct RollBack {
    /// The damaged generation.
    pub damaged: u64,
    /// The newest intact older generation, whose graph is current again; `None` when there
    /// was none (the damaged generation is still current).
    pub restored: Option<u64>,
    /// What the rollback lost: the runs that made the generations after `restored` up to
    /// the damaged one (all of them when nothing was restored), newest first.
    pub lost_runs: Vec<LostRun>,
}

/// A run whose generation a rollback gave up.
#[derive(Clone, Debug, Serialize)]
pub struct LostRun {
    /// The run's id.
    pub run_id: String,
    /// The generation it made.
    pub generation: u64,
    /// `build` or `patch`.
    pub kind: &'static str,
    /// When it started, in epoch milliseconds.
    pub started_at_ms: i64,
    /// Its message (a patch lists what it changed).
    pub message: String,
}

impl LostRun {
    pub(crate) fn of(run: &RunRecord) -> LostRun {
        LostRun {
            run_id: run.uuid.clone(),
            generation: run.generation,
            kind: match run.kind {
                crate::manifest::RunKind::Build => "build",
                crate::manifest::RunKind::Patch => "patch",
            },
            started_at_ms: run.started_at_ms,
            message: run.message.clone(),
        }
    }
}

/// Everything `fix` found and did.
#[derive(Clone, Debug, Serialize)]
pub struct FixReport {
    /// The `.batho/` directory.
    pub dir: PathBuf,
    /// The options it ran with.
    pub options: FixOptions,
    /// Phases run.
    pub phases: Vec<u8>,
    /// Findings of the first pass (before any repair), ordered by phase.
    pub findings: Vec<Finding>,
    /// Repairs applied (empty on a dry run: see each finding's `repair`).
    pub repairs: Vec<Repair>,
    /// Findings of warning severity or worse left after the repairs (on a dry run: the
    /// findings themselves).
    pub remaining: Vec<Finding>,
    /// Current generation before.
    pub generation_before: Option<u64>,
    /// Current generation after.
    pub generation_after: Option<u64>,
    /// Audit entries appended, one per repair.
    pub audit: Vec<AuditEntry>,
    /// Segments checked in phase 3.
    pub segments_checked: u64,
    /// Bytes re-hashed (deep runs).
    pub bytes_hashed: u64,
    /// Wall time.
    pub elapsed_ms: u64,
    /// Set when the current generation's primary data was damaged beyond exact repair.
    pub rolled_back: Option<RollBack>,
    /// The verdict.
    pub outcome: FixOutcome,
}

fn outcome(remaining: &[Finding], repaired: bool) -> FixOutcome {
    let worst = remaining.iter().map(|f| f.severity).max();
    match worst {
        Some(Severity::Critical) => FixOutcome::Critical,
        Some(Severity::Error) => FixOutcome::ErrorsLeft,
        _ if repaired => FixOutcome::Repaired,
        _ => FixOutcome::Clean,
    }
}

/// Verifies the store in `batho_dir` and, unless `opts.dry_run`, repairs what it can.
///
/// Errors are returned only for failures of `fix` itself (I/O errors while repairing);
/// everything wrong with the artifact is in the report.
pub fn fix(batho_dir: &Path, opts: &FixOptions) -> Result<FixReport> {
    let started = Instant::now();
    let phases: Vec<u8> = opts
        .phases()
        .into_iter()
        .filter(|p| (1..=PHASES).contains(p))
        .collect();
    let first = scan::scan(batho_dir, opts, &phases);
    let mut report = FixReport {
        dir: batho_dir.to_path_buf(),
        options: opts.clone(),
        phases: phases.clone(),
        findings: first.findings.clone(),
        repairs: Vec::new(),
        remaining: Vec::new(),
        generation_before: first.current_generation(),
        generation_after: first.current_generation(),
        audit: Vec::new(),
        segments_checked: first.segments_checked,
        bytes_hashed: first.bytes_hashed,
        elapsed_ms: 0,
        rolled_back: None,
        outcome: FixOutcome::Clean,
    };
    let needs_repair = first.findings.iter().any(|f| f.repair.is_some());
    if opts.dry_run || !needs_repair {
        report.remaining = significant(&first.findings);
    } else {
        let outcome = repair::repair(batho_dir, opts, &first)?;
        report.repairs = outcome.repairs;
        report.audit = outcome.audit;
        report.rolled_back = outcome.rolled_back;
        let mut again = scan::scan(batho_dir, opts, &phases);
        again.findings.extend(outcome.failures);
        report.generation_after = again.current_generation();
        report.remaining = significant(&again.findings);
    }
    report.outcome = outcome(&report.remaining, !report.repairs.is_empty());
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(report)
}

impl FixReport {
    /// Works the outcome out again from `remaining` and `repairs`, after findings and
    /// repairs were added to the report (the engine's checks of the files it derives).
    pub fn settle_outcome(&mut self) {
        self.outcome = outcome(&self.remaining, !self.repairs.is_empty());
    }
}

fn significant(findings: &[Finding]) -> Vec<Finding> {
    findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
