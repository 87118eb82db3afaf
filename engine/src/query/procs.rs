//! The built-in procedures: schema introspection, the run history, run deltas and the
//! communities.

use batho_lang::Value;
use batho_schema::{NodeKind, RelType};

use batho_storage::{RunKind, RunRecord, RunStatus};
use std::collections::BTreeMap;

use crate::algo::community_summary::{self, CommunitySummary};
use crate::diff::{self, ChangeKind, DiffError, DiffFilter, NodeSnapshot, RunDiff};

use super::algo_procs;
use super::exec::{Ctx, ExecError, ExecResult, Row};
use super::graph::{ACTIVE_PROPERTY, NODE_PROPERTIES, REL_PROPERTIES, SPARSE_NODE_PROPERTIES};

fn count(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Runs `name` and returns its records, each holding the `fields` asked for, in order.
pub(crate) fn call(
    ctx: &Ctx<'_>,
    name: &str,
    args: &[Value],
    fields: &[String],
) -> ExecResult<Vec<Row>> {
    let lower = name.to_ascii_lowercase();
    // Procedures that read any graph through the topology come first: the rest read a
    // code graph's artifact.
    let records: Vec<Vec<(&str, Value)>> = match lower.as_str() {
        "algo.bfs" => super::bfs_proc::bfs(ctx, args)?,
        "text.search" if ctx.topology.artifact().is_none() => {
            super::text_procs::search_writable(ctx, args)?
        }
        "text.score" => super::text_procs::score(ctx, args)?,
        _ => code_graph_procedure(ctx, &lower, name, args)?,
    };
    Ok(project_fields(records, fields))
}

/// The procedures of code graphs.
fn code_graph_procedure<'r>(
    ctx: &Ctx<'_>,
    lower: &str,
    name: &str,
    args: &[Value],
) -> ExecResult<Vec<Vec<(&'r str, Value)>>> {
    let art = ctx.artifact()?;
    let records: Vec<Vec<(&str, Value)>> = match lower {
        "db.labels" => NodeKind::ALL
            .iter()
            .map(|k| {
                vec![
                    ("label", Value::from(k.name())),
                    ("count", count(art.nodes_of_kind(*k).len())),
                ]
            })
            .collect(),
        "db.relationshiptypes" => RelType::ALL
            .iter()
            .map(|r| {
                vec![
                    ("relationshipType", Value::from(r.name())),
                    ("count", count(art.edges_of_rel(*r).len())),
                ]
            })
            .collect(),
        "db.propertykeys" => NODE_PROPERTIES
            .iter()
            .chain(SPARSE_NODE_PROPERTIES)
            .chain(&[ACTIVE_PROPERTY])
            .map(|p| ("node", *p))
            .chain(REL_PROPERTIES.iter().map(|p| ("relationship", *p)))
            .map(|(entity, key)| {
                vec![
                    ("entity", Value::from(entity)),
                    ("propertyKey", Value::from(key)),
                ]
            })
            .collect(),
        "db.schema" => {
            let mut out = Vec::new();
            for k in NodeKind::ALL {
                out.push(vec![
                    ("kind", Value::from("label")),
                    ("name", Value::from(k.name())),
                    ("count", count(art.nodes_of_kind(*k).len())),
                ]);
            }
            for r in RelType::ALL {
                out.push(vec![
                    ("kind", Value::from("relationshipType")),
                    ("name", Value::from(r.name())),
                    ("count", count(art.edges_of_rel(*r).len())),
                ]);
            }
            for p in NODE_PROPERTIES.iter().chain(SPARSE_NODE_PROPERTIES) {
                out.push(vec![
                    ("kind", Value::from("nodeProperty")),
                    ("name", Value::from(*p)),
                    ("count", Value::Null),
                ]);
            }
            for p in REL_PROPERTIES {
                out.push(vec![
                    ("kind", Value::from("relationshipProperty")),
                    ("name", Value::from(*p)),
                    ("count", Value::Null),
                ]);
            }
            out
        }
        "db.runs" => {
            let limit = match args.first() {
                None | Some(Value::Null) => usize::MAX,
                Some(Value::Int(i)) if *i >= 0 => usize::try_from(*i).unwrap_or(usize::MAX),
                Some(v) => {
                    return Err(ExecError::Unsupported(format!(
                        "db.runs() expects a non-negative integer limit, got {v}"
                    )));
                }
            };
            // Newest first: the question asked of a run history is "what happened last".
            art.runs()
                .iter()
                .rev()
                .take(limit)
                .map(|r| {
                    let (kind, status) = (run_kind(r.kind), run_status(r.status));
                    vec![
                        ("id", Value::from(r.uuid.as_str())),
                        ("type", Value::from(kind)),
                        ("status", Value::from(status)),
                        ("started_at", Value::Int(r.started_at_ms)),
                        ("finished_at", Value::Int(r.ended_at_ms)),
                        ("commit", Value::from(r.git_commit.clone())),
                        ("branch", Value::from(r.git_branch.clone())),
                        ("nodes", count(r.node_count)),
                        ("edges", count(r.edge_count)),
                    ]
                })
                .collect()
        }
        "db.communities" => communities(ctx)?,
        "db.stats" => {
            let (communities, modularity) = partition(ctx)?;
            algo_procs::stats(ctx, modularity, communities)?
        }
        "algo.pagerank" => algo_procs::pagerank(ctx, args)?,
        "algo.neighbors" => algo_procs::neighbors(ctx, args)?,
        "algo.affected" => algo_procs::affected(ctx, args)?,
        "db.delta" => delta_changes(ctx, args)?,
        "db.deltastats" => delta_stats(ctx, args)?,
        "algo.health" => super::health::health(ctx)?,
        "algo.degree" => super::degree::degree(ctx, args)?,
        "text.search" => super::text_procs::search(ctx, args)?,
        "algo.traverse" => super::text_procs::traverse(ctx, args)?,
        "algo.file_rank" => super::repo_map::file_rank(ctx, args)?,
        "algo.file_symbols" => super::repo_map::file_symbols(ctx, args)?,
        _ => {
            return Err(ExecError::Unsupported(format!(
                "procedure `{name}` is not provided by this engine"
            )));
        }
    };
    Ok(records)
}

