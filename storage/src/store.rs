//! The `.batho/` directory: identity, writer lock, generations and the commit protocol.
//!
//! Commit protocol (see `docs/format.md`): segments are written to temporary names,
//! fsynced and renamed to their blake3 names, then the segments directory is fsynced; the
//! new manifest is written the same way to `manifests/<generation>.manifest` and finally
//! to `MANIFEST`, each followed by an fsync of its directory. A crash at any point leaves
//! the previous `MANIFEST` (and everything it names) intact.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Result, StorageError};
use crate::format::{SegmentKind, decode_dbid, encode_dbid, names};
use crate::input::{GraphBuilder, NodeScores};
use crate::manifest::{self, LAYER_BASE, LAYER_DELTA, Layer, ManifestBody, RunRecord, SegmentRef};
use crate::reader::Artifact;
use crate::writer::{BuiltLayer, LayerCounts, build_layer};

/// A handle on one `.batho/` directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    db_uuid: [u8; 16],
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitInfo {
    /// The generation the commit created.
    pub generation: u64,
    /// Bytes written: new segment files plus both manifest copies.
    pub bytes_written: u64,
    /// Segment files written by this commit.
    pub segments_written: u32,
    /// Segment files already present with the same content (content addressing) and reused.
    pub segments_reused: u32,
    /// Nodes in the committed graph.
    pub node_count: u64,
    /// Edges in the committed graph.
    pub edge_count: u64,
}

/// Exclusive right to write to a store; released on drop.
#[derive(Debug)]
pub struct WriterLock<'a> {
    store: &'a Store,
    /// A fragment commit writes a fresh base instead of a delta once the cumulative delta
    /// exceeds this percentage of the base's nodes or edges.
    pub(crate) delta_limit_percent: u32,
    // Holding the locked file keeps the OS lock; dropping it unlocks.
    _file: File,
}

/// Default of [`WriterLock::set_delta_limit`].
pub const DEFAULT_DELTA_LIMIT_PERCENT: u32 = 20;

/// The steps of a commit, in order; tests stop a commit after any of them to simulate a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommitStep {
    SegmentTempWritten,
    SegmentRenamed,
    SegmentsDirSynced,
    GenerationManifestTemp,
    GenerationManifestRenamed,
    ManifestTemp,
    ManifestRenamed,
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |e| StorageError::io(path, e)
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Opens (creating it if need be) and locks the file at `path`, failing with
/// [`StorageError::Locked`] when another process holds it; the lock lasts as long as the
/// returned file. Every store kind takes its one writer's lock here.
pub(crate) fn lock_file(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_err(path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StorageError::Locked {
            path: path.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(StorageError::io(path, e)),
    }
}

/// Makes the creations and renames in `dir` durable. Only Unix lets a directory be opened
/// and fsynced; elsewhere the rename itself is what the platform offers.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    if cfg!(unix) {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(io_err(dir))
    } else {
        Ok(())
    }
}

fn tmp_name(name: &str) -> String {
    format!("{name}.tmp-{}", uuid::Uuid::new_v4().simple())
}

/// Writes `bytes` to a temporary file in `dir`, fsyncs it and returns its path.
/// Whether `path` holds the segment `segment` names: its length and its blake3 hash (its
/// file name) match. A commit and a load reuse such a file instead of writing the bytes
/// again; a file of the right length with other bytes (a flipped byte) is replaced, never
/// reused, so that a rebuild or a load repairs it rather than publishing it again. Only a
/// commit of content already on disk pays for the read.
pub(crate) fn holds_segment(path: &Path, segment: &SegmentRef) -> bool {
    if !fs::metadata(path).is_ok_and(|m| m.len() == segment.len) {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_reader(file)
        .is_ok_and(|hasher| hasher.finalize().as_bytes() == &segment.hash)
}

pub(crate) fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = dir.join(tmp_name(name));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io_err(&tmp))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(io_err(&tmp))?;
    Ok(tmp)
}

/// Path of the manifest of `generation` inside `dir`.
pub(crate) fn generation_manifest_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(names::MANIFESTS_DIR)
        .join(format!("{generation:020}.{}", names::MANIFEST_EXT))
}

