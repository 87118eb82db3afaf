//! The built-in procedures: schema introspection and the run history.

use batho_lang::Value;
use batho_schema::{NodeKind, RelType};
use batho_storage::{RunKind, RunStatus};

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