/// Each record's values in the order of the yielded `fields` (null for a field it lacks).
fn project_fields(records: Vec<Vec<(&str, Value)>>, fields: &[String]) -> Vec<Row> {
    records
        .into_iter()
        .map(|rec| {
            fields
                .iter()
                .map(|f| {
                    rec.iter()
                        .find(|(k, _)| k == f)
                        .map_or(Value::Null, |(_, v)| v.clone())
                })
                .collect()
        })
        .collect()
}

/// The community summary of the artifact the query reads: the one stored beside it
/// (written by the build, or by the first query after a patch), else computed here under
/// the query's work limit and stored for the next reader.
fn community_summary(ctx: &Ctx<'_>) -> ExecResult<CommunitySummary> {
    if let Some(summary) = community_summary::stored(ctx.artifact()?) {
        return Ok(summary);
    }
    let summary = community_summary::summarize(ctx.artifact()?, &mut |work| ctx.tick(work))?;
    ctx.hold(summary.rows.len())?;
    // An accelerator, like the facts cache: a read-only artifact just computes again.
    let _ = community_summary::store(ctx.artifact()?, &summary);
    Ok(summary)
}

/// The number of communities and the modularity of the partition.
fn partition(ctx: &Ctx<'_>) -> ExecResult<(u64, f64)> {
    let summary = community_summary(ctx)?;
    Ok((summary.rows.len() as u64, summary.modularity))
}

/// One record per community (see [`community_summary::CommunityRow`]).
fn communities(ctx: &Ctx<'_>) -> ExecResult<Vec<Vec<(&'static str, Value)>>> {
    let summary = community_summary(ctx)?;
    Ok(summary
        .rows
        .into_iter()
        .map(|row| {
            let (central, central_id) = match row.central {
                Some(member) => (Value::from(member.name), Value::from(member.id)),
                None => (Value::Null, Value::Null),
            };
            vec![
                ("community", Value::Int(i64::from(row.community))),
                ("label", Value::from(row.label)),
                ("entities", count(row.entities)),
                ("files", count(row.files)),
                ("central", central),
                ("central_id", central_id),
                ("cohesion", Value::Float(row.cohesion)),
                ("modularity", Value::Float(row.modularity)),
            ]
        })
        .collect())
}

