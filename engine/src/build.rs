//! A full build of a repository: discover the sources, extract them in parallel, resolve
//! references into one graph, and commit it to the store as a new generation with its run.
//!
//! The writer lock is taken before any work starts, so two builds of one repository cannot
//! interleave; readers of the previous generation are never disturbed, and a build that
//! dies half way leaves the previous generation current (the store's commit is atomic).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use batho_schema::NodeKind;
use batho_storage::input::GraphBuilder;
use batho_storage::{
    CommitInfo, NodeScores, RunKind, RunRecord, RunStatus, StorageError, Store, WriterLock,
};

use crate::discover::{self, DiscoverOptions, SkipReason, SkippedFile};
use crate::extract::{Extractor, FileFacts};
use crate::resolve::{self, ResolveOptions};
use crate::{algo, facts_cache, git, source};

/// The folder, inside a repository, that holds its artifact.
pub const ARTIFACT_DIR: &str = ".batho";

/// The artifact folder of the repository at `root`.
pub fn artifact_dir(root: &Path) -> PathBuf {
    root.join(ARTIFACT_DIR)
}

/// What a build may do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// Replace an existing artifact (a new generation built from scratch).
    pub full: bool,
    /// Parser threads; `None` uses every core.
    pub max_workers: Option<usize>,
    /// Files larger than this are skipped and reported; `None` uses the discovery default.
    pub max_file_size_kb: Option<u64>,
    /// A compilation database to evaluate `#if` conditions with; `None` looks for
    /// `compile_commands.json`, then `batho.yaml`'s `defines:`, at the root (see
    /// [`crate::config`]).
    pub compile_commands: Option<PathBuf>,
}

/// Progress reported while a build runs, for progress bars.
#[derive(Clone, Debug)]
pub enum BuildEvent {
    /// Discovery finished.
    Discovered {
        /// Files that will be parsed.
        files: usize,
        /// Their total size in bytes.
        bytes: u64,
    },
    /// One more file was parsed; `bytes` is the running total.
    Parsed {
        /// Files parsed so far.
        done: usize,
        /// Bytes parsed so far.
        bytes: u64,
    },
    /// All files are parsed; references are being resolved.
    Resolving,
    /// The graph is being written to the store (communities are detected meanwhile).
    Writing,
}

/// What a finished build did.
#[derive(Clone, Debug)]
pub struct BuildReport {
    /// The repository root.
    pub root: PathBuf,
    /// The recorded run.
    pub run: RunRecord,
    /// Entities (nodes that are neither files nor external stubs).
    pub entities: u64,
    /// Relationships (edges).
    pub relationships: u64,
    /// Source files indexed.
    pub files: u64,
    /// Node count per kind name, for every kind present.
    pub kinds: BTreeMap<&'static str, u64>,
    /// Files not indexed, with the reason.
    pub skipped: Vec<SkippedFile>,
    /// Files that were not valid UTF-8 and were decoded lossily.
    pub lossy_files: Vec<String>,
    /// Files whose syntax tree contains errors (indexed as far as tree-sitter could).
    pub files_with_syntax_errors: u64,
    /// Those files, by path relative to the root, sorted.
    pub syntax_error_files: Vec<String>,
    /// Bytes of source parsed.
    pub source_bytes: u64,
    /// Bytes the commit wrote to the store.
    pub bytes_written: u64,
    /// Where the time went.
    pub phases: PhaseTimes,
    /// Where a `--full` build moved an artifact it could not build over (written in another
    /// on-disk format version, or with a corrupt manifest), kept rather than deleted.
    pub moved_aside: Option<PathBuf>,
    /// Why it was moved: `in an older or newer format`, `with a corrupt manifest`.
    pub moved_aside_because: Option<&'static str>,
}

/// Wall time of each phase of a build, in milliseconds.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct PhaseTimes {
    /// Finding the files.
    pub discover_ms: u64,
    /// Reading and parsing them, and extracting facts (in parallel).
    pub extract_ms: u64,
    /// Resolving references into the graph.
    pub resolve_ms: u64,
    /// Detecting communities and computing PageRank, on a second thread while the other
    /// segments are written
    /// (so this time is part of `write_ms`, not added to it).
    pub communities_ms: u64,
    /// Writing and committing the generation.
    pub write_ms: u64,
    /// Summarizing the communities of the committed generation and storing the summary
    /// (`algo::community_summary`), after the commit.
    pub summary_ms: u64,
}