/// Reads and decodes a manifest file, or `None` when it does not exist.
pub(crate) fn read_manifest(path: &Path) -> Result<Option<ManifestBody>> {
    match fs::read(path) {
        Ok(b) => manifest::decode(&b, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

/// Generations having a manifest file in `dir/manifests`, ascending.
pub(crate) fn list_generations(dir: &Path) -> Result<Vec<u64>> {
    let mdir = dir.join(names::MANIFESTS_DIR);
    let rd = match fs::read_dir(&mdir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StorageError::io(&mdir, e)),
    };
    let mut out = Vec::new();
    for ent in rd {
        let ent = ent.map_err(io_err(&mdir))?;
        let name = ent.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(stem) = name.strip_suffix(&format!(".{}", names::MANIFEST_EXT))
            && let Ok(g) = stem.parse::<u64>()
        {
            out.push(g);
        }
    }
    out.sort_unstable();
    Ok(out)
}

impl Store {
    /// Opens the store in `batho_dir`, creating the directory tree and the database
    /// identity (`DBID`) if they are missing.
    pub fn create_or_open(batho_dir: &Path) -> Result<Store> {
        for d in [
            batho_dir.to_path_buf(),
            batho_dir.join(names::SEGMENTS_DIR),
            batho_dir.join(names::MANIFESTS_DIR),
        ] {
            fs::create_dir_all(&d).map_err(io_err(&d))?;
        }
        let id_path = batho_dir.join(names::DBID);
        if !id_path.exists() {
            // Reuse the identity of an existing manifest if DBID alone was lost.
            let from_manifest = read_manifest(&batho_dir.join(names::MANIFEST))
                .ok()
                .flatten()
                .map(|m| m.db_uuid);
            let uuid = from_manifest.unwrap_or_else(|| *uuid::Uuid::new_v4().as_bytes());
            let tmp = write_temp(batho_dir, names::DBID, &encode_dbid(uuid))?;
            // hard_link fails if DBID already exists, so two racing creators agree on one id.
            match fs::hard_link(&tmp, &id_path) {
                Ok(()) => {
                    let _ = fs::remove_file(&tmp);
                    sync_dir(batho_dir)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let _ = fs::remove_file(&tmp);
                }
                // A filesystem without hard links: fall back to a plain rename, which
                // loses only the tie-break between two processes creating the store at once.
                Err(_) => {
                    fs::rename(&tmp, &id_path).map_err(io_err(&id_path))?;
                    sync_dir(batho_dir)?;
                }
            }
        }
        let bytes = fs::read(&id_path).map_err(io_err(&id_path))?;
        let db_uuid = decode_dbid(&bytes, &id_path)?;
        Ok(Store {
            dir: batho_dir.to_path_buf(),
            db_uuid,
        })
    }

    /// Opens the store in `batho_dir` without creating or writing anything, for readers
    /// (`status`, `runs`): the identity comes from `DBID`, or from the current manifest
    /// when `DBID` alone was lost. [`StorageError::NoArtifact`] when there is neither.
    pub fn open_existing(batho_dir: &Path) -> Result<Store> {
        let no_artifact = || StorageError::NoArtifact {
            path: batho_dir.to_path_buf(),
        };
        if !batho_dir.is_dir() {
            return Err(no_artifact());
        }
        let id_path = batho_dir.join(names::DBID);
        let db_uuid = match fs::read(&id_path) {
            Ok(bytes) => decode_dbid(&bytes, &id_path)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                read_manifest(&batho_dir.join(names::MANIFEST))?
                    .map(|m| m.db_uuid)
                    .ok_or_else(no_artifact)?
            }
            Err(e) => return Err(io_err(&id_path)(e)),
        };
        Ok(Store {
            dir: batho_dir.to_path_buf(),
            db_uuid,
        })
    }

    /// The `.batho/` directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database identity.
    pub fn db_uuid(&self) -> [u8; 16] {
        self.db_uuid
    }

    /// Takes the writer lock, failing with [`StorageError::Locked`] if another writer holds it.
    pub fn lock_writer(&self) -> Result<WriterLock<'_>> {
        Ok(WriterLock {
            store: self,
            delta_limit_percent: DEFAULT_DELTA_LIMIT_PERCENT,
            _file: lock_file(&self.dir.join(names::LOCK))?,
        })
    }

    /// Opens the current generation.
    pub fn open_current(&self) -> Result<Artifact> {
        Artifact::open(&self.dir)
    }

    /// Opens an older (or the current) generation, as long as its manifest and segments exist.
    pub fn open_generation(&self, generation: u64) -> Result<Artifact> {
        Artifact::open_generation(&self.dir, generation)
    }

    /// Generations with a manifest on disk, ascending.
    pub fn generations(&self) -> Result<Vec<u64>> {
        list_generations(&self.dir)
    }

    /// The run history of the current manifest, oldest first (empty before the first run).
    pub fn runs(&self) -> Result<Vec<RunRecord>> {
        Ok(self.current_manifest()?.map(|m| m.runs).unwrap_or_default())
    }

    /// The current manifest, if any.
    pub fn current_manifest(&self) -> Result<Option<ManifestBody>> {
        read_manifest(&self.dir.join(names::MANIFEST))
    }

    /// The manifest of `generation` (for `gc`, `fix` and history views).
    pub fn generation_manifest(&self, generation: u64) -> Result<ManifestBody> {
        read_manifest(&generation_manifest_path(&self.dir, generation))?.ok_or(
            StorageError::NoSuchGeneration {
                path: self.dir.clone(),
                generation,
            },
        )
    }

    /// Total bytes of every file under the `.batho/` directory.
    pub fn size_on_disk(&self) -> Result<u64> {
        fn walk(p: &Path) -> Result<u64> {
            let mut total = 0;
            for ent in fs::read_dir(p).map_err(io_err(p))? {
                let ent = ent.map_err(io_err(p))?;
                let md = ent.metadata().map_err(io_err(&ent.path()))?;
                total += if md.is_dir() {
                    walk(&ent.path())?
                } else {
                    md.len()
                };
            }
            Ok(total)
        }
        walk(&self.dir)
    }
}

