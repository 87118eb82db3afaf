//! The state of a repository's artifact: ready, stale or missing, with its counts.
//!
//! Staleness is judged the cheap way a user would: a source file the build would index
//! was modified after the last run started, or the set of source files changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use batho_schema::{NodeKind, RelType};
use batho_storage::{Artifact, RunRecord, StorageError, Store};

use crate::build::artifact_dir;
use crate::discover::{self, DiscoverOptions};

/// Whether the artifact can be used and is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArtifactState {
    /// Built, and no source file changed since.
    Ready,
    /// Built, but sources changed since the last run.
    Stale,
    /// Never built.
    Missing,
}

impl ArtifactState {
    /// Lower-case name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            ArtifactState::Ready => "ready",
            ArtifactState::Stale => "stale",
            ArtifactState::Missing => "missing",
        }
    }
}

/// The status of one repository's artifact.
#[derive(Clone, Debug)]
pub struct StatusReport {
    /// Repository root.
    pub root: PathBuf,
    /// Ready, stale or missing.
    pub state: ArtifactState,
    /// Current generation (0 when missing).
    pub generation: u64,
    /// Nodes per kind.
    pub node_kinds: BTreeMap<&'static str, u64>,
    /// Edges per relation type.
    pub relation_types: BTreeMap<&'static str, u64>,
    /// Entities: nodes that are neither files nor external stubs.
    pub entities: u64,
    /// All edges.
    pub relationships: u64,
    /// Indexed source files.
    pub files: u64,
    /// The last run, if any.
    pub last_run: Option<RunRecord>,
    /// Bytes the artifact folder takes on disk.
    pub size_on_disk: u64,
    /// Source files changed, added or removed since the last run (at most a few, for display).
    pub changed_files: Vec<String>,
    /// How many source files changed, were added or removed in all.
    pub changed_count: u64,
    /// Indexed files whose syntax tree had errors tree-sitter recovered from, sorted.
    pub syntax_error_files: Vec<String>,
    /// Problems found by a full verification, when one was asked for (`None` otherwise).
    pub integrity: Option<Vec<String>>,
}

/// Reports the status of the artifact of the repository at `root`; with `verify`, also
/// checks every structure and re-hashes every segment (slow on large artifacts).
pub fn status(root: &Path, verify: bool) -> Result<StatusReport, StorageError> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let dir = artifact_dir(&root);
    let mut report = StatusReport {
        root: root.clone(),
        state: ArtifactState::Missing,
        generation: 0,
        node_kinds: BTreeMap::new(),
        relation_types: BTreeMap::new(),
        entities: 0,
        relationships: 0,
        files: 0,
        last_run: None,
        size_on_disk: 0,
        changed_files: Vec::new(),
        changed_count: 0,
        syntax_error_files: Vec::new(),
        integrity: None,
    };
    if !dir.is_dir() {
        return Ok(report);
    }
    let artifact = match Artifact::open(&dir) {
        Ok(a) => a,
        Err(StorageError::NoArtifact { .. }) => return Ok(report),
        Err(e) => return Err(e),
    };
    // A reader: status never writes (it once recreated a deleted DBID).
    report.size_on_disk = Store::open_existing(&dir)?.size_on_disk()?;
    report.generation = artifact.generation();
    for kind in NodeKind::ALL {
        let n = artifact.nodes_of_kind(*kind).len();
        if n > 0 {
            report.node_kinds.insert(kind.name(), n);
        }
    }
    for rel in RelType::ALL {
        let n = artifact.edges_of_rel(*rel).len();
        if n > 0 {
            report.relation_types.insert(rel.name(), n);
        }
    }
    let counts = GraphCounts::of(&artifact);
    report.entities = counts.entities;
    report.relationships = counts.edges;
    report.last_run = artifact.last_run();
    if verify {
        report.integrity = Some(integrity_findings(&dir)?);
    }
    report.syntax_error_files = syntax_error_files(&artifact);
    let indexed = indexed_files(&artifact);
    report.files = counts.files;

    let since_ms = report.last_run.as_ref().map_or(0, |r| r.started_at_ms);
    let changed = changed_files(&root, &indexed, since_ms);
    report.changed_count = changed.len() as u64;
    report.changed_files = changed.into_iter().take(20).collect();
    report.state = if report.changed_count == 0 {
        ArtifactState::Ready
    } else {
        ArtifactState::Stale
    };
    Ok(report)
}

/// The counts `batho status` and `CALL db.stats()` report, defined once here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphCounts {
    /// Nodes of every kind (files and external stubs included).
    pub nodes: u64,
    /// Relationships of every type.
    pub edges: u64,
    /// Indexed source files: `File` nodes inside the tree (not system headers).
    pub files: u64,
    /// Entities: nodes that are neither files nor external stubs.
    pub entities: u64,
}

