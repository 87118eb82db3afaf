//! Garbage collection: how much space the artifact takes, pruning the run history and
//! reclaiming files no retained generation needs.
//!
//! What is *retained*: the current generation, and the generation of every run still in
//! the current manifest's history (a run can be looked at later, so its manifest and
//! segments stay). `prune` removes runs from the history (never the run that committed
//! the current graph) by publishing a new generation with the shorter history; `reclaim`
//! then deletes the manifests of generations nothing retains, the segments no retained
//! manifest names, and leftovers of interrupted writes. Both take the writer lock and
//! append to the audit log.
//!
//! Readers stay safe: an open [`crate::Artifact`] holds mappings of its segments, which
//! stay valid after the files are unlinked, and a reader opening the current generation
//! only needs files that are retained. (A reader that read an old `MANIFEST` just before a
//! commit and a reclaim can fail to open with "segment missing" and must retry.)

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::Store;
use crate::audit::{AuditEntry, AuditLog};
use crate::error::{Result, StorageError};
use crate::format::names;
use crate::manifest::{ManifestBody, RunRecord};
use crate::store::{generation_manifest_path, io_err, list_generations, now_ms, read_manifest};

/// Marker in the names of leftovers of interrupted writes (`<name>.tmp-<uuid>`).
pub const TEMP_MARKER: &str = ".tmp-";
/// Marker in the names of damaged files that `fix` set aside (`<name>.damaged-<ms>`).
pub(crate) const DAMAGED_MARKER: &str = ".damaged-";

/// A file under `.batho/` that is neither a segment, a manifest nor a known control file.
pub(crate) fn is_leftover(name: &str) -> bool {
    name.contains(TEMP_MARKER) || name.contains(DAMAGED_MARKER)
}

/// Files (not directories) directly in `dir` with their sizes; empty if `dir` is missing.
pub(crate) fn list_files(dir: &Path) -> Result<Vec<(String, u64)>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StorageError::io(dir, e)),
    };
    let mut out = Vec::new();
    for ent in rd {
        let ent = ent.map_err(io_err(dir))?;
        let md = match ent.metadata() {
            Ok(m) => m,
            // Deleted between listing and stat: a concurrent reclaim; not ours to report.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StorageError::io(ent.path(), e)),
        };
        if md.is_file()
            && let Some(name) = ent.file_name().to_str()
        {
            out.push((name.to_owned(), md.len()));
        }
    }
    out.sort();
    Ok(out)
}

/// Leftover files (temporary or set aside) in the three directories of a store, with sizes.
pub(crate) fn leftovers(batho_dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut out = Vec::new();
    for d in [
        batho_dir.to_path_buf(),
        batho_dir.join(names::SEGMENTS_DIR),
        batho_dir.join(names::MANIFESTS_DIR),
    ] {
        for (name, len) in list_files(&d)? {
            if is_leftover(&name) {
                out.push((d.join(name), len));
            }
        }
    }
    Ok(out)
}

/// Space use and what `reclaim` would free.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GcStatus {
    /// The current generation.
    pub current_generation: u64,
    /// Generations with a manifest on disk, ascending.
    pub generations: Vec<u64>,
    /// Runs in the history.
    pub runs: usize,
    /// Segment files and their bytes.
    pub segment_files: u64,
    /// Bytes of all segment files.
    pub segment_bytes: u64,
    /// Bytes of the segments the current generation uses.
    pub live_bytes: u64,
    /// Manifest files (`MANIFEST` and `manifests/*`).
    pub manifest_files: u64,
    /// Bytes of all manifest files.
    pub manifest_bytes: u64,
    /// Everything under `.batho/`.
    pub total_bytes: u64,
    /// Generations whose manifests `reclaim` would delete.
    pub reclaimable_generations: Vec<u64>,
    /// Segment files `reclaim` would delete.
    pub reclaimable_segments: u64,
    /// Leftover files (interrupted writes, damaged copies) `reclaim` would delete.
    pub leftover_files: u64,
    /// Bytes `reclaim` would free.
    pub reclaimable_bytes: u64,
    /// `reclaimable_bytes / total_bytes` (0 when empty): how much of the folder is garbage.
    pub fragmentation: f64,
}

