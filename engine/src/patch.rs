//! Incremental re-indexing: `batho patch` brings an artifact up to date with the files on
//! disk by re-extracting and re-resolving only what an edit can have changed, and commits
//! the new state of those files as a [`GraphFragment`](batho_storage::GraphFragment) laid
//! over the current generation.
//!
//! The steps:
//! 1. **Detect** added, modified and deleted files ([`DetectMode`]): discovery as the
//!    build does it, compared with the artifact's `File` nodes, whose content hash is the
//!    blake3 of the file's raw bytes.
//! 2. **Widen** to the affected files (`scope::affected`): unchanged files whose
//!    references, includes or emitted edges may come out differently now (including the
//!    files whose name filter in the facts cache says they mention a changed name).
//! 3. **Gather context** (`context::gather`): what the resolver must see to resolve the
//!    replaced files exactly as a full build does (their include closures, the entities
//!    their look-ups can reach), loaded from the facts cache ([`crate::facts_cache`])
//!    rather than parsed; every other file is stood in for by its path only.
//! 4. **Resolve** with [`resolve::resolve_partial`], which makes edges only for the
//!    replaced files, and **cut** the fragment (`fragment`): the replaced files' nodes plus
//!    the context nodes and stubs their edges reach, which stand for base nodes.
//! 5. **Commit** under the writer lock with a [`RunKind::Patch`] run, and report the
//!    entity-level changes (added, removed, modified, renamed).
//!
//! When step 2 widens to a third or more of a large tree, steps 3 and 4 would cost more
//! than a full build (each of those files parsed for its references, then a fragment the
//! size of the artifact laid over it): the patch indexes the whole tree as a build does
//! ([`crate::build`]'s `index_all`) and commits it as a fresh base, with the same run and
//! change records.
//!
//! Correctness is parity: the merged graph equals a full build of the edited tree (see
//! `docs/architecture.md` and the tests in `patch/tests.rs`).

pub mod canon;
mod context;
mod fragment;
mod members;
mod scope;
mod steps;
mod units;

#[cfg(test)]
mod scope_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use batho_schema::{Language, NodeFlags, NodeKind};
use batho_storage::audit::AuditEntry;
use batho_storage::input::NodeIdx;
use batho_storage::{Artifact, CONTENT_HASH_LEN, RunRecord, StorageError, Store, StoredHash};

use crate::build::{self, FileOutcome, extract_all};
use crate::discover::{self, SourceFile};
use crate::extract::FileFacts;
use crate::facts_cache::{self, FactsCache, PackWriter};
use crate::resolve::ResolveOptions;
use crate::stamps::Stamps;

pub use fragment::{ChangeKind, EntityChange, EntitySnapshot};

/// How changed files are found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DetectMode {
    /// Hash every source file (blake3) and compare with the `File` node's content hash.
    #[default]
    Hash,
    /// Hash only the files whose modification time is later than the start of the run
    /// that committed the current generation (plus new and vanished files). Misses an
    /// edit that leaves an mtime older than that run (`touch -d`, `cp -p` of old files).
    Mtime,
}

impl DetectMode {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DetectMode::Hash => "hash",
            DetectMode::Mtime => "mtime",
        }
    }

    /// Parses `hash` or `mtime`.
    pub fn from_name(s: &str) -> Option<DetectMode> {
        match s {
            "hash" => Some(DetectMode::Hash),
            "mtime" => Some(DetectMode::Mtime),
            _ => None,
        }
    }
}

/// What a patch may do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchOptions {
    /// Change detection.
    pub mode: DetectMode,
    /// Parser threads; `None` uses every core.
    pub max_workers: Option<usize>,
    /// Files larger than this are not indexed; `None` uses the discovery default. Use the
    /// value the artifact was built with, or files cross the limit as added or deleted.
    pub max_file_size_kb: Option<u64>,
    /// Index the whole tree when the files to re-resolve are at least this percentage of
    /// it; `None` is the default policy ([`WHOLE_TREE_PERCENT`] of a tree of at least
    /// [`WHOLE_TREE_MIN_FILES`] files).
    pub whole_tree_percent: Option<usize>,
}

