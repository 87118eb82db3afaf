//! The checking half of `fix`: one pass over the phases, collecting findings and the
//! facts the repairs need. Nothing is written here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Finding, FixOptions, Severity};
use crate::audit::AuditLog;
use crate::error::StorageError;
use crate::format::{SEGMENT_HEADER_LEN, SegmentHeader, decode_dbid, names};
use crate::gc::{DAMAGED_MARKER, TEMP_MARKER, list_files};
use crate::manifest::{self, ManifestBody, SegmentRef};
use crate::reader::{Artifact, ContentCheck};
use crate::store::{generation_manifest_path, list_generations};
use crate::verify::Issue;

use super::deep::{Jobs, run_jobs};

/// A manifest file as found.
#[derive(Clone, Debug)]
pub(super) enum ManState {
    /// Decodes; its bytes are kept to restore the other copy.
    Ok {
        body: Box<ManifestBody>,
        bytes: Vec<u8>,
    },
    Missing,
    Damaged(String),
    /// Another format version: never touched.
    Foreign(String),
}

impl ManState {
    fn read(path: &Path) -> ManState {
        match fs::read(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ManState::Missing,
            Err(e) => ManState::Damaged(format!("unreadable: {e}")),
            Ok(bytes) => match manifest::decode(&bytes, path) {
                Ok(body) => ManState::Ok {
                    body: Box::new(body),
                    bytes,
                },
                Err(e @ StorageError::UnsupportedFormat { .. }) => ManState::Foreign(e.to_string()),
                Err(e) => ManState::Damaged(plain(&e)),
            },
        }
    }

