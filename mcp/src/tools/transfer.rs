//! The gated transfer and maintenance tools: batho_export (a JSON view, or the transport
//! archive with json_mode=false), batho_load (verify an archive and make it current) and
//! batho_gc (status, prune, compact, reclaim). load and gc are
//! destructive and append to the artifact's audit log (through `batho_engine::maintenance`).
//!
//! The JSON views are a streaming scan of the artifact, not a query; `meta.query` carries
//! the BQL that returns the same nodes and relationships (see docs/mcp.md).

use std::path::{Component, Path, PathBuf};

use batho_engine::build::{ARTIFACT_DIR, artifact_dir};
use batho_engine::export::{self, Category, ExportOptions, View};
use batho_engine::maintenance::AuditEntry;
use batho_engine::maintenance::archive::{
    self, ArchiveError, IndexMember, LoadOptions, LoadReport,
};
use batho_engine::maintenance::gc::{self, PruneOptions};
use batho_engine::maintenance::{Artifact, StorageError};
use batho_engine::maintenance::{GcRequest, MaintenanceCall, PrunedRun};
use batho_engine::repo_files::{self, RepoReadError};
use serde::Serialize;
use serde_json::{Map, Value as Json};

use super::args::{ExportArgs, GcArgs, LoadArgs};
use super::{Reply, Rows, ToolOutput, positive};
use crate::error::ToolError;
use crate::registry::{RepoEntry, is_repo_name_char};
use crate::state::{State, missing_artifact};

fn storage_error(repo: &RepoEntry, e: &StorageError) -> ToolError {
    match e {
        StorageError::NoArtifact { .. } => missing_artifact(&repo.path),
        StorageError::InvalidInput { .. } | StorageError::NoSuchGeneration { .. } => {
            ToolError::client(e.to_string()).hint("list runs with batho_list_runs")
        }
        _ => {
            ToolError::server(e.to_string()).remedy(e.remedy().or(Some(batho_engine::Remedy::Fix)))
        }
    }
}

fn archive_error(repo: &RepoEntry, e: ArchiveError) -> ToolError {
    match e {
        ArchiveError::Storage(s) => storage_error(repo, &s),
        e @ (ArchiveError::ForeignDatabase { .. } | ArchiveError::NewerRuns { .. }) => {
            ToolError::client(e.to_string())
                .hint("call batho_load with force=true to replace it; the current generation stays on disk")
        }
        e if e.is_bad_archive() => ToolError::client(format!("archive rejected: {e}"))
            .hint("nothing was changed; export a fresh archive with batho_export(json_mode=false)"),
        e => ToolError::server(e.to_string()),
    }
}

/// Where an export may write or a load may read `requested` (the argument `what`): a
/// path inside the repository, relative or absolute under its root, with no `..` and no
/// symbolic link on the way (`repo_files::confined_new_path`, the rule every read of
/// source follows), and inside `.batho/` only under `exports/` (an export once overwrote
/// the repository's own `.batho/MANIFEST`).
fn confined(repo: &RepoEntry, requested: &str, what: &str) -> Result<PathBuf, ToolError> {
    let refuse = |why: &str| {
        ToolError::client(format!("{what} '{requested}' {why}")).hint(format!(
            "give a path inside the repository ({}), e.g. exports/graph.json",
            repo.path.display()
        ))
    };
    let given = Path::new(requested);
    let relative = if given.is_absolute() {
        given
            .strip_prefix(&repo.path)
            .map_err(|_| refuse("is outside the repository"))?
    } else {
        given
    };
    // `./` says nothing; everything else is checked below.
    let parts: Vec<String> = relative
        .components()
        .filter(|part| !matches!(part, Component::CurDir))
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        return Err(refuse("names no file"));
    }
    if parts[0] == ARTIFACT_DIR && (parts.len() < 3 || parts[1] != "exports") {
        return Err(refuse(
            "is inside the artifact folder (only .batho/exports/ is allowed)",
        ));
    }
    repo_files::confined_new_path(&repo.path, &parts.join("/")).map_err(|e| match e {
        RepoReadError::Outside { .. } => refuse("leaves the repository (`..` or a root)"),
        RepoReadError::Symlink { .. } => refuse("reaches a symbolic link; links are not followed"),
        RepoReadError::Io { source, .. } => refuse(&format!("cannot be reached: {source}")),
    })
}