/// Why a build did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The path is not a directory.
    #[error("not a directory: {0}")]
    NotADirectory(PathBuf),
    /// The tree has no C or C++ file to index (nothing was written).
    #[error("no C or C++ source file to index in {}{}", root.display(), if *skipped > 0 { format!(" ({skipped} files skipped: too large or unreadable)") } else { String::new() })]
    NothingToIndex {
        /// The repository root.
        root: PathBuf,
        /// Source files discovery left out (over the size limit, unreadable).
        skipped: usize,
    },
    /// An artifact exists and `full` was not asked for.
    #[error("an artifact already exists at {0}")]
    ArtifactExists(PathBuf),
    /// Discovery failed.
    #[error(transparent)]
    Discover(#[from] discover::DiscoverError),
    /// The extractor could not be set up (a grammar failed to load).
    #[error(transparent)]
    Extract(#[from] crate::extract::ExtractError),
    /// The configuration (a compilation database) could not be read.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The configuration could not be recorded in the artifact folder.
    #[error("cannot record the configuration in the artifact folder: {0}")]
    RecordConfig(std::io::Error),
    /// A parser thread panicked (a bug: extraction must never panic).
    #[error("a parser thread panicked; please report this with the file that caused it")]
    WorkerPanicked,
    /// The store refused the commit or could not be opened.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// An artifact of another format version could not be moved out of the way.
    #[error("cannot move the old-format artifact {} to {}: {source}", from.display(), to.display())]
    MoveAside {
        /// The artifact folder.
        from: PathBuf,
        /// Where it was to go.
        to: PathBuf,
        /// The rename's error.
        source: std::io::Error,
    },
}

impl BuildError {
    /// The way out of an error about the artifact, for a front end to word (where
    /// [`BuildError::hint`] has nothing more specific).
    pub fn remedy(&self) -> Option<batho_storage::Remedy> {
        match self {
            BuildError::ArtifactExists(_) => Some(batho_storage::Remedy::Rebuild),
            BuildError::Storage(error) => error.remedy(),
            _ => None,
        }
    }

    /// What to check, in words that name no command of a front end (each words
    /// [`BuildError::remedy`] its own way).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            BuildError::NothingToIndex { .. } => Some(
                "batho indexes .c, .h, .cc, .cpp, .hpp and similar files; check the path, .gitignore, .bathoignore and the file size limit",
            ),
            _ => None,
        }
    }

    /// Whether the request itself is wrong (the path, or a tree with nothing to index)
    /// rather than the build failing: front ends exit with 2 for these.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            BuildError::NotADirectory(_) | BuildError::NothingToIndex { .. }
        )
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Renames an artifact of another format version to `.batho-format<N>-<ms>` beside it:
/// a hidden folder, so discovery never indexes it, and nothing of the user's is deleted.
fn move_aside(root: &Path, dir: &Path) -> Result<PathBuf, BuildError> {
    let version = std::fs::read(dir.join("DBID"))
        .ok()
        .and_then(|b| {
            b.get(8..12)
                .map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
        })
        .unwrap_or(0);
    let aside = root.join(format!("{ARTIFACT_DIR}-format{version}-{}", now_ms()));
    std::fs::rename(dir, &aside).map_err(|e| BuildError::MoveAside {
        from: dir.to_path_buf(),
        to: aside.clone(),
        source: e,
    })?;
    Ok(aside)
}

