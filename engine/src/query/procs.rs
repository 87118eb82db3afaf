//! The built-in procedures: schema introspection, the run history and the communities.

use batho_lang::Value;
use batho_schema::{NodeKind, RelType};
use std::collections::{HashMap, HashSet};

use batho_storage::{NodeIdx, RunKind, RunStatus};

use crate::algo::COMMUNITY_RELS;

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
                    let kind = match r.kind {
                        RunKind::Build => "build",
                        RunKind::Patch => "patch",
                        _ => "other",
                    };
                    let status = match r.status {
                        RunStatus::Completed => "completed",
                        RunStatus::Failed => "failed",
                        _ => "other",
                    };
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

/// One record per community (the `community` property stored by the build): its id, how
/// many entities and distinct files it has, and its most central member, the one with the
/// highest degree over the relation types communities are computed from (ties: the lowest
/// node index). One pass over the nodes and their out-edges, so naming every community
/// costs the same as counting them.
fn communities(ctx: &Ctx<'_>) -> R<Vec<Vec<(&'static str, Value)>>> {
    let art = ctx.art;
    let n = art.node_count();
    let mut degree = vec![0u32; n as usize];
    for v in 0..n {
        if !art.is_live(NodeIdx(v)) {
            continue;
        }
        let out = art.out_edges(NodeIdx(v));
        ctx.tick(1 + out.len() as u64)?;
        for e in out {
            let d = e.dst();
            if d.0 != v && COMMUNITY_RELS.contains(&e.rel()) {
                degree[v as usize] = degree[v as usize].saturating_add(1);
                if let Some(x) = degree.get_mut(d.0 as usize) {
                    *x = x.saturating_add(1);
                }
            }
        }
    }
    #[derive(Default)]
    struct Stats {
        entities: u64,
        files: u64,
        last_file: Option<u32>,
        central: Option<u32>,
    }
    let mut stats: HashMap<u32, Stats> = HashMap::new();
    let mut seen_files: HashSet<(u32, u32)> = HashSet::new();
    for v in 0..n {
        if !art.is_live(NodeIdx(v)) {
            continue;
        }
        let node = art.node(NodeIdx(v));
        let c = node.community();
        if c == 0 || matches!(node.kind(), NodeKind::File | NodeKind::External) {
            continue;
        }
        let s = stats.entry(c).or_default();
        s.entities += 1;
        // Nodes come file by file, so most repeats are the file just seen.
        let file = node.file_sid().0;
        if s.last_file != Some(file) && seen_files.insert((c, file)) {
            s.files += 1;
        }
        s.last_file = Some(file);
        if s.central
            .is_none_or(|b| degree[v as usize] > degree[b as usize])
        {
            s.central = Some(v);
        }
    }
    ctx.hold(stats.len())?;
    let mut out: Vec<(u32, Stats)> = stats.into_iter().collect();
    out.sort_unstable_by_key(|(c, _)| *c);
    Ok(out
        .into_iter()
        .map(|(c, s)| {
            let central = s.central.map(|v| art.node(NodeIdx(v)));
            vec![
                ("community", Value::Int(i64::from(c))),
                ("entities", count(s.entities)),
                ("files", count(s.files)),
                (
                    "central",
                    central.map_or(Value::Null, |x| Value::from(x.name())),
                ),
                (
                    "central_id",
                    central.map_or(Value::Null, |x| Value::from(x.id().as_ref())),
                ),
            ]
        })
        .collect())
}