/// A repo name as a file name: anything but letters, digits, `-`, `_` and `.` becomes `_`
/// (a registry written before names were checked may hold `../`).
fn file_name_part(name: &str) -> String {
    name.chars()
        .map(|c| if is_repo_name_char(c) { c } else { '_' })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

fn meta(repo: &RepoEntry, generation: u64, query: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("repo".into(), repo.name.clone().into());
    m.insert("artifact_generation".into(), generation.into());
    m.insert("query".into(), query.into());
    m
}

/// batho_export's view, category and token budget, checked.
fn export_choices(a: &ExportArgs) -> Result<(View, Category, Option<u64>), ToolError> {
    let view = View::parse(&a.view).ok_or_else(|| {
        ToolError::client(format!("Invalid view '{}'. Valid: storage, agent", a.view))
    })?;
    let category = Category::parse(&a.category).ok_or_else(|| {
        ToolError::client(format!(
            "Invalid category '{}'. Valid: all, entities, relationships, files",
            a.category
        ))
    })?;
    let token_budget = match a.token_budget {
        None => None,
        Some(t) if t > 0 => Some(t as u64),
        Some(t) => {
            return Err(ToolError::client(format!(
                "token_budget must be a positive integer, got {t}"
            )));
        }
    };
    Ok((view, category, token_budget))
}

/// batho_export with json_mode=false: the transport archive of `generation` at `out`.
fn export_transport_archive(
    repo: &RepoEntry,
    generation: u64,
    out: &Path,
    max_tokens: i64,
) -> Result<Reply, ToolError> {
    if let Some(p) = out.parent() {
        std::fs::create_dir_all(p)
            .map_err(|e| ToolError::server(format!("cannot create {}: {e}", p.display())))?;
    }
    let report = archive::export_archive(&artifact_dir(&repo.path), Some(generation), out)
        .map_err(|e| archive_error(repo, e))?;
    let output = ArchiveExportOutput {
        repo: repo.name.clone(),
        export: ArchiveExport::from(report),
    };
    Reply::new(
        &output,
        meta(
            repo,
            generation,
            "MATCH (n) OPTIONAL MATCH (n)-[r]->(m) RETURN n, r, m",
        ),
        max_tokens,
    )
}

pub(crate) fn batho_export(st: &State, a: ExportArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let (view, category, token_budget) = export_choices(&a)?;
    let repo = st.resolve(a.repo.name())?;
    let dir = artifact_dir(&repo.path);
    let generation = match &a.index_id {
        Some(id) => {
            Some(export::generation_of_run(&dir, id).map_err(|e| storage_error(&repo, &e))?)
        }
        None => None,
    };
    // The current generation comes from the shared cache; an older one is opened for the call.
    let art_holder;
    let db;
    let art: &Artifact = match generation {
        Some(g) => {
            art_holder =
                Artifact::open_generation(&dir, g).map_err(|e| storage_error(&repo, &e))?;
            &art_holder
        }
        None => {
            db = st.database(&repo)?;
            db.artifact()
        }
    };
    let gen_now = art.generation();
    let default_name = |ext: &str| {
        dir.join("exports").join(format!(
            "{}-{}-g{gen_now}.{ext}",
            file_name_part(&repo.name),
            if a.json_mode { view.name() } else { "archive" }
        ))
    };
    if !a.json_mode {
        let out = match &a.output {
            Some(o) => confined(&repo, o, "output")?,
            None => default_name("tar"),
        };
        return export_transport_archive(&repo, gen_now, &out, a.budget.max_tokens);
    }
    let opts = ExportOptions {
        view,
        category,
        include_relationships: a.include_relationships,
        filter_pattern: a.filter_pattern.clone(),
        token_budget,
        include_source: true,
    };
    let out = match &a.output {
        Some(o) => confined(&repo, o, "output")?,
        None => default_name("json"),
    };
    export_json_view(art, &repo, &opts, out, a.budget.max_tokens)
}

/// batho_export with json_mode=true: the JSON view of `art` at `out`.
fn export_json_view(
    art: &Artifact,
    repo: &RepoEntry,
    opts: &ExportOptions,
    out: PathBuf,
    max_tokens: i64,
) -> Result<Reply, ToolError> {
    let t0 = std::time::Instant::now();
    let stats = export::export_to_file(art, &repo.path, opts, &out).map_err(|e| match e {
        export::ExportError::BadPattern { .. } => {
            ToolError::client(e.to_string()).hint("globs use *, ** and ?, e.g. \"src/**/*.c\"")
        }
        e => ToolError::server(e.to_string()),
    })?;
    let output = JsonExportOutput {
        repo: repo.name.clone(),
        export: JsonExport {
            path: out,
            json_mode: true,
            view: opts.view.name(),
            category: opts.category.name(),
            generation: stats.generation,
            entities_exported: stats.entities,
            entities_total: stats.entities_total,
            relationships_exported: stats.relationships,
            files: stats.files,
            file_size: stats.bytes,
            truncated: stats.truncated,
            token_budget: opts.token_budget,
            filter_pattern: opts.filter_pattern.clone(),
            sources_ok: stats.sources_ok,
            sources_stale: stats.sources_stale,
            duration_ms: t0.elapsed().as_millis() as u64,
        },
    };
    Reply::new(
        &output,
        meta(repo, art.generation(), &opts.describe_query()),
        max_tokens,
    )
}

/// The transport archive batho_export wrote.
#[derive(Serialize)]
struct ArchiveExport {
    path: PathBuf,
    json_mode: bool,
    format: &'static str,
    generation: u64,
    entities_exported: u64,
    relationships_exported: u64,
    file_size: u64,
    members: Vec<IndexMember>,
    db_uuid: String,
    duration_ms: u64,
}

impl From<archive::ExportReport> for ArchiveExport {
    fn from(report: archive::ExportReport) -> ArchiveExport {
        ArchiveExport {
            path: report.path,
            json_mode: false,
            format: "tar",
            generation: report.generation,
            entities_exported: report.node_count,
            relationships_exported: report.edge_count,
            file_size: report.bytes,
            members: report.members,
            db_uuid: report.db_uuid,
            duration_ms: report.elapsed_ms,
        }
    }
}

/// batho_export's answer for json_mode=false.
#[derive(Serialize)]
struct ArchiveExportOutput {
    #[serde(skip)]
    repo: String,
    export: ArchiveExport,
}

impl ToolOutput for ArchiveExportOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let export = &self.export;
        format!(
            "## Export: {} — transport archive\n\n- File: {}\n- Generation: {} ({} entities and files, {} relationships)\n- Size: {} bytes in {} members (blake3 index included)\n- Load it with batho_load(artifact_path=\"{}\") or 'batho load'\n",
            self.repo,
            export.path.display(),
            export.generation,
            export.entities_exported,
            export.relationships_exported,
            export.file_size,
            export.members.len() + 1,
            export.path.display()
        )
    }
}

