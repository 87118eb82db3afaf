//! The repairing half of `fix`. Runs under the writer lock, in an order where each step
//! can rely on the previous ones: identity, leftovers, segments, `MANIFEST`, manifest
//! copies, the current generation (rebuild or fall back), then setting aside what is lost.
//! Every applied step is appended to the audit log.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::scan::{DamagedSegment, DbidState, ManState, Scan, check_segment, is_derived};
use super::{Finding, FixOptions, Repair, Severity};
use crate::Store;
use crate::audit::{AuditEntry, AuditLog};
use crate::error::{Result, StorageError};
use crate::format::{SEGMENT_HEADER_LEN, SegmentHeader, SegmentKind, encode_dbid, names};
use crate::manifest::{ManifestBody, RunKind, RunRecord, RunStatus};
use crate::reader::{Artifact, ContentCheck};
use crate::store::{
    WriterLock, generation_manifest_path, io_err, now_ms, read_manifest, sync_dir, write_temp,
};
use crate::writer::build_layer_segments;

/// What the repairs did and what they could not do.
pub(super) struct RepairOutcome {
    pub(super) repairs: Vec<Repair>,
    pub(super) audit: Vec<AuditEntry>,
    /// Problems found while repairing that a rescan would not show (e.g. the lock).
    pub(super) failures: Vec<Finding>,
    /// Set when the current generation was damaged beyond exact repair.
    pub(super) rolled_back: Option<super::RollBack>,
}

struct Ctx<'a> {
    dir: &'a Path,
    opts: &'a FixOptions,
    phases: Vec<u8>,
    log: AuditLog,
    out: RepairOutcome,
}

impl Ctx<'_> {
    fn done(&mut self, phase: u8, action: &str, detail: String) -> Result<()> {
        let entry = self.log.append(&format!("fix.{action}"), &detail)?;
        self.out.audit.push(entry);
        self.out.repairs.push(Repair {
            phase,
            action: action.to_owned(),
            detail,
        });
        Ok(())
    }

    fn fail(&mut self, phase: u8, severity: Severity, what: &str, detail: String) {
        self.out.failures.push(Finding {
            phase,
            severity,
            what: what.to_owned(),
            detail,
            repair: None,
        });
    }

    fn has(&self, phase: u8) -> bool {
        self.phases.contains(&phase)
    }
}

/// Replaces `path` atomically with `bytes` (temp file, fsync, rename, fsync dir).
fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = write_temp(dir, name, bytes)?;
    fs::rename(&tmp, path).map_err(io_err(path))?;
    sync_dir(dir)
}

/// The name a damaged file is set aside under.
fn aside_name(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!("{}{}", crate::gc::DAMAGED_MARKER, now_ms()));
    PathBuf::from(s)
}

/// Renames a damaged file out of the way (it stays on disk for inspection, and `gc
/// reclaim` counts it as a leftover).
pub fn set_aside(path: &Path) -> Result<PathBuf> {
    let to = aside_name(path);
    fs::rename(path, &to).map_err(io_err(path))?;
    if let Some(d) = path.parent() {
        sync_dir(d)?;
    }
    Ok(to)
}

fn rel(dir: &Path, p: &Path) -> String {
    p.strip_prefix(dir).unwrap_or(p).display().to_string()
}

fn fix_run(a: &Artifact, file_count: u64, started_ms: i64, message: String) -> RunRecord {
    let now = now_ms();
    RunRecord {
        uuid: uuid::Uuid::new_v4().to_string(),
        kind: RunKind::Build,
        started_at_ms: started_ms,
        ended_at_ms: now,
        status: RunStatus::Completed,
        git_commit: None,
        git_branch: None,
        node_count: u64::from(a.live_node_count()),
        edge_count: u64::from(a.live_edge_count()),
        file_count,
        skipped_files: 0,
        duration_ms: u64::try_from(now.saturating_sub(started_ms)).unwrap_or(0),
        generation: 0,
        message,
    }
}

/// Files indexed by the run that committed `m`'s base layer (for a fix run's record).
fn layer_file_count(m: &ManifestBody, runs: &[RunRecord]) -> u64 {
    let created = m.layers.first().map(|l| l.created_generation);
    runs.iter()
        .rev()
        .find(|r| Some(r.generation) == created)
        .map_or(0, |r| r.file_count)
}