    pub(super) fn body(&self) -> Option<&ManifestBody> {
        match self {
            ManState::Ok { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// The `DBID` file as found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DbidState {
    Ok([u8; 16]),
    Missing,
    Damaged(String),
}

/// A segment a manifest names that is missing or damaged.
#[derive(Clone, Debug)]
pub(super) struct DamagedSegment {
    pub(super) seg: SegmentRef,
    /// Generations (manifest copies, plus the current one) naming it.
    pub(super) generations: BTreeSet<u64>,
}

/// What a scan found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub(super) findings: Vec<Finding>,
    pub(super) dbid: Option<DbidState>,
    pub(super) manifest: Option<ManState>,
    pub(super) copies: BTreeMap<u64, ManState>,
    /// Phase 2: temporary leftovers of interrupted writes.
    pub(super) temp_files: Vec<PathBuf>,
    /// Phases 3/4: damaged segments by file name.
    pub(super) damaged: BTreeMap<String, DamagedSegment>,
    /// Phase 4: the current generation failed to open.
    pub(super) open_failed: bool,
    /// Phase 4 (deep): structural issues of the current generation.
    pub(super) structural: Vec<Issue>,
    pub(super) segments_checked: u64,
    pub(super) bytes_hashed: u64,
    /// Phase 1 repairs that apply: restore MANIFEST, rewrite the current copy, set aside
    /// damaged older copies.
    pub(super) phase1: bool,
}

/// An error as a finding's detail: the damage itself, without the "run `batho fix`"
/// advice the error carries for other callers.
fn plain(e: &StorageError) -> String {
    match e {
        StorageError::Corrupt { what, detail } => {
            let file = Path::new(what)
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or(what);
            format!("{detail} ({file})")
        }
        other => other.to_string(),
    }
}

/// Structures derived from the primary columns (rebuilt by `to_graph_builder` + commit).
pub(super) fn is_derived(what: &str) -> bool {
    what.starts_with("bitmaps")
        || matches!(
            what,
            "nodes.id_index"
                | "nodes.name_index"
                | "edges.in_csr"
                | "edges.in_offsets"
                | "edges.in_perm"
                | "edges.block_src"
                | "delta.id_index"
                | "delta.name_index"
                | "delta.in_csr"
                | "delta.block_src"
        )
}

impl Scan {
    /// The manifest that is (or, once `MANIFEST` is restored, will be) current.
    pub(super) fn current(&self) -> Option<&ManifestBody> {
        if let Some(b) = self.manifest.as_ref().and_then(ManState::body) {
            return Some(b);
        }
        self.copies.values().rev().find_map(ManState::body)
    }

    pub(super) fn current_generation(&self) -> Option<u64> {
        self.current().map(|m| m.generation)
    }

    pub(super) fn add(
        &mut self,
        phase: u8,
        severity: Severity,
        what: impl Into<String>,
        detail: impl Into<String>,
        repair: Option<String>,
    ) {
        self.findings.push(Finding {
            phase,
            severity,
            what: what.into(),
            detail: detail.into(),
            repair,
        });
    }
}

/// Runs the selected phases over `dir`.
pub(super) fn scan(dir: &Path, opts: &FixOptions, phases: &[u8]) -> Scan {
    let mut s = Scan::default();
    let first_phase = phases.first().copied().unwrap_or(1);
    if !dir.is_dir() {
        s.add(
            first_phase,
            Severity::Critical,
            dir.display().to_string(),
            "no artifact directory: run `batho build` first",
            None,
        );
        return s;
    }
    s.manifest = Some(ManState::read(&dir.join(names::MANIFEST)));
    for g in list_generations(dir).unwrap_or_default() {
        s.copies
            .insert(g, ManState::read(&generation_manifest_path(dir, g)));
    }
    let no_manifest = s.current().is_none();
    if phases.contains(&1) {
        bundle(dir, &mut s);
    } else if no_manifest {
        s.add(
            first_phase,
            Severity::Critical,
            names::MANIFEST,
            "no readable manifest (run phase 1 to see why)",
            None,
        );
    }
    if s.current().is_none() {
        return s;
    }
    if phases.contains(&2) {
        state(dir, &mut s);
    }
    let mut jobs = Jobs::default();
    if phases.contains(&3) {
        blobs(dir, opts, &mut s, &mut jobs);
    }
    let artifact = if phases.contains(&4) {
        graph_open(dir, opts, phases, &mut s, &mut jobs)
    } else {
        None
    };
    if !jobs.hashes.is_empty() || (opts.deep && artifact.is_some()) {
        run_jobs(dir, opts, &mut s, jobs, artifact.as_ref());
    }
    s.findings.sort_by_key(|f| f.phase);
    s
}

// ---------------------------------------------------------------------------------------
// Phase 1: bundle

fn bundle(dir: &Path, s: &mut Scan) {
    let id_path = dir.join(names::DBID);
    let manifest = s.manifest.clone().unwrap_or(ManState::Missing);
    let cur_uuid = s.current().map(|m| m.db_uuid);
    let dbid = match fs::read(&id_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => DbidState::Missing,
        Err(e) => DbidState::Damaged(format!("unreadable: {e}")),
        Ok(b) => match decode_dbid(&b, &id_path) {
            Ok(u) => DbidState::Ok(u),
            Err(e) => DbidState::Damaged(plain(&e)),
        },
    };
    let recreate =
        cur_uuid.map(|_| "recreate DBID from the manifest's database identity".to_owned());
    match &dbid {
        DbidState::Ok(u) if cur_uuid.is_some_and(|c| c != *u) => s.add(
            1,
            Severity::Error,
            names::DBID,
            "database identity differs from the manifest's",
            recreate,
        ),
        DbidState::Ok(_) => {}
        DbidState::Missing => s.add(1, Severity::Error, names::DBID, "missing", recreate),
        DbidState::Damaged(d) => s.add(1, Severity::Error, names::DBID, d.clone(), recreate),
    }
    s.dbid = Some(dbid);

    let newest_copy = s
        .copies
        .iter()
        .rev()
        .find(|(_, c)| matches!(c, ManState::Ok { .. }))
        .map(|(g, _)| *g);
    let restore = newest_copy.map(|g| {
        format!(
            "restore MANIFEST from the newest intact generation manifest (generation {g} or older)"
        )
    });
    match &manifest {
        ManState::Ok { .. } => {}
        ManState::Foreign(d) => s.add(1, Severity::Critical, names::MANIFEST, d.clone(), None),
        ManState::Missing | ManState::Damaged(_) => {
            let detail = match &manifest {
                ManState::Damaged(d) => d.clone(),
                _ => "missing".into(),
            };
            if newest_copy.is_some() {
                s.phase1 = true;
                s.add(1, Severity::Error, names::MANIFEST, detail, restore);
            } else {
                s.add(
                    1,
                    Severity::Critical,
                    names::MANIFEST,
                    format!("{detail}; no readable manifest at all: run `batho build --full`"),
                    None,
                );
            }
        }
    }
    let cur = manifest.body().map(|m| m.generation);
    if let (Some(g), ManState::Ok { bytes, .. }) = (cur, &manifest) {
        let what = format!("{}/{g:020}.{}", names::MANIFESTS_DIR, names::MANIFEST_EXT);
        let copy_problem = match s.copies.get(&g) {
            None | Some(ManState::Missing) => {
                Some("the current generation's manifest copy is missing".to_owned())
            }
            Some(ManState::Damaged(d)) => Some(d.clone()),
            Some(ManState::Foreign(d)) => Some(d.clone()),
            Some(ManState::Ok { bytes: b, .. }) if b != bytes => {
                Some("differs from MANIFEST".to_owned())
            }
            Some(ManState::Ok { .. }) => None,
        };
        if let Some(d) = copy_problem {
            s.phase1 = true;
            s.add(
                1,
                Severity::Error,
                what,
                d,
                Some("rewrite it from MANIFEST".into()),
            );
        }
    }
    let copies: Vec<(u64, ManState)> = s.copies.iter().map(|(g, c)| (*g, c.clone())).collect();
    for (g, c) in copies {
        if Some(g) == cur {
            continue;
        }
        let what = format!("{}/{g:020}.{}", names::MANIFESTS_DIR, names::MANIFEST_EXT);
        match c {
            ManState::Damaged(d) => {
                s.phase1 = true;
                s.add(
                    1,
                    Severity::Error,
                    what,
                    format!("{d}; generation {g} cannot be opened"),
                    Some(format!(
                        "set it aside as {}<ms> (generation {g} is lost)",
                        DAMAGED_MARKER
                    )),
                );
            }
            ManState::Foreign(d) => s.add(1, Severity::Critical, what, d, None),
            ManState::Ok { body, .. } => {
                if body.generation != g {
                    s.phase1 = true;
                    s.add(
                        1,
                        Severity::Error,
                        what,
                        "names another generation",
                        Some("set it aside".into()),
                    );
                } else if cur_uuid.is_some_and(|u| u != body.db_uuid) {
                    s.phase1 = true;
                    s.add(
                        1,
                        Severity::Error,
                        what,
                        "belongs to another database",
                        Some("set it aside".into()),
                    );
                } else if cur.is_some_and(|c| g > c) {
                    s.add(
                        1,
                        Severity::Info,
                        what,
                        "newer than MANIFEST: left by an interrupted commit; `batho gc reclaim` deletes it",
                        None,
                    );
                }
            }
            ManState::Missing => {}
        }
    }
}

// ---------------------------------------------------------------------------------------
// Phase 2: state

fn state(dir: &Path, s: &mut Scan) {
    if let Some(cur) = s.current().cloned() {
        let mut seen = BTreeSet::new();
        let mut last_gen = 0;
        for r in &cur.runs {
            if !seen.insert(r.uuid.clone()) {
                s.add(
                    2,
                    Severity::Error,
                    "runs",
                    format!("run {} appears twice", r.uuid),
                    None,
                );
            }
            if r.generation > cur.generation || r.generation < last_gen {
                s.add(
                    2,
                    Severity::Error,
                    "runs",
                    format!(
                        "run {} names generation {} (current {}, previous run {last_gen})",
                        r.uuid, r.generation, cur.generation
                    ),
                    None,
                );
            }
            last_gen = last_gen.max(r.generation);
            if r.ended_at_ms < r.started_at_ms {
                s.add(
                    2,
                    Severity::Warning,
                    "runs",
                    format!("run {} ends before it starts", r.uuid),
                    None,
                );
            }
            if r.generation != cur.generation
                && !matches!(s.copies.get(&r.generation), Some(ManState::Ok { .. }))
            {
                // The current generation may still hold its layers: then its manifest
                // is rebuilt from them.
                let rebuilt = super::repair::reconstructed_copy(r.generation, &cur).is_some();
                s.add(
                    2,
                    Severity::Warning,
                    "runs",
                    if rebuilt {
                        format!(
                            "generation {} of run {} has no manifest; the current generation still holds its layers",
                            r.generation, r.uuid
                        )
                    } else {
                        format!(
                            "generation {} of run {} is gone; the run can no longer be inspected (prune it with `batho gc prune --run {}`)",
                            r.generation, r.uuid, r.uuid
                        )
                    },
                    rebuilt.then(|| "rebuild its manifest from the current generation".into()),
                );
            }
        }
        for l in &cur.layers {
            if l.created_generation > cur.generation {
                s.add(
                    2,
                    Severity::Error,
                    "layers",
                    format!(
                        "a layer claims generation {} > {}",
                        l.created_generation, cur.generation
                    ),
                    None,
                );
            }
        }
    }
    let lock = dir.join(names::LOCK);
    if lock.is_dir() {
        s.add(
            2,
            Severity::Error,
            names::LOCK,
            "is a directory; no writer can lock it",
            None,
        );
    } else if let Ok(f) = OpenOptions::new().read(true).open(&lock) {
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => s.add(
                2,
                Severity::Warning,
                names::LOCK,
                "another batho process holds the writer lock (a build is running); results may change",
                None,
            ),
            Err(std::fs::TryLockError::Error(e)) => {
                s.add(2, Severity::Warning, names::LOCK, format!("cannot test the lock: {e}"), None)
            }
        }
    }
    for d in [
        dir.to_path_buf(),
        dir.join(names::SEGMENTS_DIR),
        dir.join(names::MANIFESTS_DIR),
    ] {
        for (name, len) in list_files(&d).unwrap_or_default() {
            let rel = d
                .join(&name)
                .strip_prefix(dir)
                .map(|p| p.display().to_string())
                .unwrap_or(name.clone());
            if name.contains(TEMP_MARKER) {
                s.temp_files.push(d.join(&name));
                s.add(
                    2,
                    Severity::Warning,
                    rel,
                    format!("leftover of an interrupted write ({len} bytes)"),
                    Some("delete it".into()),
                );
            } else if name.contains(DAMAGED_MARKER) {
                s.add(
                    2,
                    Severity::Info,
                    rel,
                    "damaged file set aside by an earlier fix; `batho gc reclaim` deletes it",
                    None,
                );
            }
        }
    }
    match AuditLog::new(dir).verify() {
        Ok(check) => {
            for p in check.problems {
                let what = if p.line == 0 {
                    "audit.log".to_owned()
                } else {
                    format!("audit.log:{}", p.line)
                };
                s.add(
                    2,
                    Severity::Error,
                    what,
                    format!(
                        "{} (the log is evidence: fix does not rewrite it)",
                        p.detail
                    ),
                    None,
                );
            }
        }
        Err(e) => s.add(2, Severity::Error, "audit.log", e.to_string(), None),
    }
}

// ---------------------------------------------------------------------------------------
// Phase 3: blobs

/// Segments named by any readable manifest, with the generations naming them.
fn referenced(s: &Scan) -> BTreeMap<String, (SegmentRef, BTreeSet<u64>)> {
    let mut out: BTreeMap<String, (SegmentRef, BTreeSet<u64>)> = BTreeMap::new();
    let cur = s.current().cloned();
    let bodies = cur
        .iter()
        .chain(s.copies.values().filter_map(ManState::body));
    for m in bodies {
        for l in &m.layers {
            for seg in &l.segments {
                out.entry(seg.file_name())
                    .or_insert_with(|| (seg.clone(), BTreeSet::new()))
                    .1
                    .insert(m.generation);
            }
        }
    }
    out
}

/// Quick check of one segment: exists, length, header. `None` when sound.
pub(super) fn check_segment(dir: &Path, seg: &SegmentRef, db_uuid: [u8; 16]) -> Option<String> {
    let path = dir.join(names::SEGMENTS_DIR).join(seg.file_name());
    let mut f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some("missing".into()),
        Err(e) => return Some(format!("unreadable: {e}")),
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len != seg.len {
        return Some(format!("is {len} bytes, the manifest says {}", seg.len));
    }
    let mut head = [0u8; SEGMENT_HEADER_LEN];
    if let Err(e) = f.read_exact(&mut head) {
        return Some(format!("header unreadable: {e}"));
    }
    match SegmentHeader::decode(&head, &path) {
        Err(e) => Some(format!("header: {}", plain(&e))),
        Ok(h) if h.kind != seg.kind => Some(format!(
            "header says kind {}, the manifest {}",
            h.kind, seg.kind
        )),
        Ok(h) if h.db_uuid != db_uuid => Some("belongs to another database".into()),
        Ok(h) if h.payload_len.checked_add(SEGMENT_HEADER_LEN as u64) != Some(len) => {
            Some("header payload length does not match the file length".into())
        }
        Ok(_) => None,
    }
}

fn segment_repair(generations: &BTreeSet<u64>, current: Option<u64>) -> String {
    if current.is_some_and(|c| generations.contains(&c)) {
        "restore it (recomputed header, or re-derived from the primary columns if that reproduces its blake3 name); otherwise make the newest intact generation current".into()
    } else {
        "restore it from its generation's primary columns if they reproduce it; otherwise set the generation aside".into()
    }
}

pub(super) fn record_damage(
    s: &mut Scan,
    phase: u8,
    name: &str,
    seg: &SegmentRef,
    gens: &BTreeSet<u64>,
    detail: String,
) {
    let cur = s.current_generation();
    let gen_list: Vec<String> = gens
        .iter()
        .map(|g| {
            if Some(*g) == cur {
                format!("{g} (current)")
            } else {
                g.to_string()
            }
        })
        .collect();
    let kind = crate::format::SegmentKind::from_code(seg.kind).map_or("unknown", |k| k.name());
    s.add(
        phase,
        Severity::Error,
        format!("{}/{name}", names::SEGMENTS_DIR),
        format!(
            "{kind} segment of generation {}: {detail}",
            gen_list.join(", ")
        ),
        Some(segment_repair(gens, cur)),
    );
    let e = s
        .damaged
        .entry(name.to_owned())
        .or_insert_with(|| DamagedSegment {
            seg: seg.clone(),
            generations: BTreeSet::new(),
        });
    e.generations.extend(gens.iter().copied());
}

fn blobs(dir: &Path, opts: &FixOptions, s: &mut Scan, jobs: &mut Jobs) {
    let Some(uuid) = s.current().map(|m| m.db_uuid) else {
        return;
    };
    let refs = referenced(s);
    for (name, (seg, gens)) in &refs {
        s.segments_checked += 1;
        if let Some(d) = check_segment(dir, seg, uuid) {
            record_damage(s, 3, name, seg, gens, d);
        } else if opts.deep {
            jobs.hashes
                .push((3, name.clone(), seg.clone(), gens.clone()));
        }
    }
    let mut orphans = (0u64, 0u64);
    for (name, len) in list_files(&dir.join(names::SEGMENTS_DIR)).unwrap_or_default() {
        if name.contains(TEMP_MARKER) || name.contains(DAMAGED_MARKER) {
            continue;
        }
        if !refs.contains_key(&name) {
            orphans.0 += 1;
            orphans.1 += len;
        }
    }
    if orphans.0 > 0 {
        s.add(
            3,
            Severity::Info,
            names::SEGMENTS_DIR,
            format!("{} segment files ({} bytes) are named by no manifest; `batho gc reclaim` deletes them", orphans.0, orphans.1),
            None,
        );
    }
}

// ---------------------------------------------------------------------------------------
// Phase 4: graph

fn graph_open(
    dir: &Path,
    opts: &FixOptions,
    phases: &[u8],
    s: &mut Scan,
    jobs: &mut Jobs,
) -> Option<Artifact> {
    let cur = s.current()?.clone();
    if cur.layers.is_empty() {
        s.add(
            4,
            Severity::Info,
            names::MANIFEST,
            "no graph committed yet (the first build failed or is running)",
            None,
        );
        return None;
    }
    let manifest_ok = s.manifest.as_ref().and_then(ManState::body).is_some();
    let opened = if manifest_ok {
        Artifact::open_current(dir, ContentCheck::Skip)
    } else {
        Artifact::open_kept_generation(dir, cur.generation, ContentCheck::Skip)
    };
    let segs: Vec<SegmentRef> = cur
        .layers
        .iter()
        .flat_map(|l| l.segments.iter().cloned())
        .collect();
    let gens: BTreeSet<u64> = [cur.generation].into();
    match opened {
        Ok(a) => {
            if opts.deep && !phases.contains(&3) {
                for seg in segs {
                    jobs.hashes.push((4, seg.file_name(), seg, gens.clone()));
                }
            }
            Some(a)
        }
        Err(e) => {
            s.open_failed = true;
            s.add(
                4,
                Severity::Error,
                format!("generation {}", cur.generation),
                format!("the current generation does not open: {}", plain(&e)),
                Some(
                    "restore its damaged segments, or make the newest intact generation current"
                        .into(),
                ),
            );
            if !phases.contains(&3) {
                for seg in segs {
                    if let Some(d) = check_segment(dir, &seg, cur.db_uuid) {
                        let name = seg.file_name();
                        record_damage(s, 4, &name, &seg, &gens, d);
                    }
                }
            }
            None
        }
    }
}