/// Files added, modified and deleted since the current generation, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FileChanges {
    /// New source files.
    pub added: Vec<String>,
    /// Files whose bytes changed.
    pub modified: Vec<String>,
    /// Indexed files that are gone (or can no longer be indexed: too large, binary).
    pub deleted: Vec<String>,
}

impl FileChanges {
    /// Added + modified + deleted.
    pub fn total(&self) -> usize {
        self.added.len() + self.modified.len() + self.deleted.len()
    }

    /// No file changed.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// Every changed path: the added, then the modified, then the deleted ones.
    pub fn paths(&self) -> impl Iterator<Item = &String> {
        self.added.iter().chain(&self.modified).chain(&self.deleted)
    }
}

/// Wall time of each phase of a patch, in milliseconds.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct PatchPhases {
    /// Discovery and change detection.
    pub detect_ms: u64,
    /// Affected files and context gathering, extraction included.
    pub scope_ms: u64,
    /// Resolution and cutting the fragment.
    pub resolve_ms: u64,
    /// Committing the new generation.
    pub write_ms: u64,
}

/// What a patch did.
#[derive(Clone, Debug)]
pub struct PatchReport {
    /// The repository root.
    pub root: PathBuf,
    /// Changed files.
    pub files: FileChanges,
    /// Unchanged files whose nodes and edges were re-resolved because of the changes.
    pub affected: Vec<String>,
    /// Files extracted only as context for the resolver (nothing of them is written).
    pub context_files: u64,
    /// Of those, the ones loaded from the facts cache instead of parsed.
    pub context_cached: u64,
    /// Of the affected files, the ones loaded whole from the facts cache instead of
    /// parsed.
    pub affected_cached: u64,
    /// Of the changed files, the ones whose new bytes the facts cache knew (a checkout
    /// undone), loaded whole from it instead of parsed.
    pub changed_cached: u64,
    /// The artifact had no facts cache (built by an older batho, or the cache was
    /// deleted): context files were parsed, and every file counted as mentioning every
    /// changed name. This patch starts a cache; `batho build --full` makes a whole one.
    pub facts_cache_missing: bool,
    /// The changes reached so much of the tree (see [`PatchOptions::whole_tree_percent`])
    /// that the patch indexed every file as a full build does and committed a fresh base,
    /// rather than re-resolving them one by one into a delta.
    pub rebuilt: bool,
    /// Entity-level changes of the run.
    pub entities: Vec<EntityChange>,
    /// Edges leaving the replaced files that the patch added (multiset difference).
    pub relationships_added: u64,
    /// Edges leaving the replaced files that the patch removed.
    pub relationships_removed: u64,
    /// The committed run; `None` when nothing changed (no generation is committed then).
    pub run: Option<RunRecord>,
    /// The audit log entry of the committed run.
    pub audit: Option<AuditEntry>,
    /// Bytes the commit wrote to the store.
    pub bytes_written: u64,
    /// Size of the artifact folder after the patch.
    pub artifact_bytes: u64,
    /// Wall time of the whole patch.
    pub duration_ms: u64,
    /// Where the time went.
    pub phases: PatchPhases,
}

/// Why a patch did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The path is not a directory.
    #[error("not a directory: {0}")]
    NotADirectory(PathBuf),
    /// There is no artifact to patch.
    #[error("no artifact at {0}")]
    NoArtifact(PathBuf),
    /// Discovery failed.
    #[error(transparent)]
    Discover(#[from] discover::DiscoverError),
    /// The extractor could not be set up, or a parser thread died.
    #[error(transparent)]
    Build(#[from] crate::build::BuildError),
    /// The store refused the commit or could not be read.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The patch would drop most of the indexed files although they are still on disk
    /// (the discovery now skips them: a `max_file_size_kb` below their size, new ignore
    /// rules): nothing was changed.
    #[error(
        "this patch would drop {dropped} of the {indexed} indexed files although they are \
         still on disk (discovery now skips them: the file size limit or ignore rules); \
         nothing was changed"
    )]
    WouldDropMostFiles {
        /// Indexed files still on disk that the patch would drop.
        dropped: usize,
        /// Indexed files before the patch.
        indexed: usize,
    },
    /// The patch committed, but its audit log entry could not be appended.
    #[error(
        "the patch committed generation {generation}, but its audit log entry could not be \
         appended: {source}"
    )]
    AuditFailed {
        /// The generation the patch committed.
        generation: u64,
        /// Why the append failed.
        source: StorageError,
    },
}