pub(super) fn repair(dir: &Path, opts: &FixOptions, scan: &Scan) -> Result<RepairOutcome> {
    let mut cx = Ctx {
        dir,
        opts,
        phases: opts.phases(),
        log: AuditLog::new(dir),
        out: RepairOutcome {
            rolled_back: None,
            repairs: Vec::new(),
            audit: Vec::new(),
            failures: Vec::new(),
        },
    };
    let Some(uuid) = scan.current().map(|m| m.db_uuid) else {
        return Ok(cx.out);
    };
    // The identity comes first: the store cannot be opened (nor locked) without it.
    let mut dbid_note = None;
    if cx.has(1)
        && scan
            .dbid
            .as_ref()
            .is_some_and(|d| *d != DbidState::Ok(uuid))
    {
        replace_file(&dir.join(names::DBID), &encode_dbid(uuid))?;
        dbid_note = Some(format!(
            "recreated DBID with the manifest's identity {}",
            uuid::Uuid::from_bytes(uuid)
        ));
    }
    let store = match Store::create_or_open(dir) {
        Ok(s) => s,
        Err(e @ (StorageError::Corrupt { .. } | StorageError::UnsupportedFormat { .. })) => {
            cx.fail(
                1,
                Severity::Error,
                names::DBID,
                format!("cannot repair without a readable DBID (run phase 1 to restore it): {e}"),
            );
            return Ok(cx.out);
        }
        Err(e) => return Err(e),
    };
    let mut lock = match store.lock_writer() {
        Ok(l) => l,
        Err(StorageError::Locked { .. }) => {
            cx.fail(
                2,
                Severity::Error,
                names::LOCK,
                "cannot repair: another batho process holds the writer lock; retry when it is done"
                    .into(),
            );
            return Ok(cx.out);
        }
        Err(e) => return Err(e),
    };
    if let Some(note) = dbid_note {
        cx.done(1, "recreate_dbid", note)?;
    }
    if cx.has(2) {
        for t in &scan.temp_files {
            match fs::remove_file(t) {
                Ok(()) => cx.done(2, "delete_temp", format!("deleted {}", rel(dir, t)))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io(t, e)),
            }
        }
    }
    let segment_phase = if cx.has(3) { 3 } else { 4 };
    let unrestored = if cx.has(3) || cx.has(4) {
        restore_segments(&mut cx, &scan.damaged, uuid, segment_phase)?
    } else {
        BTreeMap::new()
    };
    if cx.has(1) && (scan.phase1 || a_run_lacks_its_copy(scan)) {
        restore_manifests(&mut cx, scan, &unrestored)?;
    }
    let mut lost_current = false;
    if cx.has(3) || cx.has(4) {
        lost_current = repair_current(&mut cx, &mut lock, scan, &unrestored)?;
    }
    if !unrestored.is_empty() && !lost_current {
        set_aside_lost(&mut cx, &unrestored, segment_phase)?;
    }
    drop(lock);
    Ok(cx.out)
}

/// The encoded segments of a re-derived layer.
type Segments = Vec<(SegmentKind, Vec<u8>)>;

/// Restores damaged segments whose exact bytes can be recomputed. Returns the others.
fn restore_segments(
    cx: &mut Ctx<'_>,
    damaged: &BTreeMap<String, DamagedSegment>,
    uuid: [u8; 16],
    phase: u8,
) -> Result<BTreeMap<String, DamagedSegment>> {
    let mut left = BTreeMap::new();
    // Re-derived layers per generation: several segments of one generation share one rebuild.
    let mut rebuilt: BTreeMap<u64, Option<Segments>> = BTreeMap::new();
    for (name, d) in damaged {
        let path = cx.dir.join(names::SEGMENTS_DIR).join(name);
        if let Some(how) = restore_header(&path, d, uuid)? {
            cx.done(
                phase,
                "restore_segment",
                format!("restored {}: {how}", rel(cx.dir, &path)),
            )?;
            continue;
        }
        let mut restored = false;
        for g in d.generations.iter().rev() {
            let layer = rebuilt.entry(*g).or_insert_with(|| {
                let a = Artifact::open_kept_generation(cx.dir, *g, ContentCheck::Skip).ok()?;
                // The base layer alone re-derives the base segments; a delta layer is
                // re-derived from its own rows, edges and tombstones over that base.
                let base = a.base_only().ok()?;
                let mut segs = build_layer_segments(&base.to_graph_builder(), uuid).ok()?;
                if let Some(d) = crate::delta_write::rederive(&a) {
                    segs.extend(crate::delta_write::build_delta(&a, &d, uuid).ok()?.segments);
                }
                Some(segs)
            });
            let Some(segs) = layer else { continue };
            let hit = segs
                .iter()
                .find(|(_, bytes)| blake3::hash(bytes).as_bytes() == &d.seg.hash);
            if let Some((kind, bytes)) = hit {
                if path.exists() {
                    // Keep the damaged bytes for inspection; the rename below replaces the name.
                    let _ = fs::hard_link(&path, aside_name(&path));
                }
                replace_file(&path, bytes)?;
                cx.done(
                    phase,
                    "restore_segment",
                    format!(
                        "restored {} ({}) by re-deriving generation {g} from its primary columns",
                        rel(cx.dir, &path),
                        kind.name()
                    ),
                )?;
                restored = true;
                break;
            }
        }
        if !restored {
            left.insert(name.clone(), d.clone());
        }
    }
    Ok(left)
}

