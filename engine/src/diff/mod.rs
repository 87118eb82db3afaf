//! What changed between two generations of an artifact: node-level changes (added,
//! removed, modified, renamed, each with its before and after), file-level changes and
//! relationship statistics; plus the run history questions around it ("the delta of this
//! run", "everything since that run").
//!
//! [`diff_generations`] compares two open [`Artifact`]s. The definitions it applies:
//!
//! - Nodes are matched by stable id (`file:qualified_name`, stubs by their stub id).
//! - **added** / **removed**: an id only in the new / old generation (and not paired as a
//!   rename).
//! - **modified**: same id, and the entity's content hash changed (when both generations
//!   carry one), or its kind or signature changed; when a hash is missing (zero: file nodes
//!   of older builds, external stubs) a changed line span counts too. A file node is also
//!   modified when any entity in its file changed. A node whose content is unchanged but
//!   whose lines moved (an edit above it) is *not* modified; such nodes are counted in
//!   [`DiffStats::nodes_moved`].
//! - **renamed**: a removed and an added node of the same kind in the same file, paired
//!   one to one: first those with the same (non-zero) content hash (e.g. a method whose
//!   class was renamed), then those whose line span is equal and whose signature equals
//!   the old one with the old name replaced by the new one (the source text itself differs
//!   by the name, so its hash does). Among candidates the closest start line wins.
//! - Relationships are compared as multisets of `(source, type, target)` over the node
//!   matching (renamed nodes keep their edges), so a call that only moved lines is not a
//!   change. Their statistics are totals; they are not filtered.
//!
//! Speed: files are merge-joined by path; a file whose file node carries the same
//! non-zero content hash (blake3 of its bytes) in both generations is matched position by
//! position without reading a string. Otherwise its entities are compared (ids, hashes,
//! signatures). Edges cost one pass of integer work. A result is cached per
//! (artifact, generation pair), since generations are immutable.

mod compute;
mod runs;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use batho_storage::{Artifact, NodeIdx, RunRecord};
use serde::Serialize;

pub use runs::{
    DiffError, RunPair, find_run, open_generation, open_pair, predecessor, resolve_delta,
    resolve_since, retained_generations,
};

/// The kind of a node-level change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Only in the new generation.
    Added,
    /// Only in the old generation.
    Removed,
    /// In both, changed (see the module documentation).
    Modified,
    /// A removed and an added node paired as one renamed entity.
    Renamed,
}

impl ChangeKind {
    /// Every kind, in display order.
    pub const ALL: [ChangeKind; 4] = [
        ChangeKind::Added,
        ChangeKind::Removed,
        ChangeKind::Modified,
        ChangeKind::Renamed,
    ];

    /// The lowercase name (`added`).
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Modified => "modified",
            ChangeKind::Renamed => "renamed",
        }
    }

    /// Parses a name case-insensitively.
    pub fn parse(s: &str) -> Option<ChangeKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
    }
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One side of a change: the node as one generation has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeSnapshot {
    /// Stable id.
    pub id: String,
    /// Simple name.
    pub name: String,
    /// Node kind name (`Function`).
    pub kind: &'static str,
    /// Repo-relative file (`""` for stubs).
    pub file: String,
    /// First line.
    pub start_line: u32,
    /// Last line.
    pub end_line: u32,
    /// Declaration text (`""` when none).
    pub signature: String,
}

impl NodeSnapshot {
    pub(crate) fn of(a: &Artifact, n: u32) -> NodeSnapshot {
        let r = a.node(NodeIdx(n));
        NodeSnapshot {
            id: r.id().into_owned(),
            name: r.name().into_owned(),
            kind: r.kind().name(),
            file: r.file().into_owned(),
            start_line: r.start_line(),
            end_line: r.end_line(),
            signature: r.signature().into_owned(),
        }
    }
}