/// The JSON view batho_export wrote.
#[derive(Serialize)]
struct JsonExport {
    path: PathBuf,
    json_mode: bool,
    view: &'static str,
    category: &'static str,
    generation: u64,
    entities_exported: u64,
    entities_total: u64,
    relationships_exported: u64,
    files: u64,
    file_size: u64,
    truncated: bool,
    token_budget: Option<u64>,
    filter_pattern: Option<String>,
    sources_ok: u64,
    sources_stale: u64,
    duration_ms: u64,
}

/// batho_export's answer for a JSON view.
#[derive(Serialize)]
struct JsonExportOutput {
    #[serde(skip)]
    repo: String,
    export: JsonExport,
}

impl ToolOutput for JsonExportOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let export = &self.export;
        let mut md = format!(
            "## Export: {} — {} view\n\n- File: {}\n- Generation: {}\n- Entities exported: {}{}\n- Relationships: {}\n- Files: {}\n- File size: {} bytes\n",
            self.repo,
            export.view,
            export.path.display(),
            export.generation,
            export.entities_exported,
            if export.truncated {
                format!(" of {} (cut by token_budget)", export.entities_total)
            } else {
                String::new()
            },
            export.relationships_exported,
            export.files,
            export.file_size
        );
        if export.view == View::Storage.name() && export.sources_stale > 0 {
            md.push_str(&format!(
                "- Note: {} entities' source no longer matches the index (changed since the build)\n",
                export.sources_stale
            ));
        }
        md
    }
}

/// batho_load's answer.
#[derive(Serialize)]
struct LoadOutput {
    #[serde(skip)]
    repo: String,
    #[serde(skip)]
    archive_path: PathBuf,
    load: LoadReport,
    artifact_path: PathBuf,
    verification_status: &'static str,
}

impl ToolOutput for LoadOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let load = &self.load;
        format!(
            "## Load: {} — verified\n\n- Archive: {}\n- Artifact: {}\n- Generation: {} (was {}), from archive generation {}\n- Entities and files: {}, relationships: {}\n- Verification: blake3 of {} members ({} bytes) and deep artifact verification passed{}\n- Audit log entry #{}: {} ({})\n",
            self.repo,
            self.archive_path.display(),
            self.artifact_path.display(),
            load.generation,
            load.previous_generation
                .map_or("none".into(), |g| g.to_string()),
            load.archive_generation,
            load.node_count,
            load.edge_count,
            load.members,
            load.bytes,
            if load.restamped {
                "; restamped with this database's identity"
            } else {
                ""
            },
            load.audit.seq,
            load.audit.action,
            load.audit.hash
        )
    }
}

