//! JSON views of a code graph (`batho export --view storage|agent`, the `batho_export` tool).
//!
//! * **storage** — full fidelity: every node with every property BQL knows (plus its index
//!   and flags), every edge with every property, the run history, and each entity's source
//!   text read from the repository (with a check against its stored content hash, so a
//!   source that changed since the build is flagged, never silently passed off).
//! * **agent** — compact for an LLM: entities with name, kind, file, lines and signature
//!   and their *resolved* relationships (targets that are entities of the repository, not
//!   External stubs) as indexes into the entity list; file paths are deduplicated into one
//!   table. Under a token budget the most referenced entities are kept first.
//!
//! Both are streamed to a writer with `serde_json` element by element: memory holds at
//! most one source file and a few bytes per node, never the document. The views read
//! the graph by a streaming scan of the [`Artifact`] (a full dump is not a query); every
//! node iteration goes through [`live_nodes`], so nodes a delta layer removes can be
//! skipped in one place.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use batho_schema::{NodeFlags, NodeKind};
use batho_storage::{Artifact, CONTENT_HASH_LEN, NodeIdx, NodeRef};
use serde_json::{Map, Value as Json, json};

use crate::query::graph::hex;

/// Which view to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Full fidelity, with source.
    Storage,
    /// Compact, for an LLM agent.
    Agent,
}

impl View {
    /// Parses `storage` or `agent` (case-insensitive).
    pub fn parse(s: &str) -> Option<View> {
        match s.to_ascii_lowercase().as_str() {
            "storage" => Some(View::Storage),
            "agent" => Some(View::Agent),
            _ => None,
        }
    }

    /// The view's name.
    pub fn name(self) -> &'static str {
        match self {
            View::Storage => "storage",
            View::Agent => "agent",
        }
    }
}

/// What to export (the spec's `category`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// Entities, files and relationships.
    All,
    /// Entities (not File nodes).
    Entities,
    /// Relationships only.
    Relationships,
    /// File nodes only.
    Files,
}

impl Category {
    /// Parses `all`, `entities`, `relationships` or `files` (case-insensitive).
    pub fn parse(s: &str) -> Option<Category> {
        match s.to_ascii_lowercase().as_str() {
            "all" => Some(Category::All),
            "entities" => Some(Category::Entities),
            "relationships" => Some(Category::Relationships),
            "files" => Some(Category::Files),
            _ => None,
        }
    }

    /// The category's name.
    pub fn name(self) -> &'static str {
        match self {
            Category::All => "all",
            Category::Entities => "entities",
            Category::Relationships => "relationships",
            Category::Files => "files",
        }
    }
}

/// How to export.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportOptions {
    /// The view.
    pub view: View,
    /// What to include.
    pub category: Category,
    /// Include relationships also for the `entities` and `files` categories (`all` and
    /// `relationships` always include them).
    pub include_relationships: bool,
    /// Only nodes whose file matches this glob (`*`, `?`, `**`; a pattern without `/`
    /// also matches the file name alone); relationships from those nodes.
    pub filter_pattern: Option<String>,
    /// Agent view: stop adding entities once the output would exceed this many tokens
    /// (4 bytes each, the spec's estimate).
    pub token_budget: Option<u64>,
    /// Storage view: read each entity's source text from the repository.
    pub include_source: bool,
}

impl ExportOptions {
    /// Every category, relationships, source; no filter, no budget.
    pub fn new(view: View) -> ExportOptions {
        ExportOptions {
            view,
            category: Category::All,
            include_relationships: false,
            filter_pattern: None,
            token_budget: None,
            include_source: true,
        }
    }