/// One node-level change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeChange {
    /// What happened.
    pub change: ChangeKind,
    /// The node in the old generation (`None` when added).
    pub before: Option<NodeSnapshot>,
    /// The node in the new generation (`None` when removed).
    pub after: Option<NodeSnapshot>,
    /// What differs, for modified and renamed nodes: `name`, `kind`, `content`,
    /// `signature`, `lines` (span, when no hash), `entities` (a file node's contents).
    pub changed: Vec<&'static str>,
}

impl NodeChange {
    /// The side that best describes the node now: after, else before.
    pub fn current(&self) -> &NodeSnapshot {
        self.after
            .as_ref()
            .or(self.before.as_ref())
            .expect("a change has at least one side")
    }

    fn touches_file(&self, prefix: &str) -> bool {
        [&self.before, &self.after]
            .into_iter()
            .flatten()
            .any(|s| s.file.starts_with(prefix))
    }

    fn touches_entity(&self, id: &str) -> bool {
        [&self.before, &self.after]
            .into_iter()
            .flatten()
            .any(|s| s.id == id)
    }
}

/// One file that changed, with its node-level change counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// Repo-relative path.
    pub path: String,
    /// Added, removed or modified (never renamed: a moved file is removed plus added).
    pub change: ChangeKind,
    /// Nodes added in it.
    pub added: u64,
    /// Nodes removed from it.
    pub removed: u64,
    /// Nodes modified in it (its file node included).
    pub modified: u64,
    /// Nodes renamed in it.
    pub renamed: u64,
}

/// Added and removed relationships of one type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EdgeCounts {
    /// In the new generation only.
    pub added: u64,
    /// In the old generation only.
    pub removed: u64,
}

/// Totals of a diff (never filtered).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DiffStats {
    /// Nodes added.
    pub nodes_added: u64,
    /// Nodes removed.
    pub nodes_removed: u64,
    /// Nodes modified.
    pub nodes_modified: u64,
    /// Nodes renamed.
    pub nodes_renamed: u64,
    /// Unchanged nodes whose lines moved.
    pub nodes_moved: u64,
    /// Files added.
    pub files_added: u64,
    /// Files removed.
    pub files_removed: u64,
    /// Files modified.
    pub files_modified: u64,
    /// Files in both generations skipped as unchanged by their content hash alone.
    pub files_skipped_by_hash: u64,
    /// Relationships added.
    pub edges_added: u64,
    /// Relationships removed.
    pub edges_removed: u64,
    /// Added and removed relationships per type name, for types with any.
    pub edges_by_type: BTreeMap<&'static str, EdgeCounts>,
}

impl DiffStats {
    /// Node changes of one kind.
    pub fn nodes(&self, k: ChangeKind) -> u64 {
        match k {
            ChangeKind::Added => self.nodes_added,
            ChangeKind::Removed => self.nodes_removed,
            ChangeKind::Modified => self.nodes_modified,
            ChangeKind::Renamed => self.nodes_renamed,
        }
    }

    /// Files changed in any way.
    pub fn files_changed(&self) -> u64 {
        self.files_added + self.files_removed + self.files_modified
    }
}

/// Which changes to return, and which page of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffFilter {
    /// Change kinds to keep (empty: all).
    pub kinds: Vec<ChangeKind>,
    /// Keep changes whose before or after file starts with this (an exact path or a
    /// folder prefix); also filters [`GenerationDiff::files`].
    pub file: Option<String>,
    /// Keep changes whose before or after id is exactly this.
    pub entity: Option<String>,
    /// Matching changes to skip.
    pub offset: usize,
    /// Most changes to return (`None`: all).
    pub limit: Option<usize>,
}

impl DiffFilter {
    fn keeps(&self, c: &NodeChange) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&c.change))
            && self.file.as_deref().is_none_or(|f| c.touches_file(f))
            && self.entity.as_deref().is_none_or(|e| c.touches_entity(e))
    }
}