pub(crate) fn batho_load(st: &State, a: LoadArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repo = st.resolve(a.repo.name())?;
    let archive_path = confined(&repo, &a.artifact_path, "artifact_path")?;
    if !archive_path.is_file() {
        return Err(
            ToolError::client(format!("Archive not found: {}", archive_path.display())).hint(
                "create one with batho_export(json_mode=false) or 'batho export --output FILE.tar'",
            ),
        );
    }
    let dir = artifact_dir(&repo.path);
    let opts = LoadOptions {
        force: a.force,
        ..LoadOptions::default()
    };
    let load =
        archive::load_archive(&dir, &archive_path, &opts).map_err(|e| archive_error(&repo, e))?;
    let meta = meta(
        &repo,
        load.generation,
        "CALL db.runs(1) YIELD id, type, status RETURN id, type, status",
    );
    let output = LoadOutput {
        repo: repo.name,
        archive_path,
        load,
        artifact_path: dir,
        verification_status: "verified",
    };
    Reply::new(&output, meta, a.budget.max_tokens)
}

/// `gc::GcStatus` as batho_gc shows it.
#[derive(Serialize)]
struct GcStatusView {
    current_generation: u64,
    generations: Vec<u64>,
    remaining_runs: usize,
    segment_files: u64,
    segment_bytes: u64,
    live_bytes: u64,
    total_bytes: u64,
    reclaimable_bytes: u64,
    reclaimable_generations: Vec<u64>,
    reclaimable_segments: u64,
    leftover_files: u64,
    fragmentation: f64,
}

impl From<gc::GcStatus> for GcStatusView {
    fn from(status: gc::GcStatus) -> GcStatusView {
        GcStatusView {
            current_generation: status.current_generation,
            generations: status.generations,
            remaining_runs: status.runs,
            segment_files: status.segment_files,
            segment_bytes: status.segment_bytes,
            live_bytes: status.live_bytes,
            total_bytes: status.total_bytes,
            reclaimable_bytes: status.reclaimable_bytes,
            reclaimable_generations: status.reclaimable_generations,
            reclaimable_segments: status.reclaimable_segments,
            leftover_files: status.leftover_files,
            fragmentation: status.fragmentation,
        }
    }
}

/// What batho_gc did besides reporting the status.
#[derive(Serialize)]
#[serde(untagged)]
enum GcAction {
    Prune {
        pruned: Vec<PrunedRun>,
        audit: Option<AuditEntry>,
        /// The generation published with the shorter history.
        #[serde(skip)]
        published: Option<u64>,
    },
    Reclaim {
        reclaim: gc::ReclaimReport,
    },
    Compact {
        compact: gc::CompactReport,
    },
}

impl GcAction {
    fn markdown(&self, md: &mut String) {
        let audit = match self {
            GcAction::Prune {
                pruned,
                audit,
                published,
            } => {
                md.push_str(&format!("- Runs pruned: {}\n", pruned.len()));
                for run in pruned {
                    md.push_str(&format!(
                        "  - {} (generation {})\n",
                        run.run_id, run.generation
                    ));
                }
                if let Some(g) = published {
                    md.push_str(&format!(
                        "- History published as generation {g}; subcommand=\"reclaim\" frees the space\n"
                    ));
                }
                audit
            }
            GcAction::Reclaim { reclaim } => {
                md.push_str(&format!(
                    "- Disk space reclaimed: {} bytes ({} manifests, {} segments, {} leftover files)\n",
                    reclaim.bytes,
                    reclaim.manifests.len(),
                    reclaim.segments.len(),
                    reclaim.leftovers.len()
                ));
                return;
            }
            GcAction::Compact { compact } => {
                match compact.generation {
                    Some(g) => md.push_str(&format!(
                        "- Compacted: the delta ({} appended nodes, {} delta edges) folded into a new base, generation {g} ({} nodes, {} edges, {} bytes written); subcommand=\"reclaim\" frees the old layers\n",
                        compact.appended_nodes, compact.delta_edges, compact.node_count, compact.edge_count, compact.bytes_written
                    )),
                    None => md.push_str("- Nothing to compact: the current generation has no delta layer\n"),
                }
                &compact.audit
            }
        };
        if let Some(e) = audit {
            md.push_str(&format!(
                "- Audit log entry #{}: {} ({})\n",
                e.seq, e.action, e.hash
            ));
        }
    }
}

