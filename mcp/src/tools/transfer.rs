//! The gated transfer and maintenance tools: batho_export (a JSON view, or the transport
//! archive with json_mode=false), batho_load (verify an archive and make it current) and
//! batho_gc (status, prune, compact, reclaim). load and gc are
//! destructive and append to the artifact's audit log (in `batho_storage`).
//!
//! The JSON views are a streaming scan of the artifact, not a query; `meta.query` carries
//! the BQL that returns the same nodes and relationships (see docs/mcp.md).

use std::path::{Path, PathBuf};

use batho_engine::build::artifact_dir;
use batho_engine::export::{self, Category, ExportOptions, View};
use batho_storage::archive::{self, ArchiveError, LoadOptions};
use batho_storage::gc::{self, PruneOptions};
use batho_storage::{Artifact, StorageError};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{ExportArgs, GcArgs, LoadArgs};
use super::{Answer, positive};
use crate::error::ToolError;
use crate::registry::RepoEntry;
use crate::state::{State, missing_artifact};

fn storage_error(repo: &RepoEntry, e: &StorageError) -> ToolError {
    match e {
        StorageError::NoArtifact { .. } => missing_artifact(&repo.path),
        StorageError::Locked { .. } => ToolError::server(e.to_string())
            .hint("another batho process is writing; retry when it has finished"),
        StorageError::InvalidInput { .. } | StorageError::NoSuchGeneration { .. } => {
            ToolError::client(e.to_string()).hint("list runs with batho_list_runs")
        }
        _ => ToolError::server(e.to_string())
            .hint("run batho_fix (dry_run=true) to check the artifact"),
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

/// A path argument: absolute as given, relative under the repo root.
fn under_repo(repo: &RepoEntry, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        repo.path.join(p)
    }
}

fn meta(repo: &RepoEntry, generation: u64, query: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("repo".into(), repo.name.clone().into());
    m.insert("artifact_generation".into(), generation.into());
    m.insert("query".into(), query.into());
    m
}

pub(crate) fn batho_export(st: &State, a: ExportArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
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
            repo.name,
            if a.json_mode { view.name() } else { "archive" }
        ))
    };
    if !a.json_mode {
        let out = match &a.output {
            Some(o) => under_repo(&repo, o),
            None => default_name("tar"),
        };
        if let Some(p) = out.parent() {
            std::fs::create_dir_all(p)
                .map_err(|e| ToolError::server(format!("cannot create {}: {e}", p.display())))?;
        }
        let r = archive::export_archive(&dir, Some(gen_now), &out)
            .map_err(|e| archive_error(&repo, e))?;
        let md = format!(
            "## Export: {} — transport archive\n\n- File: {}\n- Generation: {} ({} entities and files, {} relationships)\n- Size: {} bytes in {} members (blake3 index included)\n- Load it with batho_load(artifact_path=\"{}\") or 'batho load'\n",
            repo.name,
            r.path.display(),
            r.generation,
            r.node_count,
            r.edge_count,
            r.bytes,
            r.members.len() + 1,
            r.path.display()
        );
        let mut structured = Map::new();
        structured.insert(
            "export".into(),
            json!({
                "path": r.path, "json_mode": false, "format": "tar", "generation": r.generation,
                "entities_exported": r.node_count, "relationships_exported": r.edge_count,
                "file_size": r.bytes, "members": r.members, "db_uuid": r.db_uuid,
                "duration_ms": r.elapsed_ms,
            }),
        );
        return Ok(Answer {
            markdown: md,
            structured,
            meta: meta(
                &repo,
                gen_now,
                "MATCH (n) OPTIONAL MATCH (n)-[r]->(m) RETURN n, r, m",
            ),
        }
        .finish(Some(a.budget.max_tokens), None));
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
        Some(o) => under_repo(&repo, o),
        None => default_name("json"),
    };
    let t0 = std::time::Instant::now();
    let stats = export::export_to_file(art, &repo.path, &opts, &out).map_err(|e| match e {
        export::ExportError::BadPattern { .. } => {
            ToolError::client(e.to_string()).hint("globs use *, ** and ?, e.g. \"src/**/*.c\"")
        }
        e => ToolError::server(e.to_string()),
    })?;
    let mut md = format!(
        "## Export: {} — {} view\n\n- File: {}\n- Generation: {}\n- Entities exported: {}{}\n- Relationships: {}\n- Files: {}\n- File size: {} bytes\n",
        repo.name,
        view.name(),
        out.display(),
        stats.generation,
        stats.entities,
        if stats.truncated {
            format!(" of {} (cut by token_budget)", stats.entities_total)
        } else {
            String::new()
        },
        stats.relationships,
        stats.files,
        stats.bytes
    );
    if view == View::Storage && stats.sources_stale > 0 {
        md.push_str(&format!(
            "- Note: {} entities' source no longer matches the index (changed since the build)\n",
            stats.sources_stale
        ));
    }
    let mut structured = Map::new();
    structured.insert(
        "export".into(),
        json!({
            "path": out, "json_mode": true, "view": view.name(), "category": category.name(),
            "generation": stats.generation, "entities_exported": stats.entities,
            "entities_total": stats.entities_total, "relationships_exported": stats.relationships,
            "files": stats.files, "file_size": stats.bytes, "truncated": stats.truncated,
            "token_budget": token_budget, "filter_pattern": a.filter_pattern,
            "sources_ok": stats.sources_ok, "sources_stale": stats.sources_stale,
            "duration_ms": t0.elapsed().as_millis() as u64,
        }),
    );
    Ok(Answer {
        markdown: md,
        structured,
        meta: meta(&repo, gen_now, &opts.describe_query()),
    }
    .finish(Some(a.budget.max_tokens), None))
}