/// What `reclaim` deletes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Plan {
    manifests: Vec<(u64, u64)>,
    segments: Vec<(String, u64)>,
    leftovers: Vec<(PathBuf, u64)>,
    retained: BTreeSet<u64>,
}

impl Plan {
    fn bytes(&self) -> u64 {
        self.manifests.iter().map(|m| m.1).sum::<u64>()
            + self.segments.iter().map(|s| s.1).sum::<u64>()
            + self.leftovers.iter().map(|l| l.1).sum::<u64>()
    }
}

fn current(batho_dir: &Path) -> Result<ManifestBody> {
    let path = batho_dir.join(names::MANIFEST);
    if !batho_dir.is_dir() {
        return Err(StorageError::NoArtifact {
            path: batho_dir.to_path_buf(),
        });
    }
    read_manifest(&path)?.ok_or_else(|| StorageError::NoArtifact {
        path: batho_dir.to_path_buf(),
    })
}

/// Generations the history retains: the current one and every retained run's.
fn retained_generations(cur: &ManifestBody) -> BTreeSet<u64> {
    let mut keep: BTreeSet<u64> = cur.runs.iter().map(|r| r.generation).collect();
    keep.insert(cur.generation);
    keep
}

fn plan(batho_dir: &Path, cur: &ManifestBody) -> Result<Plan> {
    let retained = retained_generations(cur);
    let mut keep_segments: BTreeSet<String> = BTreeSet::new();
    let mut add = |m: &ManifestBody| {
        for l in &m.layers {
            keep_segments.extend(l.segments.iter().map(|s| s.file_name()));
        }
    };
    add(cur);
    let mut manifests = Vec::new();
    for g in list_generations(batho_dir)? {
        let path = generation_manifest_path(batho_dir, g);
        if retained.contains(&g) {
            // Whatever a retained manifest names must stay; if it cannot be read, nothing
            // can be deleted safely.
            match read_manifest(&path) {
                Ok(Some(m)) => add(&m),
                Ok(None) => {}
                Err(e) => {
                    return Err(StorageError::corrupt(
                        path.display().to_string(),
                        format!("retained manifest unreadable, nothing reclaimed ({e})"),
                    ));
                }
            }
        } else {
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            manifests.push((g, len));
        }
    }
    let segments = list_files(&batho_dir.join(names::SEGMENTS_DIR))?
        .into_iter()
        .filter(|(name, _)| {
            name.ends_with(&format!(".{}", names::SEGMENT_EXT))
                && !is_leftover(name)
                && !keep_segments.contains(name)
        })
        .collect();
    Ok(Plan {
        manifests,
        segments,
        leftovers: leftovers(batho_dir)?,
        retained,
    })
}

/// Sizes, generations, runs and reclaimable bytes of the store in `batho_dir` (read-only).
pub fn status(batho_dir: &Path) -> Result<GcStatus> {
    let cur = current(batho_dir)?;
    let plan = plan(batho_dir, &cur)?;
    let segs = list_files(&batho_dir.join(names::SEGMENTS_DIR))?;
    let mans = list_files(&batho_dir.join(names::MANIFESTS_DIR))?;
    let top = list_files(batho_dir)?;
    let live: BTreeSet<String> = cur
        .layers
        .iter()
        .flat_map(|l| l.segments.iter().map(|s| s.file_name()))
        .collect();
    let seg_files: Vec<&(String, u64)> = segs.iter().filter(|(n, _)| !is_leftover(n)).collect();
    let man_files: Vec<&(String, u64)> = mans
        .iter()
        .filter(|(n, _)| !is_leftover(n))
        .chain(top.iter().filter(|(n, _)| n == names::MANIFEST))
        .collect();
    let total_bytes = [&segs, &mans, &top]
        .iter()
        .flat_map(|v| v.iter().map(|f| f.1))
        .sum::<u64>();
    let reclaimable_bytes = plan.bytes();
    Ok(GcStatus {
        current_generation: cur.generation,
        generations: list_generations(batho_dir)?,
        runs: cur.runs.len(),
        segment_files: seg_files.len() as u64,
        segment_bytes: seg_files.iter().map(|f| f.1).sum(),
        live_bytes: seg_files
            .iter()
            .filter(|f| live.contains(&f.0))
            .map(|f| f.1)
            .sum(),
        manifest_files: man_files.len() as u64,
        manifest_bytes: man_files.iter().map(|f| f.1).sum(),
        total_bytes,
        reclaimable_generations: plan.manifests.iter().map(|m| m.0).collect(),
        reclaimable_segments: plan.segments.len() as u64,
        leftover_files: plan.leftovers.len() as u64,
        reclaimable_bytes,
        fragmentation: if total_bytes == 0 {
            0.0
        } else {
            reclaimable_bytes as f64 / total_bytes as f64
        },
    })
}