    fn relationships(&self) -> bool {
        matches!(self.category, Category::All | Category::Relationships)
            || self.include_relationships
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ExportStats {
    /// The view written.
    pub view: String,
    /// The generation exported.
    pub generation: u64,
    /// Nodes written (entities, and files or stubs where the view has them).
    pub entities: u64,
    /// Entities the view would hold without a token budget.
    pub entities_total: u64,
    /// Relationships written.
    pub relationships: u64,
    /// Distinct files referenced.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Whether the token budget cut entities.
    pub truncated: bool,
    /// Storage view: entities whose source was read and matches their content hash.
    pub sources_ok: u64,
    /// Storage view: entities whose source could not be read or no longer matches.
    pub sources_stale: u64,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Writing the output failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The output.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file filter is not a valid glob.
    #[error("invalid filter pattern {pattern:?}: {detail}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// Why it is invalid.
        detail: String,
    },
}

/// Every node the current generation holds, in index order. The one place a view iterates
/// nodes: when delta layers can remove nodes, this is where dead ones are skipped
/// (`.filter(|n| a.is_live(n.idx()))`).
pub fn live_nodes(a: &Artifact) -> impl Iterator<Item = NodeRef<'_>> + '_ {
    a.nodes()
}

/// Whether node `n` is live (see [`live_nodes`]); edges to dead nodes are skipped with it.
fn is_live(_a: &Artifact, _n: NodeIdx) -> bool {
    true
}

/// A compiled `filter_pattern`.
struct FileFilter(Option<(globset::GlobMatcher, bool)>);

impl FileFilter {
    fn new(pattern: Option<&str>) -> Result<FileFilter, ExportError> {
        let Some(p) = pattern.filter(|p| !p.is_empty()) else {
            return Ok(FileFilter(None));
        };
        let g = globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| ExportError::BadPattern {
                pattern: p.into(),
                detail: e.kind().to_string(),
            })?;
        Ok(FileFilter(Some((g.compile_matcher(), !p.contains('/')))))
    }

    fn matches(&self, file: &str) -> bool {
        match &self.0 {
            None => true,
            Some(_) if file.is_empty() => false,
            Some((m, basename)) => {
                m.is_match(file)
                    || (*basename && m.is_match(file.rsplit('/').next().unwrap_or(file)))
            }
        }
    }
}

/// Confidence as written (stored as f32; see `query::graph`).
fn widen(c: f32) -> f64 {
    (f64::from(c) * 1e6).round() / 1e6
}

/// Counts bytes on their way to the output.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the view of `a` to `out`; `repo_root` is where source files are read from.
pub fn write_view(
    a: &Artifact,
    repo_root: &Path,
    opts: &ExportOptions,
    out: impl Write,
) -> Result<ExportStats, io::Error> {
    let filter = FileFilter::new(opts.filter_pattern.as_deref())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let mut w = Counting {
        inner: out,
        bytes: 0,
    };
    let mut stats = match opts.view {
        View::Storage => storage_view(a, repo_root, opts, &filter, &mut w)?,
        View::Agent => agent_view(a, opts, &filter, &mut w)?,
    };
    w.flush()?;
    stats.view = opts.view.name().into();
    stats.generation = a.generation();
    stats.bytes = w.bytes;
    Ok(stats)
}

/// [`write_view`] into the file `path`, which appears complete or not at all.
pub fn export_to_file(
    a: &Artifact,
    repo_root: &Path,
    opts: &ExportOptions,
    path: &Path,
) -> Result<ExportStats, ExportError> {
    FileFilter::new(opts.filter_pattern.as_deref())?;
    let io_err = |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(io_err)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export.json".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let res = (|| {
        let f = fs::File::create(&tmp)?;
        let mut bw = BufWriter::with_capacity(1 << 20, f);
        let stats = write_view(a, repo_root, opts, &mut bw)?;
        bw.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(stats)
    })();
    match res {
        Ok(stats) => {
            fs::rename(&tmp, path).map_err(io_err)?;
            Ok(stats)
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(io_err(e))
        }
    }
}

fn ser(w: &mut impl Write, v: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *w, v).map_err(io::Error::other)
}

fn run_json(r: &batho_storage::RunRecord) -> Json {
    json!({
        "uuid": r.uuid, "kind": format!("{:?}", r.kind), "status": format!("{:?}", r.status),
        "started_at_ms": r.started_at_ms, "ended_at_ms": r.ended_at_ms,
        "git_commit": r.git_commit, "git_branch": r.git_branch,
        "node_count": r.node_count, "edge_count": r.edge_count, "file_count": r.file_count,
        "skipped_files": r.skipped_files, "duration_ms": r.duration_ms,
        "generation": r.generation, "message": r.message,
    })
}

/// The one file whose bytes are held, for the source of consecutive entities.
struct SourceCache {
    root: PathBuf,
    file: String,
    bytes: Option<Vec<u8>>,
}