/// A patch may not drop more than this share of the indexed files that are still on disk
/// (issue 28: `batho_patch(max_file_size_kb=0)` emptied the graph): dropping most of a
/// graph is a rebuild, done on purpose with `batho build --full`.
const MOST_FILES: f64 = 0.5;

impl PatchReport {
    /// `3 changes (2 added, 1 modified, 0 deleted)`: the changed files, for summaries.
    pub fn changes_line(&self) -> String {
        format!(
            "{} changes ({} added, {} modified, {} deleted)",
            self.files.total(),
            self.files.added.len(),
            self.files.modified.len(),
            self.files.deleted.len()
        )
    }
}

impl PatchError {
    /// The way out of an error about the artifact, for a front end to word (where
    /// [`PatchError::hint`] has nothing more specific).
    pub fn remedy(&self) -> Option<batho_storage::Remedy> {
        match self {
            PatchError::NoArtifact(_) => Some(batho_storage::Remedy::Build),
            PatchError::AuditFailed { .. } => Some(batho_storage::Remedy::Fix),
            PatchError::Storage(error) => error.remedy(),
            _ => None,
        }
    }

    /// What to check, in words that name no command of a front end (each words
    /// [`PatchError::remedy`] its own way).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            PatchError::WouldDropMostFiles { .. } => Some(
                "keep the file size limit the artifact was built with, or raise it; to index fewer files on purpose, rebuild in full",
            ),
            PatchError::AuditFailed { .. } => {
                Some("the graph is current; only the audit log needs verifying")
            }
            _ => None,
        }
    }

    /// Whether the error is about the artifact or the arguments (exit code 2) rather than
    /// the operation (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            PatchError::NotADirectory(_)
                | PatchError::NoArtifact(_)
                | PatchError::WouldDropMostFiles { .. }
        )
    }
}

/// The indexed source files of an artifact: path → (File node, language, content hash).
pub(crate) struct Indexed {
    pub(crate) files: BTreeMap<String, (NodeIdx, Language, StoredHash)>,
}

impl Indexed {
    pub(crate) fn of(base: &Artifact) -> Indexed {
        let mut files = BTreeMap::new();
        for n in base.nodes_of_kind(NodeKind::File).iter() {
            let node = base.node(NodeIdx(n));
            let file = node.file();
            // Include stubs (`<stdio.h>`) are File nodes too, with no file and SYSTEM.
            if file.is_empty() || node.flags().contains(NodeFlags::SYSTEM) {
                continue;
            }
            files.insert(
                file.into_owned(),
                (NodeIdx(n), node.language(), node.content_hash()),
            );
        }
        Indexed { files }
    }

    /// The indexed file `path` of `base`: its File node, language and content hash.
    pub(crate) fn of_path(base: &Artifact, path: &str) -> Option<(NodeIdx, Language, StoredHash)> {
        let n = base.lookup_id(path)?;
        let node = base.node(n);
        (node.kind() == NodeKind::File && node.file() == path)
            .then(|| (n, node.language(), node.content_hash()))
    }
}

