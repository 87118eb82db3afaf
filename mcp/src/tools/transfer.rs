//! The gated transfer and maintenance tools: batho_export (a JSON view, or the transport
//! archive with json_mode=false), batho_load (verify an archive and make it current) and
//! batho_gc (status, prune, compact, reclaim). load and gc are
//! destructive and append to the artifact's audit log (through `batho_engine::maintenance`).
//!
//! The JSON views are a streaming scan of the artifact, not a query; `meta.query` carries
//! the BQL that returns the same nodes and relationships (see docs/mcp.md).

use std::path::{Path, PathBuf};

use batho_engine::build::artifact_dir;
use batho_engine::export::{self, Category, ExportOptions, ExportStats, View};
use batho_engine::maintenance::archive::{self, ArchiveError, IndexMember, LoadReport};
use batho_engine::maintenance::gc::{self, PruneOptions};
use batho_engine::maintenance::transfer::{
    self, ExportDone, ExportFormat, ExportRequest, LoadRequest, default_export_path,
};
use batho_engine::maintenance::{self, AuditEntry, MaintenanceError, MaintenanceReport};
use batho_engine::maintenance::{GcRequest, MaintenanceCall, PrunedRun, StorageError};
use serde::Serialize;
use serde_json::{Map, Value as Json};

use super::args::{ExportArgs, GcArgs, LoadArgs};
use super::{Reply, Rows, ToolOutput, positive};
use crate::error::ToolError;
use crate::registry::RepoEntry;
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

/// A failed export or load as a tool error; `what` names the path argument (`output`,
/// `artifact_path`) for a refused path.
fn transfer_error(repo: &RepoEntry, what: &str, e: MaintenanceError) -> ToolError {
    match e {
        MaintenanceError::Path(refused) => {
            ToolError::client(format!("{what} {refused}")).hint(format!(
                "give a path inside the repository ({}), e.g. exports/graph.json",
                repo.path.display()
            ))
        }
        MaintenanceError::NoArchive { path } => {
            ToolError::client(format!("Archive not found: {}", path.display())).hint(
                "create one with batho_export(json_mode=false) or 'batho export --output FILE.tar'",
            )
        }
        MaintenanceError::Archive(e) => archive_error(repo, e),
        MaintenanceError::Storage(e) => storage_error(repo, &e),
        MaintenanceError::Export(e @ export::ExportError::BadPattern { .. }) => {
            ToolError::client(e.to_string()).hint("globs use *, ** and ?, e.g. \"src/**/*.c\"")
        }
        e => ToolError::server(e.to_string()).remedy(e.remedy()),
    }
}

fn meta(repo: &RepoEntry, generation: u64, query: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("repo".into(), repo.name.clone().into());
    m.insert("artifact_generation".into(), generation.into());
    m.insert("query".into(), query.into());
    m
}

/// batho_export's arguments as a `db.export` request (its output still to be named).
fn export_request(a: &ExportArgs) -> Result<ExportRequest, ToolError> {
    if !a.json_mode {
        return Ok(ExportRequest {
            format: ExportFormat::Archive,
            output: a.output.clone(),
            run: a.index_id.clone(),
        });
    }
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
    Ok(ExportRequest {
        format: ExportFormat::Json(ExportOptions {
            view,
            category,
            include_relationships: a.include_relationships,
            filter_pattern: a.filter_pattern.clone(),
            token_budget,
            include_source: true,
        }),
        output: a.output.clone(),
        run: a.index_id.clone(),
    })
}

pub(crate) fn batho_export(st: &State, a: ExportArgs) -> Result<Reply, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let mut request = export_request(&a)?;
    let repo = st.resolve(a.repo.name())?;
    let dir = artifact_dir(&repo.path);
    // The default file is named after the registered repo and the exported generation;
    // the request names it, so meta.query writes the same file.
    if request.output.is_none() {
        let generation = match &request.run {
            Some(id) => {
                export::generation_of_run(&dir, id).map_err(|e| storage_error(&repo, &e))?
            }
            None => st.database(&repo)?.generation(),
        };
        request.output = Some(default_export_path(&repo.name, &request.format, generation));
    }
    let format = request.format.clone();
    let call = MaintenanceCall::Export(request);
    let started = std::time::Instant::now();
    let done = match maintenance::run(&repo.path, &call) {
        Ok(MaintenanceReport::Export(done)) => done,
        Ok(_) => return Err(ToolError::server("db.export answered with another report")),
        Err(e) => return Err(transfer_error(&repo, "output", e)),
    };
    let max_tokens = a.budget.max_tokens;
    let meta = meta(&repo, done.generation(), &call.statement());
    match (done, &format) {
        (ExportDone::Archive(report), _) => {
            let output = ArchiveExportOutput {
                repo: repo.name.clone(),
                export: ArchiveExport::from(report),
            };
            Reply::new(&output, meta, max_tokens)
        }
        (ExportDone::Json { path, stats }, ExportFormat::Json(opts)) => {
            let output = JsonExportOutput {
                repo: repo.name.clone(),
                export: JsonExport::new(path, opts, stats, started.elapsed()),
            };
            Reply::new(&output, meta, max_tokens)
        }
        (ExportDone::Json { .. }, ExportFormat::Archive) => Err(ToolError::server(
            "db.export wrote a JSON view where an archive was asked for",
        )),
    }
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

impl JsonExport {
    fn new(
        path: PathBuf,
        opts: &ExportOptions,
        stats: ExportStats,
        elapsed: std::time::Duration,
    ) -> JsonExport {
        JsonExport {
            path,
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
            duration_ms: elapsed.as_millis() as u64,
        }
    }
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
    let call = MaintenanceCall::Load(LoadRequest {
        archive: a.artifact_path.clone(),
        force: a.force,
    });
    let load = match maintenance::run(&repo.path, &call) {
        Ok(MaintenanceReport::Load(load)) => load,
        Ok(_) => return Err(ToolError::server("db.load answered with another report")),
        Err(e) => return Err(transfer_error(&repo, "artifact_path", e)),
    };
    let archive_path = transfer::confined(&repo.path, &a.artifact_path)
        .map_err(|e| transfer_error(&repo, "artifact_path", e.into()))?;
    let meta = meta(&repo, load.generation, &call.statement());
    let output = LoadOutput {
        repo: repo.name,
        archive_path,
        load,
        artifact_path: artifact_dir(&repo.path),
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