impl SourceCache {
    /// The entity's source, and whether it still matches the stored content hash.
    fn source(&mut self, n: &NodeRef<'_>) -> (Option<String>, bool) {
        let file = n.file();
        if file != self.file {
            self.file = file.into_owned();
            // Paths come from the artifact, which may have been loaded from elsewhere:
            // never read outside the repository, nor through a link planted since.
            self.bytes = crate::repo_files::read_repo_file(&self.root, &self.file).ok();
        }
        let Some(b) = &self.bytes else {
            return (None, false);
        };
        let (s, e) = (n.start_byte() as usize, n.end_byte() as usize);
        match b.get(s..e) {
            Some(slice) => {
                let h = blake3::hash(slice);
                let ok = h.as_bytes()[..CONTENT_HASH_LEN] == n.content_hash();
                (Some(String::from_utf8_lossy(slice).into_owned()), ok)
            }
            None => (None, false),
        }
    }
}

fn node_json(n: &NodeRef<'_>) -> Map<String, Json> {
    let flags = n.flags();
    let flag_names: Vec<&str> = [
        (NodeFlags::EXPORTED, "exported"),
        (NodeFlags::STATIC, "static"),
        (NodeFlags::DECLARATION_ONLY, "declaration_only"),
        (NodeFlags::VIRTUAL, "virtual"),
        (NodeFlags::SYSTEM, "system"),
        (NodeFlags::INACTIVE, "inactive"),
    ]
    .into_iter()
    .filter(|(f, _)| flags.contains(*f))
    .map(|(_, s)| s)
    .collect();
    let mut m = Map::new();
    m.insert("idx".into(), n.idx().0.into());
    m.insert("id".into(), n.id().into_owned().into());
    m.insert("name".into(), n.name().into());
    m.insert("qualified_name".into(), n.qualified_name().into());
    m.insert("kind".into(), n.kind().name().into());
    m.insert("file".into(), n.file().into());
    m.insert("start_line".into(), n.start_line().into());
    m.insert("end_line".into(), n.end_line().into());
    m.insert("start_byte".into(), n.start_byte().into());
    m.insert("end_byte".into(), n.end_byte().into());
    m.insert("signature".into(), n.signature().into());
    m.insert("content_hash".into(), hex(&n.content_hash()).into());
    m.insert(
        "is_exported".into(),
        flags.contains(NodeFlags::EXPORTED).into(),
    );
    m.insert("is_static".into(), flags.contains(NodeFlags::STATIC).into());
    m.insert("flags".into(), flag_names.into());
    m.insert("community".into(), n.community().into());
    m.insert("language".into(), n.language().name().into());
    m
}

fn wants_node(opts: &ExportOptions, n: &NodeRef<'_>) -> bool {
    match opts.category {
        Category::All => true,
        Category::Entities => n.kind() != NodeKind::File,
        Category::Relationships => false,
        Category::Files => n.kind() == NodeKind::File,
    }
}