/// Patches the artifact of the repository at `root`.
pub fn patch(root: &Path, opts: &PatchOptions) -> Result<PatchReport, PatchError> {
    let clock = steps::Clock::start();
    let (root, dir) = steps::locate(root)?;
    let store = Store::create_or_open(&dir)?;
    let mut writer = store.lock_writer()?;
    let base = steps::current_generation(&store, &dir)?;
    let indexed = Indexed::of(&base);
    let limits = steps::Limits::new(opts, &indexed);
    let mut detected = steps::detect_changes(&root, &dir, &base, &indexed, opts, &limits, &clock)?;
    let mut report = steps::empty_report(&root, clock.elapsed_ms());
    let mut files = std::mem::take(&mut detected.files);
    if files.is_empty() {
        return steps::nothing_changed(report, &detected.stamps, &dir, &store, &clock);
    }
    let by_path = detected.by_path();
    let mark = Instant::now();
    let cache = FactsCache::open(&dir);
    report.facts_cache_missing = cache.packs() == 0;
    let extractor = Extract {
        by_path: &by_path,
        workers: limits.workers,
        limit: limits.bytes,
        cache: &cache,
        indexed: &indexed,
        config: crate::config::Configuration::recorded(&dir).map(std::sync::Arc::new),
    };
    let changed_facts = steps::extract_changed(&extractor, &detected, &mut files)?;
    if files.is_empty() {
        return steps::nothing_changed(report, &detected.stamps, &dir, &store, &clock);
    }
    let mut facts = changed_facts.facts;
    let present = steps::present_after(&indexed, &files, &facts);
    let options = ResolveOptions {
        threads: limits.workers,
        ..ResolveOptions::default()
    };
    let changed: BTreeSet<String> = files.paths().cloned().collect();
    let mut emit = scope::affected(scope::Inputs {
        base: &base,
        changes: &files,
        facts: &facts,
        present: &present,
        include_dirs: &options.include_dirs,
        indexed: &indexed,
        cache: &cache,
        threads: limits.workers,
    });
    let affected_before: BTreeSet<String> = emit.difference(&changed).cloned().collect();
    emit.retain(|p| present.contains_key(p));
    let inputs = steps::ResolveInputs {
        base: &base,
        dir: &dir,
        discovery: &detected.discovery,
        files: &files,
        present: &present,
        extractor: &extractor,
        limits: &limits,
        options,
    };
    let resolution =
        steps::resolve_changes(&inputs, emit, &mut facts, opts, &mut report.phases, mark)?;
    let affected = steps::affected_files(&resolution.emit, &changed, affected_before, &present);
    let mark = Instant::now();
    let run = steps::patch_run(
        &root,
        &base,
        &files,
        &resolution,
        present.len(),
        detected.discovery.skipped.len(),
        &clock,
    );
    report.rebuilt = matches!(resolution.outcome, Outcome::Whole(_));
    report.context_files = resolution.context_files;
    report.context_cached = resolution.skeletal.len() as u64;
    report.affected_cached = resolution.affected_cached as u64;
    let commit_inputs = steps::CommitInputs {
        base: &base,
        dir: &dir,
        cache: &cache,
        facts: &facts,
        present: &present,
        files: &files,
    };
    let committed =
        steps::commit_beside_changes(&mut writer, &commit_inputs, resolution, run.clone())?;
    // After the commit: a stamp is trusted only for the content hash the artifact holds.
    let _ = detected.stamps.save(&dir);
    report.phases.write_ms = mark.elapsed().as_millis() as u64;
    let run = RunRecord {
        generation: committed.commit.generation,
        node_count: committed.commit.node_count,
        edge_count: committed.commit.edge_count,
        ..run
    };
    report.audit = Some(audit_patch(&dir, &run)?);
    drop(writer);
    report.run = Some(run);
    report.files = files;
    report.affected = affected;
    report.changed_cached = changed_facts.cached as u64;
    report.entities = committed.entities;
    report.relationships_added = committed.relationships_added;
    report.relationships_removed = committed.relationships_removed;
    report.bytes_written = committed.commit.bytes_written;
    report.artifact_bytes = store.size_on_disk()?;
    report.duration_ms = clock.elapsed_ms();
    Ok(report)
}

/// Appends the committed run to the artifact's audit log, still under the writer lock, so
/// that every patch (from the CLI, the MCP server or `watch`) is audited in commit order.
fn audit_patch(dir: &Path, run: &RunRecord) -> Result<AuditEntry, PatchError> {
    let detail = format!(
        "run {} generation {}: {}",
        run.uuid, run.generation, run.message
    );
    crate::maintenance::append_audit(dir, "patch", &detail).map_err(|source| {
        PatchError::AuditFailed {
            generation: run.generation,
            source,
        }
    })
}

