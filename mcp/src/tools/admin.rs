//! The registry tools (list_repos, add_repo, remove_repo), batho_status and the gated
//! batho_build.

use std::fmt::Write as _;
use std::path::PathBuf;

use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{AddRepoArgs, BuildArgs, ListReposArgs, RemoveRepoArgs, StatusArgs};
use super::{Answer, positive};
use crate::error::ToolError;
use crate::registry::RepoEntry;
use crate::state::{State, i, missing_artifact};

const ENTITY_COUNT: &str = "CALL db.labels() YIELD label, count WHERE label <> 'File' AND label <> 'External' RETURN sum(count) AS entities";

/// `(has_artifact, entities, generation)`.
fn probe(st: &State, repo: &RepoEntry) -> (bool, i64, u64) {
    match st.database(repo) {
        Ok(db) => {
            let n = db
                .query(ENTITY_COUNT, &Default::default())
                .ok()
                .and_then(|r| r.rows.first().map(|r| i(&r[0])))
                .unwrap_or(0);
            (true, n, db.generation())
        }
        Err(_) => (false, 0, 0),
    }
}

fn meta_only(query: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("query".into(), query.into());
    m
}

pub(crate) fn list_repos(st: &State, a: ListReposArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repos = st.repos();
    let mut md = String::from("## Registered Repos\n\n");
    if repos.is_empty() {
        md.push_str("(none — use add_repo)\n");
    }
    let session = st
        .session
        .lock()
        .ok()
        .and_then(|s| s.as_ref().map(|r| r.name.clone()));
    let mut out = Vec::new();
    for (k, r) in repos.iter().enumerate() {
        let (has, n, generation) = probe(st, r);
        let status = if has {
            format!("✓ ready, {n} entities")
        } else {
            "✗ no artifact — run 'batho build'".to_string()
        };
        let default = if k == 0 { ", default" } else { "" };
        let _ = writeln!(
            md,
            "- **{}** — {} ({status}{default})",
            r.name,
            r.path.display()
        );
        out.push(json!({
            "name": r.name, "path": r.path, "has_artifact": has, "entity_count": n,
            "artifact_generation": generation, "default": k == 0,
            "session": session.as_deref() == Some(r.name.as_str()),
            "watch": r.watch,
        }));
    }
    let mut structured = Map::new();
    structured.insert("total".into(), out.len().into());
    structured.insert("repos".into(), Json::Array(out));
    Ok(Answer {
        markdown: md,
        structured,
        meta: meta_only(ENTITY_COUNT),
    }
    .finish(Some(a.budget.max_tokens), None))
}

pub(crate) fn add_repo(st: &State, a: AddRepoArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let name = a.name.trim();
    if name.is_empty() {
        return Err(ToolError::client("name must not be empty"));
    }
    let path = PathBuf::from(&a.path);
    if !path.is_absolute() {
        return Err(
            ToolError::client(format!("path must be absolute, got '{}'", a.path))
                .hint("pass the repository root as an absolute path"),
        );
    }
    if !path.is_dir() {
        return Err(ToolError::client(format!("Not a directory: {}", a.path)));
    }
    let path = path.canonicalize().unwrap_or(path);
    let entry = RepoEntry {
        name: name.to_string(),
        path: path.clone(),
        watch: a.watch,
        debounce_ms: a.debounce_ms,
        max_file_size_kb: a.max_file_size_kb,
    };
    let (has, n, _) = probe(st, &entry);
    if !has {
        return Err(missing_artifact(&path));
    }
    st.registry
        .lock()
        .map_err(|_| ToolError::server("registry lock poisoned"))?
        .upsert(entry.clone())
        .map_err(|e| ToolError::server(e.to_string()))?;
    // Re-registering without watch stops a watcher started earlier.
    if !entry.watch {
        st.watchers.stop(&path);
    }
    let watching = st.watch(&entry);
    let mut md = format!(
        "## Repo Registered\n\n- **{name}** — {}\n- Entities: {n}\n- Artifact: ✓ ready\n",
        path.display()
    );
    match &watching {
        Some(Ok(())) => {
            let _ = writeln!(
                md,
                "- Watching: re-indexed {} ms after changes settle",
                entry.debounce_ms
            );
        }
        Some(Err(e)) => {
            let _ = writeln!(md, "- Watching: not started ({e})");
        }
        None => {}
    }
    let mut structured = Map::new();
    structured.insert("name".into(), name.into());
    structured.insert("path".into(), json!(path));
    structured.insert("entity_count".into(), n.into());
    structured.insert("has_artifact".into(), true.into());
    structured.insert("watching".into(), matches!(watching, Some(Ok(()))).into());
    Ok(Answer {
        markdown: md,
        structured,
        meta: meta_only(ENTITY_COUNT),
    }
    .finish(Some(a.budget.max_tokens), None))
}

pub(crate) fn remove_repo(st: &State, a: RemoveRepoArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    if let Some(repo) = st.repos().into_iter().find(|r| r.name == a.name) {
        st.watchers.stop(&repo.path);
    }
    let mut removed = st
        .registry
        .lock()
        .map_err(|_| ToolError::server("registry lock poisoned"))?
        .remove(&a.name)
        .map_err(|e| ToolError::server(e.to_string()))?;
    if let Ok(mut s) = st.session.lock()
        && s.as_ref().is_some_and(|r| r.name == a.name)
    {
        *s = None;
        removed = true;
    }
    if !removed {
        let names: Vec<String> = st.repos().iter().map(|r| format!("'{}'", r.name)).collect();
        return Err(ToolError::client(format!(
            "Repo '{}' not found in registry. Available repos: [{}]",
            a.name,
            names.join(", ")
        )));
    }
    let md = format!(
        "## Repo Removed\n\n- **{}** — removed from registry\n",
        a.name
    );
    let mut structured = Map::new();
    structured.insert("name".into(), a.name.into());
    structured.insert("removed".into(), true.into());
    Ok(Answer {
        markdown: md,
        structured,
        meta: Map::new(),
    }
    .finish(Some(a.budget.max_tokens), None))
}

