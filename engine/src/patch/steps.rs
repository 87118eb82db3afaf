//! The steps of [`super::patch`], each a function returning its part of the result: open
//! the artifact, detect the changed files, extract them, widen to the affected files,
//! resolve them (or index the whole tree), describe the run, and commit it while the
//! entity-level changes are worked out beside the commit.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use batho_schema::Language;
use batho_storage::{Artifact, CommitInfo, RunKind, RunRecord, RunStatus, Store, WriterLock};

use super::{
    EntityChange, Extract, FileChanges, Indexed, Outcome, PatchError, PatchOptions, PatchPhases,
    PatchReport, context, fragment, resolver_inputs, save_parsed, whole_tree_is_cheaper,
};
use crate::build::{self, artifact_dir, now_ms};
use crate::discover::{self, DiscoverOptions, Discovery, SourceFile};
use crate::extract::FileFacts;
use crate::facts_cache::FactsCache;
use crate::git;
use crate::resolve::{self, ResolveOptions};
use crate::stamps::Stamps;

/// When the patch started, by the clocks its steps read.
pub(super) struct Clock {
    pub(super) started: Instant,
    pub(super) started_at_ms: i64,
    /// Taken before any file is looked at: what changes from here on is never stamped as
    /// seen.
    pub(super) hashed_from_ns: i64,
}

impl Clock {
    pub(super) fn start() -> Clock {
        Clock {
            started: Instant::now(),
            started_at_ms: now_ms(),
            hashed_from_ns: crate::stamps::now_ns(),
        }
    }

    pub(super) fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// The repository root (canonical) and its artifact folder, both checked to exist.
pub(super) fn locate(root: &Path) -> Result<(PathBuf, PathBuf), PatchError> {
    if !root.is_dir() {
        return Err(PatchError::NotADirectory(root.to_path_buf()));
    }
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let dir = artifact_dir(&root);
    if !dir.is_dir() {
        return Err(PatchError::NoArtifact(dir));
    }
    Ok((root, dir))
}

/// The current generation, which the patch is laid over (an artifact without one has
/// nothing to patch).
pub(super) fn current_generation(store: &Store, dir: &Path) -> Result<Artifact, PatchError> {
    if store.generations()?.is_empty() {
        return Err(PatchError::NoArtifact(dir.to_path_buf()));
    }
    Ok(store.open_current()?)
}

/// What discovery and extraction may do: the options, the size limit and the threads.
pub(super) struct Limits {
    pub(super) discover: DiscoverOptions,
    /// The largest file indexed, in bytes.
    pub(super) bytes: u64,
    pub(super) workers: usize,
}

impl Limits {
    pub(super) fn new(opts: &PatchOptions, indexed: &Indexed) -> Limits {
        let discover = DiscoverOptions {
            max_file_size_kb: opts.max_file_size_kb,
            known_text: Some(std::sync::Arc::new(indexed.files.keys().cloned().collect())),
            ..DiscoverOptions::default()
        };
        let workers = opts
            .max_workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        Limits {
            bytes: discover.max_bytes(),
            discover,
            workers,
        }
    }
}

/// The files on disk and how they differ from the base.
pub(super) struct Detected {
    pub(super) discovery: Discovery,
    /// The changes found (the patch takes them and corrects them as it extracts).
    pub(super) files: FileChanges,
    /// The content hash of each file hashed, by its index in `discovery.files`.
    pub(super) hashed: Vec<(usize, [u8; 32])>,
    /// The stamps to save: the hashed files recorded, the deleted ones forgotten.
    pub(super) stamps: Stamps,
}

impl Detected {
    /// Files on disk after the patch, by path.
    pub(super) fn by_path(&self) -> HashMap<&str, &SourceFile> {
        self.discovery
            .files
            .iter()
            .map(|f| (f.rel_path.as_str(), f))
            .collect()
    }