/// Refuses a patch that would drop most indexed files while they are still on disk: the
/// options (a size limit) skip them, not an edit of the tree. A checkout that deletes most
/// of the tree deletes the files, and is patched.
fn refuse_dropping_most_files(
    root: &Path,
    deleted: &[String],
    indexed: usize,
) -> Result<(), PatchError> {
    let threshold = (indexed as f64 * MOST_FILES).ceil() as usize;
    if indexed == 0 || deleted.len() < threshold.max(1) {
        return Ok(());
    }
    let dropped = deleted
        .iter()
        .filter(|path| root.join(path).is_file())
        .count();
    if dropped < threshold.max(1) {
        return Ok(());
    }
    Err(PatchError::WouldDropMostFiles { dropped, indexed })
}

/// A patch whose files to re-resolve are at least this percentage of the tree's files
/// indexes the whole tree instead. Measured on the kernel: re-resolving 69 % of its files
/// one by one took 220 s against 130 s for a full build, and 7 % took 87 s; the costs
/// cross near a third.
pub const WHOLE_TREE_PERCENT: usize = 33;

/// Below this many files a patch always re-resolves file by file: both ways take well
/// under a second or two there, and a delta keeps the older generations' segments shared.
pub const WHOLE_TREE_MIN_FILES: usize = 2_000;

fn whole_tree_is_cheaper(emit: usize, present: usize, opts: &PatchOptions) -> bool {
    match opts.whole_tree_percent {
        Some(p) => emit * 100 >= present.max(1) * p,
        None => present >= WHOLE_TREE_MIN_FILES && emit * 100 >= present * WHOLE_TREE_PERCENT,
    }
}

/// What a patch commits: a fragment laid over the base, or (when the changes reach most
/// of the tree) the whole tree indexed afresh.
// One value per patch: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Outcome {
    /// The fragment, and the base's nodes of its replaced files.
    Fragment(batho_storage::GraphFragment, fragment::BaseIds),
    Whole(build::WholeTree),
}

/// Writes the whole (not skeletal) facts of present files that the cache does not hold
/// yet to a new facts-cache pack, and folds the cache's small packs when there are many.
/// (Files loaded from it, and files changed back to bytes it knows, as after a checkout
/// and back, are not written again.)
fn save_parsed(
    dir: &Path,
    cache: &FactsCache,
    facts: &HashMap<String, FileFacts>,
    skeletal: &HashSet<String>,
    present: &BTreeMap<String, Language>,
) -> std::io::Result<()> {
    let mut w = PackWriter::create(&facts_cache::cache_dir(dir))?;
    for (p, f) in facts {
        if !skeletal.contains(p)
            && present.contains_key(p)
            && f.content_hash != [0; 32]
            && !cache.holds(p, &f.content_hash)
        {
            w.add(f)?;
        }
    }
    if w.is_empty() {
        return Ok(());
    }
    w.finish()?;
    FactsCache::fold_if_many(dir)
}

/// Compares the files on disk with the artifact's `File` nodes. Also returns the full
/// hash of each file it read (by index in `disk`), for its stamp.
fn detect(
    disk: &[SourceFile],
    indexed: &Indexed,
    mode: DetectMode,
    since_ms: i64,
    stamps: &Stamps,
    workers: usize,
) -> (FileChanges, Vec<(usize, [u8; 32])>) {
    let mut out = FileChanges::default();
    let mut candidates: Vec<(usize, &SourceFile, StoredHash)> = Vec::new();
    for (i, f) in disk.iter().enumerate() {
        match indexed.files.get(&f.rel_path) {
            None => out.added.push(f.rel_path.clone()),
            Some(&(_, _, hash)) => {
                let check = match mode {
                    DetectMode::Hash => !stamps.unchanged(&f.rel_path, f.stamp.as_ref(), &hash),
                    DetectMode::Mtime => f.modified_ms >= since_ms,
                };
                if check {
                    candidates.push((i, f, hash));
                }
            }
        }
    }
    // Hash in parallel: on a kernel-size tree this reads a gigabyte.
    let next = std::sync::atomic::AtomicUsize::new(0);
    // (modified, turned binary, hashed)
    let found = std::sync::Mutex::new((Vec::new(), Vec::new(), Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..workers.min(candidates.len()).max(1) {
            s.spawn(|| {
                let (mut modified, mut binary, mut hashed) = (Vec::new(), Vec::new(), Vec::new());
                // One buffer per thread: a fresh allocation per file costs page faults and
                // zeroing on every large file, as much as the hashing itself.
                let mut buf: Vec<u8> = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((k, f, old)) = candidates.get(i) else {
                        break;
                    };
                    let hash = hash_file(&f.abs_path, &mut buf);
                    if let Ok(h) = &hash {
                        hashed.push((*k, *h));
                    }
                    // A file that cannot be read now counts as modified: extraction then
                    // finds out and reports it deleted, as a build would skip it.
                    match hash {
                        // The artifact keeps a prefix of the hash: compare that much.
                        Ok(h) if h[..CONTENT_HASH_LEN] == old[..] => {}
                        // Discovery trusted indexed files to be text; one that turned
                        // binary is gone from the index, as a full build would skip it.
                        // (`buf` still holds the bytes just hashed.)
                        Ok(_) if discover::looks_binary(&buf) => binary.push(f.rel_path.clone()),
                        _ => modified.push(f.rel_path.clone()),
                    }
                }
                if let Ok(mut m) = found.lock() {
                    m.0.extend(modified);
                    m.1.extend(binary);
                    m.2.extend(hashed);
                }
            });
        }
    });
    let (modified, binary, hashed) = found.into_inner().unwrap_or_default();
    out.modified = modified;
    out.modified.sort();
    let on_disk: BTreeSet<&str> = disk.iter().map(|f| f.rel_path.as_str()).collect();
    out.deleted = indexed
        .files
        .keys()
        .filter(|p| !on_disk.contains(p.as_str()))
        .cloned()
        .chain(binary)
        .collect();
    out.deleted.sort();
    (out, hashed)
}