impl WriterLock<'_> {
    /// Sets how large (in percent of the base layer's nodes or edges) the cumulative delta
    /// of a fragment commit may grow before [`WriterLock::commit_fragment`] writes a fresh
    /// base instead (0: always a fresh base).
    pub fn set_delta_limit(&mut self, percent: u32) {
        self.delta_limit_percent = percent;
    }

    /// Folds the current generation's base and delta layers into a new base layer,
    /// committed as a new generation recording `run`. Node indexes are renumbered densely
    /// (removed nodes leave no gap). Without a delta the graph is committed as is (its
    /// segments are reused).
    pub fn compact(&mut self, run: RunRecord) -> Result<CommitInfo> {
        let cur = self.store.open_current()?;
        let g = cur.to_graph_builder();
        self.commit(&g, run)
    }

    /// The store this lock belongs to.
    pub(crate) fn store(&self) -> &Store {
        self.store
    }

    /// Commits `graph` as a new generation and appends `run` (with `run.generation` set to
    /// it) to the history.
    pub fn commit(&mut self, graph: &GraphBuilder, run: RunRecord) -> Result<CommitInfo> {
        self.commit_with(graph, run, &mut |_| false)
    }

    /// Records a run that produced no graph (failed or empty): a new generation whose
    /// layers are those of the current one.
    pub fn record_run(&mut self, run: RunRecord) -> Result<()> {
        let (layers, runs) = self
            .store
            .current_manifest()?
            .map(|m| (m.layers, m.runs))
            .unwrap_or_default();
        self.publish_manifest(layers, runs, Some(run)).map(|_| ())
    }

    /// Publishes a new generation with the given layers and run history, plus `run` (with
    /// its generation set) when given: `gc prune` drops runs, `fix` makes an older
    /// generation's layers current again. Returns the new generation.
    pub(crate) fn publish_manifest(
        &mut self,
        layers: Vec<Layer>,
        runs: Vec<RunRecord>,
        run: Option<RunRecord>,
    ) -> Result<u64> {
        self.publish_layers_with(|_| layers, runs, run, &mut |_| false)
    }

    /// [`Self::publish_manifest`] with the layers made once the new generation is known
    /// (`load` stamps it as their `created_generation`) and a crash hook for tests.
    pub(crate) fn publish_layers_with(
        &mut self,
        layers: impl FnOnce(u64) -> Vec<Layer>,
        mut runs: Vec<RunRecord>,
        run: Option<RunRecord>,
        crash: &mut dyn FnMut(CommitStep) -> bool,
    ) -> Result<u64> {
        // A damaged MANIFEST must not block `fix`: the generation also counts past every
        // manifest file, so it is never reused either way.
        let prev = self.store.current_manifest().ok().flatten();
        let generation = self.next_generation(prev.as_ref())?;
        let layers = layers(generation);
        if let Some(mut run) = run {
            run.generation = generation;
            runs.push(run);
        }
        let body = ManifestBody {
            generation,
            db_uuid: self.store.db_uuid,
            created_at_ms: now_ms(),
            layers,
            runs,
        };
        self.publish(&body, crash)?;
        Ok(generation)
    }

    fn next_generation(&self, prev: Option<&ManifestBody>) -> Result<u64> {
        // Past the highest manifest file too: a crashed commit may have left one behind,
        // and a generation number is never reused for different content.
        let on_disk = self.store.generations()?.last().copied().unwrap_or(0);
        Ok(prev.map_or(0, |m| m.generation).max(on_disk) + 1)
    }

    /// `commit` with a hook called after each step; returning `true` abandons the commit
    /// there, as a crash would (used by the crash tests).
    pub(crate) fn commit_with(
        &mut self,
        graph: &GraphBuilder,
        run: RunRecord,
        crash: &mut dyn FnMut(CommitStep) -> bool,
    ) -> Result<CommitInfo> {
        self.commit_base_with(graph, None, run, crash)
    }

    /// Commits `graph` as a new base generation, like [`WriterLock::commit`], except that
    /// its community and pagerank columns come from `scores` (one value per node), called
    /// once the segments that do not need them are written: a caller can compute them
    /// from `graph` on another thread meanwhile.
    pub fn commit_with_scores(
        &mut self,
        graph: &GraphBuilder,
        scores: &mut dyn FnMut() -> NodeScores,
        run: RunRecord,
    ) -> Result<CommitInfo> {
        self.commit_base_with(graph, Some(scores), run, &mut |_| false)
    }

    /// Encodes `graph` into a base layer, writing each segment as soon as it is encoded
    /// (so that at most one encoded segment is held in memory), then publishes it.
    fn commit_base_with(
        &mut self,
        graph: &GraphBuilder,
        scores: Option<&mut dyn FnMut() -> NodeScores>,
        run: RunRecord,
        crash: &mut dyn FnMut(CommitStep) -> bool,
    ) -> Result<CommitInfo> {
        let prev = self.check_identity()?;
        let mut files = SegmentFiles::new(self.store, crash);
        let counts = build_layer(graph, self.store.db_uuid, scores, &mut |kind, bytes| {
            files.put(kind, &bytes)
        })?;
        let written = files.finish()?;
        self.publish_layer(prev, written, counts, None, run, crash)
    }

    /// Writes the segments of `built` and publishes a generation whose layers are
    /// `built` as a base, or, with `below` (a base layer), `below` plus `built` as its delta.
    pub(crate) fn commit_layer_with(
        &mut self,
        built: &BuiltLayer,
        below: Option<Layer>,
        run: RunRecord,
        crash: &mut dyn FnMut(CommitStep) -> bool,
    ) -> Result<CommitInfo> {
        let prev = self.check_identity()?;
        let mut files = SegmentFiles::new(self.store, crash);
        for (kind, bytes) in &built.segments {
            files.put(*kind, bytes)?;
        }
        let written = files.finish()?;
        self.publish_layer(prev, written, built.counts, below, run, crash)
    }

    /// The current manifest, checked to belong to this database.
    fn check_identity(&self) -> Result<Option<ManifestBody>> {
        let prev = self.store.current_manifest()?;
        if let Some(p) = &prev
            && p.db_uuid != self.store.db_uuid
        {
            return Err(StorageError::corrupt(
                "MANIFEST",
                "database identity differs from DBID",
            ));
        }
        Ok(prev)
    }

    /// Publishes a generation whose layers are the segments `written` as a base, or,
    /// with `below` (a base layer), `below` plus them as its delta.
    fn publish_layer(
        &mut self,
        prev: Option<ManifestBody>,
        written: WrittenSegments,
        counts: LayerCounts,
        below: Option<Layer>,
        mut run: RunRecord,
        crash: &mut dyn FnMut(CommitStep) -> bool,
    ) -> Result<CommitInfo> {
        let generation = self.next_generation(prev.as_ref())?;
        run.generation = generation;
        // The run records what the generation holds, whatever the caller estimated.
        run.node_count = counts.live_nodes;
        run.edge_count = counts.live_edges;
        let mut runs = prev.map(|m| m.runs).unwrap_or_default();
        runs.push(run);
        let layer = Layer {
            kind: if below.is_some() {
                LAYER_DELTA
            } else {
                LAYER_BASE
            },
            created_generation: generation,
            node_count: counts.node_count,
            edge_count: counts.edge_count,
            segments: written.refs,
        };
        let body = ManifestBody {
            generation,
            db_uuid: self.store.db_uuid,
            created_at_ms: now_ms(),
            layers: below.into_iter().chain([layer]).collect(),
            runs,
        };
        let bytes_written = written.bytes_written + self.publish(&body, crash)?;
        Ok(CommitInfo {
            generation,
            bytes_written,
            segments_written: written.written,
            segments_reused: written.reused,
            node_count: counts.live_nodes,
            edge_count: counts.live_edges,
        })
    }

    /// Writes `body` as `manifests/<generation>.manifest`, then as `MANIFEST`; returns bytes written.
    fn publish(
        &self,
        body: &ManifestBody,
        crash: &mut dyn FnMut(CommitStep) -> bool,
    ) -> Result<u64> {
        let bytes = manifest::encode(body)?;
        let mdir = self.store.dir.join(names::MANIFESTS_DIR);
        let gpath = generation_manifest_path(&self.store.dir, body.generation);
        let tmp = write_temp(&mdir, names::MANIFEST, &bytes)?;
        if crash(CommitStep::GenerationManifestTemp) {
            return Err(simulated());
        }
        fs::rename(&tmp, &gpath).map_err(io_err(&gpath))?;
        sync_dir(&mdir)?;
        if crash(CommitStep::GenerationManifestRenamed) {
            return Err(simulated());
        }
        let dir = &self.store.dir;
        let tmp = write_temp(dir, names::MANIFEST, &bytes)?;
        if crash(CommitStep::ManifestTemp) {
            return Err(simulated());
        }
        let cur = dir.join(names::MANIFEST);
        fs::rename(&tmp, &cur).map_err(io_err(&cur))?;
        sync_dir(dir)?;
        if crash(CommitStep::ManifestRenamed) {
            return Err(simulated());
        }
        Ok(2 * bytes.len() as u64)
    }
}

