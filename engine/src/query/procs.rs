//! The built-in procedures: schema introspection, the run history, run deltas and the
//! communities.

use batho_lang::Value;
use batho_schema::{NodeKind, RelType};
use std::collections::{HashMap, HashSet};

use batho_storage::{NodeIdx, RunKind, RunRecord, RunStatus};
use std::collections::BTreeMap;

use crate::diff::{self, ChangeKind, DiffError, DiffFilter, NodeSnapshot, RunDiff};

use crate::algo::COMMUNITY_RELS;

use super::algo_procs;
use super::exec::{Ctx, ExecError, R, Row};
use super::graph::{NODE_PROPERTIES, REL_PROPERTIES};

fn count(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Runs `name` and returns its records, each holding the `fields` asked for, in order.
pub(crate) fn call(ctx: &Ctx<'_>, name: &str, args: &[Value], fields: &[String]) -> R<Vec<Row>> {
    let art = ctx.art;
    let lower = name.to_ascii_lowercase();
    let records: Vec<Vec<(&str, Value)>> = match lower.as_str() {
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
            for p in NODE_PROPERTIES {
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
    Ok(records
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
        .collect())
}

/// Whether a node takes part in communities: file nodes and external stubs never do.
fn in_communities(kind: NodeKind) -> bool {
    !matches!(kind, NodeKind::File | NodeKind::External)
}

/// The graph communities are measured over: entities, CALLS/INCLUDES/REFERENCES/INHERITS
/// edges between two distinct ones, undirected, one unit of weight per edge. Returns each
/// node's degree in it and the number of its edges.
fn community_graph_degrees(ctx: &Ctx<'_>) -> R<(Vec<u32>, u64)> {
    let art = ctx.art;
    let n = art.node_count();
    let entity: Vec<bool> = (0..n)
        .map(|v| art.is_live(NodeIdx(v)) && in_communities(art.node(NodeIdx(v)).kind()))
        .collect();
    let mut degree = vec![0u32; n as usize];
    let mut edges = 0u64;
    for v in (0..n).filter(|&v| entity[v as usize]) {
        let out = art.out_edges(NodeIdx(v));
        ctx.tick(1 + out.len() as u64)?;
        for e in out {
            let d = e.dst().0;
            if d != v && entity.get(d as usize) == Some(&true) && COMMUNITY_RELS.contains(&e.rel())
            {
                degree[v as usize] = degree[v as usize].saturating_add(1);
                degree[d as usize] = degree[d as usize].saturating_add(1);
                edges += 1;
            }
        }
    }
    Ok((degree, edges))
}

/// What [`communities`] gathers about one community.
#[derive(Default)]
struct CommunityStats {
    entities: u64,
    /// Members per file (by the file's string id), with one member to read the path from.
    members_per_file: HashMap<u32, (u64, u32)>,
    /// Its most connected members, best first (degree descending, then node index).
    central: Vec<u32>,
    /// Sum of the members' degrees, and the edges with both ends inside.
    degree_sum: u64,
    internal_edges: u64,
}

/// How many of a community's most connected members are kept to name it.
const CENTRAL_KEPT: usize = 4;

impl CommunityStats {
    fn add_member(&mut self, v: u32, file: u32, degree: &[u32]) {
        self.entities += 1;
        self.members_per_file.entry(file).or_insert((0, v)).0 += 1;
        self.degree_sum += u64::from(degree[v as usize]);
        let rank = |x: u32| (std::cmp::Reverse(degree[x as usize]), x);
        let at = self.central.partition_point(|&x| rank(x) < rank(v));
        if at < CENTRAL_KEPT {
            self.central.insert(at, v);
            self.central.truncate(CENTRAL_KEPT);
        }
    }
}

/// Every community's stats, by community id.
fn community_stats(ctx: &Ctx<'_>, degree: &[u32]) -> R<BTreeMap<u32, CommunityStats>> {
    let art = ctx.art;
    let mut stats: BTreeMap<u32, CommunityStats> = BTreeMap::new();
    let community_of = |v: u32| {
        let node = art.node(NodeIdx(v));
        (art.is_live(NodeIdx(v)) && in_communities(node.kind())).then(|| node.community())
    };
    for v in 0..art.node_count() {
        let Some(c) = community_of(v).filter(|&c| c != 0) else {
            continue;
        };
        let node = art.node(NodeIdx(v));
        stats
            .entry(c)
            .or_default()
            .add_member(v, node.file_sid().0, degree);
        let out = art.out_edges(NodeIdx(v));
        ctx.tick(1 + out.len() as u64)?;
        for e in out {
            let d = e.dst().0;
            if d != v && COMMUNITY_RELS.contains(&e.rel()) && community_of(d) == Some(c) {
                stats.entry(c).or_default().internal_edges += 1;
            }
        }
    }
    ctx.hold(stats.len())?;
    Ok(stats)
}

/// The directory holding most of a community's members (ties: the smallest path), with a
/// trailing `/`; empty when that is the root of the tree.
fn main_directory(ctx: &Ctx<'_>, s: &CommunityStats) -> String {
    let mut per_dir: BTreeMap<String, u64> = BTreeMap::new();
    for &(members, node) in s.members_per_file.values() {
        let file = ctx.art.node(NodeIdx(node)).file().into_owned();
        let dir = file.rfind('/').map_or("", |at| &file[..=at]).to_owned();
        *per_dir.entry(dir).or_default() += members;
    }
    let mut best: Option<(&String, u64)> = None;
    for (dir, &members) in &per_dir {
        if best.is_none_or(|(_, most)| members > most) {
            best = Some((dir, members));
        }
    }
    best.map(|(dir, _)| dir.clone()).unwrap_or_default()
}

/// A label saying what a community is about: the names of its two most connected members
/// (distinct names) and the directory most of it is in, e.g. `lua_State, luaD_call (src/)`.
/// `taken` holds the labels given so far; a label already given gets the next most
/// connected name, then the community id, so that no two communities share one.
fn community_label(ctx: &Ctx<'_>, c: u32, s: &CommunityStats, taken: &HashSet<String>) -> String {
    let mut names: Vec<String> = Vec::new();
    for &v in &s.central {
        let name = ctx.art.node(NodeIdx(v)).name().into_owned();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    let dir = main_directory(ctx, s);
    let with = |count: usize| {
        let shown = names[..count.min(names.len())].join(", ");
        if dir.is_empty() {
            shown
        } else {
            format!("{shown} ({dir})")
        }
    };
    (2..=names.len().max(2))
        .map(with)
        .find(|label| !taken.contains(label))
        .unwrap_or_else(|| format!("{} [community {c}]", with(2)))
}

/// The number of communities and the modularity of the partition (the sum of
/// [`communities`]' per-community terms, over the same graph).
fn partition(ctx: &Ctx<'_>) -> R<(u64, f64)> {
    let (degree, edges) = community_graph_degrees(ctx)?;
    let stats = community_stats(ctx, &degree)?;
    let m = edges as f64;
    let mut modularity = 0.0;
    if m > 0.0 {
        for s in stats.values() {
            let (inside, ends) = (s.internal_edges as f64, s.degree_sum as f64);
            modularity += inside / m - (ends / (2.0 * m)).powi(2);
        }
    }
    Ok((stats.len() as u64, modularity))
}

/// One record per community (the `community` property stored by the build): its id, a
/// label, how many entities and distinct files it has, its most central member (the one
/// with the highest degree), its cohesion (the share of its members' edge ends that stay
/// inside it) and its term of the modularity (summed over every community, the
/// modularity of the partition). Degrees, cohesion and modularity are over the graph
/// [`community_graph_degrees`] describes.
fn communities(ctx: &Ctx<'_>) -> R<Vec<Vec<(&'static str, Value)>>> {
    let (degree, edges) = community_graph_degrees(ctx)?;
    let stats = community_stats(ctx, &degree)?;
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(stats.len());
    for (c, s) in stats {
        let label = community_label(ctx, c, &s, &taken);
        taken.insert(label.clone());
        let central = s.central.first().map(|&v| ctx.art.node(NodeIdx(v)));
        let ratio = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
        let (inside, ends) = (s.internal_edges as f64, s.degree_sum as f64);
        let modularity = ratio(inside, edges as f64) - ratio(ends, 2.0 * edges as f64).powi(2);
        out.push(vec![
            ("community", Value::Int(i64::from(c))),
            ("label", Value::from(label.as_str())),
            ("entities", count(s.entities)),
            ("files", count(s.members_per_file.len() as u64)),
            (
                "central",
                central.map_or(Value::Null, |x| Value::from(x.name())),
            ),
            (
                "central_id",
                central.map_or(Value::Null, |x| Value::from(x.id().as_ref())),
            ),
            ("cohesion", Value::Float(ratio(2.0 * inside, ends))),
            ("modularity", Value::Float(modularity)),
        ]);
    }
    Ok(out)
}

/// An optional string argument (`null` or absent: `None`).
fn opt_str<'v>(proc: &str, args: &'v [Value], i: usize, what: &str) -> R<Option<&'v str>> {
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
) -> R<RunDiff> {
    let dir = ctx.art.dir();
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
    ctx.tick(u64::from(ctx.art.node_count()) / 64 + d.diff.total as u64)?;
    Ok(d)
}

fn opt_int(v: Option<&RunRecord>, f: impl Fn(&RunRecord) -> i64) -> Value {
    v.map_or(Value::Null, |r| Value::Int(f(r)))
}

/// `db.delta(run, change_kind, file, entity, since)`: one record per node change.
fn delta_changes(ctx: &Ctx<'_>, args: &[Value]) -> R<Vec<Vec<(&'static str, Value)>>> {
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
fn delta_stats(ctx: &Ctx<'_>, args: &[Value]) -> R<Vec<Vec<(&'static str, Value)>>> {
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