/// Which runs `prune` removes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneOptions {
    /// Remove runs that ended more than this many days ago.
    pub older_than_days: Option<u64>,
    /// Remove this run (by UUID).
    pub run: Option<String>,
    /// Only report what would be removed.
    pub dry_run: bool,
}

/// What `prune` did (or would do).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PruneReport {
    /// Runs removed from the history (or that would be).
    pub pruned: Vec<RunRecord>,
    /// Runs left in the history.
    pub remaining: usize,
    /// The generation published with the shorter history (`None` when nothing changed or
    /// on a dry run).
    pub generation: Option<u64>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// The audit entry written.
    pub audit: Option<AuditEntry>,
}

/// Removes runs from the history. The run that committed the current graph (and a run
/// recorded by the current generation) is always kept; asking for it by UUID is an error.
pub fn prune(batho_dir: &Path, opts: &PruneOptions) -> Result<PruneReport> {
    if opts.older_than_days.is_none() && opts.run.is_none() {
        return Err(StorageError::InvalidInput {
            detail: "prune needs --older-than-days N or --run UUID".into(),
        });
    }
    // A dry run writes nothing, not even a missing DBID, and takes no lock.
    let dir = existing(batho_dir)?;
    let store = (!opts.dry_run)
        .then(|| Store::create_or_open(&dir))
        .transpose()?;
    let lock = store.as_ref().map(Store::lock_writer).transpose()?;
    let cur = current(batho_dir)?;
    let protected: BTreeSet<u64> = cur
        .layers
        .iter()
        .map(|l| l.created_generation)
        .chain([cur.generation])
        .collect();
    let is_protected = |r: &RunRecord| protected.contains(&r.generation);
    if let Some(uuid) = &opts.run {
        match cur.runs.iter().find(|r| &r.uuid == uuid) {
            None => {
                return Err(StorageError::InvalidInput {
                    detail: format!("no run {uuid} in the history"),
                });
            }
            Some(r) if is_protected(r) => {
                return Err(StorageError::InvalidInput {
                    detail: format!(
                        "run {uuid} committed the current generation and is always kept"
                    ),
                });
            }
            Some(_) => {}
        }
    }
    let cutoff = opts.older_than_days.map(|d| {
        now_ms().saturating_sub(i64::try_from(d.saturating_mul(86_400_000)).unwrap_or(i64::MAX))
    });
    let doomed = |r: &RunRecord| {
        !is_protected(r)
            && (opts.run.as_ref() == Some(&r.uuid) || cutoff.is_some_and(|c| r.ended_at_ms < c))
    };
    let (pruned, kept): (Vec<RunRecord>, Vec<RunRecord>) =
        cur.runs.iter().cloned().partition(|r| doomed(r));
    let mut report = PruneReport {
        remaining: kept.len(),
        pruned,
        generation: None,
        dry_run: opts.dry_run,
        audit: None,
    };
    if let Some(mut lock) = lock
        && !report.pruned.is_empty()
    {
        let generation = lock.publish_manifest(cur.layers.clone(), kept, None)?;
        let list: Vec<String> = report
            .pruned
            .iter()
            .map(|r| format!("{} (generation {})", r.uuid, r.generation))
            .collect();
        report.generation = Some(generation);
        report.audit = Some(AuditLog::new(batho_dir).append(
            "gc.prune",
            &format!(
                "pruned {} runs: {}; published generation {generation}",
                report.pruned.len(),
                list.join(", ")
            ),
        )?);
    }
    Ok(report)
}

