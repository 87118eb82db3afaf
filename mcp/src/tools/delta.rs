//! The change tools: get_delta (one run's node-level changes, paginated, with statistics
//! and run metadata) and batho_diff (changes by run, entity or file, or since a run).
//!
//! Both resolve the run first with `batho_engine::diff` (so an unknown run, a pruned
//! generation or a run without predecessor gets the spec's error shape and a hint), then
//! read statistics and changes through BQL (`CALL db.deltaStats(...)`, `CALL
//! db.delta(...)`), which `meta.query` shows; the comparison is computed once and cached.

use std::fmt::Write as _;

use batho_engine::diff::{ChangeKind, DiffError, DiffFilter, RunPair, diff_runs};
use batho_engine::query::{QueryResult, Value};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value as Json, json};

use super::args::{DeltaArgs, DiffArgs, ResponseFormat};
use super::cells::{int_of, text_of, texts_of};
use super::files::{non_negative_offset, page_json};
use super::{Answer, Rows, lines, positive};
use crate::error::ToolError;
use crate::state::{Ctx, State};

const STATS_COLS: &str = "run, type, status, started_at, finished_at, duration_ms, commit, branch, \
generation, base_run, base_generation, nodes_added, nodes_removed, nodes_modified, nodes_renamed, \
nodes_moved, files_added, files_removed, files_modified, edges_added, edges_removed, edges_by_type, files";

const CHANGE_COLS: &str = "change, id, name, kind, file, start_line, end_line, signature, \
before_id, before_name, before_kind, before_file, before_start_line, before_end_line, \
before_signature, changed";

fn diff_error(e: DiffError) -> ToolError {
    let t = if e.is_client_error() {
        ToolError::client(e.to_string())
    } else {
        ToolError::server(e.to_string())
    };
    match e.hint() {
        Some(h) => t.hint(h),
        None => t,
    }
}

fn text(v: Option<&str>) -> Value {
    v.filter(|s| !s.trim().is_empty())
        .map_or(Value::Null, Value::from)
}

/// Resolves the comparison and computes it once (the BQL calls then hit the cache).
fn resolve(cx: &Ctx, run: Option<&str>, since: Option<&str>) -> Result<RunPair, ToolError> {
    let dir = cx.db.artifact().dir().to_path_buf();
    let since = since.filter(|s| !s.trim().is_empty());
    let pair = match since {
        Some(s) => batho_engine::diff::resolve_since(&dir, s, run),
        None => batho_engine::diff::resolve_delta(&dir, run),
    }
    .map_err(diff_error)?;
    let probe = DiffFilter {
        limit: Some(0),
        ..DiffFilter::default()
    };
    diff_runs(&dir, &pair, &probe).map_err(diff_error)?;
    Ok(pair)
}

/// The run arguments of the procedures: the newer run's full id, and `since` as the older
/// run's id or the generation number.
fn run_params(pair: &RunPair, since_given: bool) -> (Value, Value) {
    let run = pair
        .run
        .as_ref()
        .map_or(Value::Null, |r| Value::from(r.uuid.as_str()));
    let since = if !since_given {
        Value::Null
    } else {
        match &pair.base_run {
            Some(r) => Value::from(r.uuid.as_str()),
            None => Value::Int(i64::try_from(pair.base_generation).unwrap_or(i64::MAX)),
        }
    };
    (run, since)
}