    /// The new content hash of each file hashed, by path.
    fn new_hashes(&self) -> HashMap<&str, [u8; 32]> {
        self.hashed
            .iter()
            .map(|(i, h)| (self.discovery.files[*i].rel_path.as_str(), *h))
            .collect()
    }
}

/// Step 1: discovery as a build does it, compared with the base's files; refuses options
/// that would drop most of the graph. The stamps of the files just hashed are recorded
/// (and none kept for files gone: stamps only name indexed files, so the gone ones are
/// all deleted), to be written under the writer lock whether or not anything changed, so
/// that a touched file is hashed once.
pub(super) fn detect_changes(
    root: &Path,
    dir: &Path,
    base: &Artifact,
    indexed: &Indexed,
    opts: &PatchOptions,
    limits: &Limits,
    clock: &Clock,
) -> Result<Detected, PatchError> {
    let discovery = discover::discover(root, &limits.discover)?;
    let since_ms = base
        .runs()
        .iter()
        .filter(|r| r.status == RunStatus::Completed && r.generation == base.generation())
        .map(|r| r.started_at_ms)
        .min()
        .or_else(|| base.last_run().map(|r| r.started_at_ms))
        .unwrap_or(0);
    let mut stamps = Stamps::load(dir);
    let (files, hashed) = super::detect(
        &discovery.files,
        indexed,
        opts.mode,
        since_ms,
        &stamps,
        limits.workers,
    );
    super::refuse_dropping_most_files(root, &files.deleted, indexed.files.len())?;
    for (i, hash) in &hashed {
        let f = &discovery.files[*i];
        stamps.record(&f.rel_path, f.stamp, hash, clock.hashed_from_ns);
    }
    stamps.forget(&files.deleted);
    Ok(Detected {
        discovery,
        files,
        hashed,
        stamps,
    })
}

/// A report before anything is committed.
pub(super) fn empty_report(root: &Path, detect_ms: u64) -> PatchReport {
    PatchReport {
        root: root.to_path_buf(),
        files: FileChanges::default(),
        affected: Vec::new(),
        context_files: 0,
        context_cached: 0,
        affected_cached: 0,
        changed_cached: 0,
        facts_cache_missing: false,
        rebuilt: false,
        entities: Vec::new(),
        relationships_added: 0,
        relationships_removed: 0,
        run: None,
        audit: None,
        bytes_written: 0,
        artifact_bytes: 0,
        duration_ms: 0,
        phases: PatchPhases {
            detect_ms,
            ..PatchPhases::default()
        },
    }
}

/// The answer when nothing changed: the stamps saved, nothing committed.
pub(super) fn nothing_changed(
    mut report: PatchReport,
    stamps: &Stamps,
    dir: &Path,
    store: &Store,
    clock: &Clock,
) -> Result<PatchReport, PatchError> {
    let _ = stamps.save(dir);
    report.duration_ms = clock.elapsed_ms();
    report.artifact_bytes = store.size_on_disk()?;
    Ok(report)
}

/// The new facts of the changed files, and how many came whole from the facts cache.
pub(super) struct ChangedFacts {
    pub(super) facts: HashMap<String, FileFacts>,
    pub(super) cached: usize,
}

/// Step 2: the changed files' new facts. One that can no longer be read is gone for the
/// index, as a full build would skip it: `files` is corrected.
pub(super) fn extract_changed(
    extractor: &Extract<'_>,
    detected: &Detected,
    files: &mut FileChanges,
) -> Result<ChangedFacts, PatchError> {
    let changed_present: Vec<String> = files.added.iter().chain(&files.modified).cloned().collect();
    let (got, failed, cached) = extractor.changed(&changed_present, &detected.new_hashes())?;
    let facts = got.into_iter().map(|f| (f.path.clone(), f)).collect();
    for p in failed {
        files.added.retain(|a| *a != p);
        if files.modified.contains(&p) {
            files.modified.retain(|a| *a != p);
            files.deleted.push(p);
        }
    }
    files.deleted.sort();
    Ok(ChangedFacts { facts, cached })
}

/// Every file indexed after the patch, with its language.
pub(super) fn present_after(
    indexed: &Indexed,
    files: &FileChanges,
    facts: &HashMap<String, FileFacts>,
) -> BTreeMap<String, Language> {
    let mut present: BTreeMap<String, Language> = indexed
        .files
        .iter()
        .filter(|(p, _)| !files.deleted.contains(p))
        .map(|(p, v)| (p.clone(), v.1))
        .collect();
    for p in &files.added {
        if let Some(f) = facts.get(p) {
            present.insert(p.clone(), f.language);
        }
    }
    present
}

/// What the resolution produced, and what it read to produce it.
pub(super) struct Resolution {
    pub(super) outcome: Outcome,
    /// The files re-emitted (changed and affected, present).
    pub(super) emit: BTreeSet<String>,
    /// Files whose facts are cached skeletons: context only, never emitted.
    pub(super) skeletal: HashSet<String>,
    pub(super) context_files: u64,
    pub(super) affected_cached: usize,
}

/// What step 3 reads.
pub(super) struct ResolveInputs<'a> {
    pub(super) base: &'a Artifact,
    pub(super) dir: &'a Path,
    pub(super) discovery: &'a Discovery,
    pub(super) files: &'a FileChanges,
    pub(super) present: &'a BTreeMap<String, Language>,
    pub(super) extractor: &'a Extract<'a>,
    pub(super) limits: &'a Limits,
    pub(super) options: ResolveOptions,
}