/// The result of comparing two generations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GenerationDiff {
    /// The older generation.
    pub old_generation: u64,
    /// The newer generation.
    pub new_generation: u64,
    /// Totals over the whole diff.
    pub stats: DiffStats,
    /// Changed files (filtered by [`DiffFilter::file`]), by path.
    pub files: Vec<FileChange>,
    /// Changes matching the filter, before pagination.
    pub total: usize,
    /// Matching changes of each kind, before pagination.
    pub matching: BTreeMap<&'static str, usize>,
    /// The page of matching changes, ordered by file, line and id.
    pub changes: Vec<NodeChange>,
    /// Milliseconds spent comparing (0 when served from the cache).
    pub elapsed_ms: u64,
}

/// The unfiltered comparison, as cached.
#[derive(Debug)]
pub(crate) struct FullDiff {
    pub(crate) stats: DiffStats,
    pub(crate) files: Vec<FileChange>,
    pub(crate) changes: Vec<NodeChange>,
}

type CacheKey = (PathBuf, [u8; 16], u64, u64);

/// The last few comparisons; a tool call that pages through a delta or asks for its
/// statistics and its changes separately compares the generations once.
static CACHE: Mutex<Vec<(CacheKey, Arc<FullDiff>)>> = Mutex::new(Vec::new());
const CACHE_SIZE: usize = 4;

fn full_diff(old: &Artifact, new: &Artifact) -> (Arc<FullDiff>, u64) {
    let key: CacheKey = (
        old.dir().to_path_buf(),
        old.db_uuid(),
        old.generation(),
        new.generation(),
    );
    let same_store = old.dir() == new.dir() && old.db_uuid() == new.db_uuid();
    if same_store
        && let Ok(c) = CACHE.lock()
        && let Some((_, d)) = c.iter().find(|(k, _)| *k == key)
    {
        return (d.clone(), 0);
    }
    let start = Instant::now();
    let d = Arc::new(compute::compare(old, new));
    let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    if same_store && let Ok(mut c) = CACHE.lock() {
        if c.len() >= CACHE_SIZE {
            c.remove(0);
        }
        c.push((key, d.clone()));
    }
    (d, ms)
}

/// Compares `old` with `new` and returns the changes `filter` keeps (see the module
/// documentation for what counts as which change).
pub fn diff_generations(old: &Artifact, new: &Artifact, filter: &DiffFilter) -> GenerationDiff {
    let (full, elapsed_ms) = full_diff(old, new);
    let mut matching: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut total = 0;
    let mut changes = Vec::new();
    for c in full.changes.iter().filter(|c| filter.keeps(c)) {
        *matching.entry(c.change.name()).or_default() += 1;
        if total >= filter.offset && filter.limit.is_none_or(|l| changes.len() < l) {
            changes.push(c.clone());
        }
        total += 1;
    }
    let files = full
        .files
        .iter()
        .filter(|f| filter.file.as_deref().is_none_or(|p| f.path.starts_with(p)))
        .cloned()
        .collect();
    GenerationDiff {
        old_generation: old.generation(),
        new_generation: new.generation(),
        stats: full.stats.clone(),
        files,
        total,
        matching,
        changes,
        elapsed_ms,
    }
}

/// A diff between the generations of two runs (or of a generation and a run), as the
/// CLI, the procedures and the MCP tools report it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunDiff {
    /// The newer run (`None` when the newer side is a bare generation).
    pub run: Option<RunRecord>,
    /// The older run (`None` when the older side is a bare generation).
    pub base_run: Option<RunRecord>,
    /// The comparison.
    pub diff: GenerationDiff,
}

/// Opens both sides of `pair` in the store at `dir` and compares them.
pub fn diff_runs(dir: &Path, pair: &RunPair, filter: &DiffFilter) -> Result<RunDiff, DiffError> {
    let (old, new) = open_pair(dir, pair)?;
    Ok(RunDiff {
        run: pair.run.clone(),
        base_run: pair.base_run.clone(),
        diff: diff_generations(&old, &new, filter),
    })
}