/// `structuredContent.gc`: the action's totals and the status after it.
#[derive(Serialize)]
struct GcSummary {
    subcommand: String,
    runs_pruned: usize,
    disk_space_reclaimed: u64,
    remaining_runs: usize,
    fragmentation: f64,
    status: GcStatusView,
}

/// batho_gc's answer.
#[derive(Serialize)]
struct GcOutput {
    #[serde(skip)]
    repo: String,
    /// Nothing for `status`.
    #[serde(flatten)]
    action: Option<GcAction>,
    gc: GcSummary,
}

impl ToolOutput for GcOutput {
    fn markdown(&self, _: &mut Rows) -> String {
        let mut md = format!("## GC {}: {}\n\n", self.gc.subcommand, self.repo);
        if let Some(action) = &self.action {
            action.markdown(&mut md);
        }
        let status = &self.gc.status;
        md.push_str(&format!(
            "- Remaining runs: {}\n- Generation {} current; {} generations on disk\n- Total size: {} bytes (current generation: {} bytes)\n- Reclaimable: {} bytes ({:.1}% fragmentation)\n",
            status.remaining_runs,
            status.current_generation,
            status.generations.len(),
            status.total_bytes,
            status.live_bytes,
            status.reclaimable_bytes,
            status.fragmentation * 100.0
        ));
        md
    }
}

/// The gc request the tool's arguments make.
fn gc_request(subcommand: &str, a: &GcArgs) -> Result<GcRequest, ToolError> {
    Ok(match subcommand {
        "status" => GcRequest::Status,
        "prune" => {
            if a.older_than.is_none() && a.run_uuid.is_none() {
                return Err(
                    ToolError::client("prune needs older_than (days) or run_uuid")
                        .hint("e.g. batho_gc(subcommand=\"prune\", older_than=30)"),
                );
            }
            GcRequest::Prune(PruneOptions {
                older_than_days: a.older_than.map(|d| d as u64),
                run: a.run_uuid.clone(),
                dry_run: false,
            })
        }
        "reclaim" => GcRequest::Reclaim { dry_run: false },
        // compact: fold the delta layer into a new base generation.
        _ => GcRequest::Compact { dry_run: false },
    })
}

/// Runs a gc request other than `status`.
fn gc_action(
    dir: &Path,
    request: &GcRequest,
    storage: impl Fn(StorageError) -> ToolError,
) -> Result<Option<GcAction>, ToolError> {
    Ok(Some(match request {
        GcRequest::Status => return Ok(None),
        GcRequest::Prune(options) => {
            let report = gc::prune(dir, options).map_err(storage)?;
            GcAction::Prune {
                pruned: report.pruned.iter().map(PrunedRun::from).collect(),
                audit: report.audit,
                published: report.generation,
            }
        }
        GcRequest::Reclaim { dry_run } => GcAction::Reclaim {
            reclaim: gc::reclaim(dir, *dry_run).map_err(storage)?,
        },
        GcRequest::Compact { dry_run } => GcAction::Compact {
            compact: gc::compact(dir, *dry_run).map_err(storage)?,
        },
    }))
}

pub(crate) fn batho_gc(st: &State, a: GcArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let sub = a.subcommand.to_ascii_lowercase();
    if !matches!(sub.as_str(), "status" | "prune" | "compact" | "reclaim") {
        return Err(ToolError::client(format!(
            "Invalid subcommand '{}'. Valid: status, prune, compact, reclaim",
            a.subcommand
        )));
    }
    if let Some(d) = a.older_than
        && d < 0
    {
        return Err(ToolError::client(format!(
            "older_than must be a number of days >= 0, got {d}"
        )));
    }
    let repo = st.resolve(a.repo.name())?;
    let dir = artifact_dir(&repo.path);
    let storage = |e: StorageError| storage_error(&repo, &e);
    let request = gc_request(&sub, &a)?;
    let action = gc_action(&dir, &request, storage)?;
    let (runs_pruned, disk_space_reclaimed) = match &action {
        Some(GcAction::Prune { pruned, .. }) => (pruned.len(), 0),
        Some(GcAction::Reclaim { reclaim }) => (0, reclaim.bytes),
        _ => (0, 0),
    };
    let status = GcStatusView::from(gc::status(&dir).map_err(storage)?);
    let meta = meta(
        &repo,
        status.current_generation,
        &MaintenanceCall::Gc(request).statement(),
    );
    let output = GcOutput {
        repo: repo.name,
        action,
        gc: GcSummary {
            subcommand: sub,
            runs_pruned,
            disk_space_reclaimed,
            remaining_runs: status.remaining_runs,
            fragmentation: status.fragmentation,
            status,
        },
    };
    Reply::new(&output, meta, a.budget.max_tokens)
}