/// An optional string argument (`null` or absent: `None`).
fn opt_str<'v>(proc: &str, args: &'v [Value], i: usize, what: &str) -> ExecResult<Option<&'v str>> {
    match args.get(i) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(Value::Int(_)) if what == "since" => Ok(None),
        Some(v) => Err(ExecError::Unsupported(format!(
            "{proc}() expects a string {what}, got {v}"
        ))),
    }
}

/// The comparison `db.delta` and `db.deltaStats` report: `since` (a run id or a
/// generation) up to `run` (or the current generation), or else `run`'s delta (default:
/// the latest run with a predecessor).
fn delta_of(
    ctx: &Ctx<'_>,
    proc: &str,
    args: &[Value],
    since_at: usize,
    filter: &DiffFilter,
) -> ExecResult<RunDiff> {
    let dir = ctx.artifact()?.dir();
    let run = opt_str(proc, args, 0, "run id")?;
    let since = match args.get(since_at) {
        Some(Value::Int(g)) => Some(g.to_string()),
        _ => opt_str(proc, args, since_at, "since")?.map(str::to_string),
    };
    let fail = |e: DiffError| match e.hint() {
        Some(h) => ExecError::Unsupported(format!("{e}; {h}")),
        None => ExecError::Unsupported(e.to_string()),
    };
    let pair = match since {
        Some(s) => diff::resolve_since(dir, &s, run),
        None => diff::resolve_delta(dir, run),
    }
    .map_err(fail)?;
    let d = diff::diff_runs(dir, &pair, filter).map_err(fail)?;
    // The comparison touched every node and edge of both generations.
    ctx.tick(u64::from(ctx.artifact()?.node_count()) / 64 + d.diff.total as u64)?;
    Ok(d)
}

fn opt_int(v: Option<&RunRecord>, f: impl Fn(&RunRecord) -> i64) -> Value {
    v.map_or(Value::Null, |r| Value::Int(f(r)))
}