/// The facts the resolver takes, for every present file in path order: emitted files
/// whole, context files lending what their lookups can reach, the rest by path only.
/// Tens of thousands of context files lend on a large checkout: on `threads` threads.
fn resolver_inputs(
    present: &BTreeMap<String, Language>,
    facts: &HashMap<String, FileFacts>,
    emit: &BTreeSet<String>,
    context: &context::Context,
    threads: usize,
) -> Vec<FileFacts> {
    let files: Vec<(&String, &Language)> = present.iter().collect();
    let one = |part: &[(&String, &Language)]| -> Vec<FileFacts> {
        part.iter()
            .map(|&(p, lang)| match facts.get(p) {
                Some(f) if emit.contains(p) => f.clone(),
                // Context files only lend the entities the lookups can reach.
                Some(f) if context.files.contains(p) => context.lend(f),
                _ => FileFacts::path_only(p, *lang),
            })
            .collect()
    };
    crate::par::map_runs(&files, threads, 1024, one)
}

/// The blake3 of a file's bytes, which are left in `buf` (scratch space kept between
/// calls). (Hashing
/// through a memory map instead was measured slower on the kernel: 0.74–0.88 s against
/// 0.67–0.71 s for detection.)
fn hash_file(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<[u8; 32]> {
    buf.clear();
    std::io::Read::read_to_end(&mut std::fs::File::open(path)?, buf)?;
    Ok(*blake3::hash(buf).as_bytes())
}

/// Extracts files by repository path, in parallel, as the build does; or, for files
/// that only lend context, loads their skeletons from the facts cache.
pub(crate) struct Extract<'a> {
    by_path: &'a HashMap<&'a str, &'a SourceFile>,
    workers: usize,
    limit: u64,
    /// Skeletons of unchanged files.
    cache: &'a FactsCache,
    /// The base's indexed files: an unchanged file's content hash is its cache key.
    indexed: &'a Indexed,
    /// The configuration the base was built with (`.batho/configuration`).
    config: Option<std::sync::Arc<crate::config::Configuration>>,
}