/// Where an artifact a full build could not build over went, and why.
type SetAside = (PathBuf, &'static str);

/// Opens the store a build writes into. A full build sets aside an artifact it cannot
/// build over (another format version, or a MANIFEST that does not decode) and starts
/// afresh; the old folder is renamed beside it, never deleted.
fn open_store_for_build(
    root: &Path,
    dir: &Path,
    full: bool,
) -> Result<(Store, Option<SetAside>), BuildError> {
    let store = Store::create_or_open(dir);
    if !full {
        return Ok((store?, None));
    }
    let unusable = match &store {
        Err(StorageError::UnsupportedFormat { .. }) => Some("in an older or newer format"),
        Err(StorageError::Corrupt { .. }) => Some("with a corrupt manifest"),
        Ok(opened) => match opened.current_manifest() {
            Err(StorageError::Corrupt { .. }) => Some("with a corrupt manifest"),
            _ => None,
        },
        Err(_) => None,
    };
    match unusable {
        Some(because) => {
            drop(store);
            let aside = move_aside(root, dir)?;
            Ok((Store::create_or_open(dir)?, Some((aside, because))))
        }
        None => Ok((store?, None)),
    }
}

/// Builds the artifact of the repository at `root`.
pub fn build(
    root: &Path,
    opts: &BuildOptions,
    progress: &(dyn Fn(BuildEvent) + Sync),
) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let started_at_ms = now_ms();
    let hashed_from_ns = crate::stamps::now_ns();
    if !root.is_dir() {
        return Err(BuildError::NotADirectory(root.to_path_buf()));
    }
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    // Discovery comes first so that a tree with nothing to index leaves nothing behind:
    // no `.batho` folder, no empty generation.
    let discovery = discover::discover(
        &root,
        &DiscoverOptions {
            max_file_size_kb: opts.max_file_size_kb,
            ..DiscoverOptions::default()
        },
    )?;
    if discovery.files.is_empty() {
        return Err(BuildError::NothingToIndex {
            root,
            skipped: discovery.skipped.len(),
        });
    }
    let config = crate::config::Configuration::discover(&root, opts.compile_commands.as_deref())?;
    let dir = artifact_dir(&root);
    let (store, aside) = open_store_for_build(&root, &dir, opts.full)?;
    let (moved_aside, moved_aside_because) = match aside {
        Some((path, because)) => (Some(path), Some(because)),
        None => (None, None),
    };
    let mut writer = store.lock_writer()?;
    if !opts.full && !store.generations()?.is_empty() {
        return Err(BuildError::ArtifactExists(dir));
    }

    let total_bytes = discovery.files.iter().map(|f| f.size).sum();
    let mut phases = PhaseTimes {
        discover_ms: started.elapsed().as_millis() as u64,
        ..PhaseTimes::default()
    };
    progress(BuildEvent::Discovered {
        files: discovery.files.len(),
        bytes: total_bytes,
    });

    let workers = opts
        .max_workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Discovery already left out files over the limit; reading applies it again so a file
    // that grew in between is still refused rather than parsed.
    let limit = DiscoverOptions {
        max_file_size_kb: opts.max_file_size_kb,
        ..DiscoverOptions::default()
    }
    .max_bytes();
    // Recorded before indexing: `index_all` (and every later patch) reads it there.
    crate::config::Configuration::record(&dir, config.as_ref())
        .map_err(BuildError::RecordConfig)?;
    let whole = index_all(&dir, &discovery.files, workers, limit, progress)?;
    phases.extract_ms = whole.extract_ms;
    phases.resolve_ms = whole.resolve_ms;
    let mut skipped = discovery.skipped;
    skipped.extend(whole.skipped);
    skipped.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    let (graph, file_count, pack) = (whole.graph, whole.file_count, whole.pack);
    let (lossy_files, syntax_error_files) = (whole.lossy_files, whole.syntax_error_files);

    let mut kinds = BTreeMap::new();
    let mut entities = 0;
    for n in &graph.nodes {
        *kinds.entry(n.kind.name()).or_insert(0u64) += 1;
        if !matches!(n.kind, NodeKind::File | NodeKind::External) {
            entities += 1;
        }
    }
    let relationships = graph.edges.len() as u64;

    progress(BuildEvent::Writing);
    let mark = Instant::now();
    let head = git::read_head(&root);
    let generation = store.generations()?.last().copied().unwrap_or(0) + 1;
    let run = RunRecord {
        uuid: uuid::Uuid::new_v4().to_string(),
        kind: RunKind::Build,
        started_at_ms,
        ended_at_ms: now_ms(),
        status: RunStatus::Completed,
        git_commit: head.commit,
        git_branch: head.branch,
        node_count: graph.nodes.len() as u64,
        edge_count: relationships,
        file_count,
        skipped_files: skipped.len() as u64,
        duration_ms: started.elapsed().as_millis() as u64,
        generation,
        message: String::new(),
    };
    let (commit, communities_ms) = commit_whole(&mut writer, &graph, run.clone())?;
    pack.finish(&dir);
    // An accelerator for the next patch, like the facts cache: failing to write it fails
    // nothing.
    let _ = crate::stamps::save_for_build(&dir, &discovery.files, &graph, hashed_from_ns);
    phases.write_ms = mark.elapsed().as_millis() as u64;
    let mark = Instant::now();
    store_community_summary(&store);
    phases.summary_ms = mark.elapsed().as_millis() as u64;
    phases.communities_ms = communities_ms;
    let run = RunRecord {
        generation: commit.generation,
        ..run
    };
    Ok(BuildReport {
        root,
        run,
        entities,
        relationships,
        files: file_count,
        kinds,
        skipped,
        lossy_files,
        files_with_syntax_errors: syntax_error_files.len() as u64,
        syntax_error_files,
        source_bytes: total_bytes,
        bytes_written: commit.bytes_written,
        phases,
        moved_aside,
        moved_aside_because,
    })
}