/// `db.delta(run, change_kind, file, entity, since)`: one record per node change.
fn delta_changes(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Vec<(&'static str, Value)>>> {
    let kinds = match opt_str("db.delta", args, 1, "change_kind")? {
        None => Vec::new(),
        Some(k) => vec![ChangeKind::parse(k).ok_or_else(|| {
            ExecError::Unsupported(format!(
                "Invalid change_kind '{k}'. Valid: added, removed, modified, renamed"
            ))
        })?],
    };
    let filter = DiffFilter {
        kinds,
        file: opt_str("db.delta", args, 2, "file path")?.map(str::to_string),
        entity: opt_str("db.delta", args, 3, "entity id")?.map(str::to_string),
        ..DiffFilter::default()
    };
    let d = delta_of(ctx, "db.delta", args, 4, &filter)?;
    ctx.hold(d.diff.changes.len())?;
    let run = d.run.as_ref().map(|r| r.uuid.clone());
    let base_run = d.base_run.as_ref().map(|r| r.uuid.clone());
    let (g, bg) = (d.diff.new_generation, d.diff.old_generation);
    let side =
        |s: Option<&NodeSnapshot>, f: &dyn Fn(&NodeSnapshot) -> Value| s.map_or(Value::Null, f);
    Ok(d.diff
        .changes
        .iter()
        .map(|c| {
            let cur = c.current();
            let b = c.before.as_ref();
            vec![
                ("change", Value::from(c.change.name())),
                ("id", Value::from(cur.id.as_str())),
                ("name", Value::from(cur.name.as_str())),
                ("kind", Value::from(cur.kind)),
                ("file", Value::from(cur.file.as_str())),
                ("start_line", Value::Int(i64::from(cur.start_line))),
                ("end_line", Value::Int(i64::from(cur.end_line))),
                ("signature", Value::from(cur.signature.as_str())),
                ("before_id", side(b, &|s| Value::from(s.id.as_str()))),
                ("before_name", side(b, &|s| Value::from(s.name.as_str()))),
                ("before_kind", side(b, &|s| Value::from(s.kind))),
                ("before_file", side(b, &|s| Value::from(s.file.as_str()))),
                (
                    "before_start_line",
                    side(b, &|s| Value::Int(i64::from(s.start_line))),
                ),
                (
                    "before_end_line",
                    side(b, &|s| Value::Int(i64::from(s.end_line))),
                ),
                (
                    "before_signature",
                    side(b, &|s| Value::from(s.signature.as_str())),
                ),
                (
                    "changed",
                    Value::List(c.changed.iter().map(|w| Value::from(*w)).collect()),
                ),
                ("run", Value::from(run.clone())),
                ("base_run", Value::from(base_run.clone())),
                ("generation", count(g)),
                ("base_generation", count(bg)),
            ]
        })
        .collect())
}

/// `db.deltaStats(run, since)`: one record with the run metadata and the statistics.
fn delta_stats(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Vec<(&'static str, Value)>>> {
    let d = delta_of(
        ctx,
        "db.deltaStats",
        args,
        1,
        &DiffFilter {
            limit: Some(0),
            ..DiffFilter::default()
        },
    )?;
    let r = d.run.as_ref();
    let st = &d.diff.stats;
    let by_type: BTreeMap<String, Value> = st
        .edges_by_type
        .iter()
        .map(|(t, c)| {
            let mut m = BTreeMap::new();
            m.insert("added".to_string(), count(c.added));
            m.insert("removed".to_string(), count(c.removed));
            ((*t).to_string(), Value::Map(m))
        })
        .collect();
    let files: Vec<Value> = d
        .diff
        .files
        .iter()
        .map(|f| {
            let mut m = BTreeMap::new();
            m.insert("path".to_string(), Value::from(f.path.as_str()));
            m.insert("change".to_string(), Value::from(f.change.name()));
            m.insert("added".to_string(), count(f.added));
            m.insert("removed".to_string(), count(f.removed));
            m.insert("modified".to_string(), count(f.modified));
            m.insert("renamed".to_string(), count(f.renamed));
            Value::Map(m)
        })
        .collect();
    ctx.hold(files.len())?;
    Ok(vec![vec![
        ("run", Value::from(r.map(|r| r.uuid.clone()))),
        ("type", Value::from(r.map(|r| run_kind(r.kind).to_string()))),
        (
            "status",
            Value::from(r.map(|r| run_status(r.status).to_string())),
        ),
        ("started_at", opt_int(r, |r| r.started_at_ms)),
        ("finished_at", opt_int(r, |r| r.ended_at_ms)),
        (
            "duration_ms",
            opt_int(r, |r| i64::try_from(r.duration_ms).unwrap_or(i64::MAX)),
        ),
        ("commit", Value::from(r.and_then(|r| r.git_commit.clone()))),
        ("branch", Value::from(r.and_then(|r| r.git_branch.clone()))),
        ("generation", count(d.diff.new_generation)),
        (
            "base_run",
            Value::from(d.base_run.as_ref().map(|r| r.uuid.clone())),
        ),
        ("base_generation", count(d.diff.old_generation)),
        ("nodes_added", count(st.nodes_added)),
        ("nodes_removed", count(st.nodes_removed)),
        ("nodes_modified", count(st.nodes_modified)),
        ("nodes_renamed", count(st.nodes_renamed)),
        ("nodes_moved", count(st.nodes_moved)),
        ("files_added", count(st.files_added)),
        ("files_removed", count(st.files_removed)),
        ("files_modified", count(st.files_modified)),
        ("files_skipped_by_hash", count(st.files_skipped_by_hash)),
        ("edges_added", count(st.edges_added)),
        ("edges_removed", count(st.edges_removed)),
        ("edges_by_type", Value::Map(by_type)),
        ("files", Value::List(files)),
        ("elapsed_ms", count(d.diff.elapsed_ms)),
    ]])
}

fn run_kind(k: RunKind) -> &'static str {
    match k {
        RunKind::Build => "build",
        RunKind::Patch => "patch",
        _ => "other",
    }
}

fn run_status(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        _ => "other",
    }
}