/// Segment files of one commit, written as they are handed over: to a temporary name,
/// fsynced, renamed to the blake3 name (§3 of the format); a segment already present under
/// its name is reused.
struct SegmentFiles<'c> {
    dir: PathBuf,
    crash: &'c mut dyn FnMut(CommitStep) -> bool,
    done: WrittenSegments,
}

/// What [`SegmentFiles`] wrote, in the order the segments were handed over.
struct WrittenSegments {
    refs: Vec<SegmentRef>,
    bytes_written: u64,
    written: u32,
    reused: u32,
}

impl<'c> SegmentFiles<'c> {
    fn new(store: &Store, crash: &'c mut dyn FnMut(CommitStep) -> bool) -> Self {
        SegmentFiles {
            dir: store.dir.join(names::SEGMENTS_DIR),
            crash,
            done: WrittenSegments {
                refs: Vec::new(),
                bytes_written: 0,
                written: 0,
                reused: 0,
            },
        }
    }

    fn put(&mut self, kind: SegmentKind, bytes: &[u8]) -> Result<()> {
        let r = SegmentRef {
            kind: kind as u8,
            hash: *blake3::hash(bytes).as_bytes(),
            len: bytes.len() as u64,
        };
        let final_path = self.dir.join(r.file_name());
        if holds_segment(&final_path, &r) {
            self.done.reused += 1;
        } else {
            let tmp = write_temp(&self.dir, &r.file_name(), bytes)?;
            if (self.crash)(CommitStep::SegmentTempWritten) {
                return Err(simulated());
            }
            fs::rename(&tmp, &final_path).map_err(io_err(&final_path))?;
            if (self.crash)(CommitStep::SegmentRenamed) {
                return Err(simulated());
            }
            self.done.bytes_written += r.len;
            self.done.written += 1;
        }
        self.done.refs.push(r);
        Ok(())
    }