/// The statistics row as `(markdown lines, json)`.
fn stats(res: &QueryResult) -> (String, Json) {
    let Some(r) = res.rows.first() else {
        return (String::new(), Json::Null);
    };
    let mut md = String::new();
    let run = text_of(&r[0]);
    let base = text_of(&r[9]);
    let (base_gen, new_gen) = (int_of(&r[10]), int_of(&r[8]));
    let who = |id: &str, g: i64| {
        if id.is_empty() {
            format!("generation {g}")
        } else {
            format!("run {id} (generation {g})")
        }
    };
    let _ = writeln!(
        md,
        "- From {} to {}",
        who(&base, base_gen),
        who(&run, new_gen)
    );
    if !run.is_empty() {
        let commit = text_of(&r[6]);
        let branch = text_of(&r[7]);
        let mut git = String::new();
        if !commit.is_empty() {
            let _ = write!(git, ", commit {}", &commit[..commit.len().min(12)]);
            if !branch.is_empty() {
                let _ = write!(git, " ({branch})");
            }
        }
        let _ = writeln!(
            md,
            "- Run: {} {} at {} UTC, {:.2}s{git}",
            text_of(&r[1]),
            text_of(&r[2]),
            batho_engine::status::utc_timestamp(int_of(&r[3])),
            int_of(&r[5]) as f64 / 1000.0
        );
    }
    let _ = writeln!(
        md,
        "- Nodes: {} added, {} removed, {} modified, {} renamed",
        int_of(&r[11]),
        int_of(&r[12]),
        int_of(&r[13]),
        int_of(&r[14])
    );
    let _ = writeln!(
        md,
        "- Files: {} added, {} removed, {} modified",
        int_of(&r[16]),
        int_of(&r[17]),
        int_of(&r[18])
    );
    let by_type = match &r[21] {
        Value::Map(m) => m
            .iter()
            .map(|(t, c)| {
                let get = |k: &str| match c {
                    Value::Map(x) => x.get(k).map_or(0, int_of),
                    _ => 0,
                };
                (t.clone(), get("added"), get("removed"))
            })
            .collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let types: Vec<String> = by_type
        .iter()
        .map(|(t, a, d)| format!("{t} +{a} -{d}"))
        .collect();
    let _ = writeln!(
        md,
        "- Relationships: {} added, {} removed{}",
        int_of(&r[19]),
        int_of(&r[20]),
        if types.is_empty() {
            String::new()
        } else {
            format!(" ({})", types.join(", "))
        }
    );
    let files: Vec<Json> = match &r[22] {
        Value::List(l) => l
            .iter()
            .filter_map(|f| match f {
                Value::Map(m) => Some(json!({
                    "path": m.get("path").map(text_of).unwrap_or_default(),
                    "change": m.get("change").map(text_of).unwrap_or_default(),
                    "added": m.get("added").map_or(0, int_of),
                    "removed": m.get("removed").map_or(0, int_of),
                    "modified": m.get("modified").map_or(0, int_of),
                    "renamed": m.get("renamed").map_or(0, int_of),
                })),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let opt = |v: String| (!v.is_empty()).then_some(v);
    let json = json!({
        "run": {
            "run_id": opt(run.clone()), "type": opt(text_of(&r[1])), "status": opt(text_of(&r[2])),
            "started_at_ms": int_of(&r[3]), "finished_at_ms": int_of(&r[4]), "duration_ms": int_of(&r[5]),
            "git_commit": opt(text_of(&r[6])), "git_branch": opt(text_of(&r[7])), "generation": int_of(&r[8]),
        },
        "base": {"run_id": opt(base), "generation": int_of(&r[10])},
        "stats": {
            "nodes_added": int_of(&r[11]), "nodes_removed": int_of(&r[12]), "nodes_modified": int_of(&r[13]),
            "nodes_renamed": int_of(&r[14]), "nodes_moved": int_of(&r[15]),
            "files_changed": int_of(&r[16]) + int_of(&r[17]) + int_of(&r[18]),
            "files_added": int_of(&r[16]), "files_removed": int_of(&r[17]), "files_modified": int_of(&r[18]),
            "relationships_added": int_of(&r[19]), "relationships_removed": int_of(&r[20]),
            "relationships_by_type": by_type.iter().map(|(t, a, d)| (t.clone(), json!({"added": a, "removed": d}))).collect::<Map<String, Json>>(),
        },
        "files": files,
    });
    (md, json)
}

fn side(r: &[Value], at: usize) -> Json {
    json!({
        "id": text_of(&r[at]), "name": text_of(&r[at + 1]), "kind": text_of(&r[at + 2]), "file": text_of(&r[at + 3]),
        "start_line": int_of(&r[at + 4]), "end_line": int_of(&r[at + 5]), "signature": text_of(&r[at + 6]),
    })
}

/// One change as `(markdown line, json)`; `detail` adds before/after lines.
fn change(r: &[Value], detail: bool) -> (String, Json) {
    let kind = text_of(&r[0]);
    let had_before = !matches!(r[8], Value::Null);
    let after = kind != "removed";
    let changed = texts_of(&r[15]);
    let mut md = match kind.as_str() {
        "renamed" => format!(
            "- renamed {} → {} [{}] {}:{}",
            text_of(&r[8]),
            text_of(&r[1]),
            text_of(&r[3]).to_ascii_lowercase(),
            text_of(&r[4]),
            lines(int_of(&r[5]), int_of(&r[6]))
        ),
        _ => format!(
            "- {kind} {} [{}] {}:{}",
            text_of(&r[1]),
            text_of(&r[3]).to_ascii_lowercase(),
            text_of(&r[4]),
            lines(int_of(&r[5]), int_of(&r[6]))
        ),
    };
    if !changed.is_empty() && kind == "modified" {
        let _ = write!(md, " ({})", changed.join(", "));
    }
    md.push('\n');
    if detail && had_before && after {
        let _ = writeln!(
            md,
            "  - before: {} {} {}",
            text_of(&r[8]),
            lines(int_of(&r[12]), int_of(&r[13])),
            text_of(&r[14])
        );
        let _ = writeln!(
            md,
            "  - after: {} {} {}",
            text_of(&r[1]),
            lines(int_of(&r[5]), int_of(&r[6])),
            text_of(&r[7])
        );
    }
    let json = json!({
        "change_kind": kind,
        "entity_id": text_of(&r[1]), "name": text_of(&r[2]), "kind": text_of(&r[3]), "file_path": text_of(&r[4]),
        "start_line": int_of(&r[5]), "end_line": int_of(&r[6]),
        "changed": changed,
        "before": if had_before { side(r, 8) } else { Json::Null },
        "after": if after { side(r, 1) } else { Json::Null },
    });
    (md, json)
}

pub(crate) fn get_delta(st: &State, a: DeltaArgs) -> Result<CallToolResult, ToolError> {
    let limit = positive("limit", a.page.limit)?;
    if a.page.offset < 0 {
        return Err(ToolError::client(format!(
            "offset must be zero or positive, got {}",
            a.page.offset
        )));
    }
    let fmt = a.output.format()?;
    let kind = match a.change_kind.as_deref().filter(|k| !k.trim().is_empty()) {
        None => None,
        Some(k) => Some(ChangeKind::parse(k).ok_or_else(|| {
            ToolError::client(format!(
                "Invalid change_kind '{k}'. Valid: added, removed, modified, renamed"
            ))
        })?),
    };
    let mut cx = st.ctx(a.repo.name())?;
    let pair = resolve(&cx, a.run_id.as_deref(), None)?;
    let (run, _) = run_params(&pair, false);
    let stats_res = cx.run(
        &format!("CALL db.deltaStats($run) YIELD {STATS_COLS} RETURN {STATS_COLS}"),
        &[("run", run.clone())],
    )?;
    let (stats_md, stats_json) = stats(&stats_res);
    let mut rows = Vec::new();
    let mut has_more = false;
    if fmt != ResponseFormat::Summary {
        let res = cx.run(
            &format!(
                "CALL db.delta($run, $change_kind, $file_path) YIELD {CHANGE_COLS} \
                 RETURN {CHANGE_COLS} SKIP $offset LIMIT $limit"
            ),
            &[
                ("run", run),
                ("change_kind", Value::from(kind.map(ChangeKind::name))),
                ("file_path", text(a.file_path.as_deref())),
                ("offset", Value::Int(a.page.offset)),
                // One extra row tells whether another page exists.
                ("limit", Value::Int(limit.saturating_add(1))),
            ],
        )?;
        has_more = res.rows.len() as i64 > limit;
        rows = res.rows;
        rows.truncate(limit as usize);
    }
    let title = match &pair.run {
        Some(r) => format!("## Delta: run {}\n\n", r.uuid),
        None => format!("## Delta: generation {}\n\n", pair.generation),
    };
    let mut md = title + &stats_md;
    let mut changes = Vec::new();
    let mut page = Rows::new(a.page.offset);
    if !rows.is_empty() {
        let _ = writeln!(
            md,
            "\n### Changes ({}{})",
            rows.len(),
            if a.page.offset > 0 {
                format!(", offset {}", a.page.offset)
            } else {
                String::new()
            }
        );
        for r in &rows {
            let (line, j) = change(r, fmt == ResponseFormat::Detailed);
            md.push_str(&line);
            page.tag("changes");
            changes.push(j);
            page.end_row(md.len());
        }
    } else if fmt != ResponseFormat::Summary {
        md.push_str("\nNo matching changes.\n");
    }
    page.set_has_more(has_more);
    let next_offset = page.next_offset();
    page.write_more(&mut md, "results");
    let mut structured = Map::new();
    if let Json::Object(o) = stats_json {
        structured.extend(o);
    }
    structured.insert("changes".into(), Json::Array(changes));
    structured.insert(
        "pagination".into(),
        json!({"offset": a.page.offset, "limit": limit, "returned": rows.len(), "has_more": has_more,
               "next_offset": if has_more { Some(next_offset) } else { None }}),
    );
    let mut applied = Map::new();
    if let Some(k) = kind {
        applied.insert("change_kind".into(), k.name().into());
    }
    if let Some(f) = a.file_path.as_deref().filter(|f| !f.trim().is_empty()) {
        applied.insert("file_path".into(), f.into());
    }
    structured.insert("applied_filters".into(), Json::Object(applied));
    Ok(Answer {
        markdown: md,
        structured,
        meta: cx.meta(),
    }
    .finish_paged(Some(a.output.max_tokens()), page))
}

pub(crate) fn batho_diff(st: &State, a: DiffArgs) -> Result<CallToolResult, ToolError> {
    positive("max_tokens", a.budget.max_tokens)?;
    let limit = positive("limit", a.page.limit)?;
    non_negative_offset(a.page.offset)?;
    let mut cx = st.ctx(a.repo.name())?;
    let since_given = a.since.as_deref().is_some_and(|s| !s.trim().is_empty());
    let pair = resolve(&cx, a.run_id.as_deref(), a.since.as_deref())?;
    if let Some(e) = a.entity_id.as_deref().filter(|e| !e.trim().is_empty()) {
        // An id in neither generation is a typo, not "no changes".
        let dir = cx.db.artifact().dir().to_path_buf();
        let (old, new) = batho_engine::diff::open_pair(&dir, &pair).map_err(diff_error)?;
        if old.lookup_id(e).is_none() && new.lookup_id(e).is_none() {
            return Err(ToolError::client(format!("Entity not found: {e}"))
                .hint("use search_entities to find the exact entity id"));
        }
    }
    let (run, since) = run_params(&pair, since_given);
    let stats_res = cx.run(
        &format!("CALL db.deltaStats($run, $since) YIELD {STATS_COLS} RETURN {STATS_COLS}"),
        &[("run", run.clone()), ("since", since.clone())],
    )?;
    let (stats_md, stats_json) = stats(&stats_res);
    let filter_params = [
        ("run", run),
        ("file_path", text(a.file_path.as_deref())),
        ("entity_id", text(a.entity_id.as_deref())),
        ("since", since),
    ];
    let total = cx.run(
        "CALL db.delta($run, null, $file_path, $entity_id, $since) YIELD change RETURN count(*) AS changes",
        &filter_params,
    )?;
    let total = total.rows.first().map_or(0, |r| int_of(&r[0]));
    let mut page_params = filter_params.to_vec();
    page_params.push(("offset", Value::Int(a.page.offset)));
    page_params.push(("limit", Value::Int(limit)));
    let res = cx.run(
        &format!(
            "CALL db.delta($run, null, $file_path, $entity_id, $since) YIELD {CHANGE_COLS} \
             RETURN {CHANGE_COLS} SKIP $offset LIMIT $limit"
        ),
        &page_params,
    )?;
    let mut md = String::from("## Diff\n\n") + &stats_md;
    let mut groups: Map<String, Json> = ChangeKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), Json::Array(Vec::new())))
        .collect();
    if res.rows.is_empty() {
        md.push_str("\nNo matching changes.\n");
    } else {
        let _ = writeln!(
            md,
            "\n### Changes ({total}, showing {} from offset {})",
            res.rows.len(),
            a.page.offset
        );
    }
    let mut page = Rows::new(a.page.offset);
    for r in &res.rows {
        let (line, j) = change(r, true);
        md.push_str(&line);
        let kind = ChangeKind::ALL.iter().find(|k| k.name() == text_of(&r[0]));
        if let (Some(kind), Some(Json::Array(v))) = (kind, groups.get_mut(&text_of(&r[0]))) {
            page.tag(kind.name());
            v.push(j);
        }
        page.end_row(md.len());
    }
    let has_more = a.page.offset + (res.rows.len() as i64) < total;
    page.set_has_more(has_more);
    page.write_more(&mut md, "results");
    let mut structured = Map::new();
    if let Json::Object(o) = stats_json {
        structured.extend(o);
    }
    structured.extend(groups);
    structured.insert("total".into(), total.into());
    structured.insert(
        "pagination".into(),
        page_json(
            a.page.offset,
            limit,
            res.rows.len(),
            has_more,
            page.next_offset(),
        ),
    );
    let mut applied = Map::new();
    for (k, v) in [
        ("run_id", &a.run_id),
        ("entity_id", &a.entity_id),
        ("file_path", &a.file_path),
        ("since", &a.since),
    ] {
        if let Some(v) = v.as_deref().filter(|v| !v.trim().is_empty()) {
            applied.insert(k.into(), v.into());
        }
    }
    structured.insert("applied_filters".into(), Json::Object(applied));
    Ok(Answer {
        markdown: md,
        structured,
        meta: cx.meta(),
    }
    .finish_paged(Some(a.budget.max_tokens), page))
}