/// Computes the community summary of the generation just committed and stores it beside
/// the artifact (`algo::community_summary`), so that readers do not compute it. An
/// accelerator, like the stamps: failing to write it fails nothing.
fn store_community_summary(store: &Store) {
    let Ok(art) = store.open_current() else {
        return;
    };
    let no_limit = &mut |_| Ok::<(), std::convert::Infallible>(());
    let Ok(summary) = algo::community_summary::summarize(&art, no_limit);
    let _ = algo::community_summary::store(&art, &summary);
}

/// Commits the graph of a whole tree as a new base generation. Its communities and
/// PageRank are computed on a second thread meanwhile: the writer encodes the segments
/// that do not need them first (on a kernel, each side takes about ten seconds). Returns
/// the commit and the milliseconds the two algorithms took.
pub fn commit_whole(
    writer: &mut WriterLock<'_>,
    graph: &GraphBuilder,
    run: RunRecord,
) -> Result<(CommitInfo, u64), StorageError> {
    std::thread::scope(|s| {
        let mut detection = Some(s.spawn(|| {
            let mark = Instant::now();
            let communities = algo::communities(graph);
            let pagerank = algo::pagerank(graph);
            let scores = NodeScores {
                communities,
                pagerank,
            };
            (scores, mark.elapsed().as_millis() as u64)
        }));
        let mut communities_ms = 0;
        let mut scores = || match detection.take().map(|h| h.join()) {
            Some(Ok((scores, ms))) => {
                communities_ms = ms;
                // The detection's working memory was freed in its thread's arena: hand it
                // back before the nodes segment, the write's last and largest.
                crate::mem::release_freed_memory();
                scores
            }
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => NodeScores::default(),
        };
        let commit = writer.commit_with_scores(graph, &mut scores, run)?;
        Ok((commit, communities_ms))
    })
}

/// Every file of a tree indexed as a full build does it: parsed (each skeleton going to a
/// fresh facts-cache pack) and resolved into one graph. Shared by the build and by a patch
/// whose changes reach most of the tree; communities are left to [`commit_whole`].
pub(crate) struct WholeTree {
    /// The resolved graph (communities not set: [`commit_whole`] detects them).
    pub(crate) graph: GraphBuilder,
    /// Files indexed.
    pub(crate) file_count: u64,
    /// Files that could not be indexed after all (unreadable, binary, too large by now).
    pub(crate) skipped: Vec<SkippedFile>,
    /// Files decoded lossily.
    pub(crate) lossy_files: Vec<String>,
    /// Files whose syntax tree has errors.
    pub(crate) syntax_error_files: Vec<String>,
    /// Parsing (milliseconds).
    pub(crate) extract_ms: u64,
    /// Resolution (milliseconds).
    pub(crate) resolve_ms: u64,
    /// The facts-cache pack the parser threads filled.
    pub(crate) pack: WholePack,
}

/// The fresh facts-cache pack of a whole-tree indexing, to finish once the generation
/// is committed.
pub(crate) struct WholePack(Option<Mutex<facts_cache::PackWriter>>);