impl Extract<'_> {
    /// Whether the base was built under a configuration.
    pub(crate) fn configured(&self) -> bool {
        self.config.is_some()
    }

    /// The facts of the readable files among `paths`, and the paths that could not be
    /// indexed (missing, unreadable, too large, binary).
    pub(crate) fn run(
        &self,
        paths: &[String],
    ) -> Result<(Vec<FileFacts>, Vec<String>), PatchError> {
        let mut files = Vec::with_capacity(paths.len());
        let mut failed = Vec::new();
        for p in paths {
            match self.by_path.get(p.as_str()) {
                Some(f) => files.push((*f).clone()),
                None => failed.push(p.clone()),
            }
        }
        let outcomes = extract_all(
            &files,
            self.workers,
            self.limit,
            None,
            self.config.clone(),
            &|_| {},
        )?;
        let mut got = Vec::with_capacity(files.len());
        for (f, o) in files.iter().zip(outcomes) {
            match o {
                FileOutcome::Parsed { facts, .. } => got.push(facts),
                FileOutcome::Skipped(_) => failed.push(f.rel_path.clone()),
            }
        }
        Ok((got, failed))
    }

    /// The facts of changed files, as [`Extract::run`] gives them, with the files that
    /// could not be indexed and how many came from the cache. A file whose new bytes the
    /// cache knows (a checkout undone, a branch switched back: `hashes` holds the content
    /// hashes detection read) is loaded whole from it instead of parsed; the cache keys
    /// facts by path and content hash, so they are the facts parsing would give.
    pub(crate) fn changed(
        &self,
        paths: &[String],
        hashes: &HashMap<&str, [u8; 32]>,
    ) -> Result<(Vec<FileFacts>, Vec<String>, usize), PatchError> {
        self.cached_or_parsed(paths, |p| {
            let hash = hashes.get(p)?;
            // Discovery's rules (size limit, binary) still decide what is indexed.
            self.by_path.get(p)?;
            let f = self.cache.get_full(p, hash)?;
            (f.content_hash == *hash && f.bytes <= self.limit).then_some(f)
        })
    }

    /// Facts for unchanged files that only lend context to the resolver: cached
    /// skeletons (no references) where the cache has them, parsed facts for the rest.
    /// Returns the facts and how many came from the cache (the first ones).
    pub(crate) fn context(&self, paths: &[String]) -> Result<(Vec<FileFacts>, usize), PatchError> {
        self.load(paths, false)
    }

    /// Whole facts of unchanged files whose references are resolved again: loaded from
    /// the cache (skeleton and references entry) where it has both, parsed otherwise.
    /// Returns the facts and how many came from the cache (the first ones); a file that
    /// could not be read is left out, as by [`Extract::run`].
    pub(crate) fn unchanged(
        &self,
        paths: &[String],
    ) -> Result<(Vec<FileFacts>, usize), PatchError> {
        self.load(paths, true)
    }

    fn load(&self, paths: &[String], whole: bool) -> Result<(Vec<FileFacts>, usize), PatchError> {
        let (got, _, hits) = self.cached_or_parsed(paths, |p| {
            let (_, _, hash) = self.indexed.files.get(p)?;
            if whole {
                self.cache.get_full(p, hash)
            } else {
                self.cache.get(p, hash)
            }
        })?;
        Ok((got, hits))
    }

    /// The facts `cached` gives for each of `paths` (the hits first), then those of the
    /// rest parsed as by [`Extract::run`]; with the files that could not be indexed and
    /// the number of hits.
    fn cached_or_parsed(
        &self,
        paths: &[String],
        cached: impl Fn(&str) -> Option<FileFacts> + Sync,
    ) -> Result<(Vec<FileFacts>, Vec<String>, usize), PatchError> {
        // Decompressing and decoding thousands of entries is worth the threads.
        let chunk = paths.len().div_ceil(self.workers).max(64);
        let cached = &cached;
        let loaded: Vec<Vec<Option<FileFacts>>> = std::thread::scope(|s| {
            let handles: Vec<_> = paths
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().map(|p| cached(p)).collect()))
                .collect();
            // A thread that died answered nothing: its files are parsed.
            handles
                .into_iter()
                .zip(paths.chunks(chunk))
                .map(|(h, part)| h.join().unwrap_or_else(|_| vec![None; part.len()]))
                .collect()
        });
        let mut got = Vec::with_capacity(paths.len());
        let mut missed = Vec::new();
        for (p, hit) in paths.iter().zip(loaded.into_iter().flatten()) {
            match hit {
                Some(f) => got.push(f),
                None => missed.push(p.clone()),
            }
        }
        let hits = got.len();
        let (parsed, failed) = self.run(&missed)?;
        got.extend(parsed);
        Ok((got, failed, hits))
    }
}