/// What `reclaim` deleted (or would delete).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReclaimReport {
    /// Generations whose manifests were deleted.
    pub manifests: Vec<u64>,
    /// Segment files deleted.
    pub segments: Vec<String>,
    /// Leftover files deleted (paths relative to `.batho/`).
    pub leftovers: Vec<String>,
    /// Bytes freed.
    pub bytes: u64,
    /// Generations still on disk.
    pub remaining_generations: Vec<u64>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// The audit entry written.
    pub audit: Option<AuditEntry>,
}

fn existing(batho_dir: &Path) -> Result<PathBuf> {
    if batho_dir.join(names::MANIFEST).is_file() {
        Ok(batho_dir.to_path_buf())
    } else {
        Err(StorageError::NoArtifact {
            path: batho_dir.to_path_buf(),
        })
    }
}

/// What [`compact`] did.
#[derive(Debug, Clone, Serialize)]
pub struct CompactReport {
    /// Whether the current generation had a delta layer to fold.
    pub had_delta: bool,
    /// Node indexes the delta appended after the base's.
    pub appended_nodes: u64,
    /// Edge indexes the delta added after the base's.
    pub delta_edges: u64,
    /// The generation published with the compacted base (`None`: nothing to do or dry run).
    pub generation: Option<u64>,
    /// Nodes and edges of the compacted graph.
    pub node_count: u64,
    /// Edges of the compacted graph.
    pub edge_count: u64,
    /// Bytes the commit wrote.
    pub bytes_written: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// The audit entry written.
    pub audit: Option<AuditEntry>,
}

/// Folds the current generation's base and delta layers into a new base layer (see
/// [`crate::WriterLock::compact`]), recorded as a run; nothing happens without a delta.
/// The old layers' segments stay until no retained generation names them (`reclaim`).
pub fn compact(batho_dir: &Path, dry_run: bool) -> Result<CompactReport> {
    let dir = existing(batho_dir)?;
    let started = now_ms();
    let cur = crate::Artifact::open(&dir)?;
    let (rows, edges) = match &cur.manifest().layers.as_slice() {
        [base, delta] => (
            delta.node_count.saturating_sub(base.node_count),
            delta.edge_count.saturating_sub(base.edge_count),
        ),
        _ => (0, 0),
    };
    let mut report = CompactReport {
        had_delta: cur.has_delta(),
        appended_nodes: rows,
        delta_edges: edges,
        generation: None,
        node_count: u64::from(cur.live_node_count()),
        edge_count: u64::from(cur.live_edge_count()),
        bytes_written: 0,
        dry_run,
        audit: None,
    };
    if dry_run || !cur.has_delta() {
        return Ok(report);
    }
    let store = Store::create_or_open(&dir)?;
    let mut lock = store.lock_writer()?;
    let from = cur.generation();
    let files = cur.files().count() as u64;
    drop(cur);
    let run = RunRecord {
        uuid: uuid::Uuid::new_v4().to_string(),
        kind: crate::RunKind::Build,
        started_at_ms: started,
        ended_at_ms: now_ms(),
        status: crate::RunStatus::Completed,
        git_commit: None,
        git_branch: None,
        node_count: report.node_count,
        edge_count: report.edge_count,
        file_count: files,
        skipped_files: 0,
        duration_ms: 0,
        generation: 0,
        message: format!(
            "gc compact: folded the base and delta layers of generation {from} into a new base"
        ),
    };
    let info = lock.compact(run)?;
    report.generation = Some(info.generation);
    report.bytes_written = info.bytes_written;
    report.audit = Some(AuditLog::new(batho_dir).append(
        "gc.compact",
        &format!(
            "folded generation {from} (delta of {rows} appended nodes, {edges} edges) into a new base: generation {}, {} bytes written",
            info.generation, info.bytes_written
        ),
    )?);
    Ok(report)
}