impl GraphCounts {
    /// The counts of `artifact`'s generation (bitmap sizes, and one look at each file node).
    pub fn of(artifact: &Artifact) -> GraphCounts {
        let mut c = GraphCounts {
            edges: u64::from(artifact.live_edge_count()),
            files: indexed_file_nodes(artifact).count() as u64,
            ..GraphCounts::default()
        };
        for kind in NodeKind::ALL {
            let n = artifact.nodes_of_kind(*kind).len();
            c.nodes += n;
            if !matches!(kind, NodeKind::File | NodeKind::External) {
                c.entities += n;
            }
        }
        c
    }
}

/// The `File` nodes of the source files the artifact indexed (not system headers).
fn indexed_file_nodes(artifact: &Artifact) -> impl Iterator<Item = batho_storage::NodeRef<'_>> {
    artifact
        .nodes_of_kind(NodeKind::File)
        .iter()
        .map(batho_storage::input::NodeIdx)
        .filter(|&idx| artifact.is_live(idx))
        .map(|idx| artifact.node(idx))
        .filter(|n| !n.flags().contains(batho_schema::NodeFlags::SYSTEM))
}

/// Paths of the source files the artifact indexed (its non-system `File` nodes).
fn indexed_files(artifact: &Artifact) -> BTreeSet<String> {
    indexed_file_nodes(artifact)
        .map(|n| n.file().into_owned())
        .collect()
}

/// Paths of the indexed files whose `File` node carries the syntax-errors flag.
fn syntax_error_files(artifact: &Artifact) -> Vec<String> {
    let mut files: Vec<String> = artifact
        .nodes_of_kind(NodeKind::File)
        .iter()
        .map(batho_storage::input::NodeIdx)
        .filter(|&idx| artifact.is_live(idx))
        .map(|idx| artifact.node(idx))
        .filter(|n| n.flags().contains(batho_schema::NodeFlags::SYNTAX_ERRORS))
        .map(|n| n.file().into_owned())
        .collect();
    files.sort();
    files
}

/// Source files modified or added after `since_ms`, plus indexed files that are gone.
fn changed_files(root: &Path, indexed: &BTreeSet<String>, since_ms: i64) -> Vec<String> {
    let Ok(discovery) = discover::discover(root, &DiscoverOptions::default()) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    let mut seen = BTreeSet::new();
    for f in &discovery.files {
        seen.insert(f.rel_path.as_str());
        let modified_ms = std::fs::metadata(&f.abs_path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        // A new file is caught by its mtime too: creating it (or checking it out) sets it.
        if modified_ms > since_ms {
            changed.push(f.rel_path.clone());
        }
    }
    let skipped: BTreeSet<&str> = discovery
        .skipped
        .iter()
        .map(|s| s.rel_path.as_str())
        .collect();
    for path in indexed {
        if !seen.contains(path.as_str()) && !skipped.contains(path.as_str()) {
            changed.push(path.clone());
        }
    }
    changed.sort();
    changed
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn utc_timestamp(ms: i64) -> String {
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

/// What `fix --deep --dry-run` finds (warnings and worse, leftovers of interrupted writes
/// aside), changing nothing: the
/// manifests and each generation's copy, the run history and the audit log, every segment
/// against its name, the graph's structures, and the files the engine derives (facts-cache
/// packs, stamps, community summaries). `status --verify` and `fix` thus agree on what is
/// wrong: the segments verifying is not enough when a manifest copy or the audit log is
/// damaged.
fn integrity_findings(dir: &Path) -> Result<Vec<String>, StorageError> {
    use crate::maintenance::fix::{FixOptions, Severity, fix};
    let options = FixOptions {
        deep: true,
        dry_run: true,
        ..FixOptions::default()
    };
    Ok(fix(dir, &options)?
        .findings
        .iter()
        .filter(|finding| finding.severity >= Severity::Warning && !is_leftover(&finding.what))
        .map(|finding| format!("{}: {}", finding.what, finding.detail))
        .collect())
}

/// Whether `what` names a leftover of an interrupted write (`*.tmp-<id>`, docs/format.md
/// §1): garbage that no reader opens and `gc` deletes, not damage (a writer killed
/// mid-commit leaves one, and the artifact is whole).
fn is_leftover(what: &str) -> bool {
    what.rsplit('/')
        .next()
        .is_some_and(|name| name.contains(batho_storage::gc::TEMP_MARKER))
}

#[cfg(test)]
mod utc_tests {
    use super::utc_timestamp;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(utc_timestamp(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc_timestamp(1_764_559_298_123), "2025-12-01 03:21:38");
    }
}