    /// Makes the renames durable; the segments are listed in segment-kind order.
    fn finish(mut self) -> Result<WrittenSegments> {
        sync_dir(&self.dir)?;
        if (self.crash)(CommitStep::SegmentsDirSynced) {
            return Err(simulated());
        }
        self.done.refs.sort_by_key(|r| r.kind);
        Ok(self.done)
    }
}

pub(crate) fn simulated() -> StorageError {
    StorageError::io(
        "<simulated crash>",
        std::io::Error::other("simulated crash"),
    )
}

impl SegmentKind {
    /// Whether the manifest of a delta layer lists exactly one segment of every delta kind.
    pub(crate) fn delta_complete(segs: &[SegmentRef]) -> bool {
        segs.len() == SegmentKind::DELTA.len()
            && SegmentKind::DELTA
                .iter()
                .all(|k| segs.iter().filter(|s| s.kind == *k as u8).count() == 1)
    }

    /// Whether the manifest of a base layer lists exactly one segment of every kind.
    pub(crate) fn base_complete(segs: &[SegmentRef]) -> bool {
        segs.len() == SegmentKind::BASE.len()
            && SegmentKind::BASE
                .iter()
                .all(|k| segs.iter().filter(|s| s.kind == *k as u8).count() == 1)
    }
}