/// Deletes the manifests of generations nothing retains, the segments no retained
/// manifest names, and leftovers of interrupted writes.
pub fn reclaim(batho_dir: &Path, dry_run: bool) -> Result<ReclaimReport> {
    let dir = existing(batho_dir)?;
    let store = (!dry_run)
        .then(|| Store::create_or_open(&dir))
        .transpose()?;
    // Held until the end: no commit can start naming a segment we are about to delete.
    let _lock = store.as_ref().map(Store::lock_writer).transpose()?;
    let cur = current(batho_dir)?;
    let plan = plan(batho_dir, &cur)?;
    let rel = |p: &Path| p.strip_prefix(batho_dir).unwrap_or(p).display().to_string();
    let mut report = ReclaimReport {
        manifests: plan.manifests.iter().map(|m| m.0).collect(),
        segments: plan.segments.iter().map(|s| s.0.clone()).collect(),
        leftovers: plan.leftovers.iter().map(|l| rel(&l.0)).collect(),
        bytes: plan.bytes(),
        remaining_generations: list_generations(batho_dir)?
            .into_iter()
            .filter(|g| plan.retained.contains(g))
            .collect(),
        dry_run,
        audit: None,
    };
    if dry_run || report.bytes == 0 && plan.manifests.is_empty() && plan.leftovers.is_empty() {
        return Ok(report);
    }
    // Manifests first: a generation whose manifest is gone is no longer openable, so no new
    // reader can start needing the segments deleted next.
    let mut files: Vec<PathBuf> = plan
        .manifests
        .iter()
        .map(|m| generation_manifest_path(batho_dir, m.0))
        .collect();
    files.extend(
        plan.segments
            .iter()
            .map(|s| batho_dir.join(names::SEGMENTS_DIR).join(&s.0)),
    );
    files.extend(plan.leftovers.iter().map(|l| l.0.clone()));
    for f in &files {
        match fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StorageError::io(f, e)),
        }
    }
    for d in [names::MANIFESTS_DIR, names::SEGMENTS_DIR] {
        crate::store::sync_dir(&batho_dir.join(d))?;
    }
    crate::store::sync_dir(batho_dir)?;
    let gens: Vec<String> = report.manifests.iter().map(u64::to_string).collect();
    report.audit = Some(AuditLog::new(batho_dir).append(
        "gc.reclaim",
        &format!(
            "deleted {} manifests (generations {}), {} segments, {} leftover files: {} bytes",
            report.manifests.len(),
            if gens.is_empty() {
                "none".into()
            } else {
                gens.join(", ")
            },
            report.segments.len(),
            report.leftovers.len(),
            report.bytes
        ),
    )?);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::{sample_graph, sample_run};

    fn store_with_builds(n: u64) -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::create_or_open(tmp.path()).unwrap();
        {
            let mut w = store.lock_writer().unwrap();
            for seed in 0..n {
                let g = sample_graph(seed + 1, 80, 300);
                let mut run = sample_run(&g);
                // Older builds ended longer ago.
                run.ended_at_ms = now_ms() - (n - seed) as i64 * 10 * 86_400_000;
                w.commit(&g, run).unwrap();
            }
        }
        (tmp, store)
    }

    #[test]
    fn status_counts_every_file_and_nothing_is_reclaimable_at_first() {
        let (_t, store) = store_with_builds(3);
        let s = status(store.dir()).unwrap();
        assert_eq!(s.current_generation, 3);
        assert_eq!(s.generations, [1, 2, 3]);
        assert_eq!(s.runs, 3);
        assert_eq!(s.segment_files, 12);
        assert_eq!(s.manifest_files, 4);
        assert_eq!(s.reclaimable_bytes, 0);
        assert!(s.live_bytes > 0 && s.live_bytes < s.segment_bytes);
        assert!(s.total_bytes >= s.segment_bytes + s.manifest_bytes);
    }

    #[test]
    fn prune_then_reclaim_frees_old_generations_only() {
        let (_t, store) = store_with_builds(3);
        let dir = store.dir();
        let old = store.runs().unwrap();
        let dry = prune(
            dir,
            &PruneOptions {
                older_than_days: Some(15),
                dry_run: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(dry.pruned.len(), 2);
        assert_eq!(dry.generation, None);
        assert_eq!(store.runs().unwrap(), old, "a dry run changes nothing");

        let r = prune(
            dir,
            &PruneOptions {
                older_than_days: Some(15),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(r.pruned.len(), 2);
        assert_eq!(r.remaining, 1);
        assert_eq!(r.generation, Some(4));
        assert!(r.audit.is_some());
        assert_eq!(store.runs().unwrap().len(), 1);

        let before = store.open_current().unwrap();
        let plan = reclaim(dir, true).unwrap();
        assert_eq!(plan.manifests, [1, 2]);
        assert_eq!(plan.segments.len(), 8);
        assert!(
            store.generation_manifest(1).is_ok(),
            "a dry run deletes nothing"
        );
        let done = reclaim(dir, false).unwrap();
        assert_eq!(done.manifests, [1, 2]);
        assert_eq!(done.remaining_generations, [3, 4]);
        assert!(store.generation_manifest(1).is_err());
        let after = store.open_current().unwrap();
        assert_eq!(after.node_count(), before.node_count());
        assert!(after.verify(true).is_empty());
        assert_eq!(status(dir).unwrap().reclaimable_bytes, 0);
        let check = AuditLog::new(dir).verify().unwrap();
        assert_eq!(check.entries, 2);
        assert!(check.problems.is_empty());
    }

    #[test]
    fn the_current_run_is_never_pruned() {
        let (_t, store) = store_with_builds(2);
        let runs = store.runs().unwrap();
        let err = prune(
            store.dir(),
            &PruneOptions {
                run: Some(runs[1].uuid.clone()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("always kept"), "{err}");
        let r = prune(
            store.dir(),
            &PruneOptions {
                older_than_days: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(r.pruned.len(), 1);
        assert_eq!(store.runs().unwrap()[0].uuid, runs[1].uuid);
        let one = prune(
            store.dir(),
            &PruneOptions {
                run: Some("no-such-run".into()),
                ..Default::default()
            },
        );
        assert!(one.is_err());
    }

    #[test]
    fn an_open_reader_survives_reclaim_of_its_generation() {
        let (_t, store) = store_with_builds(1);
        let reader = store.open_current().unwrap();
        let names: Vec<String> = reader.nodes().map(|n| n.id().into_owned()).collect();
        {
            let g = sample_graph(99, 50, 100);
            store
                .lock_writer()
                .unwrap()
                .commit(&g, sample_run(&g))
                .unwrap();
        }
        prune(
            store.dir(),
            &PruneOptions {
                older_than_days: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
        let done = reclaim(store.dir(), false).unwrap();
        assert_eq!(
            done.segments.len(),
            4,
            "the first build's segments are gone"
        );
        let again: Vec<String> = reader.nodes().map(|n| n.id().into_owned()).collect();
        assert_eq!(again, names);
        assert!(reader.verify(true).is_empty());
    }

    #[test]
    fn leftovers_are_reclaimed() {
        let (_t, store) = store_with_builds(1);
        let junk = store.dir().join("segments").join("abc.seg.tmp-1234");
        fs::write(&junk, b"partial").unwrap();
        let s = status(store.dir()).unwrap();
        assert_eq!((s.leftover_files, s.reclaimable_bytes), (1, 7));
        let r = reclaim(store.dir(), false).unwrap();
        assert_eq!(r.leftovers, ["segments/abc.seg.tmp-1234"]);
        assert!(!junk.exists());
    }

    #[test]
    fn no_artifact_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join(".batho");
        assert!(matches!(
            status(&missing),
            Err(StorageError::NoArtifact { .. })
        ));
        assert!(matches!(
            reclaim(&missing, false),
            Err(StorageError::NoArtifact { .. })
        ));
        assert!(!missing.exists(), "gc creates nothing");
    }
}
