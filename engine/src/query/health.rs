//! `CALL algo.health()`: the parts of a code-health report as records, each with its
//! evidence and the points it takes off a score of 100 (the score is
//! `100 - sum(penalty)`). Every part takes off at most [`PART_POINTS`]:
//!
//! - `unused_functions`: function definitions nothing in the tree calls or takes the
//!   address of (static ones, and exported ones no header declares), as a share of the
//!   definitions;
//! - `include_cycles`: in-tree files that include each other in a circle, as a share of
//!   the files;
//! - `hub_concentration`: the share of relationship ends held by the top 1 % of entities;
//! - `staleness`: files changed on disk since the artifact's run, as a share of the files.

use std::collections::BTreeMap;
use std::path::Path;

use batho_lang::Value;
use batho_storage::NodeIdx;

use super::exec::{Ctx, ExecResult};
use crate::algo::health::health_parts;

/// The most points one part takes off the score.
const PART_POINTS: f64 = 25.0;

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// One record: the part, what it measured (`count` of `total`, `measure` the share),
/// the points it takes off, and its evidence.
fn record(
    part: &'static str,
    count: u64,
    total: u64,
    measure: f64,
    evidence: Vec<Value>,
) -> Vec<(&'static str, Value)> {
    vec![
        ("part", Value::from(part)),
        ("count", int(count)),
        ("total", int(total)),
        ("measure", Value::Float(measure)),
        (
            "penalty",
            Value::Float((PART_POINTS * measure).min(PART_POINTS)),
        ),
        ("evidence", Value::List(evidence)),
    ]
}

pub(crate) fn health(ctx: &Ctx<'_>) -> ExecResult<Vec<Vec<(&'static str, Value)>>> {
    let art = ctx.artifact()?;
    ctx.tick(u64::from(art.node_count()) / 16 + u64::from(art.edge_count()) / 16)?;
    // The staleness check walks and stats the tree: it runs beside the graph's parts.
    let root = art.dir().parent();
    let (parts, (stale_count, stale)) = std::thread::scope(|scope| {
        let stale = scope.spawn(|| stale_files(root));
        let parts = health_parts(art);
        let stale = stale
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (parts, stale)
    });
    let id = |n: NodeIdx| Value::from(art.node(n).id().as_ref());
    let unused: Vec<Value> = parts.unused.iter().map(|u| id(u.node)).collect();
    let files_in_cycles: u64 = parts.include_cycles.iter().map(|c| c.len() as u64).sum();
    let cycles: Vec<Value> = parts
        .include_cycles
        .iter()
        .map(|cycle| Value::List(cycle.iter().map(|&n| id(n)).collect()))
        .collect();
    let hubs: Vec<Value> = parts
        .hubs
        .iter()
        .map(|&(n, degree)| {
            let mut hub = BTreeMap::new();
            hub.insert("id".to_string(), id(n));
            hub.insert("degree".to_string(), int(degree));
            Value::Map(hub)
        })
        .collect();
    ctx.hold(unused.len() + cycles.len() + hubs.len() + stale.len())?;
    Ok(vec![
        record(
            "unused_functions",
            unused.len() as u64,
            parts.function_definitions,
            share(unused.len() as u64, parts.function_definitions),
            unused,
        ),
        record(
            "include_cycles",
            files_in_cycles,
            parts.files,
            share(files_in_cycles, parts.files),
            cycles,
        ),
        record(
            "hub_concentration",
            parts.hubs.len() as u64,
            parts.entities,
            parts.hub_share,
            hubs,
        ),
        record(
            "staleness",
            stale_count,
            parts.files,
            share(stale_count, parts.files),
            stale.into_iter().map(Value::from).collect(),
        ),
    ])
}

/// How many files changed on disk since the artifact's run, and the first of them
/// (`batho status`'s answer); none when the repository cannot be read (an artifact opened
/// away from its tree).
fn stale_files(root: Option<&Path>) -> (u64, Vec<String>) {
    let Some(root) = root else {
        return (0, Vec::new());
    };
    crate::status::status(root, false).map_or_else(
        |_| (0, Vec::new()),
        |report| (report.changed_count, report.changed_files),
    )
}