/// A segment whose only damage is its header: recompute the header and check the whole
/// file against its name. Returns a description when it was restored.
fn restore_header(path: &Path, d: &DamagedSegment, uuid: [u8; 16]) -> Result<Option<String>> {
    let Ok(mut f) = File::open(path) else {
        return Ok(None);
    };
    let len = f.metadata().map_err(io_err(path))?.len();
    if len != d.seg.len || len < SEGMENT_HEADER_LEN as u64 {
        return Ok(None);
    }
    let header = SegmentHeader {
        kind: d.seg.kind,
        payload_len: len - SEGMENT_HEADER_LEN as u64,
        db_uuid: uuid,
    }
    .encode();
    let mut h = blake3::Hasher::new();
    h.update(&header);
    f.seek(SeekFrom::Start(SEGMENT_HEADER_LEN as u64))
        .map_err(io_err(path))?;
    h.update_reader(&mut f).map_err(io_err(path))?;
    if h.finalize().as_bytes() != &d.seg.hash {
        return Ok(None);
    }
    let mut old = [0u8; SEGMENT_HEADER_LEN];
    f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
    f.read_exact(&mut old).map_err(io_err(path))?;
    if old == header {
        return Ok(None);
    }
    // Stream header + payload into a temporary file, then rename over the damaged one.
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("segment");
    let tmp = write_temp(dir, name, &header)?;
    {
        let mut out = fs::OpenOptions::new()
            .append(true)
            .open(&tmp)
            .map_err(io_err(&tmp))?;
        f.seek(SeekFrom::Start(SEGMENT_HEADER_LEN as u64))
            .map_err(io_err(path))?;
        std::io::copy(&mut f, &mut out).map_err(io_err(&tmp))?;
        out.flush()
            .and_then(|()| out.sync_all())
            .map_err(io_err(&tmp))?;
    }
    let _ = fs::hard_link(path, aside_name(path));
    fs::rename(&tmp, path).map_err(io_err(path))?;
    sync_dir(dir)?;
    Ok(Some(
        "recomputed its damaged header (the payload matches its blake3 name)".into(),
    ))
}

/// Whether generation `g` is intact: its segments are sound, it opens, and it verifies.
fn intact(
    dir: &Path,
    m: &ManifestBody,
    unrestored: &BTreeMap<String, DamagedSegment>,
) -> Option<Artifact> {
    let segs: Vec<_> = m.layers.iter().flat_map(|l| l.segments.iter()).collect();
    if segs.iter().any(|s| unrestored.contains_key(&s.file_name()))
        || segs
            .iter()
            .any(|s| check_segment(dir, s, m.db_uuid).is_some())
    {
        return None;
    }
    let a = Artifact::open_kept_generation(dir, m.generation, ContentCheck::Skip).ok()?;
    // A fallback target is checked in full whatever the mode: it is about to become current.
    a.verify(true).is_empty().then_some(a)
}