/// Steps 3 and 4: the files to re-emit (changed and affected), then either the whole tree
/// indexed as a full build does (when re-resolving most of it file by file, parsing each
/// for its references and laying a fragment the size of the artifact over it, costs more)
/// or the context gathered, the emitted files resolved and the fragment cut.
pub(super) fn resolve_changes(
    inputs: &ResolveInputs<'_>,
    emit: BTreeSet<String>,
    facts: &mut HashMap<String, FileFacts>,
    opts: &PatchOptions,
    phases: &mut PatchPhases,
    mark: Instant,
) -> Result<Resolution, PatchError> {
    // Under a configuration, what is active in a file depends on every header its
    // translation units include (`extract::conditions`): the whole tree is indexed again.
    if whole_tree_is_cheaper(emit.len(), inputs.present.len(), opts)
        || inputs.extractor.configured()
    {
        phases.scope_ms = mark.elapsed().as_millis() as u64;
        let mark = Instant::now();
        let whole = build::index_all(
            inputs.dir,
            &inputs.discovery.files,
            inputs.limits.workers,
            inputs.limits.bytes,
            &|_| {},
        )?;
        phases.resolve_ms = mark.elapsed().as_millis() as u64;
        return Ok(Resolution {
            outcome: Outcome::Whole(whole),
            emit,
            skeletal: HashSet::new(),
            context_files: 0,
            affected_cached: 0,
        });
    }
    let mut emit = emit;
    let mut skeletal = HashSet::new();
    let mut affected_cached = 0;
    loop {
        let context = context::gather(
            inputs.base,
            &emit,
            facts,
            &mut skeletal,
            inputs.present,
            inputs.extractor,
            &inputs.options,
        )?;
        affected_cached += context.unchanged_cached;
        phases.scope_ms = mark.elapsed().as_millis() as u64;
        let resolving = Instant::now();
        match resolve_and_cut(inputs, &emit, facts, &context) {
            Ok(outcome) => {
                phases.resolve_ms = resolving.elapsed().as_millis() as u64;
                return Ok(Resolution {
                    outcome,
                    emit,
                    skeletal,
                    context_files: context.files.len() as u64,
                    affected_cached,
                });
            }
            // An edge left a file that is not replaced (a CONTAINS from a class to an
            // out-of-line method defined elsewhere): that file is replaced too, and the
            // resolution runs again.
            Err(more) => emit.extend(more),
        }
    }
}

/// Resolves the emitted files and cuts the fragment; the files an edge leaves for
/// otherwise.
fn resolve_and_cut(
    inputs: &ResolveInputs<'_>,
    emit: &BTreeSet<String>,
    facts: &HashMap<String, FileFacts>,
    context: &context::Context,
) -> Result<Outcome, BTreeSet<String>> {
    let workers = inputs.limits.workers;
    let resolver_input = resolver_inputs(inputs.present, facts, emit, context, workers);
    let mut replaced = emit.clone();
    replaced.extend(inputs.files.deleted.iter().cloned());
    // The base side of the replaced files is read on a thread of its own: much of the
    // resolution runs on one.
    let (resolved, base_ids) = std::thread::scope(|s| {
        let base_ids = s.spawn(|| fragment::BaseIds::of(inputs.base, &replaced));
        let resolved = resolve::resolve_partial(
            resolver_input,
            &emit.iter().cloned().collect(),
            &inputs.options,
        );
        let base_ids = base_ids
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (resolved, base_ids)
    });
    fragment::cut(inputs.base, resolved.graph, &replaced, &base_ids)
        .map(|fragment| Outcome::Fragment(fragment, base_ids))
}

/// Step 5: the run the patch records (its counts are filled in by the commit, which alone
/// knows the merged graph's size).
pub(super) fn patch_run(
    root: &Path,
    base: &Artifact,
    files: &FileChanges,
    resolution: &Resolution,
    present_files: usize,
    skipped_files: usize,
    clock: &Clock,
) -> RunRecord {
    let head = git::read_head(root);
    let summary = format!(
        "{} changes ({} added, {} modified, {} deleted)",
        files.total(),
        files.added.len(),
        files.modified.len(),
        files.deleted.len()
    );
    RunRecord {
        uuid: uuid::Uuid::new_v4().to_string(),
        kind: RunKind::Patch,
        started_at_ms: clock.started_at_ms,
        ended_at_ms: now_ms(),
        status: RunStatus::Completed,
        git_commit: head.commit,
        git_branch: head.branch,
        node_count: 0,
        edge_count: 0,
        file_count: if matches!(resolution.outcome, Outcome::Whole(_)) {
            present_files as u64
        } else {
            resolution.emit.len() as u64
        },
        skipped_files: skipped_files as u64,
        duration_ms: clock.started.elapsed().as_millis() as u64,
        generation: base.generation() + 1,
        message: summary,
    }
}