impl WholePack {
    /// Finishes the pack and deletes every other one: older packs describe older file
    /// versions too. Its entries are content-addressed, so finishing it before or after
    /// the commit is the same: it can never describe other bytes than the ones it is
    /// asked for. The cache is an accelerator: failing to write it fails nothing.
    pub(crate) fn finish(self, dir: &Path) {
        if let Some(w) = self.0.and_then(|p| p.into_inner().ok())
            && let Ok(kept) = w.finish()
        {
            facts_cache::clear_except(dir, &kept);
        }
    }
}

/// Indexes every file of `files` for the artifact at `dir` (see [`WholeTree`]).
pub(crate) fn index_all(
    dir: &Path,
    files: &[discover::SourceFile],
    workers: usize,
    limit: u64,
    progress: &(dyn Fn(BuildEvent) + Sync),
) -> Result<WholeTree, BuildError> {
    let mark = Instant::now();
    let pack = facts_cache::PackWriter::create(&facts_cache::cache_dir(dir))
        .ok()
        .map(Mutex::new);
    let config = crate::config::Configuration::recorded(dir).map(std::sync::Arc::new);
    // Cached facts are keyed by content alone: under a configuration the pack is left
    // empty (finishing it still clears the older packs), and patches parse.
    let fill = pack.as_ref().filter(|_| config.is_none());
    let parsed = extract_all(files, workers, limit, fill, config.clone(), progress)?;
    let extract_ms = mark.elapsed().as_millis() as u64;

    let mut skipped = Vec::new();
    let mut lossy_files = Vec::new();
    let mut facts = Vec::with_capacity(parsed.len());
    let mut scanned = Vec::new();
    let mut syntax_error_files = Vec::new();
    for (file, outcome) in files.iter().zip(parsed) {
        match outcome {
            FileOutcome::Parsed {
                facts: f,
                lossy,
                directives,
            } => {
                scanned.extend(directives);
                if lossy {
                    lossy_files.push(file.rel_path.clone());
                }
                if f.parse_errors > 0 {
                    syntax_error_files.push(file.rel_path.clone());
                }
                facts.push(f);
            }
            FileOutcome::Skipped(reason) => skipped.push(SkippedFile {
                rel_path: file.rel_path.clone(),
                reason,
            }),
        }
    }
    if let Some(config) = &config {
        evaluate_configuration(files, &mut facts, scanned, config);
    }
    let file_count = facts.len() as u64;

    progress(BuildEvent::Resolving);
    let mark = Instant::now();
    let graph = resolve_whole(facts, workers);
    let resolve_ms = mark.elapsed().as_millis() as u64;
    Ok(WholeTree {
        graph,
        file_count,
        skipped,
        lossy_files,
        syntax_error_files,
        extract_ms,
        resolve_ms,
        pack: WholePack(pack),
    })
}

/// Marks what `config` leaves out of the parsed files `facts` (see
/// `extract::conditions`), whose directive lines the parser threads read (`scanned`, one
/// per file of `facts`): every translation unit is run, and the inactive lines' entities
/// and uses are marked.
pub(crate) fn evaluate_configuration(
    files: &[discover::SourceFile],
    facts: &mut [FileFacts],
    scanned: Vec<crate::extract::conditions::Scanned>,
    config: &crate::config::Configuration,
) -> u64 {
    use crate::extract::conditions;
    debug_assert_eq!(scanned.len(), facts.len(), "one scan per parsed file");
    let paths: Vec<&str> = facts.iter().map(|f| f.path.as_str()).collect();
    let root_dirs = files.first().and_then(|f| {
        let depth = f.rel_path.split('/').count();
        f.abs_path.ancestors().nth(depth).map(Path::to_path_buf)
    });
    let config = crate::config::Configuration {
        include_dirs: config
            .include_dirs
            .iter()
            .filter_map(|d| {
                let p = Path::new(d);
                if p.is_absolute() {
                    let root = root_dirs.as_deref()?;
                    let canonical = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
                    let rel = canonical.strip_prefix(root).ok()?;
                    Some(rel.to_string_lossy().replace('\\', "/"))
                } else {
                    Some(d.clone())
                }
            })
            .collect(),
        ..config.clone()
    };
    let tree = conditions::Tree {
        paths: &paths,
        scanned: &scanned,
    };
    let evaluations = conditions::evaluate_tree(&tree, &config);
    let mut undecided = 0;
    for (f, evaluation) in facts.iter_mut().zip(&evaluations) {
        undecided += u64::from(evaluation.undecided);
        crate::extract::mark_inactive(f, evaluation);
    }
    undecided
}