pub(crate) fn batho_status(st: &State, a: StatusArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repos = match a.repo.as_deref() {
        Some(n) => vec![st.resolve(Some(n))?],
        None => {
            let r = st.repos();
            if r.is_empty() {
                st.resolve(None)?;
            }
            r
        }
    };
    let mut md = String::from("## Batho Status\n");
    let mut out = Vec::new();
    for r in &repos {
        let rep = batho_engine::status::status(&r.path, false);
        let _ = write!(md, "\n**{}** — {}\n", r.name, r.path.display());
        match rep {
            Ok(rep) => {
                let run = rep.last_run.as_ref();
                let _ = writeln!(
                    md,
                    "- artifact: {} (generation {}), {} entities, {} relationships, {} files",
                    rep.state.name(),
                    rep.generation,
                    rep.entities,
                    rep.relationships,
                    rep.files
                );
                if let Some(run) = run {
                    let _ = writeln!(md, "- last run: {}", run.uuid);
                }
                if rep.changed_count > 0 {
                    let _ = writeln!(
                        md,
                        "- {} source files changed since the build (e.g. {})",
                        rep.changed_count,
                        rep.changed_files.join(", ")
                    );
                }
                let watch = st.watchers.report(&r.path);
                let watcher = match &watch {
                    None => json!({"state": "inactive", "pending_changes": 0}),
                    Some(w) => json!({"state": w.state, "pending_changes": w.pending.len(),
                        "pending_files": w.pending.iter().take(20).collect::<Vec<_>>(),
                        "reindexed": w.reindexed, "last_error": w.last_error}),
                };
                match &watch {
                    None => {
                        let _ = writeln!(md, "- watcher: inactive");
                    }
                    Some(w) => {
                        let _ = writeln!(
                            md,
                            "- watcher: {} ({} pending changes, {} re-index runs)",
                            w.state,
                            w.pending.len(),
                            w.reindexed
                        );
                        if let Some(e) = &w.last_error {
                            let _ = writeln!(md, "- watcher error: {e}");
                        }
                    }
                }
                out.push(json!({
                    "name": r.name, "path": r.path, "status": rep.state.name(),
                    "artifact_generation": rep.generation, "entity_count": rep.entities,
                    "relationship_count": rep.relationships, "file_count": rep.files,
                    "last_run_id": run.map(|r| r.uuid.clone()),
                    "changed_files": rep.changed_count,
                    "watcher": watcher,
                }));
            }
            Err(e) => {
                let _ = writeln!(md, "- artifact: unreadable ({e})");
                out.push(json!({"name": r.name, "path": r.path, "status": "error", "message": e.to_string()}));
            }
        }
    }
    let mut structured = Map::new();
    structured.insert("repos".into(), Json::Array(out));
    Ok(Answer {
        markdown: md,
        structured,
        meta: Map::new(),
    }
    .finish(Some(a.budget.max_tokens), None))
}

pub(crate) fn batho_build(st: &State, a: BuildArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let repo = st.resolve(a.repo.name())?;
    if let Some(b) = a.graph_backend.as_deref()
        && !matches!(b, "auto" | "in-memory" | "arrow")
    {
        return Err(ToolError::client(format!(
            "Invalid graph_backend '{b}'. Valid: auto, in-memory, arrow"
        )));
    }
    let opts = batho_engine::build::BuildOptions {
        full: a.full,
        max_workers: a.max_workers.map(|w| w.max(1) as usize),
        max_file_size_kb: a.max_file_size_kb.or(repo.max_file_size_kb),
    };
    let rep = batho_engine::build::build(&repo.path, &opts, &|_| {}).map_err(|e| {
        let err = ToolError::client(format!("build of '{}' failed: {e}", repo.name));
        match e.hint() {
            Some(h) if h.contains("--full") => {
                err.hint("call batho_build with full=true to rebuild")
            }
            Some(h) => err.hint(h),
            None => err,
        }
    })?;
    let secs = rep.run.duration_ms as f64 / 1000.0;
    let md = format!(
        "## Build Complete: {}\n\n- Entities: {}\n- Relationships: {}\n- Files: {}\n- Duration: {secs:.2}s\n- Run: {} (generation {})\n",
        repo.name, rep.entities, rep.relationships, rep.files, rep.run.uuid, rep.run.generation
    );
    let mut structured = Map::new();
    structured.insert(
        "build".into(),
        json!({
            "repo": repo.name, "entity_count": rep.entities, "relationship_count": rep.relationships,
            "file_count": rep.files, "duration_ms": rep.run.duration_ms, "run_id": rep.run.uuid,
            "artifact_generation": rep.run.generation, "skipped_files": rep.skipped.len(),
        }),
    );
    Ok(Answer {
        markdown: md,
        structured,
        meta: Map::new(),
    }
    .finish(Some(a.budget.max_tokens), None))
}