fn restore_manifests(
    cx: &mut Ctx<'_>,
    scan: &Scan,
    unrestored: &BTreeMap<String, DamagedSegment>,
) -> Result<()> {
    let dir = cx.dir;
    let mpath = dir.join(names::MANIFEST);
    if scan.manifest.as_ref().and_then(ManState::body).is_none()
        && !matches!(scan.manifest, Some(ManState::Foreign(_)))
    {
        let newest = scan
            .copies
            .iter()
            .rev()
            .find_map(|(g, c)| c.body().map(|_| *g));
        let mut chosen = None;
        for (g, c) in scan.copies.iter().rev() {
            if let ManState::Ok { body, bytes } = c
                && (body.layers.is_empty() || intact(dir, body, unrestored).is_some())
            {
                chosen = Some((*g, bytes.clone()));
                break;
            }
        }
        match chosen {
            Some((g, bytes)) => {
                replace_file(&mpath, &bytes)?;
                let note = match newest {
                    Some(n) if n > g => format!(
                        "; newer generations up to {n} are damaged, so generation {g} is current again"
                    ),
                    _ => String::new(),
                };
                cx.done(
                    1,
                    "restore_manifest",
                    format!("restored MANIFEST from manifests/{g:020}.manifest{note}"),
                )?;
            }
            None => cx.fail(
                1,
                Severity::Critical,
                names::MANIFEST,
                "no intact generation manifest to restore MANIFEST from; run `batho build --full`"
                    .into(),
            ),
        }
    }
    // The copy of the current generation must equal MANIFEST.
    if let Ok(bytes) = fs::read(&mpath)
        && let Ok(Some(cur)) = read_manifest(&mpath)
    {
        let copy = generation_manifest_path(dir, cur.generation);
        if fs::read(&copy).ok().as_deref() != Some(bytes.as_slice()) {
            replace_file(&copy, &bytes)?;
            cx.done(
                1,
                "restore_manifest_copy",
                format!("rewrote {} from MANIFEST", rel(dir, &copy)),
            )?;
        }
        // A copy deleted outright is rebuilt too, when the current manifest holds its
        // generation's layers (a run still names the generation).
        for run in &cur.runs {
            let g = run.generation;
            if g != cur.generation
                && copy_is_missing(scan, g)
                && !generation_manifest_path(dir, g).exists()
            {
                rebuild_copy(cx, g, &cur, "the missing ")?;
            }
        }
        for (g, c) in &scan.copies {
            let bad = match c {
                ManState::Damaged(_) => true,
                ManState::Ok { body, .. } => body.generation != *g || body.db_uuid != cur.db_uuid,
                _ => false,
            };
            if bad && *g != cur.generation {
                let p = generation_manifest_path(dir, *g);
                if !rebuild_copy(cx, *g, &cur, "")? && p.exists() {
                    let to = set_aside(&p)?;
                    cx.done(
                        1,
                        "set_aside",
                        format!(
                            "generation {g} is lost: its damaged manifest was moved to {}",
                            rel(dir, &to)
                        ),
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Writes the manifest copy of generation `g` rebuilt from the current manifest `cur`
/// (see [`reconstructed_copy`]) and reports it; `false` when it cannot be rebuilt.
/// `what` prefixes the copy's name in the report (`the missing `).
fn rebuild_copy(cx: &mut Ctx<'_>, g: u64, cur: &ManifestBody, what: &str) -> Result<bool> {
    let Some(body) = reconstructed_copy(g, cur) else {
        return Ok(false);
    };
    let p = generation_manifest_path(cx.dir, g);
    replace_file(&p, &crate::manifest::encode(&body)?)?;
    cx.done(
        1,
        "restore_manifest_copy",
        format!(
            "rebuilt {what}{} from generation {}, which still holds its layers",
            rel(cx.dir, &p),
            cur.generation
        ),
    )?;
    Ok(true)
}

/// Whether generation `g` has no manifest copy on disk.
fn copy_is_missing(scan: &Scan, g: u64) -> bool {
    matches!(scan.copies.get(&g), None | Some(ManState::Missing))
}

/// Whether a run of the current history names a generation whose copy is gone.
fn a_run_lacks_its_copy(scan: &Scan) -> bool {
    scan.current().is_some_and(|cur| {
        cur.runs
            .iter()
            .any(|run| run.generation != cur.generation && copy_is_missing(scan, run.generation))
    })
}

/// The manifest of generation `g`, rebuilt from the current one `cur` when `cur` still
/// holds g's layers: a run made g, and a layer of `cur` was created by g. A layer stack
/// only grows at its top or is replaced whole (a new base, a compaction, a rollback to
/// an older stack), so the layers of `cur` up to that one are exactly g's, and the runs
/// up to g are g's history (less any pruned since). `None` otherwise: g is lost.
pub(super) fn reconstructed_copy(g: u64, cur: &ManifestBody) -> Option<ManifestBody> {
    let run = cur.runs.iter().find(|run| run.generation == g)?;
    let top = cur
        .layers
        .iter()
        .position(|layer| layer.created_generation == g)?;
    Some(ManifestBody {
        generation: g,
        db_uuid: cur.db_uuid,
        created_at_ms: run.ended_at_ms,
        layers: cur.layers[..=top].to_vec(),
        runs: cur
            .runs
            .iter()
            .filter(|run| run.generation <= g)
            .cloned()
            .collect(),
    })
}

/// Brings the current generation back to a sound state. Returns `true` when it is
/// damaged and nothing could replace it.
fn repair_current(
    cx: &mut Ctx<'_>,
    lock: &mut WriterLock<'_>,
    scan: &Scan,
    unrestored: &BTreeMap<String, DamagedSegment>,
) -> Result<bool> {
    let dir = cx.dir;
    let Ok(Some(cur)) = read_manifest(&dir.join(names::MANIFEST)) else {
        return Ok(false);
    };
    if cur.layers.is_empty() {
        return Ok(false);
    }
    let started = now_ms();
    let damaged_kinds: BTreeSet<u8> = cur
        .layers
        .iter()
        .flat_map(|l| l.segments.iter())
        .filter(|s| unrestored.contains_key(&s.file_name()))
        .map(|s| s.kind)
        .collect();
    if !damaged_kinds.is_empty() {
        // The bitmaps segment holds derived data only. When it alone is damaged and its
        // exact bytes cannot be reproduced (e.g. another writer version wrote it), the
        // other segments were re-hashed intact (deep) and verified free of primary
        // damage, so rebuilding from them is sound.
        let only_bitmaps = damaged_kinds == BTreeSet::from([SegmentKind::Bitmaps as u8]);
        if only_bitmaps
            && cx.opts.deep
            && cx.has(4)
            && scan.structural.iter().all(|i| is_derived(&i.what))
            && let Ok(a) = Artifact::open_current(dir, ContentCheck::Skip)
        {
            rebuild_derived(cx, lock, a, &cur, started, "the bitmaps segment".into())?;
            return Ok(false);
        }
        return fallback(cx, lock, &cur, unrestored, started);
    }
    let Ok(a) = Artifact::open_current(dir, ContentCheck::Skip) else {
        return fallback(cx, lock, &cur, unrestored, started);
    };
    if scan.structural.is_empty() || !cx.has(4) {
        return Ok(false);
    }
    // Segments may have been restored since the scan: look again.
    let issues = if cx.out.repairs.iter().any(|r| r.action == "restore_segment") {
        a.verify(cx.opts.deep)
    } else {
        scan.structural.clone()
    };
    if issues.is_empty() {
        return Ok(false);
    }
    let hashes_ok = a.verify_part(crate::verify::VerifyPart::Hashes).is_empty();
    if hashes_ok && issues.iter().all(|i| is_derived(&i.what)) {
        let what: BTreeSet<&str> = issues.iter().map(|i| i.what.as_str()).collect();
        let what = what.into_iter().collect::<Vec<_>>().join(", ");
        rebuild_derived(cx, lock, a, &cur, started, what)?;
        return Ok(false);
    }
    drop(a);
    fallback(cx, lock, &cur, unrestored, started)
}

/// Commits the current generation re-derived from its primary columns as a new one.
fn rebuild_derived(
    cx: &mut Ctx<'_>,
    lock: &mut WriterLock<'_>,
    a: Artifact,
    cur: &ManifestBody,
    started: i64,
    what: String,
) -> Result<()> {
    let g = a.generation();
    let files = layer_file_count(cur, &cur.runs);
    let builder = a.to_graph_builder();
    let run = fix_run(
        &a,
        files,
        started,
        format!("fix: rebuilt the derived structures of generation {g} from its primary columns"),
    );
    drop(a);
    let info = lock.commit(&builder, run)?;
    cx.done(
        4,
        "rebuild_derived",
        format!(
            "rebuilt {what} of generation {g} from the primary columns as generation {} ({} segments written)",
            info.generation, info.segments_written
        ),
    )
}

/// Makes the newest intact older generation current again, as a new generation.
fn fallback(
    cx: &mut Ctx<'_>,
    lock: &mut WriterLock<'_>,
    cur: &ManifestBody,
    unrestored: &BTreeMap<String, DamagedSegment>,
    started: i64,
) -> Result<bool> {
    let dir = cx.dir;
    let phase = if cx.has(4) { 4 } else { 3 };
    let mut gens = crate::store::list_generations(dir)?;
    gens.reverse();
    for g in gens.into_iter().filter(|g| *g != cur.generation) {
        let Ok(Some(m)) = read_manifest(&generation_manifest_path(dir, g)) else {
            continue;
        };
        if m.layers.is_empty() || m.db_uuid != cur.db_uuid {
            continue;
        }
        let Some(a) = intact(dir, &m, unrestored) else {
            continue;
        };
        let run = fix_run(
            &a,
            layer_file_count(&m, &cur.runs),
            started,
            format!(
                "fix: generation {} was damaged beyond repair; the graph of generation {g} is current again",
                cur.generation
            ),
        );
        drop(a);
        let new = lock.publish_manifest(m.layers.clone(), cur.runs.clone(), Some(run))?;
        cx.out.rolled_back = Some(rollback(cur, Some(g)));
        cx.done(
            phase,
            "fallback",
            format!(
                "the primary data of generation {} is damaged; made the newest intact generation ({g}) current again as generation {new}",
                cur.generation
            ),
        )?;
        return Ok(false);
    }
    cx.fail(
        phase,
        Severity::Error,
        &format!("generation {}", cur.generation),
        "the current generation is damaged and no intact older generation exists; run `batho build --full`".into(),
    );
    cx.out.rolled_back = Some(rollback(cur, None));
    Ok(true)
}

/// The rollback of the damaged current generation `cur` to `restored`: the runs it loses.
fn rollback(cur: &ManifestBody, restored: Option<u64>) -> super::RollBack {
    let after = restored.unwrap_or(0);
    let mut lost_runs: Vec<super::LostRun> = cur
        .runs
        .iter()
        .filter(|run| run.status == RunStatus::Completed)
        .filter(|run| run.generation > after && run.generation <= cur.generation)
        .map(super::LostRun::of)
        .collect();
    lost_runs.sort_by_key(|run| std::cmp::Reverse(run.generation));
    super::RollBack {
        damaged: cur.generation,
        restored,
        lost_runs,
    }
}

/// Sets aside manifests naming segments that could not be restored, then those segments
/// (so a later commit of the same content writes a fresh file instead of reusing them).
fn set_aside_lost(
    cx: &mut Ctx<'_>,
    unrestored: &BTreeMap<String, DamagedSegment>,
    phase: u8,
) -> Result<()> {
    let dir = cx.dir;
    let current = read_manifest(&dir.join(names::MANIFEST)).ok().flatten();
    let cur_gen = current.as_ref().map(|m| m.generation);
    for g in crate::store::list_generations(dir)? {
        if Some(g) == cur_gen {
            continue;
        }
        let p = generation_manifest_path(dir, g);
        let Ok(Some(m)) = read_manifest(&p) else {
            continue;
        };
        let bad: Vec<String> = m
            .layers
            .iter()
            .flat_map(|l| l.segments.iter().map(|s| s.file_name()))
            .filter(|n| unrestored.contains_key(n))
            .collect();
        if !bad.is_empty() {
            let to = set_aside(&p)?;
            cx.done(
                phase,
                "set_aside",
                format!(
                    "generation {g} is lost (damaged segment {}): its manifest was moved to {}",
                    bad.join(", "),
                    rel(dir, &to)
                ),
            )?;
        }
    }
    let still_named: BTreeSet<String> = current
        .iter()
        .flat_map(|m| {
            m.layers
                .iter()
                .flat_map(|l| l.segments.iter().map(|s| s.file_name()))
        })
        .collect();
    for name in unrestored.keys() {
        let p = dir.join(names::SEGMENTS_DIR).join(name);
        if !still_named.contains(name) && p.exists() {
            let to = set_aside(&p)?;
            cx.done(
                phase,
                "set_aside",
                format!(
                    "moved the damaged segment {} to {}",
                    rel(dir, &p),
                    rel(dir, &to)
                ),
            )?;
        }
    }
    Ok(())
}