/// Resolves the facts of a whole tree into the graph a build commits (communities not
/// set: [`commit_whole`] detects them), on `workers` threads.
pub fn resolve_whole(facts: Vec<FileFacts>, workers: usize) -> GraphBuilder {
    let resolved = resolve::resolve(
        facts,
        &ResolveOptions {
            threads: workers,
            ..ResolveOptions::default()
        },
    );
    let mut graph = resolved.graph;
    // Nothing is interned after resolution: the lookup table only takes room while the
    // graph is written.
    graph.release_string_index();
    crate::mem::release_freed_memory();
    graph
}

// Nearly every file parses: boxing the large variant would only add an allocation per file.
#[allow(clippy::large_enum_variant)]
pub(crate) enum FileOutcome {
    Parsed {
        facts: FileFacts,
        lossy: bool,
        /// The file's directive lines, read from the text the parser had, under a
        /// configuration (for `evaluate_configuration`); `None` without one.
        directives: Option<crate::extract::conditions::Scanned>,
    },
    Skipped(SkipReason),
}

/// Parses every file on `workers` threads; results come back in the order of `files`.
/// With `pack`, each file's skeleton is also appended to that facts-cache pack (a pack
/// that fails to take one is simply left incomplete: a cache miss later).
pub(crate) fn extract_all(
    files: &[discover::SourceFile],
    workers: usize,
    max_bytes: u64,
    pack: Option<&Mutex<facts_cache::PackWriter>>,
    config: Option<std::sync::Arc<crate::config::Configuration>>,
    progress: &(dyn Fn(BuildEvent) + Sync),
) -> Result<Vec<FileOutcome>, BuildError> {
    // Largest files first, so that one big file (the 9 MB sqlite amalgamation) starts at
    // once instead of last and the threads finish together; results keep `files` order.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(files[i].size), i));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let bytes_done = AtomicU64::new(0);
    let slots: Vec<Mutex<Option<FileOutcome>>> = files.iter().map(|_| Mutex::new(None)).collect();
    // Grammar loading is checked once up front so a broken grammar is one clear error,
    // not one per worker.
    Extractor::new()?;
    crossbeam::scope(|s| {
        for _ in 0..workers.min(files.len().max(1)) {
            s.spawn(|_| {
                let Ok(mut extractor) = Extractor::new() else {
                    return;
                };
                extractor.set_configured(config.is_some());
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let file = &files[i];
                    let outcome = match source::read_source(&file.abs_path, max_bytes) {
                        Ok(text) => match source::detect_language(&file.rel_path, &text.text) {
                            Some(lang) => {
                                let mut facts = extractor.extract(&file.rel_path, lang, &text.text);
                                facts.adopt_file_bytes(&text);
                                if let Some(pack) = pack {
                                    let rows = facts_cache::stored_entries(&facts);
                                    if let Ok(mut w) = pack.lock() {
                                        for (key, stored, filter) in &rows {
                                            let _ = w.add_stored(*key, stored, filter);
                                        }
                                    }
                                }
                                FileOutcome::Parsed {
                                    facts,
                                    lossy: text.lossy,
                                    directives: config
                                        .is_some()
                                        .then(|| crate::extract::conditions::scan(&text.text)),
                                }
                            }
                            None => FileOutcome::Skipped(SkipReason::Unreadable(
                                "not a C or C++ source file".into(),
                            )),
                        },
                        Err(reason) => FileOutcome::Skipped(reason),
                    };
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(outcome);
                    }
                    let b = bytes_done.fetch_add(file.size, Ordering::Relaxed) + file.size;
                    let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(BuildEvent::Parsed { done: d, bytes: b });
                }
            });
        }
    })
    .map_err(|_| BuildError::WorkerPanicked)?;
    Ok(slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or(FileOutcome::Skipped(SkipReason::Unreadable(
                    "parser thread failed".into(),
                )))
        })
        .collect())
}

#[cfg(test)]
mod tests;