fn storage_view(
    a: &Artifact,
    root: &Path,
    opts: &ExportOptions,
    filter: &FileFilter,
    w: &mut impl Write,
) -> io::Result<ExportStats> {
    let mut st = ExportStats::default();
    let m = a.manifest();
    let header = json!({
        "format": "batho-export", "version": 1, "view": "storage",
        "generation": a.generation(), "db_uuid": hex(&a.db_uuid()),
        "category": opts.category.name(), "filter_pattern": opts.filter_pattern,
        // Live counts: with a delta layer the index spaces also hold removed nodes and edges.
        "node_count": a.live_node_count(), "edge_count": a.live_edge_count(),
    });
    // The header's fields, then the streamed arrays, in one object.
    let head = serde_json::to_string(&header).map_err(io::Error::other)?;
    w.write_all(&head.as_bytes()[..head.len() - 1])?;
    w.write_all(b",\"runs\":")?;
    ser(w, &m.runs.iter().map(run_json).collect::<Vec<_>>())?;
    w.write_all(b",\n\"nodes\":[")?;
    let mut cache = SourceCache {
        root: root.to_path_buf(),
        file: String::new(),
        bytes: None,
    };
    let mut files = std::collections::BTreeSet::new();
    let mut first = true;
    for n in live_nodes(a) {
        if !wants_node(opts, &n) || !filter.matches(&n.file()) {
            continue;
        }
        let mut obj = node_json(&n);
        let entity = !matches!(n.kind(), NodeKind::File | NodeKind::External);
        if opts.include_source && entity {
            let (src, ok) = cache.source(&n);
            if ok {
                st.sources_ok += 1;
            } else {
                st.sources_stale += 1;
            }
            obj.insert("source".into(), src.map_or(Json::Null, Json::String));
            obj.insert("source_matches_hash".into(), ok.into());
        }
        if !n.file().is_empty() {
            files.insert(n.file_sid());
        }
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        ser(w, &obj)?;
        st.entities += 1;
    }
    w.write_all(b"]")?;
    if opts.relationships() {
        w.write_all(b",\n\"edges\":[")?;
        let mut first = true;
        for n in live_nodes(a) {
            if !filter.matches(&n.file()) {
                continue;
            }
            if opts.category == Category::Files && n.kind() != NodeKind::File {
                continue;
            }
            for e in a.out_edges(n.idx()) {
                if !is_live(a, e.dst()) {
                    continue;
                }
                let dst = a.node(e.dst());
                let obj = json!({
                    "idx": e.idx().0, "src": n.id(), "dst": dst.id(),
                    "src_idx": n.idx().0, "dst_idx": e.dst().0,
                    "type": e.rel().name(), "roles": e.roles().names().collect::<Vec<_>>(),
                    "roles_mask": e.roles().0, "confidence": widen(e.confidence()),
                    "strategy": e.strategy().name(), "file": e.file(), "line": e.line(),
                    "lines": e.site_lines(), "count": e.site_count(),
                });
                w.write_all(if first { b"\n" } else { b",\n" })?;
                first = false;
                ser(w, &obj)?;
                st.relationships += 1;
            }
        }
        w.write_all(b"]")?;
    }
    st.files = files.len() as u64;
    st.entities_total = st.entities;
    let summary = json!({
        "nodes": st.entities, "edges": st.relationships, "files": st.files,
        "sources_ok": st.sources_ok, "sources_stale": st.sources_stale,
    });
    w.write_all(b",\n\"summary\":")?;
    ser(w, &summary)?;
    w.write_all(b"}\n")?;
    Ok(st)
}

/// Whether a node is an entity of the agent view (not a file, not an External stub).
fn agent_entity(n: &NodeRef<'_>) -> bool {
    !matches!(n.kind(), NodeKind::File | NodeKind::External)
}