pub(crate) fn batho_load(st: &State, a: LoadArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repo = st.resolve(a.repo.name())?;
    let archive_path = under_repo(&repo, &a.artifact_path);
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
    let r =
        archive::load_archive(&dir, &archive_path, &opts).map_err(|e| archive_error(&repo, e))?;
    let md = format!(
        "## Load: {} — verified\n\n- Archive: {}\n- Artifact: {}\n- Generation: {} (was {}), from archive generation {}\n- Entities and files: {}, relationships: {}\n- Verification: blake3 of {} members ({} bytes) and deep artifact verification passed{}\n- Audit log entry #{}: {} ({})\n",
        repo.name,
        archive_path.display(),
        dir.display(),
        r.generation,
        r.previous_generation
            .map_or("none".into(), |g| g.to_string()),
        r.archive_generation,
        r.node_count,
        r.edge_count,
        r.members,
        r.bytes,
        if r.restamped {
            "; restamped with this database's identity"
        } else {
            ""
        },
        r.audit.seq,
        r.audit.action,
        r.audit.hash
    );
    let mut structured = Map::new();
    structured.insert(
        "load".into(),
        serde_json::to_value(&r).map_err(|e| ToolError::server(e.to_string()))?,
    );
    structured.insert("artifact_path".into(), json!(dir));
    structured.insert("verification_status".into(), "verified".into());
    Ok(Answer {
        markdown: md,
        structured,
        meta: meta(
            &repo,
            r.generation,
            "CALL db.runs(1) YIELD id, type, status RETURN id, type, status",
        ),
    }
    .finish(Some(a.budget.max_tokens), None))
}

fn status_json(s: &gc::GcStatus) -> Json {
    json!({
        "current_generation": s.current_generation, "generations": s.generations,
        "remaining_runs": s.runs, "segment_files": s.segment_files,
        "segment_bytes": s.segment_bytes, "live_bytes": s.live_bytes,
        "total_bytes": s.total_bytes, "reclaimable_bytes": s.reclaimable_bytes,
        "reclaimable_generations": s.reclaimable_generations,
        "reclaimable_segments": s.reclaimable_segments, "leftover_files": s.leftover_files,
        "fragmentation": s.fragmentation,
    })
}