/// What the commit and the work beside it give.
pub(super) struct Committed {
    pub(super) commit: CommitInfo,
    pub(super) entities: Vec<EntityChange>,
    pub(super) relationships_added: u64,
    pub(super) relationships_removed: u64,
}

/// What step 6 writes and compares.
pub(super) struct CommitInputs<'a> {
    pub(super) base: &'a Artifact,
    pub(super) dir: &'a Path,
    pub(super) cache: &'a FactsCache,
    pub(super) facts: &'a HashMap<String, FileFacts>,
    pub(super) present: &'a BTreeMap<String, Language>,
    pub(super) files: &'a FileChanges,
}

/// Step 6: commits the outcome under the writer lock. The entity-level changes (of the
/// replaced files, or of the changed ones when the whole tree was indexed) and the edge
/// counts (of the files re-resolved) only read the base and the new graph: they are
/// worked out on a second thread while the commit writes (each takes seconds on a large
/// patch). The files parsed here join the facts cache.
pub(super) fn commit_beside_changes(
    writer: &mut WriterLock<'_>,
    inputs: &CommitInputs<'_>,
    resolution: Resolution,
    run: RunRecord,
) -> Result<Committed, PatchError> {
    let base = inputs.base;
    let changed: BTreeSet<String> = inputs.files.paths().cloned().collect();
    let (new_graph, entity_files, edge_files, base_ids) = match &resolution.outcome {
        Outcome::Fragment(f, ids) => (
            &f.graph,
            &f.replaced_files,
            f.replaced_files.clone(),
            Some(ids),
        ),
        Outcome::Whole(w) => {
            let mut replaced = resolution.emit.clone();
            replaced.extend(inputs.files.deleted.iter().cloned());
            (&w.graph, &changed, replaced, None)
        }
    };
    let (commit, (entities, (added, removed))) = std::thread::scope(|s| {
        let report_side = s.spawn(|| {
            // A whole tree indexed has not read the base side yet.
            let read;
            let (entity_ids, edge_ids) = match base_ids {
                Some(ids) => (ids, ids),
                None => {
                    read = (
                        fragment::BaseIds::of(base, entity_files),
                        fragment::BaseIds::of(base, &edge_files),
                    );
                    (&read.0, &read.1)
                }
            };
            (
                fragment::changes(base, entity_files, entity_ids, new_graph),
                fragment::edge_delta(base, &edge_files, edge_ids, new_graph),
            )
        });
        let commit = commit_outcome(writer, inputs, &resolution, run);
        let side = report_side
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // Every patch a test runs checks the fast change records and edge counts
        // against the plain first versions.
        #[cfg(test)]
        {
            let reference = (
                fragment::reference::changes(base, entity_files, new_graph),
                fragment::reference::edge_delta(base, &edge_files, new_graph),
            );
            assert_eq!(side, reference);
        }
        (commit, side)
    });
    let commit = commit?;
    if let Outcome::Whole(whole) = resolution.outcome {
        whole.pack.finish(inputs.dir);
    }
    Ok(Committed {
        commit,
        entities,
        relationships_added: added,
        relationships_removed: removed,
    })
}

/// Commits a fragment over the base, or the whole tree as a fresh base.
fn commit_outcome(
    writer: &mut WriterLock<'_>,
    inputs: &CommitInputs<'_>,
    resolution: &Resolution,
    run: RunRecord,
) -> Result<CommitInfo, PatchError> {
    match &resolution.outcome {
        Outcome::Fragment(fragment, _) => {
            let commit = writer.commit_fragment(inputs.base, fragment, run)?;
            // The files parsed here join the cache (changed ones under their new hashes),
            // so the next patch finds them; still under the writer lock, which guards the
            // cache too. The cache is an accelerator: failing to write it fails nothing.
            let _ = save_parsed(
                inputs.dir,
                inputs.cache,
                inputs.facts,
                &resolution.skeletal,
                inputs.present,
            );
            Ok(commit)
        }
        Outcome::Whole(whole) => Ok(build::commit_whole(writer, &whole.graph, run)?.0),
    }
}

/// The affected files the report lists: the re-emitted ones that did not change, and the
/// affected ones that are gone.
pub(super) fn affected_files(
    emit: &BTreeSet<String>,
    changed: &BTreeSet<String>,
    affected_before: BTreeSet<String>,
    present: &BTreeMap<String, Language>,
) -> Vec<String> {
    emit.iter()
        .filter(|p| !changed.contains(*p))
        .cloned()
        .chain(
            affected_before
                .into_iter()
                .filter(|p| !present.contains_key(p)),
        )
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
