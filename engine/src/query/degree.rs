//! `CALL algo.degree([limit, include_all])`: the most connected nodes, for the Astria
//! `god_nodes` tool. Degree counts relationships other than `CONTAINS`, both directions
//! ([`crate::algo::health::degrees`], the same count the health report's hubs use).

use batho_lang::Value;

use super::exec::{Ctx, ExecError, ExecResult};
use crate::algo::health::degrees;

/// The default number of nodes.
const DEFAULT_LIMIT: i64 = 20;

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

pub(crate) fn degree(ctx: &Ctx<'_>, args: &[Value]) -> ExecResult<Vec<Vec<(&'static str, Value)>>> {
    let limit = match args.first() {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(Value::Int(n)) if *n >= 0 => *n,
        Some(other) => {
            return Err(ExecError::Unsupported(format!(
                "algo.degree() expects a non-negative integer limit, got {other}"
            )));
        }
    };
    let include_all = match args.get(1) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ExecError::Unsupported(format!(
                "algo.degree() expects a boolean include_all (files and external stubs too), got {other}"
            )));
        }
    };
    let art = ctx.artifact()?;
    ctx.tick(u64::from(art.node_count()) / 16 + u64::from(art.edge_count()) / 16)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    ctx.hold(limit.min(art.node_count() as usize))?;
    let (top, _, _) = degrees(art, include_all, Some(limit));
    Ok(top
        .into_iter()
        .map(|d| {
            vec![
                ("node", Value::Node(d.node.0)),
                ("degree", int(d.total())),
                ("in_degree", int(d.incoming)),
                ("out_degree", int(d.outgoing)),
            ]
        })
        .collect())
}