fn agent_view(
    a: &Artifact,
    opts: &ExportOptions,
    filter: &FileFilter,
    w: &mut impl Write,
) -> io::Result<ExportStats> {
    const NONE: u32 = u32::MAX;
    let n = a.node_count() as usize;
    let rels = opts.relationships();
    let files_only = opts.category == Category::Files;
    // Pass 1: which nodes are candidates.
    let mut candidate = vec![false; n];
    let mut total = 0u64;
    for node in live_nodes(a) {
        let want = if files_only {
            node.kind() == NodeKind::File && !node.file().is_empty()
        } else {
            agent_entity(&node)
        };
        if want && filter.matches(&node.file()) {
            candidate[node.idx().0 as usize] = true;
            total += 1;
        }
    }
    let resolved = |dst: NodeIdx| is_live(a, dst) && candidate.get(dst.0 as usize) == Some(&true);
    // Pass 2: under a budget, keep the most referenced candidates whose estimated size fits.
    let mut selected = candidate.clone();
    let mut truncated = false;
    if let Some(budget) = opts.token_budget {
        let budget_bytes = budget.saturating_mul(4).saturating_sub(400);
        let mut ranked: Vec<(u32, u32)> = (0..n as u32)
            .filter(|&i| candidate[i as usize])
            .map(|i| {
                (
                    a.in_edges(NodeIdx(i))
                        .filter(|e| candidate[e.src().0 as usize])
                        .count() as u32,
                    i,
                )
            })
            .collect();
        ranked.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        selected = vec![false; n];
        let mut used = 0u64;
        let mut seen_files = std::collections::HashSet::new();
        for (_, i) in ranked {
            let node = a.node(NodeIdx(i));
            let mut size =
                60 + node.name().len() + node.signature().len() + node.kind().name().len();
            if seen_files.insert(node.file_sid()) {
                size += node.file().len() + 4;
            }
            if rels {
                size += a
                    .out_edges(NodeIdx(i))
                    .filter(|e| resolved(e.dst()))
                    .count()
                    * 8
                    + 16;
            }
            if used + size as u64 > budget_bytes {
                truncated = true;
                continue;
            }
            used += size as u64;
            selected[i as usize] = true;
        }
    }
    // Pass 3: local indexes in node order; the file table.
    let mut local = vec![NONE; n];
    let mut files: Vec<u32> = Vec::new();
    let mut file_local: BTreeMap<u32, u32> = BTreeMap::new();
    let mut count = 0u32;
    for node in live_nodes(a) {
        let i = node.idx().0 as usize;
        if selected[i] {
            local[i] = count;
            count += 1;
            let sid = node.file_sid().0;
            if !node.file().is_empty() && !file_local.contains_key(&sid) {
                file_local.insert(sid, files.len() as u32);
                files.push(sid);
            }
        }
    }
    let header = json!({
        "format": "batho-export", "version": 1, "view": "agent",
        "generation": a.generation(), "category": opts.category.name(),
        "legend": "files: paths; entities[i]: name, kind, file (index into files), lines [start, end], sig (signature), qname (when it differs from name), id (when not file:qname), and per relationship type the indexes of the target entities",
    });
    let head = serde_json::to_string(&header).map_err(io::Error::other)?;
    w.write_all(&head.as_bytes()[..head.len() - 1])?;
    w.write_all(b",\n\"files\":[")?;
    for (k, sid) in files.iter().enumerate() {
        if k > 0 {
            w.write_all(b",")?;
        }
        ser(w, &a.string(batho_storage::StrId(*sid)))?;
    }
    w.write_all(b"],\n")?;
    w.write_all(if files_only {
        b"\"file_entries\":["
    } else {
        b"\"entities\":["
    })?;
    let mut st = ExportStats::default();
    let mut first = true;
    for node in live_nodes(a) {
        let i = node.idx().0 as usize;
        if local[i] == NONE {
            continue;
        }
        let mut obj = Map::new();
        if !files_only {
            obj.insert("name".into(), node.name().into());
            obj.insert("kind".into(), node.kind().name().into());
        }
        if let Some(f) = file_local.get(&node.file_sid().0) {
            obj.insert("file".into(), (*f).into());
        }
        if !files_only {
            obj.insert("lines".into(), json!([node.start_line(), node.end_line()]));
            if !node.signature().is_empty() {
                obj.insert("sig".into(), node.signature().into());
            }
            if node.qualified_name() != node.name() {
                obj.insert("qname".into(), node.qualified_name().into());
            }
            if node.id_sid().is_some() {
                obj.insert("id".into(), node.id().into_owned().into());
            }
        }
        if rels {
            let mut by_rel: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
            for e in a.out_edges(node.idx()) {
                let t = local.get(e.dst().0 as usize).copied().unwrap_or(NONE);
                if t != NONE && is_live(a, e.dst()) {
                    by_rel.entry(e.rel().name()).or_default().push(t);
                }
            }
            for (rel, mut v) in by_rel {
                v.dedup();
                st.relationships += v.len() as u64;
                obj.insert(rel.to_ascii_lowercase(), v.into());
            }
        }
        w.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        ser(w, &obj)?;
        st.entities += 1;
    }
    w.write_all(b"]")?;
    st.entities_total = total;
    st.files = files.len() as u64;
    st.truncated = truncated;
    let summary = json!({
        "entities": st.entities, "entities_total": total, "relationships": st.relationships,
        "files": st.files, "truncated": truncated, "token_budget": opts.token_budget,
    });
    w.write_all(b",\n\"summary\":")?;
    ser(w, &summary)?;
    w.write_all(b"}\n")?;
    Ok(st)
}

/// The generation a run (by UUID, from the current history) committed or recorded, for
/// exporting an older state (`index_id`, `--run`).
pub fn generation_of_run(
    batho_dir: &Path,
    run_uuid: &str,
) -> Result<u64, batho_storage::StorageError> {
    // Read-only: never create a store just to look a run up.
    let path = batho_dir.join(batho_storage::format::names::MANIFEST);
    let bytes = fs::read(&path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => batho_storage::StorageError::NoArtifact {
            path: batho_dir.to_path_buf(),
        },
        _ => batho_storage::StorageError::Io {
            path: path.clone(),
            source: e,
        },
    })?;
    batho_storage::manifest::decode(&bytes, &path)?
        .runs
        .iter()
        .find(|r| r.uuid == run_uuid)
        .map(|r| r.generation)
        .ok_or_else(|| batho_storage::StorageError::InvalidInput {
            detail: format!(
                "no run {run_uuid} in the history of {}",
                batho_dir.display()
            ),
        })
}

#[cfg(test)]
#[path = "export/tests.rs"]
mod tests;