pub(crate) fn batho_gc(st: &State, a: GcArgs) -> Result<CallToolResult, ToolError> {
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
    let se = |e: StorageError| storage_error(&repo, &e);
    let mut structured = Map::new();
    let mut md = format!("## GC {sub}: {}\n\n", repo.name);
    let (mut runs_pruned, mut reclaimed) = (0usize, 0u64);
    match sub.as_str() {
        "status" => {}
        "prune" => {
            if a.older_than.is_none() && a.run_uuid.is_none() {
                return Err(
                    ToolError::client("prune needs older_than (days) or run_uuid")
                        .hint("e.g. batho_gc(subcommand=\"prune\", older_than=30)"),
                );
            }
            let r = gc::prune(
                &dir,
                &PruneOptions {
                    older_than_days: a.older_than.map(|d| d as u64),
                    run: a.run_uuid.clone(),
                    dry_run: false,
                },
            )
            .map_err(se)?;
            runs_pruned = r.pruned.len();
            md.push_str(&format!("- Runs pruned: {runs_pruned}\n"));
            for run in &r.pruned {
                md.push_str(&format!(
                    "  - {} (generation {})\n",
                    run.uuid, run.generation
                ));
            }
            if let Some(g) = r.generation {
                md.push_str(&format!(
                    "- History published as generation {g}; subcommand=\"reclaim\" frees the space\n"
                ));
            }
            if let Some(e) = &r.audit {
                md.push_str(&format!(
                    "- Audit log entry #{}: {} ({})\n",
                    e.seq, e.action, e.hash
                ));
            }
            structured.insert(
                "pruned".into(),
                json!(
                    r.pruned
                        .iter()
                        .map(|r| json!({"run_id": r.uuid, "generation": r.generation}))
                        .collect::<Vec<_>>()
                ),
            );
            structured.insert("audit".into(), json!(r.audit));
        }
        "reclaim" => {
            let r = gc::reclaim(&dir, false).map_err(se)?;
            reclaimed = r.bytes;
            md.push_str(&format!(
                "- Disk space reclaimed: {} bytes ({} manifests, {} segments, {} leftover files)\n",
                r.bytes,
                r.manifests.len(),
                r.segments.len(),
                r.leftovers.len()
            ));
            structured.insert(
                "reclaim".into(),
                serde_json::to_value(&r).map_err(|e| ToolError::server(e.to_string()))?,
            );
        }
        _ => {
            // compact: fold the delta layer into a new base generation.
            let r = gc::compact(&dir, false).map_err(se)?;
            match r.generation {
                Some(g) => md.push_str(&format!(
                    "- Compacted: the delta ({} appended nodes, {} delta edges) folded into a new base, generation {g} ({} nodes, {} edges, {} bytes written); subcommand=\"reclaim\" frees the old layers\n",
                    r.appended_nodes, r.delta_edges, r.node_count, r.edge_count, r.bytes_written
                )),
                None => md.push_str("- Nothing to compact: the current generation has no delta layer\n"),
            }
            if let Some(e) = &r.audit {
                md.push_str(&format!(
                    "- Audit log entry #{}: {} ({})\n",
                    e.seq, e.action, e.hash
                ));
            }
            structured.insert(
                "compact".into(),
                serde_json::to_value(&r).map_err(|e| ToolError::server(e.to_string()))?,
            );
        }
    }
    let s = gc::status(&dir).map_err(se)?;
    md.push_str(&format!(
        "- Remaining runs: {}\n- Generation {} current; {} generations on disk\n- Total size: {} bytes (current generation: {} bytes)\n- Reclaimable: {} bytes ({:.1}% fragmentation)\n",
        s.runs,
        s.current_generation,
        s.generations.len(),
        s.total_bytes,
        s.live_bytes,
        s.reclaimable_bytes,
        s.fragmentation * 100.0
    ));
    structured.insert(
        "gc".into(),
        json!({
            "subcommand": sub, "runs_pruned": runs_pruned, "disk_space_reclaimed": reclaimed,
            "remaining_runs": s.runs, "fragmentation": s.fragmentation, "status": status_json(&s),
        }),
    );
    Ok(Answer {
        markdown: md,
        structured,
        meta: meta(
            &repo,
            s.current_generation,
            "CALL db.runs() YIELD id, type, status RETURN id, type, status",
        ),
    }
    .finish(Some(a.budget.max_tokens), None))
}
